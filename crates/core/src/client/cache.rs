//! Prompt caching: where the client puts `cache_control` breakpoints, so that a session re-sent
//! every round is billed mostly at the cache-read price.
//!
//! Source: Messages API, "Prompt caching" (platform.claude.com/docs/en/build-with-claude/prompt-caching):
//! - A breakpoint is `"cache_control": {"type": "ephemeral"}` on a tool definition, a `system`
//!   text block or a content block of `messages`. The API caches the prompt prefix up to and
//!   including that block, the prompt being read in the order `tools`, `system`, `messages`. The
//!   marker itself is not part of the prefix: the docs' multi-turn example moves the breakpoint to
//!   the last message every turn, and the earlier turns are read from the cache.
//! - At most four breakpoints per request; a fifth is a 400 `invalid_request_error`.
//! - `thinking` and `redacted_thinking` blocks cannot carry one (a 400 names
//!   `messages.N.content.M.thinking.cache_control`), nor can an empty text block; a plain-string
//!   `content` has no block to carry it.
//! - Hits are looked up at each breakpoint and at the block boundaries up to about 20 blocks before
//!   it; a prefix shorter than the model's minimum (1,024 tokens for Sonnet 4.5, 4,096 for Opus 4.5
//!   and Haiku 4.5) is simply not cached, without an error.
//! - `usage` reports `cache_creation_input_tokens` (written, billed at 1.25 times the input price
//!   for the 5-minute cache), `cache_read_input_tokens` (read, 0.1 times) and `input_tokens` (the
//!   rest, after the last breakpoint); see [`crate::messages::Usage`].
//!
//! What we send, on every request (ours, within those rules):
//!
//! | breakpoint | on | why |
//! |---|---|---|
//! | tools | the last tool definition | the tools are the same all session; after a rewrite of the history (an s08 compaction, `/clear`) this prefix is still read |
//! | final | the last block that can carry one, of the last message that has such a block | the next request reads everything up to here |
//! | fallback | the same, in the messages before the last assistant message | where the previous request's final breakpoint was, so it is read even when a round added more than the 20 blocks the API looks back |
//!
//! The system prompt gets no breakpoint of its own, so `system` stays the string the course
//! sends; it lies inside every message breakpoint's prefix. A plain-string message (a prompt as
//! typed) carries none either, and the breakpoint goes to the message before it: so a side
//! request of one string message (an s08 summary, an s09 recall) is not written to the cache at
//! 1.25 times the price for nothing.
//!
//! The breakpoints are chosen from the request alone, never from what was sent before, so they
//! move with the history: after a compaction or a removed turn they sit on the new history, and
//! nothing stale is sent. A request whose messages already carry `cache_control` (a caller
//! placing its own) gets none from us, so the four are never exceeded; `normalize_messages` drops
//! any a history holds.
//!
//! The markers are spliced into the kept JSON at send time (see `wire`): each message is
//! serialised once, unmarked, and the bytes up to a breakpoint are the same whether a marker
//! follows them or not. So the prefix up to each breakpoint is byte-identical from one request to
//! the next, as long as the history before it is unchanged.

use crate::error::ApiError;
use crate::messages::{ContentBlock, Message, MessageContent, Role};

/// The field spliced into a block's JSON, just before its closing `}`, to make it a breakpoint:
/// `,"cache_control":{"type":"ephemeral"}` (the 5-minute cache, the API's default).
pub const MARKER: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// The most breakpoints the API accepts in one request.
pub const MAX_BREAKPOINTS: usize = 4;

/// Where one request's message breakpoints go: `(message, block)` indices into its `messages`,
/// `fallback` before `last` when both are set. The tools breakpoint goes on the last tool
/// whenever there are tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakpoints {
    /// The earlier message's breakpoint, where the previous request's `last` was.
    pub fallback: Option<(usize, usize)>,
    /// The breakpoint on the last message that can carry one.
    pub last: Option<(usize, usize)>,
}

impl Breakpoints {
    /// Both, in order: `fallback` then `last`.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> {
        self.fallback.into_iter().chain(self.last)
    }
}

/// Whether `block` can be a breakpoint: a non-empty `text`, a `tool_use`, a `tool_result`, or an
/// `image`, `document` or `search_result` block; not `thinking`, `redacted_thinking` or a type
/// this crate does not know (the API may reject the field there). A block that already carries
/// `cache_control` is not marked twice.
pub fn can_carry(block: &ContentBlock) -> bool {
    let own = |fields: Option<&serde_json::Map<String, serde_json::Value>>| {
        fields.is_some_and(|f| f.contains_key("cache_control"))
    };
    match block {
        ContentBlock::Text(t) => !t.text.is_empty() && !own(t.extra.fields()),
        ContentBlock::ToolUse(t) => !own(t.extra.fields()),
        ContentBlock::ToolResult(t) => !own(t.extra.fields()),
        ContentBlock::Other(value) => {
            matches!(
                value.get("type").and_then(serde_json::Value::as_str),
                Some("image" | "document" | "search_result")
            ) && value.get("cache_control").is_none()
        }
    }
}

/// The block of `message` a breakpoint would go on: its last block that [`can_carry`] one, or
/// `None` for a plain-string message or one with no such block. A message with fields beyond
/// `role` and `content` (never one `normalize_messages` made) gets none either, since the client
/// writes the marker into the JSON it serialised.
pub fn carrier(message: &Message) -> Option<usize> {
    match &message.content {
        MessageContent::Blocks(blocks) if message.extra.is_empty() => blocks.iter().rposition(can_carry),
        _ => None,
    }
}

/// Whether the request's messages already hold a `cache_control` of their own, at the top level
/// of a block (then the caller placed its breakpoints, and the client adds none).
pub fn has_own_breakpoints(messages: &[Message]) -> bool {
    messages.iter().any(|m| match &m.content {
        MessageContent::Blocks(blocks) => blocks.iter().any(|b| match b {
            ContentBlock::Text(t) => t.extra.fields().is_some_and(|f| f.contains_key("cache_control")),
            ContentBlock::ToolUse(t) => t.extra.fields().is_some_and(|f| f.contains_key("cache_control")),
            ContentBlock::ToolResult(t) => t.extra.fields().is_some_and(|f| f.contains_key("cache_control")),
            ContentBlock::Other(v) => v.get("cache_control").is_some(),
        }),
        MessageContent::Text(_) => false,
    })
}

/// The message breakpoints of a request with these `messages` (see the module table): `last` on
/// the last message that has a block to carry one; `fallback` on the last such message before
/// the last assistant message, unless that is `last` itself. Both are `None` for a request whose
/// messages hold breakpoints of their own. The search starts from the end and stops at the first
/// message found; the check for markers of the caller's own is a pass over the blocks that reads
/// one pointer each.
pub fn breakpoints(messages: &[Message]) -> Breakpoints {
    if has_own_breakpoints(messages) {
        return Breakpoints::default();
    }
    let at = |i: usize| carrier(&messages[i]).map(|block| (i, block));
    let last = (0..messages.len()).rev().find_map(at);
    let before = messages.iter().rposition(|m| m.role == Role::Assistant).unwrap_or(0);
    let fallback = (0..before).rev().find_map(at).filter(|&f| Some(f) != last);
    Breakpoints { fallback, last }
}

/// Whether `error` is an endpoint refusing the `cache_control` field: an HTTP 400 (or 422) whose
/// text names it, as `tools.3.cache_control: Extra inputs are not permitted`. The REPL then
/// names the switch that turns prompt caching off.
pub fn rejects_cache_control(error: &ApiError) -> bool {
    match error {
        ApiError::Api { status: 400 | 422, message, .. } => message.contains("cache_control"),
        ApiError::Http { status: 400 | 422, body, .. } => body.contains("cache_control"),
        ApiError::AfterOutput(inner) => rejects_cache_control(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: serde_json::Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_tool_round_marks_its_results_and_the_previous_requests_last_message() {
        let m = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hm"},
                {"type": "tool_use", "id": "b", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "y"},
                {"type": "text", "text": "<reminder>"}]},
        ]));
        let b = breakpoints(&m);
        assert_eq!(b.last, Some((4, 1)), "the reminder, the last block");
        assert_eq!(b.fallback, Some((2, 0)), "where the previous request's last breakpoint was");
        assert_eq!(b.iter().count(), 2);
    }

    #[test]
    fn a_plain_prompt_carries_none_and_the_breakpoint_goes_before_it() {
        let m = msgs(json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
            {"role": "user", "content": "second"},
        ]));
        assert_eq!(breakpoints(&m), Breakpoints { fallback: None, last: Some((1, 0)) });
        // A side request of one string message (a summary, a recall) gets no message breakpoint.
        assert_eq!(
            breakpoints(&msgs(json!([{"role": "user", "content": "summarise"}]))),
            Breakpoints::default()
        );
        // The next request of that turn: the fallback is the answer the last one ended with.
        let m = msgs(json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
        ]));
        assert_eq!(breakpoints(&m), Breakpoints { fallback: Some((1, 0)), last: Some((4, 0)) });
    }

    #[test]
    fn thinking_and_unknown_blocks_never_carry_one_and_own_markers_win() {
        let m = msgs(json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"},
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "future_block", "x": 1}]},
        ]));
        let b = breakpoints(&m);
        assert_eq!(b.last, Some((1, 0)), "the text before the thinking block");
        assert_eq!(b.fallback, Some((0, 0)));
        let own = msgs(json!([
            {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        ]));
        assert_eq!(breakpoints(&own), Breakpoints::default());
    }

    #[test]
    fn a_400_naming_cache_control_is_recognised() {
        let api = |status, message: &str| ApiError::Api {
            status,
            error_type: "invalid_request_error".into(),
            message: message.into(),
            request_id: None,
        };
        assert!(rejects_cache_control(&api(400, "tools.3.cache_control: Extra inputs are not permitted")));
        assert!(!rejects_cache_control(&api(400, "messages: text content blocks must be non-empty")));
        assert!(!rejects_cache_control(&api(500, "cache_control")));
        let http =
            ApiError::Http { status: 400, body: "unknown field cache_control".into(), request_id: None };
        assert!(rejects_cache_control(&http));
    }
}
