//! One agent naming rule for `dei rank`, `dei eval` and labels (issue #18, item 8): the same
//! run has the same name whichever file it is read from, and `--agent-name` overrides it.

use crate::support::common;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn lite_runs(d: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(d.join("lite_runs"))
        .unwrap()
        .map(|e| e.unwrap().path().join("all_preds.jsonl"))
        .filter(|p| p.exists())
        .collect();
    runs.sort();
    runs
}

/// (run → resolved instances with a non-empty patch) straight from lite_candidates.jsonl.
fn pooled(d: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(d.join("lite_candidates.jsonl")).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let set = out
            .entry(v["run"].as_str().unwrap().to_string())
            .or_default();
        if v["resolved"] == true && !v["model_patch"].as_str().unwrap_or("").trim().is_empty() {
            set.insert(v["instance_id"].as_str().unwrap().to_string());
        }
    }
    out
}

#[test]
fn run_files_and_the_pooled_file_name_the_same_agents() {
    let Some(d) = shared_data() else {
        return skip("../shared/data not present");
    };
    let runs = lite_runs(&d);
    assert_eq!(runs.len(), 14);
    let from_runs: BTreeSet<String> = dei::candidates::load(&runs)
        .unwrap()
        .agents()
        .into_iter()
        .collect();
    let from_pool: BTreeSet<String> = dei::candidates::load(&[d.join("lite_candidates.jsonl")])
        .unwrap()
        .agents()
        .into_iter()
        .collect();
    assert_eq!(from_runs.len(), 14, "{from_runs:?}");
    assert_eq!(from_runs, from_pool);
    let want: BTreeSet<String> = pooled(&d).into_keys().collect();
    assert_eq!(from_runs, want);
}

/// `dei eval` of the 14 run folders with the results.json beside each: no renaming, and each
/// agent's resolve count is the pooled file's.
#[test]
fn eval_of_run_folders_needs_no_renaming() {
    let Some(d) = shared_data() else {
        return skip("../shared/data not present");
    };
    let runs = lite_runs(&d);
    let mut args: Vec<String> = vec!["eval".into()];
    args.extend(runs.iter().map(|p| p.display().to_string()));
    for p in &runs {
        args.push("--labels".into());
        args.push(p.with_file_name("results.json").display().to_string());
    }
    let tasks = d.join("swebench_lite/test.jsonl");
    args.extend(
        [
            "--tasks",
            path_str(&tasks),
            "--order",
            "given",
            "--bootstrap",
            "0",
            "--json",
            "-",
        ]
        .map(String::from),
    );
    let out = dei(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got: BTreeMap<String, u64> = report["diversity"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().to_string(),
                a["resolved"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<String, u64> = pooled(&d)
        .into_iter()
        .map(|(run, set)| (run, set.len() as u64))
        .collect();
    assert_eq!(got, want);
    // Each agent's labels came from its own results.json.
    for a in report["agents"].as_array().unwrap() {
        let name = a["name"].as_str().unwrap();
        let sources = a["label_sources"].to_string();
        assert!(
            sources.contains(&format!("{name}/results.json")),
            "{name}: {sources}"
        );
    }
}

#[test]
fn labels_beside_predictions_are_named_like_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-7");
    std::fs::create_dir_all(&run).unwrap();
    // The model name is another run's: it names nothing.
    std::fs::write(
        run.join("all_preds.jsonl"),
        "{\"instance_id\": \"i-1\", \"model_name_or_path\": \"run-6\", \"model_patch\": \"p\"}\n",
    )
    .unwrap();
    std::fs::write(run.join("results.json"), "{\"resolved\": [\"i-1\"]}").unwrap();
    let labels = dei::metrics::labels::load(&run.join("results.json"), None).unwrap();
    let loaded = dei::candidates::load(&[run.join("all_preds.jsonl")]).unwrap();
    assert_eq!(loaded.agents(), ["run-7"]);
    assert_eq!(labels.agents[0].0, "run-7");
}

#[test]
fn agent_name_overrides_rank_and_eval() {
    // By path as given, and by the derived name (the example's JSONL file is `tests-only-agent`).
    let out = dei(&example_rank_args(&[
        "--agent-name",
        "examples/candidates/careful-agent=careful",
        "--agent-name",
        "tests-only-agent=tests-only",
        "--json",
        "-",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let agents: BTreeSet<&str> = v["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        agents,
        BTreeSet::from([
            "careful",
            "empty-agent",
            "second-agent",
            "stale-agent",
            "tests-only",
            "wrong-place-agent"
        ])
    );
    // A SOURCE that matches nothing is an error, not silence.
    let out = dei(&example_rank_args(&["--agent-name", "nobody=x"]));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--agent-name nobody=x: SOURCE matches no"),
        "{}",
        stderr(&out)
    );

    // dei eval: the override renames the candidates and the labels alike.
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"instance_id\": \"example__textkit-1\", \"agent\": \"careful-agent\", \"resolved\": true}\n",
    )
    .unwrap();
    let out = dei(&[
        "eval",
        "examples/candidates/careful-agent",
        "--labels",
        path_str(&labels),
        "--agent-name",
        "careful-agent=careful",
        "--bootstrap",
        "0",
        "--json",
        "-",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents: Vec<&str> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["careful"]);
    assert_eq!(v["diversity"]["agents"][0]["resolved"], 1);
}
