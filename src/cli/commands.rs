//! What each command does with its flags: a thin layer over the library that prints what it
//! returns and turns failures the user must know about into a non-zero exit.

use super::args::*;
use dei::rank::pipeline::{IssueSource, RankRequest};
use dei::review::offline::Offline;
use std::path::PathBuf;
use std::sync::Arc;

/// The issue one command works on: `--issue ID --tasks FILE`, a tasks file holding one task
/// (`--tasks FILE` alone), or `--issue-file FILE --commit SHA`. `Ok(None)`: none was named;
/// an error when the tasks file cannot be read or holds several tasks (which one?).
pub fn issue_source(
    id: Option<String>,
    tasks: Option<PathBuf>,
    text: IssueTextArgs,
) -> anyhow::Result<Option<IssueSource>> {
    Ok(match (id, tasks, text.issue_file, text.commit) {
        (Some(id), Some(file), None, _) => Some(IssueSource::Tasks { file, id }),
        (None, _, Some(file), Some(commit)) => Some(IssueSource::Text { file, commit }),
        (None, Some(file), None, _) => {
            let all = dei::model::task::load_tasks(&file)?;
            match all.as_slice() {
                [one] => Some(IssueSource::Tasks {
                    id: one.instance_id.clone(),
                    file,
                }),
                _ => anyhow::bail!(
                    "{} holds {} tasks: name one with --issue ID (the first is {}), or rank them all with --all",
                    file.display(),
                    all.len(),
                    all.first().map_or("-", |t| t.instance_id.as_str())
                ),
            }
        }
        _ => None,
    })
}

pub fn generate(args: GenerateArgs) -> anyhow::Result<()> {
    use dei::generate::run as gen;
    check_outputs(&[Some(args.out.as_path())])?;
    let selection = selection(
        args.all,
        args.instance_ids.as_deref(),
        args.issue,
        &args.tasks,
    )?;
    let req = gen::GenerateRequest {
        tasks: args.tasks,
        selection,
        repo: args.place.repo,
        repos: args.place.repos,
        strategies: gen::parse_kinds(&args.strategies)?,
        samples: args.samples,
        temperatures: args.temperatures,
        max_files: args.max_files,
        test_cmd: args.test_cmd,
        test_timeout: std::time::Duration::from_secs_f64(args.test_timeout),
        out: args.out,
        jobs: args.jobs,
        dry_run: args.llm.spend.dry_run,
        prompt_dir: args.llm.prompt_dir.clone(),
    };
    let report = gen::generate(&req, &args.llm.options())?;
    if let Some(u) = &report.usage {
        eprintln!("{}", gen::usage_line(u));
    }
    if req.dry_run {
        eprintln!(
            "dry run: nothing written; each strategy stops at its first prompt not in the cache"
        );
        return Ok(());
    }
    eprintln!(
        "{} issue(s) worked on, {} (issue, strategy) pair(s) already in {}, {} candidate(s) appended, {} issue(s) skipped",
        report.issues, report.already_done, req.out.display(), report.written, report.failed.len()
    );
    if report.issues > 0 && report.failed.len() == report.issues {
        anyhow::bail!("no issue could be worked on (see the reasons above)");
    }
    // Work was asked for and none came of it: every strategy's calls failed, or no reply held
    // an edit that applies.
    if report.issues > report.failed.len() && report.written == 0 {
        anyhow::bail!(
            "no candidate was written for the {} issue(s) worked on (see the notes above: the model's calls failed or no reply held a usable edit)",
            report.issues - report.failed.len()
        );
    }
    Ok(())
}

/// Who judges an issue's candidates: the committee, the localization re-ranker `--llm-locate`
/// asks for, and the LLM committee's engine (shared with `--exec-llm-repro`).
pub struct Judging {
    pub committee: Box<dyn dei::review::Committee>,
    pub relocator: Option<Arc<dei::localize::rerank::Relocator>>,
    pub engine: Option<Arc<dei::llm::runner::Engine>>,
}

/// The LLM committee when one is configured, else the offline committee (said in one line).
pub fn committee(
    llm: &dei::llm::config::LlmOptions,
    offline_weights: Option<&str>,
) -> anyhow::Result<Judging> {
    Ok(match dei::review::llm::LlmCommittee::from_options(llm)? {
        Some(llm) => {
            let relocator = llm.relocator().map(Arc::new);
            let engine = Some(Arc::clone(&llm.engine));
            Judging {
                committee: Box::new(llm),
                relocator,
                engine,
            }
        }
        None => {
            eprintln!("note: no LLM configured; using the offline committee (agreement between candidates and static checks)");
            let weights = match offline_weights {
                Some(spec) => dei::review::offline::weights::load(spec)?,
                None => Default::default(),
            };
            Judging {
                committee: Box::new(Offline::new(weights)),
                relocator: None,
                engine: None,
            }
        }
    })
}

/// The committee and the writer of the model's reproduction test, from the LLM flags. `--dry-run`
/// with no `--llm` but a model named by `--exec-llm-repro=` shows that model's prompts: the
/// offline committee ranks, and only the writer runs dry.
pub fn judging_and_writer(
    exec: &ExecArgs,
    llm: &dei::llm::config::LlmOptions,
    offline_weights: Option<&str>,
) -> anyhow::Result<(Judging, WriterAndEngine)> {
    let no_committee_model = llm.llm.as_deref().is_none_or(|m| m.trim().is_empty());
    let writer_named = exec
        .exec_llm_repro
        .as_deref()
        .is_some_and(|m| !m.trim().is_empty());
    let judging = if llm.dry_run && no_committee_model && writer_named {
        let offline = dei::llm::config::LlmOptions {
            dry_run: false,
            ..llm.clone()
        };
        committee(&offline, offline_weights)?
    } else {
        committee(llm, offline_weights)?
    };
    let writer = test_writer(exec, llm, judging.engine.as_ref())?;
    Ok((judging, writer))
}

/// The writer of the model's reproduction test, and its engine when it is not the committee's.
pub type WriterAndEngine = (
    Option<Arc<dei::exec::llm_repro::TestWriter>>,
    Option<Arc<dei::llm::runner::Engine>>,
);

/// The writer of the model's reproduction test `--exec-llm-repro` asks for (`None` without
/// it), and its engine when it is not the committee's (its usage is then reported apart).
/// The model is the committee's (`--llm`) unless the flag names another; the other LLM flags
/// apply to it either way.
pub fn test_writer(
    exec: &ExecArgs,
    llm: &dei::llm::config::LlmOptions,
    committee_engine: Option<&Arc<dei::llm::runner::Engine>>,
) -> anyhow::Result<WriterAndEngine> {
    let Some(spec) = exec.exec_llm_repro.as_deref().map(str::trim) else {
        return Ok((None, None));
    };
    let same = spec.is_empty() || llm.llm.as_deref().map(str::trim) == Some(spec);
    let (engine, own) = match committee_engine.filter(|_| same) {
        Some(e) => (Arc::clone(e), None),
        None if spec.is_empty() => anyhow::bail!(
            "--exec-llm-repro needs a model: add --llm PROVIDER:MODEL (the committee's model writes the test), or name one with --exec-llm-repro=PROVIDER:MODEL (the offline committee then ranks)"
        ),
        None => {
            let opts = dei::llm::config::LlmOptions {
                llm: Some(spec.to_string()),
                flag: "--exec-llm-repro=",
                ..llm.clone()
            };
            let named = opts.named(spec);
            let e = opts
                .engine()
                .map_err(|e| {
                    // the model's own errors name the flag already; the rest (the response
                    // cache) are said of it here
                    let e = format!("{e:#}");
                    if e.starts_with(&named) {
                        anyhow::anyhow!(e)
                    } else {
                        anyhow::anyhow!("{named}: {e}")
                    }
                })?
                .ok_or_else(|| anyhow::anyhow!("{named}: write PROVIDER:MODEL"))?;
            (Arc::clone(&e), Some(e))
        }
    };
    let writer = dei::exec::llm_repro::TestWriter::new(engine, llm.prompt_dir.as_deref())?
        .with_samples(exec.exec_llm_repro_samples);
    Ok((Some(Arc::new(writer)), own))
}

/// The usage line of the model that wrote reproduction tests, when it is not the committee's.
fn report_test_writer(own: Option<&Arc<dei::llm::runner::Engine>>) {
    if let Some(e) = own {
        eprintln!(
            "model-written tests: {}",
            dei::generate::run::usage_line(&e.totals())
        );
    }
}

/// The issues a command of many works on: `--all`, the ids of `--instance-ids FILE` (each
/// checked against the tasks file before any work), or the `--issue` ids given.
pub fn selection(
    all: bool,
    list: Option<&std::path::Path>,
    issues: Vec<String>,
    tasks: &std::path::Path,
) -> anyhow::Result<dei::model::task::Selection> {
    use dei::model::task::{self, Selection};
    Ok(match (all, list) {
        (true, _) => Selection::All,
        (false, Some(list)) => {
            Selection::Ids(task::ids_in_tasks(list, &task::load_tasks(tasks)?, tasks)?)
        }
        (false, None) => Selection::Ids(issues),
    })
}

/// Write the predictions of one or many rankings, and say what was written.
fn write_predictions(
    ps: &dei::rank::predictions::Predictions,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    ps.write(path)?;
    eprintln!("{}", ps.summary_line(path));
    Ok(())
}

pub fn rank(mut args: RankArgs) -> anyhow::Result<()> {
    if args.all
        || args.instance_ids.is_some()
        || args.issue.len() > 1
        || args.run_dir.is_some()
        || args.shard.is_some()
    {
        return rank_many(args);
    }
    let Some(issue) = issue_source(args.issue.pop(), args.tasks, args.text)? else {
        anyhow::bail!("say which issue to rank: --issue ID --tasks FILE (--tasks alone when it holds one task), or --issue-file FILE --repo PATH --commit SHA");
    };
    let req = RankRequest {
        candidates: args.candidates,
        issue,
        repo: args.place.repo,
        repos: args.place.repos,
        strict: args.strict,
        context_tokens: args.context_tokens,
        max_patch_bytes: args.max_patch_bytes,
        relocator: None,
        naming: args.names.naming()?,
        exec: None,
    };
    check_outputs(&[
        args.json.as_deref(),
        args.predictions.predictions.as_deref(),
    ])?;
    let llm = args.llm.options();
    let (judging, (writer, own)) =
        judging_and_writer(&args.exec, &llm, args.offline_weights.as_deref())?;
    let req = dei::rank::pipeline::RankRequest {
        relocator: judging.relocator,
        exec: args.exec.settings(None, writer)?,
        ..req
    };
    if req.exec.is_some() {
        super::quit_on_signal();
    }
    let result = dei::rank::pipeline::rank(&req, judging.committee.as_ref());
    report_test_writer(own.as_ref());
    let result = result?;
    emit(
        args.json.as_deref(),
        || dei::rank::report::json(&result),
        || dei::rank::report::table(&result, terminal_width()),
    )?;
    if let Some(path) = args.predictions.predictions.as_deref() {
        let mut ps = dei::rank::predictions::Predictions::default();
        ps.add(
            &result.instance_id,
            serde_json::to_value(&result)
                .as_ref()
                .map_err(ToString::to_string),
            &args.predictions.predictions_name,
        );
        write_predictions(&ps, path)?;
    }
    if let Some(why) = result.unreviewed_reason() {
        anyhow::bail!(
            "{}: not reviewed: {why}; no candidate was picked",
            result.instance_id
        );
    }
    // `--exec` was asked for and nothing ran: the ranking stands, but without the evidence the
    // user asked for, so the exit status says so (a run of many issues counts these in its
    // summary instead).
    if let Some(why) = result.exec.as_ref().and_then(|e| e.error.as_deref()) {
        anyhow::bail!(
            "{}: --exec ran nothing, so the ranking above has no execution evidence: {}",
            result.instance_id,
            why.lines().next().unwrap_or_default()
        );
    }
    Ok(())
}

/// The width to fit tables to: `COLUMNS` when set, else the terminal's; `None` when
/// stdout is not a terminal (a file or pipe gets every line in full).
pub fn terminal_width() -> Option<usize> {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
    {
        return Some(w);
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| cols as usize)
}

/// Every output file must be writable before any work starts: its folder exists, and it is
/// not itself a folder (`-` is stdout).
pub fn check_outputs(paths: &[Option<&std::path::Path>]) -> anyhow::Result<()> {
    for p in paths.iter().flatten() {
        if p.as_os_str() == "-" {
            continue;
        }
        if p.is_dir() {
            anyhow::bail!(
                "cannot write {}: it is a folder\n  hint: name a file, e.g. {}",
                p.display(),
                p.join("result.json").display()
            );
        }
        let parent = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !parent.is_dir() {
            anyhow::bail!(
                "cannot write {}: folder {} does not exist\n  hint: create it first (mkdir -p '{}'), or write elsewhere; nothing was run",
                p.display(),
                parent.display(),
                parent.display()
            );
        }
    }
    Ok(())
}

pub fn eval(args: EvalArgs) -> anyhow::Result<()> {
    use dei::metrics::{bootstrap::Bootstrap, eval, html, text};
    check_outputs(&[args.json.as_deref(), args.html.as_deref()])?;
    let req = eval::EvalRequest {
        candidates: args.candidates,
        labels: args.labels,
        tasks: args.tasks,
        agents: args.agents,
        scores: args.scores,
        naming: args.names.naming()?,
        baseline: args.baseline,
        scored_only: args.scored_only,
        instance_ids: args.instance_ids,
        coverage: args.coverage,
        options: eval::Options {
            orders: args.order,
            shuffles: args.shuffles,
            seed: args.seed,
            top_n: args.top_n,
            bootstrap: Bootstrap {
                resamples: args.bootstrap,
                seed: args.seed,
                level: args.confidence,
            },
        },
    };
    let report = eval::run(&req)?;
    let write = |p: &std::path::Path, s: String| {
        std::fs::write(p, s).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))
    };
    if let Some(p) = args.html.as_deref() {
        write(p, html::report(&report))?;
    }
    emit(
        args.json.as_deref(),
        || Ok(serde_json::to_string_pretty(&report)?),
        || text::table(&report),
    )
}

pub fn rank_many(args: RankArgs) -> anyhow::Result<()> {
    let Some(tasks) = args.tasks else {
        anyhow::bail!("ranking many issues needs --tasks FILE (SWE-bench task records)");
    };
    let Some(run_dir) = args.run_dir else {
        anyhow::bail!("ranking many issues needs --run-dir DIR: results stream there, and rerunning the same command resumes");
    };
    if args.text.issue_file.is_some() {
        anyhow::bail!(
            "--issue-file ranks one plain-text issue; drop --run-dir/--shard/--all to use it"
        );
    }
    check_outputs(&[
        args.json.as_deref(),
        args.predictions.predictions.as_deref(),
    ])?;
    let selection = selection(args.all, args.instance_ids.as_deref(), args.issue, &tasks)?;
    if matches!(&selection, dei::model::task::Selection::Ids(ids) if ids.is_empty()) {
        anyhow::bail!(
            "say which issues to rank: --all, --instance-ids FILE, or --issue ID (repeatable)"
        );
    }
    let llm = args.llm.options();
    let (judging, (writer, own)) =
        judging_and_writer(&args.exec, &llm, args.offline_weights.as_deref())?;
    let exec = args.exec.settings(Some(&run_dir), writer)?;
    let req = dei::rank::run::RunRequest {
        candidates: args.candidates,
        naming: args.names.naming()?,
        tasks,
        selection,
        repo: args.place.repo,
        repos: args.place.repos,
        strict: args.strict,
        context_tokens: args.context_tokens,
        max_patch_bytes: args.max_patch_bytes,
        run_dir,
        shard: args.shard,
        retry_errors: args.retry_errors,
        stop: Some(super::stop_on_ctrl_c()),
        relocator: judging.relocator,
        exec,
    };
    let report = dei::rank::run::run(&req, judging.committee.as_ref());
    report_test_writer(own.as_ref());
    let report = report?;
    for line in dei::candidates::problem_lines(&report.problems, 10) {
        eprintln!("input problem: {line}");
    }
    if report.summary.selected == 0 && args.all {
        anyhow::bail!(
            "no candidates found in {}{}\n  hint: pass SWE-bench prediction files (.json/.jsonl records with instance_id and model_patch) or folders of <agent>/<instance_id>.diff files",
            req.candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if report.problems.is_empty() {
                String::new()
            } else {
                format!(" ({} input problem(s) above)", report.problems.len())
            }
        );
    }
    if report.torn_bytes > 0 {
        eprintln!(
            "note: cut a torn last journal line ({} bytes) left by an interrupted run",
            report.torn_bytes
        );
    }
    eprintln!(
        "{} issues run now, {} already in {}",
        report.ran,
        report.skipped,
        req.run_dir.display()
    );
    if let Some(n) = report.record_changed {
        let order = report.picked_by_record.map_or(String::new(), |k| {
            format!("; on {k} the pick is the healthy candidate whose agent has the better record, where the scores alone pick otherwise")
        });
        eprintln!(
            "execution record (how each agent's runs went on the run's other issues): {n} issue ranking(s) updated{order}"
        );
    }
    write_summary(&report.summary, args.json.as_deref())?;
    if let Some(path) = args.predictions.predictions.as_deref() {
        let ids: std::collections::HashSet<&str> = report
            .summary
            .rows
            .iter()
            .map(|r| r.instance_id.as_str())
            .collect();
        let ps = dei::rank::predictions::Predictions::of_run(
            &req.run_dir,
            &|id| ids.contains(id),
            &args.predictions.predictions_name,
        )?;
        write_predictions(&ps, path)?;
    }
    if report.interrupted {
        return Err(super::Interrupted.into());
    }
    failed_issues(&report.summary)
}

/// Exit non-zero when any issue was not ranked, naming them by kind.
pub fn failed_issues(summary: &dei::rank::run::Summary) -> anyhow::Result<()> {
    match not_ranked_message(summary) {
        None => Ok(()),
        Some(msg) => anyhow::bail!(
            "{msg}\n  hint: fix the cause (see the summary above), then rerun with --retry-errors"
        ),
    }
}

/// "3 of 40 issues were not ranked (2 missing_repo, 1 unreviewed)", with the unreviewed
/// named; `None` when every issue was ranked.
fn not_ranked_message(summary: &dei::rank::run::Summary) -> Option<String> {
    let failed: usize = summary.errors.values().sum();
    if failed == 0 {
        return None;
    }
    let kinds: Vec<String> = summary
        .errors
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let mut msg = format!(
        "{failed} of {} issues were not ranked ({})",
        summary.selected,
        kinds.join(", ")
    );
    let unreviewed: Vec<&str> = summary
        .rows
        .iter()
        .filter(|r| r.status == "unreviewed")
        .map(|r| r.instance_id.as_str())
        .collect();
    if !unreviewed.is_empty() {
        msg.push_str(&format!(
            "\n  not reviewed: {}{}",
            unreviewed
                .iter()
                .take(20)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            if unreviewed.len() > 20 { ", …" } else { "" }
        ));
    }
    Some(msg)
}

pub fn write_summary(
    summary: &dei::rank::run::Summary,
    json: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    emit(
        json,
        || Ok(serde_json::to_string_pretty(summary)?),
        || summary.table(50),
    )
}

/// Print `table`, and write the JSON to `json`; `-` prints the JSON on stdout instead.
pub fn emit(
    json: Option<&std::path::Path>,
    to_json: impl FnOnce() -> anyhow::Result<String>,
    table: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    match json {
        Some(p) if p.as_os_str() == "-" => println!("{}", to_json()?.trim_end_matches('\n')),
        Some(p) => {
            std::fs::write(p, to_json()?)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
            print!("{}", table());
        }
        None => print!("{}", table()),
    }
    Ok(())
}

pub fn merge(args: MergeArgs) -> anyhow::Result<()> {
    check_outputs(&[
        args.json.as_deref(),
        args.predictions.predictions.as_deref(),
    ])?;
    let merged = dei::rank::run::merge(&args.run_dirs)?;
    for w in &merged.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(out) = &args.out {
        dei::rank::run::summary::write_merged(&merged, &args.run_dirs[0], out)?;
    }
    write_summary(&merged.summary, args.json.as_deref())?;
    if let Some(path) = args.predictions.predictions.as_deref() {
        let ps = dei::rank::predictions::Predictions::from_outcomes(
            &merged.outcomes,
            &args.predictions.predictions_name,
        );
        write_predictions(&ps, path)?;
    }
    // The merge itself succeeded: issues its runs did not rank are theirs to rerun.
    if let Some(msg) = not_ranked_message(&merged.summary) {
        eprintln!(
            "note: {msg}\n  hint: rerun the run directory that holds them (the same dei rank command with --retry-errors), then merge again"
        );
    }
    Ok(())
}

pub fn locate(a: LocateArgs) -> anyhow::Result<()> {
    check_outputs(&[a.json.as_deref()])?;
    let issues: Vec<IssueSource> = match (&a.instance_ids, &a.tasks) {
        (Some(list), Some(tasks)) => {
            let all = dei::model::task::load_tasks(tasks)?;
            dei::model::task::ids_in_tasks(list, &all, tasks)?
                .into_iter()
                .map(|id| IssueSource::Tasks {
                    file: tasks.clone(),
                    id,
                })
                .collect()
        }
        _ => match issue_source(a.issue.clone(), a.tasks.clone(), a.text)? {
            Some(one) => vec![one],
            None => anyhow::bail!(
                "which issue? pass --tasks FILE --issue ID (or --instance-ids FILE), or --issue-file FILE --commit SHA --repo PATH"
            ),
        },
    };
    let engine = a.llm.options().engine()?;
    let prompts = dei::llm::prompts::Prompts::load(a.llm.prompt_dir.as_deref())?;
    let model = engine
        .as_ref()
        .map(|e| dei::llm::model::EngineModel::new(std::sync::Arc::clone(e), "locate"));
    let with = model.as_ref().map(|m| dei::localize::located::WithModel {
        model: m,
        prompts: &prompts,
        label: a.llm.llm.clone().unwrap_or_default(),
    });
    let many = a.instance_ids.is_some();
    let (mut json_lines, mut tables) = (String::new(), String::new());
    for issue in &issues {
        let task = issue.load()?;
        let repo_path = dei::model::repo::find_repo(
            a.place.repo.as_deref(),
            a.place.repos.as_deref(),
            &task.repo,
        )?;
        let located =
            dei::localize::located::locate_issue(&task, &repo_path, a.top, with.as_ref())?;
        if many {
            json_lines.push_str(&serde_json::to_string(&located)?);
            json_lines.push('\n');
            tables.push_str(&format!("== {}\n", task.instance_id));
        } else {
            json_lines = serde_json::to_string_pretty(&located)? + "\n";
        }
        tables.push_str(&dei::localize::located::render(&located));
    }
    if let Some(e) = &engine {
        eprintln!("{}", dei::generate::run::usage_line(&e.totals()));
    }
    emit(a.json.as_deref(), || Ok(json_lines), || tables)
}
