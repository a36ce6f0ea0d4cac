//! The command line's flags: one clap struct per command, and the groups they share.
//!
//! Every command's `--help` groups its flags by what the user is doing, under the headings of
//! [`heading`], always in this order (a command shows the ones it has): Input, Many issues,
//! Patch and context, Generation, Committee, LLM, LLM committee, Execution, Metrics, Output.
//! Only `--help` and `--version` stay under clap's plain "Options" (tests/it/cli_help.rs
//! checks both). A flag renamed for clarity keeps its old spelling as a hidden alias, so no
//! command line breaks: `locate --top` (now `--show`), `generate --test-timeout` (now
//! `--test-cmd-timeout`), `merge --out` (now `--out-dir`).

use clap::{Args, Parser, Subcommand};
use heading::{COMMITTEE, GENERATION, INPUT, MANY, METRICS, OUTPUT, PATCH};
use std::path::PathBuf;

/// The help headings, by what the user is doing; a field's struct, or the field itself, names
/// its heading.
pub mod heading {
    /// What to work on: the candidates, the issues, the repositories.
    pub const INPUT: &str = "Input";
    /// Runs over many issues: the run directory, shards, resuming, issues at once.
    pub const MANY: &str = "Many issues";
    /// How candidate patches are read and the context reviewers see (`dei rank`).
    pub const PATCH: &str = "Patch and context";
    /// How candidates are written and checked (`dei generate`).
    pub const GENERATION: &str = "Generation";
    /// Who picks: the offline committee (`dei rank`), or the selection measured (`dei eval`).
    pub const COMMITTEE: &str = "Committee";
    /// The model, its server, and how calls are made and paid for.
    pub const LLM: &str = "LLM";
    /// How the LLM committee judges (`dei rank`).
    pub const LLM_COMMITTEE: &str = "LLM committee";
    /// `--exec` and its settings (`dei rank`).
    pub const EXECUTION: &str = "Execution (runs candidate code in a sandbox)";
    /// What is measured and how (`dei eval`).
    pub const METRICS: &str = "Metrics";
    /// What is written, and where.
    pub const OUTPUT: &str = "Output";
}

#[derive(Parser)]
#[command(
    name = "dei",
    version,
    about = "Rank candidate patches from many coding agents for one issue"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Rank the candidate patches for one issue, or for many (--all, --issue A --issue B) into a --run-dir.
    Rank(Box<RankArgs>),
    /// Write candidate patches with a model (three strategies) into a SWE-bench prediction file.
    Generate(Box<GenerateArgs>),
    /// Measure diversity (Union/Intersect/Average@k) and a selection (n@k) over many issues.
    Eval(EvalArgs),
    /// Join the run directories of several shards (dei rank --shard i/n) into one result.
    Merge(MergeArgs),
    /// Show where an issue points from its text alone: the files and definitions most likely to need the fix.
    Locate(Box<LocateArgs>),
}

/// Where the repository is (`dei rank`, `dei generate`, `dei locate`).
#[derive(Args)]
#[command(next_help_heading = INPUT)]
pub struct RepoArgs {
    /// The repository (a clone or bare git dir).
    #[arg(long, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// A folder of repositories named owner__name.
    #[arg(long, value_name = "DIR", env = "DEI_REPOS")]
    pub repos: Option<PathBuf>,
}

/// A plain-text issue instead of a task record (`dei rank`, `dei locate`).
#[derive(Args)]
#[command(next_help_heading = INPUT)]
pub struct IssueTextArgs {
    /// A plain-text issue; needs --repo and --commit.
    #[arg(long, value_name = "FILE", conflicts_with = "issue", requires_all = ["repo", "commit"])]
    pub issue_file: Option<PathBuf>,
    /// Base commit for --issue-file.
    #[arg(long, value_name = "SHA")]
    pub commit: Option<String>,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("issue_or_list").args(["issue", "instance_ids"])))]
pub struct LocateArgs {
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long, value_name = "FILE", requires = "issue_or_list", help_heading = INPUT)]
    pub tasks: Option<PathBuf>,
    /// Issue id (SWE-bench instance_id) in --tasks.
    #[arg(long, value_name = "ID", requires = "tasks", help_heading = INPUT)]
    pub issue: Option<String>,
    /// Locate each issue listed in FILE (one instance id a line, `#` comments), in turn; with
    /// --json, one JSON line per issue. Ids not in --tasks are listed and nothing is run.
    #[arg(long, value_name = "FILE", requires = "tasks", conflicts_with_all = ["issue", "issue_file"], help_heading = INPUT)]
    pub instance_ids: Option<PathBuf>,
    #[command(flatten)]
    pub place: RepoArgs,
    #[command(flatten)]
    pub text: IssueTextArgs,
    #[command(flatten)]
    pub llm: super::llm::LocateLlmArgs,
    /// How many files, and how many definitions, to show (most likely first).
    #[arg(long = "show", alias = "top", value_name = "N", default_value_t = 10, help_heading = OUTPUT)]
    pub top: usize,
    /// Write the result as JSON to this file ("-" for stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
}

#[derive(Args)]
pub struct GenerateArgs {
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub tasks: PathBuf,
    /// Issue id to generate for. Repeat for several issues.
    #[arg(long, value_name = "ID", required_unless_present_any = ["all", "instance_ids"], help_heading = INPUT)]
    pub issue: Vec<String>,
    /// Generate for the issues listed in FILE (one instance id a line, `#` comments). Ids not
    /// in --tasks are listed and nothing is run.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["issue", "all"], help_heading = INPUT)]
    pub instance_ids: Option<PathBuf>,
    /// Generate for every issue in --tasks.
    #[arg(long, conflicts_with = "issue", help_heading = INPUT)]
    pub all: bool,
    #[command(flatten)]
    pub place: RepoArgs,
    /// Issues in flight at once (default: --concurrency, at most 8).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, help_heading = MANY)]
    pub jobs: usize,
    /// Strategies to run: hierarchical, search-replace, chain (comma-separated).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "hierarchical,search-replace,chain",
        help_heading = GENERATION
    )]
    pub strategies: Vec<String>,
    /// Sampling temperatures, used in turn by the samples (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "0,0.4,0.8", help_heading = GENERATION)]
    pub temperatures: Vec<f64>,
    /// Samples per strategy and issue, each a model run at the next of the --temperatures in
    /// turn [default: one per temperature, 3 with the default --temperatures; 0 says the same].
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, help_heading = GENERATION)]
    pub samples: usize,
    /// At most this many files for the hierarchical strategy (L).
    #[arg(long, value_name = "N", default_value_t = 3, help_heading = GENERATION)]
    pub max_files: usize,
    /// Check each candidate with this shell command (`sh -c`), run in a temporary copy of the
    /// base commit before and after it: a candidate that breaks a passing command is dropped
    /// and its strategy retried once. Not `dei rank --test-cmd`, which is an --exec setting.
    #[arg(long, value_name = "CMD", help_heading = GENERATION)]
    pub test_cmd: Option<String>,
    /// Seconds one run of --test-cmd may take before it is killed.
    #[arg(long = "test-cmd-timeout", alias = "test-timeout", value_name = "SECS", default_value_t = 300.0,
        value_parser = positive_secs, help_heading = GENERATION)]
    pub test_timeout: f64,
    #[command(flatten)]
    pub llm: super::llm::GenerateLlmArgs,
    /// SWE-bench predictions (JSONL) to append to; (issue, strategy) pairs already there are skipped.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub out: PathBuf,
}

/// A positive, finite number of seconds.
fn positive_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err("must be a positive number of seconds".into()),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Args)]
pub struct MergeArgs {
    /// Run directories to join.
    #[arg(required = true, value_name = "RUN_DIR", help_heading = INPUT)]
    pub run_dirs: Vec<PathBuf>,
    /// Also write the joined result as a new run directory here.
    #[arg(long = "out-dir", alias = "out", value_name = "DIR", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,
    /// Write the summary JSON to this file ("-" for stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub predictions: PredictionsArgs,
}

#[derive(Args)]
// The candidates (display order 0) lead the Input heading.
#[command(next_display_order = 1)]
pub struct RankArgs {
    /// Prediction files (.json/.jsonl) and/or folders of <agent>/<instance_id>.diff.
    #[arg(required = true, display_order = 0, help_heading = INPUT)]
    pub candidates: Vec<PathBuf>,
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub tasks: Option<PathBuf>,
    /// Issue id (SWE-bench instance_id) to rank; needs --tasks (optional when it holds one task). Repeat for several issues.
    #[arg(long, value_name = "ID", requires = "tasks", help_heading = INPUT)]
    pub issue: Vec<String>,
    /// Rank the issues listed in FILE (one instance id a line, `#` comments; needs --tasks
    /// and --run-dir). Ids not in --tasks are listed and nothing is run.
    #[arg(long, value_name = "FILE", requires = "tasks", conflicts_with_all = ["issue", "issue_file", "all"], help_heading = INPUT)]
    pub instance_ids: Option<PathBuf>,
    /// Rank every issue that has candidates (needs --tasks and --run-dir).
    #[arg(long, requires = "tasks", conflicts_with_all = ["issue", "issue_file"], help_heading = INPUT)]
    pub all: bool,
    #[command(flatten)]
    pub names: AgentNameArgs,
    #[command(flatten)]
    pub place: RepoArgs,
    #[command(flatten)]
    pub text: IssueTextArgs,
    /// Stream per-issue results to this folder (journal.jsonl); rerunning resumes.
    #[arg(long, value_name = "DIR", help_heading = MANY)]
    pub run_dir: Option<PathBuf>,
    /// Take only shard I of N of the issues (deterministic by issue id), e.g. --shard 2/8.
    #[arg(long, value_name = "I/N", help_heading = MANY)]
    pub shard: Option<dei::rank::run::Shard>,
    /// With --run-dir: run issues recorded as errors again (e.g. after adding a repository).
    #[arg(long, help_heading = MANY)]
    pub retry_errors: bool,
    /// No progress bar (it is only drawn on a terminal anyway).
    #[arg(long, help_heading = MANY)]
    pub no_progress: bool,
    /// Count only patches `git apply` would accept as applying.
    #[arg(long, help_heading = PATCH)]
    pub strict: bool,
    /// Token budget for the context shown to reviewers.
    #[arg(long, value_name = "TOKENS", default_value_t = 4000, help_heading = PATCH)]
    pub context_tokens: usize,
    /// Largest patch (bytes) a candidate may have; longer ones get an error and are not rebuilt.
    #[arg(long, value_name = "BYTES", default_value_t = dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES, help_heading = PATCH)]
    pub max_patch_bytes: usize,
    /// Offline committee weights (the committee without --llm): default (hand-set), fitted,
    /// track-record (shipped, fitted on the fit half of SWE-bench Lite), or a JSON file.
    #[arg(long, value_name = "NAME|FILE", help_heading = COMMITTEE)]
    pub offline_weights: Option<String>,
    #[command(flatten)]
    pub llm: super::llm::RankLlmArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// Write the machine-readable result to this file ("-" for stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub predictions: PredictionsArgs,
}

/// `--exec` and its settings (`dei rank`).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = heading::EXECUTION)]
pub struct ExecArgs {
    /// Run each candidate in a sandbox: the repository's own tests that its edits reach (run
    /// twice at the base commit first) and the issue's code; behaviour joins the evidence.
    #[arg(long)]
    pub exec: bool,
    /// Sandboxes at once.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "exec",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub exec_jobs: usize,
    /// Seconds one sandbox test run may take before it is killed (a run of the issue's code
    /// gets at most 60).
    #[arg(long, default_value_t = 180, value_name = "SECS", requires = "exec",
        value_parser = clap::value_parser!(u64).range(1..))]
    pub exec_timeout: u64,
    /// Python for a repository with no shipped environment (`3.9`, `python3`, or a path).
    #[arg(long, value_name = "PYTHON", requires = "exec")]
    pub python: Option<String>,
    /// Install step, run in a work tree of the repository inside the environment.
    #[arg(long, value_name = "CMD", requires = "exec")]
    pub setup: Option<String>,
    /// Test command of the sandbox runs (replaces a shipped spec's; needed without one), the
    /// selected test files appended. Not `dei generate --test-cmd`, which checks generated
    /// candidates.
    #[arg(long, value_name = "CMD", requires = "exec")]
    pub test_cmd: Option<String>,
    /// The tests start a server on 127.0.0.1 and talk to it: each sandbox run gets the
    /// loopback of its own network namespace (nothing outside it becomes reachable).
    #[arg(long, requires = "exec")]
    pub test_loopback: bool,
    /// Where environments are built (default: $DEI_CACHE_DIR or the user's cache folder).
    #[arg(long, value_name = "DIR", requires = "exec")]
    pub env_dir: Option<PathBuf>,
    /// Where sandbox runs are cached (default: RUN_DIR/exec with --run-dir, else the user's
    /// cache folder); share one between runs that rank other committees of the same issues.
    #[arg(long, value_name = "DIR", requires = "exec")]
    pub exec_cache: Option<PathBuf>,
    /// When the issue's code stops at the base commit on importing a well-known package the
    /// environment lacks (numpy, scipy, pandas, matplotlib, Pillow, lxml, Cython, antlr4,
    /// PyYAML, networkx), install it and gather the issue's evidence again in that environment.
    /// Off by default: on the Lite committees it loses tune-half picks (docs/execution.md).
    #[arg(long, requires = "exec")]
    pub exec_extras: bool,
    /// Also have a model write a reproduction test from the issue (Agentless-style), kept only
    /// when it prints `Issue reproduced` at the base commit, then run with each candidate. One
    /// call per issue, with --llm's model, or PROVIDER:MODEL given here (without --llm the
    /// offline committee ranks); the LLM flags (--base-url, --cache, --max-cost, ...) apply.
    #[arg(
        long,
        value_name = "PROVIDER:MODEL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        requires = "exec"
    )]
    pub exec_llm_repro: Option<String>,
    /// Tests the model writes per issue for --exec-llm-repro: the first at temperature 0, the
    /// others at 0.8. Each is kept only if it prints `Issue reproduced` at the base commit, and
    /// a candidate gets the verdict most kept tests print (a tie: the earliest sample's).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..=dei::exec::llm_repro::MAX_SAMPLES as i64),
        requires = "exec_llm_repro"
    )]
    pub exec_llm_repro_samples: u32,
    /// Where sandbox runs happen: on this machine (`local`), or in podman or docker containers
    /// (no network, memory, pids and CPU limits, read-only root; docs/containers.md).
    #[arg(long, value_enum, default_value_t = ExecBackend::Local, value_name = "BACKEND", requires = "exec")]
    pub exec_backend: ExecBackend,
    /// Run in this image as it is, with its own Python (the tree at /testbed, as in SWE-bench's
    /// images); `{instance_id}` names each instance's image: 'sweb.eval.x86_64.{instance_id}'.
    #[arg(long, value_name = "IMAGE", requires = "exec")]
    pub exec_image: Option<String>,
    /// The host-compatible image dei's own environments run in (mounted read-only) when no
    /// --exec-image is given (examples/container-base.sh builds the default); with
    /// --exec-env-in-image, the image they are built on, which needs the specs' Python.
    #[arg(long, value_name = "IMAGE", default_value = dei::exec::container::DEFAULT_BASE_IMAGE, requires = "exec")]
    pub exec_base_image: String,
    /// Build each environment into an image on --exec-base-image (a Containerfile from its
    /// spec, tagged localhost/dei-env:REPO-VERSION-HASH, reused while the engine has it)
    /// instead of a venv on this machine, and run the sandbox runs there.
    #[arg(long, requires = "exec", conflicts_with = "exec_image")]
    pub exec_env_in_image: bool,
}

/// `--exec-backend`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecBackend {
    Local,
    Podman,
    Docker,
}

impl ExecArgs {
    /// The settings, or `None` without `--exec`. Runs are cached in `run_dir/exec` when there
    /// is a run directory, else beside the environments. `model_test` writes the model's
    /// reproduction test (`--exec-llm-repro`, see [`super::commands::test_writer`]).
    pub fn settings(
        &self,
        run_dir: Option<&std::path::Path>,
        model_test: Option<std::sync::Arc<dei::exec::llm_repro::TestWriter>>,
    ) -> anyhow::Result<Option<std::sync::Arc<dei::exec::gather::ExecSettings>>> {
        if !self.exec {
            return Ok(None);
        }
        let env_dir = self
            .env_dir
            .clone()
            .unwrap_or_else(dei::exec::env::default_cache_dir);
        let cache_dir = match (&self.exec_cache, run_dir) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => d.join(dei::rank::run::journal::EXEC_CACHE),
            (None, None) => dei::exec::env::default_cache_dir().join("runs"),
        };
        writable(&cache_dir).map_err(|e| {
            anyhow::anyhow!(
                "the run cache {} cannot be written ({e}): runs would not be kept, and a stopped run would redo them; name a folder you can write to with --exec-cache DIR",
                cache_dir.display()
            )
        })?;
        let mut s = dei::exec::gather::ExecSettings::new(self.backend(), env_dir, cache_dir);
        s.jobs = self.exec_jobs;
        s.limits.timeout = std::time::Duration::from_secs(self.exec_timeout);
        s.repro_timeout = s.repro_timeout.min(s.limits.timeout);
        s.overrides = dei::exec::env::Overrides {
            python: self.python.clone(),
            setup: self.setup.clone(),
            test_cmd: self.test_cmd.clone(),
            loopback: self.test_loopback,
        };
        s.model_test = model_test;
        s.install_extras = self.exec_extras;
        if self.exec_env_in_image {
            use dei::exec::container::Engine;
            let engine = match self.exec_backend {
                ExecBackend::Local => anyhow::bail!(
                    "--exec-env-in-image builds images: give --exec-backend podman or docker"
                ),
                ExecBackend::Podman => Engine::Podman,
                ExecBackend::Docker => Engine::Docker,
            };
            s.env_image = Some(std::sync::Arc::new(dei::exec::image::ImageBuilder::new(
                engine,
                &self.exec_base_image,
                &s.env_dir,
            )));
        }
        Ok(Some(std::sync::Arc::new(s)))
    }
}

impl ExecArgs {
    /// The sandbox backend `--exec-backend` names, with its image.
    fn backend(&self) -> std::sync::Arc<dyn dei::exec::sandbox::Backend> {
        use dei::exec::container::{ContainerBackend, Engine, Image};
        let engine = match self.exec_backend {
            ExecBackend::Local => {
                return std::sync::Arc::new(dei::exec::sandbox::LocalBackend::default())
            }
            ExecBackend::Podman => Engine::Podman,
            ExecBackend::Docker => Engine::Docker,
        };
        let image = match &self.exec_image {
            Some(i) => Image::AsIs(i.clone()),
            None => Image::HostEnv(self.exec_base_image.clone()),
        };
        std::sync::Arc::new(ContainerBackend::new(engine, image))
    }
}

/// Whether files can be written in `dir` (created when missing): a file is written there and
/// removed.
fn writable(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".dei-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// `--predictions` (`dei rank`, `dei merge`).
#[derive(Args)]
#[command(next_help_heading = OUTPUT)]
pub struct PredictionsArgs {
    /// Write each ranked issue's top pick as a SWE-bench prediction {instance_id,
    /// model_name_or_path, model_patch} for the SWE-bench harness or sb-cli (JSON Lines; a JSON
    /// list when FILE ends in .json). An issue with no pick gets no record and is named.
    #[arg(long, value_name = "FILE")]
    pub predictions: Option<PathBuf>,
    /// The predictions' model_name_or_path.
    #[arg(long, value_name = "NAME", default_value = dei::rank::predictions::DEFAULT_NAME, requires = "predictions")]
    pub predictions_name: String,
}

/// `--agent-name` (`dei rank`, `dei eval`).
#[derive(Args)]
#[command(next_help_heading = INPUT)]
pub struct AgentNameArgs {
    /// Name an agent explicitly: SOURCE is a predictions file or patch folder (as given) or the
    /// name dei derives (the run folder or file name). Repeatable.
    #[arg(long = "agent-name", value_name = "SOURCE=NAME")]
    pub agent_name: Vec<String>,
}

impl AgentNameArgs {
    pub fn naming(&self) -> anyhow::Result<dei::candidates::Naming> {
        dei::candidates::Naming::parse(&self.agent_name)
    }
}

#[derive(Args)]
// The candidates (display order 0) lead the Input heading.
#[command(next_display_order = 1)]
pub struct EvalArgs {
    /// Candidates, as for `dei rank` (their `resolved` fields are labels).
    #[arg(display_order = 0, help_heading = INPUT)]
    pub candidates: Vec<PathBuf>,
    /// The instance universe: SWE-bench task records or a list of ids (default: every instance named in the inputs).
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub tasks: Option<PathBuf>,
    /// Evaluate only the instances listed in FILE (one instance id a line, `#` comments). Ids
    /// not in --tasks (or, without it, named by no candidate or label) are listed and refused.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub instance_ids: Option<PathBuf>,
    /// restrict: a run with rows for under half the instances (graded on part of the
    /// benchmark) is scored, with the others, only where it has rows; all: every instance, a
    /// missing row counting as no submission.
    #[arg(long, value_name = "restrict|all", default_value = "restrict", help_heading = INPUT)]
    pub coverage: dei::metrics::table::Coverage,
    /// Agents to evaluate, in this order (comma-separated); default: all, in natural order.
    #[arg(long, value_name = "LIST", value_delimiter = ',', help_heading = INPUT)]
    pub agents: Option<Vec<String>>,
    #[command(flatten)]
    pub names: AgentNameArgs,
    /// Resolved labels: results.json/report.json, a runs map, a 0/1 matrix CSV, or rows; AGENT=FILE names the agent.
    #[arg(long = "labels", value_name = "[AGENT=]FILE", help_heading = INPUT)]
    pub labels: Vec<String>,
    /// The committee's selection: a `dei rank --all --run-dir` folder (or its journal.jsonl), `dei rank --json` output (one, a list, or JSONL), or {instance_id, agent, score} rows/CSV.
    #[arg(long, value_name = "PATH", help_heading = COMMITTEE)]
    pub scores: Option<PathBuf>,
    /// Report n@k for a baseline instead of a selection: random (equals Average@k) or random-nonempty.
    #[arg(long, conflicts_with = "scores", help_heading = COMMITTEE)]
    pub baseline: Option<dei::metrics::table::Baseline>,
    /// Keep only instances the committee ranked (one whose candidates all went unscored counts, with no pick).
    #[arg(long, requires = "scores", help_heading = COMMITTEE)]
    pub scored_only: bool,
    /// n of n@k: an instance counts as solved when the committee's top n picks include a
    /// resolved one.
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = METRICS)]
    pub top_n: usize,
    /// Orders for the curves: given, natural (order of generation), random (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "given,random", help_heading = METRICS)]
    pub order: Vec<dei::metrics::orders::OrderKind>,
    /// Random orders to average over.
    #[arg(long, value_name = "N", default_value_t = 100, help_heading = METRICS)]
    pub shuffles: usize,
    /// Seed for random orders and the bootstrap.
    #[arg(long, default_value_t = 42, help_heading = METRICS)]
    pub seed: u64,
    /// Bootstrap resamples over instances (0: no intervals).
    #[arg(long, value_name = "N", default_value_t = 1000, help_heading = METRICS)]
    pub bootstrap: usize,
    /// Coverage of the bootstrap intervals.
    #[arg(long, default_value_t = 0.95, help_heading = METRICS)]
    pub confidence: f64,
    /// Write the machine-readable report to this file ("-" for stdout).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub json: Option<PathBuf>,
    /// Write a self-contained HTML report with plots to this file.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub html: Option<PathBuf>,
}
