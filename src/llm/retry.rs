//! When and how long to wait before retrying a request that failed before its first token.
//!
//! Owns the backoff policy: exponential with jitter, `Retry-After` honoured. Pure computation; it
//! must not sleep or make requests.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// Retry settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first delay; each retry doubles it.
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl RetryPolicy {
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
        }
    }

    /// The wait before retry number `retry` (1-based). A server's `Retry-After` wins (capped at a
    /// minute); otherwise exponential backoff with ±25 % jitter, so clients do not retry in step.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(Duration::from_secs(60));
        }
        let exponent = retry.saturating_sub(1).min(16);
        let base = self
            .initial_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        let jitter = random_unit() * 0.5 - 0.25;
        base.mul_f64(1.0 + jitter)
    }
}

/// A number in [0, 1) from the standard library's randomly seeded hasher.
fn random_unit() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses a `Retry-After` header given in seconds (the HTTP-date form is treated as absent).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter_and_caps() {
        let policy = RetryPolicy::new(3);
        for (retry, base_ms) in [(1, 500.0), (2, 1000.0), (3, 2000.0), (10, 8000.0)] {
            let d = policy.delay(retry, None).as_secs_f64() * 1000.0;
            assert!(
                d >= base_ms * 0.75 && d <= base_ms * 1.25,
                "retry {retry}: {d} ms"
            );
        }
    }

    #[test]
    fn retry_after_wins() {
        let policy = RetryPolicy::new(3);
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(60)
        );
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
