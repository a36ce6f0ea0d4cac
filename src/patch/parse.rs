//! A tolerant unified-diff parser.
//!
//! Accepts what agents really write: `diff --git` headers or bare `---`/`+++` pairs, `a/`/`b/`
//! prefixes or none, CRLF line ends, blank lines standing for empty context lines, hunk
//! counts that do not match the body, prose before the first header, and
//! `\ No newline at end of file` markers.

/// One line of a hunk body. Text keeps its line terminator (`"x\n"`, or `"x"` when the
/// diff says there is no newline at the end of the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

impl Line {
    pub fn text(&self) -> &str {
        match self {
            Line::Context(t) | Line::Remove(t) | Line::Add(t) => t,
        }
    }
    fn text_mut(&mut self) -> &mut String {
        match self {
            Line::Context(t) | Line::Remove(t) | Line::Add(t) => t,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    /// Text after the second `@@` (often the enclosing function).
    pub section: String,
    pub lines: Vec<Line>,
    /// 1-based line of the `@@` header in the diff.
    pub header_line: usize,
    /// The body did not match the header counts (tolerated, reported).
    pub count_mismatch: bool,
    /// 1-based diff line of a line that is neither context, `+` nor `-` inside the body, with
    /// more body lines after it: the hunk as read is cut short, so it is not applied.
    pub malformed_line: Option<usize>,
}

impl Hunk {
    /// Context lines before the first change.
    pub fn leading(&self) -> usize {
        self.lines
            .iter()
            .take_while(|l| matches!(l, Line::Context(_)))
            .count()
    }
    /// Context lines after the last change.
    pub fn trailing(&self) -> usize {
        self.lines
            .iter()
            .rev()
            .take_while(|l| matches!(l, Line::Context(_)))
            .count()
    }
}

impl Hunk {
    /// The lines this hunk expects to find (context and removals).
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|l| match l {
            Line::Context(t) | Line::Remove(t) => Some(t.as_str()),
            Line::Add(_) => None,
        })
    }
    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l, Line::Add(_)))
            .count()
    }
    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| matches!(l, Line::Remove(_)))
            .count()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilePatch {
    /// `None` for a file the patch creates.
    pub old_path: Option<String>,
    /// `None` for a file the patch deletes.
    pub new_path: Option<String>,
    pub hunks: Vec<Hunk>,
    pub binary: bool,
    /// 1-based line of the file's first header line in the diff.
    pub header_line: usize,
    /// `rename from`/`rename to` (the old path goes away).
    pub is_rename: bool,
    /// `copy from`/`copy to` (the old path stays).
    pub is_copy: bool,
    /// Modes from `old mode`/`new mode`/`new file mode`/`deleted file mode` lines (octal).
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    /// A traditional one-hunk diff that adds only, without `/dev/null`: git treats it as a
    /// creation when the old path does not exist.
    pub maybe_new: bool,
}

impl FilePatch {
    /// The path that names this file in reports: the new path, or the old one for deletions.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
    pub fn is_new(&self) -> bool {
        self.old_path.is_none()
    }
    pub fn is_delete(&self) -> bool {
        self.new_path.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Patch {
    pub files: Vec<FilePatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
    /// The file header is at fault (names that disagree or are missing, bad modes), not a hunk.
    pub header: bool,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "diff line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

fn strip_prefix_path(raw: &str) -> Option<String> {
    // Drop a trailing timestamp (`--- a/x\t2020-01-01 ...`) and quotes.
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    let raw = raw.trim_matches('"');
    if raw == "/dev/null" {
        return None;
    }
    let p = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    Some(p.to_string())
}

fn parse_range(s: &str) -> Option<(usize, usize)> {
    let (start, len) = match s.split_once(',') {
        Some((a, b)) => (a, b),
        None => (s, "1"),
    };
    Some((start.parse().ok()?, len.parse().ok()?))
}

fn parse_hunk_header(line: &str) -> Option<(usize, usize, usize, usize, String)> {
    let rest = line.strip_prefix("@@")?;
    let end = rest.find("@@")?;
    let ranges = rest[..end].trim();
    let section = rest[end + 2..].trim().to_string();
    let mut parts = ranges.split_whitespace();
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let (os, ol) = parse_range(old)?;
    let (ns, nl) = parse_range(new)?;
    Some((os, ol, ns, nl, section))
}

/// Lines that start a new file or hunk; a hunk body never continues past one.
fn is_header(line: &str, next: Option<&str>) -> bool {
    line.starts_with("diff --git ")
        || line.starts_with("@@ ")
        || (line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ ")))
}

/// Parse a unified diff. Prose around the diff is ignored; a diff with no file in it,
/// or a hunk with no file header, is an error.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut patch = Patch::default();
    let mut i = 0;
    let mut current: Option<FilePatch> = None;
    while i < lines.len() {
        let raw = lines[i];
        let line = raw.trim_end_matches(['\n', '\r']);
        let next = lines.get(i + 1).map(|l| l.trim_end_matches(['\n', '\r']));
        if let Some(rest) = line.strip_prefix("diff --git ") {
            if let Some(f) = current.take() {
                patch.files.push(f);
            }
            let mut f = FilePatch {
                header_line: i + 1,
                ..FilePatch::default()
            };
            // `a/x b/x`: split at " b/" when possible.
            if let Some(pos) = rest.rfind(" b/") {
                f.old_path = strip_prefix_path(&rest[..pos]);
                f.new_path = strip_prefix_path(&rest[pos + 1..]);
            } else if let Some((a, b)) = rest.split_once(' ') {
                f.old_path = strip_prefix_path(a);
                f.new_path = strip_prefix_path(b);
            }
            current = Some(f);
            i += 1;
            continue;
        }
        if line.starts_with("--- ") && next.is_some_and(|n| n.starts_with("+++ ")) {
            let old = strip_prefix_path(&line[4..]);
            let new = strip_prefix_path(&next.unwrap()[4..]);
            let reuse = current
                .as_ref()
                .is_some_and(|f| f.hunks.is_empty() && !f.binary);
            if !reuse {
                if let Some(f) = current.take() {
                    patch.files.push(f);
                }
                current = Some(FilePatch {
                    header_line: i + 1,
                    ..FilePatch::default()
                });
            }
            let f = current.as_mut().unwrap();
            f.old_path = old;
            f.new_path = new;
            i += 2;
            continue;
        }
        if let Some(f) = current.as_mut() {
            if f.hunks.is_empty() {
                let mode = |s: &str| u32::from_str_radix(s.trim(), 8).ok();
                if let Some(m) = line.strip_prefix("new file mode ") {
                    f.old_path = None;
                    f.new_mode = mode(m);
                } else if let Some(m) = line.strip_prefix("deleted file mode ") {
                    f.new_path = None;
                    f.old_mode = mode(m);
                } else if let Some(m) = line.strip_prefix("old mode ") {
                    f.old_mode = mode(m);
                } else if let Some(m) = line.strip_prefix("new mode ") {
                    f.new_mode = mode(m);
                } else if let Some(p) = line
                    .strip_prefix("rename from ")
                    .or_else(|| line.strip_prefix("copy from "))
                {
                    f.old_path = Some(p.trim().to_string());
                    f.is_rename = line.starts_with("rename");
                    f.is_copy = line.starts_with("copy");
                } else if let Some(p) = line
                    .strip_prefix("rename to ")
                    .or_else(|| line.strip_prefix("copy to "))
                {
                    f.new_path = Some(p.trim().to_string());
                } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch")
                {
                    f.binary = true;
                }
            }
        }
        if line.starts_with("@@") {
            let Some((os, ol, ns, nl, section)) = parse_hunk_header(line) else {
                return Err(ParseError {
                    line: i + 1,
                    message: format!("malformed hunk header `{line}`"),
                    header: false,
                });
            };
            let Some(f) = current.as_mut() else {
                return Err(ParseError {
                    line: i + 1,
                    message: "hunk before any file header (--- a/... +++ b/...)".into(),
                    header: false,
                });
            };
            let mut hunk = Hunk {
                old_start: os,
                old_len: ol,
                new_start: ns,
                new_len: nl,
                section,
                lines: Vec::new(),
                header_line: i + 1,
                count_mismatch: false,
                malformed_line: None,
            };
            i += 1;
            let (mut old_left, mut new_left) = (ol, nl);
            while i < lines.len() {
                let raw = lines[i];
                let body = raw.trim_end_matches(['\n', '\r']);
                let next = lines.get(i + 1).map(|l| l.trim_end_matches(['\n', '\r']));
                if body.starts_with('\\') {
                    // "\ No newline at end of file": the previous line has no terminator.
                    if let Some(last) = hunk.lines.last_mut() {
                        let t = last.text_mut();
                        while t.ends_with('\n') || t.ends_with('\r') {
                            t.pop();
                        }
                    }
                    i += 1;
                    continue;
                }
                if is_header(body, next) {
                    if old_left != 0 || new_left != 0 {
                        hunk.count_mismatch = true;
                    }
                    break;
                }
                if old_left == 0 && new_left == 0 {
                    // Counts satisfied: a following `+`/`-` line still belongs to this hunk
                    // (counts short by a line); anything else ends it.
                    let more = (body.starts_with('+') || body.starts_with('-'))
                        && !body.starts_with("-- ");
                    if !more {
                        break;
                    }
                    hunk.count_mismatch = true;
                }
                // Only reached for an ASCII first byte (or an empty line), so slicing at 1 is safe.
                let content =
                    || normalize_terminator(raw.get(1..).filter(|c| !c.is_empty()).unwrap_or("\n"));
                match body.chars().next() {
                    Some(' ') => {
                        hunk.lines.push(Line::Context(content()));
                        old_left = old_left.saturating_sub(1);
                        new_left = new_left.saturating_sub(1);
                    }
                    None => {
                        // An empty line stands for an empty context line (stripped trailing space).
                        hunk.lines.push(Line::Context("\n".to_string()));
                        old_left = old_left.saturating_sub(1);
                        new_left = new_left.saturating_sub(1);
                    }
                    Some('-') => {
                        hunk.lines.push(Line::Remove(content()));
                        old_left = old_left.saturating_sub(1);
                    }
                    Some('+') => {
                        hunk.lines.push(Line::Add(content()));
                        new_left = new_left.saturating_sub(1);
                    }
                    _ => {
                        // Trailing prose ends the hunk; a stray line with the body going on
                        // after it breaks it.
                        if next.is_some_and(|n| {
                            n.starts_with([' ', '+', '-'])
                                && !is_header(
                                    n,
                                    lines.get(i + 2).map(|l| l.trim_end_matches(['\n', '\r'])),
                                )
                        }) {
                            hunk.malformed_line = Some(i + 1);
                        }
                        hunk.count_mismatch = true;
                        break;
                    }
                }
                i += 1;
            }
            if old_left != 0 || new_left != 0 {
                hunk.count_mismatch = true;
            }
            // Empty lines consumed as context past the real end (counts too large) are an artefact.
            if hunk.count_mismatch {
                while hunk.lines.len() > 1
                    && hunk.lines.last() == Some(&Line::Context("\n".into()))
                    && raw_blank_tail(&lines, i)
                {
                    hunk.lines.pop();
                }
            }
            if hunk.lines.iter().any(|l| !matches!(l, Line::Context(_)))
                || hunk.lines.is_empty()
                || hunk.malformed_line.is_some()
            {
                f.hunks.push(hunk);
            }
            continue;
        }
        i += 1;
    }
    if let Some(f) = current.take() {
        patch.files.push(f);
    }
    if patch.files.is_empty() {
        return Err(ParseError {
            line: 1,
            message: "no file header found: this is not a unified diff".into(),
            header: false,
        });
    }
    Ok(patch)
}

/// True when the hunk body that ended before diff line `end` (0-based) ended with an empty line.
fn raw_blank_tail(lines: &[&str], end: usize) -> bool {
    end > 0
        && lines
            .get(end - 1)
            .is_some_and(|l| l.trim_end_matches(['\n', '\r']).is_empty())
}

/// Every body line keeps a terminator (a CRLF diff keeps `\r\n`, so it matches CRLF files
/// exactly and LF files only through fuzz); the no-newline marker strips it afterwards.
fn normalize_terminator(content: &str) -> String {
    if !content.ends_with('\n') {
        return format!("{content}\n");
    }
    content.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIMPLE: &str = "diff --git a/pkg/m.py b/pkg/m.py\nindex 1..2 100644\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,3 @@ def f():\n a\n-b\n+c\n d\n";

    #[test]
    fn parses_git_diff() {
        let p = parse(SIMPLE).unwrap();
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!(f.path(), "pkg/m.py");
        assert_eq!(f.hunks.len(), 1);
        let h = &f.hunks[0];
        assert_eq!(
            (h.old_start, h.old_len, h.new_start, h.new_len),
            (1, 3, 1, 3)
        );
        assert_eq!(h.section, "def f():");
        assert_eq!(h.lines[1], Line::Remove("b\n".into()));
        assert!(!h.count_mismatch);
    }

    #[test]
    fn new_and_deleted_files() {
        let d = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\ndiff --git a/o.py b/o.py\ndeleted file mode 100644\n--- a/o.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n";
        let p = parse(d).unwrap();
        assert_eq!(p.files.len(), 2);
        assert!(p.files[0].is_new());
        assert_eq!(p.files[0].hunks[0].lines[1], Line::Add("y".into()));
        assert!(p.files[1].is_delete());
        assert_eq!(p.files[1].path(), "o.py");
    }

    #[test]
    fn tolerates_bad_counts_and_prose() {
        let d = "Here is my fix:\n--- a/x.py\n+++ b/x.py\n@@ -1,9 +1,9 @@\n a\n-b\n+c\n@@ -20,2 +20,2 @@\n e\n-f\n+g\n";
        let p = parse(d).unwrap();
        assert_eq!(p.files[0].hunks.len(), 2);
        assert!(p.files[0].hunks[0].count_mismatch);
        assert_eq!(p.files[0].hunks[1].lines.len(), 3);
    }

    #[test]
    fn a_stray_line_inside_a_hunk_is_malformed_prose_after_it_is_not() {
        let stray = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\nstray\n+c\n d\n";
        let h = &parse(stray).unwrap().files[0].hunks[0];
        assert_eq!(h.malformed_line, Some(6));
        let prose = "--- a/x.py\n+++ b/x.py\n@@ -1,9 +1,9 @@\n a\n-b\n+c\nThat is the fix.\n";
        let h = &parse(prose).unwrap().files[0].hunks[0];
        assert_eq!(h.malformed_line, None);
        assert!(h.count_mismatch);
    }

    #[test]
    fn rejects_non_diff() {
        assert!(parse("just words\n").is_err());
        let e = parse("@@ -1 +1 @@\n-a\n+b\n").unwrap_err();
        assert_eq!(e.line, 1);
    }
}
