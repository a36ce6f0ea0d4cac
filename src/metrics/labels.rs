//! Resolved labels in the forms people have them.
//!
//! Auto-detected per file:
//! - SWE-bench `results.json` / `report.json` with a `"resolved": [ids]` list (also sb-cli's
//!   `"resolved_ids"`): one agent; every instance not listed is unresolved;
//! - a per-instance map `{id: {"resolved": true, ...}}` (the harness's `report.json`) or
//!   `{id: true}`: one agent; only the listed instances carry a label;
//! - many runs at once: `{"runs": {agent: {"resolved": [ids]}}, "instances": [ids]}`
//!   (`lite_resolved_by_run.json`) or `{agent: [ids]}`;
//! - a 0/1 matrix CSV: a header `instance_id,agent1,agent2,...`, one row per instance;
//! - prediction-like rows (`.jsonl` or a JSON list) with `instance_id` and `resolved`.
//!
//! Agents are named by the candidates' rule ([`crate::candidates`]): a row's `agent` or `run`;
//! `model_name_or_path` only in a file that mixes several; else the file, or its folder for
//! generic names such as `results.json`. `AGENT=FILE` names a single-agent file explicitly.

use crate::candidates::{self, Named};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The labels of one agent from one source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentLabels {
    /// Instances this agent resolved.
    pub resolved: BTreeSet<String>,
    /// Instances that carry a label at all; `None` when every instance not in `resolved` is
    /// unresolved (the list forms).
    pub labeled: Option<BTreeSet<String>>,
}

impl AgentLabels {
    /// The label of one instance: `Some(true/false)`, or `None` when this source says nothing.
    pub fn get(&self, instance_id: &str) -> Option<bool> {
        if self.resolved.contains(instance_id) {
            return Some(true);
        }
        match &self.labeled {
            None => Some(false),
            Some(set) => set.contains(instance_id).then_some(false),
        }
    }
}

/// Labels read from one file.
#[derive(Debug, Clone, Default)]
pub struct LabelFile {
    pub path: PathBuf,
    /// What the file was read as, for messages ("resolved list", "matrix CSV", ...).
    pub format: String,
    /// Agent name → labels, in file order.
    pub agents: Vec<(String, AgentLabels)>,
    /// Whether the agent of a single-agent file was guessed from the file or folder name
    /// (and may be renamed to the candidates' agent of the same folder).
    pub agent_from_path: bool,
    /// Instance ids the file names as its universe (listed instances, matrix rows, other id lists).
    pub instances: BTreeSet<String>,
}

/// The agent a single-agent file stands for, by the candidates' naming rule
/// ([`crate::candidates::source_name`]): its stem, or its folder for generic stems
/// (`lite_runs/acr-1/results.json` labels `acr-1`, as `lite_runs/acr-1/all_preds.jsonl` is).
pub fn agent_from_path(path: &Path) -> String {
    crate::candidates::source_name(path)
}

/// Split a `--labels` argument: `AGENT=FILE` or just `FILE`.
pub fn parse_label_arg(arg: &str) -> (Option<String>, PathBuf) {
    if !Path::new(arg).exists() {
        if let Some((agent, file)) = arg.split_once('=') {
            if !agent.is_empty() && !file.is_empty() {
                return (Some(agent.to_string()), PathBuf::from(file));
            }
        }
    }
    (None, PathBuf::from(arg))
}

fn err(path: &Path, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{}: {what}", path.display())
}

const HINT: &str = "hint: labels may be a results.json/report.json with a \"resolved\" list, a {instance_id: {\"resolved\": bool}} map, {\"runs\": {agent: {\"resolved\": [...]}}}, a 0/1 matrix CSV (instance_id,agent1,...), or JSONL rows {instance_id, resolved, agent|run}";

/// Read one label file. `agent` names the agent of a single-agent file.
pub fn load(path: &Path, agent: Option<&str>) -> anyhow::Result<LabelFile> {
    let bytes = std::fs::read(path).map_err(|e| {
        err(
            path,
            format_args!("cannot read labels file: {e}\n  hint: check the path of --labels"),
        )
    })?;
    let text = crate::candidates::decode_text(&bytes).map_err(|m| err(path, m))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut file = if ext == "csv" || ext == "tsv" {
        parse_matrix(path, text, if ext == "tsv" { '\t' } else { ',' })?
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => parse_json(path, v)?,
            Err(whole) => {
                // JSON Lines of rows, or a broken JSON document.
                if ext == "json" && !text.trim_start().starts_with('{') {
                    return Err(err(
                        path,
                        format_args!("malformed JSON ({whole})\n  {HINT}"),
                    ));
                }
                parse_rows_jsonl(path, text)?
            }
        }
    };
    if let Some(name) = agent {
        if file.agents.len() != 1 {
            return Err(err(
                path,
                format_args!(
                    "AGENT=FILE names one agent, but this file holds {} agents ({}); drop `{name}=`",
                    file.agents.len(),
                    file.agents
                        .iter()
                        .map(|a| a.0.as_str())
                        .take(5)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        file.agents[0].0 = name.to_string();
        file.agent_from_path = false;
    }
    file.path = path.to_path_buf();
    Ok(file)
}

fn id_list(path: &Path, key: &str, v: &Value) -> anyhow::Result<BTreeSet<String>> {
    let items = v.as_array().ok_or_else(|| {
        err(
            path,
            format_args!("`{key}` must be a list of instance ids\n  {HINT}"),
        )
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str().map(str::to_string).ok_or_else(|| {
                err(
                    path,
                    format_args!("`{key}`[{i}] must be an instance id string, found {x}"),
                )
            })
        })
        .collect()
}

/// Lists in SWE-bench result files that name instances (the universe the run saw).
const ID_LISTS: &[&str] = &[
    "resolved",
    "resolved_ids",
    "unresolved_ids",
    "submitted_ids",
    "completed_ids",
    "incomplete_ids",
    "empty_patch_ids",
    "error_ids",
    "generated",
    "no_generation",
    "applied",
    "no_apply",
    "instances",
];

fn parse_json(path: &Path, v: Value) -> anyhow::Result<LabelFile> {
    let single = |format: &str, labels: AgentLabels, instances: BTreeSet<String>| LabelFile {
        path: path.to_path_buf(),
        format: format.to_string(),
        agents: vec![(agent_from_path(path), labels)],
        agent_from_path: true,
        instances,
    };
    match v {
        // One prediction-like row (a JSONL file of one line).
        Value::Object(ref map) if map.contains_key("instance_id") => {
            let mut rows = Rows::new(path);
            rows.add(&v, "line 1")?;
            rows.finish()
        }
        Value::Object(map) => {
            // Many runs: {"runs": {agent: {"resolved": [...]}} | {agent: [...]}, "instances": [...]}
            if let Some(Value::Object(runs)) = map.get("runs") {
                let mut agents = Vec::new();
                for (name, run) in runs {
                    let list = match run {
                        Value::Object(r) => r.get("resolved").ok_or_else(|| {
                            err(
                                path,
                                format_args!("run `{name}` has no \"resolved\" list\n  {HINT}"),
                            )
                        })?,
                        other => other,
                    };
                    let resolved = id_list(path, &format!("runs.{name}.resolved"), list)?;
                    agents.push((
                        name.clone(),
                        AgentLabels {
                            resolved,
                            labeled: None,
                        },
                    ));
                }
                let instances = match map.get("instances") {
                    Some(v) => id_list(path, "instances", v)?,
                    None => BTreeSet::new(),
                };
                return Ok(LabelFile {
                    path: path.to_path_buf(),
                    format: "runs map".into(),
                    agents,
                    agent_from_path: false,
                    instances,
                });
            }
            // One run: {"resolved": [...]} or sb-cli {"resolved_ids": [...]}
            for key in ["resolved", "resolved_ids"] {
                if let Some(list) = map.get(key).filter(|v| v.is_array()) {
                    let resolved = id_list(path, key, list)?;
                    let mut instances = BTreeSet::new();
                    for k in ID_LISTS {
                        if let Some(Value::Array(items)) = map.get(*k) {
                            instances
                                .extend(items.iter().filter_map(Value::as_str).map(String::from));
                        }
                    }
                    return Ok(single(
                        "resolved list",
                        AgentLabels {
                            resolved,
                            labeled: None,
                        },
                        instances,
                    ));
                }
            }
            if map.is_empty() {
                return Err(err(path, format_args!("empty JSON object\n  {HINT}")));
            }
            // {id: {"resolved": bool}} or {id: bool}
            if map.values().all(|v| v.is_object() || v.is_boolean()) {
                let mut labels = AgentLabels {
                    resolved: BTreeSet::new(),
                    labeled: Some(BTreeSet::new()),
                };
                for (id, rec) in &map {
                    let r = match rec {
                        Value::Bool(b) => *b,
                        Value::Object(o) => match o.get("resolved") {
                            Some(Value::Bool(b)) => *b,
                            Some(other) => {
                                return Err(err(
                                    path,
                                    format_args!(
                                        "instance `{id}`: \"resolved\" must be true or false, found {other}"
                                    ),
                                ))
                            }
                            None => {
                                return Err(err(
                                    path,
                                    format_args!(
                                        "instance `{id}` has no \"resolved\" field\n  {HINT}"
                                    ),
                                ))
                            }
                        },
                        _ => unreachable!("checked above"),
                    };
                    if r {
                        labels.resolved.insert(id.clone());
                    }
                    labels.labeled.as_mut().expect("set").insert(id.clone());
                }
                let instances = labels.labeled.clone().unwrap_or_default();
                return Ok(single("per-instance map", labels, instances));
            }
            // {agent: [ids]}
            if map.values().all(Value::is_array) {
                let mut agents = Vec::new();
                for (name, list) in &map {
                    agents.push((
                        name.clone(),
                        AgentLabels {
                            resolved: id_list(path, name, list)?,
                            labeled: None,
                        },
                    ));
                }
                return Ok(LabelFile {
                    path: path.to_path_buf(),
                    format: "agent lists".into(),
                    agents,
                    agent_from_path: false,
                    instances: BTreeSet::new(),
                });
            }
            Err(err(
                path,
                format_args!("no resolved labels recognised in this JSON object\n  {HINT}"),
            ))
        }
        Value::Array(items) => {
            let mut rows = Rows::new(path);
            for (i, item) in items.iter().enumerate() {
                rows.add(item, &format!("record #{}", i + 1))?;
            }
            rows.finish()
        }
        _ => Err(err(
            path,
            format_args!("expected a JSON object or list\n  {HINT}"),
        )),
    }
}

/// Prediction-like rows with a `resolved` field.
struct Rows<'a> {
    path: &'a Path,
    /// (instance id, resolved, how the row's agent is named)
    rows: Vec<(String, bool, Named)>,
}

impl<'a> Rows<'a> {
    fn new(path: &'a Path) -> Self {
        Rows {
            path,
            rows: Vec::new(),
        }
    }

    fn add(&mut self, v: &Value, at: &str) -> anyhow::Result<()> {
        let obj = v.as_object().ok_or_else(|| {
            err(
                self.path,
                format_args!("{at}: expected a JSON object\n  {HINT}"),
            )
        })?;
        let id = obj
            .get("instance_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                err(
                    self.path,
                    format_args!("{at}: missing string field `instance_id`"),
                )
            })?;
        let resolved = match obj.get("resolved") {
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) || n.as_f64() == Some(1.0) => {
                n.as_f64() == Some(1.0)
            }
            Some(other) => {
                return Err(err(
                    self.path,
                    format_args!("{at}: \"resolved\" must be true or false, found {other}"),
                ))
            }
            None => {
                return Err(err(
                    self.path,
                    format_args!("{at}: no \"resolved\" field\n  {HINT}"),
                ))
            }
        };
        self.rows
            .push((id.to_string(), resolved, candidates::record_name(obj)));
        Ok(())
    }

    /// Name the rows' agents by the candidates' rule, then group them.
    fn finish(self) -> anyhow::Result<LabelFile> {
        if self.rows.is_empty() {
            return Err(err(self.path, format_args!("no label rows\n  {HINT}")));
        }
        let models: BTreeSet<&str> = self
            .rows
            .iter()
            .filter_map(|(_, _, n)| match n {
                Named::Model(m) => Some(m.as_str()),
                _ => None,
            })
            .collect();
        let mixed = models.len() > 1;
        let source = agent_from_path(self.path);
        let mut order: Vec<String> = Vec::new();
        let mut agents: BTreeMap<String, AgentLabels> = BTreeMap::new();
        let mut from_path = true;
        let mut instances = BTreeSet::new();
        for (id, resolved, named) in self.rows {
            let agent = match candidates::settle(named, mixed) {
                Named::Field(n) | Named::Model(n) => {
                    from_path = false;
                    n
                }
                Named::Source => source.clone(),
            };
            if !agents.contains_key(&agent) {
                order.push(agent.clone());
            }
            let labels = agents.entry(agent).or_insert_with(|| AgentLabels {
                resolved: BTreeSet::new(),
                labeled: Some(BTreeSet::new()),
            });
            if resolved {
                labels.resolved.insert(id.clone());
            }
            labels
                .labeled
                .as_mut()
                .expect("rows keep labeled")
                .insert(id.clone());
            instances.insert(id);
        }
        Ok(LabelFile {
            path: self.path.to_path_buf(),
            format: "rows".into(),
            agent_from_path: from_path && order.len() == 1,
            agents: order
                .iter()
                .map(|a| (a.clone(), agents.remove(a).expect("present")))
                .collect(),
            instances,
        })
    }
}

fn parse_rows_jsonl(path: &Path, text: &str) -> anyhow::Result<LabelFile> {
    let mut rows = Rows::new(path);
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
        rows.add(&v, &format!("line {}", i + 1))?;
    }
    rows.finish()
}

fn parse_matrix(path: &Path, text: &str, sep: char) -> anyhow::Result<LabelFile> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines
        .next()
        .ok_or_else(|| err(path, format_args!("empty CSV\n  {HINT}")))?;
    let cols: Vec<String> = header
        .split(sep)
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    if cols.len() < 2 {
        return Err(err(
            path,
            format_args!(
                "line 1: a matrix needs a header `instance_id{sep}agent1{sep}...`, found one column\n  {HINT}"
            ),
        ));
    }
    let mut agents: Vec<(String, AgentLabels)> = cols[1..]
        .iter()
        .map(|c| {
            (
                c.clone(),
                AgentLabels {
                    resolved: BTreeSet::new(),
                    labeled: Some(BTreeSet::new()),
                },
            )
        })
        .collect();
    let mut instances = BTreeSet::new();
    for (i, line) in lines {
        let cells: Vec<&str> = line
            .split(sep)
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        if cells.len() != cols.len() {
            return Err(err(
                path,
                format_args!(
                    "line {}: {} cells, but the header has {} columns",
                    i + 1,
                    cells.len(),
                    cols.len()
                ),
            ));
        }
        let id = cells[0].to_string();
        if id.is_empty() {
            return Err(err(path, format_args!("line {}: empty instance id", i + 1)));
        }
        for (j, cell) in cells[1..].iter().enumerate() {
            let value = match cell.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "1.0" => Some(true),
                "0" | "false" | "no" | "0.0" => Some(false),
                "" | "na" | "nan" | "-" => None,
                _ => {
                    return Err(err(
                        path,
                        format_args!(
                            "line {}, column `{}`: expected 0 or 1, found `{cell}`",
                            i + 1,
                            cols[j + 1]
                        ),
                    ))
                }
            };
            if let Some(r) = value {
                let labels = &mut agents[j].1;
                if r {
                    labels.resolved.insert(id.clone());
                }
                labels.labeled.as_mut().expect("set").insert(id.clone());
            }
        }
        instances.insert(id);
    }
    Ok(LabelFile {
        path: path.to_path_buf(),
        format: "matrix CSV".into(),
        agents,
        agent_from_path: false,
        instances,
    })
}

/// Instance ids from a `--tasks` file: SWE-bench task records (JSON list or JSONL with
/// `instance_id`), or a plain list of ids, one a line.
pub fn load_instance_ids(path: &Path) -> anyhow::Result<Vec<String>> {
    let bytes = std::fs::read(path).map_err(|e| {
        err(
            path,
            format_args!("cannot read tasks file: {e}\n  hint: --tasks takes SWE-bench task records (JSON/JSONL) or a list of instance ids"),
        )
    })?;
    let text = candidates::decode_text(&bytes).map_err(|m| err(path, m))?;
    let mut ids = Vec::new();
    let push = |ids: &mut Vec<String>, v: &Value, at: &str| -> anyhow::Result<()> {
        match v {
            Value::String(s) => ids.push(s.clone()),
            Value::Object(o) => match o.get("instance_id").and_then(Value::as_str) {
                Some(s) => ids.push(s.to_string()),
                None => {
                    return Err(err(
                        path,
                        format_args!("{at}: record without string field `instance_id`"),
                    ))
                }
            },
            _ => {
                return Err(err(
                    path,
                    format_args!("{at}: expected a task record or an id"),
                ))
            }
        }
        Ok(())
    };
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        match &v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    push(&mut ids, item, &format!("record #{}", i + 1))?;
                }
            }
            other => push(&mut ids, other, "document")?,
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            if t.starts_with('{') {
                let v: Value = serde_json::from_str(t)
                    .map_err(|e| err(path, format_args!("line {}: malformed JSON ({e})", i + 1)))?;
                push(&mut ids, &v, &format!("line {}", i + 1))?;
            } else {
                ids.push(t.to_string());
            }
        }
    }
    let mut seen = BTreeSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    if ids.is_empty() {
        return Err(err(path, "no instance ids found"));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_arg_splits_only_when_not_a_path() {
        assert_eq!(
            parse_label_arg("a=b/results.json"),
            (Some("a".into()), PathBuf::from("b/results.json"))
        );
        assert_eq!(parse_label_arg("x.json"), (None, PathBuf::from("x.json")));
    }

    #[test]
    fn generic_names_use_the_folder() {
        assert_eq!(
            agent_from_path(Path::new("runs/acr-1/results.json")),
            "acr-1"
        );
        assert_eq!(agent_from_path(Path::new("runs/coder.json")), "coder");
    }

    #[test]
    fn list_form_labels_every_instance() {
        let l = AgentLabels {
            resolved: ["a".to_string()].into(),
            labeled: None,
        };
        assert_eq!(l.get("a"), Some(true));
        assert_eq!(l.get("zzz"), Some(false));
        let m = AgentLabels {
            resolved: BTreeSet::new(),
            labeled: Some(["b".to_string()].into()),
        };
        assert_eq!(m.get("b"), Some(false));
        assert_eq!(m.get("c"), None);
    }
}
