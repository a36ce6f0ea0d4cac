//! One try at an issue's evidence, phase by phase: the environment, the tests and trees, the
//! base runs, the reproduction settled, the candidates' runs, then their behaviours.

use super::reading::{
    compared_runs, describe, imports_module, missing_extra, missing_package, only_name_errors,
    repro_change, settle_repro, unimported_module, usable_agent_script, UNSTEADY,
};
use super::runs::{
    absorb, absorb_base, pack, passes_within, run_all, tree_key, Results, Runner, What,
};
use super::trees::{after_files, build_commit, own_prints};
use super::{
    IssueExec, Resolved, WrittenRecord, MAX_AGENT_SCRIPTS, MAX_TEST_FILES, MAX_WRITTEN, REPRO_FILE,
    UNREAD, WHOLE_FILE_SHARE,
};
use crate::exec::env::EnvBuilder;
use crate::exec::llm_repro::{self, ModelTestRecord, TestContext, TestStatus};
use crate::exec::outcome::{
    behaviour_classes, regression, Regression, ReproOutcome, Signature, Status,
};
use crate::exec::regress;
use crate::exec::repro::{self, RepoNames};
use crate::exec::sandbox::TreeFile;
use crate::exec::written::{self, WrittenTests};
use crate::localize::search::FileIndex;
use crate::model::{Behaviour, ModelTest, PatchView, ReproChange, Task};
use std::collections::{BTreeMap, BTreeSet};

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

pub(super) fn gather_at(resolved: &Resolved, at_base: bool) -> IssueExec {
    let Resolved {
        task,
        repo,
        files,
        cands,
        settings,
        spec,
        tests,
    } = resolved;
    let mut out = IssueExec {
        behaviour: vec![None; cands.len()],
        ..IssueExec::default()
    };
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
    let env = match builder.build(spec, repo, at) {
        Ok(e) => e,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    out.env_seconds = env.build_seconds;
    let generated = match env.generated_files() {
        Ok(g) => g,
        Err(e) => {
            out.error = Some(format!("{e:#}"));
            return out;
        }
    };
    let runner = Runner {
        settings,
        repo,
        commit: &task.base_commit,
        env_key: env.dir.display().to_string(),
        env_vars: env.job_env(),
        generated,
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
    let without_scratch = |files: &[TreeFile]| -> Vec<TreeFile> {
        files
            .iter()
            .filter(|f| !scratch.contains(f.path.as_str()))
            .cloned()
            .collect()
    };
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
    // stands in: see below.
    let issue_repro =
        repro::reproduction(&task.problem_statement, &names).filter(|r| r.statements > 0);
    let statements = issue_repro.as_ref().map_or(0, |r| r.statements);
    let mut script = issue_repro.map(|r| r.script);
    out.reproduction = script.is_some();
    let repro_cmd = format!("python {REPRO_FILE}");
    let with_script = |files: &[TreeFile], script: Option<&str>| -> Vec<TreeFile> {
        let mut v = without_scratch(files);
        if let Some(s) = script {
            v.push(TreeFile {
                path: REPRO_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    };

    // The model's reproduction tests: each sample asked once per issue (the response cache
    // answers reruns). Settled into `out.model_test` (and `model_test_samples`) after the base
    // runs.
    let mut model_records: Vec<ModelTestRecord> = settings
        .model_test
        .as_ref()
        .map(|w| w.write_all(task, &test_context(task, files, &names)))
        .unwrap_or_default();
    let model_scripts: Vec<Option<String>> = model_records
        .iter()
        .map(|r| r.runnable().map(str::to_string))
        .collect();
    let model_cmd = format!("python {}", llm_repro::TEST_FILE);
    let with_model_test = |files: &[TreeFile], sample: usize| -> Vec<TreeFile> {
        let mut v = without_scratch(files);
        if let Some(s) = model_scripts.get(sample).and_then(Option::as_ref) {
            v.push(TreeFile {
                path: llm_repro::TEST_FILE.into(),
                contents: Some(s.as_bytes().to_vec()),
            });
        }
        v
    };

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
    let mut file_ids: Vec<Vec<String>> = out
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
    // Each file's command and time limit. A whole-file try gets only the time it may take to
    // stay whole (and a second more), so a file far too slow whole costs that, not the limit.
    let limit = settings.limits.timeout.as_secs_f64() / 2.0;
    let whole_limit = settings.limits.timeout.as_secs_f64() / WHOLE_FILE_SHARE;
    let full = settings.limits.timeout;
    let try_whole = std::time::Duration::from_secs_f64(whole_limit + 1.0).min(full);
    let mut test_cmds: Vec<(String, std::time::Duration)> = out
        .test_files
        .iter()
        .zip(&file_ids)
        .zip(&whole_first)
        .map(|((f, mine), &whole)| {
            if whole {
                (env.test_command_selected(f, &[]), try_whole)
            } else {
                (env.test_command_selected(f, mine), full)
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
    let with_written = |files: &[TreeFile], p: usize| -> Vec<TreeFile> {
        let mine = &probes[p].files;
        let mut v: Vec<TreeFile> = files
            .iter()
            .filter(|f| !mine.iter().any(|m| m.path == f.path))
            .cloned()
            .collect();
        v.extend(mine.iter().cloned());
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    };
    let run_job = |&(t, what, pass): &(usize, What, u32),
                   test_cmds: &[(String, std::time::Duration)],
                   batch_cmds: &[String],
                   script: Option<&str>| match what {
        What::Tests(k) => runner.run(&trees[t], &test_cmds[k].0, test_cmds[k].1, pass),
        What::Batch(b) => runner.run(&trees[t], &batch_cmds[b], settings.limits.timeout, pass),
        What::Repro => runner.run(
            &with_script(&trees[t], script),
            &repro_cmd,
            settings.repro_timeout,
            pass,
        ),
        What::ModelTest(sample) => runner.run(
            &with_model_test(&trees[t], sample),
            &model_cmd,
            settings.repro_timeout,
            pass,
        ),
        What::Written(p) => runner.run(&with_written(&trees[t], p), &written_cmds[p], full, pass),
    };
    let mut seen = Results::default();
    let mut base_seconds: BTreeMap<usize, f64> = BTreeMap::new();

    // Phase 1, the base: each test file, the reproduction and the model's test once, then a
    // second time each file that can still matter (some test passed, and it ran in at most
    // half the time limit: a file that slow at base would time out with a candidate on a
    // loaded machine, and say nothing).
    let mut base_jobs: Vec<(usize, What, u32)> = Vec::new();
    for &k in &tree_files[0] {
        base_jobs.push((0, What::Tests(k), 0));
    }
    if script.is_some() {
        base_jobs.push((0, What::Repro, 0));
    }
    for (sample, script) in model_scripts.iter().enumerate() {
        if script.is_some() {
            base_jobs.push((0, What::ModelTest(sample), 0));
        }
    }
    let mut first_repro: Option<ReproOutcome> = None;
    for pass in 0..2 {
        let results = run_all(
            &base_jobs,
            &|j| run_job(j, &test_cmds, &[], script.as_deref()),
            settings.jobs,
        );
        absorb_base(&mut out, &mut seen, &mut base_seconds, &base_jobs, results);
        if pass == 1 {
            break;
        }
        first_repro = seen.repros.get(&0).cloned();
        // Files tried whole: kept whole when quick and some test passed, else run again
        // narrowed to their tests (that run replaces the whole one).
        let narrow: Vec<usize> = (0..out.test_files.len())
            .filter(|&k| whole_first[k])
            .filter(|&k| !passes_within(&seen, &base_seconds, k, whole_limit))
            .collect();
        for k in 0..out.test_files.len() {
            test_cmds[k].1 = full;
            if whole_first[k] && !narrow.contains(&k) {
                file_ids[k].clear();
                out.whole_files.push(out.test_files[k].clone());
            }
        }
        if !narrow.is_empty() {
            let again: Vec<(usize, What, u32)> =
                narrow.iter().map(|&k| (0, What::Tests(k), 0)).collect();
            for &k in &narrow {
                test_cmds[k].0 = env.test_command_selected(&out.test_files[k], &file_ids[k]);
                base_seconds.remove(&k);
                seen.tests.remove(&(0, k, 0));
            }
            let results = run_all(
                &again,
                &|j| run_job(j, &test_cmds, &[], script.as_deref()),
                settings.jobs,
            );
            absorb_base(&mut out, &mut seen, &mut base_seconds, &again, results);
        }
        base_jobs = tree_files[0]
            .iter()
            .filter(|&&k| passes_within(&seen, &base_seconds, k, limit))
            .map(|&k| (0, What::Tests(k), 1))
            .collect();
        // The reproduction runs twice at base too (see `settle_repro`).
        if script.is_some() {
            base_jobs.push((0, What::Repro, 1));
        }
    }
    if let Some(first) = &first_repro {
        if !settle_repro(&mut out, &mut seen, first) {
            out.repro_base = Some(format!("not used: {UNSTEADY}"));
        }
    }
    // A reproduction whose two base runs printed differently (sympy's term order under hash
    // randomization, `np.random` data) runs twice more with its randomness pinned; when those
    // two print alike the pinned script is the reproduction (its first base run returned),
    // else everything stays as it was and only how its runs end is compared.
    let pin = |out: &mut IssueExec, seen: &mut Results, script: &str| {
        let pinned = repro::pinned(script)?;
        let unpinned = seen.repros.remove(&0);
        // Read whole (an unsteady reproduction's runs keep only how they end).
        out.repro_output_unstable = false;
        let job = (0, What::Repro, 0);
        let r = run_job(&job, &test_cmds, &[], Some(&pinned));
        absorb(out, seen, &[], &job, r);
        let first = seen.repros.get(&0).cloned();
        let steady = first.as_ref().is_some_and(|first| {
            let job = (0, What::Repro, 1);
            let r = run_job(&job, &test_cmds, &[], Some(&pinned));
            absorb(out, seen, &[], &job, r);
            settle_repro(out, seen, first) && !out.repro_output_unstable
        });
        if steady {
            out.repro_pinned = true;
            return Some((pinned, first?));
        }
        seen.repros.remove(&0);
        if let Some(u) = unpinned {
            seen.repros.insert(0, u);
        }
        out.reproduction = true;
        out.repro_output_unstable = true;
        None
    };
    if out.repro_output_unstable {
        if let Some((pinned, first)) = script.clone().and_then(|s| pin(&mut out, &mut seen, &s)) {
            script = Some(pinned);
            first_repro = Some(first);
        }
    }

    // Not one base run printed a test result: say how the first one ended, so that a wrong
    // test command is seen, not mistaken for tests that all fail.
    if !tree_files[0].is_empty() && tree_files[0].iter().all(|k| seen.unread.contains_key(k)) {
        let k = tree_files[0][0];
        out.tests_unread = Some(format!("{UNREAD}{} {}", out.test_files[k], seen.unread[&k]));
    }

    // A reproduction that fails at base for a package the environment lacks (the issue's
    // `import numpy` where the environment has no numpy, an optional parser's runtime) never
    // reaches the code the issue is about: what candidates do to it says nothing, so it is
    // not used.
    // (Read on the first base run: the second's output may have been dropped as unsteady.)
    let base_repro = seen.repros.get(&0).and(first_repro.as_ref());
    if let Some(why) = base_repro.and_then(|b| missing_package(b, &names)) {
        out.missing_extra = base_repro
            .and_then(|b| missing_extra(b, &names))
            .map(|e| e.dist.to_string());
        out.tree_lacks = base_repro
            .and_then(|b| unimported_module(&b.output))
            .filter(|m| out.missing_extra.is_none() && !m.is_empty())
            .filter(|m| !script.as_deref().is_some_and(|s| imports_module(s, m)))
            .map(str::to_string);
        seen.repros.remove(&0);
        out.repro_output_unstable = false;
        out.reproduction = false;
        out.repro_base = Some(format!("not used: {why}"));
    }
    // Code quoted from the library rather than a reproduction (flask-5063's
    // `app.register_blueprint(…)` with no `app`, requests-2317's `builtin_str(method)`): every
    // statement raises `NameError` at base, so nothing of it runs with any candidate either.
    let base_repro = seen.repros.get(&0).and(first_repro.as_ref());
    if let Some(msg) = base_repro.and_then(|b| only_name_errors(&b.output, statements)) {
        seen.repros.remove(&0);
        out.repro_output_unstable = false;
        out.repro_pinned = false;
        out.reproduction = false;
        out.repro_base = Some(format!(
            "not used: every statement of it raises NameError at the base commit ({msg}): code quoted from the library, not a reproduction"
        ));
    }

    // No usable reproduction from the issue: the candidates' own reproduction scripts
    // (`reproduce_bug.py` at the root), tried at base in order; the first that runs there
    // without failing for a reason outside the issue (a missing module, a syntax error, no
    // network, the time limit) stands in for it.
    if !seen.repros.contains_key(&0) {
        let scripts = repro::agent_scripts(cands, files);
        for s in scripts.iter().take(MAX_AGENT_SCRIPTS) {
            out.repro_output_unstable = false;
            let job = (0, What::Repro, 0);
            let r = run_job(&job, &test_cmds, &[], Some(&s.script));
            absorb(&mut out, &mut seen, &[], &job, r);
            // Usable at base is checked on the first run; a second must end the same way.
            let steady = match seen.repros.get(&0).cloned() {
                Some(first) if usable_agent_script(&first, &names) => {
                    let job = (0, What::Repro, 1);
                    let r = run_job(&job, &test_cmds, &[], Some(&s.script));
                    absorb(&mut out, &mut seen, &[], &job, r);
                    settle_repro(&mut out, &mut seen, &first)
                }
                _ => false,
            };
            match seen.repros.get(&0) {
                Some(b) if steady && usable_agent_script(b, &names) => {
                    script = Some(s.script.clone());
                    if out.repro_output_unstable {
                        if let Some((pinned, _)) = pin(&mut out, &mut seen, &s.script) {
                            script = Some(pinned);
                        }
                    }
                    out.reproduction = true;
                    out.repro_from = Some(format!("{}, written by {}", s.path, s.agent));
                    break;
                }
                _ => {
                    seen.repros.remove(&0);
                }
            }
        }
    }

    // The model's tests are kept only when they show the issue at the base commit.
    let model_kept: Vec<usize> = model_records
        .iter_mut()
        .enumerate()
        .filter_map(|(sample, r)| {
            keep_model_test(r, seen.model.get(&(0, sample)).copied()).then_some(sample)
        })
        .collect();
    out.model_test = model_records
        .get(model_kept.first().copied().unwrap_or(0))
        .cloned();
    if model_records.len() > 1 {
        out.model_test_samples = model_records;
    }

    // The candidates' own tests, twice at base: kept are the tests that fail (or err) in both
    // runs; a set with none left (it passes at base, or its file does not even collect there)
    // says nothing about the others.
    let base_written: Vec<(usize, What, u32)> = (0..probes.len())
        .flat_map(|p| [(0, What::Written(p), 0), (0, What::Written(p), 1)])
        .collect();
    let results = run_all(
        &base_written,
        &|j| run_job(j, &test_cmds, &[], script.as_deref()),
        settings.jobs,
    );
    for (job, r) in base_written.iter().zip(results) {
        absorb(&mut out, &mut seen, &[], job, r);
    }
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
    out.written_tests = written_kept
        .iter()
        .map(|(p, ids)| WrittenRecord {
            agent: probes[*p].agent.clone(),
            family: probes[*p].family.clone(),
            tests: ids.clone(),
        })
        .collect();

    // Phase 2, the candidates: only the files where some test passed both times at base in
    // time; the reproduction when it ran; the model's test when it was kept.
    let tests = &seen.tests;
    let useful = |k: usize| -> bool {
        let (Some(a), Some(b)) = (tests.get(&(0, k, 0)), tests.get(&(0, k, 1))) else {
            return false;
        };
        regression(a, b, a).stable > 0 && base_seconds.get(&k).is_some_and(|&s| s <= limit)
    };
    // A tree's useful files run together, packed into batches (one interpreter start each);
    // a batch of one file runs the file's own command, shared with the per-file cache.
    let mut jobs: Vec<(usize, What, u32)> = Vec::new();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut batch_cmds: Vec<String> = Vec::new();
    for (t, ks) in tree_files.iter().enumerate().skip(1) {
        let mut mine: Vec<(usize, f64, u8)> = ks
            .iter()
            .filter(|&&k| useful(k))
            .map(|&k| (k, base_seconds[&k], env.batch_key(&file_ids[k])))
            .collect();
        mine.sort_by_key(|m| m.0);
        for batch in pack(&mine, limit) {
            if let [k] = batch[..] {
                jobs.push((t, What::Tests(k), 0));
                continue;
            }
            let files: Vec<(&str, &[String])> = batch
                .iter()
                .map(|&k| (out.test_files[k].as_str(), file_ids[k].as_slice()))
                .collect();
            batch_cmds.push(env.test_command_files(&files));
            batches.push(batch);
            jobs.push((t, What::Batch(batches.len() - 1), 0));
        }
        if seen.repros.contains_key(&0) {
            jobs.push((t, What::Repro, 0));
        }
        for &sample in &model_kept {
            jobs.push((t, What::ModelTest(sample), 0));
        }
        for (p, _) in &written_kept {
            jobs.push((t, What::Written(*p), 0));
        }
    }
    out.slow_files = (0..out.test_files.len())
        .filter(|&k| base_seconds.get(&k).is_some_and(|&s| s > limit))
        .map(|k| out.test_files[k].clone())
        .collect();
    let results = run_all(
        &jobs,
        &|j| run_job(j, &test_cmds, &batch_cmds, script.as_deref()),
        settings.jobs,
    );
    for (job, r) in jobs.iter().zip(results) {
        absorb(&mut out, &mut seen, &batches, job, r);
    }

    // Phase 3: a test the candidate broke runs once more with it, narrowed to the file's broken
    // tests (as the base runs twice, to drop flaky tests), and counts as broken only when it
    // does not pass again: a test that failed by chance, or only after others in the same
    // process, is not held against the candidate.
    let mut confirm: Vec<(usize, What, u32)> = Vec::new();
    for (t, ks) in tree_files.iter().enumerate().skip(1) {
        for &k in ks {
            let Some((a, b, c)) = compared_runs(&seen.tests, t, k) else {
                continue;
            };
            let broken = regression(a, b, c).broken;
            if broken.is_empty() {
                continue;
            }
            let ids: Vec<String> = broken.into_iter().take(regress::MAX_IDS).collect();
            batch_cmds.push(env.test_command_selected(&out.test_files[k], &ids));
            batches.push(vec![k]);
            confirm.push((t, What::Batch(batches.len() - 1), 1));
        }
    }
    let results = run_all(
        &confirm,
        &|j| run_job(j, &test_cmds, &batch_cmds, script.as_deref()),
        settings.jobs,
    );
    for (job, r) in confirm.iter().zip(results) {
        absorb(&mut out, &mut seen, &batches, job, r);
    }
    let Results {
        tests,
        repros,
        model,
        written: written_runs,
        unread: _,
    } = seen;

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
    if let Some(r) = regression_of(0, &tree_files[0]) {
        out.stable_tests = r.stable;
        out.flaky_tests = r.flaky;
    }
    let repro_base = repros.get(&0).cloned();
    if out.reproduction || repro_base.is_some() {
        out.repro_base = repro_base.as_ref().map(describe);
    }
    let mut sigs: Vec<Option<Signature>> = Vec::new();
    for (i, t) in tree_of.iter().enumerate() {
        let Some(t) = *t else {
            sigs.push(None);
            continue;
        };
        let reg = regression_of(t, &own[i]);
        // The candidate's own debug output is not a change in behaviour.
        let rep = repros.get(&t).cloned().map(|o| match &repro_base {
            Some(b) => o.without_own_prints(&own_prints(cands[i].1), b),
            None => o,
        });
        let change = match (&rep, &repro_base) {
            (Some(c), Some(b)) => Some(repro_change(b, c, &task.problem_statement)),
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
            .map(|((p, _), &ok)| (probes[*p].family.clone(), ok))
            .collect();
        let behaviour = Behaviour {
            broken: reg.as_ref().map(|r| r.broken.clone()).unwrap_or_default(),
            tests_run: reg.as_ref().map_or(0, |r| r.stable),
            repro: change,
            repro_end: rep
                .as_ref()
                .filter(|_| change.is_some_and(|c| c != ReproChange::Same))
                .map(describe),
            model_test,
            written,
            tests_set_aside: aside[i].clone(),
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
