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

use super::outcome::REPRO_MARK;
use super::regress;
use crate::localize::search::FileIndex;
use crate::syntax::python;
use std::collections::{BTreeMap, BTreeSet};

/// Where a piece of code came from in the issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A fenced block (```` ``` ```` or `~~~`).
    Fenced,
    /// A `>>>` session outside a fence.
    Doctest,
    /// An IPython `In [n]:` session outside a fence.
    IPython,
    /// A block indented by four spaces after a blank line.
    Indented,
    /// Statements of a traceback's top-level user frames.
    Traceback,
    /// Lines of code inside prose (issues exported from Trac carry no markup).
    Loose,
    /// Expressions written as inline code in the prose (`` `0**-oo` produces `0` ``).
    Inline,
}

/// A block of the issue text, before it is known to be Python.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub source: Source,
    /// The fence's language tag, lowercased (empty when none).
    pub lang: String,
    /// 1-based line of the issue where it starts.
    pub line: usize,
    pub text: String,
    /// A fence that the text closes (always true for the other sources); an unclosed fence
    /// runs to the end of the text.
    pub closed: bool,
}

/// Fence tags that are Python (or a Python session).
const PY_LANGS: [&str; 11] = [
    "python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "pytb", "doctest", "sage",
    "python2",
];

/// Cut `text` into candidate blocks, in order.
/// The fence a line opens (its run of three or more backticks or tildes), if it opens one.
fn fence_open(t: &str) -> Option<&str> {
    let c = t.chars().next().filter(|&c| c == '`' || c == '~')?;
    let n = t.chars().take_while(|&x| x == c).count();
    (n >= 3).then(|| &t[..n])
}

/// Whether `line` closes the fence opened with `mark`: at least that run and nothing else.
fn fence_closes(line: &str, mark: &str) -> bool {
    let u = line.trim();
    u.starts_with(mark) && u.chars().all(|c| mark.starts_with(c))
}

pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        // Fences.
        if let Some(mark) = fence_open(t) {
            let lang = t[mark.len()..]
                .trim()
                .trim_start_matches('{')
                .trim_start_matches('.')
                .split(|c: char| c.is_whitespace() || c == '}' || c == ',')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            let indent = line.len() - t.len();
            let start = i + 1;
            let mut j = start;
            while j < lines.len() && !fence_closes(lines[j], mark) {
                j += 1;
            }
            let body: Vec<&str> = lines[start..j.min(lines.len())]
                .iter()
                .map(|l| strip_indent(l, indent))
                .collect();
            out.push(Block {
                source: Source::Fenced,
                lang,
                line: start + 1,
                text: dedent(&body.join("\n")),
                closed: j < lines.len(),
            });
            i = j + 1;
            continue;
        }
        // Sessions outside fences.
        if is_doctest_prompt(t) || ipython_prompt(t).is_some() {
            let source = if is_doctest_prompt(t) {
                Source::Doctest
            } else {
                Source::IPython
            };
            let start = i;
            let mut j = i;
            while j < lines.len() {
                if lines[j].trim().is_empty() {
                    // A blank line ends the session unless a prompt follows.
                    let next = lines[j + 1..].iter().find(|l| !l.trim().is_empty());
                    if !next.is_some_and(|l| {
                        let u = l.trim_start();
                        is_doctest_prompt(u) || ipython_prompt(u).is_some() || u.starts_with("Out[")
                    }) {
                        break;
                    }
                }
                if lines[j].trim_start().starts_with("```") {
                    break;
                }
                j += 1;
            }
            out.push(Block {
                source,
                lang: String::new(),
                line: start + 1,
                text: lines[start..j].join("\n"),
                closed: true,
            });
            i = j;
            continue;
        }
        // Tracebacks outside fences.
        if t.starts_with("Traceback (most recent call last)") {
            let start = i;
            let mut j = i + 1;
            while j < lines.len() && (lines[j].starts_with(' ') || lines[j].starts_with('\t')) {
                j += 1;
            }
            out.push(Block {
                source: Source::Traceback,
                lang: String::new(),
                line: start + 1,
                text: lines[start..j].join("\n"),
                closed: true,
            });
            i = j;
            continue;
        }
        // Indented code after a blank line.
        let indented = line.starts_with("    ") || line.starts_with('\t');
        if indented && !t.is_empty() && (i == 0 || lines[i - 1].trim().is_empty()) {
            let start = i;
            let mut j = i;
            while j < lines.len()
                && (lines[j].trim().is_empty()
                    || lines[j].starts_with("    ")
                    || lines[j].starts_with('\t'))
            {
                j += 1;
            }
            let body = lines[start..j].join("\n");
            out.push(Block {
                source: Source::Indented,
                lang: String::new(),
                line: start + 1,
                text: dedent(body.trim_end()),
                closed: true,
            });
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn strip_indent(line: &str, n: usize) -> &str {
    let k = line.len() - line.trim_start_matches(' ').len();
    &line[k.min(n)..]
}

/// Remove the common leading whitespace of non-blank lines.
fn dedent(text: &str) -> String {
    let text = text.replace('\t', "    ");
    let min = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    text.lines()
        .map(|l| {
            if l.len() >= min {
                &l[min..]
            } else {
                l.trim_start()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_doctest_prompt(t: &str) -> bool {
    t == ">>>" || t.starts_with(">>> ")
}

/// `In [12]: code` → `code`.
fn ipython_prompt(t: &str) -> Option<&str> {
    let rest = t.strip_prefix("In [")?;
    let close = rest.find("]:")?;
    if !rest[..close].chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let code = &rest[close + 2..];
    Some(code.strip_prefix(' ').unwrap_or(code))
}

/// `   ...: code` (IPython continuation) → `code`.
fn ipython_continuation(t: &str) -> Option<&str> {
    let rest = t.trim_start().strip_prefix("...:")?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// The statements of a `>>>` / `In [n]:` session: prompts stripped, outputs dropped.
fn session_code(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_stmt = false;
    for line in text.lines() {
        let t = line.trim_start();
        if is_doctest_prompt(t) {
            out.push(t.get(4..).unwrap_or("").to_string());
            in_stmt = true;
        } else if in_stmt && (t == "..." || t.starts_with("... ")) {
            out.push(t.get(4..).unwrap_or("").to_string());
        } else if let Some(code) = ipython_prompt(t) {
            out.push(code.to_string());
            in_stmt = true;
        } else if in_stmt && ipython_continuation(t).is_some() {
            out.push(ipython_continuation(t).unwrap_or("").to_string());
        } else {
            in_stmt = false;
        }
    }
    out.join("\n")
}

/// Statements of a traceback's top-level user frames (`File "<stdin>", line 1, in <module>`
/// or a script outside the installed packages), and IPython's `----> 3 code` lines under
/// `in <module>`.
fn traceback_code(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_module = false;
    for (k, l) in lines.iter().enumerate() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("File \"") {
            let path = rest.split('"').next().unwrap_or("");
            let user = !path.contains("site-packages")
                && !path.contains("/lib/python")
                && !path.contains("dist-packages");
            if t.ends_with("in <module>") && user {
                if let Some(next) = lines.get(k + 1) {
                    let stmt = next.trim();
                    if !stmt.is_empty() && !stmt.starts_with("File \"") && !out.contains(&stmt) {
                        out.push(stmt);
                    }
                }
            }
            continue;
        }
        if t.contains("in <module>") {
            in_module = true;
            continue;
        }
        if in_module {
            if let Some(rest) = t.strip_prefix("---->") {
                let code = rest
                    .trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_digit());
                out.push(code.trim());
                in_module = false;
            } else if t.is_empty() {
                in_module = false;
            }
        }
    }
    out.join("\n")
}

fn is_shell(text: &str) -> bool {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    [
        "$ ",
        "$",
        "% ",
        "pip ",
        "python -",
        "python3 -",
        "conda ",
        "git ",
        "cd ",
        "pytest",
        "py.test",
        "tox",
        "sudo ",
        "export ",
        "> ",
    ]
    .iter()
    .any(|p| first == p.trim() || first.starts_with(p))
}

fn is_diff(text: &str) -> bool {
    let nonblank: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if nonblank.iter().any(|l| {
        l.starts_with("diff --git")
            || l.starts_with("@@ ")
            || l.starts_with("--- a/")
            || l.starts_with("+++ b/")
    }) {
        return true;
    }
    let marked = nonblank
        .iter()
        .filter(|l| l.starts_with('+') || l.starts_with('-'))
        .count();
    nonblank.len() >= 2 && marked * 2 > nonblank.len()
}

/// The Python code of a block, or `None` when it is not Python (shell, diff, output, prose).
/// Sessions lose prompts and outputs; code followed by its traceback loses the traceback;
/// IPython magics (`%timeit`, `!pip`) are dropped; statements that do not parse are dropped,
/// and a block where fewer than half the lines survive is not code.
pub fn block_code(b: &Block) -> Option<String> {
    let lang = b.lang.as_str();
    if !lang.is_empty() && !PY_LANGS.contains(&lang) {
        return None;
    }
    let text = &b.text;
    let code = if b.source == Source::Traceback {
        traceback_code(text)
    } else if is_session(text) {
        session_code(text)
    } else {
        if is_shell(text) || is_diff(text) {
            return None;
        }
        // Code, then the traceback (or output) it printed.
        let cut = text
            .lines()
            .position(|l| {
                l.trim_start()
                    .starts_with("Traceback (most recent call last)")
            })
            .unwrap_or(usize::MAX);
        text.lines()
            .take(cut)
            .filter(|l| {
                let t = l.trim_start();
                !(t.starts_with('%') || t.starts_with('!'))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    if code.trim().is_empty() {
        return None;
    }
    let kept = parsable_statements(&code)?;
    let total = code.lines().filter(|l| !l.trim().is_empty()).count();
    let kept_lines = kept.lines().filter(|l| !l.trim().is_empty()).count();
    if kept_lines == 0 || kept_lines * 2 < total {
        return None;
    }
    Some(kept)
}

/// The top-level statements of `code` that tree-sitter parses without error, Python 2
/// `print x` statements rewritten as calls.
fn parsable_statements(code: &str) -> Option<String> {
    let tree = python::parse(code)?;
    let root = tree.root_node();
    let mut out: Vec<String> = Vec::new();
    let mut c = root.walk();
    for n in root.named_children(&mut c) {
        if n.kind() == "comment" || !sound(n, code) {
            continue;
        }
        // A lone name or number is output or prose more often than code.
        if n.kind() == "expression_statement" && n.named_child_count() == 1 {
            let k = n.named_child(0).map(|x| x.kind()).unwrap_or("");
            if matches!(
                k,
                "integer" | "float" | "true" | "false" | "none" | "ellipsis"
            ) {
                continue;
            }
        }
        let start = line_start(code, n.start_byte());
        out.push(py3_text(n, code, start));
    }
    Some(out.join("\n"))
}

/// A top-level statement CPython would accept, as far as tree-sitter tells: it starts at
/// column 0, holds no ERROR or MISSING node and no empty block (tree-sitter accepts `if x:`
/// with nothing under it), is not a bare annotation (`Output: bell(oo)` is a label in
/// prose, not code) nor one whose type starts on the next line (`ccode:` over the lines it
/// labels), and has no `return`, `yield` or `await` outside a function nor `break` or
/// `continue` outside a loop (a library's source pasted into the issue: CPython rejects the
/// whole script for one of those, so no statement of it would run).
fn sound(n: tree_sitter::Node, code: &str) -> bool {
    if n.start_position().column != 0 || n.has_error() || misplaced(n, false, false) {
        return false;
    }
    if n.kind() == "expression_statement" {
        if let Some(a) = n.named_child(0) {
            let split_type = a.child_by_field_name("type").is_some_and(|t| {
                a.child_by_field_name("left")
                    .is_some_and(|l| t.start_position().row != l.end_position().row)
            });
            if a.kind() == "assignment" && (a.child_by_field_name("right").is_none() || split_type)
            {
                return false;
            }
        }
    }
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        // A Python 2 backtick repr (`x`) is a syntax error in Python 3.
        let backtick = x.child_count() == 0
            && x.kind() != "string_content"
            && code[x.start_byte()..x.end_byte()].contains('`');
        if x.is_missing()
            || x.is_error()
            || backtick
            || (x.kind() == "block" && x.named_child_count() == 0)
        {
            return false;
        }
        let mut c = x.walk();
        stack.extend(x.children(&mut c));
    }
    true
}

/// A `return`, `yield` or `await` outside a function, or a `break` or `continue` outside a
/// loop, within `n` (`in_function`, `in_loop`: what encloses it).
fn misplaced(n: tree_sitter::Node, in_function: bool, in_loop: bool) -> bool {
    match n.kind() {
        "return_statement" | "yield" | "await" if !in_function => return true,
        "break_statement" | "continue_statement" if !in_loop => return true,
        _ => {}
    }
    let (in_function, in_loop) = match n.kind() {
        "function_definition" | "lambda" => (true, false),
        "class_definition" => (false, false),
        "for_statement" | "while_statement" => (in_function, true),
        _ => (in_function, in_loop),
    };
    let mut c = n.walk();
    let any = n
        .children(&mut c)
        .any(|k| misplaced(k, in_function, in_loop));
    any
}

fn line_start(code: &str, byte: usize) -> usize {
    code[..byte].rfind('\n').map_or(0, |i| i + 1)
}

/// Text of a node from `from` (its line's start), `print x` statements inside rewritten as
/// `print(x)`.
fn py3_text(node: tree_sitter::Node, code: &str, from: usize) -> String {
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "print_statement" {
            let mut c = n.walk();
            let args: Vec<&str> = n
                .named_children(&mut c)
                .filter(|a| a.kind() != "chevron")
                .map(|a| &code[a.start_byte()..a.end_byte()])
                .collect();
            edits.push((
                n.start_byte(),
                n.end_byte(),
                format!("print({})", args.join(", ")),
            ));
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    edits.sort_by_key(|e| e.0);
    let mut s = String::new();
    let mut pos = from;
    for (a, b, rep) in edits {
        s.push_str(&code[pos..a]);
        s.push_str(&rep);
        pos = b;
    }
    s.push_str(&code[pos..node.end_byte()]);
    s
}

/// Names a repository makes available to an issue's code: its top-level packages and modules,
/// and the names its packages export (`from pkg import Name` works).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoNames {
    /// Top-level importable modules and packages (`sympy`, `requests`, `_pytest`, `pytest`).
    pub modules: BTreeSet<String>,
    /// Exported name → the package that exports it (the first package, largest first).
    pub exported: BTreeMap<String, String>,
    /// A module of ready-made symbols the repository's users import letters from (see
    /// [`SYMBOL_MODULES`]), when the repository has one.
    pub symbols: Option<&'static str>,
    /// Public name → the one module of the repository's packages that defines it at top
    /// level (a `def` or `class`), outside tests; `None` when several do.
    pub defined: BTreeMap<String, Option<String>>,
    /// The dotted modules of the packages' library files (`sphinx.ext.napoleon`), outside tests,
    /// but for those whose name their package's `__init__.py` mentions (see
    /// [`bound_by_parent`]).
    pub submodules: BTreeSet<String>,
}

/// Modules whose users write `x`, `y`, `alpha` without binding them, as the project's own docs
/// do: (file, module). sympy's `sympy.abc` binds every Latin and Greek letter to a Symbol.
const SYMBOL_MODULES: [(&str, &str); 1] = [("sympy/abc.py", "sympy.abc")];

/// Greek letter names as `sympy.abc` spells them (`lamda`: `lambda` is a keyword).
const GREEK: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lamda",
    "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
    "omega",
];

/// A name a symbol module binds: one ASCII letter, or a Greek letter's name.
fn is_symbol_name(name: &str) -> bool {
    (name.len() == 1 && name.chars().all(|c| c.is_ascii_alphabetic())) || GREEK.contains(&name)
}

const NOT_PACKAGES: [&str; 12] = [
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "bench",
    "scripts",
    "build",
    "tools",
];

impl RepoNames {
    /// From the repository's Python files at the base commit: packages are `p/__init__.py`
    /// (also under `src/`, `lib/`), modules are top-level `.py` files (not `setup.py`,
    /// `conftest.py`); a package exports what its `__init__.py` binds at any depth of star
    /// imports (`from .core import *`), up to three levels, private names left out.
    pub fn from_repo(files: &FileIndex) -> RepoNames {
        let mut names = RepoNames::default();
        let mut packages: Vec<(usize, String, String)> = Vec::new(); // (files, name, init path)
        for p in files.paths() {
            let rel = p
                .strip_prefix("src/")
                .or_else(|| p.strip_prefix("lib/"))
                .unwrap_or(p);
            let prefix = &p[..p.len() - rel.len()];
            match rel.split_once('/') {
                Some((pkg, "__init__.py")) if !NOT_PACKAGES.contains(&pkg) => {
                    let size = files
                        .paths()
                        .filter(|q| q.starts_with(&format!("{prefix}{pkg}/")))
                        .count();
                    packages.push((size, pkg.to_string(), p.to_string()));
                    names.modules.insert(pkg.to_string());
                }
                None if rel.ends_with(".py") => {
                    let stem = rel.trim_end_matches(".py");
                    if !matches!(stem, "setup" | "conftest" | "noxfile" | "fabfile")
                        && is_identifier(stem)
                    {
                        names.modules.insert(stem.to_string());
                    }
                }
                _ => {}
            }
        }
        names.symbols = SYMBOL_MODULES
            .iter()
            .find(|(file, _)| files.get(file).is_some())
            .map(|(_, module)| *module);
        for p in files.paths() {
            let Some(module) = library_module(p, &names.modules) else {
                continue;
            };
            if !bound_by_parent(files, p, &module) {
                names.submodules.insert(module.clone());
            }
            let Some(f) = files.get(p) else { continue };
            for name in top_level_defs(&f.text) {
                if name.starts_with('_') {
                    continue;
                }
                names
                    .defined
                    .entry(name.to_string())
                    .and_modify(|m| {
                        if m.as_deref() != Some(module.as_str()) {
                            *m = None;
                        }
                    })
                    .or_insert_with(|| Some(module.clone()));
            }
        }
        packages.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, pkg, init) in packages {
            let mut seen = BTreeSet::new();
            let mut found = BTreeSet::new();
            module_names(files, &init, 0, &mut seen, &mut found);
            for n in found {
                names.exported.entry(n).or_insert_with(|| pkg.clone());
            }
        }
        names
    }
}

/// The names of the `def`, `async def` and `class` statements at column 0 of Python source (a
/// line scan: every library file of the repository is read for them).
fn top_level_defs(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|l| {
        let rest = l
            .strip_prefix("def ")
            .or_else(|| l.strip_prefix("async def "))
            .or_else(|| l.strip_prefix("class "))?
            .trim_start();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then(|| &rest[..end])
    })
}

/// Whether the `__init__.py` of the package holding library file `path` (module `module`)
/// mentions the module's last name: it then imports the module itself (`from .c import x`), or
/// binds the name to something else. sympy's `printing/__init__.py` binds `ccode` to a
/// function, and importing the deprecated `sympy/printing/ccode.py` would rebind it to the
/// module. A word search, not a parse: what it misses is only an import not added.
fn bound_by_parent(files: &FileIndex, path: &str, module: &str) -> bool {
    let Some((_, last)) = module.rsplit_once('.') else {
        return true;
    };
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let dir = if path.ends_with("/__init__.py") {
        dir.rsplit_once('/').map_or("", |(d, _)| d)
    } else {
        dir
    };
    let Some(init) = files.get(&format!("{dir}/__init__.py")) else {
        return true;
    };
    let text: &str = &init.text;
    text.match_indices(last).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + last.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// The dotted module of a library file of one of the repository's packages
/// (`sympy/utilities/iterables.py` → `sympy.utilities.iterables`), or `None` for a file
/// outside them, a test (`tests/`, `testing/`, `test_*.py`, `conftest.py`) or a private module.
fn library_module(path: &str, packages: &BTreeSet<String>) -> Option<String> {
    let rel = path
        .strip_prefix("src/")
        .or_else(|| path.strip_prefix("lib/"))
        .unwrap_or(path)
        .strip_suffix(".py")?;
    let mut parts: Vec<&str> = rel.split('/').collect();
    if parts.len() < 2 || !packages.contains(parts[0]) {
        return None;
    }
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    let test = |p: &&str| {
        matches!(*p, "tests" | "test" | "testing" | "conftest" | "benchmarks")
            || p.starts_with("test_")
            || p.starts_with('_')
            || !is_identifier(p)
    };
    if parts[1..].iter().any(test) {
        return None;
    }
    Some(parts.join("."))
}

fn is_identifier(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Public names a module binds at top level, following star imports.
fn module_names(
    files: &FileIndex,
    path: &str,
    depth: usize,
    seen: &mut BTreeSet<String>,
    out: &mut BTreeSet<String>,
) {
    if depth > 3 || !seen.insert(path.to_string()) {
        return;
    }
    let Some(f) = files.get(path) else { return };
    let idx = f.index();
    for d in idx.defs.iter().filter(|d| d.depth == 0) {
        if !d.name.starts_with('_') {
            out.insert(d.name.clone());
        }
    }
    for imp in &idx.imports {
        if imp.alias == "*" {
            let module = resolve_relative(path, &imp.module);
            let base = module.replace('.', "/");
            let prefix = if path.starts_with("src/") {
                "src/"
            } else if path.starts_with("lib/") {
                "lib/"
            } else {
                ""
            };
            for cand in [
                format!("{prefix}{base}.py"),
                format!("{prefix}{base}/__init__.py"),
            ] {
                if files.get(&cand).is_some() {
                    module_names(files, &cand, depth + 1, seen, out);
                }
            }
        } else if !imp.alias.starts_with('_') && is_identifier(&imp.alias) {
            out.insert(imp.alias.clone());
        }
    }
}

/// `from .x import y` in `pkg/a/b.py` → `pkg.a.x` (a `src/` or `lib/` prefix is not a package).
fn resolve_relative(path: &str, module: &str) -> String {
    let dots = module.chars().take_while(|&c| c == '.').count();
    if dots == 0 {
        return module.to_string();
    }
    let path = path
        .strip_prefix("src/")
        .or_else(|| path.strip_prefix("lib/"))
        .unwrap_or(path);
    let mut parts: Vec<&str> = path.trim_end_matches(".py").split('/').collect();
    parts.pop();
    for _ in 1..dots {
        parts.pop();
    }
    let rest = &module[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

/// Conventional aliases an issue uses without importing.
const ALIASES: [(&str, &str); 8] = [
    ("np", "import numpy as np"),
    ("pd", "import pandas as pd"),
    ("plt", "import matplotlib.pyplot as plt"),
    ("mpl", "import matplotlib as mpl"),
    ("xr", "import xarray as xr"),
    ("sns", "import seaborn as sns"),
    ("so", "import seaborn.objects as so"),
    ("u", "from astropy import units as u"),
];

/// Standard-library modules an issue uses without importing.
const STDLIB: [&str; 28] = [
    "os",
    "sys",
    "re",
    "math",
    "pickle",
    "copy",
    "json",
    "warnings",
    "datetime",
    "io",
    "collections",
    "itertools",
    "functools",
    "operator",
    "tempfile",
    "decimal",
    "fractions",
    "time",
    "random",
    "logging",
    "pathlib",
    "textwrap",
    "inspect",
    "types",
    "typing",
    "string",
    "gc",
    "cmath",
];

const BUILTINS: &[&str] = &[
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "__import__",
    "__name__",
    "__file__",
    "__doc__",
    "__builtins__",
    "self",
    "cls",
    "True",
    "False",
    "None",
    "NotImplemented",
    "Ellipsis",
    "unicode",
    "long",
    "xrange",
    "basestring",
    "unichr",
    "reduce",
    "exit",
    "quit",
    "copyright",
    "credits",
    "license",
    "display",
];

fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
        || name.ends_with("Error") && name.chars().next().is_some_and(char::is_uppercase) && {
            matches!(
                name,
                "ArithmeticError"
                    | "AssertionError"
                    | "AttributeError"
                    | "BufferError"
                    | "EOFError"
                    | "FloatingPointError"
                    | "ImportError"
                    | "IndexError"
                    | "KeyError"
                    | "LookupError"
                    | "MemoryError"
                    | "NameError"
                    | "NotImplementedError"
                    | "OSError"
                    | "IOError"
                    | "OverflowError"
                    | "RecursionError"
                    | "ReferenceError"
                    | "RuntimeError"
                    | "SyntaxError"
                    | "SystemError"
                    | "TypeError"
                    | "UnboundLocalError"
                    | "UnicodeError"
                    | "UnicodeDecodeError"
                    | "UnicodeEncodeError"
                    | "ValueError"
                    | "ZeroDivisionError"
                    | "ModuleNotFoundError"
                    | "FileNotFoundError"
                    | "PermissionError"
                    | "TimeoutError"
                    | "ConnectionError"
                    | "IndentationError"
                    | "TabError"
                    | "EnvironmentError"
            )
        }
        || matches!(
            name,
            "Exception"
                | "BaseException"
                | "StopIteration"
                | "KeyboardInterrupt"
                | "SystemExit"
                | "GeneratorExit"
                | "Warning"
                | "UserWarning"
                | "DeprecationWarning"
                | "RuntimeWarning"
                | "FutureWarning"
                | "PendingDeprecationWarning"
                | "SyntaxWarning"
                | "ImportWarning"
                | "UnicodeWarning"
                | "BytesWarning"
                | "ResourceWarning"
        )
}

/// Names the code uses but never binds, in order of first use, each with whether a star
/// import comes before that use. Assignments and definitions bind a name wherever they are
/// (a function may use a name bound below it); an import binds only the uses after it, so a
/// name used before the issue imports it (`xr.DataArray` above `import xarray as xr`, two
/// blocks apart) still counts as unbound.
fn unbound_names(code: &str) -> Vec<(String, bool)> {
    let Some(tree) = python::parse(code) else {
        return Vec::new();
    };
    let mut bound: BTreeSet<String> = BTreeSet::new();
    // Where each name is first imported, and the first star import.
    let mut imported: BTreeMap<String, usize> = BTreeMap::new();
    let mut used: Vec<(String, usize)> = Vec::new();
    let mut star: Option<usize> = None;
    let txt = |n: tree_sitter::Node| code[n.start_byte()..n.end_byte()].to_string();
    let mut stack = vec![(tree.root_node(), false)];
    while let Some((n, in_params)) = stack.pop() {
        let kind = n.kind();
        let params = in_params || matches!(kind, "parameters" | "lambda_parameters");
        if matches!(
            kind,
            "default_parameter" | "typed_default_parameter" | "typed_parameter"
        ) {
            // The parameter's name is bound; its default value and annotation are uses.
            let mut c = n.walk();
            for k in n.children(&mut c) {
                let is_name = n.child_by_field_name("name") == Some(k)
                    || (kind == "typed_parameter" && k.kind() == "identifier");
                if is_name {
                    bound.insert(txt(k));
                } else {
                    stack.push((k, false));
                }
            }
            continue;
        }
        match kind {
            "assignment" | "for_statement" | "for_in_clause" | "augmented_assignment" => {
                if let Some(l) = n.child_by_field_name("left") {
                    bind_targets(l, code, &mut bound);
                }
            }
            "function_definition" | "class_definition" => {
                if let Some(nm) = n.child_by_field_name("name") {
                    bound.insert(txt(nm));
                }
            }
            "as_pattern" => {
                if let Some(a) = n.child_by_field_name("alias") {
                    bind_targets(a, code, &mut bound);
                }
            }
            "named_expression" => {
                if let Some(nm) = n.child_by_field_name("name") {
                    bound.insert(txt(nm));
                }
            }
            "global_statement" | "nonlocal_statement" => {
                let mut c = n.walk();
                for x in n.named_children(&mut c) {
                    bound.insert(txt(x));
                }
            }
            "import_statement" | "import_from_statement" => {
                let mut c = n.walk();
                let mut any = false;
                for x in n.children_by_field_name("name", &mut c) {
                    any = true;
                    let name = if x.kind() == "aliased_import" {
                        x.child_by_field_name("alias").map(txt).unwrap_or_default()
                    } else if kind == "import_statement" {
                        txt(x).split('.').next().unwrap_or("").to_string()
                    } else {
                        txt(x)
                    };
                    imported.entry(name).or_insert(n.start_byte());
                }
                if !any && kind == "import_from_statement" {
                    star.get_or_insert(n.start_byte());
                }
                continue;
            }
            "identifier" => {
                let skip = n.parent().is_some_and(|p| {
                    (p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(n))
                        || (p.kind() == "keyword_argument"
                            && p.child_by_field_name("name") == Some(n))
                });
                if params {
                    bound.insert(txt(n));
                } else if !skip {
                    let t = txt(n);
                    if !used.iter().any(|(u, _)| *u == t) {
                        used.push((t, n.start_byte()));
                    }
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<_> = n.children(&mut c).collect();
        for k in kids.into_iter().rev() {
            stack.push((k, params));
        }
    }
    used.into_iter()
        .filter(|(u, at)| {
            !bound.contains(u)
                && imported.get(u).map_or(true, |i| i > at)
                && !is_builtin(u)
                && !u.starts_with("_dei")
        })
        .map(|(u, at)| (u, star.is_some_and(|s| s < at)))
        .collect()
}

fn bind_targets(n: tree_sitter::Node, code: &str, bound: &mut BTreeSet<String>) {
    match n.kind() {
        "identifier" => {
            bound.insert(code[n.start_byte()..n.end_byte()].to_string());
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" | "list_splat_pattern" | "tuple"
        | "list" | "expression_list" => {
            let mut c = n.walk();
            for k in n.named_children(&mut c) {
                bind_targets(k, code, bound);
            }
        }
        _ => {}
    }
}

/// The imports for names the code uses but never binds: a name the repository's packages
/// export (`from pkg import Name`; not when the code already star-imports), a repository
/// module or standard-library module (`import name`), a conventional alias (`np`, `plt`, …),
/// a letter from the repository's symbol module (`from sympy.abc import x`), else a function
/// or class that one library module alone defines (`from sympy.utilities.iterables import
/// multiset`; not when the code star-imports). Then each submodule of the repository the code
/// reaches through its package's attributes without importing it (`import sphinx.ext.napoleon`
/// for `sphinx.ext.napoleon.NumpyDocstring`, see [`dotted_submodules`]).
pub fn implied_imports(code: &str, names: &RepoNames) -> Vec<String> {
    imports_for(code, names, true)
}

/// [`implied_imports`], with the last rule (the one module that defines a name) only when
/// `defined` says so.
fn imports_for(code: &str, names: &RepoNames, defined: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (u, star) in unbound_names(code) {
        let line = if names.modules.contains(&u) || STDLIB.contains(&u.as_str()) {
            format!("import {u}")
        } else if let (false, Some(pkg)) = (star, names.exported.get(&u)) {
            format!("from {pkg} import {u}")
        } else if let (Some(module), true) = (names.symbols, is_symbol_name(&u)) {
            // Before the aliases: sympy's `u` is a letter, not astropy's units.
            format!("from {module} import {u}")
        } else if let Some((_, imp)) = ALIASES.iter().find(|(a, _)| *a == u) {
            imp.to_string()
        } else if let (true, false, Some(Some(module))) = (defined, star, names.defined.get(&u)) {
            format!("from {module} import {u}")
        } else {
            continue;
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    for module in dotted_submodules(code, names) {
        let line = format!("import {module}");
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The repository's submodules the code reaches through attributes of its package without
/// importing them: `sphinx.ext.napoleon.NumpyDocstring(…)` after `import sphinx` raises
/// `AttributeError` unless `sphinx.ext.napoleon` was imported, as it was in the session the
/// issue was written in. The longest dotted prefix of an attribute chain that is a library
/// module of the repository's packages, when the code does not import it itself.
fn dotted_submodules(code: &str, names: &RepoNames) -> Vec<String> {
    let Some(tree) = python::parse(code) else {
        return Vec::new();
    };
    let mut imported: BTreeSet<String> = BTreeSet::new();
    let mut chains: Vec<String> = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "import_statement" | "import_from_statement" => {
                let mut c = n.walk();
                for x in n.named_children(&mut c) {
                    let x = if x.kind() == "aliased_import" {
                        x.child_by_field_name("name").unwrap_or(x)
                    } else {
                        x
                    };
                    if x.kind() == "dotted_name" {
                        imported.insert(code[x.start_byte()..x.end_byte()].to_string());
                    }
                }
                continue;
            }
            // The outermost attribute of a chain of names: `a.b.c`, not `f().b`.
            "attribute" if n.parent().map_or(true, |p| p.kind() != "attribute") => {
                let text = &code[n.start_byte()..n.end_byte()];
                if text.split('.').all(is_identifier) {
                    chains.push(text.to_string());
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<_> = n.children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    let mut out: Vec<String> = Vec::new();
    for chain in chains {
        let parts: Vec<&str> = chain.split('.').collect();
        if !names.modules.contains(parts[0]) {
            continue;
        }
        let found = (2..=parts.len())
            .rev()
            .map(|k| parts[..k].join("."))
            .find(|m| names.submodules.contains(m));
        let Some(module) = found else { continue };
        let covered = imported
            .iter()
            .any(|i| *i == module || i.starts_with(&format!("{module}.")));
        if !covered && !out.contains(&module) {
            out.push(module);
        }
    }
    out
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
    /// Where the code came from (kind, issue line), in order.
    pub sources: Vec<(Source, usize)>,
    /// Imports added for names the issue uses but never imports.
    pub imports_added: Vec<String>,
}

/// The Python code an issue shows, in order: every block that is Python (see [`block_code`]),
/// repeated blocks once. Only when none is found: lines of code inside the prose
/// ([`loose_code`]), then the statements of tracebacks.
pub fn issue_code(issue: &str) -> (String, Vec<(Source, usize)>) {
    let parts = issue_parts(issue);
    (joined(&parts), parts.iter().map(|p| p.from).collect())
}

/// One piece of the issue's code: a block, the loose code or an inline expression, where it
/// came from (its kind and first line) and whether it is a notebook cell ([`is_cell`]).
struct Part {
    code: String,
    from: (Source, usize),
    cell: bool,
}

/// The parts' code, one after the other.
fn joined(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| p.code.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A block that reads as a notebook cell: fenced or indented code with no session prompt
/// (`>>>`, `In [n]:`) and no traceback. Jupyter shows the value of a cell's last expression
/// through the value's rich forms too (`_repr_html_`, `_repr_png_`, …); a REPL session shows
/// only `repr`.
fn is_cell(b: &Block) -> bool {
    matches!(b.source, Source::Fenced | Source::Indented)
        && !is_session(&b.text)
        && !b.text.lines().any(|l| {
            l.trim_start()
                .starts_with("Traceback (most recent call last)")
        })
}

/// Text with a `>>>` or `In [n]:` prompt on some line: a REPL session.
fn is_session(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start();
        is_doctest_prompt(t) || ipython_prompt(t).is_some()
    })
}

/// [`issue_code`]'s parts, one per block (or the loose code).
fn issue_parts(issue: &str) -> Vec<Part> {
    let all = blocks(issue);
    let mut parts: Vec<Part> = Vec::new();
    for pass in 0..3 {
        if pass == 1 {
            if let Some((code, line)) = loose_code(issue) {
                parts.push(Part {
                    code,
                    from: (Source::Loose, line),
                    cell: false,
                });
                break;
            }
            continue;
        }
        let want_tb = pass == 2;
        for b in all
            .iter()
            .filter(|b| (b.source == Source::Traceback) == want_tb)
        {
            if let Some(code) = block_code(b) {
                if !parts.iter().any(|p| p.code == code) {
                    parts.push(Part {
                        code,
                        from: (b.source, b.line),
                        cell: is_cell(b),
                    });
                }
            }
        }
        if !parts.is_empty() {
            break;
        }
    }
    parts
}

/// A line that reads as code rather than prose: it calls, assigns, indexes or starts with a
/// statement keyword.
fn code_like(line: &str) -> bool {
    let t = line.trim();
    const KEYWORDS: [&str; 14] = [
        "import ", "from ", "def ", "class ", "@", "return ", "for ", "if ", "with ", "raise ",
        "assert ", "print(", "while ", "try:",
    ];
    KEYWORDS.iter().any(|k| t.starts_with(k))
        || t.contains('(')
        || t.contains(" = ")
        || t.contains('[')
}

/// Code written inside prose without markup (Trac-exported issues), outside fenced blocks: groups of a code-like line
/// and the more indented lines below it, each kept when it parses on its own (tree-sitter, no
/// error); `None` when no group does. Returns the code and the first group's line.
pub fn loose_code(issue: &str) -> Option<(String, usize)> {
    let lines = prose_lines(issue);
    let indent = |l: &str| {
        let l = l.replace('\t', "    ");
        l.len() - l.trim_start().len()
    };
    let mut out: Vec<String> = Vec::new();
    let mut first = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.trim().is_empty() {
            i += 1;
            continue;
        }
        // The line and the lines indented under it go together (prose keeps its own).
        let base = indent(l);
        let mut j = i + 1;
        while j < lines.len() && !lines[j].trim().is_empty() && indent(lines[j]) > base {
            j += 1;
        }
        if !code_like(l) {
            i = j;
            continue;
        }
        let group = dedent(&lines[i..j].join("\n"));
        let ok = python::parse(&group).is_some_and(|t| {
            let root = t.root_node();
            let mut c = root.walk();
            let any = root.named_children(&mut c).any(|n| n.kind() != "comment");
            !root.has_error() && any
        });
        if ok {
            first.get_or_insert(i + 1);
            out.push(group);
        }
        i = j;
    }
    let b = Block {
        source: Source::Loose,
        lang: String::new(),
        line: first?,
        text: out.join("\n"),
        closed: true,
    };
    block_code(&b).map(|c| (c, b.line))
}

/// What the name of a file an issue shows ends with: code, documents, settings.
const FILE_ENDINGS: [&str; 7] = [".py", ".rst", ".txt", ".toml", ".cfg", ".ini", "pylintrc"];

/// A file name an issue gives a block: `example.py`, `docs/index.rst`, `.pylintrc` (relative,
/// no `..`, ending as one of [`FILE_ENDINGS`]), from a short line that ends with it
/// (at most three words: `# in conf.py`, ``Simple `index.rst` ``), maybe marked as a comment
/// (`# conf.py`, `.. index.rst`), as code or bold, with a colon after.
fn file_name_line(line: &str) -> Option<&str> {
    let t = line.trim();
    let t = t
        .strip_prefix('#')
        .or_else(|| t.strip_prefix(".."))
        .unwrap_or(t)
        .trim()
        .trim_end_matches(':');
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.is_empty() || words.len() > 3 {
        return None;
    }
    let t = words[words.len() - 1]
        .trim_end_matches(':')
        .trim_matches(|c| c == '`' || c == '*')
        .trim_end_matches(':');
    let ok = FILE_ENDINGS.iter().any(|e| t.ends_with(e))
        && !t.starts_with('/')
        && !t.split('/').any(|p| p.is_empty() || p == "..")
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
    ok.then_some(t)
}

/// The Sphinx project an issue shows: its [`named_blocks`]. `None` unless it has an
/// `index.rst`, the project's root document.
pub fn sphinx_project(issue: &str) -> Option<Vec<(String, String)>> {
    let files = named_blocks(issue);
    root_doc_folder(&files).is_some().then_some(files)
}

/// The folder of the project's root document among `files` (`""` for `index.rst`, `docs/` for
/// `docs/index.rst`), if it has one.
fn root_doc_folder(files: &[(String, String)]) -> Option<String> {
    files
        .iter()
        .find(|(n, _)| n == "index.rst" || n.ends_with("/index.rst"))
        .map(|(n, _)| n.trim_end_matches("index.rst").to_string())
}

/// The fenced blocks of an issue that name their file, by a first line (`# example.py`,
/// `.. index.rst`) or by the line before the fence (`docs/index.rst:`, `.pylintrc:`), as
/// (path, text), in order, a path once.
fn named_blocks(issue: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = issue.lines().collect();
    let mut files: Vec<(String, String)> = Vec::new();
    for b in blocks(issue)
        .into_iter()
        .filter(|b| b.source == Source::Fenced)
    {
        let first = b.text.lines().next().unwrap_or("");
        let named = file_name_line(first)
            .filter(|_| first.trim_start().starts_with(['#', '.']))
            .map(|n| {
                let rest: Vec<&str> = b.text.lines().skip(1).collect();
                (n.to_string(), rest.join("\n"))
            })
            .or_else(|| {
                // `line` is the block's first line (1-based): the fence is the line before it.
                let before = lines[..b.line.saturating_sub(2).min(lines.len())]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())?;
                file_name_line(before).map(|n| (n.to_string(), b.text.clone()))
            });
        if let Some((name, text)) = named {
            if !files.iter().any(|(n, _)| *n == name) {
                files.push((name, format!("{}\n", text.trim_end())));
            }
        }
    }
    files
}

/// The script that writes the project of [`sphinx_project`] into `dei_project/` (the folder of
/// its `index.rst`), with a `conf.py` that puts the folder on `sys.path`, loads the
/// `sphinx.ext.*` extensions the issue names (autodoc and autosummary also when its documents
/// use their directives) and names `index` the root document, followed by the issue's own
/// `conf.py`, if it gives one; builds it with the text builder and prints every page built.
fn sphinx_script(issue: &str, files: &[(String, String)]) -> String {
    let index = root_doc_folder(files).unwrap_or_default();
    let mut exts: Vec<String> = Vec::new();
    let mut add = |e: String| {
        if !exts.contains(&e) {
            exts.push(e);
        }
    };
    let mut rest = issue;
    while let Some(at) = rest.find("sphinx.ext.") {
        let name: String = rest[at + "sphinx.ext.".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            add(format!("sphinx.ext.{name}"));
        }
        rest = &rest[at + "sphinx.ext.".len()..];
    }
    let docs: String = files
        .iter()
        .filter(|(n, _)| n.ends_with(".rst"))
        .map(|(_, t)| t.as_str())
        .collect();
    if docs.contains(".. auto") {
        add("sphinx.ext.autodoc".into());
    }
    if docs.contains(".. autosummary::") {
        add("sphinx.ext.autosummary".into());
    }
    let conf_name = format!("{index}conf.py");
    let own_conf = files
        .iter()
        .find(|(n, _)| *n == conf_name)
        .map_or("", |(_, t)| t.as_str());
    let conf = format!(
        "import os, sys\nsys.path.insert(0, os.path.abspath('.'))\nextensions = {exts:?}\nmaster_doc = 'index'\n{own_conf}"
    );
    let mut all: Vec<(String, String)> = files
        .iter()
        .filter(|(n, _)| *n != conf_name)
        .cloned()
        .collect();
    all.push((conf_name, conf));
    format!(
        r#"{}_dei_src = _dei_os.path.join(_dei_dir, {})
_dei_out = _dei_os.path.join(_dei_dir, "_build")
_dei_sys.path.insert(0, _dei_src)
_dei_code = 1
try:
    from sphinx.cmd.build import main as _dei_build
    _dei_code = _dei_build(["-b", "text", "-q", "-E", _dei_src, _dei_out])
    print("{REPRO_MARK} no exception")
except Exception as _dei_e:
    _dei_msg = str(_dei_e).strip().splitlines()
    print("{REPRO_MARK} statement 1 raised %s: %s" % (type(_dei_e).__name__, _dei_msg[0] if _dei_msg else ""))
    print("{REPRO_MARK} first exception: %s" % type(_dei_e).__name__)
for _dei_root, _dei_dirs, _dei_names in sorted(_dei_os.walk(_dei_out)):
    _dei_dirs.sort()
    for _dei_name in sorted(_dei_names):
        if _dei_name.endswith(".txt"):
            _dei_page = _dei_os.path.join(_dei_root, _dei_name)
            print("==== " + _dei_os.path.relpath(_dei_page, _dei_out))
            with open(_dei_page) as _dei_f:
                print(_dei_f.read())
_dei_sys.exit(_dei_code)
"#,
        project_prologue(
            "the Sphinx project it shows, built with the text builder; every page built is printed",
            &all
        ),
        py_literal(&index),
    )
}

/// A Python string literal holding `s` (a JSON string is one).
fn py_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The start of a script that works on a project of the issue's files: a comment saying what
/// it does, then `files` (path, text) written under `dei_project/` in the working folder
/// (`_dei_dir`, made even when there is no file), folders as needed.
fn project_prologue(what: &str, files: &[(String, String)]) -> String {
    let dict: String = files
        .iter()
        .map(|(n, t)| format!("    {}: {},\n", py_literal(n), py_literal(t)))
        .collect();
    format!(
        r#"# Reproduction written by dei from the issue text: {what}.
import os as _dei_os, sys as _dei_sys
_dei_dir = _dei_os.path.join(_dei_os.getcwd(), "dei_project")
_dei_files = {{
{dict}}}
if not _dei_os.path.isdir(_dei_dir):
    _dei_os.makedirs(_dei_dir)
for _dei_name, _dei_text in sorted(_dei_files.items()):
    _dei_path = _dei_os.path.join(_dei_dir, _dei_name)
    if not _dei_os.path.isdir(_dei_os.path.dirname(_dei_path)):
        _dei_os.makedirs(_dei_os.path.dirname(_dei_path))
    with open(_dei_path, "w") as _dei_f:
        _dei_f.write(_dei_text)
"#
    )
}

/// Words of a shell command line as a POSIX shell splits them: single quotes keep everything,
/// double quotes keep all but `\"` and `\\`; `None` for an unclosed quote.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    out.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    Some(out)
}

/// The pylint command an issue runs: the first line (in a block or in code inside prose) that
/// calls `pylint`, its arguments as the shell splits them. A line that pipes, redirects or
/// chains another command is not taken.
pub fn pylint_command(issue: &str) -> Option<Vec<String>> {
    // A line, or the code spans inside it (`` `pylint test.py` will return… ``).
    let commands = issue.lines().flat_map(|line| {
        let mut v: Vec<&str> = line.split('`').skip(1).step_by(2).collect();
        v.push(line);
        v
    });
    commands.into_iter().find_map(|c| {
        let t = c.trim();
        let t = t.strip_prefix("$ ").unwrap_or(t).trim_start();
        let rest = t.strip_prefix("pylint")?;
        if !(rest.is_empty() || rest.starts_with(' '))
            || ["|", ">", "&&", ";", "<"].iter().any(|m| rest.contains(m))
        {
            return None;
        }
        let words = shell_words(rest)?;
        // `pylint 2.12.2`: a version line, not a command.
        let version = words
            .first()
            .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit() || c == '.'));
        (!version).then_some(words)
    })
}

/// The script that runs pylint in `dei_project/` as the issue runs it (`args`), over the files
/// the issue shows: its named blocks, and for a `.py` argument that no block names, the issue's
/// first Python block that names no file. pylint is imported first (the tree's copy), then run
/// in the folder; the script ends with pylint's exit status, or reports the exception that
/// escaped it.
fn pylint_script(issue: &str, args: &[String]) -> (String, Vec<(String, String)>) {
    let mut files = named_blocks(issue);
    let unnamed = blocks(issue).into_iter().find(|b| {
        b.source == Source::Fenced
            && PY_LANGS.contains(&b.lang.as_str())
            && !files.iter().any(|(_, t)| t.trim_end() == b.text.trim_end())
    });
    if let (Some(b), Some(arg)) = (
        unnamed,
        args.iter().find(|a| {
            a.ends_with(".py") && file_name_line(a).is_some() && !files.iter().any(|(n, _)| n == *a)
        }),
    ) {
        files.push((arg.clone(), format!("{}\n", b.text.trim_end())));
    }
    let argv: Vec<String> = args.iter().map(|a| py_literal(a)).collect();
    let script = tool_script(
        project_prologue(
            "pylint run as the issue runs it, over the files it shows",
            &files,
        ),
        "from pylint.lint import Run as _dei_run",
        &format!("_dei_run([{}])\n    _dei_code = 0", argv.join(", ")),
    );
    (script, files)
}

/// A script that runs a tool in the issue's project: `prologue` writes the project
/// ([`project_prologue`]); then, from `dei_project/`, `import` imports the tool (the tree's
/// copy) and `run` runs it, setting `_dei_code` when it returns. The script ends with the
/// tool's exit status, or reports the exception that escaped it.
fn tool_script(prologue: String, import: &str, run: &str) -> String {
    format!(
        r#"{prologue}_dei_code = 1
_dei_first = None
try:
    {import}
    _dei_os.chdir(_dei_dir)
    {run}
except SystemExit as _dei_e:
    _dei_code = _dei_e.code if isinstance(_dei_e.code, int) else (0 if _dei_e.code is None else 1)
except Exception as _dei_e:
    _dei_msg = str(_dei_e).strip().splitlines()
    _dei_first = type(_dei_e).__name__
    print("{REPRO_MARK} statement 1 raised %s: %s" % (_dei_first, _dei_msg[0] if _dei_msg else ""))
_dei_sys.stdout.flush()
print("{REPRO_MARK} first exception: %s" % _dei_first if _dei_first else "{REPRO_MARK} no exception")
_dei_sys.exit(_dei_code)
"#
    )
}

/// The files of a project an issue shows: (path, text), in the order shown.
pub type ProjectFiles = Vec<(String, String)>;

/// The pytest project an issue shows: two or more [`named_blocks`], at least one of them a test
/// module (pytest-7373's `test_module_1.py` and `test_module_2.py`, whose separate globals the
/// issue is about; pytest-7220's `test_path_error.py` beside the `noxfile.py` that ran it).
/// The files, and the test modules among them in the order shown. One named test file alone
/// runs as the issue's code does (see [`wrap`]).
pub fn pytest_project(issue: &str) -> Option<(ProjectFiles, Vec<String>)> {
    let files = named_blocks(issue);
    let tests: Vec<String> = files
        .iter()
        .map(|(n, _)| n)
        .filter(|n| regress::pytest_collects(n.rsplit('/').next().unwrap_or(n)))
        .cloned()
        .collect();
    (files.len() >= 2 && !tests.is_empty()).then_some((files, tests))
}

/// The script that runs pytest in `dei_project/` over the test modules of [`pytest_project`],
/// with the first settings file the issue shows at the project's top (one of pytest's
/// [`regress::PYTEST_CONFIGS`]; else none, as for an issue's single test file), the project as
/// root folder, and the issue's own flags ([`pytest_args`]).
fn pytest_script(issue: &str, files: &[(String, String)], tests: &[String]) -> String {
    let ini = files
        .iter()
        .map(|(n, _)| n.as_str())
        .find(|n| regress::PYTEST_CONFIGS.iter().any(|(c, _)| c == n))
        .unwrap_or("/dev/null");
    let mut argv: Vec<String> = tests.iter().map(|t| py_literal(t)).collect();
    argv.extend(["\"--rootdir\"".to_string(), "_dei_dir".to_string()]);
    argv.extend(pytest_args(ini, &pytest_flags(issue)));
    tool_script(
        project_prologue("pytest run over the test files it shows", files),
        "import pytest as _dei_pytest",
        &format!(
            "_dei_sys.stdout.flush()\n    _dei_code = int(_dei_pytest.main([{}]))",
            argv.join(", ")
        ),
    )
}

/// The issue's lines, one per line of the issue, with the lines of fenced blocks (their fences
/// included) blank: fenced blocks say what they are (`ini`, `shell`, output), so their lines are
/// not prose.
fn prose_lines(issue: &str) -> Vec<&str> {
    let mut open: Option<&str> = None;
    issue
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .map(|l| match open {
            Some(mark) => {
                if fence_closes(l, mark) {
                    open = None;
                }
                ""
            }
            None => match fence_open(l.trim_start()) {
                Some(mark) => {
                    open = Some(mark);
                    ""
                }
                None => l,
            },
        })
        .collect()
}

/// The expressions an issue writes as inline code outside its fenced blocks, with their line
/// (1-based): a span between single backticks that parses as one expression that computes
/// something (a call, an operator, a comparison, a subscript), not a bare name, attribute or
/// literal: `` `0**-oo` `` and `` `latex(acsc(x))` ``, not `` `coth` `` nor `` `r.text` ``.
fn inline_expressions(issue: &str) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for (k, line) in prose_lines(issue).into_iter().enumerate() {
        for span in line.split('`').skip(1).step_by(2) {
            let span = span.trim();
            if span.is_empty() || out.iter().any(|(c, _)| c == span) || !computes(span) {
                continue;
            }
            out.push((span.to_string(), k + 1));
        }
    }
    out
}

/// `code` is one expression statement, without syntax errors, that computes something.
fn computes(code: &str) -> bool {
    let Some(tree) = python::parse(code) else {
        return false;
    };
    let root = tree.root_node();
    if root.has_error() || root.named_child_count() != 1 {
        return false;
    }
    let Some(stmt) = root
        .named_child(0)
        .filter(|n| n.kind() == "expression_statement")
    else {
        return false;
    };
    let Some(expr) = stmt
        .named_child(0)
        .filter(|_| stmt.named_child_count() == 1)
    else {
        return false;
    };
    matches!(
        expr.kind(),
        "call"
            | "binary_operator"
            | "unary_operator"
            | "comparison_operator"
            | "subscript"
            | "boolean_operator"
    )
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
        if let Some(files) = sphinx_project(issue) {
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
    // about; such code runs as a script, as before.
    let test_files = parts
        .iter()
        .filter(|p| python::parse(&p.code).is_some_and(|t| defines_tests(t.root_node(), &p.code)))
        .count();
    let code = joined(&parts);
    if code.trim().is_empty() {
        return None;
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
    let flags = pytest_flags(issue);
    let (script, statements) = wrap(&code, (test_files <= 1).then_some(&flags[..]), &cell_ends)?;
    Some(Reproduction {
        script,
        code,
        statements,
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
    pub script: String,
}

/// Words that name a reproduction script (`reproduce_bug.py`, `replicate_issue.py`,
/// `bug_reproduction.py`).
const SCRIPT_WORDS: [&str; 4] = ["reproduc", "replicat", "bug", "issue"];

/// The reproduction scripts the candidates write: Python files a patch creates at the
/// repository's root (absent at the base commit) whose names say they reproduce something.
/// In order: scripts before `test_*` files (those define tests, which run only where the
/// environment has pytest), then by agent and path; a script several candidates write comes
/// once, under the first.
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
            let Some((script, _)) = wrap(code, Some(&[]), &[]) else {
                continue;
            };
            found.push((
                name.starts_with("test"),
                AgentScript {
                    agent: agent.to_string(),
                    path: f.path.clone(),
                    script,
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

const PRELUDE: &str = r#"# Reproduction written by dei from the issue text: its code, statements in order,
# each reporting its exception and going on (like a REPL session), bare expressions printed.
import sys as _dei_sys, os as _dei_os
_dei_sys.path.insert(0, _dei_os.getcwd())
_dei_first = []
def _dei_show(value):
    if value is not None:
        print(repr(value))
def _dei_fail(n, e):
    name = type(e).__name__
    msg = str(e).strip().splitlines()
    print("@MARK@ statement %d raised %s: %s" % (n, name, msg[0] if msg else ""))
    if not _dei_first:
        _dei_first.append(name)
def _dei_hook(t, e, tb, _default=_dei_sys.excepthook):
    if not _dei_first:
        _dei_first.append(t.__name__)
    _dei_sys.stdout.flush()
    _default(t, e, tb)
    print("@MARK@ first exception: %s" % _dei_first[0])
_dei_sys.excepthook = _dei_hook
"#;

/// What [`pinned`] puts after the prelude's first import: the script starts again under hash
/// seed 0 (string hashing orders sets and sympy's terms), then seeds `random`.
const PIN: &str = r#"if _dei_os.environ.get("PYTHONHASHSEED") != "0" and _dei_sys.executable:
    _dei_os.environ["PYTHONHASHSEED"] = "0"
    _dei_sys.stdout.flush()
    _dei_os.execv(_dei_sys.executable, [_dei_sys.executable] + _dei_sys.argv)
import random as _dei_random
_dei_random.seed(0)
"#;

/// NumPy's generator too, for code that draws from it.
const PIN_NUMPY: &str = r#"try:
    import numpy as _dei_numpy
    _dei_numpy.random.seed(0)
except Exception:
    pass
"#;

/// The reproduction `script` ([`wrap`]'s) with its randomness pinned: hash seed 0, `random`
/// seeded, and NumPy's generator when the code uses it. `None` for a script without the
/// prelude (a tool run over a project). Used only when two base runs print differently, so
/// every other reproduction, and its cached runs, stays as it was.
pub fn pinned(script: &str) -> Option<String> {
    const ANCHOR: &str = "import sys as _dei_sys, os as _dei_os\n";
    let at = script.find(ANCHOR)? + ANCHOR.len();
    let numpy = script.contains("random") && (script.contains("numpy") || script.contains("np."));
    let pin = if numpy {
        format!("{PIN}{PIN_NUMPY}")
    } else {
        PIN.to_string()
    };
    Some(format!("{}{pin}{}", &script[..at], &script[at..]))
}

/// Shows a notebook cell's last value as Jupyter does: `repr`, then every rich form its type
/// defines. The text forms Jupyter renders (LaTeX, Markdown, HTML) are printed, after a line
/// naming each; the others (images, JSON, a mime bundle) are computed and dropped (a plot is
/// drawn only when its `_repr_png_` is asked for). An exception a form raises is the
/// statement's, but for an `ImportError`: a form that needs a package the environment lacks
/// (dask's HTML) is skipped, as the reporter had it. Only in scripts that call it, so every
/// other script stays as it was.
const DISPLAY: &str = r#"def _dei_display(value):
    _dei_show(value)
    if value is None:
        return
    for _dei_form in ("_repr_latex_", "_repr_markdown_", "_repr_html_", "_repr_svg_", "_repr_png_",
                      "_repr_jpeg_", "_repr_json_", "_repr_javascript_", "_repr_mimebundle_"):
        if not callable(getattr(type(value), _dei_form, None)):
            continue
        try:
            if _dei_form == "_repr_mimebundle_":
                _dei_shown = value._repr_mimebundle_(include=None, exclude=None)
            else:
                _dei_shown = getattr(value, _dei_form)()
        except ImportError:
            continue
        if _dei_form in ("_repr_latex_", "_repr_markdown_", "_repr_html_") and isinstance(_dei_shown, str):
            print("%s:" % _dei_form)
            print(_dei_shown)
"#;

/// Wrap each top-level statement: `try:` … `except Exception as e: _dei_fail(n, e)`, bare
/// expressions as `_dei_show(expr)`. A statement holding a string that spans lines is left
/// unwrapped (indenting it would change the string); an exception there ends the script
/// through the excepthook, which still prints the summary line. `from __future__` imports go
/// first.
///
/// Code that defines tests (a top-level `test*` function or `Test*` class, as a pytest issue
/// shows its `test_foo.py`) defines them and runs nothing: run as a script it would end the
/// same with every candidate. With `pytest` given, such a script then runs its own tests with
/// pytest, when the environment has it, with those flags (the issue's own, [`pytest_flags`])
/// and without the repository's pytest settings, as the issue's reporter ran them; it ends as
/// pytest does.
fn wrap(code: &str, pytest: Option<&[String]>, cell_ends: &[usize]) -> Option<(String, usize)> {
    let tree = python::parse(code)?;
    let root = tree.root_node();
    let flags = pytest.filter(|_| defines_tests(root, code));
    let mut head = String::new();
    let mut body = String::new();
    let mut n = 0;
    let mut displays = false;
    let mut c = root.walk();
    let nodes: Vec<_> = root
        .named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .collect();
    for (i, &node) in nodes.iter().enumerate() {
        let text = &code[line_start(code, node.start_byte())..node.end_byte()];
        if node.kind() == "future_import_statement" {
            head.push_str(text);
            head.push('\n');
            continue;
        }
        n += 1;
        let stmt = if node.kind() == "expression_statement"
            && !node.named_child(0).is_some_and(|x| {
                matches!(
                    x.kind(),
                    "assignment" | "augmented_assignment" | "yield" | "await"
                )
            }) {
            let inner = &code[node.start_byte()..node.end_byte()];
            let inner = inner.trim_end().trim_end_matches(';');
            // The last statement of a notebook cell: no other statement before its end.
            let next = nodes.get(i + 1).map_or(code.len(), |x| x.start_byte());
            let prints = node.named_child(0).is_some_and(|x| {
                x.kind() == "call"
                    && x.child_by_field_name("function").is_some_and(|f| {
                        matches!(&code[f.start_byte()..f.end_byte()], "print" | "pprint")
                    })
            });
            let shown = if !prints && cell_ends.iter().any(|&e| node.end_byte() <= e && e <= next) {
                displays = true;
                "_dei_display"
            } else {
                "_dei_show"
            };
            if node.named_child_count() > 1 {
                format!("{shown}(({inner}))")
            } else {
                format!("{shown}({inner})")
            }
        } else {
            text.to_string()
        };
        if has_multiline_string(node) {
            body.push_str(text);
            body.push('\n');
            continue;
        }
        body.push_str("try:\n");
        for l in stmt.lines() {
            if l.trim().is_empty() {
                body.push('\n');
            } else {
                body.push_str("    ");
                body.push_str(l);
                body.push('\n');
            }
        }
        body.push_str(&format!(
            "except Exception as _dei_e:\n    _dei_fail({n}, _dei_e)\n"
        ));
    }
    if n == 0 {
        return None;
    }
    let summary = format!(
        "print(\"{REPRO_MARK} first exception: %s\" % _dei_first[0] if _dei_first else \"{REPRO_MARK} no exception\")"
    );
    let tail = if let Some(flags) = flags {
        // Under pytest the module is imported again: the statements run once more, this
        // block does not.
        let args = pytest_args("/dev/null", flags);
        format!(
            "if __name__ == \"__main__\":\n    {summary}\n    try:\n        import pytest as _dei_pytest\n    except ImportError:\n        _dei_sys.exit(1 if _dei_first else 0)\n    _dei_sys.stdout.flush()\n    _dei_sys.exit(int(_dei_pytest.main([__file__, \"--rootdir\", _dei_os.getcwd(), {}])))\n",
            args.join(", ")
        )
    } else {
        format!("{summary}\n_dei_sys.exit(1 if _dei_first else 0)\n")
    };
    let prelude = PRELUDE.replace("@MARK@", REPRO_MARK);
    let display = if displays { DISPLAY } else { "" };
    let script = format!("{head}{prelude}{display}\n{body}{tail}");
    Some((script, n))
}

/// What a reproduction passes pytest after `--rootdir` (the working folder or the project:
/// with no settings file pytest 8 would take `/dev`), as Python string literals: the settings
/// file (`/dev/null` for none: the repository's `addopts`, `filterwarnings = error` or
/// `xfail_strict` are not the reporter's), no cache written, a summary line for each test that
/// did not pass (`-r` with letters every pytest since 3 knows), then the issue's own `flags`.
fn pytest_args(settings: &str, flags: &[String]) -> Vec<String> {
    ["-c", settings, "-p", "no:cacheprovider", "-rfEsxX"]
        .into_iter()
        .chain(flags.iter().map(String::as_str))
        .map(py_literal)
        .collect()
}

/// The code defines a test at its top level: a function named `test…` or a class named
/// `Test…`, decorated or not.
fn defines_tests(root: tree_sitter::Node, code: &str) -> bool {
    let mut c = root.walk();
    let found = root.named_children(&mut c).any(|n| {
        let def = if n.kind() == "decorated_definition" {
            n.child_by_field_name("definition")
        } else {
            Some(n)
        };
        def.and_then(|d| {
            let name = d.child_by_field_name("name")?;
            let name = &code[name.start_byte()..name.end_byte()];
            Some(match d.kind() {
                "function_definition" => name.starts_with("test"),
                "class_definition" => name.starts_with("Test"),
                _ => false,
            })
        })
        .unwrap_or(false)
    });
    found
}

/// The pytest options the issue runs its tests with that change what a run shows
/// (`pytest -rs --runxfail test_foo.py` → `--runxfail`), from every line that calls pytest
/// (`pytest`, `py.test`, `python -m pytest`), in order, each once. Options that would wait for
/// a terminal (`--pdb`), need a plugin (`-n`), or read or write other files are left out.
pub fn pytest_flags(issue: &str) -> Vec<String> {
    const SHORT: &str = "vqsxl";
    const LONG: [&str; 16] = [
        "--runxfail",
        "--exitfirst",
        "--showlocals",
        "--verbose",
        "--quiet",
        "--setup-show",
        "--setup-only",
        "--setup-plan",
        "--collect-only",
        "--co",
        "--fixtures",
        "--fixtures-per-test",
        "--strict-markers",
        "--strict",
        "--disable-warnings",
        "--doctest-modules",
    ];
    const VALUED: [&str; 6] = [
        "--tb=",
        "--capture=",
        "--import-mode=",
        "--assert=",
        "--log-level=",
        "--log-cli-level=",
    ];
    let mut out: Vec<String> = Vec::new();
    for line in issue.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words
            .iter()
            .position(|w| matches!(w.trim_start_matches('`'), "pytest" | "py.test"))
        else {
            continue;
        };
        for w in words[at + 1..].iter().map(|w| w.trim_end_matches('`')) {
            if matches!(w, "|" | "&&" | ";" | "#" | ">" | "2>&1") {
                break;
            }
            let keep = if let Some(letters) = w.strip_prefix('-').filter(|l| !l.starts_with('-')) {
                !letters.is_empty() && letters.chars().all(|c| SHORT.contains(c))
            } else {
                LONG.contains(&w) || VALUED.iter().any(|v| w.starts_with(v) && w.len() > v.len())
            };
            if keep && !out.iter().any(|o| o == w) {
                out.push(w.to_string());
            }
        }
    }
    out
}

fn has_multiline_string(node: tree_sitter::Node) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == "string" && n.start_position().row != n.end_position().row {
            return true;
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPHINX_ISSUE: &str = "**To Reproduce**\n\n```\n# example.py\nvar: String\n```\n```\n# index.rst\n.. automodule:: example\n   :members:\n```\nand in\n\n**docs/../conf.py**:\n```\nautodoc_type_aliases = {'String': 'example.MyString'}\n```\n`conf.py`:\n```python\nautodoc_type_aliases = {'String': 'example.MyString'}\n```\n- Sphinx extensions: sphinx.ext.autodoc, sphinx.ext.napoleon\n";

    #[test]
    fn without_code_the_expressions_an_issue_writes_inline() {
        let issue = "Using SymPy 1.5.1, evaluate `0**-oo` produces `0`, and `r.text` or\n`next(resp.iter_content(16*1024))` fail; `Symbol` is fine.\n```\n`Rational(1, 2)` inside a fence\n```\n";
        let found: Vec<String> = inline_expressions(issue).into_iter().map(|e| e.0).collect();
        assert_eq!(found, ["0**-oo", "next(resp.iter_content(16*1024))"]);
        let mut names = names();
        names.exported.insert("oo".into(), "sympy".into());
        let r = reproduction(issue, &names).unwrap();
        // `resp` is bound nowhere: that expression is left out.
        assert_eq!(r.code, "from sympy import oo\n0**-oo");
        assert_eq!(r.sources, vec![(Source::Inline, 1)]);
        // With code in the issue, inline expressions are not read.
        let with_block = format!("{issue}```python\nx = 1\n```\n");
        assert!(!reproduction(&with_block, &names)
            .unwrap()
            .code
            .contains("oo"));
    }

    #[test]
    fn an_issues_sphinx_project_is_its_named_blocks() {
        let files = sphinx_project(SPHINX_ISSUE).unwrap();
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        // Named by a first line or by the line before the fence; `..` is no file name.
        assert_eq!(names, ["example.py", "index.rst", "conf.py"]);
        assert_eq!(files[0].1, "var: String\n");
        assert_eq!(
            files[2].1,
            "autodoc_type_aliases = {'String': 'example.MyString'}\n"
        );
        // No root document, no project.
        assert!(sphinx_project("```\n# example.py\nx = 1\n```\n").is_none());
        for (line, want) in [
            ("# conf.py", Some("conf.py")),
            (".. index.rst", Some("index.rst")),
            ("**docs/index.rst**:", Some("docs/index.rst")),
            (
                "`_templates/autosummary/module.rst`:",
                Some("_templates/autosummary/module.rst"),
            ),
            ("# in conf.py", Some("conf.py")),
            ("Simple `helloworld.py`", Some("helloworld.py")),
            ("# Set up the project", None),
            ("/etc/conf.py", None),
            ("then run it as python3 example.py", None),
            ("example.py is", None),
        ] {
            assert_eq!(file_name_line(line), want, "{line}");
        }
    }

    #[test]
    fn in_a_sphinx_repository_the_project_is_built() {
        let mut names = names();
        assert!(
            reproduction(SPHINX_ISSUE, &names).is_some_and(|r| !r.script.contains("_dei_build"))
        );
        names.modules.insert("sphinx".into());
        let r = reproduction(SPHINX_ISSUE, &names).unwrap();
        assert_eq!(r.statements, 1);
        assert!(
            r.code.starts_with("# example.py\nvar: String\n"),
            "{}",
            r.code
        );
        // The conf.py dei writes loads the extensions the issue names, then holds the issue's.
        assert!(
            r.script.contains("extensions = [\\\"sphinx.ext.autodoc\\\", \\\"sphinx.ext.napoleon\\\"]\\nmaster_doc = 'index'\\nautodoc_type_aliases"),
            "{}",
            r.script
        );
        assert!(
            r.script.contains("_dei_build([\"-b\", \"text\""),
            "{}",
            r.script
        );
        assert!(r
            .script
            .contains("\"index.rst\": \".. automodule:: example\\n   :members:\\n\""));
    }

    #[test]
    fn the_pylint_command_an_issue_runs_over_the_files_it_shows() {
        let issue = "pylint 2.12.2 is installed.\n```python\n# YES: yes\n# ???: no\n```\n`pylint test.py --notes=\"YES,???\"` will return a warning.\n.pylintrc:\n```ini\n[MASTER]\nnotes=YES\n```\n";
        let args = pylint_command(issue).unwrap();
        assert_eq!(
            args,
            ["test.py", "--notes=YES,???"],
            "the version line is no command"
        );
        let (script, files) = pylint_script(issue, &args);
        assert_eq!(
            files,
            [
                (".pylintrc".to_string(), "[MASTER]\nnotes=YES\n".to_string()),
                ("test.py".to_string(), "# YES: yes\n# ???: no\n".to_string()),
            ]
        );
        assert!(
            script.contains("_dei_run([\"test.py\", \"--notes=YES,???\"])"),
            "{script}"
        );
        // A command that pipes into another is not run; nor is a line only naming pylint.
        assert!(pylint_command("$ pylint a.py | grep W0511\nabout pylint itself\n").is_none());
        assert_eq!(pylint_command("```\n$ pylint -Q\n```").unwrap(), ["-Q"]);
        let mut names = names();
        assert!(reproduction(issue, &names).is_none_or(|r| !r.script.contains("_dei_run")));
        names.modules.insert("pylint".into());
        assert!(reproduction(issue, &names).is_some_and(|r| r.script.contains("_dei_run")));
    }

    #[test]
    fn shell_words_as_a_shell_splits_them() {
        assert_eq!(
            shell_words(
                r#"test.py --msg-template='{{ "Category": "{category}" }}' -x "a \"b\" \c" d"#
            )
            .unwrap(),
            [
                "test.py",
                r#"--msg-template={{ "Category": "{category}" }}"#,
                "-x",
                r#"a "b" \c"#,
                "d"
            ]
        );
        assert!(shell_words("unclosed 'quote").is_none());
    }

    #[test]
    fn the_issues_pytest_flags_that_change_what_a_run_shows() {
        let issue = "Run it:\n```\n$ pytest -rs --runxfail test_it.py\n$ python -m pytest -sv --tb=short --pdb -n 4 x.py | tee log\n```\nWith `pytest --runxfail` the location is wrong. pytest 5.4 prints --fixtures.\n";
        assert_eq!(
            pytest_flags(issue),
            vec!["--runxfail", "-sv", "--tb=short"],
            "-rs is asked anyway; --pdb, -n and what follows a pipe are not kept; a word after \"pytest\" in prose is no flag"
        );
        assert!(pytest_flags("no command here --runxfail").is_empty());
    }

    #[test]
    fn an_issues_test_file_runs_with_pytest_and_two_named_ones_as_a_project() {
        let one = "```python\nimport pytest\n\n@pytest.mark.skip\ndef test_a():\n    assert 0\n```\nThen `pytest -rs --runxfail` shows the wrong location.\n";
        let r = reproduction(one, &names()).unwrap();
        assert!(
            r.script.contains("\"-rfEsxX\", \"--runxfail\"])"),
            "{}",
            r.script
        );
        // Two test files sharing a global's name: one module would merge them. Named, they are
        // written as two files and pytest runs both, in the order shown, with the issue's flags.
        let two = "test_1.py:\n```python\nskip = True\ndef test_a():\n    assert 0\n```\ntest_2.py:\n```python\nskip = False\ndef test_b():\n    assert 0\n```\nRun `pytest --runxfail test_1.py test_2.py`.\n";
        let r = reproduction(two, &names()).unwrap();
        assert!(
            r.script
                .contains("\"test_2.py\": \"skip = False\\ndef test_b():\\n    assert 0\\n\","),
            "{}",
            r.script
        );
        assert!(
            r.script.contains("_dei_pytest.main([\"test_1.py\", \"test_2.py\", \"--rootdir\", _dei_dir, \"-c\", \"/dev/null\", \"-p\", \"no:cacheprovider\", \"-rfEsxX\", \"--runxfail\"])"),
            "{}",
            r.script
        );
        assert_eq!(r.statements, 1);
        // A settings file the issue shows is the one pytest reads.
        let ini = format!("{two}pytest.ini:\n```ini\n[pytest]\nxfail_strict = true\n```\n");
        let r = reproduction(&ini, &names()).unwrap();
        assert!(
            r.script.contains("\"-c\", \"pytest.ini\", \"-p\""),
            "{}",
            r.script
        );
        // Unnamed, they still run as one script that runs no test.
        let unnamed = two.replace("test_1.py:\n", "").replace("test_2.py:\n", "");
        let r = reproduction(&unnamed, &names()).unwrap();
        assert!(!r.script.contains("_dei_pytest"), "{}", r.script);
        // A named test file beside a file it does not run (pytest-7220's noxfile.py).
        let (files, tests) = pytest_project(
            "test_x.py:\n```python\ndef test_a():\n    pass\n```\nnoxfile.py:\n```python\nimport nox\n```\n",
        )
        .unwrap();
        assert_eq!((files.len(), tests), (2, vec!["test_x.py".to_string()]));
        // One named test file alone, or named files none of which is a test: no project.
        assert!(pytest_project("test_x.py:\n```python\ndef test_a():\n    pass\n```\n").is_none());
        assert!(
            pytest_project("a.py:\n```python\nx = 1\n```\nb.py:\n```python\ny = 2\n```\n")
                .is_none()
        );
    }

    #[test]
    fn code_that_defines_tests_runs_them_with_pytest() {
        let test = "import pytest\n\n@pytest.mark.skip\ndef test_skip_location():\n    assert 0\n";
        let (script, n) = wrap(test, Some(&["--runxfail".to_string()]), &[]).unwrap();
        assert_eq!(n, 2);
        assert!(script.contains("if __name__ == \"__main__\":"), "{script}");
        assert!(
            script.contains("_dei_pytest.main([__file__, \"--rootdir\", _dei_os.getcwd(), \"-c\", \"/dev/null\", \"-p\", \"no:cacheprovider\", \"-rfEsxX\", \"--runxfail\"])"),
            "{script}"
        );
        for code in [
            "class TestIt:\n    def test_a(self):\n        pass\n",
            "async def test_a():\n    pass\n",
        ] {
            let (script, _) = wrap(code, Some(&[]), &[]).unwrap();
            assert!(script.contains("_dei_pytest.main"), "{code}");
        }
        // Code that defines no test, or only calls one, runs as a script.
        for code in [
            "def helper():\n    pass\nhelper()\n",
            "test_it()\n",
            "testing = 1\n",
        ] {
            let (script, _) = wrap(code, Some(&[]), &[]).unwrap();
            assert!(!script.contains("pytest"), "{code}");
            assert!(
                script.ends_with("_dei_sys.exit(1 if _dei_first else 0)\n"),
                "{script}"
            );
        }
    }

    fn names() -> RepoNames {
        let files = FileIndex::from_pairs(vec![
            (
                "sympy/__init__.py".into(),
                "from .core import *\nfrom .printing import ccode, latex\n__version__ = '1.1'\n"
                    .into(),
            ),
            (
                "sympy/core/__init__.py".into(),
                "from .symbol import Symbol, symbols\nfrom .numbers import Rational\n".into(),
            ),
            (
                "sympy/core/symbol.py".into(),
                "class Symbol:\n    pass\ndef symbols(s):\n    pass\n".into(),
            ),
            (
                "sympy/core/numbers.py".into(),
                "class Rational:\n    pass\n".into(),
            ),
            (
                "sympy/printing/__init__.py".into(),
                "from .ccode import ccode\n".into(),
            ),
            (
                "sympy/printing/ccode.py".into(),
                "def ccode(e):\n    pass\ndef _private():\n    pass\n".into(),
            ),
            ("setup.py".into(), "import setuptools\n".into()),
            ("isympy.py".into(), "def main():\n    pass\n".into()),
            ("doc/conf.py".into(), "x = 1\n".into()),
            ("sympy/abc.py".into(), "from sympy import symbols\n".into()),
        ]);
        RepoNames::from_repo(&files)
    }

    #[test]
    fn agent_scripts_are_new_root_files_named_like_reproductions() {
        use crate::model::{Applies, FileView, PatchView};
        let repo = FileIndex::from_pairs(vec![("isympy.py".into(), "x = 1\n".into())]);
        let file = |path: &str, before: Option<&str>, after: &str| FileView {
            path: path.into(),
            before: before.map(str::to_string),
            after: Some(after.into()),
            hunks: vec![],
            changed_before: vec![],
            changed_after: vec![],
            hunk_info: vec![],
            error: None,
        };
        let view = |files: Vec<FileView>| PatchView {
            applies: Applies::Clean,
            files,
            error: None,
            lines_added: 1,
            lines_removed: 0,
        };
        let b = view(vec![
            file("test_bug.py", None, "def test_x():\n    pass\n"),
            file("reproduce_bug.py", None, "print(1)\n"),
            // Not a reproduction by its name, nested, or already in the repository.
            file("check_version.py", None, "print(2)\n"),
            file("sympy/reproduce.py", None, "print(3)\n"),
            file("isympy.py", Some("x = 1\n"), "print(4)\n"),
        ]);
        // The same script as agent b's comes once, under the first agent in order.
        let a = view(vec![file("replicate_issue.py", None, "print(1)\n")]);
        let c = view(vec![file("issue.py", None, "print(5)\n")]);
        let got = agent_scripts(&[("b", &b), ("c", &c), ("a", &a)], &repo);
        let got: Vec<(&str, &str)> = got
            .iter()
            .map(|s| (s.agent.as_str(), s.path.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "replicate_issue.py"),
                ("c", "issue.py"),
                ("b", "test_bug.py")
            ]
        );
        let s = &agent_scripts(&[("c", &c)], &repo)[0];
        assert!(s.script.contains("_dei_show(print(5))") || s.script.contains("print(5)"));
        assert!(s.script.contains(REPRO_MARK));
    }

    #[test]
    fn repository_names_follow_star_imports() {
        let n = names();
        assert!(n.modules.contains("sympy") && n.modules.contains("isympy"));
        assert!(!n.modules.contains("setup"));
        assert_eq!(n.exported.get("Symbol").map(String::as_str), Some("sympy"));
        assert_eq!(n.exported.get("ccode").map(String::as_str), Some("sympy"));
        assert!(!n.exported.contains_key("_private"));
    }

    /// sympy-11400-like: a `>>>` session outside a fence, with outputs.
    #[test]
    fn doctest_session_loses_prompts_and_outputs_and_gains_imports() {
        let issue = "ccode(sinc(x)) doesn't work\n\n```\n>>> x = symbols('x')\n>>> ccode(sinc(x))\n'// Not supported in C:\\n// sinc\\nsinc(x)'\n>>> for i in range(2):\n...     print(i)\n...\n0\n1\n```\n\nI think it should return something else.\n";
        let r = reproduction(issue, &names()).expect("code found");
        assert_eq!(r.code, "from sympy import symbols\nfrom sympy import ccode\nx = symbols('x')\nccode(sinc(x))\nfor i in range(2):\n    print(i)");
        assert!(
            r.imports_added.iter().all(|i| !i.contains("sinc")),
            "sinc is not exported: {:?}",
            r.imports_added
        );
        assert_eq!(r.statements, 5);
        assert!(
            r.script.contains("    _dei_show(ccode(sinc(x)))\n"),
            "{}",
            r.script
        );
        assert!(!r.script.contains("sinc(x)'"), "output dropped");
    }

    #[test]
    fn ipython_session_and_fenced_script_with_its_traceback() {
        let issue = "In [1]: import requests\n\nIn [2]: r = requests.get('http://x',\n   ...:                  hooks={'response': [f]})\n\nOut[2]: <Response [200]>\n";
        let (code, src) = issue_code(issue);
        assert_eq!(code, "import requests\nr = requests.get('http://x',\n                 hooks={'response': [f]})");
        assert_eq!(src[0].0, Source::IPython);
        let issue = "Example:\n```python\nimport flask\napp = flask.Flask(__name__)\napp.register_blueprint(bp)\nTraceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nValueError: dotted name\n```\n";
        let (code, _) = issue_code(issue);
        assert_eq!(
            code,
            "import flask\napp = flask.Flask(__name__)\napp.register_blueprint(bp)"
        );
    }

    #[test]
    fn shell_diffs_output_and_prose_are_not_python() {
        for (lang, text) in [
            ("", "$ pip install requests\n$ python t.py"),
            ("bash", "python -m pytest -x"),
            ("", "diff --git a/x.py b/x.py\n@@ -1 +1 @@\n-a\n+b"),
            ("", "--- a/x.py\n+++ b/x.py\n-    return a\n+    return b"),
            (
                "",
                "AttributeError: 'NoneType' object has no attribute 'group'",
            ),
            (
                "",
                "This happens every time I run it and it is very annoying to see.",
            ),
            ("text", "x = 1"),
            ("", "42"),
        ] {
            let b = Block {
                source: Source::Fenced,
                lang: lang.into(),
                line: 1,
                text: text.into(),
                closed: true,
            };
            assert_eq!(block_code(&b), None, "{text}");
        }
    }

    #[test]
    fn indented_snippets_python2_prints_and_traceback_statements() {
        let issue = "Run this:\n\n    import requests\n    print requests.get(url).status_code\n\nand see.\n";
        let (code, src) = issue_code(issue);
        assert_eq!(
            code,
            "import requests\nprint(requests.get(url).status_code)"
        );
        assert_eq!(src, vec![(Source::Indented, 3)]);
        // Only a traceback: its top-level user statements.
        let issue = "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n    Permutation([[0, 1], [0, 1]])\n  File \"/usr/lib/python3/site-packages/sympy/combinatorics/permutations.py\", line 900, in __new__\n    raise ValueError('there were repeated elements.')\nValueError: there were repeated elements.\n";
        let (code, src) = issue_code(issue);
        assert_eq!(code, "Permutation([[0, 1], [0, 1]])");
        assert_eq!(src[0].0, Source::Traceback);
        // With other code, tracebacks add nothing.
        let both = format!("```python\nfrom sympy.combinatorics import Permutation\n```\n{issue}");
        assert_eq!(
            issue_code(&both).0,
            "from sympy.combinatorics import Permutation"
        );
    }

    /// A name the package does not export, that one library module alone defines at top level,
    /// is imported from that module; one that two modules define, a test's, a private
    /// module's, or one used after a star import, is not. Letters stay sympy's, `u` included.
    #[test]
    fn implied_imports_from_the_one_module_that_defines_a_name() {
        let files = FileIndex::from_pairs(vec![
            ("sympy/__init__.py".into(), "from .core import *\n".into()),
            (
                "sympy/core/__init__.py".into(),
                "def S():\n    pass\n".into(),
            ),
            (
                "sympy/utilities/iterables.py".into(),
                "def multiset(s):\n    pass\ndef uniq(s):\n    pass\nclass Both:\n    pass\n"
                    .into(),
            ),
            (
                "sympy/polys/misc.py".into(),
                "class Both:\n    pass\n".into(),
            ),
            (
                "sympy/utilities/tests/test_iterables.py".into(),
                "def helper():\n    pass\ndef uniq(s):\n    pass\n".into(),
            ),
            (
                "sympy/_private.py".into(),
                "def hidden():\n    pass\n".into(),
            ),
            ("sympy/abc.py".into(), "u = 1\n".into()),
        ]);
        let n = RepoNames::from_repo(&files);
        assert_eq!(
            implied_imports(
                "multiset('THISTLE')\nuniq(f)\nBoth()\nhelper()\nhidden()\nS()\nu + 1\n",
                &n
            ),
            vec![
                "from sympy.utilities.iterables import multiset",
                "from sympy.utilities.iterables import uniq",
                "from sympy.abc import f",
                "from sympy import S",
                "from sympy.abc import u",
            ]
        );
        assert_eq!(
            implied_imports("from sympy import *\nmultiset('a')\n", &n),
            Vec::<String>::new()
        );
        // Inline code in prose counts only names the packages export.
        assert!(reproduction("Calling `multiset('ab')` is slow.", &n).is_none());
        assert!(reproduction("Calling `S(2) + 1` is slow.", &n).is_some());
        assert_eq!(
            library_module("src/_pytest/python.py", &["_pytest".to_string()].into()),
            Some("_pytest.python".to_string())
        );
        assert_eq!(
            library_module("sympy/core/__init__.py", &["sympy".to_string()].into()),
            Some("sympy.core".to_string())
        );
        assert_eq!(
            library_module("setup.py", &["sympy".to_string()].into()),
            None
        );
    }

    #[test]
    fn implied_imports_skip_bound_names_and_star_imports() {
        let n = names();
        let code = "import os\ndef f(a, b=Rational):\n    return a\nfor k, v in things:\n    pass\nx = Symbol('x')\nnp.array([1])\nsys.exit(0)\nlatex(x)\nisympy.main()\n";
        assert_eq!(
            implied_imports(code, &n),
            vec![
                "from sympy import Rational",
                "from sympy import Symbol",
                "import numpy as np",
                "import sys",
                "from sympy import latex",
                "import isympy"
            ]
        );
        assert!(implied_imports("from sympy import *\nx = Symbol('x')\n", &n).is_empty());
        // Letters the issue never binds come from the symbol module, after a star import too;
        // a bound letter, or a repository without one, gets nothing.
        assert_eq!(
            implied_imports(
                "from sympy import *\ny = 2\nexpand((x + y)**2 * alpha)\n",
                &n
            ),
            vec!["from sympy.abc import x", "from sympy.abc import alpha"]
        );
        let without = RepoNames {
            symbols: None,
            ..n.clone()
        };
        assert!(implied_imports("from sympy import *\nexpand(x)\n", &without).is_empty());
        assert!(implied_imports("class A(Base):\n    def m(self):\n        return self.y\nobj.Symbol = 1\ncall(Symbol=2)\n", &n).is_empty());
        // seaborn's objects interface by its conventional alias.
        assert_eq!(
            implied_imports("so.Plot([1], [2]).add(so.Line())\n", &n),
            vec!["import seaborn.objects as so"]
        );
    }

    /// An import binds only what follows it (xarray-4493 uses `xr` in its first block and
    /// imports it in its second); an assignment or definition binds wherever it is, and a star
    /// import stops export imports only for the uses after it.
    #[test]
    fn a_name_used_before_the_issue_imports_it_is_imported_first() {
        let n = names();
        assert_eq!(
            implied_imports(
                "foo = xr.DataArray(np.ones(3))\nimport numpy as np\nimport xarray as xr\nxr.Dataset()\n",
                &n
            ),
            vec!["import xarray as xr", "import numpy as np"]
        );
        assert!(implied_imports("import xarray as xr\nxr.Dataset()\n", &n).is_empty());
        assert!(
            implied_imports("def f():\n    return g()\ndef g():\n    return 1\n", &n).is_empty()
        );
        assert_eq!(
            implied_imports(
                "x = Symbol('x')\nfrom sympy import *\ny = Rational(1, 2)\n",
                &n
            ),
            vec!["from sympy import Symbol"]
        );
    }

    #[test]
    fn statements_with_multiline_strings_are_left_unwrapped() {
        let r = reproduction(
            "```python\ns = '''a\nb'''\nlen(s)\n```",
            &RepoNames::default(),
        )
        .unwrap();
        assert!(
            r.script
                .contains("\ns = '''a\nb'''\ntry:\n    _dei_display(len(s))\n"),
            "{}",
            r.script
        );
    }

    /// django-11001-like (Trac export): code lines inside prose, with a tab-indented body.
    #[test]
    fn code_inside_prose_without_markup() {
        let issue = "Description\n\t\nHi.\nThe bug is in SQLCompiler.get_order_by(), around this line:\nwithout_ordering = self.ordering_parts.search(sql).group(1)\nAs a fix:\nsql_oneline = ' '.join(sql.split('\\n'))\ndef render(self, context):\n\turl = self.url(context)\n\treturn url\nOutput:\n    bell(oo)\nif broken:\nThanks.\n";
        let (code, src) = issue_code(issue);
        assert_eq!(
            code,
            "without_ordering = self.ordering_parts.search(sql).group(1)\nsql_oneline = ' '.join(sql.split('\\n'))\ndef render(self, context):\n    url = self.url(context)\n    return url"
        );
        assert_eq!(src, vec![(Source::Loose, 5)]);
    }

    /// pylint-7080: an `ini` block and a shell block, no Python. The lines of a fenced block
    /// are not prose, so `[tool.pylint.MASTER]` is not read as a list display.
    #[test]
    fn fenced_blocks_of_other_languages_are_not_loose_code() {
        let issue = "Bug\n\n```ini\n[tool.pylint.MASTER]\nignore_paths = [\"^src/gen/.*$\"]\n```\n\n```shell\npylint --recursive=y src/\n```\nThen run(x) fails.\n";
        assert_eq!(issue_code(issue).0, "");
        let outside = format!("{issue}\nresult = compute(3)\n");
        assert_eq!(issue_code(&outside).0, "result = compute(3)");
        assert_eq!(issue_code(&outside).1, vec![(Source::Loose, 13)]);
        // A tilde fence, and a backtick line inside it, do not end it early.
        let tilde = "Bug\n\n~~~toml\n[tool.x]\n```\ny = [1]\n~~~\nz = g(2)\n";
        assert_eq!(issue_code(tilde).0, "z = g(2)");
    }

    /// What tree-sitter accepts and CPython does not is dropped: an empty block, a label that
    /// reads as an annotation, a statement indented at top level, a lone operator.
    #[test]
    fn statements_cpython_would_refuse_are_dropped() {
        let b = |t: &str| Block {
            source: Source::Fenced,
            lang: "python".into(),
            line: 1,
            text: t.into(),
            closed: true,
        };
        assert_eq!(
            block_code(&b("x = f()\nif not x:\ny = 2\n")).as_deref(),
            Some("x = f()\ny = 2")
        );
        assert_eq!(
            block_code(&b("a = 1\nb = 2\nOutput:\n    bell(oo)\n")).as_deref(),
            Some("a = 1\nb = 2")
        );
        assert_eq!(
            block_code(&b("a = 1\nb = 2\nc = 3\n>\n")).as_deref(),
            Some("a = 1\nb = 2\nc = 3")
        );
        assert_eq!(
            block_code(&b("x: int = 1\n")).as_deref(),
            Some("x: int = 1"),
            "an annotated assignment is code"
        );
        assert_eq!(
            block_code(&b("a = 1\nb = 2\n`a`\n")).as_deref(),
            Some("a = 1\nb = 2"),
            "Python 2 backticks"
        );
    }

    /// A library's source pasted into the issue (sympy-12454, -13177, -24152): CPython
    /// refuses the whole script for a `return` outside a function or a `break` outside a
    /// loop, so no statement of the reproduction would run; a label over the lines it names
    /// reads as an annotation whose type is on the next line (sympy-22840's `ccode:`).
    #[test]
    fn statements_that_would_stop_the_script_compiling_are_dropped() {
        let b = |t: &str| Block {
            source: Source::Fenced,
            lang: "python".into(),
            line: 1,
            text: t.into(),
            closed: true,
        };
        let kept = |t: &str| block_code(&b(t));
        assert_eq!(
            kept("a = f(1)\nif a == b:\n    return S.Zero\nprint(a)\n").as_deref(),
            Some("a = f(1)\nprint(a)")
        );
        assert_eq!(
            kept("x = [1]\nfor i in x:\n    print(i)\nbreak\nprint(x)\n").as_deref(),
            Some("x = [1]\nfor i in x:\n    print(i)\nprint(x)")
        );
        assert_eq!(
            kept("s = g(2)\nyield s\nawait s\nprint(s)\n").as_deref(),
            Some("s = g(2)\nprint(s)")
        );
        // Where they belong they stay: in a function, a loop, a lambda; a loop's `break`
        // inside a function, and a `return` in a loop in a function.
        let fine = "def f(x):\n    for i in x:\n        if i:\n            break\n        continue\n    return x\ng = lambda: (yield)\nwhile True:\n    break\nasync def h():\n    await f([])\n";
        assert_eq!(kept(fine).as_deref(), Some(fine.trim_end()));
        // A class body is not a function's: `return` there is refused.
        assert_eq!(
            kept("a = 1\nb = 2\nclass C:\n    return 1\n").as_deref(),
            Some("a = 1\nb = 2")
        );
        assert_eq!(
            kept("a = h(1)\nccode:\n    x0[0] = a[0]\nx1 = a[1]\n").as_deref(),
            Some("a = h(1)\nx1 = a[1]")
        );
    }

    #[test]
    fn no_code_no_reproduction() {
        assert!(reproduction("The docs say X but Y happens. Please fix.", &names()).is_none());
    }

    /// The script runs: exceptions reported per statement, the session goes on, bare values
    /// printed, the summary line last, exit status 1 after a failure.
    #[test]
    fn the_script_runs_like_a_repl_session() {
        let issue = "```python\n>>> d = {'a': 1}\n>>> d['a']\n1\n>>> d['b']\nKeyError: 'b'\n>>> [k for k in d]\n['a']\n>>> int('x')\n```\n";
        let r = reproduction(issue, &RepoNames::default()).unwrap();
        let Some(out) = run_python("the_script_runs_like_a_repl_session", &r.script, &[]) else {
            return;
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout,
            "1\n[dei-repro] statement 3 raised KeyError: 'b'\n['a']\n[dei-repro] statement 5 raised ValueError: invalid literal for int() with base 10: 'x'\n[dei-repro] first exception: KeyError\n"
        );
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            crate::exec::outcome::final_exception(&stdout).as_deref(),
            Some("KeyError")
        );
    }

    /// A notebook cell's last value is shown as Jupyter shows it: its LaTeX form printed, its
    /// image form computed (an exception there is the statement's). Other bare values, a
    /// session's and a `print` call's, are shown by `repr` only.
    #[test]
    fn a_cells_last_value_is_displayed_like_a_notebook() {
        let issue = "The plot fails:\n```python\nclass P:\n    def __repr__(self):\n        return 'P'\n    def _repr_latex_(self):\n        return '$p$'\n    def _repr_html_(self):\n        import dei_no_such_module\n    def _repr_png_(self):\n        raise TypeError('cannot draw')\nP()\nP()\n```\nIn a shell:\n```\n>>> P()\nP\n```\n```python\nprint(1)\n```\n";
        let r = reproduction(issue, &RepoNames::default()).unwrap();
        assert_eq!(
            r.script.matches("_dei_display(P())").count(),
            1,
            "{}",
            r.script
        );
        assert_eq!(
            r.script.matches("_dei_show(P())").count(),
            2,
            "{}",
            r.script
        );
        assert!(r.script.contains("_dei_show(print(1))"), "{}", r.script);
        // A script with no cell's value to show is as it was.
        let plain = reproduction("```python\n>>> P()\n```\n", &RepoNames::default()).unwrap();
        assert!(!plain.script.contains("_dei_display"), "{}", plain.script);
        let Some(out) = run_python(
            "a_cells_last_value_is_displayed_like_a_notebook",
            &r.script,
            &[],
        ) else {
            return;
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "P\nP\n_repr_latex_:\n$p$\n[dei-repro] statement 3 raised TypeError: cannot draw\nP\n1\n[dei-repro] first exception: TypeError\n"
        );
    }

    /// Pinned, the script prints the same under any hash seed: it starts again under seed 0
    /// and seeds `random`; unpinned, a set of strings prints in another order under another
    /// seed. NumPy is seeded only for code that draws from it; a tool's script is not pinned.
    #[test]
    fn a_pinned_reproduction_prints_alike_under_any_hash_seed() {
        let issue = "```python\nimport random\nrandom.random()\nlist({'w%d' % i for i in range(30)})\n```\n";
        let r = reproduction(issue, &RepoNames::default()).unwrap();
        let pin = pinned(&r.script).unwrap();
        assert!(!pin.contains("_dei_numpy"), "{pin}");
        let np =
            reproduction("```python\nnp.random.rand(3)\n```\n", &RepoNames::default()).unwrap();
        assert!(
            pinned(&np.script).is_some_and(|p| p.contains("_dei_numpy.random.seed(0)")),
            "{}",
            np.script
        );
        assert_eq!(pinned("print(1)\n"), None);
        let run = |script: &str, seed: &str| {
            run_python(
                "a_pinned_reproduction_prints_alike_under_any_hash_seed",
                script,
                &[("PYTHONHASHSEED", seed)],
            )
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        };
        let Some(a) = run(&r.script, "1") else {
            return;
        };
        assert_ne!(Some(a), run(&r.script, "2"));
        let p1 = run(&pin, "1").unwrap();
        assert!(
            p1.contains("'w0'") && p1.ends_with("no exception\n"),
            "{p1}"
        );
        assert_eq!(Some(p1), run(&pin, "2"));
    }

    /// A submodule the code reaches through its package's attributes is imported, as it was in
    /// the reporter's session (sphinx-8713's `sphinx.ext.napoleon.NumpyDocstring`), unless the
    /// code imports it or its package's `__init__.py` names it (sympy binds `printing.ccode`
    /// to a function; importing `printing/ccode.py` would rebind it to the module).
    #[test]
    fn a_submodule_reached_through_attributes_is_imported() {
        let tree: Vec<(&str, &str)> = vec![
            ("pkg/__init__.py", "from . import printing\n"),
            ("pkg/ext/__init__.py", "\"\"\"Extensions.\"\"\"\n"),
            (
                "pkg/ext/nap/__init__.py",
                "def Doc(s):\n    return 'doc: ' + s\n",
            ),
            ("pkg/printing/__init__.py", "from .ccode import ccode\n"),
            ("pkg/printing/ccode.py", "def ccode(x):\n    return 'c'\n"),
            ("pkg/tests/test_nap.py", "def test():\n    pass\n"),
        ];
        let files = FileIndex::from_pairs(
            tree.iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
        );
        let n = RepoNames::from_repo(&files);
        let code = "import pkg\nprint(pkg.ext.nap.Doc('x'))\nprint(pkg.printing.ccode(1))\n";
        assert_eq!(implied_imports(code, &n), vec!["import pkg.ext.nap"]);
        // Imported by the code itself, reached through a call, or not the repository's.
        for code in [
            "import pkg.ext.nap\npkg.ext.nap.Doc('x')\n",
            "from pkg.ext.nap import Doc\npkg.ext.nap.Doc('x')\n",
            "import pkg\nf().ext.nap.Doc('x')\n",
            "import os\nos.path.join('a')\n",
        ] {
            assert!(
                implied_imports(code, &n).iter().all(|l| !l.contains("nap")),
                "{code}: {:?}",
                implied_imports(code, &n)
            );
        }
        let r = reproduction(&format!("```python\n{code}```\n"), &n).unwrap();
        let Some(out) = run_python_with(
            "a_submodule_reached_through_attributes_is_imported",
            &r.script,
            &[],
            &tree,
        ) else {
            return;
        };
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "doc: x\nc\n[dei-repro] no exception\n",
            "{}",
            r.script
        );
    }

    /// Run `script` with the machine's python3 in a scratch folder, with these variables set;
    /// `None`, said as `SKIPPED <test>: …` where a plain `cargo test` shows it (the stderr
    /// handle, which the harness does not capture), when there is no python3.
    fn run_python(test: &str, script: &str, vars: &[(&str, &str)]) -> Option<std::process::Output> {
        run_python_with(test, script, vars, &[])
    }

    /// [`run_python`], with these files (relative path, text) written beside the script.
    fn run_python_with(
        test: &str,
        script: &str,
        vars: &[(&str, &str)],
        files: &[(&str, &str)],
    ) -> Option<std::process::Output> {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let path = dir.path().join("repro.py");
        std::fs::write(&path, script).unwrap();
        let out = std::process::Command::new("python3")
            .arg(&path)
            .envs(vars.iter().copied())
            .current_dir(dir.path())
            .output();
        if out.is_err() {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {test}: no python3 on PATH"
            );
        }
        out.ok()
    }
}
