//! The diff parser of `git apply` (default options: `-p1`, no `--recount`), reimplemented so
//! that strict mode accepts and rejects exactly the patches git does.
//!
//! What git enforces and the tolerant parser forgives:
//! - hunk bodies must have exactly the line counts of their `@@` header ("corrupt patch");
//!   lines past the counts are ignored as junk, unless a later `@@ -` follows them
//!   ("patch fragment without header");
//! - every body line must end with a newline; a hunk must change something;
//! - one leading path component is stripped from every name (`-p1`), so a diff without `a/`/`b/`
//!   prefixes names other files (traditional `---`/`+++` diffs of slash-less names use `-p0`);
//! - a `diff --git` header must be self-consistent (`/dev/null` only with `new file mode`, ...);
//! - a `diff --git` entry without hunks must be binary or change metadata ("only garbage").

use super::parse::{FilePatch, Hunk, Line, ParseError, Patch};

struct State {
    p_value: usize,
    p_known: bool,
}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
        header: false,
    }
}

/// An error in a file's header lines (names, modes), not in its hunks.
fn header_err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        header: true,
        ..err(line, message)
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn is_dev_null(s: &str) -> bool {
    s.strip_prefix("/dev/null")
        .and_then(|r| r.bytes().next())
        .is_some_and(is_space)
}

const TERM_SPACE: u8 = 1;
const TERM_TAB: u8 = 2;

/// `find_name_common` with `end == NULL`: scan to the end of the line or a terminating blank.
fn find_name_common(
    line: &str,
    def: Option<&str>,
    mut p_value: usize,
    terminate: u8,
) -> Option<String> {
    let b = line.as_bytes();
    let mut start = if p_value == 0 { Some(0) } else { None };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_space(c) {
            if c == b'\n' {
                break;
            }
            let keeps = (c == b' ' && terminate & TERM_SPACE == 0)
                || (c == b'\t' && terminate & TERM_TAB == 0);
            if !keeps {
                break;
            }
        }
        i += 1;
        if c == b'/' && p_value > 0 {
            p_value -= 1;
            if p_value == 0 {
                start = Some(i);
            }
        }
    }
    let Some(start) = start else {
        return def.map(squash_slash);
    };
    if i == start {
        return def.map(squash_slash);
    }
    let name = &line[start..i];
    if let Some(d) = def {
        if d.len() < name.len() && name.starts_with(d) {
            return Some(squash_slash(d));
        }
    }
    Some(squash_slash(name))
}

fn squash_slash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_slash = false;
    for c in s.chars() {
        if c == '/' && prev_slash {
            continue;
        }
        prev_slash = c == '/';
        out.push(c);
    }
    out
}

/// `find_name_traditional`: a trailing tab starts a timestamp.
fn find_name_traditional(line: &str, def: Option<&str>, p_value: usize) -> Option<String> {
    find_name_common(line, def, p_value, TERM_TAB)
}

fn guess_p_value(name_line: &str) -> i64 {
    if is_dev_null(name_line) {
        return -1;
    }
    match find_name_traditional(name_line, None, 0) {
        Some(n) if !n.contains('/') => 0,
        _ => -1,
    }
}

/// `skip_tree_prefix`: drop `p` leading components; `None` for an absolute path or too few.
fn skip_tree_prefix(p: usize, s: &str) -> Option<&str> {
    if p == 0 {
        return if s.starts_with('/') { None } else { Some(s) };
    }
    let mut n = p;
    for (i, c) in s.bytes().enumerate() {
        if c == b'/' {
            n -= 1;
            if n == 0 {
                return if i == 0 { None } else { Some(&s[i + 1..]) };
            }
        }
    }
    None
}

/// `git_header_name`: the name on a `diff --git` line when both sides name the same path.
fn git_header_name(p: usize, rest: &str) -> Option<String> {
    if rest.starts_with('"') {
        return None; // quoted names: only rename/creation headers need it, and they repeat it
    }
    let name = skip_tree_prefix(p, rest)?;
    if name.contains('"') {
        return None;
    }
    let line = name.split('\n').next().unwrap_or(name);
    if !name.contains('\n') {
        return None;
    }
    for (len, c) in line.bytes().enumerate() {
        if c == b' ' || c == b'\t' {
            if len + 1 >= line.len() {
                return None;
            }
            let Some(second) = skip_tree_prefix(p, &line[len + 1..]) else {
                continue;
            };
            if second.len() == len && second == &line[..len] {
                return Some(line[..len].to_string());
            }
        }
    }
    None
}

fn parse_num(s: &[u8], at: usize) -> Option<(usize, usize)> {
    let digits = s[at.min(s.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits == 0 {
        return None;
    }
    let text = std::str::from_utf8(&s[at..at + digits]).ok()?;
    // strtoul saturates; a count this large can never match a body anyway.
    Some((text.parse().unwrap_or(usize::MAX), digits))
}

fn parse_range(s: &[u8], offset: usize, expect: &str) -> Option<(usize, usize, usize)> {
    if offset >= s.len() {
        return None;
    }
    let (a, d) = parse_num(s, offset)?;
    let mut at = offset + d;
    let mut b = 1;
    if s.get(at) == Some(&b',') {
        let (n, d2) = parse_num(s, at + 1)?;
        b = n;
        at += d2 + 1;
    }
    if !s[at..].starts_with(expect.as_bytes()) {
        return None;
    }
    Some((a, b, at + expect.len()))
}

/// `parse_fragment_header`: `@@ -a,b +c,d @@` (the line must end with a newline).
pub fn fragment_header(line: &str) -> Option<(usize, usize, usize, usize)> {
    if !line.ends_with('\n') {
        return None;
    }
    let b = line.as_bytes();
    let (os, ol, at) = parse_range(b, 4, " +")?;
    let (ns, nl, _) = parse_range(b, at, " @@")?;
    Some((os, ol, ns, nl))
}

struct Header {
    file: FilePatch,
    is_new: i8,
    is_delete: i8,
    /// Lines the header spans (hunks start right after).
    len: usize,
}

fn parse_mode(s: &str, line: usize) -> Result<u32, ParseError> {
    let digits: String = s.chars().take_while(|c| ('0'..='7').contains(c)).collect();
    let next = s.as_bytes().get(digits.len()).copied();
    if digits.is_empty() || !next.is_some_and(is_space) {
        return Err(header_err(line, format!("invalid mode `{}`", s.trim_end())));
    }
    Ok(u32::from_str_radix(&digits, 8).unwrap_or(0))
}

/// `parse_git_diff_header`: lines[i] starts with `diff --git `.
fn git_diff_header(st: &State, lines: &[&str], i: usize) -> Result<Header, ParseError> {
    let p = st.p_value;
    let def_name = git_header_name(p, &lines[i]["diff --git ".len()..]);
    let mut f = FilePatch {
        header_line: i + 1,
        ..FilePatch::default()
    };
    let (mut is_new, mut is_delete) = (0i8, 0i8);
    let (mut old, mut new): (Option<String>, Option<String>) = (None, None);
    let mut ext_line = 0usize;
    let mut j = i + 1;
    while j < lines.len() {
        let l = lines[j];
        let ln = j + 1;
        if !l.ends_with('\n') {
            break;
        }
        let verify = |name: &mut Option<String>,
                      isnull: bool,
                      rest: &str,
                      side: &str|
         -> Result<(), ParseError> {
            if name.is_none() && !isnull {
                *name = find_name_common(rest, None, p, TERM_TAB);
                return Ok(());
            }
            if let Some(n) = name.as_deref() {
                if isnull {
                    return Err(header_err(
                        ln,
                        format!("git apply: bad git-diff - expected /dev/null, got {n}"),
                    ));
                }
                if find_name_common(rest, None, p, TERM_TAB).as_deref() != Some(n) {
                    return Err(header_err(
                        ln,
                        format!("git apply: bad git-diff - inconsistent {side} filename"),
                    ));
                }
            } else if !is_dev_null(rest) {
                return Err(header_err(
                    ln,
                    "git apply: bad git-diff - expected /dev/null",
                ));
            }
            Ok(())
        };
        let sub = p.saturating_sub(1);
        if l.starts_with("@@ -") {
            break;
        } else if let Some(r) = l.strip_prefix("--- ") {
            verify(&mut old, is_new == 1, r, "old")?;
        } else if let Some(r) = l.strip_prefix("+++ ") {
            verify(&mut new, is_delete == 1, r, "new")?;
        } else if let Some(r) = l.strip_prefix("old mode ") {
            f.old_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix("new mode ") {
            f.new_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix("deleted file mode ") {
            is_delete = 1;
            old = def_name.clone();
            f.old_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix("new file mode ") {
            is_new = 1;
            new = def_name.clone();
            f.new_mode = Some(parse_mode(r, ln)?);
        } else if let Some(r) = l.strip_prefix("copy from ") {
            f.is_copy = true;
            old = find_name_common(r, None, sub, 0);
        } else if let Some(r) = l.strip_prefix("copy to ") {
            f.is_copy = true;
            new = find_name_common(r, None, sub, 0);
        } else if let Some(r) = l
            .strip_prefix("rename old ")
            .or_else(|| l.strip_prefix("rename from "))
        {
            f.is_rename = true;
            old = find_name_common(r, None, sub, 0);
        } else if let Some(r) = l
            .strip_prefix("rename new ")
            .or_else(|| l.strip_prefix("rename to "))
        {
            f.is_rename = true;
            new = find_name_common(r, None, sub, 0);
        } else if l.starts_with("similarity index ") || l.starts_with("dissimilarity index ") {
        } else if let Some(r) = l.strip_prefix("index ") {
            // `index abc..def 100644`: the mode is the old mode.
            if let Some((_, rest)) = r.split_once("..") {
                if let Some((_, m)) = rest.trim_end_matches('\n').split_once(' ') {
                    f.old_mode = Some(parse_mode(&format!("{m}\n"), ln)?);
                }
            }
        } else {
            break;
        }
        let ext =
            (is_delete == 1) as u8 + (is_new == 1) as u8 + f.is_rename as u8 + f.is_copy as u8;
        if ext > 1 {
            return Err(header_err(
                ln,
                format!("inconsistent header lines {ext_line} and {ln}"),
            ));
        }
        if ext > 0 && ext_line == 0 {
            ext_line = ln;
        }
        j += 1;
    }
    if old.is_none() && new.is_none() {
        let Some(d) = def_name.clone() else {
            return Err(header_err(j, format!("git diff header lacks filename information when removing {p} leading pathname component")));
        };
        old = Some(d.clone());
        new = Some(d);
    }
    if (new.is_none() && is_delete == 0) || (old.is_none() && is_new == 0) {
        return Err(header_err(j, "git diff header lacks filename information"));
    }
    f.old_path = old;
    f.new_path = new;
    Ok(Header {
        file: f,
        is_new,
        is_delete,
        len: j - i,
    })
}

enum Found {
    Header(Header, usize),
    None,
}

fn find_header(
    st: &mut State,
    lines: &[&str],
    from: usize,
    rest_bytes: &[usize],
) -> Result<Found, ParseError> {
    let mut i = from;
    while i < lines.len() {
        let l = lines[i];
        let size = rest_bytes[i];
        if l.len() < 6 {
            i += 1;
            continue;
        }
        if l.starts_with("@@ -") {
            if fragment_header(l).is_some() {
                return Err(err(
                    i + 1,
                    format!("patch fragment without header: {}", l.trim_end()),
                ));
            }
            i += 1;
            continue;
        }
        if size < l.len() + 6 {
            break;
        }
        if l.starts_with("diff --git ") {
            let h = git_diff_header(st, lines, i)?;
            if h.len <= 1 {
                i += 1;
                continue;
            }
            return Ok(Found::Header(h, i));
        }
        let next = lines.get(i + 1).copied().unwrap_or("");
        if !l.starts_with("--- ") || !next.starts_with("+++ ") {
            i += 1;
            continue;
        }
        let third = lines.get(i + 2).copied().unwrap_or("");
        if size < next.len() + 14 || !third.starts_with("@@ -") {
            i += 1;
            continue;
        }
        // Traditional patch.
        let (first, second) = (&l[4..], &next[4..]);
        if !st.p_known {
            let mut p = guess_p_value(first);
            let q = guess_p_value(second);
            if p < 0 {
                p = q;
            }
            if p >= 0 && p == q {
                st.p_value = p as usize;
                st.p_known = true;
            }
        }
        let mut f = FilePatch {
            header_line: i + 1,
            ..FilePatch::default()
        };
        let (mut is_new, mut is_delete) = (-1i8, -1i8);
        let name;
        if is_dev_null(first) {
            is_new = 1;
            is_delete = 0;
            name = find_name_traditional(second, None, st.p_value);
            f.new_path = name.clone();
        } else if is_dev_null(second) {
            is_new = 0;
            is_delete = 1;
            name = find_name_traditional(first, None, st.p_value);
            f.old_path = name.clone();
        } else {
            let first_name = find_name_traditional(first, None, st.p_value);
            name = find_name_traditional(second, first_name.as_deref(), st.p_value);
            f.old_path = name.clone();
            f.new_path = name.clone();
        }
        if name.is_none() {
            return Err(header_err(i + 1, "unable to find filename in patch"));
        }
        return Ok(Found::Header(
            Header {
                file: f,
                is_new,
                is_delete,
                len: 2,
            },
            i,
        ));
    }
    Ok(Found::None)
}

/// `parse_fragment`: returns the hunk and the number of diff lines it spans.
fn parse_fragment(lines: &[&str], i: usize, rest_bytes: &[usize]) -> Option<(Hunk, usize)> {
    let (os, ol, ns, nl) = fragment_header(lines[i])?;
    let (mut old, mut new) = (ol as i128, nl as i128);
    let mut hunk = Hunk {
        old_start: os,
        old_len: ol,
        new_start: ns,
        new_len: nl,
        section: lines[i]
            .splitn(3, "@@")
            .nth(2)
            .unwrap_or("")
            .trim()
            .to_string(),
        lines: Vec::new(),
        header_line: i + 1,
        count_mismatch: false,
        malformed_line: None,
    };
    let (mut added, mut deleted) = (0, 0);
    let mut j = i + 1;
    while j < lines.len() {
        if old == 0 && new == 0 {
            break;
        }
        let l = lines[j];
        if !l.ends_with('\n') {
            return None;
        }
        match l.as_bytes()[0] {
            b'\n' | b' ' => {
                old -= 1;
                new -= 1;
                hunk.lines.push(Line::Context(if l == "\n" {
                    "\n".into()
                } else {
                    l[1..].to_string()
                }));
            }
            b'-' => {
                deleted += 1;
                old -= 1;
                hunk.lines.push(Line::Remove(l[1..].to_string()));
            }
            b'+' => {
                added += 1;
                new -= 1;
                hunk.lines.push(Line::Add(l[1..].to_string()));
            }
            b'\\' => {
                if l.len() < 12 || !l.starts_with("\\ ") {
                    return None;
                }
                strip_last_newline(&mut hunk);
            }
            _ => return None,
        }
        j += 1;
    }
    if old != 0 || new != 0 || (added == 0 && deleted == 0) {
        return None;
    }
    // A trailing "\ No newline at end of file" after the counts ran out.
    if j < lines.len() && 12 < rest_bytes[j] && lines[j].starts_with("\\ ") {
        strip_last_newline(&mut hunk);
        j += 1;
    }
    Some((hunk, j - i))
}

fn strip_last_newline(h: &mut Hunk) {
    if let Some(last) = h.lines.last_mut() {
        let t = match last {
            Line::Context(t) | Line::Remove(t) | Line::Add(t) => t,
        };
        if t.ends_with('\n') {
            t.pop();
        }
    }
}

/// What `git apply` parses out of `text`, or the error it stops with.
pub fn parse_git(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    // Bytes from the start of each line to the end of the input.
    let mut rest_bytes = vec![0usize; lines.len() + 1];
    for k in (0..lines.len()).rev() {
        rest_bytes[k] = rest_bytes[k + 1] + lines[k].len();
    }
    let mut st = State {
        p_value: 1,
        p_known: false,
    };
    let mut patch = Patch::default();
    let mut i = 0;
    while i < lines.len() {
        let Found::Header(h, at) = find_header(&mut st, &lines, i, &rest_bytes)? else {
            break;
        };
        let Header {
            mut file,
            mut is_new,
            mut is_delete,
            len,
        } = h;
        let mut j = at + len;
        let (mut oldlines, mut newlines) = (0usize, 0usize);
        while j < lines.len() && rest_bytes[j] > 4 && lines[j].starts_with("@@ -") {
            let Some((hunk, n)) = parse_fragment(&lines, j, &rest_bytes) else {
                return Err(err(j + 1, "corrupt patch"));
            };
            oldlines += hunk.old_len;
            newlines += hunk.new_len;
            file.hunks.push(hunk);
            j += n;
        }
        if file.hunks.is_empty() {
            let l = lines.get(j).copied().unwrap_or("");
            if l == "GIT binary patch\n" {
                file.binary = true;
                j += 1;
                // literal/delta blocks, each ended by an empty line
                for _ in 0..2 {
                    if !lines
                        .get(j)
                        .is_some_and(|l| l.starts_with("literal ") || l.starts_with("delta "))
                    {
                        break;
                    }
                    while j < lines.len() && lines[j] != "\n" {
                        j += 1;
                    }
                    j += 1;
                }
            } else if l.ends_with(" differ\n")
                && (l.starts_with("Binary files ") || l.starts_with("Files "))
            {
                file.binary = true;
                j += 1;
            }
            let mode_change =
                matches!((file.old_mode, file.new_mode), (Some(a), Some(b)) if a != b);
            let metadata =
                file.is_rename || file.is_copy || is_new > 0 || is_delete != 0 || mode_change;
            if !file.binary && !metadata {
                return Err(err(j, "patch with only garbage"));
            }
        }
        let multi = file.hunks.len() > 1;
        if is_new < 0 && (oldlines > 0 || multi) {
            is_new = 0;
        }
        if is_delete < 0 && (newlines > 0 || multi) {
            is_delete = 0;
        }
        if is_new > 0 && oldlines > 0 {
            return Err(err(
                j,
                format!(
                    "new file {} depends on old contents",
                    file.new_path.as_deref().unwrap_or("")
                ),
            ));
        }
        if is_delete > 0 && newlines > 0 {
            return Err(err(
                j,
                format!(
                    "deleted file {} still has contents",
                    file.old_path.as_deref().unwrap_or("")
                ),
            ));
        }
        if is_new > 0 {
            file.old_path = None;
        }
        if is_delete > 0 {
            file.new_path = None;
        }
        if is_new < 0 || is_delete < 0 {
            // Undecided (a traditional one-hunk diff without /dev/null): decided by the tree.
            file.maybe_new = is_new < 0;
        }
        patch.files.push(file);
        i = j.max(at + 1);
    }
    if patch.files.is_empty() {
        return Err(err(1, "No valid patches in input"));
    }
    Ok(patch)
}
