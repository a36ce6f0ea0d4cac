//! The three strategies with a scripted model on the example repository: each produces a
//! patch that applies cleanly and parses; validation drops a breaking candidate and retries.

use crate::support::common;

use dei::generate::validate::Validator;
use dei::generate::{
    predictions, run_strategy, to_jsonl, ChainOfContext, Generated, Hierarchical, SearchReplace,
    Strategy, Workspace,
};
use dei::llm::model::Scripted;
use dei::model::repo::Snapshot;
use dei::model::{Applies, Candidate, Task};
use dei::patch::{rebuild, Files, Mode};
use std::time::Duration;

const BASE: &str = "f63f25d43ac69806ecd91a0971c38da78fc72775";

/// The example's issue, its prose only: the prompts in `tests/fixtures/generate_prompts.txt`
/// were recorded from it before the issue gained its `>>>` session (for `rank --exec`).
fn task() -> Task {
    let line = std::fs::read_to_string(common::root().join("examples/tasks.jsonl")).unwrap();
    let mut t: Task = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let prose = t
        .problem_statement
        .find("\n```")
        .expect("the issue shows code");
    t.problem_statement.truncate(prose + 1);
    t
}

/// Rebuild a generated patch strictly against the base commit; return the new words.py.
fn check_applies(snap: &Snapshot, g: &Generated) -> String {
    let mut base = Files::new();
    for p in dei::patch::paths_needed(&Candidate {
        instance_id: "i".into(),
        agent: g.agent.clone(),
        patch: g.patch.clone(),
        resolved: None,
        origin: Default::default(),
    }) {
        base.insert(p.clone(), snap.read(&p).unwrap());
    }
    let cand = Candidate {
        instance_id: "i".into(),
        agent: g.agent.clone(),
        patch: g.patch.clone(),
        resolved: None,
        origin: Default::default(),
    };
    let view = rebuild(&cand, &base, Mode::Strict);
    assert_eq!(view.applies, Applies::Clean, "{}\n{view:?}", g.patch);
    let f = view
        .files
        .iter()
        .find(|f| f.path == "textkit/words.py")
        .expect("edits words.py");
    let after = f.after.clone().unwrap();
    assert_eq!(
        dei::syntax::python::PyIndex::new(&after).error_count(),
        0,
        "{after}"
    );
    after
}

const GOOD_DEF: &str = "### textkit/words.py::word_count\n```python\ndef word_count(text):\n    \"\"\"Return the number of words in ``text``.\"\"\"\n    return len(text.split())\n```\n";

#[test]
fn hierarchical_rewrites_whole_functions_with_k_samples() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let model = Scripted::new()
        .when("List at most", "The bug is here:\n- `textkit/words.py`\n- nothing/else.py\n")
        .when("Name the classes", "textkit/words.py::word_count\n")
        .when("Rewrite every target", GOOD_DEF)
        // Sample 2 first breaks the syntax, then fixes it after the feedback.
        .when("Rewrite every target", "### textkit/words.py::word_count\n```python\ndef word_count(text:\n    return 0\n```\n")
        .when("It was rejected", "### textkit/words.py::word_count\n```python\ndef word_count(text):\n    return len([w for w in text.split() if w])\n```\n")
        // Sample 3 repeats sample 1: deduplicated.
        .when("Rewrite every target", GOOD_DEF);
    let s = Hierarchical::default();
    let gens = s.generate(&task(), &repo, &model, None).unwrap();
    assert_eq!(gens.len(), 2, "{gens:#?}");
    assert_eq!(gens[0].agent, "dei-gen-hierarchical");
    assert_eq!(gens[1].agent, "dei-gen-hierarchical-k2");
    let a = check_applies(&snap, &gens[0]);
    assert!(
        a.contains("    return len(text.split())\n")
            && !a.contains("return len(text.split(\" \"))"),
        "{a}"
    );
    assert!(a.contains("def capitalize_words"), "other definitions stay");
    let b = check_applies(&snap, &gens[1]);
    assert!(b.contains("if w])"), "{b}");
    let calls = model.calls();
    let temps: Vec<f64> = calls
        .iter()
        .filter(|c| c.prompt.contains("Rewrite every target"))
        .map(|c| c.temperature)
        .collect();
    assert_eq!(temps, [0.0, 0.4, 0.4, 0.8]);
    assert!(
        calls[1].prompt.contains("def word_count(text):  [L4-"),
        "schematic shown: {}",
        calls[1].prompt
    );
    let fb = calls
        .iter()
        .find(|c| c.prompt.contains("It was rejected"))
        .unwrap();
    assert!(
        fb.prompt.contains("syntax error at line 4"),
        "{}",
        fb.prompt
    );
}

#[test]
fn search_replace_feeds_a_failed_match_back_once() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let model = Scripted::new()
        .then("textkit/words.py\n<<<<<<< SEARCH\n    count_all_the_things(text, mode='fast')\n=======\n    pass\n>>>>>>> REPLACE\n")
        // Second try: indentation dropped by the model; the matcher re-indents.
        .when("It was rejected", "Fix:\n\ntextkit/words.py\n```python\n<<<<<<< SEARCH\nif not text:\n    return 0\nreturn len(text.split(\" \"))\n=======\nreturn len(text.split())\n>>>>>>> REPLACE\n```\n");
    let s = SearchReplace::default();
    let gens = s.generate(&task(), &repo, &model, None).unwrap();
    assert_eq!(gens.len(), 1);
    assert_eq!(gens[0].agent, "dei-gen-search-replace");
    let after = check_applies(&snap, &gens[0]);
    assert!(after.contains("    \"\"\"Return the number of words in ``text``.\"\"\"\n    return len(text.split())\n\n"), "{after}");
    let calls = model.calls();
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0].prompt.contains("def word_count(text):"),
        "BM25 context shows the function"
    );
    assert!(
        calls[1].prompt.contains("is not in textkit/words.py"),
        "{}",
        calls[1].prompt
    );
}

#[test]
fn search_replace_gives_up_after_one_retry() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let bad = "textkit/words.py\n<<<<<<< SEARCH\n    nothing_like_this()\n=======\n    pass\n>>>>>>> REPLACE\n";
    let model = Scripted::new().then(bad).then(bad).then(bad);
    let err = SearchReplace::default()
        .generate(&task(), &repo, &model, None)
        .unwrap_err();
    assert!(err.to_string().contains("rejected twice"), "{err}");
    assert_eq!(model.calls().len(), 2);
}

#[test]
fn chain_of_context_retrieves_verifies_then_edits() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let model = Scripted::new()
        .when("Step 1 of", "RETRIEVE function word_count\nRETRIEVE file textkit/cli.py\nRETRIEVE class NoSuchThing\n")
        .when("Step 2 of", "The CLI is not relevant.\nDROP 4\n")
        .when("Step 3 of", "ANALYSIS: word_count splits on a single space, so runs of whitespace produce empty words; use str.split().")
        .when("Root-cause analysis", "textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n");
    let s = ChainOfContext::default();
    let a = s
        .explore(
            &task(),
            &repo,
            &Scripted::new()
                .when(
                    "Step 1 of",
                    "RETRIEVE function word_count\nRETRIEVE file textkit/cli.py\n",
                )
                .when("Step 2 of", "DROP 4\n")
                .when("Step 3 of", "ANALYSIS: single-space split."),
            None,
        )
        .unwrap();
    assert_eq!(a.steps, 3);
    assert!(a.analysis.contains("single-space"));
    assert!(
        !a.kept.iter().any(|i| i.label.contains("cli.py")),
        "{:?}",
        a.kept
    );
    assert!(a.kept.iter().any(|i| i.text.contains("def word_count")));
    let gens = s.generate(&task(), &repo, &model, None).unwrap();
    assert_eq!(gens[0].agent, "dei-gen-chain-of-context");
    let after = check_applies(&snap, &gens[0]);
    assert!(after.contains("return len(text.split())"));
    let calls = model.calls();
    assert!(
        calls[1].prompt.contains("nothing named `NoSuchThing`"),
        "{}",
        calls[1].prompt
    );
    assert!(
        calls[1].prompt.contains("file textkit/cli.py"),
        "retrieved file is shown"
    );
    let last = calls.last().unwrap();
    assert!(last
        .prompt
        .contains("runs of whitespace produce empty words"));
    assert!(
        !last.prompt.contains("file textkit/cli.py"),
        "dropped item is not shown"
    );
}

#[test]
fn chain_of_context_stops_at_the_step_budget() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let model = Scripted::new().always("Step", "RETRIEVE function capitalize_words\n");
    let s = ChainOfContext {
        max_steps: 3,
        ..Default::default()
    };
    let a = s.explore(&task(), &repo, &model, None).unwrap();
    assert_eq!(model.calls().len(), 3);
    assert!(a.analysis.is_empty());
}

#[test]
fn validation_drops_breaking_candidate_and_retries_with_output() {
    let Some(cmd) = test_command() else {
        common::skip("python3 is not available to run the example's tests");
        return;
    };
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let model = Scripted::new()
        .then("textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split()) + 1\n>>>>>>> REPLACE\n")
        .when("<test_output>", "textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n");
    let v = Validator::new(&repo_path, BASE, &cmd, Duration::from_secs(60));
    let t = task();
    let out = run_strategy(&SearchReplace::default(), &t, &repo, &model, Some(&v));
    assert_eq!(out.kept.len(), 1, "{:?}", out.notes);
    assert!(
        out.notes.iter().any(|n| n.contains("dropped")),
        "{:?}",
        out.notes
    );
    assert!(out.kept[0]
        .patch
        .contains("+    return len(text.split())\n"));
    let preds = predictions(&t, &[out]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gen.jsonl");
    std::fs::write(&file, to_jsonl(&preds)).unwrap();
    let loaded = dei::candidates::load(&[file]).unwrap();
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    assert_eq!(loaded.candidates.len(), 1);
    // The generator writes each record's `agent`: the strategy names it, whatever the file.
    assert_eq!(loaded.candidates[0].agent, "dei-gen-search-replace");
    assert_eq!(loaded.candidates[0].instance_id, "example__textkit-1");
}

fn test_command() -> Option<String> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| "python3 -c \"import sys; sys.path[:0] = ['.', 'tests']; import test_words as t; [getattr(t, n)() for n in dir(t) if n.startswith('test_')]\"".to_string())
}

/// Every prompt the three strategies send (system and user, first asks, retries after a
/// rejected reply, test-failure feedback, the chain's notes) for fixed replies on the example
/// repository, as one text.
fn every_prompt() -> String {
    use std::fmt::Write as _;
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let t = task();
    let fb = Some("FAILED tests/test_words.py::test_tabs\n  assert 3 == 2\n");
    let sr_bad = "textkit/words.py\n<<<<<<< SEARCH\n    nothing_like_this()\n=======\n    pass\n>>>>>>> REPLACE\n";
    let sr_good = "textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n";
    let mut log = String::new();
    let mut record = |name: &str, m: &Scripted| {
        for (i, c) in m.calls().iter().enumerate() {
            write!(
                log,
                "=== {name}: call {} at t={}\n--- system\n{}\n--- prompt\n{}\n",
                i + 1,
                c.temperature,
                c.system,
                c.prompt
            )
            .unwrap();
        }
    };
    // Hierarchical with test feedback: files, targets, a rejected rewrite and its retry.
    let h = Scripted::new()
        .when("List at most", "- `textkit/words.py`\n")
        .when(
            "Name the classes",
            "textkit/words.py::word_count\ntextkit/words.py:1-2\n",
        )
        .when(
            "Rewrite every target",
            "### textkit/words.py::word_count\n```python\ndef word_count(text:\n```\n",
        )
        .when("It was rejected", GOOD_DEF);
    let s = Hierarchical {
        temperatures: vec![0.3],
        ..Default::default()
    };
    let _ = s.generate(&t, &repo, &h, fb);
    record("hierarchical", &h);
    // Search/replace without feedback: a block that matches nothing, then a good one.
    let sr = Scripted::new().then(sr_bad).then(sr_good);
    let _ = SearchReplace::default().generate(&t, &repo, &sr, None);
    record("search-replace", &sr);
    // Chain of context with feedback: retrieve (one name unknown), drop, analyse, then edits
    // that are rejected once.
    let c = Scripted::new()
        .when(
            "Step 1 of",
            "RETRIEVE function word_count\nRETRIEVE class NoSuchThing\nRETRIEVE file textkit/cli.py\n",
        )
        .when("Step 2 of", "DROP 1\n")
        .when("Step 3 of", "ANALYSIS: word_count splits on a single space.")
        .when("Root-cause analysis", sr_bad)
        .when("It was rejected", sr_good);
    let _ = ChainOfContext::default().generate(&t, &repo, &c, fb);
    record("chain-of-context", &c);
    // Chain of context out of context budget, ending with no analysis.
    let c2 = Scripted::new()
        .when("Step 1 of", "RETRIEVE file textkit/cli.py\n")
        .when("Step 2 of", "I am not sure.\n")
        .when("Root-cause analysis", sr_good);
    let s = ChainOfContext {
        max_steps: 3,
        context_tokens: 10,
        ..Default::default()
    };
    let _ = s.generate(&t, &repo, &c2, None);
    record("chain-of-context, small budget", &c2);
    log
}

/// The prompts are exactly the recorded ones (tests/fixtures/generate_prompts.txt, written by
/// the code before the prompts became templates in prompts/): not one byte moved.
/// `DEI_BLESS=1` writes the file anew.
#[test]
fn every_generator_prompt_is_the_recorded_text() {
    let got = every_prompt();
    let path = common::root().join("tests/fixtures/generate_prompts.txt");
    if std::env::var_os("DEI_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(got.matches("=== ").count() >= 12, "{got}");
    if got != want {
        let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
        let n = (0..g.len().max(w.len()))
            .find(|&i| g.get(i) != w.get(i))
            .unwrap_or(0);
        panic!(
            "prompts differ from {} at line {}:\n  got:  {:?}\n  want: {:?}\n(got {} bytes, want {})",
            path.display(),
            n + 1,
            g.get(n),
            w.get(n),
            got.len(),
            want.len()
        );
    }
}

/// `--prompt-dir` replaces a generator template by file name; a broken one is refused naming
/// the file.
#[test]
fn a_prompt_folder_replaces_the_generator_templates() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("generate_system.j2"), "Be brief.\n").unwrap();
    std::fs::write(
        dir.path().join("generate_search_replace.j2"),
        "Fix: {{ issue }}\n{% include \"generate_edit_format.j2\" %}",
    )
    .unwrap();
    let model = Scripted::new().then("no blocks").then("still none");
    let s = SearchReplace {
        prompts: dei::generate::prompts(Some(dir.path())).unwrap(),
        ..Default::default()
    };
    assert!(s.generate(&task(), &repo, &model, None).is_err());
    let calls = model.calls();
    assert_eq!(calls[0].system, "Be brief.");
    assert!(
        calls[0].prompt.starts_with("Fix: word_count miscounts")
            && calls[0].prompt.ends_with("Do not write line numbers."),
        "{}",
        calls[0].prompt
    );
    std::fs::write(dir.path().join("generate_fix.j2"), "{% if %}").unwrap();
    let err = format!(
        "{:#}",
        dei::generate::prompts(Some(dir.path())).unwrap_err()
    );
    assert!(err.contains("generate_fix.j2"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Shaped replies against the mock server: every generator call asks for a JSON schema, and a
// JSON reply makes the same candidate as the plain-text reply of a server that refuses schemas.

use crate::support::llm_mock::{self, Fault, Mock};
use serde_json::{json, Value};

const MAX_TOKENS: u32 = 1024;

/// The real client over `mock`: no cache, one call at a time, `--max-tokens` [`MAX_TOKENS`].
fn served(mock: &Mock) -> dei::llm::model::EngineModel {
    let opts = dei::llm::config::LlmOptions {
        llm: Some("openai-compatible:mock-coder".into()),
        base_url: Some(mock.openai_base()),
        max_tokens: MAX_TOKENS,
        concurrency: 1,
        retries: 1,
        backoff_ms: 1,
        timeout: 10.0,
        no_cache: true,
        ..Default::default()
    };
    let cfg = opts.resolve(&|_| None).unwrap().unwrap();
    let engine = dei::llm::runner::Engine::new(cfg.provider, cfg.settings, None).unwrap();
    dei::llm::model::EngineModel::new(std::sync::Arc::new(engine), "test")
}

/// The `json_schema` of each request whose prompt holds `needle` (null where none was sent).
fn schemas_sent(mock: &Mock, needle: &str) -> Vec<Value> {
    mock.seen()
        .iter()
        .filter(|s| llm_mock::user_prompt(&s.body).contains(needle))
        .map(|s| serde_json::from_str::<Value>(&s.body).unwrap()["response_format"].clone())
        .map(|f| {
            if !f.is_null() {
                assert_eq!(f["type"], "json_schema", "{f}");
                assert_eq!(f["json_schema"]["strict"], true, "{f}");
            }
            f["json_schema"].clone()
        })
        .collect()
}

/// The user prompts sent, in order, each once (a schema refusal's retry repeats its prompt).
fn prompts_sent(mock: &Mock) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in mock.seen() {
        let p = llm_mock::user_prompt(&s.body);
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

const GOOD_CODE: &str =
    "def word_count(text):\n    \"\"\"Return the number of words in ``text``.\"\"\"\n    return len(text.split())\n";

#[test]
fn hierarchical_targets_and_rewrites_are_shaped_and_read_as_the_plain_reply() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let run = |mock: &Mock| {
        let s = Hierarchical {
            temperatures: vec![0.0],
            ..Default::default()
        };
        s.generate(&task(), &repo, &served(mock), None).unwrap()
    };
    // A server that refuses schemas: every call after the first goes without one, in plain text.
    let plain = Mock::start(Duration::ZERO);
    plain.push(Fault::SchemaRefused);
    plain.script("List at most", "- `textkit/words.py`\n");
    plain.script(
        "Name the classes",
        "textkit/words.py::word_count\ntextkit/words.py:1-1\n",
    );
    plain.script("Rewrite every target", GOOD_DEF);
    let want = run(&plain);
    assert_eq!(want.len(), 1, "{want:?}");
    let seen = plain.seen();
    assert!(seen[0].body.contains("response_format"));
    assert!(seen[1..]
        .iter()
        .all(|s| !s.body.contains("response_format")));

    // A server that takes them: JSON replies, read as the lines and blocks they stand for.
    let shaped = Mock::start(Duration::ZERO);
    shaped.script("List at most", r#"{"files":["textkit/words.py"]}"#);
    shaped.script(
        "Name the classes",
        r#"{"targets":["textkit/words.py::word_count","textkit/words.py:1-1"]}"#,
    );
    shaped.script(
        "Rewrite every target",
        &json!({"rewrites": [{"target": "textkit/words.py::word_count", "code": GOOD_CODE}]})
            .to_string(),
    );
    let got = run(&shaped);
    assert_eq!(got, want, "the same candidate");
    assert_eq!(
        prompts_sent(&shaped),
        prompts_sent(&plain),
        "the same steps"
    );
    let after = check_applies(&snap, &got[0]);
    assert!(after.contains("    return len(text.split())\n"), "{after}");

    // The targets: up to four, each a place the schematic shows (its definitions and its runs
    // of module-level code).
    let t = schemas_sent(&shaped, "Name the classes");
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["name"], "pick_targets");
    let targets = &t[0]["schema"]["properties"]["targets"];
    assert_eq!(targets["type"], "array");
    assert_eq!(targets["minItems"], 1);
    assert_eq!(targets["maxItems"], dei::llm::parse::MOST_TARGETS);
    assert_eq!(targets["items"]["type"], "string");
    assert_eq!(
        targets["items"]["enum"],
        json!([
            "textkit/words.py:1-1",
            "textkit/words.py::word_count",
            "textkit/words.py::capitalize_words",
            "textkit/words.py::longest_word"
        ])
    );
    assert_eq!(t[0]["schema"]["required"], json!(["targets"]));
    assert_eq!(t[0]["schema"]["additionalProperties"], false);

    // The rewrites: at most one per target asked, each naming one, its code a share of
    // --max-tokens (64 left for the JSON around).
    let r = schemas_sent(&shaped, "Rewrite every target");
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["name"], "submit_rewrites");
    let rewrites = &r[0]["schema"]["properties"]["rewrites"];
    assert_eq!(rewrites["minItems"], 1);
    assert_eq!(rewrites["maxItems"], 2);
    let item = &rewrites["items"];
    assert_eq!(
        item["properties"]["target"]["enum"],
        json!(["textkit/words.py::word_count", "textkit/words.py:1-1"])
    );
    assert_eq!(
        item["properties"]["code"]["maxLength"],
        (MAX_TOKENS as usize - 64) / 2
    );
    assert_eq!(item["required"], json!(["target", "code"]));
    assert_eq!(item["additionalProperties"], false);
}

#[test]
fn a_shaped_rewrite_cut_at_max_tokens_is_never_used() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let mock = Mock::start(Duration::ZERO);
    mock.push(Fault::Text(r#"{"files":["textkit/words.py"]}"#.into()));
    mock.push(Fault::Text(
        r#"{"targets":["textkit/words.py::word_count"]}"#.into(),
    ));
    // Whole JSON, and a fix too, but stopped at the limit: not used.
    mock.push(Fault::Cut(
        json!({"rewrites": [{"target": "textkit/words.py::word_count", "code": "def word_count(text):\n    return -1\n"}]})
            .to_string(),
    ));
    mock.script(
        "Rewrite every target",
        &json!({"rewrites": [{"target": "textkit/words.py::word_count", "code": GOOD_CODE}]})
            .to_string(),
    );
    let s = Hierarchical {
        temperatures: vec![0.0],
        ..Default::default()
    };
    let gens = s.generate(&task(), &repo, &served(&mock), None).unwrap();
    assert_eq!(gens.len(), 1, "{gens:?}");
    assert!(!gens[0].patch.contains("return -1"), "{}", gens[0].patch);
    assert!(check_applies(&snap, &gens[0]).contains("    return len(text.split())\n"));
    let asks = schemas_sent(&mock, "Rewrite every target");
    assert_eq!(asks.len(), 2, "the cut reply was asked again");
    assert!(asks.iter().all(|s| s["name"] == "submit_rewrites"));
    let retry = llm_mock::user_prompt(&mock.seen()[3].body);
    assert!(
        retry.contains("could not be used: reply cut at --max-tokens 1024"),
        "{retry}"
    );
}

#[test]
fn chain_commands_are_shaped_and_read_as_the_plain_lines() {
    let repo_path = common::example_repo();
    let snap = Snapshot::open(&repo_path, BASE).unwrap();
    let repo = Workspace::new(&snap).unwrap();
    let run = |mock: &Mock| {
        ChainOfContext::default()
            .generate(&task(), &repo, &served(mock), None)
            .unwrap()
    };
    let analysis = "ANALYSIS: word_count splits on one space, so runs of whitespace make empty words; use str.split().";
    let plain = Mock::start(Duration::ZERO);
    plain.push(Fault::SchemaRefused);
    plain.script(
        "Step 1 of",
        "RETRIEVE function word_count\nRETRIEVE file textkit/cli.py\n",
    );
    plain.script("Step 2 of", "DROP 4\n");
    plain.script("Step 3 of", analysis);
    plain.script("Root-cause analysis:", "textkit/words.py\n<<<<<<< SEARCH\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n");
    let want = run(&plain);
    assert!(plain.seen()[1..]
        .iter()
        .all(|s| !s.body.contains("response_format")));

    let shaped = Mock::start(Duration::ZERO);
    shaped.script(
        "Step 1 of",
        r#"{"commands":["RETRIEVE function word_count","RETRIEVE file textkit/cli.py"]}"#,
    );
    shaped.script("Step 2 of", r#"{"commands":["DROP 4"]}"#);
    shaped.script("Step 3 of", &json!({ "commands": [analysis] }).to_string());
    shaped.script(
        "Root-cause analysis:",
        r#"{"edits":[{"path":"textkit/words.py","search":"    return len(text.split(\" \"))","replace":"    return len(text.split())"}]}"#,
    );
    let got = run(&shaped);
    assert_eq!(got, want, "the same candidate");
    let prompts = prompts_sent(&shaped);
    assert_eq!(prompts, prompts_sent(&plain), "the same steps");
    assert!(
        prompts[1].contains("function textkit/words.py::word_count")
            && prompts[1].contains("file textkit/cli.py"),
        "the retrieval reached step 2: {}",
        prompts[1]
    );
    assert!(
        prompts[3].contains("runs of whitespace make empty words")
            && !prompts[3].contains("file textkit/cli.py"),
        "the analysis, without the dropped item: {}",
        prompts[3]
    );
    check_applies(&snap, &got[0]);

    // Each step: up to six command lines, each a sixth of --max-tokens (less 64 for the JSON).
    let steps = schemas_sent(&shaped, "Step ");
    assert_eq!(steps.len(), 3);
    for s in &steps {
        assert_eq!(s["name"], "next_commands");
        let c = &s["schema"]["properties"]["commands"];
        assert_eq!(c["minItems"], 1);
        assert_eq!(c["maxItems"], dei::llm::parse::MOST_COMMANDS);
        assert_eq!(c["items"]["type"], "string");
        assert_eq!(
            c["items"]["maxLength"],
            (MAX_TOKENS as usize - 64) / dei::llm::parse::MOST_COMMANDS
        );
        assert_eq!(s["schema"]["required"], json!(["commands"]));
    }
    assert_eq!(
        schemas_sent(&shaped, "Root-cause analysis:")[0]["name"],
        "submit_edits"
    );
}
