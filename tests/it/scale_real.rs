//! A few real SWE-bench Lite issues through the multi-issue runner (skips, saying so, without
//! the data or the requests repository).

use crate::support::common;
use crate::support::scale_util;

use scale_util::*;
use serde_json::Value;

#[test]
fn lite_sample_ranks_available_repos_and_reports_missing_ones() {
    let Some(data) = common::shared_data().filter(|p| p.join("lite_candidates.jsonl").exists())
    else {
        return common::skip("needs ../shared/data (or DEI_DATA) with lite_candidates.jsonl");
    };
    let Some(repos) = common::repos_dir_with("psf/requests") else {
        return common::skip("needs psf/requests: ../shared/repos (bundles) or DEI_REPOS");
    };
    let django = dei::model::repo::find_in_repos_dir(&repos, "django/django").is_some();
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let ids = [
        "psf__requests-2317",
        "psf__requests-863",
        "psf__requests-3362",
        "django__django-11099",
    ];
    let mut args: Vec<String> = vec![
        "rank".into(),
        s(&data.join("lite_candidates.jsonl")).into(),
        "--tasks".into(),
        s(&data.join("swebench_lite/test.jsonl")).into(),
        "--repos".into(),
        s(&repos).into(),
        "--run-dir".into(),
        s(&run_dir).into(),
        "--json".into(),
        "-".into(),
    ];
    for id in ids {
        args.extend(["--issue".into(), id.into()]);
    }
    let out = run(&args);
    // Without the django repository its issue is not ranked: the run says so and exits 1.
    assert_eq!(out.status.success(), django, "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        let id = r["instance_id"].as_str().unwrap();
        if id.starts_with("django") && !django {
            assert_eq!(r["status"], "missing_repo", "{r}");
        } else {
            assert_eq!(r["status"], "ok", "{r}");
            assert!(r["candidates"].as_u64().unwrap() >= 5, "{r}");
            let credit = r["top_resolved"]
                .as_f64()
                .expect("lite candidates carry labels");
            assert!((0.0..=1.0).contains(&credit), "{r}");
            assert!(!r["top"].as_array().unwrap().is_empty());
        }
    }
    let labelled = summary["labelled"].as_u64().unwrap();
    assert_eq!(labelled, if django { 4 } else { 3 });
}
