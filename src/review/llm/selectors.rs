//! Selectors: how the model's calls turn into one [`Review`] per candidate. All three
//! produce scores on the 1–10 scale that the ranking orders, so they can be
//! compared with the same metrics.
//!
//! - [`Pointwise`] (DEI): each candidate reviewed alone, `samples` times; mean score, spread kept.
//! - [`Listwise`]: one call sees every candidate and picks one; score = 1 + 9 × share of votes.
//! - [`Pairwise`]: a round-robin tournament of A/B calls; score = 1 + 9 × share of games won.
//!
//! What no committee reviews ([`crate::review::by_rule`]: no patch, one that does not apply, one
//! touching no library code) is never sent: it scores 1 by rule, and the
//! reason says so. Candidates with no usable reply are `unscored` (score 0, ranked last).

use super::parse::{Parsed, ReplyKind};
use super::runner::{Job, Outcome};
use crate::llm::prompts::Prompts;
use crate::llm::{Format, Rendered};
use crate::model::{Review, Score, Stage, Usage};
use crate::review::prompts::{ExecView, Limits, PromptCandidate, ReproView};
use crate::review::rubric::Rubric;
use crate::review::{IssueBundle, Prepared};

/// What every selector needs to write its prompts.
pub struct PlanEnv<'a> {
    pub prompts: &'a Prompts,
    pub rubric: &'a Rubric,
    pub format: Format,
    pub samples: u32,
    pub limits: Limits,
    pub committee: String,
    /// The execution view of each candidate of the bundle being planned (in its order);
    /// empty without `--exec`.
    pub exec: Vec<Option<ExecView>>,
    /// The issue's reproduction, shown once above the candidates when they ran.
    pub repro: Option<ReproView>,
    /// Prompt tokens one call may hold (the model's context less `--max-tokens`), when known.
    pub room: Option<u64>,
}

impl PlanEnv<'_> {
    /// Candidate `i` of the bundle as the prompts show it within `lim`, with its execution
    /// evidence.
    fn candidate(&self, p: &Prepared, i: usize, label: &str, lim: &Limits) -> PromptCandidate {
        PromptCandidate::new(p, label, lim).with_exec(self.exec.get(i).cloned().flatten())
    }

    /// The prompt `render` writes with the fullest limits that fit [`PlanEnv::room`]: the code
    /// context shrinks first, then the before/after code of the edited files; the issue and
    /// the diff are always shown whole. A prompt that fits in no way comes with the reason it
    /// cannot be sent.
    fn fit(
        &self,
        render: impl Fn(&Limits) -> anyhow::Result<Rendered>,
    ) -> anyhow::Result<(Rendered, Option<String>)> {
        let Some(room) = self.room else {
            return Ok((render(&self.limits)?, None));
        };
        let mut leanest = None;
        for lim in ladder(self.limits) {
            let r = render(&lim)?;
            // A tenth to spare: the estimate is not the server's tokenizer.
            let need = r.estimated_tokens();
            if need + need / 10 <= room {
                return Ok((r, None));
            }
            leanest = Some((r, need));
        }
        let (r, need) = leanest.expect("the ladder has a step");
        Ok((
            r,
            Some(format!(
                "the prompt needs about {need} tokens with the code context left out, and the model's context leaves {room} for it after --max-tokens: use a model or server with a larger context (or check --context-window)"
            )),
        ))
    }
}

/// Limits from the fullest to the leanest (see [`PlanEnv::fit`]).
fn ladder(full: Limits) -> Vec<Limits> {
    let mut steps = vec![full];
    for c in [full.context_chars / 2, full.context_chars / 4, 0] {
        steps.push(Limits {
            context_chars: c,
            ..full
        });
    }
    for r in [full.region_chars / 2, full.region_chars / 4, 0] {
        steps.push(Limits {
            context_chars: 0,
            region_chars: r,
            ..full
        });
    }
    steps
}

fn job(
    prompt: (Rendered, Option<String>),
    kind: ReplyKind,
    sample: u32,
    about: Vec<usize>,
    label: String,
) -> Job {
    Job {
        prompt: prompt.0,
        kind,
        sample,
        about,
        label,
        temperature: None,
        unsendable: prompt.1,
        shape: None,
    }
}

/// A way of turning model calls into reviews.
pub trait Selector: Send + Sync {
    fn name(&self) -> &'static str;
    /// The calls to make for one issue.
    fn plan(&self, bundle: &IssueBundle, env: &PlanEnv) -> anyhow::Result<Vec<Job>>;
    /// One review per candidate from the outcomes of the planned jobs (same order).
    fn reviews(
        &self,
        bundle: &IssueBundle,
        jobs: &[Job],
        outcomes: &[Outcome],
        env: &PlanEnv,
    ) -> Vec<Review>;
}

/// Parse a selector name.
pub fn by_name(name: &str) -> anyhow::Result<Box<dyn Selector>> {
    match name {
        "pointwise" | "dei" => Ok(Box::new(Pointwise)),
        "listwise" => Ok(Box::new(Listwise)),
        "pairwise" | "tournament" => Ok(Box::new(Pairwise)),
        other => anyhow::bail!("unknown selector `{other}`: use pointwise, listwise or pairwise"),
    }
}

/// Whether a candidate is sent to the model (the others score 1 by rule,
/// [`crate::review::by_rule`], as with the offline committee).
pub(super) fn eligible(p: &Prepared) -> bool {
    crate::review::by_rule(&p.candidate, &p.view).is_none()
}

fn base_review(p: &Prepared, env: &PlanEnv) -> Review {
    Review {
        candidate: p.candidate.key(),
        committee: env.committee.clone(),
        score: Score {
            value: 0.0,
            parts: vec![],
        },
        reason: String::new(),
        explanations: vec![],
        unscored: None,
        rule: false,
        usage: None,
    }
}

/// The rule review of a candidate that is not sent to the model.
fn rule_review(p: &Prepared, env: &PlanEnv) -> Review {
    let mut r = base_review(p, env);
    r.rule = true;
    r.score = Score {
        value: 1.0,
        parts: vec![("rule: nothing to review".into(), 1.0)],
    };
    let why = crate::review::by_rule(&p.candidate, &p.view).unwrap_or_else(|| "no patch".into());
    r.reason = format!("{why} (scored 1 by rule, not sent to the model)");
    r
}

fn unscored(mut r: Review, why: String) -> Review {
    r.score = Score {
        value: 0.0,
        parts: vec![],
    };
    r.reason = format!("unscored: {why}");
    r.unscored = Some(why);
    r
}

fn first_sentence(s: &str, max: usize) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let end = line.find(". ").map(|i| i + 1).unwrap_or(line.len());
    line[..end].chars().take(max).collect()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Usage of the jobs about candidate `i`, shared evenly among the candidates of each call.
fn usage_of(i: usize, jobs: &[Job], outcomes: &[Outcome]) -> Option<Usage> {
    let mut u = Usage::default();
    let mut any = false;
    for (j, o) in jobs.iter().zip(outcomes) {
        if !j.about.contains(&i) {
            continue;
        }
        any = true;
        let k = j.about.len().max(1) as u64;
        let ou = o.usage();
        u.add(&Usage {
            calls: ou.calls,
            cached: ou.cached,
            input_tokens: ou.input_tokens / k,
            output_tokens: ou.output_tokens / k,
            cost_usd: ou.cost_usd / k as f64,
            cached_input_tokens: ou.cached_input_tokens / k,
            cached_output_tokens: ou.cached_output_tokens / k,
        });
    }
    any.then_some(u)
}

fn first_problem(outcomes: &[&Outcome]) -> String {
    outcomes
        .iter()
        .find_map(|o| match o {
            Outcome::Failed { why, .. } | Outcome::Skipped { why } => Some(why.clone()),
            Outcome::Done { .. } => None,
        })
        .unwrap_or_else(|| "no call was made".into())
}

/// DEI: review each candidate alone, in stages, then score.
pub struct Pointwise;

impl Selector for Pointwise {
    fn name(&self) -> &'static str {
        "pointwise"
    }

    fn plan(&self, bundle: &IssueBundle, env: &PlanEnv) -> anyhow::Result<Vec<Job>> {
        let mut jobs = Vec::new();
        for (i, p) in bundle.candidates.iter().enumerate() {
            if !eligible(p) {
                continue;
            }
            let prompt = env.fit(|lim| {
                let c = env.candidate(p, i, "1", lim);
                env.prompts
                    .pointwise(&bundle.task, env.repro.as_ref(), &c, env.rubric, env.format)
            })?;
            for s in 0..env.samples {
                jobs.push(job(
                    prompt.clone(),
                    ReplyKind::Point,
                    s,
                    vec![i],
                    format!("pointwise {} sample {}", p.candidate.key(), s + 1),
                ));
            }
        }
        Ok(jobs)
    }

    fn reviews(
        &self,
        bundle: &IssueBundle,
        jobs: &[Job],
        outcomes: &[Outcome],
        env: &PlanEnv,
    ) -> Vec<Review> {
        bundle
            .candidates
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if !eligible(p) {
                    return rule_review(p, env);
                }
                let mine: Vec<&Outcome> = jobs
                    .iter()
                    .zip(outcomes)
                    .filter(|(j, _)| j.about == [i])
                    .map(|(_, o)| o)
                    .collect();
                let mut r = base_review(p, env);
                r.usage = usage_of(i, jobs, outcomes);
                let scored: Vec<(u8, &Vec<(Stage, String)>)> = mine
                    .iter()
                    .filter_map(|o| match o {
                        Outcome::Done {
                            parsed:
                                Parsed::Point {
                                    explanations,
                                    score,
                                },
                            ..
                        } => Some((*score, explanations)),
                        _ => None,
                    })
                    .collect();
                if scored.is_empty() {
                    return unscored(r, first_problem(&mine));
                }
                // A score from some of the samples asked for is not the committee's score.
                if scored.len() < mine.len() {
                    let why = format!(
                        "{} of {} samples had no usable reply: {}",
                        mine.len() - scored.len(),
                        mine.len(),
                        first_problem(&mine)
                    );
                    return unscored(r, why);
                }
                let k = scored.len() as f64;
                let mean = scored.iter().map(|s| f64::from(s.0)).sum::<f64>() / k;
                let sd = if scored.len() > 1 {
                    (scored
                        .iter()
                        .map(|s| (f64::from(s.0) - mean).powi(2))
                        .sum::<f64>()
                        / (k - 1.0))
                        .sqrt()
                } else {
                    0.0
                };
                let min = scored.iter().map(|s| s.0).min().unwrap_or(0);
                let max = scored.iter().map(|s| s.0).max().unwrap_or(0);
                let parts = vec![
                    ("mean".to_string(), round2(mean)),
                    ("sd".to_string(), round2(sd)),
                    ("min".to_string(), f64::from(min)),
                    ("max".to_string(), f64::from(max)),
                    ("samples scored".to_string(), k),
                ];
                // Keep the written review of the sample closest to the mean.
                let best = scored
                    .iter()
                    .min_by(|a, b| {
                        (f64::from(a.0) - mean)
                            .abs()
                            .total_cmp(&(f64::from(b.0) - mean).abs())
                    })
                    .expect("non-empty");
                r.explanations = best.1.clone();
                let said = best
                    .1
                    .iter()
                    .find(|e| e.0 == Stage::Patch)
                    .or_else(|| best.1.first())
                    .map(|e| first_sentence(&e.1, 70))
                    .unwrap_or_default();
                r.reason = if scored.len() > 1 {
                    format!("{mean:.1}±{sd:.1} over {}: {said}", scored.len())
                } else {
                    said
                };
                r.score = Score {
                    value: round2(mean),
                    parts,
                };
                r
            })
            .collect()
    }
}

/// Rotation of `eligible` for sample `s`, so each candidate takes every position in turn over
/// the samples; where the rotation starts depends on the issue (`seed`), so that a model that
/// always picks the first place does not always pick the same agent's candidate.
fn rotated(eligible: &[usize], s: u32, seed: &str) -> Vec<usize> {
    let n = eligible.len();
    let start = seed.bytes().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(b))
    });
    (0..n)
        .map(|k| eligible[(k + start + s as usize) % n])
        .collect()
}

fn share_reviews(
    bundle: &IssueBundle,
    jobs: &[Job],
    outcomes: &[Outcome],
    env: &PlanEnv,
    wins: &[f64],
    games: &[f64],
    what: &str,
) -> Vec<Review> {
    let elig: Vec<usize> = (0..bundle.candidates.len())
        .filter(|&i| eligible(&bundle.candidates[i]))
        .collect();
    bundle
        .candidates
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if !eligible(p) {
                return rule_review(p, env);
            }
            let mut r = base_review(p, env);
            r.usage = usage_of(i, jobs, outcomes);
            if elig.len() == 1 {
                r.score = Score {
                    value: 5.5,
                    parts: vec![("rule: only candidate that applies".into(), 5.5)],
                };
                r.reason =
                    "the only candidate that applies: nothing to compare (5.5 by rule)".into();
                return r;
            }
            if games[i] == 0.0 {
                let mine: Vec<&Outcome> = jobs
                    .iter()
                    .zip(outcomes)
                    .filter(|(j, _)| j.about.contains(&i))
                    .map(|(_, o)| o)
                    .collect();
                return unscored(r, first_problem(&mine));
            }
            let share = wins[i] / games[i];
            r.score = Score {
                value: round2(1.0 + 9.0 * share),
                parts: vec![
                    (format!("{what} won"), wins[i]),
                    (format!("{what} counted"), games[i]),
                ],
            };
            r.reason = format!("won {} of {} {what}", wins[i], games[i]);
            // The analysis of a call this candidate won, if any.
            if let Some(a) = jobs.iter().zip(outcomes).find_map(|(j, o)| match o {
                Outcome::Done {
                    parsed: Parsed::List { analysis, choice },
                    ..
                } if j.about.get(choice - 1) == Some(&i) => Some(analysis.clone()),
                Outcome::Done {
                    parsed: Parsed::Pair { analysis, a_wins },
                    ..
                } if j.about.get(if *a_wins { 0 } else { 1 }) == Some(&i) => Some(analysis.clone()),
                _ => None,
            }) {
                r.explanations = vec![(Stage::Patch, a)];
            }
            r
        })
        .collect()
}

/// One call per sample sees every candidate and picks one.
pub struct Listwise;

impl Selector for Listwise {
    fn name(&self) -> &'static str {
        "listwise"
    }

    fn plan(&self, bundle: &IssueBundle, env: &PlanEnv) -> anyhow::Result<Vec<Job>> {
        let elig: Vec<usize> = (0..bundle.candidates.len())
            .filter(|&i| eligible(&bundle.candidates[i]))
            .collect();
        if elig.len() < 2 {
            return Ok(vec![]);
        }
        let mut jobs = Vec::new();
        for s in 0..env.samples {
            let order = rotated(&elig, s, &bundle.task.instance_id);
            let prompt = env.fit(|lim| {
                let cs: Vec<PromptCandidate> = order
                    .iter()
                    .enumerate()
                    .map(|(k, &i)| {
                        env.candidate(&bundle.candidates[i], i, &(k + 1).to_string(), lim)
                    })
                    .collect();
                env.prompts.listwise(
                    &bundle.task,
                    env.repro.as_ref(),
                    &cs,
                    env.rubric,
                    env.format,
                )
            })?;
            jobs.push(job(
                prompt,
                ReplyKind::List(order.len()),
                s,
                order,
                format!("listwise {} sample {}", bundle.task.instance_id, s + 1),
            ));
        }
        Ok(jobs)
    }

    fn reviews(
        &self,
        bundle: &IssueBundle,
        jobs: &[Job],
        outcomes: &[Outcome],
        env: &PlanEnv,
    ) -> Vec<Review> {
        let n = bundle.candidates.len();
        let (mut wins, mut games) = (vec![0.0; n], vec![0.0; n]);
        for (j, o) in jobs.iter().zip(outcomes) {
            if let Outcome::Done {
                parsed: Parsed::List { choice, .. },
                ..
            } = o
            {
                for &i in &j.about {
                    games[i] += 1.0;
                }
                wins[j.about[choice - 1]] += 1.0;
            }
        }
        share_reviews(bundle, jobs, outcomes, env, &wins, &games, "votes")
    }
}

/// Round-robin tournament: every pair of candidates, asked in both A/B orders per sample.
pub struct Pairwise;

impl Selector for Pairwise {
    fn name(&self) -> &'static str {
        "pairwise"
    }

    fn plan(&self, bundle: &IssueBundle, env: &PlanEnv) -> anyhow::Result<Vec<Job>> {
        let elig: Vec<usize> = (0..bundle.candidates.len())
            .filter(|&i| eligible(&bundle.candidates[i]))
            .collect();
        let mut jobs = Vec::new();
        for (x, &a) in elig.iter().enumerate() {
            for &b in &elig[x + 1..] {
                // Both orders, so that a model that favours a place favours no candidate;
                // each order's prompt is the same for every sample.
                for (first, second) in [(a, b), (b, a)] {
                    let prompt = env.fit(|lim| {
                        let ca = env.candidate(&bundle.candidates[first], first, "A", lim);
                        let cb = env.candidate(&bundle.candidates[second], second, "B", lim);
                        env.prompts.pairwise(
                            &bundle.task,
                            env.repro.as_ref(),
                            &ca,
                            &cb,
                            env.rubric,
                            env.format,
                        )
                    })?;
                    for s in 0..env.samples {
                        jobs.push(job(
                            prompt.clone(),
                            ReplyKind::Pair,
                            s,
                            vec![first, second],
                            format!(
                                "pairwise {} vs {} sample {}",
                                bundle.candidates[first].candidate.key(),
                                bundle.candidates[second].candidate.agent,
                                s + 1
                            ),
                        ));
                    }
                }
            }
        }
        Ok(jobs)
    }

    fn reviews(
        &self,
        bundle: &IssueBundle,
        jobs: &[Job],
        outcomes: &[Outcome],
        env: &PlanEnv,
    ) -> Vec<Review> {
        let n = bundle.candidates.len();
        let (mut wins, mut games) = (vec![0.0; n], vec![0.0; n]);
        for (j, o) in jobs.iter().zip(outcomes) {
            if let Outcome::Done {
                parsed: Parsed::Pair { a_wins, .. },
                ..
            } = o
            {
                games[j.about[0]] += 1.0;
                games[j.about[1]] += 1.0;
                wins[j.about[if *a_wins { 0 } else { 1 }]] += 1.0;
            }
        }
        share_reviews(bundle, jobs, outcomes, env, &wins, &games, "games")
    }
}
