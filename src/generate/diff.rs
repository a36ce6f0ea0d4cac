//! From before/after contents to a git-style unified diff, checked by applying it back.

use super::edit::FileEdit;
use crate::model::{Applies, Candidate};
use crate::patch::{self, Files, Mode};
use anyhow::bail;

/// A git-style diff of one file (`before: None` creates it, `after: None` deletes it).
/// Empty when nothing changed.
pub fn unified(path: &str, before: Option<&str>, after: Option<&str>) -> String {
    let (old, new) = (before.unwrap_or(""), after.unwrap_or(""));
    if before.is_some() && after.is_some() && old == new {
        return String::new();
    }
    let mut out = format!("diff --git a/{path} b/{path}\n");
    let old_name = if before.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let new_name = if after.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".to_string()
    };
    if before.is_none() {
        out.push_str("new file mode 100644\n");
    } else if after.is_none() {
        out.push_str("deleted file mode 100644\n");
    }
    let diff = similar::TextDiff::from_lines(old, new);
    let body = diff
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    out.push_str(&body);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// One diff for several files, in the order given.
pub fn patch_of(edits: &[FileEdit]) -> String {
    edits
        .iter()
        .map(|e| unified(&e.path, e.before.as_deref(), Some(&e.after)))
        .collect()
}

/// Apply `diff` the way `git apply` would to the edits' before contents and check it yields
/// exactly their after contents.
pub fn verify(diff: &str, edits: &[FileEdit]) -> anyhow::Result<()> {
    let mut base = Files::new();
    for e in edits {
        base.insert(e.path.clone(), e.before.clone());
    }
    let cand = Candidate {
        instance_id: String::new(),
        agent: String::new(),
        patch: diff.to_string(),
        resolved: None,
        origin: Default::default(),
    };
    let view = patch::rebuild(&cand, &base, Mode::Strict);
    if view.applies != Applies::Clean {
        bail!(
            "generated diff does not apply cleanly: {}",
            view.error
                .or_else(|| view.files.iter().find_map(|f| f.error.clone()))
                .unwrap_or_else(|| format!("{:?}", view.applies))
        );
    }
    for e in edits {
        let got = view
            .files
            .iter()
            .find(|f| f.path == e.path)
            .and_then(|f| f.after.as_deref());
        if got != Some(e.after.as_str()) {
            bail!(
                "generated diff for {} does not rebuild the edited file exactly",
                e.path
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fe(path: &str, before: Option<&str>, after: &str) -> FileEdit {
        FileEdit {
            path: path.into(),
            before: before.map(str::to_string),
            after: after.into(),
        }
    }

    #[test]
    fn round_trips() {
        let edits = vec![
            fe(
                "a.py",
                Some("x = 1\ny = 2\nz = 3\n"),
                "x = 1\ny = 20\nz = 3\n",
            ),
            fe("crlf.py", Some("a\r\nb\r\n"), "a\r\nB\r\nc\r\n"),
            fe("nonl.py", Some("a\nb"), "a\nc"),
            fe("new/file.py", None, "print(1)\n"),
        ];
        let d = patch_of(&edits);
        assert!(
            d.starts_with("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@"),
            "{d}"
        );
        assert!(d.contains("--- /dev/null\n+++ b/new/file.py\n"), "{d}");
        verify(&d, &edits).unwrap();
        let wrong = vec![fe(
            "a.py",
            Some("x = 1\ny = 2\nz = 3\n"),
            "something else\n",
        )];
        let one = unified(
            "a.py",
            Some("x = 1\ny = 2\nz = 3\n"),
            Some("x = 1\ny = 20\nz = 3\n"),
        );
        verify(&one, &edits[..1]).unwrap();
        assert!(verify(&one, &wrong)
            .unwrap_err()
            .to_string()
            .contains("exactly"));
        assert_eq!(unified("a.py", Some("same"), Some("same")), "");
    }
}
