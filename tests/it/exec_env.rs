//! Environments: built once and cached, run in the sandbox, a failing step named. No PyPI:
//! the specs here have no requirements, and the machine's python3 is the interpreter.

use crate::support::common;

use dei::exec::env::{EnvBuilder, EnvSpec};
use dei::exec::sandbox::{Backend, Job, Limits, LocalBackend, Tree};
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

const BASE: &str = "f63f25d43ac69806ecd91a0971c38da78fc72775";

fn python3() -> bool {
    Command::new("python3")
        .args(["-c", "import venv"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A temporary cache folder for a test that builds environments, or `None` (said in the test
/// output) when python3 cannot make a venv.
fn cache_or_skip() -> Option<tempfile::TempDir> {
    if !python3() {
        common::skip("python3 with venv is not available");
        return None;
    }
    Some(tempfile::tempdir().unwrap())
}

fn spec(name: &str) -> EnvSpec {
    EnvSpec {
        repo: format!("example/{name}"),
        version: "0.1".into(),
        python: "python3".into(),
        requirements: vec![],
        cutoff: None,
        exempt_pins: false,
        pre_install: vec![],
        install: None,
        test_cmd: "python -c \"import sys; sys.path[:0] = ['tests']; import test_words as t; [getattr(t, n)() for n in dir(t) if n.startswith('test_')]; print('PREFIX', sys.prefix)\"".into(),
        env: BTreeMap::new(),
        pythonpath: vec![".".into()],
        generated: vec![],
        setup_commit: Some(BASE.into()),
        verified_build_seconds: None,
        notes: vec![],
        extras: vec![],
        loopback: false,
        service: None,
    }
}

fn run_tests(
    env: &dei::exec::env::Env,
    extra: Vec<dei::exec::sandbox::TreeFile>,
) -> dei::exec::sandbox::Outcome {
    let tree = Tree {
        repo: common::example_repo(),
        commit: BASE.into(),
        files: extra,
        snapshot: None,
    };
    let job = Job {
        command: env.test_command(&[]),
        env: env.job_env(),
        loopback: env.loopback(),
        limits: Limits {
            timeout: Duration::from_secs(60),
            ..Limits::default()
        },
        ..Job::default()
    };
    LocalBackend::default().run(&tree, &job).unwrap()
}

#[test]
fn an_environment_without_requirements_builds_once_and_runs_the_tests() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let b = EnvBuilder::new(cache.path());
    let repo = common::example_repo();
    let s = spec("plain");
    let env = b.build(&s, &repo, None).unwrap();
    assert!(!env.cached && env.venv.join("bin/python").exists());
    assert!(
        env.steps.iter().any(|(n, _)| n == "venv"),
        "{:?}",
        env.steps
    );
    // No work tree is needed when nothing is installed.
    assert!(!env.dir.join("src").exists());
    let again = b.build(&s, &repo, None).unwrap();
    assert!(again.cached && again.dir == env.dir && again.build_seconds == 0.0);

    let out = run_tests(&env, vec![]);
    assert!(out.success(), "{out:?}");
    let prefix = out
        .output
        .lines()
        .find_map(|l| l.strip_prefix("PREFIX "))
        .unwrap_or_else(|| panic!("{}", out.output));
    assert_eq!(
        std::path::Path::new(prefix).canonicalize().unwrap(),
        env.venv.canonicalize().unwrap(),
        "the tests ran with the environment's interpreter"
    );
}

/// The tests of a spec with a service reach it on 127.0.0.1, inside the sandbox's own network
/// namespace; without one (and without `loopback`), nothing answers there.
#[test]
fn a_service_starts_beside_the_tests_and_only_they_reach_it() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let b = EnvBuilder::new(cache.path());
    let repo = common::example_repo();
    let fetch = "python -c \"import urllib.request as u; \
                 print('GOT', u.urlopen('http://127.0.0.1:8766/README.md', timeout=5).status)\"";
    let mut s = spec("served");
    s.service = Some(dei::exec::env::Service {
        start: "python -m http.server 8766 --bind 127.0.0.1".into(),
        port: 8766,
    });
    s.test_cmd = fetch.into();
    let env = b.build(&s, &repo, None).unwrap();
    assert!(env.loopback());
    let out = run_tests(&env, vec![]);
    if !out.isolation.network_off {
        common::skip("this OS refuses a network namespace, so the loopback is the machine's own");
        return;
    }
    assert!(out.success() && out.output.contains("GOT 200"), "{out:?}");
    // With the loopback up, addresses outside the namespace stay out of reach.
    let outside = "python -c \"import socket; socket.create_connection(('1.1.1.1', 80), 3)\"";
    s.test_cmd = outside.into();
    let env = b.build(&s, &repo, None).unwrap();
    let out = run_tests(&env, vec![]);
    assert!(!out.success(), "{out:?}");
    assert!(out.output.contains("unreachable"), "{}", out.output);

    // No service, no loopback: nothing answers on 127.0.0.1.
    let mut plain = spec("unserved");
    plain.test_cmd = fetch.into();
    let env = b.build(&plain, &repo, None).unwrap();
    assert!(!env.loopback());
    let out = run_tests(&env, vec![]);
    assert!(!out.success() && !out.output.contains("GOT"), "{out:?}");
}

#[test]
fn two_builders_at_once_build_one_environment() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let repo = common::example_repo();
    let s = spec("race");
    let results: Vec<_> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    EnvBuilder::new(cache.path())
                        .build(&s, &repo, None)
                        .unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|e| e.cached).count(), 1);
    assert_eq!(results[0].dir, results[1].dir);
}

#[test]
fn an_install_from_a_work_tree_and_its_generated_files_reach_the_sandbox() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let mut s = spec("installed");
    // What setuptools_scm needs (a .git) is there, and the file it writes is carried over.
    s.pre_install = vec!["test -d .git".into()];
    s.install = Some(
        "python -c \"open('textkit/_version.py', 'w').write('version = \\'9.9\\'\\n')\"".into(),
    );
    s.generated = vec!["textkit/_version.py".into()];
    s.test_cmd = "python -c \"import textkit._version as v; print('VERSION', v.version)\"".into();
    let env = EnvBuilder::new(cache.path())
        .build(&s, &common::example_repo(), None)
        .unwrap();
    let files = env.generated_files().unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let out = run_tests(&env, files);
    assert!(out.output.contains("VERSION 9.9"), "{out:?}");
    let without = run_tests(&env, vec![]);
    assert!(
        !without.success(),
        "the tree alone lacks the generated file: {without:?}"
    );
}

#[test]
fn a_repository_named_by_a_relative_path_is_checked_out_all_the_same() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let repo = common::example_repo();
    let here = std::env::current_dir().unwrap();
    let Ok(relative) = repo.strip_prefix(&here) else {
        return common::skip("the example repository is not below the working folder");
    };
    let mut s = spec("relative");
    s.pre_install = vec!["test -f textkit/words.py".into()];
    s.install = Some("true".into());
    let env = EnvBuilder::new(cache.path()).build(&s, relative, None);
    assert!(env.is_ok(), "{:?}", env.err());
}

#[test]
fn a_failing_build_step_is_a_clear_error_naming_it() {
    let Some(cache) = cache_or_skip() else {
        return;
    };
    let mut s = spec("broken");
    s.pre_install = vec![
        "true".into(),
        "echo compiling the extension; echo 'error: no compiler' >&2; exit 7".into(),
    ];
    s.install = Some("python -m pip install -e .".into());
    let err = EnvBuilder::new(cache.path())
        .build(&s, &common::example_repo(), None)
        .unwrap_err();
    assert_eq!(err.step, "pre_install[1]");
    let text = err.to_string();
    assert!(text.contains("example/broken 0.1"), "{text}");
    assert!(text.contains("exited with status 7"), "{text}");
    assert!(err.tail.contains("error: no compiler"), "{text}");
    // Nothing half-built is left to be taken for a finished environment.
    let left: Vec<_> = std::fs::read_dir(cache.path().join("envs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let mut s = spec("nopython");
    s.python = "2.99".into();
    let err = EnvBuilder::new(cache.path())
        .build(&s, &common::example_repo(), None)
        .unwrap_err();
    assert_eq!(err.step, "find python");
    assert!(err.to_string().contains("--python"), "{err}");
}

/// The shipped specs are what `docs/tools/make_envs.py` makes of the environment facts in
/// `../shared/data/swebench_envs`: a hand edit of `src/exec/envs.json`, or a rule of the script
/// that never reached the file (sympy's cache, the sphinx posargs), fails here.
#[test]
fn the_shipped_specs_are_what_make_envs_makes_of_the_shared_facts() {
    let Some(data) = common::shared_data() else {
        common::skip("no ../shared/data (or DEI_DATA) with swebench_envs to make the specs from");
        return;
    };
    let facts = data.join("swebench_envs");
    if !facts.join("specs.json").exists() || !python3() {
        common::skip("no swebench_envs/specs.json in the data folder, or no python3");
        return;
    }
    let out = Command::new("python3")
        .arg(common::root().join("docs/tools/make_envs.py"))
        .arg(&facts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let shipped = std::fs::read(common::root().join("src/exec/envs.json")).unwrap();
    assert!(
        out.stdout == shipped,
        "src/exec/envs.json differs from what docs/tools/make_envs.py makes; run \
         python3 docs/tools/make_envs.py ../shared/data/swebench_envs > src/exec/envs.json"
    );
}
