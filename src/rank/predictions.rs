//! The committee's picks as a SWE-bench predictions file: one record
//! `{instance_id, model_name_or_path, model_patch}` per issue with a pick, the picked
//! candidate's patch exactly as its agent wrote it, so the SWE-bench harness or sb-cli
//! evaluates the committee like any other run.
//!
//! Records are made from rankings as `dei rank --json` writes them (and as a run's journal
//! keeps them), so one issue, a run of many and a merge of shards give the same record for
//! the same ranking.
//!
//! **Ties.** When several candidates share the top place, the record takes the one the
//! ranking lists first: at equal score (and tier) the ranking keeps the order the inputs give
//! the candidates, so the choice is the same on every run of the same inputs. The record then
//! names the others in `dei_tied_with`.
//!
//! **No record.** An issue gets none when nothing is picked: not every candidate could be
//! reviewed, or the top candidate has nothing to submit (every candidate is empty or fails to
//! apply). [`Predictions::missing`] says which issues and why.

use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The default `model_name_or_path` of the records.
pub const DEFAULT_NAME: &str = "dei";

/// The rule a tie is broken by, as reports state it.
pub const TIE_RULE: &str =
    "a tie at the top takes the candidate the ranking lists first (at equal scores, the order of the inputs)";

/// One SWE-bench prediction. The harness reads the first three fields; the `dei_` fields and
/// `resolved` are ignored by it and say what was picked.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Prediction {
    pub instance_id: String,
    pub model_name_or_path: String,
    pub model_patch: String,
    /// The agent whose candidate was picked.
    pub dei_agent: String,
    /// The committee's score of the pick (`None`: scored by no number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dei_score: Option<f64>,
    /// The other agents sharing the top place; the pick came first by [`TIE_RULE`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dei_tied_with: Vec<String>,
    /// The picked candidate's own label, when its input record carries one (a published run's
    /// `resolved`): `dei eval` reads it, the harness ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
}

/// The records of a set of rankings, and the issues that got none.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Predictions {
    pub records: Vec<Prediction>,
    /// `(instance_id, why)` for each issue with no record.
    pub missing: Vec<(String, String)>,
}

/// The record for one ranking (`dei rank --json`'s object), or why there is none.
pub fn from_ranking(ranking: &Value, name: &str) -> Result<Prediction, String> {
    let id = ranking
        .get("instance_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match ranking.get("status").and_then(Value::as_str) {
        Some("ranked") => {}
        Some("unreviewed") => return Err("not every candidate could be reviewed".into()),
        Some("dry_run") => return Err("a dry run reviews nothing".into()),
        _ => return Err("the ranking has no status".into()),
    }
    let ranked = ranking
        .get("ranked")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let top: Vec<&Value> = ranked
        .iter()
        .filter(|c| c.get("rank").and_then(Value::as_u64) == Some(1))
        .collect();
    let Some(first) = top.first() else {
        return Err("no candidate ranks first".into());
    };
    let str_of = |c: &Value, k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
    match str_of(first, "applies").as_deref() {
        Some("clean" | "fuzzy") => {}
        Some("empty") => return Err("every candidate is empty".into()),
        Some(_) => return Err("no candidate applies".into()),
        None => return Err("the ranking does not say whether its pick applies".into()),
    }
    let Some(patch) = str_of(first, "patch") else {
        return Err(
            "the ranking holds no patch text (written by an older dei): rank the issue again in a new run directory"
                .into(),
        );
    };
    Ok(Prediction {
        instance_id: id.to_string(),
        model_name_or_path: name.to_string(),
        model_patch: patch,
        dei_agent: str_of(first, "agent").unwrap_or_default(),
        dei_score: first.get("score").and_then(Value::as_f64),
        dei_tied_with: top[1..].iter().filter_map(|c| str_of(c, "agent")).collect(),
        resolved: first.get("resolved").and_then(Value::as_bool),
    })
}

/// The record for one finished issue's outcome (a journal line), or why there is none.
pub fn from_outcome(o: &crate::rank::run::IssueOutcome, name: &str) -> Result<Prediction, String> {
    match (&o.result, &o.error) {
        (_, Some(e)) if !o.is_ok() => Err(format!(
            "not ranked ({}): {}",
            o.error_kind.map_or("failed", |k| k.label()),
            e.lines().next().unwrap_or_default()
        )),
        (Some(r), _) => from_ranking(r, name),
        (None, _) => Err("the journal keeps no ranking for it".into()),
    }
}

impl Predictions {
    /// Add one issue: its ranking, or the error that kept it from being ranked.
    pub fn add(&mut self, instance_id: &str, ranking: Result<&Value, String>, name: &str) {
        self.push(instance_id, ranking.and_then(|r| from_ranking(r, name)));
    }

    fn push(&mut self, instance_id: &str, made: Result<Prediction, String>) {
        match made {
            Ok(p) => self.records.push(p),
            Err(why) => self.missing.push((instance_id.to_string(), why)),
        }
    }

    /// The records of each issue's last outcome, in id order.
    fn of_last(
        last: std::collections::BTreeMap<String, Result<Prediction, String>>,
    ) -> Predictions {
        let mut out = Predictions::default();
        for (id, made) in last {
            out.push(&id, made);
        }
        out
    }

    /// The records of finished issues of a run (each issue's last outcome), in id order.
    pub fn from_outcomes<'a>(
        outcomes: impl IntoIterator<Item = &'a crate::rank::run::IssueOutcome>,
        name: &str,
    ) -> Predictions {
        Self::of_last(
            outcomes
                .into_iter()
                .map(|o| (o.instance_id.clone(), from_outcome(o, name)))
                .collect(),
        )
    }

    /// The records of a run directory's journal: each issue's last outcome, for the issues
    /// `keep` accepts (the run's selection). Read line by line: only the records are kept.
    pub fn of_run(
        run_dir: &Path,
        keep: &dyn Fn(&str) -> bool,
        name: &str,
    ) -> anyhow::Result<Predictions> {
        let mut last = std::collections::BTreeMap::new();
        let path = run_dir.join(crate::rank::run::journal::JOURNAL);
        crate::rank::run::journal::visit_journal(&path, |o| {
            if keep(&o.instance_id) && !o.is_dry_run() {
                let made = from_outcome(&o, name);
                last.insert(o.instance_id, made);
            }
        })?;
        Ok(Self::of_last(last))
    }

    /// How many records share the top with another candidate.
    pub fn tied(&self) -> usize {
        self.records
            .iter()
            .filter(|r| !r.dei_tied_with.is_empty())
            .count()
    }

    /// Write the records: a JSON list when the file name ends in `.json` (as the harness reads
    /// a `.json` predictions file), else JSON Lines. The file is replaced whole (written beside
    /// it, then renamed), so a reader never sees half of it.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = if path.extension().is_some_and(|e| e == "json") {
            serde_json::to_string_pretty(&self.records)? + "\n"
        } else {
            let mut s = String::new();
            for r in &self.records {
                s.push_str(&serde_json::to_string(r)?);
                s.push('\n');
            }
            s
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "predictions".into());
        let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                anyhow::anyhow!("cannot write predictions {}: {e}", path.display())
            })
    }

    /// One line for the user: how many records, how many ties, and which issues got none.
    pub fn summary_line(&self, path: &Path) -> String {
        let mut s = format!(
            "predictions: {} record(s) written to {}",
            self.records.len(),
            path.display()
        );
        let tied = self.tied();
        if tied > 0 {
            s.push_str(&format!(
                "; {tied} pick(s) broke a tie at the top ({TIE_RULE}; the others are in dei_tied_with)"
            ));
        }
        let labelled: Vec<bool> = self.records.iter().filter_map(|r| r.resolved).collect();
        if !labelled.is_empty() {
            s.push_str(&format!(
                "; by the picks' own labels {} of {} labelled resolve",
                labelled.iter().filter(|r| **r).count(),
                labelled.len()
            ));
        }
        if !self.missing.is_empty() {
            let shown: Vec<String> = self
                .missing
                .iter()
                .take(10)
                .map(|(id, why)| format!("{id} ({why})"))
                .collect();
            s.push_str(&format!(
                "\n  no pick, so no record, for {} issue(s): {}{}",
                self.missing.len(),
                shown.join("; "),
                if self.missing.len() > 10 { "; …" } else { "" }
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cand(agent: &str, rank: u64, applies: &str, patch: &str) -> Value {
        json!({"agent": agent, "rank": rank, "score": 5.0, "applies": applies, "patch": patch})
    }

    #[test]
    fn the_first_listed_of_a_tie_is_the_record_and_the_others_are_named() {
        let r = json!({"instance_id": "x-1", "status": "ranked", "ranked": [
            cand("b", 1, "clean", "diff b"), cand("a", 1, "fuzzy", "diff a"), cand("c", 3, "clean", "diff c"),
        ]});
        let p = from_ranking(&r, "dei").unwrap();
        assert_eq!(p.dei_agent, "b");
        assert_eq!(p.model_patch, "diff b");
        assert_eq!(p.dei_tied_with, ["a"]);
        assert_eq!(p.model_name_or_path, "dei");
    }

    #[test]
    fn nothing_to_submit_or_an_unreviewed_issue_gets_no_record_and_says_why() {
        let unreviewed = json!({"instance_id": "x", "status": "unreviewed", "ranked": [cand("a", 1, "clean", "d")]});
        assert!(from_ranking(&unreviewed, "dei")
            .unwrap_err()
            .contains("reviewed"));
        let none =
            json!({"instance_id": "x", "status": "ranked", "ranked": [cand("a", 1, "no", "d")]});
        assert_eq!(
            from_ranking(&none, "dei").unwrap_err(),
            "no candidate applies"
        );
        let empty =
            json!({"instance_id": "x", "status": "ranked", "ranked": [cand("a", 1, "empty", "")]});
        assert_eq!(
            from_ranking(&empty, "dei").unwrap_err(),
            "every candidate is empty"
        );
        let old = json!({"instance_id": "x", "status": "ranked", "ranked": [{"agent": "a", "rank": 1, "applies": "clean"}]});
        assert!(from_ranking(&old, "dei")
            .unwrap_err()
            .contains("no patch text"));
    }

    #[test]
    fn a_json_name_gets_a_list_and_any_other_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut ps = Predictions::default();
        let r = json!({"instance_id": "x-1", "status": "ranked", "ranked": [cand("a", 1, "clean", "diff --git a/f b/f\n")]});
        ps.add("x-1", Ok(&r), "mine");
        ps.add("x-2", Err("not ranked".into()), "mine");
        assert_eq!(ps.missing, [("x-2".to_string(), "not ranked".to_string())]);
        let jsonl = dir.path().join("p.jsonl");
        ps.write(&jsonl).unwrap();
        let line: Value =
            serde_json::from_str(std::fs::read_to_string(&jsonl).unwrap().trim()).unwrap();
        assert_eq!(line["model_name_or_path"], "mine");
        assert_eq!(line["model_patch"], "diff --git a/f b/f\n");
        let list = dir.path().join("p.json");
        ps.write(&list).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&list).unwrap()).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 1);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temporary file is left behind");
    }
}
