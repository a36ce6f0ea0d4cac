//! `dei`: given one issue and candidate patches from many coding agents, pick the right one.
//!
//! The modules follow the pipeline:
//! [`candidates`] → [`task`] / [`repo`] → [`patch`] → [`context`] → [`review`] →
//! [`select`] → [`metrics`] → [`report`], wired together by [`pipeline`]. [`types`] holds the shared
//! core types.

pub mod bench;
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
