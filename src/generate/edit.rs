//! Turning a model's reply into new file contents.
//!
//! Two edit forms:
//! - search/replace blocks in conflict-marker form, placed by fuzzy matching (no line numbers):
//!   exact lines, then whitespace-insensitive lines, then the most similar span by character
//!   similarity above [`SIMILARITY_THRESHOLD`]; the replacement is re-indented to the span;
//! - whole-definition rewrites spliced back by tree-sitter spans (or a line range for
//!   module-level code).
//!
//! Every edit must leave a Python file parsing at least as well as before
//! ([`check_syntax`]); otherwise the edit is refused with the first syntax error's position,
//! which the generator feeds back to the model once. CRLF files keep CRLF.

use crate::model::paths::is_python;
use crate::model::LineRange;
use crate::syntax::python;
use crate::syntax::schematic::schematic;
use std::fmt;

/// Lowest character similarity (0–1) at which a SEARCH text may land on a span.
pub const SIMILARITY_THRESHOLD: f64 = 0.8;
/// Two spans within this similarity of each other tie: the edit is refused.
pub const TIE_MARGIN: f64 = 0.03;

/// One search/replace block from a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub path: String,
    pub search: String,
    pub replace: String,
    /// 1-based line of the `<<<<<<< SEARCH` marker in the reply.
    pub reply_line: usize,
}

/// Why an edit was refused. The text is written to be shown to the model as is.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    /// The reply's blocks are malformed.
    Format {
        line: usize,
        why: String,
    },
    MissingFile {
        path: String,
    },
    NoMatch {
        path: String,
        block: usize,
        best: f64,
        near: Option<LineRange>,
    },
    Ambiguous {
        path: String,
        block: usize,
        how: String,
        spans: Vec<LineRange>,
    },
    UnknownDef {
        path: String,
        name: String,
    },
    Syntax {
        path: String,
        line: usize,
        column: usize,
        text: String,
    },
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::Format { line, why } => write!(f, "reply line {line}: {why}"),
            EditError::MissingFile { path } => {
                write!(
                    f,
                    "{path} does not exist; use an existing path or an empty SEARCH to create it"
                )
            }
            EditError::NoMatch {
                path,
                block,
                best,
                near,
            } => {
                write!(f, "block {block}: the SEARCH text is not in {path}")?;
                match near {
                    Some(r) => write!(
                        f,
                        " (closest span: lines {}-{}, similarity {:.2} < {:.2}); copy the lines exactly",
                        r.start, r.end, best, SIMILARITY_THRESHOLD
                    ),
                    None => write!(f, "; copy the lines exactly"),
                }
            }
            EditError::Ambiguous {
                path,
                block,
                how,
                spans,
            } => {
                let s: Vec<String> = spans
                    .iter()
                    .map(|r| format!("{}-{}", r.start, r.end))
                    .collect();
                write!(
                    f,
                    "block {block}: the SEARCH text matches {path} {how} at lines {}; include more surrounding lines so it names one place",
                    s.join(" and ")
                )
            }
            EditError::UnknownDef { path, name } => {
                write!(f, "{path} has no class or function `{name}`")
            }
            EditError::Syntax {
                path,
                line,
                column,
                text,
            } => write!(
                f,
                "the edit leaves {path} with a syntax error at line {line}, column {column}: `{}`",
                text.trim_end()
            ),
        }
    }
}

impl std::error::Error for EditError {}

fn is_marker(line: &str, fence: &str, word: &str) -> bool {
    let t = line.trim();
    t.starts_with(fence) && t[fence.len()..].trim().eq_ignore_ascii_case(word)
}

fn clean_path(line: &str) -> Option<String> {
    let t = line.trim().trim_start_matches(['#', '*', '-', '>']).trim();
    let t = t
        .strip_prefix("File:")
        .or_else(|| t.strip_prefix("file:"))
        .or_else(|| t.strip_prefix("Path:"))
        .or_else(|| t.strip_prefix("path:"))
        .unwrap_or(t);
    let t = t.trim().trim_matches(['`', '*', ':', '"', '\'']).trim();
    let word = t
        .split_whitespace()
        .rev()
        .find(|w| w.contains('.') || w.contains('/'))?;
    let w = word.trim_matches(['`', '*', ':', '"', '\'', '(', ')']);
    let w = w
        .strip_prefix("a/")
        .or_else(|| w.strip_prefix("b/"))
        .unwrap_or(w);
    let w = w.strip_prefix("./").unwrap_or(w);
    (!w.is_empty()).then(|| w.to_string())
}

/// Parse every search/replace block in a reply. The file path is the last non-empty,
/// non-fence line before `<<<<<<< SEARCH`, or the previous block's path.
pub fn parse_blocks(reply: &str) -> Result<Vec<Block>, EditError> {
    let lines: Vec<&str> = reply.lines().collect();
    let mut blocks = Vec::new();
    let mut last_text: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if is_marker(l, "<<<<<<<", "SEARCH") {
            let marker = i + 1;
            let path = last_text
                .and_then(clean_path)
                .or_else(|| blocks.last().map(|b: &Block| b.path.clone()))
                .ok_or_else(|| EditError::Format {
                    line: marker,
                    why: "no file path before `<<<<<<< SEARCH`; put the path on the line above"
                        .into(),
                })?;
            let mut search = Vec::new();
            let mut replace = Vec::new();
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim() != "=======" {
                if is_marker(lines[j], "<<<<<<<", "SEARCH")
                    || is_marker(lines[j], ">>>>>>>", "REPLACE")
                {
                    return Err(EditError::Format {
                        line: j + 1,
                        why: "expected `=======` before this marker".into(),
                    });
                }
                search.push(lines[j]);
                j += 1;
            }
            if j == lines.len() {
                return Err(EditError::Format {
                    line: marker,
                    why: "block has no `=======` line".into(),
                });
            }
            j += 1;
            while j < lines.len() && !is_marker(lines[j], ">>>>>>>", "REPLACE") {
                if is_marker(lines[j], "<<<<<<<", "SEARCH") {
                    return Err(EditError::Format {
                        line: j + 1,
                        why: "expected `>>>>>>> REPLACE` before this marker".into(),
                    });
                }
                replace.push(lines[j]);
                j += 1;
            }
            if j == lines.len() {
                return Err(EditError::Format {
                    line: marker,
                    why: "block has no `>>>>>>> REPLACE` line".into(),
                });
            }
            let join = |v: &[&str]| {
                v.iter()
                    .map(|l| format!("{}\n", l.trim_end_matches('\r')))
                    .collect::<String>()
            };
            blocks.push(Block {
                path,
                search: join(&search),
                replace: join(&replace),
                reply_line: marker,
            });
            last_text = None;
            i = j + 1;
            continue;
        }
        let t = l.trim();
        if !t.is_empty() && !t.starts_with("```") {
            last_text = Some(l);
        }
        i += 1;
    }
    Ok(blocks)
}

/// A file split into lines without terminators, remembering its line ending.
#[derive(Debug, Clone)]
struct Text {
    lines: Vec<String>,
    eol: &'static str,
    final_newline: bool,
}

impl Text {
    fn new(s: &str) -> Text {
        let crlf = s.matches("\r\n").count();
        let lf = s.matches('\n').count();
        let eol = if crlf > 0 && crlf * 2 >= lf {
            "\r\n"
        } else {
            "\n"
        };
        Text {
            lines: s
                .lines()
                .map(|l| l.trim_end_matches('\r').to_string())
                .collect(),
            eol,
            final_newline: s.is_empty() || s.ends_with('\n'),
        }
    }
    fn render(&self) -> String {
        let mut out = self.lines.join(self.eol);
        if self.final_newline && !self.lines.is_empty() {
            out.push_str(self.eol);
        }
        out
    }
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn indent_of(s: &str) -> &str {
    &s[..s.len() - s.trim_start().len()]
}

/// Shift `lines` so that a line indented like `from` is indented like `to`.
fn reindent(lines: &[String], from: &str, to: &str) -> Vec<String> {
    if from == to {
        return lines.to_vec();
    }
    let unit = to
        .chars()
        .next()
        .or_else(|| from.chars().next())
        .unwrap_or(' ');
    let delta = to.chars().count() as i64 - from.chars().count() as i64;
    lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                return String::new();
            }
            let ind = indent_of(l);
            match ind.strip_prefix(from) {
                Some(rest) => format!("{to}{rest}{}", l.trim_start()),
                None => {
                    let w = (ind.chars().count() as i64 + delta).max(0) as usize;
                    format!("{}{}", unit.to_string().repeat(w), l.trim_start())
                }
            }
        })
        .collect()
}

/// How a SEARCH text was placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Placement {
    Exact,
    Whitespace,
    Similar(f64),
}

/// Where a SEARCH text lands: lines `start..end` (0-based, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub how: Placement,
}

fn to_range(start: usize, end: usize) -> LineRange {
    LineRange::new(start + 1, end.max(start + 1))
}

/// Find the span of `file` that `search` (both without line terminators) names.
/// `path`/`block` only label errors.
pub fn find_span(
    file: &[String],
    search: &[String],
    path: &str,
    block: usize,
) -> Result<Span, EditError> {
    let n = search.len();
    let tie = |how: &str, starts: Vec<(usize, usize)>| EditError::Ambiguous {
        path: path.into(),
        block,
        how: how.into(),
        spans: starts.into_iter().map(|(s, e)| to_range(s, e)).collect(),
    };
    if n == 0 || n > file.len() + 2 {
        return Err(EditError::NoMatch {
            path: path.into(),
            block,
            best: 0.0,
            near: None,
        });
    }
    // One pass: where `needle` stands in `hay`; one place settles it, several are ambiguous.
    let unique = |hay: &[String], needle: &[String], how: Placement, said: &str| {
        let hits: Vec<usize> = match hay.len().checked_sub(n) {
            Some(last) => (0..=last).filter(|&p| hay[p..p + n] == *needle).collect(),
            None => Vec::new(),
        };
        match hits[..] {
            [] => None,
            [p] => Some(Ok(Span {
                start: p,
                end: p + n,
                how,
            })),
            _ => Some(Err(tie(
                said,
                hits.into_iter().map(|p| (p, p + n)).collect(),
            ))),
        }
    };
    // 1. Exact lines.
    if let Some(found) = unique(file, search, Placement::Exact, "exactly") {
        return found;
    }
    // 2. Same lines ignoring whitespace.
    let fnorm: Vec<String> = file.iter().map(|l| norm(l)).collect();
    let snorm: Vec<String> = search.iter().map(|l| norm(l)).collect();
    if let Some(found) = unique(&fnorm, &snorm, Placement::Whitespace, "ignoring whitespace") {
        return found;
    }
    // 3. Most similar span, allowing a couple of missing or extra lines.
    let mut starts: Vec<usize> = Vec::new();
    for (fi, fl) in fnorm.iter().enumerate() {
        if fl.len() < 4 {
            continue;
        }
        for (si, sl) in snorm.iter().enumerate() {
            if sl == fl {
                for d in -2i64..=2 {
                    let p = fi as i64 - si as i64 + d;
                    if p >= 0 && (p as usize) < file.len() {
                        starts.push(p as usize);
                    }
                }
            }
        }
    }
    if starts.is_empty() && file.len() <= 3000 {
        starts = (0..file.len()).collect();
    }
    starts.sort_unstable();
    starts.dedup();
    let want = snorm.join("\n");
    let mut scored: Vec<(f64, usize, usize)> = Vec::new();
    for &p in &starts {
        for len in n.saturating_sub(2).max(1)..=n + 2 {
            if p + len > file.len() {
                break;
            }
            let have = fnorm[p..p + len].join("\n");
            let r = similar::TextDiff::configure()
                .timeout(std::time::Duration::from_millis(200))
                .diff_chars(&have, &want)
                .ratio() as f64;
            // Prefer the window with the searched length on equal scores.
            scored.push((r - (len.abs_diff(n) as f64) * 1e-6, p, p + len));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let Some(&(best, s, e)) = scored.first() else {
        return Err(EditError::NoMatch {
            path: path.into(),
            block,
            best: 0.0,
            near: None,
        });
    };
    if best < SIMILARITY_THRESHOLD {
        return Err(EditError::NoMatch {
            path: path.into(),
            block,
            best,
            near: Some(to_range(s, e)),
        });
    }
    if let Some(&(second, s2, e2)) = scored.iter().find(|(_, a, b)| *b <= s || *a >= e) {
        if best - second < TIE_MARGIN {
            return Err(tie(
                &format!("equally well (similarity {best:.2} and {second:.2})"),
                vec![
                    (s.min(s2), if s < s2 { e } else { e2 }),
                    (s.max(s2), if s < s2 { e2 } else { e }),
                ],
            ));
        }
    }
    Ok(Span {
        start: s,
        end: e,
        how: Placement::Similar(best),
    })
}

fn trim_blank(v: &mut Vec<String>) -> (usize, usize) {
    let lead = v.iter().take_while(|l| l.trim().is_empty()).count();
    v.drain(..lead);
    let trail = v.iter().rev().take_while(|l| l.trim().is_empty()).count();
    v.truncate(v.len() - trail);
    (lead, trail)
}

/// Apply one block to `content` (the file's current text; `None` when it does not exist).
/// Returns the new text and how the SEARCH text was placed (`None` for a new file).
pub fn apply_block(
    content: Option<&str>,
    b: &Block,
    index: usize,
) -> Result<(String, Option<Placement>), EditError> {
    let mut search: Vec<String> = b.search.lines().map(str::to_string).collect();
    let mut replace: Vec<String> = b.replace.lines().map(str::to_string).collect();
    let (lead, trail) = trim_blank(&mut search);
    // Drop as many blank edge lines from the replacement as were dropped from the search.
    let rl = replace
        .iter()
        .take_while(|l| l.trim().is_empty())
        .count()
        .min(lead);
    replace.drain(..rl);
    let rt = replace
        .iter()
        .rev()
        .take_while(|l| l.trim().is_empty())
        .count()
        .min(trail);
    replace.truncate(replace.len() - rt);
    let Some(content) = content else {
        if search.is_empty() {
            let mut t = Text::new("");
            t.lines = replace;
            t.final_newline = true;
            return Ok((t.render(), None));
        }
        return Err(EditError::MissingFile {
            path: b.path.clone(),
        });
    };
    let mut text = Text::new(content);
    if search.is_empty() {
        if text.lines.iter().all(|l| l.trim().is_empty()) {
            text.lines = replace;
            text.final_newline = true;
            return Ok((text.render(), None));
        }
        return Err(EditError::Format {
            line: b.reply_line,
            why: format!(
                "empty SEARCH for the existing file {}; quote the lines to replace",
                b.path
            ),
        });
    }
    let span = find_span(&text.lines, &search, &b.path, index)?;
    let from = search
        .iter()
        .find(|l| !l.trim().is_empty())
        .map_or("", |l| indent_of(l))
        .to_string();
    let to = text.lines[span.start..span.end]
        .iter()
        .find(|l| !l.trim().is_empty())
        .map_or("", |l| indent_of(l))
        .to_string();
    let new = reindent(&replace, &from, &to);
    text.lines.splice(span.start..span.end, new);
    Ok((text.render(), Some(span.how)))
}

/// Refuse `after` when it has more parse errors than `before` (Python files only).
pub fn check_syntax(path: &str, before: Option<&str>, after: &str) -> Result<(), EditError> {
    if !is_python(path) {
        return Ok(());
    }
    let index = python::PyIndex::new(after);
    if index.error_count() <= before.map_or(0, |b| python::PyIndex::new(b).error_count()) {
        return Ok(());
    }
    let (line, column) = index
        .errors
        .iter()
        .map(|e| (e.line, e.column))
        .min()
        .unwrap_or((1, 1));
    let text = after.lines().nth(line - 1).unwrap_or("").to_string();
    Err(EditError::Syntax {
        path: path.into(),
        line,
        column,
        text,
    })
}

/// One file changed by an edit.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEdit {
    pub path: String,
    pub before: Option<String>,
    pub after: String,
}

/// Apply blocks in order (several may touch one file), then check every touched file parses.
/// `read` gives a file's base content (`None`: not in the repository).
pub fn apply_blocks(
    blocks: &[Block],
    read: impl Fn(&str) -> Option<String>,
) -> Result<Vec<FileEdit>, EditError> {
    let mut out: Vec<FileEdit> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let pos = match out.iter().position(|f| f.path == b.path) {
            Some(p) => p,
            None => {
                let before = read(&b.path);
                out.push(FileEdit {
                    path: b.path.clone(),
                    after: before.clone().unwrap_or_default(),
                    before,
                });
                out.len() - 1
            }
        };
        let f = &mut out[pos];
        let current = if f.before.is_none() && f.after.is_empty() {
            None
        } else {
            Some(f.after.as_str())
        };
        let (after, _) = apply_block(current, b, i + 1)?;
        f.after = after;
    }
    for f in &out {
        check_syntax(&f.path, f.before.as_deref(), &f.after)?;
    }
    out.retain(|f| f.before.as_deref() != Some(f.after.as_str()));
    Ok(out)
}

/// Replace lines `range` (1-based, inclusive) with `code`, re-indented so its first line is
/// indented like the range's first line.
pub fn replace_lines(source: &str, range: LineRange, code: &str) -> String {
    let mut text = Text::new(source);
    let start = range.start.saturating_sub(1).min(text.lines.len());
    let end = range.end.min(text.lines.len()).max(start);
    let mut new: Vec<String> = code
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect();
    trim_blank(&mut new);
    let from = new
        .iter()
        .find(|l| !l.trim().is_empty())
        .map_or("", |l| indent_of(l))
        .to_string();
    let to = text.lines[start..end]
        .iter()
        .find(|l| !l.trim().is_empty())
        .map_or("", |l| indent_of(l))
        .to_string();
    let new = reindent(&new, &from, &to);
    text.lines.splice(start..end, new);
    text.render()
}

/// Rewrite the class or function `name` (qualified, or a unique suffix) of a Python file with
/// `code`, spliced over its tree-sitter span (decorators included), then check it parses.
pub fn rewrite_def(path: &str, source: &str, name: &str, code: &str) -> Result<String, EditError> {
    let sch = schematic(path, source);
    let item = sch.find(name).ok_or_else(|| EditError::UnknownDef {
        path: path.into(),
        name: name.into(),
    })?;
    let after = replace_lines(source, item.lines, code);
    check_syntax(path, Some(source), &after)?;
    Ok(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_blocks_with_paths_and_fences() {
        let reply = "Here is the fix.\n\ntextkit/words.py\n```python\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n```\n\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n### `pkg/b.py`\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n";
        let b = parse_blocks(reply).unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].path, "textkit/words.py");
        assert_eq!(b[0].search, "    return 1\n");
        assert_eq!(b[0].replace, "    return 2\n");
        assert_eq!(b[0].reply_line, 5);
        assert_eq!(b[1].path, "textkit/words.py");
        assert_eq!(b[2].path, "pkg/b.py");
        assert_eq!(b[2].search, "");
        let err = parse_blocks("a.py\n<<<<<<< SEARCH\nx\n").unwrap_err();
        assert!(err.to_string().contains("reply line 2"), "{err}");
        assert!(parse_blocks("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n").is_err());
    }

    #[test]
    fn rewrite_def_and_lines() {
        let src = "import os\n\nclass A:\n    @staticmethod\n    def f(x):\n        return x\n\n    def g(self):\n        pass\n";
        let new = rewrite_def(
            "m.py",
            src,
            "A.f",
            "@staticmethod\ndef f(x):\n    return x + 1\n",
        )
        .unwrap();
        assert_eq!(new, "import os\n\nclass A:\n    @staticmethod\n    def f(x):\n        return x + 1\n\n    def g(self):\n        pass\n");
        let err = rewrite_def("m.py", src, "A.f", "def f(x:\n    return 1\n").unwrap_err();
        assert!(matches!(err, EditError::Syntax { line: 4, .. }), "{err}");
        assert!(matches!(
            rewrite_def("m.py", src, "nope", "x"),
            Err(EditError::UnknownDef { .. })
        ));
        assert_eq!(
            replace_lines(src, LineRange::new(1, 1), "import sys\n"),
            src.replacen("os", "sys", 1)
        );
    }
}
