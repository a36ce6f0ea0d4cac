//! Strict mode against real `git apply` on a bounded sample of real candidates.
//! Needs ../shared/data (or DEI_DATA) and repositories: DEI_REPOS when set, else the bundles in
//! ../shared/repos (cloned into target/repos); skips, saying so, when they are absent.
//! DEI_PATCH_SAMPLE=N changes the sample size.

#[path = "../../../tests/it/support/common.rs"]
mod common;
use common::*;
use dei_bench::verify;
use std::path::PathBuf;

fn data_dir() -> Option<PathBuf> {
    shared_data().filter(|p| p.join("lite_candidates.jsonl").exists())
}

#[test]
fn strict_mode_answers_like_git_apply_on_real_candidates() {
    let Some(data) = data_dir() else {
        return skip("needs ../shared/data (or DEI_DATA) with lite_candidates.jsonl");
    };
    let Some(repos) = repos_dirs().into_iter().next() else {
        return skip("needs repositories: ../shared/repos (bundles) or DEI_REPOS");
    };
    let (items, skipped) = verify::load_items(&data, &repos).unwrap();
    assert!(
        !items.is_empty(),
        "no candidate repositories under {} ({skipped:?})",
        repos.display()
    );
    let n = std::env::var("DEI_PATCH_SAMPLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut sample = verify::sample(&items, n);
    // Damaged variants of a few of them, so that rejections are checked as well as acceptances.
    let spread: Vec<_> = sample.iter().step_by(5).cloned().collect();
    let damaged = verify::variant_items(&spread);
    sample.extend(damaged);
    let tmp = tempfile::tempdir().unwrap();
    let report = verify::compare(&sample, tmp.path(), |_, _| {}).unwrap();
    eprintln!("{}", report.summary());
    for d in report.rejected.iter().chain(&report.disagreements) {
        eprintln!("  {d}");
    }
    assert_eq!(report.checked, sample.len());
    assert!(
        report.git_accepts > 0 && report.git_accepts < report.checked,
        "the sample should hold both accepted and rejected patches"
    );
    assert!(
        report.tolerant_rescues > 0,
        "tolerant mode should rescue some damaged variants"
    );
    assert!(
        report.disagreements.is_empty(),
        "{} disagreement(s) with git:\n{}",
        report.disagreements.len(),
        report.disagreements.join("\n")
    );
    assert_eq!(report.agree, report.checked);
    assert_eq!(report.after_identical, report.after_compared);
}
