//! The `dei` command line: a thin clap front over the library.

mod cli;

use clap::{Args, Parser, Subcommand};
use dei::rank::pipeline::{IssueSource, RankRequest};
use dei::review::offline::Offline;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dei",
    version,
    about = "Rank candidate patches from many coding agents for one issue"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Rank the candidate patches for one issue, or for many (--all, --issue A --issue B) into a --run-dir.
    Rank(Box<RankArgs>),
    /// Write candidate patches with a model (three strategies) into a SWE-bench prediction file.
    Generate(Box<GenerateArgs>),
    /// Measure diversity (Union/Intersect/Average@k) and a selection (n@k) over many issues.
    Eval(EvalArgs),
    /// Measure stages on real data (developer tool).
    #[command(hide = true, subcommand)]
    Bench(dei::bench::BenchCommand),
    /// Join the run directories of several shards (dei rank --shard i/n) into one result.
    Merge(MergeArgs),
    /// Show where an issue points from its text alone: the files and definitions most likely to need the fix.
    Locate(Box<LocateArgs>),
}

/// Where the repository is (`dei rank`, `dei generate`, `dei locate`).
#[derive(Args)]
struct RepoArgs {
    /// The repository (a clone or bare git dir).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// A folder of repositories named owner__name.
    #[arg(long, env = "DEI_REPOS")]
    repos: Option<PathBuf>,
}

/// A plain-text issue instead of a task record (`dei rank`, `dei locate`).
#[derive(Args)]
struct IssueTextArgs {
    /// A plain-text issue; needs --repo and --commit.
    #[arg(long, conflicts_with = "issue", requires_all = ["repo", "commit"])]
    issue_file: Option<PathBuf>,
    /// Base commit for --issue-file.
    #[arg(long)]
    commit: Option<String>,
}

/// The issue named by `--issue ID --tasks FILE` or `--issue-file FILE --commit SHA`; `None`
/// when neither is complete.
fn issue_source(
    id: Option<String>,
    tasks: Option<PathBuf>,
    text: IssueTextArgs,
) -> Option<IssueSource> {
    match (id, tasks, text.issue_file, text.commit) {
        (Some(id), Some(file), None, _) => Some(IssueSource::Tasks { file, id }),
        (None, _, Some(file), Some(commit)) => Some(IssueSource::Text { file, commit }),
        _ => None,
    }
}

#[derive(Args)]
#[command(
    mut_arg("llm", |a| a.help("Model that re-ranks the search (optional): openai:MODEL, anthropic:MODEL, openai-compatible:MODEL (needs --base-url), vllm:MODEL, ollama:MODEL or llamacpp:MODEL")),
    mut_arg("selector", |a| a.hide(true)),
    mut_arg("samples", |a| a.hide(true)),
    mut_arg("rubric", |a| a.hide(true)),
    mut_arg("llm_locate", |a| a.hide(true)),
    mut_arg("temperature", |a| a.hide(true)),
)]
struct LocateArgs {
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long, requires = "issue")]
    tasks: Option<PathBuf>,
    /// Issue id (SWE-bench instance_id) in --tasks.
    #[arg(long, requires = "tasks")]
    issue: Option<String>,
    #[command(flatten)]
    text: IssueTextArgs,
    #[command(flatten)]
    place: RepoArgs,
    /// How many files and definitions to show.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Write the result as JSON to this file ("-" for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
    #[command(flatten)]
    llm: dei::llm::config::LlmArgs,
}

#[derive(Args)]
#[command(
    mut_arg("samples", |a| a.default_value("0").help_heading("Generation")
        .help("Samples per strategy and issue, at the --temperatures in turn (0: one per temperature)")),
    mut_arg("max_tokens", |a| a.default_value("4096")),
    mut_arg("llm", |a| a.help("Model that writes the patches (required): openai:MODEL, anthropic:MODEL, openai-compatible:MODEL (needs --base-url), vllm:MODEL, ollama:MODEL or llamacpp:MODEL")),
    mut_arg("temperature", |a| a.hide(true)),
    mut_arg("selector", |a| a.hide(true)),
    mut_arg("output_format", |a| a.hide(true)),
    mut_arg("prompt_dir", |a| a.hide(true)),
    mut_arg("rubric", |a| a.hide(true)),
    mut_arg("llm_locate", |a| a.hide(true)),
)]
struct GenerateArgs {
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long)]
    tasks: PathBuf,
    /// Issue id to generate for. Repeat for several issues.
    #[arg(long, required_unless_present = "all")]
    issue: Vec<String>,
    /// Generate for every issue in --tasks.
    #[arg(long, conflicts_with = "issue")]
    all: bool,
    #[command(flatten)]
    place: RepoArgs,
    /// Strategies to run: hierarchical, search-replace, chain (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "hierarchical,search-replace,chain"
    )]
    strategies: Vec<String>,
    /// Sampling temperatures, used in turn by the samples.
    #[arg(long, value_delimiter = ',', default_value = "0,0.4,0.8")]
    temperatures: Vec<f64>,
    /// At most this many files for the hierarchical strategy (L).
    #[arg(long, default_value_t = 3)]
    max_files: usize,
    /// A test command run (with `sh -c`) in a temporary copy of the base commit before and after
    /// each candidate; candidates that break a passing command are dropped and the strategy retried once.
    #[arg(long)]
    test_cmd: Option<String>,
    /// Seconds before one run of the test command is killed.
    #[arg(long, default_value_t = 300.0)]
    test_timeout: f64,
    /// Issues in flight at once (default: --concurrency, at most 8).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    jobs: usize,
    /// Output: SWE-bench predictions (JSONL), appended; (issue, strategy) pairs already there are skipped.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    llm: dei::llm::config::LlmArgs,
}

fn generate(args: GenerateArgs) -> anyhow::Result<()> {
    use dei::generate::run as gen;
    if !(args.test_timeout.is_finite() && args.test_timeout > 0.0) {
        anyhow::bail!("--test-timeout must be a positive number of seconds");
    }
    check_outputs(&[Some(args.out.as_path())])?;
    let req = gen::GenerateRequest {
        tasks: args.tasks,
        selection: if args.all {
            dei::model::task::Selection::All
        } else {
            dei::model::task::Selection::Ids(args.issue)
        },
        repo: args.place.repo,
        repos: args.place.repos,
        strategies: gen::parse_kinds(&args.strategies)?,
        samples: args.llm.samples as usize,
        temperatures: args.temperatures,
        max_files: args.max_files,
        test_cmd: args.test_cmd,
        test_timeout: std::time::Duration::from_secs_f64(args.test_timeout),
        out: args.out,
        jobs: args.jobs,
        dry_run: args.llm.dry_run,
    };
    let report = gen::generate(&req, &args.llm)?;
    if let Some(u) = &report.usage {
        eprintln!("{}", gen::usage_line(u));
    }
    if req.dry_run {
        eprintln!(
            "dry run: nothing written; each strategy stops at its first prompt not in the cache"
        );
        return Ok(());
    }
    eprintln!(
        "{} issue(s) worked on, {} (issue, strategy) pair(s) already in {}, {} candidate(s) appended, {} issue(s) skipped",
        report.issues, report.already_done, req.out.display(), report.written, report.failed.len()
    );
    if report.issues > 0 && report.failed.len() == report.issues {
        anyhow::bail!("no issue could be worked on (see the reasons above)");
    }
    Ok(())
}

#[derive(Args)]
struct MergeArgs {
    /// Run directories to join.
    #[arg(required = true)]
    run_dirs: Vec<PathBuf>,
    /// Also write the joined result as a new run directory here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the summary JSON to this file ("-" for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args)]
struct RankArgs {
    /// Prediction files (.json/.jsonl) and/or folders of <agent>/<instance_id>.diff.
    #[arg(required = true)]
    candidates: Vec<PathBuf>,
    #[command(flatten)]
    names: AgentNameArgs,
    /// Issue id (SWE-bench instance_id) to rank; needs --tasks. Repeat for several issues.
    #[arg(long, requires = "tasks")]
    issue: Vec<String>,
    /// Rank every issue that has candidates (needs --tasks and --run-dir).
    #[arg(long, requires = "tasks", conflicts_with_all = ["issue", "issue_file"])]
    all: bool,
    /// Stream per-issue results to this folder (journal.jsonl); rerunning resumes.
    #[arg(long)]
    run_dir: Option<PathBuf>,
    /// Take only shard I of N of the issues (deterministic by issue id), e.g. --shard 2/8.
    #[arg(long)]
    shard: Option<dei::rank::run::Shard>,
    /// With --run-dir: run issues recorded as errors again (e.g. after adding a repository).
    #[arg(long)]
    retry_errors: bool,
    /// No progress bar (it is only drawn on a terminal anyway).
    #[arg(long)]
    no_progress: bool,
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long)]
    tasks: Option<PathBuf>,
    #[command(flatten)]
    text: IssueTextArgs,
    #[command(flatten)]
    place: RepoArgs,
    /// Count only patches `git apply` would accept as applying.
    #[arg(long)]
    strict: bool,
    /// Token budget for the context shown to reviewers.
    #[arg(long, default_value_t = 4000)]
    context_tokens: usize,
    /// Largest patch (bytes) a candidate may have; longer ones get an error and are not rebuilt.
    #[arg(long, default_value_t = dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES)]
    max_patch_bytes: usize,
    /// Write the machine-readable result to this file ("-" for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Offline committee weights: default (hand-set), fitted, track-record (shipped, fitted on
    /// the fit half of SWE-bench Lite), or a JSON file.
    #[arg(long, value_name = "NAME|FILE")]
    offline_weights: Option<String>,
    #[command(flatten)]
    llm: dei::llm::config::LlmArgs,
}

/// `--agent-name` (`dei rank`, `dei eval`).
#[derive(Args)]
struct AgentNameArgs {
    /// Name an agent explicitly: SOURCE is a predictions file or patch folder (as given) or the
    /// name dei derives (the run folder or file name). Repeatable.
    #[arg(long = "agent-name", value_name = "SOURCE=NAME")]
    agent_name: Vec<String>,
}

impl AgentNameArgs {
    fn naming(&self) -> anyhow::Result<dei::candidates::Naming> {
        dei::candidates::Naming::parse(&self.agent_name)
    }
}

/// The LLM committee when one is configured, else the offline committee (said in one line).
/// The committee, and the localization re-ranker `--llm-locate` asks for (the LLM committee's
/// model).
type CommitteeAndRelocator = (
    Box<dyn dei::review::Committee>,
    Option<std::sync::Arc<dei::localize::rerank::Relocator>>,
);

fn committee(
    llm: &dei::llm::config::LlmArgs,
    offline_weights: Option<&str>,
) -> anyhow::Result<CommitteeAndRelocator> {
    Ok(match dei::review::llm::LlmCommittee::from_args(llm)? {
        Some(llm) => {
            let relocator = llm.relocator().map(std::sync::Arc::new);
            (Box::new(llm), relocator)
        }
        None => {
            eprintln!("note: no LLM configured; using the offline committee (agreement between candidates and static checks)");
            let weights = match offline_weights {
                Some(spec) => dei::review::offline::weights::load(spec)?,
                None => Default::default(),
            };
            (Box::new(Offline::new(weights)), None)
        }
    })
}

fn rank(mut args: RankArgs) -> anyhow::Result<()> {
    if args.all || args.issue.len() > 1 || args.run_dir.is_some() || args.shard.is_some() {
        return rank_many(args);
    }
    let Some(issue) = issue_source(args.issue.pop(), args.tasks, args.text) else {
        anyhow::bail!("say which issue to rank: --issue ID --tasks FILE, or --issue-file FILE --repo PATH --commit SHA");
    };
    let req = RankRequest {
        candidates: args.candidates,
        issue,
        repo: args.place.repo,
        repos: args.place.repos,
        strict: args.strict,
        context_tokens: args.context_tokens,
        max_patch_bytes: args.max_patch_bytes,
        relocator: None,
        naming: args.names.naming()?,
    };
    check_outputs(&[args.json.as_deref()])?;
    let (committee, relocator) = committee(&args.llm, args.offline_weights.as_deref())?;
    let req = dei::rank::pipeline::RankRequest { relocator, ..req };
    let result = dei::rank::pipeline::rank(&req, committee.as_ref())?;
    emit(
        args.json.as_deref(),
        || dei::rank::report::json(&result),
        || dei::rank::report::table(&result, terminal_width()),
    )?;
    if let Some(why) = result.unreviewed_reason() {
        anyhow::bail!(
            "{}: not reviewed: {why}; no candidate was picked",
            result.instance_id
        );
    }
    Ok(())
}

/// The width to fit tables to: `COLUMNS` when set, else the terminal's; `None` when
/// stdout is not a terminal (a file or pipe gets every line in full).
fn terminal_width() -> Option<usize> {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
    {
        return Some(w);
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| cols as usize)
}

/// Every output file must be writable before any work starts: its folder exists, and it is
/// not itself a folder (`-` is stdout).
fn check_outputs(paths: &[Option<&std::path::Path>]) -> anyhow::Result<()> {
    for p in paths.iter().flatten() {
        if p.as_os_str() == "-" {
            continue;
        }
        if p.is_dir() {
            anyhow::bail!(
                "cannot write {}: it is a folder\n  hint: name a file, e.g. {}",
                p.display(),
                p.join("result.json").display()
            );
        }
        let parent = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            anyhow::bail!(
                "cannot write {}: folder {} does not exist\n  hint: create it first (mkdir -p '{}'), or write elsewhere; nothing was run",
                p.display(),
                parent.display(),
                parent.display()
            );
        }
    }
    Ok(())
}

#[derive(Args)]
struct EvalArgs {
    /// Candidates, as for `dei rank` (their `resolved` fields are labels).
    candidates: Vec<PathBuf>,
    #[command(flatten)]
    names: AgentNameArgs,
    /// Resolved labels: results.json/report.json, a runs map, a 0/1 matrix CSV, or rows; AGENT=FILE names the agent.
    #[arg(long = "labels", value_name = "[AGENT=]FILE")]
    labels: Vec<String>,
    /// The instance universe: SWE-bench task records or a list of ids (default: every instance named in the inputs).
    #[arg(long)]
    tasks: Option<PathBuf>,
    /// Agents to evaluate, in this order (comma-separated); default: all, in natural order.
    #[arg(long, value_delimiter = ',')]
    agents: Option<Vec<String>>,
    /// The committee's selection: a `dei rank --all --run-dir` folder (or its journal.jsonl), `dei rank --json` output (one, a list, or JSONL), or {instance_id, agent, score} rows/CSV.
    #[arg(long)]
    scores: Option<PathBuf>,
    /// Report n@k for a baseline instead of a selection: random (equals Average@k) or random-nonempty.
    #[arg(long, conflicts_with = "scores")]
    baseline: Option<dei::metrics::table::Baseline>,
    /// Keep only instances the committee ranked (one whose candidates all went unscored counts, with no pick).
    #[arg(long, requires = "scores")]
    scored_only: bool,
    /// Orders for the curves: given, natural (order of generation), random (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "given,random")]
    order: Vec<dei::metrics::orders::OrderKind>,
    /// Random orders to average over.
    #[arg(long, default_value_t = 100)]
    shuffles: usize,
    /// Seed for random orders and the bootstrap.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// n of n@k.
    #[arg(long, default_value_t = 1)]
    top_n: usize,
    /// Bootstrap resamples over instances (0: no intervals).
    #[arg(long, default_value_t = 1000)]
    bootstrap: usize,
    /// Coverage of the bootstrap intervals.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Write the machine-readable report to this file ("-" for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a self-contained HTML report with plots to this file.
    #[arg(long)]
    html: Option<PathBuf>,
}

fn eval(args: EvalArgs) -> anyhow::Result<()> {
    use dei::metrics::{bootstrap::Bootstrap, eval, html, text};
    check_outputs(&[args.json.as_deref(), args.html.as_deref()])?;
    let req = eval::EvalRequest {
        candidates: args.candidates,
        labels: args.labels,
        tasks: args.tasks,
        agents: args.agents,
        scores: args.scores,
        naming: args.names.naming()?,
        baseline: args.baseline,
        scored_only: args.scored_only,
        options: eval::Options {
            orders: args.order,
            shuffles: args.shuffles,
            seed: args.seed,
            top_n: args.top_n,
            bootstrap: Bootstrap {
                resamples: args.bootstrap,
                seed: args.seed,
                level: args.confidence,
            },
        },
    };
    let report = eval::run(&req)?;
    let write = |p: &std::path::Path, s: String| {
        std::fs::write(p, s).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))
    };
    if let Some(p) = args.html.as_deref() {
        write(p, html::report(&report))?;
    }
    emit(
        args.json.as_deref(),
        || Ok(serde_json::to_string_pretty(&report)?),
        || text::table(&report),
    )
}

fn rank_many(args: RankArgs) -> anyhow::Result<()> {
    let Some(tasks) = args.tasks else {
        anyhow::bail!("ranking many issues needs --tasks FILE (SWE-bench task records)");
    };
    let Some(run_dir) = args.run_dir else {
        anyhow::bail!("ranking many issues needs --run-dir DIR: results stream there, and rerunning the same command resumes");
    };
    if args.text.issue_file.is_some() {
        anyhow::bail!(
            "--issue-file ranks one plain-text issue; drop --run-dir/--shard/--all to use it"
        );
    }
    let selection = if args.all {
        dei::model::task::Selection::All
    } else {
        dei::model::task::Selection::Ids(args.issue)
    };
    if matches!(&selection, dei::model::task::Selection::Ids(ids) if ids.is_empty()) {
        anyhow::bail!("say which issues to rank: --all, or --issue ID (repeatable)");
    }
    check_outputs(&[args.json.as_deref()])?;
    let req = dei::rank::run::RunRequest {
        candidates: args.candidates,
        naming: args.names.naming()?,
        tasks,
        selection,
        repo: args.place.repo,
        repos: args.place.repos,
        strict: args.strict,
        context_tokens: args.context_tokens,
        max_patch_bytes: args.max_patch_bytes,
        run_dir,
        shard: args.shard,
        retry_errors: args.retry_errors,
        stop: Some(cli::stop_on_ctrl_c()),
        relocator: None,
    };
    let (committee, relocator) = committee(&args.llm, args.offline_weights.as_deref())?;
    let req = dei::rank::run::RunRequest { relocator, ..req };
    let report = dei::rank::run::run(&req, committee.as_ref())?;
    for line in dei::candidates::problem_lines(&report.problems, 10) {
        eprintln!("input problem: {line}");
    }
    if report.summary.selected == 0 && args.all {
        anyhow::bail!(
            "no candidates found in {}{}\n  hint: pass SWE-bench prediction files (.json/.jsonl records with instance_id and model_patch) or folders of <agent>/<instance_id>.diff files",
            req.candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if report.problems.is_empty() {
                String::new()
            } else {
                format!(" ({} input problem(s) above)", report.problems.len())
            }
        );
    }
    if report.torn_bytes > 0 {
        eprintln!(
            "note: cut a torn last journal line ({} bytes) left by an interrupted run",
            report.torn_bytes
        );
    }
    eprintln!(
        "{} issues run now, {} already in {}",
        report.ran,
        report.skipped,
        req.run_dir.display()
    );
    write_summary(&report.summary, args.json.as_deref())?;
    if report.interrupted {
        anyhow::bail!("stopped before every issue finished; rerun the same command to resume");
    }
    failed_issues(&report.summary)
}

/// Exit non-zero when any issue was not ranked, naming them by kind.
fn failed_issues(summary: &dei::rank::run::Summary) -> anyhow::Result<()> {
    let failed: usize = summary.errors.values().sum();
    if failed == 0 {
        return Ok(());
    }
    let kinds: Vec<String> = summary
        .errors
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let mut msg = format!(
        "{failed} of {} issues were not ranked ({})",
        summary.selected,
        kinds.join(", ")
    );
    let unreviewed: Vec<&str> = summary
        .rows
        .iter()
        .filter(|r| r.status == "unreviewed")
        .map(|r| r.instance_id.as_str())
        .collect();
    if !unreviewed.is_empty() {
        msg.push_str(&format!(
            "\n  not reviewed: {}{}",
            unreviewed
                .iter()
                .take(20)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            if unreviewed.len() > 20 { ", …" } else { "" }
        ));
    }
    msg.push_str("\n  hint: fix the cause (see the summary above), then rerun with --retry-errors");
    anyhow::bail!(msg)
}

fn write_summary(
    summary: &dei::rank::run::Summary,
    json: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    emit(
        json,
        || Ok(serde_json::to_string_pretty(summary)?),
        || summary.table(50),
    )
}

/// Print `table`, and write the JSON to `json`; `-` prints the JSON on stdout instead.
fn emit(
    json: Option<&std::path::Path>,
    to_json: impl FnOnce() -> anyhow::Result<String>,
    table: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    match json {
        Some(p) if p.as_os_str() == "-" => println!("{}", to_json()?),
        Some(p) => {
            std::fs::write(p, to_json()?)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
            print!("{}", table());
        }
        None => print!("{}", table()),
    }
    Ok(())
}

fn merge(args: MergeArgs) -> anyhow::Result<()> {
    check_outputs(&[args.json.as_deref()])?;
    let merged = dei::rank::run::merge(&args.run_dirs)?;
    for w in &merged.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(out) = &args.out {
        dei::rank::run::summary::write_merged(&merged, &args.run_dirs[0], out)?;
    }
    write_summary(&merged.summary, args.json.as_deref())?;
    failed_issues(&merged.summary)
}

fn locate(a: LocateArgs) -> anyhow::Result<()> {
    check_outputs(&[a.json.as_deref()])?;
    let Some(issue) = issue_source(a.issue, a.tasks, a.text) else {
        anyhow::bail!(
            "which issue? pass --tasks FILE --issue ID, or --issue-file FILE --commit SHA --repo PATH"
        );
    };
    let task = issue.load()?;
    let repo_path = dei::model::repo::locate(
        a.place.repo.as_deref(),
        a.place.repos.as_deref(),
        &task.repo,
    )?;
    let engine = a.llm.engine()?;
    let prompts = dei::llm::prompts::Prompts::load(a.llm.prompt_dir.as_deref())?;
    let model = engine
        .as_ref()
        .map(|e| dei::llm::model::EngineModel::new(std::sync::Arc::clone(e), "locate"));
    let with = model.as_ref().map(|m| dei::localize::located::WithModel {
        model: m,
        prompts: &prompts,
        label: a.llm.llm.clone().unwrap_or_default(),
    });
    let located = dei::localize::located::locate_issue(&task, &repo_path, a.top, with.as_ref())?;
    if let Some(e) = &engine {
        eprintln!("{}", dei::generate::run::usage_line(&e.totals()));
    }
    emit(
        a.json.as_deref(),
        || Ok(serde_json::to_string_pretty(&located)? + "\n"),
        || dei::localize::located::render(&located),
    )
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = !matches!(&cli.command, Command::Rank(a) if a.no_progress);
    dei::model::notify::set_reporter(Box::new(cli::progress::Terminal::new(progress)));
    let result = match cli.command {
        Command::Rank(a) => rank(*a),
        Command::Generate(a) => generate(*a),
        Command::Eval(a) => eval(a),
        Command::Bench(b) => dei::bench::run(b),
        Command::Merge(a) => merge(a),
        Command::Locate(a) => locate(*a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
