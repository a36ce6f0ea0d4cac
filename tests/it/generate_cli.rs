//! `dei generate` end to end against the mock model server (no network, no key): each strategy
//! writes a patch that applies cleanly and parses, a rerun resumes without duplicates and
//! from the cache, `dei rank` reads the output beside examples/candidates, and `--test-cmd`
//! drops a breaking candidate.

use crate::support::common;
use crate::support::llm_mock;

use common::*;
use dei::generate::Prediction;
use dei::model::repo::Snapshot;
use dei::model::{Applies, Candidate};
use dei::patch::{rebuild, Files, Mode};
use llm_mock::{Fault, Mock};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const BASE: &str = "f63f25d43ac69806ecd91a0971c38da78fc72775";
const ISSUE: &str = "example__textkit-1";

fn generate(mock: &Mock, dir: &Path, extra: &[&str]) -> Output {
    let repo = example_repo();
    let out = dir.join("gen.jsonl");
    let cache = dir.join("cache");
    let mut args: Vec<&str> = vec![
        "generate",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        ISSUE,
        "--repo",
        path_str(&repo),
        "--out",
        path_str(&out),
        "--cache",
        path_str(&cache),
        "--llm",
        "openai-compatible:mock-coder",
        "--backoff-ms",
        "1",
    ];
    let base = mock.openai_base();
    args.extend(["--base-url", base.as_str()]);
    args.extend(extra);
    dei(&args)
}

fn read_preds(path: &Path) -> Vec<Prediction> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Rebuild a patch strictly on the base commit; it must apply cleanly and leave words.py parsing.
fn words_after(p: &Prediction) -> String {
    let snap = Snapshot::open(&example_repo(), BASE).unwrap();
    let cand = Candidate {
        instance_id: p.instance_id.clone(),
        agent: p.model_name_or_path.clone(),
        patch: p.model_patch.clone(),
        resolved: None,
        origin: Default::default(),
    };
    let mut base = Files::new();
    for path in dei::patch::paths_needed(&cand) {
        base.insert(path.clone(), snap.read(&path).unwrap());
    }
    let view = rebuild(&cand, &base, Mode::Strict);
    assert_eq!(
        view.applies,
        Applies::Clean,
        "{}: {}\n{view:?}",
        p.model_name_or_path,
        p.model_patch
    );
    let f = view
        .files
        .iter()
        .find(|f| f.path == "textkit/words.py")
        .unwrap_or_else(|| panic!("{} edits words.py", p.model_name_or_path));
    let after = f.after.clone().unwrap();
    assert_eq!(
        dei::syntax::python::PyIndex::new(&after).error_count(),
        0,
        "{after}"
    );
    assert!(after.contains("def capitalize_words"), "the rest stays");
    after
}

const DEF_A: &str = "Here is the fix.\n\n### textkit/words.py::word_count\n```python\ndef word_count(text):\n    \"\"\"Return the number of words in ``text``.\"\"\"\n    return len(text.split())\n```\n";
const DEF_B: &str = "### textkit/words.py::word_count\n```python\ndef word_count(text):\n    \"\"\"Return the number of words in ``text``.\"\"\"\n    return sum(1 for _ in text.split())\n```\n";
const SR: &str = "The split on a single space is the bug.\n\ntextkit/words.py\n<<<<<<< SEARCH\n    if not text:\n        return 0\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n";
// Indentation dropped by the model, as often happens: the matcher re-indents.
const CHAIN_EDIT: &str = "textkit/words.py\n```python\n<<<<<<< SEARCH\nif not text:\n    return 0\nreturn len(text.split(\" \"))\n=======\nwords = text.split()\nreturn len(words)\n>>>>>>> REPLACE\n```\n";

fn script_all(mock: &Mock) {
    // Hierarchical: files, then targets, then one rewrite per sample.
    mock.script_always("List at most", "- `textkit/words.py`\n");
    mock.script_always("Name the classes", "textkit/words.py::word_count\n");
    mock.script("Rewrite every target", DEF_A);
    mock.script("Rewrite every target", DEF_B);
    // Search/replace: the same edit at both temperatures (the second is a duplicate, dropped).
    mock.script_always("Relevant code:", SR);
    // Chain of context: retrieve, drop a search hit, analyse, then edit.
    mock.script_always(
        "Step 1 of",
        "RETRIEVE function word_count\nRETRIEVE file textkit/cli.py\n",
    );
    mock.script_always("Step 2 of", "DROP 2\nANALYSIS: word_count splits on one space character, so runs of whitespace make empty words; str.split() with no argument splits on any whitespace run and returns [] for blank text.");
    mock.script_always("Root-cause analysis:", CHAIN_EDIT);
}

#[test]
fn each_strategy_writes_a_clean_patch_resumes_and_ranks() {
    let mock = Mock::start(Duration::ZERO);
    script_all(&mock);
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("gen.jsonl");
    let o = generate(
        &mock,
        dir.path(),
        &["--samples", "2", "--temperatures", "0,0.8"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let preds = read_preds(&out_path);
    let mut agents: Vec<&str> = preds
        .iter()
        .map(|p| p.model_name_or_path.as_str())
        .collect();
    agents.sort();
    assert_eq!(
        agents,
        [
            "dei-gen-chain-of-context",
            "dei-gen-hierarchical",
            "dei-gen-hierarchical-k2",
            "dei-gen-search-replace"
        ],
        "{}",
        stderr(&o)
    );
    let by = |a: &str| preds.iter().find(|p| p.model_name_or_path == a).unwrap();
    assert!(preds.iter().all(|p| p.instance_id == ISSUE));
    let h1 = words_after(by("dei-gen-hierarchical"));
    assert!(
        h1.contains("    return len(text.split())\n") && !h1.contains("if not text"),
        "{h1}"
    );
    let h2 = words_after(by("dei-gen-hierarchical-k2"));
    assert!(
        h2.contains("    return sum(1 for _ in text.split())\n"),
        "{h2}"
    );
    let sr = words_after(by("dei-gen-search-replace"));
    assert!(
        sr.contains("\"\"\"\n    return len(text.split())\n\n"),
        "{sr}"
    );
    let ch = words_after(by("dei-gen-chain-of-context"));
    assert!(
        ch.contains("    words = text.split()\n    return len(words)\n"),
        "{ch}"
    );

    // The calls: the rewrite went out at both temperatures, and the chain's retrieval reached
    // the model in the next step.
    let seen = mock.seen();
    let rewrites: Vec<serde_json::Value> = seen
        .iter()
        .filter(|s| llm_mock::user_prompt(&s.body).contains("Rewrite every target"))
        .map(|s| serde_json::from_str(&s.body).unwrap())
        .collect();
    let temps: Vec<f64> = rewrites
        .iter()
        .map(|v| v["temperature"].as_f64().unwrap())
        .collect();
    assert_eq!(temps, [0.0, 0.8]);
    let step2 = seen
        .iter()
        .map(|s| llm_mock::user_prompt(&s.body))
        .find(|p| p.contains("Step 2 of"))
        .expect("chain took a second step");
    assert!(
        step2.contains("function textkit/words.py::word_count")
            && step2.contains("file textkit/cli.py"),
        "{step2}"
    );
    let final_chain = seen
        .iter()
        .map(|s| llm_mock::user_prompt(&s.body))
        .find(|p| p.contains("Root-cause analysis:"))
        .unwrap();
    assert!(
        final_chain.contains("str.split() with no argument"),
        "{final_chain}"
    );

    // A rerun finds every (issue, strategy) done: no call, nothing appended.
    let calls = mock.calls();
    let before = std::fs::read_to_string(&out_path).unwrap();
    let o = generate(
        &mock,
        dir.path(),
        &["--samples", "2", "--temperatures", "0,0.8"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out_path).unwrap(), before);
    assert_eq!(mock.calls(), calls);
    assert!(
        stderr(&o).contains("3 (issue, strategy) pair(s) already"),
        "{}",
        stderr(&o)
    );

    // Lose the hierarchical lines (and leave a torn half line, as a killed run would): the
    // rerun redoes that strategy only, every call from the cache, without duplicates.
    let kept: String = before
        .lines()
        .filter(|l| !l.contains("dei-gen-hierarchical"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        &out_path,
        format!("{kept}{{\"instance_id\": \"{ISSUE}\", \"mo"),
    )
    .unwrap();
    let o = generate(
        &mock,
        dir.path(),
        &["--samples", "2", "--temperatures", "0,0.8"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("torn last line"), "{}", stderr(&o));
    assert_eq!(mock.calls(), calls, "answered from the cache");
    let again = read_preds(&out_path);
    let mut agents2: Vec<&str> = again
        .iter()
        .map(|p| p.model_name_or_path.as_str())
        .collect();
    agents2.sort();
    assert_eq!(agents2, agents);
    assert_eq!(
        again
            .iter()
            .find(|p| p.model_name_or_path == "dei-gen-hierarchical")
            .unwrap(),
        by("dei-gen-hierarchical")
    );

    // `dei rank` reads the generated file beside the example agents.
    let repo = example_repo();
    let r = dei(&[
        "rank",
        "examples/candidates",
        path_str(&out_path),
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        ISSUE,
        "--repo",
        path_str(&repo),
        "--json",
        "-",
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    let ranked = v["ranked"].as_array().unwrap();
    for a in &agents {
        let row = ranked
            .iter()
            .find(|row| row["agent"] == *a)
            .unwrap_or_else(|| panic!("{a} ranked: {v}"));
        assert_eq!(row["applies"], "clean", "{row}");
    }
    assert!(ranked.iter().any(|row| row["agent"] == "careful-agent"));
}

/// A test command for the example repo: pytest when importable, else plain python.
fn test_command() -> Option<String> {
    let py = Command::new("python3").arg("--version").output().ok()?;
    if !py.status.success() {
        return None;
    }
    let has_pytest = Command::new("python3")
        .args(["-c", "import pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    Some(if has_pytest {
        "python3 -m pytest -q -p no:cacheprovider tests".to_string()
    } else {
        "python3 -c \"import sys; sys.path[:0] = ['.', 'tests']; import test_words as t; [getattr(t, n)() for n in dir(t) if n.startswith('test_')]; print('ok')\"".to_string()
    })
}

#[test]
fn test_cmd_drops_a_breaking_candidate_and_retries_with_its_output() {
    let Some(cmd) = test_command() else {
        skip("python3 is not available to run the example's tests");
        return;
    };
    let mock = Mock::start(Duration::ZERO);
    // The retry carries the failing test output; answer it with a good edit.
    mock.script("A previous fix made the project's tests fail", SR);
    mock.script("Relevant code:", "textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split()) + 1\n>>>>>>> REPLACE\n");
    let dir = tempfile::tempdir().unwrap();
    let o = generate(
        &mock,
        dir.path(),
        &[
            "--strategies",
            "search-replace",
            "--samples",
            "1",
            "--test-cmd",
            &cmd,
            "--test-cmd-timeout",
            "120",
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("dei-gen-search-replace: dropped, it breaks the test command"),
        "{err}"
    );
    assert!(err.contains("retrying once with the test output"), "{err}");
    let preds = read_preds(&dir.path().join("gen.jsonl"));
    assert_eq!(preds.len(), 1, "{preds:?}");
    assert!(
        !preds[0].model_patch.contains("+ 1"),
        "{}",
        preds[0].model_patch
    );
    let after = words_after(&preds[0]);
    assert!(after.contains("    return len(text.split())\n"), "{after}");
    let retry = mock
        .seen()
        .iter()
        .map(|s| llm_mock::user_prompt(&s.body))
        .find(|p| p.contains("A previous fix made the project's tests fail"))
        .expect("retried with feedback");
    assert!(
        retry.contains("test_word_count"),
        "the failure output is shown: {retry}"
    );
    assert_eq!(mock.matched().len(), 2);
}

#[test]
fn no_model_fails_clearly_and_dry_run_calls_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.jsonl");
    let repo = example_repo();
    let base = [
        "generate",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        ISSUE,
        "--repo",
        path_str(&repo),
        "--out",
        path_str(&out),
    ];
    let o = dei(&base);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("needs a language model") && err.contains("--llm openai:"),
        "{err}"
    );
    // Nothing listens on port 9: a call would fail.
    let mut args = base.to_vec();
    let cache = dir.path().join("cache");
    args.extend([
        "--llm",
        "openai-compatible:m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--dry-run",
        "--cache",
        path_str(&cache),
    ]);
    let o = dei(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("List at most 3 files"), "{text}");
    assert!(
        text.contains("<<<<<<< SEARCH"),
        "the search/replace prompt: {text}"
    );
    assert!(
        text.contains("Reply with command lines only"),
        "the chain prompt: {text}"
    );
    assert!(!out.exists(), "a dry run writes nothing");
    let bad = dei(&[
        &base[..],
        &[
            "--llm",
            "openai-compatible:m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--strategies",
            "magic",
        ],
    ]
    .concat());
    assert!(
        stderr(&bad).contains("unknown strategy `magic`"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn engine_model_samples_differ_and_come_back_from_the_cache() {
    use dei::llm::config::LlmOptions;
    use dei::llm::model::{EngineModel, Model};
    use std::sync::Arc;
    let mock = Mock::start(Duration::ZERO);
    mock.script("ask", "first");
    mock.script("ask", "second");
    mock.script("ask", "hot");
    let dir = tempfile::tempdir().unwrap();
    let args = LlmOptions {
        llm: Some("openai-compatible:m".into()),
        base_url: Some(mock.openai_base()),
        selector: "pointwise".into(),
        samples: 1,
        max_tokens: 100,
        concurrency: 2,
        retries: 1,
        timeout: 10.0,
        cache: dir.path().join("cache"),
        ..Default::default()
    };
    let cfg = args.resolve(&|_| None).unwrap().unwrap();
    let cache = dei::llm::cache::Cache::open(&dir.path().join("cache")).unwrap();
    let engine =
        Arc::new(dei::llm::runner::Engine::new(cfg.provider, cfg.settings, Some(cache)).unwrap());
    let m = EngineModel::new(Arc::clone(&engine), "t");
    assert_eq!(m.complete("s", "ask", 0.0).unwrap(), "first");
    assert_eq!(
        m.complete("s", "ask", 0.0).unwrap(),
        "second",
        "a new sample"
    );
    assert_eq!(
        m.complete("s", "ask", 0.7).unwrap(),
        "hot",
        "a new temperature"
    );
    assert_eq!(mock.calls(), 3);
    let seeds: Vec<i64> = mock
        .seen()
        .iter()
        .map(|s| {
            serde_json::from_str::<serde_json::Value>(&s.body).unwrap()["seed"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(seeds, [0, 1, 0]);
    assert_eq!(m.usage().calls, 3);
    // The same conversation again: every answer from the persistent cache, in order.
    let again = EngineModel::new(Arc::clone(&engine), "t");
    assert_eq!(again.complete("s", "ask", 0.0).unwrap(), "first");
    assert_eq!(again.complete("s", "ask", 0.0).unwrap(), "second");
    assert_eq!(again.complete("s", "ask", 0.7).unwrap(), "hot");
    assert_eq!(mock.calls(), 3);
    assert_eq!(again.usage().cached, 3);
    // An empty reply is asked again (parse retries), then reported.
    mock.script_always("blank", " ");
    let e = again.complete("s", "blank", 0.0).unwrap_err().to_string();
    assert!(e.contains("empty reply"), "{e}");
}

#[test]
fn a_run_whose_every_call_fails_writes_nothing_and_exits_non_zero() {
    let mock = Mock::start(Duration::ZERO);
    // The server refuses every call (401 is not retried): no strategy gets a reply.
    for _ in 0..40 {
        mock.push(Fault::Unauthorized);
    }
    let dir = tempfile::tempdir().unwrap();
    let o = generate(
        &mock,
        dir.path(),
        &["--samples", "1", "--temperatures", "0"],
    );
    assert!(!o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no candidate was written for the 1 issue(s) worked on"),
        "{}",
        stderr(&o)
    );
    let out = dir.path().join("gen.jsonl");
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(text.trim().is_empty(), "{text}");
}

/// The `===== call i/N` headers and the one closing `calls planned` line of a dry run.
fn dry_run_plan(text: &str) -> (Vec<String>, Vec<String>) {
    let heads = text
        .lines()
        .filter(|l| l.starts_with("===== call "))
        .map(str::to_string)
        .collect();
    let planned = text
        .lines()
        .filter(|l| l.contains("calls planned"))
        .map(str::to_string)
        .collect();
    (heads, planned)
}

/// A dry run numbers its prompts across the whole run and counts them once; where a strategy
/// waits on a reply it does not have (the hierarchical strategy after its file choice, the
/// chain after its first step), the count and the cost are lower bounds and say so. With every
/// reply in the cache the strategies run to their end and the count is exact.
#[test]
fn a_dry_run_counts_the_whole_run_and_says_when_it_is_a_lower_bound() {
    let mock = Mock::start(Duration::ZERO);
    script_all(&mock);
    let dir = tempfile::tempdir().unwrap();
    let price = ["--price-in", "2.5", "--price-out", "10"];
    let o = generate(&mock, dir.path(), &[&["--dry-run"][..], &price].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mock.calls(), 0, "a dry run calls nothing");
    let text = stdout(&o);
    let (heads, planned) = dry_run_plan(&text);
    // One hierarchical prompt (the file choice), one per search/replace and chain sample.
    assert_eq!(heads.len(), 7, "{text}");
    for (i, h) in heads.iter().enumerate() {
        assert!(h.starts_with(&format!("===== call {}/7: ", i + 1)), "{h}");
    }
    assert_eq!(planned.len(), 1, "one count for the run: {text}");
    let line = &planned[0];
    assert!(
        line.contains("at least 7 calls planned (0 already cached, 7 to send)"),
        "{line}"
    );
    assert!(line.contains("cost at least about $"), "{line}");
    assert!(!line.contains("cost up to about $"), "{line}");

    // A real run fills the cache; a dry run after it follows every strategy to its end.
    let o = generate(&mock, dir.path(), &price);
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = mock.calls();
    // Without its output a rerun does every strategy again.
    std::fs::remove_file(dir.path().join("gen.jsonl")).unwrap();
    let o = generate(&mock, dir.path(), &[&["--dry-run"][..], &price].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mock.calls(), sent, "a dry run calls nothing");
    let text = stdout(&o);
    let (heads, planned) = dry_run_plan(&text);
    let n = heads.len();
    assert!(n > 7, "the later steps are shown: {text}");
    for (i, h) in heads.iter().enumerate() {
        assert!(h.starts_with(&format!("===== call {}/{n}: ", i + 1)), "{h}");
        assert!(h.ends_with("(cached) ====="), "{h}");
    }
    assert_eq!(planned.len(), 1, "{text}");
    assert!(
        planned[0].starts_with(&format!(
            "dry run: {n} calls planned ({n} already cached, 0 to send)"
        )),
        "{}",
        planned[0]
    );
    assert!(!planned[0].contains("at least"), "{}", planned[0]);
}
