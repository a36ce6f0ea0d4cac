//! `dei-bench offline`: measure the offline committee on real agents' SWE-bench Lite patches.
//!
//! Reads `lite_candidates.jsonl` (one row per instance and run, with `resolved`) and the task
//! file ([`crate::data`]). Instances whose repository is under `--repos` are rebuilt against
//! their base commit (all signals); the others get the signals that need no file content
//! (agreement on the diff text, mentions, tests-only, debug prints, size). Figures are reported
//! per subset.
//!
//! Split for fitting: the one split of [`crate::split`]; an instance is in the *fit* half when
//! it is in the tune half (first byte of SHA-256(`instance_id`) even), otherwise *held out*
//! (the report half). Weights are fitted (coordinate search) on the fit half only and reported
//! on the held-out half beside the hand-set defaults.

use crate::split::{half, Split};
use anyhow::Context as _;
use dei::metrics::{Slot, Totals};
use dei::model::repo::{find_in_repos_dir, Snapshot};
use dei::model::{Candidate, Task};
use dei::patch::{self, Mode};
use dei::review::offline::features::{self, Features};
use dei::review::offline::{agreement, Evidence, Offline, Weights};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The committees the issue asks for.
pub fn default_committees() -> Vec<(String, Vec<String>)> {
    let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (
            "mixed-4".into(),
            c(&[
                "20240623_moatless_claude35sonnet",
                "20240604_CodeR",
                "acr-v20240408_acr-run-3",
                "sweagent-gpt4-0125_cost_2_2",
            ]),
        ),
        (
            "acr-5".into(),
            c(&[
                "acr-v20240408_acr-run-1",
                "acr-v20240408_acr-run-2",
                "acr-v20240408_acr-run-3",
                "acr-v20240408_acr-val-only",
                "acr-v20240408_acr-val-sbfl",
            ]),
        ),
    ]
}

#[derive(Debug, Clone)]
pub struct BenchRequest {
    /// Folder holding `lite_candidates.jsonl` and `swebench_lite/test.jsonl`.
    pub data: PathBuf,
    /// Folder of repositories (`owner+name/repo`, `owner__name`, ...); `None`: text-only everywhere.
    pub repos: Option<PathBuf>,
    pub weights: Weights,
    /// Fit weights on the fit half and report them on the held-out half.
    pub fit: bool,
    /// Picks per instance (n of n@k).
    pub n: usize,
}

/// One instance ready to score: features per run, and outcomes.
#[derive(Debug, Clone)]
pub struct Instance {
    pub task: Task,
    /// Repository read (all signals) or not (text-only signals).
    pub covered: bool,
    pub fit_half: bool,
    pub runs: BTreeMap<String, (Features, bool)>,
}

/// The split for fitting: `true` for the fit half (the tune half of [`crate::split`]).
pub fn in_fit_half(instance_id: &str) -> bool {
    half(instance_id) == Split::Tune
}

/// Load every instance with the candidates of `runs`.
pub fn load(
    data: &Path,
    repos: Option<&Path>,
    runs: &BTreeSet<String>,
) -> anyhow::Result<Vec<Instance>> {
    load_where(data, repos, runs, &|_| true)
}

/// Load the instances whose task passes `keep` (e.g. a small sample in tests).
pub fn load_where(
    data: &Path,
    repos: Option<&Path>,
    runs: &BTreeSet<String>,
    keep: &(dyn Fn(&Task) -> bool + Sync),
) -> anyhow::Result<Vec<Instance>> {
    let mut tasks = crate::data::load_tasks(&crate::data::tasks_file(data))?;
    tasks.retain(|t| keep(t));
    let mut by_instance: BTreeMap<String, Vec<(Candidate, bool)>> = BTreeMap::new();
    for (id, cands) in crate::data::load_candidates(&crate::data::candidates_file(data))? {
        let chosen: Vec<(Candidate, bool)> = cands
            .into_iter()
            .filter(|c| runs.contains(&c.agent))
            .map(|c| {
                let resolved = crate::data::resolved(&c);
                (c, resolved)
            })
            .collect();
        if !chosen.is_empty() {
            by_instance.insert(id, chosen);
        }
    }
    tasks
        .into_par_iter()
        .map(|task| {
            let cands = by_instance
                .get(&task.instance_id)
                .cloned()
                .unwrap_or_default();
            prepare_instance(task, cands, repos)
        })
        .collect()
}

fn prepare_instance(
    task: Task,
    cands: Vec<(Candidate, bool)>,
    repos: Option<&Path>,
) -> anyhow::Result<Instance> {
    let repo = repos.and_then(|d| find_in_repos_dir(d, &task.repo));
    let fit_half = in_fit_half(&task.instance_id);
    let mut runs = BTreeMap::new();
    let covered = repo.is_some();
    match repo {
        Some(path) => {
            let snap = Snapshot::open(&path, &task.base_commit)
                .with_context(|| format!("instance {}", task.instance_id))?;
            let needed: Vec<String> = cands
                .iter()
                .flat_map(|(c, _)| patch::paths_needed(c))
                .collect();
            let base = snap.read_all(needed.iter().map(String::as_str))?;
            for (c, resolved) in cands {
                let view = patch::rebuild(&c, &base, Mode::Tolerant);
                let ctx = dei::context::build(&view, &task, 4000);
                runs.insert(
                    c.agent.clone(),
                    (features::from_rebuilt(&c, &view, &ctx), resolved),
                );
            }
        }
        None => {
            for (c, resolved) in cands {
                runs.insert(c.agent.clone(), (features::from_diff(&c), resolved));
            }
        }
    }
    Ok(Instance {
        task,
        covered,
        fit_half,
        runs,
    })
}

/// The committee's slots for one instance: one per member, `missing` when the run has no row.
pub fn slots(inst: &Instance, members: &[String], committee: &Offline) -> Vec<Slot> {
    let present: Vec<&String> = members
        .iter()
        .filter(|m| inst.runs.contains_key(*m))
        .collect();
    let feats: Vec<Features> = present.iter().map(|m| inst.runs[*m].0.clone()).collect();
    let ev = Evidence::new(&inst.task, feats);
    let scores = committee.score(&ev);
    let mut out: Vec<Slot> = present
        .iter()
        .zip(scores)
        .map(|(m, (s, _))| Slot::new(Some(s.value), inst.runs[*m].1))
        .collect();
    out.resize(members.len(), Slot::missing());
    out
}

/// Figures for one committee over a set of instances.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Figures {
    pub instances: usize,
    pub average_pct: f64,
    pub union_pct: f64,
    pub n_at_k_pct: f64,
    pub ties: usize,
    pub best_member: String,
    pub best_member_pct: f64,
}

pub fn figures(insts: &[&Instance], members: &[String], committee: &Offline, n: usize) -> Figures {
    let mut t = Totals::default();
    for inst in insts {
        t.add(&slots(inst, members, committee), n);
    }
    let (union, _, average, nk) = t.percent();
    let d = insts.len().max(1) as f64 / 100.0;
    let (best_member, best) = members
        .iter()
        .map(|m| {
            let solved = insts
                .iter()
                .filter(|i| i.runs.get(m).is_some_and(|r| r.1))
                .count();
            (m.clone(), solved as f64 / d)
        })
        .fold((String::new(), -1.0), |a, b| if b.1 > a.1 { b } else { a });
    Figures {
        instances: insts.len(),
        average_pct: average,
        union_pct: union,
        n_at_k_pct: nk,
        ties: t.ties,
        best_member,
        best_member_pct: best,
    }
}

fn objective(
    insts: &[&Instance],
    committees: &[(String, Vec<String>)],
    w: &Weights,
    n: usize,
) -> f64 {
    let c = Offline::new(w.clone());
    committees
        .iter()
        .map(|(_, m)| {
            let mut t = Totals::default();
            for i in insts {
                t.add(&slots(i, m, &c), n);
            }
            t.n_at_k
        })
        .sum()
}

/// Coordinate search over a small grid per weight, on `insts` only (the fit half).
pub fn fit(
    insts: &[&Instance],
    committees: &[(String, Vec<String>)],
    start: &Weights,
    n: usize,
    with_prior: bool,
) -> Weights {
    type Field = fn(&mut Weights) -> &mut f64;
    let mut grid: Vec<(Field, Vec<f64>)> = vec![
        (|w| &mut w.agreement, vec![0.0, 1.0, 2.0, 4.0, 8.0]),
        (|w| &mut w.same_family, vec![0.0, 0.15, 0.3, 0.6, 1.0]),
        (|w| &mut w.file_named, vec![0.0, 0.25, 0.5, 1.0, 2.0]),
        (|w| &mut w.def_named, vec![0.0, 0.25, 0.5, 1.0, 2.0]),
        (|w| &mut w.debug_print, vec![0.0, -0.25, -0.5, -1.0]),
        (|w| &mut w.large, vec![0.0, -0.25, -0.5, -1.0, -2.0]),
        (|w| &mut w.scatter, vec![0.0, -0.25, -0.5, -1.0]),
        (|w| &mut w.parse_error, vec![0.0, -1.0, -3.0]),
    ];
    let mut best = start.clone();
    if with_prior {
        best.family_prior = family_rates(insts);
        best.agent_prior = agent_precision(insts);
        grid.push((|w| &mut w.prior, vec![0.0, 2.0, 5.0, 10.0, 20.0, 50.0]));
    }
    let mut best_obj = objective(insts, committees, &best, n);
    for _round in 0..3 {
        let mut improved = false;
        for (field, values) in &grid {
            for &v in values {
                let mut w = best.clone();
                *field(&mut w) = v;
                let o = objective(insts, committees, &w, n);
                // Strictly better only, so the search is deterministic and prefers the start.
                if o > best_obj + 1e-9 {
                    best_obj = o;
                    best = w;
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    best
}

/// Track record per family on `insts`: the family's resolve rate (over instances where it has
/// a candidate) minus the mean over families, rounded to thousandths.
pub fn family_rates(insts: &[&Instance]) -> BTreeMap<String, f64> {
    let mut acc: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for i in insts {
        for (f, r) in i.runs.values() {
            let e = acc.entry(f.family.clone()).or_default();
            e.0 += 1;
            e.1 += *r as usize;
        }
    }
    let rates: BTreeMap<String, f64> = acc
        .into_iter()
        .map(|(k, (n, r))| (k, r as f64 / n.max(1) as f64))
        .collect();
    let mean = rates.values().sum::<f64>() / rates.len().max(1) as f64;
    rates
        .into_iter()
        .map(|(k, v)| (k, agreement::milli(v - mean)))
        .collect()
}

/// Track record per agent on `insts`: resolved over non-empty candidates (how often its
/// patch is right when it offers one) minus the mean over agents, rounded to thousandths.
pub fn agent_precision(insts: &[&Instance]) -> BTreeMap<String, f64> {
    let mut acc: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for i in insts {
        for (agent, (f, r)) in &i.runs {
            if !f.empty {
                let e = acc.entry(agent.clone()).or_default();
                e.0 += 1;
                e.1 += *r as usize;
            }
        }
    }
    let rates: BTreeMap<String, f64> = acc
        .into_iter()
        .map(|(k, (n, r))| (k, r as f64 / n.max(1) as f64))
        .collect();
    let mean = rates.values().sum::<f64>() / rates.len().max(1) as f64;
    rates
        .into_iter()
        .map(|(k, v)| (k, agreement::milli(v - mean)))
        .collect()
}

/// The whole report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchReport {
    pub n: usize,
    pub covered_repos: Vec<String>,
    pub uncovered_repos: Vec<String>,
    pub rows: Vec<Row2>,
    pub fitted: Option<Weights>,
    pub fitted_prior: Option<Weights>,
    pub weights: Weights,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Row2 {
    pub committee: String,
    pub subset: String,
    pub weights: String,
    pub figures: Figures,
}

pub fn run(req: &BenchRequest) -> anyhow::Result<BenchReport> {
    let committees = default_committees();
    let runs: BTreeSet<String> = committees
        .iter()
        .flat_map(|(_, m)| m.iter().cloned())
        .collect();
    let insts = load(&req.data, req.repos.as_deref(), &runs)?;
    let mut covered_repos = BTreeSet::new();
    let mut uncovered_repos = BTreeSet::new();
    for i in &insts {
        if i.covered {
            covered_repos.insert(i.task.repo.clone());
        } else {
            uncovered_repos.insert(i.task.repo.clone());
        }
    }
    let all: Vec<&Instance> = insts.iter().collect();
    let subsets: Vec<(&str, Vec<&Instance>)> = vec![
        ("all", all.clone()),
        (
            "covered",
            all.iter().copied().filter(|i| i.covered).collect(),
        ),
        (
            "text-only",
            all.iter().copied().filter(|i| !i.covered).collect(),
        ),
        ("fit", all.iter().copied().filter(|i| i.fit_half).collect()),
        (
            "held-out",
            all.iter().copied().filter(|i| !i.fit_half).collect(),
        ),
        (
            "held-out covered",
            all.iter()
                .copied()
                .filter(|i| !i.fit_half && i.covered)
                .collect(),
        ),
    ];
    let default = Offline::new(req.weights.clone());
    let fit_half: Vec<&Instance> = all.iter().copied().filter(|i| i.fit_half).collect();
    let fitted = req
        .fit
        .then(|| fit(&fit_half, &committees, &req.weights, req.n, false));
    let fitted_prior = req
        .fit
        .then(|| fit(&fit_half, &committees, &req.weights, req.n, true));
    let mut rows = Vec::new();
    for (name, members) in &committees {
        for (subset, insts) in &subsets {
            rows.push(Row2 {
                committee: name.clone(),
                subset: subset.to_string(),
                weights: "default".into(),
                figures: figures(insts, members, &default, req.n),
            });
            for (label, w) in [("fitted", &fitted), ("fit+prior", &fitted_prior)] {
                if let (Some(w), true) = (w, *subset != "all") {
                    rows.push(Row2 {
                        committee: name.clone(),
                        subset: subset.to_string(),
                        weights: label.into(),
                        figures: figures(insts, members, &Offline::new(w.clone()), req.n),
                    });
                }
            }
        }
    }
    Ok(BenchReport {
        n: req.n,
        covered_repos: covered_repos.into_iter().collect(),
        uncovered_repos: uncovered_repos.into_iter().collect(),
        rows,
        fitted,
        fitted_prior,
        weights: req.weights.clone(),
    })
}

/// The report as a table a person reads.
pub fn table(r: &BenchReport) -> String {
    let mut out = format!(
        "offline committee, {}@k (ties as expected value)\nrepos read: {}\ntext-only (no repository): {}\nsplit: fit half = tune (first byte of SHA-256(instance_id) even); held-out = report (odd)\n\n",
        r.n,
        r.covered_repos.join(", "),
        r.uncovered_repos.join(", ")
    );
    out.push_str(&format!(
        "{:<8} {:<17} {:<8} {:>5} {:>9} {:>26} {:>8} {:>8} {:>5}\n",
        "committee", "subset", "weights", "inst", "Average", "best member", "Union", "n@k", "ties"
    ));
    for row in &r.rows {
        let f = &row.figures;
        out.push_str(&format!(
            "{:<8} {:<17} {:<8} {:>5} {:>8.1}% {:>19} {:>5.1}% {:>7.1}% {:>7.1}% {:>5}\n",
            row.committee,
            row.subset,
            row.weights,
            f.instances,
            f.average_pct,
            short(&f.best_member),
            f.best_member_pct,
            f.union_pct,
            f.n_at_k_pct,
            f.ties
        ));
    }
    for (label, w) in [("fitted", &r.fitted), ("fit+prior", &r.fitted_prior)] {
        if let Some(w) = w {
            out.push_str(&format!(
                "\n{label} weights (fit half only): {}\n",
                serde_json::to_string(w).unwrap_or_default()
            ));
        }
    }
    out
}

fn short(s: &str) -> String {
    let t: String = s.chars().rev().take(19).collect();
    t.chars().rev().collect()
}
