//! The `dei rank` pipeline for one issue: candidates → task/repo → patch → context →
//! review → select. Each step lives in its own module; this file only wires them.

use crate::candidates::{self, Problem};
use crate::context;
use crate::exec::gather::{gather, ExecSettings, IssueExec};
use crate::localize::rerank::Relocator;
use crate::localize::search::FileIndex;
use crate::model::repo::{self, Snapshot};
use crate::model::task;
use crate::model::{Applies, Behaviour, Candidate, Review, ReviewStatus, Task};
use crate::patch::{self, Mode};
use crate::rank::health::{pick_basis_by_rank, Basis};
use crate::rank::select;
use crate::review::{Committee, IssueBundle, Prepared};
use anyhow::bail;
use rayon::prelude::*;
use std::path::PathBuf;

/// Where the issue comes from.
#[derive(Debug, Clone)]
pub enum IssueSource {
    /// `--issue ID --tasks FILE`
    Tasks { file: PathBuf, id: String },
    /// `--issue-file FILE --commit SHA`
    Text { file: PathBuf, commit: String },
}

#[derive(Debug, Clone)]
pub struct RankRequest {
    pub candidates: Vec<PathBuf>,
    pub issue: IssueSource,
    pub repo: Option<PathBuf>,
    pub repos: Option<PathBuf>,
    /// Strict: a candidate "applies" only when `git apply` would take it.
    pub strict: bool,
    pub context_tokens: usize,
    /// Candidates whose patch is longer are not rebuilt: they get an error instead.
    pub max_patch_bytes: usize,
    /// `--agent-name SOURCE=NAME` overrides of the agent naming rule.
    pub naming: candidates::Naming,
    /// Re-ranks the issue-only localization with a model (`--llm-locate`).
    pub relocator: Option<std::sync::Arc<Relocator>>,
    /// Run the candidates (`--exec`): their behaviour joins the evidence.
    pub exec: Option<std::sync::Arc<ExecSettings>>,
}

/// Default of `--max-patch-bytes`: 4 MiB, about five times the largest patch of the 3,626
/// SWE-bench Lite candidates (0.9 MB). Rebuilding and indexing a 10 MB patch took ~470 MiB.
pub const DEFAULT_MAX_PATCH_BYTES: usize = 4 << 20;

/// One line of the ranking.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ranked {
    pub rank: usize,
    pub tied: usize,
    pub agent: String,
    pub instance_id: String,
    /// The committee's score; `None` when the candidate could not be scored.
    pub score: Option<f64>,
    /// Reviewed, scored by rule (nothing to review), or unscored.
    pub status: ReviewStatus,
    pub applies: Applies,
    /// Why it does not apply, in a word or two (`too large`, `unsafe path`, `missing file`,
    /// `conflicts`, `bad diff`, …), as the table shows it; the full sentence is `error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apply_failure: Option<&'static str>,
    pub files: Vec<String>,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    pub review: Review,
    pub edited: Vec<String>,
    pub origin: String,
    /// The candidate's patch exactly as its agent wrote it (what a predictions file submits).
    pub patch: String,
    /// Why the candidate could not be rebuilt (diff does not parse, a file failed, unsafe path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What running it showed (`--exec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<Behaviour>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RankResult {
    pub instance_id: String,
    pub repo: String,
    pub base_commit: String,
    pub committee: String,
    pub candidates: usize,
    pub empty: usize,
    /// `ranked` when every candidate with something to review was reviewed; `unreviewed`
    /// when some could not be: then no candidate is picked (see [`RankResult::pick`]).
    pub status: IssueStatus,
    /// Candidates the committee should have reviewed but could not (no score).
    pub unscored: usize,
    pub ranked: Vec<Ranked>,
    pub problems: Vec<Problem>,
    /// What was run for this issue (`--exec`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<IssueExec>,
    /// What the pick rests on, from what ran ([`crate::rank::health::pick_basis`]); `None`
    /// without `--exec` or without a pick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pick_basis: Option<Basis>,
}

/// Whether an issue's ranking can be trusted as a pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueStatus {
    /// Every candidate with something to review was reviewed.
    Ranked,
    /// Some candidates could not be reviewed: the order is shown, but nothing is picked.
    Unreviewed,
    /// A dry run: prompts were printed and no model was asked (the committee's, or the one that
    /// writes the reproduction test, whose test is then missing from the ranking).
    DryRun,
}

impl RankResult {
    /// What the pick rests on ([`crate::rank::health::pick_basis`]); `None` when nothing is
    /// picked (see [`RankResult::pick`]).
    pub fn basis(&self) -> Option<Basis> {
        if self.status != IssueStatus::Ranked {
            return None;
        }
        let ranked: Vec<(&str, Option<&Behaviour>, Option<u64>)> = self
            .ranked
            .iter()
            .map(|r| (r.agent.as_str(), r.behaviour.as_ref(), Some(r.rank as u64)))
            .collect();
        pick_basis_by_rank(&ranked)
    }

    /// The candidates sharing the top place, when the issue was fully reviewed; empty when
    /// it was not (a pick from rule scores alone, or from some of the candidates, is no pick).
    pub fn pick(&self) -> Vec<&Ranked> {
        if self.status != IssueStatus::Ranked {
            return vec![];
        }
        self.ranked.iter().filter(|r| r.rank == 1).collect()
    }

    /// Why nothing was picked, for messages: "2 of 5 candidates with a patch to review could
    /// not be reviewed: <the first candidate's reason>".
    pub fn unreviewed_reason(&self) -> Option<String> {
        if self.status != IssueStatus::Unreviewed {
            return None;
        }
        let first = self
            .ranked
            .iter()
            .find_map(|r| r.review.unscored.as_deref())
            .unwrap_or("no reason given");
        let reviewable = self
            .ranked
            .iter()
            .filter(|r| r.status != ReviewStatus::Rule)
            .count();
        Some(format!(
            "{} of {} candidate{} with a patch to review could not be reviewed: {first}",
            self.unscored,
            reviewable,
            if reviewable == 1 { "" } else { "s" }
        ))
    }
}

impl IssueSource {
    /// Read the task this names.
    pub fn load(&self) -> anyhow::Result<Task> {
        match self {
            IssueSource::Tasks { file, id } => {
                let tasks = task::load_tasks(file)?;
                task::find_task(&tasks, id, file)
            }
            IssueSource::Text { file, commit } => task::task_from_text(file, commit),
        }
    }
}

/// Resolve the task of a request.
pub fn load_task(req: &RankRequest) -> anyhow::Result<Task> {
    req.issue.load()
}

/// Rebuild every candidate and its context against one snapshot (in parallel).
pub fn prepare(
    snapshot: &Snapshot,
    task: &Task,
    cands: Vec<Candidate>,
    mode: Mode,
    budget: usize,
) -> anyhow::Result<Vec<Prepared>> {
    let repo_files = FileIndex::from_snapshot(snapshot)?;
    prepare_capped(
        snapshot,
        &repo_files,
        task,
        cands,
        PrepareOptions {
            mode,
            context_tokens: budget,
            max_patch_bytes: DEFAULT_MAX_PATCH_BYTES,
        },
        None,
        None,
    )
}

/// [`prepare`], with candidates over `max_patch_bytes` turned into errors (not rebuilt); for a
/// committee that reads the context, the issue-only localization is computed here and handed
/// to the context, re-ranked by `relocator` when one is given (`--llm-locate`). `repo_files`
/// is the snapshot's Python files ([`FileIndex::from_snapshot`]), which the caller may reuse.
pub fn prepare_capped(
    snapshot: &Snapshot,
    repo_files: &FileIndex,
    task: &Task,
    cands: Vec<Candidate>,
    opts: PrepareOptions,
    committee: Option<&dyn Committee>,
    relocator: Option<&Relocator>,
) -> anyhow::Result<Vec<Prepared>> {
    let (mode, budget, max_patch_bytes) = (opts.mode, opts.context_tokens, opts.max_patch_bytes);
    let views = patch::rebuild_issue(snapshot, &cands, mode, max_patch_bytes)?;
    // Context sees the other candidates and the repository's Python files.
    let refs = crate::localize::issue::IssueRefs::new(&task.problem_statement);
    // Where the issue alone points, for committees that read the context.
    let located = match committee.filter(|c| c.reads_context()) {
        Some(_) => {
            let lexical = crate::localize::search::locate(
                &task.problem_statement,
                repo_files,
                &crate::localize::search::LocateOptions::default(),
            );
            match relocator {
                Some(r) => {
                    let rr = r.relocate(task, repo_files, &lexical)?;
                    for note in &rr.notes {
                        crate::model::notify::notice(&format!(
                            "note: {}: localization: {note}",
                            task.instance_id
                        ));
                    }
                    let by = (rr.functions_named > 0).then(|| r.by.clone());
                    Some((rr.localization, by))
                }
                None => Some((lexical, None)),
            }
        }
        None => None,
    };
    let others: Vec<&crate::model::PatchView> = views.iter().collect();
    let related = context::Related {
        refs: Some(&refs),
        others: &others,
        repo: Some(repo_files),
        located: located.as_ref().map(|(l, _)| l),
        located_by: located.as_ref().and_then(|(_, by)| by.as_deref()),
    };
    let contexts: Vec<_> = views
        .par_iter()
        .map(|view| context::build_with(view, task, budget, &related))
        .collect();
    Ok(cands
        .into_iter()
        .zip(views)
        .zip(contexts)
        .map(|((candidate, view), context)| Prepared {
            candidate,
            view,
            context,
        })
        .collect())
}

/// Review prepared candidates and put them in order.
pub fn review_and_rank(
    committee: &dyn Committee,
    bundle: &IssueBundle,
) -> anyhow::Result<Vec<Ranked>> {
    let reviews = committee.review(bundle)?;
    if reviews.len() != bundle.candidates.len() {
        bail!(
            "committee {} returned {} reviews for {} candidates",
            committee.name(),
            reviews.len(),
            bundle.candidates.len()
        );
    }
    Ok(select::rank(&reviews)
        .into_iter()
        .map(|p| {
            let prep = &bundle.candidates[p.index];
            Ranked {
                rank: p.rank,
                tied: p.tied,
                agent: prep.candidate.agent.clone(),
                instance_id: prep.candidate.instance_id.clone(),
                score: reviews[p.index].value(),
                status: reviews[p.index].status(),
                applies: prep.view.applies,
                apply_failure: patch::failure_label(&prep.view),
                files: prep.view.paths().into_iter().map(String::from).collect(),
                reason: reviews[p.index].reason.clone(),
                resolved: prep.candidate.resolved,
                review: reviews[p.index].clone(),
                edited: prep.context.edited.clone(),
                origin: prep.candidate.origin.to_string(),
                patch: prep.candidate.patch.clone(),
                error: prep.view.error.clone().or_else(|| {
                    prep.view
                        .files
                        .iter()
                        .find_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.path)))
                }),
                behaviour: bundle.behaviour.get(p.index).cloned().flatten(),
            }
        })
        .collect())
}

/// Run `dei rank` for one issue.
pub fn rank(req: &RankRequest, committee: &dyn Committee) -> anyhow::Result<RankResult> {
    let task = load_task(req)?;
    let loaded = candidates::load_named(&req.candidates, &req.naming)?;
    let cands = loaded.for_issue(&task.instance_id);
    if cands.is_empty() {
        bail!("{}", loaded.nothing_for(&task.instance_id, &req.candidates));
    }
    let repo_path = repo::find_repo(req.repo.as_deref(), req.repos.as_deref(), &task.repo)?;
    let mode = if req.strict {
        Mode::Strict
    } else {
        Mode::Tolerant
    };
    rank_issue(
        &task,
        cands,
        &repo_path,
        PrepareOptions {
            mode,
            context_tokens: req.context_tokens,
            max_patch_bytes: req.max_patch_bytes,
        },
        Judges {
            committee,
            relocator: req.relocator.as_deref(),
            exec: req.exec.as_deref(),
        },
        loaded.problems,
    )
}

/// Who looks at an issue's candidates: the committee, the model that re-ranks localization
/// (`--llm-locate`), and the sandbox runs (`--exec`).
#[derive(Clone, Copy)]
pub struct Judges<'a> {
    pub committee: &'a dyn Committee,
    pub relocator: Option<&'a Relocator>,
    pub exec: Option<&'a ExecSettings>,
}

/// How candidates are rebuilt and given context.
#[derive(Debug, Clone, Copy)]
pub struct PrepareOptions {
    pub mode: Mode,
    pub context_tokens: usize,
    pub max_patch_bytes: usize,
}

/// Rank one issue's candidates against the repository at `repo_path` (the per-issue step of
/// [`rank`], also used by the multi-issue runner in [`crate::rank::run`]).
pub fn rank_issue(
    task: &Task,
    cands: Vec<Candidate>,
    repo_path: &std::path::Path,
    opts: PrepareOptions,
    judges: Judges,
    problems: Vec<Problem>,
) -> anyhow::Result<RankResult> {
    let Judges {
        committee,
        relocator,
        exec,
    } = judges;
    let snapshot = Snapshot::open(repo_path, &task.base_commit)?;
    let files = FileIndex::from_snapshot(&snapshot)?;
    let prepared = prepare_capped(
        &snapshot,
        &files,
        task,
        cands,
        opts,
        Some(committee),
        relocator,
    )?;
    // A model that writes the reproduction test under --dry-run writes none: the ranking is
    // a dry run's, whatever the committee (an offline one ranks without the test).
    let writer_dry_run = exec
        .and_then(|s| s.model_test.as_ref())
        .is_some_and(|w| w.dry_run());
    let exec = match exec {
        Some(settings) => {
            let members: Vec<(&str, &crate::model::PatchView)> = prepared
                .iter()
                .map(|p| (p.candidate.agent.as_str(), &p.view))
                .collect();
            Some(gather(task, repo_path, &files, &members, settings))
        }
        None => None,
    };
    let empty = prepared
        .iter()
        .filter(|p| p.view.applies == Applies::Empty)
        .count();
    let bundle = IssueBundle {
        task: task.clone(),
        candidates: prepared,
        behaviour: exec
            .as_ref()
            .map(|e| e.behaviour.clone())
            .unwrap_or_default(),
        repro_by_agent: exec.as_ref().is_some_and(|e| e.repro_from.is_some()),
        repro_code: exec.as_ref().and_then(|e| e.repro_code.clone()),
        repro_output: exec.as_ref().and_then(|e| e.repro_output.clone()),
        model_tests_kept: exec.as_ref().map_or(0, |e| e.model_tests_kept()),
        tests_in_part: exec.as_ref().map(|e| e.tests_in_part()).unwrap_or_default(),
    };
    let ranked = review_and_rank(committee, &bundle)?;
    let unscored = ranked
        .iter()
        .filter(|r| r.status == ReviewStatus::Unscored)
        .count();
    let status = if committee.dry_run() || writer_dry_run {
        IssueStatus::DryRun
    } else if unscored > 0 {
        IssueStatus::Unreviewed
    } else {
        IssueStatus::Ranked
    };
    let mut result = RankResult {
        instance_id: task.instance_id.clone(),
        repo: task.repo.clone(),
        base_commit: snapshot.commit.clone(),
        committee: committee.name(),
        candidates: bundle.candidates.len(),
        empty,
        status,
        unscored,
        ranked,
        problems,
        exec,
        pick_basis: None,
    };
    result.pick_basis = result.basis();
    Ok(result)
}
