//! `dei rank` on real SWE-bench Lite predictions against a real psf/requests repository.
//! Skips (saying so) when ../shared/data (or DEI_DATA) or the repository (the bundles in
//! ../shared/repos, or DEI_REPOS) is absent.

use crate::support::common;
use common::*;

#[test]
fn ranks_published_runs_on_a_requests_issue() {
    let Some(data) = shared_data() else {
        return skip("needs ../shared/data (or DEI_DATA)");
    };
    let Some(repo) = real_repo("psf/requests") else {
        return skip("needs psf/requests: ../shared/repos (bundles) or DEI_REPOS");
    };
    let runs = data.join("lite_runs");
    let mut preds: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("all_preds.jsonl"))
        .filter(|p| p.exists())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    preds.sort();
    let tasks = data.join("swebench_lite/test.jsonl");
    let mut args = vec!["rank".to_string()];
    args.extend(preds.iter().cloned());
    for a in [
        "--tasks",
        path_str(&tasks),
        "--issue",
        "psf__requests-2317",
        "--repo",
        path_str(&repo),
        "--json",
        "-",
    ] {
        args.push(a.to_string());
    }
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = dei(&argv);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ranked = v["ranked"].as_array().unwrap();
    assert!(
        ranked.len() >= 10,
        "expected one candidate per run, got {}",
        ranked.len()
    );
    let applies = ranked.iter().filter(|r| r["applies"] == "clean").count();
    assert!(
        applies >= ranked.len() / 2,
        "most published patches apply: {applies}/{}",
        ranked.len()
    );
    // Every candidate edits something under requests/ or is empty/non-applying.
    let mut agents: Vec<&str> = ranked
        .iter()
        .map(|r| r["agent"].as_str().unwrap())
        .collect();
    agents.sort();
    agents.dedup();
    assert_eq!(
        agents.len(),
        ranked.len(),
        "runs sharing a model name must stay distinct: {agents:?}"
    );
    assert!(ranked.iter().any(|r| r["files"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str().unwrap().starts_with("requests/"))));
}
