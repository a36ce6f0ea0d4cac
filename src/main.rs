//! The `dei` command line: a thin clap front over the library.

use clap::{Args, Parser, Subcommand};
use dei::pipeline::{IssueSource, RankRequest};
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
enum Command {
    /// Rank the candidate patches for one issue.
    Rank(RankArgs),
    /// Measure diversity (Union/Intersect/Average@k) and a selection (n@k) over many issues.
    Eval(EvalArgs),
    /// Measure stages on real data (developer tool).
    #[command(hide = true, subcommand)]
    Bench(dei::bench::BenchCommand),
}

#[derive(Args)]
struct RankArgs {
    /// Prediction files (.json/.jsonl) and/or folders of <agent>/<instance_id>.diff.
    #[arg(required = true)]
    candidates: Vec<PathBuf>,
    /// Issue id (SWE-bench instance_id) to rank; needs --tasks.
    #[arg(long, requires = "tasks")]
    issue: Option<String>,
    /// SWE-bench-style task records (JSON or JSONL).
    #[arg(long)]
    tasks: Option<PathBuf>,
    /// A plain-text issue; needs --repo and --commit.
    #[arg(long, conflicts_with = "issue", requires_all = ["repo", "commit"])]
    issue_file: Option<PathBuf>,
    /// Base commit for --issue-file.
    #[arg(long)]
    commit: Option<String>,
    /// The repository (a clone or bare git dir).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// A folder of repositories named owner__name.
    #[arg(long, env = "DEI_REPOS")]
    repos: Option<PathBuf>,
    /// Count only patches `git apply` would accept as applying.
    #[arg(long)]
    strict: bool,
    /// Token budget for the context shown to reviewers.
    #[arg(long, default_value_t = 4000)]
    context_tokens: usize,
    /// Write the machine-readable result to this file ("-" for stdout).
    #[arg(long)]
    json: Option<PathBuf>,
}

fn rank(args: RankArgs) -> anyhow::Result<()> {
    let issue = match (args.issue, args.issue_file) {
        (Some(id), None) => IssueSource::Tasks { file: args.tasks.expect("clap requires --tasks"), id },
        (None, Some(file)) => IssueSource::Text { file, commit: args.commit.expect("clap requires --commit") },
        _ => anyhow::bail!("say which issue to rank: --issue ID --tasks FILE, or --issue-file FILE --repo PATH --commit SHA"),
    };
    let req = RankRequest {
        candidates: args.candidates,
        issue,
        repo: args.repo,
        repos: args.repos,
        strict: args.strict,
        context_tokens: args.context_tokens,
    };
    eprintln!("note: no LLM configured; using the offline committee (agreement between candidates and static checks)");
    let committee = Offline::default();
    let result = dei::pipeline::rank(&req, &committee)?;
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{}", dei::report::json(&result)?),
        Some(p) => {
            std::fs::write(p, dei::report::json(&result)?)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
            print!("{}", dei::report::table(&result));
        }
        None => print!("{}", dei::report::table(&result)),
    }
    Ok(())
}

#[derive(Args)]
struct EvalArgs {
    /// Candidates, as for `dei rank` (their `resolved` fields are labels).
    candidates: Vec<PathBuf>,
    /// Resolved labels: results.json/report.json, a runs map, a 0/1 matrix CSV, or rows; AGENT=FILE names the agent.
    #[arg(long = "labels", value_name = "[AGENT=]FILE")]
    labels: Vec<String>,
    /// The instance universe: SWE-bench task records or a list of ids (default: every instance named in the inputs).
    #[arg(long)]
    tasks: Option<PathBuf>,
    /// Agents to evaluate, in this order (comma-separated); default: all, in natural order.
    #[arg(long, value_delimiter = ',')]
    agents: Option<Vec<String>>,
    /// The committee's selection: `dei rank --json` output (one, a list, or JSONL) or {instance_id, agent, score} rows/CSV.
    #[arg(long)]
    scores: Option<PathBuf>,
    /// Report n@k for a baseline instead of a selection: random (equals Average@k) or random-nonempty.
    #[arg(long, conflicts_with = "scores")]
    baseline: Option<dei::metrics::table::Baseline>,
    /// Keep only instances that have committee scores.
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
    let req = eval::EvalRequest {
        candidates: args.candidates,
        labels: args.labels,
        tasks: args.tasks,
        agents: args.agents,
        scores: args.scores,
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
    match args.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(&report)?),
        Some(p) => {
            write(p, serde_json::to_string_pretty(&report)?)?;
            print!("{}", text::table(&report));
        }
        None => print!("{}", text::table(&report)),
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Rank(a) => rank(a),
        Command::Eval(a) => eval(a),
        Command::Bench(b) => dei::bench::run(b),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
