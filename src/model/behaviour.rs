//! What running a candidate showed: the execution evidence one candidate carries into the
//! committee. It is gathered by `exec` (sandboxed runs of the repository's own tests and of the
//! issue's reproduction, at the base commit and with the candidate) and read by `review`; this
//! type is the whole contract between the two.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the reproduction behaved with a candidate, compared with the base commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReproChange {
    /// Different outcome from the base commit (exit status, exception type or normalized output).
    Changed,
    /// The same outcome as at the base commit: the behaviour the issue reports is still there.
    Same,
    /// It now fails where the base commit did not (an exception the base run did not end with,
    /// or killed at the time limit): changed, but by breaking, not by fixing.
    Broken,
    /// It still fails at the statement where the base commit's run first failed, with another
    /// exception, one the issue never names: the failure the issue reports is not gone, it
    /// only reads differently. Counted as [`ReproChange::Same`] by every rule.
    StillFails,
}

impl ReproChange {
    /// Whether the behaviour the issue reports is still there: the same outcome, or the same
    /// failing statement with another exception.
    pub fn unchanged(self) -> bool {
        matches!(self, ReproChange::Same | ReproChange::StillFails)
    }
}

/// What the model-written reproduction test printed with a candidate (`--exec-llm-repro`). The
/// test is kept only when it prints `Issue reproduced` at the base commit, so every candidate
/// that carries one is compared against that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelTest {
    /// It printed `Issue resolved`: the behaviour the issue reports is gone.
    Resolved,
    /// It printed `Issue reproduced`, as at the base commit: the reported behaviour is still there.
    Reproduced,
    /// It printed `Other issues`, none of the three lines, or more than one of them: it fails
    /// some other way (the candidate's code no longer imports, the test trips on something else).
    Other,
    /// It was killed at the time limit.
    Timeout,
}

impl ModelTest {
    /// The word the JSON and the prompts use.
    pub fn word(self) -> &'static str {
        match self {
            ModelTest::Resolved => "resolved",
            ModelTest::Reproduced => "reproduced",
            ModelTest::Other => "other",
            ModelTest::Timeout => "timeout",
        }
    }
}

/// How much of what the issue says its code should show (a value after "should be", a block
/// under "Expected output"; see `exec::repro::expected_outputs`) the reproduction shows with a
/// candidate: of the items the base run does not show, how many its output shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedShown {
    pub shown: usize,
    pub of: usize,
}

/// Execution evidence of one candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Behaviour {
    /// Test ids that passed twice at the base commit and fail (or error) with this candidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken: Vec<String>,
    /// Tests of `broken` the candidate's own patch rewrites, its version failing at the base
    /// commit and passing with the candidate, while no other candidate changes what the issue
    /// shows and keeps the test (as the base wrote it) passing: the old test asserts the
    /// behaviour the candidate says the issue changes, and nothing that ran says otherwise.
    /// They are not held against it (its health, its "breaks tests" part); they still count
    /// as broken in how rare a break is among the other candidates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rewritten: Vec<String>,
    /// How many base-passing tests ran with this candidate (0: no regression evidence).
    #[serde(default)]
    pub tests_run: usize,
    /// The reproduction's outcome against the base commit; `None` when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro: Option<ReproChange>,
    /// How the reproduction ended with this candidate (`raises NameError at statement 5`,
    /// `runs without error`), when its run differs from the base commit's; `None` when it is
    /// the same, or none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_end: Option<String>,
    /// What the reproduction printed with this candidate (normalized as compared, its own
    /// debug prints dropped, clipped), when its run differs from the base commit's; `None`
    /// when it is the same, none ran, or the base's output moved between its two runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repro_output: Option<String>,
    /// What the issue says its code should show, as the reproduction shows it with this
    /// candidate; `None` when the issue names nothing the base run does not already show, or
    /// the reproduction did not run for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<ExpectedShown>,
    /// What the model-written reproduction test printed with this candidate; `None` when no
    /// such test was kept (no `--exec-llm-repro`, or its test did not fail at the base commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_test: Option<ModelTest>,
    /// Tests the candidates wrote (see `exec::written`) that fail at the base commit, by the
    /// agent family that wrote them: whether this candidate passes every one of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub written: BTreeMap<String, bool>,
    /// The key of `written` whose set this candidate wrote (its family): its own tests, written
    /// to pass its own fix, say nothing about it; they do about its family's other runs, whose
    /// fixes were not written against them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrote: Option<String>,
    /// The repository's test files the candidate edits, set aside: its tests ran as they were at
    /// the base commit (a rewritten assertion does not hide a break).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests_set_aside: Vec<String>,
    /// Behaviour class: candidates with the same outcomes on everything that ran share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<usize>,
    /// Why the candidate could not be run (it then carries no evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// [`Behaviour::written_tally`]: the sets other candidates wrote that a candidate passes, and
/// those it fails while another candidate passes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WrittenTally {
    pub passed: usize,
    pub failed: usize,
}

impl WrittenTally {
    /// It fails every such set another candidate passes, and there is one: what health counts
    /// against it, and what withholds its behaviour vote.
    pub fn fails_every_set(&self) -> bool {
        self.failed > 0 && self.passed == 0
    }
}

/// The kinds of execution evidence a committee counts, in scores and in what ran *healthy*
/// (`rank::health::healthy`): the offline committee leaves out a kind it weighs at zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counted {
    /// Tests that passed at the base commit and fail with the candidate.
    pub breaks: bool,
    /// The reproduction, and the model-written test.
    pub repro: bool,
    /// The tests candidates wrote.
    pub written: bool,
}

impl Counted {
    /// Every kind.
    pub const ALL: Counted = Counted {
        breaks: true,
        repro: true,
        written: true,
    };
}

impl Behaviour {
    /// The test sets other candidates wrote (its own aside) that it passes, and those it fails
    /// while another candidate passes them (`another_passes(family)`): a set nobody else
    /// passes tells nothing.
    pub fn written_tally(&self, another_passes: impl Fn(&str) -> bool) -> WrittenTally {
        let mut t = WrittenTally::default();
        for (family, &ok) in &self.written {
            if self.wrote.as_ref() == Some(family) {
                continue;
            }
            if ok {
                t.passed += 1;
            } else if another_passes(family) {
                t.failed += 1;
            }
        }
        t
    }

    /// The key of the test set this candidate wrote, when it passes it (its fix was written
    /// to): alone that says nothing about it; another candidate passing the set too does.
    pub fn passes_own_set(&self) -> Option<&str> {
        self.wrote
            .as_deref()
            .filter(|own| self.written.get(*own) == Some(&true))
    }

    /// The broken tests held against it: `broken` without those it rewrites and passes
    /// (`rewritten`).
    pub fn charged(&self) -> impl Iterator<Item = &String> {
        self.broken.iter().filter(|t| !self.rewritten.contains(t))
    }

    /// This behaviour as a committee that counts only the kinds in `counted` reads it: a kind
    /// it leaves out is as if it had not run.
    pub fn counted(&self, counted: Counted) -> Behaviour {
        let mut b = self.clone();
        if !counted.breaks {
            b.broken.clear();
            b.rewritten.clear();
        }
        if !counted.repro {
            b.repro = None;
            b.repro_end = None;
            b.repro_output = None;
            b.expected = None;
            b.model_test = None;
        }
        if !counted.written {
            b.written.clear();
            b.wrote = None;
        }
        b
    }

    /// Whether anything ran for this candidate.
    pub fn ran(&self) -> bool {
        self.error.is_none()
            && (self.tests_run > 0
                || self.repro.is_some()
                || self.model_test.is_some()
                || !self.written.is_empty())
    }
}
