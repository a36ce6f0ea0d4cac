//! Execution evidence for one issue: build (or reuse) the repository's environment, pick the
//! existing tests the candidates' edits reach, extract the issue's reproduction, run both at
//! the base commit (the tests twice, to drop flaky ones) and once per distinct after-tree, and
//! turn what changed into one [`Behaviour`] per candidate. With a [`TestWriter`]
//! (`--exec-llm-repro`), a model also writes a reproduction test from the issue, kept only when
//! it prints `Issue reproduced` at the base commit, then run with each candidate.
//!
//! Every run goes through a [`Backend`] (sandboxed) and is cached on disk by what determines
//! it (environment, tree, command), so a rerun — or a run resumed after a kill — redoes nothing.

use super::env::{extra_for, extra_named_in, spec_for, EnvBuilder, EnvSpec, Extra, Overrides};
use super::llm_repro::{self, ModelTestRecord, TestContext, TestStatus, TestWriter};
use super::outcome::{
    behaviour_classes, first_failing_statement, parse_test_output, print_prefixes,
    raised_statements, regression, Regression, ReproOutcome, Signature, Status, TestRun,
};
use super::regress;
use super::repro::{self, RepoNames};
use super::sandbox::{Backend, Job, Limits, Outcome, Tree, TreeFile};
use super::written::{self, WrittenTests};
use crate::localize::issue::names_on_boundary;
use crate::localize::search::FileIndex;
use crate::model::{Applies, Behaviour, ModelTest, PatchView, ReproChange, Task};
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file the reproduction is written to, at the root of the tree.
pub const REPRO_FILE: &str = "dei_reproduction.py";
/// Most test files run per issue (the best-scored of every candidate's selection).
pub const MAX_TEST_FILES: usize = 6;
/// A test file named after an edited module runs whole when it takes at most this share of
/// the time limit at base (a sixth: 20 s of the default 120 s), and narrowed to the tests
/// naming the edit otherwise.
const WHOLE_FILE_SHARE: f64 = 6.0;
/// Agents' reproduction scripts tried at base when the issue gives no usable reproduction.
const MAX_AGENT_SCRIPTS: usize = 3;
/// Agent families whose written tests are tried as probes per issue.
const MAX_WRITTEN: usize = 3;

/// How to gather execution evidence.
#[derive(Clone)]
pub struct ExecSettings {
    pub backend: Arc<dyn Backend>,
    /// Where environments are built (shared by every run).
    pub env_dir: PathBuf,
    /// Where run results are cached (a run directory keeps its own).
    pub cache_dir: PathBuf,
    /// The user's `--python`, `--setup`, `--test-cmd`.
    pub overrides: Overrides,
    /// Limits of one test or reproduction run.
    pub limits: Limits,
    /// Reproduction runs get this much time at most (they are small).
    pub repro_timeout: std::time::Duration,
    /// Sandboxes at once, over all the issues in flight.
    pub jobs: usize,
    /// Asks a model for a reproduction test per issue (`--exec-llm-repro`); `None`: no model test.
    pub model_test: Option<Arc<TestWriter>>,
    /// When the issue's code stops at base on a well-known package the environment lacks
    /// (numpy, …; see [`crate::exec::env::extra_for`]), install it and gather again
    /// (`--exec-extras`; off by default).
    pub install_extras: bool,
    /// Counts the sandboxes running now (see [`ExecSettings::jobs`]).
    running: Arc<(std::sync::Mutex<usize>, std::sync::Condvar)>,
    /// Sandbox runs finished so far: fresh, and read from the cache.
    counts: Arc<RunCounts>,
}

/// Sandbox runs of a whole `dei` run, for the progress line.
#[derive(Debug, Default)]
struct RunCounts {
    fresh: std::sync::atomic::AtomicUsize,
    cached: std::sync::atomic::AtomicUsize,
    /// Milliseconds spent in fresh runs.
    millis: std::sync::atomic::AtomicU64,
}

impl ExecSettings {
    /// Wait for a free sandbox slot; it is given back when the guard drops.
    fn slot(&self) -> Slot<'_> {
        let (lock, cv) = &*self.running;
        let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= self.jobs.max(1) {
            n = cv.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Slot(&self.running)
    }

    /// Everything that changes the evidence, as one line (a run directory records it, and a
    /// rerun with other settings is refused): time limits, the user's environment overrides,
    /// the model that writes tests. Not the number of sandboxes nor where things are cached.
    pub fn settings(&self) -> String {
        let o = &self.overrides;
        let mut s = format!(
            "timeout {}s, repro {}s",
            self.limits.timeout.as_secs(),
            self.repro_timeout.as_secs()
        );
        for (flag, v) in [
            ("--python", &o.python),
            ("--setup", &o.setup),
            ("--test-cmd", &o.test_cmd),
        ] {
            if let Some(v) = v {
                s.push_str(&format!(", {flag} {v}"));
            }
        }
        if let Some(w) = &self.model_test {
            s.push_str(&format!(", model test {}", w.settings()));
        }
        if self.install_extras {
            s.push_str(", extras");
        }
        s
    }

    /// A short live status for the progress bar: sandboxes running, runs done (and how many
    /// came from the cache), and the mean seconds of a fresh run.
    pub fn live_status(&self) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let running = *self.running.0.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = self.counts.fresh.load(Relaxed);
        let cached = self.counts.cached.load(Relaxed);
        let mut s = format!(
            "sandbox: {running} running, {} runs done ({cached} cached)",
            fresh + cached
        );
        if fresh > 0 {
            let mean = self.counts.millis.load(Relaxed) as f64 / 1000.0 / fresh as f64;
            s.push_str(&format!(", {mean:.1} s per run"));
        }
        s
    }

    fn count(&self, cached: bool, seconds: f64) {
        use std::sync::atomic::Ordering::Relaxed;
        if cached {
            self.counts.cached.fetch_add(1, Relaxed);
        } else {
            self.counts.fresh.fetch_add(1, Relaxed);
            self.counts
                .millis
                .fetch_add((seconds * 1000.0) as u64, Relaxed);
        }
    }
}

struct Slot<'a>(&'a (std::sync::Mutex<usize>, std::sync::Condvar));

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let (lock, cv) = self.0;
        let mut n = lock.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        cv.notify_one();
    }
}

impl std::fmt::Debug for ExecSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSettings")
            .field("backend", &self.backend.name())
            .field("env_dir", &self.env_dir)
            .field("cache_dir", &self.cache_dir)
            .field("overrides", &self.overrides)
            .field("limits", &self.limits)
            .field("jobs", &self.jobs)
            .field("model_test", &self.model_test)
            .finish()
    }
}

impl ExecSettings {
    pub fn new(backend: Arc<dyn Backend>, env_dir: PathBuf, cache_dir: PathBuf) -> ExecSettings {
        let limits = Limits {
            timeout: std::time::Duration::from_secs(180),
            ..Limits::default()
        };
        ExecSettings {
            backend,
            env_dir,
            cache_dir,
            overrides: Overrides::default(),
            limits,
            repro_timeout: std::time::Duration::from_secs(60),
            jobs: 1,
            model_test: None,
            install_extras: false,
            running: Arc::default(),
            counts: Arc::default(),
        }
    }
}

/// For `skip_serializing_if`: a count of 0 is left out of the JSON.
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What was gathered for one issue.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct IssueExec {
    /// Why nothing could run (no spec, the environment did not build); `None` when it ran.
    pub error: Option<String>,
    /// The test files run (repository paths).
    pub test_files: Vec<String>,
    /// Tests that passed in both base runs / whose two base runs disagreed.
    pub stable_tests: usize,
    pub flaky_tests: Vec<String>,
    /// The reproduction ran (its script had statements).
    pub reproduction: bool,
    /// How the reproduction ended at the base commit (exception type or exit status).
    pub repro_base: Option<String>,
    /// What the reproduction printed differed between its two runs at the base commit
    /// (random numbers, an order that follows string hashing), so only how each run ends is
    /// compared.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repro_output_unstable: bool,
    /// Its two base runs printed differently until its randomness was pinned
    /// ([`repro::pinned`]: hash seed 0, `random` and NumPy seeded), which the candidates' runs
    /// then use too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repro_pinned: bool,
    /// Where the reproduction came from when not from the issue: an agent's script
    /// (`reproduce_bug.py, written by AGENT`); `None`: the issue's code, or none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_from: Option<String>,
    /// One per candidate, in order (`None`: nothing to run, e.g. an empty patch).
    pub behaviour: Vec<Option<Behaviour>>,
    /// How many candidates' edits to the repository's tests were set aside (see
    /// [`Behaviour::tests_set_aside`]); kept when a run's results drop `behaviour`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tests_set_aside: usize,
    /// Distinct behaviour classes among the candidates that ran.
    pub classes: usize,
    /// Sandbox runs needed, and how many of them came from the cache.
    pub runs: usize,
    pub cached_runs: usize,
    /// Seconds spent in sandboxes (runs from the cache count 0) and building the environment.
    pub run_seconds: f64,
    pub env_seconds: f64,
    /// Test files left out for the candidates: their base run took over half the time limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_files: Vec<String>,
    /// Test files named after an edited module that ran whole (not only the tests naming the
    /// edit): quick enough at base, and some test passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub whole_files: Vec<String>,
    /// The model-written reproduction test (`--exec-llm-repro`): whether one was written, kept
    /// or discarded, and why; `None` when none was asked for. With several samples, the first
    /// kept one (else the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_test: Option<ModelTestRecord>,
    /// Every sample of the model-written test, in order, when more than one was asked for
    /// (`--exec-llm-repro-samples`); the candidates carry the verdict most kept ones print.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_test_samples: Vec<ModelTestRecord>,
    /// Tests the candidates wrote that fail at the base commit and ran with every candidate,
    /// one entry per agent family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written_tests: Vec<WrittenRecord>,
    /// What the sandbox could not enforce on this machine (no network namespace, no Landlock).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_isolated: Vec<String>,
    /// Why the environment was built at the task's base commit instead of its spec's setup
    /// commit (that commit is not in the repository, e.g. a clone without the maintenance
    /// branch it is on); `None` when built as the spec says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_commit: Option<String>,
    /// Why the test files gave no evidence: no base run printed a test result dei could read
    /// (how the first file's run ended, and its last line). A wrong `--test-cmd` (a runner
    /// that is not installed, or one that finds no tests) shows here; `None` when some base
    /// run printed results, or no file ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_unread: Option<String>,
    /// Packages installed for the issue's own code (PyPI names): at the base commit its
    /// reproduction stopped on importing them (`import numpy` where the repository's tests need
    /// no numpy), so the evidence was gathered again in an environment with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<String>,
    /// Why installing such a package failed (the evidence is then the one gathered without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extras_failed: Option<String>,
    /// The known package the reproduction stopped on at base, for [`gather`] to install; not
    /// recorded.
    #[serde(skip)]
    pub missing_extra: Option<String>,
    /// A module the reproduction stopped on at base that the issue's code does not import
    /// itself (the tree does), for [`gather`] to build at the base commit; not recorded.
    #[serde(skip)]
    pub tree_lacks: Option<String>,
}

/// How [`IssueExec::tests_unread`] begins.
const UNREAD: &str = "no test result could be read from the base runs; ";

/// Tests one agent family wrote, kept because they fail twice at the base commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WrittenRecord {
    /// The agent whose candidate wrote them, and its family (the key of
    /// [`Behaviour::written`]).
    pub agent: String,
    pub family: String,
    /// The kept tests (pytest node ids).
    pub tests: Vec<String>,
}

/// One run as cached: enough to re-read it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    seconds: f64,
    output: String,
    /// What the sandbox could not enforce.
    #[serde(default)]
    missing: Vec<String>,
}

impl From<&Outcome> for Run {
    fn from(o: &Outcome) -> Run {
        Run {
            code: o.code,
            signal: o.signal,
            timed_out: o.timed_out,
            seconds: o.seconds,
            output: o.output.clone(),
            missing: o.isolation.missing.clone(),
        }
    }
}

/// The commit to build the environment at when not the spec's own, and why: the task's base
/// commit stands in for a setup commit the repository does not have. `None`: the spec's.
fn build_commit<'a>(setup: Option<&str>, base: &'a str, repo: &Path) -> Option<(&'a str, String)> {
    let c = setup.filter(|c| crate::model::repo::Snapshot::open(repo, c).is_err())?;
    let short = |c: &str| c.get(..12).unwrap_or(c).to_string();
    let why = format!(
        "built at the base commit {}: the setup commit {} is not in {}",
        short(base),
        short(c),
        repo.display()
    );
    Some((base, why))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The files a candidate's after-tree replaces; `None` when it cannot be built. Its edits to
/// test modules the base commit has, and to the rest of its test suite (data, fixtures:
/// [`regress::in_test_suite`]), are left out: the tests that passed at the base commit are
/// run as they were then (as SWE-bench's evaluation puts the test files back), so a candidate
/// that rewrites an assertion to suit its change is seen breaking it. Tests it adds to such a
/// file run as the tests it writes (see [`written`]). Returned beside the files: the paths
/// set aside.
fn after_files(
    view: &PatchView,
    tests: &regress::TestFiles,
) -> Option<(Vec<TreeFile>, Vec<String>)> {
    if matches!(view.applies, Applies::No | Applies::Empty) || view.files.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let mut aside = Vec::new();
    for f in &view.files {
        if f.error.is_some() {
            return None;
        }
        // A test module, or another file of the test suite, that the base commit has.
        if f.before.is_some() && (tests.is_test(&f.path) || regress::in_test_suite(&f.path)) {
            aside.push(f.path.clone());
            continue;
        }
        out.push(TreeFile {
            path: f.path.clone(),
            contents: f.after.as_ref().map(|a| a.as_bytes().to_vec()),
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Some((out, aside))
}

/// What the `print` calls a candidate adds to the repository's code start their output with
/// ([`print_prefixes`]): lines it adds to Python files inside a package, tests left out (a
/// root-level file is an agent's scratch and never runs with the reproduction).
fn own_prints(view: &PatchView) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &view.files {
        let Some(after) = f.after.as_deref() else {
            continue;
        };
        if !f.path.ends_with(".py") || !f.path.contains('/') || regress::is_test_file(&f.path) {
            continue;
        }
        let lines: Vec<&str> = after.lines().collect();
        let added = f
            .changed_after
            .iter()
            .flat_map(|r| lines.get(r.start.saturating_sub(1)..r.end.min(lines.len())))
            .flatten()
            .copied();
        for p in print_prefixes(added) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn tree_key(files: &[TreeFile]) -> String {
    let mut h = sha2::Sha256::new();
    for f in files {
        h.update(f.path.as_bytes());
        h.update([0]);
        match &f.contents {
            Some(c) => {
                h.update([1]);
                h.update((c.len() as u64).to_le_bytes());
                h.update(c);
            }
            None => h.update([2]),
        }
    }
    hex(&h.finalize())
}

struct Runner<'a> {
    settings: &'a ExecSettings,
    repo: &'a Path,
    commit: &'a str,
    env_key: String,
    env_vars: Vec<(String, String)>,
    generated: Vec<TreeFile>,
}

impl Runner<'_> {
    /// Run `command` over the base tree plus `files` (`pass` tells two base runs apart), from
    /// the cache when it ran before. Returns the run and whether it came from the cache.
    fn run(
        &self,
        files: &[TreeFile],
        command: &str,
        timeout: std::time::Duration,
        pass: u32,
    ) -> anyhow::Result<(Run, bool)> {
        let mut h = sha2::Sha256::new();
        for part in [
            self.env_key.as_str(),
            self.commit,
            &tree_key(files),
            command,
            &format!("{}:{pass}", timeout.as_secs()),
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let key = hex(&h.finalize());
        let path = self
            .settings
            .cache_dir
            .join("runs")
            .join(&key[..2])
            .join(format!("{key}.json"));
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(run) = serde_json::from_slice::<Run>(&bytes) {
                self.settings.count(true, 0.0);
                return Ok((run, true));
            }
        }
        let mut all = self.generated.clone();
        all.extend(files.iter().cloned());
        let tree = Tree {
            repo: self.repo.to_path_buf(),
            commit: self.commit.to_string(),
            files: all,
        };
        let job = Job {
            command: command.to_string(),
            env: self.env_vars.clone(),
            limits: Limits {
                timeout,
                ..self.settings.limits.clone()
            },
            ..Job::default()
        };
        let outcome = {
            let _slot = self.settings.slot();
            self.settings.backend.run(&tree, &job)?
        };
        let run = Run::from(&outcome);
        self.settings.count(false, run.seconds);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, serde_json::to_vec(&run)?).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
        Ok((run, false))
    }
}

/// A run, and whether it came from the cache.
type RunResult = anyhow::Result<(Run, bool)>;

/// What a sandbox run runs: one test file (by index), a batch of test files (by index into
/// the issue's batches), the reproduction, or the model's test.
#[derive(Clone, Copy, PartialEq)]
enum What {
    Tests(usize),
    Batch(usize),
    Repro,
    /// One sample of the model-written test.
    ModelTest(usize),
    /// The tests one agent family wrote (by index into the issue's written tests).
    Written(usize),
}

/// Pack one tree's test files (indices, with their seconds at base and their batch key) into
/// batches that each run as one command: files with equal keys, in order, while the batch's
/// seconds at base stay within `budget` (a file over it goes alone). One interpreter start per
/// batch instead of one per file; the budget keeps a batch within the time limit on a loaded
/// machine, as the per-file rule does for one file.
fn pack(files: &[(usize, f64, u8)], budget: f64) -> Vec<Vec<usize>> {
    let mut open: BTreeMap<u8, (Vec<usize>, f64)> = BTreeMap::new();
    let mut out = Vec::new();
    for &(k, secs, key) in files {
        let slot = open.entry(key).or_insert_with(|| (Vec::new(), 0.0));
        if !slot.0.is_empty() && slot.1 + secs > budget {
            out.push(std::mem::take(&mut slot.0));
            slot.1 = 0.0;
        }
        slot.0.push(k);
        slot.1 += secs;
    }
    out.extend(open.into_values().map(|(b, _)| b).filter(|b| !b.is_empty()));
    out.sort();
    out
}

/// The runs read so far, by tree.
#[derive(Default)]
struct Results {
    /// (tree, test file, pass) → the tests' results.
    tests: BTreeMap<(usize, usize, u32), TestRun>,
    repros: BTreeMap<usize, ReproOutcome>,
    /// (tree, sample) → what the model-written test printed.
    model: BTreeMap<(usize, usize), ModelTest>,
    /// (tree, written tests, pass) → their results.
    written: BTreeMap<(usize, usize, u32), TestRun>,
    /// Test file → how its latest base run ended, when it printed no result dei could read.
    unread: BTreeMap<usize, String>,
}

/// Run `jobs` on `threads` plain threads (not rayon: a rayon worker waiting on another pool
/// steals other issues' work, which would start more sandboxes than asked for).
fn run_all(
    jobs: &[(usize, What, u32)],
    run_job: &(dyn Fn(&(usize, What, u32)) -> RunResult + Sync),
    threads: usize,
) -> Vec<RunResult> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<RunResult>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = run_job(job);
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(anyhow::anyhow!("a sandbox run did not finish")))
        })
        .collect()
}

/// Fold one run into the issue's record and the parsed results; returns what ran and how long.
fn absorb(
    out: &mut IssueExec,
    seen: &mut Results,
    batches: &[Vec<usize>],
    &(t, what, pass): &(usize, What, u32),
    r: RunResult,
) -> Option<(What, f64)> {
    out.runs += 1;
    let (run, cached) = match r {
        Ok(x) => x,
        Err(e) => {
            out.error
                .get_or_insert_with(|| format!("a sandbox run failed: {e:#}"));
            return None;
        }
    };
    for m in &run.missing {
        if !out.not_isolated.contains(m) {
            out.not_isolated.push(m.clone());
        }
    }
    if cached {
        out.cached_runs += 1;
    } else {
        out.run_seconds += run.seconds;
    }
    match what {
        What::Tests(k) => {
            let parsed = parse_test_output(&run.output);
            if t == 0 {
                if parsed.results.is_empty() && parsed.file_errors.is_empty() {
                    seen.unread.insert(k, how_it_ended(&run));
                } else {
                    seen.unread.remove(&k);
                }
            }
            seen.tests.insert((t, k, pass), parsed);
        }
        // Each file of the batch reads the whole run: a comparison looks only at the ids that
        // passed twice in that file at base.
        What::Batch(b) => {
            let parsed = parse_test_output(&run.output);
            for &k in &batches[b] {
                seen.tests.insert((t, k, pass), parsed.clone());
            }
        }
        What::Repro => {
            // Printed differently in its two base runs: only how a run ends is kept.
            let mut o = repro_outcome(&run);
            if out.repro_output_unstable {
                o.output.clear();
            }
            seen.repros.insert(t, o);
        }
        What::ModelTest(s) => {
            seen.model
                .insert((t, s), llm_repro::read_output(&run.output, run.timed_out));
        }
        What::Written(p) => {
            seen.written
                .insert((t, p, pass), parse_test_output(&run.output));
        }
    }
    Some((what, run.seconds))
}

/// How a run that printed no test result ended: its exit status (or the time limit, or a
/// signal) and its last line of output, cut to a readable length.
fn how_it_ended(run: &Run) -> String {
    let status = if run.timed_out {
        "hit the time limit".to_string()
    } else {
        match (run.code, run.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended".to_string(),
        }
    };
    let last = run
        .output
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("[dei:"));
    match last {
        Some(l) if l.chars().count() > 160 => {
            format!("{status}: {}…", l.chars().take(160).collect::<String>())
        }
        Some(l) => format!("{status}: {l}"),
        None => format!("{status} and printed nothing"),
    }
}

/// [`absorb`] base runs, keeping each test file's slowest base run in `base_seconds`.
fn absorb_base(
    out: &mut IssueExec,
    seen: &mut Results,
    base_seconds: &mut BTreeMap<usize, f64>,
    jobs: &[(usize, What, u32)],
    results: Vec<RunResult>,
) {
    for (job, r) in jobs.iter().zip(results) {
        if let Some((What::Tests(k), secs)) = absorb(out, seen, &[], job, r) {
            let e = base_seconds.entry(k).or_insert(0.0);
            *e = e.max(secs);
        }
    }
}

/// Whether test file `k`'s first base run took at most `within` seconds and some test passed.
fn passes_within(
    seen: &Results,
    base_seconds: &BTreeMap<usize, f64>,
    k: usize,
    within: f64,
) -> bool {
    base_seconds.get(&k).is_some_and(|&s| s <= within)
        && seen
            .tests
            .get(&(0, k, 0))
            .is_some_and(|r| !r.passed().is_empty())
}

/// What the issue-only search and the repository's names tell the model besides the issue.
fn test_context(task: &Task, files: &FileIndex, names: &RepoNames) -> TestContext {
    let opts = crate::localize::search::LocateOptions {
        top_files: llm_repro::CONTEXT_FILES,
        ..Default::default()
    };
    TestContext {
        modules: names.modules.iter().cloned().collect(),
        files: crate::localize::search::locate_files(&task.problem_statement, files, &opts)
            .into_iter()
            .take(llm_repro::CONTEXT_FILES)
            .map(|f| f.path)
            .collect(),
    }
}

/// Settle the model's test from what it printed at the base commit (`None`: it did not run):
/// kept only when it printed `Issue reproduced`. Returns whether it is kept.
fn keep_model_test(record: &mut ModelTestRecord, base: Option<ModelTest>) -> bool {
    if record.runnable().is_none() {
        record.status = TestStatus::NotWritten;
        return false;
    }
    record.base = base;
    let why = match base {
        Some(b) => llm_repro::discard_reason(b),
        None => Some("its run at the base commit failed (see the issue's error)".into()),
    };
    record.status = if why.is_none() {
        TestStatus::Kept
    } else {
        TestStatus::Discarded
    };
    record.why = why;
    record.status == TestStatus::Kept
}

fn repro_outcome(run: &Run) -> ReproOutcome {
    let exit = if run.timed_out { None } else { run.code };
    ReproOutcome::read(exit, &run.output, "", &[])
}

/// Why a run never reached the repository's code, when it ended in `ModuleNotFoundError` /
/// `ImportError` for a package the environment lacks: a top-level module that is not one of
/// the repository's own (`No module named 'numpy'`), or an `ImportError` the repository
/// raises itself to say an optional package is missing (sympy's "LaTeX parsing requires the
/// antlr4 python package, provided by pip …"). `None` otherwise: an import error of the
/// repository's own code is what the issue may be about.
fn missing_package(o: &ReproOutcome, names: &RepoNames) -> Option<String> {
    if !matches!(
        o.exception.as_deref(),
        Some("ModuleNotFoundError" | "ImportError")
    ) {
        return None;
    }
    if let Some(top) = unimported_module(&o.output) {
        return (!top.is_empty() && !names.modules.contains(top)).then(|| {
            format!("it cannot import `{top}`, which is not part of the repository nor installed")
        });
    }
    let message = import_error_message(&o.output)?;
    let lower = message.to_ascii_lowercase();
    let says_missing = lower.contains("requires the")
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| matches!(w, "install" | "installed" | "pip" | "conda"));
    says_missing.then(|| {
        let short: String = message.chars().take(100).collect();
        format!("the environment lacks a package it needs (ImportError: {short})")
    })
}

/// When the reproduction's output reports each of its `statements` (1…n) raising `NameError`,
/// the first one's message (`name 'app' is not defined`).
fn only_name_errors(output: &str, statements: usize) -> Option<String> {
    let mut raised = BTreeSet::new();
    let mut first = None;
    for (n, what) in raised_statements(output) {
        let msg = what.strip_prefix("NameError: ")?;
        raised.insert(n);
        first.get_or_insert_with(|| msg.to_string());
    }
    (statements > 0 && raised.iter().copied().eq(1..=statements))
        .then_some(first)
        .flatten()
}

/// The top-level module of the last `No module named 'x.y'` in `output` (`x`).
fn unimported_module(output: &str) -> Option<&str> {
    let at = output.rfind("No module named ")?;
    let rest = output[at + "No module named ".len()..].trim_start_matches(['\'', '"']);
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].split('.').next()
}

/// Whether Python `code` has a line importing `module` (`import numpy as np`,
/// `from numpy.linalg import norm`), at any indentation.
fn imports_module(code: &str, module: &str) -> bool {
    let names = |r: &str| {
        r.trim_start()
            .strip_prefix(module)
            .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    code.lines().any(|l| {
        let t = l.trim_start();
        match (t.strip_prefix("import "), t.strip_prefix("from ")) {
            (Some(list), _) => list.split(',').any(names),
            (None, Some(from)) => names(from),
            (None, None) => false,
        }
    })
}

/// The first line of the last `ImportError: …` in `output`.
fn import_error_message(output: &str) -> Option<&str> {
    let at = output.rfind("ImportError: ")?;
    Some(output[at + "ImportError: ".len()..].lines().next()?.trim())
}

/// The known package ([`crate::exec::env::extra_for`]) whose absence stopped a run: the
/// module it could not import, or the one an optional import's message names. `None` when the
/// run did not stop on a missing package, or that package is not a known one.
fn missing_extra(o: &ReproOutcome, names: &RepoNames) -> Option<Extra> {
    missing_package(o, names)?;
    match unimported_module(&o.output) {
        Some(top) => extra_for(top),
        None => extra_named_in(import_error_message(&o.output)?),
    }
}

/// Whether an agent's reproduction script, as it ran at base, can stand in for the issue's:
/// it ended within the time limit, and not on something outside the issue (an import the
/// base commit cannot satisfy, a syntax error, a missing file, the network the sandbox
/// withholds).
fn usable_agent_script(o: &ReproOutcome, names: &RepoNames) -> bool {
    if o.exit.is_none() || missing_package(o, names).is_some() {
        return false;
    }
    let Some(e) = o.exception.as_deref() else {
        return true;
    };
    let lower = e.to_ascii_lowercase();
    !matches!(
        e,
        "SyntaxError"
            | "IndentationError"
            | "ImportError"
            | "ModuleNotFoundError"
            | "FileNotFoundError"
    ) && ![
        "connection",
        "gaierror",
        "urlerror",
        "maxretry",
        "timeout",
        "proxy",
        "ssl",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The runs a regression compares for tree `t` and test file `k`: the file's two runs at the
/// base commit and its first run with the tree.
fn compared_runs(
    tests: &BTreeMap<(usize, usize, u32), TestRun>,
    t: usize,
    k: usize,
) -> Option<(&TestRun, &TestRun, &TestRun)> {
    Some((
        tests.get(&(0, k, 0))?,
        tests.get(&(0, k, 1))?,
        tests.get(&(t, k, 0))?,
    ))
}

/// How a candidate's reproduction run compares with the base commit's. A run that first fails
/// at the statement where the base run first failed, with another exception the issue never
/// names, still fails ([`ReproChange::StillFails`]): sympy-17655's `Point2D` sum raises
/// `AttributeError` instead of `GeometryError` there. An exception the issue names (it asks for
/// a `ValueError`), or a first failure at a later statement (the reported one now passes), is a
/// change. A first failure at an earlier statement, which ran at the base commit, is broken
/// (sympy-21379's candidates whose module no longer imports, sympy-24066's whose earlier
/// `assert` now fails), unless it raises another exception than the base run, one the issue
/// names.
fn repro_change(base: &ReproOutcome, cand: &ReproOutcome, issue: &str) -> ReproChange {
    if !cand.changed_from(base) {
        return ReproChange::Same;
    }
    if cand.exit.is_none() || (cand.exception.is_some() && base.exception.is_none()) {
        return ReproChange::Broken;
    }
    let (Some(was), Some(now)) = (&base.exception, &cand.exception) else {
        return ReproChange::Changed;
    };
    let (base_at, cand_at) = (
        first_failing_statement(&base.output),
        first_failing_statement(&cand.output),
    );
    // An exception the issue names is one it asks for only when the base run does not raise
    // it: issues name the exception they report (astropy-14182's `TypeError`).
    let asked_for = was != now && names_on_boundary(issue, now);
    match (base_at, cand_at) {
        (Some(b), Some(c)) if c < b && !asked_for => ReproChange::Broken,
        (Some(b), Some(c)) if c == b && was != now && !asked_for => ReproChange::StillFails,
        _ => ReproChange::Changed,
    }
}

impl IssueExec {
    /// How many model-written tests were kept: each kept sample, or the one test when a
    /// single one was asked for.
    pub fn model_tests_kept(&self) -> usize {
        if self.model_test_samples.is_empty() {
            usize::from(
                self.model_test
                    .as_ref()
                    .is_some_and(|m| m.status == TestStatus::Kept),
            )
        } else {
            self.model_test_samples
                .iter()
                .filter(|m| m.status == TestStatus::Kept)
                .count()
        }
    }
}

/// Why a reproduction whose two base runs end differently is not used.
const UNSTEADY: &str = "it ends differently in two runs at the base commit";

/// The reproduction has run twice at base: `first` is the first run, `seen.repros[0]` the
/// second. Output that differs between them (random numbers, an order that follows string
/// hashing, a first-run cache message) would make every candidate look as if it changed
/// what the issue's code does; from then on only how a run ends (exit status, exception) is
/// kept. Runs that end differently leave nothing to compare: the reproduction is dropped
/// (`false`).
fn settle_repro(out: &mut IssueExec, seen: &mut Results, first: &ReproOutcome) -> bool {
    let Some(second) = seen.repros.get_mut(&0) else {
        return false;
    };
    if second.exit != first.exit || second.exception != first.exception {
        seen.repros.remove(&0);
        out.reproduction = false;
        return false;
    }
    if second.output != first.output {
        second.output.clear();
        out.repro_output_unstable = true;
    }
    true
}

/// How a reproduction run ended, in words: `raises ValueError at statement 4` (the statement
/// the script reports first), `raises ValueError` (a traceback the script does not wrap),
/// `runs without error`, `exits with status 2`, `is killed (time limit)`.
fn describe(o: &ReproOutcome) -> String {
    match (&o.exception, o.exit) {
        (Some(e), _) => match first_failing_statement(&o.output) {
            Some(n) => format!("raises {e} at statement {n}"),
            None => format!("raises {e}"),
        },
        (None, Some(0)) => "runs without error".into(),
        (None, Some(c)) => format!("exits with status {c}"),
        (None, None) => "is killed (time limit)".into(),
    }
}

/// Gather execution evidence for the candidates of one issue. `repo` is the git repository
/// holding `task.base_commit`; `cands` are (agent, the candidate rebuilt against it), in order.
///
/// The environment is built at the spec's setup commit, shared by the tasks of its version;
/// SWE-bench installs each task's base commit instead. Where the two differ in what the tree
/// imports (pytest-7168's tree needs `wcwidth`, which the setup commit's install does not
/// bring), no base test run can import the tree, or the issue's code stops on a module the
/// tree imports (pytest-7220's `wcwidth`): the environment is then built again at the task's
/// base commit, and the evidence gathered with it. With [`ExecSettings::install_extras`], a
/// well-known package the issue's code stops on is installed and the issue gathered again.
pub fn gather(
    task: &Task,
    repo: &Path,
    files: &FileIndex,
    cands: &[(&str, &PatchView)],
    settings: &ExecSettings,
) -> IssueExec {
    let version = task.version.as_deref().unwrap_or("");
    let spec = match spec_for(&task.repo, version, &settings.overrides) {
        Ok(s) => s,
        Err(e) => {
            return IssueExec {
                behaviour: vec![None; cands.len()],
                error: Some(format!("{e:#}")),
                ..IssueExec::default()
            }
        }
    };
    let mut resolved = Resolved {
        task,
        repo,
        files,
        cands,
        settings,
        // Test files as the repository's pytest settings name them at the base commit.
        tests: test_files_of(repo, &task.base_commit),
        spec,
    };
    let mut out = gather_in(&resolved);
    // The issue's code stopped at base on a well-known package the environment lacks (a
    // `lambdify` issue's `import numpy` where sympy's tests need none): the whole issue is
    // gathered again in an environment with it, the repository's tests included (those that
    // skip without it then run). Each package is tried once, a few at most (numpy, then what
    // the code imports next).
    while settings.install_extras && resolved.spec.extras.len() < MAX_EXTRAS {
        let Some(dist) = out.missing_extra.take() else {
            break;
        };
        if resolved.spec.extras.contains(&dist) {
            break;
        }
        resolved.spec.extras.push(dist.clone());
        let mut again = gather_in(&resolved);
        if let Some(e) = &again.error {
            out.extras_failed = Some(format!(
                "installing {dist} for the issue's code failed: {}",
                e.lines().next().unwrap_or_default()
            ));
            break;
        }
        again.extras = resolved.spec.extras.clone();
        add_costs(&mut again, &out);
        out = again;
    }
    out
}

/// Packages installed for one issue's code at most (see [`gather`]).
const MAX_EXTRAS: usize = 3;

/// What the earlier tries at an issue cost, added to the try that stands.
fn add_costs(to: &mut IssueExec, earlier: &IssueExec) {
    to.runs += earlier.runs;
    to.cached_runs += earlier.cached_runs;
    to.run_seconds += earlier.run_seconds;
    to.env_seconds += earlier.env_seconds;
}

/// [`gather`] in the environment `resolved` names: built at its spec's setup commit, and
/// again at the task's base commit when no base test run could import the tree, or the
/// issue's code stopped on a module the tree imports.
fn gather_in(resolved: &Resolved) -> IssueExec {
    let Resolved { task, spec, .. } = resolved;
    let first = gather_at(resolved, false);
    // What the setup commit's environment lacks that the base commit's tree needs: no test
    // could import the tree, or the issue's code stopped on a module the tree imports (not the
    // issue's own import, nor a package dei installs for it): pytest-7220's tree imports
    // `wcwidth`, which its base commit's setup.py requires and the setup commit's does not.
    let unread = first.tests_unread.as_deref().filter(|w| import_failure(w));
    let why = match (unread, &first.tree_lacks) {
        (Some(w), _) => format!("no test could run ({})", w.trim_start_matches(UNREAD)),
        (None, Some(m)) => {
            format!("the issue's code stopped on importing `{m}`, which the tree imports")
        }
        (None, None) => return first,
    };
    // Only an environment built by checking out the setup commit can differ at the base
    // commit (a stand-in for a missing setup commit, noted in `env_commit`, already is it).
    if first.env_commit.is_some() || spec.setup_commit.is_none() || !spec.needs_work_tree() {
        return first;
    }
    let mut again = gather_at(resolved, true);
    if let Some(e) = &again.error {
        let failed = e.lines().next().unwrap_or_default();
        let mut first = first;
        first.env_commit = Some(format!(
            "with the setup commit's environment {why}, and a build at the base commit failed: {failed}"
        ));
        return first;
    }
    again.env_commit = Some(format!(
        "built at the base commit {}: with the setup commit's environment {why}",
        task.base_commit.get(..12).unwrap_or(&task.base_commit),
    ));
    add_costs(&mut again, &first);
    again
}

/// What each try at gathering an issue's evidence works from: [`gather`]'s inputs, and what it
/// resolves once for the issue (the spec, which a try may extend with packages, and the test
/// files).
struct Resolved<'a> {
    task: &'a Task,
    repo: &'a Path,
    files: &'a FileIndex,
    cands: &'a [(&'a str, &'a PatchView)],
    settings: &'a ExecSettings,
    spec: EnvSpec,
    tests: regress::TestFiles,
}

/// Whether a run's end (`IssueExec::tests_unread`) is the tree failing to import something.
fn import_failure(why: &str) -> bool {
    ["ModuleNotFoundError", "ImportError", "No module named"]
        .iter()
        .any(|w| why.contains(w))
}

/// The repository's test files as its pytest settings at `commit` name them (the built-in
/// names alone when it has none, or it cannot be read).
fn test_files_of(repo: &Path, commit: &str) -> regress::TestFiles {
    let Ok(snap) = crate::model::repo::Snapshot::open(repo, commit) else {
        return regress::TestFiles::default();
    };
    let texts: Vec<(&str, String)> = regress::PYTEST_CONFIGS
        .iter()
        .filter_map(|(name, _)| Some((*name, snap.read(name).ok()??)))
        .collect();
    let configs: Vec<(&str, &str)> = texts.iter().map(|(n, t)| (*n, t.as_str())).collect();
    regress::TestFiles::from_configs(&configs)
}

fn gather_at(resolved: &Resolved, at_base: bool) -> IssueExec {
    let Resolved {
        task,
        repo,
        files,
        cands,
        settings,
        spec,
        tests,
    } = resolved;
    let mut out = IssueExec {
        behaviour: vec![None; cands.len()],
        ..IssueExec::default()
    };
    let builder = EnvBuilder::new(&settings.env_dir);
    // A spec's setup commit can be missing from a clone that lacks the branch it is on (the
    // shared pytest bundle has no 4.6.x): when the build checks it out, the task's base commit,
    // of the same version, stands in, in an environment of its own (the commit is part of its
    // key). A spec that never checks the repository out only keys on it: nothing to replace.
    let setup = spec
        .setup_commit
        .as_deref()
        .filter(|_| spec.needs_work_tree());
    let stand_in = build_commit(setup, &task.base_commit, repo).map(|(commit, why)| {
        out.env_commit = Some(why);
        commit
    });
    // A spec of the user's own (`--setup` with no shipped spec) names no setup commit: its
    // install step runs on the repository as the issue has it, at the base commit.
    let at = stand_in.or_else(|| {
        ((at_base || spec.setup_commit.is_none()) && spec.needs_work_tree())
            .then_some(task.base_commit.as_str())
    });
    let env = match builder.build(spec, repo, at) {
        Ok(e) => e,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.env_seconds = env.build_seconds;
    let generated = match env.generated_files() {
        Ok(g) => g,
        Err(e) => {
            out.error = Some(format!("{e:#}"));
            return out;
        }
    };
    let runner = Runner {
        settings,
        repo,
        commit: &task.base_commit,
        env_key: env.dir.display().to_string(),
        env_vars: env.job_env(),
        generated,
    };

    // Which tests: each candidate's own selection (the files its edits reach), within the
    // best-scored files of all of them; each file runs on its own, so runs are shared between
    // candidates, committees and reruns.
    // With the test files each candidate edits that its tree leaves as at base.
    let (afters, aside): (Vec<Option<Vec<TreeFile>>>, Vec<Vec<String>>) = cands
        .iter()
        .map(|(_, v)| match after_files(v, tests) {
            Some((files, aside)) => (Some(files), aside),
            None => (None, Vec::new()),
        })
        .unzip();
    // Files the candidates create at the repository's root are the agents' scratch
    // (`reproduce.py`, a sample `test.qdp` the issue's code reads, a `.coveragerc`): the
    // reproductions run without them, so a candidate is not seen changing what the issue's
    // code does by supplying the input file it was missing.
    let scratch: BTreeSet<&str> = cands
        .iter()
        .flat_map(|(_, v)| &v.files)
        .filter(|f| f.before.is_none() && f.after.is_some() && !f.path.contains('/'))
        .map(|f| f.path.as_str())
        .collect();
    let without_scratch = |files: &[TreeFile]| -> Vec<TreeFile> {
        files
            .iter()
            .filter(|f| !scratch.contains(f.path.as_str()))
            .cloned()
            .collect()
    };
    // Each candidate that rebuilt picks its files with `pick`.
    let picks =
        |pick: &dyn Fn(&PatchView) -> Vec<regress::TestFile>| -> Vec<Vec<regress::TestFile>> {
            cands
                .iter()
                .zip(&afters)
                .map(|((_, view), after)| after.as_ref().map_or_else(Vec::new, |_| pick(view)))
                .collect()
        };
    let mut chosen = picks(&|v| regress::select_for(files, tests, v, regress::MAX_FILES));
    // No candidate reaches a test file: the tests importing an edited module's package stand
    // in (whole files unless they name an edited definition).
    if chosen.iter().all(Vec::is_empty) {
        chosen = picks(&|v| {
            regress::select_by_package(
                files,
                tests,
                &regress::edits_of(v, tests),
                regress::MAX_FILES,
            )
        });
    }
    let mut scored: BTreeMap<String, f64> = BTreeMap::new();
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut named_after: BTreeSet<String> = BTreeSet::new();
    let own: Vec<Vec<String>> = chosen
        .into_iter()
        .map(|mine| {
            mine.into_iter()
                .map(|t| {
                    if t.named_after {
                        named_after.insert(t.path.clone());
                    }
                    let e = scored.entry(t.path.clone()).or_insert(0.0);
                    *e = e.max(t.score);
                    ids.entry(t.path.clone()).or_default().extend(t.tests);
                    t.path
                })
                .collect()
        })
        .collect();
    let mut ranked: Vec<(String, f64)> = scored.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(MAX_TEST_FILES);
    out.test_files = ranked.into_iter().map(|(p, _)| p).collect();
    out.test_files.sort();
    // Each candidate's files, as indices into `test_files` (those that made the cut).
    let own: Vec<Vec<usize>> = own
        .iter()
        .map(|mine| {
            mine.iter()
                .filter_map(|f| out.test_files.iter().position(|x| x == f))
                .collect()
        })
        .collect();

    // The reproduction.
    let names = RepoNames::from_repo(files);
    // When the issue gives none (or one that cannot run), an agent's reproduction script
    // stands in: see below.
    let issue_repro =
        repro::reproduction(&task.problem_statement, &names).filter(|r| r.statements > 0);
    let statements = issue_repro.as_ref().map_or(0, |r| r.statements);
    let mut script = issue_repro.map(|r| r.script);
    out.reproduction = script.is_some();
    let repro_cmd = format!("python {REPRO_FILE}");
    let with_script = |files: &[TreeFile], script: Option<&str>| -> Vec<TreeFile> {
        let mut v = without_scratch(files);
        if let Some(s) = script {
            v.push(TreeFile {
                path: REPRO_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    };

    // The model's reproduction tests: each sample asked once per issue (the response cache
    // answers reruns). Settled into `out.model_test` (and `model_test_samples`) after the base
    // runs.
    let mut model_records: Vec<ModelTestRecord> = settings
        .model_test
        .as_ref()
        .map(|w| w.write_all(task, &test_context(task, files, &names)))
        .unwrap_or_default();
    let model_scripts: Vec<Option<String>> = model_records
        .iter()
        .map(|r| r.runnable().map(str::to_string))
        .collect();
    let model_cmd = format!("python {}", llm_repro::TEST_FILE);
    let with_model_test = |files: &[TreeFile], sample: usize| -> Vec<TreeFile> {
        let mut v = without_scratch(files);
        if let Some(s) = model_scripts.get(sample).and_then(Option::as_ref) {
            v.push(TreeFile {
                path: llm_repro::TEST_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    };

    // Distinct trees: the base, then each distinct after-tree once, with the test files of
    // every candidate that has it.
    let mut trees: Vec<Vec<TreeFile>> = vec![Vec::new()];
    let mut tree_files: Vec<Vec<usize>> = vec![(0..out.test_files.len()).collect()];
    let mut tree_of: Vec<Option<usize>> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (a, mine) in afters.iter().zip(&own) {
        let t = a.as_ref().map(|files| {
            *seen.entry(tree_key(files)).or_insert_with(|| {
                trees.push(files.clone());
                tree_files.push(Vec::new());
                trees.len() - 1
            })
        });
        if let Some(t) = t {
            for &k in mine {
                if !tree_files[t].contains(&k) {
                    tree_files[t].push(k);
                }
            }
        }
        tree_of.push(t);
    }
    // Jobs: (tree, what, pass). Base test files run twice. A file runs only the tests that
    // name what some candidate edits (all candidates' together, so base and candidates run
    // the same command), or all of it when none does. A file named after an edited module is
    // tried whole first (its other tests may reach the edit indirectly), and narrowed to its
    // tests only when whole it is slow at base or nothing in it passes.
    let mut file_ids: Vec<Vec<String>> = out
        .test_files
        .iter()
        .map(|f| {
            ids.get(f)
                .map(|s| s.iter().take(regress::MAX_IDS).cloned().collect())
                .unwrap_or_default()
        })
        .collect();
    let whole_first: Vec<bool> = out
        .test_files
        .iter()
        .zip(&file_ids)
        .map(|(f, ids)| !ids.is_empty() && named_after.contains(f))
        .collect();
    // Each file's command and time limit. A whole-file try gets only the time it may take to
    // stay whole (and a second more), so a file far too slow whole costs that, not the limit.
    let limit = settings.limits.timeout.as_secs_f64() / 2.0;
    let whole_limit = settings.limits.timeout.as_secs_f64() / WHOLE_FILE_SHARE;
    let full = settings.limits.timeout;
    let try_whole = std::time::Duration::from_secs_f64(whole_limit + 1.0).min(full);
    let mut test_cmds: Vec<(String, std::time::Duration)> = out
        .test_files
        .iter()
        .zip(&file_ids)
        .zip(&whole_first)
        .map(|((f, mine), &whole)| {
            if whole {
                (env.test_command_selected(f, &[]), try_whole)
            } else {
                (env.test_command_selected(f, mine), full)
            }
        })
        .collect();
    // Tests the candidates wrote, one set per agent family, each run over a tree with its
    // author's versions of their files on top (replacing the tree's own).
    let writers: Vec<(&str, &PatchView)> = cands
        .iter()
        .zip(&afters)
        .filter(|(_, a)| a.is_some())
        .map(|(c, _)| *c)
        .collect();
    let probes: Vec<WrittenTests> = written::written_tests(&writers, tests)
        .into_iter()
        .take(MAX_WRITTEN)
        .collect();
    let written_cmds: Vec<String> = probes
        .iter()
        .map(|w| {
            let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for (path, id) in &w.ids {
                by_file.entry(path).or_default().push(id.clone());
            }
            let files: Vec<(&str, &[String])> = by_file
                .iter()
                .map(|(f, ids)| (*f, ids.as_slice()))
                .collect();
            env.test_command_files(&files)
        })
        .collect();
    let with_written = |files: &[TreeFile], p: usize| -> Vec<TreeFile> {
        let mine = &probes[p].files;
        let mut v: Vec<TreeFile> = files
            .iter()
            .filter(|f| !mine.iter().any(|m| m.path == f.path))
            .cloned()
            .collect();
        v.extend(mine.iter().cloned());
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    };
    let run_job = |&(t, what, pass): &(usize, What, u32),
                   test_cmds: &[(String, std::time::Duration)],
                   batch_cmds: &[String],
                   script: Option<&str>| match what {
        What::Tests(k) => runner.run(&trees[t], &test_cmds[k].0, test_cmds[k].1, pass),
        What::Batch(b) => runner.run(&trees[t], &batch_cmds[b], settings.limits.timeout, pass),
        What::Repro => runner.run(
            &with_script(&trees[t], script),
            &repro_cmd,
            settings.repro_timeout,
            pass,
        ),
        What::ModelTest(sample) => runner.run(
            &with_model_test(&trees[t], sample),
            &model_cmd,
            settings.repro_timeout,
            pass,
        ),
        What::Written(p) => runner.run(&with_written(&trees[t], p), &written_cmds[p], full, pass),
    };
    let mut seen = Results::default();
    let mut base_seconds: BTreeMap<usize, f64> = BTreeMap::new();

    // Phase 1, the base: each test file, the reproduction and the model's test once, then a
    // second time each file that can still matter (some test passed, and it ran in at most
    // half the time limit: a file that slow at base would time out with a candidate on a
    // loaded machine, and say nothing).
    let mut base_jobs: Vec<(usize, What, u32)> = Vec::new();
    for &k in &tree_files[0] {
        base_jobs.push((0, What::Tests(k), 0));
    }
    if script.is_some() {
        base_jobs.push((0, What::Repro, 0));
    }
    for (sample, script) in model_scripts.iter().enumerate() {
        if script.is_some() {
            base_jobs.push((0, What::ModelTest(sample), 0));
        }
    }
    let mut first_repro: Option<ReproOutcome> = None;
    for pass in 0..2 {
        let results = run_all(
            &base_jobs,
            &|j| run_job(j, &test_cmds, &[], script.as_deref()),
            settings.jobs,
        );
        absorb_base(&mut out, &mut seen, &mut base_seconds, &base_jobs, results);
        if pass == 1 {
            break;
        }
        first_repro = seen.repros.get(&0).cloned();
        // Files tried whole: kept whole when quick and some test passed, else run again
        // narrowed to their tests (that run replaces the whole one).
        let narrow: Vec<usize> = (0..out.test_files.len())
            .filter(|&k| whole_first[k])
            .filter(|&k| !passes_within(&seen, &base_seconds, k, whole_limit))
            .collect();
        for k in 0..out.test_files.len() {
            test_cmds[k].1 = full;
            if whole_first[k] && !narrow.contains(&k) {
                file_ids[k].clear();
                out.whole_files.push(out.test_files[k].clone());
            }
        }
        if !narrow.is_empty() {
            let again: Vec<(usize, What, u32)> =
                narrow.iter().map(|&k| (0, What::Tests(k), 0)).collect();
            for &k in &narrow {
                test_cmds[k].0 = env.test_command_selected(&out.test_files[k], &file_ids[k]);
                base_seconds.remove(&k);
                seen.tests.remove(&(0, k, 0));
            }
            let results = run_all(
                &again,
                &|j| run_job(j, &test_cmds, &[], script.as_deref()),
                settings.jobs,
            );
            absorb_base(&mut out, &mut seen, &mut base_seconds, &again, results);
        }
        base_jobs = tree_files[0]
            .iter()
            .filter(|&&k| passes_within(&seen, &base_seconds, k, limit))
            .map(|&k| (0, What::Tests(k), 1))
            .collect();
        // The reproduction runs twice at base too (see `settle_repro`).
        if script.is_some() {
            base_jobs.push((0, What::Repro, 1));
        }
    }
    if let Some(first) = &first_repro {
        if !settle_repro(&mut out, &mut seen, first) {
            out.repro_base = Some(format!("not used: {UNSTEADY}"));
        }
    }
    // A reproduction whose two base runs printed differently (sympy's term order under hash
    // randomization, `np.random` data) runs twice more with its randomness pinned; when those
    // two print alike the pinned script is the reproduction (its first base run returned),
    // else everything stays as it was and only how its runs end is compared.
    let pin = |out: &mut IssueExec, seen: &mut Results, script: &str| {
        let pinned = repro::pinned(script)?;
        let unpinned = seen.repros.remove(&0);
        // Read whole (an unsteady reproduction's runs keep only how they end).
        out.repro_output_unstable = false;
        let job = (0, What::Repro, 0);
        let r = run_job(&job, &test_cmds, &[], Some(&pinned));
        absorb(out, seen, &[], &job, r);
        let first = seen.repros.get(&0).cloned();
        let steady = first.as_ref().is_some_and(|first| {
            let job = (0, What::Repro, 1);
            let r = run_job(&job, &test_cmds, &[], Some(&pinned));
            absorb(out, seen, &[], &job, r);
            settle_repro(out, seen, first) && !out.repro_output_unstable
        });
        if steady {
            out.repro_pinned = true;
            return Some((pinned, first?));
        }
        seen.repros.remove(&0);
        if let Some(u) = unpinned {
            seen.repros.insert(0, u);
        }
        out.reproduction = true;
        out.repro_output_unstable = true;
        None
    };
    if out.repro_output_unstable {
        if let Some((pinned, first)) = script.clone().and_then(|s| pin(&mut out, &mut seen, &s)) {
            script = Some(pinned);
            first_repro = Some(first);
        }
    }

    // Not one base run printed a test result: say how the first one ended, so that a wrong
    // test command is seen, not mistaken for tests that all fail.
    if !tree_files[0].is_empty() && tree_files[0].iter().all(|k| seen.unread.contains_key(k)) {
        let k = tree_files[0][0];
        out.tests_unread = Some(format!("{UNREAD}{} {}", out.test_files[k], seen.unread[&k]));
    }

    // A reproduction that fails at base for a package the environment lacks (the issue's
    // `import numpy` where the environment has no numpy, an optional parser's runtime) never
    // reaches the code the issue is about: what candidates do to it says nothing, so it is
    // not used.
    // (Read on the first base run: the second's output may have been dropped as unsteady.)
    let base_repro = seen.repros.get(&0).and(first_repro.as_ref());
    if let Some(why) = base_repro.and_then(|b| missing_package(b, &names)) {
        out.missing_extra = base_repro
            .and_then(|b| missing_extra(b, &names))
            .map(|e| e.dist.to_string());
        out.tree_lacks = base_repro
            .and_then(|b| unimported_module(&b.output))
            .filter(|m| out.missing_extra.is_none() && !m.is_empty())
            .filter(|m| !script.as_deref().is_some_and(|s| imports_module(s, m)))
            .map(str::to_string);
        seen.repros.remove(&0);
        out.repro_output_unstable = false;
        out.reproduction = false;
        out.repro_base = Some(format!("not used: {why}"));
    }
    // Code quoted from the library rather than a reproduction (flask-5063's
    // `app.register_blueprint(…)` with no `app`, requests-2317's `builtin_str(method)`): every
    // statement raises `NameError` at base, so nothing of it runs with any candidate either.
    let base_repro = seen.repros.get(&0).and(first_repro.as_ref());
    if let Some(msg) = base_repro.and_then(|b| only_name_errors(&b.output, statements)) {
        seen.repros.remove(&0);
        out.repro_output_unstable = false;
        out.repro_pinned = false;
        out.reproduction = false;
        out.repro_base = Some(format!(
            "not used: every statement of it raises NameError at the base commit ({msg}): code quoted from the library, not a reproduction"
        ));
    }

    // No usable reproduction from the issue: the candidates' own reproduction scripts
    // (`reproduce_bug.py` at the root), tried at base in order; the first that runs there
    // without failing for a reason outside the issue (a missing module, a syntax error, no
    // network, the time limit) stands in for it.
    if !seen.repros.contains_key(&0) {
        let scripts = repro::agent_scripts(cands, files);
        for s in scripts.iter().take(MAX_AGENT_SCRIPTS) {
            out.repro_output_unstable = false;
            let job = (0, What::Repro, 0);
            let r = run_job(&job, &test_cmds, &[], Some(&s.script));
            absorb(&mut out, &mut seen, &[], &job, r);
            // Usable at base is checked on the first run; a second must end the same way.
            let steady = match seen.repros.get(&0).cloned() {
                Some(first) if usable_agent_script(&first, &names) => {
                    let job = (0, What::Repro, 1);
                    let r = run_job(&job, &test_cmds, &[], Some(&s.script));
                    absorb(&mut out, &mut seen, &[], &job, r);
                    settle_repro(&mut out, &mut seen, &first)
                }
                _ => false,
            };
            match seen.repros.get(&0) {
                Some(b) if steady && usable_agent_script(b, &names) => {
                    script = Some(s.script.clone());
                    if out.repro_output_unstable {
                        if let Some((pinned, _)) = pin(&mut out, &mut seen, &s.script) {
                            script = Some(pinned);
                        }
                    }
                    out.reproduction = true;
                    out.repro_from = Some(format!("{}, written by {}", s.path, s.agent));
                    break;
                }
                _ => {
                    seen.repros.remove(&0);
                }
            }
        }
    }

    // The model's tests are kept only when they show the issue at the base commit.
    let model_kept: Vec<usize> = model_records
        .iter_mut()
        .enumerate()
        .filter_map(|(sample, r)| {
            keep_model_test(r, seen.model.get(&(0, sample)).copied()).then_some(sample)
        })
        .collect();
    out.model_test = model_records
        .get(model_kept.first().copied().unwrap_or(0))
        .cloned();
    if model_records.len() > 1 {
        out.model_test_samples = model_records;
    }

    // The candidates' own tests, twice at base: kept are the tests that fail (or err) in both
    // runs; a set with none left (it passes at base, or its file does not even collect there)
    // says nothing about the others.
    let base_written: Vec<(usize, What, u32)> = (0..probes.len())
        .flat_map(|p| [(0, What::Written(p), 0), (0, What::Written(p), 1)])
        .collect();
    let results = run_all(
        &base_written,
        &|j| run_job(j, &test_cmds, &[], script.as_deref()),
        settings.jobs,
    );
    for (job, r) in base_written.iter().zip(results) {
        absorb(&mut out, &mut seen, &[], job, r);
    }
    let written_kept: Vec<(usize, Vec<String>)> = (0..probes.len())
        .filter_map(|p| {
            let (a, b) = (seen.written.get(&(0, p, 0))?, seen.written.get(&(0, p, 1))?);
            let failing: Vec<String> = probes[p]
                .ids
                .iter()
                .map(|(_, id)| id)
                .filter(|id| {
                    a.results.get(*id).is_some_and(|s| s.is_bad())
                        && b.results.get(*id).is_some_and(|s| s.is_bad())
                })
                .cloned()
                .collect();
            (!failing.is_empty()).then_some((p, failing))
        })
        .collect();
    out.written_tests = written_kept
        .iter()
        .map(|(p, ids)| WrittenRecord {
            agent: probes[*p].agent.clone(),
            family: probes[*p].family.clone(),
            tests: ids.clone(),
        })
        .collect();

    // Phase 2, the candidates: only the files where some test passed both times at base in
    // time; the reproduction when it ran; the model's test when it was kept.
    let tests = &seen.tests;
    let useful = |k: usize| -> bool {
        let (Some(a), Some(b)) = (tests.get(&(0, k, 0)), tests.get(&(0, k, 1))) else {
            return false;
        };
        regression(a, b, a).stable > 0 && base_seconds.get(&k).is_some_and(|&s| s <= limit)
    };
    // A tree's useful files run together, packed into batches (one interpreter start each);
    // a batch of one file runs the file's own command, shared with the per-file cache.
    let mut jobs: Vec<(usize, What, u32)> = Vec::new();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut batch_cmds: Vec<String> = Vec::new();
    for (t, ks) in tree_files.iter().enumerate().skip(1) {
        let mut mine: Vec<(usize, f64, u8)> = ks
            .iter()
            .filter(|&&k| useful(k))
            .map(|&k| (k, base_seconds[&k], env.batch_key(&file_ids[k])))
            .collect();
        mine.sort_by_key(|m| m.0);
        for batch in pack(&mine, limit) {
            if let [k] = batch[..] {
                jobs.push((t, What::Tests(k), 0));
                continue;
            }
            let files: Vec<(&str, &[String])> = batch
                .iter()
                .map(|&k| (out.test_files[k].as_str(), file_ids[k].as_slice()))
                .collect();
            batch_cmds.push(env.test_command_files(&files));
            batches.push(batch);
            jobs.push((t, What::Batch(batches.len() - 1), 0));
        }
        if seen.repros.contains_key(&0) {
            jobs.push((t, What::Repro, 0));
        }
        for &sample in &model_kept {
            jobs.push((t, What::ModelTest(sample), 0));
        }
        for (p, _) in &written_kept {
            jobs.push((t, What::Written(*p), 0));
        }
    }
    out.slow_files = (0..out.test_files.len())
        .filter(|&k| base_seconds.get(&k).is_some_and(|&s| s > limit))
        .map(|k| out.test_files[k].clone())
        .collect();
    let results = run_all(
        &jobs,
        &|j| run_job(j, &test_cmds, &batch_cmds, script.as_deref()),
        settings.jobs,
    );
    for (job, r) in jobs.iter().zip(results) {
        absorb(&mut out, &mut seen, &batches, job, r);
    }

    // Phase 3: a test the candidate broke runs once more with it, narrowed to the file's broken
    // tests (as the base runs twice, to drop flaky tests), and counts as broken only when it
    // does not pass again: a test that failed by chance, or only after others in the same
    // process, is not held against the candidate.
    let mut confirm: Vec<(usize, What, u32)> = Vec::new();
    for (t, ks) in tree_files.iter().enumerate().skip(1) {
        for &k in ks {
            let Some((a, b, c)) = compared_runs(&seen.tests, t, k) else {
                continue;
            };
            let broken = regression(a, b, c).broken;
            if broken.is_empty() {
                continue;
            }
            let ids: Vec<String> = broken.into_iter().take(regress::MAX_IDS).collect();
            batch_cmds.push(env.test_command_selected(&out.test_files[k], &ids));
            batches.push(vec![k]);
            confirm.push((t, What::Batch(batches.len() - 1), 1));
        }
    }
    let results = run_all(
        &confirm,
        &|j| run_job(j, &test_cmds, &batch_cmds, script.as_deref()),
        settings.jobs,
    );
    for (job, r) in confirm.iter().zip(results) {
        absorb(&mut out, &mut seen, &batches, job, r);
    }
    let Results {
        tests,
        repros,
        model,
        written: written_runs,
        unread: _,
    } = seen;

    // Base: tests that passed twice count. A candidate is compared on its own files.
    let regression_of = |t: usize, ks: &[usize]| -> Option<Regression> {
        let mut total: Option<Regression> = None;
        for &k in ks {
            let Some((a, b, c)) = compared_runs(&tests, t, k) else {
                continue;
            };
            let mut r = regression(a, b, c);
            // A candidate's broken test that passed when run again (phase 3) is not broken.
            if let Some(again) = tests.get(&(t, k, 1)).filter(|_| t != 0) {
                r.broken
                    .retain(|id| again.results.get(id) != Some(&Status::Passed));
            }
            let acc = total.get_or_insert_with(Regression::default);
            acc.stable += r.stable;
            acc.flaky.extend(r.flaky);
            acc.broken.extend(r.broken);
        }
        total
    };
    if let Some(r) = regression_of(0, &tree_files[0]) {
        out.stable_tests = r.stable;
        out.flaky_tests = r.flaky;
    }
    let repro_base = repros.get(&0).cloned();
    if out.reproduction || repro_base.is_some() {
        out.repro_base = repro_base.as_ref().map(describe);
    }
    let mut sigs: Vec<Option<Signature>> = Vec::new();
    for (i, t) in tree_of.iter().enumerate() {
        let Some(t) = *t else {
            sigs.push(None);
            continue;
        };
        let reg = regression_of(t, &own[i]);
        // The candidate's own debug output is not a change in behaviour.
        let rep = repros.get(&t).cloned().map(|o| match &repro_base {
            Some(b) => o.without_own_prints(&own_prints(cands[i].1), b),
            None => o,
        });
        let change = match (&rep, &repro_base) {
            (Some(c), Some(b)) => Some(repro_change(b, c, &task.problem_statement)),
            _ => None,
        };
        let reg = reg.filter(|r| r.stable > 0);
        let verdicts: Vec<ModelTest> = model_kept
            .iter()
            .filter_map(|&sample| model.get(&(t, sample)).copied())
            .collect();
        let model_test = llm_repro::combine(&verdicts);
        // Each kept written test set: passed when every one of its kept tests passes.
        let passes: Vec<bool> = written_kept
            .iter()
            .map(|(p, ids)| {
                written_runs.get(&(t, *p, 0)).is_some_and(|r| {
                    ids.iter()
                        .all(|id| r.results.get(id) == Some(&Status::Passed))
                })
            })
            .collect();
        let written = written_kept
            .iter()
            .zip(&passes)
            .map(|((p, _), &ok)| (probes[*p].family.clone(), ok))
            .collect();
        let behaviour = Behaviour {
            broken: reg.as_ref().map(|r| r.broken.clone()).unwrap_or_default(),
            tests_run: reg.as_ref().map_or(0, |r| r.stable),
            repro: change,
            repro_end: rep
                .as_ref()
                .filter(|_| change.is_some_and(|c| c != ReproChange::Same))
                .map(describe),
            model_test,
            written,
            tests_set_aside: aside[i].clone(),
            class: None,
            error: None,
        };
        let sig = behaviour.ran().then(|| {
            Signature::new(reg.as_ref(), rep.filter(|_| change.is_some()))
                .with_model_test(model_test)
                .with_written(passes)
        });
        out.behaviour[i] = Some(behaviour);
        sigs.push(sig);
    }
    // Behaviour classes over the candidates that ran.
    let ran: Vec<usize> = (0..cands.len()).filter(|&i| sigs[i].is_some()).collect();
    let keyed: Vec<(&str, &Signature)> = ran
        .iter()
        .map(|&i| (cands[i].0, sigs[i].as_ref().expect("ran")))
        .collect();
    let classes = behaviour_classes(&keyed);
    out.classes = classes.len();
    out.tests_set_aside = out
        .behaviour
        .iter()
        .flatten()
        .filter(|b| !b.tests_set_aside.is_empty())
        .count();
    for (k, class) in classes.iter().enumerate() {
        for &m in &class.members {
            if let Some(b) = out.behaviour[ran[m]].as_mut() {
                b.class = Some(k);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(exit: Option<i32>, exception: Option<&str>, output: &str) -> ReproOutcome {
        ReproOutcome {
            exit,
            exception: exception.map(str::to_string),
            output: output.into(),
        }
    }

    /// A reproduction run whose statement `n` first raised `e`.
    fn at(n: usize, e: &str) -> ReproOutcome {
        o(
            Some(1),
            Some(e),
            &format!("[dei-repro] statement {n} raised {e}\n[dei-repro] first exception: {e}\n"),
        )
    }

    /// Every statement raising `NameError` is library code quoted, not a reproduction; one
    /// statement that runs, or raises something else, keeps it.
    #[test]
    fn code_whose_every_statement_raises_name_error_is_quoted_library_code() {
        let out = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
        let both = out(&[
            "[dei-repro] statement 1 raised NameError: name 'app' is not defined",
            "[dei-repro] statement 2 raised NameError: name 'app' is not defined",
            "[dei-repro] first exception: NameError",
        ]);
        assert_eq!(
            only_name_errors(&both, 2).as_deref(),
            Some("name 'app' is not defined")
        );
        // A third statement ran.
        assert_eq!(only_name_errors(&both, 3), None);
        let other = out(&[
            "[dei-repro] statement 1 raised NameError: name 'x' is not defined",
            "[dei-repro] statement 2 raised ValueError: bad",
        ]);
        assert_eq!(only_name_errors(&other, 2), None);
        assert_eq!(only_name_errors("", 0), None);
        assert_eq!(only_name_errors("[dei-repro] no exception\n", 1), None);
    }

    /// The reproduction's two base runs: the same → kept whole; printing differently but
    /// ending alike → only how runs end is kept, for this and every later run; ending
    /// differently → not used.
    #[test]
    fn a_reproduction_that_prints_differently_twice_at_base_is_compared_by_how_it_ends() {
        let settle = |first: ReproOutcome, second: ReproOutcome| {
            let mut out = IssueExec {
                reproduction: true,
                ..IssueExec::default()
            };
            let mut seen = Results::default();
            seen.repros.insert(0, second);
            let kept = settle_repro(&mut out, &mut seen, &first);
            (kept, out, seen)
        };
        let (kept, out, seen) = settle(o(Some(0), None, "3\n"), o(Some(0), None, "3\n"));
        assert!(kept && out.reproduction && !out.repro_output_unstable);
        assert_eq!(seen.repros[&0].output, "3\n");

        let (kept, mut out, mut seen) =
            settle(o(Some(0), None, "0.3196\n"), o(Some(0), None, "0.8801\n"));
        assert!(kept && out.reproduction && out.repro_output_unstable);
        assert_eq!(seen.repros[&0].output, "");
        // A candidate's run read afterwards keeps only how it ended.
        let run = Run {
            code: Some(1),
            signal: None,
            timed_out: false,
            seconds: 1.0,
            output: "0.5\n[dei-repro] first exception: ValueError\n".into(),
            missing: Vec::new(),
        };
        absorb(
            &mut out,
            &mut seen,
            &[],
            &(1, What::Repro, 0),
            Ok((run, false)),
        );
        assert_eq!(seen.repros[&1].output, "");
        assert_eq!(seen.repros[&1].exception.as_deref(), Some("ValueError"));
        assert_eq!(
            repro_change(&seen.repros[&0], &seen.repros[&1], ""),
            ReproChange::Broken
        );

        let (kept, out, seen) = settle(o(Some(0), None, "ok\n"), o(None, None, "ok\n"));
        assert!(!kept && !out.reproduction);
        assert!(seen.repros.is_empty());
    }

    #[test]
    fn a_setup_commit_the_repository_lacks_is_replaced_by_the_base_commit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let head = repo
            .commit(None, &sig, &sig, "base", &tree, &[])
            .unwrap()
            .to_string();
        let missing = "d5843f89d3c008ddcb431adbc335b080a79e617e";
        // The spec's commit is there: it is used, nothing said.
        assert_eq!(build_commit(Some(&head), "0123", dir.path()), None);
        assert_eq!(build_commit(None, &head, dir.path()), None);
        // It is not: the base commit stands in, and the note says which and why.
        let (at, why) = build_commit(Some(missing), &head, dir.path()).unwrap();
        assert_eq!(at, head.as_str());
        assert!(
            why.contains(&head[..12]) && why.contains("d5843f89d3c0"),
            "{why}"
        );
        assert!(why.contains(&dir.path().display().to_string()), "{why}");
    }

    #[test]
    fn a_run_without_test_results_says_how_it_ended_and_its_last_line() {
        let run = |code, timed_out, output: &str| Run {
            code,
            signal: None,
            timed_out,
            seconds: 1.0,
            output: output.into(),
            missing: Vec::new(),
        };
        let e = how_it_ended(&run(
            Some(1),
            false,
            "\n/usr/bin/python3: No module named pytest\n\n",
        ));
        assert_eq!(
            e,
            "exited with status 1: /usr/bin/python3: No module named pytest"
        );
        assert_eq!(
            how_it_ended(&run(None, true, "collecting\n[dei: killed after 8s]\n")),
            "hit the time limit: collecting"
        );
        assert_eq!(
            how_it_ended(&run(Some(0), false, "  \n")),
            "exited with status 0 and printed nothing"
        );
        let long = how_it_ended(&run(Some(2), false, &"x".repeat(500)));
        assert_eq!(long.chars().count(), "exited with status 2: ".len() + 161);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn only_a_tree_that_cannot_import_asks_for_an_environment_at_the_base_commit() {
        let unread =
            |end: &str| format!("no test result could be read from the base runs; t.py {end}");
        assert!(import_failure(&unread(
            "exited with status 1: ImportError: cannot import name 'console_main' from 'pytest'"
        )));
        assert!(import_failure(&unread(
            "exited with status 1: ModuleNotFoundError: No module named 'wcwidth'"
        )));
        assert!(import_failure(&unread(
            "exited with status 1: /venv/bin/python3: No module named pytest"
        )));
        // A runner that runs and prints nothing readable is the command's fault, not the tree's.
        assert!(!import_failure(&unread(
            "exited with status 0: congratulations :)"
        )));
        assert!(!import_failure(&unread("hit the time limit: collecting")));
    }

    #[test]
    fn live_status_counts_fresh_and_cached_runs() {
        let s = ExecSettings::new(
            Arc::new(crate::exec::sandbox::LocalBackend::default()),
            PathBuf::new(),
            PathBuf::new(),
        );
        assert_eq!(
            s.live_status(),
            "sandbox: 0 running, 0 runs done (0 cached)"
        );
        s.count(true, 0.0);
        s.count(false, 2.0);
        s.count(false, 4.0);
        let _slot = s.slot();
        assert_eq!(
            s.live_status(),
            "sandbox: 1 running, 3 runs done (1 cached), 3.0 s per run"
        );
    }

    #[test]
    fn test_files_pack_by_key_within_the_budget() {
        // Files 0, 1 and 3 share a key; 2 has another (run whole, where 0/1/3 are narrowed).
        let files = [
            (0, 10.0, 0),
            (1, 15.0, 0),
            (2, 5.0, 1),
            (3, 40.0, 0),
            (4, 70.0, 0),
        ];
        // 0+1 fit in 30 s; 3 would pass it, so it starts a batch; 4 is over on its own.
        assert_eq!(
            pack(&files, 30.0),
            vec![vec![0, 1], vec![2], vec![3], vec![4]]
        );
        assert_eq!(pack(&files, 100.0), vec![vec![0, 1, 3], vec![2], vec![4]]);
        assert!(pack(&[], 10.0).is_empty());
    }

    #[test]
    fn a_reproduction_that_stops_on_a_missing_package_is_not_used() {
        let names = RepoNames {
            modules: ["sympy".to_string()].into_iter().collect(),
            ..RepoNames::default()
        };
        let numpy = o(
            Some(1),
            Some("ModuleNotFoundError"),
            "ModuleNotFoundError: No module named 'numpy'",
        );
        assert_eq!(
            missing_package(&numpy, &names).as_deref(),
            Some("it cannot import `numpy`, which is not part of the repository nor installed")
        );
        // The repository's own module missing is what the issue may be about.
        let own = o(
            Some(1),
            Some("ModuleNotFoundError"),
            "ModuleNotFoundError: No module named 'sympy.foo'",
        );
        assert_eq!(missing_package(&own, &names), None);
        let other = o(
            Some(1),
            Some("TypeError"),
            "TypeError: No module named 'numpy'",
        );
        assert_eq!(missing_package(&other, &names), None);
        // sympy-21612: the repository says an optional package is missing.
        let antlr = o(
            Some(1),
            Some("ImportError"),
            "[dei-repro] statement 2 raised ImportError: LaTeX parsing requires the antlr4 python package, provided by pip (antlr4-python3-runtime) or conda (antlr-python-runtime)\n[dei-repro] first exception: ImportError\n",
        );
        assert!(missing_package(&antlr, &names)
            .is_some_and(|w| w.contains("lacks a package") && w.contains("LaTeX parsing")));
        let install = o(
            Some(1),
            Some("ImportError"),
            "ImportError: matplotlib is required for plotting; please install it\n",
        );
        assert!(missing_package(&install, &names).is_some());
        // The repository's own import failing (a circular import) is what an issue may be about.
        let circular = o(
            Some(1),
            Some("ImportError"),
            "ImportError: cannot import name 'Basic' from partially initialized module 'sympy.core.basic'\n",
        );
        assert_eq!(missing_package(&circular, &names), None);
    }

    #[test]
    fn an_import_of_the_issues_own_code_is_told_from_the_trees() {
        let code = "try:\n    import os, numpy as np\nexcept Exception:\n    pass\nfrom scipy.linalg import norm\nimport numpyx\n";
        assert!(imports_module(code, "numpy"));
        assert!(imports_module(code, "scipy"));
        assert!(imports_module(code, "os"));
        // A longer name, a name in a string, a name imported from: not an import of it.
        assert!(!imports_module(code, "numpyx2"));
        assert!(!imports_module("x = 'import wcwidth'\n", "wcwidth"));
        assert!(!imports_module("from pytest import wcwidth\n", "wcwidth"));
        assert!(!imports_module(code, "wcwidth"));
    }

    #[test]
    fn only_a_known_package_a_run_stopped_on_is_one_to_install() {
        let names = RepoNames {
            modules: ["sympy".to_string()].into_iter().collect(),
            ..RepoNames::default()
        };
        let dist = |exception: &str, output: &str| {
            missing_extra(&o(Some(1), Some(exception), output), &names).map(|e| e.dist)
        };
        assert_eq!(
            dist(
                "ModuleNotFoundError",
                "ModuleNotFoundError: No module named 'numpy.linalg'"
            ),
            Some("numpy")
        );
        assert_eq!(
            dist(
                "ImportError",
                "[dei-repro] statement 2 raised ImportError: LaTeX parsing requires the antlr4 python package, provided by pip (antlr4-python3-runtime)\n"
            ),
            Some("antlr4-python3-runtime")
        );
        // A package dei does not know (pytest-7220's `nox`), a module of the repository's own,
        // and an import error that is not a missing package: nothing to install.
        assert_eq!(dist("ModuleNotFoundError", "No module named 'nox'"), None);
        assert_eq!(
            dist("ModuleNotFoundError", "No module named 'sympy.numpy'"),
            None
        );
        assert_eq!(dist("TypeError", "No module named 'numpy'"), None);
        assert_eq!(
            dist(
                "ImportError",
                "ImportError: cannot import name 'array' from 'numpy'"
            ),
            None
        );
    }

    #[test]
    fn a_new_failure_is_broken_not_changed() {
        let ran = o(Some(0), None, "3\n");
        assert_eq!(repro_change(&ran, &ran.clone(), ""), ReproChange::Same);
        assert_eq!(
            repro_change(&ran, &o(Some(0), None, "2\n"), ""),
            ReproChange::Changed
        );
        // The candidate's module does not import any more, or it hangs: broken.
        assert_eq!(
            repro_change(&ran, &o(Some(1), Some("ImportError"), ""), ""),
            ReproChange::Broken
        );
        assert_eq!(
            repro_change(&ran, &o(None, None, ""), ""),
            ReproChange::Broken
        );
        // The issue's own exception goes away, or turns into another where no statement is
        // reported (a traceback ends the script): changed.
        let raised = o(Some(1), Some("TypeError"), "");
        assert_eq!(repro_change(&raised, &ran, ""), ReproChange::Changed);
        assert_eq!(
            repro_change(&raised, &o(Some(1), Some("ValueError"), ""), ""),
            ReproChange::Changed
        );
    }

    #[test]
    fn another_exception_at_the_same_statement_still_fails() {
        let base = at(6, "GeometryError");
        let issue = "Adding `2.0 * Point(1, 1)` raises GeometryError.";
        assert_eq!(
            repro_change(&base, &at(6, "AttributeError"), issue),
            ReproChange::StillFails
        );
        // The reported statement passes now, and a later one stops: a change.
        assert_eq!(
            repro_change(&base, &at(7, "NameError"), issue),
            ReproChange::Changed
        );
        // The issue asks for the new exception: a change.
        let asks = "This should raise a ValueError, not a GeometryError.";
        assert_eq!(
            repro_change(&base, &at(6, "ValueError"), asks),
            ReproChange::Changed
        );
        // A word that only contains the name does not name it.
        assert_eq!(
            repro_change(&base, &at(6, "ValueError"), "see MyValueErrors"),
            ReproChange::StillFails
        );
        // The same exception at the same statement, reworded: the same.
        assert_eq!(repro_change(&base, &base.clone(), issue), ReproChange::Same);
    }

    #[test]
    fn kept_model_tests_are_counted_over_the_samples() {
        let rec = |status| ModelTestRecord {
            status,
            ..ModelTestRecord::default()
        };
        let mut e = IssueExec::default();
        assert_eq!(e.model_tests_kept(), 0);
        e.model_test = Some(rec(TestStatus::Kept));
        assert_eq!(e.model_tests_kept(), 1);
        e.model_test = Some(rec(TestStatus::Discarded));
        assert_eq!(e.model_tests_kept(), 0);
        e.model_test = Some(rec(TestStatus::Kept));
        e.model_test_samples = vec![
            rec(TestStatus::Kept),
            rec(TestStatus::Discarded),
            rec(TestStatus::Kept),
            rec(TestStatus::NotWritten),
        ];
        assert_eq!(e.model_tests_kept(), 2);
    }

    #[test]
    fn a_run_is_described_with_the_statement_that_raised() {
        assert_eq!(
            describe(&at(5, "NameError")),
            "raises NameError at statement 5"
        );
        // A traceback the script does not wrap names no statement.
        assert_eq!(
            describe(&o(
                Some(1),
                Some("ValueError"),
                "Traceback ...\nValueError: x\n"
            )),
            "raises ValueError"
        );
        assert_eq!(describe(&o(Some(0), None, "3\n")), "runs without error");
        assert_eq!(describe(&o(Some(2), None, "")), "exits with status 2");
        assert_eq!(describe(&o(None, None, "")), "is killed (time limit)");
    }

    #[test]
    fn a_first_failure_before_the_reported_one_is_broken() {
        let base = at(8, "ValueError");
        let issue = "`Add(expr, 1)` raises ValueError: Dimension of exp(second/(farad*ohm)) ...";
        // Statement 6 ran at the base commit; with the candidate it raises.
        assert_eq!(
            repro_change(&base, &at(6, "AssertionError"), issue),
            ReproChange::Broken
        );
        assert_eq!(
            repro_change(&base, &at(1, "SyntaxError"), issue),
            ReproChange::Broken
        );
        // The same exception, raised earlier: broken too, even where the issue names it (it
        // reports that exception).
        assert_eq!(
            repro_change(&base, &at(3, "ValueError"), issue),
            ReproChange::Broken
        );
        // The issue asks for the exception the earlier statement now raises: a change.
        let asks = "`Unit(-1)` should raise a TypeError instead of passing silently.";
        assert_eq!(
            repro_change(&base, &at(6, "TypeError"), asks),
            ReproChange::Changed
        );
    }
}
