//! Terminal tables for `dei eval`.

use super::eval::EvalReport;
use std::fmt::Write as _;

fn ci(c: Option<(f64, f64)>) -> String {
    match c {
        Some((a, b)) => format!("[{a:5.1}, {b:5.1}]"),
        None => String::new(),
    }
}

/// `s` in a column `n` wide as a terminal shows it (wide characters two, combining marks
/// none): cut with `…` when longer, padded with spaces when shorter.
fn short(s: &str, n: usize) -> String {
    use crate::rank::report::{pad, truncate};
    pad(&truncate(s, n), n)
}

/// The whole report as text.
pub fn table(r: &EvalReport) -> String {
    let mut o = String::new();
    let level = r
        .bootstrap
        .map(|b| format!("{:.0}% CI", b.level * 100.0))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "{} instances ({}), {} agents; rates in % of instances{}",
        r.instances,
        r.universe,
        r.agents.len(),
        r.bootstrap.map_or(String::new(), |b| format!(
            "; {level} by bootstrap over instances ({} resamples, seed {})",
            b.resamples, b.seed
        ))
    );
    let _ = writeln!(
        o,
        "selection: {}",
        r.selection
            .as_deref()
            .unwrap_or("none (n@k not reported; pass --scores FILE or --baseline random)")
    );
    let w = r
        .agents
        .iter()
        .map(|a| crate::rank::report::display_width(&a.name))
        .max()
        .unwrap_or(5)
        .clamp(5, 44);
    let _ = writeln!(o, "\nAgents");
    let _ = writeln!(
        o,
        "{:>3}  {}  {:>8}  {:>6}  {:<14}  {:>6}  {:>5}  {:>5}  {:>7}  {:>9}",
        "#",
        short("agent", w),
        "resolved",
        "rate",
        level,
        "unique",
        "cands",
        "empty",
        "missing",
        "unlabeled"
    );
    for (i, (a, d)) in r.agents.iter().zip(&r.diversity.agents).enumerate() {
        let known = !a.label_sources.is_empty() && (a.candidates > 0 || a.missing > 0);
        let num = |x: usize| if known { x.to_string() } else { "-".into() };
        let _ = writeln!(
            o,
            "{:>3}  {}  {:>8}  {:>6.1}  {:<14}  {:>6}  {:>5}  {:>5}  {:>7}  {:>9}",
            i + 1,
            short(&a.name, w),
            d.resolved,
            d.rate,
            ci(d.ci),
            d.unique,
            num(a.candidates),
            num(a.empty),
            num(a.missing),
            num(a.unlabeled)
        );
    }
    let missing: usize = r.agents.iter().map(|a| a.missing).sum();
    let empty: usize = r.agents.iter().map(|a| a.empty).sum();
    if missing + empty > 0 {
        let _ = writeln!(
            o,
            "     {missing} missing and {empty} empty candidate(s) count as unresolved"
        );
    }
    let g = &r.diversity.gaps;
    let f = |x: &super::diversity::Figure| format!("{:5.1} {}", x.value, ci(x.ci));
    let _ = writeln!(o, "\nCommittee of all {} agents", g.k);
    let _ = writeln!(o, "  Union@{}      {}", g.k, f(&g.union));
    let _ = writeln!(o, "  Intersect@{}  {}", g.k, f(&g.intersect));
    let _ = writeln!(o, "  Average@{}    {}", g.k, f(&g.average));
    let _ = writeln!(
        o,
        "  best single  {:.1}  ({})",
        g.best_single_rate, g.best_single
    );
    let _ = writeln!(
        o,
        "  oracle gap (Union − best single)  {}",
        f(&g.oracle_gap)
    );
    if let Some(p) = &g.pick {
        let _ = writeln!(
            o,
            "  {:<32}  {}",
            format!("{}@{} (the selection)", p.top_n, g.k),
            f(&p.n_at_k)
        );
        let _ = writeln!(
            o,
            "  {:<32}  {}",
            format!("{}@{} − best single", p.top_n, g.k),
            f(&p.minus_best)
        );
        if let Some(c) = p.gap_closed {
            let _ = writeln!(o, "  {:<32}  {c:5.1}%", "share of the oracle gap closed");
        }
    }
    let _ = writeln!(
        o,
        "  Union − Average                   {}",
        f(&g.union_minus_average)
    );
    let _ = writeln!(
        o,
        "  Union − Intersect                 {}",
        f(&g.union_minus_intersect)
    );
    let _ = writeln!(
        o,
        "  solved by nobody: {}; by exactly one agent: {}",
        g.unsolved, g.solved_by_one
    );

    if !r.by_basis.is_empty() {
        let _ = writeln!(
            o,
            "\nWhat the picks rest on (--exec; dei rank's `pick rests on` line): {}@{} on the issues of each, beside the best single member and Union@{} on the same issues",
            r.top_n, g.k, g.k
        );
        let _ = writeln!(
            o,
            "  {:<10}  {:>6}  {:>6}  {:>11}  {:>8}",
            "basis",
            "issues",
            format!("{}@{}", r.top_n, g.k),
            "best single",
            format!("Union@{}", g.k)
        );
        for b in &r.by_basis {
            let _ = writeln!(
                o,
                "  {:<10}  {:>6}  {:>6.1}  {:>11.1}  {:>8.1}",
                b.basis.word(),
                b.issues,
                b.n_at_k,
                b.best_single,
                b.union
            );
        }
    }

    for c in &r.curves {
        let title = match (&c.agents, c.shuffles) {
            (Some(a), _) => format!("order {}: {}", c.order.name(), a.join(" → ")),
            (None, Some(s)) => format!(
                "order random: mean over {s} shuffles, seed {}",
                c.seed.unwrap_or_default()
            ),
            _ => c.order.name().to_string(),
        };
        let _ = writeln!(o, "\nCurves, {title}");
        let has_n = c.points.iter().any(|p| p.n_at_k.is_some());
        let nk = format!("{}@k", r.top_n);
        let _ = write!(
            o,
            "{:>3}  {:>6}  {:>9}  {:>7}",
            "k", "Union", "Intersect", "Average"
        );
        if has_n {
            let _ = write!(o, "  {nk:>6}  {:>5}", "ties");
        }
        let _ = writeln!(o, "  {:>7}  {:>7}", "U−Avg", "U−Int");
        for p in &c.points {
            let _ = write!(
                o,
                "{:>3}  {:>6.1}  {:>9.1}  {:>7.1}",
                p.k, p.union, p.intersect, p.average
            );
            if has_n {
                let _ = write!(
                    o,
                    "  {:>6.1}  {:>5}",
                    p.n_at_k.unwrap_or(f64::NAN),
                    p.ties.map_or(String::new(), |t| {
                        if t.fract() == 0.0 {
                            format!("{t:.0}")
                        } else {
                            format!("{t:.1}")
                        }
                    })
                );
            }
            let _ = writeln!(
                o,
                "  {:>7.1}  {:>7.1}",
                p.union_minus_average, p.union_minus_intersect
            );
        }
        if let Some(last) = c.points.last().and_then(|p| p.ci.as_ref()) {
            let _ = write!(
                o,
                "     at k={}: Union {}  Intersect {}  Average {}",
                c.points.len(),
                ci(Some(last.union)),
                ci(Some(last.intersect)),
                ci(Some(last.average))
            );
            if let Some(n) = last.n_at_k {
                let _ = write!(o, "  {nk} {}", ci(Some(n)));
            }
            let _ = writeln!(o);
        }
    }

    let k = r.agents.len();
    if k > 1 {
        let _ = writeln!(
            o,
            "\nOverlap (Jaccard of resolved sets, %; columns numbered as the agents)"
        );
        let _ = write!(o, "{:>3}  {}", "#", short("agent", w));
        for j in 0..k {
            let _ = write!(o, "  {:>4}", j + 1);
        }
        let _ = writeln!(o);
        for (i, row) in r.diversity.jaccard.iter().enumerate() {
            let _ = write!(o, "{:>3}  {}", i + 1, short(&r.agents[i].name, w));
            for v in row {
                match v {
                    Some(x) => {
                        let _ = write!(o, "  {:>4.0}", 100.0 * x);
                    }
                    None => {
                        let _ = write!(o, "  {:>4}", "-");
                    }
                }
            }
            let _ = writeln!(o);
        }
    }

    let u = &r.diversity.unique;
    if !u.is_empty() {
        let _ = writeln!(o, "\nSolved by exactly one agent ({})", u.len());
        for s in u.iter().take(20) {
            let _ = writeln!(o, "  {:<40}  {}", s.instance_id, s.agent);
        }
        if u.len() > 20 {
            let _ = writeln!(o, "  … and {} more (see --json)", u.len() - 20);
        }
    }
    let mut notes: Vec<String> = r.notes.clone();
    for a in &r.agents {
        if a.resolved_without_candidate > 0 {
            notes.push(format!(
                "{}: {} label(s) say resolved where there is no (or an empty) candidate; counted unresolved",
                a.name, a.resolved_without_candidate
            ));
        }
        if a.label_conflicts > 0 {
            notes.push(format!(
                "{}: {} conflicting label(s) between sources; the first label file wins",
                a.name, a.label_conflicts
            ));
        }
        if a.unlabeled > 0 {
            notes.push(format!(
                "{}: {} candidate(s) without a label; counted unresolved",
                a.name, a.unlabeled
            ));
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(o, "\nNotes");
        for n in notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    o
}

#[cfg(test)]
mod width_tests {
    use super::short;
    use crate::rank::report::display_width;

    /// The agent column holds its width as a terminal shows it, whatever the name is written
    /// in: wide characters count two, a combining accent none, an emoji two.
    #[test]
    fn agent_cells_are_as_wide_as_a_terminal_shows_them() {
        for name in [
            "agent-one",
            "代理人二号",
            "cafe\u{301}-agent",
            "🤖-bot",
            "a-very-long-agent-name-indeed",
        ] {
            let cell = short(name, 12);
            assert_eq!(display_width(&cell), 12, "{name:?} -> {cell:?}");
        }
        assert_eq!(short("代理人二号", 12), "代理人二号  ");
        assert!(short("a-very-long-agent-name-indeed", 12).ends_with('…'));
    }
}
