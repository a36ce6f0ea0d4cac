//! Resumable runs: kill -9 in the middle, a torn journal line, Ctrl-C-style stop, the lock,
//! and finished issues never reaching the committee again.

use crate::support::scale_util;

use dei::model::task::Selection;
use dei::model::Review;
use dei::rank::run::RunRequest;
use dei::review::offline::Offline;
use dei::review::{Committee, IssueBundle};
use scale_util::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn kill_9_mid_run_then_resume_recomputes_only_the_missing_issues() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 240, 6, 40);
    let run_dir = dir.path().join("run");
    let args = rank_args(&sy, &run_dir, &["--all"]);

    let mut child = dei_cmd()
        .args(&args)
        .env("RAYON_NUM_THREADS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if journal_ids(&run_dir).len() >= 5 {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run finished ({status}) before it could be killed; make the corpus bigger");
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no journal lines after 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before_bytes = std::fs::read(run_dir.join("journal.jsonl")).unwrap();
    let before = journal_ids(&run_dir);
    assert!(
        before.len() < sy.ids.len(),
        "killed after every issue finished"
    );
    let valid_prefix = before_bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);

    let out = run(&args);
    assert!(out.status.success(), "resume failed: {}", text(&out.stderr));
    let err = text(&out.stderr);
    let want = format!(
        "{} issues run now, {} already",
        sy.ids.len() - before.len(),
        before.len()
    );
    assert!(err.contains(&want), "expected `{want}` in: {err}");
    let after_bytes = std::fs::read(run_dir.join("journal.jsonl")).unwrap();
    assert_eq!(
        &after_bytes[..valid_prefix],
        &before_bytes[..valid_prefix],
        "finished lines were rewritten"
    );
    let after = journal_ids(&run_dir);
    assert_eq!(
        after.len(),
        sy.ids.len(),
        "journal gained more or fewer lines than missing issues"
    );
    let unique: BTreeSet<&String> = after.iter().collect();
    assert_eq!(unique.len(), after.len(), "duplicate issues in the journal");
    assert_eq!(unique.into_iter().cloned().collect::<Vec<_>>(), {
        let mut ids = sy.ids.clone();
        ids.sort();
        ids
    });
    // A third run has nothing to do.
    let out = run(&args);
    assert!(
        text(&out.stderr).contains(&format!("0 issues run now, {} already", sy.ids.len())),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(journal_ids(&run_dir).len(), sy.ids.len());
}

#[test]
fn torn_last_line_is_cut_and_its_issue_reruns() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 6, 3, 4);
    let run_dir = dir.path().join("run");
    let args = rank_args(&sy, &run_dir, &["--all"]);
    assert!(run(&args).status.success());
    let full = std::fs::read(run_dir.join("journal.jsonl")).unwrap();
    // Tear the last line in half, as a crash during its write would.
    let last_start = full[..full.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let torn_at = last_start + (full.len() - last_start) / 2;
    std::fs::write(run_dir.join("journal.jsonl"), &full[..torn_at]).unwrap();
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("torn last journal line") && err.contains("1 issues run now, 5 already"),
        "{err}"
    );
    let again = std::fs::read(run_dir.join("journal.jsonl")).unwrap();
    assert_eq!(&again[..last_start], &full[..last_start]);
    assert_eq!(journal_ids(&run_dir).len(), 6);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["ranked"], 6);
    // Agents 0 and 1 agree on the resolved fix and the offline committee should prefer them.
    assert!(summary["top1_resolved"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_second_run_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 3, 2, 3);
    let run_dir = dir.path().join("run");
    let _held = dei::rank::run::journal::RunLock::acquire(&run_dir).unwrap();
    let out = run(&rank_args(&sy, &run_dir, &["--all"]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("is in use by another dei run")
            && err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    assert!(!run_dir.join("journal.jsonl").exists() || journal_ids(&run_dir).is_empty());
}

#[test]
fn a_different_command_on_an_existing_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 3, 2, 3);
    let run_dir = dir.path().join("run");
    assert!(run(&rank_args(&sy, &run_dir, &["--all"])).status.success());
    let out = run(&rank_args(&sy, &run_dir, &["--all", "--strict"]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("holds results of a different run (--strict differs"),
        "{}",
        text(&out.stderr)
    );
    // Evidence from running the candidates changes the results too (refused before anything
    // runs, so no Python is needed).
    let out = run(&rank_args(&sy, &run_dir, &["--all", "--exec"]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("(--exec differs: `off` vs `on: timeout 180s, repro 60s`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_run_resumes_after_its_inputs_move_and_refuses_inputs_whose_content_changed() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 6, 3, 3);
    let run_dir = dir.path().join("run");
    assert!(run(&rank_args(&sy, &run_dir, &["--all"])).status.success());
    let journal = std::fs::read(run_dir.join("journal.jsonl")).unwrap();

    // Moved: the same contents elsewhere resume the run, with nothing to redo.
    let moved = copied_to(&sy, &dir.path().join("moved"));
    let out = run(&rank_args(&moved, &run_dir, &["--all"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("0 issues run now, 6 already"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(run_dir.join("journal.jsonl")).unwrap(),
        journal
    );

    // Edited without changing its size: one patch's `abs(x)` becomes `abs(y)`. Compared by
    // path and size, this resumed over results of the old patch.
    let preds = std::fs::read_to_string(&moved.preds).unwrap();
    let edited = preds.replacen("abs(x)", "abs(y)", 1);
    assert_ne!(edited, preds);
    assert_eq!(edited.len(), preds.len());
    std::fs::write(&moved.preds, &edited).unwrap();
    let out = run(&rank_args(&moved, &run_dir, &["--all"]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("holds results of a different run (candidates differ in content: ")
            && err.contains("preds.jsonl not what the run began with")
            && !err.contains("--exec-cache"),
        "{err}"
    );
    // A run that kept sandbox runs is told how the new run reuses them.
    std::fs::create_dir(run_dir.join("exec")).unwrap();
    let err = text(&run(&rank_args(&moved, &run_dir, &["--all"])).stderr);
    assert!(
        err.contains(&format!(
            "pick a new --run-dir; with --exec, add `--exec-cache {}` to reuse the sandbox runs kept here",
            run_dir.join("exec").display()
        )),
        "{err}"
    );
    std::fs::remove_dir(run_dir.join("exec")).unwrap();

    // The tasks file edited in place: its path alone was compared before.
    std::fs::write(&moved.preds, &preds).unwrap();
    let tasks = std::fs::read_to_string(&moved.tasks).unwrap();
    std::fs::write(
        &moved.tasks,
        tasks.replacen("wrong value", "wrong result", 1),
    )
    .unwrap();
    let out = run(&rank_args(&moved, &run_dir, &["--all"]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("tasks file differs in content: ") && err.contains("tasks.jsonl is not"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(run_dir.join("journal.jsonl")).unwrap(),
        journal
    );
}

/// A run that stopped on a bad input before finishing any issue holds no results: the
/// corrected command takes the directory over instead of being told it is another run's.
#[test]
fn a_run_that_finished_nothing_is_taken_over_by_the_corrected_command() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 3, 2, 3);
    let run_dir = dir.path().join("run");
    let typo = Synth {
        repo: sy.repo.clone(),
        tasks: dir.path().join("taks.jsonl"),
        preds: sy.preds.clone(),
        ids: sy.ids.clone(),
    };
    let out = run(&rank_args(&typo, &run_dir, &["--all"]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot read tasks file"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        run_dir.join("run.json").exists(),
        "the failed run wrote its manifest"
    );
    let out = run(&rank_args(&sy, &run_dir, &["--all"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(journal_ids(&run_dir).len(), 3);
    // Once it holds results, other inputs are refused again.
    let out = run(&rank_args(&typo, &run_dir, &["--all"]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("holds results of a different run (tasks file differs"),
        "{}",
        text(&out.stderr)
    );
}

/// A run kept inside the folder of its candidates: its files are results, not candidates, and
/// the run resumes over them.
#[test]
fn a_run_directory_inside_the_candidates_folder_is_not_read_as_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 4, 3, 3);
    let cands = dir.path().join("cands");
    std::fs::create_dir(&cands).unwrap();
    std::fs::copy(&sy.preds, cands.join("agents.jsonl")).unwrap();
    let inside = Synth {
        repo: sy.repo.clone(),
        tasks: sy.tasks.clone(),
        preds: cands.clone(),
        ids: sy.ids.clone(),
    };
    let run_dir = cands.join("run");
    let first = run(&rank_args(&inside, &run_dir, &["--all"]));
    assert!(first.status.success(), "{}", text(&first.stderr));
    let again = run(&rank_args(&inside, &run_dir, &["--all"]));
    assert!(again.status.success(), "{}", text(&again.stderr));
    for out in [&first, &again] {
        let err = text(&out.stderr);
        assert!(!err.contains("input problem"), "{err}");
    }
    assert!(
        text(&again.stderr).contains("0 issues run now, 4 already"),
        "{}",
        text(&again.stderr)
    );
}

/// Counts committee calls per issue, and raises `stop` after `stop_after` calls.
struct Counting {
    inner: Offline,
    calls: Mutex<BTreeMap<String, usize>>,
    stop: Arc<AtomicBool>,
    stop_after: usize,
}

impl Committee for Counting {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn review(&self, bundle: &IssueBundle) -> anyhow::Result<Vec<Review>> {
        let mut calls = self.calls.lock().unwrap();
        *calls.entry(bundle.task.instance_id.clone()).or_default() += 1;
        if calls.values().sum::<usize>() >= self.stop_after {
            self.stop.store(true, Ordering::SeqCst);
        }
        drop(calls);
        self.inner.review(bundle)
    }
}

#[test]
fn stopped_run_resumes_without_repeating_a_committee_call() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 30, 4, 5);
    let stop = Arc::new(AtomicBool::new(false));
    let req = RunRequest {
        candidates: vec![sy.preds.clone()],
        naming: Default::default(),
        tasks: sy.tasks.clone(),
        selection: Selection::All,
        repo: Some(sy.repo.clone()),
        repos: None,
        strict: false,
        context_tokens: 2000,
        max_patch_bytes: dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES,
        run_dir: dir.path().join("run"),
        shard: None,
        retry_errors: false,
        stop: Some(stop.clone()),
        relocator: None,
        exec: None,
    };
    let first = Counting {
        inner: Offline::default(),
        calls: Mutex::default(),
        stop: stop.clone(),
        stop_after: 7,
    };
    let report = dei::rank::run::run(&req, &first).unwrap();
    assert!(
        report.interrupted,
        "the stop flag should have stopped the run"
    );
    let first_calls = first.calls.into_inner().unwrap();
    assert_eq!(report.ran, first_calls.len());
    assert!(first_calls.values().all(|&n| n == 1));
    assert!(
        first_calls.len() >= 7 && first_calls.len() < 30,
        "{}",
        first_calls.len()
    );

    let never = Arc::new(AtomicBool::new(false));
    let second = Counting {
        inner: Offline::default(),
        calls: Mutex::default(),
        stop: never.clone(),
        stop_after: usize::MAX,
    };
    let report = dei::rank::run::run(
        &RunRequest {
            stop: Some(never),
            relocator: None,
            exec: None,
            ..req
        },
        &second,
    )
    .unwrap();
    assert!(!report.interrupted);
    let second_calls = second.calls.into_inner().unwrap();
    assert_eq!(report.skipped, first_calls.len());
    assert_eq!(second_calls.len() + first_calls.len(), 30);
    for id in second_calls.keys() {
        assert!(!first_calls.contains_key(id), "{id} was reviewed twice");
    }
    assert_eq!(report.summary.ranked, 30);
}

#[test]
fn ctrl_c_finishes_in_flight_issues_and_leaves_a_clean_journal() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 240, 6, 40);
    let run_dir = dir.path().join("run");
    let args = rank_args(&sy, &run_dir, &["--all"]);
    let child = dei_cmd()
        .args(&args)
        .env("RAYON_NUM_THREADS", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while journal_ids(&run_dir).len() < 5 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no journal lines after 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    crate::support::common::send_signal(child.id(), "INT");
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(130),
        "an interrupted run exits 130, as a shell reports Ctrl-C: {err}"
    );
    assert!(
        err.contains("interrupted") && err.contains("rerun the same command to resume"),
        "{err}"
    );
    let journal = std::fs::read(run_dir.join("journal.jsonl")).unwrap();
    assert_eq!(
        journal.last(),
        Some(&b'\n'),
        "journal ends in a torn line after Ctrl-C"
    );
    let done = journal_ids(&run_dir);
    assert!(done.len() < sy.ids.len());
    let out = run(&args);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("{} already", done.len())),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(journal_ids(&run_dir).len(), sy.ids.len());
}
