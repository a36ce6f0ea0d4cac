//! The trees a candidate's runs use: its edited files (its edits to the repository's tests
//! set aside), its own debug prints, and the commit the environment is built at.

use crate::exec::outcome::print_prefixes;
use crate::exec::regress;
use crate::exec::sandbox::TreeFile;
use crate::model::{Applies, PatchView};
use std::path::Path;

/// The commit to build the environment at when not the spec's own, and why: the task's base
/// commit stands in for a setup commit the repository does not have. `None`: the spec's.
pub(super) fn build_commit<'a>(
    setup: Option<&str>,
    base: &'a str,
    repo: &Path,
) -> Option<(&'a str, String)> {
    let c = setup.filter(|c| crate::model::repo::Snapshot::open(repo, c).is_err())?;
    let short = |c: &str| c.get(..12).unwrap_or(c).to_string();
    let why = format!(
        "built at the base commit {}: the setup commit {} is not in {}",
        short(base),
        short(c),
        repo.display()
    );
    Some((base, why))
}

/// The files a candidate's after-tree replaces; `None` when it cannot be built. Its edits to
/// test modules the base commit has, and to the rest of its test suite (data, fixtures:
/// [`regress::in_test_suite`]), are left out: the tests that passed at the base commit are
/// run as they were then (as SWE-bench's evaluation puts the test files back), so a candidate
/// that rewrites an assertion to suit its change is seen breaking it. Tests it adds to such a
/// file run as the tests it writes (see [`written`](crate::exec::written)). Returned beside the files: the paths
/// set aside.
pub(super) fn after_files(
    view: &PatchView,
    tests: &regress::TestFiles,
) -> Option<(Vec<TreeFile>, Vec<String>)> {
    if matches!(view.applies, Applies::No | Applies::Empty) || view.files.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    let mut aside = Vec::new();
    for f in &view.files {
        if f.error.is_some() {
            return None;
        }
        // A test module, or another file of the test suite, that the base commit has.
        if f.before.is_some() && (tests.is_test(&f.path) || regress::in_test_suite(&f.path)) {
            aside.push(f.path.clone());
            continue;
        }
        out.push(TreeFile {
            path: f.path.clone(),
            contents: f.after.as_ref().map(|a| a.as_bytes().to_vec()),
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Some((out, aside))
}

/// What the `print` calls a candidate adds to the repository's code start their output with
/// ([`print_prefixes`]): lines it adds to Python files inside a package, tests left out (a
/// root-level file is an agent's scratch and never runs with the reproduction).
pub(super) fn own_prints(view: &PatchView) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in &view.files {
        let Some(after) = f.after.as_deref() else {
            continue;
        };
        if !f.path.ends_with(".py") || !f.path.contains('/') || regress::is_test_file(&f.path) {
            continue;
        }
        let lines: Vec<&str> = after.lines().collect();
        let added = f
            .changed_after
            .iter()
            .flat_map(|r| lines.get(r.start.saturating_sub(1)..r.end.min(lines.len())))
            .flatten()
            .copied();
        for p in print_prefixes(added) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}
