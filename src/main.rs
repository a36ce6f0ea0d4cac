//! The `dei` command line: a thin clap front over the library.

mod cli;

use clap::Parser;
use cli::args::{Cli, Command};
use cli::commands;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `dei rank … | head` ends quietly, as a Unix tool does, when the reader goes away: Rust
    // ignores SIGPIPE, so the next print to the closed pipe would panic (exit status 101).
    // `dei` writes to no other pipe (its sandboxes' output pipes are read, never written), and
    // sockets are written with MSG_NOSIGNAL. A run stopped this way resumes like kill -9.
    #[cfg(unix)]
    // SAFETY: called first, before any thread starts; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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
            if e.downcast_ref::<cli::Interrupted>().is_some() {
                ExitCode::from(130)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
