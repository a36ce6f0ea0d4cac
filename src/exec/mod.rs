//! Execution evidence: what running a candidate shows. The parts here need no sandbox:
//! the reproduction made runnable ([`repro`]), the existing tests that exercise a
//! candidate's edits ([`regress`]), and reading what a run printed into outcomes and
//! behaviour classes ([`outcome`]). Imports only lower floors (`model`, `candidates`,
//! `patch`, `syntax`, `localize`, `context`).

pub mod outcome;
pub mod regress;
pub mod repro;
