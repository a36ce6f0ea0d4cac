//! Optional validation with the user's test command, run in a throwaway copy of the base
//! commit (never in the user's checkout): once on the base, once per candidate. A candidate
//! that makes a passing command fail is dropped, and its failure output goes back to the
//! model once.

use super::edit::FileEdit;
use anyhow::{bail, Context as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Most characters of test output kept (the end, where failures are summarized).
pub const OUTPUT_TAIL: usize = 4000;

/// Write the tree of `commit` in `repo` (a clone or bare git dir) into `dest`.
pub fn materialize(repo: &Path, commit: &str, dest: &Path) -> anyhow::Result<()> {
    let r = git2::Repository::open(repo).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a git repository: {}",
            repo.display(),
            e.message()
        )
    })?;
    let c = r
        .revparse_single(commit)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| {
            anyhow::anyhow!(
                "commit {commit} is not in {}: {}",
                repo.display(),
                e.message()
            )
        })?;
    let tree = c.tree()?;
    let mut failure: Option<anyhow::Error> = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let rel = format!("{root}{}", entry.name().unwrap_or(""));
        let out = dest.join(&rel);
        let res = (|| -> anyhow::Result<()> {
            let blob = r.find_blob(entry.id())?;
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent)?;
            }
            #[cfg(unix)]
            if entry.filemode() == 0o120000 {
                let target = String::from_utf8_lossy(blob.content()).into_owned();
                std::os::unix::fs::symlink(target, &out)?;
                return Ok(());
            }
            std::fs::write(&out, blob.content())?;
            #[cfg(unix)]
            if entry.filemode() == 0o100755 {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755))?;
            }
            Ok(())
        })();
        match res {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e.context(format!("cannot write {}", out.display())));
                git2::TreeWalkResult::Abort
            }
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

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

/// Run `command` with `sh -c` in `dir`, killing it (and its process group) after `timeout`.
pub fn run_command(dir: &Path, command: &str, timeout: Duration) -> anyhow::Result<TestRun> {
    let log_dir = tempfile::tempdir().context("cannot make a temporary folder for test output")?;
    let log_path = log_dir.path().join("out.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(log.try_clone()?))
        .stderr(Stdio::from(log));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run test command `{command}`"))?;
    let (status, timed_out) = loop {
        if let Some(st) = child.try_wait()? {
            break (Some(st), false);
        }
        if start.elapsed() >= timeout {
            #[cfg(unix)]
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    let output =
        String::from_utf8_lossy(&std::fs::read(&log_path).unwrap_or_default()).into_owned();
    let mut output = tail(&output, OUTPUT_TAIL);
    if timed_out {
        output.push_str(&format!(
            "\n[dei: test command killed after {:.0}s]\n",
            timeout.as_secs_f64()
        ));
    }
    Ok(TestRun {
        passed: status.is_some_and(|s| s.success()),
        timed_out,
        output,
        seconds: start.elapsed().as_secs_f64(),
    })
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
        let dir = tempfile::Builder::new()
            .prefix("dei-validate-")
            .tempdir()
            .context("cannot make a temporary worktree")?;
        materialize(&self.repo, &self.commit, dir.path())?;
        for e in edits {
            if e.path.split('/').any(|c| c == "..") || e.path.starts_with('/') {
                bail!(
                    "refusing to write {} outside the temporary worktree",
                    e.path
                );
            }
            let p = dir.path().join(&e.path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, &e.after)
                .with_context(|| format!("cannot write {}", p.display()))?;
        }
        run_command(dir.path(), &self.command, self.timeout)
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
