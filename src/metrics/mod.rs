//! Stage 7: how good a selection is, and how diverse the agents are.
//!
//! Definitions follow DEI. For a set of instances, each with candidates from k agents added
//! in a stated order:
//! - **Union@k**: solved by any of the first k candidates (the oracle);
//! - **Intersect@k**: solved by all of them;
//! - **Average@k**: the mean single-candidate resolve rate (a random pick);
//! - **n@k**: one of the committee's top-n picks is resolved. Ties in score count as the
//!   expected value over the tied candidates, never as a lucky first pick.
//!
//! A missing, empty or unscored candidate is unresolved and is never preferred to a scored one.
//!
//! Around these definitions: [`labels`] reads resolved labels, [`selection`] the committee's
//! scores, [`table`] joins them with the candidates, [`orders`] orders the agents,
//! [`diversity`] and [`eval`] compute the study, [`bootstrap`] its intervals, and [`text`] /
//! [`html`] write it out.

pub mod bootstrap;
pub mod diversity;
pub mod eval;
pub mod html;
pub mod labels;
pub mod orders;
pub mod selection;
pub mod table;
pub mod text;

/// One candidate slot of one instance, as the metrics see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// The committee's score; `None` when the candidate is missing or unscored.
    pub score: Option<f64>,
    pub resolved: bool,
}

impl Slot {
    pub fn new(score: Option<f64>, resolved: bool) -> Slot {
        Slot { score, resolved }
    }
    /// A candidate the agent did not produce.
    pub fn missing() -> Slot {
        Slot {
            score: None,
            resolved: false,
        }
    }
}

/// Solved by any candidate.
pub fn union(slots: &[Slot]) -> bool {
    slots.iter().any(|s| s.resolved)
}

/// Solved by every candidate (false for no candidates).
pub fn intersect(slots: &[Slot]) -> bool {
    !slots.is_empty() && slots.iter().all(|s| s.resolved)
}

/// Fraction of candidates that are resolved (0 for none).
pub fn average(slots: &[Slot]) -> f64 {
    if slots.is_empty() {
        return 0.0;
    }
    slots.iter().filter(|s| s.resolved).count() as f64 / slots.len() as f64
}

/// `C(n, k)` as a float (exact for the small sizes used here).
fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Expected chance that at least one of the committee's top `n` picks is resolved, with ties
/// broken uniformly at random. Unscored candidates rank below every scored one and tie with
/// each other. Returns `(expected value, size of the tie group the n-th pick falls in)`.
pub fn n_at_k(slots: &[Slot], n: usize) -> (f64, usize) {
    if slots.is_empty() || n == 0 {
        return (0.0, 0);
    }
    let key = |s: &Slot| s.score.unwrap_or(f64::NEG_INFINITY);
    let mut order: Vec<&Slot> = slots.iter().collect();
    order.sort_by(|a, b| key(b).total_cmp(&key(a)));
    let mut left = n;
    let mut i = 0;
    while i < order.len() && left > 0 {
        let group_end = (i..order.len())
            .find(|&j| key(order[j]) != key(order[i]))
            .unwrap_or(order.len());
        let group = &order[i..group_end];
        let t = group.len();
        let c = group.iter().filter(|s| s.resolved).count();
        if t <= left {
            if c > 0 {
                return (1.0, t);
            }
            left -= t;
        } else {
            // Pick `left` of the `t` tied candidates at random: P(at least one resolved).
            let p = 1.0 - choose(t - c, left) / choose(t, left);
            return (p, t);
        }
        i = group_end;
    }
    (0.0, 1)
}

/// Per-instance figures over many instances, summed (divide by the count for rates).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Totals {
    pub instances: usize,
    pub union: f64,
    pub intersect: f64,
    pub average: f64,
    pub n_at_k: f64,
    /// Instances whose pick fell in a tie of two or more.
    pub ties: usize,
}

impl Totals {
    /// Add one instance.
    pub fn add(&mut self, slots: &[Slot], n: usize) {
        self.instances += 1;
        self.union += union(slots) as u8 as f64;
        self.intersect += intersect(slots) as u8 as f64;
        self.average += average(slots);
        let (v, tie) = n_at_k(slots, n);
        self.n_at_k += v;
        if tie > 1 {
            self.ties += 1;
        }
    }

    /// As percentages of the instances.
    pub fn percent(&self) -> (f64, f64, f64, f64) {
        let d = self.instances.max(1) as f64 / 100.0;
        (
            self.union / d,
            self.intersect / d,
            self.average / d,
            self.n_at_k / d,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(score: f64, resolved: bool) -> Slot {
        Slot::new(Some(score), resolved)
    }

    #[test]
    fn definitions_on_a_hand_table() {
        // Worked by hand: three instances, three agents.
        // i1: only agent 2 resolves, committee scores it highest  -> pick resolved (1)
        // i2: agents 1 and 3 resolve, committee ties agents 1 and 2 at the top -> 1/2
        // i3: nobody resolves (agent 3 missing) -> 0
        let i1 = [s(3.0, false), s(9.0, true), s(1.0, false)];
        let i2 = [s(7.0, true), s(7.0, false), s(2.0, true)];
        let i3 = [s(5.0, false), s(5.0, false), Slot::missing()];
        let mut t = Totals::default();
        for i in [&i1[..], &i2, &i3] {
            t.add(i, 1);
        }
        assert_eq!(t.instances, 3);
        assert_eq!(t.union, 2.0);
        assert_eq!(t.intersect, 0.0);
        assert!((t.average - (1.0 / 3.0 + 2.0 / 3.0 + 0.0)).abs() < 1e-12);
        assert!((t.n_at_k - 1.5).abs() < 1e-12);
        assert_eq!(t.ties, 2);
    }

    #[test]
    fn top_n_with_partial_tie_is_hypergeometric() {
        // Scores: 9 (unresolved), then a four-way tie at 5 with one resolved; pick top 2.
        // The second pick is one of 4 tied, one resolved: 1/4.
        let slots = [
            s(9.0, false),
            s(5.0, false),
            s(5.0, true),
            s(5.0, false),
            s(5.0, false),
        ];
        let (p, tie) = n_at_k(&slots, 2);
        assert!((p - 0.25).abs() < 1e-12);
        assert_eq!(tie, 4);
        // Top 3: two picks among the four: 1 - C(3,2)/C(4,2) = 1 - 3/6.
        assert!((n_at_k(&slots, 3).0 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn unscored_never_beats_scored() {
        let slots = [Slot::new(None, true), s(1.0, false)];
        assert_eq!(n_at_k(&slots, 1).0, 0.0);
        let all_missing = [Slot::missing(), Slot::missing()];
        assert_eq!(n_at_k(&all_missing, 1).0, 0.0);
        assert!(!intersect(&[]));
    }
}
