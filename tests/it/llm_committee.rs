//! The LLM committee against an in-process mock server: both protocols, faults, cache, cost cap.
//! No key and no network needed.

use crate::support::llm_mock;

use dei::llm::config::LlmOptions;
use dei::model::{Review, Stage};
use dei::review::llm::LlmCommittee;
use dei::review::Committee;
use llm_mock::{bundle, Fault, Mock};
use std::path::Path;
use std::time::Duration;

fn args(spec: &str, base: &str, cache: &Path) -> LlmOptions {
    LlmOptions {
        llm: Some(spec.into()),
        base_url: Some(base.into()),
        selector: "pointwise".into(),
        samples: 1,
        max_tokens: 512,
        concurrency: 4,
        retries: 3,
        parse_retries: 2,
        backoff_ms: 10,
        timeout: 5.0,
        cache: cache.to_path_buf(),
        ..Default::default()
    }
}

fn committee(a: &LlmOptions) -> LlmCommittee {
    let env = |k: &str| (k == "TEST_KEY").then(|| "sk-test-SECRET-42".to_string());
    let a = LlmOptions {
        api_key_env: a.api_key_env.clone().or(Some("TEST_KEY".into())),
        ..a.clone()
    };
    LlmCommittee::new(a.resolve(&env).unwrap().unwrap()).unwrap()
}

fn by_agent<'a>(rs: &'a [Review], agent: &str) -> &'a Review {
    rs.iter()
        .find(|r| r.candidate.starts_with(&format!("{agent}/")))
        .unwrap()
}

#[test]
fn both_protocols_review_in_stage_order_and_rank_the_good_candidate_first() {
    let mock = Mock::start(Duration::ZERO);
    for (spec, base, format) in [
        ("openai-compatible:m", mock.openai_base(), "json"),
        ("openai-compatible:m", mock.openai_base(), "tags"),
        ("anthropic:claude-test", mock.anthropic_base(), "json"),
        ("anthropic:claude-test", mock.anthropic_base(), "tags"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let a = LlmOptions {
            output_format: Some(format.into()),
            ..args(spec, &base, dir.path())
        };
        let c = committee(&a);
        let b = bundle("x-1", 4, Some(2));
        let rs = c.review(&b).unwrap();
        assert_eq!(rs.len(), 4);
        for r in &rs {
            assert!(r.unscored.is_none(), "{spec} {format}: {r:?}");
            let order: Vec<Stage> = r.explanations.iter().map(|e| e.0).collect();
            assert_eq!(order, Stage::ORDER.to_vec(), "{spec} {format}");
            assert!((1.0..=10.0).contains(&r.score.value));
        }
        assert_eq!(by_agent(&rs, "agent-2").score.value, 9.0);
        let placed = dei::rank::select::rank(&rs);
        assert_eq!(placed[0].index, 2, "{spec} {format}");
        let usage = by_agent(&rs, "agent-0").usage.unwrap();
        assert_eq!(
            (usage.calls, usage.input_tokens, usage.output_tokens),
            (1, 1000, 200)
        );
    }
    let seen = mock.seen();
    assert_eq!(seen.len(), 16);
    for s in &seen {
        assert!(s.authorized, "key header sent");
        assert!(!s.body.contains("SECRET"), "key never in a body");
        if s.path.ends_with("/v1/messages") {
            assert!(s.anthropic_version);
        }
    }
    assert!(seen
        .iter()
        .any(|s| s.path == "/v1/messages" && s.body.contains("\"tool_choice\"")));
    assert!(seen
        .iter()
        .any(|s| s.path == "/v1/chat/completions" && s.body.contains("\"json_schema\"")));
    assert!(seen
        .iter()
        .any(|s| s.path == "/v1/chat/completions" && !s.body.contains("response_format")));
}

#[test]
fn retry_after_on_429_is_honoured() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    mock.push(Fault::TooMany(1.0));
    let c = committee(&LlmOptions {
        concurrency: 1,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    let rs = c.review(&bundle("x-2", 1, None)).unwrap();
    assert!(rs[0].unscored.is_none(), "{:?}", rs[0]);
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_millis(950),
        "retried after {gap:?}, Retry-After said 1s"
    );
}

#[test]
fn server_errors_malformed_and_truncated_replies_are_retried() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    for f in [Fault::ServerError, Fault::Malformed, Fault::Truncated] {
        mock.push(f);
    }
    let c = committee(&LlmOptions {
        concurrency: 1,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    let rs = c.review(&bundle("x-3", 1, None)).unwrap();
    assert!(rs[0].unscored.is_none(), "{:?}", rs[0]);
    assert_eq!(mock.calls(), 4);
    assert_eq!(c.usage().calls, 1, "one successful call, three retries");
}

#[test]
fn slow_reply_past_the_timeout_is_retried() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    mock.push(Fault::Slow(Duration::from_secs(3)));
    let c = committee(&LlmOptions {
        concurrency: 1,
        timeout: 0.4,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    let t = std::time::Instant::now();
    let rs = c.review(&bundle("x-4", 1, None)).unwrap();
    assert!(rs[0].unscored.is_none(), "{:?}", rs[0]);
    assert_eq!(mock.calls(), 2);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "did not wait for the slow reply"
    );
}

#[test]
fn persistent_errors_and_bad_keys_leave_the_candidate_unscored_with_the_reason() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..4 {
        mock.push(Fault::ServerError);
    }
    let c = committee(&LlmOptions {
        concurrency: 1,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    let rs = c.review(&bundle("x-5", 1, None)).unwrap();
    let why = rs[0].unscored.as_deref().unwrap();
    assert!(why.contains("HTTP 500") && why.contains("4 tries"), "{why}");
    assert_eq!(rs[0].score.value, 0.0);
    // 401 is not retried, and the echoed key is scrubbed.
    mock.push(Fault::Unauthorized);
    let rs = c.review(&bundle("x-6", 1, None)).unwrap();
    let why = rs[0].unscored.as_deref().unwrap();
    assert!(
        why.contains("HTTP 401") && why.contains("[redacted]") && !why.contains("SECRET"),
        "{why}"
    );
    assert_eq!(mock.calls(), 5);
}

#[test]
fn a_reply_with_no_score_is_asked_again_then_unscored_never_guessed() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    // Candidate 0: one bad reply, then a good one. Candidate 1: three bad replies.
    let c = committee(&LlmOptions {
        concurrency: 1,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    mock.push(Fault::NoScore);
    let rs = c.review(&bundle("x-7", 1, Some(0))).unwrap();
    assert_eq!(rs[0].score.value, 9.0);
    mock.push(Fault::NoScore);
    mock.push(Fault::Text("<issue>i</issue><score>11</score>".into()));
    mock.push(Fault::NoScore);
    let before = mock.calls();
    let rs = c.review(&bundle("x-9", 1, None)).unwrap();
    assert_eq!(mock.calls() - before, 3, "asked three times");
    assert!(
        rs[0]
            .unscored
            .as_deref()
            .unwrap()
            .contains("no usable reply after 3 tries: no score in reply"),
        "{:?}",
        rs[0]
    );
    // A candidate whose replies never carry a score ranks below the scored one.
    let mut b = bundle("x-8", 2, None);
    b.candidates[1].candidate.patch.push_str("+# NOSCORE\n");
    let rs = c.review(&b).unwrap();
    let (un, ok): (Vec<&Review>, Vec<&Review>) = rs.iter().partition(|r| r.unscored.is_some());
    assert_eq!((un.len(), ok.len()), (1, 1), "{rs:?}");
    assert!(
        un[0]
            .unscored
            .as_deref()
            .unwrap()
            .contains("no score in reply"),
        "{:?}",
        un[0]
    );
    assert!(un[0].reason.starts_with("unscored:"));
    let placed = dei::rank::select::rank(&rs);
    assert_eq!(
        rs[placed[1].index].candidate, un[0].candidate,
        "unscored ranks last"
    );
    // Rerun: the usable replies come from the cache; the unusable ones were never kept, so
    // only the candidate without a score is asked again (its three tries).
    let before = mock.calls();
    let again = committee(&LlmOptions {
        concurrency: 1,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    })
    .review(&b)
    .unwrap();
    assert_eq!(mock.calls(), before + 3);
    assert_eq!(
        again,
        rs.iter()
            .map(|r| Review {
                usage: again
                    .iter()
                    .find(|a| a.candidate == r.candidate)
                    .unwrap()
                    .usage,
                ..(*r).clone()
            })
            .collect::<Vec<_>>()
    );
}

#[test]
fn rerun_is_served_from_the_cache_with_zero_calls() {
    let mock = Mock::start(Duration::from_millis(5));
    let dir = tempfile::tempdir().unwrap();
    let a = LlmOptions {
        samples: 3,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    };
    let bundles: Vec<_> = (0..3)
        .map(|i| bundle(&format!("c-{i}"), 4, Some(i)))
        .collect();
    let first = committee(&a).review_many(&bundles);
    assert_eq!(mock.calls(), 3 * 4 * 3);
    let c2 = committee(&a);
    let second = c2.review_many(&bundles);
    assert_eq!(mock.calls(), 36, "a rerun costs zero calls");
    assert_eq!(c2.usage().calls, 0);
    assert_eq!(c2.usage().cached, 36);
    for (x, y) in first.iter().zip(&second) {
        let (x, y) = (x.as_ref().unwrap(), y.as_ref().unwrap());
        for (rx, ry) in x.iter().zip(y) {
            assert_eq!(rx.score, ry.score);
            assert_eq!(rx.explanations, ry.explanations);
        }
    }
}

#[test]
fn samples_aggregate_to_the_mean_with_spread_kept() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let c = committee(&LlmOptions {
        samples: 5,
        temperature: Some(0.9),
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    let rs = c.review(&bundle("s-1", 2, None)).unwrap();
    // The mock's score hashes the request, which carries the sample's seed: samples differ.
    let bodies: Vec<String> = mock.seen().into_iter().map(|s| s.body).collect();
    for r in &rs {
        let agent = r.candidate.split('/').next().unwrap();
        let scores: Vec<f64> = bodies
            .iter()
            .filter(|b| b.contains(&format!("fix {}", &agent[6..])))
            .map(|b| f64::from(llm_mock::score_for(b)))
            .collect();
        assert_eq!(scores.len(), 5);
        let mean = scores.iter().sum::<f64>() / 5.0;
        assert!(
            (r.score.value - mean).abs() < 0.006,
            "{} vs {mean}",
            r.score.value
        );
        let part = |n: &str| r.score.parts.iter().find(|p| p.0 == n).unwrap().1;
        assert_eq!(part("samples scored"), 5.0);
        assert_eq!(part("min"), scores.iter().cloned().fold(f64::MAX, f64::min));
        assert!(part("sd") >= 0.0);
        assert!(bodies.iter().all(|b| b.contains("\"temperature\":0.9")));
    }
}

#[test]
fn max_cost_stops_scheduling_and_the_cap_holds() {
    let mock = Mock::start(Duration::from_millis(30));
    let dir = tempfile::tempdir().unwrap();
    // Every reply reports 1000 input + 200 output tokens; at $1/$5 per Mtok a call costs $0.002.
    let a = LlmOptions {
        price_in: Some(1.0),
        price_out: Some(5.0),
        max_tokens: 256,
        max_cost: Some(0.02),
        concurrency: 4,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    };
    let c = committee(&a);
    let rs = c.review(&bundle("m-1", 30, None)).unwrap();
    let spent = c.usage().cost_usd;
    assert!(spent <= 0.02 + 1e-12, "spent ${spent}");
    assert!(spent > 0.0);
    let skipped: Vec<&Review> = rs
        .iter()
        .filter(|r| {
            r.unscored
                .as_deref()
                .is_some_and(|u| u.contains("--max-cost"))
        })
        .collect();
    assert!(
        !skipped.is_empty() && skipped.len() < 30,
        "{}",
        skipped.len()
    );
    assert_eq!(mock.calls() as usize, 30 - skipped.len());
    assert!(
        c.summary().contains("not scheduled (--max-cost)"),
        "{}",
        c.summary()
    );
}

#[test]
fn listwise_and_pairwise_give_scores_rank_can_order() {
    let mock = Mock::start(Duration::ZERO);
    // Pairwise: 6 pairs, both orders, 3 samples.
    for (sel, calls) in [("listwise", 3u64), ("pairwise", 6 * 2 * 3)] {
        let dir = tempfile::tempdir().unwrap();
        let before = mock.calls();
        let c = committee(&LlmOptions {
            selector: sel.into(),
            samples: 3,
            ..args("openai-compatible:m", &mock.openai_base(), dir.path())
        });
        let rs = c.review(&bundle("l-1", 4, Some(3))).unwrap();
        assert_eq!(mock.calls() - before, calls, "{sel}");
        assert!(
            rs.iter()
                .all(|r| r.unscored.is_none() && (1.0..=10.0).contains(&r.score.value)),
            "{sel}: {rs:?}"
        );
        if sel == "pairwise" {
            // The mock always prefers the GOOD candidate: it wins every game.
            assert_eq!(by_agent(&rs, "agent-3").score.value, 10.0, "{rs:?}");
            assert_eq!(dei::rank::select::rank(&rs)[0].index, 3);
        } else {
            let votes: f64 = rs.iter().map(|r| r.score.parts[0].1).sum();
            assert_eq!(votes, 3.0, "one vote a sample");
        }
    }
}

#[test]
fn dry_run_prints_prompts_and_counts_without_calling() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let c = committee(&LlmOptions {
        dry_run: true,
        samples: 2,
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    });
    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    c.set_output(Box::new(buf.clone()));
    let rs = c.review(&bundle("d-1", 3, None)).unwrap();
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    assert_eq!(mock.calls(), 0);
    assert_eq!(text.matches("===== call ").count(), 6);
    assert!(
        text.contains("dry run: 6 calls planned (0 already cached, 6 to send)"),
        "{text}"
    );
    assert!(
        text.contains("Issue d-1: line_20 has the wrong value.")
            && text.contains("+    line_20 = 1  # plain fix 1")
    );
    assert!(
        text.contains("Reply with a JSON object with the fields issue, context"),
        "structured output is the default for openai-compatible servers too"
    );
    assert!(rs
        .iter()
        .all(|r| r.unscored.as_deref() == Some("dry run: no call made")));
}

#[test]
fn custom_rubric_and_prompt_dir_reach_the_prompt_and_bad_ones_say_where() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let rubric = dir.path().join("strict.md");
    std::fs::write(
        &rubric,
        "# strict\n- severe: ANY-CHANGE-OUTSIDE-pkg/mod.py\n",
    )
    .unwrap();
    let prompts = dir.path().join("prompts");
    std::fs::create_dir(&prompts).unwrap();
    std::fs::write(prompts.join("system.j2"), "CUSTOM SYSTEM PROMPT").unwrap();
    let a = LlmOptions {
        rubric: Some(rubric.clone()),
        prompt_dir: Some(prompts.clone()),
        ..args("openai-compatible:m", &mock.openai_base(), dir.path())
    };
    let rs = committee(&a).review(&bundle("r-1", 1, None)).unwrap();
    assert!(rs[0].unscored.is_none());
    let body = &mock.seen()[0].body;
    assert!(
        body.contains("ANY-CHANGE-OUTSIDE-pkg/mod.py") && body.contains("CUSTOM SYSTEM PROMPT"),
        "{body}"
    );
    std::fs::write(&rubric, "# strict\n\n- catastrophic: x\n").unwrap();
    let cfg = a.resolve(&|_| None).unwrap().unwrap();
    let e = LlmCommittee::new(cfg).err().unwrap().to_string();
    assert!(
        e.contains("strict.md:3") && e.contains("catastrophic"),
        "{e}"
    );
}
