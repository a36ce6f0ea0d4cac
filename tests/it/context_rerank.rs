//! `dei rank --llm … --llm-locate` and `dei locate --llm …` against the mock model server: the
//! model re-ranks the issue-only localization (the measurement of re-ranking, `dei-bench
//! context --llm`, is tested in crates/dei-bench/tests/context_rerank.rs).

use crate::support::common;
use crate::support::llm_mock;

use common::{dei, example_repo, path_str, stderr, stdout};
use llm_mock::Mock;
use std::time::Duration;

/// Script the model to pick `textkit/words.py`, then `longest_word` in it (which no candidate
/// edits and the issue does not name; the search alone ranks `word_count` first).
fn script_longest_word(mock: &Mock) {
    mock.script_always("Which of these files", "textkit/words.py\n");
    mock.script_always(
        "Which classes, functions",
        "textkit/words.py::longest_word\n",
    );
}

/// `dei rank --llm … --llm-locate`: the model re-ranks the localization first, and a reviewer
/// of a candidate that edits elsewhere is shown the definition the model picked.
#[test]
fn rank_with_llm_locate_shows_reviewers_the_models_pick() {
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(Duration::ZERO);
    script_longest_word(&mock);
    let run = |extra: &[&str]| {
        let base = mock.openai_base();
        let cache = dir.path().join(format!("cache{}", extra.len()));
        let mut args = vec![
            "--llm",
            "openai-compatible:mock-reviewer",
            "--base-url",
            base.as_str(),
            "--cache",
            path_str(&cache),
            "--backoff-ms",
            "1",
        ];
        args.extend(extra);
        let before = mock.seen().len();
        let out = dei(&common::example_rank_args(&args));
        assert!(out.status.success(), "{}", stderr(&out));
        let prompts: Vec<String> = mock.seen()[before..]
            .iter()
            .map(|s| llm_mock::user_prompt(&s.body))
            .collect();
        (stdout(&out), prompts)
    };
    let wrong_place = |prompts: &[String]| -> String {
        prompts
            .iter()
            .find(|p| p.contains("+        text = \" \".join(handle.read().split())"))
            .cloned()
            .expect("a review prompt for the wrong-place candidate")
    };
    let (out, prompts) = run(&["--llm-locate"]);
    assert!(
        out.contains("+locate"),
        "the committee's name says so: {out}"
    );
    let locate_calls = prompts
        .iter()
        .filter(|p| p.contains("Which of these files") || p.contains("Which classes, functions"))
        .count();
    assert_eq!(locate_calls, 2, "two localization calls for the one issue");
    let p = wrong_place(&prompts);
    assert!(p.contains("def longest_word(text):"), "{p}");
    assert!(
        p.contains(
            "longest_word (issue-only localization ranks it #1 \
             (llm-pointwise:openai-compatible:mock-reviewer+locate))"
        ),
        "{p}"
    );
    // Without the flag: no localization call, and the model's pick is not shown.
    let (out, prompts) = run(&[]);
    assert!(!out.contains("+locate"));
    assert!(!prompts.iter().any(|p| p.contains("Which of these files")));
    // (The search alone ranks it second.)
    let p = wrong_place(&prompts);
    assert!(
        !p.contains("longest_word (issue-only localization ranks it #1)"),
        "{p}"
    );
}

/// `dei locate`: the search alone, the same re-ranked by the model, and a clear error when the
/// issue is not named.
#[test]
fn locate_command_prints_where_the_issue_points() {
    let args = |extra: &[&str]| common::example_issue_args(&["locate"], extra);
    let out = dei(&args(&[]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("search over the issue text, no model"),
        "{text}"
    );
    let first_file = text
        .lines()
        .find(|l| l.trim_start().starts_with("1. "))
        .unwrap();
    assert!(first_file.contains("textkit/words.py"), "{text}");
    assert!(first_file.contains("defines `word_count`"), "{text}");
    assert!(
        text.contains("1. textkit/words.py:4-8  word_count"),
        "{text}"
    );

    // Re-ranked: the scripted model picks longest_word.
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(Duration::ZERO);
    script_longest_word(&mock);
    let base = mock.openai_base();
    let cache = dir.path().join("cache");
    let json = dir.path().join("located.json");
    let out = dei(&args(&[
        "--llm",
        "openai-compatible:mock-locator",
        "--base-url",
        &base,
        "--cache",
        path_str(&cache),
        "--json",
        path_str(&json),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("search re-ranked by openai-compatible:mock-locator"),
        "{text}"
    );
    assert!(
        text.contains("1. textkit/words.py:16-21  longest_word"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["functions"][0]["name"], "longest_word");
    assert_eq!(v["files"][0]["why"][0], "named by the model");
    assert_eq!(mock.seen().len(), 2);

    // No issue named: say what to pass.
    let out = dei(&["locate", "--repo", path_str(&example_repo())]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("pass --tasks FILE --issue ID"),
        "{}",
        stderr(&out)
    );
}
