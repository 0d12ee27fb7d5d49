//! Retry timing, pure: `retry-after` parsing and exponential backoff with jitter.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;

/// Bounded exponential backoff with full jitter, honouring the provider's `retry-after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackoffPolicy {
    /// Attempts in total, the first included (so `max_attempts: 1` never retries).
    pub max_attempts: u32,
    pub base_ms: u64,
    pub max_delay_ms: u64,
    /// A `retry-after` longer than this ends the retries instead of sleeping through it.
    pub max_retry_after_ms: u64,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_ms: 1000,
            max_delay_ms: 30_000,
            max_retry_after_ms: 120_000,
        }
    }
}

/// The loop's next move after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    RetryAfter(Duration),
    GiveUp,
}

impl BackoffPolicy {
    /// The decision after attempt number `attempt` (1-based) failed with `error`. `jitter` is a
    /// value in [0, 1) supplied by the caller (use [`jitter`]) so the function stays pure.
    pub fn decide(&self, attempt: u32, error: &ProviderError, jitter: f64) -> RetryDecision {
        if !error.is_retryable() || attempt >= self.max_attempts {
            return RetryDecision::GiveUp;
        }
        if let Some(after) = error.retry_after() {
            if after.as_millis() > u128::from(self.max_retry_after_ms) {
                return RetryDecision::GiveUp;
            }
            return RetryDecision::RetryAfter(after);
        }
        RetryDecision::RetryAfter(self.delay(attempt, jitter))
    }

    /// Full jitter: uniform in [cap/2, cap) where cap = min(max, base * 2^(attempt-1)).
    pub fn delay(&self, attempt: u32, jitter: f64) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let cap = self
            .base_ms
            .saturating_mul(1u64 << exp)
            .min(self.max_delay_ms);
        let j = jitter.clamp(0.0, 1.0);
        let half = cap / 2;
        let ms = half + ((cap - half) as f64 * j) as u64;
        Duration::from_millis(ms)
    }
}

/// A jitter value in [0, 1).
pub fn jitter() -> f64 {
    fastrand::f64()
}

/// Longest wait any `retry-after` form yields (a day; the policy's `max_retry_after_ms` decides
/// whether to wait that long at all).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400);

/// Parses a `retry-after` header (delta-seconds, possibly fractional, or an HTTP date as RFC 9110
/// allows) or the OpenAI/Anthropic `retry-after-ms` header, which wins when both are given. A
/// date is turned into the time left from now (a date in the past means "retry now").
pub fn parse_retry_after(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
) -> Option<Duration> {
    parse_retry_after_at(retry_after, retry_after_ms, SystemTime::now())
}

/// [`parse_retry_after`] against a given `now` (pure).
pub fn parse_retry_after_at(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_millis(ms.min(86_400_000.0) as u64));
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return None;
        }
        return Some(Duration::from_millis((secs.min(86_400.0) * 1000.0) as u64));
    }
    // IMF-fixdate, RFC 850 or asctime (`httpdate` accepts the three forms HTTP allows).
    let at = httpdate::parse_http_date(value).ok()?;
    let left = at.duration_since(now).unwrap_or(Duration::ZERO);
    Some(left.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16, after: Option<u64>) -> ProviderError {
        ProviderError::Http {
            status,
            error_type: None,
            message: "m".into(),
            retry_after: after.map(Duration::from_secs),
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(Some("3"), None),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after(Some(" 1.5 "), None),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(Some("3"), Some("250")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after(Some("soon"), None), None);
        assert_eq!(parse_retry_after(Some("-1"), None), None);
        assert_eq!(parse_retry_after(Some("NaN"), None), None);
        assert_eq!(parse_retry_after(None, None), None);
    }

    #[test]
    fn backoff_grows_is_bounded_and_jittered() {
        let p = BackoffPolicy::default();
        assert_eq!(p.delay(1, 0.0), Duration::from_millis(500));
        assert_eq!(p.delay(2, 0.0), Duration::from_millis(1000));
        assert_eq!(p.delay(3, 0.99), Duration::from_millis(2000 + 1980));
        assert_eq!(p.delay(40, 1.0), Duration::from_millis(30_000));
        assert!(p.delay(2, 0.5) > p.delay(2, 0.0));
    }

    #[test]
    fn decisions() {
        let p = BackoffPolicy::default();
        assert_eq!(
            p.decide(1, &http(429, Some(2)), 0.3),
            RetryDecision::RetryAfter(Duration::from_secs(2))
        );
        assert_eq!(
            p.decide(1, &http(503, None), 0.0),
            RetryDecision::RetryAfter(Duration::from_millis(500))
        );
        assert_eq!(p.decide(5, &http(503, None), 0.0), RetryDecision::GiveUp);
        assert_eq!(p.decide(1, &http(400, None), 0.0), RetryDecision::GiveUp);
        assert_eq!(
            p.decide(1, &http(429, Some(3600)), 0.0),
            RetryDecision::GiveUp
        );
        let overloaded = ProviderError::Stream {
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
        };
        assert!(matches!(
            p.decide(1, &overloaded, 0.0),
            RetryDecision::RetryAfter(_)
        ));
        assert_eq!(
            p.decide(1, &ProviderError::Cancelled, 0.0),
            RetryDecision::GiveUp
        );
        let reset = ProviderError::Transport {
            kind: crate::error::TransportKind::Body,
        };
        assert!(matches!(
            p.decide(1, &reset, 0.0),
            RetryDecision::RetryAfter(_)
        ));
    }

    #[test]
    fn stages_and_classes() {
        assert_eq!(http(401, None).stage(), crate::error::Stage::Authorization);
        assert_eq!(http(400, None).stage(), crate::error::Stage::Parameters);
        assert_eq!(http(529, None).stage(), crate::error::Stage::Execution);
        assert!(http(529, None).is_retryable());
        assert!(!http(404, None).is_retryable());
    }

    #[test]
    fn retry_after_as_an_http_date_is_the_time_left() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        let at = |v: &str| parse_retry_after_at(Some(v), None, now);
        assert_eq!(
            at("Wed, 21 Oct 2015 07:28:30 GMT"),
            Some(Duration::from_secs(30))
        );
        // RFC 850 and asctime forms too.
        assert_eq!(
            at("Wednesday, 21-Oct-15 07:29:00 GMT"),
            Some(Duration::from_secs(60))
        );
        assert_eq!(at("Wed Oct 21 07:28:05 2015"), Some(Duration::from_secs(5)));
        // A date already past: retry now; a date years ahead: capped (the policy then gives up).
        assert_eq!(at("Wed, 21 Oct 2015 07:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(at("Sat, 21 Oct 2017 07:28:00 GMT"), Some(MAX_RETRY_AFTER));
        // `retry-after-ms` still wins.
        assert_eq!(
            parse_retry_after_at(Some("Wed, 21 Oct 2015 07:28:30 GMT"), Some("10"), now),
            Some(Duration::from_millis(10))
        );
        let p = BackoffPolicy::default();
        let limited = ProviderError::Http {
            status: 429,
            error_type: None,
            message: "m".into(),
            retry_after: at("Wed, 21 Oct 2015 07:28:02 GMT"),
        };
        assert_eq!(
            p.decide(1, &limited, 0.5),
            RetryDecision::RetryAfter(Duration::from_secs(2))
        );
    }
}
