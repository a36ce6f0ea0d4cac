//! An agent's execution record over a multi-issue run (`dei rank --all --exec`).
//!
//! Within one issue a consensus of weak agents can outvote a strong one. Over a run's many
//! issues, an agent whose candidates keep breaking tests, or keep leaving the reported
//! behaviour as it was while others change it, is less likely to be right on the next one,
//! and that needs no labels. Once every issue of the run is ranked, each agent's *record* on
//! an issue is, over the run's **other** issues where some candidate changes what the issue
//! shows, its share of runs that are healthy ([`healthy`]) and change it, minus the mean share
//! over the agents; the committee adds it as one part of each score
//! ([`Committee::with_exec_record`]), and the issue is ranked again. Agents seen on fewer than
//! [`MIN_ISSUES`] such issues get no record. A run that changes nothing also breaks nothing,
//! which an agent earns without fixing anything, so healthy runs alone are a weaker record:
//! [`Committee::exec_record_fixes`] `false` counts them, over every issue the agent ran on.
//!
//! Where the committee orders by it ([`Committee::exec_record_orders`], the offline default),
//! the candidates that ran healthy on the issue rank first, in the order of their agents'
//! records (an agent without one counts as the mean), each record's candidates by score; the
//! others follow by score ([`select::rank_in_tiers`]). A record is a share over a sample of
//! issues, so records within half a standard error of the best among the healthy
//! ([`within_noise`]) count as the best: those candidates are ordered by score. Text
//! agreement and behaviour agreement still order the rest and break ties, but among the
//! healthy the agent that keeps running healthy across the run is trusted over a consensus of
//! agents that do not.
//!
//! The pass only reads the journal: it reruns nothing, and it is idempotent (the part is
//! replaced, never added twice), so a resumed run recomputes it over what it then holds and
//! appends a line only for an issue whose ranking changed.

use super::IssueOutcome;
use crate::model::{Behaviour, Counted, Review, Score};
use crate::rank::health::{behaviour_of_json, healthy_each, pick_basis_of_json, shows_change};
use crate::rank::select;
use crate::review::Committee;
use serde_json::Value;
use std::collections::BTreeMap;

/// Fewest other issues an agent must have run on to get a record.
pub const MIN_ISSUES: usize = 3;
/// The start of the note the record adds to a candidate's reason.
const NOTE: &str = "its agent's record in this run:";

/// (healthy, ran) per agent.
type Tally = BTreeMap<String, (usize, usize)>;

/// A ranked candidate's behaviour as the committee counts it; `None` when it has none that reads.
fn behaviour_of(c: &Value, counted: Counted) -> Option<Behaviour> {
    behaviour_of_json(c).map(|b| b.counted(counted))
}

/// One issue's candidates as the record reads them: (agent, behaviour, as the committee counts
/// it) of those that ran.
fn behaviours(result: &Value, counted: Counted) -> Vec<(String, Behaviour)> {
    let Some(ranked) = result.get("ranked").and_then(Value::as_array) else {
        return Vec::new();
    };
    ranked
        .iter()
        .filter_map(|c| {
            let agent = c.get("agent")?.as_str()?.to_string();
            let b = behaviour_of(c, counted)?;
            b.ran().then_some((agent, b))
        })
        .collect()
}

/// How many standard errors of the difference between two records count as noise: records
/// closer than this are one tier. Chosen on the tune half from 0, ½, 1, 1½ and 2
/// (the agents' execution record, docs/execution.md).
pub const NOISE_SE: f64 = 0.5;

/// Whether record `a` (its share, from `(share − mean, healthy, ran)`) is within
/// [`NOISE_SE`] standard errors of the best record `best`:
/// `best − a ≤ NOISE_SE·√(p_b(1−p_b)/n_b + p_a(1−p_a)/n_a)`. Over a run of ~130 issues with shares
/// near 0.6 that is about 3 points, so two agents a fraction of a point apart are one tier.
pub fn within_noise(best: &(f64, usize, usize), a: &(f64, usize, usize)) -> bool {
    let share = |r: &(f64, usize, usize)| r.1 as f64 / r.2.max(1) as f64;
    let (pb, pa) = (share(best), share(a));
    let var = |p: f64, n: usize| p * (1.0 - p) / n.max(1) as f64;
    pb - pa <= NOISE_SE * (var(pb, best.2) + var(pa, a.2)).sqrt() + 1e-12
}

/// Each agent's (healthy, ran) on one issue; with `fixes`, (healthy and changing what the
/// issue shows, ran), and nothing for an issue where no candidate changes what it shows.
fn tally(cands: &[(String, Behaviour)], fixes: bool) -> Tally {
    let mut out = Tally::new();
    if fixes && !cands.iter().any(|(_, b)| shows_change(b)) {
        return out;
    }
    let each = healthy_each(&cands.iter().map(|(_, b)| Some(b)).collect::<Vec<_>>());
    for ((agent, b), ok) in cands.iter().zip(each) {
        if let Some(ok) = ok {
            let e = out.entry(agent.clone()).or_default();
            e.0 += (ok && (!fixes || shows_change(b))) as usize;
            e.1 += 1;
        }
    }
    out
}

/// Every agent's record on the issue whose own tally is `mine`: its share on the other issues
/// minus the mean share (over agents with at least [`MIN_ISSUES`] other issues), with the
/// counts it rests on.
fn records(total: &Tally, mine: &Tally) -> BTreeMap<String, (f64, usize, usize)> {
    let shares: BTreeMap<&str, (f64, usize, usize)> = total
        .iter()
        .filter_map(|(agent, &(h, n))| {
            let (mh, mn) = mine.get(agent).copied().unwrap_or((0, 0));
            let (h, n) = (h - mh, n - mn);
            (n >= MIN_ISSUES).then(|| (agent.as_str(), (h as f64 / n as f64, h, n)))
        })
        .collect();
    if shares.is_empty() {
        return BTreeMap::new();
    }
    let mean = shares.values().map(|s| s.0).sum::<f64>() / shares.len() as f64;
    shares
        .into_iter()
        .map(|(a, (s, h, n))| (a.to_string(), (s - mean, h, n)))
        .collect()
}

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Indices of the outcomes whose ranking changed (scores, order or reasons).
    pub changed: Vec<usize>,
    /// Issues whose pick is not the one the scores alone would make: the record's order of
    /// the healthy ranked it first (over what it holds now, changed or not).
    pub picked_by_order: usize,
}

/// Adds each agent's execution record to the rankings of `outcomes` (full results, as the
/// journal holds them) and ranks each issue again. Nothing changes when the committee takes
/// no record, or no issue ran anything.
pub fn apply(outcomes: &mut [IssueOutcome], committee: &dyn Committee) -> Applied {
    let mut out = Applied::default();
    if !committee.takes_exec_record() {
        return out;
    }
    let counted = committee.exec_counted();
    let fixes = committee.exec_record_fixes();
    let tallies: Vec<Tally> = outcomes
        .iter()
        .map(|o| match (&o.result, o.is_ok()) {
            (Some(r), true) => tally(&behaviours(r, counted), fixes),
            _ => Tally::new(),
        })
        .collect();
    let mut total = Tally::new();
    for t in &tallies {
        for (agent, &(h, n)) in t {
            let e = total.entry(agent.clone()).or_default();
            e.0 += h;
            e.1 += n;
        }
    }
    if total.is_empty() {
        return out;
    }
    for (k, (o, mine)) in outcomes.iter_mut().zip(&tallies).enumerate() {
        if o.result.is_none() || !o.is_ok() {
            continue;
        }
        let recs = records(&total, mine);
        let before = o.result.clone();
        let Some(by_order) = rerank(o, &recs, committee) else {
            continue;
        };
        out.picked_by_order += by_order as usize;
        if o.result != before {
            out.changed.push(k);
        }
    }
    out
}

/// One issue ranked again with the records: `Some(true)` when its pick is not what the scores
/// alone would pick; `None` when it was left as it was (the committee takes no record, or a
/// review does not read).
fn rerank(
    o: &mut IssueOutcome,
    recs: &BTreeMap<String, (f64, usize, usize)>,
    committee: &dyn Committee,
) -> Option<bool> {
    let picked = o
        .result
        .as_ref()
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        == Some("ranked");
    let ranked = o
        .result
        .as_mut()
        .and_then(|r| r.get_mut("ranked"))
        .and_then(Value::as_array_mut)?;
    // Every review is read (and rescored) before anything is written: an entry that does not
    // read leaves the issue as it was.
    let orders = committee.exec_record_orders();
    let fixes = committee.exec_record_fixes();
    let counted = committee.exec_counted();
    let behaviours: Vec<Option<Behaviour>> =
        ranked.iter().map(|c| behaviour_of(c, counted)).collect();
    let ran_healthy: Vec<bool> =
        healthy_each(&behaviours.iter().map(Option::as_ref).collect::<Vec<_>>())
            .into_iter()
            .map(|h| orders && h == Some(true))
            .collect();
    // The best record among the healthy: records within its noise share its tier.
    let best: Option<&(f64, usize, usize)> = ranked
        .iter()
        .zip(&ran_healthy)
        .filter(|(_, &h)| h)
        .filter_map(|(c, _)| recs.get(agent_of(c)))
        .max_by(|x, y| x.0.total_cmp(&y.0));
    let mut reviews: Vec<Review> = Vec::with_capacity(ranked.len());
    let mut tiers: Vec<Option<f64>> = Vec::with_capacity(ranked.len());
    for (i, c) in ranked.iter().enumerate() {
        let mut review = c
            .get("review")
            .and_then(|r| serde_json::from_value::<Review>(r.clone()).ok())?;
        let mut tier = None;
        if review.status() == crate::model::ReviewStatus::Reviewed {
            let rec = recs.get(agent_of(c));
            let score = committee.with_exec_record(&review.score, rec.map_or(0.0, |r| r.0))?;
            if ran_healthy[i] {
                tier = Some(match (rec, best) {
                    (Some(r), Some(b)) if within_noise(b, r) => b.0,
                    (Some(r), _) => r.0,
                    (None, _) => 0.0,
                });
            }
            review.score = score;
            review.reason = with_note(&review.reason, rec, ran_healthy[i], fixes);
        }
        reviews.push(review);
        tiers.push(tier);
    }
    for (c, review) in ranked.iter_mut().zip(&reviews) {
        if review.status() == crate::model::ReviewStatus::Reviewed {
            c["score"] = serde_json::json!(review.score.value);
            c["reason"] = Value::String(review.reason.clone());
            if let Some(r) = c.get_mut("review") {
                r["score"] = score_json(&review.score);
                r["reason"] = Value::String(review.reason.clone());
            }
        }
    }
    let placed = select::rank_in_tiers(&reviews, &tiers);
    let firsts = |ps: &[select::Placed]| -> Vec<usize> {
        let mut v: Vec<usize> = ps.iter().filter(|p| p.rank == 1).map(|p| p.index).collect();
        v.sort_unstable();
        v
    };
    let by_order = picked && firsts(&placed) != firsts(&select::rank(&reviews));
    let mut old: Vec<Option<Value>> = ranked.drain(..).map(Some).collect();
    for p in &placed {
        let mut c = old[p.index].take().unwrap_or(Value::Null);
        c["rank"] = serde_json::json!(p.rank);
        c["tied"] = serde_json::json!(p.tied);
        ranked.push(c);
    }
    // The outcome's own summary of the pick, as `IssueOutcome::ranked` makes it.
    let ranked: &[Value] = ranked;
    let basis = if picked {
        pick_basis_of_json(ranked)
    } else {
        None
    };
    let top: Vec<&Value> = if picked {
        ranked
            .iter()
            .filter(|c| c.get("rank").and_then(Value::as_u64) == Some(1))
            .collect()
    } else {
        Vec::new()
    };
    o.top = top
        .iter()
        .filter_map(|c| c.get("agent").and_then(Value::as_str).map(String::from))
        .collect();
    o.top_score = top
        .first()
        .and_then(|c| c.get("score"))
        .and_then(Value::as_f64);
    let labels: Vec<Option<bool>> = top
        .iter()
        .map(|c| c.get("resolved").and_then(Value::as_bool))
        .collect();
    let labelled = ranked.iter().any(|c| c.get("resolved").is_some());
    o.top_resolved = super::top_credit(labelled, &labels);
    if let Some(r) = o.result.as_mut().and_then(Value::as_object_mut) {
        match basis {
            Some(b) => r.insert("pick_basis".into(), serde_json::json!(b)),
            None => r.remove("pick_basis"),
        };
    }
    Some(by_order)
}

/// A journal entry's agent (empty when it has none).
fn agent_of(c: &Value) -> &str {
    c.get("agent").and_then(Value::as_str).unwrap_or("")
}

/// `reason` with the record's note (replacing an earlier one); `ordered`: the candidate ran
/// healthy here and ranks among the healthy by its record; `fixes`: the record counts fixes.
fn with_note(
    reason: &str,
    rec: Option<&(f64, usize, usize)>,
    ordered: bool,
    fixes: bool,
) -> String {
    let mut notes: Vec<String> = reason
        .split("; ")
        .filter(|n| !n.is_empty() && !n.starts_with(NOTE))
        .map(String::from)
        .collect();
    let why = if ordered {
        " (ran healthy here: the healthy rank first, by their agents' records, those within half a standard error of the best counting as the best)"
    } else {
        ""
    };
    match rec {
        Some(&(_, h, n)) if fixes => notes.push(format!(
            "{NOTE} healthy runs that change what the issue shows on {h} of {n} other issues where a candidate changes it{why}"
        )),
        Some(&(_, h, n)) => notes.push(format!(
            "{NOTE} healthy runs on {h} of {n} other issues{why}"
        )),
        None if ordered => notes.push(format!(
            "{NOTE} too few other issues, counted as the mean{why}"
        )),
        None => {}
    }
    notes.join("; ")
}

fn score_json(s: &Score) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_leave_the_issue_out_and_need_enough_issues() {
        let mut total = Tally::new();
        total.insert("a".into(), (4, 4));
        total.insert("b".into(), (1, 4));
        total.insert("c".into(), (2, 2));
        let mut mine = Tally::new();
        mine.insert("a".into(), (1, 1));
        mine.insert("b".into(), (0, 1));
        let r = records(&total, &mine);
        // a: 3 of 3 others; b: 1 of 3; c: only 2 issues, no record; mean of a and b = 2/3.
        assert_eq!(r.len(), 2);
        assert!((r["a"].0 - (1.0 - 2.0 / 3.0)).abs() < 1e-9);
        assert!((r["b"].0 - (1.0 / 3.0 - 2.0 / 3.0)).abs() < 1e-9);
        assert_eq!((r["a"].1, r["a"].2), (3, 3));
    }

    /// An issue where `strong` and `weak` tie on the same parts; each agent's run is healthy
    /// or not as given, and `strong` resolves it.
    fn issue(id: &str, strong_ok: bool, weak_ok: bool) -> IssueOutcome {
        let cand = |agent: &str, ok: bool, rank: usize| {
            let score =
                serde_json::json!({"value": 6.4, "parts": [["applies", 2.0], ["agreement", 1.0]]});
            serde_json::json!({
                "agent": agent, "rank": rank, "tied": 2, "score": 6.4, "status": "reviewed",
                "reason": "applies", "resolved": agent == "strong",
                "review": {"candidate": format!("{agent}/{id}"), "committee": "offline",
                           "score": score, "reason": "applies", "status": "reviewed"},
                "behaviour": {"broken": if ok { vec![] } else { vec!["t::x"] }, "tests_run": 2, "class": 0},
            })
        };
        IssueOutcome {
            instance_id: id.into(),
            repo: "o/r".into(),
            error_kind: None,
            error: None,
            candidates: 2,
            top: vec!["strong".into(), "weak".into()],
            top_score: Some(6.4),
            top_resolved: Some(0.5),
            any_resolved: Some(true),
            candidate_errors: vec![],
            problems: vec![],
            elapsed_ms: 0,
            dry_run: false,
            result: Some(serde_json::json!({
                "instance_id": id, "status": "ranked",
                "ranked": [cand("weak", weak_ok, 1), cand("strong", strong_ok, 1)],
            })),
        }
    }

    /// `o` (an [`issue`]) with weak's and strong's reproductions ending as given.
    fn with_repro(mut o: IssueOutcome, weak: &str, strong: &str) -> IssueOutcome {
        let r = o.result.as_mut().unwrap();
        r["ranked"][0]["behaviour"]["repro"] = weak.into();
        r["ranked"][1]["behaviour"]["repro"] = strong.into();
        o
    }

    /// `o` (an [`issue`]) with both candidates changing what the issue shows (the
    /// reproduction), so that the issue counts in a record of fixes.
    fn fixing(o: IssueOutcome) -> IssueOutcome {
        with_repro(o, "changed", "changed")
    }

    #[test]
    fn a_record_over_other_issues_breaks_a_tie_and_is_applied_once() {
        let offline = crate::review::offline::Offline::new(Default::default());
        // Four issues where strong's run is healthy and weak's is not, so that each has a record
        // over the three others, then the last.
        let mut run: Vec<IssueOutcome> = (0..4)
            .map(|k| fixing(issue(&format!("i{k}"), true, false)))
            .chain([issue("last", true, true)])
            .collect();
        let applied = apply(&mut run, &offline);
        assert!(applied.changed.contains(&4), "{applied:?}");
        // The tie is broken by the record's part of the score, not by its order.
        assert_eq!(applied.picked_by_order, 0);
        let last = &run[4];
        assert_eq!(last.top, vec!["strong".to_string()]);
        assert_eq!(last.top_resolved, Some(1.0));
        let ranked = last.result.as_ref().unwrap()["ranked"].as_array().unwrap();
        assert_eq!(ranked[0]["agent"], "strong");
        assert_eq!(
            (ranked[0]["rank"].as_u64(), ranked[1]["rank"].as_u64()),
            (Some(1), Some(2))
        );
        // What the new pick rests on is written with it: healthy, with no reproduction.
        assert_eq!(last.result.as_ref().unwrap()["pick_basis"], "quiet");
        let parts = ranked[0]["review"]["score"]["parts"].as_array().unwrap();
        assert!(parts
            .iter()
            .any(|p| p[0] == crate::review::offline::EXEC_RECORD_PART));
        assert!(ranked[0]["reason"]
            .as_str()
            .unwrap()
            .contains("healthy runs that change what the issue shows on 4 of 4"));
        // Applied again over its own output, nothing changes.
        assert!(apply(&mut run, &offline).changed.is_empty());
        // A committee that takes no record leaves the run as it is.
        let mut fresh: Vec<IssueOutcome> = (0..4)
            .map(|k| issue(&format!("j{k}"), true, false))
            .collect();
        let llm_like = NoRecord;
        assert_eq!(apply(&mut fresh, &llm_like), Applied::default());
    }

    struct NoRecord;
    impl Committee for NoRecord {
        fn name(&self) -> String {
            "none".into()
        }
        fn review(
            &self,
            _: &crate::review::IssueBundle,
        ) -> anyhow::Result<Vec<crate::model::Review>> {
            Ok(vec![])
        }
    }

    #[test]
    fn the_note_is_replaced_not_repeated() {
        let once = with_note("applies cleanly", Some(&(0.1, 2, 3)), false, false);
        let twice = with_note(&once, Some(&(0.1, 3, 4)), false, false);
        assert_eq!(
            twice,
            format!("applies cleanly; {NOTE} healthy runs on 3 of 4 other issues")
        );
        assert_eq!(with_note(&twice, None, false, false), "applies cleanly");
        let ordered = with_note(&twice, Some(&(0.1, 3, 4)), true, false);
        assert!(
            ordered.ends_with("within half a standard error of the best counting as the best)"),
            "{ordered}"
        );
        assert_eq!(ordered.matches(NOTE).count(), 1);
        let fixes = with_note(&twice, Some(&(0.1, 3, 4)), false, true);
        assert!(
            fixes.ends_with("healthy runs that change what the issue shows on 3 of 4 other issues where a candidate changes it"),
            "{fixes}"
        );
    }

    #[test]
    fn a_record_of_fixes_counts_healthy_runs_that_change_what_the_issue_shows() {
        let b = |v: Value| serde_json::from_value::<Behaviour>(v).expect("a behaviour");
        let cands = vec![
            // Healthy and changing the reproduction.
            (
                "fix".to_string(),
                b(serde_json::json!({"tests_run": 2, "repro": "changed"})),
            ),
            // Leaves it as at base while another changes it: not healthy.
            (
                "same".to_string(),
                b(serde_json::json!({"tests_run": 2, "repro": "same"})),
            ),
            // Changes it but breaks a test: not healthy.
            (
                "breaks".to_string(),
                b(serde_json::json!({"tests_run": 2, "repro": "changed", "broken": ["t::x"]})),
            ),
            // Healthy, with no reproduction of its own: counts as healthy, not as a fix.
            ("quiet".to_string(), b(serde_json::json!({"tests_run": 2}))),
        ];
        let health = tally(&cands, false);
        let fixes = tally(&cands, true);
        let got = |t: &Tally, a: &str| t.get(a).copied();
        assert_eq!(got(&health, "fix"), Some((1, 1)));
        assert_eq!(got(&health, "quiet"), Some((1, 1)));
        assert_eq!(got(&fixes, "fix"), Some((1, 1)));
        assert_eq!(got(&fixes, "quiet"), Some((0, 1)));
        for agent in ["same", "breaks"] {
            assert_eq!(got(&health, agent), Some((0, 1)), "{agent}");
            assert_eq!(got(&fixes, agent), Some((0, 1)), "{agent}");
        }
        // An issue where no candidate changes what it shows says nothing to a record of fixes.
        let quiet = vec![cands[3].clone()];
        assert!(tally(&quiet, true).is_empty());
        assert_eq!(got(&tally(&quiet, false), "quiet"), Some((1, 1)));
    }

    /// A candidate of the issue `last` that ran healthy, with this agreement part (`strong`
    /// resolves it).
    fn healthy_last(agent: &str, agreement: f64) -> Value {
        let score = serde_json::json!({"value": 6.4, "parts": [["applies", 2.0], ["agreement", agreement]]});
        serde_json::json!({
            "agent": agent, "score": 6.4, "status": "reviewed", "reason": "applies",
            "resolved": agent == "strong",
            "review": {"candidate": format!("{agent}/last"), "committee": "offline",
                       "score": score, "reason": "applies", "status": "reviewed"},
            "behaviour": {"broken": [], "tests_run": 2, "class": 0},
        })
    }

    /// The last issue of a run where `strong` ran healthy, changing what the issue shows, on every
    /// other issue and `weak`, `weak2` on none: there all three run healthy, and the two weak
    /// agents outscore it (their agreement part is higher).
    fn outvoted_run() -> Vec<IssueOutcome> {
        let mut run: Vec<IssueOutcome> = (0..4)
            .map(|k| fixing(issue(&format!("i{k}"), true, false)))
            .collect();
        let mut last = issue("last", true, true);
        last.result = Some(serde_json::json!({
            "instance_id": "last", "status": "ranked",
            "ranked": [healthy_last("weak", 4.0), healthy_last("weak2", 4.0), healthy_last("strong", 1.0)],
        }));
        // weak2 has the weak record too: it ran (unhealthy) wherever weak did.
        for o in &mut run[..4] {
            let r = o.result.as_mut().unwrap();
            let mut w2 = r["ranked"][0].clone();
            w2["agent"] = "weak2".into();
            r["ranked"].as_array_mut().unwrap().push(w2);
        }
        run.push(last);
        run
    }

    #[test]
    fn records_within_half_a_standard_error_count_as_the_best() {
        // (share − mean, healthy, ran): 63 of 100 against 62 of 100 is noise; 1.0 against
        // 0.0 over 3 is not; over 24 issues, 20 against 19 is within half a standard error
        // (0.056); over 6, 5 against 4 is not (0.167 against 0.122).
        assert!(within_noise(&(0.0, 63, 100), &(0.0, 62, 100)));
        assert!(!within_noise(&(0.0, 3, 3), &(0.0, 0, 3)));
        assert!(within_noise(&(0.0, 20, 24), &(0.0, 19, 24)));
        assert!(!within_noise(&(0.0, 5, 6), &(0.0, 4, 6)));
        assert!(!within_noise(&(0.0, 90, 100), &(0.0, 60, 100)));
        assert!(within_noise(&(0.0, 5, 6), &(0.0, 5, 6)));

        // A run where strong ran healthy on 20 of its 24 other issues and weak on 19: on the
        // last both run healthy and weak outscores strong (more agreement). Their records are
        // within noise, so the score decides.
        let offline = crate::review::offline::Offline::new(Default::default());
        let mut run: Vec<IssueOutcome> = (0..19)
            .map(|k| issue(&format!("i{k}"), true, true))
            .chain([issue("i19", true, false)])
            .chain((20..24).map(|k| issue(&format!("i{k}"), false, false)))
            .map(fixing)
            .collect();
        let mut last = issue("last", true, true);
        last.result = Some(serde_json::json!({
            "instance_id": "last", "status": "ranked",
            "ranked": [healthy_last("strong", 1.0), healthy_last("weak", 4.0)],
        }));
        run.push(last);
        apply(&mut run, &offline);
        assert_eq!(run[24].top, vec!["weak".to_string()]);
        let ranked = run[24].result.as_ref().unwrap()["ranked"]
            .as_array()
            .unwrap();
        let order: Vec<(&str, u64)> = ranked
            .iter()
            .map(|c| (c["agent"].as_str().unwrap(), c["rank"].as_u64().unwrap()))
            .collect();
        assert_eq!(order, [("weak", 1), ("strong", 2)]);
    }

    /// Six issues where no candidate changes the reproduction (weak leaves it as at base and
    /// breaks nothing, strong breaks a test), three where strong changes it and weak leaves it
    /// as at base, and a last issue where both run healthy and tie.
    fn quiet_breaks_then_changes_run() -> Vec<IssueOutcome> {
        (0..6)
            .map(|k| with_repro(issue(&format!("q{k}"), false, true), "same", "same"))
            .chain(
                (0..3).map(|k| with_repro(issue(&format!("c{k}"), true, true), "same", "changed")),
            )
            .chain([issue("last", true, true)])
            .collect()
    }

    #[test]
    fn a_kind_of_evidence_weighed_at_zero_is_not_counted_in_the_record() {
        use crate::review::offline::{Offline, Weights};
        let health = |w: Weights| {
            Offline::new(Weights {
                exec_record_fixes: false,
                ..w
            })
        };
        // Counting every healthy run, weak ran healthy on 6 of 9 other issues and strong on 3:
        // weak's record wins.
        let mut run = quiet_breaks_then_changes_run();
        apply(&mut run, &health(Default::default()));
        assert_eq!(run[9].top, vec!["weak".to_string()]);
        // With broken tests weighed at zero, strong ran healthy on all 9 and weak on 6.
        let mut run = quiet_breaks_then_changes_run();
        let no_breaks = Weights {
            exec_breaks: 0.0,
            ..Default::default()
        };
        apply(&mut run, &health(no_breaks.clone()));
        assert_eq!(run[9].top, vec!["strong".to_string()]);
        let reason = run[9].result.as_ref().unwrap()["ranked"][0]["reason"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            reason.contains("healthy runs on 9 of 9 other issues"),
            "{reason}"
        );
        // With the reproduction weighed at zero too, both ran healthy everywhere: a tie.
        let no_repro = Weights {
            exec_repro_changed: 0.0,
            exec_repro_same: 0.0,
            ..no_breaks
        };
        let mut run = quiet_breaks_then_changes_run();
        apply(&mut run, &health(no_repro.clone()));
        assert_eq!(run[9].top.len(), 2, "{:?}", run[9].top);

        // The record of fixes (the default) counts only the three issues where a candidate
        // changes the reproduction, and there only strong does: strong's record wins.
        let mut run = quiet_breaks_then_changes_run();
        apply(&mut run, &Offline::new(Default::default()));
        assert_eq!(run[9].top, vec!["strong".to_string()]);
        // With the reproduction weighed at zero nothing shows a change: no issue counts, no
        // record, a tie.
        let mut run = quiet_breaks_then_changes_run();
        apply(&mut run, &Offline::new(no_repro));
        assert_eq!(run[9].top.len(), 2, "{:?}", run[9].top);
    }

    #[test]
    fn healthy_candidates_rank_by_their_agents_record_over_a_consensus() {
        let offline = crate::review::offline::Offline::new(Default::default());
        let mut run = outvoted_run();
        assert_eq!(apply(&mut run, &offline).picked_by_order, 1);
        let last = &run[4];
        assert_eq!(last.top, vec!["strong".to_string()]);
        let ranked = last.result.as_ref().unwrap()["ranked"].as_array().unwrap();
        let order: Vec<&str> = ranked
            .iter()
            .map(|c| c["agent"].as_str().unwrap())
            .collect();
        assert_eq!(order, ["strong", "weak", "weak2"]);
        // It ranks first with the lower score, and its reason says why.
        assert!(ranked[0]["score"].as_f64() < ranked[1]["score"].as_f64());
        assert!(ranked[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the healthy rank first"));
        // The two weak agents share a record and a score: a tie for second.
        assert_eq!(
            (ranked[1]["rank"].as_u64(), ranked[2]["rank"].as_u64()),
            (Some(2), Some(2))
        );
        // Idempotent; the pick is still the order's.
        let again = apply(&mut run, &offline);
        assert!(again.changed.is_empty());
        assert_eq!(again.picked_by_order, 1);

        // With `exec_record_orders` off the record is only a part: the consensus wins.
        let weights = crate::review::offline::Weights {
            exec_record_orders: false,
            ..Default::default()
        };
        let part_only = crate::review::offline::Offline::new(weights);
        let mut run = outvoted_run();
        assert_eq!(apply(&mut run, &part_only).picked_by_order, 0);
        let top = &run[4].top;
        assert!(
            top.contains(&"weak".to_string()) && !top.contains(&"strong".to_string()),
            "{top:?}"
        );
    }
}
