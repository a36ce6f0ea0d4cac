//! Context building on small in-memory Python sources.

use dei::context::{build, build_with, render, Related};
use dei::localize::issue::IssueRefs;
use dei::localize::search::FileIndex;
use dei::model::{Candidate, Context, LineRange, PatchView, SnippetKind, Task};
use dei::patch::{self, Files, Mode};
use dei::syntax::python::PyIndex;

const LIB: &str = "\
import os
from .helpers import normalise


class Base:
    def check(self, v):
        return v is not None


class Parser(Base):
    \"\"\"Parse things.\"\"\"

    @property
    def name(self):
        return 'p'

    def parse(self, text):
        \"\"\"Parse text into tokens.\"\"\"
        def inner(t):
            return t.strip()
        tokens = [inner(t) for t in text.split(',')]
        return normalise(tokens)


def run(text):
    p = Parser()
    return p.parse(text)


def unrelated():
    return 42
";

const HELPERS: &str = "\
def normalise(tokens):
    \"\"\"Lower-case every token.\"\"\"
    return [t.lower() for t in tokens]
";

fn base() -> Files {
    let mut f = Files::new();
    f.insert("pkg/lib.py".into(), Some(LIB.into()));
    f.insert("pkg/helpers.py".into(), Some(HELPERS.into()));
    f.insert(
        "setup.cfg".into(),
        Some((1..=30).map(|i| format!("key{i} = {i}\n")).collect()),
    );
    f
}

fn task(issue: &str) -> Task {
    Task {
        instance_id: "t-1".into(),
        repo: "o/pkg".into(),
        base_commit: "x".into(),
        problem_statement: issue.into(),
        ..Task::default()
    }
}

fn view(patch: &str) -> PatchView {
    let c = Candidate {
        instance_id: "t-1".into(),
        agent: "a".into(),
        patch: patch.into(),
        resolved: None,
        origin: Default::default(),
    };
    let v = patch::rebuild(&c, &base(), Mode::Tolerant);
    assert!(
        v.error.is_none() && v.files.iter().all(|f| f.error.is_none()),
        "{v:?}"
    );
    v
}

const EDIT_INNER: &str = "--- a/pkg/lib.py\n+++ b/pkg/lib.py\n@@ -19,3 +19,3 @@\n         def inner(t):\n-            return t.strip()\n+            return t.strip(' ')\n         tokens = [inner(t) for t in text.split(',')]\n";

const EDIT_PARSE: &str = "--- a/pkg/lib.py\n+++ b/pkg/lib.py\n@@ -21,2 +21,3 @@\n         tokens = [inner(t) for t in text.split(',')]\n+        tokens = [t for t in tokens if t]\n         return normalise(tokens)\n";

fn names(ctx: &Context) -> Vec<(String, String)> {
    ctx.snippets
        .iter()
        .map(|s| (s.name.clone(), s.reason.clone()))
        .collect()
}

#[test]
fn index_qualifies_nested_and_decorated_defs() {
    let idx = PyIndex::new(LIB);
    let got: Vec<&str> = idx.defs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        got,
        vec![
            "Base",
            "Base.check",
            "Parser",
            "Parser.name",
            "Parser.parse",
            "Parser.parse.inner",
            "run",
            "unrelated"
        ]
    );
    let name = idx.defs.iter().find(|d| d.name == "Parser.name").unwrap();
    assert_eq!(
        name.lines,
        LineRange::new(13, 15),
        "decorator is part of the span"
    );
    let parse = idx.defs.iter().find(|d| d.name == "Parser.parse").unwrap();
    assert_eq!(parse.signature, "def parse(self, text)");
    assert_eq!(parse.doc.as_deref(), Some("Parse text into tokens."));
    assert_eq!(idx.defs[2].bases, vec!["Base"]);
    assert_eq!(
        idx.innermost(LineRange::new(20, 20)).unwrap().name,
        "Parser.parse.inner"
    );
    let callers: Vec<usize> = idx.calls_to("parse").map(|c| c.line).collect();
    assert_eq!(callers, vec![27]);
}

#[test]
fn edited_def_before_and_after_with_callee_caller_and_base() {
    let v = view(EDIT_PARSE);
    let mut files = base();
    files.remove("setup.cfg");
    let repo = FileIndex::from_pairs(files.into_iter().map(|(p, t)| (p, t.unwrap())).collect());
    let refs = IssueRefs::new("`Parser` keeps empty tokens");
    let ctx = build_with(
        &v,
        &task("`Parser` keeps empty tokens"),
        4000,
        &Related {
            refs: Some(&refs),
            others: &[],
            repo: Some(&repo),
            located: None,
            located_by: None,
        },
    );
    assert_eq!(ctx.edited, vec!["pkg/lib.py::Parser.parse"]);
    let first = &ctx.snippets[0];
    assert_eq!(
        (first.name.as_str(), first.after, first.lines),
        ("Parser.parse", false, LineRange::new(17, 22))
    );
    assert!(
        ctx.snippets
            .iter()
            .any(|s| s.name == "Parser.parse" && s.after && s.text.contains("if t]")),
        "{:?}",
        names(&ctx)
    );
    let n = names(&ctx);
    assert!(
        n.iter()
            .any(|(name, why)| name == "normalise" && why.contains("called by")),
        "callee in another file via import: {n:?}"
    );
    assert!(
        n.iter()
            .any(|(name, why)| name == "run" && why.contains("calls edited")),
        "caller: {n:?}"
    );
    assert!(
        n.iter()
            .any(|(name, why)| name == "Base" && why.contains("base class")),
        "base class: {n:?}"
    );
    assert!(
        n.iter()
            .any(|(name, why)| name == "Parser" && why.contains("named in the issue")),
        "{n:?}"
    );
    assert!(!n.iter().any(|(name, _)| name == "unrelated"));
    assert_eq!(ctx.new_parse_errors, 0);
    let text = render(&ctx);
    assert!(
        text.contains("### pkg/lib.py:17-22 Parser.parse (edited by this patch)"),
        "{text}"
    );
    assert!(
        text.contains("22 |         return normalise(tokens)"),
        "{text}"
    );
    assert!(ctx.tokens > 0 && ctx.tokens <= 4000);
}

#[test]
fn nested_edit_reports_innermost_def() {
    let ctx = build(&view(EDIT_INNER), &task("strip"), 4000);
    assert_eq!(ctx.edited, vec!["pkg/lib.py::Parser.parse.inner"]);
}

#[test]
fn budget_trims_related_but_keeps_edits() {
    let v = view(EDIT_PARSE);
    let full = build(
        &v,
        &task("Parser and run and Base and unrelated are involved"),
        100_000,
    );
    let small = build(
        &v,
        &task("Parser and run and Base and unrelated are involved"),
        60,
    );
    assert!(small.snippets.len() < full.snippets.len());
    assert!(small.dropped > 0);
    assert!(
        small
            .snippets
            .iter()
            .any(|s| s.name == "Parser.parse" && !s.after),
        "edited code is always kept"
    );
    let required: usize = small.snippets.iter().filter(|s| s.score >= 1000.0).count();
    assert!(required >= 1);
    if small.snippets.len() > required {
        assert!(
            small.tokens <= 60,
            "related snippets only while within budget: {}",
            small.tokens
        );
    }
    assert!(full.tokens > small.tokens);
}

#[test]
fn traceback_frames_pull_in_the_frame_function() {
    let issue = "Traceback (most recent call last):\n  File \"/venv/lib/site-packages/pkg/lib.py\", line 27, in run\n    return p.parse(text)\nAttributeError";
    let ctx = build(&view(EDIT_INNER), &task(issue), 4000);
    assert!(
        ctx.snippets
            .iter()
            .any(|s| s.name == "run" && s.reason.contains("traceback frame")),
        "{:?}",
        names(&ctx)
    );
}

#[test]
fn non_python_files_get_line_windows() {
    let v = view("--- a/setup.cfg\n+++ b/setup.cfg\n@@ -15,1 +15,1 @@\n-key15 = 15\n+key15 = 16\n");
    let ctx = build(&v, &task("bump key15"), 4000);
    assert_eq!(ctx.edited, vec!["setup.cfg:15"]);
    let s = &ctx.snippets[0];
    assert_eq!(
        (s.kind, s.lines),
        (SnippetKind::Lines, LineRange::new(10, 20))
    );
    assert!(ctx
        .snippets
        .iter()
        .any(|s| s.after && s.text.contains("key15 = 16")));
}

#[test]
fn parse_errors_are_reported_with_positions() {
    let v = view("--- a/pkg/lib.py\n+++ b/pkg/lib.py\n@@ -30,2 +30,2 @@\n def unrelated():\n-    return 42\n+    return (42\n");
    let ctx = build(&v, &task("x"), 4000);
    assert!(ctx.new_parse_errors > 0);
    assert!(!ctx.parse_errors.is_empty());
    assert!(
        ctx.parse_errors
            .iter()
            .all(|e| e.path == "pkg/lib.py" && e.line >= 30),
        "{:?}",
        ctx.parse_errors
    );
    assert!(render(&ctx).contains("parse errors after the patch"));
    let ok = build(&view(EDIT_INNER), &task("x"), 4000);
    assert_eq!((ok.new_parse_errors, ok.parse_errors.len()), (0, 0));
}

#[test]
fn other_candidates_spans_are_shown_and_counted() {
    let mine = view(EDIT_PARSE);
    let same = view(EDIT_PARSE);
    let other = view("--- a/pkg/lib.py\n+++ b/pkg/lib.py\n@@ -25,2 +25,2 @@\n def run(text):\n-    p = Parser()\n+    p = Parser()  # changed\n");
    let all = [&mine, &same, &other];
    let ctx = build_with(
        &mine,
        &task("x"),
        4000,
        &Related {
            refs: None,
            others: &all,
            repo: None,
            located: None,
            located_by: None,
        },
    );
    let edited = ctx
        .snippets
        .iter()
        .find(|s| s.name == "Parser.parse" && !s.after)
        .unwrap();
    assert!(
        edited.reason.contains("also edited by 1 other candidate"),
        "{}",
        edited.reason
    );
    assert!(
        ctx.snippets.iter().any(|s| s.name == "run"
            && s.reason
                .contains("edited by 1 other candidate(s), not by this one")),
        "{:?}",
        names(&ctx)
    );
}

#[test]
fn located_definitions_are_shown_when_the_candidate_goes_elsewhere() {
    let mut files = base();
    files.remove("setup.cfg");
    let repo = FileIndex::from_pairs(files.into_iter().map(|(p, t)| (p, t.unwrap())).collect());
    let issue = "normalise lower-cases every token, it should keep the case";
    let loc = dei::localize::search::locate(issue, &repo, &Default::default());
    assert_eq!(loc.functions[0].name, "normalise", "{:?}", loc.functions);
    let build = |patch: &str| {
        build_with(
            &view(patch),
            &task(issue),
            4000,
            &Related {
                repo: Some(&repo),
                located: Some(&loc),
                ..Related::default()
            },
        )
    };
    // This candidate edits Parser.parse: the reviewer also sees where the issue points.
    let ctx = build(EDIT_PARSE);
    let shown = ctx
        .snippets
        .iter()
        .find(|s| s.path == "pkg/helpers.py" && s.name == "normalise")
        .unwrap_or_else(|| panic!("{:?}", names(&ctx)));
    assert!(
        shown.reason.contains("issue-only localization ranks it #1"),
        "{}",
        shown.reason
    );
    assert!(shown.text.contains("return [t.lower() for t in tokens]"));
    // Without the localization it is not there for that reason.
    let bare = build_with(
        &view(EDIT_PARSE),
        &task(issue),
        4000,
        &Related {
            repo: Some(&repo),
            ..Related::default()
        },
    );
    assert!(!bare
        .snippets
        .iter()
        .any(|s| s.reason.contains("issue-only localization")));
    // A candidate that edits the located function is not shown it twice.
    let edit_norm = "--- a/pkg/helpers.py\n+++ b/pkg/helpers.py\n@@ -3 +3 @@\n-    return [t.lower() for t in tokens]\n+    return list(tokens)\n";
    let ctx = build(edit_norm);
    assert_eq!(ctx.edited, vec!["pkg/helpers.py::normalise"]);
    assert!(
        !ctx.snippets
            .iter()
            .any(|s| s.reason.contains("localization ranks it #1")),
        "{:?}",
        names(&ctx)
    );
}
