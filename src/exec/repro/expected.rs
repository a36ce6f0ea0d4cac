//! What the issue says its code should show: the output or value a reporter expects, read from
//! the issue's text (never from the task's tests or answer). Two places say it:
//!
//! - a sentence that names the value after a cue, as inline code: "the output should be
//!   `array([[2, 2], [3, 5]])`", "gives `acsc` instead of `` `arccsc` ``", "I would expect
//!   `True`"; after "should be" and "instead of" also a bare expression with brackets
//!   ("but it should be Dimension(1)");
//! - a fenced block under an "Expected output" / "Expected result" / "Expected behavior"
//!   heading: each line of it (the messages a linter should print, say), unless the block is
//!   code.
//!
//! Whether a candidate shows them is read from the reproduction's output (`exec::gather`): only
//! the items the base run does not already show count, so a value the issue quotes from its
//! own output, or one the script prints anyway, says nothing.

use super::text::{blocks, prose_lines, Source, PY_LANGS};
use crate::exec::outcome::normalize_output;

/// Cues after which an inline-code span names what the code should show.
const CUES: [&str; 22] = [
    "should be",
    "should return",
    "should give",
    "should print",
    "should output",
    "should produce",
    "should yield",
    "should evaluate to",
    "should result in",
    "should become",
    "should equal",
    "should show",
    "should display",
    "should raise",
    "must be",
    "must return",
    "expected output is",
    "expected result is",
    "expected:",
    "i would expect",
    "i'd expect",
    "instead of",
];

/// Cues after which a bare expression (with brackets, no inline-code marks) is taken too.
const BARE_CUES: [&str; 2] = ["should be", "instead of"];

/// Words a span may follow a cue with ("should return the value `x`", "expect it to be `x`").
const FILLER: [&str; 8] = [
    "it", "to", "be", "the", "value", "result", "output", "return",
];

/// Fewest characters (whitespace aside) an item needs: a one- or two-character value (`n`,
/// `0`) turns up in any output.
const MIN_CHARS: usize = 3;

/// What `issue` says its code should show, in order, each once.
pub fn expected_outputs(issue: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if compact(s).chars().count() >= MIN_CHARS && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for line in prose_lines(issue) {
        for item in after_cues(line) {
            push(&item);
        }
    }
    for item in under_expected_heading(issue) {
        push(&item);
    }
    out
}

/// The items one line of prose names after its cues.
fn after_cues(line: &str) -> Vec<String> {
    let lower = line.to_ascii_lowercase();
    let mut out = Vec::new();
    for cue in CUES {
        for (at, _) in lower.match_indices(cue) {
            // A cue is whole words ("expected:" aside).
            let before_ok = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let end = at + cue.len();
            let after_ok = cue.ends_with(':')
                || lower[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric());
            if !before_ok || !after_ok {
                continue;
            }
            let rest = &line[end..];
            if let Some(span) = next_span(rest) {
                out.push(span.to_string());
            } else if BARE_CUES.contains(&cue) {
                if let Some(e) = bare_expression(rest) {
                    out.push(e.to_string());
                }
            }
        }
    }
    out
}

/// The inline-code span `rest` starts with, after spaces, a colon and filler words.
fn next_span(rest: &str) -> Option<&str> {
    let mut r = rest.trim_start_matches([' ', ':', '\t']);
    loop {
        let word_end = r
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(r.len());
        let word = r[..word_end].to_ascii_lowercase();
        if word_end == 0 || !FILLER.contains(&word.as_str()) {
            break;
        }
        r = r[word_end..].trim_start_matches([' ', ':', '\t']);
    }
    let inner = r.strip_prefix('`')?;
    if inner.starts_with('`') {
        // A double-backtick span: ``x``.
        let body = inner.strip_prefix('`')?;
        let close = body.find("``")?;
        return Some(body[..close].trim());
    }
    let close = inner.find('`')?;
    Some(inner[..close].trim())
}

/// A bare expression `rest` starts with (after spaces): its run up to a space outside brackets,
/// with trailing punctuation dropped, kept only when it has balanced brackets (`Dimension(1)`,
/// `D[f[t],t]`): a word or a phrase is prose.
fn bare_expression(rest: &str) -> Option<&str> {
    let r = rest.trim_start();
    let mut depth: i32 = 0;
    let mut end = r.len();
    let mut brackets = false;
    for (i, c) in r.char_indices() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                brackets = true;
            }
            ')' | ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            c if c.is_whitespace() && depth == 0 => {
                end = i;
                break;
            }
            _ => {}
        }
    }
    let e = r[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
    let first = e.chars().next()?;
    (brackets && depth == 0 && (first.is_alphanumeric() || "([{-".contains(first))).then_some(e)
}

/// Whether a prose line is a heading saying what is expected ("### Expected behavior",
/// "**Expected output**", "Expected result:").
fn expected_heading(line: &str) -> bool {
    let t = line
        .trim()
        .trim_start_matches('#')
        .trim_matches(|c: char| c == '*' || c == '_' || c == ':' || c.is_whitespace())
        .to_ascii_lowercase();
    [
        "expected",
        "expected output",
        "expected result",
        "expected results",
        "expected outcome",
        "expected behavior",
        "expected behaviour",
    ]
    .contains(&t.as_str())
}

/// A line that starts a new part of the issue: a Markdown heading or a line in bold alone.
fn heading(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('#') || (t.starts_with("**") && t.ends_with("**") && t.len() > 4)
}

/// The lines of the first fenced block under an "Expected …" heading (before the next
/// heading), when the block is output, not code: prompts and commands dropped; a block tagged
/// Python without a session prompt is code.
fn under_expected_heading(issue: &str) -> Vec<String> {
    let lines: Vec<&str> = issue.lines().map(|l| l.trim_end_matches('\r')).collect();
    let prose = prose_lines(issue);
    let fenced: Vec<_> = blocks(issue)
        .into_iter()
        .filter(|b| b.source == Source::Fenced)
        .collect();
    let mut out = Vec::new();
    for (k, line) in prose.iter().enumerate() {
        if !expected_heading(line) {
            continue;
        }
        // The section runs to the next heading in the prose.
        let section_end = (k + 1..prose.len())
            .find(|&j| heading(prose[j]))
            .unwrap_or(lines.len());
        let Some(b) = fenced
            .iter()
            .find(|b| b.line > k + 1 && b.line <= section_end)
        else {
            continue;
        };
        let session = b
            .text
            .lines()
            .any(|l| l.trim_start().starts_with(">>>") || l.trim_start().starts_with("In ["));
        if PY_LANGS.contains(&b.lang.as_str()) && !session {
            continue;
        }
        for l in b.text.lines() {
            let t = l.trim();
            let prompt = [">>>", "...", "In [", "$ ", "% "]
                .iter()
                .any(|p| t.starts_with(p));
            if !t.is_empty() && !prompt {
                out.push(t.to_string());
            }
        }
    }
    out
}

/// `s` without whitespace: how items and outputs are compared, so a value wrapped or spaced
/// otherwise (`Matrix([[1, 2]])` against `Matrix([[1,2]])`) still matches.
fn compact(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The forms of an item to look for in an output (compacted): as written; without enclosing
/// quotes (a repr quoted in the issue, printed bare); with doubled backslashes halved (a repr's
/// escapes, printed).
fn forms(item: &str) -> Vec<String> {
    let c = compact(item);
    let mut v = vec![c.clone()];
    for q in ['\'', '"'] {
        if c.len() >= 2 && c.starts_with(q) && c.ends_with(q) {
            v.push(c[1..c.len() - 1].to_string());
        }
    }
    for i in 0..v.len() {
        if v[i].contains("\\\\") {
            v.push(v[i].replace("\\\\", "\\"));
        }
    }
    v
}

/// What `issue` says its code should show ([`expected_outputs`]) that the reproduction's base
/// run, which printed `base_output` (normalized), does not show: each item read as outputs are
/// read ([`normalize_output`]: a warning's line number hidden, addresses, …).
pub fn unshown_at_base(issue: &str, base_output: &str) -> Vec<String> {
    let base = compact(base_output);
    expected_outputs(issue)
        .into_iter()
        .map(|item| normalize_output(&item, &[]).trim().to_string())
        .filter(|item| !shows(&base, item))
        .collect()
}

/// How many of `items` ([`unshown_at_base`]) a run that printed `output` (normalized) shows.
pub fn count_shown(items: &[String], output: &str) -> usize {
    let printed = compact(output);
    items.iter().filter(|i| shows(&printed, i)).count()
}

/// Whether `output` shows `item` in one of its [`forms`].
fn shows(output_compact: &str, item: &str) -> bool {
    forms(item)
        .iter()
        .any(|f| !f.is_empty() && output_compact.contains(f.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_values_after_cues_are_read() {
        let issue = "`latex(acsc(x), inv_trig_style=\"full\")` gives `'\\\\operatorname{acsc}{\\\\left (x \\\\right )}'` instead of `'\\\\operatorname{arccsc}{\\\\left (x \\\\right )}'`\n";
        assert_eq!(
            expected_outputs(issue),
            vec!["'\\\\operatorname{arccsc}{\\\\left (x \\\\right )}'"]
        );
        let issue = "Instead, the output should be  `array([[2, 2], [3, 5]])`, since ...\n";
        assert_eq!(expected_outputs(issue), vec!["array([[2, 2], [3, 5]])"]);
        let issue = "The documentation states that it should return `ComplexInfinity`, aka `zoo`";
        assert_eq!(expected_outputs(issue), vec!["ComplexInfinity"]);
        assert_eq!(
            expected_outputs("I would expect it to be `True` here."),
            vec!["True"]
        );
    }

    #[test]
    fn bare_expressions_need_brackets_and_short_values_are_dropped() {
        let issue = "ValueError: Dimension of \"exp(second/(farad*ohm))\" is Dimension(time), but it should be Dimension(1)\n";
        assert_eq!(expected_outputs(issue), vec!["Dimension(1)"]);
        // Prose after the cue is no value.
        assert!(expected_outputs("It should be shown.\nThis should be easy to fix.").is_empty());
        // A one-character value is in any output.
        assert!(expected_outputs("the result was 0 while `n` should be `n`").is_empty());
        // Not a cue inside a word.
        assert!(expected_outputs("it shouldbe `abc`").is_empty());
    }

    #[test]
    fn a_block_under_an_expected_heading_gives_its_lines() {
        // pylint-5859's shape: the messages pylint should print, under "Expected behavior".
        let issue = "### Current behavior\n\n```\n************* Module test\ntest.py:1:1: W0511: YES: yes (fixme)\n```\n\n### Expected behavior\n\n```\n************* Module test\ntest.py:1:1: W0511: YES: yes (fixme)\ntest.py:2:1: W0511: ???: no (fixme)\n```\n\n### Pylint version\n\n```shell\npylint 2.12.2\n```\n";
        assert_eq!(
            expected_outputs(issue),
            vec![
                "************* Module test",
                "test.py:1:1: W0511: YES: yes (fixme)",
                "test.py:2:1: W0511: ???: no (fixme)",
            ]
        );
        // Code under the heading is not output; nor is a block past the next heading.
        let code = "**Expected behavior**\n```python\nx = f(1)\nprint(x)\n```\n";
        assert!(expected_outputs(code).is_empty());
        let later = "**Expected behavior**\nIt works.\n\n**Environment**\n```\nLinux 5.4\n```\n";
        assert!(expected_outputs(later).is_empty());
        // A session under it gives its outputs, not its prompts.
        let session = "Expected output:\n```\n>>> f(2)\n4.00000\n```\n";
        assert_eq!(expected_outputs(session), vec!["4.00000"]);
    }

    #[test]
    fn an_output_shows_an_item_in_any_of_its_forms() {
        let out = compact("'\\\\operatorname{arccsc}{\\\\left (x \\\\right )}'\n");
        assert!(shows(
            &out,
            "'\\\\operatorname{arccsc}{\\\\left (x \\\\right )}'"
        ));
        // Printed bare: no quotes, single backslashes.
        let printed = compact("\\operatorname{arccsc}{\\left (x \\right )}\n");
        assert!(shows(
            &printed,
            "'\\\\operatorname{arccsc}{\\\\left (x \\\\right )}'"
        ));
        assert!(!shows(
            &printed,
            "'\\\\operatorname{acsc}{\\\\left (x \\\\right )}'"
        ));
        // Spaced otherwise.
        assert!(shows(&compact("Matrix([[1,2]])"), "Matrix([[1, 2]])"));
    }

    #[test]
    fn items_the_base_run_shows_are_dropped_and_items_are_read_as_outputs_are() {
        let issue = "It should be `[2, 3]` instead of `[3, 4]`.\n### Expected output\n```\n/tmp/x/test.py:2:1: W0511\n```\n";
        let items = unshown_at_base(issue, "[3, 4]\n");
        // The warning's line number is hidden, as in the outputs.
        assert_eq!(items, vec!["[2, 3]", "<tmp>:?:1: W0511"]);
        assert_eq!(count_shown(&items, "[2, 3]\n"), 1);
        assert_eq!(count_shown(&items, "[2,3]\n<tmp>:?:1: W0511\n"), 2);
        assert_eq!(count_shown(&items, "[3, 4]\n"), 0);
    }
}
