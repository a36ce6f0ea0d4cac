//! The LLM flags of each command: exactly the ones it uses, from shared groups, each command
//! turning its own into the library's [`LlmOptions`] (fields a command has no flag for keep
//! their defaults).
//!
//! | flags | rank | generate | locate |
//! |---|---|---|---|
//! | `--llm` (help says what the model does there) | ✓ | ✓ | ✓ |
//! | [`ServerArgs`]: `--base-url`, `--api-key-env` | ✓ | ✓ | ✓ |
//! | `--max-tokens` (generate: default 4096) | ✓ | ✓ | ✓ |
//! | [`CallArgs`]: `--concurrency`, `--rpm`, `--tpm`, `--retries`, `--parse-retries`, `--backoff-ms`, `--timeout` | ✓ | ✓ | ✓ |
//! | [`SpendArgs`]: `--cache`, `--no-cache`, `--max-cost`, `--price-in`, `--price-out`, `--ledger`, `--dry-run` | ✓ | ✓ | ✓ |
//! | `--prompt-dir` | ✓ | ✓ | ✓ |
//! | [`ReviewArgs`]: `--selector`, `--samples`, `--temperature`, `--output-format`, `--rubric`, `--llm-locate`, `--review-once` | ✓ | | |
//!
//! `dei generate --samples` is a generation flag of its own (samples per strategy), and the
//! generator samples at `--temperatures`; its calls ask for plain text, so a reply format has
//! no meaning there, nor for `dei locate`.

use super::args::heading::{LLM, LLM_COMMITTEE};
use clap::Args;
use dei::llm::config::LlmOptions;
use std::path::PathBuf;

/// Where the model's server is and which key it takes.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Server URL (OpenAI-compatible: up to /v1; Anthropic: without /v1).
    #[arg(long, value_name = "URL", help_heading = LLM)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, value_name = "VAR", help_heading = LLM)]
    pub api_key_env: Option<String>,
    /// The model's context window in tokens, for a server that does not say (llama.cpp,
    /// vLLM and Ollama do): prompts are shrunk to fit it.
    #[arg(long, value_name = "TOKENS", help_heading = LLM)]
    pub context_window: Option<u64>,
}

/// How calls are made: how many at once, how fast, how often retried.
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    /// Calls in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8, help_heading = LLM)]
    pub concurrency: usize,
    /// Requests per minute (off by default).
    #[arg(long, value_name = "N", help_heading = LLM)]
    pub rpm: Option<u32>,
    /// Tokens per minute, input plus allowed output (off by default).
    #[arg(long, value_name = "TOKENS", help_heading = LLM)]
    pub tpm: Option<u64>,
    /// Retries of a call on 429, 5xx, timeouts and broken replies.
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = LLM)]
    pub retries: u32,
    /// Extra asks when a reply cannot be used (empty, or not in the asked format).
    #[arg(long, value_name = "N", default_value_t = 2, help_heading = LLM)]
    pub parse_retries: u32,
    /// First retry delay in milliseconds (doubles each retry, with jitter; Retry-After wins).
    #[arg(long, value_name = "MS", default_value_t = 1000, help_heading = LLM)]
    pub backoff_ms: u64,
    /// Seconds a model call may wait for its reply, from when the request is sent (not while
    /// it waits for a free slot; a streamed reply: for each next token); retried (--retries).
    #[arg(long, value_name = "SECS", default_value_t = 120.0, help_heading = LLM)]
    pub timeout: f64,
}

/// What calls may cost and what they leave behind.
#[derive(Debug, Clone, Args)]
pub struct SpendArgs {
    /// Response cache folder.
    #[arg(long, value_name = "DIR", default_value = ".dei/cache", help_heading = LLM)]
    pub cache: PathBuf,
    /// Do not read or write the response cache.
    #[arg(long, help_heading = LLM)]
    pub no_cache: bool,
    /// Stop scheduling calls once this many US dollars could be spent.
    #[arg(long, value_name = "USD", help_heading = LLM)]
    pub max_cost: Option<f64>,
    /// Input price, USD per million tokens (overrides the built-in table).
    #[arg(long, value_name = "USD", help_heading = LLM)]
    pub price_in: Option<f64>,
    /// Output price, USD per million tokens (overrides the built-in table).
    #[arg(long, value_name = "USD", help_heading = LLM)]
    pub price_out: Option<f64>,
    /// Append one JSON line per call (tokens, cost, cache hit, result) to this file.
    #[arg(long, value_name = "FILE", help_heading = LLM)]
    pub ledger: Option<PathBuf>,
    /// Print the exact prompts and count calls and tokens; call nothing.
    #[arg(long, help_heading = LLM)]
    pub dry_run: bool,
}

/// How the LLM committee judges (`dei rank` only).
#[derive(Debug, Clone, Args)]
pub struct ReviewArgs {
    /// How candidates are judged: pointwise (DEI), listwise or pairwise.
    #[arg(long, value_name = "NAME", default_value = "pointwise", help_heading = LLM_COMMITTEE)]
    pub selector: String,
    /// Samples per candidate (pointwise), per issue (listwise) or per pair (pairwise), each
    /// one model call.
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = LLM_COMMITTEE)]
    pub samples: u32,
    /// Sampling temperature (default 0 for one sample, 0.7 for more).
    #[arg(long, value_name = "T", help_heading = LLM_COMMITTEE)]
    pub temperature: Option<f64>,
    /// Reply format: json (structured output with a schema, the default) or tags.
    #[arg(long, value_name = "FORMAT", help_heading = LLM_COMMITTEE)]
    pub output_format: Option<String>,
    /// Rubric file (see rubrics/default.md).
    #[arg(long, value_name = "FILE", help_heading = LLM_COMMITTEE)]
    pub rubric: Option<PathBuf>,
    /// Before reviewing, let the model re-rank where the issue points (two more calls per
    /// issue); reviewers are shown the definitions it picks when a candidate leaves them alone.
    #[arg(long, help_heading = LLM_COMMITTEE)]
    pub llm_locate: bool,
    /// Review one representative per group of candidates and give every member its score:
    /// groups are behaviour classes with --exec, else changes equal after normalization.
    #[arg(long, help_heading = LLM_COMMITTEE)]
    pub review_once: bool,
}

/// The options every command's flags give, before the command's own.
fn common(
    llm: &Option<String>,
    server: &ServerArgs,
    max_tokens: u32,
    calls: &CallArgs,
    spend: &SpendArgs,
    prompt_dir: &Option<PathBuf>,
) -> LlmOptions {
    LlmOptions {
        llm: llm.clone(),
        base_url: server.base_url.clone(),
        api_key_env: server.api_key_env.clone(),
        context_window: server.context_window,
        max_tokens,
        concurrency: calls.concurrency,
        rpm: calls.rpm,
        tpm: calls.tpm,
        retries: calls.retries,
        parse_retries: calls.parse_retries,
        backoff_ms: calls.backoff_ms,
        timeout: calls.timeout,
        cache: spend.cache.clone(),
        no_cache: spend.no_cache,
        max_cost: spend.max_cost,
        price_in: spend.price_in,
        price_out: spend.price_out,
        ledger: spend.ledger.clone(),
        dry_run: spend.dry_run,
        prompt_dir: prompt_dir.clone(),
        ..LlmOptions::default()
    }
}

/// The LLM flags of `dei rank`.
#[derive(Debug, Clone, Args)]
pub struct RankLlmArgs {
    /// Model to review with: openai:MODEL, anthropic:MODEL, openai-compatible:MODEL (needs --base-url),
    /// vllm:MODEL, ollama:MODEL or llamacpp:MODEL. Without it (and DEI_LLM) the offline committee is used.
    #[arg(long, value_name = "PROVIDER:MODEL", env = "DEI_LLM", help_heading = LLM)]
    pub llm: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Most tokens a reply may have.
    #[arg(long, value_name = "TOKENS", default_value_t = 2048, help_heading = LLM)]
    pub max_tokens: u32,
    #[command(flatten)]
    pub calls: CallArgs,
    #[command(flatten)]
    pub spend: SpendArgs,
    /// Folder of prompt templates replacing the built-in ones of the same name (see prompts/).
    #[arg(long, value_name = "DIR", help_heading = LLM)]
    pub prompt_dir: Option<PathBuf>,
    #[command(flatten)]
    pub review: ReviewArgs,
}

impl RankLlmArgs {
    pub fn options(&self) -> LlmOptions {
        let r = &self.review;
        LlmOptions {
            selector: r.selector.clone(),
            samples: r.samples,
            temperature: r.temperature,
            output_format: r.output_format.clone(),
            rubric: r.rubric.clone(),
            llm_locate: r.llm_locate,
            review_once: r.review_once,
            ..common(
                &self.llm,
                &self.server,
                self.max_tokens,
                &self.calls,
                &self.spend,
                &self.prompt_dir,
            )
        }
    }
}

/// The LLM flags of `dei generate`.
#[derive(Debug, Clone, Args)]
pub struct GenerateLlmArgs {
    /// Model that writes the patches (required): openai:MODEL, anthropic:MODEL, openai-compatible:MODEL
    /// (needs --base-url), vllm:MODEL, ollama:MODEL or llamacpp:MODEL.
    #[arg(long, value_name = "PROVIDER:MODEL", env = "DEI_LLM", help_heading = LLM)]
    pub llm: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Most tokens a reply may have.
    #[arg(long, value_name = "TOKENS", default_value_t = 4096, help_heading = LLM)]
    pub max_tokens: u32,
    #[command(flatten)]
    pub calls: CallArgs,
    #[command(flatten)]
    pub spend: SpendArgs,
    /// Folder of templates replacing the built-in prompts/generate_*.j2 of the same name.
    #[arg(long, value_name = "DIR", help_heading = LLM)]
    pub prompt_dir: Option<PathBuf>,
}

impl GenerateLlmArgs {
    pub fn options(&self) -> LlmOptions {
        common(
            &self.llm,
            &self.server,
            self.max_tokens,
            &self.calls,
            &self.spend,
            &self.prompt_dir,
        )
    }
}

/// The LLM flags of `dei locate`.
#[derive(Debug, Clone, Args)]
pub struct LocateLlmArgs {
    /// Model that re-ranks the search (optional): openai:MODEL, anthropic:MODEL, openai-compatible:MODEL
    /// (needs --base-url), vllm:MODEL, ollama:MODEL or llamacpp:MODEL.
    #[arg(long, value_name = "PROVIDER:MODEL", env = "DEI_LLM", help_heading = LLM)]
    pub llm: Option<String>,
    #[command(flatten)]
    pub server: ServerArgs,
    /// Most tokens a reply may have.
    #[arg(long, value_name = "TOKENS", default_value_t = 2048, help_heading = LLM)]
    pub max_tokens: u32,
    #[command(flatten)]
    pub calls: CallArgs,
    #[command(flatten)]
    pub spend: SpendArgs,
    /// Folder of templates replacing the built-in prompts/localize_*.j2 of the same name.
    #[arg(long, value_name = "DIR", help_heading = LLM)]
    pub prompt_dir: Option<PathBuf>,
}

impl LocateLlmArgs {
    pub fn options(&self) -> LlmOptions {
        common(
            &self.llm,
            &self.server,
            self.max_tokens,
            &self.calls,
            &self.spend,
            &self.prompt_dir,
        )
    }
}
