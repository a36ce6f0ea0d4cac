//! Issue-only localization: from the issue text and a repository snapshot, rank the files
//! and then the functions a fix most likely edits.
//!
//! Files are scored ([`file_signals`], weighted by [`Weights`]) by BM25 of the issue's terms
//! over each file's identifiers and path (title words count more, template comments and
//! `<details>` dumps not at all, adjacent words are also joined), by BM25 of the title alone
//! and of the best `def`/`class` chunk, plus exact evidence: traceback frames that resolve to
//! the file, its path or dotted module named in the issue, definitions the issue names
//! (weighted by how few files define that name), test files whose text matches the issue
//! ([`tested_files`]), and, when the snapshot's history is attached
//! ([`RepoFiles::with_history`]), past commits whose messages resemble the issue, and modules
//! imported by a file with such explicit evidence ([`RepoFiles::imports_of`]). Functions are
//! then ranked inside the best files by BM25 over their own code and docstring (and of the
//! title alone), names the issue
//! mentions (the function, its class, a class as part of its name), how much of their own
//! name the issue's words cover (compared by English stem: `__iter__` ← "iterating"),
//! traceback frames that fall inside them, whether the unit is a class header and, faintly,
//! names from the issue that their body uses. Change frequency is computed only when
//! weighted. `dei-bench context` (crates/dei-bench) measures it; `--fit` (with `--fit-tasks`) refits the weights.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use dei::localize::search::{locate, LocateOptions, RepoFiles};
//! let snap = dei::model::repo::Snapshot::open("repo.git".as_ref(), "HEAD")?;
//! let repo = RepoFiles::from_snapshot(&snap)?;
//! let loc = locate("TypeError in Session.request ...", &repo, &LocateOptions::default());
//! for f in loc.files.iter().take(5) { println!("{} {:.2}", f.path, f.score); }
//! # Ok(()) }
//! ```

use super::issue::{code_lines, resolve_path, weighted_parts, IssueRefs, MIN_QUOTED_LINE};
use crate::model::paths::is_auxiliary;
use crate::model::repo::{CommitChange, Snapshot};
use crate::model::{LineRange, SnippetKind};
use crate::syntax::python;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// Terms of one file, cached by content.
#[derive(Debug, Default)]
pub struct FileTerms {
    /// Term → count over the file's identifiers (split and lowercased).
    pub terms: HashMap<String, u32>,
    pub len: u32,
    /// Names of `def`/`class` statements (found by line scan, no parse).
    pub def_names: Vec<String>,
    /// The same terms by definition chunk.
    pub chunks: ChunkTerms,
}

/// Terms of one file by definition chunk: a chunk starts at every `def`/`class` line (any
/// depth) and at the top of the file, and runs to the next one (for the `chunk_bm25` signal).
#[derive(Debug, Default)]
pub struct ChunkTerms {
    /// Term count of each chunk.
    pub lens: Vec<u32>,
    /// Term → `(chunk, count)` for every chunk holding it.
    pub terms: HashMap<String, Vec<(u32, u32)>>,
}

impl ChunkTerms {
    /// Close the current chunk: its counts join the chunk index and the file's totals.
    fn flush(&mut self, chunk: &mut HashMap<String, u32>, file: &mut HashMap<String, u32>) {
        let c = self.lens.len() as u32;
        self.lens.push(chunk.values().sum());
        for (t, n) in chunk.drain() {
            match file.get_mut(&t) {
                Some(v) => *v += n,
                None => {
                    file.insert(t.clone(), n);
                }
            }
            self.terms.entry(t).or_default().push((c, n));
        }
    }
}

/// One source file at the snapshot.
#[derive(Debug)]
pub struct RepoFile {
    pub path: String,
    pub text: Arc<str>,
    terms: OnceLock<Arc<FileTerms>>,
    defs: OnceLock<Arc<[String]>>,
}

impl RepoFile {
    pub fn new(path: String, text: Arc<str>) -> RepoFile {
        RepoFile {
            path,
            text,
            terms: OnceLock::new(),
            defs: OnceLock::new(),
        }
    }

    fn with_defs(path: String, text: Arc<str>, defs: Arc<[String]>) -> RepoFile {
        let f = RepoFile::new(path, text);
        let _ = f.defs.set(defs);
        f
    }

    /// The file's terms (computed once, cached by content across snapshots).
    pub fn terms(&self) -> &FileTerms {
        self.terms.get_or_init(|| file_terms(&self.text))
    }

    /// Its terms by definition chunk (built with [`RepoFile::terms`], in the same pass).
    pub fn chunks(&self) -> &ChunkTerms {
        &self.terms().chunks
    }

    /// Names of its `def`/`class` statements (line scan, no parse; no tokenizing).
    pub fn def_names(&self) -> &[String] {
        self.defs.get_or_init(|| def_names(&self.text).into())
    }

    /// Its tree-sitter index (cached by content).
    pub fn index(&self) -> Arc<python::PyIndex> {
        python::index(&self.text)
    }
}

/// The source files of a repository at one commit, shareable across threads.
#[derive(Debug, Default)]
pub struct RepoFiles {
    pub files: Vec<RepoFile>,
    by_path: HashMap<String, usize>,
    defs: OnceLock<HashMap<String, Vec<usize>>>,
    /// Trimmed line hash → files holding it (lines of [`MIN_QUOTED_LINE`]+ bytes; lists stop growing past
    /// [`MAX_LINE_FILES`] + 1).
    lines: OnceLock<HashMap<u64, Vec<u32>>>,
    /// File stem → non-auxiliary files with that stem (for [`tested_files`]).
    stems: OnceLock<HashMap<String, Vec<usize>>>,
    /// Commits before the snapshot (newest first), when loaded with [`RepoFiles::with_history`].
    history: Vec<Arc<CommitChange>>,
    /// Memo of [`RepoFiles::files_containing`]: candidates of one issue look for the same names.
    containing: Mutex<HashMap<String, Arc<[usize]>>>,
}

/// Largest file read into a [`RepoFiles`] (bigger ones are generated data, not code to read).
pub const MAX_FILE_BYTES: usize = 1 << 20;

impl RepoFiles {
    /// Every `.py` file of the snapshot (up to [`MAX_FILE_BYTES`] each).
    ///
    /// Contents come from a process-wide cache keyed by blob id (see [`BLOB_CACHE_BYTES`]), so
    /// ranking many issues of one repository reads each unchanged file once, not once per issue.
    pub fn from_snapshot(snap: &Snapshot) -> anyhow::Result<RepoFiles> {
        let cache = blob_cache();
        let blobs: Vec<(String, git2::Oid)> = snap
            .list_blobs()?
            .into_iter()
            .filter(|(p, _)| p.ends_with(".py") || p.ends_with(".pyi"))
            .collect();
        let stamp = cache
            .lock()
            .map(|mut c| {
                c.stamp += 1;
                c.stamp
            })
            .unwrap_or(0);
        let mut files = Vec::with_capacity(blobs.len());
        let mut missing = Vec::new();
        if let Ok(mut c) = cache.lock() {
            for (i, (_, id)) in blobs.iter().enumerate() {
                match c.map.get_mut(id) {
                    Some(e) => {
                        e.used = stamp;
                        files.push(Some((e.text.clone(), e.defs.clone())));
                    }
                    None => {
                        files.push(None);
                        missing.push(i);
                    }
                }
            }
        } else {
            files.resize(blobs.len(), None);
            missing.extend(0..blobs.len());
        }
        // Read what the cache lacks outside its lock.
        let mut fresh = Vec::with_capacity(missing.len());
        for i in missing {
            let id = blobs[i].1;
            if let Some(text) = snap.read_blob(id)? {
                let text: Arc<str> = Arc::from(text);
                let defs: Arc<[String]> = def_names(&text).into();
                fresh.push((id, text.clone(), defs.clone()));
                files[i] = Some((text, defs));
            }
        }
        if let Ok(mut c) = cache.lock() {
            for (id, text, defs) in fresh {
                c.insert(id, text, defs, stamp);
            }
        }
        let files: Vec<RepoFile> = blobs
            .into_iter()
            .zip(files)
            .filter_map(|((path, _), f)| {
                let (text, defs) = f?;
                (text.len() <= MAX_FILE_BYTES).then(|| RepoFile::with_defs(path, text, defs))
            })
            .collect();
        Ok(RepoFiles::from_files(files))
    }

    fn from_files(files: Vec<RepoFile>) -> RepoFiles {
        let by_path = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        RepoFiles {
            files,
            by_path,
            defs: OnceLock::new(),
            lines: OnceLock::new(),
            stems: OnceLock::new(),
            history: Vec::new(),
            containing: Mutex::new(HashMap::new()),
        }
    }

    /// From `(path, text)` pairs (tests, or files already in memory).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> RepoFiles {
        RepoFiles::from_files(
            pairs
                .into_iter()
                .map(|(p, t)| RepoFile::new(p, Arc::from(t)))
                .collect(),
        )
    }

    /// Indices (in file order) of the files whose text contains `needle`, memoised per name.
    pub fn files_containing(&self, needle: &str) -> Arc<[usize]> {
        if let Some(hit) = self
            .containing
            .lock()
            .ok()
            .and_then(|m| m.get(needle).cloned())
        {
            return hit;
        }
        let found: Arc<[usize]> = self
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.text.contains(needle))
            .map(|(i, _)| i)
            .collect();
        if let Ok(mut m) = self.containing.lock() {
            m.insert(needle.to_string(), found.clone());
        }
        found
    }

    /// Attach the snapshot's history (see [`Snapshot::history`]): past commits whose messages
    /// resemble the issue point at the files they changed.
    pub fn with_history(mut self, history: Vec<Arc<CommitChange>>) -> RepoFiles {
        self.history = history;
        self
    }

    /// Trimmed-line hash → files holding that line (built on first use).
    fn line_index(&self) -> &HashMap<u64, Vec<u32>> {
        self.lines.get_or_init(|| {
            let mut m: HashMap<u64, Vec<u32>> = HashMap::new();
            for (i, f) in self.files.iter().enumerate() {
                for l in f.text.lines() {
                    if l.trim().len() < MIN_QUOTED_LINE {
                        continue;
                    }
                    let v = m.entry(line_key(l)).or_default();
                    if v.len() <= MAX_LINE_FILES && v.last() != Some(&(i as u32)) {
                        v.push(i as u32);
                    }
                }
            }
            m
        })
    }

    /// The repository files that file `i` imports (`import a.b`, `from a.b import c` where
    /// `a/b/c.py` may be a module, relative `from .x import y`; at any depth, so imports
    /// inside functions count), by line scan.
    pub fn imports_of(&self, i: usize) -> Vec<usize> {
        let f = &self.files[i];
        let mut out: Vec<usize> = Vec::new();
        for m in imported_modules(&f.path, &f.text) {
            if let Some(j) = self.module_file_exact(&m) {
                if j != i && !out.contains(&j) {
                    out.push(j);
                }
            }
        }
        out
    }

    /// The file of a dotted module path, exactly (`a.b` → `a/b.py` or `a/b/__init__.py`, also
    /// under `src/` or `lib/`).
    fn module_file_exact(&self, dotted: &str) -> Option<usize> {
        let base = dotted.replace('.', "/");
        for cand in [format!("{base}.py"), format!("{base}/__init__.py")] {
            for pre in ["", "src/", "lib/"] {
                if let Some(&i) = self.by_path.get(&format!("{pre}{cand}")) {
                    return Some(i);
                }
            }
        }
        None
    }

    pub fn get(&self, path: &str) -> Option<&RepoFile> {
        self.by_path.get(path).map(|&i| &self.files[i])
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|f| f.path.as_str())
    }

    /// Files that define (`def`/`class`) a name.
    pub fn files_defining(&self, name: &str) -> &[usize] {
        let map = self.defs.get_or_init(|| {
            let mut m: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, f) in self.files.iter().enumerate() {
                for d in f.def_names() {
                    let v = m.entry(d.clone()).or_default();
                    if v.last() != Some(&i) {
                        v.push(i);
                    }
                }
            }
            m
        });
        map.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The file a dotted module path names (`pkg.mod` → `pkg/mod.py` or `pkg/mod/__init__.py`),
    /// trying shorter prefixes for `pkg.mod.attr`.
    pub fn module_file(&self, dotted: &str) -> Option<usize> {
        let parts: Vec<&str> = dotted.split('.').collect();
        for n in (1..=parts.len()).rev() {
            if let Some(i) = self.module_file_exact(&parts[..n].join(".")) {
                return Some(i);
            }
        }
        // A dotted name relative to a package (`ascii.rst` in `format="ascii.rst"`): the one
        // file whose path ends with it.
        if parts.len() >= 2 {
            let base = parts.join("/");
            let tails = [format!("/{base}.py"), format!("/{base}/__init__.py")];
            let mut found = self
                .files
                .iter()
                .enumerate()
                .filter(|(_, f)| tails.iter().any(|t| f.path.ends_with(t.as_str())));
            if let (Some((i, _)), None) = (found.next(), found.next()) {
                return Some(i);
            }
        }
        None
    }
}

const STOP: [&str; 40] = [
    "the", "and", "for", "that", "this", "with", "not", "but", "are", "was", "have", "from",
    "when", "what", "which", "should", "would", "could", "can", "there", "their", "then", "than",
    "will", "been", "into", "some", "also", "here", "use", "using", "used", "get", "set", "self",
    "none", "true", "false", "return", "def",
];

fn is_stop(t: &str) -> bool {
    t.len() < 2 || t.len() > 40 || t.chars().all(|c| c.is_ascii_digit()) || STOP.contains(&t)
}

/// Split an identifier into lowercase terms: the whole word plus its snake_case and CamelCase parts.
pub fn split_terms(word: &str, out: &mut Vec<String>) {
    let lower = word.to_lowercase();
    let lw = lower.trim_matches('_');
    if !is_stop(lw) {
        out.push(lw.to_string());
    }
    let mut parts: Vec<String> = Vec::new();
    for piece in word.split('_').filter(|p| !p.is_empty()) {
        let mut cur = String::new();
        let chars: Vec<char> = piece.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
            if boundary && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
            }
            cur.extend(c.to_lowercase());
        }
        if !cur.is_empty() {
            parts.push(cur);
        }
    }
    if parts.len() > 1 {
        for p in parts {
            if !is_stop(&p) && p != lw {
                out.push(p);
            }
        }
    }
}

/// Terms of a text: identifiers split into parts, lowercased, stop words dropped.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if !w.is_empty() {
            split_terms(w, &mut out);
        }
    }
    out
}

type TermCache = Mutex<HashMap<(u64, usize), Arc<FileTerms>>>;

fn term_cache() -> &'static TermCache {
    static C: OnceLock<TermCache> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

fn file_terms(text: &str) -> Arc<FileTerms> {
    let key = python::content_key(text);
    if let Some(hit) = term_cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    // One tokenizing pass feeds the chunks; closing a chunk adds it to the file's totals.
    let mut ft = FileTerms::default();
    let mut chunk: HashMap<String, u32> = HashMap::new();
    for line in text.lines() {
        if def_name(line).is_some() && !chunk.is_empty() {
            ft.chunks.flush(&mut chunk, &mut ft.terms);
        }
        for t in tokenize(line) {
            *chunk.entry(t).or_insert(0) += 1;
            ft.len += 1;
        }
    }
    if !chunk.is_empty() {
        ft.chunks.flush(&mut chunk, &mut ft.terms);
    }
    ft.def_names = def_names(text);
    let ft = Arc::new(ft);
    if let Ok(mut c) = term_cache().lock() {
        if c.len() > 200_000 {
            c.clear();
        }
        c.insert(key, ft.clone());
    }
    ft
}

/// The name a `def`/`class` line defines (by line scan, no parse).
fn def_name(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let rest = l
        .strip_prefix("def ")
        .or_else(|| l.strip_prefix("class "))
        .or_else(|| l.strip_prefix("async def "))?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Dotted modules a Python file imports, by line scan: `import a.b as c, d` gives `a.b` and
/// `d`; `from a.b import c, d` gives `a.b`, `a.b.c` and `a.b.d` (either may be a module);
/// relative imports are resolved against the file's own package. Continuation lines of a
/// parenthesised import list are not read.
fn imported_modules(path: &str, text: &str) -> Vec<String> {
    let package: Vec<&str> = {
        let mut parts: Vec<&str> = path.trim_end_matches(".py").split('/').collect();
        parts.pop();
        // Packages under src/ or lib/ are imported without that prefix.
        if matches!(parts.first(), Some(&"src") | Some(&"lib")) {
            parts.remove(0);
        }
        parts
    };
    let names = |list: &str| -> Vec<String> {
        list.trim_matches(|c| c == '(' || c == ')' || c == '\\')
            .split(',')
            .filter_map(|n| n.split_whitespace().next())
            .filter(|n| {
                n.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            })
            .filter(|n| !n.is_empty() && *n != "*")
            .map(String::from)
            .collect()
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix("import ") {
            out.extend(names(rest.split('#').next().unwrap_or("")));
        } else if let Some(rest) = l.strip_prefix("from ") {
            let Some((module, list)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            let dots = module.len() - module.trim_start_matches('.').len();
            let module = if dots > 0 {
                if dots > package.len() + 1 {
                    continue;
                }
                let mut parts: Vec<&str> = package[..package.len() + 1 - dots].to_vec();
                let tail = module.trim_start_matches('.');
                if !tail.is_empty() {
                    parts.push(tail);
                }
                parts.join(".")
            } else {
                module.to_string()
            };
            if !module.is_empty() {
                out.push(module.clone());
            }
            for n in names(list.split('#').next().unwrap_or("")) {
                out.push(if module.is_empty() {
                    n
                } else {
                    format!("{module}.{n}")
                });
            }
        }
    }
    out
}

/// Names of the `def`/`class` statements of a text (by line scan).
fn def_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(def_name)
        .map(String::from)
        .collect()
}

/// Most bytes of file text the blob cache of [`RepoFiles::from_snapshot`] keeps: about three
/// snapshots of the largest repository (sympy, 30 MB of Python), so the issues in flight and
/// their neighbours in commit order share reads; least recently used blobs go first.
pub const BLOB_CACHE_BYTES: usize = 96 << 20;

struct BlobEntry {
    text: Arc<str>,
    defs: Arc<[String]>,
    used: u64,
}

#[derive(Default)]
struct BlobCache {
    map: HashMap<git2::Oid, BlobEntry>,
    bytes: usize,
    stamp: u64,
}

impl BlobCache {
    fn insert(&mut self, id: git2::Oid, text: Arc<str>, defs: Arc<[String]>, used: u64) {
        let len = text.len();
        if len > BLOB_CACHE_BYTES / 4 {
            return;
        }
        if let Some(old) = self.map.insert(id, BlobEntry { text, defs, used }) {
            self.bytes -= old.text.len();
        }
        self.bytes += len;
        if self.bytes > BLOB_CACHE_BYTES {
            // Drop the least recently used down to three quarters of the budget.
            let mut by_age: Vec<(u64, git2::Oid)> =
                self.map.iter().map(|(k, e)| (e.used, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if self.bytes <= BLOB_CACHE_BYTES / 4 * 3 {
                    break;
                }
                if let Some(e) = self.map.remove(&k) {
                    self.bytes -= e.text.len();
                }
            }
        }
    }
}

fn blob_cache() -> &'static Mutex<BlobCache> {
    static C: OnceLock<Mutex<BlobCache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(BlobCache::default()))
}

/// Tunable weights of the localizer (JSON-loadable: missing fields keep their defaults).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    /// BM25 of the issue over the file, normalised to the best file (0..1).
    pub bm25: f64,
    /// BM25 of the issue over the file path alone, normalised.
    pub path_bm25: f64,
    /// A definition the issue names, times its inverse file frequency (0..1).
    pub def_mention: f64,
    /// The file's path named in the issue.
    pub path_mention: f64,
    /// The file's dotted module named in the issue.
    pub module_mention: f64,
    /// A traceback frame in the file (the innermost repository frame gets the full weight).
    pub frame: f64,
    /// Multiplier for tests, docs, examples and benchmarks.
    pub test_factor: f64,
    /// Function level: the issue names the function.
    pub fn_mention: f64,
    /// Function level: a class the issue names is a part of the function's name (`_print_Sum`).
    pub fn_part_mention: f64,
    /// Function level: a traceback frame inside the function.
    pub fn_frame: f64,
    /// Function level: normalised BM25 over the function's own code.
    pub fn_bm25: f64,
    /// Function level: the file's normalised score.
    pub fn_file: f64,
    /// Query weight of the issue title (first line) relative to the body.
    pub title: f64,
    /// Query weight of `<details>` blocks (environment dumps).
    pub details: f64,
    /// Query weight of two adjacent words joined (`man page` → `manpage`).
    pub compound: f64,
    /// Code lines quoted in the issue that the file holds, by rarity (saturating, 0..1).
    pub code_line: f64,
    /// Function level: code lines quoted in the issue that the function holds (0..1).
    pub fn_code_line: f64,
    /// Files changed by past commits whose messages resemble the issue (normalised, 0..1).
    pub history: f64,
    /// Function level: the issue names the function's class (`PolyFit` for `PolyFit.__call__`).
    pub fn_class_mention: f64,
    /// The best BM25 (0..1) of the test files that test this file (`tests/test_mod.py` →
    /// `mod.py`): tests hold usage much like the issue's examples.
    pub test_link: f64,
    /// How often past commits changed the file (log-scaled, 0..1): files that were fixed
    /// often are fixed again. Needs the history ([`RepoFiles::with_history`]).
    pub churn: f64,
    /// The best BM25 of the issue over one definition of the file (a `def`/`class` chunk),
    /// normalised to the best file: a large file with one matching function is not diluted.
    pub chunk_bm25: f64,
    /// A file imported by a file the issue points at explicitly (a definition it names, its
    /// path or module, a traceback frame): the importer's evidence (0..1) times this file's
    /// content BM25 (0..1). The fix often lies in what the named entry point calls.
    pub import_neighbour: f64,
    /// Function level: identifiers the issue names that the function's own code uses, each
    /// by its rarity among the ranked definitions (normalised, 0..1).
    pub fn_uses_mention: f64,
    /// Function level: the definition is a class (its own lines: header, docstring, class
    /// attributes); a fix edits methods far more often, so this is usually negative.
    pub fn_class: f64,
    /// Function level: how much of the function's own name the issue's words cover, each
    /// name part by its rarity among the ranked names, words compared by their English stem
    /// (`__iter__` ← "iterating", `_print_Symbol` ← "printing a symbol"; 0..1).
    pub fn_name_match: f64,
    /// BM25 of the issue's title (its first line) alone over the file, normalised to the best
    /// file: the title names the problem in a few words, which a long body dilutes even at
    /// `title` weight.
    pub title_bm25: f64,
    /// Function level: BM25 of the issue's title alone over the function, normalised.
    pub fn_title_bm25: f64,
}

impl Default for Weights {
    /// Fitted by `dei-bench context --fit --fit-tasks <SWE-bench Verified>` on the tune half of
    /// the available SWE-bench Lite instances plus the Verified instances outside Lite (235 in
    /// all; coordinate search, see `dei_bench::context::fit`); the report half was never
    /// fitted on. Refitting from these moves no weight. Signals at 0 (`churn`) stay available
    /// through `--weights`.
    fn default() -> Self {
        Weights {
            bm25: 2.53125,
            path_bm25: 1.6875,
            def_mention: 0.421875,
            path_mention: 1.5,
            module_mention: 0.1875,
            frame: 2.25,
            test_factor: 0.3,
            fn_mention: 0.5625,
            fn_part_mention: 2.4,
            fn_frame: 1.5,
            fn_bm25: 2.0,
            fn_file: 3.375,
            title: 2.0,
            details: 0.0,
            compound: 2.25,
            code_line: 0.1875,
            fn_code_line: 0.2109375,
            history: 0.375,
            fn_class_mention: 0.140625,
            test_link: 0.375,
            churn: 0.0,
            chunk_bm25: 0.125,
            import_neighbour: 0.375,
            fn_uses_mention: 0.125,
            fn_class: -0.5625,
            fn_name_match: 0.5,
            title_bm25: 2.0,
            fn_title_bm25: 0.25,
        }
    }
}

impl Weights {
    /// Read weights from a JSON file (fields left out keep their defaults).
    pub fn load(path: &std::path::Path) -> anyhow::Result<Weights> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            anyhow::anyhow!("cannot read localizer weights {}: {e}", path.display())
        })?;
        serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: not a localizer weights object: {e} (fields: see `Weights` in src/context/locate.rs)",
                path.display()
            )
        })
    }
}

#[derive(Debug, Clone)]
pub struct LocateOptions {
    /// Files whose functions are ranked.
    pub function_files: usize,
    /// Functions returned.
    pub top_functions: usize,
    /// Files returned.
    pub top_files: usize,
    pub weights: Weights,
    /// BM25 parameters.
    pub k1: f64,
    pub b: f64,
}

impl Default for LocateOptions {
    fn default() -> Self {
        LocateOptions {
            function_files: 5,
            top_functions: 20,
            top_files: 20,
            weights: Weights::default(),
            k1: 1.2,
            b: 0.75,
        }
    }
}

/// A ranked file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FileHit {
    pub path: String,
    pub score: f64,
    /// Evidence, for reports: "frame", "path", "defines `x`", "bm25".
    pub why: Vec<String>,
}

/// A ranked function, method or class.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FuncHit {
    pub path: String,
    /// Qualified name (`Class.method`).
    pub name: String,
    pub kind: SnippetKind,
    pub lines: LineRange,
    pub score: f64,
}

/// Result of issue-only localization, best first.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Localization {
    pub files: Vec<FileHit>,
    pub functions: Vec<FuncHit>,
}

/// The source files a test file tests, by name: `pkg/tests/test_numbers.py` → a `numbers.py`,
/// `tests/test_domain_std.py` → a `domain_std.py`, else a `std.py` under a `domain…` folder.
/// Among several, those sharing the most leading folders with the test win; more than three
/// equally good ones say nothing and give none.
pub fn tested_files<'a>(test: &str, repo: &'a RepoFiles) -> Vec<&'a str> {
    let name = test.rsplit('/').next().unwrap_or(test);
    let Some(stem) = name
        .strip_suffix(".py")
        .and_then(|n| n.strip_prefix("test_"))
    else {
        return Vec::new();
    };
    let by_stem = |s: &str| -> Vec<&'a str> {
        repo.stems
            .get_or_init(|| {
                let mut m: HashMap<String, Vec<usize>> = HashMap::new();
                for (i, f) in repo.files.iter().enumerate() {
                    if is_auxiliary(&f.path) {
                        continue;
                    }
                    let file = f.path.rsplit('/').next().unwrap_or(&f.path);
                    if let Some(st) = file.strip_suffix(".py") {
                        m.entry(st.to_string()).or_default().push(i);
                    }
                }
                m
            })
            .get(s)
            .map(|v| v.iter().map(|&i| repo.files[i].path.as_str()).collect())
            .unwrap_or_default()
    };
    let mut found = by_stem(stem);
    if found.is_empty() {
        if let Some((head, last)) = stem.rsplit_once('_') {
            found = by_stem(last)
                .into_iter()
                .filter(|p| {
                    p.split('/')
                        .any(|seg| seg.starts_with(head) || head.starts_with(seg))
                })
                .collect();
        }
    }
    let test_dirs: Vec<&str> = test.split('/').collect();
    let shared = |p: &str| {
        p.split('/')
            .zip(&test_dirs)
            .take_while(|(a, b)| a == *b)
            .count()
    };
    let best = found.iter().map(|p| shared(p)).max().unwrap_or(0);
    found.retain(|p| shared(p) == best);
    if found.len() > 3 {
        found.clear();
    }
    found
}

/// [`bm25`] scaled so the best document scores 1.
fn bm25_normalised(
    query: &HashMap<String, f64>,
    docs: &[(&HashMap<String, u32>, u32)],
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let mut s = bm25(query, docs, k1, b);
    normalise(&mut s);
    s
}

/// BM25 scores of `query` terms over documents given as term maps.
fn bm25(
    query: &HashMap<String, f64>,
    docs: &[(&HashMap<String, u32>, u32)],
    k1: f64,
    b: f64,
) -> Vec<f64> {
    let n = docs.len().max(1) as f64;
    let avg = docs.iter().map(|(_, l)| *l as f64).sum::<f64>() / n;
    let avg = avg.max(1.0);
    let mut df: HashMap<&str, f64> = HashMap::new();
    for (terms, _) in docs {
        for q in query.keys() {
            if terms.contains_key(q) {
                *df.entry(q.as_str()).or_insert(0.0) += 1.0;
            }
        }
    }
    docs.iter()
        .map(|(terms, len)| {
            let mut s = 0.0;
            for (q, qw) in query {
                let Some(&tf) = terms.get(q) else { continue };
                let d = df.get(q.as_str()).copied().unwrap_or(0.0);
                s += qw * bm25_idf(n, d) * bm25_tf(tf as f64, *len as f64, avg, k1, b);
            }
            s
        })
        .collect()
}

/// BM25's inverse document frequency of a term held by `df` of `n` documents.
fn bm25_idf(n: f64, df: f64) -> f64 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

/// BM25's saturated term frequency in a document of `len` terms (collection mean `avg`).
fn bm25_tf(tf: f64, len: f64, avg: f64, k1: f64, b: f64) -> f64 {
    tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
}

/// Weighted query terms of an issue: title words count `w.title`, `<details>` words
/// `w.details`, adjacent words joined (`man page` → `manpage`) `w.compound`; repeats are damped.
fn query_terms(issue: &str, w: &Weights) -> HashMap<String, f64> {
    let mut q: HashMap<String, f64> = HashMap::new();
    for (part, pw) in weighted_parts(issue, w.title, w.details) {
        for t in tokenize(&part) {
            *q.entry(t).or_insert(0.0) += pw;
        }
        if w.compound > 0.0 {
            let words: Vec<String> = part
                .split(|c: char| !c.is_alphabetic())
                .filter(|x| x.len() >= 2)
                .map(str::to_lowercase)
                .collect();
            for pair in words.windows(2) {
                if !is_stop(&pair[0]) && !is_stop(&pair[1]) {
                    *q.entry(format!("{}{}", pair[0], pair[1])).or_insert(0.0) += pw * w.compound;
                }
            }
        }
    }
    // Dampen repeated terms.
    for v in q.values_mut() {
        if *v > 1.0 {
            *v = 1.0 + v.ln();
        }
    }
    q
}

/// Hash of a trimmed source line, for matching code quoted in an issue.
fn line_key(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.trim().hash(&mut h);
    h.finish()
}

/// Per file, how strongly it holds the code lines the issue quotes: each line adds
/// 1/(files holding it) when at most [`MAX_LINE_FILES`] files do; the sum saturates to 0..1.
fn code_line_scores(lines: &[String], repo: &RepoFiles) -> Vec<f64> {
    let mut sum = vec![0.0; repo.files.len()];
    if lines.is_empty() {
        return sum;
    }
    let index = repo.line_index();
    for l in lines {
        if let Some(files) = index.get(&line_key(l)) {
            if files.len() <= MAX_LINE_FILES {
                for &i in files {
                    sum[i as usize] += 1.0 / files.len() as f64;
                }
            }
        }
    }
    sum.iter().map(|s| 1.0 - (-s).exp()).collect()
}

/// Past commits that lend their files to the history score: the most similar ones only.
const HISTORY_TOP: usize = 50;
/// Commits that change more files than this (reformatting, renames) say nothing about one bug.
const HISTORY_MAX_PATHS: usize = 30;
/// Commits read by [`RepoFiles::with_history`] callers by default.
pub const HISTORY_COMMITS: usize = 3000;

/// Per file: the BM25 similarity of the issue to the messages of the past commits that changed
/// it, each of the [`HISTORY_TOP`] most similar commits sharing its score among its files.
fn history_scores(q: &HashMap<String, f64>, repo: &RepoFiles, k1: f64, b: f64) -> Vec<f64> {
    let mut out = vec![0.0; repo.files.len()];
    if repo.history.is_empty() {
        return out;
    }
    let terms: Vec<HashMap<String, u32>> = repo
        .history
        .iter()
        .map(|c| {
            let mut m = HashMap::new();
            for t in tokenize(&c.message) {
                *m.entry(t).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let docs: Vec<(&HashMap<String, u32>, u32)> =
        terms.iter().map(|m| (m, m.values().sum())).collect();
    let sims = bm25(q, &docs, k1, b);
    let mut order: Vec<usize> = (0..sims.len()).filter(|&i| sims[i] > 0.0).collect();
    order.sort_by(|&a, &b| sims[b].total_cmp(&sims[a]));
    let mut used = 0;
    for i in order {
        if used == HISTORY_TOP {
            break;
        }
        let files: Vec<usize> = repo.history[i]
            .paths
            .iter()
            .filter_map(|p| repo.by_path.get(p).copied())
            .collect();
        if files.is_empty() || repo.history[i].paths.len() > HISTORY_MAX_PATHS {
            continue;
        }
        used += 1;
        for &f in &files {
            out[f] += sims[i] / files.len() as f64;
        }
    }
    normalise(&mut out);
    out
}

/// A quoted line held by more files than this is boilerplate, not a location.
const MAX_LINE_FILES: usize = 5;

fn normalise(v: &mut [f64]) {
    let max = v.iter().cloned().fold(0.0, f64::max);
    if max > 0.0 {
        for x in v.iter_mut() {
            *x /= max;
        }
    }
}

/// A row of signals weighted: the sum of `x[k] * w[k]`.
pub fn dot<const N: usize>(x: &[f64; N], w: &[f64; N]) -> f64 {
    x.iter().zip(w).map(|(a, b)| a * b).sum()
}

/// How many file-level signals there are (the length of [`Weights::file_vector`]).
pub const FILE_SIGNALS: usize = 13;

/// The file-level evidence for one issue, before weighting: one row per repository file.
#[derive(Debug, Clone, Default)]
pub struct FileSignals {
    /// Per file, the signals in [`Weights::file_vector`] order.
    pub x: Vec<[f64; FILE_SIGNALS]>,
    /// Tests, docs, examples ([`is_auxiliary`]): their score is multiplied by `test_factor`.
    pub aux: Vec<bool>,
    pub why: Vec<Vec<String>>,
}

impl FileSignals {
    /// Weighted scores of every file.
    pub fn scores(&self, w: &[f64; FILE_SIGNALS], test_factor: f64) -> Vec<f64> {
        self.x
            .iter()
            .zip(&self.aux)
            .map(|(x, &aux)| {
                let s = dot(x, w);
                if aux {
                    s * test_factor
                } else {
                    s
                }
            })
            .collect()
    }
}

impl Weights {
    /// The fields of [`Weights::file_vector`], in its order.
    pub const FILE_NAMES: [&'static str; FILE_SIGNALS] = [
        "bm25",
        "path_bm25",
        "def_mention",
        "path_mention",
        "module_mention",
        "frame",
        "code_line",
        "history",
        "test_link",
        "churn",
        "chunk_bm25",
        "import_neighbour",
        "title_bm25",
    ];

    /// The file-level weights in [`FileSignals::x`] order: bm25, path_bm25, def_mention,
    /// path_mention, module_mention, frame, code_line, history, test_link, churn, chunk_bm25,
    /// import_neighbour (the field names in [`Weights::FILE_NAMES`]).
    pub fn file_vector(&self) -> [f64; FILE_SIGNALS] {
        [
            self.bm25,
            self.path_bm25,
            self.def_mention,
            self.path_mention,
            self.module_mention,
            self.frame,
            self.code_line,
            self.history,
            self.test_link,
            self.churn,
            self.chunk_bm25,
            self.import_neighbour,
            self.title_bm25,
        ]
    }
}

/// Every file's signals for an issue; `need(k)` false skips computing signal `k` (left 0).
pub fn file_signals(
    issue: &str,
    repo: &RepoFiles,
    opts: &LocateOptions,
    need: impl Fn(usize) -> bool,
) -> FileSignals {
    let w = &opts.weights;
    let refs = IssueRefs::new(issue);
    let q = query_terms(issue, w);
    let n = repo.files.len();
    let mut x = vec![[0.0f64; FILE_SIGNALS]; n];
    let mut why: Vec<Vec<String>> = vec![Vec::new(); n];
    let docs: Vec<(&HashMap<String, u32>, u32)> = repo
        .files
        .iter()
        .map(|f| (&f.terms().terms, f.terms().len))
        .collect();
    let content = bm25_normalised(&q, &docs, opts.k1, opts.b);
    let path_terms: Vec<HashMap<String, u32>> = repo
        .files
        .iter()
        .map(|f| {
            let mut m = HashMap::new();
            for t in tokenize(&f.path.replace(".py", "")) {
                *m.entry(t).or_insert(0) += 1;
            }
            m
        })
        .collect();
    let pdocs: Vec<(&HashMap<String, u32>, u32)> = path_terms
        .iter()
        .map(|m| (m, m.values().sum::<u32>()))
        .collect();
    let path_score = bm25_normalised(&q, &pdocs, opts.k1, opts.b);
    for i in 0..n {
        x[i][0] = content[i];
        x[i][1] = path_score[i];
    }
    // Definitions the issue names, weighted by how specific the name is.
    let nfiles = n.max(1) as f64;
    for m in &refs.mentions {
        let defining = repo.files_defining(m);
        if defining.is_empty() {
            continue;
        }
        let idf = ((nfiles + 1.0) / defining.len() as f64).ln() / (nfiles + 1.0).ln();
        for &i in defining {
            x[i][2] += idf;
            why[i].push(format!("defines `{m}`"));
        }
    }
    // Paths and modules the issue names.
    for p in &refs.paths {
        if let Some(f) = resolve_path(p, repo.paths()) {
            let i = repo.by_path[f];
            x[i][3] += 1.0;
            why[i].push("path named".into());
        }
    }
    for d in &refs.dotted {
        if let Some(i) = repo.module_file(d) {
            // `pkg` alone (a top-level __init__) says little.
            if d.contains('.') {
                x[i][4] += 1.0;
                why[i].push(format!("module `{d}`"));
            }
        }
    }
    // Traceback frames: the innermost repository frame counts most.
    let resolved: Vec<usize> = refs
        .frames
        .iter()
        .filter_map(|f| resolve_path(&f.file, repo.paths()).map(|p| repo.by_path[p]))
        .collect();
    let mut seen = HashSet::new();
    for (k, &i) in resolved.iter().rev().enumerate() {
        if seen.insert(i) {
            x[i][5] += 1.0 / (1.0 + k as f64 * 0.5);
            why[i].push("traceback frame".into());
        }
    }
    if need(6) {
        for (i, c) in code_line_scores(&code_lines(issue), repo)
            .into_iter()
            .enumerate()
        {
            if c > 0.0 {
                x[i][6] = c;
                why[i].push("holds quoted code".into());
            }
        }
    }
    if need(7) {
        for (i, h) in history_scores(&q, repo, opts.k1, opts.b)
            .into_iter()
            .enumerate()
        {
            if h > 0.0 {
                x[i][7] = h;
                why[i].push("changed by similar past commits".into());
            }
        }
    }
    let aux: Vec<bool> = repo.files.iter().map(|f| is_auxiliary(&f.path)).collect();
    if need(8) {
        for (t, f) in repo.files.iter().enumerate() {
            if content[t] > 0.0 && aux[t] {
                for p in tested_files(&f.path, repo) {
                    let i = repo.by_path[p];
                    if x[i][8] == 0.0 {
                        why[i].push("its tests match the issue".into());
                    }
                    x[i][8] = x[i][8].max(content[t]);
                }
            }
        }
    }
    if need(9) {
        for (i, c) in churn_scores(repo).into_iter().enumerate() {
            x[i][9] = c;
        }
    }
    if need(10) {
        for (i, c) in chunk_scores(&q, repo, opts.k1, opts.b)
            .into_iter()
            .enumerate()
        {
            if c > 0.0 {
                x[i][10] = c;
                if c >= 0.5 {
                    why[i].push("a definition matches the issue".into());
                }
            }
        }
    }
    if need(11) {
        for f in 0..n {
            if aux[f] {
                continue;
            }
            // Explicit evidence only: a named definition, the path, the module, a frame.
            let anchor = (x[f][2] + x[f][3] + x[f][4] + x[f][5]).min(1.0);
            if anchor <= 0.0 {
                continue;
            }
            for g in repo.imports_of(f) {
                let v = anchor * content[g];
                if v > x[g][11] {
                    if x[g][11] == 0.0 {
                        why[g].push(format!("imported by {}", repo.files[f].path));
                    }
                    x[g][11] = v;
                }
            }
        }
    }
    if need(12) {
        let t = bm25_normalised(&title_terms(issue), &docs, opts.k1, opts.b);
        for i in 0..n {
            x[i][12] = t[i];
        }
    }
    FileSignals { x, aux, why }
}

/// The terms of the issue's title ([`super::issue::title`]: the first line, HTML comments dropped), each once.
fn title_terms(issue: &str) -> HashMap<String, f64> {
    let mut q = HashMap::new();
    for t in tokenize(&super::issue::title(issue)) {
        q.insert(t, 1.0);
    }
    q
}

/// Per file, how many past commits (of at most [`HISTORY_MAX_PATHS`] files) changed it, as
/// `ln(1+n) / ln(1+max)`.
fn churn_scores(repo: &RepoFiles) -> Vec<f64> {
    let mut n = vec![0u32; repo.files.len()];
    for c in &repo.history {
        if c.paths.len() > HISTORY_MAX_PATHS {
            continue;
        }
        for p in &c.paths {
            if let Some(&i) = repo.by_path.get(p) {
                n[i] += 1;
            }
        }
    }
    let max = n.iter().copied().max().unwrap_or(0);
    if max == 0 {
        return vec![0.0; n.len()];
    }
    let den = (1.0 + max as f64).ln();
    n.iter().map(|&c| (1.0 + c as f64).ln() / den).collect()
}

/// Per file, the best BM25 of the query over one of its definition chunks
/// ([`RepoFile::chunks`]), with document frequencies and mean length over every chunk
/// of the repository; normalised to the best file.
fn chunk_scores(q: &HashMap<String, f64>, repo: &RepoFiles, k1: f64, b: f64) -> Vec<f64> {
    let terms: Vec<&ChunkTerms> = repo.files.iter().map(|f| f.chunks()).collect();
    let n: usize = terms.iter().map(|t| t.lens.len()).sum();
    if n == 0 {
        return vec![0.0; terms.len()];
    }
    let total: u64 = terms
        .iter()
        .flat_map(|t| t.lens.iter())
        .map(|&l| l as u64)
        .sum();
    let avg = (total as f64 / n as f64).max(1.0);
    let idf: Vec<(&str, f64)> = q
        .iter()
        .filter_map(|(t, qw)| {
            let df: usize = terms
                .iter()
                .filter_map(|ft| ft.terms.get(t))
                .map(Vec::len)
                .sum();
            (df > 0).then(|| (t.as_str(), qw * bm25_idf(n as f64, df as f64)))
        })
        .collect();
    let mut out: Vec<f64> = terms
        .iter()
        .map(|ft| {
            let mut acc = vec![0.0f64; ft.lens.len()];
            for (t, w) in &idf {
                let Some(post) = ft.terms.get(*t) else {
                    continue;
                };
                for &(c, tf) in post {
                    let len = ft.lens[c as usize] as f64;
                    acc[c as usize] += w * bm25_tf(tf as f64, len, avg, k1, b);
                }
            }
            acc.into_iter().fold(0.0, f64::max)
        })
        .collect();
    normalise(&mut out);
    out
}

/// Files with a positive score, best first (ties by path), at most `top`.
pub fn rank_files(repo: &RepoFiles, signals: FileSignals, w: &Weights, top: usize) -> Vec<FileHit> {
    let score = signals.scores(&w.file_vector(), w.test_factor);
    let mut why = signals.why;
    let mut hits: Vec<FileHit> = (0..score.len())
        .filter(|&i| score[i] > 0.0)
        .map(|i| FileHit {
            path: repo.files[i].path.clone(),
            score: score[i],
            why: std::mem::take(&mut why[i]),
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
    });
    hits.truncate(top);
    hits
}

/// Rank the repository's files for an issue.
pub fn locate_files(issue: &str, repo: &RepoFiles, opts: &LocateOptions) -> Vec<FileHit> {
    let wv = opts.weights.file_vector();
    let signals = file_signals(issue, repo, opts, |k| wv[k] != 0.0);
    rank_files(
        repo,
        signals,
        &opts.weights,
        opts.top_files.max(opts.function_files),
    )
}

/// How many function-level signals there are (the length of [`Weights::function_vector`]).
pub const FUNCTION_SIGNALS: usize = 11;

impl Weights {
    /// The fields of [`Weights::function_vector`], in its order.
    pub const FUNCTION_NAMES: [&'static str; FUNCTION_SIGNALS] = [
        "fn_bm25",
        "fn_file",
        "fn_code_line",
        "fn_class_mention",
        "fn_mention",
        "fn_part_mention",
        "fn_frame",
        "fn_uses_mention",
        "fn_class",
        "fn_name_match",
        "fn_title_bm25",
    ];

    /// The function-level weights in [`FunctionSignals::x`] order: fn_bm25, fn_file,
    /// fn_code_line, fn_class_mention, fn_mention, fn_part_mention, fn_frame, fn_uses_mention,
    /// fn_class, fn_name_match.
    pub fn function_vector(&self) -> [f64; FUNCTION_SIGNALS] {
        [
            self.fn_bm25,
            self.fn_file,
            self.fn_code_line,
            self.fn_class_mention,
            self.fn_mention,
            self.fn_part_mention,
            self.fn_frame,
            self.fn_uses_mention,
            self.fn_class,
            self.fn_name_match,
            self.fn_title_bm25,
        ]
    }
}

/// The function-level evidence for one issue, before weighting: one row per definition of
/// the best files.
#[derive(Debug, Clone, Default)]
pub struct FunctionSignals {
    /// The definitions, scores not yet set.
    pub hits: Vec<FuncHit>,
    /// Per definition, the signals in [`Weights::function_vector`] order.
    pub x: Vec<[f64; FUNCTION_SIGNALS]>,
}

/// Every definition of the first `opts.function_files` files, with its signals; `need(k)`
/// false skips computing signal `k` (left 0).
pub fn function_signals(
    issue: &str,
    repo: &RepoFiles,
    files: &[FileHit],
    opts: &LocateOptions,
    need: impl Fn(usize) -> bool,
) -> FunctionSignals {
    let refs = IssueRefs::new(issue);
    let q = query_terms(issue, &opts.weights);
    // Quoted lines are hashed and looked for only when they count.
    let quoted: HashSet<u64> = if need(2) {
        code_lines(issue).iter().map(|l| line_key(l)).collect()
    } else {
        HashSet::new()
    };
    let top = files.iter().take(opts.function_files).collect::<Vec<_>>();
    let best_file = top.first().map(|f| f.score).unwrap_or(1.0).max(1e-9);
    struct Unit {
        terms: HashMap<String, u32>,
        len: u32,
    }
    let mut hits: Vec<FuncHit> = Vec::new();
    let mut x: Vec<[f64; FUNCTION_SIGNALS]> = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    for fh in &top {
        let Some(rf) = repo.get(&fh.path) else {
            continue;
        };
        let idx = rf.index();
        let lines: Vec<&str> = rf.text.lines().collect();
        // Each line belongs to its innermost definition.
        let mut owner: Vec<Option<usize>> = vec![None; lines.len() + 1];
        for (di, d) in idx.defs.iter().enumerate() {
            for o in &mut owner[d.lines.start..=d.lines.end.min(lines.len())] {
                *o = Some(di);
            }
        }
        let mut per_def: Vec<HashMap<String, u32>> = vec![HashMap::new(); idx.defs.len()];
        let mut lens = vec![0u32; idx.defs.len()];
        let mut quoted_in = vec![0u32; idx.defs.len()];
        for (l, text) in lines.iter().enumerate() {
            if let Some(di) = owner[l + 1] {
                if !quoted.is_empty()
                    && text.trim().len() >= MIN_QUOTED_LINE
                    && quoted.contains(&line_key(text))
                {
                    quoted_in[di] += 1;
                }
                for t in tokenize(text) {
                    *per_def[di].entry(t).or_insert(0) += 1;
                    lens[di] += 1;
                }
            }
        }
        for (di, d) in idx.defs.iter().enumerate() {
            let mut terms = std::mem::take(&mut per_def[di]);
            let mut extra = Vec::new();
            split_terms(d.short(), &mut extra);
            if let Some(doc) = &d.doc {
                extra.extend(tokenize(doc));
            }
            for t in extra {
                *terms.entry(t).or_insert(0) += 2;
                lens[di] += 2;
            }
            let hit = FuncHit {
                path: fh.path.clone(),
                name: d.name.clone(),
                kind: d.kind,
                lines: d.lines,
                score: 0.0,
            };
            let mut row = [0.0; FUNCTION_SIGNALS];
            row[1] = fh.score / best_file;
            row[2] = 1.0 - (-(quoted_in[di] as f64)).exp();
            if let Some((class, _)) = hit.name.rsplit_once('.') {
                row[3] = refs.names(class) as u8 as f64;
            }
            if refs.names(&hit.name) {
                row[4] = 1.0;
            } else {
                // `_print_Sum`, `_eval_rewrite_as_Heaviside`: a named class as a part of the name.
                let short = hit.name.rsplit('.').next().unwrap_or(&hit.name);
                row[5] = short.split('_').any(|p| {
                    p.len() >= 3
                        && p.chars().next().is_some_and(char::is_uppercase)
                        && refs.mentions.iter().any(|m| m == p)
                }) as u8 as f64;
            }
            for (k, f) in refs.frames.iter().rev().enumerate() {
                if f.line >= hit.lines.start
                    && f.line <= hit.lines.end
                    && resolve_path(&f.file, [hit.path.as_str()]).is_some()
                {
                    row[6] = 1.0 / (1.0 + k as f64 * 0.5);
                    break;
                }
            }
            row[8] = (hit.kind == SnippetKind::Class) as u8 as f64;
            hits.push(hit);
            x.push(row);
            units.push(Unit {
                terms,
                len: lens[di],
            });
        }
    }
    if need(7) && !units.is_empty() {
        // Named identifiers (lowercased, as terms are), by rarity among the units.
        let names: Vec<String> = refs.mentions.iter().map(|m| m.to_lowercase()).collect();
        let n = units.len() as f64;
        let idf: Vec<f64> = names
            .iter()
            .map(|m| {
                let df = units.iter().filter(|u| u.terms.contains_key(m)).count() as f64;
                if df == 0.0 {
                    0.0
                } else {
                    ((n + 1.0) / df).ln()
                }
            })
            .collect();
        let mut uses: Vec<f64> = units
            .iter()
            .map(|u| {
                names
                    .iter()
                    .zip(&idf)
                    .filter(|(m, _)| u.terms.contains_key(*m))
                    .map(|(_, w)| w)
                    .sum()
            })
            .collect();
        normalise(&mut uses);
        for (row, v) in x.iter_mut().zip(uses) {
            row[7] = v;
        }
    }
    if need(9) && !hits.is_empty() {
        for (row, v) in x.iter_mut().zip(name_match(issue, &hits)) {
            row[9] = v;
        }
    }
    let docs: Vec<(&HashMap<String, u32>, u32)> = units.iter().map(|u| (&u.terms, u.len)).collect();
    if need(0) {
        let b = bm25_normalised(&q, &docs, opts.k1, opts.b);
        for (row, bs) in x.iter_mut().zip(b) {
            row[0] = bs;
        }
    }
    if need(10) {
        let b = bm25_normalised(&title_terms(issue), &docs, opts.k1, opts.b);
        for (row, bs) in x.iter_mut().zip(b) {
            row[10] = bs;
        }
    }
    FunctionSignals { hits, x }
}

/// English stem of a lowercase word (`iterating` → `iter`, `printing` → `print`).
fn stem(word: &str) -> String {
    static S: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    S.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
        .stem(word)
        .into_owned()
}

/// Per definition, the share of its own name's parts (by rarity among `hits`' names) whose
/// stem is the stem of a word of the issue (template and HTML comments left out).
fn name_match(issue: &str, hits: &[FuncHit]) -> Vec<f64> {
    let mut words: HashSet<String> = HashSet::new();
    for (part, _) in weighted_parts(issue, 1.0, 1.0) {
        for t in tokenize(&part) {
            if t.len() >= 3 && t.bytes().all(|b| b.is_ascii_lowercase()) {
                words.insert(stem(&t));
            }
        }
    }
    let parts: Vec<Vec<String>> = hits
        .iter()
        .map(|h| {
            let short = h.name.rsplit('.').next().unwrap_or(&h.name);
            let mut t = Vec::new();
            split_terms(short, &mut t);
            // The whole name when it has parts, and parts too short to mean a word, go.
            if t.len() > 1 {
                let whole = short.to_lowercase();
                let whole = whole.trim_matches('_');
                t.retain(|p| p != whole);
            }
            t.retain(|p| p.len() >= 3 && p.bytes().all(|b| b.is_ascii_lowercase()));
            t.iter().map(|p| stem(p)).collect()
        })
        .collect();
    let mut df: HashMap<&str, u32> = HashMap::new();
    for p in &parts {
        for t in p.iter().collect::<HashSet<_>>() {
            *df.entry(t.as_str()).or_insert(0) += 1;
        }
    }
    let n = hits.len() as f64;
    parts
        .iter()
        .map(|p| {
            let idf = |t: &String| ((n + 1.0) / df[t.as_str()] as f64).ln();
            let all: f64 = p.iter().map(idf).sum();
            if all <= 0.0 {
                return 0.0;
            }
            p.iter()
                .filter(|t| words.contains(*t))
                .map(idf)
                .sum::<f64>()
                / all
        })
        .collect()
}

/// Definitions best first (ties by path, then line), at most `top`.
pub fn rank_functions(signals: FunctionSignals, w: &Weights, top: usize) -> Vec<FuncHit> {
    let wv = w.function_vector();
    let mut out: Vec<FuncHit> = signals
        .hits
        .into_iter()
        .zip(&signals.x)
        .map(|(mut hit, x)| {
            hit.score = dot(x, &wv);
            hit
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.lines.start.cmp(&b.lines.start))
    });
    out.truncate(top);
    out
}

/// Rank the definitions of the best files.
pub fn locate_functions(
    issue: &str,
    repo: &RepoFiles,
    files: &[FileHit],
    opts: &LocateOptions,
) -> Vec<FuncHit> {
    let wv = opts.weights.function_vector();
    let signals = function_signals(issue, repo, files, opts, |k| wv[k] != 0.0);
    rank_functions(signals, &opts.weights, opts.top_functions)
}

/// Rank files, then the functions of the best files, for an issue.
pub fn locate(issue: &str, repo: &RepoFiles, opts: &LocateOptions) -> Localization {
    let mut files = locate_files(issue, repo, opts);
    let functions = locate_functions(issue, repo, &files, opts);
    files.truncate(opts.top_files);
    Localization { files, functions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> RepoFiles {
        RepoFiles::from_pairs(vec![
            ("pkg/sessions.py".into(), "class Session:\n    def request(self, method, url):\n        return self.send(method)\n\n    def send(self, r):\n        \"\"\"Send a prepared request.\"\"\"\n        return adapter(r)\n".into()),
            ("pkg/utils.py".into(), "def parse_header_links(value):\n    \"\"\"Return a list of parsed link headers.\"\"\"\n    links = []\n    return links\n".into()),
            ("pkg/models.py".into(), "class Response:\n    def json(self):\n        return decode(self.text)\n".into()),
            ("tests/test_utils.py".into(), "def test_parse_header_links():\n    parse_header_links('x')\n".into()),
        ])
    }

    #[test]
    fn split_terms_handles_case_styles() {
        let mut v = Vec::new();
        split_terms("HTTPAdapter_send_now", &mut v);
        assert!(v.contains(&"httpadapter_send_now".to_string()));
        assert!(
            v.contains(&"http".to_string())
                && v.contains(&"adapter".to_string())
                && v.contains(&"send".to_string())
        );
    }

    #[test]
    fn named_definition_ranks_its_file_first_and_tests_last() {
        let r = repo();
        let loc = locate(
            "parse_header_links returns wrong links for empty header",
            &r,
            &LocateOptions::default(),
        );
        assert_eq!(loc.files[0].path, "pkg/utils.py", "{:?}", loc.files);
        let test_pos = loc
            .files
            .iter()
            .position(|f| f.path.starts_with("tests/"))
            .unwrap();
        assert!(test_pos > 0);
        assert_eq!(loc.functions[0].name, "parse_header_links");
    }

    #[test]
    fn traceback_frames_point_at_file_and_function() {
        let r = repo();
        let issue = "Crash:\nTraceback (most recent call last):\n  File \"/site-packages/pkg/sessions.py\", line 3, in request\n    return self.send(method)\nKeyError";
        let loc = locate(issue, &r, &LocateOptions::default());
        assert_eq!(loc.files[0].path, "pkg/sessions.py");
        assert!(loc.files[0].why.iter().any(|w| w == "traceback frame"));
        assert_eq!(
            loc.functions[0].name, "Session.request",
            "{:?}",
            loc.functions
        );
    }

    #[test]
    fn tests_link_to_the_files_they_test() {
        let r = RepoFiles::from_pairs(
            [
                "sympy/core/numbers.py",
                "sympy/polys/numbers.py",
                "sympy/core/tests/test_numbers.py",
                "sphinx/domains/std.py",
                "sphinx/util/std.py",
                "tests/test_domain_std.py",
                "src/_pytest/skipping.py",
                "testing/test_skipping.py",
                "testing/test_nothing_like_it.py",
            ]
            .iter()
            .map(|p| (p.to_string(), String::new()))
            .collect(),
        );
        assert_eq!(
            tested_files("sympy/core/tests/test_numbers.py", &r),
            ["sympy/core/numbers.py"],
            "the nearer of two same-named files"
        );
        assert_eq!(
            tested_files("tests/test_domain_std.py", &r),
            ["sphinx/domains/std.py"]
        );
        assert_eq!(
            tested_files("testing/test_skipping.py", &r),
            ["src/_pytest/skipping.py"]
        );
        assert!(tested_files("testing/test_nothing_like_it.py", &r).is_empty());
        assert!(tested_files("src/_pytest/skipping.py", &r).is_empty());
    }

    #[test]
    fn tests_matching_the_issue_lift_their_source_file() {
        // Source files that say nothing the issue says; one test file full of its words.
        let r = RepoFiles::from_pairs(vec![
            ("pkg/alpha.py".into(), "def run():\n    return 1\n".into()),
            ("pkg/beta.py".into(), "def run():\n    return 2\n".into()),
            (
                "tests/test_beta.py".into(),
                "def test_xfail_marker_dynamic():\n    node.add_marker(xfail)\n".into(),
            ),
        ]);
        let issue = "Dynamically adding xfail marker with add_marker no longer works";
        let with = LocateOptions {
            weights: Weights {
                test_link: 1.0,
                ..Weights::default()
            },
            ..LocateOptions::default()
        };
        let ranked = locate_files(issue, &r, &with);
        let beta = ranked.iter().position(|f| f.path == "pkg/beta.py").unwrap();
        let alpha = ranked.iter().position(|f| f.path == "pkg/alpha.py");
        assert!(alpha.map_or(true, |a| beta < a), "{ranked:?}");
        assert!(ranked[beta].why.iter().any(|w| w.contains("its tests")));
    }

    #[test]
    fn quoted_source_lines_point_at_their_file() {
        let r = RepoFiles::from_pairs(vec![
            ("pkg/mod.py".into(), "class Mod:\n    def eval(p, q):\n        if p.is_Pow and p.exp.is_Integer and p.base == q:\n            return 0\n".into()),
            ("pkg/other.py".into(), "def eval(p, q):\n    return p\n".into()),
        ]);
        let issue = "Wrong result\n```\nif p.is_Pow and p.exp.is_Integer and p.base == q:\n```";
        let only_lines = LocateOptions {
            weights: Weights {
                bm25: 0.0,
                path_bm25: 0.0,
                def_mention: 0.0,
                code_line: 1.0,
                fn_code_line: 1.0,
                ..Weights::default()
            },
            ..LocateOptions::default()
        };
        let loc = locate(issue, &r, &only_lines);
        assert_eq!(loc.files[0].path, "pkg/mod.py");
        assert!(
            loc.files.iter().all(|f| f.path != "pkg/other.py"),
            "{:?}",
            loc.files
        );
        assert_eq!(loc.functions[0].name, "Mod.eval");
    }

    #[test]
    fn imports_resolve_absolute_relative_and_local_imports() {
        let r = RepoFiles::from_pairs(vec![
            (
                "pkg/api.py".into(),
                "import pkg.core as c, os\nfrom .util import helper\nfrom . import extra  # x\n\ndef f():\n    from pkg.sub import deep\n    from ..outside import z\n".into(),
            ),
            ("pkg/core.py".into(), String::new()),
            ("pkg/util.py".into(), String::new()),
            ("pkg/extra.py".into(), String::new()),
            ("pkg/sub/__init__.py".into(), String::new()),
            ("pkg/sub/deep.py".into(), String::new()),
            ("src/lib2/mod.py".into(), "from lib2 import other\nfrom .mod import x\n".into()),
            ("src/lib2/other.py".into(), String::new()),
        ]);
        let names = |i: usize| -> Vec<&str> {
            let mut v: Vec<&str> = r
                .imports_of(i)
                .into_iter()
                .map(|j| r.files[j].path.as_str())
                .collect();
            v.sort();
            v
        };
        assert_eq!(
            names(0),
            [
                "pkg/core.py",
                "pkg/extra.py",
                "pkg/sub/__init__.py",
                "pkg/sub/deep.py",
                "pkg/util.py"
            ]
        );
        // Under src/: imported without the prefix; a file never imports itself.
        assert_eq!(names(6), ["src/lib2/other.py"]);
        assert!(names(1).is_empty());
    }

    #[test]
    fn title_bm25_favours_the_file_the_title_describes() {
        let r = RepoFiles::from_pairs(vec![
            (
                "pkg/rolling.py".into(),
                "def window(center):\n    return center\n".into(),
            ),
            (
                "pkg/plot.py".into(),
                "def figure(axes, legend):\n    return axes\n".into(),
            ),
        ]);
        // The body talks about plotting at length; the title names the real subject.
        let issue = "rolling window ignores center\nI plot axes and a legend, then plot axes again with a legend and axes.";
        let only = |title_bm25: f64, bm25: f64| LocateOptions {
            weights: Weights {
                bm25,
                title_bm25,
                path_bm25: 0.0,
                chunk_bm25: 0.0,
                test_link: 0.0,
                history: 0.0,
                ..Weights::default()
            },
            ..LocateOptions::default()
        };
        assert_eq!(
            locate_files(issue, &r, &only(0.0, 1.0))[0].path,
            "pkg/plot.py"
        );
        assert_eq!(
            locate_files(issue, &r, &only(1.0, 0.0))[0].path,
            "pkg/rolling.py"
        );
        assert_eq!(title_terms(issue).len(), 4, "{:?}", title_terms(issue));
    }

    #[test]
    fn name_match_compares_stems_and_weighs_rare_parts() {
        let hit = |name: &str| FuncHit {
            path: "p.py".into(),
            name: name.into(),
            kind: SnippetKind::Function,
            lines: LineRange { start: 1, end: 2 },
            score: 0.0,
        };
        let hits = [
            hit("DataArrayRolling.__iter__"),
            hit("MathMLPrinter._print_Symbol"),
            hit("MathMLPrinter._print_Integral"),
            hit("MathMLPrinter._print_Sum"),
            hit("reduce"),
        ];
        let m = name_match(
            "center kwarg ignored when manually iterating; a symbol is printed wrong",
            &hits,
        );
        // `iterating` → `iter`; `printed`/`symbol` cover all of `_print_Symbol`.
        assert_eq!(m[0], 1.0, "{m:?}");
        assert_eq!(m[1], 1.0, "{m:?}");
        // Only the common part `print` of `_print_Integral` matches: some, not all.
        assert!(m[2] > 0.0 && m[2] < 0.5, "{m:?}");
        assert_eq!(m[4], 0.0, "{m:?}");
    }

    #[test]
    fn import_neighbour_lifts_what_a_named_entry_point_imports() {
        // The issue names `factor` (defined in api.py); the fix is in impl.py, which api.py
        // imports and which shares the issue's words; noise.py shares them too, unimported.
        let r = RepoFiles::from_pairs(vec![
            (
                "pkg/api.py".into(),
                "from pkg import impl\n\ndef factor(f):\n    return impl.go(f)\n".into(),
            ),
            (
                "pkg/impl.py".into(),
                "def go(f):\n    extension = gaussian(f)\n    return extension\n".into(),
            ),
            (
                "pkg/noise.py".into(),
                "def other(f):\n    extension = gaussian(f)\n    return extension\n".into(),
            ),
        ]);
        let issue = "`factor` with extension drops a gaussian factor";
        let only = |import_neighbour: f64| LocateOptions {
            weights: Weights {
                bm25: 1.0,
                path_bm25: 0.0,
                def_mention: 0.0,
                history: 0.0,
                test_link: 0.0,
                import_neighbour,
                ..Weights::default()
            },
            ..LocateOptions::default()
        };
        let pos = |w: f64, p: &str| {
            locate_files(issue, &r, &only(w))
                .iter()
                .position(|f| f.path == p)
        };
        // Without the signal the two are tied and the earlier path wins.
        assert!(pos(0.0, "pkg/impl.py") < pos(0.0, "pkg/noise.py"));
        let with = locate_files(issue, &r, &only(1.0));
        let imp = with.iter().find(|f| f.path == "pkg/impl.py").unwrap();
        let noise = with.iter().find(|f| f.path == "pkg/noise.py").unwrap();
        assert!(imp.score > noise.score, "{with:?}");
        assert!(imp.why.iter().any(|w| w == "imported by pkg/api.py"));
    }

    #[test]
    fn chunk_bm25_does_not_dilute_one_matching_definition_in_a_big_file() {
        // big.py holds one definition about the issue among much else; small.py holds the
        // same words in a short file. Whole-file BM25 prefers small.py by far; the best chunk
        // of big.py scores as well as small.py's.
        let mut big =
            String::from("def other(x):\n    # rewrite heaviside piecewise\n    return x\n");
        for i in 0..60 {
            big.push_str(&format!(
                "\ndef unrelated_{i}(a):\n    return alpha_{i} + beta_{i} * gamma_{i}\n"
            ));
        }
        let r = RepoFiles::from_pairs(vec![
            ("pkg/big.py".into(), big),
            (
                "pkg/small.py".into(),
                "def other(x):\n    # rewrite heaviside piecewise\n    return x\n".into(),
            ),
        ]);
        assert_eq!(r.files[0].chunks().lens.len(), 61);
        let issue = "rewrite heaviside piecewise";
        let opts = LocateOptions::default();
        let s = file_signals(issue, &r, &opts, |_| true);
        let (big, small) = (&s.x[0], &s.x[1]);
        assert!(big[0] < 0.5 * small[0], "whole file: {big:?} vs {small:?}");
        assert!(
            (big[10] - small[10]).abs() < 1e-9 && big[10] > 0.0,
            "{big:?} vs {small:?}"
        );
    }

    #[test]
    fn churn_counts_past_commits_per_file() {
        use crate::model::repo::CommitChange;
        let commit = |paths: &[&str]| {
            Arc::new(CommitChange {
                id: git2::Oid::zero(),
                message: "fix".into(),
                paths: paths.iter().map(|p| p.to_string()).collect(),
            })
        };
        let r = RepoFiles::from_pairs(vec![
            ("a.py".into(), String::new()),
            ("b.py".into(), String::new()),
            ("c.py".into(), String::new()),
        ])
        .with_history(vec![
            commit(&["a.py", "b.py"]),
            commit(&["a.py"]),
            commit(&["a.py", "gone.py"]),
        ]);
        let c = churn_scores(&r);
        assert_eq!(c[0], 1.0);
        assert!((c[1] - 2f64.ln() / 4f64.ln()).abs() < 1e-12);
        assert_eq!(c[2], 0.0);
    }

    #[test]
    fn weight_names_name_the_slots_of_their_vectors() {
        let zero = || {
            let mut v = serde_json::to_value(Weights::default()).unwrap();
            for (_, x) in v.as_object_mut().unwrap().iter_mut() {
                *x = serde_json::json!(0.0);
            }
            v
        };
        for (k, name) in Weights::FILE_NAMES.iter().enumerate() {
            let mut v = zero();
            v[*name] = serde_json::json!(1.0);
            let w: Weights = serde_json::from_value(v).unwrap();
            let mut want = [0.0; FILE_SIGNALS];
            want[k] = 1.0;
            assert_eq!(w.file_vector(), want, "{name}");
        }
        for (k, name) in Weights::FUNCTION_NAMES.iter().enumerate() {
            let mut v = zero();
            v[*name] = serde_json::json!(1.0);
            let w: Weights = serde_json::from_value(v).unwrap();
            let mut want = [0.0; FUNCTION_SIGNALS];
            want[k] = 1.0;
            assert_eq!(w.function_vector(), want, "{name}");
        }
    }

    #[test]
    fn module_file_resolves_dotted_names() {
        let r = repo();
        assert_eq!(
            r.module_file("pkg.models.Response")
                .map(|i| r.files[i].path.as_str()),
            Some("pkg/models.py")
        );
        assert_eq!(r.files_defining("Response").len(), 1);
        // Relative to a package: the one file ending with it.
        assert_eq!(
            r.module_file("pkg.models")
                .map(|i| r.files[i].path.as_str()),
            Some("pkg/models.py")
        );
        let nested = RepoFiles::from_pairs(vec![
            ("astropy/io/ascii/rst.py".into(), String::new()),
            ("astropy/io/ascii/core.py".into(), String::new()),
        ]);
        assert_eq!(
            nested
                .module_file("ascii.rst")
                .map(|i| nested.files[i].path.as_str()),
            Some("astropy/io/ascii/rst.py")
        );
        assert_eq!(nested.module_file("io.nothing"), None);
    }
}
