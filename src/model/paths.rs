//! What a repository path is: Python source, a test, or an auxiliary file (docs, examples,
//! benchmarks). One home for these rules; every stage asks here.

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
    }
}
