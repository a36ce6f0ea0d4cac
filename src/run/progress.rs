//! A progress bar on stderr (issues done, errors, ETA), drawn only when stderr is a terminal.

use super::IssueOutcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Progress {
    bar: Option<ProgressBar>,
    errors: AtomicU64,
    candidates: AtomicU64,
}

impl Progress {
    /// `total` issues, `already` of them finished by an earlier run.
    pub fn new(wanted: bool, total: u64, already: u64) -> Progress {
        let bar = (wanted && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} issues  {msg}  [{elapsed_precise}, ETA {eta}]",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_position(already);
            bar.reset_eta();
            bar
        });
        Progress {
            bar,
            errors: AtomicU64::new(0),
            candidates: AtomicU64::new(0),
        }
    }

    pub fn finished(&self, ok: bool, outcome: &IssueOutcome) {
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let c = self
            .candidates
            .fetch_add(outcome.candidates as u64, Ordering::Relaxed)
            + outcome.candidates as u64;
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{c} candidates, {} issue errors",
                self.errors.load(Ordering::Relaxed)
            ));
            bar.inc(1);
        }
    }

    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
