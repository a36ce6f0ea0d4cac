//! Issue-only localization never panics, whatever the issue text: arbitrary strings, and
//! issue-shaped text (titles, `<details>`, comments, tracebacks, prompts, code) cut anywhere.

use dei::localize::search::{locate, FileIndex, LocateOptions, Weights};
use proptest::prelude::*;

fn repo() -> FileIndex {
    FileIndex::from_pairs(vec![
        (
            "pkg/core.py".into(),
            "class Mod:\n    def eval(p, q):\n        if p.is_Pow and p.exp.is_Integer:\n            return 0\n".into(),
        ),
        ("pkg/ascii/rst.py".into(), "class RST:\n    pass\n".into()),
        (
            "tests/test_core.py".into(),
            "def test_mod():\n    assert Mod(4, 2) == 0\n".into(),
        ),
        ("pkg/émoji_ü.py".into(), "def ü():\n    return 'ß'\n".into()),
    ])
}

const PIECES: [&str; 12] = [
    "Mod(x**2, x) is wrong\n",
    "<details><summary>pip list</summary>\n",
    "</details>",
    "<!-- template -->",
    "<!-- unterminated",
    "Traceback (most recent call last):\n  File \"/x/pkg/core.py\", line 3, in eval\n",
    ">>> Mod(4, 2)\n",
    "In [3]: r.subs(b, a)\n",
    "    if p.is_Pow and p.exp.is_Integer:\n",
    "format=\"ascii.rst\" ",
    "ü ß 漢字 \u{0} \r\n",
    "man page",
];

fn every_signal() -> LocateOptions {
    LocateOptions {
        weights: Weights::default()
            .with("code_line", 1.0)
            .with("fn_code_line", 1.0)
            .with("details", 0.5),
        ..LocateOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(issue in "\\PC{0,300}") {
        let loc = locate(&issue, &repo(), &every_signal());
        prop_assert!(loc.files.iter().all(|f| f.score.is_finite()));
    }

    #[test]
    fn issue_shaped_text_cut_anywhere_never_panics(
        picks in proptest::collection::vec(0..PIECES.len(), 0..12),
        cut in 0usize..400,
    ) {
        let text: String = picks.iter().map(|&i| PIECES[i]).collect();
        let end = (0..=cut.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let loc = locate(&text[..end], &repo(), &every_signal());
        prop_assert!(loc.functions.iter().all(|f| f.score.is_finite()));
    }
}
