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
pub fn edits_of(view: &PatchView, tests: &TestFiles) -> Vec<Edit> {
    let mut out: Vec<Edit> = edited_units(view)
        .into_iter()
        .filter(|(p, _, _)| is_python(p) && !tests.is_test(p))
        .map(|(path, name, _)| Edit { path, name })
        .collect();
    // Files the patch creates or could not read have no units: keep the file itself.
    for f in &view.files {
        if is_python(&f.path) && !tests.is_test(&f.path) && !out.iter().any(|e| e.path == f.path) {
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
    pytest_collects(base)
        || (is_test_path(path) && (base.starts_with("test") || base.starts_with("unittest_")))
}

/// A file of the repository's test suite that is not a test module: its data, fixtures and
/// settings (`tests/roots/test-ext-autodoc/target/typed_vars.py`, `tests/conftest.py`,
/// `xarray/tests/data/…`), under a top-level `tests/`, `testing/` or `test/` folder or a `tests/`
/// folder anywhere. A package's own `testing` module (`sphinx/testing/util.py`,
/// `sympy/testing/pytest.py`) is library code, not the suite.
pub fn in_test_suite(path: &str) -> bool {
    let Some((first, _)) = path.split_once('/') else {
        return false;
    };
    matches!(first, "tests" | "testing" | "test") || path.split('/').any(|c| c == "tests")
}

/// A file name pytest collects by default (its `python_files`: `test_*.py`, `*_test.py`).
pub fn pytest_collects(base: &str) -> bool {
    base.ends_with(".py") && (base.starts_with("test_") || base.ends_with("_test.py"))
}

/// The files a repository counts as test modules: [`is_test_file`]'s names, and the globs of
/// its pytest `python_files` setting when it sets one (pytest's own `testing/*/*.py`, where
/// `testing/python/fixtures.py` tests `src/_pytest/fixtures.py`; Django projects' `tests.py`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestFiles {
    globs: Vec<String>,
}

/// Where pytest reads its settings, in the order it looks, with the headers of its section in
/// each: the first file holding one is the one it uses.
pub const PYTEST_CONFIGS: [(&str, &[&str]); 4] = [
    ("pytest.ini", &["[pytest]", "[tool:pytest]"]),
    ("pyproject.toml", &["[tool.pytest.ini_options]"]),
    ("tox.ini", &["[pytest]"]),
    ("setup.cfg", &["[tool:pytest]"]),
];

impl TestFiles {
    /// From the repository's pytest settings: `configs` holds the text of the files of
    /// [`PYTEST_CONFIGS`] it has, as (name, text). Globs as pytest reads them: an ini value
    /// split on white space (it may go on over indented lines), a TOML string or list.
    pub fn from_configs(configs: &[(&str, &str)]) -> TestFiles {
        for (name, headers) in PYTEST_CONFIGS {
            let Some((_, text)) = configs.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            if let Some(body) = ini_section(text, headers) {
                let globs = python_files(&body, name == "pyproject.toml");
                return TestFiles { globs };
            }
        }
        TestFiles::default()
    }

    /// A test module of this repository.
    pub fn is_test(&self, path: &str) -> bool {
        let base = path.rsplit('/').next().unwrap_or(path);
        is_test_file(path)
            || (base.ends_with(".py")
                && base != "conftest.py"
                && base != "__init__.py"
                && self.globs.iter().any(|g| glob_matches(g, path)))
    }

    /// The globs read from the repository (none: only the names [`is_test_file`] knows).
    pub fn globs(&self) -> &[String] {
        &self.globs
    }
}

/// The lines of the first section headed by one of `headers`, up to the next header.
fn ini_section<'a>(text: &'a str, headers: &[&str]) -> Option<Vec<&'a str>> {
    let mut lines = text.lines();
    lines.find(|l| headers.contains(&l.trim()))?;
    Some(
        lines
            .take_while(|l| !l.trim_start().starts_with('['))
            .collect(),
    )
}

/// The `python_files` globs of a pytest section's lines (empty when it sets none).
fn python_files(lines: &[&str], toml: bool) -> Vec<String> {
    let Some(at) = lines.iter().position(|l| {
        l.split_once('=')
            .is_some_and(|(k, _)| k.trim() == "python_files")
    }) else {
        return Vec::new();
    };
    let first = lines[at].split_once('=').map_or("", |(_, v)| v).trim();
    if toml {
        // `"a b"`, or a list that may go on over several lines.
        let mut value = first.to_string();
        if value.starts_with('[') {
            for l in &lines[at + 1..] {
                if value.contains(']') {
                    break;
                }
                value.push(' ');
                value.push_str(l.trim());
            }
        }
        return value
            .split(['"', '\''])
            .skip(1)
            .step_by(2)
            .flat_map(str::split_whitespace)
            .map(String::from)
            .collect();
    }
    let mut value = first.to_string();
    for l in &lines[at + 1..] {
        if !l.starts_with([' ', '\t']) || l.trim().is_empty() {
            break;
        }
        value.push(' ');
        value.push_str(l.trim());
    }
    value.split_whitespace().map(String::from).collect()
}

/// pytest's match of a `python_files` glob: against the file name when the glob has no `/`,
/// else against the path or any tail of it after a `/` (`*` matches any run of characters,
/// `/` included, `?` one).
fn glob_matches(glob: &str, path: &str) -> bool {
    if !glob.contains('/') {
        let base = path.rsplit('/').next().unwrap_or(path);
        return wildcard(glob.as_bytes(), base.as_bytes());
    }
    std::iter::once(path)
        .chain(path.match_indices('/').map(|(i, _)| &path[i + 1..]))
        .any(|tail| wildcard(glob.as_bytes(), tail.as_bytes()))
}

fn wildcard(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => wildcard(&p[1..], s) || (!s.is_empty() && wildcard(p, &s[1..])),
        (Some(b'?'), Some(_)) => wildcard(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => wildcard(&p[1..], &s[1..]),
        _ => false,
    }
}

/// A file's name without its folder and `.py`.
fn file_stem(path: &str) -> &str {
    path.rsplit('/')
        .next()
        .unwrap_or(path)
        .trim_end_matches(".py")
}

/// What a test file says it tests: its name less `test_`/`unittest_` before or `_test` after
/// (`test_ext_viewcode.py` → `ext_viewcode`); empty when it has none of them.
fn test_stem(path: &str) -> &str {
    let base = file_stem(path);
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
pub fn select(repo: &FileIndex, tests: &TestFiles, edits: &[Edit], cap: usize) -> Vec<TestFile> {
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
    // What a test file named after each source may be named (once per source, not per file).
    let source_names: Vec<(&str, Vec<String>)> =
        sources.iter().map(|s| (*s, module_names(s))).collect();
    let names: BTreeSet<&str> = edits.iter().flat_map(edit_names).collect();
    let mut out: Vec<TestFile> = Vec::new();
    for (i, f) in repo.files.iter().enumerate() {
        if !tests.is_test(&f.path) {
            continue;
        }
        let mut score = 0.0;
        let mut reasons = Vec::new();
        let mut named_after = false;
        // A file only the repository's globs make a test (`testing/python/fixtures.py`) is
        // named after what its whole name says.
        let tested = match test_stem(&f.path) {
            "" if !is_test_file(&f.path) => file_stem(&f.path),
            t => t,
        };
        for (s, module) in &source_names {
            if !tested.is_empty() && module.iter().any(|m| m == tested) {
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
pub fn select_by_package(
    repo: &FileIndex,
    tests: &TestFiles,
    edits: &[Edit],
    cap: usize,
) -> Vec<TestFile> {
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
        if !tests.is_test(&f.path) {
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
pub fn select_for(
    repo: &FileIndex,
    tests: &TestFiles,
    view: &PatchView,
    cap: usize,
) -> Vec<TestFile> {
    select(repo, tests, &edits_of(view, tests), cap)
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

    #[test]
    fn the_test_suite_is_its_folders_not_a_packages_testing_module() {
        for p in [
            "tests/roots/test-ext-autodoc/target/typed_vars.py",
            "tests/conftest.py",
            "testing/python/fixtures.py",
            "xarray/tests/data/example.nc",
            "tests/static/config.toml",
        ] {
            assert!(in_test_suite(p), "{p}");
        }
        for p in [
            "sphinx/testing/util.py",
            "sympy/testing/pytest.py",
            "tests",
            "src/_pytest/python.py",
            "setup.cfg",
        ] {
            assert!(!in_test_suite(p), "{p}");
        }
    }

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
            &TestFiles::default(),
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
                &TestFiles::default(),
                &[edit("requests/models.py", "Request.register_hook")],
                1
            )
            .len(),
            1
        );
        // An edit nobody tests directly.
        let sel = select(
            &r,
            &TestFiles::default(),
            &[edit("requests/api.py", "get")],
            MAX_FILES,
        );
        assert!(sel.is_empty(), "a generic name and no test_api.py: {sel:?}");
        let sel = select(
            &r,
            &TestFiles::default(),
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
            &TestFiles::default(),
            &[edit("sphinx/ext/viewcode.py", "collect_pages")],
            MAX_FILES,
        );
        let paths: Vec<&str> = sel.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(paths, ["tests/test_ext_viewcode.py"], "{sel:?}");
        assert_eq!(sel[0].reasons, ["named after sphinx/ext/viewcode.py"]);
        assert!(sel[0].named_after);
        let sel = select(
            &r,
            &TestFiles::default(),
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
    fn the_repositorys_pytest_globs_name_its_test_files() {
        // pytest's own tox.ini: `testing/*/*.py` makes testing/python/fixtures.py a test file.
        let tox = "[tox]\nenvlist = py37\n\n[pytest]\nminversion = 2.0\npython_files = test_*.py *_test.py testing/*/*.py\npython_classes = Test Acceptance\n";
        let t = TestFiles::from_configs(&[("tox.ini", tox)]);
        assert_eq!(t.globs(), ["test_*.py", "*_test.py", "testing/*/*.py"]);
        assert!(t.is_test("testing/python/fixtures.py"));
        assert!(!t.is_test("testing/python/conftest.py"));
        assert!(!t.is_test("src/_pytest/fixtures.py"));
        assert!(!TestFiles::default().is_test("testing/python/fixtures.py"));
        // An ini value going on over indented lines; pytest.ini comes first, then pyproject.toml.
        let ini = "[pytest]\npython_files =\n    tests.py\n    test_*.py\naddopts = -q\n";
        let toml = "[tool.pytest.ini_options]\npython_files = [\"check_*.py\"]\n";
        let t = TestFiles::from_configs(&[("pyproject.toml", toml), ("pytest.ini", ini)]);
        assert_eq!(t.globs(), ["tests.py", "test_*.py"]);
        assert!(t.is_test("shop/tests.py"));
        let t = TestFiles::from_configs(&[
            ("pyproject.toml", toml),
            ("setup.cfg", "[tool:pytest]\npython_files = x_*.py\n"),
        ]);
        assert_eq!(t.globs(), ["check_*.py"]);
        assert!(t.is_test("pkg/check_io.py") && !t.is_test("pkg/io.py"));
        // A TOML list over several lines.
        let toml = "[tool.pytest.ini_options]\npython_files = [\n  \"a_*.py\",\n  'b_*.py',\n]\n";
        assert_eq!(
            TestFiles::from_configs(&[("pyproject.toml", toml)]).globs(),
            ["a_*.py", "b_*.py"]
        );
        // No pytest section, or no python_files: the built-in names only.
        assert!(
            TestFiles::from_configs(&[("setup.cfg", "[metadata]\nname = x\n")])
                .globs()
                .is_empty()
        );
        assert!(
            TestFiles::from_configs(&[("tox.ini", "[pytest]\naddopts = -q\n")])
                .globs()
                .is_empty()
        );
        // A glob with a folder matches the path or a tail of it, `*` across folders.
        assert!(glob_matches("testing/*/*.py", "testing/io/test_x.py"));
        assert!(glob_matches("testing/*/*.py", "repo/testing/io/x.py"));
        assert!(!glob_matches("testing/*/*.py", "src/testing.py"));
        assert!(
            glob_matches("test_?.py", "a/test_1.py") && !glob_matches("test_?.py", "test_12.py")
        );
    }

    #[test]
    fn a_file_only_the_globs_make_a_test_is_named_after_its_whole_name() {
        let r = FileIndex::from_pairs(vec![
            (
                "src/_pytest/fixtures.py".into(),
                "def getfixturemarker(obj):\n    pass\n".into(),
            ),
            (
                "testing/python/fixtures.py".into(),
                "import pytest\n\ndef test_scope():\n    pass\n".into(),
            ),
        ]);
        let tests = TestFiles::from_configs(&[(
            "tox.ini",
            "[pytest]\npython_files = test_*.py testing/*/*.py\n",
        )]);
        let edits = [edit("src/_pytest/fixtures.py", "getfixturemarker")];
        let sel = select(&r, &tests, &edits, MAX_FILES);
        assert_eq!(sel.len(), 1, "{sel:?}");
        assert_eq!(sel[0].path, "testing/python/fixtures.py");
        assert!(sel[0].named_after);
        // Without the repository's globs it is not a test file.
        assert!(select(&r, &TestFiles::default(), &edits, MAX_FILES).is_empty());
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
        assert!(select(&r, &TestFiles::default(), &edits, 6).is_empty());
        let sel = select_by_package(&r, &TestFiles::default(), &edits, 6);
        assert_eq!(sel.len(), 1, "{sel:?}");
        assert_eq!(sel[0].path, "test_requests.py");
        assert_eq!(sel[0].score, 1.0 + 1.5);
        assert_eq!(sel[0].tests, ["test_requests.py::test_redirect"]);
        assert_eq!(
            sel[0].reasons,
            ["imports the package requests", "names resolve_redirects"]
        );
        // A top-level module has no package: nothing to fall back to.
        assert!(
            select_by_package(&r, &TestFiles::default(), &[edit("setup.py", "")], 6).is_empty()
        );
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
            edits_of(&view, &TestFiles::default()),
            vec![edit("requests/models.py", "Request.register_hook")]
        );
        assert_eq!(
            select_for(&r, &TestFiles::default(), &view, MAX_FILES)[0].path,
            "test_requests.py"
        );
    }
}
