//! The request body as sent, and the cache that keeps it cheap as the history grows.
//!
//! Source: Messages API ("Messages": the request body); the cache is ours (issue 7).

use bytes::Bytes;
use serde_json::value::RawValue;

use super::AnthropicClient;
use crate::error::ApiError;
use crate::messages::MessagesRequest;

impl AnthropicClient {
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
