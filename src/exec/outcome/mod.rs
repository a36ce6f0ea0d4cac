//! What a run printed, read into outcomes: per-test results from pytest (`-rA` short summary,
//! `-v` progress lines, the final counts line) and from `unittest -v`; the tests a candidate
//! breaks (passed twice at the base commit, not with the candidate); a reproduction run's
//! output normalized for comparison and its final exception type; and behaviour classes of
//! candidates, with support counted in distinct agent families.

mod classes;
mod repro;
mod test_runs;
#[cfg(test)]
mod tests;
pub use classes::{behaviour_classes, BehaviourClass, Signature};
pub use repro::{
    clip, final_exception, first_failing_statement, normalize_output, print_prefixes,
    raised_statements, ReproOutcome, REPRO_MARK,
};
pub use test_runs::{parse_test_output, regression, Counts, Regression, Status, TestRun};
