//! How diverse the agents are: per-agent resolve rates, issues only one agent solves,
//! pairwise overlap (Jaccard) and the gaps between the oracle and a single pick.

use super::bootstrap::{intervals, Bootstrap};
use super::table::Table;

/// One agent's record on the universe.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentRate {
    pub agent: String,
    pub resolved: usize,
    /// Percent of the instances.
    pub rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
    /// Instances only this agent resolves (among the chosen agents).
    pub unique: usize,
}

/// An instance exactly one agent resolves.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UniqueSolve {
    pub instance_id: String,
    pub agent: String,
}

/// A figure in percent with its interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Figure {
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci: Option<(f64, f64)>,
}

/// The committee of all chosen agents (k = K), which no order changes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Gaps {
    pub k: usize,
    pub union: Figure,
    pub intersect: Figure,
    pub average: Figure,
    /// The member with the highest resolve rate (first in order on a tie).
    pub best_single: String,
    pub best_single_rate: f64,
    /// Union − best single member: what a perfect selector would add over the best agent.
    pub oracle_gap: Figure,
    pub union_minus_average: Figure,
    pub union_minus_intersect: Figure,
    /// Instances nobody resolves.
    pub unsolved: usize,
    /// Instances exactly one agent resolves.
    pub solved_by_one: usize,
    /// The selection's pick from the whole committee against its best member; only with a
    /// selection (`--scores`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pick: Option<PickGap>,
}

/// n@K of the selection, and how far it is from the best single member, instance by instance
/// (a paired difference: both come from the same bootstrap draws of instances).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PickGap {
    pub top_n: usize,
    /// n@K, ties as expected value.
    pub n_at_k: Figure,
    /// n@K − the best single member's resolve rate.
    pub minus_best: Figure,
    /// Percent of the oracle gap (Union − best single) that n@K closes; negative when it picks
    /// worse than the best member. `None` when the oracle gap is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gap_closed: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diversity {
    pub agents: Vec<AgentRate>,
    pub unique: Vec<UniqueSolve>,
    /// `jaccard[a][b]` = |A ∩ B| / |A ∪ B| of the resolved sets; `None` when both are empty.
    pub jaccard: Vec<Vec<Option<f64>>>,
    /// `both[a][b]` = |A ∩ B|.
    pub both: Vec<Vec<usize>>,
    pub gaps: Gaps,
}

pub(super) fn fig(values: &[f64], ci: Option<(f64, f64)>) -> Figure {
    let n = values.len().max(1) as f64;
    Figure {
        value: 100.0 * values.iter().sum::<f64>() / n,
        ci: ci.map(|(a, b)| (100.0 * a, 100.0 * b)),
    }
}

/// Jaccard overlap of two resolved sets given as columns.
pub fn jaccard(t: &Table, a: usize, b: usize) -> Option<f64> {
    let (mut inter, mut uni) = (0usize, 0usize);
    for row in &t.resolved {
        inter += (row[a] && row[b]) as usize;
        uni += (row[a] || row[b]) as usize;
    }
    (uni > 0).then(|| inter as f64 / uni as f64)
}

pub fn diversity(t: &Table, boot: &Bootstrap) -> Diversity {
    let n = t.instances.len();
    let k = t.agents.len();
    let col = |a: usize| -> Vec<f64> { t.resolved.iter().map(|r| r[a] as u8 as f64).collect() };
    let mut unique = Vec::new();
    let mut unique_count = vec![0usize; k];
    let mut unsolved = 0;
    for (i, row) in t.resolved.iter().enumerate() {
        let solvers: Vec<usize> = (0..k).filter(|&a| row[a]).collect();
        match solvers.as_slice() {
            [] => unsolved += 1,
            [a] => {
                unique_count[*a] += 1;
                unique.push(UniqueSolve {
                    instance_id: t.instances[i].clone(),
                    agent: t.agents[*a].clone(),
                });
            }
            _ => {}
        }
    }
    let counts: Vec<usize> = (0..k)
        .map(|a| t.resolved.iter().filter(|r| r[a]).count())
        .collect();
    let best = (0..k).fold(0, |b, a| if counts[a] > counts[b] { a } else { b });

    // Per-instance series: each agent, then union, intersect, average, oracle gap, U−A, U−I.
    let mut series: Vec<Vec<f64>> = (0..k).map(col).collect();
    let union: Vec<f64> = t
        .resolved
        .iter()
        .map(|r| r.iter().any(|&x| x) as u8 as f64)
        .collect();
    let inter: Vec<f64> = t
        .resolved
        .iter()
        .map(|r| (!r.is_empty() && r.iter().all(|&x| x)) as u8 as f64)
        .collect();
    let avg: Vec<f64> = t
        .resolved
        .iter()
        .map(|r| r.iter().filter(|&&x| x).count() as f64 / r.len().max(1) as f64)
        .collect();
    let best_col = if k > 0 { col(best) } else { vec![0.0; n] };
    let oracle: Vec<f64> = union.iter().zip(&best_col).map(|(u, b)| u - b).collect();
    let ua: Vec<f64> = union.iter().zip(&avg).map(|(u, a)| u - a).collect();
    let ui: Vec<f64> = union.iter().zip(&inter).map(|(u, i)| u - i).collect();
    series.extend([union, inter, avg, oracle, ua, ui]);
    let cis = intervals(&series, boot);
    let ci = |j: usize| cis.as_ref().map(|c| c[j]);

    let agents = (0..k)
        .map(|a| AgentRate {
            agent: t.agents[a].clone(),
            resolved: counts[a],
            rate: 100.0 * counts[a] as f64 / n.max(1) as f64,
            ci: ci(a).map(|(x, y)| (100.0 * x, 100.0 * y)),
            unique: unique_count[a],
        })
        .collect();
    let jac = (0..k)
        .map(|a| (0..k).map(|b| jaccard(t, a, b)).collect())
        .collect();
    let both = (0..k)
        .map(|a| {
            (0..k)
                .map(|b| t.resolved.iter().filter(|r| r[a] && r[b]).count())
                .collect()
        })
        .collect();
    let gaps = Gaps {
        k,
        union: fig(&series[k], ci(k)),
        intersect: fig(&series[k + 1], ci(k + 1)),
        average: fig(&series[k + 2], ci(k + 2)),
        best_single: t.agents.get(best).cloned().unwrap_or_default(),
        best_single_rate: 100.0 * counts.get(best).copied().unwrap_or(0) as f64 / n.max(1) as f64,
        oracle_gap: fig(&series[k + 3], ci(k + 3)),
        union_minus_average: fig(&series[k + 4], ci(k + 4)),
        union_minus_intersect: fig(&series[k + 5], ci(k + 5)),
        unsolved,
        solved_by_one: unique.len(),
        pick: None,
    };
    Diversity {
        agents,
        unique,
        jaccard: jac,
        both,
        gaps,
    }
}
