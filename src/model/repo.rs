//! Stage 2b: the repository at the base commit, read straight from the git object
//! database with git2. No checkout, nothing written to the user's repository.

use anyhow::{bail, Context as _};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Environment variable naming a folder of repositories (same as `--repos`).
pub const REPOS_ENV: &str = "DEI_REPOS";

/// Find the repository for `owner/name` under a folder of repositories. Accepted layouts:
/// `owner__name` (SWE-bench style), `owner+name/repo`, `owner+name`, `name`, each a clone or bare git dir.
pub fn find_in_repos_dir(dir: &Path, repo: &str) -> Option<PathBuf> {
    let (owner, name) = repo.split_once('/').unwrap_or(("", repo));
    let candidates = [
        dir.join(format!("{owner}__{name}")),
        dir.join(format!("{owner}+{name}")).join("repo"),
        dir.join(format!("{owner}+{name}")),
        dir.join(format!("{owner}__{name}.git")),
        dir.join(name),
        dir.join(format!("{name}.git")),
    ];
    candidates.into_iter().find(|p| p.exists())
}

/// Work out where the repository is: `--repo` wins, then `--repos`/`DEI_REPOS`.
pub fn find_repo(
    repo_flag: Option<&Path>,
    repos_dir: Option<&Path>,
    repo_name: &str,
) -> anyhow::Result<PathBuf> {
    if let Some(p) = repo_flag {
        return Ok(p.to_path_buf());
    }
    let env_dir = std::env::var_os(REPOS_ENV).map(PathBuf::from);
    let dir = repos_dir.map(Path::to_path_buf).or(env_dir);
    match dir {
        Some(dir) => find_in_repos_dir(&dir, repo_name).with_context(|| {
            let (owner, name) = repo_name.split_once('/').unwrap_or(("", repo_name));
            format!(
                "no repository for `{repo_name}` under {}\n  hint: clone it there as {owner}__{name} (a bare clone is enough): git clone --bare {} {}",
                dir.display(),
                shell_quote(&format!("https://github.com/{repo_name}")),
                shell_quote(&dir.join(format!("{owner}__{name}")).to_string_lossy())
            )
        }),
        None => bail!(
            "no repository given for `{repo_name}`\n  hint: pass --repo PATH (a clone or bare git dir), or --repos DIR / {REPOS_ENV}=DIR holding owner__name folders"
        ),
    }
}

/// `s` as one word for a POSIX shell: unchanged when it holds only safe characters, else in
/// single quotes (a `'` inside written as `'\''`), so a hint can be pasted as it is.
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:@%+=,".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Words of a shell command line as a POSIX shell splits them: single quotes keep everything,
/// double quotes keep all but `\"` and `\\`; `None` for an unclosed quote.
pub fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    out.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    out.extend(word);
    Some(out)
}

/// One commit of a snapshot's history: its message and the paths it changed.
#[derive(Debug)]
pub struct CommitChange {
    pub id: git2::Oid,
    pub message: String,
    pub paths: Vec<String>,
}

fn commit_cache() -> &'static std::sync::Mutex<HashMap<git2::Oid, Arc<CommitChange>>> {
    static C: std::sync::OnceLock<std::sync::Mutex<HashMap<git2::Oid, Arc<CommitChange>>>> =
        std::sync::OnceLock::new();
    C.get_or_init(Default::default)
}

/// A read-only view of one commit's tree.
pub struct Snapshot {
    repo: git2::Repository,
    tree_id: git2::Oid,
    pub commit: String,
    pub path: PathBuf,
}

impl Snapshot {
    /// Open `path` (clone or bare dir) at `commit` (full or abbreviated SHA, or any revspec).
    pub fn open(path: &Path, commit: &str) -> anyhow::Result<Snapshot> {
        if !path.exists() {
            bail!("repository {} does not exist\n  hint: pass --repo with a git clone or bare git dir", path.display());
        }
        // Objects are read, never written: skip libgit2's SHA-1 re-check of every object read
        // (git itself does not re-hash on read; it was a tenth of a whole-benchmark run).
        static NO_REHASH: std::sync::Once = std::sync::Once::new();
        NO_REHASH.call_once(|| git2::opts::strict_hash_verification(false));
        let repo = git2::Repository::open(path).map_err(|e| {
            anyhow::anyhow!(
                "{} is not a git repository ({})\n  hint: pass a clone or a bare git dir",
                path.display(),
                e.message()
            )
        })?;
        let object = repo.revparse_single(commit).map_err(|_| {
            anyhow::anyhow!(
                "commit {commit} is not in {}\n  hint: fetch it (git -C {} fetch origin {}) or check the task's base_commit",
                path.display(),
                shell_quote(&path.to_string_lossy()),
                shell_quote(commit)
            )
        })?;
        let (tree_id, commit) = {
            let commit_obj = object.peel_to_commit().map_err(|e| {
                anyhow::anyhow!(
                    "{commit} in {} is not a commit: {}",
                    path.display(),
                    e.message()
                )
            })?;
            (commit_obj.tree_id(), commit_obj.id().to_string())
        };
        drop(object);
        Ok(Snapshot {
            repo,
            tree_id,
            commit,
            path: path.to_path_buf(),
        })
    }

    /// Text of a file at this commit; `Ok(None)` when the path is not in the tree.
    pub fn read(&self, path: &str) -> anyhow::Result<Option<String>> {
        let tree = self.repo.find_tree(self.tree_id)?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(_) => return Ok(None),
        };
        let object = entry.to_object(&self.repo)?;
        let Some(blob) = object.as_blob() else {
            return Ok(None);
        };
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// Read many files at once (missing ones map to `None`).
    pub fn read_all<'a>(
        &self,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> anyhow::Result<HashMap<String, Option<String>>> {
        let mut out = HashMap::new();
        for p in paths {
            if !out.contains_key(p) {
                out.insert(p.to_string(), self.read(p)?);
            }
        }
        Ok(out)
    }

    /// Every blob in the tree as `(path, blob id)`, sorted by path. Blob ids let callers cache
    /// file contents across commits (an unchanged file keeps its id).
    pub fn list_blobs(&self) -> anyhow::Result<Vec<(String, git2::Oid)>> {
        let tree = self.repo.find_tree(self.tree_id)?;
        let mut files = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                files.push((format!("{root}{}", entry.name().unwrap_or("")), entry.id()));
            }
            git2::TreeWalkResult::Ok
        })?;
        files.sort();
        Ok(files)
    }

    /// Text of one blob by id (lossy UTF-8); `Ok(None)` when it is not a blob.
    pub fn read_blob(&self, id: git2::Oid) -> anyhow::Result<Option<String>> {
        match self.repo.find_blob(id) {
            Ok(blob) => Ok(Some(String::from_utf8_lossy(blob.content()).into_owned())),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Up to `max` commits before this snapshot along first parents (this commit first), each
    /// with its message and the paths it changed against its first parent (a merge: everything
    /// its branch brought in). The snapshot's own future is never read, so nothing of the fix
    /// can leak in. Root commits are left out (they "change" every file); a shallow clone's
    /// history ends where its objects do. Commits are cached
    /// process-wide by id, so issues of one repository share the walk.
    pub fn history(&self, max: usize) -> anyhow::Result<Vec<Arc<CommitChange>>> {
        let mut walk = self.repo.revwalk()?;
        walk.push(git2::Oid::from_str(&self.commit)?)?;
        walk.simplify_first_parent()?;
        let mut out = Vec::new();
        for id in walk.take(max) {
            // A shallow clone ends its history early: stop there, keep what was read.
            let Ok(id) = id else { break };
            if let Some(hit) = commit_cache().lock().ok().and_then(|c| c.get(&id).cloned()) {
                out.push(hit);
                continue;
            }
            let Ok(commit) = self.repo.find_commit(id) else {
                break;
            };
            let Ok(parent) = commit.parent(0) else {
                continue;
            };
            let mut opts = git2::DiffOptions::new();
            opts.skip_binary_check(true);
            let diff = self.repo.diff_tree_to_tree(
                Some(&parent.tree()?),
                Some(&commit.tree()?),
                Some(&mut opts),
            )?;
            let paths: Vec<String> = diff
                .deltas()
                .filter_map(|d| d.new_file().path().or_else(|| d.old_file().path()))
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            let c = Arc::new(CommitChange {
                id,
                message: String::from_utf8_lossy(commit.message_bytes()).into_owned(),
                paths,
            });
            if let Ok(mut cache) = commit_cache().lock() {
                if cache.len() > 100_000 {
                    cache.clear();
                }
                cache.insert(id, c.clone());
            }
            out.push(c);
        }
        Ok(out)
    }

    /// Every blob path in the tree, sorted.
    pub fn list_files(&self) -> anyhow::Result<Vec<String>> {
        let tree = self.repo.find_tree(self.tree_id)?;
        let mut files = Vec::new();
        tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                files.push(format!("{root}{}", entry.name().unwrap_or("")));
            }
            git2::TreeWalkResult::Ok
        })?;
        files.sort();
        Ok(files)
    }
}

#[cfg(test)]
mod quote_tests {
    use super::*;

    #[test]
    fn quoted_words_survive_a_real_shell() {
        for s in [
            "plain/path-1.git",
            "my repos/textkit.git",
            "it's $HOME; rm -rf x `id`",
            "",
        ] {
            let q = shell_quote(s);
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {q}"))
                .output()
                .expect("sh runs");
            assert_eq!(String::from_utf8_lossy(&out.stdout), s, "{q}");
        }
    }

    #[test]
    fn unknown_commit_hint_quotes_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let repo_dir = dir.path().join("my repo's copy");
        git2::Repository::init_bare(&repo_dir).unwrap();
        let err = match Snapshot::open(&repo_dir, "deadbeef") {
            Ok(_) => panic!("an empty repository has no such commit"),
            Err(e) => e.to_string(),
        };
        let quoted = shell_quote(&repo_dir.to_string_lossy());
        assert!(quoted.starts_with('\''), "{quoted}");
        assert!(
            err.contains(&format!("git -C {quoted} fetch origin deadbeef")),
            "{err}"
        );
    }
}
