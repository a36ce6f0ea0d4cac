//! What the offline committee reads from one candidate: facts taken from the diff text
//! (always available) and, when the repository was read, from the rebuilt code.
//!
//! Everything here is a plain value so that each signal scorer can be tested on small
//! hand-made inputs.

use crate::model::paths::is_test_path;
use crate::model::{Applies, Candidate, Context, PatchView};
use crate::patch::normalize::{normalize_line, section_def};
use crate::patch::parse::{self, Line};
use std::collections::BTreeSet;

/// Facts about one candidate, independent of the other candidates.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Features {
    /// The agent, and its family (see [`family_of`]).
    pub agent: String,
    pub family: String,
    pub empty: bool,
    /// The diff text could not be parsed at all.
    pub unparsable: bool,
    /// Why the candidate was refused before review (`patch too large: …`, `unsafe path …`,
    /// a diff with no file in it): it has nothing to review.
    pub refused: Option<String>,
    /// Why every committee scores it 1 by rule ([`crate::review::by_rule`]): no patch, it
    /// does not apply, or it touches no library code.
    pub by_rule: Option<String>,
    /// How it applied at the base commit; `None` when the repository was not read.
    pub applies: Option<Applies>,
    /// Parse errors the patch introduces; `None` when the repository was not read.
    pub new_parse_errors: Option<usize>,
    /// Duplicate key: every added/removed line normalized as the patch engine does
    /// ([`normalize_line`]: whitespace collapsed, `#` comments outside string literals
    /// dropped, whole-line or trailing), blank lines dropped, grouped by file in path order.
    /// Equal keys are duplicates.
    pub key: String,
    /// Changed lines as `path\u{1f}+text` / `path\u{1f}-text` (normalized as for `key`).
    pub lines: BTreeSet<String>,
    /// Files the patch touches.
    pub files: BTreeSet<String>,
    /// Definitions it edits, `path::name`: from the rebuilt code when available, else from
    /// the hunk headers' section text (`@@ ... @@ def name(`).
    pub defs: BTreeSet<String>,
    pub lines_added: usize,
    pub lines_removed: usize,
    /// Lines added plus removed in code files, and the code files touched (Python outside
    /// tests, docs, examples and scripts): a change's size and scatter are those of the fix,
    /// not of the tests and docs written with it.
    pub source_lines: usize,
    pub source_files: usize,
    pub hunks: usize,
    /// Every touched file is a test file.
    pub tests_only: bool,
    /// Added lines that print or stop in a debugger, outside test files.
    pub debug_lines: usize,
}

impl Features {
    /// Lines added plus removed.
    pub fn size(&self) -> usize {
        self.lines_added + self.lines_removed
    }
    /// The candidate changes nothing reviewable (empty, or no changed line survives normalization).
    pub fn is_void(&self) -> bool {
        self.empty || self.unparsable || self.refused.is_some()
    }

    /// Scored 1 by rule, not reviewed: void, or no fix by [`crate::review::by_rule`].
    pub fn scored_by_rule(&self) -> bool {
        self.is_void() || self.by_rule.is_some()
    }
}

pub use crate::candidates::family_of;

fn is_debug_line(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("print(")
        || t.contains("pdb.set_trace")
        || t.starts_with("breakpoint(")
        || t.starts_with("import pdb")
}

/// Facts from the diff text alone (no repository needed).
pub fn from_diff(candidate: &Candidate) -> Features {
    let mut f = Features {
        agent: candidate.agent.clone(),
        family: family_of(&candidate.agent),
        empty: candidate.is_empty(),
        ..Features::default()
    };
    if f.empty {
        return f;
    }
    let Ok(patch) = parse::parse(&candidate.patch) else {
        f.unparsable = true;
        return f;
    };
    let mut per_file: Vec<(String, Vec<String>)> = Vec::new();
    let mut library_files = 0usize;
    for fp in &patch.files {
        let path = fp.path().to_string();
        f.files.insert(path.clone());
        let test = is_test_path(&path);
        if crate::model::paths::is_library_file(&path, fp.is_new()) {
            library_files += 1;
        }
        // A change's size and scatter count its code only: the Python files outside tests,
        // docs, examples and scripts. Tests, changelog entries and docs written with a fix are
        // not part of how large it is.
        let code =
            crate::model::paths::is_python(&path) && !crate::model::paths::is_auxiliary(&path);
        if code {
            f.source_files += 1;
        }
        let mut changed: Vec<String> = Vec::new();
        for h in &fp.hunks {
            f.hunks += 1;
            f.lines_added += h.added();
            f.lines_removed += h.removed();
            if code {
                f.source_lines += h.added() + h.removed();
            }
            if let Some(d) = section_def(&h.section) {
                f.defs.insert(format!("{path}::{d}"));
            }
            for l in &h.lines {
                let (sign, text) = match l {
                    Line::Add(t) => ('+', t),
                    Line::Remove(t) => ('-', t),
                    Line::Context(_) => continue,
                };
                if sign == '+' && !test && is_debug_line(text) {
                    f.debug_lines += 1;
                }
                let n = normalize_line(text);
                if !n.is_empty() {
                    f.lines.insert(format!("{path}\u{1f}{sign}{n}"));
                    changed.push(format!("{sign}{n}"));
                }
            }
        }
        per_file.push((path, changed));
    }
    f.tests_only = !f.files.is_empty() && f.files.iter().all(|p| is_test_path(p));
    if library_files == 0 && !f.files.is_empty() {
        // The diff alone says what it touches; with the repository, `from_rebuilt` asks
        // `review::by_rule` itself.
        f.by_rule = Some("touches no library code: not a fix".into());
    }
    per_file.sort();
    f.key = per_file
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(p, c)| format!("{p}\n{}", c.join("\n")))
        .collect::<Vec<_>>()
        .join("\n\u{1e}");
    f
}

/// Facts from the diff and the rebuilt code: adds how it applied, the parse errors it
/// introduces, and the edited definitions found with tree-sitter (replacing the hunk-header guess).
pub fn from_rebuilt(candidate: &Candidate, view: &PatchView, context: &Context) -> Features {
    if !candidate.is_empty() && crate::patch::is_void(view) {
        // Refused or unreadable: its text says nothing (and a huge one is not parsed again).
        let why = view
            .error
            .iter()
            .chain(view.files.iter().filter_map(|f| f.error.as_ref()))
            .next()
            .and_then(|e| e.lines().next())
            .unwrap_or("the diff has no file in it")
            .to_string();
        return Features {
            agent: candidate.agent.clone(),
            family: family_of(&candidate.agent),
            applies: Some(view.applies),
            refused: Some(why),
            ..Features::default()
        };
    }
    let mut f = from_diff(candidate);
    f.applies = Some(view.applies);
    f.by_rule = crate::review::by_rule(candidate, view);
    f.new_parse_errors = Some(context.new_parse_errors);
    if !context.edited.is_empty() {
        f.defs = context.edited.iter().cloned().collect();
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_group_runs_of_one_agent() {
        assert_eq!(family_of("acr-v20240408_acr-run-3"), "acr-v20240408");
        assert_eq!(family_of("acr-v20240408_acr-val-sbfl"), "acr-v20240408");
        assert_eq!(
            family_of("sweagent-gpt4-0125_cost_2_2"),
            "sweagent-gpt4-0125"
        );
        assert_eq!(family_of("20240604_CodeR"), "CodeR");
        assert_eq!(family_of("20240623_moatless_claude35sonnet"), "moatless");
        assert_eq!(family_of("careful-agent"), "careful-agent");
        assert_eq!(family_of("agent-run-2"), "agent");
        assert_eq!(family_of("agent-7"), "agent");
        assert_ne!(family_of("alpha"), family_of("beta"));
    }

    #[test]
    fn duplicates_share_a_key_despite_whitespace_and_comments() {
        let c = |agent: &str, patch: &str| Candidate {
            instance_id: "i".into(),
            agent: agent.into(),
            patch: patch.into(),
            resolved: None,
            origin: Default::default(),
        };
        let a = from_diff(&c(
            "a",
            "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@ def f(x):\n a\n-b\n+c  =  1\n",
        ));
        let b = from_diff(&c(
            "b",
            "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,3 @@\n a\n-b\n+c = 1\n+# why\n",
        ));
        assert_eq!(a.key, b.key);
        assert!(a.defs.contains("m.py::f"));
        assert_eq!((a.lines_added, a.lines_removed, a.hunks), (1, 1, 1));
        let t = from_diff(&c(
            "t",
            "--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1 @@\n-x\n+print(1)\n",
        ));
        assert!(t.tests_only);
        assert_eq!(t.debug_lines, 0, "prints in tests are not debug output");
        let e = from_diff(&c("e", "  \n"));
        assert!(e.empty && e.is_void());
    }

    /// The committee normalizes changed lines exactly as the patch engine does: a trailing
    /// comment is not part of the edit (here too, so these two are duplicates), and a `#`
    /// inside a string literal is code, not a comment.
    #[test]
    fn trailing_comments_are_dropped_but_hashes_in_strings_kept() {
        let c = |agent: &str, added: &str| {
            from_diff(&Candidate {
                instance_id: "i".into(),
                agent: agent.into(),
                patch: format!("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 0\n+{added}\n"),
                resolved: None,
                origin: Default::default(),
            })
        };
        let plain = c("a", "x = 1");
        let commented = c("b", "x = 1  # the fix for #42");
        assert_eq!(plain.key, commented.key);
        assert_eq!(plain.lines, commented.lines);
        let hash = c("c", "x = '#1'");
        let quoted = c("d", "x = '#1'  # comment");
        assert_eq!(hash.key, quoted.key);
        assert_ne!(hash.key, plain.key, "a # inside quotes is code");
        assert!(
            hash.lines.contains("m.py\u{1f}+x = '#1'"),
            "{:?}",
            hash.lines
        );
    }
}
