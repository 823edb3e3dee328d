//! What the layers read in a history: its size, its `tool_use`/`tool_result` pairs, and which
//! results the model has already seen.
//!
//! Source: COURSE §4.3. Sizes are characters of the messages' JSON, UTF-8 kept (a `é` is one
//! character, not two bytes, nor the six of `\u00e9`), not tokens: a measure anyone can compute
//! and check without a tokenizer.

use std::borrow::Cow;
use std::io;

use agent_core::messages::{ContentBlock, Message, MessageContent, Role, ToolResultBlock};
use serde::Serialize;

/// The size of `history` as the layers measure it: the characters of its JSON (a list of
/// `{"role", "content"}` objects, compact, UTF-8 kept).
pub fn context_size(history: &[Message]) -> usize {
    json_chars(history)
}

/// The characters of `value`'s compact JSON, UTF-8 kept, counted as it is written (no string
/// is built).
pub(crate) fn json_chars<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut count = CharCount(0);
    // Writing to a counter cannot fail, and the crate's types always serialise.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Counts the UTF-8 characters written to it: every byte that does not continue a character.
struct CharCount(usize);

impl io::Write for CharCount {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0 += bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count();
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The characters of `text`.
pub(crate) fn chars(text: &str) -> usize {
    text.chars().count()
}

/// `text` cut to its first `n` characters.
pub(crate) fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// `text` without its first characters, so that the last `n` remain.
pub(crate) fn last_chars(text: &str, n: usize) -> &str {
    let total = chars(text);
    match text.char_indices().nth(total.saturating_sub(n)) {
        Some((cut, _)) => &text[cut..],
        None => "",
    }
}

/// An assistant message that calls a tool.
pub(crate) fn has_tool_use(message: &Message) -> bool {
    message.role == Role::Assistant && blocks(message).iter().any(|b| matches!(b, ContentBlock::ToolUse(_)))
}

/// A user message that answers tool calls.
pub(crate) fn is_tool_result(message: &Message) -> bool {
    message.role == Role::User && blocks(message).iter().any(|b| matches!(b, ContentBlock::ToolResult(_)))
}

/// The message's blocks, or none for a plain-string content.
pub(crate) fn blocks(message: &Message) -> &[ContentBlock] {
    match &message.content {
        MessageContent::Blocks(blocks) => blocks,
        MessageContent::Text(_) => &[],
    }
}

/// The text of a plain-string message (the way a prompt, a snip marker or a summary is stored).
pub(crate) fn plain_text(message: &Message) -> Option<&str> {
    match &message.content {
        MessageContent::Text(text) => Some(text),
        MessageContent::Blocks(_) => None,
    }
}

/// A `tool_result`'s output as text: its string, or its blocks' JSON (an image, say), which is
/// what a saved file then holds.
pub(crate) fn result_text(result: &ToolResultBlock) -> Cow<'_, str> {
    match &result.content {
        MessageContent::Text(text) => Cow::Borrowed(text),
        MessageContent::Blocks(blocks) => Cow::Owned(serde_json::to_string(blocks).unwrap_or_default()),
    }
}

/// Where one `tool_result` block sits: message index, block index.
pub(crate) type At = (usize, usize);

/// Every `tool_result` block of `history[range]`, in order.
pub(crate) fn results_in(history: &[Message], range: std::ops::Range<usize>) -> Vec<At> {
    let mut found = Vec::new();
    for i in range {
        if history[i].role != Role::User {
            continue;
        }
        for (j, block) in blocks(&history[i]).iter().enumerate() {
            if matches!(block, ContentBlock::ToolResult(_)) {
                found.push((i, j));
            }
        }
    }
    found
}

/// The `tool_result` block at `at`.
pub(crate) fn result_at(history: &[Message], (i, j): At) -> Option<&ToolResultBlock> {
    match blocks(&history[i]).get(j) {
        Some(ContentBlock::ToolResult(result)) => Some(result),
        _ => None,
    }
}

/// The index of the latest assistant message: results before it are ones the model has seen.
pub(crate) fn latest_assistant(history: &[Message]) -> Option<usize> {
    history.iter().rposition(|m| m.role == Role::Assistant)
}

/// Replaces the content of the `tool_result` at `at` with `text` (its `tool_use_id` and
/// `is_error` stay) and returns by how many characters the history's JSON shrank (negative when
/// it grew). The message gets a new block list, so the send path's caches see the rewrite.
pub(crate) fn replace_result(history: &mut [Message], (i, j): At, text: String) -> isize {
    let mut list = history[i].content.to_blocks();
    let Some(ContentBlock::ToolResult(result)) = list.get_mut(j) else { return 0 };
    let before = json_chars(&result.content);
    result.content = MessageContent::Text(text);
    let after = json_chars(&result.content);
    history[i].content = MessageContent::Blocks(list.into());
    before as isize - after as isize
}

/// `1234` → `1.2 KB`, `412` → `412 B`: sizes in the lines the layers print. The measure is the
/// course's, characters, so a "KB" here is a thousand characters.
pub fn human_size(chars: usize) -> String {
    match chars {
        0..1_000 => format!("{chars} B"),
        1_000..1_000_000 => format!("{:.1} KB", chars as f64 / 1e3),
        _ => format!("{:.1} MB", chars as f64 / 1e6),
    }
}

/// `12345` → `12,345`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_counts_characters_of_the_json_with_utf8_kept() {
        let history = vec![Message::user_text("é")];
        let json = serde_json::to_string(&history).unwrap_or_default();
        assert_eq!(json, r#"[{"role":"user","content":"é"}]"#);
        assert_eq!(context_size(&history), json.chars().count());
        assert_eq!(context_size(&history) + 1, json.len(), "é is one character and two bytes");
    }

    #[test]
    fn cuts_are_made_on_characters() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(last_chars("héllo", 4), "éllo");
        assert_eq!(last_chars("hi", 5), "hi");
        assert_eq!(first_chars("hi", 5), "hi");
    }

    #[test]
    fn numbers_read_as_a_person_writes_them() {
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(human_size(38_100), "38.1 KB");
        assert_eq!(human_size(412), "412 B");
    }
}
