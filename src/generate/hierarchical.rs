//! Strategy 1, hierarchical: file map → schematics → functions (at most L files), then
//! whole-definition rewrites spliced over their tree-sitter spans, k samples at different
//! temperatures. Prompts: `prompts/generate_files.j2`, `generate_targets.j2`,
//! `generate_rewrite.j2`, `generate_rewrite_retry.j2`.

use super::edit::{self, EditError, FileEdit};
use super::{builtin_prompts, finish, render, Generated, Strategy, Workspace};
use crate::llm::model::Model;
use crate::llm::parse;
use crate::llm::prompts::Prompts;
use crate::model::paths::is_python;
use crate::model::{LineRange, Task};
use crate::syntax::schematic::{self, parse_targets, schematic as schematic_of, Target};
use anyhow::bail;
use minijinja::context;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

/// Hierarchical localization and whole-definition rewrites (SuperCoder2.0 style).
#[derive(Debug, Clone)]
pub struct Hierarchical {
    /// At most this many files (L).
    pub max_files: usize,
    /// One sample per temperature (k = its length).
    pub temperatures: Vec<f64>,
    /// Files suggested by retrieval before the model chooses.
    pub shortlist: usize,
    /// The generator's templates.
    pub prompts: Arc<Prompts>,
}

impl Default for Hierarchical {
    fn default() -> Self {
        Hierarchical {
            max_files: 3,
            temperatures: vec![0.0, 0.4, 0.8],
            shortlist: 10,
            prompts: builtin_prompts(),
        }
    }
}

/// Code blocks under `### <target>` headings: (target label, code). A block opened with more
/// than three backticks ends only at a line opening with as many (so code holding ``` lines
/// travels whole, as [`crate::llm::parse::rewrites_as_blocks`] writes it).
pub fn parse_rewrites(reply: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut label: Option<String> = None;
    // The block being read, and the fence that ends it.
    let mut code: Option<(String, String)> = None;
    for l in reply.lines() {
        let t = l.trim();
        if let Some((c, fence)) = code.as_mut() {
            if t.starts_with(fence.as_str()) {
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
            let ticks = t.chars().take_while(|&c| c == '`').count();
            code = Some((String::new(), "`".repeat(ticks)));
        }
    }
    out
}

/// The rewrites a reply holds: a shaped reply's (JSON) or the `### <target>` blocks of a plain
/// one.
fn rewrites_in(reply: &str) -> Vec<(String, String)> {
    match parse::rewrites_as_blocks(reply) {
        Some(blocks) => parse_rewrites(&blocks),
        None => parse_rewrites(reply),
    }
}

/// Every place the schematics of `files` show, as the labels a target reply names:
/// `path::Qualified.name` for each class and function, `path:START-END` for each run of
/// module-level code; files in the order chosen, places in line order, each once (a property's
/// getter and setter share a name).
fn shown_labels(files: &[String], sources: &HashMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let Some(src) = sources.get(f) else { continue };
        let sch = schematic_of(f, src);
        for r in &sch.top_level {
            out.push(
                Target::Lines {
                    path: f.clone(),
                    lines: *r,
                }
                .label(),
            );
        }
        for i in &sch.items {
            let label = Target::Def {
                path: f.clone(),
                name: i.name.clone(),
            }
            .label();
            if !out.contains(&label) {
                out.push(label);
            }
        }
    }
    out
}

impl Hierarchical {
    fn choose_files(
        &self,
        task: &Task,
        repo: &Workspace,
        model: &dyn Model,
        fb: Option<&str>,
    ) -> anyhow::Result<Vec<String>> {
        let ranked = repo.likely_files(&task.problem_statement, self.shortlist)?;
        let map = schematic::file_map(repo.files(), 8, false);
        let map: String = map.lines().take(300).map(|l| format!("{l}\n")).collect();
        let shortlist: String = ranked.iter().map(|p| format!("{p}\n")).collect();
        let prompt = render(
            &self.prompts,
            "generate_files.j2",
            context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), map, shortlist, max_files => self.max_files },
        )?;
        // A shaped reply is a list of paths (any of the map's, so no enum); the ones the
        // repository lacks are dropped below.
        let shape = parse::list_schema("pick_files", "files", None, self.max_files, 200);
        let reply = model.complete_shaped(&prompt.system, &prompt.user, 0.0, &shape)?;
        let reply = parse::listed(&reply, "files");
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
        repo: &Workspace,
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
        let prompt = render(
            &self.prompts,
            "generate_targets.j2",
            context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), schematics },
        )?;
        // A shaped reply is a list of targets, each a place the schematics show, read as the
        // lines they stand for.
        let labels = shown_labels(&files, &sources);
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let shape = parse::targets_schema(&labels, parse::MOST_TARGETS);
        let reply = model.complete_shaped(&prompt.system, &prompt.user, 0.0, &shape)?;
        let reply = parse::listed(&reply, "targets");
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
        let targets: Vec<Shown> = spans
            .iter()
            .map(|(t, _, text)| Shown {
                label: t.label(),
                text: text.as_str(),
            })
            .collect();
        let ask = render(
            &self.prompts,
            "generate_rewrite.j2",
            context! { issue => task.problem_statement.trim(), feedback => fb.map(str::trim), targets },
        )?;
        // A shaped reply holds at most one rewrite per target, each naming a target shown and
        // its code a share of --max-tokens.
        let asked: Vec<String> = spans.iter().map(|(t, _, _)| t.label()).collect();
        let asked: Vec<&str> = asked.iter().map(String::as_str).collect();
        let shape = parse::rewrites_schema(&asked, model.text_bounds(asked.len()));
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
                let reply = model.complete_shaped(&prompt.system, &prompt.user, temp, &shape)?;
                match splice(&spans, &sources, &rewrites_in(&reply)) {
                    Ok(edits) => {
                        result = Some(edits);
                        break;
                    }
                    Err(e) if round == 0 => {
                        prompt = render(
                            &self.prompts,
                            "generate_rewrite_retry.j2",
                            context! { prompt => ask.user, reply, error => e.to_string() },
                        )?;
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

/// One target as the rewrite prompt shows it.
#[derive(Serialize)]
struct Shown<'a> {
    label: String,
    text: &'a str,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaped_and_plain_rewrites_read_alike() {
        let plain = "Here:\n### a.py::f\n```python\ndef f():\n    return 2\n```\n### `a.py:1-2`\n```\nX = 3\n```\n";
        let shaped = r#"{"rewrites":[{"target":"a.py::f","code":"def f():\n    return 2\n"},{"target":"a.py:1-2","code":"```python\nX = 3\n```"}]}"#;
        let want = [
            (
                "a.py::f".to_string(),
                "def f():\n    return 2\n".to_string(),
            ),
            ("a.py:1-2".to_string(), "X = 3\n".to_string()),
        ];
        assert_eq!(rewrites_in(plain), want);
        assert_eq!(rewrites_in(shaped), want);
        // Code holding a fence line travels whole under the longer fence the shape is read with.
        let doc = "def g():\n    \"\"\"Use it so:\n    ```\n    g()\n    ```\n    \"\"\"\n";
        let j = serde_json::json!({"rewrites": [{"target": "a.py::g", "code": doc}]}).to_string();
        assert_eq!(rewrites_in(&j), [("a.py::g".to_string(), doc.to_string())]);
        // A three-backtick block still ends at the first line opening with a fence.
        assert_eq!(
            parse_rewrites("### a.py::h\n```python\nh = 1\n```py\nlater\n"),
            [("a.py::h".to_string(), "h = 1\n".to_string())]
        );
    }

    #[test]
    fn the_labels_shown_are_the_schematics_places() {
        let src = "import os\n\nX = 1\n\n\nclass C:\n    @property\n    def m(self):\n        pass\n\n    @m.setter\n    def m(self, v):\n        pass\n\n\ndef f():\n    return 1\n";
        let sources = HashMap::from([("p/a.py".to_string(), src.to_string())]);
        let files = ["p/a.py".to_string(), "p/missing.py".to_string()];
        assert_eq!(
            shown_labels(&files, &sources),
            ["p/a.py:1-3", "p/a.py::C", "p/a.py::C.m", "p/a.py::f"]
        );
    }
}
