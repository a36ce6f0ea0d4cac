//! Stage 4: the relevant context a reviewer reads beside the diff, found with tree-sitter.
//!
//! For every hunk of a Python file: the enclosing definition before and after the patch
//! (with signature and docstring) and the parse errors the patch introduces, with their
//! positions. Then related code, ranked and trimmed to a token budget: definitions the
//! changed code calls or inherits from, callers of changed functions (in the touched files
//! and, given a [`locate::FileIndex`], elsewhere in the repository), code the issue names
//! (identifiers, paths, traceback frames), and spans other candidates for the same issue
//! edit. Other files fall back to line windows. [`render`] turns it into prompt text.
//!
//! [`locate`] ranks files and functions from the issue text alone.

use crate::localize::issue;
use crate::localize::issue::IssueRefs;
use crate::model::paths::{is_auxiliary, is_python};
use crate::syntax::python::{self, Def, PyIndex};

use crate::localize::search::{self as locate, FileIndex};
use crate::model::{
    Context, FileView, LineRange, ParseErrorPos, PatchView, Snippet, SnippetKind, Task,
};
use std::collections::HashMap;
use std::sync::Arc;

/// Rough token count (4 characters a token), used to keep context within a budget.
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Lines `range` of `text` (1-based, inclusive).
pub fn slice_lines(text: &str, range: LineRange) -> String {
    text.split_inclusive('\n')
        .skip(range.start.saturating_sub(1))
        .take(range.end + 1 - range.start.max(1))
        .collect()
}

/// Identifiers the issue text names (see [`issue::mentions`]).
pub fn issue_mentions(text: &str) -> Vec<String> {
    issue::mentions(text)
}

/// What besides the candidate itself the context may draw on.
#[derive(Default, Clone, Copy)]
pub struct Related<'a> {
    /// The issue's references, parsed once per issue (parsed from the task when absent).
    pub refs: Option<&'a IssueRefs>,
    /// The other candidates' views for the same issue.
    pub others: &'a [&'a PatchView],
    /// The repository's Python files at the base commit, for callers/callees/issue names elsewhere.
    pub repo: Option<&'a FileIndex>,
    /// Where the issue text alone points ([`locate::locate`], or re-ranked by a model): its best
    /// definitions are shown when the candidate leaves them alone.
    pub located: Option<&'a locate::Localization>,
    /// The model that re-ranked `located`, named in the snippets' reason; `None`: the search.
    pub located_by: Option<&'a str>,
}

/// Best located definitions shown to the reviewer (when the candidate does not edit them).
pub const LOCATED_SHOWN: usize = 3;

/// Lines of context around an edit in a non-Python file (and around module-level code).
pub const WINDOW: usize = 5;
/// Longest edited definition shown whole; longer ones are cut to windows around the edit.
pub const MAX_EDIT_LINES: usize = 120;
/// Longest related definition shown whole; longer ones show their first lines.
pub const MAX_RELATED_LINES: usize = 40;

/// Score of snippets that are always kept (the code the patch edits).
const REQUIRED: f64 = 1000.0;

/// Build the context of one candidate within `budget` tokens, from the candidate alone.
pub fn build(view: &PatchView, task: &Task, budget: usize) -> Context {
    build_with(view, task, budget, &Related::default())
}

struct Builder<'a> {
    cands: Vec<Snippet>,
    rel: &'a Related<'a>,
    /// (path, qualified name) of definitions this candidate edits.
    edited_defs: Vec<(String, String)>,
    /// The candidate.
    view: &'a PatchView,
    /// What is known so far (edited names, parse errors); the snippets come at the end.
    ctx: Context,
    /// What the other candidates edit.
    others: OtherEdits,
}

fn window(range: LineRange, pad: usize, max_line: usize) -> LineRange {
    LineRange::new(
        range.start.saturating_sub(pad).max(1),
        (range.end + pad).min(max_line.max(1)),
    )
}

fn def_snippet(
    path: &str,
    src: &str,
    d: &Def,
    reason: String,
    score: f64,
    after: bool,
    focus: Option<LineRange>,
) -> Snippet {
    let max = if score >= REQUIRED {
        MAX_EDIT_LINES
    } else {
        MAX_RELATED_LINES
    };
    let len = d.lines.end + 1 - d.lines.start;
    let lines = if len <= max {
        d.lines
    } else if let Some(f) = focus {
        // A window around the edit, inside the definition.
        let pad = max.saturating_sub(f.end + 1 - f.start) / 2;
        let w = window(f, pad.max(WINDOW), d.lines.end);
        LineRange::new(w.start.max(d.lines.start), w.end)
    } else {
        LineRange::new(d.lines.start, d.lines.start + max - 1)
    };
    Snippet {
        path: path.to_string(),
        kind: d.kind,
        name: d.name.clone(),
        lines,
        text: slice_lines(src, lines),
        reason,
        signature: d.signature.clone(),
        doc: d.doc.clone(),
        after,
        score,
    }
}

fn line_snippet(
    path: &str,
    src: &str,
    lines: LineRange,
    kind: SnippetKind,
    reason: String,
    score: f64,
    after: bool,
) -> Snippet {
    Snippet {
        path: path.to_string(),
        kind,
        name: String::new(),
        lines,
        text: slice_lines(src, lines),
        reason,
        signature: String::new(),
        doc: None,
        after,
        score,
    }
}

/// Definitions (by path and qualified name, or `path:line` windows) that a view edits.
pub fn edited_units(view: &PatchView) -> Vec<(String, String, LineRange)> {
    let mut out: Vec<(String, String, LineRange)> = Vec::new();
    for f in &view.files {
        let before = f.before.as_deref().unwrap_or("");
        if is_python(&f.path) && f.before.is_some() {
            let idx = python::index(before);
            for r in &f.changed_before {
                let (name, lines) = match idx.innermost(*r) {
                    Some(d) => (d.name.clone(), d.lines),
                    None => ("<module>".to_string(), window(*r, WINDOW, idx.line_count)),
                };
                if !out.iter().any(|(p, n, l)| {
                    p == &f.path && n == &name && (n != "<module>" || l.overlaps(&lines))
                }) {
                    out.push((f.path.clone(), name, lines));
                }
            }
        } else {
            for r in &f.changed_before {
                out.push((
                    f.path.clone(),
                    String::new(),
                    window(*r, WINDOW, before.lines().count()),
                ));
            }
        }
    }
    out
}

impl Builder<'_> {
    fn add(&mut self, s: Snippet) {
        self.cands.push(s);
    }

    /// Definitions named `name` visible from `path`: same file, then the touched files, then
    /// the import's module, then a unique definer elsewhere in the repository.
    fn resolve(
        &self,
        view: &PatchView,
        path: &str,
        idx: &PyIndex,
        name: &str,
    ) -> Option<(String, Arc<str>, Def)> {
        let f = view.files.iter().find(|f| f.path == path)?;
        if let Some(d) = idx
            .defs_named(name)
            .find(|d| d.depth == 0 || d.kind == SnippetKind::Function)
        {
            return Some((
                path.to_string(),
                Arc::from(f.before.as_deref().unwrap_or("")),
                d.clone(),
            ));
        }
        for g in &view.files {
            if g.path == path || !is_python(&g.path) {
                continue;
            }
            if let Some(src) = g.before.as_deref() {
                if let Some(d) = python::index(src).defs_named(name).find(|d| d.depth == 0) {
                    return Some((g.path.clone(), Arc::from(src), d.clone()));
                }
            }
        }
        let repo = self.rel.repo?;
        let mut candidates: Vec<usize> = Vec::new();
        if let Some(imp) = idx.imports.iter().find(|i| i.alias == name) {
            let module = resolve_relative(path, &imp.module);
            if let Some(i) = repo.module_file(&module) {
                candidates.push(i);
            }
        }
        if candidates.is_empty() {
            let defs = repo.files_defining(name);
            if defs.len() == 1 {
                candidates.push(defs[0]);
            }
        }
        for i in candidates {
            let rf = &repo.files[i];
            if rf.path == path {
                continue;
            }
            if let Some(d) = rf.index().defs_named(name).find(|d| d.depth == 0) {
                return Some((rf.path.clone(), rf.text.clone(), d.clone()));
            }
        }
        None
    }
}

/// `from .x import y` in `pkg/a/b.py` → `pkg.a.x`.
pub(crate) fn resolve_relative(path: &str, module: &str) -> String {
    let dots = module.chars().take_while(|&c| c == '.').count();
    if dots == 0 {
        return module.to_string();
    }
    let mut parts: Vec<&str> = path.trim_end_matches(".py").split('/').collect();
    parts.pop();
    for _ in 1..dots {
        parts.pop();
    }
    let rest = &module[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

fn is_generic_name(name: &str) -> bool {
    name.len() < 3
        || (name.starts_with("__") && name.ends_with("__"))
        || matches!(name, "get" | "run" | "main" | "call" | "copy")
}

/// Build the context of one candidate within `budget` tokens, drawing on the issue, the other
/// candidates and the repository as far as `rel` provides them.
///
/// In steps, each adding candidate snippets: the code the patch edits (before and after, with
/// the parse errors it introduces), code related to each edited definition (callees, base
/// classes, callers), code the issue names (traceback frames, names), where the issue alone
/// points, and spans the other candidates edit; then [`select`] keeps what fits.
pub fn build_with(view: &PatchView, task: &Task, budget: usize, rel: &Related) -> Context {
    let owned_refs;
    let refs = match rel.refs {
        Some(r) => r,
        None => {
            owned_refs = IssueRefs::new(&task.problem_statement);
            &owned_refs
        }
    };
    let mut b = Builder {
        cands: Vec::new(),
        rel,
        edited_defs: Vec::new(),
        view,
        ctx: Context::default(),
        others: OtherEdits::of(view, rel.others),
    };
    for f in &view.files {
        if is_python(&f.path) {
            b.edited_python(f);
        } else {
            b.edited_lines(f);
        }
    }
    let edited = b.edited_defs.clone();
    for (path, name) in &edited {
        b.related(path, name);
    }
    b.traceback_frames(refs);
    b.named_in_touched_files(refs);
    b.named_elsewhere(refs);
    b.located(&edited);
    b.edited_by_others(&edited);
    let Builder { mut ctx, cands, .. } = b;
    select(&mut ctx, cands, budget);
    ctx
}

/// What the other candidates edit: (path, name) → how many of them, and the lines of the first.
/// Unnamed spans (`<module>` code, non-Python lines) are keyed `name@start`.
struct OtherEdits(HashMap<(String, String), (usize, LineRange)>);

impl OtherEdits {
    fn of(view: &PatchView, others: &[&PatchView]) -> OtherEdits {
        let mut map: HashMap<(String, String), (usize, LineRange)> = HashMap::new();
        for o in others {
            if std::ptr::eq(*o, view) {
                continue;
            }
            let mut seen = std::collections::HashSet::new();
            for (p, n, l) in edited_units(o) {
                let key = (
                    p.clone(),
                    if n.is_empty() || n == "<module>" {
                        format!("{n}@{}", l.start)
                    } else {
                        n
                    },
                );
                if seen.insert(key.clone()) {
                    map.entry(key).or_insert((0, l)).0 += 1;
                }
            }
        }
        OtherEdits(map)
    }

    /// How many other candidates edit `name` in `path` (unnamed: overlapping `lines`).
    fn on(&self, path: &str, name: &str, lines: LineRange) -> usize {
        self.0
            .iter()
            .filter(|((p, n), (_, l))| {
                p == path
                    && (n == name || (name.is_empty() || name == "<module>") && l.overlaps(&lines))
            })
            .map(|(_, (c, _))| *c)
            .sum()
    }
}

/// `reason`, saying so when `k` other candidates edit the same code.
fn with_others(reason: &str, k: usize) -> String {
    if k > 0 {
        format!("{reason}; also edited by {k} other candidate(s)")
    } else {
        reason.to_string()
    }
}

impl Builder<'_> {
    /// A non-Python file: windows around the edited lines, before and after.
    fn edited_lines(&mut self, f: &FileView) {
        let before = f.before.as_deref().unwrap_or("");
        let n_before = before.lines().count();
        for r in &f.changed_before {
            let w = window(*r, WINDOW, n_before);
            self.ctx.edited.push(format!("{}:{}", f.path, r.start));
            let k = self.others.on(&f.path, "", w);
            self.add(line_snippet(
                &f.path,
                before,
                w,
                SnippetKind::Lines,
                with_others("lines edited by this patch", k),
                REQUIRED,
                false,
            ));
        }
        if let Some(a) = f.after.as_deref() {
            let n_after = a.lines().count();
            for r in &f.changed_after {
                let w = window(*r, WINDOW, n_after);
                self.add(line_snippet(
                    &f.path,
                    a,
                    w,
                    SnippetKind::Lines,
                    "the same lines after the patch".into(),
                    900.0,
                    true,
                ));
            }
        }
    }

    /// A Python file: the parse errors the patch adds, and the definitions (or module-level
    /// code) enclosing each hunk before and after.
    fn edited_python(&mut self, f: &FileView) {
        let before = f.before.as_deref().unwrap_or("");
        let idx_before = python::index(before);
        let idx_after = f.after.as_deref().map(python::index);
        if let Some(ia) = &idx_after {
            self.new_parse_errors(f, &idx_before, ia);
        }
        if f.before.is_some() {
            self.edited_before(f, &idx_before);
        }
        if let (Some(a), Some(ia)) = (f.after.as_deref(), &idx_after) {
            self.edited_after(f, a, ia);
        }
    }

    /// Parse errors in the patched file beyond those of the base (at most 10 positions, skipping
    /// errors on lines the base already had with an error at the same text).
    fn new_parse_errors(&mut self, f: &FileView, idx_before: &PyIndex, ia: &PyIndex) {
        let before = f.before.as_deref().unwrap_or("");
        let after = f.after.as_deref();
        let extra = ia.errors.len().saturating_sub(if f.before.is_some() {
            idx_before.errors.len()
        } else {
            0
        });
        if extra == 0 {
            return;
        }
        self.ctx.new_parse_errors += extra;
        let known: Vec<&str> = before.lines().collect();
        for e in ia.errors.iter().take(10) {
            let line_text = after.and_then(|a| a.lines().nth(e.line - 1)).unwrap_or("");
            if idx_before
                .errors
                .iter()
                .any(|be| known.get(be.line - 1) == Some(&line_text))
            {
                continue;
            }
            self.ctx.parse_errors.push(ParseErrorPos {
                path: f.path.clone(),
                ..e.clone()
            });
        }
    }

    /// The definitions enclosing each hunk before the patch (required snippets).
    fn edited_before(&mut self, f: &FileView, idx_before: &PyIndex) {
        let before = f.before.as_deref().unwrap_or("");
        for r in &f.changed_before {
            match idx_before.innermost(*r) {
                Some(d) => {
                    let name = format!("{}::{}", f.path, d.name);
                    if !self.ctx.edited.contains(&name) {
                        self.ctx.edited.push(name);
                        self.edited_defs.push((f.path.clone(), d.name.clone()));
                    }
                    let k = self.others.on(&f.path, &d.name, d.lines);
                    self.add(def_snippet(
                        &f.path,
                        before,
                        d,
                        with_others("edited by this patch", k),
                        REQUIRED,
                        false,
                        Some(*r),
                    ));
                }
                None => {
                    let name = format!("{}::<module>", f.path);
                    if !self.ctx.edited.contains(&name) {
                        self.ctx.edited.push(name);
                    }
                    let w = window(*r, WINDOW, idx_before.line_count);
                    let k = self.others.on(&f.path, "<module>", w);
                    self.add(line_snippet(
                        &f.path,
                        before,
                        w,
                        SnippetKind::Module,
                        with_others("module-level code edited by this patch", k),
                        REQUIRED,
                        false,
                    ));
                }
            }
        }
    }

    /// The definitions enclosing each hunk after the patch (required in a new file).
    fn edited_after(&mut self, f: &FileView, a: &str, ia: &PyIndex) {
        for r in &f.changed_after {
            match ia.innermost(*r) {
                Some(d) => {
                    let reason = if f.before.is_none() {
                        "added by this patch (new file)"
                    } else {
                        "after the patch"
                    };
                    self.add(def_snippet(
                        &f.path,
                        a,
                        d,
                        reason.into(),
                        if f.before.is_none() { REQUIRED } else { 900.0 },
                        true,
                        Some(*r),
                    ));
                }
                None => {
                    let w = window(*r, WINDOW, ia.line_count);
                    self.add(line_snippet(
                        &f.path,
                        a,
                        w,
                        SnippetKind::Module,
                        "module-level code after the patch".into(),
                        900.0,
                        true,
                    ));
                }
            }
        }
    }

    /// Code related to the edited definition `name` of `path`: what it calls, its base
    /// classes, and its callers.
    fn related(&mut self, path: &str, name: &str) {
        let view = self.view;
        let Some(f) = view.files.iter().find(|f| f.path == path) else {
            return;
        };
        let before = f.before.as_deref().unwrap_or("");
        let idx = python::index(before);
        let Some(di) = idx.defs.iter().position(|d| d.name == name) else {
            return;
        };
        let d = idx.defs[di].clone();
        self.callees(path, f, &idx, &d);
        self.base_classes(path, &idx, di);
        let short = d.short().to_string();
        if d.kind == SnippetKind::Function && !is_generic_name(&short) {
            self.callers_in_file(path, before, &idx, &d, &short);
            self.callers_elsewhere(path, &short);
        }
    }

    /// Definitions `d` calls, in the code before and after (at most 12 names).
    fn callees(&mut self, path: &str, f: &FileView, idx: &PyIndex, d: &Def) {
        let mut callees: Vec<String> = idx
            .callees_in(d.lines)
            .into_iter()
            .map(String::from)
            .collect();
        if let Some(a) = f.after.as_deref() {
            let ia = python::index(a);
            if let Some(da) = ia.defs.iter().find(|x| x.name == d.name) {
                for c in ia.callees_in(da.lines) {
                    if !callees.iter().any(|x| x == c) {
                        callees.push(c.to_string());
                    }
                }
            }
        }
        for c in callees.iter().take(12) {
            if c == d.short() || is_generic_name(c) && c != "__init__" {
                continue;
            }
            if let Some((p, src, cd)) = self.resolve(self.view, path, idx, c) {
                if p == path && cd.lines.overlaps(&d.lines) {
                    continue;
                }
                let score = if p == path { 60.0 } else { 52.0 };
                self.add(def_snippet(
                    &p,
                    &src,
                    &cd,
                    format!("called by edited `{}`", d.short()),
                    score,
                    false,
                    None,
                ));
            }
        }
    }

    /// Base classes of the edited class, or of the edited method's class.
    fn base_classes(&mut self, path: &str, idx: &PyIndex, di: usize) {
        let mut cls = Some(di);
        while let Some(ci) = cls {
            if idx.defs[ci].kind == SnippetKind::Class {
                break;
            }
            cls = idx.defs[ci].parent;
        }
        let Some(ci) = cls else { return };
        for base in idx.defs[ci].bases.clone() {
            let short = base.rsplit('.').next().unwrap_or(&base).to_string();
            if matches!(short.as_str(), "object" | "Exception" | "ABC") {
                continue;
            }
            if let Some((p, src, bd)) = self.resolve(self.view, path, idx, &short) {
                self.add(def_snippet(
                    &p,
                    &src,
                    &bd,
                    format!("base class of `{}`", idx.defs[ci].name),
                    55.0,
                    false,
                    None,
                ));
            }
        }
    }

    /// Up to 4 calls of `short` in its own file, outside `d`.
    fn callers_in_file(&mut self, path: &str, before: &str, idx: &PyIndex, d: &Def, short: &str) {
        let mut n = 0;
        for c in idx.calls_to(short) {
            if d.lines.start <= c.line && c.line <= d.lines.end {
                continue;
            }
            match c.def {
                Some(ci) => self.add(def_snippet(
                    path,
                    before,
                    &idx.defs[ci],
                    format!("calls edited `{short}`"),
                    50.0 - n as f64,
                    false,
                    Some(LineRange::new(c.line, c.line)),
                )),
                None => self.add(line_snippet(
                    path,
                    before,
                    window(LineRange::new(c.line, c.line), 2, idx.line_count),
                    SnippetKind::Module,
                    format!("calls edited `{short}`"),
                    45.0 - n as f64,
                    false,
                )),
            }
            n += 1;
            if n >= 4 {
                break;
            }
        }
    }

    /// With a repository: the first call of `short` in up to 3 other files (of at most 20
    /// untouched, non-auxiliary files that mention it).
    fn callers_elsewhere(&mut self, path: &str, short: &str) {
        let Some(repo) = self.rel.repo else { return };
        let view = self.view;
        let mut found = 0;
        let mut scanned = 0;
        for &fi in repo.files_containing(short).iter() {
            let rf = &repo.files[fi];
            if rf.path == path
                || view.files.iter().any(|g| g.path == rf.path)
                || is_auxiliary(&rf.path)
            {
                continue;
            }
            scanned += 1;
            if scanned > 20 {
                break;
            }
            // No `short(` in the text: no call to find, no need to parse the file.
            if !python::may_call(&rf.text, short) {
                continue;
            }
            let ri = rf.index();
            let first = ri.calls_to(short).next().cloned();
            if let Some(c) = first {
                let s = match c.def {
                    Some(ci) => def_snippet(
                        &rf.path,
                        &rf.text,
                        &ri.defs[ci],
                        format!("calls edited `{short}`"),
                        35.0 - found as f64,
                        false,
                        Some(LineRange::new(c.line, c.line)),
                    ),
                    None => line_snippet(
                        &rf.path,
                        &rf.text,
                        window(LineRange::new(c.line, c.line), 2, ri.line_count),
                        SnippetKind::Module,
                        format!("calls edited `{short}`"),
                        33.0 - found as f64,
                        false,
                    ),
                };
                self.add(s);
                found += 1;
                if found >= 3 {
                    break;
                }
            }
        }
    }

    /// The issue's traceback frames, innermost first, in the touched files or (with a
    /// repository) elsewhere.
    fn traceback_frames(&mut self, refs: &IssueRefs) {
        let view = self.view;
        for (k, fr) in refs.frames.iter().rev().enumerate() {
            let score = 75.0 - 3.0 * k as f64;
            if score < 40.0 {
                break;
            }
            let touched: Vec<&str> = view.files.iter().map(|f| f.path.as_str()).collect();
            let (path, src): (String, Arc<str>) =
                if let Some(p) = issue::resolve_path(&fr.file, touched.iter().copied()) {
                    let f = view
                        .files
                        .iter()
                        .find(|f| f.path == p)
                        .expect("touched path");
                    match f.before.as_deref() {
                        Some(s) => (p.to_string(), Arc::from(s)),
                        None => continue,
                    }
                } else if let Some(repo) = self.rel.repo {
                    match issue::resolve_path(&fr.file, repo.paths()).and_then(|p| repo.get(p)) {
                        Some(rf) => (rf.path.clone(), rf.text.clone()),
                        None => continue,
                    }
                } else {
                    continue;
                };
            if !is_python(&path) {
                continue;
            }
            let idx = python::index(&src);
            let at = LineRange::new(fr.line, fr.line);
            match idx.innermost(at) {
                Some(d) => self.add(def_snippet(
                    &path,
                    &src,
                    d,
                    format!("traceback frame (line {}) in the issue", fr.line),
                    score,
                    false,
                    Some(at),
                )),
                None => self.add(line_snippet(
                    &path,
                    &src,
                    window(at, 3, idx.line_count),
                    SnippetKind::Module,
                    "traceback frame in the issue".into(),
                    score,
                    false,
                )),
            }
        }
    }

    /// Definitions of the touched files that the issue names.
    fn named_in_touched_files(&mut self, refs: &IssueRefs) {
        let view = self.view;
        for f in &view.files {
            if !is_python(&f.path) {
                continue;
            }
            let Some(before) = f.before.as_deref() else {
                continue;
            };
            let idx = python::index(before);
            for d in &idx.defs {
                if refs.names(&d.name) {
                    let score = if d.kind == SnippetKind::Function {
                        70.0
                    } else {
                        62.0
                    };
                    self.add(def_snippet(
                        &f.path,
                        before,
                        d,
                        "named in the issue".into(),
                        score,
                        false,
                        None,
                    ));
                }
            }
        }
    }

    /// With a repository: names the issue mentions that one or two untouched files define.
    fn named_elsewhere(&mut self, refs: &IssueRefs) {
        let Some(repo) = self.rel.repo else { return };
        let view = self.view;
        for m in &refs.mentions {
            let defining = repo.files_defining(m);
            if defining.is_empty() || defining.len() > 2 {
                continue;
            }
            for &i in defining {
                let rf = &repo.files[i];
                if view.files.iter().any(|f| f.path == rf.path) || is_auxiliary(&rf.path) {
                    continue;
                }
                let ri = rf.index();
                let first = ri.defs_named(m).next().cloned();
                if let Some(d) = first {
                    self.add(def_snippet(
                        &rf.path,
                        &rf.text,
                        &d,
                        "named in the issue".into(),
                        42.0,
                        false,
                        None,
                    ));
                }
            }
        }
    }

    /// Where the issue alone points (its best [`LOCATED_SHOWN`] definitions), when this
    /// candidate leaves them alone.
    fn located(&mut self, edited: &[(String, String)]) {
        let Some(loc) = self.rel.located else { return };
        let view = self.view;
        for (k, f) in loc.functions.iter().take(LOCATED_SHOWN).enumerate() {
            if edited.iter().any(|(p, n)| *p == f.path && *n == f.name) || !is_python(&f.path) {
                continue;
            }
            let src: Option<Arc<str>> = match view.files.iter().find(|g| g.path == f.path) {
                Some(g) => g.before.as_deref().map(Arc::from),
                None => self
                    .rel
                    .repo
                    .and_then(|r| r.get(&f.path))
                    .map(|rf| rf.text.clone()),
            };
            let Some(src) = src else { continue };
            let idx = python::index(&src);
            let Some(d) = idx
                .defs
                .iter()
                .find(|d| d.name == f.name && d.lines.start == f.lines.start)
            else {
                continue;
            };
            self.add(def_snippet(
                &f.path,
                &src,
                d,
                match self.rel.located_by {
                    Some(m) => format!("issue-only localization ranks it #{} ({m})", k + 1),
                    None => format!("issue-only localization ranks it #{}", k + 1),
                },
                38.0 - k as f64,
                false,
                None,
            ));
        }
    }

    /// Spans the other candidates edit and this one does not, the most edited first.
    fn edited_by_others(&mut self, edited: &[(String, String)]) {
        let mut others: Vec<_> = std::mem::take(&mut self.others.0).into_iter().collect();
        others.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
        for ((path, name), (count, lines)) in others {
            if edited.iter().any(|(p, n)| *p == path && *n == name)
                || self
                    .ctx
                    .edited
                    .iter()
                    .any(|e| e == &format!("{path}:{}", lines.start))
            {
                continue;
            }
            let src: Option<Arc<str>> = self
                .rel
                .others
                .iter()
                .flat_map(|o| o.files.iter())
                .find(|f| f.path == path)
                .and_then(|f| f.before.as_deref().map(Arc::from));
            let Some(src) = src else { continue };
            let reason = format!("edited by {count} other candidate(s), not by this one");
            let score = 40.0 + 4.0 * count as f64;
            let plain = name.contains('@');
            if is_python(&path) && !plain {
                let idx = python::index(&src);
                if let Some(d) = idx.defs.iter().find(|d| d.name == name) {
                    self.add(def_snippet(&path, &src, d, reason, score, false, None));
                }
            } else {
                self.add(line_snippet(
                    &path,
                    &src,
                    lines,
                    SnippetKind::Lines,
                    reason,
                    score,
                    false,
                ));
            }
        }
    }
}

/// Keep the required snippets, then the best related ones that fit in `budget` tokens.
fn select(ctx: &mut Context, mut cands: Vec<Snippet>, budget: usize) {
    // Stable: required in patch order first, then by score.
    let mut order: Vec<usize> = (0..cands.len()).collect();
    order.sort_by(|&a, &b| {
        let ra = cands[a].score >= REQUIRED;
        let rb = cands[b].score >= REQUIRED;
        rb.cmp(&ra).then_with(|| {
            if ra && rb {
                a.cmp(&b)
            } else {
                cands[b].score.total_cmp(&cands[a].score).then(a.cmp(&b))
            }
        })
    });
    let mut used = 0usize;
    let mut kept: Vec<Snippet> = Vec::new();
    for i in order {
        let s = std::mem::replace(
            &mut cands[i],
            line_snippet(
                "",
                "",
                LineRange::new(1, 1),
                SnippetKind::Lines,
                String::new(),
                0.0,
                false,
            ),
        );
        // Skip what is already shown: same side, same file, contained in a kept snippet.
        if let Some(k) = kept.iter_mut().find(|k| {
            k.path == s.path
                && k.after == s.after
                && k.lines.start <= s.lines.start
                && s.lines.end <= k.lines.end
        }) {
            // Already shown: keep the extra reason when it says something new.
            if s.score < REQUIRED && !k.reason.contains(&s.reason) && k.reason.len() < 200 {
                k.reason = format!("{}; {}", k.reason, s.reason);
            }
            continue;
        }
        let t = tokens(&render_snippet(&s));
        if s.score < REQUIRED && used + t > budget {
            ctx.dropped += 1;
            continue;
        }
        used += t;
        kept.push(s);
    }
    ctx.tokens = used;
    ctx.snippets = kept;
}

/// One snippet as a text block: a header with path, lines, name and reason, then numbered lines.
pub fn render_snippet(s: &Snippet) -> String {
    let mut out = String::with_capacity(s.text.len() + s.text.len() / 4 + 80);
    let label = if s.name.is_empty() {
        String::new()
    } else {
        format!(" {}", s.name)
    };
    let side = if s.after { " [after patch]" } else { "" };
    out.push_str(&format!(
        "### {}:{}-{}{}{} ({})\n",
        s.path, s.lines.start, s.lines.end, label, side, s.reason
    ));
    let whole_def =
        !s.signature.is_empty() && s.text.trim_start().starts_with(['d', 'c', '@', 'a']);
    if !s.signature.is_empty() && !whole_def {
        out.push_str(&format!("# in: {}\n", s.signature));
    }
    let width = (s.lines.end.max(1)).to_string().len();
    for (i, line) in s.text.lines().enumerate() {
        out.push_str(&format!("{:>width$} | {}\n", s.lines.start + i, line));
    }
    out
}

/// Render context as text for a prompt or a report.
pub fn render(ctx: &Context) -> String {
    let mut out = String::new();
    for s in &ctx.snippets {
        out.push_str(&render_snippet(s));
        out.push('\n');
    }
    if !ctx.parse_errors.is_empty() {
        out.push_str("### parse errors after the patch\n");
        for e in &ctx.parse_errors {
            out.push_str(&format!("{}:{}:{} {}\n", e.path, e.line, e.column, e.kind));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_is_inclusive() {
        assert_eq!(slice_lines("a\nb\nc\n", LineRange::new(2, 3)), "b\nc\n");
    }

    #[test]
    fn relative_imports_resolve() {
        assert_eq!(resolve_relative("pkg/a/b.py", ".x"), "pkg.a.x");
        assert_eq!(resolve_relative("pkg/a/b.py", "..y"), "pkg.y");
        assert_eq!(resolve_relative("pkg/a/b.py", "os.path"), "os.path");
    }
}
