//! A progress bar on stderr (issues done, errors, ETA, and the committee's live status such
//! as LLM calls in flight and cost so far), drawn only when stderr is a terminal.

use super::IssueOutcome;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

pub struct Progress {
    bar: Option<ProgressBar>,
    errors: AtomicU64,
    candidates: AtomicU64,
    /// The committee's live status, shown after the counts.
    live: Mutex<String>,
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
            live: Mutex::new(String::new()),
        }
    }

    /// True when a bar is drawn (worth refreshing the live status).
    pub fn is_drawn(&self) -> bool {
        self.bar.is_some()
    }

    /// The message after the counts: candidates, issue errors, then the live status.
    pub fn message(&self) -> String {
        let mut m = format!(
            "{} candidates, {} issue errors",
            self.candidates.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed)
        );
        if let Ok(live) = self.live.lock() {
            if !live.is_empty() {
                m.push_str(", ");
                m.push_str(&live);
            }
        }
        m
    }

    /// Replace the committee's live status (e.g. "3 calls in flight, $0.0120 spent").
    pub fn set_live(&self, status: String) {
        if let Ok(mut l) = self.live.lock() {
            *l = status;
        }
        if let Some(bar) = &self.bar {
            bar.set_message(self.message());
        }
    }

    pub fn finished(&self, ok: bool, outcome: &IssueOutcome) {
        if !ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.candidates
            .fetch_add(outcome.candidates as u64, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.set_message(self.message());
            bar.inc(1);
        }
    }

    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_counts_and_live_status() {
        let p = Progress::new(false, 3, 0);
        assert!(!p.is_drawn());
        let mut o = IssueOutcome::failed(
            "i-1",
            "o/r",
            super::super::ErrorKind::Failed,
            "x".into(),
            4,
            vec![],
        );
        p.finished(false, &o);
        o.candidates = 2;
        p.finished(true, &o);
        assert_eq!(p.message(), "6 candidates, 1 issue errors");
        p.set_live("3 calls in flight, $0.0120 spent".into());
        assert_eq!(
            p.message(),
            "6 candidates, 1 issue errors, 3 calls in flight, $0.0120 spent"
        );
    }
}
