//! `dei eval` on tables worked out by hand (tests/fixtures/metrics/README.md).

use crate::support::common;

use common::{dei, stderr, stdout};
use dei::metrics::eval::{self, EvalRequest, Options};
use dei::metrics::orders::OrderKind;
use dei::metrics::table::Baseline;
use serde_json::Value;
use std::path::PathBuf;

fn fx(rel: &str) -> String {
    format!("tests/fixtures/metrics/{rel}")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn curve_col(v: &Value, order: &str, key: &str) -> Vec<f64> {
    let c = v["curves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["order"] == order)
        .unwrap_or_else(|| panic!("no {order} curve in {v}"));
    c["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[key].as_f64().unwrap_or(f64::NAN))
        .collect()
}

fn assert_vec(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w), "{what}: got {got:?}, want {want:?}");
    }
}

fn eval_json(extra: &[&str]) -> Value {
    let cands = fx("hand/cands.jsonl");
    let tasks = fx("hand/tasks.txt");
    let mut args = vec![
        "eval",
        cands.as_str(),
        "--tasks",
        tasks.as_str(),
        "--agents",
        "A,B,C",
        "--order",
        "given",
        "--bootstrap",
        "200",
        "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    let out = dei(&args);
    assert!(out.status.success(), "dei eval failed: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("valid JSON on stdout")
}

#[test]
fn hand_table_curves_without_selection() {
    let v = eval_json(&[]);
    assert_eq!(v["instances"], 5);
    assert_vec(
        &curve_col(&v, "given", "union"),
        &[60.0, 80.0, 80.0],
        "union",
    );
    assert_vec(
        &curve_col(&v, "given", "intersect"),
        &[60.0, 40.0, 20.0],
        "intersect",
    );
    assert_vec(
        &curve_col(&v, "given", "average"),
        &[60.0, 60.0, 800.0 / 15.0],
        "average",
    );
    // No selection: n@k is not reported.
    let p = &v["curves"][0]["points"][0];
    assert!(p.get("n_at_k").is_none(), "{p}");

    // Inputs: missing and empty candidates are counted, and the bogus label is said.
    let agents = v["agents"].as_array().unwrap();
    let get = |i: usize, k: &str| agents[i][k].as_u64().unwrap();
    assert_eq!(
        (get(0, "missing"), get(1, "missing"), get(2, "missing")),
        (1, 1, 2)
    );
    assert_eq!(get(1, "empty"), 1);
    assert_eq!(get(1, "resolved_without_candidate"), 1);

    // Diversity.
    let d = &v["diversity"];
    let rates: Vec<f64> = d["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["rate"].as_f64().unwrap())
        .collect();
    assert_vec(&rates, &[60.0, 60.0, 40.0], "rates");
    assert_eq!(d["unique"].as_array().unwrap().len(), 1);
    assert_eq!(d["unique"][0]["instance_id"], "i-1");
    assert_eq!(d["unique"][0]["agent"], "A");
    let j = |a: usize, b: usize| d["jaccard"][a][b].as_f64().unwrap();
    assert!(close(j(0, 1), 0.5) && close(j(0, 2), 0.25) && close(j(1, 2), 2.0 / 3.0));
    assert!(close(j(2, 1), 2.0 / 3.0) && close(j(1, 1), 1.0));
    let g = &d["gaps"];
    assert_eq!(g["best_single"], "A");
    assert!(close(g["oracle_gap"]["value"].as_f64().unwrap(), 20.0));
    assert!(close(
        g["union_minus_average"]["value"].as_f64().unwrap(),
        80.0 - 800.0 / 15.0
    ));
    assert!(close(
        g["union_minus_intersect"]["value"].as_f64().unwrap(),
        60.0
    ));
    assert_eq!(g["unsolved"], 1);
    // No selection: no pick to set against the best member.
    assert!(g.get("pick").is_none(), "{g}");
    // Intervals bracket the point estimate.
    let ci = g["union"]["ci"].as_array().unwrap();
    let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
    assert!(lo <= 80.0 && 80.0 <= hi && lo < hi, "{lo} {hi}");
}

#[test]
fn hand_table_n_at_k_with_ties_in_every_selection_format() {
    for file in [
        "hand/scores.jsonl",
        "hand/scores.csv",
        "hand/rank_results.jsonl",
    ] {
        let f = fx(file);
        let v = eval_json(&["--scores", &f]);
        assert_vec(
            &curve_col(&v, "given", "n_at_k"),
            &[60.0, 50.0, 50.0],
            &format!("n@k from {file}"),
        );
        assert_vec(&curve_col(&v, "given", "ties"), &[0.0, 3.0, 3.0], "ties");
        // Selection never changes the oracle curves.
        assert_vec(
            &curve_col(&v, "given", "union"),
            &[60.0, 80.0, 80.0],
            "union",
        );
        // The pick from all three against the best member (A, 60%), instance by instance:
        // 10 points below it, half of the oracle gap (Union 80 − 60) lost.
        let p = &v["diversity"]["gaps"]["pick"];
        assert_eq!(p["top_n"], 1, "{p}");
        assert!(close(p["n_at_k"]["value"].as_f64().unwrap(), 50.0), "{p}");
        let d = p["minus_best"]["value"].as_f64().unwrap();
        assert!(close(d, -10.0), "{p}");
        assert!(close(p["gap_closed"].as_f64().unwrap(), -50.0), "{p}");
        let ci = p["minus_best"]["ci"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= d && d <= hi && lo < hi, "{lo} {hi}");
    }
    // The text report says it beside the oracle gap.
    let f = fx("hand/scores.jsonl");
    let (c, t) = (fx("hand/cands.jsonl"), fx("hand/tasks.txt"));
    let out = dei(&[
        "eval",
        &c,
        "--tasks",
        &t,
        "--agents",
        "A,B,C",
        "--scores",
        &f,
        "--bootstrap",
        "0",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("1@3 − best single") && text.contains("-10.0"),
        "{text}"
    );
    assert!(
        text.contains("share of the oracle gap closed") && text.contains("-50.0%"),
        "{text}"
    );
}

#[test]
fn random_baseline_equals_average() {
    let v = eval_json(&["--baseline", "random"]);
    let n = curve_col(&v, "given", "n_at_k");
    let avg = curve_col(&v, "given", "average");
    assert_vec(&n, &avg, "random baseline vs average");
    // Among non-empty candidates only. k=2: i-1 picks A for sure (B is empty), i-3 is ½:
    // (1 + 1 + ½ + 1 + 0)/5 = 70. k=3: i-1 is A or C (½), i-3 is ⅔: (½ + 1 + ⅔ + 1 + 0)/5.
    let v = eval_json(&["--baseline", "random-nonempty"]);
    assert_vec(
        &curve_col(&v, "given", "n_at_k"),
        &[60.0, 70.0, 100.0 * (0.5 + 1.0 + 2.0 / 3.0 + 1.0) / 5.0],
        "random-nonempty",
    );
}

#[test]
fn scored_only_drops_unscored_instances() {
    let f = fx("hand/scores.jsonl");
    let v = eval_json(&["--scores", &f, "--scored-only"]);
    assert_eq!(v["instances"], 4);
    // i-5 gone: n@3 = (½ + 1 + 0 + 1)/4.
    assert!(close(
        curve_col(&v, "given", "n_at_k")[2],
        100.0 * 2.5 / 4.0
    ));
}

fn gen_req(agents: Option<Vec<&str>>, orders: Vec<OrderKind>, shuffles: usize) -> EvalRequest {
    EvalRequest {
        labels: vec![fx("gen/matrix.csv")],
        agents: agents.map(|a| a.into_iter().map(String::from).collect()),
        options: Options {
            orders,
            shuffles,
            ..Options::default()
        },
        ..EvalRequest::default()
    }
}

#[test]
fn generation_order_is_natural() {
    let r = eval::run(&gen_req(None, vec![OrderKind::Natural], 1)).unwrap();
    let c = &r.curves[0];
    assert_eq!(
        c.agents.as_deref().unwrap(),
        ["run-1", "run-2", "run-10"].map(String::from)
    );
    let u: Vec<f64> = c.points.iter().map(|p| p.union).collect();
    let i: Vec<f64> = c.points.iter().map(|p| p.intersect).collect();
    let a: Vec<f64> = c.points.iter().map(|p| p.average).collect();
    assert_vec(&u, &[50.0, 50.0, 75.0], "union");
    assert_vec(&i, &[50.0, 25.0, 25.0], "intersect");
    assert_vec(&a, &[50.0, 37.5, 100.0 * (5.0 / 3.0) / 4.0], "average");
    assert_eq!(r.instances, 4);

    // A fixed order as given.
    let r = eval::run(&gen_req(
        Some(vec!["run-10", "run-1", "run-2"]),
        vec![OrderKind::Given],
        1,
    ))
    .unwrap();
    let u: Vec<f64> = r.curves[0].points.iter().map(|p| p.union).collect();
    assert_vec(&u, &[50.0, 75.0, 75.0], "given union");
}

#[test]
fn random_orders_average_and_are_seeded() {
    let r = eval::run(&gen_req(None, vec![OrderKind::Random], 3000)).unwrap();
    let c = &r.curves[0];
    assert_eq!(c.shuffles, Some(3000));
    // Union@1 over uniformly random first agents: (50 + 25 + 50)/3.
    assert!(
        (c.points[0].union - 125.0 / 3.0).abs() < 1.5,
        "{:?}",
        c.points[0]
    );
    // At k = K every order gives the same committee.
    assert!(close(c.points[2].union, 75.0));
    assert!(close(c.points[2].intersect, 25.0));
    let again = eval::run(&gen_req(None, vec![OrderKind::Random], 3000)).unwrap();
    assert_eq!(again.curves[0], r.curves[0]);
}

#[test]
fn labels_beside_predictions_name_their_run() {
    // run-a/all_preds.jsonl and run-b/all_preds.jsonl both say model-x; their labels sit beside them.
    let base = PathBuf::from(fx("labels"));
    let req = EvalRequest {
        candidates: vec![base.join("run-a"), base.join("run-b")],
        labels: vec![
            fx("labels/run-a/results.json"),
            fx("labels/run-b/report.json"),
        ],
        agents: Some(vec!["run-a".into(), "run-b".into()]),
        options: Options {
            orders: vec![OrderKind::Given],
            ..Options::default()
        },
        ..EvalRequest::default()
    };
    let r = eval::run(&req).unwrap();
    assert_eq!(r.instances, 3);
    let counts: Vec<usize> = r.diversity.agents.iter().map(|a| a.resolved).collect();
    assert_eq!(counts, vec![1, 1]); // run-a: p-2; run-b: p-1
    assert_eq!(r.agents[1].missing, 1); // run-b has no p-2
    assert_eq!(r.agents[1].empty, 1);
    assert!(close(r.curves[0].points[1].union, 200.0 / 3.0));
}

#[test]
fn clear_errors_for_bad_input() {
    let cands = fx("hand/cands.jsonl");
    let out = dei(&["eval", &cands, "--agents", "A,Z"]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("unknown agent `Z`") && e.contains("A, B, C"),
        "{e}"
    );

    let bad = fx("labels/bad_matrix.csv");
    let out = dei(&["eval", "--labels", &bad]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(
        e.contains("bad_matrix.csv") && e.contains("line 3") && e.contains("beta"),
        "{e}"
    );

    // An agent without any labels.
    let preds = fx("labels/run-a/all_preds.jsonl");
    let out = dei(&["eval", &preds]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("has no resolved labels"),
        "{}",
        stderr(&out)
    );

    let out = dei(&["eval", &cands, "--scores", "/no/such/scores.jsonl"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot read selection file"));
}

#[test]
fn library_request_matches_cli() {
    let req = EvalRequest {
        candidates: vec![PathBuf::from(fx("hand/cands.jsonl"))],
        tasks: Some(PathBuf::from(fx("hand/tasks.txt"))),
        agents: Some(vec!["A".into(), "B".into(), "C".into()]),
        scores: Some(PathBuf::from(fx("hand/scores.jsonl"))),
        baseline: None::<Baseline>,
        options: Options {
            orders: vec![OrderKind::Given],
            ..Options::default()
        },
        ..EvalRequest::default()
    };
    let r = eval::run(&req).unwrap();
    let n: Vec<f64> = r.curves[0]
        .points
        .iter()
        .map(|p| p.n_at_k.unwrap())
        .collect();
    assert_vec(&n, &[60.0, 50.0, 50.0], "library n@k");
    let text = dei::metrics::text::table(&r);
    assert!(text.contains("Union@3") && text.contains("1@k") && text.contains("i-1"));
}

/// Candidates (`instance, agent, resolved`) and the other inputs of one eval, in a tempdir.
fn write_inputs(dir: &std::path::Path, cands: &[(&str, &str, bool)], tasks: &[&str]) {
    let lines: String = cands
        .iter()
        .map(|(i, a, r)| {
            format!(
                "{}\n",
                serde_json::json!({"instance_id": i, "agent": a, "model_patch": format!("diff {i} {a}"), "resolved": r})
            )
        })
        .collect();
    std::fs::write(dir.join("cands.jsonl"), lines).unwrap();
    std::fs::write(dir.join("tasks.txt"), tasks.join("\n") + "\n").unwrap();
}

fn eval_in(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let (cands, tasks) = (dir.join("cands.jsonl"), dir.join("tasks.txt"));
    let mut args = vec![
        "eval",
        cands.to_str().unwrap(),
        "--tasks",
        tasks.to_str().unwrap(),
        "--bootstrap",
        "50",
    ];
    args.extend_from_slice(extra);
    dei(&args)
}

#[test]
fn the_note_on_unknown_selection_agents_names_as_many_as_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(
        dir.path(),
        &[("i-1", "A", true), ("i-1", "B", false)],
        &["i-1"],
    );
    let mut rows = String::from("{\"instance_id\": \"i-1\", \"agent\": \"A\", \"score\": 2}\n");
    let ghosts = ["g1", "g2", "g3", "g4", "g5", "g6"];
    for g in ghosts {
        rows.push_str(&format!(
            "{{\"instance_id\": \"i-1\", \"agent\": \"{g}\", \"score\": 1}}\n"
        ));
    }
    let scores = dir.path().join("scores.jsonl");
    std::fs::write(&scores, rows).unwrap();
    let out = eval_in(dir.path(), &["--scores", scores.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let note = text
        .lines()
        .find(|l| l.contains("match no agent"))
        .unwrap_or_else(|| panic!("no note in {text}"));
    assert!(note.contains("6 agent name(s) match no agent"), "{note}");
    for g in ghosts {
        assert!(note.contains(g), "{g} missing from {note}");
    }
}

#[test]
fn a_selection_that_ranks_none_of_the_instances_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(
        dir.path(),
        &[("i-1", "A", true), ("i-1", "B", false), ("i-2", "A", false)],
        &["i-1", "i-2"],
    );
    let scores = dir.path().join("other-run.jsonl");
    std::fs::write(
        &scores,
        "{\"instance_id\": \"j-7\", \"agent\": \"A\", \"score\": 2}\n{\"instance_id\": \"j-8\", \"agent\": \"B\", \"score\": 1}\n",
    )
    .unwrap();
    let out = eval_in(dir.path(), &["--scores", scores.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(!out.status.success(), "a 1@k of nothing: {}", stdout(&out));
    assert!(
        err.contains("other-run.jsonl") && err.contains("ranks none of the 2 instances"),
        "{err}"
    );
    assert!(err.contains("--tasks") && err.contains("run dir"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_agent_without_candidates_on_these_instances_is_absent_not_unlabelled() {
    let dir = tempfile::tempdir().unwrap();
    // D has candidates, but none on i-1 or i-2.
    write_inputs(
        dir.path(),
        &[
            ("i-1", "A", true),
            ("i-1", "B", false),
            ("i-2", "A", false),
            ("i-2", "B", true),
            ("i-3", "D", true),
        ],
        &["i-1", "i-2"],
    );
    let out = eval_in(dir.path(), &["--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let agents: Vec<&str> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["A", "B"], "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("D") && notes.contains("no candidate on these 2 instances"),
        "{notes}"
    );
    // Named with --agents, it is an error that says so.
    let out = eval_in(dir.path(), &["--agents", "A,D"]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("agent `D` has no candidates on these 2 instances"),
        "{err}"
    );
    assert!(!err.contains("no resolved labels"), "{err}");
}
