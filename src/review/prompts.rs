//! The LLM committee's prompts: what one candidate shows ([`PromptCandidate`]) and the
//! pointwise, listwise and pairwise renderings of `prompts/*.j2` (loaded by
//! [`crate::llm::prompts::Prompts`]).

use super::{IssueBundle, Prepared};
use crate::llm::prompts::Prompts;
use crate::llm::{Format, Rendered};
use crate::model::{FileView, LineRange, Task};
use crate::review::rubric::Rubric;
use serde::Serialize;

/// Limits that keep one candidate's part of a prompt bounded.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub diff_chars: usize,
    pub region_chars: usize,
    pub context_chars: usize,
    /// Lines shown around each changed region.
    pub margin: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            diff_chars: 20_000,
            region_chars: 8_000,
            context_chars: 16_000,
            margin: 3,
        }
    }
}

/// One changed file, before and after, as the model reads it.
#[derive(Debug, Clone, Serialize)]
pub struct Region {
    pub path: String,
    pub before: String,
    pub after: String,
    pub error: Option<String>,
}

/// One candidate, ready for a template. The agent's name is never shown (no brand bias).
#[derive(Debug, Clone, Serialize)]
pub struct PromptCandidate {
    pub label: String,
    pub applies: String,
    pub diff: String,
    pub regions: Vec<Region>,
    pub context: String,
    pub edited: Vec<String>,
    /// What running it showed (`--exec`); `None` without execution evidence, and then the
    /// prompts are exactly as they were before execution evidence existed.
    pub exec: Option<ExecView>,
}

/// Most broken tests named in a prompt; the rest are counted.
pub const BROKEN_SHOWN: usize = 10;

/// One candidate's execution evidence as the model reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExecView {
    /// Tests that passed twice at the base commit and fail with the candidate (at most
    /// [`BROKEN_SHOWN`]).
    pub broken: Vec<String>,
    /// Broken tests not named.
    pub broken_more: usize,
    /// How many broken tests the patch rewrites, its version failing at the base commit and
    /// passing with it (`Behaviour::rewritten`).
    pub broken_rewritten: usize,
    /// The test files the candidate edits, set aside: its tests ran as at the base commit.
    pub tests_set_aside: Vec<String>,
    /// The issue's test files that ran in part or not at all for time, one phrase each (see
    /// [`IssueBundle::tests_in_part`]).
    pub tests_in_part: Vec<String>,
    /// Base-passing tests that ran with the candidate.
    pub tests_run: usize,
    /// The issue's reproduction against the base commit: `changed`, `same`, or `None` when none ran.
    pub repro: Option<&'static str>,
    /// That reproduction is a script one of the candidate agents wrote (the issue shows no
    /// runnable code); which agent is never said.
    pub repro_by_agent: bool,
    /// What the model-written test printed (`resolved`, `reproduced`, `other`, `timeout`), or
    /// `None` when no such test was kept (`--exec-llm-repro`).
    pub model_test: Option<&'static str>,
    /// How many model-written tests were kept: with more than one, `model_test` is what most
    /// of them print.
    pub model_tests: usize,
    /// Test sets other agent families wrote into their patches that fail at the base commit:
    /// how many ran with this candidate, and how many of them it passes.
    pub written_run: usize,
    pub written_passed: usize,
    /// When the candidate wrote a test set of its own that fails at the base commit and passes
    /// with it: how many other candidates pass it too (0 otherwise). Alone it says nothing
    /// about the candidate; passed by others, they behave alike on it.
    pub own_written_passed_by: usize,
    /// Of the values the issue says its code should show that the base run does not show, how
    /// many the reproduction shows with this candidate (shown, of); `None` when the issue names
    /// none or the reproduction did not run for it.
    pub expected: Option<(usize, usize)>,
    /// What the reproduction printed with this candidate, when its run differs from the base
    /// commit's (see [`crate::model::Behaviour::repro_output`]).
    pub repro_output: Option<String>,
    /// Other agent families with a candidate that behaves the same on everything that ran.
    pub same_families: usize,
    /// Why the candidate could not be run (then nothing else is known).
    pub error: Option<String>,
}

/// The reproduction that ran for an issue, as the prompts show it once, above the candidates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReproView {
    /// Its code (the issue's, made runnable, or an agent's script).
    pub code: String,
    /// What it printed at the base commit; `None` when that is not compared (it moved between
    /// two runs).
    pub base_output: Option<String>,
    /// An agent's script, not the issue's code (which agent is never said).
    pub by_agent: bool,
}

/// The reproduction of `bundle`'s issue for its prompts; `None` without `--exec`, or when none
/// ran.
pub fn repro_view(bundle: &IssueBundle) -> Option<ReproView> {
    Some(ReproView {
        code: bundle.repro_code.clone()?,
        base_output: bundle.repro_output.clone(),
        by_agent: bundle.repro_by_agent,
    })
}

/// The execution view of every candidate of `bundle`, in its order: `None` where a candidate
/// carries no [`crate::model::Behaviour`] (always, without `--exec`) or nothing ran for it.
pub fn exec_views(bundle: &IssueBundle) -> Vec<Option<ExecView>> {
    use crate::model::{Behaviour, ReproChange};
    use crate::review::offline::features::family_of;
    let of = |i: usize| -> Option<&Behaviour> { bundle.behaviour.get(i).and_then(Option::as_ref) };
    (0..bundle.candidates.len())
        .map(|i| {
            let b = of(i)?;
            if let Some(e) = &b.error {
                return Some(ExecView {
                    broken: vec![],
                    broken_more: 0,
                    broken_rewritten: 0,
                    tests_set_aside: vec![],
                    tests_in_part: vec![],
                    tests_run: 0,
                    repro: None,
                    repro_by_agent: false,
                    model_test: None,
                    model_tests: 0,
                    written_run: 0,
                    written_passed: 0,
                    own_written_passed_by: 0,
                    expected: None,
                    repro_output: None,
                    same_families: 0,
                    error: Some(e.lines().next().unwrap_or("").to_string()),
                });
            }
            if !b.ran() {
                return None;
            }
            let family = family_of(&bundle.candidates[i].candidate.agent);
            let same_families = match b.class {
                Some(class) => (0..bundle.candidates.len())
                    .filter(|&j| j != i)
                    .filter(|&j| of(j).is_some_and(|o| o.ran() && o.class == Some(class)))
                    .map(|j| family_of(&bundle.candidates[j].candidate.agent))
                    .filter(|f| *f != family)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                None => 0,
            };
            // Tests other candidates wrote (its own say nothing about it).
            let others: Vec<bool> = b
                .written
                .iter()
                .filter(|(f, _)| b.wrote.as_ref() != Some(*f))
                .map(|(_, &ok)| ok)
                .collect();
            let own_written_passed_by = b.passes_own_set().map_or(0, |own| {
                (0..bundle.candidates.len())
                    .filter(|&j| j != i)
                    .filter(|&j| of(j).is_some_and(|o| o.written.get(own) == Some(&true)))
                    .count()
            });
            Some(ExecView {
                broken: b.broken.iter().take(BROKEN_SHOWN).cloned().collect(),
                broken_more: b.broken.len().saturating_sub(BROKEN_SHOWN),
                broken_rewritten: b.rewritten.len(),
                tests_set_aside: b.tests_set_aside.clone(),
                tests_in_part: bundle.tests_in_part.clone(),
                tests_run: b.tests_run,
                repro: b.repro.map(|r| match r {
                    ReproChange::Changed => "changed",
                    ReproChange::Same => "same",
                    ReproChange::Broken => "broken",
                    ReproChange::StillFails => "still_fails",
                }),
                repro_by_agent: bundle.repro_by_agent,
                model_test: b.model_test.map(crate::model::ModelTest::word),
                model_tests: bundle.model_tests_kept,
                written_run: others.len(),
                written_passed: others.iter().filter(|&&ok| ok).count(),
                own_written_passed_by,
                expected: b.expected.map(|x| (x.shown, x.of)),
                repro_output: b.repro_output.clone(),
                same_families,
                error: None,
            })
        })
        .collect()
}

fn cap(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… [{} more characters cut]\n", &s[..end], s.len() - end)
}

/// Lines of `text` around `ranges` (merged, `margin` lines each side), numbered.
pub fn excerpt(text: &str, ranges: &[LineRange], margin: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() || ranges.is_empty() {
        return String::new();
    }
    let mut spans: Vec<(usize, usize)> = ranges
        .iter()
        .map(|r| {
            (
                r.start.saturating_sub(margin).max(1),
                (r.end + margin).min(lines.len()),
            )
        })
        .filter(|(a, b)| a <= b)
        .collect();
    spans.sort();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in spans {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let width = merged.last().map(|m| m.1.to_string().len()).unwrap_or(1);
    let mut out = String::new();
    for (k, (a, b)) in merged.iter().enumerate() {
        if k > 0 {
            out.push_str("…\n");
        }
        for n in *a..=*b {
            out.push_str(&format!("{n:>width$} | {}\n", lines[n - 1]));
        }
    }
    out
}

fn region(f: &FileView, lim: &Limits) -> Region {
    let before = f
        .before
        .as_deref()
        .map(|t| excerpt(t, &f.changed_before, lim.margin))
        .unwrap_or_default();
    let after = f
        .after
        .as_deref()
        .map(|t| excerpt(t, &f.changed_after, lim.margin))
        .unwrap_or_default();
    Region {
        path: f.path.clone(),
        before: cap(&before, lim.region_chars),
        after: cap(&after, lim.region_chars),
        error: f.error.clone(),
    }
}

impl PromptCandidate {
    pub fn new(p: &Prepared, label: &str, lim: &Limits) -> PromptCandidate {
        PromptCandidate {
            label: label.to_string(),
            applies: p.view.applies.label().to_string(),
            diff: cap(p.candidate.patch.trim_end(), lim.diff_chars),
            regions: p.view.files.iter().map(|f| region(f, lim)).collect(),
            context: cap(&crate::context::render(&p.context), lim.context_chars),
            edited: p.context.edited.clone(),
            exec: None,
        }
    }

    /// The same candidate with its execution evidence shown.
    pub fn with_exec(mut self, exec: Option<ExecView>) -> PromptCandidate {
        self.exec = exec;
        self
    }
}

/// Whether any of `cs` shows execution evidence (the instructions then ask to use it).
fn executed(cs: &[&PromptCandidate]) -> bool {
    cs.iter().any(|c| c.exec.is_some())
}

impl Prompts {
    pub fn pointwise(
        &self,
        task: &Task,
        repro: Option<&ReproView>,
        c: &PromptCandidate,
        rubric: &Rubric,
        format: Format,
    ) -> anyhow::Result<Rendered> {
        self.render(
            "pointwise.j2",
            minijinja::context! { issue => task.problem_statement.trim(), reproduction => repro, candidate => c, rubric => rubric.text, format => format, executed => executed(&[c]) },
        )
    }

    pub fn listwise(
        &self,
        task: &Task,
        repro: Option<&ReproView>,
        cs: &[PromptCandidate],
        rubric: &Rubric,
        format: Format,
    ) -> anyhow::Result<Rendered> {
        self.render(
            "listwise.j2",
            minijinja::context! { issue => task.problem_statement.trim(), reproduction => repro, candidates => cs, rubric => rubric.text, format => format, executed => executed(&cs.iter().collect::<Vec<_>>()) },
        )
    }

    pub fn pairwise(
        &self,
        task: &Task,
        repro: Option<&ReproView>,
        a: &PromptCandidate,
        b: &PromptCandidate,
        rubric: &Rubric,
        format: Format,
    ) -> anyhow::Result<Rendered> {
        self.render(
            "pairwise.j2",
            minijinja::context! { issue => task.problem_statement.trim(), reproduction => repro, candidates => [a, b], rubric => rubric.text, format => format, executed => executed(&[a, b]) },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_merges_and_numbers() {
        let text = (1..=20)
            .map(|i| format!("l{i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let e = excerpt(
            &text,
            &[
                LineRange::new(5, 5),
                LineRange::new(8, 8),
                LineRange::new(18, 18),
            ],
            1,
        );
        assert_eq!(e, " 4 | l4\n 5 | l5\n 6 | l6\n 7 | l7\n 8 | l8\n 9 | l9\n…\n17 | l17\n18 | l18\n19 | l19\n");
    }

    #[test]
    fn overrides_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pointwise.j2"),
            "ISSUE={{ issue }} {{ nosuchvar }}",
        )
        .unwrap();
        let p = Prompts::load(Some(dir.path())).unwrap();
        let task = Task {
            problem_statement: "x".into(),
            ..Default::default()
        };
        let c = PromptCandidate {
            label: "1".into(),
            applies: "clean".into(),
            diff: String::new(),
            regions: vec![],
            context: String::new(),
            edited: vec![],
            exec: None,
        };
        let e = p
            .pointwise(&task, None, &c, &Rubric::default_rubric(), Format::Json)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pointwise.j2") && !e.contains("built-in"), "{e}");
        std::fs::write(dir.path().join("pointwise.j2"), "{% if %}").unwrap();
        assert!(Prompts::load(Some(dir.path()))
            .unwrap_err()
            .to_string()
            .contains("pointwise.j2"));
    }
}
