//! The committee's selection: a score per (instance, agent).
//!
//! Accepted, auto-detected:
//! - `dei rank --json` output for one issue (`{"instance_id", "ranked": [{"agent", "score"}]}`),
//!   a JSON list of those, or JSON Lines with one per line (the multi-issue runner's journal);
//! - plain score rows `{instance_id, agent, score}` as JSON Lines or a JSON list;
//! - a CSV with columns `instance_id`, `agent`, `score` (any order, more columns ignored).
//!
//! When the same (instance, agent) appears twice, the later score wins and is counted.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub path: PathBuf,
    /// (instance_id, agent) → score, agent names as the file writes them.
    pub scores: HashMap<(String, String), f64>,
    /// How many (instance, agent) pairs were given more than once.
    pub duplicates: usize,
}

impl Selection {
    /// Instances that carry at least one score.
    pub fn instances(&self) -> std::collections::BTreeSet<&str> {
        self.scores.keys().map(|(i, _)| i.as_str()).collect()
    }
}

const HINT: &str = "hint: a selection is `dei rank --json` output (one result, a list, or one per line), rows {instance_id, agent, score} as JSONL, or a CSV with columns instance_id,agent,score";

fn err(path: &Path, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{}: {what}", path.display())
}

/// Read a selection file.
pub fn load(path: &Path) -> anyhow::Result<Selection> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        err(
            path,
            format_args!("cannot read selection file: {e}\n  {HINT}"),
        )
    })?;
    let mut sel = Selection {
        path: path.to_path_buf(),
        ..Selection::default()
    };
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "csv" {
        parse_csv(path, &text, &mut sel)?;
    } else if let Ok(v) = serde_json::from_str::<Value>(&text) {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    add_value(path, item, &format!("record #{}", i + 1), &mut sel)?;
                }
            }
            other => add_value(path, &other, "document", &mut sel)?,
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).map_err(|e| {
                err(
                    path,
                    format_args!("line {}: malformed JSON ({e})\n  {HINT}", i + 1),
                )
            })?;
            add_value(path, &v, &format!("line {}", i + 1), &mut sel)?;
        }
    }
    if sel.scores.is_empty() {
        return Err(err(path, format_args!("no scores found\n  {HINT}")));
    }
    Ok(sel)
}

fn insert(sel: &mut Selection, instance: &str, agent: &str, score: f64) {
    if sel
        .scores
        .insert((instance.to_string(), agent.to_string()), score)
        .is_some()
    {
        sel.duplicates += 1;
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64().filter(|x| x.is_finite()),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

fn add_value(path: &Path, v: &Value, at: &str, sel: &mut Selection) -> anyhow::Result<()> {
    let obj = v
        .as_object()
        .ok_or_else(|| err(path, format_args!("{at}: expected a JSON object\n  {HINT}")))?;
    let instance = obj.get("instance_id").and_then(Value::as_str);
    if let Some(ranked) = obj.get("ranked") {
        let ranked = ranked
            .as_array()
            .ok_or_else(|| err(path, format_args!("{at}: `ranked` must be a list")))?;
        for (j, r) in ranked.iter().enumerate() {
            let inst = r
                .get("instance_id")
                .and_then(Value::as_str)
                .or(instance)
                .ok_or_else(|| {
                    err(
                        path,
                        format_args!("{at}: ranked[{j}] has no instance_id (nor has the result)"),
                    )
                })?;
            let agent = r.get("agent").and_then(Value::as_str).ok_or_else(|| {
                err(
                    path,
                    format_args!("{at}: ranked[{j}] has no string `agent`"),
                )
            })?;
            let score = number(r.get("score")).ok_or_else(|| {
                err(
                    path,
                    format_args!("{at}: ranked[{j}] ({agent}) has no numeric `score`"),
                )
            })?;
            insert(sel, inst, agent, score);
        }
        return Ok(());
    }
    let instance = instance.ok_or_else(|| {
        err(
            path,
            format_args!("{at}: missing string field `instance_id`\n  {HINT}"),
        )
    })?;
    let agent = ["agent", "model_name_or_path", "run"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .ok_or_else(|| {
            err(
                path,
                format_args!("{at}: missing string field `agent`\n  {HINT}"),
            )
        })?;
    let score = number(obj.get("score"))
        .ok_or_else(|| err(path, format_args!("{at}: missing numeric field `score`")))?;
    insert(sel, instance, agent, score);
    Ok(())
}

fn parse_csv(path: &Path, text: &str, sel: &mut Selection) -> anyhow::Result<()> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| err(path, format_args!("empty CSV\n  {HINT}")))?;
    let cols: Vec<String> = header
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    let col = |name: &str| {
        cols.iter().position(|c| c == name).ok_or_else(|| {
            err(
                path,
                format_args!(
                    "line 1: no `{name}` column (found {})\n  {HINT}",
                    cols.join(",")
                ),
            )
        })
    };
    let (ci, ca, cs) = (col("instance_id")?, col("agent")?, col("score")?);
    for (i, line) in lines {
        let cells: Vec<&str> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let get = |c: usize| cells.get(c).copied().unwrap_or("");
        let score: f64 = get(cs).parse().map_err(|_| {
            err(
                path,
                format_args!("line {}: score `{}` is not a number", i + 1, get(cs)),
            )
        })?;
        if get(ci).is_empty() || get(ca).is_empty() {
            return Err(err(
                path,
                format_args!("line {}: empty instance_id or agent", i + 1),
            ));
        }
        insert(sel, get(ci), get(ca), score);
    }
    Ok(())
}
