//! Applying a parsed patch to file contents in memory, hunk by hunk.
//!
//! Placement follows `git apply`: each hunk's expected lines must match exactly, at the
//! line it names or the nearest offset, after the previous hunk. In tolerant mode a hunk that
//! does not match exactly may still land by ignoring whitespace, then by dropping up to two
//! context lines at either end (like `patch --fuzz=2`); such hunks are marked [`HunkStatus::Fuzzy`].

use super::parse::{FilePatch, Hunk, Line};
use crate::types::{HunkStatus, LineRange};

/// How strictly to place hunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Exactly what `git apply` accepts.
    Strict,
    /// Also whitespace-insensitive and reduced-context matches.
    Tolerant,
}

/// The result of applying one file's hunks.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// New content, `None` when some hunk failed.
    pub after: Option<String>,
    pub hunks: Vec<HunkStatus>,
    pub changed_before: Vec<LineRange>,
    pub changed_after: Vec<LineRange>,
}

fn matches_at(file: &[&str], pos: usize, want: &[&str], loose: bool) -> bool {
    if pos + want.len() > file.len() {
        return false;
    }
    want.iter().zip(&file[pos..pos + want.len()]).all(|(w, f)| {
        if loose {
            // Equal ignoring whitespace: the same words in order (no allocation: this runs
            // for every position of every hunk that does not match exactly).
            w.split_whitespace().eq(f.split_whitespace())
        } else {
            w == f
        }
    })
}

/// Nearest position to `expected` (searching both ways) at or after `floor` where `want` matches.
fn find(file: &[&str], want: &[&str], expected: usize, floor: usize, loose: bool) -> Option<usize> {
    if want.is_empty() {
        return Some(expected.clamp(floor, file.len()));
    }
    let last = file.len().checked_sub(want.len())?;
    if floor > last {
        return None;
    }
    let expected = expected.clamp(floor, last);
    let span = (expected - floor).max(last - expected);
    for d in 0..=span {
        if let Some(p) = expected.checked_sub(d) {
            if p >= floor && matches_at(file, p, want, loose) {
                return Some(p);
            }
        }
        if d > 0 && expected + d <= last && matches_at(file, expected + d, want, loose) {
            return Some(expected + d);
        }
    }
    None
}

/// A hunk with `front`/`back` leading/trailing context lines dropped, if those are context.
fn trimmed(h: &Hunk, front: usize, back: usize) -> Option<Vec<Line>> {
    let n = h.lines.len();
    if front + back >= n {
        return None;
    }
    let lines = &h.lines[front..n - back];
    let dropped_ok = h.lines[..front]
        .iter()
        .chain(&h.lines[n - back..])
        .all(|l| matches!(l, Line::Context(_)));
    if !dropped_ok || lines.iter().all(|l| matches!(l, Line::Context(_))) {
        return None;
    }
    Some(lines.to_vec())
}

/// Apply a file's hunks to `before` (empty for a new file).
pub fn apply_file(fp: &FilePatch, before: &str, mode: Mode) -> Applied {
    let file: Vec<&str> = before.split_inclusive('\n').collect();
    let mut out = String::with_capacity(before.len() + 256);
    let mut out_lines = 0usize;
    let mut cursor = 0usize;
    let mut statuses = Vec::new();
    let mut changed_before = Vec::new();
    let mut changed_after = Vec::new();
    let mut failed = false;
    let mut drift: i64 = 0;
    for h in &fp.hunks {
        // Old start is 1-based; a zero-length old range names the line *after* which to insert.
        let anchor = if h.old_len == 0 {
            h.old_start
        } else {
            h.old_start.saturating_sub(1)
        };
        let expected = (anchor as i64 + drift).max(0) as usize;
        let want: Vec<&str> = h.old_lines().collect();
        let mut placed: Option<(usize, Vec<Line>, HunkStatus)> = None;
        if let Some(p) = find(&file, &want, expected, cursor, false) {
            let st = if p == anchor {
                HunkStatus::Exact
            } else {
                HunkStatus::Offset(p as i64 - anchor as i64)
            };
            placed = Some((p, h.lines.clone(), st));
        } else if mode == Mode::Tolerant {
            if let Some(p) = find(&file, &want, expected, cursor, true) {
                placed = Some((p, h.lines.clone(), HunkStatus::Fuzzy));
            } else {
                'fuzz: for fuzz in 1..=2usize {
                    for (front, back) in [(fuzz, fuzz), (fuzz, 0), (0, fuzz)] {
                        let Some(lines) = trimmed(h, front, back) else {
                            continue;
                        };
                        let want: Vec<&str> = lines
                            .iter()
                            .filter_map(|l| match l {
                                Line::Add(_) => None,
                                l => Some(l.text()),
                            })
                            .collect();
                        if let Some(p) = find(&file, &want, expected + front, cursor, true) {
                            placed = Some((p, lines, HunkStatus::Fuzzy));
                            break 'fuzz;
                        }
                    }
                }
            }
        }
        let Some((pos, lines, status)) = placed else {
            statuses.push(HunkStatus::Failed);
            failed = true;
            continue;
        };
        drift = pos as i64 - anchor as i64;
        statuses.push(status);
        for l in &file[cursor..pos] {
            out.push_str(l);
        }
        out_lines += pos - cursor;
        let mut src = pos;
        let (mut rm_first, mut rm_last) = (None, None);
        let (mut add_first, mut add_last) = (None, None);
        for l in &lines {
            match l {
                Line::Context(_) => {
                    // Keep the file's own text for context (matters under whitespace fuzz).
                    let text = file[src];
                    out.push_str(text);
                    src += 1;
                    out_lines += 1;
                }
                Line::Remove(_) => {
                    rm_first.get_or_insert(src + 1);
                    rm_last = Some(src + 1);
                    src += 1;
                }
                Line::Add(t) => {
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    out.push_str(t);
                    out_lines += 1;
                    add_first.get_or_insert(out_lines);
                    add_last = Some(out_lines);
                }
            }
        }
        match (rm_first, rm_last) {
            (Some(a), Some(b)) => changed_before.push(LineRange::new(a, b)),
            _ => {
                // Pure insertion: the line before the insertion point locates it.
                let at = (pos + 1).min(file.len().max(1));
                changed_before.push(LineRange::new(at, at));
            }
        }
        if let (Some(a), Some(b)) = (add_first, add_last) {
            changed_after.push(LineRange::new(a, b));
        }
        cursor = src;
    }
    for l in &file[cursor.min(file.len())..] {
        out.push_str(l);
    }
    Applied {
        after: if failed { None } else { Some(out) },
        hunks: statuses,
        changed_before,
        changed_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse::parse;

    fn one(diff: &str) -> FilePatch {
        parse(diff).unwrap().files.remove(0)
    }

    #[test]
    fn exact_offset_and_failure() {
        let fp = one("--- a/x\n+++ b/x\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n");
        let r = apply_file(&fp, "a\nb\nc\nd\n", Mode::Strict);
        assert_eq!(r.after.as_deref(), Some("a\nb\nC\nd\n"));
        assert_eq!(r.hunks, vec![HunkStatus::Exact]);
        assert_eq!(r.changed_before, vec![LineRange::new(3, 3)]);
        let r = apply_file(&fp, "z\nz\na\nb\nc\n", Mode::Strict);
        assert_eq!(r.hunks, vec![HunkStatus::Offset(2)]);
        assert_eq!(r.after.as_deref(), Some("z\nz\na\nb\nC\n"));
        let r = apply_file(&fp, "a\nq\nr\n", Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Failed]);
        assert!(r.after.is_none());
    }

    #[test]
    fn whitespace_fuzz_only_when_tolerant() {
        let fp =
            one("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n");
        let before = "def f():  \n    return  1\n";
        assert_eq!(
            apply_file(&fp, before, Mode::Strict).hunks,
            vec![HunkStatus::Failed]
        );
        let r = apply_file(&fp, before, Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Fuzzy]);
        assert_eq!(r.after.as_deref(), Some("def f():  \n    return 2\n"));
    }

    #[test]
    fn new_file_and_no_newline() {
        let fp =
            one("--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n");
        let r = apply_file(&fp, "", Mode::Strict);
        assert_eq!(r.after.as_deref(), Some("x\ny"));
        assert_eq!(r.changed_after, vec![LineRange::new(1, 2)]);
    }

    #[test]
    fn reduced_context_fuzz() {
        let fp = one("--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n WRONG\n b\n-c\n+C\n");
        let r = apply_file(&fp, "a\nb\nc\nd\n", Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Fuzzy]);
        assert_eq!(r.after.as_deref(), Some("a\nb\nC\nd\n"));
    }
}
