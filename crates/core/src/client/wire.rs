//! The request body as sent, and the cache that keeps it cheap as the history grows.
//!
//! Source: Messages API ("Messages": the request body); the cache is ours. Its contract with
//! the history, shared with the `Normalizer`, is stated once in [`crate::normalize`].
//!
//! Between two rewrites (compactions) the history only grows, so each request repeats the
//! previous one's messages and adds a few. The client keeps the JSON of the messages
//! it sent, in order and comma-separated, in frozen segments of about [`SEGMENT`] bytes plus one
//! open segment. A request whose first messages are the ones sent last time (compared by pointer,
//! since messages share their blocks) reuses their JSON; from the first difference on, messages
//! are serialised anew and the kept JSON is cut there. The body is then sent as a list of chunks:
//! the fields before `messages`, the frozen segments themselves (shared, never copied), a copy
//! of the open segment, and the fields after. So a round's cost is the new messages, not the
//! whole history, and the history's JSON exists once in memory instead of twice.
//!
//! Several agents that share one client (teammates, parallel calls) keep one cache between them:
//! it holds the conversation of the last request sent, so a request of another conversation is
//! serialised whole and replaces it. That is correct (the comparison is by content), only not
//! incremental across agents; serialising a history costs far less than its request.
//!
//! Prompt caching (see [`super::cache`]) adds nothing to the kept JSON. Each message is kept
//! unmarked, with the offset of the closing `}` of the block that would carry its breakpoint; at
//! send time the body's chunks are cut at the offsets of this request's breakpoints and
//! [`super::cache::MARKER`] is put between the pieces. So a marker costs no serialisation, and
//! the bytes before a breakpoint are the same whether it is marked or not.

use std::convert::Infallible;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use super::AnthropicClient;
use super::cache::{self, MARKER};
use crate::error::ApiError;
use crate::messages::{Message, MessageContent, MessagesRequest, ToolSpec};

/// Size at which the open segment of kept JSON is frozen into a shared chunk (64 KiB): large
/// enough that a 1 MB history is a few dozen chunks (one `writev`), small enough that copying
/// the open one each request costs little.
pub const SEGMENT: usize = 64 * 1024;

/// The JSON of the messages last sent, and of the tools. See the module documentation.
#[derive(Default)]
pub(super) struct WireCache {
    /// The messages last sent, in order.
    sent: Vec<Sent>,
    /// Frozen segments of kept JSON, in order.
    frozen: Vec<Bytes>,
    /// Bytes in `frozen`.
    frozen_len: usize,
    /// The segment still growing.
    open: Vec<u8>,
    /// The tool list last sent (compared by pointer), whether its last tool was marked as a
    /// breakpoint, and its JSON.
    tools: Option<(Arc<[ToolSpec]>, bool, Bytes)>,
}

/// One message of the kept JSON.
struct Sent {
    message: Message,
    /// The length of the kept JSON up to the message's end.
    end: usize,
    /// Where in the kept JSON a breakpoint marker would go: the offset of the closing `}` of the
    /// block [`cache::carrier`] picks; `None` when the message has no such block.
    mark: Option<usize>,
}

impl WireCache {
    /// Length of the kept JSON.
    fn len(&self) -> usize {
        self.frozen_len + self.open.len()
    }

    /// Keeps the JSON of the first `keep` messages only.
    fn truncate(&mut self, keep: usize) {
        if keep >= self.sent.len() {
            return;
        }
        let end = keep.checked_sub(1).map_or(0, |last| self.sent[last].end);
        self.sent.truncate(keep);
        if end >= self.frozen_len {
            self.open.truncate(end - self.frozen_len);
            return;
        }
        // The cut falls in a frozen segment: keep the part before it as the last frozen segment.
        let mut start = 0;
        let mut kept = Vec::new();
        for segment in self.frozen.drain(..) {
            if start >= end {
                break;
            }
            let take = segment.len().min(end - start);
            kept.push(segment.slice(..take));
            start += take;
        }
        self.frozen = kept;
        self.frozen_len = end;
        self.open.clear();
    }

    /// Appends `message`'s JSON.
    fn push(&mut self, message: &Message) -> Result<(), serde_json::Error> {
        if self.len() > 0 {
            self.open.push(b',');
        }
        let mark = write_message(&mut self.open, message)?.map(|at| self.frozen_len + at);
        let end = self.len();
        self.sent.push(Sent { message: message.clone(), end, mark });
        if self.open.len() >= SEGMENT {
            // Copied once into a chunk of its exact size; the open buffer is reused.
            self.frozen.push(Bytes::copy_from_slice(&self.open));
            self.frozen_len += self.open.len();
            self.open.clear();
        }
        Ok(())
    }

    /// The JSON of `tools`, serialised once per tool list; with the last tool a breakpoint when
    /// `mark`.
    fn tools_json(&mut self, tools: &Arc<[ToolSpec]>, mark: bool) -> Result<Bytes, serde_json::Error> {
        if let Some((kept, marked, json)) = &self.tools
            && Arc::ptr_eq(kept, tools)
            && *marked == mark
        {
            return Ok(json.clone());
        }
        let mut json = serde_json::to_vec(tools)?;
        // A tool definition is an object, so the list ends `}]`: the marker goes before the `}`.
        if mark && json.ends_with(b"}]") {
            let at = json.len() - 2;
            json.splice(at..at, MARKER.bytes());
        }
        let json = Bytes::from(json);
        self.tools = Some((Arc::clone(tools), mark, json.clone()));
        Ok(json)
    }
}

/// Writes `message`'s JSON to `out`, exactly as `serde_json::to_writer` would, and returns the
/// offset in `out` of the closing `}` of the block [`cache::carrier`] picks, where a breakpoint
/// marker would go (`None` when it picks none). Such a message has only `role` and `content`,
/// so its JSON is `{"role":…,"content":[BLOCK,…]}`, written block by block to note the offset.
fn write_message(out: &mut Vec<u8>, message: &Message) -> Result<Option<usize>, serde_json::Error> {
    let (Some(carrier), MessageContent::Blocks(blocks)) = (cache::carrier(message), &message.content) else {
        serde_json::to_writer(&mut *out, message)?;
        return Ok(None);
    };
    out.extend_from_slice(b"{\"role\":");
    serde_json::to_writer(&mut *out, &message.role)?;
    out.extend_from_slice(b",\"content\":[");
    let mut mark = None;
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, block)?;
        if i == carrier && out.last() == Some(&b'}') {
            mark = Some(out.len() - 1);
        }
    }
    out.extend_from_slice(b"]}");
    Ok(mark)
}

/// Appends `segments` (the kept JSON, in order) to `chunks`, with [`MARKER`] put in at each of
/// `marks` (ascending offsets into the kept JSON). The segments are cut, never copied.
fn splice(chunks: &mut Vec<Bytes>, segments: impl Iterator<Item = Bytes>, marks: &[usize]) {
    let mut marks = marks.iter().copied().peekable();
    let mut start = 0;
    for mut segment in segments {
        let end = start + segment.len();
        while let Some(&at) = marks.peek()
            && at < end
        {
            let before = segment.split_to(at.saturating_sub(start));
            if !before.is_empty() {
                chunks.push(before);
            }
            chunks.push(Bytes::from_static(MARKER.as_bytes()));
            start = at.max(start);
            marks.next();
        }
        if !segment.is_empty() {
            chunks.push(segment);
        }
        start = end;
    }
}

/// A request body as a list of chunks, sent one after the other (vectored writes), with its
/// length known up front so it goes out with `content-length`. Cheap to clone: the chunks are
/// shared, so a retry resends the same bytes.
#[derive(Debug, Clone)]
pub struct RequestBody {
    chunks: Vec<Bytes>,
    len: usize,
}

impl RequestBody {
    /// The body's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the body is empty (it never is for a request).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole body in one buffer (for tests and measurements; sending never copies it).
    pub fn to_bytes(&self) -> Bytes {
        let mut all = Vec::with_capacity(self.len);
        for chunk in &self.chunks {
            all.extend_from_slice(chunk);
        }
        Bytes::from(all)
    }

    /// The body for reqwest: the chunks in order, `content-length` set from their sum.
    pub(super) fn to_http(&self) -> reqwest::Body {
        reqwest::Body::wrap(self.to_chunks())
    }

    /// The body as an `http_body::Body`, for hyper's client.
    pub(super) fn to_chunks(&self) -> Chunks {
        Chunks { chunks: self.chunks.clone().into_iter(), left: self.len as u64 }
    }
}

/// [`RequestBody`] as an `http_body::Body` with an exact size.
pub(super) struct Chunks {
    chunks: std::vec::IntoIter<Bytes>,
    left: u64,
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        let next = self.chunks.next();
        if let Some(chunk) = &next {
            self.left -= chunk.len() as u64;
        }
        Poll::Ready(next.map(|chunk| Ok(http_body::Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.left)
    }
}

impl AnthropicClient {
    /// The JSON body for `request`, with `stream` set by this client, in one buffer. Sending uses
    /// [`AnthropicClient::request_body`], which shares the kept JSON instead of copying it.
    ///
    /// # Errors
    /// [`ApiError::Decode`] if serde cannot serialise the request (a non-string map key, say).
    pub fn body(&self, request: &MessagesRequest) -> Result<Bytes, ApiError> {
        Ok(self.request_body(request)?.to_bytes())
    }

    /// The JSON body for `request` as chunks: `{"model","max_tokens","system","messages":[…],
    /// "tools","stream"}` with the messages' JSON reused from the last request where the messages
    /// are the same (see the module documentation), and, when this client caches prompts
    /// ([`AnthropicClient::with_prompt_caching`]), `cache_control` on the breakpoints
    /// [`super::cache`] places.
    ///
    /// # Errors
    /// [`ApiError::Decode`] if serde cannot serialise the request (a non-string map key, say).
    pub fn request_body(&self, request: &MessagesRequest) -> Result<RequestBody, ApiError> {
        let fail = |e: serde_json::Error| ApiError::Decode(format!("cannot serialise the request: {e}"));
        let mut cache = self.wire_cache.lock().unwrap_or_else(|p| p.into_inner());
        let same = cache
            .sent
            .iter()
            .zip(request.messages.iter())
            .take_while(|(old, new)| old.message == **new)
            .count();
        cache.truncate(same);
        for message in &request.messages[same..] {
            if let Err(e) = cache.push(message) {
                // Keep the cache consistent with what it holds: nothing half-written.
                *cache = WireCache::default();
                return Err(fail(e));
            }
        }

        let mut head = Vec::with_capacity(128 + request.system.len());
        head.extend_from_slice(b"{\"model\":");
        serde_json::to_writer(&mut head, &request.model).map_err(fail)?;
        // Writing to a Vec cannot fail.
        let _ = write!(head, ",\"max_tokens\":{}", request.max_tokens);
        if !request.system.is_empty() {
            head.extend_from_slice(b",\"system\":");
            serde_json::to_writer(&mut head, &request.system).map_err(fail)?;
        }
        head.extend_from_slice(b",\"messages\":[");
        let mut tail = Vec::with_capacity(32);
        tail.push(b']');
        let tools = if request.tools.is_empty() {
            None
        } else {
            tail.extend_from_slice(b",\"tools\":");
            Some(cache.tools_json(&request.tools, self.cache).map_err(fail)?)
        };
        let mut end = Vec::with_capacity(16);
        if self.stream {
            end.extend_from_slice(b",\"stream\":true");
        }
        end.push(b'}');

        // This request's message breakpoints, as offsets into the kept JSON (see `cache`).
        let marks: Vec<usize> = if self.cache {
            let marks = cache::breakpoints(&request.messages);
            marks.iter().filter_map(|(i, _)| cache.sent.get(i).and_then(|sent| sent.mark)).collect()
        } else {
            Vec::new()
        };
        let mut chunks = Vec::with_capacity(cache.frozen.len() + 5 + 2 * marks.len());
        chunks.push(Bytes::from(head));
        let open = (!cache.open.is_empty()).then(|| Bytes::copy_from_slice(&cache.open));
        splice(&mut chunks, cache.frozen.iter().cloned().chain(open), &marks);
        chunks.push(Bytes::from(tail));
        chunks.extend(tools);
        chunks.push(Bytes::from(end));
        let len = chunks.iter().map(Bytes::len).sum();
        Ok(RequestBody { chunks, len })
    }

    /// Forgets the JSON kept from the last request, so the next [`AnthropicClient::body`] serialises
    /// every message (after a chapter rewrites its history, or to measure a first request).
    pub fn clear_wire_cache(&self) {
        *self.wire_cache.lock().unwrap_or_else(|p| p.into_inner()) = WireCache::default();
    }
}
