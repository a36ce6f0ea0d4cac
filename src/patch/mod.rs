//! Stage 3: turn a candidate's diff into the code before and after it, in memory.

pub mod apply;
pub mod parse;

pub use apply::{apply_file, Mode};
pub use parse::{parse, Patch};

use crate::types::{Applies, Candidate, FileView, HunkStatus, PatchView};
use std::collections::HashMap;

/// Base-commit contents by path (`None`: not in the tree).
pub type Files = HashMap<String, Option<String>>;

/// Paths a candidate reads from the base commit (empty if it does not parse).
pub fn paths_needed(candidate: &Candidate) -> Vec<String> {
    match parse(&candidate.patch) {
        Ok(p) => p.files.iter().filter_map(|f| f.old_path.clone()).collect(),
        Err(_) => Vec::new(),
    }
}

/// A path that could point outside the repository: absolute, `..`, a drive prefix or a NUL.
pub fn unsafe_path(p: &str) -> bool {
    p.starts_with('/')
        || p.starts_with('\\')
        || p.contains('\0')
        || p.get(1..2) == Some(":")
        || p.split(['/', '\\']).any(|c| c == "..")
}

/// Rebuild a candidate against base contents. Never fails: problems are recorded in the view.
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
    let patch = match parse(&candidate.patch) {
        Ok(p) => p,
        Err(e) => {
            return PatchView {
                applies: Applies::No,
                files: vec![],
                error: Some(format!("diff does not parse: {e}")),
                lines_added: 0,
                lines_removed: 0,
            }
        }
    };
    let mut files = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for fp in &patch.files {
        added += fp.hunks.iter().map(|h| h.added()).sum::<usize>();
        removed += fp.hunks.iter().map(|h| h.removed()).sum::<usize>();
        let before = fp
            .old_path
            .as_ref()
            .and_then(|p| base.get(p).cloned().flatten());
        let mut view = FileView {
            path: fp.path().to_string(),
            before: before.clone(),
            after: None,
            hunks: vec![],
            changed_before: vec![],
            changed_after: vec![],
            error: None,
        };
        if let Some(bad) = [&fp.old_path, &fp.new_path]
            .into_iter()
            .flatten()
            .find(|p| unsafe_path(p))
        {
            view.error = Some(format!(
                "unsafe path `{bad}` (absolute or with `..`): rejected"
            ));
            files.push(view);
            continue;
        }
        if fp.binary {
            view.error = Some("binary patch: not applied".into());
            files.push(view);
            continue;
        }
        let exists_new = fp.is_new() && base.get(fp.path()).is_some_and(Option::is_some);
        match (&fp.old_path, &before) {
            (Some(p), None) => view.error = Some(format!("{p} does not exist at the base commit")),
            (None, _) if exists_new => {
                view.error = Some(format!("{} already exists at the base commit", fp.path()))
            }
            _ => {
                let r = apply_file(fp, before.as_deref().unwrap_or(""), mode);
                view.hunks = r.hunks;
                view.changed_before = r.changed_before;
                view.changed_after = r.changed_after;
                if let Some(failed) = view.hunks.iter().position(|h| *h == HunkStatus::Failed) {
                    let h = &fp.hunks[failed];
                    view.error = Some(format!(
                        "hunk {} (@@ -{},{} @@, diff line {}) does not match the file",
                        failed + 1,
                        h.old_start,
                        h.old_len,
                        h.header_line
                    ));
                }
                view.after = if fp.is_delete() { None } else { r.after };
            }
        }
        if fp.hunks.is_empty() && view.error.is_none() && !fp.is_new() && fp.old_path == fp.new_path
        {
            // Header-only entry (mode change): content unchanged.
            view.after = view.before.clone();
        }
        files.push(view);
    }
    let any_failed = files.iter().any(|f| f.error.is_some());
    let any_fuzzy = files
        .iter()
        .flat_map(|f| &f.hunks)
        .any(|h| *h == HunkStatus::Fuzzy);
    let applies = if any_failed {
        Applies::No
    } else if any_fuzzy {
        Applies::Fuzzy
    } else {
        Applies::Clean
    };
    PatchView {
        applies,
        files,
        error: None,
        lines_added: added,
        lines_removed: removed,
    }
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
    }
}
