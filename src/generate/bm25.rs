//! A lexical retriever: BM25 over function-level chunks of a repository's Python files.
//!
//! Chunks are the functions and methods (nested functions stay inside their parent), the head
//! of each class (header, docstring, attributes: up to its first method), and runs of
//! module-level code. Tokens know about identifiers: `get_full_url` and `HTTPAdapter` also
//! count as `get`, `full`, `url`, `http`, `adapter`, and the whole identifier counts too.

use crate::model::paths::is_python;
use crate::model::repo::Snapshot;
use crate::model::{LineRange, SnippetKind};
use crate::syntax::schematic::schematic;
use std::collections::HashMap;

/// One retrievable piece of code.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub path: String,
    pub kind: SnippetKind,
    /// Qualified name (`Class.method`); empty for module-level code.
    pub name: String,
    pub lines: LineRange,
    pub text: String,
}

const STOP: &[&str] = &[
    "the", "an", "is", "are", "was", "be", "to", "of", "and", "or", "in", "on", "at", "it", "its",
    "this", "that", "for", "with", "as", "by", "from", "if", "else", "elif", "not", "no", "self",
    "def", "return", "import", "class", "none", "true", "false", "pass", "but", "we", "can",
    "should", "would", "when", "then", "there", "here", "have", "has", "do", "does", "so", "also",
    "use", "used", "using", "will", "which", "what", "how", "all", "any", "some", "one", "py",
    "me", "my", "you", "get", "set", "in", "try", "except", "raise", "lambda", "yield", "while",
    "cls", "args", "kwargs",
];

fn stop(w: &str) -> bool {
    STOP.contains(&w)
}

/// Split an identifier at `_` and lower→upper / acronym→word boundaries: `HTTPAdapter` →
/// `HTTP`, `Adapter`; `get_full_url` → `get`, `full`, `url`.
pub fn split_identifier(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in word.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = part.char_indices().collect();
        let mut start = 0;
        for k in 1..chars.len() {
            let (i, c) = chars[k];
            let prev = chars[k - 1].1;
            let next_lower = chars.get(k + 1).is_some_and(|(_, n)| n.is_lowercase());
            let boundary = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase() && c.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && c.is_ascii_digit())
                || (prev.is_ascii_digit() && c.is_alphabetic());
            if boundary {
                out.push(&part[start..i]);
                start = i;
            }
        }
        out.push(&part[start..]);
    }
    out
}

/// Identifier-aware tokens of `text`, lowercased, stop words and single characters dropped.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.len() < 2 {
            continue;
        }
        let parts = split_identifier(word);
        if parts.len() > 1 {
            out.push(word.to_lowercase());
        }
        for p in parts {
            if p.len() < 2 || p.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            let low = p.to_lowercase();
            if !stop(&low) {
                out.push(low);
            }
        }
    }
    out
}

/// Cut one Python file into chunks.
pub fn chunks_of(path: &str, source: &str) -> Vec<Chunk> {
    let sch = schematic(path, source);
    let lines: Vec<&str> = source.split_inclusive('\n').collect();
    let text_of = |r: LineRange| -> String {
        lines[(r.start - 1).min(lines.len())..r.end.min(lines.len())].concat()
    };
    let mut out = Vec::new();
    let funcs: Vec<&super::schematic::Item> = sch
        .items
        .iter()
        .filter(|i| i.kind == SnippetKind::Function)
        .collect();
    for it in &sch.items {
        match it.kind {
            SnippetKind::Function => {
                let nested = funcs.iter().any(|f| {
                    f.depth < it.depth
                        && f.lines.start <= it.lines.start
                        && it.lines.end <= f.lines.end
                });
                if !nested {
                    out.push(Chunk {
                        path: path.into(),
                        kind: SnippetKind::Function,
                        name: it.name.clone(),
                        lines: it.lines,
                        text: text_of(it.lines),
                    });
                }
            }
            _ => {
                let first_child = sch
                    .items
                    .iter()
                    .filter(|c| {
                        c.depth == it.depth + 1
                            && it.lines.start < c.lines.start
                            && c.lines.end <= it.lines.end
                    })
                    .map(|c| c.lines.start)
                    .min();
                let end =
                    first_child.map_or(it.lines.end, |s| s.saturating_sub(1).max(it.lines.start));
                let r = LineRange::new(it.lines.start, end);
                out.push(Chunk {
                    path: path.into(),
                    kind: SnippetKind::Class,
                    name: it.name.clone(),
                    lines: r,
                    text: text_of(r),
                });
            }
        }
    }
    for r in &sch.top_level {
        let mut s = r.start;
        while s <= r.end {
            let e = (s + 199).min(r.end);
            let piece = LineRange::new(s, e);
            out.push(Chunk {
                path: path.into(),
                kind: SnippetKind::Module,
                name: String::new(),
                lines: piece,
                text: text_of(piece),
            });
            s = e + 1;
        }
    }
    out
}

/// A BM25 index over chunks.
#[derive(Debug, Default)]
pub struct Bm25 {
    pub chunks: Vec<Chunk>,
    postings: HashMap<String, Vec<(u32, u32)>>,
    lens: Vec<u32>,
    avg_len: f64,
    pub k1: f64,
    pub b: f64,
}

/// Largest file (bytes) the index reads; bigger ones are usually generated data.
pub const MAX_FILE_BYTES: usize = 1_000_000;

impl Bm25 {
    /// Index `(path, content)` pairs (only Python files).
    pub fn from_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Bm25 {
        let mut idx = Bm25 {
            k1: 1.2,
            b: 0.75,
            ..Default::default()
        };
        for (path, content) in files {
            if !is_python(path) || content.len() > MAX_FILE_BYTES {
                continue;
            }
            for c in chunks_of(path, content) {
                idx.add(c);
            }
        }
        idx.finish();
        idx
    }

    /// Index the Python files of a snapshot that `keep` accepts.
    pub fn from_snapshot(snap: &Snapshot, keep: impl Fn(&str) -> bool) -> anyhow::Result<Bm25> {
        let mut files = Vec::new();
        for p in snap.list_files()? {
            if is_python(&p) && keep(&p) {
                if let Some(text) = snap.read(&p)? {
                    files.push((p, text));
                }
            }
        }
        Ok(Bm25::from_files(
            files.iter().map(|(p, t)| (p.as_str(), t.as_str())),
        ))
    }

    fn add(&mut self, chunk: Chunk) {
        let id = self.chunks.len() as u32;
        let mut toks = tokenize(&chunk.path.replace(['/', '.'], " "));
        toks.extend(tokenize(&chunk.name));
        toks.extend(tokenize(&chunk.text));
        let mut tf: HashMap<String, u32> = HashMap::new();
        for t in &toks {
            *tf.entry(t.clone()).or_default() += 1;
        }
        for (t, n) in tf {
            self.postings.entry(t).or_default().push((id, n));
        }
        self.lens.push(toks.len() as u32);
        self.chunks.push(chunk);
    }

    fn finish(&mut self) {
        let total: u64 = self.lens.iter().map(|&l| l as u64).sum();
        self.avg_len = if self.lens.is_empty() {
            1.0
        } else {
            (total as f64 / self.lens.len() as f64).max(1.0)
        };
    }

    /// The `n` best chunks for `query`, best first, with their scores (ties by position).
    pub fn search(&self, query: &str, n: usize) -> Vec<(usize, f64)> {
        let mut q = tokenize(query);
        q.sort();
        q.dedup();
        let nd = self.chunks.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for t in &q {
            let Some(post) = self.postings.get(t) else {
                continue;
            };
            let df = post.len() as f64;
            let idf = ((nd - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(id, tf) in post {
                let tf = tf as f64;
                let len = self.lens[id as usize] as f64;
                let s = idf * tf * (self.k1 + 1.0)
                    / (tf + self.k1 * (1.0 - self.b + self.b * len / self.avg_len));
                *scores.entry(id).or_default() += s;
            }
        }
        let mut v: Vec<(usize, f64)> = scores.into_iter().map(|(i, s)| (i as usize, s)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// Files ranked by their best chunk's score, best first.
    pub fn rank_files(&self, query: &str, n: usize) -> Vec<(String, f64)> {
        let mut best: Vec<(String, f64)> = Vec::new();
        for (i, s) in self.search(query, usize::MAX) {
            let p = &self.chunks[i].path;
            if !best.iter().any(|(q, _)| q == p) {
                best.push((p.clone(), s));
                if best.len() == n {
                    break;
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split() {
        assert_eq!(split_identifier("HTTPAdapter"), ["HTTP", "Adapter"]);
        assert_eq!(split_identifier("get_full_url"), ["get", "full", "url"]);
        assert_eq!(
            split_identifier("parseURL2json"),
            ["parse", "URL", "2", "json"]
        );
        let t = tokenize("The HTTPAdapter.send() fails; see get_full_url");
        assert!(t.contains(&"httpadapter".to_string()));
        assert!(t.contains(&"adapter".to_string()));
        assert!(t.contains(&"get_full_url".to_string()));
        assert!(t.contains(&"url".to_string()));
        assert!(!t.contains(&"the".to_string()));
    }

    #[test]
    fn chunks_and_ranking() {
        let a = "import re\n\nclass Adapter:\n    \"\"\"Sends.\"\"\"\n    retries = 3\n\n    def send(self, request):\n        def inner():\n            return 1\n        return request.url\n\n\ndef proxy_headers(proxy):\n    return {'Proxy-Authorization': proxy}\n";
        let b = "def word_count(text):\n    return len(text.split())\n";
        let idx = Bm25::from_files([
            ("pkg/adapters.py", a),
            ("pkg/words.py", b),
            ("README.md", "x"),
        ]);
        let names: Vec<_> = idx
            .chunks
            .iter()
            .map(|c| (c.kind, c.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (SnippetKind::Class, "Adapter"),
                (SnippetKind::Function, "Adapter.send"),
                (SnippetKind::Function, "proxy_headers"),
                (SnippetKind::Module, ""),
                (SnippetKind::Function, "word_count"),
            ]
        );
        assert_eq!(idx.chunks[0].lines, LineRange::new(3, 6));
        let hits = idx.search("proxy authorization header is wrong", 3);
        assert_eq!(idx.chunks[hits[0].0].name, "proxy_headers");
        let files = idx.rank_files("WordCount miscounts words", 5);
        assert_eq!(files[0].0, "pkg/words.py");
        assert!(idx.search("zzzz", 5).is_empty());
    }
}
