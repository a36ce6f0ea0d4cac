//! What the model sees before it sees code: a trimmed map of the repository's files, and per
//! file a schematic (classes, functions, signatures, decorators, the first docstring line,
//! and where top-level code sits), all read with tree-sitter.

use super::python;
use crate::model::paths::{is_python, is_test_path};
use crate::model::{LineRange, SnippetKind};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One class or function in a schematic.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub kind: SnippetKind,
    /// Qualified name: `Class.method`.
    pub name: String,
    /// The header as written, whitespace collapsed: `def f(x, y=1) -> int:`.
    pub signature: String,
    pub decorators: Vec<String>,
    /// First line of the docstring, if any.
    pub doc: Option<String>,
    /// Lines including decorators.
    pub lines: LineRange,
    /// Nesting depth (0: module level).
    pub depth: usize,
}

/// The outline of one Python file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schematic {
    pub path: String,
    pub items: Vec<Item>,
    /// Runs of module-level code outside any class or function.
    pub top_level: Vec<LineRange>,
    pub line_count: usize,
    /// ERROR/MISSING nodes tree-sitter found.
    pub errors: usize,
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Build the schematic of one Python file.
pub fn schematic(path: &str, source: &str) -> Schematic {
    let mut sch = Schematic {
        path: path.to_string(),
        line_count: source.lines().count(),
        ..Default::default()
    };
    let Some(tree) = python::parse(source) else {
        return sch;
    };
    let src = source.as_bytes();
    let root = tree.root_node();
    // Top-level code: module children that are not definitions.
    let mut cursor = root.walk();
    for child in root.children(&mut cursor) {
        let is_def = matches!(
            child.kind(),
            "function_definition" | "class_definition" | "decorated_definition"
        );
        if is_def || child.kind() == "comment" {
            continue;
        }
        let r = LineRange::new(child.start_position().row + 1, child.end_position().row + 1);
        match sch.top_level.last_mut() {
            Some(last) if r.start <= last.end + 2 => last.end = last.end.max(r.end),
            _ => sch.top_level.push(r),
        }
    }
    let mut stack: Vec<(tree_sitter::Node, Vec<String>)> = vec![(root, vec![])];
    while let Some((node, scope)) = stack.pop() {
        if node.is_error() || node.is_missing() {
            sch.errors += 1;
        }
        let kind = match node.kind() {
            "function_definition" => Some(SnippetKind::Function),
            "class_definition" => Some(SnippetKind::Class),
            _ => None,
        };
        let mut child_scope = scope.clone();
        if let Some(kind) = kind {
            let name = node
                .child_by_field_name("name")
                .and_then(|n| n.utf8_text(src).ok())
                .unwrap_or("?")
                .to_string();
            child_scope.push(name);
            let body = node.child_by_field_name("body");
            // The header ends at its colon; comments between it and the body are not part of it.
            let mut hc = node.walk();
            let header_end = node
                .children(&mut hc)
                .filter(|c| c.kind() == ":")
                .last()
                .map(|c| c.end_byte())
                .or(body.map(|b| b.start_byte()))
                .unwrap_or(node.end_byte());
            let signature =
                collapse(std::str::from_utf8(&src[node.start_byte()..header_end]).unwrap_or(""));
            let (span, decorators) = match node.parent() {
                Some(p) if p.kind() == "decorated_definition" => {
                    let mut c = p.walk();
                    let decs = p
                        .children(&mut c)
                        .filter(|d| d.kind() == "decorator")
                        .filter_map(|d| d.utf8_text(src).ok().map(|t| clip(&collapse(t), 80)))
                        .collect();
                    (p, decs)
                }
                _ => (node, vec![]),
            };
            sch.items.push(Item {
                kind,
                name: child_scope.join("."),
                signature: clip(&signature, 200),
                decorators,
                doc: python::docstring(body, source, 120),
                lines: LineRange::new(span.start_position().row + 1, span.end_position().row + 1),
                depth: scope.len(),
            });
        }
        let mut c = node.walk();
        for child in node.children(&mut c) {
            stack.push((child, child_scope.clone()));
        }
    }
    sch.items.sort_by_key(|i| (i.lines.start, i.depth));
    sch
}

impl Schematic {
    /// The item with this qualified name (or, failing that, the only one whose name ends with it).
    pub fn find(&self, name: &str) -> Option<&Item> {
        if let Some(i) = self.items.iter().find(|i| i.name == name) {
            return Some(i);
        }
        let suffix = format!(".{name}");
        let mut it = self.items.iter().filter(|i| i.name.ends_with(&suffix));
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }

    /// Text form for a prompt, within about `max_lines` lines (deepest items dropped first).
    pub fn render(&self, max_lines: usize) -> String {
        let mut max_depth = self.items.iter().map(|i| i.depth).max().unwrap_or(0);
        loop {
            let text = self.render_depth(max_depth);
            if text.lines().count() <= max_lines || max_depth == 0 {
                return text;
            }
            max_depth -= 1;
        }
    }

    fn render_depth(&self, max_depth: usize) -> String {
        let mut out = format!("{} ({} lines)\n", self.path, self.line_count);
        for r in &self.top_level {
            let _ = writeln!(out, "  [L{}-{}] module-level code", r.start, r.end);
        }
        for i in self.items.iter().filter(|i| i.depth <= max_depth) {
            let pad = "  ".repeat(i.depth + 1);
            for d in &i.decorators {
                let _ = writeln!(out, "{pad}{d}");
            }
            let _ = writeln!(
                out,
                "{pad}{}  [L{}-{}]",
                i.signature, i.lines.start, i.lines.end
            );
            if let Some(doc) = &i.doc {
                let _ = writeln!(out, "{pad}    \"{doc}\"");
            }
        }
        out
    }
}

/// A trimmed tree of the repository's Python files: test folders are left out unless
/// `with_tests`, and folders with more than `per_dir` files list the first ones and a count.
pub fn file_map(paths: &[String], per_dir: usize, with_tests: bool) -> String {
    let mut dirs: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for p in paths {
        if !is_python(p) || (!with_tests && is_test_path(p)) {
            continue;
        }
        let (dir, file) = p.rsplit_once('/').unwrap_or(("", p.as_str()));
        dirs.entry(dir.to_string()).or_default().push(file);
    }
    let mut out = String::new();
    for (dir, files) in &dirs {
        let depth = if dir.is_empty() {
            0
        } else {
            dir.matches('/').count() + 1
        };
        if !dir.is_empty() {
            let _ = writeln!(out, "{}{dir}/", "  ".repeat(depth - 1));
        }
        let pad = "  ".repeat(depth);
        for f in files.iter().take(per_dir) {
            let _ = writeln!(out, "{pad}{f}");
        }
        if files.len() > per_dir {
            let _ = writeln!(out, "{pad}... ({} more)", files.len() - per_dir);
        }
    }
    out
}

/// A place in the code a model names: a definition (`path::Class.method`), or module-level
/// lines (`path:START-END`).
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Def { path: String, name: String },
    Lines { path: String, lines: LineRange },
}

impl Target {
    pub fn path(&self) -> &str {
        match self {
            Target::Def { path, .. } | Target::Lines { path, .. } => path,
        }
    }
    pub fn label(&self) -> String {
        match self {
            Target::Def { path, name } => format!("{path}::{name}"),
            Target::Lines { path, lines } => format!("{path}:{}-{}", lines.start, lines.end),
        }
    }
}

/// The places named in a model's reply, one per line (`path::Name` or `path:START-END`;
/// bullets, backticks and trailing words are ignored).
pub fn parse_targets(reply: &str) -> Vec<Target> {
    let mut out = Vec::new();
    for l in reply.lines() {
        let t = l
            .trim()
            .trim_start_matches(['-', '*', '#', ' '])
            .trim_matches('`')
            .trim();
        let t = t.split_whitespace().next().unwrap_or("").trim_matches('`');
        if let Some((path, name)) = t.split_once("::") {
            if !path.is_empty() && !name.is_empty() {
                out.push(Target::Def {
                    path: path.into(),
                    name: name.trim_end_matches(['(', ')', ':']).into(),
                });
            }
        } else if let Some((path, range)) = t.rsplit_once(':') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    if a >= 1 && b >= a {
                        out.push(Target::Lines {
                            path: path.into(),
                            lines: LineRange::new(a, b),
                        });
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\"\"\"Mod.\"\"\"\nimport os\n\nX = 1\n\n\nclass Session(Base):\n    \"\"\"A session.\n\n    More.\n    \"\"\"\n\n    @property\n    def url(self) -> str:\n        return self._u\n\n    def request(self, method,\n                url=None):\n        '''Send it.'''\n        pass\n\n\ndef helper(x):\n    return x\n\nmain()\n\ndef op(oper):\n    # a comment before the body\n    # and another\n    return oper\n";

    #[test]
    fn items_signatures_docs_and_top_level() {
        let s = schematic("pkg/s.py", SRC);
        let names: Vec<_> = s.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(
            names,
            ["Session", "Session.url", "Session.request", "helper", "op"]
        );
        let req = s.find("request").unwrap();
        assert_eq!(req.signature, "def request(self, method, url=None):");
        assert_eq!(req.doc.as_deref(), Some("Send it."));
        let url = s.find("Session.url").unwrap();
        assert_eq!(url.decorators, ["@property"]);
        assert_eq!(url.lines, LineRange::new(13, 15));
        assert_eq!(
            s.find("Session").unwrap().doc.as_deref(),
            Some("A session.")
        );
        assert_eq!(s.top_level, [LineRange::new(1, 4), LineRange::new(26, 26)]);
        assert_eq!(s.find("op").unwrap().signature, "def op(oper):");
        assert_eq!(s.errors, 0);
        let text = s.render(100);
        assert!(
            text.contains("    def url(self) -> str:  [L13-15]"),
            "{text}"
        );
        let short = s.render(6);
        assert!(!short.contains("def url"), "{short}");
        assert!(short.contains("class Session(Base):"));
    }

    #[test]
    fn map_trims_tests_and_big_folders() {
        let paths: Vec<String> = [
            "a/x.py",
            "a/y.py",
            "a/z.py",
            "a/tests/test_x.py",
            "setup.py",
            "README.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = file_map(&paths, 2, false);
        assert_eq!(m, "setup.py\na/\n  x.py\n  y.py\n  ... (1 more)\n");
        assert!(file_map(&paths, 9, true).contains("test_x.py"));
        assert!(is_test_path("pkg/conftest.py") && !is_test_path("pkg/testament.py"));
    }
}
