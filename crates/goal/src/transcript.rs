//! The conversation as the evaluator reads it (course s17: `transcript_text`, `_plain_content`).
//!
//! Each message becomes `ROLE:\n` and its content in plain text: a `text` block as it is, a
//! `tool_use` as `[tool_use NAME {"input": "as JSON"}]`, a `tool_result` as `[tool_result OUTPUT]`,
//! parts joined by `\n`, empty ones and other blocks (`thinking`, images) dropped. The newest
//! complete messages that fit in the budget are kept, each counted with the `\n\n` that joins
//! them; when the newest alone is too large, its start (three quarters of the room) and end are
//! kept around `\n...[middle omitted]...\n`. Lengths are in characters, as Python counts them.
//!
//! The evaluator sees the whole conversation, the user's messages included, whatever their
//! origin: a check of where a message came from would hide the evidence (a background result, a
//! pasted log) the user's condition is about.

use agent_core::messages::{ContentBlock, Message, MessageContent, Role};
use serde_json::Value;

/// What replaces the middle of a message too large for the budget.
const MIDDLE_MARKER: &str = "\n...[middle omitted]...\n";

/// The plain text of a message's content (course: `_plain_content`): see the module docs.
pub fn plain_content(content: &MessageContent) -> String {
    let blocks = match content {
        MessageContent::Text(text) => return text.clone(),
        MessageContent::Blocks(blocks) => blocks,
    };
    let parts = blocks.iter().filter_map(|block| match block {
        ContentBlock::Text(t) => Some(t.text.clone()),
        ContentBlock::ToolUse(t) => Some(format!("[tool_use {} {}]", t.name, python_json(&t.input))),
        ContentBlock::ToolResult(r) => Some(format!("[tool_result {}]", plain_content(&r.content))),
        ContentBlock::Other(_) => None,
    });
    parts.filter(|p| !p.is_empty()).collect::<Vec<_>>().join("\n")
}

/// The newest messages of `messages` that fit in `max_characters` characters, rendered as the
/// module docs say (course: `transcript_text`, 24,000 characters by default).
pub fn transcript_text(messages: &[Message], max_characters: usize) -> String {
    let mut selected: Vec<String> = Vec::new();
    let mut size = 0;
    for message in messages.iter().rev() {
        let role = match message.role {
            Role::User => "USER",
            Role::Assistant => "ASSISTANT",
        };
        let item = format!("{role}:\n{}", plain_content(&message.content));
        let item_chars = item.chars().count();
        let item_size = item_chars + 2;
        if selected.is_empty() && item_size > max_characters {
            selected.push(trim_middle(&item, item_chars, max_characters));
            break;
        }
        if !selected.is_empty() && size + item_size > max_characters {
            break;
        }
        selected.push(item);
        size += item_size;
    }
    selected.reverse();
    selected.join("\n\n")
}

/// `item` (of `chars` characters) cut to `max` characters around [`MIDDLE_MARKER`].
fn trim_middle(item: &str, chars: usize, max: usize) -> String {
    let marker_chars = MIDDLE_MARKER.chars().count();
    let available = max.saturating_sub(marker_chars);
    if available == 0 {
        return MIDDLE_MARKER.chars().take(max).collect();
    }
    let head = available * 3 / 4;
    let tail = available - head;
    let start: String = item.chars().take(head).collect();
    let end: String = item.chars().skip(chars - tail).collect();
    format!("{start}{MIDDLE_MARKER}{end}")
}

/// `value` as Python's `json.dumps(value, ensure_ascii=False)` writes it: `", "` between items
/// and `": "` after keys, characters as they are, keys in their order.
fn python_json(value: &Value) -> String {
    pyjson::dumps_with(value, pyjson::Options { indent: None, ensure_ascii: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Message {
        Message::user_text(text)
    }

    #[test]
    fn blocks_read_as_the_course_writes_them() {
        let assistant = Message::assistant_blocks(vec![
            ContentBlock::text("Running it."),
            ContentBlock::tool_use("t1", "bash", json!({"command": "printf 'é'", "n": [1, 2]})),
            ContentBlock::Other(json!({"type": "thinking", "thinking": "hidden"})),
            ContentBlock::text(""),
        ]);
        assert_eq!(
            plain_content(&assistant.content),
            "Running it.\n[tool_use bash {\"command\": \"printf 'é'\", \"n\": [1, 2]}]"
        );
        let results = Message::user_blocks(vec![ContentBlock::tool_result("t1", "exit_code=0\né", false)]);
        assert_eq!(plain_content(&results.content), "[tool_result exit_code=0\né]");
        assert_eq!(transcript_text(&[user("go"), assistant, results], 24_000).lines().next(), Some("USER:"));
    }

    #[test]
    fn the_budget_counts_characters_and_the_joins() {
        // "USER:\nab" is 8 characters, 10 with its join: two fit in 20, three do not.
        let messages = [user("a1"), user("ab"), user("cd")];
        assert_eq!(transcript_text(&messages, 20), "USER:\nab\n\nUSER:\ncd");
        assert_eq!(transcript_text(&messages, 30).matches("USER:").count(), 3);
    }

    #[test]
    fn a_budget_smaller_than_the_marker_keeps_part_of_the_marker() {
        let rendered = transcript_text(&[user(&"é".repeat(50))], 10);
        assert_eq!(rendered, MIDDLE_MARKER.chars().take(10).collect::<String>());
        let wide = transcript_text(&[user(&"é".repeat(200))], 60);
        assert_eq!(wide.chars().count(), 60);
        assert!(wide.ends_with('é'));
    }
}
