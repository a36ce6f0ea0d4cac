//! Whole-benchmark scale: every candidate of `lite_candidates.jsonl` (3,626 over 300 SWE-bench
//! Lite issues) ranked by the offline committee into a fresh run directory.
//!
//! Reports wall time, peak RSS, candidates/s and the issues skipped for missing repositories,
//! plus two baselines measured in the same process:
//! - memory: the streaming index vs loading every patch at once (`candidates::load`);
//! - time per issue: the runner vs calling `pipeline::rank` issue by issue (which re-reads the
//!   whole predictions file each time), on a sample of issues.
//!
//! `cargo bench --bench scale` (release). Env: `DEI_DATA` (default ../shared/data), `DEI_REPOS`
//! (default target/repos, where the tests clone ../shared/repos's bundles), `SCALE_SAMPLE`
//! (baseline issues, default 10).

use dei::model::task::Selection;
use dei::rank::pipeline::{IssueSource, RankRequest};
use dei::rank::run::RunRequest;
use dei::review::offline::Offline;
use std::path::PathBuf;
use std::time::Instant;

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Reset the peak-RSS mark (Linux >= 4.0); false when not possible.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Run this bench again as a child that builds the index (or loads every candidate) of
/// `file` and reports its peak RSS growth in KiB and the candidate count.
fn child_peak(what: &str, file: &std::path::Path) -> (u64, usize) {
    let out = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env("SCALE_CHILD", what)
        .env("SCALE_FILE", file)
        .output()
        .expect("child runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let kib = it.next().unwrap_or(0);
    (kib, it.next().unwrap_or(0) as usize)
}

fn child(what: &str) {
    let file = PathBuf::from(std::env::var_os("SCALE_FILE").expect("SCALE_FILE"));
    let base = status_kib("VmRSS:");
    let n = if what == "index" {
        dei::rank::run::index::Index::build(std::slice::from_ref(&file))
            .expect("index")
            .len()
    } else {
        dei::candidates::load(std::slice::from_ref(&file))
            .expect("load")
            .candidates
            .len()
    };
    println!("{} {n}", status_kib("VmHWM:").saturating_sub(base));
}

fn main() {
    if let Ok(what) = std::env::var("SCALE_CHILD") {
        return child(&what);
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = Some(
        std::env::var_os("DEI_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("../shared/data")),
    )
    .filter(|p| p.join("lite_candidates.jsonl").exists());
    let Some(data) = data else {
        eprintln!("SKIPPED: no lite_candidates.jsonl (set DEI_DATA to the shared data folder)");
        return;
    };
    let repos = std::env::var_os("DEI_REPOS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/repos"));
    if !repos.exists() {
        eprintln!(
            "SKIPPED: no repositories at {} (set DEI_REPOS)",
            repos.display()
        );
        return;
    }
    let cands = data.join("lite_candidates.jsonl");
    let tasks = data.join("swebench_lite/test.jsonl");
    let sample: usize = std::env::var("SCALE_SAMPLE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let committee = Offline::default();
    let peak_resettable = reset_peak();

    // Memory baseline: the index vs every patch in memory, on the file and on a copy
    // repeated ten times (agents renamed): about the size of a 2,300-issue benchmark.
    let big_dir = tempfile::tempdir().expect("tempdir");
    let big = big_dir.path().join("lite_x10.jsonl");
    {
        let text = std::fs::read_to_string(&cands).expect("read candidates");
        let mut out = String::with_capacity(text.len() * 10);
        for k in 0..10 {
            out.push_str(&text.replace("\"run\": \"", &format!("\"run\": \"copy{k}-")));
        }
        std::fs::write(&big, out).expect("write x10");
    }
    // Each measured in a child process of its own, so freed heap does not hide the peak.
    let mut memory = Vec::new();
    for file in [&cands, &big] {
        let index_kib = child_peak("index", file);
        let load_kib = child_peak("load", file);
        let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        memory.push((size, index_kib.1, index_kib.0, load_kib.0));
    }
    drop(big_dir);

    // The whole run.
    let dir = tempfile::tempdir().expect("tempdir");
    let req = RunRequest {
        candidates: vec![cands.clone()],
        naming: Default::default(),
        tasks: tasks.clone(),
        selection: Selection::All,
        repo: None,
        repos: Some(repos.clone()),
        strict: false,
        context_tokens: 4000,
        max_patch_bytes: dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES,
        run_dir: dir.path().join("run"),
        shard: None,
        retry_errors: false,
        stop: None,
        relocator: None,
        exec: None,
    };
    reset_peak();
    let t = Instant::now();
    let report = dei::rank::run::run(&req, &committee).expect("run");
    let wall = t.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM:");
    let s = &report.summary;

    // Time baseline on the same sample of issues: the runner (fresh run directory) vs
    // `pipeline::rank` per issue (which re-reads the whole predictions file each time).
    let ids: Vec<String> = s
        .rows
        .iter()
        .filter(|r| r.status == "ok")
        .take(sample)
        .map(|r| r.instance_id.clone())
        .collect();
    let sample_req = RunRequest {
        selection: Selection::Ids(ids.clone()),
        run_dir: dir.path().join("sample"),
        ..req.clone()
    };
    // Warm the process-wide blob and parse caches on the sample first, so neither measured
    // pass pays for the other's cold reads.
    dei::rank::run::run(
        &RunRequest {
            run_dir: dir.path().join("warm"),
            ..sample_req.clone()
        },
        &committee,
    )
    .expect("warm-up run");
    let t = Instant::now();
    dei::rank::run::run(&sample_req, &committee).expect("sample run");
    let per_issue_run = t.elapsed().as_secs_f64() / ids.len().max(1) as f64;
    let t = Instant::now();
    for id in &ids {
        let rr = RankRequest {
            candidates: vec![cands.clone()],
            issue: IssueSource::Tasks {
                file: tasks.clone(),
                id: id.clone(),
            },
            repo: None,
            repos: Some(repos.clone()),
            strict: false,
            context_tokens: 4000,
            max_patch_bytes: dei::rank::pipeline::DEFAULT_MAX_PATCH_BYTES,
            naming: Default::default(),
            relocator: None,
            exec: None,
        };
        dei::rank::pipeline::rank(&rr, &committee).expect("baseline rank");
    }
    let per_issue_base = t.elapsed().as_secs_f64() / ids.len().max(1) as f64;

    println!(
        "scale: {} candidates over {} issues ({})",
        s.candidates,
        s.selected,
        cands.display()
    );
    for (size, n, index_kib, load_kib) in &memory {
        println!(
            "  memory, {:.1} MB file, {n} candidates: index peak +{:.1} MiB; all patches loaded: peak +{:.1} MiB (index/load {:.2})",
            *size as f64 / 1e6,
            mib(*index_kib),
            mib(*load_kib),
            *index_kib as f64 / (*load_kib).max(1) as f64
        );
    }
    println!("  wall time             {wall:.2} s");
    println!(
        "  peak RSS              {:.1} MiB{}",
        mib(peak),
        if peak_resettable {
            ""
        } else {
            " (process peak; could not reset)"
        }
    );
    println!(
        "  candidates/s          {:.0} (all {}), {:.0} (ranked {})",
        s.candidates as f64 / wall,
        s.candidates,
        s.candidates_ranked as f64 / wall,
        s.candidates_ranked
    );
    println!(
        "  issues ranked         {} ; errors {:?}",
        s.ranked, s.errors
    );
    println!("  skipped, missing repo {:?}", s.missing_repos);
    println!("  candidate errors      {}", s.candidate_errors);
    if let (Some(c), Some(o)) = (s.top1_resolved, s.oracle) {
        println!(
            "  top-1 resolved        {c:.2} of {} labelled issues; oracle {o}",
            s.labelled
        );
    }
    println!(
        "  same {} issues: runner {:.1} ms/issue vs pipeline::rank per issue {:.1} ms/issue (x{:.2})",
        ids.len(),
        1000.0 * per_issue_run,
        1000.0 * per_issue_base,
        per_issue_base / per_issue_run.max(1e-9)
    );
    println!(
        "  targets: whole set < 60 s: {}; < 1 GiB: {}",
        if wall < 60.0 { "met" } else { "NOT met" },
        if peak < 1 << 20 { "met" } else { "NOT met" }
    );
}
