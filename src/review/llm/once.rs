//! `--review-once`: the model reviews one representative per group of candidates, and every
//! other member of the group gets the representative's review.
//!
//! Groups: with execution evidence, candidates in one behaviour class (they behaved the same
//! on everything that ran); otherwise candidates whose changes are equal after normalization
//! (the offline committee's duplicate key, [`features::Features::key`]). Only candidates sent
//! to the model are grouped: empty ones and ones that do not apply keep their rule reviews.
//! The representative is the group's first candidate in the bundle's order.
//!
//! It works around any [`super::selectors::Selector`]: the bundle is reduced to the
//! representatives (and the ungrouped), the selector plans and scores that, and the reviews
//! are spread back over the whole bundle.

use super::selectors::eligible;
use crate::model::{Behaviour, Review};
use crate::review::offline::features;
use crate::review::prompts::ExecView;
use crate::review::IssueBundle;
use std::collections::BTreeMap;

/// Why candidates share a review.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    /// The same behaviour class when run.
    Class(usize),
    /// The same change after normalization.
    Key(String),
}

impl Group {
    fn says(&self) -> &'static str {
        match self {
            Group::Class(_) => "it behaved the same when run",
            Group::Key(_) => "the same change after normalization",
        }
    }
}

/// A bundle reduced to one representative per group.
pub struct Reduced {
    pub bundle: IssueBundle,
    /// The execution views of the reduced bundle's candidates (computed on the whole bundle).
    pub exec: Vec<Option<ExecView>>,
    /// For each candidate of the whole bundle: its index in the reduced bundle, and, for a
    /// member that is not its group's representative, why it shares the review.
    map: Vec<(usize, Option<&'static str>)>,
}

/// The group of candidate `i`, or `None` when it is reviewed on its own.
fn group_of(bundle: &IssueBundle, i: usize) -> Option<Group> {
    let p = &bundle.candidates[i];
    if !eligible(p) {
        return None;
    }
    let ran = bundle
        .behaviour
        .get(i)
        .and_then(Option::as_ref)
        .filter(|b| b.ran());
    if let Some(Behaviour { class: Some(c), .. }) = ran {
        return Some(Group::Class(*c));
    }
    let f = features::from_rebuilt(&p.candidate, &p.view, &p.context);
    (!f.is_void() && !f.key.is_empty()).then_some(Group::Key(f.key))
}

/// Reduce `bundle` to one representative per group; `exec` is the whole bundle's execution views.
pub fn reduce(bundle: &IssueBundle, exec: Vec<Option<ExecView>>) -> Reduced {
    let n = bundle.candidates.len();
    let mut first: BTreeMap<Group, usize> = BTreeMap::new();
    let mut keep = Vec::new();
    let mut map = Vec::with_capacity(n);
    for i in 0..n {
        match group_of(bundle, i) {
            Some(g) => match first.get(&g) {
                Some(&k) => map.push((k, Some(g.says()))),
                None => {
                    first.insert(g, keep.len());
                    map.push((keep.len(), None));
                    keep.push(i);
                }
            },
            None => {
                map.push((keep.len(), None));
                keep.push(i);
            }
        }
    }
    let behaviour = if bundle.behaviour.is_empty() {
        Vec::new()
    } else {
        keep.iter()
            .map(|&i| bundle.behaviour.get(i).cloned().flatten())
            .collect()
    };
    Reduced {
        bundle: IssueBundle {
            task: bundle.task.clone(),
            candidates: keep.iter().map(|&i| bundle.candidates[i].clone()).collect(),
            behaviour,
            repro_by_agent: bundle.repro_by_agent,
            repro_code: bundle.repro_code.clone(),
            repro_output: bundle.repro_output.clone(),
            model_tests_kept: bundle.model_tests_kept,
            tests_in_part: bundle.tests_in_part.clone(),
        },
        exec: keep
            .iter()
            .map(|&i| exec.get(i).cloned().flatten())
            .collect(),
        map,
    }
}

impl Reduced {
    /// Candidates left out (reviewed through their representative).
    pub fn shared(&self) -> usize {
        self.map.iter().filter(|m| m.1.is_some()).count()
    }

    /// The whole bundle's reviews from the reduced bundle's.
    pub fn expand(&self, whole: &IssueBundle, reviews: Vec<Review>) -> Vec<Review> {
        self.map
            .iter()
            .enumerate()
            .map(|(i, &(k, why))| {
                let rep = &reviews[k];
                match why {
                    None => rep.clone(),
                    Some(why) => {
                        let mut r = rep.clone();
                        r.candidate = whole.candidates[i].candidate.key();
                        r.reason = format!(
                            "shares the review of {} ({why}): {}",
                            rep.candidate, rep.reason
                        );
                        r.usage = None;
                        r
                    }
                }
            })
            .collect()
    }
}
