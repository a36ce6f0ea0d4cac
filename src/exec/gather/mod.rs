//! Execution evidence for one issue: build (or reuse) the repository's environment, pick the
//! existing tests the candidates' edits reach, extract the issue's reproduction, run both at
//! the base commit (the tests twice, to drop flaky ones) and once per distinct after-tree, and
//! turn what changed into one [`Behaviour`] per candidate. With a [`TestWriter`]
//! (`--exec-llm-repro`), a model also writes a reproduction test from the issue, kept only when
//! it prints `Issue reproduced` at the base commit, then run with each candidate.
//!
//! Every run goes through a [`Backend`] (sandboxed) and is cached on disk by what determines
//! it (environment, tree, command), so a rerun — or a run resumed after a kill — redoes nothing.

mod issue;
mod reading;
mod runs;
#[cfg(test)]
mod tests;
mod trees;
mod trim;
use crate::exec::env::{spec_for, EnvSpec, Overrides};
use crate::exec::llm_repro::{ModelTestRecord, TestStatus, TestWriter};
use crate::exec::regress;
use crate::exec::sandbox::{Backend, Limits};
use crate::localize::search::FileIndex;
use crate::model::{Behaviour, PatchView, Task};
use issue::gather_at;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file the reproduction is written to, at the root of the tree.
pub const REPRO_FILE: &str = "dei_reproduction.py";
/// Most test files run per issue (the best-scored of every candidate's selection).
pub const MAX_TEST_FILES: usize = 6;
/// A test file named after an edited module runs whole when it takes at most this share of
/// the time limit at base (a sixth: 30 s of the default 180 s), and narrowed to the tests
/// naming the edit otherwise. The time read is the run's CPU time (see
/// [`runs::Run::work_seconds`]).
const WHOLE_FILE_SHARE: f64 = 6.0;
/// How much slower than its CPU time a run may go on a loaded machine before its wall time
/// counts instead: a try limited by CPU time gets this many times as long on the clock, and a
/// run's gate seconds are at least its wall time over this.
const LOAD_ALLOWANCE: f64 = 3.0;
/// A file over half the time limit at base, which would be left out, loses its slowest tests
/// until its run would take this share of that (pytest's durations of the slowest tests, less
/// from the run's seconds): its second base run is gated again, the slower of the two counting,
/// and a run is a fifth slower than another of the same tests often enough. A file tried whole
/// is not gated again, so it loses tests only down to its gate.
const SLOW_FILE_TRIM: f64 = 0.75;
/// A file named after an edited module is tried whole with this many times its gate of CPU
/// time when its runner can leave tests out: a file up to that slow finishes, so its
/// durations say which tests to leave out (a slower one is narrowed to its tests).
const TRIM_REACH: f64 = 2.0;
/// Output kept of one run (the first and the last half). pytest prints what dei reads last:
/// the durations of the slowest tests, then the `-rA` summary, a line per test. A file of 1,500
/// tests (xarray's `test_dataset.py`) prints about 140 KB of them; with 64 KiB the middle of
/// the summary was lost, and with it those tests' results at base.
const RUN_OUTPUT_BYTES: usize = 512 << 10;
/// How much of the reproduction's code, and of what one run of it printed, the results keep
/// for a reader (and a model's prompt): lines, then characters.
pub const CODE_LINES: usize = 80;
pub const CODE_CHARS: usize = 4_000;
pub const OUTPUT_LINES: usize = 40;
pub const OUTPUT_CHARS: usize = 2_000;

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
    /// Build each environment into a container image instead of a venv on this machine
    /// (`--exec-env-in-image`; the backend must be that engine's).
    pub env_image: Option<Arc<crate::exec::image::ImageBuilder>>,
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
    /// Environments being built (or checked) now, as `repo version`: a first build takes
    /// minutes, and runs nothing a user would otherwise see.
    envs: std::sync::Mutex<Vec<String>>,
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
        if o.loopback {
            s.push_str(", --test-loopback");
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
        let envs = self.counts.envs.lock().unwrap_or_else(|e| e.into_inner());
        if !envs.is_empty() {
            let (one, many) = ("environment", "environments");
            let word = if envs.len() == 1 { one } else { many };
            s.push_str(&format!("; building the {word} of {}", envs.join(", ")));
        }
        s
    }

    /// Say in [`live_status`](Self::live_status) that the environment `name` is being built,
    /// until the guard drops.
    fn building(&self, name: String) -> Building<'_> {
        let mut envs = self.counts.envs.lock().unwrap_or_else(|e| e.into_inner());
        envs.push(name.clone());
        Building(&self.counts, name)
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

/// An environment named in the live status while it is built ([`ExecSettings::building`]).
struct Building<'a>(&'a RunCounts, String);

impl Drop for Building<'_> {
    fn drop(&mut self) {
        let mut envs = self.0.envs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = envs.iter().position(|n| *n == self.1) {
            envs.remove(i);
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
            output_bytes: RUN_OUTPUT_BYTES,
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
            env_image: None,
            running: Arc::default(),
            counts: Arc::default(),
        }
    }
}

/// For `skip_serializing_if`: seconds never counted (cached runs that record no CPU time, or
/// all from the cache) are left out of the JSON.
fn is_nothing(x: &f64) -> bool {
    *x == 0.0
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
    /// The reproduction ran with its randomness pinned ([`repro::pinned`](crate::exec::repro::pinned):
    /// hash seed 0, `random` and NumPy seeded), at base and with every candidate, as every
    /// reproduction with dei's prelude does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repro_pinned: bool,
    /// What the issue says its code should show ([`expected_outputs`](crate::exec::repro::expected_outputs))
    /// that the reproduction's base run does not show, as the outputs are read; each
    /// candidate's [`Behaviour::expected`](crate::model::Behaviour::expected) says how much of
    /// it its run shows. Evidence for the reader and the model; the offline committee does not
    /// weigh it (docs/execution.md, "What the issue expects").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<String>,
    /// The reproduction's code as a reader reads it (the issue's code as extracted, imports
    /// added, without the wrapping that reports each statement; or the agent's script that
    /// stands in for it), clipped ([`CODE_LINES`], [`CODE_CHARS`]); `None` when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_code: Option<String>,
    /// What the reproduction printed at the base commit, as compared (normalized: temporary
    /// paths, addresses and line numbers hidden), clipped ([`OUTPUT_LINES`],
    /// [`OUTPUT_CHARS`]); each candidate whose run differs carries its own
    /// ([`Behaviour::repro_output`]). `None` when none ran, or its output moved between the
    /// two base runs (then only how runs end is compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_output: Option<String>,
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
    /// CPU seconds of the fresh runs (see [`crate::exec::sandbox::Outcome::cpu_seconds`]):
    /// beside `run_seconds`, how busy the machine was.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub cpu_seconds: f64,
    /// Wall and CPU seconds of the fresh runs killed at the time limit, also counted above:
    /// a command that sleeps past its limit is no sign of a busy machine.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub timed_out_seconds: f64,
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub timed_out_cpu_seconds: f64,
    /// Seconds the fresh runs' processes waited for a CPU that others held (see
    /// [`crate::exec::sandbox::Outcome::waited_seconds`]): how busy the machine was, read
    /// directly; 0 where the kernel does not say.
    #[serde(default, skip_serializing_if = "is_nothing")]
    pub waited_seconds: f64,
    /// Test files left out for the candidates: their base run took over half the time limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slow_files: Vec<String>,
    /// Test files named after an edited module that ran whole (not only the tests naming the
    /// edit): quick enough at base, and some test passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub whole_files: Vec<String>,
    /// Test files that ran without their slowest tests: at base the file (whole, or its
    /// selection) took over its time gate, and pytest's durations named the tests whose
    /// seconds bring it within (see `exec::gather::trim`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trimmed_files: Vec<TrimmedFile>,
    /// Test files named after an edited module that ran only their tests naming the edits:
    /// tried whole at base, they took over their time gate (or no test passed), and leaving
    /// out their slowest tests could not bring them within it. What such a file's other tests
    /// would have shown is not seen; a longer `--exec-timeout` raises the gate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub narrowed_files: Vec<NarrowedFile>,
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

/// A test file run without its slowest tests (see [`IssueExec::trimmed_files`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrimmedFile {
    pub file: String,
    /// Whether the rest of the file ran whole (a file named after an edited module), or only
    /// its tests naming the edits.
    pub whole: bool,
    /// The seconds its first base run took, and the gate it was over.
    pub seconds: f64,
    pub gate: f64,
    /// The tests left out, in the order they were given up (slowest first, those naming the
    /// edits last), and their seconds together at base.
    pub left_out: Vec<String>,
    pub left_out_seconds: f64,
}

/// A test file tried whole and narrowed to its tests naming the edits (see
/// [`IssueExec::narrowed_files`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NarrowedFile {
    pub file: String,
    /// The seconds its whole try took at base (its own time, less what it waited for a CPU;
    /// `None` when it was stopped before it ended), and the gate it had to keep within.
    pub seconds: Option<f64>,
    pub gate: f64,
    /// How many tests it was narrowed to.
    pub tests: usize,
}

impl NarrowedFile {
    /// Whether it was narrowed for time: its whole try went over the gate or was stopped
    /// (otherwise no test passed whole).
    pub fn for_time(&self) -> bool {
        self.seconds.is_none_or(|s| s > self.gate)
    }
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

impl IssueExec {
    /// The test files that ran in part or not at all to keep within the time limits, one
    /// phrase each, for a model's prompt: left out as slow, run without their slowest tests,
    /// or tried whole and narrowed for time (not those narrowed because no test passed whole).
    pub fn tests_in_part(&self) -> Vec<String> {
        let tests = |n: usize| if n == 1 { "test" } else { "tests" };
        let slow = self.slow_files.iter().map(|f| {
            format!("{f} did not run (it took over half the time limit at the base commit)")
        });
        let trimmed = self.trimmed_files.iter().map(|t| {
            let n = t.left_out.len();
            format!("{} ran without its {n} slowest {}", t.file, tests(n))
        });
        let narrowed = self
            .narrowed_files
            .iter()
            .filter(|n| n.for_time())
            .map(|n| {
                format!(
                    "{} ran only its {} {} naming the edited code",
                    n.file,
                    n.tests,
                    tests(n.tests)
                )
            });
        slow.chain(trimmed).chain(narrowed).collect()
    }

    /// Every model-written test asked for: each sample, or the one test when a single one was
    /// asked for (`model_test` is then the only record; with samples it copies one of them).
    pub fn model_test_records(&self) -> impl Iterator<Item = &ModelTestRecord> {
        let single = self
            .model_test
            .iter()
            .filter(|_| self.model_test_samples.is_empty());
        self.model_test_samples.iter().chain(single)
    }

    /// How many model-written tests were kept: each kept sample, or the one test when a
    /// single one was asked for.
    pub fn model_tests_kept(&self) -> usize {
        self.model_test_records()
            .filter(|m| m.status == TestStatus::Kept)
            .count()
    }
}

/// Gather execution evidence for the candidates of one issue. `repo` is the git repository
/// holding `task.base_commit`; `cands` are (agent, the candidate rebuilt against it), in order.
///
/// The environment is built at the spec's setup commit, shared by the tasks of its version;
/// SWE-bench installs each task's base commit instead. Where the two differ in what the tree
/// imports (a dependency the base commit's `setup.py` requires and the setup commit's does
/// not), no base test run can import the tree, or the issue's code stops on a module the tree
/// imports: the environment is then built again at the task's base commit, and the evidence
/// gathered with it. With [`ExecSettings::install_extras`], a well-known package the issue's
/// code stops on is installed and the issue gathered again.
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
    to.cpu_seconds += earlier.cpu_seconds;
    to.timed_out_seconds += earlier.timed_out_seconds;
    to.timed_out_cpu_seconds += earlier.timed_out_cpu_seconds;
    to.waited_seconds += earlier.waited_seconds;
    // A try that showed the model the issue's code as it ran asked again when the code did
    // otherwise in the next one: each sample's record counts its calls over every try.
    for rec in to
        .model_test
        .iter_mut()
        .chain(to.model_test_samples.iter_mut())
    {
        let before = earlier
            .model_test_records()
            .find(|m| m.sample == rec.sample);
        if let Some(m) = before {
            rec.usage.add(&m.usage);
        }
    }
}

/// [`gather`] in the environment `resolved` names: built at its spec's setup commit, and
/// again at the task's base commit when no base test run could import the tree, or the
/// issue's code stopped on a module the tree imports.
fn gather_in(resolved: &Resolved) -> IssueExec {
    let Resolved { task, spec, .. } = resolved;
    let first = gather_at(resolved, false);
    // What the setup commit's environment lacks that the base commit's tree needs: no test
    // could import the tree, or the issue's code stopped on a module the tree imports (not the
    // issue's own import, nor a package dei installs for it), such as a dependency that the
    // base commit's `setup.py` requires and the setup commit's does not.
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
