//! Synthetic multi-issue corpora for the scale tests: a generated git repository with one
//! module per issue, a tasks file and a predictions file with several agents per issue.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Synth {
    pub repo: PathBuf,
    pub tasks: PathBuf,
    pub preds: PathBuf,
    pub ids: Vec<String>,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Python source for issue `i`: `funcs` small functions.
fn module(i: usize, funcs: usize) -> String {
    let mut s = format!("\"\"\"Module {i}.\"\"\"\n\nimport os\n\n");
    for f in 0..funcs {
        let _ = write!(s, "\ndef func_{f}(x):\n    \"\"\"Return x plus {f}.\"\"\"\n    y = x + {f}\n    return y\n\n");
    }
    s
}

/// A repository with `issues` modules, tasks `synth__synth-<i>`, and `agents` candidates per
/// issue: agent 0 and 1 make the same (resolved) fix, the others edit elsewhere or fail.
pub fn make(dir: &Path, issues: usize, agents: usize, funcs: usize) -> Synth {
    let repo = dir.join("synth");
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    git(&repo, &["init", "-q"]);
    for i in 0..issues {
        std::fs::write(repo.join(format!("pkg/mod_{i}.py")), module(i, funcs)).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let mut tasks = String::new();
    let mut preds = String::new();
    let mut ids = Vec::new();
    for i in 0..issues {
        let id = format!("synth__synth-{i}");
        let target = i % funcs;
        let task = serde_json::json!({
            "instance_id": id, "repo": "synth/synth", "base_commit": head,
            "problem_statement": format!("func_{target} in pkg/mod_{i}.py returns the wrong value for negative x"),
        });
        tasks.push_str(&task.to_string());
        tasks.push('\n');
        for a in 0..agents {
            let f = if a < 2 { target } else { (target + a) % funcs };
            let line = 8 + 6 * f; // `    y = x + f`
            let patch = if a == agents - 1 && a >= 3 {
                format!("--- a/pkg/mod_{i}.py\n+++ b/pkg/mod_{i}.py\n@@ -{line},2 +{line},2 @@\n-    no such line\n+    y = 0\n     return y\n")
            } else {
                let new = if a < 2 {
                    format!("    y = abs(x) + {f}")
                } else {
                    format!("    y = x + {f} + {a}")
                };
                format!(
                    "--- a/pkg/mod_{i}.py\n+++ b/pkg/mod_{i}.py\n@@ -{line},2 +{line},2 @@\n-    y = x + {f}\n+{new}\n     return y\n"
                )
            };
            let rec = serde_json::json!({
                "instance_id": id, "model_name_or_path": format!("agent{a}"), "model_patch": patch, "resolved": a < 2,
            });
            preds.push_str(&rec.to_string());
            preds.push('\n');
        }
        ids.push(id);
    }
    let tasks_path = dir.join("tasks.jsonl");
    let preds_path = dir.join("preds.jsonl");
    std::fs::write(&tasks_path, tasks).unwrap();
    std::fs::write(&preds_path, preds).unwrap();
    Synth {
        repo,
        tasks: tasks_path,
        preds: preds_path,
        ids,
    }
}

/// The same inputs in another folder (`moved`), as a user who moved the project, or a second
/// machine, would give them.
pub fn copied_to(sy: &Synth, moved: &Path) -> Synth {
    std::fs::create_dir_all(moved).unwrap();
    let (preds, tasks) = (moved.join("preds.jsonl"), moved.join("tasks.jsonl"));
    std::fs::copy(&sy.preds, &preds).unwrap();
    std::fs::copy(&sy.tasks, &tasks).unwrap();
    Synth {
        repo: sy.repo.clone(),
        tasks,
        preds,
        ids: sy.ids.clone(),
    }
}

pub fn dei_cmd() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dei"));
    super::common::without_user_settings(&mut c);
    c
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `dei rank --run-dir` over a synthetic corpus (`extra` appended).
pub fn rank_args(sy: &Synth, run_dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = [
        "rank",
        s(&sy.preds),
        "--tasks",
        s(&sy.tasks),
        "--repo",
        s(&sy.repo),
        "--run-dir",
        s(run_dir),
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    v.extend(extra.iter().map(|x| x.to_string()));
    v
}

pub fn run(args: &[String]) -> Output {
    dei_cmd().args(args).output().expect("dei runs")
}

/// `dei eval ARGS` in the given order with no bootstrap, its `--json -` report parsed; a
/// failing eval fails the test with its stderr.
pub fn eval_json(args: &[&str]) -> serde_json::Value {
    let out = dei_cmd()
        .arg("eval")
        .args(args)
        .args(["--order", "given", "--bootstrap", "0", "--json", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Instance ids of the journal's complete lines, in order.
pub fn journal_ids(run_dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v["instance_id"].as_str().unwrap().to_string())
        .collect()
}
