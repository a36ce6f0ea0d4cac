//! A tiny in-process model server for tests and benchmarks: hand-written HTTP/1.1 with
//! keep-alive on a tokio TcpListener, speaking OpenAI chat completions (`…/chat/completions`)
//! and Anthropic messages (`…/v1/messages`). Faults are queued per request.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What to do with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// 429 with `Retry-After: secs`.
    TooMany(f64),
    /// 500.
    ServerError,
    /// Reply normally after this long.
    Slow(Duration),
    /// 200 with a body that is not JSON.
    Malformed,
    /// Promise a longer body than is sent, then close.
    Truncated,
    /// A proper envelope whose text has no score.
    NoScore,
    /// A proper envelope with this text.
    Text(String),
    /// 401 (not retryable).
    Unauthorized,
    /// A reply with this text stopped at the length limit (`finish_reason: length`), using
    /// every token the request allowed.
    Cut(String),
    /// 400: the server does not take `response_format` (as some OpenAI-compatible servers).
    SchemaRefused,
    /// 400: the prompt does not fit the context (llama.cpp's `exceed_context_size_error`).
    ContextExceeded,
}

#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub body: String,
    pub at: Instant,
    pub authorized: bool,
    pub anthropic_version: bool,
}

/// A reply chosen by what the prompt says (for the generator's multi-step conversations).
#[derive(Debug, Clone)]
pub struct Rule {
    /// Answer a prompt whose last user message contains this text.
    pub needle: String,
    pub reply: String,
    /// Keep answering (otherwise used once).
    pub sticky: bool,
    /// Answer only a request sent at this temperature.
    pub temperature: Option<f64>,
}

#[derive(Default)]
pub struct State {
    pub faults: VecDeque<Fault>,
    /// Replies by prompt content, first match wins; checked when no fault is queued.
    pub rules: Vec<Rule>,
    /// Needles of the rules that answered, in order.
    pub matched: Vec<String>,
    pub seen: Vec<Seen>,
    /// Bodies whose (successful) reply was completely written.
    pub finished: Vec<String>,
    /// Successful replies let through the gate.
    pub released: u64,
    /// Replies waiting at the gate now.
    pub held: u64,
    /// What `GET /props` answers (llama.cpp's self-description); `None`: 404, as most servers.
    pub props: Option<serde_json::Value>,
    /// Requests to other paths than the model's (`/props`, `/v1/models`, `/api/show`), in order.
    pub probes: Vec<String>,
    /// Answer a request that asks for a stream with server-sent events, as llama.cpp does
    /// (otherwise whole, as a server that ignores `stream`).
    pub sse: bool,
}

pub struct Mock {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<State>>,
    /// Latency added to every reply.
    pub latency_ms: Arc<AtomicU64>,
    /// Replies allowed to finish; later requests wait (for kill-and-resume tests).
    pub gate: Arc<AtomicU64>,
    pub requests: Arc<AtomicU64>,
}

impl Mock {
    /// Start on a background thread with its own runtime.
    pub fn start(latency: Duration) -> Mock {
        let state = Arc::new(Mutex::new(State::default()));
        let latency_ms = Arc::new(AtomicU64::new(latency.as_millis() as u64));
        let gate = Arc::new(AtomicU64::new(u64::MAX));
        let requests = Arc::new(AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (s2, l2, g2, r2) = (
            state.clone(),
            latency_ms.clone(),
            gate.clone(),
            requests.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    let _ = sock.set_nodelay(true);
                    let (s, l, g, r) = (s2.clone(), l2.clone(), g2.clone(), r2.clone());
                    tokio::spawn(async move {
                        let _ = serve(sock, s, l, g, r).await;
                    });
                }
            });
        });
        let addr = rx.recv().unwrap();
        Mock {
            addr,
            state,
            latency_ms,
            gate,
            requests,
        }
    }

    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn anthropic_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answer `GET /props` as llama.cpp does, with this context per slot and these slots.
    pub fn set_props(&self, n_ctx: u64, slots: u64) {
        self.state.lock().unwrap().props = Some(serde_json::json!({
            "default_generation_settings": {"n_ctx": n_ctx},
            "total_slots": slots,
        }));
    }

    /// Stream replies to requests that ask for a stream.
    pub fn stream_replies(&self) {
        self.state.lock().unwrap().sse = true;
    }

    /// The paths asked that were not model calls.
    pub fn probes(&self) -> Vec<String> {
        self.state.lock().unwrap().probes.clone()
    }

    pub fn push(&self, f: Fault) {
        self.state.lock().unwrap().faults.push_back(f);
    }

    /// Answer the next prompt containing `needle` with `reply` (once).
    pub fn script(&self, needle: &str, reply: &str) {
        self.add_rule(needle, reply, false);
    }

    /// Answer every prompt containing `needle` with `reply`.
    pub fn script_always(&self, needle: &str, reply: &str) {
        self.add_rule(needle, reply, true);
    }

    /// Answer the next prompt containing `needle` sent at `temperature` with `reply` (once).
    pub fn script_at(&self, needle: &str, temperature: f64, reply: &str) {
        self.state.lock().unwrap().rules.push(Rule {
            needle: needle.into(),
            reply: reply.into(),
            sticky: false,
            temperature: Some(temperature),
        });
    }

    fn add_rule(&self, needle: &str, reply: &str, sticky: bool) {
        self.state.lock().unwrap().rules.push(Rule {
            needle: needle.into(),
            reply: reply.into(),
            sticky,
            temperature: None,
        });
    }

    /// Needles of the rules that answered, in order.
    pub fn matched(&self) -> Vec<String> {
        self.state.lock().unwrap().matched.clone()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub fn finished(&self) -> Vec<String> {
        self.state.lock().unwrap().finished.clone()
    }

    /// Replies held at the gate right now.
    pub fn held(&self) -> u64 {
        self.state.lock().unwrap().held
    }

    pub fn calls(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Deterministic score from the prompt: 9 when it contains `GOOD`, 2 with `BAD`, else 1–8 by hash.
pub fn score_for(body: &str) -> u8 {
    if body.contains("GOOD") {
        9
    } else if body.contains("BAD") {
        2
    } else {
        let h = body.bytes().fold(1469598103934665603u64, |h, b| {
            (h ^ b as u64).wrapping_mul(1099511628211)
        });
        (h % 8) as u8 + 1
    }
}

fn reply_object(body: &str) -> serde_json::Value {
    if body.contains("pick_candidate") || body.contains("<choice>") {
        serde_json::json!({"analysis": "candidate 1 edits the faulty place", "choice": 1})
    } else if body.contains("pick_winner") || body.contains("<winner>") {
        serde_json::json!({"analysis": "A is better", "winner": if body.contains("GOOD") && body.find("GOOD") > body.find("Candidate B") { "B" } else { "A" }})
    } else {
        serde_json::json!({
            "issue": "The issue says the function is wrong.",
            "context": "The edited function is the one the issue names.",
            "location": "Yes, it edits the faulty place.",
            "patch": "The patch fixes the issue by changing the faulty line.",
            "conflicts": "No conflicts with callers.",
            "score": score_for(body),
        })
    }
}

fn as_tags(v: &serde_json::Value) -> String {
    let mut out = String::new();
    for (k, val) in v.as_object().unwrap() {
        let t = match val {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!("<{k}>{t}</{k}>\n"));
    }
    out
}

fn envelope(
    anthropic: bool,
    structured: bool,
    text: Option<String>,
    obj: serde_json::Value,
) -> String {
    let v = if anthropic {
        let content = match (structured, text) {
            (_, Some(t)) => serde_json::json!([{"type": "text", "text": t}]),
            (true, None) => {
                serde_json::json!([{"type": "tool_use", "id": "t1", "name": "submit", "input": obj}])
            }
            (false, None) => serde_json::json!([{"type": "text", "text": as_tags(&obj)}]),
        };
        serde_json::json!({"id": "msg", "type": "message", "role": "assistant", "content": content, "stop_reason": "end_turn", "usage": {"input_tokens": 1000, "output_tokens": 200}})
    } else {
        let content = match (structured, text) {
            (_, Some(t)) => t,
            (true, None) => obj.to_string(),
            (false, None) => as_tags(&obj),
        };
        serde_json::json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1000, "completion_tokens": 200}})
    };
    v.to_string()
}

/// A whole chat-completion body as llama.cpp streams it: the text in three chunks, then the
/// stop reason, then usage and timings, then `[DONE]`.
fn as_events(payload: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    let text = v
        .pointer("/choices/0/message/content")
        .and_then(|c| c.as_str())
        .unwrap_or("");
    let finish = v
        .pointer("/choices/0/finish_reason")
        .cloned()
        .unwrap_or_default();
    let chars: Vec<char> = text.chars().collect();
    let third = chars.len().div_ceil(3).max(1);
    let mut out = String::new();
    for piece in chars.chunks(third) {
        let piece: String = piece.iter().collect();
        let e = serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        out.push_str(&format!("data: {e}\n\n"));
    }
    let last = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    out.push_str(&format!("data: {last}\n\n"));
    let usage = serde_json::json!({"choices": [], "usage": v["usage"], "timings": {"prompt_ms": 10.0, "predicted_ms": 5.0}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out
}

/// The last user message of an OpenAI or Anthropic request body.
pub fn user_prompt(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v.get("messages")
        .and_then(|m| m.as_array())
        .and_then(|m| m.last())
        .and_then(|m| m.get("content"))
        .and_then(|c| c.as_str())
        .unwrap_or_default()
        .to_string()
}

async fn serve(
    mut sock: tokio::net::TcpStream,
    state: Arc<Mutex<State>>,
    latency: Arc<AtomicU64>,
    gate: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        // Headers.
        let head_end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let mut chunk = [0u8; 16384];
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
        };
        let len: usize = header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 65536];
            let n = sock.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
        buf.drain(..head_end + len);
        let anthropic = path.ends_with("/v1/messages");
        // What a server says of itself is not a model call: answered apart, never counted.
        if !anthropic && !path.ends_with("/chat/completions") {
            let props = {
                let mut s = state.lock().unwrap();
                s.probes.push(path.clone());
                s.props.clone()
            };
            let (status, payload) = match props {
                Some(p) if path.ends_with("/props") => (200, p.to_string()),
                _ => (404, r#"{"error":{"message":"not found"}}"#.to_string()),
            };
            let resp = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{payload}",
                payload.len()
            );
            sock.write_all(resp.as_bytes()).await?;
            continue;
        }
        let authorized = header("authorization").is_some() || header("x-api-key").is_some();
        let fault = {
            let mut s = state.lock().unwrap();
            s.seen.push(Seen {
                path: path.clone(),
                body: body.clone(),
                at: Instant::now(),
                authorized,
                anthropic_version: header("anthropic-version").is_some(),
            });
            match s.faults.pop_front() {
                Some(f) => Some(f),
                None => {
                    let prompt = user_prompt(&body);
                    let temperature = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|j| j["temperature"].as_f64());
                    match s.rules.iter().position(|r| {
                        prompt.contains(&r.needle)
                            && match r.temperature {
                                Some(t) => Some(t) == temperature,
                                None => true,
                            }
                    }) {
                        Some(i) => {
                            let r = s.rules[i].clone();
                            if !r.sticky {
                                s.rules.remove(i);
                            }
                            s.matched.push(r.needle);
                            Some(Fault::Text(r.reply))
                        }
                        None => None,
                    }
                }
            }
        };
        requests.fetch_add(1, Ordering::SeqCst);
        let structured = body.contains("\"response_format\"") || body.contains("\"tools\"");
        let mut delay = Duration::from_millis(latency.load(Ordering::SeqCst));
        let (status, extra, payload, truncate) = match fault {
            Some(Fault::TooMany(s)) => (
                429,
                format!("Retry-After: {s}\r\n"),
                r#"{"error":{"message":"rate limited"}}"#.to_string(),
                false,
            ),
            Some(Fault::ServerError) => (
                500,
                String::new(),
                r#"{"error":{"message":"boom"}}"#.to_string(),
                false,
            ),
            // Like some servers, echo what was sent, key included.
            Some(Fault::Unauthorized) => (
                401,
                String::new(),
                format!(
                    "{{\"error\":{{\"message\":\"bad key {}\"}}}}",
                    header("authorization")
                        .or(header("x-api-key"))
                        .unwrap_or_default()
                ),
                false,
            ),
            Some(Fault::Cut(t)) => {
                let max = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|j| j["max_tokens"].as_u64())
                    .unwrap_or(512);
                (
                    200,
                    String::new(),
                    serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": t}, "finish_reason": "length"}], "usage": {"prompt_tokens": 1000, "completion_tokens": max}}).to_string(),
                    false,
                )
            }
            Some(Fault::SchemaRefused) => (
                400,
                String::new(),
                r#"{"error":{"message":"response_format of type json_schema is not supported"}}"#
                    .to_string(),
                false,
            ),
            Some(Fault::ContextExceeded) => (
                400,
                String::new(),
                r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#
                    .to_string(),
                false,
            ),
            Some(Fault::Malformed) => (
                200,
                String::new(),
                "{\"choices\": [ this is not json".to_string(),
                false,
            ),
            Some(Fault::Truncated) => (
                200,
                String::new(),
                envelope(anthropic, structured, None, reply_object(&body)),
                true,
            ),
            Some(Fault::NoScore) => (
                200,
                String::new(),
                envelope(
                    anthropic,
                    false,
                    Some("<issue>I could not decide.</issue>".into()),
                    serde_json::Value::Null,
                ),
                false,
            ),
            Some(Fault::Text(t)) => (
                200,
                String::new(),
                envelope(anthropic, false, Some(t), serde_json::Value::Null),
                false,
            ),
            Some(Fault::Slow(d)) => {
                delay = d;
                (
                    200,
                    String::new(),
                    envelope(anthropic, structured, None, reply_object(&body)),
                    false,
                )
            }
            // A candidate marked NOSCORE never gets a score.
            None if body.contains("NOSCORE") => (
                200,
                String::new(),
                envelope(
                    anthropic,
                    false,
                    Some("<issue>I cannot tell.</issue>".into()),
                    serde_json::Value::Null,
                ),
                false,
            ),
            None => (
                200,
                String::new(),
                envelope(anthropic, structured, None, reply_object(&body)),
                false,
            ),
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if status == 200 {
            // Hold replies past the gate (the client is about to be killed).
            let mut holding = false;
            loop {
                {
                    let mut s = state.lock().unwrap();
                    if s.released < gate.load(Ordering::SeqCst) {
                        s.released += 1;
                        if holding {
                            s.held -= 1;
                        }
                        break;
                    }
                    if !holding {
                        s.held += 1;
                        holding = true;
                    }
                }
                let gone = || state.lock().unwrap().held -= 1;
                // A client killed while its call is held never gets (or counts) the reply.
                tokio::select! {
                    r = sock.readable() => {
                        let mut probe = [0u8; 1024];
                        match (r, sock.try_read(&mut probe)) {
                            (Err(_), _) | (_, Ok(0)) => { gone(); return Ok(()) }
                            (_, Ok(n)) => buf.extend_from_slice(&probe[..n]),
                            (_, Err(e)) if e.kind() != std::io::ErrorKind::WouldBlock => { gone(); return Ok(()) }
                            _ => {}
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                }
            }
        }
        let reason = match status {
            200 => "OK",
            429 => "Too Many Requests",
            401 => "Unauthorized",
            _ => "Internal Server Error",
        };
        let promised = if truncate {
            payload.len() + 100
        } else {
            payload.len()
        };
        let sent = if truncate {
            &payload[..payload.len() / 2]
        } else {
            &payload[..]
        };
        let wants_stream = body.contains("\"stream\":true");
        if status == 200 && !truncate && !anthropic && wants_stream && state.lock().unwrap().sse {
            let events = as_events(&payload);
            let resp = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{events}", events.len());
            sock.write_all(resp.as_bytes()).await?;
            sock.flush().await?;
            state.lock().unwrap().finished.push(body);
            continue;
        }
        let resp = format!("HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {promised}\r\n{extra}\r\n{sent}");
        sock.write_all(resp.as_bytes()).await?;
        sock.flush().await?;
        if truncate {
            return Ok(());
        }
        if status == 200 && !truncate {
            state.lock().unwrap().finished.push(body);
        }
    }
}

use dei::model::{Applies, Candidate, Context, FileView, HunkStatus, LineRange, PatchView, Task};
use dei::review::{IssueBundle, Prepared};

/// A synthetic issue with `n` candidates; candidate `good` (if any) carries the GOOD marker.
pub fn bundle(id: &str, n: usize, good: Option<usize>) -> IssueBundle {
    let before: String = (1..=40).map(|i| format!("    line_{i} = {i}\n")).collect();
    let candidates = (0..n)
        .map(|k| {
            let marker = if Some(k) == good { "GOOD" } else { "plain" };
            let new_line = format!("    line_20 = {k}  # {marker} fix {k}\n");
            let after = before.replace("    line_20 = 20\n", &new_line);
            let patch = format!("--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -19,3 +19,3 @@\n     line_19 = 19\n-    line_20 = 20\n+{}     line_21 = 21\n", new_line);
            Prepared {
                candidate: Candidate { instance_id: id.into(), agent: format!("agent-{k}"), patch, resolved: None, origin: Default::default() },
                view: PatchView {
                    applies: Applies::Clean,
                    files: vec![FileView {
                        path: "pkg/mod.py".into(),
                        before: Some(before.clone()),
                        after: Some(after),
                        hunks: vec![HunkStatus::Exact],
                        changed_before: vec![LineRange::new(20, 20)],
                        changed_after: vec![LineRange::new(20, 20)],
                        error: None,
                        hunk_info: vec![],
                    }],
                    error: None,
                    lines_added: 1,
                    lines_removed: 1,
                },
                context: Context { snippets: vec![], edited: vec!["pkg/mod.py::<module>".into()], new_parse_errors: 0, ..Context::default() },
            }
        })
        .collect();
    IssueBundle {
        task: Task {
            instance_id: id.into(),
            repo: "example/pkg".into(),
            base_commit: "0".repeat(40),
            problem_statement: format!("Issue {id}: line_20 has the wrong value."),
            ..Default::default()
        },
        candidates,
        behaviour: Vec::new(),
        repro_by_agent: false,
        repro_code: None,
        repro_output: None,
        model_tests_kept: 0,
        tests_in_part: Vec::new(),
    }
}
