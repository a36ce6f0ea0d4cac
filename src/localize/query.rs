//! The issue as a query: its terms, weighted by where they stand (`query_terms`), and the
//! terms of its title alone (`title_terms`).

use super::issue::weighted_parts;
use super::tokens::{is_stop, tokenize};
use super::weights::Weights;
use std::collections::HashMap;

/// Weighted query terms of an issue: title words count `w.title`, `<details>` words
/// `w.details`, adjacent words joined (`man page` → `manpage`) `w.compound`; repeats are damped.
pub(super) fn query_terms(issue: &str, w: &Weights) -> HashMap<String, f64> {
    let mut q: HashMap<String, f64> = HashMap::new();
    for (part, pw) in weighted_parts(issue, w.title, w.details) {
        for t in tokenize(&part) {
            *q.entry(t).or_insert(0.0) += pw;
        }
        if w.compound > 0.0 {
            let words: Vec<String> = part
                .split(|c: char| !c.is_alphabetic())
                .filter(|x| x.len() >= 2)
                .map(str::to_lowercase)
                .collect();
            for pair in words.windows(2) {
                if !is_stop(&pair[0]) && !is_stop(&pair[1]) {
                    *q.entry(format!("{}{}", pair[0], pair[1])).or_insert(0.0) += pw * w.compound;
                }
            }
        }
    }
    // Dampen repeated terms.
    for v in q.values_mut() {
        if *v > 1.0 {
            *v = 1.0 + v.ln();
        }
    }
    q
}

/// The terms of the issue's title ([`super::issue::title`]: the first line, HTML comments dropped), each once.
pub(super) fn title_terms(issue: &str) -> HashMap<String, f64> {
    let mut q = HashMap::new();
    for t in tokenize(&super::issue::title(issue)) {
        q.insert(t, 1.0);
    }
    q
}
