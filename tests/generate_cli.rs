//! `dei generate` end to end: the real LLM client against the in-process mock server, on the
//! bundled example; its output ranks beside the other agents; a rerun makes no new call.

mod common;
mod llm_mock;

use common::*;
use llm_mock::{Fault, Mock};
use std::process::Command;
use std::time::Duration;

fn dei_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dei"));
    c.args(args)
        .current_dir(root())
        .env_remove("DEI_REPOS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("DEI_LLM");
    c
}

const REPLY: &str = "The count splits on single spaces only.\n\ntextkit/words.py\n```python\n<<<<<<< SEARCH\n    if not text:\n        return 0\n    return len(text.split(\" \"))\n=======\n    return len(text.split())\n>>>>>>> REPLACE\n```\n";

#[test]
fn generate_needs_a_model_and_says_how() {
    let repo = example_repo();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.jsonl");
    let o = dei_cmd(&[
        "generate",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(&repo),
        "--out",
        path_str(&out),
    ])
    .output()
    .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("needs a model") && stderr(&o).contains("--llm"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn search_replace_candidate_from_the_mock_applies_ranks_and_resumes() {
    let mock = Mock::start(Duration::from_millis(5));
    mock.push(Fault::Text(REPLY.into()));
    let repo = example_repo();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen.jsonl");
    let cache = dir.path().join("cache");
    let base = mock.openai_base();
    let args = [
        "generate",
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(&repo),
        "--strategies",
        "search-replace",
        "--out",
        path_str(&out),
        "--llm",
        "openai-compatible:m",
        "--base-url",
        &base,
        "--cache",
        path_str(&cache),
    ];
    let o = dei_cmd(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mock.calls(), 1);
    let text = std::fs::read_to_string(&out).unwrap();
    let rec: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(rec["model_name_or_path"], "dei-gen-search-replace");
    assert_eq!(rec["instance_id"], "example__textkit-1");

    // The patch applies the way git would and the result parses.
    let cand = dei::types::Candidate {
        instance_id: "example__textkit-1".into(),
        agent: "dei-gen-search-replace".into(),
        patch: rec["model_patch"].as_str().unwrap().into(),
        resolved: None,
        origin: Default::default(),
    };
    let snap = dei::repo::Snapshot::open(&repo, "main").unwrap();
    let base_files = snap
        .read_all(dei::patch::paths_needed(&cand).iter().map(String::as_str))
        .unwrap();
    let view = dei::patch::rebuild(&cand, &base_files, dei::patch::Mode::Strict);
    assert_eq!(view.applies, dei::types::Applies::Clean, "{view:?}");
    let after = view.files[0].after.as_deref().unwrap();
    assert!(after.contains("return len(text.split())"), "{after}");
    assert_eq!(dei::context::PyIndex::new(after).error_count(), 0);

    // `dei rank` reads it beside the bundled agents.
    let o = dei_cmd(&[
        "rank",
        "examples/candidates",
        path_str(&out),
        "--tasks",
        "examples/tasks.jsonl",
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(&repo),
    ])
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("dei-gen-search-replace"),
        "{}",
        stdout(&o)
    );

    // A rerun skips the finished (issue, strategy) pair: no call, nothing appended.
    let o = dei_cmd(&args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(mock.calls(), 1);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}
