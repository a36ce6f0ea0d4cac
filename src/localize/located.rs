//! `dei locate`: where an issue points, from its text alone. The search ([`super::search`],
//! with the repository's past commits), optionally re-ranked by a model ([`super::rerank`]),
//! printed with the evidence for each file.

use super::rerank::{rerank, RerankOptions};
use super::search::{locate, FileIndex, Localization, LocateOptions, HISTORY_COMMITS};
use crate::llm::model::Model;
use crate::llm::prompts::Prompts;
use crate::model::repo::Snapshot;
use crate::model::Task;
use std::fmt::Write as _;
use std::path::Path;

/// A model to re-rank with, and how to name it in the output.
pub struct WithModel<'a> {
    pub model: &'a dyn Model,
    pub prompts: &'a Prompts,
    pub label: String,
}

/// Where one issue points.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Located {
    pub instance_id: String,
    pub repo: String,
    pub base_commit: String,
    /// The model that re-ranked the search, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked_by: Option<String>,
    /// Why re-ranking kept the search order in a step.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(flatten)]
    pub localization: Localization,
}

/// Locate `task` in the repository at `repo_path` (at its base commit), keeping the `top`
/// best files and definitions.
pub fn locate_issue(
    task: &Task,
    repo_path: &Path,
    top: usize,
    with: Option<&WithModel>,
) -> anyhow::Result<Located> {
    let snap = Snapshot::open(repo_path, &task.base_commit)?;
    let files = FileIndex::from_snapshot(&snap)?.with_history(snap.history(HISTORY_COMMITS)?);
    let opts = LocateOptions {
        top_files: top.max(RerankOptions::default().shortlist),
        top_functions: top.max(1),
        ..LocateOptions::default()
    };
    let mut loc = locate(&task.problem_statement, &files, &opts);
    let mut notes = Vec::new();
    if let Some(w) = with {
        let rr = rerank(
            &task.problem_statement,
            &files,
            &loc,
            w.model,
            w.prompts,
            &RerankOptions::default(),
        )?;
        loc = rr.localization;
        notes = rr.notes;
    }
    loc.files.truncate(top);
    loc.functions.truncate(top);
    Ok(Located {
        instance_id: task.instance_id.clone(),
        repo: task.repo.clone(),
        base_commit: snap.commit.clone(),
        reranked_by: with.map(|w| w.label.clone()),
        notes,
        localization: loc,
    })
}

/// The text form: ranked files with their evidence, then ranked definitions with their lines.
pub fn render(l: &Located) -> String {
    let mut out = format!(
        "{} at {}: where the issue points ({})\n",
        l.instance_id,
        &l.base_commit[..l.base_commit.len().min(12)],
        match &l.reranked_by {
            Some(m) => format!("search re-ranked by {m}"),
            None => "search over the issue text, no model".into(),
        }
    );
    for n in &l.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out.push_str("\nfiles:\n");
    let width = l
        .localization
        .files
        .iter()
        .map(|f| f.path.len())
        .max()
        .unwrap_or(0);
    for (i, f) in l.localization.files.iter().enumerate() {
        let why = if f.why.is_empty() {
            String::new()
        } else {
            format!("  ({})", f.why.join("; "))
        };
        let _ = writeln!(out, "{:>3}. {:<width$}{why}", i + 1, f.path);
    }
    out.push_str("\ndefinitions:\n");
    for (i, f) in l.localization.functions.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>3}. {}:{}-{}  {}",
            i + 1,
            f.path,
            f.lines.start,
            f.lines.end,
            f.name
        );
    }
    if l.localization.files.is_empty() {
        out.push_str("  (the issue text matched no file)\n");
    }
    out
}
