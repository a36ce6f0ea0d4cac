//! The shipped environment specs, built for real from the bundled repositories (psf/requests,
//! pallets/flask, pytest-dev/pytest; sympy/sympy and pydata/xarray when a folder in `DEI_REPOS`
//! holds them) and used to run one test file of each at its setup commit in the sandbox. Needs
//! PyPI, so it runs only with `DEI_EXEC_REAL=1` (one version per repository;
//! `DEI_EXEC_REAL=all` for every shipped version; `DEI_EXEC_REAL_REPOS=sympy/sympy,…` to pick
//! repositories), and prints build times. requests' smoke tests are ones that call httpbin,
//! served by the spec's local httpbin; xarray's need cftime, a backend of its spec. Times:
//!
//!     DEI_EXEC_REAL=1 cargo test --test it exec_env_real -- --nocapture
//!
//! Environments are cached in `target/dei-cache` (a second run reuses them).

use crate::support::common;

use dei::exec::env::{shipped_specs, EnvBuilder};
use dei::exec::sandbox::{Backend, Job, Limits, LocalBackend, Tree};
use std::time::Duration;

/// Test files to try, first existing wins, and extra arguments.
fn smoke(repo: &str) -> (&'static [&'static str], &'static str) {
    match repo {
        "psf/requests" => (
            &["test_requests.py", "tests/test_requests.py"],
            // Tests that call httpbin: served by the spec's local httpbin.
            "-k 'HTTP_200_OK_GET and not DIGEST'",
        ),
        "pallets/flask" => (&["tests/test_json.py"], ""),
        "sympy/sympy" => (&["sympy/utilities/tests/test_iterables.py"], ""),
        // Tests that need cftime, one of the backends its spec adds: they skip without it.
        "pydata/xarray" => (&["xarray/tests/test_cftimeindex.py"], "-k field_accessors"),
        _ => (&["testing/test_nodes.py", "testing/test_mark.py"], ""),
    }
}

#[test]
fn shipped_specs_build_and_run_tests_in_the_sandbox() {
    let mode = std::env::var("DEI_EXEC_REAL").unwrap_or_default();
    if mode.is_empty() {
        common::skip("set DEI_EXEC_REAL=1 (needs PyPI) to build the real environments");
        return;
    }
    let builder = EnvBuilder::new(&common::target_dir().join("dei-cache"));
    let mut built = 0;
    let only = std::env::var("DEI_EXEC_REAL_REPOS").unwrap_or_default();
    for repo_name in [
        "psf/requests",
        "pallets/flask",
        "pytest-dev/pytest",
        "sympy/sympy",
        "pydata/xarray",
    ] {
        if !only.is_empty() && !only.split(',').any(|r| r == repo_name) {
            continue;
        }
        let Some(repo) = common::real_repo(repo_name) else {
            common::skip(&format!("{repo_name} is not in target/repos"));
            continue;
        };
        let git = git2::Repository::open(&repo).unwrap();
        let mut specs: Vec<_> = shipped_specs()
            .iter()
            .filter(|s| s.repo == repo_name)
            .collect();
        if mode != "all" {
            specs.truncate(1);
        }
        for spec in specs {
            let commit = spec.setup_commit.clone().unwrap();
            let Ok(c) = git.revparse_single(&commit) else {
                eprintln!(
                    "{repo_name} {}: setup commit {commit} not in the bundle; left out",
                    spec.version
                );
                continue;
            };
            let env = match builder.build(spec, &repo, None) {
                Ok(e) => e,
                Err(e) => panic!("{e}"),
            };
            built += 1;
            let tree_obj = c.peel_to_commit().unwrap().tree().unwrap();
            let (files, args) = smoke(repo_name);
            let Some(file) = files
                .iter()
                .find(|f| tree_obj.get_path(std::path::Path::new(f)).is_ok())
            else {
                eprintln!("{repo_name} {}: no smoke test file", spec.version);
                continue;
            };
            let tree = Tree {
                repo: repo.clone(),
                commit: commit.clone(),
                files: env.generated_files().unwrap(),
                snapshot: None,
            };
            let job = Job {
                command: format!("{} {args}", env.test_command(&[file.to_string()])),
                env: env.job_env(),
                loopback: env.loopback(),
                limits: Limits {
                    timeout: Duration::from_secs(300),
                    ..Limits::default()
                },
                ..Job::default()
            };
            // What the sandbox itself costs: the tree written from git objects, `true` run, the
            // folder removed.
            let t = std::time::Instant::now();
            let empty = Job {
                command: "true".into(),
                ..Job::default()
            };
            assert!(LocalBackend::default()
                .run(&tree, &empty)
                .unwrap()
                .success());
            eprintln!(
                "SANDBOX {repo_name} {}: tree written, `true` run, folder removed in {:.2}s",
                spec.version,
                t.elapsed().as_secs_f64()
            );
            let out = LocalBackend::default().run(&tree, &job).unwrap();
            let summary = out
                .output
                .lines()
                .rev()
                .find(|l| l.contains(" passed") || l.contains(" failed") || l.contains(" error"))
                .unwrap_or("")
                .to_string();
            eprintln!(
                "ENV {repo_name} {}: build {:.1}s{} ({}); {file}: exit {:?} in {:.1}s: {summary}",
                spec.version,
                env.build_seconds,
                if env.cached { " (cached)" } else { "" },
                env.steps
                    .iter()
                    .map(|(n, s)| format!("{n} {s:.1}s"))
                    .collect::<Vec<_>>()
                    .join(", "),
                out.code,
                out.seconds,
            );
            assert!(
                summary.contains(" passed") && !summary.contains(" failed"),
                "{repo_name} {}: {}",
                spec.version,
                out.output
            );
        }
    }
    assert!(built > 0, "no environment was built");
}
