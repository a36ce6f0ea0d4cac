//! Why a candidate does not apply is shown as it is (too large, unsafe path, missing file,
//! bad diff), in the same words in the table and the JSON; a candidate with nothing to
//! review never outranks an empty patch, nor is it said to edit what the issue names.

use crate::support::common;

use common::*;
use serde_json::Value;
use std::path::Path;

fn write(dir: &Path, rel: &str, bytes: &[u8]) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// One candidate folder per failure, plus an empty patch and a good one.
fn candidates(dir: &Path) {
    let id = "example__textkit-1";
    let good =
        std::fs::read(root().join(format!("examples/candidates/careful-agent/{id}.diff"))).unwrap();
    write(dir, &format!("good/{id}.diff"), &good);
    write(dir, &format!("empty/{id}.diff"), b"");
    // Random bytes, not a diff at all.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    write(dir, &format!("binary-noise/{id}.diff"), &noise);
    // Over the --max-patch-bytes limit below, and it names the issue's file and function.
    let mut big = String::from(
        "--- a/textkit/words.py\n+++ b/textkit/words.py\n@@ -3,3 +3,3 @@ def word_count(text):\n",
    );
    while big.len() < 6000 {
        big.push_str("+# textkit/words.py word_count padding line\n");
    }
    write(dir, &format!("oversize/{id}.diff"), big.as_bytes());
    write(
        dir,
        &format!("escape/{id}.diff"),
        b"--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-a\n+b\n",
    );
    write(
        dir,
        &format!("phantom/{id}.diff"),
        b"--- a/textkit/nothere.py\n+++ b/textkit/nothere.py\n@@ -1 +1 @@\n-a\n+b\n",
    );
}

#[test]
fn each_refusal_shows_its_own_reason_and_never_outranks_an_empty_patch() {
    let dir = tempfile::tempdir().unwrap();
    candidates(dir.path());
    let args = |extra: &[&str]| {
        example_issue_args(
            &["rank", path_str(dir.path())],
            &[&["--max-patch-bytes", "5000"], extra].concat(),
        )
    };
    let out = dei(&args(&["--json", "-"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let by_agent = |a: &str| -> Value {
        v["ranked"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["agent"] == a)
            .unwrap_or_else(|| panic!("no {a} in {v}"))
            .clone()
    };
    let expect = [
        ("oversize", "too large"),
        ("escape", "unsafe path"),
        ("phantom", "missing file"),
        ("binary-noise", "bad diff"),
    ];
    let empty = by_agent("empty")["score"].as_f64().unwrap();
    for (agent, why) in expect {
        let r = by_agent(agent);
        assert_eq!(r["applies"], "no", "{r}");
        assert_eq!(r["apply_failure"], why, "{r}");
        assert!(
            !r["reason"]
                .as_str()
                .unwrap()
                .contains("edits what the issue names"),
            "{r}"
        );
        if agent != "phantom" {
            // Nothing to review: scored by rule, exactly like the empty patch.
            assert_eq!(r["score"].as_f64().unwrap(), empty, "{r}");
            assert_eq!(r["status"], "rule", "{r}");
        }
    }
    assert_eq!(by_agent("good")["applies"], "clean");
    assert_eq!(by_agent("good")["rank"], 1);
    // The table says the same words.
    let table = dei(&args(&[]));
    let text = stdout(&table);
    for (agent, why) in expect {
        let line = text
            .lines()
            .find(|l| l.contains(&format!(" {agent} ")))
            .unwrap_or_else(|| panic!("no {agent} line in {text}"));
        assert!(line.contains(&format!("no: {why}")), "{line}");
    }
    let good = text.lines().find(|l| l.contains(" good ")).unwrap();
    assert!(good.contains(" clean "), "{good}");
    assert!(!text.contains(" yes "), "{text}");
}

#[test]
fn offline_reasons_are_sentences_without_unexplained_numbers() {
    let out = dei(&example_rank_args(&["--json", "-"]));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for r in v["ranked"].as_array().unwrap() {
        let reason = r["reason"].as_str().unwrap();
        assert!(!reason.contains("(s)"), "{reason}");
        assert!(!reason.contains("support "), "{reason}");
        assert!(!reason.contains("as 0 other"), "{reason}");
    }
    // The table's reasons are the JSON's, word for word (a file gets them in full).
    let table = stdout(&dei(&example_rank_args(&[])));
    for r in v["ranked"].as_array().unwrap() {
        assert!(table.contains(r["reason"].as_str().unwrap()), "{table}");
    }
}

#[test]
fn long_agent_names_stay_apart_in_a_narrow_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let id = "example__textkit-1";
    let good =
        std::fs::read(root().join(format!("examples/candidates/careful-agent/{id}.diff"))).unwrap();
    for run in ["acr-run-1", "acr-run-2", "acr-val-only"] {
        write(
            dir.path(),
            &format!("gpt-4-0125-preview@acr-v20240408_{run}/{id}.diff"),
            &good,
        );
    }
    let out = dei_command()
        .args(example_issue_args(&["rank", path_str(dir.path())], &[]))
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = stdout(&out);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("gpt-4") && !l.starts_with("pick:"))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    for (row, run) in rows.iter().zip(["run-1", "run-2", "val-only"]) {
        assert!(row.contains(run), "{text}");
        assert!(row.chars().count() <= 80, "{row}");
    }
}

/// A broken diff is named for what is broken, in the default (tolerant) mode and with
/// `--strict` alike: a hunk whose counts or lines are corrupt is `bad diff`, names that disagree
/// are `bad header`, `unsafe path` is kept for paths leaving the repository, and a hunk whose
/// context is not in the file stays `conflicts`.
#[test]
fn a_broken_diff_is_named_for_its_cause_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let id = "example__textkit-1";
    let fix_body = " \n def word_count(text):\n     \"\"\"Return the number of words in ``text``.\"\"\"\n-    if not text:\n-        return 0\n-    return len(text.split(\" \"))\n+    return len(text.split())\n \n \n def capitalize_words(text):\n";
    let head = "--- a/textkit/words.py\n+++ b/textkit/words.py\n";
    // Counts far past the body: the hunk swallows lines that are not in the file.
    let mut counts = format!("{head}@@ -3,40 +3,38 @@\n{fix_body}");
    for k in 0..6 {
        counts.push_str(&format!(" not in the file {k}\n"));
    }
    write(
        dir.path(),
        &format!("bad-counts/{id}.diff"),
        counts.as_bytes(),
    );
    // A line that is neither context, `+` nor `-` in the middle of a hunk.
    let malformed = format!(
        "{head}@@ -3,9 +3,7 @@\n{}",
        fix_body.replace(
            "-    if not text:\n",
            "-    if not text:\n\tnot a diff line\n"
        )
    );
    write(
        dir.path(),
        &format!("malformed/{id}.diff"),
        malformed.as_bytes(),
    );
    // The second file's `+++` names another file than its `diff --git` header.
    write(
        dir.path(),
        &format!("renamed-header/{id}.diff"),
        b"diff --git a/textkit/x.py b/textkit/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/textkit/x.py\n@@ -0,0 +1 @@\n+x = 1\ndiff --git a/textkit/z.py b/textkit/z.py\nnew file mode 100644\n--- /dev/null\n+++ b/textkit/x.py\n@@ -0,0 +1 @@\n+y = 2\n",
    );
    // No name at all after `b/`.
    write(
        dir.path(),
        &format!("nameless/{id}.diff"),
        b"diff --git a/textkit/x.py b/textkit/x.py\nnew file mode 100644\n--- /dev/null\n+++ b/\n@@ -0,0 +1 @@\n+x = 1\n",
    );
    write(
        dir.path(),
        &format!("escape/{id}.diff"),
        b"--- a/../outside.py\n+++ b/../outside.py\n@@ -1 +1 @@\n-a\n+b\n",
    );
    // Well formed, but its context is not in the file.
    write(
        dir.path(),
        &format!("conflict/{id}.diff"),
        format!("{head}@@ -3,9 +3,7 @@\n{}", fix_body.replace("text", "txt")).as_bytes(),
    );
    let expect = [
        ("bad-counts", "bad diff"),
        ("malformed", "bad diff"),
        ("renamed-header", "bad header"),
        ("nameless", "bad header"),
        ("escape", "unsafe path"),
        ("conflict", "conflicts"),
    ];
    for mode in [&[][..], &["--strict"][..]] {
        let args = example_issue_args(&["rank", path_str(dir.path())], mode);
        let out = dei(&[&args[..], &["--json".into(), "-".into()]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let table = stdout(&dei(&args));
        for (agent, why) in expect {
            let r = v["ranked"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["agent"] == agent)
                .unwrap_or_else(|| panic!("no {agent} in {v}"));
            assert_eq!(r["applies"], "no", "{mode:?} {r}");
            assert_eq!(r["apply_failure"], why, "{mode:?} {r}");
            let line = table
                .lines()
                .find(|l| l.contains(&format!(" {agent} ")))
                .unwrap_or_else(|| panic!("no {agent} line in {table}"));
            assert!(line.contains(&format!("no: {why}")), "{mode:?} {line}");
        }
    }
}
