//! Stage 8: what people and programs read: the ranked table and JSON.

use crate::pipeline::RankResult;

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The ranked table, one line a candidate.
pub fn table(result: &RankResult) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} ({}) at {} — {} candidates, {} empty, committee: {}\n\n",
        result.instance_id,
        if result.repo.is_empty() {
            "local repo"
        } else {
            &result.repo
        },
        &result.base_commit[..result.base_commit.len().min(12)],
        result.candidates,
        result.empty,
        result.committee
    ));
    let agent_w = result
        .ranked
        .iter()
        .map(|r| r.agent.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 40);
    let show_resolved = result.ranked.iter().any(|r| r.resolved.is_some());
    out.push_str(&format!(
        "{:>4}  {:<agent_w$}  {:>5}  {:<7}  {:<30}  {}{}\n",
        "rank",
        "agent",
        "score",
        "applies",
        "files",
        if show_resolved { "resolved  " } else { "" },
        "reason"
    ));
    for r in &result.ranked {
        let rank = if r.tied > 1 {
            format!("={}", r.rank)
        } else {
            r.rank.to_string()
        };
        let files = if r.files.is_empty() {
            "-".to_string()
        } else {
            r.files.join(",")
        };
        let resolved = match (show_resolved, r.resolved) {
            (false, _) => String::new(),
            (true, Some(true)) => format!("{:<10}", "yes"),
            (true, Some(false)) => format!("{:<10}", "no"),
            (true, None) => format!("{:<10}", "?"),
        };
        out.push_str(&format!(
            "{:>4}  {:<agent_w$}  {:>5.2}  {:<7}  {:<30}  {}{}\n",
            rank,
            truncate(&r.agent, agent_w),
            r.score,
            r.applies.label(),
            truncate(&files, 30),
            resolved,
            truncate(&r.reason, 90)
        ));
    }
    if !result.problems.is_empty() {
        out.push_str(&format!(
            "\n{} input problem(s) skipped:\n",
            result.problems.len()
        ));
        for p in result.problems.iter().take(10) {
            out.push_str(&format!("  {p}\n"));
        }
        if result.problems.len() > 10 {
            out.push_str(&format!(
                "  … and {} more (see --json)\n",
                result.problems.len() - 10
            ));
        }
    }
    out
}

/// The machine-readable result.
pub fn json(result: &RankResult) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(result)?)
}
