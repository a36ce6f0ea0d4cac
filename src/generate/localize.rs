//! File-level localization without a model: BM25 over function-level chunks plus a schematic
//! match of the issue text (paths and definition names it mentions). This is strategy 1's
//! retrieval step; the model then narrows its output to at most L files.

use super::bm25::Bm25;
use super::schematic::{is_python, is_test_path};
use crate::context::issue_mentions;
use crate::repo::Snapshot;
use std::collections::{HashMap, HashSet};

/// How the signals combine. `Default` holds the weights fitted on the tuning half (hash split)
/// of the available SWE-bench Lite instances by `cargo bench --bench localize`; [`Weights::PRIOR`]
/// are the weights set by hand before any measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// The file's best chunk score, relative to the best chunk overall.
    pub bm25: f64,
    /// The issue names the file's module path (`pkg.mod`, `pkg/mod.py`) or its stem.
    pub path: f64,
    /// Share (up to 3) of identifiers the issue mentions that the file defines.
    pub defs: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            bm25: 1.0,
            path: 0.5,
            defs: 0.5,
        }
    }
}

impl Weights {
    pub const BM25_ONLY: Weights = Weights {
        bm25: 1.0,
        path: 0.0,
        defs: 0.0,
    };
}

/// The signals for one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSignals {
    pub path: String,
    pub bm25: f64,
    pub path_hit: f64,
    pub defs: f64,
}

impl FileSignals {
    pub fn score(&self, w: &Weights) -> f64 {
        w.bm25 * self.bm25 + w.path * self.path_hit + w.defs * self.defs
    }
}

/// A localizer over one snapshot's non-test Python files.
pub struct Localizer {
    pub index: Bm25,
    /// Last components of the names each file defines.
    names: HashMap<String, HashSet<String>>,
}

impl Localizer {
    pub fn new(index: Bm25) -> Localizer {
        let mut names: HashMap<String, HashSet<String>> = HashMap::new();
        for c in &index.chunks {
            let set = names.entry(c.path.clone()).or_default();
            if let Some(last) = c
                .name
                .rsplit('.')
                .next()
                .filter(|n| !n.is_empty() && !n.starts_with("__"))
            {
                set.insert(last.to_string());
            }
        }
        Localizer { index, names }
    }

    /// Index a snapshot's Python files, leaving tests out.
    pub fn from_snapshot(snap: &Snapshot) -> anyhow::Result<Localizer> {
        Ok(Localizer::new(Bm25::from_snapshot(snap, |p| {
            is_python(p) && !is_test_path(p)
        })?))
    }

    /// Signals for the `pool` best files by BM25 and every file the issue names.
    pub fn signals(&self, issue: &str, pool: usize) -> Vec<FileSignals> {
        let hits = self.index.search(issue, usize::MAX);
        let top = hits.first().map_or(1.0, |h| h.1).max(1e-9);
        let mut best: HashMap<&str, f64> = HashMap::new();
        let mut order: Vec<&str> = Vec::new();
        for (i, s) in &hits {
            let p = self.index.chunks[*i].path.as_str();
            if !best.contains_key(p) {
                best.insert(p, *s / top);
                order.push(p);
            }
        }
        let mentions: HashSet<String> = issue_mentions(issue)
            .into_iter()
            .flat_map(|m| m.split('.').map(str::to_string).collect::<Vec<_>>())
            .filter(|m| m.len() >= 3)
            .collect();
        let words: HashSet<&str> = issue
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.len() >= 4)
            .collect();
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut consider = |p: &str, out: &mut Vec<FileSignals>| {
            if !seen.insert(p.to_string()) {
                return;
            }
            let module = p
                .trim_end_matches(".pyi")
                .trim_end_matches(".py")
                .trim_end_matches("/__init__");
            let dotted = module.replace('/', ".");
            let stem = module.rsplit('/').next().unwrap_or(module);
            let path_hit = if issue.contains(p) || (dotted.contains('.') && issue.contains(&dotted))
            {
                1.0
            } else if stem.len() >= 4 && words.contains(stem) {
                0.5
            } else {
                0.0
            };
            let defs = self
                .names
                .get(p)
                .map_or(0, |n| mentions.iter().filter(|m| n.contains(*m)).count());
            out.push(FileSignals {
                path: p.to_string(),
                bm25: best.get(p).copied().unwrap_or(0.0),
                path_hit,
                defs: defs.min(3) as f64 / 3.0,
            });
        };
        for p in order.iter().take(pool) {
            consider(p, &mut out);
        }
        for p in self.names.keys() {
            let module = p.trim_end_matches(".py").trim_end_matches("/__init__");
            let stem = module.rsplit('/').next().unwrap_or(module);
            let named = issue.contains(p.as_str())
                || issue.contains(&module.replace('/', "."))
                || (stem.len() >= 4 && words.contains(stem))
                || self.names[p].iter().any(|n| mentions.contains(n));
            if named {
                consider(p, &mut out);
            }
        }
        out
    }

    /// The `n` most likely files, best first.
    pub fn rank(&self, issue: &str, n: usize, w: &Weights) -> Vec<(String, f64)> {
        rank_signals(&self.signals(issue, 50), n, w)
    }
}

/// Rank precomputed signals (ties broken by path, so the order is reproducible).
pub fn rank_signals(signals: &[FileSignals], n: usize, w: &Weights) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = signals
        .iter()
        .map(|s| (s.path.clone(), s.score(w)))
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_lift_the_named_file() {
        let a = "def proxy_headers(proxy):\n    '''Headers for a proxy, with proxy auth and proxy url.'''\n    return {'proxy': proxy}\n";
        let b = "def resolve_redirects(resp):\n    return resp\n";
        let c = "class Session:\n    def send(self):\n        pass\n";
        let loc = Localizer::new(Bm25::from_files([
            ("pkg/adapters.py", a),
            ("pkg/sessions.py", b),
            ("pkg/other.py", c),
        ]));
        let issue = "proxy proxy proxy: Session.resolve_redirects loses the proxy";
        let sig = loc.signals(issue, 10);
        let get = |p: &str| sig.iter().find(|s| s.path == p).unwrap().clone();
        assert!(get("pkg/sessions.py").defs > 0.0 && get("pkg/adapters.py").defs == 0.0);
        assert!(get("pkg/other.py").defs > 0.0, "Session is defined there");
        let mixed = loc.rank(
            issue,
            3,
            &Weights {
                bm25: 1.0,
                path: 0.5,
                defs: 2.0,
            },
        );
        assert_eq!(mixed[0].0, "pkg/sessions.py");
        let sig = loc.signals("see pkg.other for details", 10);
        let other = sig.iter().find(|s| s.path == "pkg/other.py").unwrap();
        assert_eq!(other.path_hit, 1.0);
    }
}
