//! When and how long to wait before retrying a request that failed before its first token.
//!
//! Owns the backoff policy (exponential with jitter, `Retry-After` honoured) and which connection
//! failures are worth a retry. Pure computation; it must not sleep or make requests.

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

/// Whether a request that could not connect is worth retrying. A connection refused by this
/// machine (a loopback address or `localhost`) is not: nothing listens on that port, and nothing
/// will a second later, so the user hears it at once. Other failures (timeouts, resets, DNS,
/// remote hosts, whose balancers refuse while they restart) keep their retries.
pub(crate) fn connect_failure_is_retryable(
    url: &str,
    error: &(dyn std::error::Error + 'static),
) -> bool {
    !(is_connection_refused(error) && is_loopback(url))
}

/// Whether the error, or any error under it, is "connection refused".
fn is_connection_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        let refused = error
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
            || error
                .to_string()
                .to_ascii_lowercase()
                .contains("connection refused");
        if refused {
            return true;
        }
        current = error.source();
    }
    false
}

/// Whether `url` names this machine: `127.0.0.0/8`, `::1`, `localhost` (and `*.localhost`).
fn is_loopback(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Parses a `Retry-After` header given in seconds (the HTTP-date form is treated as absent).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
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
    fn a_refused_connection_on_this_machine_is_not_retried() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        for url in [
            "http://127.0.0.1:1/v1/chat/completions",
            "http://127.8.9.10:8080/api/chat",
            "http://[::1]:11434/api/chat",
            "http://localhost:8080/v1",
            "http://LOCALHOST./v1",
            "http://model.localhost:1/v1",
        ] {
            assert!(!connect_failure_is_retryable(url, &refused), "{url}");
        }
        for url in [
            "http://192.168.1.5:8080/v1",
            "https://api.example.com/v1",
            "http://localhost.example.com/v1",
            "not a url",
        ] {
            assert!(connect_failure_is_retryable(url, &refused), "{url}");
        }
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(connect_failure_is_retryable(
            "http://127.0.0.1:1/v1",
            &reset
        ));
        // Found under the errors that wrap it.
        let wrapped = std::io::Error::other(refused);
        assert!(!connect_failure_is_retryable(
            "http://127.0.0.1:1/v1",
            &wrapped
        ));
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
