//! `normalize_messages`: repair a copy of the history before every request.
//!
//! Source: course §1. The stored history is never rewritten (course issue #37); the loop sends
//! `normalize_messages(&history)` instead. Three steps, in order:
//! 1. keep only `role` and `content`, and drop block fields whose names start with `_`;
//! 2. give every `tool_use` without a matching `tool_result` in the next message a `(cancelled)`
//!    result, inserted right after its assistant message (strict endpoints reject orphans; an
//!    interrupted turn leaves them);
//! 3. merge consecutive messages of the same role, turning string content into a `text` block.
//!
//! After step 3 any `text` block that followed `tool_result` blocks stays after them, because
//! merging only concatenates block lists in order and step 2 puts results first.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::messages::{ContentBlock, Message, MessageContent, Role};

/// The `tool_result` content given to a `tool_use` that never got one.
pub const CANCELLED: &str = "(cancelled)";

/// Returns the repaired copy of `history` to send; `history` itself is left untouched.
pub fn normalize_messages(history: &[Message]) -> Vec<Message> {
    // One pass, one copy of each message: clean it (step 1), answer its orphans (step 2), and
    // merge it into the previous message when the roles match (step 3).
    let mut out: Vec<Message> = Vec::with_capacity(history.len() + 1);
    for (i, message) in history.iter().enumerate() {
        let cleaned =
            Message { role: message.role, content: strip_private(&message.content), extra: Map::new() };
        push_merged(&mut out, cleaned);
        if message.role != Role::Assistant {
            continue;
        }
        let MessageContent::Blocks(blocks) = &message.content else { continue };
        // The API wants each result in the very next message, so only that one can answer.
        let answered = answered_ids(history.get(i + 1));
        let orphans: Vec<ContentBlock> = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse(u) if !answered.contains(&u.id.as_str()) => {
                    Some(ContentBlock::tool_result(u.id.clone(), CANCELLED, false))
                }
                _ => None,
            })
            .collect();
        if !orphans.is_empty() {
            push_merged(&mut out, Message::user_blocks(orphans));
        }
    }
    out
}

/// The `tool_use_id`s that `next` answers, when it is a user message.
fn answered_ids(next: Option<&Message>) -> Vec<&str> {
    match next {
        Some(Message { role: Role::User, content: MessageContent::Blocks(blocks), .. }) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.as_str()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
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

fn strip_private(content: &MessageContent) -> MessageContent {
    match content {
        MessageContent::Text(t) => MessageContent::Text(t.clone()),
        // The common case, nothing private: share the blocks instead of copying them.
        MessageContent::Blocks(blocks) if !blocks.iter().any(has_private_field) => {
            MessageContent::Blocks(Arc::clone(blocks))
        }
        MessageContent::Blocks(blocks) => MessageContent::Blocks(blocks.iter().map(strip_block).collect()),
    }
}

fn has_private_field(block: &ContentBlock) -> bool {
    let private = |extra: &Map<String, Value>| extra.keys().any(|k| k.starts_with('_'));
    match block {
        ContentBlock::Text(b) => private(&b.extra),
        ContentBlock::ToolUse(b) => private(&b.extra),
        ContentBlock::ToolResult(b) => private(&b.extra),
        ContentBlock::Other(Value::Object(map)) => private(map),
        ContentBlock::Other(_) => false,
    }
}

fn strip_block(block: &ContentBlock) -> ContentBlock {
    let keep = |extra: &Map<String, Value>| -> Map<String, Value> {
        extra.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    match block {
        ContentBlock::Text(b) => {
            let mut b = b.clone();
            b.extra = keep(&b.extra);
            ContentBlock::Text(b)
        }
        ContentBlock::ToolUse(b) => {
            let mut b = b.clone();
            b.extra = keep(&b.extra);
            ContentBlock::ToolUse(b)
        }
        ContentBlock::ToolResult(b) => {
            let mut b = b.clone();
            b.extra = keep(&b.extra);
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
}
