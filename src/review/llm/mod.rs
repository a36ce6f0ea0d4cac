//! The LLM committee: a model reviews every candidate like a code-review committee (DEI).
//!
//! [`LlmCommittee::from_options`] resolves the model settings ([`LlmOptions`], what `dei rank`'s
//! LLM flags give; API keys from the environment only) into an [`LlmCommittee`], or `None`
//! when no model is configured. The committee plans calls with a [`selectors::Selector`], runs them with the
//! [`runner::Engine`] (cache, concurrency, rate limits, retries, cost cap) on its own tokio
//! runtime, and turns the replies into reviews.

pub mod once;
pub mod selectors;

use crate::llm::config::{LlmConfig, LlmOptions};
use crate::llm::prompts::Prompts;
use crate::llm::runner::{self, Engine};
use crate::llm::{cache, parse};
use crate::model::{Review, Usage};
use crate::review::prompts::Limits;
use crate::review::rubric::Rubric;
use crate::review::{Committee, IssueBundle};
use anyhow::Context as _;
use selectors::{PlanEnv, Selector};
use std::sync::Arc;

/// Reviews candidates with a model.
pub struct LlmCommittee {
    pub engine: Arc<Engine>,
    selector: Box<dyn Selector>,
    prompts: Prompts,
    rubric: Rubric,
    samples: u32,
    limits: Limits,
    locate: bool,
    /// One representative per group of candidates is reviewed ([`once`]).
    review_once: bool,
    /// Calls that ended with no usable reply (the provider kept failing, or never parsed).
    failed: std::sync::atomic::AtomicU64,
}

impl LlmCommittee {
    /// The LLM committee the settings ask for (environment from the process), or `None` when
    /// no model is configured.
    pub fn from_options(args: &LlmOptions) -> anyhow::Result<Option<LlmCommittee>> {
        match args.resolve(&|k| std::env::var(k).ok())? {
            Some(cfg) => Ok(Some(LlmCommittee::new(cfg)?)),
            None => Ok(None),
        }
    }

    /// The re-ranker `--llm-locate` asks for: the committee's model, prompts and name.
    pub fn relocator(&self) -> Option<crate::localize::rerank::Relocator> {
        self.locate.then(|| {
            crate::localize::rerank::Relocator::new(
                Arc::clone(&self.engine),
                self.prompts.clone(),
                self.name(),
            )
        })
    }

    pub fn new(cfg: LlmConfig) -> anyhow::Result<LlmCommittee> {
        let prompts = Prompts::load(cfg.prompt_dir.as_deref())?;
        let rubric = match &cfg.rubric {
            Some(p) => Rubric::load(p)?,
            None => Rubric::default_rubric(),
        };
        let cache = match &cfg.cache {
            Some(dir) => Some(
                cache::Cache::for_run(dir, cfg.settings.dry_run)
                    .with_context(|| "the LLM response cache")?,
            ),
            None => None,
        };
        Ok(LlmCommittee {
            engine: Arc::new(Engine::new(cfg.provider, cfg.settings, cache)?),
            selector: selectors::by_name(&cfg.selector)?,
            prompts,
            rubric,
            samples: cfg.samples,
            limits: Limits::default(),
            locate: cfg.locate,
            review_once: cfg.review_once,
            failed: Default::default(),
        })
    }

    /// Send dry-run output somewhere other than stdout.
    pub fn set_output(&self, w: Box<dyn std::io::Write + Send>) {
        *self.engine.out.lock().expect("out lock") = w;
    }

    /// Calls, cache hits, tokens and cost so far.
    pub fn usage(&self) -> Usage {
        self.engine.totals()
    }

    fn env(
        &self,
        exec: Vec<Option<crate::review::prompts::ExecView>>,
        repro: Option<crate::review::prompts::ReproView>,
    ) -> PlanEnv<'_> {
        PlanEnv {
            prompts: &self.prompts,
            rubric: &self.rubric,
            format: self.engine.settings.format,
            samples: self.samples,
            limits: self.limits,
            committee: self.name(),
            exec,
            repro,
            room: self.engine.prompt_room(),
        }
    }

    /// One line for people: what the run cost.
    pub fn summary(&self) -> String {
        let u = self.usage();
        let s = self.engine.budget.spend();
        format!(
            "llm {}: {} calls answered by the server ({} input + {} output tokens, ${:.4}), {} from the cache{}, {} failed{}",
            self.name(),
            u.calls,
            u.input_tokens,
            u.output_tokens,
            u.cost_usd,
            u.cached,
            if u.cached > 0 {
                format!(
                    " ({} + {} tokens spent on an earlier run)",
                    u.cached_input_tokens, u.cached_output_tokens
                )
            } else {
                String::new()
            },
            self.failed.load(std::sync::atomic::Ordering::Relaxed),
            if s.refused > 0 {
                format!("; {} calls not scheduled (--max-cost)", s.refused)
            } else {
                String::new()
            }
        )
    }
}

impl Committee for LlmCommittee {
    fn name(&self) -> String {
        format!(
            "llm-{}:{}:{}{}",
            self.selector.name(),
            self.engine.provider.protocol.name(),
            self.engine.provider.model,
            if self.locate { "+locate" } else { "" }
        )
    }

    fn reads_context(&self) -> bool {
        true
    }

    fn dry_run(&self) -> bool {
        self.engine.settings.dry_run
    }

    fn settings(&self) -> String {
        let s = &self.engine.settings;
        format!(
            "{} samples={} temperature={} max_tokens={} format={:?} rubric={} prompts={}{}",
            self.name(),
            self.samples,
            s.temperature,
            s.max_tokens,
            s.format,
            crate::review::offline::digest(self.rubric.text.as_bytes()),
            &self.prompts.digest[..16],
            if self.review_once { " review-once" } else { "" },
        )
    }

    fn review(&self, bundle: &IssueBundle) -> anyhow::Result<Vec<Review>> {
        self.review_many(std::slice::from_ref(bundle))
            .pop()
            .expect("one result per bundle")
    }

    fn issues_in_flight(&self) -> Option<usize> {
        if !self.engine.settings.dry_run {
            self.engine.server();
        }
        Some(self.engine.concurrency().clamp(1, 16))
    }

    fn live_status(&self) -> Option<String> {
        Some(format!(
            "{} calls in flight, ${:.4} spent",
            self.engine.in_flight(),
            self.engine.budget.spend().spent
        ))
    }

    /// Every call of every issue goes to one pool, for full concurrency. With `--review-once`
    /// each bundle is first reduced to one representative per group ([`once`]).
    fn review_many(&self, bundles: &[IssueBundle]) -> Vec<anyhow::Result<Vec<Review>>> {
        let reduced: Vec<Option<once::Reduced>> = bundles
            .iter()
            .map(|b| {
                self.review_once
                    .then(|| once::reduce(b, crate::review::prompts::exec_views(b)))
            })
            .collect();
        let views: Vec<(&IssueBundle, PlanEnv)> = bundles
            .iter()
            .zip(&reduced)
            .map(|(b, r)| match r {
                Some(r) => (
                    &r.bundle,
                    self.env(
                        r.exec.clone(),
                        crate::review::prompts::repro_view(&r.bundle),
                    ),
                ),
                None => (
                    b,
                    self.env(
                        crate::review::prompts::exec_views(b),
                        crate::review::prompts::repro_view(b),
                    ),
                ),
            })
            .collect();
        let plans: Vec<anyhow::Result<Vec<runner::Job>>> = views
            .iter()
            .map(|(b, env)| self.selector.plan(b, env))
            .collect();
        let mut all = Vec::new();
        let mut spans = Vec::new();
        for p in &plans {
            let start = all.len();
            if let Ok(jobs) = p {
                all.extend(jobs.iter().cloned());
            }
            spans.push(start..all.len());
        }
        let jobs_total = all.len();
        let outcomes = self.engine.run(all);
        debug_assert_eq!(outcomes.len(), jobs_total);
        let failed = outcomes
            .iter()
            .filter(|o| matches!(o, runner::Outcome::Failed { .. }))
            .count() as u64;
        self.failed
            .fetch_add(failed, std::sync::atomic::Ordering::Relaxed);
        let result = views
            .iter()
            .zip(plans)
            .zip(spans)
            .zip(bundles.iter().zip(&reduced))
            .map(|((((b, env), plan), span), (whole, r))| {
                let jobs = plan?;
                let reviews = self.selector.reviews(b, &jobs, &outcomes[span], env);
                Ok(match r {
                    Some(r) => r.expand(whole, reviews),
                    None => reviews,
                })
            })
            .collect();
        if !self.engine.settings.dry_run {
            crate::model::notify::notice(&self.summary());
        }
        result
    }
}
