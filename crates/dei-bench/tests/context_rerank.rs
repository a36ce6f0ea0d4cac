//! `dei-bench context --llm …` end to end against the mock model server: the model re-ranks
//! the issue-only localization, the report gives the figures with and without it, failures
//! keep the search order, and a rerun is answered from the cache.

#[path = "../../../tests/it/support/common.rs"]
mod common;
#[path = "../../../tests/it/support/llm_mock.rs"]
mod llm_mock;

use common::{example_repo, path_str, stderr, stdout};
use llm_mock::{Fault, Mock};
use std::path::Path;
use std::time::Duration;

/// Issues in the task file (evaluated several at once when a model re-ranks).
const N: u64 = 3;

/// The bundled example's task, `N` times under different ids, with an issue that names the
/// command line, not the faulty `textkit/words.py`, so the search ranks `textkit/cli.py` first.
fn vague_task(dir: &Path) -> String {
    let text = std::fs::read_to_string(common::root().join("examples/tasks.jsonl")).unwrap();
    let mut t: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    t["problem_statement"] = "The command line tool prints a wrong number\n\nRunning `python -m textkit.cli notes.txt` on a file whose lines are indented with tabs prints a number that is too large.".into();
    let mut lines = String::new();
    for i in 1..=N {
        t["instance_id"] = format!("example__textkit-{i}").into();
        lines.push_str(&(serde_json::to_string(&t).unwrap() + "\n"));
    }
    let p = dir.join("tasks.jsonl");
    std::fs::write(&p, lines).unwrap();
    path_str(&p).to_string()
}

/// The `dei-bench` binary, run from the repository root with none of the user's LLM or
/// repository settings.
fn dei_bench(args: &[&str]) -> std::process::Output {
    common::without_user_settings(
        std::process::Command::new(env!("CARGO_BIN_EXE_dei-bench")).current_dir(common::root()),
    )
    .args(args)
    .output()
    .expect("dei-bench runs")
}

fn bench(mock: &Mock, dir: &Path, extra: &[&str]) -> (serde_json::Value, String, String) {
    let tasks = vague_task(dir);
    let repos = example_repo().parent().unwrap().to_path_buf();
    let json = dir.join("report.json");
    let cache = dir.join("cache");
    let base = mock.openai_base();
    let mut args: Vec<&str> = vec![
        "context",
        "--tasks",
        &tasks,
        "--repos",
        path_str(&repos),
        "--candidates",
        "none",
        "--history",
        "0",
        "--json",
        path_str(&json),
        "--cache",
        path_str(&cache),
        "--llm",
        "openai-compatible:mock-localizer",
        "--base-url",
        &base,
        "--backoff-ms",
        "1",
    ];
    args.extend(extra);
    let out = dei_bench(&args);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (report, stdout(&out), stderr(&out))
}

#[test]
fn the_model_moves_the_faulty_file_and_function_first() {
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(Duration::ZERO);
    mock.script_always(
        "Which of these files",
        "1. `textkit/words.py`\n2. textkit/cli.py\n",
    );
    mock.script_always(
        "Which classes, functions",
        "- textkit/words.py::word_count\n- textkit/words.py::no_such_function\n",
    );
    let (r, out, _) = bench(&mock, dir.path(), &[]);
    let rr = &r["rerank"];
    assert_eq!(rr["model"], "openai-compatible:mock-localizer");
    assert_eq!(rr["files_named"], N);
    assert_eq!(rr["functions_named"], N);
    assert_eq!(rr["kept_order"], 0);
    let ids: Vec<&str> = r["per_instance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "example__textkit-1",
            "example__textkit-2",
            "example__textkit-3"
        ]
    );
    // The search alone put the command line first; the model put the gold file and function first.
    let lexical = &rr["lexical_per_instance"][0];
    assert!(lexical["gold_file_rank"].as_u64().unwrap() > 1, "{lexical}");
    assert!(lexical["gold_fn_rank"].as_u64().unwrap() > 1, "{lexical}");
    let now = &r["per_instance"][0];
    assert_eq!(now["gold_file_rank"], 1, "{now}");
    assert_eq!(now["gold_fn_rank"], 1, "{now}");
    assert_eq!(now["top_files"][0], "textkit/words.py");
    assert_eq!(now["top_functions"][0], "textkit/words.py::word_count");
    assert!(r["file_mrr"].as_f64().unwrap() > rr["lexical"]["file_mrr"].as_f64().unwrap());
    assert!(
        out.contains("re-ranked by openai-compatible:mock-localizer"),
        "{out}"
    );
    assert!(
        out.contains("without re-ranking, issue-only file top-5"),
        "{out}"
    );
    // Two calls: the files with outlines, then the definitions of the best files, words.py first.
    let prompts: Vec<String> = mock
        .seen()
        .iter()
        .map(|s| llm_mock::user_prompt(&s.body))
        .collect();
    // The same issue text thrice: the cache answers the two later issues' identical prompts,
    // unless they were sent at the same time; either way each issue asked both questions.
    assert!((2..=2 * N as usize).contains(&prompts.len()), "{prompts:?}");
    let files = prompts
        .iter()
        .find(|p| p.contains("Which of these files"))
        .unwrap();
    assert!(files.contains("### textkit/cli.py") && files.contains("def main(argv=None):"));
    assert!(files.contains("python -m textkit.cli notes.txt"));
    let defs = prompts
        .iter()
        .find(|p| p.contains("Which classes, functions"))
        .unwrap();
    let words = defs.find("textkit/words.py (").unwrap();
    let cli = defs.find("textkit/cli.py (").unwrap();
    assert!(words < cli, "{defs}");
    assert!(defs.contains("def word_count(text):"));
    // A rerun is answered from the cache: no new request, same figures.
    let (again, _, err) = bench(&mock, dir.path(), &[]);
    let sent = prompts.len();
    assert_eq!(mock.seen().len(), sent, "the rerun called the model: {err}");
    for k in [
        "top_files",
        "top_functions",
        "gold_file_rank",
        "gold_fn_rank",
    ] {
        assert_eq!(again["per_instance"][0][k], r["per_instance"][0][k], "{k}");
    }
}

#[test]
fn a_failing_or_unhelpful_model_keeps_the_search_order() {
    let dir = tempfile::tempdir().unwrap();
    let mock = Mock::start(Duration::ZERO);
    // Step 1 fails outright (500, no retries); step 2 replies with names that do not exist.
    // One issue at a time (--concurrency 1), so that the one fault meets the first call.
    mock.push(Fault::ServerError);
    mock.script_always("Which of these files", "nothing useful\n");
    mock.script_always("Which classes, functions", "textkit/nowhere.py::f\n");
    let (r, out, err) = bench(
        &mock,
        dir.path(),
        &["--retries", "0", "--no-cache", "--concurrency", "1"],
    );
    let rr = &r["rerank"];
    assert_eq!(rr["files_named"], 0);
    assert_eq!(rr["functions_named"], 0);
    assert_eq!(rr["kept_order"], N);
    let now = &r["per_instance"][0];
    let lexical = &rr["lexical_per_instance"][0];
    assert_eq!(now["top_files"], lexical["top_files"]);
    assert_eq!(now["top_functions"], lexical["top_functions"]);
    let notes = now["rerank_notes"].as_array().unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].as_str().unwrap().contains("model call failed"),
        "{notes:?}"
    );
    assert!(
        notes[1].as_str().unwrap().contains("named no definition"),
        "{notes:?}"
    );
    assert!(
        err.contains("re-rank: files: the model call failed"),
        "{err}"
    );
    assert!(out.contains(&format!("{N} kept the search order")), "{out}");
    let second = &r["per_instance"][1]["rerank_notes"];
    assert!(
        second[0].as_str().unwrap().contains("named none of"),
        "{second}"
    );
}
