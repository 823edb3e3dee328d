//! Streaming responses (`"stream": true`): SSE framing, typed events, and the accumulator that
//! turns the events into one [`MessagesResponse`].
//!
//! Source: Messages API, "Streaming Messages", and the WHATWG event-stream format. Three layers,
//! each testable on its own:
//!
//! ```text
//!  bytes (any chunking) ──SseParser──▶ Frame {event, data} ──StreamEvent::from_frame──▶ StreamEvent
//!                                                                                        │
//!                         MessagesResponse ◀──finish── MessageAccumulator ◀──apply───────┘
//! ```
//!
//! - [`SseParser`] splits on bytes first and decodes whole lines, so a chunk cut inside a
//!   multi-byte character is harmless. Lines end in `\n`, `\r\n` or `\r`; `:` starts a comment;
//!   several `data:` lines join with `\n`; a blank line dispatches the event.
//! - [`StreamEvent`] is one Messages API event: `message_start`, `content_block_start`,
//!   `content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`, `ping`, `error`,
//!   or an event this crate does not know (kept, then ignored).
//! - [`MessageAccumulator`] builds the message: text from `text_delta`, a `tool_use` input from the
//!   `input_json_delta` fragments parsed once at `content_block_stop` (empty means `{}`), `thinking`
//!   and `signature` deltas into the raw block, `stop_reason` and cumulative `usage` from
//!   `message_delta`. The message is complete at `message_stop`, or when the body ends after a
//!   `message_delta` with a stop reason and no open block (both official SDKs finish there too,
//!   NOTES-BOUNDARIES §3); a body that ends earlier is an error, never a shorter message.
//! - Tolerated, since compatible endpoints send them: a `message_start` without `content`, the same
//!   `message_start` twice, a final event without its blank line ([`SseParser::finish`]). Still
//!   rejected: a second `message_start` for a different message (two answers spliced together).
//! - One streamed answer may accumulate at most [`MAX_ANSWER`] bytes of deltas.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::messages::{ContentBlock, MessagesResponse, StopDetails, StopReason};

/// The longest SSE line accepted, in bytes (16 MiB); a longer one is a [`ApiError::Decode`].
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The most one streamed answer may accumulate, in bytes of deltas (64 MiB, the JSON path's bound
/// on a body). Beyond it the answer is dropped with an [`ApiError::TooLarge`] that says so, instead
/// of growing the process without end.
pub const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// One dispatched SSE event: its `event:` name (`message` when absent) and its `data:` lines
/// joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` field, such as `content_block_delta`.
    pub event: String,
    /// The `data:` payload; for the Messages API, one JSON object.
    pub data: String,
}

/// Incremental SSE framing: feed it the body's chunks as they arrive, however they are cut.
///
/// `id:` and `retry:` fields are ignored: this client never reconnects, because reconnecting
/// would run the generation again.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The last line ended in `\r`: a `\n` right after it belongs to the same line ending.
    after_cr: bool,
    /// Whether the stream start (and a possible byte-order mark) has been handled.
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk of the body and returns the events it completes, in order.
    ///
    /// # Errors
    /// [`ApiError::Decode`] when a line is not UTF-8 or is longer than [`MAX_LINE`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, ApiError> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match memchr::memchr2(b'\r', b'\n', rest) {
                None => {
                    self.line.extend_from_slice(rest);
                    if self.line.len() > MAX_LINE {
                        return Err(ApiError::Decode(format!("an SSE line is longer than {MAX_LINE} bytes")));
                    }
                    break;
                }
                Some(i) => {
                    self.after_cr = rest[i] == b'\r';
                    let frame = if self.line.is_empty() {
                        // The whole line is in this chunk: read it in place.
                        self.line_done(&rest[..i])?
                    } else {
                        // Its start came in an earlier chunk. The buffer is lent out and given
                        // back, so its capacity serves the next cut line.
                        let mut line = std::mem::take(&mut self.line);
                        line.extend_from_slice(&rest[..i]);
                        let frame = self.line_done(&line);
                        line.clear();
                        self.line = line;
                        frame?
                    };
                    rest = &rest[i + 1..];
                    out.extend(frame);
                }
            }
        }
        Ok(out)
    }

    /// Whether bytes or fields of an unfinished event are buffered (the body ended mid-event).
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data || !self.event.is_empty()
    }

    /// The body ended: ends the current line and dispatches the event it completes, if any. Both
    /// official SDKs would drop such an event; a body that ends right after its last `data:`
    /// line (the Python SDK's own test fixture does) still carries a whole event, so it is kept.
    /// Whether the event is whole is for its JSON to tell ([`finish_stream`]).
    ///
    /// # Errors
    /// As [`SseParser::push`], for the unterminated last line.
    pub fn finish(&mut self) -> Result<Option<Frame>, ApiError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            if let Some(frame) = self.line_done(&line)? {
                return Ok(Some(frame));
            }
        }
        self.line_done(b"")
    }

    fn line_done(&mut self, raw: &[u8]) -> Result<Option<Frame>, ApiError> {
        let mut raw = raw;
        if !self.started {
            self.started = true;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        let line = std::str::from_utf8(raw)
            .map_err(|e| ApiError::Decode(format!("an SSE line is not valid UTF-8: {e}")))?;
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            if !std::mem::take(&mut self.has_data) {
                return Ok(None);
            }
            // Without the '\n' after the last data line; the buffer keeps its capacity.
            let data = self.data.strip_suffix('\n').unwrap_or(&self.data).to_owned();
            self.data.clear();
            let event = if event.is_empty() { "message".to_owned() } else { event };
            return Ok(Some(Frame { event, data }));
        }
        if line.starts_with(':') {
            return Ok(None);
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            _ => {} // id, retry, and unknown fields
        }
        Ok(None)
    }
}

/// Parses a whole body at once: the frames of [`SseParser::push`] on one chunk, then the final
/// one [`SseParser::finish`] completes.
///
/// # Errors
/// As [`SseParser::push`].
pub fn parse_all(body: &[u8]) -> Result<Vec<Frame>, ApiError> {
    let mut parser = SseParser::new();
    let mut frames = parser.push(body)?;
    frames.extend(parser.finish()?);
    Ok(frames)
}

/// The body of a stream ended: applies the last event if the body ended without its blank line,
/// then returns the message.
///
/// # Errors
/// [`ApiError::Incomplete`] when the body ended inside an event (its data is not whole JSON) or
/// before the message was complete; otherwise as [`MessageAccumulator::apply`] and
/// [`MessageAccumulator::finish`].
pub fn finish_stream(
    parser: &mut SseParser,
    mut message: MessageAccumulator,
) -> Result<MessagesResponse, ApiError> {
    let cut = || ApiError::Incomplete("the stream ended in the middle of an event".into());
    if !message.is_done()
        && let Some(frame) = parser.finish().map_err(|_| cut())?
    {
        message.apply(StreamEvent::from_frame(&frame).map_err(|_| cut())?)?;
    }
    message.finish()
}

/// A `content_block_delta` payload. Source: Messages API, "Streaming Messages — delta types".
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// `text_delta`: more text for a `text` block.
    Text(String),
    /// `input_json_delta`: a fragment of a `tool_use` input's JSON (`partial_json`).
    InputJson(String),
    /// `thinking_delta`: more text for a `thinking` block.
    Thinking(String),
    /// `signature_delta`: the `thinking` block's signature.
    Signature(String),
    /// `citations_delta`: one more entry of a text block's `citations`.
    Citation(Value),
    /// Any other delta, as sent: its string fields are appended to the block's same-named fields.
    Other(Value),
}

/// One Messages API stream event. Source: Messages API, "Streaming Messages — event types".
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// `message_start`: the message with empty `content`, and the usage so far.
    MessageStart(Box<MessagesResponse>),
    /// `content_block_start`: block `index` begins, with its initial JSON.
    ContentBlockStart {
        /// Position of the block in `content`.
        index: usize,
        /// The block as it starts (`{"type":"text","text":""}`, a `tool_use` with `input: {}`, …).
        block: Value,
    },
    /// `content_block_delta`: more of block `index`.
    ContentBlockDelta {
        /// Position of the block in `content`.
        index: usize,
        /// What to add.
        delta: Delta,
    },
    /// `content_block_stop`: block `index` is complete.
    ContentBlockStop {
        /// Position of the block in `content`.
        index: usize,
    },
    /// `message_delta`: top-level changes (`stop_reason`, `stop_sequence`, `stop_details`) and
    /// cumulative `usage`.
    MessageDelta {
        /// `delta.stop_reason`, when not null.
        stop_reason: Option<StopReason>,
        /// `delta.stop_sequence`, when not null.
        stop_sequence: Option<String>,
        /// `delta.stop_details` (a refusal's explanation), when an object.
        stop_details: Option<StopDetails>,
        /// The `usage` object (cumulative counts), or `null`.
        usage: Value,
    },
    /// `message_stop`: the stream is complete.
    MessageStop,
    /// `ping`: keep-alive, ignored.
    Ping,
    /// `error`: the API failed after answering HTTP 200 (`overloaded_error`, say).
    Error {
        /// `error.type`.
        error_type: String,
        /// `error.message`.
        message: String,
    },
    /// An event this crate does not know; ignored, so new API events do not break old clients.
    Unknown {
        /// The event name.
        event: String,
        /// Its data.
        data: Value,
    },
}

impl StreamEvent {
    /// Types one frame. The name comes from `event:`, or from the data's `type` when the frame has
    /// none. The data is read straight into the fields the event uses (the private `wire`
    /// module); only the rare events and deltas kept whole (`Unknown`, [`Delta::Other`]) read it
    /// into a [`Value`].
    ///
    /// # Errors
    /// [`ApiError::Decode`] when the data is not JSON or a known event lacks a required field.
    pub fn from_frame(frame: &Frame) -> Result<StreamEvent, ApiError> {
        if frame.event == "ping" {
            return Ok(StreamEvent::Ping);
        }
        let not_json = |e: serde_json::Error| {
            ApiError::Decode(format!(
                "the data of a {:?} event is not JSON ({e}): {}",
                frame.event,
                head(&frame.data)
            ))
        };
        let mut data = wire::EventData::read(&frame.data).map_err(not_json)?;
        let name = if frame.event == "message" {
            data.kind.take().unwrap_or(Cow::Borrowed("message"))
        } else {
            Cow::Borrowed(frame.event.as_str())
        };
        let bad =
            |what: &str| ApiError::Decode(format!("a {name} event without {what}: {}", head(&frame.data)));
        let index = |index: Option<u64>| index.map(|i| i as usize).ok_or_else(|| bad("an index"));
        // The data as a tree, for the rare events kept whole; it parsed above, so it parses again.
        let whole = || serde_json::from_str::<Value>(&frame.data).map_err(not_json);
        Ok(match name.as_ref() {
            "message_start" => {
                if !data.message {
                    return Err(bad("a message"));
                }
                let message = match wire::message_start(&frame.data) {
                    Some(message) => message,
                    None => {
                        // The rare shapes the typed reading leaves to `Value` (see `message_start`).
                        let mut message = whole()?
                            .get_mut("message")
                            .map(Value::take)
                            .filter(Value::is_object)
                            .ok_or_else(|| bad("a message"))?;
                        // Some endpoints leave `content` out of message_start; it is empty by definition.
                        if let Value::Object(map) = &mut message
                            && map.get("content").is_none_or(Value::is_null)
                        {
                            map.insert("content".to_owned(), Value::Array(Vec::new()));
                        }
                        serde_json::from_value(message)
                            .map_err(|e| ApiError::Decode(format!("message_start: {e}")))?
                    }
                };
                StreamEvent::MessageStart(Box::new(message))
            }
            "content_block_start" => {
                let block =
                    data.content_block.filter(Value::is_object).ok_or_else(|| bad("a content_block"))?;
                StreamEvent::ContentBlockStart { index: index(data.index)?, block }
            }
            "content_block_delta" => {
                let delta = data.delta.ok_or_else(|| bad("a delta"))?;
                let string =
                    |field: Option<Cow<str>>, name: &str| field.map(Cow::into_owned).ok_or_else(|| bad(name));
                let delta = match delta.kind.as_deref() {
                    Some("text_delta") => Delta::Text(string(delta.text, "text")?),
                    Some("input_json_delta") => Delta::InputJson(string(delta.partial_json, "partial_json")?),
                    Some("thinking_delta") => Delta::Thinking(string(delta.thinking, "thinking")?),
                    Some("signature_delta") => Delta::Signature(string(delta.signature, "signature")?),
                    Some("citations_delta") => {
                        Delta::Citation(delta.citation.ok_or_else(|| bad("citation"))?)
                    }
                    _ => Delta::Other(
                        whole()?.get_mut("delta").map(Value::take).ok_or_else(|| bad("a delta"))?,
                    ),
                };
                StreamEvent::ContentBlockDelta { index: index(data.index)?, delta }
            }
            "content_block_stop" => StreamEvent::ContentBlockStop { index: index(data.index)? },
            "message_delta" => {
                let delta = data.delta.unwrap_or_default();
                let stop_reason = match delta.stop_reason {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(
                        serde_json::from_value(v)
                            .map_err(|e| ApiError::Decode(format!("message_delta stop_reason: {e}")))?,
                    ),
                };
                let stop_details =
                    delta.stop_details.filter(Value::is_object).and_then(|d| serde_json::from_value(d).ok());
                StreamEvent::MessageDelta {
                    stop_reason,
                    stop_sequence: delta.stop_sequence.map(Cow::into_owned),
                    stop_details,
                    usage: data.usage.unwrap_or(Value::Null),
                }
            }
            "message_stop" => StreamEvent::MessageStop,
            "error" => {
                let error = data.error.unwrap_or_default();
                StreamEvent::Error {
                    error_type: error.kind.map_or_else(|| "error".to_owned(), Cow::into_owned),
                    message: error.message.map_or_else(|| head(&frame.data), Cow::into_owned),
                }
            }
            _ => StreamEvent::Unknown { event: name.into_owned(), data: whole()? },
        })
    }
}

/// One content block being assembled.
#[derive(Debug)]
struct Building {
    block: ContentBlock,
    /// Concatenated `partial_json` fragments.
    json: String,
    has_json: bool,
    open: bool,
    /// The fragments did not parse at `content_block_stop`: the parse error.
    bad_json: Option<String>,
}

/// Builds one [`MessagesResponse`] from [`StreamEvent`]s, checking their order.
#[derive(Debug)]
pub struct MessageAccumulator {
    message: Option<MessagesResponse>,
    blocks: Vec<Building>,
    stopped: bool,
    /// Bytes of deltas so far, and the most allowed.
    size: usize,
    limit: usize,
}

impl Default for MessageAccumulator {
    fn default() -> Self {
        Self::with_limit(MAX_ANSWER)
    }
}

impl MessageAccumulator {
    /// An empty accumulator, waiting for `message_start`, capped at [`MAX_ANSWER`].
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty accumulator that accepts at most `limit` bytes of deltas.
    pub fn with_limit(limit: usize) -> Self {
        Self { message: None, blocks: Vec::new(), stopped: false, size: 0, limit }
    }

    /// Whether `message_stop` was seen: the message is complete and later events are ignored.
    pub fn is_done(&self) -> bool {
        self.stopped
    }

    /// Applies one event.
    ///
    /// # Errors
    /// - [`ApiError::Stream`] (with no request id) for an `error` event;
    /// - [`ApiError::Decode`] for events out of order: a block event before `message_start`, a
    ///   delta for a block that is not open, an index that skips ahead, a `text_delta` for a
    ///   non-text block, a `message_start` for a second message;
    /// - [`ApiError::TooLarge`] when the deltas pass the accumulator's limit.
    pub fn apply(&mut self, event: StreamEvent) -> Result<(), ApiError> {
        if self.stopped {
            return Ok(());
        }
        let out_of_order = |what: String| ApiError::Decode(format!("stream events out of order: {what}"));
        match event {
            StreamEvent::Ping | StreamEvent::Unknown { .. } => {}
            StreamEvent::Error { error_type, message } => {
                return Err(ApiError::Stream { error_type, message, request_id: None });
            }
            StreamEvent::MessageStart(message) => {
                if let Some(first) = &self.message {
                    // Some endpoints repeat message_start; a different id is another message.
                    if first.id == message.id {
                        return Ok(());
                    }
                    return Err(out_of_order(format!(
                        "a message_start for message {:?} inside message {:?}: two answers spliced into one stream",
                        message.id, first.id
                    )));
                }
                let mut message = *message;
                message.content.clear();
                self.message = Some(message);
            }
            StreamEvent::ContentBlockStart { index, block } => {
                self.started("content_block_start")?;
                if index != self.blocks.len() {
                    return Err(out_of_order(format!(
                        "content_block_start index {index} where {} was expected",
                        self.blocks.len()
                    )));
                }
                let block = ContentBlock::from_value(block)
                    .map_err(|e| ApiError::Decode(format!("content_block_start: {e}")))?;
                self.blocks.push(Building {
                    block,
                    json: String::new(),
                    has_json: false,
                    open: true,
                    bad_json: None,
                });
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                self.started("content_block_delta")?;
                self.size += delta_size(&delta);
                if self.size > self.limit {
                    return Err(ApiError::TooLarge(self.limit));
                }
                let b = self.open_block(index, "content_block_delta")?;
                apply_delta(b, delta).map_err(|kind| {
                    ApiError::Decode(format!("a delta of block {index} does not fit its type {kind:?}"))
                })?;
            }
            StreamEvent::ContentBlockStop { index } => {
                self.started("content_block_stop")?;
                let b = self.open_block(index, "content_block_stop")?;
                b.open = false;
                if b.has_json {
                    let text = if b.json.trim().is_empty() { "{}" } else { b.json.as_str() };
                    let input = match serde_json::from_str::<Value>(text) {
                        Ok(v) => v,
                        Err(e) => {
                            b.bad_json = Some(format!("{e}; the input so far is {}", head(&b.json)));
                            Value::Object(Map::new())
                        }
                    };
                    match &mut b.block {
                        ContentBlock::ToolUse(t) => t.input = input,
                        ContentBlock::Other(Value::Object(map)) => {
                            map.insert("input".to_owned(), input);
                        }
                        _ => {}
                    }
                }
            }
            StreamEvent::MessageDelta { stop_reason, stop_sequence, stop_details, usage } => {
                let message = self.started("message_delta")?;
                if stop_reason.is_some() {
                    message.stop_reason = stop_reason;
                }
                if stop_sequence.is_some() {
                    message.stop_sequence = stop_sequence;
                }
                if stop_details.is_some() {
                    message.stop_details = stop_details;
                }
                if let Value::Object(counts) = usage {
                    // Counts are cumulative: a later value replaces the earlier one.
                    for (key, value) in counts {
                        match (key.as_str(), value.as_u64()) {
                            ("input_tokens", Some(n)) => message.usage.input_tokens = n,
                            ("output_tokens", Some(n)) => message.usage.output_tokens = n,
                            ("cache_creation_input_tokens", Some(n)) => {
                                message.usage.cache_creation_input_tokens = n;
                            }
                            ("cache_read_input_tokens", Some(n)) => message.usage.cache_read_input_tokens = n,
                            // A `null` count says nothing new; kept out of `extra`, where it would
                            // repeat a field of `Usage`.
                            ("cache_creation_input_tokens" | "cache_read_input_tokens", None) => {}
                            _ => {
                                message.usage.extra.insert(key, value);
                            }
                        }
                    }
                }
            }
            StreamEvent::MessageStop => {
                self.started("message_stop")?;
                if let Some(open) = self.blocks.iter().position(|b| b.open) {
                    return Err(out_of_order(format!("message_stop while block {open} is still open")));
                }
                self.stopped = true;
            }
        }
        Ok(())
    }

    /// The complete message: `message_stop` came, or a `message_delta` set the stop reason and
    /// every block is closed (the official SDKs need no `message_stop` either).
    ///
    /// # Errors
    /// - [`ApiError::Incomplete`] when the message is not complete (the stream was cut);
    /// - [`ApiError::Decode`] when a `tool_use` input is not valid JSON, unless `stop_reason` is
    ///   `max_tokens`: then the cut-off call keeps `input: {}` and is never run (the loop checks).
    pub fn finish(self) -> Result<MessagesResponse, ApiError> {
        let Some(mut message) = self.message else {
            return Err(ApiError::Incomplete("the stream ended before message_start".into()));
        };
        let ended = message.stop_reason.is_some() && !self.blocks.iter().any(|b| b.open);
        if !self.stopped && !ended {
            let blocks = match self.blocks.len() {
                1 => "1 content block".to_owned(),
                n => format!("{n} content blocks"),
            };
            return Err(ApiError::Incomplete(format!(
                "the stream ended before message_stop, after {blocks}"
            )));
        }
        let truncated = message.stop_reason == Some(StopReason::MaxTokens);
        for (index, b) in self.blocks.into_iter().enumerate() {
            if let (Some(e), false) = (&b.bad_json, truncated) {
                return Err(ApiError::Decode(format!(
                    "the input of content block {index} is not valid JSON: {e}"
                )));
            }
            message.content.push(b.block);
        }
        Ok(message)
    }

    fn started(&mut self, what: &str) -> Result<&mut MessagesResponse, ApiError> {
        self.message.as_mut().ok_or_else(|| {
            ApiError::Decode(format!("stream events out of order: {what} before message_start"))
        })
    }

    fn open_block(&mut self, index: usize, what: &str) -> Result<&mut Building, ApiError> {
        match self.blocks.get_mut(index) {
            Some(b) if b.open => Ok(b),
            _ => Err(ApiError::Decode(format!(
                "stream events out of order: {what} for block {index}, which is not open"
            ))),
        }
    }
}

/// How many bytes `delta` adds to the answer.
fn delta_size(delta: &Delta) -> usize {
    match delta {
        Delta::Text(s) | Delta::InputJson(s) | Delta::Thinking(s) | Delta::Signature(s) => s.len(),
        Delta::Citation(v) | Delta::Other(v) => v.to_string().len(),
    }
}

/// Adds `delta` to the block; `Err(kind)` when it does not fit the block's type.
fn apply_delta(b: &mut Building, delta: Delta) -> Result<(), String> {
    let kind = b.block.kind().to_owned();
    match (delta, &mut b.block) {
        (Delta::InputJson(part), _) => {
            b.json.push_str(&part);
            b.has_json = true;
        }
        (Delta::Text(t), ContentBlock::Text(block)) => block.text.push_str(&t),
        (Delta::Citation(c), ContentBlock::Text(block)) => push_citation(block.extra.fields_mut(), c),
        (Delta::Citation(c), ContentBlock::Other(Value::Object(map))) => push_citation(map, c),
        (Delta::Text(t), ContentBlock::Other(Value::Object(map))) => append(map, "text", &t),
        (Delta::Thinking(t), ContentBlock::Other(Value::Object(map))) => append(map, "thinking", &t),
        (Delta::Signature(s), ContentBlock::Other(Value::Object(map))) => append(map, "signature", &s),
        (Delta::Other(Value::Object(fields)), ContentBlock::Other(Value::Object(map))) => {
            for (key, value) in fields {
                if let (false, Value::String(s)) = (key == "type", value) {
                    append(map, &key, &s);
                }
            }
        }
        // An unknown delta for a typed block: nothing this crate models can take it.
        (Delta::Other(_), _) => {}
        _ => return Err(kind),
    }
    Ok(())
}

fn append(map: &mut Map<String, Value>, field: &str, more: &str) {
    match map.get_mut(field) {
        Some(Value::String(s)) => s.push_str(more),
        _ => {
            map.insert(field.to_owned(), Value::String(more.to_owned()));
        }
    }
}

fn push_citation(map: &mut Map<String, Value>, citation: Value) {
    match map.get_mut("citations") {
        Some(Value::Array(list)) => list.push(citation),
        _ => {
            map.insert("citations".to_owned(), Value::Array(vec![citation]));
        }
    }
}

fn head(text: &str) -> String {
    let mut s: String = text.chars().take(120).collect();
    if text.chars().count() > 120 {
        s.push('…');
    }
    s
}

mod wire;

#[cfg(test)]
mod tests;
