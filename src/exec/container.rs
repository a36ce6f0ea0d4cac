//! Run sandbox jobs in containers (podman or docker) behind the same [`Backend`] interface as
//! [`LocalBackend`](super::sandbox::LocalBackend): `dei rank --exec --exec-backend podman`.
//!
//! The tree is written into a private host folder as the local backend writes it (a
//! `dei-sandbox-<pid>-…` folder under [`sandbox_root`]) and bind-mounted into the container at
//! the same path, so that what a run prints about the repository's files reads as the local
//! backend's. The job runs with:
//! - `--network none` (the container's own loopback is up there, which is also what a job that
//!   asks for [`Job::loopback`] gets: nothing outside becomes reachable);
//! - `--memory` (and `--memory-swap`, so no swap), `--pids-limit` and `--cpus` from the job's
//!   [`Limits`], plus the same CPU-time, file-size and address-space rlimits as the local
//!   backend (set by `ulimit` in a small shell that runs the command as its child, so that the
//!   command is never the container's pid 1);
//! - a `--read-only` root, no capabilities (`--cap-drop=all`), and `/tmp` an empty tmpfs no
//!   one may write to: the tree, its home and temp folders are the only writable paths, as with
//!   the local backend, and a write elsewhere fails as there (`EACCES` in `/tmp`), so that the
//!   evidence is the same (`TMPDIR` is in the sandbox folder); an image used as it is gets a
//!   writable tmpfs `/tmp` of its own;
//! - a wall-clock timeout that kills and removes the container; containers are named
//!   `dei-<pid>-<n>`, started with `--rm` and removed with `rm -f` on every other path out
//!   (timeout, error, panic), and those of a dei process that is gone are swept on the first run;
//! - output capped as the local backend caps it (one pipe, head and tail kept).
//!
//! Images ([`Image`]): an image used as it is (a SWE-bench image, `--exec-image`, possibly a
//! template over `{instance_id}`), whose own Python runs the job in the harness's layout (the
//! tree at `/testbed`, conda env `testbed` under `/opt/miniconda3`); or a host-compatible base
//! image (default [`DEFAULT_BASE_IMAGE`]) into which the host's environment folders — the venv
//! dei built and the interpreter it points to — are mounted read-only at their own paths, so
//! that the evidence is the local backend's. A job whose environment was built into an image
//! ([`Job::image`], see [`super::image`]) runs in that image instead of the base, with nothing
//! of the host's environment mounted (only the files its command names by path).

use super::sandbox::{
    capture, limit_hit, pipe, process_exists, sandbox_folder, sandbox_root, write_tree, Backend,
    Isolation, Job, Outcome, Tree,
};
use anyhow::{bail, Context as _};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The base image of host-environment runs when none is named: what
/// `examples/container-base.sh` builds.
pub const DEFAULT_BASE_IMAGE: &str = "localhost/dei-base:bookworm";
/// Where the SWE-bench harness's images keep the repository.
pub const SWEBENCH_TREE: &str = "/testbed";
/// The `PATH` of a job in an image used as it is: the harness's conda env `testbed` first.
pub const SWEBENCH_PATH: &str = "/opt/miniconda3/envs/testbed/bin:/opt/miniconda3/bin:\
/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The container engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Podman,
    Docker,
}

impl Engine {
    /// The command, and the backend's name.
    pub fn binary(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker",
        }
    }
}

/// Which image a job runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Image {
    /// Used as it is, with its own Python (`--exec-image`); `{instance_id}` in it is replaced
    /// by the job's [`Job::instance_id`]. The tree is mounted at [`SWEBENCH_TREE`].
    AsIs(String),
    /// A base image compatible with the host, the host's environment mounted read-only into it
    /// (`--exec-base-image`).
    HostEnv(String),
}

/// Runs jobs in podman or docker containers; see the module docs.
#[derive(Debug)]
pub struct ContainerBackend {
    pub engine: Engine,
    /// The engine's command (default: [`Engine::binary`] on `PATH`).
    pub program: String,
    pub image: Image,
    /// CPUs each container may use (`--cpus`).
    pub cpus: f64,
    /// Where sandbox folders go ([`sandbox_root`] when `None`).
    pub temp_root: Option<PathBuf>,
    /// More host paths mounted read-only at their own paths (host-environment runs).
    pub mounts: Vec<PathBuf>,
    /// Images already found, and the error of one that was not.
    checked: Mutex<std::collections::HashMap<String, Result<(), String>>>,
}

impl ContainerBackend {
    pub fn new(engine: Engine, image: Image) -> ContainerBackend {
        ContainerBackend {
            engine,
            program: engine.binary().to_string(),
            image,
            cpus: 1.0,
            temp_root: None,
            mounts: Vec::new(),
            checked: Mutex::default(),
        }
    }

    /// The image `job` runs in.
    pub fn image_for(&self, job: &Job) -> anyhow::Result<String> {
        match &self.image {
            // An environment built into an image runs there; the base is for the others.
            Image::HostEnv(i) => Ok(job.image.clone().unwrap_or_else(|| i.clone())),
            Image::AsIs(t) if t.contains("{instance_id}") => match &job.instance_id {
                Some(id) => Ok(t.replace("{instance_id}", &swebench_tag(id))),
                None => bail!("the image template {t} needs an instance id, and this run has none"),
            },
            Image::AsIs(i) => Ok(i.clone()),
        }
    }

    /// Check once per image that the engine runs and has it: a clear error naming the step.
    fn check_image(&self, image: &str) -> anyhow::Result<()> {
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        let result = checked
            .entry(image.to_string())
            .or_insert_with(|| self.find_image(image))
            .clone();
        result.map_err(anyhow::Error::msg)
    }

    fn find_image(&self, image: &str) -> Result<(), String> {
        let bin = self.engine.binary();
        let out = Command::new(&self.program)
            .args(["image", "inspect", "--format", "{{.Id}}", image])
            .stdin(Stdio::null())
            .output();
        match out {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                "{bin}: `{}` is not installed (not on PATH); install it (Debian, as root: \
                 apt-get install -y {bin}{}) or run with --exec-backend local",
                self.program,
                if self.engine == Engine::Podman {
                    " runc"
                } else {
                    ""
                }
            )),
            Err(e) => Err(format!("{bin}: cannot run `{}`: {e}", self.program)),
            Ok(o) if o.status.success() => Ok(()),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                let missing = err.contains("no such image")
                    || err.contains("No such image")
                    || err.contains("image not known")
                    || err.contains("failed to find image");
                if missing {
                    let how = if image == DEFAULT_BASE_IMAGE {
                        "bash examples/container-base.sh (debootstrap + import, no registry)"
                            .to_string()
                    } else {
                        format!("{bin} pull {image}, or {bin} load -i FILE")
                    };
                    Err(format!(
                        "{bin}: image {image} not found; build it with: {how}"
                    ))
                } else {
                    Err(format!(
                        "{bin}: cannot inspect image {image}: {}",
                        err.trim()
                    ))
                }
            }
        }
    }

    /// The engine's arguments for `job` in container `name`, over the sandbox `folder` (home and
    /// temp files) and the tree `dir` (both writable), in `image`.
    pub fn run_args(
        &self,
        name: &str,
        image: &str,
        folder: &Path,
        dir: &Path,
        job: &Job,
    ) -> Vec<String> {
        let l = &job.limits;
        let mut a: Vec<String> = vec![
            "run".into(),
            "--rm".into(),
            "--name".into(),
            name.into(),
            "--pull".into(),
            "never".into(),
            "--interactive=false".into(),
            "--read-only".into(),
            format!("--memory={}", l.memory_bytes),
            format!("--memory-swap={}", l.memory_bytes),
            format!("--pids-limit={}", l.processes.max(1)),
            format!("--cpus={}", self.cpus),
            // Root in the container without root's powers: no permission check bypassed, no
            // mounts, no raw sockets.
            "--cap-drop=all".into(),
            "--security-opt=no-new-privileges".into(),
        ];
        if !job.network {
            // The loopback of the container's own namespace is up with `none`: a server the
            // job starts (Job::loopback) is reachable from within, nothing else.
            a.push("--network=none".into());
        }
        let as_is = matches!(self.image, Image::AsIs(_));
        if as_is {
            // The image's own tests may write to /tmp: a tmpfs of the container's.
            a.push("--tmpfs".into());
            a.push("/tmp:rw,exec,mode=1777".into());
        } else {
            // With the host's environment the evidence is the local backend's, where a write
            // outside the sandbox folder (TMPDIR is in it) is refused with EACCES (Landlock):
            // /tmp and /var/tmp are empty folders no one may write to (with no capabilities,
            // root's own permission checks hold), and podman adds no tmpfs of its own.
            // (A tmpfs's mode is not kept by podman 4.3: an empty folder of the sandbox's.)
            let closed = folder.join("closed");
            for t in ["/tmp", "/var/tmp"] {
                a.push("--volume".into());
                a.push(format!("{}:{t}:rw", closed.display()));
            }
            if self.engine == Engine::Podman {
                a.push("--read-only-tmpfs=false".into());
            }
        }
        let workdir = if as_is {
            PathBuf::from(SWEBENCH_TREE)
        } else {
            dir.to_path_buf()
        };
        let mut volume = |host: &Path, inside: &Path, mode: &str| {
            a.push("--volume".into());
            a.push(format!("{}:{}:{mode}", host.display(), inside.display()));
        };
        volume(folder, folder, "rw");
        if !dir.starts_with(folder) || as_is {
            volume(dir, &workdir, "rw");
        }
        if !as_is {
            for m in self.host_mounts(job) {
                volume(&m, &m, "ro");
            }
        }
        a.push("--workdir".into());
        a.push(workdir.display().to_string());
        let mut env: Vec<(String, String)> = Vec::new();
        if !as_is || job.inherit_env {
            for k in super::sandbox::PASSED_ENV {
                if let Some(v) = std::env::var_os(k) {
                    env.push(((*k).into(), v.to_string_lossy().into_owned()));
                }
            }
        }
        env.push(("HOME".into(), folder.join("home").display().to_string()));
        env.push(("TMPDIR".into(), folder.join("tmp").display().to_string()));
        env.push(("PYTHONDONTWRITEBYTECODE".into(), "1".into()));
        for (k, v) in &job.env {
            // The host's venv means nothing in an image used as it is: its own Python runs.
            if as_is && (k == "PATH" || k == "VIRTUAL_ENV") {
                continue;
            }
            env.push((k.clone(), v.clone()));
        }
        if as_is {
            env.push(("PATH".into(), SWEBENCH_PATH.into()));
        }
        for (k, v) in env {
            a.push("--env".into());
            a.push(format!("{k}={v}"));
        }
        a.push("--entrypoint".into());
        a.push("/bin/sh".into());
        a.push(image.into());
        a.push("-c".into());
        a.push(wrapper(l));
        a.push("/bin/sh".into());
        a.push(job.command.clone());
        a
    }

    /// Host paths mounted read-only at their own paths for a host-environment job: the venv
    /// (`VIRTUAL_ENV`), the interpreter's installation it points to (unless it is the system's,
    /// which the base image has), the backend's [`ContainerBackend::mounts`], and files the
    /// command names by absolute path (a test runner of the user's, `--test-cmd 'python
    /// /path/runner.py'`).
    pub fn host_mounts(&self, job: &Job) -> Vec<PathBuf> {
        let mut out: BTreeSet<PathBuf> = self.mounts.iter().cloned().collect();
        // A job in an image built from its environment has its venv there.
        let venv = job
            .env
            .iter()
            .find(|(k, _)| k == "VIRTUAL_ENV")
            .filter(|_| job.image.is_none());
        if let Some((_, venv)) = venv {
            let venv = PathBuf::from(venv);
            if venv.is_dir() {
                if let Some(prefix) = interpreter_prefix(&venv) {
                    out.insert(prefix);
                }
                // An editable install (`pip install -e .`) points into the environment's own
                // work tree beside the venv, which a subprocess that imports the installed
                // package (not the tree's copy on `PYTHONPATH`) reads.
                if let Some(src) = venv.parent().map(|d| d.join("src")).filter(|d| d.is_dir()) {
                    out.insert(src);
                }
                out.insert(venv);
            }
        }
        for word in job
            .command
            .split(|c: char| c.is_whitespace() || "'\"".contains(c))
        {
            let p = Path::new(word);
            if p.is_absolute() && p.is_file() && !is_system_path(p) {
                out.insert(p.to_path_buf());
            }
        }
        // A path inside another mounted one needs no mount of its own.
        let all: Vec<PathBuf> = out.into_iter().collect();
        all.iter()
            .filter(|p| !all.iter().any(|q| q != *p && p.starts_with(q)))
            .cloned()
            .collect()
    }

    fn run_container(&self, folder: &Path, dir: &Path, job: &Job) -> anyhow::Result<Outcome> {
        let image = self.image_for(job)?;
        self.check_image(&image)?;
        sweep_once(&self.program);
        std::fs::create_dir_all(folder.join("home"))?;
        std::fs::create_dir_all(folder.join("tmp"))?;
        if matches!(self.image, Image::HostEnv(_)) {
            let closed = folder.join("closed");
            std::fs::create_dir_all(&closed)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555))?;
            }
        }
        let name = container_name();
        let args = self.run_args(&name, &image, folder, dir, job);
        let mut cmd = Command::new(&self.program);
        cmd.args(&args).stdin(Stdio::null());
        if std::env::var_os("CONTAINERS_CONF").is_none() {
            if let Some(conf) = default_containers_conf() {
                cmd.env("CONTAINERS_CONF", conf);
            }
        }
        let (reader, writer) = pipe()?;
        cmd.stdout(Stdio::from(writer.try_clone()?))
            .stderr(Stdio::from(writer));
        #[cfg(unix)]
        {
            // Its own group: a Ctrl-C at the terminal reaches dei, which removes the container.
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        // From here on the container is removed on every path out but a normal end (--rm).
        let mut guard = Removal {
            program: self.program.clone(),
            name: name.clone(),
            armed: true,
        };
        let start = Instant::now();
        let spawned = cmd.spawn();
        drop(cmd);
        let mut child = spawned.with_context(|| {
            format!(
                "{}: cannot start a container for `{}`",
                self.engine.binary(),
                job.command
            )
        })?;
        let cap = job.limits.output_bytes;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(capture(reader, cap));
        });
        let (status, timed_out) = loop {
            if let Some(st) = child.try_wait()? {
                break (Some(st), false);
            }
            if start.elapsed() >= job.limits.timeout {
                guard.remove();
                let _ = child.kill();
                break (child.wait().ok(), true);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let seconds = start.elapsed().as_secs_f64();
        let code = status.and_then(|s| s.code());
        if !timed_out && code.is_some() {
            guard.armed = false;
        }
        drop(guard);
        let (mut output, output_bytes, truncated) = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| ("[dei: output lost]".into(), 0, false));
        let engine_failed = code == Some(125)
            && (output.starts_with("Error: ")
                || output.contains("\nError: ")
                || output.contains("docker: Error"));
        if engine_failed && !timed_out {
            bail!(
                "{}: the container for `{}` did not start: {}",
                self.engine.binary(),
                job.command,
                output.trim()
            );
        }
        // The wrapper shell reports a command ended by signal N as 128 + N, as the engine does
        // for its pid 1: read back as the signal, as the local backend sees it.
        let (code, signal) = if timed_out {
            (None, Some(9))
        } else {
            match code {
                Some(c) if (129..160).contains(&c) => (None, Some(c - 128)),
                c => (c, None),
            }
        };
        if timed_out {
            output.push_str(&format!(
                "\n[dei: killed after {:.0}s]\n",
                job.limits.timeout.as_secs_f64()
            ));
        }
        let limit_hit = limit_hit(signal, code, &output, timed_out);
        Ok(Outcome {
            code,
            signal,
            timed_out,
            seconds,
            cpu_seconds: None,
            waited_seconds: None,
            output,
            output_bytes,
            truncated,
            limit_hit,
            isolation: Isolation {
                network_off: !job.network,
                writes_confined: true,
                processes_contained: true,
                processes_limited: true,
                missing: Vec::new(),
            },
        })
    }
}

impl Backend for ContainerBackend {
    fn name(&self) -> &str {
        self.engine.binary()
    }

    fn run(&self, tree: &Tree, job: &Job) -> anyhow::Result<Outcome> {
        let root = self.temp_root.clone().unwrap_or_else(sandbox_root);
        let (guard, folder) = sandbox_folder(&root)?;
        let dir = folder.join("tree");
        write_tree(tree, &dir)?;
        let out = self.run_container(&folder, &dir, job);
        drop(guard);
        out
    }

    fn run_in(&self, dir: &Path, job: &Job) -> anyhow::Result<Outcome> {
        let (guard, folder) = sandbox_folder(&std::env::temp_dir())?;
        let out = self.run_container(&folder, dir, job);
        drop(guard);
        out
    }

    fn snapshot(&self, tree: &Tree) -> anyhow::Result<super::sandbox::Snapshot> {
        super::sandbox::Snapshot::write(tree, self.temp_root.as_deref())
    }
}

/// The shell script the container runs: the local backend's rlimits, then the command (`$1`)
/// as a child, its status passed on.
fn wrapper(l: &super::sandbox::Limits) -> String {
    let kb = |b: u64| (b / 1024).max(1);
    format!(
        "ulimit -c 0; ulimit -t {}; ulimit -f {}; ulimit -v {}; /bin/sh -c \"$1\"; exit $?",
        l.cpu_seconds,
        kb(l.file_bytes),
        kb(l.memory_bytes)
    )
}

/// SWE-bench's image tag for an instance: its id lower-cased, `__` as `_1776_` (the harness's
/// `instance_image_key`).
pub fn swebench_tag(instance_id: &str) -> String {
    instance_id.replace("__", "_1776_").to_lowercase()
}

/// The installation prefix of the interpreter a venv points to (`home = PREFIX/bin` in its
/// `pyvenv.cfg`), unless it is the system's.
fn interpreter_prefix(venv: &Path) -> Option<PathBuf> {
    let cfg = std::fs::read_to_string(venv.join("pyvenv.cfg")).ok()?;
    let home = cfg.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "home").then(|| PathBuf::from(v.trim()))
    })?;
    let prefix = home.parent()?.to_path_buf();
    (!is_system_path(&prefix) && prefix.is_dir()).then_some(prefix)
}

/// A path the base image has of its own, which must not be covered by the host's (`/usr/local`
/// is not one: the base image's is empty).
fn is_system_path(p: &Path) -> bool {
    let s = p.to_string_lossy();
    if s == "/usr/local" || s.starts_with("/usr/local/") {
        return false;
    }
    s == "/"
        || [
            "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/sys", "/dev",
        ]
        .iter()
        .any(|sys| s == *sys || s.starts_with(&format!("{sys}/")))
}

/// `dei-<pid>-<n>`: a container of this process (the pid tells a later run whose it is).
fn container_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "dei-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The containers.conf `examples/container-base.sh` writes, when it is there.
fn default_containers_conf() -> Option<PathBuf> {
    let p = super::env::default_cache_dir().join("containers/containers.conf");
    p.is_file().then_some(p)
}

/// A command of the engine `program`, with the containers.conf `examples/container-base.sh`
/// writes when `CONTAINERS_CONF` is unset and that file is there.
pub(crate) fn engine_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    if std::env::var_os("CONTAINERS_CONF").is_none() {
        if let Some(conf) = default_containers_conf() {
            cmd.env("CONTAINERS_CONF", conf);
        }
    }
    cmd
}

/// Removes the container when dropped, while armed.
struct Removal {
    program: String,
    name: String,
    armed: bool,
}

impl Removal {
    fn remove(&mut self) {
        if self.armed {
            remove_container(&self.program, &self.name);
            self.armed = false;
        }
    }
}

impl Drop for Removal {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Kill and remove a container at once: `rm -f -t 0` (podman: no grace period before the
/// kill), or `rm -f` where the engine has no `-t` (docker's `rm -f` kills at once).
fn remove_container(program: &str, name: &str) {
    let run = |args: &[&str]| {
        engine_command(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !run(&["rm", "-f", "-t", "0", name]) {
        run(&["rm", "-f", name]);
    }
}

/// The names of the containers (running or not) whose name starts with `prefix`.
pub fn containers_named(program: &str, prefix: &str) -> Vec<String> {
    let out = Command::new(program)
        .args([
            "ps",
            "-a",
            "--filter",
            &format!("name={prefix}"),
            "--format",
            "{{.Names}}",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    out.map(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::trim)
            .filter(|n| n.starts_with(prefix))
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

/// The engines this process has run containers with.
static USED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Once per engine and process: remove the `dei-<pid>-*` containers of dei processes that no
/// longer exist (one killed with `kill -9` could not remove its own).
fn sweep_once(program: &str) {
    {
        let mut used = USED.lock().unwrap_or_else(|e| e.into_inner());
        if used.iter().any(|p| p == program) {
            return;
        }
        used.push(program.to_string());
    }
    for name in containers_named(program, "dei-") {
        let pid = name
            .strip_prefix("dei-")
            .and_then(|r| r.split_once('-'))
            .and_then(|(p, _)| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !process_exists(pid) {
                remove_container(program, &name);
            }
        }
    }
}

/// Remove this process's own containers, for a process about to quit without finishing its
/// runs (a second Ctrl-C, SIGTERM), with every engine it used. Returns how many were removed.
pub fn remove_own_containers() -> usize {
    let prefix = format!("dei-{}-", std::process::id());
    let used = USED.lock().map(|u| u.clone()).unwrap_or_default();
    let mut n = 0;
    for program in used {
        for name in containers_named(&program, &prefix) {
            remove_container(&program, &name);
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::sandbox::Limits;

    fn job(command: &str) -> Job {
        Job {
            command: command.into(),
            env: vec![("PYTHONPATH".into(), "src".into())],
            limits: Limits {
                timeout: Duration::from_secs(30),
                memory_bytes: 1 << 30,
                processes: 64,
                ..Limits::default()
            },
            ..Job::default()
        }
    }

    fn value<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[test]
    fn the_command_line_carries_the_jobs_limits_and_isolation() {
        let b = ContainerBackend::new(Engine::Podman, Image::HostEnv(DEFAULT_BASE_IMAGE.into()));
        let folder = Path::new("/tmp/dei-sandbox-1-x");
        let dir = folder.join("tree");
        let a = b.run_args(
            "dei-1-0",
            DEFAULT_BASE_IMAGE,
            folder,
            &dir,
            &job("pytest -x"),
        );
        assert_eq!(&a[..4], ["run", "--rm", "--name", "dei-1-0"]);
        for flag in [
            "--network=none",
            "--read-only",
            "--memory=1073741824",
            "--memory-swap=1073741824",
            "--pids-limit=64",
            "--cpus=1",
        ] {
            assert!(a.iter().any(|x| x == flag), "{flag} in {a:?}");
        }
        assert!(value(&a, "--tmpfs").is_empty());
        assert!(a.iter().any(|x| x == "--cap-drop=all"));
        assert!(a.iter().any(|x| x == "--read-only-tmpfs=false"));
        assert_eq!(
            value(&a, "--volume"),
            [
                "/tmp/dei-sandbox-1-x/closed:/tmp:rw",
                "/tmp/dei-sandbox-1-x/closed:/var/tmp:rw",
                "/tmp/dei-sandbox-1-x:/tmp/dei-sandbox-1-x:rw"
            ],
            "/tmp refuses writes, as locally"
        );
        assert_eq!(value(&a, "--workdir"), ["/tmp/dei-sandbox-1-x/tree"]);
        let env = value(&a, "--env");
        assert!(env.contains(&"HOME=/tmp/dei-sandbox-1-x/home"));
        assert!(env.contains(&"TMPDIR=/tmp/dei-sandbox-1-x/tmp"));
        assert!(env.contains(&"PYTHONPATH=src"));
        // The image, then the wrapper with the rlimits, then the command as `$1`.
        let at = a.iter().position(|x| x == DEFAULT_BASE_IMAGE).unwrap();
        assert_eq!(a[at - 1], "/bin/sh");
        assert_eq!(a[at + 1], "-c");
        assert!(a[at + 2].contains("ulimit -t 600; ulimit -f 524288; ulimit -v 1048576"));
        assert_eq!(&a[at + 3..], ["/bin/sh", "pytest -x"]);
    }

    #[test]
    fn a_job_with_the_network_gets_it_and_loopback_stays_within() {
        let b = ContainerBackend::new(Engine::Docker, Image::HostEnv("base".into()));
        let folder = Path::new("/tmp/f");
        let mut j = job("true");
        j.loopback = true;
        let a = b.run_args("dei-1-1", "base", folder, &folder.join("tree"), &j);
        assert!(a.iter().any(|x| x == "--network=none"));
        j.network = true;
        let a = b.run_args("dei-1-1", "base", folder, &folder.join("tree"), &j);
        assert!(!a.iter().any(|x| x.starts_with("--network")));
    }

    #[test]
    fn an_image_used_as_it_is_gets_the_tree_at_testbed_and_its_own_python() {
        let b = ContainerBackend::new(
            Engine::Podman,
            Image::AsIs("sweb.eval.x86_64.{instance_id}".into()),
        );
        let mut j = job("python -m pytest t.py");
        j.env
            .push(("PATH".into(), "/host/venv/bin:/usr/bin".into()));
        j.env.push(("VIRTUAL_ENV".into(), "/host/venv".into()));
        assert!(b.image_for(&j).is_err(), "a template needs an instance");
        j.instance_id = Some("django__django-11099".into());
        let image = b.image_for(&j).unwrap();
        assert_eq!(image, "sweb.eval.x86_64.django_1776_django-11099");
        let folder = Path::new("/tmp/dei-sandbox-1-y");
        let a = b.run_args("dei-1-2", &image, folder, &folder.join("tree"), &j);
        assert_eq!(
            value(&a, "--volume"),
            [
                "/tmp/dei-sandbox-1-y:/tmp/dei-sandbox-1-y:rw",
                "/tmp/dei-sandbox-1-y/tree:/testbed:rw"
            ]
        );
        assert_eq!(value(&a, "--workdir"), ["/testbed"]);
        assert_eq!(value(&a, "--tmpfs"), ["/tmp:rw,exec,mode=1777"]);
        let env = value(&a, "--env");
        let paths: Vec<_> = env.iter().filter(|e| e.starts_with("PATH=")).collect();
        assert_eq!(paths, [&format!("PATH={SWEBENCH_PATH}").as_str()]);
        assert!(!env.iter().any(|e| e.starts_with("VIRTUAL_ENV=")));
    }

    #[test]
    fn the_host_environment_is_mounted_read_only_where_it_is() {
        let env_dir = tempfile::tempdir().unwrap();
        let venv = env_dir.path().join("venv");
        let src = env_dir.path().join("src");
        std::fs::create_dir(&venv).unwrap();
        std::fs::create_dir(&src).unwrap();
        let prefix = tempfile::tempdir().unwrap();
        std::fs::create_dir(prefix.path().join("bin")).unwrap();
        std::fs::write(
            venv.as_path().join("pyvenv.cfg"),
            format!("home = {}/bin\n", prefix.path().display()),
        )
        .unwrap();
        let runner = prefix.path().join("runner.py");
        std::fs::write(&runner, "").unwrap();
        let other = tempfile::NamedTempFile::new().unwrap();
        let b = ContainerBackend::new(Engine::Podman, Image::HostEnv("base".into()));
        let mut j = job(&format!(
            "python '{}' && python {} /usr/bin/env",
            runner.display(),
            other.path().display()
        ));
        j.env
            .push(("VIRTUAL_ENV".into(), venv.as_path().display().to_string()));
        let m = b.host_mounts(&j);
        // The runner lies inside the interpreter's prefix: one mount covers both; the work tree
        // beside the venv (an editable install's) is mounted too.
        let mut want = vec![
            venv.clone(),
            src.clone(),
            prefix.path().to_path_buf(),
            other.path().to_path_buf(),
        ];
        want.sort();
        assert_eq!(m, want);
        let folder = Path::new("/tmp/z");
        let a = b.run_args("dei-1-3", "base", folder, &folder.join("tree"), &j);
        let vols = value(&a, "--volume");
        assert!(vols.contains(&format!("{0}:{0}:ro", venv.as_path().display()).as_str()));
        // A system interpreter is the image's own.
        std::fs::write(venv.as_path().join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        assert_eq!(interpreter_prefix(venv.as_path()), None);
    }

    #[test]
    fn a_missing_engine_is_named_with_how_to_install_it() {
        let mut b = ContainerBackend::new(Engine::Podman, Image::HostEnv("base".into()));
        b.program = "dei-no-such-engine".into();
        let e = b.check_image("base").unwrap_err().to_string();
        assert!(
            e.starts_with("podman: `dei-no-such-engine` is not installed"),
            "{e}"
        );
        assert!(e.contains("apt-get install -y podman runc"), "{e}");
        // Asked once: the same answer from the cache.
        assert_eq!(b.check_image("base").unwrap_err().to_string(), e);
    }

    #[test]
    fn swebench_tags_follow_the_harness() {
        assert_eq!(swebench_tag("psf__requests-2317"), "psf_1776_requests-2317");
        assert_eq!(swebench_tag("sympy__sympy-20590"), "sympy_1776_sympy-20590");
    }

    #[test]
    fn system_paths_are_left_to_the_image() {
        for p in ["/usr/bin/python3", "/usr", "/bin/sh", "/etc/x", "/"] {
            assert!(is_system_path(Path::new(p)), "{p}");
        }
        for p in [
            "/opt/pyenv/versions/3.11.7",
            "/usr/local",
            "/usr/local/lib/x",
            "/srv/project/a.py",
        ] {
            assert!(!is_system_path(Path::new(p)), "{p}");
        }
    }
}
