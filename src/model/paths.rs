//! What a path is: Python source, a test, or an auxiliary file (docs, examples, benchmarks);
//! a file name too generic to point anywhere; a candidates file whose stem says nothing about
//! its run. One home for these rules; every stage asks here.

/// The manifest of a `dei rank --run-dir` directory (`rank::run::journal`).
pub const RUN_MANIFEST: &str = "run.json";
/// The journal of a `dei rank --run-dir` directory, one line per finished issue.
pub const RUN_JOURNAL: &str = "journal.jsonl";

/// True for a `dei rank --run-dir` directory (its manifest and journal beside each other):
/// results, not candidates, when it lies inside a folder of candidates.
pub fn is_run_dir(dir: &std::path::Path) -> bool {
    dir.join(RUN_MANIFEST).is_file() && dir.join(RUN_JOURNAL).is_file()
}

/// True for Python sources (indexed with tree-sitter; other files get line windows).
pub fn is_python(path: &str) -> bool {
    path.ends_with(".py") || path.ends_with(".pyi")
}

/// True for test files: a `tests`/`test`/`testing` folder, `test_*.py`, `*_test.py`, `conftest.py`.
pub fn is_test_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    path.split('/')
        .any(|c| c == "tests" || c == "test" || c == "testing")
        || file.starts_with("test_")
        || file.ends_with("_test.py")
        || file == "conftest.py"
}

/// True for tests (in any letter case), docs, examples, benchmarks and similar files a fix
/// rarely edits.
pub fn is_auxiliary(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    is_test_path(&p)
        || p.split('/').any(|seg| {
            matches!(
                seg,
                "doc" | "docs" | "examples" | "example" | "benchmarks" | "bench" | "scripts"
            )
        })
}

/// True for a file that is part of the project's own code: not a test, doc, example or
/// benchmark ([`is_auxiliary`]), and not a file created at the repository's root, which is
/// where agents leave their reproduction and scratch scripts (`reproduce_bug.py`). A change
/// touching no such file fixes nothing in the library.
pub fn is_library_file(path: &str, created: bool) -> bool {
    !is_auxiliary(path) && (!created || path.contains('/'))
}

/// Repository file names too common to point anywhere when an issue writes them
/// (`__init__.py`, `utils.py`, `setup.py`, `conftest.py`).
pub const GENERIC_FILE_NAMES: &[&str] = &["__init__.py", "utils.py", "setup.py", "conftest.py"];

/// Whether a file name (no folder) is one of [`GENERIC_FILE_NAMES`].
pub fn is_generic_file_name(name: &str) -> bool {
    GENERIC_FILE_NAMES.contains(&name)
}

/// Stems of candidate files that say nothing about the run they come from
/// (`all_preds.jsonl`, `predictions.json`, `results.json`): such a file is named after its
/// folder (see `candidates::source_name`).
pub const GENERIC_STEMS: &[&str] = &[
    "all_preds",
    "preds",
    "predictions",
    "predictions_for_swebench",
    "output",
    "outputs",
    "results",
    "result",
    "report",
    "final_report",
    "labels",
    "resolved",
];

/// Whether a file's stem (in any letter case) is one of [`GENERIC_STEMS`].
pub fn has_generic_stem(path: &std::path::Path) -> bool {
    path.file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| GENERIC_STEMS.contains(&s.to_ascii_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_paths() {
        assert!(is_python("a/b.py") && is_python("a/b.pyi") && !is_python("a/b.pyc"));
        assert!(is_test_path("pkg/tests/x.py") && is_test_path("test_x.py"));
        assert!(is_test_path("a/conftest.py") && is_test_path("a/x_test.py"));
        assert!(!is_test_path("pkg/testament.py"));
        assert!(
            is_auxiliary("Docs/conf.py") && is_auxiliary("TESTS/x.py") && !is_auxiliary("pkg/x.py")
        );
        assert!(is_generic_file_name("__init__.py") && !is_generic_file_name("models.py"));
        let p = std::path::Path::new;
        assert!(
            has_generic_stem(p("runs/a/all_preds.jsonl")) && has_generic_stem(p("Results.json"))
        );
        assert!(!has_generic_stem(p("runs/acr-1.jsonl")));
    }
}
