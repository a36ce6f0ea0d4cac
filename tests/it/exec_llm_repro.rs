//! `dei rank --exec --exec-llm-repro`: a reproduction test written by a model from the issue
//! (Agentless-style), against the in-process mock server, run on the bundled example with the
//! machine's python3 (no PyPI). The mock answers the test-writing prompt with a script chosen
//! per test; the test runner is `examples/minitest.py`, as in `exec_rank.rs`.

use crate::support::{common, exec, llm_mock};

use common::*;
use exec::{by_agent, copy_agents, minitest, python3_with_venv};
use llm_mock::{Fault, Mock};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// What only the test-writing prompt says (the mock answers it by this).
const NEEDLE: &str = "Write a test that reproduces the issue";

/// A test that prints `Issue reproduced` at the base commit (`word_count("a  b")` is 3 there)
/// and `Issue resolved` with the fix.
const GOOD_TEST: &str = "Here is the test.\n\n```python\nfrom textkit.words import word_count\n\ntry:\n    a = word_count(\"a  b\")\n    b = word_count(\"one\\ntwo\")\nexcept Exception:\n    print(\"Other issues\")\nelse:\n    if a == 2 and b == 2:\n        print(\"Issue resolved\")\n    elif a == 3 or b == 1:\n        print(\"Issue reproduced\")\n    else:\n        print(\"Other issues\")\n```\n";

/// A test that does not show the issue: it prints `Issue resolved` at the base commit too.
const PASSING_TEST: &str = "```python\nfrom textkit.words import word_count\nprint(\"Issue resolved\" if word_count(\"a b\") == 2 else \"Issue reproduced\")\n```\n";

/// Markers in the task's answer fields: none may reach the model.
const ANSWERS: [&str; 5] = [
    "GOLD-PATCH-MARKER",
    "TEST-PATCH-MARKER",
    "FAIL-TO-PASS-MARKER",
    "PASS-TO-PASS-MARKER",
    "HINTS-MARKER",
];

/// One test's folders: the environment and sandbox-run cache, the LLM response cache, the
/// candidates (the fix, one that changes nothing, one that breaks a test) and a tasks file
/// whose answer fields carry [`ANSWERS`].
struct Setup {
    _dir: tempfile::TempDir,
    cache: PathBuf,
    llm_cache: PathBuf,
    cands: PathBuf,
    tasks: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let cands = dir.path().join("cands");
    copy_agents(
        &cands,
        &[
            ("careful-agent", "examples/candidates"),
            ("noop-agent", "tests/fixtures/exec/candidates"),
            ("breaks-tests-agent", "tests/fixtures/exec/candidates"),
        ],
    );
    let text = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    let mut task: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    task["patch"] = format!("{}# {}\n", task["patch"].as_str().unwrap(), ANSWERS[0]).into();
    task["test_patch"] = format!("diff --git a/t.py b/t.py\n+# {}\n", ANSWERS[1]).into();
    task["FAIL_TO_PASS"] = format!("[\"tests/t.py::{}\"]", ANSWERS[2]).into();
    task["PASS_TO_PASS"] = format!("[\"tests/t.py::{}\"]", ANSWERS[3]).into();
    task["hints_text"] = format!("Try str.split() without arguments. {}", ANSWERS[4]).into();
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::write(&tasks, format!("{task}\n")).unwrap();
    Setup {
        cache: dir.path().join("cache"),
        llm_cache: dir.path().join("llm-cache"),
        cands,
        tasks,
        _dir: dir,
    }
}

/// `dei rank --exec --json -` on the example issue with `extra` flags.
fn rank(s: &Setup, extra: &[&str]) -> Output {
    rank_into(s, "-", extra)
}

/// [`rank`] writing the JSON to `json` (`-`: stdout, else the table goes there).
fn rank_into(s: &Setup, json: &str, extra: &[&str]) -> Output {
    let test_cmd = format!("python {}", path_str(&minitest()));
    let repo = example_repo();
    dei_command()
        .args(["rank", path_str(&s.cands), "--tasks", path_str(&s.tasks)])
        .args(["--issue", "example__textkit-1", "--repo", path_str(&repo)])
        .args(["--exec", "--python", "python3", "--test-cmd", &test_cmd])
        .args(["--exec-timeout", "8", "--exec-jobs", "2", "--json", json])
        .args(["--cache", path_str(&s.llm_cache), "--retries", "0"])
        .args(["--backoff-ms", "1", "--timeout", "10"])
        .args(extra)
        .env("DEI_CACHE_DIR", &s.cache)
        .output()
        .expect("dei runs")
}

/// The flags that have the mock's model write the test, the offline committee ranking.
fn writer_flags(mock: &Mock) -> Vec<String> {
    vec![
        "--exec-llm-repro=openai-compatible:test-writer".into(),
        "--base-url".into(),
        mock.openai_base(),
    ]
}

/// [`rank`] with the offline committee and the mock's model writing the test.
fn rank_offline(s: &Setup, mock: &Mock, extra: &[&str]) -> (Value, String) {
    let mut flags = writer_flags(mock);
    flags.extend(extra.iter().map(|x| x.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = rank(s, &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    (
        serde_json::from_str(&stdout(&out)).expect("JSON"),
        stderr(&out),
    )
}

fn part(v: &Value, agent: &str, name: &str) -> Option<f64> {
    by_agent(v, agent)["review"]["score"]["parts"]
        .as_array()?
        .iter()
        .find(|p| p[0] == name)
        .and_then(|p| p[1].as_f64())
}

/// The bodies of the test-writing requests the mock received.
fn test_requests(mock: &Mock) -> Vec<String> {
    mock.seen()
        .into_iter()
        .map(|s| s.body)
        .filter(|b| llm_mock::user_prompt(b).contains(NEEDLE))
        .collect()
}

fn skip_without_python() -> bool {
    if python3_with_venv() {
        return false;
    }
    skip("python3 with the venv module is not on PATH");
    true
}

#[test]
fn a_model_test_failing_at_base_is_kept_and_tells_the_fix_from_the_rest() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let mock = Mock::start(Duration::ZERO);
    mock.script_always(NEEDLE, GOOD_TEST);
    let (v, err) = rank_offline(&s, &mock, &[]);
    let exec = &v["exec"];
    let m = &exec["model_test"];
    assert_eq!(m["status"], "kept", "{m}");
    assert_eq!(m["base"], "reproduced", "{m}");
    assert_eq!(m["model"], "openai-compatible:test-writer");
    assert!(m["script"].as_str().unwrap().contains("word_count"), "{m}");
    assert!(m["why"].is_null(), "{m}");
    assert_eq!(m["usage"]["calls"], 1, "{m}");
    assert_eq!(m["shown_reproduction"], true, "{m}");

    // The fixes resolve it (one of them also breaks another test); the candidate that
    // changes nothing still reproduces it.
    let test_of = |a: &str| by_agent(&v, a)["behaviour"]["model_test"].clone();
    assert_eq!(test_of("careful-agent"), "resolved");
    assert_eq!(test_of("breaks-tests-agent"), "resolved");
    assert_eq!(test_of("noop-agent"), "reproduced");
    // The offline committee counts it: for the fixes, against the other (someone resolves it).
    for a in ["careful-agent", "breaks-tests-agent"] {
        assert_eq!(
            part(&v, a, "passes the model's reproduction test"),
            Some(1.5),
            "{a}"
        );
    }
    assert_eq!(
        part(&v, "noop-agent", "model's reproduction test still fails"),
        Some(-1.5)
    );
    assert_eq!(
        part(&v, "noop-agent", "passes the model's reproduction test"),
        None
    );
    assert_eq!(v["ranked"][0]["agent"], "careful-agent", "{err}");
    assert!(
        err.contains("model-written tests: llm: 1 calls sent"),
        "the model's usage is reported: {err}"
    );

    // The model saw the issue, and none of the task's answers.
    let bodies = test_requests(&mock);
    assert_eq!(bodies.len(), 1);
    let prompt = llm_mock::user_prompt(&bodies[0]);
    assert!(
        prompt.contains("word_count miscounts text with repeated spaces, tabs or newlines"),
        "{prompt}"
    );
    assert!(
        prompt.contains("textkit/words.py"),
        "the located files: {prompt}"
    );
    // And the issue's own code with what it printed at the base commit (it counts 3 and 1).
    let shown = prompt
        .split("## What the issue's code does now")
        .nth(1)
        .and_then(|s| s.split("## The repository").next())
        .unwrap_or_else(|| panic!("no reproduction section: {prompt}"));
    assert!(shown.contains("word_count(\"a  b\")"), "{shown}");
    assert!(shown.contains("It runs without error."), "{shown}");
    assert!(shown.contains("3\n1\n"), "the base output: {shown}");
    for answer in ANSWERS {
        assert!(!bodies[0].contains(answer), "{answer} was sent: {prompt}");
    }
    assert!(!bodies[0].contains("str.split() without arguments"));

    // A rerun asks nothing: the reply comes from the response cache, the runs from theirs.
    let (again, _) = rank_offline(&s, &mock, &[]);
    assert_eq!(test_requests(&mock).len(), 1, "the rerun called the model");
    assert_eq!(again["exec"]["model_test"]["usage"]["cached"], 1);
    assert_eq!(again["exec"]["model_test"]["usage"]["calls"], 0);
    assert_eq!(again["exec"]["cached_runs"], again["exec"]["runs"]);
    assert_eq!(
        by_agent(&again, "careful-agent")["behaviour"]["model_test"],
        "resolved"
    );
}

/// A test that shows the issue at the base commit and never sees it fixed: it prints
/// `Issue reproduced` whatever the code does.
const ALWAYS_REPRODUCED: &str = "```python\nfrom textkit.words import word_count\nword_count(\"x\")\nprint(\"Issue reproduced\")\n```\n";

#[test]
fn several_samples_are_asked_kept_apart_and_vote() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let mock = Mock::start(Duration::ZERO);
    // The samples are asked at once, so replies go by temperature. The first sample (at 0)
    // never sees the issue fixed; of the three at 0.8, whichever comes first, one shows
    // nothing at base and two tell the fix apart (the second written otherwise). The first
    // kept test alone would call the fix a failure.
    mock.script_at(NEEDLE, 0.0, ALWAYS_REPRODUCED);
    let good_b = GOOD_TEST.replace("try:", "# another sample\ntry:");
    for reply in [PASSING_TEST, GOOD_TEST, good_b.as_str()] {
        mock.script_at(NEEDLE, 0.8, reply);
    }
    // The gate holds every reply until all four requests are in: asked one after another,
    // the second would never be sent.
    mock.gate.store(0, Ordering::SeqCst);
    let (v, _) = std::thread::scope(|scope| {
        let run = scope.spawn(|| rank_offline(&s, &mock, &["--exec-llm-repro-samples", "4"]));
        let t = std::time::Instant::now();
        while mock.held() < 4 {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the four samples were not asked at once ({} held)",
                mock.held()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        mock.gate.store(u64::MAX, Ordering::SeqCst);
        run.join().expect("rank")
    });
    let exec = &v["exec"];
    let samples = exec["model_test_samples"].as_array().expect("samples");
    let mut status: Vec<&str> = samples
        .iter()
        .map(|m| m["status"].as_str().unwrap())
        .collect();
    assert_eq!(status[0], "kept", "{exec}");
    status.sort();
    assert_eq!(status, ["discarded", "kept", "kept", "kept"], "{exec}");
    let index: Vec<u64> = samples
        .iter()
        .map(|m| m["sample"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(index, [0, 1, 2, 3]);
    // The issue's record is the first kept sample: the first.
    assert_eq!(exec["model_test"]["status"], "kept");
    assert!(exec["model_test"].get("sample").is_none(), "{exec}");
    assert!(exec["model_test"]["script"]
        .as_str()
        .unwrap()
        .contains("print(\"Issue reproduced\")\n"));
    // Two of the three kept tests see the fix resolve it: the fixes get `resolved`; the
    // candidate that changes nothing still reproduces it with all three.
    let test_of = |a: &str| by_agent(&v, a)["behaviour"]["model_test"].clone();
    assert_eq!(test_of("careful-agent"), "resolved");
    assert_eq!(test_of("breaks-tests-agent"), "resolved");
    assert_eq!(test_of("noop-agent"), "reproduced");
    assert_eq!(v["ranked"][0]["agent"], "careful-agent");

    // The first sample at temperature 0, the others at 0.8.
    let bodies = test_requests(&mock);
    assert_eq!(bodies.len(), 4);
    let temps: Vec<f64> = bodies
        .iter()
        .map(|b| {
            let j: Value = serde_json::from_str(b).unwrap();
            j["temperature"].as_f64().unwrap()
        })
        .collect();
    let mut temps = temps;
    temps.sort_by(f64::total_cmp);
    assert_eq!(temps, [0.0, 0.8, 0.8, 0.8]);

    // The table says how many samples were kept; a rerun asks the model nothing (each sample
    // is its own cache entry) and gives the same verdicts.
    let json = s.cache.join("again.json");
    let out = rank_into(
        &s,
        path_str(&json),
        &[
            "--exec-llm-repro=openai-compatible:test-writer",
            "--base-url",
            &mock.openai_base(),
            "--exec-llm-repro-samples",
            "4",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains("model-written tests (openai-compatible:test-writer): 3 of 4 samples kept (print `Issue reproduced` at the base commit); with the candidates, by most kept tests: 2 resolved, 1 still reproduced"),
        "{table}"
    );
    assert_eq!(test_requests(&mock).len(), 4, "no new call");
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        by_agent(&again, "careful-agent")["behaviour"]["model_test"],
        "resolved"
    );
}

#[test]
fn an_issue_without_code_asks_from_its_words_alone() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    // The example's issue in words only: nothing of it runs.
    let text = std::fs::read_to_string(&s.tasks).unwrap();
    let mut task: Value = serde_json::from_str(text.trim()).unwrap();
    task["problem_statement"] =
        "word_count miscounts text with repeated spaces, tabs or newlines\n\n\
        Two spaces between two words count as three words, and a newline between two words as \
        one. Every run of whitespace should separate words.\n"
            .into();
    std::fs::write(&s.tasks, format!("{task}\n")).unwrap();

    let mock = Mock::start(Duration::ZERO);
    mock.script_always(NEEDLE, GOOD_TEST);
    let (v, _) = rank_offline(&s, &mock, &[]);
    assert_eq!(v["exec"]["reproduction"], false, "{}", v["exec"]);
    let m = &v["exec"]["model_test"];
    assert_eq!(m["status"], "kept", "{m}");
    assert!(m.get("shown_reproduction").is_none(), "{m}");
    let bodies = test_requests(&mock);
    assert_eq!(bodies.len(), 1);
    let prompt = llm_mock::user_prompt(&bodies[0]);
    assert!(prompt.contains("word_count miscounts text"), "{prompt}");
    assert!(
        !prompt.contains("What the issue's code does now"),
        "{prompt}"
    );
}

#[test]
fn a_model_test_passing_at_base_is_discarded() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let mock = Mock::start(Duration::ZERO);
    mock.script_always(NEEDLE, PASSING_TEST);
    let (v, _) = rank_offline(&s, &mock, &[]);
    let m = &v["exec"]["model_test"];
    assert_eq!(m["status"], "discarded", "{m}");
    assert_eq!(m["base"], "resolved", "{m}");
    assert!(
        m["why"]
            .as_str()
            .unwrap()
            .contains("prints `Issue resolved` already at the base commit"),
        "{m}"
    );
    // Not run with any candidate, so no candidate carries it, and no score part names it.
    for r in v["ranked"].as_array().unwrap() {
        assert!(r["behaviour"].get("model_test").is_none(), "{r}");
        let parts = r["review"]["score"]["parts"].to_string();
        assert!(!parts.contains("model's reproduction test"), "{parts}");
    }
    // The base run, and no other: 3 trees would have added 3.
    let plain = rank(&s, &[]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let plain: Value = serde_json::from_str(&stdout(&plain)).unwrap();
    assert!(plain["exec"].get("model_test").is_none());
    assert_eq!(
        v["exec"]["runs"].as_u64().unwrap(),
        plain["exec"]["runs"].as_u64().unwrap() + 1
    );
}

#[test]
fn model_failures_are_recorded_and_the_ranking_completes() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let plain = rank(&s, &[]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    let plain: Value = serde_json::from_str(&stdout(&plain)).unwrap();
    let scores = |v: &Value| -> Vec<(String, String)> {
        v["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["agent"].to_string(), r["score"].to_string()))
            .collect()
    };
    for (fault, want) in [
        (
            Some(Fault::ServerError),
            "the model call failed: example__textkit-1 repro-test: provider error after 1 try",
        ),
        (
            Some(Fault::Text("I could not write a test for this.".into())),
            "the reply has no ```python code block",
        ),
        (
            Some(Fault::Text("```python\ndef f(:\n    pass\n```".into())),
            "the script does not parse as Python",
        ),
    ] {
        let mock = Mock::start(Duration::ZERO);
        if let Some(f) = fault {
            mock.push(f);
        }
        // No response cache: each fault is asked for anew.
        let (v, err) = rank_offline(&s, &mock, &["--no-cache"]);
        let m = &v["exec"]["model_test"];
        assert_eq!(m["status"], "not_written", "{m}");
        let why = m["why"].as_str().unwrap();
        assert!(why.contains(want), "{why}");
        // Nothing else changes: the same evidence and the same ranking as without the flag.
        assert!(v["exec"]["error"].is_null(), "{}", v["exec"]);
        assert_eq!(v["exec"]["runs"], plain["exec"]["runs"]);
        assert_eq!(scores(&v), scores(&plain), "{err}");
    }
    // The table says so too (the mock's default reply holds no code block).
    let mock = Mock::start(Duration::ZERO);
    let json = s.cache.with_extension("json");
    let mut flags = writer_flags(&mock);
    flags.push("--no-cache".into());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = rank_into(&s, path_str(&json), &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(
        table.contains(
            "execution: model-written test (openai-compatible:test-writer): not written: the reply has no ```python code block"
        ),
        "{table}"
    );
}

#[test]
fn the_llm_committee_writes_the_test_and_is_told_what_it_showed() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let mock = Mock::start(Duration::ZERO);
    mock.script_always(NEEDLE, GOOD_TEST);
    let out = rank(
        &s,
        &[
            "--llm",
            "openai-compatible:committee",
            "--base-url",
            &mock.openai_base(),
            "--exec-llm-repro",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["exec"]["model_test"]["status"], "kept");
    assert_eq!(
        v["exec"]["model_test"]["model"],
        "openai-compatible:committee"
    );
    // One engine: the committee's summary counts the test-writing call with the reviews.
    let err = stderr(&out);
    assert!(err.contains("4 calls answered by the server"), "{err}");
    assert!(!err.contains("model-written tests:"), "{err}");
    let reviews: Vec<String> = mock
        .seen()
        .into_iter()
        .map(|s| llm_mock::user_prompt(&s.body))
        .filter(|p| !p.contains(NEEDLE))
        .collect();
    assert_eq!(reviews.len(), 3);
    let resolved = "which prints \"Issue reproduced\" at the base commit, prints \"Issue resolved\" with this patch.";
    let still = "still prints \"Issue reproduced\" with this patch";
    assert_eq!(reviews.iter().filter(|p| p.contains(resolved)).count(), 2);
    assert_eq!(reviews.iter().filter(|p| p.contains(still)).count(), 1);
    let noop = reviews.iter().find(|p| p.contains(still)).unwrap();
    assert!(noop.contains("words are separated by spaces"), "{noop}");
}

#[test]
fn the_flag_needs_exec_and_a_model() {
    let s = setup();
    // No model at all: said before anything runs.
    let out = rank(&s, &["--exec-llm-repro"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--exec-llm-repro needs a model"),
        "{}",
        stderr(&out)
    );
    // Without --exec.
    let out = dei(&example_rank_args(&["--exec-llm-repro=openai:gpt-4o-mini"]));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--exec"), "{}", stderr(&out));
    // A model that is not PROVIDER:MODEL.
    let out = rank(&s, &["--exec-llm-repro=gpt"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--exec-llm-repro=gpt") && err.contains("PROVIDER:MODEL"),
        "{err}"
    );
    // A named model without its key: the message names the flag as written, not --llm (which
    // the user did not give), once.
    let out = rank(&s, &["--exec-llm-repro=openai:gpt-4o-mini"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("--exec-llm-repro=openai:gpt-4o-mini: set the API key in the environment variable OPENAI_API_KEY"),
        "{err}"
    );
    assert!(!err.contains("--llm"), "{err}");
    assert_eq!(err.matches("--exec-llm-repro=openai").count(), 1, "{err}");
    // Samples without a model test, or out of range.
    let out = rank(&s, &["--exec-llm-repro-samples", "2"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--exec-llm-repro"),
        "{}",
        stderr(&out)
    );
    for n in ["0", "11"] {
        let out = rank(
            &s,
            &[
                "--exec-llm-repro=openai:gpt-4o-mini",
                "--exec-llm-repro-samples",
                n,
            ],
        );
        assert!(!out.status.success(), "{n}");
        assert!(stderr(&out).contains("1..=10"), "{n}: {}", stderr(&out));
    }
}

#[test]
fn a_run_directory_records_and_counts_the_model_tests() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    let mock = Mock::start(Duration::ZERO);
    mock.script_always(NEEDLE, GOOD_TEST);
    let run_dir = s.cache.with_file_name("run");
    let mut flags = writer_flags(&mock);
    flags.extend(["--run-dir".to_string(), path_str(&run_dir).to_string()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = rank(&s, &flags);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_str(&stdout(&out)).unwrap();
    // The run's summary counts what --exec gathered, model-written tests included.
    assert_eq!(summary["exec"]["issues"], 1, "{summary}");
    assert!(summary["exec"]["runs"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["exec"]["model_tests"], 1, "{summary}");
    assert_eq!(summary["exec"]["model_tests_kept"], 1);
    assert_eq!(summary["exec"]["model_tests_shown"], 1, "{summary}");
    assert_eq!(summary["exec"]["model_tests_shown_kept"], 1, "{summary}");
    assert!(stderr(&out).contains("model-written tests: llm: 1 calls sent"));
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let line: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(line["result"]["exec"]["model_test"]["status"], "kept");
    // Resumed: the finished issue is read back from the journal and still counted.
    let resumed = rank(&s, &flags);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let again: Value = serde_json::from_str(&stdout(&resumed)).unwrap();
    assert_eq!(again["exec"]["model_tests_kept"], 1, "{again}");
    assert!(
        stderr(&resumed).contains("llm: 0 calls sent, 0 answered from cache"),
        "nothing asked again: {}",
        stderr(&resumed)
    );
}

/// `--dry-run` with a model named by `--exec-llm-repro=` and no `--llm`: what that model would be
/// asked is shown, without a key and without a call, and the offline committee's ranking says
/// it is a dry run's (the test it would have had is missing). It was refused as "--dry-run
/// needs a model" before.
#[test]
fn a_dry_run_shows_the_test_writers_prompt_and_ranks_nothing_for_keeps() {
    if skip_without_python() {
        return;
    }
    let s = setup();
    // The prompts go to stdout, as every dry run's do; the JSON to a file.
    let json = s.cache.with_file_name("dry.json");
    let out = rank_into(
        &s,
        path_str(&json),
        &["--exec-llm-repro=openai:gpt-4o-mini", "--dry-run"],
    );
    let (shown, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}");
    assert!(
        shown.contains("repro-test") && shown.contains("## The issue"),
        "{shown}"
    );
    assert!(shown.contains("dry run: 1 calls planned"), "{shown}");
    // No answer reaches the prompt (the task carries markers in all five).
    for marker in ANSWERS {
        assert!(!shown.contains(marker), "{marker} reached the prompt");
    }
    let json = std::fs::read_to_string(&json).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v["status"], "dry_run", "{v}");
    assert_eq!(
        v["exec"]["model_test"]["status"], "not_written",
        "{}",
        v["exec"]
    );
    assert_eq!(v["committee"], "offline");
}
