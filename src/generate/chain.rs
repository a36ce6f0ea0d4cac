//! Strategy 3, chain of context: an ANALYZE → RETRIEVE (by name, AST-backed) → VERIFY loop
//! within a step and token budget, then search/replace edits as in
//! [`super::search_replace`]. Prompts: `prompts/generate_explore.j2`, `generate_fix.j2` (and
//! `generate_edits_retry.j2`).

use super::bm25;
use super::{builtin_prompts, edits_with_feedback, finish, render, Generated, Strategy, Workspace};
use crate::context::tokens;
use crate::llm::model::Model;
use crate::llm::parse;
use crate::llm::prompts::Prompts;
use crate::model::paths::is_test_path;
use crate::model::{SnippetKind, Task};
use crate::syntax::schematic::schematic as schematic_of;
use minijinja::context;
use serde::Serialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// ANALYZE → RETRIEVE → VERIFY loop, then search/replace edits (chain-of-context style).
#[derive(Debug, Clone)]
pub struct ChainOfContext {
    pub max_steps: usize,
    /// Budget for prompts and replies together, in tokens (4 characters a token).
    pub max_tokens: usize,
    /// Budget for the code kept in context.
    pub context_tokens: usize,
    pub temperature: f64,
    /// The generator's templates.
    pub prompts: Arc<Prompts>,
}

impl Default for ChainOfContext {
    fn default() -> Self {
        ChainOfContext {
            max_steps: 6,
            max_tokens: 60_000,
            context_tokens: 6000,
            temperature: 0.0,
            prompts: builtin_prompts(),
        }
    }
}

/// One piece of code in the loop's context.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub id: usize,
    pub label: String,
    pub text: String,
}

/// Look code up by name: a file path (its outline, or text when short), or a class/function
/// name (qualified or its last part), from the AST chunks.
pub fn retrieve(repo: &Workspace, kind: &str, name: &str) -> anyhow::Result<Vec<(String, String)>> {
    let name = name.trim().trim_matches(['`', '"', '\'', '(', ')']);
    if kind == "file" || name.ends_with(".py") {
        let Some(src) = repo.read(name) else {
            return Ok(vec![]);
        };
        let text = if tokens(&src) <= 1500 {
            src
        } else {
            schematic_of(name, &src).render(120)
        };
        return Ok(vec![(format!("file {name}"), text)]);
    }
    let want = match kind {
        "class" => Some(SnippetKind::Class),
        "function" | "method" | "def" => Some(SnippetKind::Function),
        _ => None,
    };
    let idx = repo.bm25()?;
    let suffix = format!(".{name}");
    let mut hits: Vec<&bm25::Chunk> = idx
        .chunks
        .iter()
        .filter(|c| (c.name == name || c.name.ends_with(&suffix)) && want.is_none_or_eq(c.kind))
        .collect();
    hits.sort_by_key(|c| (is_test_path(&c.path), c.name != name, c.path.len()));
    hits.truncate(3);
    let mut out = Vec::new();
    for c in hits {
        let text = if c.kind == SnippetKind::Class {
            // A class: its head plus the outline of its methods.
            let src = repo.read(&c.path).unwrap_or_default();
            let sch = schematic_of(&c.path, &src);
            let mut t = c.text.clone();
            for m in sch.items.iter().filter(|i| {
                i.name.starts_with(&format!("{}.", c.name))
                    && i.depth == c.name.matches('.').count() + 1
            }) {
                let _ = writeln!(
                    t,
                    "    {}  # lines {}-{}",
                    m.signature, m.lines.start, m.lines.end
                );
            }
            t
        } else {
            c.text.clone()
        };
        out.push((
            format!(
                "{} {}::{} (lines {}-{})",
                if c.kind == SnippetKind::Class {
                    "class"
                } else {
                    "function"
                },
                c.path,
                c.name,
                c.lines.start,
                c.lines.end
            ),
            text,
        ));
    }
    Ok(out)
}

trait KindFilter {
    fn is_none_or_eq(&self, k: SnippetKind) -> bool;
}
impl KindFilter for Option<SnippetKind> {
    fn is_none_or_eq(&self, k: SnippetKind) -> bool {
        self.is_none() || *self == Some(k)
    }
}

/// A note the next step's prompt carries about one `RETRIEVE`.
#[derive(Debug, Clone, Serialize)]
struct Note {
    name: String,
    /// Nothing has that name (else: it does not fit in the context budget).
    missing: bool,
}

/// What the loop ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub analysis: String,
    pub kept: Vec<Item>,
    pub steps: usize,
    pub tokens: usize,
}

impl ChainOfContext {
    /// Run the ANALYZE → RETRIEVE → VERIFY loop.
    pub fn explore(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Analysis> {
        let mut kept: Vec<Item> = Vec::new();
        let mut next_id = 1;
        let idx = repo.bm25()?;
        for (i, _) in idx.search(&task.problem_statement, 2) {
            let c = &idx.chunks[i];
            kept.push(Item {
                id: next_id,
                label: format!(
                    "search hit {}::{} (lines {}-{})",
                    c.path, c.name, c.lines.start, c.lines.end
                ),
                text: c.text.clone(),
            });
            next_id += 1;
        }
        let mut spent = 0usize;
        let mut notes: Vec<Note> = Vec::new();
        let shape = parse::commands_schema(model.text_bounds(parse::MOST_COMMANDS));
        for step in 1..=self.max_steps {
            let prompt = render(
                &self.prompts,
                "generate_explore.j2",
                context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), items => kept, notes, step, max_steps => self.max_steps },
            )?;
            // A shaped reply is a list of command lines, each a share of --max-tokens, read as
            // the lines it stands for.
            let raw =
                model.complete_shaped(&prompt.system, &prompt.user, self.temperature, &shape)?;
            let reply = parse::listed(&raw, "commands");
            spent += tokens(&prompt.user) + tokens(&raw);
            notes.clear();
            if let Some(pos) = reply.find("ANALYSIS:") {
                return Ok(Analysis {
                    analysis: reply[pos + 9..].trim().to_string(),
                    kept,
                    steps: step,
                    tokens: spent,
                });
            }
            let mut acted = false;
            for l in reply.lines() {
                let mut w = l.split_whitespace();
                match w.next().map(str::to_ascii_uppercase).as_deref() {
                    Some("DROP") => {
                        if let Some(id) = w
                            .next()
                            .and_then(|s| s.trim_matches(['[', ']']).parse::<usize>().ok())
                        {
                            kept.retain(|i| i.id != id);
                            acted = true;
                        }
                    }
                    Some("RETRIEVE") => {
                        let (kind, name) = match (w.next(), w.next()) {
                            (Some(k), Some(n)) => (k.to_ascii_lowercase(), n.to_string()),
                            (Some(n), None) => ("any".to_string(), n.to_string()),
                            _ => continue,
                        };
                        acted = true;
                        let found = retrieve(repo, &kind, &name)?;
                        if found.is_empty() {
                            notes.push(Note {
                                name: name.clone(),
                                missing: true,
                            });
                        }
                        for (label, text) in found {
                            let used: usize = kept.iter().map(|i| tokens(&i.text)).sum();
                            if kept.iter().any(|i| i.label == label) {
                                continue;
                            }
                            if used + tokens(&text) > self.context_tokens {
                                notes.push(Note {
                                    name: name.clone(),
                                    missing: false,
                                });
                                continue;
                            }
                            kept.push(Item {
                                id: next_id,
                                label,
                                text,
                            });
                            next_id += 1;
                        }
                    }
                    _ => {}
                }
            }
            if !acted || spent >= self.max_tokens {
                break;
            }
        }
        Ok(Analysis {
            analysis: String::new(),
            kept,
            steps: self.max_steps,
            tokens: spent,
        })
    }
}

impl Strategy for ChainOfContext {
    fn name(&self) -> &'static str {
        "chain-of-context"
    }

    fn generate(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let a = self.explore(task, repo, model, fb)?;
        let prompt = render(
            &self.prompts,
            "generate_fix.j2",
            context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), analysis => a.analysis, items => a.kept },
        )?;
        let edits = edits_with_feedback(model, &self.prompts, &prompt, repo, self.temperature)?;
        Ok(vec![finish(
            "dei-gen-chain-of-context".into(),
            edits,
            self.temperature,
        )?])
    }
}
