//! Issue-only localization: where an issue points before any candidate exists. The issue
//! text is read into references ([`issue`]), the repository is searched ([`search`]: files and
//! definitions ranked by weighted lexical and structural signals), a model may re-rank the
//! shortlist ([`rerank`]), and `dei locate` shows the result ([`located`]).
//!
//! The search, by concern: the file index and its caches ([`index`], [`cache`]), the tokenizer
//! ([`tokens`]) and BM25 ([`bm25`]) (both shared with the generator's chunk retriever), the
//! issue as a query ([`query`]), the signals in two tables ([`signals`]), their shipped weights
//! ([`weights`], `weights.json`) and the repository's history ([`history`]).

pub mod bm25;
pub mod cache;
pub mod history;
pub mod index;
pub mod issue;
pub mod located;
pub mod query;
pub mod rerank;
pub mod search;
pub mod signals;
pub mod tokens;
pub mod weights;
