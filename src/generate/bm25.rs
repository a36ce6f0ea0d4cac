//! A lexical retriever: BM25 over function-level chunks of a repository's Python files.
//!
//! Chunks are the functions and methods (nested functions stay inside their parent), the head
//! of each class (header, docstring, attributes: up to its first method), and runs of
//! module-level code. Terms are localization's ([`crate::localize::tokens`]: `get_full_url`
//! and `HTTPAdapter` also count as `full`, `url`, `http`, `adapter`, and the whole identifier
//! counts too), and so is the scorer ([`crate::localize::bm25`]).

use crate::localize::bm25;
use crate::localize::tokens::tokenize;
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
            let idf = bm25::idf(nd, post.len() as f64);
            for &(id, tf) in post {
                let len = self.lens[id as usize] as f64;
                let s = idf * bm25::tf(tf as f64, len, self.avg_len, self.k1, self.b);
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
    fn chunks_are_indexed_with_localizations_terms() {
        let idx = Bm25::from_files([(
            "pkg/adapters.py",
            "class HTTPAdapter:\n    def get_full_url(self):\n        return 1\n",
        )]);
        // Identifier parts and whole identifiers are both found (the tokenizer of localize).
        for q in ["adapter", "httpadapter", "full url", "get_full_url"] {
            assert!(!idx.search(q, 1).is_empty(), "{q}");
        }
        // Stop words are localization's: `the`, `should` match nothing; `kwargs`, a stop word
        // of the generator's former list only, is a term like any other.
        assert!(idx.search("the should", 1).is_empty());
        let kw = Bm25::from_files([("pkg/f.py", "def f(**kwargs):\n    return kwargs\n")]);
        assert_eq!(kw.search("kwargs", 1).len(), 1);
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
