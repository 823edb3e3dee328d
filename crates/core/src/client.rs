//! The HTTP client for `POST {base}/v1/messages`, its typed errors, and its retry policy.
//!
//! Source: Messages API ("Messages", "Errors", "Rate limits") and the official SDKs' retry rules:
//! - headers `x-api-key` (or `Authorization: Bearer`), `anthropic-version: 2023-06-01`,
//!   `content-type: application/json`;
//! - a 4xx/5xx body `{"type":"error","error":{"type":…,"message":…}}` becomes [`ApiError::Api`];
//! - connection errors, timeouts, 408, 409, 429 and 5xx (529 `overloaded_error` included) are retried,
//!   honouring `x-should-retry` and `retry-after` (0–60 s), otherwise with exponential backoff and
//!   jitter (see [`RetryPolicy::delay`]).
//!
//! TLS is rustls, so no OpenSSL is needed to build.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::config::{AuthType, Config};
use crate::messages::{MessagesRequest, MessagesResponse};

/// The `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A failed call to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// The API answered 4xx/5xx with its error JSON.
    #[error("API error {status} {error_type}: {message}")]
    Api {
        /// HTTP status, such as 401 or 529.
        status: u16,
        /// The API's `error.type`, such as `authentication_error` or `overloaded_error`.
        error_type: String,
        /// The API's `error.message`.
        message: String,
        /// The `request-id` header, when present.
        request_id: Option<String>,
    },
    /// The server answered 4xx/5xx without the API's error JSON (a proxy page, say).
    #[error("HTTP {status} from the endpoint: {body}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The start of the body, for diagnosis.
        body: String,
    },
    /// The request never got an answer: connection refused, DNS, TLS, timeout.
    #[error("could not reach the endpoint: {0}")]
    Transport(String),
    /// The server answered 200 with something that is not a Messages API response.
    #[error("the endpoint's answer is not a Messages API response: {0}")]
    Decode(String),
    /// A replay file ran out, or does not parse.
    #[error("replay: {0}")]
    Replay(String),
}

impl ApiError {
    /// Whether the SDK policy retries this error (before any output was shown).
    pub fn is_retryable(&self) -> bool {
        match self {
            ApiError::Api { status, .. } | ApiError::Http { status, .. } => is_retryable_status(*status),
            ApiError::Transport(_) => true,
            ApiError::Decode(_) | ApiError::Replay(_) => false,
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

/// Timeouts of the HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the TCP/TLS connection.
    pub connect: Duration,
    /// Longest silence while waiting for response bytes.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), idle: Duration::from_secs(300) }
    }
}

/// The Messages API client: reqwest with rustls, one connection pool per process.
pub struct AnthropicClient {
    http: reqwest::Client,
    url: String,
    retry: RetryPolicy,
    /// Where retry notices go (stderr in the binaries; a buffer in tests).
    notify: Box<dyn Fn(&str) + Send + Sync>,
}

impl AnthropicClient {
    /// A client for `config`, with the given retry policy and timeouts. Retry notices are
    /// printed on stderr.
    ///
    /// # Errors
    /// [`ApiError::Transport`] when the key holds characters a header cannot carry, or the TLS
    /// backend cannot start.
    pub fn new(config: &Config, retry: RetryPolicy, timeouts: Timeouts) -> Result<Self, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(ANTHROPIC_VERSION));
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key {
            let (name, value) = match config.auth {
                AuthType::ApiKey => ("x-api-key", key.clone()),
                AuthType::Bearer => ("authorization", format!("Bearer {key}")),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                ApiError::Transport("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.idle)
            .build()
            .map_err(|e| ApiError::Transport(e.to_string()))?;
        Ok(Self {
            http,
            url: format!("{}/v1/messages", config.base_url),
            retry,
            notify: Box::new(|line| eprintln!("{line}")),
        })
    }

    /// Sends retry notices to `notify` instead of stderr.
    pub fn with_notifier(mut self, notify: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notify = Box::new(notify);
        self
    }

    /// The URL requests go to: `{base}/v1/messages`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One `POST /v1/messages`, retried per the [`RetryPolicy`]. Nothing of a response is shown
    /// before it is complete, so every retry is safe.
    ///
    /// # Errors
    /// The last [`ApiError`] once retries are exhausted or the error is not retryable.
    pub async fn create(&self, request: &MessagesRequest) -> Result<MessagesResponse, ApiError> {
        let mut retry = 0;
        loop {
            let (result, hints) = self.attempt(request).await;
            let err = match result {
                Ok(response) => return Ok(response),
                Err(err) => err,
            };
            let allowed = hints.should_retry.unwrap_or_else(|| err.is_retryable());
            if !allowed || retry >= self.retry.max_retries {
                return Err(err);
            }
            let wait = self.retry.delay(retry, hints.retry_after, fastrand::f64());
            (self.notify)(&format!(
                "{err} — retry {} of {} in {:.1}s",
                retry + 1,
                self.retry.max_retries,
                wait.as_secs_f64()
            ));
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    async fn attempt(&self, request: &MessagesRequest) -> (Result<MessagesResponse, ApiError>, RetryHints) {
        let response = match self.http.post(&self.url).json(request).send().await {
            Ok(r) => r,
            Err(e) => return (Err(ApiError::Transport(describe(&e))), RetryHints::default()),
        };
        let status = response.status().as_u16();
        let hints = RetryHints::from_headers(response.headers());
        let request_id =
            response.headers().get("request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return (Err(ApiError::Transport(describe(&e))), hints),
        };
        if (200..300).contains(&status) {
            let parsed = serde_json::from_slice::<MessagesResponse>(&body)
                .map_err(|e| ApiError::Decode(format!("{e}; body starts {:?}", head(&body))));
            return (parsed, hints);
        }
        (Err(parse_error(status, &body, request_id)), hints)
    }
}

/// Turns a 4xx/5xx body into [`ApiError::Api`] when it is the API's error JSON, else
/// [`ApiError::Http`].
pub fn parse_error(status: u16, body: &[u8], request_id: Option<String>) -> ApiError {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().and_then(|v| v.get("error"));
    match error {
        Some(e) => ApiError::Api {
            status,
            error_type: e.get("type").and_then(Value::as_str).unwrap_or("error").to_owned(),
            message: e.get("message").and_then(Value::as_str).unwrap_or("(no message)").to_owned(),
            request_id,
        },
        None => ApiError::Http { status, body: head(body) },
    }
}

fn head(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push('…');
    }
    s
}

fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    if e.is_timeout() {
        text.push_str(" (timed out)");
    }
    text
}

/// What the server said about retrying.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct RetryHints {
    should_retry: Option<bool>,
    retry_after: Option<Duration>,
}

impl RetryHints {
    fn from_headers(headers: &HeaderMap) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_caps_and_jitters_down_by_at_most_a_quarter() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, None, 0.0), Duration::from_millis(500));
        assert_eq!(p.delay(1, None, 0.0), Duration::from_secs(1));
        assert_eq!(p.delay(10, None, 0.0), Duration::from_secs(8));
        assert_eq!(p.delay(0, None, 1.0), Duration::from_millis(375));
    }

    #[test]
    fn retry_after_is_honoured_up_to_sixty_seconds() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(0, Some(Duration::from_secs(1)), 0.5), Duration::from_secs(1));
        assert_eq!(p.delay(0, Some(Duration::from_secs(61)), 0.0), Duration::from_millis(500));
    }

    #[test]
    fn retryable_statuses_follow_the_sdk_policy() {
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 413] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn api_error_json_is_parsed_and_other_bodies_are_kept() {
        let e = parse_error(
            401,
            br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            Some("req_1".into()),
        );
        assert_eq!(e.to_string(), "API error 401 authentication_error: invalid x-api-key");
        let e = parse_error(502, b"<html>bad gateway</html>", None);
        assert_eq!(e.to_string(), "HTTP 502 from the endpoint: <html>bad gateway</html>");
    }
}
