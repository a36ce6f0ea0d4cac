//! What a run printed, read into outcomes: per-test results from pytest (`-rA` short summary,
//! `-v` progress lines, the final counts line) and from `unittest -v`; the tests a candidate
//! breaks (passed twice at the base commit, not with the candidate); a reproduction run's
//! output normalized for comparison and its final exception type; and behaviour classes of
//! candidates, with support counted in distinct agent families.

use crate::candidates::family_of;
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
    id.replace("::()", "")
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
                let bare = words.get(1).map_or(true, |w| w.starts_with('['));
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
    for part in rest.split(',') {
        let part = part.trim();
        let mut w = part.splitn(2, ' ');
        let (Some(num), Some(what)) = (w.next(), w.next()) else {
            continue;
        };
        let Ok(num) = num.parse::<usize>() else {
            continue;
        };
        match what.trim() {
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
    for part in body.split(',') {
        let mut w = part.split_whitespace();
        let (Some(num), Some(kind)) = (w.next(), w.next()) else {
            continue;
        };
        let Ok(num) = num.parse::<usize>() else {
            continue;
        };
        any = true;
        match kind {
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

/// Replace what differs between two runs of the same behaviour: the given roots (the sandbox
/// folder) → `<root>`, other temp paths (`/tmp/…`, `/var/folders/…`) → `<tmp>`, hexadecimal
/// addresses (`0x7f3a…`) → `0x?`, timings (`0.12s`, `1.5 seconds`, `12ms`) → `<time>`, numbers
/// after `id=`/`pid ` → `?`, line numbers in a traceback's `File "…", line 12` and a warning's
/// `x.py:12:` → `?`; trailing spaces and `\r` dropped.
pub fn normalize_output(text: &str, roots: &[&str]) -> String {
    let mut s = text.replace("\r\n", "\n");
    for r in roots {
        if !r.is_empty() {
            s = s.replace(r, "<root>");
        }
    }
    let mut out = String::with_capacity(s.len());
    for line in s.lines() {
        out.push_str(normalize_line(line).trim_end());
        out.push('\n');
    }
    out
}

/// `b[i..]` starts with a UUID's 36 characters (hex in groups of 8-4-4-4-12) that no letter,
/// digit or `_` follows.
fn is_uuid_at(b: &[char], i: usize) -> bool {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let mut j = i;
    for (g, &n) in GROUPS.iter().enumerate() {
        if g > 0 {
            if b.get(j) != Some(&'-') {
                return false;
            }
            j += 1;
        }
        if j + n > b.len() || !b[j..j + n].iter().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
        j += n;
    }
    !b.get(j).is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

fn normalize_line(line: &str) -> String {
    let b: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let boundary = |i: usize| i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_');
    while i < b.len() {
        let rest: String = b[i..b.len().min(i + 14)].iter().collect();
        // temp paths
        if (rest.starts_with("/tmp/") || rest.starts_with("/var/folders/"))
            && (i == 0 || !b[i - 1].is_alphanumeric())
        {
            let mut j = i;
            while j < b.len() && !b[j].is_whitespace() && !"'\":,)]".contains(b[j]) {
                j += 1;
            }
            out.push_str("<tmp>");
            // A warning's `/tmp/…/x.py:12:`: the line number moves with any edit above it.
            if b[i..j].ends_with(&['.', 'p', 'y']) && b.get(j) == Some(&':') {
                let mut k = j + 1;
                while k < b.len() && b[k].is_ascii_digit() {
                    k += 1;
                }
                if k > j + 1 && b.get(k) == Some(&':') {
                    out.push_str(":?");
                    j = k;
                }
            }
            i = j;
            continue;
        }
        // UUIDs (xarray's HTML repr draws a fresh one for every element it can fold)
        if boundary(i) && is_uuid_at(&b, i) {
            out.push_str("<uuid>");
            i += 36;
            continue;
        }
        // 0x addresses
        if b[i] == '0'
            && i + 2 < b.len()
            && (b[i + 1] == 'x' || b[i + 1] == 'X')
            && b[i + 2].is_ascii_hexdigit()
            && boundary(i)
        {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            out.push_str("0x?");
            i = j;
            continue;
        }
        // Line numbers of source files: a traceback's `File "…", line 12` and a warning's
        // `…/x.py:12:`. A candidate that edits a file moves the lines below its edit, so the
        // same warning or traceback would read as a change in behaviour.
        if let Some(key) = ["\", line ", ".py:"]
            .into_iter()
            .find(|k| rest.starts_with(k) && b.get(i + k.len()).is_some_and(|c| c.is_ascii_digit()))
        {
            let mut j = i + key.len();
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if key.starts_with('"') || b.get(j) == Some(&':') {
                out.push_str(key);
                out.push('?');
                i = j;
                continue;
            }
        }
        // id=123 / pid 123
        if let Some(key) = ["id=", "pid ", "pid="].into_iter().find(|k| {
            rest.starts_with(k)
                && boundary(i)
                && b.get(i + k.len()).is_some_and(|c| c.is_ascii_digit())
        }) {
            out.push_str(key);
            out.push('?');
            let mut j = i + key.len();
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
            continue;
        }
        // timings: number followed by s / ms / seconds / sec
        if b[i].is_ascii_digit() && boundary(i) {
            let mut j = i;
            while j < b.len() && (b[j].is_ascii_digit() || b[j] == '.') {
                j += 1;
            }
            let mut k = j;
            if k < b.len() && b[k] == ' ' {
                k += 1;
            }
            let unit: String = b[k..b.len().min(k + 8)].iter().collect();
            let unit_len = ["seconds", "second", "secs", "sec", "ms", "µs", "us", "s"]
                .iter()
                .find(|u| {
                    unit.starts_with(**u)
                        && !b
                            .get(k + u.chars().count())
                            .is_some_and(|c| c.is_alphanumeric())
                })
                .map(|u| u.chars().count());
            let has_dot = b[i..j].contains(&'.');
            if let Some(n) = unit_len {
                if has_dot || k == j {
                    out.push_str("<time>");
                    i = k + n;
                    continue;
                }
            }
            out.extend(&b[i..j]);
            i = j;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

/// What each `print(…)` call among `lines` starts its output with: the text of its first
/// argument when that is a string literal (plain, raw or f-string), up to its first
/// placeholder (`{`, `%`) or its end, kept when it holds at least three characters other than
/// spaces. `print("res1:", res1)` → `res1:`; `print(f"Debug: p = {p}")` → `Debug: p =`;
/// `print(x)` → nothing.
pub fn print_prefixes<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        let Some(rest) = line.trim_start().strip_prefix("print(") else {
            continue;
        };
        let rest = rest.trim_start();
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let (flags, rest) = rest.split_at(letters);
        if flags.len() > 2 || !flags.chars().all(|c| "fFrRuU".contains(c)) {
            continue;
        }
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let body = &rest[1..];
        let end = body.find([quote, '{', '%', '\\']).unwrap_or(body.len());
        let prefix = body[..end].trim_end();
        if prefix.chars().filter(|c| !c.is_whitespace()).count() >= 3
            && !out.iter().any(|p| p == prefix)
        {
            out.push(prefix.to_string());
        }
    }
    out
}

/// `[dei-repro] statement 4 raised ValueError: bad` → `[dei-repro] statement 4 raised ValueError`:
/// which statement raised what, without the message.
fn raised_head(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(REPRO_MARK)?.strip_prefix(" statement ")?;
    let at = rest.find(" raised ")? + " raised ".len();
    let colon = rest[at..].find(':')?;
    Some(&line[..line.len() - rest.len() + at + colon])
}

/// The statement the reproduction script first reports raising (`[dei-repro] statement 4
/// raised ValueError: bad` → 4). `None` for a run that reported none: it raised nothing, or it
/// ended in a traceback the script does not wrap.
pub fn first_failing_statement(output: &str) -> Option<usize> {
    raised_statements(output).next().map(|(n, _)| n)
}

/// Each statement the reproduction script reports raising, in order: `[dei-repro] statement 4
/// raised ValueError: bad` → (4, `ValueError: bad`).
pub fn raised_statements(output: &str) -> impl Iterator<Item = (usize, &str)> {
    output.lines().filter_map(|l| {
        let rest = l.strip_prefix(REPRO_MARK)?.strip_prefix(" statement ")?;
        let (n, what) = rest.split_once(" raised ")?;
        Some((n.parse().ok()?, what))
    })
}

/// Marker lines the reproduction script prints (see [`super::repro`]).
pub const REPRO_MARK: &str = "[dei-repro]";

/// The final exception of a run: the reproduction script's `[dei-repro] first exception: T`
/// line when present, else the last `Type: message` (or bare `Type`) line after the last
/// `Traceback (most recent call last):`. `None` when nothing was raised.
pub fn final_exception(output: &str) -> Option<String> {
    let prefix = format!("{REPRO_MARK} first exception: ");
    if let Some(l) = output.lines().rev().find(|l| l.starts_with(&prefix)) {
        return Some(l[prefix.len()..].trim().to_string());
    }
    if output
        .lines()
        .any(|l| l.trim() == format!("{REPRO_MARK} no exception"))
    {
        return None;
    }
    let tb = output.rfind("Traceback (most recent call last):")?;
    let after = &output[tb..];
    after
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with(' ') && !l.trim().is_empty())
        .filter_map(exception_type)
        .last()
}

/// `ValueError: bad` → `ValueError`; `sympy.core.sympify.SympifyError: x` → `SympifyError`.
fn exception_type(line: &str) -> Option<String> {
    let head = line.split(':').next()?.trim();
    let last = head.rsplit('.').next()?;
    let ok = !head.is_empty()
        && head
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        && last.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    ok.then(|| last.to_string())
}

/// What a reproduction run did.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ReproOutcome {
    /// Exit status (`None`: killed, timed out).
    pub exit: Option<i32>,
    /// Final exception type, if any.
    pub exception: Option<String>,
    /// Normalized output (stdout then stderr).
    pub output: String,
}

impl ReproOutcome {
    /// Read a run: `roots` are the folders to hide (sandbox, work tree).
    pub fn read(exit: Option<i32>, stdout: &str, stderr: &str, roots: &[&str]) -> ReproOutcome {
        let all = format!(
            "{stdout}{}{stderr}",
            if stdout.ends_with('\n') || stdout.is_empty() {
                ""
            } else {
                "\n"
            }
        );
        ReproOutcome {
            exit,
            exception: final_exception(&all),
            output: normalize_output(&all, roots),
        }
    }

    /// Drop the lines a candidate's own `print` calls wrote: those starting with one of
    /// `prefixes` ([`print_prefixes`] of its added lines) that the base run never printed.
    /// Debug output left in the library (`print("res1:", res1)`) is not a change in what the
    /// issue's code does, and would otherwise make every candidate that left the reproduction
    /// as at base look as if it missed the change.
    pub fn without_own_prints(mut self, prefixes: &[String], base: &ReproOutcome) -> ReproOutcome {
        let own: Vec<&String> = prefixes
            .iter()
            .filter(|p| !base.output.lines().any(|l| l.starts_with(p.as_str())))
            .collect();
        if own.is_empty() || self.output.is_empty() {
            return self;
        }
        let mut kept = String::with_capacity(self.output.len());
        for line in self.output.lines() {
            if !own.iter().any(|p| line.starts_with(p.as_str())) {
                kept.push_str(line);
                kept.push('\n');
            }
        }
        self.output = kept;
        self
    }

    /// The candidate changed what the issue reported: any difference from the base run, except
    /// a statement that raises the same exception with other words (`[dei-repro] statement 4
    /// raised NotImplementedError: …`, only the message differing). Rewording an error message
    /// leaves the behaviour the issue reports as it was.
    pub fn changed_from(&self, base: &ReproOutcome) -> bool {
        if self == base {
            return false;
        }
        if self.exit != base.exit || self.exception != base.exception {
            return true;
        }
        let (a, b): (Vec<&str>, Vec<&str>) =
            (self.output.lines().collect(), base.output.lines().collect());
        a.len() != b.len()
            || a.iter().zip(&b).any(|(x, y)| {
                x != y && !matches!((raised_head(x), raised_head(y)), (Some(p), Some(q)) if p == q)
            })
    }
}

/// A candidate's observed behaviour: the tests it breaks and what the reproduction did.
/// Candidates with equal signatures behave alike on everything that was run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Signature {
    /// Broken test ids, sorted; `None`: no regression tests were run.
    pub broken: Option<Vec<String>>,
    /// The reproduction's outcome; `None`: no reproduction was run.
    pub repro: Option<ReproOutcome>,
    /// What the model-written reproduction test printed; `None`: none was kept.
    pub model_test: Option<crate::model::ModelTest>,
    /// Whether it passes each kept test the candidates wrote, in their order.
    pub written: Vec<bool>,
}

impl Signature {
    pub fn new(regression: Option<&Regression>, repro: Option<ReproOutcome>) -> Signature {
        Signature {
            broken: regression.map(|r| {
                let mut b = r.broken.clone();
                b.sort();
                b
            }),
            repro,
            model_test: None,
            written: Vec::new(),
        }
    }

    /// The same signature with whether it passes each kept test the candidates wrote.
    pub fn with_written(mut self, written: Vec<bool>) -> Signature {
        self.written = written;
        self
    }

    /// The same signature with what the model-written test printed.
    pub fn with_model_test(mut self, model_test: Option<crate::model::ModelTest>) -> Signature {
        self.model_test = model_test;
        self
    }
}

/// Candidates that behaved the same.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BehaviourClass {
    pub signature: Signature,
    /// Indices of its candidates, ascending.
    pub members: Vec<usize>,
    /// Distinct agent families among its members ([`family_of`]), sorted.
    pub families: Vec<String>,
}

impl BehaviourClass {
    /// Support: the number of distinct agent families (runs of one agent count once).
    pub fn support(&self) -> usize {
        self.families.len()
    }
}

/// Group candidates (`(agent, signature)`, in candidate order) into behaviour classes,
/// largest support first, then most members, then first member.
pub fn behaviour_classes(cands: &[(&str, &Signature)]) -> Vec<BehaviourClass> {
    let mut by_sig: BTreeMap<&Signature, Vec<usize>> = BTreeMap::new();
    for (i, (_, s)) in cands.iter().enumerate() {
        by_sig.entry(*s).or_default().push(i);
    }
    let mut out: Vec<BehaviourClass> = by_sig
        .into_iter()
        .map(|(sig, members)| {
            let families: BTreeSet<String> =
                members.iter().map(|&i| family_of(cands[i].0)).collect();
            BehaviourClass {
                signature: sig.clone(),
                members,
                families: families.into_iter().collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.support()
            .cmp(&a.support())
            .then(b.members.len().cmp(&a.members.len()))
            .then(a.members[0].cmp(&b.members[0]))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coloured_pytest_output_reads_like_plain() {
        let coloured = "\x1b[32mPASSED\x1b[0m tests/test_a.py::\x1b[1mtest_one\x1b[0m\n\
                        \x1b[31mFAILED\x1b[0m tests/test_a.py::test_two - assert 3 == 2\n\
                        \x1b[31m==== \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.1s ====\x1b[0m\n";
        let plain = "PASSED tests/test_a.py::test_one\n\
                     FAILED tests/test_a.py::test_two - assert 3 == 2\n\
                     ==== 1 failed, 1 passed in 0.1s ====\n";
        let (c, p) = (parse_test_output(coloured), parse_test_output(plain));
        assert_eq!(c.results, p.results);
        assert_eq!(c.counts, p.counts);
        assert_eq!(
            c.results.get("tests/test_a.py::test_one"),
            Some(&Status::Passed)
        );
        assert_eq!(
            c.results.get("tests/test_a.py::test_two"),
            Some(&Status::Failed)
        );
    }

    /// sympy's own runner, `bin/test -C --verbose` (as the SWE-bench harness runs it).
    const SYMPY: &str = "\
============================= test process starts ==============================
executable:         /venv/bin/python  (3.9.18-final-0) [CPython]
random seed:        34655871

sympy/simplify/tests/test_fu.py[4] 
test_TR1 ok
test_TR2 F
test_TR3 E
test_L f                                                                    [FAIL]


________________________________________________________________________________
_________________ sympy/simplify/tests/test_fu.py:test_TR2 _____________________
Traceback (most recent call last):
AssertionError
======= tests finished: 1 passed, 1 failed, 1 expected to fail, 1 exceptions, in 0.57 seconds =======
DO *NOT* COMMIT!
";

    #[test]
    fn sympy_runner_output_is_read_per_test() {
        let run = parse_test_output(SYMPY);
        let get = |t: &str| {
            run.results
                .get(&format!("sympy/simplify/tests/test_fu.py::{t}"))
                .copied()
        };
        assert_eq!(get("test_TR1"), Some(Status::Passed));
        assert_eq!(get("test_TR2"), Some(Status::Failed));
        assert_eq!(get("test_TR3"), Some(Status::Error));
        assert_eq!(get("test_L"), Some(Status::XFail));
        assert_eq!(run.results.len(), 4, "{:?}", run.results);
        let c = run.counts.clone().expect("counts");
        assert_eq!((c.passed, c.failed, c.errors, c.xfailed), (1, 1, 1, 1));
        assert!(run.finished());
    }

    #[test]
    fn a_unittest_test_that_prints_is_read_from_its_status_line() {
        let out = "test_a (pkg.tests.T) ... hello\nworld\nok\ntest_b (pkg.tests.T) ... FAIL\ntest_c (pkg.tests.T) ... note: ok\nskipped 'no network'\n\nRan 3 tests in 0.001s\n\nFAILED (failures=1, skipped=1)\n";
        let run = parse_test_output(out);
        assert_eq!(run.results.get("pkg.tests.T.test_a"), Some(&Status::Passed));
        assert_eq!(run.results.get("pkg.tests.T.test_b"), Some(&Status::Failed));
        // `note: ok` is what it printed, not its status.
        assert_eq!(
            run.results.get("pkg.tests.T.test_c"),
            Some(&Status::Skipped)
        );
        assert_eq!(run.results.len(), 3, "{:?}", run.results);
    }

    #[test]
    fn a_sympy_test_that_prints_is_read_from_its_status_line() {
        // What a test prints goes after its name; its status then comes on a line of its own
        // (sympy-21612's tests with antlr4's version warning).
        let out = "sympy/parsing/tests/test_latex.py[4] \ntest_import ok\ntest_parseable ANTLR runtime and generated code versions disagree\nANTLR runtime and generated code versions disagree\nok\ntest_not_parseable warning\nE\ntest_failing warning\nok then\nf                                                [OK]\n";
        let run = parse_test_output(out);
        let get = |t: &str| {
            run.results
                .get(&format!("sympy/parsing/tests/test_latex.py::{t}"))
                .copied()
        };
        assert_eq!(get("test_import"), Some(Status::Passed));
        assert_eq!(get("test_parseable"), Some(Status::Passed));
        assert_eq!(get("test_not_parseable"), Some(Status::Error));
        // A printed line that starts with a status word is not the status.
        assert_eq!(get("test_failing"), Some(Status::XFail));
        assert_eq!(run.results.len(), 4, "{:?}", run.results);
    }

    /// `pytest -rA` output (pytest 7/8 layout), with a teardown error and a collection error.
    const PYTEST_RA: &str = "\
============================= test session starts ==============================
platform linux -- Python 3.9.18, pytest-7.4.0, pluggy-1.3.0
rootdir: /tmp/dei-sbx-1a2b/repo
collected 6 items / 1 error

tests/test_models.py ..F.sx                                                [100%]

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_hooks.py _____________________
ImportError while importing test module '/tmp/dei-sbx-1a2b/repo/tests/test_hooks.py'.
=================================== FAILURES ===================================
_______________________ TestRequests.test_params_bytes _________________________
E       AssertionError: assert b'a=1' == 'a=1'
=========================== short test summary info ============================
PASSED tests/test_models.py::test_basic
PASSED tests/test_models.py::TestRequests::test_get
FAILED tests/test_models.py::TestRequests::test_params_bytes - AssertionError: assert b'a=1' == 'a=1'
PASSED tests/test_models.py::test_teardown_breaks
ERROR tests/test_models.py::test_teardown_breaks - RuntimeError: boom
SKIPPED [1] tests/test_models.py:40: needs network
XFAIL tests/test_models.py::test_known - reason: not fixed yet
ERROR tests/test_hooks.py
========= 1 failed, 3 passed, 1 skipped, 1 xfailed, 2 errors in 0.52s ==========
";

    /// Old pytest (3.x) `-v`: `::()::` in method ids, `in 0.12 seconds`.
    const PYTEST_OLD_V: &str = "\
============================= test session starts ==============================
platform linux2 -- Python 2.7.18, pytest-3.3.0, py-1.11.0, pluggy-0.6.0 -- /usr/bin/python
collecting ... collected 3 items

test_requests.py::RequestsTestCase::()::test_basic PASSED
test_requests.py::RequestsTestCase::()::test_redirect FAILED
test_requests.py::test_cookies SKIPPED

=========== 1 failed, 1 passed, 1 skipped in 0.12 seconds ===========
";

    /// `python3 -m unittest -v test_mod`, captured on Python 3.11 (ids in parentheses are
    /// full since 3.11).
    const UNITTEST_311: &str = "\
test_error (test_mod.TestThing.test_error) ... ERROR
test_fail (test_mod.TestThing.test_fail) ... FAIL
test_ok (test_mod.TestThing.test_ok) ... ok
test_skip (test_mod.TestThing.test_skip) ... skipped 'not here'
test_xfail (test_mod.TestThing.test_xfail) ... expected failure

======================================================================
ERROR: test_error (test_mod.TestThing.test_error)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/tmp/ut/test_mod.py\", line 8, in test_error
    raise KeyError(\"x\")
KeyError: 'x'

----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
";

    /// The same file under Python 2.7 / 3.6, and a test with a docstring.
    const UNITTEST_27: &str = "\
test_error (test_mod.TestThing) ... ERROR
test_ok (test_mod.TestThing) ... ok
test_doc (test_mod.TestThing)
The docstring's first line. ... ok

----------------------------------------------------------------------
Ran 3 tests in 0.000s

FAILED (errors=1)
";

    #[test]
    fn pytest_short_summary() {
        let r = parse_test_output(PYTEST_RA);
        assert_eq!(
            r.results.get("tests/test_models.py::test_basic"),
            Some(&Status::Passed)
        );
        assert_eq!(
            r.results
                .get("tests/test_models.py::TestRequests::test_get"),
            Some(&Status::Passed)
        );
        assert_eq!(
            r.results
                .get("tests/test_models.py::TestRequests::test_params_bytes"),
            Some(&Status::Failed)
        );
        assert_eq!(
            r.results.get("tests/test_models.py::test_teardown_breaks"),
            Some(&Status::Error),
            "passed, then errored in teardown: an error"
        );
        assert_eq!(
            r.results.get("tests/test_models.py::test_known"),
            Some(&Status::XFail)
        );
        assert!(r.file_errors.contains("tests/test_hooks.py"));
        assert_eq!(r.results.len(), 5, "{:?}", r.results);
        let c = r.counts.unwrap();
        assert_eq!(
            (c.passed, c.failed, c.skipped, c.xfailed, c.errors),
            (3, 1, 1, 1, 2)
        );
    }

    #[test]
    fn old_pytest_verbose() {
        let r = parse_test_output(PYTEST_OLD_V);
        assert_eq!(
            r.results
                .get("test_requests.py::RequestsTestCase::test_basic"),
            Some(&Status::Passed)
        );
        assert_eq!(
            r.results
                .get("test_requests.py::RequestsTestCase::test_redirect"),
            Some(&Status::Failed)
        );
        assert_eq!(
            r.results.get("test_requests.py::test_cookies"),
            Some(&Status::Skipped)
        );
        assert_eq!(r.counts.unwrap().passed, 1);
    }

    #[test]
    fn unittest_verbose_both_layouts() {
        let r = parse_test_output(UNITTEST_311);
        assert_eq!(
            r.results.get("test_mod.TestThing.test_ok"),
            Some(&Status::Passed)
        );
        assert_eq!(
            r.results.get("test_mod.TestThing.test_fail"),
            Some(&Status::Failed)
        );
        assert_eq!(
            r.results.get("test_mod.TestThing.test_error"),
            Some(&Status::Error)
        );
        assert_eq!(
            r.results.get("test_mod.TestThing.test_skip"),
            Some(&Status::Skipped)
        );
        assert_eq!(
            r.results.get("test_mod.TestThing.test_xfail"),
            Some(&Status::XFail)
        );
        let c = r.counts.unwrap();
        assert_eq!(
            (c.passed, c.failed, c.errors, c.skipped, c.xfailed),
            (1, 1, 1, 1, 1)
        );

        let r = parse_test_output(UNITTEST_27);
        assert_eq!(
            r.results.get("test_mod.TestThing.test_error"),
            Some(&Status::Error)
        );
        assert_eq!(
            r.results.get("test_mod.TestThing.test_doc"),
            Some(&Status::Passed)
        );
        assert_eq!(r.counts.unwrap().passed, 2);
    }

    #[test]
    fn unfinished_runs_have_no_counts() {
        let cut = &PYTEST_RA[..PYTEST_RA.find("SKIPPED [1]").unwrap()];
        let r = parse_test_output(cut);
        assert!(!r.finished());
        assert_eq!(r.results.len(), 4);
        assert!(!parse_test_output("Segmentation fault (core dumped)\n").finished());
    }

    fn run(pairs: &[(&str, Status)], finished: bool) -> TestRun {
        TestRun {
            results: pairs.iter().map(|(k, s)| (k.to_string(), *s)).collect(),
            file_errors: BTreeSet::new(),
            counts: finished.then(Counts::default),
        }
    }

    #[test]
    fn broken_tests_pass_twice_at_base_and_fail_with_the_candidate() {
        use Status::*;
        let b1 = run(
            &[
                ("t.py::a", Passed),
                ("t.py::b", Passed),
                ("t.py::flaky", Passed),
                ("t.py::c", Failed),
                ("t.py::d", Passed),
            ],
            true,
        );
        let b2 = run(
            &[
                ("t.py::a", Passed),
                ("t.py::b", Passed),
                ("t.py::flaky", Failed),
                ("t.py::c", Failed),
                ("t.py::d", Passed),
            ],
            true,
        );
        let cand = run(
            &[
                ("t.py::a", Failed),
                ("t.py::b", Passed),
                ("t.py::flaky", Failed),
                ("t.py::c", Failed),
            ],
            true,
        );
        let r = regression(&b1, &b2, &cand);
        assert_eq!(r.stable, 3);
        assert_eq!(r.flaky, vec!["t.py::flaky"]);
        assert_eq!(
            r.broken,
            vec!["t.py::a"],
            "d was not run: not broken; c failed at base"
        );

        // A crashed run (no counts line) breaks what it did not report.
        let crashed = run(&[("t.py::a", Passed)], false);
        assert_eq!(
            regression(&b1, &b2, &crashed).broken,
            vec!["t.py::b", "t.py::d"]
        );
        // A collection error of the file breaks its tests.
        let mut collect = run(&[], true);
        collect.file_errors.insert("t.py".into());
        assert_eq!(regression(&b1, &b2, &collect).broken.len(), 3);
        // The real output: a teardown error breaks a test that passed at base.
        let base = parse_test_output(&PYTEST_RA.replace(
            "ERROR tests/test_models.py::test_teardown_breaks - RuntimeError: boom\n",
            "",
        ));
        let r = regression(&base, &base, &parse_test_output(PYTEST_RA));
        assert_eq!(r.broken, vec!["tests/test_models.py::test_teardown_breaks"]);
    }

    #[test]
    fn normalized_output_hides_addresses_paths_and_timings() {
        let a = "<Foo object at 0x7f3a2c1d9e50>\nFile \"/tmp/dei-sbx-91/repo/x.py\", line 3\nran in 0.52s (1.5 seconds, 12ms)\nid=140234 pid 991\nkeep 42 and 3 apples and v1.2\r\n";
        let b = "<Foo object at 0x55d1e0a0>\nFile \"/tmp/dei-sbx-17/repo/x.py\", line 3\nran in 0.61s (2.25 seconds, 9ms)\nid=77 pid 12\nkeep 42 and 3 apples and v1.2\n";
        let na = normalize_output(a, &[]);
        assert_eq!(na, normalize_output(b, &[]));
        assert!(na.contains("object at 0x?>"), "{na}");
        assert!(na.contains("File \"<tmp>\", line ?"), "{na}");
        assert!(na.contains("ran in <time> (<time>, <time>)"), "{na}");
        assert!(na.contains("keep 42 and 3 apples and v1.2\n"), "{na}");
        let rooted = normalize_output("/srv/sbx/repo/a.py failed", &["/srv/sbx/repo"]);
        assert_eq!(rooted, "<root>/a.py failed\n");
        assert_ne!(
            normalize_output("x = 1", &[]),
            normalize_output("x = 2", &[])
        );
        // A fresh UUID per run (xarray's HTML ids); a hex run of another shape is kept.
        let html =
            |id: &str| normalize_output(&format!("<input id='section-{id}' class='x'>"), &[]);
        assert_eq!(
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1"),
            html("0283B432-2d1b-4bc4-af6e-36d60b700338")
        );
        assert_eq!(
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1"),
            "<input id='section-<uuid>' class='x'>\n"
        );
        assert_ne!(
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a"),
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a2")
        );
        assert_ne!(
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a1x"),
            html("93ed396d-1bd1-4650-b9f0-1e3504f8d4a2x")
        );
    }

    #[test]
    fn line_numbers_of_tracebacks_and_warnings_are_hidden() {
        // A candidate that edits `core.py` above the warning moves its line.
        let base = "<root>/sympy/core.py:120: SymPyDeprecationWarning: old\n  File \"<root>/a.py\", line 7, in f\n";
        let cand = "<root>/sympy/core.py:131: SymPyDeprecationWarning: old\n  File \"<root>/a.py\", line 19, in f\n";
        assert_eq!(normalize_output(base, &[]), normalize_output(cand, &[]));
        assert!(normalize_output(base, &[])
            .starts_with("<root>/sympy/core.py:?: SymPyDeprecationWarning"));
        // The same under the sandbox's temp folder, whose path is hidden whole (sympy-13773:
        // `…/sympy/matrices/matrices.py:2090: DeprecationWarning` at base, `:2092:` with a
        // candidate that adds two lines above it).
        let at = |dir: &str, n: u32| {
            format!("/tmp/dei-sandbox-{dir}/tree/sympy/matrices/matrices.py:{n}: DeprecationWarning: abc\n")
        };
        assert_eq!(
            normalize_output(&at("edAHZL", 2090), &[]),
            normalize_output(&at("Qx81pz", 2092), &[])
        );
        assert_eq!(
            normalize_output(&at("edAHZL", 2090), &[]),
            "<tmp>:?: DeprecationWarning: abc\n"
        );
        // A temp path that is not a Python file keeps what follows it.
        assert_eq!(
            normalize_output("/tmp/x/data.csv:12: bad row", &[]),
            "<tmp>:12: bad row\n"
        );
        // Numbers elsewhere still count: a value printed after `.py:` without a colon, a
        // ratio, a result.
        assert_ne!(
            normalize_output("see a.py:12 and 3", &[]),
            normalize_output("see a.py:12 and 4", &[])
        );
        assert_ne!(
            normalize_output("x.py:3 ok", &[]),
            normalize_output("x.py:4 ok", &[])
        );
    }

    #[test]
    fn an_error_reworded_is_no_change() {
        let o = |exit, exc: Option<&str>, out: &str| ReproOutcome {
            exit,
            exception: exc.map(str::to_string),
            output: out.to_string(),
        };
        let base = o(
            Some(1),
            Some("ValueError"),
            "[dei-repro] statement 2 raised ValueError: not enough values to unpack\n",
        );
        let reworded = o(
            Some(1),
            Some("ValueError"),
            "[dei-repro] statement 2 raised ValueError: an empty array has no shape.\n",
        );
        assert!(!reworded.changed_from(&base));
        // Another statement, another type, another value printed, or no longer raising: changed.
        for other in [
            o(
                Some(1),
                Some("ValueError"),
                "[dei-repro] statement 3 raised ValueError: x\n",
            ),
            o(
                Some(1),
                Some("ValueError"),
                "[dei-repro] statement 2 raised TypeError: x\n",
            ),
            o(
                Some(1),
                Some("ValueError"),
                "[dei-repro] statement 2 raised ValueError: x\n[]\n",
            ),
            o(Some(0), None, "[]\n"),
        ] {
            assert!(other.changed_from(&base), "{other:?}");
        }
        // Other lines that differ only after a colon still count.
        assert!(o(Some(0), None, "Result: 5\n").changed_from(&o(Some(0), None, "Result: 6\n")));
    }

    #[test]
    fn a_candidates_own_prints() {
        let added = [
            "        print(\"res1:\", res1, \"cond1:\", cond1)",
            "    print(f\"Debug: p = {p}, i = {i}\")",
            "print(rf'Before substitution: {c}')",
            "print(x)",
            "print(f\"{x}\")",
            "print('a: %s' % a)",
            "    fprint(\"not a print\")",
            "print(\"res1:\", res1)",
        ];
        assert_eq!(
            print_prefixes(added),
            vec!["res1:", "Debug: p =", "Before substitution:"]
        );
        let base = ReproOutcome {
            exit: Some(0),
            exception: None,
            output: "res1: kept, the base printed it\n[(1,)]\n".into(),
        };
        let cand = ReproOutcome {
            output: "res1: kept, the base printed it\nDebug: p = 2, i = 1\n[(1,)]\nDebug: p = 3, i = 2\n"
                .into(),
            ..base.clone()
        };
        let own = print_prefixes(added);
        let dropped = cand.clone().without_own_prints(&own, &base);
        assert!(!dropped.changed_from(&base), "{}", dropped.output);
        // What the fix changes still shows.
        let fixed = ReproOutcome {
            output: "Debug: p = 2, i = 1\n[(1, 2)]\n".into(),
            ..base.clone()
        };
        assert!(fixed.without_own_prints(&own, &base).changed_from(&base));
        // Without its own prints the same output is a change.
        assert!(cand.without_own_prints(&[], &base).changed_from(&base));
    }

    #[test]
    fn final_exception_from_marker_or_traceback() {
        let tb = "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n  File \"/x/sympy/core/sympify.py\", line 9, in sympify\n    raise SympifyError(a)\nsympy.core.sympify.SympifyError: SympifyError: 'x'\n";
        assert_eq!(final_exception(tb).as_deref(), Some("SympifyError"));
        let two = format!("{tb}\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 2\nKeyError: 'k'\n");
        assert_eq!(final_exception(&two).as_deref(), Some("KeyError"));
        assert_eq!(final_exception("all fine\n[1, 2]\n"), None);
        let marked = "[dei-repro] statement 2 raised TypeError: bad\n[dei-repro] first exception: TypeError\n";
        assert_eq!(final_exception(marked).as_deref(), Some("TypeError"));
        assert_eq!(final_exception("[dei-repro] no exception\n"), None);
    }

    #[test]
    fn the_first_failing_statement_survives_normalizing() {
        let out = "1\n[dei-repro] statement 4 raised ValueError: bad 0x7f3a\n\
                   [dei-repro] statement 9 raised KeyError: 'a'\n[dei-repro] first exception: ValueError\n";
        let run = ReproOutcome::read(Some(1), out, "", &["/tmp/dei-sandbox-x"]);
        assert_eq!(first_failing_statement(&run.output), Some(4));
        assert_eq!(
            first_failing_statement("[dei-repro] statement 12 raised E\n"),
            Some(12)
        );
        assert_eq!(first_failing_statement("[dei-repro] no exception\n"), None);
        assert_eq!(
            first_failing_statement("Traceback (most recent call last):\nValueError: x\n"),
            None
        );
    }

    #[test]
    fn behaviour_classes_count_families_not_runs() {
        let base = ReproOutcome::read(Some(1), "[dei-repro] first exception: TypeError\n", "", &[]);
        let fixed = ReproOutcome::read(Some(0), "3\n[dei-repro] no exception\n", "", &[]);
        assert!(fixed.changed_from(&base));
        assert_eq!(base.exception.as_deref(), Some("TypeError"));
        let reg_ok = Regression {
            stable: 5,
            ..Default::default()
        };
        let reg_bad = Regression {
            stable: 5,
            broken: vec!["t.py::a".into()],
            ..Default::default()
        };
        let fix = Signature::new(Some(&reg_ok), Some(fixed.clone()));
        let same = Signature::new(Some(&reg_ok), Some(base.clone()));
        let breaks = Signature::new(Some(&reg_bad), Some(fixed));
        let cands = [
            ("acr-v20240408_acr-run-1", &fix),
            ("acr-v20240408_acr-run-2", &fix),
            ("acr-v20240408_acr-run-3", &fix),
            ("20240604_CodeR", &same),
            ("20240623_moatless_claude35sonnet", &same),
            ("sweagent-gpt4-0125_cost_2_2", &breaks),
        ];
        let classes = behaviour_classes(&cands);
        assert_eq!(classes.len(), 3);
        assert_eq!(
            classes[0].members,
            vec![3, 4],
            "two families beat three runs of one"
        );
        assert_eq!(classes[0].support(), 2);
        assert_eq!(classes[1].members, vec![0, 1, 2]);
        assert_eq!(classes[1].families, vec!["acr-v20240408"]);
        assert_eq!(
            classes[2].signature.broken.as_deref(),
            Some(&["t.py::a".to_string()][..])
        );
    }
}
