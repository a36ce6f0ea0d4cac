//! BM25, the one lexical scorer of localization and of the generator's chunk retriever
//! (`generate::bm25`): a term's inverse document frequency ([`idf`]) times its saturated,
//! length-normalised frequency in the document ([`tf`]), summed over the query's terms.

use std::collections::HashMap;

/// BM25's inverse document frequency of a term held by `df` of `n` documents.
pub fn idf(n: f64, df: f64) -> f64 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// BM25's saturated term frequency in a document of `len` terms (collection mean `avg`).
pub fn tf(tf: f64, len: f64, avg: f64, k1: f64, b: f64) -> f64 {
    tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
}

/// BM25 scores of weighted `query` terms over documents given as term maps with their lengths.
pub fn scores(
    query: &HashMap<String, f64>,
    docs: &[(&HashMap<String, u32>, u32)],
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let n = docs.len().max(1) as f64;
    let avg = docs.iter().map(|(_, l)| *l as f64).sum::<f64>() / n;
    let avg = avg.max(1.0);
    let mut df: HashMap<&str, f64> = HashMap::new();
    for (terms, _) in docs {
        for q in query.keys() {
            if terms.contains_key(q) {
                *df.entry(q.as_str()).or_insert(0.0) += 1.0;
            }
        }
    }
    docs.iter()
        .map(|(terms, len)| {
            let mut s = 0.0;
            for (q, qw) in query {
                let Some(&t) = terms.get(q) else { continue };
                let d = df.get(q.as_str()).copied().unwrap_or(0.0);
                s += qw * idf(n, d) * tf(t as f64, *len as f64, avg, k1, b);
            }
            s
        })
        .collect()
}

/// [`scores`] scaled so the best document scores 1.
pub fn normalised_scores(
    query: &HashMap<String, f64>,
    docs: &[(&HashMap<String, u32>, u32)],
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let mut s = scores(query, docs, k1, b);
    normalise(&mut s);
    s
}

/// Scale `v` so its largest value is 1 (left alone when none is positive).
pub fn normalise(v: &mut [f64]) {
    let max = v.iter().cloned().fold(0.0, f64::max);
    if max > 0.0 {
        for x in v.iter_mut() {
            *x /= max;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_terms_and_short_documents_score_higher() {
        let doc = |terms: &[(&str, u32)]| -> HashMap<String, u32> {
            terms.iter().map(|(t, n)| (t.to_string(), *n)).collect()
        };
        let a = doc(&[("proxy", 1), ("header", 1)]);
        let b = doc(&[("header", 1), ("body", 5)]);
        let c = doc(&[("header", 2)]);
        let query: HashMap<String, f64> =
            [("proxy".to_string(), 1.0), ("header".to_string(), 1.0)].into();
        let s = normalised_scores(&query, &[(&a, 2), (&b, 6), (&c, 2)], 1.2, 0.75);
        // `proxy` is in one document of three, `header` in all: `a` wins; the longer `b` is last.
        assert_eq!(s[0], 1.0, "{s:?}");
        assert!(s[2] > s[1] && s[1] > 0.0, "{s:?}");
        assert!(idf(3.0, 1.0) > idf(3.0, 3.0));
        assert!(tf(1.0, 2.0, 4.0, 1.2, 0.75) > tf(1.0, 8.0, 4.0, 1.2, 0.75));
    }
}
