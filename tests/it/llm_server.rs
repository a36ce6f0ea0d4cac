//! How the LLM client treats a real server, on the mock server's faults that a real server
//! shows but not on demand: replies cut at a limit, a schema refused, a context too small, a
//! server not there, a model that always picks one place. No key and no network needed.

use crate::support::llm_mock;

use dei::llm::config::LlmOptions;
use dei::review::llm::LlmCommittee;
use dei::review::Committee;
use llm_mock::{bundle, user_prompt, Fault, Mock};
use std::path::Path;
use std::time::Duration;

fn args(base: &str, cache: &Path) -> LlmOptions {
    LlmOptions {
        llm: Some("openai-compatible:m".into()),
        base_url: Some(base.into()),
        max_tokens: 512,
        concurrency: 1,
        retries: 2,
        parse_retries: 2,
        backoff_ms: 10,
        timeout: 5.0,
        cache: cache.to_path_buf(),
        ledger: Some(cache.join("ledger.jsonl")),
        ..Default::default()
    }
}

fn committee(a: &LlmOptions) -> LlmCommittee {
    LlmCommittee::new(a.resolve(&|_| None).unwrap().unwrap()).unwrap()
}

fn ledger(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_reply_cut_at_max_tokens_is_never_used_nor_cached_and_the_retry_says_why() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    // A reply that holds a score but was cut: even so it is not a review.
    mock.push(Fault::Cut(r#"{"issue":"i","patch":"p","score":9"#.into()));
    let c = committee(&args(&mock.openai_base(), dir.path()));
    let rs = c.review(&bundle("cut-1", 1, None)).unwrap();
    assert!(rs[0].unscored.is_none(), "the retry scored it: {rs:?}");
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    let (first, retry) = (&seen[0].body, &seen[1].body);
    assert!(
        user_prompt(retry).contains("could not be used: reply cut at --max-tokens 512"),
        "{}",
        user_prompt(retry)
    );
    let seed = |b: &str| serde_json::from_str::<serde_json::Value>(b).unwrap()["seed"].clone();
    assert_ne!(seed(first), seed(retry), "a retry moves the seed");
    let lines = ledger(dir.path());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["finish"], "length");
    assert!(lines[0]["result"]
        .as_str()
        .unwrap()
        .starts_with("cut: reply cut at --max-tokens"));
    assert_eq!(lines[1]["result"], "ok");
    // Only the usable reply was cached, as the answer to the call: a rerun asks nothing.
    let again = committee(&args(&mock.openai_base(), dir.path()));
    let before = mock.calls();
    let rs2 = again.review(&bundle("cut-1", 1, None)).unwrap();
    assert_eq!(mock.calls(), before);
    assert_eq!(rs2[0].score.value, rs[0].score.value);
    assert!(
        again.summary().contains("1 from the cache"),
        "{}",
        again.summary()
    );
}

#[test]
fn replies_that_never_parse_are_not_cached_so_a_fixed_cause_reruns_them() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        mock.push(Fault::Text("Ceci n'est pas une revue.".into()));
    }
    let c = committee(&args(&mock.openai_base(), dir.path()));
    let rs = c.review(&bundle("fr-1", 1, None)).unwrap();
    let why = rs[0].unscored.clone().expect("unscored, never guessed");
    assert!(why.contains("no usable reply after 3 tries"), "{why}");
    // The three asks were three different requests.
    let bodies: Vec<String> = mock.seen().iter().map(|s| s.body.clone()).collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0] != bodies[1] && bodies[1] != bodies[2]);
    // Rerun once the model behaves: asked again, and scored.
    let before = mock.calls();
    let rs = committee(&args(&mock.openai_base(), dir.path()))
        .review(&bundle("fr-1", 1, None))
        .unwrap();
    assert_eq!(mock.calls(), before + 1);
    assert!(rs[0].unscored.is_none(), "{rs:?}");
}

#[test]
fn structured_output_with_bounded_fields_is_asked_and_a_refusal_falls_back_once() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let c = committee(&args(&mock.openai_base(), dir.path()));
    c.review(&bundle("s-1", 1, None)).unwrap();
    let body: serde_json::Value = serde_json::from_str(&mock.seen()[0].body).unwrap();
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["properties"]["score"]["minimum"], 1);
    assert_eq!(schema["properties"]["score"]["maximum"], 10);
    // Five explanations share --max-tokens 512, less 64 for the JSON around them.
    assert_eq!(schema["properties"]["issue"]["maxLength"], (512 - 64) / 5);
    // A server that refuses schemas: the same call without one, and no schema after that.
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    mock.push(Fault::SchemaRefused);
    let c = committee(&args(&mock.openai_base(), dir.path()));
    let rs = c.review(&bundle("s-2", 2, Some(1))).unwrap();
    assert!(rs.iter().all(|r| r.unscored.is_none()), "{rs:?}");
    let seen = mock.seen();
    assert_eq!(seen.len(), 3, "the refused call, then each candidate once");
    assert!(seen[0].body.contains("response_format"));
    assert!(seen[1..]
        .iter()
        .all(|s| !s.body.contains("response_format")));
    let lines = ledger(dir.path());
    assert!(
        lines[0]["result"]
            .as_str()
            .unwrap()
            .contains("json_schema is not supported"),
        "a refused request has its ledger line: {lines:?}"
    );
}

#[test]
fn partial_samples_unscore_the_candidate_with_the_reason() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    mock.push(Fault::Text("no".into()));
    let a = LlmOptions {
        samples: 3,
        parse_retries: 0,
        ..args(&mock.openai_base(), dir.path())
    };
    let rs = committee(&a).review(&bundle("p-1", 1, None)).unwrap();
    let why = rs[0].unscored.clone().expect("a partial score is no score");
    assert!(
        why.starts_with("1 of 3 samples had no usable reply"),
        "{why}"
    );
}

#[test]
fn the_servers_slots_and_context_hold_calls_and_prompts() {
    let mock = Mock::start(Duration::from_millis(20));
    // llama.cpp's /props: one slot, and a context a prompt of this bundle cannot fit.
    mock.set_props(300, 1);
    let dir = tempfile::tempdir().unwrap();
    let a = LlmOptions {
        concurrency: 8,
        max_tokens: 100,
        ..args(&mock.openai_base(), dir.path())
    };
    let c = committee(&a);
    assert_eq!(c.issues_in_flight(), Some(1), "no more calls than slots");
    let rs = c.review(&bundle("f-1", 2, None)).unwrap();
    assert_eq!(mock.calls(), 0, "a prompt that cannot fit is never sent");
    for r in &rs {
        let why = r.unscored.as_deref().unwrap();
        assert!(
            why.contains("the prompt needs about") && why.contains("leaves 200 for it"),
            "{why}"
        );
    }
    assert!(mock.probes().iter().any(|p| p.ends_with("/props")));
    // A context the prompt fits once the code context is shrunk: sent, and scored.
    let mock = Mock::start(Duration::ZERO);
    mock.set_props(4096, 1);
    let dir = tempfile::tempdir().unwrap();
    let c = committee(&args(&mock.openai_base(), dir.path()));
    let rs = c.review(&bundle("f-2", 2, Some(0))).unwrap();
    assert!(rs.iter().all(|r| r.unscored.is_none()), "{rs:?}");
}

#[test]
fn a_server_out_of_context_is_a_clear_error_and_not_retried() {
    let mock = Mock::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    mock.push(Fault::ContextExceeded);
    let rs = committee(&args(&mock.openai_base(), dir.path()))
        .review(&bundle("x-1", 1, None))
        .unwrap();
    let why = rs[0].unscored.as_deref().unwrap();
    assert!(
        why.contains("the prompt has 9000 tokens and the server's context holds 4096")
            && why.contains("--context-window 4096"),
        "{why}"
    );
    assert_eq!(mock.calls(), 1);
}

#[test]
fn a_server_that_is_not_there_fails_at_once_with_what_to_do() {
    // A port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let a = LlmOptions {
        retries: 5,
        ..args(&format!("http://127.0.0.1:{port}/v1"), dir.path())
    };
    let c = committee(&a);
    let rs = c.review(&bundle("d-1", 2, None)).unwrap();
    for r in &rs {
        let why = r.unscored.as_deref().unwrap();
        assert!(
            why.contains("cannot connect to http://127.0.0.1") && why.contains("local-model.sh"),
            "{why}"
        );
    }
    // No retries: one ledger line per call, each the failure.
    let lines = ledger(dir.path());
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| l["result"]
        .as_str()
        .unwrap()
        .starts_with("error: cannot connect")));
}

#[test]
fn a_model_that_always_picks_the_first_place_favours_no_candidate() {
    let mock = Mock::start(Duration::ZERO);
    mock.script_always("", r#"{"analysis":"first","winner":"A"}"#);
    let dir = tempfile::tempdir().unwrap();
    let a = LlmOptions {
        selector: "pairwise".into(),
        ..args(&mock.openai_base(), dir.path())
    };
    let rs = committee(&a).review(&bundle("pos-1", 3, None)).unwrap();
    assert_eq!(mock.calls(), 6, "3 pairs, both orders");
    let scores: Vec<f64> = rs.iter().map(|r| r.score.value).collect();
    assert!(scores.iter().all(|&s| s == scores[0]), "{scores:?}");
}

#[test]
fn a_streamed_reply_is_read_and_timed_from_its_first_token() {
    let mock = Mock::start(Duration::ZERO);
    mock.stream_replies();
    let dir = tempfile::tempdir().unwrap();
    let rs = committee(&args(&mock.openai_base(), dir.path()))
        .review(&bundle("st-1", 2, Some(1)))
        .unwrap();
    assert!(rs.iter().all(|r| r.unscored.is_none()), "{rs:?}");
    assert!(mock.seen()[0].body.contains("\"stream\":true"));
    let lines = ledger(dir.path());
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["result"], "ok", "{l}");
        assert_eq!(l["server_ms"], 15, "the stream's timings: {l}");
        assert_eq!(l["input_tokens"], 1000, "the stream's usage: {l}");
        assert!(l["first_token_ms"].as_u64().is_some(), "{l}");
    }
    // A stream cut at the limit is cut too.
    let mock = Mock::start(Duration::ZERO);
    mock.stream_replies();
    mock.push(Fault::Cut(r#"{"issue":"i","score":3"#.into()));
    let dir = tempfile::tempdir().unwrap();
    committee(&args(&mock.openai_base(), dir.path()))
        .review(&bundle("st-2", 1, None))
        .unwrap();
    assert!(ledger(dir.path())[0]["result"]
        .as_str()
        .unwrap()
        .starts_with("cut: reply cut at --max-tokens 512"));
}
