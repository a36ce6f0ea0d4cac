//! Stage 3: turn a candidate's diff into the code before and after it, in memory.
//!
//! - [`parse`]: tolerant parser for what agents write; [`gitparse`]: `git apply`'s own rules.
//! - [`apply`]: hunk placement (strict = `git apply`, tolerant = offsets, whitespace, fuzz).
//! - [`rebuild`]: a whole candidate against base-commit contents → [`PatchView`];
//!   [`rebuild_issue`]: every candidate of an issue, base files read from the repository.
//! - [`hunk_views`]: the changed regions with surrounding lines and line numbers.
//! - [`normalize`]: whitespace/comment-insensitive form for duplicate detection.

pub mod apply;
pub mod gitparse;
pub mod normalize;
pub mod parse;

pub use apply::{apply_file, Mode};
pub use gitparse::parse_git;
pub use parse::{parse, Patch};

use crate::model::repo::Snapshot;
use crate::model::{Applies, Candidate, FileView, HunkStatus, LineRange, PatchView};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};

/// Base-commit contents by path (`None`: not in the tree).
pub type Files = HashMap<String, Option<String>>;

/// Paths a candidate reads from the base commit, as either parser names them (empty if neither
/// parses). New paths are included: creating a file that exists is an error.
pub fn paths_needed(candidate: &Candidate) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in [parse(&candidate.patch), parse_git(&candidate.patch)]
        .into_iter()
        .flatten()
    {
        for f in &p.files {
            out.extend(f.old_path.iter().chain(f.new_path.iter()).cloned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// git's `verify_path` in short: no absolute paths, no `.`/`..`/`.git` components; plus
/// no NUL, backslash or drive prefix, so nothing can point outside the repository on any OS.
pub fn unsafe_path(p: &str) -> bool {
    p.is_empty()
        || p.starts_with('/')
        || p.contains(['\0', '\\'])
        || p.get(1..2) == Some(":")
        || p.split('/')
            .any(|c| c.is_empty() || c == "." || c == ".." || c.eq_ignore_ascii_case(".git"))
}

/// An unsafe path that is not an escape but no name at all: empty, or with an empty part
/// (`+++ b/`, `pkg//m.py`).
fn nameless(p: &str) -> bool {
    !p.starts_with('/') && p.split('/').any(str::is_empty)
}

enum PathState {
    Content(String),
    Gone,
}

/// Apply a parsed patch file by file like `git apply` does (per-path chaining, creation and
/// deletion checks). Returns the file views and whether everything applied.
fn apply_patch(patch: &Patch, base: &Files, mode: Mode) -> (Vec<FileView>, bool) {
    let mut state: HashMap<&str, PathState> = HashMap::new();
    let to_be_deleted: HashSet<&str> = patch
        .files
        .iter()
        .filter(|f| f.new_path.is_none() || f.is_rename)
        .filter_map(|f| f.old_path.as_deref())
        .collect();
    let mut files = Vec::with_capacity(patch.files.len());
    let mut ok = true;
    for fp in &patch.files {
        let base_of = |p: &str| base.get(p).cloned().flatten();
        let mut view = FileView {
            path: fp.path().to_string(),
            before: fp.old_path.as_deref().and_then(base_of),
            after: None,
            hunks: vec![],
            changed_before: vec![],
            changed_after: vec![],
            hunk_info: vec![],
            error: None,
        };
        let mut old_path = fp.old_path.as_deref();
        // The content the hunks apply to.
        let mut preimage: Result<String, String> = Ok(String::new());
        // Paths that could point outside the repository are refused in every mode, first; a
        // header whose name is empty (`+++ b/`) or has an empty part names no file at all.
        if let Some(bad) = [fp.old_path.as_deref(), fp.new_path.as_deref()]
            .into_iter()
            .flatten()
            .find(|p| unsafe_path(p))
        {
            preimage = Err(if nameless(bad) {
                format!(
                    "no usable file name in the diff header (`{}`): not applied",
                    bad.escape_debug()
                )
            } else {
                format!(
                    "unsafe path `{}` (absolute, with `..`, or otherwise outside the repository): rejected",
                    bad.escape_debug()
                )
            });
            old_path = None;
        }
        // A hunk cut short by a stray line would apply only part of what it says.
        if let (Some((k, h)), true) = (
            fp.hunks
                .iter()
                .enumerate()
                .find(|(_, h)| h.malformed_line.is_some()),
            preimage.is_ok(),
        ) {
            preimage = Err(format!(
                "malformed hunk {} (@@ -{},{} +{},{} @@, diff line {}): diff line {} is neither context, `+` nor `-`, and the hunk goes on after it",
                k + 1,
                h.old_start,
                h.old_len,
                h.new_start,
                h.new_len,
                h.header_line,
                h.malformed_line.unwrap_or(0)
            ));
        }
        if let (Some(o), true) = (old_path, preimage.is_ok()) {
            let previous = if fp.is_rename || fp.is_copy {
                None
            } else {
                state.get(o)
            };
            preimage = match previous {
                Some(PathState::Gone) => Err(format!(
                    "{o} has been renamed/deleted earlier in this patch"
                )),
                Some(PathState::Content(c)) => Ok(c.clone()),
                None => match base_of(o) {
                    Some(c) => Ok(c),
                    None if fp.maybe_new => {
                        old_path = None;
                        Ok(String::new())
                    }
                    None => Err(format!("{o} does not exist at the base commit")),
                },
            };
        }
        let is_new = old_path.is_none();
        if let (Some(n), true) = (fp.new_path.as_deref(), is_new || fp.is_rename || fp.is_copy) {
            let exists = match state.get(n) {
                Some(PathState::Content(_)) => true,
                Some(PathState::Gone) => false,
                None => base_of(n).is_some() && !to_be_deleted.contains(n),
            };
            if exists && preimage.is_ok() {
                preimage = Err(format!("{n} already exists at the base commit"));
            }
        }
        if fp.binary && preimage.is_ok() {
            preimage = Err("binary patch: not applied".into());
        }
        match preimage {
            Err(e) => {
                view.error = Some(e);
                view.hunks = vec![HunkStatus::Failed; fp.hunks.len()];
                view.hunk_info = vec![Default::default(); fp.hunks.len()];
            }
            Ok(pre) => {
                let r = apply_file(fp, &pre, mode);
                view.hunks = r.hunks;
                view.hunk_info = r.info;
                view.changed_before = r.changed_before;
                view.changed_after = r.changed_after;
                if let Some(failed) = view.hunks.iter().position(|h| *h == HunkStatus::Failed) {
                    let h = &fp.hunks[failed];
                    let near = view.hunk_info[failed]
                        .nearest
                        .map(|l| {
                            format!(
                                "; nearest: line {l} ({} of {} lines match)",
                                view.hunk_info[failed].matched, view.hunk_info[failed].expected
                            )
                        })
                        .unwrap_or_default();
                    view.error = Some(if h.count_mismatch {
                        // Its body is not what its header says: the diff is at fault, not the file.
                        let context = h.lines.len() - h.added() - h.removed();
                        format!(
                            "corrupt hunk {} (@@ -{},{} +{},{} @@, diff line {}): its header counts {} old and {} new lines, its body has {} and {}; as read, it does not match the file{near}",
                            failed + 1,
                            h.old_start,
                            h.old_len,
                            h.new_start,
                            h.new_len,
                            h.header_line,
                            h.old_len,
                            h.new_len,
                            context + h.removed(),
                            context + h.added()
                        )
                    } else {
                        format!(
                            "hunk {} (@@ -{},{} @@, diff line {}) does not match the file{near}",
                            failed + 1,
                            h.old_start,
                            h.old_len,
                            h.header_line
                        )
                    });
                } else if let Some(after) = r.after {
                    if fp.new_path.is_none() && !after.is_empty() {
                        view.error = Some(format!("deleting {} leaves content behind", fp.path()));
                    } else {
                        if let Some(n) = fp.new_path.as_deref() {
                            state.insert(n, PathState::Content(after.clone()));
                            view.after = Some(after);
                        }
                        if let Some(o) = old_path.filter(|_| fp.new_path.is_none() || fp.is_rename)
                        {
                            state.insert(o, PathState::Gone);
                        }
                    }
                }
            }
        }
        // Tolerant mode reports a binary entry (error set, no content) without failing the patch.
        ok &= view.error.is_none() || (mode == Mode::Tolerant && fp.binary);
        files.push(view);
    }
    (files, ok)
}

fn counts(patch: &Patch) -> (usize, usize) {
    let added = patch
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.added())
        .sum();
    let removed = patch
        .files
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.removed())
        .sum();
    (added, removed)
}

/// The view of a candidate too large to rebuild: does not apply, with the reason.
pub fn oversize_view(len: usize, max: usize) -> PatchView {
    PatchView {
        applies: Applies::No,
        files: vec![],
        error: Some(format!(
            "patch too large: {len} bytes, over the {max}-byte limit (not rebuilt; raise --max-patch-bytes to include it)"
        )),
        lines_added: 0,
        lines_removed: 0,
    }
}

/// Rebuild every candidate of one issue: the base files they need are read from `snapshot`
/// once, together, and each candidate is rebuilt against them (in parallel); the views keep
/// the order of `candidates`. A patch over `max_patch_bytes` bytes is neither read nor
/// rebuilt: its view is [`oversize_view`] (`usize::MAX`: no limit). The one way to go from an
/// issue's candidates to their code before and after.
pub fn rebuild_issue(
    snapshot: &Snapshot,
    candidates: &[Candidate],
    mode: Mode,
    max_patch_bytes: usize,
) -> anyhow::Result<Vec<PatchView>> {
    let fits = |c: &Candidate| c.patch.len() <= max_patch_bytes;
    let needed: Vec<String> = candidates
        .iter()
        .filter(|c| fits(c))
        .flat_map(paths_needed)
        .collect();
    let base: Files = snapshot.read_all(needed.iter().map(String::as_str))?;
    Ok(candidates
        .par_iter()
        .map(|c| {
            if fits(c) {
                rebuild(c, &base, mode)
            } else {
                oversize_view(c.patch.len(), max_patch_bytes)
            }
        })
        .collect())
}

/// Rebuild a candidate against base contents. Never fails: problems are recorded in the view.
///
/// Strict: `git apply`'s parser and placement; `applies` is `Clean` exactly when git accepts.
/// Tolerant: the strict result when git would accept it; otherwise the tolerant parser and
/// placement (`Fuzzy` when that lands every hunk).
pub fn rebuild(candidate: &Candidate, base: &Files, mode: Mode) -> PatchView {
    if candidate.is_empty() {
        return PatchView {
            applies: Applies::Empty,
            files: vec![],
            error: None,
            lines_added: 0,
            lines_removed: 0,
        };
    }
    let strict = match parse_git(&candidate.patch) {
        Ok(p) => {
            let (files, ok) = apply_patch(&p, base, Mode::Strict);
            let (a, r) = counts(&p);
            PatchView {
                applies: if ok { Applies::Clean } else { Applies::No },
                files,
                error: None,
                lines_added: a,
                lines_removed: r,
            }
        }
        Err(e) => PatchView {
            applies: Applies::No,
            files: vec![],
            error: Some(if e.header {
                format!("git apply would reject the diff's header: {e}")
            } else {
                format!("git apply would reject the diff: {e}")
            }),
            lines_added: 0,
            lines_removed: 0,
        },
    };
    if mode == Mode::Strict || strict.applies == Applies::Clean {
        return strict;
    }
    match parse(&candidate.patch) {
        Ok(p) => {
            let (files, ok) = apply_patch(&p, base, Mode::Tolerant);
            let (a, r) = counts(&p);
            let applies = if ok { Applies::Fuzzy } else { Applies::No };
            let error = if ok { None } else { strict.error.clone() };
            PatchView {
                applies,
                files,
                error,
                lines_added: a,
                lines_removed: r,
            }
        }
        Err(e) => PatchView {
            error: Some(format!("diff does not parse: {e}")),
            ..strict
        },
    }
}

/// One changed region, before and after, with surrounding lines and line numbers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HunkView {
    pub path: String,
    /// 0-based hunk index in the file.
    pub hunk: usize,
    pub status: HunkStatus,
    /// Lines of `before` shown (1-based, inclusive), `None` when there is no before.
    pub before_lines: Option<LineRange>,
    pub after_lines: Option<LineRange>,
    /// `before`/`after` excerpts, each line prefixed with its number (`  12 | text`).
    pub before: String,
    pub after: String,
}

/// Lines `range` of `text` (1-based, inclusive, clamped) with right-aligned line numbers.
pub fn numbered(text: &str, range: LineRange) -> String {
    let width = range.end.to_string().len().max(3);
    let mut out = String::new();
    for (i, l) in text
        .split_inclusive('\n')
        .enumerate()
        .skip(range.start.saturating_sub(1))
        .take(range.end + 1 - range.start.max(1))
    {
        out.push_str(&format!(
            "{:>width$} | {}",
            i + 1,
            l.trim_end_matches(['\n', '\r'])
        ));
        out.push('\n');
    }
    out
}

fn window(text: &str, start: usize, len: usize, context: usize) -> Option<LineRange> {
    let n = text.split_inclusive('\n').count();
    if n == 0 {
        return None;
    }
    let s = start.max(1).saturating_sub(context).max(1);
    let e = (start.max(1) + len.max(1) - 1 + context).min(n);
    (s <= e).then(|| LineRange::new(s, e))
}

/// The hunks of one file as before/after excerpts with `context` lines around each.
pub fn hunk_views(file: &FileView, context: usize) -> Vec<HunkView> {
    file.hunks
        .iter()
        .zip(&file.hunk_info)
        .enumerate()
        .map(|(k, (&status, info))| {
            let (bs, bl) = if status == HunkStatus::Failed {
                (info.nearest.unwrap_or(0), info.expected)
            } else {
                (info.before_start, info.before_len)
            };
            let before_lines = file.before.as_deref().and_then(|t| {
                if bs == 0 {
                    None
                } else {
                    window(t, bs, bl, context)
                }
            });
            let after_lines = file.after.as_deref().and_then(|t| {
                if info.after_start == 0 {
                    None
                } else {
                    window(t, info.after_start, info.after_len, context)
                }
            });
            HunkView {
                path: file.path.clone(),
                hunk: k,
                status,
                before: match (file.before.as_deref(), before_lines) {
                    (Some(t), Some(r)) => numbered(t, r),
                    _ => String::new(),
                },
                after: match (file.after.as_deref(), after_lines) {
                    (Some(t), Some(r)) => numbered(t, r),
                    _ => String::new(),
                },
                before_lines,
                after_lines,
            }
        })
        .collect()
}

/// Why a candidate does not apply, in a word or two for tables (`too large`, `unsafe path`,
/// `bad diff`, `bad header`, `missing file`, `conflicts`, …); `None` when it applies or is
/// empty. The full sentence is the view's (or a file's) `error`.
///
/// The word names the cause in both modes: a refusal (too large, a path leaving the
/// repository) first; then a header `git apply` rejects (`bad header`: the tolerant reading of
/// names that disagree is a guess, so what it then finds says less); then a file's own failure
/// (a corrupt or malformed hunk is `bad diff`, a well-formed one that does not land is
/// `conflicts`); then the whole diff's.
pub fn failure_label(view: &PatchView) -> Option<&'static str> {
    if !matches!(view.applies, Applies::No) {
        return None;
    }
    let label_of = |e: &str| -> Option<&'static str> {
        Some(if e.starts_with("patch too large") {
            "too large"
        } else if e.starts_with("unsafe path") {
            "unsafe path"
        } else if e.starts_with("no usable file name")
            || e.starts_with("git apply would reject the diff's header")
        {
            "bad header"
        } else if e.contains("does not exist at the base commit") {
            "missing file"
        } else if e.contains("already exists at the base commit") {
            "file exists"
        } else if e.starts_with("binary patch") {
            "binary"
        } else if e.starts_with("corrupt hunk") || e.starts_with("malformed hunk") {
            "bad diff"
        } else if e.starts_with("hunk ") || e.contains("renamed/deleted earlier") {
            "conflicts"
        } else if e.starts_with("deleting ") {
            "bad delete"
        } else if e.starts_with("diff does not parse") || e.starts_with("git apply would reject") {
            "bad diff"
        } else {
            return None;
        })
    };
    let file_labels: Vec<&'static str> = view
        .files
        .iter()
        .filter_map(|f| f.error.as_deref())
        .filter_map(label_of)
        .collect();
    let diff_label = view.error.as_deref().and_then(label_of);
    let all = || file_labels.iter().chain(diff_label.iter()).copied();
    if let Some(refusal) = all().find(|l| matches!(*l, "too large" | "unsafe path")) {
        return Some(refusal);
    }
    if diff_label == Some("bad header") {
        return diff_label;
    }
    Some(all().next().unwrap_or(if view.files.is_empty() {
        "bad diff"
    } else {
        "no"
    }))
}

/// True when nothing of the candidate could be read as a change to review: empty, refused
/// (unsafe path, too large), a file header that names no file, or a diff with no file in it.
pub fn is_void(view: &PatchView) -> bool {
    view.applies == Applies::Empty
        || matches!(failure_label(view), Some("too large" | "unsafe path"))
        || (view.applies == Applies::No && view.files.is_empty())
        || view.files.iter().any(|f| {
            f.error
                .as_deref()
                .is_some_and(|e| e.starts_with("no usable file name"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(patch: &str) -> Candidate {
        Candidate {
            instance_id: "i".into(),
            agent: "a".into(),
            patch: patch.into(),
            resolved: None,
            origin: Default::default(),
        }
    }

    /// A bare repository with one commit holding `files`; returns (dir guard, path, commit).
    fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.git");
        let repo = git2::Repository::init_bare(&path).unwrap();
        let mut tree = repo.treebuilder(None).unwrap();
        for (name, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            tree.insert(name, blob, 0o100644).unwrap();
        }
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let commit = repo
            .commit(None, &sig, &sig, "base", &tree, &[])
            .unwrap()
            .to_string();
        (dir, path, commit)
    }

    #[test]
    fn rebuild_issue_reads_the_base_once_and_keeps_order() {
        let (_dir, path, commit) = repo_with(&[("m.py", "a\nb\n"), ("n.py", "x\n")]);
        let snap = Snapshot::open(&path, &commit).unwrap();
        let fix = cand("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
        let other = cand("--- a/n.py\n+++ b/n.py\n@@ -1 +1 @@\n-x\n+y\n");
        let missing = cand("--- a/gone.py\n+++ b/gone.py\n@@ -1 +1 @@\n-x\n+y\n");
        let cands = vec![fix.clone(), cand(""), missing, other.clone()];
        let views = rebuild_issue(&snap, &cands, Mode::Tolerant, usize::MAX).unwrap();
        let applies: Vec<Applies> = views.iter().map(|v| v.applies).collect();
        assert_eq!(
            applies,
            [Applies::Clean, Applies::Empty, Applies::No, Applies::Clean]
        );
        assert_eq!(views[0].files[0].after.as_deref(), Some("a\nc\n"));
        assert_eq!(views[3].files[0].after.as_deref(), Some("y\n"));
        assert_eq!(failure_label(&views[2]), Some("missing file"));
        // Over the byte limit: not rebuilt, refused with the reason; the others are unaffected.
        let views = rebuild_issue(&snap, &[fix, other], Mode::Tolerant, 40).unwrap();
        assert_eq!(failure_label(&views[0]), Some("too large"));
        assert!(views[0]
            .error
            .as_deref()
            .unwrap()
            .contains("over the 40-byte limit"));
        assert_eq!(views[1].applies, Applies::Clean);
    }

    #[test]
    fn rebuild_reports_each_outcome() {
        let mut base = Files::new();
        base.insert("m.py".into(), Some("a\nb\n".into()));
        let ok = rebuild(
            &cand("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"),
            &base,
            Mode::Tolerant,
        );
        assert_eq!(ok.applies, Applies::Clean);
        assert_eq!(ok.files[0].after.as_deref(), Some("a\nc\n"));
        assert_eq!((ok.lines_added, ok.lines_removed), (1, 1));
        let missing = rebuild(
            &cand("--- a/n.py\n+++ b/n.py\n@@ -1 +1 @@\n-a\n+b\n"),
            &base,
            Mode::Tolerant,
        );
        assert_eq!(missing.applies, Applies::No);
        assert!(missing.files[0]
            .error
            .as_ref()
            .unwrap()
            .contains("does not exist"));
        assert_eq!(
            rebuild(&cand(""), &base, Mode::Tolerant).applies,
            Applies::Empty
        );
        let garbage = rebuild(&cand("hello"), &base, Mode::Tolerant);
        assert!(garbage.error.is_some());
        // Counts off by one: git calls it corrupt, tolerant mode applies it.
        let bad = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n";
        assert_eq!(
            rebuild(&cand(bad), &base, Mode::Strict).applies,
            Applies::No
        );
        let t = rebuild(&cand(bad), &base, Mode::Tolerant);
        assert_eq!(t.applies, Applies::Fuzzy);
        assert_eq!(t.files[0].after.as_deref(), Some("a\nc\n"));
    }

    #[test]
    fn counts_short_by_a_line_git_drops_the_rest_tolerant_keeps_it() {
        let mut base = Files::new();
        base.insert("m.py".into(), Some("a\nb\n".into()));
        let short = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n+d\n";
        let s = rebuild(&cand(short), &base, Mode::Strict);
        assert_eq!(
            s.applies,
            Applies::Clean,
            "git ignores lines past the counts"
        );
        assert_eq!(s.files[0].after.as_deref(), Some("a\nc\n"));
        let p = parse(short).unwrap();
        assert!(p.files[0].hunks[0].count_mismatch);
        assert_eq!(p.files[0].hunks[0].added(), 2);
    }

    #[test]
    fn creation_rename_and_chaining() {
        let mut base = Files::new();
        base.insert("m.py".into(), Some("a\nb\n".into()));
        let new_exists = "diff --git a/m.py b/m.py\nnew file mode 100644\n--- /dev/null\n+++ b/m.py\n@@ -0,0 +1 @@\n+x\n";
        let v = rebuild(&cand(new_exists), &base, Mode::Strict);
        assert!(
            v.files[0]
                .error
                .as_ref()
                .unwrap()
                .contains("already exists"),
            "{v:?}"
        );
        let rename = "diff --git a/m.py b/n.py\nsimilarity index 80%\nrename from m.py\nrename to n.py\n--- a/m.py\n+++ b/n.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
        let v = rebuild(&cand(rename), &base, Mode::Strict);
        assert_eq!(v.applies, Applies::Clean, "{v:?}");
        assert_eq!(v.files[0].path, "n.py");
        assert_eq!(v.files[0].after.as_deref(), Some("a\nc\n"));
        let twice = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-a\n+z\n c\n";
        let v = rebuild(&cand(twice), &base, Mode::Strict);
        assert_eq!(v.files[1].after.as_deref(), Some("z\nc\n"));
        let no_prefix = "--- m.py\n+++ m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
        assert_eq!(
            rebuild(&cand(no_prefix), &base, Mode::Strict).applies,
            Applies::Clean,
            "slash-less names use -p0"
        );
        let mut deep = Files::new();
        deep.insert("pkg/m.py".into(), Some("a\nb\n".into()));
        let no_prefix = "--- pkg/m.py\n+++ pkg/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
        assert_eq!(
            rebuild(&cand(no_prefix), &deep, Mode::Strict).applies,
            Applies::No,
            "git strips `pkg/`"
        );
    }

    #[test]
    fn hunk_views_have_numbers_and_context() {
        let mut base = Files::new();
        base.insert("m.py".into(), Some("1\n2\n3\n4\n5\n6\n7\n".into()));
        let v = rebuild(
            &cand("--- a/m.py\n+++ b/m.py\n@@ -3,3 +3,4 @@\n 3\n-4\n+four\n+4b\n 5\n"),
            &base,
            Mode::Strict,
        );
        assert_eq!(v.applies, Applies::Clean);
        let hv = hunk_views(&v.files[0], 1);
        assert_eq!(hv.len(), 1);
        assert_eq!(hv[0].before_lines, Some(LineRange::new(2, 6)));
        assert_eq!(hv[0].after_lines, Some(LineRange::new(2, 7)));
        assert!(
            hv[0].before.starts_with("  2 | 2\n  3 | 3\n  4 | 4\n"),
            "{}",
            hv[0].before
        );
        assert!(
            hv[0].after.contains("  4 | four\n  5 | 4b\n"),
            "{}",
            hv[0].after
        );
    }
}
