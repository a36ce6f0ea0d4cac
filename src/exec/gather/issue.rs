//! One try at an issue's evidence, phase by phase: the environment, the tests and trees, the
//! base runs, the reproduction settled, the candidates' runs, then their behaviours.

use super::reading::{
    compared_runs, describe, imports_module, missing_extra, missing_package, only_name_errors,
    repro_change, settle_repro, unimported_module, usable_agent_script, Quoted, UNSTEADY,
};
use super::runs::{
    absorb, absorb_base, pack, passes_within, run_all, test_hash_seed, tree_key, Budget, Results,
    RunResult, Runner, What,
};
use super::trees::{after_files, build_commit, own_prints};
use super::trim::{left_out_in, slowest_to_leave_out};
use super::{
    IssueExec, NarrowedFile, Resolved, TrimmedFile, WrittenRecord, CODE_CHARS, CODE_LINES,
    MAX_AGENT_SCRIPTS, MAX_TEST_FILES, MAX_WRITTEN, OUTPUT_CHARS, OUTPUT_LINES, REPRO_FILE,
    SLOW_FILE_TRIM, TRIM_REACH, UNREAD, WHOLE_FILE_SHARE,
};
use crate::exec::env::{Env, EnvBuilder};
use crate::exec::llm_repro::{self, ModelTestRecord, TestContext, TestStatus};
use crate::exec::outcome::{
    behaviour_classes, clip, regression, Regression, ReproOutcome, Signature, Status,
};
use crate::exec::regress;
use crate::exec::repro::{self, RepoNames};
use crate::exec::sandbox::TreeFile;
use crate::exec::written::{self, WrittenTests};
use crate::localize::search::FileIndex;
use crate::model::{Behaviour, ExpectedShown, ModelTest, PatchView, ReproChange, Task};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What the issue-only search and the repository's names tell the model besides the issue.
fn test_context(task: &Task, files: &FileIndex, names: &RepoNames) -> TestContext {
    let opts = crate::localize::search::LocateOptions {
        top_files: llm_repro::CONTEXT_FILES,
        ..Default::default()
    };
    TestContext {
        modules: names.modules.iter().cloned().collect(),
        files: crate::localize::search::locate_files(&task.problem_statement, files, &opts)
            .into_iter()
            .take(llm_repro::CONTEXT_FILES)
            .map(|f| f.path)
            .collect(),
        reproduction: None,
    }
}

/// Settle the model's test from what it printed at the base commit (`None`: it did not run):
/// kept only when it printed `Issue reproduced`. Returns whether it is kept.
fn keep_model_test(record: &mut ModelTestRecord, base: Option<ModelTest>) -> bool {
    if record.runnable().is_none() {
        record.status = TestStatus::NotWritten;
        return false;
    }
    record.base = base;
    let why = match base {
        Some(b) => llm_repro::discard_reason(b),
        None => Some("its run at the base commit failed (see the issue's error)".into()),
    };
    record.status = if why.is_none() {
        TestStatus::Kept
    } else {
        TestStatus::Discarded
    };
    record.why = why;
    record.status == TestStatus::Kept
}

/// One try at an issue: build (or reuse) the environment, plan the runs, run them phase by
/// phase, and read each candidate's behaviour from them. `at_base`: the environment is built
/// at the task's base commit rather than its spec's setup commit (see [`super::gather`]).
pub(super) fn gather_at(resolved: &Resolved, at_base: bool) -> IssueExec {
    let mut out = IssueExec {
        behaviour: vec![None; resolved.cands.len()],
        ..IssueExec::default()
    };
    let Some(env) = environment(resolved, at_base, &mut out) else {
        return out;
    };
    let generated = match env.generated_files() {
        Ok(g) => g,
        Err(e) => {
            out.error = Some(format!("{e:#}"));
            return out;
        }
    };
    let (plan, mut run) = plan(resolved, env, generated, out);
    // Phase 1, the base (the tests twice, the reproduction settled on the way).
    run.base(&plan);
    run.settle_reproduction(&plan);
    // The model's tests are asked now, shown what the issue's code did at base.
    run.model_tests_at_base(&plan);
    let model_kept = run.keep_model_tests();
    let written_kept = run.written_at_base(&plan);
    // Phase 2, the candidates; phase 3, each broken test once more.
    run.candidates(&plan, &model_kept, &written_kept);
    run.confirm_breaks(&plan);
    run.behaviours(&plan, &model_kept, &written_kept)
}

/// Whether a test id a run reports names the test function `written` (a node id
/// `path::Class::test_name`): the same id, or one of its parametrized cases (`…[case]`).
fn same_test(reported: &str, written: &str) -> bool {
    reported == written
        || reported
            .strip_prefix(written)
            .is_some_and(|rest| rest.starts_with('['))
}

/// Per candidate, the rewritten tests it breaks that are not held against it. A patch that
/// rewrites a test to the behaviour its fix gives claims the issue asks for that change; the
/// claim stands unless another candidate changes what the issue shows (the reproduction, or
/// the model's test resolved) while that test, as the base wrote it, still passes with it:
/// then the fix did not need the rewrite, and the break counts like any other.
fn excused_rewrites(
    behaviours: &[Option<Behaviour>],
    own: &[Vec<usize>],
    test_files: &[String],
) -> Vec<Vec<String>> {
    let keeps_passing = |j: usize, test: &str| -> bool {
        let Some(b) = behaviours[j].as_ref() else {
            return false;
        };
        let file = test.split("::").next().unwrap_or(test);
        let ran_file = own[j]
            .iter()
            .any(|&k| test_files.get(k).is_some_and(|f| f == file));
        let shows_fix =
            b.repro == Some(ReproChange::Changed) || b.model_test == Some(ModelTest::Resolved);
        shows_fix && b.tests_run > 0 && ran_file && !b.broken.iter().any(|t| t == test)
    };
    behaviours
        .iter()
        .enumerate()
        .map(|(i, b)| {
            b.iter()
                .flat_map(|b| &b.rewritten)
                .filter(|t| !(0..behaviours.len()).any(|j| j != i && keeps_passing(j, t)))
                .cloned()
                .collect()
        })
        .collect()
}

/// Build (or reuse) the try's environment; `None` when it cannot be built (the error is in
/// `out`).
fn environment(resolved: &Resolved, at_base: bool, out: &mut IssueExec) -> Option<Env> {
    let Resolved {
        task,
        repo,
        settings,
        spec,
        ..
    } = resolved;
    let builder = EnvBuilder::new(&settings.env_dir);
    // A spec's setup commit can be missing from a clone that lacks the branch it is on (the
    // shared pytest bundle has no 4.6.x): when the build checks it out, the task's base commit,
    // of the same version, stands in, in an environment of its own (the commit is part of its
    // key). A spec that never checks the repository out only keys on it: nothing to replace.
    let setup = spec
        .setup_commit
        .as_deref()
        .filter(|_| spec.needs_work_tree());
    let stand_in = build_commit(setup, &task.base_commit, repo).map(|(commit, why)| {
        out.env_commit = Some(why);
        commit
    });
    // A spec of the user's own (`--setup` with no shipped spec) names no setup commit: its
    // install step runs on the repository as the issue has it, at the base commit.
    let at = stand_in.or_else(|| {
        ((at_base || spec.setup_commit.is_none()) && spec.needs_work_tree())
            .then_some(task.base_commit.as_str())
    });
    let _said = settings.building(format!("{} {}", spec.repo, spec.version));
    let built = match &settings.env_image {
        Some(images) => images.build(spec, repo, at),
        None => builder.build(spec, repo, at),
    };
    match built {
        Ok(env) => {
            out.env_seconds = env.build_seconds;
            Some(env)
        }
        Err(e) => {
            out.error = Some(e.to_string());
            None
        }
    }
}

/// What a try runs, fixed once its environment is built: the test files and their trees, the
/// reproduction's and the model's commands, the written tests tried as probes.
struct Plan<'a> {
    resolved: &'a Resolved<'a>,
    env: Env,
    runner: Runner<'a>,
    names: RepoNames,
    /// What tells code quoted from the library from the issue's reproduction: its top-level
    /// statements (none without one), which of them are imports, and the names it never binds.
    quoted: Quoted,
    /// Files the candidates create at the repository's root (the agents' scratch).
    scratch: BTreeSet<&'a str>,
    /// Per candidate: its edits to the repository's tests, set aside.
    aside: Vec<Vec<String>>,
    /// The distinct trees: the base (empty), then each distinct after-tree once.
    trees: Vec<Vec<TreeFile>>,
    /// Per tree: the test files (indices into `out.test_files`) its candidates run.
    tree_files: Vec<Vec<usize>>,
    /// Per candidate: its tree, `None` when it did not rebuild.
    tree_of: Vec<Option<usize>>,
    /// Per candidate: its own test files (indices into `out.test_files`).
    own: Vec<Vec<usize>>,
    /// Per test file: tried whole first (named after an edited module, with tests to narrow
    /// to).
    whole_first: Vec<bool>,
    /// The tests the candidates wrote, one set per agent family, and each set's command.
    probes: Vec<WrittenTests>,
    written_cmds: Vec<String>,
    /// What the model is shown besides the issue (`None`: no model writes tests).
    model_context: Option<TestContext>,
    repro_cmd: String,
    model_cmd: String,
    /// Seconds a test file may take at base to run with the candidates (half the limit).
    limit: f64,
    /// Seconds a file tried whole may take at base to stay whole.
    whole_limit: f64,
    full: Duration,
}

/// What the runs have shown so far, and what they change as they go on: the commands
/// (narrowed files, batches), the reproduction's script (pinned, or an agent's instead), the
/// model's tests (asked once the base runs are done).
struct Progress {
    out: IssueExec,
    seen: Results,
    /// Per test file: its slowest base run, in seconds.
    base_seconds: BTreeMap<usize, f64>,
    /// Per test file: its command and time limit.
    test_cmds: Vec<(String, Budget)>,
    /// Per test file: the tests it is narrowed to (all of it when empty).
    file_ids: Vec<Vec<String>>,
    batch_cmds: Vec<String>,
    batches: Vec<Vec<usize>>,
    script: Option<String>,
    /// The reproduction's code as a reader reads it: the issue's code as extracted (imports
    /// added), or the agent's script that stands in for it.
    code: Option<String>,
    /// The reproduction's first base run.
    first_repro: Option<ReproOutcome>,
    model_records: Vec<ModelTestRecord>,
    /// The model's test, per sample (`None`: that sample gave none); empty until it is asked
    /// ([`Progress::model_tests_at_base`]).
    model_scripts: Vec<Option<String>>,
}

/// Plan a try: which tests, the reproduction, the model's tests, the distinct trees and the
/// written tests; `out` gets the test files and whether the issue gives a reproduction.
fn plan<'a>(
    resolved: &'a Resolved<'a>,
    env: Env,
    generated: Vec<TreeFile>,
    mut out: IssueExec,
) -> (Plan<'a>, Progress) {
    let Resolved {
        task,
        repo,
        files,
        cands,
        settings,
        tests,
        ..
    } = resolved;
    let runner = Runner {
        settings,
        repo,
        commit: &task.base_commit,
        instance_id: &task.instance_id,
        env_key: env.dir.display().to_string(),
        env_vars: env.job_env(),
        image: env.image.clone(),
        loopback: env.loopback(),
        generated,
        snapshot: std::sync::OnceLock::new(),
    };

    // Which tests: each candidate's own selection (the files its edits reach), within the
    // best-scored files of all of them; each file runs on its own, so runs are shared between
    // candidates, committees and reruns.
    // With the test files each candidate edits that its tree leaves as at base.
    let (afters, aside): (Vec<Option<Vec<TreeFile>>>, Vec<Vec<String>>) = cands
        .iter()
        .map(|(_, v)| match after_files(v, tests) {
            Some((files, aside)) => (Some(files), aside),
            None => (None, Vec::new()),
        })
        .unzip();
    // Files the candidates create at the repository's root are the agents' scratch
    // (`reproduce.py`, a sample `test.qdp` the issue's code reads, a `.coveragerc`): the
    // reproductions run without them, so a candidate is not seen changing what the issue's
    // code does by supplying the input file it was missing.
    let scratch: BTreeSet<&str> = cands
        .iter()
        .flat_map(|(_, v)| &v.files)
        .filter(|f| f.before.is_none() && f.after.is_some() && !f.path.contains('/'))
        .map(|f| f.path.as_str())
        .collect();
    // Each candidate that rebuilt picks its files with `pick`.
    let picks =
        |pick: &dyn Fn(&PatchView) -> Vec<regress::TestFile>| -> Vec<Vec<regress::TestFile>> {
            cands
                .iter()
                .zip(&afters)
                .map(|((_, view), after)| after.as_ref().map_or_else(Vec::new, |_| pick(view)))
                .collect()
        };
    let mut chosen = picks(&|v| regress::select_for(files, tests, v, regress::MAX_FILES));
    // No candidate reaches a test file: the tests importing an edited module's package stand
    // in (whole files unless they name an edited definition).
    if chosen.iter().all(Vec::is_empty) {
        chosen = picks(&|v| {
            regress::select_by_package(
                files,
                tests,
                &regress::edits_of(v, tests),
                regress::MAX_FILES,
            )
        });
    }
    let mut scored: BTreeMap<String, f64> = BTreeMap::new();
    let mut ids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut named_after: BTreeSet<String> = BTreeSet::new();
    let own: Vec<Vec<String>> = chosen
        .into_iter()
        .map(|mine| {
            mine.into_iter()
                .map(|t| {
                    if t.named_after {
                        named_after.insert(t.path.clone());
                    }
                    let e = scored.entry(t.path.clone()).or_insert(0.0);
                    *e = e.max(t.score);
                    ids.entry(t.path.clone()).or_default().extend(t.tests);
                    t.path
                })
                .collect()
        })
        .collect();
    let mut ranked: Vec<(String, f64)> = scored.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(MAX_TEST_FILES);
    out.test_files = ranked.into_iter().map(|(p, _)| p).collect();
    out.test_files.sort();
    // Each candidate's files, as indices into `test_files` (those that made the cut).
    let own: Vec<Vec<usize>> = own
        .iter()
        .map(|mine| {
            mine.iter()
                .filter_map(|f| out.test_files.iter().position(|x| x == f))
                .collect()
        })
        .collect();

    // The reproduction.
    let names = RepoNames::from_repo(files);
    // When the issue gives none (or one that cannot run), an agent's reproduction script
    // stands in: see [`Progress::agent_scripts`].
    let issue_repro =
        repro::reproduction(&task.problem_statement, &names).filter(|r| r.statements > 0);
    let quoted = issue_repro
        .as_ref()
        .map_or_else(Quoted::default, |r| Quoted {
            statements: r.statements,
            imports: r.import_statements.clone(),
            unbound: r.unbound.clone(),
        });
    let code = issue_repro.as_ref().map(|r| r.code.clone());
    let script = issue_repro.map(|r| repro::pinned_or_as_is(&r.script));
    out.reproduction = script.is_some();

    // What the model that writes reproduction tests is shown (it is asked after the base runs,
    // with what the issue's code did there).
    let model_context = settings
        .model_test
        .as_ref()
        .map(|_| test_context(task, files, &names));

    // Distinct trees: the base, then each distinct after-tree once, with the test files of
    // every candidate that has it.
    let mut trees: Vec<Vec<TreeFile>> = vec![Vec::new()];
    let mut tree_files: Vec<Vec<usize>> = vec![(0..out.test_files.len()).collect()];
    let mut tree_of: Vec<Option<usize>> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (a, mine) in afters.iter().zip(&own) {
        let t = a.as_ref().map(|files| {
            *seen.entry(tree_key(files)).or_insert_with(|| {
                trees.push(files.clone());
                tree_files.push(Vec::new());
                trees.len() - 1
            })
        });
        if let Some(t) = t {
            for &k in mine {
                if !tree_files[t].contains(&k) {
                    tree_files[t].push(k);
                }
            }
        }
        tree_of.push(t);
    }
    // Jobs: (tree, what, pass). Base test files run twice. A file runs only the tests that
    // name what some candidate edits (all candidates' together, so base and candidates run
    // the same command), or all of it when none does. A file named after an edited module is
    // tried whole first (its other tests may reach the edit indirectly), and narrowed to its
    // tests only when whole it is slow at base or nothing in it passes.
    let file_ids: Vec<Vec<String>> = out
        .test_files
        .iter()
        .map(|f| {
            ids.get(f)
                .map(|s| s.iter().take(regress::MAX_IDS).cloned().collect())
                .unwrap_or_default()
        })
        .collect();
    let whole_first: Vec<bool> = out
        .test_files
        .iter()
        .zip(&file_ids)
        .map(|(f, ids)| !ids.is_empty() && named_after.contains(f))
        .collect();
    // Each file's command and time limit. A whole-file try gets only the CPU time it may take
    // to stay whole (and a second more), so a file far too slow whole costs that, not the
    // limit; its wall time allows for a loaded machine (see `Run::work_seconds`).
    let limit = settings.limits.timeout.as_secs_f64() / 2.0;
    let whole_limit = settings.limits.timeout.as_secs_f64() / WHOLE_FILE_SHARE;
    let full = settings.limits.timeout;
    // A runner that can leave tests out gets time enough for a file somewhat over its gate to
    // finish, so its durations say which tests to leave out (see `trim`).
    let reach = if env.can_leave_out_tests() {
        TRIM_REACH
    } else {
        1.0
    };
    let try_whole = Budget::cpu(whole_limit * reach + 1.0, full);
    let test_cmds: Vec<(String, Budget)> = out
        .test_files
        .iter()
        .zip(&file_ids)
        .zip(&whole_first)
        .map(|((f, mine), &whole)| {
            if whole {
                (env.test_command_selected(f, &[]), try_whole)
            } else {
                (env.test_command_selected(f, mine), Budget::wall(full))
            }
        })
        .collect();
    // Tests the candidates wrote, one set per agent family, each run over a tree with its
    // author's versions of their files on top (replacing the tree's own).
    let writers: Vec<(&str, &PatchView)> = cands
        .iter()
        .zip(&afters)
        .filter(|(_, a)| a.is_some())
        .map(|(c, _)| *c)
        .collect();
    let probes: Vec<WrittenTests> = written::written_tests(&writers, tests)
        .into_iter()
        .take(MAX_WRITTEN)
        .collect();
    let written_cmds: Vec<String> = probes
        .iter()
        .map(|w| {
            let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for (path, id) in &w.ids {
                by_file.entry(path).or_default().push(id.clone());
            }
            let files: Vec<(&str, &[String])> = by_file
                .iter()
                .map(|(f, ids)| (*f, ids.as_slice()))
                .collect();
            env.test_command_files(&files)
        })
        .collect();
    let plan = Plan {
        resolved,
        env,
        runner,
        names,
        quoted,
        scratch,
        aside,
        trees,
        tree_files,
        tree_of,
        own,
        whole_first,
        probes,
        written_cmds,
        model_context,
        repro_cmd: format!("python {REPRO_FILE}"),
        model_cmd: format!("python {}", llm_repro::TEST_FILE),
        limit,
        whole_limit,
        full,
    };
    let progress = Progress {
        out,
        seen: Results::default(),
        base_seconds: BTreeMap::new(),
        test_cmds,
        file_ids,
        batch_cmds: Vec::new(),
        batches: Vec::new(),
        script,
        code,
        first_repro: None,
        model_records: Vec::new(),
        model_scripts: Vec::new(),
    };
    (plan, progress)
}

impl Plan<'_> {
    fn without_scratch(&self, files: &[TreeFile]) -> Vec<TreeFile> {
        files
            .iter()
            .filter(|f| !self.scratch.contains(f.path.as_str()))
            .cloned()
            .collect()
    }

    /// A tree with the reproduction's script at its root.
    fn with_script(&self, files: &[TreeFile], script: Option<&str>) -> Vec<TreeFile> {
        let mut v = self.without_scratch(files);
        if let Some(s) = script {
            v.push(TreeFile {
                path: REPRO_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    }

    /// A tree with one sample of the model's test at its root.
    fn with_model_test(&self, files: &[TreeFile], script: Option<&str>) -> Vec<TreeFile> {
        let mut v = self.without_scratch(files);
        if let Some(s) = script {
            v.push(TreeFile {
                path: llm_repro::TEST_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    }

    /// A tree with one family's written tests on top (replacing the tree's own versions).
    fn with_written(&self, files: &[TreeFile], p: usize) -> Vec<TreeFile> {
        let mine = &self.probes[p].files;
        let mut v: Vec<TreeFile> = files
            .iter()
            .filter(|f| !mine.iter().any(|m| m.path == f.path))
            .cloned()
            .collect();
        v.extend(mine.iter().cloned());
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Run one job: (tree, what, pass).
    fn run_job(
        &self,
        &(t, what, pass): &(usize, What, u32),
        test_cmds: &[(String, Budget)],
        batch_cmds: &[String],
        script: Option<&str>,
        model_scripts: &[Option<String>],
    ) -> RunResult {
        let settings = self.resolved.settings;
        let tree = &self.trees[t];
        // Tests run under a pinned hash seed; the reproduction pins its own (its script's
        // prelude), so its runs keep their cache keys.
        let tests = (pass, Some(test_hash_seed(pass)));
        match what {
            What::Tests(k) => self
                .runner
                .run(tree, &test_cmds[k].0, test_cmds[k].1, tests),
            What::Batch(b) => self.runner.run(
                tree,
                &batch_cmds[b],
                Budget::wall(settings.limits.timeout),
                tests,
            ),
            What::Repro => self.runner.run(
                &self.with_script(tree, script),
                &self.repro_cmd,
                Budget::wall(settings.repro_timeout),
                (pass, None),
            ),
            What::ModelTest(sample) => self.runner.run(
                &self.with_model_test(tree, model_scripts.get(sample).and_then(Option::as_deref)),
                &self.model_cmd,
                Budget::wall(settings.repro_timeout),
                tests,
            ),
            What::Written(p) => self.runner.run(
                &self.with_written(tree, p),
                &self.written_cmds[p],
                Budget::wall(self.full),
                tests,
            ),
        }
    }
}

impl Progress {
    /// Run `jobs` in parallel with the reproduction's `script`, in the order given.
    fn run_with(
        &self,
        plan: &Plan,
        jobs: &[(usize, What, u32)],
        script: Option<&str>,
    ) -> Vec<RunResult> {
        run_all(
            jobs,
            &|j| {
                plan.run_job(
                    j,
                    &self.test_cmds,
                    &self.batch_cmds,
                    script,
                    &self.model_scripts,
                )
            },
            plan.resolved.settings.jobs,
        )
    }

    /// Run `jobs` with the reproduction's script as it stands.
    fn run(&self, plan: &Plan, jobs: &[(usize, What, u32)]) -> Vec<RunResult> {
        self.run_with(plan, jobs, self.script.as_deref())
    }

    /// Run one job with `script` and fold it in.
    fn run_one(&mut self, plan: &Plan, job: (usize, What, u32), script: &str) {
        let r = plan.run_job(
            &job,
            &self.test_cmds,
            &self.batch_cmds,
            Some(script),
            &self.model_scripts,
        );
        absorb(&mut self.out, &mut self.seen, &[], &job, r);
    }

    /// Phase 1, the base: each test file, the reproduction and the model's test once, then a
    /// second time each file that can still matter (some test passed, and it ran in at most
    /// half the time limit: a file that slow at base would time out with a candidate on a
    /// loaded machine, and say nothing).
    fn base(&mut self, plan: &Plan) {
        let mut base_jobs: Vec<(usize, What, u32)> = Vec::new();
        for &k in &plan.tree_files[0] {
            base_jobs.push((0, What::Tests(k), 0));
        }
        if self.script.is_some() {
            base_jobs.push((0, What::Repro, 0));
        }
        for pass in 0..2 {
            let results = self.run(plan, &base_jobs);
            absorb_base(
                &mut self.out,
                &mut self.seen,
                &mut self.base_seconds,
                &base_jobs,
                results,
            );
            if pass == 1 {
                break;
            }
            self.first_repro = self.seen.repros.get(&0).cloned();
            self.fit_slow_files(plan);
            base_jobs = plan.tree_files[0]
                .iter()
                .filter(|&&k| passes_within(&self.seen, &self.base_seconds, k, plan.limit))
                .map(|&k| (0, What::Tests(k), 1))
                .collect();
            // The reproduction runs twice at base too (see `settle_repro`).
            if self.script.is_some() {
                base_jobs.push((0, What::Repro, 1));
            }
        }
    }

    /// After the first base runs: files tried whole are kept whole when quick and some test
    /// passed; one over its gate loses its slowest tests when its durations can bring it
    /// within (see `trim`), else it is narrowed to its tests. Any other file over half the
    /// time limit loses its slowest tests when they bring it within that. Each such file runs
    /// again at base, that run replacing the first; a trim that did not take (the runner ran a
    /// left-out test anyway, or nothing passed) is undone, and a file tried whole is then
    /// narrowed after all.
    fn fit_slow_files(&mut self, plan: &Plan) {
        let n = self.out.test_files.len();
        let over: Vec<usize> = (0..n)
            .filter(|&k| plan.whole_first[k])
            .filter(|&k| !passes_within(&self.seen, &self.base_seconds, k, plan.whole_limit))
            .collect();
        for k in 0..n {
            self.test_cmds[k].1 = Budget::wall(plan.full);
            if plan.whole_first[k] && !over.contains(&k) {
                self.file_ids[k].clear();
                self.out.whole_files.push(self.out.test_files[k].clone());
            }
        }
        let mut again: Vec<usize> = Vec::new();
        let mut narrow: Vec<(usize, Option<f64>)> = Vec::new();
        // Files tried whole whose listed durations could not bring them within their gate, but
        // whose run lists fewer tests than it ran: once more with every test's seconds, then
        // trimmed again. (Not a file over half the limit that is not tried whole: its second
        // run would take as long again, over half the limit, and could itself run into the
        // limit.)
        let mut relist: Vec<usize> = Vec::new();
        for &k in &over {
            if self.trim(plan, k, plan.whole_limit, true) {
                again.push(k);
            } else if self.lists_too_few(plan, k) {
                relist.push(k);
            } else {
                narrow.push((k, None));
            }
        }
        for &k in &plan.tree_files[0] {
            let slow = self.base_seconds.get(&k).is_some_and(|&s| s > plan.limit);
            if !plan.whole_first[k] && slow && self.trim(plan, k, plan.limit, false) {
                again.push(k);
            }
        }
        // The seconds of each one's whole try, which its listing run replaces: a file narrowed
        // after all says those (the listing run may be stopped where the try was not).
        let tried: Vec<Option<f64>> = relist
            .iter()
            .map(|k| self.base_seconds.get(k).copied())
            .collect();
        for &k in &relist {
            if let Some(c) = plan.env.test_command_timing_all(&self.out.test_files[k]) {
                self.test_cmds[k].0 = c;
            }
        }
        self.rerun_at_base(plan, &relist);
        for (&k, seconds) in relist.iter().zip(tried) {
            if self.trim(plan, k, plan.whole_limit, true) {
                again.push(k);
            } else {
                narrow.push((k, seconds));
            }
        }
        self.narrow(plan, &narrow);
        again.extend(narrow.iter().map(|&(k, _)| k));
        self.rerun_at_base(plan, &again);
        // Trims that did not take.
        let undone: Vec<usize> = (0..n)
            .filter(|&k| {
                self.trimmed_at(k).is_some_and(|t| {
                    !self
                        .seen
                        .tests
                        .get(&(0, k, 0))
                        .is_some_and(|r| left_out_in(r, &t.left_out))
                })
            })
            .collect();
        // A file tried whole is narrowed after all, its whole try's seconds kept from the trim
        // (its first run has been replaced).
        let renarrow: Vec<(usize, Option<f64>)> = undone
            .iter()
            .filter(|&&k| plan.whole_first[k])
            .filter_map(|&k| Some((k, Some(self.trimmed_at(k)?.seconds))))
            .collect();
        let files = &self.out.test_files;
        self.out
            .trimmed_files
            .retain(|t| !undone.iter().any(|&k| files[k] == t.file));
        self.narrow(plan, &renarrow);
        let renarrowed: Vec<usize> = renarrow.iter().map(|&(k, _)| k).collect();
        self.rerun_at_base(plan, &renarrowed);
        for k in 0..n {
            if plan.whole_first[k] && self.trimmed_at(k).is_some() {
                self.file_ids[k].clear();
            }
        }
    }

    /// Whether file `k`'s first base run finished, its runner can leave tests out, and it
    /// listed the seconds of fewer tests than it ran (pytest lists the slowest
    /// [`DURATIONS_LISTED`](crate::exec::env::DURATIONS_LISTED)), stopping at that count rather
    /// than at pytest's 5 ms threshold: a file whose time is spread thin over many tests
    /// (xarray's `test_dataset.py`, whose 100 slowest took 13 of its 39 s) may then still be
    /// trimmed within its gate from every test's seconds.
    fn lists_too_few(&self, plan: &Plan, k: usize) -> bool {
        plan.env.can_leave_out_tests()
            && self.seen.tests.get(&(0, k, 0)).is_some_and(|r| {
                r.finished() && r.durations.len() < r.results.len() && !r.durations_hid_quick
            })
    }

    /// How file `k` runs without its slowest tests, when it does (`out.trimmed_files`; such a
    /// file runs alone, on its own command).
    fn trimmed_at(&self, k: usize) -> Option<&TrimmedFile> {
        let file = &self.out.test_files[k];
        self.out.trimmed_files.iter().find(|t| &t.file == file)
    }

    /// File `k` without its slowest tests, when its first base run took over `gate` and its
    /// durations name tests whose seconds bring it within: its command becomes the file (whole
    /// when `whole`, else its own selection) less those tests. Returns whether it did.
    fn trim(&mut self, plan: &Plan, k: usize, gate: f64, whole: bool) -> bool {
        let (Some(run), Some(&seconds)) =
            (self.seen.tests.get(&(0, k, 0)), self.base_seconds.get(&k))
        else {
            return false;
        };
        // A file tried whole keeps the tests naming the edits to the last.
        let keep: &[String] = if whole { &self.file_ids[k] } else { &[] };
        let target = if whole { gate } else { gate * SLOW_FILE_TRIM };
        let Some((left_out, left_out_seconds)) =
            slowest_to_leave_out(run, seconds, (gate, target), keep)
        else {
            return false;
        };
        let file = self.out.test_files[k].clone();
        let ids: &[String] = if whole { &[] } else { &self.file_ids[k] };
        let Some(command) = plan.env.test_command_without(&file, ids, &left_out) else {
            return false;
        };
        self.test_cmds[k].0 = command;
        self.out.trimmed_files.push(TrimmedFile {
            file,
            whole,
            seconds,
            gate,
            left_out,
            left_out_seconds,
        });
        true
    }

    /// Files tried whole, `(k, seconds)`, narrowed to their tests naming the edits, and said in
    /// `out.narrowed_files` with the seconds their whole try took: `seconds` when given (a trim
    /// undone, its first run replaced), else the first base run's unless it was stopped. Called
    /// before they run again at base.
    fn narrow(&mut self, plan: &Plan, ks: &[(usize, Option<f64>)]) {
        for &(k, seconds) in ks {
            let finished = self
                .seen
                .tests
                .get(&(0, k, 0))
                .is_some_and(|r| r.finished());
            let seconds = seconds.or_else(|| {
                finished
                    .then(|| self.base_seconds.get(&k).copied())
                    .flatten()
            });
            self.out.narrowed_files.push(NarrowedFile {
                file: self.out.test_files[k].clone(),
                seconds,
                gate: plan.whole_limit,
                tests: self.file_ids[k].len(),
            });
            self.test_cmds[k].0 = plan
                .env
                .test_command_selected(&self.out.test_files[k], &self.file_ids[k]);
        }
    }

    /// Files `ks` run again at base on their commands as they now stand, the run replacing
    /// their first.
    fn rerun_at_base(&mut self, plan: &Plan, ks: &[usize]) {
        if ks.is_empty() {
            return;
        }
        let again: Vec<(usize, What, u32)> = ks.iter().map(|&k| (0, What::Tests(k), 0)).collect();
        for &k in ks {
            self.base_seconds.remove(&k);
            self.seen.tests.remove(&(0, k, 0));
        }
        let results = self.run(plan, &again);
        absorb_base(
            &mut self.out,
            &mut self.seen,
            &mut self.base_seconds,
            &again,
            results,
        );
    }

    /// After the base runs: the reproduction settled (steady, or not used), a test
    /// command that printed nothing readable said so, and an agent's script tried when the
    /// issue gives no usable reproduction.
    fn settle_reproduction(&mut self, plan: &Plan) {
        if let Some(first) = &self.first_repro {
            if !settle_repro(&mut self.out, &mut self.seen, first) {
                self.out.repro_base = Some(format!("not used: {UNSTEADY}"));
            }
        }
        self.note_unread(plan);
        self.screen_reproduction(plan);
        self.agent_scripts(plan);
        self.out.repro_pinned =
            self.out.reproduction && self.script.as_deref().is_some_and(repro::is_pinned);
    }

    /// Not one base run printed a test result: say how the first one ended, so that a wrong
    /// test command is seen, not mistaken for tests that all fail.
    fn note_unread(&mut self, plan: &Plan) {
        let base = &plan.tree_files[0];
        if !base.is_empty() && base.iter().all(|k| self.seen.unread.contains_key(k)) {
            let k = base[0];
            self.out.tests_unread = Some(format!(
                "{UNREAD}{} {}",
                self.out.test_files[k], self.seen.unread[&k]
            ));
        }
    }

    /// Drop a reproduction that cannot reach the code the issue is about at base.
    fn screen_reproduction(&mut self, plan: &Plan) {
        let names = &plan.names;
        // A reproduction that fails at base for a package the environment lacks (the issue's
        // `import numpy` where the environment has no numpy, an optional parser's runtime)
        // never reaches the code the issue is about: what candidates do to it says nothing, so
        // it is not used.
        // (Read on the first base run: the second's output may have been dropped as unsteady.)
        let base_repro = self.seen.repros.get(&0).and(self.first_repro.as_ref());
        if let Some(why) = base_repro.and_then(|b| missing_package(b, names)) {
            self.out.missing_extra = base_repro
                .and_then(|b| missing_extra(b, names))
                .map(|e| e.dist.to_string());
            let script = self.script.as_deref();
            self.out.tree_lacks = base_repro
                .and_then(|b| unimported_module(&b.output))
                .filter(|m| self.out.missing_extra.is_none() && !m.is_empty())
                .filter(|m| !script.is_some_and(|s| imports_module(s, m)))
                .map(str::to_string);
            self.seen.repros.remove(&0);
            self.out.repro_output_unstable = false;
            self.out.reproduction = false;
            self.out.repro_base = Some(format!("not used: {why}"));
        }
        // Code quoted from the library rather than a reproduction (`app.register_blueprint(…)`
        // with no `app`, a line of a library function naming the function's arguments): every
        // statement but its imports raises `NameError` at base for a name the code never
        // binds, so nothing of it runs with any candidate either.
        let base_repro = self.seen.repros.get(&0).and(self.first_repro.as_ref());
        if let Some(msg) = base_repro.and_then(|b| only_name_errors(&b.output, &plan.quoted)) {
            self.seen.repros.remove(&0);
            self.out.repro_output_unstable = false;
            self.out.repro_pinned = false;
            self.out.reproduction = false;
            self.out.repro_base = Some(format!(
                "not used: every statement of it but its imports raises NameError at the base commit ({msg}): code quoted from the library, not a reproduction"
            ));
        }
    }

    /// No usable reproduction from the issue: the candidates' own reproduction scripts
    /// (`reproduce_bug.py` at the root), tried at base in order; the first that runs there
    /// without failing for a reason outside the issue (a missing module, a syntax error, no
    /// network, the time limit) stands in for it.
    fn agent_scripts(&mut self, plan: &Plan) {
        if self.seen.repros.contains_key(&0) {
            return;
        }
        let names = &plan.names;
        let scripts = repro::agent_scripts(plan.resolved.cands, plan.resolved.files);
        for s in scripts.iter().take(MAX_AGENT_SCRIPTS) {
            let script = repro::pinned_or_as_is(&s.script);
            self.out.repro_output_unstable = false;
            self.run_one(plan, (0, What::Repro, 0), &script);
            // Usable at base is checked on the first run; a second must end the same way.
            let steady = match self.seen.repros.get(&0).cloned() {
                Some(first) if usable_agent_script(&first, names) => {
                    self.run_one(plan, (0, What::Repro, 1), &script);
                    settle_repro(&mut self.out, &mut self.seen, &first)
                }
                _ => false,
            };
            match self.seen.repros.get(&0) {
                Some(b) if steady && usable_agent_script(b, names) => {
                    self.script = Some(script);
                    self.code = Some(s.code.clone());
                    self.out.reproduction = true;
                    self.out.repro_from = Some(format!("{}, written by {}", s.path, s.agent));
                    break;
                }
                _ => {
                    self.seen.repros.remove(&0);
                }
            }
        }
    }

    /// Ask the model for its tests, shown the issue's own reproduction as it ran at base when
    /// it is used (each sample asked once per issue: the response cache answers reruns, and
    /// the prompt is the same on each since a base run's output is shown only when steady),
    /// and run each at base once.
    fn model_tests_at_base(&mut self, plan: &Plan) {
        let (Some(writer), Some(ctx)) = (&plan.resolved.settings.model_test, &plan.model_context)
        else {
            return;
        };
        let ctx = TestContext {
            reproduction: self.shown_reproduction(),
            ..ctx.clone()
        };
        self.model_records = writer.write_all(plan.resolved.task, &ctx);
        self.model_scripts = self
            .model_records
            .iter()
            .map(|r| r.runnable().map(str::to_string))
            .collect();
        let jobs: Vec<(usize, What, u32)> = self
            .model_scripts
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(sample, _)| (0, What::ModelTest(sample), 0))
            .collect();
        if !jobs.is_empty() {
            let results = self.run(plan, &jobs);
            absorb_base(
                &mut self.out,
                &mut self.seen,
                &mut self.base_seconds,
                &jobs,
                results,
            );
        }
    }

    /// The issue's own reproduction as it ran at base, for the model's prompt: `None` when the
    /// issue gives none that is used, or an agent's script stands in for it.
    fn shown_reproduction(&self) -> Option<llm_repro::ShownRun> {
        if !self.out.reproduction || self.out.repro_from.is_some() {
            return None;
        }
        let base = self.seen.repros.get(&0)?;
        let output = if self.out.repro_output_unstable {
            String::new()
        } else {
            clip(&base.output, OUTPUT_LINES, OUTPUT_CHARS)
        };
        Some(llm_repro::ShownRun {
            code: clip(self.code.as_deref()?, CODE_LINES, CODE_CHARS),
            ends: describe(base),
            output,
        })
    }

    /// The model's tests are kept only when they show the issue at the base commit; returns
    /// the samples kept.
    fn keep_model_tests(&mut self) -> Vec<usize> {
        let seen = &self.seen;
        let model_kept: Vec<usize> = self
            .model_records
            .iter_mut()
            .enumerate()
            .filter_map(|(sample, r)| {
                keep_model_test(r, seen.model.get(&(0, sample)).copied()).then_some(sample)
            })
            .collect();
        self.out.model_test = self
            .model_records
            .get(model_kept.first().copied().unwrap_or(0))
            .cloned();
        if self.model_records.len() > 1 {
            self.out.model_test_samples = std::mem::take(&mut self.model_records);
        }
        model_kept
    }

    /// The candidates' own tests, twice at base: kept are the tests that fail (or err) in both
    /// runs; a set with none left (it passes at base, or its file does not even collect there)
    /// says nothing about the others. Returns each kept set and its tests.
    fn written_at_base(&mut self, plan: &Plan) -> Vec<(usize, Vec<String>)> {
        let probes = &plan.probes;
        let base_written: Vec<(usize, What, u32)> = (0..probes.len())
            .flat_map(|p| [(0, What::Written(p), 0), (0, What::Written(p), 1)])
            .collect();
        let results = self.run(plan, &base_written);
        for (job, r) in base_written.iter().zip(results) {
            absorb(&mut self.out, &mut self.seen, &[], job, r);
        }
        let seen = &self.seen;
        let written_kept: Vec<(usize, Vec<String>)> = (0..probes.len())
            .filter_map(|p| {
                let (a, b) = (seen.written.get(&(0, p, 0))?, seen.written.get(&(0, p, 1))?);
                let failing: Vec<String> = probes[p]
                    .ids
                    .iter()
                    .map(|(_, id)| id)
                    .filter(|id| {
                        a.results.get(*id).is_some_and(|s| s.is_bad())
                            && b.results.get(*id).is_some_and(|s| s.is_bad())
                    })
                    .cloned()
                    .collect();
                (!failing.is_empty()).then_some((p, failing))
            })
            .collect();
        self.out.written_tests = written_kept
            .iter()
            .map(|(p, ids)| WrittenRecord {
                agent: probes[*p].agent.clone(),
                family: probes[*p].family.clone(),
                tests: ids.clone(),
            })
            .collect();
        written_kept
    }

    /// Phase 2, the candidates: only the files where some test passed both times at base in
    /// time; the reproduction when it ran; the model's test when it was kept.
    fn candidates(
        &mut self,
        plan: &Plan,
        model_kept: &[usize],
        written_kept: &[(usize, Vec<String>)],
    ) {
        let tests = &self.seen.tests;
        let base_seconds = &self.base_seconds;
        let useful = |k: usize| -> bool {
            let (Some(a), Some(b)) = (tests.get(&(0, k, 0)), tests.get(&(0, k, 1))) else {
                return false;
            };
            regression(a, b, a).stable > 0 && base_seconds.get(&k).is_some_and(|&s| s <= plan.limit)
        };
        // A tree's useful files run together, packed into batches (one interpreter start each);
        // a batch of one file runs the file's own command, shared with the per-file cache.
        let mut jobs: Vec<(usize, What, u32)> = Vec::new();
        let mut batches: Vec<Vec<usize>> = Vec::new();
        let mut batch_cmds: Vec<String> = Vec::new();
        for (t, ks) in plan.tree_files.iter().enumerate().skip(1) {
            // A trimmed file runs alone, on its own command (it leaves tests out).
            for &k in ks
                .iter()
                .filter(|&&k| useful(k) && self.trimmed_at(k).is_some())
            {
                jobs.push((t, What::Tests(k), 0));
            }
            let mut mine: Vec<(usize, f64, u8)> = ks
                .iter()
                .filter(|&&k| useful(k) && self.trimmed_at(k).is_none())
                .map(|&k| (k, base_seconds[&k], plan.env.batch_key(&self.file_ids[k])))
                .collect();
            mine.sort_by_key(|m| m.0);
            for batch in pack(&mine, plan.limit) {
                if let [k] = batch[..] {
                    jobs.push((t, What::Tests(k), 0));
                    continue;
                }
                let files: Vec<(&str, &[String])> = batch
                    .iter()
                    .map(|&k| (self.out.test_files[k].as_str(), self.file_ids[k].as_slice()))
                    .collect();
                batch_cmds.push(plan.env.test_command_files(&files));
                batches.push(batch);
                jobs.push((t, What::Batch(batches.len() - 1), 0));
            }
            if self.seen.repros.contains_key(&0) {
                jobs.push((t, What::Repro, 0));
            }
            for &sample in model_kept {
                jobs.push((t, What::ModelTest(sample), 0));
            }
            for (p, _) in written_kept {
                jobs.push((t, What::Written(*p), 0));
            }
        }
        self.out.slow_files = (0..self.out.test_files.len())
            .filter(|&k| base_seconds.get(&k).is_some_and(|&s| s > plan.limit))
            .map(|k| self.out.test_files[k].clone())
            .collect();
        self.batches = batches;
        self.batch_cmds = batch_cmds;
        let results = self.run(plan, &jobs);
        for (job, r) in jobs.iter().zip(results) {
            absorb(&mut self.out, &mut self.seen, &self.batches, job, r);
        }
    }

    /// Phase 3: a test the candidate broke runs once more with it, narrowed to the file's
    /// broken tests (as the base runs twice, to drop flaky tests), and counts as broken only
    /// when it does not pass again: a test that failed by chance, or only after others in the
    /// same process, is not held against the candidate.
    fn confirm_breaks(&mut self, plan: &Plan) {
        let mut confirm: Vec<(usize, What, u32)> = Vec::new();
        for (t, ks) in plan.tree_files.iter().enumerate().skip(1) {
            for &k in ks {
                let Some((a, b, c)) = compared_runs(&self.seen.tests, t, k) else {
                    continue;
                };
                let broken = regression(a, b, c).broken;
                if broken.is_empty() {
                    continue;
                }
                let ids: Vec<String> = broken.into_iter().take(regress::MAX_IDS).collect();
                self.batch_cmds.push(
                    plan.env
                        .test_command_selected(&self.out.test_files[k], &ids),
                );
                self.batches.push(vec![k]);
                confirm.push((t, What::Batch(self.batches.len() - 1), 1));
            }
        }
        let results = self.run(plan, &confirm);
        for (job, r) in confirm.iter().zip(results) {
            absorb(&mut self.out, &mut self.seen, &self.batches, job, r);
        }
    }

    /// Read each candidate's behaviour from the runs, and the behaviour classes.
    fn behaviours(
        self,
        plan: &Plan,
        model_kept: &[usize],
        written_kept: &[(usize, Vec<String>)],
    ) -> IssueExec {
        let Progress {
            mut out,
            seen,
            code,
            ..
        } = self;
        let Results {
            tests,
            repros,
            model,
            written: written_runs,
            unread: _,
        } = seen;
        let cands = plan.resolved.cands;

        // Base: tests that passed twice count. A candidate is compared on its own files.
        let regression_of = |t: usize, ks: &[usize]| -> Option<Regression> {
            let mut total: Option<Regression> = None;
            for &k in ks {
                let Some((a, b, c)) = compared_runs(&tests, t, k) else {
                    continue;
                };
                let mut r = regression(a, b, c);
                // A candidate's broken test that passed when run again (phase 3) is not broken.
                if let Some(again) = tests.get(&(t, k, 1)).filter(|_| t != 0) {
                    r.broken
                        .retain(|id| again.results.get(id) != Some(&Status::Passed));
                }
                let acc = total.get_or_insert_with(Regression::default);
                acc.stable += r.stable;
                acc.flaky.extend(r.flaky);
                acc.broken.extend(r.broken);
            }
            total
        };
        if let Some(r) = regression_of(0, &plan.tree_files[0]) {
            out.stable_tests = r.stable;
            out.flaky_tests = r.flaky;
        }
        let repro_base = repros.get(&0).cloned();
        if out.reproduction || repro_base.is_some() {
            out.repro_base = repro_base.as_ref().map(describe);
        }
        // What a reader needs to check the reproduction: its code, and what it printed at base
        // and (below) with each candidate whose run differs. Output that moved between the two
        // base runs is not compared, so it is not shown either.
        let shown = out.reproduction && !out.repro_output_unstable;
        if out.reproduction {
            out.repro_code = code.as_deref().map(|c| clip(c, CODE_LINES, CODE_CHARS));
        }
        if shown {
            out.repro_output = repro_base
                .as_ref()
                .map(|b| clip(&b.output, OUTPUT_LINES, OUTPUT_CHARS));
        }
        // What the issue says its code should show that the base run does not show.
        let expected: Vec<String> = match &repro_base {
            Some(b) if out.reproduction && !out.repro_output_unstable && !b.output.is_empty() => {
                repro::unshown_at_base(&plan.resolved.task.problem_statement, &b.output)
            }
            _ => Vec::new(),
        };
        let mut sigs: Vec<Option<Signature>> = Vec::new();
        for (i, t) in plan.tree_of.iter().enumerate() {
            let Some(t) = *t else {
                sigs.push(None);
                continue;
            };
            let reg = regression_of(t, &plan.own[i]);
            // The candidate's own debug output is not a change in behaviour.
            let rep = repros.get(&t).cloned().map(|o| match &repro_base {
                Some(b) => o.without_own_prints(&own_prints(cands[i].1), b),
                None => o,
            });
            let change = match (&rep, &repro_base) {
                (Some(c), Some(b)) => {
                    Some(repro_change(b, c, &plan.resolved.task.problem_statement))
                }
                _ => None,
            };
            let reg = reg.filter(|r| r.stable > 0);
            let verdicts: Vec<ModelTest> = model_kept
                .iter()
                .filter_map(|&sample| model.get(&(t, sample)).copied())
                .collect();
            let model_test = llm_repro::combine(&verdicts);
            // Each kept written test set: passed when every one of its kept tests passes.
            let passes: Vec<bool> = written_kept
                .iter()
                .map(|(p, ids)| {
                    written_runs.get(&(t, *p, 0)).is_some_and(|r| {
                        ids.iter()
                            .all(|id| r.results.get(id) == Some(&Status::Passed))
                    })
                })
                .collect();
            let written = written_kept
                .iter()
                .zip(&passes)
                .map(|((p, _), &ok)| (plan.probes[*p].family.clone(), ok))
                .collect();
            let own = written_kept
                .iter()
                .zip(&passes)
                .find(|((p, _), _)| plan.probes[*p].agent == cands[i].0);
            let wrote = own.map(|((p, _), _)| plan.probes[*p].family.clone());
            let broken = reg.as_ref().map(|r| r.broken.clone()).unwrap_or_default();
            // Its own rewritten tests, when its version fails at base and passes with it
            // (kept below only where no other candidate shows the fix without the rewrite).
            let rewritten = match own {
                Some(((_, ids), true)) => broken
                    .iter()
                    .filter(|t| ids.iter().any(|id| same_test(t, id)))
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            };
            let behaviour = Behaviour {
                broken,
                rewritten,
                tests_run: reg.as_ref().map_or(0, |r| r.stable),
                repro: change,
                repro_end: rep
                    .as_ref()
                    .filter(|_| change.is_some_and(|c| c != ReproChange::Same))
                    .map(describe),
                repro_output: rep
                    .as_ref()
                    .filter(|_| shown && change.is_some_and(|c| c != ReproChange::Same))
                    .map(|o| clip(&o.output, OUTPUT_LINES, OUTPUT_CHARS)),
                expected: rep
                    .as_ref()
                    .filter(|_| change.is_some() && !expected.is_empty())
                    .map(|o| ExpectedShown {
                        shown: repro::count_shown(&expected, &o.output),
                        of: expected.len(),
                    }),
                model_test,
                written,
                wrote,
                tests_set_aside: plan.aside[i].clone(),
                class: None,
                error: None,
            };
            let sig = behaviour.ran().then(|| {
                Signature::new(reg.as_ref(), rep.filter(|_| change.is_some()))
                    .with_model_test(model_test)
                    .with_written(passes)
            });
            out.behaviour[i] = Some(behaviour);
            sigs.push(sig);
        }
        out.expected = expected;
        let excused = excused_rewrites(&out.behaviour, &plan.own, &out.test_files);
        for (b, kept) in out.behaviour.iter_mut().zip(excused) {
            if let Some(b) = b.as_mut() {
                b.rewritten = kept;
            }
        }
        // Behaviour classes over the candidates that ran.
        let ran: Vec<usize> = (0..cands.len()).filter(|&i| sigs[i].is_some()).collect();
        let keyed: Vec<(&str, &Signature)> = ran
            .iter()
            .map(|&i| (cands[i].0, sigs[i].as_ref().expect("ran")))
            .collect();
        let classes = behaviour_classes(&keyed);
        out.classes = classes.len();
        out.tests_set_aside = out
            .behaviour
            .iter()
            .flatten()
            .filter(|b| !b.tests_set_aside.is_empty())
            .count();
        for (k, class) in classes.iter().enumerate() {
            for &m in &class.members {
                if let Some(b) = out.behaviour[ran[m]].as_mut() {
                    b.class = Some(k);
                }
            }
        }
        out
    }
}
