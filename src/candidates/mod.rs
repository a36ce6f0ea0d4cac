//! Stage 1: load candidate patches.
//!
//! Accepted, auto-detected, alone or mixed under one folder:
//! - SWE-bench prediction files (`*.jsonl`, `*.json`): records with `instance_id` and
//!   `model_patch` (a list, an `{id: record}` map, or one record);
//! - patch folders: `<agent>/<instance_id>.diff` or `.patch`.
//!
//! One bad record never sinks the others: it becomes a [`Problem`] (with its `file:line`)
//! and loading goes on. A JSON Lines file is read as bytes and decoded line by line, so one
//! line that is not UTF-8 costs that line only.
//!
//! # Agent names
//!
//! An agent is named after the run its candidates come from. One rule, here, for `dei rank`,
//! `dei rank --all` ([`crate::rank::run::index`]), `dei eval` and label files
//! ([`crate::metrics::labels`]):
//! 1. a record's `agent` field, else its `run` field;
//! 2. else, in a predictions file whose records carry several distinct `model_name_or_path`
//!    values (a merged file of many agents), that value;
//! 3. else the source ([`source_name`]): a patch folder's name; a predictions file's stem, or
//!    the name of the folder it is in when the stem says nothing about the run
//!    (`all_preds.jsonl`, `predictions.json`, `results.json`, … see [`GENERIC_STEMS`](crate::model::paths::GENERIC_STEMS)).
//!
//! Otherwise `model_name_or_path` is not a name: published runs share one
//! (`gpt-4-0125-preview`) or carry another run's. When rule 2 or 3 gives the same name to
//! several sources, each becomes `name@source`. `--agent-name SOURCE=NAME` ([`Naming`])
//! overrides the rule; SOURCE is a predictions file or patch folder, or a derived name.

use crate::model::paths::has_generic_stem;
use crate::model::{Candidate, Origin};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The family of an agent: runs of one agent (same scaffold, other seeds or settings) share it,
/// and agreement within a family counts less than agreement across families.
///
/// Rule: split the name at `_`; drop a leading 8-digit date token (`20240604_CodeR` → `CodeR`);
/// the family is the first remaining token with a trailing `-run-N`/`-N` removed. So
/// `acr-v20240408_acr-run-3` and `acr-v20240408_acr-val-only` → `acr-v20240408`,
/// `sweagent-gpt4-0125_cost_2_2` → `sweagent-gpt4-0125`, `20240623_moatless_claude35sonnet` → `moatless`.
pub fn family_of(agent: &str) -> String {
    let mut tokens: Vec<&str> = agent.split('_').filter(|t| !t.is_empty()).collect();
    if tokens.len() > 1 && tokens[0].len() == 8 && tokens[0].bytes().all(|b| b.is_ascii_digit()) {
        tokens.remove(0);
    }
    let first = tokens.first().copied().unwrap_or(agent);
    let mut fam = first.to_string();
    loop {
        let trimmed = strip_run_suffix(&fam);
        if trimmed.len() == fam.len() {
            break;
        }
        fam = trimmed.to_string();
    }
    if fam.is_empty() {
        agent.to_string()
    } else {
        fam
    }
}

fn strip_run_suffix(s: &str) -> &str {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_digit());
    // A run number has one or two digits (`-3`, `-run-12`); `-0125` is part of a model name.
    if digits.len() < s.len() && s.len() - digits.len() <= 2 {
        let base = digits.trim_end_matches(['-', '.']);
        let base = base.strip_suffix("-run").unwrap_or(base);
        if base.len() < digits.len() && !base.is_empty() {
            return base;
        }
    }
    s
}

/// Something in the input that could not be used, with where it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Problem {
    pub origin: Origin,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// At most `max` problems, one a line (`file:line: message`), then `… and N more problems`.
pub fn problem_lines(problems: &[Problem], max: usize) -> Vec<String> {
    let mut lines: Vec<String> = problems.iter().take(max).map(ToString::to_string).collect();
    if problems.len() > max {
        lines.push(format!("… and {} more problems", problems.len() - max));
    }
    lines
}

/// Everything found under the given inputs.
#[derive(Debug, Default)]
pub struct Loaded {
    pub candidates: Vec<Candidate>,
    pub problems: Vec<Problem>,
    /// The `--agent-name` rules ([`Naming`]) that renamed something.
    pub names_used: BTreeSet<usize>,
}

impl Loaded {
    /// Keep only the candidates for one issue.
    pub fn for_issue(&self, instance_id: &str) -> Vec<Candidate> {
        self.candidates
            .iter()
            .filter(|c| c.instance_id == instance_id)
            .cloned()
            .collect()
    }

    /// The distinct agents, in first-seen order.
    pub fn agents(&self) -> Vec<String> {
        let mut seen = Vec::new();
        for c in &self.candidates {
            if !seen.contains(&c.agent) {
                seen.push(c.agent.clone());
            }
        }
        seen
    }

    /// Why `paths` gave no candidate for `instance_id`, as an error message: every problem
    /// (up to ten, then how many more), and the hint that fits what was found.
    pub fn nothing_for(&self, instance_id: &str, paths: &[PathBuf]) -> String {
        let mut msg = format!(
            "no candidates for issue {instance_id} in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for line in problem_lines(&self.problems, 10) {
            msg.push_str("\n  ");
            msg.push_str(&line);
        }
        if !self.candidates.is_empty() {
            let ids: BTreeSet<&str> = self
                .candidates
                .iter()
                .map(|c| c.instance_id.as_str())
                .collect();
            let shown: Vec<&str> = ids.iter().take(3).copied().collect();
            msg.push_str(&format!(
                "\n  hint: {} candidate(s) were found, all for other issues ({}{}): prediction records need \"instance_id\": \"{instance_id}\"; patch files must be named <agent>/{instance_id}.diff",
                self.candidates.len(),
                shown.join(", "),
                if ids.len() > shown.len() { ", …" } else { "" }
            ));
        } else if self.problems.is_empty() {
            for p in paths {
                let found = if p.is_dir() {
                    files_under(p).map_or(0, |files| {
                        files
                            .iter()
                            .filter(|f| {
                                matches!(extension(f).as_str(), "json" | "jsonl" | "diff" | "patch")
                            })
                            .count()
                    })
                } else {
                    1
                };
                msg.push_str(&format!(
                    "\n  {}: {}",
                    p.display(),
                    if found == 0 {
                        "no .json, .jsonl, .diff or .patch file in this folder"
                    } else {
                        "no prediction records"
                    }
                ));
            }
            msg.push_str("\n  hint: pass SWE-bench prediction files (.json/.jsonl records with instance_id and model_patch) or folders of <agent>/<instance_id>.diff files");
        } else {
            msg.push_str("\n  nothing could be used: the problems above say why");
        }
        msg
    }
}

/// A candidates path that does not exist is an error, with what to pass instead.
pub fn require_exists(path: &Path) -> anyhow::Result<()> {
    if !path.exists() {
        anyhow::bail!(
            "candidates path {} does not exist\n  hint: pass a predictions file (.json/.jsonl) or a folder of <agent>/<instance_id>.diff files",
            path.display()
        );
    }
    Ok(())
}

/// The agent a source stands for (rule 3 of the module's naming rule): a folder's name; a
/// file's stem, or the name of its folder when the stem is generic (`runs/acr-1/all_preds.jsonl`
/// and `runs/acr-1/results.json` are both `acr-1`). Paths without a folder name (`.`,
/// `all_preds.jsonl`) are resolved on disk.
pub fn source_name(path: &Path) -> String {
    let name = |p: &Path| p.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let on_disk = || fs::canonicalize(path).ok();
    if path.is_dir() {
        return name(path)
            .or_else(|| on_disk().and_then(|p| name(&p)))
            .unwrap_or_else(|| "unknown".into());
    }
    if has_generic_stem(path) {
        let folder = path
            .parent()
            .and_then(name)
            .or_else(|| on_disk().and_then(|p| p.parent().and_then(name)));
        if let Some(folder) = folder {
            return folder;
        }
    }
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("unknown")
        .to_string()
}

/// How a candidate is named before the names of all sources are settled.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Named {
    /// A record's `agent` or `run` field.
    Field(String),
    /// `model_name_or_path`, in a file that mixes several.
    Model(String),
    /// After its source: [`source_name`].
    Source,
}

/// `--agent-name SOURCE=NAME` rules: explicit names that override the naming rule.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Naming {
    rules: Vec<NameRule>,
}

#[derive(Debug, Clone, PartialEq)]
struct NameRule {
    /// The argument as given.
    given: String,
    /// SOURCE: a path as given, or a derived agent name.
    key: String,
    /// SOURCE resolved on disk, when it exists.
    path: Option<PathBuf>,
    name: String,
}

impl Naming {
    /// Parse `SOURCE=NAME` arguments (split at the last `=`).
    pub fn parse<S: AsRef<str>>(args: &[S]) -> anyhow::Result<Naming> {
        let mut rules: Vec<NameRule> = Vec::new();
        for arg in args {
            let arg = arg.as_ref();
            let Some((key, name)) = arg
                .rsplit_once('=')
                .filter(|(k, n)| !k.trim().is_empty() && !n.trim().is_empty())
            else {
                anyhow::bail!(
                    "--agent-name `{arg}`: expected SOURCE=NAME, SOURCE being a predictions file or patch folder (as given) or the agent name dei derives"
                );
            };
            if rules.iter().any(|r| r.key == key) {
                anyhow::bail!("--agent-name: `{key}` is renamed twice");
            }
            rules.push(NameRule {
                given: arg.to_string(),
                key: key.to_string(),
                path: fs::canonicalize(key).ok(),
                name: name.trim().to_string(),
            });
        }
        Ok(Naming { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The `SOURCE=NAME` arguments as given, in order (what a run directory records).
    pub fn given(&self) -> Vec<String> {
        self.rules.iter().map(|r| r.given.clone()).collect()
    }

    /// The rule naming everything from `source` (a file or folder), by its path.
    fn by_source(&self, source: &Path) -> Option<usize> {
        if self.rules.is_empty() {
            return None;
        }
        let canonical = fs::canonicalize(source).ok();
        self.rules
            .iter()
            .position(|r| Path::new(&r.key) == source || (r.path.is_some() && r.path == canonical))
    }

    /// The rule renaming a derived agent name.
    fn by_name(&self, name: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.key == name)
    }

    /// The explicit name of agent `name` of label file `file`: `(rule, new name)`.
    pub fn label_name(&self, file: &Path, name: &str, single: bool) -> Option<(usize, &str)> {
        let i = single
            .then(|| self.by_source(file))
            .flatten()
            .or_else(|| self.by_name(name))?;
        Some((i, self.rules[i].name.as_str()))
    }

    /// An error naming the rules not in `used` (they matched nothing), with the agents found.
    pub fn check_used(&self, used: &BTreeSet<usize>, agents: &[String]) -> anyhow::Result<()> {
        let unused: Vec<&str> = (0..self.rules.len())
            .filter(|i| !used.contains(i))
            .map(|i| self.rules[i].given.as_str())
            .collect();
        if unused.is_empty() {
            return Ok(());
        }
        let shown: Vec<&str> = agents.iter().take(20).map(String::as_str).collect();
        anyhow::bail!(
            "--agent-name {}: SOURCE matches no predictions file, patch folder or agent name\n  hint: the agents found are {}{}",
            unused.join(", "),
            shown.join(", "),
            if agents.len() > shown.len() { ", …" } else { "" }
        )
    }
}

/// Settle the agent names of every `(source, how named)` pair found in one run of the loader:
/// `--agent-name` rules first (by source path, then by derived name), then the naming rule,
/// with `name@source` where rule 2 or 3 gives one name to several sources. Returns the
/// names and the rules used.
pub fn resolve_names<P>(
    keys: &BTreeSet<(P, Named)>,
    naming: &Naming,
) -> (BTreeMap<(P, Named), String>, BTreeSet<usize>)
where
    P: AsRef<Path> + Ord + Clone,
{
    let mut names = BTreeMap::new();
    let mut used = BTreeSet::new();
    let mut by_source: BTreeMap<&Path, Option<usize>> = BTreeMap::new();
    // Derived (not explicit) names and the sources giving each.
    let mut derived: BTreeMap<String, BTreeSet<&Path>> = BTreeMap::new();
    let mut pending = Vec::new();
    for key in keys {
        let source = key.0.as_ref();
        let rule = *by_source
            .entry(source)
            .or_insert_with(|| naming.by_source(source));
        if let Some(i) = rule {
            used.insert(i);
            names.insert(key.clone(), naming.rules[i].name.clone());
            continue;
        }
        let base = match &key.1 {
            Named::Field(n) | Named::Model(n) => n.clone(),
            Named::Source => source_name(source),
        };
        if let Some(i) = naming.by_name(&base) {
            used.insert(i);
            names.insert(key.clone(), naming.rules[i].name.clone());
            continue;
        }
        if matches!(key.1, Named::Field(_)) {
            names.insert(key.clone(), base);
        } else {
            derived.entry(base.clone()).or_default().insert(source);
            pending.push((key, base));
        }
    }
    for (key, base) in pending {
        let sources = &derived[&base];
        let name = if sources.len() > 1 {
            // Tell them apart by their own names when those differ, else by their paths.
            let own: BTreeSet<String> = sources.iter().map(|s| source_name(s)).collect();
            let source = key.0.as_ref();
            if own.len() == sources.len() && !own.contains(&base) {
                format!("{base}@{}", source_name(source))
            } else {
                format!("{base}@{}", source.display())
            }
        } else {
            base
        };
        names.insert(key.clone(), name);
    }
    (names, used)
}

/// Load candidates from files and folders, named by the module's rule. A path that does not
/// exist is an error; anything wrong inside an existing path is a [`Problem`].
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Loaded> {
    load_with(paths, &Naming::default())
}

/// [`load`] with `--agent-name` rules; those that matched nothing are left out of
/// [`Loaded::names_used`] (see [`load_named`]).
pub fn load_with(paths: &[PathBuf], naming: &Naming) -> anyhow::Result<Loaded> {
    let mut found: Vec<(Candidate, PathBuf, Named)> = Vec::new();
    let mut problems = Vec::new();
    for file in input_files(paths)? {
        read_source(&file, &mut found, &mut problems);
    }
    let keys: BTreeSet<(PathBuf, Named)> = found
        .iter()
        .map(|(_, source, named)| (source.clone(), named.clone()))
        .collect();
    let (names, names_used) = resolve_names(&keys, naming);
    let candidates = found
        .into_iter()
        .map(|(c, source, named)| Candidate {
            agent: names[&(source, named)].clone(),
            ..c
        })
        .collect();
    Ok(Loaded {
        candidates,
        problems,
        names_used,
    })
}

/// [`load_with`], and an error for a `--agent-name` rule that matched nothing.
pub fn load_named(paths: &[PathBuf], naming: &Naming) -> anyhow::Result<Loaded> {
    let loaded = load_with(paths, naming)?;
    naming.check_used(&loaded.names_used, &loaded.agents())?;
    Ok(loaded)
}

/// The files the inputs stand for, in the order they are read: a file as given, a folder's
/// files below it ([`files_under`]). A path that does not exist is an error.
pub fn input_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        require_exists(path)?;
        if path.is_dir() {
            out.extend(files_under(path)?);
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

/// How a candidates file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A `.diff`/`.patch` file: one candidate, `<agent>/<instance_id>.diff`.
    Patch,
    /// A `.jsonl` file: JSON Lines, streamed line by line ([`scan_jsonl`]).
    Lines,
    /// A `.json` file, or a `.jsonl` one that starts with `[`: one JSON document, parsed whole
    /// (read as JSON Lines when it is not one document).
    Document,
}

/// How `path` is read, from its extension (and, for `.jsonl`, its first non-blank byte);
/// `None` for files that are not candidates.
pub fn file_kind(path: &Path) -> Option<FileKind> {
    match extension(path).as_str() {
        "diff" | "patch" => Some(FileKind::Patch),
        "json" => Some(FileKind::Document),
        "jsonl" if first_byte(path) == Some(b'[') => Some(FileKind::Document),
        "jsonl" => Some(FileKind::Lines),
        _ => None,
    }
}

/// The first byte of a file that is not ASCII whitespace (`None`: none, or unreadable).
fn first_byte(path: &Path) -> Option<u8> {
    let mut reader = BufReader::new(fs::File::open(path).ok()?);
    loop {
        let buf = reader.fill_buf().ok()?;
        if buf.is_empty() {
            return None;
        }
        if let Some(b) = buf.iter().find(|b| !b.is_ascii_whitespace()) {
            return Some(*b);
        }
        let n = buf.len();
        reader.consume(n);
    }
}

/// Every file below `dir`, recursively, in sorted order, hidden entries (`.git`, `.DS_Store`)
/// and `dei rank` run directories ([`is_run_dir`](crate::model::paths::is_run_dir): a run kept
/// inside the folder of its candidates) left out.
pub fn files_under(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    walk(dir, &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if crate::model::paths::is_run_dir(&path) {
                continue;
            }
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The folder a patch file's agent is named after (its parent; `.` for a bare file name).
pub fn patch_source(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A file's extension, lowercased (`""` when it has none).
pub fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Read one file (a patch or a predictions file; others are ignored) with the source each
/// candidate is named after.
fn read_source(
    path: &Path,
    found: &mut Vec<(Candidate, PathBuf, Named)>,
    problems: &mut Vec<Problem>,
) {
    match file_kind(path) {
        Some(FileKind::Patch) => match read_patch(path) {
            Ok(c) => found.push((c, patch_source(path), Named::Source)),
            Err(p) => problems.push(p),
        },
        Some(FileKind::Lines | FileKind::Document) => {
            let (cands, file_problems) = read_predictions(path);
            found.extend(
                cands
                    .into_iter()
                    .map(|(c, named)| (c, path.to_path_buf(), named)),
            );
            problems.extend(file_problems);
        }
        None => {}
    }
}

/// The instance a patch file is for: its stem (`<agent>/<instance_id>.diff`).
pub fn patch_instance_id(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("")
        .to_string()
}

/// One `<agent>/<instance_id>.diff` file (agent left empty: it is named after its folder).
pub fn read_patch(path: &Path) -> Result<Candidate, Problem> {
    let origin = Origin {
        path: path.to_path_buf(),
        line: None,
    };
    let bytes = fs::read(path).map_err(|e| Problem {
        origin: origin.clone(),
        message: format!("cannot read patch: {e}"),
    })?;
    let patch = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Candidate {
        instance_id: patch_instance_id(path),
        agent: String::new(),
        patch,
        resolved: None,
        origin,
    })
}

/// Decode one JSON Lines line (without its newline): UTF-8 first, then JSON. The error is the
/// problem text for that line.
pub fn decode_line(bytes: &[u8]) -> Result<Value, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "not valid UTF-8 at byte {}; fix or delete this line",
            e.valid_up_to() + 1
        )
    })?;
    serde_json::from_str::<Value>(text)
        .map_err(|e| format!("malformed JSON ({e}); fix or delete this line"))
}

/// A whole file as text; where it is not UTF-8, `line N: not valid UTF-8 at byte M; …`
/// (both 1-based, the byte counted within its line).
pub fn decode_text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let before = &bytes[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        format!(
            "line {line}: not valid UTF-8 at byte {}; fix or delete this line",
            at - line_start + 1
        )
    })
}

/// Whether a line holds nothing but ASCII whitespace.
pub fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// A JSON Lines file's problems once read: a file with no usable record and more than three
/// bad lines is "not a predictions file" (one problem, saying why its first line failed);
/// otherwise one problem per bad line, with the instance id that line names when one can be
/// made out. `document` is why the file did not parse as one JSON document, when it was
/// expected to.
fn file_problems(
    path: &Path,
    good: usize,
    bad: Vec<(Problem, Option<String>)>,
    document: Option<&serde_json::Error>,
) -> Vec<(Problem, Option<String>)> {
    let whole = |message: String| {
        let origin = Origin {
            path: path.to_path_buf(),
            line: None,
        };
        vec![(Problem { origin, message }, None)]
    };
    if good > 0 || bad.is_empty() {
        return bad;
    }
    let first = &bad[0].0;
    let first_line = first.origin.line.unwrap_or(0);
    if let Some(e) = document {
        return whole(format!(
            "not a predictions file: not one JSON document ({e}), nor JSON Lines (line {first_line}: {}); skipped",
            first.message
        ));
    }
    if bad.len() > 3 {
        return whole(format!(
            "not a predictions file ({} unusable lines; line {first_line}: {}); skipped",
            bad.len(),
            first.message
        ));
    }
    bad
}

/// The instance id of a line that cannot be used, when one can still be made out (so that a
/// per-issue reader reports its problem with its issue).
fn readable_id(bytes: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_str(&String::from_utf8_lossy(bytes)).ok()?;
    value.get("instance_id")?.as_str().map(str::to_string)
}

/// Where a JSON Lines record is: its 1-based line, and the byte offset and length (newline
/// included) of that line, to read it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    pub line: usize,
    pub offset: u64,
    pub len: usize,
}

/// What a scan of a JSON Lines file found: what `keep` made of each usable record, with how it
/// is named (settled for the whole file), and the problems, each with the instance id its line
/// names when one can be made out.
#[derive(Debug)]
pub struct Scanned<T> {
    pub records: Vec<(T, Named)>,
    pub problems: Vec<(Problem, Option<String>)>,
}

/// Stream a JSON Lines predictions file, one line at a time as bytes, so that a large file is
/// never held whole and a line that is not UTF-8 costs that line only. `keep` gets each
/// usable record and its place and returns what the caller holds on to (the candidate, or
/// only where it is).
pub fn scan_jsonl<T>(path: &Path, keep: impl FnMut(Parsed, LineAt) -> T) -> Scanned<T> {
    match fs::File::open(path) {
        Ok(f) => scan_lines(BufReader::with_capacity(1 << 16, f), path, None, keep),
        Err(e) => Scanned {
            records: vec![],
            problems: vec![(
                Problem {
                    origin: Origin {
                        path: path.to_path_buf(),
                        line: None,
                    },
                    message: format!("cannot read predictions file: {e}"),
                },
                None,
            )],
        },
    }
}

/// [`scan_jsonl`] over any reader; `document` as for [`file_problems`].
fn scan_lines<T>(
    mut reader: impl BufRead,
    path: &Path,
    document: Option<&serde_json::Error>,
    mut keep: impl FnMut(Parsed, LineAt) -> T,
) -> Scanned<T> {
    let mut buf = Vec::new();
    let (mut offset, mut line_no) = (0u64, 0usize);
    let mut kept: Vec<(T, Named)> = Vec::new();
    let mut models: BTreeSet<String> = BTreeSet::new();
    let mut bad = Vec::new();
    let mut read_error = None;
    loop {
        buf.clear();
        let n = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                read_error = Some(Problem {
                    origin: Origin {
                        path: path.to_path_buf(),
                        line: None,
                    },
                    message: format!("read error after line {line_no}: {e}"),
                });
                break;
            }
        };
        line_no += 1;
        let at = LineAt {
            line: line_no,
            offset,
            len: n,
        };
        offset += n as u64;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if is_blank(line) {
            continue;
        }
        let origin = Origin {
            path: path.to_path_buf(),
            line: Some(line_no),
        };
        match decode_line(line).and_then(|v| record(&v, origin.clone())) {
            Ok(p) => {
                if let Some(m) = p.model() {
                    if !models.contains(m) {
                        models.insert(m.to_string());
                    }
                }
                let named = p.named.clone();
                kept.push((keep(p, at), named));
            }
            Err(message) => bad.push((Problem { origin, message }, readable_id(line))),
        }
    }
    let mixed = models.len() > 1;
    let good = kept.len();
    let records = kept
        .into_iter()
        .map(|(t, named)| (t, settle(named, mixed)))
        .collect();
    let mut problems = file_problems(path, good, bad, document);
    problems.extend(read_error.map(|p| (p, None)));
    Scanned { records, problems }
}

/// Read a predictions file: its candidates (agent left empty) with how each is named, and its
/// problems.
pub fn read_predictions(path: &Path) -> (Vec<(Candidate, Named)>, Vec<Problem>) {
    let origin = |line: Option<usize>| Origin {
        path: path.to_path_buf(),
        line,
    };
    if file_kind(path) == Some(FileKind::Lines) {
        return lines_only(scan_jsonl(path, |p, _| p.candidate));
    }
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return (
                vec![],
                vec![Problem {
                    origin: origin(None),
                    message: format!("cannot read predictions file: {e}"),
                }],
            )
        }
    };
    // A .json file may hold JSON Lines too: read as such when it is not one document.
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) => {
            let mut parsed = Vec::new();
            let mut problems = Vec::new();
            read_json_document(path, value, &mut parsed, &mut problems);
            (settle_file(parsed), problems)
        }
        Err(e) => lines_only(scan_lines(&bytes[..], path, Some(&e), |p, _| p.candidate)),
    }
}

/// The candidates and problems of a scan, without places or instance ids.
fn lines_only(scanned: Scanned<Candidate>) -> (Vec<(Candidate, Named)>, Vec<Problem>) {
    let problems = scanned.problems.into_iter().map(|(p, _)| p).collect();
    (scanned.records, problems)
}

/// Name the records of one file: rule 2 applies only when it mixes `model_name_or_path`s.
fn settle_file(parsed: Vec<Parsed>) -> Vec<(Candidate, Named)> {
    let models: BTreeSet<&str> = parsed.iter().filter_map(Parsed::model).collect();
    let mixed = models.len() > 1;
    parsed
        .into_iter()
        .map(|p| {
            let named = settle(p.named, mixed);
            (p.candidate, named)
        })
        .collect()
}

/// A record's provisional name once its file is read: `Model` stays only in a mixed file.
pub fn settle(named: Named, mixed: bool) -> Named {
    match named {
        Named::Model(_) if !mixed => Named::Source,
        other => other,
    }
}

fn read_json_document(
    path: &Path,
    value: Value,
    parsed: &mut Vec<Parsed>,
    problems: &mut Vec<Problem>,
) {
    let origin = Origin {
        path: path.to_path_buf(),
        line: None,
    };
    let records: Vec<Value> = match value {
        Value::Array(items) => items,
        Value::Object(ref map) if map.contains_key("instance_id") => vec![value],
        Value::Object(map) => {
            // `{instance_id: record}` form; values that are not records mean "not predictions".
            if map.is_empty() || !map.values().all(|v| v.is_object()) {
                problems.push(Problem {
                    origin,
                    message: "not a predictions file (no instance_id/model_patch records); skipped"
                        .into(),
                });
                return;
            }
            map.into_iter()
                .map(|(k, mut v)| {
                    if let Value::Object(ref mut m) = v {
                        m.entry("instance_id").or_insert(Value::String(k));
                    }
                    v
                })
                .collect()
        }
        other => {
            problems.push(Problem {
                origin,
                message: format!(
                    "expected a list of predictions or an {{instance_id: prediction}} map, found {}; skipped",
                    kind(&other)
                ),
            });
            return;
        }
    };
    for (i, v) in records.iter().enumerate() {
        match record(v, origin.clone()) {
            Ok(p) => parsed.push(p),
            Err(message) => problems.push(Problem {
                origin: origin.clone(),
                message: format!("record #{}: {message}", i + 1),
            }),
        }
    }
}

/// One prediction record: the candidate (agent left empty) and how it is named before its
/// file is read to the end.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub candidate: Candidate,
    /// `Field` (its `agent`/`run`), `Model` (its `model_name_or_path`) or `Source`.
    pub named: Named,
}

impl Parsed {
    /// The `model_name_or_path` that may name it (rule 2), if its file mixes several.
    pub fn model(&self) -> Option<&str> {
        match &self.named {
            Named::Model(m) => Some(m),
            _ => None,
        }
    }
}

/// A record's name fields, by the naming rule: `agent`, then `run` (rule 1); else
/// `model_name_or_path` (rule 2, if its file mixes several); else its source.
pub fn record_name(obj: &serde_json::Map<String, Value>) -> Named {
    let field = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(n) = field("agent").or_else(|| field("run")) {
        return Named::Field(n);
    }
    match field("model_name_or_path") {
        Some(m) => Named::Model(m),
        None => Named::Source,
    }
}

/// Turn one JSON record into a candidate; `Err` says what is wrong.
pub fn record(v: &Value, origin: Origin) -> Result<Parsed, String> {
    let obj = v
        .as_object()
        .ok_or_else(|| format!("expected a JSON object, found {}", kind(v)))?;
    let instance_id = obj
        .get("instance_id")
        .and_then(Value::as_str)
        .ok_or("missing string field `instance_id`")?
        .to_string();
    let patch = match obj.get("model_patch") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => String::new(),
        None => {
            return Err(format!(
                "missing field `model_patch` for {instance_id} (use null or \"\" for an empty candidate)"
            ))
        }
        Some(other) => return Err(format!("`model_patch` must be a string, found {}", kind(other))),
    };
    let resolved = obj.get("resolved").and_then(Value::as_bool);
    Ok(Parsed {
        named: record_name(obj),
        candidate: Candidate {
            instance_id,
            agent: String::new(),
            patch,
            resolved,
            origin,
        },
    })
}

/// "a number", "a list", … for messages.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn mixed_folder_is_auto_detected() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "agentA/x__y-1.diff", "--- a/f\n+++ b/f\n");
        write(dir.path(), "agentB/x__y-1.patch", "");
        write(
            dir.path(),
            "agentD.jsonl",
            "{\"instance_id\":\"x__y-1\",\"model_name_or_path\":\"agentC\",\"model_patch\":\"d\"}\n\
             not json\n\
             {\"instance_id\":\"x__y-2\",\"model_patch\":null}\n",
        );
        let loaded = load(&[dir.path().to_path_buf()]).unwrap();
        let mut agents = loaded.agents();
        agents.sort();
        // agentD.jsonl names one model only: its candidates are agentD's (the file), not agentC's.
        assert_eq!(agents, vec!["agentA", "agentB", "agentD"]);
        assert_eq!(loaded.for_issue("x__y-1").len(), 3);
        // empty candidates are kept
        assert!(loaded.candidates.iter().filter(|c| c.is_empty()).count() == 2);
        assert_eq!(loaded.problems.len(), 1);
        assert_eq!(loaded.problems[0].origin.line, Some(2));
        assert!(loaded.problems[0].to_string().contains("agentD.jsonl:2"));
    }

    #[test]
    fn json_map_and_list_forms() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "m.json",
            r#"{"i-1": {"model_name_or_path": "m", "model_patch": "p"}}"#,
        );
        let b = write(
            dir.path(),
            "l.json",
            r#"[{"instance_id": "i-1", "model_patch": "q"}, {"instance_id": 3}]"#,
        );
        let loaded = load(&[a, b]).unwrap();
        assert_eq!(loaded.candidates.len(), 2);
        assert_eq!(loaded.candidates[0].agent, "m");
        assert_eq!(loaded.candidates[1].agent, "l");
        assert_eq!(loaded.problems.len(), 1);
        assert!(loaded.problems[0].message.contains("instance_id"));
    }

    #[test]
    fn runs_sharing_a_model_name_are_named_after_their_run_folders() {
        let dir = tempfile::tempdir().unwrap();
        let rec =
            "{\"instance_id\":\"i-1\",\"model_name_or_path\":\"gpt-4\",\"model_patch\":\"p\"}\n";
        write(dir.path(), "run-1/all_preds.jsonl", rec);
        write(dir.path(), "run-2/all_preds.jsonl", rec);
        write(
            dir.path(),
            "other/solo.jsonl",
            &rec.replace("gpt-4", "solo"),
        );
        let loaded = load(&[dir.path().to_path_buf()]).unwrap();
        let mut agents = loaded.agents();
        agents.sort();
        assert_eq!(agents, vec!["run-1", "run-2", "solo"]);
    }

    #[test]
    fn one_line_that_is_not_utf8_costs_that_line_only() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("agent.jsonl");
        let mut bytes = b"{\"instance_id\":\"i-1\",\"model_patch\":\"a\"}\n".to_vec();
        bytes.extend_from_slice(b"{\"instance_id\":\"i-2\",\"model_patch\":\"b\xff\"}\n");
        bytes.extend_from_slice(b"{\"instance_id\":\"i-3\",\"model_patch\":\"c\"}\n");
        fs::write(&p, bytes).unwrap();
        let loaded = load(&[p]).unwrap();
        let ids: Vec<&str> = loaded
            .candidates
            .iter()
            .map(|c| c.instance_id.as_str())
            .collect();
        assert_eq!(ids, ["i-1", "i-3"]);
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        let shown = loaded.problems[0].to_string();
        assert!(
            shown.ends_with("agent.jsonl:2: not valid UTF-8 at byte 38; fix or delete this line"),
            "{shown}"
        );
    }

    #[test]
    fn naming_rule() {
        let dir = tempfile::tempdir().unwrap();
        let rec = |id: &str, extra: &str| {
            format!("{{\"instance_id\":\"{id}\",\"model_patch\":\"p\"{extra}}}\n")
        };
        // A merged file of several models: the model names the agent; `run` beats it.
        let merged = write(
            dir.path(),
            "merged.jsonl",
            &(rec("i-1", ",\"model_name_or_path\":\"m1\"")
                + &rec("i-1", ",\"model_name_or_path\":\"m2\"")
                + &rec("i-2", ",\"model_name_or_path\":\"m2\",\"run\":\"r9\"")
                + &rec("i-3", "")),
        );
        // A generic file name: its run folder; a telling one: its stem.
        let generic = write(
            dir.path(),
            "runs/run-7/predictions.json",
            &format!(
                "[{}]",
                rec("i-1", ",\"model_name_or_path\":\"gpt-4\"").trim()
            ),
        );
        let telling = write(
            dir.path(),
            "mine.jsonl",
            &rec("i-1", ",\"model_name_or_path\":\"gpt-4\""),
        );
        let named = |naming: &Naming| -> Vec<(String, String)> {
            let l = load_with(&[merged.clone(), generic.clone(), telling.clone()], naming).unwrap();
            assert!(l.problems.is_empty(), "{:?}", l.problems);
            l.candidates
                .iter()
                .map(|c| (c.instance_id.clone(), c.agent.clone()))
                .collect()
        };
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            named(&Naming::default()),
            pairs(&[
                ("i-1", "m1"),
                ("i-1", "m2"),
                ("i-2", "r9"),
                ("i-3", "merged"),
                ("i-1", "run-7"),
                ("i-1", "mine"),
            ])
        );
        // Overrides: by the path as given, and by the derived name.
        let naming = Naming::parse(&[
            format!("{}=seven", generic.display()),
            "m2=model-two".to_string(),
        ])
        .unwrap();
        let got = named(&naming);
        assert_eq!(got[1], ("i-1".into(), "model-two".into()));
        assert_eq!(got[4], ("i-1".into(), "seven".into()));
        // A rule that matches nothing is an error naming it.
        let bad = Naming::parse(&["nobody=x"]).unwrap();
        let e = load_named(std::slice::from_ref(&telling), &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nobody=x") && e.contains("mine"), "{e}");
        assert!(Naming::parse(&["no-equals-sign"]).is_err());
    }

    #[test]
    fn one_derived_name_from_two_sources_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let rec = "{\"instance_id\":\"i-1\",\"model_patch\":\"p\"}\n";
        let a = write(dir.path(), "a/run-1/all_preds.jsonl", rec);
        let b = write(dir.path(), "b/run-1/all_preds.jsonl", rec);
        let loaded = load(&[a.clone(), b.clone()]).unwrap();
        let agents = loaded.agents();
        assert_eq!(
            agents,
            [
                format!("run-1@{}", a.display()),
                format!("run-1@{}", b.display())
            ]
        );
    }

    #[test]
    fn nothing_for_an_issue_says_why() {
        let dir = tempfile::tempdir().unwrap();
        // A bare number: the file's problem, and no word about instance_id.
        let num = write(dir.path(), "n.json", "42");
        let l = load(std::slice::from_ref(&num)).unwrap();
        let msg = l.nothing_for("x-1", std::slice::from_ref(&num));
        assert!(
            msg.contains("n.json: expected a list of predictions")
                && msg.contains("found a number"),
            "{msg}"
        );
        assert!(!msg.contains("instance_id\": \"x-1"), "{msg}");
        // Records for other issues: the hint about instance_id, with what was found.
        let other = write(
            dir.path(),
            "o.jsonl",
            "{\"instance_id\":\"y-1\",\"model_patch\":\"p\"}\n",
        );
        let l = load(std::slice::from_ref(&other)).unwrap();
        let msg = l.nothing_for("x-1", std::slice::from_ref(&other));
        assert!(
            msg.contains("\"instance_id\": \"x-1\"") && msg.contains("y-1"),
            "{msg}"
        );
        // Many problems: ten shown, then how many more.
        let many = write(
            dir.path(),
            "m.jsonl",
            &"{\"model_patch\":\"p\"}\n".repeat(3),
        );
        let l = Loaded {
            problems: (0..13)
                .map(|i| Problem {
                    origin: Origin {
                        path: many.clone(),
                        line: Some(i + 1),
                    },
                    message: "bad".into(),
                })
                .collect(),
            ..Loaded::default()
        };
        let msg = l.nothing_for("x-1", std::slice::from_ref(&many));
        assert!(
            msg.contains("m.jsonl:10: bad") && !msg.contains("m.jsonl:11:"),
            "{msg}"
        );
        assert!(msg.contains("… and 3 more problems"), "{msg}");
        // An empty folder says so.
        let empty = dir.path().join("empty");
        fs::create_dir_all(&empty).unwrap();
        let l = load(std::slice::from_ref(&empty)).unwrap();
        let msg = l.nothing_for("x-1", std::slice::from_ref(&empty));
        assert!(
            msg.contains("no .json, .jsonl, .diff or .patch file"),
            "{msg}"
        );
    }

    #[test]
    fn source_names() {
        assert_eq!(source_name(Path::new("runs/acr-1/results.json")), "acr-1");
        assert_eq!(
            source_name(Path::new("runs/acr-1/all_preds.jsonl")),
            "acr-1"
        );
        assert_eq!(source_name(Path::new("runs/coder.json")), "coder");
        // No folder name in the path: the folder on disk.
        let here = std::env::current_dir().unwrap();
        let want = here.file_name().unwrap().to_str().unwrap();
        assert_eq!(source_name(Path::new(".")), want);
        assert_eq!(source_name(Path::new("./Cargo.toml")), "Cargo");
    }

    #[test]
    fn missing_path_is_an_error() {
        let err = load(&[PathBuf::from("/definitely/not/here")]).unwrap_err();
        assert!(err.to_string().contains("does not exist"));
    }
}
