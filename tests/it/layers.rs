//! The source tree shows the layers, and no module imports one above it. Each top-level
//! module of `src/` has a floor; a `crate::X` path in a module must name a lower floor (or its
//! own module). Measurement code is not in `src/` at all: it lives in the workspace member
//! `crates/dei-bench`, which depends on this crate (never the other way round).

use crate::support::common;

use common::root;
use std::collections::BTreeMap;
use std::path::Path;

/// Floors, bottom up; modules on one floor do not import each other.
const FLOORS: &[&[&str]] = &[
    &["model"],
    &["candidates", "patch", "syntax", "llm"],
    &["localize"],
    &["context"],
    &["exec"],
    &["review"],
    &["rank", "generate"],
    &["metrics"],
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `crate::name` paths in code (comments left out).
fn crate_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        let mut rest = t;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
            rest = after;
        }
    }
    out
}

#[test]
fn no_module_imports_a_module_above_it() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut upward: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut unplaced = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" || top == "cli" {
            continue;
        }
        let Some(mine) = floor_of(&top) else {
            unplaced.push(top);
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for name in crate_paths(&text) {
            if name == top {
                continue;
            }
            if let Some(theirs) = floor_of(&name) {
                if theirs >= mine {
                    upward
                        .entry(rel.display().to_string())
                        .or_default()
                        .push(name);
                }
            }
        }
    }
    unplaced.sort();
    unplaced.dedup();
    assert!(unplaced.is_empty(), "modules with no floor: {unplaced:?}");
    assert!(
        upward.is_empty(),
        "imports of a module on the same or a higher floor: {upward:?}"
    );
}

#[test]
fn the_check_sees_an_upward_import() {
    assert_eq!(
        crate_paths("use crate::rank::pipeline;\n// crate::review is a comment\nlet x = crate::model::Task::default();"),
        ["rank", "model"]
    );
    assert!(floor_of("rank") > floor_of("review"));
}

/// The lines of `text` that use clap (`clap::…`, `use clap`, a clap derive or attribute),
/// comments left out.
fn clap_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            !t.starts_with("//")
                && (t.contains("clap::")
                    || t.starts_with("use clap")
                    || t.starts_with("#[arg(")
                    || t.starts_with("#[command(")
                    || t.starts_with("#[clap("))
        })
        .map(|(n, _)| n + 1)
        .collect()
}

/// The command line is the only home of clap: every clap struct lives in `src/cli/` (or
/// `src/main.rs`), and the library takes plain settings (`dei::llm::config::LlmOptions`).
#[test]
fn only_the_command_line_uses_clap() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        if rel.starts_with("cli") || rel == Path::new("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for n in clap_lines(&text) {
            found.push(format!("src/{}:{n}", rel.display()));
        }
    }
    assert!(
        found.is_empty(),
        "clap outside src/cli/ (move the flags there and hand the library plain settings): {found:?}"
    );
    assert!(
        !clap_lines(&std::fs::read_to_string(src.join("cli/llm.rs")).unwrap()).is_empty(),
        "the check sees the command line's own clap structs"
    );
}

#[test]
fn the_clap_check_sees_a_derive() {
    assert_eq!(
        clap_lines("// clap::Args in a comment\n#[derive(Debug, clap::Args)]\nstruct A {\n    #[arg(long)]\n    x: u32,\n}\nuse clap::Parser;"),
        [2, 4, 7]
    );
}
