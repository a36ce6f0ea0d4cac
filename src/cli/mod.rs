//! The command line: its flags ([`args`], the LLM flags in [`llm`]), what each command does
//! ([`commands`]), the terminal reporter ([`progress`]) and the Ctrl-C watcher. Every clap
//! struct lives here; the library has none.

pub mod args;
pub mod commands;
pub mod llm;
pub mod progress;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Stop starting new issues on the first Ctrl-C (in-flight ones finish and are recorded);
/// quit at once on the second, or on SIGTERM.
pub fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    watch_signals(
        move || {
            if f.swap(true, Ordering::SeqCst) {
                quit_now("interrupted again", 130, RESUME_RUN);
            }
            eprintln!("\ninterrupted: finishing the issues in flight (Ctrl-C again to quit now)");
        },
        RESUME_RUN,
    );
    flag
}

/// For one issue's `--exec` run, which cannot stop part-way: Ctrl-C or SIGTERM quits at once,
/// removing the sandbox folders of the runs in flight.
pub fn quit_on_signal() {
    watch_signals(|| quit_now("interrupted", 130, RESUME_ONE), RESUME_ONE);
}

/// Call `on_ctrl_c` at each Ctrl-C; quit at once on SIGTERM (`timeout`, a service manager, a
/// cancelled CI job), like a second Ctrl-C.
fn watch_signals(on_ctrl_c: impl Fn() + Send + 'static, resume: &'static str) {
    let spawned = std::thread::Builder::new()
        .name("dei-signals".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                #[cfg(unix)]
                tokio::spawn(async {
                    use tokio::signal::unix::{signal, SignalKind};
                    if let Ok(mut term) = signal(SignalKind::terminate()) {
                        if term.recv().await.is_some() {
                            quit_now("terminated", 143, resume);
                        }
                    }
                });
                while tokio::signal::ctrl_c().await.is_ok() {
                    on_ctrl_c();
                }
            });
        });
    if spawned.is_err() {
        eprintln!("warning: cannot watch for Ctrl-C; an interrupt stops the run at once (the journal stays consistent)");
    }
}

/// What a run of many issues keeps when it quits at once: every journal line is written whole.
const RESUME_RUN: &str = "the journal is consistent, rerun the same command to resume";
/// What one issue's run keeps: the sandbox runs that finished are in the run cache.
const RESUME_ONE: &str =
    "the sandbox runs that finished are cached, rerun the same command to go on";

/// Quit at once with `code`, saying what is kept; the sandbox folders of the runs in flight
/// are removed, since their guards will not run.
fn quit_now(why: &str, code: i32, resume: &str) -> ! {
    dei::exec::sandbox::remove_own_folders();
    dei::exec::container::remove_own_containers();
    eprintln!("\n{why}: quitting now; {resume}");
    std::process::exit(code);
}

/// A run stopped by Ctrl-C before every issue finished: it exits 130, as a shell reports an
/// interrupted command (1 means a failure the run itself found).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "interrupted: stopped before every issue finished; rerun the same command to resume",
        )
    }
}

impl std::error::Error for Interrupted {}
