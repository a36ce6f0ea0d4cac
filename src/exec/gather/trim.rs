//! A test file too slow at base loses its slowest tests rather than all the others: pytest's
//! `--durations` names them, and the file runs again without them (`--deselect`). Otherwise a
//! file named after an edited module that took over its gate would run only the tests naming
//! the edit, and any other file over half the time limit would not run for the candidates at
//! all: a file near its gate would run whole or narrowed by chance, as its seconds vary from
//! run to run.

use crate::exec::outcome::TestRun;

/// The tests to leave out of a base run that took `seconds` against `gate`, and their seconds
/// together: the slowest the run's durations list, those not in `keep` (the tests naming the
/// edits) before those in it, until the run less their seconds is within `target` (at most the
/// gate). A test whose id begins another test's id of the run is never chosen: pytest's
/// `--deselect` matches by prefix, so leaving out `t.py::test_align` would leave out
/// `t.py::test_align_exact` too ([`extended_by_another`]). `None` when the run was within the
/// gate, when the listed tests cannot bring it there, or when no test that passed would be
/// left.
pub(super) fn slowest_to_leave_out(
    run: &TestRun,
    seconds: f64,
    (gate, target): (f64, f64),
    keep: &[String],
) -> Option<(Vec<String>, f64)> {
    if seconds <= gate || !run.finished() {
        return None;
    }
    let mut order: Vec<(&String, f64)> = run
        .durations
        .iter()
        .filter(|(id, _)| !extended_by_another(run, id))
        .map(|(id, s)| (id, *s))
        .collect();
    // Tests not naming the edits first, each group slowest first; ties by id, so the choice
    // does not hang on the map's order.
    order.sort_by(|a, b| {
        keep.contains(a.0)
            .cmp(&keep.contains(b.0))
            .then(b.1.total_cmp(&a.1))
            .then(a.0.cmp(b.0))
    });
    let mut left_out = Vec::new();
    let mut left_seconds = 0.0;
    for (id, s) in order {
        if seconds - left_seconds <= target {
            break;
        }
        left_out.push(id.clone());
        left_seconds += s;
    }
    if seconds - left_seconds > target {
        return None;
    }
    let passing_left = run
        .passed()
        .iter()
        .any(|id| !left_out.iter().any(|l| l.as_str() == *id));
    passing_left.then_some((left_out, left_seconds))
}

/// Whether another test of `run` has an id that begins with `id` (`t.py::test_align_exact`
/// for `t.py::test_align`; a parametrized id ends with its bracket, so `[1]` begins no `[10]`).
/// The ids are sorted, so such a test, if any, is the next one.
fn extended_by_another(run: &TestRun, id: &str) -> bool {
    use std::ops::Bound::{Excluded, Unbounded};
    run.results
        .range::<str, _>((Excluded(id), Unbounded))
        .next()
        .is_some_and(|(next, _)| next.starts_with(id))
}

/// Whether a run without `left_out` did leave them out (an older pytest without
/// `--deselect`, or an id it spells otherwise, runs them anyway) and some test passed.
pub(super) fn left_out_in(run: &TestRun, left_out: &[String]) -> bool {
    !run.passed().is_empty() && left_out.iter().all(|id| !run.results.contains_key(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::outcome::{parse_test_output, Status};

    fn run(tests: &[(&str, f64, Status)]) -> TestRun {
        let mut r = parse_test_output("== 1 passed in 1.00s ==\n");
        for (id, s, status) in tests {
            r.results.insert(id.to_string(), *status);
            r.durations.insert(id.to_string(), *s);
        }
        r
    }

    #[test]
    fn the_slowest_tests_go_first_and_those_naming_the_edit_last() {
        use Status::*;
        let mut r = run(&[
            ("t.py::slow_edit", 9.0, Passed),
            ("t.py::big", 8.0, Passed),
            ("t.py::medium", 4.0, Passed),
            ("t.py::quicker", 0.5, Passed),
        ]);
        // Tests too quick for the durations' list.
        r.results.insert("t.py::quick".into(), Passed);
        let keep = vec!["t.py::slow_edit".to_string()];
        // 30 s against a 20 s gate: down to 15 s takes 15 s out. big, medium and quicker
        // (12.5 s) leave 17.5, so slow_edit goes too, last.
        let (out, secs) = slowest_to_leave_out(&r, 30.0, (20.0, 15.0), &keep).unwrap();
        assert_eq!(
            out,
            [
                "t.py::big",
                "t.py::medium",
                "t.py::quicker",
                "t.py::slow_edit"
            ]
        );
        assert_eq!(secs, 21.5);
        // 24 s: big alone brings it to 16, medium to 12.
        let (out, _) = slowest_to_leave_out(&r, 24.0, (20.0, 15.0), &keep).unwrap();
        assert_eq!(out, ["t.py::big", "t.py::medium"]);
        let (out, _) = slowest_to_leave_out(&r, 23.0, (20.0, 15.0), &keep).unwrap();
        assert_eq!(out, ["t.py::big"]);
        // Within the gate: nothing to do.
        assert_eq!(slowest_to_leave_out(&r, 19.0, (20.0, 15.0), &keep), None);
        // The listed tests cannot bring it down (the time is in collection, or in tests the
        // durations do not list).
        assert_eq!(slowest_to_leave_out(&r, 60.0, (20.0, 15.0), &keep), None);
    }

    #[test]
    fn a_trim_leaves_a_passing_test_and_needs_a_finished_run() {
        use Status::*;
        let r = run(&[("t.py::slow", 20.0, Passed), ("t.py::quick", 0.1, Failed)]);
        assert_eq!(slowest_to_leave_out(&r, 25.0, (20.0, 15.0), &[]), None);
        let mut killed = run(&[("t.py::slow", 20.0, Passed), ("t.py::quick", 0.1, Passed)]);
        assert!(slowest_to_leave_out(&killed, 25.0, (20.0, 15.0), &[]).is_some());
        killed.counts = None;
        assert_eq!(slowest_to_leave_out(&killed, 25.0, (20.0, 15.0), &[]), None);
    }

    #[test]
    fn a_test_whose_id_begins_another_is_not_left_out() {
        use Status::*;
        let r = run(&[
            ("t.py::test_align", 9.0, Passed),
            ("t.py::test_align_exact", 0.5, Passed),
            ("t.py::test_roll[1]", 6.0, Passed),
            ("t.py::test_roll[10]", 0.2, Passed),
            ("t.py::test_z", 5.0, Passed),
        ]);
        // 25 s against 20: test_align (9 s) would do alone, but leaving it out would leave
        // out test_align_exact too; test_roll[1] and test_z (11 s) go instead.
        let (out, secs) = slowest_to_leave_out(&r, 25.0, (20.0, 15.0), &[]).unwrap();
        assert_eq!(out, ["t.py::test_roll[1]", "t.py::test_z"]);
        assert_eq!(secs, 11.0);
        // Without it the file cannot be brought within: no trim.
        assert_eq!(slowest_to_leave_out(&r, 40.0, (20.0, 15.0), &[]), None);
        assert!(extended_by_another(&r, "t.py::test_align"));
        assert!(!extended_by_another(&r, "t.py::test_align_exact"));
        assert!(!extended_by_another(&r, "t.py::test_roll[1]"));
        assert!(!extended_by_another(&r, "t.py::test_z"));
        // A class's id begins its tests' ids.
        let c = run(&[("t.py::TestA::test_x", 0.1, Passed)]);
        assert!(extended_by_another(&c, "t.py::TestA"));
        assert!(!extended_by_another(&c, "t.py::TestA::test_x"));
    }

    #[test]
    fn a_rerun_that_still_runs_a_left_out_test_did_not_trim() {
        use Status::*;
        let left = vec!["t.py::slow".to_string()];
        let rerun = run(&[("t.py::quick", 0.1, Passed)]);
        assert!(left_out_in(&rerun, &left));
        let ignored = run(&[("t.py::quick", 0.1, Passed), ("t.py::slow", 9.0, Passed)]);
        assert!(!left_out_in(&ignored, &left));
        let nothing = run(&[("t.py::quick", 0.1, Failed)]);
        assert!(!left_out_in(&nothing, &left));
    }
}
