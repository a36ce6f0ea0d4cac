//! `dei eval`: curves of Union@k, Intersect@k, Average@k and n@k as agents join in a stated
//! order, plus the diversity study, from candidates, labels and an optional selection.

use super::bootstrap::{intervals, Bootstrap};
use super::diversity::{diversity, fig, Diversity, PickGap};
use super::labels;
use super::orders::{natural_order, random_orders, OrderKind};
use super::selection;
use super::table::{self, AgentInputs, Baseline, Table};
use super::{n_at_k, Slot};
use crate::rank::health::Basis;
use std::path::PathBuf;

/// How to compute the curves.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Options {
    pub orders: Vec<OrderKind>,
    /// Random orders to average over.
    pub shuffles: usize,
    /// Seed of the random orders.
    pub seed: u64,
    /// n of n@k (the committee may submit its top n).
    pub top_n: usize,
    pub bootstrap: Bootstrap,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            orders: vec![OrderKind::Given, OrderKind::Random],
            shuffles: 100,
            seed: 42,
            top_n: 1,
            bootstrap: Bootstrap::default(),
        }
    }
}

/// A `dei eval` run, as the command line gives it.
#[derive(Debug, Clone, Default)]
pub struct EvalRequest {
    pub candidates: Vec<PathBuf>,
    /// `FILE` or `AGENT=FILE`.
    pub labels: Vec<String>,
    pub tasks: Option<PathBuf>,
    pub agents: Option<Vec<String>>,
    /// A run directory, its journal or summary, `dei rank --json` output, or score rows.
    pub scores: Option<PathBuf>,
    /// `--agent-name SOURCE=NAME` rules, for the candidates and the labels.
    pub naming: crate::candidates::Naming,
    pub baseline: Option<Baseline>,
    pub scored_only: bool,
    /// `--instance-ids FILE`: evaluate only the instances it lists.
    pub instance_ids: Option<PathBuf>,
    /// Over which instances partial runs are scored (`--coverage`).
    pub coverage: table::Coverage,
    pub options: Options,
}

/// Per-instance values of the four metrics at each k: `[k-1][instance]`.
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub union: Vec<Vec<f64>>,
    pub intersect: Vec<Vec<f64>>,
    pub average: Vec<Vec<f64>>,
    pub n_at_k: Vec<Vec<f64>>,
    /// 1 where the pick fell in a tie of two or more (mean over orders for random).
    pub ties: Vec<Vec<f64>>,
}

impl Series {
    fn zeros(k: usize, n: usize) -> Series {
        let z = vec![vec![0.0; n]; k];
        Series {
            union: z.clone(),
            intersect: z.clone(),
            average: z.clone(),
            n_at_k: z.clone(),
            ties: z,
        }
    }

    fn add_scaled(&mut self, o: &Series, w: f64) {
        for (a, b) in [
            (&mut self.union, &o.union),
            (&mut self.intersect, &o.intersect),
            (&mut self.average, &o.average),
            (&mut self.n_at_k, &o.n_at_k),
            (&mut self.ties, &o.ties),
        ] {
            for (ra, rb) in a.iter_mut().zip(b) {
                for (x, y) in ra.iter_mut().zip(rb) {
                    *x += w * y;
                }
            }
        }
    }
}

/// The per-instance series for agents added in `order` (column indices).
pub fn series(t: &Table, order: &[usize], top_n: usize) -> Series {
    let k = order.len();
    let n = t.instances.len();
    let mut s = Series::zeros(k, n);
    let mut slots = Vec::with_capacity(k);
    for i in 0..n {
        slots.clear();
        for (j, &a) in order.iter().enumerate() {
            slots.push(Slot::new(t.score[i][a], t.resolved[i][a]));
            let prefix = &slots[..=j];
            let solved = prefix.iter().filter(|x| x.resolved).count();
            s.union[j][i] = (solved > 0) as u8 as f64;
            s.intersect[j][i] = (solved == j + 1) as u8 as f64;
            s.average[j][i] = solved as f64 / (j + 1) as f64;
            // No pick: nothing to credit. Top picks only: known for the whole committee.
            let known = !t.top_only || j + 1 == k;
            if t.has_selection && known && !t.no_pick(i) {
                let (v, tie) = n_at_k(prefix, top_n);
                s.n_at_k[j][i] = v;
                s.ties[j][i] = (tie > 1) as u8 as f64;
            }
        }
    }
    s
}

/// One point of a curve, in percent of the instances.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Point {
    pub k: usize,
    pub union: f64,
    pub intersect: f64,
    pub average: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_at_k: Option<f64>,
    /// Instances whose pick fell in a tie (mean over orders for random orders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ties: Option<f64>,
    pub union_minus_average: f64,
    pub union_minus_intersect: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<PointCi>,
}

/// Bootstrap intervals of a point, in percent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PointCi {
    pub union: (f64, f64),
    pub intersect: (f64, f64),
    pub average: (f64, f64),
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n_at_k: Option<(f64, f64)>,
    pub union_minus_average: (f64, f64),
    pub union_minus_intersect: (f64, f64),
}

/// The four curves for one order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Curve {
    pub order: OrderKind,
    /// The agents in the order they join; `None` for random orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shuffles: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    pub points: Vec<Point>,
}

fn mean(v: &[f64]) -> f64 {
    100.0 * v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn pct((a, b): (f64, f64)) -> (f64, f64) {
    (100.0 * a, 100.0 * b)
}

fn curve_from(t: &Table, s: &Series, boot: &Bootstrap) -> Vec<Point> {
    let k = s.union.len();
    let mut all: Vec<Vec<f64>> = Vec::with_capacity(k * 6);
    for j in 0..k {
        let ua: Vec<f64> = s.union[j]
            .iter()
            .zip(&s.average[j])
            .map(|(u, a)| u - a)
            .collect();
        let ui: Vec<f64> = s.union[j]
            .iter()
            .zip(&s.intersect[j])
            .map(|(u, i)| u - i)
            .collect();
        all.extend([
            s.union[j].clone(),
            s.intersect[j].clone(),
            s.average[j].clone(),
            s.n_at_k[j].clone(),
            ua,
            ui,
        ]);
    }
    let cis = intervals(&all, boot);
    (0..k)
        .map(|j| {
            let b = 6 * j;
            // With top picks only, n@k of a part of the committee is unknown.
            let has_n = t.has_selection && (!t.top_only || j + 1 == k);
            Point {
                k: j + 1,
                union: mean(&all[b]),
                intersect: mean(&all[b + 1]),
                average: mean(&all[b + 2]),
                n_at_k: has_n.then(|| mean(&all[b + 3])),
                ties: has_n.then(|| s.ties[j].iter().sum::<f64>()),
                union_minus_average: mean(&all[b + 4]),
                union_minus_intersect: mean(&all[b + 5]),
                ci: cis.as_ref().map(|c| PointCi {
                    union: pct(c[b]),
                    intersect: pct(c[b + 1]),
                    average: pct(c[b + 2]),
                    n_at_k: has_n.then(|| pct(c[b + 3])),
                    union_minus_average: pct(c[b + 4]),
                    union_minus_intersect: pct(c[b + 5]),
                }),
            }
        })
        .collect()
}

/// The curve for one kind of order.
pub fn curve(t: &Table, kind: OrderKind, opts: &Options) -> Curve {
    let k = t.agents.len();
    match kind {
        OrderKind::Given | OrderKind::Natural => {
            let order: Vec<usize> = if kind == OrderKind::Given {
                (0..k).collect()
            } else {
                natural_order(&t.agents)
            };
            let s = series(t, &order, opts.top_n);
            Curve {
                order: kind,
                agents: Some(order.iter().map(|&a| t.agents[a].clone()).collect()),
                shuffles: None,
                seed: None,
                points: curve_from(t, &s, &opts.bootstrap),
            }
        }
        OrderKind::Random => {
            let r = opts.shuffles.max(1);
            let mut acc = Series::zeros(k, t.instances.len());
            for order in random_orders(k, r, opts.seed) {
                acc.add_scaled(&series(t, &order, opts.top_n), 1.0 / r as f64);
            }
            Curve {
                order: kind,
                agents: None,
                shuffles: Some(r),
                seed: Some(opts.seed),
                points: curve_from(t, &acc, &opts.bootstrap),
            }
        }
    }
}

/// Everything `dei eval` reports.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EvalReport {
    /// Rates are percent of `instances`.
    pub unit: &'static str,
    pub instances: usize,
    pub universe: String,
    pub agents: Vec<AgentInputs>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
    pub top_n: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<Bootstrap>,
    pub notes: Vec<String>,
    pub diversity: Diversity,
    pub curves: Vec<Curve>,
    /// n@K over the issues of each basis of the pick (`--exec` rankings), strongest first;
    /// empty when the selection carries none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_basis: Vec<BasisRow>,
}

/// The picks of one basis (`rank::health::Basis`): how many issues, how often their pick
/// resolves them, and how often the committee's best single member does on the same issues.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BasisRow {
    pub basis: Basis,
    pub issues: usize,
    /// n@K over these issues, in percent of them (ties as expected value).
    pub n_at_k: f64,
    /// The best single member's (over all instances) resolve rate on these issues, in percent.
    pub best_single: f64,
    /// Union@K over these issues: how often some candidate resolves them, in percent.
    pub union: f64,
}

/// Evaluate a built table.
pub fn evaluate(t: &Table, opts: &Options) -> EvalReport {
    let mut orders = opts.orders.clone();
    orders.dedup();
    let mut d = diversity(t, &opts.bootstrap);
    d.gaps.pick = pick_gap(t, &d, opts);
    EvalReport {
        unit: "percent of instances",
        instances: t.instances.len(),
        universe: t.universe_source.clone(),
        agents: t.inputs.clone(),
        selection: t.selection_source.clone(),
        top_n: opts.top_n,
        bootstrap: (opts.bootstrap.resamples > 0).then_some(opts.bootstrap),
        notes: t.notes.clone(),
        by_basis: by_basis(t, &d, opts),
        diversity: d,
        curves: orders.into_iter().map(|o| curve(t, o, opts)).collect(),
    }
}

/// n@K, the best single member and Union@K over the issues of each basis of the pick; empty when the
/// table carries no basis.
fn by_basis(t: &Table, d: &Diversity, opts: &Options) -> Vec<BasisRow> {
    let k = t.agents.len();
    if !t.has_selection || k == 0 || t.basis.iter().all(Option::is_none) {
        return Vec::new();
    }
    let Some(best) = t.agents.iter().position(|a| *a == d.gaps.best_single) else {
        return Vec::new();
    };
    let pick = &series(t, &(0..k).collect::<Vec<_>>(), opts.top_n).n_at_k[k - 1];
    Basis::ALL
        .iter()
        .filter_map(|&b| {
            let rows: Vec<usize> = (0..t.instances.len())
                .filter(|&i| t.basis.get(i).copied().flatten() == Some(b))
                .collect();
            if rows.is_empty() {
                return None;
            }
            let n = rows.len() as f64;
            Some(BasisRow {
                basis: b,
                issues: rows.len(),
                n_at_k: 100.0 * rows.iter().map(|&i| pick[i]).sum::<f64>() / n,
                best_single: 100.0 * rows.iter().filter(|&&i| t.resolved[i][best]).count() as f64
                    / n,
                union: 100.0
                    * rows
                        .iter()
                        .filter(|&&i| t.resolved[i].iter().any(|&r| r))
                        .count() as f64
                    / n,
            })
        })
        .collect()
}

/// The selection's n@K against the committee's best member, per instance: does picking beat
/// trusting the best agent, and by how much of the oracle gap. `None` without a selection.
fn pick_gap(t: &Table, d: &Diversity, opts: &Options) -> Option<PickGap> {
    let k = t.agents.len();
    if !t.has_selection || k == 0 {
        return None;
    }
    let best = t.agents.iter().position(|a| *a == d.gaps.best_single)?;
    let s = series(t, &(0..k).collect::<Vec<_>>(), opts.top_n);
    let pick = s.n_at_k[k - 1].clone();
    let minus: Vec<f64> = pick
        .iter()
        .zip(&t.resolved)
        .map(|(p, row)| p - row[best] as u8 as f64)
        .collect();
    let cis = intervals(&[pick.clone(), minus.clone()], &opts.bootstrap);
    let ci = |j: usize| cis.as_ref().map(|c| c[j]);
    let minus_best = fig(&minus, ci(1));
    let oracle = d.gaps.oracle_gap.value;
    Some(PickGap {
        top_n: opts.top_n,
        n_at_k: fig(&pick, ci(0)),
        minus_best,
        gap_closed: (oracle > 0.0).then(|| 100.0 * minus_best.value / oracle),
    })
}

/// Load the inputs of a request into a table.
pub fn load_table(req: &EvalRequest) -> anyhow::Result<Table> {
    let loaded = if req.candidates.is_empty() {
        crate::candidates::Loaded::default()
    } else {
        crate::candidates::load_with(&req.candidates, &req.naming)?
    };
    if !req.candidates.is_empty() && loaded.candidates.is_empty() {
        let mut msg = format!(
            "no candidates could be read from {}",
            req.candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for line in crate::candidates::problem_lines(&loaded.problems, 10) {
            msg.push_str("\n  ");
            msg.push_str(&line);
        }
        msg.push_str("\n  hint: pass SWE-bench prediction files or <agent>/<instance_id>.diff folders, or leave the candidates out to evaluate from --labels alone");
        anyhow::bail!(msg);
    }
    let mut files = Vec::new();
    let mut names_used = loaded.names_used.clone();
    for arg in &req.labels {
        let (agent, path) = labels::parse_label_arg(arg);
        if !path.exists() {
            anyhow::bail!(
                "labels file {} does not exist\n  hint: --labels FILE or --labels AGENT=FILE",
                path.display()
            );
        }
        let mut file = labels::load(&path, agent.as_deref())?;
        // The same --agent-name rules as the candidates (a name given with AGENT=FILE stays).
        if agent.is_none() {
            let single = file.agents.len() == 1;
            for (name, _) in file.agents.iter_mut() {
                if let Some((i, new)) = req.naming.label_name(&path, name, single) {
                    names_used.insert(i);
                    *name = new.to_string();
                    file.agent_from_path = false;
                }
            }
        }
        files.push(file);
    }
    let mut known: Vec<String> = loaded.agents();
    known.extend(
        files
            .iter()
            .flat_map(|f| f.agents.iter().map(|a| a.0.clone())),
    );
    req.naming.check_used(&names_used, &known)?;
    let universe = match &req.tasks {
        Some(p) => {
            let ids = labels::load_instance_ids(p)?;
            let source = format!("{} ({} instances)", p.display(), ids.len());
            Some((ids, source))
        }
        None => None,
    };
    let sel = match &req.scores {
        Some(p) => Some(selection::load(p)?),
        None => None,
    };
    if let Some(s) = sel.as_ref().filter(|s| s.top_only && req.options.top_n > 1) {
        anyhow::bail!(
            "--top-n {} needs full rankings, but {} is a run summary with each issue's top pick only\n  hint: pass the run directory (--scores RUN_DIR) or its journal.jsonl",
            req.options.top_n,
            s.path.display()
        );
    }
    let mut t = table::build(&table::Sources {
        candidates: &loaded,
        labels: &files,
        universe,
        agents: req.agents.as_deref(),
        selection: sel.as_ref(),
        baseline: req.baseline,
        scored_only: req.scored_only,
        only: match &req.instance_ids {
            Some(p) => Some((crate::model::task::read_id_list(p)?, p.clone())),
            None => None,
        },
        coverage: req.coverage,
    })?;
    if !loaded.problems.is_empty() {
        // Every problem said (up to ten, then how many more), one note each.
        t.notes.extend(
            crate::candidates::problem_lines(&loaded.problems, 10)
                .into_iter()
                .map(|l| format!("candidates skipped: {l}")),
        );
    }
    Ok(t)
}

/// Run `dei eval`.
pub fn run(req: &EvalRequest) -> anyhow::Result<EvalReport> {
    if req.options.top_n == 0 {
        anyhow::bail!("--top-n must be at least 1");
    }
    if !(0.0..1.0).contains(&req.options.bootstrap.level) {
        anyhow::bail!("--confidence must be between 0 and 1 (e.g. 0.95)");
    }
    let t = load_table(req)?;
    Ok(evaluate(&t, &req.options))
}
