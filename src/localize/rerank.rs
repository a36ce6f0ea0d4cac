//! LLM re-ranking of the issue-only localization ([`super::search`]).
//!
//! The lexical and structural signals put a gold file in the top 5 for about four issues in
//! five; most of the rest name no code at all ("this prints wrong"). A model that reads the
//! issue next to outlines of the likely files can still tell. Two steps, as hierarchical
//! localizers do (Agentless, SuperCoder2.0):
//! 1. the `shortlist` best files, each with a short outline → the files that must change;
//! 2. full outlines of the `outline_files` best files after step 1 → the definitions.
//!
//! The model's picks go first, in its order; the lexical ranking follows, so nothing it leaves
//! out is lost. A failed call, or a reply that names nothing shown, keeps the lexical order and
//! says why in [`Reranked::notes`]: re-ranking never makes localization fail. Only a prompt
//! template that cannot be rendered (a broken `--prompt-dir`) is an error.

use super::search::{FileHit, FileIndex, FuncHit, Localization};
use crate::llm::model::Model;
use crate::llm::prompts::Prompts;
use crate::llm::Rendered;
use crate::model::paths::is_python;
use crate::syntax::schematic::{parse_targets, schematic, Schematic, Target};
use serde::Serialize;

/// How much the model is shown and asked for.
#[derive(Debug, Clone)]
pub struct RerankOptions {
    /// Lexically best files shown in step 1.
    pub shortlist: usize,
    /// Files the model may name in step 1.
    pub pick_files: usize,
    /// Lines of outline per file in step 1.
    pub file_outline_lines: usize,
    /// Files whose full outline is shown in step 2.
    pub outline_files: usize,
    /// Lines of outline per file in step 2.
    pub outline_lines: usize,
    /// Definitions the model may name in step 2.
    pub pick_functions: usize,
    pub temperature: f64,
}

impl Default for RerankOptions {
    fn default() -> Self {
        RerankOptions {
            shortlist: 20,
            pick_files: 5,
            file_outline_lines: 14,
            outline_files: 3,
            outline_lines: 300,
            pick_functions: 10,
            temperature: 0.0,
        }
    }
}

/// The re-ranked localization and what happened on the way.
#[derive(Debug, Clone, Default)]
pub struct Reranked {
    pub localization: Localization,
    /// Files the model named that were shown to it (step 1).
    pub files_named: usize,
    /// Definitions it named that exist in the outlined files (step 2).
    pub functions_named: usize,
    /// Why a step kept the lexical order (a failed call, a reply naming nothing known).
    pub notes: Vec<String>,
}

/// A file's outline for a prompt, within `max_lines` lines. When the whole outline does not
/// fit, the top-level definitions stay, with the nested ones named in `focus` (qualified
/// names, such as the search's best methods) and their classes; then the deepest are dropped
/// and the tail is cut with a count. `brief` leaves out module-level code spans.
pub fn outline(path: &str, source: &str, max_lines: usize, focus: &[&str], brief: bool) -> String {
    outline_of(schematic(path, source), max_lines, focus, brief)
}

fn outline_of(mut s: Schematic, max_lines: usize, focus: &[&str], brief: bool) -> String {
    if brief {
        s.top_level.clear();
    }
    let full = s.render(usize::MAX);
    if full.lines().count() <= max_lines {
        return full;
    }
    s.items.retain(|i| {
        i.depth == 0
            || focus.iter().any(|f| {
                *f == i.name
                    || f.strip_prefix(i.name.as_str())
                        .is_some_and(|r| r.starts_with('.'))
            })
    });
    let text = s.render(max_lines);
    let total = text.lines().count();
    if total <= max_lines {
        return text;
    }
    let mut out: String = text
        .lines()
        .take(max_lines)
        .map(|l| format!("{l}\n"))
        .collect();
    out.push_str(&format!(
        "  … ({} more lines of outline)\n",
        total - max_lines
    ));
    out
}

/// Re-rank `lexical` (from [`super::search::locate`]) with `model`.
pub fn rerank(
    issue: &str,
    repo: &FileIndex,
    lexical: &Localization,
    model: &dyn Model,
    prompts: &Prompts,
    opts: &RerankOptions,
) -> anyhow::Result<Reranked> {
    let mut out = Reranked {
        localization: lexical.clone(),
        ..Reranked::default()
    };
    // Step 1: files.
    let shown: Vec<Outlined> = lexical
        .files
        .iter()
        .filter_map(|f| repo.get(&f.path))
        .filter(|f| is_python(&f.path))
        .take(opts.shortlist)
        .map(|f| Outlined {
            path: f.path.clone(),
            outline: outline(&f.path, &f.text, opts.file_outline_lines, &[], true),
        })
        .collect();
    if shown.is_empty() {
        out.notes
            .push("no Python file was located, so there was nothing to re-rank".into());
        return Ok(out);
    }
    let prompt = prompts.localize_files(issue, &shown, opts.pick_files)?;
    let paths: Vec<&str> = shown.iter().map(|o| o.path.as_str()).collect();
    let shape =
        crate::llm::parse::list_schema("pick_files", "files", Some(&paths), opts.pick_files, 0);
    match model.complete_shaped(&prompt.system, &prompt.user, opts.temperature, &shape) {
        Ok(reply) => {
            let reply = crate::llm::parse::listed(&reply, "files");
            let named = named_paths(&reply, shown.iter().map(|o| o.path.as_str()));
            let named: Vec<&str> = named.into_iter().take(opts.pick_files).collect();
            if named.is_empty() {
                out.notes.push(format!(
                    "files: the reply named none of the {} files shown; kept the search order",
                    shown.len()
                ));
            } else {
                out.files_named = named.len();
                out.localization.files = promote_files(&lexical.files, &named);
            }
        }
        Err(e) => out.notes.push(format!(
            "files: the model call failed ({e:#}); kept the search order"
        )),
    }
    // Step 2: definitions of the best files after step 1.
    let outlined: Vec<Schematic> = out
        .localization
        .files
        .iter()
        .filter_map(|f| repo.get(&f.path))
        .filter(|f| is_python(&f.path))
        .take(opts.outline_files)
        .map(|f| schematic(&f.path, &f.text))
        .collect();
    let shown: Vec<Outlined> = outlined
        .iter()
        .map(|s| {
            let focus: Vec<&str> = lexical
                .functions
                .iter()
                .filter(|f| f.path == s.path)
                .map(|f| f.name.as_str())
                .collect();
            Outlined {
                path: s.path.clone(),
                outline: outline_of(s.clone(), opts.outline_lines, &focus, false),
            }
        })
        .collect();
    let example = outlined
        .iter()
        .find_map(|s| {
            let it = s.items.iter().find(|i| i.depth > 0).or(s.items.first())?;
            Some(format!("{}::{}", s.path, it.name))
        })
        .unwrap_or_else(|| "pkg/module.py::Class.method".into());
    let prompt = prompts.localize_functions(issue, &shown, opts.pick_functions, &example)?;
    let shape = crate::llm::parse::list_schema(
        "pick_definitions",
        "definitions",
        None,
        opts.pick_functions,
        200,
    );
    match model.complete_shaped(&prompt.system, &prompt.user, opts.temperature, &shape) {
        Ok(reply) => {
            let reply = crate::llm::parse::listed(&reply, "definitions");
            let picked = named_definitions(&reply, &outlined, opts.pick_functions);
            if picked.is_empty() {
                out.notes.push(format!(
                    "functions: the reply named no definition of {}; kept the search order",
                    outlined
                        .iter()
                        .map(|s| s.path.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            } else {
                out.functions_named = picked.len();
                out.localization.functions = promote_functions(&lexical.functions, picked);
            }
        }
        Err(e) => out.notes.push(format!(
            "functions: the model call failed ({e:#}); kept the search order"
        )),
    }
    Ok(out)
}

/// The `known` paths a reply names, in its order (each once). A path counts when a word of a
/// line is the path itself, give or take quotes, bullets, a `./` or a `:line` suffix.
pub fn named_paths<'a>(reply: &str, known: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let known: Vec<&str> = known.collect();
    let mut out: Vec<&str> = Vec::new();
    for word in reply.split_whitespace() {
        let w = word
            .trim_matches(|c: char| "`*\"'()[]<>,;".contains(c))
            .trim_end_matches(['.', ':'])
            .trim_start_matches("./");
        let w = w.split("::").next().unwrap_or(w);
        let w = match w.split_once(':') {
            Some((p, rest)) if rest.chars().all(|c| c.is_ascii_digit() || c == '-') => p,
            _ => w,
        };
        if let Some(k) = known.iter().find(|k| **k == w) {
            if !out.contains(k) {
                out.push(k);
            }
        }
    }
    out
}

/// The definitions of the outlined files a reply names as `path::Name`, in its order, at
/// most `max`; names not found in the file's schematic are dropped.
fn named_definitions(reply: &str, schematics: &[Schematic], max: usize) -> Vec<FuncHit> {
    let mut out: Vec<FuncHit> = Vec::new();
    for t in parse_targets(reply) {
        let Target::Def { path, name } = t else {
            continue;
        };
        let path = path.trim_start_matches("./");
        let Some(s) = schematics.iter().find(|s| s.path == path) else {
            continue;
        };
        let Some(item) = s.find(&name) else { continue };
        if out.iter().any(|h| h.path == path && h.name == item.name) {
            continue;
        }
        out.push(FuncHit {
            path: path.to_string(),
            name: item.name.clone(),
            kind: item.kind,
            lines: item.lines,
            score: 0.0,
        });
        if out.len() >= max {
            break;
        }
    }
    out
}

/// `named` first (in that order, marked as the model's choice), then the other files in their
/// lexical order. Scores stay descending: a named file scores above every lexical one.
fn promote_files(lexical: &[FileHit], named: &[&str]) -> Vec<FileHit> {
    let top = lexical.first().map_or(0.0, |f| f.score);
    let mut out: Vec<FileHit> = named
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut why = vec!["named by the model".to_string()];
            if let Some(f) = lexical.iter().find(|f| f.path == *p) {
                why.extend(f.why.iter().cloned());
            }
            FileHit {
                path: p.to_string(),
                score: top + (named.len() - i) as f64,
                why,
            }
        })
        .collect();
    out.extend(
        lexical
            .iter()
            .filter(|f| !named.contains(&f.path.as_str()))
            .cloned(),
    );
    out
}

/// The model's definitions first, then the lexical ones it did not name.
fn promote_functions(lexical: &[FuncHit], picked: Vec<FuncHit>) -> Vec<FuncHit> {
    let top = lexical.first().map_or(0.0, |f| f.score);
    let n = picked.len();
    let mut out: Vec<FuncHit> = picked
        .into_iter()
        .enumerate()
        .map(|(i, mut h)| {
            h.score = top + (n - i) as f64;
            h
        })
        .collect();
    let rest: Vec<FuncHit> = lexical
        .iter()
        .filter(|f| !out.iter().any(|h| h.path == f.path && h.name == f.name))
        .cloned()
        .collect();
    out.extend(rest);
    out
}

/// A file as the localization prompts show it.
#[derive(Debug, Clone, Serialize)]
pub struct Outlined {
    pub path: String,
    /// Its schematic ([`crate::syntax::schematic::Schematic::render`]), trimmed.
    pub outline: String,
}

impl Prompts {
    /// Re-ranking, step 1: which of the shortlisted `files` (path, outline) must change.
    pub fn localize_files(
        &self,
        issue: &str,
        files: &[Outlined],
        pick: usize,
    ) -> anyhow::Result<Rendered> {
        self.render_with(
            "localize_files.j2",
            "localize_system.j2",
            minijinja::context! { issue => issue.trim(), files => files, pick => pick },
        )
    }

    /// Re-ranking, step 2: which definitions of the outlined `files` must change;
    /// `example` shows the reply format (`path::Class.method`).
    pub fn localize_functions(
        &self,
        issue: &str,
        files: &[Outlined],
        pick: usize,
        example: &str,
    ) -> anyhow::Result<Rendered> {
        self.render_with(
            "localize_functions.j2",
            "localize_system.j2",
            minijinja::context! { issue => issue.trim(), files => files, pick => pick, example => example },
        )
    }
}

/// Re-ranks each issue's localization with a model before candidates are reviewed
/// (`dei rank --llm-locate`): the pipeline calls it and hands the result to the context.
pub struct Relocator {
    engine: std::sync::Arc<crate::llm::runner::Engine>,
    prompts: Prompts,
    /// Who re-ranked, as reviewers are told (the committee's name).
    pub by: String,
}

impl std::fmt::Debug for Relocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relocator").field("by", &self.by).finish()
    }
}

impl Relocator {
    pub fn new(
        engine: std::sync::Arc<crate::llm::runner::Engine>,
        prompts: Prompts,
        by: String,
    ) -> Relocator {
        Relocator {
            engine,
            prompts,
            by,
        }
    }

    /// Re-rank `lexical`, the search's localization of `task`'s issue (two calls, cached).
    pub fn relocate(
        &self,
        task: &crate::model::Task,
        repo: &FileIndex,
        lexical: &Localization,
    ) -> anyhow::Result<Reranked> {
        let model = crate::llm::model::EngineModel::new(
            std::sync::Arc::clone(&self.engine),
            format!("{}/locate", task.instance_id),
        );
        rerank(
            &task.problem_statement,
            repo,
            lexical,
            &model,
            &self.prompts,
            &RerankOptions::default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::Scripted;
    use crate::localize::search::{locate, LocateOptions};

    fn repo() -> FileIndex {
        FileIndex::from_pairs(vec![
            (
                "pkg/printing.py".into(),
                "class Printer:\n    def doprint(self, expr):\n        return self._print(expr)\n\n    def _print_Symbol(self, s):\n        return s.name\n".into(),
            ),
            (
                "pkg/core.py".into(),
                "class Expr:\n    def doprint(self):\n        return Printer().doprint(self)\n\n\ndef sympify(x):\n    return x\n".into(),
            ),
            (
                "pkg/symbol.py".into(),
                "class Symbol:\n    def __new__(cls, name):\n        return object.__new__(cls)\n\n    def __str__(self):\n        return self.name\n".into(),
            ),
            ("docs/notes.rst".into(), "doprint doprint doprint\n".into()),
        ])
    }

    const ISSUE: &str = "doprint of an Expr gives the wrong text\n\nCalling doprint on an Expr prints garbage, as for a symbol.";

    fn lexical(r: &FileIndex) -> Localization {
        locate(ISSUE, r, &LocateOptions::default())
    }

    fn rank_of(loc: &Localization, path: &str) -> Option<usize> {
        loc.files.iter().position(|f| f.path == path)
    }

    #[test]
    fn named_file_and_definition_go_first_and_the_rest_keeps_its_order() {
        let r = repo();
        let lex = lexical(&r);
        assert_ne!(rank_of(&lex, "pkg/symbol.py"), Some(0), "{lex:?}");
        let model = Scripted::new()
            .when(
                "Which of these files",
                "1. `pkg/symbol.py`\n2. pkg/nowhere.py\n3. pkg/symbol.py",
            )
            .when(
                "Which classes, functions",
                "- pkg/symbol.py::Symbol.__str__\n- pkg/symbol.py::Symbol.nothing\n- pkg/core.py::sympify",
            );
        let prompts = Prompts::load(None).unwrap();
        let rr = rerank(ISSUE, &r, &lex, &model, &prompts, &RerankOptions::default()).unwrap();
        assert!(rr.notes.is_empty(), "{:?}", rr.notes);
        assert_eq!(rr.files_named, 1);
        let loc = &rr.localization;
        assert_eq!(loc.files[0].path, "pkg/symbol.py");
        assert_eq!(loc.files[0].why[0], "named by the model");
        // The others follow in lexical order, none lost, none twice.
        let rest: Vec<&str> = lex
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| *p != "pkg/symbol.py")
            .collect();
        let after: Vec<&str> = loc.files[1..].iter().map(|f| f.path.as_str()).collect();
        assert_eq!(after, rest);
        assert!(loc.files.windows(2).all(|w| w[0].score >= w[1].score));
        // Definitions: the two that exist, in the model's order, with their real spans.
        assert_eq!(rr.functions_named, 2);
        assert_eq!(loc.functions[0].name, "Symbol.__str__");
        assert_eq!(loc.functions[0].lines.start, 5);
        assert_eq!(loc.functions[1].name, "sympify");
        let n_before = lex.functions.len();
        let extra = ["Symbol.__str__", "sympify"]
            .iter()
            .filter(|n| !lex.functions.iter().any(|f| f.name == **n))
            .count();
        assert_eq!(loc.functions.len(), n_before + extra);
        // Step 2 outlined the chosen file first and showed its definitions.
        let calls = model.calls();
        assert_eq!(calls.len(), 2);
        assert!(calls[0].prompt.contains(ISSUE.lines().next().unwrap()));
        assert!(calls[0].prompt.contains("### pkg/symbol.py"));
        assert!(calls[1].prompt.contains("def __str__(self):"));
        let p1 = calls[1].prompt.find("pkg/symbol.py (").unwrap();
        assert!(calls[1]
            .prompt
            .find("pkg/core.py (")
            .is_none_or(|p2| p1 < p2));
        assert!(calls[0].system.contains("maintainer"));
    }

    #[test]
    fn failures_keep_the_search_order_and_say_why() {
        let r = repo();
        let lex = lexical(&r);
        let prompts = Prompts::load(None).unwrap();
        // No reply at all: both calls fail.
        let model = Scripted::new();
        let rr = rerank(ISSUE, &r, &lex, &model, &prompts, &RerankOptions::default()).unwrap();
        assert_eq!(rr.localization, lex);
        assert_eq!(rr.notes.len(), 2, "{:?}", rr.notes);
        assert!(rr.notes[0].contains("model call failed"), "{:?}", rr.notes);
        // Replies that name nothing shown.
        let model = Scripted::new()
            .then("I think the printing module, probably.")
            .then("pkg/other.py::Thing.method");
        let rr = rerank(ISSUE, &r, &lex, &model, &prompts, &RerankOptions::default()).unwrap();
        assert_eq!(rr.localization, lex);
        assert!(rr.notes[0].contains("named none of"), "{:?}", rr.notes);
        assert!(
            rr.notes[1].contains("named no definition"),
            "{:?}",
            rr.notes
        );
        assert_eq!((rr.files_named, rr.functions_named), (0, 0));
    }

    #[test]
    fn a_broken_template_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("localize_files.j2"), "{{ no_such }}").unwrap();
        let prompts = Prompts::load(Some(dir.path())).unwrap();
        let r = repo();
        let err = rerank(
            ISSUE,
            &r,
            &lexical(&r),
            &Scripted::new(),
            &prompts,
            &RerankOptions::default(),
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("localize_files.j2"), "{err:#}");
    }

    #[test]
    fn paths_are_found_in_the_usual_reply_shapes() {
        let known = ["a/b.py", "a/c.py", "d.py"];
        let got = named_paths(
            "1. `a/c.py` (the printer)\n- **./d.py**\na/b.py:12-20\nd.py, again\nxa/b.py",
            known.iter().copied(),
        );
        assert_eq!(got, ["a/c.py", "d.py", "a/b.py"]);
        assert!(named_paths("nothing here", known.iter().copied()).is_empty());
    }

    #[test]
    fn long_outlines_keep_the_focus_and_are_cut_with_a_count() {
        let mut src = String::from("X = 1\n\n");
        for c in 0..4 {
            src.push_str(&format!("class C{c}:\n"));
            for m in 0..10 {
                src.push_str(&format!("    def m{m}(self):\n        pass\n\n"));
            }
        }
        // Fits whole.
        let all = outline("m.py", &src, 1000, &[], false);
        assert!(all.contains("module-level code") && all.contains("def m9(self):"));
        assert!(!outline("m.py", &src, 1000, &[], true).contains("module-level code"));
        // Too long: classes stay, with the focused method only.
        let o = outline("m.py", &src, 12, &["C2.m7"], true);
        assert!(o.contains("class C0:") && o.contains("class C3:"), "{o}");
        assert_eq!(o.matches("def ").count(), 1, "{o}");
        assert!(o.contains("def m7(self):"), "{o}");
        // Still too long: the tail is cut with a count.
        let o = outline("m.py", &src, 3, &[], true);
        assert_eq!(o.lines().count(), 4, "{o}");
        assert!(o.ends_with("… (2 more lines of outline)\n"), "{o}");
    }
}
