//! The `dei-bench` command: one subcommand per measurement (see the library's docs).

use clap::Parser;
use dei::model::notify::{Event, Reporter};
use std::process::ExitCode;

/// Measure dei's stages on SWE-bench Lite (developer tooling; figures go to docs/).
#[derive(Parser)]
#[command(name = "dei-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: dei_bench::cli::BenchCommand,
}

/// The library's notices and warnings, one line each on stderr.
struct Stderr;

impl Reporter for Stderr {
    fn event(&self, event: &Event) {
        match event {
            Event::Notice(m) => eprintln!("note: {m}"),
            Event::Warning(m) => eprintln!("warning: {m}"),
            _ => {}
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    dei::model::notify::set_reporter(Box::new(Stderr));
    match dei_bench::cli::run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
