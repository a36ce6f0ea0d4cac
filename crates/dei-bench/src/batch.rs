//! Rebuilding many candidates in parallel (rayon), reading base blobs with git2.
//!
//! `git2::Repository` is `Send` but not `Sync`, so each rayon worker opens its own handles
//! (`map_init`), keyed by repository path, and caches the tree of the last commit it read.

use anyhow::Context as _;
use dei::model::{Candidate, PatchView};
use dei::patch::{paths_needed, rebuild, Files, Mode};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One candidate to rebuild against `commit` of the repository at `repo`.
#[derive(Debug, Clone)]
pub struct Job<'a> {
    pub candidate: &'a Candidate,
    pub repo: PathBuf,
    pub commit: String,
}

/// Per-worker state: open repositories and the last commit's tree in each.
#[derive(Default)]
pub struct Reader {
    repos: HashMap<PathBuf, (git2::Repository, Option<(String, git2::Oid)>)>,
}

impl Reader {
    /// The base contents of `paths` at `commit` (missing paths map to `None`).
    pub fn read(&mut self, repo: &Path, commit: &str, paths: &[String]) -> anyhow::Result<Files> {
        if !self.repos.contains_key(repo) {
            let r = git2::Repository::open(repo)
                .with_context(|| format!("cannot open repository {}", repo.display()))?;
            self.repos.insert(repo.to_path_buf(), (r, None));
        }
        let (r, last) = self.repos.get_mut(repo).expect("inserted above");
        let tree_id = match last {
            Some((c, t)) if c == commit => *t,
            _ => {
                let t = r
                    .revparse_single(commit)
                    .and_then(|o| o.peel_to_commit())
                    .map(|c| c.tree_id())
                    .with_context(|| format!("commit {commit} is not in {}", repo.display()))?;
                *last = Some((commit.to_string(), t));
                t
            }
        };
        let tree = r.find_tree(tree_id)?;
        let mut out = Files::with_capacity(paths.len());
        for p in paths {
            let text = match tree.get_path(Path::new(p)) {
                Ok(e) if e.kind() == Some(git2::ObjectType::Blob) => {
                    let blob = r.find_blob(e.id())?;
                    Some(String::from_utf8_lossy(blob.content()).into_owned())
                }
                _ => None,
            };
            out.insert(p.clone(), text);
        }
        Ok(out)
    }
}

/// Rebuild every job in parallel; results keep the order of `jobs`.
pub fn rebuild_all(jobs: &[Job], mode: Mode) -> Vec<anyhow::Result<PatchView>> {
    jobs.par_iter()
        .map_init(Reader::default, |reader, job| {
            let paths = if job.candidate.is_empty() {
                Vec::new()
            } else {
                paths_needed(job.candidate)
            };
            let base = reader.read(&job.repo, &job.commit, &paths)?;
            Ok(rebuild(job.candidate, &base, mode))
        })
        .collect()
}
