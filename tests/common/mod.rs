//! Shared helpers for integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The example repository, built once per test binary with examples/make-repo.sh.
pub fn example_repo() -> PathBuf {
    static REPO: OnceLock<PathBuf> = OnceLock::new();
    REPO.get_or_init(|| {
        let dest = std::env::temp_dir()
            .join(format!("dei-example-{}", std::process::id()))
            .join("textkit.git");
        let out = Command::new("bash")
            .arg(root().join("examples/make-repo.sh"))
            .arg(&dest)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "make-repo.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dest
    })
    .clone()
}

/// The `dei` binary, run from the crate root with none of the user's LLM or repository
/// settings.
pub fn dei_command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dei"));
    c.current_dir(root())
        .env_remove("DEI_REPOS")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("DEI_LLM");
    c
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

/// `../shared/data`, when present (it is in CI and on dev machines).
pub fn shared_data() -> Option<PathBuf> {
    let p = root().join("../shared/data");
    p.join("swebench_lite/test.jsonl").exists().then_some(p)
}

/// A real project repository (`owner/name`), from `DEI_REPOS` or the local mirror; `None` skips.
pub fn real_repo(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("DEI_REPOS") {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("/work/.mirror"));
    dirs.iter()
        .find_map(|d| dei::repo::find_in_repos_dir(d, name))
}

pub fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
