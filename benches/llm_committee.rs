//! Benchmark (not a test): the LLM committee's scheduling overhead against the mock server.
//!
//! 300 issues × 5 candidates × 3 samples = 4,500 calls, mock latency 200 ms, concurrency 64.
//! Ideal wall time = calls × latency / concurrency. Reports wall / ideal (target ≤ 1.15) and
//! the committee's CPU time per call (target < 1 ms), measured with getrusage on this process,
//! with the response cache, when rerun from it, and with `--no-cache`;
//! the mock runs in a child process so its CPU is not counted.
//!
//! `cargo bench --bench llm_committee` (env: DEI_BENCH_ISSUES, DEI_BENCH_CANDIDATES,
//! DEI_BENCH_SAMPLES, DEI_BENCH_LATENCY_MS, DEI_BENCH_CONCURRENCY to change the shape).

#[path = "../tests/it/support/llm_mock.rs"]
mod llm_mock;

use dei::llm::config::LlmOptions;
use dei::review::llm::LlmCommittee;
use dei::review::Committee;
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn cpu_user_sys() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage failed");
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn main() {
    let latency_ms = env_or("DEI_BENCH_LATENCY_MS", 200);
    if std::env::var_os("DEI_MOCK_SERVE").is_some() {
        let mock = llm_mock::Mock::start(Duration::from_millis(latency_ms));
        println!("{}", mock.addr);
        // Serve until the parent closes our stdin.
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        return;
    }
    let issues = env_or("DEI_BENCH_ISSUES", 300) as usize;
    let cands = env_or("DEI_BENCH_CANDIDATES", 5) as usize;
    let samples = env_or("DEI_BENCH_SAMPLES", 3) as u32;
    let concurrency = env_or("DEI_BENCH_CONCURRENCY", 64) as usize;

    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("DEI_MOCK_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the mock server");
    let mut addr = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut addr)
        .unwrap();
    let base = format!("http://{}/v1", addr.trim());

    let bundles: Vec<_> = (0..issues)
        .map(|i| llm_mock::bundle(&format!("bench-{i}"), cands, Some(i % cands)))
        .collect();
    // DEI_BENCH_CACHE_DIR puts the cache on another filesystem (e.g. /dev/shm).
    let cache = match std::env::var_os("DEI_BENCH_CACHE_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    };
    let expected = (issues * cands) as u64 * u64::from(samples);
    let ideal = expected as f64 * latency_ms as f64 / 1000.0 / concurrency as f64;
    let args = |cache: Option<&std::path::Path>| {
        let a = LlmOptions {
            llm: Some("openai-compatible:bench".into()),
            base_url: Some(base.clone()),
            selector: "pointwise".into(),
            samples,
            max_tokens: 1024,
            concurrency,
            retries: 3,
            parse_retries: 1,
            backoff_ms: 100,
            timeout: 30.0,
            cache: cache.map(|c| c.to_path_buf()).unwrap_or_default(),
            no_cache: cache.is_none(),
            ..Default::default()
        };
        LlmCommittee::new(a.resolve(&|_| None).unwrap().unwrap()).unwrap()
    };
    println!("llm committee benchmark: {issues} issues x {cands} candidates x {samples} samples = {expected} calls, mock latency {latency_ms} ms, concurrency {concurrency}; ideal {ideal:.2} s (calls x latency / concurrency)");
    let report = |what: &str, c: &LlmCommittee| {
        let (u0, s0) = cpu_user_sys();
        let t0 = Instant::now();
        let results = c.review_many(&bundles);
        let wall = t0.elapsed().as_secs_f64();
        let (u1, s1) = cpu_user_sys();
        let calls = c.usage().calls;
        let unscored = results
            .iter()
            .flat_map(|r| r.as_ref().unwrap())
            .filter(|r| r.unscored.is_some())
            .count();
        let per = |x: f64| x * 1000.0 / (calls + c.usage().cached).max(1) as f64;
        println!(
            "  {what:<22} wall {wall:6.2} s = {:.3}x ideal (target <= 1.15x); CPU {:.3} ms/call+hit (target < 1 ms: {:.3} user + {:.3} system); {calls} calls sent, {} cached, {unscored} unscored",
            wall / ideal,
            per(u1 - u0 + s1 - s0),
            per(u1 - u0),
            per(s1 - s0),
            c.usage().cached
        );
        calls
    };
    let with_cache = report("with the cache", &args(Some(cache.path())));
    let rerun = report("rerun from the cache", &args(Some(cache.path())));
    let no_cache = report("--no-cache", &args(None));

    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        (with_cache, rerun, no_cache),
        (expected, 0, expected),
        "every call made once; a rerun makes none"
    );
}
