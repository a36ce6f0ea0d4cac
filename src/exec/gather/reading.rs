//! What the reproduction's runs say: how a run ended, whether the issue's code could reach
//! the code it is about at the base commit, and how a candidate's run differs from the base's.

use super::runs::{Results, Run};
use super::IssueExec;
use crate::exec::env::{extra_for, extra_named_in, Extra};
use crate::exec::outcome::{first_failing_statement, raised_statements, ReproOutcome, TestRun};
use crate::exec::repro::RepoNames;
use crate::localize::issue::names_on_boundary;
use crate::model::ReproChange;
use std::collections::{BTreeMap, BTreeSet};

pub(super) fn repro_outcome(run: &Run) -> ReproOutcome {
    let exit = if run.timed_out { None } else { run.code };
    ReproOutcome::read(exit, &run.output, "", &[])
}

/// Why a run never reached the repository's code, when it ended in `ModuleNotFoundError` /
/// `ImportError` for a package the environment lacks: a top-level module that is not one of
/// the repository's own (`No module named 'numpy'`), or an `ImportError` the repository
/// raises itself to say an optional package is missing (sympy's "LaTeX parsing requires the
/// antlr4 python package, provided by pip …"). `None` otherwise: an import error of the
/// repository's own code is what the issue may be about.
pub(super) fn missing_package(o: &ReproOutcome, names: &RepoNames) -> Option<String> {
    if !matches!(
        o.exception.as_deref(),
        Some("ModuleNotFoundError" | "ImportError")
    ) {
        return None;
    }
    if let Some(top) = unimported_module(&o.output) {
        return (!top.is_empty() && !names.modules.contains(top)).then(|| {
            format!("it cannot import `{top}`, which is not part of the repository nor installed")
        });
    }
    let message = import_error_message(&o.output)?;
    let lower = message.to_ascii_lowercase();
    let says_missing = lower.contains("requires the")
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| matches!(w, "install" | "installed" | "pip" | "conda"));
    says_missing.then(|| {
        let short: String = message.chars().take(100).collect();
        format!("the environment lacks a package it needs (ImportError: {short})")
    })
}

/// What tells code quoted from the library from a reproduction (see [`only_name_errors`]).
#[derive(Debug, Clone, Default)]
pub(super) struct Quoted {
    /// Top-level statements of the code (numbered 1…n in its output).
    pub statements: usize,
    /// The statements that are imports.
    pub imports: Vec<usize>,
    /// Names the code uses but never binds or imports.
    pub unbound: Vec<String>,
}

/// When the reproduction's output reports each of its statements (1…n) but its imports
/// raising `NameError` for a name the code never binds, the first one's message (`name 'app'
/// is not defined`). An import that runs proves nothing of the issue (an `import os` that
/// `dei` added runs, and every statement after it raises `NameError` for `app`); a name the
/// code binds, or one it never names, raised in the library's own code, and that may be the
/// bug.
pub(super) fn only_name_errors(output: &str, quoted: &Quoted) -> Option<String> {
    let mut raised = BTreeSet::new();
    let mut first = None;
    for (n, what) in raised_statements(output) {
        let msg = what.strip_prefix("NameError: ")?;
        let name = msg.strip_prefix("name '")?.split('\'').next()?;
        if !quoted.unbound.iter().any(|u| u == name) {
            return None;
        }
        raised.insert(n);
        first.get_or_insert_with(|| msg.to_string());
    }
    let rest = (1..=quoted.statements).filter(|n| !quoted.imports.contains(n));
    (!raised.is_empty() && raised.iter().copied().eq(rest))
        .then_some(first)
        .flatten()
}

/// The top-level module of the last `No module named 'x.y'` in `output` (`x`).
pub(super) fn unimported_module(output: &str) -> Option<&str> {
    let at = output.rfind("No module named ")?;
    let rest = output[at + "No module named ".len()..].trim_start_matches(['\'', '"']);
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].split('.').next()
}

/// Whether Python `code` has a line importing `module` (`import numpy as np`,
/// `from numpy.linalg import norm`), at any indentation.
pub(super) fn imports_module(code: &str, module: &str) -> bool {
    let names = |r: &str| {
        r.trim_start()
            .strip_prefix(module)
            .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    code.lines().any(|l| {
        let t = l.trim_start();
        match (t.strip_prefix("import "), t.strip_prefix("from ")) {
            (Some(list), _) => list.split(',').any(names),
            (None, Some(from)) => names(from),
            (None, None) => false,
        }
    })
}

/// The first line of the last `ImportError: …` in `output`.
fn import_error_message(output: &str) -> Option<&str> {
    let at = output.rfind("ImportError: ")?;
    Some(output[at + "ImportError: ".len()..].lines().next()?.trim())
}

/// The known package ([`crate::exec::env::extra_for`]) whose absence stopped a run: the
/// module it could not import, or the one an optional import's message names. `None` when the
/// run did not stop on a missing package, or that package is not a known one.
pub(super) fn missing_extra(o: &ReproOutcome, names: &RepoNames) -> Option<Extra> {
    missing_package(o, names)?;
    match unimported_module(&o.output) {
        Some(top) => extra_for(top),
        None => extra_named_in(import_error_message(&o.output)?),
    }
}

/// Whether an agent's reproduction script, as it ran at base, can stand in for the issue's:
/// it ended within the time limit, and not on something outside the issue (an import the
/// base commit cannot satisfy, a syntax error, a missing file, the network the sandbox
/// withholds).
pub(super) fn usable_agent_script(o: &ReproOutcome, names: &RepoNames) -> bool {
    if o.exit.is_none() || missing_package(o, names).is_some() {
        return false;
    }
    let Some(e) = o.exception.as_deref() else {
        return true;
    };
    let lower = e.to_ascii_lowercase();
    !matches!(
        e,
        "SyntaxError"
            | "IndentationError"
            | "ImportError"
            | "ModuleNotFoundError"
            | "FileNotFoundError"
    ) && ![
        "connection",
        "gaierror",
        "urlerror",
        "maxretry",
        "timeout",
        "proxy",
        "ssl",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The runs a regression compares for tree `t` and test file `k`: the file's two runs at the
/// base commit and its first run with the tree.
pub(super) fn compared_runs(
    tests: &BTreeMap<(usize, usize, u32), TestRun>,
    t: usize,
    k: usize,
) -> Option<(&TestRun, &TestRun, &TestRun)> {
    Some((
        tests.get(&(0, k, 0))?,
        tests.get(&(0, k, 1))?,
        tests.get(&(t, k, 0))?,
    ))
}

/// How a candidate's reproduction run compares with the base commit's. A run that first fails
/// at the statement where the base run first failed, with another exception the issue never
/// names, still fails ([`ReproChange::StillFails`]): a sum that raises `AttributeError` there
/// instead of the `GeometryError` the issue reports is not fixed. An exception the issue names
/// (it asks for a `ValueError`), or a first failure at a later statement (the reported one now
/// passes), is a change. A first failure at an earlier statement, which ran at the base
/// commit, is broken (a candidate whose module does not import, or whose earlier `assert`
/// fails), unless it raises another exception than the base run, one the issue names.
pub(super) fn repro_change(base: &ReproOutcome, cand: &ReproOutcome, issue: &str) -> ReproChange {
    if !cand.changed_from(base) {
        return ReproChange::Same;
    }
    if cand.exit.is_none() || (cand.exception.is_some() && base.exception.is_none()) {
        return ReproChange::Broken;
    }
    let (Some(was), Some(now)) = (&base.exception, &cand.exception) else {
        return ReproChange::Changed;
    };
    let (base_at, cand_at) = (
        first_failing_statement(&base.output),
        first_failing_statement(&cand.output),
    );
    // An exception the issue names is one it asks for only when the base run does not raise
    // it: issues name the exception they report too.
    let asked_for = was != now && names_on_boundary(issue, now);
    match (base_at, cand_at) {
        (Some(b), Some(c)) if c < b && !asked_for => ReproChange::Broken,
        (Some(b), Some(c)) if c == b && was != now && !asked_for => ReproChange::StillFails,
        _ => ReproChange::Changed,
    }
}

/// Why a reproduction whose two base runs end differently is not used.
pub(super) const UNSTEADY: &str = "it ends differently in two runs at the base commit";

/// The reproduction has run twice at base: `first` is the first run, `seen.repros[0]` the
/// second. Output that differs between them (random numbers, an order that follows string
/// hashing, a first-run cache message) would make every candidate look as if it changed
/// what the issue's code does; from then on only how a run ends (exit status, exception) is
/// kept. Runs that end differently leave nothing to compare: the reproduction is dropped
/// (`false`).
pub(super) fn settle_repro(out: &mut IssueExec, seen: &mut Results, first: &ReproOutcome) -> bool {
    let Some(second) = seen.repros.get_mut(&0) else {
        return false;
    };
    if second.exit != first.exit || second.exception != first.exception {
        seen.repros.remove(&0);
        out.reproduction = false;
        return false;
    }
    if second.output != first.output {
        second.output.clear();
        out.repro_output_unstable = true;
    }
    true
}

/// How a reproduction run ended, in words: `raises ValueError at statement 4` (the statement
/// the script reports first), `raises ValueError` (a traceback the script does not wrap),
/// `runs without error`, `exits with status 2`, `is killed (time limit)`.
pub(super) fn describe(o: &ReproOutcome) -> String {
    match (&o.exception, o.exit) {
        (Some(e), _) => match first_failing_statement(&o.output) {
            Some(n) => format!("raises {e} at statement {n}"),
            None => format!("raises {e}"),
        },
        (None, Some(0)) => "runs without error".into(),
        (None, Some(c)) => format!("exits with status {c}"),
        (None, None) => "is killed (time limit)".into(),
    }
}
