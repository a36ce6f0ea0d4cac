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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Rank(a) => rank(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
