//! Applying one file's hunks in memory.
//!
//! Strict mode is `git apply`'s algorithm (apply.c `apply_one_fragment`/`find_pos`): each hunk's
//! expected lines (context and removals) must match byte for byte; the search starts at the
//! hunk's *new* start line in the image as patched so far and alternates forward/backward; lines
//! produced by an earlier hunk (its context included) can never be matched again; a hunk starting
//! at line 0/1 must match at the top of the file and a hunk without trailing context must match
//! at its end. Hunks may land out of order.
//!
//! Tolerant mode tries, per hunk, in order: git's rule; the same without the top/end anchoring
//! ([`HunkStatus::Fuzz`]`(0)`); ignoring whitespace ([`HunkStatus::Whitespace`]); then dropping up
//! to three context lines at each end ([`HunkStatus::Fuzz`]`(n)`), exactly and ignoring
//! whitespace. A hunk that cannot be placed records the nearest location.

use super::parse::{FilePatch, Line};
use crate::model::{HunkInfo, HunkStatus, LineRange};
use std::borrow::Cow;

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
    pub info: Vec<HunkInfo>,
    pub changed_before: Vec<LineRange>,
    pub changed_after: Vec<LineRange>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// Line `n` (0-based) of the original file.
    Orig(usize),
    /// Context of hunk `k`.
    Ctx(usize),
    /// Added by hunk `k`.
    Added(usize),
}

#[derive(Clone)]
struct ImgLine<'a> {
    text: Cow<'a, str>,
    patched: bool,
    tag: Tag,
}

type Eq = fn(&str, &str) -> bool;

fn exact(a: &str, b: &str) -> bool {
    a == b
}

/// Equal up to the amount of whitespace (line ends included).
pub fn ws_eq(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

/// git's `find_pos`: the first match in the order line, line+1, line-1, line+2, ...
fn find_pos(
    img: &[ImgLine],
    pre: &[&str],
    line: usize,
    mb: bool,
    me: bool,
    eq: Eq,
) -> Option<usize> {
    let (n, m) = (img.len(), pre.len());
    let mut line = if mb {
        0
    } else if me {
        n.wrapping_sub(m)
    } else {
        line
    };
    if line > n {
        line = n;
    }
    let try_at = |at: usize| -> bool {
        at + m <= n
            && (!me || at + m == n)
            && (!mb || at == 0)
            && pre
                .iter()
                .zip(&img[at..at + m])
                .all(|(p, l)| !l.patched && eq(&l.text, p))
    };
    if try_at(line) {
        return Some(line);
    }
    if mb || me {
        return None; // no other position can satisfy the anchor
    }
    let (mut f, mut b) = (line, line);
    while b > 0 || f < n {
        if f < n {
            f += 1;
            if try_at(f) {
                return Some(f);
            }
        }
        if b > 0 {
            b -= 1;
            if try_at(b) {
                return Some(b);
            }
        }
    }
    None
}

/// The nearest place where most of `pre` matches (ignoring whitespace): (line index, matched).
fn nearest(img: &[ImgLine], pre: &[&str], line: usize) -> Option<(usize, usize)> {
    if pre.is_empty() || img.is_empty() {
        return None;
    }
    let mut best: Option<(usize, usize, usize)> = None; // (matched, distance, at)
    for at in 0..img.len() {
        let matched = pre
            .iter()
            .zip(&img[at..])
            .filter(|(p, l)| ws_eq(&l.text, p))
            .count();
        if matched == 0 {
            continue;
        }
        let dist = at.abs_diff(line);
        if !best.is_some_and(|(bm, bd, _)| matched < bm || (matched == bm && dist >= bd)) {
            best = Some((matched, dist, at));
        }
    }
    best.map(|(m, _, at)| (at, m))
}

struct Try<'h> {
    lines: &'h [Line],
    /// Leading lines dropped (the search start moves up by as many).
    dropped_front: usize,
    anchored: bool,
    eq: Eq,
    status: fn(usize, usize) -> HunkStatus,
    fuzz: u32,
}

fn split(lines: &[Line]) -> (Vec<&str>, usize, usize) {
    let pre: Vec<&str> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Context(t) | Line::Remove(t) => Some(t.as_str()),
            Line::Add(_) => None,
        })
        .collect();
    let lead = lines
        .iter()
        .take_while(|l| matches!(l, Line::Context(_)))
        .count();
    let trail = lines
        .iter()
        .rev()
        .take_while(|l| matches!(l, Line::Context(_)))
        .count();
    (pre, lead, trail)
}

fn exact_status(at: usize, pos: usize) -> HunkStatus {
    if at == pos {
        HunkStatus::Exact
    } else {
        HunkStatus::Offset(at as i64 - pos as i64)
    }
}

/// Apply a file's hunks to `before` (empty for a new file).
pub fn apply_file(fp: &FilePatch, before: &str, mode: Mode) -> Applied {
    let mut img: Vec<ImgLine> = before
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, t)| ImgLine {
            text: Cow::Borrowed(t),
            patched: false,
            tag: Tag::Orig(i),
        })
        .collect();
    let n_before = img.len();
    let mut statuses = Vec::with_capacity(fp.hunks.len());
    let mut info = vec![HunkInfo::default(); fp.hunks.len()];
    let mut removed: Vec<Option<(usize, usize)>> = vec![None; fp.hunks.len()];
    let mut failed = false;
    for (k, h) in fp.hunks.iter().enumerate() {
        let pos = h.new_start.saturating_sub(1);
        let mb = h.old_start <= 1;
        let mut tries: Vec<Try> = vec![Try {
            lines: &h.lines,
            dropped_front: 0,
            anchored: true,
            eq: exact,
            status: exact_status,
            fuzz: 0,
        }];
        if mode == Mode::Tolerant {
            tries.push(Try {
                lines: &h.lines,
                dropped_front: 0,
                anchored: false,
                eq: exact,
                status: |_, _| HunkStatus::Fuzz(0),
                fuzz: 0,
            });
            tries.push(Try {
                lines: &h.lines,
                dropped_front: 0,
                anchored: false,
                eq: ws_eq,
                status: |_, _| HunkStatus::Whitespace,
                fuzz: 0,
            });
            let (_, lead, trail) = split(&h.lines);
            for fuzz in 1..=3usize {
                let (f, b) = (fuzz.min(lead), fuzz.min(trail));
                if f == 0 && b == 0 || f + b >= h.lines.len() {
                    continue;
                }
                let lines = &h.lines[f..h.lines.len() - b];
                for eq in [exact as Eq, ws_eq as Eq] {
                    tries.push(Try {
                        lines,
                        dropped_front: f,
                        anchored: false,
                        eq,
                        status: |_, _| HunkStatus::Fuzz(0),
                        fuzz: fuzz as u32,
                    });
                }
            }
        }
        let mut placed = None;
        for t in &tries {
            let (pre, _, trail) = split(t.lines);
            let (mb, me) = if t.anchored {
                (mb, trail == 0)
            } else {
                (false, false)
            };
            let start = pos + t.dropped_front;
            if let Some(at) = find_pos(&img, &pre, start.min(img.len()), mb, me, t.eq) {
                let mut st = (t.status)(at, pos);
                if t.fuzz > 0 {
                    st = HunkStatus::Fuzz(t.fuzz);
                }
                placed = Some((at, t, pre.len(), st));
                break;
            }
        }
        let Some((at, t, m, status)) = placed else {
            failed = true;
            statuses.push(HunkStatus::Failed);
            let (pre, _, _) = split(&h.lines);
            let near = nearest(&img, &pre, pos);
            info[k] = HunkInfo {
                nearest: near.map(|(at, _)| orig_line(&img, at, n_before) + 1),
                matched: near.map_or(0, |(_, m)| m),
                expected: pre.len(),
                ..HunkInfo::default()
            };
            continue;
        };
        statuses.push(status);
        let crlf = mode == Mode::Tolerant
            && status == HunkStatus::Whitespace
            && img[at..at + m]
                .iter()
                .filter(|l| l.text.ends_with("\r\n"))
                .count()
                * 2
                > m;
        let mut post: Vec<ImgLine> = Vec::with_capacity(t.lines.len());
        let mut src = at;
        let (mut rm_first, mut rm_last) = (None, None);
        for l in t.lines {
            match l {
                Line::Context(_) => {
                    // Keep the file's own text for context (matters when whitespace was ignored).
                    post.push(ImgLine {
                        text: img[src].text.clone(),
                        patched: true,
                        tag: Tag::Ctx(k),
                    });
                    src += 1;
                }
                Line::Remove(_) => {
                    if let Tag::Orig(o) = img[src].tag {
                        rm_first.get_or_insert(o);
                        rm_last = Some(o);
                    }
                    src += 1;
                }
                Line::Add(a) => {
                    let text = if crlf && a.ends_with('\n') && !a.ends_with("\r\n") {
                        Cow::Owned(format!("{}\r\n", &a[..a.len() - 1]))
                    } else {
                        Cow::Borrowed(a.as_str())
                    };
                    post.push(ImgLine {
                        text,
                        patched: true,
                        tag: Tag::Added(k),
                    });
                }
            }
        }
        let first_orig = orig_line(&img, at, n_before);
        info[k].before_start = first_orig + 1;
        info[k].before_len = img[at..at + m]
            .iter()
            .filter(|l| matches!(l.tag, Tag::Orig(_)))
            .count();
        removed[k] = match (rm_first, rm_last) {
            (Some(a), Some(b)) => Some((a + 1, b + 1)),
            _ => Some((first_orig + 1 + t_leading(t.lines).min(m), 0)),
        };
        img.splice(at..at + m, post);
    }
    // Line numbers in the result.
    let mut changed_after = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for (i, l) in img.iter().enumerate() {
        match l.tag {
            Tag::Ctx(k) | Tag::Added(k) => {
                let hi = &mut info[k];
                if hi.after_len == 0 {
                    hi.after_start = i + 1;
                }
                hi.after_len = i + 1 - hi.after_start + 1;
            }
            Tag::Orig(_) => {}
        }
        if matches!(l.tag, Tag::Added(_)) {
            run = Some(match run {
                Some((a, b)) if b == i => (a, i + 1),
                Some((a, b)) => {
                    changed_after.push(LineRange::new(a, b));
                    (i + 1, i + 1)
                }
                None => (i + 1, i + 1),
            });
        }
    }
    if let Some((a, b)) = run {
        changed_after.push(LineRange::new(a, b));
    }
    for (k, hi) in info.iter_mut().enumerate() {
        if hi.after_len == 0 && statuses[k] != HunkStatus::Failed {
            hi.after_start = hi.before_start.min(img.len().max(1));
        }
    }
    let changed_before = removed
        .iter()
        .flatten()
        .map(|&(a, b)| {
            if b == 0 {
                LineRange::new(a.min(n_before.max(1)), a.min(n_before.max(1)))
            } else {
                LineRange::new(a, b)
            }
        })
        .collect();
    let after = if failed {
        None
    } else {
        let mut out = String::with_capacity(before.len() + 256);
        for l in &img {
            out.push_str(&l.text);
        }
        Some(out)
    };
    Applied {
        after,
        hunks: statuses,
        info,
        changed_before,
        changed_after,
    }
}

fn t_leading(lines: &[Line]) -> usize {
    lines
        .iter()
        .take_while(|l| matches!(l, Line::Context(_)))
        .count()
}

/// The original (0-based) line at image position `at`, or the nearest original line after it.
fn orig_line(img: &[ImgLine], at: usize, n_before: usize) -> usize {
    img[at.min(img.len())..]
        .iter()
        .find_map(|l| {
            if let Tag::Orig(o) = l.tag {
                Some(o)
            } else {
                None
            }
        })
        .unwrap_or(n_before)
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
        let fp = one("--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n");
        let r = apply_file(&fp, "a\nb\nc\nd\n", Mode::Strict);
        assert_eq!(r.after.as_deref(), Some("a\nb\nC\nd\n"));
        assert_eq!(r.hunks, vec![HunkStatus::Exact]);
        assert_eq!(r.changed_before, vec![LineRange::new(3, 3)]);
        assert_eq!(
            (
                r.info[0].before_start,
                r.info[0].before_len,
                r.info[0].after_start,
                r.info[0].after_len
            ),
            (2, 3, 2, 3)
        );
        let r = apply_file(&fp, "z\nz\na\nb\nc\nd\n", Mode::Strict);
        assert_eq!(r.hunks, vec![HunkStatus::Offset(2)]);
        assert_eq!(r.after.as_deref(), Some("z\nz\na\nb\nC\nd\n"));
        // No trailing context: git requires the hunk to end at the end of the file.
        let eof = one("--- a/x\n+++ b/x\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n");
        assert_eq!(
            apply_file(&eof, "a\nb\nc\nd\n", Mode::Strict).hunks,
            vec![HunkStatus::Failed]
        );
        assert_eq!(
            apply_file(&eof, "a\nb\nc\n", Mode::Strict).hunks,
            vec![HunkStatus::Exact]
        );
        assert_eq!(
            apply_file(&eof, "a\nb\nc\nd\n", Mode::Tolerant).hunks,
            vec![HunkStatus::Fuzz(0)]
        );
        let r = apply_file(&fp, "a\nq\nr\n", Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Failed]);
        assert!(r.after.is_none());
    }

    #[test]
    fn whitespace_only_when_tolerant() {
        let fp =
            one("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n");
        let before = "def f():  \n    return  1\n";
        assert_eq!(
            apply_file(&fp, before, Mode::Strict).hunks,
            vec![HunkStatus::Failed]
        );
        let r = apply_file(&fp, before, Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Whitespace]);
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
        let fp = one("--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n WRONG\n b\n-c\n+C\n d\n");
        let r = apply_file(&fp, "a\nb\nc\nd\n", Mode::Tolerant);
        assert_eq!(r.hunks, vec![HunkStatus::Fuzz(1)]);
        assert_eq!(r.after.as_deref(), Some("a\nb\nC\nd\n"));
        let r = apply_file(&fp, "a\nb\nc\nd\n", Mode::Strict);
        assert_eq!(r.hunks, vec![HunkStatus::Failed]);
        assert_eq!(r.info[0].nearest, Some(1));
        assert_eq!((r.info[0].matched, r.info[0].expected), (3, 4));
    }

    #[test]
    fn later_hunk_cannot_reuse_patched_lines_and_may_land_out_of_order() {
        // Second hunk names line 1 but its context only exists before the first hunk's lines.
        let fp = one(
            "--- a/x\n+++ b/x\n@@ -5,3 +5,3 @@\n e\n-f\n+F\n g\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n",
        );
        let r = apply_file(&fp, "a\nb\nc\nd\ne\nf\ng\nh\n", Mode::Strict);
        assert_eq!(r.after.as_deref(), Some("a\nb\nC\nd\ne\nF\ng\nh\n"));
        let overlap =
            one("--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -3,2 +3,2 @@\n C\n-d\n+D\n");
        let r = apply_file(&overlap, "a\nb\nc\nd\n", Mode::Strict);
        assert_eq!(
            r.hunks[1],
            HunkStatus::Failed,
            "context produced by hunk 1 is off limits"
        );
    }
}
