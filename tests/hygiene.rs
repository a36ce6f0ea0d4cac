//! What the project promises about itself rather than about ranking: no machine-specific
//! absolute paths in its files, tests that leave nothing in the temp folder, real repositories
//! from the bundles in ../shared/repos, dry runs that write nothing, and examples/run.sh's
//! contract (a release build whose chatter stays off stdout).


mod common;
use common::*;
use std::process::Command;

#[test]
fn the_example_repository_is_built_into_target_and_leaves_nothing_in_the_temp_folder() {
    let repo = example_repo();
    let tmp = std::env::temp_dir();
    assert!(
        !repo.starts_with(&tmp),
        "{} is in the temp folder",
        repo.display()
    );
    assert!(repo.starts_with(target_dir()), "{}", repo.display());
    assert!(
        !tmp.join(format!("dei-example-{}", std::process::id()))
            .exists(),
        "this test binary left its example folder in {}",
        tmp.display()
    );
    // A fresh build: the right commit, and nothing beside it but the repository (no scratch).
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let fixtures = dir.path().join("fixtures");
    let built = build_example_repo(&fixtures);
    let head = Command::new("git")
        .arg("--git-dir")
        .arg(&built)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let tasks = std::fs::read_to_string(root().join("examples/tasks.jsonl")).unwrap();
    let task: serde_json::Value = serde_json::from_str(tasks.lines().next().unwrap()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&head.stdout).trim(),
        task["base_commit"].as_str().unwrap()
    );
    let left: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![built.file_name().unwrap().to_owned()]);
    // Asked again, it is the same repository, not rebuilt.
    assert_eq!(build_example_repo(&fixtures), built);
}

#[test]
fn real_data_tests_get_the_bundled_repositories() {
    if !root().join("../shared/repos").is_dir() {
        return skip("needs ../shared/repos (the bundles of requests, flask and pytest)");
    }
    let dir = bundled_repos().expect("../shared/repos holds bundles");
    assert!(dir.starts_with(target_dir()), "{}", dir.display());
    for name in ["psf/requests", "pallets/flask", "pytest-dev/pytest"] {
        let repo = dei::repo::find_in_repos_dir(&dir, name)
            .unwrap_or_else(|| panic!("{name} is not in {}", dir.display()));
        // A Lite base commit of each is readable.
        let tasks = dei::task::load_tasks(&root().join("../shared/data/swebench_lite/test.jsonl"))
            .expect("../shared/data beside ../shared/repos");
        let t = tasks.iter().find(|t| t.repo == name).unwrap();
        dei::repo::Snapshot::open(&repo, &t.base_commit)
            .unwrap_or_else(|e| panic!("{name} at {}: {e}", t.base_commit));
    }
    // No scratch folder is left behind.
    let scratch: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(scratch.is_empty(), "{scratch:?}");
}
