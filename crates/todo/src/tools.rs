//! The planning layer as tools: the `todo` and `todo_write` tools for `agent-core`'s dispatch
//! map, each with its nag as a loop [`Extension`] and the REPL's `/todos` command (`agent-cli`)
//! showing its list. A tool, its nag and its command come together, so a chapter cannot register
//! one tool and nag about (or show) another.
//!
//! Source: course s03 (`TOOL_HANDLERS["todo"]`, `rounds_since_todo`) and s05 (`todo_write`, reset
//! after remind). The managers and the counter are pure logic in [`crate::todo`], [`crate::todo_write`] and
//! [`crate::nag`]; this module only wires them.

use std::sync::{Arc, Mutex};

use agent_cli::repl::SlashCommand;
use agent_cli::ui::{DIM, GREEN, Ui, YELLOW, paint};
use agent_core::dispatch::{FnTool, Tool, ToolError};
use agent_core::error::ApiError;
use agent_core::extension::{CallRecord, Extension, LoopContext};
use agent_core::messages::Message;
use agent_core::messages::ToolSpec;
use agent_core::sanitize::sanitize;
use serde_json::Value;

use crate::Status;
use crate::nag::{Counting, Nag, REMINDER};
use crate::todo::{self, TodoManager};
use crate::todo_write::{self, TodoWriteManager};

/// The s03 `todo` tool, its nag and its `/todos` command. The tool: input
/// `{"items": [{id, text, status}, …]}`, output the render or `Error: <message>`; each successful
/// update is also shown on the terminal (coloured markers on a terminal, plain text when piped).
/// The nag: [`Nag::s03`] about `todo`. The command shows the list as it stands.
pub fn todo_tool(ui: Ui) -> (impl Tool, NagExtension, SlashCommand) {
    let spec = ToolSpec {
        name: todo::TODO_TOOL_NAME.to_owned(),
        description: todo::TODO_TOOL_DESCRIPTION.to_owned(),
        input_schema: todo::todo_tool_schema(),
    };
    let manager = Arc::new(Mutex::new(TodoManager::new()));
    (
        plan_tool(spec, "items", None, ui, Arc::clone(&manager), TodoManager::update, TodoManager::render),
        NagExtension::new(Nag::s03(), todo::TODO_TOOL_NAME, forget(&manager, TodoManager::new)),
        todos_command(None, manager, TodoManager::render),
    )
}

/// The s05 `todo_write` tool and its nag. The tool: input `{"todos": …}` where `todos` is a JSON
/// array, a JSON string of one, or a Python-literal string; output the render or
/// `Error: <message>`, the state unchanged on error; a successful update is shown under
/// `## Current Tasks`. The nag: [`Nag::s05`] (reset after remind) about `todo_write`.
pub fn todo_write_tool(ui: Ui) -> (impl Tool, NagExtension, SlashCommand) {
    let spec = todo_write_spec(todo_write::TODO_WRITE_DESCRIPTION, todo_write::todo_write_schema());
    todo_write_with(ui, spec, TodoWriteManager::update, Nag::s05())
}

/// The course's s15 `todo_write`: s05's tool under s15's definition (`Create and manage a task
/// list for the current session.`, no `maxItems` or `minLength`), checks and result
/// ([`TodoWriteManager::update_s15`]: `Updated N todos`); the terminal still shows the list under
/// `## Current Tasks`. The nag counts calls ([`Nag::s15`]); `/todos` is s05's.
pub fn todo_write_tool_s15(ui: Ui) -> (impl Tool, NagExtension, SlashCommand) {
    let spec = todo_write_spec(todo_write::TODO_WRITE_DESCRIPTION_S15, todo_write::todo_write_schema_s15());
    todo_write_with(ui, spec, TodoWriteManager::update_s15, Nag::s15())
}

/// `todo_write`'s definition with `description` and `input_schema`.
fn todo_write_spec(description: &str, input_schema: Value) -> ToolSpec {
    ToolSpec {
        name: todo_write::TODO_WRITE_TOOL_NAME.to_owned(),
        description: description.to_owned(),
        input_schema,
    }
}

/// A `todo_write` tool defined by `spec` whose calls `update` the plan, with `nag` about it and
/// `/todos`; the terminal shows the list under `## Current Tasks` after each update.
fn todo_write_with<E: std::fmt::Display + 'static>(
    ui: Ui,
    spec: ToolSpec,
    update: fn(&mut TodoWriteManager, &Value) -> Result<String, E>,
    nag: Nag,
) -> (impl Tool + use<E>, NagExtension, SlashCommand) {
    let heading = Some(todo_write::DISPLAY_HEADING);
    let manager = Arc::new(Mutex::new(TodoWriteManager::new()));
    let tool = plan_tool(spec, "todos", heading, ui, Arc::clone(&manager), update, TodoWriteManager::render);
    let nag =
        NagExtension::new(nag, todo_write::TODO_WRITE_TOOL_NAME, forget(&manager, TodoWriteManager::new));
    (tool, nag, todos_command(heading, manager, TodoWriteManager::render))
}

/// The REPL's `/todos`: shows the shared manager's list as [`show_plan`] does after an update.
fn todos_command<M: Send + 'static>(
    title: Option<&'static str>,
    manager: Arc<Mutex<M>>,
    render: fn(&M) -> String,
) -> SlashCommand {
    SlashCommand::new("todos", "the todo list as the model last wrote it", move |ui: &Ui| {
        let text = render(&manager.lock().unwrap_or_else(|p| p.into_inner()));
        show_plan(ui, title, &text);
    })
}

/// One plan tool: takes `input[field]`, runs `update` on the shared manager (whose text is the
/// tool's result), and shows `show`'s render of the plan under `title`.
fn plan_tool<M, E>(
    spec: ToolSpec,
    field: &'static str,
    title: Option<&'static str>,
    ui: Ui,
    manager: Arc<Mutex<M>>,
    update: fn(&mut M, &Value) -> Result<String, E>,
    show: fn(&M) -> String,
) -> impl Tool + use<M, E>
where
    M: Send + 'static,
    E: std::fmt::Display + 'static,
{
    FnTool::new(spec, move |input: &Value| {
        let manager = Arc::clone(&manager);
        let ui = ui.clone();
        Box::pin(async move {
            let value = input
                .get(field)
                .ok_or_else(|| ToolError::InvalidInput(format!("missing field `{field}`")))?;
            let mut manager = manager.lock().unwrap_or_else(|p| p.into_inner());
            let result = update(&mut manager, value)
                .map_err(|e| ToolError::failed(agent_core::tools::cap_output(&e.to_string())))?;
            show_plan(&ui, title, &show(&manager));
            // The result may echo the model's items: capped like any tool output.
            Ok(agent_core::tools::cap_output(&result))
        })
    })
    .displaying_output()
}

/// Shows a plan's render on stdout, under `title` when given: on a terminal the `[x]` marker is
/// green, `[>]` yellow and the `(DONE/TOTAL completed)` line dim; piped, the same text uncoloured.
/// The render holds the model's item texts, so it is sanitised first (`agent_core::sanitize`).
fn show_plan(ui: &Ui, title: Option<&str>, render: &str) {
    let color = ui.color_out;
    let render = sanitize(render);
    let mut text = String::new();
    if let Some(t) = title {
        text.push_str(t);
        text.push('\n');
    }
    for line in render.lines() {
        let painted = [(Status::Completed, GREEN), (Status::InProgress, YELLOW)]
            .into_iter()
            .find_map(|(status, colour)| {
                let marker = status.marker();
                line.strip_prefix(marker).map(|rest| format!("{}{rest}", paint(color, colour, marker)))
            })
            .unwrap_or_else(|| if line.starts_with('(') { paint(color, DIM, line) } else { line.to_owned() });
        text.push_str(&painted);
        text.push('\n');
    }
    ui.print(&text);
}

/// The nag as a loop extension: after each round, counts rounds without a call to `tool` and
/// appends [`REMINDER`] (as the round's last block; `agent_loop` guarantees the position) when the
/// [`Nag`] says so. A call counts when it ran, even if it returned an error; a call blocked by a
/// `PreToolUse` hook does not (course §3).
pub struct NagExtension {
    nag: Nag,
    /// [`Counting::Calls`]: a reminder is due before the next request.
    due: bool,
    tool: &'static str,
    /// Empties the plan its tool keeps, for a new conversation.
    forget: Box<dyn Fn() + Send>,
}

impl NagExtension {
    /// Nags about `tool` (`todo` in s03, `todo_write` in s05) with `nag`'s threshold and policy;
    /// `forget` empties the tool's plan on `/clear`. Private: [`todo_tool`] and
    /// [`todo_write_tool`] pair each tool with its nag.
    fn new(nag: Nag, tool: &'static str, forget: Box<dyn Fn() + Send>) -> Self {
        Self { nag, tool, forget, due: false }
    }
}

/// What empties a shared manager: it is replaced by `empty()`.
fn forget<M: Send + 'static>(manager: &Arc<Mutex<M>>, empty: fn() -> M) -> Box<dyn Fn() + Send> {
    let manager = Arc::clone(manager);
    Box::new(move || *manager.lock().unwrap_or_else(|p| p.into_inner()) = empty())
}

#[async_trait::async_trait]
impl Extension for NagExtension {
    fn begin_turn(&mut self) {
        self.nag.begin_turn();
    }

    /// `/clear`: the model no longer knows the old plan, so it goes, and the count starts again.
    fn new_conversation(&mut self) {
        (self.forget)();
        self.nag.begin_turn();
    }

    /// [`Counting::Calls`] (the course's s15): the reminder due after the last round joins the
    /// history as a user message of its own, before the next request.
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        if std::mem::take(&mut self.due) {
            context.history.push(Message::user_text(REMINDER));
        }
        Ok(())
    }

    fn after_round(&mut self, calls: &[CallRecord]) -> Option<String> {
        if self.nag.counting() == Counting::Calls {
            // s15: the calls that ran, `compact` aside (the loop takes it, past every hook); the
            // reminder is a user message of its own at the top of the next round.
            let counted = calls.iter().filter(|c| c.ran && c.name != "compact");
            self.due |= self.nag.after_calls(counted.map(|c| c.name == self.tool));
            return None;
        }
        let used = calls.iter().any(|c| c.ran && c.name == self.tool);
        self.nag.after_round(used).then(|| REMINDER.to_owned())
    }
}
