//! Run an untrusted command over a tree written from git objects into a temporary folder,
//! and say what happened. The tree is never the user's checkout: [`materialize`] writes the
//! commit's blobs into a fresh folder, the candidate's after-files go on top, the command runs
//! there, and the folder is removed afterwards (also on timeout, error or panic).
//!
//! What the local backend ([`LocalBackend`]) enforces, each part independent of the others:
//! - **no network**: a new user + network namespace (`unshare(CLONE_NEWUSER|CLONE_NEWNET)` in
//!   the child, the uid/gid mapped to themselves); when the OS refuses, the command runs with
//!   the network, this is said once through [`crate::model::notify`] and in every
//!   [`Outcome::isolation`]; with [`Job::loopback`] the namespace's own loopback comes up, for a
//!   server the job starts (nothing outside the namespace becomes reachable);
//! - **nothing outlives it**: with the network namespace comes a PID namespace whose init is a
//!   small waiter forked before the exec ([`pid_namespace_shim`]); when the command ends, the
//!   init ends and the kernel kills whatever is left in the namespace, also a process that
//!   called `setsid()` to leave the process group. Where the OS refuses it, the process-group
//!   kill is all there is (said in [`Isolation::missing`]);
//! - **no writes outside its folder**: Landlock (kernel ≥ 5.13) allows writing only beneath the
//!   sandbox folder (plus `/dev/null` and the like, and any extra folder a [`Job`] names);
//!   `TMPDIR` and `HOME` point inside the folder. Without Landlock, writes are not confined
//!   (said once, and in the outcome);
//! - **rlimits** on address space, CPU seconds, file size and processes ([`Limits`]); run as
//!   root, where `RLIMIT_NPROC` does not bind, the process count goes to a pids cgroup of the
//!   run's own ([`PidsCgroup`]) when one can be made;
//! - **a wall-clock timeout** that kills the whole process group, which is killed anyway when
//!   the command ends, so nothing it started in the background outlives it; on a busy machine
//!   the time its processes wait for a CPU does not count, up to [`BUSY_STRETCH`] times the
//!   limit on the clock;
//! - **free space kept**: a command that fills the file system of its folder is killed before
//!   it is full ([`Limits::keep_free_bytes`]);
//! - **output capped**: stdout and stderr go to one pipe; the first and last halves of
//!   [`Limits::output_bytes`] are kept.
//!
//! [`Backend`] is the interface; [`super::container::ContainerBackend`] implements it with
//! podman or docker.

use crate::model::notify;
use anyhow::{bail, Context as _};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Write the tree of `commit` in `repo` (a clone or bare git dir) into `dest`, except the
/// paths in `skip` (files written on top of it: their blobs are not read, so one missing from
/// a mirror does not stop a tree that replaces it).
pub fn materialize(
    repo: &Path,
    commit: &str,
    dest: &Path,
    skip: &std::collections::BTreeSet<&str>,
) -> anyhow::Result<()> {
    let r = git2::Repository::open(repo).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a git repository: {}",
            repo.display(),
            e.message()
        )
    })?;
    let c = r
        .revparse_single(commit)
        .and_then(|o| o.peel_to_commit())
        .map_err(|e| {
            anyhow::anyhow!(
                "commit {commit} is not in {}: {}",
                repo.display(),
                e.message()
            )
        })?;
    let tree = c.tree()?;
    let mut failure: Option<anyhow::Error> = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let rel = format!("{root}{}", entry.name().unwrap_or(""));
        if skip.contains(rel.as_str()) {
            return git2::TreeWalkResult::Ok;
        }
        let out = dest.join(&rel);
        let res = (|| -> anyhow::Result<()> {
            let blob = r.find_blob(entry.id())?;
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent)?;
            }
            #[cfg(unix)]
            if entry.filemode() == 0o120000 {
                let target = String::from_utf8_lossy(blob.content()).into_owned();
                std::os::unix::fs::symlink(target, &out)?;
                return Ok(());
            }
            std::fs::write(&out, blob.content())?;
            #[cfg(unix)]
            if entry.filemode() == 0o100755 {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755))?;
            }
            Ok(())
        })();
        match res {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e.context(format!("cannot write {}", out.display())));
                git2::TreeWalkResult::Abort
            }
        }
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// One file of the tree after a candidate's edits: new contents, or `None` to delete it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeFile {
    /// Relative, `/`-separated.
    pub path: String,
    pub contents: Option<Vec<u8>>,
}

/// The tree a job runs over: a commit's tree with some files replaced.
#[derive(Debug, Clone)]
pub struct Tree {
    /// A clone or bare git dir holding `commit`.
    pub repo: PathBuf,
    pub commit: String,
    pub files: Vec<TreeFile>,
    /// A folder holding `commit`'s tree already written ([`Snapshot`]): copied instead of
    /// writing the tree from git objects again.
    pub snapshot: Option<PathBuf>,
}

/// A commit's tree (with files on top) written once into a folder of its own, for the runs of
/// one issue to copy rather than each write it from git objects; what is added to it before
/// (an environment's compiled bytecode) every run then starts with. The folder is named like
/// a sandbox folder, so one a killed process left is swept like theirs, and it is removed
/// when the snapshot is dropped.
#[derive(Debug)]
pub struct Snapshot {
    tree: PathBuf,
    _removal: Removal,
}

impl Snapshot {
    /// Write `tree` (its commit, then its files on top) into a new folder in `root`
    /// ([`sandbox_root`] when `None`).
    pub fn write(tree: &Tree, root: Option<&Path>) -> anyhow::Result<Snapshot> {
        let root = root.map_or_else(sandbox_root, Path::to_path_buf);
        let (removal, folder) = sandbox_folder(&root)?;
        let dir = folder.join("tree");
        write_tree(tree, &dir)?;
        Ok(Snapshot {
            tree: dir,
            _removal: removal,
        })
    }

    /// The folder holding the tree.
    pub fn tree(&self) -> &Path {
        &self.tree
    }
}

/// A new sandbox folder in `root`, with an empty `tree` folder inside; the guard removes it.
pub(crate) fn sandbox_folder(root: &Path) -> anyhow::Result<(Removal, PathBuf)> {
    sweep_once(root);
    let folder = tempfile::Builder::new()
        .prefix(&sandbox_prefix())
        .tempdir_in(root)
        .context("cannot make a temporary sandbox folder")?
        .keep();
    let guard = Removal(folder.clone());
    std::fs::create_dir(folder.join("tree"))?;
    Ok((guard, folder))
}

/// Write `tree` into the empty folder `dir`: its snapshot copied, or its commit written from
/// git objects; then its files on top.
pub(crate) fn write_tree(tree: &Tree, dir: &Path) -> anyhow::Result<()> {
    match &tree.snapshot {
        Some(snapshot) => copy_tree(snapshot, dir)?,
        None => {
            let on_top = tree.files.iter().map(|f| f.path.as_str()).collect();
            materialize(&tree.repo, &tree.commit, dir, &on_top)?;
        }
    }
    write_files(dir, &tree.files)
}

/// Copy the tree in `src` into `dest` (an empty folder): folders, files with their
/// permissions, symbolic links as links.
pub fn copy_tree(src: &Path, dest: &Path) -> anyhow::Result<()> {
    for e in std::fs::read_dir(src).with_context(|| format!("cannot read {}", src.display()))? {
        let e = e?;
        let (from, to) = (e.path(), dest.join(e.file_name()));
        let kind = e.file_type()?;
        if kind.is_dir() {
            std::fs::create_dir(&to)?;
            copy_tree(&from, &to)?;
        } else if kind.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else {
            std::fs::copy(&from, &to)
                .with_context(|| format!("cannot copy {} into a sandbox", from.display()))?;
        }
    }
    Ok(())
}

/// Resource limits of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Wall-clock time; the whole process group is killed after it (later on a busy machine,
    /// by the time its processes waited for a CPU: see [`BUSY_STRETCH`]).
    pub timeout: Duration,
    /// Address space per process (`RLIMIT_AS`), bytes.
    pub memory_bytes: u64,
    /// CPU time per process (`RLIMIT_CPU`), seconds.
    pub cpu_seconds: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`), bytes.
    pub file_bytes: u64,
    /// Processes (`RLIMIT_NPROC`; counted inside the sandbox's user namespace when it has one).
    pub processes: u64,
    /// Output kept: the first and the last half of this many bytes of stdout+stderr.
    pub output_bytes: usize,
    /// The run is killed when the file system its folder is on has fewer bytes free than this
    /// (a command that fills the disk, or the memory behind `/dev/shm`, file after file, each
    /// within `file_bytes`); `None`: a quarter of what was free when the run began.
    pub keep_free_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: Duration::from_secs(300),
            memory_bytes: 4 << 30,
            cpu_seconds: 600,
            file_bytes: 512 << 20,
            processes: 256,
            output_bytes: 64 << 10,
            keep_free_bytes: None,
        }
    }
}

/// A command to run in a sandbox.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// Run with `sh -c` in the tree's root.
    pub command: String,
    /// Extra environment variables (the rest of the environment is cleared but for `PATH`,
    /// `LANG`, `TERM` and pyenv's; `HOME` and `TMPDIR` point inside the sandbox folder).
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    /// Leave the network on (environment builds download packages; candidates never).
    pub network: bool,
    /// Bring up the loopback interface of the job's own network namespace, so that a server
    /// the job starts (a local httpbin the tests talk to) can be reached from within it. No
    /// address outside the namespace becomes reachable, and nothing outside can reach in.
    pub loopback: bool,
    /// Folders besides the sandbox folder the job may write to (an environment being built).
    pub writable: Vec<PathBuf>,
    /// Keep the caller's environment (and `HOME`) instead of the cleared one: for the user's
    /// own test command (`dei generate --test-cmd`), which may rely on it.
    pub inherit_env: bool,
    /// The SWE-bench instance the job is for, where known: a container backend picks the
    /// image of an image template by it (`--exec-image 'sweb.eval.x86_64.{instance_id}'`).
    pub instance_id: Option<String>,
    /// The image a container backend runs the job in when the job's environment was built
    /// into one ([`crate::exec::image`]); `None`: the backend's own image. The local backend
    /// has no images and never gets such a job.
    pub image: Option<String>,
}

/// Which resource limit a run ran into, as far as can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Cpu,
    FileSize,
    Memory,
    Processes,
    /// The file system of its folder ran low ([`Limits::keep_free_bytes`]).
    FreeSpace,
}

/// What was in force during a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Isolation {
    /// The command had no network (its own network namespace).
    pub network_off: bool,
    /// Writes outside the sandbox folder were refused (Landlock).
    pub writes_confined: bool,
    /// The command ran in its own PID namespace: everything it started ended with it.
    pub processes_contained: bool,
    /// The process count was limited: `RLIMIT_NPROC` (not root), or a pids cgroup (root).
    pub processes_limited: bool,
    /// What could not be enforced, in words.
    pub missing: Vec<String>,
}

/// The outcome of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Exit status when the command exited.
    pub code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Killed by the wall-clock timeout.
    pub timed_out: bool,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds (user and system) of the command and of the processes it waited for, which
    /// the machine's load moves far less than wall-clock seconds; for a command killed at the
    /// timeout, of every process of its group at that moment (Linux's `/proc`); `None` where
    /// the platform does not say.
    pub cpu_seconds: Option<f64>,
    /// Seconds the group's processes spent runnable but waiting for a CPU that others held,
    /// summed, as last seen (the group is looked at every [`LOOK_STEP`], so a process that
    /// lives shorter than that, and the last moments of the others, go uncounted): on a busy
    /// machine `seconds` less this is about what the run takes alone. `None` where the platform
    /// does not say (no `/proc/<pid>/schedstat`).
    pub waited_seconds: Option<f64>,
    /// stdout and stderr together, capped (head, a marker, tail).
    pub output: String,
    /// Bytes written in all.
    pub output_bytes: u64,
    pub truncated: bool,
    pub limit_hit: Option<LimitHit>,
    pub isolation: Isolation,
}

impl Outcome {
    /// Exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// Something that runs jobs over trees, isolated. The local one is [`LocalBackend`]; a
/// container backend implements the same two calls.
pub trait Backend: Send + Sync {
    /// A short name (`local`).
    fn name(&self) -> &str;
    /// Write `tree` somewhere private, run `job` in it, remove it.
    fn run(&self, tree: &Tree, job: &Job) -> anyhow::Result<Outcome>;
    /// Run `job` in the existing folder `dir` (writable), e.g. an environment's build tree.
    fn run_in(&self, dir: &Path, job: &Job) -> anyhow::Result<Outcome>;
    /// Write `tree` once, for later runs to start from ([`Tree::snapshot`]).
    fn snapshot(&self, tree: &Tree) -> anyhow::Result<Snapshot> {
        Snapshot::write(tree, None)
    }
}

/// The variables of dei's own environment a job keeps when it does not inherit the whole of it:
/// where programs are, the locale and terminal, and which pyenv Python to run.
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "TERM",
    "PYENV_ROOT",
    "PYENV_VERSION",
];

/// Runs jobs on this machine, in temporary folders, isolated as the module docs say.
#[derive(Debug, Clone, Default)]
pub struct LocalBackend {
    /// Where temporary sandbox folders go ([`sandbox_root`] when `None`).
    pub temp_root: Option<PathBuf>,
}

/// Free space a memory file system needs for sandbox folders to go there by default.
pub const MEMORY_ROOT_MIN_FREE: u64 = 4 << 30;

/// Where sandbox folders go when the backend is given no folder: the system temp folder when
/// the user set `TMPDIR`; else `/dev/shm` when it is a memory file system (tmpfs) we may write
/// to with at least [`MEMORY_ROOT_MIN_FREE`] free; else the system temp folder. Every run
/// writes a tree of the repository's files and removes it after, thousands of files each time:
/// on a disk that costs system time and waits (about 1.4 s of system time per tree of sympy's
/// 3,200 files on this project's machines, against 0.09 s in memory), and it is the one cost
/// of a run that is `dei`'s own. Environments are still built on disk ([`Backend::run_in`]).
pub fn sandbox_root() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let tmpdir_set = std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty());
        choose_root(tmpdir_set, memory_root_free(Path::new("/dev/shm")))
            .map_or_else(std::env::temp_dir, Path::to_path_buf)
    })
    .clone()
}

/// [`sandbox_root`]'s choice: `Some(/dev/shm)`, or `None` for the system temp folder.
/// `shm_free`: the free bytes of `/dev/shm` when it is a writable memory file system.
fn choose_root(tmpdir_set: bool, shm_free: Option<u64>) -> Option<&'static Path> {
    (!tmpdir_set && shm_free.is_some_and(|free| free >= MEMORY_ROOT_MIN_FREE))
        .then(|| Path::new("/dev/shm"))
}

/// The bytes an unprivileged process may still write to the file system holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: a valid NUL-terminated path and a zeroed statvfs to fill.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast)]
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// The free bytes of `dir` ([`free_bytes`]) when it is a memory file system (tmpfs) this
/// process may write to.
fn memory_root_free(dir: &Path) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: a valid NUL-terminated path and a zeroed statfs to fill.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(path.as_ptr(), &mut st) } != 0 {
            return None;
        }
        // SAFETY: a valid NUL-terminated path.
        let writable = unsafe { libc::access(path.as_ptr(), libc::W_OK | libc::X_OK) } == 0;
        #[allow(clippy::unnecessary_cast)]
        let kind = st.f_type as i64;
        if kind != TMPFS_MAGIC || !writable {
            return None;
        }
        free_bytes(dir)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

impl Backend for LocalBackend {
    fn name(&self) -> &str {
        "local"
    }

    fn run(&self, tree: &Tree, job: &Job) -> anyhow::Result<Outcome> {
        let root = self.temp_root.clone().unwrap_or_else(sandbox_root);
        let (guard, folder) = sandbox_folder(&root)?;
        let dir = folder.join("tree");
        write_tree(tree, &dir)?;
        let out = run_local(&folder, &dir, job);
        drop(guard);
        out
    }

    fn snapshot(&self, tree: &Tree) -> anyhow::Result<Snapshot> {
        Snapshot::write(tree, self.temp_root.as_deref())
    }

    fn run_in(&self, dir: &Path, job: &Job) -> anyhow::Result<Outcome> {
        sweep_once(&std::env::temp_dir());
        let scratch = tempfile::Builder::new()
            .prefix(&sandbox_prefix())
            .tempdir()
            .context("cannot make a temporary sandbox folder")?;
        let guard = Removal(scratch.path().to_path_buf());
        let mut job = job.clone();
        job.writable.push(dir.to_path_buf());
        let out = run_local(scratch.path(), dir, &job);
        drop(guard);
        out
    }
}

/// Reap `child` if it has ended (`block`: wait until it does): its exit status, and the CPU
/// seconds it and the processes it waited for used (`wait4`'s resource usage).
#[cfg(unix)]
fn reap(
    child: &mut std::process::Child,
    block: bool,
) -> std::io::Result<Option<(std::process::ExitStatus, Option<f64>)>> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: a zeroed `rusage` is a valid value for wait4 to fill in.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `pid` is our own unreaped child; both pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut usage) };
        if r == 0 {
            return Ok(None);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let cpu = secs(usage.ru_utime) + secs(usage.ru_stime);
        return Ok(Some((
            std::process::ExitStatus::from_raw(status),
            Some(cpu),
        )));
    }
}

/// Reap `child` if it has ended (`block`: wait until it does); no CPU time off Unix.
#[cfg(not(unix))]
fn reap(
    child: &mut std::process::Child,
    block: bool,
) -> std::io::Result<Option<(std::process::ExitStatus, Option<f64>)>> {
    let st = if block {
        Some(child.wait()?)
    } else {
        child.try_wait()?
    };
    Ok(st.map(|s| (s, None)))
}

/// A sandbox folder's name starts with the pid of the process that made it
/// (`dei-sandbox-4242-Xa9f2k`), so a later run can tell whose it is.
fn sandbox_prefix() -> String {
    format!("dei-sandbox-{}-", std::process::id())
}

/// `text` with every path inside a sandbox's tree made relative to the tree
/// (`/tmp/dei-sandbox-4242-Xa9f2k/tree/src/x.py` → `src/x.py`): what a run printed about the
/// repository's files then reads the same from one run to the next, whatever the folder was
/// called, and names the file as the repository does.
pub fn relative_to_tree(text: &str) -> String {
    const NAME: &str = "dei-sandbox-";
    const TREE: &str = "/tree/";
    let ends_path = |c: char| c.is_whitespace() || "'\"`(<[=,".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(NAME) {
        // The path the name is in: back to where it starts, on to the tree's own folder.
        let start = rest[..at].rfind(ends_path).map_or(0, |i| {
            i + rest[i..].chars().next().map_or(1, char::len_utf8)
        });
        let after = &rest[at + NAME.len()..];
        let word_end = after.find(ends_path).unwrap_or(after.len());
        match after[..word_end].find(TREE) {
            Some(t) => {
                out.push_str(&rest[..start]);
                rest = &after[t + TREE.len()..];
            }
            None => {
                out.push_str(&rest[..at + NAME.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// How old a folder left by a process that is gone must be before it is removed: a folder of
/// a live run elsewhere (another PID namespace sharing the temp folder) is never that old.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The temp folders this process has made sandbox folders in.
static SWEPT: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Once per temp folder and process: [`sweep_stale`].
fn sweep_once(root: &Path) {
    let Ok(mut swept) = SWEPT.lock() else { return };
    if swept.iter().any(|r| r == root) {
        return;
    }
    swept.push(root.to_path_buf());
    drop(swept);
    sweep_stale(root, STALE_AFTER);
}

/// Remove the sandbox folders in `root` that a killed run left (a process ended by `kill -9`
/// cannot remove its own): named after a process that no longer exists, and untouched for at
/// least `age`. Folders of live processes, and older names without a pid, are left alone.
/// Returns how many were removed.
pub fn sweep_stale(root: &Path, age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("dei-sandbox-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let old = e
            .metadata()
            .ok()
            .filter(|m| m.is_dir())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|d| d >= age);
        if old && pid != std::process::id() && !process_exists(pid) {
            drop(Removal(e.path()));
            removed += usize::from(!e.path().exists());
        }
    }
    removed
}

/// Remove this process's own sandbox folders (runs and snapshots, in every temp folder it
/// used), for a process about to quit without finishing them: a second Ctrl-C or a SIGTERM ends
/// it without running the guards that remove them. Commands still running in them end with
/// the process. A folder that cannot be removed now is left for [`sweep_stale`]. Returns how
/// many were removed.
pub fn remove_own_folders() -> usize {
    let roots = SWEPT.lock().map(|r| r.clone()).unwrap_or_default();
    let prefix = sandbox_prefix();
    let mut removed = 0;
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with(&prefix) {
                continue;
            }
            // A command still writing in it may add files while it goes: try a few times.
            for _ in 0..3 {
                drop(Removal(e.path()));
                if !e.path().exists() {
                    removed += 1;
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    removed
}

/// Whether a process with this pid exists (signal 0 checks without sending); where that
/// cannot be asked, it is taken to exist.
pub(crate) fn process_exists(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return true;
        };
        // SAFETY: signal 0 only checks that the process exists and may be signalled.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Removes a sandbox folder when dropped, making read-only folders writable first (a
/// command may `chmod` what it made).
#[derive(Debug)]
pub(crate) struct Removal(pub(crate) PathBuf);

impl Drop for Removal {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.0).is_err() && self.0.exists() {
            make_writable(&self.0);
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn make_writable(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    make_writable(&e.path());
                }
            }
        }
    }
}

/// Write (or delete) `files` inside `root`, refusing any path that would land outside it
/// (`..`, absolute, or through a symbolic link of the tree).
pub fn write_files(root: &Path, files: &[TreeFile]) -> anyhow::Result<()> {
    let canon_root = root.canonicalize()?;
    for f in files {
        if f.path.is_empty()
            || f.path.starts_with('/')
            || f.path
                .split('/')
                .any(|c| c == ".." || c == "." || c.is_empty())
        {
            bail!("refusing to write {:?} outside the sandbox tree", f.path);
        }
        let p = root.join(&f.path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
            let cp = parent.canonicalize()?;
            if !cp.starts_with(&canon_root) {
                bail!(
                    "refusing to write {:?}: its folder leads outside the sandbox tree",
                    f.path
                );
            }
        }
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&p)?;
        }
        match &f.contents {
            Some(c) => {
                std::fs::write(&p, c).with_context(|| format!("cannot write {}", p.display()))?
            }
            None => {
                if p.exists() {
                    std::fs::remove_file(&p)
                        .with_context(|| format!("cannot delete {}", p.display()))?;
                }
            }
        }
    }
    Ok(())
}

/// What this OS gives: probed once per process, said once when something is missing.
struct Support {
    namespaces: bool,
    /// A PID namespace can be added to the user + network one.
    pid_namespace: bool,
    /// Running as root, a pids cgroup can be made and joined (the process limit's stand-in).
    pids_cgroup: bool,
    landlock_abi: i32,
}

fn support() -> &'static Support {
    static S: OnceLock<Support> = OnceLock::new();
    S.get_or_init(|| {
        let namespaces = probe_namespaces(false);
        let s = Support {
            namespaces,
            pid_namespace: namespaces && probe_namespaces(true),
            pids_cgroup: probe_pids_cgroup(),
            landlock_abi: landlock_abi(),
        };
        if !s.namespaces {
            notify::warning(
                "sandbox: this OS refuses a user + network namespace (unshare), so sandboxed \
                 commands run WITH network access",
            );
        }
        if s.landlock_abi < 1 {
            notify::warning(
                "sandbox: Landlock is not available, so sandboxed commands can write outside \
                 their folder",
            );
        }
        s
    })
}

/// Whether `sh -c 'exit 3'` runs with `setup` in its `pre_exec` and ends with status 3: the
/// probe behind each isolation this OS may refuse.
#[cfg(target_os = "linux")]
fn probe_with(setup: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static) -> bool {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("exit 3")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: every `setup` passed here makes only async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(setup);
    }
    cmd.status().is_ok_and(|s| s.code() == Some(3))
}

/// Whether a user + network namespace (and with `pid`, a PID namespace and its init) can be
/// made.
#[cfg(target_os = "linux")]
fn probe_namespaces(pid: bool) -> bool {
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNET | if pid { libc::CLONE_NEWPID } else { 0 };
    probe_with(move || {
        // SAFETY: a system call, and the shim's, which are async-signal-safe.
        unsafe {
            if libc::unshare(flags) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if pid {
                pid_namespace_shim()?;
            }
        }
        Ok(())
    })
}

#[cfg(not(target_os = "linux"))]
fn probe_namespaces(_pid: bool) -> bool {
    false
}

/// Whether, running as root, a child can join a pids cgroup of its own (a cgroup that can be
/// made but not joined would fail every run).
#[cfg(target_os = "linux")]
fn probe_pids_cgroup() -> bool {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return false;
    }
    let Some(cg) = PidsCgroup::create(16) else {
        return false;
    };
    let fd = cg.procs_fd();
    probe_with(move || join_cgroup(fd))
}

#[cfg(not(target_os = "linux"))]
fn probe_pids_cgroup() -> bool {
    false
}

/// Move the calling process into the cgroup whose `cgroup.procs` is open as `procs_fd` ("0"
/// names the writer). Async-signal-safe: one `write`.
#[cfg(target_os = "linux")]
fn join_cgroup(procs_fd: i32) -> std::io::Result<()> {
    // SAFETY: writing one byte from a static buffer to a descriptor the caller holds open.
    if unsafe { libc::write(procs_fd, b"0".as_ptr().cast(), 1) } != 1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Called in the child after `unshare(CLONE_NEWPID)`, which leaves the caller outside the new
/// namespace and makes its first child the namespace's init. Forks twice: the caller stays
/// outside, waits for the init and ends the way the command ended (exit status or signal), so
/// the parent sees the command's status; the init (pid 1) waits for the command, reaps the
/// orphans the namespace hands it, and sends the command's wait status up a pipe before it
/// exits, which makes the kernel kill everything left in the namespace. The grandchild returns
/// and goes on to exec the command, which is therefore not pid 1 (signals behave as usual).
///
/// # Safety
/// Only in a `pre_exec` closure: it forks and exits, making only async-signal-safe calls.
#[cfg(target_os = "linux")]
unsafe fn pid_namespace_shim() -> std::io::Result<()> {
    let mut fds = [0; 2];
    if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let init = libc::fork();
    if init < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if init > 0 {
        // Outside: hold nothing of the command's (its output pipe, std's exec-error pipe).
        close_all_but(fds[0]);
        let mut status: libc::c_int = 0;
        let got = libc::read(
            fds[0],
            (&mut status as *mut libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>(),
        );
        let mut init_status: libc::c_int = 0;
        while libc::waitpid(init, &mut init_status, 0) < 0
            && *libc::__errno_location() == libc::EINTR
        {}
        if got != std::mem::size_of::<libc::c_int>() as isize {
            status = init_status;
        }
        end_like(status);
    }
    // The init, pid 1 of the new namespace.
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
    libc::close(fds[0]);
    let command = libc::fork();
    if command < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if command == 0 {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        libc::close(fds[1]);
        return Ok(());
    }
    close_all_but(fds[1]);
    loop {
        let mut status: libc::c_int = 0;
        let r = libc::waitpid(-1, &mut status, 0);
        if r == command {
            libc::write(
                fds[1],
                (&status as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>(),
            );
            libc::_exit(0);
        }
        if r < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(127);
        }
    }
}

/// Close every descriptor but `keep` (async-signal-safe).
#[cfg(target_os = "linux")]
unsafe fn close_all_but(keep: libc::c_int) {
    let all = libc::c_uint::MAX;
    let ok = (keep == 0
        || libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32) == 0)
        && libc::syscall(libc::SYS_close_range, (keep + 1) as u32, all, 0u32) == 0;
    if !ok {
        for fd in 0..4096 {
            if fd != keep {
                libc::close(fd);
            }
        }
    }
}

/// End this process the way a wait status says: the same exit status, or the same signal.
#[cfg(target_os = "linux")]
unsafe fn end_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        // No core file: RLIMIT_CORE is 0 here.
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        127
    })
}

#[cfg(target_os = "linux")]
mod landlock {
    pub const CREATE_RULESET_VERSION: u32 = 1;
    pub const RULE_PATH_BENEATH: libc::c_int = 1;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const REMOVE_DIR: u64 = 1 << 4;
    pub const REMOVE_FILE: u64 = 1 << 5;
    /// MAKE_CHAR .. MAKE_SYM.
    pub const MAKE_ALL: u64 = 0b111_1111 << 6;
    pub const REFER: u64 = 1 << 13;
    pub const TRUNCATE: u64 = 1 << 14;

    #[repr(C)]
    pub struct RulesetAttr {
        pub handled_access_fs: u64,
    }

    #[repr(C, packed)]
    pub struct PathBeneathAttr {
        pub allowed_access: u64,
        pub parent_fd: i32,
    }

    pub const SYS_CREATE: libc::c_long = 444;
    pub const SYS_ADD_RULE: libc::c_long = 445;
    pub const SYS_RESTRICT: libc::c_long = 446;

    /// The write rights Landlock ABI `abi` knows.
    pub fn write_rights(abi: i32) -> u64 {
        let mut r = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_ALL;
        if abi >= 2 {
            r |= REFER;
        }
        if abi >= 3 {
            r |= TRUNCATE;
        }
        r
    }
}

#[cfg(target_os = "linux")]
fn landlock_abi() -> i32 {
    // SAFETY: the documented way to ask for the ABI version: no attribute, size 0.
    let v = unsafe {
        libc::syscall(
            landlock::SYS_CREATE,
            std::ptr::null::<landlock::RulesetAttr>(),
            0usize,
            landlock::CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

#[cfg(not(target_os = "linux"))]
fn landlock_abi() -> i32 {
    0
}

/// A Landlock ruleset that handles every write right and allows them beneath `dirs` (and
/// writing to harmless devices), built in the parent; the child only restricts itself.
#[cfg(target_os = "linux")]
fn landlock_ruleset(abi: i32, dirs: &[PathBuf]) -> anyhow::Result<std::os::fd::OwnedFd> {
    use std::ffi::CString;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    let rights = landlock::write_rights(abi);
    let attr = landlock::RulesetAttr {
        handled_access_fs: rights,
    };
    // SAFETY: a valid attribute of the size given.
    let fd = unsafe {
        libc::syscall(
            landlock::SYS_CREATE,
            &attr as *const landlock::RulesetAttr,
            std::mem::size_of::<landlock::RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        bail!(
            "cannot create a Landlock ruleset: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a fresh descriptor the kernel gave us.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let file_rights = landlock::WRITE_FILE | (rights & landlock::TRUNCATE);
    let mut rules: Vec<(PathBuf, u64)> = dirs.iter().map(|d| (d.clone(), rights)).collect();
    for dev in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"] {
        rules.push((PathBuf::from(dev), file_rights));
    }
    for (path, allowed) in rules {
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: a valid C string; O_PATH opens nothing but a reference.
        let pfd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if pfd < 0 {
            continue; // a device this machine lacks
        }
        // SAFETY: we own the descriptor just opened.
        let pfd = unsafe { OwnedFd::from_raw_fd(pfd) };
        let rule = landlock::PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: std::os::fd::AsRawFd::as_raw_fd(&pfd),
        };
        // SAFETY: valid descriptors and a valid rule.
        let r = unsafe {
            libc::syscall(
                landlock::SYS_ADD_RULE,
                std::os::fd::AsRawFd::as_raw_fd(&ruleset),
                landlock::RULE_PATH_BENEATH,
                &rule as *const landlock::PathBeneathAttr,
                0u32,
            )
        };
        if r < 0 {
            bail!(
                "cannot add a Landlock rule for {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(ruleset)
}

/// Run `job` with `sh -c` in `dir`; `folder` is the sandbox's own folder (home, temp files;
/// writable like `dir`).
fn run_local(folder: &Path, dir: &Path, job: &Job) -> anyhow::Result<Outcome> {
    let sup = support();
    let home = folder.join("home");
    let tmp = folder.join("tmp");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(&tmp)?;
    let mut isolation = Isolation::default();
    let want_netns = !job.network && sup.namespaces;
    let want_pidns = want_netns && sup.pid_namespace;
    isolation.network_off = want_netns;
    isolation.processes_contained = want_pidns;
    if !job.network && !sup.namespaces {
        isolation
            .missing
            .push("network: the OS refused a network namespace".into());
    }
    if !job.network && !want_pidns {
        isolation.missing.push(
            "processes: no PID namespace, so a process that calls setsid() can outlive the run"
                .into(),
        );
    }
    // RLIMIT_NPROC does not bind root; a cgroup's pids.max does, and root can make one.
    // SAFETY: getuid has no preconditions.
    #[cfg(unix)]
    let root = unsafe { libc::getuid() } == 0;
    #[cfg(not(unix))]
    let root = false;
    #[cfg(target_os = "linux")]
    let pids = if !job.network && sup.pids_cgroup {
        PidsCgroup::create(job.limits.processes)
    } else {
        None
    };
    #[cfg(not(target_os = "linux"))]
    let pids: Option<()> = None;
    isolation.processes_limited = !root || pids.is_some();
    if !job.network && !isolation.processes_limited {
        isolation.missing.push(
            "processes: RLIMIT_NPROC does not bind root and no pids cgroup could be made, so \
             forks are not limited"
                .into(),
        );
    }

    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&job.command).current_dir(dir);
    if !job.inherit_env {
        cmd.env_clear();
        for k in PASSED_ENV {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        // pyenv's shims find their folder through HOME, which moves into the sandbox.
        if std::env::var_os("PYENV_ROOT").is_none() {
            if let Some(h) = std::env::var_os("HOME") {
                let p = PathBuf::from(h).join(".pyenv");
                if p.is_dir() {
                    cmd.env("PYENV_ROOT", p);
                }
            }
        }
        cmd.env("HOME", &home);
    }
    cmd.env("TMPDIR", &tmp).env("PYTHONDONTWRITEBYTECODE", "1");
    for (k, v) in &job.env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    let (reader, writer) = pipe()?;
    cmd.stdout(Stdio::from(writer.try_clone()?))
        .stderr(Stdio::from(writer));

    #[cfg(target_os = "linux")]
    let ruleset = if sup.landlock_abi >= 1 {
        let mut dirs = vec![folder.to_path_buf(), dir.to_path_buf()];
        dirs.extend(job.writable.iter().cloned());
        match landlock_ruleset(sup.landlock_abi, &dirs) {
            Ok(r) => Some(r),
            Err(e) => {
                isolation.missing.push(format!("writes: {e}"));
                None
            }
        }
    } else {
        isolation
            .missing
            .push("writes: Landlock is not available".into());
        None
    };
    #[cfg(not(target_os = "linux"))]
    isolation
        .missing
        .push("writes: not confined on this OS".into());
    #[cfg(target_os = "linux")]
    {
        isolation.writes_confined = ruleset.is_some();
    }

    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let limits = job.limits.clone();
        #[cfg(target_os = "linux")]
        let loopback = job.loopback;
        // Everything the child needs is prepared here: it must not allocate after fork.
        // SAFETY: getuid/getgid are async-signal-safe.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = format!("{uid} {uid} 1\n").into_bytes();
        let gid_map = format!("{gid} {gid} 1\n").into_bytes();
        #[cfg(target_os = "linux")]
        let ruleset_fd = ruleset.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
        #[cfg(target_os = "linux")]
        let procs_fd = pids.as_ref().map(|p| p.procs_fd());
        // SAFETY: the closure makes only system calls on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // First, while still root of this namespace: join the pids cgroup; everything
                // the command starts is counted there.
                #[cfg(target_os = "linux")]
                if let Some(fd) = procs_fd {
                    join_cgroup(fd)?;
                }
                #[cfg(target_os = "linux")]
                if want_netns {
                    let pid = if want_pidns { libc::CLONE_NEWPID } else { 0 };
                    if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET | pid) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    write_proc(c"/proc/self/setgroups", b"deny");
                    write_proc(c"/proc/self/uid_map", &uid_map);
                    write_proc(c"/proc/self/gid_map", &gid_map);
                    // Without it, what needs the server fails at the base commit as well, and
                    // is not kept: the run itself goes on.
                    if loopback {
                        let _ = loopback_up();
                    }
                }
                // Dies with dei, even when dei is killed with SIGKILL (a command that forks
                // keeps its children alive only until their own limits stop them).
                #[cfg(target_os = "linux")]
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                set_limit(libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes)?;
                // SIGXCPU at the soft limit, SIGKILL a little later.
                let cpu = limits.cpu_seconds;
                set_limit(libc::RLIMIT_CPU, cpu, cpu.saturating_add(5))?;
                set_limit(libc::RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes)?;
                set_limit(libc::RLIMIT_NPROC, limits.processes, limits.processes)?;
                set_limit(libc::RLIMIT_CORE, 0, 0)?;
                #[cfg(target_os = "linux")]
                if let Some(fd) = ruleset_fd {
                    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                        || libc::syscall(landlock::SYS_RESTRICT, fd, 0u32) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                // Last, so that the init and the command inherit all of the above.
                #[cfg(target_os = "linux")]
                if want_pidns {
                    pid_namespace_shim()?;
                }
                Ok(())
            });
        }
    }

    let keep_free = job
        .limits
        .keep_free_bytes
        .or_else(|| free_bytes(folder).map(|f| f / 4));
    let start = Instant::now();
    let spawned = cmd.spawn();
    drop(cmd); // closes the parent's copy of the pipe's write end
    let mut child =
        spawned.with_context(|| format!("cannot run `{}` in a sandbox", job.command))?;
    let cap = job.limits.output_bytes;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(capture(reader, cap));
    });
    let pgid = child.id() as i32;
    // The group is looked at every LOOK_STEP, and past the limit every STRETCH_STEP; each
    // process's wait is kept after it exits (sympy's `bin/test` does its work in a child that
    // ends before it does).
    let mut next_look = LOOK_STEP.min(job.limits.timeout);
    let mut waits = Waits::new();
    let mut ran_low = None;
    let (status, timed_out, cpu_seconds) = loop {
        if let Some((st, cpu)) = reap(&mut child, false)? {
            break (Some(st), false, cpu);
        }
        if let Some(free) = keep_free.and_then(|floor| free_bytes(folder).filter(|f| *f < floor)) {
            ran_low = Some(free);
            let reaped = kill_and_reap(&mut child, pgid);
            break (reaped.map(|r| r.0), false, reaped.and_then(|r| r.1));
        }
        let now = start.elapsed();
        if now >= next_look {
            let usage = group_usage(pgid, &mut waits);
            if now < job.limits.timeout {
                next_look = (now + LOOK_STEP).min(job.limits.timeout);
                continue;
            }
            // On a busy machine the time the group's processes spent waiting for a CPU is
            // not theirs: the limit moves on by it, up to BUSY_STRETCH times on the clock.
            let own = (job.limits.timeout.saturating_add(usage.waited))
                .min(job.limits.timeout.saturating_mul(BUSY_STRETCH));
            if own > now + STRETCH_STEP {
                next_look = now + STRETCH_STEP;
                continue;
            }
            // What the group has used so far: the leader's resource usage after the kill
            // leaves out the processes it had not reaped, the test runner among them.
            let group = usage.cpu;
            let reaped = kill_and_reap(&mut child, pgid);
            let cpu = match (reaped.and_then(|r| r.1), group) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            break (reaped.map(|r| r.0), true, cpu);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Whatever it left running in the background goes too.
    kill_group(pgid);
    let seconds = start.elapsed().as_secs_f64();
    let (mut output, output_bytes, truncated) =
        rx.recv_timeout(Duration::from_secs(5)).unwrap_or_else(|_| {
            (
                "[dei: output lost: a process outside the group kept the pipe open]".into(),
                0,
                false,
            )
        });
    #[cfg(unix)]
    use std::os::unix::process::ExitStatusExt;
    let code = status.and_then(|s| s.code());
    #[cfg(unix)]
    let signal = if timed_out {
        Some(libc::SIGKILL)
    } else {
        status.and_then(|s| s.signal())
    };
    #[cfg(not(unix))]
    let signal = None;
    if timed_out {
        output.push_str(&format!(
            "\n[dei: killed after {:.0}s]\n",
            job.limits.timeout.as_secs_f64()
        ));
    }
    if let Some(free) = ran_low {
        output.push_str(&format!(
            "\n[dei: killed: the file system of its folder had {} MB free, under the {} MB kept free]\n",
            free >> 20,
            keep_free.unwrap_or(0) >> 20
        ));
    }
    let limit_hit = match ran_low {
        Some(_) => Some(LimitHit::FreeSpace),
        None => limit_hit(signal, code, &output, timed_out),
    };
    Ok(Outcome {
        cpu_seconds,
        waited_seconds: waits_kept().then(|| total_wait(&waits).as_secs_f64()),
        code,
        signal,
        timed_out,
        seconds,
        output,
        output_bytes,
        truncated,
        limit_hit,
        isolation,
    })
}

/// A pids cgroup of its own for one run: where `RLIMIT_NPROC` does not bind (root), its
/// `pids.max` limits the processes. cgroup v2 (the pids controller enabled in the root's
/// `cgroup.subtree_control`) or v1 (`/sys/fs/cgroup/pids`); `None` when neither can be written.
/// Dropped: whatever is left in it is killed and the folder removed.
#[cfg(target_os = "linux")]
struct PidsCgroup {
    dir: PathBuf,
    procs: std::fs::File,
}

#[cfg(target_os = "linux")]
impl PidsCgroup {
    fn create(max: u64) -> Option<PidsCgroup> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let v2 = Path::new("/sys/fs/cgroup");
        let parent = if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"))
        {
            v2.to_path_buf()
        } else if v2.join("pids/pids.max").exists() || v2.join("pids/cgroup.procs").exists() {
            v2.join("pids")
        } else {
            return None;
        };
        let dir = parent.join(format!(
            "dei-sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).ok()?;
        let made = (|| {
            std::fs::write(dir.join("pids.max"), max.to_string()).ok()?;
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()
        })();
        match made {
            Some(procs) => Some(PidsCgroup { dir, procs }),
            None => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    fn procs_fd(&self) -> i32 {
        std::os::fd::AsRawFd::as_raw_fd(&self.procs)
    }
}

#[cfg(target_os = "linux")]
impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // The PID namespace has ended everything already where there is one; this is for the
        // rest. A cgroup folder can be removed once its processes are gone.
        for _ in 0..100 {
            let left: Vec<i32> = std::fs::read_to_string(self.dir.join("cgroup.procs"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            for pid in &left {
                // SAFETY: signalling processes of the run's own cgroup.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub(crate) fn limit_hit(
    signal: Option<i32>,
    code: Option<i32>,
    output: &str,
    timed_out: bool,
) -> Option<LimitHit> {
    if timed_out {
        return None;
    }
    #[cfg(unix)]
    match signal {
        Some(libc::SIGXCPU) => return Some(LimitHit::Cpu),
        Some(libc::SIGXFSZ) => return Some(LimitHit::FileSize),
        _ => {}
    }
    // A shell reports a child killed by signal N as status 128 + N.
    #[cfg(unix)]
    match code.map(|c| c - 128) {
        Some(libc::SIGXCPU) => return Some(LimitHit::Cpu),
        Some(libc::SIGXFSZ) => return Some(LimitHit::FileSize),
        _ => {}
    }
    if output.contains("File size limit exceeded") {
        return Some(LimitHit::FileSize);
    }
    if output.contains("CPU time limit exceeded") {
        return Some(LimitHit::Cpu);
    }
    if code == Some(0) {
        return None;
    }
    let _ = signal;
    if output.contains("MemoryError") || output.contains("Cannot allocate memory") {
        Some(LimitHit::Memory)
    } else if output.contains("Resource temporarily unavailable")
        || output.contains("Cannot fork")
        || output.contains("can't fork")
    {
        Some(LimitHit::Processes)
    } else if output.contains("File too large") {
        Some(LimitHit::FileSize)
    } else {
        None
    }
}

#[cfg(target_os = "linux")]
fn write_proc(path: &std::ffi::CStr, data: &[u8]) {
    // SAFETY: plain system calls on a valid path and buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, data.as_ptr().cast(), data.len());
            libc::close(fd);
        }
    }
}

/// Set the loopback interface of the calling process's network namespace up (a new namespace
/// has it down). Async-signal-safe: a socket and two `ioctl`s on a buffer on the stack.
#[cfg(target_os = "linux")]
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: plain system calls on a zeroed `ifreq` on the stack, whose name is "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        req.ifr_name[0] = b'l' as libc::c_char;
        req.ifr_name[1] = b'o' as libc::c_char;
        let ok = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) == 0 && {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req) == 0
        };
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if ok {
            Ok(())
        } else {
            Err(err)
        }
    }
}

#[cfg(unix)]
fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: a valid rlimit.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A run's limit is the clock's time less what its processes spent runnable but waiting for
/// a CPU that others held (Linux's `/proc/<pid>/schedstat`), up to this many times the limit
/// on the clock: on a machine busier than the run's share of it, a test file that takes 60 s
/// alone is not cut short at a 120 s limit, while a command that sleeps or hangs (it waits
/// for nothing the machine's load holds back) is killed at the limit as on an idle machine.
pub const BUSY_STRETCH: u32 = 3;
/// The least a limit is moved on by at once (waits shorter than this are an idle machine's),
/// and how often a run past its limit is looked at again.
const STRETCH_STEP: Duration = Duration::from_millis(100);
/// How often a run within its limit is looked at: the waits of the processes it starts are
/// kept from then on, so a child that does the work and ends before the limit still counts,
/// and the run's [`Outcome::waited_seconds`] is known. A walk of `/proc` every quarter second.
const LOOK_STEP: Duration = Duration::from_millis(250);

/// Whether the kernel keeps each process's wait for a CPU (`/proc/<pid>/schedstat`).
fn waits_kept() -> bool {
    static KEPT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEPT.get_or_init(|| {
        cfg!(target_os = "linux") && std::path::Path::new("/proc/self/schedstat").exists()
    })
}

/// Each process's wait for a CPU (nanoseconds) as last seen, by pid, kept after it exits.
type Waits = std::collections::HashMap<u32, u64>;

/// Record the waits seen now (`(pid, nanoseconds)`) and return the sum over every process seen
/// so far, those that have exited at their last sight: a wait only grows, so the sum never
/// falls when the process that did the work ends before its parent.
fn remember_waits(waits: &mut Waits, seen: impl IntoIterator<Item = (u32, u64)>) -> Duration {
    for (pid, ns) in seen {
        let w = waits.entry(pid).or_insert(0);
        *w = (*w).max(ns);
    }
    total_wait(waits)
}

/// The sum of the waits kept, over every process seen.
fn total_wait(waits: &Waits) -> Duration {
    Duration::from_nanos(waits.values().fold(0u64, |a, b| a.saturating_add(*b)))
}

/// What the processes of one group have used so far.
#[derive(Debug, Default, Clone, Copy)]
struct GroupUsage {
    /// CPU seconds (user and system) of the group's processes and of the children each has
    /// reaped, from `/proc/<pid>/stat`; `None` without `/proc`.
    cpu: Option<f64>,
    /// Time the group's processes spent runnable but waiting for a CPU, summed (zero where the
    /// kernel does not keep it).
    waited: Duration,
}

/// What the processes of group `pgid` have used so far. A process that left the group
/// (`setsid`) is not counted; the waits of those already gone are what `waits` last saw.
fn group_usage(pgid: i32, waits: &mut Waits) -> GroupUsage {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return GroupUsage::default();
        };
        if ticks <= 0 {
            return GroupUsage::default();
        }
        let mut total: u64 = 0;
        let mut seen: Vec<(u32, u64)> = Vec::new();
        for entry in procs.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue; // it ended meanwhile
            };
            // The fields after the command's name, which may hold spaces and parentheses:
            // state ppid pgrp ... utime(14) stime cutime cstime(17), 1-based over the line.
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.get(2).and_then(|g| g.parse::<i32>().ok()) != Some(pgid) {
                continue;
            }
            total += f
                .get(11..15)
                .into_iter()
                .flatten()
                .filter_map(|v| v.parse::<u64>().ok())
                .sum::<u64>();
            // On the CPU, waiting on a run queue, time slices: nanoseconds, nanoseconds, count.
            if let Some(ns) = std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            {
                seen.push((pid, ns));
            }
        }
        GroupUsage {
            cpu: Some(total as f64 / ticks as f64),
            waited: remember_waits(waits, seen),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pgid, waits);
        GroupUsage::default()
    }
}

/// Kill the run's whole group and its leader, and wait for the leader: its exit status and
/// CPU seconds, when it could be reaped.
fn kill_and_reap(
    child: &mut std::process::Child,
    pgid: i32,
) -> Option<(std::process::ExitStatus, Option<f64>)> {
    kill_group(pgid);
    let _ = child.kill();
    reap(child, true).ok().flatten()
}

fn kill_group(pgid: i32) {
    #[cfg(unix)]
    // SAFETY: signalling a process group we created.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// A pipe; both ends close on exec (the child's copies are made by `Stdio`).
pub(crate) fn pipe() -> anyhow::Result<(std::fs::File, std::os::fd::OwnedFd)> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: a valid two-slot buffer.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("cannot make a pipe: {}", std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Read to the end, keeping the first and last `cap / 2` bytes.
pub(crate) fn capture(mut r: impl Read, cap: usize) -> (String, u64, bool) {
    let half = (cap / 2).max(1);
    let mut head = Vec::new();
    let mut tail = std::collections::VecDeque::new();
    let mut total = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        total += n as u64;
        let mut chunk = &buf[..n];
        if head.len() < half {
            let take = (half - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        tail.extend(chunk.iter().copied());
        while tail.len() > half {
            tail.pop_front();
        }
    }
    let truncated = total > (head.len() + tail.len()) as u64;
    let mut out = String::from_utf8_lossy(&head).into_owned();
    if truncated {
        out.push_str(&format!(
            "\n[dei: {} bytes of output left out]\n",
            total - (head.len() + tail.len()) as u64
        ));
    }
    let tail: Vec<u8> = tail.into_iter().collect();
    out.push_str(&String::from_utf8_lossy(&tail));
    (out, total, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process's wait stays in the group's sum after it exits, so the limit's stretch does not
    /// fall back when the child that did the work ends before its parent (sympy's `bin/test`).
    #[test]
    fn a_childs_wait_for_a_cpu_still_counts_after_it_exits() {
        let mut waits = Waits::new();
        let ms = |n: u64| n * 1_000_000;
        assert_eq!(
            remember_waits(&mut waits, [(10, ms(100)), (11, ms(2_000))]),
            Duration::from_millis(2_100)
        );
        // the child (11) has exited: its last sight stays
        assert_eq!(
            remember_waits(&mut waits, [(10, ms(150))]),
            Duration::from_millis(2_150)
        );
        // a wait only grows: an older reading never lowers it
        assert_eq!(
            remember_waits(&mut waits, [(10, ms(120))]),
            Duration::from_millis(2_150)
        );
    }

    /// Sandbox folders go to memory only when the user set no `TMPDIR` and `/dev/shm` is a
    /// writable tmpfs with room.
    #[test]
    fn sandbox_folders_go_to_memory_only_with_room_and_no_tmpdir_of_the_users() {
        let shm = Some(Path::new("/dev/shm"));
        assert_eq!(choose_root(false, Some(MEMORY_ROOT_MIN_FREE)), shm);
        assert_eq!(choose_root(false, Some(64 << 30)), shm);
        assert_eq!(choose_root(true, Some(64 << 30)), None, "TMPDIR wins");
        assert_eq!(choose_root(false, Some(MEMORY_ROOT_MIN_FREE - 1)), None);
        assert_eq!(choose_root(false, None), None, "not a writable tmpfs");
    }

    /// A folder on disk is not a memory file system; `/dev/shm`, where Linux has one, is.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_memory_file_system_is_told_from_a_disk() {
        assert_eq!(
            memory_root_free(Path::new(env!("CARGO_MANIFEST_DIR"))),
            None
        );
        assert_eq!(memory_root_free(Path::new("/no/such/folder")), None);
        match memory_root_free(Path::new("/dev/shm")) {
            Some(free) => assert!(free > 0, "/dev/shm: {free} bytes free"),
            None => {
                // Where a plain `cargo test` shows it (its capture takes `eprintln!`).
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "SKIPPED exec::sandbox::tests::a_memory_file_system_is_told_from_a_disk \
                     (its /dev/shm part): /dev/shm is not a writable tmpfs here"
                );
            }
        }
    }

    #[test]
    fn a_path_in_the_tree_reads_relative_to_it() {
        let a = "ImportError: cannot import name 'console_main' from 'pytest' (/tmp/dei-sandbox-17759-dAH5Tc/tree/src/pytest/__init__.py)";
        let b = "ImportError: cannot import name 'console_main' from 'pytest' (/tmp/dei-sandbox-14820-2mtKzH/tree/src/pytest/__init__.py)";
        let want =
            "ImportError: cannot import name 'console_main' from 'pytest' (src/pytest/__init__.py)";
        assert_eq!(relative_to_tree(a), want);
        assert_eq!(relative_to_tree(b), want);
        // Under another temp folder, at the start, twice on a line.
        assert_eq!(
            relative_to_tree(
                "/var/tmp/x/dei-sandbox-1-a/tree/a.py:3 and \"/tmp/dei-sandbox-2-b/tree/b/c.py\""
            ),
            "a.py:3 and \"b/c.py\""
        );
        // Not inside a tree: left as it is.
        for same in [
            "no sandbox here",
            "/tmp/dei-sandbox-1-a/home/.cache",
            "dei-sandbox-",
            "a dei-sandbox- b /tree/ c",
        ] {
            assert_eq!(relative_to_tree(same), same);
        }
    }

    /// A folder a killed run left is removed once it is old enough, read-only parts and all;
    /// a live process's folder, a name without a pid, a file and a young folder stay.
    #[cfg(unix)]
    #[test]
    fn folders_a_killed_run_left_are_swept() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = root.path().join(format!("dei-sandbox-{dead}-abc"));
        std::fs::create_dir_all(left.join("tree/locked")).unwrap();
        std::fs::write(left.join("tree/locked/f.py"), "x").unwrap();
        std::fs::set_permissions(
            left.join("tree/locked"),
            std::fs::Permissions::from_mode(0o500),
        )
        .unwrap();
        let mine = root
            .path()
            .join(format!("dei-sandbox-{}-def", std::process::id()));
        let init = root.path().join("dei-sandbox-1-ghi");
        let unnamed = root.path().join("dei-sandbox-Xa9f2k");
        for d in [&mine, &init, &unnamed] {
            std::fs::create_dir(d).unwrap();
        }
        let file = root.path().join(format!("dei-sandbox-{dead}-file"));
        std::fs::write(&file, "x").unwrap();
        // Too young: nothing goes.
        assert_eq!(sweep_stale(root.path(), Duration::from_secs(3600)), 0);
        assert!(left.exists());
        assert_eq!(sweep_stale(root.path(), Duration::ZERO), 1);
        assert!(!left.exists());
        for kept in [&mine, &init, &unnamed, &file] {
            assert!(kept.exists(), "{}", kept.display());
        }
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let data: Vec<u8> = (0..1000).map(|i| b'a' + (i % 26) as u8).collect();
        let (out, total, truncated) = capture(&data[..], 100);
        assert_eq!(total, 1000);
        assert!(truncated);
        assert!(out.starts_with(&String::from_utf8_lossy(&data[..50]).into_owned()));
        assert!(out.ends_with(&String::from_utf8_lossy(&data[950..]).into_owned()));
        assert!(out.contains("900 bytes of output left out"));
        let (out, _, truncated) = capture(&b"short"[..], 100);
        assert_eq!((out.as_str(), truncated), ("short", false));
    }

    #[test]
    fn paths_outside_the_tree_are_refused() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/x", "a/../../x", ""] {
            let f = TreeFile {
                path: bad.into(),
                contents: Some(b"x".to_vec()),
            };
            assert!(write_files(d.path(), &[f]).is_err(), "{bad}");
        }
        #[cfg(unix)]
        {
            let outside = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
            let f = TreeFile {
                path: "link/evil".into(),
                contents: Some(b"x".to_vec()),
            };
            assert!(write_files(d.path(), &[f]).is_err());
            assert!(!outside.path().join("evil").exists());
        }
        let ok = TreeFile {
            path: "a/b.txt".into(),
            contents: Some(b"x".to_vec()),
        };
        write_files(d.path(), &[ok]).unwrap();
        assert_eq!(std::fs::read(d.path().join("a/b.txt")).unwrap(), b"x");
    }
}
