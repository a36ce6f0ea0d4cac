//! A normalized form of a patch for spotting candidates that make the same change.
//!
//! Per file: the removed and the added lines with whitespace collapsed, comments (`# ...` outside
//! string literals) and blank lines dropped, and lines that are both removed and added (pure
//! re-indentation or moves within the file) cancelled out. Two candidates are duplicates when
//! their normalized forms are equal; [`similarity`] grades partial overlap.

use super::parse::{parse, Line, Patch};
use std::collections::{BTreeMap, BTreeSet};

/// What one file's change amounts to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct NormalFile {
    pub removed: Vec<String>,
    pub added: Vec<String>,
    /// Enclosing definitions named in the hunk headers (`def f(x):` → `f`).
    pub functions: BTreeSet<String>,
}

/// A whole patch, normalized: path → change. Files whose change normalizes to nothing are dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub struct Normalized {
    pub files: BTreeMap<String, NormalFile>,
}

/// The one rule for "what a changed line says", shared by duplicate detection here and by the
/// offline committee's features: drop a `#` comment that is not inside a string literal
/// (whole-line or trailing), then collapse whitespace. Blank and comment-only lines become `""`.
///
/// Trailing comments go too because they change nothing the code does: two candidates that
/// make the same edit, one of them with `# fix #42` after it, made the same change. A `#`
/// inside quotes is code and stays. Quotes are tracked within the line only, so a line inside
/// a multi-line string is read as code.
pub fn normalize_line(line: &str) -> String {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut cut = line.len();
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => {
                cut = i;
                break;
            }
            _ => {}
        }
    }
    line[..cut].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The definition named in a hunk header's section text (`def foo(`, `class Bar(`,
/// `async def baz(`).
pub fn section_def(section: &str) -> Option<String> {
    let s = section.trim();
    let rest = s.strip_prefix("async ").unwrap_or(s);
    let rest = rest
        .strip_prefix("def ")
        .or_else(|| rest.strip_prefix("class "))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Normalize a parsed patch.
pub fn normalize(patch: &Patch) -> Normalized {
    let mut files: BTreeMap<String, NormalFile> = BTreeMap::new();
    for f in &patch.files {
        let e = files.entry(f.path().to_string()).or_default();
        for h in &f.hunks {
            if let Some(n) = section_def(&h.section) {
                e.functions.insert(n);
            }
            for l in &h.lines {
                let (t, v) = match l {
                    Line::Remove(t) => (t, &mut e.removed),
                    Line::Add(t) => (t, &mut e.added),
                    Line::Context(_) => continue,
                };
                let n = normalize_line(t);
                if !n.is_empty() {
                    v.push(n);
                }
            }
        }
    }
    for f in files.values_mut() {
        // Cancel lines present on both sides (multiset difference).
        let mut removed = std::mem::take(&mut f.removed);
        let mut added = Vec::with_capacity(f.added.len());
        for a in std::mem::take(&mut f.added) {
            if let Some(i) = removed.iter().position(|r| *r == a) {
                removed.remove(i);
            } else {
                added.push(a);
            }
        }
        f.removed = removed;
        f.added = added;
    }
    files.retain(|_, f| !f.removed.is_empty() || !f.added.is_empty());
    Normalized { files }
}

/// Normalize diff text; `None` when it does not parse.
pub fn normalize_text(diff: &str) -> Option<Normalized> {
    parse(diff).ok().map(|p| normalize(&p))
}

impl Normalized {
    /// `path:-line` / `path:+line` items, the unit of [`similarity`].
    pub fn items(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for (p, f) in &self.files {
            out.extend(f.removed.iter().map(|l| format!("{p}:-{l}")));
            out.extend(f.added.iter().map(|l| format!("{p}:+{l}")));
        }
        out
    }
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Jaccard similarity of the changed lines (1.0: same change; 0.0 when both are empty).
pub fn similarity(a: &Normalized, b: &Normalized) -> f64 {
    let (x, y) = (a.items(), b.items());
    let union = x.union(&y).count();
    if union == 0 {
        return 0.0;
    }
    x.intersection(&y).count() as f64 / union as f64
}

/// Same change, ignoring whitespace, comments and line order within the removed/added sets.
pub fn same_change(a: &Normalized, b: &Normalized) -> bool {
    !a.is_empty() && a.items() == b.items()
}

/// Group indices of `patches` whose normalized forms are equal (groups in first-seen order;
/// patches that do not parse or change nothing stay alone).
pub fn duplicate_groups(patches: &[&str]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<BTreeSet<String>>, Vec<usize>)> = Vec::new();
    for (i, p) in patches.iter().enumerate() {
        let key = normalize_text(p)
            .filter(|n| !n.is_empty())
            .map(|n| n.items());
        match key
            .as_ref()
            .and_then(|k| groups.iter_mut().find(|(g, _)| g.as_ref() == Some(k)))
        {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups.into_iter().map(|(_, m)| m).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_comments_and_context_do_not_matter() {
        let a = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@ def f(x):\n a\n-    return x\n+    return x + 1  # fix\n c\n";
        let b = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -2,1 +2,1 @@\n-  return   x\n+  return x + 1\n";
        let c = "--- a/m.py\n+++ b/m.py\n@@ -2,1 +2,1 @@\n-    return x\n+    return x - 1\n";
        let (na, nb, nc) = (
            normalize_text(a).unwrap(),
            normalize_text(b).unwrap(),
            normalize_text(c).unwrap(),
        );
        assert!(same_change(&na, &nb));
        assert!(!same_change(&na, &nc));
        assert!((similarity(&na, &nc) - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            na.files["m.py"].functions.iter().next().map(String::as_str),
            Some("f")
        );
        assert_eq!(
            duplicate_groups(&[a, c, b, "junk"]),
            vec![vec![0, 2], vec![1], vec![3]]
        );
    }

    #[test]
    fn comment_marks_inside_strings_stay() {
        assert_eq!(normalize_line("  x = '#not'   # yes"), "x = '#not'");
        assert_eq!(normalize_line("s = \"a\\\"#b\""), "s = \"a\\\"#b\"");
        assert_eq!(normalize_line("x = 1  # don't"), "x = 1");
        assert_eq!(
            normalize_line("s = \"it's # here\"  # c"),
            "s = \"it's # here\""
        );
        assert_eq!(normalize_line("   # only a comment"), "");
        assert_eq!(normalize_line(" \t "), "");
        let reindent = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-  y = 1\n+    y = 1\n";
        assert!(normalize_text(reindent).unwrap().is_empty());
    }
}
