//! Results a user can trust: a committee that could not review is a failure (non-zero exit,
//! no pick, `"score": null`), outputs are checked before any work, and settings that change
//! scores cannot be mixed in one run directory.

use crate::support::common;
use crate::support::llm_mock;

use common::*;
use llm_mock::Mock;
use serde_json::Value;
use std::time::Duration;

/// The example ranked by a model server nobody listens on (port 9), with short retries.
fn unreachable_llm(extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--llm",
        "openai-compatible:x",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--retries",
        "1",
        "--backoff-ms",
        "10",
    ];
    args.extend_from_slice(extra);
    example_rank_args(&args)
}

#[test]
fn an_unreachable_model_fails_the_issue_and_picks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let out = dei(&unreachable_llm(&[
        "--cache",
        path_str(&cache),
        "--json",
        "-",
    ]));
    assert!(!out.status.success(), "exit 0 with nothing reviewed");
    assert!(
        stderr(&out).contains("not reviewed") && stderr(&out).contains("example__textkit-1"),
        "{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).expect("the JSON is still written");
    assert_eq!(v["status"], "unreviewed");
    let ranked = v["ranked"].as_array().unwrap();
    let unscored: Vec<&Value> = ranked
        .iter()
        .filter(|r| r["status"] == "unscored")
        .collect();
    // 6 candidates: the empty one, the one that does not apply and the tests-only one are
    // scored by rule.
    assert_eq!(unscored.len(), 3, "{ranked:?}");
    assert_eq!(v["unscored"], 3);
    for r in &unscored {
        assert!(r["score"].is_null(), "{r}");
        assert!(r["review"]["score"].is_null(), "{r}");
        assert_eq!(r["review"]["status"], "unscored");
    }
    assert!(!stdout(&out).contains("\"value\": 0.0"));
    // The cost line counts the calls that failed, not "0 calls sent".
    assert!(stderr(&out).contains("3 failed"), "{}", stderr(&out));
    // The table says so at the top, and shows `-` for the unscored.
    let table = dei(&unreachable_llm(&["--cache", path_str(&cache)]));
    assert!(!table.status.success());
    assert!(
        stdout(&table).contains("NOT REVIEWED: 3 of 3 candidates with a patch to review could not be reviewed: cannot connect to http://127.0.0.1:9/v1"),
        "{}",
        stdout(&table)
    );
}

#[test]
fn a_run_with_unreviewed_issues_exits_non_zero_and_retries_them() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let cache = dir.path().join("cache");
    let out = dei(&unreachable_llm(&[
        "--run-dir",
        path_str(&run_dir),
        "--cache",
        path_str(&cache),
    ]));
    assert!(!out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("1 of 1 issues were not ranked (1 unreviewed)")
            && err.contains("not reviewed: example__textkit-1"),
        "{err}"
    );
    assert!(
        stdout(&out).contains("1 issue(s) not reviewed"),
        "{}",
        stdout(&out)
    );
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let line: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(line["error_kind"], "unreviewed");
    assert!(
        line["top"].as_array().unwrap().is_empty(),
        "no pick: {line}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["ranked"], 0);
    assert_eq!(summary["errors"]["unreviewed"], 1);

    // dei eval makes no pick either: the two rule-scored candidates (score 1) are not a pick,
    // even when one of them is labelled resolved. Before, it took them (1@6 = 0.5).
    let labels = dir.path().join("stale.json");
    std::fs::write(&labels, r#"{"resolved": ["example__textkit-1"]}"#).unwrap();
    let none = dir.path().join("none.json");
    std::fs::write(&none, r#"{"resolved": []}"#).unwrap();
    let mut eval: Vec<String> = [
        "eval",
        "examples/candidates",
        "--bootstrap",
        "0",
        "--json",
        "-",
    ]
    .map(String::from)
    .to_vec();
    eval.extend(["--scores".into(), path_str(&run_dir).into()]);
    eval.extend([
        "--labels".into(),
        format!("stale-agent={}", path_str(&labels)),
    ]);
    for a in [
        "careful-agent",
        "second-agent",
        "wrong-place-agent",
        "tests-only-agent",
        "empty-agent",
    ] {
        eval.extend(["--labels".into(), format!("{a}={}", path_str(&none))]);
    }
    let ev = dei(&eval);
    assert!(ev.status.success(), "{}", stderr(&ev));
    let ev: Value = serde_json::from_str(&stdout(&ev)).unwrap();
    let last = ev["curves"][0]["points"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["union"], 100.0, "{last}");
    assert_eq!(
        last["n_at_k"], 0.0,
        "no pick for an unreviewed issue: {last}"
    );

    // The same run against a working server, --retry-errors: the issue is ranked now.
    let mock = Mock::start(Duration::ZERO);
    let base = mock.openai_base();
    let args = example_rank_args(&[
        "--llm",
        "openai-compatible:x",
        "--base-url",
        &base,
        "--run-dir",
        path_str(&run_dir),
        "--cache",
        path_str(&cache),
        "--retry-errors",
    ]);
    let again = dei(&args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(mock.calls(), 3, "the three reviewable candidates are asked");
    let last: Value = serde_json::from_str(
        std::fs::read_to_string(run_dir.join("journal.jsonl"))
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert!(last["error_kind"].is_null(), "{last}");
    assert!(!last["top"].as_array().unwrap().is_empty());
}

#[test]
fn a_missing_output_folder_fails_before_any_model_call() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("no-such-folder/out.json");
    let out = dei(&example_rank_args(&[
        "--llm",
        "openai-compatible:x",
        "--base-url",
        &mock.openai_base(),
        "--cache",
        path_str(&dir.path().join("cache")),
        "--json",
        path_str(&json),
    ]));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not exist") && stderr(&out).contains("no-such-folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        mock.calls(),
        0,
        "no model call before the output is known to be writable"
    );
    assert!(!dir.path().join("cache").exists());
    // A folder given as the JSON file, and dei eval's --html, are checked the same way.
    let out = dei(&example_rank_args(&["--json", path_str(dir.path())]));
    assert!(stderr(&out).contains("it is a folder"), "{}", stderr(&out));
    let out = dei(&["eval", "examples/candidates", "--html", path_str(&json)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no-such-folder"), "{}", stderr(&out));
}

#[test]
fn runs_with_different_offline_weights_cannot_be_resumed_or_merged_together() {
    let dir = tempfile::tempdir().unwrap();
    let weights = dir.path().join("w.json");
    std::fs::write(&weights, r#"{"agreement": 1.0}"#).unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    let run = |d: &std::path::Path, extra: &[&str]| {
        let mut x = vec!["--run-dir", path_str(d), "--shard"];
        x.extend_from_slice(extra);
        dei(&example_rank_args(&x))
    };
    let ra = run(&a, &["1/2"]);
    assert!(ra.status.success(), "{}", stderr(&ra));
    let rb = run(&b, &["2/2", "--offline-weights", path_str(&weights)]);
    assert!(rb.status.success(), "{}", stderr(&rb));
    let m = dei(&["merge", path_str(&a), path_str(&b)]);
    assert!(!m.status.success(), "merged runs of different weights");
    assert!(
        stderr(&m).contains("committee settings differ"),
        "{}",
        stderr(&m)
    );
    // Resuming shard 1 with other weights is refused too.
    let again = run(&a, &["1/2", "--offline-weights", path_str(&weights)]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("committee settings differ"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn shipped_offline_weights_are_named_and_a_wrong_name_says_which_exist() {
    let fitted = dei(&example_rank_args(&[
        "--offline-weights",
        "fitted",
        "--json",
        "-",
    ]));
    assert!(fitted.status.success(), "{}", stderr(&fitted));
    let plain = dei(&example_rank_args(&["--json", "-"]));
    let score = |o: &std::process::Output| -> Vec<f64> {
        let v: Value = serde_json::from_str(&stdout(o)).unwrap();
        v["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["score"].as_f64().unwrap())
            .collect()
    };
    assert_ne!(
        score(&fitted),
        score(&plain),
        "the fitted weights score differently"
    );
    let bad = dei(&example_rank_args(&["--offline-weights", "fited"]));
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("default, fitted, track-record, or a JSON file"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn a_reader_that_goes_away_ends_dei_quietly_not_with_a_panic() {
    use std::process::Stdio;
    // `dei rank … 2>&1 | head -1`: the pipe is closed before dei writes its table.
    let mut child = dei_command()
        .args(example_rank_args(&[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dei starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("dei ends");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(out.status.code(), Some(101), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{:?}: {err}",
            out.status
        );
    }
}
