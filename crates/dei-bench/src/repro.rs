//! The reproduction scripts `dei rank --exec` writes from each issue's text (`dei-bench repro`):
//! one file per instance, so a change to the rules that write them can be read whole before
//! anything runs, and a change meant to keep them (a refactor) can be shown to leave every
//! script byte for byte the same (compare two folders, or the digest it prints).
//!
//! It reads only the task's `problem_statement` and the repository at its base commit, as
//! `dei rank --exec` does: never the evaluation's answers.

use crate::split::Split;
use dei::exec::repro::{self, RepoNames};
use dei::localize::index::FileIndex;
use dei::model::repo::{find_in_repos_dir, Snapshot};
use dei::model::Task;
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// What to write scripts for, and where.
pub struct ReproOptions {
    /// Task records (JSON or JSONL).
    pub tasks: PathBuf,
    /// Folder of repositories (`owner__name`, `owner+name/repo`, ...).
    pub repos: PathBuf,
    /// Folder the scripts go to (created): `INSTANCE.py` for each script, `index.jsonl`.
    pub out: PathBuf,
    pub split: Split,
    /// Only these instances (all when empty).
    pub ids: Vec<String>,
}

/// One instance's line of `index.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptRow {
    pub instance_id: String,
    pub repo: String,
    /// Top-level statements the script runs (0 when there is no script: such a script is
    /// not run either).
    pub statements: usize,
    /// Where the code came from: (kind, issue line).
    pub sources: Vec<(repro::Source, usize)>,
    pub imports_added: Vec<String>,
    /// SHA-256 of the script (hex), `None` when the issue gives none.
    pub sha256: Option<String>,
    /// Why no script could be written (the base commit cannot be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What one run wrote.
#[derive(Debug, Clone)]
pub struct ScriptReport {
    pub rows: Vec<ScriptRow>,
    /// Tasks left out because their repository is not under the folder.
    pub without_repo: usize,
    /// SHA-256 over every row's instance and script digest, in instance order: one value to
    /// compare two builds by.
    pub digest: String,
}

/// The script `dei rank --exec` would write for `task` from the repository at `repo`.
pub fn script_for(task: &Task, repo: &Path) -> anyhow::Result<Option<repro::Reproduction>> {
    let snap = Snapshot::open(repo, &task.base_commit)?;
    let files = FileIndex::from_snapshot(&snap)?;
    let names = RepoNames::from_repo(&files);
    Ok(repro::reproduction(&task.problem_statement, &names).filter(|r| r.statements > 0))
}

/// Write the scripts of the selected tasks whose repository is there.
pub fn write_scripts(opts: &ReproOptions) -> anyhow::Result<ScriptReport> {
    let tasks = crate::data::load_tasks(&opts.tasks)?;
    let mut chosen: Vec<(Task, PathBuf)> = Vec::new();
    let mut without_repo = 0;
    for t in tasks {
        if !opts.split.contains(&t.instance_id)
            || (!opts.ids.is_empty() && !opts.ids.contains(&t.instance_id))
        {
            continue;
        }
        match find_in_repos_dir(&opts.repos, &t.repo) {
            Some(dir) => chosen.push((t, dir)),
            None => without_repo += 1,
        }
    }
    chosen.sort_by(|a, b| a.0.instance_id.cmp(&b.0.instance_id));
    std::fs::create_dir_all(&opts.out)?;
    let rows: Vec<ScriptRow> = chosen
        .par_iter()
        .map(|(t, dir)| -> anyhow::Result<ScriptRow> {
            let mut row = ScriptRow {
                instance_id: t.instance_id.clone(),
                repo: t.repo.clone(),
                statements: 0,
                sources: Vec::new(),
                imports_added: Vec::new(),
                sha256: None,
                error: None,
            };
            match script_for(t, dir) {
                Ok(Some(r)) => {
                    let path = opts.out.join(format!("{}.py", t.instance_id));
                    std::fs::write(&path, &r.script)?;
                    row.statements = r.statements;
                    row.sources = r.sources;
                    row.imports_added = r.imports_added;
                    row.sha256 = Some(hex(&Sha256::digest(r.script.as_bytes())));
                }
                Ok(None) => {}
                Err(e) => row.error = Some(format!("{e:#}")),
            }
            Ok(row)
        })
        .collect::<anyhow::Result<_>>()?;
    let mut index = String::new();
    let mut all = Sha256::new();
    for r in &rows {
        index.push_str(&serde_json::to_string(r)?);
        index.push('\n');
        all.update(r.instance_id.as_bytes());
        all.update(b"\0");
        all.update(r.sha256.as_deref().unwrap_or("-").as_bytes());
        all.update(b"\n");
    }
    std::fs::write(opts.out.join("index.jsonl"), index)?;
    Ok(ScriptReport {
        rows,
        without_repo,
        digest: hex(&all.finalize()),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
