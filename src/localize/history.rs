//! The repository's history as evidence: past commits whose messages resemble the issue point
//! at the files they changed (`history_scores`), and files changed often are fixed again
//! (`churn_scores`). Both need the history attached with [`FileIndex::with_history`].

use super::bm25;
use super::index::FileIndex;
use super::tokens::tokenize;
use std::collections::HashMap;

/// Past commits that lend their files to the history score: the most similar ones only.
const HISTORY_TOP: usize = 50;
/// Commits that change more files than this (reformatting, renames) say nothing about one bug.
const HISTORY_MAX_PATHS: usize = 30;
/// Commits read by [`FileIndex::with_history`] callers by default.
pub const HISTORY_COMMITS: usize = 3000;

pub(super) fn history_scores(
    q: &HashMap<String, f64>,
    repo: &FileIndex,
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let mut out = vec![0.0; repo.files.len()];
    if repo.history.is_empty() {
        return out;
    }
    let terms: Vec<HashMap<String, u32>> = repo
        .history
        .iter()
        .map(|c| {
            let mut m = HashMap::new();
            for t in tokenize(&c.message) {
                *m.entry(t).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let docs: Vec<(&HashMap<String, u32>, u32)> =
        terms.iter().map(|m| (m, m.values().sum())).collect();
    let sims = bm25::scores(q, &docs, k1, b);
    let mut order: Vec<usize> = (0..sims.len()).filter(|&i| sims[i] > 0.0).collect();
    order.sort_by(|&a, &b| sims[b].total_cmp(&sims[a]));
    let mut used = 0;
    for i in order {
        if used == HISTORY_TOP {
            break;
        }
        let files: Vec<usize> = repo.history[i]
            .paths
            .iter()
            .filter_map(|p| repo.by_path.get(p).copied())
            .collect();
        if files.is_empty() || repo.history[i].paths.len() > HISTORY_MAX_PATHS {
            continue;
        }
        used += 1;
        for &f in &files {
            out[f] += sims[i] / files.len() as f64;
        }
    }
    bm25::normalise(&mut out);
    out
}

/// Per file, how many past commits (of at most [`HISTORY_MAX_PATHS`] files) changed it, as
/// `ln(1+n) / ln(1+max)`.
pub(super) fn churn_scores(repo: &FileIndex) -> Vec<f64> {
    let mut n = vec![0u32; repo.files.len()];
    for c in &repo.history {
        if c.paths.len() > HISTORY_MAX_PATHS {
            continue;
        }
        for p in &c.paths {
            if let Some(&i) = repo.by_path.get(p) {
                n[i] += 1;
            }
        }
    }
    let max = n.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return vec![0.0; n.len()];
    }
    let den = (1.0 + max as f64).ln();
    n.iter().map(|&c| (1.0 + c as f64).ln() / den).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn churn_counts_past_commits_per_file() {
        use crate::model::repo::CommitChange;
        let commit = |paths: &[&str]| {
            Arc::new(CommitChange {
                id: git2::Oid::zero(),
                message: "fix".into(),
                paths: paths.iter().map(|p| p.to_string()).collect(),
            })
        };
        let r = FileIndex::from_pairs(vec![
            ("a.py".into(), String::new()),
            ("b.py".into(), String::new()),
            ("c.py".into(), String::new()),
        ])
        .with_history(vec![
            commit(&["a.py", "b.py"]),
            commit(&["a.py"]),
            commit(&["a.py", "gone.py"]),
        ]);
        let c = churn_scores(&r);
        assert_eq!(c[0], 1.0);
        assert!((c[1] - 2f64.ln() / 4f64.ln()).abs() < 1e-12);
        assert_eq!(c[2], 0.0);
    }
}
