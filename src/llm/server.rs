//! What a model server says of itself, asked once before the first call: whether it is there
//! at all (the health check), its context window, and how many calls it takes at once.
//!
//! - llama.cpp: `GET /props` gives `default_generation_settings.n_ctx` (the context of one
//!   slot: the server divides `-c` among its `--parallel` slots) and `total_slots`.
//! - vLLM: `GET /v1/models` gives `max_model_len`.
//! - Ollama: `POST /api/show` gives the model's `num_ctx` parameter when one is set, else the
//!   model's own context length, of which Ollama serves its default (4,096) unless told more.
//! - Hosted OpenAI and Anthropic models: a table of published context windows.
//!
//! A server that cannot be reached makes [`ServerInfo::down`] say so, and every call then fails
//! at once with that reason instead of retrying.

use super::provider::{Protocol, Provider};
use serde_json::Value;
use std::time::Duration;

/// Context windows of hosted models (tokens) as published; the longest matching prefix wins.
pub const WINDOWS: &[(&str, u64)] = &[
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude", 200_000),
];

/// Ollama's context when a model sets no `num_ctx`.
pub const OLLAMA_DEFAULT_CTX: u64 = 4096;

/// What is known of the server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerInfo {
    /// Tokens one call may hold, prompt and reply together.
    pub context: Option<u64>,
    /// Calls the server works on at once.
    pub slots: Option<usize>,
    /// Where that was read (for messages).
    pub from: String,
    /// Why the server cannot be used at all (nothing listening).
    pub down: Option<String>,
}

impl ServerInfo {
    /// What is known without asking the server: the table of hosted models.
    pub fn offline(p: &Provider) -> ServerInfo {
        let context = WINDOWS
            .iter()
            .filter(|(m, _)| p.model.starts_with(m))
            .max_by_key(|(m, _)| m.len())
            .map(|&(_, w)| w);
        ServerInfo {
            context,
            slots: None,
            from: if context.is_some() {
                "the table of hosted models".into()
            } else {
                String::new()
            },
            down: None,
        }
    }
}

/// The server's root: the base URL without its trailing `/v1`.
fn root(base: &str) -> &str {
    let b = base.trim_end_matches('/');
    b.strip_suffix("/v1").unwrap_or(b)
}

async fn get_json(req: reqwest::RequestBuilder) -> Result<Option<Value>, String> {
    match req.timeout(Duration::from_secs(10)).send().await {
        Ok(r) if r.status().is_success() => Ok(r.json::<Value>().await.ok()),
        Ok(_) => Ok(None),
        Err(e) if e.is_connect() => Err(super::provider::without_url(&e)),
        Err(_) => Ok(None),
    }
}

/// Ask an OpenAI-compatible server what it is; hosted providers are looked up in [`WINDOWS`].
pub async fn probe(client: &reqwest::Client, p: &Provider) -> ServerInfo {
    if p.protocol != Protocol::OpenAiCompatible {
        return ServerInfo::offline(p);
    }
    let base = p.base_url.trim_end_matches('/');
    let root = root(base);
    let auth = |r: reqwest::RequestBuilder| match &p.key.0 {
        Some(k) => r.bearer_auth(k),
        None => r,
    };
    let down = |e: String| {
        ServerInfo {
        down: Some(p.key.scrub(&format!(
            "cannot connect to {base}: {e} (is the server running? `bash examples/local-model.sh` starts a local one)"
        ))),
        ..ServerInfo::default()
    }
    };
    // llama.cpp
    match get_json(auth(client.get(format!("{root}/props")))).await {
        Err(e) => return down(e),
        Ok(Some(v)) => {
            let ctx = v
                .pointer("/default_generation_settings/n_ctx")
                .and_then(Value::as_u64)
                .filter(|&n| n > 0);
            let slots = v
                .get("total_slots")
                .and_then(Value::as_u64)
                .filter(|&n| n > 0)
                .map(|n| n as usize);
            if ctx.is_some() || slots.is_some() {
                return ServerInfo {
                    context: ctx,
                    slots,
                    from: format!("{root}/props"),
                    down: None,
                };
            }
        }
        Ok(None) => {}
    }
    // vLLM (and any server listing its models)
    if let Ok(Some(v)) = get_json(auth(client.get(format!("{base}/models")))).await {
        let models = v.get("data").and_then(Value::as_array);
        let mine = models.and_then(|ms| {
            ms.iter()
                .find(|m| m.get("id").and_then(Value::as_str) == Some(p.model.as_str()))
                .or(ms.first())
        });
        if let Some(len) = mine
            .and_then(|m| m.get("max_model_len"))
            .and_then(Value::as_u64)
        {
            return ServerInfo {
                context: Some(len),
                slots: None,
                from: format!("{base}/models"),
                down: None,
            };
        }
    }
    // Ollama
    let show = client
        .post(format!("{root}/api/show"))
        .json(&serde_json::json!({ "model": p.model }));
    if let Ok(Some(v)) = get_json(show).await {
        if let Some(ctx) = ollama_context(&v) {
            return ServerInfo {
                context: Some(ctx),
                slots: None,
                from: format!("{root}/api/show"),
                down: None,
            };
        }
    }
    ServerInfo::default()
}

/// Ollama's served context from `/api/show`: `num_ctx` when set, else its default, never more
/// than the model's own length.
pub fn ollama_context(v: &Value) -> Option<u64> {
    let own = v
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|m| {
            m.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        });
    let set = v.get("parameters").and_then(Value::as_str).and_then(|p| {
        p.lines().find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("num_ctx"))
                .then(|| w.next()?.parse::<u64>().ok())
                .flatten()
        })
    });
    match (set, own) {
        (Some(s), Some(o)) => Some(s.min(o)),
        (Some(s), None) => Some(s),
        (None, Some(o)) => Some(o.min(OLLAMA_DEFAULT_CTX)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ollama_serves_num_ctx_or_its_default() {
        let v = json!({"model_info": {"llama.context_length": 131072}, "parameters": "num_ctx 8192\nstop x"});
        assert_eq!(ollama_context(&v), Some(8192));
        let v = json!({"model_info": {"gemma3.context_length": 32768}});
        assert_eq!(ollama_context(&v), Some(OLLAMA_DEFAULT_CTX));
        assert_eq!(ollama_context(&json!({})), None);
    }

    #[test]
    fn hosted_windows_by_longest_prefix() {
        let p = |m: &str| Provider {
            protocol: Protocol::OpenAi,
            model: m.into(),
            base_url: "https://x/v1".into(),
            key: Default::default(),
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            ServerInfo::offline(&p("gpt-4o-mini")).context,
            Some(128_000)
        );
        assert_eq!(
            ServerInfo::offline(&p("gpt-4.1-nano")).context,
            Some(1_047_576)
        );
        assert_eq!(ServerInfo::offline(&p("mystery")).context, None);
        assert_eq!(root("http://h:8080/v1/"), "http://h:8080");
    }
}
