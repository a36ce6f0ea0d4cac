//! What the project promises about itself rather than about ranking: no machine-specific
//! absolute paths in its files, tests that leave nothing in the temp folder, real repositories
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
