//! Stage 5: the committee that reviews every candidate of an issue.
//!
//! A [`Committee`] reads an [`IssueBundle`] (the task and every prepared candidate, so
//! members can compare candidates) and writes one [`Review`] per candidate. The embedded
//! default is the [`offline`] committee; the LLM committee speaks to real model servers.

pub mod llm;
pub mod offline;
pub mod prompts;
pub mod rubric;

use crate::model::{Applies, Behaviour, Candidate, Context, PatchView, Review, Task};

/// Why a candidate is scored 1 by rule instead of reviewed; every committee asks here, so
/// they agree on what is no fix: an empty patch, one that does not apply at the base commit
/// (or could not be read), and one that touches no library code (only tests, docs, examples
/// or scripts, or files it creates at the repository's root).
pub fn by_rule(candidate: &Candidate, view: &PatchView) -> Option<String> {
    if candidate.is_empty() || view.applies == Applies::Empty {
        return Some("no patch".into());
    }
    if view.applies == Applies::No {
        let why = view
            .error
            .clone()
            .or_else(|| view.files.iter().find_map(|f| f.error.clone()))
            .unwrap_or_else(|| "some hunk does not apply".into());
        return Some(format!("does not apply at the base commit: {why}"));
    }
    let library = view
        .files
        .iter()
        .any(|f| crate::model::paths::is_library_file(&f.path, f.before.is_none()));
    (!library).then(|| {
        let paths: Vec<&str> = view.files.iter().map(|f| f.path.as_str()).take(3).collect();
        format!(
            "touches no library code (only {}{}): not a fix",
            paths.join(", "),
            if view.files.len() > 3 { ", …" } else { "" }
        )
    })
}

/// A candidate with its rebuilt code and context: everything a reviewer needs.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub candidate: Candidate,
    pub view: PatchView,
    pub context: Context,
}

/// One issue with all of its candidates.
#[derive(Debug, Clone)]
pub struct IssueBundle {
    pub task: Task,
    pub candidates: Vec<Prepared>,
    /// What running each candidate showed, in candidate order; empty without `--exec`.
    pub behaviour: Vec<Option<Behaviour>>,
    /// The reproduction that ran is an agent's script, not the issue's code (see
    /// [`crate::exec::gather::IssueExec::repro_from`]).
    pub repro_by_agent: bool,
    /// The reproduction's code and what it printed at the base commit (see
    /// [`crate::exec::gather::IssueExec::repro_code`] and `repro_output`); `None` without
    /// `--exec`, or when none ran.
    pub repro_code: Option<String>,
    pub repro_output: Option<String>,
    /// Model-written reproduction tests kept for the issue (`--exec-llm-repro`); with more
    /// than one, a candidate's `model_test` is the verdict most of them print.
    pub model_tests_kept: usize,
    /// Test files that ran in part or not at all to keep within the time limits (see
    /// [`crate::exec::gather::IssueExec::tests_in_part`]); empty without `--exec`.
    pub tests_in_part: Vec<String>,
}

/// Anything that can score the candidates of an issue.
pub trait Committee: Send + Sync {
    /// Short name shown in reports and stored with each review.
    fn name(&self) -> String;
    /// One review per candidate, in the bundle's order.
    fn review(&self, bundle: &IssueBundle) -> anyhow::Result<Vec<Review>>;
    /// Reviews for many issues at once (one result per bundle, in order). Committees that
    /// can overlap work across issues (the LLM committee) override this.
    fn review_many(&self, bundles: &[IssueBundle]) -> Vec<anyhow::Result<Vec<Review>>> {
        bundles.iter().map(|b| self.review(b)).collect()
    }
    /// How many issues a multi-issue run should have in review at once; `None` means one per
    /// CPU. Committees that wait on the network (whose limits are shared across issues) ask for more.
    fn issues_in_flight(&self) -> Option<usize> {
        None
    }
    /// A short live status for progress bars (calls in flight, cost so far); `None` when the
    /// committee has nothing to show.
    fn live_status(&self) -> Option<String> {
        None
    }
    /// Everything that changes the committee's scores, as one line (name, weights, model
    /// settings, prompt and rubric digests). A run directory records it: resuming or merging
    /// runs whose settings differ is refused.
    fn settings(&self) -> String {
        self.name()
    }
    /// True when the committee only prints what it would ask (`--dry-run`): its reviews are
    /// all unscored, and that is not a failure.
    fn dry_run(&self) -> bool {
        false
    }
    /// Whether reviewers read the candidates' context snippets (the LLM committee does; the
    /// offline committee does not). Only then is the issue-only localization computed for the
    /// context: it tokenizes the whole repository (about 2 s and 120 MB on sympy, cold).
    fn reads_context(&self) -> bool {
        false
    }
    /// `score` (one this committee gave) with an agent's execution record over a multi-issue
    /// run added: `record` is the agent's share on the run's other issues (`rank::run::record`)
    /// minus the mean over agents. `None` when the committee takes no such record (the LLM
    /// committee: a model's score is not a sum of parts).
    fn with_exec_record(
        &self,
        _score: &crate::model::Score,
        _record: f64,
    ) -> Option<crate::model::Score> {
        None
    }
    /// Whether [`Committee::with_exec_record`] gives scores.
    fn takes_exec_record(&self) -> bool {
        false
    }
    /// Whether, over such a run, the candidates that ran healthy rank first, in the order of
    /// their agents' records (`rank::select::rank_in_tiers`).
    fn exec_record_orders(&self) -> bool {
        false
    }
    /// Whether the record counts only healthy runs that change what the issue shows, over the
    /// issues where some candidate changes it (else every healthy run, over every issue run).
    fn exec_record_fixes(&self) -> bool {
        false
    }
    /// The kinds of execution evidence the committee counts: what ran healthy over a run (the
    /// record, the order of the healthy) reads only these.
    fn exec_counted(&self) -> crate::model::Counted {
        crate::model::Counted::ALL
    }
}
