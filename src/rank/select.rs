//! Stage 6: order the reviewed candidates, keeping ties visible.

use crate::model::{Review, ReviewStatus};

/// A candidate's place in the ranking. Candidates with equal scores share `rank`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Placed {
    pub rank: usize,
    /// Index into the reviewed list.
    pub index: usize,
    pub score: f64,
    /// How many candidates share this score.
    pub tied: usize,
}

/// Where a review sorts before its score is compared: reviewed candidates first, then the
/// unscored (unknown), then those scored by rule (nothing to review).
fn class(r: &Review) -> u8 {
    match r.status() {
        ReviewStatus::Reviewed => 0,
        ReviewStatus::Unscored => 1,
        ReviewStatus::Rule => 2,
    }
}

/// Sort by score, highest first (reviewed, then unscored, then scored by rule); ties keep
/// input order and share a rank (1-based, "competition" style).
pub fn rank(reviews: &[Review]) -> Vec<Placed> {
    let mut order: Vec<usize> = (0..reviews.len()).collect();
    order.sort_by(|&a, &b| {
        class(&reviews[a])
            .cmp(&class(&reviews[b]))
            .then(reviews[b].score.value.total_cmp(&reviews[a].score.value))
            .then(a.cmp(&b))
    });
    let mut out: Vec<Placed> = Vec::with_capacity(order.len());
    let mut prev_class = None;
    for (pos, &i) in order.iter().enumerate() {
        let score = reviews[i].score.value;
        let c = class(&reviews[i]);
        let rank = match out.last() {
            Some(prev) if prev.score == score && prev_class == Some(c) => prev.rank,
            _ => pos + 1,
        };
        prev_class = Some(c);
        out.push(Placed {
            rank,
            index: i,
            score,
            tied: 0,
        });
    }
    let counts: Vec<usize> = out
        .iter()
        .map(|p| out.iter().filter(|q| q.rank == p.rank).count())
        .collect();
    for (p, c) in out.iter_mut().zip(counts) {
        p.tied = c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Score;

    fn r(v: f64) -> Review {
        Review {
            candidate: String::new(),
            committee: String::new(),
            score: Score {
                value: v,
                parts: vec![],
            },
            reason: String::new(),
            explanations: vec![],
            unscored: None,
            rule: false,
            usage: None,
        }
    }

    #[test]
    fn ties_share_rank() {
        let placed = rank(&[r(2.0), r(5.0), r(2.0), r(9.0)]);
        let got: Vec<(usize, usize, usize)> =
            placed.iter().map(|p| (p.rank, p.index, p.tied)).collect();
        assert_eq!(got, vec![(1, 3, 1), (2, 1, 1), (3, 0, 2), (3, 2, 2)]);
    }

    #[test]
    fn unscored_sort_after_reviewed_and_before_rule_scores() {
        let mut unscored = r(0.0);
        unscored.unscored = Some("no reply".into());
        let mut empty = r(1.0);
        empty.rule = true;
        // A model's own 1 is a review; an empty patch's 1 is a rule: they do not tie.
        let placed = rank(&[empty.clone(), unscored.clone(), r(1.0), r(6.0), unscored]);
        let got: Vec<(usize, usize, usize)> =
            placed.iter().map(|p| (p.rank, p.index, p.tied)).collect();
        assert_eq!(
            got,
            vec![(1, 3, 1), (2, 2, 1), (3, 1, 2), (3, 4, 2), (5, 0, 1)]
        );
    }
}
