//! How the library tells its user what is happening: it never prints. Notices, warnings and
//! the progress of a run are [`Event`]s handed to the [`Reporter`] the program installs with
//! [`set_reporter`] (the `dei` command draws them on stderr, with a progress bar on a
//! terminal). With none installed, events are dropped: a program embedding the library sees
//! only what the functions return.

use std::sync::OnceLock;

/// Something the library has to say while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// Worth knowing, nothing wrong (`note: …`).
    Notice(&'a str),
    /// Something was skipped or could go wrong (`warning: …`).
    Warning(&'a str),
    /// A multi-issue run starts: `total` issues, `already` of them finished by an earlier run.
    RunStarted { total: u64, already: u64 },
    /// One issue of the run finished (ranked when `ok`) with this many candidates.
    IssueFinished { ok: bool, candidates: usize },
    /// The committee's live status (calls in flight, cost so far), refreshed while it works.
    Live(&'a str),
    /// The run stopped (every issue done, or interrupted).
    RunFinished,
}

/// Receives the library's [`Event`]s; must be cheap and must not block.
pub trait Reporter: Send + Sync {
    fn event(&self, event: &Event);
    /// Whether [`Event::Live`] is shown at all (the library skips computing it when not).
    fn wants_live(&self) -> bool {
        false
    }
}

static REPORTER: OnceLock<Box<dyn Reporter>> = OnceLock::new();

/// Install the process's reporter (once; `false` when one was installed already).
pub fn set_reporter(r: Box<dyn Reporter>) -> bool {
    REPORTER.set(r).is_ok()
}

/// Hand `event` to the installed reporter, if any.
pub fn emit(event: &Event) {
    if let Some(r) = REPORTER.get() {
        r.event(event);
    }
}

/// [`Event::Notice`].
pub fn notice(msg: &str) {
    emit(&Event::Notice(msg));
}

/// [`Event::Warning`].
pub fn warning(msg: &str) {
    emit(&Event::Warning(msg));
}

/// Whether the installed reporter shows live status.
pub fn wants_live() -> bool {
    REPORTER.get().is_some_and(|r| r.wants_live())
}
