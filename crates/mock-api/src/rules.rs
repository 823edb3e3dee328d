//! The Messages API's request rules, checked on a recorded body, written from the API's error
//! texts (NOTES-BOUNDARIES §1), independently of any client: a test that runs a client against
//! [`crate::MockServer`] asserts with it that every request is one the real API would accept.

use std::collections::HashSet;

use serde_json::Value;

/// Checks `body.messages` against the rules the real API enforces with a 400, and names the first
/// one broken (with the API's own text):
/// - `messages` is a non-empty list of `user`/`assistant` messages;
/// - "all messages must have non-empty content except for the optional final assistant message";
/// - "text content blocks must be non-empty" / "must contain non-whitespace text" (a string
///   content counts as one text block);
/// - "final assistant content cannot end with trailing whitespace";
/// - every `tool_use` has an id matching `^[a-zA-Z0-9_-]+$`, "`tool_use` ids must be unique", a
///   non-empty `name`, and "tool_use.input: Input should be a valid dictionary";
/// - "`tool_use` ids were found without `tool_result` blocks immediately after", and
///   "unexpected `tool_use_id` found in `tool_result` blocks": see
///   [`crate::RecordedRequest::check_tool_pairing`].
///
/// # Errors
/// A sentence starting with the path of the fault (`messages.N.content.M`).
pub fn check_messages(body: &Value) -> Result<(), String> {
    let Some(messages) = body["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err("messages: not a non-empty list".into());
    };
    let mut ids: HashSet<String> = HashSet::new();
    let last = messages.len() - 1;
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            return Err(format!("messages.{i}.role: {role:?} is neither user nor assistant"));
        }
        let final_assistant = i == last && role == "assistant";
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            Value::Array(blocks) => blocks.clone(),
            other => return Err(format!("messages.{i}.content: {other} is neither a string nor a list")),
        };
        if blocks.is_empty() && !final_assistant {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
        for (j, block) in blocks.iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            match block["type"].as_str() {
                Some("text") => {
                    let text = block["text"].as_str().ok_or_else(|| format!("{at}.text: not a string"))?;
                    if text.is_empty() {
                        return Err(format!("{at}: text content blocks must be non-empty"));
                    }
                    if text.trim().is_empty() {
                        return Err(format!("{at}: text content blocks must contain non-whitespace text"));
                    }
                }
                Some("tool_use") => {
                    if role != "assistant" {
                        return Err(format!("{at}: a tool_use in a {role} message"));
                    }
                    let id = block["id"].as_str().unwrap_or_default();
                    let valid = !id.is_empty()
                        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    if !valid {
                        return Err(format!("{at}.id: {id:?} does not match ^[a-zA-Z0-9_-]+$"));
                    }
                    if !ids.insert(id.to_owned()) {
                        return Err(format!("{at}: `tool_use` ids must be unique ({id:?})"));
                    }
                    if block["name"].as_str().is_none_or(str::is_empty) {
                        return Err(format!("{at}.name: missing or empty"));
                    }
                    if !block["input"].is_object() {
                        return Err(format!("{at}: tool_use.input: Input should be a valid dictionary"));
                    }
                }
                Some("tool_result") => {
                    if role != "user" {
                        return Err(format!("{at}: a tool_result in a {role} message"));
                    }
                    if !block["tool_use_id"].is_string() {
                        return Err(format!("{at}.tool_use_id: not a string"));
                    }
                }
                Some(_) => {}
                None => return Err(format!("{at}: a content block without a type")),
            }
        }
        if final_assistant
            && let Some(text) = blocks.last().filter(|b| b["type"] == "text").and_then(|b| b["text"].as_str())
            && text.trim_end() != text
        {
            return Err(format!("messages.{i}: final assistant content cannot end with trailing whitespace"));
        }
    }
    Ok(())
}

/// Checks where `cache_control` appears (Messages API, "Prompt caching"), and names the first
/// misplaced one with the API's text:
/// - at most four in the request: on `tools` entries, `system` blocks, message content blocks,
///   and at the top level (automatic caching, which takes one of the four): "A maximum of 4
///   blocks with cache_control may be provided";
/// - never on a message itself, on a `thinking` or `redacted_thinking` block, or on an empty
///   text block: "Extra inputs are not permitted" at that path;
/// - each one is `{"type": "ephemeral"}`, with an optional `"ttl"` of `"5m"` or `"1h"`.
///
/// # Errors
/// A sentence starting with the path of the fault (`messages.N.content.M.cache_control`).
pub fn check_cache_control(body: &Value) -> Result<(), String> {
    let mut found: Vec<String> = Vec::new();
    let mut check = |at: String, marker: &Value| -> Result<(), String> {
        let ttl_ok = marker.get("ttl").is_none_or(|t| t == "5m" || t == "1h");
        let keys_ok = marker.as_object().is_some_and(|m| m.keys().all(|k| k == "type" || k == "ttl"));
        if marker["type"] != "ephemeral" || !ttl_ok || !keys_ok {
            return Err(format!(
                "{at}: {marker} is not {{\"type\": \"ephemeral\"}} (with an optional ttl of 5m or 1h)"
            ));
        }
        found.push(at);
        Ok(())
    };
    if let Some(marker) = body.get("cache_control") {
        check("cache_control".into(), marker)?;
    }
    for (i, tool) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if let Some(marker) = tool.get("cache_control") {
            check(format!("tools.{i}.cache_control"), marker)?;
        }
    }
    for (i, block) in body["system"].as_array().into_iter().flatten().enumerate() {
        if let Some(marker) = block.get("cache_control") {
            check(format!("system.{i}.cache_control"), marker)?;
        }
    }
    for (i, message) in body["messages"].as_array().into_iter().flatten().enumerate() {
        if message.get("cache_control").is_some() {
            return Err(format!("messages.{i}.cache_control: Extra inputs are not permitted"));
        }
        for (j, block) in message["content"].as_array().into_iter().flatten().enumerate() {
            let Some(marker) = block.get("cache_control") else { continue };
            let kind = block["type"].as_str().unwrap_or_default();
            if kind == "thinking" || kind == "redacted_thinking" {
                return Err(format!(
                    "messages.{i}.content.{j}.{kind}.cache_control: Extra inputs are not permitted"
                ));
            }
            if kind == "text" && block["text"].as_str().is_none_or(str::is_empty) {
                return Err(format!(
                    "messages.{i}.content.{j}: cache_control cannot be set for empty text blocks"
                ));
            }
            check(format!("messages.{i}.content.{j}.cache_control"), marker)?;
        }
    }
    if found.len() > crate::cache::MAX_BREAKPOINTS {
        return Err(format!(
            "A maximum of {} blocks with cache_control may be provided. Found {} ({}).",
            crate::cache::MAX_BREAKPOINTS,
            found.len(),
            found.join(", ")
        ));
    }
    Ok(())
}
