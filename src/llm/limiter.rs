//! Pacing and spending: a requests/tokens-per-minute limiter, exponential backoff with
//! jitter, and the cost budget behind `--max-cost`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Two token buckets (requests and tokens per minute); either may be off.
#[derive(Debug)]
pub struct RateLimiter {
    rpm: Option<f64>,
    tpm: Option<f64>,
    state: Mutex<Buckets>,
}

#[derive(Debug)]
struct Buckets {
    requests: f64,
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    pub fn new(rpm: Option<u32>, tpm: Option<u64>) -> RateLimiter {
        let rpm = rpm.filter(|&r| r > 0).map(f64::from);
        let tpm = tpm.filter(|&t| t > 0).map(|t| t as f64);
        RateLimiter {
            rpm,
            tpm,
            state: Mutex::new(Buckets {
                requests: rpm.unwrap_or(0.0),
                tokens: tpm.unwrap_or(0.0),
                at: Instant::now(),
            }),
        }
    }

    /// How long to wait before one request of `tokens` may go; takes it when the answer is zero.
    pub fn try_take(&self, tokens: u64, now: Instant) -> Duration {
        if self.rpm.is_none() && self.tpm.is_none() {
            return Duration::ZERO;
        }
        let mut b = self.state.lock().expect("limiter lock");
        let dt = now.saturating_duration_since(b.at).as_secs_f64();
        b.at = now;
        let mut wait: f64 = 0.0;
        if let Some(rpm) = self.rpm {
            b.requests = (b.requests + dt * rpm / 60.0).min(rpm);
            if b.requests < 1.0 {
                wait = wait.max((1.0 - b.requests) * 60.0 / rpm);
            }
        }
        if let Some(tpm) = self.tpm {
            // A single request bigger than the whole bucket waits for a full bucket.
            let need = (tokens as f64).min(tpm);
            b.tokens = (b.tokens + dt * tpm / 60.0).min(tpm);
            if b.tokens < need {
                wait = wait.max((need - b.tokens) * 60.0 / tpm);
            }
        }
        if wait > 0.0 {
            return Duration::from_secs_f64(wait);
        }
        if self.rpm.is_some() {
            b.requests -= 1.0;
        }
        if let Some(tpm) = self.tpm {
            b.tokens -= (tokens as f64).min(tpm);
        }
        Duration::ZERO
    }

    pub async fn acquire(&self, tokens: u64) {
        loop {
            let wait = self.try_take(tokens, Instant::now());
            if wait.is_zero() {
                return;
            }
            tokio::time::sleep(wait).await;
        }
    }
}

/// Delay before retry `attempt` (0-based): `base * 2^attempt`, capped, with jitter in
/// [50%, 100%]; a server's `Retry-After` is honoured (plus up to 10% jitter).
pub fn backoff(
    attempt: u32,
    base: Duration,
    cap: Duration,
    retry_after: Option<Duration>,
    unit: f64,
) -> Duration {
    let exp = base.as_secs_f64() * 2f64.powi(attempt.min(30) as i32);
    let jittered = exp.min(cap.as_secs_f64()) * (0.5 + 0.5 * unit);
    match retry_after {
        Some(ra) => Duration::from_secs_f64(ra.as_secs_f64() * (1.0 + 0.1 * unit)),
        None => Duration::from_secs_f64(jittered),
    }
}

/// The `--max-cost` budget: spending plus what calls in flight may still spend.
#[derive(Debug, Default)]
pub struct Budget {
    pub max: Option<f64>,
    state: Mutex<Spend>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Spend {
    pub spent: f64,
    pub reserved: f64,
    /// Set once a call was refused: from then on no new call is scheduled.
    pub stopped: bool,
    pub refused: u64,
}

/// Why a call was not scheduled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refused {
    /// True for the first refusal (the one that should say so).
    pub first: bool,
    pub spend: Spend,
}

impl Budget {
    pub fn new(max: Option<f64>) -> Budget {
        Budget {
            max,
            state: Mutex::new(Spend::default()),
        }
    }

    /// Reserve the most a call can cost; `Err` when that could break the cap.
    pub fn reserve(&self, worst: f64) -> Result<f64, Refused> {
        let mut s = self.state.lock().expect("budget lock");
        if let Some(max) = self.max {
            if s.stopped || s.spent + s.reserved + worst > max {
                let first = !s.stopped;
                s.stopped = true;
                s.refused += 1;
                return Err(Refused { first, spend: *s });
            }
        }
        s.reserved += worst;
        Ok(worst)
    }

    /// A reserved call finished (or failed) and actually cost `actual`.
    pub fn settle(&self, reserved: f64, actual: f64) {
        let mut s = self.state.lock().expect("budget lock");
        s.reserved = (s.reserved - reserved).max(0.0);
        s.spent += actual;
    }

    pub fn spend(&self) -> Spend {
        *self.state.lock().expect("budget lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rpm_bucket_spaces_requests() {
        let l = RateLimiter::new(Some(60), None);
        let t0 = Instant::now();
        for _ in 0..60 {
            assert_eq!(l.try_take(0, t0), Duration::ZERO);
        }
        let w = l.try_take(0, t0);
        assert!(
            w > Duration::from_millis(900) && w <= Duration::from_secs(1),
            "{w:?}"
        );
        assert_eq!(l.try_take(0, t0 + Duration::from_secs(1)), Duration::ZERO);
    }

    #[test]
    fn tpm_bucket_limits_tokens() {
        let l = RateLimiter::new(None, Some(1000));
        let t0 = Instant::now();
        assert_eq!(l.try_take(800, t0), Duration::ZERO);
        let w = l.try_take(800, t0);
        assert!((w.as_secs_f64() - 36.0).abs() < 0.01, "{w:?}");
    }

    #[test]
    fn backoff_grows_caps_and_honours_retry_after() {
        let b = Duration::from_millis(100);
        let cap = Duration::from_secs(2);
        assert!(backoff(0, b, cap, None, 1.0) == Duration::from_millis(100));
        assert!(backoff(3, b, cap, None, 0.0) == Duration::from_millis(400));
        assert!(backoff(10, b, cap, None, 1.0) == cap);
        assert!(backoff(0, b, cap, Some(Duration::from_secs(3)), 0.0) == Duration::from_secs(3));
    }

    #[test]
    fn budget_counts_reservations_and_stops() {
        let b = Budget::new(Some(1.0));
        let r1 = b.reserve(0.4).unwrap();
        let r2 = b.reserve(0.4).unwrap();
        let refused = b.reserve(0.4).unwrap_err();
        assert!(refused.first);
        b.settle(r1, 0.1);
        b.settle(r2, 0.1);
        // Stopped for good, even though money is left.
        let again = b.reserve(0.01).unwrap_err();
        assert!(!again.first);
        assert!((b.spend().spent - 0.2).abs() < 1e-9);
    }
}
