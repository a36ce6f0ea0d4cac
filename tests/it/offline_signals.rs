//! The offline committee's signal scorers on small synthetic bundles.

use dei::model::{Applies, Candidate, Task};
use dei::review::offline::features::{self, Features};
use dei::review::offline::{agreement, location, shape, Evidence, Offline, Weights};

fn cand(agent: &str, patch: &str) -> Candidate {
    Candidate {
        instance_id: "x__y-1".into(),
        agent: agent.into(),
        patch: patch.into(),
        resolved: None,
        origin: Default::default(),
    }
}

fn diff(path: &str, old: &str, new: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,2 @@ def fix(x):\n ctx\n-{old}\n+{new}\n")
}

fn task(text: &str) -> Task {
    Task {
        instance_id: "x__y-1".into(),
        problem_statement: text.into(),
        ..Task::default()
    }
}

fn feats(list: &[(&str, String)]) -> Vec<Features> {
    list.iter()
        .map(|(a, p)| {
            let mut f = features::from_diff(&cand(a, p));
            f.applies = Some(if f.empty {
                Applies::Empty
            } else {
                Applies::Clean
            });
            f.new_parse_errors = Some(0);
            f
        })
        .collect()
}

fn scores(w: Weights, text: &str, list: &[(&str, String)]) -> Vec<f64> {
    let ev = Evidence::new(&task(text), feats(list));
    Offline::new(w)
        .score(&ev)
        .into_iter()
        .map(|(s, _)| s.value)
        .collect()
}

#[test]
fn cross_family_duplicates_beat_a_lone_candidate() {
    let fix = diff("pkg/m.py", "return a", "return b");
    let list = [
        ("alpha_run-1", fix.clone()),
        ("beta", fix.replace("return b", "return  b")),
        ("gamma", diff("pkg/other.py", "x = 1", "x = 2")),
    ];
    let s = scores(Weights::default(), "nothing named", &list);
    assert_eq!(s[0], s[1], "duplicates get exactly equal scores: {s:?}");
    assert!(s[0] > s[2], "{s:?}");
}

#[test]
fn same_family_duplicates_count_less_than_cross_family() {
    let fix = diff("pkg/m.py", "return a", "return b");
    let other = diff("pkg/n.py", "y = 1", "y = 2");
    // Pair from one family vs pair from two families, each beside the same lone candidate.
    let same = feats(&[
        ("acr_run-1", fix.clone()),
        ("acr_run-2", fix.clone()),
        ("z", other.clone()),
    ]);
    let cross = feats(&[
        ("acr_run-1", fix.clone()),
        ("swe_run-2", fix.clone()),
        ("z", other),
    ]);
    let m_same = agreement::matrix(&same);
    let m_cross = agreement::matrix(&cross);
    let s_same = agreement::support(&same, &m_same, 0, 0.3);
    let s_cross = agreement::support(&cross, &m_cross, 0, 0.3);
    assert!(s_same > 0.0 && s_cross > s_same, "{s_same} vs {s_cross}");
    assert_eq!(agreement::duplicates(&same, 0), (0, 1));
    assert_eq!(agreement::duplicates(&cross, 0), (1, 0));
    // With no down-weighting the two cases are equal.
    assert_eq!(
        agreement::support(&same, &m_same, 0, 1.0),
        agreement::support(&cross, &m_cross, 0, 1.0)
    );
}

/// A change that touches no library code is no fix: scored 1 by rule whatever else it does,
/// whether it only edits tests or only adds a script at the repository's root (an agent's
/// `reproduce_bug.py`, which scored 6.00 above a tests-only change before the rule); a new
/// module inside the package is library code.
#[test]
fn a_change_touching_no_library_code_scores_one_by_rule() {
    let script = "--- /dev/null\n+++ b/reproduce_bug.py\n@@ -0,0 +1,2 @@\n+from pkg import m\n+print(m.f())\n";
    let module =
        "--- /dev/null\n+++ b/pkg/helpers.py\n@@ -0,0 +1,2 @@\n+def g(x):\n+    return x\n";
    let docs = diff("docs/usage.rst", "old words", "new words");
    let list = [
        ("a", diff("pkg/m.py", "return a", "return b")),
        (
            "b",
            diff("tests/test_m.py", "assert f() == 1", "assert f() == 2"),
        ),
        ("c", script.to_string()),
        (
            "d",
            format!("{script}{}", diff("tests/test_m.py", "x", "y")),
        ),
        ("e", module.to_string()),
        ("f", docs),
    ];
    let s = scores(Weights::default(), "", &list);
    for (i, who) in [
        (1, "tests only"),
        (2, "a root script"),
        (3, "a root script and tests"),
        (5, "docs only"),
    ] {
        assert_eq!(s[i], 1.0, "{who}: {s:?}");
    }
    assert!(
        s[0] > 1.0 && s[4] > 1.0,
        "library changes are reviewed: {s:?}"
    );
    let f = features::from_diff(&cand("c", script));
    assert!(f.scored_by_rule() && f.by_rule.as_deref().unwrap().contains("no library code"));
}

#[test]
fn debug_prints_are_penalized() {
    let list = [
        ("a", diff("pkg/m.py", "return a", "return b")),
        (
            "b",
            diff("tests/test_m.py", "assert f() == 1", "assert f() == 2"),
        ),
        ("c", diff("pkg/m.py", "return a", "print(a)")),
    ];
    let w = Weights {
        agreement: 0.0,
        ..Weights::default()
    };
    let s = scores(w, "", &list);
    assert!(s[0] > s[2], "debug print penalized: {s:?}");
}

#[test]
fn ties_stay_exact_whatever_the_order() {
    let a = diff("pkg/m.py", "return a", "return b");
    let b = diff("pkg/n.py", "y = 1", "y = 2");
    let c = diff("pkg/o.py", "z = 1", "z = 2");
    let one = scores(
        Weights::default(),
        "",
        &[("a", a.clone()), ("b", b.clone()), ("c", c.clone())],
    );
    let two = scores(Weights::default(), "", &[("c", c), ("a", a), ("b", b)]);
    assert_eq!(one[0], two[1]);
    assert_eq!(one[1], two[2]);
    assert_eq!(one[2], two[0]);
    // Three equally lonely one-line candidates are a real tie.
    assert_eq!(one[0], one[1]);
    assert_eq!(one[1], one[2]);
}

#[test]
fn empty_scores_lowest_and_not_applying_below_applying() {
    let fix = diff("pkg/m.py", "return a", "return b");
    let mut fs = feats(&[
        ("a", fix.clone()),
        ("b", fix.replace("return b", "return c")),
        ("e", String::new()),
    ]);
    fs[1].applies = Some(Applies::No);
    let ev = Evidence::new(&task(""), fs);
    let s: Vec<f64> = Offline::default()
        .score(&ev)
        .into_iter()
        .map(|(s, _)| s.value)
        .collect();
    assert!(s[0] > s[1] && s[1] > s[2], "{s:?}");
    assert_eq!(s[2], 1.0);
}

#[test]
fn location_evidence_from_issue_text_and_traceback() {
    let text = "Traceback:\n  File \"/usr/lib/python3/site-packages/pkg/models.py\", line 3, in prepare_body\nValueError".to_string();
    let m = dei::localize::issue::IssueRefs::new(&text);
    let f = features::from_diff(&cand(
        "a",
        "--- a/pkg/models.py\n+++ b/pkg/models.py\n@@ -1 +1 @@ def prepare_body(self):\n-a\n+b\n",
    ));
    assert_eq!(location::location(&f, &m), (true, true));
    let g = features::from_diff(&cand("b", &diff("pkg/other.py", "a", "b")));
    assert_eq!(location::location(&g, &m), (false, false));
    // `prepare_body` edited in a file the issue does not name: a word that matches a short
    // name says nothing without its file.
    let h = features::from_diff(&cand(
        "c",
        "--- a/pkg/other.py\n+++ b/pkg/other.py\n@@ -1 +1 @@ def prepare_body(self):\n-a\n+b\n",
    ));
    assert_eq!(location::location(&h, &m), (false, false));
    // Both files edited: the named file counts, the definition only where it lies in it.
    let both = features::from_diff(&cand(
        "d",
        "--- a/pkg/other.py\n+++ b/pkg/other.py\n@@ -1 +1 @@ def prepare_body(self):\n-a\n+b\n\
         --- a/pkg/models.py\n+++ b/pkg/models.py\n@@ -1 +1 @@ def send(self):\n-a\n+b\n",
    ));
    assert_eq!(location::location(&both, &m), (true, false));
    let ev = Evidence::new(&task(&text), vec![f, g]);
    let w = Weights {
        agreement: 0.0,
        ..Weights::default()
    };
    let s: Vec<f64> = Offline::new(w)
        .score(&ev)
        .into_iter()
        .map(|(s, _)| s.value)
        .collect();
    assert!(s[0] > s[1], "edits what the issue names: {s:?}");
}

#[test]
fn larger_and_scattered_than_the_others() {
    let small = diff("pkg/m.py", "return a", "return b");
    let big: String = format!(
        "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,1 +1,9 @@\n-return a\n{}--- a/pkg/n.py\n+++ b/pkg/n.py\n@@ -1 +1 @@\n-q\n+r\n--- a/pkg/o.py\n+++ b/pkg/o.py\n@@ -1 +1 @@\n-q\n+r\n",
        (0..8).map(|i| format!("+line{i}\n")).collect::<String>()
    );
    let fs = feats(&[
        ("a", small.clone()),
        ("b", small.replace('b', "c")),
        ("c", big),
    ]);
    let (large, scatter) = shape::shape(&fs, 2);
    assert!(large >= 2.0, "{large}");
    assert_eq!(scatter, 2.0);
    assert_eq!(shape::shape(&fs, 0).0, 0.0);
}

/// Landing a hunk with fuzz (as the SWE-bench harness applies patches too) weighs nothing:
/// the same change scores the same whether it applies exactly or only with fuzz, and the
/// reason still says so.
#[test]
fn fuzz_weighs_nothing_but_is_said() {
    let fix = diff("pkg/m.py", "return a", "return b");
    let list = [("a", fix.clone()), ("b", fix)];
    let mut fs = feats(&list);
    fs[1].applies = Some(Applies::Fuzzy);
    let ev = Evidence::new(&task(""), fs);
    let s = Offline::new(Weights::default()).score(&ev);
    assert_eq!(s[0].0.value, s[1].0.value, "{s:?}");
    assert!(s[1].1.contains("applies only with fuzz"), "{}", s[1].1);
}

/// A change's size and scatter count its code only: docs and a changelog written with a fix
/// do not make it "larger or more scattered than the others".
#[test]
fn docs_and_changelog_beside_a_fix_are_not_its_size() {
    let fix = diff("pkg/m.py", "return a", "return b");
    let with_docs = format!(
        "{fix}{}{}{}",
        diff("docs/usage.rst", "old", "new"),
        diff("CHANGES.rst", "- x", "- y"),
        diff("doc/whatsnew/1.2.rst", "a", "b")
    );
    let list = [
        ("a", fix.clone()),
        ("b", fix.replace("return b", "return  b")),
        ("c", with_docs),
    ];
    let fs = feats(&list);
    let (largeness, scatter) = shape::shape(&fs, 2);
    assert_eq!((largeness, scatter), (0.0, 0.0));
    assert_eq!(fs[2].source_files, 1, "only pkg/m.py is code");
}
