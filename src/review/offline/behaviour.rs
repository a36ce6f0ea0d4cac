//! Execution evidence in the offline committee: what running the candidates showed.
//!
//! Five parts, all zero without `--exec` (no candidate then carries a [`Behaviour`]):
//!
//! - **breaks tests**: a candidate that breaks tests which passed twice at the base commit gets
//!   `exec_breaks · rarity`, where `rarity = 1 − (families breaking the test) / (families run)`
//!   for its rarest broken test, a family counting as the share of its runs that break it. A
//!   test that every family breaks costs nothing: it says more about the test than about any
//!   candidate. In a committee of one family (an agent's runs only) the runs are the voters:
//!   `rarity = 1 − (runs breaking it) / (runs)`. A test the candidate's own patch rewrites to
//!   its fix is not held against it while no other candidate shows the fix with the test
//!   passing as the base wrote it (`Behaviour::rewritten`); it still counts in the others'
//!   rarity.
//! - **reproduction**: `exec_repro_changed` when the issue's reproduction behaves differently
//!   from the base commit, `exec_repro_same` when it still behaves as at base — counted only
//!   when some other candidate does change it (else the reproduction may not show the bug).
//! - **the model's test** (`--exec-llm-repro`, kept only when it prints `Issue reproduced` at
//!   the base commit): `exec_repro_changed` when it prints `Issue resolved` with the candidate;
//!   `exec_repro_same` when it still prints `Issue reproduced` while another candidate resolves
//!   it, and when it ends in other issues or the time limit (like a broken reproduction).
//! - **tests other agents wrote** (the test functions a candidate adds to the repository's
//!   test files, kept when they fail twice at the base commit; one set per agent family): over
//!   the sets that some other candidate passes, or that this one does, `exec_written` times
//!   the mean of +1 for each it passes and −1 for each it fails. A
//!   candidate's own tests alone say nothing about it (they were written to pass it); they do
//!   about the other runs of its family, whose fixes were not written against them; and when
//!   another candidate passes them too, the author counts them as that candidate does.
//! - **behaviour agreement**: `exec_agreement · s/(1+s)` with `s` the number of other agent
//!   families whose candidates behave identically on everything that ran (its own family's
//!   further candidates count `same_family`; in a committee of one family, each other run
//!   counts 1). Counted only when the reproduction ran and some candidate changes what it shows, or the model's test ran and some candidate resolves it
//!   (classes from tests alone mostly mean "breaks nothing", which prunes but cannot choose),
//!   and there are at least two classes; candidates that leave the reproduction as at base
//!   while another changes it, or the model's test failing while another resolves it, get
//!   none (agreeing to change nothing is no vote for a fix). Tests other agents wrote that some
//!   candidate passes tell candidates apart too; failing all of them while another passes
//!   them is no vote either.

use crate::model::{Behaviour, ModelTest, ReproChange};
use std::collections::{BTreeMap, BTreeSet};

/// The name of the behaviour-agreement part (it replaces text agreement).
pub const AGREEMENT: &str = "behaves like others";

/// One candidate as the behaviour rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub family: &'a str,
    /// Nothing to review (empty, refused, unparsable): never counted.
    pub void: bool,
    pub behaviour: Option<&'a Behaviour>,
}

/// The weights of the three parts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExecWeights {
    pub breaks: f64,
    pub repro_changed: f64,
    pub repro_same: f64,
    pub written: f64,
    pub agreement: f64,
    pub same_family: f64,
}

/// A part of the score (name, value before rounding) and a sentence for the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: &'static str,
    pub value: f64,
    pub note: String,
}

/// Whether a candidate other than `i` ran and `fixes` holds for it.
fn someone_else(members: &[Member], i: usize, fixes: impl Fn(&Behaviour) -> bool) -> bool {
    members
        .iter()
        .enumerate()
        .any(|(j, m)| j != i && ran(m).is_some_and(&fixes))
}

fn ran<'a>(m: &Member<'a>) -> Option<&'a Behaviour> {
    m.behaviour.filter(|b| !m.void && b.ran())
}

/// `: it raises NameError at statement 5`, how the candidate's reproduction run ended, for a
/// reason's note; empty when that is not known.
fn ended(b: &Behaviour) -> String {
    b.repro_end
        .as_deref()
        .map(|e| format!(": it {e}"))
        .unwrap_or_default()
}

/// The behaviour parts of candidate `i`.
pub fn parts(members: &[Member], i: usize, w: &ExecWeights) -> Vec<Part> {
    let Some(me) = ran(&members[i]) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    // Whether another candidate changes what the reproduction shows, or passes the
    // model-written test (`Issue resolved`).
    let other_changes = someone_else(members, i, |b| b.repro == Some(ReproChange::Changed));
    let other_resolves = someone_else(members, i, |b| b.model_test == Some(ModelTest::Resolved));

    // Breaking tests, weighed by how few families break the same test. Each family whose
    // tests ran counts once, as the share of its runs that break the test: one of five runs of
    // an agent breaking it is not the whole agent breaking it.
    let charged: Vec<&String> = me.charged().collect();
    if !charged.is_empty() {
        let mut runs: BTreeMap<&str, usize> = BTreeMap::new();
        for m in members {
            if ran(m).is_some_and(|b| b.tests_run > 0) {
                *runs.entry(m.family).or_default() += 1;
            }
        }
        let rarest = charged
            .iter()
            .map(|&t| {
                let mut breaking: BTreeMap<&str, usize> = BTreeMap::new();
                for m in members {
                    if ran(m).is_some_and(|b| b.broken.contains(t)) {
                        *breaking.entry(m.family).or_default() += 1;
                    }
                }
                let share: f64 = breaking
                    .iter()
                    .map(|(f, n)| *n as f64 / runs.get(f).copied().unwrap_or(*n).max(*n) as f64)
                    .sum();
                (share, breaking.len(), t)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(b.2)))
            .expect("broken is not empty");
        let families = runs.len().max(1);
        // One family only (a committee of one agent's runs): its runs are the only voters, so
        // the share of them breaking the test is the measure; a lone candidate pays in full.
        let one_family_runs = match runs.values().collect::<Vec<_>>()[..] {
            [&n] if n >= 2 => Some(n),
            _ => None,
        };
        let rarity = match one_family_runs {
            Some(_) => (1.0 - rarest.0).max(0.0),
            None if families <= 1 => 1.0,
            None => (1.0 - rarest.0 / families as f64).max(0.0),
        };
        let n = charged.len();
        let (share, breaking, test) = rarest;
        let tests = if n == 1 { "" } else { "s" };
        let note = match one_family_runs {
            // A test every family breaks costs nothing, but the reader still learns of it (the
            // candidate does not run healthy for the record, which a reader sees as its basis).
            _ if rarity <= 0.0 => format!(
                "breaks {n} test{tests} that passed, as {}: {test} (no cost: a test all break says more about the test than about the candidate)",
                if one_family_runs.is_some() {
                    "every run of its agent family does"
                } else {
                    "every agent family does"
                },
            ),
            Some(total) => {
                let others = ((share * total as f64).round() as usize).saturating_sub(1);
                format!(
                    "breaks {n} test{tests} that passed; {others} other run{} of {total} of its agent family break{} {test} too",
                    if others == 1 { "" } else { "s" },
                    if others == 1 { "s" } else { "" },
                )
            }
            None if breaking <= 1 => format!(
                "breaks {n} test{tests} that passed{}: {test}",
                if families > 1 {
                    ", and no other agent family breaks it"
                } else {
                    ""
                },
            ),
            None => {
                let others = breaking - 1;
                format!(
                    "breaks {n} test{tests} that passed; {others} other agent famil{} of {families} break{} {test} too",
                    if others == 1 { "y" } else { "ies" },
                    if others == 1 { "s" } else { "" },
                )
            }
        };
        // The candidate edits the file of the test it breaks: say its version was set aside.
        let file = test.split("::").next().unwrap_or(test);
        let note = if me.tests_set_aside.iter().any(|f| f == file) {
            format!(
                "{note} (its own edits to {file} set aside: the tests ran as at the base commit)"
            )
        } else {
            note
        };
        out.push(Part {
            name: "breaks tests",
            value: w.breaks * rarity,
            note,
        });
    }

    // The reproduction, when some other candidate changes what it shows.
    if let Some(change) = me.repro {
        match change {
            ReproChange::Changed => out.push(Part {
                name: "changes the reported behaviour",
                value: w.repro_changed,
                note: "changes what the reproduction shows".into(),
            }),
            ReproChange::Same if other_changes => out.push(Part {
                name: "reported behaviour unchanged",
                value: w.repro_same,
                note: "the reproduction behaves as at the base commit".into(),
            }),
            ReproChange::StillFails if other_changes => out.push(Part {
                name: "reported behaviour unchanged",
                value: w.repro_same,
                note: format!(
                    "the reproduction still fails at the statement the base commit failed at, with another exception{}",
                    ended(me)
                ),
            }),
            ReproChange::Same | ReproChange::StillFails => {}
            ReproChange::Broken => out.push(Part {
                name: "breaks the issue's code",
                value: w.repro_same,
                note: format!(
                    "the reproduction now fails where the base commit ran it{}",
                    ended(me)
                ),
            }),
        }
    }

    // The model-written test, kept only when it prints `Issue reproduced` at the base commit.
    match me.model_test {
        Some(ModelTest::Resolved) => out.push(Part {
            name: "passes the model's reproduction test",
            value: w.repro_changed,
            note: "the model-written test that shows the issue at the base commit prints `Issue resolved`".into(),
        }),
        Some(ModelTest::Reproduced) if other_resolves => out.push(Part {
            name: "model's reproduction test still fails",
            value: w.repro_same,
            note: "the model-written test still prints `Issue reproduced`, as at the base commit".into(),
        }),
        Some(ModelTest::Reproduced) | None => {}
        Some(ModelTest::Other | ModelTest::Timeout) => out.push(Part {
            name: "model's reproduction test errs",
            value: w.repro_same,
            note: format!(
                "the model-written test {} (it printed `Issue reproduced` at the base commit)",
                if me.model_test == Some(ModelTest::Timeout) {
                    "runs past the time limit"
                } else {
                    "ends in other issues"
                }
            ),
        }),
    }

    // Tests other candidates wrote, failing at base: those some other candidate passes
    // (or this one does) tell fixes apart. Its own set, written to pass its own fix, says
    // nothing about it alone; when another candidate passes it too, the two behave alike on
    // it, and the author counts it as that candidate does (else the author alone went
    // without the part every candidate behaving as it does gets).
    let tally = me
        .written_tally(|family| someone_else(members, i, |b| b.written.get(family) == Some(&true)));
    let own_shared = me
        .passes_own_set()
        .is_some_and(|own| someone_else(members, i, |b| b.written.get(own) == Some(&true)));
    let (passed, failed) = (tally.passed + usize::from(own_shared), tally.failed);
    if passed + failed > 0 {
        let n = passed + failed;
        out.push(Part {
            name: if failed == 0 {
                "passes tests agents wrote"
            } else if passed == 0 {
                "fails tests other agents wrote"
            } else {
                "passes some tests agents wrote"
            },
            value: w.written * (passed as f64 - failed as f64) / n as f64,
            note: match (passed, failed, own_shared) {
                (1, 0, true) => {
                    "passes the test it wrote, which fails at the base commit and another candidate passes too"
                        .into()
                }
                (1, 0, false) => "passes a test another agent wrote that fails at the base commit".into(),
                (0, 1, _) => "fails a test another agent wrote that another candidate passes".into(),
                (_, _, own) => format!(
                    "passes {passed} of {n} test sets agents wrote that fail at the base commit{}",
                    if own {
                        " (its own among them, which another candidate passes too)"
                    } else {
                        ""
                    }
                ),
            },
        });
    }

    // Agreement in behaviour, counted in families: only when the reproduction tells
    // candidates apart (some candidate changes what it shows), or the model's test does (some
    // candidate resolves it). Classes from the tests alone mostly say "breaks nothing", which
    // prunes but cannot choose: text agreement stays then.
    let by_repro = me.repro.is_some() && (me.repro == Some(ReproChange::Changed) || other_changes);
    let by_model_test =
        me.model_test.is_some() && (me.model_test == Some(ModelTest::Resolved) || other_resolves);
    // Written tests tell classes apart for every candidate that ran them, the authors' own
    // included, when some candidate passes them.
    let by_written = me.written.iter().any(|(family, &ok)| {
        ok || someone_else(members, i, |b| b.written.get(family) == Some(&true))
    });
    let discriminating = by_repro || by_model_test || by_written;
    // A weight of 0 turns behaviour agreement off: text agreement then stands.
    let counted = discriminating && w.agreement != 0.0;
    if let Some(class) = me.class.filter(|_| counted) {
        let classes: BTreeSet<usize> = members
            .iter()
            .filter_map(|m| ran(m).and_then(|b| b.class))
            .collect();
        if classes.len() >= 2 {
            let mut families = BTreeSet::new();
            let mut own = 0usize;
            for (j, m) in members.iter().enumerate() {
                if j == i || ran(m).and_then(|b| b.class) != Some(class) {
                    continue;
                }
                if m.family == members[i].family {
                    own += 1;
                } else {
                    families.insert(m.family);
                }
            }
            // Agreeing to leave the reported behaviour as it is votes for no fix.
            let broken = me.repro == Some(ReproChange::Broken)
                || matches!(me.model_test, Some(ModelTest::Other | ModelTest::Timeout));
            let unchanged = (me.repro.is_some_and(ReproChange::unchanged) && other_changes)
                || (me.model_test == Some(ModelTest::Reproduced) && other_resolves);
            // As `rank::health::fails_written` reads it: the author's own set aside.
            let fails_written = tally.fails_every_set();
            let idle = broken || unchanged || fails_written;
            // A committee of one family (an agent's runs only): its runs are the voters.
            let one_family = members
                .iter()
                .filter(|m| ran(m).is_some())
                .all(|m| m.family == members[i].family);
            let s = if idle {
                0.0
            } else if one_family {
                own as f64
            } else {
                families.len() as f64 + w.same_family * own.min(1) as f64
            };
            let note = match (families.len(), own) {
                (_, n) if one_family && !idle && n > 0 => format!(
                    "behaves like {n} other run{} of its agent family (the committee's only family)",
                    if n == 1 { "" } else { "s" }
                ),
                _ if idle && broken => {
                    "agrees with others only in breaking the issue's code".to_string()
                }
                _ if idle && unchanged => {
                    "agrees with others only in changing nothing the issue shows".to_string()
                }
                // It may change what the issue shows; failing what another candidate's fix passes
                // is what withholds the vote.
                _ if idle => "agrees with others only in failing the tests another agent wrote"
                    .to_string(),
                (0, 0) => "behaves unlike every other candidate".to_string(),
                (0, _) => "behaves like other runs of its own agent family only".to_string(),
                (n, _) => format!(
                    "behaves like the candidates of {n} other agent famil{}",
                    if n == 1 { "y" } else { "ies" }
                ),
            };
            // Pushed even at zero: where behaviour classes count, text agreement does not.
            out.push(Part {
                name: AGREEMENT,
                value: w.agreement * s / (1.0 + s),
                note,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: ExecWeights = ExecWeights {
        breaks: -4.0,
        repro_changed: 1.0,
        repro_same: -1.0,
        written: 1.0,
        agreement: 3.0,
        same_family: 0.3,
    };

    fn b(broken: &[&str], repro: Option<ReproChange>, class: usize) -> Behaviour {
        Behaviour {
            broken: broken.iter().map(|s| s.to_string()).collect(),
            rewritten: Vec::new(),
            tests_run: 10,
            repro,
            model_test: None,
            written: Default::default(),
            wrote: None,
            tests_set_aside: Vec::new(),
            class: Some(class),
            repro_end: None,
            repro_output: None,
            expected: None,
            error: None,
        }
    }

    fn t(repro: Option<ReproChange>, model_test: ModelTest, class: usize) -> Behaviour {
        Behaviour {
            model_test: Some(model_test),
            ..b(&[], repro, class)
        }
    }

    fn members<'a>(fams: &[&'a str], bs: &'a [Behaviour]) -> Vec<Member<'a>> {
        fams.iter()
            .zip(bs)
            .map(|(f, b)| Member {
                family: f,
                void: false,
                behaviour: Some(b),
            })
            .collect()
    }

    fn value(ps: &[Part], name: &str) -> f64 {
        ps.iter().filter(|p| p.name == name).map(|p| p.value).sum()
    }

    #[test]
    fn breaking_alone_costs_fully_and_breaking_with_most_costs_little() {
        let bs = vec![
            b(&["t::a"], None, 0),
            b(&["t::b"], None, 1),
            b(&["t::b"], None, 1),
            b(&["t::b"], None, 1),
        ];
        let ms = members(&["x", "y", "z", "w"], &bs);
        // x breaks t::a alone: rarity 1 − 1/4.
        assert_eq!(value(&parts(&ms, 0, &W), "breaks tests"), -4.0 * 0.75);
        // y breaks t::b with two other families: rarity 1 − 3/4.
        assert_eq!(value(&parts(&ms, 1, &W), "breaks tests"), -4.0 * 0.25);
        assert!(parts(&ms, 0, &W)[0].note.contains("no other agent family"));
    }

    #[test]
    fn a_break_the_candidate_rewrites_to_its_fix_is_not_held_against_it_but_counts_for_others() {
        // x breaks t::a and t::b and rewrites t::a to its fix; y breaks t::a only.
        let mut x = b(&["t::a", "t::b"], None, 0);
        x.rewritten = vec!["t::a".into()];
        let bs = vec![x, b(&["t::a"], None, 1), b(&[], None, 2)];
        let ms = members(&["x", "y", "z"], &bs);
        // x is charged for t::b alone (rarity 1 − 1/3), not for its rewritten t::a.
        let xp = parts(&ms, 0, &W);
        assert!((value(&xp, "breaks tests") + 4.0 * (2.0 / 3.0)).abs() < 1e-9);
        assert!(xp[0].note.contains("t::b"), "{}", xp[0].note);
        // y's t::a is rarer for x's break of it: 1 − 2/3, not 1 − 1/3.
        let yp = parts(&ms, 1, &W);
        assert!((value(&yp, "breaks tests") + 4.0 * (1.0 / 3.0)).abs() < 1e-9);
        // Rewriting every test it breaks leaves no part at all.
        let mut only = b(&["t::a"], None, 0);
        only.rewritten = vec!["t::a".into()];
        let bs = vec![only, b(&[], None, 1)];
        assert_eq!(
            value(&parts(&members(&["x", "z"], &bs), 0, &W), "breaks tests"),
            0.0
        );
    }

    #[test]
    fn a_family_breaks_a_test_by_the_share_of_its_runs_that_break_it() {
        // One of three acr runs breaks t::a, as do x and y; z does not. By families that ran:
        // acr 1/3 + x + y = 2⅓ of 4, so rarity 1 − 2⅓/4 (any run counting would make it 1/4).
        let bs = vec![
            b(&["t::a"], None, 0),
            b(&[], None, 1),
            b(&[], None, 1),
            b(&["t::a"], None, 0),
            b(&["t::a"], None, 0),
            b(&[], None, 1),
        ];
        let ms = members(&["acr", "acr", "acr", "x", "y", "z"], &bs);
        let want = -4.0 * (1.0 - (1.0 / 3.0 + 2.0) / 4.0);
        assert!((value(&parts(&ms, 3, &W), "breaks tests") - want).abs() < 1e-9);
        assert!(parts(&ms, 3, &W)[0]
            .note
            .contains("2 other agent families of 4"));
    }

    #[test]
    fn in_a_committee_of_one_family_runs_count_as_the_voters() {
        // Five runs of one agent: three break t::b, one breaks t::a alone.
        let bs = vec![
            b(&["t::a"], None, 0),
            b(&["t::b"], None, 1),
            b(&["t::b"], None, 1),
            b(&["t::b"], None, 1),
            b(&[], None, 2),
        ];
        let ms = members(&["acr"; 5], &bs);
        assert!((value(&parts(&ms, 0, &W), "breaks tests") - -4.0 * 0.8).abs() < 1e-9);
        assert!((value(&parts(&ms, 1, &W), "breaks tests") - -4.0 * 0.4).abs() < 1e-9);
        assert!(parts(&ms, 1, &W)[0]
            .note
            .contains("2 other runs of 5 of its agent family break t::b too"));
        // A lone candidate still pays in full.
        let one = vec![b(&["t::a"], None, 0)];
        assert_eq!(
            value(&parts(&members(&["acr"], &one), 0, &W), "breaks tests"),
            -4.0
        );
    }

    #[test]
    fn a_test_every_family_breaks_costs_nothing_and_is_still_named() {
        let bs = vec![b(&["t::a"], None, 0), b(&["t::a"], None, 0)];
        let ms = members(&["x", "y"], &bs);
        let p = parts(&ms, 0, &W);
        assert_eq!(value(&p, "breaks tests"), 0.0);
        let note = &p
            .iter()
            .find(|x| x.name == "breaks tests")
            .expect("named")
            .note;
        assert!(
            note.starts_with("breaks 1 test that passed, as every agent family does: t::a"),
            "{note}"
        );
        // The runs of one family, all breaking it.
        let ms = members(&["acr", "acr"], &bs);
        let p = parts(&ms, 1, &W);
        assert_eq!(value(&p, "breaks tests"), 0.0);
        assert!(
            p[0].note.contains("as every run of its agent family does"),
            "{}",
            p[0].note
        );
    }

    #[test]
    fn unchanged_reproduction_counts_against_only_when_another_changes_it() {
        let bs = vec![
            b(&[], Some(ReproChange::Same), 0),
            b(&[], Some(ReproChange::Changed), 1),
        ];
        let ms = members(&["x", "y"], &bs);
        assert_eq!(
            value(&parts(&ms, 0, &W), "reported behaviour unchanged"),
            -1.0
        );
        assert_eq!(
            value(&parts(&ms, 1, &W), "changes the reported behaviour"),
            1.0
        );
        let same = vec![
            b(&[], Some(ReproChange::Same), 0),
            b(&[], Some(ReproChange::Same), 0),
        ];
        let ms = members(&["x", "y"], &same);
        assert!(parts(&ms, 0, &W).is_empty());
        // Another exception at the failing statement is no change: it counts against like the
        // same outcome when another candidate changes it, and it changes nothing for the others.
        let still = vec![
            b(&[], Some(ReproChange::StillFails), 0),
            b(&[], Some(ReproChange::Changed), 1),
            b(&[], Some(ReproChange::Same), 2),
        ];
        let ms = members(&["x", "y", "z"], &still);
        assert_eq!(
            value(&parts(&ms, 0, &W), "reported behaviour unchanged"),
            -1.0
        );
        let alone = vec![
            b(&[], Some(ReproChange::StillFails), 0),
            b(&[], Some(ReproChange::Same), 1),
        ];
        let ms = members(&["x", "y"], &alone);
        assert!(parts(&ms, 0, &W).is_empty());
        assert!(parts(&ms, 1, &W).is_empty());
    }

    fn w(passes: &[(&str, bool)], class: usize) -> Behaviour {
        Behaviour {
            written: passes.iter().map(|(f, ok)| (f.to_string(), *ok)).collect(),
            ..b(&[], None, class)
        }
    }

    fn written_value(ps: &[Part]) -> f64 {
        ps.iter()
            .filter(|p| p.name.contains("agents wrote"))
            .map(|p| p.value)
            .sum()
    }

    /// `b`, as the author of `family`'s set.
    fn author(mut b: Behaviour, family: &str) -> Behaviour {
        b.wrote = Some(family.to_string());
        b
    }

    #[test]
    fn tests_an_agent_wrote_count_for_every_candidate_but_their_author() {
        // x wrote the test and passes it; y passes it, z does not; x2 is x's other run.
        let bs = vec![
            author(w(&[("x", true)], 0), "x"),
            w(&[("x", true)], 0),
            w(&[("x", false)], 1),
            w(&[("x", true)], 0),
        ];
        let ms = members(&["x", "y", "z", "x"], &bs);
        // x's fix was written to pass its own test; y and x's other run (not written against
        // it) pass it too, so x counts it as they do.
        assert_eq!(written_value(&parts(&ms, 0, &W)), 1.0);
        assert!(parts(&ms, 0, &W).iter().any(|p| p.note
            == "passes the test it wrote, which fails at the base commit and another candidate passes too"));
        assert_eq!(written_value(&parts(&ms, 3, &W)), 1.0);
        // Failing every other set another candidate passes withholds the author's vote, its own
        // set aside, as health reads it; z, passing x's set, keeps its vote.
        let bs = vec![
            w(&[("x", true), ("v", true)], 0),
            author(w(&[("x", true), ("v", false)], 1), "x"),
            author(w(&[("x", true), ("v", true)], 0), "v"),
            w(&[("x", true), ("v", false)], 1),
        ];
        let m4 = members(&["y", "x", "v", "z"], &bs);
        assert_eq!(value(&parts(&m4, 1, &W), AGREEMENT), 0.0);
        assert!(value(&parts(&m4, 3, &W), AGREEMENT) > 0.0);
        // Passed by its author alone, it says nothing about the author.
        let bs = vec![author(w(&[("x", true)], 0), "x"), w(&[("x", false)], 1)];
        let ms_alone = members(&["x", "y"], &bs);
        assert_eq!(written_value(&parts(&ms_alone, 0, &W)), 0.0);
        // x's other run failing it, where x passes it, counts against it.
        let bs = vec![author(w(&[("x", true)], 0), "x"), w(&[("x", false)], 1)];
        let ms2 = members(&["x", "x"], &bs);
        assert_eq!(written_value(&parts(&ms2, 1, &W)), -1.0);
        assert_eq!(written_value(&parts(&ms, 1, &W)), 1.0);
        assert_eq!(written_value(&parts(&ms, 2, &W)), -1.0);
        // Failing it while others pass is no vote for z's class; y agrees with x's family.
        assert_eq!(value(&parts(&ms, 2, &W), AGREEMENT), 0.0);
        assert!(parts(&ms, 2, &W)
            .iter()
            .any(|p| p.note == "agrees with others only in failing the tests another agent wrote"));
        assert!(value(&parts(&ms, 1, &W), AGREEMENT) > 0.0);
        // Two families' tests: passing one of two is their mean.
        let bs = vec![
            w(&[("x", true), ("v", false)], 0),
            author(w(&[("x", true), ("v", true)], 1), "x"),
            author(w(&[("x", false), ("v", true)], 2), "v"),
        ];
        let ms = members(&["y", "x", "v"], &bs);
        assert_eq!(written_value(&parts(&ms, 0, &W)), 0.0);
        // v's candidate fails x's test, which others pass (against it), and passes its own,
        // which x passes too (for it): their mean.
        assert_eq!(written_value(&parts(&ms, 2, &W)), 0.0);
        // With its own test passed by nobody else, only x's counts: against it.
        let bs = vec![
            w(&[("x", true), ("v", false)], 0),
            author(w(&[("x", true), ("v", false)], 1), "x"),
            author(w(&[("x", false), ("v", true)], 2), "v"),
        ];
        let ms = members(&["y", "x", "v"], &bs);
        assert_eq!(written_value(&parts(&ms, 2, &W)), -1.0);
        // A test nobody passes tells nothing.
        let none = vec![w(&[("x", false)], 0), w(&[("x", false)], 0)];
        let ms = members(&["x", "y"], &none);
        assert!(parts(&ms, 1, &W).is_empty());
    }

    #[test]
    fn a_fix_that_fails_another_familys_test_is_not_said_to_change_nothing() {
        // y and z both change what the issue shows; z fails the test x wrote, which y passes.
        let c = Some(ReproChange::Changed);
        let bs = vec![
            Behaviour {
                written: [("x".to_string(), true)].into_iter().collect(),
                ..b(&[], c, 0)
            },
            Behaviour {
                written: [("x".to_string(), true)].into_iter().collect(),
                ..b(&[], c, 0)
            },
            Behaviour {
                written: [("x".to_string(), false)].into_iter().collect(),
                ..b(&[], c, 1)
            },
        ];
        let ms = members(&["x", "y", "z"], &bs);
        let z = parts(&ms, 2, &W);
        assert_eq!(value(&z, AGREEMENT), 0.0);
        let note = &z.iter().find(|p| p.name == AGREEMENT).expect("a part").note;
        assert!(
            note.contains("failing the tests another agent wrote"),
            "{note}"
        );
        assert!(!note.contains("changing nothing"), "{note}");
    }

    #[test]
    fn behaviour_support_counts_families_not_candidates() {
        // Three runs of one family behave alike; two other families behave alike.
        let c = Some(ReproChange::Changed);
        let bs = vec![
            b(&[], c, 0),
            b(&[], c, 0),
            b(&[], c, 0),
            b(&[], c, 1),
            b(&[], c, 1),
        ];
        let ms = members(&["acr", "acr", "acr", "moatless", "coder"], &bs);
        let acr = value(&parts(&ms, 0, &W), "behaves like others");
        let moatless = value(&parts(&ms, 3, &W), "behaves like others");
        assert_eq!(acr, 3.0 * 0.3 / 1.3);
        assert_eq!(moatless, 3.0 * 0.5);
        assert!(moatless > acr);
        // The same behaviours in a committee of one family: the runs are the voters.
        let one = members(&["acr"; 5], &bs);
        assert_eq!(value(&parts(&one, 0, &W), AGREEMENT), 3.0 * 2.0 / 3.0);
        assert_eq!(value(&parts(&one, 3, &W), AGREEMENT), 3.0 * 0.5);
        assert!(parts(&one, 0, &W)
            .iter()
            .any(|p| p.note.contains("2 other runs of its agent family")));
        // Alone in its class: a zero part, which still stands for text agreement.
        let bs = vec![b(&[], c, 0), b(&[], c, 1), b(&[], c, 1)];
        let ms = members(&["x", "y", "z"], &bs);
        let alone = parts(&ms, 0, &W);
        assert_eq!(value(&alone, AGREEMENT), 0.0);
        assert!(alone.iter().any(|p| p.name == AGREEMENT));
    }

    #[test]
    fn agreeing_to_change_nothing_is_no_vote() {
        let bs = vec![
            b(&[], Some(ReproChange::Same), 0),
            b(&[], Some(ReproChange::Same), 0),
            b(&[], Some(ReproChange::Same), 0),
            b(&[], Some(ReproChange::Changed), 1),
        ];
        let ms = members(&["x", "y", "z", "w"], &bs);
        assert_eq!(value(&parts(&ms, 0, &W), AGREEMENT), 0.0);
        // Without a candidate that changes it, the same class is a vote again.
        let ms = members(&["x", "y", "z"], &bs[..3]);
        assert!(parts(&ms, 0, &W).is_empty(), "one class: no agreement part");
    }

    #[test]
    fn classes_from_tests_alone_leave_text_agreement_in_place() {
        // No reproduction: "breaks nothing" vs "breaks a test" is no vote for either fix.
        let bs = vec![b(&[], None, 0), b(&[], None, 0), b(&["t::a"], None, 1)];
        let ms = members(&["x", "y", "z"], &bs);
        assert!(parts(&ms, 0, &W).iter().all(|p| p.name != AGREEMENT));
        // A reproduction nobody changes does not tell them apart either.
        let same = Some(ReproChange::Same);
        let bs = vec![b(&[], same, 0), b(&[], same, 0), b(&["t::a"], same, 1)];
        let ms = members(&["x", "y", "z"], &bs);
        assert!(parts(&ms, 0, &W).iter().all(|p| p.name != AGREEMENT));
    }

    #[test]
    fn a_zero_agreement_weight_turns_behaviour_agreement_off() {
        let changed = Some(ReproChange::Changed);
        let bs = vec![b(&[], changed, 0), b(&[], changed, 0), b(&[], None, 1)];
        let ms = members(&["x", "y", "z"], &bs);
        assert!(parts(&ms, 0, &W).iter().any(|p| p.name == AGREEMENT));
        let off = ExecWeights {
            agreement: 0.0,
            ..W
        };
        // No part at all, not a zero one: a zero part would also silence text agreement.
        assert!(parts(&ms, 0, &off).iter().all(|p| p.name != AGREEMENT));
    }

    #[test]
    fn breaking_the_issues_code_is_no_fix_and_no_vote() {
        let broken = Some(ReproChange::Broken);
        let bs = vec![
            b(&[], broken, 0),
            b(&[], broken, 0),
            b(&[], Some(ReproChange::Changed), 1),
        ];
        let ms = members(&["x", "y", "z"], &bs);
        let p = parts(&ms, 0, &W);
        assert_eq!(value(&p, "breaks the issue's code"), -1.0);
        assert_eq!(value(&p, "changes the reported behaviour"), 0.0);
        assert_eq!(value(&p, AGREEMENT), 0.0);
        assert!(p.iter().any(|x| x.name == AGREEMENT));
        // The note says how the run ended, when known.
        let note = |p: &[Part]| {
            p.iter()
                .find(|x| x.name == "breaks the issue's code")
                .map(|x| x.note.clone())
        };
        assert_eq!(
            note(&p).as_deref(),
            Some("the reproduction now fails where the base commit ran it")
        );
        let mut bs = bs;
        bs[0].repro_end = Some("raises NameError at statement 5".into());
        let ms = members(&["x", "y", "z"], &bs);
        assert_eq!(
            note(&parts(&ms, 0, &W)).as_deref(),
            Some("the reproduction now fails where the base commit ran it: it raises NameError at statement 5")
        );
    }

    #[test]
    fn no_evidence_no_parts() {
        let bs = vec![
            b(&["t::a"], Some(ReproChange::Changed), 0),
            Behaviour::default(),
        ];
        let mut ms = members(&["x", "y"], &bs);
        assert!(parts(&ms, 1, &W).is_empty());
        ms[0].void = true;
        assert!(parts(&ms, 0, &W).is_empty());
        let failed = Behaviour {
            error: Some("environment did not build".into()),
            ..bs[0].clone()
        };
        let ms = vec![Member {
            family: "x",
            void: false,
            behaviour: Some(&failed),
        }];
        assert!(parts(&ms, 0, &W).is_empty());
    }

    #[test]
    fn the_model_test_counts_like_the_reproduction() {
        use ModelTest::*;
        let bs = vec![
            t(None, Resolved, 0),
            t(None, Reproduced, 1),
            t(None, Other, 2),
            t(None, Timeout, 3),
        ];
        let ms = members(&["x", "y", "z", "w"], &bs);
        let p = parts(&ms, 0, &W);
        assert_eq!(value(&p, "passes the model's reproduction test"), 1.0);
        assert_eq!(
            value(&parts(&ms, 1, &W), "model's reproduction test still fails"),
            -1.0
        );
        for k in [2, 3] {
            let p = parts(&ms, k, &W);
            assert_eq!(value(&p, "model's reproduction test errs"), -1.0, "{k}");
            // Agreeing only in breaking is no vote.
            assert_eq!(value(&p, AGREEMENT), 0.0);
        }
        assert!(parts(&ms, 3, &W)[0].note.contains("time limit"));
        // Still reproduced while nobody resolves it: no evidence either way.
        let bs = vec![t(None, Reproduced, 0), t(None, Other, 1)];
        let ms = members(&["x", "y"], &bs);
        let p = parts(&ms, 0, &W);
        assert!(p.is_empty(), "{p:?}");
        // Other issues count against even then (like a broken reproduction).
        assert_eq!(
            value(&parts(&ms, 1, &W), "model's reproduction test errs"),
            -1.0
        );
    }

    #[test]
    fn the_model_test_alone_lets_behaviour_vote() {
        use ModelTest::*;
        // No reproduction of the issue's code; the model's test tells the classes apart.
        let bs = vec![
            t(None, Resolved, 0),
            t(None, Resolved, 0),
            t(None, Reproduced, 1),
            t(None, Reproduced, 1),
        ];
        let ms = members(&["x", "y", "z", "w"], &bs);
        assert_eq!(value(&parts(&ms, 0, &W), AGREEMENT), 3.0 * 0.5);
        // Agreeing to leave the test failing is no vote.
        let p = parts(&ms, 2, &W);
        assert_eq!(value(&p, AGREEMENT), 0.0);
        assert!(p.iter().any(|x| x.note.contains("changing nothing")));
        // Nobody resolves it: it does not tell them apart, text agreement stays.
        let same = vec![
            t(None, Reproduced, 0),
            t(None, Reproduced, 0),
            b(&["t::a"], None, 1),
        ];
        let ms = members(&["x", "y", "z"], &same);
        assert!(parts(&ms, 0, &W).iter().all(|p| p.name != AGREEMENT));
    }
}
