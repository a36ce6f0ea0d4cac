//! `dei generate`: run the strategies over one or many issues and append their candidates,
//! in SWE-bench prediction format, to a JSONL file that `dei rank` reads like any agent's.
//! Re-running the same command skips (issue, strategy) pairs already in the file.

use super::llm::Model;
use super::{
    predictions, run_strategy, validate, ChainOfContext, Hierarchical, Repo, SearchReplace,
    Strategy,
};
use crate::repo::{self, Snapshot};
use crate::task;
use anyhow::{bail, Context as _};
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

/// The strategies by command-line name.
pub const STRATEGIES: [&str; 3] = ["hierarchical", "search-replace", "chain-of-context"];

#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub tasks: PathBuf,
    /// Issue ids; empty with `all` for every task.
    pub issues: Vec<String>,
    pub all: bool,
    pub repo: Option<PathBuf>,
    pub repos: Option<PathBuf>,
    pub strategies: Vec<String>,
    /// Sampling temperatures of the hierarchical strategy (k = their number).
    pub temperatures: Vec<f64>,
    pub max_files: usize,
    pub test_cmd: Option<String>,
    pub test_timeout: Duration,
    pub out: PathBuf,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct GenerateReport {
    pub written: usize,
    /// (issue, strategy) pairs already in the output file.
    pub skipped: usize,
    pub notes: Vec<String>,
}

fn strategy(name: &str, req: &GenerateRequest) -> anyhow::Result<Box<dyn Strategy>> {
    Ok(match name {
        "hierarchical" => Box::new(Hierarchical {
            max_files: req.max_files,
            temperatures: req.temperatures.clone(),
            ..Hierarchical::default()
        }),
        "search-replace" => Box::new(SearchReplace::default()),
        "chain-of-context" => Box::new(ChainOfContext::default()),
        other => bail!(
            "unknown strategy `{other}`\n  hint: choose from {}",
            STRATEGIES.join(", ")
        ),
    })
}

/// `(instance_id, agent)` pairs already written.
fn done_pairs(out: &std::path::Path) -> anyhow::Result<BTreeSet<(String, String)>> {
    let mut done = BTreeSet::new();
    let Ok(text) = std::fs::read_to_string(out) else {
        return Ok(done);
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: super::Prediction = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a prediction record; move the file away or fix the line",
                out.display(),
                i + 1
            )
        })?;
        done.insert((p.instance_id, p.model_name_or_path));
    }
    Ok(done)
}

/// Run the request with `model`.
pub fn run(req: &GenerateRequest, model: &dyn Model) -> anyhow::Result<GenerateReport> {
    if req.strategies.is_empty() {
        bail!(
            "no strategy chosen\n  hint: --strategies {}",
            STRATEGIES.join(",")
        );
    }
    let strategies: Vec<Box<dyn Strategy>> = req
        .strategies
        .iter()
        .map(|s| strategy(s, req))
        .collect::<anyhow::Result<_>>()?;
    let tasks = task::load_tasks(&req.tasks)?;
    let chosen: Vec<_> = if req.all {
        tasks.clone()
    } else {
        if req.issues.is_empty() {
            bail!("say which issues to generate for: --issue ID (repeatable) or --all");
        }
        req.issues
            .iter()
            .map(|id| task::find_task(&tasks, id, &req.tasks))
            .collect::<anyhow::Result<_>>()?
    };
    let done = done_pairs(&req.out)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&req.out)
        .with_context(|| format!("cannot open {} for appending", req.out.display()))?;
    let mut report = GenerateReport::default();
    for t in &chosen {
        let repo_path = match repo::locate(req.repo.as_deref(), req.repos.as_deref(), &t.repo) {
            Ok(p) => p,
            Err(e) => {
                report.notes.push(format!(
                    "{}: {}",
                    t.instance_id,
                    e.to_string().lines().next().unwrap_or("")
                ));
                continue;
            }
        };
        let snap = Snapshot::open(&repo_path, &t.base_commit)?;
        let repo = Repo::new(&snap)?;
        let validator = req
            .test_cmd
            .as_deref()
            .map(|cmd| validate::Validator::new(&repo_path, &snap.commit, cmd, req.test_timeout));
        for s in &strategies {
            let agent = format!("dei-gen-{}", s.name());
            if done
                .iter()
                .any(|(i, a)| i == &t.instance_id && a.starts_with(&agent))
            {
                report.skipped += 1;
                continue;
            }
            let outcome = run_strategy(s.as_ref(), t, &repo, model, validator.as_ref());
            report.notes.extend(
                outcome
                    .notes
                    .iter()
                    .map(|n| format!("{}: {n}", t.instance_id)),
            );
            let preds = predictions(t, std::slice::from_ref(&outcome));
            // One strategy's candidates at a time, flushed, so an interrupted run keeps them.
            file.write_all(super::to_jsonl(&preds).as_bytes())?;
            file.flush()?;
            report.written += preds.len();
        }
    }
    Ok(report)
}
