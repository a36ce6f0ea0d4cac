//! A reproduction run's output, normalized so that two runs of the same behaviour compare equal
//! (temporary paths, addresses, timings, line numbers hidden), with its final exception and the
//! statement that first raised.

/// `text` cut for a reader: its first `max_lines` lines, within `max_chars` (on a character
/// boundary), with a last line saying how much was cut (`… [12 more lines]`).
pub fn clip(text: &str, max_lines: usize, max_chars: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    let mut kept = 0;
    for l in &lines {
        if kept == max_lines || out.len() + l.len() + 1 > max_chars {
            break;
        }
        out.push_str(l);
        out.push('\n');
        kept += 1;
    }
    if kept == 0 && !lines.is_empty() && max_lines > 0 {
        // One line longer than the whole allowance: its start.
        let mut end = max_chars.min(lines[0].len());
        while !lines[0].is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&lines[0][..end]);
        out.push_str(" …\n");
        kept = 1;
    }
    let more = lines.len() - kept;
    if more > 0 {
        out.push_str(&format!(
            "… [{more} more line{}]\n",
            if more == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Replace what differs between two runs of the same behaviour: the given roots (the sandbox
/// folder) → `<root>`, other temp paths (`/tmp/…`, `/var/folders/…`, and a sandbox folder's
/// wherever the temp folder is) → `<tmp>`, hexadecimal
/// addresses (`0x7f3a…`) → `0x?`, timings (`0.12s`, `1.5 seconds`, `12ms`) → `<time>`, numbers
/// after `id=`/`pid ` → `?`, line numbers in a traceback's `File "…", line 12` and a warning's
/// `x.py:12:` → `?`; trailing spaces and `\r` dropped.
pub fn normalize_output(text: &str, roots: &[&str]) -> String {
    let mut s = sandbox_paths_under_tmp(&text.replace("\r\n", "\n"));
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

/// What a sandbox folder's path holds (`dei-sandbox-<pid>-<random>`, see
/// [`crate::exec::sandbox`]).
const SANDBOX_IN_PATH: &str = "/dei-sandbox-";

/// A path through a sandbox folder, wherever the temp folder is (`/dev/shm/dei-sandbox-…`, a
/// user's `TMPDIR`), rewritten as under `/tmp/`, so that it reads as a temp path there does:
/// hidden whole, however long the folder's own path.
fn sandbox_paths_under_tmp(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (at, _) in s.match_indices(SANDBOX_IN_PATH) {
        // Back from the folder's name to where the path starts, within what is not written yet.
        let seg = &s[last..at];
        let start = seg
            .char_indices()
            .rev()
            .find(|&(_, c)| c.is_whitespace() || "'\"()[],:=<>".contains(c))
            .map(|(k, c)| last + k + c.len_utf8());
        let start = match start {
            Some(k) => k,
            None if last == 0 => 0,
            None => continue, // a second sandbox name in a path already written
        };
        let dir = &s[start..at];
        if !dir.starts_with('/') || dir == "/tmp" {
            continue;
        }
        out.push_str(&s[last..start]);
        out.push_str("/tmp");
        last = at;
    }
    out.push_str(&s[last..]);
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

/// Marker lines the reproduction script prints (see [`crate::exec::repro`]).
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

    /// The outcome as runs are compared, with the base run ([`ReproOutcome::changed_from`]) and
    /// with each other (behaviour classes): each statement's exception without its message
    /// (`[dei-repro] statement 4 raised NotImplementedError`). Two candidates that raise the same
    /// exception at the same statement, worded differently, behave alike, as a rewording is no
    /// change from the base run (fixes that raise the same error with and without a closing
    /// period behave alike).
    pub fn without_messages(&self) -> ReproOutcome {
        let mut output = String::with_capacity(self.output.len());
        for line in self.output.lines() {
            output.push_str(raised_head(line).unwrap_or(line));
            output.push('\n');
        }
        ReproOutcome {
            exit: self.exit,
            exception: self.exception.clone(),
            output,
        }
    }

    /// The candidate changed what the issue reported: any difference from the base run, except
    /// a statement that raises the same exception with other words (`[dei-repro] statement 4
    /// raised NotImplementedError: …`, only the message differing). Rewording an error message
    /// leaves the behaviour the issue reports as it was.
    /// Compared as behaviour classes compare runs ([`ReproOutcome::without_messages`]).
    pub fn changed_from(&self, base: &ReproOutcome) -> bool {
        self != base && self.without_messages() != base.without_messages()
    }
}
