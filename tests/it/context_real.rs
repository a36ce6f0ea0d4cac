//! Issue-only localization and candidate context on a few real SWE-bench Lite instances.
//! Skips (saying so) when ../shared/data (or DEI_DATA) or the repositories (the bundles in
//! ../shared/repos, or DEI_REPOS) are absent.

use crate::support::common;
use common::*;
use dei::context::{build_with, edited_units, render, Related};
use dei::localize::issue::IssueRefs;
use dei::localize::search::{locate, FileIndex, LocateOptions};
use dei::model::repo::Snapshot;
use dei::model::task;
use dei::model::{Candidate, PatchView};
use dei::patch::{self, Mode};

const INSTANCES: [&str; 3] = [
    "psf__requests-2317",
    "pallets__flask-4045",
    "psf__requests-863",
];

#[test]
fn issue_only_localization_and_context_on_real_instances() {
    let Some(data) = shared_data() else {
        return skip("needs ../shared/data (or DEI_DATA)");
    };
    let tasks = task::load_tasks(&data.join("swebench_lite/test.jsonl")).unwrap();
    let mut ran = 0;
    let mut hits = 0;
    for id in INSTANCES {
        let t = tasks
            .iter()
            .find(|t| t.instance_id == id)
            .expect("instance in Lite");
        let Some(repo) = real_repo(&t.repo) else {
            skip(&format!(
                "{id}: needs {}: ../shared/repos (bundles) or DEI_REPOS",
                t.repo
            ));
            continue;
        };
        let snap = Snapshot::open(&repo, &t.base_commit).unwrap();
        let files = FileIndex::from_snapshot(&snap).unwrap();
        assert!(files.files.len() > 5);
        let gold = Candidate {
            instance_id: id.into(),
            agent: "gold".into(),
            patch: t.gold_patch.clone().unwrap(),
            resolved: Some(true),
            origin: Default::default(),
        };
        let needed = patch::paths_needed(&gold);
        let base = snap.read_all(needed.iter().map(String::as_str)).unwrap();
        let view = patch::rebuild(&gold, &base, Mode::Tolerant);
        assert!(view.error.is_none());
        let loc = locate(&t.problem_statement, &files, &LocateOptions::default());
        assert!(!loc.files.is_empty() && !loc.functions.is_empty());
        let top5: Vec<&str> = loc.files.iter().take(5).map(|f| f.path.as_str()).collect();
        if view.paths().iter().any(|p| top5.contains(p)) {
            hits += 1;
        }
        // The gold patch's own context: edited definitions first, within budget, rendered with lines.
        let refs = IssueRefs::new(&t.problem_statement);
        let others: [&PatchView; 1] = [&view];
        let ctx = build_with(
            &view,
            t,
            2000,
            &Related {
                refs: Some(&refs),
                others: &others,
                repo: Some(&files),
                located: None,
                located_by: None,
            },
        );
        let units = edited_units(&view);
        assert!(!units.is_empty());
        assert!(!ctx.snippets.is_empty() && ctx.snippets[0].score >= 1000.0);
        assert_eq!(ctx.new_parse_errors, 0, "gold patches parse");
        let text = render(&ctx);
        let first = &ctx.snippets[0];
        assert!(text.contains(&format!(
            "### {}:{}-{}",
            first.path, first.lines.start, first.lines.end
        )));
        ran += 1;
    }
    if ran == 0 {
        return skip("no repository for the sampled instances");
    }
    assert!(
        hits * 3 >= ran * 2,
        "issue-only top-5 should find a gold file on most of these: {hits}/{ran}"
    );
}
