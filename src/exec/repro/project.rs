//! A project the issue shows, run with the repository's own tool: a Sphinx build of its named
//! files, its pylint command, pytest over its test files; and the pytest flags the issue uses.

use super::text::{blocks, Block, Source, PY_LANGS};
use crate::exec::outcome::REPRO_MARK;
use crate::exec::regress;
use crate::model::repo::shell_words;

/// What the name of a file an issue shows ends with: code, documents, settings.
const FILE_ENDINGS: [&str; 7] = [".py", ".rst", ".txt", ".toml", ".cfg", ".ini", "pylintrc"];

/// A file name an issue gives a block: `example.py`, `docs/index.rst`, `.pylintrc` (relative,
/// no `..`, ending as one of [`FILE_ENDINGS`]), from a short line that ends with it
/// (at most three words: `# in conf.py`, ``Simple `index.rst` ``), maybe marked as a comment
/// (`# conf.py`, `.. index.rst`), as code or bold, with a colon after.
pub(super) fn file_name_line(line: &str) -> Option<&str> {
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
    let ok = FILE_ENDINGS.iter().any(|e| t.ends_with(e)) && relative_path(t);
    ok.then_some(t)
}

/// A path that stays inside the folder it is written in: relative, no `..` nor empty part,
/// only letters, digits and `._-/`.
pub(super) fn relative_path(t: &str) -> bool {
    !t.starts_with('/')
        && !t.split('/').any(|p| p.is_empty() || p == "..")
        && t.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
}

/// The last non-blank line of `lines` (the issue's) before the fence of block `b`, whose
/// text starts on line `b.line` (1-based), so its fence is the line before that.
pub(super) fn line_before_fence<'a>(lines: &[&'a str], b: &Block) -> Option<&'a str> {
    lines[..b.line.saturating_sub(2).min(lines.len())]
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .copied()
}

/// The Sphinx project an issue shows: its [`named_blocks`], then the files its shell session
/// writes in the project's folder that no block shows (a setting appended to `docs/conf.py`
/// with `echo -e`, say), a module moved into the package its documents name it in
/// ([`in_packages`]). `None` unless it has an `index.rst`, the project's root document.
pub fn sphinx_project(issue: &str) -> Option<Vec<(String, String)>> {
    let mut files = named_blocks(issue);
    let index = root_doc_folder(&files)?;
    for (name, text) in super::data::issue_shell_files(issue) {
        if name.starts_with(&index) && !files.iter().any(|(n, _)| *n == name) {
            files.push((name, text));
        }
    }
    Some(in_packages(files, &index))
}

/// Settings an issue writes inline for its Sphinx build (`` `autodoc_typehints = "description"` ``),
/// by the prefixes of the configuration values it may name.
const SETTING_PREFIXES: [&str; 7] = [
    "autodoc_",
    "autoclass_",
    "autosummary_",
    "napoleon_",
    "nitpick",
    "add_module_names",
    "python_use_unqualified_type_names",
];

/// Autodoc directives an issue writes in its prose, outside fenced blocks (add `` `.. autoclass::
/// a.A` `` to index.rst), as they would stand in a document.
fn prose_directives(issue: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in super::text::prose_lines(issue) {
        let mut rest = line;
        while let Some(at) = rest.find(".. auto") {
            let d: String = rest[at..]
                .chars()
                .take_while(|c| *c != '`' && *c != '\'' && *c != '"')
                .collect();
            let d = d.trim_end().to_string();
            if d.contains("::") && !out.contains(&d) {
                out.push(d);
            }
            rest = &rest[at + 3..];
        }
    }
    out
}

/// Configuration values an issue writes inline (`` `autodoc_typehints = "description"` ``): a
/// code span in its prose holding one assignment to a name of [`SETTING_PREFIXES`], as
/// `conf.py` lines.
fn inline_settings(issue: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let spans = super::text::prose_lines(issue)
        .into_iter()
        .flat_map(|l| l.split('`').skip(1).step_by(2));
    for span in spans {
        let Some((name, value)) = span.split_once('=') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        let named = SETTING_PREFIXES.iter().any(|p| name.starts_with(p))
            && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        let line = format!("{name} = {value}");
        let parses = crate::syntax::python::parses_cleanly(&line);
        if named && !value.is_empty() && !value.starts_with('=') && parses && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The Python code an issue shows as a module to document: every top-level statement an
/// import, a definition, an assignment or a docstring, at least one a class or function.
/// Code that does something when run (calls, prints) is a script, not a module.
fn module_code(issue: &str) -> Option<String> {
    let (code, _) = super::text::issue_code(issue);
    let tree = crate::syntax::python::parse(&code)?;
    let root = tree.root_node();
    let mut c = root.walk();
    let mut defines = false;
    for n in root.named_children(&mut c) {
        match n.kind() {
            "class_definition" | "function_definition" | "decorated_definition" => defines = true,
            "import_statement"
            | "import_from_statement"
            | "future_import_statement"
            | "comment"
            | "pass_statement" => {}
            "expression_statement" => {
                let ok = n.named_child(0).is_some_and(|x| {
                    matches!(x.kind(), "assignment" | "string" | "concatenated_string")
                });
                if !ok {
                    return None;
                }
            }
            _ => return None,
        }
    }
    (defines && !root.has_error()).then(|| format!("{}\n", code.trim_end()))
}

/// A Sphinx project for an issue about autodoc that shows Python code to document but no
/// project of its own (no `index.rst`): the code as a module (named by a directive in the
/// issue's prose, `.. autoclass:: a.A` → `a.py`, else `example.py`), an `index.rst` with the
/// prose's directives, or one `automodule` of the module with its private members and
/// `__init__`, and a `conf.py` with the settings the issue writes inline. `sphinx_script`
/// builds it like a project the issue shows.
pub fn sphinx_code_project(issue: &str) -> Option<Vec<(String, String)>> {
    if !issue.contains("autodoc") && !issue.contains(".. auto") {
        return None;
    }
    let code = module_code(issue)?;
    let directives = prose_directives(issue);
    let module = documented_modules(&[("index.rst".to_string(), directives.join("\n"))])
        .into_iter()
        .next()
        .unwrap_or_else(|| "example".to_string());
    let last = module.rsplit('.').next().unwrap_or("example").to_string();
    let index = if directives.is_empty() {
        format!(
            "Example\n=======\n\n.. automodule:: {module}\n   :private-members:\n   :special-members: __init__\n"
        )
    } else {
        format!("Example\n=======\n\n{}\n", directives.join("\n\n"))
    };
    let mut files = vec![
        ("index.rst".to_string(), index),
        (format!("{last}.py"), code),
    ];
    let settings = inline_settings(issue);
    if !settings.is_empty() {
        files.push(("conf.py".to_string(), format!("{}\n", settings.join("\n"))));
    }
    Some(in_packages(files, ""))
}

/// Fence tags of reStructuredText.
const RST_TAGS: [&str; 3] = ["rst", "rest", "restructuredtext"];

/// A Sphinx project for an issue that shows reST markup and no Python code at all: the fenced
/// blocks tagged as reST, or untagged ones whose first line is a directive (`.. option::
/// [enable=]PATTERN`), as its root document. The build shows what the markup makes of it at
/// base, the warning the issue reports included. A block named as a file is a project's
/// ([`sphinx_project`]), and the issue's code comes first wherever it has some.
pub fn sphinx_markup_project(issue: &str) -> Option<Vec<(String, String)>> {
    let lines: Vec<&str> = issue.lines().collect();
    let markup: Vec<String> = blocks(issue)
        .into_iter()
        .filter(|b| b.source == Source::Fenced)
        .filter(|b| {
            let first = b.text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let directive = first.starts_with(".. ") && first.contains("::");
            block_file_name(&lines, b).is_none()
                && (RST_TAGS.contains(&b.lang.as_str()) || (b.lang.is_empty() && directive))
        })
        .map(|b| b.text.trim_end().to_string())
        .collect();
    if markup.is_empty() {
        return None;
    }
    let index = format!("Example\n=======\n\n{}\n", markup.join("\n\n"));
    Some(vec![("index.rst".to_string(), index)])
}

/// The modules the project's documents name in autodoc directives (`.. automodule:: a.b`;
/// `.. autoclass:: a.b.C` names `a.b`).
fn documented_modules(files: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, text) in files.iter().filter(|(n, _)| n.ends_with(".rst")) {
        for line in text.lines() {
            let t = line.trim();
            let Some(rest) = t.strip_prefix(".. auto") else {
                continue;
            };
            let Some((kind, target)) = rest.split_once("::") else {
                continue;
            };
            let target = target.trim();
            if target.is_empty()
                || !target
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                continue;
            }
            let module = if kind == "module" {
                Some(target)
            } else {
                target.rsplit_once('.').map(|(m, _)| m)
            };
            if let Some(m) = module.filter(|m| !out.iter().any(|o| o == m)) {
                out.push(m.to_string());
            }
        }
    }
    out
}

/// A module file the issue shows at the project's root (`helloworld.py`) that its documents
/// name inside a package (`.. automodule:: helloworld.helloworld`) moves into that package
/// (`helloworld/helloworld.py`, with an empty `__init__.py` for each package the issue does
/// not show): at the root, the import autodoc makes fails, and the build documents nothing.
fn in_packages(mut files: Vec<(String, String)>, index: &str) -> Vec<(String, String)> {
    for module in documented_modules(&files) {
        let parts: Vec<&str> = module.split('.').collect();
        if parts.len() < 2 {
            continue;
        }
        let flat = format!("{index}{}.py", parts[parts.len() - 1]);
        let nested = format!("{index}{}.py", parts.join("/"));
        if files.iter().any(|(n, _)| *n == nested) {
            continue;
        }
        let Some(at) = files.iter().position(|(n, _)| *n == flat) else {
            continue;
        };
        files[at].0 = nested;
        for k in 1..parts.len() {
            let init = format!("{index}{}/__init__.py", parts[..k].join("/"));
            if !files.iter().any(|(n, _)| *n == init) {
                files.push((init, String::new()));
            }
        }
    }
    files
}

/// Whether the issue builds its project in nitpicky mode: a `sphinx-build` (or `python -m
/// sphinx`) command line it shows has `-n` among its short flags (`-nvWT`). Warnings about
/// references Sphinx cannot resolve appear only then (`py:class reference target not found:
/// …`).
fn nitpicky(issue: &str) -> bool {
    issue.lines().any(|line| {
        let Some(at) = line.find("sphinx-build").or_else(|| line.find("-m sphinx")) else {
            return false;
        };
        shell_words(&line[at..]).is_some_and(|words| {
            words.iter().skip(1).any(|w| {
                w.starts_with('-')
                    && !w.starts_with("--")
                    && w.len() > 1
                    && w[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && w.contains('n')
            })
        })
    })
}

/// The folder of the project's root document among `files` (`""` for `index.rst`, `docs/` for
/// `docs/index.rst`), if it has one.
fn root_doc_folder(files: &[(String, String)]) -> Option<String> {
    files
        .iter()
        .find(|(n, _)| n == "index.rst" || n.ends_with("/index.rst"))
        .map(|(n, _)| n.trim_end_matches("index.rst").to_string())
}

/// The file name a fenced block gives itself: by its first line (`# example.py`, `.. index.rst`),
/// then `true` (that line is the name, not the file's text), or by the line before its fence
/// (`docs/index.rst:`), then `false`.
fn block_file_name(lines: &[&str], b: &Block) -> Option<(String, bool)> {
    let first = b.text.lines().next().unwrap_or("");
    file_name_line(first)
        .filter(|_| first.trim_start().starts_with(['#', '.']))
        .map(|n| (n.to_string(), true))
        .or_else(|| file_name_line(line_before_fence(lines, b)?).map(|n| (n.to_string(), false)))
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
        let named = block_file_name(&lines, &b).map(|(name, in_first_line)| {
            let skip = usize::from(in_first_line);
            let rest: Vec<&str> = b.text.lines().skip(skip).collect();
            (name, rest.join("\n"))
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
/// use their directives), names `index` the root document and has autodoc document a module's
/// members, undocumented ones too, unless a directive or the issue's `conf.py` says otherwise
/// (issues show what their build printed, and a reporter's settings are often left out:
/// functions without docstrings show only so), looks for templates in
/// `_templates/` when the project has some there (as sphinx-quickstart's `conf.py` does),
/// followed by the issue's own `conf.py`, if it gives one; builds it with the text builder
/// (nitpicky when the issue's own command line is, [`nitpicky`]) and prints every page built.
pub(super) fn sphinx_script(issue: &str, files: &[(String, String)]) -> String {
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
    // Templates the issue shows under `_templates/` are where sphinx-quickstart's `conf.py`
    // looks for them (`_templates/autosummary/module.rst`).
    let templates = if files
        .iter()
        .any(|(n, _)| n.starts_with(&format!("{index}_templates/")))
    {
        "templates_path = ['_templates']\n"
    } else {
        ""
    };
    let conf = format!(
        "import os, sys\nsys.path.insert(0, os.path.abspath('.'))\nextensions = {exts:?}\nmaster_doc = 'index'\nautodoc_default_options = {{'members': True, 'undoc-members': True}}\n{templates}{own_conf}"
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
    _dei_code = _dei_build(["-b", "text", "-q", "-E"{}, _dei_src, _dei_out])
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
        if nitpicky(issue) { ", \"-n\"" } else { "" },
    )
}

/// A Python string literal holding `s` (a JSON string is one).
pub(super) fn py_literal(s: &str) -> String {
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
pub(super) fn pylint_script(issue: &str, args: &[String]) -> (String, Vec<(String, String)>) {
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
/// module (test modules whose separate globals the issue is about, or one beside the
/// `noxfile.py` that ran it).
/// The files, and the test modules among them in the order shown. One named test file alone
/// runs as the issue's code does (see [`wrap`](super::script::wrap)).
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
pub(super) fn pytest_script(issue: &str, files: &[(String, String)], tests: &[String]) -> String {
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

/// What a reproduction passes pytest after `--rootdir` (the working folder or the project:
/// with no settings file pytest 8 would take `/dev`), as Python string literals: the settings
/// file (`/dev/null` for none: the repository's `addopts`, `filterwarnings = error` or
/// `xfail_strict` are not the reporter's), no cache written, a summary line for each test that
/// did not pass (`-r` with letters every pytest since 3 knows), then the issue's own `flags`.
pub(super) fn pytest_args(settings: &str, flags: &[String]) -> Vec<String> {
    ["-c", settings, "-p", "no:cacheprovider", "-rfEsxX"]
        .into_iter()
        .chain(flags.iter().map(String::as_str))
        .map(py_literal)
        .collect()
}

/// The code defines a test at its top level: a function named `test…` or a class named
/// `Test…`, decorated or not.
pub(super) fn defines_tests(root: tree_sitter::Node, code: &str) -> bool {
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
