//! kill -9 in the middle of a multi-issue run with the LLM committee, then resume: no call
//! that finished before the kill is sent again, every planned call is made, and the journal
//! ends with every issue exactly once. Calls are counted on the mock server.

use crate::support::llm_mock;
use crate::support::scale_util;

use llm_mock::Mock;
use scale_util::*;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const ISSUES: usize = 12;

fn llm_args(sy: &Synth, run_dir: &Path, mock: &Mock, cache: &Path) -> Vec<String> {
    rank_args(
        sy,
        run_dir,
        &[
            "--all",
            "--llm",
            "openai-compatible:m",
            "--base-url",
            &mock.openai_base(),
            "--samples",
            "3",
            "--concurrency",
            "3",
            "--cache",
            s(cache),
            "--no-progress",
        ],
    )
}

/// Text found in every prompt of one issue and in no other issue's: its own issue statement.
/// (The module name alone is not enough: contexts also show code the issue points to, which
/// may sit in another issue's module, and `mod_1` is a prefix of `mod_10`.)
fn module_of(id: &str) -> String {
    format!(
        " in pkg/mod_{}.py returns the wrong value",
        id.rsplit('-').next().unwrap_or("")
    )
}

/// Complete entries in the response cache (`<dir>/<2 hex>/<key>.json`).
fn cache_entries(dir: &Path) -> usize {
    let Ok(subs) = std::fs::read_dir(dir) else {
        return 0;
    };
    subs.flatten()
        .filter_map(|d| std::fs::read_dir(d.path()).ok())
        .flat_map(|f| f.flatten())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count()
}

fn wait_for(what: &str, secs: u64, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(secs), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killed_multi_issue_llm_run_resumes_without_repeating_finished_calls() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), ISSUES, 4, 3);

    // Reference: the same run, uninterrupted, on a mock of its own: the calls it plans.
    let ref_mock = Mock::start(Duration::from_millis(0));
    let out = run(&llm_args(
        &sy,
        &dir.path().join("ref-run"),
        &ref_mock,
        &dir.path().join("ref-cache"),
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let planned: BTreeSet<String> = ref_mock.finished().into_iter().collect();
    assert!(
        planned.len() >= 2 * ISSUES,
        "the reference run made only {} distinct calls",
        planned.len()
    );

    let partial = |journal: &[String], finished: &[String]| {
        finished
            .iter()
            .any(|b| !journal.iter().any(|id| b.contains(&module_of(id))))
    };
    // The run to kill: replies take 100 ms, so it is still running when issues land. The
    // scenario needs a kill with an issue partly reviewed; replies already on their way when
    // the gate closes can still complete that issue first, so on a busy machine it is set up
    // again (a fresh mock, run directory and cache), at most three times.
    let mut setup = None;
    for attempt in 0..3 {
        let mock = Mock::start(Duration::from_millis(100));
        let run_dir = dir.path().join(format!("run-{attempt}"));
        let cache = dir.path().join(format!("cache-{attempt}"));
        let args = llm_args(&sy, &run_dir, &mock, &cache);
        let mut child = dei_cmd()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill once some issues are done and some calls of unfinished issues are done too.
        wait_for(
            "issues in the journal and a partly reviewed issue",
            60,
            || {
                let j = journal_ids(&run_dir);
                j.len() >= 2 && partial(&j, &mock.finished())
            },
        );
        // Close the gate: replies not yet released are held, so nothing more finishes.
        let released = mock.state.lock().unwrap().released;
        mock.gate.store(released, Ordering::SeqCst);
        wait_for("calls held at the gate", 30, || mock.held() > 0);
        // Let the client store what did finish (one cache file per reply), then kill -9
        // (SIGKILL) with calls in flight.
        let finished: HashSet<String> = mock.finished().into_iter().collect();
        wait_for("finished replies in the cache", 30, || {
            cache_entries(&cache) >= finished.len()
        });
        std::thread::sleep(Duration::from_millis(100));
        let in_flight = mock.held() > 0;
        child.kill().unwrap();
        child.wait().unwrap();
        let at_kill = journal_ids(&run_dir);
        let first: Vec<String> = mock.finished();
        let seen_first = mock.seen().len();
        if in_flight
            && (2..ISSUES).contains(&at_kill.len())
            && partial(&at_kill, &first)
            && seen_first > first.len()
        {
            setup = Some((mock, run_dir, args, at_kill, first, seen_first));
            break;
        }
        eprintln!(
            "attempt {attempt}: the kill missed the scenario ({} issues in the journal, calls in flight: {in_flight}); setting it up again",
            at_kill.len()
        );
    }
    let (mock, run_dir, args, at_kill, first, seen_first) = setup.expect(
        "three attempts never killed the run with an issue partly reviewed and calls in flight",
    );

    // Resume once every held connection has closed, with the gate open.
    wait_for("held calls to close", 30, || mock.held() == 0);
    mock.gate.store(u64::MAX, Ordering::SeqCst);
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent_again: Vec<String> = mock.seen()[seen_first..]
        .iter()
        .map(|s| s.body.clone())
        .collect();
    let finished_first: HashSet<&String> = first.iter().collect();
    let repeated = sent_again
        .iter()
        .filter(|b| finished_first.contains(b))
        .count();
    assert_eq!(
        repeated, 0,
        "the resume sent {repeated} finished call(s) again"
    );
    // Together the two runs made exactly the planned calls.
    let all: BTreeSet<String> = mock.finished().into_iter().collect();
    assert_eq!(all.len(), planned.len(), "distinct calls made vs planned");
    assert_eq!(all, planned, "the calls made are the planned ones");
    // Issues finished before the kill were not reviewed again: none of their prompts was resent.
    for id in &at_kill {
        let module = module_of(id);
        assert!(
            !sent_again.iter().any(|b| b.contains(&module)),
            "{id} was finished before the kill but reviewed again"
        );
    }

    // The final journal holds every issue exactly once, each ranked by the LLM committee.
    let ids = journal_ids(&run_dir);
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "an issue is in the journal twice"
    );
    let want: BTreeSet<&String> = sy.ids.iter().collect();
    assert_eq!(distinct, want);
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    for line in journal.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["error_kind"].is_null(), "{v}");
        assert!(v["result"]["committee"]
            .as_str()
            .unwrap()
            .starts_with("llm-"));
    }

    // A third run is all skips: no call at all.
    let n = mock.calls();
    let out = run(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mock.calls(), n);
}

/// A dry run is not finished work: over a run directory it keeps nothing in the journal, and
/// the same command without `--dry-run` reviews every issue (a dry run's journal line made
/// it skip them: "0 issues run now", nothing reviewed, and no pick). A dry-run line that a
/// journal kept before this was so is ranked again too.
#[test]
fn a_dry_run_leaves_nothing_that_a_real_run_would_skip() {
    let dir = tempfile::tempdir().unwrap();
    let sy = make(dir.path(), 3, 3, 3);
    let mock = Mock::start(Duration::from_millis(0));
    let run_dir = dir.path().join("run");
    let cache = dir.path().join("cache");
    let mut dry = llm_args(&sy, &run_dir, &mock, &cache);
    dry.push("--dry-run".into());
    let out = run(&dry);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mock.calls(), 0, "a dry run sends nothing");
    assert!(
        journal_ids(&run_dir).is_empty(),
        "a dry run journals nothing"
    );
    let table = text(&out.stdout);
    assert!(table.contains("3 issue(s) dry run"), "{table}");
    assert!(table.contains("0 of 3 issues finished"), "{table}");
    assert!(!table.contains("not ranked:"), "{table}");

    let real = llm_args(&sy, &run_dir, &mock, &cache);
    let out = run(&real);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(mock.calls() > 0, "the real run reviews");
    let ids: BTreeSet<String> = journal_ids(&run_dir).into_iter().collect();
    assert_eq!(ids, sy.ids.iter().cloned().collect::<BTreeSet<_>>());

    // A journal written by an older build kept a dry run's line: that issue is ranked again.
    let journal = run_dir.join("journal.jsonl");
    let text_now = std::fs::read_to_string(&journal).unwrap();
    let first = text_now.lines().next().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(first).unwrap();
    let id = v["instance_id"].as_str().unwrap().to_string();
    v["result"]["status"] = "dry_run".into();
    let rest: Vec<&str> = text_now.lines().skip(1).collect();
    std::fs::write(&journal, format!("{v}\n{}\n", rest.join("\n"))).unwrap();
    let before = mock.calls();
    let out = run(&real);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("1 issues run now")
            || text(&out.stdout).contains("1 issues run now"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // Its replies come from the response cache: no call is sent again.
    assert_eq!(mock.calls(), before);
    let last: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["instance_id"], id.as_str());
    assert_eq!(last["result"]["status"], "ranked");
}
