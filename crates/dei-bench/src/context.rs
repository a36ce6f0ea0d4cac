//! `dei-bench context`: measure issue-only localization and candidate context on SWE-bench
//! Lite tasks whose repositories are available.
//!
//! Definitions (per instance; instances whose repository is missing are skipped and counted):
//! - *gold files*: the files the gold patch edits; *gold functions*: the innermost function or
//!   class around each line the gold patch edits (module-level edits are not functions).
//! - file top-5 **any**: at least one gold file is among the 5 best files of [`locate`];
//!   file top-5 **all**: every gold file is. Function top-10 any/all likewise over the 10 best
//!   functions, counted over the instances with at least one gold function.
//! - Context size: `Context::tokens` of every candidate in `lite_candidates.jsonl`, built with
//!   [`build_with`] (other candidates and the repository as related input).
//! - Time: the second (warm-cache) build of every candidate context, per candidate.
//!
//! Instances are split in halves by [`crate::split`] (the first byte of SHA-256(instance_id):
//! even = `tune`, odd = `report`).

pub use crate::split::{half, Split};
use dei::context::{build_with, edited_units, Related};
use dei::llm::model::Model;
use dei::localize::issue::IssueRefs;
use dei::localize::search::{
    dot, file_signals, function_signals, locate, locate_files, FileIndex, FileSignals, FuncHit,
    Localization, LocateOptions, Weights, FUNCTION_SIGNALS,
};
use dei::model::repo::{self, Snapshot};
use dei::model::task;
use dei::model::{Candidate, PatchView, SnippetKind, Task};
use dei::patch::{self, Mode};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub tasks: PathBuf,
    /// Folder of repositories (`owner+name/repo`, `owner__name`, ...).
    pub repos: PathBuf,
    /// Candidate pool (`lite_candidates.jsonl`); `None` skips the context measurements.
    pub candidates: Option<PathBuf>,
    pub split: Split,
    pub limit: Option<usize>,
    pub budget: usize,
    pub locate: LocateOptions,
    /// Past commits read for the history signal (0: none).
    pub history: usize,
    /// More tasks to fit on besides the tune half (SWE-bench Verified, say); those whose
    /// instance id is in `tasks` are left out, so nothing of the report half is fitted on.
    pub fit_tasks: Vec<PathBuf>,
    /// While fitting, write each fit instance's file signals here (JSONL: the 100 best files
    /// under the starting weights and every gold file), for studying new signals offline.
    pub dump_signals: Option<PathBuf>,
    /// Build each candidate's context as if it were the issue's only one (no other
    /// candidates' spans): the case of a single candidate.
    pub alone: bool,
}

/// Per-instance outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InstanceResult {
    pub instance_id: String,
    pub gold_files: Vec<String>,
    pub gold_functions: Vec<String>,
    pub top_files: Vec<String>,
    /// The 10 best functions, `path::Qualified.name`.
    pub top_functions: Vec<String>,
    pub file_any5: bool,
    pub file_all5: bool,
    pub fn_any10: Option<bool>,
    pub fn_all10: Option<bool>,
    /// 1-based rank of the best-ranked gold file among the located files (up to 100).
    pub gold_file_rank: Option<usize>,
    /// 1-based rank of the first located function that is a gold function or a function
    /// enclosing one (`tree_cse` for a gold `tree_cse._find_repeated`).
    pub gold_fn_rank: Option<usize>,
    pub locate_ms: f64,
    /// Why re-ranking kept the search order, when it did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rerank_notes: Vec<String>,
}

/// Recall figures over a set of instances (percentages; MRR in 0..1).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Recall {
    pub instances: usize,
    pub file_any5: f64,
    pub file_all5: f64,
    pub fn_instances: usize,
    pub fn_any10: f64,
    pub fn_all10: f64,
    /// Function top-10 where a located function enclosing a gold (nested) function counts.
    pub fn_enclosing10: f64,
    /// Mean reciprocal rank of the best gold file (0 beyond rank 100).
    pub file_mrr: f64,
}

impl Recall {
    /// Two lines of text, each starting with `lead`: file top-5, then function top-10.
    pub fn lines(&self, lead: &str) -> String {
        format!(
            "{lead}file top-5: any gold file {:.2}%  all gold files {:.2}%  (MRR {:.3})\n\
             {lead}function top-10 ({} instances with a gold function): any {:.2}%  all {:.2}%  \
             any, counting an enclosing function {:.2}%\n",
            self.file_any5,
            self.file_all5,
            self.file_mrr,
            self.fn_instances,
            self.fn_any10,
            self.fn_all10,
            self.fn_enclosing10
        )
    }

    pub fn of(results: &[InstanceResult]) -> Recall {
        let n = results.len();
        let count = |f: &dyn Fn(&InstanceResult) -> bool| results.iter().filter(|r| f(r)).count();
        let with_fn: Vec<&InstanceResult> =
            results.iter().filter(|r| r.fn_any10.is_some()).collect();
        let fn_n = with_fn.len();
        let fn_count =
            |f: &dyn Fn(&InstanceResult) -> bool| with_fn.iter().filter(|r| f(r)).count();
        Recall {
            instances: n,
            file_any5: pct(count(&|r| r.file_any5), n),
            file_all5: pct(count(&|r| r.file_all5), n),
            fn_instances: fn_n,
            fn_any10: pct(fn_count(&|r| r.fn_any10 == Some(true)), fn_n),
            fn_all10: pct(fn_count(&|r| r.fn_all10 == Some(true)), fn_n),
            fn_enclosing10: pct(fn_count(&|r| r.gold_fn_rank.is_some_and(|k| k <= 10)), fn_n),
            file_mrr: if n > 0 {
                results
                    .iter()
                    .map(|r| r.gold_file_rank.map_or(0.0, |k| 1.0 / k as f64))
                    .sum::<f64>()
                    / n as f64
            } else {
                0.0
            },
        }
    }
}

/// Who re-ranks: a real model, or the gold patch itself.
pub enum Reranker<'a> {
    Model(&'a dyn Model),
    /// A stand-in that names exactly the gold files and definitions it is shown, nothing
    /// else: the most re-ranking can gain with these shortlists and outlines (a ceiling, not a
    /// model's figure).
    Oracle,
}

/// A model that re-ranks the localization during [`run_with`] ([`dei::localize::rerank`]).
pub struct Rerank<'a> {
    pub model: Reranker<'a>,
    pub prompts: &'a dei::llm::prompts::Prompts,
    pub options: dei::localize::rerank::RerankOptions,
    /// Shown in the report (`openai:gpt-4o`, say).
    pub label: String,
    /// Issues evaluated at once.
    pub jobs: usize,
}

/// What re-ranking did, next to the figures without it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RerankSummary {
    pub model: String,
    /// The same instances ranked by the search alone.
    pub lexical: Recall,
    /// Instances where the model named a shown file / an existing definition.
    pub files_named: usize,
    pub functions_named: usize,
    /// Instances where a step kept the search order (failed call, reply naming nothing).
    pub kept_order: usize,
    pub mean_rerank_ms: f64,
    /// Per instance, ranked by the search alone.
    pub lexical_per_instance: Vec<InstanceResult>,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct EvalReport {
    pub split: String,
    pub skipped_no_repo: HashMap<String, usize>,
    /// The figures (of the re-ranked localization when a model re-ranked it).
    #[serde(flatten)]
    pub recall: Recall,
    pub mean_locate_ms: f64,
    pub candidates: usize,
    pub mean_context_tokens: f64,
    pub max_context_tokens: usize,
    pub cold_ms_per_candidate: f64,
    pub warm_ms_per_candidate: f64,
    /// Candidates that edit no gold function (the wrong place, or module-level code only).
    pub elsewhere_candidates: usize,
    /// Of those, how many contexts show a gold function (or one enclosing it) for any reason.
    pub elsewhere_shown_gold: usize,
    /// Of those, how many show it only because the issue-only localization points there.
    pub elsewhere_shown_gold_by_location: usize,
    /// Present when a model re-ranked the localization (the figures above are then its).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankSummary>,
    pub per_instance: Vec<InstanceResult>,
}

fn rebuild_all(snap: &Snapshot, cands: &[Candidate]) -> anyhow::Result<Vec<PatchView>> {
    let needed: Vec<String> = cands.iter().flat_map(patch::paths_needed).collect();
    let base = snap.read_all(needed.iter().map(String::as_str))?;
    Ok(cands
        .iter()
        .map(|c| patch::rebuild(c, &base, Mode::Tolerant))
        .collect())
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// Run the evaluation; `progress` receives one line per instance.
pub fn run(opts: &EvalOptions, progress: impl FnMut(&str) + Send) -> anyhow::Result<EvalReport> {
    run_with(opts, None, progress)
}

/// [`run`], with the localization re-ranked by a model when `rerank` is given; the report then
/// carries both the re-ranked figures and those of the search alone. With a model, `jobs`
/// issues are evaluated at once (the calls wait on the network); without, one at a time, so
/// that build times are not skewed by sharing the CPU.
pub fn run_with(
    opts: &EvalOptions,
    rerank: Option<&Rerank>,
    progress: impl FnMut(&str) + Send,
) -> anyhow::Result<EvalReport> {
    let tasks: Vec<Task> = crate::data::load_tasks(&opts.tasks)?;
    let pool = match &opts.candidates {
        Some(p) => crate::data::load_candidates(p)?,
        None => HashMap::new(),
    };
    let mut rep = EvalReport {
        split: format!("{:?}", opts.split).to_lowercase(),
        ..EvalReport::default()
    };
    // The instances to evaluate, in order.
    let mut chosen: Vec<(&Task, PathBuf)> = Vec::new();
    for t in &tasks {
        if !opts.split.contains(&t.instance_id) {
            continue;
        }
        if opts.limit.is_some_and(|l| chosen.len() >= l) {
            break;
        }
        match repo::find_in_repos_dir(&opts.repos, &t.repo) {
            Some(p) => chosen.push((t, p)),
            None => *rep.skipped_no_repo.entry(t.repo.clone()).or_insert(0) += 1,
        }
    }
    let progress = std::sync::Mutex::new(progress);
    let lopts = ranking_options(opts);
    let one = |(t, path): &(&Task, PathBuf)| -> anyhow::Result<One> {
        let o = evaluate(t, path, opts, &lopts, rerank, pool.get(&t.instance_id))?;
        (progress.lock().expect("progress lock"))(&o.line);
        Ok(o)
    };
    let jobs = rerank.map_or(1, |r| r.jobs.max(1));
    let done: Vec<anyhow::Result<One>> = if jobs > 1 {
        use rayon::prelude::*;
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build()?
            .install(|| chosen.par_iter().map(one).collect())
    } else {
        chosen.iter().map(one).collect()
    };
    let mut summary = rerank.map(|r| RerankSummary {
        model: r.label.clone(),
        ..RerankSummary::default()
    });
    let (mut tok_sum, mut cold_ms, mut warm_ms, mut locate_ms, mut rerank_ms) =
        (0usize, 0.0, 0.0, 0.0, 0.0);
    for o in done {
        let o = o?;
        locate_ms += o.result.locate_ms;
        tok_sum += o.tokens;
        cold_ms += o.cold_ms;
        warm_ms += o.warm_ms;
        rep.candidates += o.candidates;
        rep.max_context_tokens = rep.max_context_tokens.max(o.max_tokens);
        rep.elsewhere_candidates += o.elsewhere[0];
        rep.elsewhere_shown_gold += o.elsewhere[1];
        rep.elsewhere_shown_gold_by_location += o.elsewhere[2];
        if let (Some(sum), Some((lexical, named))) = (summary.as_mut(), o.rerank) {
            sum.lexical_per_instance.push(lexical);
            sum.files_named += named[0];
            sum.functions_named += named[1];
            sum.kept_order += named[2];
            rerank_ms += o.rerank_ms;
        }
        rep.per_instance.push(o.result);
    }
    rep.recall = Recall::of(&rep.per_instance);
    let n = rep.per_instance.len();
    if n > 0 {
        rep.mean_locate_ms = locate_ms / n as f64;
    }
    if let Some(sum) = summary.as_mut() {
        sum.lexical = Recall::of(&sum.lexical_per_instance);
        if n > 0 {
            sum.mean_rerank_ms = rerank_ms / n as f64;
        }
    }
    rep.rerank = summary;
    if rep.candidates > 0 {
        rep.mean_context_tokens = tok_sum as f64 / rep.candidates as f64;
        rep.cold_ms_per_candidate = cold_ms / rep.candidates as f64;
        rep.warm_ms_per_candidate = warm_ms / rep.candidates as f64;
    }
    Ok(rep)
}

/// The locate options of an evaluation: the given ones, ranking at least 100 files (ranks
/// are reported up to 100).
fn ranking_options(opts: &EvalOptions) -> LocateOptions {
    let mut lopts = opts.locate.clone();
    lopts.top_files = lopts.top_files.max(100);
    lopts
}

/// What one instance contributes to the report.
struct One {
    result: InstanceResult,
    /// With re-ranking: the search-only result, and whether the model named a file, named a
    /// definition, and kept the search order in a step (0 or 1 each).
    rerank: Option<(InstanceResult, [usize; 3])>,
    rerank_ms: f64,
    candidates: usize,
    tokens: usize,
    max_tokens: usize,
    cold_ms: f64,
    warm_ms: f64,
    /// Candidates editing no gold function; of those, shown one; shown one only by location.
    elsewhere: [usize; 3],
    line: String,
}

/// Localize one issue (and re-rank), then build its candidates' contexts.
fn evaluate(
    t: &Task,
    repo_path: &std::path::Path,
    opts: &EvalOptions,
    lopts: &LocateOptions,
    rerank: Option<&Rerank>,
    cands: Option<&Vec<Candidate>>,
) -> anyhow::Result<One> {
    let snap = Snapshot::open(repo_path, &t.base_commit)?;
    let Prepared {
        files,
        gold_files,
        gold_fns,
        ..
    } = prepare(&snap, t, opts.history)?;
    // Issue-only localization.
    let t0 = Instant::now();
    let mut loc = locate(&t.problem_statement, &files, lopts);
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut notes = Vec::new();
    let (mut reranked, mut rerank_ms) = (None, 0.0);
    if let Some(r) = rerank {
        let lexical = score(&t.instance_id, &loc, &gold_files, &gold_fns, ms);
        let t1 = Instant::now();
        let oracle = Oracle {
            gold_files: &gold_files,
            gold_fns: &gold_fns,
        };
        let model: &dyn Model = match &r.model {
            Reranker::Model(m) => *m,
            Reranker::Oracle => &oracle,
        };
        let rr = dei::localize::rerank::rerank(
            &t.problem_statement,
            &files,
            &loc,
            model,
            r.prompts,
            &r.options,
        )?;
        rerank_ms = t1.elapsed().as_secs_f64() * 1e3;
        let named = [
            (rr.files_named > 0) as usize,
            (rr.functions_named > 0) as usize,
            (!rr.notes.is_empty()) as usize,
        ];
        reranked = Some((lexical, named));
        loc = rr.localization;
        notes = rr.notes;
    }
    let mut result = score(&t.instance_id, &loc, &gold_files, &gold_fns, ms);
    result.rerank_notes = notes;
    let mut o = One {
        result,
        rerank: reranked,
        rerank_ms,
        candidates: 0,
        tokens: 0,
        max_tokens: 0,
        cold_ms: 0.0,
        warm_ms: 0.0,
        elsewhere: [0; 3],
        line: String::new(),
    };
    // Candidate contexts.
    if let Some(cands) = cands {
        let views = rebuild_all(&snap, cands)?;
        let refs = IssueRefs::new(&t.problem_statement);
        let others: Vec<&PatchView> = if opts.alone {
            Vec::new()
        } else {
            views.iter().collect()
        };
        let rel = Related {
            refs: Some(&refs),
            others: &others,
            repo: Some(&files),
            located: Some(&loc),
            located_by: None,
        };
        let t1 = Instant::now();
        for v in &views {
            let _ = build_with(v, t, opts.budget, &rel);
        }
        o.cold_ms = t1.elapsed().as_secs_f64() * 1e3;
        let t2 = Instant::now();
        let ctxs: Vec<_> = views
            .iter()
            .map(|v| build_with(v, t, opts.budget, &rel))
            .collect();
        o.warm_ms = t2.elapsed().as_secs_f64() * 1e3;
        for c in &ctxs {
            o.tokens += c.tokens;
            o.max_tokens = o.max_tokens.max(c.tokens);
            if gold_fns.is_empty() || c.edited.iter().any(|e| gold_fns.contains(e)) {
                continue;
            }
            o.elsewhere[0] += 1;
            let gold: Vec<&str> = c
                .snippets
                .iter()
                .filter(|s| {
                    !s.after
                        && is_gold_function(&format!("{}::{}", s.path, s.name), s.kind, &gold_fns)
                })
                .map(|s| s.reason.as_str())
                .collect();
            if !gold.is_empty() {
                o.elsewhere[1] += 1;
                if gold.iter().all(|r| only_located(r)) {
                    o.elsewhere[2] += 1;
                }
            }
        }
        o.candidates = ctxs.len();
    }
    let r = &o.result;
    o.line = format!(
        "{:<32} files {}/{} any5={} all5={} fn={} locate {:.0} ms, {} candidates{}",
        t.instance_id,
        r.gold_files
            .iter()
            .filter(|g| r.top_files.contains(g))
            .count(),
        r.gold_files.len(),
        r.file_any5 as u8,
        r.file_all5 as u8,
        r.fn_any10
            .map(|b| (b as u8).to_string())
            .unwrap_or("-".into()),
        ms,
        o.candidates,
        r.rerank_notes
            .iter()
            .map(|n| format!("\n    re-rank: {n}"))
            .collect::<String>()
    );
    Ok(o)
}

/// [`Reranker::Oracle`] for one instance: answers the files prompt (the built-in one, with its
/// `## Candidate files`) with the gold files listed in it (`### path`), and the definitions prompt with the gold definitions whose `def`/`class`
/// line appears in their file's outline.
struct Oracle<'a> {
    gold_files: &'a [String],
    gold_fns: &'a [String],
}

impl Model for Oracle<'_> {
    fn complete(&self, _system: &str, prompt: &str, _t: f64) -> anyhow::Result<String> {
        let mut reply = String::new();
        if prompt.contains("## Candidate files") {
            for g in self.gold_files {
                if prompt.contains(&format!("\n### {g}\n")) {
                    reply.push_str(&format!("{g}\n"));
                }
            }
            return Ok(reply);
        }
        for g in self.gold_fns {
            let Some((path, name)) = g.split_once("::") else {
                continue;
            };
            let Some(start) = prompt.find(&format!("\n{path} (")) else {
                continue;
            };
            let section = &prompt[start + 1..];
            let end = section[1..].find("\n\n").map_or(section.len(), |e| e + 1);
            let short = name.rsplit('.').next().unwrap_or(name);
            let shown = section[..end].lines().any(|l| {
                let l = l.trim_start();
                l.starts_with(&format!("def {short}("))
                    || l.starts_with(&format!("async def {short}("))
                    || l.starts_with(&format!("class {short}("))
                    || l.starts_with(&format!("class {short}:"))
            });
            if shown {
                reply.push_str(&format!("{g}\n"));
            }
        }
        Ok(reply)
    }
}

/// One instance's figures for a localization.
fn score(
    instance_id: &str,
    loc: &Localization,
    gold_files: &[String],
    gold_fns: &[String],
    locate_ms: f64,
) -> InstanceResult {
    let top5: Vec<String> = loc.files.iter().take(5).map(|f| f.path.clone()).collect();
    let top10: Vec<String> = loc
        .functions
        .iter()
        .take(10)
        .map(|f| format!("{}::{}", f.path, f.name))
        .collect();
    let file_any5 = gold_files.iter().any(|g| top5.contains(g));
    let file_all5 = !gold_files.is_empty() && gold_files.iter().all(|g| top5.contains(g));
    let (fn_any10, fn_all10) = if gold_fns.is_empty() {
        (None, None)
    } else {
        (
            Some(gold_fns.iter().any(|g| top10.contains(g))),
            Some(gold_fns.iter().all(|g| top10.contains(g))),
        )
    };
    InstanceResult {
        instance_id: instance_id.to_string(),
        gold_files: gold_files.to_vec(),
        gold_functions: gold_fns.to_vec(),
        top_files: top5,
        top_functions: top10,
        file_any5,
        file_all5,
        fn_any10,
        fn_all10,
        gold_file_rank: gold_file_rank(loc, gold_files),
        gold_fn_rank: gold_function_rank(loc, gold_fns),
        locate_ms,
        rerank_notes: Vec::new(),
    }
}

/// The report as a few lines of text.
pub fn summary(r: &EvalReport) -> String {
    let skipped: Vec<String> = r
        .skipped_no_repo
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let mut out = format!(
        "split {}: {} instances (skipped, no repository: {})\n{}\
         locate: {:.1} ms per issue\n\
         candidate contexts: {} candidates, mean {:.0} tokens (max {}), build {:.2} ms cold, {:.2} ms warm per candidate\n\
         candidates that edit no gold function: {}; their context shows a gold function for {} ({} of them only through the issue-only localization)\n",
        r.split,
        r.recall.instances,
        if skipped.is_empty() { "none".into() } else { skipped.join(", ") },
        r.recall.lines("issue-only "),
        r.mean_locate_ms,
        r.candidates,
        r.mean_context_tokens,
        r.max_context_tokens,
        r.cold_ms_per_candidate,
        r.warm_ms_per_candidate,
        r.elsewhere_candidates,
        r.elsewhere_shown_gold,
        r.elsewhere_shown_gold_by_location
    );
    if let Some(s) = &r.rerank {
        out.push_str(&format!(
            "re-ranked by {}: the model named a shown file for {} of {} issues and a definition for {}; \
             {} kept the search order in a step ({:.0} ms per issue)\n{}",
            s.model,
            s.files_named,
            r.recall.instances,
            s.functions_named,
            s.kept_order,
            s.mean_rerank_ms,
            s.lexical.lines("without re-ranking, issue-only ")
        ));
    }
    out
}

/// One instance, prepared once: its repository files (with `history` past commits) and gold.
struct Prepared {
    issue: String,
    files: FileIndex,
    /// Files the gold patch edits.
    gold_files: Vec<String>,
    /// `path::Qualified.name` of the innermost definition around each gold edit.
    gold_fns: Vec<String>,
}

fn prepare(snap: &Snapshot, t: &Task, history: usize) -> anyhow::Result<Prepared> {
    let files = FileIndex::from_snapshot(snap)?.with_history(snap.history(history)?);
    let gold = Candidate {
        instance_id: t.instance_id.clone(),
        agent: "gold".into(),
        patch: t.gold_patch.clone().unwrap_or_default(),
        resolved: Some(true),
        origin: Default::default(),
    };
    let gview = &rebuild_all(snap, std::slice::from_ref(&gold))?[0];
    Ok(Prepared {
        issue: t.problem_statement.clone(),
        files,
        gold_files: gview.paths().into_iter().map(String::from).collect(),
        gold_fns: edited_units(gview)
            .into_iter()
            .filter(|(_, n, _)| !n.is_empty() && n != "<module>")
            .map(|(p, n, _)| format!("{p}::{n}"))
            .collect(),
    })
}

/// Rank (1-based) of the first located file the gold patch edits.
fn gold_file_rank(loc: &Localization, gold_files: &[String]) -> Option<usize> {
    loc.files
        .iter()
        .position(|f| gold_files.contains(&f.path))
        .map(|r| r + 1)
}

/// Rank (1-based) of the first located function that is a gold function or encloses one.
fn gold_function_rank(loc: &Localization, gold_fns: &[String]) -> Option<usize> {
    loc.functions
        .iter()
        .position(|f| is_gold_hit(f, gold_fns))
        .map(|r| r + 1)
}

/// A gold function, or a function enclosing one (`tree_cse` for `tree_cse._find_repeated`);
/// `q` is `path::Qualified.name`.
fn is_gold_function(q: &str, kind: SnippetKind, gold_fns: &[String]) -> bool {
    gold_fns.iter().any(|g| {
        g == q
            || (kind == SnippetKind::Function
                && g.strip_prefix(q).is_some_and(|r| r.starts_with('.')))
    })
}

fn is_gold_hit(f: &FuncHit, gold_fns: &[String]) -> bool {
    is_gold_function(&format!("{}::{}", f.path, f.name), f.kind, gold_fns)
}

/// Whether a snippet's reason says only the localization put it there (see
/// [`dei::context::build_with`]): `issue-only localization ranks it #k` (perhaps naming the model that
/// re-ranked it), with no other reason joined.
fn only_located(reason: &str) -> bool {
    reason.starts_with("issue-only localization ranks it #") && !reason.contains(';')
}

/// One fitting instance's file evidence: the signals of every file, and the gold files.
struct FileFit {
    signals: FileSignals,
    /// Each file's place in path order (ties in score go to the earlier path).
    tie: Vec<u32>,
    gold: Vec<usize>,
}

/// One fitting instance's function evidence (files fixed): the signals of the definitions of
/// the best files, in (path, line) order, and which are a gold function or enclose one.
struct FnFit {
    x: Vec<[f64; FUNCTION_SIGNALS]>,
    gold: Vec<bool>,
}

/// 1-based rank of the best gold item when items are ordered by score (descending, ties to
/// the smaller `tie`); `None` past rank 100.
fn best_gold_rank(score: &[f64], tie: impl Fn(usize) -> u32, gold: &[usize]) -> Option<usize> {
    gold.iter()
        .map(|&g| {
            let (sg, tg) = (score[g], tie(g));
            1 + score
                .iter()
                .enumerate()
                .filter(|&(j, &sj)| sj > sg || (sj == sg && tie(j) < tg))
                .count()
        })
        .min()
        .filter(|&r| r <= 100)
}

/// [`best_gold_rank`] of a file: files scoring 0 or less are never ranked (as in
/// `dei::localize::search::rank_files`).
fn best_gold_file_rank(score: &[f64], tie: &[u32], gold: &[usize]) -> Option<usize> {
    let ranked: Vec<usize> = gold.iter().copied().filter(|&g| score[g] > 0.0).collect();
    best_gold_rank(score, |j| tie[j], &ranked)
}

fn file_objective(fits: &[FileFit], w: &Weights) -> f64 {
    let wv = w.file_vector();
    fits.iter()
        .map(|f| {
            let score = f.signals.scores(&wv, w.test_factor);
            let r = best_gold_file_rank(&score, &f.tie, &f.gold);
            r.map_or(0.0, |r| (r <= 5) as u8 as f64 + 0.5 / r as f64)
        })
        .sum()
}

fn function_objective(fits: &[FnFit], w: &Weights) -> f64 {
    let wv = w.function_vector();
    fits.iter()
        .map(|f| {
            // Every definition is ranked, whatever its score (as in `rank_functions`).
            let score: Vec<f64> = f.x.iter().map(|x| dot(x, &wv)).collect();
            let gold: Vec<usize> = (0..f.gold.len()).filter(|&i| f.gold[i]).collect();
            let r = best_gold_rank(&score, |j| j as u32, &gold);
            r.map_or(0.0, |r| (r <= 10) as u8 as f64 + 0.5 / r as f64)
        })
        .sum()
}

/// Least rise of the objective a move must bring to be kept: a twentieth of an instance. Moves
/// that only reshuffle ranks far down (or tie) would otherwise drift weights, such as a
/// traceback frame's, that the fit set has no evidence about.
const MIN_GAIN: f64 = 0.05;

/// Coordinate search over the named weights: each in turn is scaled by 0, ¼, ½, ¾, 1½, 2 and
/// 4 (a zero weight tries ±⅛ to ±1 and 2), kept when the objective rises by [`MIN_GAIN`] or
/// more; rounds until none does (at most 8).
fn coordinate_search(
    start: &Weights,
    names: &[&str],
    objective: impl Fn(&Weights) -> f64,
    progress: &mut impl FnMut(&str),
) -> anyhow::Result<Weights> {
    let mut current = serde_json::to_value(start)?;
    let mut best = start.clone();
    let mut best_score = objective(&best);
    progress(&format!("start: objective {best_score:.2}"));
    for round in 0..8 {
        let mut improved = false;
        for &name in names {
            let v0 = current[name].as_f64().unwrap_or(0.0);
            let tries: Vec<f64> = if v0 == 0.0 {
                vec![0.125, 0.25, 0.5, 1.0, 2.0, -0.125, -0.25, -0.5, -1.0]
            } else {
                [0.0, 0.25, 0.5, 0.75, 1.5, 2.0, 4.0]
                    .iter()
                    .map(|m| m * v0)
                    .collect()
            };
            for v in tries {
                let mut cand = current.clone();
                cand[name] = serde_json::json!(v);
                let w: Weights = serde_json::from_value(cand.clone())?;
                let sc = objective(&w);
                if sc >= best_score + MIN_GAIN {
                    progress(&format!(
                        "round {round}: {name} {v0} -> {v}: {best_score:.2} -> {sc:.2}"
                    ));
                    best_score = sc;
                    current = cand;
                    best = w;
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    Ok(best)
}

/// The fitting tasks: the `tune` half of `opts.tasks`, then every task of `opts.fit_tasks`
/// whose id is not in `opts.tasks`; only those whose repository is available.
fn fit_tasks(opts: &EvalOptions) -> anyhow::Result<Vec<(Task, PathBuf)>> {
    let tasks: Vec<Task> = crate::data::load_tasks(&opts.tasks)?;
    let held: std::collections::HashSet<&str> =
        tasks.iter().map(|t| t.instance_id.as_str()).collect();
    let mut extra = Vec::new();
    for p in &opts.fit_tasks {
        extra.extend(
            task::load_tasks(p)?
                .into_iter()
                .filter(|t| !held.contains(t.instance_id.as_str())),
        );
    }
    let mut out = Vec::new();
    for t in tasks
        .iter()
        .filter(|t| half(&t.instance_id) == Split::Tune)
        .chain(&extra)
    {
        if opts.limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        if let Some(p) = repo::find_in_repos_dir(&opts.repos, &t.repo) {
            out.push((t.clone(), p));
        }
    }
    Ok(out)
}

/// Fit the localizer weights on the `tune` half (and `opts.fit_tasks`), starting from
/// `opts.locate`: first the file weights on every file's signals, computed once per instance
/// (objective: gold file in the top 5, plus half its reciprocal rank), then, with the files
/// those weights pick, the function weights (gold function or one enclosing it in the top 10,
/// plus half its reciprocal rank). The query weights (`title`, `details`, `compound`) and
/// BM25's k1 and b stay as given. Report the result with [`run`] on the `report` half.
pub fn fit(opts: &EvalOptions, mut progress: impl FnMut(&str)) -> anyhow::Result<Weights> {
    let tasks = fit_tasks(opts)?;
    progress(&format!(
        "fitting on {} instances (tune half and extra fit tasks)",
        tasks.len()
    ));
    let mut lopts = ranking_options(opts);
    let mut file_fits = Vec::with_capacity(tasks.len());
    let mut dump = match &opts.dump_signals {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?,
        )),
        None => None,
    };
    for (t, path) in &tasks {
        let snap = Snapshot::open(path, &t.base_commit)?;
        let p = prepare(&snap, t, opts.history)?;
        let signals = file_signals(&p.issue, &p.files, &lopts, |_| true);
        let mut order: Vec<usize> = (0..p.files.files.len()).collect();
        order.sort_by(|&a, &b| p.files.files[a].path.cmp(&p.files.files[b].path));
        let mut tie = vec![0u32; order.len()];
        for (k, &i) in order.iter().enumerate() {
            tie[i] = k as u32;
        }
        let gold: Vec<usize> = p
            .files
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| p.gold_files.contains(&f.path))
            .map(|(i, _)| i)
            .collect();
        if let Some(out) = dump.as_mut() {
            use std::io::Write;
            let score = signals.scores(&lopts.weights.file_vector(), lopts.weights.test_factor);
            let mut best: Vec<usize> = (0..score.len()).collect();
            best.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(tie[a].cmp(&tie[b])));
            best.truncate(100);
            let missing: Vec<usize> = gold.iter().copied().filter(|g| !best.contains(g)).collect();
            best.extend(missing);
            for i in best {
                let row = serde_json::json!({
                    "instance_id": t.instance_id,
                    "path": p.files.files[i].path,
                    "gold": gold.contains(&i),
                    "aux": signals.aux[i],
                    "x": signals.x[i],
                });
                writeln!(out, "{row}")?;
            }
        }
        file_fits.push(FileFit { signals, tie, gold });
    }
    let mut file_weights = Weights::FILE_NAMES.to_vec();
    file_weights.push("test_factor");
    progress("file weights:");
    let w = coordinate_search(
        &lopts.weights,
        &file_weights,
        |w| file_objective(&file_fits, w),
        &mut progress,
    )?;
    drop(file_fits);
    lopts.weights = w;
    // The second pass reads each instance again rather than keeping every repository's files
    // in memory since the first (235 snapshots, most of them sympy's 30 MB).
    let mut fn_fits = Vec::with_capacity(tasks.len());
    for (t, path) in &tasks {
        let snap = Snapshot::open(path, &t.base_commit)?;
        let p = prepare(&snap, t, opts.history)?;
        if p.gold_fns.is_empty() {
            continue;
        }
        let files = locate_files(&p.issue, &p.files, &lopts);
        let sig = function_signals(&p.issue, &p.files, &files, &lopts, |_| true);
        let mut order: Vec<usize> = (0..sig.hits.len()).collect();
        order.sort_by(|&a, &b| {
            let (ha, hb) = (&sig.hits[a], &sig.hits[b]);
            ha.path
                .cmp(&hb.path)
                .then(ha.lines.start.cmp(&hb.lines.start))
        });
        fn_fits.push(FnFit {
            x: order.iter().map(|&i| sig.x[i]).collect(),
            gold: order
                .iter()
                .map(|&i| is_gold_hit(&sig.hits[i], &p.gold_fns))
                .collect(),
        });
    }
    progress(&format!(
        "function weights, on {} instances with a gold function:",
        fn_fits.len()
    ));
    coordinate_search(
        &lopts.weights,
        &Weights::FUNCTION_NAMES,
        |w| function_objective(&fn_fits, w),
        &mut progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_gold_rank_orders_by_score_then_tie_and_files_never_rank_zero() {
        let score = [0.5, 0.9, 0.5, 0.0, 0.7];
        let by_index = |j: usize| j as u32;
        // 0.9, 0.7, then the tie at 0.5 goes to the smaller tie key.
        assert_eq!(best_gold_rank(&score, by_index, &[2]), Some(4));
        assert_eq!(best_gold_rank(&score, by_index, &[0]), Some(3));
        // Reversed tie keys flip the tie.
        assert_eq!(best_gold_rank(&score, |j| 10 - j as u32, &[2]), Some(3));
        // The best of several gold items; a zero score is never ranked.
        assert_eq!(best_gold_rank(&score, by_index, &[0, 4]), Some(2));
        let tie: Vec<u32> = (0..score.len() as u32).collect();
        assert_eq!(best_gold_file_rank(&score, &tie, &[3]), None);
        assert_eq!(best_gold_file_rank(&score, &tie, &[3, 2]), Some(4));
        assert_eq!(best_gold_rank(&score, by_index, &[]), None);
        // Past rank 100 counts as not found.
        let many: Vec<f64> = (0..150).map(|i| 150.0 - i as f64).collect();
        assert_eq!(best_gold_rank(&many, by_index, &[99]), Some(100));
        assert_eq!(best_gold_rank(&many, by_index, &[100]), None);
    }

    #[test]
    fn file_objective_counts_top5_hits_and_half_the_reciprocal_rank() {
        let row = |v: f64| {
            let mut x = [0.0; dei::localize::search::FILE_SIGNALS];
            x[0] = v;
            x
        };
        let fit = |gold: usize| FileFit {
            signals: FileSignals {
                x: (0..8).map(|i| row(8.0 - i as f64)).collect(),
                aux: vec![false; 8],
                why: vec![Vec::new(); 8],
            },
            tie: (0..8).collect(),
            gold: vec![gold],
        };
        let w = Weights::default().with("bm25", 1.0);
        // Rank 1: 1 + 0.5; rank 6: 0 + 0.5/6.
        assert!((file_objective(&[fit(0)], &w) - 1.5).abs() < 1e-12);
        assert!((file_objective(&[fit(5)], &w) - 0.5 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn oracle_names_only_gold_it_is_shown() {
        use dei::localize::rerank::{rerank, RerankOptions};
        use dei::localize::search::{locate, LocateOptions};
        let repo = FileIndex::from_pairs(vec![
            (
                "pkg/a.py".into(),
                "class A:\n    def run(self):\n        return parse(self)\n".into(),
            ),
            (
                "pkg/b.py".into(),
                "def parse(x):\n    return x\n\n\ndef hidden():\n    pass\n".into(),
            ),
            ("pkg/c.py".into(), "def other():\n    pass\n".into()),
        ]);
        let issue = "A.run breaks when parse gets a number";
        let lex = locate(issue, &repo, &LocateOptions::default());
        let gold_files = vec!["pkg/b.py".to_string(), "pkg/z.py".to_string()];
        let gold_fns = vec![
            "pkg/b.py::parse".to_string(),
            "pkg/b.py::hidden".to_string(),
        ];
        let oracle = Oracle {
            gold_files: &gold_files,
            gold_fns: &gold_fns,
        };
        let prompts = dei::llm::prompts::Prompts::load(None).unwrap();
        // Outlines of one line per file: `hidden` is not shown, so it is not named.
        let opts = RerankOptions {
            outline_lines: 2,
            ..RerankOptions::default()
        };
        let rr = rerank(issue, &repo, &lex, &oracle, &prompts, &opts).unwrap();
        assert_eq!(rr.localization.files[0].path, "pkg/b.py");
        assert_eq!(rr.files_named, 1, "pkg/z.py was never shown");
        let named: Vec<&str> = rr.localization.functions[..rr.functions_named]
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(named, ["parse"]);
        // With room for the whole outline, `hidden` is shown and named too.
        let rr = rerank(
            issue,
            &repo,
            &lex,
            &oracle,
            &prompts,
            &RerankOptions::default(),
        )
        .unwrap();
        assert_eq!(rr.functions_named, 2);
    }
}
