//! `dei-bench repro` over the bundled repositories (psf/requests, pallets/flask,
//! pytest-dev/pytest: 26 Lite instances): one script per issue that gives code, each the file
//! its index names, Python that parses, and the same bytes on a second run. Skips, saying so,
//! without ../shared/data or the bundles.

#[path = "../../../tests/it/support/common.rs"]
mod common;
use dei_bench::repro::{write_scripts, ReproOptions};
use dei_bench::split::Split;
use sha2::{Digest, Sha256};
use std::process::Command;

const BUNDLED: [&str; 3] = ["psf/requests", "pallets/flask", "pytest-dev/pytest"];

#[test]
fn the_bundled_issues_scripts_are_written_whole_and_the_same_twice() {
    let Some(data) = common::shared_data() else {
        return common::skip("needs ../shared/data (or DEI_DATA)");
    };
    let Some(repos) = common::bundled_repos() else {
        return common::skip("needs the bundles in ../shared/repos");
    };
    // Only the bundled repositories' tasks: DEI_REPOS may hold more.
    let tasks = data.join("swebench_lite/test.jsonl");
    let ids: Vec<String> = dei_bench::data::load_tasks(&tasks)
        .expect("tasks load")
        .into_iter()
        .filter(|t| BUNDLED.contains(&t.repo.as_str()))
        .map(|t| t.instance_id)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str| {
        write_scripts(&ReproOptions {
            tasks: tasks.clone(),
            repos: repos.clone(),
            out: dir.path().join(out),
            split: Split::All,
            ids: ids.clone(),
        })
        .expect("scripts written")
    };
    let first = run("a");
    assert_eq!(
        first.rows.len(),
        26,
        "26 Lite instances in the three bundles"
    );
    assert_eq!(first.without_repo, 0);
    let mut written = 0;
    for r in &first.rows {
        assert!(r.error.is_none(), "{}: {:?}", r.instance_id, r.error);
        let path = dir.path().join("a").join(format!("{}.py", r.instance_id));
        match &r.sha256 {
            Some(sha) => {
                written += 1;
                let text = std::fs::read_to_string(&path).expect("the script the index names");
                let hex: String = Sha256::digest(text.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                assert_eq!(&hex, sha, "{}", r.instance_id);
                assert!(r.statements > 0 && !r.sources.is_empty(), "{r:?}");
                assert!(
                    text.starts_with("# Reproduction written by dei"),
                    "{}",
                    r.instance_id
                );
            }
            None => {
                assert!(!path.exists(), "{}: a file without a script", r.instance_id);
                assert_eq!(r.statements, 0);
            }
        }
    }
    // Most of these issues are prose and tracebacks; some show code.
    assert!(written > 0 && written < 26, "{written} scripts");
    // Parallel, yet the same bytes on a second run.
    assert_eq!(run("b").digest, first.digest);

    // Every script is Python the interpreter can parse.
    let check = "import ast, glob, sys\n\
        bad = []\n\
        for f in sorted(glob.glob(sys.argv[1] + '/*.py')):\n\
        \x20   try:\n\
        \x20       ast.parse(open(f).read())\n\
        \x20   except SyntaxError as e:\n\
        \x20       bad.append(f + ': ' + str(e))\n\
        print('\\n'.join(bad))\n\
        sys.exit(1 if bad else 0)\n";
    match Command::new("python3")
        .arg("-c")
        .arg(check)
        .arg(dir.path().join("a"))
        .output()
    {
        Ok(o) => assert!(
            o.status.success(),
            "scripts that do not parse:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => common::skip("no python3 on PATH: the scripts were not parsed"),
    }
}
