//! The code an issue shows: fenced blocks, `>>>` and `In [n]:` sessions, indented snippets,
//! lines of code in the prose, inline expressions and the statements of tracebacks, each turned
//! into Python 3 statements.

use crate::syntax::python;

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
pub(super) const PY_LANGS: [&str; 11] = [
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
    doctest_code(t).is_some()
}

/// The code after a doctest prompt: `>>> code`, a bare `>>>`, or `>>>code` as a reporter
/// types it without the space (`>>>convert_to(joule*second,joule)`). Not `>>>>` (a quote),
/// nor a prompt followed by a tab.
fn doctest_code(t: &str) -> Option<&str> {
    let rest = t.strip_prefix(">>>")?;
    match rest.chars().next() {
        None => Some(""),
        Some(' ') => Some(&rest[1..]),
        Some(c) if c.is_whitespace() || c == '>' => None,
        Some(_) => Some(rest),
    }
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

/// Where a reporter's note written after the code on a prompt line starts: two spaces, then
/// an arrow pointing back at the code (`solve(...)  <--- this is not handled correctly`).
const NOTE_ARROWS: [&str; 4] = ["  <-", "  <=", "  ←", "  ⟵"];

/// A prompt line's `code` without the note after it ([`NOTE_ARROWS`]), when the line does not
/// parse with it and does without it: `x  <-- 1` parses (`x < --1`) and is kept whole.
fn without_note(code: &str) -> &str {
    let Some(at) = NOTE_ARROWS.iter().filter_map(|a| code.find(a)).min() else {
        return code;
    };
    let cut = code[..at].trim_end();
    if !cut.is_empty() && !python::parses_cleanly(code) && python::parses_cleanly(cut) {
        cut
    } else {
        code
    }
}

/// The statements of a `>>>` / `In [n]:` session: prompts stripped, outputs dropped.
fn session_code(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_stmt = false;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(code) = doctest_code(t) {
            out.push(without_note(code).to_string());
            in_stmt = true;
        } else if in_stmt && (t == "..." || t.starts_with("... ")) {
            out.push(t.get(4..).unwrap_or("").to_string());
        } else if let Some(code) = ipython_prompt(t) {
            out.push(without_note(code).to_string());
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

pub(super) fn line_start(code: &str, byte: usize) -> usize {
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

/// The Python code an issue shows, in order: every block that is Python (see [`block_code`]),
/// repeated blocks once. Only when none is found: lines of code inside the prose
/// ([`loose_code`]), then the statements of tracebacks.
pub fn issue_code(issue: &str) -> (String, Vec<(Source, usize)>) {
    let parts = issue_parts(issue);
    (joined(&parts), parts.iter().map(|p| p.from).collect())
}

/// One piece of the issue's code: a block, the loose code or an inline expression, where it
/// came from (its kind and first line) and whether it is a notebook cell ([`is_cell`]).
pub(super) struct Part {
    pub(super) code: String,
    pub(super) from: (Source, usize),
    pub(super) cell: bool,
}

/// The parts' code, one after the other.
pub(super) fn joined(parts: &[Part]) -> String {
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
pub(super) fn issue_parts(issue: &str) -> Vec<Part> {
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

/// The issue's lines, one per line of the issue, with the lines of fenced blocks (their fences
/// included) blank: fenced blocks say what they are (`ini`, `shell`, output), so their lines are
/// not prose.
pub(super) fn prose_lines(issue: &str) -> Vec<&str> {
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
pub(super) fn inline_expressions(issue: &str) -> Vec<(String, usize)> {
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
