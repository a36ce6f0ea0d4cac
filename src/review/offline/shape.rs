//! Size and scatter of a change relative to the other candidates of the same issue.

use super::agreement::milli;
use super::features::Features;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// `(largeness, smallness, scatter)` of candidate `i`, each in `[0, 3]`:
/// largeness is `log2(size / median size of the others)` above 0 (one unit per doubling
/// beyond the typical candidate), smallness the same below 0 (one unit per halving);
/// scatter is the number of files beyond the others' median.
/// All are 0 when no other candidate is reviewable.
pub fn shape(feats: &[Features], i: usize) -> (f64, f64, f64) {
    if feats[i].is_void() {
        return (0.0, 0.0, 0.0);
    }
    let others = || {
        (0..feats.len())
            .filter(move |&j| j != i && !feats[j].is_void())
            .map(|j| &feats[j])
    };
    let Some(size) = median(others().map(|f| f.size() as f64).collect()) else {
        return (0.0, 0.0, 0.0);
    };
    let files = median(others().map(|f| f.files.len() as f64).collect()).unwrap_or(1.0);
    let ratio = feats[i].size() as f64 / size.max(1.0);
    let log = ratio.max(1e-9).log2().clamp(-3.0, 3.0);
    let scatter = (feats[i].files.len() as f64 - files).clamp(0.0, 3.0);
    (milli(log.max(0.0)), milli((-log).max(0.0)), milli(scatter))
}
