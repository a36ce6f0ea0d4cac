//! Input that yields nothing, or one bad line: the reason is always said, with `file:line`,
//! by `dei rank`, `dei rank --all` and `dei eval` alike (issue #18, items 3 and 4).

use crate::support::common;
use common::*;
use std::path::{Path, PathBuf};

/// `dei rank FILES` for the bundled example's issue.
fn rank(files: &[&Path]) -> std::process::Output {
    let head: Vec<&str> = std::iter::once("rank")
        .chain(files.iter().map(|p| path_str(p)))
        .collect();
    dei(&example_issue_args(&head, &[]))
}

/// The bundled example's test-only candidate as one JSONL record, with `patch` for its patch.
fn record(agent: &str, patch: &str) -> String {
    serde_json::json!({"instance_id": "example__textkit-1", "agent": agent, "model_patch": patch})
        .to_string()
}

#[test]
fn a_bare_number_json_says_so_and_not_instance_id() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.json");
    std::fs::write(&p, "42").unwrap();
    let out = rank(&[&p]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: expected a list of predictions or an {{instance_id: prediction}} map, found a number",
            p.display()
        )),
        "{err}"
    );
    assert!(!err.contains("need \"instance_id\""), "{err}");
}

#[test]
fn a_non_utf8_jsonl_names_its_line_and_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.jsonl");
    let mut bytes = record("a", "caf").into_bytes();
    // Replace the closing quote of the patch by a Latin-1 byte run: `caf\xe9"}`.
    bytes.truncate(bytes.len() - 2);
    bytes.extend_from_slice(b"\xe9\"}\n");
    let byte = bytes.iter().position(|&b| b == 0xe9).unwrap() + 1;
    std::fs::write(&p, &bytes).unwrap();
    let out = rank(&[&p]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:1: not valid UTF-8 at byte {byte}; fix or delete this line",
            p.display()
        )),
        "{err}"
    );
    assert!(!err.contains("need \"instance_id\""), "{err}");
}

#[test]
fn an_unreadable_file_says_why() {
    let dir = tempfile::tempdir().unwrap();
    // A link to nothing inside a candidates folder: found, but it cannot be read.
    let folder = dir.path().join("cands");
    std::fs::create_dir_all(&folder).unwrap();
    let link = folder.join("gone.jsonl");
    std::os::unix::fs::symlink(dir.path().join("missing.jsonl"), &link).unwrap();
    let out = rank(&[&folder]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: cannot read predictions file: No such file or directory",
            link.display()
        )),
        "{err}"
    );
    // A file without read permission (only meaningful when permissions are enforced).
    use std::os::unix::fs::PermissionsExt;
    let locked = dir.path().join("locked.jsonl");
    std::fs::write(&locked, record("a", "") + "\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        skip("chmod 000 does not stop this user (root) from reading; the dangling link above covers unreadable files");
        return;
    }
    let out = rank(&[&locked]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: cannot read predictions file: Permission denied",
            locked.display()
        )),
        "{err}"
    );
}

#[test]
fn records_for_other_issues_get_the_instance_id_hint() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.jsonl");
    std::fs::write(
        &p,
        record("a", "x").replace("example__textkit-1", "example__textkit-2") + "\n",
    )
    .unwrap();
    let out = rank(&[&p]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("1 candidate(s) were found, all for other issues (example__textkit-2)")
            && err.contains("need \"instance_id\": \"example__textkit-1\""),
        "{err}"
    );
}

#[test]
fn many_problems_are_listed_up_to_ten() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.jsonl");
    // One usable record (for another issue), so the file is read as predictions.
    let other = record("a", "x").replace("example__textkit-1", "example__textkit-2");
    std::fs::write(
        &p,
        "{\"instance_id\": \"example__textkit-1\"}\n".repeat(12) + &other + "\n",
    )
    .unwrap();
    let out = rank(&[&p]);
    assert!(!out.status.success());
    let err = stderr(&out);
    for line in 1..=10 {
        assert!(
            err.contains(&format!(
                "{}:{line}: missing field `model_patch`",
                p.display()
            )),
            "line {line}: {err}"
        );
    }
    assert!(!err.contains(&format!("{}:11:", p.display())), "{err}");
    assert!(err.contains("… and 2 more problems"), "{err}");
}

/// One non-UTF-8 line among good ones: that line is dropped with its `file:line`, the rest
/// ranked, by `dei rank` and by `dei rank --all` alike.
#[test]
fn one_non_utf8_line_drops_that_line_only() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.jsonl");
    let good = std::fs::read_to_string(
        root().join("examples/candidates/careful-agent/example__textkit-1.diff"),
    )
    .unwrap();
    let mut bytes = (record("first", &good) + "\n").into_bytes();
    bytes.extend_from_slice(b"{\"instance_id\": \"example__textkit-1\", \"agent\": \"latin\", \"model_patch\": \"caf\xe9\"}\n");
    bytes.extend_from_slice((record("third", &good) + "\n").as_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let want = format!(
        "{}:2: not valid UTF-8 at byte 76; fix or delete this line",
        p.display()
    );

    let out = rank(&[&p]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("first") && text.contains("third"), "{text}");
    assert!(!text.contains("latin"), "{text}");
    assert!(text.contains(&want), "{text}");

    let run_dir = dir.path().join("run");
    let repo = example_repo();
    let out = dei(&[
        "rank",
        path_str(&p),
        "--tasks",
        "examples/tasks.jsonl",
        "--all",
        "--run-dir",
        path_str(&run_dir),
        "--repo",
        path_str(&repo),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
    assert_eq!(line["candidates"], 2, "{line}");
    let problems: Vec<&str> = line["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(problems, [want.as_str()]);
}

#[test]
fn rank_all_and_eval_say_why_nothing_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("preds.json");
    std::fs::write(&p, "42").unwrap();
    let why = format!(
        "{}: expected a list of predictions or an {{instance_id: prediction}} map, found a number",
        p.display()
    );
    let out = dei(&[
        "rank",
        path_str(&p),
        "--tasks",
        "examples/tasks.jsonl",
        "--all",
        "--run-dir",
        path_str(&dir.path().join("run")),
    ]);
    assert!(!out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&why), "{err}");
    assert!(err.contains("no candidates found in"), "{err}");

    let labels = dir.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"instance_id\": \"example__textkit-1\", \"agent\": \"a\", \"resolved\": true}\n",
    )
    .unwrap();
    let out = dei(&["eval", path_str(&p), "--labels", path_str(&labels)]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no candidates could be read") && err.contains(&why),
        "{err}"
    );
}

/// Labels are strict (a bad label changes the figures): a non-UTF-8 byte is an error that
/// names the file, line and byte.
#[test]
fn a_non_utf8_label_line_is_an_error_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let labels: PathBuf = dir.path().join("labels.jsonl");
    let mut bytes =
        b"{\"instance_id\": \"example__textkit-1\", \"agent\": \"a\", \"resolved\": true}\n"
            .to_vec();
    bytes
        .extend_from_slice(b"{\"instance_id\": \"x\xff\", \"agent\": \"a\", \"resolved\": true}\n");
    std::fs::write(&labels, bytes).unwrap();
    let out = dei(&["eval", "--labels", path_str(&labels)]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: line 2: not valid UTF-8 at byte 19; fix or delete this line",
            labels.display()
        )),
        "{err}"
    );
}
