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

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::config::{AuthType, Config};
use crate::messages::{Message, MessagesRequest, MessagesResponse};
use crate::sse::{Delta, MessageAccumulator, SseParser, StreamEvent};

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
    /// An `error` event inside a stream that had answered HTTP 200 (Messages API, "Streaming
    /// Messages — error events"), such as `overloaded_error`.
    #[error("API error in the stream, {error_type}: {message}")]
    Stream {
        /// The event's `error.type`, such as `overloaded_error`.
        error_type: String,
        /// The event's `error.message`.
        message: String,
        /// The `request-id` header of the response, when present.
        request_id: Option<String>,
    },
    /// The answer was cut: the connection broke while its body was read, or a stream ended
    /// before `message_stop`. The message is incomplete, so none of it is used.
    #[error("the response stream was cut off: {0}")]
    Incomplete(String),
    /// The endpoint sent no byte for this long (`--idle-timeout`), waiting for the response
    /// head or for the next chunk of its body.
    #[error("no data from the endpoint for {} s (idle timeout)", .0.as_secs_f64())]
    IdleTimeout(Duration),
    /// The attempt failed after part of its answer was already shown, so it was not retried (a
    /// retry would show and store the text twice). The partial answer is not kept in the history.
    #[error("{0} (after part of the answer was shown; not retried, and the partial answer was not kept)")]
    AfterOutput(Box<ApiError>),
}

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
            ApiError::Decode(_) | ApiError::Replay(_) | ApiError::AfterOutput(_) => false,
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

/// Timeouts of the HTTP client. Both end as clear errors: [`ApiError::Transport`] ("timed out")
/// for the connect timeout, [`ApiError::IdleTimeout`] for the idle one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the TCP/TLS connection.
    pub connect: Duration,
    /// Longest silence while waiting for the response head, and then between two chunks of its
    /// body (so a slow but live stream is never cut).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { connect: Duration::from_secs(10), idle: Duration::from_secs(300) }
    }
}

/// The largest response body read on the JSON path (64 MiB); a larger one is an
/// [`ApiError::Decode`].
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Where streamed text goes as it arrives: each `text_delta`, in order.
pub type OnText<'a> = &'a mut (dyn FnMut(&str) + Send);

/// The Messages API client: reqwest with rustls, one connection pool per process.
///
/// Streams by default (`"stream": true`, see [`crate::sse`]); [`AnthropicClient::with_streaming`]
/// turns that off for the plain JSON path. Both return the same [`MessagesResponse`].
pub struct AnthropicClient {
    http: reqwest::Client,
    url: String,
    retry: RetryPolicy,
    timeouts: Timeouts,
    stream: bool,
    /// Where retry notices go (stderr in the binaries; a buffer in tests).
    notify: Box<dyn Fn(&str) + Send + Sync>,
    /// The previous request's messages with their JSON, reused by [`AnthropicClient::body`].
    wire_cache: std::sync::Mutex<Vec<(Message, Box<RawValue>)>>,
}

impl AnthropicClient {
    /// A streaming client for `config`, with the given retry policy and timeouts. Retry notices
    /// are printed on stderr.
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
        // The idle timeout is applied by hand, per chunk (see `next_chunk`), so that it ends as
        // the clear ApiError::IdleTimeout rather than a generic transport error.
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| ApiError::Transport(e.to_string()))?;
        Ok(Self {
            http,
            url: format!("{}/v1/messages", config.base_url),
            retry,
            timeouts,
            stream: true,
            notify: Box::new(|line| eprintln!("{line}")),
            wire_cache: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Sends retry notices to `notify` instead of stderr.
    pub fn with_notifier(mut self, notify: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notify = Box::new(notify);
        self
    }

    /// Streams responses (`true`, the default) or asks for one JSON body (`false`, `--no-stream`).
    pub fn with_streaming(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Whether requests ask for a stream.
    pub fn streaming(&self) -> bool {
        self.stream
    }

    /// The JSON body for `request`, with `stream` set by this client.
    ///
    /// The history only grows (course §0: what was sent is never rewritten), so each request
    /// repeats the previous one's messages and adds a few. A message equal to the one at the same
    /// place last time reuses its JSON; from the first difference on, messages are serialised
    /// anew. Comparing is far cheaper than serialising, which keeps the cost of a round from
    /// growing with the whole history (issue 7). The cache holds one copy of the last request's
    /// messages.
    ///
    /// # Errors
    /// [`ApiError::Decode`] if serde cannot serialise the request (a non-string map key, say).
    pub fn body(&self, request: &MessagesRequest) -> Result<Bytes, ApiError> {
        let fail = |e: serde_json::Error| ApiError::Decode(format!("cannot serialise the request: {e}"));
        let mut cache = self.wire_cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut previous = std::mem::take(&mut *cache).into_iter();
        let mut same_so_far = true;
        let mut fresh = Vec::with_capacity(request.messages.len());
        for message in &request.messages {
            match previous.next().filter(|(old, _)| same_so_far && old == message) {
                Some(entry) => fresh.push(entry),
                None => {
                    same_so_far = false;
                    let json = serde_json::value::to_raw_value(message).map_err(fail)?;
                    fresh.push((message.clone(), json));
                }
            }
        }
        let messages: Vec<&RawValue> = fresh.iter().map(|(_, json)| json.as_ref()).collect();
        // Sized up front: growing a multi-megabyte buffer by doubling costs more than writing it.
        let size = messages.iter().map(|m| m.get().len() + 1).sum::<usize>() + 4096;
        let mut body = Vec::with_capacity(size);
        serde_json::to_writer(&mut body, &WireRequest::new(request, &messages, self.stream.then_some(true)))
            .map_err(fail)?;
        *cache = fresh;
        Ok(Bytes::from(body))
    }

    /// Forgets the JSON kept from the last request, so the next [`AnthropicClient::body`] serialises
    /// every message (after a chapter rewrites its history, or to measure a first request).
    pub fn clear_wire_cache(&self) {
        self.wire_cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The URL requests go to: `{base}/v1/messages`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// One `POST /v1/messages`, retried per the [`RetryPolicy`]. When streaming, each text delta
    /// is passed to `on_text` as it arrives; the JSON path never calls it.
    ///
    /// An attempt that failed before any text reached `on_text` is retried when the error is
    /// retryable (a dropped stream included); once text was shown, the error is returned as
    /// [`ApiError::AfterOutput`] and never retried. Each wait is announced through the notifier:
    /// what failed, which retry, how long.
    ///
    /// # Errors
    /// The last [`ApiError`] once retries are exhausted or the error is not retryable.
    pub async fn create(
        &self,
        request: &MessagesRequest,
        on_text: OnText<'_>,
    ) -> Result<MessagesResponse, ApiError> {
        // Serialised once and reused by every retry.
        let body = self.body(request)?;
        let mut retry = 0;
        loop {
            let mut shown = false;
            let (result, hints) = {
                let mut sink = |text: &str| {
                    if !text.is_empty() {
                        shown = true;
                        on_text(text);
                    }
                };
                self.attempt(&body, &mut sink).await
            };
            let err = match result {
                Ok(response) => return Ok(response),
                Err(err) if shown => return Err(ApiError::AfterOutput(Box::new(err))),
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

    async fn attempt(
        &self,
        body: &Bytes,
        on_text: OnText<'_>,
    ) -> (Result<MessagesResponse, ApiError>, RetryHints) {
        let send = self.http.post(&self.url).body(body.clone()).send();
        let response = match tokio::time::timeout(self.timeouts.idle, send).await {
            Err(_) => return (Err(ApiError::IdleTimeout(self.timeouts.idle)), RetryHints::default()),
            Ok(Err(e)) => return (Err(ApiError::Transport(describe(&e))), RetryHints::default()),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let hints = RetryHints::from_headers(response.headers());
        let request_id =
            response.headers().get("request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        let mut body = response.bytes_stream();
        if (200..300).contains(&status) && is_sse {
            return (self.read_stream(&mut body, on_text, request_id).await, hints);
        }
        // The JSON path; also a server that ignored `"stream": true`.
        let mut bytes = Vec::new();
        loop {
            match self.next_chunk(&mut body).await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() > MAX_BODY => {
                    let e = format!("the response body is larger than {MAX_BODY} bytes");
                    return (Err(ApiError::Decode(e)), hints);
                }
                Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(e) => return (Err(e), hints),
            }
        }
        if (200..300).contains(&status) {
            let parsed = serde_json::from_slice::<MessagesResponse>(&bytes)
                .map_err(|e| ApiError::Decode(format!("{e}; body starts {:?}", head(&bytes))));
            return (parsed, hints);
        }
        (Err(parse_error(status, &bytes, request_id)), hints)
    }

    /// Reads an SSE body until `message_stop`, passing text deltas to `on_text`.
    async fn read_stream(
        &self,
        body: &mut (impl Stream<Item = reqwest::Result<Bytes>> + Unpin),
        on_text: OnText<'_>,
        request_id: Option<String>,
    ) -> Result<MessagesResponse, ApiError> {
        let mut parser = SseParser::new();
        let mut message = MessageAccumulator::new();
        let with_id = |e: ApiError| match e {
            ApiError::Stream { error_type, message, .. } => {
                ApiError::Stream { error_type, message, request_id: request_id.clone() }
            }
            other => other,
        };
        while let Some(chunk) = self.next_chunk(body).await? {
            for frame in parser.push(&chunk)? {
                let event = StreamEvent::from_frame(&frame)?;
                let text = match &event {
                    StreamEvent::ContentBlockDelta { delta: Delta::Text(t), .. } => Some(t.clone()),
                    _ => None,
                };
                message.apply(event).map_err(with_id)?;
                if let Some(text) = text {
                    on_text(&text);
                }
                if message.is_done() {
                    return message.finish();
                }
            }
        }
        if parser.has_partial() {
            return Err(ApiError::Incomplete("the stream ended in the middle of an event".into()));
        }
        message.finish()
    }

    /// The next body chunk, `None` at the end; no byte for [`Timeouts::idle`] is an
    /// [`ApiError::IdleTimeout`].
    async fn next_chunk(
        &self,
        body: &mut (impl Stream<Item = reqwest::Result<Bytes>> + Unpin),
    ) -> Result<Option<Bytes>, ApiError> {
        match tokio::time::timeout(self.timeouts.idle, body.next()).await {
            Err(_) => Err(ApiError::IdleTimeout(self.timeouts.idle)),
            Ok(None) => Ok(None),
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            // The head arrived, so the endpoint was reached: the answer itself was cut.
            Ok(Some(Err(e))) => Err(ApiError::Incomplete(describe(&e))),
        }
    }
}

/// A [`MessagesRequest`] as sent: the same fields by reference, the messages as ready JSON, and
/// `stream` set by the client.
#[derive(serde::Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    messages: &'a [&'a RawValue],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [crate::messages::ToolSpec],
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

impl<'a> WireRequest<'a> {
    fn new(request: &'a MessagesRequest, messages: &'a [&'a RawValue], stream: Option<bool>) -> Self {
        Self {
            model: &request.model,
            max_tokens: request.max_tokens,
            system: &request.system,
            messages,
            tools: &request.tools,
            stream,
        }
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
    fn the_body_is_the_request_with_the_clients_stream_flag_however_the_history_changes() {
        use crate::config::{AuthType, Config};
        use crate::messages::{ContentBlock, Message, ToolSpec};
        let config = Config {
            model: "m".into(),
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
            auth: AuthType::ApiKey,
        };
        let client = AnthropicClient::new(&config, RetryPolicy::default(), Timeouts::default()).unwrap();
        let mut request = MessagesRequest {
            model: "m".into(),
            max_tokens: 8000,
            system: "sys".into(),
            messages: vec![Message::user_text("hi")],
            tools: vec![ToolSpec {
                name: "t".into(),
                description: "d".into(),
                input_schema: serde_json::json!({}),
            }],
            stream: None,
        };
        let check = |client: &AnthropicClient, request: &MessagesRequest| {
            let sent: serde_json::Value = serde_json::from_slice(&client.body(request).unwrap()).unwrap();
            let expected =
                serde_json::to_value(MessagesRequest { stream: Some(true), ..request.clone() }).unwrap();
            assert_eq!(sent, expected);
        };
        check(&client, &request);
        // The history grows: the cached prefix is reused.
        request.messages.push(Message::assistant_blocks(vec![ContentBlock::text("yo")]));
        request.messages.push(Message::user_text("more"));
        check(&client, &request);
        // A message in the middle changes (a merge or a repair): everything after it is redone.
        request.messages[1] = Message::assistant_blocks(vec![ContentBlock::text("changed")]);
        check(&client, &request);
        // A shorter history and no system prompt or tools.
        request.messages.truncate(1);
        request.system.clear();
        request.tools.clear();
        check(&client, &request);
        let plain = client.with_streaming(false);
        let sent: serde_json::Value = serde_json::from_slice(&plain.body(&request).unwrap()).unwrap();
        assert_eq!(sent, serde_json::to_value(&request).unwrap());
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
