//! Tests the candidates write: test functions a candidate adds to (or changes in) the
//! repository's test files, as a probe for the other candidates. Some agents write a test with
//! their fix (Moatless with Claude 3.5 Sonnet does in most of its Lite patches); a test that
//! fails at the base commit says what its author thinks the fix must do, and running it with
//! every other candidate asks whether they do it too. See docs/execution.md.

use super::regress::is_test_file;
use super::sandbox::TreeFile;
use crate::candidates::family_of;
use crate::model::PatchView;
use crate::syntax::python;
use std::collections::BTreeSet;

/// The tests one candidate writes.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenTests {
    pub agent: String,
    /// The agent's family (its tests are not evidence about its own family's candidates).
    pub family: String,
    /// The candidate's versions of the test files holding them, put over any tree they run in.
    pub files: Vec<TreeFile>,
    /// pytest node ids (`path::Class::test_name`) of the test functions it adds or changes.
    pub ids: Vec<(String, String)>,
}

/// The test functions a rebuilt candidate adds or changes: in its after-version of each test
/// file, every outermost `test*` function or method whose lines the patch touches.
pub fn written_by(view: &PatchView) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in &view.files {
        let (Some(after), None) = (&f.after, &f.error) else {
            continue;
        };
        if !is_test_file(&f.path) || f.changed_after.is_empty() {
            continue;
        }
        let idx = python::index(after);
        for d in &idx.defs {
            let parts: Vec<&str> = d.name.split('.').collect();
            // The outermost test function: the last part names a test, no earlier one does.
            let Some((last, outer)) = parts.split_last() else {
                continue;
            };
            if !last.starts_with("test") || outer.iter().any(|p| p.starts_with("test")) {
                continue;
            }
            if f.changed_after.iter().any(|r| r.overlaps(&d.lines)) {
                let id = format!("{}::{}", f.path, parts.join("::"));
                if !out.iter().any(|(_, x)| x == &id) {
                    out.push((f.path.clone(), id));
                }
            }
        }
    }
    out
}

/// The tests the candidates write, at most one set per agent family (its first candidate
/// that writes any, in the candidates' order), families in order of first appearance.
pub fn written_tests(cands: &[(&str, &PatchView)]) -> Vec<WrittenTests> {
    let mut families = BTreeSet::new();
    let mut out = Vec::new();
    for (agent, view) in cands {
        let family = family_of(agent);
        if families.contains(&family) {
            continue;
        }
        let ids = written_by(view);
        if ids.is_empty() {
            continue;
        }
        let paths: BTreeSet<&str> = ids.iter().map(|(p, _)| p.as_str()).collect();
        let files = view
            .files
            .iter()
            .filter(|f| paths.contains(f.path.as_str()))
            .map(|f| TreeFile {
                path: f.path.clone(),
                contents: f.after.as_ref().map(|a| a.as_bytes().to_vec()),
            })
            .collect();
        families.insert(family.clone());
        out.push(WrittenTests {
            agent: agent.to_string(),
            family,
            files,
            ids,
        });
    }
    out
}
