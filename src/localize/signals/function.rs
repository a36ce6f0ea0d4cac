//! The function-level signals' computations (see the table [`super::FUNCTION`]): each fills
//! column `k` of [`FunctionSignals`].

use super::FunctionSignals;
use crate::localize::bm25;
use crate::localize::index::{line_key, FileIndex};
use crate::localize::issue::{
    code_lines, resolve_path, weighted_parts, IssueRefs, MIN_QUOTED_LINE,
};
use crate::localize::query::{query_terms, title_terms};
use crate::localize::search::{FileHit, FuncHit, LocateOptions};
use crate::localize::tokens::{split_terms, stem, tokenize};
use crate::model::SnippetKind;
use std::collections::{HashMap, HashSet};

/// One definition's own text (lines of nested definitions left out), as terms.
struct Unit {
    terms: HashMap<String, u32>,
    len: u32,
    /// Its file's score relative to the best file's.
    file_share: f64,
    /// Code lines quoted in the issue that it holds (counted only when asked for).
    quoted: u32,
}

/// What the function-level signals share: the issue, read once, and the definitions of the
/// best files.
pub(super) struct Input<'a> {
    issue: &'a str,
    opts: &'a LocateOptions,
    refs: IssueRefs,
    /// The issue's weighted terms.
    query: HashMap<String, f64>,
    units: Vec<Unit>,
}

impl<'a> Input<'a> {
    /// The definitions of the first `opts.function_files` files, each line owned by its
    /// innermost definition; quoted code lines are looked for when `quoted`.
    pub(super) fn new(
        issue: &'a str,
        repo: &FileIndex,
        files: &[FileHit],
        opts: &'a LocateOptions,
        quoted: bool,
    ) -> (Input<'a>, Vec<FuncHit>) {
        let refs = IssueRefs::new(issue);
        let query = query_terms(issue, &opts.weights);
        // Quoted lines are hashed and looked for only when they count.
        let quoted: HashSet<u64> = if quoted {
            code_lines(issue).iter().map(|l| line_key(l)).collect()
        } else {
            HashSet::new()
        };
        let top = files.iter().take(opts.function_files).collect::<Vec<_>>();
        let best_file = top.first().map(|f| f.score).unwrap_or(1.0).max(1e-9);
        let mut hits: Vec<FuncHit> = Vec::new();
        let mut units: Vec<Unit> = Vec::new();
        for fh in &top {
            let Some(rf) = repo.get(&fh.path) else {
                continue;
            };
            let idx = rf.index();
            let lines: Vec<&str> = rf.text.lines().collect();
            // Each line belongs to its innermost definition.
            let mut owner: Vec<Option<usize>> = vec![None; lines.len() + 1];
            for (di, d) in idx.defs.iter().enumerate() {
                for o in &mut owner[d.lines.start..=d.lines.end.min(lines.len())] {
                    *o = Some(di);
                }
            }
            let mut per_def: Vec<HashMap<String, u32>> = vec![HashMap::new(); idx.defs.len()];
            let mut lens = vec![0u32; idx.defs.len()];
            let mut quoted_in = vec![0u32; idx.defs.len()];
            for (l, text) in lines.iter().enumerate() {
                if let Some(di) = owner[l + 1] {
                    if !quoted.is_empty()
                        && text.trim().len() >= MIN_QUOTED_LINE
                        && quoted.contains(&line_key(text))
                    {
                        quoted_in[di] += 1;
                    }
                    for t in tokenize(text) {
                        *per_def[di].entry(t).or_insert(0) += 1;
                        lens[di] += 1;
                    }
                }
            }
            for (di, d) in idx.defs.iter().enumerate() {
                let mut terms = std::mem::take(&mut per_def[di]);
                let mut extra = Vec::new();
                split_terms(d.short(), &mut extra);
                if let Some(doc) = &d.doc {
                    extra.extend(tokenize(doc));
                }
                for t in extra {
                    *terms.entry(t).or_insert(0) += 2;
                    lens[di] += 2;
                }
                hits.push(FuncHit {
                    path: fh.path.clone(),
                    name: d.name.clone(),
                    kind: d.kind,
                    lines: d.lines,
                    score: 0.0,
                });
                units.push(Unit {
                    terms,
                    len: lens[di],
                    file_share: fh.score / best_file,
                    quoted: quoted_in[di],
                });
            }
        }
        let input = Input {
            issue,
            opts,
            refs,
            query,
            units,
        };
        (input, hits)
    }

    fn docs(&self) -> Vec<(&HashMap<String, u32>, u32)> {
        self.units.iter().map(|u| (&u.terms, u.len)).collect()
    }
}

pub(super) fn bm25(input: &Input, s: &mut FunctionSignals, k: usize) {
    let (k1, b) = (input.opts.k1, input.opts.b);
    let scores = bm25::normalised_scores(&input.query, &input.docs(), k1, b);
    for (row, v) in s.x.iter_mut().zip(scores) {
        row[k] = v;
    }
}

pub(super) fn file(input: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, u) in s.x.iter_mut().zip(&input.units) {
        row[k] = u.file_share;
    }
}

pub(super) fn code_line(input: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, u) in s.x.iter_mut().zip(&input.units) {
        row[k] = 1.0 - (-(u.quoted as f64)).exp();
    }
}

pub(super) fn class_mention(input: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, hit) in s.x.iter_mut().zip(&s.hits) {
        if let Some((class, _)) = hit.name.rsplit_once('.') {
            row[k] = input.refs.names(class) as u8 as f64;
        }
    }
}

pub(super) fn mention(input: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, hit) in s.x.iter_mut().zip(&s.hits) {
        if input.refs.names(&hit.name) {
            row[k] = 1.0;
        }
    }
}

/// `_print_Sum`, `_eval_rewrite_as_Heaviside`: a named class as a part of the name (when the
/// name itself is not named).
pub(super) fn part_mention(input: &Input, s: &mut FunctionSignals, k: usize) {
    let refs = &input.refs;
    for (row, hit) in s.x.iter_mut().zip(&s.hits) {
        if refs.names(&hit.name) {
            continue;
        }
        let short = hit.name.rsplit('.').next().unwrap_or(&hit.name);
        row[k] = short.split('_').any(|p| {
            p.len() >= 3
                && p.chars().next().is_some_and(char::is_uppercase)
                && refs.mentions.iter().any(|m| m == p)
        }) as u8 as f64;
    }
}

pub(super) fn frame(input: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, hit) in s.x.iter_mut().zip(&s.hits) {
        for (depth, f) in input.refs.frames.iter().rev().enumerate() {
            if f.line >= hit.lines.start
                && f.line <= hit.lines.end
                && resolve_path(&f.file, [hit.path.as_str()]).is_some()
            {
                row[k] = 1.0 / (1.0 + depth as f64 * 0.5);
                break;
            }
        }
    }
}

/// Named identifiers (lowercased, as terms are) that the unit's code uses, by rarity among the
/// units.
pub(super) fn uses_mention(input: &Input, s: &mut FunctionSignals, k: usize) {
    let units = &input.units;
    if units.is_empty() {
        return;
    }
    let names: Vec<String> = input
        .refs
        .mentions
        .iter()
        .map(|m| m.to_lowercase())
        .collect();
    let n = units.len() as f64;
    let idf: Vec<f64> = names
        .iter()
        .map(|m| {
            let df = units.iter().filter(|u| u.terms.contains_key(m)).count() as f64;
            if df == 0.0 {
                0.0
            } else {
                ((n + 1.0) / df).ln()
            }
        })
        .collect();
    let mut uses: Vec<f64> = units
        .iter()
        .map(|u| {
            names
                .iter()
                .zip(&idf)
                .filter(|(m, _)| u.terms.contains_key(*m))
                .map(|(_, w)| w)
                .sum()
        })
        .collect();
    bm25::normalise(&mut uses);
    for (row, v) in s.x.iter_mut().zip(uses) {
        row[k] = v;
    }
}

pub(super) fn class(_: &Input, s: &mut FunctionSignals, k: usize) {
    for (row, hit) in s.x.iter_mut().zip(&s.hits) {
        row[k] = (hit.kind == SnippetKind::Class) as u8 as f64;
    }
}

pub(super) fn name_match(input: &Input, s: &mut FunctionSignals, k: usize) {
    if s.hits.is_empty() {
        return;
    }
    for (row, v) in s.x.iter_mut().zip(name_match_scores(input.issue, &s.hits)) {
        row[k] = v;
    }
}

pub(super) fn title_bm25(input: &Input, s: &mut FunctionSignals, k: usize) {
    let (k1, b) = (input.opts.k1, input.opts.b);
    let scores = bm25::normalised_scores(&title_terms(input.issue), &input.docs(), k1, b);
    for (row, v) in s.x.iter_mut().zip(scores) {
        row[k] = v;
    }
}

/// Per definition, the share of its own name's parts (by rarity among `hits`' names) whose
/// stem is the stem of a word of the issue (template and HTML comments left out).
fn name_match_scores(issue: &str, hits: &[FuncHit]) -> Vec<f64> {
    let mut words: HashSet<String> = HashSet::new();
    for (part, _) in weighted_parts(issue, 1.0, 1.0) {
        for t in tokenize(&part) {
            if t.len() >= 3 && t.bytes().all(|b| b.is_ascii_lowercase()) {
                words.insert(stem(&t));
            }
        }
    }
    let parts: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let short = h.name.rsplit('.').next().unwrap_or(&h.name);
            let mut t = Vec::new();
            split_terms(short, &mut t);
            // The whole name when it has parts, and parts too short to mean a word, go.
            if t.len() > 1 {
                let whole = short.to_lowercase();
                let whole = whole.trim_matches('_');
                t.retain(|p| p != whole);
            }
            t.retain(|p| p.len() >= 3 && p.bytes().all(|b| b.is_ascii_lowercase()));
            t.iter().map(|p| stem(p)).collect()
        })
        .collect();
    let mut df: HashMap<&str, u32> = HashMap::new();
    for p in &parts {
        for t in p.iter().collect::<HashSet<_>>() {
            *df.entry(t.as_str()).or_insert(0) += 1;
        }
    }
    let n = hits.len() as f64;
    parts
        .iter()
        .map(|p| {
            let idf = |t: &String| ((n + 1.0) / df[t.as_str()] as f64).ln();
            let all: f64 = p.iter().map(idf).sum();
            if all <= 0.0 {
                return 0.0;
            }
            p.iter()
                .filter(|t| words.contains(*t))
                .map(idf)
                .sum::<f64>()
                / all
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LineRange;

    #[test]
    fn name_match_compares_stems_and_weighs_rare_parts() {
        let hit = |name: &str| FuncHit {
            path: "p.py".into(),
            name: name.into(),
            kind: SnippetKind::Function,
            lines: LineRange { start: 1, end: 2 },
            score: 0.0,
        };
        let hits = [
            hit("DataArrayRolling.__iter__"),
            hit("MathMLPrinter._print_Symbol"),
            hit("MathMLPrinter._print_Integral"),
            hit("MathMLPrinter._print_Sum"),
            hit("reduce"),
        ];
        let m = name_match_scores(
            "center kwarg ignored when manually iterating; a symbol is printed wrong",
            &hits,
        );
        // `iterating` → `iter`; `printed`/`symbol` cover all of `_print_Symbol`.
        assert_eq!(m[0], 1.0, "{m:?}");
        assert_eq!(m[1], 1.0, "{m:?}");
        // Only the common part `print` of `_print_Integral` matches: some, not all.
        assert!(m[2] > 0.0 && m[2] < 0.5, "{m:?}");
        assert_eq!(m[4], 0.0, "{m:?}");
    }
}
