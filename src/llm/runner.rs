//! Runs the calls a selector planned: cache first, then the provider under the concurrency
//! limit, the rate limiter and the cost budget, with retries; parse failures ask again
//! (a bounded number of times) under a new cache key.

use super::cache::{self, Cache};
use super::limiter::{backoff, Budget, RateLimiter};
use super::parse::{self, Parsed, ReplyKind};
use super::provider::{CallError, CallRequest, Provider, Reply};
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
    /// Why this call cannot be sent (its prompt does not fit the model's context): it fails
    /// with this reason and nothing is asked.
    pub unsendable: Option<String>,
    /// The schema a [`ReplyKind::Text`] call's reply is held to where the server takes one
    /// (the reply is then its JSON text); the other kinds have their own.
    pub shape: Option<super::provider::Schema>,
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
    /// The model's context window in tokens as the user gave it (`--context-window`); else
    /// what the server says, else the table of hosted models ([`crate::llm::server`]).
    pub context_window: Option<u64>,
}

/// One line of the per-call ledger, written as the call ends: every reply (cached or not,
/// usable or not) and every failed request.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CallRecord {
    pub label: String,
    /// The ask (0, then each retry after an unusable reply).
    pub attempt: u32,
    pub cached: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// From sending the request to its reply (not the wait for a free slot before it).
    pub ms: u64,
    /// The server's own time on it, where it says (llama.cpp).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_ms: Option<u64>,
    /// From sending the request to the first token of a streamed reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// The provider's stop reason (`stop`, `length`, ...), empty for a failed request.
    pub finish: String,
    /// `ok`, `unparseable: why`, `cut: why`, or `error: why` for a request that failed.
    pub result: String,
}

/// A dry run's plan while one is open ([`Engine::open_plan`]): every prompt the run would send,
/// kept to be printed together at its end ([`Engine::close_plan`]), numbered across the run.
#[derive(Default)]
struct Plan {
    calls: Vec<Planned>,
    /// Free-form calls whose reply the caller needed to go on and a dry run does not have: the
    /// steps after each are not in the plan.
    waiting: usize,
}

/// One prompt of a dry run.
struct Planned {
    label: String,
    cached: bool,
    prompt: Rendered,
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
    /// The ledger file, opened at the first record and appended to line by line.
    ledger_file: Mutex<Option<std::fs::File>>,
    /// Whether replies are still asked for with a schema (a server may refuse one).
    structured: std::sync::atomic::AtomicBool,
    /// What the server said of itself ([`crate::llm::server::probe`]), asked once.
    server: std::sync::OnceLock<super::server::ServerInfo>,
    /// Where `--dry-run` prints prompts.
    pub out: Mutex<Box<dyn Write + Send>>,
    /// The dry run's plan, while one is open: prompts wait in it instead of being printed.
    plan: Mutex<Option<Plan>>,
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
            // Servers close idle keep-alive connections (llama.cpp after 5 s): a connection
            // idle longer is not reused, so a call is never sent down one already closed.
            .pool_idle_timeout(Duration::from_secs(4))
            .connect_timeout(provider.timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build the HTTP client: {e}"))?;
        Ok(Engine {
            limiter: RateLimiter::new(settings.rpm, settings.tpm),
            budget: Budget::new(settings.max_cost),
            totals: Mutex::new(Usage::default()),
            ledger: Mutex::new(Vec::new()),
            ledger_file: Mutex::new(None),
            structured: std::sync::atomic::AtomicBool::new(settings.format == Format::Json),
            server: std::sync::OnceLock::new(),
            out: Mutex::new(Box::new(std::io::stdout())),
            plan: Mutex::new(None),
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

    /// The schema a call of `kind` is sent with now, `None` when replies are asked for as
    /// plain text (tags, free text, or a server that refused schemas).
    fn schema_for(&self, job: &Job) -> Option<super::provider::Schema> {
        if !self.structured.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        match job.kind {
            ReplyKind::Text => job.shape.clone(),
            kind => kind.schema_within(self.bounds(kind)),
        }
    }

    /// Length bounds for `fields` text fields of a reply: OpenAI's strict mode takes none,
    /// every other server holds each to a share of `--max-tokens`.
    pub fn text_bounds(&self, fields: usize) -> parse::Bounds {
        match self.provider.protocol {
            super::provider::Protocol::OpenAi => parse::Bounds { field_chars: None },
            _ => parse::Bounds::sharing(self.settings.max_tokens, fields),
        }
    }

    /// Length bounds for `kind`'s text fields (see [`Engine::text_bounds`]).
    fn bounds(&self, kind: ReplyKind) -> parse::Bounds {
        self.text_bounds(kind.text_fields())
    }

    fn format_name(&self, job: &Job) -> String {
        match (self.schema_for(job), self.settings.format) {
            (Some(s), _) if job.kind == ReplyKind::Text => format!(
                "{}/{}",
                s.name,
                &cache::digest(
                    serde_json::to_string(&s.schema)
                        .unwrap_or_default()
                        .as_bytes()
                )[..12]
            ),
            (Some(s), _) => match self.bounds(job.kind).field_chars {
                Some(n) => format!("{}/{n}", s.name),
                None => s.name.to_string(),
            },
            (None, _) if job.kind == ReplyKind::Text => "text".into(),
            (None, Format::Json) => "json-unschematized".into(),
            (None, Format::Tags) => "tags".into(),
        }
    }

    /// What the server said of itself, asked once (nothing is asked in a dry run).
    pub fn server(&self) -> &super::server::ServerInfo {
        self.server.get_or_init(|| {
            if self.settings.dry_run {
                return super::server::ServerInfo::offline(&self.provider);
            }
            let info = self.block_on(super::server::probe(&self.client, &self.provider));
            if let Some(slots) = info.slots {
                let want = self.settings.concurrency.max(1);
                if slots < want {
                    self.sem.forget_permits(want - slots);
                    crate::model::notify::notice(&format!(
                        "llm: the server takes {slots} call{} at a time ({}): keeping {slots} in flight, not --concurrency {want}",
                        if slots == 1 { "" } else { "s" },
                        info.from
                    ));
                }
            }
            info
        })
    }

    /// The model's context window in tokens: `--context-window`, else the server's word,
    /// else the table of hosted models.
    pub fn context_window(&self) -> Option<u64> {
        self.settings.context_window.or(self.server().context)
    }

    /// Prompt tokens a call may hold: the context window less the reply's `--max-tokens`.
    pub fn prompt_room(&self) -> Option<u64> {
        self.context_window()
            .map(|w| w.saturating_sub(u64::from(self.settings.max_tokens)))
    }

    /// Calls kept in flight: `--concurrency`, or fewer when the server takes fewer.
    pub fn concurrency(&self) -> usize {
        let c = self.settings.concurrency.max(1);
        self.server
            .get()
            .and_then(|s| s.slots)
            .map_or(c, |s| s.min(c))
    }

    /// Run `fut` on the engine's runtime, never inside a caller's runtime.
    fn block_on<T: Send>(&self, fut: impl std::future::Future<Output = T> + Send) -> T {
        let work = || self.runtime().block_on(fut);
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| s.spawn(work).join().expect("runner thread"))
        } else {
            work()
        }
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.rt.get_or_init(|| {
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
        })
    }

    fn temperature(&self, job: &Job) -> f64 {
        job.temperature.unwrap_or(self.settings.temperature)
    }

    fn key(&self, job: &Job, attempt: u32) -> String {
        self.key_of(job, &job.prompt.user, attempt)
    }

    fn key_of(&self, job: &Job, user: &str, attempt: u32) -> String {
        cache::key(&cache::KeyParts {
            protocol: self.provider.protocol.name(),
            model: &self.provider.model,
            system: &job.prompt.system,
            user,
            temperature: self.temperature(job),
            max_tokens: self.settings.max_tokens,
            format: &self.format_name(job),
            sample: job.sample,
            attempt,
        })
    }

    fn input_estimate(job: &Job) -> u64 {
        job.prompt.estimated_tokens()
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
        // The health check: a server that is not there fails every call at once, clearly.
        if let Some(why) = self.server().down.clone() {
            for j in &jobs {
                self.record(CallRecord::failed(j, 0, 0, format!("error: {why}")));
            }
            return jobs
                .iter()
                .map(|_| Outcome::Failed {
                    why: why.clone(),
                    usage: Usage::default(),
                })
                .collect();
        }
        // The Committee trait is sync; never nest a runtime inside a caller's runtime.
        let this = Arc::clone(self);
        self.block_on(this.run_async(jobs))
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
        self.complete_many_shaped(system, user, calls, None)
    }

    /// [`Engine::complete_many`] with each reply held to `shape` where the server takes a
    /// schema: the reply is then its JSON text (a server that refuses schemas answers in
    /// plain text, so callers read either).
    pub fn complete_many_shaped(
        self: &Arc<Self>,
        system: &str,
        user: &str,
        calls: &[(f64, u32, String)],
        shape: Option<&super::provider::Schema>,
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
                unsendable: None,
                shape: shape.cloned(),
            })
            .collect();
        if self.settings.dry_run {
            let hits: Vec<_> = jobs
                .iter()
                .map(|j| self.cache.as_ref().and_then(|c| c.get(&self.key(j, 0))))
                .collect();
            self.dry_run(&jobs);
            if let Some(plan) = self.plan.lock().expect("plan lock").as_mut() {
                plan.waiting += hits.iter().filter(|h| h.is_none()).count();
            }
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
        if let Some(why) = &job.unsendable {
            self.record(CallRecord::failed(job, 0, 0, format!("error: {why}")));
            return Outcome::Failed {
                why: why.clone(),
                usage: Usage::default(),
            };
        }
        let mut usage = Usage::default();
        let mut last_why = String::new();
        let earlier = |why: String, last: &str| {
            if last.is_empty() {
                why
            } else {
                format!("{why} (earlier reply: {last})")
            }
        };
        for attempt in 0..=self.settings.parse_retries {
            // A retry says what was wrong with the last reply, so it is a different request
            // (and, with a new seed, a different sample) rather than the same one again.
            let user = if attempt == 0 {
                job.prompt.user.clone()
            } else {
                repair(&job.prompt.user, &last_why)
            };
            let key = self.key_of(job, &user, attempt);
            let hit = self.cache.as_ref().and_then(|c| c.get(&key));
            let (reply, cached, ms) = match hit {
                Some(r) => (r, true, 0),
                None => match self.call(job, &user, attempt, &key, sem).await {
                    Ok((r, sent_ms)) => (r, sent_ms.is_none(), sent_ms.unwrap_or(0)),
                    Err(CallFailure::Skipped(why)) => {
                        let why = earlier(why, &last_why);
                        return if usage.calls + usage.cached > 0 {
                            Outcome::Failed { why, usage }
                        } else {
                            Outcome::Skipped { why }
                        };
                    }
                    Err(CallFailure::Failed(why)) => {
                        return Outcome::Failed {
                            why: earlier(why, &last_why),
                            usage,
                        }
                    }
                },
            };
            let one = if cached {
                Usage {
                    cached: 1,
                    cached_input_tokens: reply.input_tokens,
                    cached_output_tokens: reply.output_tokens,
                    ..Usage::default()
                }
            } else {
                Usage {
                    calls: 1,
                    input_tokens: reply.input_tokens,
                    output_tokens: reply.output_tokens,
                    cost_usd: self
                        .settings
                        .price
                        .cost(reply.input_tokens, reply.output_tokens),
                    ..Usage::default()
                }
            };
            usage.add(&one);
            self.totals.lock().expect("totals lock").add(&one);
            // A reply cut at a limit is never used, not even as free text.
            let cut = reply.cut(self.settings.max_tokens);
            let parsed = match &cut {
                Some(why) => Err(why.clone()),
                None => parse::parse(job.kind, &reply.text),
            };
            self.record(CallRecord {
                label: job.label.clone(),
                attempt,
                cached,
                input_tokens: reply.input_tokens,
                output_tokens: reply.output_tokens,
                cost_usd: one.cost_usd,
                ms,
                server_ms: reply.server_ms.map(|m| m.round() as u64),
                first_token_ms: if cached { None } else { reply.first_token_ms },
                finish: reply.finish.clone(),
                result: match (&parsed, &cut) {
                    (Ok(_), _) => "ok".into(),
                    (Err(e), Some(_)) => format!("cut: {e}"),
                    (Err(e), None) => format!("unparseable: {e}"),
                },
            });
            match parsed {
                Ok(p) => {
                    // Only a usable reply is kept, as the answer to the call itself too (a
                    // rerun starts from the first ask); a rerun asks again for the others.
                    if let Some(c) = &self.cache {
                        // The first ask's key missed at attempt 0, or this is attempt 0.
                        let keys = [
                            (!cached).then(|| key.clone()),
                            (attempt > 0).then(|| self.key(job, 0)),
                        ];
                        for k in keys.iter().flatten() {
                            if let Err(e) = c.put(k, &reply) {
                                crate::model::notify::warning(&format!("llm: {e:#}"));
                            }
                        }
                    }
                    return Outcome::Done { parsed: p, usage };
                }
                Err(e) => last_why = e,
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
        let Some(path) = &self.settings.ledger else {
            return;
        };
        {
            let mut file = self.ledger_file.lock().expect("ledger lock");
            if file.is_none() {
                match std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                {
                    Ok(f) => *file = Some(f),
                    Err(e) => crate::model::notify::warning(&format!(
                        "llm: cannot write the call ledger {}: {e}",
                        path.display()
                    )),
                }
            }
            if let Some(f) = file.as_mut() {
                let line = format!("{}\n", serde_json::to_string(&r).unwrap_or_default());
                if let Err(e) = f.write_all(line.as_bytes()).and_then(|_| f.flush()) {
                    crate::model::notify::warning(&format!(
                        "llm: cannot write the call ledger {}: {e}",
                        path.display()
                    ));
                }
            }
        }
        self.ledger.lock().expect("ledger lock").push(r);
    }

    /// One call to the provider with retries, under the concurrency limit, budget and rate
    /// limiter: the reply and the milliseconds from sending it (`None`: another task had stored
    /// the same key meanwhile, so it came from the cache).
    async fn call(
        &self,
        job: &Job,
        user: &str,
        attempt: u32,
        key: &str,
        sem: &tokio::sync::Semaphore,
    ) -> Result<(Reply, Option<u64>), CallFailure> {
        let _permit = sem
            .acquire()
            .await
            .map_err(|_| CallFailure::Skipped("shutting down".into()))?;
        if let Some(r) = self.cache.as_ref().and_then(|c| c.get(key)) {
            return Ok((r, None));
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
        let tokens = Self::input_estimate(job) + u64::from(self.settings.max_tokens);
        let mut tries = 0u32;
        loop {
            let schema = self.schema_for(job);
            let req = CallRequest {
                system: &job.prompt.system,
                user,
                temperature: self.temperature(job),
                max_tokens: self.settings.max_tokens,
                seed: u64::from(job.sample) + u64::from(attempt) * 1_000_003,
                schema: schema.as_ref(),
            };
            self.limiter.acquire(tokens).await;
            tries += 1;
            let sent = Instant::now();
            let result = self.provider.call(&self.client, &req).await;
            let ms = sent.elapsed().as_millis() as u64;
            match result {
                Ok(reply) => {
                    self.budget.settle(
                        reserved,
                        self.settings
                            .price
                            .cost(reply.input_tokens, reply.output_tokens),
                    );
                    return Ok((reply, Some(ms)));
                }
                Err(CallError::SchemaRefused(why)) if schema.is_some() => {
                    self.record(CallRecord::failed(
                        job,
                        attempt,
                        ms,
                        format!("error: {why}"),
                    ));
                    if self
                        .structured
                        .swap(false, std::sync::atomic::Ordering::Relaxed)
                    {
                        crate::model::notify::notice(&format!(
                            "llm: the server refuses the reply schema ({why}); asking without one from now on, and reading replies as JSON or tags"
                        ));
                    }
                    tries -= 1;
                }
                Err(CallError::Retryable { why, retry_after })
                    if tries <= self.settings.retries =>
                {
                    self.record(CallRecord::failed(
                        job,
                        attempt,
                        ms,
                        format!("error: {why}"),
                    ));
                    let wait = backoff(
                        tries - 1,
                        self.settings.backoff_base,
                        self.settings.backoff_cap,
                        retry_after,
                        unit_random(),
                    );
                    tokio::time::sleep(wait).await;
                }
                Err(e) => {
                    self.record(CallRecord::failed(job, attempt, ms, format!("error: {e}")));
                    self.budget.settle(reserved, 0.0);
                    return Err(CallFailure::Failed(format!(
                        "provider error after {tries} tr{}: {e}",
                        if tries == 1 { "y" } else { "ies" }
                    )));
                }
            }
        }
    }

    /// Print every prompt exactly as it would be sent and count calls, tokens and cost; while a
    /// plan is open ([`Engine::open_plan`]) the prompts join it instead, to be printed at its end.
    fn dry_run(&self, jobs: &[Job]) -> Vec<Outcome> {
        let planned = jobs.iter().map(|job| Planned {
            label: job.label.clone(),
            cached: self
                .cache
                .as_ref()
                .is_some_and(|c| c.get(&self.key(job, 0)).is_some()),
            prompt: job.prompt.clone(),
        });
        let mut plan = self.plan.lock().expect("plan lock");
        match plan.as_mut() {
            Some(p) => p.calls.extend(planned),
            None => self.print_plan(&planned.collect::<Vec<_>>(), 0),
        }
        jobs.iter()
            .map(|_| Outcome::Skipped {
                why: "dry run: no call made".into(),
            })
            .collect()
    }

    /// Keep a dry run's prompts until [`Engine::close_plan`], so that a run of many calls
    /// (the generator's strategies, one step after another) is numbered and counted as one.
    pub fn open_plan(&self) {
        self.plan
            .lock()
            .expect("plan lock")
            .get_or_insert_with(Plan::default);
    }

    /// Print the open plan's prompts, numbered across it, and one line counting its calls,
    /// tokens and cost: a lower bound ("at least") where some call's reply was needed to plan
    /// the steps after it. Nothing when no plan is open.
    pub fn close_plan(&self) {
        if let Some(p) = self.plan.lock().expect("plan lock").take() {
            self.print_plan(&p.calls, p.waiting);
        }
    }

    /// Print `calls` as `===== call i/N: label =====` with their system and user prompts, then
    /// the count; `waiting` calls held up the steps after them, which are not counted.
    fn print_plan(&self, calls: &[Planned], waiting: usize) {
        let mut out = self.out.lock().expect("out lock");
        let total = calls.len();
        let (mut cached, mut input) = (0usize, 0u64);
        for (n, c) in calls.iter().enumerate() {
            cached += usize::from(c.cached);
            if !c.cached {
                input += c.prompt.estimated_tokens();
            }
            let _ = writeln!(
                out,
                "===== call {}/{total}: {}{} =====\n--- system ---\n{}\n--- user ---\n{}\n",
                n + 1,
                c.label,
                if c.cached { " (cached)" } else { "" },
                c.prompt.system,
                c.prompt.user
            );
        }
        let sent = total - cached;
        let max_out = sent as u64 * u64::from(self.settings.max_tokens);
        let price = self.settings.price;
        let model = format!("{}:{}", self.provider.protocol.name(), self.provider.model);
        let rates = format!(
            "at ${}/{} per million tokens in/out",
            price.input, price.output
        );
        let line = if waiting == 0 {
            format!(
                "dry run: {total} calls planned ({cached} already cached, {sent} to send) to {model}; about {input} input tokens, at most {max_out} output tokens; cost up to about ${:.4} {rates}",
                price.cost(input, max_out),
            )
        } else {
            format!(
                "dry run: at least {total} calls planned ({cached} already cached, {sent} to send) to {model}: {waiting} of them must be answered before the steps after them can be planned, and those are not counted; about {input} input tokens and at most {max_out} output tokens in the calls shown; cost at least about ${:.4} (their input), up to about ${:.4} for the calls shown, more for the later ones, {rates}",
                price.cost(input, 0),
                price.cost(input, max_out),
            )
        };
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

enum CallFailure {
    Skipped(String),
    Failed(String),
}

impl CallRecord {
    /// The ledger line of a request that brought no reply.
    fn failed(job: &Job, attempt: u32, ms: u64, result: String) -> CallRecord {
        CallRecord {
            label: job.label.clone(),
            attempt,
            cached: false,
            input_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            ms,
            server_ms: None,
            first_token_ms: None,
            finish: String::new(),
            result,
        }
    }
}

/// The prompt of a retry after an unusable reply: the same request, and what was wrong.
fn repair(user: &str, why: &str) -> String {
    format!(
        "{user}\n\nYour previous reply to this could not be used: {why}. Reply again, in exactly the format asked for, and keep it short."
    )
}
