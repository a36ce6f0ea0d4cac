//! The file-level signals' computations (see the table [`super::FILE`]): each fills column `k`
//! of [`FileSignals`] and adds its evidence to `why`.

use super::{slot, FileSignals, FILE, FILE_NAMES};
use crate::localize::bm25;
use crate::localize::history::{churn_scores, history_scores};
use crate::localize::index::{line_key, tested_files, ChunkTerms, FileIndex, MAX_LINE_FILES};
use crate::localize::issue::{code_lines, resolve_path, IssueRefs};
use crate::localize::query::{query_terms, title_terms};
use crate::localize::search::LocateOptions;
use crate::localize::tokens::tokenize;
use std::collections::{HashMap, HashSet};

/// What the file-level signals share: the issue, read once.
pub(super) struct Input<'a> {
    issue: &'a str,
    repo: &'a FileIndex,
    opts: &'a LocateOptions,
    refs: IssueRefs,
    /// The issue's weighted terms.
    query: HashMap<String, f64>,
    /// Every file's terms and length.
    docs: Vec<(&'a HashMap<String, u32>, u32)>,
    /// Normalised BM25 of the query over each file (the `bm25` signal, read by others).
    content: Vec<f64>,
}

impl<'a> Input<'a> {
    pub(super) fn new(issue: &'a str, repo: &'a FileIndex, opts: &'a LocateOptions) -> Input<'a> {
        let query = query_terms(issue, &opts.weights);
        let docs: Vec<(&HashMap<String, u32>, u32)> = repo
            .files
            .iter()
            .map(|f| (&f.terms().terms, f.terms().len))
            .collect();
        let content = bm25::normalised_scores(&query, &docs, opts.k1, opts.b);
        Input {
            issue,
            repo,
            opts,
            refs: IssueRefs::new(issue),
            query,
            docs,
            content,
        }
    }
}

pub(super) fn bm25(input: &Input, s: &mut FileSignals, k: usize) {
    for (row, c) in s.x.iter_mut().zip(&input.content) {
        row[k] = *c;
    }
}

pub(super) fn path_bm25(input: &Input, s: &mut FileSignals, k: usize) {
    let path_terms: Vec<HashMap<String, u32>> = input
        .repo
        .files
        .iter()
        .map(|f| {
            let mut m = HashMap::new();
            for t in tokenize(&f.path.replace(".py", "")) {
                *m.entry(t).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let pdocs: Vec<(&HashMap<String, u32>, u32)> = path_terms
        .iter()
        .map(|m| (m, m.values().sum::<u32>()))
        .collect();
    let path_score = bm25::normalised_scores(&input.query, &pdocs, input.opts.k1, input.opts.b);
    for (row, p) in s.x.iter_mut().zip(path_score) {
        row[k] = p;
    }
}

/// Definitions the issue names, weighted by how specific the name is.
pub(super) fn def_mention(input: &Input, s: &mut FileSignals, k: usize) {
    let repo = input.repo;
    let nfiles = repo.files.len().max(1) as f64;
    for m in &input.refs.mentions {
        let defining = repo.files_defining(m);
        if defining.is_empty() {
            continue;
        }
        let idf = ((nfiles + 1.0) / defining.len() as f64).ln() / (nfiles + 1.0).ln();
        for &i in defining {
            s.x[i][k] += idf;
            s.why[i].push(format!("defines `{m}`"));
        }
    }
}

pub(super) fn path_mention(input: &Input, s: &mut FileSignals, k: usize) {
    let repo = input.repo;
    for p in &input.refs.paths {
        if let Some(f) = resolve_path(p, repo.paths()) {
            let i = repo.by_path[f];
            s.x[i][k] += 1.0;
            s.why[i].push("path named".into());
        }
    }
}

pub(super) fn module_mention(input: &Input, s: &mut FileSignals, k: usize) {
    for d in &input.refs.dotted {
        if let Some(i) = input.repo.module_file(d) {
            // `pkg` alone (a top-level __init__) says little.
            if d.contains('.') {
                s.x[i][k] += 1.0;
                s.why[i].push(format!("module `{d}`"));
            }
        }
    }
}

/// Traceback frames: the innermost repository frame counts most.
pub(super) fn frame(input: &Input, s: &mut FileSignals, k: usize) {
    let repo = input.repo;
    let resolved: Vec<usize> = input
        .refs
        .frames
        .iter()
        .filter_map(|f| resolve_path(&f.file, repo.paths()).map(|p| repo.by_path[p]))
        .collect();
    let mut seen = HashSet::new();
    for (depth, &i) in resolved.iter().rev().enumerate() {
        if seen.insert(i) {
            s.x[i][k] += 1.0 / (1.0 + depth as f64 * 0.5);
            s.why[i].push("traceback frame".into());
        }
    }
}

pub(super) fn code_line(input: &Input, s: &mut FileSignals, k: usize) {
    for (i, c) in code_line_scores(&code_lines(input.issue), input.repo)
        .into_iter()
        .enumerate()
    {
        if c > 0.0 {
            s.x[i][k] = c;
            s.why[i].push("holds quoted code".into());
        }
    }
}

pub(super) fn history(input: &Input, s: &mut FileSignals, k: usize) {
    let (k1, b) = (input.opts.k1, input.opts.b);
    for (i, h) in history_scores(&input.query, input.repo, k1, b)
        .into_iter()
        .enumerate()
    {
        if h > 0.0 {
            s.x[i][k] = h;
            s.why[i].push("changed by similar past commits".into());
        }
    }
}

pub(super) fn test_link(input: &Input, s: &mut FileSignals, k: usize) {
    let repo = input.repo;
    for (t, f) in repo.files.iter().enumerate() {
        if input.content[t] > 0.0 && s.aux[t] {
            for p in tested_files(&f.path, repo) {
                let i = repo.by_path[p];
                if s.x[i][k] == 0.0 {
                    s.why[i].push("its tests match the issue".into());
                }
                s.x[i][k] = s.x[i][k].max(input.content[t]);
            }
        }
    }
}

pub(super) fn churn(input: &Input, s: &mut FileSignals, k: usize) {
    for (row, c) in s.x.iter_mut().zip(churn_scores(input.repo)) {
        row[k] = c;
    }
}

pub(super) fn chunk_bm25(input: &Input, s: &mut FileSignals, k: usize) {
    let (k1, b) = (input.opts.k1, input.opts.b);
    for (i, c) in chunk_scores(&input.query, input.repo, k1, b)
        .into_iter()
        .enumerate()
    {
        if c > 0.0 {
            s.x[i][k] = c;
            if c >= 0.5 {
                s.why[i].push("a definition matches the issue".into());
            }
        }
    }
}

/// The explicit evidence that lends a file's imports the `import_neighbour` signal: a named
/// definition, the path, the module, a frame (signals computed always, so before it).
const EXPLICIT: [usize; 4] = [
    slot(&FILE_NAMES, "def_mention"),
    slot(&FILE_NAMES, "path_mention"),
    slot(&FILE_NAMES, "module_mention"),
    slot(&FILE_NAMES, "frame"),
];
const _: () = assert!(
    FILE[EXPLICIT[0]].always
        && FILE[EXPLICIT[1]].always
        && FILE[EXPLICIT[2]].always
        && FILE[EXPLICIT[3]].always
);

pub(super) fn import_neighbour(input: &Input, s: &mut FileSignals, k: usize) {
    let repo = input.repo;
    let [def, path, module, frame] = EXPLICIT;
    for f in 0..repo.files.len() {
        if s.aux[f] {
            continue;
        }
        let x = &s.x[f];
        let anchor = (x[def] + x[path] + x[module] + x[frame]).min(1.0);
        if anchor <= 0.0 {
            continue;
        }
        for g in repo.imports_of(f) {
            let v = anchor * input.content[g];
            if v > s.x[g][k] {
                if s.x[g][k] == 0.0 {
                    s.why[g].push(format!("imported by {}", repo.files[f].path));
                }
                s.x[g][k] = v;
            }
        }
    }
}

pub(super) fn title_bm25(input: &Input, s: &mut FileSignals, k: usize) {
    let (k1, b) = (input.opts.k1, input.opts.b);
    let t = bm25::normalised_scores(&title_terms(input.issue), &input.docs, k1, b);
    for (row, v) in s.x.iter_mut().zip(t) {
        row[k] = v;
    }
}

/// Per file, how strongly it holds the code lines the issue quotes: each line adds
/// 1/(files holding it) when at most [`MAX_LINE_FILES`] files do; the sum saturates to 0..1.
fn code_line_scores(lines: &[String], repo: &FileIndex) -> Vec<f64> {
    let mut sum = vec![0.0; repo.files.len()];
    if lines.is_empty() {
        return sum;
    }
    let index = repo.line_index();
    for l in lines {
        if let Some(files) = index.get(&line_key(l)) {
            if files.len() <= MAX_LINE_FILES {
                for &i in files {
                    sum[i as usize] += 1.0 / files.len() as f64;
                }
            }
        }
    }
    sum.iter().map(|s| 1.0 - (-s).exp()).collect()
}

/// Per file, the best BM25 of the query over one of its definition chunks
/// ([`RepoFile::chunks`](crate::localize::index::RepoFile::chunks)), with document frequencies and mean length over every chunk
/// of the repository; normalised to the best file.
fn chunk_scores(q: &HashMap<String, f64>, repo: &FileIndex, k1: f64, b: f64) -> Vec<f64> {
    let terms: Vec<&ChunkTerms> = repo.files.iter().map(|f| f.chunks()).collect();
    let n: usize = terms.iter().map(|t| t.lens.len()).sum();
    if n == 0 {
        return vec![0.0; terms.len()];
    }
    let total: u64 = terms
        .iter()
        .flat_map(|t| t.lens.iter())
        .map(|&l| l as u64)
        .sum();
    let avg = (total as f64 / n as f64).max(1.0);
    let idf: Vec<(&str, f64)> = q
        .iter()
        .filter_map(|(t, qw)| {
            let df: usize = terms
                .iter()
                .filter_map(|ft| ft.terms.get(t))
                .map(Vec::len)
                .sum();
            (df > 0).then(|| (t.as_str(), qw * bm25::idf(n as f64, df as f64)))
        })
        .collect();
    let mut out: Vec<f64> = terms
        .iter()
        .map(|ft| {
            let mut acc = vec![0.0f64; ft.lens.len()];
            for (t, w) in &idf {
                let Some(post) = ft.terms.get(*t) else {
                    continue;
                };
                for &(c, tf) in post {
                    let len = ft.lens[c as usize] as f64;
                    acc[c as usize] += w * bm25::tf(tf as f64, len, avg, k1, b);
                }
            }
            acc.into_iter().fold(0.0, f64::max)
        })
        .collect();
    bm25::normalise(&mut out);
    out
}
