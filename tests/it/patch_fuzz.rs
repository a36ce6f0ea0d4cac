//! Property tests: no input makes the parsers, the apply engine or the views panic.

use dei::model::Candidate;
use dei::patch::{self, Files, Mode};
use proptest::prelude::*;

const REAL: &str = "diff --git a/pkg/m.py b/pkg/m.py\nindex 1a2b3c4..5d6e7f8 100644\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,4 +1,5 @@ def f(x):\n a\n-b\n+B\n+b2\n c\n d\n@@ -8,3 +9,3 @@ class K:\n h\n-i\n+I\n j\n\\ No newline at end of file\ndiff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\ndiff --git a/old.py b/gone.py\nsimilarity index 90%\nrename from old.py\nrename to gone.py\nold mode 100644\nnew mode 100755\ndiff --git a/img.png b/img.png\nindex 1234567..89abcde 100644\nBinary files a/img.png and b/img.png differ\n";

fn base() -> Files {
    let mut b = Files::new();
    b.insert(
        "pkg/m.py".into(),
        Some("a\nb\nc\nd\ne\nf\ng\nh\ni\nj".into()),
    );
    b.insert("old.py".into(), Some("o\r\np\r\n".into()));
    b
}

fn exercise(text: &str) {
    let _ = patch::parse(text);
    let _ = patch::parse_git(text);
    let _ = patch::normalize::normalize_text(text);
    let c = Candidate {
        instance_id: "i".into(),
        agent: "a".into(),
        patch: text.into(),
        resolved: None,
        origin: Default::default(),
    };
    let _ = patch::paths_needed(&c);
    for mode in [Mode::Strict, Mode::Tolerant] {
        let v = patch::rebuild(&c, &base(), mode);
        for f in &v.files {
            assert_eq!(f.hunks.len(), f.hunk_info.len());
            for ctx in [0, 3] {
                let _ = patch::hunk_views(f, ctx);
            }
        }
    }
}

/// A line of diff-ish text: header fragments, hunk lines, CR, multibyte characters.
fn diff_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("diff --git a/pkg/m.py b/pkg/m.py".to_string()),
        Just("--- a/pkg/m.py".to_string()),
        Just("+++ b/pkg/m.py".to_string()),
        Just("--- /dev/null".to_string()),
        Just("new file mode 100644".to_string()),
        Just("deleted file mode 100644".to_string()),
        Just("rename from old.py".to_string()),
        Just("rename to x/y.py".to_string()),
        Just("\\ No newline at end of file".to_string()),
        Just("GIT binary patch".to_string()),
        (0usize..12, 0usize..5, 0usize..12, 0usize..5)
            .prop_map(|(a, b, c, d)| format!("@@ -{a},{b} +{c},{d} @@ def f():")),
        "[ +\\-]?[a-j]{0,3}\r?".prop_map(|s| s),
        "\\PC{0,12}",
        Just(String::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC*") {
        exercise(&s);
    }

    #[test]
    fn diff_shaped_inputs_never_panic(lines in prop::collection::vec(diff_line(), 0..30), crlf in any::<bool>()) {
        let sep = if crlf { "\r\n" } else { "\n" };
        exercise(&lines.join(sep));
    }

    #[test]
    fn mutated_real_diffs_never_panic(cuts in prop::collection::vec((0usize..REAL.len(), 0usize..4, "\\PC{0,3}"), 1..6)) {
        let mut text = REAL.as_bytes().to_vec();
        for (at, del, ins) in cuts {
            let at = at.min(text.len());
            let end = (at + del).min(text.len());
            text.splice(at..end, ins.bytes());
        }
        exercise(&String::from_utf8_lossy(&text));
    }
}

#[test]
fn the_real_diff_itself_parses_both_ways() {
    let p = patch::parse(REAL).unwrap();
    assert_eq!(p.files.len(), 4);
    assert!(p.files[2].is_rename && p.files[3].binary);
    let g = patch::parse_git(REAL).unwrap();
    assert_eq!(g.files.len(), 4);
    assert_eq!(g.files[2].new_mode, Some(0o100755));
}
