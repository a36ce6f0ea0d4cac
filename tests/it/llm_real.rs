//! Every LLM feature against a real model server: llama.cpp's `llama-server` with Gemma 3 270M,
//! which `examples/local-model.sh` builds and starts (`.ci/run` does). The tests read its
//! address from `DEI_LLAMA_URL` (`http://127.0.0.1:8080/v1`) and say SKIPPED without it.
//!
//! A 270M base model is a weak judge: these tests check what dei does with a real server (every
//! reviewable candidate scored, replies that parse, calls that finish), never what it picks.

use crate::support::common::{
    self, dei_command, example_repo, path_str, root, skip, stderr, stdout,
};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

const ISSUE: &str = "example__textkit-1";
const MODEL: &str = "llamacpp:gemma-3-270m";

/// The server's base URL, or `None` (and a SKIPPED line) when none was started.
fn server() -> Option<String> {
    match std::env::var("DEI_LLAMA_URL") {
        Ok(u) if !u.trim().is_empty() => Some(u),
        _ => {
            skip("no real model server: DEI_LLAMA_URL is unset (`bash examples/local-model.sh` starts llama-server with Gemma 3 270M and prints it; .ci/run does)");
            None
        }
    }
}

/// `dei ARGS --llm … --base-url URL` with a cache and a ledger in `dir`.
fn run(url: &str, dir: &Path, args: &[&str]) -> Output {
    run_with(url, dir, args, true)
}

/// [`run`], naming the model with `--llm` only when `llm` (else `ARGS` name it).
fn run_with(url: &str, dir: &Path, args: &[&str], llm: bool) -> Output {
    let model: &[&str] = if llm { &["--llm", MODEL] } else { &[] };
    dei_command()
        .args(args)
        .args(model)
        .args(["--base-url", url])
        .args(["--cache", path_str(&dir.join("cache"))])
        .args(["--ledger", path_str(&dir.join("ledger.jsonl"))])
        .args(["--timeout", "600"])
        .env("DEI_CACHE_DIR", dir.join("exec-cache"))
        .output()
        .expect("dei runs")
}

fn rank_args(extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "rank",
        "examples/candidates",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        ISSUE,
        "--repo",
        path_str(&example_repo()),
        "--json",
        "-",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn ledger(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a ledger line is JSON"))
        .collect()
}

/// Every reviewable candidate has a score 1–10 and nothing is unscored; every call's reply was
/// usable at its first ask.
fn assert_all_reviewed(what: &str, out: &Output, dir: &Path) {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    let v: Value = serde_json::from_str(&stdout(out)).expect("JSON");
    let ranked = v["ranked"].as_array().unwrap();
    let reviewable: Vec<&Value> = ranked
        .iter()
        .filter(|r| {
            let a = r["applies"].as_str().unwrap_or("");
            a == "clean" || a == "fuzzy"
        })
        .collect();
    assert!(reviewable.len() >= 4, "{what}: {ranked:?}");
    for r in &reviewable {
        let s = r["review"]["score"]["value"].as_f64().unwrap();
        assert!(
            r["review"]["unscored"].is_null() && (1.0..=10.0).contains(&s),
            "{what}: {r}"
        );
    }
    let lines = ledger(dir);
    assert!(!lines.is_empty(), "{what}: no ledger");
    // Every reply was usable at its ask (a request that failed in transport and was retried
    // has its own `error:` line, and its candidate was scored all the same).
    let bad: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            l["result"] != "ok" && !l["result"].as_str().unwrap_or("").starts_with("error:")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: replies that were not usable: {bad:?}"
    );
    let replies: Vec<&Value> = lines.iter().filter(|l| l["result"] == "ok").collect();
    let untimed: Vec<&&Value> = replies
        .iter()
        .filter(|l| l["server_ms"].as_u64().is_none() || l["first_token_ms"].as_u64().is_none())
        .collect();
    assert!(
        untimed.is_empty(),
        "{what}: llama.cpp's stream gives its own time and the first token's on each reply: {untimed:?}"
    );
}

#[test]
fn every_selector_reviews_every_candidate_with_a_real_model() {
    let Some(url) = server() else { return };
    for (what, extra) in [
        ("pointwise", vec![]),
        ("listwise", vec!["--selector", "listwise"]),
        ("pairwise", vec!["--selector", "pairwise"]),
        ("pointwise --samples 3", vec!["--samples", "3"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let args = rank_args(&extra);
        let out = run(
            &url,
            dir.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert_all_reviewed(what, &out, dir.path());
        // The rerun is answered from the cache: nothing is asked again.
        let again = run(
            &url,
            dir.path(),
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert!(again.status.success(), "{what}: {}", stderr(&again));
        assert!(
            stderr(&again).contains("0 calls answered by the server"),
            "{what}: {}",
            stderr(&again)
        );
    }
}

#[test]
fn locate_with_a_real_model_names_files_it_was_shown() {
    let Some(url) = server() else { return };
    let dir = tempfile::tempdir().unwrap();
    let args = common::example_issue_args(&["locate"], &[]);
    let out = run(
        &url,
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = ledger(dir.path());
    assert_eq!(lines.len(), 2, "files, then definitions: {lines:?}");
    assert!(lines.iter().all(|l| l["result"] == "ok"), "{lines:?}");
    assert!(
        !stderr(&out).contains("the reply named none"),
        "a shaped reply names only paths it was shown: {}",
        stderr(&out)
    );
}

/// Each strategy through the real server: a diff, or no candidate said with a failing exit;
/// every call finishes with a usable reply, and every reply is the JSON of its step's schema
/// (files, targets, rewrites, chain commands, edits) read as the text it stands for.
#[test]
fn generate_with_a_real_model_writes_diffs_or_says_why_per_strategy() {
    let Some(url) = server() else { return };
    for strategy in ["hierarchical", "search-replace", "chain"] {
        let dir = tempfile::tempdir().unwrap();
        let gen = dir.path().join("gen.jsonl");
        let out = run(
            &url,
            dir.path(),
            &[
                "generate",
                "--tasks",
                "examples/tasks.jsonl",
                "--issue",
                ISSUE,
                "--repo",
                path_str(&example_repo()),
                "--out",
                path_str(&gen),
                "--strategies",
                strategy,
                "--max-tokens",
                "1024",
                "--samples",
                "1",
                "--temperatures",
                "0",
            ],
        );
        let text = std::fs::read_to_string(&gen).unwrap_or_default();
        for line in text.lines() {
            let p: Value = serde_json::from_str(line).unwrap();
            let patch = p["model_patch"].as_str().unwrap();
            assert!(
                patch.starts_with("diff --git ") || patch.starts_with("--- "),
                "{strategy}: not a diff: {patch}"
            );
        }
        if text.trim().is_empty() {
            // Nothing usable: said, and the exit code says so.
            assert!(!out.status.success(), "{strategy}: {}", stderr(&out));
            assert!(
                stderr(&out).contains("no candidate was written"),
                "{strategy}: {}",
                stderr(&out)
            );
        } else {
            assert!(out.status.success(), "{strategy}: {}", stderr(&out));
        }
        let lines = ledger(dir.path());
        assert!(
            lines.iter().all(|l| l["result"].as_str().is_some()),
            "{strategy}: {lines:?}"
        );
        // Every call finished with a reply that was usable at its ask: none cut, none empty,
        // and the server took every schema.
        let unusable: Vec<&Value> = lines
            .iter()
            .filter(|l| {
                let r = l["result"].as_str().unwrap_or("");
                r.starts_with("cut:") || r.starts_with("unparseable:") || r.contains("schema")
            })
            .collect();
        assert!(unusable.is_empty(), "{strategy}: {unusable:?}");
        assert!(
            !stderr(&out).contains("refuses the reply schema"),
            "{strategy}: {}",
            stderr(&out)
        );
        let ok = lines.iter().filter(|l| l["result"] == "ok").count();
        // Every reply kept is the JSON of its step's shape.
        let replies = cached_replies(&dir.path().join("cache"));
        assert_eq!(replies.len(), ok, "{strategy}: one usable reply per call");
        for r in &replies {
            assert_shaped(strategy, r);
        }
        let keys: Vec<&str> = replies
            .iter()
            .filter_map(|r| r.as_object()?.keys().next().map(String::as_str))
            .collect();
        match strategy {
            // Files, then targets (each a place shown, so one always resolves: no "named no
            // definition"), then at least one rewrite.
            "hierarchical" => {
                assert!(ok >= 3, "{strategy}: {lines:?}");
                for k in ["files", "targets", "rewrites"] {
                    assert!(keys.contains(&k), "{strategy}: no {k} reply: {replies:?}");
                }
                assert!(
                    !stderr(&out).contains("named no definition"),
                    "{strategy}: {}",
                    stderr(&out)
                );
            }
            // At least one step, then the edits.
            "chain" => {
                assert!(ok >= 2, "{strategy}: {lines:?}");
                for k in ["commands", "edits"] {
                    assert!(keys.contains(&k), "{strategy}: no {k} reply: {replies:?}");
                }
            }
            _ => assert!(keys.contains(&"edits"), "{strategy}: {replies:?}"),
        }
    }
}

/// The reply text of every entry in a response cache folder, as JSON (a reply that is not JSON
/// fails the test).
fn cached_replies(cache: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(cache).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if f.path().extension().is_none_or(|x| x != "json") {
                continue;
            }
            let entry: Value =
                serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
            let text = entry["text"].as_str().unwrap_or_default();
            let v: Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("a reply that is not JSON ({e}): {text:?}"));
            out.push(v);
        }
    }
    out
}

/// A generator reply held to its schema: one key naming a non-empty list of the step's items.
fn assert_shaped(strategy: &str, v: &Value) {
    let obj = v.as_object().unwrap_or_else(|| panic!("{strategy}: {v}"));
    assert_eq!(obj.len(), 1, "{strategy}: {v}");
    let (key, items) = obj.iter().next().unwrap();
    let items = items
        .as_array()
        .unwrap_or_else(|| panic!("{strategy}: {v}"));
    assert!(!items.is_empty(), "{strategy}: {v}");
    let fields: &[&str] = match key.as_str() {
        "files" | "targets" | "commands" => &[],
        "rewrites" => &["target", "code"],
        "edits" => &["path", "search", "replace"],
        other => panic!("{strategy}: a reply of no generator shape ({other}): {v}"),
    };
    for it in items {
        if fields.is_empty() {
            assert!(it.is_string(), "{strategy}: {v}");
        }
        for f in fields {
            assert!(it[f].is_string(), "{strategy}: {f} in {v}");
        }
    }
}

#[test]
fn a_real_model_writes_the_reproduction_test_under_exec() {
    let Some(url) = server() else { return };
    if !crate::support::exec::python3_with_venv() {
        skip("no python3 with venv to run the candidates");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let minitest = root().join("examples/minitest.py");
    let test_cmd = format!("python {}", path_str(&minitest));
    let model = format!("--exec-llm-repro={MODEL}");
    let args = rank_args(&[
        "--exec",
        "--python",
        "python3",
        "--test-cmd",
        &test_cmd,
        "--exec-timeout",
        "20",
        &model,
    ]);
    // The model is named by --exec-llm-repro= alone: the offline committee ranks.
    let out = run_with(
        &url,
        dir.path(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        false,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = ledger(dir.path());
    assert_eq!(lines.len(), 1, "one test written: {lines:?}");
    assert_eq!(lines[0]["result"], "ok", "{lines:?}");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["ranked"].as_array().unwrap().len() >= 5);
}
