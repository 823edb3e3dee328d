//! The dispatch map: tool name → (`input_schema`, handler).
//!
//! Source: course s02 ("tool use"): `TOOL_HANDLERS[block.name](**block.input)`. Adding a tool
//! means adding one entry; the loop never changes. Here the map keeps insertion order, because the
//! order of `tools` in the request is part of each chapter's contract (course §3: "Tools, in order").
//!
//! A handler receives the model's raw JSON `input` and returns its output text, or a
//! [`ToolError`]. The map turns that into a `tool_result`:
//! - success → the text, no `is_error`;
//! - a [`ToolError`] → `Error: <message>` with `is_error: true` (course §0);
//! - a name not in the map → `Unknown tool: NAME` with `is_error: true` (course §0);
//! - a handler that panics → `Error: tool NAME panicked`, and the process lives on.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::messages::{ToolSpec, ToolUseBlock};

/// The future a tool handler returns. Dropping it cancels the call; a tool that starts processes
/// must kill them when dropped.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<String, ToolError>> + Send + 'a>>;

/// Why a tool call failed. `Display` gives the message that follows `Error: ` in the `tool_result`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The input did not match the schema: a missing or mistyped field. The message names the
    /// field, such as ``missing field `path` `` or ``limit: invalid type: string "x", expected u64``.
    #[error("{0}")]
    InvalidInput(String),
    /// A path resolved outside the workspace; carries the path as the model gave it
    /// (course §1, the workspace rule).
    #[error("Path escapes workspace: {0}")]
    PathEscapes(String),
    /// Any other failure: I/O, timeout, a refused command. The text is the course's message.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// A [`ToolError::Failed`] from anything printable.
    pub fn failed(message: impl std::fmt::Display) -> Self {
        ToolError::Failed(message.to_string())
    }
}

/// Deserialises a tool's `input` into its typed arguments. Errors name the offending field.
///
/// # Errors
/// [`ToolError::InvalidInput`] when a field is missing, has the wrong type, or `input` is not an
/// object.
pub fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." || path.is_empty() {
            ToolError::InvalidInput(inner)
        } else {
            ToolError::InvalidInput(format!("{path}: {inner}"))
        }
    })
}

/// A tool the model can call: its definition and its handler.
pub trait Tool: Send + Sync {
    /// `{name, description, input_schema}` as sent in the request's `tools`.
    fn spec(&self) -> ToolSpec;
    /// Runs the tool on the model's raw `input`.
    fn call<'a>(&'a self, input: &'a Value) -> ToolFuture<'a>;
    /// `true` when the tool shows its own output to the user (the todo list), so the loop prints
    /// no preview of a successful result. Defaults to `false`.
    fn displays_output(&self) -> bool {
        false
    }
}

/// A tool built from a spec and a closure; the usual way to add a tool to a chapter.
pub struct FnTool<F> {
    spec: ToolSpec,
    handler: F,
    displays: bool,
}

impl<F> FnTool<F>
where
    F: for<'a> Fn(&'a Value) -> ToolFuture<'a> + Send + Sync,
{
    /// A tool named `spec.name` whose handler is `handler`.
    pub fn new(spec: ToolSpec, handler: F) -> Self {
        Self { spec, handler, displays: false }
    }

    /// Marks the tool as one that shows its own output (see [`Tool::displays_output`]).
    pub fn displaying_output(mut self) -> Self {
        self.displays = true;
        self
    }
}

impl<F> Tool for FnTool<F>
where
    F: for<'a> Fn(&'a Value) -> ToolFuture<'a> + Send + Sync,
{
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    fn call<'a>(&'a self, input: &'a Value) -> ToolFuture<'a> {
        (self.handler)(input)
    }
    fn displays_output(&self) -> bool {
        self.displays
    }
}

/// What one dispatched call produced: the `tool_result` content and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The `tool_result` content: the tool's output, `Error: …`, or `Unknown tool: NAME`.
    pub content: String,
    /// Sent as `is_error: true` when set.
    pub is_error: bool,
}

impl ToolOutcome {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self { content: content.into(), is_error: false }
    }
    /// An error result; `content` is sent as is.
    pub fn error(content: impl Into<String>) -> Self {
        Self { content: content.into(), is_error: true }
    }
}

/// The dispatch map: tools in registration order, looked up by name.
#[derive(Clone, Default)]
pub struct DispatchMap {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
}

impl DispatchMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`, keeping registration order. A tool with a name already present replaces the
    /// old one in its place.
    pub fn register(&mut self, tool: impl Tool + 'static) -> &mut Self {
        let tool: Arc<dyn Tool> = Arc::new(tool);
        let name = tool.spec().name;
        match self.index.get(&name) {
            Some(&i) => self.tools[i] = tool,
            None => {
                self.index.insert(name, self.tools.len());
                self.tools.push(tool);
            }
        }
        self
    }

    /// Builder form of [`DispatchMap::register`].
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.register(tool);
        self
    }

    /// The tool definitions for the request's `tools`, in registration order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The registered names, in order.
    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.spec().name).collect()
    }

    /// Whether the tool of that name shows its own output ([`Tool::displays_output`]).
    pub fn displays_output(&self, name: &str) -> bool {
        self.index.get(name).is_some_and(|&i| self.tools[i].displays_output())
    }

    /// Whether a tool of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Runs one `tool_use` and turns whatever happens into a [`ToolOutcome`]. Never panics.
    pub async fn dispatch(&self, call: &ToolUseBlock) -> ToolOutcome {
        let Some(&i) = self.index.get(&call.name) else {
            return ToolOutcome::error(format!("Unknown tool: {}", call.name));
        };
        let tool = Arc::clone(&self.tools[i]);
        match AssertUnwindSafe(tool.call(&call.input)).catch_unwind().await {
            Ok(Ok(output)) => ToolOutcome::ok(output),
            Ok(Err(e)) => ToolOutcome::error(format!("Error: {e}")),
            Err(_) => ToolOutcome::error(format!("Error: tool {} panicked", call.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Args {
        #[allow(dead_code)]
        path: String,
        #[allow(dead_code)]
        limit: Option<u64>,
    }

    fn echo() -> impl Tool {
        FnTool::new(
            ToolSpec { name: "echo".into(), description: "Echo.".into(), input_schema: json!({}) },
            |input| {
                Box::pin(async move {
                    let _: Args = parse_input(input)?;
                    Ok("ok".to_owned())
                })
            },
        )
    }

    fn call(name: &str, input: Value) -> ToolUseBlock {
        ToolUseBlock { id: "t".into(), name: name.into(), input, extra: Default::default() }
    }

    #[tokio::test]
    async fn errors_name_the_field_and_unknown_tools_are_reported() {
        let map = DispatchMap::new().with(echo());
        let cases = [
            (call("echo", json!({"path": "a"})), "ok", false),
            (call("echo", json!({})), "Error: missing field `path`", true),
            (
                call("echo", json!({"path": "a", "limit": "x"})),
                "Error: limit: invalid type: string \"x\", expected u64",
                true,
            ),
            (
                call("echo", json!("not an object")),
                "Error: invalid type: string \"not an object\", expected struct Args",
                true,
            ),
            (call("nope", json!({})), "Unknown tool: nope", true),
        ];
        for (c, content, is_error) in cases {
            let out = map.dispatch(&c).await;
            assert_eq!(out, ToolOutcome { content: content.into(), is_error }, "{c:?}");
        }
    }

    #[tokio::test]
    async fn a_panicking_handler_becomes_an_error_result() {
        let map = DispatchMap::new().with(FnTool::new(
            ToolSpec { name: "boom".into(), description: String::new(), input_schema: json!({}) },
            |_| Box::pin(async { panic!("boom") }),
        ));
        let out = map.dispatch(&call("boom", json!({}))).await;
        assert_eq!(out, ToolOutcome::error("Error: tool boom panicked"));
    }
}
