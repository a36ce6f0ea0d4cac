//! The offline committee on a small sample of real SWE-bench Lite candidates (psf/requests).
//! Skips, saying so, when ../shared/data (or DEI_DATA) is absent; the repository comes from
//! DEI_REPOS or the bundles in ../shared/repos, and without it the test runs text-only (saying so).

#[path = "../../../tests/it/support/common.rs"]
mod common;
use dei::review::offline::Offline;
use dei_bench::offline as eval;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn data() -> Option<PathBuf> {
    common::shared_data()
}

#[test]
fn committee_figures_on_requests_sample() {
    let Some(data) = data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    // eval wants the folder of repositories.
    let repos = common::repos_dir_with("psf/requests");
    if repos.is_none() {
        common::skip("psf/requests repository not found (../shared/repos or DEI_REPOS): ran text-only signals, not the repository's");
    }
    let committees = eval::default_committees();
    let runs: BTreeSet<String> = committees.iter().flat_map(|(_, m)| m.clone()).collect();
    let insts = eval::load_where(&data, repos.as_deref(), &runs, &|t| {
        t.repo == "psf/requests"
    })
    .expect("sample loads");
    assert_eq!(
        insts.len(),
        6,
        "SWE-bench Lite has 6 psf/requests instances"
    );
    assert_eq!(insts.iter().all(|i| i.covered), repos.is_some());
    let refs: Vec<&eval::Instance> = insts.iter().collect();
    let committee = Offline::default();
    for (name, members) in &committees {
        let f = eval::figures(&refs, members, &committee, 1);
        assert_eq!(f.instances, 6);
        assert!(f.n_at_k_pct <= f.union_pct + 1e-9, "{name}: {f:?}");
        assert!(f.average_pct <= f.union_pct + 1e-9, "{name}: {f:?}");
        assert!(f.best_member_pct <= f.union_pct + 1e-9, "{name}: {f:?}");
        assert!(f.ties <= 6);
        // Same input, same figures (no hidden randomness or order effects).
        let again = eval::figures(&refs, members, &committee, 1);
        assert_eq!(f.n_at_k_pct, again.n_at_k_pct);
        // Reversing the members (input order) changes nothing either.
        let rev: Vec<String> = members.iter().rev().cloned().collect();
        let r = eval::figures(&refs, &rev, &committee, 1);
        assert!(
            (f.n_at_k_pct - r.n_at_k_pct).abs() < 1e-9,
            "{name}: order effect"
        );
    }
    // Every slot of a present, non-empty candidate is scored in 1..=10.
    for i in &insts {
        let s = eval::slots(i, &committees[0].1, &committee);
        assert_eq!(s.len(), 4);
        for slot in s.iter().filter(|s| s.score.is_some()) {
            let v = slot.score.unwrap();
            assert!((1.0..=10.0).contains(&v), "{v}");
        }
    }
}

/// The offline fit uses the one split every measurement uses: its fit half is the tune half.
#[test]
fn split_is_the_shared_one_deterministic_and_balanced() {
    let Some(data) = data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    let tasks = dei::model::task::load_tasks(&data.join("swebench_lite/test.jsonl")).unwrap();
    let fit = tasks
        .iter()
        .filter(|t| eval::in_fit_half(&t.instance_id))
        .count();
    assert!((120..=180).contains(&fit), "fit half has {fit} of 300");
    for t in &tasks {
        assert_eq!(
            eval::in_fit_half(&t.instance_id),
            dei_bench::split::half(&t.instance_id) == dei_bench::split::Split::Tune,
            "{}",
            t.instance_id
        );
    }
    // The localization's report half is the offline committee's held-out half.
    assert!(!eval::in_fit_half("psf__requests-863"));
    assert!(eval::in_fit_half("pallets__flask-4045"));
}
