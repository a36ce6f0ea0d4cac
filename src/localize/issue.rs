//! What an issue text names: code identifiers, file paths, dotted module paths, and
//! Python stack-trace frames (`File "x.py", line N, in f`).

use crate::model::paths::is_generic_file_name;
use std::collections::BTreeSet;

/// One frame of a Python traceback quoted in the issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Path as written (absolute, site-packages, or relative).
    pub file: String,
    pub line: usize,
    /// Function name (`<module>` for top-level code).
    pub function: String,
}

/// Everything code-like an issue text names, extracted once per issue. The one parser of issue
/// text: localization, the context and the offline committee's location evidence all ask here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IssueRefs {
    /// The text as given (file names are looked up in it).
    pub text: String,
    /// Every word of identifier characters, at least 3 bytes long (the parts of dotted names
    /// count one by one), whether or not it looks like code.
    pub words: BTreeSet<String>,
    /// Identifiers (snake_case, CamelCase, dotted parts, `name(` calls).
    pub mentions: Vec<String>,
    /// File paths (`a/b.py`, `setup.cfg`) as written.
    pub paths: Vec<String>,
    /// Dotted names with at least one dot (`sympy.core.basic`, `Session.request`).
    pub dotted: Vec<String>,
    /// Traceback frames in order (innermost last).
    pub frames: Vec<Frame>,
}

const FILE_EXTS: [&str; 12] = [
    ".py", ".pyi", ".cfg", ".toml", ".rst", ".txt", ".ini", ".json", ".yaml", ".yml", ".c", ".pyx",
];

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `name` occurs in `text` with no identifier character right before or after it
/// (`ValueError` in "raise a ValueError", not in "MyValueErrors").
pub fn names_on_boundary(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(pos, _)| {
        let before = text[..pos].chars().next_back();
        let after = text[pos + name.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

/// Identifiers the issue text names (words with `_`, CamelCase, dotted parts, and call-like `name(`).
pub fn mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let push = |w: &str, out: &mut Vec<String>| {
        if !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    };
    for (start, raw) in split_words(text) {
        let end = start + raw.len();
        let called = bytes.get(end) == Some(&b'(');
        let in_code = start > 0 && bytes[start - 1] == b'`';
        let dotted = raw.contains('.');
        for word in raw.split('.') {
            let w = word.trim_matches('_');
            if w.len() < 3 || w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                continue;
            }
            let interesting = word.contains('_')
                || (w.chars().skip(1).any(|c| c.is_uppercase())
                    && w.chars().any(|c| c.is_lowercase()))
                || (w.chars().next().is_some_and(char::is_uppercase)
                    && w.chars().any(|c| c.is_lowercase())
                    && (dotted || in_code))
                || (called
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
                || (in_code && w.chars().all(|c| c.is_ascii_alphanumeric()))
                || (dotted && !looks_like_prose_dot(raw));
            if interesting {
                push(word, &mut out);
            }
        }
    }
    out
}

fn looks_like_prose_dot(raw: &str) -> bool {
    // "e.g", "i.e", "etc." and version numbers are not code.
    let l = raw.to_ascii_lowercase();
    l == "e.g"
        || l == "i.e"
        || raw.split('.').any(|p| p.is_empty())
        || raw.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// Words made of identifier characters and dots, with their byte offsets.
fn split_words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let part = is_ident_char(c) || c == '.';
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, text[s..i].trim_end_matches('.')));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text[s..].trim_end_matches('.')));
    }
    out.retain(|(_, w)| !w.is_empty());
    out
}

/// Traceback frames `File "path", line N, in func`.
pub fn frames(text: &str) -> Vec<Frame> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(pos) = line.find("File \"") else {
            continue;
        };
        let rest = &line[pos + 6..];
        let Some(q) = rest.find('"') else {
            continue;
        };
        let file = rest[..q].to_string();
        let rest = &rest[q + 1..];
        let Some(lpos) = rest.find("line ") else {
            continue;
        };
        let digits: String = rest[lpos + 5..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let Ok(line_no) = digits.parse::<usize>() else {
            continue;
        };
        let function = rest
            .find(", in ")
            .map(|p| {
                rest[p + 5..]
                    .trim()
                    .split(|c: char| c.is_whitespace())
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .unwrap_or_default();
        out.push(Frame {
            file,
            line: line_no,
            function,
        });
    }
    out
}

/// File paths named in the text (tokens with a `/` or a known extension).
pub fn paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| c.is_whitespace() || "\"'`()[]{}<>,;:=".contains(c)) {
        let w = raw.trim_matches(|c: char| c == '.' || c == '/' || c == '\\');
        let w = w.trim_start_matches("a/").trim_start_matches("b/");
        if w.len() < 4 || w.starts_with("http") || w.contains("://") {
            continue;
        }
        let has_ext = FILE_EXTS
            .iter()
            .any(|e| w.ends_with(e) && w.len() > e.len());
        if has_ext && w.chars().all(|c| is_ident_char(c) || "./-\\".contains(c)) {
            let w = w.replace('\\', "/");
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// Dotted identifiers (`pkg.mod.name`), which may name a module or an attribute.
pub fn dotted(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, w) in split_words(text) {
        if w.contains('.')
            && !looks_like_prose_dot(w)
            && w.split('.').all(|p| {
                p.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
            })
            && !FILE_EXTS.iter().any(|e| w.ends_with(e))
            && !out.iter().any(|o| o == w)
        {
            out.push(w.to_string());
        }
    }
    out
}

/// The text without HTML comments (`<!-- … -->`; an unclosed one runs to the end).
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(p) = rest.find("<!--") {
        out.push_str(&rest[..p]);
        rest = match rest[p..].find("-->") {
            Some(e) => &rest[p + e + 3..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// The issue's title: its first line once HTML comments are dropped (the first part of
/// [`weighted_parts`]).
pub fn title(text: &str) -> String {
    let text = strip_comments(text);
    text.lines().next().unwrap_or("").to_string()
}

/// The parts of an issue text with the weight their words get in a search query: the title
/// (first line) gets `title`, the body 1, `<details>` blocks (environment dumps, package lists)
/// get `details`; HTML comments and the rest of an issue template ([`strip_template`]) are
/// dropped.
pub fn weighted_parts(text: &str, title: f64, details: f64) -> Vec<(String, f64)> {
    let body = strip_comments(text);
    let (first, body) = match body.split_once('\n') {
        Some((a, b)) => (a.to_string(), strip_template(b)),
        None => (body, String::new()),
    };
    let mut out = vec![(first, title)];
    let lower = body.to_ascii_lowercase();
    let mut at = 0;
    while let Some(p) = lower[at..].find("<details") {
        let start = at + p;
        out.push((body[at..start].to_string(), 1.0));
        let end = lower[start..]
            .find("</details>")
            .map_or(body.len(), |e| start + e + "</details>".len());
        out.push((body[start..end].to_string(), details));
        at = end;
    }
    out.push((body[at..].to_string(), 1.0));
    out.retain(|(t, _)| !t.trim().is_empty());
    out
}

/// The body without issue-template scaffolding, which names the template and not the bug:
/// Markdown headings outside code fences (`### Describe the bug`), unanswered fields
/// (`_No response_`) and checklist items (`- [x] a minimal example`).
fn strip_template(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut fenced = false;
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced
            && ((t.starts_with('#') && t.trim_start_matches('#').starts_with(' '))
                || t == "_No response_"
                || t.starts_with("- [ ]")
                || t.starts_with("- [x]")
                || t.starts_with("- [X]"))
        {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Shortest trimmed line (bytes) that [`code_lines`] quotes and the localizer matches: shorter
/// ones (`return x`, `else:`) stand in too many places to point anywhere.
pub const MIN_QUOTED_LINE: usize = 12;

/// Lines of code quoted in the issue, trimmed, without prompts (`>>> `, `... `, `In [3]: `),
/// long and code-like enough (brackets, `=`, `.` or `:`) to identify the place that holds them.
pub fn code_lines(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut l = line.trim();
        for p in [">>> ", "... ", "$ "] {
            l = l.strip_prefix(p).unwrap_or(l).trim();
        }
        if let Some(r) = l.strip_prefix("In [") {
            if let Some(e) = r.find("]:") {
                l = r[e + 2..].trim();
            }
        }
        let l = l.trim_end_matches(['\\', ' ']);
        if l.len() < MIN_QUOTED_LINE
            || l.len() > 200
            || l.starts_with("File \"")
            || l.starts_with('#')
            || !l.chars().any(|c| "(=.:[".contains(c))
            || l.chars().filter(|c| c.is_alphabetic()).count() < 6
            || out.iter().any(|o| o == l)
        {
            continue;
        }
        out.push(l.to_string());
    }
    out
}

/// Every word of identifier characters (`[\w]+`) at least 3 bytes long.
pub fn words(text: &str) -> BTreeSet<String> {
    split_words(text)
        .into_iter()
        .flat_map(|(_, w)| w.split('.'))
        .filter(|w| w.len() >= 3)
        .map(str::to_string)
        .collect()
}

impl IssueRefs {
    pub fn new(text: &str) -> IssueRefs {
        IssueRefs {
            text: text.to_string(),
            words: words(text),
            mentions: mentions(text),
            paths: paths(text),
            dotted: dotted(text),
            frames: frames(text),
        }
    }

    /// True when `name` (short or qualified) is named in the issue.
    pub fn names(&self, qualified: &str) -> bool {
        let short = qualified.rsplit('.').next().unwrap_or(qualified);
        self.mentions.iter().any(|m| m == short || m == qualified)
            || self.dotted.iter().any(|d| d.ends_with(qualified))
    }

    /// The repository file is named: its path (also inside a traceback's absolute path), its
    /// dotted module name, or its file name on a word boundary (not for generic names like
    /// `__init__.py`, see [`is_generic_file_name`]).
    pub fn names_file(&self, path: &str) -> bool {
        if path.is_empty() {
            return false;
        }
        if self.text.contains(path) {
            return true;
        }
        let no_ext = path.strip_suffix(".py").unwrap_or(path);
        let dotted = no_ext.replace('/', ".");
        let dotted = dotted.strip_suffix(".__init__").unwrap_or(&dotted);
        if dotted.contains('.') && self.text.contains(dotted) {
            return true;
        }
        let base = path.rsplit('/').next().unwrap_or(path);
        !is_generic_file_name(base) && base.contains('.') && self.names_on_boundary(base)
    }

    /// `name` occurs in the text with no identifier character right before or after it.
    fn names_on_boundary(&self, name: &str) -> bool {
        names_on_boundary(&self.text, name)
    }

    /// The definition is named: the last part of `path::Class.method` is one of the issue's
    /// [`words`](IssueRefs::words) (module-level edits `<module>`, dunder methods and names
    /// under 3 bytes never count).
    pub fn names_def(&self, qualified: &str) -> bool {
        let def = qualified.rsplit("::").next().unwrap_or(qualified);
        let short = def.rsplit('.').next().unwrap_or(def);
        let dunder = short.starts_with("__") && short.ends_with("__");
        !short.starts_with('<') && !dunder && self.words.contains(short)
    }
}

/// The repository path a written path (absolute, site-packages, relative) refers to, if any
/// of `files` ends with it; the longest matching suffix wins.
pub fn resolve_path<'a>(
    written: &str,
    files: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let written = written.replace('\\', "/");
    let parts: Vec<&str> = written.split('/').filter(|p| !p.is_empty()).collect();
    let mut best: Option<(&str, usize)> = None;
    for f in files {
        let fp: Vec<&str> = f.split('/').collect();
        let n = fp
            .iter()
            .rev()
            .zip(parts.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        if n > 0 && best.is_none_or(|(bf, b)| n > b || (n == b && f.len() < bf.len())) {
            best = Some((f, n));
        }
    }
    best.filter(|(_, n)| *n >= 2 || parts.len() == 1)
        .map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_pick_code_names() {
        let m = mentions("Calling `Session.resolve_redirects` breaks; see parse_url() and HTTPAdapter. The fix is simple.");
        assert!(m.contains(&"resolve_redirects".to_string()));
        assert!(m.contains(&"Session".to_string()));
        assert!(m.contains(&"parse_url".to_string()));
        assert!(m.contains(&"HTTPAdapter".to_string()));
        assert!(!m.contains(&"simple".to_string()));
        assert!(!m.contains(&"The".to_string()));
        let m = mentions("e.g. version 1.2.3 works; calling latex(x) and `simplify` fails");
        assert!(
            m.contains(&"latex".to_string()) && m.contains(&"simplify".to_string()),
            "{m:?}"
        );
        assert!(!m.iter().any(|w| w == "e" || w == "g"));
    }

    #[test]
    fn stack_frames() {
        let t = "Traceback (most recent call last):\n  File \"/usr/lib/python3/site-packages/requests/sessions.py\", line 455, in request\n    resp = self.send(prep, **send_kwargs)\n  File \"x.py\", line 3, in <module>\nValueError";
        let f = frames(t);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0],
            Frame {
                file: "/usr/lib/python3/site-packages/requests/sessions.py".into(),
                line: 455,
                function: "request".into()
            }
        );
        assert_eq!(f[1].function, "<module>");
        let files = [
            "requests/sessions.py",
            "tests/test_sessions.py",
            "docs/sessions.py",
        ];
        assert_eq!(
            resolve_path(&f[0].file, files),
            Some("requests/sessions.py")
        );
        assert_eq!(resolve_path("x.py", files), None);
    }

    #[test]
    fn title_is_the_first_line_without_comments() {
        assert_eq!(
            title("<!-- Please describe -->Crash in foo\nbody"),
            "Crash in foo"
        );
        assert_eq!(title("Plain title\nbody"), "Plain title");
        assert_eq!(title(""), "");
        let parts = weighted_parts("<!-- x -->Crash in foo\nbody", 2.0, 1.0);
        assert_eq!(parts[0].0, title("<!-- x -->Crash in foo\nbody"));
    }

    #[test]
    fn weighted_parts_split_title_details_and_drop_comments() {
        let t = "Title words\n<!-- template text -->body text\n<details>pip list\naiohttp 3.6</details>\nmore body";
        let parts = weighted_parts(t, 2.0, 0.25);
        assert_eq!(parts[0], ("Title words".to_string(), 2.0));
        assert!(parts.iter().all(|(p, _)| !p.contains("template")));
        assert!(parts
            .iter()
            .any(|(p, w)| p.contains("aiohttp") && *w == 0.25));
        assert!(parts
            .iter()
            .any(|(p, w)| p.contains("more body") && *w == 1.0));
    }

    #[test]
    fn template_headings_and_checklists_are_dropped_but_code_comments_kept() {
        let t = "Literal nitpick\n### Describe the bug\nnitpick flags Literal\n- [x] minimal example\n```python\n# keep this comment\nfoo()\n```\n### Sphinx extensions\n_No response_\n#hashtag stays\n";
        let body: String = weighted_parts(t, 2.0, 0.25)
            .into_iter()
            .skip(1)
            .map(|(p, _)| p)
            .collect();
        assert!(body.contains("nitpick flags Literal"), "{body}");
        assert!(body.contains("# keep this comment"), "{body}");
        assert!(body.contains("#hashtag stays"), "{body}");
        for gone in ["Describe", "minimal example", "extensions", "No response"] {
            assert!(!body.contains(gone), "{gone} left in {body}");
        }
    }

    #[test]
    fn code_lines_strip_prompts_and_skip_prose() {
        let t = ">>> Mod(x**2, x).doit()\nThis is just prose here\n    if p.is_Pow and p.exp.is_Integer:\nIn [3]: r.subs(b, a)\nok";
        assert_eq!(
            code_lines(t),
            vec![
                "Mod(x**2, x).doit()",
                "if p.is_Pow and p.exp.is_Integer:",
                "r.subs(b, a)"
            ]
        );
    }

    /// What the offline committee's location evidence asks: files by path, module or file
    /// name, definitions by any word of the text.
    #[test]
    fn files_and_definitions_named() {
        let r = IssueRefs::new(
            "Traceback:\n  File \"/usr/lib/site-packages/pkg/models.py\", line 3, in prepare_body\n\
             Also see pkg.sessions and helpers.py; __init__.py and utils.py say little. request fails",
        );
        assert!(r.names_file("pkg/models.py"), "path inside a traceback");
        assert!(r.names_file("pkg/sessions.py"), "dotted module");
        assert!(r.names_file("pkg/sessions/__init__.py"), "dotted package");
        assert!(
            r.names_file("other/helpers.py"),
            "file name on a word boundary"
        );
        assert!(!r.names_file("other/my_helpers.py") && !r.names_file("x/__init__.py"));
        assert!(!r.names_file("x/utils.py") && !r.names_file(""));
        assert!(r.names_def("pkg/models.py::Request.prepare_body"));
        assert!(
            r.names_def("pkg/models.py::request"),
            "any word, not only code-like ones"
        );
        assert!(!r.names_def("pkg/models.py::<module>") && !r.names_def("pkg/models.py::__init__"));
        assert!(!r.names_def("pkg/models.py::prepare"));
        assert!(r.words.contains("site") && !r.words.contains("pkg.models"));
    }

    #[test]
    fn paths_and_dotted() {
        let t = "In `sympy/printing/latex.py` (and setup.cfg), sympy.core.basic.Basic fails. Version 1.2.";
        assert_eq!(paths(t), vec!["sympy/printing/latex.py", "setup.cfg"]);
        assert_eq!(dotted(t), vec!["sympy.core.basic.Basic"]);
    }
}
