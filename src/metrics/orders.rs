//! The order in which agents join the committee: as given, in order of generation
//! (`run-1, run-2, …, run-10`, sorted naturally), or shuffled R times with a seed.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::cmp::Ordering;

/// How to order the agents for the curves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    /// As given by `--agents` (natural order when no list is given).
    Given,
    /// Natural sort of the names: the order of generation for runs of one agent.
    Natural,
    /// Mean over R random orders drawn with a seed.
    Random,
}

impl OrderKind {
    pub fn name(self) -> &'static str {
        match self {
            OrderKind::Given => "given",
            OrderKind::Natural => "natural",
            OrderKind::Random => "random",
        }
    }
}

impl std::str::FromStr for OrderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "given" | "fixed" => Ok(OrderKind::Given),
            "natural" | "generation" => Ok(OrderKind::Natural),
            "random" | "shuffle" => Ok(OrderKind::Random),
            other => Err(format!(
                "unknown order `{other}`; use given, natural or random"
            )),
        }
    }
}

/// Compare names so that embedded numbers compare by value: `run-2 < run-10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let nx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let ny = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (dx, dy) = (&x[..nx], &y[..ny]);
                let tx = trim_zeros(dx);
                let ty = trim_zeros(dy);
                let ord = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if ord != Ordering::Equal {
                    return ord;
                }
                x = &x[nx..];
                y = &y[ny..];
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                x = &x[1..];
                y = &y[1..];
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let z = d.iter().take_while(|&&c| c == b'0').count();
    &d[z.min(d.len().saturating_sub(1))..]
}

/// Indices `0..names.len()` in natural order of the names.
pub fn natural_order(names: &[String]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..names.len()).collect();
    idx.sort_by(|&a, &b| natural_cmp(&names[a], &names[b]));
    idx
}

/// `r` random permutations of `0..k`, reproducible from `seed`.
pub fn random_orders(k: usize, r: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..r)
        .map(|_| {
            let mut p: Vec<usize> = (0..k).collect();
            p.shuffle(&mut rng);
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        let mut v = vec!["run-10", "run-2", "run-1", "run-02b", "val"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, vec!["run-1", "run-2", "run-02b", "run-10", "val"]);
    }

    #[test]
    fn random_orders_are_permutations_and_reproducible() {
        let a = random_orders(5, 20, 42);
        assert_eq!(a, random_orders(5, 20, 42));
        assert_ne!(a, random_orders(5, 20, 43));
        for p in &a {
            let mut s = p.clone();
            s.sort();
            assert_eq!(s, vec![0, 1, 2, 3, 4]);
        }
        // Not all the same permutation.
        assert!(a.iter().any(|p| p != &a[0]));
    }
}
