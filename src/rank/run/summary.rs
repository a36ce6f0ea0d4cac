//! The result of a whole run (or of several shards merged): one row per issue and totals.

use super::journal::{self, Manifest};
use super::{ErrorKind, IssueOutcome};
use crate::exec::gather::{is_zero, IssueExec};
use crate::rank::health::Basis;
use serde::{Deserialize as _, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One issue of the summary.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub instance_id: String,
    pub repo: String,
    /// `ok`, or the error kind.
    pub status: String,
    pub candidates: usize,
    pub top: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_resolved: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub any_resolved: Option<bool>,
    pub candidate_errors: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the pick rests on (`--exec`; `rank::health::Basis`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pick_basis: Option<Basis>,
}

/// Totals over every issue of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Issues the run was asked for.
    pub selected: usize,
    /// Issues with an outcome (ranked or error).
    pub finished: usize,
    pub ranked: usize,
    /// Issues a dry run only showed the prompts of (`--dry-run`): not finished, not kept.
    #[serde(skip_serializing_if = "is_zero")]
    pub dry_run: usize,
    /// Error outcomes by kind (`missing_repo`, `unknown_issue`, ...).
    pub errors: BTreeMap<String, usize>,
    /// Repositories that were missing, with how many issues each.
    pub missing_repos: BTreeMap<String, usize>,
    /// Candidates over all finished issues; and those over ranked issues.
    pub candidates: usize,
    pub candidates_ranked: usize,
    pub candidate_errors: usize,
    /// Input problems not tied to one issue (malformed lines, unreadable files).
    pub input_problems: usize,
    /// Ranked issues whose candidates carry `resolved` labels.
    pub labelled: usize,
    /// Expected number of labelled issues the top pick resolves (ties count `c/t`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top1_resolved: Option<f64>,
    /// Labelled issues where some candidate resolves it (the best any picker could do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oracle: Option<usize>,
    /// Sum of per-issue wall times (ms), as measured inside each issue.
    pub issue_ms: u64,
    /// What `--exec` gathered, over the ranked issues (`None` without `--exec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecCounts>,
    pub rows: Vec<Row>,
}

/// How many ranked issues had each kind of execution evidence (`--exec`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ExecCounts {
    pub issues: usize,
    /// The environment was built (or came from the cache).
    pub environment: usize,
    /// Some test passed twice at the base commit.
    pub tests: usize,
    /// The issue's reproduction ran.
    pub reproduction: usize,
    /// Some base test passed once and failed once.
    pub flaky: usize,
    /// The candidates fell into two or more behaviour classes.
    pub split: usize,
    /// Candidates whose edits to the repository's tests were set aside (their tests ran as at
    /// the base commit).
    #[serde(skip_serializing_if = "is_zero")]
    pub tests_set_aside: usize,
    /// A model was asked for a reproduction test (`--exec-llm-repro`), and it was kept (it
    /// prints `Issue reproduced` at the base commit).
    #[serde(skip_serializing_if = "is_zero")]
    pub model_tests: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub model_tests_kept: usize,
    /// Of those, the issues whose prompt showed the issue's own code as it ran at the base
    /// commit, and how many of them kept their test: keep rates with and without it.
    #[serde(skip_serializing_if = "is_zero")]
    pub model_tests_shown: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub model_tests_shown_kept: usize,
    /// Sandbox runs, those from the cache, and seconds spent in the others (on the clock and
    /// on the CPU).
    pub runs: usize,
    pub cached_runs: usize,
    pub run_seconds: f64,
    #[serde(default)]
    pub cpu_seconds: f64,
    /// Of those, the runs killed at the time limit (left out of the busy-machine reading).
    #[serde(default)]
    pub timed_out_seconds: f64,
    #[serde(default)]
    pub timed_out_cpu_seconds: f64,
    /// Of the fresh runs' time on the clock, what their processes spent waiting for a CPU.
    #[serde(default)]
    pub waited_seconds: f64,
    /// Picks by what they rest on (`rank::health::Basis`), over the issues with a pick.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pick_basis: BTreeMap<Basis, usize>,
    /// Why nothing ran (the first line of `exec.error`: no spec, a build step that failed) →
    /// the issues it hit, in run order.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, Vec<String>>,
}

impl ExecCounts {
    fn add(&mut self, id: &str, e: &IssueExec) {
        self.issues += 1;
        if let Some(why) = &e.error {
            let first = why.lines().next().unwrap_or_default().to_string();
            self.failures.entry(first).or_default().push(id.to_string());
        }
        self.environment += usize::from(e.error.is_none());
        self.tests += usize::from(e.stable_tests > 0);
        self.reproduction += usize::from(e.reproduction);
        self.flaky += usize::from(!e.flaky_tests.is_empty());
        self.split += usize::from(e.classes >= 2);
        self.tests_set_aside += e.tests_set_aside;
        if let Some(m) = &e.model_test {
            let kept = usize::from(m.status == crate::exec::llm_repro::TestStatus::Kept);
            self.model_tests += 1;
            self.model_tests_kept += kept;
            if m.shown_reproduction {
                self.model_tests_shown += 1;
                self.model_tests_shown_kept += kept;
            }
        }
        self.runs += e.runs;
        self.cached_runs += e.cached_runs;
        self.run_seconds += e.run_seconds;
        self.cpu_seconds += e.cpu_seconds;
        self.timed_out_seconds += e.timed_out_seconds;
        self.timed_out_cpu_seconds += e.timed_out_cpu_seconds;
        self.waited_seconds += e.waited_seconds;
    }
}

/// The fresh runs' CPU time beside their wall time, when kept, and whether the machine was
/// busy. Where the runs' wait for a CPU was kept, that says it: over a quarter of their time
/// on the clock spent waiting. Runs that do not keep it read wall time well over CPU time
/// instead, leaving out the runs killed at the time limit (a command that sleeps past its
/// limit uses no CPU time on an idle machine); that reading also counts a run that sleeps or
/// waits for its disk as busy, which the wait does not.
fn cpu_time(e: &ExecCounts) -> String {
    let (wall, cpu) = (e.run_seconds, e.cpu_seconds);
    if cpu <= 0.0 {
        return String::new();
    }
    let (ended_wall, ended_cpu) = (wall - e.timed_out_seconds, cpu - e.timed_out_cpu_seconds);
    let busy = if e.waited_seconds > 0.0 {
        if e.waited_seconds > 0.25 * wall {
            format!(
                "; the machine was busy: the runs waited {:.0} s of it for a CPU others held (other work, or more --exec-jobs than CPUs)",
                e.waited_seconds
            )
        } else {
            String::new()
        }
    } else if ended_cpu > 0.0 && ended_wall > 1.5 * ended_cpu {
        format!(
            "; the machine was busy: {:.1}× the CPU time on the clock",
            ended_wall / ended_cpu
        )
    } else {
        String::new()
    };
    format!(", {cpu:.0} s of CPU time{busy}")
}

fn kind_name(k: ErrorKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Summary {
    pub fn new(outcomes: &[IssueOutcome], selected: usize, input_problems: usize) -> Summary {
        let mut s = Summary {
            selected,
            finished: outcomes.iter().filter(|o| !o.is_dry_run()).count(),
            ranked: 0,
            dry_run: 0,
            errors: BTreeMap::new(),
            missing_repos: BTreeMap::new(),
            candidates: 0,
            candidates_ranked: 0,
            candidate_errors: 0,
            input_problems,
            labelled: 0,
            top1_resolved: None,
            oracle: None,
            issue_ms: 0,
            exec: None,
            rows: Vec::with_capacity(outcomes.len()),
        };
        let (mut credit, mut oracle) = (0.0, 0usize);
        for o in outcomes {
            let basis: Option<Basis> = o
                .result
                .as_ref()
                .and_then(|r| r.get("pick_basis"))
                .and_then(|b| Basis::deserialize(b).ok());
            s.candidates += o.candidates;
            s.issue_ms += o.elapsed_ms;
            match o.error_kind {
                None if o.is_dry_run() => s.dry_run += 1,
                None => {
                    s.ranked += 1;
                    s.candidates_ranked += o.candidates;
                    let exec = o.result.as_ref().and_then(|r| r.get("exec"));
                    if let Some(e) = exec.and_then(|e| IssueExec::deserialize(e).ok()) {
                        let counts = s.exec.get_or_insert_with(ExecCounts::default);
                        counts.add(&o.instance_id, &e);
                        if let Some(b) = basis {
                            *counts.pick_basis.entry(b).or_default() += 1;
                        }
                    }
                    s.candidate_errors += o.candidate_errors.len();
                    if let Some(c) = o.top_resolved {
                        s.labelled += 1;
                        credit += c;
                        oracle += usize::from(o.any_resolved == Some(true));
                    }
                }
                Some(k) => {
                    *s.errors.entry(kind_name(k)).or_default() += 1;
                    if k == ErrorKind::MissingRepo {
                        *s.missing_repos.entry(o.repo.clone()).or_default() += 1;
                    }
                }
            }
            s.rows.push(Row {
                instance_id: o.instance_id.clone(),
                repo: o.repo.clone(),
                status: match o.error_kind {
                    Some(k) => kind_name(k),
                    None if o.is_dry_run() => "dry_run".to_string(),
                    None => "ok".to_string(),
                },
                candidates: o.candidates,
                top: o.top.clone(),
                top_score: o.top_score,
                top_resolved: o.top_resolved,
                any_resolved: o.any_resolved,
                candidate_errors: o.candidate_errors.len(),
                error: o.error.clone(),
                pick_basis: basis,
            });
        }
        if s.labelled > 0 {
            s.top1_resolved = Some(credit);
            s.oracle = Some(oracle);
        }
        s
    }

    /// The human-readable summary: one line per ranked or unreviewed issue (at most
    /// `max_rows`), the other errors grouped by kind and repository, then totals.
    pub fn table(&self, max_rows: usize) -> String {
        let mut out = String::new();
        let shown: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| r.status == "ok" || r.status == ErrorKind::Unreviewed.label())
            .collect();
        // With --exec, what each pick rests on gets a column.
        let with_basis = shown.iter().any(|r| r.pick_basis.is_some());
        let basis_cell = |word: &str| {
            if with_basis {
                format!("{word:<10}  ")
            } else {
                String::new()
            }
        };
        if !shown.is_empty() {
            out.push_str(&format!(
                "{:<36}  {:<10}  {:>5}  {:>5}  {:>8}  {}top pick\n",
                "issue",
                "status",
                "cands",
                "score",
                "resolved",
                basis_cell("rests on")
            ));
        }
        for r in shown.iter().take(max_rows) {
            let top = match r.top.len() {
                0 => r.error.clone().unwrap_or_default(),
                1 => r.top[0].clone(),
                n => format!("{} (+{} tied)", r.top[0], n - 1),
            };
            out.push_str(&format!(
                "{:<36}  {:<10}  {:>5}  {:>5}  {:>8}  {}{}\n",
                r.instance_id,
                r.status,
                r.candidates,
                r.top_score.map_or("-".into(), |s| format!("{s:.2}")),
                r.top_resolved.map_or("-".into(), |c| format!("{c:.2}")),
                basis_cell(r.pick_basis.map_or("-", Basis::word)),
                truncate(&top, 70)
            ));
        }
        if shown.len() > max_rows {
            out.push_str(&format!(
                "… and {} more issues (see summary.json)\n",
                shown.len() - max_rows
            ));
        }
        let groups = self.error_groups();
        if !groups.is_empty() {
            if !shown.is_empty() {
                out.push('\n');
            }
            out.push_str("not ranked:\n");
            for g in &groups {
                out.push_str(&format!("  {g}\n"));
            }
        }
        out.push('\n');
        out.push_str(&format!(
            "{} of {} issues finished: {} ranked, {} not ranked; {} candidates ranked, {} candidate errors, {} input problems\n",
            self.finished,
            self.selected,
            self.ranked,
            self.errors.values().sum::<usize>(),
            self.candidates_ranked,
            self.candidate_errors,
            self.input_problems
        ));
        if self.dry_run > 0 {
            out.push_str(&format!(
                "{} issue(s) dry run: prompts shown, nothing reviewed or kept in the journal (the same command without --dry-run ranks them)\n",
                self.dry_run
            ));
        }
        if let Some(n) = self.errors.get(ErrorKind::Unreviewed.label()) {
            out.push_str(&format!(
                "{n} issue(s) not reviewed: the committee could not score their candidates, so nothing was picked (rerun with --retry-errors)\n"
            ));
        }
        if let Some(e) = &self.exec {
            out.push_str(&format!(
                "execution (--exec), of {} ranked issues: an environment for {}, tests that pass at the base commit for {} (flaky base tests in {}), a reproduction for {}, candidates told apart by behaviour in {}; {} sandbox runs ({} from the cache, {:.0} s in the others{})\n",
                e.issues, e.environment, e.tests, e.flaky, e.reproduction, e.split, e.runs, e.cached_runs, e.run_seconds,
                cpu_time(e)
            ));
            if !e.pick_basis.is_empty() {
                let parts: Vec<String> = e
                    .pick_basis
                    .iter()
                    .map(|(b, n)| format!("{} {n}", b.word()))
                    .collect();
                out.push_str(&format!(
                    "  what the picks rest on: {} (dei rank's `pick rests on` line says what each means)\n",
                    parts.join(", ")
                ));
            }
            if e.tests_set_aside > 0 {
                out.push_str(&format!(
                    "  {}: those edits were set aside, and the tests ran as at the base commit\n",
                    crate::rank::report::edit_the_tests(e.tests_set_aside)
                ));
            }
            // Most issues first; a few ids each, so a long run's summary stays readable.
            let mut failures: Vec<(&String, &Vec<String>)> = e.failures.iter().collect();
            failures.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
            for (why, ids) in failures.iter().take(8) {
                out.push_str(&format!(
                    "  no execution evidence for {} issue{} ({}{}): {why}\n",
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" },
                    ids.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                    if ids.len() > 3 { ", …" } else { "" }
                ));
            }
            if failures.len() > 8 {
                out.push_str(&format!(
                    "  and {} more reasons (the JSON summary's exec.failures lists them all)\n",
                    failures.len() - 8
                ));
            }
            if e.model_tests > 0 {
                out.push_str(&format!(
                    "model-written reproduction tests (--exec-llm-repro): asked for {} issues, kept (failing at the base commit) for {}\n",
                    e.model_tests, e.model_tests_kept
                ));
                if e.model_tests_shown > 0 {
                    out.push_str(&format!(
                        "  shown the issue's code as it ran at the base commit: {} of them, kept for {}\n",
                        e.model_tests_shown, e.model_tests_shown_kept
                    ));
                }
            }
        }
        if let (Some(c), Some(o)) = (self.top1_resolved, self.oracle) {
            out.push_str(&format!(
                "top-1 pick resolves {c:.2} of {} labelled ranked issues ({:.1}%); oracle (some candidate resolves): {o}\n",
                self.labelled,
                100.0 * c / self.labelled as f64
            ));
        }
        out
    }

    /// Error outcomes grouped: one line per kind and repository (`missing_repo: 114 issues of
    /// django/django`), or per distinct message, with the first ids.
    pub fn error_groups(&self) -> Vec<String> {
        let mut groups: BTreeMap<(String, String, String), Vec<&str>> = BTreeMap::new();
        for r in &self.rows {
            if r.status == "ok" || r.status == "dry_run" {
                continue;
            }
            let msg = match r.status.as_str() {
                "missing_repo" => String::new(),
                // "k of n candidates … could not be reviewed: <why>": group by the why.
                "unreviewed" => r
                    .error
                    .as_deref()
                    .and_then(|e| e.split_once(": ").map(|(_, why)| why))
                    .unwrap_or("")
                    .to_string(),
                _ => r
                    .error
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            };
            groups
                .entry((r.status.clone(), r.repo.clone(), msg))
                .or_default()
                .push(&r.instance_id);
        }
        groups
            .into_iter()
            .map(|((kind, repo, msg), ids)| {
                let mut line = format!(
                    "{kind}: {} issue{}",
                    ids.len(),
                    if ids.len() == 1 { "" } else { "s" }
                );
                if !repo.is_empty() {
                    line.push_str(&format!(" of {repo}"));
                }
                if !msg.is_empty() {
                    line.push_str(&format!(" ({})", truncate(&msg, 100)));
                }
                let first: Vec<&str> = ids.iter().take(5).copied().collect();
                line.push_str(&format!(": {}", first.join(", ")));
                if ids.len() > 5 {
                    line.push_str(&format!(", … {} more", ids.len() - 5));
                }
                line
            })
            .collect()
    }
}
fn truncate(s: &str, n: usize) -> String {
    let one_line = s.lines().next().unwrap_or("");
    if one_line.chars().count() <= n {
        one_line.to_string()
    } else {
        one_line.chars().take(n - 1).chain(['…']).collect()
    }
}

/// Shards joined by [`merge`].
#[derive(Debug)]
pub struct Merged {
    pub outcomes: Vec<IssueOutcome>,
    pub summary: Summary,
    /// Shards found, e.g. `["1/4", "2/4"]`, and a warning for each one missing.
    pub shards: Vec<String>,
    pub warnings: Vec<String>,
}

/// Join the journals of several run directories (usually the shards of one run).
/// They must come from the same inputs; torn last lines are ignored; an issue in several
/// directories keeps its ranked outcome over an error.
pub fn merge(dirs: &[PathBuf]) -> anyhow::Result<Merged> {
    if dirs.is_empty() {
        anyhow::bail!("nothing to merge\n  hint: dei merge RUN_DIR RUN_DIR ...");
    }
    let mut first: Option<(PathBuf, Manifest)> = None;
    let mut shards = Vec::new();
    let mut warnings = Vec::new();
    let mut by_id: BTreeMap<String, IssueOutcome> = BTreeMap::new();
    let mut count: Option<u32> = None;
    // A run without a shard covers every shard's issues: none is missing beside it.
    let mut any_whole = false;
    for dir in dirs {
        let m = journal::read_manifest(dir)?;
        if let Some((d0, m0)) = &first {
            let unsharded = |m: &Manifest| Manifest {
                shard: None,
                ..m.clone()
            };
            if let Some(diff) = unsharded(m0).difference(&unsharded(&m)) {
                anyhow::bail!(
                    "{} and {} are runs of different inputs ({diff}); cannot merge",
                    d0.display(),
                    dir.display()
                );
            }
        }
        any_whole |= m.shard.is_none();
        if let Some(s) = &m.shard {
            if shards.contains(s) {
                warnings.push(format!("shard {s} appears twice ({})", dir.display()));
            }
            shards.push(s.clone());
            count = s.split_once('/').and_then(|(_, n)| n.parse().ok());
        }
        let read = journal::read_journal(&dir.join(journal::JOURNAL), true)?;
        if read.torn_bytes > 0 {
            warnings.push(format!(
                "{}: torn last line ignored ({} bytes); that issue is missing",
                dir.display(),
                read.torn_bytes
            ));
        }
        for bad in read.bad_lines {
            warnings.push(format!("{}: {bad} (ignored)", dir.display()));
        }
        for o in read.outcomes {
            let keep_old = by_id
                .get(&o.instance_id)
                .is_some_and(|old| old.is_ok() && !o.is_ok());
            if !keep_old {
                by_id.insert(o.instance_id.clone(), o);
            }
        }
        first.get_or_insert((dir.clone(), m));
    }
    if let Some(n) = count.filter(|_| !any_whole) {
        for i in 1..=n {
            let s = format!("{i}/{n}");
            if !shards.contains(&s) {
                warnings.push(format!(
                    "shard {s} is missing: its issues are not in the result"
                ));
            }
        }
    }
    let outcomes: Vec<IssueOutcome> = by_id.into_values().collect();
    let summary = Summary::new(&outcomes, outcomes.len(), 0);
    Ok(Merged {
        outcomes,
        summary,
        shards,
        warnings,
    })
}

/// Write a merged result as a run directory of its own (manifest without shard, journal, summary).
pub fn write_merged(merged: &Merged, from: &Path, out: &Path) -> anyhow::Result<()> {
    let lock = journal::RunLock::acquire(out)?;
    let m = Manifest {
        shard: None,
        ..journal::read_manifest(from)?
    };
    if out.join(journal::JOURNAL).exists() {
        anyhow::bail!(
            "{} already holds a journal\n  hint: merge into a new folder",
            out.display()
        );
    }
    journal::check_manifest(out, &m)?;
    let (mut j, _) = journal::Journal::open(out, &lock)?;
    for o in &merged.outcomes {
        j.append(o)?;
    }
    std::fs::write(
        out.join(journal::SUMMARY),
        serde_json::to_string_pretty(&merged.summary)?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: &str, exec: Option<serde_json::Value>) -> IssueOutcome {
        let mut result = serde_json::json!({"instance_id": id, "ranked": []});
        if let Some(e) = exec {
            result["exec"] = e;
        }
        serde_json::from_value(serde_json::json!({
            "instance_id": id, "repo": "o/r", "candidates": 3, "result": result
        }))
        .unwrap()
    }

    /// A command that sleeps past its limit takes wall time and next to no CPU time: it is no
    /// sign of a busy machine, so the runs killed at the limit are left out of that reading.
    #[test]
    fn runs_killed_at_the_time_limit_do_not_make_an_idle_machine_busy() {
        let exec = |timed_out: f64, timed_out_cpu: f64| {
            let o = outcome(
                "a",
                Some(
                    serde_json::json!({"error": null, "stable_tests": 1, "flaky_tests": [],
                    "reproduction": true, "classes": 2, "runs": 5, "cached_runs": 0,
                    "run_seconds": 123.0, "cpu_seconds": 3.0, "timed_out_seconds": timed_out,
                    "timed_out_cpu_seconds": timed_out_cpu}),
                ),
            );
            Summary::new(&[o], 1, 0).table(10)
        };
        // A sleeper killed at 120 s: the other runs took their CPU time on the clock.
        let idle = exec(120.0, 0.0);
        assert!(
            idle.contains("123 s in the others, 3 s of CPU time)") && !idle.contains("busy"),
            "{idle}"
        );
        // Without the killed runs counted apart (a journal that does not keep them), wall time
        // is read against CPU time over every run.
        let old = exec(0.0, 0.0);
        assert!(old.contains("the machine was busy: 41.0×"), "{old}");
        // A killed run that computed all along takes its CPU time out with it: still busy.
        let busy = exec(60.0, 0.5);
        assert!(busy.contains("the machine was busy: 25.2×"), "{busy}");
    }

    /// Where the runs' wait for a CPU was kept, the summary reads it: runs that slept or
    /// waited for their disk (wall time far over CPU time, no wait) are not a busy machine,
    /// and runs that waited for a CPU over a quarter of their time are.
    #[test]
    fn a_busy_machine_is_read_from_the_runs_wait_for_a_cpu_where_it_was_kept() {
        let exec = |run_seconds: f64, cpu: f64, waited: f64| {
            let o = outcome(
                "a",
                Some(
                    serde_json::json!({"error": null, "stable_tests": 1, "flaky_tests": [],
                    "reproduction": true, "classes": 2, "runs": 5, "cached_runs": 0,
                    "run_seconds": run_seconds, "cpu_seconds": cpu, "waited_seconds": waited}),
                ),
            );
            Summary::new(&[o], 1, 0).table(10)
        };
        let sleepy = exec(100.0, 20.0, 0.5);
        assert!(
            sleepy.contains("100 s in the others, 20 s of CPU time)") && !sleepy.contains("busy"),
            "{sleepy}"
        );
        let loaded = exec(100.0, 30.0, 65.0);
        assert!(
            loaded.contains("the machine was busy: the runs waited 65 s of it for a CPU"),
            "{loaded}"
        );
        // Runs that record no wait: the wall against CPU reading.
        assert!(exec(100.0, 20.0, 0.0).contains("the machine was busy: 5.0×"));
    }

    #[test]
    fn execution_evidence_is_counted_over_ranked_issues() {
        let plain = Summary::new(&[outcome("a", None)], 1, 0);
        assert!(plain.exec.is_none());
        assert!(!plain.table(10).contains("execution"));
        let outcomes = [
            outcome(
                "a",
                Some(
                    serde_json::json!({"error": null, "stable_tests": 12, "flaky_tests": ["t::x"],
                    "reproduction": true, "classes": 3, "runs": 10, "cached_runs": 4, "run_seconds": 6.5,
                    "cpu_seconds": 3.0}),
                ),
            ),
            outcome(
                "b",
                Some(
                    serde_json::json!({"error": "environment for o/r 1.0: step `pip` failed",
                    "stable_tests": 0, "flaky_tests": [], "reproduction": false, "classes": 0,
                    "runs": 0, "cached_runs": 0, "run_seconds": 0.0}),
                ),
            ),
        ];
        let s = Summary::new(&outcomes, 2, 0);
        let e = s.exec.clone().expect("counted");
        assert_eq!(
            (
                e.issues,
                e.environment,
                e.tests,
                e.flaky,
                e.reproduction,
                e.split
            ),
            (2, 1, 1, 1, 1, 1)
        );
        assert_eq!((e.runs, e.cached_runs), (10, 4));
        assert!(
            s.table(10).contains("an environment for 1"),
            "{}",
            s.table(10)
        );
        assert!(!s.table(10).contains("model-written"));
        // The fresh runs took twice their CPU time on the clock.
        assert!(
            s.table(10).contains(
                "(4 from the cache, 6 s in the others, 3 s of CPU time; the machine was busy: 2.2× the CPU time on the clock)"
            ),
            "{}",
            s.table(10)
        );
        // Why the evidence is missing, by reason, with the issues it hit.
        assert_eq!(
            e.failures,
            BTreeMap::from([(
                "environment for o/r 1.0: step `pip` failed".to_string(),
                vec!["b".to_string()]
            )])
        );
        assert!(
            s.table(10).contains(
                "  no execution evidence for 1 issue (b): environment for o/r 1.0: step `pip` failed\n"
            ),
            "{}",
            s.table(10)
        );
        // With --exec-llm-repro: how many issues asked a model for a test, and kept it.
        let with_tests = [
            outcome(
                "a",
                Some(serde_json::json!({"model_test": {"status": "kept", "model": "m"}})),
            ),
            outcome(
                "b",
                Some(serde_json::json!({"model_test": {"status": "discarded", "model": "m"}})),
            ),
            outcome("c", Some(serde_json::json!({}))),
            outcome(
                "d",
                Some(
                    serde_json::json!({"model_test": {"status": "kept", "model": "m",
                    "shown_reproduction": true}}),
                ),
            ),
            outcome(
                "e",
                Some(
                    serde_json::json!({"model_test": {"status": "not_written", "model": "m",
                    "shown_reproduction": true}}),
                ),
            ),
        ];
        let s = Summary::new(&with_tests, 5, 0);
        let e = s.exec.clone().expect("counted");
        assert_eq!((e.model_tests, e.model_tests_kept), (4, 2));
        assert_eq!((e.model_tests_shown, e.model_tests_shown_kept), (2, 1));
        assert!(
            s.table(10).contains(
                "shown the issue's code as it ran at the base commit: 2 of them, kept for 1"
            ),
            "{}",
            s.table(10)
        );
        assert!(!s.table(10).contains("set aside"), "{}", s.table(10));
        // Candidates whose edits to the tests were set aside, summed over the issues (a
        // slimmed outcome keeps the count, not the behaviour).
        let aside = [
            outcome("a", Some(serde_json::json!({"tests_set_aside": 2}))),
            outcome("b", Some(serde_json::json!({"tests_set_aside": 1}))),
        ];
        let t = Summary::new(&aside, 2, 0).table(10);
        assert!(
            t.contains("\n  3 candidates edit the repository's tests: those edits were set aside, and the tests ran as at the base commit\n"),
            "{t}"
        );
        assert!(
            s.table(10)
                .contains("asked for 4 issues, kept (failing at the base commit) for 2"),
            "{}",
            s.table(10)
        );
    }

    #[test]
    fn what_the_picks_rest_on_is_counted_and_said() {
        let with = |id: &str, basis: Option<&str>| {
            let mut o = outcome(id, Some(serde_json::json!({"stable_tests": 1})));
            if let (Some(b), Some(r)) = (basis, o.result.as_mut()) {
                r["pick_basis"] = serde_json::json!(b);
            }
            o
        };
        let s = Summary::new(
            &[
                with("a", Some("agreement")),
                with("b", Some("quiet")),
                with("c", Some("quiet")),
                with("d", None),
            ],
            4,
            0,
        );
        let e = s.exec.clone().expect("counted");
        assert_eq!(
            e.pick_basis,
            BTreeMap::from([(Basis::Agreement, 1), (Basis::Quiet, 2)])
        );
        assert_eq!(s.rows[0].pick_basis, Some(Basis::Agreement));
        assert_eq!(s.rows[3].pick_basis, None);
        let t = s.table(10);
        assert!(
            t.contains("\n  what the picks rest on: agreement 1, quiet 2 (dei rank's `pick rests on` line says what each means)\n"),
            "{t}"
        );
        // Each issue's line says it too, `-` where nothing is picked.
        assert!(t.contains("  resolved  rests on    top pick\n"), "{t}");
        assert!(t.contains("  agreement   \n"), "{t}");
        assert!(t.contains("  -           \n"), "{t}");
        // The JSON names each basis by its word.
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["exec"]["pick_basis"]["quiet"], 2, "{v}");
        assert_eq!(v["rows"][0]["pick_basis"], "agreement");
        // Without a basis (no pick, or an older journal), nothing is said.
        let none = Summary::new(&[with("a", None)], 1, 0).table(10);
        assert!(!none.contains("rest on"), "{none}");
        assert!(none.contains("  resolved  top pick\n"), "{none}");
    }

    #[test]
    fn missing_execution_evidence_is_listed_by_reason_most_issues_first() {
        let failed = |id: &str, why: &str| outcome(id, Some(serde_json::json!({"error": why})));
        let mut outcomes = vec![failed(
            "a",
            "no environment for x/y 1.0: dei ships none\nmore",
        )];
        for id in ["b", "c", "d", "e"] {
            outcomes.push(failed(id, "environment for o/r 2.0: step `install` failed"));
        }
        outcomes.push(outcome("f", Some(serde_json::json!({"stable_tests": 3}))));
        let t = Summary::new(&outcomes, 6, 0).table(10);
        let four = t
            .find("  no execution evidence for 4 issues (b, c, d, …): environment for o/r 2.0: step `install` failed\n")
            .unwrap_or_else(|| panic!("{t}"));
        let one = t
            .find("  no execution evidence for 1 issue (a): no environment for x/y 1.0: dei ships none\n")
            .unwrap_or_else(|| panic!("{t}"));
        assert!(four < one, "{t}");
        assert!(t.contains("an environment for 1,"), "{t}");
    }
}
