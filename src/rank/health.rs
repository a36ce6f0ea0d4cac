//! How each candidate of one issue ran (`--exec`), read for ranking and for the people who act
//! on a pick: whether a candidate ran *healthy* ([`healthy`]; a run's record counts it per agent,
//! `rank::run::record`), and what the pick rests on ([`pick_basis`]).
//!
//! The basis moves no ranking. It says how far what ran singles the pick out, so that a user
//! deciding which picks to apply as they are and which to read first can tell a pick that
//! another agent family's candidate behaves like from one nothing that ran speaks for.
//! `dei eval` reports how often picks of each basis are right (`metrics::eval`).

use crate::candidates::family_of;
use crate::model::{Behaviour, ModelTest, ReproChange};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Whether a candidate's run showed nothing counted against it: it broke no test that passed
/// at the base commit (but a test it rewrites to its fix, `Behaviour::rewritten`), did not
/// break the reproduction, did not leave the reproduction as at base while another candidate
/// of the issue changed it, and did not fail every test set other
/// candidates wrote that another candidate passes ([`fails_written`]; on the tune half such
/// candidates were right 4% of the time, those passing one 63%). `None` when nothing ran for it.
pub fn healthy(me: &Behaviour, others: &[&Behaviour]) -> Option<bool> {
    if !me.ran() {
        return None;
    }
    let other_changes = others
        .iter()
        .any(|b| b.ran() && b.repro == Some(ReproChange::Changed));
    Some(
        me.charged().next().is_none()
            && me.repro != Some(ReproChange::Broken)
            && !(me.repro.is_some_and(ReproChange::unchanged) && other_changes)
            && !fails_written(me, others),
    )
}

/// Whether a candidate fails every test set other candidates wrote (its own aside) that
/// another candidate passes, and there is one.
pub fn fails_written(me: &Behaviour, others: &[&Behaviour]) -> bool {
    me.written_tally(|family| {
        others
            .iter()
            .any(|b| b.ran() && b.written.get(family) == Some(&true))
    })
    .fails_every_set()
}

/// [`healthy`] for each candidate of one issue against all the others (`None`: no behaviour
/// was recorded for it, or nothing ran for it).
pub fn healthy_each(bs: &[Option<&Behaviour>]) -> Vec<Option<bool>> {
    bs.iter()
        .enumerate()
        .map(|(i, me)| {
            let others: Vec<&Behaviour> = bs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, b)| *b)
                .collect();
            healthy((*me)?, &others)
        })
        .collect()
}

/// What an issue's pick rests on, from what ran. Ordered from the most to the least the
/// evidence says for it; a tie at the top takes the weakest of its candidates' bases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// It ran healthy, changes what the issue shows (the reproduction's outcome, or the
    /// model-written test now prints `Issue resolved`), and a healthy candidate of another agent
    /// family behaves the same: the same outcome on everything that ran (its behaviour class).
    /// In a committee of one family, another run of it counts.
    Agreement,
    /// It ran healthy and changes what the issue shows, but no healthy candidate of another
    /// family behaves the same.
    Alone,
    /// It ran healthy, and does not change what the issue shows: there is no reproduction, or
    /// no candidate changes it. What ran says it breaks nothing, not that it fixes anything.
    Quiet,
    /// It did not run healthy: it breaks a test that passed at the base commit, breaks the
    /// reproduction, leaves it as at base while another candidate changes it, or fails the
    /// tests another agent wrote that another candidate passes.
    Unhealthy,
    /// Nothing ran for it (the sandbox could not run it, or the issue had nothing to run).
    Untested,
}

impl Basis {
    /// Every basis, from the strongest.
    pub const ALL: [Basis; 5] = [
        Basis::Agreement,
        Basis::Alone,
        Basis::Quiet,
        Basis::Unhealthy,
        Basis::Untested,
    ];

    /// The JSON's word.
    pub fn word(self) -> &'static str {
        match self {
            Basis::Agreement => "agreement",
            Basis::Alone => "alone",
            Basis::Quiet => "quiet",
            Basis::Unhealthy => "unhealthy",
            Basis::Untested => "untested",
        }
    }

    /// What it means, for the table's line.
    pub fn meaning(self) -> &'static str {
        match self {
            Basis::Agreement => {
                "it ran healthy, changes what the issue shows, and a healthy candidate of another agent family behaves the same"
            }
            Basis::Alone => {
                "it ran healthy and changes what the issue shows, but no other agent family's candidate behaves the same"
            }
            Basis::Quiet => {
                "it ran healthy, but neither the issue's code nor a model-written test shows it changing what the issue reports"
            }
            Basis::Unhealthy => {
                "it did not run healthy (it breaks a test, breaks the reproduction, leaves it as at base while another candidate changes it, or fails the tests another agent wrote that another candidate passes)"
            }
            Basis::Untested => "nothing ran for it",
        }
    }
}

/// One candidate of an issue as [`pick_basis`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub agent: &'a str,
    pub behaviour: Option<&'a Behaviour>,
    /// It shares the top place (the pick, or one of a tie).
    pub top: bool,
}

/// Whether a run of a candidate changes what the issue shows: the reproduction's outcome, or
/// the model-written test resolved.
pub fn shows_change(b: &Behaviour) -> bool {
    b.repro == Some(ReproChange::Changed) || b.model_test == Some(ModelTest::Resolved)
}

/// What the pick of one issue rests on; `None` when nothing is picked or no candidate carries
/// execution evidence (ranked without `--exec`). A tie at the top takes its weakest basis.
pub fn pick_basis(members: &[Member]) -> Option<Basis> {
    if !members.iter().any(|m| m.top) || members.iter().all(|m| m.behaviour.is_none()) {
        return None;
    }
    let health = healthy_each(&members.iter().map(|m| m.behaviour).collect::<Vec<_>>());
    let families: BTreeSet<String> = members
        .iter()
        .filter(|m| m.behaviour.is_some_and(Behaviour::ran))
        .map(|m| family_of(m.agent))
        .collect();
    let one_family = families.len() <= 1;
    let basis_of = |i: usize| -> Basis {
        let me = &members[i];
        let Some(b) = me.behaviour else {
            return Basis::Untested;
        };
        match health[i] {
            None => Basis::Untested,
            Some(false) => Basis::Unhealthy,
            Some(true) if !shows_change(b) => Basis::Quiet,
            Some(true) => {
                let mine = family_of(me.agent);
                let shared = members.iter().enumerate().any(|(j, o)| {
                    j != i
                        && health[j] == Some(true)
                        && o.behaviour.is_some_and(|ob| {
                            shows_change(ob) && ob.class.is_some() && ob.class == b.class
                        })
                        && if one_family {
                            o.agent != me.agent
                        } else {
                            family_of(o.agent) != mine
                        }
                });
                if shared {
                    Basis::Agreement
                } else {
                    Basis::Alone
                }
            }
        }
    };
    members
        .iter()
        .enumerate()
        .filter(|(_, m)| m.top)
        .map(|(i, _)| basis_of(i))
        .max()
}

/// [`pick_basis`] of a ranking given as each candidate's (agent, behaviour, rank): the pick is
/// what ranked first. `None` when some candidate has no rank.
pub fn pick_basis_by_rank(ranked: &[(&str, Option<&Behaviour>, Option<u64>)]) -> Option<Basis> {
    if ranked.iter().any(|(_, _, rank)| rank.is_none()) {
        return None;
    }
    let members: Vec<Member> = ranked
        .iter()
        .map(|&(agent, behaviour, rank)| Member {
            agent,
            behaviour,
            top: rank == Some(1),
        })
        .collect();
    pick_basis(&members)
}

/// The behaviour of a ranked candidate as `dei rank`'s JSON holds it; `None` when it has none,
/// or one that does not read.
pub fn behaviour_of_json(c: &serde_json::Value) -> Option<Behaviour> {
    c.get("behaviour")
        .and_then(|b| Behaviour::deserialize(b).ok())
}

/// [`pick_basis_by_rank`] of a ranking as `dei rank`'s JSON holds it (`ranked`: entries with
/// `agent`, `rank` and `behaviour`); a behaviour that does not read counts as none.
pub fn pick_basis_of_json(ranked: &[serde_json::Value]) -> Option<Basis> {
    let behaviours: Vec<Option<Behaviour>> = ranked.iter().map(behaviour_of_json).collect();
    let entries: Vec<(&str, Option<&Behaviour>, Option<u64>)> = ranked
        .iter()
        .zip(&behaviours)
        .map(|(c, b)| {
            (
                c.get("agent")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or(""),
                b.as_ref(),
                c.get("rank").and_then(serde_json::Value::as_u64),
            )
        })
        .collect();
    pick_basis_by_rank(&entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(broken: &[&str], repro: Option<ReproChange>) -> Behaviour {
        Behaviour {
            broken: broken.iter().map(|s| s.to_string()).collect(),
            rewritten: Vec::new(),
            tests_run: 3,
            repro,
            class: Some(0),
            ..Default::default()
        }
    }

    fn in_class(mut x: Behaviour, class: usize) -> Behaviour {
        x.class = Some(class);
        x
    }

    #[test]
    fn healthy_counts_what_the_committee_counts_against() {
        let changed = b(&[], Some(ReproChange::Changed));
        let same = b(&[], Some(ReproChange::Same));
        assert_eq!(healthy(&changed, &[&same]), Some(true));
        // Leaving the reproduction as at base is held against it only when another changes it.
        assert_eq!(healthy(&same, &[&changed]), Some(false));
        assert_eq!(healthy(&same, &[&same]), Some(true));
        assert_eq!(healthy(&b(&["t"], None), &[]), Some(false));
        assert_eq!(
            healthy(&b(&[], Some(ReproChange::Broken)), &[]),
            Some(false)
        );
        let none = Behaviour::default();
        assert_eq!(healthy(&none, &[&changed]), None);
        // Another exception at the statement that failed at base: still unchanged, and no
        // change for the others.
        let still = b(&[], Some(ReproChange::StillFails));
        assert_eq!(healthy(&still, &[&changed]), Some(false));
        assert_eq!(healthy(&still, &[&same]), Some(true));
        assert_eq!(healthy(&same, &[&still]), Some(true));
        // A break of a test it rewrites to its fix is not held against it; another break is.
        let mut rewrote = b(&["t"], Some(ReproChange::Changed));
        rewrote.rewritten = vec!["t".into()];
        assert_eq!(healthy(&rewrote, &[&same]), Some(true));
        rewrote.broken.push("u".into());
        assert_eq!(healthy(&rewrote, &[&same]), Some(false));
    }

    fn basis(cands: &[(&str, Option<&Behaviour>)], top: &[usize]) -> Option<Basis> {
        let members: Vec<Member> = cands
            .iter()
            .enumerate()
            .map(|(i, (agent, behaviour))| Member {
                agent,
                behaviour: *behaviour,
                top: top.contains(&i),
            })
            .collect();
        pick_basis(&members)
    }

    #[test]
    fn failing_the_tests_another_agent_wrote_that_another_candidate_passes_is_not_healthy() {
        let with = |passes: bool, wrote: Option<&str>| Behaviour {
            written: [("moatless".to_string(), passes)].into_iter().collect(),
            wrote: wrote.map(str::to_string),
            ..b(&[], None)
        };
        let author = with(true, Some("moatless"));
        let (pass, fail) = (with(true, None), with(false, None));
        assert_eq!(healthy(&fail, &[&author, &pass]), Some(false));
        assert_eq!(healthy(&pass, &[&author, &fail]), Some(true));
        // Its own set aside: an author failing its own test is not held to it.
        let lone_author = with(false, Some("moatless"));
        assert_eq!(healthy(&lone_author, &[&pass]), Some(true));
        // A set nobody else passes tells nothing.
        assert_eq!(healthy(&fail, &[&with(false, None)]), Some(true));
        // Passing one of two sets is enough.
        let two = Behaviour {
            written: [
                ("moatless".to_string(), false),
                ("sweagent".to_string(), true),
            ]
            .into_iter()
            .collect(),
            ..b(&[], None)
        };
        assert_eq!(healthy(&two, &[&author]), Some(true));
    }

    #[test]
    fn agreement_needs_another_family_healthy_in_the_same_class() {
        let fix = in_class(b(&[], Some(ReproChange::Changed)), 1);
        let other_fix = in_class(b(&[], Some(ReproChange::Changed)), 2);
        let broken_fix = in_class(b(&["t"], Some(ReproChange::Changed)), 1);
        let same = in_class(b(&[], Some(ReproChange::Same)), 3);
        // Another family, healthy, same class: agreement.
        assert_eq!(
            basis(
                &[("20240604_CodeR", Some(&fix)), ("sweagent-x_1", Some(&fix))],
                &[0]
            ),
            Some(Basis::Agreement)
        );
        // Another run of its own family does not count while other families ran.
        assert_eq!(
            basis(
                &[
                    ("acr-v1_acr-run-1", Some(&fix)),
                    ("acr-v1_acr-run-2", Some(&fix)),
                    ("20240604_CodeR", Some(&same)),
                ],
                &[0]
            ),
            Some(Basis::Alone)
        );
        // Nor a candidate of another class, nor one that is not healthy.
        assert_eq!(
            basis(
                &[
                    ("20240604_CodeR", Some(&fix)),
                    ("sweagent-x_1", Some(&other_fix)),
                    ("20240623_moatless_c", Some(&broken_fix)),
                ],
                &[0]
            ),
            Some(Basis::Alone)
        );
        // A committee of one family: its other runs are the voters.
        assert_eq!(
            basis(
                &[
                    ("acr-v1_acr-run-1", Some(&fix)),
                    ("acr-v1_acr-run-2", Some(&fix)),
                ],
                &[0]
            ),
            Some(Basis::Agreement)
        );
    }

    #[test]
    fn quiet_unhealthy_untested_and_none() {
        let same = in_class(b(&[], Some(ReproChange::Same)), 0);
        let tests_only = in_class(b(&[], None), 0);
        let changed = in_class(b(&[], Some(ReproChange::Changed)), 1);
        let breaks = in_class(b(&["t"], None), 2);
        // Nobody changes the reproduction: healthy, but quiet.
        assert_eq!(
            basis(&[("a", Some(&same)), ("b", Some(&same))], &[0]),
            Some(Basis::Quiet)
        );
        assert_eq!(basis(&[("a", Some(&tests_only))], &[0]), Some(Basis::Quiet));
        // Passing a test another agent wrote (failing at base) does not lift it: on the tune
        // half such quiet picks were right 0 of 11 times (docs/execution.md).
        let mut passes_written = same.clone();
        passes_written.written.insert("moatless".into(), true);
        let mut author = same.clone();
        author.written.insert("moatless".into(), true);
        author.wrote = Some("moatless".into());
        assert_eq!(
            basis(
                &[
                    ("a", Some(&passes_written)),
                    ("20241117_moatless_x", Some(&author))
                ],
                &[0]
            ),
            Some(Basis::Quiet)
        );
        // Left as at base while another changes it: not healthy.
        assert_eq!(
            basis(&[("a", Some(&same)), ("b", Some(&changed))], &[0]),
            Some(Basis::Unhealthy)
        );
        assert_eq!(basis(&[("a", Some(&breaks))], &[0]), Some(Basis::Unhealthy));
        // Nothing ran for the pick, while something ran for another.
        let nothing = Behaviour {
            error: Some("does not apply".into()),
            ..Default::default()
        };
        assert_eq!(
            basis(&[("a", Some(&nothing)), ("b", Some(&same))], &[0]),
            Some(Basis::Untested)
        );
        assert_eq!(
            basis(&[("a", None), ("b", Some(&same))], &[0]),
            Some(Basis::Untested)
        );
        // No --exec at all, or no pick: no basis.
        assert_eq!(basis(&[("a", None), ("b", None)], &[0]), None);
        assert_eq!(basis(&[("a", Some(&same))], &[]), None);
    }

    #[test]
    fn the_model_written_test_resolved_counts_as_a_change() {
        let resolved = Behaviour {
            tests_run: 1,
            model_test: Some(ModelTest::Resolved),
            class: Some(4),
            ..Default::default()
        };
        assert_eq!(
            basis(
                &[
                    ("20240604_CodeR", Some(&resolved)),
                    ("sweagent-x_1", Some(&resolved))
                ],
                &[0]
            ),
            Some(Basis::Agreement)
        );
    }

    #[test]
    fn a_tie_at_the_top_takes_its_weakest_basis() {
        let fix = in_class(b(&[], Some(ReproChange::Changed)), 1);
        let breaks = in_class(b(&["t"], Some(ReproChange::Changed)), 2);
        let cands = [
            ("20240604_CodeR", Some(&fix)),
            ("sweagent-x_1", Some(&fix)),
            ("20240623_moatless_c", Some(&breaks)),
        ];
        assert_eq!(basis(&cands, &[0, 1]), Some(Basis::Agreement));
        assert_eq!(basis(&cands, &[0, 2]), Some(Basis::Unhealthy));
        assert!(Basis::ALL.windows(2).all(|w| w[0] < w[1]));
    }
}
