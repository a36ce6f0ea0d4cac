//! The reproduction test a model writes from the issue (`dei rank --exec --exec-llm-repro`),
//! Agentless-style: one standalone Python script that prints `Issue reproduced`,
//! `Issue resolved` or `Other issues`. [`gather`](super::gather) runs it at the base commit
//! and keeps it only when it prints `Issue reproduced` there; then runs it with each distinct
//! after-tree, and each candidate carries what it printed ([`ModelTest`]).
//!
//! The model sees the issue's text (the task's `problem_statement`), the repository's name,
//! its top-level modules, the files an issue-only text search ranks first and, when the issue
//! gives a usable reproduction, that code with what it did at the base commit ([`ShownRun`]:
//! so the model is asked after the base runs); never the reference patch, its tests, the
//! lists of tests that must pass, nor the hints, nor anything a candidate wrote. One call per
//! issue, through the [`Engine`] (its response cache, limits, retries, cost cap and ledger),
//! so a rerun costs nothing. Whatever goes wrong with the model (a failed call, a reply
//! without a code block, a script that does not parse) is recorded in the issue's
//! [`ModelTestRecord`] and never fails the ranking.

use crate::llm::prompts::Prompts;
use crate::llm::runner::Engine;
use crate::llm::Rendered;
use crate::model::{ModelTest, Task, Usage};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The file the model's test is written to, at the root of the tree.
pub const TEST_FILE: &str = "dei_model_test.py";
/// The three lines the test prints (Agentless's convention).
pub const REPRODUCED: &str = "Issue reproduced";
pub const RESOLVED: &str = "Issue resolved";
pub const OTHER: &str = "Other issues";
/// Files from the issue-only search named in the prompt.
pub const CONTEXT_FILES: usize = 5;
/// Top-level modules named in the prompt.
pub const CONTEXT_MODULES: usize = 20;
/// The temperature of every sample after the first (Agentless samples its tests at 0.8); the
/// first is asked at 0.
pub const SAMPLE_TEMPERATURE: f64 = 0.8;
/// The most samples `--exec-llm-repro-samples` asks for.
pub const MAX_SAMPLES: u32 = 10;

/// What became of the model-written test for one issue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// No usable script: the call failed, the reply held no code block, or it does not parse.
    #[default]
    NotWritten,
    /// Written, but it did not print `Issue reproduced` at the base commit: not used.
    Discarded,
    /// It prints `Issue reproduced` at the base commit; it ran with every candidate.
    Kept,
}

/// The model-written test of one issue, as `IssueExec` records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelTestRecord {
    pub status: TestStatus,
    /// Why it was not written or was discarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// What it printed at the base commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<ModelTest>,
    /// Which sample it is (0: the first, asked at temperature 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub sample: u32,
    /// The script, when one was extracted from the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The model that wrote it (`protocol:model`).
    pub model: String,
    /// The call's tokens and cost (no cost when answered from the cache), over every try at the
    /// issue: one gathered again in another environment asks again when its prompt changed.
    pub usage: Usage,
    /// Whether the prompt showed the issue's reproduction as it ran at the base commit
    /// ([`ShownRun`]), so that real-model runs can tell how often a test is kept with and
    /// without it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shown_reproduction: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ModelTestRecord {
    /// The script to run: one was extracted and nothing is wrong with it.
    pub fn runnable(&self) -> Option<&str> {
        self.script.as_deref().filter(|_| self.why.is_none())
    }
}

/// Asks a model for the reproduction test.
pub struct TestWriter {
    engine: Arc<Engine>,
    prompts: Prompts,
    /// `protocol:model`, for the records.
    pub model: String,
    /// Tests asked per issue (1 unless [`TestWriter::with_samples`] says more).
    pub samples: u32,
}

impl TestWriter {
    /// What changes the tests it writes: the model, the prompts' digest and, when more than
    /// one, the samples asked.
    pub fn settings(&self) -> String {
        let mut s = format!("{} prompts {}", self.model, self.prompts.digest);
        if self.samples > 1 {
            s.push_str(&format!(" samples {}", self.samples));
        }
        s
    }

    /// Whether its model only prints prompts (`--dry-run`): no test is written, so an issue
    /// ranked with it is a dry run too.
    pub fn dry_run(&self) -> bool {
        self.engine.settings.dry_run
    }
}

impl std::fmt::Debug for TestWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestWriter")
            .field("model", &self.model)
            .field("prompts", &self.prompts.digest)
            .finish()
    }
}

/// What the model was shown besides the issue.
#[derive(Debug, Clone, Default)]
pub struct TestContext {
    /// Top-level importable modules of the repository.
    pub modules: Vec<String>,
    /// Files the issue-only search ranks first.
    pub files: Vec<String>,
    /// The issue's own code as it ran at the base commit, when the issue gives a usable
    /// reproduction (never an agent's script that stands in for one).
    pub reproduction: Option<ShownRun>,
}

/// The issue's code and what it did at the base commit, for the prompt: the model writes its
/// test against what the reporter's code does there, not only against the issue's words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ShownRun {
    /// The code as it ran (the issue's statements, with the imports they imply).
    pub code: String,
    /// How the run ended: `runs without error`, `raises KeyError at statement 3`.
    pub ends: String,
    /// What it printed, normalized and clipped; empty when two base runs printed differently
    /// (so that the prompt, and the response cache's key, is the same on every rerun).
    pub output: String,
}

impl TestWriter {
    /// A writer over `engine`, with the templates of `prompts/repro_test*.j2` (any of them
    /// replaced by the file of the same name in `prompt_dir`).
    pub fn new(engine: Arc<Engine>, prompt_dir: Option<&Path>) -> anyhow::Result<TestWriter> {
        let prompts = Prompts::repro_test(prompt_dir)?;
        let model = format!(
            "{}:{}",
            engine.provider.protocol.name(),
            engine.provider.model
        );
        Ok(TestWriter {
            engine,
            prompts,
            model,
            samples: 1,
        })
    }

    /// Ask for `n` tests per issue (at least 1, at most [`MAX_SAMPLES`]): the first at
    /// temperature 0, the others at [`SAMPLE_TEMPERATURE`].
    pub fn with_samples(mut self, n: u32) -> TestWriter {
        self.samples = n.clamp(1, MAX_SAMPLES);
        self
    }

    /// SHA-256 of the templates (two writers with the same digest ask the same prompts).
    pub fn prompt_digest(&self) -> &str {
        &self.prompts.digest
    }

    /// The prompt for `task`: its problem statement and `ctx`, nothing else of the task.
    pub fn prompt(&self, task: &Task, ctx: &TestContext) -> anyhow::Result<Rendered> {
        render_prompt(&self.prompts, task, ctx)
    }

    /// Ask the model for every sample of `task`'s test: one call each, all at once through
    /// the engine (its limits, cache and retries), the first at temperature 0 and the others
    /// at [`SAMPLE_TEMPERATURE`], answered from the cache when asked before. One record per
    /// sample, in order; each says why there is no script when there is none.
    pub fn write_all(&self, task: &Task, ctx: &TestContext) -> Vec<ModelTestRecord> {
        let blank = |sample: u32| ModelTestRecord {
            model: self.model.clone(),
            sample,
            shown_reproduction: ctx.reproduction.is_some(),
            ..ModelTestRecord::default()
        };
        let prompt = match self.prompt(task, ctx) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("the prompt could not be rendered: {e:#}");
                return (0..self.samples)
                    .map(|s| ModelTestRecord {
                        why: Some(why.clone()),
                        ..blank(s)
                    })
                    .collect();
            }
        };
        let calls: Vec<(f64, u32, String)> = (0..self.samples)
            .map(|s| match s {
                0 => (0.0, 0, format!("{} repro-test", task.instance_id)),
                s => (
                    SAMPLE_TEMPERATURE,
                    s,
                    format!("{} repro-test sample {}", task.instance_id, s + 1),
                ),
            })
            .collect();
        let shape = crate::llm::parse::text_schema(
            "submit_test",
            "test",
            "The whole Python test script.",
            self.engine.text_bounds(1),
        );
        let replies =
            self.engine
                .complete_many_shaped(&prompt.system, &prompt.user, &calls, Some(&shape));
        (0..self.samples)
            .zip(replies)
            .map(|(s, reply)| {
                let mut record = blank(s);
                match reply {
                    Ok((text, usage)) => {
                        record.usage = usage;
                        // A shaped reply holds the script itself; a plain one, in a fence.
                        let script = match crate::llm::parse::json_text(&text, "test") {
                            Some(code) if !code.trim().is_empty() => {
                                Ok(format!("{}\n", code.trim_end()))
                            }
                            _ => extract_script(&text),
                        };
                        match script {
                            Ok(script) => {
                                // An unparsable script is kept in the record, to read why.
                                record.why = check_script(&script).err();
                                record.script = Some(script);
                            }
                            Err(why) => record.why = Some(why),
                        }
                    }
                    Err(e) => record.why = Some(format!("the model call failed: {e:#}")),
                }
                record
            })
            .collect()
    }
}

/// The prompt for `task`: its problem statement and `ctx`, nothing else of the task.
fn render_prompt(prompts: &Prompts, task: &Task, ctx: &TestContext) -> anyhow::Result<Rendered> {
    let repo = if task.repo.is_empty() {
        "under test"
    } else {
        task.repo.as_str()
    };
    prompts.render_with(
        "repro_test.j2",
        "repro_test_system.j2",
        minijinja::context! {
            issue => task.problem_statement.trim(),
            repo => repo,
            modules => ctx.modules.iter().take(CONTEXT_MODULES).collect::<Vec<_>>(),
            files => ctx.files.iter().take(CONTEXT_FILES).collect::<Vec<_>>(),
            repro => ctx.reproduction.as_ref(),
            file => TEST_FILE,
        },
    )
}

/// The script in a model's reply: the first fenced block tagged Python (`python`, `py`,
/// `python3`), else the first untagged one (fences as [`crate::exec::repro::blocks`] reads
/// them). Blocks tagged with another language are skipped; a fence the reply does not close
/// (cut at `--max-tokens`) is never run.
pub fn extract_script(reply: &str) -> Result<String, String> {
    let fenced: Vec<_> = crate::exec::repro::blocks(reply)
        .into_iter()
        .filter(|b| b.source == crate::exec::repro::Source::Fenced)
        .collect();
    let unclosed = fenced.iter().any(|b| !b.closed);
    let first = |tags: &[&str]| {
        fenced
            .iter()
            .take_while(|b| b.closed)
            .find(|b| tags.contains(&b.lang.as_str()) && !b.text.trim().is_empty())
            .map(|b| format!("{}\n", b.text.trim_end()))
    };
    match first(&["python", "py", "python3"]).or_else(|| first(&[""])) {
        Some(code) => Ok(code),
        None if unclosed => Err(
            "the reply's code block is not closed (cut at --max-tokens?), and no other holds Python"
                .into(),
        ),
        None => Err("the reply has no ```python code block".into()),
    }
}

/// Whether `script` parses as Python, as far as tree-sitter tells: no ERROR or MISSING node,
/// and no empty block (tree-sitter accepts `if x:` with nothing under it; CPython does not).
pub fn check_script(script: &str) -> Result<(), String> {
    let Some(tree) = crate::syntax::python::parse(script) else {
        return Err("the script could not be parsed".into());
    };
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        let what = if n.is_error() {
            "a syntax error"
        } else if n.is_missing() {
            "a missing token"
        } else if n.kind() == "block" && n.named_child_count() == 0 {
            "an empty block"
        } else {
            // Children in reverse, so that the first problem in source order is found first.
            let mut c = n.walk();
            let kids: Vec<_> = n.children(&mut c).collect();
            stack.extend(kids.into_iter().rev());
            continue;
        };
        return Err(format!(
            "the script does not parse as Python ({what} at line {})",
            n.start_position().row + 1
        ));
    }
    Ok(())
}

/// What a run of the test printed: the one of the three lines it printed (a line that is the
/// phrase, or starts with it followed by punctuation or a space); none of them, or more than
/// one kind, is [`ModelTest::Other`]; killed at the time limit is [`ModelTest::Timeout`].
pub fn read_output(output: &str, timed_out: bool) -> ModelTest {
    if timed_out {
        return ModelTest::Timeout;
    }
    let mut seen = [false; 3];
    for line in output.lines() {
        let t = line.trim();
        for (k, phrase) in [REPRODUCED, RESOLVED, OTHER].iter().enumerate() {
            if let Some(rest) = t.strip_prefix(phrase) {
                if rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric()) {
                    seen[k] = true;
                }
            }
        }
    }
    match seen {
        [true, false, false] => ModelTest::Reproduced,
        [false, true, false] => ModelTest::Resolved,
        _ => ModelTest::Other,
    }
}

/// Why a test that printed `base` at the base commit is not kept; `None` when it is.
pub fn discard_reason(base: ModelTest) -> Option<String> {
    match base {
        ModelTest::Reproduced => None,
        ModelTest::Resolved => Some(format!(
            "it prints `{RESOLVED}` already at the base commit: it does not show the issue"
        )),
        ModelTest::Other => Some(format!(
            "at the base commit it prints `{OTHER}`, none of the three lines, or more than one"
        )),
        ModelTest::Timeout => Some("at the base commit it ran past the time limit".into()),
    }
}

/// One candidate's verdict from the kept tests' verdicts, in sample order: the one most of
/// them print; a tie goes to the tied verdict the earliest sample printed (the first sample is
/// asked at temperature 0). `None` when no kept test ran.
pub fn combine(verdicts: &[ModelTest]) -> Option<ModelTest> {
    let count = |v: ModelTest| verdicts.iter().filter(|&&w| w == v).count();
    let most = verdicts.iter().map(|&v| count(v)).max()?;
    verdicts.iter().copied().find(|&v| count(v) == most)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_shows_the_issues_code_as_it_ran_at_base_only_when_given() {
        let prompts = Prompts::repro_test(None).unwrap();
        let task = Task {
            instance_id: "x__y-1".into(),
            repo: "x/y".into(),
            problem_statement: "f(2) returns 5".into(),
            ..Task::default()
        };
        let ctx = TestContext {
            modules: vec!["y".into()],
            files: vec!["y/core.py".into()],
            reproduction: None,
        };
        let plain = render_prompt(&prompts, &task, &ctx).unwrap().user;
        assert!(
            plain.contains("f(2) returns 5") && plain.contains("y/core.py"),
            "{plain}"
        );
        assert!(!plain.contains("What the issue's code does now"), "{plain}");

        let shown = ShownRun {
            code: "from y import f\nf(2)\n".into(),
            ends: "raises KeyError at statement 2".into(),
            output: "[dei-repro] statement 2 raised KeyError: 'k'".into(),
        };
        let with = TestContext {
            reproduction: Some(shown.clone()),
            ..ctx.clone()
        };
        let user = render_prompt(&prompts, &task, &with).unwrap().user;
        assert!(user.contains("## What the issue's code does now"), "{user}");
        assert!(
            user.contains("```python\nfrom y import f\nf(2)\n"),
            "{user}"
        );
        assert!(
            user.contains("It raises KeyError at statement 2."),
            "{user}"
        );
        assert!(user.contains("statement 2 raised KeyError: 'k'"), "{user}");
        // Ahead of the repository's section, after the issue.
        let at = |s: &str| user.find(s).unwrap();
        assert!(at("f(2) returns 5") < at("## What the issue's code does now"));
        assert!(at("## What the issue's code does now") < at("## The repository"));

        // Output that moved between the two base runs is not shown, and the prompt says so.
        let unsteady = TestContext {
            reproduction: Some(ShownRun {
                output: String::new(),
                ..shown
            }),
            ..ctx
        };
        let user = render_prompt(&prompts, &task, &unsteady).unwrap().user;
        assert!(
            user.contains("It raises KeyError at statement 2."),
            "{user}"
        );
        assert!(user.contains("changed from one run to the next"), "{user}");
        assert!(!user.contains("raised KeyError: 'k'"), "{user}");
    }

    #[test]
    fn kept_tests_vote_and_a_tie_goes_to_the_earliest_sample() {
        use ModelTest::*;
        assert_eq!(combine(&[]), None);
        assert_eq!(combine(&[Reproduced]), Some(Reproduced));
        assert_eq!(combine(&[Other, Resolved, Resolved]), Some(Resolved));
        assert_eq!(
            combine(&[Resolved, Reproduced, Reproduced]),
            Some(Reproduced)
        );
        // One each: the first sample's verdict.
        assert_eq!(combine(&[Other, Resolved]), Some(Other));
        assert_eq!(combine(&[Resolved, Other, Timeout]), Some(Resolved));
        // Two against two: the earlier of the tied verdicts.
        assert_eq!(
            combine(&[Other, Reproduced, Resolved, Resolved, Reproduced]),
            Some(Reproduced)
        );
    }

    #[test]
    fn the_script_is_the_first_python_block() {
        let reply = "Here is a test.\n\n```bash\npython x.py\n```\n\n```python\nimport a\nprint(\"Issue reproduced\")\n```\n\n```python\nsecond = 1\n```\n";
        assert_eq!(
            extract_script(reply).unwrap(),
            "import a\nprint(\"Issue reproduced\")\n"
        );
        // Untagged, when nothing is tagged Python; longer fences and tildes too.
        assert_eq!(extract_script("```\nx = 1\n```").unwrap(), "x = 1\n");
        assert_eq!(
            extract_script("~~~~py\ns = '```'\n~~~~\n").unwrap(),
            "s = '```'\n"
        );
        assert_eq!(
            extract_script("```text\nout\n```\n```\ny = 2\n```\n```Python3 title\nz = 3\n```")
                .unwrap(),
            "z = 3\n"
        );
        // Indented fences (inside a list) are blocks too.
        assert_eq!(
            extract_script("1. the script:\n   ```python\n   v = 1\n   ```\n").unwrap(),
            "v = 1\n"
        );
    }

    #[test]
    fn replies_without_a_script_say_why() {
        for (reply, want) in [
            ("I cannot write this test.", "no ```python code block"),
            ("```bash\nls\n```", "no ```python code block"),
            ("```python\n\n```", "no ```python code block"),
            ("```python\nimport a\nprint(1", "not closed"),
            ("", "no ```python"),
        ] {
            let e = extract_script(reply).unwrap_err();
            assert!(e.contains(want), "{reply:?}: {e}");
        }
    }

    #[test]
    fn a_script_must_parse() {
        assert!(check_script("import os\nprint('Issue reproduced')\n").is_ok());
        let e = check_script("def f(:\n    pass\n").unwrap_err();
        assert!(e.contains("does not parse") && e.contains("line 1"), "{e}");
        let e = check_script("import os\nif x:\n").unwrap_err();
        assert!(e.contains("empty block at line 2"), "{e}");
    }

    #[test]
    fn the_output_is_one_of_three_lines() {
        assert_eq!(
            read_output("Issue reproduced\n", false),
            ModelTest::Reproduced
        );
        assert_eq!(
            read_output("some noise\n  Issue resolved  \n", false),
            ModelTest::Resolved
        );
        assert_eq!(
            read_output("Issue reproduced: got 3, expected 2\n", false),
            ModelTest::Reproduced
        );
        assert_eq!(read_output("Other issues\n", false), ModelTest::Other);
        // None, or two kinds: other issues.
        assert_eq!(read_output("", false), ModelTest::Other);
        assert_eq!(
            read_output("Traceback (most recent call last):\nNameError: x\n", false),
            ModelTest::Other
        );
        assert_eq!(
            read_output("Issue reproduced\nIssue resolved\n", false),
            ModelTest::Other
        );
        // A phrase inside other words does not count.
        assert_eq!(
            read_output("print('Issue reproduced')\nIssue resolvedness\n", false),
            ModelTest::Other
        );
        assert_eq!(read_output("Issue reproduced\n", true), ModelTest::Timeout);
    }

    #[test]
    fn only_a_test_reproducing_at_base_is_kept() {
        assert_eq!(discard_reason(ModelTest::Reproduced), None);
        assert!(discard_reason(ModelTest::Resolved)
            .unwrap()
            .contains("already at the base commit"));
        assert!(discard_reason(ModelTest::Other).is_some());
        assert!(discard_reason(ModelTest::Timeout).is_some());
    }
}
