//! Python definitions with tree-sitter: functions and classes with qualified names.

use crate::types::{LineRange, SnippetKind};

#[derive(Debug, Clone, PartialEq)]
pub struct Def {
    pub kind: SnippetKind,
    /// Qualified name: `Class.method`, `outer.inner`.
    pub name: String,
    pub lines: LineRange,
    pub depth: usize,
}

/// The definitions and error count of one Python file.
#[derive(Debug, Clone, Default)]
pub struct PyIndex {
    pub defs: Vec<Def>,
    /// Number of ERROR/MISSING nodes tree-sitter found.
    pub errors: usize,
}

thread_local! {
    static PARSER: std::cell::RefCell<Option<tree_sitter::Parser>> = const { std::cell::RefCell::new(None) };
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

impl PyIndex {
    pub fn new(source: &str) -> PyIndex {
        let Some(tree) = parse(source) else {
            return PyIndex::default();
        };
        let mut idx = PyIndex::default();
        let mut stack: Vec<(tree_sitter::Node, Vec<String>)> = vec![(tree.root_node(), vec![])];
        while let Some((node, scope)) = stack.pop() {
            if node.is_error() || node.is_missing() {
                idx.errors += 1;
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
                    .and_then(|n| n.utf8_text(source.as_bytes()).ok())
                    .unwrap_or("?")
                    .to_string();
                child_scope.push(name);
                // Include decorators in the span.
                let span_node = match node.parent() {
                    Some(p) if p.kind() == "decorated_definition" => p,
                    _ => node,
                };
                idx.defs.push(Def {
                    kind,
                    name: child_scope.join("."),
                    lines: LineRange::new(
                        span_node.start_position().row + 1,
                        span_node.end_position().row + 1,
                    ),
                    depth: scope.len(),
                });
            }
            if node.has_error() || kind.is_some() || node.child_count() > 0 {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    stack.push((child, child_scope.clone()));
                }
            }
        }
        idx.defs.sort_by_key(|d| (d.lines.start, d.depth));
        idx
    }

    /// The innermost definition that contains all of `range`.
    pub fn innermost(&self, range: LineRange) -> Option<&Def> {
        self.defs
            .iter()
            .filter(|d| d.lines.start <= range.start && range.end <= d.lines.end)
            .max_by_key(|d| d.depth)
    }
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
        assert_eq!(idx.errors, 0);
        assert_eq!(idx.innermost(LineRange::new(6, 6)).unwrap().name, "A.f");
        assert_eq!(idx.defs[1].lines, LineRange::new(4, 6));
        assert!(idx.innermost(LineRange::new(1, 1)).is_none());
    }

    #[test]
    fn counts_errors() {
        assert!(PyIndex::new("def f(:\n  return\n").errors > 0);
    }
}
