//! Stage 8: what people and programs read: the ranked table and JSON.
//!
//! The table uses the JSON's words (`clean`, `fuzzy`, `no: too large`, `reviewed`, …), so what
//! a person reads and what a program reads never disagree.

use crate::model::ReviewStatus;
use crate::rank::pipeline::{IssueStatus, RankResult, Ranked};

/// The columns `s` takes on a terminal: wide characters (CJK, most emoji) take two, combining
/// marks none, so tables line up whatever the names are written in.
pub fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

fn char_width(c: char) -> usize {
    unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
}

/// `s` padded with spaces to `w` columns.
pub fn pad(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(display_width(s))))
}

/// The longest start of `chars` that fits in `w` columns.
fn fitting(chars: impl Iterator<Item = char>, w: usize) -> Vec<char> {
    let mut used = 0;
    chars
        .take_while(|&c| {
            used += char_width(c);
            used <= w
        })
        .collect()
}

/// Cut `s` to `n` columns at its end (`abc…`).
pub fn truncate(s: &str, n: usize) -> String {
    if display_width(s) <= n {
        return s.to_string();
    }
    let mut t: String = fitting(s.chars(), n.saturating_sub(1))
        .into_iter()
        .collect();
    t.push('…');
    t
}

/// Cut `s` to `n` columns in its middle (`gpt-4-01…acr-run-3`), so that names sharing a
/// long prefix stay apart.
pub fn truncate_middle(s: &str, n: usize) -> String {
    if display_width(s) <= n {
        return s.to_string();
    }
    if n < 3 {
        return fitting(s.chars(), n).into_iter().collect();
    }
    let tail_w = (n - 1) / 2;
    let head_w = n - 1 - tail_w;
    let head = fitting(s.chars(), head_w);
    let mut tail = fitting(s.chars().rev(), tail_w);
    tail.reverse();
    head.iter().chain(['…'].iter()).chain(tail.iter()).collect()
}

/// The `applies` cell: the JSON's word, with the short reason when it does not apply.
pub fn applies_cell(r: &Ranked) -> String {
    match r.apply_failure {
        Some(why) => format!("{}: {why}", r.applies.label()),
        None => r.applies.label().to_string(),
    }
}

/// The `score` cell: two decimals, `-` when unscored.
pub fn score_cell(r: &Ranked) -> String {
    match (r.status, r.score) {
        (ReviewStatus::Unscored, _) | (_, None) => "-".to_string(),
        (_, Some(s)) => format!("{s:.2}"),
    }
}

/// One line on what the pick rests on (`--exec`).
pub fn basis_line(b: crate::rank::health::Basis) -> String {
    format!("pick rests on: {} ({})\n", b.word(), b.meaning())
}

/// Most changed lines of the pick's reproduction shown under the table.
const PICK_LINES_SHOWN: usize = 8;

/// What the pick's reproduction printed against the base commit, as changed lines (`- base`,
/// `+ the pick`, at most [`PICK_LINES_SHOWN`], then a count): what a reader checks before
/// trusting an `agreement` or `alone` pick. Empty when the pick's run prints as the base run
/// does, or what they printed is not kept (see `IssueExec::repro_output`).
pub fn pick_repro_lines(base: &str, pick: &str) -> String {
    let diff = similar::TextDiff::from_lines(base, pick);
    let changed: Vec<String> = diff
        .iter_all_changes()
        .filter_map(|c| {
            let sign = match c.tag() {
                similar::ChangeTag::Delete => '-',
                similar::ChangeTag::Insert => '+',
                similar::ChangeTag::Equal => return None,
            };
            Some(format!("  {sign} {}", c.value().trim_end_matches('\n')))
        })
        .collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("the pick's reproduction against the base commit (- base, + the pick):\n");
    for l in changed.iter().take(PICK_LINES_SHOWN) {
        out.push_str(l);
        out.push('\n');
    }
    if changed.len() > PICK_LINES_SHOWN {
        out.push_str(&format!(
            "  … and {} more changed lines (--json: exec.repro_output, behaviour.repro_output)\n",
            changed.len() - PICK_LINES_SHOWN
        ));
    }
    out
}

/// One line on what `--exec` ran for the issue, or why nothing ran.
fn exec_line(e: &crate::exec::gather::IssueExec) -> String {
    if let Some(why) = &e.error {
        let first = why.lines().next().unwrap_or_default();
        return format!("execution: nothing ran: {first}\n");
    }
    let tests = if e.test_files.is_empty() {
        "no existing test reaches the edits".to_string()
    } else if let Some(why) = &e.tests_unread {
        format!("{why} (dei reads the per-test lines of pytest and of unittest -v: check the test command, and that the environment installs its runner)")
    } else {
        let mut left_out = Vec::new();
        if !e.flaky_tests.is_empty() {
            left_out.push(format!("{} flaky", e.flaky_tests.len()));
        }
        if !e.slow_files.is_empty() {
            left_out.push(format!(
                "{} over half the time limit at base: {}",
                e.slow_files.len(),
                e.slow_files.join(", ")
            ));
        }
        for t in &e.trimmed_files {
            left_out.push(format!(
                "the {} slowest test{} of {} ({:.0} of its {:.0} s at base, over {:.0} s)",
                t.left_out.len(),
                if t.left_out.len() == 1 { "" } else { "s" },
                t.file,
                t.left_out_seconds,
                t.seconds,
                t.gate
            ));
        }
        for n in &e.narrowed_files {
            let why = if n.for_time() {
                let whole = match n.seconds {
                    Some(s) => format!("{s:.0} s whole at base"),
                    None => "stopped whole at base before it ended".to_string(),
                };
                format!(
                    "{whole}, over its {:.0} s gate, which grows with --exec-timeout",
                    n.gate
                )
            } else {
                "no test passed whole at base".to_string()
            };
            left_out.push(format!(
                "all but the {} test{} naming the edits of {} ({why})",
                n.tests,
                if n.tests == 1 { "" } else { "s" },
                n.file
            ));
        }
        format!(
            "{} test{} passing twice at the base commit in {}{}",
            e.stable_tests,
            if e.stable_tests == 1 { "" } else { "s" },
            e.test_files.join(", "),
            if left_out.is_empty() {
                String::new()
            } else {
                format!(" (left out: {})", left_out.join("; "))
            }
        )
    };
    let unsteady = if e.repro_output_unstable {
        ", printing differently each time (only how its runs end is compared)"
    } else {
        ""
    };
    let repro = match (&e.repro_base, &e.repro_from) {
        (Some(base), _) if base.starts_with("not used: ") => {
            format!("the issue's code is not used ({})", &base["not used: ".len()..])
        }
        (Some(base), Some(from)) => format!(
            "no usable code in the issue; an agent's reproduction script ({from}) {base} at the base commit{unsteady}"
        ),
        (Some(base), None) => format!("the issue's code {base} at the base commit{unsteady}"),
        (None, _) => "no runnable code in the issue".to_string(),
    };
    let mut line = format!(
        "execution: {tests}; {repro}; {} behaviour class{}; {} sandbox run{} ({} from the cache)\n",
        e.classes,
        if e.classes == 1 { "" } else { "es" },
        e.runs,
        if e.runs == 1 { "" } else { "s" },
        e.cached_runs
    );
    if let Some(note) = &e.env_commit {
        line.push_str(&format!("environment: {note}\n"));
    }
    if !e.extras.is_empty() {
        line.push_str(&format!(
            "environment: with {} installed for the issue's code (at the base commit it stopped on importing {})\n",
            e.extras.join(", "),
            if e.extras.len() == 1 { "it" } else { "them" }
        ));
    }
    if let Some(why) = &e.extras_failed {
        line.push_str(&format!("environment: {why}\n"));
    }
    if let Some(m) = &e.model_test {
        line.push_str(&model_test_line(m, e));
    }
    if let Some(first) = e.expected.first() {
        let (all, ran) = tally(&e.behaviour, |b| b.expected.map(|x| x.shown == x.of));
        let n = e.expected.len();
        let more = if n > 1 {
            format!(" (and {} more)", n - 1)
        } else {
            String::new()
        };
        let first: String = first.chars().take(80).collect();
        line.push_str(&format!(
            "execution: the issue expects its code to show `{first}`{more}, which the base run does not; {all} of {ran} candidate{} show{} {}\n",
            if ran == 1 { "" } else { "s" },
            if ran == 1 { "s" } else { "" },
            if n == 1 { "it" } else { "them all" }
        ));
    }
    for w in &e.written_tests {
        let (pass, ran) = tally(&e.behaviour, |b| b.written.get(&w.family).copied());
        let more = match w.tests.len() {
            0 | 1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        line.push_str(&format!(
            "execution: {}{more}, a test {} wrote, fails at the base commit; {pass} of {ran} candidate{} pass{}\n",
            w.tests.first().map(String::as_str).unwrap_or("?"),
            w.agent,
            if ran == 1 { "" } else { "s" },
            if w.tests.len() == 1 { " it" } else { " them all" }
        ));
    }
    if e.tests_set_aside > 0 {
        line.push_str(&format!(
            "execution: {}; those edits were set aside, and the tests ran as at the base commit\n",
            edit_the_tests(e.tests_set_aside)
        ));
    }
    if !e.not_isolated.is_empty() {
        line.push_str(&format!(
            "execution: not isolated on this machine: {}\n",
            e.not_isolated.join("; ")
        ));
    }
    line
}

/// `n candidates edit the repository's tests` (their edits set aside), for the issue's
/// execution lines and the run's summary.
pub(crate) fn edit_the_tests(n: usize) -> String {
    format!(
        "{n} candidate{} edit{} the repository's tests",
        if n == 1 { "" } else { "s" },
        if n == 1 { "s" } else { "" },
    )
}

/// Over the candidates that ran: how many `outcome` says yes to, of those it says anything.
fn tally(
    behaviour: &[Option<crate::model::Behaviour>],
    outcome: impl Fn(&crate::model::Behaviour) -> Option<bool>,
) -> (usize, usize) {
    behaviour
        .iter()
        .flatten()
        .filter_map(outcome)
        .fold((0, 0), |(yes, n), ok| (yes + usize::from(ok), n + 1))
}

/// One line on the model-written reproduction test (`--exec-llm-repro`): `m` is the first
/// kept sample (else the first) of the issue's `e`, which has all of them when several were
/// asked for.
fn model_test_line(
    m: &crate::exec::llm_repro::ModelTestRecord,
    e: &crate::exec::gather::IssueExec,
) -> String {
    use crate::exec::llm_repro::TestStatus;
    use crate::model::ModelTest;
    let why = m.why.as_deref().unwrap_or("no reason given");
    let why = why.lines().next().unwrap_or_default();
    let kept = e.model_tests_kept();
    // With several samples: how many were kept, and which one a reason is about.
    let (what, of) = match e.model_test_samples.len() {
        0 | 1 => ("test".to_string(), String::new()),
        n if kept > 0 => ("tests".to_string(), format!("{kept} of {n} samples ")),
        n => (
            "tests".to_string(),
            format!("none of {n} samples kept; the first "),
        ),
    };
    match m.status {
        TestStatus::NotWritten => format!(
            "execution: model-written {what} ({}): {of}not written: {why}\n",
            m.model
        ),
        TestStatus::Discarded => format!(
            "execution: model-written {what} ({}): {of}discarded: {why}\n",
            m.model
        ),
        TestStatus::Kept => {
            let count = |t: ModelTest| {
                e.behaviour
                    .iter()
                    .flatten()
                    .filter(|b| b.model_test == Some(t))
                    .count()
            };
            format!(
                "execution: model-written {what} ({}): {of}kept (print{} `Issue reproduced` at the base commit); with the candidates{}: {} resolved, {} still reproduced, {} other issues, {} timed out\n",
                m.model,
                if of.is_empty() { "s" } else { "" },
                if kept > 1 { ", by most kept tests" } else { "" },
                count(ModelTest::Resolved),
                count(ModelTest::Reproduced),
                count(ModelTest::Other),
                count(ModelTest::Timeout)
            )
        }
    }
}

/// The ranked table, one line a candidate. `width` is the terminal's width in columns: agent
/// names are cut in the middle and reasons at the end to fit it; `None` (output to a file or
/// pipe) cuts nothing.
pub fn table(result: &RankResult, width: Option<usize>) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} ({}) at {} — {} candidate{}, {} empty, committee: {}\n",
        result.instance_id,
        if result.repo.is_empty() {
            "local repo"
        } else {
            &result.repo
        },
        &result.base_commit[..result.base_commit.len().min(12)],
        result.candidates,
        if result.candidates == 1 { "" } else { "s" },
        result.empty,
        result.committee
    ));
    match result.status {
        IssueStatus::Unreviewed => out.push_str(&format!(
            "NOT REVIEWED: {}\nNo candidate is picked; fix the cause and rerun (answers already received are cached).\n",
            result.unreviewed_reason().unwrap_or_default()
        )),
        IssueStatus::DryRun => out.push_str(
            "dry run: the prompts were printed and no model was asked; what follows is not a result.\n",
        ),
        IssueStatus::Ranked => {}
    }
    if let Some(e) = &result.exec {
        out.push_str(&exec_line(e));
    }
    if let Some(b) = result.pick_basis {
        out.push_str(&basis_line(b));
    }
    let base = result.exec.as_ref().and_then(|e| e.repro_output.as_deref());
    let pick = result
        .ranked
        .first()
        .filter(|r| r.rank == 1)
        .and_then(|r| r.behaviour.as_ref())
        .and_then(|b| b.repro_output.as_deref());
    if let (Some(base), Some(pick)) = (base, pick) {
        out.push_str(&pick_repro_lines(base, pick));
    }
    out.push('\n');
    let agent_len = result
        .ranked
        .iter()
        .map(|r| display_width(&r.agent))
        .max()
        .unwrap_or(5)
        .max(5);
    let agent_w = match width {
        Some(w) => agent_len.min((w / 3).max(20)),
        None => agent_len,
    };
    let cells: Vec<(String, String)> = result
        .ranked
        .iter()
        .map(|r| {
            let files = if r.files.is_empty() {
                "-".to_string()
            } else {
                r.files.join(",")
            };
            (applies_cell(r), files)
        })
        .collect();
    let applies_w = cells
        .iter()
        .map(|(a, _)| display_width(a))
        .max()
        .unwrap_or(0)
        .max("applies".len());
    let files_w = cells
        .iter()
        .map(|(_, f)| display_width(f))
        .max()
        .unwrap_or(0)
        .clamp("files".len(), 30);
    let show_resolved = result.ranked.iter().any(|r| r.resolved.is_some());
    let resolved_w = if show_resolved { 10 } else { 0 };
    // rank, agent, score, applies, files, [resolved,] reason, two spaces between columns.
    let mut agent_w = agent_w;
    let mut files_w = files_w;
    let used = |agent_w: usize, files_w: usize| {
        4 + 2 + agent_w + 2 + 5 + 2 + applies_w + 2 + files_w + 2 + resolved_w
    };
    // A narrow terminal takes room from the files, then the agents, before the reasons.
    const REASON_MIN: usize = 24;
    if let Some(w) = width {
        let mut deficit = (used(agent_w, files_w) + REASON_MIN).saturating_sub(w);
        let take = deficit.min(files_w.saturating_sub(10));
        files_w -= take;
        deficit -= take;
        agent_w -= deficit.min(agent_w.saturating_sub(12));
    }
    let reason_w = width.map(|w| w.saturating_sub(used(agent_w, files_w)).max(REASON_MIN));
    out.push_str(&format!(
        "{:>4}  {:<agent_w$}  {:>5}  {:<applies_w$}  {:<files_w$}  {}{}\n",
        "rank",
        "agent",
        "score",
        "applies",
        "files",
        if show_resolved { "resolved  " } else { "" },
        "reason"
    ));
    for (r, (applies, files)) in result.ranked.iter().zip(cells) {
        let rank = if r.tied > 1 {
            format!("={}", r.rank)
        } else {
            r.rank.to_string()
        };
        let resolved = match (show_resolved, r.resolved) {
            (false, _) => String::new(),
            (true, Some(true)) => format!("{:<10}", "yes"),
            (true, Some(false)) => format!("{:<10}", "no"),
            (true, None) => format!("{:<10}", "?"),
        };
        let reason = match reason_w {
            Some(w) => truncate(&r.reason, w),
            None => r.reason.clone(),
        };
        out.push_str(
            format!(
                "{:>4}  {}  {:>5}  {}  {}  {}{}",
                rank,
                pad(&truncate_middle(&r.agent, agent_w), agent_w),
                score_cell(r),
                pad(&applies, applies_w),
                pad(&truncate(&files, files_w), files_w),
                resolved,
                reason
            )
            .trim_end(),
        );
        out.push('\n');
    }
    out.push_str(&pick_line(result));
    if !result.problems.is_empty() {
        out.push_str(&format!(
            "\n{} input problem(s) skipped:\n",
            result.problems.len()
        ));
        for p in result.problems.iter().take(10) {
            out.push_str(&format!("  {p}\n"));
        }
        if result.problems.len() > 10 {
            out.push_str(&format!(
                "  … and {} more (see --json)\n",
                result.problems.len() - 10
            ));
        }
    }
    out
}

/// The line under the table naming the pick and where its patch is (`origin`: the file, and
/// the line of a predictions file); a tie names every candidate sharing the top, and which
/// one `--predictions` submits. Empty when nothing is picked for a reason said above.
pub fn pick_line(result: &RankResult) -> String {
    let top = result.pick();
    let Some(first) = top.first() else {
        return String::new();
    };
    if first.status == ReviewStatus::Rule {
        return format!(
            "\nno pick: no candidate is a fix to submit ({})\n",
            first.reason
        );
    }
    let score = score_cell(first);
    match top.as_slice() {
        [one] => format!(
            "\npick: {} (score {score}), its patch in {}\n",
            one.agent, one.origin
        ),
        many => format!(
            "\npick: a tie at score {score} between {}; --predictions submits the first listed, {} ({})\n",
            many.iter().map(|r| r.agent.as_str()).collect::<Vec<_>>().join(", "),
            first.agent,
            first.origin
        ),
    }
}

/// The machine-readable result.
pub fn json(result: &RankResult) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(result)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_execution_line_says_what_the_tests_gave_and_what_was_left_out() {
        use crate::exec::gather::IssueExec;
        let mut e = IssueExec {
            test_files: vec!["t/test_a.py".into(), "t/test_b.py".into()],
            stable_tests: 5,
            ..IssueExec::default()
        };
        let line = exec_line(&e);
        assert!(
            line.starts_with("execution: 5 tests passing twice at the base commit in t/test_a.py, t/test_b.py; no runnable code"),
            "{line}"
        );
        e.flaky_tests = vec!["t/test_a.py::f".into()];
        e.slow_files = vec!["t/test_b.py".into()];
        let line = exec_line(&e);
        assert!(
            line.contains("in t/test_a.py, t/test_b.py (left out: 1 flaky; 1 over half the time limit at base: t/test_b.py);"),
            "{line}"
        );
        // A file run without its slowest tests says which share of it was left out.
        e.trimmed_files = vec![crate::exec::gather::TrimmedFile {
            file: "t/test_a.py".into(),
            whole: true,
            seconds: 31.2,
            gate: 20.0,
            left_out: vec!["t/test_a.py::slow".into(), "t/test_a.py::slower".into()],
            left_out_seconds: 17.6,
        }];
        let line = exec_line(&e);
        assert!(
            line.contains("t/test_b.py; the 2 slowest tests of t/test_a.py (18 of its 31 s at base, over 20 s));"),
            "{line}"
        );
        e.trimmed_files.clear();
        // A file tried whole and narrowed says how many tests it kept, and why.
        e.narrowed_files = vec![crate::exec::gather::NarrowedFile {
            file: "t/test_a.py".into(),
            seconds: Some(25.4),
            gate: 20.0,
            tests: 3,
        }];
        let line = exec_line(&e);
        assert!(
            line.contains("t/test_b.py; all but the 3 tests naming the edits of t/test_a.py (25 s whole at base, over its 20 s gate, which grows with --exec-timeout));"),
            "{line}"
        );
        e.narrowed_files[0].seconds = None;
        e.narrowed_files[0].tests = 1;
        let line = exec_line(&e);
        assert!(
            line.contains("all but the 1 test naming the edits of t/test_a.py (stopped whole at base before it ended, over its 20 s gate, which grows with --exec-timeout));"),
            "{line}"
        );
        // Within its gate: narrowed because no test passed whole, not for time.
        e.narrowed_files[0].seconds = Some(0.4);
        let line = exec_line(&e);
        assert!(
            line.contains("all but the 1 test naming the edits of t/test_a.py (no test passed whole at base));"),
            "{line}"
        );
        e.narrowed_files.clear();
        // No base run printed a readable result: that is said instead of a count of 0.
        e.tests_unread = Some("no test result could be read from the base runs; t/test_a.py exited with status 1: boom".into());
        let line = exec_line(&e);
        assert!(
            line.starts_with("execution: no test result could be read from the base runs; t/test_a.py exited with status 1: boom (dei reads"),
            "{line}"
        );
        assert!(!line.contains("passing twice"), "{line}");
        e.tests_unread = None;
        // How the reproduction went: as it ended, printing differently each time, not used.
        e.repro_base = Some("raises ValueError".into());
        assert!(exec_line(&e).contains("; the issue's code raises ValueError at the base commit;"));
        e.repro_output_unstable = true;
        assert!(exec_line(&e).contains(
            "; the issue's code raises ValueError at the base commit, printing differently each time (only how its runs end is compared);"
        ));
        e.repro_output_unstable = false;
        // Pinned is how every reproduction runs: not said.
        e.repro_pinned = true;
        assert!(exec_line(&e).contains("; the issue's code raises ValueError at the base commit;"));
        e.repro_pinned = false;
        e.repro_base = Some("not used: it ends differently in two runs at the base commit".into());
        assert!(exec_line(&e).contains(
            "; the issue's code is not used (it ends differently in two runs at the base commit);"
        ));
        // Packages installed for the issue's code, or why that failed.
        e.extras = vec!["numpy".into()];
        assert!(exec_line(&e).contains(
            "\nenvironment: with numpy installed for the issue's code (at the base commit it stopped on importing it)\n"
        ));
        e.extras.clear();
        // Candidates whose test edits were set aside are counted.
        assert!(!exec_line(&e).contains("set aside"));
        e.tests_set_aside = 2;
        assert!(exec_line(&e).contains(
            "\nexecution: 2 candidates edit the repository's tests; those edits were set aside, and the tests ran as at the base commit\n"
        ));
        e.tests_set_aside = 0;
        e.extras_failed =
            Some("installing numpy for the issue's code failed: step `extras`".into());
        assert!(exec_line(&e).contains(
            "\nenvironment: installing numpy for the issue's code failed: step `extras`\n"
        ));
        e.error = Some("no environment for x/y 1.0\nmore".into());
        assert_eq!(
            exec_line(&e),
            "execution: nothing ran: no environment for x/y 1.0\n"
        );
    }

    #[test]
    fn the_picks_reproduction_is_shown_as_the_lines_it_changes() {
        let base = "3\n1\n[dei-repro] no exception\n";
        assert_eq!(
            pick_repro_lines(base, "2\n2\n[dei-repro] no exception\n"),
            "the pick's reproduction against the base commit (- base, + the pick):\n  - 3\n  - 1\n  + 2\n  + 2\n"
        );
        assert_eq!(pick_repro_lines(base, base), "");
        let long: String = (0..20).map(|i| format!("{i}\n")).collect();
        let shown = pick_repro_lines("x\n", &long);
        assert!(shown.contains("  - x\n  + 0\n"), "{shown}");
        assert!(
            shown.ends_with("  … and 13 more changed lines (--json: exec.repro_output, behaviour.repro_output)\n"),
            "{shown}"
        );
    }

    #[test]
    fn middle_cut_keeps_what_tells_names_apart() {
        let names = [
            "gpt-4-0125-preview@acr-v20240408_acr-run-1",
            "gpt-4-0125-preview@acr-v20240408_acr-run-2",
            "gpt-4-0125-preview@acr-v20240408_acr-val-only",
        ];
        let cut: Vec<String> = names.iter().map(|n| truncate_middle(n, 30)).collect();
        assert!(cut.iter().all(|c| display_width(c) == 30), "{cut:?}");
        assert_ne!(cut[0], cut[1]);
        assert_ne!(cut[1], cut[2]);
        assert!(cut[0].ends_with("acr-run-1") && cut[0].starts_with("gpt-4-"));
        assert_eq!(truncate_middle("short", 30), "short");
        // A cut at the end makes all three identical at 40 columns.
        let ends: Vec<String> = names.iter().map(|n| truncate(n, 40)).collect();
        assert_eq!(ends[0], ends[1]);
    }

    #[test]
    fn columns_count_what_a_terminal_shows() {
        // Wide characters take two columns, a combining accent none, an emoji two.
        assert_eq!(display_width("代理人二号"), 10);
        assert_eq!(display_width("cafe\u{301}"), 4);
        assert_eq!(display_width("a🙂b"), 4);
        assert_eq!(pad("代理", 6), "代理  ");
        assert_eq!(truncate("代理人二号", 6), "代理…");
        assert_eq!(
            display_width(&truncate_middle("代理人二号-agent-long-name", 12)),
            12
        );
        assert_eq!(truncate("cafe\u{301} au lait", 5), "cafe\u{301}…");
    }
}
