//! Issue-only localization: where an issue points before any candidate exists. The issue
//! text is read into references ([`issue`]), the repository is searched ([`search`]: files and
//! definitions ranked by weighted lexical and structural signals), a model may re-rank the
//! shortlist ([`rerank`]), and `dei locate` shows the result ([`located`]).

pub mod issue;
pub mod located;
pub mod rerank;
pub mod search;
