//! The model settings and their resolution: provider, model, key (from the environment only),
//! prices, limits, cache. [`LlmOptions`] are the settings as given (the command line's LLM
//! flags of `dei rank`, `dei generate` and `dei locate` fill them in; the library has no
//! command line); [`LlmOptions::resolve`] turns them into an [`LlmConfig`],
//! [`LlmOptions::engine`] into a running [`Engine`].

use super::cache;
use super::provider::{Protocol, Provider, Secret};
use super::runner::{Engine, Price, Settings};
use super::Format;
use anyhow::{bail, Context as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What to ask which model, and how: the unresolved settings (the command line's LLM flags
/// fill them in, `src/cli/llm.rs`). [`LlmOptions::default`] holds the command line's defaults.
#[derive(Debug, Clone)]
pub struct LlmOptions {
    /// The model, `PROVIDER:MODEL`: openai, anthropic, openai-compatible (needs `base_url`),
    /// vllm, ollama or llamacpp; `None`: no model.
    pub llm: Option<String>,
    /// Server URL (OpenAI-compatible: up to /v1; Anthropic: without /v1).
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY).
    pub api_key_env: Option<String>,
    /// How candidates are judged: pointwise (DEI), listwise or pairwise.
    pub selector: String,
    /// Samples per candidate (pointwise), per issue (listwise) or per pair (pairwise).
    pub samples: u32,
    /// Sampling temperature (default 0 for one sample, 0.7 for more).
    pub temperature: Option<f64>,
    /// Most tokens a reply may have.
    pub max_tokens: u32,
    /// Reply format: json (structured output, the default) or tags.
    pub output_format: Option<String>,
    /// The model's context window in tokens, when the server does not say (llama.cpp, vLLM
    /// and Ollama do) and the model is not in the table of hosted models.
    pub context_window: Option<u64>,
    /// Calls in flight at once.
    pub concurrency: usize,
    /// Requests per minute (off by default).
    pub rpm: Option<u32>,
    /// Tokens per minute, input plus allowed output (off by default).
    pub tpm: Option<u64>,
    /// Retries of a call on 429, 5xx, timeouts and broken replies.
    pub retries: u32,
    /// Extra asks when a reply cannot be parsed, before the candidate is unscored.
    pub parse_retries: u32,
    /// First retry delay in milliseconds (doubles each retry, with jitter; Retry-After wins).
    pub backoff_ms: u64,
    /// Per-call timeout in seconds.
    pub timeout: f64,
    /// Response cache folder.
    pub cache: PathBuf,
    /// Do not read or write the response cache.
    pub no_cache: bool,
    /// Stop scheduling calls once this many US dollars could be spent.
    pub max_cost: Option<f64>,
    /// Input price, USD per million tokens (overrides the built-in table).
    pub price_in: Option<f64>,
    /// Output price, USD per million tokens (overrides the built-in table).
    pub price_out: Option<f64>,
    /// Print the exact prompts and count calls and tokens; call nothing.
    pub dry_run: bool,
    /// Folder of prompt templates replacing the built-in ones of the same name (see prompts/).
    pub prompt_dir: Option<PathBuf>,
    /// Rubric file (see rubrics/default.md).
    pub rubric: Option<PathBuf>,
    /// Append one JSON line per call (tokens, cost, cache hit, result) to this file.
    pub ledger: Option<PathBuf>,
    /// Before reviewing, let the model re-rank where the issue points (two more calls per
    /// issue); reviewers are shown the definitions it picks when a candidate leaves them alone.
    pub llm_locate: bool,
    /// Review one representative per group of candidates (behaviour class with `--exec`, else
    /// the same change after normalization); the other members share its review.
    pub review_once: bool,
    /// How the model was named on the command line, for messages: `--llm` (the default), or
    /// `--exec-llm-repro=` when that flag names a model of its own.
    pub flag: &'static str,
}

impl Default for LlmOptions {
    fn default() -> Self {
        LlmOptions {
            llm: None,
            base_url: None,
            api_key_env: None,
            selector: "pointwise".into(),
            samples: 1,
            temperature: None,
            max_tokens: 2048,
            output_format: None,
            context_window: None,
            concurrency: 8,
            rpm: None,
            tpm: None,
            retries: 5,
            parse_retries: 2,
            backoff_ms: 1000,
            timeout: 120.0,
            cache: PathBuf::from(".dei/cache"),
            no_cache: false,
            max_cost: None,
            price_in: None,
            price_out: None,
            dry_run: false,
            prompt_dir: None,
            rubric: None,
            ledger: None,
            llm_locate: false,
            review_once: false,
            flag: "--llm",
        }
    }
}

/// The providers' published list prices in USD per million tokens (input, output), which they
/// change from time to time; the longest matching model-name prefix wins. Override with
/// `--price-in/--price-out`.
pub const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-5-mini", 0.25, 2.00),
    ("gpt-5", 1.25, 10.00),
    ("o3-mini", 1.10, 4.40),
    ("o4-mini", 1.10, 4.40),
    ("o3", 2.00, 8.00),
    ("claude-3-5-haiku", 0.80, 4.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-3-5-sonnet", 3.00, 15.00),
    ("claude-3-7-sonnet", 3.00, 15.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-opus-4", 15.00, 75.00),
];

pub fn table_price(model: &str) -> Option<Price> {
    PRICES
        .iter()
        .filter(|(p, _, _)| model.starts_with(p))
        .max_by_key(|(p, _, _)| p.len())
        .map(|&(_, input, output)| Price { input, output })
}

/// Everything resolved from flags and environment.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    pub settings: Settings,
    pub selector: String,
    pub samples: u32,
    pub cache: Option<PathBuf>,
    pub prompt_dir: Option<PathBuf>,
    pub rubric: Option<PathBuf>,
    /// Re-rank the issue-only localization with the model ([`crate::localize::rerank`]).
    pub locate: bool,
    /// Review one representative per group of candidates (see `review::llm::once`).
    pub review_once: bool,
}

impl LlmOptions {
    /// The model `spec` as the user wrote it, for messages: `--llm openai:x`, or
    /// `--exec-llm-repro=openai:x`.
    pub fn named(&self, spec: &str) -> String {
        if self.flag.ends_with('=') {
            format!("{}{spec}", self.flag)
        } else {
            format!("{} {spec}", self.flag)
        }
    }

    /// Resolve flags plus environment (`env` looks a variable up) into a configuration;
    /// `None` when no model is named.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<Option<LlmConfig>> {
        let Some(spec) = self.llm.as_deref().map(str::trim).filter(|s| !s.is_empty()) else {
            if self.dry_run {
                bail!("--dry-run needs a model: pass --llm PROVIDER:MODEL (or set DEI_LLM)");
            }
            return Ok(None);
        };
        let named = self.named(spec);
        let Some((kind, model)) = spec.split_once(':').filter(|(_, m)| !m.is_empty()) else {
            bail!("{named}: write PROVIDER:MODEL, e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, openai-compatible:MODEL --base-url URL");
        };
        let (protocol, default_base, default_key) = match kind {
            "openai" => (Protocol::OpenAi, Some("https://api.openai.com/v1"), Some("OPENAI_API_KEY")),
            "anthropic" => (Protocol::Anthropic, Some("https://api.anthropic.com"), Some("ANTHROPIC_API_KEY")),
            "openai-compatible" | "compatible" => (Protocol::OpenAiCompatible, None, None),
            "vllm" => (Protocol::OpenAiCompatible, Some("http://localhost:8000/v1"), None),
            "ollama" => (Protocol::OpenAiCompatible, Some("http://localhost:11434/v1"), None),
            "llamacpp" | "llama.cpp" => (Protocol::OpenAiCompatible, Some("http://localhost:8080/v1"), None),
            other => bail!("{named}: unknown provider `{other}`; use openai, anthropic, openai-compatible, vllm, ollama or llamacpp"),
        };
        let base_url = match (&self.base_url, default_base) {
            (Some(u), _) => u.clone(),
            (None, Some(d)) => d.to_string(),
            (None, None) => bail!("{named}: an OpenAI-compatible server needs --base-url (e.g. http://localhost:8000/v1)"),
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            bail!("--base-url `{base_url}` must start with http:// or https://");
        }
        let key_var = self.api_key_env.as_deref().or(default_key);
        let key = match key_var {
            Some(var) => match env(var).filter(|k| !k.trim().is_empty()) {
                Some(k) => Some(k.trim().to_string()),
                None if self.dry_run || self.base_url.is_some() && self.api_key_env.is_none() => None,
                None => bail!("{named}: set the API key in the environment variable {var} (keys are read from the environment only)"),
            },
            None => None,
        };
        let format = match self.output_format.as_deref() {
            Some("json") => Format::Json,
            Some("tags") => Format::Tags,
            Some(other) => bail!("--output-format `{other}`: use json or tags"),
            None => Format::Json,
        };
        if self.context_window == Some(0) {
            bail!("--context-window must be a number of tokens above 0");
        }
        if self.samples == 0 {
            bail!("--samples must be at least 1");
        }
        if self.concurrency == 0 {
            bail!("--concurrency must be at least 1");
        }
        if !(self.timeout.is_finite() && self.timeout > 0.0) {
            bail!("--timeout must be a positive number of seconds");
        }
        let temperature = self
            .temperature
            .unwrap_or(if self.samples > 1 { 0.7 } else { 0.0 });
        if !(0.0..=2.0).contains(&temperature) {
            bail!("--temperature {temperature} is outside 0–2");
        }
        let known = match protocol {
            Protocol::OpenAiCompatible => Some(Price {
                input: 0.0,
                output: 0.0,
            }),
            _ => table_price(model),
        };
        let price = match (self.price_in, self.price_out, known) {
            (Some(i), Some(o), _) => Price {
                input: i,
                output: o,
            },
            (Some(i), None, k) => Price {
                input: i,
                output: k.map(|k| k.output).unwrap_or(0.0),
            },
            (None, Some(o), k) => Price {
                input: k.map(|k| k.input).unwrap_or(0.0),
                output: o,
            },
            (None, None, Some(k)) => k,
            (None, None, None) if self.max_cost.is_some() => {
                bail!("--max-cost: no price known for model `{model}`; pass --price-in and --price-out (USD per million tokens)")
            }
            (None, None, None) => Price {
                input: 0.0,
                output: 0.0,
            },
        };
        if let Some(m) = self.max_cost {
            if !(m.is_finite() && m >= 0.0) {
                bail!("--max-cost must be a non-negative number of US dollars");
            }
        }
        Ok(Some(LlmConfig {
            provider: Provider {
                protocol,
                model: model.to_string(),
                base_url,
                key: Secret(key),
                timeout: Duration::from_secs_f64(self.timeout),
            },
            settings: Settings {
                temperature,
                max_tokens: self.max_tokens.max(1),
                format,
                concurrency: self.concurrency,
                retries: self.retries,
                parse_retries: self.parse_retries,
                backoff_base: Duration::from_millis(self.backoff_ms),
                backoff_cap: Duration::from_secs(60),
                price,
                max_cost: self.max_cost,
                rpm: self.rpm,
                tpm: self.tpm,
                dry_run: self.dry_run,
                ledger: self.ledger.clone(),
                context_window: self.context_window,
            },
            selector: self.selector.clone(),
            samples: self.samples,
            cache: (!self.no_cache).then(|| self.cache.clone()),
            prompt_dir: self.prompt_dir.clone(),
            rubric: self.rubric.clone(),
            locate: self.llm_locate,
            review_once: self.review_once,
        }))
    }

    /// A bare engine for these flags (response cache opened), for work other than reviewing
    /// (generating candidates, re-ranking localization); `None` when no model is configured.
    pub fn engine(&self) -> anyhow::Result<Option<Arc<Engine>>> {
        let Some(cfg) = self.resolve(&|k| std::env::var(k).ok())? else {
            return Ok(None);
        };
        let cache = match &cfg.cache {
            Some(dir) => Some(
                cache::Cache::for_run(dir, cfg.settings.dry_run)
                    .context("the LLM response cache")?,
            ),
            None => None,
        };
        Ok(Some(Arc::new(Engine::new(
            cfg.provider,
            cfg.settings,
            cache,
        )?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(spec: &str) -> LlmOptions {
        LlmOptions {
            llm: Some(spec.into()),
            selector: "pointwise".into(),
            samples: 1,
            max_tokens: 100,
            concurrency: 2,
            timeout: 5.0,
            cache: ".dei/cache".into(),
            ..Default::default()
        }
    }

    #[test]
    fn resolves_providers_keys_and_prices() {
        let env = |k: &str| (k == "OPENAI_API_KEY" || k == "MYKEY").then(|| "sk-test".to_string());
        let c = args("openai:gpt-4o-mini").resolve(&env).unwrap().unwrap();
        assert_eq!(c.provider.protocol, Protocol::OpenAi);
        assert_eq!(
            c.settings.price,
            Price {
                input: 0.15,
                output: 0.60
            }
        );
        assert_eq!(c.settings.format, Format::Json);
        let e = args("anthropic:claude-sonnet-4-5")
            .resolve(&env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ANTHROPIC_API_KEY") && !e.contains("sk-test"),
            "{e}"
        );
        let a = LlmOptions {
            api_key_env: Some("MYKEY".into()),
            ..args("anthropic:claude-sonnet-4-5")
        };
        assert_eq!(
            a.resolve(&env).unwrap().unwrap().settings.price.output,
            15.0
        );
        assert!(args("openai-compatible:m")
            .resolve(&env)
            .unwrap_err()
            .to_string()
            .contains("--base-url"));
        let v = args("vllm:qwen").resolve(&env).unwrap().unwrap();
        assert_eq!(
            (v.provider.base_url.as_str(), v.settings.format),
            ("http://localhost:8000/v1", Format::Json)
        );
        assert!(args("bogus:m").resolve(&env).is_err());
        assert!(args("openai").resolve(&env).is_err());
        let unknown = LlmOptions {
            max_cost: Some(1.0),
            ..args("openai:mystery-model")
        };
        assert!(unknown
            .resolve(&env)
            .unwrap_err()
            .to_string()
            .contains("--price-in"));
        assert!(LlmOptions::default().resolve(&env).unwrap().is_none());
    }
}
