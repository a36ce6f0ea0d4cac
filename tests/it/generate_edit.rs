//! The fuzzy search/replace matcher: indentation drift, CRLF, missing lines, ambiguity.

use dei::generate::diff;
use dei::generate::edit::{apply_block, apply_blocks, parse_blocks, Block, EditError, Placement};

const SRC: &str = "class Reader:\n    def read(self, path):\n        with open(path) as fh:\n            data = fh.read()\n        return data.strip()\n\n    def close(self):\n        self.closed = True\n        return None\n";

fn block(search: &str, replace: &str) -> Block {
    Block {
        path: "r.py".into(),
        search: search.into(),
        replace: replace.into(),
        reply_line: 1,
    }
}

#[test]
fn exact_match() {
    let (out, how) = apply_block(
        Some(SRC),
        &block("        return data.strip()\n", "        return data\n"),
        1,
    )
    .unwrap();
    assert_eq!(how, Some(Placement::Exact));
    assert_eq!(out, SRC.replace("return data.strip()", "return data"));
}

#[test]
fn indentation_drift_is_reindented() {
    // The model dropped the method's indentation in both SEARCH and REPLACE.
    let b = block(
        "def close(self):\n    self.closed = True\n    return None\n",
        "def close(self):\n    if not self.closed:\n        self.closed = True\n    return None\n",
    );
    let (out, how) = apply_block(Some(SRC), &b, 1).unwrap();
    assert_eq!(how, Some(Placement::Whitespace));
    assert!(out.ends_with("    def close(self):\n        if not self.closed:\n            self.closed = True\n        return None\n"), "{out}");
    dei::generate::edit::check_syntax("r.py", Some(SRC), &out).unwrap();
}

#[test]
fn crlf_file_stays_crlf() {
    let crlf = SRC.replace('\n', "\r\n");
    let (out, _) = apply_block(
        Some(&crlf),
        &block("        self.closed = True\n", "        self.closed = 1\n"),
        1,
    )
    .unwrap();
    assert_eq!(
        out,
        SRC.replace("self.closed = True", "self.closed = 1")
            .replace('\n', "\r\n")
    );
    // And the generated diff keeps CRLF so that it applies back.
    let edits = apply_blocks(
        &[block(
            "        self.closed = True\n",
            "        self.closed = 1\n",
        )],
        |_| Some(crlf.clone()),
    )
    .unwrap();
    let d = diff::patch_of(&edits);
    diff::verify(&d, &edits).unwrap();
}

#[test]
fn missing_and_misspelt_lines_still_land() {
    // The model skipped the `with` line and misspelt one line.
    let b = block(
        "    def read(self, path):\n            data = fh.read()\n        return data.strip( )\n",
        "    def read(self, path):\n        with open(path, encoding='utf-8') as fh:\n            data = fh.read()\n        return data.strip()\n",
    );
    let (out, how) = apply_block(Some(SRC), &b, 1).unwrap();
    match how {
        Some(Placement::Similar(r)) => assert!((0.8..1.0).contains(&r), "{r}"),
        other => panic!("expected a similarity placement, got {other:?}"),
    }
    assert!(out.contains("with open(path, encoding='utf-8') as fh:\n            data = fh.read()\n        return data.strip()\n\n    def close"), "{out}");
    assert_eq!(out.matches("def read").count(), 1);
}

#[test]
fn exact_duplicates_are_refused_with_both_places() {
    let src = "def a():\n    x = 1\n    return x\n\ndef b():\n    x = 1\n    return x\n";
    let err = apply_block(
        Some(src),
        &block("    x = 1\n    return x\n", "    return 2\n"),
        3,
    )
    .unwrap_err();
    match &err {
        EditError::Ambiguous { spans, block, .. } => {
            assert_eq!(*block, 3);
            assert_eq!(spans.len(), 2);
            assert_eq!((spans[0].start, spans[1].start), (2, 6));
        }
        e => panic!("expected ambiguity, got {e}"),
    }
    assert!(
        err.to_string().contains("include more surrounding lines"),
        "{err}"
    );
}

#[test]
fn similar_ties_refused_but_clear_winner_chosen() {
    let src = "def a():\n    total = compute(1)\n    return total\n\ndef b():\n    total = compute(2)\n    return total\n";
    // Equally far from both spans: refuse.
    let err = apply_block(
        Some(src),
        &block("    total = compute(3)\n    return total\n", "    pass\n"),
        1,
    )
    .unwrap_err();
    assert!(matches!(err, EditError::Ambiguous { .. }), "{err}");
    // Clearly closer to the second (the model wrote `compute(2, )`): choose it.
    let (out, how) = apply_block(
        Some(src),
        &block(
            "def b():\n    total = compute(2, )\n    return total\n",
            "def b():\n    return 2\n",
        ),
        1,
    )
    .unwrap();
    assert!(matches!(how, Some(Placement::Similar(_))));
    assert!(
        out.ends_with("def b():\n    return 2\n") && out.contains("compute(1)"),
        "{out}"
    );
}

#[test]
fn unrelated_search_is_refused_with_closest_span() {
    let err = apply_block(
        Some(SRC),
        &block("def totally_other(thing):\n    launch(rockets)\n", "x\n"),
        1,
    )
    .unwrap_err();
    match &err {
        EditError::NoMatch { best, .. } => assert!(*best < 0.8),
        e => panic!("expected no match, got {e}"),
    }
}

#[test]
fn edit_that_breaks_syntax_is_rejected_with_position() {
    let reply = "r.py\n<<<<<<< SEARCH\n        self.closed = True\n=======\n        self.closed = (True\n>>>>>>> REPLACE\n";
    let blocks = parse_blocks(reply).unwrap();
    let err = apply_blocks(&blocks, |_| Some(SRC.to_string())).unwrap_err();
    match &err {
        EditError::Syntax { path, line, .. } => {
            assert_eq!(path, "r.py");
            assert!((8..=10).contains(line), "{err}");
        }
        e => panic!("expected a syntax error, got {e}"),
    }
}

#[test]
fn new_file_and_missing_file() {
    let edits = apply_blocks(
        &parse_blocks("pkg/new.py\n<<<<<<< SEARCH\n=======\nVALUE = 1\n>>>>>>> REPLACE\n").unwrap(),
        |_| None,
    )
    .unwrap();
    assert_eq!(edits[0].after, "VALUE = 1\n");
    assert!(edits[0].before.is_none());
    let d = diff::patch_of(&edits);
    diff::verify(&d, &edits).unwrap();
    let err = apply_blocks(&[block("x\n", "y\n")], |_| None).unwrap_err();
    assert!(matches!(err, EditError::MissingFile { .. }));
}
