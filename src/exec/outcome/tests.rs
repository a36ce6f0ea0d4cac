//! Tests of reading runs into outcomes.

use super::*;
use std::collections::{BTreeMap, BTreeSet};

#[test]
fn coloured_pytest_output_reads_like_plain() {
    let coloured = "\x1b[32mPASSED\x1b[0m tests/test_a.py::\x1b[1mtest_one\x1b[0m\n\
                    \x1b[31mFAILED\x1b[0m tests/test_a.py::test_two - assert 3 == 2\n\
                    \x1b[31m==== \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.1s ====\x1b[0m\n";
    let plain = "PASSED tests/test_a.py::test_one\n\
                 FAILED tests/test_a.py::test_two - assert 3 == 2\n\
                 ==== 1 failed, 1 passed in 0.1s ====\n";
    let (c, p) = (parse_test_output(coloured), parse_test_output(plain));
    assert_eq!(c.results, p.results);
    assert_eq!(c.counts, p.counts);
    assert_eq!(
        c.results.get("tests/test_a.py::test_one"),
        Some(&Status::Passed)
    );
    assert_eq!(
        c.results.get("tests/test_a.py::test_two"),
        Some(&Status::Failed)
    );
}

/// sympy's own runner, `bin/test -C --verbose` (as the SWE-bench harness runs it).
const SYMPY: &str = "\
============================= test process starts ==============================
executable:         /venv/bin/python  (3.9.18-final-0) [CPython]
random seed:        34655871

sympy/simplify/tests/test_fu.py[4] 
test_TR1 ok
test_TR2 F
test_TR3 E
test_L f                                                                    [FAIL]


________________________________________________________________________________
_________________ sympy/simplify/tests/test_fu.py:test_TR2 _____________________
Traceback (most recent call last):
AssertionError
======= tests finished: 1 passed, 1 failed, 1 expected to fail, 1 exceptions, in 0.57 seconds =======
DO *NOT* COMMIT!
";

#[test]
fn sympy_runner_output_is_read_per_test() {
    let run = parse_test_output(SYMPY);
    let get = |t: &str| {
        run.results
            .get(&format!("sympy/simplify/tests/test_fu.py::{t}"))
            .copied()
    };
    assert_eq!(get("test_TR1"), Some(Status::Passed));
    assert_eq!(get("test_TR2"), Some(Status::Failed));
    assert_eq!(get("test_TR3"), Some(Status::Error));
    assert_eq!(get("test_L"), Some(Status::XFail));
    assert_eq!(run.results.len(), 4, "{:?}", run.results);
    let c = run.counts.clone().expect("counts");
    assert_eq!((c.passed, c.failed, c.errors, c.xfailed), (1, 1, 1, 1));
    assert!(run.finished());
}

#[test]
fn a_unittest_test_that_prints_is_read_from_its_status_line() {
    let out = "test_a (pkg.tests.T) ... hello\nworld\nok\ntest_b (pkg.tests.T) ... FAIL\ntest_c (pkg.tests.T) ... note: ok\nskipped 'no network'\n\nRan 3 tests in 0.001s\n\nFAILED (failures=1, skipped=1)\n";
    let run = parse_test_output(out);
    assert_eq!(run.results.get("pkg.tests.T.test_a"), Some(&Status::Passed));
    assert_eq!(run.results.get("pkg.tests.T.test_b"), Some(&Status::Failed));
    // `note: ok` is what it printed, not its status.
    assert_eq!(
        run.results.get("pkg.tests.T.test_c"),
        Some(&Status::Skipped)
    );
    assert_eq!(run.results.len(), 3, "{:?}", run.results);
}

#[test]
fn a_sympy_test_that_prints_is_read_from_its_status_line() {
    // What a test prints goes after its name; its status then comes on a line of its own
    // (sympy-21612's tests with antlr4's version warning).
    let out = "sympy/parsing/tests/test_latex.py[4] \ntest_import ok\ntest_parseable ANTLR runtime and generated code versions disagree\nANTLR runtime and generated code versions disagree\nok\ntest_not_parseable warning\nE\ntest_failing warning\nok then\nf                                                [OK]\n";
    let run = parse_test_output(out);
    let get = |t: &str| {
        run.results
            .get(&format!("sympy/parsing/tests/test_latex.py::{t}"))
            .copied()
    };
    assert_eq!(get("test_import"), Some(Status::Passed));
    assert_eq!(get("test_parseable"), Some(Status::Passed));
    assert_eq!(get("test_not_parseable"), Some(Status::Error));
    // A printed line that starts with a status word is not the status.
    assert_eq!(get("test_failing"), Some(Status::XFail));
    assert_eq!(run.results.len(), 4, "{:?}", run.results);
}

/// `pytest -rA` output (pytest 7/8 layout), with a teardown error and a collection error.
const PYTEST_RA: &str = "\
============================= test session starts ==============================
platform linux -- Python 3.9.18, pytest-7.4.0, pluggy-1.3.0
rootdir: /tmp/dei-sbx-1a2b/repo
collected 6 items / 1 error

tests/test_models.py ..F.sx                                                [100%]

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_hooks.py _____________________
ImportError while importing test module '/tmp/dei-sbx-1a2b/repo/tests/test_hooks.py'.
=================================== FAILURES ===================================
_______________________ TestRequests.test_params_bytes _________________________
E       AssertionError: assert b'a=1' == 'a=1'
=========================== short test summary info ============================
PASSED tests/test_models.py::test_basic
PASSED tests/test_models.py::TestRequests::test_get
FAILED tests/test_models.py::TestRequests::test_params_bytes - AssertionError: assert b'a=1' == 'a=1'
PASSED tests/test_models.py::test_teardown_breaks
ERROR tests/test_models.py::test_teardown_breaks - RuntimeError: boom
SKIPPED [1] tests/test_models.py:40: needs network
XFAIL tests/test_models.py::test_known - reason: not fixed yet
ERROR tests/test_hooks.py
========= 1 failed, 3 passed, 1 skipped, 1 xfailed, 2 errors in 0.52s ==========
";

/// Old pytest (3.x) `-v`: `::()::` in method ids, `in 0.12 seconds`.
const PYTEST_OLD_V: &str = "\
============================= test session starts ==============================
platform linux2 -- Python 2.7.18, pytest-3.3.0, py-1.11.0, pluggy-0.6.0 -- /usr/bin/python
collecting ... collected 3 items

test_requests.py::RequestsTestCase::()::test_basic PASSED
test_requests.py::RequestsTestCase::()::test_redirect FAILED
test_requests.py::test_cookies SKIPPED

=========== 1 failed, 1 passed, 1 skipped in 0.12 seconds ===========
";

/// `python3 -m unittest -v test_mod`, captured on Python 3.11 (ids in parentheses are
/// full since 3.11).
const UNITTEST_311: &str = "\
test_error (test_mod.TestThing.test_error) ... ERROR
test_fail (test_mod.TestThing.test_fail) ... FAIL
test_ok (test_mod.TestThing.test_ok) ... ok
test_skip (test_mod.TestThing.test_skip) ... skipped 'not here'
test_xfail (test_mod.TestThing.test_xfail) ... expected failure

======================================================================
ERROR: test_error (test_mod.TestThing.test_error)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/tmp/ut/test_mod.py\", line 8, in test_error
raise KeyError(\"x\")
KeyError: 'x'

----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
";

/// The same file under Python 2.7 / 3.6, and a test with a docstring.
const UNITTEST_27: &str = "\
test_error (test_mod.TestThing) ... ERROR
test_ok (test_mod.TestThing) ... ok
test_doc (test_mod.TestThing)
The docstring's first line. ... ok

----------------------------------------------------------------------
Ran 3 tests in 0.000s

FAILED (errors=1)
";

#[test]
fn pytest_short_summary() {
    let r = parse_test_output(PYTEST_RA);
    assert_eq!(
        r.results.get("tests/test_models.py::test_basic"),
        Some(&Status::Passed)
    );
    assert_eq!(
        r.results
            .get("tests/test_models.py::TestRequests::test_get"),
        Some(&Status::Passed)
    );
    assert_eq!(
        r.results
            .get("tests/test_models.py::TestRequests::test_params_bytes"),
        Some(&Status::Failed)
    );
    assert_eq!(
        r.results.get("tests/test_models.py::test_teardown_breaks"),
        Some(&Status::Error),
        "passed, then errored in teardown: an error"
    );
    assert_eq!(
        r.results.get("tests/test_models.py::test_known"),
        Some(&Status::XFail)
    );
    assert!(r.file_errors.contains("tests/test_hooks.py"));
    assert_eq!(r.results.len(), 5, "{:?}", r.results);
    let c = r.counts.unwrap();
    assert_eq!(
        (c.passed, c.failed, c.skipped, c.xfailed, c.errors),
        (3, 1, 1, 1, 2)
    );
}

#[test]
fn an_xpass_line_with_its_reason_names_the_test_alone() {
    // pytest 7 puts an xfail's reason after an unexpected pass's id with no ` - `.
    let r = parse_test_output(
        "XPASS x/t.py::test_close[mean-2] See https://github.com/pydata/xarray/pull/4369\n\
         XPASS x/t.py::TestA::test_copy[False-orig1] \n\
         XPASS x/t.py::test_plain reason words\n\
         PASSED x/t.py::test_slow[a b]\n\
         XFAIL x/t.py::test_known - reason\n\
         == 1 passed, 1 xfailed, 3 xpassed in 1.0s ==\n",
    );
    let ids: Vec<&str> = r.results.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        [
            "x/t.py::TestA::test_copy[False-orig1]",
            "x/t.py::test_close[mean-2]",
            "x/t.py::test_known",
            "x/t.py::test_plain",
            "x/t.py::test_slow[a b]",
        ]
    );
}

#[test]
fn old_pytest_verbose() {
    let r = parse_test_output(PYTEST_OLD_V);
    assert_eq!(
        r.results
            .get("test_requests.py::RequestsTestCase::test_basic"),
        Some(&Status::Passed)
    );
    assert_eq!(
        r.results
            .get("test_requests.py::RequestsTestCase::test_redirect"),
        Some(&Status::Failed)
    );
    assert_eq!(
        r.results.get("test_requests.py::test_cookies"),
        Some(&Status::Skipped)
    );
    assert_eq!(r.counts.unwrap().passed, 1);
}

#[test]
fn unittest_verbose_both_layouts() {
    let r = parse_test_output(UNITTEST_311);
    assert_eq!(
        r.results.get("test_mod.TestThing.test_ok"),
        Some(&Status::Passed)
    );
    assert_eq!(
        r.results.get("test_mod.TestThing.test_fail"),
        Some(&Status::Failed)
    );
    assert_eq!(
        r.results.get("test_mod.TestThing.test_error"),
        Some(&Status::Error)
    );
    assert_eq!(
        r.results.get("test_mod.TestThing.test_skip"),
        Some(&Status::Skipped)
    );
    assert_eq!(
        r.results.get("test_mod.TestThing.test_xfail"),
        Some(&Status::XFail)
    );
    let c = r.counts.unwrap();
    assert_eq!(
        (c.passed, c.failed, c.errors, c.skipped, c.xfailed),
        (1, 1, 1, 1, 1)
    );

    let r = parse_test_output(UNITTEST_27);
    assert_eq!(
        r.results.get("test_mod.TestThing.test_error"),
        Some(&Status::Error)
    );
    assert_eq!(
        r.results.get("test_mod.TestThing.test_doc"),
        Some(&Status::Passed)
    );
    assert_eq!(r.counts.unwrap().passed, 2);
}

#[test]
fn unfinished_runs_have_no_counts() {
    let cut = &PYTEST_RA[..PYTEST_RA.find("SKIPPED [1]").unwrap()];
    let r = parse_test_output(cut);
    assert!(!r.finished());
    assert_eq!(r.results.len(), 4);
    assert!(!parse_test_output("Segmentation fault (core dumped)\n").finished());
}

fn run(pairs: &[(&str, Status)], finished: bool) -> TestRun {
    TestRun {
        results: pairs.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
        file_errors: BTreeSet::new(),
        counts: finished.then(Counts::default),
        durations: BTreeMap::new(),
        durations_hid_quick: false,
    }
}

/// pytest's `--durations` section, as pytest 7 prints it before the short summary (a test's
/// setup and call add up; pytest 4's `s` width and a parametrized id read the same; a line
/// that only looks alike is not read).
#[test]
fn durations_add_up_per_test_and_change_no_result() {
    let text = "\
============================= slowest 50 durations =============================
2.51s call     xarray/tests/test_dataset.py::TestDataset::test_reduce
0.40s setup    xarray/tests/test_dataset.py::TestDataset::test_reduce
1.00s call     xarray/tests/test_dataset.py::test_rolling[1-True-mean]
0.02s teardown xarray/tests/test_dataset.py::test_rolling[1-True-mean]
0.5s call     tests/test_x.py::TestA::()::test_b

(12 durations < 0.005s hidden.  Use -vv to show these durations.)
3.00s call     somewhere else entirely
=========================== short test summary info ============================
PASSED xarray/tests/test_dataset.py::TestDataset::test_reduce
PASSED xarray/tests/test_dataset.py::test_rolling[1-True-mean]
PASSED tests/test_x.py::TestA::test_b
============================== 3 passed in 4.43s ===============================
";
    let r = parse_test_output(text);
    assert_eq!(r.results.len(), 3);
    assert!(r.results.values().all(|s| *s == Status::Passed));
    let d: Vec<(&str, f64)> = r
        .durations
        .iter()
        .map(|(k, v)| (k.as_str(), (v * 100.0).round() / 100.0))
        .collect();
    assert_eq!(
        d,
        [
            ("tests/test_x.py::TestA::test_b", 0.5),
            (
                "xarray/tests/test_dataset.py::TestDataset::test_reduce",
                2.91
            ),
            (
                "xarray/tests/test_dataset.py::test_rolling[1-True-mean]",
                1.02
            ),
        ]
    );
    // It said it hid the quick ones: every test over 5 ms is listed.
    assert!(r.durations_hid_quick);
    let cut = text.replace(
        "(12 durations < 0.005s hidden.  Use -vv to show these durations.)",
        "",
    );
    assert!(!parse_test_output(&cut).durations_hid_quick);
    let old = text.replace("< 0.005s hidden", "hidden");
    assert!(parse_test_output(&old).durations_hid_quick);
}

#[test]
fn broken_tests_pass_twice_at_base_and_fail_with_the_candidate() {
    use Status::*;
    let b1 = run(
        &[
            ("t.py::a", Passed),
            ("t.py::b", Passed),
            ("t.py::flaky", Passed),
            ("t.py::c", Failed),
            ("t.py::d", Passed),
        ],
        true,
    );
    let b2 = run(
        &[
            ("t.py::a", Passed),
            ("t.py::b", Passed),
            ("t.py::flaky", Failed),
            ("t.py::c", Failed),
            ("t.py::d", Passed),
        ],
        true,
    );
    let cand = run(
        &[
            ("t.py::a", Failed),
            ("t.py::b", Passed),
            ("t.py::flaky", Failed),
            ("t.py::c", Failed),
        ],
        true,
    );
    let r = regression(&b1, &b2, &cand);
    assert_eq!(r.stable, 3);
    assert_eq!(r.flaky, vec!["t.py::flaky"]);
    assert_eq!(
        r.broken,
        vec!["t.py::a"],
        "d was not run: not broken; c failed at base"
    );

    // A crashed run (no counts line) breaks what it did not report.
    let crashed = run(&[("t.py::a", Passed)], false);
    assert_eq!(
        regression(&b1, &b2, &crashed).broken,
        vec!["t.py::b", "t.py::d"]
    );
    // A collection error of the file breaks its tests.
    let mut collect = run(&[], true);
    collect.file_errors.insert("t.py".into());
    assert_eq!(regression(&b1, &b2, &collect).broken.len(), 3);
    // The real output: a teardown error breaks a test that passed at base.
    let base = parse_test_output(&PYTEST_RA.replace(
        "ERROR tests/test_models.py::test_teardown_breaks - RuntimeError: boom\n",
        "",
    ));
    let r = regression(&base, &base, &parse_test_output(PYTEST_RA));
    assert_eq!(r.broken, vec!["tests/test_models.py::test_teardown_breaks"]);
}

#[test]
fn normalized_output_hides_addresses_paths_and_timings() {
    let a = "<Foo object at 0x7f3a2c1d9e50>\nFile \"/tmp/dei-sbx-91/repo/x.py\", line 3\nran in 0.52s (1.5 seconds, 12ms)\nid=140234 pid 991\nkeep 42 and 3 apples and v1.2\r\n";
    let b = "<Foo object at 0x55d1e0a0>\nFile \"/tmp/dei-sbx-17/repo/x.py\", line 3\nran in 0.61s (2.25 seconds, 9ms)\nid=77 pid 12\nkeep 42 and 3 apples and v1.2\n";
    let na = normalize_output(a, &[]);
    assert_eq!(na, normalize_output(b, &[]));
    assert!(na.contains("object at 0x?>"), "{na}");
    assert!(na.contains("File \"<tmp>\", line ?"), "{na}");
    assert!(na.contains("ran in <time> (<time>, <time>)"), "{na}");
    assert!(na.contains("keep 42 and 3 apples and v1.2\n"), "{na}");
    let rooted = normalize_output("/srv/sbx/repo/a.py failed", &["/srv/sbx/repo"]);
    assert_eq!(rooted, "<root>/a.py failed\n");
    assert_ne!(
        normalize_output("x = 1", &[]),
        normalize_output("x = 2", &[])
    );
    // A fresh UUID per run (xarray's HTML ids); a hex run of another shape is kept.
    let html = |id: &str| normalize_output(&format!("<input id='section-{id}' class='x'>"), &[]);
    assert_eq!(
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1"),
        html("0283B432-2d1b-4bc4-af6e-36d60b700338")
    );
    assert_eq!(
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1"),
        "<input id='section-<uuid>' class='x'>\n"
    );
    assert_ne!(
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a"),
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a2")
    );
    assert_ne!(
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1x"),
        html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a2x")
    );
}

#[test]
fn line_numbers_of_tracebacks_and_warnings_are_hidden() {
    // A candidate that edits `core.py` above the warning moves its line.
    let base = "<root>/sympy/core.py:120: SymPyDeprecationWarning: old\n  File \"<root>/a.py\", line 7, in f\n";
    let cand = "<root>/sympy/core.py:131: SymPyDeprecationWarning: old\n  File \"<root>/a.py\", line 19, in f\n";
    assert_eq!(normalize_output(base, &[]), normalize_output(cand, &[]));
    assert!(
        normalize_output(base, &[]).starts_with("<root>/sympy/core.py:?: SymPyDeprecationWarning")
    );
    // The same under the sandbox's temp folder, whose path is hidden whole (sympy-13773:
    // `…/sympy/matrices/matrices.py:2090: DeprecationWarning` at base, `:2092:` with a
    // candidate that adds two lines above it).
    let at = |dir: &str, n: u32| {
        format!(
            "/tmp/dei-sandbox-{dir}/tree/sympy/matrices/matrices.py:{n}: DeprecationWarning: abc\n"
        )
    };
    assert_eq!(
        normalize_output(&at("edAHZL", 2090), &[]),
        normalize_output(&at("Qx81pz", 2092), &[])
    );
    assert_eq!(
        normalize_output(&at("edAHZL", 2090), &[]),
        "<tmp>:?: DeprecationWarning: abc\n"
    );
    // Wherever the temp folder is (`/dev/shm`, a user's `TMPDIR`), a sandbox folder's path
    // reads as under `/tmp`: two runs of sympy-13647 there once printed differently at base,
    // and every candidate read as leaving the reproduction as it was.
    for dir in ["/dev/shm", "/var/tmp/my tmp", "/scratch/x.y-1"] {
        let line = |name: &str, n: u32| {
            format!(
                "{dir}/dei-sandbox-{name}/tree/sympy/core/basic.py:{n}: DeprecationWarning: abc\n\
                 (\"{dir}/dei-sandbox-{name}/cache/x\") and {dir}/dei-sandbox-{name}/tree/a/dei-sandbox-1-b/c\n"
            )
        };
        let want = normalize_output(&line("1-edAHZL", 3).replace(dir, "/tmp"), &[]);
        if dir.contains(' ') {
            // A path with a space: only what follows the space reads as its start.
            assert_ne!(normalize_output(&line("1-edAHZL", 3), &[]), want);
            continue;
        }
        assert_eq!(normalize_output(&line("1-edAHZL", 3), &[]), want, "{dir}");
        assert_eq!(
            normalize_output(&line("1-edAHZL", 3), &[]),
            normalize_output(&line("22-Qx81pz", 5), &[]),
            "{dir}"
        );
    }
    // Not a path: left alone.
    assert_eq!(
        normalize_output("see dei-sandbox-1-a and x/dei-sandbox-2-b", &[]),
        "see dei-sandbox-1-a and x/dei-sandbox-2-b\n"
    );
    // A temp path that is not a Python file keeps what follows it.
    assert_eq!(
        normalize_output("/tmp/x/data.csv:12: bad row", &[]),
        "<tmp>:12: bad row\n"
    );
    // Numbers elsewhere still count: a value printed after `.py:` without a colon, a
    // ratio, a result.
    assert_ne!(
        normalize_output("see a.py:12 and 3", &[]),
        normalize_output("see a.py:12 and 4", &[])
    );
    assert_ne!(
        normalize_output("x.py:3 ok", &[]),
        normalize_output("x.py:4 ok", &[])
    );
}

#[test]
fn an_error_reworded_is_no_change() {
    let o = |exit, exc: Option<&str>, out: &str| ReproOutcome {
        exit,
        exception: exc.map(str::to_string),
        output: out.to_string(),
    };
    let base = o(
        Some(1),
        Some("ValueError"),
        "[dei-repro] statement 2 raised ValueError: not enough values to unpack\n",
    );
    let reworded = o(
        Some(1),
        Some("ValueError"),
        "[dei-repro] statement 2 raised ValueError: an empty array has no shape.\n",
    );
    assert!(!reworded.changed_from(&base));
    // Another statement, another type, another value printed, or no longer raising: changed.
    for other in [
        o(
            Some(1),
            Some("ValueError"),
            "[dei-repro] statement 3 raised ValueError: x\n",
        ),
        o(
            Some(1),
            Some("ValueError"),
            "[dei-repro] statement 2 raised TypeError: x\n",
        ),
        o(
            Some(1),
            Some("ValueError"),
            "[dei-repro] statement 2 raised ValueError: x\n[]\n",
        ),
        o(Some(0), None, "[]\n"),
    ] {
        assert!(other.changed_from(&base), "{other:?}");
    }
    // Other lines that differ only after a colon still count.
    assert!(o(Some(0), None, "Result: 5\n").changed_from(&o(Some(0), None, "Result: 6\n")));
}

#[test]
fn a_candidates_own_prints() {
    let added = [
        "        print(\"res1:\", res1, \"cond1:\", cond1)",
        "    print(f\"Debug: p = {p}, i = {i}\")",
        "print(rf'Before substitution: {c}')",
        "print(x)",
        "print(f\"{x}\")",
        "print('a: %s' % a)",
        "    fprint(\"not a print\")",
        "print(\"res1:\", res1)",
    ];
    assert_eq!(
        print_prefixes(added),
        vec!["res1:", "Debug: p =", "Before substitution:"]
    );
    let base = ReproOutcome {
        exit: Some(0),
        exception: None,
        output: "res1: kept, the base printed it\n[(1,)]\n".into(),
    };
    let cand = ReproOutcome {
        output:
            "res1: kept, the base printed it\nDebug: p = 2, i = 1\n[(1,)]\nDebug: p = 3, i = 2\n"
                .into(),
        ..base.clone()
    };
    let own = print_prefixes(added);
    let dropped = cand.clone().without_own_prints(&own, &base);
    assert!(!dropped.changed_from(&base), "{}", dropped.output);
    // What the fix changes still shows.
    let fixed = ReproOutcome {
        output: "Debug: p = 2, i = 1\n[(1, 2)]\n".into(),
        ..base.clone()
    };
    assert!(fixed.without_own_prints(&own, &base).changed_from(&base));
    // Without its own prints the same output is a change.
    assert!(cand.without_own_prints(&[], &base).changed_from(&base));
}

#[test]
fn final_exception_from_marker_or_traceback() {
    let tb = "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n  File \"/x/sympy/core/sympify.py\", line 9, in sympify\n    raise SympifyError(a)\nsympy.core.sympify.SympifyError: SympifyError: 'x'\n";
    assert_eq!(final_exception(tb).as_deref(), Some("SympifyError"));
    let two = format!("{tb}\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 2\nKeyError: 'k'\n");
    assert_eq!(final_exception(&two).as_deref(), Some("KeyError"));
    assert_eq!(final_exception("all fine\n[1, 2]\n"), None);
    let marked =
        "[dei-repro] statement 2 raised TypeError: bad\n[dei-repro] first exception: TypeError\n";
    assert_eq!(final_exception(marked).as_deref(), Some("TypeError"));
    assert_eq!(final_exception("[dei-repro] no exception\n"), None);
}

#[test]
fn the_first_failing_statement_survives_normalizing() {
    let out = "1\n[dei-repro] statement 4 raised ValueError: bad 0x7f3a\n\
               [dei-repro] statement 9 raised KeyError: 'a'\n[dei-repro] first exception: ValueError\n";
    let run = ReproOutcome::read(Some(1), out, "", &["/tmp/dei-sandbox-x"]);
    assert_eq!(first_failing_statement(&run.output), Some(4));
    assert_eq!(
        first_failing_statement("[dei-repro] statement 12 raised E\n"),
        Some(12)
    );
    assert_eq!(first_failing_statement("[dei-repro] no exception\n"), None);
    assert_eq!(
        first_failing_statement("Traceback (most recent call last):\nValueError: x\n"),
        None
    );
}

#[test]
fn behaviour_classes_count_families_not_runs() {
    let base = ReproOutcome::read(Some(1), "[dei-repro] first exception: TypeError\n", "", &[]);
    let fixed = ReproOutcome::read(Some(0), "3\n[dei-repro] no exception\n", "", &[]);
    assert!(fixed.changed_from(&base));
    assert_eq!(base.exception.as_deref(), Some("TypeError"));
    let reg_ok = Regression {
        stable: 5,
        ..Default::default()
    };
    let reg_bad = Regression {
        stable: 5,
        broken: vec!["t.py::a".into()],
        ..Default::default()
    };
    let fix = Signature::new(Some(&reg_ok), Some(fixed.clone()));
    let same = Signature::new(Some(&reg_ok), Some(base.clone()));
    let breaks = Signature::new(Some(&reg_bad), Some(fixed));
    let cands = [
        ("acr-v20240408_acr-run-1", &fix),
        ("acr-v20240408_acr-run-2", &fix),
        ("acr-v20240408_acr-run-3", &fix),
        ("20240604_CodeR", &same),
        ("20240623_moatless_claude35sonnet", &same),
        ("sweagent-gpt4-0125_cost_2_2", &breaks),
    ];
    let classes = behaviour_classes(&cands);
    assert_eq!(classes.len(), 3);
    assert_eq!(
        classes[0].members,
        vec![3, 4],
        "two families beat three runs of one"
    );
    assert_eq!(classes[0].support(), 2);
    assert_eq!(classes[1].members, vec![0, 1, 2]);
    assert_eq!(classes[1].families, vec!["acr-v20240408"]);
    assert_eq!(
        classes[2].signature.broken.as_deref(),
        Some(&["t.py::a".to_string()][..])
    );
}

#[test]
fn clip_keeps_whole_lines_and_says_how_many_it_cut() {
    assert_eq!(clip("", 3, 100), "");
    assert_eq!(clip("a\nb", 3, 100), "a\nb\n");
    assert_eq!(clip("a\nb\nc\nd\n", 2, 100), "a\nb\n… [2 more lines]\n");
    assert_eq!(clip("aaaa\nbbbb\ncc\n", 10, 9), "aaaa\n… [2 more lines]\n");
    // One line over the whole allowance: its start, cut on a character boundary.
    assert_eq!(clip("ééééé\nx", 10, 5), "éé …\n… [1 more line]\n");
}

#[test]
fn candidates_raising_the_same_exception_worded_differently_share_a_class() {
    // sympy-22005's shape: its fixes raise `NotImplementedError` at statement 5 with and
    // without a closing period.
    let o = |out: &str| ReproOutcome {
        exit: Some(1),
        exception: Some("NotImplementedError".into()),
        output: out.to_string(),
    };
    let a = o("[dei-repro] statement 5 raised NotImplementedError: only finite systems\n[(1,)]\n");
    let b = o("[dei-repro] statement 5 raised NotImplementedError: only finite systems.\n[(1,)]\n");
    let c = o("[dei-repro] statement 5 raised NotImplementedError: only finite systems\n[(2,)]\n");
    let sigs = [
        Signature::new(None, Some(a)),
        Signature::new(None, Some(b)),
        Signature::new(None, Some(c)),
    ];
    let classes = behaviour_classes(&[("x", &sigs[0]), ("y", &sigs[1]), ("z", &sigs[2])]);
    assert_eq!(classes.len(), 2, "{classes:?}");
    assert_eq!(classes[0].members, vec![0, 1]);
    // What a value prints still tells them apart.
    assert_eq!(classes[1].members, vec![2]);
}
