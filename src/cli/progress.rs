//! The terminal reporter: the library's notices and warnings on stderr, and during a
//! multi-issue run a progress bar (issues done, candidates, errors, ETA, and the committee's
//! live status such as LLM calls in flight and cost so far), drawn only when stderr is a
//! terminal and `--no-progress` was not given.

use dei::model::notify::{Event, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

#[derive(Default)]
struct Counts {
    candidates: u64,
    errors: u64,
    live: String,
}

impl Counts {
    /// The message after the counts: candidates, issue errors, then the live status.
    fn message(&self) -> String {
        let mut m = format!(
            "{} candidates, {} issue errors",
            self.candidates, self.errors
        );
        if !self.live.is_empty() {
            m.push_str(", ");
            m.push_str(&self.live);
        }
        m
    }
}

pub struct Terminal {
    /// Draw a bar for runs (stderr is a terminal and the user did not say `--no-progress`).
    bars: bool,
    bar: Mutex<Option<ProgressBar>>,
    counts: Mutex<Counts>,
}

impl Terminal {
    pub fn new(progress: bool) -> Terminal {
        Terminal {
            bars: progress && std::io::stderr().is_terminal(),
            bar: Mutex::new(None),
            counts: Mutex::new(Counts::default()),
        }
    }

    fn with_bar(&self, f: impl FnOnce(&ProgressBar)) {
        if let Ok(b) = self.bar.lock() {
            if let Some(bar) = b.as_ref() {
                f(bar);
            }
        }
    }

    fn say(&self, line: &str) {
        let mut shown = false;
        self.with_bar(|bar| {
            bar.suspend(|| eprintln!("{line}"));
            shown = true;
        });
        if !shown {
            eprintln!("{line}");
        }
    }
}

impl Reporter for Terminal {
    fn event(&self, event: &Event) {
        match event {
            Event::Notice(m) | Event::Warning(m) => self.say(m),
            Event::RunStarted { total, already } => {
                if !self.bars {
                    return;
                }
                let bar = ProgressBar::with_draw_target(Some(*total), ProgressDrawTarget::stderr());
                let style = ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} issues  {msg}  [{elapsed_precise}, ETA {eta}]",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style);
                bar.set_position(*already);
                bar.reset_eta();
                if let Ok(mut b) = self.bar.lock() {
                    *b = Some(bar);
                }
            }
            Event::IssueFinished { ok, candidates } => {
                let msg = self.counts.lock().map(|mut c| {
                    c.candidates += *candidates as u64;
                    c.errors += u64::from(!ok);
                    c.message()
                });
                self.with_bar(|bar| {
                    if let Ok(m) = &msg {
                        bar.set_message(m.clone());
                    }
                    bar.inc(1);
                });
            }
            Event::Live(status) => {
                let msg = self.counts.lock().map(|mut c| {
                    c.live = status.to_string();
                    c.message()
                });
                self.with_bar(|bar| {
                    if let Ok(m) = msg {
                        bar.set_message(m);
                    }
                });
            }
            Event::RunFinished => {
                if let Ok(mut b) = self.bar.lock() {
                    if let Some(bar) = b.take() {
                        bar.finish_and_clear();
                    }
                }
            }
        }
    }

    fn wants_live(&self) -> bool {
        self.bars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_counts_and_live_status() {
        let t = Terminal::new(false);
        t.event(&Event::IssueFinished {
            ok: false,
            candidates: 4,
        });
        t.event(&Event::IssueFinished {
            ok: true,
            candidates: 2,
        });
        assert_eq!(
            t.counts.lock().unwrap().message(),
            "6 candidates, 1 issue errors"
        );
        t.event(&Event::Live("3 calls in flight, $0.0120 spent"));
        assert_eq!(
            t.counts.lock().unwrap().message(),
            "6 candidates, 1 issue errors, 3 calls in flight, $0.0120 spent"
        );
        assert!(!t.wants_live(), "no bar without a terminal");
    }
}
