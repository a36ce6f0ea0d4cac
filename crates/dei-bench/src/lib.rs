//! `dei-bench`: measurements of `dei`'s stages on SWE-bench Lite. Developer tooling, kept out
//! of the product crate: `dei` never depends on this crate (Cargo enforces it), and this crate
//! reaches `dei` only through its public API.
//!
//! Every measurement reads its data through [`data`] (tasks, the labelled candidate pool,
//! repositories) and splits instances with [`split`] (one split for all of them). The
//! measurements:
//!
//! - [`context`]: issue-only localization recall, candidate context size and build time, and
//!   the fit of the localizer's weights (`dei-bench context`);
//! - [`offline`]: n@k of the offline committee and the fit of its weights (`dei-bench offline`);
//! - [`repro`]: the reproduction script `dei rank --exec` writes of each issue, one file per
//!   instance (`dei-bench repro`), to read them or to show a change leaves them the same;
//! - [`verify`] (with [`batch`]): the patch engine against real `git apply`
//!   (`cargo bench -p dei-bench --bench patch_vs_git`, sampled by `tests/patch_git.rs`).

pub mod batch;
pub mod cli;
pub mod context;
pub mod data;
pub mod offline;
pub mod repro;
pub mod split;
pub mod verify;
