//! The container backends (`--exec-backend podman`, and `docker` where a daemon runs): the
//! bundled example ranks and classes as with the local backend, with dei's environment mounted
//! into the base image and with it built into an image from its spec (`--exec-env-in-image`,
//! reused on a second run); such a build installs from PyPI, hands its generated files to the
//! trees, and names the step that failed. Hostile jobs are contained in the containers
//! too — a fork bomb meets the pids limit, a socket finds no network, writes outside the tree
//! do not reach the host, 1 GB of output is capped, a command that sleeps forever is killed at
//! the timeout — and no `dei-*` container is left after any of them. Needs podman and the base
//! image `localhost/dei-base:bookworm` (`bash examples/container-base.sh`; for docker, that
//! image loaded into it: `podman save IMAGE | docker load`); skipped without them.

use crate::support::{common, exec};

use common::*;
use dei::exec::container::{containers_named, ContainerBackend, Engine, Image, DEFAULT_BASE_IMAGE};
use dei::exec::env::{spec_for, Overrides};
use dei::exec::image::{ImageBuilder, IMAGE_VENV};
use dei::exec::sandbox::{Backend, Job, LimitHit, Limits, Outcome, Tree};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Held by the tests that run containers from this process: one of them checks that none of
/// this process's `dei-<pid>-*` containers is left, which another's running one would fail.
static IN_PROCESS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The containers.conf podman needs on this kind of machine: `$CONTAINERS_CONF`, or the one
/// `examples/container-base.sh` writes under the user's dei cache folder.
fn containers_conf() -> Option<PathBuf> {
    if let Some(c) = std::env::var_os("CONTAINERS_CONF") {
        return Some(PathBuf::from(c));
    }
    let p = dei::exec::env::default_cache_dir().join("containers/containers.conf");
    p.is_file().then_some(p)
}

/// The conf to run podman with, or `None` (said as a skip) when podman, root or the base
/// image is missing (rootless podman on cgroups v1 drops the limits).
fn podman_ready() -> Option<Option<PathBuf>> {
    let conf = containers_conf();
    let mut cmd = Command::new("podman");
    cmd.args(["image", "exists", DEFAULT_BASE_IMAGE]);
    if let Some(c) = &conf {
        cmd.env("CONTAINERS_CONF", c);
    }
    match cmd.output() {
        Err(_) => {
            skip("podman is not installed (apt-get install -y podman runc)");
            None
        }
        Ok(o) if !o.status.success() => {
            skip(&format!(
                "podman has no image {DEFAULT_BASE_IMAGE} (bash examples/container-base.sh)"
            ));
            None
        }
        // SAFETY: getuid has no preconditions.
        Ok(_) if unsafe { libc::getuid() } != 0 => {
            skip("not root: rootless podman on cgroups v1 ignores the limits");
            None
        }
        Ok(_) => Some(conf),
    }
}

/// Whether docker's daemon answers and has the base image (said as a skip when not).
fn docker_ready() -> bool {
    let o = Command::new("docker")
        .args([
            "image",
            "inspect",
            "--format",
            "{{.Id}}",
            DEFAULT_BASE_IMAGE,
        ])
        .output();
    match o {
        Err(_) => skip("docker is not installed"),
        Ok(o) if o.status.success() => return true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            if err.contains("No such image") || err.contains("no such image") {
                skip(&format!(
                    "docker has no image {DEFAULT_BASE_IMAGE} (podman save {DEFAULT_BASE_IMAGE} | docker load)"
                ));
            } else {
                skip(&format!("docker's daemon does not answer: {}", err.trim()));
            }
        }
    }
    false
}

/// `dei rank --exec` on the example's candidates and the exec fixtures with this backend.
fn rank(backend: &str, conf: &Option<PathBuf>, dir: &Path) -> Value {
    rank_with(backend, conf, dir, &[]).0
}

/// [`rank`] with more flags; also returns dei's stderr.
fn rank_with(backend: &str, conf: &Option<PathBuf>, dir: &Path, more: &[&str]) -> (Value, String) {
    let test_cmd = format!("python {}", path_str(&exec::minitest()));
    let mut flags = vec![
        "--exec",
        "--python",
        "python3",
        "--test-cmd",
        &test_cmd,
        "--exec-timeout",
        "8",
        "--exec-jobs",
        "2",
        "--exec-backend",
        backend,
        "--json",
        "-",
    ];
    flags.extend(more);
    let args = example_issue_args(
        &[
            "rank",
            "examples/candidates",
            "tests/fixtures/exec/candidates",
        ],
        &flags,
    );
    let (cache, tmp) = (dir.join("cache"), dir.join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = dei_command();
    cmd.args(&args)
        .env("DEI_CACHE_DIR", &cache)
        .env("TMPDIR", &tmp);
    if let Some(c) = conf {
        cmd.env("CONTAINERS_CONF", c);
    }
    let out = cmd.output().expect("dei runs");
    assert!(out.status.success(), "{backend}: {}", stderr(&out));
    (
        serde_json::from_str(&stdout(&out)).expect("JSON"),
        stderr(&out),
    )
}

/// The ranking (agent, rank, score, what the reproduction did) of a `dei rank --json` answer.
fn ranking(v: &Value) -> Vec<(String, Value, Value, Value)> {
    v["ranked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["agent"].as_str().unwrap().to_string(),
                r["rank"].clone(),
                r["score"].clone(),
                r["behaviour"]["repro"].clone(),
            )
        })
        .collect()
}

/// The behaviour classes as a partition of the agents (a class's number is only a label).
fn classes(v: &Value) -> std::collections::BTreeSet<Vec<String>> {
    let mut by: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for r in v["ranked"].as_array().unwrap() {
        if let Some(c) = r["behaviour"]["class"].as_u64() {
            by.entry(c)
                .or_default()
                .push(r["agent"].as_str().unwrap().to_string());
        }
    }
    by.into_values().collect()
}

#[test]
fn the_example_ranks_and_classes_the_same_in_containers_as_locally() {
    let Some((engines, dir, local)) = engines_beside_local() else {
        return;
    };
    for (engine, conf) in engines {
        let bin = engine.binary();
        let boxed = rank(bin, &conf, &dir.path().join(bin));
        assert_eq!(ranking(&local), ranking(&boxed), "{bin}");
        assert_eq!(classes(&local), classes(&boxed), "{bin}");
        assert_eq!(local["exec"]["classes"], boxed["exec"]["classes"], "{bin}");
        assert!(
            boxed["exec"]["runs"].as_u64().unwrap() > 0,
            "{bin}: {boxed}"
        );
        assert_eq!(boxed["exec"]["error"], Value::Null, "{bin}");
        // The escape fixture's write went nowhere on the host.
        assert!(!Path::new("/tmp/dei-example-escape.txt").exists());
        // None of dei's containers is left (this process's own are the other tests').
        let mine = format!("dei-{}-", std::process::id());
        let left: Vec<String> = containers_named(bin, "dei-")
            .into_iter()
            .filter(|n| !n.starts_with(&mine))
            .collect();
        assert!(left.is_empty(), "{bin}: {left:?}");
    }
}

/// An engine that answers, with the containers.conf podman is given.
type Ready = (Engine, Option<PathBuf>);

/// The engines to try, a scratch folder, and the example ranked with the local backend in
/// it; `None` (said as a skip) when no engine or no python3 with venv is here.
fn engines_beside_local() -> Option<(Vec<Ready>, tempfile::TempDir, Value)> {
    let engines = engines();
    if engines.is_empty() {
        return None;
    }
    if !exec::python3_with_venv() {
        skip("python3 with the venv module is not on PATH");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let local = rank("local", &None, &dir.path().join("local"));
    Some((engines, dir, local))
}

/// The engines that can be tried here: podman when it is ready, docker when its daemon
/// answers and has the base image (each missing one said as a skip).
fn engines() -> Vec<Ready> {
    let mut engines = Vec::new();
    if let Some(conf) = podman_ready() {
        engines.push((Engine::Podman, conf));
    }
    if docker_ready() {
        engines.push((Engine::Docker, None));
    }
    engines
}

#[test]
fn the_example_ranks_and_classes_the_same_in_an_image_built_from_its_spec() {
    let Some((engines, dir, local)) = engines_beside_local() else {
        return;
    };
    for (engine, conf) in engines {
        let bin = engine.binary();
        let at = dir.path().join(bin);
        // The base image's Debian python3 builds the venv: no host folder is mounted.
        let (built, err) = rank_with(bin, &conf, &at, &["--exec-env-in-image"]);
        assert!(
            err.contains("into the image localhost/dei-env:"),
            "{bin}: {err}"
        );
        assert_eq!(ranking(&local), ranking(&built), "{bin}");
        assert_eq!(classes(&local), classes(&built), "{bin}");
        assert_eq!(local["exec"]["classes"], built["exec"]["classes"], "{bin}");
        assert_eq!(built["exec"]["error"], Value::Null, "{bin}");
        assert!(
            built["exec"]["runs"].as_u64().unwrap() > 0,
            "{bin}: {built}"
        );
        // Again: the image is reused, nothing is built.
        let (again, err) = rank_with(bin, &conf, &at, &["--exec-env-in-image"]);
        assert!(!err.contains("exec: building"), "{bin}: {err}");
        assert_eq!(ranking(&local), ranking(&again), "{bin}");
    }
}

#[test]
fn building_into_an_image_needs_a_container_engine_and_no_image_used_as_it_is() {
    let out = dei_command()
        .args(example_rank_args(&[
            "--exec",
            "--test-cmd",
            "true",
            "--exec-env-in-image",
        ]))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("--exec-env-in-image builds images: give --exec-backend podman or docker"),
        "{}",
        stderr(&out)
    );
    let out = dei_command()
        .args(example_rank_args(&[
            "--exec",
            "--exec-backend",
            "podman",
            "--exec-image",
            "some-image",
            "--exec-env-in-image",
        ]))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

/// Whether this machine's pip reaches PyPI (a build's `pip install` needs it).
fn pypi_reachable() -> bool {
    let d = tempfile::tempdir().unwrap();
    Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--timeout",
            "15",
            "--retries",
            "0",
            "-d",
        ])
        .arg(d.path())
        .arg("iniconfig==2.0.0")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn an_image_build_installs_hands_over_its_generated_files_is_reused_and_names_a_failed_step() {
    let _alone = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    let engines = engines();
    let pypi = !engines.is_empty() && pypi_reachable();
    if !engines.is_empty() && !pypi {
        skip("PyPI is not reachable from this machine: the build installs nothing from it");
    }
    for (engine, conf) in engines {
        if let Some(c) = &conf {
            std::env::set_var("CONTAINERS_CONF", c);
        }
        let bin = engine.binary();
        let (repo, commit) = tiny_repo();
        let cache = tempfile::tempdir().unwrap();
        // The install step writes a module git does not hold, which every tree then gets.
        let mut setup = "echo 'VALUE = 66' > generated_mod.py".to_string();
        let mut check =
            "python -c 'import sys, generated_mod; print(sys.prefix, generated_mod.VALUE)'"
                .to_string();
        if pypi {
            setup.push_str(" && python -m pip install -q iniconfig==2.0.0");
            check.push_str(" && python -c 'import iniconfig; print(iniconfig.__name__)'");
        }
        let overrides = Overrides {
            python: Some("python3".into()),
            setup: Some(setup),
            test_cmd: Some("python -c pass".into()),
            loopback: false,
        };
        let mut spec = spec_for("example/tiny", "0.1", &overrides).unwrap();
        spec.generated = vec!["generated_mod.py".into()];
        let images = ImageBuilder::new(engine, DEFAULT_BASE_IMAGE, cache.path());
        let t = Instant::now();
        let env = images
            .build(&spec, repo.path(), Some(&commit))
            .unwrap_or_else(|e| panic!("{bin}: {e}"));
        eprintln!("{bin}: image built in {:.1} s", t.elapsed().as_secs_f64());
        assert!(!env.cached);
        let tag = env.image.clone().expect("an image");
        let name = tag.rsplit(':').next().unwrap();
        assert!(
            cache
                .path()
                .join("images")
                .join(format!("{name}.lock"))
                .is_file(),
            "{bin}: one lock per image, named in full"
        );
        assert_eq!(env.venv, Path::new(IMAGE_VENV));
        let generated = env.generated_files().unwrap();
        assert_eq!(generated.len(), 1, "{bin}: {generated:?}");
        assert_eq!(generated[0].path, "generated_mod.py");
        assert_eq!(generated[0].contents.as_deref(), Some(&b"VALUE = 66\n"[..]));

        // A run in the image: its venv, the generated module in the tree.
        let backend = ContainerBackend::new(engine, Image::HostEnv(DEFAULT_BASE_IMAGE.into()));
        let tree = Tree {
            repo: repo.path().to_path_buf(),
            commit: commit.clone(),
            files: generated,
            snapshot: None,
        };
        let job = Job {
            command: check,
            env: env.job_env(),
            image: env.image.clone(),
            limits: Limits {
                timeout: Duration::from_secs(60),
                memory_bytes: 512 << 20,
                processes: 64,
                ..Limits::default()
            },
            ..Job::default()
        };
        let o = backend.run(&tree, &job).expect("the container runs");
        assert!(o.success(), "{bin}: {o:?}");
        assert!(
            o.output.contains(&format!("{IMAGE_VENV} 66")),
            "{bin}: {o:?}"
        );
        if pypi {
            assert!(o.output.contains("iniconfig"), "{bin}: {o:?}");
        }

        // Built once: the second build finds it.
        let again = images.build(&spec, repo.path(), Some(&commit)).unwrap();
        assert!(again.cached, "{bin}");
        assert_eq!(again.image.as_deref(), Some(tag.as_str()));

        // A requirement pip cannot install: the step, its Containerfile line and pip's words.
        let mut bad = spec.clone();
        bad.requirements = vec!["./dei-no-such-folder".into()];
        let e = images.build(&bad, repo.path(), Some(&commit)).unwrap_err();
        assert_eq!(e.step, "requirements", "{bin}: {e}");
        assert!(e.detail.contains("Containerfile line"), "{bin}: {e}");
        assert!(e.detail.contains("pip install"), "{bin}: {e}");
        assert!(e.tail.contains("dei-no-such-folder"), "{bin}: {e}");

        // A base image the engine does not have.
        let none = ImageBuilder::new(engine, "localhost/dei-no-such-base:66", cache.path());
        let e = none.build(&spec, repo.path(), Some(&commit)).unwrap_err();
        assert_eq!(e.step, "base image", "{bin}: {e}");
        assert!(e.detail.contains("not found"), "{bin}: {e}");

        // The images of this test's one-off repository go.
        let _ = Command::new(bin).args(["rmi", "-f", &tag]).output();
    }
}

/// A one-commit repository in a temporary folder.
fn tiny_repo() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("hello.py"), "print('hello')\n").unwrap();
    let git = |args: &[&str]| crate::support::scale_util::git(d.path(), args);
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    let head = git(&["rev-parse", "HEAD"]);
    (d, head)
}

#[test]
fn hostile_jobs_are_contained_in_the_container_and_leave_none_behind() {
    let _alone = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
    for (engine, conf) in engines() {
        if let Some(c) = &conf {
            // The backend reads it from the environment (this test binary's own, set once here).
            std::env::set_var("CONTAINERS_CONF", c);
        }
        contain_hostile_jobs(engine);
    }
}

/// The hostile jobs of the test above, in `engine`'s containers.
fn contain_hostile_jobs(engine: Engine) {
    let bin = engine.binary();
    let (repo, commit) = tiny_repo();
    let root = tempfile::tempdir().unwrap();
    let mut backend = ContainerBackend::new(engine, Image::HostEnv(DEFAULT_BASE_IMAGE.into()));
    backend.temp_root = Some(root.path().to_path_buf());
    let tree = Tree {
        repo: repo.path().to_path_buf(),
        commit,
        files: Vec::new(),
        snapshot: None,
    };
    let mine = format!("dei-{}-", std::process::id());
    let run = |command: &str, timeout: u64| -> Outcome {
        let job = Job {
            command: command.into(),
            limits: Limits {
                timeout: Duration::from_secs(timeout),
                memory_bytes: 512 << 20,
                processes: 64,
                output_bytes: 64 << 10,
                ..Limits::default()
            },
            ..Job::default()
        };
        let o = backend.run(&tree, &job).expect("the container runs");
        assert!(
            containers_named(bin, &mine).is_empty(),
            "{bin}: a container is left after `{command}`"
        );
        assert_eq!(
            std::fs::read_dir(root.path()).unwrap().count(),
            0,
            "the sandbox folder is removed"
        );
        o
    };

    // The tree is there, and Python runs.
    let o = run("python3 hello.py", 60);
    assert!(o.success() && o.output.contains("hello"), "{o:?}");

    // A fork bomb meets the pids limit, and the timeout ends what is left of it.
    let t = Instant::now();
    let o = run("b() { b | b & }; b; sleep 5; echo survived", 20);
    let failed_fork = o.output.contains("fork") || o.output.contains("Resource temporarily");
    assert!(
        failed_fork || o.limit_hit == Some(LimitHit::Processes),
        "{o:?}"
    );
    assert!(t.elapsed() < Duration::from_secs(60));

    // No network: a connect fails.
    let o = run(
        "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), timeout=5)\"",
        60,
    );
    assert!(!o.success(), "{o:?}");
    assert!(
        o.output.contains("unreachable") || o.output.contains("Errno"),
        "{o:?}"
    );

    // Writes outside the tree: the root is read-only, /tmp too (as locally).
    let outside = tempfile::tempdir().unwrap();
    let host_file = outside.path().join("escaped.txt");
    let o = run(
        &format!(
            "echo x > /usr/dei-escape; echo $? ; mkdir -p {0} && echo x > {0}/escaped.txt; echo done",
            outside.path().display()
        ),
        60,
    );
    assert!(o.output.contains("Read-only file system"), "{o:?}");
    assert!(o.output.contains("Permission denied"), "{o:?}");
    assert!(!host_file.exists(), "the write reached the host");
    assert!(!Path::new("/usr/dei-escape").exists());

    // 1 GB of output: counted, the head and tail kept.
    let o = run("head -c 1000000000 /dev/zero | tr '\\0' x", 300);
    assert!(o.truncated, "{:?}", &o.output[..200.min(o.output.len())]);
    assert_eq!(o.output_bytes, 1_000_000_000);
    assert!(o.output.len() < 70 << 10);

    // Sleeping forever: killed at the timeout, and the container removed.
    let t = Instant::now();
    let o = run("sleep 100000", 3);
    assert!(o.timed_out, "{o:?}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}
