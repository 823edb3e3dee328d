//! Builders for scripted replies: Messages API response bodies, errors, and their SSE streams.
//!
//! ```
//! use mock_api::{Chunking, MockServer, reply};
//! use serde_json::json;
//!
//! let server = MockServer::start(vec![
//!     reply::tool_uses(&[("toolu_1", "bash", json!({"command": "ls"}))]),
//!     reply::error(529, "overloaded_error", "Overloaded").with_header("retry-after", "0"),
//!     reply::stream(&reply::message(vec![reply::text_block("done")], "end_turn")).chunking(Chunking::Bytes(1)),
//! ]);
//! # drop(server);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::{Reply, SseEvent, sse};

/// The fragment size, in characters, that [`sse_from_message`] uses for text and tool-input deltas.
pub const DEFAULT_FRAGMENT: usize = 16;

static NEXT_MESSAGE_ID: AtomicU64 = AtomicU64::new(1);

/// A full Messages API response body (`POST /v1/messages`, non-streaming):
/// `{"id": "msg_mock_N", "type": "message", "role": "assistant", "model": "mock-model", "content": [...],
/// "stop_reason": ..., "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": M}}`.
/// `N` counts up across the process; `M` is about a quarter of the content's JSON length, at least 1.
/// Sent as a [`Reply::Message`], the server replaces `input_tokens` with its estimate of the
/// request and adds the prompt cache's counts (see [`crate::cache`]).
pub fn message(content: Vec<Value>, stop_reason: &str) -> Value {
    let n = NEXT_MESSAGE_ID.fetch_add(1, Ordering::Relaxed);
    let output_tokens = (Value::Array(content.clone()).to_string().len() / 4).max(1);
    json!({
        "id": format!("msg_mock_{n}"),
        "type": "message",
        "role": "assistant",
        "model": "mock-model",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": output_tokens},
    })
}

/// A `text` content block: `{"type": "text", "text": s}`.
pub fn text_block(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

/// A `tool_use` content block: `{"type": "tool_use", "id": id, "name": name, "input": input}`.
pub fn tool_use_block(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// An assistant turn with one text block and `stop_reason: end_turn`, as a [`Reply::Message`] (JSON or SSE,
/// following the request's `stream` field).
pub fn text(s: &str) -> Reply {
    Reply::Message(message(vec![text_block(s)], "end_turn"))
}

/// An assistant turn calling tools, `calls` being `(id, name, input)`, with `stop_reason: tool_use`, as a
/// [`Reply::Message`].
pub fn tool_uses(calls: &[(&str, &str, Value)]) -> Reply {
    text_and_tool_uses("", calls)
}

/// Like [`tool_uses`], with a leading text block when `text` is not empty.
pub fn text_and_tool_uses(text: &str, calls: &[(&str, &str, Value)]) -> Reply {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(text_block(text));
    }
    content.extend(calls.iter().map(|(id, name, input)| tool_use_block(id, name, input.clone())));
    Reply::Message(message(content, "tool_use"))
}

/// A 200 JSON reply with this body, whatever the request's `stream` field says.
pub fn json(body: Value) -> Reply {
    Reply::Json { status: 200, headers: Vec::new(), body }
}

/// The API's error body: `{"type": "error", "error": {"type": error_type, "message": message}}`.
pub fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

/// An API error: HTTP `status` with [`error_body`] (the server adds `request-id`, as to every response).
/// Add `retry-after`, `x-should-retry` and the like with [`Reply::with_header`].
pub fn error(status: u16, error_type: &str, message: &str) -> Reply {
    Reply::Json { status, headers: Vec::new(), body: error_body(error_type, message) }
}

/// The `error` event the API may send in a stream after HTTP 200 (e.g. `overloaded_error`).
pub fn error_event(error_type: &str, message: &str) -> SseEvent {
    SseEvent::new("error", error_body(error_type, message))
}

/// Always streams `body` (a [`message`]) as SSE, one write per event; tune with [`Reply::chunking`],
/// [`Reply::delay_between_chunks`] and [`Reply::crlf`].
pub fn stream(body: &Value) -> Reply {
    Reply::sse(sse_from_message(body))
}

/// The SSE stream of `body` cut off after `after` bytes of its body: the socket closes with no
/// `message_stop` (a stream dropped mid-message).
pub fn dropped_stream(body: &Value, after: usize) -> Reply {
    Reply::DropAfter {
        content_type: "text/event-stream".to_string(),
        body: sse::serialize(&sse_from_message(body), false),
        after,
    }
}

/// [`sse_from_message_with`] using [`DEFAULT_FRAGMENT`].
pub fn sse_from_message(body: &Value) -> Vec<SseEvent> {
    sse_from_message_with(body, DEFAULT_FRAGMENT)
}

/// Converts a Messages API response body into the event sequence the API streams for it:
/// - `message_start` with the message, its `content` empty, `stop_reason`/`stop_sequence` null and
///   `usage.output_tokens` 1;
/// - per content block at index `i`: `content_block_start` (`text` with `""`, `tool_use` with `input: {}`,
///   `thinking` with `""`, any other block whole), then `content_block_delta`s (`text_delta`,
///   `input_json_delta` whose `partial_json` fragments concatenate to the compact input JSON, none for an
///   empty input; `thinking_delta` then `signature_delta`), then `content_block_stop`;
/// - `message_delta` `{"delta": {"stop_reason", "stop_sequence"}, "usage": {"output_tokens"}}`;
/// - `message_stop`.
///
/// Text and JSON are cut every `fragment` characters (not bytes, since each fragment is a JSON string);
/// `fragment` 0 means one fragment.
pub fn sse_from_message_with(body: &Value, fragment: usize) -> Vec<SseEvent> {
    let mut start = body.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["stop_sequence"] = Value::Null;
    if start["usage"].is_object() {
        start["usage"]["output_tokens"] = json!(1);
    }
    let mut events = vec![SseEvent::new("message_start", json!({"type": "message_start", "message": start}))];
    let blocks = body["content"].as_array().cloned().unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        let (start_block, deltas) = match block["type"].as_str() {
            Some("text") => {
                let text = block["text"].as_str().unwrap_or_default();
                let deltas = fragments(text, fragment)
                    .into_iter()
                    .map(|t| json!({"type": "text_delta", "text": t}))
                    .collect();
                (json!({"type": "text", "text": ""}), deltas)
            }
            Some("tool_use") => {
                let input = &block["input"];
                let partial = if input.as_object().is_some_and(|o| o.is_empty()) || input.is_null() {
                    String::new()
                } else {
                    input.to_string()
                };
                let deltas = fragments(&partial, fragment)
                    .into_iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect();
                (json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}), deltas)
            }
            Some("thinking") => {
                let thinking = block["thinking"].as_str().unwrap_or_default();
                let mut deltas: Vec<Value> = fragments(thinking, fragment)
                    .into_iter()
                    .map(|t| json!({"type": "thinking_delta", "thinking": t}))
                    .collect();
                if let Some(sig) = block["signature"].as_str() {
                    deltas.push(json!({"type": "signature_delta", "signature": sig}));
                }
                (json!({"type": "thinking", "thinking": ""}), deltas)
            }
            _ => (block.clone(), Vec::new()),
        };
        events.push(SseEvent::new(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start_block}),
        ));
        for delta in deltas {
            events.push(SseEvent::new(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events
            .push(SseEvent::new("content_block_stop", json!({"type": "content_block_stop", "index": index})));
    }
    let output_tokens = body["usage"]["output_tokens"].as_u64().unwrap_or(1);
    events.push(SseEvent::new(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"]},
            "usage": {"output_tokens": output_tokens},
        }),
    ));
    events.push(SseEvent::new("message_stop", json!({"type": "message_stop"})));
    events
}

/// Adds what a client must ignore: a comment line first, and a `ping` event after every event.
pub fn with_noise(events: Vec<SseEvent>) -> Vec<SseEvent> {
    let mut out = vec![SseEvent::comment("mock-api keep-alive")];
    for event in events {
        let is_event = matches!(event, SseEvent::Event { .. });
        out.push(event);
        if is_event {
            out.push(SseEvent::ping());
        }
    }
    out
}

/// Cuts `s` every `n` characters (`n` 0: one piece); no pieces for an empty string.
fn fragments(s: &str, n: usize) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    if n == 0 {
        return vec![s.to_string()];
    }
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}
