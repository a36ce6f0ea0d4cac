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

/// Read an instance-id list (`--instance-ids FILE`): one id a line; blank lines and everything
/// after a `#` are ignored; a repeated id counts once (the first line keeps its place). An id
/// holds no whitespace: a line with two words is an error naming its line, never two ids.
pub fn read_id_list(path: &Path) -> anyhow::Result<Vec<IdLine>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the instance-id list {}\n  hint: --instance-ids takes a text file with one instance id a line",
            path.display()
        )
    })?;
    let mut out: Vec<IdLine> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if line.split_whitespace().nth(1).is_some() {
            bail!(
                "{}:{}: `{line}` is not one instance id\n  hint: write one id a line (a `#` starts a comment)",
                path.display(),
                i + 1
            );
        }
        if seen.insert(line.to_string()) {
            out.push(IdLine {
                id: line.to_string(),
                line: i + 1,
            });
        }
    }
    if out.is_empty() {
        bail!(
            "{} names no instance id\n  hint: write one id a line (a `#` starts a comment)",
            path.display()
        );
    }
    Ok(out)
}

/// One id of an instance-id list and the line it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdLine {
    pub id: String,
    pub line: usize,
}

/// The ids of `list` (read from `path`), refused with every unknown one named when any is not
/// in `known` (`where_` says what `known` is, e.g. "the tasks file t.jsonl").
pub fn known_ids(
    list: Vec<IdLine>,
    path: &Path,
    known: &dyn Fn(&str) -> bool,
    where_: &str,
) -> anyhow::Result<Vec<String>> {
    let unknown: Vec<&IdLine> = list.iter().filter(|l| !known(&l.id)).collect();
    if !unknown.is_empty() {
        let shown: Vec<String> = unknown
            .iter()
            .take(20)
            .map(|l| format!("{} (line {})", l.id, l.line))
            .collect();
        bail!(
            "{} of the {} ids in {} are not in {where_}: {}{}\n  hint: fix or remove them; nothing was run",
            unknown.len(),
            list.len(),
            path.display(),
            shown.join(", "),
            if unknown.len() > 20 { ", …" } else { "" }
        );
    }
    Ok(list.into_iter().map(|l| l.id).collect())
}

/// [`read_id_list`] checked against a tasks file's records.
pub fn ids_in_tasks(path: &Path, tasks: &[Task], tasks_path: &Path) -> anyhow::Result<Vec<String>> {
    let have: std::collections::HashSet<&str> =
        tasks.iter().map(|t| t.instance_id.as_str()).collect();
    known_ids(
        read_id_list(path)?,
        path,
        &|id| have.contains(id),
        &format!("the tasks file {}", tasks_path.display()),
    )
}

#[cfg(test)]
mod id_list_tests {
    use super::*;

    #[test]
    fn an_id_list_takes_one_id_a_line_with_comments_and_names_the_line_of_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ids.txt");
        std::fs::write(
            &p,
            "# the requests issues\npsf__requests-1\n\n  psf__requests-2  # flaky\npsf__requests-1\n",
        )
        .unwrap();
        let ids = read_id_list(&p).unwrap();
        assert_eq!(
            ids,
            [
                IdLine {
                    id: "psf__requests-1".into(),
                    line: 2
                },
                IdLine {
                    id: "psf__requests-2".into(),
                    line: 4
                },
            ]
        );
        std::fs::write(&p, "a\nb c\n").unwrap();
        let e = read_id_list(&p).unwrap_err().to_string();
        assert!(e.contains("ids.txt:2: `b c` is not one instance id"), "{e}");
        std::fs::write(&p, "# nothing\n\n").unwrap();
        let e = read_id_list(&p).unwrap_err().to_string();
        assert!(e.contains("names no instance id"), "{e}");
    }

    #[test]
    fn unknown_ids_are_all_named_with_their_lines_before_any_work() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ids.txt");
        std::fs::write(&p, "a\nzz\nb\nyy\n").unwrap();
        let list = read_id_list(&p).unwrap();
        let e = known_ids(list.clone(), &p, &|id| id.len() == 1, "the tasks file t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 of the 4 ids in") && e.contains("zz (line 2), yy (line 4)"),
            "{e}"
        );
        let ok = known_ids(list, &p, &|_| true, "t").unwrap();
        assert_eq!(ok, ["a", "zz", "b", "yy"]);
    }
}
