//! `--predictions FILE` (the committee's picks as SWE-bench predictions) and
//! `--instance-ids FILE` (a list of issues), as the SWE-bench workflow uses them.

use crate::support::scale_util;

use scale_util::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Each input candidate's patch by (instance, agent).
fn input_patches(preds: &Path) -> BTreeMap<(String, String), String> {
    records(preds)
        .into_iter()
        .map(|r| {
            (
                (
                    r["instance_id"].as_str().unwrap().to_string(),
                    r["model_name_or_path"].as_str().unwrap().to_string(),
                ),
                r["model_patch"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The resolve rate of the one run of a `dei eval` report (its 1@1 as a run), in percent.
fn one_at_one(report: &Value) -> f64 {
    report["curves"][0]["points"][0]["average"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_run_writes_the_top_pick_of_each_issue_as_a_prediction_that_eval_scores_as_the_ranking_does() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 12, 4, 4);
    let run_dir = dir.path().join("run");
    let preds = dir.path().join("picks.jsonl");
    let out = run(&rank_args(
        &sy,
        &run_dir,
        &["--all", "--predictions", s(&preds), "--json", "-"],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains("predictions: 12 record(s) written to"),
        "{err}"
    );
    let picks = records(&preds);
    assert_eq!(picks.len(), 12);
    let inputs = input_patches(&sy.preds);
    let rows: BTreeMap<String, Value> = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["instance_id"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    for p in &picks {
        let id = p["instance_id"].as_str().unwrap();
        let agent = p["dei_agent"].as_str().unwrap();
        assert_eq!(p["model_name_or_path"], "dei");
        // the exact text the agent wrote, and the agent the ranking put first
        assert_eq!(
            p["model_patch"].as_str().unwrap(),
            inputs[&(id.to_string(), agent.to_string())]
        );
        let top = rows[id]["top"].as_array().unwrap();
        assert_eq!(top[0], agent, "{id}");
        let tied: Vec<&Value> = top[1..].iter().collect();
        let named: Vec<&Value> = p["dei_tied_with"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        assert_eq!(named, tied, "{id}: the others sharing the top are named");
        assert_eq!(p["dei_score"], rows[id]["top_score"]);
    }
    // Fed back to `dei eval` as a run, its 1@1 is the ranking's 1@k (here every tie at the top
    // is between candidates with the same label, so the tie rule does not move it).
    let report = eval_json(&[s(&preds), "--tasks", s(&sy.tasks)]);
    let ranking = summary["top1_resolved"].as_f64().unwrap() / 12.0 * 100.0;
    assert!(
        (one_at_one(&report) - ranking).abs() < 1e-9,
        "eval of the predictions {} vs the ranking {ranking}",
        one_at_one(&report)
    );
    // The same command again resumes (nothing to do) and writes the same file.
    let before = std::fs::read(&preds).unwrap();
    let out = run(&rank_args(
        &sy,
        &run_dir,
        &["--all", "--predictions", s(&preds)],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("0 issues run now, 12 already in"));
    assert_eq!(std::fs::read(&preds).unwrap(), before);
}

#[test]
fn a_tie_between_a_right_and_a_wrong_candidate_is_broken_by_the_stated_rule_and_marked() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 6, 4, 4);
    // agent0 and agent1 write the same fix (they tie); only agent1 is labelled resolved.
    let relabelled: String = records(&sy.preds)
        .into_iter()
        .map(|mut r| {
            r["resolved"] = Value::Bool(r["model_name_or_path"] == "agent1");
            r.to_string() + "\n"
        })
        .collect();
    std::fs::write(&sy.preds, relabelled).unwrap();
    let run_dir = dir.path().join("run");
    let preds = dir.path().join("picks.json");
    let out = run(&rank_args(
        &sy,
        &run_dir,
        &[
            "--all",
            "--predictions",
            s(&preds),
            "--predictions-name",
            "my-committee",
        ],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("broke a tie at the top"), "{err}");
    // a `.json` name gets one JSON list, as the harness reads it
    let picks: Vec<Value> = serde_json::from_slice(&std::fs::read(&preds).unwrap()).unwrap();
    assert_eq!(picks.len(), 6);
    for p in &picks {
        assert_eq!(p["model_name_or_path"], "my-committee");
        // the first listed of the tie: at equal scores the ranking keeps the input order
        assert_eq!(p["dei_agent"], "agent0", "{p}");
        assert_eq!(p["dei_tied_with"][0], "agent1", "{p}");
        assert_eq!(p["resolved"], false);
    }
    // The ranking counts each tie as half a resolve; the file, with one pick each, none.
    let report = eval_json(&[s(&preds), "--tasks", s(&sy.tasks)]);
    assert_eq!(one_at_one(&report), 0.0);
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["top1_resolved"].as_f64().unwrap(), 3.0);
}

#[test]
fn shards_merged_write_the_same_predictions_as_one_run_and_a_whole_run_leaves_no_shard_missing() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 12, 4, 4);
    let full = dir.path().join("full");
    let whole = dir.path().join("whole.jsonl");
    assert!(run(&rank_args(
        &sy,
        &full,
        &["--all", "--predictions", s(&whole)]
    ))
    .status
    .success());
    let mut shards = Vec::new();
    for i in 1..=2 {
        let d = dir.path().join(format!("shard{i}"));
        let out = run(&rank_args(
            &sy,
            &d,
            &["--all", "--shard", &format!("{i}/2")],
        ));
        assert!(out.status.success(), "{}", text(&out.stderr));
        shards.push(d);
    }
    let merged = dir.path().join("merged.jsonl");
    let out = run(&[
        "merge".into(),
        s(&shards[0]).into(),
        s(&shards[1]).into(),
        "--predictions".into(),
        s(&merged).into(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&merged).unwrap(),
        std::fs::read(&whole).unwrap()
    );
    // Shard 1/2 beside the whole run: every issue is there, so no shard is missing.
    let out = run(&["merge".into(), s(&shards[0]).into(), s(&full).into()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("missing"),
        "{}",
        text(&out.stderr)
    );
    // Shard 1/2 alone: shard 2/2 is.
    let out = run(&["merge".into(), s(&shards[0]).into()]);
    assert!(text(&out.stderr).contains("shard 2/2 is missing"));
}

#[test]
fn a_merge_of_runs_with_unranked_issues_succeeds_and_says_how_to_rerun_them() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 4, 3, 4);
    let d = dir.path().join("run");
    let out = run(&rank_args(
        &sy,
        &d,
        &["--issue", "synth__synth-0", "--issue", "nobody__proposed-1"],
    ));
    assert!(!out.status.success(), "the run names its unranked issue");
    let preds = dir.path().join("merged.jsonl");
    let out = run(&[
        "merge".into(),
        s(&d).into(),
        "--predictions".into(),
        s(&preds).into(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "the merge itself succeeded: {err}");
    assert!(
        err.contains("1 of 2 issues were not ranked")
            && err.contains("rerun the run directory that holds them")
            && !err.contains("then rerun with --retry-errors"),
        "{err}"
    );
    assert!(
        err.contains("no pick, so no record, for 1 issue(s): nobody__proposed-1 (not ranked"),
        "{err}"
    );
    assert_eq!(records(&preds).len(), 1);
}

#[test]
fn an_id_list_selects_the_issues_and_unknown_ids_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 6, 3, 4);
    let list = dir.path().join("ids.txt");
    std::fs::write(
        &list,
        "# two of the six\nsynth__synth-4\nsynth__synth-1  # the second\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let out = run(&rank_args(&sy, &run_dir, &["--instance-ids", s(&list)]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut ids = journal_ids(&run_dir);
    ids.sort();
    assert_eq!(ids, ["synth__synth-1", "synth__synth-4"]);

    std::fs::write(&list, "synth__synth-1\nnot__an-issue\nsynth__synth-77\n").unwrap();
    let fresh = dir.path().join("fresh");
    let out = run(&rank_args(&sy, &fresh, &["--instance-ids", s(&list)]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("2 of the 3 ids in")
            && err.contains("not__an-issue (line 2), synth__synth-77 (line 3)"),
        "{err}"
    );
    assert!(
        !fresh.join("journal.jsonl").exists(),
        "nothing was run before the refusal"
    );

    // eval takes the same list: only those instances are scored
    std::fs::write(&list, "synth__synth-1\nsynth__synth-4\n").unwrap();
    let report = eval_json(&[
        s(&sy.preds),
        "--tasks",
        s(&sy.tasks),
        "--instance-ids",
        s(&list),
    ]);
    assert_eq!(
        report["instances"].as_u64(),
        Some(2),
        "{}",
        report["instances"]
    );
    std::fs::write(&list, "synth__synth-1\nsynth__synth-404\n").unwrap();
    let out = dei_cmd()
        .args([
            "eval",
            s(&sy.preds),
            "--tasks",
            s(&sy.tasks),
            "--instance-ids",
            s(&list),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("synth__synth-404 (line 2)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn one_issue_ranked_alone_writes_its_pick_too() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 2, 3, 4);
    let preds = dir.path().join("one.jsonl");
    let out = dei_cmd()
        .args([
            "rank",
            s(&sy.preds),
            "--tasks",
            s(&sy.tasks),
            "--repo",
            s(&sy.repo),
            "--issue",
            "synth__synth-1",
            "--predictions",
            s(&preds),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picks = records(&preds);
    assert_eq!(picks.len(), 1);
    assert_eq!(picks[0]["instance_id"], "synth__synth-1");
    assert!(picks[0]["model_patch"].as_str().unwrap().contains("abs(x)"));
}

#[test]
fn generate_and_locate_take_the_same_id_list() {
    use crate::support::common::{dei, example_repo, path_str, stderr, stdout};
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("ids.txt");
    std::fs::write(&list, "example__textkit-1\n").unwrap();
    let repo = example_repo();
    let located = dei(&[
        "locate",
        "--tasks",
        "examples/tasks.jsonl",
        "--instance-ids",
        path_str(&list),
        "--repo",
        path_str(&repo),
        "--json",
        "-",
    ]);
    assert!(located.status.success(), "{}", stderr(&located));
    // one JSON line per listed issue
    let lines: Vec<Value> = stdout(&located)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert!(lines[0]["files"][0]["path"]
        .as_str()
        .unwrap()
        .contains("words.py"));

    std::fs::write(&list, "example__textkit-1\nexample__textkit-2\n").unwrap();
    let out = dir.path().join("gen.jsonl");
    for head in [
        vec!["locate", "--repo", path_str(&repo)],
        vec![
            "generate",
            "--repo",
            path_str(&repo),
            "--out",
            path_str(&out),
            "--llm",
            "openai-compatible:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    ] {
        let mut args = head.clone();
        args.extend([
            "--tasks",
            "examples/tasks.jsonl",
            "--instance-ids",
            path_str(&list),
        ]);
        let o = dei(&args);
        assert!(!o.status.success(), "{}", head[0]);
        assert!(
            stderr(&o).contains("1 of the 2 ids in")
                && stderr(&o).contains("example__textkit-2 (line 2)"),
            "{}: {}",
            head[0],
            stderr(&o)
        );
    }
    assert!(!out.exists(), "generate refused before writing anything");
}
