//! The hostile corpus (tests/hostile/) plus two ~10 MB patches generated here: every bad
//! record becomes a per-candidate error or an input problem, the run completes, nothing is
//! written outside the run directory and no candidate code runs.

use crate::support::scale_util;

use scale_util::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn hostile() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

/// `repos/hostile__repo`: a git repository made from tests/hostile/repo, with pkg/win.py in CRLF.
fn make_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repos/hostile__repo");
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    let core = std::fs::read_to_string(hostile().join("repo/pkg/core.py")).unwrap();
    let win = std::fs::read_to_string(hostile().join("repo/pkg/win.py")).unwrap();
    std::fs::write(repo.join("pkg/core.py"), core).unwrap();
    std::fs::write(repo.join("pkg/win.py"), win.replace('\n', "\r\n")).unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "core.autocrlf", "false"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "base"]);
    dir.join("repos")
}

/// A ~10 MB new-file patch, and a ~10 MB patch of hunks that match nothing.
fn huge_records() -> String {
    let mut new_file =
        String::from("--- /dev/null\n+++ b/pkg/generated.py\n@@ -0,0 +1,270000 @@\n");
    for i in 0..270_000 {
        new_file.push_str(&format!("+VALUE_{i:08} = {i} * 2 + 1  # padding\n"));
    }
    // 2,000 hunks of 100 lines that match nothing in pkg/core.py.
    let mut bad = String::new();
    for h in 0..2_000 {
        bad.push_str(&format!(
            "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -{s},99 +{s},99 @@\n",
            s = 1 + h % 9
        ));
        for l in 0..98 {
            bad.push_str(&format!(
                " context line {l} of hunk {h} with some padding text\n"
            ));
        }
        bad.push_str(&format!("-removed {h}\n+added {h}\n"));
    }
    assert!(new_file.len() > 9_000_000 && bad.len() > 9_000_000);
    let rec = |agent: &str, p: &str| {
        serde_json::json!({"instance_id": "hostile__repo-1", "model_name_or_path": agent, "model_patch": p}).to_string() + "\n"
    };
    rec("huge-new", &new_file) + &rec("huge-bad", &bad)
}

fn errors_by_agent(outcome: &Value) -> BTreeMap<String, String> {
    outcome["candidate_errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["agent"].as_str().unwrap().to_string(),
                        e["error"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn hostile_corpus_yields_per_candidate_errors_and_the_run_completes() {
    let dir = tempfile::tempdir().unwrap();
    let repos = make_repo(dir.path());
    let preds = dir.path().join("preds.jsonl");
    let mut bytes = std::fs::read(hostile().join("preds.jsonl")).unwrap();
    bytes.extend_from_slice(huge_records().as_bytes());
    std::fs::write(&preds, bytes).unwrap();
    let cwd = dir.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let run_dir = dir.path().join("run");
    let _ = std::fs::remove_file("/tmp/dei-hostile-executed");

    let out = dei_cmd()
        .current_dir(&cwd)
        .args([
            "rank",
            s(&preds),
            "--tasks",
            s(&hostile().join("tasks.jsonl")),
            "--repos",
            s(&repos),
            "--all",
        ])
        .args(["--run-dir", s(&run_dir), "--json", "-"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    // The run completes; the issues with a missing repository or an unknown id are not
    // ranked, so it exits non-zero and names them.
    assert_eq!(out.status.code(), Some(1), "run failed: {err}");
    assert!(
        err.contains("issues were not ranked (1 missing_repo, 1 unknown_issue)"),
        "{err}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("summary JSON on stdout");

    // Issue-level outcomes.
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let outcomes: BTreeMap<String, Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["instance_id"].as_str().unwrap().to_string(), v))
        .collect();
    let keys: Vec<&str> = outcomes.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "hostile__repo-1",
            "hostile__repo-2",
            "hostile__repo-3",
            "nobody__nothing-1"
        ]
    );
    assert_eq!(outcomes["hostile__repo-3"]["error_kind"], "missing_repo");
    assert!(outcomes["hostile__repo-3"]["error"]
        .as_str()
        .unwrap()
        .contains("django/django"));
    assert_eq!(outcomes["nobody__nothing-1"]["error_kind"], "unknown_issue");
    assert_eq!(summary["ranked"], 2);
    assert_eq!(summary["missing_repos"]["django/django"], 1);

    // Candidate-level errors on issue 1.
    let one = &outcomes["hostile__repo-1"];
    assert!(one["error_kind"].is_null(), "{one}");
    let errs = errors_by_agent(one);
    // `+++ /tmp/x` is not absolute to git: `-p1` strips the first component, so the patch
    // names `tmp/x` inside the repository. Either way nothing may point outside it.
    let ranked = one["result"]["ranked"].as_array().expect("ranking kept");
    let absolute = ranked
        .iter()
        .find(|r| r["agent"] == "absolute")
        .expect("absolute ranked");
    assert!(
        errs.get("absolute")
            .is_some_and(|e| e.contains("unsafe path"))
            || absolute["files"].as_array().unwrap().iter().all(|f| {
                let f = f.as_str().unwrap();
                !f.starts_with('/') && !f.split('/').any(|c| c == "..")
            }),
        "{absolute}"
    );
    for agent in ["dotdot", "rename-out", "nul-path"] {
        assert!(
            errs.get(agent).is_some_and(|e| e.contains("unsafe path")),
            "{agent}: {:?}",
            errs.get(agent)
        );
    }
    assert!(errs["binary"].contains("binary"), "{}", errs["binary"]);
    assert!(
        errs["phantom"].contains("does not exist"),
        "{}",
        errs["phantom"]
    );
    assert!(errs.contains_key("overflow"), "{errs:?}");
    // Both ~10 MB patches are over the default --max-patch-bytes: a clear error each, not rebuilt.
    for huge in ["huge-new", "huge-bad"] {
        assert!(
            errs.get(huge)
                .is_some_and(|e| e.contains("patch too large") && e.contains("--max-patch-bytes")),
            "{huge}: {:?}",
            errs.get(huge)
        );
    }
    for fine in ["good", "twin", "crlf-on-lf", "exec", "empty"] {
        assert!(
            !errs.contains_key(fine),
            "{fine} should rebuild: {:?}",
            errs.get(fine)
        );
    }
    // Every usable candidate of issue 1 was ranked: 12 readable records + the 2 huge ones.
    let ranked = one["result"]["ranked"].as_array().unwrap();
    let agents: Vec<&str> = ranked
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    assert_eq!(ranked.len(), 14, "{agents:?}");
    // The non-UTF-8 record is dropped (not repaired), with its line, as `dei rank` drops it.
    assert!(
        !agents.contains(&"latin1"),
        "non-UTF-8 record should be dropped: {agents:?}"
    );
    let problems = one["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| {
            let p = p.as_str().unwrap();
            p.contains("preds.jsonl:7: not valid UTF-8 at byte")
        }),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.as_str().unwrap().contains("must be a string")),
        "{problems:?}"
    );
    // The top pick is never a candidate that failed to rebuild.
    for top in one["top"].as_array().unwrap() {
        assert!(
            !errs.contains_key(top.as_str().unwrap()),
            "top pick {top} has an error"
        );
    }

    // Issue 2: the CRLF patch lands on the CRLF file; prose and a far hunk fail.
    let two = &outcomes["hostile__repo-2"];
    let errs2 = errors_by_agent(two);
    assert!(!errs2.contains_key("crlf"), "{errs2:?}");
    assert!(errs2["prose"].contains("does not parse"), "{errs2:?}");
    assert!(errs2.contains_key("hunk-past-end"));
    let crlf = two["result"]["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent"] == "crlf")
        .unwrap();
    assert_ne!(crlf["applies"], "no");

    // Lines that name no issue are input problems: torn, noid, deep nesting, binary garbage.
    assert!(
        summary["input_problems"].as_u64().unwrap() >= 4,
        "{}",
        summary["input_problems"]
    );
    assert!(err.contains("input problem"), "{err}");

    // Nothing written outside the run directory; nothing executed.
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "dei wrote into its working directory"
    );
    for p in [
        dir.path().join("escape.py"),
        dir.path().join("../escape.py"),
        dir.path().join("repos/core.py"),
    ] {
        assert!(!p.exists(), "{} was written", p.display());
    }
    assert!(!Path::new("/tmp/dei-hostile-absolute.py").exists());
    assert!(
        !Path::new("/tmp/dei-hostile-executed").exists(),
        "candidate code was executed"
    );
    let repo = repos.join("hostile__repo");
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the repository was modified"
    );
    let mut names: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["journal.jsonl", "lock", "run.json", "summary.json"]);
}

/// With the limit raised, the ~10 MB new file rebuilds and the ~10 MB patch of hunks that
/// match nothing fails on its hunks (not on its size).
#[test]
fn raised_patch_size_limit_rebuilds_the_huge_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let repos = make_repo(dir.path());
    let preds = dir.path().join("preds.jsonl");
    std::fs::write(&preds, huge_records()).unwrap();
    let run_dir = dir.path().join("run");
    let out = dei_cmd()
        .args([
            "rank",
            s(&preds),
            "--tasks",
            s(&hostile().join("tasks.jsonl")),
            "--repos",
            s(&repos),
            "--all",
            "--max-patch-bytes",
            "20000000",
        ])
        .args(["--run-dir", s(&run_dir), "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let one: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(one["instance_id"], "hostile__repo-1");
    let errs = errors_by_agent(&one);
    assert!(!errs.contains_key("huge-new"), "{errs:?}");
    let bad = errs.get("huge-bad").expect("huge-bad fails");
    assert!(!bad.contains("too large"), "{bad}");
    // A limit below the patch sizes, on a fresh run directory: both become size errors.
    let small = dir.path().join("small");
    let out = dei_cmd()
        .args([
            "rank",
            s(&preds),
            "--tasks",
            s(&hostile().join("tasks.jsonl")),
            "--repos",
            s(&repos),
            "--all",
            "--max-patch-bytes",
            "1000",
        ])
        .args(["--run-dir", s(&small), "--no-progress"])
        .output()
        .unwrap();
    assert!(out.status.success(), "run failed: {}", text(&out.stderr));
    let journal = std::fs::read_to_string(small.join("journal.jsonl")).unwrap();
    let one: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    let errs = errors_by_agent(&one);
    for huge in ["huge-new", "huge-bad"] {
        assert!(
            errs.get(huge)
                .is_some_and(|e| e.contains("1000-byte limit")),
            "{errs:?}"
        );
    }
    // Resuming the first directory with another limit is refused: results would differ.
    let out = dei_cmd()
        .args([
            "rank",
            s(&preds),
            "--tasks",
            s(&hostile().join("tasks.jsonl")),
            "--repos",
            s(&repos),
            "--all",
        ])
        .args(["--run-dir", s(&run_dir), "--no-progress"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--max-patch-bytes differs"),
        "{}",
        text(&out.stderr)
    );
}
