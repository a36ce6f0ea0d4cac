//! Python environments per (repository, version): a spec says what the repository's tests need
//! (interpreter, pinned requirements, install step, test command); [`EnvBuilder::build`] makes
//! it once — a venv, the requirements, the repository installed from a `git clone --shared`
//! work tree (so setuptools_scm finds its `.git`) — and caches it under a folder named by the
//! spec's hash, with a lock so two processes never build the same one.
//!
//! Specs for the SWE-bench Lite pairs ship in `envs.json` (made by docs/tools/make_envs.py from
//! the harness facts and the fixes a real build needed). Any other repository gets one from
//! [`Overrides`] (`--python`, `--setup`, `--test-cmd`).
//!
//! The tests run over a sandbox tree, not the build's work tree: the venv's `bin/` goes first on
//! `PATH`, the tree's import roots ([`EnvSpec::pythonpath`]) go on `PYTHONPATH` (so the
//! candidate's code shadows the installed copy), and files the build generated that git does
//! not hold ([`EnvSpec::generated`], e.g. pytest's `_version.py`) are copied into the tree.

use super::sandbox::{Backend, Job, Limits, LocalBackend, Outcome, TreeFile};
use crate::model::repo::shell_quote;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a repository's tests need at one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvSpec {
    /// `owner/name`.
    pub repo: String,
    /// The task's `version` field (`""` for a user's spec).
    #[serde(default)]
    pub version: String,
    /// `3.9` (found on `PATH` as `python3.9` or in pyenv's folder), a command name
    /// (`python3`) or a path.
    pub python: String,
    /// pip requirement lines.
    #[serde(default)]
    pub requirements: Vec<String>,
    /// Resolve everything installed after the exact pins as of this time (pip ≥ 26 reads
    /// `PIP_UPLOADED_PRIOR_TO`, uv `UV_EXCLUDE_NEWER`), e.g. `2023-06-01T00:00:00Z`.
    #[serde(default)]
    pub cutoff: Option<String>,
    /// With a cutoff: install the exact pins (`==`) without it (some post-date it).
    #[serde(default)]
    pub exempt_pins: bool,
    /// Shell lines run in the work tree before `install`.
    #[serde(default)]
    pub pre_install: Vec<String>,
    /// Installs the repository from its work tree (`python -m pip install -e .`); none: the
    /// tests import the tree through `PYTHONPATH` only.
    #[serde(default)]
    pub install: Option<String>,
    /// Runs tests; test files are appended.
    pub test_cmd: String,
    /// Extra environment variables for the build and the tests.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Import roots inside the tree, put on `PYTHONPATH`.
    #[serde(default = "dot")]
    pub pythonpath: Vec<String>,
    /// Files of the built work tree to copy into every sandbox tree: `*.ext` for every untracked
    /// file with that extension (outside `build/`), or exact paths — untracked, or tracked but
    /// written by the build (astropy's `eopc04.1962-now`, whose blob some mirrors lack).
    #[serde(default)]
    pub generated: Vec<String>,
    /// The commit the environment is built at (the task's `environment_setup_commit`).
    #[serde(default)]
    pub setup_commit: Option<String>,
    /// What a verified build took (seconds), for information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_build_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Packages installed last, for an issue's own code rather than the repository's tests
    /// (its reproduction stopped on `import numpy`): PyPI names from [`extra_for`]. Left out of
    /// the spec's JSON when empty, so an environment without them keeps its hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extras: Vec<String>,
    /// The tests talk to a server on 127.0.0.1 (pytest-httpbin's fixture serves from within
    /// the test process): every run in this environment (the tests, the code) gets the
    /// loopback interface of its own network namespace up. Nothing beyond the namespace becomes
    /// reachable. Left out of the JSON when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loopback: bool,
    /// A server started beside every test command, which the tests reach on 127.0.0.1 (the
    /// httpbin that requests' tests call, through `HTTPBIN_URL` in `env`); implies `loopback`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<Service>,
}

/// A server started in the background in the sandbox before each test command, and stopped
/// with the run (the sandbox kills whatever the command left behind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// The shell command that starts it, with the environment's venv first on `PATH`; its
    /// output is discarded.
    pub start: String,
    /// The port it listens on at 127.0.0.1: the tests start once it accepts a connection, or
    /// after 10 s (then the tests that need it fail at the base commit too, and are not kept).
    pub port: u16,
}

impl Service {
    /// `command`, run once the service accepts connections.
    fn wrap(&self, command: &str) -> String {
        // Waits with the venv's Python (no `nc` or bash's /dev/tcp needed), at most 10 s.
        format!(
            "({start}) >/dev/null 2>&1 &\n\
             python -c 'import socket, time\n\
             for _ in range(200):\n    \
             try:\n        \
             socket.create_connection((\"127.0.0.1\", {port}), 0.2).close()\n        \
             break\n    \
             except OSError:\n        \
             time.sleep(0.05)'\n\
             {command}",
            start = self.start,
            port = self.port,
        )
    }
}

/// A package an issue's code may import that a repository's environment need not have, and
/// what PyPI calls it. Only these are ever installed for an issue (never a name read from its
/// text): well-known distributions, so a typo or a look-alike name in an issue installs nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extra {
    /// The top-level module an import names (`numpy`, `PIL`).
    pub module: &'static str,
    /// The distribution on PyPI (`numpy`, `Pillow`).
    pub dist: &'static str,
    /// Compiled: taken only as a wheel (no source build), so a cutoff that predates the
    /// interpreter's wheels fails at once and the build tries again without it.
    pub binary: bool,
}

pub(crate) const EXTRAS: &[Extra] = &[
    extra("numpy", "numpy", true),
    extra("scipy", "scipy", true),
    extra("pandas", "pandas", true),
    extra("matplotlib", "matplotlib", true),
    extra("PIL", "Pillow", true),
    extra("lxml", "lxml", true),
    extra("Cython", "Cython", true),
    extra("antlr4", "antlr4-python3-runtime", false),
    extra("yaml", "PyYAML", true),
    extra("networkx", "networkx", false),
];

const fn extra(module: &'static str, dist: &'static str, binary: bool) -> Extra {
    Extra {
        module,
        dist,
        binary,
    }
}

/// The arguments to `pip install` for the distributions `extras`, shell-quoted: the compiled
/// ones of [`EXTRAS`] taken only as wheels.
pub(crate) fn extras_pip_args(extras: &[String]) -> String {
    let binary: Vec<&str> = EXTRAS
        .iter()
        .filter(|e| e.binary && extras.iter().any(|d| d == e.dist))
        .map(|e| e.dist)
        .collect();
    let mut args: Vec<String> = Vec::new();
    if !binary.is_empty() {
        args.extend(["--only-binary".to_string(), binary.join(",")]);
    }
    args.extend(extras.iter().map(|d| shell_quote(d)));
    args.join(" ")
}

/// The known package for a top-level module name, if it is one of [`EXTRAS`].
pub fn extra_for(module: &str) -> Option<Extra> {
    EXTRAS.iter().copied().find(|e| e.module == module)
}

/// The known package whose module a message names as a word (sympy's "LaTeX parsing requires
/// the antlr4 python package, provided by pip …").
pub fn extra_named_in(message: &str) -> Option<Extra> {
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find_map(extra_for)
}

fn dot() -> Vec<String> {
    vec![".".into()]
}

/// The user's overrides for a repository (`--python`, `--setup`, `--test-cmd`,
/// `--test-loopback`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub python: Option<String>,
    /// Replaces the install step (and the pre-install lines).
    pub setup: Option<String>,
    pub test_cmd: Option<String>,
    /// The tests start a server on 127.0.0.1 and talk to it ([`EnvSpec::loopback`]).
    pub loopback: bool,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        self.python.is_none() && self.setup.is_none() && self.test_cmd.is_none() && !self.loopback
    }
}

#[derive(Deserialize)]
struct Shipped {
    specs: Vec<EnvSpec>,
}

/// The specs shipped with dei (SWE-bench Lite pairs).
pub fn shipped_specs() -> &'static [EnvSpec] {
    static SPECS: std::sync::OnceLock<Vec<EnvSpec>> = std::sync::OnceLock::new();
    SPECS.get_or_init(|| {
        serde_json::from_str::<Shipped>(include_str!("envs.json"))
            .expect("src/exec/envs.json is valid (checked by a test)")
            .specs
    })
}

/// The spec for `repo` at `version`: the shipped one with `overrides` applied, or one made
/// from the overrides alone (which then need at least a test command).
pub fn spec_for(repo: &str, version: &str, overrides: &Overrides) -> anyhow::Result<EnvSpec> {
    let shipped = shipped_specs()
        .iter()
        .find(|s| s.repo.eq_ignore_ascii_case(repo) && s.version == version)
        .cloned();
    let mut spec = match shipped {
        Some(s) => s,
        None => {
            let Some(test_cmd) = &overrides.test_cmd else {
                let known: Vec<&str> = shipped_specs()
                    .iter()
                    .filter(|s| s.repo.eq_ignore_ascii_case(repo))
                    .map(|s| s.version.as_str())
                    .collect();
                // An issue from --issue-file names no repository nor version.
                let what = match (repo.is_empty(), version.is_empty()) {
                    (true, _) => "the local repository (an issue file names none)".to_string(),
                    (false, true) => format!("{repo} (the task names no version)"),
                    (false, false) => format!("{repo} {version}"),
                };
                anyhow::bail!(
                    "no environment for {what}: {}; give --python, --setup and --test-cmd for it",
                    if repo.is_empty() {
                        "dei ships specs only for SWE-bench tasks".to_string()
                    } else if known.is_empty() {
                        "dei ships none for this repository".to_string()
                    } else {
                        format!("dei ships versions {}", known.join(", "))
                    }
                );
            };
            EnvSpec {
                repo: repo.to_string(),
                version: version.to_string(),
                python: "python3".into(),
                requirements: vec![],
                cutoff: None,
                exempt_pins: false,
                pre_install: vec![],
                install: None,
                test_cmd: test_cmd.clone(),
                env: BTreeMap::new(),
                pythonpath: dot(),
                generated: vec![],
                setup_commit: None,
                verified_build_seconds: None,
                notes: vec![],
                extras: vec![],
                loopback: false,
                service: None,
            }
        }
    };
    if let Some(p) = &overrides.python {
        spec.python = p.clone();
    }
    if let Some(s) = &overrides.setup {
        spec.install = Some(s.clone());
        spec.pre_install.clear();
    }
    if let Some(t) = &overrides.test_cmd {
        spec.test_cmd = t.clone();
    }
    spec.loopback |= overrides.loopback;
    Ok(spec)
}

impl EnvSpec {
    /// The hash naming the cached environment: everything that changes what gets built.
    pub fn hash(&self, commit: &str) -> String {
        let mut s = self.clone();
        s.notes.clear();
        s.verified_build_seconds = None;
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(&s).unwrap_or_default());
        h.update(commit.as_bytes());
        h.update(b"dei-env-v1");
        if self.cutoff.is_some() {
            // A cutoff binds the install steps too, the repository's own dependencies
            // included: the tag keeps such builds apart from any built with a cutoff that
            // bound only the spec's pins.
            h.update(b"cutoff-binds-install");
        }
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// `repo-version` with every character but ASCII letters, digits and `.` as `_`: the
    /// start of the environment's folder name (and of its image's tag).
    pub fn slug(&self) -> String {
        format!("{}-{}", self.repo, self.version)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    /// Whether the build checks the repository out at its commit (to install it, or to
    /// generate files from it); otherwise the commit only keys the environment.
    pub fn needs_work_tree(&self) -> bool {
        self.install.is_some() || !self.pre_install.is_empty() || !self.generated.is_empty()
    }

    /// The failure of one step of building this spec.
    pub(crate) fn step_error(&self, step: &str, detail: String, tail: String) -> EnvError {
        EnvError {
            repo: self.repo.clone(),
            version: self.version.clone(),
            step: step.to_string(),
            detail,
            tail,
        }
    }

    /// The commit an environment of this spec is built at: `commit`, else the spec's setup
    /// commit; a spec that installs the repository must name one.
    pub(crate) fn build_commit(&self, commit: Option<&str>) -> Result<String, EnvError> {
        let commit = commit
            .map(str::to_string)
            .or_else(|| self.setup_commit.clone())
            .unwrap_or_default();
        if self.needs_work_tree() && commit.is_empty() {
            return Err(self.step_error(
                "checkout",
                "the spec installs the repository but names no commit".into(),
                String::new(),
            ));
        }
        Ok(commit)
    }

    /// The cache folder could not be used: `what` (create, lock, write) failed on `path`.
    pub(crate) fn cache_error(&self, what: &str, path: &Path, e: std::io::Error) -> EnvError {
        self.step_error(
            "cache",
            format!("cannot {what} {}: {e}", path.display()),
            String::new(),
        )
    }

    /// Hold the lock of the environment or image `name` in the cache folder `folder` (made
    /// when missing), so that one process builds it while the others wait. The lock file is
    /// named in full: a version's `.` is no extension.
    pub(crate) fn lock_build(&self, folder: &Path, name: &str) -> Result<std::fs::File, EnvError> {
        let cache_err = |what, p, e| self.cache_error(what, p, e);
        std::fs::create_dir_all(folder).map_err(|e| cache_err("create", folder, e))?;
        let path = folder.join(format!("{name}.lock"));
        let lock = std::fs::File::create(&path).map_err(|e| cache_err("create", &path, e))?;
        fs2::FileExt::lock_exclusive(&lock).map_err(|e| cache_err("lock", &path, e))?;
        Ok(lock)
    }
}

/// A build step that failed: the repository, the step and the end of its output.
#[derive(Debug, thiserror::Error)]
#[error("environment for {repo} {version}: step `{step}` failed: {detail}\n--- output (end) ---\n{tail}")]
pub struct EnvError {
    pub repo: String,
    pub version: String,
    pub step: String,
    pub detail: String,
    pub tail: String,
}

/// A built environment.
#[derive(Debug, Clone)]
pub struct Env {
    pub spec: EnvSpec,
    /// The cache folder of this environment.
    pub dir: PathBuf,
    /// The venv.
    pub venv: PathBuf,
    /// The container image the environment was built into ([`crate::exec::image`]): the
    /// venv is then that image's path, and the jobs run in it. `None`: a venv on this machine.
    pub image: Option<String>,
    /// Seconds the build took (0 when it came from the cache).
    pub build_seconds: f64,
    /// Seconds per step of the build.
    pub steps: Vec<(String, f64)>,
    pub cached: bool,
}

impl Env {
    /// Whether runs in this environment get their namespace's loopback up ([`EnvSpec::loopback`]).
    pub fn loopback(&self) -> bool {
        self.spec.loopback || self.spec.service.is_some()
    }

    /// `command` preceded by the start of the spec's service, when it has one.
    fn with_service(&self, command: String) -> String {
        match &self.spec.service {
            Some(s) => s.wrap(&command),
            None => command,
        }
    }

    /// Environment variables for a job over a sandbox tree.
    pub fn job_env(&self) -> Vec<(String, String)> {
        let bin = self.venv.join("bin");
        // In an image the host's PATH means nothing: the venv, then the usual folders.
        let rest = match (&self.image, std::env::var_os("PATH")) {
            (Some(_), _) => Some(super::image::IMAGE_PATH.into()),
            (None, p) => p.map(|p| p.to_string_lossy().into_owned()),
        };
        let path = match rest {
            Some(p) => format!("{}:{p}", bin.display()),
            None => bin.display().to_string(),
        };
        let mut env = vec![
            ("PATH".to_string(), path),
            ("VIRTUAL_ENV".to_string(), self.venv.display().to_string()),
            ("PYTHONPATH".to_string(), self.spec.pythonpath.join(":")),
        ];
        env.extend(self.spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        env
    }

    /// The test command for `files` (shell-quoted).
    pub fn test_command(&self, files: &[String]) -> String {
        let mut c = self.spec.test_cmd.clone();
        for f in files {
            c.push(' ');
            c.push_str(&shell_quote(f));
        }
        self.with_service(c)
    }

    /// The test command for one `file`, narrowed to `ids` (`path::Class::test` node ids of
    /// tests in that file) when the runner can select tests: pytest takes the node ids, sympy's
    /// `bin/test` takes their names after `-k` (a substring match, so a few more may run). Any
    /// other runner, or no ids, runs the whole file.
    pub fn test_command_selected(&self, file: &str, ids: &[String]) -> String {
        self.test_command_files(&[(file, ids)])
    }

    /// One command for several test files, each narrowed to its `ids` as in
    /// [`Env::test_command_selected`] (which is this with one file): pytest gets each file's
    /// node ids, or the file when it has none; sympy's `bin/test` gets the files and then all
    /// their names after one `-k`, so files with ids and files without must not share a
    /// command (see [`Env::batch_key`]); any other runner gets the whole files.
    pub fn test_command_files(&self, files: &[(&str, &[String])]) -> String {
        let runner = test_runner_of(&self.spec.test_cmd);
        let mut c = self.spec.test_cmd.clone();
        let mut push = |w: &str| {
            c.push(' ');
            c.push_str(&shell_quote(w));
        };
        match runner {
            TestRunner::Other => files.iter().for_each(|(f, _)| push(f)),
            TestRunner::Pytest => {
                // The slowest tests' seconds, so a file too slow whole can lose those tests
                // rather than all the others (see `Env::test_command_without`); a spec's own
                // `--durations` comes before, and pytest takes the last.
                push(&format!("--durations={DURATIONS_LISTED}"));
                for (f, ids) in files {
                    if ids.is_empty() {
                        push(f);
                    } else {
                        ids.iter().for_each(|id| push(id));
                    }
                }
            }
            TestRunner::SympyBinTest => {
                files.iter().for_each(|(f, _)| push(f));
                let names: Vec<&str> = files
                    .iter()
                    .flat_map(|(_, ids)| ids.iter())
                    .map(|id| id.rsplit("::").next().unwrap_or(id))
                    .collect();
                if !names.is_empty() {
                    c.push_str(" -k");
                    for n in names {
                        c.push(' ');
                        c.push_str(&shell_quote(n));
                    }
                }
            }
        }
        self.with_service(c)
    }

    /// The command for one `file` narrowed to `ids` (none: the whole file) less the tests
    /// `left_out` (`--deselect`, pytest 3.5 and later): a file whose slowest tests alone make it
    /// too slow runs without them. `None` for a runner that cannot leave tests out.
    pub fn test_command_without(
        &self,
        file: &str,
        ids: &[String],
        left_out: &[String],
    ) -> Option<String> {
        if !self.can_leave_out_tests() {
            return None;
        }
        let mut c = self.test_command_selected(file, ids);
        for id in left_out {
            c.push_str(" --deselect ");
            c.push_str(&shell_quote(id));
        }
        Some(c)
    }

    /// The command for one whole `file` that lists every test's seconds (`--durations=0`;
    /// pytest hides those under 5 ms), not only the slowest [`DURATIONS_LISTED`]: a file whose
    /// time is spread over many tests can lose enough of them to come within its gate only
    /// when all their seconds are known. `None` for a runner that cannot leave tests out.
    pub fn test_command_timing_all(&self, file: &str) -> Option<String> {
        if !self.can_leave_out_tests() {
            return None;
        }
        // pytest takes the last `--durations`.
        Some(format!(
            "{} --durations=0",
            self.test_command_selected(file, &[])
        ))
    }

    /// Whether the runner can leave tests out (see [`Env::test_command_without`]).
    pub fn can_leave_out_tests(&self) -> bool {
        test_runner_of(&self.spec.test_cmd) == TestRunner::Pytest
    }

    /// Files with the same key can run in one [`Env::test_command_files`] command: sympy's
    /// `-k` applies to every file of the command, so a file run whole cannot share one with a
    /// file narrowed to some tests.
    pub fn batch_key(&self, ids: &[String]) -> u8 {
        match test_runner_of(&self.spec.test_cmd) {
            TestRunner::SympyBinTest => u8::from(ids.is_empty()),
            _ => 0,
        }
    }

    /// The generated files to put into every sandbox tree (read from the build's work tree).
    pub fn generated_files(&self) -> anyhow::Result<Vec<TreeFile>> {
        let list = self.dir.join("generated.json");
        if !list.exists() {
            return Ok(vec![]);
        }
        let paths: Vec<String> = serde_json::from_slice(&std::fs::read(&list)?)?;
        paths
            .into_iter()
            .map(|p| {
                let contents = std::fs::read(self.dir.join("src").join(&p)).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot read generated file {p} of {}: {e}",
                        self.dir.display()
                    )
                })?;
                Ok(TreeFile {
                    path: p,
                    contents: Some(contents),
                })
            })
            .collect()
    }
}

/// The cache folder: `DEI_CACHE_DIR`, else `$XDG_CACHE_HOME/dei`, else `~/.cache/dei`.
pub fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DEI_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("dei");
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache").join("dei")
}

/// Find an interpreter: a path; a command name on `PATH`; or a version `X.Y`, looked for as
/// `pythonX.Y` on `PATH` (pyenv shims left out: they fail for versions not selected) and
/// then in pyenv's folder (`$PYENV_ROOT`, default `~/.pyenv`), newest patch first.
pub fn find_python(python: &str) -> Option<PathBuf> {
    if python.contains('/') {
        let p = PathBuf::from(python);
        return p.is_file().then_some(p);
    }
    let is_version = python.chars().next().is_some_and(|c| c.is_ascii_digit());
    let name = if is_version {
        format!("python{python}")
    } else {
        python.to_string()
    };
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|d| !d.to_string_lossy().contains("shims"))
            .map(|d| d.join(&name))
            .find(|p| p.is_file() && runs(p))
    });
    if on_path.is_some() || !is_version {
        return on_path.or_else(|| {
            // A shim is still better than nothing for a plain command name.
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|d| d.join(&name))
                    .find(|p| p.is_file() && runs(p))
            })
        });
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))?;
    let mut found: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(root.join("versions"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().into_owned();
            let rest = v.strip_prefix(python)?.strip_prefix('.')?;
            let patch: Vec<u32> = rest
                .split('.')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            let exe = e.path().join("bin").join(&name);
            exe.is_file().then_some((patch, exe))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p)
}

fn runs(p: &Path) -> bool {
    std::process::Command::new(p)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Builds environments into a cache folder.
pub struct EnvBuilder {
    pub cache_dir: PathBuf,
    pub backend: LocalBackend,
    /// Limit per build step.
    pub step_timeout: Duration,
}

impl EnvBuilder {
    pub fn new(cache_dir: &Path) -> EnvBuilder {
        EnvBuilder {
            cache_dir: cache_dir.to_path_buf(),
            backend: LocalBackend::default(),
            step_timeout: Duration::from_secs(1200),
        }
    }

    /// Build (or reuse) the environment of `spec` from the git repository `repo` at `commit`
    /// (default: the spec's setup commit). A failure names the step that failed.
    pub fn build(
        &self,
        spec: &EnvSpec,
        repo: &Path,
        commit: Option<&str>,
    ) -> Result<Env, EnvError> {
        let fail = |step: &str, detail: String, tail: String| spec.step_error(step, detail, tail);
        let commit = spec.build_commit(commit)?;
        let slug = spec.slug();
        let envs = self.cache_dir.join("envs");
        let dir = envs.join(format!("{slug}-{}", spec.hash(&commit)));
        let venv = dir.join("venv");
        let lock = spec.lock_build(
            &envs,
            &dir.file_name().unwrap_or_default().to_string_lossy(),
        )?;
        let env = |build_seconds, steps, cached| Env {
            spec: spec.clone(),
            dir: dir.clone(),
            venv: venv.clone(),
            image: None,
            build_seconds,
            steps,
            cached,
        };
        if dir.join("ok").exists() {
            return Ok(env(0.0, vec![], true));
        }
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        std::fs::create_dir_all(&dir).map_err(|e| spec.cache_error("create", &dir, e))?;
        // A build takes from seconds to many minutes: say what is built, whatever stderr is.
        let what = format!("the Python environment of {} {}", spec.repo, spec.version);
        crate::model::notify::notice(&format!(
            "exec: building {what} (python: {}) in {}; it is kept for later runs",
            spec.python,
            dir.display()
        ));
        let start = Instant::now();
        let mut steps = Vec::new();
        // The steps run in the environment's folder: a relative repository path would name
        // nothing there.
        let repo = std::path::absolute(repo).unwrap_or_else(|_| repo.to_path_buf());
        let result = self.build_steps(spec, &repo, &commit, &dir, &mut steps);
        if let Err((step, detail, tail)) = result {
            // Keep nothing half-built; the log of the failing step is in the error.
            let _ = std::fs::remove_dir_all(&dir);
            crate::model::notify::notice(&format!(
                "exec: could not build {what} ({:.1} s): step `{step}`: {detail}",
                start.elapsed().as_secs_f64()
            ));
            return Err(fail(&step, detail, tail));
        }
        let _ = std::fs::write(
            dir.join("spec.json"),
            serde_json::to_vec_pretty(spec).unwrap_or_default(),
        );
        std::fs::write(dir.join("ok"), b"").map_err(|e| {
            let detail = format!("cannot write {}: {e}", dir.display());
            crate::model::notify::notice(&format!("exec: could not build {what}: {detail}"));
            fail("cache", detail, String::new())
        })?;
        drop(lock);
        let seconds = start.elapsed().as_secs_f64();
        crate::model::notify::notice(&format!("exec: built {what} in {seconds:.1} s"));
        Ok(env(seconds, steps, false))
    }

    fn build_steps(
        &self,
        spec: &EnvSpec,
        repo: &Path,
        commit: &str,
        dir: &Path,
        steps: &mut Vec<(String, f64)>,
    ) -> Result<(), (String, String, String)> {
        let t = Instant::now();
        let python = find_python(&spec.python).ok_or_else(|| {
            (
                "find python".to_string(),
                format!(
                    "no interpreter `{}` on PATH or in pyenv's folder; install it or give --python",
                    spec.python
                ),
                String::new(),
            )
        })?;
        steps.push(("find python".into(), t.elapsed().as_secs_f64()));
        let venv = dir.join("venv");
        let vpy = venv.join("bin").join("python");
        let uv = find_python("uv");
        let needs_pip = !spec.requirements.is_empty()
            || spec.install.is_some()
            || !spec.pre_install.is_empty()
            || !spec.extras.is_empty();
        let q = |p: &Path| shell_quote(&p.to_string_lossy());
        let venv_cmd = match &uv {
            Some(uv) => format!(
                "{} venv -q --seed --python {} {}",
                q(uv),
                q(&python),
                q(&venv)
            ),
            None if needs_pip => format!("{} -m venv {}", q(&python), q(&venv)),
            None => format!("{} -m venv --without-pip {}", q(&python), q(&venv)),
        };
        self.step("venv", &venv_cmd, dir, &[], steps)?;
        let mut base_env = {
            let bin = venv.join("bin");
            let path = match std::env::var_os("PATH") {
                Some(p) => format!("{}:{}", bin.display(), p.to_string_lossy()),
                None => bin.display().to_string(),
            };
            // The user's own pip and uv settings (an index of their own, find-links) and
            // proxy, which the sandbox's clean environment would otherwise drop; what the
            // build sets itself comes after them and wins.
            let mut e: Vec<(String, String)> = std::env::vars()
                .filter(|(k, _)| passes_to_builds(k))
                .collect();
            e.extend([
                ("PATH".to_string(), path),
                ("VIRTUAL_ENV".to_string(), venv.display().to_string()),
                ("PIP_DISABLE_PIP_VERSION_CHECK".to_string(), "1".to_string()),
                ("PIP_NO_INPUT".to_string(), "1".to_string()),
                // pip compiles what it installs (tests run with bytecode writing off).
                ("PYTHONDONTWRITEBYTECODE".to_string(), String::new()),
            ]);
            e.extend(spec.env.iter().map(|(k, v)| (k.clone(), v.clone())));
            e
        };
        let (pins, rest): (Vec<&String>, Vec<&String>) =
            if spec.cutoff.is_some() && spec.exempt_pins {
                spec.requirements.iter().partition(|r| r.contains("=="))
            } else {
                (vec![], spec.requirements.iter().collect())
            };
        // `pip install -q ARGS` into the venv: uv's when it is on `PATH`, else the venv's pip.
        let pip_install = |args: &str| match &uv {
            Some(uv) => format!("{} pip install -q --python {} {args}", q(uv), q(&vpy)),
            None => format!("python -m pip install -q {args}"),
        };
        let install = |name: &str,
                       reqs: &[&String],
                       env: &[(String, String)],
                       steps: &mut Vec<(String, f64)>| {
            if reqs.is_empty() {
                return Ok(());
            }
            let file = dir.join(format!("{name}.txt"));
            let text: String = reqs.iter().map(|r| format!("{r}\n")).collect();
            std::fs::write(&file, text).map_err(|e| {
                (
                    name.to_string(),
                    format!("cannot write {}: {e}", file.display()),
                    String::new(),
                )
            })?;
            self.step(
                name,
                &pip_install(&format!("-r {}", q(&file))),
                dir,
                env,
                steps,
            )
        };
        // The exact pins go in without the cutoff (some post-date it).
        install("requirements (pins)", &pins, &base_env, steps)?;
        // The cutoff binds everything installed after the pins, the repository's own
        // dependencies (`pip install -e .`) included: unpinned, they drift to what PyPI serves
        // today (sphinx 3.x with docutils 0.23 cannot import `roman`). pip reads
        // `PIP_UPLOADED_PRIOR_TO` from version 26 on, uv reads `UV_EXCLUDE_NEWER`.
        if let Some(c) = &spec.cutoff {
            if !rest.is_empty() || spec.install.is_some() || !spec.pre_install.is_empty() {
                self.step("pip for the cutoff", PIP_FOR_CUTOFF, dir, &base_env, steps)?;
                base_env.extend(cutoff_vars(c));
            }
        }
        install("requirements", &rest, &base_env, steps)?;
        if spec.needs_work_tree() {
            let src = dir.join("src");
            let cmd = format!(
                "git clone -q --shared --no-checkout {} {} && git -C {} checkout -q {}",
                q(repo),
                q(&src),
                q(&src),
                shell_quote(commit)
            );
            self.step("checkout", &cmd, dir, &[], steps)?;
            for (i, line) in spec.pre_install.iter().enumerate() {
                self.step(&format!("pre_install[{i}]"), line, &src, &base_env, steps)?;
            }
            if let Some(install) = &spec.install {
                self.step("install", install, &src, &base_env, steps)?;
            }
            if !spec.generated.is_empty() {
                let t = Instant::now();
                list_generated(spec, &src, dir)
                    .map_err(|e| ("generated files".to_string(), e, String::new()))?;
                steps.push(("generated files".into(), t.elapsed().as_secs_f64()));
            }
        }
        if !spec.extras.is_empty() {
            let args = extras_pip_args(&spec.extras);
            let cmd = pip_install(&args);
            // The packages as they were when the environment's commit was made (a spec's own
            // cutoff already binds them): an old tree with today's numpy may not import. When
            // no wheel for the interpreter is that old (numpy of 2019 for Python 3.9), or the
            // index gives no upload times, they come as they are today.
            let as_of = if spec.cutoff.is_some() {
                None
            } else {
                commit_time(repo, commit)
            };
            let dated = as_of.filter(|_| {
                uv.is_some()
                    || self
                        .step("pip for the cutoff", PIP_FOR_CUTOFF, dir, &base_env, steps)
                        .is_ok()
            });
            let done = dated.is_some_and(|t| {
                let mut env = base_env.clone();
                env.extend(cutoff_vars(&t));
                self.step("extras (as of the commit)", &cmd, dir, &env, steps)
                    .is_ok()
            });
            if !done {
                self.step("extras", &cmd, dir, &base_env, steps)?;
            }
        }
        Ok(())
    }

    /// Run one build step (network on, writes confined to the environment's folder).
    fn step(
        &self,
        name: &str,
        command: &str,
        cwd: &Path,
        env: &[(String, String)],
        steps: &mut Vec<(String, f64)>,
    ) -> Result<(), (String, String, String)> {
        let job = Job {
            command: command.to_string(),
            env: env.to_vec(),
            limits: Limits {
                timeout: self.step_timeout,
                cpu_seconds: self.step_timeout.as_secs().max(1),
                processes: 4096,
                output_bytes: 16 << 10,
                ..Limits::default()
            },
            network: true,
            loopback: false,
            writable: vec![self.cache_dir.clone()],
            inherit_env: false,
            instance_id: None,
            image: None,
        };
        let t = Instant::now();
        let out: Outcome = self.backend.run_in(cwd, &job).map_err(|e| {
            (
                name.to_string(),
                format!("cannot run `{command}`: {e:#}"),
                String::new(),
            )
        })?;
        steps.push((name.to_string(), t.elapsed().as_secs_f64()));
        if !out.success() {
            let why = if out.timed_out {
                format!(
                    "`{command}` took longer than {:.0}s",
                    self.step_timeout.as_secs_f64()
                )
            } else {
                match (out.code, out.signal) {
                    (Some(c), _) => format!("`{command}` exited with status {c}"),
                    (None, Some(s)) => format!("`{command}` was killed by signal {s}"),
                    _ => format!("`{command}` failed"),
                }
            };
            let tail: String = {
                let n = out.output.chars().count();
                out.output.chars().skip(n.saturating_sub(3000)).collect()
            };
            return Err((name.to_string(), why, tail));
        }
        Ok(())
    }
}

/// Write `dir/generated.json`: the files of the built work tree `src` that the spec's
/// [`EnvSpec::generated`] names (untracked ones matched by extension, exact paths that are
/// there), for [`Env::generated_files`].
pub(crate) fn list_generated(spec: &EnvSpec, src: &Path, dir: &Path) -> Result<(), String> {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-o", "-z"])
        .current_dir(src)
        .output()
        .map_err(|e| e.to_string())?;
    let mut found: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| !p.is_empty() && generated_match(&spec.generated, p))
        .collect();
    for p in spec.generated.iter().filter(|p| !p.starts_with('*')) {
        if !found.contains(p) && src.join(p).is_file() {
            found.push(p.clone());
        }
    }
    std::fs::write(
        dir.join("generated.json"),
        serde_json::to_vec(&found).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())
}

/// Brings the venv's pip to a version that reads a resolver cutoff.
pub(crate) const PIP_FOR_CUTOFF: &str = "python -m pip install -q 'pip>=26'";

/// The variables that make pip (≥ 26) and uv resolve as of `time`.
pub(crate) fn cutoff_vars(time: &str) -> [(String, String); 2] {
    [
        ("PIP_UPLOADED_PRIOR_TO".to_string(), time.to_string()),
        ("UV_EXCLUDE_NEWER".to_string(), time.to_string()),
    ]
}

/// Whether a variable of the user's environment reaches the build steps: pip's and uv's
/// settings and the proxy.
pub(crate) fn passes_to_builds(name: &str) -> bool {
    name.starts_with("PIP_")
        || name.starts_with("UV_")
        || matches!(
            name.to_ascii_lowercase().as_str(),
            "http_proxy" | "https_proxy" | "no_proxy" | "all_proxy"
        )
}

/// When `commit` was made, as `YYYY-MM-DDTHH:MM:SSZ` (UTC), or `None` when the repository
/// cannot say.
pub(crate) fn commit_time(repo: &Path, commit: &str) -> Option<String> {
    let r = git2::Repository::open(repo).ok()?;
    let c = r.find_commit(git2::Oid::from_str(commit).ok()?).ok()?;
    Some(utc_timestamp(c.time().seconds()))
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_timestamp(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to a civil date (proleptic Gregorian), counted in 400-year eras from 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn generated_match(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| match p.strip_prefix('*') {
        Some(ext) => path.ends_with(ext) && !path.starts_with("build/"),
        None => p == path,
    })
}

/// How many of the slowest tests a pytest run lists with their seconds (`--durations`). A
/// file's time is often spread thin: of xarray's `test_dataset.py` (900 tests, 9–13 s at base),
/// the 50 slowest took 1.6–3.7 s. A file that these cannot bring within its gate is listed
/// whole once (see [`Env::test_command_timing_all`]).
pub const DURATIONS_LISTED: usize = 100;

/// The test runners whose tests can be selected by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestRunner {
    Pytest,
    SympyBinTest,
    Other,
}

/// Which runner a test command calls, from its words (`pytest`, `py.test`, `-m pytest`,
/// `bin/test`).
fn test_runner_of(cmd: &str) -> TestRunner {
    // Words as the shell that runs the command splits them: a quoted path with a space in it
    // (`'/opt/my env/bin/pytest' -rA`) is one word.
    let words = crate::model::repo::shell_words(cmd)
        .unwrap_or_else(|| cmd.split_whitespace().map(str::to_string).collect());
    for w in &words {
        let w = w.as_str();
        let base = w.rsplit('/').next().unwrap_or(w);
        if matches!(base, "pytest" | "py.test") {
            return TestRunner::Pytest;
        }
        if w == "bin/test" || w.ends_with("/bin/test") {
            return TestRunner::SympyBinTest;
        }
    }
    TestRunner::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_extras_install_only_as_wheels() {
        let extras: Vec<String> = ["networkx", "numpy", "Pillow", "a b"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            extras_pip_args(&extras),
            "--only-binary numpy,Pillow networkx numpy Pillow 'a b'"
        );
        assert_eq!(extras_pip_args(&["networkx".to_string()]), "networkx");
        assert_eq!(extras_pip_args(&[]), "");
    }

    #[test]
    fn shipped_specs_cover_the_lite_repositories() {
        let specs = shipped_specs();
        for repo in [
            "sympy/sympy",
            "psf/requests",
            "pallets/flask",
            "pytest-dev/pytest",
        ] {
            assert!(specs.iter().any(|s| s.repo == repo), "{repo}");
        }
        let s = spec_for("pytest-dev/pytest", "5.4", &Overrides::default()).unwrap();
        assert_eq!(s.pythonpath, vec!["src".to_string()]);
        assert!(s.generated.contains(&"src/_pytest/_version.py".to_string()));
        for s in specs {
            assert!(!s.test_cmd.is_empty() && !s.python.is_empty(), "{s:?}");
            // Every runner but sympy's prints a line per test only with pytest's -rA; an edit
            // of tox.ini made while building never reaches a sandbox tree, so the command
            // itself must carry it (sphinx 3.1-3.3 printed nothing dei could read).
            if test_runner_of(&s.test_cmd) != TestRunner::SympyBinTest {
                assert!(
                    s.test_cmd.split_whitespace().any(|w| w == "-rA"),
                    "{} {}: {}",
                    s.repo,
                    s.version,
                    s.test_cmd
                );
            } else {
                // sympy's tests run with sympy's cache on, as its users run it: dei runs whole
                // files, several times slower with the harness's -C (docs/execution.md).
                let words: Vec<&str> = s.test_cmd.split_whitespace().collect();
                assert!(
                    !words.contains(&"-C") && words.contains(&"--verbose"),
                    "{} {}: {}",
                    s.repo,
                    s.version,
                    s.test_cmd
                );
            }
        }
        // astropy 1.3's build writes the ERFA wrapper every tree needs to import astropy.
        let s = spec_for("astropy/astropy", "1.3", &Overrides::default()).unwrap();
        assert!(s.generated.contains(&"astropy/_erfa/core.py".to_string()));
    }

    #[test]
    fn extras_key_a_new_environment_and_leave_the_others_their_hash() {
        let s = spec_for("sympy/sympy", "1.5", &Overrides::default()).unwrap();
        // Without extras the spec's JSON has no such field: environments built before keep
        // their hash, and their cached runs.
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("extras"), "{json}");
        let mut with = s.clone();
        with.extras.push("numpy".into());
        assert_ne!(s.hash("abc"), with.hash("abc"));
        let back: EnvSpec = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
    }

    #[test]
    fn requests_tests_run_beside_a_local_httpbin_and_the_others_keep_their_hash() {
        // Up to 2.7 a server starts before each test command, last of which stays the test
        // runner's, so narrowing and `--deselect` still reach it.
        let s = spec_for("psf/requests", "2.4", &Overrides::default()).unwrap();
        let svc = s
            .service
            .clone()
            .expect("requests 2.4 starts a local httpbin");
        assert_eq!(
            s.env["HTTPBIN_URL"],
            format!("http://127.0.0.1:{}/", svc.port)
        );
        let env = Env {
            spec: s,
            dir: PathBuf::from("/e"),
            venv: PathBuf::from("/e/venv"),
            image: None,
            build_seconds: 0.0,
            steps: vec![],
            cached: true,
        };
        assert!(env.loopback());
        let c = env
            .test_command_without("test_requests.py", &[], &["test_requests.py::t".into()])
            .unwrap();
        let (start, last) = c.rsplit_once('\n').unwrap();
        assert!(start.starts_with("(python -m httpbin.core "), "{c}");
        assert!(
            start.contains(&format!("(\"127.0.0.1\", {})", svc.port)),
            "{c}"
        );
        assert!(
            last.starts_with("pytest -rA ") && last.ends_with("--deselect test_requests.py::t"),
            "{c}"
        );
        // 2.10's tests take pytest-httpbin's fixture: loopback only, the command as it was.
        let s = spec_for("psf/requests", "2.10", &Overrides::default()).unwrap();
        assert!(s.loopback && s.service.is_none());
        assert!(s
            .requirements
            .iter()
            .any(|r| r.starts_with("pytest-httpbin==")));
        // Specs without either keep their JSON, so their environments keep their hash.
        let s = spec_for("sympy/sympy", "1.5", &Overrides::default()).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            !json.contains("loopback") && !json.contains("service"),
            "{json}"
        );
    }

    #[test]
    fn only_known_packages_are_extras() {
        assert_eq!(extra_for("numpy").map(|e| e.dist), Some("numpy"));
        assert_eq!(extra_for("PIL").map(|e| e.dist), Some("Pillow"));
        // Not a well-known package, or not its import name: nothing to install.
        assert_eq!(extra_for("nox"), None);
        assert_eq!(extra_for("pillow"), None);
        assert_eq!(extra_for("numpy.linalg"), None);
        let sympy = "LaTeX parsing requires the antlr4 python package, provided by pip \
                     (antlr4-python2-runtime or antlr4-python3-runtime) or conda \
                     (antlr-python-runtime)";
        assert_eq!(
            extra_named_in(sympy).map(|e| e.dist),
            Some("antlr4-python3-runtime")
        );
        assert_eq!(extra_named_in("this needs a package: pip install it"), None);
    }

    #[test]
    fn commit_times_are_written_in_utc() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        // sympy-17022's base commit, and a leap day.
        assert_eq!(utc_timestamp(1_560_376_497), "2019-06-12T21:54:57Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_709_251_199), "2024-02-29T23:59:59Z");
        // A commit's own time, read from the repository; an unknown commit has none.
        let dir = tempfile::tempdir().unwrap();
        let r = git2::Repository::init_bare(dir.path()).unwrap();
        let tree = r.treebuilder(None).unwrap().write().unwrap();
        let who = git2::Signature::new("t", "t@example.org", &git2::Time::new(1_560_376_497, 120))
            .unwrap();
        let tree = r.find_tree(tree).unwrap();
        let c = r.commit(None, &who, &who, "base", &tree, &[]).unwrap();
        assert_eq!(
            commit_time(dir.path(), &c.to_string()).as_deref(),
            Some("2019-06-12T21:54:57Z")
        );
        assert_eq!(commit_time(dir.path(), &"0".repeat(40)), None);
    }

    #[test]
    fn builds_get_the_users_pip_settings_and_proxy() {
        for k in [
            "PIP_INDEX_URL",
            "PIP_FIND_LINKS",
            "UV_INDEX_URL",
            "HTTPS_PROXY",
            "no_proxy",
        ] {
            assert!(passes_to_builds(k), "{k}");
        }
        for k in [
            "HOME",
            "PYTHONPATH",
            "AWS_SECRET_ACCESS_KEY",
            "OPENAI_API_KEY",
        ] {
            assert!(!passes_to_builds(k), "{k}");
        }
    }

    #[test]
    fn overrides_apply_and_unknown_repositories_need_them() {
        let err = spec_for("me/mine", "1.0", &Overrides::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no environment for me/mine 1.0: dei ships none for this repository; give --python, \
             --setup and --test-cmd for it"
        );
        // A shipped repository at a version dei has no spec for lists the ones it has.
        let err = spec_for("psf/requests", "9.9", &Overrides::default()).unwrap_err();
        assert!(
            err.to_string().contains("dei ships versions 0.14, 2.3, "),
            "{err}"
        );
        // An issue file names no repository nor version: said in words, not as blanks.
        let err = spec_for("", "", &Overrides::default()).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "no environment for the local repository (an issue file names none): dei ships \
                 specs only for SWE-bench tasks; give --python"
            ),
            "{err}"
        );
        let err = spec_for("me/mine", "", &Overrides::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("no environment for me/mine (the task names no version)"),
            "{err}"
        );
        let o = Overrides {
            python: Some("3.11".into()),
            setup: Some("make".into()),
            test_cmd: Some("pytest -q".into()),
            loopback: false,
        };
        let s = spec_for("me/mine", "1.0", &o).unwrap();
        assert_eq!(
            (s.python.as_str(), s.install.as_deref(), s.test_cmd.as_str()),
            ("3.11", Some("make"), "pytest -q")
        );
        assert!(!s.loopback);
        // --test-loopback: the tests' own server reachable, in an environment of its own.
        let lo = Overrides {
            loopback: true,
            ..o.clone()
        };
        let with = spec_for("me/mine", "1.0", &lo).unwrap();
        assert!(with.loopback && !lo.is_empty());
        assert_ne!(with.hash("x"), s.hash("x"));
        let s = spec_for("sympy/sympy", "1.1", &o).unwrap();
        assert_eq!(s.test_cmd, "pytest -q");
        assert_ne!(
            s.hash("x"),
            spec_for("sympy/sympy", "1.1", &Overrides::default())
                .unwrap()
                .hash("x")
        );
    }

    #[test]
    fn generated_patterns() {
        let p = vec!["*.so".to_string(), "src/_pytest/_version.py".to_string()];
        assert!(generated_match(&p, "astropy/io/x.cpython-39.so"));
        assert!(!generated_match(&p, "build/lib/x.so"));
        assert!(generated_match(&p, "src/_pytest/_version.py"));
        assert!(!generated_match(&p, "src/_pytest/other.py"));
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("tests/test_a.py"), "tests/test_a.py");
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
    }

    fn env_with(test_cmd: &str) -> Env {
        let mut spec = spec_for("sympy/sympy", "1.1", &Overrides::default()).unwrap();
        spec.test_cmd = test_cmd.into();
        Env {
            spec,
            dir: PathBuf::new(),
            venv: PathBuf::new(),
            image: None,
            build_seconds: 0.0,
            steps: vec![],
            cached: true,
        }
    }

    #[test]
    fn selected_tests_per_runner() {
        let ids = vec![
            "t/test_a.py::test_one".to_string(),
            "t/test_a.py::TestB::test_two".to_string(),
        ];
        let py = env_with("pytest -rA");
        assert_eq!(
            py.test_command_selected("t/test_a.py", &ids),
            "pytest -rA --durations=100 t/test_a.py::test_one t/test_a.py::TestB::test_two"
        );
        assert_eq!(
            env_with("python -m pytest").test_command_selected("t/test_a.py", &ids[..1]),
            "python -m pytest --durations=100 t/test_a.py::test_one"
        );
        let sympy = env_with("PYTHONWARNINGS=x bin/test -C --verbose");
        assert_eq!(
            sympy.test_command_selected("t/test_a.py", &ids),
            "PYTHONWARNINGS=x bin/test -C --verbose t/test_a.py -k test_one test_two"
        );
        // No ids, or a runner that cannot select: the whole file.
        assert_eq!(
            sympy.test_command_selected("t/test_a.py", &[]),
            "PYTHONWARNINGS=x bin/test -C --verbose t/test_a.py"
        );
        assert_eq!(
            env_with("./runtests.py --verbosity 2").test_command_selected("t/test_a.py", &ids),
            "./runtests.py --verbosity 2 t/test_a.py"
        );
        // A runner's path quoted as the shell takes it, a space inside: still pytest.
        assert_eq!(
            env_with("'/opt/my env/bin/pytest' -rA")
                .test_command_selected("t/test_a.py", &ids[..1]),
            "'/opt/my env/bin/pytest' -rA --durations=100 t/test_a.py::test_one"
        );
        // An unclosed quote is the shell's error to report: the words are split on spaces.
        assert_eq!(
            env_with("'pytest -rA").test_command_selected("t/test_a.py", &ids[..1]),
            "'pytest -rA t/test_a.py"
        );
        // Leaving the slowest tests out: pytest only.
        let slow = vec!["t/test_a.py::test_slow[a b]".to_string()];
        assert_eq!(
            py.test_command_without("t/test_a.py", &[], &slow)
                .as_deref(),
            Some("pytest -rA --durations=100 t/test_a.py --deselect 't/test_a.py::test_slow[a b]'")
        );
        assert!(py.can_leave_out_tests() && !sympy.can_leave_out_tests());
        assert_eq!(sympy.test_command_without("t/test_a.py", &[], &slow), None);
        // Every test's seconds, for a file whose slowest 100 cannot bring it within its gate.
        assert_eq!(
            py.test_command_timing_all("t/test_a.py").as_deref(),
            Some("pytest -rA --durations=100 t/test_a.py --durations=0")
        );
        assert_eq!(sympy.test_command_timing_all("t/test_a.py"), None);
    }

    #[test]
    fn several_files_in_one_command_per_runner() {
        let a = vec!["t/test_a.py::test_one".to_string()];
        let b = vec!["t/test_b.py::TestB::test_two".to_string()];
        let none: Vec<String> = vec![];
        let py = env_with("pytest -rA");
        assert_eq!(
            py.test_command_files(&[("t/test_a.py", &a), ("t/test_c.py", &none)]),
            "pytest -rA --durations=100 t/test_a.py::test_one t/test_c.py"
        );
        let sympy = env_with("bin/test -C --verbose");
        assert_eq!(
            sympy.test_command_files(&[("t/test_a.py", &a), ("t/test_b.py", &b)]),
            "bin/test -C --verbose t/test_a.py t/test_b.py -k test_one test_two"
        );
        // sympy's -k binds every file: a whole file cannot share with a narrowed one.
        assert_ne!(sympy.batch_key(&a), sympy.batch_key(&none));
        assert_eq!(py.batch_key(&a), py.batch_key(&none));
        let other = env_with("./runtests.py --verbosity 2");
        assert_eq!(
            other.test_command_files(&[("t/test_a.py", &a), ("t/test_b.py", &b)]),
            "./runtests.py --verbosity 2 t/test_a.py t/test_b.py"
        );
    }
}
