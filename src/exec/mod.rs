//! Execution: run the repository's code — at the base commit and with each candidate —
//! isolated, and read what it shows.
//!
//! [`sandbox`] writes a commit's tree (plus a candidate's after-files) into a temporary folder
//! and runs a command there with no network, confined writes, rlimits, a timeout and capped
//! output, behind the [`sandbox::Backend`] trait. [`env`] builds and caches the Python
//! environment a repository's tests need, from the specs shipped in `envs.json` or the user's
//! overrides, or ([`image`]) into a container image. [`repro`] makes the code runnable, [`regress`] picks the existing tests a
//! candidate's edits reach, [`outcome`] reads runs into results and behaviour classes,
//! [`llm_repro`] asks a model for a reproduction test (`--exec-llm-repro`), [`written`] finds the
//! tests the candidates themselves write (run as probes for the others), and [`gather`] does
//! all of it for one issue. See docs/execution.md.

pub mod container;
pub mod env;
pub mod gather;
pub mod image;
pub mod llm_repro;
pub mod outcome;
pub mod regress;
pub mod repro;
pub mod sandbox;
pub mod written;
