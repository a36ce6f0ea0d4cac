//! End to end: `dei rank` on the bundled example, and its error messages.

use crate::support::common;
use common::*;

fn rank_example(extra: &[&str]) -> std::process::Output {
    dei(&example_rank_args(extra))
}

#[test]
fn offline_committee_ranks_the_correct_candidate_first() {
    let out = rank_example(&["--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("offline committee"),
        "one-line notice expected"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ranked = v["ranked"].as_array().unwrap();
    let agents: Vec<&str> = ranked
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents[0], "careful-agent", "{agents:?}");
    assert_eq!(v["candidates"], 6);
    assert_eq!(v["empty"], 1);
    let by = |a: &str| ranked.iter().find(|r| r["agent"] == a).unwrap().clone();
    assert_eq!(by("stale-agent")["applies"], "no");
    assert_eq!(by("empty-agent")["applies"], "empty");
    assert_eq!(by("wrong-place-agent")["files"][0], "textkit/cli.py");
    // What is no fix is scored 1 by rule and ranks after every reviewed candidate, sharing
    // the last place: the empty one, the one that does not apply, and the one touching only
    // tests (no library code). A reviewed candidate, even a wrong one, ranks above them.
    let last: Vec<&str> = agents[agents.len() - 3..].to_vec();
    for a in ["empty-agent", "stale-agent", "tests-only-agent"] {
        assert!(
            last.contains(&a),
            "{a} not among the last three: {agents:?}"
        );
        assert_eq!(by(a)["status"], "rule", "{a}");
        assert_eq!(by(a)["score"], 1.0, "{a}");
    }
    assert_eq!(by("tests-only-agent")["rank"], by("empty-agent")["rank"]);
    assert!(
        by("tests-only-agent")["reason"]
            .as_str()
            .unwrap()
            .contains("touches no library code"),
        "{}",
        by("tests-only-agent")["reason"]
    );
    assert!(by("stale-agent")["reason"]
        .as_str()
        .unwrap()
        .starts_with("does not apply at the base commit"));
    assert_eq!(by("wrong-place-agent")["status"], "reviewed");
}

#[test]
fn table_shows_every_agent() {
    let out = rank_example(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for a in [
        "careful-agent",
        "second-agent",
        "wrong-place-agent",
        "stale-agent",
        "empty-agent",
        // The JSONL file's one record: named after the file (the agent naming rule).
        "tests-only-agent",
    ] {
        assert!(text.contains(a), "{a} missing from\n{text}");
    }
    assert!(text.lines().nth(2).unwrap().contains("agent"));
    // Under the table: the pick and where its patch is.
    assert!(
        text.contains(
            "pick: careful-agent (score 7.92), its patch in examples/candidates/careful-agent/example__textkit-1.diff"
        ),
        "{text}"
    );
}

#[test]
fn plain_text_issue_with_repo_and_commit() {
    let repo = example_repo();
    let dir = tempfile::tempdir().unwrap();
    let issue = dir.path().join("example__textkit-1.md");
    std::fs::write(&issue, "word_count(\"a  b\") returns 3 instead of 2").unwrap();
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--issue-file",
        path_str(&issue),
        "--repo",
        path_str(&repo),
        "--commit",
        "main",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("careful-agent"));
}

#[test]
fn a_tasks_file_of_one_task_needs_no_issue_id() {
    let repo = example_repo();
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        "examples/tasks.jsonl",
        "--repo",
        path_str(&repo),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("example__textkit-1"),
        "{}",
        stdout(&out)
    );
    // Two tasks: which one? The error says how many and names the first.
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("t.jsonl");
    let one = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    let other = one.replace("example__textkit-1", "example__textkit-2");
    std::fs::write(&tasks, format!("{}\n{}", one.trim_end(), other)).unwrap();
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        path_str(&tasks),
        "--repo",
        path_str(&repo),
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("holds 2 tasks")
            && err.contains("--issue ID")
            && err.contains("example__textkit-1"),
        "{err}"
    );
}

#[test]
fn unknown_issue_is_one_clear_error() {
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-99",
        "--repo",
        ".",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("unknown issue id `example__textkit-99`")
            && err.contains("example__textkit-1"),
        "{err}"
    );
}

#[test]
fn missing_repo_and_unknown_commit() {
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-1",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--repo"), "{}", stderr(&out));

    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-1",
        "--repo",
        "/no/such/repo",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("/no/such/repo does not exist"),
        "{}",
        stderr(&out)
    );

    let repo = example_repo();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("t.jsonl");
    let text = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    std::fs::write(
        &tasks,
        text.replace(
            "f63f25d43ac69806ecd91a0971c38da78fc72775",
            "0123456789abcdef0123456789abcdef01234567",
        ),
    )
    .unwrap();
    let out = dei(&[
        "rank",
        "examples/candidates",
        "--tasks",
        path_str(&tasks),
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(&repo),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("commit 0123456789abcdef"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_candidate_lines_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good =
        std::fs::read_to_string(root().join("examples/candidates/tests-only-agent.jsonl")).unwrap();
    // A generic file name: the agent is named after its folder.
    let folder = dir.path().join("tests-only-agent");
    std::fs::create_dir_all(&folder).unwrap();
    let preds = folder.join("preds.jsonl");
    std::fs::write(
        &preds,
        format!("{{broken\n{good}{{\"instance_id\": \"example__textkit-1\"}}\n"),
    )
    .unwrap();
    let out = dei(&example_issue_args(&["rank", path_str(&preds)], &[]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("tests-only-agent"), "{text}");
    assert!(text.contains("preds.jsonl:1: malformed JSON"), "{text}");
    assert!(
        text.contains("preds.jsonl:3: missing field `model_patch`"),
        "{text}"
    );
}
