//! The dispatch map: tool name → (`input_schema`, handler).
//!
//! Source: course s02 ("tool use"): `TOOL_HANDLERS[block.name](**block.input)`. Adding a tool
//! means adding one entry; the loop never changes. Here the map keeps insertion order, because the
//! order of `tools` in the request is part of each chapter's contract (course §3: "Tools, in order").
//!
//! A tool is written as a [`TypedTool`]: its `Args` type, what those arguments are about (a
//! [`Subject`]), and the run. The map parses the model's JSON `input` into `Args` **once**, before
//! anything looks at the call ([`DispatchMap::prepare`]), so the permission check, the log line and
//! the tool all see the same value. The map turns what happens into a `tool_result`:
//! - success → the text, no `is_error`;
//! - a [`ToolError`] (the input does not parse, or the run fails) → `Error: <message>` with
//!   `is_error: true` (course §0); an input that does not parse never runs;
//! - a name not in the map → `Unknown: NAME` with `is_error: true` (course §0; a chapter whose
//!   course chapter words it otherwise picks another [`UnknownTool`]);
//! - a handler that panics → `Error: tool NAME panicked`, and the process lives on.
//!
//! ```text
//!  tool_use ─► prepare: parse Args once ─► ToolCall {block, subject} ─► PreToolUse ─► run(Args)
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::messages::{ToolSpec, ToolUseBlock};
use crate::wording::UnknownTool;
use crate::workspace::Workspace;

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
/// object (an array is refused before serde, which would read it by position).
pub fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ToolError> {
    // serde fills a struct from an array by position; a tool's input is an object (Messages API,
    // `tool_use.input`), so `["rm x"]` must not become `{"command": "rm x"}`.
    if input.is_array() {
        return Err(ToolError::InvalidInput("invalid type: sequence, expected an object".into()));
    }
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

/// What a tool call's input is about, as the tool itself says ([`TypedTool::subject`]): what
/// the permission check judges and what the `[HOOK]` log line shows. No tool name is matched
/// anywhere else.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Subject {
    /// A shell command (`bash`'s `command`).
    Command(String),
    /// A path the tool reads, as the model gave it (`path` of `read_file`).
    Path(String),
    /// A path the tool writes, as the model gave it (`path` of `write_file`, `edit_file`).
    WrittenPath(String),
    /// A path pattern (`glob`'s `pattern`) and the folder its walk starts from
    /// ([`crate::tools::glob_base`]).
    PathPattern {
        /// The pattern as the model gave it.
        pattern: String,
        /// Its literal leading folder: `../../etc` for `../../etc/*.conf`, `.` for `**/*.rs`.
        base: String,
    },
    /// Text the call is about that no check looks at, shown in the tool line and the log (a
    /// subagent's prompt, a skill's name).
    Text(String),
    /// Nothing a check looks at: another tool, an unknown tool, or an input that did not parse.
    #[default]
    Nothing,
}

impl Subject {
    /// The text of the subject (the command, the path or the pattern), if any.
    pub fn text(&self) -> Option<&str> {
        match self {
            Subject::Command(text)
            | Subject::Path(text)
            | Subject::WrittenPath(text)
            | Subject::PathPattern { pattern: text, .. }
            | Subject::Text(text) => Some(text),
            Subject::Nothing => None,
        }
    }
}

/// A tool with typed arguments: the usual way to write one. The dispatch map parses the model's
/// `input` into [`TypedTool::Args`] once (errors name the field, see [`parse_input`]), asks the
/// tool for the [`Subject`] of those arguments, and later runs it with the same value. The blanket
/// `impl Tool for T` does that ceremony once for every tool.
pub trait TypedTool: Send + Sync + 'static {
    /// The input's shape. Its fields must agree with the spec's `input_schema`.
    type Args: DeserializeOwned + Send + 'static;

    /// `{name, description, input_schema}` as sent in the request's `tools`.
    fn spec(&self) -> ToolSpec;

    /// What `args` are about, for the permission check and the log line. Defaults to
    /// [`Subject::Nothing`].
    fn subject(&self, _args: &Self::Args) -> Subject {
        Subject::Nothing
    }

    /// The folder the call will run in when it is not the session's workspace (s13's tools in a
    /// task's worktree): the permission check then judges the call against it, since a command
    /// that writes `only.txt` there changes the worktree's file, not the workspace's. Defaults
    /// to `None`.
    fn folder(&self, _args: &Self::Args) -> Option<Workspace> {
        None
    }

    /// Runs the tool. Blocking work goes through [`run_blocking`]. Dropping the future cancels
    /// the call; a tool that starts processes must kill them when dropped.
    fn run(
        self: Arc<Self>,
        args: Self::Args,
    ) -> impl Future<Output = Result<String, ToolError>> + Send + 'static;

    /// `true` when the tool shows its own output to the user (the todo list), so the loop prints
    /// no preview of a successful result. Defaults to `false`.
    fn displays_output(&self) -> bool {
        false
    }
}

/// Runs blocking `work` (file I/O, a folder walk) of the tool `name` on tokio's blocking pool.
///
/// # Errors
/// What `work` returns, or `NAME stopped: …` when the blocking task could not finish.
pub async fn run_blocking(
    name: &'static str,
    work: impl FnOnce() -> Result<String, ToolError> + Send + 'static,
) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ToolError::failed(format!("{name} stopped: {e}")))?
}

/// A call whose input parsed: what it is about, and the run waiting for its turn.
pub struct Prepared {
    subject: Subject,
    folder: Option<Workspace>,
    run: Box<dyn FnOnce() -> ToolFuture<'static> + Send>,
}

/// A tool as the dispatch map holds it: a [`TypedTool`] with its argument type erased. Written
/// by hand only for a tool whose input has no fixed shape; otherwise implement [`TypedTool`].
pub trait Tool: Send + Sync {
    /// `{name, description, input_schema}` as sent in the request's `tools`.
    fn spec(&self) -> ToolSpec;
    /// Parses the model's raw `input` into the tool's arguments, once.
    ///
    /// # Errors
    /// [`ToolError::InvalidInput`] when the input does not fit the arguments.
    fn prepare(self: Arc<Self>, input: &Value) -> Result<Prepared, ToolError>;
    /// See [`TypedTool::displays_output`].
    fn displays_output(&self) -> bool {
        false
    }
}

impl<T: TypedTool> Tool for T {
    fn spec(&self) -> ToolSpec {
        TypedTool::spec(self)
    }
    fn prepare(self: Arc<Self>, input: &Value) -> Result<Prepared, ToolError> {
        let args: T::Args = parse_input(input)?;
        let subject = self.subject(&args);
        let folder = self.folder(&args);
        Ok(Prepared { subject, folder, run: Box::new(move || Box::pin(self.run(args))) })
    }
    fn displays_output(&self) -> bool {
        TypedTool::displays_output(self)
    }
}

/// A tool under another definition, whose input fields are renamed before the tool reads them
/// ([`DispatchMap::reshape`]).
struct Reshaped {
    inner: Arc<dyn Tool>,
    spec: ToolSpec,
    renames: Vec<(String, String)>,
}

impl Tool for Reshaped {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn prepare(self: Arc<Self>, input: &Value) -> Result<Prepared, ToolError> {
        let mut input = input.clone();
        if let Some(fields) = input.as_object_mut() {
            for (from, to) in &self.renames {
                if let Some(value) = fields.remove(from) {
                    fields.insert(to.clone(), value);
                }
            }
        }
        Arc::clone(&self.inner).prepare(&input)
    }

    fn displays_output(&self) -> bool {
        self.inner.displays_output()
    }
}

/// A tool built from a spec and a closure over the raw JSON input: for tests and small glue whose
/// input has no fixed shape. Its subject is [`Subject::Nothing`].
pub struct FnTool<F> {
    spec: ToolSpec,
    handler: F,
    displays: bool,
}

impl<F> FnTool<F>
where
    F: for<'a> Fn(&'a Value) -> ToolFuture<'a> + Send + Sync + 'static,
{
    /// A tool named `spec.name` whose handler is `handler`.
    pub fn new(spec: ToolSpec, handler: F) -> Self {
        Self { spec, handler, displays: false }
    }

    /// Marks the tool as one that shows its own output (see [`TypedTool::displays_output`]).
    pub fn displaying_output(mut self) -> Self {
        self.displays = true;
        self
    }
}

impl<F> TypedTool for FnTool<F>
where
    F: for<'a> Fn(&'a Value) -> ToolFuture<'a> + Send + Sync + 'static,
{
    type Args = Value;
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }
    async fn run(self: Arc<Self>, input: Value) -> Result<String, ToolError> {
        (self.handler)(&input).await
    }
    fn displays_output(&self) -> bool {
        self.displays
    }
}

/// One `tool_use` block after [`DispatchMap::prepare`]: the block (reachable through `Deref`),
/// what its input is about, and its run, or the error result it gets instead.
pub struct ToolCall {
    /// The model's `tool_use` block.
    pub block: ToolUseBlock,
    /// What the input is about, as the tool says; [`Subject::Nothing`] when the tool is unknown or
    /// the input did not parse.
    pub subject: Subject,
    /// Where the call runs when not in the session's workspace ([`TypedTool::folder`]).
    pub folder: Option<Workspace>,
    run: Option<Result<Box<dyn FnOnce() -> ToolFuture<'static> + Send>, ToolOutcome>>,
}

impl ToolCall {
    /// The error result this call gets instead of running (an unknown tool, an input that does not
    /// parse), or `None` when the tool will run.
    pub fn rejected(&self) -> Option<&ToolOutcome> {
        match &self.run {
            Some(Err(outcome)) => Some(outcome),
            _ => None,
        }
    }
}

impl std::ops::Deref for ToolCall {
    type Target = ToolUseBlock;
    fn deref(&self) -> &ToolUseBlock {
        &self.block
    }
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("block", &self.block)
            .field("subject", &self.subject)
            .field("folder", &self.folder.as_ref().map(Workspace::root))
            .finish()
    }
}

/// What one dispatched call produced: the `tool_result` content and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The `tool_result` content: the tool's output, `Error: …`, or `Unknown: NAME`.
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
///
/// A clone shares the tools (two reference counts, no copy), so a loop may take a copy for each
/// request and let an extension add a tool to it ([`crate::extension::Extension::before_request`]);
/// registering on a shared map copies it first.
#[derive(Clone, Default)]
pub struct DispatchMap {
    entries: Arc<Entries>,
    /// The tools' specs, built once at registration and shared by every request (building them
    /// anew each round cost a tenth of a round's instructions).
    specs: Arc<[ToolSpec]>,
    /// How a call to a tool not in the map is answered.
    unknown: UnknownTool,
}

/// The tools of a [`DispatchMap`], in order, and where each name is.
#[derive(Clone, Default)]
struct Entries {
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
        let spec = tool.spec();
        let mut specs = self.specs.to_vec();
        let entries = Arc::make_mut(&mut self.entries);
        match entries.index.get(&spec.name) {
            Some(&i) => {
                entries.tools[i] = tool;
                specs[i] = spec;
            }
            None => {
                entries.index.insert(spec.name.clone(), entries.tools.len());
                entries.tools.push(tool);
                specs.push(spec);
            }
        }
        self.specs = specs.into();
        self
    }

    /// Words the result of a call to a tool not in the map as `wording` says (the default is the
    /// course's early `Unknown: NAME`; see [`crate::wording`]).
    pub fn unknown_tool(mut self, wording: UnknownTool) -> Self {
        self.unknown = wording;
        self
    }

    /// Gives the registered tool `name` the description `text` in the request's `tools` (a
    /// chapter whose course chapter describes a base tool in its own words); nothing happens when
    /// no such tool is registered.
    pub fn describe(mut self, name: &str, text: &str) -> Self {
        if let Some(&i) = self.entries.index.get(name) {
            let mut specs = self.specs.to_vec();
            specs[i].description = text.to_owned();
            self.specs = specs.into();
        }
        self
    }

    /// Gives the registered tool `spec.name` the definition `spec` in the request's `tools` (a
    /// chapter whose course chapter defines a shared tool in its own words and schema), its input
    /// read with each `(from, to)` of `renames` renamed first: the course's s15 `task` takes
    /// `description` where s06's takes `prompt`. Nothing happens when no such tool is registered.
    pub fn reshape(mut self, spec: ToolSpec, renames: &[(&str, &str)]) -> Self {
        let Some(&i) = self.entries.index.get(&spec.name) else { return self };
        let renames = renames.iter().map(|(from, to)| ((*from).to_owned(), (*to).to_owned())).collect();
        let entries = Arc::make_mut(&mut self.entries);
        let inner = Arc::clone(&entries.tools[i]);
        let mut specs = self.specs.to_vec();
        specs[i] = spec.clone();
        entries.tools[i] = Arc::new(Reshaped { inner, spec, renames });
        self.specs = specs.into();
        self
    }

    /// Builder form of [`DispatchMap::register`].
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        self.register(tool);
        self
    }

    /// The tool definitions for the request's `tools`, in registration order. Each tool's
    /// [`Tool::spec`] is asked once, when it is registered; every request shares this list.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    /// The registered names, in order.
    pub fn names(&self) -> Vec<String> {
        self.specs.iter().map(|s| s.name.clone()).collect()
    }

    /// Whether the tool of that name shows its own output ([`Tool::displays_output`]).
    pub fn displays_output(&self, name: &str) -> bool {
        self.entries.index.get(name).is_some_and(|&i| self.entries.tools[i].displays_output())
    }

    /// Whether a tool of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.entries.index.contains_key(name)
    }

    /// Parses `block`'s input into its tool's arguments, once, and asks the tool what they are
    /// about. An unknown tool or an input that does not parse gives a call whose run is its error
    /// result.
    pub fn prepare(&self, block: &ToolUseBlock) -> ToolCall {
        let block = block.clone();
        let Some(&i) = self.entries.index.get(&block.name) else {
            let unknown = ToolOutcome::error(self.unknown.text(&block.name));
            return ToolCall { block, subject: Subject::Nothing, folder: None, run: Some(Err(unknown)) };
        };
        let tool = Arc::clone(&self.entries.tools[i]);
        match std::panic::catch_unwind(AssertUnwindSafe(|| tool.prepare(&block.input))) {
            Ok(Ok(Prepared { subject, folder, run })) => {
                ToolCall { block, subject, folder, run: Some(Ok(run)) }
            }
            Ok(Err(e)) => ToolCall {
                block,
                subject: Subject::Nothing,
                folder: None,
                run: Some(Err(ToolOutcome::error(format!("Error: {e}")))),
            },
            Err(_) => {
                let panicked = ToolOutcome::error(format!("Error: tool {} panicked", block.name));
                ToolCall { block, subject: Subject::Nothing, folder: None, run: Some(Err(panicked)) }
            }
        }
    }

    /// Runs a prepared call and turns whatever happens into a [`ToolOutcome`]. Never panics. A
    /// call runs at most once; running it again gives an error result.
    pub async fn run(&self, call: &mut ToolCall) -> ToolOutcome {
        match call.run.take() {
            Some(Ok(run)) => match AssertUnwindSafe(async move { run().await }).catch_unwind().await {
                Ok(Ok(output)) => ToolOutcome::ok(output),
                Ok(Err(e)) => ToolOutcome::error(format!("Error: {e}")),
                Err(_) => ToolOutcome::error(format!("Error: tool {} panicked", call.name)),
            },
            Some(Err(outcome)) => outcome,
            None => ToolOutcome::error(format!("Error: tool call {} already ran", call.id)),
        }
    }

    /// Runs one `tool_use` ([`DispatchMap::prepare`], then [`DispatchMap::run`]). Never panics.
    pub async fn dispatch(&self, block: &ToolUseBlock) -> ToolOutcome {
        let mut call = self.prepare(block);
        self.run(&mut call).await
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
            (call("nope", json!({})), "Unknown: nope", true),
        ];
        for (c, content, is_error) in cases {
            let out = map.dispatch(&c).await;
            assert_eq!(out, ToolOutcome { content: content.into(), is_error }, "{c:?}");
        }
    }

    #[tokio::test]
    async fn a_chapter_picks_the_unknown_tool_wording_and_a_description() {
        let map =
            DispatchMap::new().with(echo()).unknown_tool(UnknownTool::Long).describe("echo", "Say it again.");
        assert_eq!(map.dispatch(&call("nope", json!({}))).await, ToolOutcome::error("Unknown tool: nope"));
        assert_eq!(map.specs()[0].description, "Say it again.");
        assert_eq!(map.clone().describe("absent", "x").names(), ["echo"], "an absent tool is not added");
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
