//! `dei generate`: run the strategies over many issues with a real model and append their
//! candidates to a SWE-bench prediction file, resuming where an earlier run stopped.
//!
//! [`generate`] resolves the LLM flags into the committee's [`Engine`] (cache, limits,
//! retries, cost cap) and calls [`generate_with`], which takes any model factory (tests pass
//! a scripted one). Issues run in parallel (one thread each, `jobs` at a time); within an
//! issue the strategies run one after another on one repository index. Every finished issue
//! is appended to the output file at once, so a killed run loses at most the issues in flight,
//! and (instance, agent) pairs already in the file are never written again.

use super::validate::Validator;
use super::{
    predictions, run_strategy, to_jsonl, ChainOfContext, Generated, Hierarchical, Prediction,
    SearchReplace, Strategy, Workspace,
};
use crate::llm::config::LlmOptions;
use crate::llm::model::{EngineModel, Model};
use crate::llm::prompts::Prompts;
use crate::model::repo::{find_repo, Snapshot};
use crate::model::task::Selection;
use crate::model::task::{find_task, load_tasks};
use crate::model::{Task, Usage};
use anyhow::{bail, Context as _};
use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The three strategies by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Hierarchical,
    SearchReplace,
    Chain,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Hierarchical, Kind::SearchReplace, Kind::Chain];

    /// `hierarchical`, `search-replace` (or `sr`), `chain` (or `chain-of-context`).
    pub fn parse(s: &str) -> anyhow::Result<Kind> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "hierarchical" | "hier" => Kind::Hierarchical,
            "search-replace" | "searchreplace" | "sr" => Kind::SearchReplace,
            "chain" | "chain-of-context" | "coc" => Kind::Chain,
            other => bail!(
                "unknown strategy `{other}`: use hierarchical, search-replace or chain (comma-separated)"
            ),
        })
    }

    /// The strategy's name, as in its agent `dei-gen-<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Hierarchical => "hierarchical",
            Kind::SearchReplace => "search-replace",
            Kind::Chain => "chain-of-context",
        }
    }

    pub fn agent(self) -> String {
        format!("dei-gen-{}", self.name())
    }

    /// Does `agent` belong to this strategy (`dei-gen-<name>` or a later sample `-kN`)?
    pub fn owns(self, agent: &str) -> bool {
        let base = self.agent();
        agent == base
            || agent
                .strip_prefix(&base)
                .and_then(|r| r.strip_prefix("-k"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

/// Parse `--strategies` values (each may itself be comma-separated); empty means all three.
pub fn parse_kinds(names: &[String]) -> anyhow::Result<Vec<Kind>> {
    let mut out = Vec::new();
    for n in names.iter().flat_map(|n| n.split(',')) {
        if n.trim().is_empty() {
            continue;
        }
        let k = Kind::parse(n)?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    if out.is_empty() {
        out = Kind::ALL.to_vec();
    }
    Ok(out)
}

/// Several independent samples of a one-sample strategy (each at its own temperature); later
/// samples are agents `-k2`, `-k3`, ...; a sample repeating an earlier patch is dropped.
pub struct Sampled {
    pub samples: Vec<Box<dyn Strategy>>,
}

impl Strategy for Sampled {
    fn name(&self) -> &'static str {
        self.samples.first().map_or("sampled", |s| s.name())
    }

    fn generate(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        feedback: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let mut out: Vec<Generated> = Vec::new();
        let mut errors = Vec::new();
        for (i, s) in self.samples.iter().enumerate() {
            match s.generate(task, repo, model, feedback) {
                Ok(gens) => {
                    for mut g in gens {
                        if i > 0 {
                            g.agent = format!("{}-k{}", g.agent, i + 1);
                        }
                        if !out.iter().any(|o| o.patch == g.patch) {
                            out.push(g);
                        }
                    }
                }
                Err(e) if self.samples.len() == 1 => return Err(e),
                Err(e) => errors.push(format!("sample {}: {e:#}", i + 1)),
            }
        }
        if out.is_empty() && !errors.is_empty() {
            bail!("{}", errors.join("; "));
        }
        Ok(out)
    }
}

/// The temperature of each of `samples` samples: `temperatures` in turn (0: one per temperature).
pub fn sample_temperatures(samples: usize, temperatures: &[f64]) -> anyhow::Result<Vec<f64>> {
    if temperatures.is_empty() {
        bail!("--temperatures needs at least one value, e.g. 0,0.4,0.8");
    }
    for &t in temperatures {
        if !(t.is_finite() && (0.0..=2.0).contains(&t)) {
            bail!("--temperatures: {t} is outside 0–2");
        }
    }
    let k = if samples == 0 {
        temperatures.len()
    } else {
        samples
    };
    Ok((0..k)
        .map(|i| temperatures[i % temperatures.len()])
        .collect())
}

/// What `dei generate` was asked to do.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub tasks: PathBuf,
    pub selection: Selection,
    pub repo: Option<PathBuf>,
    pub repos: Option<PathBuf>,
    pub strategies: Vec<Kind>,
    /// Samples per strategy and issue (0: one per temperature).
    pub samples: usize,
    pub temperatures: Vec<f64>,
    /// At most this many files for the hierarchical strategy (L).
    pub max_files: usize,
    pub test_cmd: Option<String>,
    pub test_timeout: Duration,
    /// SWE-bench prediction JSONL, appended to.
    pub out: PathBuf,
    /// Issues in flight at once.
    pub jobs: usize,
    /// Print prompts only; write nothing.
    pub dry_run: bool,
    /// Folder of templates replacing the built-in `prompts/generate_*.j2` (`--prompt-dir`).
    pub prompt_dir: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct GenerateReport {
    /// Issues worked on now.
    pub issues: usize,
    /// (issue, strategy) pairs skipped because the output file already has them.
    pub already_done: usize,
    /// Predictions appended to the output file.
    pub written: usize,
    /// Per-issue notes: failures, dropped candidates, retries (`issue: note`).
    pub notes: Vec<String>,
    /// Issues that could not be worked on at all (no repository, bad commit): (issue, why).
    pub failed: Vec<(String, String)>,
    /// Calls, cache hits, tokens and cost (with the real client).
    pub usage: Option<Usage>,
    /// A torn last line cut from the output file (bytes), left by a killed run.
    pub torn_bytes: usize,
}

/// The message when no model is configured.
pub const NO_MODEL: &str = "dei generate needs a language model to write patches, and none is configured.\n  hint: pass --llm PROVIDER:MODEL (or set DEI_LLM), e.g.\n    --llm openai:gpt-4o-mini                      (key in OPENAI_API_KEY)\n    --llm anthropic:claude-sonnet-4-5             (key in ANTHROPIC_API_KEY)\n    --llm vllm:MODEL | ollama:MODEL | llamacpp:MODEL   (a local OpenAI-compatible server; --base-url to change its address)\n    --llm openai-compatible:MODEL --base-url URL\n  add --dry-run to print the prompts without calling the model";

/// `dei generate` with the LLM flags: resolve the model, then [`generate_with`].
pub fn generate(req: &GenerateRequest, llm: &LlmOptions) -> anyhow::Result<GenerateReport> {
    if llm.temperature.is_some() {
        bail!("dei generate samples at --temperatures (e.g. --temperatures 0,0.4,0.8); --temperature is for dei rank");
    }
    let mut args = llm.clone();
    args.samples = 1;
    let engine = args
        .engine()
        .map_err(|e| {
            if llm.llm.as_deref().is_none_or(|s| s.trim().is_empty()) {
                anyhow::anyhow!("{NO_MODEL}")
            } else {
                e
            }
        })?
        .ok_or_else(|| anyhow::anyhow!("{NO_MODEL}"))?;
    let mut req = req.clone();
    req.dry_run = engine.settings.dry_run;
    if req.jobs == 0 {
        req.jobs = engine.settings.concurrency.clamp(1, 8);
    }
    let factory =
        |label: &str| -> Box<dyn Model> { Box::new(EngineModel::new(Arc::clone(&engine), label)) };
    // A dry run's prompts are printed together at the end, numbered across the run, with one
    // count of what it would send.
    if req.dry_run {
        engine.open_plan();
    }
    let result = generate_with(&req, &factory);
    engine.close_plan();
    let mut report = result?;
    report.usage = Some(engine.totals());
    Ok(report)
}

/// One line for people: what the calls cost.
pub fn usage_line(u: &Usage) -> String {
    format!(
        "llm: {} calls sent, {} answered from cache, {} input + {} output tokens, ${:.4}",
        u.calls, u.cached, u.input_tokens, u.output_tokens, u.cost_usd
    )
}

/// Read the (instance, agent) pairs already in a prediction file; cut a torn last line.
/// Returns the pairs and the bytes cut.
pub fn existing_pairs(
    path: &Path,
    cut_torn: bool,
) -> anyhow::Result<(HashSet<(String, String)>, usize)> {
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8(b)
            .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((HashSet::new(), 0)),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    };
    if text.trim_start().starts_with('[') {
        bail!(
            "{} holds a JSON array; dei generate appends JSON Lines: choose a new --out FILE.jsonl",
            path.display()
        );
    }
    let mut pairs = HashSet::new();
    let mut torn = 0;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Prediction>(line) {
            Ok(p) => {
                pairs.insert((p.instance_id, p.model_name_or_path));
            }
            // A killed run can leave half a line at the end.
            Err(_) if i + 1 == lines.len() && !line.ends_with('\n') => torn = line.len(),
            Err(e) => bail!(
                "{}:{}: not a prediction record ({e}); fix or remove that line, or choose a new --out",
                path.display(),
                i + 1
            ),
        }
    }
    if torn > 0 && cut_torn {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {} to cut its torn last line", path.display()))?;
        f.set_len((text.len() - torn) as u64)
            .with_context(|| format!("cannot cut the torn last line of {}", path.display()))?;
    }
    Ok((pairs, torn))
}

struct Shared<'a> {
    req: &'a GenerateRequest,
    prompts: Arc<Prompts>,
    done: HashSet<(String, String)>,
    out: Option<Mutex<std::fs::File>>,
    report: Mutex<GenerateReport>,
}

/// Run the request with models from `model_for(label)` (label: `issue/strategy`).
pub fn generate_with(
    req: &GenerateRequest,
    model_for: &(dyn Fn(&str) -> Box<dyn Model> + Sync),
) -> anyhow::Result<GenerateReport> {
    if req.strategies.is_empty() {
        bail!("no strategy chosen: --strategies hierarchical,search-replace,chain");
    }
    if req.max_files == 0 {
        bail!("--max-files must be at least 1");
    }
    sample_temperatures(req.samples, &req.temperatures)?;
    let prompts = super::prompts(req.prompt_dir.as_deref())?;
    let all = load_tasks(&req.tasks)?;
    let tasks: Vec<Task> = match &req.selection {
        Selection::All => all,
        Selection::Ids(ids) if ids.is_empty() => {
            bail!("say which issues to generate for: --issue ID (repeatable) or --all")
        }
        Selection::Ids(ids) => {
            let mut seen = HashSet::new();
            ids.iter()
                .filter(|id| seen.insert(id.as_str()))
                .map(|id| find_task(&all, id, &req.tasks))
                .collect::<anyhow::Result<_>>()?
        }
    };
    let (done, torn) = existing_pairs(&req.out, !req.dry_run)?;
    if torn > 0 {
        crate::model::notify::notice(&format!(
            "note: {} a torn last line ({torn} bytes) left by an interrupted run in {}",
            if req.dry_run { "would cut" } else { "cut" },
            req.out.display()
        ));
    }
    let out = if req.dry_run {
        None
    } else {
        if let Some(parent) = req.out.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create folder {}", parent.display()))?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&req.out)
            .with_context(|| format!("cannot open {} for appending", req.out.display()))?;
        Some(Mutex::new(f))
    };
    let shared = Shared {
        req,
        prompts,
        done,
        out,
        report: Mutex::new(GenerateReport {
            torn_bytes: torn,
            ..Default::default()
        }),
    };
    let next = AtomicUsize::new(0);
    let workers = req.jobs.clamp(1, tasks.len().max(1));
    let fatal: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                if fatal.lock().expect("fatal lock").is_some() {
                    return;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(task) = tasks.get(i) else { return };
                if let Err(e) = one_issue(task, &shared, model_for) {
                    // Only writing the output file is fatal; the rest is per issue.
                    fatal.lock().expect("fatal lock").get_or_insert(e);
                    return;
                }
            });
        }
    });
    if let Some(e) = fatal.into_inner().expect("fatal lock") {
        return Err(e);
    }
    Ok(shared.report.into_inner().expect("report lock"))
}

fn strategy_of(
    kind: Kind,
    req: &GenerateRequest,
    prompts: &Arc<Prompts>,
    temps: &[f64],
) -> Box<dyn Strategy> {
    match kind {
        Kind::Hierarchical => Box::new(Hierarchical {
            max_files: req.max_files,
            temperatures: temps.to_vec(),
            shortlist: Hierarchical::default().shortlist,
            prompts: Arc::clone(prompts),
        }),
        Kind::SearchReplace => Box::new(Sampled {
            samples: temps
                .iter()
                .map(|&t| {
                    Box::new(SearchReplace {
                        temperature: t,
                        prompts: Arc::clone(prompts),
                        ..SearchReplace::default()
                    }) as Box<dyn Strategy>
                })
                .collect(),
        }),
        Kind::Chain => Box::new(Sampled {
            samples: temps
                .iter()
                .map(|&t| {
                    Box::new(ChainOfContext {
                        temperature: t,
                        prompts: Arc::clone(prompts),
                        ..ChainOfContext::default()
                    }) as Box<dyn Strategy>
                })
                .collect(),
        }),
    }
}

/// Generate for one issue; `Err` only when the output file cannot be written.
fn one_issue(
    task: &Task,
    sh: &Shared,
    model_for: &(dyn Fn(&str) -> Box<dyn Model> + Sync),
) -> anyhow::Result<()> {
    let req = sh.req;
    let id = &task.instance_id;
    let todo: Vec<Kind> = req
        .strategies
        .iter()
        .copied()
        .filter(|k| !sh.done.iter().any(|(i, a)| i == id && k.owns(a)))
        .collect();
    let skipped = req.strategies.len() - todo.len();
    {
        let mut r = sh.report.lock().expect("report lock");
        r.already_done += skipped;
        if !todo.is_empty() {
            r.issues += 1;
        }
    }
    if todo.is_empty() {
        return Ok(());
    }
    let fail = |why: String| {
        crate::model::notify::notice(&format!("{id}: skipped: {why}"));
        sh.report
            .lock()
            .expect("report lock")
            .failed
            .push((id.clone(), why));
    };
    let repo_path = match find_repo(req.repo.as_deref(), req.repos.as_deref(), &task.repo) {
        Ok(p) => p,
        Err(e) => {
            fail(format!("{e:#}"));
            return Ok(());
        }
    };
    let snap = match Snapshot::open(&repo_path, &task.base_commit) {
        Ok(s) => s,
        Err(e) => {
            fail(format!("{e:#}"));
            return Ok(());
        }
    };
    let repo = match Workspace::new(&snap) {
        Ok(r) => r,
        Err(e) => {
            fail(format!("{e:#}"));
            return Ok(());
        }
    };
    let validator = req
        .test_cmd
        .as_deref()
        .map(|cmd| Validator::new(&repo_path, &task.base_commit, cmd, req.test_timeout));
    if let Some(v) = &validator {
        if !req.dry_run {
            match v.baseline() {
                Ok(b) if !b.passed => {
                    let note = format!("{id}: the test command already fails on the base commit, so it cannot judge candidates (all are kept)");
                    crate::model::notify::notice(&note);
                    sh.report.lock().expect("report lock").notes.push(note);
                }
                Ok(_) => {}
                Err(e) => {
                    fail(format!("cannot run the test command: {e:#}"));
                    return Ok(());
                }
            }
        }
    }
    let temps = sample_temperatures(req.samples, &req.temperatures)?;
    let mut outcomes = Vec::new();
    for kind in todo {
        let strategy = strategy_of(kind, req, &sh.prompts, &temps);
        let model = model_for(&format!("{id}/{}", kind.name()));
        let o = run_strategy(
            strategy.as_ref(),
            task,
            &repo,
            model.as_ref(),
            validator.as_ref(),
        );
        let mut r = sh.report.lock().expect("report lock");
        for n in &o.notes {
            let note = format!("{id}: {n}");
            crate::model::notify::notice(&note);
            r.notes.push(note);
        }
        if !req.dry_run {
            crate::model::notify::notice(&format!(
                "{id}: {}: {} candidate(s)",
                kind.agent(),
                o.kept.len()
            ));
        }
        outcomes.push(o);
    }
    let preds: Vec<Prediction> = predictions(task, &outcomes)
        .into_iter()
        .filter(|p| {
            !sh.done
                .contains(&(p.instance_id.clone(), p.model_name_or_path.clone()))
        })
        .collect();
    if let (Some(out), false) = (&sh.out, preds.is_empty()) {
        let mut f = out.lock().expect("out lock");
        f.write_all(to_jsonl(&preds).as_bytes())
            .and_then(|_| f.flush())
            .with_context(|| format!("cannot append to {}", req.out.display()))?;
        sh.report.lock().expect("report lock").written += preds.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_samples_and_agents() {
        assert_eq!(
            parse_kinds(&["chain,sr".into(), "hierarchical".into(), "chain".into()]).unwrap(),
            [Kind::Chain, Kind::SearchReplace, Kind::Hierarchical]
        );
        assert_eq!(parse_kinds(&[]).unwrap(), Kind::ALL);
        assert!(parse_kinds(&["magic".into()])
            .unwrap_err()
            .to_string()
            .contains("unknown strategy `magic`"));
        assert!(Kind::Chain.owns("dei-gen-chain-of-context"));
        assert!(Kind::Chain.owns("dei-gen-chain-of-context-k3"));
        assert!(!Kind::Chain.owns("dei-gen-chain-of-context-kx"));
        assert!(!Kind::SearchReplace.owns("dei-gen-hierarchical"));
        assert_eq!(
            sample_temperatures(0, &[0.0, 0.4, 0.8]).unwrap(),
            [0.0, 0.4, 0.8]
        );
        assert_eq!(
            sample_temperatures(4, &[0.0, 0.8]).unwrap(),
            [0.0, 0.8, 0.0, 0.8]
        );
        assert!(sample_temperatures(1, &[]).is_err());
        assert!(sample_temperatures(1, &[3.0]).is_err());
    }

    #[test]
    fn existing_pairs_cut_a_torn_line_and_refuse_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.jsonl");
        assert!(existing_pairs(&p, true).unwrap().0.is_empty());
        let good =
            r#"{"instance_id":"a","model_name_or_path":"dei-gen-hierarchical","model_patch":"x"}"#;
        std::fs::write(&p, format!("{good}\n{{\"instance_id\":\"b\",\"mod")).unwrap();
        let (pairs, torn) = existing_pairs(&p, true).unwrap();
        assert_eq!(torn, r#"{"instance_id":"b","mod"#.len());
        assert!(pairs.contains(&("a".into(), "dei-gen-hierarchical".into())));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), format!("{good}\n"));
        std::fs::write(&p, format!("oops\n{good}\n")).unwrap();
        let e = existing_pairs(&p, true).unwrap_err().to_string();
        assert!(e.contains("out.jsonl:1"), "{e}");
        std::fs::write(&p, "[]").unwrap();
        assert!(existing_pairs(&p, true)
            .unwrap_err()
            .to_string()
            .contains("JSON array"));
    }
}
