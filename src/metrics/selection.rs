//! The committee's selection: a score per (instance, agent).
//!
//! Accepted, auto-detected:
//! - a `dei rank --all --run-dir` folder, or its `journal.jsonl`: each issue's last journal
//!   line wins (a rerun after an error replaces the error); issues recorded as errors have no
//!   ranking and are said in the notes;
//! - a run's `summary.json` (what `dei rank --all --json FILE` writes): it holds no rankings,
//!   so the `journal.jsonl` beside it is read; without one, only each issue's top pick is
//!   known ([`Selection::top_only`]: n@k for the whole committee and n = 1 only);
//! - `dei rank --json` output for one issue (`{"instance_id", "ranked": [{"agent", "score"}]}`),
//!   a JSON list of those, or several one after the other (one per line or pretty-printed);
//! - plain score rows `{instance_id, agent, score}` as JSON Lines or a JSON list;
//! - a CSV with columns `instance_id`, `agent`, `score` (any order, more columns ignored).
//!
//! A `null` score is an unscored candidate: it ranks below every scored one. An issue ranked
//! with every candidate unscored has no pick ([`Selection::no_pick`]).
//!
//! When the same (instance, agent) appears twice outside a journal, the later score wins and
//! is counted.

use crate::model::Behaviour;
use crate::rank::health::{pick_basis_by_rank, pick_basis_of_json, Basis};
use crate::rank::run::journal::JOURNAL;
use serde::Deserialize as _;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub path: PathBuf,
    /// (instance_id, agent) → score, agent names as the file writes them. Unscored
    /// candidates (`"score": null`) are not here.
    pub scores: HashMap<(String, String), f64>,
    /// How many (instance, agent) pairs were given more than once.
    pub duplicates: usize,
    /// Issues ranked with every candidate unscored: the committee picked nothing, so n@k
    /// counts them unresolved.
    pub no_pick: BTreeSet<String>,
    /// Only each issue's top pick is known (a run summary without its journal).
    pub top_only: bool,
    /// What was read and what was left out, for the report's notes.
    pub notes: Vec<String>,
    /// What each issue's pick rests on (`rank::health::Basis`), read from rankings that carry
    /// execution evidence (`--exec`): computed from each candidate's behaviour and rank, so a
    /// journal written before the field existed gives it too.
    pub basis: BTreeMap<String, Basis>,
    /// Issues with a ranking, scored or not.
    ranked: BTreeSet<String>,
}

impl Selection {
    /// Instances that carry at least one score.
    pub fn instances(&self) -> BTreeSet<&str> {
        self.scores.keys().map(|(i, _)| i.as_str()).collect()
    }

    /// Instances the committee ranked: those with a score and those with no pick.
    pub fn ranked_instances(&self) -> BTreeSet<&str> {
        let mut all = self.instances();
        all.extend(self.no_pick.iter().map(String::as_str));
        all
    }
}

const HINT: &str = "hint: a selection is a `dei rank --all --run-dir` folder (or its journal.jsonl), `dei rank --json` output (one result, a list, or one per line), rows {instance_id, agent, score} as JSONL, or a CSV with columns instance_id,agent,score";

fn err(path: &Path, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{}: {what}", path.display())
}

/// Read a selection: a run directory or a file.
pub fn load(path: &Path) -> anyhow::Result<Selection> {
    let mut sel = Selection {
        path: path.to_path_buf(),
        ..Selection::default()
    };
    if path.is_dir() {
        let journal = path.join(JOURNAL);
        if !journal.is_file() {
            return Err(err(
                path,
                format_args!("a folder without {JOURNAL}, so not a `dei rank --all --run-dir` folder\n  {HINT}"),
            ));
        }
        read_journal(&journal, &mut sel)?;
    } else if is_journal(path) {
        read_journal(path, &mut sel)?;
    } else {
        let bytes = std::fs::read(path).map_err(|e| {
            err(
                path,
                format_args!("cannot read selection file: {e}\n  {HINT}"),
            )
        })?;
        let text = crate::candidates::decode_text(&bytes).map_err(|m| err(path, m))?;
        parse(path, text, &mut sel)?;
    }
    let scored: BTreeSet<String> = sel.instances().into_iter().map(String::from).collect();
    sel.no_pick = sel.ranked.difference(&scored).cloned().collect();
    if sel.scores.is_empty() && sel.no_pick.is_empty() {
        let why = if sel.notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", sel.notes.join("; "))
        };
        return Err(err(path, format_args!("no scores found{why}\n  {HINT}")));
    }
    Ok(sel)
}

fn parse(path: &Path, text: &str, sel: &mut Selection) -> anyhow::Result<()> {
    let ext = crate::candidates::extension(path);
    if ext == "csv" {
        return parse_csv(path, text, sel);
    }
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if is_summary(&v) {
            return read_summary(path, &v, sel);
        }
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    add_value(path, item, &format!("record #{}", i + 1), sel)?;
                }
            }
            other => add_value(path, &other, "document", sel)?,
        }
        return Ok(());
    }
    // JSON Lines, or documents one after the other.
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let (mut counted, mut line) = (0usize, 1usize);
    loop {
        // The line each value starts on, counted as the stream moves on.
        let start = stream.byte_offset();
        let begin = start
            + text[start..]
                .find(|c: char| !c.is_ascii_whitespace())
                .unwrap_or(0);
        line += text[counted..begin].matches('\n').count();
        counted = begin;
        match stream.next() {
            None => break,
            Some(Ok(v)) => add_value(path, &v, &format!("line {line}"), sel)?,
            Some(Err(e)) => {
                return Err(err(
                    path,
                    format_args!("line {}: malformed JSON ({e})\n  {HINT}", e.line()),
                ))
            }
        }
    }
    Ok(())
}

/// `dei rank --all`'s summary (`--json FILE`, or `summary.json` in the run directory).
fn is_summary(v: &Value) -> bool {
    v.get("rows").is_some_and(Value::is_array) && v.get("selected").is_some()
}

/// A run journal: named so, or its first line is an issue outcome (`result`/`error_kind`).
fn is_journal(path: &Path) -> bool {
    if path.file_name().and_then(|n| n.to_str()) == Some(JOURNAL) {
        return true;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let first = std::io::BufRead::lines(std::io::BufReader::new(file))
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    serde_json::from_str::<Value>(&first).is_ok_and(|v| {
        v.get("ranked").is_none()
            && v.get("instance_id").is_some()
            && (v.get("result").is_some() || v.get("error_kind").is_some())
    })
}

/// The parts of a journal line (an issue outcome of `dei rank --all`) a selection needs;
/// the rest (reviews, contexts) is skipped while parsing, so memory stays small.
#[derive(serde::Deserialize)]
struct JournalLine {
    instance_id: String,
    #[serde(default)]
    error_kind: Option<String>,
    #[serde(default)]
    result: Option<JournalResult>,
}

#[derive(serde::Deserialize)]
struct JournalResult {
    #[serde(default)]
    ranked: Vec<JournalRanked>,
}

#[derive(serde::Deserialize)]
struct JournalRanked {
    agent: String,
    /// `None` (null or absent): unscored.
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    rank: Option<u64>,
    /// Read for the pick's basis only: one that does not read is none, never a lost line.
    #[serde(default, deserialize_with = "lenient_behaviour")]
    behaviour: Option<Behaviour>,
}

fn lenient_behaviour<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Behaviour>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(Behaviour::deserialize(v).ok())
}

/// A `dei rank` result is read in its order: when every entry has a rank (`by_rank`), a
/// scored entry's score is `-rank` (ties share a rank), so the pick is what ranked first. That
/// is the scores' own order wherever they decide it, and stays the printed pick where a run's
/// record ranks the healthy candidates first (`rank::run::record`). Unscored entries stay
/// unscored.
fn in_rank_order(by_rank: bool, score: Option<f64>, rank: Option<u64>) -> Option<f64> {
    match (score, rank) {
        (Some(_), Some(k)) if by_rank => Some(-(k as f64)),
        (s, _) => s,
    }
}

/// Each issue's last journal line: its ranking when ranked, else why there is none.
fn read_journal(path: &Path, sel: &mut Selection) -> anyhow::Result<()> {
    use std::io::BufRead as _;
    let file = std::fs::File::open(path)
        .map_err(|e| err(path, format_args!("cannot read journal: {e}")))?;
    let mut reader = std::io::BufReader::new(file);
    type Ranking = (Vec<(String, Option<f64>)>, Option<Basis>);
    let mut last: BTreeMap<String, Result<Ranking, String>> = BTreeMap::new();
    let (mut buf, mut line_no) = (Vec::new(), 0usize);
    let mut bad: Vec<String> = Vec::new();
    let mut torn = 0usize;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(path, format_args!("cannot read journal: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if crate::candidates::is_blank(&buf) {
            continue;
        }
        match serde_json::from_slice::<JournalLine>(&buf) {
            Ok(l) => {
                let entry = match (l.error_kind, l.result) {
                    (None, Some(r)) => {
                        let by_rank = r.ranked.iter().all(|x| x.rank.is_some());
                        let basis = pick_basis_by_rank(
                            &r.ranked
                                .iter()
                                .map(|x| (x.agent.as_str(), x.behaviour.as_ref(), x.rank))
                                .collect::<Vec<_>>(),
                        );
                        let scores = r
                            .ranked
                            .into_iter()
                            .map(|x| (x.agent, in_rank_order(by_rank, x.score, x.rank)))
                            .collect();
                        Ok((scores, basis))
                    }
                    // Ranked but not reviewed (`unreviewed`): asked, and nothing was picked.
                    (Some(_), Some(_)) => Ok((vec![], None)),
                    (kind, None) => Err(kind.unwrap_or_else(|| "ranking not kept".into())),
                };
                last.insert(l.instance_id, entry);
            }
            // A last line without its newline is what an interrupted run leaves.
            Err(_) if buf.last() != Some(&b'\n') => torn = n,
            Err(e) => bad.push(format!("line {line_no}: {e}")),
        }
    }
    let mut without: BTreeMap<String, usize> = BTreeMap::new();
    let mut ranked = 0usize;
    for (id, entry) in last {
        match entry {
            Ok((scores, basis)) => {
                ranked += 1;
                sel.ranked.insert(id.clone());
                if let Some(b) = basis {
                    sel.basis.insert(id.clone(), b);
                }
                for (agent, score) in scores {
                    if let Some(score) = score.filter(|s| s.is_finite()) {
                        insert(sel, &id, &agent, score);
                    }
                }
            }
            Err(why) => *without.entry(why).or_default() += 1,
        }
    }
    let mut note = format!(
        "{}: {ranked} issue(s) ranked (the last line of each issue counts)",
        path.display()
    );
    if !without.is_empty() {
        let n: usize = without.values().sum();
        let kinds: Vec<String> = without.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        note.push_str(&format!(
            "; {n} issue(s) had no ranking ({}) and have no committee score",
            kinds.join(", ")
        ));
    }
    sel.notes.push(note);
    if torn > 0 {
        sel.notes.push(format!(
            "{}: a torn last line ({torn} bytes, left by an interrupted run) was left out",
            path.display()
        ));
    }
    if let Some(first) = bad.first() {
        sel.notes.push(format!(
            "{}: {} unreadable line(s) left out (first: {first})",
            path.display(),
            bad.len()
        ));
    }
    Ok(())
}

/// A run summary: the journal beside it when there is one, else each issue's top pick.
fn read_summary(path: &Path, v: &Value, sel: &mut Selection) -> anyhow::Result<()> {
    let beside = path
        .parent()
        .map(|p| p.join(JOURNAL))
        .filter(|j| j.is_file());
    if let Some(journal) = beside {
        sel.notes.push(format!(
            "{} is a run summary, which holds no rankings: read them from {}",
            path.display(),
            journal.display()
        ));
        return read_journal(&journal, sel);
    }
    sel.top_only = true;
    let rows = v["rows"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut without = 0usize;
    for (i, row) in rows.iter().enumerate() {
        let id = row
            .get("instance_id")
            .and_then(Value::as_str)
            .ok_or_else(|| err(path, format_args!("rows[{i}] has no instance_id")))?;
        if row.get("status").and_then(Value::as_str) != Some("ok") {
            without += 1;
            continue;
        }
        sel.ranked.insert(id.to_string());
        let Some(score) = number(row.get("top_score")) else {
            continue;
        };
        for agent in row
            .get("top")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let agent = agent
                .as_str()
                .ok_or_else(|| err(path, format_args!("rows[{i}].top holds a non-string")))?;
            insert(sel, id, agent, score);
        }
    }
    sel.notes.push(format!(
        "{} is a run summary without its journal: only each issue's top pick is known, so n@k is reported for the whole committee and n = 1 only (pass the run directory for full rankings){}",
        path.display(),
        if without > 0 {
            format!("; {without} issue(s) had no ranking and have no committee score")
        } else {
            String::new()
        }
    ));
    Ok(())
}

fn insert(sel: &mut Selection, instance: &str, agent: &str, score: f64) {
    sel.ranked.insert(instance.to_string());
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

/// A score field: `Ok(Some)` for a number, `Ok(None)` for `null` (unscored), `Err` otherwise.
fn score_of(v: Option<&Value>) -> Result<Option<f64>, ()> {
    match v {
        Some(Value::Null) => Ok(None),
        other => number(other).map(Some).ok_or(()),
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
        // A ranking that is not a pick (`unreviewed`, `dry_run`): the issue has no pick.
        if let Some(status) = obj.get("status").and_then(Value::as_str) {
            if status != "ranked" {
                if let Some(id) = instance {
                    sel.ranked.insert(id.to_string());
                }
                return Ok(());
            }
        }
        let by_rank = ranked
            .iter()
            .all(|r| r.get("rank").and_then(Value::as_u64).is_some());
        if let Some(id) = instance {
            // A later ranking of the issue replaces an earlier one, its basis too.
            match pick_basis_of_json(ranked) {
                Some(b) => sel.basis.insert(id.to_string(), b),
                None => sel.basis.remove(id),
            };
        }
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
            let score = score_of(r.get("score")).map_err(|()| {
                err(
                    path,
                    format_args!(
                        "{at}: ranked[{j}] ({agent}) has no numeric `score` (null for unscored)"
                    ),
                )
            })?;
            sel.ranked.insert(inst.to_string());
            let rank = r.get("rank").and_then(Value::as_u64);
            if let Some(score) = in_rank_order(by_rank, score, rank) {
                insert(sel, inst, agent, score);
            }
        }
        if ranked.is_empty() {
            if let Some(id) = instance {
                sel.ranked.insert(id.to_string());
            }
        }
        return Ok(());
    }
    // An issue outcome (a journal line inside a list): its ranking, if it has one.
    if obj.contains_key("result") || obj.contains_key("error_kind") {
        let failed = obj.get("error_kind").is_some_and(|k| !k.is_null());
        return match obj.get("result") {
            Some(result) if !result.is_null() && !failed => add_value(path, result, at, sel),
            // Ranked but not reviewed: asked, and nothing was picked.
            Some(result) if !result.is_null() => {
                if let Some(id) = instance {
                    sel.ranked.insert(id.to_string());
                }
                Ok(())
            }
            _ => Ok(()),
        };
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
    let score = score_of(obj.get("score")).map_err(|()| {
        err(
            path,
            format_args!("{at}: missing numeric field `score` (null for unscored)"),
        )
    })?;
    sel.ranked.insert(instance.to_string());
    if let Some(score) = score {
        insert(sel, instance, agent, score);
    }
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
