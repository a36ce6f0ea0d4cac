//! Tests of gathering an issue's evidence.

use super::reading::{
    describe, imports_module, missing_extra, missing_package, only_name_errors, repro_change,
    settle_repro, Quoted,
};
use super::runs::{
    absorb, absorb_base, compiled_first, how_it_ended, pack, passes_within, Budget, Results, Run,
    What,
};
use super::trees::build_commit;
use super::*;
use crate::exec::outcome::ReproOutcome;
use crate::exec::repro::RepoNames;
use crate::model::ReproChange;
use crate::model::Usage;
use std::collections::BTreeMap;
use std::time::Duration;

fn o(exit: Option<i32>, exception: Option<&str>, output: &str) -> ReproOutcome {
    ReproOutcome {
        exit,
        exception: exception.map(str::to_string),
        output: output.into(),
    }
}

/// A reproduction run whose statement `n` first raised `e`.
fn at(n: usize, e: &str) -> ReproOutcome {
    o(
        Some(1),
        Some(e),
        &format!("[dei-repro] statement {n} raised {e}\n[dei-repro] first exception: {e}\n"),
    )
}

/// Every statement but the imports raising `NameError` for a name the code never binds is
/// library code quoted, not a reproduction; one statement that runs, raises something else,
/// or raises `NameError` for a name the code binds (the library's own) keeps it. The shapes
/// of flask-5063 (`app.register_blueprint(…)` with no `app`) and requests-2317 (`method =
/// builtin_str(method)`, a line of `requests/sessions.py` quoted) motivated it.
#[test]
fn code_whose_every_statement_raises_name_error_is_quoted_library_code() {
    let out = |lines: &[&str]| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    let quoted = |statements: usize, imports: &[usize], unbound: &[&str]| Quoted {
        statements,
        imports: imports.to_vec(),
        unbound: unbound.iter().map(|u| u.to_string()).collect(),
    };
    let app = |n| quoted(n, &[], &["app"]);
    let both = out(&[
        "[dei-repro] statement 1 raised NameError: name 'app' is not defined",
        "[dei-repro] statement 2 raised NameError: name 'app' is not defined",
        "[dei-repro] first exception: NameError",
    ]);
    assert_eq!(
        only_name_errors(&both, &app(2)).as_deref(),
        Some("name 'app' is not defined")
    );
    // A third statement ran.
    assert_eq!(only_name_errors(&both, &app(3)), None);
    // ... unless it is an import (flask-4992: `import os`, which dei adds, then `app.…`).
    let after_import = out(&[
        "[dei-repro] statement 2 raised NameError: name 'app' is not defined",
        "[dei-repro] statement 3 raised NameError: name 'app' is not defined",
        "[dei-repro] first exception: NameError",
    ]);
    assert_eq!(
        only_name_errors(&after_import, &quoted(3, &[1], &["app"])).as_deref(),
        Some("name 'app' is not defined")
    );
    assert_eq!(only_name_errors(&after_import, &app(3)), None);
    // Only imports ran, nothing raised: nothing to say.
    assert_eq!(
        only_name_errors("[dei-repro] no exception\n", &quoted(1, &[1], &[])),
        None
    );
    // A name the code binds (or never names) raised in the library: that may be the bug.
    assert_eq!(
        only_name_errors(&after_import, &quoted(3, &[1], &["other"])),
        None
    );
    let other = out(&[
        "[dei-repro] statement 1 raised NameError: name 'x' is not defined",
        "[dei-repro] statement 2 raised ValueError: bad",
    ]);
    assert_eq!(only_name_errors(&other, &quoted(2, &[], &["x"])), None);
    assert_eq!(only_name_errors("", &app(0)), None);
    assert_eq!(
        only_name_errors("[dei-repro] no exception\n", &app(1)),
        None
    );
}

/// The reproduction's two base runs: the same → kept whole; printing differently but
/// ending alike → only how runs end is kept, for this and every later run; ending
/// differently → not used.
#[test]
fn a_reproduction_that_prints_differently_twice_at_base_is_compared_by_how_it_ends() {
    let settle = |first: ReproOutcome, second: ReproOutcome| {
        let mut out = IssueExec {
            reproduction: true,
            ..IssueExec::default()
        };
        let mut seen = Results::default();
        seen.repros.insert(0, second);
        let kept = settle_repro(&mut out, &mut seen, &first);
        (kept, out, seen)
    };
    let (kept, out, seen) = settle(o(Some(0), None, "3\n"), o(Some(0), None, "3\n"));
    assert!(kept && out.reproduction && !out.repro_output_unstable);
    assert_eq!(seen.repros[&0].output, "3\n");

    let (kept, mut out, mut seen) =
        settle(o(Some(0), None, "0.3196\n"), o(Some(0), None, "0.8801\n"));
    assert!(kept && out.reproduction && out.repro_output_unstable);
    assert_eq!(seen.repros[&0].output, "");
    // A candidate's run read afterwards keeps only how it ended.
    let run = Run {
        code: Some(1),
        signal: None,
        timed_out: false,
        seconds: 1.0,
        cpu_seconds: None,
        waited_seconds: None,
        output: "0.5\n[dei-repro] first exception: ValueError\n".into(),
        missing: Vec::new(),
    };
    absorb(
        &mut out,
        &mut seen,
        &[],
        &(1, What::Repro, 0),
        Ok((run, false)),
    );
    assert_eq!(seen.repros[&1].output, "");
    assert_eq!(seen.repros[&1].exception.as_deref(), Some("ValueError"));
    assert_eq!(
        repro_change(&seen.repros[&0], &seen.repros[&1], ""),
        ReproChange::Broken
    );

    let (kept, out, seen) = settle(o(Some(0), None, "ok\n"), o(None, None, "ok\n"));
    assert!(!kept && !out.reproduction);
    assert!(seen.repros.is_empty());
}

#[test]
fn a_setup_commit_the_repository_lacks_is_replaced_by_the_base_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init_bare(dir.path()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    let tree = repo.treebuilder(None).unwrap().write().unwrap();
    let tree = repo.find_tree(tree).unwrap();
    let head = repo
        .commit(None, &sig, &sig, "base", &tree, &[])
        .unwrap()
        .to_string();
    let missing = "d5843f89d3c008ddcb431adbc335b080a79e617e";
    // The spec's commit is there: it is used, nothing said.
    assert_eq!(build_commit(Some(&head), "0123", dir.path()), None);
    assert_eq!(build_commit(None, &head, dir.path()), None);
    // It is not: the base commit stands in, and the note says which and why.
    let (at, why) = build_commit(Some(missing), &head, dir.path()).unwrap();
    assert_eq!(at, head.as_str());
    assert!(
        why.contains(&head[..12]) && why.contains("d5843f89d3c0"),
        "{why}"
    );
    assert!(why.contains(&dir.path().display().to_string()), "{why}");
}

#[test]
fn a_run_without_test_results_says_how_it_ended_and_its_last_line() {
    let run = |code, timed_out, output: &str| Run {
        code,
        signal: None,
        timed_out,
        seconds: 1.0,
        cpu_seconds: None,
        waited_seconds: None,
        output: output.into(),
        missing: Vec::new(),
    };
    let e = how_it_ended(&run(
        Some(1),
        false,
        "\n/usr/bin/python3: No module named pytest\n\n",
    ));
    assert_eq!(
        e,
        "exited with status 1: /usr/bin/python3: No module named pytest"
    );
    assert_eq!(
        how_it_ended(&run(None, true, "collecting\n[dei: killed after 8s]\n")),
        "hit the time limit: collecting"
    );
    assert_eq!(
        how_it_ended(&run(Some(0), false, "  \n")),
        "exited with status 0 and printed nothing"
    );
    // The sandbox's folder is not named: two runs of one tree end alike (pytest-7168).
    assert_eq!(
        how_it_ended(&run(
            Some(1),
            false,
            "E   ImportError: cannot import name 'console_main' from 'pytest' (/tmp/dei-sandbox-17759-dAH5Tc/tree/src/pytest/__init__.py)\n"
        )),
        "exited with status 1: E   ImportError: cannot import name 'console_main' from 'pytest' (src/pytest/__init__.py)"
    );
    // unittest's verdict comes with the count of tests it ran.
    assert_eq!(
        how_it_ended(&run(
            Some(0),
            false,
            "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n"
        )),
        "exited with status 0: Ran 0 tests in 0.000s, OK"
    );
    assert_eq!(
        how_it_ended(&run(
            Some(1),
            false,
            "Ran 3 tests in 0.1s\n\nFAILED (errors=3)\n"
        )),
        "exited with status 1: Ran 3 tests in 0.1s, FAILED (errors=3)"
    );
    assert_eq!(
        how_it_ended(&run(Some(0), false, "Ran the setup\nOK, done\n")),
        "exited with status 0: OK, done"
    );
    let long = how_it_ended(&run(Some(2), false, &"x".repeat(500)));
    assert_eq!(long.chars().count(), "exited with status 2: ".len() + 161);
    assert!(long.ends_with('…'));
}

#[test]
fn only_a_tree_that_cannot_import_asks_for_an_environment_at_the_base_commit() {
    // pytest-7168's shape: its tree at the base commit needs `wcwidth`, which the install at
    // the setup commit does not bring, so no base test run can import it.
    let unread = |end: &str| format!("no test result could be read from the base runs; t.py {end}");
    assert!(import_failure(&unread(
        "exited with status 1: ImportError: cannot import name 'console_main' from 'pytest'"
    )));
    assert!(import_failure(&unread(
        "exited with status 1: ModuleNotFoundError: No module named 'wcwidth'"
    )));
    assert!(import_failure(&unread(
        "exited with status 1: /venv/bin/python3: No module named pytest"
    )));
    // A runner that runs and prints nothing readable is the command's fault, not the tree's.
    assert!(!import_failure(&unread(
        "exited with status 0: congratulations :)"
    )));
    assert!(!import_failure(&unread("hit the time limit: collecting")));
}

#[test]
fn live_status_counts_fresh_and_cached_runs() {
    let s = ExecSettings::new(
        Arc::new(crate::exec::sandbox::LocalBackend::default()),
        PathBuf::new(),
        PathBuf::new(),
    );
    assert_eq!(
        s.live_status(),
        "sandbox: 0 running, 0 runs done (0 cached)"
    );
    s.count(true, 0.0);
    s.count(false, 2.0);
    s.count(false, 4.0);
    let _slot = s.slot();
    assert_eq!(
        s.live_status(),
        "sandbox: 1 running, 3 runs done (1 cached), 3.0 s per run"
    );
    // An environment being built is said until it is done.
    {
        let _a = s.building("sympy/sympy 1.1".into());
        assert!(s
            .live_status()
            .ends_with("; building the environment of sympy/sympy 1.1"));
        let _b = s.building("psf/requests 2.0".into());
        assert!(s
            .live_status()
            .ends_with("; building the environments of sympy/sympy 1.1, psf/requests 2.0"));
    }
    assert_eq!(
        s.live_status(),
        "sandbox: 1 running, 3 runs done (1 cached), 3.0 s per run"
    );
}

#[test]
fn test_files_pack_by_key_within_the_budget() {
    // Files 0, 1 and 3 share a key; 2 has another (run whole, where 0/1/3 are narrowed).
    let files = [
        (0, 10.0, 0),
        (1, 15.0, 0),
        (2, 5.0, 1),
        (3, 40.0, 0),
        (4, 70.0, 0),
    ];
    // 0+1 fit in 30 s; 3 would pass it, so it starts a batch; 4 is over on its own.
    assert_eq!(
        pack(&files, 30.0),
        vec![vec![0, 1], vec![2], vec![3], vec![4]]
    );
    assert_eq!(pack(&files, 100.0), vec![vec![0, 1, 3], vec![2], vec![4]]);
    assert!(pack(&[], 10.0).is_empty());
}

#[test]
fn a_reproduction_that_stops_on_a_missing_package_is_not_used() {
    let names = RepoNames {
        modules: ["sympy".to_string()].into_iter().collect(),
        ..RepoNames::default()
    };
    let numpy = o(
        Some(1),
        Some("ModuleNotFoundError"),
        "ModuleNotFoundError: No module named 'numpy'",
    );
    assert_eq!(
        missing_package(&numpy, &names).as_deref(),
        Some("it cannot import `numpy`, which is not part of the repository nor installed")
    );
    // The repository's own module missing is what the issue may be about.
    let own = o(
        Some(1),
        Some("ModuleNotFoundError"),
        "ModuleNotFoundError: No module named 'sympy.foo'",
    );
    assert_eq!(missing_package(&own, &names), None);
    let other = o(
        Some(1),
        Some("TypeError"),
        "TypeError: No module named 'numpy'",
    );
    assert_eq!(missing_package(&other, &names), None);
    // sympy-21612: the repository says an optional package is missing.
    let antlr = o(
        Some(1),
        Some("ImportError"),
        "[dei-repro] statement 2 raised ImportError: LaTeX parsing requires the antlr4 python package, provided by pip (antlr4-python3-runtime) or conda (antlr-python-runtime)\n[dei-repro] first exception: ImportError\n",
    );
    assert!(missing_package(&antlr, &names)
        .is_some_and(|w| w.contains("lacks a package") && w.contains("LaTeX parsing")));
    let install = o(
        Some(1),
        Some("ImportError"),
        "ImportError: matplotlib is required for plotting; please install it\n",
    );
    assert!(missing_package(&install, &names).is_some());
    // The repository's own import failing (a circular import) is what an issue may be about.
    let circular = o(
        Some(1),
        Some("ImportError"),
        "ImportError: cannot import name 'Basic' from partially initialized module 'sympy.core.basic'\n",
    );
    assert_eq!(missing_package(&circular, &names), None);
}

#[test]
fn an_import_of_the_issues_own_code_is_told_from_the_trees() {
    // pytest-7220's shape: its code stops on `wcwidth`, which the tree imports and the issue's
    // code does not, so the environment is built again at the base commit.
    let code = "try:\n    import os, numpy as np\nexcept Exception:\n    pass\nfrom scipy.linalg import norm\nimport numpyx\n";
    assert!(imports_module(code, "numpy"));
    assert!(imports_module(code, "scipy"));
    assert!(imports_module(code, "os"));
    // A longer name, a name in a string, a name imported from: not an import of it.
    assert!(!imports_module(code, "numpyx2"));
    assert!(!imports_module("x = 'import wcwidth'\n", "wcwidth"));
    assert!(!imports_module("from pytest import wcwidth\n", "wcwidth"));
    assert!(!imports_module(code, "wcwidth"));
}

#[test]
fn only_a_known_package_a_run_stopped_on_is_one_to_install() {
    let names = RepoNames {
        modules: ["sympy".to_string()].into_iter().collect(),
        ..RepoNames::default()
    };
    let dist = |exception: &str, output: &str| {
        missing_extra(&o(Some(1), Some(exception), output), &names).map(|e| e.dist)
    };
    assert_eq!(
        dist(
            "ModuleNotFoundError",
            "ModuleNotFoundError: No module named 'numpy.linalg'"
        ),
        Some("numpy")
    );
    assert_eq!(
        dist(
            "ImportError",
            "[dei-repro] statement 2 raised ImportError: LaTeX parsing requires the antlr4 python package, provided by pip (antlr4-python3-runtime)\n"
        ),
        Some("antlr4-python3-runtime")
    );
    // A package dei does not know (pytest-7220's `nox`), a module of the repository's own,
    // and an import error that is not a missing package: nothing to install.
    assert_eq!(dist("ModuleNotFoundError", "No module named 'nox'"), None);
    assert_eq!(
        dist("ModuleNotFoundError", "No module named 'sympy.numpy'"),
        None
    );
    assert_eq!(dist("TypeError", "No module named 'numpy'"), None);
    assert_eq!(
        dist(
            "ImportError",
            "ImportError: cannot import name 'array' from 'numpy'"
        ),
        None
    );
}

#[test]
fn a_new_failure_is_broken_not_changed() {
    let ran = o(Some(0), None, "3\n");
    assert_eq!(repro_change(&ran, &ran.clone(), ""), ReproChange::Same);
    assert_eq!(
        repro_change(&ran, &o(Some(0), None, "2\n"), ""),
        ReproChange::Changed
    );
    // The candidate's module does not import any more, or it hangs: broken.
    assert_eq!(
        repro_change(&ran, &o(Some(1), Some("ImportError"), ""), ""),
        ReproChange::Broken
    );
    assert_eq!(
        repro_change(&ran, &o(None, None, ""), ""),
        ReproChange::Broken
    );
    // The issue's own exception goes away, or turns into another where no statement is
    // reported (a traceback ends the script): changed.
    let raised = o(Some(1), Some("TypeError"), "");
    assert_eq!(repro_change(&raised, &ran, ""), ReproChange::Changed);
    assert_eq!(
        repro_change(&raised, &o(Some(1), Some("ValueError"), ""), ""),
        ReproChange::Changed
    );
}

#[test]
fn another_exception_at_the_same_statement_still_fails() {
    // sympy-17655's shape: a candidate's `Point2D` sum raises `AttributeError` where the base
    // commit raised the `GeometryError` the issue reports.
    let base = at(6, "GeometryError");
    let issue = "Adding `2.0 * Point(1, 1)` raises GeometryError.";
    assert_eq!(
        repro_change(&base, &at(6, "AttributeError"), issue),
        ReproChange::StillFails
    );
    // The reported statement passes now, and a later one stops: a change.
    assert_eq!(
        repro_change(&base, &at(7, "NameError"), issue),
        ReproChange::Changed
    );
    // The issue asks for the new exception: a change.
    let asks = "This should raise a ValueError, not a GeometryError.";
    assert_eq!(
        repro_change(&base, &at(6, "ValueError"), asks),
        ReproChange::Changed
    );
    // A word that only contains the name does not name it.
    assert_eq!(
        repro_change(&base, &at(6, "ValueError"), "see MyValueErrors"),
        ReproChange::StillFails
    );
    // The same exception at the same statement, reworded: the same.
    assert_eq!(repro_change(&base, &base.clone(), issue), ReproChange::Same);
}

#[test]
fn kept_model_tests_are_counted_over_the_samples() {
    let rec = |status| ModelTestRecord {
        status,
        ..ModelTestRecord::default()
    };
    let mut e = IssueExec::default();
    assert_eq!(e.model_tests_kept(), 0);
    e.model_test = Some(rec(TestStatus::Kept));
    assert_eq!(e.model_tests_kept(), 1);
    e.model_test = Some(rec(TestStatus::Discarded));
    assert_eq!(e.model_tests_kept(), 0);
    e.model_test = Some(rec(TestStatus::Kept));
    e.model_test_samples = vec![
        rec(TestStatus::Kept),
        rec(TestStatus::Discarded),
        rec(TestStatus::Kept),
        rec(TestStatus::NotWritten),
    ];
    assert_eq!(e.model_tests_kept(), 2);
}

#[test]
fn the_files_that_ran_in_part_for_time_are_said_for_a_prompt() {
    let mut e = IssueExec::default();
    assert!(e.tests_in_part().is_empty());
    e.slow_files = vec!["t/test_slow.py".into()];
    e.trimmed_files = vec![TrimmedFile {
        file: "t/test_a.py".into(),
        whole: true,
        seconds: 30.0,
        gate: 20.0,
        left_out: vec!["t/test_a.py::x".into()],
        left_out_seconds: 12.0,
    }];
    let narrowed = |file: &str, seconds| NarrowedFile {
        file: file.into(),
        seconds,
        gate: 20.0,
        tests: 3,
    };
    // Over its gate, stopped, and narrowed because nothing passed whole (not for time).
    e.narrowed_files = vec![
        narrowed("t/test_b.py", Some(25.0)),
        narrowed("t/test_c.py", None),
        narrowed("t/test_d.py", Some(0.4)),
    ];
    assert_eq!(
        e.tests_in_part(),
        [
            "t/test_slow.py did not run (it took over half the time limit at the base commit)",
            "t/test_a.py ran without its 1 slowest test",
            "t/test_b.py ran only its 3 tests naming the edited code",
            "t/test_c.py ran only its 3 tests naming the edited code",
        ]
    );
}

#[test]
fn a_run_is_described_with_the_statement_that_raised() {
    assert_eq!(
        describe(&at(5, "NameError")),
        "raises NameError at statement 5"
    );
    // A traceback the script does not wrap names no statement.
    assert_eq!(
        describe(&o(
            Some(1),
            Some("ValueError"),
            "Traceback ...\nValueError: x\n"
        )),
        "raises ValueError"
    );
    assert_eq!(describe(&o(Some(0), None, "3\n")), "runs without error");
    assert_eq!(describe(&o(Some(2), None, "")), "exits with status 2");
    assert_eq!(describe(&o(None, None, "")), "is killed (time limit)");
}

#[test]
fn a_first_failure_before_the_reported_one_is_broken() {
    let base = at(8, "ValueError");
    let issue = "`Add(expr, 1)` raises ValueError: Dimension of exp(second/(farad*ohm)) ...";
    // Statement 6 ran at the base commit; with the candidate it raises (sympy-24066's
    // candidates whose earlier `assert` fails; sympy-21379's whose module does not import).
    assert_eq!(
        repro_change(&base, &at(6, "AssertionError"), issue),
        ReproChange::Broken
    );
    assert_eq!(
        repro_change(&base, &at(1, "SyntaxError"), issue),
        ReproChange::Broken
    );
    // The same exception, raised earlier: broken too, even where the issue names it (it
    // reports that exception, as astropy-14182's issue names its `TypeError`).
    assert_eq!(
        repro_change(&base, &at(3, "ValueError"), issue),
        ReproChange::Broken
    );
    // The issue asks for the exception the earlier statement now raises: a change.
    let asks = "`Unit(-1)` should raise a TypeError instead of passing silently.";
    assert_eq!(
        repro_change(&base, &at(6, "TypeError"), asks),
        ReproChange::Changed
    );
}

/// A test file's base run that passed its one test, with the times given.
fn passing_run(seconds: f64, cpu_seconds: Option<f64>, waited_seconds: Option<f64>) -> Run {
    Run {
        code: Some(0),
        signal: None,
        timed_out: false,
        seconds,
        cpu_seconds,
        waited_seconds,
        output: "PASSED t.py::test_a\n".into(),
        missing: Vec::new(),
    }
}

/// Whether `r`, as a file's first base run, passes the time gate of `within` seconds.
fn within_gate(r: Run, within: f64) -> bool {
    let mut out = IssueExec {
        test_files: vec!["t.py".into()],
        ..IssueExec::default()
    };
    let mut seen = Results::default();
    let mut base_seconds = BTreeMap::new();
    absorb_base(
        &mut out,
        &mut seen,
        &mut base_seconds,
        &[(0, What::Tests(0), 0)],
        vec![Ok((r, false))],
    );
    assert!(!seen.tests[&(0, 0, 0)].passed().is_empty());
    passes_within(&seen, &base_seconds, 0, within)
}

/// The time gates read a run's CPU time, so a test file that is quick on an idle machine stays
/// quick on a loaded one, where its wall time grows; a run that mostly waits still counts a
/// third of its wall time, and a run cached without CPU time reads its wall time.
#[test]
fn the_time_gates_read_cpu_time_so_a_loaded_machine_runs_the_same_tests() {
    let run = |seconds: f64, cpu_seconds: Option<f64>| passing_run(seconds, cpu_seconds, None);
    assert_eq!(run(45.0, Some(14.0)).work_seconds(), 15.0);
    assert_eq!(run(14.5, Some(14.0)).work_seconds(), 14.0);
    assert_eq!(run(30.0, Some(0.2)).work_seconds(), 10.0);
    assert_eq!(run(45.0, None).work_seconds(), 45.0);

    // A file's first base run, on a machine three times busier than idle: still within the
    // whole-file share (20 s of 120 s) by its CPU time, not by its wall time.
    let gate = |r: Run| within_gate(r, 20.0);
    assert!(gate(run(45.0, Some(14.0))));
    assert!(gate(run(14.5, Some(14.0))));
    assert!(!gate(run(45.0, None)));
    assert!(!gate(run(66.0, Some(21.0))));

    // The whole-file try: 21 s of CPU time, three times that on the clock, within the limit.
    let full = Duration::from_secs(120);
    let whole = Budget::cpu(21.0, full);
    assert_eq!(whole.cpu, Some(21));
    assert_eq!(whole.wall, Duration::from_secs(63));
    assert_eq!(Budget::cpu(50.0, full).wall, full);
    assert_eq!(Budget::wall(full).cpu, None);
}

/// With the time its processes waited for a CPU kept, a run's gate seconds are what it would
/// take alone: sympy-18199's test file took 4.6 s of CPU time and 18.3 s on the clock beside
/// six busy processes on two CPUs, over its 5 s gate by a third of its wall time and within
/// it by its wall time less its wait; a run that sleeps counts its sleep, and one whose
/// processes work side by side counts its CPU time.
#[test]
fn with_its_wait_kept_a_run_counts_the_time_it_would_take_alone() {
    let run = |seconds: f64, cpu: f64, waited: Option<f64>| passing_run(seconds, Some(cpu), waited);
    let loaded = run(18.25, 4.57, Some(13.5)).work_seconds();
    assert!((loaded - 4.75).abs() < 1e-9, "{loaded}");
    assert!(run(18.25, 4.57, None).work_seconds() > 6.0);
    assert_eq!(run(30.0, 0.25, Some(0.0)).work_seconds(), 30.0);
    assert_eq!(run(10.0, 18.0, Some(2.0)).work_seconds(), 18.0);
    let gate = |r: Run| within_gate(r, 5.0);
    assert!(gate(run(18.25, 4.57, Some(13.5))));
    assert!(!gate(run(18.25, 4.57, None)));
    assert!(!gate(run(18.25, 4.57, Some(1.0))));
}

#[test]
fn only_the_python_files_written_on_top_are_compiled_before_the_command() {
    let file = |path: &str, contents: Option<&str>| crate::exec::sandbox::TreeFile {
        path: path.into(),
        contents: contents.map(|c| c.as_bytes().to_vec()),
    };
    // Nothing of Python on top: the command as it is.
    let none = [file("README.md", Some("x")), file("gone.py", None)];
    assert_eq!(
        compiled_first("python -m pytest -rA t.py", &none),
        "python -m pytest -rA t.py"
    );
    // Changed sources are compiled, quoted for the shell, and the command runs after them
    // whatever compiling said; a deleted source is not compiled.
    let some = [
        file("pkg/mod.py", Some("x = 1")),
        file("it's here.py", Some("y = 2")),
        file("gone.py", None),
        file("data.txt", Some("z")),
    ];
    let cmd = compiled_first("python -m pytest -rA t.py", &some);
    let (compile, run) = cmd
        .split_once(">/dev/null 2>&1; ")
        .expect("compile, then run");
    assert_eq!(run, "python -m pytest -rA t.py");
    assert!(
        compile.contains("--invalidation-mode checked-hash -- "),
        "{compile}"
    );
    assert!(compile.contains("pkg/mod.py"), "{compile}");
    assert!(
        compile.contains(&crate::model::repo::shell_quote("it's here.py")),
        "{compile}"
    );
    assert!(
        !compile.contains("gone.py") && !compile.contains("data.txt"),
        "{compile}"
    );
}

#[test]
fn a_test_run_gets_its_pass_as_hash_seed_unless_the_spec_sets_one() {
    // sympy-16988 motivated it: a candidate's `list(set(args))` fails `test_imageset` under
    // about half of all seeds, so an unchanged rerun broke a test the first run passed.
    use super::runs::{seeded_env, test_hash_seed};
    let spec = vec![("LANG".to_string(), "C".to_string())];
    assert_eq!(
        seeded_env(&spec, Some(test_hash_seed(1))),
        [
            ("LANG".into(), "C".into()),
            ("PYTHONHASHSEED".into(), "1".into())
        ]
    );
    assert_eq!(seeded_env(&spec, None), spec);
    let own = vec![("PYTHONHASHSEED".to_string(), "7".to_string())];
    assert_eq!(seeded_env(&own, Some(test_hash_seed(0))), own);
}

#[test]
fn the_settings_line_names_every_override_so_a_run_resumes_only_with_the_same() {
    let mut s = ExecSettings::new(
        Arc::new(crate::exec::sandbox::LocalBackend::default()),
        PathBuf::new(),
        PathBuf::new(),
    );
    let plain = s.settings();
    s.overrides.test_cmd = Some("pytest -rA".into());
    s.overrides.loopback = true;
    let line = s.settings();
    assert!(
        line.starts_with(&plain) && line.ends_with(", --test-cmd pytest -rA, --test-loopback"),
        "{line}"
    );
}

#[test]
fn an_earlier_try_adds_its_model_calls_to_the_record_that_stands() {
    let rec = |sample, calls, input_tokens| ModelTestRecord {
        status: TestStatus::Discarded,
        sample,
        usage: Usage {
            calls,
            input_tokens,
            ..Usage::default()
        },
        ..ModelTestRecord::default()
    };
    // One sample: the record itself.
    let first = IssueExec {
        runs: 3,
        model_test: Some(rec(0, 1, 100)),
        ..IssueExec::default()
    };
    let mut again = IssueExec {
        runs: 2,
        model_test: Some(rec(0, 1, 120)),
        ..IssueExec::default()
    };
    add_costs(&mut again, &first);
    assert_eq!(again.runs, 5);
    let u = &again.model_test.as_ref().unwrap().usage;
    assert_eq!((u.calls, u.input_tokens), (2, 220));

    // Several samples: each adds its own earlier call, and `model_test` (a copy of one of
    // them) adds that sample's.
    let first = IssueExec {
        model_test: Some(rec(0, 1, 10)),
        model_test_samples: vec![rec(0, 1, 10), rec(1, 1, 20)],
        ..IssueExec::default()
    };
    let mut again = IssueExec {
        model_test: Some(rec(1, 0, 40)),
        model_test_samples: vec![rec(0, 1, 30), rec(1, 0, 40)],
        ..IssueExec::default()
    };
    add_costs(&mut again, &first);
    let tokens = |e: &IssueExec| -> Vec<(u32, u64, u64)> {
        e.model_test_samples
            .iter()
            .map(|m| (m.sample, m.usage.calls, m.usage.input_tokens))
            .collect()
    };
    assert_eq!(tokens(&again), vec![(0, 2, 40), (1, 1, 60)]);
    let m = again.model_test.as_ref().unwrap();
    assert_eq!((m.sample, m.usage.calls, m.usage.input_tokens), (1, 1, 60));

    // No earlier model test (none asked, or the first try stopped before it): nothing added.
    let mut again = IssueExec {
        model_test: Some(rec(0, 1, 5)),
        ..IssueExec::default()
    };
    add_costs(&mut again, &IssueExec::default());
    assert_eq!(again.model_test.as_ref().unwrap().usage.input_tokens, 5);
}
