//! Providers over reqwest: OpenAI-compatible chat completions and the Anthropic messages API.
//!
//! Builds the request body (with structured output where asked), sends one HTTP call, and
//! classifies what came back: a reply, a retryable failure (429, 5xx, timeouts, broken or
//! malformed bodies, with any `Retry-After`), or a fatal one. The API key is only ever put
//! in a request header; it never enters a body, a cache entry, a log line or an error.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{json, Value};
use std::time::Duration;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// `POST {base}/chat/completions` (OpenAI itself: `max_completion_tokens`).
    OpenAi,
    /// The same protocol on another server (vLLM, llama.cpp, Ollama, ...): `max_tokens`.
    OpenAiCompatible,
    /// `POST {base}/v1/messages` with `x-api-key` and `anthropic-version`.
    Anthropic,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAi => "openai",
            Protocol::OpenAiCompatible => "openai-compatible",
            Protocol::Anthropic => "anthropic",
        }
    }
}

/// An API key. Its `Debug` never shows it.
#[derive(Clone, Default)]
pub struct Secret(pub Option<String>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "[redacted]"
        } else {
            "[none]"
        })
    }
}

impl Secret {
    /// `text` with any occurrence of the key replaced.
    pub fn scrub(&self, text: &str) -> String {
        match &self.0 {
            Some(k) if k.len() >= 4 => text.replace(k.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }
}

/// JSON with keys in the order written (the model writes structured output in schema order).
#[derive(Debug, Clone)]
pub enum Js {
    V(Value),
    O(Vec<(&'static str, Js)>),
    A(Vec<Js>),
}

impl Serialize for Js {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Js::V(v) => v.serialize(s),
            Js::A(items) => items.serialize(s),
            Js::O(pairs) => {
                let mut m = s.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// A structured-output schema: a name and an object schema with ordered properties.
#[derive(Debug, Clone)]
pub struct Schema {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: Js,
}

/// What one call asks for.
#[derive(Debug, Clone)]
pub struct CallRequest<'a> {
    pub system: &'a str,
    pub user: &'a str,
    pub temperature: f64,
    pub max_tokens: u32,
    /// The provider's sampling seed: the sample number, moved on for each retry so that a
    /// retry at temperature 0 is not the identical request again.
    pub seed: u64,
    pub schema: Option<&'a Schema>,
}

/// The text the model wrote, and what it cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    pub text: String,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Provider's stop reason (`stop`, `length`, `end_turn`, `max_tokens`, `tool_use`, ...).
    #[serde(default)]
    pub finish: String,
    /// True when the provider reported no usage and tokens were estimated.
    #[serde(default)]
    pub estimated: bool,
    /// The server's own time on the call (prompt plus generation, milliseconds), where it
    /// says (llama.cpp's `timings`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ms: Option<f64>,
    /// Milliseconds from sending the request to the first token of a streamed reply (not kept
    /// in the cache: it describes one call, not the reply).
    #[serde(skip)]
    pub first_token_ms: Option<u64>,
}

impl Reply {
    /// The reply to `r` with this text and stop reason; the tokens the provider counted
    /// (input, output), estimated where it did not say.
    fn of(
        r: &CallRequest,
        text: String,
        finish: String,
        (input, output): (Option<u64>, Option<u64>),
        server_ms: Option<f64>,
        first_token_ms: Option<u64>,
    ) -> Reply {
        Reply {
            input_tokens: input
                .unwrap_or_else(|| estimate_tokens(r.system) + estimate_tokens(r.user)),
            output_tokens: output.unwrap_or_else(|| estimate_tokens(&text)),
            estimated: input.is_none() || output.is_none(),
            text,
            finish,
            server_ms,
            first_token_ms,
        }
    }

    /// Why this reply is not whole: the provider stopped it at a length limit. `max_tokens` is
    /// the call's limit; a cut with fewer tokens than that was made by the server's context.
    pub fn cut(&self, max_tokens: u32) -> Option<String> {
        if !matches!(self.finish.as_str(), "length" | "max_tokens") {
            return None;
        }
        Some(if self.output_tokens + 8 < u64::from(max_tokens) {
            format!(
                "reply cut by the server after {} tokens (its context is full; give the server a larger context per slot, or --context-window)",
                self.output_tokens
            )
        } else {
            format!("reply cut at --max-tokens {max_tokens}")
        })
    }
}

/// Why one HTTP call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// Worth retrying after a backoff (or after `retry_after`, when the server said).
    Retryable {
        why: String,
        retry_after: Option<Duration>,
    },
    /// Retrying will not help (bad request, bad key, unknown model, nothing listening).
    Fatal(String),
    /// The server does not take the structured-output schema; the call may be made without it.
    SchemaRefused(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Retryable { why, .. }
            | CallError::Fatal(why)
            | CallError::SchemaRefused(why) => f.write_str(why),
        }
    }
}

/// A configured provider endpoint.
#[derive(Debug, Clone)]
pub struct Provider {
    pub protocol: Protocol,
    pub model: String,
    /// e.g. `https://api.openai.com/v1` or `https://api.anthropic.com`.
    pub base_url: String,
    pub key: Secret,
    pub timeout: Duration,
}

/// Rough token count for budgeting and fitting when a provider does not say: 3.3 bytes a
/// token, which real tokenizers reach on code and prose mixed (4 undercounts them by a fifth).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64 * 10).div_ceil(33)
}

/// `Retry-After` as seconds (integer or decimal); HTTP dates fall back to backoff.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(600.0)))
}

impl Provider {
    pub fn url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.protocol {
            Protocol::Anthropic => format!("{base}/v1/messages"),
            _ => format!("{base}/chat/completions"),
        }
    }

    /// The exact JSON body of a call.
    pub fn body(&self, r: &CallRequest) -> Js {
        let v = |x: Value| Js::V(x);
        match self.protocol {
            Protocol::OpenAi | Protocol::OpenAiCompatible => {
                let mut o = vec![
                    ("model", v(json!(self.model))),
                    (
                        "messages",
                        v(
                            json!([{"role": "system", "content": r.system}, {"role": "user", "content": r.user}]),
                        ),
                    ),
                    ("temperature", v(json!(r.temperature))),
                    (
                        if self.protocol == Protocol::OpenAi {
                            "max_completion_tokens"
                        } else {
                            "max_tokens"
                        },
                        v(json!(r.max_tokens)),
                    ),
                    ("seed", v(json!(r.seed))),
                ];
                if self.streams() {
                    o.push(("stream", v(json!(true))));
                    o.push(("stream_options", v(json!({"include_usage": true}))));
                }
                if let Some(s) = r.schema {
                    o.push((
                        "response_format",
                        Js::O(vec![
                            ("type", v(json!("json_schema"))),
                            (
                                "json_schema",
                                Js::O(vec![
                                    ("name", v(json!(s.name))),
                                    ("strict", v(json!(true))),
                                    ("schema", s.schema.clone()),
                                ]),
                            ),
                        ]),
                    ));
                }
                Js::O(o)
            }
            Protocol::Anthropic => {
                let mut o = vec![
                    ("model", v(json!(self.model))),
                    ("max_tokens", v(json!(r.max_tokens))),
                    ("system", v(json!(r.system))),
                    ("messages", v(json!([{"role": "user", "content": r.user}]))),
                    ("temperature", v(json!(r.temperature.min(1.0)))),
                ];
                if let Some(s) = r.schema {
                    o.push((
                        "tools",
                        Js::A(vec![Js::O(vec![
                            ("name", v(json!(s.name))),
                            ("description", v(json!(s.description))),
                            ("input_schema", s.schema.clone()),
                        ])]),
                    ));
                    o.push(("tool_choice", v(json!({"type": "tool", "name": s.name}))));
                }
                Js::O(o)
            }
        }
    }

    /// Pull the reply out of a 200 response body.
    pub fn parse_body(&self, body: &[u8], r: &CallRequest) -> Result<Reply, CallError> {
        let malformed = |why: &str| CallError::Retryable {
            why: format!("malformed response: {why}"),
            retry_after: None,
        };
        let v: Value =
            serde_json::from_slice(body).map_err(|e| malformed(&format!("not JSON ({e})")))?;
        let server_ms = server_ms(&v);
        let (text, finish, inp, out) = match self.protocol {
            Protocol::OpenAi | Protocol::OpenAiCompatible => {
                let choice = v
                    .pointer("/choices/0")
                    .ok_or_else(|| malformed("no choices[0]"))?;
                let msg = choice
                    .get("message")
                    .ok_or_else(|| malformed("no choices[0].message"))?;
                let text = match msg.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    _ => match msg.get("refusal").and_then(Value::as_str) {
                        Some(refusal) => format!("[refused] {refusal}"),
                        None => String::new(),
                    },
                };
                let finish = choice
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let u = v.get("usage");
                (
                    text,
                    finish,
                    u.and_then(|u| u.get("prompt_tokens"))
                        .and_then(Value::as_u64),
                    u.and_then(|u| u.get("completion_tokens"))
                        .and_then(Value::as_u64),
                )
            }
            Protocol::Anthropic => {
                let blocks = v
                    .get("content")
                    .and_then(Value::as_array)
                    .ok_or_else(|| malformed("no content array"))?;
                let tool = blocks
                    .iter()
                    .find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
                let text = match tool.and_then(|t| t.get("input")) {
                    Some(input) => input.to_string(),
                    None => blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n"),
                };
                let finish = v
                    .get("stop_reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let u = v.get("usage");
                (
                    text,
                    finish,
                    u.and_then(|u| u.get("input_tokens"))
                        .and_then(Value::as_u64),
                    u.and_then(|u| u.get("output_tokens"))
                        .and_then(Value::as_u64),
                )
            }
        };
        Ok(Reply::of(r, text, finish, (inp, out), server_ms, None))
    }

    /// Whether replies are streamed: from OpenAI-compatible servers, so that `--timeout` bounds
    /// the wait for the first token and between tokens rather than the whole reply, and the
    /// first token's time is known. Hosted APIs answer whole.
    pub fn streams(&self) -> bool {
        self.protocol == Protocol::OpenAiCompatible
    }

    /// Read a streamed reply (server-sent events of chat-completion chunks), each wait for
    /// data bounded by the timeout. A server that answers whole instead is read whole.
    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        r: &CallRequest<'_>,
        sent: std::time::Instant,
        transport: &(dyn Fn(reqwest::Error, &str) -> CallError + Sync),
    ) -> Result<Reply, CallError> {
        let idle = || CallError::Retryable {
            why: format!("timed out: no token for {:.1}s", self.timeout.as_secs_f64()),
            retry_after: None,
        };
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        let mut buf: Vec<u8> = Vec::new();
        let mut stream = Stream::default();
        loop {
            let chunk = tokio::time::timeout(self.timeout, resp.chunk())
                .await
                .map_err(|_| idle())?
                .map_err(|e| transport(e, "reply cut off"))?;
            let Some(bytes) = chunk else { break };
            buf.extend_from_slice(&bytes);
            if !sse {
                continue;
            }
            while let Some(nl) = buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=nl).collect();
                let line = String::from_utf8_lossy(&line);
                if stream.event(line.trim(), sent).map_err(|why| {
                    context_exceeded(why.as_bytes())
                        .map(CallError::Fatal)
                        .unwrap_or(CallError::Retryable {
                            why: self.key.scrub(&format!("the server's stream said: {why}")),
                            retry_after: None,
                        })
                })? {
                    return Ok(stream.reply(r));
                }
            }
        }
        if !sse {
            return self.parse_body(&buf, r);
        }
        if stream.started {
            // The server closed the stream without its last event.
            return Err(CallError::Retryable {
                why: "reply cut off: the stream ended before its last event".into(),
                retry_after: None,
            });
        }
        Err(CallError::Retryable {
            why: "malformed response: an empty stream".into(),
            retry_after: None,
        })
    }

    /// One HTTP call, no retries.
    pub async fn call(
        &self,
        client: &reqwest::Client,
        r: &CallRequest<'_>,
    ) -> Result<Reply, CallError> {
        let body = serde_json::to_vec(&self.body(r))
            .map_err(|e| CallError::Fatal(format!("cannot encode request: {e}")))?;
        let mut req = client
            .post(self.url())
            .header("content-type", "application/json")
            .body(body);
        if !self.streams() {
            req = req.timeout(self.timeout);
        }
        match self.protocol {
            Protocol::Anthropic => {
                req = req.header("anthropic-version", "2023-06-01");
                if let Some(k) = &self.key.0 {
                    req = req.header("x-api-key", k);
                }
            }
            _ => {
                if let Some(k) = &self.key.0 {
                    req = req.bearer_auth(k);
                }
            }
        }
        let transport = |e: reqwest::Error, what: &str| {
            let kind = if e.is_timeout() {
                format!("timed out after {:.1}s", self.timeout.as_secs_f64())
            } else if e.is_connect() {
                // Nothing listens there: retrying for half a minute only hides that.
                return CallError::Fatal(self.key.scrub(&format!(
                    "cannot connect to {}: {} (is the server running? `bash examples/local-model.sh` starts a local one)",
                    self.base_url,
                    without_url(&e)
                )));
            } else {
                what.to_string()
            };
            // reqwest errors name the URL, never headers; scrub anyway.
            CallError::Retryable {
                why: self.key.scrub(&format!("{kind}: {}", without_url(&e))),
                retry_after: None,
            }
        };
        let sent = std::time::Instant::now();
        let resp = match tokio::time::timeout(self.timeout, req.send()).await {
            Ok(r) => r.map_err(|e| transport(e, "request failed"))?,
            Err(_) => {
                return Err(CallError::Retryable {
                    why: format!(
                        "timed out after {:.1}s waiting for the server to answer",
                        self.timeout.as_secs_f64()
                    ),
                    retry_after: None,
                })
            }
        };
        let status = resp.status();
        if status.is_success() && self.streams() {
            return self.read_stream(resp, r, sent, &transport).await;
        }
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = match tokio::time::timeout(self.timeout, resp.bytes()).await {
            Ok(b) => b.map_err(|e| transport(e, "reply cut off"))?,
            Err(_) => {
                return Err(CallError::Retryable {
                    why: format!(
                        "timed out after {:.1}s reading the reply",
                        self.timeout.as_secs_f64()
                    ),
                    retry_after: None,
                })
            }
        };
        if status.is_success() {
            return self.parse_body(&bytes, r);
        }
        let snippet: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
        let why = self
            .key
            .scrub(&format!("HTTP {}: {}", status.as_u16(), snippet.trim()));
        if let Some(why) = context_exceeded(&bytes) {
            return Err(CallError::Fatal(why));
        }
        if r.schema.is_some() && status.as_u16() == 400 && refuses_schema(&snippet) {
            return Err(CallError::SchemaRefused(why));
        }
        if status.as_u16() == 429 || status.as_u16() == 408 || status.is_server_error() {
            Err(CallError::Retryable { why, retry_after })
        } else {
            Err(CallError::Fatal(why))
        }
    }
}

/// What a stream of chat-completion chunks has said so far.
#[derive(Default)]
struct Stream {
    text: String,
    finish: String,
    input: Option<u64>,
    output: Option<u64>,
    server_ms: Option<f64>,
    first_token_ms: Option<u64>,
    started: bool,
}

impl Stream {
    /// Take one line of the stream; `Ok(true)` at its end, `Err` with the server's error.
    fn event(&mut self, line: &str, sent: std::time::Instant) -> Result<bool, String> {
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(false);
        };
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else {
            return Ok(false);
        };
        if v.get("error").is_some() {
            return Err(data.to_string());
        }
        self.started = true;
        if let Some(c) = v
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            if !c.is_empty() && self.first_token_ms.is_none() {
                self.first_token_ms = Some(sent.elapsed().as_millis() as u64);
            }
            self.text.push_str(c);
        }
        if let Some(f) = v
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
        {
            self.finish = f.to_string();
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.input = u
                .get("prompt_tokens")
                .and_then(Value::as_u64)
                .or(self.input);
            self.output = u
                .get("completion_tokens")
                .and_then(Value::as_u64)
                .or(self.output);
        }
        self.server_ms = server_ms(&v).or(self.server_ms);
        Ok(false)
    }

    fn reply(self, r: &CallRequest) -> Reply {
        Reply::of(
            r,
            self.text,
            self.finish,
            (self.input, self.output),
            self.server_ms,
            self.first_token_ms,
        )
    }
}

/// The server's own time on a call (prompt plus generation, milliseconds) from llama.cpp's
/// `timings`, in a whole reply or a stream's last event.
fn server_ms(v: &Value) -> Option<f64> {
    let t = v.get("timings")?;
    let ms = |k: &str| t.get(k).and_then(Value::as_f64);
    Some(ms("prompt_ms")? + ms("predicted_ms")?)
}

/// A server's answer that the prompt does not fit its context (llama.cpp's
/// `exceed_context_size_error`, with the prompt's and the context's sizes), said in words.
pub fn context_exceeded(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let e = v.get("error")?;
    let kind = e.get("type").and_then(Value::as_str).unwrap_or("");
    let msg = e.get("message").and_then(Value::as_str).unwrap_or("");
    if kind != "exceed_context_size_error" && !msg.contains("exceeds the available context") {
        return None;
    }
    let n = |k: &str| e.get(k).and_then(Value::as_u64);
    Some(match (n("n_prompt_tokens"), n("n_ctx")) {
        (Some(p), Some(c)) => format!(
            "the prompt has {p} tokens and the server's context holds {c} per call: start the server with a larger context (or fewer parallel slots), or pass --context-window {c} so dei shrinks prompts to fit"
        ),
        _ => format!("the prompt does not fit the server's context: {msg}"),
    })
}

/// Whether a 400 reply says the server does not take the structured-output schema.
fn refuses_schema(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "response_format",
        "json_schema",
        "schema",
        "grammar",
        "tool",
    ]
    .iter()
    .any(|w| b.contains(w))
}

/// A transport error in words, with its causes and without the URL it names.
pub fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(&format!(" ({u})"), "").replace(u.as_str(), "");
    }
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(&format!(": {inner}"));
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(protocol: Protocol) -> Provider {
        Provider {
            protocol,
            model: "m".into(),
            base_url: "http://x/v1/".into(),
            key: Secret(Some("sk-secret-1234".into())),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn schema_keys_keep_their_order_and_key_stays_out_of_the_body() {
        let schema = Schema {
            name: "review",
            description: "d",
            schema: Js::O(vec![("z", Js::V(json!(1))), ("a", Js::V(json!(2)))]),
        };
        let r = CallRequest {
            system: "s",
            user: "u",
            temperature: 0.5,
            max_tokens: 10,
            seed: 3,
            schema: Some(&schema),
        };
        for proto in [Protocol::OpenAi, Protocol::Anthropic] {
            let body = serde_json::to_string(&p(proto).body(&r)).unwrap();
            assert!(
                body.find("\"z\"").unwrap() < body.find("\"a\"").unwrap(),
                "{body}"
            );
            assert!(!body.contains("sk-secret"), "{body}");
        }
        assert_eq!(p(Protocol::OpenAi).url(), "http://x/v1/chat/completions");
        assert_eq!(format!("{:?}", p(Protocol::OpenAi).key), "[redacted]");
        assert_eq!(
            p(Protocol::OpenAi).key.scrub("bad key sk-secret-1234!"),
            "bad key [redacted]!"
        );
    }

    #[test]
    fn parses_both_protocols_and_flags_malformed() {
        let r = CallRequest {
            system: "s",
            user: "u",
            temperature: 0.0,
            max_tokens: 10,
            seed: 0,
            schema: None,
        };
        let o = br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#;
        let rep = p(Protocol::OpenAi).parse_body(o, &r).unwrap();
        assert_eq!(
            (
                rep.text.as_str(),
                rep.input_tokens,
                rep.output_tokens,
                rep.estimated
            ),
            ("hi", 5, 2, false)
        );
        let a = br#"{"content":[{"type":"tool_use","name":"x","input":{"score":3}}],"stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":1}}"#;
        let rep = p(Protocol::Anthropic).parse_body(a, &r).unwrap();
        assert_eq!(rep.text, r#"{"score":3}"#);
        assert!(matches!(
            p(Protocol::OpenAi).parse_body(b"{\"choices\":[", &r),
            Err(CallError::Retryable { .. })
        ));
        assert!(matches!(
            p(Protocol::Anthropic).parse_body(b"{}", &r),
            Err(CallError::Retryable { .. })
        ));
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
