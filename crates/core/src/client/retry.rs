//! The retry policy of the official SDKs: which failures are retried, and how long to wait.
//!
//! Source: the official SDKs' retry rules. Connection errors, timeouts, 408, 409, 429 and 5xx
//! (529 `overloaded_error` included) are retried, honouring `x-should-retry` and `retry-after`
//! (0–60 s), otherwise with exponential backoff and jitter (see [`RetryPolicy::delay`]).

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::error::ApiError;

impl ApiError {
    /// Whether the SDK policy retries this error (before any output was shown).
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Api { status, .. } | ApiError::Http { status, .. } => is_retryable_status(*status),
            ApiError::Transport(_) | ApiError::Incomplete(_) | ApiError::IdleTimeout(_) => true,
            // The same error types the API signals with 500 and 529 before answering.
            ApiError::Stream { error_type, .. } => {
                matches!(error_type.as_str(), "overloaded_error" | "api_error" | "rate_limit_error")
            }
            ApiError::Decode(_)
            | ApiError::Replay(_)
            | ApiError::AfterOutput(_)
            | ApiError::Deadline(_)
            | ApiError::TooLarge(_) => false,
        }
    }
}

impl ApiError {
    /// Whether the endpoint said it is overloaded: HTTP 529, or an `overloaded_error`, answered or
    /// in a stream before any output (the course's s15 counts these to switch to its fallback
    /// model).
    pub fn is_overloaded(&self) -> bool {
        match self {
            ApiError::Api { status, error_type, .. } => *status == 529 || error_type == "overloaded_error",
            ApiError::Http { status, .. } => *status == 529,
            ApiError::Stream { error_type, .. } => error_type == "overloaded_error",
            _ => false,
        }
    }
}

/// 408, 409, 429 and every 5xx are retried; 400, 401, 402, 403, 404, 413 and the rest are not.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// How often and how long to retry. Defaults follow the official SDKs: 2 retries, waits of
/// `min(0.5 s · 2^n, 8 s) · (1 − 0.25 · rand)`, `retry-after` honoured up to 60 s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` requests at most).
    pub max_retries: u32,
    /// First backoff wait.
    pub initial: Duration,
    /// Longest backoff wait.
    pub max_backoff: Duration,
    /// Longest `retry-after` honoured; a longer one falls back to backoff.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0-based), given the server's `retry-after` (if any)
    /// and a jitter sample `jitter` in `[0, 1)`. Pure, so it is tested without sleeping.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(wait) = retry_after
            && wait <= self.max_retry_after
        {
            return wait;
        }
        let exp = self.initial.saturating_mul(2u32.saturating_pow(retry.min(16)));
        exp.min(self.max_backoff).mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
    }
}

/// What the server said about retrying.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct RetryHints {
    pub(super) should_retry: Option<bool>,
    pub(super) retry_after: Option<Duration>,
}

impl RetryHints {
    pub(super) fn from_headers(headers: &HeaderMap) -> Self {
        let get = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
        let should_retry = match get("x-should-retry") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        let retry_after = get("retry-after-ms")
            .and_then(|v| v.parse::<f64>().ok())
            .map(|ms| Duration::from_secs_f64((ms / 1000.0).max(0.0)))
            .or_else(|| {
                get("retry-after")
                    .and_then(|v| v.parse::<f64>().ok())
                    .map(|s| Duration::from_secs_f64(s.max(0.0)))
            });
        Self { should_retry, retry_after }
    }
}
