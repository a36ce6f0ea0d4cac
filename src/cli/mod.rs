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
/// quit at once on the second.
pub fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let spawned = std::thread::Builder::new().name("dei-ctrl-c".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if f.swap(true, Ordering::SeqCst) {
                    eprintln!("\ninterrupted again: quitting now; the journal is consistent, rerun the same command to resume");
                    std::process::exit(130);
                }
                eprintln!("\ninterrupted: finishing the issues in flight (Ctrl-C again to quit now)");
            }
        });
    });
    if spawned.is_err() {
        eprintln!("warning: cannot watch for Ctrl-C; an interrupt stops the run at once (the journal stays consistent)");
    }
    flag
}
