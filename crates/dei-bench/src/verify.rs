//! Checking the engine against real `git apply` on real candidates (used by
//! `tests/patch_git.rs` on a sample and by `cargo bench -p dei-bench --bench patch_vs_git` on
//! everything).
//!
//! For each repository a temporary `git clone --shared --no-checkout` of the (read-only) mirror is
//! made under the system temp dir; nothing is written to the mirror. For each candidate the
//! clone is checked out at the base commit (`git checkout -f` + `git clean -fdq`), the before
//! files are read, `git apply --check` and `git apply` are run, and the files git changed are
//! read back and compared byte for byte with the engine's after files.

use crate::batch::{rebuild_all, Job};
use anyhow::{bail, Context as _};
use dei::model::{Applies, Candidate, PatchView, Task};
use dei::patch::Mode;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One candidate of the real data set with what it needs.
#[derive(Debug, Clone)]
pub struct Item {
    pub candidate: Candidate,
    pub repo_name: String,
    pub repo: PathBuf,
    pub commit: String,
}

/// Load the non-empty candidates of `lite_candidates.jsonl` whose repository is under `mirror`.
/// Returns the items and the count skipped per missing repository.
pub fn load_items(
    data: &Path,
    mirror: &Path,
) -> anyhow::Result<(Vec<Item>, BTreeMap<String, usize>)> {
    let tasks = crate::data::load_tasks(&crate::data::tasks_file(data))?;
    let by_id: HashMap<&str, &Task> = tasks.iter().map(|t| (t.instance_id.as_str(), t)).collect();
    let path = crate::data::candidates_file(data);
    let mut candidates: Vec<Candidate> = crate::data::load_candidates(&path)?
        .into_values()
        .flatten()
        .collect();
    // In the order of the file.
    candidates.sort_by_key(|c| c.origin.line);
    let mut items = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for candidate in candidates {
        if candidate.patch.trim().is_empty() {
            continue;
        }
        let Some(task) = by_id.get(candidate.instance_id.as_str()) else {
            bail!(
                "{}:{}: instance {} is not in swebench_lite/test.jsonl",
                path.display(),
                candidate.origin.line.unwrap_or(0),
                candidate.instance_id
            )
        };
        let Some(repo) = dei::model::repo::find_in_repos_dir(mirror, &task.repo) else {
            *skipped.entry(task.repo.clone()).or_default() += 1;
            continue;
        };
        items.push(Item {
            candidate,
            repo_name: task.repo.clone(),
            repo,
            commit: task.base_commit.clone(),
        });
    }
    Ok((items, skipped))
}

/// A bounded, deterministic sample: whole instances (all their candidates) spread over every
/// repository, until `n` candidates.
pub fn sample(items: &[Item], n: usize) -> Vec<Item> {
    let mut by_repo: BTreeMap<&str, BTreeMap<&str, Vec<&Item>>> = BTreeMap::new();
    for it in items {
        by_repo
            .entry(&it.repo_name)
            .or_default()
            .entry(&it.candidate.instance_id)
            .or_default()
            .push(it);
    }
    let mut queues: Vec<Vec<Vec<&Item>>> = by_repo
        .into_values()
        .map(|m| m.into_values().collect())
        .collect();
    let mut out = Vec::new();
    let mut round = 0;
    while out.len() < n && queues.iter().any(|q| round < q.len()) {
        for q in &mut queues {
            // A stride coprime with the length visits every instance once, spread out.
            let len = q.len().max(1);
            let stride = (7..).find(|s| gcd(*s, len) == 1).unwrap_or(1);
            if let Some(inst) = q.get(round * stride % len).filter(|_| round < q.len()) {
                for it in inst {
                    if out.len() < n {
                        out.push((*it).clone());
                    }
                }
            }
        }
        round += 1;
    }
    out
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Damaged versions of a real diff, each a way agents get diffs wrong: counts off by one, no
/// `a/`/`b/` prefixes, trailing prose, CRLF line ends, whitespace-damaged context, a missing final
/// newline, a hunk moved by a few lines. Used to check the strict rules on rejections too.
pub fn variants(patch: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let mut bumped = false;
    let counts: String = patch
        .split_inclusive('\n')
        .map(|l| {
            if !bumped && l.starts_with("@@ -") {
                if let Some((os, ol, ns, nl)) = dei::patch::gitparse::fragment_header(l) {
                    bumped = true;
                    let tail = l.splitn(3, "@@").nth(2).unwrap_or("\n");
                    return format!("@@ -{os},{} +{ns},{} @@{tail}", ol + 1, nl + 1);
                }
            }
            l.to_string()
        })
        .collect();
    out.push(("count+1", counts));
    let unprefixed: String = patch
        .split_inclusive('\n')
        .map(|l| {
            if let Some(r) = l.strip_prefix("--- a/") {
                format!("--- {r}")
            } else if let Some(r) = l.strip_prefix("+++ b/") {
                format!("+++ {r}")
            } else if l.starts_with("diff --git ") {
                l.replace(" a/", " ").replace(" b/", " ")
            } else {
                l.to_string()
            }
        })
        .collect();
    out.push(("no-prefix", unprefixed));
    out.push((
        "trailing-prose",
        format!("{patch}\nThis patch fixes the issue.\n@@ is not a header here\n"),
    ));
    out.push(("crlf", patch.replace('\n', "\r\n")));
    let mut ws_done = false;
    let ws: String = patch
        .split_inclusive('\n')
        .map(|l| {
            if !ws_done && l.starts_with(' ') && l.trim().len() > 3 {
                ws_done = true;
                return format!(" {}", l.replacen("    ", "\t", 1).trim_start_matches(' '))
                    .replacen(' ', "  ", 1);
            }
            l.to_string()
        })
        .collect();
    out.push(("ws-context", ws));
    out.push(("no-final-newline", patch.trim_end_matches('\n').to_string()));
    let moved: String = patch
        .split_inclusive('\n')
        .map(|l| match dei::patch::gitparse::fragment_header(l) {
            Some((os, ol, ns, nl)) => format!(
                "@@ -{},{ol} +{},{nl} @@{}",
                os + 3,
                ns + 3,
                l.splitn(3, "@@").nth(2).unwrap_or("\n")
            ),
            None => l.to_string(),
        })
        .collect();
    out.push(("moved+3", moved));
    out
}

/// [`variants`] of each item, as items of their own (agent `run~variant`).
pub fn variant_items(items: &[Item]) -> Vec<Item> {
    items
        .iter()
        .flat_map(|it| {
            variants(&it.candidate.patch)
                .into_iter()
                .map(move |(name, patch)| {
                    let mut v = it.clone();
                    v.candidate.agent = format!("{}~{name}", it.candidate.agent);
                    v.candidate.patch = patch;
                    v
                })
        })
        .collect()
}

/// What git did with one candidate.
#[derive(Debug, Clone, Default)]
pub struct GitOutcome {
    pub check_ok: bool,
    pub apply_ok: bool,
    pub stderr: String,
    /// Files git changed: path → content after (`None`: deleted).
    pub after: BTreeMap<String, Option<Vec<u8>>>,
    pub checkout: Duration,
    pub apply: Duration,
    /// Reading the before files and the after files.
    pub read: Duration,
    /// `git apply --check` and `git status` (verification only, not part of the baseline).
    pub verify: Duration,
}

/// A throwaway clone of one repository.
pub struct Checkout {
    pub dir: PathBuf,
    head: Option<String>,
    /// Paths left out of the checkout because the mirror lacks their blobs.
    pub excluded: Vec<String>,
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C").arg(dir);
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("LC_ALL", "C");
    c.stdin(Stdio::null());
    c
}

fn run(mut c: Command) -> anyhow::Result<std::process::Output> {
    let out = c.output().context("cannot run git (is it installed?)")?;
    Ok(out)
}

impl Checkout {
    /// `git clone --shared --no-checkout <mirror> <tmp>/<name>`.
    pub fn new(mirror: &Path, tmp: &Path, name: &str) -> anyhow::Result<Checkout> {
        let dir = tmp.join(name.replace('/', "__"));
        let out = run({
            let mut c = git(tmp);
            c.args(["clone", "-q", "--shared", "--no-checkout"])
                .arg(mirror)
                .arg(&dir);
            c
        })?;
        if !out.status.success() {
            bail!(
                "git clone --shared {} failed: {}",
                mirror.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(Checkout {
            dir,
            head: None,
            excluded: Vec::new(),
        })
    }

    /// Reset the work tree to `commit` (clean, nothing untracked). The mirrors may lack a few
    /// large blobs; such paths are left out of the checkout with a sparse-checkout exclusion
    /// (no candidate patch touches them; the engine would report them missing).
    pub fn reset(&mut self, commit: &str) -> anyhow::Result<()> {
        for _ in 0..200 {
            let out = run({
                let mut c = git(&self.dir);
                c.args(["checkout", "-q", "-f", "--detach", commit]);
                c
            })?;
            if out.status.success() {
                break;
            }
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            let missing = err.lines().find_map(|l| {
                l.strip_prefix("error: invalid object ")
                    .and_then(|r| r.split_once(" for '"))
                    .map(|(_, p)| p.trim_end_matches('\'').to_string())
            });
            let Some(path) = missing else {
                bail!("git checkout {commit} failed: {err}");
            };
            self.exclude(&path)?;
        }
        if self.head.is_some() {
            run({
                let mut c = git(&self.dir);
                c.args(["clean", "-fdqx"]);
                c
            })?;
        }
        self.head = Some(commit.to_string());
        Ok(())
    }

    fn exclude(&mut self, path: &str) -> anyhow::Result<()> {
        let file = self.dir.join(".git/info/sparse-checkout");
        let mut text = std::fs::read_to_string(&file).unwrap_or_default();
        if text.is_empty() {
            text.push_str("/*\n");
            run({
                let mut c = git(&self.dir);
                c.args(["config", "core.sparseCheckout", "true"]);
                c
            })?;
        }
        text.push_str(&format!("!/{path}\n"));
        std::fs::create_dir_all(file.parent().expect("has parent"))?;
        std::fs::write(&file, text)?;
        self.excluded.push(path.to_string());
        Ok(())
    }

    /// Check out `commit`, read `before_paths`, run `git apply --check` and `git apply`, read back
    /// what changed.
    pub fn apply(
        &mut self,
        commit: &str,
        patch: &str,
        before_paths: &[String],
    ) -> anyhow::Result<GitOutcome> {
        let mut o = GitOutcome::default();
        let t = Instant::now();
        self.reset(commit)?;
        o.checkout = t.elapsed();
        let t = Instant::now();
        for p in before_paths {
            let _ = std::fs::read(self.dir.join(p));
        }
        o.read = t.elapsed();
        let patch_file = self.dir.join(".git/dei-candidate.diff");
        std::fs::write(&patch_file, patch)?;
        let t = Instant::now();
        let check = run({
            let mut c = git(&self.dir);
            c.args(["apply", "--check"]).arg(&patch_file);
            c
        })?;
        o.check_ok = check.status.success();
        o.verify = t.elapsed();
        let t = Instant::now();
        let applied = run({
            let mut c = git(&self.dir);
            c.arg("apply").arg(&patch_file);
            c
        })?;
        o.apply = t.elapsed();
        o.apply_ok = applied.status.success();
        o.stderr = String::from_utf8_lossy(if o.check_ok {
            &applied.stderr
        } else {
            &check.stderr
        })
        .into_owned();
        if o.apply_ok {
            let t = Instant::now();
            let st = run({
                let mut c = git(&self.dir);
                c.args(["status", "--porcelain=v1", "-z", "-uall", "--no-renames"]);
                c
            })?;
            o.verify += t.elapsed();
            let t = Instant::now();
            for rec in st.stdout.split(|&b| b == 0).filter(|r| r.len() > 3) {
                let path = String::from_utf8_lossy(&rec[3..]).into_owned();
                let content = std::fs::read(self.dir.join(&path)).ok();
                o.after.insert(path, content);
            }
            o.read += t.elapsed();
        }
        Ok(o)
    }
}

/// The engine's after files of a view, as git would leave them (path → `None` when deleted).
pub fn our_after(view: &PatchView) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    for f in &view.files {
        if let Some(a) = &f.after {
            out.insert(f.path.clone(), Some(a.as_bytes().to_vec()));
        }
    }
    for f in &view.files {
        // A deletion or the old side of a rename.
        if f.after.is_none() && f.error.is_none() {
            out.entry(f.path.clone()).or_insert(None);
        }
    }
    out
}

/// The whole comparison.
#[derive(Debug, Default)]
pub struct Report {
    pub checked: usize,
    pub git_accepts: usize,
    pub check_vs_apply_differ: usize,
    pub we_accept: usize,
    pub agree: usize,
    pub after_compared: usize,
    pub after_identical: usize,
    pub tolerant_rescues: usize,
    pub disagreements: Vec<String>,
    /// Every candidate git rejects: why (git and engine), and what tolerant mode made of it.
    pub rejected: Vec<String>,
    pub engine_time: Duration,
    pub git_checkout: Duration,
    pub git_apply: Duration,
    pub git_read: Duration,
    /// `git apply --check` + `git status`: verification, excluded from the baseline.
    pub git_verify: Duration,
    pub git_wall: Duration,
    pub per_repo: BTreeMap<String, usize>,
}

impl Report {
    /// The checkout-based way of doing the engine's work: checkout + `git apply` + reads.
    pub fn baseline(&self) -> Duration {
        self.git_checkout + self.git_apply + self.git_read
    }

    pub fn summary(&self) -> String {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                100.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        let ours = self.checked as f64 / self.engine_time.as_secs_f64().max(1e-9);
        let gits = self.checked as f64 / self.baseline().as_secs_f64().max(1e-9);
        format!(
            "candidates checked: {} ({})\n\
             git apply --check accepts: {} ; engine strict accepts: {}\n\
             acceptance agreement with git: {}/{} ({:.2}%)\n\
             after files byte-identical where git accepts: {}/{} candidates ({:.2}%)\n\
             tolerant mode rescues (git rejects, tolerant applies): {}\n\
             git apply --check vs git apply differ: {}\n\
             engine: {:.3} s for all ({:.0} candidates/s, tolerant rebuild incl. blob reads, rayon)\n\
             git baseline (checkout + git apply + read before/after): {:.3} s ({:.1} candidates/s; checkout {:.1} s, apply {:.1} s, reads {:.1} s; verification-only --check/status {:.1} s not counted)\n\
             speed ratio engine/git: {:.0}x",
            self.checked,
            self.per_repo.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", "),
            self.git_accepts,
            self.we_accept,
            self.agree,
            self.checked,
            pct(self.agree, self.checked),
            self.after_identical,
            self.after_compared,
            pct(self.after_identical, self.after_compared),
            self.tolerant_rescues,
            self.check_vs_apply_differ,
            self.engine_time.as_secs_f64(),
            ours,
            self.baseline().as_secs_f64(),
            gits,
            self.git_checkout.as_secs_f64(),
            self.git_apply.as_secs_f64(),
            self.git_read.as_secs_f64(),
            self.git_verify.as_secs_f64(),
            ours / gits.max(1e-9),
        )
    }
}

/// Run the engine on `items` (timed, in parallel) and compare each with git. `on_git` is called
/// after each git run (progress).
pub fn compare(
    items: &[Item],
    tmp: &Path,
    mut on_git: impl FnMut(usize, usize),
) -> anyhow::Result<Report> {
    let mut r = Report {
        checked: items.len(),
        ..Report::default()
    };
    for it in items {
        *r.per_repo.entry(it.repo_name.clone()).or_default() += 1;
    }
    let jobs: Vec<Job> = items
        .iter()
        .map(|it| Job {
            candidate: &it.candidate,
            repo: it.repo.clone(),
            commit: it.commit.clone(),
        })
        .collect();
    let t = Instant::now();
    let views = rebuild_all(&jobs, Mode::Tolerant);
    r.engine_time = t.elapsed();
    let views: Vec<PatchView> = views.into_iter().collect::<anyhow::Result<_>>()?;

    // git, in (repo, commit) order so that consecutive candidates share a checkout.
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        (&items[a].repo_name, &items[a].commit).cmp(&(&items[b].repo_name, &items[b].commit))
    });
    let mut checkouts: HashMap<String, Checkout> = HashMap::new();
    let t = Instant::now();
    for (done, &i) in order.iter().enumerate() {
        let it = &items[i];
        if !checkouts.contains_key(&it.repo_name) {
            checkouts.insert(
                it.repo_name.clone(),
                Checkout::new(&it.repo, tmp, &it.repo_name)?,
            );
        }
        let co = checkouts.get_mut(&it.repo_name).expect("inserted");
        let before_paths: Vec<String> = views[i]
            .files
            .iter()
            .filter(|f| f.before.is_some())
            .map(|f| f.path.clone())
            .collect();
        let g = co.apply(&it.commit, &it.candidate.patch, &before_paths)?;
        r.git_checkout += g.checkout;
        r.git_apply += g.apply;
        r.git_read += g.read;
        r.git_verify += g.verify;
        let view = &views[i];
        let ours = view.applies == Applies::Clean;
        r.git_accepts += g.check_ok as usize;
        r.we_accept += ours as usize;
        r.check_vs_apply_differ += (g.check_ok != g.apply_ok) as usize;
        let key = format!(
            "{} {} (line {})",
            it.candidate.agent,
            it.candidate.instance_id,
            it.candidate.origin.line.unwrap_or(0)
        );
        if ours == g.check_ok {
            r.agree += 1;
        } else {
            let why = view
                .error
                .clone()
                .or_else(|| view.files.iter().find_map(|f| f.error.clone()))
                .unwrap_or_default();
            r.disagreements.push(format!(
                "ACCEPT {key}: git={} engine={} | git: {} | engine: {}",
                g.check_ok,
                ours,
                g.stderr.trim().replace('\n', " / "),
                why
            ));
        }
        if !g.check_ok && view.applies == Applies::Fuzzy {
            r.tolerant_rescues += 1;
        }
        if !g.check_ok {
            let why = view
                .error
                .clone()
                .or_else(|| view.files.iter().find_map(|f| f.error.clone()))
                .unwrap_or_default();
            let statuses: Vec<String> = view
                .files
                .iter()
                .flat_map(|f| &f.hunks)
                .map(|h| format!("{h:?}"))
                .collect();
            r.rejected.push(format!(
                "{key}: tolerant={} [{}] | git: {} | engine: {why}",
                view.applies.label(),
                statuses.join(" "),
                g.stderr.trim().replace('\n', " / ")
            ));
        }
        if g.apply_ok && ours {
            r.after_compared += 1;
            let mine = our_after(view);
            if mine == g.after {
                r.after_identical += 1;
            } else {
                let paths: BTreeSet<&String> = mine.keys().chain(g.after.keys()).collect();
                let diff: Vec<String> = paths
                    .into_iter()
                    .filter(|p| mine.get(*p) != g.after.get(*p))
                    .map(|p| {
                        format!(
                            "{p} (git: {}, engine: {})",
                            state(g.after.get(p)),
                            state(mine.get(p))
                        )
                    })
                    .collect();
                r.disagreements
                    .push(format!("BYTES {key}: {}", diff.join(", ")));
            }
        }
        on_git(done + 1, items.len());
    }
    r.git_wall = t.elapsed();
    for co in checkouts.values() {
        let _ = std::fs::remove_dir_all(&co.dir);
    }
    Ok(r)
}

fn state(v: Option<&Option<Vec<u8>>>) -> String {
    match v {
        None => "unchanged".into(),
        Some(None) => "deleted".into(),
        Some(Some(b)) => format!("{} bytes", b.len()),
    }
}
