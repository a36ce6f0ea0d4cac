//! Regression test selection: the repository's existing test files that exercise what a
//! candidate edits, found at the base commit with the tree-sitter index. A test file counts
//! when it is named after an edited module (`test_<mod>.py`, `test_<pkg>_<mod>.py`,
//! `unittest_<mod>.py`), imports it, or names the edited
//! definitions; files are ranked and capped, and the test functions that name an edited
//! definition are listed as pytest node ids. See docs/execution.md.

use crate::context::edited_units;
use crate::localize::search::FileIndex;
use crate::model::paths::{is_python, is_test_path};
use crate::model::PatchView;
use crate::syntax::python::PyIndex;
use std::collections::{BTreeMap, BTreeSet};

/// Test files kept per candidate.
pub const MAX_FILES: usize = 4;
/// Test ids listed per file.
pub const MAX_IDS: usize = 50;

/// One edited definition of a source file (`name` empty or `<module>` for module-level code).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edit {
    pub path: String,
    pub name: String,
}

/// A selected test file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TestFile {
    pub path: String,
    pub score: f64,
    /// Why it was chosen (`named after requests/models.py`, `imports requests/models.py`,
    /// `names Session.request`).
    pub reasons: Vec<String>,
    /// pytest node ids (`path::Class::test_name`) of the tests that name an edited definition.
    pub tests: Vec<String>,
    /// Named after an edited module (`test_<mod>.py`): the file tests that module, so its
    /// other tests may reach the edit indirectly (a printer method through `latex(...)`); it is
    /// worth running whole when that is quick enough.
    pub named_after: bool,
}

/// The edits of a rebuilt candidate: its edited definitions in Python source files (test
/// files the candidate itself edits are not sources).
pub fn edits_of(view: &PatchView) -> Vec<Edit> {
    let mut out: Vec<Edit> = edited_units(view)
        .into_iter()
        .filter(|(p, _, _)| is_python(p) && !is_test_file(p))
        .map(|(path, name, _)| Edit { path, name })
        .collect();
    // Files the patch creates or could not read have no units: keep the file itself.
    for f in &view.files {
        if is_python(&f.path) && !is_test_file(&f.path) && !out.iter().any(|e| e.path == f.path) {
            out.push(Edit {
                path: f.path.clone(),
                name: String::new(),
            });
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A test module: `test_*.py` / `*_test.py`, or under a test folder a `.py` whose name starts
/// with `test` or `unittest_` (pylint's `tests/checkers/unittest_misc.py`), not `conftest.py`
/// nor `__init__.py`.
pub fn is_test_file(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    if !base.ends_with(".py") || base == "conftest.py" || base == "__init__.py" {
        return false;
    }
    base.starts_with("test_")
        || base.ends_with("_test.py")
        || (is_test_path(path) && (base.starts_with("test") || base.starts_with("unittest_")))
}

/// What a test file says it tests: its name less `test_`/`unittest_` before or `_test` after
/// (`test_ext_viewcode.py` → `ext_viewcode`); empty when it has none of them.
fn test_stem(path: &str) -> &str {
    let base = path
        .rsplit('/')
        .next()
        .unwrap_or(path)
        .trim_end_matches(".py");
    base.strip_prefix("test_")
        .or_else(|| base.strip_prefix("unittest_"))
        .or_else(|| base.strip_suffix("_test"))
        .unwrap_or("")
}

/// The names a test file may be named after for a module: its stem, then the stem with its
/// packages before it, joined by `_` (`sphinx/ext/viewcode.py` → `viewcode`, `ext_viewcode`,
/// `sphinx_ext_viewcode`, as sphinx names `tests/test_ext_viewcode.py`); a package's
/// `__init__.py` is named by its folder (`flask/json/__init__.py` → `json`, `flask_json`).
fn module_names(path: &str) -> Vec<String> {
    let mut parts: Vec<&str> = path.trim_end_matches(".py").split('/').collect();
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    (1..=parts.len())
        .map(|n| parts[parts.len() - n..].join("_"))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Names too common to say a test exercises a definition.
fn generic(name: &str) -> bool {
    name.len() < 4
        || (name.starts_with("__") && name.ends_with("__"))
        || matches!(
            name,
            "main"
                | "run"
                | "call"
                | "copy"
                | "get"
                | "set"
                | "update"
                | "setup"
                | "test"
                | "init"
                | "name"
                | "value"
                | "data"
                | "items"
                | "keys"
                | "values"
                | "append"
                | "close"
                | "open"
                | "read"
                | "write"
        )
}

/// The names an edit is known by in a test: the short name and, for a method, its class.
fn edit_names(e: &Edit) -> Vec<&str> {
    if e.name.is_empty() || e.name == "<module>" {
        return Vec::new();
    }
    let mut parts: Vec<&str> = e.name.split('.').collect();
    let short = parts.pop().unwrap_or("");
    let mut v = vec![short];
    if let Some(class) = parts.first() {
        v.push(class);
    }
    v.retain(|n| !generic(n));
    v
}

/// The edited definitions (`names`) a test file names, at most 3 of them: each adds to its
/// score.
fn named_in<'a>(idx: &PyIndex, names: &BTreeSet<&'a str>) -> Vec<&'a str> {
    names
        .iter()
        .copied()
        .filter(|n| idx.idents.contains_key(*n))
        .take(3)
        .collect()
}

/// Select the test files that exercise `edits`, best first, at most `cap`.
///
/// Score of a test file: +3 named after an edited module (`test_<stem>.py`, or the stem with
/// its packages: `test_ext_viewcode.py`; `unittest_<stem>.py`; see [`module_names`]; +1 more when it
/// lives in that module's package or a top-level `tests/`/`testing/` folder); +2 imports an
/// edited module (resolved with the repository's import index); +1.5 for each edited
/// definition it names (short name, or the method's class; common names such as `get` or
/// dunders do not count), at most 3 of them. Ties: path order. Only files scoring ≥ 2 are
/// kept (naming one definition is not enough alone).
pub fn select(repo: &FileIndex, edits: &[Edit], cap: usize) -> Vec<TestFile> {
    let sources: BTreeSet<&str> = edits.iter().map(|e| e.path.as_str()).collect();
    let source_idx: BTreeMap<usize, &str> = sources
        .iter()
        .filter_map(|p| {
            repo.files
                .iter()
                .position(|f| f.path == *p)
                .map(|i| (i, *p))
        })
        .collect();
    let names: BTreeSet<&str> = edits.iter().flat_map(edit_names).collect();
    let mut out: Vec<TestFile> = Vec::new();
    for (i, f) in repo.files.iter().enumerate() {
        if !is_test_file(&f.path) {
            continue;
        }
        let mut score = 0.0;
        let mut reasons = Vec::new();
        let mut named_after = false;
        let tested = test_stem(&f.path);
        for s in &sources {
            if !tested.is_empty() && module_names(s).iter().any(|m| m == tested) {
                score += 3.0;
                let pkg = s.rsplit_once('/').map_or("", |(d, _)| d);
                let top = pkg.split('/').next().unwrap_or("");
                let dir = f.path.rsplit_once('/').map_or("", |(d, _)| d);
                if (!top.is_empty() && dir.starts_with(top))
                    || matches!(dir, "tests" | "testing" | "test")
                    || dir.starts_with("tests/")
                    || dir.starts_with("testing/")
                {
                    score += 1.0;
                }
                reasons.push(format!("named after {s}"));
                named_after = true;
                break;
            }
        }
        let imports = repo.imports_of(i);
        for (j, p) in &source_idx {
            if imports.contains(j) {
                score += 2.0;
                reasons.push(format!("imports {p}"));
                break;
            }
        }
        let idx = f.index();
        let named = named_in(&idx, &names);
        for n in &named {
            score += 1.5;
            reasons.push(format!("names {n}"));
        }
        if score < 2.0 {
            continue;
        }
        out.push(TestFile {
            path: f.path.clone(),
            score,
            reasons,
            tests: test_ids(&f.path, &idx, &names),
            named_after,
        });
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.path.cmp(&b.path)));
    out.truncate(cap);
    out
}

/// The fallback when no candidate of an issue reaches a test file by [`select`]: the test
/// files importing the package an edited module lives in (`test_requests.py`'s
/// `import requests` for an edit of `requests/sessions.py`), which reach the edit through the
/// package's names. Score 1 each, +1.5 per edited definition named (at most 3); best first,
/// then path order; at most `cap`. An edit of a package's `__init__.py` counts its own
/// package.
pub fn select_by_package(repo: &FileIndex, edits: &[Edit], cap: usize) -> Vec<TestFile> {
    let packages: BTreeMap<usize, String> = edits
        .iter()
        .filter_map(|e| {
            let dir = e.path.rsplit_once('/')?.0;
            let init = format!("{dir}/__init__.py");
            let i = repo.files.iter().position(|f| f.path == init)?;
            Some((i, dir.to_string()))
        })
        .collect();
    if packages.is_empty() {
        return Vec::new();
    }
    let names: BTreeSet<&str> = edits.iter().flat_map(edit_names).collect();
    let mut out: Vec<TestFile> = Vec::new();
    for (i, f) in repo.files.iter().enumerate() {
        if !is_test_file(&f.path) {
            continue;
        }
        let imports = repo.imports_of(i);
        let Some(pkg) = packages
            .iter()
            .find(|(j, _)| imports.contains(j))
            .map(|(_, d)| d)
        else {
            continue;
        };
        let idx = f.index();
        let mut reasons = vec![format!("imports the package {pkg}")];
        let named = named_in(&idx, &names);
        reasons.extend(named.iter().map(|n| format!("names {n}")));
        out.push(TestFile {
            path: f.path.clone(),
            score: 1.0 + 1.5 * named.len() as f64,
            reasons,
            tests: test_ids(&f.path, &idx, &names),
            named_after: false,
        });
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.path.cmp(&b.path)));
    out.truncate(cap);
    out
}

/// Select for a rebuilt candidate (see [`edits_of`], [`select`]).
pub fn select_for(repo: &FileIndex, view: &PatchView, cap: usize) -> Vec<TestFile> {
    select(repo, &edits_of(view), cap)
}

/// pytest node ids of the test functions (top-level `test*` functions and `test*` methods of
/// top-level `Test*` classes) whose body names one of `names`.
fn test_ids(path: &str, idx: &PyIndex, names: &BTreeSet<&str>) -> Vec<String> {
    let mut out = Vec::new();
    for d in &idx.defs {
        let short = d.short();
        if !short.starts_with("test") || d.kind != crate::model::SnippetKind::Function {
            continue;
        }
        let ok_place = match d.parent {
            None => d.depth == 0,
            Some(p) => {
                let parent = &idx.defs[p];
                d.depth == 1 && parent.depth == 0 && parent.kind == crate::model::SnippetKind::Class
            }
        };
        if !ok_place {
            continue;
        }
        let mentions = names.iter().any(|n| {
            idx.idents
                .get(*n)
                .is_some_and(|ls| ls.iter().any(|&l| l >= d.lines.start && l <= d.lines.end))
        });
        if mentions {
            out.push(format!("{path}::{}", d.name.replace('.', "::")));
            if out.len() >= MAX_IDS {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> FileIndex {
        let p = |a: &str, b: &str| (a.to_string(), b.to_string());
        FileIndex::from_pairs(vec![
            p("requests/__init__.py", "from .models import Request, Response\nfrom .api import get\n"),
            p("requests/models.py", "class Request(object):\n    def register_hook(self, event, hook):\n        pass\n\n    def prepare(self):\n        pass\n"),
            p("requests/api.py", "def get(url):\n    pass\n"),
            p("requests/utils.py", "def to_key_val_list(value):\n    pass\n"),
            p("test_requests.py", "import requests\nfrom requests.models import Request\n\n\nclass RequestsTestCase:\n    def test_hooks(self):\n        r = Request()\n        r.register_hook('response', f)\n\n    def test_other(self):\n        pass\n\n\ndef test_prepare_only():\n    Request().prepare()\n"),
            p("tests/test_models.py", "def test_nothing():\n    assert 1\n"),
            p("tests/test_utils.py", "from requests.utils import to_key_val_list\n\ndef test_kv():\n    to_key_val_list([])\n"),
            p("tests/conftest.py", "import requests.models\n"),
            p("docs/test_notes.txt", ""),
        ])
    }

    fn edit(path: &str, name: &str) -> Edit {
        Edit {
            path: path.into(),
            name: name.into(),
        }
    }

    #[test]
    fn test_files_by_name_import_and_mention_ranked_and_capped() {
        let r = repo();
        let sel = select(
            &r,
            &[edit("requests/models.py", "Request.register_hook")],
            MAX_FILES,
        );
        let paths: Vec<&str> = sel.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(
            paths,
            vec!["test_requests.py", "tests/test_models.py"],
            "{sel:#?}"
        );
        assert_eq!(
            sel[0].reasons,
            vec![
                "imports requests/models.py",
                "names Request",
                "names register_hook"
            ]
        );
        assert_eq!(
            sel[0].tests,
            vec![
                "test_requests.py::RequestsTestCase::test_hooks",
                "test_requests.py::test_prepare_only"
            ]
        );
        assert_eq!(sel[1].reasons, vec!["named after requests/models.py"]);
        assert!(sel[1].tests.is_empty());
        assert!(sel[1].named_after && !sel[0].named_after);
        assert_eq!(
            select(
                &r,
                &[edit("requests/models.py", "Request.register_hook")],
                1
            )
            .len(),
            1
        );
        // An edit nobody tests directly.
        let sel = select(&r, &[edit("requests/api.py", "get")], MAX_FILES);
        assert!(sel.is_empty(), "a generic name and no test_api.py: {sel:?}");
        let sel = select(
            &r,
            &[edit("requests/utils.py", "to_key_val_list")],
            MAX_FILES,
        );
        assert_eq!(sel[0].path, "tests/test_utils.py");
        assert_eq!(sel[0].score, 3.0 + 1.0 + 2.0 + 1.5);
        assert_eq!(sel[0].tests, vec!["tests/test_utils.py::test_kv"]);
        assert!(sel[0].named_after);
    }

    #[test]
    fn test_files_named_with_their_package_or_unittest_prefix() {
        // sphinx names an extension's tests `test_ext_<mod>.py` and loads the extension by
        // name in a test root's conf.py, so neither the stem nor an import finds them; pylint
        // names a checker's `unittest_<mod>.py`.
        let r = FileIndex::from_pairs(vec![
            ("sphinx/ext/viewcode.py".into(), "def collect_pages(app):\n    pass\n".into()),
            ("tests/test_ext_viewcode.py".into(), "import pytest\n\ndef test_viewcode(app):\n    app.builder.build_all()\n".into()),
            ("tests/test_ext_autodoc.py".into(), "import pytest\n".into()),
            ("pylint/checkers/misc.py".into(), "class EncodingChecker:\n    def process_tokens(self, tokens):\n        pass\n".into()),
            ("tests/checkers/unittest_misc.py".into(), "from pylint.testutils import CheckerTestCase\n\nclass TestFixme(CheckerTestCase):\n    def test_fixme(self):\n        pass\n".into()),
        ]);
        let sel = select(
            &r,
            &[edit("sphinx/ext/viewcode.py", "collect_pages")],
            MAX_FILES,
        );
        let paths: Vec<&str> = sel.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, ["tests/test_ext_viewcode.py"], "{sel:?}");
        assert_eq!(sel[0].reasons, ["named after sphinx/ext/viewcode.py"]);
        assert!(sel[0].named_after);
        let sel = select(
            &r,
            &[edit(
                "pylint/checkers/misc.py",
                "EncodingChecker.process_tokens",
            )],
            MAX_FILES,
        );
        let paths: Vec<&str> = sel.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, ["tests/checkers/unittest_misc.py"], "{sel:?}");
        assert!(sel[0].named_after);
    }

    #[test]
    fn a_test_importing_only_the_package_is_the_fallback() {
        let r = FileIndex::from_pairs(vec![
            ("requests/__init__.py".into(), "from .sessions import Session\n".into()),
            ("requests/sessions.py".into(), "class SessionRedirectMixin:\n    def resolve_redirects(self):\n        pass\n".into()),
            ("test_requests.py".into(), "import requests\n\ndef test_redirect():\n    requests.Session().resolve_redirects()\n\ndef test_other():\n    pass\n".into()),
            ("tests/test_unrelated.py".into(), "import os\n".into()),
        ]);
        let edits = [edit(
            "requests/sessions.py",
            "SessionRedirectMixin.resolve_redirects",
        )];
        // The rules of `select` find nothing: no file named after sessions.py, none imports it.
        assert!(select(&r, &edits, 6).is_empty());
        let sel = select_by_package(&r, &edits, 6);
        assert_eq!(sel.len(), 1, "{sel:?}");
        assert_eq!(sel[0].path, "test_requests.py");
        assert_eq!(sel[0].score, 1.0 + 1.5);
        assert_eq!(sel[0].tests, ["test_requests.py::test_redirect"]);
        assert_eq!(
            sel[0].reasons,
            ["imports the package requests", "names resolve_redirects"]
        );
        // A top-level module has no package: nothing to fall back to.
        assert!(select_by_package(&r, &[edit("setup.py", "")], 6).is_empty());
    }

    #[test]
    fn test_files_are_recognised() {
        for p in [
            "tests/test_x.py",
            "x_test.py",
            "testing/test_y.py",
            "sympy/core/tests/test_basic.py",
        ] {
            assert!(is_test_file(p), "{p}");
        }
        for p in [
            "tests/conftest.py",
            "tests/__init__.py",
            "requests/models.py",
            "tests/helpers.py",
            "docs/test_notes.txt",
        ] {
            assert!(!is_test_file(p), "{p}");
        }
        assert!(is_test_file("tests/checkers/unittest_misc.py"));
        assert!(
            !is_test_file("pylint/checkers/unittest_misc.py"),
            "not in a test folder"
        );
        assert_eq!(
            module_names("sympy/printing/ccode.py"),
            ["ccode", "printing_ccode", "sympy_printing_ccode"]
        );
        assert_eq!(
            module_names("flask/json/__init__.py"),
            ["json", "flask_json"]
        );
        assert_eq!(test_stem("tests/test_ext_viewcode.py"), "ext_viewcode");
        assert_eq!(test_stem("tests/checkers/unittest_misc.py"), "misc");
        assert_eq!(test_stem("x_test.py"), "x");
        assert_eq!(test_stem("tests/helpers.py"), "");
    }

    #[test]
    fn edits_of_a_rebuilt_candidate() {
        use crate::model::{Candidate, Origin};
        use crate::patch::{self, Mode};
        let r = repo();
        let diff = "--- a/requests/models.py\n+++ b/requests/models.py\n@@ -1,3 +1,3 @@\n class Request(object):\n     def register_hook(self, event, hook):\n-        pass\n+        return None\n--- a/tests/test_models.py\n+++ b/tests/test_models.py\n@@ -1,2 +1,2 @@\n def test_nothing():\n-    assert 1\n+    assert 2\n";
        let cand = Candidate {
            instance_id: "x".into(),
            agent: "a".into(),
            patch: diff.into(),
            resolved: None,
            origin: Origin::default(),
        };
        let base: patch::Files = patch::paths_needed(&cand)
            .into_iter()
            .map(|p| {
                let t = r.get(&p).map(|f| f.text.to_string());
                (p, t)
            })
            .collect();
        let view = patch::rebuild(&cand, &base, Mode::Tolerant);
        assert_eq!(
            edits_of(&view),
            vec![edit("requests/models.py", "Request.register_hook")]
        );
        assert_eq!(select_for(&r, &view, MAX_FILES)[0].path, "test_requests.py");
    }
}
