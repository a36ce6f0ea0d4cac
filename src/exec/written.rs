//! Tests the candidates write: test functions a candidate adds to (or changes in) the
//! repository's test files, as a probe for the other candidates. Some agents write a test with
//! their fix (Moatless with Claude 3.5 Sonnet does in most of its Lite patches); a test that
//! fails at the base commit says what its author thinks the fix must do, and running it with
//! every other candidate asks whether they do it too. See docs/execution.md.

use super::regress::{TestFiles, MAX_IDS};
use super::sandbox::TreeFile;
use crate::candidates::family_of;
use crate::model::PatchView;
use crate::syntax::python;
use std::collections::BTreeSet;

/// The tests one candidate writes.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenTests {
    pub agent: String,
    /// The agent's family (one set per family; the set is no evidence about its author's own
    /// candidate, see `Behaviour::wrote`).
    pub family: String,
    /// The candidate's versions of the test files holding them, put over any tree they run in.
    pub files: Vec<TreeFile>,
    /// pytest node ids (`path::Class::test_name`) of the test functions it adds or changes.
    pub ids: Vec<(String, String)>,
}

/// The test functions a rebuilt candidate adds or changes: in its after-version of each test
/// file, every outermost `test*` function or method whose lines the patch touches (at most
/// [`MAX_IDS`]: a patch that rewrites a whole test file does not make a command of hundreds).
pub fn written_by(view: &PatchView, tests: &TestFiles) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for f in &view.files {
        let (Some(after), None) = (&f.after, &f.error) else {
            continue;
        };
        if !tests.is_test(&f.path) || f.changed_after.is_empty() {
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
            if out.len() < MAX_IDS && f.changed_after.iter().any(|r| r.overlaps(&d.lines)) {
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
pub fn written_tests(cands: &[(&str, &PatchView)], tests: &TestFiles) -> Vec<WrittenTests> {
    let mut families = BTreeSet::new();
    let mut out = Vec::new();
    for (agent, view) in cands {
        let family = family_of(agent);
        if families.contains(&family) {
            continue;
        }
        let ids = written_by(view, tests);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Candidate;
    use crate::patch::{rebuild, Files, Mode};

    const BASE: &str = "import x\n\n\ndef test_a():\n    assert x.f() == 1\n\n\nclass TestB:\n    def test_b(self):\n        assert x.g() == 2\n\n    def test_c(self):\n        assert True\n";

    fn view(patch: &str) -> PatchView {
        let base: Files = [
            ("tests/test_x.py".to_string(), Some(BASE.to_string())),
            (
                "x.py".to_string(),
                Some("def f():\n    return 0\n".to_string()),
            ),
        ]
        .into_iter()
        .collect();
        let c = Candidate {
            instance_id: "i".into(),
            agent: "20241117_moatless_x".into(),
            patch: patch.into(),
            resolved: None,
            origin: Default::default(),
        };
        rebuild(&c, &base, Mode::Strict)
    }

    #[test]
    fn the_test_functions_a_patch_adds_or_changes_are_its_written_tests() {
        // Changes test_b (a method: its class is in the id), adds test_d; test_a and test_c
        // are untouched; the source edit is not a test.
        let patch = [
            "--- a/tests/test_x.py",
            "+++ b/tests/test_x.py",
            "@@ -9,5 +9,9 @@ class TestB:",
            "     def test_b(self):",
            "-        assert x.g() == 2",
            "+        assert x.g() == 3",
            " ",
            "     def test_c(self):",
            "         assert True",
            "+",
            "+",
            "+def test_d():",
            "+    assert x.f() == 0",
            "--- a/x.py",
            "+++ b/x.py",
            "@@ -1,2 +1,2 @@",
            " def f():",
            "-    return 0",
            "+    return 1",
            "",
        ]
        .join("\n");
        let v = view(&patch);
        assert!(v.error.is_none(), "{:?}", v.error);
        assert_eq!(
            written_by(&v, &TestFiles::default()),
            vec![
                (
                    "tests/test_x.py".to_string(),
                    "tests/test_x.py::TestB::test_b".to_string()
                ),
                (
                    "tests/test_x.py".to_string(),
                    "tests/test_x.py::test_d".to_string()
                ),
            ]
        );
        let sets = written_tests(
            &[("20241117_moatless_x", &v), ("20240609_moatless_y", &v)],
            &TestFiles::default(),
        );
        // One set per family: the second moatless run adds nothing.
        assert_eq!(sets.len(), 1);
        assert_eq!(sets[0].family, "moatless");
        assert_eq!(sets[0].files.len(), 1);
        assert_eq!(sets[0].files[0].path, "tests/test_x.py");
        // A patch that touches no test file writes no tests.
        let src_only = view(
            "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 0\n+    return 1\n",
        );
        assert!(written_by(&src_only, &TestFiles::default()).is_empty());
    }
}
