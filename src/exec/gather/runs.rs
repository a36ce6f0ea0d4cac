//! The sandbox runs of one issue: each cached on disk by what determines it, run in parallel,
//! and read into the issue's results.

use super::reading::repro_outcome;
use super::{ExecSettings, IssueExec, LOAD_ALLOWANCE};
use crate::exec::llm_repro;
use crate::exec::outcome::{parse_test_output, ReproOutcome, TestRun};
use crate::exec::sandbox::{relative_to_tree, Job, Limits, Outcome, Snapshot, Tree, TreeFile};
use crate::model::ModelTest;
use serde::{Deserialize, Serialize};
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::Path;

/// One run as cached: enough to re-read it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Run {
    pub(super) code: Option<i32>,
    pub(super) signal: Option<i32>,
    pub(super) timed_out: bool,
    pub(super) seconds: f64,
    /// CPU seconds (see [`Outcome::cpu_seconds`]); absent in a cached run that does not keep them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) cpu_seconds: Option<f64>,
    /// Seconds its processes waited for a CPU (see [`Outcome::waited_seconds`]); absent in a
    /// cached run that does not keep them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) waited_seconds: Option<f64>,
    pub(super) output: String,
    /// What the sandbox could not enforce.
    #[serde(default)]
    pub(super) missing: Vec<String>,
}

impl Run {
    /// The seconds the time gates read: what the run would take alone. Its wall time less the
    /// time its processes waited for a CPU, the clock the sandbox's limit is kept by, and at
    /// least its CPU time. On an idle machine a test run's CPU time is about its wall time; on a
    /// loaded one the wall time grows and the CPU time does not, so which tests run does not
    /// move with the machine's load, while a run that sleeps or waits for its disk counts that
    /// time as it would alone. A cached run that does not record its wait reads its CPU time,
    /// but at least its wall time over [`LOAD_ALLOWANCE`]; one that records no CPU time either
    /// reads its wall time.
    pub(super) fn work_seconds(&self) -> f64 {
        match (self.cpu_seconds, self.waited_seconds) {
            (Some(cpu), Some(waited)) => cpu.max(self.seconds - waited),
            (Some(cpu), None) => cpu.max(self.seconds / LOAD_ALLOWANCE),
            (None, _) => self.seconds,
        }
    }
}

/// The limits of one run: its wall time, and (for a try cut short by CPU time rather than by
/// the clock) a CPU time per process below the settings' own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Budget {
    pub(super) wall: std::time::Duration,
    pub(super) cpu: Option<u64>,
}

impl Budget {
    /// Only a wall-clock limit (the settings' CPU limit stands).
    pub(super) fn wall(wall: std::time::Duration) -> Budget {
        Budget { wall, cpu: None }
    }

    /// A try that may use `seconds` of CPU time: its wall time is [`LOAD_ALLOWANCE`] times
    /// that, within `full`, so a loaded machine does not cut it short.
    pub(super) fn cpu(seconds: f64, full: std::time::Duration) -> Budget {
        let cpu = seconds.ceil().max(1.0);
        Budget {
            wall: std::time::Duration::from_secs_f64(cpu * LOAD_ALLOWANCE).min(full),
            cpu: Some(cpu as u64),
        }
    }
}

impl From<&Outcome> for Run {
    fn from(o: &Outcome) -> Run {
        Run {
            code: o.code,
            signal: o.signal,
            timed_out: o.timed_out,
            seconds: o.seconds,
            cpu_seconds: o.cpu_seconds,
            waited_seconds: o.waited_seconds,
            output: o.output.clone(),
            missing: o.isolation.missing.clone(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn tree_key(files: &[TreeFile]) -> String {
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

pub(super) struct Runner<'a> {
    pub(super) settings: &'a ExecSettings,
    pub(super) repo: &'a Path,
    pub(super) commit: &'a str,
    /// The instance, for a container backend's image template.
    pub(super) instance_id: &'a str,
    pub(super) env_key: String,
    pub(super) env_vars: Vec<(String, String)>,
    /// The image the environment was built into, which every run of it runs in.
    pub(super) image: Option<String>,
    /// Every run gets its namespace's loopback up: the tests talk to a server on 127.0.0.1
    /// ([`crate::exec::env::Env::loopback`]).
    pub(super) loopback: bool,
    pub(super) generated: Vec<TreeFile>,
    /// The base tree written once with its bytecode compiled, made at the first run that is
    /// not in the cache (`None` inside: it could not be written; runs write their trees).
    pub(super) snapshot: std::sync::OnceLock<Option<Snapshot>>,
}

/// Compile `targets` (`.`, or `-- FILE…`) into hash-checked bytecode (`__pycache__/*.pyc`,
/// valid for a source only while its contents are the same), saying nothing. Python before 3.7
/// has no such bytecode: the command fails, and nothing is compiled.
fn compile(targets: &str) -> String {
    format!("python -m compileall -q --invalidation-mode checked-hash {targets} >/dev/null 2>&1")
}

/// `command`, after compiling the Python files written on top of the tree the same way, so
/// that a file a candidate changes is compiled before the run as the others were, and prints
/// at its import what theirs do (nothing of compiling).
pub(super) fn compiled_first(command: &str, files: &[TreeFile]) -> String {
    let sources: Vec<String> = files
        .iter()
        .filter(|f| f.contents.is_some() && f.path.ends_with(".py"))
        .map(|f| crate::model::repo::shell_quote(&f.path))
        .collect();
    if sources.is_empty() {
        return command.to_string();
    }
    format!(
        "{}; {command}",
        compile(&format!("-- {}", sources.join(" ")))
    )
}

impl Runner<'_> {
    /// The base commit's tree with `files` on top, copied from `snapshot` when given.
    fn tree(&self, files: Vec<TreeFile>, snapshot: Option<std::path::PathBuf>) -> Tree {
        Tree {
            repo: self.repo.to_path_buf(),
            commit: self.commit.to_string(),
            files,
            snapshot,
        }
    }

    /// The run cache's file for a run; `compiled`: over the snapshot, with its bytecode.
    fn cache_path(
        &self,
        files: &[TreeFile],
        command: &str,
        budget: Budget,
        (pass, hash_seed): (u32, Option<u32>),
        compiled: bool,
    ) -> std::path::PathBuf {
        let mut h = sha2::Sha256::new();
        // A CPU limit of its own, bytecode written over the tree and a pinned hash seed each
        // add to the key; a run with none of them is keyed on its wall limit and pass alone.
        let mut limits = match budget.cpu {
            Some(cpu) => format!("{}:{pass}:cpu{cpu}", budget.wall.as_secs()),
            None => format!("{}:{pass}", budget.wall.as_secs()),
        };
        if compiled {
            limits.push_str(":pyc");
        }
        if let Some(seed) = hash_seed {
            limits.push_str(&format!(":hash{seed}"));
        }
        for part in [
            self.env_key.as_str(),
            self.commit,
            &tree_key(files),
            command,
            &limits,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let key = hex(&h.finalize());
        self.settings
            .cache_dir
            .join("runs")
            .join(&key[..2])
            .join(format!("{key}.json"))
    }

    /// The run cached at `path`, counted as such.
    fn cached(&self, path: &Path) -> Option<Run> {
        let bytes = std::fs::read(path).ok()?;
        let run = serde_json::from_slice::<Run>(&bytes).ok()?;
        self.settings.count(true, 0.0);
        Some(run)
    }

    /// The snapshot, made at the first call: the base tree with the generated files, its
    /// Python files compiled in a sandbox run (no network, writes only there).
    fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot
            .get_or_init(|| {
                let tree = self.tree(self.generated.clone(), None);
                let snapshot = self.settings.backend.snapshot(&tree).ok()?;
                // The repository's files, so that the runs over it do not compile them again on
                // every start.
                let job = Job {
                    command: format!("{}; exit 0", compile(".")),
                    env: self.env_vars.clone(),
                    limits: self.settings.limits.clone(),
                    instance_id: Some(self.instance_id.to_string()),
                    image: self.image.clone(),
                    ..Job::default()
                };
                let _slot = self.settings.slot();
                // Bytecode that could not be made is made by each run, as without it.
                let _ = self.settings.backend.run_in(snapshot.tree(), &job);
                Some(snapshot)
            })
            .as_ref()
    }

    /// Run `command` over the base tree plus `files` (`pass` tells two base runs apart), from
    /// the cache when it ran before; with `hash_seed`, under that `PYTHONHASHSEED` (see
    /// [`test_hash_seed`]). Returns the run and whether it came from the cache.
    pub(super) fn run(
        &self,
        files: &[TreeFile],
        command: &str,
        budget: Budget,
        (pass, hash_seed): (u32, Option<u32>),
    ) -> anyhow::Result<(Run, bool)> {
        let compiled = self.cache_path(files, command, budget, (pass, hash_seed), true);
        if let Some(run) = self.cached(&compiled) {
            return Ok((run, true));
        }
        let (path, tree, command) = match self.snapshot() {
            Some(snapshot) => (
                compiled,
                self.tree(files.to_vec(), Some(snapshot.tree().to_path_buf())),
                compiled_first(command, files),
            ),
            None => {
                let plain = self.cache_path(files, command, budget, (pass, hash_seed), false);
                if let Some(run) = self.cached(&plain) {
                    return Ok((run, true));
                }
                let mut all = self.generated.clone();
                all.extend(files.iter().cloned());
                (plain, self.tree(all, None), command.to_string())
            }
        };
        let job = Job {
            command,
            env: seeded_env(&self.env_vars, hash_seed),
            loopback: self.loopback,
            limits: Limits {
                timeout: budget.wall,
                cpu_seconds: budget.cpu.map_or(self.settings.limits.cpu_seconds, |c| {
                    c.min(self.settings.limits.cpu_seconds)
                }),
                ..self.settings.limits.clone()
            },
            instance_id: Some(self.instance_id.to_string()),
            image: self.image.clone(),
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

/// The hash seed a run of tests on its `pass` runs under: the pass itself. Python picks a
/// random one per process otherwise (and sympy's `bin/test` one per run), so a test whose
/// outcome hangs on the order of a set or a dict would pass or fail by chance, and a rerun of
/// an unchanged tree could break a test that the first run passed (code that iterates
/// `list(set(args))` can fail a test under about half of all seeds). Pinned, the same
/// trees give the same results. The base's two runs differ in seed, so a test whose outcome
/// hangs on it at base is set aside as flaky, and a candidate's break counts when its second
/// run (the second pass) fails it again: under both seeds.
pub(super) fn test_hash_seed(pass: u32) -> u32 {
    pass
}

/// The environment's variables, with `PYTHONHASHSEED` set to `hash_seed` unless the spec sets
/// its own (which it keeps).
pub(super) fn seeded_env(
    vars: &[(String, String)],
    hash_seed: Option<u32>,
) -> Vec<(String, String)> {
    let mut env = vars.to_vec();
    if let Some(seed) = hash_seed.filter(|_| !vars.iter().any(|(k, _)| k == "PYTHONHASHSEED")) {
        env.push(("PYTHONHASHSEED".into(), seed.to_string()));
    }
    env
}

/// A run, and whether it came from the cache.
pub(super) type RunResult = anyhow::Result<(Run, bool)>;

/// What a sandbox run runs: one test file (by index), a batch of test files (by index into
/// the issue's batches), the reproduction, or the model's test.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum What {
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
pub(super) fn pack(files: &[(usize, f64, u8)], budget: f64) -> Vec<Vec<usize>> {
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
pub(super) struct Results {
    /// (tree, test file, pass) → the tests' results.
    pub(super) tests: BTreeMap<(usize, usize, u32), TestRun>,
    pub(super) repros: BTreeMap<usize, ReproOutcome>,
    /// (tree, sample) → what the model-written test printed.
    pub(super) model: BTreeMap<(usize, usize), ModelTest>,
    /// (tree, written tests, pass) → their results.
    pub(super) written: BTreeMap<(usize, usize, u32), TestRun>,
    /// Test file → how its latest base run ended, when it printed no result dei could read.
    pub(super) unread: BTreeMap<usize, String>,
}

/// Run `jobs` on `threads` plain threads (not rayon: a rayon worker waiting on another pool
/// steals other issues' work, which would start more sandboxes than asked for).
pub(super) fn run_all(
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
pub(super) fn absorb(
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
        out.cpu_seconds += run.cpu_seconds.unwrap_or(0.0);
        out.waited_seconds += run.waited_seconds.unwrap_or(0.0);
        if run.timed_out {
            out.timed_out_seconds += run.seconds;
            out.timed_out_cpu_seconds += run.cpu_seconds.unwrap_or(0.0);
        }
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
    Some((what, run.work_seconds()))
}

/// How a run that printed no test result ended: its exit status (or the time limit, or a
/// signal) and its last line of output, paths in the sandbox's tree relative to it, cut to a
/// readable length.
pub(super) fn how_it_ended(run: &Run) -> String {
    let status = if run.timed_out {
        "hit the time limit".to_string()
    } else {
        match (run.code, run.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "ended".to_string(),
        }
    };
    let mut lines = run
        .output
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("[dei:"));
    let last = lines.next().map(|l| {
        // unittest ends on its verdict alone (`OK`, `FAILED (errors=1)`); the line before it
        // says how many tests ran, which is what tells a runner that found none (`Ran 0
        // tests`, pytest-style functions under `unittest -v`) from one whose lines dei missed.
        let verdict = l == "OK" || l.starts_with("OK (") || l.starts_with("FAILED (");
        match lines.next() {
            Some(ran) if verdict && ran.starts_with("Ran ") => format!("{ran}, {l}"),
            _ => relative_to_tree(l),
        }
    });
    match last {
        Some(l) if l.chars().count() > 160 => {
            format!("{status}: {}…", l.chars().take(160).collect::<String>())
        }
        Some(l) => format!("{status}: {l}"),
        None => format!("{status} and printed nothing"),
    }
}

/// [`absorb`] base runs, keeping each test file's slowest base run (its
/// [`Run::work_seconds`]) in `base_seconds`.
pub(super) fn absorb_base(
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
pub(super) fn passes_within(
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
