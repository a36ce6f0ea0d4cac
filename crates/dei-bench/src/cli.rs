//! `dei-bench …`: developer measurements of each stage on real data. Each command prints a
//! table and can write JSON; the figures go into docs/ (see docs/benchmarks.md).

use crate::data;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Run one measurement.
pub fn run(cmd: BenchCommand) -> anyhow::Result<()> {
    match cmd {
        BenchCommand::Context(a) => context(*a),
        BenchCommand::Offline(a) => offline(a),
        BenchCommand::Repro(a) => repro(a),
    }
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Issue-only localization recall and candidate context size/time on SWE-bench Lite.
    Context(Box<BenchContextArgs>),
    /// n@k of the offline committee on SWE-bench Lite candidates.
    Offline(BenchOfflineArgs),
    /// Write the reproduction script `dei rank --exec` makes of each issue, one file per
    /// instance, and print a digest of them all (to read the scripts, or to show that a change
    /// leaves them byte for byte the same). Tasks whose repository is not under --repos are
    /// left out, and counted.
    Repro(BenchReproArgs),
}

/// Weights to measure with, or to fit on one half of the instances first.
#[derive(Args)]
pub struct WeightArgs {
    /// Weights (JSON object; fields left out keep their defaults); the defaults when absent.
    #[arg(long)]
    pub weights: Option<PathBuf>,
    /// Fit the weights on the fit (tune) half first, then report them on the held-out half.
    #[arg(long)]
    pub fit: bool,
    /// Write the fitted weights here (JSON, loadable with --weights).
    #[arg(long, requires = "fit")]
    pub save_weights: Option<PathBuf>,
}

/// Where the Lite tasks and their repositories are: the flags every measurement over the
/// repositories shares.
#[derive(Args)]
pub struct LiteInput {
    /// Data folder (swebench_lite/test.jsonl, lite_candidates.jsonl); DEI_DATA when not given,
    /// else ../shared/data beside the repository.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Task records; the data folder's swebench_lite/test.jsonl when not given.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Folder of repositories (owner__name or owner+name/repo); DEI_REPOS when not given, else
    /// the repository's target/repos (where the tests clone the bundles of ../shared/repos).
    #[arg(long, env = "DEI_REPOS")]
    pub repos: Option<PathBuf>,
}

impl LiteInput {
    /// The data folder, the task file and the folder of repositories; an error saying what to
    /// pass when there is no folder of repositories.
    fn resolve(&self) -> anyhow::Result<(PathBuf, PathBuf, PathBuf)> {
        let data = data::data_dir(self.data.as_deref());
        let repos = data::repos_dir(self.repos.as_deref()).ok_or_else(|| {
            anyhow::anyhow!(
                "no folder of repositories\n  hint: pass --repos DIR or set DEI_REPOS (cargo test clones the bundles of ../shared/repos into target/repos)"
            )
        })?;
        let tasks = self
            .tasks
            .clone()
            .unwrap_or_else(|| data::tasks_file(&data));
        Ok((data, tasks, repos))
    }
}

#[derive(Args)]
pub struct BenchContextArgs {
    #[command(flatten)]
    pub input: LiteInput,
    /// Candidate pool; the data folder's lite_candidates.jsonl when not given; "none" skips the
    /// context measurements.
    #[arg(long)]
    pub candidates: Option<PathBuf>,
    /// all, tune or report (the one split, by SHA-256 of instance_id: see dei_bench::split).
    #[arg(long, default_value = "all")]
    pub split: crate::split::Split,
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long, default_value_t = 4000)]
    pub context_tokens: usize,
    /// Past commits (first-parent, before the base commit) read for the history signal.
    #[arg(long, default_value_t = dei::localize::search::HISTORY_COMMITS)]
    pub history: usize,
    /// Files whose definitions are ranked for the function-level figures.
    #[arg(long, default_value_t = dei::localize::search::LocateOptions::default().function_files)]
    pub function_files: usize,
    #[command(flatten)]
    pub weights: WeightArgs,
    /// More tasks to fit on (JSON/JSONL, repeatable), such as SWE-bench Verified; tasks whose
    /// id is among --tasks are left out, so the held-out half stays unseen.
    #[arg(long, requires = "fit")]
    pub fit_tasks: Vec<PathBuf>,
    /// While fitting, write each fit instance's file signals here (JSONL), to study signals.
    #[arg(long, requires = "fit")]
    pub dump_signals: Option<PathBuf>,
    /// Write per-instance results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Build each candidate's context without the other candidates (as if it were alone).
    #[arg(long)]
    pub alone: bool,
    /// With --llm (or DEI_LLM), a model re-ranks each issue's localization and the report gives
    /// the figures with and without it.
    #[command(flatten)]
    pub llm: BenchLlmArgs,
    /// Re-rank with a stand-in that names exactly the gold files and definitions it is shown:
    /// the ceiling of re-ranking with these shortlists and outlines (no model is called).
    #[arg(long, conflicts_with = "llm")]
    pub rerank_oracle: bool,
}

/// The model flags of `dei bench context` (the re-ranker's; the library's settings are
/// [`dei::llm::config::LlmOptions`]).
#[derive(Args)]
pub struct BenchLlmArgs {
    /// The re-ranking model, PROVIDER:MODEL (as for dei locate).
    #[arg(long, env = "DEI_LLM")]
    pub llm: Option<String>,
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long)]
    pub api_key_env: Option<String>,
    #[arg(long)]
    pub temperature: Option<f64>,
    #[arg(long, default_value_t = 2048)]
    pub max_tokens: u32,
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    #[arg(long)]
    pub rpm: Option<u32>,
    #[arg(long)]
    pub tpm: Option<u64>,
    #[arg(long, default_value_t = 5)]
    pub retries: u32,
    #[arg(long, default_value_t = 2)]
    pub parse_retries: u32,
    #[arg(long, default_value_t = 1000)]
    pub backoff_ms: u64,
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
    #[arg(long, default_value = ".dei/cache")]
    pub cache: PathBuf,
    #[arg(long)]
    pub no_cache: bool,
    #[arg(long)]
    pub max_cost: Option<f64>,
    #[arg(long)]
    pub price_in: Option<f64>,
    #[arg(long)]
    pub price_out: Option<f64>,
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub prompt_dir: Option<PathBuf>,
}

impl BenchLlmArgs {
    fn options(&self) -> dei::llm::config::LlmOptions {
        dei::llm::config::LlmOptions {
            llm: self.llm.clone(),
            base_url: self.base_url.clone(),
            api_key_env: self.api_key_env.clone(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            concurrency: self.concurrency,
            rpm: self.rpm,
            tpm: self.tpm,
            retries: self.retries,
            parse_retries: self.parse_retries,
            backoff_ms: self.backoff_ms,
            timeout: self.timeout,
            cache: self.cache.clone(),
            no_cache: self.no_cache,
            max_cost: self.max_cost,
            price_in: self.price_in,
            price_out: self.price_out,
            ledger: self.ledger.clone(),
            dry_run: self.dry_run,
            prompt_dir: self.prompt_dir.clone(),
            ..Default::default()
        }
    }
}

fn context(a: BenchContextArgs) -> anyhow::Result<()> {
    let (data, tasks, repos) = a.input.resolve()?;
    let candidates = match a.candidates {
        Some(p) if p.as_os_str() == "none" => None,
        Some(p) => Some(p),
        None => Some(data::candidates_file(&data)),
    };
    let opts = crate::context::EvalOptions {
        tasks,
        repos,
        candidates,
        split: a.split,
        limit: a.limit,
        budget: a.context_tokens,
        history: a.history,
        fit_tasks: a.fit_tasks,
        dump_signals: a.dump_signals,
        alone: a.alone,
        locate: dei::localize::search::LocateOptions {
            weights: match &a.weights.weights {
                Some(p) => dei::localize::search::Weights::load(p)?,
                None => Default::default(),
            },
            function_files: a.function_files,
            ..Default::default()
        },
    };
    let mut opts = opts;
    if a.weights.fit {
        let w = crate::context::fit(&opts, |line| eprintln!("{line}"))?;
        let text = serde_json::to_string_pretty(&w)?;
        println!("fitted localizer weights (tune half):\n{text}");
        if let Some(p) = &a.weights.save_weights {
            std::fs::write(p, &text)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
        }
        opts.locate.weights = w;
    }
    let engine = if a.rerank_oracle {
        None
    } else {
        a.llm.options().engine()?
    };
    let prompts = dei::llm::prompts::Prompts::load(a.llm.prompt_dir.as_deref())?;
    let options = dei::localize::rerank::RerankOptions {
        temperature: a.llm.temperature.unwrap_or(0.0),
        ..Default::default()
    };
    let report = match engine {
        None if a.rerank_oracle => {
            let rerank = crate::context::Rerank {
                model: crate::context::Reranker::Oracle,
                prompts: &prompts,
                options,
                label: "the gold patch (ceiling)".into(),
                jobs: 1,
            };
            crate::context::run_with(&opts, Some(&rerank), |line| eprintln!("{line}"))?
        }
        Some(engine) => {
            let model =
                dei::llm::model::EngineModel::new(std::sync::Arc::clone(&engine), "localize");
            let rerank = crate::context::Rerank {
                model: crate::context::Reranker::Model(&model),
                prompts: &prompts,
                options,
                label: a.llm.llm.clone().unwrap_or_else(|| "dry run".into()),
                // Each issue in flight holds its repository's files in memory.
                jobs: a.llm.concurrency.clamp(1, 4),
            };
            let r = crate::context::run_with(&opts, Some(&rerank), |line| eprintln!("{line}"))?;
            eprintln!("{}", dei::generate::run::usage_line(&engine.totals()));
            r
        }
        None => crate::context::run(&opts, |line| eprintln!("{line}"))?,
    };
    if let Some(p) = a.json {
        std::fs::write(&p, serde_json::to_string_pretty(&report)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    print!("{}", crate::context::summary(&report));
    Ok(())
}

#[derive(Args)]
pub struct BenchOfflineArgs {
    /// Folder with lite_candidates.jsonl and swebench_lite/test.jsonl; DEI_DATA when not given,
    /// else ../shared/data beside the repository.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Folder of repositories; DEI_REPOS when not given, else the repository's target/repos.
    /// Instances whose repository is not there use text-only signals.
    #[arg(long, env = "DEI_REPOS")]
    pub repos: Option<PathBuf>,
    #[command(flatten)]
    pub weights: WeightArgs,
    /// Picks per instance (n of n@k).
    #[arg(long, default_value_t = 1)]
    pub n: usize,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

fn offline(a: BenchOfflineArgs) -> anyhow::Result<()> {
    let weights = match &a.weights.weights {
        Some(p) => dei::review::offline::weights::load_file(p)?,
        None => Default::default(),
    };
    let req = crate::offline::BenchRequest {
        data: data::data_dir(a.data.as_deref()),
        repos: data::repos_dir(a.repos.as_deref()),
        weights,
        fit: a.weights.fit,
        n: a.n,
    };
    let report = crate::offline::run(&req)?;
    print!("{}", crate::offline::table(&report));
    if let (Some(p), Some(w)) = (&a.weights.save_weights, &report.fitted) {
        std::fs::write(p, serde_json::to_string_pretty(w)? + "\n")
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    Ok(())
}

#[derive(Args)]
pub struct BenchReproArgs {
    /// Folder the scripts go to: INSTANCE.py for each issue that gives one, and index.jsonl
    /// (statements, sources, imports added, SHA-256 of each).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub input: LiteInput,
    /// all, tune or report.
    #[arg(long, default_value = "all")]
    pub split: crate::split::Split,
    /// Only these instances (repeatable).
    #[arg(long = "id")]
    pub ids: Vec<String>,
}

fn repro(a: BenchReproArgs) -> anyhow::Result<()> {
    let (_, tasks, repos) = a.input.resolve()?;
    let opts = crate::repro::ReproOptions {
        tasks,
        repos,
        out: a.out,
        split: a.split,
        ids: a.ids,
    };
    let report = crate::repro::write_scripts(&opts)?;
    let scripts = report.rows.iter().filter(|r| r.sha256.is_some()).count();
    let failed: Vec<&crate::repro::ScriptRow> =
        report.rows.iter().filter(|r| r.error.is_some()).collect();
    println!(
        "{} instances with a repository ({} without), {scripts} with a script, written to {}",
        report.rows.len(),
        report.without_repo,
        opts.out.display()
    );
    for r in &failed {
        println!(
            "  {}: {}",
            r.instance_id,
            r.error.as_deref().unwrap_or_default()
        );
    }
    println!("digest {}", report.digest);
    if !failed.is_empty() {
        anyhow::bail!(
            "{} instances could not be read at their base commit",
            failed.len()
        );
    }
    Ok(())
}
