//! Runs the calls a selector planned: cache first, then the provider under the concurrency
//! limit, the rate limiter and the cost budget, with retries; parse failures ask again
//! (a bounded number of times) under a new cache key.

use super::cache::{self, Cache};
use super::limiter::{backoff, Budget, RateLimiter};
use super::parse::{self, Parsed, ReplyKind};
use super::provider::{estimate_tokens, CallError, CallRequest, Provider, Reply};
use crate::llm::{Format, Rendered};
use crate::model::Usage;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One planned call.
#[derive(Debug, Clone)]
pub struct Job {
    pub prompt: Rendered,
    pub kind: ReplyKind,
    pub sample: u32,
    /// Indices of the candidates this call is about, in prompt order.
    pub about: Vec<usize>,
    /// Human label: selector, candidate(s), sample.
    pub label: String,
    /// This call's temperature instead of the configured one (the generator's samples).
    pub temperature: Option<f64>,
}

/// What came of one job.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done {
        parsed: Parsed,
        usage: Usage,
    },
    /// Called, but no usable reply (unparseable after retries, or the provider kept failing).
    Failed {
        why: String,
        usage: Usage,
    },
    /// Never called (dry run, or the cost cap).
    Skipped {
        why: String,
    },
}

impl Outcome {
    pub fn usage(&self) -> Usage {
        match self {
            Outcome::Done { usage, .. } | Outcome::Failed { usage, .. } => *usage,
            Outcome::Skipped { .. } => Usage::default(),
        }
    }
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

impl Price {
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input + output_tokens as f64 * self.output) / 1e6
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub temperature: f64,
    pub max_tokens: u32,
    pub format: Format,
    pub concurrency: usize,
    /// Retries of one call on 429/5xx/timeouts/broken replies.
    pub retries: u32,
    /// Extra asks when a reply does not parse.
    pub parse_retries: u32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub price: Price,
    pub max_cost: Option<f64>,
    pub rpm: Option<u32>,
    pub tpm: Option<u64>,
    pub dry_run: bool,
    pub ledger: Option<PathBuf>,
}

/// One line of the per-call ledger.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallRecord {
    pub label: String,
    pub attempt: u32,
    pub cached: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub ms: u64,
    /// `ok`, or why the reply could not be used.
    pub result: String,
}

/// The shared state of all calls of a committee.
pub struct Engine {
    pub provider: Provider,
    pub settings: Settings,
    pub cache: Option<Cache>,
    client: reqwest::Client,
    limiter: RateLimiter,
    pub budget: Budget,
    totals: Mutex<Usage>,
    ledger: Mutex<Vec<CallRecord>>,
    /// Where `--dry-run` prints prompts.
    pub out: Mutex<Box<dyn Write + Send>>,
    /// One runtime for the engine's life: pooled connections stay valid between runs, and
    /// runs started from several threads share it.
    rt: std::sync::OnceLock<tokio::runtime::Runtime>,
    /// `--concurrency` holds across every run in flight, not per run.
    sem: Arc<tokio::sync::Semaphore>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio forbids inside async code (tests, embedders).
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

fn unit_random() -> f64 {
    rand::random::<f64>()
}

impl Engine {
    pub fn new(
        provider: Provider,
        settings: Settings,
        cache: Option<Cache>,
    ) -> anyhow::Result<Engine> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(settings.concurrency.max(1))
            .connect_timeout(provider.timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {e}"))?;
        Ok(Engine {
            limiter: RateLimiter::new(settings.rpm, settings.tpm),
            budget: Budget::new(settings.max_cost),
            totals: Mutex::new(Usage::default()),
            ledger: Mutex::new(Vec::new()),
            out: Mutex::new(Box::new(std::io::stdout())),
            rt: std::sync::OnceLock::new(),
            sem: Arc::new(tokio::sync::Semaphore::new(settings.concurrency.max(1))),
            client,
            provider,
            settings,
            cache,
        })
    }

    /// Run totals so far.
    /// Calls holding a `--concurrency` slot now (sent, retrying, or waiting on the rate limiter).
    pub fn in_flight(&self) -> usize {
        self.settings
            .concurrency
            .max(1)
            .saturating_sub(self.sem.available_permits())
    }

    pub fn totals(&self) -> Usage {
        *self.totals.lock().expect("totals lock")
    }

    pub fn ledger(&self) -> Vec<CallRecord> {
        self.ledger.lock().expect("ledger lock").clone()
    }

    fn format_name(&self, kind: ReplyKind) -> &'static str {
        match (kind.schema(), self.settings.format) {
            (None, _) => "text",
            (Some(s), Format::Json) => s.name,
            (Some(_), Format::Tags) => "tags",
        }
    }

    fn temperature(&self, job: &Job) -> f64 {
        job.temperature.unwrap_or(self.settings.temperature)
    }

    fn key(&self, job: &Job, attempt: u32) -> String {
        cache::key(&cache::KeyParts {
            protocol: self.provider.protocol.name(),
            model: &self.provider.model,
            system: &job.prompt.system,
            user: &job.prompt.user,
            temperature: self.temperature(job),
            max_tokens: self.settings.max_tokens,
            format: self.format_name(job.kind),
            sample: job.sample,
            attempt,
        })
    }

    fn input_estimate(job: &Job) -> u64 {
        estimate_tokens(&job.prompt.system) + estimate_tokens(&job.prompt.user) + 16
    }

    /// The most a call can cost: input counted at 2 characters a token (a safe over-estimate
    /// for code and prose) plus every output token allowed.
    fn worst_cost(&self, job: &Job) -> f64 {
        let chars = (job.prompt.system.len() + job.prompt.user.len()) as u64;
        self.settings
            .price
            .cost(chars.div_ceil(2) + 64, u64::from(self.settings.max_tokens))
    }

    /// Run every job; outcomes in the same order.
    pub fn run(self: &Arc<Self>, jobs: Vec<Job>) -> Vec<Outcome> {
        if jobs.is_empty() {
            return vec![];
        }
        if self.settings.dry_run {
            return self.dry_run(&jobs);
        }
        let this = Arc::clone(self);
        let work = move || {
            let rt = this.rt.get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(
                        std::thread::available_parallelism()
                            .map(|n| n.get())
                            .unwrap_or(2)
                            .clamp(1, 4),
                    )
                    .enable_all()
                    .build()
                    .expect("tokio runtime starts")
            });
            rt.block_on(Arc::clone(&this).run_async(jobs))
        };
        // The Committee trait is sync; never nest a runtime inside a caller's runtime.
        let outcomes = if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| s.spawn(work).join().expect("runner thread"))
        } else {
            work()
        };
        self.write_ledger();
        outcomes
    }

    /// One free-form call (the generator's [`ReplyKind::Text`]): `system` and `user` at
    /// `temperature`, as sample `sample` (both in the cache key, so samples differ), through the
    /// same cache, limits, retries, cost cap and ledger as review calls. Returns the reply text
    /// and this call's usage. Under `--dry-run` the prompt is printed and only a cached reply
    /// is returned (none: an error saying no call was made).
    pub fn complete(
        self: &Arc<Self>,
        system: &str,
        user: &str,
        temperature: f64,
        sample: u32,
        label: &str,
    ) -> anyhow::Result<(String, Usage)> {
        self.complete_many(system, user, &[(temperature, sample, label.to_string())])
            .pop()
            .unwrap_or_else(|| Err(anyhow::anyhow!("{label}: internal error: no outcome")))
    }

    /// Several free-form calls of one prompt, sent at once (each a `(temperature, sample,
    /// label)`), under the engine's limits, cache, retries, cost cap and ledger like
    /// [`Engine::complete`]. One result per call, in order.
    pub fn complete_many(
        self: &Arc<Self>,
        system: &str,
        user: &str,
        calls: &[(f64, u32, String)],
    ) -> Vec<anyhow::Result<(String, Usage)>> {
        let jobs: Vec<Job> = calls
            .iter()
            .map(|(temperature, sample, label)| Job {
                prompt: Rendered {
                    system: system.to_string(),
                    user: user.to_string(),
                },
                kind: ReplyKind::Text,
                sample: *sample,
                about: vec![],
                label: label.clone(),
                temperature: Some(*temperature),
            })
            .collect();
        if self.settings.dry_run {
            let hits: Vec<_> = jobs
                .iter()
                .map(|j| self.cache.as_ref().and_then(|c| c.get(&self.key(j, 0))))
                .collect();
            self.dry_run(&jobs);
            return hits
                .into_iter()
                .map(|hit| match hit {
                    Some(r) => Ok((r.text, Usage::default())),
                    None => Err(anyhow::anyhow!("dry run: no call made")),
                })
                .collect();
        }
        let mut outcomes = self.run(jobs).into_iter();
        calls
            .iter()
            .map(|(_, _, label)| match outcomes.next() {
                Some(Outcome::Done {
                    parsed: Parsed::Text(t),
                    usage,
                }) => Ok((t, usage)),
                Some(Outcome::Done { usage, .. }) => Ok((String::new(), usage)),
                Some(Outcome::Failed { why, .. }) | Some(Outcome::Skipped { why }) => {
                    Err(anyhow::anyhow!("{label}: {why}"))
                }
                None => Err(anyhow::anyhow!("{label}: internal error: no outcome")),
            })
            .collect()
    }

    async fn run_async(self: Arc<Self>, jobs: Vec<Job>) -> Vec<Outcome> {
        let jobs = Arc::new(jobs);
        let sem = Arc::clone(&self.sem);
        let mut set = tokio::task::JoinSet::new();
        for i in 0..jobs.len() {
            let (this, jobs, sem) = (Arc::clone(&self), Arc::clone(&jobs), Arc::clone(&sem));
            set.spawn(async move { (i, this.run_one(&jobs[i], &sem).await) });
        }
        let mut out: Vec<Option<Outcome>> = vec![None; jobs.len()];
        while let Some(r) = set.join_next().await {
            match r {
                Ok((i, o)) => out[i] = Some(o),
                Err(e) => crate::model::notify::warning(&format!("llm: a call task failed: {e}")),
            }
        }
        out.into_iter()
            .map(|o| {
                o.unwrap_or(Outcome::Skipped {
                    why: "internal error: call task failed".into(),
                })
            })
            .collect()
    }

    async fn run_one(&self, job: &Job, sem: &tokio::sync::Semaphore) -> Outcome {
        let mut usage = Usage::default();
        let mut last_why = String::new();
        for attempt in 0..=self.settings.parse_retries {
            let key = self.key(job, attempt);
            let started = Instant::now();
            let (reply, cached) = match self.cache.as_ref().and_then(|c| c.get(&key)) {
                Some(r) => (r, true),
                None => match self.call(job, &key, sem).await {
                    Ok(r) => (r, false),
                    Err(CallFailure::Skipped(why)) => {
                        let why = if last_why.is_empty() {
                            why
                        } else {
                            format!("{why} (earlier reply: {last_why})")
                        };
                        return if usage.calls + usage.cached > 0 {
                            Outcome::Failed { why, usage }
                        } else {
                            Outcome::Skipped { why }
                        };
                    }
                    Err(CallFailure::Failed(why)) => return Outcome::Failed { why, usage },
                },
            };
            let cost = self
                .settings
                .price
                .cost(reply.input_tokens, reply.output_tokens);
            let one = Usage {
                calls: u64::from(!cached),
                cached: u64::from(cached),
                input_tokens: reply.input_tokens,
                output_tokens: reply.output_tokens,
                cost_usd: if cached { 0.0 } else { cost },
            };
            usage.add(&one);
            self.totals.lock().expect("totals lock").add(&one);
            let parsed = parse::parse(job.kind, &reply.text);
            self.record(CallRecord {
                label: job.label.clone(),
                attempt,
                cached,
                input_tokens: reply.input_tokens,
                output_tokens: reply.output_tokens,
                cost_usd: one.cost_usd,
                ms: started.elapsed().as_millis() as u64,
                result: match &parsed {
                    Ok(_) => "ok".into(),
                    Err(e) => format!("unparseable: {e}"),
                },
            });
            match parsed {
                Ok(p) => return Outcome::Done { parsed: p, usage },
                Err(e) => {
                    last_why = if reply.finish == "length" || reply.finish == "max_tokens" {
                        format!(
                            "{e} (reply cut at --max-tokens {})",
                            self.settings.max_tokens
                        )
                    } else {
                        e
                    };
                }
            }
        }
        Outcome::Failed {
            why: format!(
                "no usable reply after {} tries: {last_why}",
                self.settings.parse_retries + 1
            ),
            usage,
        }
    }

    fn record(&self, r: CallRecord) {
        if self.settings.ledger.is_some() {
            self.ledger.lock().expect("ledger lock").push(r);
        }
    }

    fn write_ledger(&self) {
        let Some(path) = &self.settings.ledger else {
            return;
        };
        let lines: Vec<CallRecord> = std::mem::take(&mut *self.ledger.lock().expect("ledger lock"));
        let mut text = String::new();
        for l in &lines {
            text.push_str(&serde_json::to_string(l).unwrap_or_default());
            text.push('\n');
        }
        let res = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = res {
            crate::model::notify::warning(&format!(
                "llm: cannot write the call ledger {}: {e}",
                path.display()
            ));
        }
    }

    /// One call to the provider with retries, under the concurrency limit, budget and rate limiter.
    async fn call(
        &self,
        job: &Job,
        key: &str,
        sem: &tokio::sync::Semaphore,
    ) -> Result<Reply, CallFailure> {
        let _permit = sem
            .acquire()
            .await
            .map_err(|_| CallFailure::Skipped("shutting down".into()))?;
        // Another task may have stored the same key while this one waited.
        if let Some(r) = self.cache.as_ref().and_then(|c| c.get(key)) {
            return Ok(r);
        }
        let reserved = match self.budget.reserve(self.worst_cost(job)) {
            Ok(r) => r,
            Err(refused) => {
                let max = self.settings.max_cost.unwrap_or(0.0);
                if refused.first {
                    crate::model::notify::notice(&format!(
                        "llm: --max-cost ${max:.4} reached (${:.4} spent, up to ${:.4} in flight): no new calls are scheduled",
                        refused.spend.spent, refused.spend.reserved
                    ));
                }
                return Err(CallFailure::Skipped(format!(
                    "not reviewed: --max-cost ${max:.4} reached"
                )));
            }
        };
        let req = CallRequest {
            system: &job.prompt.system,
            user: &job.prompt.user,
            temperature: self.temperature(job),
            max_tokens: self.settings.max_tokens,
            sample: job.sample,
            schema: None,
        };
        let schema = if self.settings.format == Format::Json {
            job.kind.schema()
        } else {
            None
        };
        let req = CallRequest {
            schema: schema.as_ref(),
            ..req
        };
        let tokens = Self::input_estimate(job) + u64::from(self.settings.max_tokens);
        let mut tries = 0u32;
        loop {
            self.limiter.acquire(tokens).await;
            tries += 1;
            match self.provider.call(&self.client, &req).await {
                Ok(reply) => {
                    self.budget.settle(
                        reserved,
                        self.settings
                            .price
                            .cost(reply.input_tokens, reply.output_tokens),
                    );
                    if let Some(c) = &self.cache {
                        if let Err(e) = c.put(key, &reply) {
                            crate::model::notify::warning(&format!("llm: {e:#}"));
                        }
                    }
                    return Ok(reply);
                }
                Err(CallError::Retryable { why, retry_after })
                    if tries <= self.settings.retries =>
                {
                    let wait = backoff(
                        tries - 1,
                        self.settings.backoff_base,
                        self.settings.backoff_cap,
                        retry_after,
                        unit_random(),
                    );
                    let _ = why;
                    tokio::time::sleep(wait).await;
                }
                Err(e) => {
                    self.budget.settle(reserved, 0.0);
                    return Err(CallFailure::Failed(format!(
                        "provider error after {tries} tr{}: {e}",
                        if tries == 1 { "y" } else { "ies" }
                    )));
                }
            }
        }
    }

    /// Print every prompt exactly as it would be sent and count calls, tokens and cost.
    fn dry_run(&self, jobs: &[Job]) -> Vec<Outcome> {
        let mut out = self.out.lock().expect("out lock");
        let (mut cached, mut input) = (0usize, 0u64);
        let total = jobs.len();
        for (n, job) in jobs.iter().enumerate() {
            let hit = self
                .cache
                .as_ref()
                .is_some_and(|c| c.get(&self.key(job, 0)).is_some());
            cached += usize::from(hit);
            input += Self::input_estimate(job);
            let _ = writeln!(
                out,
                "===== call {}/{total}: {}{} =====\n--- system ---\n{}\n--- user ---\n{}\n",
                n + 1,
                job.label,
                if hit { " (cached)" } else { "" },
                job.prompt.system,
                job.prompt.user
            );
        }
        let calls = total - cached;
        let max_out = calls as u64 * u64::from(self.settings.max_tokens);
        let _ = writeln!(
            out,
            "dry run: {total} calls planned ({cached} already cached, {calls} to send) to {}:{}; about {input} input tokens, at most {max_out} output tokens; cost up to about ${:.4} at ${}/{} per million tokens in/out",
            self.provider.protocol.name(),
            self.provider.model,
            self.settings.price.cost(input, max_out),
            self.settings.price.input,
            self.settings.price.output,
        );
        let _ = out.flush();
        jobs.iter()
            .map(|_| Outcome::Skipped {
                why: "dry run: no call made".into(),
            })
            .collect()
    }
}

enum CallFailure {
    Skipped(String),
    Failed(String),
}
