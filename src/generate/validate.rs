//! Optional validation with the user's test command, run in a throwaway copy of the base
//! commit (never in the user's checkout): once on the base, once per candidate. A candidate
//! that makes a passing command fail is dropped, and its failure output goes back to the
//! model once. Every run goes through the sandbox of [`crate::exec::sandbox`] (no network,
//! writes confined to its folder, rlimits, the process group killed on timeout).

use super::edit::FileEdit;
use crate::exec::sandbox::{Backend, Job, Limits, LocalBackend, Outcome, Tree, TreeFile};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Most characters of test output kept (the end, where failures are summarized).
pub const OUTPUT_TAIL: usize = 4000;

/// The outcome of one run of the test command.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRun {
    pub passed: bool,
    pub timed_out: bool,
    /// The last [`OUTPUT_TAIL`] characters of stdout and stderr together.
    pub output: String,
    pub seconds: f64,
}

fn tail(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    s.chars().skip(count - n).collect()
}

fn job(command: &str, timeout: Duration) -> Job {
    Job {
        command: command.to_string(),
        limits: Limits {
            timeout,
            cpu_seconds: timeout.as_secs().saturating_add(1),
            ..Limits::default()
        },
        inherit_env: true,
        ..Job::default()
    }
}

fn test_run(out: Outcome) -> TestRun {
    TestRun {
        passed: out.success(),
        timed_out: out.timed_out,
        output: tail(&out.output, OUTPUT_TAIL),
        seconds: out.seconds,
    }
}

/// Run `command` with `sh -c` in `dir`, sandboxed, killing its process group after `timeout`.
pub fn run_command(dir: &Path, command: &str, timeout: Duration) -> anyhow::Result<TestRun> {
    Ok(test_run(
        LocalBackend::default().run_in(dir, &job(command, timeout))?,
    ))
}

/// What validation says about one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The command passed before and passes after (or failed before and still runs).
    Keep(TestRun),
    /// The command passed on the base and fails with the candidate: drop it.
    Breaks(TestRun),
    /// The command already fails on the base commit, so it cannot judge candidates.
    Inconclusive(TestRun),
}

/// Runs the user's test command on the base commit and on candidates.
pub struct Validator {
    pub repo: PathBuf,
    pub commit: String,
    pub command: String,
    pub timeout: Duration,
    baseline: OnceLock<TestRun>,
}

impl Validator {
    pub fn new(repo: &Path, commit: &str, command: &str, timeout: Duration) -> Validator {
        Validator {
            repo: repo.to_path_buf(),
            commit: commit.to_string(),
            command: command.to_string(),
            timeout,
            baseline: OnceLock::new(),
        }
    }

    fn run_with(&self, edits: &[FileEdit]) -> anyhow::Result<TestRun> {
        let tree = Tree {
            repo: self.repo.clone(),
            commit: self.commit.clone(),
            files: edits
                .iter()
                .map(|e| TreeFile {
                    path: e.path.clone(),
                    contents: Some(e.after.clone().into_bytes()),
                })
                .collect(),
            snapshot: None,
        };
        let out = LocalBackend::default().run(&tree, &job(&self.command, self.timeout))?;
        Ok(test_run(out))
    }

    /// The command's outcome on the base commit (run once).
    pub fn baseline(&self) -> anyhow::Result<&TestRun> {
        if let Some(b) = self.baseline.get() {
            return Ok(b);
        }
        let run = self.run_with(&[])?;
        Ok(self.baseline.get_or_init(|| run))
    }

    /// Judge one candidate's edits.
    pub fn check(&self, edits: &[FileEdit]) -> anyhow::Result<Verdict> {
        let base = self.baseline()?.clone();
        let run = self.run_with(edits)?;
        Ok(if !base.passed {
            Verdict::Inconclusive(run)
        } else if run.passed {
            Verdict::Keep(run)
        } else {
            Verdict::Breaks(run)
        })
    }
}
