//! The instances × agents table every metric reads: who resolved what, and the committee's
//! score of each candidate. Built from candidates, label files and an optional selection,
//! with every gap in the inputs counted and said.

use super::labels::LabelFile;
use super::orders::natural_cmp;
use super::selection::Selection;
use crate::candidates::Loaded;
use crate::model::Candidate;
use crate::rank::health::Basis;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Whether an agent produced a candidate for an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Present,
    /// An empty patch (counts as unresolved).
    Empty,
    /// No candidate at all (counts as unresolved).
    Missing,
    /// The agent comes from labels only; nothing is known about its candidates.
    Unknown,
}

/// Which instances the runs are scored over (`dei eval --coverage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// Over the instances every partial run covers (see [`PARTIAL`]); every instance when no
    /// run is partial.
    #[default]
    Restrict,
    /// Every instance: a run with no row for one submitted nothing there.
    All,
}

impl std::str::FromStr for Coverage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "restrict" => Ok(Coverage::Restrict),
            "all" => Ok(Coverage::All),
            other => Err(format!("unknown coverage `{other}` (use restrict or all)")),
        }
    }
}

/// A run with rows (candidates or labels) for fewer than this share of the instances was
/// graded on part of the benchmark (another benchmark's overlap, a vendor's sample): counting
/// the rest as failures would score it on issues it was never given. A run missing a few
/// rows is one that submitted nothing there, which the harness counts as unresolved.
pub const PARTIAL: f64 = 0.5;

/// A baseline selection when no committee scores are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// A uniformly random pick among all k slots: n@k equals Average@k.
    Random,
    /// A uniformly random pick among the non-empty candidates.
    RandomNonEmpty,
}

impl std::str::FromStr for Baseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "random" => Ok(Baseline::Random),
            "random-nonempty" | "nonempty" => Ok(Baseline::RandomNonEmpty),
            other => Err(format!(
                "unknown baseline `{other}`; use random or random-nonempty"
            )),
        }
    }
}

/// What went into the table and what was missing, per agent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AgentInputs {
    pub name: String,
    /// The agent's name in the candidates, when it differs from `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_name: Option<String>,
    /// Where its labels came from.
    pub label_sources: Vec<String>,
    pub candidates: usize,
    pub empty: usize,
    /// Instances of the universe without a candidate (only for agents with candidates).
    pub missing: usize,
    /// Non-empty candidates without any label (counted unresolved).
    pub unlabeled: usize,
    /// Labels saying "resolved" where the agent has no (or an empty) candidate; counted unresolved.
    pub resolved_without_candidate: usize,
    /// Label files disagreeing with each other or with a row's `resolved` field (the first file wins).
    pub label_conflicts: usize,
    /// Instances with a committee score.
    pub scored: usize,
}

/// The table, and everything worth saying about how it was built.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub instances: Vec<String>,
    pub agents: Vec<String>,
    /// `resolved[i][a]`.
    pub resolved: Vec<Vec<bool>>,
    /// `score[i][a]`: the committee's score, `None` when unscored.
    pub score: Vec<Vec<Option<f64>>>,
    pub presence: Vec<Vec<Presence>>,
    pub inputs: Vec<AgentInputs>,
    /// Where the instance universe came from.
    pub universe_source: String,
    /// Human-readable notes about the inputs (ignored rows, unknown agents, ...).
    pub notes: Vec<String>,
    /// Whether a selection (or baseline) gives scores.
    pub has_selection: bool,
    pub selection_source: Option<String>,
    /// `no_pick[i]`: the committee ranked instance `i` but scored no candidate, so it
    /// picked nothing (n@k counts it unresolved). Empty when no instance is so.
    pub no_pick: Vec<bool>,
    /// Only each instance's top pick over all agents is known (a run summary): n@k holds
    /// for the whole committee only.
    pub top_only: bool,
    /// `basis[i]`: what the ranking's pick for instance `i` rests on (`--exec`); empty when
    /// the selection says nothing of it, or the table is not the ranking's whole committee
    /// (`--agents`: the pick among fewer agents is another candidate).
    pub basis: Vec<Option<Basis>>,
}

impl Table {
    /// Whether the committee picked nothing for instance `i`.
    pub fn no_pick(&self, i: usize) -> bool {
        self.no_pick.get(i).copied().unwrap_or(false)
    }

    /// A table from plain rows (for tests and programmatic use).
    pub fn from_rows(
        instances: Vec<String>,
        agents: Vec<String>,
        resolved: Vec<Vec<bool>>,
        score: Option<Vec<Vec<Option<f64>>>>,
    ) -> Table {
        let n = instances.len();
        let k = agents.len();
        let has_selection = score.is_some();
        Table {
            presence: vec![vec![Presence::Unknown; k]; n],
            score: score.unwrap_or_else(|| vec![vec![None; k]; n]),
            inputs: agents
                .iter()
                .map(|a| AgentInputs {
                    name: a.clone(),
                    ..AgentInputs::default()
                })
                .collect(),
            instances,
            agents,
            resolved,
            universe_source: "rows".into(),
            notes: Vec::new(),
            has_selection,
            selection_source: None,
            no_pick: Vec::new(),
            top_only: false,
            basis: Vec::new(),
        }
    }

    /// Columns `cols` of the table, in that order (for a sub-committee).
    pub fn select_agents(&self, cols: &[usize]) -> Table {
        let pick = |row: &Vec<bool>| cols.iter().map(|&c| row[c]).collect::<Vec<_>>();
        Table {
            instances: self.instances.clone(),
            agents: cols.iter().map(|&c| self.agents[c].clone()).collect(),
            resolved: self.resolved.iter().map(pick).collect(),
            score: self
                .score
                .iter()
                .map(|r| cols.iter().map(|&c| r[c]).collect())
                .collect(),
            presence: self
                .presence
                .iter()
                .map(|r| cols.iter().map(|&c| r[c]).collect())
                .collect(),
            inputs: cols.iter().map(|&c| self.inputs[c].clone()).collect(),
            universe_source: self.universe_source.clone(),
            notes: self.notes.clone(),
            has_selection: self.has_selection,
            selection_source: self.selection_source.clone(),
            no_pick: self.no_pick.clone(),
            top_only: self.top_only,
            // Fewer agents pick other candidates: the ranking's basis is not theirs.
            basis: if cols.len() == self.agents.len() {
                self.basis.clone()
            } else {
                Vec::new()
            },
        }
    }
}

/// Everything the table is built from.
pub struct Sources<'a> {
    pub candidates: &'a Loaded,
    pub labels: &'a [LabelFile],
    /// The instance universe (`--tasks`), when given.
    pub universe: Option<(Vec<String>, String)>,
    /// Agents to keep, in order (`--agents`); all agents in natural order when `None`.
    pub agents: Option<&'a [String]>,
    pub selection: Option<&'a Selection>,
    pub baseline: Option<Baseline>,
    /// Keep only instances with at least one committee score.
    pub scored_only: bool,
    /// Keep only these instances (`--instance-ids FILE`), each of which must be in the
    /// universe.
    pub only: Option<(Vec<crate::model::task::IdLine>, PathBuf)>,
    pub coverage: Coverage,
}

/// One agent while building: names it answers to, where its data comes from.
#[derive(Default)]
struct Agent {
    name: String,
    candidate_name: Option<String>,
    aliases: BTreeSet<String>,
    /// Folders its candidates were read from, when those files hold only this agent.
    folders: BTreeSet<PathBuf>,
    /// (label file index, agent index in that file)
    labels: Vec<(usize, usize)>,
}

struct Registry {
    agents: Vec<Agent>,
}

impl Registry {
    /// Find an agent by its name or an alias. `Err` lists the candidates when ambiguous.
    fn find(&self, name: &str) -> Result<Option<usize>, Vec<String>> {
        if let Some(i) = self.agents.iter().position(|a| a.name == name) {
            return Ok(Some(i));
        }
        let hits: Vec<usize> = (0..self.agents.len())
            .filter(|&i| self.agents[i].aliases.contains(name))
            .collect();
        match hits.len() {
            0 => Ok(None),
            1 => Ok(Some(hits[0])),
            _ => Err(hits.iter().map(|&i| self.agents[i].name.clone()).collect()),
        }
    }
}

/// Build the table from inputs: the agents (from candidates and label files), which of them
/// in which order, the instance universe, each (instance, agent)'s candidate, its label and
/// presence, and the committee's scores (or a baseline's).
pub fn build(src: &Sources) -> anyhow::Result<Table> {
    let mut notes = Vec::new();
    let mut reg = Registry::from_candidates(src.candidates);
    reg.add_label_agents(src.labels)?;
    if reg.agents.is_empty() {
        anyhow::bail!(
            "no agents found: pass candidates (with `resolved` fields) and/or --labels FILE"
        );
    }
    let chosen = reg.choose(src.agents)?;
    // Every agent a ranking picks from is in the table (no --agents, or all of them listed).
    let all_agents = chosen.len() == reg.agents.len();
    let (instances, universe_source) = universe(src)?;
    let (instances, universe_source) =
        covered(src, &reg, &chosen, instances, universe_source, &mut notes)?;
    let universe: HashMap<&str, usize> = instances
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let n = instances.len();
    let chosen = present(src, &reg, chosen, &universe, &universe_source, &mut notes)?;
    let cands = Grid::of(src, &reg, &chosen, (n, &universe), &mut notes);
    let k = chosen.len();
    let mut resolved = vec![vec![false; k]; n];
    let mut presence = vec![vec![Presence::Unknown; k]; n];
    let mut inputs: Vec<AgentInputs> = Vec::with_capacity(k);
    for (col, (idx, display)) in chosen.iter().enumerate() {
        let c = column(src, &reg.agents[*idx], display, col, &instances, &cands)?;
        for row in 0..n {
            presence[row][col] = c.presence[row];
            resolved[row][col] = c.resolved[row];
        }
        inputs.push(c.info);
    }
    let scored = match (src.selection, src.baseline) {
        (Some(sel), _) => selection_scores(
            sel,
            (&reg, &chosen, all_agents),
            (&instances, &universe, &universe_source),
            &mut notes,
        )?,
        (None, Some(b)) => baseline_scores(b, &presence),
        (None, None) => Scores {
            score: vec![vec![None; k]; n],
            ..Scores::default()
        },
    };
    for (col, info) in inputs.iter_mut().enumerate() {
        info.scored = (0..n).filter(|&r| scored.score[r][col].is_some()).count();
    }
    Ok(Table {
        instances,
        agents: chosen.into_iter().map(|(_, d)| d).collect(),
        resolved,
        score: scored.score,
        presence,
        inputs,
        universe_source,
        notes,
        has_selection: scored.has_selection,
        selection_source: scored.selection_source,
        no_pick: scored.no_pick,
        top_only: scored.top_only,
        basis: scored.basis,
    })
}

impl Registry {
    /// Agents from candidates, with the names people know them by: an `@suffix`, the folder of
    /// a generic file name (`all_preds.jsonl`), the stem of any other file name, when the file
    /// holds this agent alone.
    fn from_candidates(loaded: &Loaded) -> Registry {
        let mut reg = Registry { agents: Vec::new() };
        let mut by_origin: BTreeMap<&Path, BTreeSet<&str>> = BTreeMap::new();
        for c in &loaded.candidates {
            by_origin
                .entry(c.origin.path.as_path())
                .or_default()
                .insert(c.agent.as_str());
        }
        for c in &loaded.candidates {
            let idx = match reg.agents.iter().position(|a| a.name == c.agent) {
                Some(i) => i,
                None => {
                    reg.agents.push(Agent {
                        name: c.agent.clone(),
                        ..Agent::default()
                    });
                    reg.agents.len() - 1
                }
            };
            let a = &mut reg.agents[idx];
            if let Some((_, suffix)) = c.agent.rsplit_once('@') {
                a.aliases.insert(suffix.to_string());
            }
            let origin = c.origin.path.as_path();
            if by_origin.get(origin).is_some_and(|s| s.len() == 1) {
                if let Some(parent) = origin.parent() {
                    a.folders.insert(parent.to_path_buf());
                    if crate::model::paths::has_generic_stem(origin) {
                        if let Some(f) = parent.file_name().and_then(|f| f.to_str()) {
                            a.aliases.insert(f.to_string());
                        }
                    }
                }
                if let Some(stem) = origin.file_stem().and_then(|s| s.to_str()) {
                    if !crate::model::paths::has_generic_stem(origin) {
                        a.aliases.insert(stem.to_string());
                    }
                }
            }
        }
        reg
    }

    /// Agents from label files: each label agent joins the candidate agent it names (or, for
    /// a results.json beside one agent's predictions, that agent), else becomes an agent.
    fn add_label_agents(&mut self, labels: &[LabelFile]) -> anyhow::Result<()> {
        for (fi, file) in labels.iter().enumerate() {
            for (ai, (name, _)) in file.agents.iter().enumerate() {
                let mut hit = None;
                if file.agent_from_path && file.agents.len() == 1 {
                    // A results.json beside a predictions file labels that file's agent.
                    let folder = file.path.parent().unwrap_or(Path::new(""));
                    let same: Vec<usize> = (0..self.agents.len())
                        .filter(|&i| self.agents[i].folders.contains(folder))
                        .collect();
                    if same.len() == 1 {
                        hit = Some(same[0]);
                    }
                }
                if hit.is_none() {
                    hit = self.find(name).map_err(|many| {
                        anyhow::anyhow!(
                            "{}: label agent `{name}` matches several candidate agents ({})\n  hint: name it explicitly with --labels AGENT={}",
                            file.path.display(),
                            many.join(", "),
                            file.path.display()
                        )
                    })?;
                }
                let idx = match hit {
                    Some(i) => i,
                    None => {
                        self.agents.push(Agent {
                            name: name.clone(),
                            ..Agent::default()
                        });
                        self.agents.len() - 1
                    }
                };
                self.agents[idx].aliases.insert(name.clone());
                self.agents[idx].labels.push((fi, ai));
            }
        }
        Ok(())
    }

    /// Which agents, in which order, under which display names: `--agents` as given, else all
    /// in natural order. Notes the candidate name of an agent chosen by an alias.
    fn choose(&mut self, list: Option<&[String]>) -> anyhow::Result<Vec<(usize, String)>> {
        let mut chosen: Vec<(usize, String)> = Vec::new();
        match list {
            Some(list) => {
                for name in list {
                    let idx = self
                        .find(name)
                        .map_err(|many| {
                            anyhow::anyhow!(
                                "--agents: `{name}` matches several agents: {}; use the full name",
                                many.join(", ")
                            )
                        })?
                        .ok_or_else(|| {
                            let mut known: Vec<&str> =
                                self.agents.iter().map(|a| a.name.as_str()).collect();
                            known.sort_by(|a, b| natural_cmp(a, b));
                            anyhow::anyhow!(
                                "--agents: unknown agent `{name}`\n  hint: known agents: {}",
                                known.join(", ")
                            )
                        })?;
                    if chosen.iter().any(|(i, _)| *i == idx) {
                        anyhow::bail!("--agents: `{name}` is listed twice");
                    }
                    chosen.push((idx, name.clone()));
                }
            }
            None => {
                let mut all: Vec<usize> = (0..self.agents.len()).collect();
                all.sort_by(|&a, &b| natural_cmp(&self.agents[a].name, &self.agents[b].name));
                chosen = all
                    .into_iter()
                    .map(|i| (i, self.agents[i].name.clone()))
                    .collect();
            }
        }
        for (idx, display) in &chosen {
            let a = &mut self.agents[*idx];
            if *display != a.name {
                a.candidate_name = Some(a.name.clone());
            }
        }
        Ok(chosen)
    }
}

/// The instance universe and where it came from: `--tasks`, else every instance the
/// candidates and labels name; with `--scored-only`, only the ranked ones.
fn universe(src: &Sources) -> anyhow::Result<(Vec<String>, String)> {
    let (mut instances, mut universe_source) = match &src.universe {
        Some((ids, source)) => (ids.clone(), source.clone()),
        None => {
            let mut set: BTreeSet<String> = BTreeSet::new();
            for c in &src.candidates.candidates {
                set.insert(c.instance_id.clone());
            }
            for f in src.labels {
                set.extend(f.instances.iter().cloned());
                for (_, l) in &f.agents {
                    set.extend(l.resolved.iter().cloned());
                    set.extend(l.labeled.iter().flatten().cloned());
                }
            }
            let mut v: Vec<String> = set.into_iter().collect();
            v.sort_by(|a, b| natural_cmp(a, b));
            (
                v,
                "every instance named by the candidates and labels (pass --tasks to fix it)"
                    .to_string(),
            )
        }
    };
    if let Some((list, path)) = &src.only {
        let have: BTreeSet<&str> = instances.iter().map(String::as_str).collect();
        let ids = crate::model::task::known_ids(
            list.clone(),
            path,
            &|id| have.contains(id),
            &universe_source,
        )?;
        instances = ids;
        universe_source = format!(
            "{universe_source}; only the {} instances listed in {}",
            instances.len(),
            path.display()
        );
    }
    if src.scored_only {
        match src.selection {
            Some(sel) => {
                let scored = sel.ranked_instances();
                let before = instances.len();
                instances.retain(|i| scored.contains(i.as_str()));
                if instances.is_empty() {
                    return Err(ranks_none(sel, before, &universe_source));
                }
                universe_source = format!(
                    "{universe_source}; only the {} of {before} instances with committee scores",
                    instances.len()
                );
            }
            None => anyhow::bail!("--scored-only needs a selection (--scores FILE)"),
        }
    }
    if instances.is_empty() {
        anyhow::bail!("no instances to evaluate (the universe is empty)");
    }
    Ok((instances, universe_source))
}

/// The instances of the universe each chosen agent has a row for: a candidate, or a label
/// from a file that lists what it graded (a list of resolved ids alone covers everything).
fn rows_of(src: &Sources, reg: &Registry, idx: usize, instances: &[String]) -> BTreeSet<String> {
    let a = &reg.agents[idx];
    let all: BTreeSet<&str> = instances.iter().map(String::as_str).collect();
    let mut rows: BTreeSet<String> = src
        .candidates
        .candidates
        .iter()
        .filter(|c| c.agent == a.name && all.contains(c.instance_id.as_str()))
        .map(|c| c.instance_id.clone())
        .collect();
    for &(file, agent) in &a.labels {
        match &src.labels[file].agents[agent].1.labeled {
            None => return instances.iter().cloned().collect(),
            Some(labeled) => {
                rows.extend(labeled.iter().filter(|i| all.contains(i.as_str())).cloned())
            }
        }
    }
    rows
}

/// With [`Coverage::Restrict`], the universe less what a partial run (rows for under
/// [`PARTIAL`] of it) does not cover; the note names each such run and what it covers.
fn covered(
    src: &Sources,
    reg: &Registry,
    chosen: &[(usize, String)],
    instances: Vec<String>,
    universe_source: String,
    notes: &mut Vec<String>,
) -> anyhow::Result<(Vec<String>, String)> {
    let n = instances.len();
    let partial: Vec<(&str, BTreeSet<String>)> = chosen
        .iter()
        .map(|(idx, display)| (display.as_str(), rows_of(src, reg, *idx, &instances)))
        .filter(|(_, rows)| !rows.is_empty() && (rows.len() as f64) < PARTIAL * n as f64)
        .collect();
    if partial.is_empty() {
        return Ok((instances, universe_source));
    }
    let runs: Vec<String> = partial
        .iter()
        .map(|(name, rows)| format!("`{name}` ({} of {n})", rows.len()))
        .collect();
    if src.coverage == Coverage::All {
        notes.push(format!(
            "{} cover{} under half of the {n} instances, scored as unresolved on the rest (--coverage all); --coverage restrict scores only the instances {} cover{}",
            runs.join(", "),
            if runs.len() == 1 { "s" } else { "" },
            if runs.len() == 1 { "it" } else { "they all" },
            if runs.len() == 1 { "s" } else { "" },
        ));
        return Ok((instances, universe_source));
    }
    let kept: Vec<String> = instances
        .into_iter()
        .filter(|i| partial.iter().all(|(_, rows)| rows.contains(i)))
        .collect();
    if kept.is_empty() {
        anyhow::bail!(
            "the partial runs {} (rows for under half of the {n} instances) cover no instance in common, so there is nothing to score them all on\n  hint: evaluate them apart (--agents), or score every instance with --coverage all",
            runs.join(", ")
        );
    }
    let source = format!(
        "{universe_source}; only the {} instances covered by the partial run{} {} (rows for under half; --coverage all scores all {n})",
        kept.len(),
        if runs.len() == 1 { "" } else { "s" },
        runs.join(", "),
    );
    Ok((kept, source))
}

/// The chosen agents less those absent from these instances: with no candidate on any of them
/// and no label file, nothing says how they did here (absent, not unlabelled), so they are left
/// out with a note; one named with `--agents` is an error that says so.
fn present(
    src: &Sources,
    reg: &Registry,
    chosen: Vec<(usize, String)>,
    universe: &HashMap<&str, usize>,
    universe_source: &str,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<(usize, String)>> {
    let here: BTreeSet<&str> = src
        .candidates
        .candidates
        .iter()
        .filter(|c| universe.contains_key(c.instance_id.as_str()))
        .map(|c| c.agent.as_str())
        .collect();
    let (kept, absent): (Vec<_>, Vec<_>) = chosen.into_iter().partition(|(idx, _)| {
        let a = &reg.agents[*idx];
        !a.labels.is_empty() || here.contains(a.name.as_str())
    });
    if absent.is_empty() {
        return Ok(kept);
    }
    let n = universe.len();
    let names: Vec<String> = absent.iter().map(|(_, d)| format!("`{d}`")).collect();
    if src.agents.is_some() {
        anyhow::bail!(
            "{} {} no candidates on these {n} instances ({universe_source}), so nothing says how {} did on them\n  hint: leave {} out of --agents, or evaluate instances {} has candidates for (--tasks, --instance-ids)",
            if names.len() == 1 { "agent" } else { "agents" },
            if names.len() == 1 {
                format!("{} has", names[0])
            } else {
                format!("{} have", names.join(", "))
            },
            if names.len() == 1 { "it" } else { "they" },
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "each" },
        );
    }
    if kept.is_empty() {
        anyhow::bail!(
            "no agent has a candidate on these {n} instances ({universe_source})\n  hint: check --tasks / --instance-ids against the candidates' instance ids"
        );
    }
    notes.push(format!(
        "{} agent(s) with no candidate on these {n} instances left out of the committee: {}",
        names.len(),
        names.join(", ")
    ));
    Ok(kept)
}

/// The error for a selection that ranks none of the `n` instances evaluated.
fn ranks_none(sel: &Selection, n: usize, universe_source: &str) -> anyhow::Error {
    let ranked = sel.ranked_instances();
    let others = if ranked.is_empty() {
        String::new()
    } else {
        let some: Vec<&str> = ranked.iter().take(3).copied().collect();
        format!(
            "; it ranks {} other instance(s) ({}{})",
            ranked.len(),
            some.join(", "),
            if ranked.len() > some.len() {
                ", …"
            } else {
                ""
            }
        )
    };
    anyhow::anyhow!(
        "the selection {} ranks none of the {n} instances evaluated ({universe_source}){others}, so there is no pick to score\n  hint: pass --tasks with the instances that run ranked, or --scores the run dir that ranked these instances",
        sel.path.display()
    )
}

/// The chosen agents' candidates per (instance, column).
struct Grid<'a> {
    /// `cand[row][col]`: the first candidate.
    cand: Vec<Vec<Option<&'a Candidate>>>,
    /// Whether the agent of a column has any candidate at all.
    has_cands: Vec<bool>,
}

impl<'a> Grid<'a> {
    /// Over `n` instances (`universe`: row of an instance id), noting candidates outside the
    /// universe and duplicates.
    fn of(
        src: &Sources<'a>,
        reg: &Registry,
        chosen: &[(usize, String)],
        (n, universe): (usize, &HashMap<&str, usize>),
        notes: &mut Vec<String>,
    ) -> Grid<'a> {
        let k = chosen.len();
        let col_of: HashMap<&str, usize> = chosen
            .iter()
            .enumerate()
            .map(|(col, (idx, _))| (reg.agents[*idx].name.as_str(), col))
            .collect();
        let mut cand: Vec<Vec<Option<&Candidate>>> = vec![vec![None; k]; n];
        let mut outside = 0usize;
        let mut duplicates = 0usize;
        let mut has_cands = vec![false; k];
        for c in &src.candidates.candidates {
            let Some(&col) = col_of.get(c.agent.as_str()) else {
                continue;
            };
            has_cands[col] = true;
            let Some(&row) = universe.get(c.instance_id.as_str()) else {
                outside += 1;
                continue;
            };
            if cand[row][col].is_some() {
                duplicates += 1;
            } else {
                cand[row][col] = Some(c);
            }
        }
        if outside > 0 {
            notes.push(format!(
                "{outside} candidate(s) of the chosen agents are for instances outside the universe; ignored"
            ));
        }
        if duplicates > 0 {
            notes.push(format!(
                "{duplicates} duplicate candidate(s) for the same (instance, agent); the first was kept"
            ));
        }
        Grid { cand, has_cands }
    }
}

/// One agent's column: presence and resolved per instance, and what went into it.
struct Column {
    presence: Vec<Presence>,
    resolved: Vec<bool>,
    info: AgentInputs,
}

/// The labels (label files first, then the candidates' `resolved` fields; the first wins and
/// disagreements are counted) and presence of agent `a` in column `col`.
fn column(
    src: &Sources,
    a: &Agent,
    display: &str,
    col: usize,
    instances: &[String],
    grid: &Grid,
) -> anyhow::Result<Column> {
    let n = instances.len();
    let cand = &grid.cand;
    let mut info = AgentInputs {
        name: display.to_string(),
        candidate_name: a.candidate_name.clone(),
        label_sources: a
            .labels
            .iter()
            .map(|(fi, _)| {
                let f = &src.labels[*fi];
                format!("{} ({})", f.path.display(), f.format)
            })
            .collect(),
        ..AgentInputs::default()
    };
    let row_labels = (0..n).any(|r| cand[r][col].is_some_and(|c| c.resolved.is_some()));
    if a.labels.is_empty() && !row_labels {
        anyhow::bail!(
            "agent `{display}` has no resolved labels\n  hint: give its candidates a `resolved` field, or pass --labels with its results.json / report.json (or --labels {display}=FILE)"
        );
    }
    if row_labels {
        info.label_sources
            .push("`resolved` field of its candidates".into());
    }
    let mut presence = Vec::with_capacity(n);
    let mut resolved = Vec::with_capacity(n);
    for (row, id) in instances.iter().enumerate() {
        let mut label: Option<bool> = None;
        for (fi, ai) in &a.labels {
            if let Some(v) = src.labels[*fi].agents[*ai].1.get(id) {
                match label {
                    None => label = Some(v),
                    Some(prev) if prev != v => info.label_conflicts += 1,
                    _ => {}
                }
            }
        }
        let c = cand[row][col];
        if let Some(v) = c.and_then(|c| c.resolved) {
            match label {
                None => label = Some(v),
                Some(prev) if prev != v => info.label_conflicts += 1,
                _ => {}
            }
        }
        let (p, r) = if grid.has_cands[col] {
            match c {
                None => {
                    info.missing += 1;
                    (Presence::Missing, false)
                }
                Some(c) if c.is_empty() => {
                    info.candidates += 1;
                    info.empty += 1;
                    (Presence::Empty, false)
                }
                Some(_) => {
                    info.candidates += 1;
                    if label.is_none() {
                        info.unlabeled += 1;
                    }
                    (Presence::Present, label == Some(true))
                }
            }
        } else {
            (Presence::Unknown, label == Some(true))
        };
        if label == Some(true) && !r {
            info.resolved_without_candidate += 1;
        }
        presence.push(p);
        resolved.push(r);
    }
    Ok(Column {
        presence,
        resolved,
        info,
    })
}

/// The committee's scores (or a baseline's) and what the table says about them.
#[derive(Default)]
struct Scores {
    score: Vec<Vec<Option<f64>>>,
    has_selection: bool,
    selection_source: Option<String>,
    no_pick: Vec<bool>,
    top_only: bool,
    basis: Vec<Option<Basis>>,
}

/// Scores from a selection, noting agents it names that match none, scores outside the
/// universe, pairs scored twice, instances with no pick and instances with no score.
fn selection_scores(
    sel: &Selection,
    (reg, chosen, all_agents): (&Registry, &[(usize, String)], bool),
    (instances, universe, universe_source): (&[String], &HashMap<&str, usize>, &str),
    notes: &mut Vec<String>,
) -> anyhow::Result<Scores> {
    let n = instances.len();
    if !sel
        .ranked_instances()
        .iter()
        .any(|i| universe.contains_key(i))
    {
        return Err(ranks_none(sel, n, universe_source));
    }
    let mut score = vec![vec![None; chosen.len()]; n];
    notes.extend(sel.notes.iter().cloned());
    if sel.top_only && !all_agents {
        anyhow::bail!(
            "{} holds only each issue's top pick over all {} agents, so the pick of the {} chosen with --agents is unknown\n  hint: pass the run directory (--scores RUN_DIR) or its journal.jsonl for full rankings",
            sel.path.display(),
            reg.agents.len(),
            chosen.len()
        );
    }
    let no_pick: Vec<bool> = instances.iter().map(|i| sel.no_pick.contains(i)).collect();
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    let mut cache: HashMap<&str, Option<usize>> = HashMap::new();
    let mut outside = 0usize;
    for ((inst, agent), &s) in &sel.scores {
        let col = *cache.entry(agent.as_str()).or_insert_with(|| {
            reg.find(agent)
                .ok()
                .flatten()
                .and_then(|i| chosen.iter().position(|(c, _)| *c == i))
        });
        let Some(col) = col else {
            if reg.find(agent).ok().flatten().is_none() {
                unknown.insert(agent.clone());
            }
            continue;
        };
        match universe.get(inst.as_str()) {
            Some(&row) => score[row][col] = Some(s),
            None => outside += 1,
        }
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "selection {}: {} agent name(s) match no agent and were ignored: {}",
            sel.path.display(),
            unknown.len(),
            listed(&unknown, 10)
        ));
    }
    if outside > 0 {
        notes.push(format!(
            "selection: {outside} score(s) for instances outside the universe; ignored"
        ));
    }
    if sel.duplicates > 0 {
        notes.push(format!(
            "selection: {} (instance, agent) pair(s) scored more than once; the last score was kept",
            sel.duplicates
        ));
    }
    let picked_nothing = no_pick.iter().filter(|&&b| b).count();
    if picked_nothing > 0 {
        notes.push(format!(
            "selection: {picked_nothing} of {n} instances were ranked with every candidate unscored: no pick (counted unresolved in n@k)"
        ));
    }
    let unscored = (0..n)
        .filter(|&r| !no_pick[r] && score[r].iter().all(Option::is_none))
        .count();
    if unscored > 0 {
        notes.push(format!(
            "selection: {unscored} of {n} instances have no committee score; their pick is a uniformly random one (pass --scored-only to drop them)"
        ));
    }
    Ok(Scores {
        score,
        has_selection: true,
        selection_source: Some(sel.path.display().to_string()),
        no_pick,
        top_only: sel.top_only,
        basis: if all_agents && !sel.basis.is_empty() {
            instances
                .iter()
                .map(|i| sel.basis.get(i).copied())
                .collect()
        } else {
            Vec::new()
        },
    })
}

/// `names` joined by commas, the first `most` of them, then how many more.
fn listed(names: &BTreeSet<String>, most: usize) -> String {
    let shown: Vec<&str> = names.iter().take(most).map(String::as_str).collect();
    match names.len() - shown.len() {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}

/// Equal scores for a baseline: every slot, or every non-empty candidate.
fn baseline_scores(b: Baseline, presence: &[Vec<Presence>]) -> Scores {
    let score = presence
        .iter()
        .map(|row| {
            row.iter()
                .map(|p| match (b, p) {
                    (Baseline::Random, _) => Some(0.0),
                    (Baseline::RandomNonEmpty, Presence::Present | Presence::Unknown) => Some(0.0),
                    (Baseline::RandomNonEmpty, _) => None,
                })
                .collect()
        })
        .collect();
    Scores {
        score,
        has_selection: true,
        selection_source: Some(match b {
            Baseline::Random => "baseline: uniformly random slot (equals Average@k)".into(),
            Baseline::RandomNonEmpty => "baseline: uniformly random non-empty candidate".into(),
        }),
        no_pick: Vec::new(),
        top_only: false,
        basis: Vec::new(),
    }
}
