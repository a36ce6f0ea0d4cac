//! The run directory: `lock` (held with an OS file lock while a run writes), `run.json`
//! (what the run was asked to do), and `journal.jsonl`, one line per finished issue.
//!
//! A journal line is written with one `write` call and synced before the next issue is
//! recorded, so after a crash (kill -9, power loss) at most the last line is torn. A torn
//! last line is detected (no final newline, or not valid JSON) and cut off when the journal
//! is reopened; its issue simply runs again. Lines are never rewritten.

use super::IssueOutcome;
use anyhow::Context as _;
use fs2::FileExt;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub const JOURNAL: &str = crate::model::paths::RUN_JOURNAL;
pub const MANIFEST: &str = crate::model::paths::RUN_MANIFEST;
pub const LOCK: &str = "lock";
pub const SUMMARY: &str = "summary.json";
/// The sandbox runs of `--exec`, kept by default inside the run directory (`--exec-cache`).
pub const EXEC_CACHE: &str = "exec";

/// What a run directory holds results for. A rerun must ask for the same thing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    /// Candidate inputs, with their sizes in bytes (a changed file invalidates the results).
    pub candidates: Vec<(PathBuf, u64)>,
    pub tasks: PathBuf,
    pub strict: bool,
    pub context_tokens: usize,
    /// `--max-patch-bytes` (manifests written before it existed mean the default).
    #[serde(default = "default_max_patch_bytes")]
    pub max_patch_bytes: usize,
    pub committee: String,
    /// [`crate::review::Committee::settings`]: weights, model settings, prompt digests
    /// (empty in a manifest that does not record them).
    #[serde(default)]
    pub committee_settings: String,
    /// `--exec` and its settings ([`crate::exec::gather::ExecSettings::settings`]), `off`
    /// without it (empty in a manifest that does not record it: not compared).
    #[serde(default)]
    pub exec: String,
    /// `--agent-name SOURCE=NAME` overrides: other names would mix in one journal.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_names: Vec<String>,
    /// `i/n`, when the run is one shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// SHA-256 of each candidate input's content, in `candidates`' order ([`input_digest`]).
    /// With it, the inputs are the same when their contents are, wherever they now lie: a run
    /// resumes, and shards merge, after the inputs moved; and an edit that keeps a file's size,
    /// or changes a file inside a folder, is told. Empty in a manifest that does not record them
    /// (and where an input could not be read): paths and sizes are compared then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates_sha256: Vec<String>,
    /// SHA-256 of the tasks file's content (empty as above: its path is compared then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tasks_sha256: String,
}

/// SHA-256 (hex) of an input's content: a file's bytes; a folder's candidate files (those the
/// loader reads: `.json`, `.jsonl`, `.diff`, `.patch`, hidden entries left out, as
/// [`crate::candidates::files_under`] lists them), each as its path relative to the folder and
/// its bytes, in path order. So a `.git` or a notes file beside the patches changes nothing.
/// `None` when something in it cannot be read.
pub fn input_digest(path: &Path) -> Option<String> {
    use sha2::{Digest as _, Sha256};
    fn file(p: &Path) -> Option<sha2::digest::Output<Sha256>> {
        let mut h = Sha256::new();
        let mut f = File::open(p).ok()?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf).ok()?;
            if n == 0 {
                return Some(h.finalize());
            }
            h.update(&buf[..n]);
        }
    }
    let digest = if std::fs::metadata(path).ok()?.is_dir() {
        let mut h = Sha256::new();
        h.update(b"folder\0");
        for p in crate::candidates::files_under(path).ok()? {
            if crate::candidates::file_kind(&p).is_none() {
                continue;
            }
            h.update(p.strip_prefix(path).ok()?.as_os_str().as_encoded_bytes());
            h.update([0u8]);
            h.update(file(&p)?);
        }
        h.finalize()
    } else {
        file(path)?
    };
    Some(format!("{digest:x}"))
}

fn default_max_patch_bytes() -> usize {
    crate::rank::pipeline::DEFAULT_MAX_PATCH_BYTES
}

impl Manifest {
    /// The first field that differs from `other`, as a sentence.
    pub fn difference(&self, other: &Manifest) -> Option<String> {
        let by_content = |a: &Manifest, b: &Manifest| {
            !a.candidates_sha256.is_empty()
                && a.candidates_sha256.len() == a.candidates.len()
                && b.candidates_sha256.len() == b.candidates.len()
        };
        if by_content(self, other) {
            if self.candidates_sha256 != other.candidates_sha256 {
                let changed: Vec<String> = other
                    .candidates
                    .iter()
                    .zip(&other.candidates_sha256)
                    .filter(|(_, d)| !self.candidates_sha256.contains(d))
                    .map(|((p, _), _)| p.display().to_string())
                    .collect();
                return Some(if self.candidates.len() != other.candidates.len() {
                    format!(
                        "candidates differ: {} input(s) then, {} now",
                        self.candidates.len(),
                        other.candidates.len()
                    )
                } else if changed.is_empty() {
                    // Order counts: the first candidate to write tests gives its family's set.
                    "candidates differ: the same inputs in another order".to_string()
                } else {
                    format!(
                        "candidates differ in content: {} not what the run began with",
                        changed.join(", ")
                    )
                });
            }
        } else if self.candidates != other.candidates {
            let show = |m: &Manifest| {
                m.candidates
                    .iter()
                    .map(|(p, n)| format!("{} ({n} bytes)", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Some(format!(
                "candidates differ: {} vs {}",
                show(self),
                show(other)
            ));
        }
        if !self.tasks_sha256.is_empty() && !other.tasks_sha256.is_empty() {
            if self.tasks_sha256 != other.tasks_sha256 {
                return Some(format!(
                    "tasks file differs in content: {} is not what the run began with",
                    other.tasks.display()
                ));
            }
        } else if self.tasks != other.tasks {
            return Some(format!(
                "tasks file differs: {} vs {}",
                self.tasks.display(),
                other.tasks.display()
            ));
        }
        if self.strict != other.strict {
            return Some(format!(
                "--strict differs: {} vs {}",
                self.strict, other.strict
            ));
        }
        if self.context_tokens != other.context_tokens {
            return Some(format!(
                "--context-tokens differs: {} vs {}",
                self.context_tokens, other.context_tokens
            ));
        }
        if self.max_patch_bytes != other.max_patch_bytes {
            return Some(format!(
                "--max-patch-bytes differs: {} vs {}",
                self.max_patch_bytes, other.max_patch_bytes
            ));
        }
        if self.committee != other.committee {
            return Some(format!(
                "committee differs: {} vs {}",
                self.committee, other.committee
            ));
        }
        if self.agent_names != other.agent_names {
            return Some(format!(
                "--agent-name differs: [{}] vs [{}]",
                self.agent_names.join(", "),
                other.agent_names.join(", ")
            ));
        }
        // Manifests written before settings were recorded have none: nothing to compare.
        let (a, b) = (&self.committee_settings, &other.committee_settings);
        if !a.is_empty() && !b.is_empty() && a != b {
            return Some(format!(
                "committee settings differ: `{}` vs `{}`",
                self.committee_settings, other.committee_settings
            ));
        }
        let (a, b) = (&self.exec, &other.exec);
        if !a.is_empty() && !b.is_empty() && a != b {
            return Some(format!("--exec differs: `{a}` vs `{b}`"));
        }
        if self.shard != other.shard {
            return Some(format!(
                "--shard differs: {:?} vs {:?}",
                self.shard, other.shard
            ));
        }
        None
    }
}

/// An exclusive hold on a run directory, released when dropped (or when the process dies).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

/// How long [`RunLock::acquire`] waits for a lock held by someone else before it gives up.
/// A process forked from this one holds a copy of every open descriptor until it execs, the
/// lock's too, and keeps the lock held that long after this process lets it go: another
/// thread starting a command (git, a sandboxed test run) just as a run ends is enough for the
/// next run on the same directory to find it held for a few milliseconds.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl RunLock {
    /// Lock `dir`, or say which process holds it (after waiting up to [`LOCK_WAIT`] for it).
    pub fn acquire(dir: &Path) -> anyhow::Result<RunLock> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create run directory {}", dir.display()))?;
        let path = dir.join(LOCK);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .with_context(|| format!("cannot open lock file {}", path.display()))?;
        let started = std::time::Instant::now();
        loop {
            match file.try_lock_exclusive() {
                Ok(()) => break,
                Err(e) if e.kind() != fs2::lock_contended_error().kind() => {
                    return Err(e).with_context(|| {
                        format!(
                            "cannot lock {}\n  hint: use a --run-dir on a local file system",
                            path.display()
                        )
                    });
                }
                Err(_) if started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(_) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    anyhow::bail!(
                        "run directory {} is in use by another dei run ({})\n  hint: wait for it to finish, or use a different --run-dir",
                        dir.display(),
                        if holder.trim().is_empty() {
                            "unknown process".to_string()
                        } else {
                            holder.trim().to_string()
                        }
                    );
                }
            }
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        write!(file, "pid {}", std::process::id())?;
        file.flush()?;
        Ok(RunLock { _file: file })
    }
}

/// Check `run.json` against what this run is asked to do, writing it on first use.
pub fn check_manifest(dir: &Path, want: &Manifest) -> anyhow::Result<()> {
    let path = dir.join(MANIFEST);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let have: Manifest = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a dei run manifest\n  hint: use an empty or new --run-dir",
                    path.display()
                )
            })?;
            if let Some(diff) = have.difference(want) {
                // A run that finished no issue (it stopped on a bad input before any) holds no
                // results to keep apart: the new inputs take it over.
                if !has_results(dir) {
                    return write_manifest(dir, want);
                }
                // New inputs need a new run directory; the sandbox runs kept in this one still
                // serve them (they are keyed by what ran, not by the run).
                let cache = dir.join(EXEC_CACHE);
                let keep = if cache.is_dir() {
                    format!(
                        "; with --exec, add `--exec-cache {}` to reuse the sandbox runs kept here",
                        cache.display()
                    )
                } else {
                    String::new()
                };
                anyhow::bail!(
                    "run directory {} holds results of a different run ({diff})\n  hint: rerun with the same inputs to resume, or pick a new --run-dir{keep}",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => write_manifest(dir, want),
        Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    }
}

/// Whether the run directory's journal holds anything (a finished issue, or a torn line).
fn has_results(dir: &Path) -> bool {
    std::fs::metadata(dir.join(JOURNAL)).is_ok_and(|m| m.len() > 0)
}

fn write_manifest(dir: &Path, want: &Manifest) -> anyhow::Result<()> {
    let tmp = dir.join(format!("{MANIFEST}.tmp"));
    std::fs::write(&tmp, serde_json::to_string_pretty(want)?)?;
    std::fs::rename(&tmp, dir.join(MANIFEST))?;
    Ok(())
}

/// Read a manifest (for merging).
pub fn read_manifest(dir: &Path) -> anyhow::Result<Manifest> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "{} has no {MANIFEST}\n  hint: pass run directories made by `dei rank --run-dir`",
            dir.display()
        )
    })?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not a dei run manifest", path.display()))
}

/// What was found in a journal file.
#[derive(Debug, Default)]
pub struct JournalRead {
    pub outcomes: Vec<IssueOutcome>,
    /// Byte length of the valid prefix (everything after it is a torn line).
    pub valid_len: u64,
    /// Bytes of torn tail found after the valid prefix.
    pub torn_bytes: u64,
    /// Complete lines that did not parse (kept in place, ignored), as `line N: why`.
    pub bad_lines: Vec<String>,
}

/// Read every finished issue in `path` (missing file: nothing finished), line by line.
/// With `keep_results` false the full rankings are dropped as they are read (all but what the
/// summary counts, [`IssueOutcome::slim`]), so memory
/// stays small however long the journal is.
pub fn read_journal(path: &Path, keep_results: bool) -> anyhow::Result<JournalRead> {
    let mut outcomes = Vec::new();
    let mut out = visit_journal(path, |o| {
        outcomes.push(if keep_results { o } else { o.slim() });
    })?;
    out.outcomes = outcomes;
    Ok(out)
}

/// Hand every finished issue's outcome in `path` to `f` in journal order, full rankings
/// included, keeping none of them: what [`read_journal`] reads, for a reader that needs only
/// a little of each line. The returned [`JournalRead`] has no outcomes.
pub fn visit_journal(path: &Path, mut f: impl FnMut(IssueOutcome)) -> anyhow::Result<JournalRead> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalRead::default()),
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot read journal {}: {e}",
                path.display()
            ))
        }
    };
    let mut reader = std::io::BufReader::new(file);
    let mut out = JournalRead::default();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    loop {
        buf.clear();
        let n = std::io::BufRead::read_until(&mut reader, b'\n', &mut buf)
            .with_context(|| format!("cannot read journal {}", path.display()))?;
        if n == 0 {
            break;
        }
        if buf.last() != Some(&b'\n') {
            out.torn_bytes = n as u64;
            break;
        }
        line_no += 1;
        out.valid_len += n as u64;
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<IssueOutcome>(&buf) {
            Ok(o) => f(o),
            Err(e) => out.bad_lines.push(format!("line {line_no}: {e}")),
        }
    }
    Ok(out)
}

/// The open journal of a locked run directory.
#[derive(Debug)]
pub struct Journal {
    file: File,
    pub path: PathBuf,
}

impl Journal {
    /// Open for appending, cutting off a torn last line. Needs the directory's [`RunLock`].
    pub fn open(dir: &Path, _lock: &RunLock) -> anyhow::Result<(Journal, JournalRead)> {
        let path = dir.join(JOURNAL);
        let read = read_journal(&path, false)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open journal {}", path.display()))?;
        if read.torn_bytes > 0 {
            file.set_len(read.valid_len)
                .with_context(|| format!("cannot cut the torn last line of {}", path.display()))?;
            file.sync_data()?;
        }
        Ok((Journal { file, path }, read))
    }

    /// Append one finished issue as a single line, then sync it to disk.
    pub fn append(&mut self, outcome: &IssueOutcome) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(outcome)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.sync_data())
            .with_context(|| format!("cannot write journal {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    #[test]
    fn an_input_is_known_by_its_content_wherever_it_lies() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, "one\n").unwrap();
        std::fs::write(&b, "one\n").unwrap();
        std::fs::write(&c, "two\n").unwrap();
        let d = |p: &Path| input_digest(p).expect("readable");
        assert_eq!(d(&a), d(&b));
        assert_ne!(d(&a), d(&c), "same size, other content");
        assert_eq!(input_digest(&dir.path().join("missing")), None);

        // A folder of .diff files, one folder per agent: an edit, a rename, an added file each
        // change it; the same files copied elsewhere do not.
        let tree = |root: &Path| {
            std::fs::create_dir_all(root.join("agent1")).unwrap();
            std::fs::write(root.join("agent1/x-1.diff"), "--- a\n+++ b\n").unwrap();
            std::fs::write(root.join("agent1/x-2.diff"), "--- c\n+++ d\n").unwrap();
        };
        let (f, g) = (dir.path().join("f"), dir.path().join("g"));
        tree(&f);
        tree(&g);
        let base = d(&f);
        assert_eq!(base, d(&g));
        std::fs::write(g.join("agent1/x-2.diff"), "--- c\n+++ e\n").unwrap();
        assert_ne!(d(&g), base, "a file's content");
        tree(&g);
        std::fs::rename(g.join("agent1"), g.join("agent2")).unwrap();
        assert_ne!(d(&g), base, "a folder's name");
        std::fs::remove_dir_all(&g).unwrap();
        tree(&g);
        assert_eq!(d(&g), base);
        std::fs::write(g.join("agent1/x-3.diff"), "").unwrap();
        assert_ne!(d(&g), base, "an added file");
        // What the loader does not read changes nothing: a hidden folder, a notes file.
        std::fs::remove_file(g.join("agent1/x-3.diff")).unwrap();
        std::fs::create_dir_all(g.join(".git")).unwrap();
        std::fs::write(g.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(g.join("agent1/NOTES.txt"), "tried twice\n").unwrap();
        assert_eq!(d(&g), base);
    }

    fn manifest(cands: &[(&str, &str)], tasks: (&str, &str)) -> Manifest {
        Manifest {
            version: 1,
            candidates: cands.iter().map(|(p, _)| (PathBuf::from(p), 10)).collect(),
            tasks: PathBuf::from(tasks.0),
            strict: false,
            context_tokens: 4000,
            max_patch_bytes: 1 << 22,
            committee: "offline".into(),
            committee_settings: String::new(),
            exec: "off".into(),
            agent_names: Vec::new(),
            shard: None,
            candidates_sha256: cands
                .iter()
                .map(|(_, d)| d.to_string())
                .filter(|d| !d.is_empty())
                .collect(),
            tasks_sha256: tasks.1.into(),
        }
    }

    #[test]
    fn manifests_compare_contents_and_fall_back_to_paths_without_them() {
        let run = manifest(&[("/old/p.jsonl", "aa")], ("/old/t.jsonl", "tt"));
        // Moved, same contents: the same run.
        let moved = manifest(&[("/new/p.jsonl", "aa")], ("/new/t.jsonl", "tt"));
        assert_eq!(run.difference(&moved), None);
        // Same paths (and sizes), other contents.
        let edited = manifest(&[("/old/p.jsonl", "ab")], ("/old/t.jsonl", "tt"));
        assert_eq!(
            run.difference(&edited).as_deref(),
            Some("candidates differ in content: /old/p.jsonl not what the run began with")
        );
        let tasks = manifest(&[("/old/p.jsonl", "aa")], ("/old/t.jsonl", "tu"));
        assert_eq!(
            run.difference(&tasks).as_deref(),
            Some("tasks file differs in content: /old/t.jsonl is not what the run began with")
        );
        let more = manifest(
            &[("/old/p.jsonl", "aa"), ("/old/q", "bb")],
            ("/old/t.jsonl", "tt"),
        );
        assert_eq!(
            run.difference(&more).as_deref(),
            Some("candidates differ: 1 input(s) then, 2 now")
        );
        let two = manifest(&[("/old/p", "aa"), ("/old/q", "bb")], ("/old/t", "tt"));
        let swapped = manifest(&[("/old/q", "bb"), ("/old/p", "aa")], ("/old/t", "tt"));
        assert_eq!(
            two.difference(&swapped).as_deref(),
            Some("candidates differ: the same inputs in another order")
        );
        // A manifest written before contents were recorded: paths and sizes, as then.
        let old = manifest(&[("/old/p.jsonl", "")], ("/old/t.jsonl", ""));
        assert_eq!(old.difference(&edited), None);
        assert!(old
            .difference(&moved)
            .is_some_and(|d| d.starts_with("candidates differ: /old/p.jsonl (10 bytes)")));
    }

    /// A command started by another thread while a run holds the lock holds a copy of it until
    /// it execs; the next run on the directory waits that out instead of calling it in use.
    #[test]
    fn a_lock_held_by_a_forked_child_until_it_execs_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let held = RunLock::acquire(dir.path()).unwrap();
        let mut fds = [0; 2];
        // SAFETY: a pipe closed on exec (no command another test starts keeps it), both ends
        // closed below.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let (read_end, write_end) = (fds[0], fds[1]);
        let starter = std::thread::spawn(move || {
            let mut cmd = std::process::Command::new("true");
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    libc::write(write_end, b"f".as_ptr().cast(), 1);
                    libc::usleep(400_000);
                    Ok(())
                });
            }
            cmd.status().map(|s| s.success())
        });
        let mut byte = 0u8;
        // SAFETY: reading one byte into a local.
        let got = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
        assert_eq!(got, 1, "the child should have said it forked");
        // The child now holds a copy of the locked descriptor, for 0.4 s more.
        drop(held);
        let again = RunLock::acquire(dir.path());
        assert!(again.is_ok(), "{:?}", again.err());
        assert!(starter.join().unwrap().unwrap());
        // SAFETY: closing the pipe this test made.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
    }

    #[test]
    fn a_lock_held_by_another_open_file_is_refused_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let _held = RunLock::acquire(dir.path()).unwrap();
        let err = RunLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("in use by another dei run")
                && err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
    }
}
