//! The model client, below every stage that asks a model (localization, review, generation):
//! providers speaking the real wire protocols ([`provider`]), the engine that runs calls with
//! a cache, concurrency, rate limits, retries and a cost cap ([`runner`], [`cache`],
//! [`limiter`]), reply formats ([`parse`]), the [`model::Model`] trait for step-by-step
//! conversations, and the flags that configure it all ([`config`]).

pub mod cache;
pub mod config;
pub mod limiter;
pub mod model;
pub mod parse;
pub mod prompts;
pub mod provider;
pub mod runner;
pub mod server;

use serde::Serialize;

/// How the model is asked to shape its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// A JSON object (enforced by the provider's structured output where it has one).
    Json,
    /// `<issue>…</issue>`-style tagged sections.
    Tags,
}

/// A rendered prompt: what is sent, exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Rendered {
    pub system: String,
    pub user: String,
}

impl Rendered {
    /// Tokens the prompt is estimated to take, its chat template included (budgets, rate
    /// limits, dry-run counts and fitting a prompt to the model's context all use this).
    pub fn estimated_tokens(&self) -> u64 {
        provider::estimate_tokens(&self.system) + provider::estimate_tokens(&self.user) + 16
    }
}
