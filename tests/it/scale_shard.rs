//! `--shard i/n` and `dei merge`; multi-issue results equal single-issue `dei rank`.

use crate::support::scale_util;

use scale_util::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn summary_rows(v: &Value) -> Vec<(String, String, Value, Value)> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["instance_id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                r["top"].clone(),
                r["top_score"].clone(),
            )
        })
        .collect()
}

fn read_summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn shards_partition_the_issues_and_merge_equals_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 40, 4, 6);
    let full = dir.path().join("full");
    assert!(run(&rank_args(&sy, &full, &["--all"])).status.success());
    let mut shard_dirs = Vec::new();
    let mut seen = BTreeSet::new();
    for i in 1..=3 {
        let d = dir.path().join(format!("shard{i}"));
        let out = run(&rank_args(
            &sy,
            &d,
            &["--all", "--shard", &format!("{i}/3")],
        ));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let ids = journal_ids(&d);
        assert!(
            ids.len() >= 5,
            "shard {i}/3 got only {} of 40 issues",
            ids.len()
        );
        for id in ids {
            assert!(seen.insert(id.clone()), "{id} is in two shards");
        }
        shard_dirs.push(d);
    }
    assert_eq!(seen.len(), 40);

    // The split depends on ids, not on input order.
    let text_preds = std::fs::read_to_string(&sy.preds).unwrap();
    let mut lines: Vec<&str> = text_preds.lines().collect();
    lines.reverse();
    let reversed = dir.path().join("reversed.jsonl");
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    let rdir = dir.path().join("rev1");
    let out = run(&[
        "rank",
        s(&reversed),
        "--tasks",
        s(&sy.tasks),
        "--repo",
        s(&sy.repo),
        "--all",
        "--shard",
        "1/3",
        "--run-dir",
        s(&rdir),
    ]
    .map(String::from));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a: BTreeSet<String> = journal_ids(&rdir).into_iter().collect();
    let b: BTreeSet<String> = journal_ids(&shard_dirs[0]).into_iter().collect();
    assert_eq!(a, b);

    // Merge all three: same picks as the unsharded run.
    let merged_dir = dir.path().join("merged");
    let mut args = vec!["merge".to_string()];
    args.extend(shard_dirs.iter().map(|d| s(d).to_string()));
    args.extend([
        "--json".into(),
        "-".into(),
        "--out-dir".into(),
        s(&merged_dir).into(),
    ]);
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    let whole = read_summary(&full);
    assert_eq!(summary_rows(&merged), summary_rows(&whole));
    assert_eq!(merged["top1_resolved"], whole["top1_resolved"]);
    assert_eq!(journal_ids(&merged_dir).len(), 40);

    // A missing shard is named.
    let out = run(&[
        "merge".into(),
        s(&shard_dirs[0]).into(),
        s(&shard_dirs[2]).into(),
    ]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("shard 2/3 is missing"),
        "{}",
        text(&out.stderr)
    );

    // Runs of different inputs do not merge.
    let other = dir.path().join("other");
    assert!(run(&rank_args(
        &sy,
        &other,
        &["--all", "--strict", "--shard", "2/3"]
    ))
    .status
    .success());
    let out = run(&["merge".into(), s(&shard_dirs[0]).into(), s(&other).into()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("different inputs"),
        "{}",
        text(&out.stderr)
    );
}

/// Shards run on two machines hold their inputs in other folders; the same contents merge.
#[test]
fn shards_whose_inputs_lie_in_other_folders_merge_and_other_contents_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 12, 3, 4);
    let sy2 = copied_to(&sy, &dir.path().join("elsewhere"));
    let preds = std::fs::read_to_string(&sy.preds).unwrap();
    let (d1, d2) = (dir.path().join("s1"), dir.path().join("s2"));
    assert!(run(&rank_args(&sy, &d1, &["--all", "--shard", "1/2"]))
        .status
        .success());
    assert!(run(&rank_args(&sy2, &d2, &["--all", "--shard", "2/2"]))
        .status
        .success());
    let out = run(&["merge".into(), s(&d1).into(), s(&d2).into()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        journal_ids(&d1).len() + journal_ids(&d2).len(),
        12,
        "the two shards hold every issue once"
    );

    // A shard of other candidates (one patch edited, the size kept) is refused.
    let d3 = dir.path().join("s3");
    std::fs::write(&sy2.preds, preds.replacen("abs(x)", "abs(y)", 1)).unwrap();
    assert!(run(&rank_args(&sy2, &d3, &["--all", "--shard", "2/2"]))
        .status
        .success());
    let out = run(&["merge".into(), s(&d1).into(), s(&d3).into()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("are runs of different inputs (candidates differ in content"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn repeated_issue_flags_match_single_issue_rank() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 5, 4, 6);
    let run_dir = dir.path().join("run");
    let out = run(&rank_args(
        &sy,
        &run_dir,
        &[
            "--issue",
            &sy.ids[1],
            "--issue",
            &sy.ids[3],
            "--issue",
            "synth__synth-99",
        ],
    ));
    // The unknown id is that issue's error: the run finishes, and exits non-zero naming it.
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("1 of 3 issues were not ranked (1 unknown_issue)"),
        "{}",
        text(&out.stderr)
    );
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let outcomes: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(outcomes.len(), 3);
    let unknown = outcomes
        .iter()
        .find(|o| o["instance_id"] == "synth__synth-99")
        .unwrap();
    assert_eq!(unknown["error_kind"], "unknown_issue");
    for id in [&sy.ids[1], &sy.ids[3]] {
        let single = run(&[
            "rank",
            s(&sy.preds),
            "--tasks",
            s(&sy.tasks),
            "--repo",
            s(&sy.repo),
            "--issue",
            id,
            "--json",
            "-",
        ]
        .map(String::from));
        assert!(single.status.success(), "{}", text(&single.stderr));
        let single: Value = serde_json::from_slice(&single.stdout).unwrap();
        let many = &outcomes
            .iter()
            .find(|o| o["instance_id"] == id.as_str())
            .unwrap()["result"];
        let picks = |v: &Value| -> Vec<(Value, Value, Value)> {
            v["ranked"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["agent"].clone(), r["score"].clone(), r["applies"].clone()))
                .collect()
        };
        assert_eq!(picks(many), picks(&single), "{id}");
    }
}

#[test]
fn bad_shard_and_missing_run_dir_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 2, 2, 3);
    let out = run(&rank_args(
        &sy,
        &dir.path().join("r"),
        &["--all", "--shard", "4/3"],
    ));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("shard 4/3 does not exist"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[
        "rank",
        s(&sy.preds),
        "--tasks",
        s(&sy.tasks),
        "--repo",
        s(&sy.repo),
        "--all",
    ]
    .map(String::from));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("needs --run-dir"),
        "{}",
        text(&out.stderr)
    );
}
