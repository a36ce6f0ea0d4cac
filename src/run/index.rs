//! A per-issue index of the candidate inputs, so a run never holds every patch at once.
//!
//! JSON Lines prediction files are scanned once, line by line; only each record's
//! instance id, agent and byte range are kept. Patch folders (`<agent>/<id>.diff`) keep only
//! the path. A `.json` document (a list or a map) has to be parsed whole, so its candidates
//! are held in memory until their issue runs (such files are small in practice: a run's own
//! predictions). [`Index::take`] reads one issue's candidates back from disk.
//!
//! Agent names follow [`crate::candidates::load`] exactly, including the `name@source`
//! disambiguation when one agent name comes from several files or folders.

use crate::candidates::{self, Problem};
use crate::types::{Candidate, Origin};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where one candidate's bytes are.
#[derive(Debug)]
enum Source {
    /// Bytes `offset..offset+len` of JSONL file `file` (1-based line `line`).
    Line {
        file: usize,
        offset: u64,
        len: usize,
        line: usize,
    },
    /// A `.diff`/`.patch` file.
    Diff(PathBuf),
    /// Parsed from a whole JSON document.
    Held(Box<Candidate>),
}

#[derive(Debug)]
struct Entry {
    agent: String,
    /// The file or folder the agent name comes from (for disambiguation).
    source_key: Arc<Path>,
    source: Source,
}

/// Candidate locations grouped by issue.
#[derive(Debug, Default)]
pub struct Index {
    files: Vec<PathBuf>,
    by_issue: BTreeMap<String, Vec<Entry>>,
    /// Problems with no usable instance id (malformed lines, unreadable files).
    pub problems: Vec<Problem>,
    /// Problems with records of a known issue (reported with that issue).
    pub issue_problems: BTreeMap<String, Vec<Problem>>,
}

/// Parse one JSON line; bytes that are not UTF-8 are replaced (and said so) rather than
/// making the record unusable.
fn parse_line(bytes: &[u8]) -> Result<(Value, bool), String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => Ok((v, false)),
        Err(e) => match std::str::from_utf8(bytes) {
            Ok(_) => Err(format!("malformed JSON ({e}); fix or delete this line")),
            Err(_) => serde_json::from_str::<Value>(&String::from_utf8_lossy(bytes))
                .map(|v| (v, true))
                .map_err(|e| {
                    format!("malformed JSON with non-UTF-8 bytes ({e}); fix or delete this line")
                }),
        },
    }
}

impl Index {
    /// Index every candidate under `paths` (files and folders, as `dei rank` accepts them).
    pub fn build(paths: &[PathBuf]) -> anyhow::Result<Index> {
        let mut index = Index::default();
        for path in paths {
            candidates::require_exists(path)?;
            if path.is_dir() {
                index.add_dir(path)?;
            } else {
                index.add_file(path, None);
            }
        }
        index.disambiguate();
        Ok(index)
    }

    fn add_dir(&mut self, dir: &Path) -> anyhow::Result<()> {
        for path in candidates::files_under(dir)? {
            let agent = candidates::folder_agent(&path, dir);
            self.add_file(&path, agent);
        }
        Ok(())
    }

    fn add_file(&mut self, path: &Path, dir_agent: Option<String>) {
        match candidates::extension(path).as_str() {
            "diff" | "patch" => {
                let id = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("")
                    .to_string();
                let entry = Entry {
                    agent: dir_agent.unwrap_or_else(|| "unknown".into()),
                    source_key: Arc::from(path.parent().unwrap_or(Path::new(""))),
                    source: Source::Diff(path.to_path_buf()),
                };
                self.by_issue.entry(id).or_default().push(entry);
            }
            "jsonl" if !starts_with_bracket(path) => self.add_jsonl(path),
            "jsonl" | "json" => self.add_document(path),
            _ => {}
        }
    }

    /// A whole JSON document: parse it with the ordinary loader and hold its candidates.
    fn add_document(&mut self, path: &Path) {
        match candidates::load(&[path.to_path_buf()]) {
            Ok(loaded) => {
                for c in loaded.candidates {
                    let entry = Entry {
                        agent: c.agent.clone(),
                        source_key: Arc::from(path),
                        source: Source::Held(Box::new(c)),
                    };
                    let id = match &entry.source {
                        Source::Held(c) => c.instance_id.clone(),
                        _ => unreachable!(),
                    };
                    self.by_issue.entry(id).or_default().push(entry);
                }
                self.problems.extend(loaded.problems);
            }
            Err(e) => self.problems.push(Problem {
                origin: Origin {
                    path: path.to_path_buf(),
                    line: None,
                },
                message: e.to_string(),
            }),
        }
    }

    fn add_jsonl(&mut self, path: &Path) {
        let file_problem = |message: String| Problem {
            origin: Origin {
                path: path.to_path_buf(),
                line: None,
            },
            message,
        };
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) => {
                return self
                    .problems
                    .push(file_problem(format!("cannot read predictions file: {e}")))
            }
        };
        let file_idx = self.files.len();
        self.files.push(path.to_path_buf());
        let fallback = candidates::file_agent(path);
        let key: Arc<Path> = Arc::from(path);
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut buf = Vec::new();
        let (mut offset, mut line_no) = (0u64, 0usize);
        let mut bad_lines = Vec::new();
        let mut good = 0usize;
        loop {
            buf.clear();
            let n = match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    self.problems.push(file_problem(format!(
                        "read error after line {line_no}: {e}"
                    )));
                    break;
                }
            };
            line_no += 1;
            let start = offset;
            offset += n as u64;
            let text = trim_ascii(&buf);
            if text.is_empty() {
                continue;
            }
            let origin = Origin {
                path: path.to_path_buf(),
                line: Some(line_no),
            };
            let (value, lossy) = match parse_line(text) {
                Ok(v) => v,
                Err(message) => {
                    bad_lines.push(Problem { origin, message });
                    continue;
                }
            };
            match candidates::record(&value, &fallback, origin.clone()) {
                Ok(Some(c)) => {
                    good += 1;
                    if lossy {
                        self.issue_problems
                            .entry(c.instance_id.clone())
                            .or_default()
                            .push(Problem {
                                origin,
                                message: format!("{}: non-UTF-8 bytes replaced by U+FFFD", c.agent),
                            });
                    }
                    let entry = Entry {
                        agent: c.agent,
                        source_key: key.clone(),
                        source: Source::Line {
                            file: file_idx,
                            offset: start,
                            len: n,
                            line: line_no,
                        },
                    };
                    self.by_issue.entry(c.instance_id).or_default().push(entry);
                }
                Ok(None) => {}
                Err(message) => {
                    let id = value.get("instance_id").and_then(Value::as_str);
                    match id {
                        Some(id) => self
                            .issue_problems
                            .entry(id.to_string())
                            .or_default()
                            .push(Problem { origin, message }),
                        None => bad_lines.push(Problem { origin, message }),
                    }
                }
            }
        }
        // Same rule as the ordinary loader: a file with no usable record is "not predictions".
        if good == 0 && bad_lines.len() > 3 {
            self.problems.push(file_problem(format!(
                "not a predictions file ({} unusable lines); skipped",
                bad_lines.len()
            )));
        } else {
            self.problems.extend(bad_lines);
        }
    }

    /// Apply the loader's `agent@source` renaming when one agent name has several sources.
    fn disambiguate(&mut self) {
        let mut sources: BTreeMap<String, BTreeSet<Arc<Path>>> = BTreeMap::new();
        for e in self.by_issue.values().flatten() {
            sources
                .entry(e.agent.clone())
                .or_default()
                .insert(e.source_key.clone());
        }
        for e in self.by_issue.values_mut().flatten() {
            if sources.get(&e.agent).is_some_and(|s| s.len() > 1) {
                let renamed = candidates::source_agent(&e.source_key);
                e.agent = format!("{}@{renamed}", e.agent);
            }
        }
    }

    /// Every issue id with at least one candidate record, sorted.
    pub fn issue_ids(&self) -> Vec<String> {
        self.by_issue.keys().cloned().collect()
    }

    /// Number of candidates indexed for an issue.
    pub fn count(&self, id: &str) -> usize {
        self.by_issue.get(id).map_or(0, Vec::len)
    }

    /// Total candidates indexed.
    pub fn len(&self) -> usize {
        self.by_issue.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_issue.is_empty()
    }

    /// Read one issue's candidates back (and forget them). Records that can no longer be
    /// read (the file changed under us) become problems.
    pub fn take(&mut self, id: &str) -> (Vec<Candidate>, Vec<Problem>) {
        let entries = self.by_issue.remove(id).unwrap_or_default();
        let problems = self.issue_problems.remove(id).unwrap_or_default();
        self.read_entries(entries, problems)
    }

    /// Like [`Index::take`], but leaves the index as it is (for callers sharing it).
    pub fn read(&self, id: &str) -> (Vec<Candidate>, Vec<Problem>) {
        let mut out = Vec::new();
        let mut problems = self.issue_problems.get(id).cloned().unwrap_or_default();
        let mut open: HashMap<usize, File> = HashMap::new();
        for e in self.by_issue.get(id).map(Vec::as_slice).unwrap_or_default() {
            match self.read_one(e, &mut open) {
                Ok(c) => out.push(c),
                Err(p) => problems.push(p),
            }
        }
        (out, problems)
    }

    fn read_entries(
        &self,
        entries: Vec<Entry>,
        mut problems: Vec<Problem>,
    ) -> (Vec<Candidate>, Vec<Problem>) {
        let mut out = Vec::new();
        let mut open: HashMap<usize, File> = HashMap::new();
        for e in entries {
            if let Source::Held(c) = e.source {
                out.push(Candidate {
                    agent: e.agent,
                    ..*c
                });
                continue;
            }
            match self.read_one(&e, &mut open) {
                Ok(c) => out.push(c),
                Err(p) => problems.push(p),
            }
        }
        (out, problems)
    }

    fn read_one(&self, e: &Entry, open: &mut HashMap<usize, File>) -> Result<Candidate, Problem> {
        match &e.source {
            Source::Held(c) => Ok(Candidate {
                agent: e.agent.clone(),
                ..(**c).clone()
            }),
            Source::Diff(path) => {
                let origin = Origin {
                    path: path.clone(),
                    line: None,
                };
                let bytes = std::fs::read(path).map_err(|err| Problem {
                    origin: origin.clone(),
                    message: format!("cannot read patch: {err}"),
                })?;
                let patch = String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                let instance_id = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("")
                    .to_string();
                Ok(Candidate {
                    instance_id,
                    agent: e.agent.clone(),
                    patch,
                    resolved: None,
                    origin,
                })
            }
            Source::Line {
                file,
                offset,
                len,
                line,
            } => {
                let path = &self.files[*file];
                let origin = Origin {
                    path: path.clone(),
                    line: Some(*line),
                };
                let fail = |m: String| Problem {
                    origin: origin.clone(),
                    message: m,
                };
                let f = match open.entry(*file) {
                    std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(File::open(path).map_err(|e| fail(format!("cannot reopen: {e}")))?)
                    }
                };
                let mut buf = vec![0u8; *len];
                f.seek(SeekFrom::Start(*offset))
                    .and_then(|_| f.read_exact(&mut buf))
                    .map_err(|e| {
                        fail(format!(
                            "cannot read record back ({e}); was the file changed during the run?"
                        ))
                    })?;
                let (value, _) = parse_line(trim_ascii(&buf))
                    .map_err(|m| fail(format!("record changed during the run: {m}")))?;
                let fallback = candidates::file_agent(path);
                match candidates::record(&value, &fallback, origin.clone()) {
                    Ok(Some(c)) => Ok(Candidate {
                        agent: e.agent.clone(),
                        ..c
                    }),
                    Ok(None) => Err(fail("record is not a prediction".into())),
                    Err(m) => Err(fail(m)),
                }
            }
        }
    }
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

fn starts_with_bracket(path: &Path) -> bool {
    let mut head = [0u8; 256];
    let n = File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'[')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &[u8]) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// The index yields the same candidates (agents, patches, resolved) as the ordinary loader.
    #[test]
    fn matches_the_ordinary_loader() {
        let dir = tempfile::tempdir().unwrap();
        let rec = |id: &str, m: &str, p: &str| {
            format!("{{\"instance_id\":\"{id}\",\"model_name_or_path\":\"{m}\",\"model_patch\":\"{p}\",\"resolved\":true}}\n")
        };
        write(
            dir.path(),
            "run-1/all_preds.jsonl",
            (rec("i-1", "gpt", "a") + &rec("i-2", "gpt", "b")).as_bytes(),
        );
        write(
            dir.path(),
            "run-2/all_preds.jsonl",
            (rec("i-1", "gpt", "c") + "garbage\n").as_bytes(),
        );
        write(
            dir.path(),
            "doc.json",
            br#"[{"instance_id":"i-2","model_patch":"d"}]"#,
        );
        write(dir.path(), "agentX/i-1.diff", b"e");
        let paths = vec![dir.path().to_path_buf()];
        let loaded = candidates::load(&paths).unwrap();
        let mut index = Index::build(&paths).unwrap();
        assert_eq!(index.len(), loaded.candidates.len());
        assert_eq!(index.problems.len(), loaded.problems.len());
        for id in ["i-1", "i-2"] {
            let mut want: Vec<(String, String, Option<bool>)> = loaded
                .for_issue(id)
                .into_iter()
                .map(|c| (c.agent, c.patch, c.resolved))
                .collect();
            let (got, problems) = index.take(id);
            assert!(problems.is_empty());
            let mut got: Vec<_> = got
                .into_iter()
                .map(|c| (c.agent, c.patch, c.resolved))
                .collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "{id}");
        }
        assert!(index.is_empty());
    }

    #[test]
    fn non_utf8_and_bad_records_are_problems_not_failures() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = b"{\"instance_id\":\"i-1\",\"model_name_or_path\":\"a\",\"model_patch\":\"x\xff\xfey\"}\n".to_vec();
        text.extend_from_slice(b"{\"instance_id\":\"i-1\",\"model_name_or_path\":\"b\",\"model_patch\":7}\n{\"model_patch\":\"\"}\n{torn");
        let p = write(dir.path(), "p.jsonl", &text);
        let mut index = Index::build(&[p]).unwrap();
        assert_eq!(index.count("i-1"), 1);
        assert_eq!(index.problems.len(), 2, "{:?}", index.problems);
        let (cands, problems) = index.take("i-1");
        assert_eq!(cands[0].patch, "x\u{fffd}\u{fffd}y");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p.message.contains("must be a string")));
    }
}
