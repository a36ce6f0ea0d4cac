//! Stage 2a: the issue to fix, from SWE-bench-style task records or a plain-text file.

use crate::model::Task;
use anyhow::{bail, Context as _};
use serde_json::Value;
use std::path::Path;

/// Read every task in a JSON (list or single record) or JSONL file.
pub fn load_tasks(path: &Path) -> anyhow::Result<Vec<Task>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read tasks file {}\n  hint: pass --tasks with a SWE-bench JSON/JSONL file",
            path.display()
        )
    })?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let values: Vec<Value> = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a valid JSON list of tasks", path.display()))?;
        return values
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                parse_task(v)
                    .map_err(|e| anyhow::anyhow!("{}: task #{}: {e}", path.display(), i + 1))
            })
            .collect();
    }
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        if v.is_object() {
            return Ok(vec![
                parse_task(v).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            ]);
        }
    }
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: malformed JSON ({e})\n  hint: each line must be one task record",
                path.display(),
                i + 1
            )
        })?;
        tasks
            .push(parse_task(v).map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?);
    }
    Ok(tasks)
}

fn parse_task(v: Value) -> Result<Task, String> {
    let obj = v.as_object().ok_or("expected a JSON object")?;
    for field in ["instance_id", "base_commit"] {
        if !obj.get(field).is_some_and(Value::is_string) {
            return Err(format!("missing string field `{field}`"));
        }
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Pick one task by id, with a helpful message when it is not there.
pub fn find_task(tasks: &[Task], id: &str, source: &Path) -> anyhow::Result<Task> {
    if let Some(t) = tasks.iter().find(|t| t.instance_id == id) {
        return Ok(t.clone());
    }
    let mut close: Vec<&str> = tasks
        .iter()
        .map(|t| t.instance_id.as_str())
        .filter(|t| {
            let prefix = id.split('-').next().unwrap_or(id);
            t.starts_with(prefix)
        })
        .take(5)
        .collect();
    if close.is_empty() {
        close = tasks
            .iter()
            .take(3)
            .map(|t| t.instance_id.as_str())
            .collect();
    }
    bail!(
        "unknown issue id `{id}` in {} ({} tasks)\n  hint: ids look like: {}",
        source.display(),
        tasks.len(),
        close.join(", ")
    )
}

/// A plain-text issue, for use with `--repo` and `--commit`.
pub fn task_from_text(path: &Path, commit: &str) -> anyhow::Result<Task> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read issue file {}", path.display()))?;
    if text.trim().is_empty() {
        bail!(
            "issue file {} is empty\n  hint: write the issue text (title and description) into it",
            path.display()
        );
    }
    let id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("issue")
        .to_string();
    Ok(Task {
        instance_id: id,
        repo: String::new(),
        base_commit: commit.to_string(),
        problem_statement: text,
        ..Task::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_patch_is_read_as_the_gold_patch() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("verified.json");
        std::fs::write(
            &p,
            r#"[{"instance_id":"psf__requests-1142","base_commit":"abc","problem_statement":"x","repo":"psf/requests","golden_patch":"diff --git a/x b/x","expected_spans":"{}"}]"#,
        )
        .unwrap();
        let t = load_tasks(&p).unwrap();
        assert_eq!(t[0].gold_patch.as_deref(), Some("diff --git a/x b/x"));
    }

    #[test]
    fn jsonl_with_bad_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(
            &p,
            "{\"instance_id\":\"a-1\",\"base_commit\":\"abc\",\"problem_statement\":\"x\",\"repo\":\"o/a\"}\n{oops\n",
        )
        .unwrap();
        let err = load_tasks(&p).unwrap_err().to_string();
        assert!(err.contains("t.jsonl:2"), "{err}");
    }

    #[test]
    fn unknown_id_suggests_neighbours() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(
            &p,
            r#"[{"instance_id":"psf__requests-1","base_commit":"abc","problem_statement":"x","repo":"psf/requests"}]"#,
        )
        .unwrap();
        let tasks = load_tasks(&p).unwrap();
        assert_eq!(tasks.len(), 1);
        let err = find_task(&tasks, "psf__requests-9", &p)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown issue id") && err.contains("psf__requests-1"),
            "{err}"
        );
    }
}

/// Which issues of a tasks file to work on (`dei rank --all`/`--issue`, `dei generate`).
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every issue that has at least one candidate.
    All,
    /// These issue ids.
    Ids(Vec<String>),
}
