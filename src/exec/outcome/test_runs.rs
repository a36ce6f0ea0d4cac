//! Test runs read into per-test results (pytest's `-rA` summary, `-v` progress lines and final
//! counts, sympy's `bin/test`, `unittest -v`), and the tests a candidate breaks: passed twice at
//! the base commit, not with the candidate.

use std::collections::{BTreeMap, BTreeSet};

/// One test's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Passed,
    XFail,
    Skipped,
    XPass,
    Failed,
    Error,
}

impl Status {
    /// From a pytest or unittest word (`PASSED`, `ok`, `FAIL`, `expected failure`, …).
    pub fn from_word(w: &str) -> Option<Status> {
        Some(match w.trim().to_ascii_lowercase().as_str() {
            "passed" | "ok" | "pass" => Status::Passed,
            "failed" | "fail" => Status::Failed,
            "error" => Status::Error,
            "skipped" | "skip" => Status::Skipped,
            "xfail" | "xfailed" | "expected failure" => Status::XFail,
            "xpass" | "xpassed" | "unexpected success" => Status::XPass,
            _ => return None,
        })
    }

    /// Failed or errored.
    pub fn is_bad(self) -> bool {
        matches!(self, Status::Failed | Status::Error)
    }

    fn severity(self) -> u8 {
        match self {
            Status::Passed => 0,
            Status::XFail => 1,
            Status::Skipped => 2,
            Status::XPass => 3,
            Status::Failed => 4,
            Status::Error => 5,
        }
    }
}

/// The counts a runner prints at the end (`3 failed, 10 passed in 0.5s`, `Ran 5 tests` +
/// `FAILED (failures=1)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
    pub xfailed: usize,
    pub xpassed: usize,
}

/// Per-test results of one run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TestRun {
    /// Test id → result. pytest ids are node ids (`path::Class::test`, `::()` removed);
    /// unittest ids are dotted (`module.Class.test`). A test reported twice keeps its worse
    /// result (a test that passed and then errored in teardown is an error).
    pub results: BTreeMap<String, Status>,
    /// Errors not tied to one test (a file that failed to collect: `ERROR path.py`).
    pub file_errors: BTreeSet<String>,
    /// The final counts line, when the run got that far (`None`: killed, crashed, cut off).
    pub counts: Option<Counts>,
    /// Seconds per test, setup and teardown included, from pytest's `--durations` section
    /// (`0.52s call     path::test`): the slowest tests of the run, as many as it lists.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub durations: BTreeMap<String, f64>,
    /// pytest said it hid the durations under its threshold (`(12 durations < 0.005s hidden.
    /// …)`): the list reached below 5 ms, so every test at or over that is in it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub durations_hid_quick: bool,
}

impl TestRun {
    fn record(&mut self, id: &str, status: Status) {
        let id = clean_id(id);
        if id.is_empty() {
            return;
        }
        if !id.contains("::") && status == Status::Error && id.ends_with(".py") {
            self.file_errors.insert(id);
            return;
        }
        let e = self.results.entry(id).or_insert(status);
        if status.severity() > e.severity() {
            *e = status;
        }
    }

    /// The run reached its final counts line.
    pub fn finished(&self) -> bool {
        self.counts.is_some()
    }

    /// Ids that passed.
    pub fn passed(&self) -> BTreeSet<&str> {
        self.results
            .iter()
            .filter(|(_, s)| **s == Status::Passed)
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// The file part of a pytest node id had a collection error in this run.
    fn file_failed(&self, id: &str) -> bool {
        let file = id.split("::").next().unwrap_or(id);
        self.file_errors.contains(file)
    }
}

/// `path::Class::()::test` (old pytest) → `path::Class::test`; trailing ` - message` and
/// progress `[ 40%]` cut.
fn clean_id(id: &str) -> String {
    let id = id.trim();
    let id = id.split(" - ").next().unwrap_or(id).trim();
    let id = match id.rfind(" [") {
        Some(i) if id.ends_with(']') && id[i..].contains('%') => id[..i].trim(),
        _ => id,
    };
    id_without_reason(id).replace("::()", "")
}

/// A node id less what follows it on pytest 7's `XPASS id reason` line (no ` - ` between):
/// the id ends at the first space after its first `::` that is outside brackets, so a
/// parametrized id keeps the spaces of its parameters (`test_x[a b]`).
fn id_without_reason(id: &str) -> &str {
    let Some(name) = id.find("::") else {
        return id;
    };
    let mut depth = 0usize;
    for (i, c) in id[name..].char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => return id[..name + i].trim_end(),
            _ => {}
        }
    }
    id
}

/// `text` without ANSI escape sequences (CSI `ESC [ params final`, and two-byte `ESC x`).
fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\x1b') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        // ESC [ …: parameters and intermediates, then one final byte in @..~; ESC x: two bytes.
        if let Some('[') = chars.next() {
            while let Some(&n) = chars.peek() {
                chars.next();
                if ('@'..='~').contains(&n) {
                    break;
                }
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Read pytest or unittest output (either, or both in one log) into per-test results.
///
/// Rules: a `-rA` short-summary line `WORD id` (`PASSED`, `FAILED`, `ERROR`, `XFAIL`, `XPASS`;
/// `SKIPPED [n] path:line: reason` names no test and is counted only); a `-v` progress line
/// `id WORD [ n%]` (and old pytest's `id WORD`); a `unittest -v` line `name (module.Class) ... ok`
/// or `name (module.Class.name) ... FAIL` (id `module.Class.name`); the final line
/// `== 1 failed, 2 passed, 1 error in 0.12s ==` (or `in 0.12 seconds`, `no tests ran`), or
/// unittest's `Ran N tests` followed by `OK`/`FAILED (failures=1, errors=2, skipped=1, …)`.
pub fn parse_test_output(text: &str) -> TestRun {
    // Colours (sphinx's tox.ini passes `--color yes`) would hide every status word.
    let text = strip_ansi(text);
    let text = text.as_ref();
    let mut run = TestRun::default();
    let mut ran: Option<usize> = None;
    // sympy's own runner (`bin/test --verbose`): the file being run, from its `path.py[N]` line.
    let mut sympy_file: Option<String> = None;
    // A sympy test whose name line holds something else than its status (what the test, or
    // the code it runs, printed): its status comes on a line of its own later.
    let mut sympy_pending: Option<String> = None;
    // Likewise a unittest test whose ` ... ` is followed by what it printed.
    let mut unittest_pending: Option<String> = None;
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    for (n, raw) in lines.iter().enumerate() {
        let line = raw.trim_end();
        // sympy: `== tests finished: 27 passed, 1 failed, in 9.57 seconds ==` (before pytest's
        // rule, which would read it too).
        if let Some(c) = sympy_counts(line) {
            run.counts = Some(c);
            continue;
        }
        // Final pytest counts line.
        if let Some(c) = pytest_counts(line) {
            run.counts = Some(c);
            continue;
        }
        if let Some(file) = sympy_file_line(line) {
            sympy_file = Some(file);
            sympy_pending = None;
            continue;
        }
        if let Some(file) = &sympy_file {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words
                .first()
                .is_some_and(|w| w.starts_with("test") && !w.contains(".py"))
            {
                if let Some(status) = words.get(1).and_then(|w| sympy_status(w)) {
                    run.record(&format!("{file}::{}", words[0]), status);
                    sympy_pending = None;
                    continue;
                }
                sympy_pending = Some(words[0].to_string());
            } else if let Some(name) = &sympy_pending {
                // `ok` alone, or `f` followed by the file's `[OK]`/`[FAIL]`.
                let bare = words.get(1).is_none_or(|w| w.starts_with('['));
                if let Some(status) = words.first().and_then(|w| sympy_status(w)).filter(|_| bare) {
                    run.record(&format!("{file}::{name}"), status);
                    sympy_pending = None;
                    continue;
                }
            }
        }
        // unittest `Ran N tests in 0.01s` then `OK` / `FAILED (...)`.
        if let Some(rest) = line.strip_prefix("Ran ") {
            if let Some(num) = rest.split_whitespace().next().and_then(|w| w.parse().ok()) {
                if rest.contains(" test") {
                    ran = Some(num);
                }
            }
            continue;
        }
        if let Some(total) = ran {
            let t = line.trim();
            if t.starts_with("OK") || t.starts_with("FAILED") {
                run.counts = Some(unittest_counts(t, total));
                ran = None;
                continue;
            }
        }
        // unittest -v: `test_x (mod.Class) ... ok`; a docstring puts the status on the next line.
        if let Some((head, word)) = line.rsplit_once(" ... ") {
            let word = word.trim();
            let word = if word.starts_with("skipped") {
                "skipped"
            } else {
                word
            };
            if let Some(status) = Status::from_word(word) {
                let head = if head.contains(" (") {
                    head
                } else if n > 0 {
                    lines[n - 1].trim_end()
                } else {
                    head
                };
                if let Some(id) = unittest_id(head) {
                    run.record(&id, status);
                }
                unittest_pending = None;
                continue;
            }
            // What the test printed follows ` ... `: its status comes on a line of its own.
            unittest_pending = unittest_id(head);
        } else if let Some(id) = &unittest_pending {
            let t = line.trim();
            let word = if t.starts_with("skipped") {
                "skipped"
            } else {
                t
            };
            if let Some(status) = Status::from_word(word) {
                run.record(id, status);
                unittest_pending = None;
                continue;
            }
        }
        // --durations: `0.52s call     path::test` (also `setup`, `teardown`).
        if let Some((id, secs)) = duration_line(line) {
            *run.durations.entry(clean_id(id)).or_insert(0.0) += secs;
            continue;
        }
        // `(12 durations < 0.005s hidden.  Use -vv to show these durations.)` (pytest 6 and
        // later; `(12 durations hidden. …)` before).
        if line.starts_with('(') && line.contains(" durations") && line.contains("hidden.") {
            run.durations_hid_quick = true;
            continue;
        }
        // -rA short summary: `PASSED id`, `FAILED id - msg`.
        if let Some((word, rest)) = line.split_once(' ') {
            if word.chars().all(|c| c.is_ascii_uppercase()) && word.len() >= 4 {
                if let Some(status) = Status::from_word(word) {
                    let rest = rest.trim();
                    if status == Status::Skipped || rest.starts_with('[') {
                        continue;
                    }
                    if looks_like_node_id(rest) {
                        run.record(rest, status);
                        continue;
                    }
                }
            }
        }
        // -v progress: `path::test PASSED   [ 50%]`.
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 2 && looks_like_node_id(words[0]) {
            if let Some(status) = Status::from_word(words[1]) {
                run.record(words[0], status);
            }
        }
    }
    run
}

/// A status letter or word of sympy's verbose runner.
fn sympy_status(word: &str) -> Option<Status> {
    match word {
        "ok" => Some(Status::Passed),
        "F" => Some(Status::Failed),
        "E" => Some(Status::Error),
        "f" => Some(Status::XFail),
        "X" => Some(Status::XPass),
        "s" | "w" | "T" => Some(Status::Skipped),
        _ => None,
    }
}

/// sympy's `path/test_x.py[27]` (the count of tests the file holds), the header of its tests.
fn sympy_file_line(line: &str) -> Option<String> {
    let t = line.trim();
    let (path, rest) = t.split_once(".py[")?;
    let n = rest.strip_suffix(']')?;
    (n.chars().all(|c| c.is_ascii_digit()) && !path.contains(' ')).then(|| format!("{path}.py"))
}

/// sympy's final line: `tests finished: 27 passed, 1 failed, 2 skipped, 1 expected to fail,
/// 1 exceptions, in 9.57 seconds` (between `=` rules).
fn sympy_counts(line: &str) -> Option<Counts> {
    let t = line.trim().trim_matches('=').trim();
    let rest = t.strip_prefix("tests finished:")?;
    let mut c = Counts::default();
    for (num, what) in tally(rest) {
        match what {
            "passed" => c.passed = num,
            "failed" => c.failed = num,
            "skipped" => c.skipped = num,
            "expected to fail" => c.xfailed = num,
            "expected to fail but passed" => c.xpassed = num,
            "exceptions" | "exception" => c.errors = num,
            _ => {}
        }
    }
    Some(c)
}

/// A line of pytest's `--durations` section: `0.52s call     path::Class::test` → the node id
/// and its seconds. An id with a space in it (a parametrized `test_x[a b]`) is not read: its
/// test is then never left out for time.
fn duration_line(line: &str) -> Option<(&str, f64)> {
    let mut words = line.split_whitespace();
    let secs: f64 = words.next()?.strip_suffix('s')?.parse().ok()?;
    if !matches!(words.next()?, "setup" | "call" | "teardown") {
        return None;
    }
    let id = words.next()?;
    (words.next().is_none() && looks_like_node_id(id)).then_some((id, secs))
}

fn looks_like_node_id(s: &str) -> bool {
    let first = s.split_whitespace().next().unwrap_or("");
    let Some(at) = first.find(".py") else {
        return false;
    };
    let after = &first[at + 3..];
    (after.is_empty() || after.starts_with("::"))
        && !first.starts_with('/')
        && first
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
}

/// `test_x (mod.Class)` → `mod.Class.test_x`; `test_x (mod.Class.test_x)` (Python 3.11+) →
/// `mod.Class.test_x`.
fn unittest_id(head: &str) -> Option<String> {
    let (name, rest) = head.trim().split_once(" (")?;
    let inside = rest.strip_suffix(')').unwrap_or(rest).trim();
    let name = name.trim();
    if name.is_empty() || inside.is_empty() || name.contains(' ') {
        return None;
    }
    if inside.ends_with(&format!(".{name}")) {
        Some(inside.to_string())
    } else {
        Some(format!("{inside}.{name}"))
    }
}

/// `=== 1 failed, 2 passed, 3 warnings in 0.12s ===`, `=== no tests ran in 0.01 seconds ===`.
fn pytest_counts(line: &str) -> Option<Counts> {
    let t = line.trim();
    if !(t.starts_with('=') && t.ends_with('=')) {
        return None;
    }
    let inner = t.trim_matches('=').trim();
    let (body, tail) = inner.rsplit_once(" in ")?;
    let tail = tail.trim();
    if !tail.starts_with(|c: char| c.is_ascii_digit())
        || !(tail.ends_with('s') || tail.contains("second") || tail.ends_with(')'))
    {
        return None;
    }
    let mut c = Counts::default();
    if body.trim() == "no tests ran" {
        return Some(c);
    }
    let mut any = false;
    for (num, what) in tally(body) {
        any = true;
        match what.split_whitespace().next().unwrap_or_default() {
            "passed" => c.passed = num,
            "failed" => c.failed = num,
            "error" | "errors" => c.errors = num,
            "skipped" => c.skipped = num,
            "xfailed" => c.xfailed = num,
            "xpassed" => c.xpassed = num,
            _ => {}
        }
    }
    any.then_some(c)
}

/// The parts of a runner's comma-separated tally (`27 passed, 1 expected to fail`) that start
/// with a count: the count and the words after it.
fn tally(body: &str) -> impl Iterator<Item = (usize, &str)> {
    body.split(',').filter_map(|part| {
        let (num, what) = part.trim().split_once(char::is_whitespace)?;
        Some((num.parse().ok()?, what.trim()))
    })
}

/// `OK`, `OK (skipped=1)`, `FAILED (failures=1, errors=1, skipped=1, expected failures=1)`.
fn unittest_counts(line: &str, total: usize) -> Counts {
    let mut c = Counts::default();
    if let (Some(a), Some(b)) = (line.find('('), line.rfind(')')) {
        for part in line[a + 1..b].split(',') {
            if let Some((k, v)) = part.split_once('=') {
                let v: usize = v.trim().parse().unwrap_or(0);
                match k.trim() {
                    "failures" => c.failed = v,
                    "errors" => c.errors = v,
                    "skipped" => c.skipped = v,
                    "expected failures" => c.xfailed = v,
                    "unexpected successes" => c.xpassed = v,
                    _ => {}
                }
            }
        }
    }
    c.passed = total.saturating_sub(c.failed + c.errors + c.skipped + c.xfailed + c.xpassed);
    c
}

/// What a candidate does to the tests that pass at the base commit.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Regression {
    /// Tests that passed in both base runs (the ones that count).
    pub stable: usize,
    /// Tests whose two base runs disagree (dropped).
    pub flaky: Vec<String>,
    /// Stable tests that fail or error with the candidate, or vanish from a run that crashed or
    /// could not collect their file.
    pub broken: Vec<String>,
}

/// Tests that pass twice at the base commit and fail with the candidate. A stable test missing
/// from the candidate's run counts as broken when that run never finished (no counts line:
/// crash, timeout) or reported its file as an error; otherwise it was not selected, not broken.
pub fn regression(base1: &TestRun, base2: &TestRun, cand: &TestRun) -> Regression {
    let mut out = Regression::default();
    let mut ids: BTreeSet<&str> = base1.results.keys().map(String::as_str).collect();
    ids.extend(base2.results.keys().map(String::as_str));
    for id in ids {
        let (a, b) = (base1.results.get(id), base2.results.get(id));
        let passed = |s: Option<&Status>| s == Some(&Status::Passed);
        if passed(a) != passed(b) {
            out.flaky.push(id.to_string());
            continue;
        }
        if !passed(a) {
            continue;
        }
        out.stable += 1;
        let broken = match cand.results.get(id) {
            Some(s) => s.is_bad(),
            None => !cand.finished() || cand.file_failed(id),
        };
        if broken {
            out.broken.push(id.to_string());
        }
    }
    out
}
