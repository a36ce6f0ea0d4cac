//! Stage 6: order the reviewed candidates, keeping ties visible.

use crate::model::{Review, ReviewStatus};

/// A candidate's place in the ranking. Candidates with equal scores (and tiers, see
/// [`rank_in_tiers`]) share `rank`.
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
    rank_in_tiers(reviews, &vec![None; reviews.len()])
}

/// [`rank`], with the candidates that have a tier (`Some(t)`, one per review) first among
/// their class, higher `t` first, each tier sorted by score; those with none follow, by
/// score. Over a run with execution evidence the healthy candidates have a tier: their
/// agent's record (`rank::run::record`). Ties: the same class, tier and score.
pub fn rank_in_tiers(reviews: &[Review], tiers: &[Option<f64>]) -> Vec<Placed> {
    let tier = |i: usize| tiers.get(i).copied().flatten();
    // Some before None, higher first.
    let by_tier = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    };
    let mut order: Vec<usize> = (0..reviews.len()).collect();
    order.sort_by(|&a, &b| {
        class(&reviews[a])
            .cmp(&class(&reviews[b]))
            .then(by_tier(tier(a), tier(b)))
            .then(reviews[b].score.value.total_cmp(&reviews[a].score.value))
            .then(a.cmp(&b))
    });
    let mut out: Vec<Placed> = Vec::with_capacity(order.len());
    let mut prev: Option<(u8, Option<f64>)> = None;
    for (pos, &i) in order.iter().enumerate() {
        let score = reviews[i].score.value;
        let c = class(&reviews[i]);
        let rank = match out.last() {
            Some(last) if last.score == score && prev == Some((c, tier(i))) => last.rank,
            _ => pos + 1,
        };
        prev = Some((c, tier(i)));
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

    #[test]
    fn tiers_rank_first_in_their_order_then_by_score() {
        let reviews = [r(9.0), r(5.0), r(6.0), r(7.0), r(6.0)];
        // 1, 2 and 4 have tiers (0.1, 0.3, 0.1); 0 and 3 have none.
        let tiers = [None, Some(0.1), Some(0.3), None, Some(0.1)];
        let placed = rank_in_tiers(&reviews, &tiers);
        let got: Vec<(usize, usize, usize)> =
            placed.iter().map(|p| (p.rank, p.index, p.tied)).collect();
        // Tier 0.3 first; in tier 0.1 the higher score first; then the rest by score. The
        // same score in another tier is no tie.
        assert_eq!(
            got,
            vec![(1, 2, 1), (2, 4, 1), (3, 1, 1), (4, 0, 1), (5, 3, 1)]
        );
        // Equal tier and score tie.
        let placed = rank_in_tiers(&[r(5.0), r(5.0)], &[Some(0.2), Some(0.2)]);
        assert_eq!((placed[0].rank, placed[1].rank, placed[0].tied), (1, 1, 2));
        // No tiers: as `rank`.
        let plain = [r(2.0), r(5.0), r(2.0)];
        assert_eq!(rank_in_tiers(&plain, &[None; 3]), rank(&plain));
    }
}
