//! The script itself: the prelude, each top-level statement wrapped to report its exception
//! and go on, bare values printed (a notebook cell's through Jupyter's rich forms), and the
//! pinned rerun of a script whose output moves between runs.

use super::project::{defines_tests, pytest_args};
use super::text::line_start;
use crate::exec::outcome::REPRO_MARK;
use crate::syntax::python;

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
/// prelude (a tool run over a project), or one pinned already. Every reproduction with the
/// prelude runs pinned, from its first base run on.
pub fn pinned(script: &str) -> Option<String> {
    const ANCHOR: &str = "import sys as _dei_sys, os as _dei_os\n";
    if is_pinned(script) {
        return None;
    }
    let at = script.find(ANCHOR)? + ANCHOR.len();
    let numpy = script.contains("random") && (script.contains("numpy") || script.contains("np."));
    let pin = if numpy {
        format!("{PIN}{PIN_NUMPY}")
    } else {
        PIN.to_string()
    };
    Some(format!("{}{pin}{}", &script[..at], &script[at..]))
}

/// The script a reproduction runs: [`pinned`] when it has dei's prelude, else as it is (a tool
/// run over a project), pinned from its first base run on, the issue's code and an agent's
/// script alike. Left to chance, a set printed at base (an agent's script that prints
/// `expr.atoms()`) can print alike in both base runs and differently with each candidate,
/// which then reads as a change.
pub fn pinned_or_as_is(script: &str) -> String {
    pinned(script).unwrap_or_else(|| script.to_string())
}

/// Whether `script` runs with its randomness pinned ([`pinned`]).
pub fn is_pinned(script: &str) -> bool {
    script.contains(PIN)
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

/// Shows bare values as one of sympy's printers (`printer`, called as `call`) draws them too,
/// after their `repr`: for an issue whose session showed its values so (see [`Drawn`]). A
/// string, or a value the printer cannot draw, is shown by `repr` alone.
fn drawing(printer: &str, call: &str) -> String {
    format!(
        r#"def _dei_show(value, _dei_plain=_dei_show):
    _dei_plain(value)
    if value is None or isinstance(value, str):
        return
    try:
        from sympy import {printer} as _dei_{printer}
        _dei_drawn = {call}
    except Exception:
        return
    print(_dei_drawn)
"#
    )
}

/// How bare values are shown besides their `repr`: as the issue's session showed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Drawn {
    /// `repr` alone.
    Repr,
    /// Also drawn by sympy's pretty printer, for an issue that shows such a drawing
    /// (`isympy`, or a session after `init_printing()`).
    Pretty,
    /// Also written by sympy's LaTeX printer, for an issue that shows the LaTeX its notebook
    /// rendered after `init_printing()` but whose code never calls `latex` itself
    /// (`\left\[0, 1, 4, 9, \ldots\right\]`).
    Latex,
}

/// Wrap each top-level statement: `try:` … `except Exception as e: _dei_fail(n, e)`, bare
/// expressions as `_dei_show(expr)`. A statement holding a string that spans lines is left
/// unwrapped (indenting it would change the string); an exception there ends the script
/// through the excepthook, which still prints the summary line. `from __future__` imports go
/// first.
///
/// Code that defines tests (a top-level `test*` function or `Test*` class, as a pytest issue
/// shows its `test_foo.py`) defines them and runs nothing: run as a script it would end the
/// same with every candidate. With `pytest` given, such a script then runs its own tests with
/// pytest, when the environment has it, with those flags (the issue's own, [`pytest_flags`](super::project::pytest_flags))
/// and without the repository's pytest settings, as the issue's reporter ran them; it ends as
/// pytest does.
///
/// With `drawn` other than [`Drawn::Repr`], bare values are also drawn by sympy's pretty
/// printer or written by its LaTeX printer ([`drawing`]), as the reporter's session
/// showed them (`isympy`, or a notebook after `init_printing()`). `prologue` (Python
/// lines: the files the code reads, [`writer`](super::data::writer)) runs before the first
/// statement.
pub(super) fn wrap(
    code: &str,
    pytest: Option<&[String]>,
    cell_ends: &[usize],
    drawn: Drawn,
    prologue: &str,
) -> Option<Wrapped> {
    let tree = python::parse(code)?;
    let root = tree.root_node();
    let flags = pytest.filter(|_| defines_tests(root, code));
    let mut head = String::new();
    let mut body = String::new();
    let mut n = 0;
    let mut imports = Vec::new();
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
        if matches!(node.kind(), "import_statement" | "import_from_statement") {
            imports.push(n);
        }
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
    let drawing = match drawn {
        Drawn::Repr => String::new(),
        Drawn::Pretty => drawing("pretty", "_dei_pretty(value, use_unicode=True)"),
        Drawn::Latex => drawing("latex", "_dei_latex(value)"),
    };
    let script = format!("{head}{prelude}{drawing}{display}{prologue}\n{body}{tail}");
    Some(Wrapped {
        script,
        statements: n,
        imports,
    })
}

/// A script [`wrap`] made: the script, how many top-level statements it runs (numbered 1…n
/// in the `[dei-repro] statement n raised …` lines it prints), and which of them are imports.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Wrapped {
    pub script: String,
    pub statements: usize,
    pub imports: Vec<usize>,
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
