//! Issue-only file localization on the SWE-bench Lite instances whose repositories are
//! available: dei's locator ([`dei::localize::search`], the one `dei generate` and the context
//! use) against a BM25-over-chunks baseline run in the same process (Agentless-style
//! retrieval, what the generator used before), and against itself without the history signal.
//!
//!   cargo bench -p dei-bench --bench localize -- [--data DIR] [--repos DIR] [--limit N]
//!
//! Data and repositories as every measurement reads them ([`dei_bench::data`]): `--data`,
//! else DEI_DATA, else ../shared/data beside the repository; `--repos`, else DEI_REPOS, else
//! target/repos (where the tests clone ../shared/repos).
//!
//! Halves by the one split ([`dei_bench::split`]: SHA-256(instance_id) first byte even = tune,
//! where the locator's default weights were fitted with `dei-bench context --fit`; odd = report).

use dei::generate::bm25::Bm25;
use dei::localize::search::{self as locate, FileIndex, LocateOptions, Weights};
use dei::model::paths::{is_python, is_test_path};
use dei::model::repo::{find_in_repos_dir, Snapshot};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Instant;

const METHODS: [&str; 3] = [
    "BM25 over chunks (baseline)",
    "dei, no history",
    "dei (default)",
];

struct Inst {
    tune: bool,
    /// Rank (1-based) of the first gold file, per method.
    ranks: [Option<usize>; 3],
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let data = dei_bench::data::data_dir(opt("--data").map(PathBuf::from).as_deref());
    let Some(repos) = dei_bench::data::repos_dir(opt("--repos").map(PathBuf::from).as_deref())
    else {
        anyhow::bail!("no folder of repositories: pass --repos DIR or set DEI_REPOS");
    };
    let limit: usize = opt("--limit")
        .and_then(|s| s.parse().ok())
        .unwrap_or(usize::MAX);
    let tasks = dei_bench::data::tasks_file(&data);
    let file = std::fs::File::open(&tasks)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e} (pass --data DIR)", tasks.display()))?;
    let mut insts = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_repo: BTreeMap<String, usize> = BTreeMap::new();
    let mut secs = [0.0f64; 3];
    let start = Instant::now();
    let no_history = LocateOptions {
        weights: Weights::default().with("history", 0.0),
        top_files: 100,
        ..LocateOptions::default()
    };
    let full = LocateOptions {
        top_files: 100,
        ..LocateOptions::default()
    };
    for line in std::io::BufReader::new(file).lines() {
        let task: dei::model::Task = serde_json::from_str(&line?)?;
        let Some(path) = find_in_repos_dir(&repos, &task.repo) else {
            *skipped.entry(task.repo.clone()).or_default() += 1;
            continue;
        };
        let seen = per_repo.entry(task.repo.clone()).or_default();
        if *seen >= limit {
            continue;
        }
        *seen += 1;
        let gold: Vec<String> = dei::patch::parse(task.gold_patch.as_deref().unwrap_or(""))?
            .files
            .iter()
            .map(|f| f.path().to_string())
            .collect();
        let rank = |files: &[String]| files.iter().position(|f| gold.contains(f)).map(|r| r + 1);
        let snap = Snapshot::open(&path, &task.base_commit)?;
        let issue = &task.problem_statement;
        // Baseline: files in the order of their best chunk.
        let t = Instant::now();
        let bm = Bm25::from_snapshot(&snap, |p| is_python(p) && !is_test_path(p))?;
        let mut order: Vec<String> = Vec::new();
        for (i, _) in bm.search(issue, usize::MAX) {
            let p = &bm.chunks[i].path;
            if !order.contains(p) {
                order.push(p.clone());
                if order.len() == 100 {
                    break;
                }
            }
        }
        secs[0] += t.elapsed().as_secs_f64();
        let r0 = rank(&order);
        // dei without, then with, history (the snapshot's files are read once for both).
        let located = |files: &FileIndex, opts: &LocateOptions| -> Vec<String> {
            locate::locate_files(issue, files, opts)
                .into_iter()
                .map(|h| h.path)
                .collect()
        };
        let t = Instant::now();
        let files = FileIndex::from_snapshot(&snap)?;
        let r1 = rank(&located(&files, &no_history));
        secs[1] += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let files = files.with_history(snap.history(locate::HISTORY_COMMITS)?);
        let r2 = rank(&located(&files, &full));
        secs[2] += t.elapsed().as_secs_f64();
        eprintln!(
            "{:>4} {:<40} ranks {:?} {:?} {:?}  {:.1}s",
            insts.len() + 1,
            task.instance_id,
            r0,
            r1,
            r2,
            start.elapsed().as_secs_f64()
        );
        insts.push(Inst {
            tune: dei_bench::split::half(&task.instance_id) == dei_bench::split::Split::Tune,
            ranks: [r0, r1, r2],
        });
    }
    let n_tune = insts.iter().filter(|i| i.tune).count();
    println!(
        "instances: {} ({n_tune} tune half, {} report half) from {per_repo:?}",
        insts.len(),
        insts.len() - n_tune
    );
    println!("skipped (repository not available): {skipped:?}");
    println!(
        "{:<30} {:>6} {:>9} {:>9} {:>9} {:>7}",
        "method", "half", "top1", "top5", "top10", "MRR"
    );
    for (m, name) in METHODS.iter().enumerate() {
        for (half, keep) in [("tune", Some(true)), ("report", Some(false)), ("all", None)] {
            let set: Vec<&Inst> = insts
                .iter()
                .filter(|i| keep.is_none_or(|k| i.tune == k))
                .collect();
            let n = set.len().max(1) as f64;
            let at = |k: usize| {
                100.0
                    * set
                        .iter()
                        .filter(|i| i.ranks[m].is_some_and(|r| r <= k))
                        .count() as f64
                    / n
            };
            let mrr = set
                .iter()
                .map(|i| i.ranks[m].map_or(0.0, |r| 1.0 / r as f64))
                .sum::<f64>()
                / n;
            println!(
                "{name:<30} {half:>6} {:>8.2}% {:>8.2}% {:>8.2}% {mrr:>7.3}",
                at(1),
                at(5),
                at(10)
            );
        }
    }
    let n = insts.len().max(1) as f64;
    println!(
        "time per issue, reading and indexing included: baseline {:.0} ms; dei without history {:.0} ms ({:.2}x); history adds {:.0} ms",
        1e3 * secs[0] / n,
        1e3 * secs[1] / n,
        secs[1] / secs[0].max(1e-9),
        1e3 * secs[2] / n
    );
    println!("SuperCoder2.0 reports 84.33% file top-5 on all of SWE-bench Lite (with an LLM).");
    println!("elapsed {:.1}s", start.elapsed().as_secs_f64());
    Ok(())
}
