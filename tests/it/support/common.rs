//! Shared helpers for integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The repository root: the package's folder, or the workspace's when the tests of a member
/// crate under `crates/` include this file (as crates/dei-bench's do).
pub fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    match manifest.parent() {
        Some(crates) if crates.ends_with("crates") => {
            crates.parent().map_or(manifest.clone(), Path::to_path_buf)
        }
        _ => manifest,
    }
}

/// The build's target folder (`target/`, or `CARGO_TARGET_DIR`): the parent of the folder cargo
/// gives integration tests for their files.
pub fn target_dir() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().map_or_else(|| tmp.clone(), Path::to_path_buf)
}

/// The example repository (a bare git dir), built once with examples/make-repo.sh into
/// `target/test-fixtures/` and shared by every test binary and every run: nothing is left in
/// the temp folder.
pub fn example_repo() -> PathBuf {
    static REPO: OnceLock<PathBuf> = OnceLock::new();
    REPO.get_or_init(|| build_example_repo(&target_dir().join("test-fixtures")))
        .clone()
}

/// examples/make-repo.sh's repository, `textkit.git` (the name `--repos` finds it by) inside a
/// folder of `fixtures` named by a hash of what it is made from (the script and
/// examples/textkit, so an edit makes a new one). It is built in a scratch folder inside
/// `fixtures` (make-repo.sh's own temp folder included) and renamed into place, so test
/// binaries running at once never see a half-built one, and nothing goes to the temp folder.
pub fn build_example_repo(fixtures: &Path) -> PathBuf {
    let dir = fixtures.join(format!("textkit-{:016x}", example_inputs_hash()));
    let repo = dir.join("textkit.git");
    if repo.join("HEAD").exists() {
        return repo;
    }
    std::fs::create_dir_all(fixtures)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", fixtures.display()));
    let scratch = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(fixtures)
        .unwrap_or_else(|e| {
            panic!(
                "cannot create a scratch folder in {}: {e}",
                fixtures.display()
            )
        });
    let built = scratch.path().join("textkit");
    let out = Command::new("bash")
        .arg(root().join("examples/make-repo.sh"))
        .arg(built.join("textkit.git"))
        .env("TMPDIR", scratch.path())
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "make-repo.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    publish(&built, &dir);
    repo
}

/// Rename a finished `built` folder to `dest`; when another process got there first, keep its
/// copy (the scratch folder holding `built` is removed by its guard). Only whole folders are
/// ever renamed there, so one that exists is complete.
fn publish(built: &Path, dest: &Path) {
    if let Err(e) = std::fs::rename(built, dest) {
        assert!(
            dest.is_dir(),
            "cannot move {} to {}: {e}",
            built.display(),
            dest.display()
        );
    }
}

/// A hash of examples/make-repo.sh and every file under examples/textkit (paths and contents).
fn example_inputs_hash() -> u64 {
    use std::hash::{Hash, Hasher};
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, files);
            } else {
                files.push(p);
            }
        }
    }
    let examples = root().join("examples");
    let mut files = vec![examples.join("make-repo.sh")];
    walk(&examples.join("textkit"), &mut files);
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in &files {
        f.strip_prefix(&examples).unwrap_or(f).hash(&mut h);
        std::fs::read(f)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", f.display()))
            .hash(&mut h);
    }
    h.finish()
}

/// The `dei` binary, run from the crate root with none of the user's LLM or repository
/// settings.
pub fn dei_command() -> Command {
    // Only the `dei` package's own tests have its binary (the bench crate's tests, which
    // include this file too, run their own).
    let Some(bin) = option_env!("CARGO_BIN_EXE_dei") else {
        panic!("the dei binary is built for the dei package's tests only");
    };
    let mut c = Command::new(bin);
    without_user_settings(c.current_dir(root()));
    c
}

/// `cmd` with none of the user's LLM or repository settings in its environment (a model, its
/// keys, a folder of repositories), so a test runs the same on every machine.
pub fn without_user_settings(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("DEI_REPOS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("DEI_LLM")
}

pub fn dei<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    dei_command().args(args).output().expect("dei runs")
}

/// `head` (a subcommand and its positional arguments), then the bundled example's issue and
/// repository (`--tasks examples/tasks.jsonl --issue example__textkit-1 --repo …`), then `extra`.
pub fn example_issue_args(head: &[&str], extra: &[&str]) -> Vec<String> {
    let repo = example_repo();
    head.iter()
        .copied()
        .chain([
            "--tasks",
            "examples/tasks.jsonl",
            "--issue",
            "example__textkit-1",
            "--repo",
            path_str(&repo),
        ])
        .chain(extra.iter().copied())
        .map(str::to_string)
        .collect()
}

/// `dei rank` on the bundled example's candidates and issue (`extra` appended).
pub fn example_rank_args(extra: &[&str]) -> Vec<String> {
    example_issue_args(&["rank", "examples/candidates"], extra)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The SWE-bench Lite data: the folder `DEI_DATA` names when set, else `../shared/data` beside
/// the checkout; `None` (the caller skips, saying so) when it holds no swebench_lite/test.jsonl.
pub fn shared_data() -> Option<PathBuf> {
    let dir = match std::env::var_os("DEI_DATA") {
        Some(d) => PathBuf::from(d),
        None => root().join("../shared/data"),
    };
    dir.join("swebench_lite/test.jsonl").exists().then_some(dir)
}

/// Folders of repositories (`owner__name`) for the real-data tests, in order: `DEI_REPOS` when
/// set, then `target/repos` holding bare clones of the bundles in `../shared/repos` (psf/requests,
/// pallets/flask, pytest-dev/pytest), made on first use.
pub fn repos_dirs() -> Vec<PathBuf> {
    std::env::var_os("DEI_REPOS")
        .map(PathBuf::from)
        .into_iter()
        .chain(bundled_repos())
        .collect()
}

/// The first of [`repos_dirs`] that holds `name` (`owner/name`).
pub fn repos_dir_with(name: &str) -> Option<PathBuf> {
    repos_dirs()
        .into_iter()
        .find(|d| dei::model::repo::find_in_repos_dir(d, name).is_some())
}

/// A real project repository (`owner/name`) from [`repos_dirs`]; `None` (the caller skips,
/// saying so) when none holds it.
pub fn real_repo(name: &str) -> Option<PathBuf> {
    repos_dirs()
        .iter()
        .find_map(|d| dei::model::repo::find_in_repos_dir(d, name))
}

/// `target/repos` with a bare clone of every bundle in `../shared/repos`, each made once (a few
/// seconds) and kept for later runs; `None` when there are no bundles. A clone is made in a
/// scratch folder and renamed into place, so test binaries running at once never see half a
/// repository. Bundles that cannot be cloned fail the test rather than skip it.
pub fn bundled_repos() -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut bundles: Vec<PathBuf> = std::fs::read_dir(root().join("../shared/repos"))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "bundle"))
            .collect();
        if bundles.is_empty() {
            return None;
        }
        bundles.sort();
        let dir = target_dir().join("repos");
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        for b in &bundles {
            let name = b.file_stem().expect("a bundle file name");
            let dest = dir.join(name);
            if dest.join("HEAD").exists() {
                continue;
            }
            let scratch = tempfile::Builder::new()
                .prefix(".clone-")
                .tempdir_in(&dir)
                .unwrap_or_else(|e| {
                    panic!("cannot create a scratch folder in {}: {e}", dir.display())
                });
            let built = scratch.path().join(name);
            let out = Command::new("git")
                .args(["clone", "-q", "--bare"])
                .arg(b)
                .arg(&built)
                .output()
                .expect("git runs");
            assert!(
                out.status.success(),
                "git clone --bare {} failed: {}",
                b.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            publish(&built, &dest);
        }
        Some(dir)
    })
    .clone()
}

/// Say that the running test did not do its work, and why, where a plain `cargo test` shows it:
/// the test harness captures `print!`/`eprint!` only, not writes to the stderr handle, so the
/// line appears without `--nocapture`, as `SKIPPED <test>: <why>` (one write, so that the line
/// stays whole beside the harness's own output; `.ci/run` lists these lines at its end).
pub fn skip(why: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("a test");
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Send the signal `name` (`INT`, `TERM`) to the process `pid`; it must be delivered.
pub fn send_signal(pid: u32, name: &str) {
    let sent = Command::new("kill")
        .args([format!("-{name}"), pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill -{name} {pid} failed");
}
