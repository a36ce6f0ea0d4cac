//! Issue-only localization: from the issue text and a repository snapshot, rank the files
//! and then the functions a fix most likely edits.
//!
//! Files are scored by the weighted signals of [`super::signals::FILE`] (BM25 of the issue's
//! terms over each file's identifiers, its path, its best definition and the title alone;
//! definitions, paths, modules and traceback frames the issue names; quoted code; the tests
//! that match the issue; past commits like it, when the snapshot's history is attached with
//! [`FileIndex::with_history`]; modules imported by a file the issue points at). Functions are
//! then ranked inside the best files by the signals of [`super::signals::FUNCTION`]. The
//! weights are [`Weights`] (shipped: `src/localize/weights.json`); a signal at weight 0 is
//! not computed unless it is cheap. `dei-bench context` (crates/dei-bench) measures it; `--fit` (with
//! `--fit-tasks`) refits the weights.
//!
//! This module is the entry point; the parts live beside it and are re-exported here: the file
//! index ([`super::index`]), the tokenizer ([`super::tokens`]), BM25 ([`super::bm25`]), the
//! signals ([`super::signals`]), their weights ([`super::weights`]) and history
//! ([`super::history`]).
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use dei::localize::search::{locate, LocateOptions, FileIndex};
//! let snap = dei::model::repo::Snapshot::open("repo.git".as_ref(), "HEAD")?;
//! let repo = FileIndex::from_snapshot(&snap)?;
//! let loc = locate("TypeError in Session.request ...", &repo, &LocateOptions::default());
//! for f in loc.files.iter().take(5) { println!("{} {:.2}", f.path, f.score); }
//! # Ok(()) }
//! ```

pub use super::cache::BLOB_CACHE_BYTES;
pub use super::history::HISTORY_COMMITS;
pub use super::index::{tested_files, ChunkTerms, FileIndex, FileTerms, RepoFile, MAX_FILE_BYTES};
pub use super::signals::{
    dot, file_signals, function_signals, FileSignals, FunctionSignals, FILE_SIGNALS,
    FUNCTION_SIGNALS,
};
pub use super::tokens::{split_terms, tokenize};
pub use super::weights::Weights;
use crate::model::{LineRange, SnippetKind};

#[derive(Debug, Clone)]
pub struct LocateOptions {
    /// Files whose functions are ranked.
    pub function_files: usize,
    /// Functions returned.
    pub top_functions: usize,
    /// Files returned.
    pub top_files: usize,
    pub weights: Weights,
    /// BM25 parameters.
    pub k1: f64,
    pub b: f64,
}

impl Default for LocateOptions {
    fn default() -> Self {
        LocateOptions {
            function_files: 5,
            top_functions: 20,
            top_files: 20,
            weights: Weights::default(),
            k1: 1.2,
            b: 0.75,
        }
    }
}

/// A ranked file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileHit {
    pub path: String,
    pub score: f64,
    /// Evidence, for reports: "frame", "path", "defines `x`", "bm25".
    pub why: Vec<String>,
}

/// A ranked function, method or class.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FuncHit {
    pub path: String,
    /// Qualified name (`Class.method`).
    pub name: String,
    pub kind: SnippetKind,
    pub lines: LineRange,
    pub score: f64,
}

/// Result of issue-only localization, best first.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Localization {
    pub files: Vec<FileHit>,
    pub functions: Vec<FuncHit>,
}

/// Files with a positive score, best first (ties by path), at most `top`.
pub fn rank_files(repo: &FileIndex, signals: FileSignals, w: &Weights, top: usize) -> Vec<FileHit> {
    let score = signals.scores(&w.file_vector(), w.test_factor);
    let mut why = signals.why;
    let mut hits: Vec<FileHit> = (0..score.len())
        .filter(|&i| score[i] > 0.0)
        .map(|i| FileHit {
            path: repo.files[i].path.clone(),
            score: score[i],
            why: std::mem::take(&mut why[i]),
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
    });
    hits.truncate(top);
    hits
}

/// Rank the repository's files for an issue.
pub fn locate_files(issue: &str, repo: &FileIndex, opts: &LocateOptions) -> Vec<FileHit> {
    let wv = opts.weights.file_vector();
    let signals = file_signals(issue, repo, opts, |k| wv[k] != 0.0);
    rank_files(
        repo,
        signals,
        &opts.weights,
        opts.top_files.max(opts.function_files),
    )
}

/// Definitions best first (ties by path, then line), at most `top`.
pub fn rank_functions(signals: FunctionSignals, w: &Weights, top: usize) -> Vec<FuncHit> {
    let wv = w.function_vector();
    let mut out: Vec<FuncHit> = signals
        .hits
        .into_iter()
        .zip(&signals.x)
        .map(|(mut hit, x)| {
            hit.score = dot(x, &wv);
            hit
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.lines.start.cmp(&b.lines.start))
    });
    out.truncate(top);
    out
}

/// Rank the definitions of the best files.
pub fn locate_functions(
    issue: &str,
    repo: &FileIndex,
    files: &[FileHit],
    opts: &LocateOptions,
) -> Vec<FuncHit> {
    let wv = opts.weights.function_vector();
    let signals = function_signals(issue, repo, files, opts, |k| wv[k] != 0.0);
    rank_functions(signals, &opts.weights, opts.top_functions)
}

/// Rank files, then the functions of the best files, for an issue.
pub fn locate(issue: &str, repo: &FileIndex, opts: &LocateOptions) -> Localization {
    let mut files = locate_files(issue, repo, opts);
    let functions = locate_functions(issue, repo, &files, opts);
    files.truncate(opts.top_files);
    Localization { files, functions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::localize::query::title_terms;
    use crate::localize::signals::FILE_NAMES;

    fn slot(name: &str) -> usize {
        FILE_NAMES.iter().position(|n| *n == name).unwrap()
    }

    fn repo() -> FileIndex {
        FileIndex::from_pairs(vec![
            ("pkg/sessions.py".into(), "class Session:\n    def request(self, method, url):\n        return self.send(method)\n\n    def send(self, r):\n        \"\"\"Send a prepared request.\"\"\"\n        return adapter(r)\n".into()),
            ("pkg/utils.py".into(), "def parse_header_links(value):\n    \"\"\"Return a list of parsed link headers.\"\"\"\n    links = []\n    return links\n".into()),
            ("pkg/models.py".into(), "class Response:\n    def json(self):\n        return decode(self.text)\n".into()),
            ("tests/test_utils.py".into(), "def test_parse_header_links():\n    parse_header_links('x')\n".into()),
        ])
    }

    #[test]
    fn named_definition_ranks_its_file_first_and_tests_last() {
        let r = repo();
        let loc = locate(
            "parse_header_links returns wrong links for empty header",
            &r,
            &LocateOptions::default(),
        );
        assert_eq!(loc.files[0].path, "pkg/utils.py", "{:?}", loc.files);
        let test_pos = loc
            .files
            .iter()
            .position(|f| f.path.starts_with("tests/"))
            .unwrap();
        assert!(test_pos > 0);
        assert_eq!(loc.functions[0].name, "parse_header_links");
    }

    #[test]
    fn traceback_frames_point_at_file_and_function() {
        let r = repo();
        let issue = "Crash:\nTraceback (most recent call last):\n  File \"/site-packages/pkg/sessions.py\", line 3, in request\n    return self.send(method)\nKeyError";
        let loc = locate(issue, &r, &LocateOptions::default());
        assert_eq!(loc.files[0].path, "pkg/sessions.py");
        assert!(loc.files[0].why.iter().any(|w| w == "traceback frame"));
        assert_eq!(
            loc.functions[0].name, "Session.request",
            "{:?}",
            loc.functions
        );
    }

    #[test]
    fn tests_matching_the_issue_lift_their_source_file() {
        // Source files that say nothing the issue says; one test file full of its words.
        let r = FileIndex::from_pairs(vec![
            ("pkg/alpha.py".into(), "def run():\n    return 1\n".into()),
            ("pkg/beta.py".into(), "def run():\n    return 2\n".into()),
            (
                "tests/test_beta.py".into(),
                "def test_xfail_marker_dynamic():\n    node.add_marker(xfail)\n".into(),
            ),
        ]);
        let issue = "Dynamically adding xfail marker with add_marker no longer works";
        let with = LocateOptions {
            weights: Weights::default().with("test_link", 1.0),
            ..LocateOptions::default()
        };
        let ranked = locate_files(issue, &r, &with);
        let beta = ranked.iter().position(|f| f.path == "pkg/beta.py").unwrap();
        let alpha = ranked.iter().position(|f| f.path == "pkg/alpha.py");
        assert!(alpha.is_none_or(|a| beta < a), "{ranked:?}");
        assert!(ranked[beta].why.iter().any(|w| w.contains("its tests")));
    }

    #[test]
    fn quoted_source_lines_point_at_their_file() {
        let r = FileIndex::from_pairs(vec![
            ("pkg/mod.py".into(), "class Mod:\n    def eval(p, q):\n        if p.is_Pow and p.exp.is_Integer and p.base == q:\n            return 0\n".into()),
            ("pkg/other.py".into(), "def eval(p, q):\n    return p\n".into()),
        ]);
        let issue = "Wrong result\n```\nif p.is_Pow and p.exp.is_Integer and p.base == q:\n```";
        let only_lines = LocateOptions {
            weights: Weights::default()
                .with("bm25", 0.0)
                .with("path_bm25", 0.0)
                .with("def_mention", 0.0)
                .with("code_line", 1.0)
                .with("fn_code_line", 1.0),
            ..LocateOptions::default()
        };
        let loc = locate(issue, &r, &only_lines);
        assert_eq!(loc.files[0].path, "pkg/mod.py");
        assert!(
            loc.files.iter().all(|f| f.path != "pkg/other.py"),
            "{:?}",
            loc.files
        );
        assert_eq!(loc.functions[0].name, "Mod.eval");
    }

    #[test]
    fn title_bm25_favours_the_file_the_title_describes() {
        let r = FileIndex::from_pairs(vec![
            (
                "pkg/rolling.py".into(),
                "def window(center):\n    return center\n".into(),
            ),
            (
                "pkg/plot.py".into(),
                "def figure(axes, legend):\n    return axes\n".into(),
            ),
        ]);
        // The body talks about plotting at length; the title names the real subject.
        let issue = "rolling window ignores center\nI plot axes and a legend, then plot axes again with a legend and axes.";
        let only = |title_bm25: f64, bm25: f64| LocateOptions {
            weights: Weights::default()
                .with("bm25", bm25)
                .with("title_bm25", title_bm25)
                .with("path_bm25", 0.0)
                .with("chunk_bm25", 0.0)
                .with("test_link", 0.0)
                .with("history", 0.0),
            ..LocateOptions::default()
        };
        assert_eq!(
            locate_files(issue, &r, &only(0.0, 1.0))[0].path,
            "pkg/plot.py"
        );
        assert_eq!(
            locate_files(issue, &r, &only(1.0, 0.0))[0].path,
            "pkg/rolling.py"
        );
        assert_eq!(title_terms(issue).len(), 4, "{:?}", title_terms(issue));
    }

    #[test]
    fn import_neighbour_lifts_what_a_named_entry_point_imports() {
        // The issue names `factor` (defined in api.py); the fix is in impl.py, which api.py
        // imports and which shares the issue's words; noise.py shares them too, unimported.
        let r = FileIndex::from_pairs(vec![
            (
                "pkg/api.py".into(),
                "from pkg import impl\n\ndef factor(f):\n    return impl.go(f)\n".into(),
            ),
            (
                "pkg/impl.py".into(),
                "def go(f):\n    extension = gaussian(f)\n    return extension\n".into(),
            ),
            (
                "pkg/noise.py".into(),
                "def other(f):\n    extension = gaussian(f)\n    return extension\n".into(),
            ),
        ]);
        let issue = "`factor` with extension drops a gaussian factor";
        let only = |import_neighbour: f64| LocateOptions {
            weights: Weights::default()
                .with("bm25", 1.0)
                .with("path_bm25", 0.0)
                .with("def_mention", 0.0)
                .with("history", 0.0)
                .with("test_link", 0.0)
                .with("import_neighbour", import_neighbour),
            ..LocateOptions::default()
        };
        let pos = |w: f64, p: &str| {
            locate_files(issue, &r, &only(w))
                .iter()
                .position(|f| f.path == p)
        };
        // Without the signal the two are tied and the earlier path wins.
        assert!(pos(0.0, "pkg/impl.py") < pos(0.0, "pkg/noise.py"));
        let with = locate_files(issue, &r, &only(1.0));
        let imp = with.iter().find(|f| f.path == "pkg/impl.py").unwrap();
        let noise = with.iter().find(|f| f.path == "pkg/noise.py").unwrap();
        assert!(imp.score > noise.score, "{with:?}");
        assert!(imp.why.iter().any(|w| w == "imported by pkg/api.py"));
    }

    #[test]
    fn chunk_bm25_does_not_dilute_one_matching_definition_in_a_big_file() {
        // big.py holds one definition about the issue among much else; small.py holds the
        // same words in a short file. Whole-file BM25 prefers small.py by far; the best chunk
        // of big.py scores as well as small.py's.
        let mut big =
            String::from("def other(x):\n    # rewrite heaviside piecewise\n    return x\n");
        for i in 0..60 {
            big.push_str(&format!(
                "\ndef unrelated_{i}(a):\n    return alpha_{i} + beta_{i} * gamma_{i}\n"
            ));
        }
        let r = FileIndex::from_pairs(vec![
            ("pkg/big.py".into(), big),
            (
                "pkg/small.py".into(),
                "def other(x):\n    # rewrite heaviside piecewise\n    return x\n".into(),
            ),
        ]);
        assert_eq!(r.files[0].chunks().lens.len(), 61);
        let issue = "rewrite heaviside piecewise";
        let opts = LocateOptions::default();
        let s = file_signals(issue, &r, &opts, |_| true);
        let (big, small) = (&s.x[0], &s.x[1]);
        let (bm25, chunk) = (slot("bm25"), slot("chunk_bm25"));
        assert!(
            big[bm25] < 0.5 * small[bm25],
            "whole file: {big:?} vs {small:?}"
        );
        assert!(
            (big[chunk] - small[chunk]).abs() < 1e-9 && big[chunk] > 0.0,
            "{big:?} vs {small:?}"
        );
    }
}
