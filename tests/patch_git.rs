//! Strict mode against real `git apply` on a bounded sample of real candidates.
//! Needs ../shared/data (or DEI_DATA) and the repositories under /work/.mirror (or DEI_REPOS);
//! skips, saying so, when they are absent (as in CI). DEI_PATCH_SAMPLE=N changes the sample size.

mod common;
use common::*;
use std::path::PathBuf;

fn data_dir() -> Option<PathBuf> {
    shared_data()
        .or_else(|| std::env::var_os("DEI_DATA").map(PathBuf::from))
        .or_else(|| Some(PathBuf::from("/work/shared/data")))
        .filter(|p| p.join("lite_candidates.jsonl").exists())
}

#[test]
fn strict_mode_answers_like_git_apply_on_real_candidates() {
    let Some(data) = data_dir() else {
        return skip("shared data (lite_candidates.jsonl) not found");
    };
    let mirror = std::env::var_os("DEI_REPOS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/.mirror"));
    let (items, skipped) = dei::patch::verify::load_items(&data, &mirror).unwrap();
    if items.is_empty() {
        return skip(&format!(
            "no candidate repositories under {} ({skipped:?})",
            mirror.display()
        ));
    }
    let n = std::env::var("DEI_PATCH_SAMPLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let mut sample = dei::patch::verify::sample(&items, n);
    // Damaged variants of a few of them, so that rejections are checked as well as acceptances.
    let spread: Vec<_> = sample.iter().step_by(5).cloned().collect();
    let damaged = dei::patch::verify::variant_items(&spread);
    sample.extend(damaged);
    let tmp = tempfile::tempdir().unwrap();
    let report = dei::patch::verify::compare(&sample, tmp.path(), |_, _| {}).unwrap();
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
