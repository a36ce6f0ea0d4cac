//! A per-issue index of the candidate inputs, so a run never holds every patch at once.
//!
//! JSON Lines prediction files are scanned once, line by line; only each record's
//! instance id, agent and byte range are kept. Patch folders (`<agent>/<id>.diff`) keep only
//! the path. A `.json` document (a list or a map) has to be parsed whole, so its candidates
//! are held in memory until their issue runs (such files are small in practice: a run's own
//! predictions). [`Index::take`] reads one issue's candidates back from disk.
//!
//! It is the candidate loader ([`crate::candidates`]) kept per issue: the same input files
//! ([`candidates::input_files`], [`candidates::file_kind`]), the same JSON Lines scan
//! ([`candidates::scan_jsonl`]), the same patch-file and document readers, the same naming
//! rule and `--agent-name` overrides, so the same candidates and the same problems with the
//! same text (a line that is not UTF-8 or not JSON is dropped, and reported with its issue
//! when its instance id can be made out).

use crate::candidates::{self, FileKind, Named, Naming, Problem};
use crate::model::{Candidate, Origin};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
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
    /// The agent's name, once [`Index::build_with`] has settled the names.
    agent: String,
    /// The file or folder the agent is named after.
    source_key: Arc<Path>,
    /// How the naming rule names it.
    named: Named,
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

impl Index {
    /// Index every candidate under `paths` (files and folders, as `dei rank` accepts them).
    pub fn build(paths: &[PathBuf]) -> anyhow::Result<Index> {
        Index::build_with(paths, &Naming::default())
    }

    /// [`Index::build`] with `--agent-name` rules; a rule that matches nothing is an error.
    pub fn build_with(paths: &[PathBuf], naming: &Naming) -> anyhow::Result<Index> {
        let mut index = Index::default();
        for file in candidates::input_files(paths)? {
            index.add_file(&file);
        }
        index.name_agents(naming)?;
        Ok(index)
    }

    fn push(&mut self, id: String, source_key: Arc<Path>, named: Named, source: Source) {
        self.by_issue.entry(id).or_default().push(Entry {
            agent: String::new(),
            source_key,
            named,
            source,
        });
    }

    fn add_file(&mut self, path: &Path) {
        match candidates::file_kind(path) {
            Some(FileKind::Patch) => {
                let id = candidates::patch_instance_id(path);
                let key = Arc::from(candidates::patch_source(path));
                self.push(id, key, Named::Source, Source::Diff(path.to_path_buf()));
            }
            Some(FileKind::Lines) => self.add_jsonl(path),
            Some(FileKind::Document) => self.add_document(path),
            None => {}
        }
    }

    /// A whole JSON document: parse it with the ordinary loader and hold its candidates.
    fn add_document(&mut self, path: &Path) {
        let (found, problems) = candidates::read_predictions(path);
        let key: Arc<Path> = Arc::from(path);
        for (c, named) in found {
            self.push(
                c.instance_id.clone(),
                key.clone(),
                named,
                Source::Held(Box::new(c)),
            );
        }
        self.problems.extend(problems);
    }

    /// A JSON Lines file, scanned once by the loader's scan: only where each record is stays.
    fn add_jsonl(&mut self, path: &Path) {
        let file = self.files.len();
        self.files.push(path.to_path_buf());
        let key: Arc<Path> = Arc::from(path);
        let scanned = candidates::scan_jsonl(path, |p, at| {
            let source = Source::Line {
                file,
                offset: at.offset,
                len: at.len,
                line: at.line,
            };
            (p.candidate.instance_id, source)
        });
        for ((id, source), named) in scanned.records {
            self.push(id, key.clone(), named, source);
        }
        for (problem, id) in scanned.problems {
            match id {
                Some(id) => self.issue_problems.entry(id).or_default().push(problem),
                None => self.problems.push(problem),
            }
        }
    }

    /// Settle every agent's name, as [`candidates::load_with`] does.
    fn name_agents(&mut self, naming: &Naming) -> anyhow::Result<()> {
        let keys: BTreeSet<(Arc<Path>, Named)> = self
            .by_issue
            .values()
            .flatten()
            .map(|e| (e.source_key.clone(), e.named.clone()))
            .collect();
        let (names, used) = candidates::resolve_names(&keys, naming);
        for e in self.by_issue.values_mut().flatten() {
            // The name is moved out and back to look it up without a copy.
            let key = (
                e.source_key.clone(),
                std::mem::replace(&mut e.named, Named::Source),
            );
            e.agent = names[&key].clone();
            e.named = key.1;
        }
        if naming.is_empty() {
            return Ok(());
        }
        let agents: BTreeSet<&String> = names.values().collect();
        let agents: Vec<String> = agents.into_iter().cloned().collect();
        naming.check_used(&used, &agents)
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
            Source::Diff(path) => candidates::read_patch(path).map(|c| Candidate {
                agent: e.agent.clone(),
                ..c
            }),
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
                let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
                let value = candidates::decode_line(line)
                    .map_err(|m| fail(format!("record changed during the run: {m}")))?;
                match candidates::record(&value, origin.clone()) {
                    Ok(p) => Ok(Candidate {
                        agent: e.agent.clone(),
                        ..p.candidate
                    }),
                    Err(m) => Err(fail(m)),
                }
            }
        }
    }
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
    fn bad_lines_are_dropped_as_the_loader_drops_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = b"{\"instance_id\":\"i-1\",\"model_name_or_path\":\"a\",\"model_patch\":\"x\xff\xfey\"}\n".to_vec();
        text.extend_from_slice(b"{\"instance_id\":\"i-1\",\"model_name_or_path\":\"b\",\"model_patch\":7}\n{\"model_patch\":\"\"}\n");
        text.extend_from_slice(
            b"{\"instance_id\":\"i-1\",\"model_name_or_path\":\"c\",\"model_patch\":\"ok\"}\n{torn",
        );
        let p = write(dir.path(), "p.jsonl", &text);
        let loaded = candidates::load(std::slice::from_ref(&p)).unwrap();
        let mut index = Index::build(std::slice::from_ref(&p)).unwrap();
        // The non-UTF-8 line (1) is dropped, not repaired: only line 4 is a candidate.
        assert_eq!(index.count("i-1"), 1);
        let (cands, issue_problems) = index.take("i-1");
        assert_eq!(
            (cands[0].agent.as_str(), cands[0].patch.as_str()),
            ("p", "ok")
        );
        assert_eq!(
            loaded
                .candidates
                .iter()
                .map(|c| (&c.agent, &c.patch))
                .collect::<Vec<_>>(),
            [(&cands[0].agent, &cands[0].patch)]
        );
        // The same problems with the same text: those naming an issue go with it.
        let mut from_index: Vec<String> = index
            .problems
            .iter()
            .chain(&issue_problems)
            .map(ToString::to_string)
            .collect();
        let mut from_loader: Vec<String> =
            loaded.problems.iter().map(ToString::to_string).collect();
        from_index.sort();
        from_loader.sort();
        assert_eq!(from_index, from_loader);
        assert_eq!(from_loader.len(), 4, "{from_loader:?}");
        assert!(
            issue_problems.iter().any(|p| p
                .to_string()
                .ends_with("p.jsonl:1: not valid UTF-8 at byte 63; fix or delete this line")),
            "{issue_problems:?}"
        );
        assert!(issue_problems
            .iter()
            .any(|p| p.message.contains("must be a string")));
    }

    /// A file with no usable record is "not a predictions file" for the index as for the
    /// loader, even when some of its lines name an issue: it is judged whole, not line by line.
    #[test]
    fn a_file_of_bad_lines_is_one_problem_as_in_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let bad = "{\"instance_id\":\"i-1\",\"model_patch\":7}\n{\"instance_id\":\"i-2\"}\nnot json\n{torn\n";
        let p = write(dir.path(), "bad.jsonl", bad.as_bytes());
        let loaded = candidates::load(std::slice::from_ref(&p)).unwrap();
        let index = Index::build(std::slice::from_ref(&p)).unwrap();
        let show = |ps: &[Problem]| ps.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(loaded.problems.len(), 1, "{:?}", show(&loaded.problems));
        assert!(
            index.issue_problems.is_empty(),
            "{:?}",
            index.issue_problems
        );
        assert_eq!(show(&index.problems), show(&loaded.problems));
        assert!(index.problems[0]
            .message
            .starts_with("not a predictions file (4 unusable lines; line 1:"));
    }

    /// Names and `--agent-name` overrides are the loader's.
    #[test]
    fn names_match_the_loader_with_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let rec = |id: &str, m: &str| {
            format!("{{\"instance_id\":\"{id}\",\"model_name_or_path\":\"{m}\",\"model_patch\":\"p\"}}\n")
        };
        write(
            dir.path(),
            "runs/r-1/all_preds.jsonl",
            rec("i-1", "gpt").as_bytes(),
        );
        write(
            dir.path(),
            "runs/r-2/all_preds.jsonl",
            rec("i-1", "gpt").as_bytes(),
        );
        write(
            dir.path(),
            "merged.jsonl",
            (rec("i-1", "x") + &rec("i-2", "y")).as_bytes(),
        );
        write(dir.path(), "dir-agent/i-2.diff", b"e");
        let paths = vec![dir.path().to_path_buf()];
        let naming = Naming::parse(&["r-2=second", "y=why"]).unwrap();
        let loaded = candidates::load_with(&paths, &naming).unwrap();
        let mut index = Index::build_with(&paths, &naming).unwrap();
        let mut want: Vec<(String, String)> = loaded
            .candidates
            .iter()
            .map(|c| (c.instance_id.clone(), c.agent.clone()))
            .collect();
        let mut got = Vec::new();
        for id in index.issue_ids() {
            got.extend(
                index
                    .take(&id)
                    .0
                    .into_iter()
                    .map(|c| (c.instance_id, c.agent)),
            );
        }
        want.sort();
        got.sort();
        assert_eq!(got, want);
        let agents: BTreeSet<&str> = want.iter().map(|(_, a)| a.as_str()).collect();
        assert_eq!(
            agents.into_iter().collect::<Vec<_>>(),
            ["dir-agent", "r-1", "second", "why", "x"]
        );
        let unknown = Naming::parse(&["zzz=q"]).unwrap();
        assert!(Index::build_with(&paths, &unknown).is_err());
    }
}
