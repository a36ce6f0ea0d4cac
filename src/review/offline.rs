//! The offline committee: ranks candidates with no model at all, from signals that are
//! cheap, deterministic and explainable.
//!
//! - does it apply (cleanly, with fuzz, not at all) and does the result still parse;
//! - agreement: how many other agents edited the same definitions, and made the same change;
//! - location evidence: edits to files or definitions the issue names;
//! - smells: test-only changes, debug prints, empty patches, very large or scattered edits.

use super::{Committee, IssueBundle, Prepared};
use crate::types::{Applies, Review, Score};
use std::collections::HashSet;

/// Signal weights. The defaults are set by hand; see the offline-committee notes for fitting.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Weights {
    pub applies_clean: f64,
    pub applies_fuzzy: f64,
    pub parse_error: f64,
    pub agreement_location: f64,
    pub agreement_change: f64,
    pub issue_mention: f64,
    pub tests_only: f64,
    pub debug_print: f64,
    pub large: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            applies_clean: 4.0,
            applies_fuzzy: 3.0,
            parse_error: -3.0,
            agreement_location: 1.5,
            agreement_change: 1.0,
            issue_mention: 1.0,
            tests_only: -2.0,
            debug_print: -0.5,
            large: -0.5,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Offline {
    pub weights: Weights,
}

fn is_test_path(p: &str) -> bool {
    p.split('/')
        .any(|part| part == "tests" || part == "test" || part == "testing")
        || p.rsplit('/').next().is_some_and(|f| {
            f.starts_with("test_") || f.ends_with("_test.py") || f == "conftest.py"
        })
}

/// The normalized change (whitespace- and comment-insensitive changed lines per file): the
/// "what changed" of a candidate for agreement.
fn change_signature(p: &Prepared) -> HashSet<String> {
    crate::patch::normalize::normalize_text(&p.candidate.patch)
        .map(|n| n.items().into_iter().collect())
        .unwrap_or_default()
}

fn jaccard<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    a.intersection(b).count() as f64 / a.union(b).count() as f64
}

impl Offline {
    fn score_one(
        &self,
        i: usize,
        bundle: &IssueBundle,
        locs: &[HashSet<String>],
        changes: &[HashSet<String>],
    ) -> (Score, String) {
        let w = &self.weights;
        let p = &bundle.candidates[i];
        let mut parts: Vec<(String, f64)> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        match p.view.applies {
            Applies::Empty => return (Score { value: 1.0, parts }, "no patch".into()),
            Applies::No => {
                let why = p
                    .view
                    .error
                    .clone()
                    .or_else(|| p.view.files.iter().find_map(|f| f.error.clone()))
                    .unwrap_or_else(|| "does not apply".into());
                return (
                    Score { value: 1.5, parts },
                    format!("does not apply: {why}"),
                );
            }
            Applies::Clean => parts.push(("applies".into(), w.applies_clean)),
            Applies::Fuzzy => {
                parts.push(("applies with fuzz".into(), w.applies_fuzzy));
                notes.push("applies only with fuzz".into());
            }
        }
        if p.context.new_parse_errors > 0 {
            parts.push(("introduces syntax errors".into(), w.parse_error));
            notes.push(format!(
                "{} new syntax error(s)",
                p.context.new_parse_errors
            ));
        }
        // Agreement with the other agents that produced an applicable patch.
        let others: Vec<usize> = (0..bundle.candidates.len())
            .filter(|&j| {
                j != i
                    && matches!(
                        bundle.candidates[j].view.applies,
                        Applies::Clean | Applies::Fuzzy
                    )
            })
            .collect();
        if !others.is_empty() {
            let same_loc = others
                .iter()
                .filter(|&&j| !locs[i].is_disjoint(&locs[j]))
                .count();
            let loc = same_loc as f64 / others.len() as f64;
            let chg = others
                .iter()
                .map(|&j| jaccard(&changes[i], &changes[j]))
                .sum::<f64>()
                / others.len() as f64;
            parts.push(("agrees on location".into(), w.agreement_location * loc));
            parts.push(("agrees on change".into(), w.agreement_change * chg));
            if same_loc > 0 {
                notes.push(format!(
                    "{same_loc}/{} others edit the same place",
                    others.len()
                ));
            } else {
                notes.push("no other agent edits here".into());
            }
        }
        let mentions = crate::context::issue_mentions(&bundle.task.problem_statement);
        let text = &bundle.task.problem_statement;
        let named = p.context.edited.iter().any(|e| {
            let (path, def) = e.split_once("::").unwrap_or((e, ""));
            let file = path.rsplit('/').next().unwrap_or(path);
            let short = def.rsplit('.').next().unwrap_or(def);
            text.contains(file) || mentions.iter().any(|m| m == short)
        });
        if named {
            parts.push(("edits what the issue names".into(), w.issue_mention));
            notes.push("edits what the issue names".into());
        }
        let paths = p.view.paths();
        if !paths.is_empty() && paths.iter().all(|f| is_test_path(f)) {
            parts.push(("touches only tests".into(), w.tests_only));
            notes.push("touches only tests".into());
        }
        let prints = p
            .candidate
            .patch
            .lines()
            .filter(|l| {
                l.starts_with('+')
                    && (l.contains("print(")
                        || l.contains("breakpoint(")
                        || l.contains("pdb.set_trace"))
            })
            .count();
        if prints > 0 {
            parts.push(("debug output".into(), w.debug_print));
            notes.push("adds debug output".into());
        }
        if p.view.lines_added + p.view.lines_removed > 120 || paths.len() > 4 {
            parts.push(("large or scattered".into(), w.large));
            notes.push("large or scattered edit".into());
        }
        let raw: f64 = 1.0 + parts.iter().map(|(_, v)| v).sum::<f64>();
        let value = (raw.clamp(1.0, 10.0) * 100.0).round() / 100.0;
        (Score { value, parts }, notes.join("; "))
    }
}

impl Committee for Offline {
    fn name(&self) -> String {
        "offline".into()
    }

    fn review(&self, bundle: &IssueBundle) -> anyhow::Result<Vec<Review>> {
        let locs: Vec<HashSet<String>> = bundle
            .candidates
            .iter()
            .map(|p| p.context.edited.iter().cloned().collect())
            .collect();
        let changes: Vec<HashSet<String>> =
            bundle.candidates.iter().map(change_signature).collect();
        Ok((0..bundle.candidates.len())
            .map(|i| {
                let (score, reason) = self.score_one(i, bundle, &locs, &changes);
                Review {
                    candidate: bundle.candidates[i].candidate.key(),
                    committee: self.name(),
                    score,
                    reason,
                    explanations: vec![],
                }
            })
            .collect())
    }
}
