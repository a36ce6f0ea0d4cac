//! The offline committee: ranks candidates with no model at all, from signals that are
//! cheap, deterministic and explainable. Each signal is its own scorer:
//!
//! - [`features`]: facts about one candidate (how it applies, whether the code still parses,
//!   its normalized change, files, definitions, size, test-only, debug prints);
//! - [`agreement`]: how many agent *families* make the same or a similar change;
//! - [`location`]: does it edit the files/definitions the issue (or its traceback) names;
//! - [`shape`]: size and scatter relative to the other candidates.
//!
//! # Combination rule
//!
//! Each signal gives a part (weight × signal value, rounded to thousandths); the raw score is
//! their sum, in integer thousandths, so equal evidence gives exactly equal raw scores whatever
//! the input order:
//!
//! | part | value |
//! |---|---|
//! | applies | `applies_clean`, whether every hunk lands exactly or some only with fuzz (as the SWE-bench harness applies them); no part when the repository was not read |
//! | parses | `parse_error` when the patch adds syntax errors |
//! | agreement | `agreement · s/(1+s)`, `s` = [`agreement::support`] with same-family votes weighted `same_family` |
//! | location | `file_named` + `def_named` |
//! | smells | `debug_print` |
//! | track record | `prior · agent_prior[agent]`, else `prior · family_prior[family]` (empty maps by default) |
//! | shape | `large · largeness` + `scatter · scatter` ([`shape::shape`]) |
//! | execution record (`rank --all --exec` only) | `exec_record · (share − mean)`: the agent's share of healthy runs that change what the issue shows, on the run's other issues where some candidate changes it (`rank::run::record`; `exec_record_fixes` false: of healthy runs, over every issue); with `exec_record_orders` the candidates that ran healthy also rank first, by that record |
//! | execution (`--exec` only) | `exec_breaks`, `exec_repro_changed` / `exec_repro_same` (the issue's reproduction, and the model-written test with `--exec-llm-repro`), `exec_written` (tests other agents wrote), `exec_agreement` ([`behaviour`]) |
//!
//! With execution evidence that splits the candidates into two or more behaviour classes, a
//! candidate that ran is voted for by behaviour (`exec_agreement`), not by text (`agreement`).
//!
//! The score is `1 + 9·σ(raw / scale)` rounded to hundredths (kept within 1.01–10). What no
//! committee reviews scores exactly 1 by rule ([`crate::review::by_rule`]): no patch, a patch
//! that does not apply at the base commit, and one that touches no library code. Ties are never broken: equal scores are reported as ties.

pub mod agreement;
pub mod behaviour;
pub mod features;
pub mod location;
pub mod shape;
pub mod weights;

use super::{Committee, IssueBundle};
use crate::localize::issue::IssueRefs;
use crate::model::{Applies, Behaviour, Review, Score, Task};
use features::Features;

/// Signal weights (see the module docs for the rule). [`Weights::default`] is set by hand;
/// `dei-bench offline --fit` fits them on one half of the instances.
///
/// A field it does not know is an error, so that a misspelt weight, or one the committee does
/// not have, is not silently ignored.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    pub applies_clean: f64,
    pub parse_error: f64,
    pub agreement: f64,
    /// How much a vote from another run of the candidate's own family counts (0–1).
    pub same_family: f64,
    pub file_named: f64,
    pub def_named: f64,
    pub debug_print: f64,
    pub large: f64,
    pub scatter: f64,
    /// Weight of the track-record prior (0 by default: no prior).
    pub prior: f64,
    /// Track record per agent family (resolve rate minus the mean), fitted on the fit half
    /// by `dei-bench offline --fit`; families not listed get 0.
    pub family_prior: std::collections::BTreeMap<String, f64>,
    /// Track record per agent (precision: resolved over non-empty candidates, minus the mean),
    /// fitted on labelled instances; used before `family_prior`, agents not listed get none.
    pub agent_prior: std::collections::BTreeMap<String, f64>,
    /// Raw-score units per step of the logistic squash onto 1–10.
    pub scale: f64,
    /// Breaking tests that passed at the base commit, times how few families break them.
    pub exec_breaks: f64,
    /// The issue's reproduction behaves differently from the base commit; also the
    /// model-written test (`--exec-llm-repro`) printing `Issue resolved`.
    pub exec_repro_changed: f64,
    /// It behaves as at the base commit while another candidate changes it, or now fails; also
    /// the model-written test still printing `Issue reproduced` while another candidate
    /// resolves it, or ending in other issues.
    pub exec_repro_same: f64,
    /// Tests other candidates wrote that fail at the base commit: `+exec_written` per set the
    /// candidate passes, `−exec_written` per set it fails that another candidate passes (the
    /// mean over the sets).
    pub exec_written: f64,
    /// Agreement in behaviour (replaces `agreement` when behaviour classes split the candidates;
    /// 0 turns it off and text agreement stands).
    pub exec_agreement: f64,
    /// An agent's execution record over a multi-issue run (`rank --all --exec`): its share of
    /// candidates that ran without anything counted against them on the run's *other* issues,
    /// minus the mean share over agents (see `rank::run::record`).
    pub exec_record: f64,
    /// Over such a run, also rank the candidates that ran healthy on their issue first, in the
    /// order of their agents' records (then by score); the others follow by score. Needs
    /// `exec_record` ≠ 0; `false`: the record is only a part of the score.
    pub exec_record_orders: bool,
    /// What the record counts: `true` (the default), runs healthy that change what the issue
    /// shows (over the issues where some candidate changes it); `false`, runs healthy (over
    /// every issue where the agent's candidate ran).
    pub exec_record_fixes: bool,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            applies_clean: 2.0,
            parse_error: -3.0,
            agreement: 4.0,
            same_family: 0.3,
            file_named: 0.5,
            def_named: 0.5,
            debug_print: -0.5,
            large: -0.5,
            scatter: -0.5,
            prior: 0.0,
            family_prior: Default::default(),
            agent_prior: Default::default(),
            scale: 4.0,
            exec_breaks: -4.0,
            exec_repro_changed: 1.5,
            exec_repro_same: -1.5,
            exec_written: 1.5,
            exec_agreement: 4.0,
            exec_record: EXEC_RECORD,
            exec_record_orders: true,
            exec_record_fixes: true,
        }
    }
}

/// Everything the committee knows about one issue's candidates.
#[derive(Debug, Clone)]
pub struct Evidence {
    pub feats: Vec<Features>,
    /// Pairwise similarities ([`agreement::matrix`]).
    pub sim: Vec<Vec<f64>>,
    /// What the issue text names.
    pub refs: IssueRefs,
    /// What running each candidate showed (empty without `--exec`).
    pub behaviour: Vec<Option<Behaviour>>,
}

impl Evidence {
    pub fn new(task: &Task, feats: Vec<Features>) -> Evidence {
        let sim = agreement::matrix(&feats);
        Evidence {
            feats,
            sim,
            refs: IssueRefs::new(&task.problem_statement),
            behaviour: Vec::new(),
        }
    }

    /// The candidates as the execution rules see them.
    fn members(&self) -> Vec<behaviour::Member<'_>> {
        self.feats
            .iter()
            .enumerate()
            .map(|(i, f)| behaviour::Member {
                family: &f.family,
                void: f.is_void(),
                behaviour: self.behaviour.get(i).and_then(Option::as_ref),
            })
            .collect()
    }

    /// From a bundle whose candidates were rebuilt against the repository.
    pub fn from_bundle(bundle: &IssueBundle) -> Evidence {
        let feats = bundle
            .candidates
            .iter()
            .map(|p| features::from_rebuilt(&p.candidate, &p.view, &p.context))
            .collect();
        let mut ev = Evidence::new(&bundle.task, feats);
        ev.behaviour = bundle.behaviour.clone();
        ev
    }
}

/// The raw signal values of one candidate, before weighting.
#[derive(Debug, Clone, PartialEq)]
pub struct Signals {
    pub support: f64,
    /// Exact duplicates in other families / in its own family.
    pub duplicates: (usize, usize),
    pub file_named: bool,
    pub def_named: bool,
    pub largeness: f64,
    pub scatter: f64,
}

/// Compute the signals of candidate `i`.
pub fn signals(ev: &Evidence, i: usize, same_family: f64) -> Signals {
    let (file_named, def_named) = location::location(&ev.feats[i], &ev.refs);
    let (largeness, scatter) = shape::shape(&ev.feats, i);
    Signals {
        support: agreement::support(&ev.feats, &ev.sim, i, same_family),
        duplicates: agreement::duplicates(&ev.feats, i),
        file_named,
        def_named,
        largeness,
        scatter,
    }
}

/// The offline committee.
#[derive(Debug, Clone, Default)]
pub struct Offline {
    pub weights: Weights,
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn milli_int(x: f64) -> i64 {
    (x * 1000.0).round() as i64
}

impl Offline {
    pub fn new(weights: Weights) -> Offline {
        Offline { weights }
    }

    /// Score every candidate of the evidence: `(score, one-line reason)` in input order.
    pub fn score(&self, ev: &Evidence) -> Vec<(Score, String)> {
        (0..ev.feats.len()).map(|i| self.score_one(ev, i)).collect()
    }

    fn score_one(&self, ev: &Evidence, i: usize) -> (Score, String) {
        let w = &self.weights;
        let f = &ev.feats[i];
        let floor = |why: String| {
            (
                Score {
                    value: 1.0,
                    parts: vec![],
                },
                why,
            )
        };
        if f.empty {
            return floor("no patch".into());
        }
        if let Some(why) = &f.refused {
            return floor(format!("nothing to review: {why}"));
        }
        if f.unparsable {
            return floor("nothing to review: the diff does not parse".into());
        }
        if let Some(why) = &f.by_rule {
            return floor(why.clone());
        }
        let mut parts: Vec<(String, i64)> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut part = |name: &str, v: f64| {
            let m = milli_int(v);
            if m != 0 {
                parts.push((name.to_string(), m));
            }
        };
        match f.applies {
            Some(Applies::Clean) => part("applies", w.applies_clean),
            // Fuzz weighs nothing: the harness applies patches with fuzz too, and landing a
            // hunk a few lines off says nothing of whether the change is right.
            Some(Applies::Fuzzy) => {
                part("applies", w.applies_clean);
                notes.push("applies only with fuzz".into());
            }
            // Scored by rule above; without the repository nothing is known.
            Some(Applies::No | Applies::Empty) | None => {}
        }
        match f.new_parse_errors.unwrap_or(0) {
            0 => {}
            n => {
                part("introduces syntax errors", w.parse_error);
                notes.push(format!("adds {n} syntax error{}", plural(n)));
            }
        }
        let s = signals(ev, i, w.same_family);
        let exec = behaviour::parts(
            &ev.members(),
            i,
            &behaviour::ExecWeights {
                breaks: w.exec_breaks,
                repro_changed: w.exec_repro_changed,
                repro_same: w.exec_repro_same,
                written: w.exec_written,
                agreement: w.exec_agreement,
                same_family: w.same_family,
            },
        );
        let by_behaviour = exec.iter().any(|p| p.name == behaviour::AGREEMENT);
        if !by_behaviour {
            part(
                "agreement",
                w.agreement * agreement::milli(s.support / (1.0 + s.support)),
            );
        }
        for p in &exec {
            part(p.name, agreement::milli(p.value));
            notes.push(p.note.clone());
        }
        let others = ev
            .feats
            .iter()
            .enumerate()
            .filter(|(j, g)| *j != i && !g.is_void())
            .count();
        match s.duplicates {
            _ if others == 0 => notes.push("no other candidate to compare with".into()),
            (0, 0) if s.support < 0.5 => notes.push(format!(
                "little agreement: no other candidate (of {others}) makes a similar change"
            )),
            (0, 0) => {
                let close = ev
                    .feats
                    .iter()
                    .enumerate()
                    .filter(|(j, g)| *j != i && !g.is_void() && ev.sim[i][*j] >= CLOSE)
                    .count();
                notes.push(if close > 0 {
                    format!(
                        "{close} of the {others} other agent{} make{} a similar change",
                        plural(others),
                        if close == 1 { "s" } else { "" }
                    )
                } else {
                    format!("partly similar to the changes of other agents (none of the {others} makes a close one)")
                })
            }
            (o, 0) => notes.push(format!("the same change as {o} other agent{}", plural(o))),
            (0, m) => notes.push(format!(
                "the same change as {m} other run{} of its own agent family",
                plural(m)
            )),
            (o, m) => notes.push(format!(
                "the same change as {o} other agent{} and {m} other run{} of its own family",
                plural(o),
                plural(m)
            )),
        }
        if s.file_named {
            part("edits a file the issue names", w.file_named);
        }
        if s.def_named {
            part("edits a definition the issue names", w.def_named);
        }
        if s.file_named || s.def_named {
            notes.push("edits what the issue names".into());
        }
        if f.debug_lines > 0 {
            part("debug output", w.debug_print);
            notes.push("adds debug output".into());
        }
        if let Some(p) = w.agent_prior.get(&f.agent) {
            part("track record of its agent", w.prior * p);
        } else if let Some(p) = w.family_prior.get(&f.family) {
            part("track record of its family", w.prior * p);
        }
        if s.largeness > 0.0 {
            part("large", w.large * s.largeness);
        }
        if s.scatter > 0.0 {
            part("scattered", w.scatter * s.scatter);
        }
        if s.largeness >= 1.0 || s.scatter >= 1.0 {
            notes.push("larger or more scattered than the others".into());
        }
        (self.sum(parts), notes.join("; "))
    }

    /// The score of parts in thousandths: their raw sum squashed, `1 + 9·σ(raw / scale)` in
    /// hundredths (kept within 1.01–10).
    fn sum(&self, parts: Vec<(String, i64)>) -> Score {
        let raw: i64 = parts.iter().map(|(_, v)| v).sum();
        let w = &self.weights;
        let scale = if w.scale > 0.0 { w.scale } else { 1.0 };
        let squashed = 1.0 + 9.0 / (1.0 + (-(raw as f64) / 1000.0 / scale).exp());
        Score {
            value: ((squashed * 100.0).round() / 100.0).clamp(1.01, 10.0),
            parts: parts
                .into_iter()
                .map(|(n, v)| (n, v as f64 / 1000.0))
                .collect(),
        }
    }

    /// `score` with its part `name` set to `value` (replaced when present, dropped when
    /// `value` rounds to zero) and its value recomputed from the parts, exactly as
    /// [`Offline::score`] sums them. A score without parts (scored by rule) is returned as is.
    pub fn with_part(&self, score: &Score, name: &str, value: f64) -> Score {
        if score.parts.is_empty() {
            return score.clone();
        }
        let milli = milli_int(value);
        let mut parts: Vec<(String, i64)> = score
            .parts
            .iter()
            .filter(|(n, _)| n != name)
            .map(|(n, v)| (n.clone(), milli_int(*v)))
            .collect();
        if milli != 0 {
            parts.push((name.to_string(), milli));
        }
        self.sum(parts)
    }
}

/// How similar ([`agreement::similarity`]) another candidate's change must be to count as
/// "a similar change" in a reason.
const CLOSE: f64 = 0.5;

/// The part an agent's execution record over a run adds.
pub const EXEC_RECORD_PART: &str = "execution record of its agent";

/// The default weight of an agent's execution record over a run ([`Weights::exec_record`]).
pub const EXEC_RECORD: f64 = 2.0;

/// The first 16 hex digits of the SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Committee for Offline {
    fn name(&self) -> String {
        "offline".into()
    }

    fn settings(&self) -> String {
        if self.weights == Weights::default() {
            "offline weights=default".into()
        } else {
            let json = serde_json::to_string(&self.weights).unwrap_or_default();
            format!("offline weights=sha256:{}", digest(json.as_bytes()))
        }
    }

    fn with_exec_record(&self, score: &Score, record: f64) -> Option<Score> {
        let w = self.weights.exec_record;
        self.takes_exec_record()
            .then(|| self.with_part(score, EXEC_RECORD_PART, w * record))
    }

    fn takes_exec_record(&self) -> bool {
        self.weights.exec_record != 0.0
    }

    fn exec_record_orders(&self) -> bool {
        self.takes_exec_record() && self.weights.exec_record_orders
    }

    fn exec_record_fixes(&self) -> bool {
        self.weights.exec_record_fixes
    }

    fn exec_counted(&self) -> crate::model::Counted {
        let w = &self.weights;
        crate::model::Counted {
            breaks: w.exec_breaks != 0.0,
            repro: w.exec_repro_changed != 0.0 || w.exec_repro_same != 0.0,
            written: w.exec_written != 0.0,
        }
    }

    fn review(&self, bundle: &IssueBundle) -> anyhow::Result<Vec<Review>> {
        let ev = Evidence::from_bundle(bundle);
        Ok(self
            .score(&ev)
            .into_iter()
            .zip(&bundle.candidates)
            .enumerate()
            .map(|(i, ((score, reason), p))| Review {
                candidate: p.candidate.key(),
                committee: self.name(),
                score,
                reason,
                explanations: vec![],
                unscored: None,
                rule: ev.feats.get(i).is_some_and(Features::scored_by_rule),
                usage: None,
            })
            .collect())
    }
}
