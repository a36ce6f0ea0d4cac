//! Benchmark + full verification: rebuild before/after for every non-empty SWE-bench Lite
//! candidate whose repository is available, with the engine (in memory, rayon, git2) and with
//! the checkout-based way (clone --shared, `git checkout` + `git clean` + `git apply`, reading
//! the files), in this one process, and compare the results.
//!
//!   cargo bench -p dei-bench --bench patch_vs_git
//!
//! Environment (read by [`dei_bench::data`]): DEI_DATA (default ../shared/data beside the
//! repository), DEI_REPOS (default the repository's target/repos, where the tests clone
//! ../shared/repos's bundles), DEI_BENCH_ROUNDS (engine rounds, default 3; the best is reported),
//! DEI_BENCH_GIT_SAMPLE=N (run git on a sample of N only and extrapolate per candidate).

use dei::patch::Mode;
use dei_bench::batch::{rebuild_all, Job};
use dei_bench::{data, verify};
use std::time::Instant;

/// Peak resident set size of this process so far (VmHWM), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let data = data::data_dir(None);
    let Some(mirror) = data::repos_dir(None) else {
        println!("SKIPPED: no repositories (DEI_REPOS, or target/repos made by the tests)");
        return Ok(());
    };
    if !data::candidates_file(&data).exists() {
        println!("SKIPPED: no lite_candidates.jsonl under {}", data.display());
        return Ok(());
    }
    let (items, skipped) = verify::load_items(&data, &mirror)?;
    if items.is_empty() {
        println!("SKIPPED: no repositories under {}", mirror.display());
        return Ok(());
    }
    println!(
        "candidates with a repository: {} (skipped for missing repositories: {skipped:?})",
        items.len()
    );
    println!("rayon threads: {}", rayon::current_num_threads());

    // Engine: timed rounds over everything.
    let rounds: usize = std::env::var("DEI_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let jobs: Vec<Job> = items
        .iter()
        .map(|it| Job {
            candidate: &it.candidate,
            repo: it.repo.clone(),
            commit: it.commit.clone(),
        })
        .collect();
    let mut best = f64::MAX;
    for round in 0..rounds.max(1) {
        let t = Instant::now();
        let views = rebuild_all(&jobs, Mode::Tolerant);
        let secs = t.elapsed().as_secs_f64();
        let ok = views.iter().filter(|v| v.is_ok()).count();
        println!(
            "engine round {}: {:.3} s, {:.0} candidates/s ({ok} rebuilt)",
            round + 1,
            secs,
            items.len() as f64 / secs
        );
        best = best.min(secs);
    }
    let engine_peak = peak_rss_mib();
    println!("engine peak RSS (VmHWM, whole process incl. loaded data): {engine_peak:.1} MiB");

    // git: everything (or a sample), with the full comparison.
    let git_items = match std::env::var("DEI_BENCH_GIT_SAMPLE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        Some(n) => verify::sample(&items, n),
        None => items.clone(),
    };
    let tmp = std::env::temp_dir().join(format!("dei-patch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let report = verify::compare(&git_items, &tmp, |done, all| {
        if done % 200 == 0 || done == all {
            eprintln!("git: {done}/{all}");
        }
    });
    let _ = std::fs::remove_dir_all(&tmp);
    let report = report?;
    println!("{}", report.summary());
    for d in report.rejected.iter().chain(&report.disagreements) {
        println!("  {d}");
    }
    // Damaged variants (counts, prefixes, CRLF, whitespace, ...) of a spread-out sample: strict
    // must still answer like git, and tolerant mode shows what it rescues.
    let n: usize = std::env::var("DEI_BENCH_VARIANTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    if n > 0 {
        let tmp = std::env::temp_dir().join(format!("dei-patch-bench-v-{}", std::process::id()));
        std::fs::create_dir_all(&tmp)?;
        let damaged = verify::variant_items(
            &verify::sample(&items, n)
                .into_iter()
                .step_by(1)
                .collect::<Vec<_>>(),
        );
        let vr = verify::compare(&damaged, &tmp, |_, _| {});
        let _ = std::fs::remove_dir_all(&tmp);
        let vr = vr?;
        println!(
            "--- damaged variants of {n} sampled candidates ---\n{}",
            vr.summary()
        );
        for d in &vr.disagreements {
            println!("  {d}");
        }
    }
    let git_per = report.baseline().as_secs_f64() / git_items.len() as f64;
    let engine_per = best / items.len() as f64;
    println!(
        "BENCH engine best of {rounds}: {:.0} candidates/s | git baseline: {:.1} candidates/s{} | ratio {:.0}x | engine peak RSS {engine_peak:.1} MiB",
        1.0 / engine_per,
        1.0 / git_per,
        if git_items.len() < items.len() { format!(" (sample of {}, extrapolated per candidate)", git_items.len()) } else { String::new() },
        git_per / engine_per
    );
    Ok(())
}
