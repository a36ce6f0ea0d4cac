//! `dei rank --exec` on the bundled example, end to end, with the machine's python3 (no PyPI):
//! the example's own test file and the snippet in its issue, run in the sandbox at the base
//! commit and with each candidate. Besides the example's candidates: one that breaks a test,
//! one that changes nothing, one that sleeps past the time limit, one that opens a network
//! socket and one that writes outside its folder (`tests/fixtures/exec/candidates`). The test
//! runner is `examples/minitest.py`, which prints what `pytest -rA` prints.

use crate::support::{common, exec};

use common::*;
use exec::{by_agent, copy_agents, minitest, python3_with_venv};
use serde_json::Value;
use std::path::{Path, PathBuf};

const ESCAPE: &str = "/tmp/dei-example-escape.txt";

/// `dei rank --exec` on the example's candidates and the exec fixtures, minitest as runner.
fn rank_exec(cache: &Path, tmp: &Path) -> (Value, String) {
    let test_cmd = format!("python {}", path_str(&minitest()));
    rank_exec_with(
        &["examples/candidates", "tests/fixtures/exec/candidates"],
        &test_cmd,
        cache,
        tmp,
    )
}

/// `dei rank --exec --json -` on the example issue with these candidate folders and test
/// command; the run must succeed.
fn rank_exec_with(cands: &[&str], test_cmd: &str, cache: &Path, tmp: &Path) -> (Value, String) {
    let head: Vec<&str> = std::iter::once("rank")
        .chain(cands.iter().copied())
        .collect();
    run_exec(
        &example_issue_args(&head, &exec_flags(test_cmd)),
        cache,
        tmp,
    )
}

/// The `--exec` flags every test here ranks with: python3, `test_cmd`, an 8 s limit, 2 jobs,
/// JSON on stdout.
fn exec_flags(test_cmd: &str) -> [&str; 11] {
    [
        "--exec",
        "--python",
        "python3",
        "--test-cmd",
        test_cmd,
        "--exec-timeout",
        "8",
        "--exec-jobs",
        "2",
        "--json",
        "-",
    ]
}

/// Run `dei ARGS` with this cache and temp folder; it must succeed. Its JSON and stderr.
fn run_exec<S: AsRef<std::ffi::OsStr>>(args: &[S], cache: &Path, tmp: &Path) -> (Value, String) {
    run_exec_env(args, cache, tmp, &[])
}

/// [`run_exec`] with these variables set for `dei`.
fn run_exec_env<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    cache: &Path,
    tmp: &Path,
    vars: &[(&str, &std::ffi::OsStr)],
) -> (Value, String) {
    let out = dei_command()
        .args(args)
        .env("DEI_CACHE_DIR", cache)
        .env("TMPDIR", tmp)
        .envs(vars.iter().copied())
        .output()
        .expect("dei runs");
    assert!(out.status.success(), "{}", stderr(&out));
    (
        serde_json::from_str(&stdout(&out)).expect("JSON"),
        stderr(&out),
    )
}

/// A scratch folder with `cache` and `tmp` inside for an `--exec` test, or `None` (said as a
/// skip) when python3 with the venv module is not on PATH.
fn exec_dirs() -> Option<(tempfile::TempDir, PathBuf, PathBuf)> {
    if !python3_with_venv() {
        skip("python3 with the venv module is not on PATH");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (cache, tmp) = (dir.path().join("cache"), dir.path().join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    Some((dir, cache, tmp))
}

fn rank_of(v: &Value, agent: &str) -> u64 {
    by_agent(v, agent)["rank"].as_u64().unwrap()
}

fn broken(v: &Value, agent: &str) -> Vec<String> {
    by_agent(v, agent)["behaviour"]["broken"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn exec_runs_every_candidate_in_the_sandbox_and_ranks_by_behaviour() {
    let Some((_dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let _ = std::fs::remove_file(ESCAPE);
    let (v, err) = rank_exec(&cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(
        exec["test_files"],
        serde_json::json!(["tests/test_words.py"])
    );
    assert_eq!(exec["stable_tests"], 3, "{exec}");
    assert!(exec["tests_unread"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    assert_eq!(exec["repro_base"], "runs without error");
    let not_isolated: Vec<&str> = exec["not_isolated"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();

    // The fix changes what the issue shows and breaks nothing: it is picked.
    assert_eq!(v["ranked"][0]["agent"], "careful-agent", "{err}");
    // No other candidate behaves as it does (the partial fix also prints a debug line).
    assert_eq!(v["pick_basis"], "alone", "{err}");
    let careful = &by_agent(&v, "careful-agent")["behaviour"];
    assert_eq!(careful["repro"], "changed");
    // Its run ends as the base run does (the output differs), and the JSON says how.
    assert_eq!(careful["repro_end"], "runs without error");
    // What ran, for a reader: the issue's code as extracted, what it printed at base (the
    // issue's wrong counts) and with the fix (the right ones).
    let code = exec["repro_code"].as_str().unwrap_or_default();
    assert!(code.contains("word_count(\"a  b\")"), "{exec}");
    assert!(!code.contains("_dei_"), "the wrapping is not shown: {code}");
    assert_eq!(
        exec["repro_output"], "3\n1\n[dei-repro] no exception\n",
        "{exec}"
    );
    assert_eq!(careful["repro_output"], "2\n2\n[dei-repro] no exception\n");
    // The partial fix's debug line is its own, not part of what the issue's code shows.
    assert_eq!(
        by_agent(&v, "second-agent")["behaviour"]["repro_output"],
        "2\n1\n[dei-repro] no exception\n"
    );
    assert!(broken(&v, "careful-agent").is_empty());
    // A candidate that breaks one test that passed at the base commit.
    assert_eq!(
        broken(&v, "breaks-tests-agent"),
        ["tests/test_words.py::test_capitalize_words"]
    );
    // One that changes nothing: the issue's code behaves as at the base commit.
    assert_eq!(by_agent(&v, "noop-agent")["behaviour"]["repro"], "same");
    assert!(by_agent(&v, "noop-agent")["behaviour"]["repro_end"].is_null());
    assert!(by_agent(&v, "noop-agent")["behaviour"]["repro_output"].is_null());
    assert!(broken(&v, "noop-agent").is_empty());
    // The test the tests-only agent adds fails at base: it runs with every candidate, the two
    // fixes pass it, the one changing nothing and its own author (no fix) do not.
    assert_eq!(
        exec["written_tests"],
        serde_json::json!([{
            "agent": "tests-only-agent",
            "family": "tests-only-agent",
            "tests": ["tests/test_words.py::test_word_count_repeated_spaces"]
        }]),
        "{exec}"
    );
    for (agent, passes) in [
        ("careful-agent", true),
        ("second-agent", true),
        ("noop-agent", false),
        ("tests-only-agent", false),
    ] {
        assert_eq!(
            by_agent(&v, agent)["behaviour"]["written"]["tests-only-agent"],
            passes,
            "{agent}: {exec}"
        );
    }
    // One that sleeps: killed at the limit, every test counts as broken.
    assert_eq!(broken(&v, "sleepy-agent").len(), 3);
    // One that opens a socket: no network in the sandbox, its module does not import.
    if not_isolated.iter().any(|m| m.contains("network")) {
        skip("this machine refuses a network namespace: the socket candidate is not checked");
    } else {
        assert_eq!(broken(&v, "network-agent").len(), 3);
    }
    // One that writes outside its folder: refused, nothing written.
    if not_isolated.iter().any(|m| m.contains("write")) {
        skip("this machine has no Landlock: the escaping candidate is not checked");
    } else {
        assert!(!Path::new(ESCAPE).exists(), "{ESCAPE} was written");
        assert_eq!(broken(&v, "escape-agent").len(), 3);
    }
    // Their module no longer imports (or hangs): the issue's code now fails, which is no fix.
    for bad in ["sleepy-agent", "network-agent", "escape-agent"] {
        assert_eq!(by_agent(&v, bad)["behaviour"]["repro"], "broken", "{bad}");
        let end = by_agent(&v, bad)["behaviour"]["repro_end"].clone();
        assert!(
            end.as_str()
                .is_some_and(|e| e.starts_with("raises ") || e == "is killed (time limit)"),
            "{bad}: {end}"
        );
        let (b, n) = (rank_of(&v, bad), rank_of(&v, "noop-agent"));
        assert!(
            b > n,
            "{bad} ranks {b}, above the candidate that changes nothing ({n})"
        );
    }
    for bad in [
        "sleepy-agent",
        "network-agent",
        "escape-agent",
        "breaks-tests-agent",
    ] {
        let rank = by_agent(&v, bad)["rank"].as_u64().unwrap();
        assert!(rank > 2, "{bad} ranks {rank}");
    }
    // Nothing is left in the temporary folder the sandboxes used.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");

    // The table shows what the pick's reproduction prints against the base commit.
    let (ok, table, err) = rank_exec_plain(&[], &cache, &tmp);
    assert!(ok, "{err}");
    assert!(
        table.contains("the pick's reproduction against the base commit (- base, + the pick):\n  - 3\n  - 1\n  + 2\n  + 2\n"),
        "{table}"
    );

    // A rerun takes every run from the cache and ranks the same.
    let (again, _) = rank_exec(&cache, &tmp);
    assert_eq!(again["exec"]["cached_runs"], again["exec"]["runs"]);
    let order = |v: &Value| -> Vec<(String, String)> {
        v["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["agent"].to_string(), r["score"].to_string()))
            .collect()
    };
    assert_eq!(order(&v), order(&again));
}

#[test]
fn a_test_command_that_prints_no_test_result_is_named_not_read_as_no_passing_tests() {
    let Some((_dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    // unittest finds no test in the example's pytest-style test file: it runs, and prints
    // nothing dei can read as a test's result.
    let test_cmd = "python3 -m unittest -v";
    let (v, _) = rank_exec_with(&["examples/candidates"], test_cmd, &cache, &tmp);
    let exec = &v["exec"];
    assert_eq!(exec["stable_tests"], 0, "{exec}");
    let why = exec["tests_unread"]
        .as_str()
        .unwrap_or_else(|| panic!("{exec}"));
    assert!(
        why.starts_with(
            "no test result could be read from the base runs; tests/test_words.py exited with status "
        ),
        "{why}"
    );
    // Its last line is unittest's verdict on running no test, with the count before it (`Ran 0
    // tests in 0.000s, OK`; `NO TESTS RAN` from 3.12).
    assert!(
        (why.contains(": Ran 0 tests in ") && why.ends_with("s, OK"))
            || why.contains("NO TESTS RAN"),
        "{why}"
    );
    // The table says so, and what to check; a rerun takes every run from the cache.
    let flags = exec_flags(test_cmd);
    let table = table_of(&example_rank_args(&flags[..flags.len() - 2]), &cache, &tmp);
    assert!(
        table.contains(&format!("execution: {why} (dei reads the per-test lines")),
        "{table}"
    );
    assert!(table.contains("check the test command"), "{table}");
}

/// The table (stdout) of `dei ARGS` with this cache and temp folder; it must succeed.
fn table_of<S: AsRef<std::ffi::OsStr>>(args: &[S], cache: &Path, tmp: &Path) -> String {
    let out = dei_command()
        .args(args)
        .env("DEI_CACHE_DIR", cache)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// `dei rank --exec` on the example's own candidates with python3, minitest as runner, and
/// these further flags (no JSON): its exit status, stdout and stderr.
fn rank_exec_plain(extra: &[&str], cache: &Path, tmp: &Path) -> (bool, String, String) {
    let test_cmd = format!("python {}", path_str(&minitest()));
    let flags = exec_flags(&test_cmd);
    let mut args = flags[..flags.len() - 2].to_vec();
    args.extend_from_slice(extra);
    let out = dei_command()
        .args(example_rank_args(&args))
        .env("DEI_CACHE_DIR", cache)
        .env("TMPDIR", tmp)
        .output()
        .unwrap();
    (out.status.success(), stdout(&out), stderr(&out))
}

#[test]
fn a_run_cache_that_cannot_be_written_or_a_zero_limit_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, tmp) = (dir.path().join("cache"), dir.path().join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    // A folder below a file cannot be made, by root either.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let under_file = file.join("runs");
    let (ok, _, err) = rank_exec_plain(&["--exec-cache", path_str(&under_file)], &cache, &tmp);
    assert!(!ok, "{err}");
    assert!(err.contains("the run cache"), "{err}");
    assert!(err.contains("--exec-cache DIR"), "{err}");
    assert!(
        !cache.join("envs").exists(),
        "nothing was built before the refusal"
    );
    for (flag, value) in [("--exec-timeout", "0"), ("--exec-jobs", "0")] {
        let out = dei_command()
            .args(example_rank_args(&["--exec", flag, value]))
            .env("DEI_CACHE_DIR", &cache)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let (ok, err) = (out.status.success(), stderr(&out));
        assert!(!ok, "{flag} {value}: {err}");
        assert!(
            err.contains(&format!("invalid value '0' for '{flag}")),
            "{err}"
        );
    }
}

#[test]
fn a_setup_of_the_users_own_builds_at_the_base_commit_and_a_failing_one_fails_the_run() {
    let Some((_dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    // No spec is shipped for the example: --setup installs the repository as the issue has
    // it, at its base commit (it used to fail: "the spec ... names no commit").
    let (ok, table, err) = rank_exec_plain(&["--setup", "echo installing"], &cache, &tmp);
    assert!(ok, "{err}");
    assert!(
        table
            .contains("execution: 3 tests passing twice at the base commit in tests/test_words.py"),
        "{table}"
    );
    assert!(
        table.contains("\npick rests on: alone (it ran healthy and changes what the issue shows, but no other agent family's candidate behaves the same)\n"),
        "{table}"
    );
    // A setup that fails: the ranking is still printed, the step is named, and the exit
    // status is not 0, since the evidence asked for is missing.
    let (ok, table, err) = rank_exec_plain(&["--setup", "echo installing; exit 3"], &cache, &tmp);
    assert!(!ok, "{table}");
    assert!(table.contains("   1  careful-agent"), "{table}");
    // Nothing ran: the pick rests on nothing that ran, and no line claims otherwise.
    assert!(!table.contains("pick rests on"), "{table}");
    assert!(
        table.contains(
            "execution: nothing ran: environment for example/textkit 0.1: step `install` failed"
        ),
        "{table}"
    );
    assert!(
        err.contains("example__textkit-1: --exec ran nothing, so the ranking above has no execution evidence: environment for example/textkit 0.1: step `install` failed: `echo installing; exit 3` exited with status 3"),
        "{err}"
    );
}

#[test]
fn without_exec_nothing_runs_and_nothing_changes() {
    let out = dei(&example_rank_args(&["--json", "-"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v.get("exec").is_none());
    assert!(v.get("pick_basis").is_none());
    assert!(v["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("behaviour").is_none()));
}

/// The example with tests/test_cli.py added (and `extra` files), ranked with the careful and
/// the noop agents and a runner called `pytest` (so it gets node ids).
fn rank_with_pytest(dir: &Path, extra: &[(&str, &str)], cache: &Path, tmp: &Path) -> Value {
    let mut files = vec![("tests/test_cli.py", TEST_CLI)];
    files.extend_from_slice(extra);
    let (repo, tasks) = example_with(dir, &files, str::to_string);
    let cands = dir.join("candidates");
    copy_agents(
        &cands,
        &[
            ("careful-agent", "examples/candidates"),
            ("noop-agent", "tests/fixtures/exec/candidates"),
        ],
    );
    rank_with_stand_in_pytest(dir, &cands, &repo, &tasks, cache, tmp)
}

/// Rank `cands` with a stand-in `pytest` under `dir` (`minitest.py`, which takes node ids) as
/// the test command; a `bin/pytest` already under `dir` stays (a test's own stand-in).
fn rank_with_stand_in_pytest(
    dir: &Path,
    cands: &Path,
    repo: &Path,
    tasks: &Path,
    cache: &Path,
    tmp: &Path,
) -> Value {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    if !bin.join("pytest").exists() {
        std::fs::copy(minitest(), bin.join("pytest")).unwrap();
    }
    let test_cmd = format!("python {}", path_str(&bin.join("pytest")));
    rank_exec_in_with(cands, repo, tasks, &test_cmd, cache, tmp)
}

#[test]
fn a_pytest_runner_gets_the_tests_naming_the_edit_and_the_file_named_after_it_whole() {
    // Two candidates that edit `word_count` only. tests/test_cli.py merely names it: of its two
    // tests, the one naming `word_count` runs (as a node id, since the runner is called
    // `pytest`). tests/test_words.py is named after the edited module, so its other tests may
    // reach the edit indirectly: it is quick at base, so it runs whole, all three tests
    // (`test_capitalize_words` does not name `word_count`).
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_with_pytest(dir.path(), &[], &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(
        exec["test_files"],
        serde_json::json!(["tests/test_cli.py", "tests/test_words.py"])
    );
    assert_eq!(
        exec["whole_files"],
        serde_json::json!(["tests/test_words.py"]),
        "{exec}"
    );
    assert_eq!(exec["stable_tests"], 1 + 3, "{exec}");
    assert_eq!(by_agent(&v, "careful-agent")["behaviour"]["tests_run"], 4);
}

/// tests/test_words.py with a test that takes 5 s doing `wait` (`time.sleep(5)`, or a loop
/// spinning on the CPU); neither it nor `test_capitalize_words` names `word_count`.
fn slow_test_words(wait: &str) -> String {
    format!(
        r#"import time

from textkit import capitalize_words, word_count


def test_word_count_simple():
    assert word_count("one two three") == 3


def test_word_count_empty():
    assert word_count("") == 0


def test_capitalize_words():
    assert capitalize_words("a b") == "A B"


def test_capitalize_words_slowly():
    {wait}
    assert capitalize_words("hello world") == "Hello World"
"#
    )
}

/// Rank with tests/test_words.py slow whole (one test doing `wait` for 5 s): whole, the file
/// takes more than a sixth of the 8 s limit at base (1.3 s). With `runner`, that stands in for
/// pytest. Returns the issue's `exec` and every sandbox run in the cache.
fn rank_with_a_slow_file(wait: &str, runner: Option<&str>) -> Option<(Value, Vec<Value>)> {
    let (dir, cache, tmp) = exec_dirs()?;
    if let Some(text) = runner {
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/pytest"), text).unwrap();
    }
    let words = slow_test_words(wait);
    let v = rank_with_pytest(dir.path(), &[("tests/test_words.py", &words)], &cache, &tmp);
    let exec = v["exec"].clone();
    assert!(exec["error"].is_null(), "{exec}");
    assert!(exec.get("whole_files").is_none(), "{exec}");
    let tests_run = by_agent(&v, "careful-agent")["behaviour"]["tests_run"].clone();
    assert_eq!(tests_run, exec["stable_tests"], "{exec}");
    Some((exec, cached_runs(&cache)))
}

/// Every sandbox run recorded in `cache` (its JSON files that say whether the run timed out).
fn cached_runs(cache: &Path) -> Vec<Value> {
    walk(cache)
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| serde_json::from_str::<Value>(&std::fs::read_to_string(p).ok()?).ok())
        .filter(|run| run.get("timed_out").is_some())
        .collect()
}

/// The one entry of `exec.trimmed_files`: `file`, run whole or not, without `left_out` alone.
fn the_one_trimmed_file<'a>(exec: &'a Value, file: &str, whole: bool, left_out: &str) -> &'a Value {
    let trimmed = &exec["trimmed_files"];
    assert_eq!(trimmed.as_array().map(Vec::len), Some(1), "{exec}");
    assert_eq!(trimmed[0]["file"], file, "{exec}");
    assert_eq!(trimmed[0]["whole"], whole, "{exec}");
    assert_eq!(
        trimmed[0]["left_out"],
        serde_json::json!([left_out]),
        "{exec}"
    );
    &trimmed[0]
}

/// The one entry of `exec.narrowed_files`: test_words.py, tried whole and narrowed to its two
/// tests naming `word_count`, against the gate of a sixth of the 8 s limit.
fn the_one_narrowed_file(exec: &Value) -> &Value {
    let narrowed = &exec["narrowed_files"];
    assert_eq!(narrowed.as_array().map(Vec::len), Some(1), "{exec}");
    assert_eq!(narrowed[0]["file"], "tests/test_words.py", "{exec}");
    assert_eq!(narrowed[0]["tests"], 2, "{exec}");
    let gate = narrowed[0]["gate"].as_f64().unwrap();
    assert!((gate - 8.0 / 6.0).abs() < 1e-9, "{exec}");
    &narrowed[0]
}

#[test]
fn a_file_named_after_the_edit_whose_one_test_waits_long_runs_without_that_test() {
    // Sleeping uses no CPU time: the whole try runs to its end (its wall time may be three
    // times its CPU time, within the 8 s limit) and counts its wall time less what it waited
    // for a CPU, over the sixth. pytest's durations (the stand-in prints them as pytest does)
    // put 5 of its 5 s in one test: the file runs again without it (`--deselect`), within
    // the gate, and its three other tests count, `test_capitalize_words` too, which a file
    // narrowed to the tests naming `word_count` would lose.
    let Some((exec, runs)) = rank_with_a_slow_file("time.sleep(5)", None) else {
        return;
    };
    assert!(runs.iter().all(|r| r["timed_out"] == false), "{runs:?}");
    let slow = "tests/test_words.py::test_capitalize_words_slowly";
    let trimmed = the_one_trimmed_file(&exec, "tests/test_words.py", true, slow);
    assert!(exec.get("narrowed_files").is_none(), "{exec}");
    assert!(
        trimmed["left_out_seconds"].as_f64().unwrap() >= 5.0,
        "{exec}"
    );
    assert_eq!(exec["stable_tests"], 1 + 3, "{exec}");
    // Base: test_cli twice, test_words whole once and without the slow test twice, the
    // reproduction twice; each of the two trees: test_cli, test_words on its own command,
    // and the reproduction.
    assert_eq!(exec["runs"], 2 + 3 + 2 + 2 * 3, "{exec}");
    let whole: Vec<&Value> = runs
        .iter()
        .filter(|r| r["seconds"].as_f64().unwrap() >= 5.0)
        .collect();
    assert_eq!(whole.len(), 1, "{runs:?}");
    assert!(
        runs.iter()
            .filter(|r| r["output"]
                .as_str()
                .unwrap()
                .contains("PASSED tests/test_words.py"))
            .all(|r| r["output"].as_str().unwrap().contains(slow)
                == (r["seconds"].as_f64().unwrap() >= 5.0)),
        "only the whole try ran the slow test: {runs:?}"
    );
}

/// 200 more tests for test_words.py, `test_NAME_000` to `test_NAME_199`, each sleeping `seconds`.
fn many_tests(name: &str, seconds: f64) -> String {
    (0..200)
        .map(|i| format!("\n\ndef test_{name}_{i:03}():\n    time.sleep({seconds})\n"))
        .collect()
}

#[test]
fn a_file_whose_time_is_spread_over_many_tests_is_trimmed_from_every_tests_seconds() {
    // tests/test_words.py with 200 more tests of 20 ms each: 4 s whole, over the gate of a
    // sixth of the 8 s limit (1.3 s). The 100 slowest listed (2 s) cannot bring it within, so
    // it used to be narrowed to the two tests naming `word_count`; it now runs once more at
    // base listing every test's seconds (`--durations=0`) and loses as many of them as that
    // takes, keeping the rest and its own four tests.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let words = slow_test_words("pass") + &many_tests("thin", 0.02);
    let v = rank_with_pytest(dir.path(), &[("tests/test_words.py", &words)], &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert!(exec.get("narrowed_files").is_none(), "{exec}");
    let trimmed = &exec["trimmed_files"];
    assert_eq!(trimmed.as_array().map(Vec::len), Some(1), "{exec}");
    assert_eq!(trimmed[0]["file"], "tests/test_words.py", "{exec}");
    assert_eq!(trimmed[0]["whole"], true, "{exec}");
    let left_out = trimmed[0]["left_out"].as_array().unwrap();
    // More than the 100 a run lists by default, and only the thin tests.
    assert!(left_out.len() > 100 && left_out.len() < 200, "{exec}");
    assert!(
        left_out
            .iter()
            .all(|t| t.as_str().unwrap().contains("::test_thin_")),
        "{exec}"
    );
    // test_cli's test naming `word_count`, test_words' own four and the thin tests kept.
    let kept = 200 - left_out.len() as u64;
    assert_eq!(exec["stable_tests"], 1 + 4 + kept, "{exec}");
    assert_eq!(
        by_agent(&v, "careful-agent")["behaviour"]["tests_run"],
        1 + 4 + kept
    );
}

#[test]
fn a_file_whose_time_is_not_in_its_tests_is_narrowed_after_every_tests_seconds() {
    // Its time is in importing it (2 s), not in its 200 quick tests: neither the 100 slowest
    // nor all of them can bring it within the 1.3 s gate, so after the run listing every
    // test's seconds it is narrowed to the two tests naming `word_count`, and says the
    // seconds of its whole try.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let words =
        slow_test_words("pass").replacen("import time\n", "import time\n\ntime.sleep(2)\n", 1);
    let words = words + &many_tests("quick", 0.002);
    let v = rank_with_pytest(dir.path(), &[("tests/test_words.py", &words)], &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert!(exec.get("trimmed_files").is_none(), "{exec}");
    let narrowed = the_one_narrowed_file(exec);
    assert!(narrowed["seconds"].as_f64().unwrap() >= 2.0, "{exec}");
    assert_eq!(exec["stable_tests"], 1 + 2, "{exec}");
    // One base run listed every test's seconds (the stand-in lists 100 otherwise).
    let listed = |out: &str| {
        out.matches("call     tests/test_words.py::test_quick_")
            .count()
    };
    let runs = cached_runs(&cache);
    assert_eq!(
        runs.iter()
            .filter_map(|r| r["output"].as_str())
            .filter(|o| listed(o) == 200)
            .count(),
        1,
        "{exec}"
    );
}

#[test]
fn a_file_over_half_the_limit_runs_without_its_slowest_test_rather_than_not_at_all() {
    // tests/test_cli.py is not named after the edited module: it runs only its tests naming
    // `word_count`, here two, one of which sleeps 5 s, over half the 8 s limit (4 s). It used
    // to be left out for the candidates (`slow_files`); its durations put the 5 s in that one
    // test, so it runs without it, within three quarters of the half, and the quick test counts.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let cli = r#"import time

from textkit.words import word_count


def test_word_count_quickly():
    assert word_count("one two") == 2


def test_word_count_slowly():
    time.sleep(5)
    assert word_count("a b c") == 3
"#;
    let v = rank_with_pytest(dir.path(), &[("tests/test_cli.py", cli)], &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert!(exec.get("slow_files").is_none(), "{exec}");
    the_one_trimmed_file(
        exec,
        "tests/test_cli.py",
        false,
        "tests/test_cli.py::test_word_count_slowly",
    );
    // The quick test of test_cli.py, and test_words.py's three, run whole.
    assert_eq!(exec["stable_tests"], 1 + 3, "{exec}");
    assert_eq!(by_agent(&v, "careful-agent")["behaviour"]["tests_run"], 4);
}

#[test]
fn a_file_whose_runner_runs_the_tests_it_was_told_to_leave_out_is_narrowed_after_all() {
    // A pytest older than 3.5 has no `--deselect` (this stand-in takes the option and runs
    // the test anyway): the run without the slow test still ran it, so the trim is undone
    // and the file narrowed to the tests naming `word_count`, as before trims.
    let runner = std::fs::read_to_string(minitest()).unwrap();
    let old = runner.replace("deselected.add(next(args))", "next(args)");
    assert_ne!(
        old, runner,
        "the stand-in no longer reads --deselect as this test expects"
    );
    let Some((exec, _)) = rank_with_a_slow_file("time.sleep(5)", Some(&old)) else {
        return;
    };
    assert!(exec.get("trimmed_files").is_none(), "{exec}");
    assert_eq!(exec["stable_tests"], 1 + 2, "{exec}");
    // Said, with the seconds of its whole try: over the gate of 8 / 6 s.
    let narrowed = the_one_narrowed_file(&exec);
    assert!(narrowed["seconds"].as_f64().unwrap() >= 5.0, "{exec}");
    // Base: test_cli twice; test_words whole, without the slow test (which ran), then
    // narrowed twice; the reproduction twice. Each tree: both files in one run, and the
    // reproduction.
    assert_eq!(exec["runs"], 2 + 4 + 2 + 2 * 2, "{exec}");
}

#[test]
fn a_file_named_after_the_edit_that_is_slow_whole_is_stopped_at_its_share_of_cpu_time() {
    // Spinning on the CPU: the whole try is stopped by its CPU time limit (twice the sixth
    // and a second, rounded up: 4 s, time enough for a file somewhat over the sixth to finish
    // and say which tests are slow), before the clock's 8 s. Stopped, it printed no durations,
    // so the file is narrowed to the two tests naming `word_count`. On a machine more than
    // 2 times as busy as idle the clock comes first; the try is stopped all the same.
    let spin =
        "start = time.process_time()\n    while time.process_time() - start < 5:\n        pass";
    let Some((exec, runs)) = rank_with_a_slow_file(spin, None) else {
        return;
    };
    assert!(exec.get("trimmed_files").is_none(), "{exec}");
    assert_eq!(exec["stable_tests"], 1 + 2, "{exec}");
    // Said; stopped before it ended, its whole try has no seconds.
    assert!(the_one_narrowed_file(&exec)["seconds"].is_null(), "{exec}");
    // Base: test_cli twice, test_words whole once and narrowed twice, the reproduction twice;
    // each of the two trees: both files in one run, and the reproduction.
    assert_eq!(exec["runs"], 2 + 3 + 2 + 2 * 2, "{exec}");
    let by_cpu = |r: &Value| r["signal"] == 24 || r["code"] == 128 + 24;
    let stopped: Vec<&Value> = runs
        .iter()
        .filter(|r| by_cpu(r) || r["timed_out"] == true)
        .collect();
    assert_eq!(stopped.len(), 1, "{runs:?}");
    let cpu = stopped[0]["cpu_seconds"].as_f64();
    if by_cpu(stopped[0]) {
        // Near its 4 s limit, well before the 5 s it asks for. The kernel enforces the limit
        // on its own count; the resource usage read after it may be a little under it on a
        // busy machine (2.496 s seen under load in CI against a 3 s limit).
        if let Some(cpu) = cpu {
            assert!((2.0..5.0).contains(&cpu), "{}", stopped[0]);
        }
    } else {
        // Stopped by the clock: only when starved, under its CPU time limit.
        assert!(!cpu.is_some_and(|c| c >= 4.0), "{}", stopped[0]);
    }
}

/// The bundled example plus `extra` files (path, text), committed into a fresh git repository
/// under `dir`; returns the repository and a tasks file whose example issue points at its commit
/// (its text passed through `issue`).
fn example_with(
    dir: &Path,
    extra: &[(&str, &str)],
    issue: impl Fn(&str) -> String,
) -> (PathBuf, PathBuf) {
    let repo = dir.join("textkit");
    let src = root().join("examples/textkit");
    for entry in walk(&src) {
        let to = repo.join(entry.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    for (path, text) in extra {
        let to = repo.join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, text).unwrap();
    }
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.org")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.org")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let head = git(&["rev-parse", "HEAD"]);
    let line = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    let mut task: Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    task["base_commit"] = Value::String(head);
    task["problem_statement"] = Value::String(issue(task["problem_statement"].as_str().unwrap()));
    let tasks = dir.join("tasks.jsonl");
    std::fs::write(&tasks, format!("{task}\n")).unwrap();
    (repo, tasks)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const TEST_CLI: &str = r#"import os
import tempfile

from textkit.words import capitalize_words, word_count
from textkit.cli import main


def test_main_prints_the_word_count():
    path = os.path.join(tempfile.mkdtemp(), "t.txt")
    with open(path, "w") as f:
        f.write("one two")
    assert main([path]) == 0
    assert word_count("one two") == 2


def test_capitalize_keeps_spacing():
    assert capitalize_words("a  b") == "A  B"
"#;

#[test]
fn a_tree_runs_all_its_test_files_in_one_sandbox_run() {
    // The example with a second test file that names what the candidates edit: both files are
    // selected, and each candidate's tree runs them in one command, not one run per file.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(
        dir.path(),
        &[("tests/test_cli.py", TEST_CLI)],
        str::to_string,
    );
    let cands = dir.path().join("candidates");
    copy_agents(
        &cands,
        &[
            ("careful-agent", "examples/candidates"),
            ("noop-agent", "tests/fixtures/exec/candidates"),
            ("breaks-tests-agent", "tests/fixtures/exec/candidates"),
        ],
    );
    let v = rank_exec_in(&cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(
        exec["test_files"],
        serde_json::json!(["tests/test_cli.py", "tests/test_words.py"])
    );
    // Base: each file twice, and the reproduction twice. Each of the three trees: one run for
    // both files, and the reproduction (one run per file would make 6 + 3 × 3 = 15). The tree
    // that breaks a test in each file: each file once more, narrowed to its broken test.
    assert_eq!(exec["runs"], 6 + 3 * 2 + 2, "{exec}");
    // What the one run shows is read for both files.
    let mut b = broken(&v, "breaks-tests-agent");
    b.sort();
    assert_eq!(
        b,
        [
            "tests/test_cli.py::test_capitalize_keeps_spacing",
            "tests/test_words.py::test_capitalize_words"
        ],
        "{exec}"
    );
    assert!(broken(&v, "careful-agent").is_empty(), "{exec}");
    let stable = exec["stable_tests"].as_u64().unwrap();
    assert_eq!(
        by_agent(&v, "careful-agent")["behaviour"]["tests_run"],
        stable
    );
}

/// The example's `word_count` failing on its second call in a process: in a run of the whole
/// test file the second test to call it fails, alone it passes.
const SECOND_CALL_FAILS: &str = r#"diff --git a/textkit/words.py b/textkit/words.py
--- a/textkit/words.py
+++ b/textkit/words.py
@@ -1,8 +1,13 @@
 """Counting and reshaping words."""
 
+_calls = []
+
 
 def word_count(text):
     """Return the number of words in ``text``."""
+    _calls.append(text)
+    if len(_calls) == 2:
+        raise RuntimeError("fails on its second call in a process")
     if not text:
         return 0
     return len(text.split(" "))
"#;

#[test]
fn a_test_broken_once_runs_again_and_counts_only_when_it_fails_again() {
    // One agent's word_count fails on its second call in a process. tests/test_words.py runs
    // whole with it, and its second test calling word_count fails; run again alone (a runner
    // called `pytest` takes the node id) it passes, so the candidate broke nothing. The agent
    // whose change breaks a test breaks it again, and it stays broken.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(dir.path(), &[], str::to_string);
    let cands = fix_and_noop(dir.path());
    copy_agents(
        &cands,
        &[("breaks-tests-agent", "tests/fixtures/exec/candidates")],
    );
    add_agent(&cands, "order-agent", SECOND_CALL_FAILS);
    let v = rank_with_stand_in_pytest(dir.path(), &cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(
        exec["whole_files"],
        serde_json::json!(["tests/test_words.py"]),
        "{exec}"
    );
    let order = by_agent(&v, "order-agent");
    assert_eq!(order["behaviour"]["tests_run"], 3, "{exec}");
    assert!(broken(&v, "order-agent").is_empty(), "{exec}");
    assert_eq!(
        broken(&v, "breaks-tests-agent"),
        ["tests/test_words.py::test_capitalize_words"],
        "{exec}"
    );
}

/// A change to `capitalize_words` that returns its text unchanged when Python's hash seed is
/// one of `seeds` (as a set's order hangs on it), and is right under any other.
fn under_hash_seeds(seeds: &str) -> String {
    format!(
        r#"diff --git a/textkit/words.py b/textkit/words.py
--- a/textkit/words.py
+++ b/textkit/words.py
@@ -1,5 +1,7 @@
 """Counting and reshaping words."""
 
+import os
+
 
 def word_count(text):
     """Return the number of words in ``text``."""
@@ -10,6 +12,8 @@ def word_count(text):
 
 def capitalize_words(text):
     """Capitalize the first letter of every word, keeping the spacing."""
+    if os.environ.get("PYTHONHASHSEED") in {seeds}:
+        return text
     return " ".join(word[:1].upper() + word[1:] for word in text.split(" "))
 
 
"#
    )
}

#[test]
fn tests_run_under_pinned_hash_seeds_so_a_rerun_reads_the_same() {
    // Python draws a hash seed per process unless told one, so a test whose outcome hangs on
    // a set's order passed or failed by chance, and a rerun of the same trees could read other
    // breaks. Every test run is pinned: the base's two runs under seeds 0 and 1, a candidate's
    // run under 0 and the second run of the tests it broke under 1. A test that passes only
    // under a pinned seed is kept at base; a change that fails a test under seed 0 alone
    // breaks nothing, one that fails it under both breaks it.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let tests = std::fs::read_to_string(root().join("examples/textkit/tests/test_words.py"))
        .unwrap()
        + "\n\ndef test_hash_seed_is_pinned():\n    import os\n\n    assert os.environ.get(\"PYTHONHASHSEED\") in (\"0\", \"1\")\n";
    let (repo, tasks) = example_with(
        dir.path(),
        &[("tests/test_words.py", tests.as_str())],
        str::to_string,
    );
    let cands = fix_and_noop(dir.path());
    add_agent(&cands, "seed-zero-agent", &under_hash_seeds("(\"0\",)"));
    add_agent(&cands, "seeded-agent", &under_hash_seeds("(\"0\", \"1\")"));
    let v = rank_with_stand_in_pytest(dir.path(), &cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["stable_tests"], 4, "{exec}");
    assert_eq!(
        by_agent(&v, "noop-agent")["behaviour"]["tests_run"],
        4,
        "{exec}"
    );
    assert!(broken(&v, "noop-agent").is_empty(), "{exec}");
    assert!(broken(&v, "seed-zero-agent").is_empty(), "{exec}");
    assert_eq!(
        broken(&v, "seeded-agent"),
        ["tests/test_words.py::test_capitalize_words"],
        "{exec}"
    );
}

/// breaks-tests-agent's change, with the assertion it breaks rewritten to suit it.
const REWRITES_THE_TEST: &str = r#"diff --git a/tests/test_words.py b/tests/test_words.py
--- a/tests/test_words.py
+++ b/tests/test_words.py
@@ -10,4 +10,4 @@ def test_word_count_empty():
 
 
 def test_capitalize_words():
-    assert capitalize_words("hello world") == "Hello World"
+    assert capitalize_words("hello world") == "HELLO WORLD"
diff --git a/textkit/words.py b/textkit/words.py
--- a/textkit/words.py
+++ b/textkit/words.py
@@ -3,14 +3,12 @@
 
 def word_count(text):
     """Return the number of words in ``text``."""
-    if not text:
-        return 0
-    return len(text.split(" "))
+    return len(text.split())
 
 
 def capitalize_words(text):
     """Capitalize the first letter of every word, keeping the spacing."""
-    return " ".join(word[:1].upper() + word[1:] for word in text.split(" "))
+    return " ".join(word.upper() for word in text.split())
 
 
 def longest_word(text):
"#;

/// Adds rewrite-agent (`REWRITES_THE_TEST`) to the candidates in `cands` and ranks them all
/// with `--exec` over the example's minitest.
fn rank_with_rewrite_agent(
    cands: &Path,
    repo: &Path,
    tasks: &Path,
    cache: &Path,
    tmp: &Path,
) -> Value {
    std::fs::create_dir_all(cands.join("rewrite-agent")).unwrap();
    std::fs::write(
        cands.join("rewrite-agent").join("example__textkit-1.diff"),
        REWRITES_THE_TEST,
    )
    .unwrap();
    let test_cmd = format!("python {}", path_str(&minitest()));
    rank_exec_in_with(cands, repo, tasks, &test_cmd, cache, tmp)
}

#[test]
fn a_candidate_that_rewrites_the_test_it_breaks_is_seen_breaking_it() {
    // The tests that passed at the base commit run as they were there, as SWE-bench's
    // evaluation puts the test files back: the candidate's own version of the assertion does
    // not hide the break.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(dir.path(), &[], str::to_string);
    let cands = fix_and_noop(dir.path());
    let v = rank_with_rewrite_agent(&cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(
        broken(&v, "rewrite-agent"),
        ["tests/test_words.py::test_capitalize_words"],
        "{exec}"
    );
    assert!(broken(&v, "careful-agent").is_empty(), "{exec}");
    assert_eq!(v["ranked"][0]["agent"], "careful-agent", "{v}");
    // careful-agent changes what the issue shows with the test passing as the base wrote it:
    // the fix did not need the rewrite, so the break is held against rewrite-agent.
    let rewrite = by_agent(&v, "rewrite-agent");
    assert!(rewrite["behaviour"]["rewritten"].is_null(), "{rewrite}");
    assert!(
        rewrite["reason"]
            .as_str()
            .is_some_and(|r| r.contains("breaks")),
        "{rewrite}"
    );
    // The JSON and the reason say its version of the test was set aside.
    assert_eq!(
        rewrite["behaviour"]["tests_set_aside"],
        serde_json::json!(["tests/test_words.py"]),
        "{rewrite}"
    );
    assert!(
        rewrite["reason"]
            .as_str()
            .is_some_and(|r| r.contains("its own edits to tests/test_words.py set aside")),
        "{rewrite}"
    );
    assert!(by_agent(&v, "careful-agent")["behaviour"]["tests_set_aside"].is_null());
    assert_eq!(exec["tests_set_aside"], 1, "{exec}");
}

#[test]
fn a_rewritten_test_is_not_held_against_a_fix_when_no_other_candidate_shows_the_fix_without_it() {
    // Only rewrite-agent changes what the issue shows (noop-agent leaves it as at base), and
    // it passes its own version of the test it breaks: nothing that ran says the rewrite was
    // not needed, so the break is not held against it.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(dir.path(), &[], str::to_string);
    let cands = dir.path().join("candidates");
    copy_agents(&cands, &[("noop-agent", "tests/fixtures/exec/candidates")]);
    let v = rank_with_rewrite_agent(&cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    let rewrite = by_agent(&v, "rewrite-agent");
    assert_eq!(
        broken(&v, "rewrite-agent"),
        ["tests/test_words.py::test_capitalize_words"],
        "{exec}"
    );
    assert_eq!(
        rewrite["behaviour"]["rewritten"],
        serde_json::json!(["tests/test_words.py::test_capitalize_words"]),
        "{rewrite}"
    );
    assert!(
        !rewrite["reason"]
            .as_str()
            .is_some_and(|r| r.contains("breaks")),
        "{rewrite}"
    );
    assert_eq!(v["ranked"][0]["agent"], "rewrite-agent", "{v}");
    // It ran healthy and changes what the issue shows: held against it, the pick would rest
    // on nothing healthy.
    assert_eq!(v["pick_basis"], "alone", "{v}");
}

/// `dei rank --exec --json -` of the candidates in `cands` on the example issue of `tasks`
/// over `repo` (see [`example_with`]), minitest as runner; the run must succeed.
fn rank_exec_in(cands: &Path, repo: &Path, tasks: &Path, cache: &Path, tmp: &Path) -> Value {
    let test_cmd = format!("python {}", path_str(&minitest()));
    rank_exec_in_with(cands, repo, tasks, &test_cmd, cache, tmp)
}

/// [`rank_exec_in`] with this test command.
fn rank_exec_in_with(
    cands: &Path,
    repo: &Path,
    tasks: &Path,
    test_cmd: &str,
    cache: &Path,
    tmp: &Path,
) -> Value {
    run_exec(&example_exec_args(cands, repo, tasks, test_cmd), cache, tmp).0
}

/// The arguments of `dei rank --exec` on the example issue of `tasks` over `repo` with the
/// candidates in `cands` and this test command (see [`exec_flags`]).
fn example_exec_args<'a>(
    cands: &'a Path,
    repo: &'a Path,
    tasks: &'a Path,
    test_cmd: &'a str,
) -> Vec<&'a str> {
    let mut args = vec![
        "rank",
        path_str(cands),
        "--tasks",
        path_str(tasks),
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(repo),
    ];
    args.extend(exec_flags(test_cmd));
    args
}

/// A candidates folder under `dir` with the example's fix (careful-agent) and the candidate
/// that changes nothing (noop-agent).
fn fix_and_noop(dir: &Path) -> PathBuf {
    let cands = dir.join("candidates");
    copy_agents(
        &cands,
        &[
            ("careful-agent", "examples/candidates"),
            ("noop-agent", "tests/fixtures/exec/candidates"),
        ],
    );
    cands
}

/// The fix and the no-op ranked with `--exec` on the example issue, its text passed through
/// `issue` (see [`example_with`], [`fix_and_noop`], [`rank_exec_in`]).
struct FixAndNoop {
    /// Holds every folder below; removed when dropped.
    _dir: tempfile::TempDir,
    cache: PathBuf,
    tmp: PathBuf,
    repo: PathBuf,
    tasks: PathBuf,
    cands: PathBuf,
    /// The run's JSON.
    v: Value,
}

/// [`FixAndNoop`], or `None` (said as a skip) without python3 and its venv module.
fn rank_fix_and_noop(issue: impl Fn(&str) -> String) -> Option<FixAndNoop> {
    let (dir, cache, tmp) = exec_dirs()?;
    let (repo, tasks) = example_with(dir.path(), &[], issue);
    let cands = fix_and_noop(dir.path());
    let v = rank_exec_in(&cands, &repo, &tasks, &cache, &tmp);
    Some(FixAndNoop {
        _dir: dir,
        cache,
        tmp,
        repo,
        tasks,
        cands,
        v,
    })
}

#[test]
fn a_reproduction_that_cannot_import_a_module_outside_the_repository_is_not_used() {
    // The issue's snippet imports a module the environment does not have: at base it fails on
    // that import, so no candidate is run with it and none is judged by it.
    let Some(FixAndNoop { v, .. }) = rank_fix_and_noop(|text| {
        text.replace(
            ">>> from textkit.words import word_count\n",
            ">>> import dei_no_such_module\n>>> from textkit.words import word_count\n",
        )
    }) else {
        return;
    };
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], false, "{exec}");
    let base = exec["repro_base"].as_str().unwrap_or_default();
    assert!(
        base.contains("not used") && base.contains("dei_no_such_module"),
        "{exec}"
    );
    for agent in ["careful-agent", "noop-agent"] {
        assert!(
            by_agent(&v, agent)["behaviour"]["repro"].is_null(),
            "{exec}"
        );
    }
    // Base tests and the reproduction twice; each tree its one test file, no reproduction.
    assert_eq!(exec["runs"], 2 + 2 + 2, "{exec}");
}

#[test]
fn what_the_issue_says_its_code_should_show_is_looked_for_in_each_candidates_run() {
    // The issue adds a statement and says what it should print. The fix prints it and the
    // candidate that changes nothing does not; a value the base run already prints (`[3, 4]`,
    // after "instead of", here what it prints now) is no evidence and is not looked for.
    let Some(run) = rank_fix_and_noop(|text| {
        text.replace(
            ">>> word_count(\"a  b\")\n",
            ">>> [word_count(s) for s in (\"a  b\", \"one two  three\")]\n[3, 4]\n>>> word_count(\"a  b\")\n",
        ) + "\nThe list should be `[2, 3]` instead of `[3, 4]`.\n"
    }) else {
        return;
    };
    let FixAndNoop {
        cache,
        tmp,
        repo,
        tasks,
        cands,
        v,
        ..
    } = &run;
    let exec = &v["exec"];
    assert_eq!(exec["expected"], serde_json::json!(["[2, 3]"]), "{exec}");
    let expected = |agent: &str| by_agent(v, agent)["behaviour"]["expected"].clone();
    assert_eq!(
        expected("careful-agent"),
        serde_json::json!({"shown": 1, "of": 1}),
        "{v}"
    );
    assert_eq!(
        expected("noop-agent"),
        serde_json::json!({"shown": 0, "of": 1}),
        "{v}"
    );
    // The table says it.
    let test_cmd = format!("python {}", path_str(&minitest()));
    let mut args = example_exec_args(cands, repo, tasks, &test_cmd);
    args.truncate(args.len() - 2); // no `--json -`
    let table = table_of(&args, cache, tmp);
    assert!(
        table.contains("execution: the issue expects its code to show `[2, 3]`, which the base run does not; 1 of 2 candidates show it"),
        "{table}"
    );
}

/// A wheel of a stand-in `numpy` (version 1.0, pure Python) in `dir`, written with python3's
/// zipfile: what a package index would serve, without one.
fn stand_in_numpy_wheel(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let script = r#"import sys, zipfile
with zipfile.ZipFile(sys.argv[1] + "/numpy-1.0-py3-none-any.whl", "w") as z:
    z.writestr("numpy/__init__.py", "def ones(n):\n    return [1.0] * n\n")
    z.writestr("numpy-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: numpy\nVersion: 1.0\n")
    z.writestr("numpy-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: dei-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("numpy-1.0.dist-info/RECORD", "")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, path_str(dir)])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_reproduction_that_stops_on_a_known_package_gets_it_installed() {
    // The issue's session begins with `import numpy`; the example's environment has none. At
    // base the reproduction stops on that import; with --exec-extras dei installs numpy (here
    // a stand-in wheel from a local folder: PIP_NO_INDEX and PIP_FIND_LINKS reach the build)
    // and gathers the issue again: the reproduction then runs, the fix changes it and the
    // candidate that changes nothing does not. Without the flag it is not used.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let wheels = dir.path().join("wheels");
    stand_in_numpy_wheel(&wheels);
    let (repo, tasks) = example_with(dir.path(), &[], |text| {
        text.replace(
            ">>> from textkit.words import word_count\n",
            ">>> import numpy\n>>> numpy.ones(2)\n[1.0, 1.0]\n>>> from textkit.words import word_count\n",
        )
    });
    let cands = fix_and_noop(dir.path());
    let test_cmd = format!("python {}", path_str(&minitest()));
    let rank = |extra: &[&str]| {
        let mut args = example_exec_args(&cands, &repo, &tasks, &test_cmd);
        args.extend(extra);
        run_exec_env(
            &args,
            &cache,
            &tmp,
            &[
                ("PIP_NO_INDEX", "1".as_ref()),
                ("PIP_FIND_LINKS", wheels.as_os_str()),
            ],
        )
    };
    let (v, _) = rank(&["--exec-extras"]);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["extras"], serde_json::json!(["numpy"]), "{exec}");
    assert!(exec["extras_failed"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    fix_changes_it_and_noop_does_not(&v);

    let (v, _) = rank(&[]);
    let exec = &v["exec"];
    assert!(exec["extras"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], false, "{exec}");
    assert!(
        exec["repro_base"]
            .as_str()
            .is_some_and(|b| b.contains("not used") && b.contains("numpy")),
        "{exec}"
    );
}

/// A new file at the repository's root, as a diff.
fn new_file_diff(path: &str, text: &str) -> String {
    let mut d = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        text.lines().count()
    );
    for l in text.lines() {
        d.push('+');
        d.push_str(l);
        d.push('\n');
    }
    d
}

#[test]
fn without_code_in_the_issue_an_agents_reproduction_script_stands_in() {
    // The issue keeps its prose but loses its snippet. Two agents also wrote a reproduction
    // script at the root: the first in order imports a module nobody has (unusable at base,
    // skipped), the second prints what the issue reports. It runs at base and with every
    // candidate: the fixes change what it prints, the candidate that changes nothing does not.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_with_agent_scripts(dir.path(), &cache, &tmp, "");
    assert_eq!(v["exec"]["repro_pinned"], true, "{}", v["exec"]);
}

#[test]
fn an_agents_script_that_prints_differently_is_pinned_too() {
    // The standing-in script also prints a set of strings, whose order follows string
    // hashing: pinned, it prints alike and is compared whole.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_with_agent_scripts(
        dir.path(),
        &cache,
        &tmp,
        "print(list({'w%d' % i for i in range(30)}))\n",
    );
    assert_eq!(v["exec"]["repro_pinned"], true, "{}", v["exec"]);
}

/// The example issue without code, ranked with the fix, a no-op and two agents' scripts (one
/// unusable, one reproducing the issue and printing `extra` too): the second stands in, the
/// fixes change it, the others do not.
fn rank_with_agent_scripts(dir: &Path, cache: &Path, tmp: &Path, extra: &str) -> Value {
    // No code at all: neither the session block nor the inline calls of its prose.
    let (repo, tasks) = example_with(dir, &[], |text| {
        text.split("```python").next().unwrap().replace('`', "")
    });
    let cands = fix_and_noop(dir);
    let fix = std::fs::read_to_string(
        root().join("examples/candidates/careful-agent/example__textkit-1.diff"),
    )
    .unwrap();
    let noop = std::fs::read_to_string(
        root().join("tests/fixtures/exec/candidates/noop-agent/example__textkit-1.diff"),
    )
    .unwrap();
    let reproduces = format!(
        "from textkit.words import word_count\n{extra}print(word_count('a  b'))\nprint(word_count('one\\ntwo'))\n"
    );
    for (agent, base, path, script) in [
        (
            "a-script-agent",
            &noop,
            "reproduce_issue.py",
            "import dei_no_such_module\nprint(dei_no_such_module.x)\n",
        ),
        (
            "scripted-agent",
            &fix,
            "reproduce_bug.py",
            reproduces.as_str(),
        ),
    ] {
        std::fs::create_dir_all(cands.join(agent)).unwrap();
        std::fs::write(
            cands.join(agent).join("example__textkit-1.diff"),
            format!("{base}{}", new_file_diff(path, script)),
        )
        .unwrap();
    }
    let v = rank_exec_in(&cands, &repo, &tasks, cache, tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    assert_eq!(
        exec["repro_from"], "reproduce_bug.py, written by scripted-agent",
        "{exec}"
    );
    // A reader sees the agent's script as it wrote it, not dei's wrapping of it.
    assert_eq!(exec["repro_code"], reproduces.as_str(), "{exec}");
    assert!(exec["repro_output_unstable"].is_null(), "{exec}");
    assert_eq!(exec["repro_base"], "runs without error", "{exec}");
    for (agent, want) in [
        ("careful-agent", "changed"),
        ("scripted-agent", "changed"),
        ("noop-agent", "same"),
        ("a-script-agent", "same"),
    ] {
        assert_eq!(
            by_agent(&v, agent)["behaviour"]["repro"],
            want,
            "{agent}: {exec}"
        );
    }
    v
}

#[test]
fn a_file_a_candidate_creates_at_the_root_is_not_there_when_the_reproduction_runs() {
    // The issue's snippet also reads `sample.txt`, which the repository does not have: at base
    // that statement fails. An agent that changes nothing but adds `sample.txt` at the root
    // (its scratch input) must not be seen changing what the issue's code does; the fix still
    // is.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(dir.path(), &[], |text| {
        text.replace(
            ">>> from textkit.words import word_count\n",
            ">>> from textkit.words import word_count\n>>> print(open('sample.txt').read())\n",
        )
    });
    let cands = fix_and_noop(dir.path());
    let noop = std::fs::read_to_string(
        root().join("tests/fixtures/exec/candidates/noop-agent/example__textkit-1.diff"),
    )
    .unwrap();
    std::fs::create_dir_all(cands.join("data-agent")).unwrap();
    std::fs::write(
        cands.join("data-agent").join("example__textkit-1.diff"),
        format!("{noop}{}", new_file_diff("sample.txt", "two words\n")),
    )
    .unwrap();
    let v = rank_exec_in(&cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    for (agent, want) in [
        ("careful-agent", "changed"),
        ("noop-agent", "same"),
        ("data-agent", "same"),
    ] {
        assert_eq!(
            by_agent(&v, agent)["behaviour"]["repro"],
            want,
            "{agent}: {exec}"
        );
    }
}

#[test]
fn a_candidates_own_debug_print_is_not_a_change_in_the_reproduction() {
    // An agent that only leaves a `print` in the library: the reproduction prints one more
    // line with it, which is its own output, not a change in what the issue's code does. The
    // fix still changes it.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let (repo, tasks) = example_with(dir.path(), &[], |text| text.to_string());
    let cands = fix_and_noop(dir.path());
    let debug = "diff --git a/textkit/words.py b/textkit/words.py\n--- a/textkit/words.py\n+++ b/textkit/words.py\n@@ -4,5 +4,6 @@\n def word_count(text):\n     \"\"\"Return the number of words in ``text``.\"\"\"\n+    print(f\"word_count got: {text!r}\")\n     if not text:\n         return 0\n     return len(text.split(\" \"))\n";
    add_agent(&cands, "debug-agent", debug);
    let v = rank_exec_in(&cands, &repo, &tasks, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    behaves_like_noop(&v, "debug-agent");
}

/// A candidate of `agent` in `cands` with this diff for the example issue.
fn add_agent(cands: &Path, agent: &str, diff: &str) {
    std::fs::create_dir_all(cands.join(agent)).unwrap();
    std::fs::write(cands.join(agent).join("example__textkit-1.diff"), diff).unwrap();
}

/// `agent`'s candidate applies, and behaves as the candidate that changes nothing does: the
/// reproduction as at base (which the fix changes), and the same behaviour class.
fn behaves_like_noop(v: &Value, agent: &str) {
    let exec = &v["exec"];
    assert_eq!(by_agent(v, agent)["applies"], "clean", "{exec}");
    for (who, want) in [
        ("careful-agent", "changed"),
        ("noop-agent", "same"),
        (agent, "same"),
    ] {
        assert_eq!(
            by_agent(v, who)["behaviour"]["repro"],
            want,
            "{who}: {exec}"
        );
    }
    assert_eq!(
        by_agent(v, agent)["behaviour"]["class"],
        by_agent(v, "noop-agent")["behaviour"]["class"],
        "{exec}"
    );
}

/// The example (with `extra` files) whose issue shows `shown` in place of its Python session,
/// ranked with `--exec` with the fix and the candidate that changes nothing; the run must have
/// a reproduction.
fn rank_issue_showing(
    dir: &Path,
    extra: &[(&str, &str)],
    shown: &str,
    cache: &Path,
    tmp: &Path,
) -> Value {
    let (repo, tasks) = example_with(dir, extra, |text| {
        let at = text
            .find("```python")
            .expect("the example's issue has a block");
        format!("{}{shown}", &text[..at])
    });
    let cands = fix_and_noop(dir);
    let v = rank_exec_in(&cands, &repo, &tasks, cache, tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    v
}

/// The fix changes what the reproduction shows; the candidate that changes nothing does not.
fn fix_changes_it_and_noop_does_not(v: &Value) {
    for (agent, want) in [("careful-agent", "changed"), ("noop-agent", "same")] {
        assert_eq!(
            by_agent(v, agent)["behaviour"]["repro"],
            want,
            "{agent}: {}",
            v["exec"]
        );
    }
}

/// A stand-in for pytest at the example's root (the machine's python3 may have none): its
/// `main` runs the `test*` functions of the files it is given (its `.py` arguments, each a
/// module of its own) and ends 1 when one fails.
const PYTEST_STAND_IN: &str = r#"import importlib.util


def main(args):
    print("stand-in pytest:", " ".join(a for a in args if not a.endswith(".py")))
    failed = 0
    for n, path in enumerate(a for a in args if a.endswith(".py")):
        spec = importlib.util.spec_from_file_location("issue_tests_%d" % n, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in sorted(vars(module)):
            if name.startswith("test"):
                try:
                    getattr(module, name)()
                    print(name, "PASSED")
                except AssertionError:
                    failed += 1
                    print(name, "FAILED")
    return 1 if failed else 0
"#;

/// The example's issue showing `shown`, ranked with the stand-in pytest in its repository: the
/// test fails at base (pytest's exit status, not the script's), the fix changes what it shows
/// and the candidate that changes nothing does not.
fn stand_in_pytest_tells_the_fix(shown: &str) {
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_issue_showing(
        dir.path(),
        &[("pytest.py", PYTEST_STAND_IN)],
        shown,
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_base"], "exits with status 1", "{exec}");
    fix_changes_it_and_noop_does_not(&v);
}

#[test]
fn an_issue_that_shows_a_test_has_it_run_by_pytest() {
    // The issue shows a test file and the pytest command that fails on it. Run as a script,
    // that code only defines the test and ends the same with every candidate; the
    // reproduction runs it with pytest (here a stand-in).
    stand_in_pytest_tells_the_fix(
        "```python\nfrom textkit.words import word_count\n\n\ndef test_repeated_spaces():\n    assert word_count(\"a  b\") == 2\n```\n\n```\n$ pytest -x test_issue.py\n```\n",
    );
}

#[test]
fn an_issue_without_code_runs_the_calls_its_prose_writes_inline() {
    // The example's issue without its session block: its prose still writes
    // `textkit.words.word_count("a  b")` and `word_count("one\ntwo")` inline. Those run.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_issue_showing(dir.path(), &[], "", &cache, &tmp);
    assert_eq!(
        v["exec"]["repro_base"], "runs without error",
        "{}",
        v["exec"]
    );
    fix_changes_it_and_noop_does_not(&v);
}

#[test]
fn an_issue_that_shows_named_test_files_has_pytest_run_them_as_a_project() {
    // The issue shows two files by name: a test module and the `noxfile.py` that ran it, which
    // imports `nox` (not installed). Joined into one script they would stop on that import and
    // not be used; written as a project, pytest (here a stand-in) runs the test module only.
    stand_in_pytest_tells_the_fix(
        "test_spaces.py:\n```python\nfrom textkit.words import word_count\n\n\ndef test_repeated_spaces():\n    assert word_count(\"a  b\") == 2\n```\n\nnoxfile.py:\n```python\nimport nox\n\n\n@nox.session\ndef test(session):\n    session.run(\"pytest\")\n```\n",
    );
}

#[test]
fn without_pytest_an_issues_test_ends_as_a_script_does() {
    // The same issue where the environment has no pytest (the example's venv has none, and no
    // stand-in is in the tree): the script defines the test, cannot run it, and ends as a
    // script does, the same with every candidate.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_issue_showing(
        dir.path(),
        &[],
        "```python\nfrom textkit.words import word_count\n\n\ndef test_repeated_spaces():\n    assert word_count(\"a  b\") == 2\n```\n",
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_base"], "runs without error", "{exec}");
    for agent in ["careful-agent", "noop-agent"] {
        assert_eq!(
            by_agent(&v, agent)["behaviour"]["repro"],
            "same",
            "{agent}: {exec}"
        );
    }
}

/// A stand-in for pylint inside the example's repository: `pylint.lint.Run` counts the words
/// of the file it is given with the repository's `word_count`, and exits.
const PYLINT_STAND_IN: &str = r#"import sys

from textkit.words import word_count


def Run(args):
    with open(args[0]) as f:
        print("words:", word_count(f.read()))
    sys.exit(0)
"#;

#[test]
fn a_pylint_issue_runs_its_command_over_the_file_it_shows() {
    // In a repository whose package is `pylint`, the issue's command runs over the file it
    // shows, as the reporter ran it: the fix changes what it prints, the no-op does not.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_issue_showing(
        dir.path(),
        &[
            ("pylint/__init__.py", ""),
            ("pylint/lint.py", PYLINT_STAND_IN),
        ],
        "```python\nsome  words\n```\n\n`pylint words.py` counts them wrong.\n",
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_base"], "runs without error", "{exec}");
    fix_changes_it_and_noop_does_not(&v);
}

/// A stand-in for Sphinx inside the example's repository: `sphinx.cmd.build.main` "builds" the
/// project's `index.rst` into `_build/index.txt`, counting its words with the repository's
/// `word_count`, after running the project's `conf.py`.
const SPHINX_STAND_IN: &str = r#"import os

from textkit.words import word_count


def main(argv):
    src, out = argv[-2], argv[-1]
    conf = {}
    with open(os.path.join(src, "conf.py")) as f:
        exec(f.read(), conf)
    os.makedirs(out)
    with open(os.path.join(src, "index.rst")) as f:
        text = f.read()
    with open(os.path.join(out, "index.txt"), "w") as f:
        f.write("%s: %d words\n" % (conf.get("project"), word_count(text)))
    return 0
"#;

#[test]
fn a_sphinx_issue_builds_the_project_it_shows() {
    // In a repository whose package is `sphinx`, the project the issue shows is built and its
    // pages printed: the fix changes the page, the no-op does not.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_issue_showing(
        dir.path(),
        &[
            ("sphinx/__init__.py", ""),
            ("sphinx/cmd/__init__.py", ""),
            ("sphinx/cmd/build.py", SPHINX_STAND_IN),
        ],
        "```\n# index.rst\nTwo  words\n```\n```\n# in conf.py\nproject = 'demo'\n```\n",
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_base"], "runs without error", "{exec}");
    fix_changes_it_and_noop_does_not(&v);
}

#[test]
fn a_reproduction_that_prints_the_time_is_compared_by_how_it_ends() {
    // The issue's snippet also prints the time, so its two base runs print differently, with
    // its randomness pinned too: only how a run ends is compared, and the candidate that
    // changes nothing is not seen changing what it prints (it would be, on every run, if
    // outputs were compared).
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_with_session_lines(
        dir.path(),
        ">>> import time\n>>> time.time()\n",
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_output_unstable"], true, "{exec}");
    assert_eq!(exec["repro_base"], "runs without error", "{exec}");
    for agent in ["careful-agent", "noop-agent"] {
        assert_eq!(
            by_agent(&v, agent)["behaviour"]["repro"],
            "same",
            "{agent}: {exec}"
        );
    }
}

#[test]
fn a_reproduction_that_prints_differently_is_pinned_and_compared_whole() {
    // A random number and a set of strings (whose order follows string hashing, seeded anew
    // in each run): pinned from its first run (hash seed 0, `random` seeded), the base runs
    // print alike, and the candidates' runs, pinned too, are compared whole.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let v = rank_with_session_lines(
        dir.path(),
        ">>> import random\n>>> random.random()\n>>> list({'w%d' % i for i in range(30)})\n",
        &cache,
        &tmp,
    );
    let exec = &v["exec"];
    assert_eq!(exec["repro_pinned"], true, "{exec}");
    assert!(exec["repro_output_unstable"].is_null(), "{exec}");
    fix_changes_it_and_noop_does_not(&v);
}

/// The example issue with `lines` added to its session after the import, ranked with the fix
/// and the candidate that changes nothing; the run must have a reproduction.
fn rank_with_session_lines(dir: &Path, lines: &str, cache: &Path, tmp: &Path) -> Value {
    let (repo, tasks) = example_with(dir, &[], |text| {
        let import = ">>> from textkit.words import word_count\n";
        text.replace(import, &format!("{import}{lines}"))
    });
    let cands = fix_and_noop(dir);
    let v = rank_exec_in(&cands, &repo, &tasks, cache, tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert_eq!(exec["reproduction"], true, "{exec}");
    v
}

/// The example's issue four times over (`example__textkit-1` … `-4`, one base commit) with the
/// same agents: a fix, a second fix and one that breaks a test, each with the same diff on
/// every copy. `dei rank --all --exec --run-dir` ranks them all, then adds each agent's
/// execution record over the other three copies.
#[test]
fn a_run_adds_each_agents_execution_record_over_its_other_issues_once() {
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let task: Value = serde_json::from_str(
        std::fs::read_to_string(root().join("examples/tasks.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let ids: Vec<String> = (1..=4).map(|k| format!("example__textkit-{k}")).collect();
    let tasks = dir.path().join("tasks.jsonl");
    let lines: Vec<String> = ids
        .iter()
        .map(|id| {
            let mut t = task.clone();
            t["instance_id"] = Value::String(id.clone());
            t.to_string()
        })
        .collect();
    std::fs::write(&tasks, lines.join("\n") + "\n").unwrap();
    let cands = dir.path().join("cands");
    for (agent, from) in [
        ("careful-agent", "examples/candidates"),
        ("second-agent", "examples/candidates"),
        ("breaks-tests-agent", "tests/fixtures/exec/candidates"),
    ] {
        let diff = std::fs::read(
            root()
                .join(from)
                .join(agent)
                .join("example__textkit-1.diff"),
        )
        .unwrap();
        std::fs::create_dir_all(cands.join(agent)).unwrap();
        for id in &ids {
            std::fs::write(cands.join(agent).join(format!("{id}.diff")), &diff).unwrap();
        }
    }
    let run_dir = dir.path().join("run");
    let test_cmd = format!("python {}", path_str(&minitest()));
    let args: Vec<String> = [
        "rank",
        path_str(&cands),
        "--tasks",
        path_str(&tasks),
        "--all",
        "--repo",
        path_str(&example_repo()),
        "--run-dir",
        path_str(&run_dir),
        "--no-progress",
    ]
    .into_iter()
    .chain(exec_flags(&test_cmd).into_iter().take(9))
    .map(String::from)
    .collect();
    let rank = || {
        let out = dei_command()
            .args(&args)
            .env("DEI_CACHE_DIR", &cache)
            .env("TMPDIR", &tmp)
            .output()
            .expect("dei runs");
        assert!(out.status.success(), "{}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let (table, first) = rank();
    assert!(
        first.contains("execution record") && first.contains("4 issue ranking(s) updated"),
        "{first}"
    );
    // Each pick is the careful fix, which no other candidate behaves like (as when ranked
    // alone): the summary says so per issue and counts it.
    assert!(
        table.contains("\n  what the picks rest on: alone 4 ("),
        "{table}"
    );
    assert_eq!(
        table.matches("  alone       careful-agent").count(),
        4,
        "{table}"
    );
    // The two fixes run healthy everywhere and share a record: the scores pick, not its order.
    assert!(
        first.contains("on 0 the pick is the healthy candidate whose agent has the better record"),
        "{first}"
    );
    let journal = || std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let lines = journal().lines().count();
    assert_eq!(lines, 8, "one line per issue, then one per updated issue");
    // The last line of each issue: every agent ran healthy or not on all three other copies.
    let last: Vec<Value> = journal()
        .lines()
        .skip(4)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for o in &last {
        let r = &o["result"];
        let part = |agent: &str| -> f64 {
            by_agent(r, agent)["review"]["score"]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p[0] == "execution record of its agent")
                .map_or(0.0, |p| p[1].as_f64().unwrap())
        };
        assert!(part("breaks-tests-agent") < 0.0, "{r}");
        assert!(part("careful-agent") > 0.0, "{r}");
        assert!(by_agent(r, "breaks-tests-agent")["reason"]
            .as_str()
            .unwrap()
            .contains("healthy runs that change what the issue shows on 0 of 3 other issues where a candidate changes it"));
        assert!(!o["top"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "breaks-tests-agent"));
    }
    // Resumed with nothing left to rank: the record is the same, and nothing is appended.
    let (_, again) = rank();
    assert!(again.contains("0 issue ranking(s) updated"), "{again}");
    assert_eq!(journal().lines().count(), lines);
}

/// python3 on PATH is at least 3.8 (compiles `x is ""` with a SyntaxWarning).
fn python3_at_least_3_8() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import sys; sys.exit(sys.version_info < (3, 8))"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn runs_start_with_the_base_compiled_and_a_candidates_files_compiled_the_same_way() {
    // The base tree's Python files are compiled once per issue and every run starts with that
    // bytecode (the test command fails without it); the files a candidate changes are compiled
    // before its run the same way. So the candidate's own code runs, not the base's bytecode
    // (the fix still changes the reproduction), and what compiling its file prints (a
    // SyntaxWarning) is not read as a change in what the issue's code does.
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    if !python3_at_least_3_8() {
        skip("python3 before 3.8 prints no SyntaxWarning for `is` with a literal");
        return;
    }
    let (repo, tasks) = example_with(dir.path(), &[], |text| text.to_string());
    let cands = fix_and_noop(dir.path());
    let warns = "diff --git a/textkit/words.py b/textkit/words.py\n--- a/textkit/words.py\n+++ b/textkit/words.py\n@@ -4,5 +4,7 @@\n def word_count(text):\n     \"\"\"Return the number of words in ``text``.\"\"\"\n     if not text:\n         return 0\n+    if text is \"\":\n+        return 0\n     return len(text.split(\" \"))\n";
    add_agent(&cands, "warning-agent", warns);
    let test_cmd = format!(
        "python -c 'import os, sys, textkit.words as w; sys.exit(0 if os.path.exists(w.__cached__) else 3)' && python {}",
        path_str(&minitest())
    );
    let v = rank_exec_in_with(&cands, &repo, &tasks, &test_cmd, &cache, &tmp);
    let exec = &v["exec"];
    assert!(exec["error"].is_null(), "{exec}");
    assert!(exec["tests_unread"].is_null(), "{exec}");
    assert!(exec["stable_tests"].as_u64().unwrap_or(0) > 0, "{exec}");
    behaves_like_noop(&v, "warning-agent");
}

/// The `dei-sandbox-*` folders in `tmp`.
fn sandbox_folders(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("dei-sandbox-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_run_terminated_mid_way_removes_its_sandbox_folders() {
    // SIGTERM (`timeout`, a service manager) quits at once, as a second Ctrl-C does; the runs
    // in flight never finish, so their folders (and the issue's snapshot) are removed on the
    // way out rather than left for a later run to sweep an hour on.
    let Some((_dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let test_cmd = format!("python {}", path_str(&minitest()));
    let args = example_issue_args(
        &[
            "rank",
            "examples/candidates",
            "tests/fixtures/exec/candidates",
        ],
        &exec_flags(&test_cmd),
    );
    let mut child = dei_command()
        .args(&args)
        .env("DEI_CACHE_DIR", &cache)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("dei runs");
    let started = std::time::Instant::now();
    while sandbox_folders(&tmp).is_empty() {
        if started.elapsed() > std::time::Duration::from_secs(120)
            || child.try_wait().unwrap().is_some()
        {
            let _ = child.kill();
            panic!("no sandbox folder appeared while the run went on");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("terminated: quitting now"), "{err}");
    let left = sandbox_folders(&tmp);
    assert!(
        left.is_empty(),
        "sandbox folders left behind: {left:?}\n{err}"
    );
}

/// `--test-loopback`: a test command that starts a server on 127.0.0.1 and runs the tests only
/// once it answers reads them with the flag, and reads none without it (the namespace's
/// loopback is down).
#[test]
fn test_loopback_lets_the_tests_reach_a_server_they_start() {
    let Some((_dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let test_cmd = format!(
        "(python -m http.server 8767 --bind 127.0.0.1 >/dev/null 2>&1 &) ; \
         python -c \"import time, urllib.request as u
for _ in range(100):
    try:
        u.urlopen('http://127.0.0.1:8767/', timeout=1); break
    except OSError: time.sleep(0.05)
else: raise SystemExit('no server')\" && python {}",
        path_str(&minitest())
    );
    let head = ["rank", "examples/candidates"];
    let mut flags: Vec<&str> = exec_flags(&test_cmd).to_vec();
    flags.push("--test-loopback");
    let (v, _) = run_exec(&example_issue_args(&head, &flags), &cache, &tmp);
    if v["exec"]["not_isolated"].to_string().contains("network") {
        skip("this machine refuses a network namespace: the loopback is the machine's own");
        return;
    }
    assert_eq!(v["exec"]["stable_tests"], 3, "{}", v["exec"]);
    let (v, _) = rank_exec_with(&["examples/candidates"], &test_cmd, &cache, &tmp);
    assert_eq!(v["exec"]["stable_tests"], 0, "{}", v["exec"]);
}

/// `bash examples/run.sh --exec`, what the README offers a newcomer: the script adds python3
/// and `examples/minitest.py` as the test command, so the example's tests and the issue's code
/// run; a test command of the user's own is left as given. `DEI_BIN` has the script run this
/// build's `dei` rather than build a release one.
#[test]
fn the_example_script_runs_the_candidates_with_exec() {
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let script = |args: &[&str]| {
        let out = without_user_settings(&mut std::process::Command::new("bash"))
            .arg(root().join("examples/run.sh"))
            .args(args)
            .env("DEI_BIN", env!("CARGO_BIN_EXE_dei"))
            .env("CARGO_TARGET_DIR", dir.path().join("target"))
            .env("DEI_CACHE_DIR", &cache)
            .env("TMPDIR", &tmp)
            .output()
            .expect("bash runs");
        (out.status.success(), stdout(&out), stderr(&out))
    };
    let (ok, json, err) = script(&["--exec", "--json", "-"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(v["exec"]["stable_tests"], 3, "{}", v["exec"]);
    assert_eq!(v["exec"]["reproduction"], true, "{}", v["exec"]);
    assert_eq!(rank_of(&v, "careful-agent"), 1);
    assert!(by_agent(&v, "careful-agent")["behaviour"]["tests_run"].as_u64() > Some(0));
    assert!(
        !dir.path().join("target/release").exists(),
        "with DEI_BIN nothing is built"
    );
    // The user's own test command wins: one that prints no test result is named as such.
    let (ok, table, err) = script(&["--exec", "--python", "python3", "--test-cmd", "true"]);
    assert!(ok, "the issue's code still ran: {err}");
    assert!(table.contains("no test result could be read"), "{table}");
    // Without --exec nothing runs.
    let (ok, json, err) = script(&["--json", "-"]);
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v.get("exec").is_none_or(Value::is_null), "{}", v["exec"]);
}

/// Building an environment takes a while the first time: stderr says so in one line, even when
/// it is not a terminal (what is built: repository, version, python), and then how long it
/// took, or that it failed and why. A reused environment is not built again, and not said.
#[test]
fn building_an_environment_is_said_with_what_it_is_and_how_long_it_took() {
    let Some((dir, cache, tmp)) = exec_dirs() else {
        return;
    };
    let envs = dir.path().join("fresh-envs");
    let (ok, _, err) = rank_exec_plain(&["--env-dir", path_str(&envs)], &cache, &tmp);
    assert!(ok, "{err}");
    let start = err
        .lines()
        .find(|l| l.contains("building the Python environment"))
        .unwrap_or_else(|| panic!("no build line in {err}"));
    assert!(
        start.contains("example/textkit 0.1") && start.contains("python3"),
        "{start}"
    );
    let done = err
        .lines()
        .find(|l| l.contains("built the Python environment of example/textkit 0.1 in "))
        .unwrap_or_else(|| panic!("no end of the build in {err}"));
    assert!(
        done.trim_end().ends_with(" s") || done.contains(" s "),
        "{done}"
    );
    let (ok, _, err) = rank_exec_plain(&["--env-dir", path_str(&envs)], &cache, &tmp);
    assert!(ok, "{err}");
    assert!(!err.contains("building the Python environment"), "{err}");
    // A build that fails says which step and why.
    let other = dir.path().join("failing-envs");
    let (ok, _, err) = rank_exec_plain(
        &[
            "--env-dir",
            path_str(&other),
            "--setup",
            "echo installing; exit 3",
        ],
        &cache,
        &tmp,
    );
    assert!(!ok, "{err}");
    let failed = err
        .lines()
        .find(|l| l.contains("could not build the Python environment of example/textkit 0.1"))
        .unwrap_or_else(|| panic!("no failure line in {err}"));
    assert!(
        failed.contains("step `install`") && failed.contains("exited with status 3"),
        "{failed}"
    );
}
