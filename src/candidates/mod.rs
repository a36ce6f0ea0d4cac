//! Stage 1: load candidate patches.
//!
//! Accepted, auto-detected, alone or mixed under one folder:
//! - SWE-bench prediction files (`*.jsonl`, `*.json`): records with `instance_id`,
//!   `model_name_or_path` and `model_patch` (a list, an `{id: record}` map, or one record);
//! - patch folders: `<agent>/<instance_id>.diff` or `.patch`.
//!
//! One bad record never sinks the others: it becomes a [`Problem`] and loading goes on.

use crate::types::{Candidate, Origin};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// Something in the input that could not be used, with where it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    pub origin: Origin,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// Everything found under the given inputs.
#[derive(Debug, Default)]
pub struct Loaded {
    pub candidates: Vec<Candidate>,
    pub problems: Vec<Problem>,
}

impl Loaded {
    /// Keep only the candidates for one issue.
    pub fn for_issue(&self, instance_id: &str) -> Vec<Candidate> {
        self.candidates
            .iter()
            .filter(|c| c.instance_id == instance_id)
            .cloned()
            .collect()
    }

    /// The distinct agents, in first-seen order.
    pub fn agents(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for c in &self.candidates {
            if !seen.contains(&c.agent) {
                seen.push(c.agent.clone());
            }
        }
        seen
    }
}

/// A candidates path that does not exist is an error, with what to pass instead.
pub fn require_exists(path: &Path) -> anyhow::Result<()> {
    if !path.exists() {
        anyhow::bail!(
            "candidates path {} does not exist\n  hint: pass a predictions file (.json/.jsonl) or a folder of <agent>/<instance_id>.diff files",
            path.display()
        );
    }
    Ok(())
}

/// The agent name a source stands for when a shared model name must be told apart: a patch
/// folder's name, or a predictions file's [`file_agent`] name.
pub fn source_agent(source: &Path) -> String {
    if source.is_dir() {
        source
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("unknown")
            .to_string()
    } else {
        file_agent(source)
    }
}

/// Load candidates from files and folders. A path that does not exist is an error;
/// anything wrong inside an existing path is a [`Problem`].
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Loaded> {
    let mut out = Loaded::default();
    for path in paths {
        require_exists(path)?;
        if path.is_dir() {
            load_dir(path, &mut out)?;
        } else {
            load_file(path, None, &mut out);
        }
    }
    disambiguate_agents(&mut out.candidates);
    Ok(out)
}

/// Where a candidate's agent name comes from: its predictions file, or its patch folder.
fn source_of(c: &Candidate) -> PathBuf {
    if matches!(extension(&c.origin.path).as_str(), "diff" | "patch") {
        c.origin
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    } else {
        c.origin.path.clone()
    }
}

/// Published runs often share a `model_name_or_path` (three ACR runs all say
/// `gpt-4-0125-preview`). When one agent name comes from several sources, name each
/// candidate after its own source (file stem or run folder) so agents stay distinct.
fn disambiguate_agents(cands: &mut [Candidate]) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut sources: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    for c in cands.iter() {
        sources
            .entry(c.agent.clone())
            .or_default()
            .insert(source_of(c));
    }
    for c in cands.iter_mut() {
        if sources.get(&c.agent).is_some_and(|s| s.len() > 1) {
            let renamed = source_agent(&source_of(c));
            c.agent = format!("{}@{renamed}", c.agent);
        }
    }
}

fn load_dir(root: &Path, out: &mut Loaded) -> anyhow::Result<()> {
    for path in files_under(root)? {
        load_file(&path, folder_agent(&path, root), out);
    }
    Ok(())
}

/// Every file below `dir`, recursively, in sorted order, hidden entries (`.git`, `.DS_Store`)
/// left out.
pub fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    walk(dir, &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The agent a diff file found below `root` belongs to: the name of the folder it sits in
/// (one folder per agent), `None` for a root without a name.
pub fn folder_agent(path: &Path, root: &Path) -> Option<String> {
    path.parent()
        .filter(|p| *p != root || root.parent().is_some())
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(str::to_string)
}

/// A file's extension, lowercased (`""` when it has none).
pub fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn load_file(path: &Path, dir_agent: Option<String>, out: &mut Loaded) {
    match extension(path).as_str() {
        "diff" | "patch" => load_patch_file(path, dir_agent, out),
        "jsonl" | "json" => load_predictions(path, out),
        _ => {}
    }
}

fn load_patch_file(path: &Path, dir_agent: Option<String>, out: &mut Loaded) {
    let origin = Origin {
        path: path.to_path_buf(),
        line: None,
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            out.problems.push(Problem {
                origin,
                message: format!("cannot read patch: {e}"),
            });
            return;
        }
    };
    let patch = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let instance_id = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string();
    let agent = dir_agent.unwrap_or_else(|| "unknown".to_string());
    out.candidates.push(Candidate {
        instance_id,
        agent,
        patch,
        resolved: None,
        origin,
    });
}

/// The agent name a predictions file stands for when its records carry none:
/// the file stem, or the parent folder for generic names like `all_preds.jsonl`.
pub fn file_agent(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("unknown");
    let generic = ["all_preds", "preds", "predictions", "output", "outputs"];
    if generic.contains(&stem) {
        if let Some(parent) = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
        {
            return parent.to_string();
        }
    }
    stem.to_string()
}

fn load_predictions(path: &Path, out: &mut Loaded) {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            out.problems.push(Problem {
                origin: Origin {
                    path: path.to_path_buf(),
                    line: None,
                },
                message: format!("cannot read predictions file: {e}"),
            });
            return;
        }
    };
    let fallback = file_agent(path);
    let trimmed = text.trim_start();
    // A .json file may hold JSON Lines too; decide by trying the whole document first.
    if extension(path) == "json" || trimmed.starts_with('[') {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            load_json_document(path, value, &fallback, out);
            return;
        }
    }
    let before = out.candidates.len();
    let mut line_problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let origin = Origin {
            path: path.to_path_buf(),
            line: Some(i + 1),
        };
        match serde_json::from_str::<Value>(line) {
            Ok(v) => match record(&v, &fallback, origin.clone()) {
                Ok(Some(c)) => out.candidates.push(c),
                Ok(None) => {}
                Err(message) => line_problems.push(Problem { origin, message }),
            },
            Err(e) => line_problems.push(Problem {
                origin,
                message: format!("malformed JSON ({e}); fix or delete this line"),
            }),
        }
    }
    // A JSON file that is not predictions (e.g. a results.json beside them) is not an error
    // worth a line per record: say it once.
    if out.candidates.len() == before && !line_problems.is_empty() && line_problems.len() > 3 {
        out.problems.push(Problem {
            origin: Origin {
                path: path.to_path_buf(),
                line: None,
            },
            message: format!(
                "not a predictions file ({} unusable lines); skipped",
                line_problems.len()
            ),
        });
    } else {
        out.problems.extend(line_problems);
    }
}

fn load_json_document(path: &Path, value: Value, fallback: &str, out: &mut Loaded) {
    let origin = Origin {
        path: path.to_path_buf(),
        line: None,
    };
    let records: Vec<Value> = match value {
        Value::Array(items) => items,
        Value::Object(ref map) if map.contains_key("instance_id") => vec![value],
        Value::Object(map) => {
            // `{instance_id: record}` form; values that are not records mean "not predictions".
            if !map.values().all(|v| v.is_object()) {
                out.problems.push(Problem {
                    origin,
                    message: "not a predictions file (no instance_id/model_patch records); skipped"
                        .into(),
                });
                return;
            }
            map.into_iter()
                .map(|(k, mut v)| {
                    if let Value::Object(ref mut m) = v {
                        m.entry("instance_id").or_insert(Value::String(k));
                    }
                    v
                })
                .collect()
        }
        _ => {
            out.problems.push(Problem {
                origin,
                message: "expected a list of predictions or an {instance_id: prediction} map"
                    .into(),
            });
            return;
        }
    };
    for (i, v) in records.iter().enumerate() {
        match record(v, fallback, origin.clone()) {
            Ok(Some(c)) => out.candidates.push(c),
            Ok(None) => {}
            Err(message) => out.problems.push(Problem {
                origin: origin.clone(),
                message: format!("record #{}: {message}", i + 1),
            }),
        }
    }
}

/// Turn one JSON record into a candidate. `Ok(None)` for records that are clearly not
/// predictions but harmless (none at present); `Err` says what is wrong.
pub fn record(
    v: &Value,
    fallback_agent: &str,
    origin: Origin,
) -> Result<Option<Candidate>, String> {
    let obj = v.as_object().ok_or("expected a JSON object")?;
    let instance_id = obj
        .get("instance_id")
        .and_then(Value::as_str)
        .ok_or("missing string field `instance_id`")?
        .to_string();
    let patch = match obj.get("model_patch") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None if obj.contains_key("model_patch") => String::new(),
        None => {
            return Err(format!(
                "missing field `model_patch` for {instance_id} (use null or \"\" for an empty candidate)"
            ))
        }
        Some(other) => return Err(format!("`model_patch` must be a string, found {}", kind(other))),
    };
    let agent = ["model_name_or_path", "run", "agent"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
        .unwrap_or(fallback_agent)
        .to_string();
    let resolved = obj.get("resolved").and_then(Value::as_bool);
    Ok(Some(Candidate {
        instance_id,
        agent,
        patch,
        resolved,
        origin,
    }))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn mixed_folder_is_auto_detected() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "agentA/x__y-1.diff", "--- a/f\n+++ b/f\n");
        write(dir.path(), "agentB/x__y-1.patch", "");
        write(
            dir.path(),
            "agentD.jsonl",
            "{\"instance_id\":\"x__y-1\",\"model_name_or_path\":\"agentC\",\"model_patch\":\"d\"}\n\
             not json\n\
             {\"instance_id\":\"x__y-2\",\"model_patch\":null}\n",
        );
        let loaded = load(&[dir.path().to_path_buf()]).unwrap();
        let mut agents = loaded.agents();
        agents.sort();
        assert_eq!(agents, vec!["agentA", "agentB", "agentC", "agentD"]);
        assert_eq!(loaded.for_issue("x__y-1").len(), 3);
        // empty candidates are kept
        assert!(loaded.candidates.iter().filter(|c| c.is_empty()).count() == 2);
        assert_eq!(loaded.problems.len(), 1);
        assert_eq!(loaded.problems[0].origin.line, Some(2));
        assert!(loaded.problems[0].to_string().contains("agentD.jsonl:2"));
    }

    #[test]
    fn json_map_and_list_forms() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "m.json",
            r#"{"i-1": {"model_name_or_path": "m", "model_patch": "p"}}"#,
        );
        let b = write(
            dir.path(),
            "l.json",
            r#"[{"instance_id": "i-1", "model_patch": "q"}, {"instance_id": 3}]"#,
        );
        let loaded = load(&[a, b]).unwrap();
        assert_eq!(loaded.candidates.len(), 2);
        assert_eq!(loaded.candidates[0].agent, "m");
        assert_eq!(loaded.candidates[1].agent, "l");
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.problems[0].message.contains("instance_id"));
    }

    #[test]
    fn shared_model_names_from_different_runs_stay_distinct() {
        let dir = tempfile::tempdir().unwrap();
        let rec =
            "{\"instance_id\":\"i-1\",\"model_name_or_path\":\"gpt-4\",\"model_patch\":\"p\"}\n";
        write(dir.path(), "run-1/all_preds.jsonl", rec);
        write(dir.path(), "run-2/all_preds.jsonl", rec);
        write(
            dir.path(),
            "other/solo.jsonl",
            &rec.replace("gpt-4", "solo"),
        );
        let loaded = load(&[dir.path().to_path_buf()]).unwrap();
        let mut agents = loaded.agents();
        agents.sort();
        assert_eq!(agents, vec!["gpt-4@run-1", "gpt-4@run-2", "solo"]);
    }

    #[test]
    fn missing_path_is_an_error() {
        let err = load(&[PathBuf::from("/definitely/not/here")]).unwrap_err();
        assert!(err.to_string().contains("does not exist"));
    }
}
