//! `dei rank` with an LLM committee, end to end against the mock: dry run, a kill-and-resume
//! of a running child process, and keys that never leak.

use crate::support::common;
use crate::support::llm_mock;

use common::*;
use llm_mock::{Fault, Mock};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn dei_cmd(args: &[String], key: Option<&str>) -> Command {
    let mut c = dei_command();
    c.args(args);
    if let Some(k) = key {
        c.env("MOCK_KEY", k);
    }
    c
}

#[test]
fn dry_run_prints_prompts_and_counts_with_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // Nothing listens on port 9: any call would fail.
    let out = dei_cmd(
        &example_rank_args(&[
            "--llm",
            "openai-compatible:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--samples",
            "2",
            "--dry-run",
            "--cache",
            path_str(&cache),
        ]),
        None,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // 6 candidates: the empty one, the one that does not apply and the tests-only one are
    // scored by rule, 3 are sent twice.
    assert_eq!(text.matches("===== call ").count(), 6, "{text}");
    assert!(
        text.contains("dry run: 6 calls planned (0 already cached, 6 to send)"),
        "{text}"
    );
    assert!(
        text.contains("word_count"),
        "the issue text is in the prompt"
    );
    assert!(text.contains("Before (base commit):") && text.contains("After the patch:"));
    assert!(!stderr(&out).contains("offline committee"));
}

#[test]
fn review_once_sends_a_normalized_duplicate_once() {
    let dir = tempfile::tempdir().unwrap();
    // careful-agent's patch again under another agent, with its whitespace changed.
    let dup = dir.path().join("candidates/copy-agent");
    std::fs::create_dir_all(&dup).unwrap();
    let patch = std::fs::read_to_string(
        root().join("examples/candidates/careful-agent/example__textkit-1.diff"),
    )
    .unwrap();
    let spaced: String = patch
        .lines()
        .map(|l| match l.strip_prefix('+') {
            Some(rest) if !l.starts_with("+++") => format!("+{rest}   "),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(spaced.trim_end(), patch.trim_end());
    std::fs::write(dup.join("example__textkit-1.diff"), spaced + "\n").unwrap();
    let cands = dir.path().join("candidates");
    let calls = |once: bool| -> String {
        let mut extra = vec![
            path_str(&cands),
            "--llm",
            "openai-compatible:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--dry-run",
            "--no-cache",
        ];
        if once {
            extra.push("--review-once");
        }
        let out = dei_cmd(&example_rank_args(&extra), None).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let all = calls(false);
    assert!(all.contains("dry run: 4 calls planned"), "{all}");
    let once = calls(true);
    assert!(once.contains("dry run: 3 calls planned"), "{once}");
    assert!(
        once.contains("shares the review of careful-agent/example__textkit-1 (the same change after normalization)"),
        "{once}"
    );
}

#[test]
fn killed_run_resumes_and_redoes_only_what_is_missing() {
    let mock = Mock::start(Duration::from_millis(150));
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ledger = dir.path().join("ledger.jsonl");
    let args = example_rank_args(&[
        "--llm",
        "openai-compatible:m",
        "--base-url",
        &mock.openai_base(),
        "--samples",
        "4",
        "--concurrency",
        "3",
        "--ledger",
        path_str(&ledger),
        "--cache",
        path_str(&cache),
        "--json",
        "-",
    ]);
    let total = 3 * 4; // 3 reviewable candidates × 4 samples
                       // Let 7 replies through, then hold the rest and kill the run.
    mock.gate.store(7, std::sync::atomic::Ordering::SeqCst);
    let mut child = dei_cmd(&args, None)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while mock.finished().len() < 7 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "mock never finished 7 replies"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give the client time to store the 7 finished replies (nothing else can finish).
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    let first: Vec<String> = mock.finished();
    assert_eq!(first.len(), 7);
    // The ledger was written as calls ended: the killed run left a line for each reply it got.
    let lines = std::fs::read_to_string(&ledger).unwrap_or_default();
    assert_eq!(lines.lines().count(), 7, "{lines}");
    let seen_before = mock.seen().len();
    assert!(seen_before > 7, "the run was cut with calls in flight");

    // Wait until the mock has seen every held connection close, then open the gate.
    let t = Instant::now();
    while mock.held() > 0 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "held calls never closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    mock.gate
        .store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
    let out = dei_cmd(&args, None).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let second: Vec<String> = mock.finished()[7..].to_vec();
    // No finished call is repeated: the calls of both runs add up to exactly the planned ones.
    assert_eq!(
        first.len() + second.len(),
        total,
        "resume redid {} calls",
        first.len() + second.len() - total
    );
    let mut all = first.clone();
    all.extend(second);
    let distinct: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(
        distinct.len(),
        total,
        "every (prompt, sample) asked exactly once"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["committee"]
        .as_str()
        .unwrap()
        .starts_with("llm-pointwise"));
    let ranked = v["ranked"].as_array().unwrap();
    assert_eq!(ranked.len(), 6);
    assert!(
        ranked.iter().all(|r| r["review"]["unscored"].is_null()),
        "{ranked:?}"
    );
    assert!(
        stderr(&out)
            .contains("7 from the cache (7000 + 1400 tokens spent on an earlier run), 0 failed"),
        "{}",
        stderr(&out)
    );

    // A third run costs nothing.
    let n = mock.calls();
    let out = dei_cmd(&args, None).output().unwrap();
    assert!(out.status.success());
    assert_eq!(mock.calls(), n);
}

#[test]
fn keys_never_reach_output_cache_or_errors() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ledger = dir.path().join("calls.jsonl");
    mock.push(Fault::Unauthorized);
    let args = example_rank_args(&[
        "--llm",
        "anthropic:claude-test",
        "--base-url",
        &mock.anthropic_base(),
        "--api-key-env",
        "MOCK_KEY",
        "--concurrency",
        "1",
        "--cache",
        path_str(&cache),
        "--ledger",
        path_str(&ledger),
        "--json",
        "-",
    ]);
    let key = "sk-ant-VERY-SECRET-0042";
    let out = dei_cmd(&args, Some(key)).output().unwrap();
    // The 401 leaves one candidate unreviewed: the issue is not ranked, and says why.
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("not reviewed"), "{}", stderr(&out));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("HTTP 401") && all.contains("[redacted]"),
        "{all}"
    );
    assert!(!all.contains("VERY-SECRET"));
    let mut files = vec![ledger.clone()];
    for d in std::fs::read_dir(&cache).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            files.push(f.unwrap().path());
        }
    }
    assert!(files.len() > 2);
    for f in files {
        assert!(
            !std::fs::read_to_string(&f).unwrap().contains("VERY-SECRET"),
            "{}",
            f.display()
        );
    }
    assert!(mock
        .seen()
        .iter()
        .all(|s| s.anthropic_version && s.authorized));
    // The table marks the unscored candidate (the failed call was not cached: it is asked again).
    mock.push(Fault::Unauthorized);
    let table = dei_cmd(&args[..args.len() - 2], Some(key))
        .output()
        .unwrap();
    assert!(stdout(&table).contains("unscored:"), "{}", stdout(&table));

    // No key in the environment: a clear error naming the variable.
    let out = dei_cmd(&args, None).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("MOCK_KEY"), "{}", stderr(&out));
}

/// The long flags a command's `--help` lists.
fn help_flags(cmd: &str) -> Vec<String> {
    let o = dei(&[cmd, "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| {
            let t = l.trim_start();
            // `-h, --help`: the long form.
            let t = match t.split_once(", ") {
                Some((short, long)) if short.len() == 2 && !short.starts_with("--") => long,
                _ => t,
            };
            t.starts_with("--")
                .then(|| t.split_whitespace().next().unwrap().to_string())
        })
        .collect()
}

/// Each command shows exactly the LLM flags it uses (none hidden), under their old names.
#[test]
fn each_command_shows_exactly_the_llm_flags_it_uses() {
    let shared = [
        "--llm",
        "--base-url",
        "--api-key-env",
        "--max-tokens",
        "--concurrency",
        "--rpm",
        "--tpm",
        "--retries",
        "--parse-retries",
        "--backoff-ms",
        "--timeout",
        "--cache",
        "--no-cache",
        "--max-cost",
        "--price-in",
        "--price-out",
        "--ledger",
        "--dry-run",
        "--prompt-dir",
    ];
    let review = [
        "--selector",
        "--samples",
        "--temperature",
        "--output-format",
        "--rubric",
        "--llm-locate",
        "--review-once",
    ];
    for (cmd, has, lacks) in [
        ("rank", &review[..], &[][..]),
        (
            "generate",
            &["--samples", "--temperatures"][..],
            &review[..2],
        ),
        ("locate", &[][..], &review[..]),
    ] {
        let flags = help_flags(cmd);
        for f in shared.iter().chain(has) {
            assert!(
                flags.iter().any(|x| x == f),
                "dei {cmd} --help lacks {f}: {flags:?}"
            );
        }
        for f in lacks.iter().filter(|f| !has.contains(f)) {
            assert!(
                !flags.iter().any(|x| x == f),
                "dei {cmd} --help shows {f}, which it does not use"
            );
        }
        let o = dei(&[cmd, "--rubric", "x"]);
        if cmd != "rank" {
            assert!(
                stderr(&o).contains("unexpected argument '--rubric'"),
                "dei {cmd} refuses a flag it does not use: {}",
                stderr(&o)
            );
        }
    }
    let generate = help_flags("generate");
    for f in [
        "--temperature",
        "--output-format",
        "--rubric",
        "--llm-locate",
        "--selector",
    ] {
        assert!(!generate.iter().any(|x| x == f), "generate shows {f}");
    }
}
