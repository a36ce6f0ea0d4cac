//! Strategy 2, search/replace: BM25-retrieved code with the issue, conflict-marker
//! search/replace blocks placed by fuzzy matching, one feedback round on a refusal. Prompt:
//! `prompts/generate_search_replace.j2` (and `generate_edits_retry.j2`).

use super::bm25;
use super::{builtin_prompts, edits_with_feedback, finish, render, Generated, Strategy, Workspace};
use crate::context::tokens;
use crate::llm::model::Model;
use crate::llm::prompts::Prompts;
use crate::model::Task;
use minijinja::context;
use serde::Serialize;
use std::sync::Arc;

/// Search/replace edits with fuzzy matching (MarsCode AutoDiff style).
#[derive(Debug, Clone)]
pub struct SearchReplace {
    pub temperature: f64,
    /// Token budget for retrieved code shown with the issue.
    pub context_tokens: usize,
    /// The generator's templates.
    pub prompts: Arc<Prompts>,
}

impl Default for SearchReplace {
    fn default() -> Self {
        SearchReplace {
            temperature: 0.0,
            context_tokens: 6000,
            prompts: builtin_prompts(),
        }
    }
}

/// The best BM25 chunks for the issue, grouped by file, within `budget` tokens.
pub fn retrieved<'r>(
    task: &Task,
    repo: &'r Workspace,
    budget: usize,
) -> anyhow::Result<Vec<&'r bm25::Chunk>> {
    let idx = repo.bm25()?;
    let mut used = 0;
    let mut picked: Vec<&bm25::Chunk> = Vec::new();
    for (i, _) in idx.search(&task.problem_statement, 40) {
        let c = &idx.chunks[i];
        let t = tokens(&c.text);
        if used + t > budget {
            continue;
        }
        used += t;
        picked.push(c);
    }
    picked.sort_by(|a, b| a.path.cmp(&b.path).then(a.lines.start.cmp(&b.lines.start)));
    Ok(picked)
}

/// A retrieved chunk as the prompt shows it.
#[derive(Serialize)]
struct Shown<'a> {
    path: &'a str,
    start: usize,
    end: usize,
    name: &'a str,
    text: &'a str,
}

impl Strategy for SearchReplace {
    fn name(&self) -> &'static str {
        "search-replace"
    }

    fn generate(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let chunks: Vec<Shown> = retrieved(task, repo, self.context_tokens)?
            .into_iter()
            .map(|c| Shown {
                path: &c.path,
                start: c.lines.start,
                end: c.lines.end,
                name: &c.name,
                text: &c.text,
            })
            .collect();
        let prompt = render(
            &self.prompts,
            "generate_search_replace.j2",
            context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), chunks },
        )?;
        let edits = edits_with_feedback(model, &self.prompts, &prompt, repo, self.temperature)?;
        Ok(vec![finish(
            "dei-gen-search-replace".into(),
            edits,
            self.temperature,
        )?])
    }
}
