//! The `dei` command line: a thin clap front over the library.

mod cli;

use clap::Parser;
use cli::args::{Cli, Command};
use cli::commands;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let progress = !matches!(&cli.command, Command::Rank(a) if a.no_progress);
    dei::model::notify::set_reporter(Box::new(cli::progress::Terminal::new(progress)));
    let result = match cli.command {
        Command::Rank(a) => commands::rank(*a),
        Command::Generate(a) => commands::generate(*a),
        Command::Eval(a) => commands::eval(a),
        Command::Merge(a) => commands::merge(a),
        Command::Locate(a) => commands::locate(*a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
