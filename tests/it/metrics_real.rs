//! `dei eval` on the real SWE-bench Lite runs in ../shared/data or DEI_DATA (skips, saying so,
//! when absent):
//! invariants of the definitions, and agreement with counts taken straight from the raw files.

use crate::support::common;

use dei::metrics::eval::{self, EvalReport, EvalRequest, Options};
use dei::metrics::orders::OrderKind;
use dei::metrics::table::{Baseline, Coverage};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    common::shared_data()
}

fn opts(orders: Vec<OrderKind>) -> Options {
    Options {
        orders,
        shuffles: 20,
        bootstrap: dei::metrics::bootstrap::Bootstrap {
            resamples: 100,
            ..Default::default()
        },
        ..Options::default()
    }
}

fn check_invariants(r: &EvalReport) {
    let eps = 1e-9;
    for c in &r.curves {
        let mut prev: Option<&eval::Point> = None;
        for p in &c.points {
            assert!(
                p.intersect <= p.average + eps && p.average <= p.union + eps,
                "{:?} k={}: {p:?}",
                c.order,
                p.k
            );
            if let Some(n) = p.n_at_k {
                assert!(
                    n >= -eps && n <= p.union + eps,
                    "n@k outside [0, Union]: {p:?}"
                );
            }
            if let Some(ci) = &p.ci {
                assert!(ci.union.0 <= p.union + eps && p.union <= ci.union.1 + eps);
            }
            if let Some(q) = prev {
                assert!(p.union + eps >= q.union, "Union@k must not fall");
                assert!(
                    p.intersect <= q.intersect + eps,
                    "Intersect@k must not rise"
                );
            }
            prev = Some(p);
        }
        let last = c.points.last().unwrap();
        assert!((last.union - r.diversity.gaps.union.value).abs() < 1e-9);
    }
}

/// Per-run resolved sets read straight from lite_candidates.jsonl.
fn raw_resolved(d: &std::path::Path) -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(d.join("lite_candidates.jsonl")).unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let set = out
            .entry(v["run"].as_str().unwrap().to_string())
            .or_default();
        if v["resolved"] == true && !v["model_patch"].as_str().unwrap_or("").trim().is_empty() {
            set.insert(v["instance_id"].as_str().unwrap().to_string());
        }
    }
    out
}

#[test]
fn lite_candidates_all_runs() {
    let Some(d) = data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    let req = EvalRequest {
        candidates: vec![d.join("lite_candidates.jsonl")],
        tasks: Some(d.join("swebench_lite/test.jsonl")),
        baseline: Some(Baseline::RandomNonEmpty),
        options: opts(vec![OrderKind::Given, OrderKind::Random]),
        // devin's run covers 82 instances: every one of the 300 counts here
        coverage: Coverage::All,
        ..EvalRequest::default()
    };
    let r = eval::run(&req).unwrap();
    assert_eq!(r.instances, 300);
    assert_eq!(r.agents.len(), 14);
    check_invariants(&r);
    let raw = raw_resolved(&d);
    for a in &r.diversity.agents {
        assert_eq!(a.resolved, raw[&a.agent].len(), "{}", a.agent);
    }
    let union: BTreeSet<&String> = raw.values().flatten().collect();
    let g = &r.diversity.gaps;
    assert!((g.union.value - 100.0 * union.len() as f64 / 300.0).abs() < 1e-9);
    // Unique solves agree with a direct count.
    let mut count: BTreeMap<&String, usize> = BTreeMap::new();
    for s in raw.values() {
        for i in s {
            *count.entry(i).or_default() += 1;
        }
    }
    assert_eq!(
        r.diversity.unique.len(),
        count.values().filter(|&&c| c == 1).count()
    );
    // Jaccard is symmetric with ones on the diagonal (for agents that resolve something).
    let j = &r.diversity.jaccard;
    for (a, row) in j.iter().enumerate() {
        assert_eq!(row[a], Some(1.0));
        for (b, v) in row.iter().enumerate() {
            assert_eq!(*v, j[b][a]);
        }
    }
    // The HTML report of real data stays self-contained.
    let html = dei::metrics::html::report(&r);
    assert!(html.contains("<svg") && !html.contains("http://") && !html.contains("https://"));
}

#[test]
fn a_run_graded_on_part_of_the_benchmark_is_scored_where_it_was_graded() {
    let Some(d) = data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    // The five strong 2025 runs were graded on the 93 Lite instances also in Verified; with
    // a full 2026 run beside them, the committee is read over those 93 and says so.
    let runs = [
        "JoyCode__verified_subset",
        "TRAE__verified_subset",
        "trevec_v6_claude-sonnet-4-6",
    ];
    let req = |coverage| EvalRequest {
        candidates: vec![
            d.join("lite_candidates.jsonl"),
            d.join("lite_candidates_more.jsonl"),
        ],
        tasks: Some(d.join("swebench_lite/test.jsonl")),
        agents: Some(runs.iter().map(|s| s.to_string()).collect()),
        baseline: Some(Baseline::Random),
        options: opts(vec![OrderKind::Given]),
        coverage,
        ..EvalRequest::default()
    };
    let restricted = eval::run(&req(Coverage::Restrict)).unwrap();
    let every = eval::run(&req(Coverage::All)).unwrap();
    check_invariants(&restricted);
    assert_eq!(restricted.instances, 93);
    assert_eq!(every.instances, 300);
    assert!(
        restricted
            .universe
            .contains("only the 93 instances covered by the partial runs")
            && restricted
                .universe
                .contains("`JoyCode__verified_subset` (93 of 300)"),
        "{}",
        restricted.universe
    );
    assert!(every
        .notes
        .iter()
        .any(|n| n.contains("--coverage restrict")));
    // Each run's rate over its own 93 rows is what its results file says.
    let more = d.join("lite_runs_more");
    for a in &restricted.diversity.agents {
        if !a.agent.ends_with("__verified_subset") {
            continue;
        }
        let r: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(more.join(&a.agent).join("results.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            a.resolved,
            r["resolved"].as_array().unwrap().len(),
            "{}",
            a.agent
        );
    }
    // The full run loses nothing it resolved among those 93, and Average@k rises once the
    // partial runs are no longer failed on issues they were never given.
    let avg = |r: &EvalReport| r.curves[0].points.last().unwrap().average;
    assert!(
        avg(&restricted) > avg(&every) + 10.0,
        "{} vs {}",
        avg(&restricted),
        avg(&every)
    );
}

#[test]
fn label_files_agree_with_each_other_and_with_run_folders() {
    let Some(d) = data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    let labels = d.join("lite_labels");
    let run = |labels_arg: PathBuf| {
        eval::run(&EvalRequest {
            labels: vec![labels_arg.to_string_lossy().into_owned()],
            tasks: Some(d.join("swebench_lite/test.jsonl")),
            options: opts(vec![OrderKind::Given]),
            ..EvalRequest::default()
        })
        .unwrap()
    };
    let by_run = run(labels.join("lite_resolved_by_run.json"));
    let matrix = run(labels.join("lite_resolved_matrix.csv"));
    assert_eq!(by_run.agents.len(), 45);
    check_invariants(&by_run);
    let counts = |r: &EvalReport| -> BTreeMap<String, usize> {
        r.diversity
            .agents
            .iter()
            .map(|a| (a.agent.clone(), a.resolved))
            .collect()
    };
    assert_eq!(counts(&by_run), counts(&matrix));
    assert_eq!(by_run.diversity.gaps.union, matrix.diversity.gaps.union);

    // The five ACR runs from their own folders (predictions + results.json beside them)
    // give the same figures as lite_candidates.jsonl.
    let runs = d.join("lite_runs");
    let names = [
        "acr-v20240408_acr-run-1",
        "acr-v20240408_acr-run-2",
        "acr-v20240408_acr-run-3",
        "acr-v20240408_acr-val-only",
        "acr-v20240408_acr-val-sbfl",
    ];
    let folders = eval::run(&EvalRequest {
        candidates: names
            .iter()
            .map(|n| runs.join(n).join("all_preds.jsonl"))
            .collect(),
        labels: names
            .iter()
            .map(|n| {
                runs.join(n)
                    .join("results.json")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        tasks: Some(d.join("swebench_lite/test.jsonl")),
        agents: Some(names.iter().map(|s| s.to_string()).collect()),
        options: opts(vec![OrderKind::Natural]),
        ..EvalRequest::default()
    })
    .unwrap();
    let pooled = eval::run(&EvalRequest {
        candidates: vec![d.join("lite_candidates.jsonl")],
        tasks: Some(d.join("swebench_lite/test.jsonl")),
        agents: Some(names.iter().map(|s| s.to_string()).collect()),
        options: opts(vec![OrderKind::Natural]),
        ..EvalRequest::default()
    })
    .unwrap();
    check_invariants(&folders);
    assert_eq!(counts(&folders), counts(&pooled));
    let u = |r: &EvalReport| -> Vec<(f64, f64, f64)> {
        r.curves[0]
            .points
            .iter()
            .map(|p| (p.union, p.intersect, p.average))
            .collect()
    };
    assert_eq!(u(&folders), u(&pooled));
    let order = folders.curves[0].agents.clone().unwrap();
    assert_eq!(order, names.map(String::from));
}
