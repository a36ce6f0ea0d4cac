//! Python source index with tree-sitter: definitions with qualified names, spans, signature
//! and docstring; imports; call sites; identifier uses; and ERROR/MISSING positions.
//!
//! Indexes are cached by content hash ([`index`]), so a file shared by many candidates or
//! many runs is parsed once.

use crate::model::{LineRange, ParseErrorPos, SnippetKind};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// A function, method or class.
#[derive(Debug, Clone, PartialEq)]
pub struct Def {
    pub kind: SnippetKind,
    /// Qualified name: `Class.method`, `outer.inner`.
    pub name: String,
    /// Span including decorators.
    pub lines: LineRange,
    /// Nesting depth (0 = top level).
    pub depth: usize,
    /// Header text up to the colon, on one line (`def f(x, y=1) -> int`).
    pub signature: String,
    /// First line of the docstring, if any.
    pub doc: Option<String>,
    /// Base classes (text of each argument of a class header).
    pub bases: Vec<String>,
    /// Index of the enclosing definition in [`PyIndex::defs`].
    pub parent: Option<usize>,
}

impl Def {
    /// The last segment of the qualified name.
    pub fn short(&self) -> &str {
        self.name.rsplit('.').next().unwrap_or(&self.name)
    }
}

/// One `import` or `from ... import` binding.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// Module as written (`os.path`, `.utils`).
    pub module: String,
    /// Imported name for `from m import name`; `None` for `import m`.
    pub name: Option<String>,
    /// Local name the import binds.
    pub alias: String,
    pub line: usize,
}

/// One call site.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Text of the called expression (`self.get`, `os.path.join`, `f`), truncated to 80 chars.
    pub callee: String,
    /// Last identifier of the callee (`get`, `join`, `f`).
    pub name: String,
    pub line: usize,
    /// Innermost enclosing definition (index into [`PyIndex::defs`]).
    pub def: Option<usize>,
}

/// The index of one Python file.
#[derive(Debug, Clone, Default)]
pub struct PyIndex {
    /// Definitions sorted by start line, outer before inner.
    pub defs: Vec<Def>,
    pub imports: Vec<Import>,
    pub calls: Vec<Call>,
    /// Identifier → the (deduplicated, sorted) lines where it is used.
    pub idents: HashMap<String, Vec<usize>>,
    /// Module docstring (first line).
    pub module_doc: Option<String>,
    /// Number of lines in the file.
    pub line_count: usize,
    /// ERROR and MISSING nodes, in source order.
    pub errors: Vec<ParseErrorPos>,
}

thread_local! {
    static PARSER: std::cell::RefCell<Option<tree_sitter::Parser>> = const { std::cell::RefCell::new(None) };
}

/// Whether `source` parses as Python without an error or a missing node.
pub fn parses_cleanly(source: &str) -> bool {
    parse(source).is_some_and(|t| !t.root_node().has_error())
}

/// Parse Python source with a per-thread parser.
pub fn parse(source: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = tree_sitter::Parser::new();
            p.set_language(&tree_sitter_python::LANGUAGE.into()).ok()?;
            *slot = Some(p);
        }
        slot.as_mut()?.parse(source, None)
    })
}

fn text<'a>(node: tree_sitter::Node, src: &'a str) -> &'a str {
    node.utf8_text(src.as_bytes()).unwrap_or("")
}

fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    let mut last_space = false;
    for c in s.chars() {
        let c = if c.is_whitespace() { ' ' } else { c };
        if c == ' ' && last_space {
            continue;
        }
        last_space = c == ' ';
        out.push(c);
        if out.len() >= max {
            out.push('…');
            break;
        }
    }
    out.trim().to_string()
}

/// The first line of a body block's docstring (its first statement, when that is a string),
/// whitespace collapsed and cut at about `max` bytes.
pub(crate) fn docstring(body: Option<tree_sitter::Node>, src: &str, max: usize) -> Option<String> {
    let body = body?;
    let first = body.named_child(0)?;
    if first.kind() != "expression_statement" {
        return None;
    }
    let s = first.named_child(0)?;
    if s.kind() != "string" {
        return None;
    }
    let raw = text(s, src);
    let inner = raw
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .trim_matches(|c| c == '"' || c == '\'');
    let line = inner.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(one_line(line, max))
}

impl PyIndex {
    /// Parse and index `source` (not cached; see [`index`]).
    pub fn new(source: &str) -> PyIndex {
        let mut idx = PyIndex {
            line_count: source.lines().count(),
            ..PyIndex::default()
        };
        let Some(tree) = parse(source) else {
            return idx;
        };
        let root = tree.root_node();
        idx.module_doc = docstring(Some(root), source, 200);
        // (node, enclosing def index, qualified scope)
        let mut stack: Vec<(tree_sitter::Node, Option<usize>, Arc<Vec<String>>)> =
            vec![(root, None, Arc::new(vec![]))];
        let mut cursor = root.walk();
        while let Some((node, encl, scope)) = stack.pop() {
            let kind = node.kind();
            if node.is_error() || node.is_missing() {
                let p = node.start_position();
                idx.errors.push(ParseErrorPos {
                    path: String::new(),
                    line: p.row + 1,
                    column: p.column + 1,
                    kind: if node.is_missing() {
                        format!("MISSING {kind}")
                    } else {
                        "ERROR".into()
                    },
                });
            }
            let mut child_encl = encl;
            let mut child_scope = scope.clone();
            match kind {
                "function_definition" | "class_definition" => {
                    let is_class = kind == "class_definition";
                    let name = node
                        .child_by_field_name("name")
                        .map(|n| text(n, source))
                        .unwrap_or("?")
                        .to_string();
                    let mut q = (*scope).clone();
                    q.push(name);
                    let span_node = match node.parent() {
                        Some(p) if p.kind() == "decorated_definition" => p,
                        _ => node,
                    };
                    let body = node.child_by_field_name("body");
                    let header_end = body.map(|b| b.start_byte()).unwrap_or(node.end_byte());
                    let header = source.get(node.start_byte()..header_end).unwrap_or("");
                    let header = header.trim_end().trim_end_matches(':');
                    let bases = if is_class {
                        node.child_by_field_name("superclasses")
                            .map(|a| {
                                let mut c = a.walk();
                                a.named_children(&mut c)
                                    .filter(|n| n.kind() != "keyword_argument")
                                    .map(|n| text(n, source).to_string())
                                    .collect()
                            })
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    idx.defs.push(Def {
                        kind: if is_class {
                            SnippetKind::Class
                        } else {
                            SnippetKind::Function
                        },
                        name: q.join("."),
                        lines: LineRange::new(
                            span_node.start_position().row + 1,
                            span_node.end_position().row + 1,
                        ),
                        depth: scope.len(),
                        signature: one_line(header, 300),
                        doc: docstring(body, source, 200),
                        bases,
                        parent: encl,
                    });
                    child_encl = Some(idx.defs.len() - 1);
                    child_scope = Arc::new(q);
                }
                "call" => {
                    if let Some(f) = node.child_by_field_name("function") {
                        let name = match f.kind() {
                            "attribute" => f
                                .child_by_field_name("attribute")
                                .map(|a| text(a, source))
                                .unwrap_or(""),
                            "identifier" => text(f, source),
                            _ => "",
                        };
                        if !name.is_empty() {
                            idx.calls.push(Call {
                                callee: one_line(text(f, source), 80),
                                name: name.to_string(),
                                line: node.start_position().row + 1,
                                def: encl,
                            });
                        }
                    }
                }
                "import_statement" | "import_from_statement" => idx.add_import(node, source),
                "identifier" => {
                    let line = node.start_position().row + 1;
                    let lines = idx
                        .idents
                        .entry(text(node, source).to_string())
                        .or_default();
                    if lines.last() != Some(&line) {
                        lines.push(line);
                    }
                }
                _ => {}
            }
            // Push children in reverse so they pop in source order.
            let start = stack.len();
            for child in node.children(&mut cursor) {
                stack.push((child, child_encl, child_scope.clone()));
            }
            stack[start..].reverse();
        }
        // The walk is pre-order in source order, so `defs` is already sorted by start line with
        // parents before children, and `parent` indices stay valid.
        for lines in idx.idents.values_mut() {
            lines.sort_unstable();
            lines.dedup();
        }
        idx
    }

    fn add_import(&mut self, node: tree_sitter::Node, src: &str) {
        let line = node.start_position().row + 1;
        let module = node
            .child_by_field_name("module_name")
            .map(|m| text(m, src).to_string());
        let mut c = node.walk();
        for n in node.children_by_field_name("name", &mut c) {
            let (name, alias) = match n.kind() {
                "aliased_import" => (
                    n.child_by_field_name("name")
                        .map(|x| text(x, src))
                        .unwrap_or(""),
                    n.child_by_field_name("alias")
                        .map(|x| text(x, src))
                        .unwrap_or(""),
                ),
                _ => (text(n, src), text(n, src)),
            };
            match &module {
                Some(m) => self.imports.push(Import {
                    module: m.clone(),
                    name: Some(name.to_string()),
                    alias: alias.to_string(),
                    line,
                }),
                None => self.imports.push(Import {
                    module: name.to_string(),
                    name: None,
                    alias: if n.kind() == "aliased_import" {
                        alias
                    } else {
                        name.split('.').next().unwrap_or(name)
                    }
                    .to_string(),
                    line,
                }),
            }
        }
        if node.kind() == "import_from_statement"
            && self.imports.last().is_none_or(|i| i.line != line)
        {
            // `from m import *`
            if let Some(m) = module {
                self.imports.push(Import {
                    module: m,
                    name: Some("*".into()),
                    alias: "*".into(),
                    line,
                });
            }
        }
    }

    /// The innermost definition that contains all of `range`.
    pub fn innermost(&self, range: LineRange) -> Option<&Def> {
        self.innermost_index(range).map(|i| &self.defs[i])
    }

    /// Index of the innermost definition that contains all of `range`.
    pub fn innermost_index(&self, range: LineRange) -> Option<usize> {
        self.defs
            .iter()
            .enumerate()
            .filter(|(_, d)| d.lines.start <= range.start && range.end <= d.lines.end)
            .max_by_key(|(_, d)| d.depth)
            .map(|(i, _)| i)
    }

    /// The innermost function (not class) containing `range`, or else the innermost class.
    pub fn enclosing_unit(&self, range: LineRange) -> Option<&Def> {
        self.innermost(range)
    }

    /// Definitions whose short name is `name`.
    pub fn defs_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Def> + 'a {
        self.defs
            .iter()
            .filter(move |d| d.short() == name || d.name == name)
    }

    /// Call sites whose callee's last identifier is `name`.
    pub fn calls_to<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Call> + 'a {
        self.calls.iter().filter(move |c| c.name == name)
    }

    /// Distinct callee names called inside `range`.
    pub fn callees_in(&self, range: LineRange) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.calls {
            if range.start <= c.line && c.line <= range.end && !out.contains(&c.name.as_str()) {
                out.push(&c.name);
            }
        }
        out
    }

    /// Number of ERROR/MISSING nodes.
    pub fn error_count(&self) -> usize {
        self.errors.len()
    }
}

/// Cache key of a text: its hash and length (shared by the context caches).
pub fn content_key(source: &str) -> (u64, usize) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    (h.finish(), source.len())
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Could `source` call `name` (as `name(...)` or `x.name(...)`)? A textual over-approximation
/// of `PyIndex::new(source).calls_to(name)` being non-empty: false only when no occurrence of
/// the identifier is followed (past whitespace, comments and line continuations) by `(`.
/// Lets callers skip parsing files that merely mention a name.
pub fn may_call(source: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    for (pos, _) in source.match_indices(name) {
        if source[..pos].chars().next_back().is_some_and(is_ident_char) {
            continue;
        }
        let mut rest = &source[pos + name.len()..];
        if rest.chars().next().is_some_and(is_ident_char) {
            continue;
        }
        loop {
            let t = rest.trim_start();
            if let Some(after) = t.strip_prefix('\\') {
                rest = after;
            } else if t.starts_with('#') {
                rest = t.find('\n').map_or("", |i| &t[i..]);
            } else {
                rest = t;
                break;
            }
        }
        if rest.starts_with('(') {
            return true;
        }
    }
    false
}

#[derive(Default)]
struct CacheMap {
    /// Content key → (index, last use).
    map: HashMap<(u64, usize), (Arc<PyIndex>, u64)>,
    /// Source bytes of the cached indexes (an index takes several times its source).
    bytes: usize,
    tick: u64,
}

type Cache = Mutex<CacheMap>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(CacheMap::default()))
}

/// Most source bytes whose indexes the process-wide cache keeps; past it the least recently
/// used go first. Bounded by bytes, not entries: one large file's index is megabytes.
const CACHE_BYTES: usize = 32 << 20;

/// The index of `source`, parsed once per distinct content (process-wide cache, keyed by a
/// hash of the content and its length, so the same blob at many commits is parsed once).
pub fn index(source: &str) -> Arc<PyIndex> {
    let key = content_key(source);
    if let Ok(mut c) = cache().lock() {
        c.tick += 1;
        let tick = c.tick;
        if let Some((hit, used)) = c.map.get_mut(&key) {
            *used = tick;
            return hit.clone();
        }
    }
    let idx = Arc::new(PyIndex::new(source));
    if source.len() > CACHE_BYTES / 4 {
        return idx;
    }
    if let Ok(mut c) = cache().lock() {
        let tick = c.tick;
        if c.map.insert(key, (idx.clone(), tick)).is_none() {
            c.bytes += key.1;
        }
        if c.bytes > CACHE_BYTES {
            let mut by_age: Vec<(u64, (u64, usize))> =
                c.map.iter().map(|(k, (_, u))| (*u, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if c.bytes <= CACHE_BYTES / 4 * 3 {
                    break;
                }
                if c.map.remove(&k).is_some() {
                    c.bytes -= k.1;
                }
            }
        }
    }
    idx
}

/// Number of indexes in the process-wide cache.
pub fn cache_len() -> usize {
    cache().lock().map(|c| c.map.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_and_innermost() {
        let src = "import os\n\nclass A:\n    @staticmethod\n    def f(x):\n        return x\n\n\ndef g():\n    pass\n";
        let idx = PyIndex::new(src);
        let names: Vec<_> = idx.defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, vec!["A", "A.f", "g"]);
        assert!(idx.errors.is_empty());
        assert_eq!(idx.innermost(LineRange::new(6, 6)).unwrap().name, "A.f");
        assert_eq!(idx.defs[1].lines, LineRange::new(4, 6));
        assert!(idx.innermost(LineRange::new(1, 1)).is_none());
    }

    #[test]
    fn signature_doc_bases_imports_calls() {
        let src = "\"\"\"Mod doc.\"\"\"\nimport os.path as p, sys\nfrom .util import (helper, other as o)\n\nclass B(Base, metaclass=M):\n    '''Class doc.\n\n    more'''\n    def m(self,\n          x=1) -> int:\n        \"\"\"Method doc.\"\"\"\n        return helper(self.get(x))\n";
        let idx = PyIndex::new(src);
        assert_eq!(idx.module_doc.as_deref(), Some("Mod doc."));
        let b = &idx.defs[0];
        assert_eq!(b.bases, vec!["Base"]);
        assert_eq!(b.doc.as_deref(), Some("Class doc."));
        let m = &idx.defs[1];
        assert_eq!(m.name, "B.m");
        assert_eq!(m.signature, "def m(self, x=1) -> int");
        assert_eq!(m.doc.as_deref(), Some("Method doc."));
        assert_eq!(m.parent, Some(0));
        let aliases: Vec<_> = idx.imports.iter().map(|i| i.alias.as_str()).collect();
        assert_eq!(aliases, vec!["p", "sys", "helper", "o"]);
        assert_eq!(idx.imports[3].name.as_deref(), Some("other"));
        let calls: Vec<_> = idx
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.line, c.def))
            .collect();
        assert_eq!(calls, vec![("helper", 12, Some(1)), ("get", 12, Some(1))]);
        assert_eq!(idx.idents.get("helper").unwrap(), &vec![3, 12]);
    }

    #[test]
    fn error_positions() {
        let idx = PyIndex::new("def f():\n    return 1\n\ndef g(:\n  return\n");
        assert!(!idx.errors.is_empty());
        assert!(idx.errors.iter().all(|e| e.line >= 4), "{:?}", idx.errors);
    }

    #[test]
    fn may_call_never_misses_a_call() {
        let src = "import os\nx = foo\n# foo(\nclass A:\n    def bar(self):\n        return self.baz  (1)\n\ny = qux \\\n  (2)\nz = quux  # c\nw = (quux # c\n  (3))\nv = xfoo(1) + foox(2)\n";
        let idx = PyIndex::new(src);
        for name in [
            "foo", "bar", "baz", "qux", "quux", "os", "xfoo", "foox", "A", "nope",
        ] {
            let called = idx.calls_to(name).next().is_some();
            if called {
                assert!(may_call(src, name), "{name} is called but may_call says no");
            }
        }
        assert!(may_call(src, "baz") && may_call(src, "qux") && may_call(src, "quux"));
        // Mentioned, never followed by `(`.
        assert!(!may_call(src, "os") && !may_call(src, "A") && !may_call(src, "nope"));
        // Only inside another identifier: no call.
        assert!(!may_call("xfoo(1)\nfoox(2)\n", "foo"));
    }

    #[test]
    fn cache_returns_same_index() {
        let a = index("def cached_fn():\n    pass\n");
        let b = index("def cached_fn():\n    pass\n");
        assert!(Arc::ptr_eq(&a, &b));
    }
}
