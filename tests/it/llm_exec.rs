//! The LLM committee's side of execution evidence: the prompt's execution section (and its
//! absence without `--exec`), and `--review-once` (one representative per group) against the
//! in-process mock server.

use crate::support::llm_mock;

use dei::llm::config::LlmOptions;
use dei::llm::prompts::Prompts;
use dei::llm::Format;
use dei::model::{Applies, Behaviour, ExpectedShown, ModelTest, ReproChange, Review};
use dei::review::llm::LlmCommittee;
use dei::review::prompts::{exec_views, repro_view, PromptCandidate};
use dei::review::rubric::Rubric;
use dei::review::{Committee, IssueBundle, Prepared};
use llm_mock::{bundle, Mock};
use std::path::Path;
use std::time::Duration;

fn args(base: &str, cache: &Path, selector: &str, once: bool) -> LlmOptions {
    LlmOptions {
        llm: Some("openai-compatible:m".into()),
        base_url: Some(base.into()),
        api_key_env: Some("TEST_KEY".into()),
        selector: selector.into(),
        samples: 1,
        max_tokens: 512,
        concurrency: 4,
        retries: 1,
        backoff_ms: 10,
        timeout: 5.0,
        cache: cache.to_path_buf(),
        review_once: once,
        ..Default::default()
    }
}

fn committee(a: &LlmOptions) -> LlmCommittee {
    let env = |k: &str| (k == "TEST_KEY").then(|| "sk-test".to_string());
    LlmCommittee::new(a.resolve(&env).unwrap().unwrap()).unwrap()
}

fn behaviour(broken: &[&str], repro: ReproChange, class: usize) -> Behaviour {
    Behaviour {
        broken: broken.iter().map(|s| s.to_string()).collect(),
        rewritten: Vec::new(),
        tests_run: 12,
        repro: Some(repro),
        model_test: None,
        written: Default::default(),
        wrote: None,
        tests_set_aside: Vec::new(),
        class: Some(class),
        repro_end: None,
        repro_output: None,
        expected: None,
        error: None,
    }
}

/// Candidates 0..4 of the mock bundle, with candidate 3 the same change as candidate 1 up to
/// whitespace, plus an empty candidate and another empty one (both scored by rule).
fn with_duplicates(id: &str) -> IssueBundle {
    let mut b = bundle(id, 4, Some(2));
    let one = b.candidates[1].clone();
    let three = &mut b.candidates[3];
    three.candidate.patch = one.candidate.patch.replace("line_20 = 1", "line_20  =  1");
    three.view = one.view.clone();
    for agent in ["empty-a", "empty-b"] {
        let mut e: Prepared = b.candidates[0].clone();
        e.candidate.agent = agent.into();
        e.candidate.patch = String::new();
        e.view.applies = Applies::Empty;
        e.view.files.clear();
        b.candidates.push(e);
    }
    b
}

fn by_agent<'a>(rs: &'a [Review], agent: &str) -> &'a Review {
    rs.iter()
        .find(|r| r.candidate.starts_with(&format!("{agent}/")))
        .unwrap()
}

#[test]
fn without_behaviour_the_prompts_are_what_they_were_and_with_it_they_say_what_ran() {
    let prompts = Prompts::load(None).unwrap();
    // The built-in templates with their execution parts cut out: what they were before.
    let dir = tempfile::tempdir().unwrap();
    for name in ["candidate.j2", "pointwise.j2", "listwise.j2", "pairwise.j2"] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("prompts")
                .join(name),
        )
        .unwrap();
        // The reproduction is shown only with execution evidence; cut its include too.
        let text = text.replace("{% include \"reproduction.j2\" %}\n", "");
        let old = match text.find("{% if candidate.exec %}") {
            Some(at) => text[..at].to_string(),
            None => {
                let start = text.find("{% if executed %}").expect(name);
                let end = start + text[start..].find("{% endif %}\n").unwrap() + 12;
                format!("{}{}", &text[..start], &text[end..])
            }
        };
        assert_ne!(old, text, "{name} has an execution part");
        std::fs::write(dir.path().join(name), old).unwrap();
    }
    let before = Prompts::load(Some(dir.path())).unwrap();

    let mut b = bundle("e-1", 3, Some(0));
    let rubric = Rubric::default_rubric();
    let render = |p: &Prompts, b: &IssueBundle| -> Vec<String> {
        let views = exec_views(b);
        let repro = repro_view(b);
        let repro = repro.as_ref();
        let cs: Vec<PromptCandidate> = b
            .candidates
            .iter()
            .zip(&views)
            .map(|(c, v)| PromptCandidate::new(c, "1", &Default::default()).with_exec(v.clone()))
            .collect();
        let mut out = Vec::new();
        for format in [Format::Json, Format::Tags] {
            out.push(
                p.pointwise(&b.task, repro, &cs[0], &rubric, format)
                    .unwrap()
                    .user,
            );
            out.push(
                p.listwise(&b.task, repro, &cs, &rubric, format)
                    .unwrap()
                    .user,
            );
            out.push(
                p.pairwise(&b.task, repro, &cs[0], &cs[1], &rubric, format)
                    .unwrap()
                    .user,
            );
        }
        out
    };
    let plain = render(&prompts, &b);
    assert_eq!(
        plain,
        render(&before, &b),
        "without behaviour nothing changes"
    );
    // A reproduction without any candidate's behaviour (no `--exec` evidence) is not shown.
    b.repro_code = Some("print(f(2))".into());
    b.repro_output = Some("3\n".into());
    assert_eq!(plain, render(&prompts, &b), "no behaviour, no reproduction");
    b.repro_code = None;
    b.repro_output = None;
    assert!(plain.iter().all(|t| !t.contains("What running it showed")));

    // With execution evidence: what ran and what changed, and the instructions ask to use it.
    let many: Vec<String> = (1..=13)
        .map(|k| format!("tests/test_mod.py::test_{k}"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    b.candidates[2].candidate.agent = "other-agent".into();
    b.behaviour = vec![
        Some(behaviour(&many, ReproChange::Changed, 0)),
        Some(behaviour(&[], ReproChange::Same, 1)),
        Some(behaviour(&many, ReproChange::Changed, 0)),
    ];
    b.behaviour[0].as_mut().unwrap().tests_set_aside = vec!["tests/test_mod.py".into()];
    b.behaviour[0].as_mut().unwrap().expected = Some(ExpectedShown { shown: 1, of: 2 });
    b.behaviour[0].as_mut().unwrap().rewritten = vec!["tests/test_mod.py::test_1".into()];
    let shown = render(&prompts, &b);
    assert!(shown != plain, "the evidence changes the prompts");
    let point = &shown[0];
    assert!(
        point.contains("The patch also edits tests/test_mod.py; those edits were set aside, so the tests ran as they were at the base commit.\n"),
        "{point}"
    );
    assert_eq!(
        shown[2].matches("were set aside").count(),
        1,
        "only the candidate with set-aside edits says so"
    );
    let rewrites = "The patch rewrites 1 of them to the behaviour its fix gives";
    assert!(point.contains(rewrites), "{point}");
    assert_eq!(
        shown[2].matches(rewrites).count(),
        1,
        "only the candidate that rewrites a test it breaks says so"
    );
    for want in [
        "#### What running it showed",
        "Existing tests: 12 tests that passed twice at the base commit ran with this patch.",
        "It breaks 13 of them:\n- tests/test_mod.py::test_1\n",
        "- tests/test_mod.py::test_10\n- … and 3 more\n",
        "The issue's reproduction behaves differently from the base commit with this patch.",
        "Of the 2 values the issue says its code should show (values the base commit's run does not show), the reproduction shows 1 with this patch",
        "Candidates from 1 other agent family behave the same on everything that ran.",
        "in location, patch and conflicts, use what ran and what\nchanged",
    ] {
        assert!(point.contains(want), "missing {want:?} in:\n{point}");
    }
    assert!(
        !point.contains("test_11"),
        "at most ten broken tests are named"
    );
    let list = &shown[1];
    assert!(
        list.contains("It breaks none of them.")
            && list.contains("behaves exactly as at the base commit")
    );
    assert!(list.contains("No candidate from another agent family behaves the same"));
    assert_eq!(
        list.matches("the issue says its code should show").count(),
        1,
        "only the candidate with such values gets a line about them"
    );
    assert!(list.contains("The candidates were run"));
    assert!(shown[2].contains("The candidates were run"));
    assert!(
        shown
            .iter()
            .all(|t| !t.contains("Not every existing test ran")),
        "every test file ran whole: no line about time limits"
    );
    // Test files cut for time are said to every candidate that ran.
    b.tests_in_part = vec!["tests/test_big.py ran only its 2 tests naming the edited code".into()];
    let cut = render(&prompts, &b);
    assert_eq!(
        cut[1].matches("Not every existing test ran, to keep within the time limits: tests/test_big.py ran only its 2 tests naming the edited code. A test this patch breaks there would not show here.\n").count(),
        3,
        "{}",
        cut[1]
    );
    b.tests_in_part.clear();
    assert!(
        shown.iter().all(|t| !t.contains("written by a model")),
        "no model-written test, no line about one"
    );

    // Another exception at the statement that failed at base: the prompt says the reported
    // failure is still there.
    let was = b.behaviour[1].clone();
    if let Some(x) = b.behaviour[1].as_mut() {
        x.repro = Some(ReproChange::StillFails);
    }
    let still = render(&prompts, &b);
    let want = "The issue's reproduction still fails at the statement where it failed at the base commit, with another exception: the reported failure is still there.";
    assert!(
        still[1].contains(want),
        "missing {want:?} in:\n{}",
        still[1]
    );
    assert!(!still[1].contains("behaves exactly as at the base commit"));

    // The reproduction now fails in code that ran at base (an earlier statement raises, or
    // it no longer ends): the prompt says so, whatever the base run did after it.
    if let Some(x) = b.behaviour[1].as_mut() {
        x.repro = Some(ReproChange::Broken);
    }
    let broken = render(&prompts, &b);
    let want = "The issue's reproduction now fails (an exception, or the time limit) in code the base commit ran without an error.";
    assert!(
        broken[1].contains(want),
        "missing {want:?} in:\n{}",
        broken[1]
    );
    b.behaviour[1] = was;

    // An agent's reproduction script stood in for the issue's code: the prompt says so,
    // without naming the agent.
    b.repro_by_agent = true;
    let by_agent = render(&prompts, &b);
    let point = &by_agent[0];
    let want = "A reproduction script written by one of the candidate agents (the issue shows no runnable code) behaves differently from the base commit with this patch.";
    assert!(point.contains(want), "missing {want:?} in:\n{point}");
    assert!(!point.contains("The issue's reproduction"), "{point}");
    assert!(by_agent.iter().all(|t| !t.contains("other-agent")));
    b.repro_by_agent = false;

    // What ran is shown: the reproduction's code and base output once, above the candidates,
    // and what it printed with each candidate whose run differs.
    assert!(shown
        .iter()
        .all(|t| !t.contains("The reproduction that ran")));
    b.repro_code = Some("from pkg.mod import f\nf(2)\n".into());
    b.repro_output = Some("[dei-repro] statement 2 raised ValueError: bad\n".into());
    b.behaviour[0].as_mut().unwrap().repro_output = Some("4\n".into());
    let code = render(&prompts, &b);
    for t in &code {
        assert_eq!(t.matches("## The reproduction that ran").count(), 1, "{t}");
        assert!(t.contains("The issue's code, made runnable"), "{t}");
        assert!(t.contains("```\nfrom pkg.mod import f\nf(2)\n```\n"), "{t}");
        assert!(
            t.contains("At the base commit it printed (temporary paths, addresses and line numbers hidden):\n```\n[dei-repro] statement 2 raised ValueError: bad\n```\n"),
            "{t}"
        );
        assert!(
            t.find("## The reproduction that ran")
                < t.find("## The candidate").or(t.find("## Two candidate")),
            "above the candidates: {t}"
        );
    }
    // Pointwise shows candidate 0 (its output), listwise all three (one output), pairwise 0 and 1.
    for t in &code {
        assert_eq!(
            t.matches("With this patch it printed:\n```\n4\n```\n")
                .count(),
            1,
            "{t}"
        );
    }
    b.repro_by_agent = true;
    let by_agent = render(&prompts, &b);
    assert!(by_agent[0].contains("One of the candidate agents wrote this script"));
    b.repro_by_agent = false;
    b.repro_code = None;
    b.repro_output = None;
    b.behaviour[0].as_mut().unwrap().repro_output = None;

    // Tests another agent wrote (failing at base): how many sets the candidate passes; a
    // candidate's own tests are not shown to it.
    assert!(shown
        .iter()
        .all(|t| !t.contains("other candidate agents wrote")));
    let author = dei::candidates::family_of(&b.candidates[2].candidate.agent);
    for (i, ok) in [(0, true), (1, false), (2, true)] {
        if let Some(b) = b.behaviour[i].as_mut() {
            b.written = [(author.clone(), ok)].into_iter().collect();
            b.wrote = (i == 2).then(|| author.clone());
        }
    }
    let written = render(&prompts, &b);
    let want = "Tests that other candidate agents wrote into their patches, which fail at the base commit: this patch passes";
    assert!(
        written[0].contains(&format!("{want} 1 of the 1 set ")),
        "{}",
        written[0]
    );
    assert!(written[1].contains(&format!("{want} 0 of the 1 set ")));
    assert_eq!(
        written[1].matches(want).count(),
        2,
        "the author's own candidate is not told about its own tests"
    );
    assert!(written.iter().all(|t| !t.contains("other-agent")));
    // Its own test, passed by another candidate too, is told as such.
    let own = "This patch's agent also wrote a test into it that fails at the base commit; 1 other candidate passes it too";
    assert!(
        !written[0].contains(own),
        "the first candidate is not its author"
    );
    assert_eq!(written[1].matches(own).count(), 1, "{}", written[1]);
    // Passed by its author alone: not told.
    b.behaviour[0]
        .as_mut()
        .unwrap()
        .written
        .insert(author.clone(), false);
    assert!(render(&prompts, &b).iter().all(|t| !t.contains(own)));
    for x in b.behaviour.iter_mut().flatten() {
        x.written.clear();
    }

    // The model-written test (`--exec-llm-repro`): what it printed with each candidate.
    for (i, t) in [ModelTest::Resolved, ModelTest::Reproduced, ModelTest::Other]
        .into_iter()
        .enumerate()
    {
        if let Some(b) = b.behaviour[i].as_mut() {
            b.model_test = Some(t);
        }
    }
    let with_test = render(&prompts, &b);
    let list = &with_test[1];
    for want in [
        "which prints \"Issue reproduced\" at the base commit, prints \"Issue resolved\" with this patch.",
        "still prints \"Issue reproduced\" with this patch, as at the base commit",
        "ends in other issues with this patch",
    ] {
        assert!(list.contains(want), "missing {want:?} in:\n{list}");
    }
    assert!(!list.contains("Most of the"), "{list}");

    // Three kept tests (`--exec-llm-repro-samples`): the prompt says the verdict is most of
    // theirs.
    b.model_tests_kept = 3;
    let voted = render(&prompts, &b);
    let list = &voted[1];
    for want in [
        "Most of the 3 tests written by a model from the issue alone, each of which prints \"Issue reproduced\" at the base commit, print \"Issue resolved\" with this patch.",
        "Most of the 3 tests written by a model from the issue alone still print \"Issue reproduced\" with this patch, as at the base commit: by those tests, the reported behaviour is still there.",
        "at the base commit, end in other issues with this patch",
    ] {
        assert!(list.contains(want), "missing {want:?} in:\n{list}");
    }
}

#[test]
fn review_once_sends_one_duplicate_and_gives_its_score_to_the_other() {
    let mock = Mock::start(Duration::ZERO);
    for (selector, calls_all, calls_once) in [
        ("pointwise", 4u64, 3u64),
        ("listwise", 1, 1),
        ("pairwise", 12, 6),
    ] {
        let b = with_duplicates("o-1");
        let mut got = Vec::new();
        for (once, calls) in [(false, calls_all), (true, calls_once)] {
            let dir = tempfile::tempdir().unwrap();
            let c = committee(&args(&mock.openai_base(), dir.path(), selector, once));
            let before = mock.calls();
            let rs = c.review(&b).unwrap();
            assert_eq!(mock.calls() - before, calls, "{selector} once={once}");
            assert_eq!(rs.len(), 6);
            assert!(rs.iter().all(|r| r.unscored.is_none()), "{rs:?}");
            for e in ["empty-a", "empty-b"] {
                let r = by_agent(&rs, e);
                assert!(r.rule && r.score.value == 1.0, "{selector}: {r:?}");
                assert!(!r.reason.contains("shares"), "{r:?}");
            }
            got.push(rs);
        }
        let once = &got[1];
        let (one, three) = (by_agent(once, "agent-1"), by_agent(once, "agent-3"));
        assert_eq!(three.score, one.score, "{selector}");
        assert_eq!(three.candidate, "agent-3/o-1");
        assert!(
            three.reason.starts_with(
                "shares the review of agent-1/o-1 (the same change after normalization): "
            ),
            "{selector}: {}",
            three.reason
        );
        assert!(!one.reason.contains("shares"));
        assert_eq!(
            by_agent(once, "agent-2").score.value,
            by_agent(&got[0], "agent-2").score.value
        );
        if selector == "pairwise" {
            assert_eq!(by_agent(once, "agent-2").score.value, 10.0);
        }
    }
}

#[test]
fn review_once_with_behaviour_reviews_one_per_class_and_shows_what_ran() {
    let mock = Mock::start(Duration::ZERO);
    let mut b = bundle("c-1", 5, Some(2));
    b.behaviour = vec![
        Some(behaviour(&["tests/t.py::test_a"], ReproChange::Same, 0)),
        Some(behaviour(&[], ReproChange::Changed, 1)),
        Some(behaviour(&[], ReproChange::Changed, 1)),
        Some(behaviour(&["tests/t.py::test_a"], ReproChange::Same, 0)),
        None,
    ];
    let dir = tempfile::tempdir().unwrap();
    let c = committee(&args(&mock.openai_base(), dir.path(), "pointwise", true));
    let rs = c.review(&b).unwrap();
    // Classes {0, 3} and {1, 2}, and candidate 4 (no evidence, a change of its own).
    assert_eq!(mock.calls(), 3);
    let bodies: Vec<String> = mock.seen().into_iter().map(|s| s.body).collect();
    assert!(
        bodies.iter().any(|t| t.contains("tests/t.py::test_a")),
        "{bodies:?}"
    );
    assert_eq!(
        bodies
            .iter()
            .filter(|t| t.contains("What running it showed"))
            .count(),
        2
    );
    assert_eq!(
        by_agent(&rs, "agent-3").score,
        by_agent(&rs, "agent-0").score
    );
    assert_eq!(
        by_agent(&rs, "agent-1").score,
        by_agent(&rs, "agent-2").score
    );
    let member = by_agent(&rs, "agent-2");
    assert!(
        member
            .reason
            .starts_with("shares the review of agent-1/c-1 (it behaved the same when run): "),
        "{}",
        member.reason
    );
    assert!(member.usage.is_none() && by_agent(&rs, "agent-1").usage.is_some());
}
