//! Execution evidence that needs no sandbox, measured on the real data: how many SWE-bench Lite
//! issues yield a reproduction script that compiles as Python (checked with the machine's
//! python3), and how many Lite instances with a bundled repository get regression test files
//! from the candidates' patches. Skips (saying so) when ../shared/data (or DEI_DATA), python3
//! or the repositories are absent. The figures are printed (`-- --nocapture`) and recorded in
//! docs/execution.md.

use crate::support::common;
use common::*;
use dei::exec::{regress, repro};
use dei::localize::search::FileIndex;
use dei::model::repo::Snapshot;
use dei::patch::{self, Mode};
use std::collections::BTreeMap;

/// What this test may read of a Lite record: the issue only. `patch`, `test_patch`,
/// `FAIL_TO_PASS`, `PASS_TO_PASS` and `hints_text` are never deserialized.
#[derive(serde::Deserialize)]
struct Issue {
    instance_id: String,
    repo: String,
    base_commit: String,
    problem_statement: String,
}

fn issues(data: &std::path::Path) -> Vec<Issue> {
    let text = std::fs::read_to_string(data.join("swebench_lite/test.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `Some(Ok)` when python3 compiles the file (which also refuses a `return` outside a
/// function, unlike a parse), `Some(Err(last line of its error))` when not, `None` without
/// python3.
fn python3_compiles(path: &std::path::Path) -> Option<Result<(), String>> {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')")
        .arg(path)
        .output()
        .ok()?;
    if out.status.success() {
        return Some(Ok(()));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Some(Err(err.lines().last().unwrap_or("").to_string()))
}

#[test]
fn reproduction_scripts_from_lite_issues_compile() {
    let Some(data) = shared_data() else {
        return skip("needs ../shared/data (or DEI_DATA)");
    };
    if python3_compiles(std::path::Path::new("/dev/null")).is_none() {
        return skip("needs python3 on PATH");
    }
    let issues = issues(&data);
    assert_eq!(issues.len(), 300);
    let dir = tempfile::tempdir().unwrap();
    let keep = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("repro-uncompiled");
    let _ = std::fs::remove_dir_all(&keep);
    // repo → (issues, with a script, script compiles)
    let mut per_repo: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut names_of: BTreeMap<String, repro::RepoNames> = BTreeMap::new();
    let mut bad = Vec::new();
    let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
    // Scripts whose code defines tests, which they run with pytest.
    let mut with_pytest: Vec<String> = Vec::new();
    // Scripts that build the Sphinx project the issue shows.
    let mut sphinx_builds: Vec<String> = Vec::new();
    // Scripts that run pylint as the issue does.
    let mut pylint_runs: Vec<String> = Vec::new();
    for (k, t) in issues.iter().enumerate() {
        let names = names_of.entry(t.repo.clone()).or_insert_with(|| {
            real_repo(&t.repo)
                .and_then(|r| Snapshot::open(&r, &t.base_commit).ok())
                .and_then(|s| FileIndex::from_snapshot(&s).ok())
                .map(|f| repro::RepoNames::from_repo(&f))
                .unwrap_or_else(|| {
                    // Without the repository at hand, Sphinx's and pylint's own packages are
                    // still known, so their issues' projects and commands run as they do in a
                    // ranking.
                    let mut n = repro::RepoNames::default();
                    for (repo, module) in [
                        ("sphinx-doc/sphinx", "sphinx"),
                        ("pylint-dev/pylint", "pylint"),
                    ] {
                        if t.repo == repo {
                            n.modules.insert(module.into());
                        }
                    }
                    n
                })
        });
        let e = per_repo.entry(t.repo.clone()).or_default();
        e.0 += 1;
        let Some(r) = repro::reproduction(&t.problem_statement, names) else {
            continue;
        };
        let kind = format!("{:?}", r.sources.first().map(|s| s.0));
        *by_source.entry(kind).or_default() += 1;
        if r.script.contains("_dei_pytest.main(") {
            with_pytest.push(t.instance_id.clone());
        }
        if r.script.contains("_dei_build(") {
            sphinx_builds.push(t.instance_id.clone());
        }
        if r.script.contains("_dei_run(") {
            pylint_runs.push(t.instance_id.clone());
        }
        e.1 += 1;
        let path = dir.path().join(format!("{k:03}.py"));
        std::fs::write(&path, &r.script).unwrap();
        match python3_compiles(&path) {
            Some(Ok(())) => e.2 += 1,
            Some(Err(why)) => {
                // Kept for reading: target/tmp/repro-uncompiled/<instance>.py.
                let _ = std::fs::create_dir_all(&keep);
                let _ = std::fs::write(keep.join(format!("{}.py", t.instance_id)), &r.script);
                bad.push(format!("{}: {why}", t.instance_id));
            }
            None => bad.push(format!("{}: python3 did not run", t.instance_id)),
        }
    }
    let (mut n, mut got, mut ok) = (0, 0, 0);
    println!(
        "{:<28} {:>6} {:>7} {:>7}",
        "repository", "issues", "script", "compiles"
    );
    for (repo, (a, b, c)) in &per_repo {
        println!("{repo:<28} {a:>6} {b:>7} {c:>7}");
        n += a;
        got += b;
        ok += c;
    }
    println!("{:<28} {n:>6} {got:>7} {ok:>7}", "all");
    println!("scripts by first source: {by_source:?}");
    println!(
        "scripts running the tests they define with pytest: {} {with_pytest:?}",
        with_pytest.len()
    );
    println!(
        "scripts building the issue's Sphinx project: {} {sphinx_builds:?}",
        sphinx_builds.len()
    );
    println!(
        "scripts running the issue's pylint command: {} {pylint_runs:?}",
        pylint_runs.len()
    );
    println!("scripts that do not compile:");
    for b in &bad {
        println!("  {b}");
    }
    // Floors under the measured figures (see docs/execution.md): most issues show code, and
    // what is extracted is Python.
    assert!(got >= 200, "{got} of 300 issues gave a script");
    assert!(ok * 100 >= got * 95, "{ok} of {got} scripts compile");
}

#[test]
fn regression_tests_for_candidates_on_bundled_instances() {
    let Some(data) = shared_data() else {
        return skip("needs ../shared/data (or DEI_DATA)");
    };
    let issues = issues(&data);
    let loaded = dei::candidates::load(&[data.join("lite_candidates.jsonl")]).unwrap();
    let (mut instances, mut with_tests, mut cands, mut cands_with) = (0, 0, 0, 0);
    let mut cands_with_ids = 0;
    let mut files_hist: BTreeMap<usize, usize> = BTreeMap::new();
    for t in &issues {
        let Some(repo) = real_repo(&t.repo) else {
            continue;
        };
        let snap = Snapshot::open(&repo, &t.base_commit).unwrap();
        let files = FileIndex::from_snapshot(&snap).unwrap();
        instances += 1;
        let mut any = false;
        for c in loaded
            .candidates
            .iter()
            .filter(|c| c.instance_id == t.instance_id && !c.is_empty())
        {
            let needed = patch::paths_needed(c);
            let base = snap.read_all(needed.iter().map(String::as_str)).unwrap();
            let view = patch::rebuild(c, &base, Mode::Tolerant);
            let sel = regress::select_for(
                &files,
                &regress::TestFiles::default(),
                &view,
                regress::MAX_FILES,
            );
            cands += 1;
            *files_hist.entry(sel.len()).or_default() += 1;
            if !sel.is_empty() {
                cands_with += 1;
                any = true;
            }
            if sel.iter().any(|f| !f.tests.is_empty()) {
                cands_with_ids += 1;
            }
            for f in &sel {
                assert!(regress::is_test_file(&f.path), "{}", f.path);
                assert!(f
                    .tests
                    .iter()
                    .all(|id| id.starts_with(&format!("{}::", f.path))));
            }
        }
        if any {
            with_tests += 1;
        }
    }
    if instances == 0 {
        return skip("needs the bundled repositories (../shared/repos) or DEI_REPOS");
    }
    println!("instances with a repository: {instances}; with >= 1 test file for some candidate: {with_tests}");
    println!("non-empty candidates: {cands}; with >= 1 test file: {cands_with}; with >= 1 test id: {cands_with_ids}; files per candidate: {files_hist:?}");
    assert_eq!(instances, 26);
    assert!(with_tests >= 20, "{with_tests} of {instances}");
}
