//! Agreement between candidates: a candidate that many independent agents agree with is
//! likelier right; near-duplicates from runs of one agent family count less.

use super::features::Features;
use std::collections::BTreeSet;

/// Round to thousandths so that equal evidence gives bit-identical values.
pub fn milli(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// Similarity of two candidates in `[0, 1]`, symmetric:
/// `1` for duplicates after normalization (equal [`Features::key`]); otherwise
/// `0.5·J(changed lines) + 0.3·J(edited definitions) + 0.2·J(files)` with `J` the Jaccard
/// index (the definitions term falls back to files when neither side names a definition).
/// Empty or unparsable candidates are similar to nothing.
pub fn similarity(a: &Features, b: &Features) -> f64 {
    if a.is_void() || b.is_void() {
        return 0.0;
    }
    if !a.key.is_empty() && a.key == b.key {
        return 1.0;
    }
    let files = jaccard(&a.files, &b.files);
    let defs = if a.defs.is_empty() && b.defs.is_empty() {
        files
    } else {
        jaccard(&a.defs, &b.defs)
    };
    milli((0.5 * jaccard(&a.lines, &b.lines) + 0.3 * defs + 0.2 * files).min(1.0))
}

/// Pairwise similarities (diagonal is 1 for reviewable candidates, 0 for void ones).
pub fn matrix(feats: &[Features]) -> Vec<Vec<f64>> {
    let n = feats.len();
    let mut m = vec![vec![0.0; n]; n];
    for i in 0..n {
        m[i][i] = if feats[i].is_void() { 0.0 } else { 1.0 };
        for j in i + 1..n {
            let s = similarity(&feats[i], &feats[j]);
            m[i][j] = s;
            m[j][i] = s;
        }
    }
    m
}

/// Support for candidate `i`: how many agent families vote for its change.
///
/// Every family `f` votes `max_j sim(i, j) + same_family · (Σ_j sim(i, j) − max_j sim(i, j))`
/// over its candidates `j` — its best match counts fully, further runs of the same family count
/// `same_family` each. Support is the sum of the votes minus 1 (the candidate's own vote).
/// The candidate itself takes part in its family's vote, so exact duplicates always get
/// exactly equal support, whoever proposed them; a duplicate from another family adds 1, a
/// duplicate from another run of the same family adds only `same_family`.
pub fn support(feats: &[Features], sim: &[Vec<f64>], i: usize, same_family: f64) -> f64 {
    if feats[i].is_void() {
        return 0.0;
    }
    let mut families: Vec<&str> = feats.iter().map(|f| f.family.as_str()).collect();
    families.sort_unstable();
    families.dedup();
    let mut total = 0.0;
    for fam in families {
        let votes: Vec<f64> = (0..feats.len())
            .filter(|&j| feats[j].family == fam)
            .map(|j| sim[i][j])
            .collect();
        let best = votes.iter().copied().fold(0.0, f64::max);
        let rest: f64 = votes.iter().sum::<f64>() - best;
        total += milli(best + same_family * rest);
    }
    milli((total - 1.0).max(0.0))
}

/// Exact duplicates of candidate `i` (other candidates with the same key): `(other families, same family)`.
pub fn duplicates(feats: &[Features], i: usize) -> (usize, usize) {
    if feats[i].is_void() || feats[i].key.is_empty() {
        return (0, 0);
    }
    let dup: Vec<usize> = (0..feats.len())
        .filter(|&j| j != i && !feats[j].is_void() && feats[j].key == feats[i].key)
        .collect();
    let same = dup
        .iter()
        .filter(|&&j| feats[j].family == feats[i].family)
        .count();
    (dup.len() - same, same)
}
