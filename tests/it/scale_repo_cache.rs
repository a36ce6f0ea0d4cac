//! `FileIndex::from_snapshot` reads through a process-wide cache keyed by blob id: across
//! commits it must still give exactly each commit's files.

use crate::support::scale_util;

use dei::localize::search::FileIndex;
use dei::model::repo::Snapshot;
use scale_util::git;

fn contents(files: &FileIndex) -> Vec<(String, String)> {
    files
        .files
        .iter()
        .map(|f| (f.path.clone(), f.text.to_string()))
        .collect()
}

#[test]
fn repo_files_follow_each_commit_through_the_blob_cache() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("r");
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("pkg/a.py"), "def alpha():\n    return 1\n").unwrap();
    std::fs::write(repo.join("pkg/b.py"), "from .a import alpha\nalpha()\n").unwrap();
    std::fs::write(repo.join("README.md"), "not python\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "one"]);
    let one = git(&repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("pkg/a.py"), "def beta():\n    return 2\n").unwrap();
    std::fs::remove_file(repo.join("pkg/b.py")).unwrap();
    std::fs::write(repo.join("pkg/c.py"), "class Gamma:\n    pass\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "two"]);
    let two = git(&repo, &["rev-parse", "HEAD"]);

    let expect_one = vec![
        (
            "pkg/a.py".to_string(),
            "def alpha():\n    return 1\n".to_string(),
        ),
        (
            "pkg/b.py".to_string(),
            "from .a import alpha\nalpha()\n".to_string(),
        ),
    ];
    let expect_two = vec![
        (
            "pkg/a.py".to_string(),
            "def beta():\n    return 2\n".to_string(),
        ),
        (
            "pkg/c.py".to_string(),
            "class Gamma:\n    pass\n".to_string(),
        ),
    ];
    // One, two, then one again (served from the cache).
    for (commit, want) in [
        (&one, &expect_one),
        (&two, &expect_two),
        (&one, &expect_one),
    ] {
        let snap = Snapshot::open(&repo, commit).unwrap();
        let files = FileIndex::from_snapshot(&snap).unwrap();
        assert_eq!(&contents(&files), want, "at {commit}");
        let defining = |name: &str| -> Vec<String> {
            files
                .files_defining(name)
                .iter()
                .map(|&i| files.files[i].path.clone())
                .collect()
        };
        let containing = |name: &str| -> Vec<String> {
            files
                .files_containing(name)
                .iter()
                .map(|&i| files.files[i].path.clone())
                .collect()
        };
        if commit == &one {
            assert_eq!(defining("alpha"), ["pkg/a.py"]);
            assert!(defining("beta").is_empty());
            assert_eq!(containing("alpha"), ["pkg/a.py", "pkg/b.py"]);
        } else {
            assert_eq!(defining("beta"), ["pkg/a.py"]);
            assert_eq!(defining("Gamma"), ["pkg/c.py"]);
            assert!(containing("alpha").is_empty());
        }
    }
}
