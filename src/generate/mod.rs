//! The built-in candidate generator: three strategies over one small [`crate::llm::model::Model`] trait,
//! each its own agent name so that `dei rank` reads their output like any other agent's.
//!
//! 1. [`Hierarchical`]: file map → schematics → functions (at most L files), whole-definition
//!    rewrites spliced by tree-sitter spans, k samples at different temperatures.
//! 2. [`SearchReplace`]: conflict-marker search/replace blocks placed by fuzzy matching, with
//!    one syntax-error feedback round.
//! 3. [`ChainOfContext`]: ANALYZE → RETRIEVE (by name, AST-backed) → VERIFY loop within a step and
//!    token budget, then edits as in 2.
//!
//! Every candidate's diff is checked to apply back exactly ([`diff::verify`]) and to parse.

pub mod bm25;
pub mod diff;
pub mod edit;
pub mod run;
pub mod validate;

use crate::llm::model as llm;
use crate::syntax::schematic;

use crate::context::tokens;
use crate::localize::search::{self as locate, RepoFiles};
use crate::model::paths::{is_auxiliary, is_python, is_test_path};
use crate::model::repo::Snapshot;
use crate::model::{LineRange, SnippetKind, Task};
use anyhow::bail;
use bm25::Bm25;
use edit::{EditError, FileEdit};
use llm::Model;
use schematic::{parse_targets, schematic as schematic_of, Target};
use serde::{Deserialize, Serialize};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The repository at the task's base commit, with lazily built indexes.
pub struct Repo<'a> {
    pub snap: &'a Snapshot,
    files: Vec<String>,
    bm25: OnceCell<Bm25>,
    located: OnceCell<RepoFiles>,
    cache: std::cell::RefCell<HashMap<String, Option<String>>>,
}

impl<'a> Repo<'a> {
    pub fn new(snap: &'a Snapshot) -> anyhow::Result<Repo<'a>> {
        Ok(Repo {
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
                let f = RepoFiles::from_snapshot(self.snap)?
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
        repo: &Repo,
        model: &dyn Model,
        feedback: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>>;
}

const SYSTEM: &str = "You are a careful software engineer fixing an issue in a Python repository. Follow the requested reply format exactly.";

fn issue_block(task: &Task, feedback: Option<&str>) -> String {
    let mut s = format!("<issue>\n{}\n</issue>\n", task.problem_statement.trim());
    if let Some(f) = feedback {
        let _ = write!(s, "\nA previous fix made the project's tests fail. Test output:\n<test_output>\n{}\n</test_output>\nAvoid that failure.\n", f.trim());
    }
    s
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

const SR_FORMAT: &str = "Reply with search/replace blocks. For each edit write the file path on its own line, then:\n<<<<<<< SEARCH\n(the exact existing lines, with a few lines around the change)\n=======\n(the new lines)\n>>>>>>> REPLACE\nUse as many blocks as needed. Do not write line numbers.";

/// Ask for search/replace blocks, apply them, and on a refusal (no match, ambiguity, syntax
/// error) feed the reason back once.
fn edits_with_feedback(
    model: &dyn Model,
    prompt: &str,
    repo: &Repo,
    temperature: f64,
) -> anyhow::Result<Vec<FileEdit>> {
    let reply = model.complete(SYSTEM, prompt, temperature)?;
    let attempt = |reply: &str| -> Result<Vec<FileEdit>, EditError> {
        let blocks = edit::parse_blocks(reply)?;
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
            let retry = format!("{prompt}\n\nYour previous reply:\n{reply}\n\nIt was rejected: {err}\nWrite the corrected, complete set of search/replace blocks.");
            let reply2 = model.complete(SYSTEM, &retry, temperature)?;
            attempt(&reply2)
                .map_err(|e2| anyhow::anyhow!("edits rejected twice: first {err}; then {e2}"))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Strategy 1

/// Hierarchical localization and whole-definition rewrites (SuperCoder2.0 style).
#[derive(Debug, Clone)]
pub struct Hierarchical {
    /// At most this many files (L).
    pub max_files: usize,
    /// One sample per temperature (k = its length).
    pub temperatures: Vec<f64>,
    /// Files suggested by retrieval before the model chooses.
    pub shortlist: usize,
}

impl Default for Hierarchical {
    fn default() -> Self {
        Hierarchical {
            max_files: 3,
            temperatures: vec![0.0, 0.4, 0.8],
            shortlist: 10,
        }
    }
}

/// Code blocks under `### <target>` headings: (target label, code).
pub fn parse_rewrites(reply: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut label: Option<String> = None;
    let mut code: Option<String> = None;
    for l in reply.lines() {
        let t = l.trim();
        if let Some(c) = code.as_mut() {
            if t.starts_with("```") {
                if let Some(lb) = label.take() {
                    out.push((lb, std::mem::take(c)));
                }
                code = None;
            } else {
                c.push_str(l);
                c.push('\n');
            }
        } else if let Some(h) = t.strip_prefix("###") {
            label = Some(h.trim().trim_matches('`').to_string());
        } else if t.starts_with("```") && label.is_some() {
            code = Some(String::new());
        }
    }
    out
}

impl Hierarchical {
    fn choose_files(
        &self,
        task: &Task,
        repo: &Repo,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<String>> {
        let ranked = repo.likely_files(&task.problem_statement, self.shortlist)?;
        let map = schematic::file_map(repo.files(), 8, false);
        let map: String = map.lines().take(300).map(|l| format!("{l}\n")).collect();
        let shortlist: String = ranked.iter().map(|p| format!("{p}\n")).collect();
        let prompt = format!(
            "{}\nRepository files (trimmed):\n{map}\nMost likely files by search:\n{shortlist}\nList at most {} files that must change to fix the issue, one path per line, most likely first. Reply with paths only.",
            issue_block(task, fb),
            self.max_files
        );
        let reply = model.complete(SYSTEM, &prompt, 0.0)?;
        let mut files: Vec<String> = Vec::new();
        for l in reply.lines() {
            let Some(word) = l.split_whitespace().find(|w| w.contains(".py")) else {
                continue;
            };
            let p = word
                .trim_matches(['`', '*', '"', '\'', ',', '-'])
                .trim_start_matches("./")
                .to_string();
            if is_python(&p) && repo.files().contains(&p) && !files.contains(&p) {
                files.push(p);
            }
        }
        if files.is_empty() {
            files = ranked;
        }
        files.truncate(self.max_files);
        Ok(files)
    }
}

impl Strategy for Hierarchical {
    fn name(&self) -> &'static str {
        "hierarchical"
    }

    fn generate(
        &self,
        task: &Task,
        repo: &Repo,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let files = self.choose_files(task, repo, model, fb)?;
        let mut schematics = String::new();
        let mut sources: HashMap<String, String> = HashMap::new();
        for f in &files {
            let Some(src) = repo.read(f) else { continue };
            schematics.push_str(&schematic_of(f, &src).render(150));
            schematics.push('\n');
            sources.insert(f.clone(), src);
        }
        let prompt = format!(
            "{}\nOutlines of the candidate files:\n{schematics}\nName the classes, functions or module-level line ranges to rewrite to fix the issue, one per line, as `path::Qualified.name` or `path:START-END`. Prefer the smallest definitions.",
            issue_block(task, fb)
        );
        let reply = model.complete(SYSTEM, &prompt, 0.0)?;
        // Resolve targets to base-commit spans; unknown names are dropped.
        let mut spans: Vec<(Target, LineRange, String)> = Vec::new();
        for t in parse_targets(&reply) {
            let Some(src) = sources.get(t.path()) else {
                continue;
            };
            let range = match &t {
                Target::Def { path, name } => schematic_of(path, src).find(name).map(|i| i.lines),
                Target::Lines { lines, .. } => (lines.end <= src.lines().count()).then_some(*lines),
            };
            if let Some(r) = range {
                if !spans
                    .iter()
                    .any(|(o, r2, _)| o.path() == t.path() && r2.overlaps(&r))
                {
                    spans.push((t, r, crate::context::slice_lines(src, r)));
                }
            }
        }
        if spans.is_empty() {
            bail!(
                "the model named no definition that exists in {}",
                files.join(", ")
            );
        }
        let mut code = String::new();
        for (t, _, text) in &spans {
            let _ = write!(code, "### {}\n```python\n{text}```\n\n", t.label());
        }
        let ask = format!(
            "{}\nCode to rewrite:\n\n{code}Rewrite every target completely to fix the issue. For each, write `### <target>` exactly as above, then one ```python block with the whole new definition (or lines). Keep unchanged code as it is.",
            issue_block(task, fb)
        );
        let mut out: Vec<Generated> = Vec::new();
        for (k, &temp) in self.temperatures.iter().enumerate() {
            let agent = if k == 0 {
                "dei-gen-hierarchical".to_string()
            } else {
                format!("dei-gen-hierarchical-k{}", k + 1)
            };
            let mut prompt = ask.clone();
            let mut result = None;
            for round in 0..2 {
                let reply = model.complete(SYSTEM, &prompt, temp)?;
                match splice(&spans, &sources, &parse_rewrites(&reply)) {
                    Ok(edits) => {
                        result = Some(edits);
                        break;
                    }
                    Err(e) if round == 0 => {
                        prompt = format!("{ask}\n\nYour previous reply:\n{reply}\n\nIt was rejected: {e}\nWrite all rewrites again, corrected.");
                    }
                    Err(_) => {}
                }
            }
            if let Some(edits) = result {
                if let Ok(g) = finish(agent, edits, temp) {
                    if !out.iter().any(|o| o.patch == g.patch) {
                        out.push(g);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Splice rewrites over their base spans (bottom-up per file) and check each file parses.
fn splice(
    spans: &[(Target, LineRange, String)],
    sources: &HashMap<String, String>,
    rewrites: &[(String, String)],
) -> Result<Vec<FileEdit>, EditError> {
    let mut todo: Vec<(&str, LineRange, &str)> = Vec::new();
    for (t, r, _) in spans {
        let label = t.label();
        let found = rewrites.iter().find(|(l, _)| {
            *l == label || l.ends_with(&format!("::{}", label.rsplit("::").next().unwrap_or("")))
        });
        if let Some((_, code)) = found {
            todo.push((t.path(), *r, code.as_str()));
        }
    }
    if todo.is_empty() {
        return Err(EditError::Format {
            line: 1,
            why: "no `### <target>` heading with a ```python block matches a requested target"
                .into(),
        });
    }
    todo.sort_by(|a, b| a.0.cmp(b.0).then(b.1.start.cmp(&a.1.start)));
    let mut out: Vec<FileEdit> = Vec::new();
    for (path, r, code) in todo {
        let pos = match out.iter().position(|f| f.path == path) {
            Some(p) => p,
            None => {
                let src = sources[path].clone();
                out.push(FileEdit {
                    path: path.into(),
                    before: Some(src.clone()),
                    after: src,
                });
                out.len() - 1
            }
        };
        out[pos].after = edit::replace_lines(&out[pos].after, r, code);
    }
    for f in &out {
        edit::check_syntax(&f.path, f.before.as_deref(), &f.after)?;
    }
    out.retain(|f| f.before.as_deref() != Some(f.after.as_str()));
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Strategy 2

/// Search/replace edits with fuzzy matching (MarsCode AutoDiff style).
#[derive(Debug, Clone)]
pub struct SearchReplace {
    pub temperature: f64,
    /// Token budget for retrieved code shown with the issue.
    pub context_tokens: usize,
}

impl Default for SearchReplace {
    fn default() -> Self {
        SearchReplace {
            temperature: 0.0,
            context_tokens: 6000,
        }
    }
}

/// The best BM25 chunks for the issue, grouped by file, within `budget` tokens.
pub fn retrieved_context(task: &Task, repo: &Repo, budget: usize) -> anyhow::Result<String> {
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
    let mut out = String::new();
    for c in picked {
        let _ = write!(
            out,
            "{} (lines {}-{}{})\n```python\n{}```\n\n",
            c.path,
            c.lines.start,
            c.lines.end,
            if c.name.is_empty() {
                String::new()
            } else {
                format!(", {}", c.name)
            },
            c.text
        );
    }
    Ok(out)
}

impl Strategy for SearchReplace {
    fn name(&self) -> &'static str {
        "search-replace"
    }

    fn generate(
        &self,
        task: &Task,
        repo: &Repo,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let ctx = retrieved_context(task, repo, self.context_tokens)?;
        let prompt = format!(
            "{}\nRelevant code:\n\n{ctx}{SR_FORMAT}",
            issue_block(task, fb)
        );
        let edits = edits_with_feedback(model, &prompt, repo, self.temperature)?;
        Ok(vec![finish(
            "dei-gen-search-replace".into(),
            edits,
            self.temperature,
        )?])
    }
}

// ---------------------------------------------------------------------------------------------
// Strategy 3

/// ANALYZE → RETRIEVE → VERIFY loop, then search/replace edits (chain-of-context style).
#[derive(Debug, Clone)]
pub struct ChainOfContext {
    pub max_steps: usize,
    /// Budget for prompts and replies together, in tokens (4 characters a token).
    pub max_tokens: usize,
    /// Budget for the code kept in context.
    pub context_tokens: usize,
    pub temperature: f64,
}

impl Default for ChainOfContext {
    fn default() -> Self {
        ChainOfContext {
            max_steps: 6,
            max_tokens: 60_000,
            context_tokens: 6000,
            temperature: 0.0,
        }
    }
}

/// One piece of code in the loop's context.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: usize,
    pub label: String,
    pub text: String,
}

/// Look code up by name: a file path (its outline, or text when short), or a class/function
/// name (qualified or its last part), from the AST chunks.
pub fn retrieve(repo: &Repo, kind: &str, name: &str) -> anyhow::Result<Vec<(String, String)>> {
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
        repo: &Repo,
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
        let mut notes = String::new();
        for step in 1..=self.max_steps {
            let mut ctx = String::new();
            for it in &kept {
                let _ = write!(ctx, "[{}] {}\n```python\n{}```\n", it.id, it.label, it.text);
            }
            let prompt = format!(
                "{}\nContext so far:\n{ctx}{notes}\nStep {step} of {}. Find the root cause. Reply with command lines only:\nRETRIEVE class NAME | RETRIEVE function NAME | RETRIEVE file PATH  (fetch code by name)\nDROP ID  (after verifying an item is not relevant)\nANALYSIS: <root cause and the fix>  (when you know enough; this ends the search)",
                issue_block(task, fb),
                self.max_steps
            );
            let reply = model.complete(SYSTEM, &prompt, self.temperature)?;
            spent += tokens(&prompt) + tokens(&reply);
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
                            let _ = writeln!(notes, "note: nothing named `{name}` was found.");
                        }
                        for (label, text) in found {
                            let used: usize = kept.iter().map(|i| tokens(&i.text)).sum();
                            if kept.iter().any(|i| i.label == label) {
                                continue;
                            }
                            if used + tokens(&text) > self.context_tokens {
                                let _ = writeln!(notes, "note: `{name}` does not fit in the context budget; DROP something first.");
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
        repo: &Repo,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<Generated>> {
        let a = self.explore(task, repo, model, fb)?;
        let mut ctx = String::new();
        for it in &a.kept {
            let _ = write!(ctx, "{}\n```python\n{}```\n\n", it.label, it.text);
        }
        let analysis = if a.analysis.is_empty() {
            "(none written)".to_string()
        } else {
            a.analysis.clone()
        };
        let prompt = format!("{}\nRoot-cause analysis:\n{analysis}\n\nVerified context:\n\n{ctx}Now fix the issue.\n{SR_FORMAT}", issue_block(task, fb));
        let edits = edits_with_feedback(model, &prompt, repo, self.temperature)?;
        Ok(vec![finish(
            "dei-gen-chain-of-context".into(),
            edits,
            self.temperature,
        )?])
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
    repo: &Repo,
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
