//! The HTTP client for `POST {base}/v1/messages`.
//!
//! Source: Messages API ("Messages", "Errors", "Rate limits") and the official SDKs' retry rules:
//! - headers `x-api-key` (or `Authorization: Bearer`), `anthropic-version: 2023-06-01`,
//!   `content-type: application/json`;
//! - a 4xx/5xx body `{"type":"error","error":{"type":…,"message":…}}` becomes [`ApiError::Api`];
//! - connection errors, timeouts, 408, 409, 429 and 5xx (529 `overloaded_error` included) are retried,
//!   honouring `x-should-retry` and `retry-after` (0–60 s), otherwise with exponential backoff and
//!   jitter (see [`RetryPolicy::delay`]).
//!
//! TLS is rustls, so no OpenSSL is needed to build. A plain `http://` endpoint needs no TLS at
//! all: it is reached through hyper's own client, with no TLS set-up (see `transport`), so a
//! machine without CA certificates can still talk to a local model.
//!
//! | part | what it holds |
//! |---|---|
//! | this module | [`AnthropicClient`]: headers, timeouts, one attempt, the stream reader |
//! | `retry` | [`RetryPolicy`]: what is retried, and the waits |
//! | `wire` | the request body as sent, and its cache |
//! | [`cache`] | prompt caching: where the `cache_control` breakpoints go |
//!
//! The error type, [`ApiError`], lives in [`crate::error`] and is re-exported here.

pub mod cache;
mod retry;
mod transport;
mod wire;

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::poll_immediate;
use reqwest::header::{HeaderMap, HeaderValue};

use self::retry::RetryHints;
pub use self::retry::{RetryPolicy, is_retryable_status};
use self::transport::{Answer, BodyStream, Transport};
pub use self::wire::{RequestBody, SEGMENT};
use crate::config::{AuthType, Config};
use crate::error::head;
pub use crate::error::{ApiError, parse_error};
use crate::events::{Event, EventSink};
use crate::messages::{MessagesRequest, MessagesResponse};
use crate::sse::{Delta, MessageAccumulator, SseParser, StreamEvent};

/// The `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Timeouts of the HTTP client. Each ends as a clear error: [`ApiError::Transport`] ("timed
/// out") for the connect timeout, [`ApiError::IdleTimeout`] for the idle one,
/// [`ApiError::Deadline`] for the whole request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the TCP/TLS connection.
    pub connect: Duration,
    /// Longest silence while waiting for the response head, and then between two chunks of its
    /// body (so a slow but live stream is never cut).
    pub idle: Duration,
    /// Longest time one attempt may take, head and whole body: pings every few seconds keep the
    /// idle timeout away, this one still ends the request. 600 s by default, as the official
    /// SDKs' request timeout.
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(300),
            request: Duration::from_secs(600),
        }
    }
}

/// The largest response body read on the JSON path (64 MiB); a larger one is an
/// [`ApiError::TooLarge`].
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// Where streamed text goes as it arrives: each `text_delta`, in order.
pub type OnText<'a> = &'a mut (dyn FnMut(&str) + Send);

/// The Messages API client: reqwest with rustls for https, hyper's client for plain http, one
/// connection pool per client.
///
/// Streams by default (`"stream": true`, see [`crate::sse`]); [`AnthropicClient::with_streaming`]
/// turns that off for the plain JSON path. Both return the same [`MessagesResponse`]. Puts
/// prompt-caching breakpoints on every request by default ([`cache`]);
/// [`AnthropicClient::with_prompt_caching`] turns that off for an endpoint that rejects them.
pub struct AnthropicClient {
    transport: Transport,
    /// The headers of every request, kept for [`AnthropicClient::via_reqwest`].
    headers: HeaderMap,
    url: reqwest::Url,
    retry: RetryPolicy,
    timeouts: Timeouts,
    stream: bool,
    /// Whether requests carry `cache_control` breakpoints ([`cache`]).
    cache: bool,
    /// The JSON of the messages and tools last sent, reused by [`AnthropicClient::request_body`].
    wire_cache: std::sync::Mutex<wire::WireCache>,
}

impl AnthropicClient {
    /// A streaming client for `config`, with the given retry policy and timeouts. Retry notices
    /// go to the sink each [`AnthropicClient::create`] is given, as [`Event::Retry`].
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
        // The idle timeout is applied by hand, between chunks (see `IdleTimer`), so that it ends as
        // the clear ApiError::IdleTimeout rather than a generic transport error.
        let url = format!("{}/v1/messages", config.base_url);
        // Parsed once here, not at every request.
        let url = reqwest::Url::parse(&url).map_err(|e| {
            ApiError::Transport(format!("{url:?} is not a URL ({e}); check ANTHROPIC_BASE_URL"))
        })?;
        let plain_http = url.scheme() == "http";
        let transport = if plain_http && !transport::proxy_in_env() {
            Transport::plain(&url, headers.clone(), &timeouts).map_err(ApiError::Transport)?
        } else {
            Transport::reqwest(headers.clone(), &timeouts, plain_http).map_err(|e| {
                ApiError::Transport(format!(
                    "cannot set up the HTTPS client (are CA certificates installed?): {e}"
                ))
            })?
        };
        Ok(Self {
            transport,
            headers,
            url,
            retry,
            timeouts,
            stream: true,
            cache: true,
            wire_cache: std::sync::Mutex::new(wire::WireCache::default()),
        })
    }

    /// Sends through reqwest (rustls, proxies from the environment) even to a plain `http://`
    /// endpoint, which otherwise goes through hyper's own client (see the `transport` module):
    /// what every `https://` endpoint uses, so the loopback tests can run it too.
    ///
    /// # Errors
    /// [`ApiError::Transport`] when the TLS backend cannot start.
    pub fn via_reqwest(mut self) -> Result<Self, ApiError> {
        let plain_http = self.url.scheme() == "http";
        self.transport = Transport::reqwest(self.headers.clone(), &self.timeouts, plain_http)
            .map_err(ApiError::Transport)?;
        Ok(self)
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

    /// Puts prompt-caching breakpoints on every request (`true`, the default; see [`cache`]) or
    /// sends none (`false`: `--no-cache`, `DISABLE_PROMPT_CACHING=1`), for an endpoint that
    /// rejects the `cache_control` field.
    pub fn with_prompt_caching(mut self, cache: bool) -> Self {
        self.cache = cache;
        self
    }

    /// Whether requests carry prompt-caching breakpoints.
    pub fn prompt_caching(&self) -> bool {
        self.cache
    }
    /// The URL requests go to: `{base}/v1/messages`.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// One `POST /v1/messages`, retried per the [`RetryPolicy`]. When streaming, each text delta
    /// is reported to `events` as an [`Event::TextDelta`] as it arrives; the JSON path reports
    /// none.
    ///
    /// An attempt that failed before any text was reported is retried when the error is
    /// retryable (a dropped stream included); once text was shown, the error is returned as
    /// [`ApiError::AfterOutput`] and never retried. Each wait is reported first as an
    /// [`Event::Retry`]: what failed, which retry, how long.
    ///
    /// # Errors
    /// The last [`ApiError`] once retries are exhausted or the error is not retryable.
    pub async fn create(
        &self,
        request: &MessagesRequest,
        events: &dyn EventSink,
    ) -> Result<MessagesResponse, ApiError> {
        // Serialised once and reused by every retry.
        let body = self.request_body(request)?;
        let mut retry = 0;
        loop {
            let mut shown = false;
            let (result, hints) = {
                let mut sink = |text: &str| {
                    if !text.is_empty() {
                        shown = true;
                        events.on_event(&Event::TextDelta(text));
                    }
                };
                let attempt = self.attempt(&body, &mut sink);
                match tokio::time::timeout(self.timeouts.request, attempt).await {
                    Ok(done) => done,
                    Err(_) => (Err(ApiError::Deadline(self.timeouts.request)), RetryHints::default()),
                }
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
            events.on_event(&Event::Retry {
                error: &err,
                retry: retry + 1,
                max_retries: self.retry.max_retries,
                wait,
            });
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    async fn attempt(
        &self,
        body: &RequestBody,
        on_text: OnText<'_>,
    ) -> (Result<MessagesResponse, ApiError>, RetryHints) {
        let send = self.transport.send(&self.url, body);
        let response = match tokio::time::timeout(self.timeouts.idle, send).await {
            Err(_) => return (Err(ApiError::IdleTimeout(self.timeouts.idle)), RetryHints::default()),
            Ok(Err(e)) => return (Err(ApiError::Transport(e)), RetryHints::default()),
            Ok(Ok(r)) => r,
        };
        let Answer { status, headers, mut body } = response;
        let hints = RetryHints::from_headers(&headers);
        let request_id = headers.get("request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut idle = IdleTimer::new(self.timeouts.idle);
        let is_sse = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
        if (200..300).contains(&status) && is_sse {
            let result = self.read_stream(&mut body, &mut idle, on_text, request_id).await;
            if result.is_ok() {
                finish_body(&mut body).await;
            }
            return (result, hints);
        }
        // The JSON path; also a server that ignored `"stream": true`.
        let mut bytes = Vec::new();
        loop {
            match idle.next_chunk(&mut body).await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() > MAX_BODY => {
                    return (Err(ApiError::TooLarge(MAX_BODY)), hints);
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

    /// Reads an SSE body until `message_stop` (or its end, see [`crate::sse::finish_stream`]),
    /// passing text deltas to `on_text`.
    async fn read_stream(
        &self,
        body: &mut BodyStream,
        idle: &mut IdleTimer,
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
        while let Some(chunk) = idle.next_chunk(body).await? {
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
        // A final event may lack its blank line; the message may end without message_stop.
        crate::sse::finish_stream(&mut parser, message)
    }
}

/// The idle timeout of one answer's body: [`Timeouts::idle`] of silence between two chunks is an
/// [`ApiError::IdleTimeout`].
///
/// One timer serves the whole body. A chunk only notes when it came; when the timer ends, it is
/// set again for the last chunk's time plus the limit, unless that time has passed. A timer per
/// chunk (`tokio::time::timeout` around each read) entered and left tokio's timer wheel about
/// seven times per answer.
struct IdleTimer {
    limit: Duration,
    /// When the last chunk (or the head) came.
    last: tokio::time::Instant,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl IdleTimer {
    /// A timer for `limit` of silence, counted from now.
    fn new(limit: Duration) -> Self {
        let last = tokio::time::Instant::now();
        Self { limit, last, sleep: Box::pin(tokio::time::sleep_until(last + limit)) }
    }

    /// The next body chunk, `None` at the end.
    async fn next_chunk(&mut self, body: &mut BodyStream) -> Result<Option<Bytes>, ApiError> {
        loop {
            tokio::select! {
                biased;
                item = body.next() => {
                    self.last = tokio::time::Instant::now();
                    return match item {
                        None => Ok(None),
                        Some(Ok(chunk)) => Ok(Some(chunk)),
                        // The head arrived, so the endpoint was reached: the answer itself was cut.
                        Some(Err(e)) => Err(ApiError::Incomplete(e)),
                    };
                }
                () = self.sleep.as_mut() => {
                    let due = self.last + self.limit;
                    if tokio::time::Instant::now() >= due {
                        return Err(ApiError::IdleTimeout(self.limit));
                    }
                    self.sleep.as_mut().reset(due);
                }
            }
        }
    }
}

/// Reads what is left of a streamed body after its last event (the end of the chunked body
/// usually arrives just after `message_stop`), so that the connection goes back to the pool:
/// dropping an unfinished body closes it, and the next request would open a new connection (and,
/// over HTTPS, a new TLS session). Bounded, so that an endpoint that goes on sending after the
/// message cannot hold the answer back: at most [`FINISH_BYTES`] within [`FINISH_WAIT`].
async fn finish_body(body: &mut BodyStream) {
    let drain = async {
        let mut left = FINISH_BYTES;
        while let Some(Ok(chunk)) = body.next().await {
            match left.checked_sub(chunk.len()) {
                Some(rest) => left = rest,
                None => break,
            }
        }
    };
    let mut drain = std::pin::pin!(drain);
    // Usually the end came with `message_stop` and is already read: the connection's task hands
    // it over within a pass of the scheduler, and no timer is armed (arming one that ends first
    // costs the runtime a wake-up system call). Only a late end waits, at most FINISH_WAIT.
    let mut done = poll_immediate(drain.as_mut()).await.is_some();
    for _ in 1..FINISH_PASSES {
        if done {
            break;
        }
        tokio::task::yield_now().await;
        done = poll_immediate(drain.as_mut()).await.is_some();
    }
    if !done {
        let _ = tokio::time::timeout(FINISH_WAIT, drain).await;
    }
    // hyper signals that the connection is ready for another request in the same poll that
    // delivers the end of the body; hyper-util's task that waits for that signal then puts the
    // connection back in the pool. One more pass of the (current-thread) scheduler runs it, so the
    // next request finds the connection there instead of opening a second one.
    tokio::task::yield_now().await;
}

/// Scheduler passes [`finish_body`] gives the end of a body before it arms a timer.
const FINISH_PASSES: usize = 3;

/// How long [`finish_body`] waits for the end of a streamed body after its last event.
const FINISH_WAIT: Duration = Duration::from_millis(200);

/// How many bytes after the last event [`finish_body`] reads at most.
const FINISH_BYTES: usize = 64 * 1024;

#[cfg(test)]
mod tests;
