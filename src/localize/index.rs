//! The file index of localization: a repository's Python files at one commit ([`FileIndex`]),
//! with their terms (whole file and by definition chunk), the names they define, the modules
//! they import, and an index of their lines for code quoted in an issue. Contents and terms
//! come from process-wide caches ([`super::cache`]), so many issues of one repository read and
//! tokenize each unchanged file once.

use super::cache::{blob_cache, term_cache};
use super::issue::MIN_QUOTED_LINE;
use super::tokens::tokenize;
use crate::model::paths::{is_auxiliary, is_python};
use crate::model::repo::{CommitChange, Snapshot};
use crate::syntax::python;
use std::collections::HashMap;
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

/// The Python source files of a [`Snapshot`] (one commit's tree), indexed for localization
/// (terms, definitions, lines, stems, history), shareable across threads.
#[derive(Debug, Default)]
pub struct FileIndex {
    pub files: Vec<RepoFile>,
    pub(super) by_path: HashMap<String, usize>,
    defs: OnceLock<HashMap<String, Vec<usize>>>,
    /// Trimmed line hash → files holding it (lines of [`MIN_QUOTED_LINE`]+ bytes; lists stop growing past
    /// [`MAX_LINE_FILES`] + 1).
    lines: OnceLock<HashMap<u64, Vec<u32>>>,
    /// File stem → non-auxiliary files with that stem (for [`tested_files`]).
    stems: OnceLock<HashMap<String, Vec<usize>>>,
    /// Commits before the snapshot (newest first), when loaded with [`FileIndex::with_history`].
    pub(super) history: Vec<Arc<CommitChange>>,
    /// Memo of [`FileIndex::files_containing`]: candidates of one issue look for the same names.
    containing: Mutex<HashMap<String, Arc<[usize]>>>,
}

/// Largest file read into a [`FileIndex`] (bigger ones are generated data, not code to read).
pub const MAX_FILE_BYTES: usize = 1 << 20;

impl FileIndex {
    /// Every `.py` file of the snapshot (up to [`MAX_FILE_BYTES`] each).
    ///
    /// Contents come from a process-wide cache keyed by blob id (see [`BLOB_CACHE_BYTES`](super::cache::BLOB_CACHE_BYTES)), so
    /// ranking many issues of one repository reads each unchanged file once, not once per issue.
    pub fn from_snapshot(snap: &Snapshot) -> anyhow::Result<FileIndex> {
        let cache = blob_cache();
        let blobs: Vec<(String, git2::Oid)> = snap
            .list_blobs()?
            .into_iter()
            .filter(|(p, _)| is_python(p))
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
        Ok(FileIndex::from_files(files))
    }

    fn from_files(files: Vec<RepoFile>) -> FileIndex {
        let by_path = files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.clone(), i))
            .collect();
        FileIndex {
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
    pub fn from_pairs(pairs: Vec<(String, String)>) -> FileIndex {
        FileIndex::from_files(
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
    pub fn with_history(mut self, history: Vec<Arc<CommitChange>>) -> FileIndex {
        self.history = history;
        self
    }

    /// Trimmed-line hash → files holding that line (built on first use).
    pub(super) fn line_index(&self) -> &HashMap<u64, Vec<u32>> {
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

/// A quoted line held by more files than this is boilerplate, not a location.
pub(super) const MAX_LINE_FILES: usize = 5;

/// Hash of a trimmed source line, for matching code quoted in an issue.
pub(super) fn line_key(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    line.trim().hash(&mut h);
    h.finish()
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

/// The source files a test file tests, by name: `pkg/tests/test_numbers.py` → a `numbers.py`,
/// `tests/test_domain_std.py` → a `domain_std.py`, else a `std.py` under a `domain…` folder.
/// Among several, those sharing the most leading folders with the test win; more than three
/// equally good ones say nothing and give none.
pub fn tested_files<'a>(test: &str, repo: &'a FileIndex) -> Vec<&'a str> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_link_to_the_files_they_test() {
        let r = FileIndex::from_pairs(
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
    fn imports_resolve_absolute_relative_and_local_imports() {
        let r = FileIndex::from_pairs(vec![
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
    fn module_file_resolves_dotted_names() {
        let r = FileIndex::from_pairs(vec![
            (
                "pkg/models.py".into(),
                "class Response:\n    def json(self):\n        return 1\n".into(),
            ),
            ("pkg/utils.py".into(), "def helper():\n    pass\n".into()),
        ]);
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
        let nested = FileIndex::from_pairs(vec![
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
