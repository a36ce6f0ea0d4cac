//! The one thing the generator and the localization re-ranker need from a language model:
//! complete a prompt.
//!
//! [`Model`] is deliberately tiny so that any client (the committee's LLM client, a local
//! server, a test double) plugs in with a few lines. [`Scripted`] is the test double: it answers
//! from a script, in order or by matching prompt content, and records every call.

use super::provider::Schema;
use super::runner::Engine;
use crate::model::Usage;
use anyhow::bail;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Ask a language model for one completion.
pub trait Model: Send + Sync {
    /// Complete `prompt` under the `system` message at `temperature`; returns the reply text.
    fn complete(&self, system: &str, prompt: &str, temperature: f64) -> anyhow::Result<String>;

    /// [`Model::complete`] with the reply held to `shape` where the model's server takes a
    /// schema: the reply is then that JSON's text. Callers read either shape of reply, since
    /// a server may refuse schemas (and a test double answers in plain text).
    fn complete_shaped(
        &self,
        system: &str,
        prompt: &str,
        temperature: f64,
        shape: &Schema,
    ) -> anyhow::Result<String> {
        let _ = shape;
        self.complete(system, prompt, temperature)
    }

    /// How much text a shaped reply's `fields` text fields may each hold (none: unbounded).
    fn text_bounds(&self, fields: usize) -> super::parse::Bounds {
        let _ = fields;
        super::parse::Bounds { field_chars: None }
    }
}

impl<M: Model + ?Sized> Model for &M {
    fn complete(&self, system: &str, prompt: &str, temperature: f64) -> anyhow::Result<String> {
        (**self).complete(system, prompt, temperature)
    }

    fn complete_shaped(
        &self,
        system: &str,
        prompt: &str,
        temperature: f64,
        shape: &Schema,
    ) -> anyhow::Result<String> {
        (**self).complete_shaped(system, prompt, temperature, shape)
    }

    fn text_bounds(&self, fields: usize) -> super::parse::Bounds {
        (**self).text_bounds(fields)
    }
}

/// One call a [`Scripted`] model received.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub system: String,
    pub prompt: String,
    pub temperature: f64,
}

#[derive(Debug, Clone)]
struct Rule {
    /// Reply only when the prompt contains this text (`None`: any prompt).
    when: Option<String>,
    reply: String,
    /// Stay in the script after answering (otherwise used once).
    sticky: bool,
}

/// A scripted fake model for tests: the first unused rule whose `when` text occurs in the
/// prompt answers; a rule without `when` answers any prompt. Rules are used once unless
/// added with [`Scripted::always`].
#[derive(Debug, Default)]
pub struct Scripted {
    rules: Mutex<Vec<Rule>>,
    calls: Mutex<Vec<Call>>,
}

impl Scripted {
    pub fn new() -> Scripted {
        Scripted::default()
    }

    /// Answer the next prompt (whatever it says) with `reply`, once.
    pub fn then(self, reply: impl Into<String>) -> Scripted {
        self.push(None, reply.into(), false)
    }

    /// Answer the next prompt that contains `needle` with `reply`, once.
    pub fn when(self, needle: impl Into<String>, reply: impl Into<String>) -> Scripted {
        self.push(Some(needle.into()), reply.into(), false)
    }

    /// Answer every prompt containing `needle` with `reply`.
    pub fn always(self, needle: impl Into<String>, reply: impl Into<String>) -> Scripted {
        self.push(Some(needle.into()), reply.into(), true)
    }

    fn push(self, when: Option<String>, reply: String, sticky: bool) -> Scripted {
        self.rules.lock().expect("script lock").push(Rule {
            when,
            reply,
            sticky,
        });
        self
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls lock").clone()
    }
}

impl Model for Scripted {
    fn complete(&self, system: &str, prompt: &str, temperature: f64) -> anyhow::Result<String> {
        self.calls.lock().expect("calls lock").push(Call {
            system: system.to_string(),
            prompt: prompt.to_string(),
            temperature,
        });
        let mut rules = self.rules.lock().expect("script lock");
        let found = rules.iter().position(|r| match &r.when {
            None => true,
            Some(w) => prompt.contains(w.as_str()),
        });
        let Some(i) = found else {
            let head: String = prompt.chars().take(160).collect();
            bail!("scripted model has no reply left for a prompt starting: {head:?}");
        };
        let reply = rules[i].reply.clone();
        if !rules[i].sticky {
            rules.remove(i);
        }
        Ok(reply)
    }
}

/// The real client: [`Model`] over the committee's [`Engine`] (providers, persistent cache,
/// concurrency, rate limits, retries, cost cap, ledger, dry run). One per (issue, strategy):
/// asking the same prompt at the same temperature again is a new sample (`0, 1, 2, ...` in the
/// cache key), so repeated sampling gives different replies, and a rerun of the same work
/// answers every call from the cache.
pub struct EngineModel {
    engine: Arc<Engine>,
    label: String,
    seen: Mutex<HashMap<(String, String, u64), u32>>,
    usage: Mutex<Usage>,
}

impl EngineModel {
    /// `label` names the calls in the ledger and in dry-run output (e.g. `issue/strategy`).
    pub fn new(engine: Arc<Engine>, label: impl Into<String>) -> EngineModel {
        EngineModel {
            engine,
            label: label.into(),
            seen: Mutex::default(),
            usage: Mutex::default(),
        }
    }

    /// Calls, cache hits, tokens and cost of this model's calls so far.
    pub fn usage(&self) -> Usage {
        *self.usage.lock().expect("usage lock")
    }
}

impl EngineModel {
    fn ask(
        &self,
        system: &str,
        prompt: &str,
        temperature: f64,
        shape: Option<&Schema>,
    ) -> anyhow::Result<String> {
        let sample = {
            let mut seen = self.seen.lock().expect("seen lock");
            let n = seen
                .entry((
                    system.to_string(),
                    prompt.to_string(),
                    temperature.to_bits(),
                ))
                .or_insert(0);
            *n += 1;
            *n - 1
        };
        // `sample` counts asks of this very prompt (it keys the cache), not a strategy's
        // samples, so only a repeat is named.
        let label = match sample {
            0 => format!("{} t={temperature}", self.label),
            n => format!("{} t={temperature} ask {}", self.label, n + 1),
        };
        let (text, usage) = self
            .engine
            .complete_many_shaped(system, prompt, &[(temperature, sample, label)], shape)
            .pop()
            .unwrap_or_else(|| Err(anyhow::anyhow!("internal error: no outcome")))?;
        self.usage.lock().expect("usage lock").add(&usage);
        Ok(text)
    }
}

impl Model for EngineModel {
    fn complete(&self, system: &str, prompt: &str, temperature: f64) -> anyhow::Result<String> {
        self.ask(system, prompt, temperature, None)
    }

    fn complete_shaped(
        &self,
        system: &str,
        prompt: &str,
        temperature: f64,
        shape: &Schema,
    ) -> anyhow::Result<String> {
        self.ask(system, prompt, temperature, Some(shape))
    }

    fn text_bounds(&self, fields: usize) -> super::parse::Bounds {
        self.engine.text_bounds(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_matching_and_exhaustion() {
        let m = Scripted::new()
            .when("files", "a.py")
            .then("first")
            .always("ping", "pong");
        assert_eq!(m.complete("s", "anything", 0.0).unwrap(), "first");
        assert_eq!(m.complete("s", "which files?", 0.2).unwrap(), "a.py");
        assert_eq!(m.complete("s", "ping", 0.0).unwrap(), "pong");
        assert_eq!(m.complete("s", "ping again", 0.0).unwrap(), "pong");
        let err = m.complete("s", "other", 0.0).unwrap_err().to_string();
        assert!(err.contains("no reply left"), "{err}");
        assert_eq!(m.calls().len(), 5);
        assert_eq!(m.calls()[1].temperature, 0.2);
    }
}
