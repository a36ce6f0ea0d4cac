//! `dei`: given one issue and candidate patches from many coding agents, pick the right one.
//!
//! The modules follow the pipeline:
//! [`candidates`] → [`task`] / [`repo`] → [`patch`] → [`context`] → [`review`] →
//! [`select`] → [`metrics`] → [`report`], wired together by [`pipeline`]. [`types`] holds the shared
//! core types.
//!
//! The measurements of these stages on real data (localization recall, the offline committee's
//! n@k, the patch engine against `git apply`) live in the workspace member `crates/dei-bench`,
//! which uses only this crate's public API.

pub mod candidates;
pub mod context;
pub mod exec;
pub mod generate;
pub mod llm;
pub mod localize;
pub mod metrics;
pub mod model;
pub mod patch;
pub mod rank;
pub mod review;
pub mod syntax;
