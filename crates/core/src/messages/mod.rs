//! Typed Messages API data: messages, content blocks, requests and responses.
//!
//! Source: the Anthropic Messages API (`POST /v1/messages`), sections "Messages", "Content blocks",
//! "Tool use" and "Stop reasons". Every type here serialises to exactly the JSON the API takes and
//! returns. Blocks and stop reasons this crate does not model (`thinking`, `redacted_thinking`,
//! `server_tool_use`, a stop reason added next year) are kept as raw JSON and sent back unchanged,
//! as the API requires for `thinking` blocks.

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Who wrote a message. The API accepts only these two roles in `messages`; the system prompt is a
/// separate request field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human, or the harness speaking for it (tool results, reminders).
    User,
    /// The model.
    Assistant,
}

/// One entry of `messages`: `{"role": "user"|"assistant", "content": …}`.
///
/// `content` is either a plain string or a list of content blocks, as the API allows both.
/// Cloning shares the blocks (see [`MessageContent::Blocks`]), so a clone is a few words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// A string or a list of [`ContentBlock`]s.
    pub content: MessageContent,
    /// Fields the API may add and this crate does not model. `normalize_messages` drops them
    /// before a request (course §1, step 1: keep only `role` and `content`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The fields of a [`Message`] or a content block beyond the modelled ones, kept as they came: a
/// JSON object, nearly always empty. An empty one is a null pointer, so that the history and every request
/// built from it (thousands of messages, copied each round) do not carry an empty map each
/// (a map is 72 bytes, and cloning an empty one costs about a hundred instructions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    /// No extra fields.
    pub const fn new() -> Self {
        Self(None)
    }

    /// Whether there are no extra fields.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// The extra fields, `None` when there are none.
    pub fn fields(&self) -> Option<&Map<String, Value>> {
        self.0.as_deref().filter(|m| !m.is_empty())
    }

    /// The extra fields to change, made empty first when there were none.
    pub fn fields_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Self {
        if map.is_empty() { Self(None) } else { Self(Some(Box::new(map))) }
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Some(map) => map.serialize(serializer),
            None => Map::new().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Extra {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(Self::from)
    }
}

impl Message {
    /// A user message whose content is a plain string: `{"role":"user","content":"…"}` (course §0).
    pub fn user_text(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: MessageContent::Text(text.into()), extra: Extra::new() }
    }

    /// A user message made of content blocks, such as a round's `tool_result` blocks.
    pub fn user_blocks(blocks: Vec<ContentBlock>) -> Self {
        Self { role: Role::User, content: MessageContent::Blocks(blocks.into()), extra: Extra::new() }
    }

    /// An assistant message made of content blocks, as the API returned them.
    pub fn assistant_blocks(blocks: Vec<ContentBlock>) -> Self {
        Self { role: Role::Assistant, content: MessageContent::Blocks(blocks.into()), extra: Extra::new() }
    }

    /// The content as a block list. A plain string becomes one `text` block.
    pub fn blocks(&self) -> Vec<ContentBlock> {
        self.content.to_blocks()
    }
}

/// The `content` of a [`Message`]: a string, or a list of blocks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// `"content": "hello"`.
    Text(String),
    /// `"content": [{"type": "text", …}, …]`. Shared, not copied, when a message is cloned: every
    /// request repeats the history (see the caches' contract in [`crate::normalize`]); change it
    /// with `Arc::make_mut`.
    Blocks(Arc<[ContentBlock]>),
}

/// Blocks shared by both sides (the history, its normalised copy and the HTTP client's cache of
/// what it sent all hold the same `Arc`) are equal without looking inside: comparing the request
/// with the last one stays cheap however long the history. Otherwise block by block.
impl PartialEq for MessageContent {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (MessageContent::Text(a), MessageContent::Text(b)) => a == b,
            (MessageContent::Blocks(a), MessageContent::Blocks(b)) => Arc::ptr_eq(a, b) || a == b,
            _ => false,
        }
    }
}

impl MessageContent {
    /// The content as a block list; a string becomes a single `text` block.
    pub fn to_blocks(&self) -> Vec<ContentBlock> {
        match self {
            MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
            MessageContent::Blocks(blocks) => blocks.to_vec(),
        }
    }
}

/// A content block. Known types are typed; any other block is kept verbatim in
/// [`ContentBlock::Other`] so that it survives a round trip unchanged.
///
/// Serialised as the API's tagged object: `{"type": "text", "text": …}`,
/// `{"type": "tool_use", "id": …, "name": …, "input": {…}}`,
/// `{"type": "tool_result", "tool_use_id": …, "content": …, "is_error": true}`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text","text":…}`.
    Text(TextBlock),
    /// `{"type":"tool_use","id":…,"name":…,"input":…}`: the model asks the harness to run a tool.
    ToolUse(ToolUseBlock),
    /// `{"type":"tool_result","tool_use_id":…,"content":…}`: the harness answers one `tool_use`.
    ToolResult(ToolResultBlock),
    /// Any other block (`thinking`, `redacted_thinking`, `image`, …), as raw JSON.
    Other(Value),
}

/// The body of a `text` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// Fields such as `citations` or `cache_control`, kept as they came.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The body of a `tool_use` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The id the matching `tool_result` must carry, such as `toolu_01A…`.
    pub id: String,
    /// The tool's name, a key of the dispatch map.
    pub name: String,
    /// The arguments, a JSON object that should follow the tool's `input_schema` (the model may
    /// send anything, so handlers validate it).
    pub input: Value,
    /// Fields the API may add, kept as they came.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The body of a `tool_result` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The tool's output: a string, or a list of content blocks.
    pub content: MessageContent,
    /// `true` when the tool failed; omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Fields such as `cache_control`, kept as they came.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ContentBlock {
    /// A `text` block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextBlock { text: text.into(), extra: Extra::new() })
    }

    /// A `tool_use` block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ContentBlock::ToolUse(ToolUseBlock { id: id.into(), name: name.into(), input, extra: Extra::new() })
    }

    /// A `tool_result` block with string content; `is_error: true` is written only for errors.
    pub fn tool_result(tool_use_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        ContentBlock::ToolResult(ToolResultBlock {
            tool_use_id: tool_use_id.into(),
            content: MessageContent::Text(content.into()),
            is_error: is_error.then_some(true),
            extra: Extra::new(),
        })
    }

    /// Releases the spare capacity of the block's text and of a `tool_use` input's map, for a
    /// block kept for the whole session (the history). A parsed `{"path": …}` input holds room
    /// for several keys; at a thousand rounds that is a few hundred KB of peak memory.
    pub fn shrink_to_fit(&mut self) {
        match self {
            ContentBlock::Text(b) => b.text.shrink_to_fit(),
            ContentBlock::ToolUse(b) => {
                if let Value::Object(map) = &mut b.input {
                    *map = std::mem::take(map).into_iter().collect();
                }
            }
            ContentBlock::ToolResult(_) | ContentBlock::Other(_) => {}
        }
    }

    /// The block's `type` string.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Other(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The API's tagged form, `{"type": …, …fields}`, written straight to the serializer: no
        /// intermediate `Value`, since the whole history is serialised on every request.
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextBlock),
            ToolUse(&'a ToolUseBlock),
            ToolResult(&'a ToolResultBlock),
        }
        match self {
            ContentBlock::Text(b) => Tagged::Text(b).serialize(serializer),
            ContentBlock::ToolUse(b) => Tagged::ToolUse(b).serialize(serializer),
            ContentBlock::ToolResult(b) => Tagged::ToolResult(b).serialize(serializer),
            ContentBlock::Other(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    /// Lenient on purpose (NOTES-BOUNDARIES §4: compatible endpoints leave fields out). A block
    /// whose `type` is `text`, `tool_use` or `tool_result` always becomes that variant, whatever
    /// its other fields hold, so the loop and `normalize_messages` always see it:
    /// - a missing or `null` string field is `""`; a number or other value is its JSON text;
    /// - a `tool_use` without `input` (or with `null`) gets `{}`; an `input` that is a string
    ///   holding a JSON object is that object; any other value is kept (the tool's own input
    ///   check rejects it, and `normalize_messages` sends `{}` in its place);
    /// - a `tool_result` without `content` gets `""`.
    ///
    /// Any other type is kept verbatim in [`ContentBlock::Other`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ContentBlock::from_value(Value::deserialize(deserializer)?).map_err(D::Error::custom)
    }
}

impl ContentBlock {
    /// The block a JSON value holds (`{"type": "text", "text": …}`, a `tool_use`, …), read
    /// leniently as [`ContentBlock`]'s `Deserialize` reads it, which calls this (the rules are
    /// there; NOTES-BOUNDARIES §4). For a value already parsed, such as a streamed
    /// `content_block_start`'s block (Messages API, "Streaming Messages"), it reads the tree it is
    /// given instead of building a second one.
    ///
    /// # Errors
    /// The value is not an object, or has no string `type`.
    pub fn from_value(value: Value) -> Result<Self, &'static str> {
        let Value::Object(mut map) = value else {
            return Err("a content block is not a JSON object");
        };
        let kind = match map.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => return Err("content block without a string \"type\""),
        };
        match kind.as_str() {
            "text" | "tool_use" | "tool_result" => {
                map.remove("type");
            }
            _ => return Ok(ContentBlock::Other(Value::Object(map))),
        }
        Ok(match kind.as_str() {
            "text" => {
                ContentBlock::Text(TextBlock { text: take_string(&mut map, "text"), extra: map.into() })
            }
            "tool_use" => {
                let input = match map.remove("input") {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
                        Ok(object @ Value::Object(_)) => object,
                        _ => Value::String(text),
                    },
                    Some(other) => other,
                };
                let id = take_string(&mut map, "id");
                let name = take_string(&mut map, "name");
                ContentBlock::ToolUse(ToolUseBlock { id, name, input, extra: map.into() })
            }
            _ => {
                let tool_use_id = take_string(&mut map, "tool_use_id");
                let content = match map.remove("content") {
                    None | Some(Value::Null) => MessageContent::Text(String::new()),
                    Some(Value::String(text)) => MessageContent::Text(text),
                    Some(other) => match serde_json::from_value::<Vec<ContentBlock>>(other.clone()) {
                        Ok(blocks) => MessageContent::Blocks(blocks.into()),
                        Err(_) => MessageContent::Text(other.to_string()),
                    },
                };
                let is_error = match map.remove("is_error") {
                    Some(Value::Bool(b)) => Some(b),
                    _ => None,
                };
                ContentBlock::ToolResult(ToolResultBlock {
                    tool_use_id,
                    content,
                    is_error,
                    extra: map.into(),
                })
            }
        })
    }
}

/// Removes `field` from `map` as a string: `""` when missing or `null`, the JSON text of any
/// other non-string value.
fn take_string(map: &mut Map<String, Value>, field: &str) -> String {
    match map.remove(field) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// Why the model stopped. Source: Messages API, "Stop reasons".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model wants tools run; the response holds `tool_use` blocks.
    ToolUse,
    /// The output hit `max_tokens`; a trailing `tool_use` may be cut off and must not run.
    MaxTokens,
    /// A custom stop sequence was generated.
    StopSequence,
    /// A long server-side turn was paused; send the content back to continue.
    PauseTurn,
    /// The model declined to answer; [`MessagesResponse::stop_details`] may say why.
    Refusal,
    /// The conversation filled the model's context window; the answer is truncated. Anthropic and
    /// Z.ai/GLM send it as an HTTP 200.
    ModelContextWindowExceeded,
    /// Any other value, kept as sent.
    Other(String),
}

impl StopReason {
    /// The wire string, such as `end_turn`.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::ModelContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Ok(match s.as_str() {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ModelContextWindowExceeded,
            _ => StopReason::Other(s),
        })
    }
}

/// A tool definition sent in `tools`: `{"name", "description", "input_schema"}`.
/// Source: Messages API, "Tool use — defining tools".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, in one sentence (the course's exact text).
    pub description: String,
    /// A JSON Schema object describing the input.
    pub input_schema: Value,
}

/// The body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesRequest {
    /// Model id, such as `claude-sonnet-4-5` (from `MODEL_ID`).
    pub model: String,
    /// Output cap in tokens; the course sends 8000.
    pub max_tokens: u32,
    /// The system prompt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub system: String,
    /// The conversation, already passed through `normalize_messages`. Shared (`Arc`): the loop's
    /// [`crate::normalize::Normalizer`] appends each round's new messages to the list the last
    /// request held, instead of copying the whole history into a new one. Change it
    /// with `Arc::make_mut`.
    pub messages: Arc<Vec<Message>>,
    /// The tools, in dispatch-map order. Shared (`Arc`), so that a request does not copy the
    /// specs and their schemas every round ([`crate::dispatch::DispatchMap::specs`]).
    #[serde(default, skip_serializing_if = "<[_]>::is_empty")]
    pub tools: Arc<[ToolSpec]>,
    /// `true` asks for a server-sent-event stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// Token counts reported by the API. Source: Messages API, "usage", and "Prompt caching"
/// ("Tracking cache performance"): the input of one request is
/// `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`, the last two being the
/// part written to and read from the prompt cache, and `input_tokens` the rest (after the last
/// breakpoint). Streamed, they come in `message_start` and may be repeated, cumulative, in
/// `message_delta`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens billed at the input price: those after the last cache breakpoint, or all of
    /// them when nothing was cached.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens generated.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens written to the prompt cache by this request (billed at 1.25 times the input
    /// price for the 5-minute cache). Missing or `null` (an endpoint without prompt caching) is 0;
    /// 0 is not written back.
    #[serde(default, deserialize_with = "count_or_zero", skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
    /// Input tokens read from the prompt cache (billed at 0.1 times the input price). Missing or
    /// `null` is 0; 0 is not written back.
    #[serde(default, deserialize_with = "count_or_zero", skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Other counters (the cache writes by lifetime, server tool use), kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A token count that may be missing, `null` or not a whole number (compatible endpoints differ):
/// anything but a whole number reads as 0 (NOTES-BOUNDARIES §4).
fn count_or_zero<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(Value::deserialize(deserializer)?.as_u64().unwrap_or(0))
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a prompt-cache write costs per token, as a multiple of the input price (Messages API,
/// prompt caching; the 5-minute cache).
pub const WRITE_PRICE: f64 = 1.25;

/// What a cache read costs, per token, as a multiple of the input price.
pub const READ_PRICE: f64 = 0.1;

/// Requests and tokens added up over several responses: one turn or a session (`/usage`).
/// Source: the Messages API's `usage`, and "Prompt caching" for the prices of cache writes
/// ([`WRITE_PRICE`]) and reads ([`READ_PRICE`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Responses counted.
    pub requests: u32,
    /// Sum of their `usage.input_tokens`.
    pub input_tokens: u64,
    /// Sum of their `usage.output_tokens`.
    pub output_tokens: u64,
    /// Sum of their `usage.cache_creation_input_tokens`: input written to the prompt cache.
    pub cache_creation_input_tokens: u64,
    /// Sum of their `usage.cache_read_input_tokens`: input read from the prompt cache.
    pub cache_read_input_tokens: u64,
}

impl UsageTotals {
    /// Counts one response's `usage`.
    pub fn add(&mut self, usage: &Usage) {
        self.requests += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cache_creation_input_tokens += usage.cache_creation_input_tokens;
        self.cache_read_input_tokens += usage.cache_read_input_tokens;
    }

    /// Adds the counts of `other` (a subagent's totals to its parent's, say).
    pub fn absorb(&mut self, other: &UsageTotals) {
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
    }

    /// Every input token sent, cached or not: what the input would have been billed, in tokens,
    /// without prompt caching.
    pub fn total_input_tokens(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }

    /// The input as billed, in input-token equivalents: `input + 1.25 × written + 0.1 × read`
    /// (the 5-minute cache's prices, relative to the input price).
    pub fn billed_input(&self) -> f64 {
        self.input_tokens as f64
            + WRITE_PRICE * self.cache_creation_input_tokens as f64
            + READ_PRICE * self.cache_read_input_tokens as f64
    }

    /// What prompt caching saved, in input-token equivalents: [`UsageTotals::total_input_tokens`]
    /// minus [`UsageTotals::billed_input`]. Negative when more was written than read since.
    pub fn cache_saved(&self) -> f64 {
        self.total_input_tokens() as f64 - self.billed_input()
    }
}

/// Usage totals that several agents add to at once: the total of a team of agents running side
/// by side (course s13's teammates, s16's parallel calls), beside each agent's own
/// ([`crate::agent::AgentBuilder::usage_total`]). Each response is counted once, whichever task
/// adds it.
#[derive(Debug, Default)]
pub struct SharedUsage(std::sync::Mutex<UsageTotals>);

impl SharedUsage {
    /// Totals at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one response's `usage`.
    pub fn add(&self, usage: &Usage) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).add(usage);
    }

    /// The totals so far.
    pub fn totals(&self) -> UsageTotals {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A response of `POST /v1/messages`: `{"id","type":"message","role":"assistant","content",…}`.
///
/// Read leniently (NOTES-BOUNDARIES §4): every field may be missing except that the body must
/// hold `content` or `stop_reason`, so that another API's JSON (an OpenAI-style `choices`, say) is
/// an error rather than an empty answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WireResponse")]
pub struct MessagesResponse {
    /// The message id, such as `msg_01…`.
    pub id: String,
    /// Always `message` for a successful response.
    #[serde(rename = "type")]
    pub kind: String,
    /// Always `assistant`.
    pub role: Role,
    /// The content blocks, in order. Missing or `null` reads as empty when `stop_reason` is set
    /// (Z.ai's context-overflow answer).
    pub content: Vec<ContentBlock>,
    /// The model that answered.
    pub model: String,
    /// Why generation stopped; `None` only inside an unfinished stream.
    pub stop_reason: Option<StopReason>,
    /// The stop sequence that was hit, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Why the model refused, with `stop_reason: "refusal"`; streamed in `message_delta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<StopDetails>,
    /// Token counts.
    pub usage: Usage,
}

/// `stop_details` of a refusal: `{"type": "refusal", "category": …, "explanation": …}`.
/// Source: Messages API, "Handling stop reasons" (refusal). The explanation's wording is not stable,
/// so it is shown, never matched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StopDetails {
    /// `refusal`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `cyber`, `bio`, `frontier_llm`, `reasoning_extraction`, `general_harms`, or `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// A sentence for the user, or `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// Fields this crate does not model, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// [`MessagesResponse`] as read, before the check that it is one.
#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    role: Option<Role>,
    #[serde(default)]
    content: Option<Vec<ContentBlock>>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stop_reason: Option<StopReason>,
    #[serde(default)]
    stop_sequence: Option<String>,
    #[serde(default)]
    stop_details: Option<StopDetails>,
    #[serde(default)]
    usage: Option<Usage>,
}

impl TryFrom<WireResponse> for MessagesResponse {
    type Error = String;

    fn try_from(w: WireResponse) -> Result<Self, String> {
        if w.content.is_none() && w.stop_reason.is_none() {
            return Err("neither `content` nor `stop_reason`: not a Messages API response".into());
        }
        Ok(Self {
            id: w.id.unwrap_or_default(),
            kind: w.kind.unwrap_or_else(message_type),
            role: w.role.unwrap_or(Role::Assistant),
            content: w.content.unwrap_or_default(),
            model: w.model.unwrap_or_default(),
            stop_reason: w.stop_reason,
            stop_sequence: w.stop_sequence,
            stop_details: w.stop_details,
            usage: w.usage.unwrap_or_default(),
        })
    }
}

fn message_type() -> String {
    "message".to_owned()
}

impl MessagesResponse {
    /// The `tool_use` blocks, in content order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUseBlock> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t),
            _ => None,
        })
    }

    /// The text blocks joined with newlines, as the course prints a final answer.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

#[cfg(test)]
mod tests;
