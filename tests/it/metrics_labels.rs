//! Parsing resolved labels, selections and instance lists in the forms people have.

use dei::metrics::labels::{self, LabelFile};
use dei::metrics::selection;
use std::path::{Path, PathBuf};

fn fx(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics")
        .join(rel)
}

fn agent<'a>(f: &'a LabelFile, name: &str) -> &'a labels::AgentLabels {
    &f.agents
        .iter()
        .find(|(a, _)| a == name)
        .unwrap_or_else(|| panic!("no agent {name} in {:?}", f.agents))
        .1
}

#[test]
fn results_json_resolved_list() {
    let f = labels::load(&fx("labels/run-a/results.json"), None).unwrap();
    assert_eq!(f.agents.len(), 1);
    assert_eq!(f.agents[0].0, "run-a"); // generic file name: the folder names the agent
    assert!(f.agent_from_path);
    let a = &f.agents[0].1;
    assert_eq!(a.get("p-2"), Some(true));
    assert_eq!(a.get("p-1"), Some(false));
    assert_eq!(a.get("anything-else"), Some(false)); // list form: not listed = unresolved
    assert_eq!(f.instances.len(), 3); // from "generated"
}

#[test]
fn sb_cli_report_with_resolved_ids() {
    let f = labels::load(&fx("labels/sbcli.json"), None).unwrap();
    assert_eq!(f.agents[0].0, "sbcli");
    let a = &f.agents[0].1;
    assert_eq!(
        (a.get("p-1"), a.get("p-2"), a.get("p-3")),
        (Some(true), Some(false), Some(true))
    );
    assert_eq!(f.instances.len(), 3);
}

#[test]
fn harness_report_per_instance_map() {
    let f = labels::load(&fx("labels/run-b/report.json"), None).unwrap();
    assert_eq!(f.format, "per-instance map");
    let a = &f.agents[0].1;
    assert_eq!(a.get("p-1"), Some(true));
    assert_eq!(a.get("p-3"), Some(false));
    assert_eq!(a.get("p-2"), None); // not in the map: no label
    let b = labels::load(&fx("labels/bools.json"), Some("named")).unwrap();
    assert_eq!(b.agents[0].0, "named");
    assert_eq!(b.agents[0].1.get("p-1"), Some(true));
    assert_eq!(b.agents[0].1.get("p-2"), Some(false));
}

#[test]
fn many_runs_at_once() {
    let f = labels::load(&fx("labels/runs_map.json"), None).unwrap();
    assert_eq!(f.agents.len(), 2);
    assert_eq!(f.instances.len(), 4);
    assert_eq!(agent(&f, "beta").get("p-4"), Some(true));
    assert_eq!(agent(&f, "alpha").get("p-4"), Some(false));

    let f = labels::load(&fx("labels/agent_lists.json"), None).unwrap();
    assert_eq!(agent(&f, "alpha").resolved.len(), 1);
    assert!(agent(&f, "beta").resolved.is_empty());
}

#[test]
fn matrix_csv_with_blank_cells() {
    let f = labels::load(&fx("labels/matrix.csv"), None).unwrap();
    assert_eq!(f.format, "matrix CSV");
    assert_eq!(f.instances.len(), 3);
    let beta = agent(&f, "beta");
    assert_eq!(beta.get("p-1"), Some(false));
    assert_eq!(beta.get("p-2"), None); // blank cell
    assert_eq!(beta.get("p-3"), Some(true));
    assert_eq!(agent(&f, "alpha").get("p-3"), Some(true)); // "true" accepted
}

#[test]
fn jsonl_rows_with_resolved_field() {
    let f = labels::load(&fx("labels/rows.jsonl"), None).unwrap();
    assert_eq!(f.agents.len(), 2);
    assert_eq!(agent(&f, "alpha").get("p-1"), Some(true));
    assert_eq!(agent(&f, "alpha").get("p-2"), Some(false));
    assert_eq!(agent(&f, "beta").get("p-1"), Some(false)); // 0 accepted
    assert_eq!(agent(&f, "beta").get("p-2"), None);
}

#[test]
fn errors_name_the_file_and_place() {
    let e = labels::load(&fx("labels/bad_matrix.csv"), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad_matrix.csv: line 3, column `beta`") && e.contains("maybe"),
        "{e}"
    );
    let e = labels::load(&fx("labels/no_labels.json"), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no resolved labels recognised") && e.contains("hint"),
        "{e}"
    );
    let e = labels::load(&fx("labels/runs_map.json"), Some("x"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds 2 agents"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.jsonl");
    std::fs::write(
        &p,
        "{\"instance_id\":\"a\",\"resolved\":true}\n{\"instance_id\":\"b\"}\n",
    )
    .unwrap();
    let e = labels::load(&p, None).unwrap_err().to_string();
    assert!(
        e.contains("line 2") && e.contains("no \"resolved\" field"),
        "{e}"
    );
    let p = dir.path().join("bad.json");
    std::fs::write(&p, "[{\"instance_id\": \"a\", \"resolved\": \"yes\"}]").unwrap();
    let e = labels::load(&p, None).unwrap_err().to_string();
    assert!(
        e.contains("record #1") && e.contains("true or false"),
        "{e}"
    );
}

#[test]
fn instance_lists_in_three_forms() {
    let ids = labels::load_instance_ids(&fx("hand/tasks.txt")).unwrap();
    assert_eq!(ids, ["i-1", "i-2", "i-3", "i-4", "i-5"]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    std::fs::write(
        &p,
        "{\"instance_id\":\"a\",\"repo\":\"o/r\"}\n{\"instance_id\":\"b\"}\n{\"instance_id\":\"a\"}\n",
    )
    .unwrap();
    assert_eq!(labels::load_instance_ids(&p).unwrap(), ["a", "b"]);
    let p = dir.path().join("t.json");
    std::fs::write(&p, "[\"c\", {\"instance_id\": \"d\"}]").unwrap();
    assert_eq!(labels::load_instance_ids(&p).unwrap(), ["c", "d"]);
    std::fs::write(&p, "[3]").unwrap();
    assert!(labels::load_instance_ids(&p).is_err());
}

#[test]
fn selection_formats_agree() {
    let a = selection::load(&fx("hand/scores.jsonl")).unwrap();
    let b = selection::load(&fx("hand/scores.csv")).unwrap();
    let c = selection::load(&fx("hand/rank_results.jsonl")).unwrap();
    assert_eq!(a.scores.len(), 11);
    assert_eq!(a.scores, b.scores);
    assert_eq!(a.scores[&("i-2".to_string(), "B".to_string())], 7.0);
    // `dei rank` results are read in their rank order (-rank): the same pairs, in the same
    // order within each issue, ties included.
    assert_eq!(
        a.scores.keys().collect::<std::collections::BTreeSet<_>>(),
        c.scores.keys().collect::<std::collections::BTreeSet<_>>()
    );
    for ((i, x), sx) in &a.scores {
        for ((j, y), sy) in &a.scores {
            if i == j {
                let (cx, cy) = (
                    c.scores[&(i.clone(), x.clone())],
                    c.scores[&(j.clone(), y.clone())],
                );
                assert_eq!(sx.total_cmp(sy), cx.total_cmp(&cy), "{i}: {x} against {y}");
            }
        }
    }
    assert_eq!(c.scores[&("i-2".to_string(), "B".to_string())], -1.0);
    // One `dei rank --json` result, and a list of them.
    let dir = tempfile::tempdir().unwrap();
    let one = r#"{"instance_id": "q-1", "ranked": [{"agent": "x", "score": 2.5}, {"agent": "y", "score": 1}]}"#;
    let p = dir.path().join("one.json");
    std::fs::write(&p, one).unwrap();
    assert_eq!(selection::load(&p).unwrap().scores.len(), 2);
    let p = dir.path().join("list.json");
    std::fs::write(&p, format!("[{one}, {one}]")).unwrap();
    let s = selection::load(&p).unwrap();
    assert_eq!((s.scores.len(), s.duplicates), (2, 2));
}

#[test]
fn selection_errors() {
    let dir = tempfile::tempdir().unwrap();
    let check = |name: &str, text: &str, want: &str| {
        let p: PathBuf = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let e = selection::load(Path::new(&p)).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains(want), "{e}");
    };
    check("s.csv", "instance_id,agent,score\na,x,high\n", "line 2");
    check("t.csv", "instance_id,score\n", "no `agent` column");
    check(
        "u.jsonl",
        "{\"instance_id\":\"a\",\"agent\":\"x\",\"score\":1}\n{bad\n",
        "line 2",
    );
    check(
        "v.json",
        r#"{"instance_id": "a", "ranked": [{"agent": "x"}]}"#,
        "numeric `score`",
    );
}

#[test]
fn a_run_with_rows_for_under_half_the_instances_is_scored_where_it_has_rows() {
    use dei::metrics::eval::{self, EvalRequest};
    use dei::metrics::table::{Baseline, Coverage};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cands.jsonl");
    let mut rows = String::new();
    let diff = "diff --git a/x.py b/x.py\\n--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a\\n+b\\n";
    // `full` has a row for each of 6 instances (and resolves i-1..i-3); `part` only for i-1
    // and i-2, resolving both; `gaps` misses two rows, which is no submission there.
    for i in 1..=6 {
        rows += &format!(
            "{{\"instance_id\":\"i-{i}\",\"run\":\"full\",\"model_patch\":\"{diff}\",\"resolved\":{}}}\n",
            i <= 3
        );
        if i <= 4 {
            rows += &format!(
                "{{\"instance_id\":\"i-{i}\",\"run\":\"gaps\",\"model_patch\":\"{diff}\",\"resolved\":false}}\n"
            );
        }
    }
    for i in 1..=2 {
        rows += &format!(
            "{{\"instance_id\":\"i-{i}\",\"run\":\"part\",\"model_patch\":\"{diff}\",\"resolved\":true}}\n"
        );
    }
    std::fs::write(&p, rows).unwrap();
    let run = |coverage, agents: &[&str]| {
        eval::run(&EvalRequest {
            candidates: vec![p.clone()],
            agents: Some(agents.iter().map(|s| s.to_string()).collect()),
            baseline: Some(Baseline::Random),
            coverage,
            ..EvalRequest::default()
        })
        .unwrap()
    };
    let average = |r: &eval::EvalReport| r.curves[0].points.last().unwrap().average;
    let restricted = run(Coverage::Restrict, &["full", "part", "gaps"]);
    assert_eq!(restricted.instances, 2);
    assert!(
        restricted.universe.contains("partial run `part` (2 of 6)"),
        "{}",
        restricted.universe
    );
    assert!((average(&restricted) - 200.0 / 3.0).abs() < 1e-9);
    let every = run(Coverage::All, &["full", "part", "gaps"]);
    assert_eq!(every.instances, 6);
    assert!((average(&every) - 100.0 * 5.0 / 18.0).abs() < 1e-9);
    assert!(
        every.notes.iter().any(|n| n.contains("`part` (2 of 6)")),
        "{:?}",
        every.notes
    );
    // Missing two rows of six is a run that submitted nothing there, not a partial one.
    let no_partial = run(Coverage::Restrict, &["full", "gaps"]);
    assert_eq!(no_partial.instances, 6);
    assert!(!no_partial.universe.contains("partial"));
}
