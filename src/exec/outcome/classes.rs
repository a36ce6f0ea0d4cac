//! Behaviour classes: candidates whose runs showed the same on everything that ran, with a
//! class's support counted in distinct agent families.

use super::repro::ReproOutcome;
use super::test_runs::Regression;
use crate::candidates::family_of;
use std::collections::{BTreeMap, BTreeSet};

/// A candidate's observed behaviour: the tests it breaks and what the reproduction did (its
/// exceptions without their messages, [`ReproOutcome::without_messages`]). Candidates with
/// equal signatures behave alike on everything that was run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Signature {
    /// Broken test ids, sorted; `None`: no regression tests were run.
    pub broken: Option<Vec<String>>,
    /// The reproduction's outcome; `None`: no reproduction was run.
    pub repro: Option<ReproOutcome>,
    /// What the model-written reproduction test printed; `None`: none was kept.
    pub model_test: Option<crate::model::ModelTest>,
    /// Whether it passes each kept test the candidates wrote, in their order.
    pub written: Vec<bool>,
}

impl Signature {
    pub fn new(regression: Option<&Regression>, repro: Option<ReproOutcome>) -> Signature {
        Signature {
            broken: regression.map(|r| {
                let mut b = r.broken.clone();
                b.sort();
                b
            }),
            repro: repro.map(|r| r.without_messages()),
            model_test: None,
            written: Vec::new(),
        }
    }

    /// The same signature with whether it passes each kept test the candidates wrote.
    pub fn with_written(mut self, written: Vec<bool>) -> Signature {
        self.written = written;
        self
    }

    /// The same signature with what the model-written test printed.
    pub fn with_model_test(mut self, model_test: Option<crate::model::ModelTest>) -> Signature {
        self.model_test = model_test;
        self
    }
}

/// Candidates that behaved the same.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BehaviourClass {
    pub signature: Signature,
    /// Indices of its candidates, ascending.
    pub members: Vec<usize>,
    /// Distinct agent families among its members ([`family_of`]), sorted.
    pub families: Vec<String>,
}

impl BehaviourClass {
    /// Support: the number of distinct agent families (runs of one agent count once).
    pub fn support(&self) -> usize {
        self.families.len()
    }
}

/// Group candidates (`(agent, signature)`, in candidate order) into behaviour classes,
/// largest support first, then most members, then first member.
pub fn behaviour_classes(cands: &[(&str, &Signature)]) -> Vec<BehaviourClass> {
    let mut by_sig: BTreeMap<&Signature, Vec<usize>> = BTreeMap::new();
    for (i, (_, s)) in cands.iter().enumerate() {
        by_sig.entry(*s).or_default().push(i);
    }
    let mut out: Vec<BehaviourClass> = by_sig
        .into_iter()
        .map(|(sig, members)| {
            let families: BTreeSet<String> =
                members.iter().map(|&i| family_of(cands[i].0)).collect();
            BehaviourClass {
                signature: sig.clone(),
                members,
                families: families.into_iter().collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.support()
            .cmp(&a.support())
            .then(b.members.len().cmp(&a.members.len()))
            .then(a.members[0].cmp(&b.members[0]))
    });
    out
}
