//! The model's error type: every way a call to the model can fail.
//!
//! Source: Messages API ("Errors"; "Streaming Messages — error events"). The HTTP client
//! ([`crate::client`]), the SSE layer ([`crate::sse`]) and the replay model ([`crate::model`]) all
//! return an [`ApiError`]; it lives here, on its own, so that none of them imports another for it.

use std::time::Duration;

use serde_json::Value;

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
        /// The body in one line: an HTML page's title or first words, or the start of the text.
        body: String,
        /// The `request-id` header, when present.
        request_id: Option<String>,
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
    /// The request as a whole, stream included, took longer than this (`--request-timeout`):
    /// an endpoint that trickles pings cannot hold a turn forever. Not retried.
    #[error("the answer took longer than {} s, the most one request may take (--request-timeout)", .0.as_secs_f64())]
    Deadline(Duration),
    /// One answer grew past the most it may hold, in bytes: a JSON body past
    /// [`crate::client::MAX_BODY`], or a stream's deltas past [`crate::sse::MAX_ANSWER`]. The
    /// answer is dropped rather than held in memory; not retried.
    #[error("the answer grew past {0} bytes, the most one answer may hold, so it was dropped")]
    TooLarge(usize),
}

impl ApiError {
    /// The `request-id` the endpoint gave the failed response, for a bug report.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ApiError::Api { request_id, .. }
            | ApiError::Http { request_id, .. }
            | ApiError::Stream { request_id, .. } => request_id.as_deref(),
            ApiError::AfterOutput(inner) => inner.request_id(),
            _ => None,
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
        None => ApiError::Http { status, body: body_summary(body), request_id },
    }
}

/// A non-API error body in one line: an HTML page (a proxy's 502) as `an HTML page: TITLE`
/// (its `<title>`, else its text without tags), anything else as its start, whitespace collapsed.
pub(crate) fn body_summary(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let start =
        text.trim_start().get(..text.trim_start().len().min(512)).unwrap_or_default().to_ascii_lowercase();
    let squeeze = |s: &str| -> String {
        let words: Vec<&str> = s.split_whitespace().collect();
        let line = words.join(" ");
        match line.char_indices().nth(160) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line,
        }
    };
    if start.starts_with("<!doctype html") || start.starts_with("<html") || start.starts_with("<head") {
        let lower = text.to_ascii_lowercase();
        let title = lower.find("<title").and_then(|open| {
            let from = open + lower[open..].find('>')? + 1;
            let to = from + lower[from..].find("</title")?;
            text.get(from..to)
        });
        let shown = match title.map(squeeze).filter(|t| !t.is_empty()) {
            Some(title) => title,
            None => squeeze(&strip_tags(&text)),
        };
        return format!("an HTML page: {shown}");
    }
    squeeze(&text)
}

/// The text of an HTML page without its tags, `<script>` and `<style>` contents.
fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        out.push(' ');
        let tag = rest[open..].to_ascii_lowercase();
        let skip_to = if tag.starts_with("<script") {
            tag.find("</script>").map(|e| e + "</script>".len())
        } else if tag.starts_with("<style") {
            tag.find("</style>").map(|e| e + "</style>".len())
        } else {
            tag.find('>').map(|e| e + 1)
        };
        match skip_to {
            Some(n) => rest = &rest[open + n..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The first 200 characters of a body, for an error message (`…` when cut).
pub(crate) fn head(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push('…');
    }
    s
}

/// The Anthropic Python SDK's exception name for `error` (`RateLimitError`, `APIConnectionError`,
/// …), as the course's later chapters show a failed request: `[Error] {Type}: {e}` (s13–s15), a
/// teammate's `{Type}: {e}` (s13).
pub fn sdk_error_type(error: &ApiError) -> &'static str {
    match error {
        ApiError::Api { status, .. } | ApiError::Http { status, .. } => match status {
            400 => "BadRequestError",
            401 => "AuthenticationError",
            403 => "PermissionDeniedError",
            404 => "NotFoundError",
            409 => "ConflictError",
            413 => "RequestTooLargeError",
            422 => "UnprocessableEntityError",
            429 => "RateLimitError",
            529 => "OverloadedError",
            s if *s >= 500 => "InternalServerError",
            _ => "APIStatusError",
        },
        ApiError::Transport(_) => "APIConnectionError",
        ApiError::IdleTimeout(_) | ApiError::Deadline(_) => "APITimeoutError",
        ApiError::AfterOutput(inner) => sdk_error_type(inner),
        _ => "APIError",
    }
}
