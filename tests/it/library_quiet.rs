//! The library never prints: notices and warnings go to the reporter a program installs
//! (`dei::model::notify`); the `dei` command installs one that draws on stderr.

use crate::support::common;

use common::*;
use dei::model::notify::{self, Event, Reporter};
use std::sync::Mutex;

#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

impl Reporter for Collect {
    fn event(&self, e: &Event) {
        let line = match e {
            Event::Notice(m) => format!("notice {m}"),
            Event::Warning(m) => format!("warning {m}"),
            Event::RunStarted { total, already } => format!("started {total} {already}"),
            Event::IssueFinished { ok, candidates } => format!("issue {ok} {candidates}"),
            Event::Live(s) => format!("live {s}"),
            Event::RunFinished => "finished".into(),
        };
        self.0.lock().unwrap().push(line);
    }
}

#[test]
fn a_run_reports_through_the_installed_reporter() {
    let collect: &'static Collect = Box::leak(Box::default());
    struct Forward(&'static Collect);
    impl Reporter for Forward {
        fn event(&self, e: &Event) {
            self.0.event(e)
        }
    }
    assert!(notify::set_reporter(Box::new(Forward(collect))));
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    // A journal with a line that is not an outcome: the run warns and goes on.
    std::fs::write(run_dir.join("journal.jsonl"), "not json\n").unwrap();
    let req = dei::rank::run::RunRequest {
        candidates: vec![root().join("examples/candidates")],
        tasks: root().join("examples/tasks.jsonl"),
        selection: dei::model::task::Selection::All,
        repo: Some(example_repo()),
        repos: None,
        strict: false,
        context_tokens: 4000,
        max_patch_bytes: dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES,
        run_dir: run_dir.clone(),
        shard: None,
        retry_errors: false,
        stop: None,
        relocator: None,
        exec: None,
        naming: Default::default(),
    };
    let report = dei::rank::run::run(&req, &dei::review::offline::Offline::default()).unwrap();
    assert_eq!(report.ran, 1);
    let seen = collect.0.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|l| l.starts_with("warning ") && l.contains("(ignored)")),
        "{seen:?}"
    );
    assert!(seen.contains(&"started 1 0".to_string()), "{seen:?}");
    assert!(seen.contains(&"issue true 6".to_string()), "{seen:?}");
    // Other tests of this binary may report at the same time: "finished" comes after the start.
    let started = seen.iter().position(|l| l == "started 1 0").unwrap();
    assert!(seen[started..].iter().any(|l| l == "finished"), "{seen:?}");
}

#[test]
fn no_print_in_library_code() {
    // Library modules report through `notify`; only the command line prints (the measurement
    // code, which prints its tables, is the separate crate crates/dei-bench).
    let allowed = |p: &std::path::Path| {
        let s = p.to_string_lossy();
        s.ends_with("src/main.rs") || s.contains("src/cli/")
    };
    let mut found = Vec::new();
    let mut stack = vec![root().join("src")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if allowed(&p) {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            // Code after `#[cfg(test)]` is test code.
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            for (i, line) in code.lines().enumerate() {
                let t = line.trim_start();
                if t.starts_with("//") {
                    continue;
                }
                if ["println!", "eprintln!", "print!(", "eprint!("]
                    .iter()
                    .any(|m| t.contains(m))
                {
                    found.push(format!("{}:{}: {t}", p.display(), i + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "library code prints:\n{}",
        found.join("\n")
    );
}
