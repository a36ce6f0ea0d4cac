//! The built-in candidate generator: three strategies over one small [`crate::llm::model::Model`] trait,
//! each its own agent name so that `dei rank` reads their output like any other agent's.
//!
//! 1. [`Hierarchical`] ([`hierarchical`]): file map → schematics → functions (at most L files),
//!    whole-definition rewrites spliced by tree-sitter spans, k samples at different temperatures.
//! 2. [`SearchReplace`] ([`search_replace`]): conflict-marker search/replace blocks placed by
//!    fuzzy matching, with one syntax-error feedback round.
//! 3. [`ChainOfContext`] ([`chain`]): ANALYZE → RETRIEVE (by name, AST-backed) → VERIFY loop
//!    within a step and token budget, then edits as in 2.
//!
//! This module holds what they share: the repository view, the prompt templates
//! (`prompts/generate_*.j2`, [`crate::llm::prompts::GENERATE`]), the search/replace round,
//! and the driver that runs a strategy with optional validation ([`run_strategy`]).
//! Every candidate's diff is checked to apply back exactly ([`diff::verify`]) and to parse.

pub mod bm25;
pub mod chain;
pub mod diff;
pub mod edit;
pub mod hierarchical;
pub mod run;
pub mod search_replace;
pub mod validate;

pub use chain::{retrieve, Analysis, ChainOfContext, Item};
pub use hierarchical::{parse_rewrites, Hierarchical};
pub use search_replace::{retrieved, SearchReplace};

use crate::llm::model::Model;
use crate::llm::prompts::Prompts;
use crate::llm::Rendered;
use crate::localize::search::{self as locate, FileIndex};
use crate::model::paths::{is_auxiliary, is_python, is_test_path};
use crate::model::repo::Snapshot;
use crate::model::Task;
// `bm25` reads the schematic as `super::schematic`.
use crate::syntax::schematic;
use anyhow::bail;
use bm25::Bm25;
use edit::{EditError, FileEdit};
use minijinja::context;
use serde::{Deserialize, Serialize};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// What the generator works in: the task's base commit ([`Snapshot`]) with lazily built
/// indexes over it (BM25 chunks, the localization [`FileIndex`]) and a cache of files read.
pub struct Workspace<'a> {
    pub snap: &'a Snapshot,
    files: Vec<String>,
    bm25: OnceCell<Bm25>,
    located: OnceCell<FileIndex>,
    cache: std::cell::RefCell<HashMap<String, Option<String>>>,
}

impl<'a> Workspace<'a> {
    pub fn new(snap: &'a Snapshot) -> anyhow::Result<Workspace<'a>> {
        Ok(Workspace {
            files: snap.list_files()?,
            snap,
            bm25: OnceCell::new(),
            located: OnceCell::new(),
            cache: Default::default(),
        })
    }

    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// A file's text at the base commit (`None`: not in the tree or unreadable).
    pub fn read(&self, path: &str) -> Option<String> {
        if let Some(v) = self.cache.borrow().get(path) {
            return v.clone();
        }
        let v = self.snap.read(path).ok().flatten();
        self.cache.borrow_mut().insert(path.to_string(), v.clone());
        v
    }

    /// BM25 over the non-test Python files' function-level chunks (retrieval by text).
    pub fn bm25(&self) -> anyhow::Result<&Bm25> {
        if let Some(b) = self.bm25.get() {
            return Ok(b);
        }
        let b = Bm25::from_snapshot(self.snap, |p| is_python(p) && !is_test_path(p))?;
        Ok(self.bm25.get_or_init(|| b))
    }

    /// The `n` files most likely to need the fix by issue-only localization
    /// ([`crate::localize::search`]: text, names, traceback frames, the tests, past commits),
    /// tests and docs left out; best first.
    pub fn likely_files(&self, issue: &str, n: usize) -> anyhow::Result<Vec<String>> {
        let files = match self.located.get() {
            Some(f) => f,
            None => {
                let f = FileIndex::from_snapshot(self.snap)?
                    .with_history(self.snap.history(locate::HISTORY_COMMITS)?);
                self.located.get_or_init(|| f)
            }
        };
        let opts = locate::LocateOptions {
            top_files: n * 3,
            ..Default::default()
        };
        Ok(locate::locate_files(issue, files, &opts)
            .into_iter()
            .map(|h| h.path)
            .filter(|p| !is_auxiliary(p))
            .take(n)
            .collect())
    }
}

/// One generated candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// Agent name: `dei-gen-<strategy>` (later samples get `-k2`, `-k3`, ...).
    pub agent: String,
    pub edits: Vec<FileEdit>,
    pub patch: String,
    pub temperature: f64,
}

/// A SWE-bench prediction record, what `dei rank` reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub instance_id: String,
    pub model_name_or_path: String,
    pub model_patch: String,
    /// The agent (`dei-gen-<strategy>`), so that `dei rank` names it the same whatever the
    /// file holds (the agent naming rule takes a record's `agent` first).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent: String,
}

/// Predictions as JSON Lines.
pub fn to_jsonl(preds: &[Prediction]) -> String {
    preds
        .iter()
        .map(|p| serde_json::to_string(p).expect("plain strings serialize") + "\n")
        .collect()
}

/// A way of turning an issue into candidates.
pub trait Strategy {
    /// Short name; the agent is `dei-gen-<name>`.
    fn name(&self) -> &'static str;
    /// Candidates for `task`. `feedback` is test output from a dropped earlier attempt.
    fn generate(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        feedback: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>>;
}

/// The built-in generator templates (`prompts/generate_*.j2`), loaded once; what the
/// strategies' `Default` uses.
pub fn builtin_prompts() -> Arc<Prompts> {
    static BUILTIN: OnceLock<Arc<Prompts>> = OnceLock::new();
    Arc::clone(BUILTIN.get_or_init(|| {
        Arc::new(Prompts::generator(None).expect("the built-in generator templates parse"))
    }))
}

/// The generator's templates with any file in `dir` replacing the built-in one of the same name
/// (`--prompt-dir`); the built-in ones when `dir` is `None`.
pub fn prompts(dir: Option<&std::path::Path>) -> anyhow::Result<Arc<Prompts>> {
    match dir {
        None => Ok(builtin_prompts()),
        Some(d) => Ok(Arc::new(Prompts::generator(Some(d))?)),
    }
}

/// Render template `name` under the generator's system prompt (`generate_system.j2`).
fn render(prompts: &Prompts, name: &str, ctx: minijinja::Value) -> anyhow::Result<Rendered> {
    prompts.render_with(name, "generate_system.j2", ctx)
}

fn finish(agent: String, edits: Vec<FileEdit>, temperature: f64) -> anyhow::Result<Generated> {
    if edits.is_empty() {
        bail!("the edits change nothing");
    }
    let patch = diff::patch_of(&edits);
    diff::verify(&patch, &edits)?;
    Ok(Generated {
        agent,
        edits,
        patch,
        temperature,
    })
}

/// Ask for search/replace blocks, apply them, and on a refusal (no match, ambiguity, syntax
/// error) feed the reason back once.
fn edits_with_feedback(
    model: &dyn Model,
    prompts: &Prompts,
    prompt: &Rendered,
    repo: &Workspace,
    temperature: f64,
) -> anyhow::Result<Vec<FileEdit>> {
    // Where the server takes a schema, the edits come as JSON (each text a share of
    // --max-tokens) and are read as the blocks they stand for.
    let shape =
        crate::llm::parse::edits_schema(None, model.text_bounds(2 * crate::llm::parse::MOST_EDITS));
    let reply = model.complete_shaped(&prompt.system, &prompt.user, temperature, &shape)?;
    let attempt = |reply: &str| -> Result<Vec<FileEdit>, EditError> {
        let blocks = match crate::llm::parse::edits_as_blocks(reply) {
            Some(b) => edit::parse_blocks(&b)?,
            None => edit::parse_blocks(reply)?,
        };
        if blocks.is_empty() {
            return Err(EditError::Format {
                line: 1,
                why: "no `<<<<<<< SEARCH` block found".into(),
            });
        }
        edit::apply_blocks(&blocks, |p| repo.read(p))
    };
    match attempt(&reply) {
        Ok(e) => Ok(e),
        Err(err) => {
            let retry = render(
                prompts,
                "generate_edits_retry.j2",
                context! { prompt => prompt.user, reply, error => err.to_string() },
            )?;
            let reply2 = model.complete_shaped(&retry.system, &retry.user, temperature, &shape)?;
            attempt(&reply2)
                .map_err(|e2| anyhow::anyhow!("edits rejected twice: first {err}; then {e2}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running strategies with optional validation.

/// What happened to one strategy on one task.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub strategy: &'static str,
    pub kept: Vec<Generated>,
    /// Human-readable notes: failures, dropped candidates, retries.
    pub notes: Vec<String>,
}

/// Run `strategy`; with a validator, drop candidates that break passing tests and retry once
/// with the failure output.
pub fn run_strategy(
    strategy: &dyn Strategy,
    task: &Task,
    repo: &Workspace,
    model: &dyn Model,
    validator: Option<&validate::Validator>,
) -> Outcome {
    let mut out = Outcome {
        strategy: strategy.name(),
        kept: vec![],
        notes: vec![],
    };
    let mut feedback: Option<String> = None;
    for attempt in 0..2 {
        let gens = match strategy.generate(task, repo, model, feedback.as_deref()) {
            Ok(g) => g,
            Err(e) => {
                out.notes
                    .push(format!("{}: no candidate: {e:#}", strategy.name()));
                break;
            }
        };
        let Some(v) = validator else {
            out.kept = gens;
            break;
        };
        let mut failure = None;
        for g in gens {
            match v.check(&g.edits) {
                Ok(validate::Verdict::Breaks(run)) => {
                    out.notes
                        .push(format!("{}: dropped, it breaks the test command", g.agent));
                    failure.get_or_insert(run.output);
                }
                Ok(_) => out.kept.push(g),
                Err(e) => out
                    .notes
                    .push(format!("{}: validation failed to run: {e:#}", g.agent)),
            }
        }
        match failure {
            Some(f) if out.kept.is_empty() && attempt == 0 => {
                out.notes.push(format!(
                    "{}: retrying once with the test output",
                    strategy.name()
                ));
                feedback = Some(f);
            }
            _ => break,
        }
    }
    out
}

/// Predictions for one task from the kept candidates.
pub fn predictions(task: &Task, outcomes: &[Outcome]) -> Vec<Prediction> {
    outcomes
        .iter()
        .flat_map(|o| &o.kept)
        .map(|g| Prediction {
            instance_id: task.instance_id.clone(),
            model_name_or_path: g.agent.clone(),
            model_patch: g.patch.clone(),
            agent: g.agent.clone(),
        })
        .collect()
}
