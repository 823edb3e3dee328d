//! Server-sent events as the Messages API streams them (`stream: true`): `event: NAME\ndata: JSON\n\n`.

use serde_json::{Value, json};

/// One item of a `text/event-stream` body.
#[derive(Debug, Clone, PartialEq)]
pub enum SseEvent {
    /// A named event with one JSON `data:` line: `event: NAME\ndata: JSON\n\n`. `data` is serialized
    /// compactly, on one line, as the API does.
    Event {
        /// The event name, e.g. `message_start`, `content_block_delta`, `ping`, `error`.
        name: String,
        /// The JSON payload; by the API's convention its `type` field repeats the event name.
        data: Value,
    },
    /// A comment line, `: TEXT\n`, which clients must ignore.
    Comment(String),
    /// Text written verbatim (no line-ending conversion), for malformed or unusual framing such as several
    /// `data:` lines in one event.
    Raw(String),
}

impl SseEvent {
    /// A named event with a JSON payload.
    pub fn new(name: &str, data: Value) -> Self {
        SseEvent::Event { name: name.to_string(), data }
    }

    /// The keep-alive event the API may send anywhere: `event: ping`, `data: {"type": "ping"}`.
    pub fn ping() -> Self {
        Self::new("ping", json!({"type": "ping"}))
    }

    /// A comment line, `: TEXT`.
    pub fn comment(text: &str) -> Self {
        SseEvent::Comment(text.to_string())
    }

    /// Verbatim text.
    pub fn raw(text: &str) -> Self {
        SseEvent::Raw(text.to_string())
    }

    /// The wire text of this item, with `\r\n` line endings when `crlf` (except [`SseEvent::Raw`]).
    pub fn to_text(&self, crlf: bool) -> String {
        let nl = if crlf { "\r\n" } else { "\n" };
        match self {
            SseEvent::Event { name, data } => format!("event: {name}{nl}data: {data}{nl}{nl}"),
            SseEvent::Comment(text) => format!(": {text}{nl}"),
            SseEvent::Raw(text) => text.clone(),
        }
    }
}

/// The whole stream as bytes: every item's [`SseEvent::to_text`], concatenated.
pub fn serialize(events: &[SseEvent], crlf: bool) -> Vec<u8> {
    events.iter().map(|e| e.to_text(crlf)).collect::<String>().into_bytes()
}

/// How the serialized SSE body is cut into writes (each one an HTTP chunk, flushed at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunking {
    /// The whole stream in one write.
    Whole,
    /// One write per [`SseEvent`], as the real API roughly does.
    #[default]
    PerEvent,
    /// A write every `n` bytes of the serialized stream, regardless of line or UTF-8 character boundaries
    /// (`Bytes(1)` is byte by byte). `Bytes(0)` is treated as `Whole`.
    Bytes(usize),
}

/// Cuts the serialized stream into the pieces [`Chunking`] asks for. Never yields an empty piece.
pub(crate) fn pieces(events: &[SseEvent], crlf: bool, chunking: Chunking) -> Vec<Vec<u8>> {
    let pieces: Vec<Vec<u8>> = match chunking {
        Chunking::PerEvent => events.iter().map(|e| e.to_text(crlf).into_bytes()).collect(),
        Chunking::Bytes(n) if n > 0 => serialize(events, crlf).chunks(n).map(<[u8]>::to_vec).collect(),
        Chunking::Whole | Chunking::Bytes(_) => vec![serialize(events, crlf)],
    };
    pieces.into_iter().filter(|p| !p.is_empty()).collect()
}
