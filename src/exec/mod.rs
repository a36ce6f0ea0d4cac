//! Execution: run code of the repository — and candidates' versions of it — isolated.
//!
//! [`sandbox`] writes a commit's tree (plus a candidate's after-files) into a temporary folder
//! and runs a command there with no network, confined writes, rlimits, a timeout and capped
//! output, behind the [`sandbox::Backend`] trait. [`env`] builds and caches the Python
//! environment a repository's tests need, from the specs shipped in `envs.json` or the user's
//! overrides. See docs/execution.md.

pub mod env;
pub mod sandbox;
