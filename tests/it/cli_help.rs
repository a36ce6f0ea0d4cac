//! Every command's `--help`: its flags grouped under the same headings, in one order, none
//! left under clap's plain "Options" but `--help`/`--version`; what the timeouts cover; and the
//! renamed flags' old spellings, hidden from the help, still parsing.

use crate::support::common::*;

/// The headings, in the order every command shows the ones it has (src/cli/args.rs, `heading`).
const ORDER: [&str; 10] = [
    "Input",
    "Many issues",
    "Patch and context",
    "Generation",
    "Committee",
    "LLM",
    "LLM committee",
    "Execution (runs candidate code in a sandbox)",
    "Metrics",
    "Output",
];

/// One entry of a help section: the flag (`--tasks`) or argument (`<CANDIDATES>`), and its
/// whole line with the help text, wrapped or not.
struct Item {
    name: String,
    text: String,
}

/// `dei ARGS --help`, cut into its sections (a line `Heading:` at the left margin opens one).
fn sections(args: &[&str]) -> Vec<(String, Vec<Item>)> {
    let mut all = args.to_vec();
    all.push("--help");
    let o = dei(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = stdout(&o);
    let mut out: Vec<(String, Vec<Item>)> = Vec::new();
    for line in help.lines() {
        let indent = line.len() - line.trim_start().len();
        if indent == 0 {
            if let Some(h) = line.strip_suffix(':') {
                out.push((h.to_string(), Vec::new()));
            }
            continue;
        }
        let Some((_, items)) = out.last_mut() else {
            continue;
        };
        let t = line.trim_start();
        // An entry starts within six columns (`  -h, --help`, `      --tasks`, `  <CANDIDATES>`);
        // a help text put on the lines below it is indented further.
        if indent <= 6 {
            let t = t.strip_prefix("-h, ").unwrap_or(t);
            let t = t.strip_prefix("-V, ").unwrap_or(t);
            let word = t.split_whitespace().next().unwrap_or_default();
            let name = if word.starts_with("--") {
                word.split(['[', '=']).next().unwrap()
            } else {
                word
            };
            items.push(Item {
                name: name.to_string(),
                text: line.to_string(),
            });
        } else if let Some(last) = items.last_mut() {
            last.text.push(' ');
            last.text.push_str(t);
        }
    }
    out
}

/// The heading `name` sits under in `secs`, and its help text.
fn find<'a>(secs: &'a [(String, Vec<Item>)], name: &str) -> Option<(&'a str, &'a str)> {
    secs.iter().find_map(|(h, items)| {
        items
            .iter()
            .find(|i| i.name == name)
            .map(|i| (h.as_str(), i.text.as_str()))
    })
}

fn headings(secs: &[(String, Vec<Item>)]) -> Vec<&str> {
    secs.iter().map(|(h, _)| h.as_str()).collect()
}

#[test]
fn every_command_groups_its_flags_under_the_same_headings_in_one_order() {
    for (cmd, expected) in [
        (
            "rank",
            &[
                "Input",
                "Many issues",
                "Patch and context",
                "Committee",
                "LLM",
                "LLM committee",
                "Execution (runs candidate code in a sandbox)",
                "Output",
            ][..],
        ),
        (
            "generate",
            &["Input", "Many issues", "Generation", "LLM", "Output"][..],
        ),
        ("eval", &["Input", "Committee", "Metrics", "Output"][..]),
        ("merge", &["Input", "Output"][..]),
        ("locate", &["Input", "LLM", "Output"][..]),
    ] {
        let secs = sections(&[cmd]);
        let all = headings(&secs);
        // Only --help under the plain heading, first; no bare "Arguments" either.
        assert_eq!(all.first(), Some(&"Options"), "dei {cmd}: {all:?}");
        let plain: Vec<&str> = secs[0].1.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(plain, ["--help"], "dei {cmd}: flags under a bare Options");
        assert_eq!(&all[1..], expected, "dei {cmd}: headings");
        // The same relative order in every command.
        let at: Vec<usize> = all[1..]
            .iter()
            .map(|h| {
                ORDER
                    .iter()
                    .position(|o| o == h)
                    .unwrap_or_else(|| panic!("dei {cmd}: heading {h:?} is none of {ORDER:?}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "dei {cmd}: {all:?}");
        for (_, items) in &secs {
            assert!(!items.is_empty(), "dei {cmd}: an empty section");
        }

        // What the user is doing decides the heading, the same in every command.
        for (flag, heading) in [
            ("<CANDIDATES>...", "Input"),
            ("[CANDIDATES]...", "Input"),
            ("<RUN_DIR>...", "Input"),
            ("--tasks", "Input"),
            ("--issue", "Input"),
            ("--instance-ids", "Input"),
            ("--all", "Input"),
            ("--agent-name", "Input"),
            ("--repo", "Input"),
            ("--repos", "Input"),
            ("--issue-file", "Input"),
            ("--commit", "Input"),
            ("--run-dir", "Many issues"),
            ("--shard", "Many issues"),
            ("--retry-errors", "Many issues"),
            ("--no-progress", "Many issues"),
            ("--jobs", "Many issues"),
            ("--strict", "Patch and context"),
            ("--context-tokens", "Patch and context"),
            ("--max-patch-bytes", "Patch and context"),
            ("--offline-weights", "Committee"),
            ("--scores", "Committee"),
            ("--llm", "LLM"),
            ("--timeout", "LLM"),
            ("--selector", "LLM committee"),
            ("--exec", "Execution (runs candidate code in a sandbox)"),
            (
                "--exec-timeout",
                "Execution (runs candidate code in a sandbox)",
            ),
            ("--top-n", "Metrics"),
            ("--json", "Output"),
            ("--html", "Output"),
            ("--predictions", "Output"),
            ("--predictions-name", "Output"),
            ("--out", "Output"),
            ("--out-dir", "Output"),
            ("--show", "Output"),
        ] {
            if let Some((h, _)) = find(&secs, flag) {
                assert_eq!(h, heading, "dei {cmd} {flag}");
            }
        }
    }
    // The top level keeps --help and --version, with nothing else, under Options.
    let top = sections(&[]);
    let (_, items) = top.iter().find(|(h, _)| h == "Options").unwrap();
    let names: Vec<&str> = items.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["--help", "--version"]);
}

#[test]
fn help_says_what_each_timeout_and_test_command_covers() {
    let rank = sections(&["rank"]);
    let generate = sections(&["generate"]);
    let text = |secs: &[(String, Vec<Item>)], flag: &str| {
        find(secs, flag)
            .unwrap_or_else(|| panic!("{flag} is not listed"))
            .1
            .to_string()
    };
    for (secs, flag, covers) in [
        (&rank, "--timeout", "model call"),
        (&generate, "--timeout", "model call"),
        (&rank, "--exec-timeout", "sandbox test run"),
        (&generate, "--test-cmd-timeout", "run of --test-cmd"),
    ] {
        let t = text(secs, flag);
        assert!(t.contains("<SECS>") && t.contains("Seconds"), "{t}");
        assert!(t.contains(covers), "{t}");
    }
    // The two --test-cmd flags are different things, and each says so.
    assert!(
        text(&rank, "--test-cmd").contains("Not `dei generate --test-cmd`"),
        "{}",
        text(&rank, "--test-cmd")
    );
    assert!(
        text(&generate, "--test-cmd").contains("Not `dei rank --test-cmd`"),
        "{}",
        text(&generate, "--test-cmd")
    );
    // --samples: a count in both, the generator's default read as one per temperature.
    let samples = text(&generate, "--samples");
    assert!(
        samples.contains("[default: one per temperature") && !samples.contains("[default: 0]"),
        "{samples}"
    );
    assert!(
        text(&rank, "--samples").contains("[default: 1]"),
        "{}",
        text(&rank, "--samples")
    );
    // n of n@k, and how many places locate shows, are two names.
    assert!(text(&sections(&["eval"]), "--top-n").contains("n of n@k"));
    assert!(text(&sections(&["locate"]), "--show").contains("to show"));
}

#[test]
fn renamed_flags_keep_their_old_spelling_as_hidden_aliases() {
    // Hidden: the help names only the new spelling.
    for (cmd, old, new) in [
        ("locate", "--top", "--show"),
        ("generate", "--test-timeout", "--test-cmd-timeout"),
        ("merge", "--out", "--out-dir"),
    ] {
        let secs = sections(&[cmd]);
        assert!(find(&secs, new).is_some(), "dei {cmd} lists {new}");
        assert!(find(&secs, old).is_none(), "dei {cmd} lists {old}");
    }

    // dei locate --top N: as many files as --show N.
    let repo = example_repo();
    for (flag, n) in [("--top", 1), ("--show", 2)] {
        let o = dei(&[
            "locate",
            "--tasks",
            "examples/tasks.jsonl",
            "--issue",
            "example__textkit-1",
            "--repo",
            path_str(&repo),
            flag,
            &n.to_string(),
            "--json",
            "-",
        ]);
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["files"].as_array().unwrap().len(), n, "{flag} {n}");
    }

    // dei merge A --out B reaches the merge, which names the folder that is no run.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for flag in ["--out", "--out-dir"] {
        let o = dei(&[
            "merge",
            path_str(&missing),
            flag,
            path_str(&dir.path().join("joined")),
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{flag}: {err}");
        assert!(!err.contains("unexpected argument"), "{flag}: {err}");
        assert!(err.contains("has no run.json"), "{flag}: {err}");
    }

    // dei generate --test-timeout: the same setting as --test-cmd-timeout, checked by it.
    let out = dir.path().join("gen.jsonl");
    for flag in ["--test-timeout", "--test-cmd-timeout"] {
        let args = |secs: &'static str| {
            [
                "generate",
                "--tasks",
                "examples/tasks.jsonl",
                "--issue",
                "example__textkit-1",
                "--out",
                path_str(&out),
                flag,
                secs,
            ]
        };
        let o = dei(&args("0"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} 0: {err}");
        assert!(
            err.contains("for '--test-cmd-timeout <SECS>': must be a positive number of seconds"),
            "{flag} 0: {err}"
        );
        // A good value parses: the command itself stops (no model is configured).
        let o = dei(&args("5"));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{flag} 5: {err}");
        assert!(!err.contains("unexpected argument"), "{flag} 5: {err}");
    }
    assert!(!out.exists());
}
