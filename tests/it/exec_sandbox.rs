//! The sandbox: a tree written from git objects, a timeout that kills the whole process group,
//! no network, no writes outside its folder, rlimits, capped output, the folder removed.

use crate::support::common;

use dei::exec::sandbox::{Backend, Job, LimitHit, Limits, LocalBackend, Outcome, Tree, TreeFile};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// A tiny git repository (one commit) in a temporary folder.
fn tiny_repo() -> (tempfile::TempDir, String) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("hello.py"), "print('hello from the base')\n").unwrap();
    std::fs::write(d.path().join("gone.txt"), "to be deleted\n").unwrap();
    let git = |args: &[&str]| crate::support::scale_util::git(d.path(), args);
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    let head = git(&["rev-parse", "HEAD"]);
    (d, head)
}

struct Bench {
    repo: tempfile::TempDir,
    commit: String,
    /// Where the backend makes its sandbox folders: empty after every run.
    root: tempfile::TempDir,
    backend: LocalBackend,
}

fn bench() -> Bench {
    let (repo, commit) = tiny_repo();
    let root = tempfile::tempdir().unwrap();
    let backend = LocalBackend {
        temp_root: Some(root.path().to_path_buf()),
    };
    Bench {
        repo,
        commit,
        root,
        backend,
    }
}

impl Bench {
    /// The repository's commit with `files` on top, written from git objects.
    fn tree(&self, files: Vec<TreeFile>) -> Tree {
        Tree {
            repo: self.repo.path().to_path_buf(),
            commit: self.commit.clone(),
            files,
            snapshot: None,
        }
    }

    fn run(&self, command: &str, limits: Limits, files: Vec<TreeFile>) -> Outcome {
        let tree = self.tree(files);
        let job = Job {
            command: command.to_string(),
            limits,
            ..Job::default()
        };
        let out = self.backend.run(&tree, &job).unwrap();
        let left: Vec<PathBuf> = std::fs::read_dir(self.root.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(left.is_empty(), "sandbox folders left behind: {left:?}");
        out
    }
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(30),
        ..Limits::default()
    }
}

fn python3() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn alive(pid: u32) -> bool {
    // A killed process may linger a moment as a zombie before init reaps it.
    for _ in 0..50 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(s) if s.split(' ').nth(2) == Some("Z") => return false,
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    true
}

#[test]
fn runs_over_the_tree_with_the_candidate_files() {
    let b = bench();
    let files = vec![
        TreeFile {
            path: "hello.py".into(),
            contents: Some(b"print('hello from the candidate')\n".to_vec()),
        },
        TreeFile {
            path: "pkg/new.txt".into(),
            contents: Some(b"new\n".to_vec()),
        },
        TreeFile {
            path: "gone.txt".into(),
            contents: None,
        },
    ];
    let out = b.run(
        "cat hello.py pkg/new.txt; test -e gone.txt && echo STILL-THERE; exit 3",
        limits(),
        files,
    );
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(out.output.contains("hello from the candidate") && out.output.contains("new"));
    assert!(!out.output.contains("STILL-THERE"), "{}", out.output);
    assert!(!out.timed_out && out.signal.is_none() && !out.truncated);
}

#[test]
fn a_run_over_a_snapshot_sees_the_tree_and_what_was_added_to_it_and_changes_none_of_it() {
    let b = bench();
    let base = b.tree(vec![TreeFile {
        path: "gen/made.txt".into(),
        contents: Some(b"generated\n".to_vec()),
    }]);
    let snap = b.backend.snapshot(&base).unwrap();
    // What a run in the snapshot's own folder adds (compiled bytecode) is there for the runs.
    let added = b
        .backend
        .run_in(
            snap.tree(),
            &Job {
                command: "mkdir -p cache && echo compiled > cache/hello.bin && chmod +x gen/made.txt && ln -s hello.py link.py".into(),
                limits: limits(),
                ..Job::default()
            },
        )
        .unwrap();
    assert!(added.success(), "{added:?}");
    let tree = Tree {
        files: vec![
            TreeFile {
                path: "hello.py".into(),
                contents: Some(b"print('hello from the candidate')\n".to_vec()),
            },
            TreeFile {
                path: "gone.txt".into(),
                contents: None,
            },
        ],
        snapshot: Some(snap.tree().to_path_buf()),
        ..base
    };
    let job = |command: &str| Job {
        command: command.into(),
        limits: limits(),
        ..Job::default()
    };
    let out = b
        .backend
        .run(
            &tree,
            &job("cat hello.py gen/made.txt cache/hello.bin; test -x gen/made.txt && echo EXECUTABLE; readlink link.py; test -e gone.txt && echo STILL-THERE; echo scribble > hello.py; rm gen/made.txt"),
        )
        .unwrap();
    for want in [
        "hello from the candidate",
        "generated",
        "compiled",
        "EXECUTABLE",
        "hello.py",
    ] {
        assert!(out.output.contains(want), "{want}: {}", out.output);
    }
    assert!(!out.output.contains("STILL-THERE"), "{}", out.output);
    // The run changed its copy only: the next one starts from the snapshot as it was.
    let again = b
        .backend
        .run(
            &Tree {
                files: vec![],
                ..tree
            },
            &job("cat hello.py gen/made.txt gone.txt"),
        )
        .unwrap();
    assert!(again.success(), "{again:?}");
    assert!(
        again.output.contains("hello from the base") && again.output.contains("generated"),
        "{}",
        again.output
    );
    // Dropped, the snapshot's folder is gone, like the runs'.
    let folder = snap.tree().parent().unwrap().to_path_buf();
    assert!(folder.starts_with(b.root.path()), "{}", folder.display());
    drop(snap);
    let left: Vec<PathBuf> = std::fs::read_dir(b.root.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "folders left behind: {left:?}");
}

#[test]
fn a_run_counts_the_cpu_time_its_processes_used_apart_from_waiting() {
    let b = bench();
    // Waiting costs no CPU time; counting in a shell loop (in a child process, which the
    // command waits for) does.
    let idle = b.run("sleep 1", limits(), vec![]);
    let busy = b.run(
        "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; echo done",
        limits(),
        vec![],
    );
    assert!(idle.success() && busy.success(), "{idle:?} {busy:?}");
    let (Some(idle_cpu), Some(busy_cpu)) = (idle.cpu_seconds, busy.cpu_seconds) else {
        panic!("no CPU time on this platform: {idle:?} {busy:?}");
    };
    assert!(idle.seconds >= 1.0, "{idle:?}");
    assert!(idle_cpu < 0.5, "sleeping used {idle_cpu} s of CPU");
    // The loop's own process is counted, not only the command's shell (it takes about half
    // a second here; without its child's time the run would show a few milliseconds).
    assert!(
        busy_cpu > 0.02 && busy_cpu > idle_cpu,
        "counting used {busy_cpu} s of CPU, sleeping {idle_cpu}"
    );
}

/// A shell snippet that starts `prefix sleep 60` in the background, the background process
/// writing its pid as this machine sees it (from `/proc/self/stat`: `$!` would be the pid
/// inside the sandbox's PID namespace) and the foreground printing it as `BG=<pid>`.
fn background_sleep(prefix: &str) -> String {
    format!(
        "{prefix} sh -c 'read p rest < /proc/self/stat; echo $p > bg.tmp; mv bg.tmp bg.pid; \
         exec sleep 60' >/dev/null 2>&1 & \
         until [ -s bg.pid ]; do sleep 0.05; done; echo BG=$(cat bg.pid)"
    )
}

fn background_pid(out: &Outcome) -> u32 {
    out.output
        .lines()
        .find_map(|l| l.strip_prefix("BG="))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no background pid in {:?}", out.output))
}

#[test]
fn a_command_past_its_timeout_is_killed_with_its_whole_group() {
    let b = bench();
    let mut l = limits();
    l.timeout = Duration::from_millis(1500);
    let out = b.run(&format!("{}; sleep 60", background_sleep("")), l, vec![]);
    assert!(out.timed_out && !out.success(), "{out:?}");
    assert!(out.seconds < 10.0, "{}", out.seconds);
    let pid = background_pid(&out);
    assert!(
        !alive(pid),
        "the background sleep {pid} outlived the sandbox"
    );
}

/// A run killed at its timeout reports the CPU time its processes used, not only the leader's:
/// the shell here never reaps the busy loop it waits for, so its own resource usage is near 0.
/// The time gates and the summary's CPU figure read it (`dei` once read such a run as 40 s of
/// work and called an idle machine busy).
#[test]
fn a_command_killed_at_its_timeout_reports_the_cpu_time_its_processes_used() {
    let b = bench();
    let mut l = limits();
    l.timeout = Duration::from_secs(3);
    let out = b.run("sh -c 'while :; do :; done'; echo never", l, vec![]);
    assert!(out.timed_out, "{out:?}");
    let cpu = out
        .cpu_seconds
        .expect("Linux says how much CPU time a run used");
    assert!(
        cpu > 0.3,
        "the busy loop's CPU time is missing: {cpu} s ({out:?})"
    );
    assert!(
        cpu <= out.seconds + 0.5,
        "{cpu} s of CPU time in {} s",
        out.seconds
    );
}

/// Pin the calling thread to one CPU it may run on, so that the threads and processes it starts
/// share that CPU alone (they inherit the mask); its mask before, to restore, or the error.
fn pin_to_one_cpu() -> Result<libc::cpu_set_t, std::io::Error> {
    // SAFETY: cpu_set_t is plain data; the calls read and write the one set given, of its size.
    unsafe {
        let mut before: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut before) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let Some(cpu) = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &before))
        else {
            return Err(std::io::Error::other("the thread may run on no CPU"));
        };
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        if libc::sched_setaffinity(0, size, &one) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(before)
    }
}

/// On a machine busier than its share, a run's limit is its own time: what its processes
/// waited for a CPU that others held does not count (up to `BUSY_STRETCH` times the limit on
/// the clock), while a command that sleeps is still killed at its limit. The test, its three
/// busy threads and the runs share one CPU, so a run needing 0.7 s of CPU time gets at most a
/// quarter of one, whatever the machine's size: past its 2 s limit on the clock, always (before,
/// it was killed there). Other work on that CPU slows it further; a run killed only once its
/// limit had moved on by its wait, at twice the limit or more, is the design, not a skip.
#[test]
fn a_busy_machine_does_not_cut_a_run_short_but_a_sleeping_command_ends_at_its_limit() {
    use std::sync::atomic::{AtomicBool, Ordering};
    if !python3() {
        common::skip("python3 is not available");
        return;
    }
    let before = match pin_to_one_cpu() {
        Ok(mask) => mask,
        Err(e) => {
            common::skip(&format!(
                "this thread cannot be pinned to one CPU (sched_setaffinity: {e}), so the load on the run is unknown"
            ));
            return;
        }
    };
    let b = bench();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..3)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            })
        })
        .collect();
    let mut l = limits();
    l.timeout = Duration::from_secs(2);
    let work = TreeFile {
        path: "work.py".into(),
        contents: Some(
            b"import time\nt = time.process_time()\nwhile time.process_time() - t < 0.7:\n    pass\nprint('DONE')\n"
                .to_vec(),
        ),
    };
    let busy = b.run("python3 work.py", l.clone(), vec![work.clone()]);
    // The work in a child that ends well before its parent (as sympy's `bin/test` runs its
    // tests): the child's wait must still count once it has exited.
    let parent = TreeFile {
        path: "parent.py".into(),
        contents: Some(
            b"import subprocess, sys, time\nsubprocess.run([sys.executable, 'work.py'], check=True)\ntime.sleep(0.9)\nprint('PARENT DONE')\n"
                .to_vec(),
        ),
    };
    let mut l3 = l.clone();
    l3.timeout = Duration::from_secs(3);
    let child = b.run("python3 parent.py", l3, vec![work.clone(), parent.clone()]);
    // The same run well within its limit: its wait is still known, the child's included.
    let mut l30 = l.clone();
    l30.timeout = Duration::from_secs(30);
    let within = b.run("python3 parent.py", l30, vec![work, parent]);
    let sleeping = b.run("sleep 30", l, vec![]);
    stop.store(true, Ordering::Relaxed);
    for t in load {
        t.join().unwrap();
    }
    // SAFETY: restoring this thread's own mask, as read above.
    unsafe {
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &before);
    }
    assert!(
        sleeping.timed_out && sleeping.seconds < 4.0,
        "a sleeping command ran {} s past its 2 s limit: {sleeping:?}",
        sleeping.seconds
    );
    if busy.waited_seconds.is_none() {
        common::skip(
            "this kernel does not keep a process's wait for a CPU, so no limit can leave it out",
        );
        return;
    }
    assert!(
        busy.seconds > 2.0,
        "a quarter of a CPU at most, yet 0.7 s of CPU time took {:.1} s: {busy:?}",
        busy.seconds
    );
    // Done, or killed only after its limit had moved on by its wait (to twice the limit on
    // the clock or more): killed at the limit itself, as without the stretch, fails.
    for (o, limit, done) in [(&busy, 2.0, "DONE"), (&child, 3.0, "PARENT DONE")] {
        if o.timed_out {
            assert!(
                o.seconds >= 2.0 * limit && o.waited_seconds.is_some_and(|w| w >= limit),
                "a run was cut short at its {limit} s limit though it waited for a CPU: {o:?}"
            );
        } else {
            assert!(
                o.success() && o.output.contains(done),
                "a run that needs 0.7 s of CPU time failed on a busy machine: {o:?}"
            );
        }
    }
    // 0.7 s of work and 0.9 s of sleep: what it would take alone, however busy the machine.
    let waited = within.waited_seconds.unwrap_or(0.0);
    let alone = within.seconds - waited;
    assert!(
        within.success() && (1.5..3.0).contains(&alone),
        "a run of 1.6 s alone took {:.1} s and waited {waited:.1} s for a CPU: {within:?}",
        within.seconds
    );
}

/// A command that fills the file system its folder is on, file after file (each within the
/// file-size limit), is killed once the free space falls under what is kept free, and the
/// outcome says why. Sandbox folders may live in memory (`/dev/shm`), where a full file
/// system is memory the machine no longer has.
#[test]
fn a_command_that_fills_the_file_system_is_killed_before_it_is_full() {
    let b = bench();
    let free = {
        let out = Command::new("df")
            .args(["-P", "-k"])
            .arg(b.root.path())
            .output()
            .expect("df runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let kb: u64 = text
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("df's free space: {text}"));
        kb * 1024
    };
    let mut l = limits();
    l.keep_free_bytes = Some(free.saturating_sub(32 << 20));
    let out = b.run(
        "for i in $(seq 1 256); do head -c 1048576 /dev/zero > f$i || exit 9; done; sleep 30; echo NEVER",
        l,
        vec![],
    );
    assert_eq!(out.limit_hit, Some(LimitHit::FreeSpace), "{out:?}");
    assert!(
        out.output
            .contains("[dei: killed: the file system of its folder had")
            && !out.output.contains("NEVER")
            && !out.timed_out
            && out.seconds < 25.0,
        "{out:?}"
    );
}

#[test]
fn background_processes_do_not_outlive_a_command_that_exits() {
    let b = bench();
    let out = b.run(&background_sleep(""), limits(), vec![]);
    assert!(out.success(), "{out:?}");
    let pid = background_pid(&out);
    assert!(
        !alive(pid),
        "the background sleep {pid} outlived the sandbox"
    );
}

#[test]
fn a_process_that_leaves_the_group_with_setsid_does_not_outlive_the_run() {
    let b = bench();
    // `setsid` puts the sleep in a session (and process group) of its own, out of reach of
    // the process-group kill; only the PID namespace's end takes it.
    let out = b.run(&background_sleep("setsid"), limits(), vec![]);
    assert!(out.success(), "{out:?}");
    let pid = background_pid(&out);
    if !out.isolation.processes_contained {
        // Clean up what the sandbox could not.
        // SAFETY: signalling the pid the command reported.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        common::skip(&format!(
            "this OS refuses a PID namespace: {:?}",
            out.isolation.missing
        ));
        return;
    }
    assert!(!alive(pid), "the setsid sleep {pid} outlived the sandbox");
}

#[test]
fn exit_status_and_signals_come_through_the_pid_namespace() {
    let b = bench();
    let out = b.run("exit 7", limits(), vec![]);
    assert_eq!((out.code, out.signal), (Some(7), None), "{out:?}");
    // The command is not the namespace's init (pid 1 ignores a signal it has no handler
    // for): a shell that sends itself SIGTERM dies of it, and the parent sees the signal.
    let out = b.run("kill -TERM $$; echo SURVIVED", limits(), vec![]);
    assert_eq!(
        (out.code, out.signal),
        (None, Some(libc::SIGTERM)),
        "{out:?}"
    );
    assert!(!out.output.contains("SURVIVED"), "{out:?}");
}

#[test]
fn no_network() {
    if !python3() {
        common::skip("python3 is not available");
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let b = bench();
    let cmd = format!(
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); print('CONNECTED')\""
    );
    let out = b.run(&cmd, limits(), vec![]);
    if !out.isolation.network_off {
        common::skip(&format!(
            "this OS refuses a network namespace: {:?}",
            out.isolation.missing
        ));
        return;
    }
    assert!(
        !out.success() && !out.output.contains("CONNECTED"),
        "{out:?}"
    );
    // With the namespace's own loopback up, the machine's is still out of reach.
    let job = Job {
        command: cmd.clone(),
        limits: limits(),
        loopback: true,
        ..Job::default()
    };
    let out = b.backend.run(&b.tree(vec![]), &job).unwrap();
    assert!(
        !out.success() && !out.output.contains("CONNECTED"),
        "{out:?}"
    );
    assert!(
        listener.accept().is_err(),
        "the sandboxed command reached a socket outside"
    );
    // The same command outside the sandbox does connect: the test can fail.
    let direct = Command::new("sh").arg("-c").arg(&cmd).output().unwrap();
    assert!(String::from_utf8_lossy(&direct.stdout).contains("CONNECTED"));
}

#[test]
fn writes_outside_the_folder_are_prevented() {
    let b = bench();
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path().display();
    let cmd = format!(
        "echo inside > inside.txt && cat inside.txt; echo x > {o}/evil; mkdir {o}/dir; \
         touch {o}/touched; echo tmp > \"$TMPDIR/t\" && echo TMP-OK; echo home > \"$HOME/h\" && echo HOME-OK"
    );
    let out = b.run(&cmd, limits(), vec![]);
    if !out.isolation.writes_confined {
        common::skip(&format!(
            "writes cannot be confined here: {:?}",
            out.isolation.missing
        ));
        return;
    }
    assert!(out.output.contains("inside"), "{out:?}");
    assert!(
        out.output.contains("TMP-OK") && out.output.contains("HOME-OK"),
        "{out:?}"
    );
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(
        left.is_empty(),
        "the command wrote outside its folder: {left:?}"
    );
    assert!(out.output.contains("Permission denied"), "{}", out.output);
}

#[test]
fn too_much_memory_is_refused() {
    if !python3() {
        common::skip("python3 is not available");
        return;
    }
    let b = bench();
    let mut l = limits();
    l.memory_bytes = 256 << 20;
    let out = b.run(
        "python3 -c \"x = bytearray(1024 * 1024 * 1024); print('ALLOCATED')\"",
        l,
        vec![],
    );
    assert!(
        !out.success() && !out.output.contains("ALLOCATED"),
        "{out:?}"
    );
    assert_eq!(out.limit_hit, Some(LimitHit::Memory), "{out:?}");
}

#[test]
fn cpu_time_and_file_size_are_limited() {
    let b = bench();
    let mut l = limits();
    l.cpu_seconds = 1;
    let out = b.run("while :; do :; done", l, vec![]);
    assert!(!out.timed_out, "{out:?}");
    assert_eq!(out.limit_hit, Some(LimitHit::Cpu), "{out:?}");
    let mut l = limits();
    l.file_bytes = 100_000;
    let out = b.run("head -c 1000000 /dev/zero > big; ls -l big", l, vec![]);
    assert_eq!(out.limit_hit, Some(LimitHit::FileSize), "{out:?}");
}

#[test]
fn too_many_processes_are_refused() {
    if !python3() {
        common::skip("python3 is not available");
        return;
    }
    let b = bench();
    let mut l = limits();
    l.processes = 20;
    let script = "import os, time\nn = 0\nfor i in range(100):\n    try:\n        if os.fork() == 0:\n            time.sleep(5); os._exit(0)\n        n += 1\n    except OSError as e:\n        print('REFUSED', e); break\nprint('FORKED', n)\n";
    let out = b.run(&format!("python3 -c \"{script}\""), l, vec![]);
    if !out.isolation.processes_limited {
        common::skip(&format!(
            "the process count cannot be limited here: {:?}",
            out.isolation.missing
        ));
        return;
    }
    assert!(out.output.contains("REFUSED"), "{out:?}");
    // The limit is the run's, not this machine's: far fewer than 100 forks went through.
    let forked: u32 = out
        .output
        .lines()
        .find_map(|l| l.strip_prefix("FORKED "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fork count in {:?}", out.output));
    assert!(forked < 20, "{forked} forks under a limit of 20");
}

#[test]
fn output_is_capped_head_and_tail() {
    let b = bench();
    let mut l = limits();
    l.output_bytes = 1000;
    let out = b.run(
        "echo FIRST-LINE; head -c 300000 /dev/zero | tr '\\0' x; echo; echo LAST-LINE",
        l,
        vec![],
    );
    assert!(out.success(), "{out:?}");
    assert!(
        out.truncated && out.output_bytes > 300_000,
        "{}",
        out.output_bytes
    );
    assert!(out.output.len() < 1200, "{}", out.output.len());
    assert!(out.output.starts_with("FIRST-LINE") && out.output.trim_end().ends_with("LAST-LINE"));
    assert!(out.output.contains("bytes of output left out"));
}

#[test]
fn a_bad_commit_or_path_is_an_error_and_leaves_nothing() {
    let b = bench();
    let tree = Tree {
        repo: b.repo.path().to_path_buf(),
        commit: "0000000000000000000000000000000000000bad".into(),
        files: vec![],
        snapshot: None,
    };
    let err = b.backend.run(&tree, &Job::default()).unwrap_err();
    assert!(err.to_string().contains("is not in"), "{err}");
    let tree = b.tree(vec![TreeFile {
        path: "../escape.txt".into(),
        contents: Some(b"x".to_vec()),
    }]);
    let err = b.backend.run(&tree, &Job::default()).unwrap_err();
    assert!(err.to_string().contains("outside the sandbox"), "{err}");
    assert!(!b.root.path().join("escape.txt").exists());
    assert_eq!(std::fs::read_dir(b.root.path()).unwrap().count(), 0);
}
