//! `dei eval --scores` reads what `dei rank --all` writes (issue #18, item 9): the run
//! directory, its journal.jsonl, its summary.json and the `--json` of the run, with figures
//! checked against a count made here from the journal.

use crate::support::scale_util;

use scale_util::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

const AGENTS: usize = 4;

/// The labels of this test (not the corpus's `resolved` fields): agent `a` resolves issue `i`
/// when `(i + a) % 3 == 0`.
fn resolved(issue: usize, agent: usize) -> bool {
    (issue + agent).is_multiple_of(3)
}

fn issue_number(id: &str) -> usize {
    id.rsplit('-').next().unwrap().parse().unwrap()
}

/// n@1 of the whole committee (the last point of the given order), in percent.
fn n_at_all(report: &Value) -> f64 {
    let points = report["curves"][0]["points"].as_array().unwrap();
    points.last().unwrap()["n_at_k"].as_f64().unwrap()
}

/// Expected n@1 per instance, from the journal's last line of each issue: the share of
/// resolved candidates among those sharing the top score; an issue without a ranking is a
/// uniformly random pick among the `AGENTS` slots.
fn expected(journal: &Path, instances: &[usize]) -> BTreeMap<usize, f64> {
    let mut last: BTreeMap<usize, Value> = BTreeMap::new();
    for line in std::fs::read_to_string(journal).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        last.insert(issue_number(v["instance_id"].as_str().unwrap()), v);
    }
    instances
        .iter()
        .map(|&i| {
            let ranked = last
                .get(&i)
                .and_then(|o| o["result"]["ranked"].as_array().cloned());
            let value = match ranked {
                Some(ranked) => {
                    let scored: Vec<(usize, f64)> = ranked
                        .iter()
                        .filter_map(|r| {
                            let agent = r["agent"].as_str().unwrap();
                            let a: usize = agent.trim_start_matches("agent").parse().unwrap();
                            r["score"].as_f64().map(|s| (a, s))
                        })
                        .collect();
                    let top = scored.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
                    let group: Vec<usize> =
                        scored.iter().filter(|x| x.1 == top).map(|x| x.0).collect();
                    let hits = group.iter().filter(|&&a| resolved(i, a)).count();
                    hits as f64 / group.len() as f64
                }
                None => (0..AGENTS).filter(|&a| resolved(i, a)).count() as f64 / AGENTS as f64,
            };
            (i, value)
        })
        .collect()
}

#[test]
fn a_run_directory_its_journal_summary_and_json_are_scores() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 6, AGENTS, 8);
    // One more issue that no task has: the run records it as an error, with no ranking.
    let mut preds = std::fs::read_to_string(&sy.preds).unwrap();
    preds.push_str(
        &(json!({"instance_id": "synth__synth-99", "model_name_or_path": "agent0", "model_patch": "x"})
            .to_string()
            + "\n"),
    );
    std::fs::write(&sy.preds, preds).unwrap();
    let run_dir = dir.path().join("run");
    let summary = dir.path().join("summary-copy.json");
    let out = run(&rank_args(&sy, &run_dir, &["--all", "--json", s(&summary)]));
    // The unknown issue is not ranked: the run finishes, writes everything, and exits 1.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("(1 unknown_issue)"),
        "{}",
        text(&out.stderr)
    );

    let instances: Vec<usize> = (0..6).chain([99]).collect();
    let mut labels = String::new();
    for &i in &instances {
        for a in 0..AGENTS {
            labels.push_str(
                &(json!({"instance_id": format!("synth__synth-{i}"), "agent": format!("agent{a}"), "resolved": resolved(i, a)})
                    .to_string()
                    + "\n"),
            );
        }
    }
    let labels_path = dir.path().join("labels.jsonl");
    std::fs::write(&labels_path, labels).unwrap();
    let want = expected(&run_dir.join("journal.jsonl"), &instances);
    // The committee must have made real choices for the check to mean anything.
    assert!(
        want.values().any(|&v| v > 0.0) && want.values().any(|&v| v < 1.0),
        "{want:?}"
    );
    let all = 100.0 * want.values().sum::<f64>() / instances.len() as f64;
    let ranked_only = 100.0
        * want
            .iter()
            .filter(|(i, _)| **i != 99)
            .map(|x| x.1)
            .sum::<f64>()
        / 6.0;

    let l = s(&labels_path);
    let by_dir = eval_json(&["--labels", l, "--scores", s(&run_dir)]);
    assert_eq!(by_dir["instances"], 7);
    assert!(
        (n_at_all(&by_dir) - all).abs() < 1e-9,
        "{} vs {all}",
        n_at_all(&by_dir)
    );
    let notes = by_dir["notes"].to_string();
    assert!(
        notes.contains("6 issue(s) ranked")
            && notes.contains("1 issue(s) had no ranking (unknown_issue: 1)"),
        "{notes}"
    );
    let scored_only = eval_json(&["--labels", l, "--scores", s(&run_dir), "--scored-only"]);
    assert_eq!(scored_only["instances"], 6);
    assert!((n_at_all(&scored_only) - ranked_only).abs() < 1e-9);

    // The journal itself, and the summary.json beside it, give the same curves.
    let journal = eval_json(&["--labels", l, "--scores", s(&run_dir.join("journal.jsonl"))]);
    let beside = eval_json(&["--labels", l, "--scores", s(&run_dir.join("summary.json"))]);
    assert_eq!(journal["curves"], by_dir["curves"]);
    assert_eq!(beside["curves"], by_dir["curves"]);

    // The run's --json written elsewhere holds top picks only: n@1 of the whole committee,
    // and nothing for smaller committees.
    let copy = eval_json(&["--labels", l, "--scores", s(&summary)]);
    assert!((n_at_all(&copy) - all).abs() < 1e-9);
    let points = copy["curves"][0]["points"].as_array().unwrap();
    assert!(
        points[..AGENTS - 1].iter().all(|p| p["n_at_k"].is_null()),
        "{points:?}"
    );
    let out = dei_cmd()
        .args([
            "eval",
            "--labels",
            l,
            "--scores",
            s(&summary),
            "--top-n",
            "2",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("needs full rankings"),
        "{}",
        text(&out.stderr)
    );
}

/// A journal written by hand in both ranking formats: numeric scores, and `"score": null`
/// for unscored candidates; each issue's last line wins.
#[test]
fn null_scores_and_the_last_line_of_each_issue() {
    let dir = tempfile::tempdir().unwrap();
    let ranked = |id: &str, scores: &[(&str, Value)]| {
        json!({"instance_id": id, "result": {"instance_id": id, "ranked": scores
            .iter()
            .map(|(a, s)| json!({"agent": a, "score": s, "status": if s.is_null() { "unscored" } else { "scored" }}))
            .collect::<Vec<_>>()}})
    };
    let error =
        |id: &str| json!({"instance_id": id, "error_kind": "missing_repo", "error": "no repo"});
    let lines = [
        // i-1: an error, then ranked on a rerun: b (unresolved) is scored, a (resolved) is not.
        error("i-1"),
        ranked("i-1", &[("a", Value::Null), ("b", json!(2.0))]),
        // i-2: every candidate unscored: no pick, although a resolves it.
        ranked("i-2", &[("a", Value::Null), ("b", Value::Null)]),
        // i-3: ranked, then an error on a later run: no ranking.
        ranked("i-3", &[("a", json!(1.0)), ("b", json!(0.5))]),
        error("i-3"),
        // i-4: a scored and resolved.
        ranked("i-4", &[("a", json!(3.0)), ("b", json!(1.0))]),
    ];
    let journal = dir.path().join("journal.jsonl");
    // And a torn last line, as an interrupted run leaves it.
    let torn = "{\"instance_id\": \"i-4\", \"resu";
    std::fs::write(
        &journal,
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>()
            + torn,
    )
    .unwrap();
    let labels = dir.path().join("labels.jsonl");
    let mut text_labels = String::new();
    for i in 1..=4 {
        text_labels.push_str(&format!(
            "{{\"instance_id\": \"i-{i}\", \"agent\": \"a\", \"resolved\": true}}\n{{\"instance_id\": \"i-{i}\", \"agent\": \"b\", \"resolved\": false}}\n"
        ));
    }
    std::fs::write(&labels, text_labels).unwrap();
    let r = eval_json(&["--labels", s(&labels), "--scores", s(dir.path())]);
    // i-1: b picked (0); i-2: no pick (0); i-3: no ranking, random of 2 (1/2); i-4: a (1).
    assert!(
        (n_at_all(&r) - 100.0 * 1.5 / 4.0).abs() < 1e-9,
        "{}",
        n_at_all(&r)
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("1 of 4 instances were ranked with every candidate unscored"),
        "{notes}"
    );
    assert!(
        notes.contains("1 issue(s) had no ranking (missing_repo: 1)"),
        "{notes}"
    );
    assert!(
        notes.contains(&format!("a torn last line ({} bytes", torn.len())),
        "{notes}"
    );
    // --scored-only keeps the no-pick issue (the committee ran and chose nothing).
    let r = eval_json(&[
        "--labels",
        s(&labels),
        "--scores",
        s(dir.path()),
        "--scored-only",
    ]);
    assert_eq!(r["instances"], 3);
    assert!((n_at_all(&r) - 100.0 / 3.0).abs() < 1e-9);
}

#[test]
fn a_ranking_is_read_in_its_rank_order() {
    // Over a run, the record ranks a healthy candidate first with a lower score (`a`, 6.0,
    // rank 1, above `b`, 8.0): eval credits the printed pick. Without ranks the scores decide.
    let dir = tempfile::tempdir().unwrap();
    let issue = |id: &str, with_rank: bool| {
        let entry = |a: &str, score: f64, rank: u64| {
            let mut e = json!({"agent": a, "score": score, "status": "reviewed"});
            if with_rank {
                e["rank"] = json!(rank);
            }
            e
        };
        json!({"instance_id": id, "result": {"instance_id": id, "status": "ranked",
               "ranked": [entry("a", 6.0, 1), entry("b", 8.0, 2), entry("c", 8.0, 2)]}})
    };
    let labels = dir.path().join("labels.jsonl");
    let mut text_labels = String::new();
    for i in 1..=2 {
        for (a, r) in [("a", true), ("b", false), ("c", false)] {
            text_labels.push_str(&format!(
                "{{\"instance_id\": \"i-{i}\", \"agent\": \"{a}\", \"resolved\": {r}}}\n"
            ));
        }
    }
    std::fs::write(&labels, text_labels).unwrap();
    for (with_rank, want) in [(true, 100.0), (false, 0.0)] {
        let journal = dir.path().join(format!("journal-{with_rank}.jsonl"));
        std::fs::write(
            &journal,
            format!("{}\n{}\n", issue("i-1", with_rank), issue("i-2", with_rank)),
        )
        .unwrap();
        let r = eval_json(&["--labels", s(&labels), "--scores", s(&journal)]);
        assert!(
            (n_at_all(&r) - want).abs() < 1e-9,
            "ranks {with_rank}: {}",
            n_at_all(&r)
        );
        // The same results as `dei rank --json` writes them, one per line.
        let results = dir.path().join(format!("results-{with_rank}.jsonl"));
        std::fs::write(
            &results,
            format!(
                "{}\n{}\n",
                issue("i-1", with_rank)["result"],
                issue("i-2", with_rank)["result"]
            ),
        )
        .unwrap();
        let r = eval_json(&["--labels", s(&labels), "--scores", s(&results)]);
        assert!(
            (n_at_all(&r) - want).abs() < 1e-9,
            "json, ranks {with_rank}: {}",
            n_at_all(&r)
        );
    }
}

#[test]
fn a_folder_without_a_journal_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("l.jsonl");
    std::fs::write(
        &labels,
        "{\"instance_id\": \"i-1\", \"agent\": \"a\", \"resolved\": true}\n",
    )
    .unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = dei_cmd()
        .args(["eval", "--labels", s(&labels), "--scores", s(&empty)])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: a folder without journal.jsonl",
            empty.display()
        )),
        "{err}"
    );
}

/// A journal line of issue `id` ranking `alpha_x` and `beta_x`: each `(rank, behaviour)`.
fn basis_line(id: &str, alpha: (u64, Value), beta: (u64, Value)) -> String {
    json!({"instance_id": id, "result": {"instance_id": id, "status": "ranked", "ranked": [
        {"agent": "alpha_x", "score": 6.0, "rank": alpha.0, "behaviour": alpha.1},
        {"agent": "beta_x", "score": 5.0, "rank": beta.0, "behaviour": beta.1},
    ]}})
    .to_string()
        + "\n"
}

/// `dei eval` says, per basis of the pick, how many issues, how often the pick resolves them
/// and how often the best single member does on the same issues, computed from each
/// candidate's behaviour and rank (a journal written before `pick_basis` existed gives it too).
#[test]
fn eval_reports_the_picks_by_what_they_rest_on() {
    let dir = tempfile::tempdir().unwrap();
    let changed = |class: u64| json!({"tests_run": 2, "repro": "changed", "class": class});
    let same = json!({"tests_run": 2, "repro": "same", "class": 0});
    let breaks = json!({"tests_run": 2, "broken": ["t::x"], "repro": "changed", "class": 3});
    let journal = [
        // Both families change the reproduction alike: agreement.
        basis_line("i-1", (1, changed(1)), (2, changed(1))),
        // Another class: alone.
        basis_line("i-2", (1, changed(1)), (2, changed(2))),
        // Nobody changes it: quiet.
        basis_line("i-3", (1, same.clone()), (2, same.clone())),
        // The pick breaks a test: unhealthy.
        basis_line("i-4", (1, breaks), (2, changed(1))),
        // A tie of two that agree: agreement, credit ½.
        basis_line("i-5", (1, changed(1)), (1, changed(1))),
    ]
    .concat();
    let journal_path = dir.path().join("journal.jsonl");
    std::fs::write(&journal_path, &journal).unwrap();
    // alpha resolves 1, 4 and 5 (the best single member); beta resolves 2.
    let mut labels = String::new();
    for (i, a, r) in [
        (1, "alpha_x", true),
        (1, "beta_x", false),
        (2, "alpha_x", false),
        (2, "beta_x", true),
        (3, "alpha_x", false),
        (3, "beta_x", false),
        (4, "alpha_x", true),
        (4, "beta_x", false),
        (5, "alpha_x", true),
        (5, "beta_x", false),
    ] {
        labels.push_str(
            &(json!({"instance_id": format!("i-{i}"), "agent": a, "resolved": r}).to_string()
                + "\n"),
        );
    }
    let labels_path = dir.path().join("labels.jsonl");
    std::fs::write(&labels_path, labels).unwrap();
    let r = eval_json(&["--labels", s(&labels_path), "--scores", s(&journal_path)]);
    let rows: Vec<(String, u64, f64, f64, f64)> = r["by_basis"]
        .as_array()
        .unwrap_or_else(|| panic!("no by_basis: {r}"))
        .iter()
        .map(|b| {
            (
                b["basis"].as_str().unwrap().to_string(),
                b["issues"].as_u64().unwrap(),
                b["n_at_k"].as_f64().unwrap(),
                b["best_single"].as_f64().unwrap(),
                b["union"].as_f64().unwrap(),
            )
        })
        .collect();
    // (basis, issues, n@K, best single, Union@K): on i-2 only beta is right.
    assert_eq!(
        rows,
        vec![
            ("agreement".to_string(), 2, 75.0, 100.0, 100.0),
            ("alone".to_string(), 1, 0.0, 0.0, 100.0),
            ("quiet".to_string(), 1, 0.0, 0.0, 0.0),
            ("unhealthy".to_string(), 1, 100.0, 100.0, 100.0),
        ]
    );
    // The text report and the HTML page have the same rows.
    let html_path = dir.path().join("r.html");
    let out = dei_cmd()
        .args([
            "eval",
            "--labels",
            s(&labels_path),
            "--scores",
            s(&journal_path),
        ])
        .args([
            "--order",
            "given",
            "--bootstrap",
            "0",
            "--html",
            s(&html_path),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(t.contains("What the picks rest on"), "{t}");
    assert!(
        t.contains("  agreement        2    75.0        100.0     100.0\n"),
        "{t}"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("<h2>What the picks rest on (--exec)</h2>"),
        "{html}"
    );
    assert!(
        html.contains("<tr><td class=\"l\">agreement</td><td>2</td><td>75.0</td><td>100.0</td><td>100.0</td></tr>"),
        "{html}"
    );
    // `dei rank --json` results, one per line, give the same rows.
    let results: String = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["result"].to_string() + "\n")
        .collect();
    let json_path = dir.path().join("results.jsonl");
    std::fs::write(&json_path, results).unwrap();
    let again = eval_json(&["--labels", s(&labels_path), "--scores", s(&json_path)]);
    assert_eq!(again["by_basis"], r["by_basis"]);
    // One agent of two: its pick is another candidate, so the ranking's basis is not said.
    let one = eval_json(&[
        "--labels",
        s(&labels_path),
        "--scores",
        s(&journal_path),
        "--agents",
        "alpha_x",
    ]);
    assert!(one.get("by_basis").is_none(), "{one}");
    // A ranking without execution evidence has no basis.
    let plain = journal.replace("\"behaviour\"", "\"was\"");
    std::fs::write(&journal_path, plain).unwrap();
    let without = eval_json(&["--labels", s(&labels_path), "--scores", s(&journal_path)]);
    assert!(without.get("by_basis").is_none(), "{without}");
    // A behaviour that does not read costs the basis, never the line: the scores still count.
    let odd = journal.replace("\"tests_run\":2", "\"tests_run\":\"two\"");
    assert_ne!(odd, journal);
    std::fs::write(&journal_path, odd).unwrap();
    let odd = eval_json(&["--labels", s(&labels_path), "--scores", s(&journal_path)]);
    assert_eq!(n_at_all(&odd), n_at_all(&r), "{odd}");
    assert!(!odd["notes"].to_string().contains("unreadable"), "{odd}");
}
