//! The issue's reproduction, made runnable: the code an issue shows (fenced blocks, `>>>`
//! doctest sessions, IPython `In [n]:` sessions, indented snippets, and, when nothing else
//! is there, the statements of a traceback's top-level user frames) turned into one Python
//! script. Prompts and outputs are dropped, statements kept in order, imports the issue
//! implies added (names it uses but never binds that the repository's packages export, its
//! modules, conventional aliases such as `np`), and every top-level statement wrapped so the
//! script reports each exception (`[dei-repro] statement N raised T: msg`), goes on like a
//! REPL session, prints the values of bare expressions (a notebook cell's last one also through
//! the rich forms Jupyter asks for: `_repr_latex_`, `_repr_png_`, …), and ends with
//! `[dei-repro] first exception: T` or `[dei-repro] no exception`. See docs/execution.md.

mod data;
mod expected;
mod names;
mod project;
mod script;
#[cfg(test)]
mod tests;
mod text;

use crate::localize::search::FileIndex;
use crate::syntax::python;
use data::{companion_writer, data_files, names_literal, shown_before, writer};
pub use expected::{count_shown, expected_outputs, unshown_at_base};
pub use names::{implied_imports, RepoNames};
use names::{imports_for, unbound_names};
use project::{defines_tests, pylint_script, pytest_script, sphinx_script};
pub use project::{
    pylint_command, pytest_flags, pytest_project, sphinx_code_project, sphinx_markup_project,
    sphinx_project, ProjectFiles,
};
pub use script::{is_pinned, pinned, pinned_or_as_is};
use script::{wrap, Drawn, Wrapped};
use std::collections::BTreeSet;
pub use text::{block_code, blocks, issue_code, loose_code, Block, Source};
use text::{inline_expressions, issue_parts, joined, Part};

/// Whether the issue shows a value drawn by a pretty printer: a line that is not a prompt
/// holding the pieces such drawings are made of (box drawing, `─`, `╲╱`; the bracket pieces
/// `⎛`, `⎜`, `⎝`, …), as a session in `isympy` or after `init_printing()` shows its values.
fn shows_pretty_output(issue: &str) -> bool {
    let piece =
        |c: char| ('\u{239b}'..='\u{23af}').contains(&c) || ('\u{2500}'..='\u{257f}').contains(&c);
    unprompted_lines(issue).any(|t| t.chars().any(piece))
}

/// The issue's lines that are not a session's prompt lines (`>>>`, `In [n]:`, `...`), left
/// trimmed: where what a session printed, and prose, stand.
fn unprompted_lines(issue: &str) -> impl Iterator<Item = &str> {
    issue
        .lines()
        .map(str::trim_start)
        .filter(|t| !(t.starts_with(">>>") || t.starts_with("In [") || t.starts_with("...")))
}

/// LaTeX commands a rendered value's source is written with.
const LATEX_COMMANDS: [&str; 9] = [
    "\\left",
    "\\right",
    "\\ldots",
    "\\frac{",
    "\\operatorname{",
    "\\mathrm{",
    "\\begin{",
    "\\displaystyle",
    "\\cdot",
];

/// Whether the issue shows LaTeX its session rendered after `init_printing()`: the code calls
/// it and never `latex` itself (when it does, the script prints what it printed), and a line
/// that is not a prompt holds a LaTeX command ([`LATEX_COMMANDS`]), as a notebook renders
/// `\left\[0, 1, 4, 9, \ldots\right\]`; a value whose type has `_repr_latex_` shows it
/// through `_dei_display` already, but sympy 1.1's sequences have none.
fn shows_latex_output(issue: &str, code: &str) -> bool {
    code.contains("init_printing(")
        && !code.contains("latex(")
        && unprompted_lines(issue).any(|t| LATEX_COMMANDS.iter().any(|c| t.contains(c)))
}

/// A runnable reproduction.
#[derive(Debug, Clone, PartialEq)]
pub struct Reproduction {
    /// The script (run it with the repository's root as the working folder).
    pub script: String,
    /// The issue's code as extracted, before wrapping (imports added first).
    pub code: String,
    /// Top-level statements the script runs (1 for a tool run over the issue's project: a
    /// Sphinx build, a pylint command).
    pub statements: usize,
    /// Which of those statements (1…n) are imports, the ones added for names the issue
    /// implies among them.
    pub import_statements: Vec<usize>,
    /// Names the code uses but never binds or imports (none after a star import): a
    /// `NameError` for one of them is the code's own, not the library's.
    pub unbound: Vec<String>,
    /// Where the code came from (kind, issue line), in order.
    pub sources: Vec<(Source, usize)>,
    /// Imports added for names the issue uses but never imports.
    pub imports_added: Vec<String>,
}

/// Build the reproduction script for an issue; `None` when the issue shows no Python code.
/// In a Sphinx repository, an issue that shows a project (named files with an `index.rst`)
/// is reproduced by building it ([`sphinx_project`]).
pub fn reproduction(issue: &str, names: &RepoNames) -> Option<Reproduction> {
    // The repository's own tool run over the project the issue shows: `code` lists its files
    // (and the command), `first` is what the issue's first line of it holds.
    let project =
        |script: String, files: &[(String, String)], command: Option<String>, first: &str| {
            let code = files
                .iter()
                .map(|(n, t)| format!("# {n}\n{t}"))
                .chain(command)
                .collect::<Vec<_>>()
                .join("\n");
            let line = issue
                .lines()
                .position(|l| l.contains(first))
                .map_or(1, |i| i + 1);
            Some(Reproduction {
                script,
                code,
                statements: 1,
                import_statements: Vec::new(),
                unbound: Vec::new(),
                sources: vec![(Source::Fenced, line)],
                imports_added: Vec::new(),
            })
        };
    if names.modules.contains("pylint") {
        if let Some(args) = pylint_command(issue) {
            let (script, files) = pylint_script(issue, &args);
            let command = format!("# pylint {}", args.join(" "));
            return project(script, &files, Some(command), "pylint");
        }
    }
    if names.modules.contains("sphinx") {
        if let Some(files) = sphinx_project(issue).or_else(|| sphinx_code_project(issue)) {
            return project(sphinx_script(issue, &files), &files, None, &files[0].0);
        }
    }
    if let Some((files, tests)) = pytest_project(issue) {
        let command = format!("# pytest {}", tests.join(" "));
        return project(
            pytest_script(issue, &files, &tests),
            &files,
            Some(command),
            &files[0].0,
        );
    }
    let mut parts = issue_parts(issue);
    let mut sources: Vec<(Source, usize)> = parts.iter().map(|p| p.from).collect();
    // Only when the issue shows no code at all: the expressions it writes inline whose every
    // name the repository or Python binds (`0**-oo` with sympy's `oo`); one that names what the
    // issue never shows (`r.iter_content(…)`) would only raise `NameError` everywhere. Only the
    // first one's line is given as the source.
    if parts.is_empty() {
        for (expr, line) in inline_expressions(issue) {
            // Not a name one module defines: prose names internals (`dmp_zz_mignotte_bound(f,
            // u, K)` in a request to improve it) more often than a call that reproduces.
            let imports = imports_for(&expr, names, false);
            let whole = format!("{}\n{expr}", imports.join("\n"));
            if unbound_names(&whole).is_empty() {
                if sources.is_empty() {
                    sources.push((Source::Inline, line));
                }
                parts.push(Part {
                    code: expr,
                    from: (Source::Inline, line),
                    cell: false,
                });
            }
        }
    }
    // Tests shown in two blocks are two test files (`test_module_1.py`, `test_module_2.py`):
    // joined into one module they would share its globals, which may be what the issue is
    // about. Tests shown in one block run as a script.
    let test_files = parts
        .iter()
        .filter(|p| python::parse(&p.code).is_some_and(|t| defines_tests(t.root_node(), &p.code)))
        .count();
    let code = joined(&parts);
    if code.trim().is_empty() {
        // No code at all: in Sphinx, the reST markup the issue shows, built.
        return names
            .modules
            .contains("sphinx")
            .then(|| sphinx_markup_project(issue))
            .flatten()
            .and_then(|files| {
                // Its line in the issue: that of the markup's first line, under the title.
                project(
                    sphinx_script(issue, &files),
                    &files,
                    None,
                    files[0].1.lines().nth(3)?,
                )
            });
    }
    let imports = implied_imports(&code, names);
    let head = if imports.is_empty() {
        String::new()
    } else {
        format!("{}\n", imports.join("\n"))
    };
    // Where each cell ends in the code.
    let mut cell_ends = Vec::new();
    let mut at = head.len();
    for part in &parts {
        at += part.code.len();
        if part.cell {
            cell_ends.push(at);
        }
        at += 1;
    }
    let code = head + &code;
    let files = data_files(issue, &code);
    let flags = pytest_flags(issue);
    let sympy = names.modules.contains("sympy");
    let drawn = if sympy && shows_pretty_output(issue) {
        Drawn::Pretty
    } else if sympy && shows_latex_output(issue, &code) {
        Drawn::Latex
    } else {
        Drawn::Repr
    };
    let wrapped = wrap(
        &code,
        (test_files <= 1).then_some(&flags[..]),
        &cell_ends,
        drawn,
        &writer(&files),
    )?;
    // The files it reads come first in the code shown, as a project's files do.
    let shown = shown_before(&files, "code");
    let unbound = unbound_names(&code)
        .into_iter()
        .filter(|(_, after_star)| !after_star)
        .map(|(name, _)| name)
        .collect();
    Some(Reproduction {
        script: wrapped.script,
        code: shown + &code,
        statements: wrapped.statements,
        import_statements: wrapped.imports,
        unbound,
        sources,
        imports_added: imports,
    })
}

/// A reproduction script an agent wrote into its candidate, made runnable like the issue's
/// code (see [`wrap`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentScript {
    pub agent: String,
    /// Where the candidate creates it (`reproduce_bug.py`).
    pub path: String,
    /// The script as it runs (wrapped like the issue's code), and the agent's code as written.
    pub script: String,
    pub code: String,
}

/// Words that name a reproduction script (`reproduce_bug.py`, `replicate_issue.py`,
/// `bug_reproduction.py`).
const SCRIPT_WORDS: [&str; 4] = ["reproduc", "replicat", "bug", "issue"];

/// The reproduction scripts the candidates write: Python files a patch creates at the
/// repository's root (absent at the base commit) whose names say they reproduce something.
/// In order: scripts before `test_*` files (those define tests, which run only where the
/// environment has pytest), then by agent and path; a script several candidates write comes
/// once, under the first. A file the script names (`'config.toml'`) that its own candidate
/// creates at the root is written before it runs.
pub fn agent_scripts(
    cands: &[(&str, &crate::model::PatchView)],
    repo: &FileIndex,
) -> Vec<AgentScript> {
    let mut found: Vec<(bool, AgentScript)> = Vec::new();
    for (agent, view) in cands {
        for f in &view.files {
            let (Some(code), None) = (&f.after, &f.before) else {
                continue;
            };
            let name = f.path.to_ascii_lowercase();
            if f.path.contains('/')
                || !name.ends_with(".py")
                || repo.get(&f.path).is_some()
                || !SCRIPT_WORDS.iter().any(|w| name.contains(w))
            {
                continue;
            }
            // The files the script names that its own candidate creates beside it, which no
            // tree's run would have otherwise (the agents' scratch is left out of every tree).
            let companions: Vec<(String, String)> = view
                .files
                .iter()
                .filter(|c| c.path != f.path && !c.path.contains('/') && c.before.is_none())
                .filter(|c| repo.get(&c.path).is_none() && names_literal(code, &c.path))
                .filter_map(|c| Some((c.path.clone(), c.after.clone()?)))
                .collect();
            let prologue = companion_writer(&companions);
            let Some(Wrapped { script, .. }) = wrap(code, Some(&[]), &[], Drawn::Repr, &prologue)
            else {
                continue;
            };
            found.push((
                name.starts_with("test"),
                AgentScript {
                    agent: agent.to_string(),
                    path: f.path.clone(),
                    script,
                    // Shown as the issue's code is: the files it reads first.
                    code: shown_before(&companions, "script") + code,
                },
            ));
        }
    }
    found.sort_by(|a, b| (a.0, &a.1.agent, &a.1.path).cmp(&(b.0, &b.1.agent, &b.1.path)));
    let mut seen = BTreeSet::new();
    found
        .into_iter()
        .map(|(_, s)| s)
        .filter(|s| seen.insert(s.script.clone()))
        .collect()
}
