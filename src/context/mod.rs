//! Stage 4: the relevant context a reviewer reads beside the diff, found with tree-sitter.
//!
//! For Python files: the innermost function or class around every edited line, before and
//! after the patch, the definitions the issue text names in the touched files, and the
//! parse errors the patch introduces. Other files fall back to line windows.

pub mod python;

pub use python::{Def, PyIndex};

use crate::types::{Context, LineRange, PatchView, Snippet, SnippetKind, Task};

/// Rough token count (4 characters a token), used to keep context within a budget.
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Lines `range` of `text` (1-based, inclusive).
pub fn slice_lines(text: &str, range: LineRange) -> String {
    text.split_inclusive('\n')
        .skip(range.start.saturating_sub(1))
        .take(range.end + 1 - range.start.max(1))
        .collect()
}

fn is_python(path: &str) -> bool {
    path.ends_with(".py") || path.ends_with(".pyi")
}

/// Identifiers the issue text names (words with `_`, `.` or CamelCase, and call-like `name(`).
pub fn issue_mentions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
        for word in raw.split('.') {
            let w = word.trim_matches('_');
            if w.len() < 3 || w.chars().next().is_some_and(|c| c.is_ascii_digit()) {
                continue;
            }
            let interesting = word.contains('_')
                || (w.chars().any(|c| c.is_uppercase()) && w.chars().any(|c| c.is_lowercase()));
            if interesting && !out.iter().any(|o| o == word) {
                out.push(word.to_string());
            }
        }
    }
    out
}

/// Build the context of one candidate within `budget` tokens.
pub fn build(view: &PatchView, task: &Task, budget: usize) -> Context {
    let mut ctx = Context::default();
    let mentions = issue_mentions(&task.problem_statement);
    let mut used = 0usize;
    let mut push = |ctx: &mut Context, s: Snippet| {
        if ctx
            .snippets
            .iter()
            .any(|o| o.path == s.path && o.lines.overlaps(&s.lines) && o.name == s.name)
        {
            return;
        }
        let t = tokens(&s.text);
        if used + t > budget && !ctx.snippets.is_empty() {
            return;
        }
        used += t;
        ctx.snippets.push(s);
    };
    for f in &view.files {
        let before = f.before.as_deref().unwrap_or("");
        if is_python(&f.path) {
            let idx_before = PyIndex::new(before);
            if let Some(after) = f.after.as_deref() {
                let idx_after = PyIndex::new(after);
                ctx.new_parse_errors += idx_after.errors.saturating_sub(idx_before.errors);
            }
            for r in &f.changed_before {
                match idx_before.innermost(*r) {
                    Some(d) => {
                        let name = format!("{}::{}", f.path, d.name);
                        if !ctx.edited.contains(&name) {
                            ctx.edited.push(name);
                        }
                        push(
                            &mut ctx,
                            Snippet {
                                path: f.path.clone(),
                                kind: d.kind,
                                name: d.name.clone(),
                                lines: d.lines,
                                text: slice_lines(before, d.lines),
                                reason: "edited by this patch".into(),
                            },
                        );
                    }
                    None => {
                        let name = format!("{}::<module>", f.path);
                        if !ctx.edited.contains(&name) {
                            ctx.edited.push(name);
                        }
                        let w = LineRange::new(r.start.saturating_sub(5).max(1), r.end + 5);
                        push(
                            &mut ctx,
                            Snippet {
                                path: f.path.clone(),
                                kind: SnippetKind::Module,
                                name: String::new(),
                                lines: w,
                                text: slice_lines(before, w),
                                reason: "module-level code edited by this patch".into(),
                            },
                        );
                    }
                }
            }
            for d in &idx_before.defs {
                let short = d.name.rsplit('.').next().unwrap_or(&d.name);
                if mentions.iter().any(|m| m == short || m == &d.name) {
                    push(
                        &mut ctx,
                        Snippet {
                            path: f.path.clone(),
                            kind: d.kind,
                            name: d.name.clone(),
                            lines: d.lines,
                            text: slice_lines(before, d.lines),
                            reason: "named in the issue".into(),
                        },
                    );
                }
            }
        } else {
            for r in &f.changed_before {
                let w = LineRange::new(r.start.saturating_sub(5).max(1), r.end + 5);
                ctx.edited.push(format!("{}:{}", f.path, r.start));
                push(
                    &mut ctx,
                    Snippet {
                        path: f.path.clone(),
                        kind: SnippetKind::Lines,
                        name: String::new(),
                        lines: w,
                        text: slice_lines(before, w),
                        reason: "lines edited by this patch".into(),
                    },
                );
            }
        }
    }
    ctx
}

/// Render context as text for a prompt or a report.
pub fn render(ctx: &Context) -> String {
    let mut out = String::new();
    for s in &ctx.snippets {
        let label = if s.name.is_empty() {
            String::new()
        } else {
            format!(" {}", s.name)
        };
        out.push_str(&format!(
            "# {}:{}-{}{} ({})\n",
            s.path, s.lines.start, s.lines.end, label, s.reason
        ));
        out.push_str(&s.text);
        if !s.text.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_pick_code_names() {
        let m = issue_mentions("Calling `Session.resolve_redirects` breaks; see parse_url() and HTTPAdapter. The fix is simple.");
        assert!(m.contains(&"resolve_redirects".to_string()));
        assert!(m.contains(&"parse_url".to_string()));
        assert!(m.contains(&"HTTPAdapter".to_string()));
        assert!(!m.contains(&"simple".to_string()));
    }

    #[test]
    fn slice_is_inclusive() {
        assert_eq!(slice_lines("a\nb\nc\n", LineRange::new(2, 3)), "b\nc\n");
    }
}
