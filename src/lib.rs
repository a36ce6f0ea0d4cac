//! `dei`: given one issue and candidate patches from many coding agents, pick the right one.
//!
//! The modules are layers, each importing only those below it. From the bottom: [`model`]
//! (the shared types, the issue, the repository read from git objects), [`syntax`]
//! (tree-sitter views of Python), [`llm`] (the model client, for every stage that asks a
//! model); then the stages: [`candidates`] (loading) → [`patch`] (each candidate's code before
//! and after) → [`localize`] and [`context`] (where the issue points, what a reviewer reads) →
//! [`exec`] (running the code, sandboxed) → [`review`] (the committee) → [`rank`] (the
//! pipeline for one issue and for a whole run, the order, the report) → [`metrics`] (n@k and
//! Union/Intersect/Average@k, also over a run's journal). At the top, [`generate`] writes
//! candidates that join the others.
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
