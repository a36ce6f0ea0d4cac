//! The data set every measurement reads, loaded one way: the SWE-bench Lite tasks, the
//! labelled candidate pool and the repositories.
//!
//! - Data folder: `--data DIR`, else `DEI_DATA`, else `../shared/data` beside the repository
//!   (see its `SOURCES.md`): `swebench_lite/test.jsonl` (tasks) and `lite_candidates.jsonl`
//!   (one row per instance and run; its `resolved` field is the label).
//! - Candidates are read with `dei`'s own loader ([`dei::candidates::load`]): the agent is the
//!   row's `run`, the label its `resolved`; a row that cannot be used is an error with its
//!   `file:line`.
//! - Repositories: `--repos DIR`, else `DEI_REPOS`, else the repository's `target/repos` (where
//!   the tests clone the bundles of `../shared/repos`) when it exists. Folders inside are found
//!   by [`dei::model::repo::find_in_repos_dir`] (`owner__name`, `owner+name/repo`, ...).

use dei::model::{Candidate, Task};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repository this crate is part of (it lives in `crates/dei-bench`).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .and_then(Path::parent)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The data folder: `given`, else `DEI_DATA`, else `../shared/data` beside the repository.
pub fn data_dir(given: Option<&Path>) -> PathBuf {
    match given {
        Some(d) => d.to_path_buf(),
        None => match std::env::var_os("DEI_DATA") {
            Some(d) => PathBuf::from(d),
            None => repo_root().join("../shared/data"),
        },
    }
}

/// The folder of repositories: `given` (a `--repos` flag, which also reads `DEI_REPOS`), else
/// `DEI_REPOS`, else the repository's `target/repos` when it exists; `None` when there is none.
pub fn repos_dir(given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("DEI_REPOS").map(PathBuf::from))
        .or_else(|| Some(repo_root().join("target/repos")).filter(|d| d.is_dir()))
}

/// The task file in a data folder.
pub fn tasks_file(data: &Path) -> PathBuf {
    data.join("swebench_lite/test.jsonl")
}

/// The labelled candidate pool in a data folder.
pub fn candidates_file(data: &Path) -> PathBuf {
    data.join("lite_candidates.jsonl")
}

/// The tasks of `path` (JSON or JSONL task records).
pub fn load_tasks(path: &Path) -> anyhow::Result<Vec<Task>> {
    if !path.exists() {
        anyhow::bail!(
            "{} not found\n  hint: pass --data DIR (the folder holding swebench_lite/test.jsonl) or set DEI_DATA",
            path.display()
        );
    }
    dei::model::task::load_tasks(path)
}

/// Every candidate of a labelled pool, grouped by instance in the order of the file; each
/// carries its label in `resolved` (see [`resolved`]).
pub fn load_candidates(path: &Path) -> anyhow::Result<HashMap<String, Vec<Candidate>>> {
    if !path.exists() {
        anyhow::bail!(
            "{} not found\n  hint: pass --data DIR (the folder holding lite_candidates.jsonl) or set DEI_DATA",
            path.display()
        );
    }
    let loaded = dei::candidates::load(&[path.to_path_buf()])?;
    if !loaded.problems.is_empty() {
        anyhow::bail!(
            "{} has rows that cannot be used:\n{}",
            path.display(),
            dei::candidates::problem_lines(&loaded.problems, 10).join("\n")
        );
    }
    let mut out: HashMap<String, Vec<Candidate>> = HashMap::new();
    for c in loaded.candidates {
        out.entry(c.instance_id.clone()).or_default().push(c);
    }
    Ok(out)
}

/// A candidate's label: whether it resolves its issue (a row without one counts as not).
pub fn resolved(c: &Candidate) -> bool {
    c.resolved.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_grouped_by_instance_with_run_and_label() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pool.jsonl");
        std::fs::write(
            &p,
            concat!(
                "{\"instance_id\": \"a__b-1\", \"run\": \"r1\", \"model_patch\": \"\", \"resolved\": false}\n",
                "{\"instance_id\": \"a__b-2\", \"run\": \"r1\", \"model_patch\": \"diff\", \"resolved\": true}\n",
                "{\"instance_id\": \"a__b-1\", \"run\": \"r2\", \"model_patch\": \"x\"}\n",
            ),
        )
        .unwrap();
        let by = load_candidates(&p).unwrap();
        let one: Vec<(&str, bool)> = by["a__b-1"]
            .iter()
            .map(|c| (c.agent.as_str(), resolved(c)))
            .collect();
        assert_eq!(one, [("r1", false), ("r2", false)]);
        assert!(resolved(&by["a__b-2"][0]));
        assert_eq!(by["a__b-2"][0].origin.line, Some(2));
    }

    #[test]
    fn a_bad_row_or_a_missing_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pool.jsonl");
        std::fs::write(&p, "{\"instance_id\": \"a__b-1\", \"run\": \"r1\"}\n").unwrap();
        let e = format!("{:#}", load_candidates(&p).unwrap_err());
        assert!(
            e.contains("pool.jsonl:1") && e.contains("model_patch"),
            "{e}"
        );
        let e = format!(
            "{:#}",
            load_tasks(&dir.path().join("none.jsonl")).unwrap_err()
        );
        assert!(e.contains("--data DIR"), "{e}");
    }
}
