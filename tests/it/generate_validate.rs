//! Test-command validation in a throwaway copy of the example repository.

use crate::support::common;

use dei::exec::sandbox::materialize;
use dei::generate::edit::FileEdit;
use dei::generate::validate::{run_command, Validator, Verdict};
use std::process::Command;
use std::time::Duration;

const BASE: &str = "f63f25d43ac69806ecd91a0971c38da78fc72775";

/// A test command for the example repo: pytest when importable, else plain python.
pub fn test_command() -> Option<String> {
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
fn materialize_writes_the_base_tree() {
    let repo = common::example_repo();
    let dir = tempfile::tempdir().unwrap();
    materialize(&repo, BASE, dir.path(), &Default::default()).unwrap();
    let words = std::fs::read_to_string(dir.path().join("textkit/words.py")).unwrap();
    assert!(words.contains("def word_count(text):"));
    assert!(materialize(
        &repo,
        "0000000000000000000000000000000000000bad",
        dir.path(),
        &Default::default()
    )
    .is_err());
    // A path written on top of the tree is not read from git (a blob a mirror lacks).
    let skipped = tempfile::tempdir().unwrap();
    let skip = ["textkit/words.py"].into_iter().collect();
    materialize(&repo, BASE, skipped.path(), &skip).unwrap();
    assert!(!skipped.path().join("textkit/words.py").exists());
    assert!(skipped.path().join("textkit").is_dir());
}

#[test]
fn timeout_kills_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_command(dir.path(), "sleep 5", Duration::from_millis(300)).unwrap();
    assert!(run.timed_out && !run.passed);
    assert!(run.seconds < 4.0, "{}", run.seconds);
    let ok = run_command(dir.path(), "echo hello; exit 0", Duration::from_secs(10)).unwrap();
    assert!(ok.passed && ok.output.contains("hello"));
}

#[test]
fn drops_a_candidate_that_breaks_a_passing_test() {
    let Some(cmd) = test_command() else {
        common::skip("python3 is not available to run the example's tests");
        return;
    };
    let repo = common::example_repo();
    let v = Validator::new(&repo, BASE, &cmd, Duration::from_secs(60));
    let base = v.baseline().unwrap();
    assert!(
        base.passed,
        "example tests should pass on the base commit: {}",
        base.output
    );
    let before =
        std::fs::read_to_string(common::root().join("examples/textkit/textkit/words.py")).unwrap();
    let good = before.replace(
        "    if not text:\n        return 0\n    return len(text.split(\" \"))",
        "    return len(text.split())",
    );
    assert_ne!(good, before);
    let bad = before.replace(
        "return len(text.split(\" \"))",
        "return len(text.split(\" \")) + 1",
    );
    let fe = |after: String| {
        vec![FileEdit {
            path: "textkit/words.py".into(),
            before: Some(before.clone()),
            after,
        }]
    };
    assert!(matches!(v.check(&fe(good)).unwrap(), Verdict::Keep(_)));
    match v.check(&fe(bad)).unwrap() {
        Verdict::Breaks(run) => assert!(
            run.output.contains("AssertionError") || run.output.contains("assert"),
            "{}",
            run.output
        ),
        other => panic!("expected the breaking candidate to be dropped, got {other:?}"),
    }
}

#[test]
fn the_test_command_runs_sandboxed() {
    use dei::exec::sandbox::{Backend, Job, LocalBackend};
    let probe = LocalBackend::default()
        .run_in(
            tempfile::tempdir().unwrap().path(),
            &Job {
                command: "true".into(),
                ..Job::default()
            },
        )
        .unwrap();
    if !probe.isolation.writes_confined {
        common::skip(&format!(
            "writes cannot be confined here: {:?}",
            probe.isolation.missing
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let evil = outside.path().join("evil");
    let run = run_command(
        dir.path(),
        &format!("echo inside > ok.txt && echo x > '{}'", evil.display()),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(!evil.exists(), "the test command wrote outside its folder");
    assert!(
        !run.passed && dir.path().join("ok.txt").exists(),
        "{}",
        run.output
    );
}
