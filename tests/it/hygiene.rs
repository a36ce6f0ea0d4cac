//! What the project promises about itself rather than about ranking: no machine-specific
//! absolute paths in its files, product code that states its rules without citing the
//! benchmark instances behind them (those belong in the rules' tests), no text that narrates
//! the work's sessions, tests that leave nothing in the temp folder, real repositories
//! from the bundles in ../shared/repos, dry runs that write nothing, and examples/run.sh's
//! contract (a release build whose chatter stays off stdout).

use crate::support::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Home-like folders of one machine. Built from parts so that this file does not hold the
/// patterns it looks for.
fn machine_roots() -> Vec<String> {
    ["work", "root", "home", "Users"]
        .iter()
        .map(|d| format!("/{d}/"))
        .collect()
}

/// The lines of `text` naming an absolute path under one of [`machine_roots`]: the root at
/// the start of the line or after a character that cannot end a host or folder name (so
/// `../x/home/y` and `https://host/home/` do not count).
fn absolute_machine_paths(text: &str) -> Vec<(usize, String)> {
    let roots = machine_roots();
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let found = roots.iter().any(|r| {
            line.match_indices(r.as_str()).any(|(at, _)| {
                !matches!(line[..at].chars().next_back(),
                    Some(c) if c.is_alphanumeric() || "._-~/:".contains(c))
            })
        });
        if found {
            hits.push((n + 1, line.trim().to_string()));
        }
    }
    hits
}

fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            text_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn the_path_check_finds_machine_paths_and_only_those() {
    let data = format!("/{}/shared/data", "work");
    let mirror = format!("PathBuf::from(\"/{}/.mirror\")", "work");
    let home = format!("    cd /{}/me/dei", "home");
    assert_eq!(absolute_machine_paths(&data).len(), 1);
    assert_eq!(absolute_machine_paths(&mirror).len(), 1);
    assert_eq!(absolute_machine_paths(&home).len(), 1);
    for fine in [
        "../shared/data",
        "target/repos",
        "see https://example.com/home/page",
        "a/work/b",
        "~/work/x",
        "/tmp/dei-hostile-executed",
    ] {
        assert!(absolute_machine_paths(fine).is_empty(), "{fine}");
    }
}

#[test]
fn no_machine_specific_absolute_paths_in_the_project() {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("Cargo.toml")];
    for d in [
        "src", "tests", "benches", "examples", ".ci", "prompts", "rubrics", "docs", "crates",
    ] {
        text_files(&root.join(d), &mut files);
    }
    assert!(
        files.len() > 50,
        "the project's files were found: {}",
        files.len()
    );
    let mut offenders = Vec::new();
    for f in &files {
        // Binary files hold no paths worth checking.
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (line, what) in absolute_machine_paths(&text) {
            let rel = f.strip_prefix(&root).unwrap_or(f);
            offenders.push(format!("{}:{line}: {what}", rel.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "machine-specific absolute paths (use ../shared/data, DEI_DATA or DEI_REPOS):\n{}",
        offenders.join("\n")
    );
}

/// The repositories of SWE-bench Lite, as their instances are cited in short (`sympy-13971`).
const LITE_REPOS: [&str; 13] = [
    "astropy",
    "django",
    "flask",
    "matplotlib",
    "pylint",
    "pytest",
    "requests",
    "seaborn",
    "sklearn",
    "scikit-learn",
    "sphinx",
    "sympy",
    "xarray",
];

/// The SWE-bench instance ids `line` cites: `owner__repo-NNNN` (any owner and repository), or
/// `repo-NNN` to `repo-NNNNN` for a repository of [`LITE_REPOS`] (case aside). An id is a
/// word of letters, digits and `_.-`, so `sphinx-8627's` and `(pytest-5692)` count and
/// `dei-sandbox-4242-Xa9f2k` or `pytest-5.4.1` do not.
fn instance_ids(line: &str) -> Vec<String> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
    let mut ids = Vec::new();
    for word in line.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()) {
        let lower = word.to_ascii_lowercase();
        for (at, _) in lower.match_indices('-') {
            let (name, rest) = (&lower[..at], &lower[at + 1..]);
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            // The number ends at the word's end or before `-`/`.`/`_`, not inside a version
            // (`-5.4`) or a name (`-42abc`).
            let ends = match rest.as_bytes().get(digits) {
                None => true,
                Some(b'.') => !rest
                    .as_bytes()
                    .get(digits + 1)
                    .is_some_and(u8::is_ascii_digit),
                Some(&b) => !b.is_ascii_alphanumeric(),
            };
            if digits == 0 || !ends {
                continue;
            }
            let full = name
                .split_once("__")
                .is_some_and(|(owner, repo)| !owner.is_empty() && !repo.is_empty());
            // A repository of the list ends the name, and not as the tail of a longer word
            // (`mysympy`).
            let short = LITE_REPOS.iter().find(|r| {
                name.strip_suffix(*r)
                    .is_some_and(|before| !before.ends_with(|c: char| c.is_ascii_alphanumeric()))
            });
            let from = match short {
                _ if full => name.len() - name.trim_start_matches(['_', '.', '-']).len(),
                Some(r) if (3..=5).contains(&digits) => at - r.len(),
                _ => continue,
            };
            ids.push(word[from..at + 1 + digits].to_string());
        }
    }
    ids
}

/// The comment on a line of Rust: the whole line when it starts with `//` (`//`, `///`,
/// `//!`), else what follows a `//` that stands after whitespace outside a string literal
/// (an even count of unescaped `"` before it).
fn rust_comment(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return Some(t);
    }
    let mut quotes = 0;
    let mut escaped = false;
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\\' if !escaped => {
                escaped = true;
                continue;
            }
            b'"' if !escaped => quotes += 1,
            b'/' if quotes % 2 == 0
                && bytes.get(i + 1) == Some(&b'/')
                && i > 0
                && bytes[i - 1].is_ascii_whitespace() =>
            {
                return Some(&line[i..]);
            }
            _ => {}
        }
        escaped = false;
    }
    None
}

/// Whether a line opens a test module: `#[cfg(test)]` with `mod NAME {` on the next
/// non-blank line. (`#[cfg(test)] mod tests;` only names a tests.rs file.)
fn opens_test_module(lines: &[&str], at: usize) -> bool {
    lines[at].trim() == "#[cfg(test)]"
        && lines[at + 1..]
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
            .is_some_and(|l| l.starts_with("mod ") && l.ends_with('{'))
}

/// The lines of `text` (a Rust file's) that are product code: all of them up to the first
/// `#[cfg(test)]` that opens a test module ([`opens_test_module`]), numbered from 1.
fn product_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| opens_test_module(&lines, i))
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .copied()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .collect()
}

/// Whether `path` (relative to src/) holds tests: named tests.rs, or under a `tests` folder.
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path
            .parent()
            .is_some_and(|d| d.components().any(|c| c.as_os_str() == "tests"))
}

/// Ordinal words that number a session (`thirty-fourth session`), and the words that point at
/// one (`the last session`).
const ORDINALS: [&str; 21] = [
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
    "fortieth",
];
const POINTERS: [&str; 4] = ["earlier", "previous", "last", "this"];

/// The phrases in `text` that narrate the project's own history by its working sessions:
/// `session` after an ordinal (`twentieth`, `thirty-fourth`, [`ORDINALS`]) or after
/// `earlier`, `previous`, `last`, `this` ([`POINTERS`]), case aside; `session` a word of its
/// own (`sessions`, `session_id` are not), the word before it one space away or across a line
/// break (so a phrase wrapped in prose counts).
fn session_phrases(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut found = Vec::new();
    for (at, _) in lower.match_indices("session") {
        let after = lower[at + "session".len()..].chars().next();
        let before = lower[..at].chars().next_back();
        if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            || !before.is_some_and(char::is_whitespace)
        {
            continue;
        }
        let head = lower[..at].trim_end();
        let start = head.trim_end_matches(is_word).len();
        if lower[start..at].contains("\n\n") {
            continue;
        }
        let word = &head[start..];
        let last = word.rsplit('-').next().unwrap_or(word);
        let numbered = ORDINALS.contains(&word)
            || ORDINALS.contains(&last)
            || ["twenty-", "thirty-", "forty-"]
                .iter()
                .any(|p| word.strip_prefix(p).is_some_and(|r| !r.is_empty()));
        if numbered || POINTERS.contains(&word) {
            found.push(
                text[start..at + "session".len()]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
        }
    }
    found
}

#[test]
fn the_instance_id_check_finds_ids_and_only_those() {
    for (line, want) in [
        (
            "/// (sympy__sympy-13971's notebook)",
            vec!["sympy__sympy-13971"],
        ),
        (
            "// astropy__astropy-12907 and pytest-dev__pytest-7168",
            vec!["astropy__astropy-12907", "pytest-dev__pytest-7168"],
        ),
        (
            "/// sphinx-8435's project, as (pytest-5692).",
            vec!["sphinx-8435", "pytest-5692"],
        ),
        (
            "// flask-4992, xarray-4493; requests-2317 and scikit-learn-13142",
            vec![
                "flask-4992",
                "xarray-4493",
                "requests-2317",
                "scikit-learn-13142",
            ],
        ),
        (
            "// sympy-11400-like: Django-11099 too",
            vec!["sympy-11400", "Django-11099"],
        ),
        ("// psf__requests-863", vec!["psf__requests-863"]),
    ] {
        assert_eq!(instance_ids(line), want, "{line}");
    }
    for fine in [
        "/// (`dei-sandbox-4242-Xa9f2k`), so a later run can tell whose it is.",
        "// pytest-5.4.1, sphinx-build, pytest-httpbin, requests-2.4.3",
        "// SHA-256 of the templates, `-0125` of a model name, utf-8",
        "// mysympy-1234 is not sympy's, nor is sympy-12 or sympy-123456",
        "// the sympy 1.1 sequences, sphinx 3.5",
    ] {
        assert!(
            instance_ids(fine).is_empty(),
            "{fine}: {:?}",
            instance_ids(fine)
        );
    }
}

#[test]
fn only_comments_of_product_code_are_read() {
    assert_eq!(rust_comment("    /// doc"), Some("/// doc"));
    assert_eq!(rust_comment("//! module"), Some("//! module"));
    assert_eq!(
        rust_comment("let x = 1; // sympy-1234"),
        Some("// sympy-1234")
    );
    assert_eq!(rust_comment(r#"let u = "https://x/sympy-1234";"#), None);
    assert_eq!(rust_comment(r#"let s = "a \" // b";"#), None);
    assert_eq!(rust_comment(r#"let s = "a"; // b"#), Some("// b"));
    let text = "// one\n#[cfg(test)]\nmod tests;\nfn f() {}\n// two\n#[cfg(test)]\n\nmod tests {\n    // three\n}\n";
    let kept: Vec<usize> = product_lines(text).iter().map(|(n, _)| *n).collect();
    assert_eq!(kept, [1, 2, 3, 4, 5]);
    assert!(is_test_file(Path::new("exec/repro/tests.rs")));
    assert!(is_test_file(Path::new("exec/tests/fixtures.rs")));
    assert!(!is_test_file(Path::new("exec/repro/mod.rs")));
    assert!(!is_test_file(Path::new("exec/test_runs.rs")));
}

#[test]
fn the_session_check_finds_narration_and_only_that() {
    for (text, want) in [
        (
            "Until the thirty-fifth session only",
            vec!["thirty-fifth session"],
        ),
        (
            "(twenty-ninth session). And the Twelfth Session's",
            vec!["twenty-ninth session", "Twelfth Session"],
        ),
        (
            "as the last session decided; this session's run",
            vec!["last session", "this session"],
        ),
        (
            "an earlier\nsession, a previous  session",
            vec!["earlier session", "previous session"],
        ),
        (
            "since the fortieth session, the first session",
            vec!["fortieth session", "first session"],
        ),
    ] {
        assert_eq!(session_phrases(text), want, "{text}");
    }
    for fine in [
        "a `>>>` session outside a fence",
        "the session the reporter ran; a REPL session shows",
        "the first sessions, the last session_id, first-session",
        "the last\n\nsession",
        "its first run and a session after `init_printing()`",
    ] {
        assert!(
            session_phrases(fine).is_empty(),
            "{fine}: {:?}",
            session_phrases(fine)
        );
    }
}

#[test]
fn product_code_comments_cite_no_benchmark_instance() {
    let root = root();
    let src = root.join("src");
    let mut files = Vec::new();
    text_files(&src, &mut files);
    files.retain(|f| f.extension().is_some_and(|e| e == "rs"));
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    let mut offenders = Vec::new();
    let mut read = 0;
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f);
        if is_test_file(rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in product_lines(&text) {
            let Some(comment) = rust_comment(line) else {
                continue;
            };
            read += 1;
            let ids = instance_ids(comment);
            if !ids.is_empty() {
                offenders.push(format!("src/{}:{n}: {}", rel.display(), ids.join(", ")));
            }
        }
    }
    assert!(read > 1000, "the comments were read: {read}");
    assert!(
        offenders.is_empty(),
        "SWE-bench instances cited in comments of product code: state the rule in general \
         terms there, and name the instance that motivated it in the rule's test (tests.rs or \
         a #[cfg(test)] module):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_comment_or_document_narrates_the_sessions_of_the_work() {
    let root = root();
    let mut texts: Vec<(String, Vec<(usize, String)>)> = Vec::new();
    let mut docs = vec![root.join("README.md")];
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        docs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    for f in &docs {
        let text = std::fs::read_to_string(f).unwrap();
        let lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_string()));
        texts.push((
            f.strip_prefix(&root).unwrap().display().to_string(),
            lines.collect(),
        ));
    }
    let mut sources = Vec::new();
    text_files(&root.join("src"), &mut sources);
    for f in sources
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let text = std::fs::read_to_string(f).unwrap();
        let comments = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| rust_comment(l).map(|c| (i + 1, c.to_string())));
        texts.push((
            f.strip_prefix(&root).unwrap().display().to_string(),
            comments.collect(),
        ));
    }
    assert!(texts.len() > 50, "the files were found: {}", texts.len());
    let mut offenders = Vec::new();
    for (file, lines) in &texts {
        // Each line with the last word of the line before it, when that one is next to it, so
        // that a phrase wrapped over two lines is found, on the line where it ends.
        for (k, (n, line)) in lines.iter().enumerate() {
            let before = k
                .checked_sub(1)
                .map(|j| &lines[j])
                .filter(|(m, _)| m + 1 == *n)
                .and_then(|(_, l)| l.split_whitespace().next_back())
                .unwrap_or("");
            let joined = format!("{before}\n{line}");
            for phrase in session_phrases(&joined) {
                offenders.push(format!("{file}:{n}: {phrase}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "the project's own work narrated by its sessions: say what the code or the figures are \
         now and why (a figure names its build or commit, the history belongs in git):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_example_repository_is_built_into_target_and_leaves_nothing_in_the_temp_folder() {
    // In target/ (which may itself lie in the temp folder, as in a clone made there).
    let repo = example_repo();
    let tmp = std::env::temp_dir();
    assert!(
        repo.starts_with(target_dir().join("test-fixtures")),
        "{} is not under target/test-fixtures",
        repo.display()
    );
    assert!(
        !tmp.join(format!("dei-example-{}", std::process::id()))
            .exists(),
        "this test binary left its example folder in {}",
        tmp.display()
    );
    // A fresh build: the right commit, and nothing beside it but the repository (no scratch).
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let fixtures = dir.path().join("fixtures");
    let built = build_example_repo(&fixtures);
    let head = Command::new("git")
        .arg("--git-dir")
        .arg(&built)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let tasks = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    let task: serde_json::Value = serde_json::from_str(tasks.lines().next().unwrap()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&head.stdout).trim(),
        task["base_commit"].as_str().unwrap()
    );
    let left: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(built.file_name().unwrap(), "textkit.git");
    assert_eq!(built.parent().unwrap().parent().unwrap(), fixtures);
    assert_eq!(
        left,
        vec![built.parent().unwrap().file_name().unwrap().to_owned()]
    );
    // Asked again, it is the same repository, not rebuilt.
    assert_eq!(build_example_repo(&fixtures), built);
}

#[test]
fn real_data_tests_get_the_bundled_repositories() {
    if !root().join("../shared/repos").is_dir() {
        return skip("needs ../shared/repos (the bundles of requests, flask and pytest)");
    }
    let dir = bundled_repos().expect("../shared/repos holds bundles");
    assert!(dir.starts_with(target_dir()), "{}", dir.display());
    for name in ["psf/requests", "pallets/flask", "pytest-dev/pytest"] {
        let repo = dei::model::repo::find_in_repos_dir(&dir, name)
            .unwrap_or_else(|| panic!("{name} is not in {}", dir.display()));
        // A Lite base commit of each is readable.
        let tasks =
            dei::model::task::load_tasks(&root().join("../shared/data/swebench_lite/test.jsonl"))
                .expect("../shared/data beside ../shared/repos");
        let t = tasks.iter().find(|t| t.repo == name).unwrap();
        dei::model::repo::Snapshot::open(&repo, &t.base_commit)
            .unwrap_or_else(|e| panic!("{name} at {}: {e}", t.base_commit));
    }
    // No scratch folder is left behind.
    let scratch: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");
}

/// Everything under `dir`, relative.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    text_files(dir, &mut files);
    let mut all: Vec<PathBuf> = files
        .iter()
        .map(|f| f.strip_prefix(dir).unwrap().to_path_buf())
        .collect();
    // Empty folders too (an empty .dei/cache is the failure this guards against).
    if let Ok(entries) = std::fs::read_dir(dir) {
        all.extend(entries.flatten().map(|e| PathBuf::from(e.file_name())));
    }
    all.sort();
    all.dedup();
    all
}

#[test]
fn a_dry_run_writes_nothing_in_the_current_folder() {
    let repo = example_repo();
    let root = root();
    let tasks = root.join("examples/tasks.jsonl");
    let candidates = root.join("examples/candidates");
    let common = [
        "--tasks",
        path_str(&tasks),
        "--issue",
        "example__textkit-1",
        "--repo",
        path_str(&repo),
        "--llm",
        "openai:gpt-4o-mini",
        "--dry-run",
    ];
    let rank: Vec<&str> = ["rank", path_str(&candidates)]
        .into_iter()
        .chain(common)
        .collect();
    let locate: Vec<&str> = ["locate"].into_iter().chain(common).collect();
    let generate: Vec<&str> = ["generate", "--out", "gen.jsonl"]
        .into_iter()
        .chain(common)
        .collect();
    for args in [rank, locate, generate] {
        let cwd = tempfile::tempdir().unwrap();
        let o = dei_command()
            .current_dir(cwd.path())
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("dry run:"),
            "{args:?} printed its plan: {}",
            stdout(&o)
        );
        let left = listing(cwd.path());
        assert!(
            left.is_empty(),
            "dei {} --dry-run wrote {left:?} in the current folder",
            args[0]
        );
    }
}

/// A `cargo` stand-in for examples/run.sh: it logs its arguments, prints build chatter on
/// both stdout and stderr, refuses anything but `build`, and "builds" by linking the test's
/// own dei binary into `$CARGO_TARGET_DIR/release/dei`.
const FAKE_CARGO: &str = r#"#!/usr/bin/env bash
echo "$*" >> "$FAKE_CARGO_LOG"
echo "   Compiling dei v0.0.0 (chatter on stdout)"
echo "   Compiling dei v0.0.0 (chatter on stderr)" >&2
if [ "${1:-}" != build ]; then echo "fake cargo: only build is expected, got: $*" >&2; exit 97; fi
mkdir -p "$CARGO_TARGET_DIR/release"
ln -sf "$FAKE_CARGO_DEI" "$CARGO_TARGET_DIR/release/dei"
"#;

#[test]
fn run_sh_builds_in_release_says_so_once_and_keeps_stdout_pure_json() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("cargo"), FAKE_CARGO).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let log = dir.path().join("cargo.log");
    let target = dir.path().join("target");
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let run = || {
        without_user_settings(Command::new("bash").current_dir(root()))
            .env_remove("DEI_BIN")
            .args(["examples/run.sh", "--json", "-"])
            .env("PATH", &path)
            .env("CARGO_TARGET_DIR", &target)
            .env("FAKE_CARGO_LOG", &log)
            .env("FAKE_CARGO_DEI", env!("CARGO_BIN_EXE_dei"))
            .output()
            .unwrap()
    };
    for first in [true, false] {
        let o = run();
        assert!(o.status.success(), "first={first}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(&o)));
        assert_eq!(v["ranked"].as_array().map(Vec::len), Some(6), "{v}");
        let err = stderr(&o);
        assert!(
            err.contains("chatter on stdout"),
            "build output goes to stderr: {err}"
        );
        assert_eq!(
            err.contains("first run, building dei in release mode"),
            first,
            "the first-run notice, once: {err}"
        );
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), 2, "{calls}");
    assert!(
        calls.lines().all(|l| l.starts_with("build --release")),
        "{calls}"
    );
    assert!(target.join("example/textkit.git/HEAD").exists());
}

/// `.ci/run` ends with the tests that said `SKIPPED <test>: <why>` (cargo counts them as
/// passed), each with its reason, and exits with cargo's status. Run here in a copy whose
/// `cargo`, examples/local-model.sh and examples/container-base.sh are stand-ins, so nothing is
/// built or started.
#[test]
fn ci_run_lists_the_skipped_tests_at_the_end_and_exits_as_cargo_did() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in [".ci", "examples", "bin"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    std::fs::copy(root().join(".ci/run"), d.join(".ci/run")).unwrap();
    let script = |path: PathBuf, text: &str| {
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        d.join("examples/local-model.sh"),
        "#!/usr/bin/env bash\n[ \"${1:-}\" = start ] && echo 'export DEI_LLAMA_URL=http://127.0.0.1:9/v1'\nexit 0\n",
    );
    script(
        d.join("examples/container-base.sh"),
        "#!/usr/bin/env bash\necho 'export CONTAINERS_CONF=/nonexistent/containers.conf'\n",
    );
    // Compiling (`--no-run`) runs no test; then two tests skip (one of them twice, as the same
    // line), the rest pass; cargo fails.
    script(
        d.join("bin/cargo"),
        "#!/usr/bin/env bash\ncase \" $* \" in *' --no-run '*) exit 0 ;; esac\necho 'running 4 tests'\necho 'SKIPPED it::exec::no_python: python3 is not available' >&2\necho 'test it::exec::no_python ... ok'\necho 'SKIPPED it::data::real: needs ../shared/data (or DEI_DATA)' >&2\necho 'SKIPPED it::data::real: needs ../shared/data (or DEI_DATA)' >&2\necho 'test result: FAILED. 3 passed; 1 failed'\nexit 101\n",
    );
    let path = format!(
        "{}:{}",
        d.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(d.join(".ci/run"))
        .env("PATH", path)
        .env("TMPDIR", d)
        .output()
        .expect("bash runs");
    assert_eq!(out.status.code(), Some(101), "cargo's status: {out:?}");
    let all = format!("{}{}", stdout(&out), stderr(&out));
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(
        lines[lines.len().saturating_sub(3)..],
        [
            "2 tests skipped (cargo counts them as passed):",
            "  it::exec::no_python: python3 is not available",
            "  it::data::real: needs ../shared/data (or DEI_DATA)",
        ],
        "{all}"
    );
}
