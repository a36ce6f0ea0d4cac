//! Ranking whole benchmarks: many issues in one resumable run.
//!
//! `dei rank --all --run-dir DIR` indexes the candidate inputs per issue ([`index`]), skips
//! the issues the run directory's journal already holds ([`journal`]), ranks the rest in
//! parallel, and appends one journal line per finished issue. Killing the run at any point
//! loses at most the issues in flight; rerunning the same command resumes. Finished issues
//! are skipped before anything is read or any committee is asked. `--shard i/n` takes a
//! deterministic share ([`shard`]); [`merge`] joins the shards' directories.
//!
//! Problems with one issue (no repository, unknown id, a committee failure) are recorded as
//! that issue's error; problems with one candidate are that candidate's error.

pub mod index;
pub mod journal;
pub mod record;
pub mod shard;
pub mod summary;

pub use shard::Shard;
pub use summary::{merge, Summary};

use crate::candidates::Problem;
use crate::model::notify::{self, Event};
use crate::model::task::Selection;
use crate::model::Task;
use crate::model::{repo, task};
use crate::patch::Mode;
use crate::rank::pipeline::{self, RankResult};
use crate::review::Committee;
use index::Index;
use journal::{Journal, Manifest, RunLock};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct RunRequest {
    pub candidates: Vec<PathBuf>,
    /// `--agent-name SOURCE=NAME` overrides of the agent naming rule.
    pub naming: crate::candidates::Naming,
    pub tasks: PathBuf,
    pub selection: Selection,
    /// One repository for every issue (only when they all share it).
    pub repo: Option<PathBuf>,
    /// A folder of repositories (`owner__name`, `owner+name/repo`, ...); `DEI_REPOS` when `None`.
    pub repos: Option<PathBuf>,
    pub strict: bool,
    pub context_tokens: usize,
    /// Candidates whose patch is longer get an error instead of being rebuilt.
    pub max_patch_bytes: usize,
    pub run_dir: PathBuf,
    pub shard: Option<Shard>,
    /// Run issues recorded as errors again (e.g. after adding a missing repository).
    pub retry_errors: bool,
    /// Set to stop starting new issues (Ctrl-C); issues in flight finish and are recorded.
    pub stop: Option<Arc<AtomicBool>>,
    /// Re-ranks each issue's localization with a model (`--llm-locate`).
    pub relocator: Option<Arc<crate::localize::rerank::Relocator>>,
    /// Run the candidates (`--exec`); runs are cached in the run directory.
    pub exec: Option<Arc<crate::exec::gather::ExecSettings>>,
}

/// What kind of issue-level failure an error outcome is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The issue's repository is not available.
    MissingRepo,
    /// The candidates name an issue the tasks file does not have.
    UnknownIssue,
    /// Asked for an issue nobody proposed a candidate for.
    NoCandidates,
    /// Ranked, but some candidates could not be reviewed (the model could not be reached,
    /// its replies never parsed, the cost cap): no pick is made; `--retry-errors` reruns it.
    Unreviewed,
    /// Anything else (base commit missing, committee failure, ...).
    Failed,
}

impl ErrorKind {
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::MissingRepo => "missing_repo",
            ErrorKind::UnknownIssue => "unknown_issue",
            ErrorKind::NoCandidates => "no_candidates",
            ErrorKind::Unreviewed => "unreviewed",
            ErrorKind::Failed => "failed",
        }
    }
}

/// One candidate that could not be rebuilt or read, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateError {
    pub agent: String,
    pub error: String,
}

/// One finished issue: one journal line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssueOutcome {
    pub instance_id: String,
    #[serde(default)]
    pub repo: String,
    /// `None` when ranked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub candidates: usize,
    /// The agents sharing the top score.
    #[serde(default)]
    pub top: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_score: Option<f64>,
    /// Expected credit of the top pick: of the `t` candidates sharing the top score, `c`
    /// are resolved: `c/t`. `None` when the candidates carry no labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_resolved: Option<f64>,
    /// Does any candidate resolve the issue (the oracle)? `None` without labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_resolved: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_errors: Vec<CandidateError>,
    /// Input problems with this issue's records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    #[serde(default)]
    pub elapsed_ms: u64,
    /// The full ranking, as `dei rank --json` writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// A dry run's (`--dry-run`): prompts printed, nothing reviewed. It is not finished work:
    /// the journal does not keep it, and a run that finds one (written before this was so)
    /// ranks the issue again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

impl IssueOutcome {
    pub fn is_ok(&self) -> bool {
        self.error_kind.is_none()
    }

    /// A dry run's outcome ([`IssueOutcome::dry_run`]), or one a journal kept before that
    /// field was written (its ranking's status says so).
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
            || self
                .result
                .as_ref()
                .and_then(|r| r.get("status"))
                .is_some_and(|s| s == "dry_run")
    }

    /// The outcome as the run keeps it in memory: of the full ranking, only what the summary
    /// counts (the issue's `exec`, without its per-candidate behaviour and the model-written
    /// test's script, and what the pick rests on); the rest is on disk in the journal.
    pub fn slim(self) -> IssueOutcome {
        // the ranking's status goes with it: a dry run stays one
        let dry_run = self.is_dry_run();
        let basis = self
            .result
            .as_ref()
            .and_then(|r| r.get("pick_basis"))
            .cloned();
        let result = self
            .result
            .as_ref()
            .and_then(|r| r.get("exec"))
            .map(|exec| {
                let mut exec = exec.clone();
                if let Some(e) = exec.as_object_mut() {
                    e.remove("behaviour");
                    if let Some(m) = e.get_mut("model_test").and_then(|m| m.as_object_mut()) {
                        m.remove("script");
                    }
                    if let Some(all) = e
                        .get_mut("model_test_samples")
                        .and_then(|v| v.as_array_mut())
                    {
                        for m in all.iter_mut().filter_map(|m| m.as_object_mut()) {
                            m.remove("script");
                        }
                    }
                }
                let mut kept = serde_json::json!({ "exec": exec });
                if let Some(b) = &basis {
                    kept["pick_basis"] = b.clone();
                }
                kept
            });
        IssueOutcome {
            result,
            dry_run,
            ..self
        }
    }

    fn failed(
        id: &str,
        repo: &str,
        kind: ErrorKind,
        error: String,
        candidates: usize,
        problems: Vec<Problem>,
    ) -> IssueOutcome {
        IssueOutcome {
            instance_id: id.to_string(),
            repo: repo.to_string(),
            error_kind: Some(kind),
            error: Some(error),
            candidates,
            top: vec![],
            top_score: None,
            top_resolved: None,
            any_resolved: None,
            candidate_errors: vec![],
            problems: problems.iter().map(ToString::to_string).collect(),
            elapsed_ms: 0,
            result: None,
            dry_run: false,
        }
    }

    fn ranked(
        result: &RankResult,
        problems: &[Problem],
        elapsed_ms: u64,
    ) -> anyhow::Result<IssueOutcome> {
        let top = result.pick();
        let labelled = result.ranked.iter().any(|r| r.resolved.is_some());
        let labels: Vec<Option<bool>> = top.iter().map(|r| r.resolved).collect();
        let top_resolved = top_credit(labelled, &labels);
        let unreviewed = result.unreviewed_reason();
        Ok(IssueOutcome {
            instance_id: result.instance_id.clone(),
            repo: result.repo.clone(),
            error_kind: unreviewed.is_some().then_some(ErrorKind::Unreviewed),
            error: unreviewed,
            candidates: result.candidates,
            top: top.iter().map(|r| r.agent.clone()).collect(),
            top_score: top.first().and_then(|r| r.score),
            top_resolved,
            any_resolved: labelled.then(|| result.ranked.iter().any(|r| r.resolved == Some(true))),
            candidate_errors: result
                .ranked
                .iter()
                .filter_map(|r| {
                    r.error.as_ref().map(|e| CandidateError {
                        agent: r.agent.clone(),
                        error: e.clone(),
                    })
                })
                .collect(),
            problems: problems.iter().map(ToString::to_string).collect(),
            elapsed_ms,
            dry_run: result.status == pipeline::IssueStatus::DryRun,
            result: Some(serde_json::to_value(result)?),
        })
    }
}

/// Expected credit of a pick shared by candidates with these labels: resolved over tied;
/// `None` when the candidates carry no labels or nothing is picked.
fn top_credit(labelled: bool, top: &[Option<bool>]) -> Option<f64> {
    (labelled && !top.is_empty())
        .then(|| top.iter().filter(|r| **r == Some(true)).count() as f64 / top.len() as f64)
}

/// What a finished (or stopped) run did.
#[derive(Debug)]
pub struct RunReport {
    pub summary: Summary,
    /// Issues ranked by this invocation (the rest came from the journal).
    pub ran: usize,
    /// Issues already in the journal and skipped.
    pub skipped: usize,
    /// True when stopped before every selected issue finished.
    pub interrupted: bool,
    /// Torn bytes cut from the journal's end on resume.
    pub torn_bytes: u64,
    /// Problems not tied to one issue (malformed lines, unreadable files).
    pub problems: Vec<Problem>,
    /// With `--exec`: issues whose ranking the agents' execution records changed (a new
    /// journal line each); `None` when no record was taken (no `--exec`, stopped early, or a
    /// committee that takes none).
    pub record_changed: Option<usize>,
    /// With `--exec` and a committee whose record orders the healthy: issues whose pick is
    /// not the one the scores alone would make.
    pub picked_by_record: Option<usize>,
}

fn manifest(req: &RunRequest, committee: &dyn Committee) -> Manifest {
    let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    Manifest {
        version: 1,
        candidates: req
            .candidates
            .iter()
            .map(|p| {
                (
                    abs(p),
                    std::fs::metadata(p)
                        .map(|m| if m.is_dir() { 0 } else { m.len() })
                        .unwrap_or(0),
                )
            })
            .collect(),
        tasks: abs(&req.tasks),
        strict: req.strict,
        context_tokens: req.context_tokens,
        max_patch_bytes: req.max_patch_bytes,
        committee: committee.name(),
        committee_settings: committee.settings(),
        exec: req
            .exec
            .as_ref()
            .map_or_else(|| "off".to_string(), |e| format!("on: {}", e.settings())),
        agent_names: req.naming.given(),
        shard: req.shard.map(|s| s.to_string()),
        // An input that cannot be read leaves every digest out: paths and sizes are compared.
        candidates_sha256: req
            .candidates
            .iter()
            .map(|p| journal::input_digest(p))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default(),
        tasks_sha256: journal::input_digest(&req.tasks).unwrap_or_default(),
    }
}

/// Run (or resume) a multi-issue ranking into `req.run_dir`.
pub fn run(req: &RunRequest, committee: &dyn Committee) -> anyhow::Result<RunReport> {
    let lock = RunLock::acquire(&req.run_dir)?;
    journal::check_manifest(&req.run_dir, &manifest(req, committee))?;
    let (journal, read) = Journal::open(&req.run_dir, &lock)?;
    for bad in &read.bad_lines {
        crate::model::notify::warning(&format!(
            "warning: {}: {bad} (ignored)",
            journal.path.display()
        ));
    }

    let tasks: HashMap<String, Task> = task::load_tasks(&req.tasks)?
        .into_iter()
        .map(|t| (t.instance_id.clone(), t))
        .collect();
    let mut index = Index::build_with(&req.candidates, &req.naming)?;

    let mut selected: Vec<String> = match &req.selection {
        Selection::All => index.issue_ids(),
        Selection::Ids(ids) => ids
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    if let Some(shard) = req.shard {
        selected.retain(|id| shard.owns(id));
    }
    let repo_names: BTreeSet<&str> = selected
        .iter()
        .filter_map(|id| tasks.get(id))
        .map(|t| t.repo.as_str())
        .collect();
    if req.repo.is_some() && req.repos.is_none() && repo_names.len() > 1 {
        anyhow::bail!(
            "--repo names one repository, but the selected issues span {} ({})\n  hint: use --repos DIR (or DEI_REPOS) with one owner__name folder per repository",
            repo_names.len(),
            repo_names.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        );
    }

    // Finished issues are skipped before anything else happens to them.
    let mut last: BTreeMap<String, IssueOutcome> = BTreeMap::new();
    for o in read.outcomes {
        last.insert(o.instance_id.clone(), o);
    }
    // A dry run's line (kept by builds before dry runs stopped being journaled) is no result.
    let done = |id: &String| {
        last.get(id)
            .is_some_and(|o| !o.is_dry_run() && (o.is_ok() || !req.retry_errors))
    };
    let mut pending: Vec<String> = selected.iter().filter(|id| !done(id)).cloned().collect();
    let skipped = selected.len() - pending.len();
    // Issues of one repository run together (warm object caches), in id order.
    pending.sort_by(|a, b| {
        let ra = tasks.get(a).map_or("", |t| t.repo.as_str());
        let rb = tasks.get(b).map_or("", |t| t.repo.as_str());
        ra.cmp(rb).then(a.cmp(b))
    });

    // Each pending issue's candidates are read back from disk only when it runs.
    let mode = if req.strict {
        Mode::Strict
    } else {
        Mode::Tolerant
    };
    let index_problems = std::mem::take(&mut index.problems);
    let index = index; // shared read-only from here on
    let journal = Mutex::new(journal);
    notify::emit(&Event::RunStarted {
        total: selected.len() as u64,
        already: skipped as u64,
    });
    let stop = req.stop.clone().unwrap_or_default();
    let first_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let fresh: Mutex<Vec<IssueOutcome>> = Mutex::new(Vec::new());

    let pool = match committee.issues_in_flight() {
        Some(n) => Some(rayon::ThreadPoolBuilder::new().num_threads(n).build()?),
        None => None,
    };
    let work = || {
        pending.par_iter().with_max_len(1).for_each(|id| {
            if stop.load(Ordering::SeqCst)
                || first_error.lock().map(|e| e.is_some()).unwrap_or(true)
            {
                return;
            }
            let outcome = rank_one(id, &tasks, &index, req, mode, committee);
            let ok = outcome.is_ok();
            // A dry run reviewed nothing: the journal keeps results only, so the run that
            // follows without --dry-run ranks the issue.
            let write = if outcome.is_dry_run() {
                Ok(())
            } else {
                journal
                    .lock()
                    .map_err(|_| anyhow::anyhow!("journal lock poisoned"))
                    .and_then(|mut j| j.append(&outcome))
            };
            match write {
                Ok(()) => {
                    notify::emit(&Event::IssueFinished {
                        ok,
                        candidates: outcome.candidates,
                    });
                    if let Ok(mut f) = fresh.lock() {
                        // The full ranking is on disk; keep only the summary fields in memory.
                        f.push(outcome.slim());
                    }
                }
                Err(e) => {
                    if let Ok(mut slot) = first_error.lock() {
                        slot.get_or_insert(e);
                    }
                }
            }
        })
    };
    let all_done = AtomicBool::new(false);
    // The live status: the committee's, and with --exec the sandbox runs'.
    let live = || -> Option<String> {
        let parts: Vec<String> = committee
            .live_status()
            .into_iter()
            .chain(req.exec.as_ref().map(|e| e.live_status()))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    };
    std::thread::scope(|scope| {
        // The committee's live status (LLM calls in flight, cost so far) and the sandbox
        // runs, twice a second.
        let ticker = (notify::wants_live() && live().is_some()).then(|| {
            scope.spawn(|| {
                while !all_done.load(Ordering::SeqCst) {
                    if let Some(status) = live() {
                        notify::emit(&Event::Live(&status));
                    }
                    std::thread::park_timeout(std::time::Duration::from_millis(500));
                }
            })
        });
        match &pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
        all_done.store(true, Ordering::SeqCst);
        if let Some(t) = ticker {
            t.thread().unpark();
        }
    });
    notify::emit(&Event::RunFinished);
    if let Some(e) = first_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let fresh = fresh.into_inner().unwrap_or_default();
    let ran = fresh.len();
    for o in fresh {
        last.insert(o.instance_id.clone(), o);
    }
    let mut outcomes: Vec<IssueOutcome> =
        selected.iter().filter_map(|id| last.remove(id)).collect();
    let interrupted = outcomes.len() < selected.len();
    // With execution evidence, each agent's record over the run's other issues, once every
    // issue is ranked; the issues it moves get a new journal line.
    let mut record_changed = None;
    let mut picked_by_record = None;
    let dry_run = outcomes.iter().any(IssueOutcome::is_dry_run);
    if req.exec.is_some() && !interrupted && !dry_run && committee.takes_exec_record() {
        let mut journal = journal
            .into_inner()
            .map_err(|_| anyhow::anyhow!("journal lock poisoned"))?;
        let (revised, by_order) = with_exec_record(&journal, &selected, committee)?;
        record_changed = Some(revised.len());
        picked_by_record = committee.exec_record_orders().then_some(by_order);
        for o in revised {
            journal.append(&o)?;
            if let Some(slot) = outcomes.iter_mut().find(|s| s.instance_id == o.instance_id) {
                *slot = o.slim();
            }
        }
    }
    let summary = Summary::new(&outcomes, selected.len(), index_problems.len());
    let text = serde_json::to_string_pretty(&summary)?;
    let tmp = req.run_dir.join(format!("{}.tmp", journal::SUMMARY));
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, req.run_dir.join(journal::SUMMARY)))?;
    drop(lock);
    Ok(RunReport {
        summary,
        ran,
        skipped,
        interrupted,
        torn_bytes: read.torn_bytes,
        problems: index_problems,
        record_changed,
        picked_by_record,
    })
}

/// The selected issues' full outcomes, read back from the journal, with the agents' execution
/// records added ([`record::apply`]); only the outcomes whose ranking changed are returned,
/// with the number of issues whose pick the record's order makes.
fn with_exec_record(
    journal: &Journal,
    selected: &[String],
    committee: &dyn Committee,
) -> anyhow::Result<(Vec<IssueOutcome>, usize)> {
    let wanted: BTreeSet<&str> = selected.iter().map(String::as_str).collect();
    let mut last: BTreeMap<String, IssueOutcome> = BTreeMap::new();
    for o in journal::read_journal(&journal.path, true)?.outcomes {
        if wanted.contains(o.instance_id.as_str()) {
            last.insert(o.instance_id.clone(), o);
        }
    }
    let mut all: Vec<IssueOutcome> = last.into_values().collect();
    let applied = record::apply(&mut all, committee);
    let changed = applied.changed.iter().map(|&k| all[k].clone()).collect();
    Ok((changed, applied.picked_by_order))
}

/// Rank one issue; every failure becomes an error outcome.
fn rank_one(
    id: &str,
    tasks: &HashMap<String, Task>,
    index: &Index,
    req: &RunRequest,
    mode: Mode,
    committee: &dyn Committee,
) -> IssueOutcome {
    let started = Instant::now();
    let n = index.count(id);
    let Some(task) = tasks.get(id) else {
        let (_, problems) = index.read(id);
        return IssueOutcome::failed(
            id,
            "",
            ErrorKind::UnknownIssue,
            format!("unknown issue id `{id}`: not in {}", req.tasks.display()),
            n,
            problems,
        );
    };
    if n == 0 {
        return IssueOutcome::failed(
            id,
            &task.repo,
            ErrorKind::NoCandidates,
            "no candidates for this issue".into(),
            0,
            vec![],
        );
    }
    let repo_path = match repo::find_repo(req.repo.as_deref(), req.repos.as_deref(), &task.repo) {
        Ok(p) => p,
        Err(e) => {
            let (_, problems) = index.read(id);
            return IssueOutcome::failed(
                id,
                &task.repo,
                ErrorKind::MissingRepo,
                first_line(&e),
                n,
                problems,
            );
        }
    };
    let (cands, problems) = index.read(id);
    if cands.is_empty() {
        return IssueOutcome::failed(
            id,
            &task.repo,
            ErrorKind::NoCandidates,
            "no readable candidates".into(),
            n,
            problems,
        );
    }
    let ranked = pipeline::rank_issue(
        task,
        cands,
        &repo_path,
        pipeline::PrepareOptions {
            mode,
            context_tokens: req.context_tokens,
            max_patch_bytes: req.max_patch_bytes,
        },
        pipeline::Judges {
            committee,
            relocator: req.relocator.as_deref(),
            exec: req.exec.as_deref(),
        },
        problems.clone(),
    )
    .and_then(|r| IssueOutcome::ranked(&r, &problems, started.elapsed().as_millis() as u64));
    match ranked {
        Ok(o) => o,
        Err(e) => {
            let mut o = IssueOutcome::failed(
                id,
                &task.repo,
                ErrorKind::Failed,
                format!("{e:#}"),
                n,
                problems,
            );
            o.elapsed_ms = started.elapsed().as_millis() as u64;
            o
        }
    }
}

fn first_line(e: &anyhow::Error) -> String {
    e.to_string().lines().next().unwrap_or("").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Applies, Review, Score};
    use crate::rank::pipeline::Ranked;

    fn ranked(agent: &str, rank: usize, score: f64, resolved: Option<bool>) -> Ranked {
        Ranked {
            rank,
            tied: 0,
            agent: agent.into(),
            instance_id: "i-1".into(),
            score: Some(score),
            status: crate::model::ReviewStatus::Reviewed,
            applies: Applies::Clean,
            apply_failure: None,
            files: vec![],
            reason: String::new(),
            resolved,
            review: Review {
                candidate: format!("{agent}/i-1"),
                committee: "test".into(),
                score: Score {
                    value: score,
                    parts: vec![],
                },
                reason: String::new(),
                explanations: vec![],
                unscored: None,
                rule: false,
                usage: None,
            },
            edited: vec![],
            origin: String::new(),
            patch: String::new(),
            error: None,
            behaviour: None,
        }
    }

    fn result(ranked: Vec<Ranked>) -> RankResult {
        RankResult {
            instance_id: "i-1".into(),
            repo: "o/r".into(),
            base_commit: "abc".into(),
            committee: "test".into(),
            candidates: ranked.len(),
            empty: 0,
            status: crate::rank::pipeline::IssueStatus::Ranked,
            unscored: 0,
            ranked,
            problems: vec![],
            exec: None,
            pick_basis: None,
        }
    }

    #[test]
    fn many_missing_repositories_are_one_line_per_repository() {
        let mut outcomes: Vec<IssueOutcome> = (0..160)
            .map(|i| {
                let repo = if i % 4 == 0 { "o/a" } else { "o/b" };
                IssueOutcome::failed(
                    &format!("x-{i:03}"),
                    repo,
                    ErrorKind::MissingRepo,
                    "no repository".into(),
                    3,
                    vec![],
                )
            })
            .collect();
        outcomes
            .push(IssueOutcome::ranked(&result(vec![ranked("a", 1, 8.0, None)]), &[], 5).unwrap());
        let s = Summary::new(&outcomes, 161, 0);
        let table = s.table(50);
        let missing: Vec<&str> = table
            .lines()
            .filter(|l| l.contains("missing_repo"))
            .collect();
        assert_eq!(missing.len(), 2, "{table}");
        assert!(missing[0].contains("40 issues of o/a"), "{table}");
        assert!(missing[1].contains("120 issues of o/b") && missing[1].contains("… 115 more"));
        // The ranked issue keeps its row.
        assert!(table.lines().any(|l| l.starts_with("i-1 ")), "{table}");
        assert_eq!(s.rows.len(), 161, "every issue stays in the JSON");
    }

    #[test]
    fn ties_at_the_top_count_as_expected_value() {
        // Three share the top score, one of them resolves: 1/3.
        let r = result(vec![
            ranked("a", 1, 8.0, Some(false)),
            ranked("b", 1, 8.0, Some(true)),
            ranked("c", 1, 8.0, Some(false)),
            ranked("d", 4, 2.0, Some(true)),
        ]);
        let o = IssueOutcome::ranked(&r, &[], 5).unwrap();
        assert_eq!(o.top, ["a", "b", "c"]);
        assert!((o.top_resolved.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(o.any_resolved, Some(true));
        // Unlabelled candidates: no credit at all, not zero.
        let u = IssueOutcome::ranked(&result(vec![ranked("a", 1, 8.0, None)]), &[], 5).unwrap();
        assert_eq!((u.top_resolved, u.any_resolved), (None, None));
        let missing = IssueOutcome::failed(
            "i-2",
            "o/x",
            ErrorKind::MissingRepo,
            "no repo".into(),
            3,
            vec![],
        );
        let s = Summary::new(&[o, u, missing], 4, 1);
        assert_eq!((s.selected, s.finished, s.ranked, s.labelled), (4, 3, 2, 1));
        assert!((s.top1_resolved.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.oracle, Some(1));
        assert_eq!(s.missing_repos.get("o/x"), Some(&1));
        assert_eq!(s.errors.get("missing_repo"), Some(&1));
        let table = s.table(10);
        assert!(
            table.contains("top-1 pick resolves 0.33 of 1 labelled ranked issues"),
            "{table}"
        );
        // Errors are grouped by kind and repository, not one row per issue.
        assert!(
            table.contains("missing_repo: 1 issue of o/x: i-2"),
            "{table}"
        );
        assert!(!table.lines().any(|l| l.starts_with("i-2 ")), "{table}");
    }

    #[test]
    fn in_memory_outcomes_keep_what_the_summary_counts() {
        let o: IssueOutcome = serde_json::from_value(serde_json::json!({
            "instance_id": "i-1",
            "result": {"ranked": [{"agent": "a"}], "pick_basis": "quiet", "exec": {
                "runs": 7, "behaviour": [{"tests_run": 3}],
                "model_test": {"status": "kept", "model": "m", "script": "print(1)"},
                "model_test_samples": [{"status": "kept", "model": "m", "script": "print(1)"}, {"status": "discarded", "model": "m", "sample": 1, "script": "print(2)"}]
            }}
        }))
        .unwrap();
        let slim = o.slim();
        let r = slim.result.as_ref().unwrap();
        assert!(r.get("ranked").is_none());
        assert_eq!(r["exec"]["runs"], 7);
        assert!(r["exec"].get("behaviour").is_none());
        assert_eq!(r["exec"]["model_test"]["status"], "kept");
        assert!(r["exec"]["model_test"].get("script").is_none());
        let samples = r["exec"]["model_test_samples"].as_array().unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples.iter().all(|m| m.get("script").is_none()));
        // What the pick rests on stays, for the summary's counts.
        assert_eq!(r["pick_basis"], "quiet");
        let s = Summary::new(&[slim], 1, 0);
        assert_eq!(
            s.rows[0].pick_basis,
            Some(crate::rank::health::Basis::Quiet)
        );
        assert_eq!(s.exec.map(|e| (e.runs, e.model_tests_kept)), Some((7, 1)));
        // Without --exec nothing is kept.
        let plain: IssueOutcome = serde_json::from_value(serde_json::json!({
            "instance_id": "i-2", "result": {"ranked": []}
        }))
        .unwrap();
        assert!(plain.slim().result.is_none());
    }
}
