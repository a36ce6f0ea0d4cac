//! A self-contained HTML report: inline CSS and SVG, no scripts, nothing fetched.

use super::eval::{Curve, EvalReport};
use std::fmt::Write as _;

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const COLORS: [(&str, &str); 4] = [
    ("Union@k", "#1f77b4"),
    ("Intersect@k", "#d62728"),
    ("Average@k", "#2ca02c"),
    ("n@k", "#9467bd"),
];

/// An SVG line chart of the four curves vs k, with bootstrap bands when present.
pub fn curve_svg(c: &Curve, top_n: usize) -> String {
    let (w, h) = (560.0, 340.0);
    let (l, r, t, b) = (52.0, 150.0, 16.0, 44.0);
    let pw = w - l - r;
    let ph = h - t - b;
    let k = c.points.len().max(1);
    let x = |kk: usize| {
        if k == 1 {
            l + pw / 2.0
        } else {
            l + pw * (kk - 1) as f64 / (k - 1) as f64
        }
    };
    let mut ymax: f64 = c
        .points
        .iter()
        .flat_map(|p| {
            let hi = p.ci.as_ref().map_or(0.0, |ci| ci.union.1);
            [p.union, hi]
        })
        .fold(0.0, f64::max);
    ymax = ((ymax / 10.0).ceil() * 10.0).clamp(10.0, 100.0);
    let y = |v: f64| t + ph * (1.0 - v / ymax);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="curves vs k">"#
    );
    // Grid and axes.
    let step = if ymax > 50.0 { 10.0 } else { 5.0 };
    let mut v = 0.0;
    while v <= ymax + 1e-9 {
        let _ = write!(
            s,
            r##"<line x1="{l}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{v:.0}</text>"##,
            l + pw,
            y(v),
            y(v),
            l - 6.0,
            y(v) + 4.0
        );
        v += step;
    }
    let every = k.div_ceil(12).max(1);
    for kk in (1..=k).filter(|kk| (kk - 1) % every == 0 || *kk == k) {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="tick">{kk}</text>"#,
            x(kk),
            t + ph + 16.0
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{l}" x2="{l}" y1="{t}" y2="{:.1}" stroke="#333"/><line x1="{l}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        t + ph,
        l + pw,
        t + ph,
        t + ph
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="axis">k (agents in the committee)</text><text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})" class="axis">% of instances</text>"#,
        l + pw / 2.0,
        h - 8.0,
        t + ph / 2.0,
        t + ph / 2.0
    );
    type Get = fn(&super::eval::Point) -> Option<f64>;
    type GetCi = fn(&super::eval::Point) -> Option<(f64, f64)>;
    let lines: [(Get, GetCi); 4] = [
        (|p| Some(p.union), |p| p.ci.as_ref().map(|c| c.union)),
        (
            |p| Some(p.intersect),
            |p| p.ci.as_ref().map(|c| c.intersect),
        ),
        (|p| Some(p.average), |p| p.ci.as_ref().map(|c| c.average)),
        (|p| p.n_at_k, |p| p.ci.as_ref().and_then(|c| c.n_at_k)),
    ];
    let mut legend = 0;
    for (i, (get, get_ci)) in lines.iter().enumerate() {
        let (name, color) = COLORS[i];
        let name = if i == 3 {
            format!("{top_n}@k")
        } else {
            name.to_string()
        };
        let pts: Vec<(f64, f64)> = c
            .points
            .iter()
            .filter_map(|p| get(p).map(|v| (x(p.k), y(v))))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let band: Vec<(usize, (f64, f64))> = c
            .points
            .iter()
            .filter_map(|p| get_ci(p).map(|ci| (p.k, ci)))
            .collect();
        if band.len() == c.points.len() && band.len() > 1 {
            let mut poly = String::new();
            for (kk, (_, hi)) in &band {
                let _ = write!(poly, "{:.1},{:.1} ", x(*kk), y(*hi));
            }
            for (kk, (lo, _)) in band.iter().rev() {
                let _ = write!(poly, "{:.1},{:.1} ", x(*kk), y(*lo));
            }
            let _ = write!(
                s,
                r#"<polygon points="{}" fill="{color}" fill-opacity="0.12" stroke="none"/>"#,
                poly.trim_end()
            );
        }
        let path: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for (p, (px, py)) in c.points.iter().zip(&pts) {
            let _ = write!(
                s,
                r#"<circle cx="{px:.1}" cy="{py:.1}" r="3" fill="{color}"><title>{} at k={}: {:.1}%</title></circle>"#,
                esc(&name),
                p.k,
                get(p).unwrap_or(f64::NAN)
            );
        }
        let ly = t + 10.0 + 20.0 * legend as f64;
        let _ = write!(
            s,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{:.1}" class="legend">{}</text>"#,
            l + pw + 14.0,
            l + pw + 36.0,
            l + pw + 42.0,
            ly + 4.0,
            esc(&name)
        );
        legend += 1;
    }
    s.push_str("</svg>");
    s
}

/// An SVG heat map of the Jaccard matrix.
pub fn heatmap_svg(names: &[String], m: &[Vec<Option<f64>>]) -> String {
    let k = names.len();
    let cell = if k > 20 { 16.0 } else { 34.0 };
    let label_w = 230.0;
    let top = 30.0;
    let w = label_w + cell * k as f64 + 20.0;
    let h = top + cell * k as f64 + 40.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="heat" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="Jaccard overlap">"#
    );
    for j in 0..k {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="tick">{}</text>"#,
            label_w + cell * (j as f64 + 0.5),
            top - 8.0,
            j + 1
        );
    }
    for (i, row) in m.iter().enumerate() {
        let name: String = names[i].chars().take(34).collect();
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" class="tick">{} {}</text>"#,
            label_w - 6.0,
            top + cell * (i as f64 + 0.5) + 4.0,
            esc(&name),
            i + 1
        );
        for (j, v) in row.iter().enumerate() {
            let (fill, label) = match v {
                Some(x) => {
                    // white (0) to dark blue (1)
                    let r = (255.0 - 225.0 * x) as u8;
                    let g = (255.0 - 175.0 * x) as u8;
                    let b = (255.0 - 75.0 * x) as u8;
                    (
                        format!("#{r:02x}{g:02x}{b:02x}"),
                        format!("{:.0}", 100.0 * x),
                    )
                }
                None => ("#f0f0f0".to_string(), "-".to_string()),
            };
            let _ = write!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{cell}" height="{cell}" fill="{fill}" stroke="#fff"><title>{} × {}: {}</title></rect>"##,
                label_w + cell * j as f64,
                top + cell * i as f64,
                esc(&names[i]),
                esc(&names[j]),
                label
            );
            if cell >= 30.0 {
                let dark = v.is_some_and(|x| x > 0.55);
                let _ = write!(
                    s,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" class="cell{}">{label}</text>"#,
                    label_w + cell * (j as f64 + 0.5),
                    top + cell * (i as f64 + 0.5) + 4.0,
                    if dark { " light" } else { "" }
                );
            }
        }
    }
    s.push_str("</svg>");
    s
}

fn ci(c: Option<(f64, f64)>) -> String {
    c.map_or(String::new(), |(a, b)| format!("[{a:.1}, {b:.1}]"))
}

/// The whole report as one HTML page.
pub fn report(r: &EvalReport) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>dei eval report</title>\n<style>\n");
    o.push_str(
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}\
         table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:right}\
         td:first-child,th:first-child,td.l,th.l{text-align:left}h2{margin-top:1.6em}\
         .tick{font-size:11px;fill:#444}.axis{font-size:12px;fill:#222}.legend{font-size:12px}\
         .cell{font-size:10px;fill:#222}.cell.light{fill:#fff}.note{color:#555}code{background:#f4f4f4;padding:1px 3px}\n",
    );
    o.push_str("</style>\n</head>\n<body>\n<h1>Diversity and selection report</h1>\n");
    let _ = writeln!(
        o,
        "<p>{} instances ({}); {} agents; rates are % of instances.{}</p>",
        r.instances,
        esc(&r.universe),
        r.agents.len(),
        r.bootstrap.map_or(String::new(), |b| format!(
            " Intervals: {:.0}% percentile bootstrap over instances, {} resamples, seed {}.",
            b.level * 100.0,
            b.resamples,
            b.seed
        ))
    );
    let _ = writeln!(
        o,
        "<p>Selection: {}</p>",
        esc(r.selection.as_deref().unwrap_or("none (n@k not reported)"))
    );

    let g = &r.diversity.gaps;
    o.push_str("<h2>Committee of all agents</h2>\n<table><tr><th>figure</th><th>%</th><th>interval</th></tr>\n");
    let mut rows = vec![
        (format!("Union@{}", g.k), &g.union),
        (format!("Intersect@{}", g.k), &g.intersect),
        (format!("Average@{}", g.k), &g.average),
        (
            "oracle gap (Union − best single)".to_string(),
            &g.oracle_gap,
        ),
    ];
    if let Some(p) = &g.pick {
        rows.push((format!("{}@{} (the selection)", p.top_n, g.k), &p.n_at_k));
        rows.push((format!("{}@{} − best single", p.top_n, g.k), &p.minus_best));
    }
    rows.push(("Union − Average".to_string(), &g.union_minus_average));
    rows.push(("Union − Intersect".to_string(), &g.union_minus_intersect));
    for (name, f) in rows {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
            esc(&name),
            f.value,
            ci(f.ci)
        );
    }
    let _ = writeln!(
        o,
        "<tr><td>best single: {}</td><td>{:.1}</td><td></td></tr>\n<tr><td>solved by nobody / by exactly one</td><td>{} / {}</td><td></td></tr>\n</table>",
        esc(&g.best_single),
        g.best_single_rate,
        g.unsolved,
        g.solved_by_one
    );

    if !r.by_basis.is_empty() {
        let _ = writeln!(
            o,
            "<h2>What the picks rest on (--exec)</h2>\n<table><tr><th class=\"l\">basis</th><th>issues</th><th>{}@{}</th><th>best single</th><th>Union@{}</th></tr>",
            r.top_n, g.k, g.k
        );
        for b in &r.by_basis {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
                b.basis.word(),
                b.issues,
                b.n_at_k,
                b.best_single,
                b.union
            );
        }
        o.push_str("</table>\n");
    }

    o.push_str("<h2>Curves vs k</h2>\n");
    for c in &r.curves {
        let title = match (&c.agents, c.shuffles) {
            (Some(a), _) => format!("Order {}: {}", c.order.name(), a.join(" → ")),
            (None, Some(n)) => format!(
                "Random order: mean over {n} shuffles (seed {})",
                c.seed.unwrap_or_default()
            ),
            _ => c.order.name().to_string(),
        };
        let _ = writeln!(o, "<h3>{}</h3>", esc(&title));
        o.push_str(&curve_svg(c, r.top_n));
        o.push_str("\n<table><tr><th>k</th><th>Union</th><th>Intersect</th><th>Average</th>");
        let has_n = c.points.iter().any(|p| p.n_at_k.is_some());
        if has_n {
            let _ = write!(o, "<th>{}@k</th><th>ties</th>", r.top_n);
        }
        o.push_str("<th>Union − Average</th><th>Union − Intersect</th></tr>\n");
        for p in &c.points {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>",
                p.k, p.union, p.intersect, p.average
            );
            if has_n {
                let _ = write!(
                    o,
                    "<td>{:.1}</td><td>{:.1}</td>",
                    p.n_at_k.unwrap_or(f64::NAN),
                    p.ties.unwrap_or(0.0)
                );
            }
            let _ = writeln!(
                o,
                "<td>{:.1}</td><td>{:.1}</td></tr>",
                p.union_minus_average, p.union_minus_intersect
            );
        }
        o.push_str("</table>\n");
    }

    o.push_str("<h2>Agents</h2>\n<table><tr><th>#</th><th class=\"l\">agent</th><th>resolved</th><th>rate</th><th>interval</th><th>unique</th><th>candidates</th><th>empty</th><th>missing</th></tr>\n");
    for (i, (a, d)) in r.agents.iter().zip(&r.diversity.agents).enumerate() {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(&a.name),
            d.resolved,
            d.rate,
            ci(d.ci),
            d.unique,
            a.candidates,
            a.empty,
            a.missing
        );
    }
    o.push_str("</table>\n<h2>Overlap (Jaccard of resolved sets, %)</h2>\n");
    let names: Vec<String> = r.agents.iter().map(|a| a.name.clone()).collect();
    o.push_str(&heatmap_svg(&names, &r.diversity.jaccard));
    let _ = writeln!(
        o,
        "\n<h2>Solved by exactly one agent ({})</h2>\n<table><tr><th class=\"l\">instance</th><th class=\"l\">agent</th></tr>",
        r.diversity.unique.len()
    );
    for u in &r.diversity.unique {
        let _ = writeln!(
            o,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&u.instance_id),
            esc(&u.agent)
        );
    }
    o.push_str("</table>\n");
    if !r.notes.is_empty() {
        o.push_str("<h2>Notes</h2>\n<ul class=\"note\">\n");
        for n in &r.notes {
            let _ = writeln!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</body>\n</html>\n");
    o
}
