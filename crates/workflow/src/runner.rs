//! Who answers an `agent()` call: [`MockAgentRunner`] (deterministic, for `s16 demo` and the
//! tests, the course's `MockAgentRunner` bit for bit) and [`ApiAgentRunner`] (one Messages API
//! request per call through the host's model, the course's `AnthropicAgentRunner`).

use std::sync::Arc;

use agent_core::events::Silent;
use agent_core::messages::{Message, MessagesRequest};
use agent_core::model::Model;
use serde_json::{Map, Value, json};

use crate::hash::stable_hash_mod;
use crate::{Result, WorkflowInputError};

/// What a runner answered (course `RunnerOutput`): the value (text, or the JSON a schema asked
/// for) and the tokens it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerOutput {
    /// A string without a schema; with one, the parsed JSON, or the raw text when it did not
    /// parse (so that the schema check asks again).
    pub value: Value,
    /// Tokens spent: the request's `input_tokens + output_tokens`.
    pub tokens: u64,
}

/// Something that answers one workflow step. Several calls of one run are in flight at once
/// (at most [`crate::CONCURRENCY`]).
#[async_trait::async_trait]
pub trait AgentRunner: Send + Sync {
    /// Answers `prompt`; with `schema`, the answer should be one JSON object matching it.
    ///
    /// # Errors
    /// Why no answer came (a failed request); the run then fails with that message.
    async fn run(&self, prompt: &str, schema: Option<&Value>, label: Option<&str>) -> Result<RunnerOutput>;
}

/// Makes a run's runner (course `RUNNER_FACTORY`): called once per run.
pub type RunnerFactory = Arc<dyn Fn() -> Arc<dyn AgentRunner> + Send + Sync>;

/// The first `n` characters of `text` (Python's `text[:n]`: code points, not bytes).
pub(crate) fn head(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The deterministic runner of the demo and the tests (course `MockAgentRunner`), reproduced
/// exactly, so that a journal it wrote resumes under the course and the reverse. With `h(s)` =
/// SHA-256 of `s` as an integer:
/// - no schema: `[mock] {(label or prompt)[:60]}`;
/// - a schema with a `findings` property: `1 + h(prompt) % 2` findings
///   `{"title": "{label or 'audit'} #{i}", "severity": [high, medium, low][h(prompt + i) % 3]}`;
/// - a schema with `isReal`: `isReal = h(prompt) % 4 != 0`, reason `reproduced` or
///   `could not reproduce`;
/// - any other schema: a filler that matches it.
///
/// Tokens: `len(prompt) // 4 + len(json.dumps(value)) // 4`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MockAgentRunner;

impl MockAgentRunner {
    /// The answer to `prompt` (see the type's docs); never fails.
    pub fn answer(prompt: &str, schema: Option<&Value>, label: Option<&str>) -> RunnerOutput {
        let label = label.filter(|l| !l.is_empty());
        let value = match schema {
            None => Value::String(format!("[mock] {}", head(label.unwrap_or(prompt), 60))),
            Some(schema) => {
                let props = schema.get("properties");
                let has = |name: &str| props.and_then(|p| p.get(name)).is_some();
                if has("findings") {
                    let n = 1 + stable_hash_mod(prompt, 2);
                    let severities = ["high", "medium", "low"];
                    let findings: Vec<Value> = (0..n)
                        .map(|i| {
                            let severity = severities[stable_hash_mod(&format!("{prompt}{i}"), 3) as usize];
                            json!({"title": format!("{} #{}", label.unwrap_or("audit"), i + 1), "severity": severity})
                        })
                        .collect();
                    json!({"findings": findings})
                } else if has("isReal") {
                    let real = stable_hash_mod(prompt, 4) != 0;
                    json!({"isReal": real, "reason": if real { "reproduced" } else { "could not reproduce" }})
                } else {
                    fill_schema(schema, prompt)
                }
            }
        };
        let tokens = (prompt.chars().count() / 4 + pyjson::dumps(&value).chars().count() / 4) as u64;
        RunnerOutput { value, tokens }
    }
}

#[async_trait::async_trait]
impl AgentRunner for MockAgentRunner {
    async fn run(&self, prompt: &str, schema: Option<&Value>, label: Option<&str>) -> Result<RunnerOutput> {
        Ok(Self::answer(prompt, schema, label))
    }
}

/// The course's `_fill_schema`: a value of `schema`'s shape chosen from `seed`. A property that a
/// schema requires but does not describe gets the seed's last part (the course fails there).
fn fill_schema(schema: &Value, seed: &str) -> Value {
    let empty = Value::Object(Map::new());
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let keys: Vec<&str> = if required.is_empty() {
                props.into_iter().flat_map(|p| p.keys().map(String::as_str)).collect()
            } else {
                required
            };
            let map = keys
                .into_iter()
                .map(|k| {
                    let sub = props.and_then(|p| p.get(k)).unwrap_or(&empty);
                    (k.to_owned(), fill_schema(sub, &format!("{seed}/{k}")))
                })
                .collect();
            Value::Object(map)
        }
        Some("array") => {
            Value::Array(vec![fill_schema(schema.get("items").unwrap_or(&empty), &format!("{seed}/0"))])
        }
        Some("boolean") => Value::Bool(stable_hash_mod(seed, 4) != 0),
        Some("number" | "integer") => json!(stable_hash_mod(seed, 5)),
        _ => Value::String(seed.rsplit_once('/').map_or(seed, |(_, last)| last).to_owned()),
    }
}

/// The SYSTEM prompt of a workflow agent (COURSE-s10-s17 §7.2, exact, with the Unix-like
/// environment sentence).
pub const AGENT_SYSTEM: &str = "You are a focused workflow agent. Complete only the supplied step. \
Host OS: Unix-like. This workflow agent only responds to its supplied step; it has no direct shell or file tools. \
Do not claim access to files or results not included in the prompt.";

/// `max_tokens` of a workflow agent's request (course: 2000).
pub const AGENT_MAX_TOKENS: u32 = 2000;

/// Answers each step with one Messages API request through the host's model (course
/// `AnthropicAgentRunner`): SYSTEM [`AGENT_SYSTEM`], one user message (the prompt, and with a
/// schema `Return only one JSON object matching this schema:` and the schema as sorted JSON),
/// `max_tokens` 2000, **no tools**. The reply's text blocks are joined with new lines; with a
/// schema they are read as JSON ([`parse_runner_json`]).
pub struct ApiAgentRunner {
    model: Arc<dyn Model>,
    model_id: String,
}

impl ApiAgentRunner {
    /// A runner on `model`, sending `model_id` (the host's `MODEL_ID`).
    pub fn new(model: Arc<dyn Model>, model_id: impl Into<String>) -> Self {
        Self { model, model_id: model_id.into() }
    }

    /// The request for one step.
    pub fn request(&self, prompt: &str, schema: Option<&Value>) -> MessagesRequest {
        let mut text = prompt.to_owned();
        if let Some(schema) = schema {
            text.push_str("\n\nReturn only one JSON object matching this schema:\n");
            text.push_str(&crate::hash::sorted_json(Some(schema)));
        }
        MessagesRequest {
            model: self.model_id.clone(),
            max_tokens: AGENT_MAX_TOKENS,
            system: AGENT_SYSTEM.to_owned(),
            messages: Arc::new(vec![Message::user_text(text)]),
            tools: Default::default(),
            stream: None,
        }
    }
}

#[async_trait::async_trait]
impl AgentRunner for ApiAgentRunner {
    async fn run(&self, prompt: &str, schema: Option<&Value>, _label: Option<&str>) -> Result<RunnerOutput> {
        let request = self.request(prompt, schema);
        let response = self
            .model
            .create(&request, &Silent)
            .await
            .map_err(|e| WorkflowInputError::new(format!("workflow agent request failed: {e}")))?;
        let text = response.text().trim().to_owned();
        let value = match schema {
            None => Value::String(text),
            // Text that is no JSON stays text: the schema check then asks once more.
            Some(_) => parse_runner_json(&text).unwrap_or(Value::String(text)),
        };
        let tokens = response.usage.input_tokens + response.usage.output_tokens;
        Ok(RunnerOutput { value, tokens })
    }
}

/// Reads a model's answer as JSON (course `_parse_runner_json`): a ```` ``` ```` fence around it
/// is removed; the whole text is parsed, else the first `{` from which one JSON value parses.
///
/// # Errors
/// `workflow agent returned invalid JSON` when nothing parses.
pub fn parse_runner_json(text: &str) -> Result<Value> {
    let mut stripped = text.trim().to_owned();
    if stripped.starts_with("```") {
        let mut lines: Vec<&str> = stripped.lines().skip(1).collect();
        if lines.last().is_some_and(|l| l.trim() == "```") {
            lines.pop();
        }
        stripped = lines.join("\n").trim().to_owned();
    }
    if let Ok(value) = serde_json::from_str(&stripped) {
        return Ok(value);
    }
    for (at, _) in stripped.match_indices('{') {
        let mut values = serde_json::Deserializer::from_str(&stripped[at..]).into_iter::<Value>();
        if let Some(Ok(value)) = values.next() {
            return Ok(value);
        }
    }
    Err(WorkflowInputError::new("workflow agent returned invalid JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_found_in_fences_and_prose() {
        assert_eq!(parse_runner_json("```json\n{\"ok\": true}\n```").ok(), Some(json!({"ok": true})));
        assert_eq!(
            parse_runner_json("Result:\n```json\n{\"ok\": true}\n```\nDone.").ok(),
            Some(json!({"ok": true}))
        );
        assert_eq!(parse_runner_json("x {bad} then {\"a\": [1]} tail").ok(), Some(json!({"a": [1]})));
        assert_eq!(
            parse_runner_json("not json").err().map(|e| e.0).as_deref(),
            Some("workflow agent returned invalid JSON")
        );
    }

    #[test]
    fn the_mock_answers_as_the_course_does() {
        assert_eq!(MockAgentRunner::answer("first call", None, None).value, json!("[mock] first call"));
        let filled = MockAgentRunner::answer(
            "p",
            Some(
                &json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}),
            ),
            None,
        );
        assert_eq!(filled.value, json!({"n": 0, "s": "s"}));
    }
}
