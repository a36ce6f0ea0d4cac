//! Percentile bootstrap over instances, seeded, for means of per-instance values.
//!
//! All series share the same resamples, so intervals of related figures (Union@k and
//! Average@k, say) come from the same draws of instances.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bootstrap {
    /// Number of resamples; 0 turns intervals off.
    pub resamples: usize,
    pub seed: u64,
    /// Two-sided coverage, e.g. 0.95.
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 1000,
            seed: 42,
            level: 0.95,
        }
    }
}

/// Linear-interpolated quantile of sorted values (`q` in 0..=1).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Confidence intervals for the means of each series (all of length `n`, one value per
/// instance). Returns `None` when resampling is off or there are no instances.
pub fn intervals(series: &[Vec<f64>], b: &Bootstrap) -> Option<Vec<(f64, f64)>> {
    let n = series.first().map_or(0, Vec::len);
    if b.resamples == 0 || n == 0 {
        return None;
    }
    debug_assert!(series.iter().all(|s| s.len() == n));
    let mut rng = StdRng::seed_from_u64(b.seed);
    let mut means: Vec<Vec<f64>> = vec![Vec::with_capacity(b.resamples); series.len()];
    let mut idx = vec![0usize; n];
    for _ in 0..b.resamples {
        for i in idx.iter_mut() {
            *i = rng.gen_range(0..n);
        }
        for (s, m) in series.iter().zip(means.iter_mut()) {
            let sum: f64 = idx.iter().map(|&i| s[i]).sum();
            m.push(sum / n as f64);
        }
    }
    let alpha = (1.0 - b.level.clamp(0.0, 1.0)) / 2.0;
    Some(
        means
            .into_iter()
            .map(|mut m| {
                m.sort_by(f64::total_cmp);
                (quantile(&m, alpha), quantile(&m, 1.0 - alpha))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_series_has_a_point_interval() {
        let ci = intervals(&[vec![1.0; 10]], &Bootstrap::default()).unwrap();
        assert_eq!(ci[0], (1.0, 1.0));
    }

    #[test]
    fn interval_brackets_the_mean_and_is_reproducible() {
        let s: Vec<f64> = (0..100).map(|i| (i % 3 == 0) as u8 as f64).collect();
        let mean = s.iter().sum::<f64>() / 100.0;
        let b = Bootstrap::default();
        let ci = intervals(std::slice::from_ref(&s), &b).unwrap()[0];
        assert!(ci.0 < mean && mean < ci.1, "{ci:?} vs {mean}");
        // Roughly ±1.96·sqrt(p(1-p)/n) ≈ ±0.093.
        assert!(ci.1 - ci.0 > 0.12 && ci.1 - ci.0 < 0.25, "{ci:?}");
        assert_eq!(intervals(&[s], &b).unwrap()[0], ci);
    }

    #[test]
    fn quantile_interpolates() {
        assert_eq!(quantile(&[0.0, 10.0], 0.25), 2.5);
        assert!(quantile(&[], 0.5).is_nan());
        assert!(intervals(&[vec![]], &Bootstrap::default()).is_none());
    }
}
