//! `normalize_messages`: the one place that makes a request sendable, whatever the history holds.
//!
//! Source: course §1, and the Messages API's request rules (NOTES-BOUNDARIES §1). Repairs are
//! never made to the stored history (course issue #37): the loop sends
//! `normalize_messages(&history)` instead, so an odd answer from an endpoint can never poison
//! every later request. The history itself changes only where a mechanism means it to: an
//! extension's compaction (course s08), a refused turn leaving it, `/clear`.
//!
//! ## What was sent before: the send path's two caches
//!
//! Each request repeats the last one and adds a few messages, so two caches keep the work of the
//! last request: [`Normalizer`] (this module) keeps the normalised copy of the history's start,
//! and the client's wire cache (`client::wire`) keeps the JSON of the normalised messages it
//! sent. Their contract, the same for both and stated only here:
//! - each compares its new input with what it kept, message by message, with `Message`'s
//!   equality (the same `Arc` of blocks is equal at once; otherwise block by block), and reuses
//!   its work only up to the first difference;
//! - so a history rewritten anywhere (a compaction, a removed turn) is recomputed from the first
//!   changed message on, and never served from a stale copy; a property test with random
//!   rewrites checks that every request equals a fresh `normalize_messages` and serialisation;
//! - blocks are shared (`Arc<[ContentBlock]>`) and changed only through `Arc::make_mut`, which
//!   copies a list a cache still holds, so no cache sees its kept blocks change under it.
//!
//! The course's three steps, extended so that every rule below holds for the copy:
//! 1. keep only `role` and `content`, and drop block fields whose names start with `_`, and
//!    `cache_control` (the client places the breakpoints as it sends, see `client::cache`);
//! 2. give every `tool_use` without a matching `tool_result` in the next message a `(cancelled)`
//!    result, inserted right after its assistant message (strict endpoints reject orphans; an
//!    interrupted turn leaves them);
//! 3. merge consecutive messages of the same role, turning string content into a `text` block.
//!
//! The rules, each with the start of the 400 `invalid_request_error` it prevents:
//!
//! | rule | repair | the API's text |
//! |---|---|---|
//! | no text block is empty or whitespace-only | the block is dropped | `text content blocks must be non-empty`, `text content blocks must contain non-whitespace text` |
//! | every message has content, except an optional final assistant message | a message left empty is dropped, and its neighbours, now of the same role, merge (step 3) | `all messages must have non-empty content except for the optional final assistant message` |
//! | a final assistant message does not end in whitespace | its last text block is trimmed | `final assistant content cannot end with trailing whitespace` |
//! | every `tool_use` id matches `^[a-zA-Z0-9_-]+$` and is unique in the request | other characters become `_`, an empty id becomes `toolu_mI_bJ`, a repeated one gets `_2`, `_3`…; the `tool_result`s that answer it are renamed to match, in order | `` `tool_use` ids must be unique `` |
//! | every `tool_use` has a name and an object `input` | an empty name becomes `unnamed_tool`, any other `input` becomes `{}` | `tool_use.input: Input should be a valid dictionary` |
//! | every `tool_use` is answered in the very next message, a user message | a `(cancelled)` result is added (step 2); a user message is inserted when none follows | `` `tool_use` ids were found without `tool_result` blocks immediately after `` |
//! | `tool_result` blocks come before any other block of their message | they are moved first, other blocks keep their order | the docs show text-then-`tool_result` as a 400 |
//! | at most four `cache_control` breakpoints, none on a `thinking` block | a history's own `cache_control` is dropped from its blocks (step 1); the client adds at most three, where the API takes them | `A maximum of 4 blocks with cache_control may be provided`, `thinking.cache_control: Extra inputs are not permitted` |
//! | every `tool_result` answers a `tool_use` of the message just before it, once | any other becomes a `text` block that says whose result it is, so nothing is lost | `` unexpected `tool_use_id` found in `tool_result` blocks `` |
//!
//! Never repaired away: a `tool_use` (it may have run; it keeps its result), and `thinking` or
//! any block of a type this crate does not model (the API wants them back unchanged).
//!
//! A history with nothing to repair costs one pass and no copy of its blocks: messages share
//! their blocks with the history (`Arc`), and only a message that changes is rebuilt.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::messages::{ContentBlock, Extra, Message, MessageContent, Role, ToolResultBlock, ToolUseBlock};

/// The `tool_result` content given to a `tool_use` that never got one.
pub const CANCELLED: &str = "(cancelled)";

/// The name sent for a `tool_use` that came without one.
pub const UNNAMED: &str = "unnamed_tool";

/// Returns the repaired copy of `history` to send; `history` itself is left untouched.
pub fn normalize_messages(history: &[Message]) -> Vec<Message> {
    normalize_after(history, 0, &HashSet::new()).0
}

/// `normalize_messages` for the messages after a part already sent: `history` is what follows
/// it, `offset` the number of messages that part holds once normalised, and `taken` the `tool_use`
/// ids it sent. Also returns, for each merged message, the index in `history` of its last source
/// message (an inserted message has none, so the list may be one shorter than the output).
fn normalize_after(
    history: &[Message],
    offset: usize,
    taken: &HashSet<Box<str>>,
) -> (Vec<Message>, Vec<usize>) {
    // Steps 1 and 3, with the empty text blocks and empty messages dropped on the way.
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    let mut sources: Vec<usize> = Vec::with_capacity(history.len());
    for (i, message) in history.iter().enumerate() {
        if let Some(content) = clean(&message.content) {
            if out.last().is_some_and(|last| last.role == message.role) {
                sources.pop();
            }
            push_merged(&mut out, Message { role: message.role, content, extra: Extra::new() });
            sources.push(i);
        }
    }
    // Step 2, with the tool_use ids, names and inputs made valid first.
    pair_tool_calls(&mut out, offset, taken);
    trim_final_assistant(&mut out);
    (out, sources)
}

/// `normalize_messages` made incremental, for a loop that sends a growing history again and again
/// (a full pass over 2,000 messages with a set of every id was 40% of a round's work).
///
/// It keeps the normalised copy of a prefix of the history that can no longer change: it ends
/// with a user message that has a message after it, so nothing appended later can merge into
/// it, answer its calls or trim it. Each call checks that this prefix is still the start of the
/// history (messages share their blocks, so this compares pointers), normalises only what follows
/// with the prefix's `tool_use` ids taken, and moves the prefix forward. A history rewritten
/// inside the prefix (an extension's compaction, a removed turn, `/clear`) is normalised from the
/// start again. The result is always equal to `normalize_messages(history)`; a property test
/// checks it on random histories.
#[derive(Debug, Default)]
pub struct Normalizer {
    /// The history messages the kept prefix was made from, sharing their blocks.
    source: Vec<Message>,
    /// The last result: the kept prefix's normalised copy, then what followed it last time. The
    /// next call reuses this list when the request that held it is gone, so a round appends its
    /// new messages instead of copying the whole history into a new list.
    sent: Arc<Vec<Message>>,
    /// How many messages at the start of `sent` are the kept prefix.
    kept: usize,
    /// The `tool_use` ids in the kept prefix.
    taken: HashSet<Box<str>>,
}

impl Normalizer {
    /// A normalizer with nothing kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns `normalize_messages(history)`, reusing the work of earlier calls.
    pub fn normalize(&mut self, history: &[Message]) -> Arc<Vec<Message>> {
        let same = |(a, b): (&Message, &Message)| a.role == b.role && a.content == b.content;
        if history.len() < self.source.len() || !self.source.iter().zip(history).all(same) {
            *self = Self::default();
        }
        let from = self.source.len();
        let (tail, sources) = normalize_after(&history[from..], self.kept, &self.taken);
        if from > 0 && tail.first().is_some_and(|m| m.role == Role::User) {
            // The kept prefix ends with a user message, and what follows now starts with one
            // (a turn was removed and a new prompt added): they merge, so start again.
            *self = Self::default();
            return self.normalize(history);
        }
        // Move the kept prefix up to the last user message that has a merged message after it.
        let last_user = (0..sources.len().saturating_sub(1)).rev().find(|&j| tail[j].role == Role::User);
        if let Some(j) = last_user {
            self.source.extend_from_slice(&history[from..=from + sources[j]]);
            for message in &tail[..=j] {
                if let MessageContent::Blocks(blocks) = &message.content {
                    for block in blocks.iter() {
                        if let ContentBlock::ToolUse(call) = block {
                            self.taken.insert(call.id.as_str().into());
                        }
                    }
                }
            }
        }
        // Copies the list only when the last request still holds it.
        let sent = Arc::make_mut(&mut self.sent);
        sent.truncate(self.kept);
        sent.extend(tail);
        self.kept += last_user.map_or(0, |j| j + 1);
        Arc::clone(&self.sent)
    }
}

/// One `tool_use` of an assistant message: its id in the history, the id sent instead when it
/// had to change (`None` in the common case, which saves a copy), and whether the next message
/// answers it.
struct Call<'a> {
    original: &'a str,
    renamed: Option<String>,
    answered: bool,
}

impl Call<'_> {
    /// The id sent for this call.
    fn id(&self) -> &str {
        self.renamed.as_deref().unwrap_or(self.original)
    }
}

/// Makes every `tool_use` valid and unique, and answers each in the next message (step 2).
/// `offset` and `taken` describe the part sent before `out` (see [`normalize_after`]).
fn pair_tool_calls(out: &mut Vec<Message>, offset: usize, taken: &HashSet<Box<str>>) {
    // The assistant messages' blocks as they are before any repair, in order: the ids in `seen`
    // and `calls` borrow from them, so an id that needs no repair is never copied. (Only an
    // assistant message's own repair changes its blocks, and inserted messages are user ones.)
    let before: Vec<Arc<[ContentBlock]>> = out
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .filter_map(|m| match &m.content {
            MessageContent::Blocks(blocks) => Some(Arc::clone(blocks)),
            MessageContent::Text(_) => None,
        })
        .collect();
    let mut before = before.iter();
    // Sized for a call per assistant message, so the set is not rehashed as it grows.
    let mut seen = Seen { taken, new: HashSet::with_capacity(out.len() / 2 + 1) };
    let mut calls: Vec<Call> = Vec::new();
    let mut i = 0;
    while i < out.len() {
        if out[i].role == Role::Assistant {
            calls.clear();
            if matches!(out[i].content, MessageContent::Blocks(_))
                && let Some(blocks) = before.next()
            {
                repair_tool_uses(&mut out[i], blocks, &mut seen, offset + i, &mut calls);
            }
            if !calls.is_empty() && out.get(i + 1).is_none_or(|m| m.role != Role::User) {
                out.insert(i + 1, Message::user_blocks(Vec::new()));
            }
        } else {
            answer(&mut out[i], &mut calls);
            calls.clear();
        }
        i += 1;
    }
}

/// Fixes the ids, names and inputs of the `tool_use` blocks of `message` (at `index` in the
/// request; `blocks` are its blocks before any repair) and puts its calls, in order, in `calls`.
fn repair_tool_uses<'a>(
    message: &mut Message,
    blocks: &'a [ContentBlock],
    seen: &mut Seen<'_, 'a>,
    index: usize,
    calls: &mut Vec<Call<'a>>,
) {
    let mut rebuilt: Option<Vec<ContentBlock>> = None;
    for (j, block) in blocks.iter().enumerate() {
        let ContentBlock::ToolUse(call) = block else { continue };
        let renamed = unique_id(&call.id, seen, index, j);
        if renamed.is_some() || call.name.is_empty() || !call.input.is_object() {
            let fixed = ToolUseBlock {
                id: renamed.clone().unwrap_or_else(|| call.id.clone()),
                name: if call.name.is_empty() { UNNAMED.to_owned() } else { call.name.clone() },
                input: if call.input.is_object() { call.input.clone() } else { Value::Object(Map::new()) },
                extra: call.extra.clone(),
            };
            rebuilt.get_or_insert_with(|| blocks.to_vec())[j] = ContentBlock::ToolUse(fixed);
        }
        calls.push(Call { original: &call.id, renamed, answered: false });
    }
    if let Some(blocks) = rebuilt {
        message.content = MessageContent::Blocks(blocks.into());
    }
}

/// The `tool_use` ids of a request so far: those of a part sent before (`taken`) and the new
/// ones, which borrow from the blocks when they need no repair.
struct Seen<'t, 'a> {
    taken: &'t HashSet<Box<str>>,
    new: HashSet<Cow<'a, str>>,
}

impl<'a> Seen<'_, 'a> {
    fn contains(&self, id: &str) -> bool {
        self.taken.contains(id) || self.new.contains(id)
    }

    /// Adds `id`; `false` when it was there already.
    fn insert(&mut self, id: Cow<'a, str>) -> bool {
        !self.taken.contains(id.as_ref()) && self.new.insert(id)
    }
}

/// The id to send instead of `raw`, or `None` to send `raw` itself; either way unique among
/// `seen`, which then holds it. Characters outside `[a-zA-Z0-9_-]` become `_`, an empty id is
/// named after its place, a repeat gets a suffix.
fn unique_id<'a>(raw: &'a str, seen: &mut Seen<'_, 'a>, index: usize, block: usize) -> Option<String> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    // The common case: a valid id not seen before is sent as it is, and kept without a copy.
    if !raw.is_empty() && raw.chars().all(valid) && seen.insert(Cow::Borrowed(raw)) {
        return None;
    }
    let base: String = if raw.is_empty() {
        format!("toolu_m{index}_b{block}")
    } else {
        raw.chars().map(|c| if valid(c) { c } else { '_' }).collect()
    };
    let mut id = base.clone();
    let mut n = 2;
    while seen.contains(id.as_str()) {
        id = format!("{base}_{n}");
        n += 1;
    }
    seen.insert(Cow::Owned(id.clone()));
    Some(id)
}

/// Makes user `message` answer exactly `calls`: each `tool_result` claims the first unanswered
/// call with its id (so repeated ids pair up in order) and takes the id sent for it; calls left
/// unanswered get `(cancelled)`; results that answer nothing become text; results go first.
fn answer(message: &mut Message, calls: &mut [Call]) {
    let blocks: &[ContentBlock] = match &message.content {
        MessageContent::Blocks(blocks) => blocks,
        MessageContent::Text(_) => &[],
    };
    if answers_exactly(blocks, calls) {
        return;
    }
    for call in calls.iter_mut() {
        call.answered = false;
    }
    let mut claims: Vec<Option<usize>> = Vec::with_capacity(blocks.len());
    let mut unchanged = true;
    let mut after_other = false;
    for block in blocks {
        let claim = match block {
            ContentBlock::ToolResult(r) => {
                let claim = calls.iter().position(|c| !c.answered && c.original == r.tool_use_id);
                match claim {
                    Some(k) => {
                        calls[k].answered = true;
                        unchanged &= calls[k].id() == r.tool_use_id && !after_other;
                    }
                    None => unchanged = false,
                }
                claim
            }
            _ => {
                after_other = true;
                None
            }
        };
        claims.push(claim);
    }
    if unchanged && calls.iter().all(|c| c.answered) {
        return;
    }
    let mut results: Vec<ContentBlock> = calls
        .iter()
        .filter(|c| !c.answered)
        .map(|c| ContentBlock::tool_result(c.id(), CANCELLED, false))
        .collect();
    let mut rest = Vec::new();
    for (block, claim) in blocks.iter().zip(claims) {
        match (block, claim) {
            (ContentBlock::ToolResult(r), Some(k)) => {
                results.push(ContentBlock::ToolResult(ToolResultBlock {
                    tool_use_id: calls[k].id().to_owned(),
                    ..r.clone()
                }))
            }
            (ContentBlock::ToolResult(r), None) => rest.push(orphan_as_text(r)),
            (other, _) => rest.push(other.clone()),
        }
    }
    if let MessageContent::Text(text) = &message.content {
        rest.push(ContentBlock::text(text.clone()));
    }
    results.extend(rest);
    message.content = MessageContent::Blocks(results.into());
}

/// Whether `blocks` need no repair for `calls`: the `tool_result`s lead, each claims a call whose
/// id is sent unchanged, and every call is claimed. The common case, checked without allocating;
/// it marks the calls it claims, so [`answer`] clears the marks before repairing.
fn answers_exactly(blocks: &[ContentBlock], calls: &mut [Call]) -> bool {
    let mut after_other = false;
    for block in blocks {
        match block {
            ContentBlock::ToolResult(r) if !after_other => {
                match calls.iter().position(|c| !c.answered && c.original == r.tool_use_id) {
                    Some(k) if calls[k].renamed.is_none() => calls[k].answered = true,
                    _ => return false,
                }
            }
            ContentBlock::ToolResult(_) => return false,
            _ => after_other = true,
        }
    }
    calls.iter().all(|c| c.answered)
}

/// A `tool_result` that answers no call of the message before it, as a `text` block.
fn orphan_as_text(result: &ToolResultBlock) -> ContentBlock {
    let content: Vec<String> = result
        .content
        .to_blocks()
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            other => format!("[{} block]", other.kind()),
        })
        .collect();
    ContentBlock::text(format!(
        "(the result of tool call {:?}, whose call is not in the message before: {})",
        result.tool_use_id,
        content.join("\n")
    ))
}

/// The last message, when it is the assistant's (a prefill, or `pause_turn`'s content), must
/// not end in whitespace.
fn trim_final_assistant(out: &mut [Message]) {
    let Some(last) = out.last_mut().filter(|m| m.role == Role::Assistant) else { return };
    match &last.content {
        MessageContent::Text(text) if text.trim_end().len() != text.len() => {
            last.content = MessageContent::Text(text.trim_end().to_owned());
        }
        MessageContent::Blocks(blocks) => {
            if let Some(ContentBlock::Text(t)) = blocks.last()
                && t.text.trim_end().len() != t.text.len()
            {
                let mut blocks = blocks.to_vec();
                if let Some(ContentBlock::Text(t)) = blocks.last_mut() {
                    t.text.truncate(t.text.trim_end().len());
                }
                last.content = MessageContent::Blocks(blocks.into());
            }
        }
        MessageContent::Text(_) => {}
    }
}

/// Appends `message`, or merges it into the last message when both have the same role (step 3).
fn push_merged(out: &mut Vec<Message>, message: Message) {
    match out.last_mut() {
        Some(last) if last.role == message.role => {
            let mut blocks = last.content.to_blocks();
            blocks.extend(message.content.to_blocks());
            last.content = MessageContent::Blocks(tool_results_first(blocks).into());
        }
        _ => out.push(message),
    }
}

/// In a merged user message, `tool_result` blocks must lead (the API requires results right
/// after their `tool_use`); other blocks keep their relative order after them.
fn tool_results_first(blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
    let (results, rest): (Vec<_>, Vec<_>) =
        blocks.into_iter().partition(|b| matches!(b, ContentBlock::ToolResult(_)));
    results.into_iter().chain(rest).collect()
}

/// A text block the API rejects: empty or whitespace-only.
fn is_blank_text(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text(t) if t.text.trim().is_empty())
}

/// Step 1 and the blank-text rule for one message's content; `None` when nothing is left.
fn clean(content: &MessageContent) -> Option<MessageContent> {
    match content {
        MessageContent::Text(t) if t.trim().is_empty() => None,
        MessageContent::Text(t) => Some(MessageContent::Text(t.clone())),
        MessageContent::Blocks(blocks) if blocks.is_empty() => None,
        // The common case, nothing to change: share the blocks instead of copying them.
        MessageContent::Blocks(blocks)
            if !blocks.iter().any(|b| has_dropped_field(b) || is_blank_text(b)) =>
        {
            Some(MessageContent::Blocks(Arc::clone(blocks)))
        }
        MessageContent::Blocks(blocks) => {
            let kept: Vec<ContentBlock> =
                blocks.iter().filter(|b| !is_blank_text(b)).map(strip_block).collect();
            (!kept.is_empty()).then(|| MessageContent::Blocks(kept.into()))
        }
    }
}

/// A block field step 1 drops: a private one (`_…`), or a `cache_control` the history carried.
fn dropped(key: &str) -> bool {
    key.starts_with('_') || key == "cache_control"
}

fn has_dropped_field(block: &ContentBlock) -> bool {
    let private = |extra: Option<&Map<String, Value>>| extra.is_some_and(|m| m.keys().any(|k| dropped(k)));
    match block {
        ContentBlock::Text(b) => private(b.extra.fields()),
        ContentBlock::ToolUse(b) => private(b.extra.fields()),
        ContentBlock::ToolResult(b) => private(b.extra.fields()),
        ContentBlock::Other(Value::Object(map)) => private(Some(map)),
        ContentBlock::Other(_) => false,
    }
}

fn strip_block(block: &ContentBlock) -> ContentBlock {
    let keep = |extra: &Map<String, Value>| -> Map<String, Value> {
        extra.iter().filter(|(k, _)| !dropped(k)).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    let kept = |extra: &Extra| -> Extra { extra.fields().map(keep).unwrap_or_default().into() };
    match block {
        ContentBlock::Text(b) => {
            let mut b = b.clone();
            b.extra = kept(&b.extra);
            ContentBlock::Text(b)
        }
        ContentBlock::ToolUse(b) => {
            let mut b = b.clone();
            b.extra = kept(&b.extra);
            ContentBlock::ToolUse(b)
        }
        ContentBlock::ToolResult(b) => {
            let mut b = b.clone();
            b.extra = kept(&b.extra);
            ContentBlock::ToolResult(b)
        }
        ContentBlock::Other(Value::Object(map)) => ContentBlock::Other(Value::Object(keep(map))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<Message> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_historys_own_cache_control_is_dropped() {
        let marker = json!({"type": "ephemeral"});
        let history = msgs(json!([
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": marker}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "bash", "input": {}, "cache_control": marker}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "x", "cache_control": marker},
                {"type": "image", "source": {}, "cache_control": marker}]}
        ]));
        let out = serde_json::to_string(&normalize_messages(&history)).unwrap();
        assert!(!out.contains("cache_control"), "{out}");
        assert!(out.contains(r#"{"type":"image","source":{}}"#), "{out}");
    }

    #[test]
    fn private_fields_and_extra_message_keys_are_dropped() {
        let history = msgs(json!([
            {"role": "user", "content": "hi", "_ts": 1},
            {"role": "assistant", "content": [{"type": "text", "text": "yo", "_shown": true}]}
        ]));
        let out = serde_json::to_value(normalize_messages(&history)).unwrap();
        assert_eq!(
            out,
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}
            ])
        );
    }

    #[test]
    fn orphaned_tool_use_gets_a_cancelled_result_right_after_its_message() {
        let history = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "bash", "input": {}},
                {"type": "tool_use", "id": "b", "name": "bash", "input": {}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}
        ]));
        let out = serde_json::to_value(normalize_messages(&history)).unwrap();
        assert_eq!(
            out,
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "a", "name": "bash", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "bash", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "b", "content": "(cancelled)"},
                    {"type": "tool_result", "tool_use_id": "a", "content": "ok"}
                ]}
            ])
        );
    }

    #[test]
    fn consecutive_same_role_messages_merge_into_blocks() {
        let history = msgs(json!([
            {"role": "user", "content": "first"},
            {"role": "user", "content": "second"}
        ]));
        let out = serde_json::to_value(normalize_messages(&history)).unwrap();
        assert_eq!(
            out,
            json!([{"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"}
            ]}])
        );
    }

    #[test]
    fn the_stored_history_is_not_changed() {
        let history = msgs(json!([
            {"role": "user", "content": "go", "_x": 1},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {}}]}
        ]));
        let before = history.clone();
        let _ = normalize_messages(&history);
        assert_eq!(history, before);
    }

    fn sent(history: Value) -> Value {
        serde_json::to_value(normalize_messages(&msgs(history))).unwrap()
    }

    #[test]
    fn empty_answers_and_blank_text_blocks_are_dropped_and_the_neighbours_merge() {
        let out = sent(json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": []},
            {"role": "user", "content": "again"},
            {"role": "assistant", "content": [{"type": "text", "text": " \n"}, {"type": "text", "text": "ok"}]},
            {"role": "user", "content": "  "}
        ]));
        assert_eq!(
            out,
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
            ])
        );
    }

    #[test]
    fn duplicate_and_invalid_ids_are_renamed_with_their_results_in_order() {
        let out = sent(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t", "name": "a", "input": {}},
                {"type": "tool_use", "id": "t", "name": "b", "input": {}},
                {"type": "tool_use", "id": "functions.bash:0", "name": "", "input": "ls"},
                {"type": "tool_use", "id": "", "name": "c", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": "from a"},
                {"type": "tool_result", "tool_use_id": "t", "content": "from b"},
                {"type": "tool_result", "tool_use_id": "functions.bash:0", "content": "ran"},
                {"type": "tool_result", "tool_use_id": "", "content": "c ran"}
            ]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "a", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "again"}]}
        ]));
        assert_eq!(
            out[1]["content"],
            json!([
                {"type": "tool_use", "id": "t", "name": "a", "input": {}},
                {"type": "tool_use", "id": "t_2", "name": "b", "input": {}},
                {"type": "tool_use", "id": "functions_bash_0", "name": "unnamed_tool", "input": {}},
                {"type": "tool_use", "id": "toolu_m1_b3", "name": "c", "input": {}}
            ])
        );
        assert_eq!(
            out[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t", "content": "from a"},
                {"type": "tool_result", "tool_use_id": "t_2", "content": "from b"},
                {"type": "tool_result", "tool_use_id": "functions_bash_0", "content": "ran"},
                {"type": "tool_result", "tool_use_id": "toolu_m1_b3", "content": "c ran"}
            ])
        );
        assert_eq!(out[3]["content"][0]["id"], "t_3");
        assert_eq!(out[4]["content"][0]["tool_use_id"], "t_3");
    }

    #[test]
    fn results_that_answer_nothing_become_text_after_the_real_results() {
        let out = sent(json!([
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "stray"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": {}}]},
            {"role": "user", "content": [
                {"type": "text", "text": "note"},
                {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "a", "content": "twice"}
            ]}
        ]));
        assert_eq!(out[0]["content"][0]["type"], "text");
        assert!(out[0]["content"][0]["text"].as_str().unwrap().contains("stray"));
        let last = out[2]["content"].as_array().unwrap();
        assert_eq!(last[0], json!({"type": "tool_result", "tool_use_id": "a", "content": "ok"}));
        assert_eq!(last[1], json!({"type": "text", "text": "note"}));
        assert!(last[2]["text"].as_str().unwrap().contains("twice"));
    }

    #[test]
    fn a_final_tool_use_is_answered_and_a_final_assistant_text_is_trimmed() {
        let out = sent(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": {}}]}
        ]));
        assert_eq!(
            out[2],
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "(cancelled)"}]})
        );
        let out = sent(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "part \n"}]}
        ]));
        assert_eq!(out[1]["content"][0], json!({"type": "thinking", "thinking": "t", "signature": "s"}));
        assert_eq!(out[1]["content"][1], json!({"type": "text", "text": "part"}));
    }

    #[test]
    fn a_history_with_nothing_to_repair_shares_its_blocks() {
        let history = msgs(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]}
        ]));
        let out = normalize_messages(&history);
        for (sent, kept) in out.iter().zip(&history).skip(1) {
            let (MessageContent::Blocks(a), MessageContent::Blocks(b)) = (&sent.content, &kept.content)
            else {
                panic!("blocks expected")
            };
            assert!(Arc::ptr_eq(a, b));
        }
    }
}
