//! Environments built into container images (`--exec-env-in-image`): an [`EnvSpec`] becomes a
//! Containerfile on a base image that has the spec's Python (`--exec-base-image`, e.g.
//! `python:3.9-slim`), built with `podman build` or `docker build` and tagged by the spec's
//! hash, [`IMAGE_REPO`]`:<repo>-<version>-<hash>`, so that it is built once and reused while
//! the engine has it, as the venvs of [`super::env`] are.
//!
//! Inside the image the venv is [`IMAGE_VENV`] and the repository's work tree (for specs that
//! install it) [`IMAGE_SRC`]; each build step is a script under [`IMAGE_BUILD`] run by its own
//! `RUN` line, so that a failing build names the spec's step (`requirements`, `install`) and
//! its Containerfile line. The steps are those of [`super::env::EnvBuilder`]: the venv, the
//! pinned requirements, the cutoff, the other requirements, the pre-install lines and the
//! install step in the work tree, the extras. The sandbox runs then happen in containers of that
//! image, the candidate's tree mounted as [`super::container`] mounts it, nothing of the host's
//! environment mounted.
//!
//! The build has the network the engine gives builds (the engine's default). The user's pip
//! and uv settings and proxy reach the build steps as build arguments, as they reach local
//! builds; a setting that names a file or folder of this machine (`PIP_CERT`, a
//! `PIP_FIND_LINKS` folder) is copied into the build context and points at the copy in the
//! image, so that a certificate authority the machine trusts is trusted by pip in the build too.

use super::container::{engine_command, Engine};
use super::env::{
    commit_time, cutoff_vars, extras_pip_args, list_generated, passes_to_builds, Env, EnvError,
    EnvSpec, PIP_FOR_CUTOFF,
};
use crate::model::repo::shell_quote;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The image name of built environments (the tag says which).
pub const IMAGE_REPO: &str = "localhost/dei-env";
/// The venv inside a built image.
pub const IMAGE_VENV: &str = "/opt/dei/venv";
/// The repository's work tree inside a built image (specs that install it).
pub const IMAGE_SRC: &str = "/opt/dei/src";
/// The build's scripts and requirement files inside a built image.
pub const IMAGE_BUILD: &str = "/opt/dei/build";
/// `PATH` after the venv's `bin/` for jobs in a built image.
pub const IMAGE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Builds environments into images; see the module docs.
#[derive(Debug, Clone)]
pub struct ImageBuilder {
    pub engine: Engine,
    /// The engine's command (default: [`Engine::binary`] on `PATH`).
    pub program: String,
    /// The image the environments are built on; it must have the specs' Python.
    pub base: String,
    /// Where the build contexts, logs and generated files are kept (`images/` under it).
    pub cache_dir: PathBuf,
    /// Limit per build step (the whole build gets this times its steps).
    pub step_timeout: Duration,
}

/// One step of a build: its name (the spec's word for it), the script's file name and the
/// command it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub file: String,
    pub command: String,
}

/// What a build writes into its context: the Containerfile, the step scripts and requirement
/// files (all under `dei/`), and whether the work tree goes in (`src/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    pub containerfile: String,
    pub steps: Vec<Step>,
    /// Files under `dei/` in the context: name and contents.
    pub files: Vec<(String, String)>,
    pub work_tree: bool,
}

impl ImageBuilder {
    pub fn new(engine: Engine, base: &str, cache_dir: &Path) -> ImageBuilder {
        ImageBuilder {
            engine,
            program: engine.binary().to_string(),
            base: base.to_string(),
            cache_dir: cache_dir.to_path_buf(),
            step_timeout: Duration::from_secs(1200),
        }
    }

    /// The image's tag for `spec` at `commit`: the spec's hash and the base image's name
    /// together (the same spec on another base is another image).
    pub fn tag(&self, spec: &EnvSpec, commit: &str) -> String {
        let mut h = Sha256::new();
        h.update(spec.hash(commit).as_bytes());
        h.update(b"\0");
        h.update(self.base.as_bytes());
        h.update(b"dei-image-v1");
        let hash: String = h
            .finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        // A tag has at most 128 characters.
        let slug: String = spec.slug().chars().take(100).collect();
        format!("{IMAGE_REPO}:{slug}-{hash}")
    }

    /// The Containerfile and scripts of `spec`'s image; `passed` are the user's pip and uv
    /// settings as build arguments (name, and the path in the image a host file of theirs is
    /// copied to), `as_of` when the repository's commit was made (the extras are dated by it).
    pub fn recipe(
        &self,
        spec: &EnvSpec,
        passed: &[(String, Option<String>)],
        as_of: Option<&str>,
    ) -> Recipe {
        let mut files: Vec<(String, String)> = Vec::new();
        let mut steps: Vec<Step> = Vec::new();
        // The environment every step starts from, as a local build's steps get it.
        let mut env = String::from(
            "export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1\n\
             unset PYTHONDONTWRITEBYTECODE\n",
        );
        for (k, in_image) in passed {
            if let Some(p) = in_image {
                env.push_str(&format!("export {k}={}\n", shell_quote(p)));
            }
        }
        env.push_str(&format!(
            "export VIRTUAL_ENV={IMAGE_VENV} PATH={IMAGE_VENV}/bin:\"$PATH\"\n"
        ));
        for (k, v) in &spec.env {
            env.push_str(&format!("export {k}={}\n", shell_quote(v)));
        }
        files.push(("env.sh".into(), env));

        // The spec's interpreter as the image names it: `X.Y` is `pythonX.Y` on its PATH.
        let py = if spec
            .python
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
        {
            format!("python{}", spec.python)
        } else {
            spec.python.clone()
        };
        let needs_pip = !spec.requirements.is_empty()
            || spec.install.is_some()
            || !spec.pre_install.is_empty()
            || !spec.extras.is_empty();
        let base = &self.base;
        add_step(
            &mut files,
            &mut steps,
            "venv",
            format!(
                "command -v {q} >/dev/null 2>&1 || {{ echo \"dei: the base image {base} has no \
                 interpreter {py} on its PATH; build on one that has it (--exec-base-image)\" >&2; \
                 exit 127; }}\n{q} -m venv {flag}{IMAGE_VENV}",
                q = shell_quote(&py),
                flag = if needs_pip { "" } else { "--without-pip " },
            ),
            false,
            None,
        );
        let (pins, rest): (Vec<&String>, Vec<&String>) =
            if spec.cutoff.is_some() && spec.exempt_pins {
                spec.requirements.iter().partition(|r| r.contains("=="))
            } else {
                (vec![], spec.requirements.iter().collect())
            };
        if !pins.is_empty() {
            let text = pins.iter().map(|r| format!("{r}\n")).collect();
            let file = "requirements-pins.txt";
            let command = format!("python -m pip install -q -r {IMAGE_BUILD}/{file}");
            add_step(
                &mut files,
                &mut steps,
                "requirements (pins)",
                command,
                false,
                None,
            );
            files.push((file.into(), text));
        }
        let cutoff = spec
            .cutoff
            .as_deref()
            .filter(|_| !rest.is_empty() || spec.install.is_some() || !spec.pre_install.is_empty());
        if cutoff.is_some() {
            add_step(
                &mut files,
                &mut steps,
                "pip for the cutoff",
                PIP_FOR_CUTOFF.into(),
                false,
                None,
            );
        }
        if !rest.is_empty() {
            let text = rest.iter().map(|r| format!("{r}\n")).collect();
            let command = format!("python -m pip install -q -r {IMAGE_BUILD}/requirements.txt");
            add_step(
                &mut files,
                &mut steps,
                "requirements",
                command,
                false,
                cutoff,
            );
            files.push(("requirements.txt".into(), text));
        }
        let work_tree = spec.needs_work_tree();
        for (i, line) in spec.pre_install.iter().enumerate() {
            let name = format!("pre_install[{i}]");
            add_step(&mut files, &mut steps, &name, line.clone(), true, cutoff);
        }
        if let Some(install) = &spec.install {
            add_step(
                &mut files,
                &mut steps,
                "install",
                install.clone(),
                true,
                cutoff,
            );
        }
        if !spec.extras.is_empty() {
            let args = extras_pip_args(&spec.extras);
            let cmd = format!("python -m pip install -q {args}");
            // As a local build does: as of the commit when pip can be told so, else as the
            // packages are today; a spec's own cutoff already binds them.
            let command = match (spec.cutoff.as_deref(), as_of) {
                (Some(_), _) | (None, None) => cmd,
                (None, Some(t)) => {
                    let vars: String = cutoff_vars(t)
                        .iter()
                        .map(|(k, v)| format!("{k}={} ", shell_quote(v)))
                        .collect();
                    format!("{{ {PIP_FOR_CUTOFF} && {vars}{cmd}; }} || {cmd}")
                }
            };
            let cutoff = spec.cutoff.as_deref();
            add_step(&mut files, &mut steps, "extras", command, false, cutoff);
        }

        let mut c = format!(
            "# Written by dei from the environment spec of {} {}.\nFROM {base}\n",
            spec.repo, spec.version
        );
        for (k, _) in passed {
            if !is_predefined_arg(k) {
                c.push_str(&format!("ARG {k}\n"));
            }
        }
        c.push_str(&format!("COPY dei {IMAGE_BUILD}\n"));
        if work_tree {
            c.push_str(&format!("COPY src {IMAGE_SRC}\n"));
        }
        for s in &steps {
            c.push_str(&format!("RUN /bin/sh {IMAGE_BUILD}/{}\n", s.file));
        }
        Recipe {
            containerfile: c,
            steps,
            files,
            work_tree,
        }
    }

    /// Build (or reuse) the image of `spec` from the git repository `repo` at `commit`
    /// (default: the spec's setup commit). A failure names the step that failed.
    pub fn build(
        &self,
        spec: &EnvSpec,
        repo: &Path,
        commit: Option<&str>,
    ) -> Result<Env, EnvError> {
        let fail = |step: &str, detail: String, tail: String| spec.step_error(step, detail, tail);
        let bin = self.engine.binary();
        let commit = spec.build_commit(commit)?;
        let tag = self.tag(spec, &commit);
        let images = self.cache_dir.join("images");
        let name = tag.rsplit(':').next().unwrap_or(&tag);
        let dir = images.join(name);
        let lock = spec.lock_build(&images, name)?;
        let env = |build_seconds, steps, cached| Env {
            spec: spec.clone(),
            dir: dir.clone(),
            venv: PathBuf::from(IMAGE_VENV),
            image: Some(tag.clone()),
            build_seconds,
            steps,
            cached,
        };
        let exists = |image: &str| -> Result<bool, String> {
            let out = engine_command(&self.program)
                .args(["image", "inspect", "--format", "{{.Id}}", image])
                .stdin(Stdio::null())
                .output();
            match out {
                Ok(o) => Ok(o.status.success()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                    "`{}` is not installed (not on PATH); install it or run without \
                     --exec-env-in-image",
                    self.program
                )),
                Err(e) => Err(format!("cannot run `{}`: {e}", self.program)),
            }
        };
        let have =
            exists(&tag).map_err(|e| fail("image build", format!("{bin}: {e}"), String::new()))?;
        if have && dir.join("ok").exists() {
            return Ok(env(0.0, vec![], true));
        }
        if !exists(&self.base).unwrap_or(false) {
            return Err(fail(
                "base image",
                format!(
                    "{bin}: image {} not found; it must have the spec's Python ({}): {bin} pull {}, \
                     or {bin} load -i FILE, or name another with --exec-base-image",
                    self.base, spec.python, self.base
                ),
                String::new(),
            ));
        }
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        let context = dir.join("context");
        std::fs::create_dir_all(context.join("dei"))
            .map_err(|e| spec.cache_error("create", &context, e))?;
        let what = format!("the Python environment of {} {}", spec.repo, spec.version);
        crate::model::notify::notice(&format!(
            "exec: building {what} (python: {}) into the image {tag} on {}; it is kept for later runs",
            spec.python, self.base
        ));
        let start = Instant::now();
        let result = self.build_image(spec, repo, &commit, &tag, &dir);
        let seconds = start.elapsed().as_secs_f64();
        // The context is not needed once the image is there (it holds a copy of the work tree).
        let _ = std::fs::remove_dir_all(&context);
        if let Err((step, detail, tail)) = result {
            crate::model::notify::notice(&format!(
                "exec: could not build {what} ({seconds:.1} s): step `{step}`: {detail}"
            ));
            return Err(fail(&step, detail, tail));
        }
        std::fs::write(dir.join("ok"), tag.as_bytes())
            .map_err(|e| spec.cache_error("write", &dir, e))?;
        drop(lock);
        crate::model::notify::notice(&format!("exec: built {what} into {tag} in {seconds:.1} s"));
        Ok(env(seconds, vec![("image build".into(), seconds)], false))
    }

    fn build_image(
        &self,
        spec: &EnvSpec,
        repo: &Path,
        commit: &str,
        tag: &str,
        dir: &Path,
    ) -> Result<(), (String, String, String)> {
        let bin = self.engine.binary();
        let context = dir.join("context");
        let io = |step: &str, e: std::io::Error| (step.to_string(), e.to_string(), String::new());
        // The user's pip and uv settings; one naming a host file is copied into the context.
        let mut passed: Vec<(String, Option<String>)> = Vec::new();
        let mut vars: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| passes_to_builds(k))
            .collect();
        vars.sort();
        for (k, v) in vars {
            let host = Path::new(&v);
            if host.is_absolute() && host.exists() {
                let to = context.join("dei").join("host").join(&k);
                copy_all(host, &to).map_err(|e| io("context", e))?;
                passed.push((k.clone(), Some(format!("{IMAGE_BUILD}/host/{k}"))));
            } else {
                passed.push((k, None));
            }
        }
        let as_of = if spec.extras.is_empty() {
            None
        } else {
            commit_time(repo, commit)
        };
        let recipe = self.recipe(spec, &passed, as_of.as_deref());
        for (name, text) in &recipe.files {
            std::fs::write(context.join("dei").join(name), text).map_err(|e| io("context", e))?;
        }
        let file = dir.join("Containerfile");
        std::fs::write(&file, &recipe.containerfile).map_err(|e| io("context", e))?;
        if recipe.work_tree {
            // A clone of its own (not `--shared`): the image's work tree keeps its `.git`
            // (setuptools_scm reads it) without the host's object folder.
            let src = context.join("src");
            let out = Command::new("git")
                .arg("clone")
                .args(["-q", "--no-checkout"])
                .arg(repo)
                .arg(&src)
                .stdin(Stdio::null())
                .output()
                .and_then(|o| {
                    if !o.status.success() {
                        return Ok(o);
                    }
                    Command::new("git")
                        .arg("-C")
                        .arg(&src)
                        .args(["checkout", "-q", commit])
                        .stdin(Stdio::null())
                        .output()
                });
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    return Err((
                        "checkout".into(),
                        format!("cannot check {} out at {commit}", repo.display()),
                        String::from_utf8_lossy(&o.stderr).into_owned(),
                    ))
                }
                Err(e) => return Err(io("checkout", e)),
            }
        }
        let log_path = dir.join("build.log");
        let log = std::fs::File::create(&log_path).map_err(|e| io("image build", e))?;
        let mut cmd = engine_command(&self.program);
        cmd.args(["build", "--force-rm", "--tag", tag, "--file"])
            .arg(&file);
        for (k, _) in &passed {
            cmd.args(["--build-arg", k]);
        }
        cmd.arg(&context)
            .stdin(Stdio::null())
            .stdout(Stdio::from(
                log.try_clone().map_err(|e| io("image build", e))?,
            ))
            .stderr(Stdio::from(log));
        let limit = self.step_timeout * (recipe.steps.len().max(1) as u32);
        let mut child = cmd.spawn().map_err(|e| {
            (
                "image build".to_string(),
                format!("{bin}: cannot run `{} build`: {e}", self.program),
                String::new(),
            )
        })?;
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) if start.elapsed() >= limit => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(io("image build", e)),
            }
        };
        if status.is_some_and(|s| s.success()) {
            if !spec.generated.is_empty() {
                self.copy_out_generated(spec, tag, dir)?;
            }
            return Ok(());
        }
        let output = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: String = {
            let n = output.chars().count();
            output.chars().skip(n.saturating_sub(3000)).collect()
        };
        let how = match status {
            None => format!("took longer than {:.0}s", limit.as_secs_f64()),
            Some(s) => match s.code() {
                Some(c) => format!("exited with status {c}"),
                None => "was killed by a signal".into(),
            },
        };
        Err(match failed_step(&recipe, &output) {
            Some((line, step)) => (
                step.name.clone(),
                format!(
                    "`{}` failed in `{bin} build` (Containerfile line {line}: `RUN /bin/sh \
                     {IMAGE_BUILD}/{}`; the build {how}; log: {})",
                    step.command.lines().last().unwrap_or_default(),
                    step.file,
                    log_path.display()
                ),
                tail,
            ),
            None => (
                "image build".into(),
                format!(
                    "`{} build` of {tag} {how} (Containerfile: {}; log: {})",
                    self.program,
                    file.display(),
                    log_path.display()
                ),
                tail,
            ),
        })
    }

    /// Copy the image's work tree out into `dir/src` and list the spec's generated files there
    /// (they go into every sandbox tree, as from a local build's work tree).
    fn copy_out_generated(
        &self,
        spec: &EnvSpec,
        tag: &str,
        dir: &Path,
    ) -> Result<(), (String, String, String)> {
        let step = "generated files";
        let name = format!("dei-{}-generated", std::process::id());
        let run = |args: &[&str]| -> Result<(), (String, String, String)> {
            let o = engine_command(&self.program)
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| (step.to_string(), e.to_string(), String::new()))?;
            if o.status.success() {
                Ok(())
            } else {
                Err((
                    step.to_string(),
                    format!("`{} {}` failed", self.program, args.join(" ")),
                    String::from_utf8_lossy(&o.stderr).into_owned(),
                ))
            }
        };
        let src = dir.join("src");
        run(&["create", "--name", &name, tag, "/bin/true"])?;
        let copied = run(&["cp", &format!("{name}:{IMAGE_SRC}"), &src.to_string_lossy()]);
        let _ = run(&["rm", "-f", &name]);
        copied?;
        list_generated(spec, &src, dir).map_err(|e| (step.to_string(), e, String::new()))
    }
}

/// Add the step `name` running `command` (in the work tree when `in_src`, resolving as of
/// `cutoff` when given): its script is `NN-name.sh`.
fn add_step(
    files: &mut Vec<(String, String)>,
    steps: &mut Vec<Step>,
    name: &str,
    command: String,
    in_src: bool,
    cutoff: Option<&str>,
) {
    let file = format!(
        "{:02}-{}.sh",
        steps.len() + 1,
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect::<String>()
    );
    let mut script = format!("# dei build step: {name}\n. {IMAGE_BUILD}/env.sh\n");
    if let Some(c) = cutoff {
        for (k, v) in cutoff_vars(c) {
            script.push_str(&format!("export {k}={}\n", shell_quote(&v)));
        }
    }
    if in_src {
        script.push_str(&format!("cd {IMAGE_SRC}\n"));
    }
    script.push_str(&command);
    script.push('\n');
    files.push((file.clone(), script));
    steps.push(Step {
        name: name.to_string(),
        file,
        command,
    });
}

/// The step a failed build stopped at, and its Containerfile line (from 1): the last step
/// script the build's output names (podman, docker and BuildKit all echo the `RUN` line they
/// are at).
pub fn failed_step<'a>(recipe: &'a Recipe, output: &str) -> Option<(usize, &'a Step)> {
    let (_, step) = recipe
        .steps
        .iter()
        .filter_map(|s| {
            output
                .rfind(&format!("{IMAGE_BUILD}/{}", s.file))
                .map(|at| (at, s))
        })
        .max_by_key(|(at, _)| *at)?;
    let line = recipe
        .containerfile
        .lines()
        .position(|l| l.ends_with(&format!("/{}", step.file)))?;
    Some((line + 1, step))
}

/// Build arguments the engines define themselves (the proxy variables): no `ARG` line.
fn is_predefined_arg(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "http_proxy" | "https_proxy" | "no_proxy" | "all_proxy" | "ftp_proxy"
    )
}

/// Copy a file, or a folder and everything in it, to `to`.
fn copy_all(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_all(&e.path(), &to.join(e.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::env::{spec_for, Overrides};

    fn builder() -> ImageBuilder {
        ImageBuilder::new(Engine::Podman, "python:3.9-slim", Path::new("/cache"))
    }

    fn spec() -> EnvSpec {
        let mut s = spec_for(
            "owner/repo",
            "1.0",
            &Overrides {
                python: Some("3.9".into()),
                setup: Some("python -m pip install -e .".into()),
                test_cmd: Some("pytest -rA".into()),
                loopback: false,
            },
        )
        .unwrap();
        s.requirements = vec!["six==1.16.0".into(), "iniconfig".into()];
        s.cutoff = Some("2023-01-01T00:00:00Z".into());
        s.exempt_pins = true;
        s.env.insert("LANG".into(), "C.UTF-8".into());
        s
    }

    #[test]
    fn the_containerfile_runs_the_specs_steps_in_order() {
        let passed = vec![
            (
                "PIP_CERT".to_string(),
                Some(format!("{IMAGE_BUILD}/host/PIP_CERT")),
            ),
            ("https_proxy".to_string(), None),
        ];
        let r = builder().recipe(&spec(), &passed, None);
        let names: Vec<&str> = r.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "venv",
                "requirements (pins)",
                "pip for the cutoff",
                "requirements",
                "install"
            ]
        );
        assert!(r.work_tree);
        let lines: Vec<&str> = r.containerfile.lines().collect();
        assert_eq!(lines[1], "FROM python:3.9-slim");
        // The proxy is the engine's own build argument; pip's setting is declared.
        assert!(lines.contains(&"ARG PIP_CERT"));
        assert!(!lines.iter().any(|l| l.contains("https_proxy")));
        assert!(lines.contains(&"COPY src /opt/dei/src"));
        assert_eq!(
            lines.last().copied(),
            Some("RUN /bin/sh /opt/dei/build/05-install.sh")
        );
        let file = |n: &str| &r.files.iter().find(|(f, _)| f == n).unwrap().1;
        assert!(file("01-venv.sh").contains("python3.9 -m venv /opt/dei/venv"));
        assert_eq!(file("requirements-pins.txt"), "six==1.16.0\n");
        assert_eq!(file("requirements.txt"), "iniconfig\n");
        // The cutoff binds what comes after the pins; the install runs in the work tree.
        assert!(!file("02-requirements__pins_.sh").contains("PIP_UPLOADED_PRIOR_TO"));
        let install = file("05-install.sh");
        assert!(install.contains("export PIP_UPLOADED_PRIOR_TO=2023-01-01T00:00:00Z"));
        assert!(install.contains("cd /opt/dei/src\npython -m pip install -e ."));
        let env = file("env.sh");
        assert!(env.contains("export PIP_CERT=/opt/dei/build/host/PIP_CERT"));
        assert!(env.contains("export LANG=C.UTF-8"));
        assert!(env.contains("PATH=/opt/dei/venv/bin:"));
    }

    #[test]
    fn a_spec_with_nothing_to_install_gets_a_venv_without_pip() {
        let s = spec_for(
            "",
            "",
            &Overrides {
                test_cmd: Some("python t.py".into()),
                ..Overrides::default()
            },
        )
        .unwrap();
        let r = builder().recipe(&s, &[], None);
        assert_eq!(r.steps.len(), 1);
        assert!(!r.work_tree);
        assert!(r.steps[0]
            .command
            .ends_with("python3 -m venv --without-pip /opt/dei/venv"));
    }

    #[test]
    fn extras_come_as_of_the_commit_or_as_they_are_today() {
        let mut s = spec();
        s.cutoff = None;
        s.extras = vec!["numpy".into()];
        let r = builder().recipe(&s, &[], Some("2020-02-02T00:00:00Z"));
        let extras = r.steps.last().unwrap();
        assert_eq!(extras.name, "extras");
        let plain = "python -m pip install -q --only-binary numpy numpy";
        assert_eq!(
            extras.command,
            format!(
                "{{ {PIP_FOR_CUTOFF} && PIP_UPLOADED_PRIOR_TO=2020-02-02T00:00:00Z \
                 UV_EXCLUDE_NEWER=2020-02-02T00:00:00Z {plain}; }} || {plain}"
            )
        );
        // No commit time: as they are today.
        let r = builder().recipe(&s, &[], None);
        assert_eq!(r.steps.last().unwrap().command, plain);
    }

    #[test]
    fn a_failed_build_names_the_step_and_its_line() {
        let r = builder().recipe(&spec(), &[], None);
        let podman = "STEP 5/7: RUN /bin/sh /opt/dei/build/02-requirements__pins_.sh\n\
                      STEP 6/7: RUN /bin/sh /opt/dei/build/04-requirements.sh\n\
                      ERROR: No matching distribution\n\
                      Error: building at STEP \"RUN /bin/sh /opt/dei/build/04-requirements.sh\": \
                      while running runtime: exit status 1\n";
        let (line, step) = failed_step(&r, podman).unwrap();
        assert_eq!(step.name, "requirements");
        assert_eq!(
            r.containerfile.lines().nth(line - 1),
            Some("RUN /bin/sh /opt/dei/build/04-requirements.sh")
        );
        assert!(failed_step(&r, "Error: base image not found").is_none());
    }

    #[test]
    fn tags_follow_the_spec_and_the_base() {
        let b = builder();
        let s = spec();
        let t = b.tag(&s, "abc");
        assert!(t.starts_with("localhost/dei-env:owner_repo_1.0-"), "{t}");
        assert_eq!(t, b.tag(&s, "abc"));
        assert_ne!(t, b.tag(&s, "abd"));
        let other = ImageBuilder::new(Engine::Podman, "python:3.10-slim", Path::new("/cache"));
        assert_ne!(t, other.tag(&s, "abc"));
    }
}
