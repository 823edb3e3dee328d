//! s13's six task tools, as the Lead calls them (owner `agent`) and, for `list_tasks`,
//! `claim_task` and `complete_task`, as a teammate does (owner: its name). COURSE-s10-s17 §4.3:
//! s10's names, descriptions and schemas, s10's graph rules, and s13's owner rules and texts
//! (`[~]` for in progress, `(worktree: NAME)`, `Error: Task {id} not found`, one task per owner).
//!
//! | tool | result |
//! |---|---|
//! | `create_task {subject, description?}` | `Created task_x: SUBJECT` |
//! | `update_task {task_id, addBlockedBy}` | `Updated task_x blockedBy: a, b` |
//! | `list_tasks {}` | `  [~] task_x: SUBJECT [in_progress] [alice] (blockedBy: a) (worktree: w)` lines |
//! | `get_task {task_id}` | the task file's JSON |
//! | `claim_task {task_id}` | `Claimed task_x (SUBJECT)`, or the first rule it breaks |
//! | `complete_task {task_id}` | `Completed task_x (SUBJECT)` + `\nUnblocked: …`, or why not |
//!
//! A failure is `Error: …` with `is_error` (the course's `except ValueError` / `FileNotFoundError`).

use std::sync::Arc;

use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool, run_blocking};
use agent_core::events::Level;
use agent_core::messages::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};
use tasks::owners::{error_text, render_list};

use crate::runtime::TeamRuntime;

/// Which task tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskToolKind {
    /// `create_task`.
    Create,
    /// `update_task`.
    Update,
    /// `list_tasks`.
    List,
    /// `get_task`.
    Get,
    /// `claim_task`.
    Claim,
    /// `complete_task`.
    Complete,
}

impl TaskToolKind {
    /// The six, in the course's order.
    pub const ALL: [TaskToolKind; 6] = [
        TaskToolKind::Create,
        TaskToolKind::Update,
        TaskToolKind::List,
        TaskToolKind::Get,
        TaskToolKind::Claim,
        TaskToolKind::Complete,
    ];

    /// The tool's definition, as the course's `TASK_TOOLS` holds it.
    pub fn spec(self) -> ToolSpec {
        let id_schema = || json!({"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]});
        let (name, description, input_schema) = match self {
            TaskToolKind::Create => (
                "create_task",
                "Create a task and return its runtime-generated ID.",
                json!({"type": "object", "properties": {"subject": {"type": "string"}, "description": {"type": "string"}},
                       "required": ["subject"], "additionalProperties": false}),
            ),
            TaskToolKind::Update => (
                "update_task",
                "Add dependencies using IDs returned by create_task.",
                json!({"type": "object", "properties": {
                        "task_id": {"type": "string", "pattern": "^task_[0-9a-f]{8}$"},
                        "addBlockedBy": {"type": "array", "items": {"type": "string", "pattern": "^task_[0-9a-f]{8}$"}, "minItems": 1}},
                       "required": ["task_id", "addBlockedBy"], "additionalProperties": false}),
            ),
            TaskToolKind::List => {
                ("list_tasks", "List shared tasks.", json!({"type": "object", "properties": {}}))
            }
            TaskToolKind::Get => ("get_task", "Get one task by ID.", id_schema()),
            TaskToolKind::Claim => ("claim_task", "Claim a ready task.", id_schema()),
            TaskToolKind::Complete => ("complete_task", "Complete an owned task.", id_schema()),
        };
        ToolSpec { name: name.into(), description: description.into(), input_schema }
    }
}

/// The task tool `kind` for `owner` (`agent` for the Lead, a teammate's name).
pub fn task_tool(runtime: &Arc<TeamRuntime>, kind: TaskToolKind, owner: &str) -> TaskTool {
    TaskTool { runtime: Arc::clone(runtime), kind, owner: owner.to_owned() }
}

/// The Lead's six task tools after the tools already in `map`.
pub fn lead_task_tools(runtime: &Arc<TeamRuntime>, map: DispatchMap) -> DispatchMap {
    TaskToolKind::ALL
        .into_iter()
        .fold(map, |map, kind| map.with(task_tool(runtime, kind, crate::state::LEAD_OWNER)))
}

/// One task tool of one owner.
pub struct TaskTool {
    runtime: Arc<TeamRuntime>,
    kind: TaskToolKind,
    owner: String,
}

/// The input of any task tool: each takes the fields it needs. Ids stay JSON values, so a number
/// or `../escape` is refused with the course's `Invalid task ID` text.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// `create_task`'s subject.
    #[serde(default)]
    subject: Option<String>,
    /// `create_task`'s description.
    #[serde(default)]
    description: Option<String>,
    /// The task of `update_task`, `get_task`, `claim_task`, `complete_task`.
    #[serde(default)]
    task_id: Option<Value>,
    /// `update_task`'s new dependencies.
    #[serde(default, rename = "addBlockedBy")]
    add_blocked_by: Option<Value>,
}

impl TaskTool {
    /// The tool's work, blocking (files and the store's lock): its result, or the error text.
    fn work(&self, args: TaskArgs) -> Result<String, String> {
        let state = self.runtime.state();
        let store = state.store();
        let missing = |field: &str| format!("Error: missing field `{field}`");
        let id = || args.task_id.clone().ok_or_else(|| missing("task_id"));
        let words = *self.runtime.words();
        let fail = |e: tasks::TaskError, id: &Value| error_text(&e, id, words.not_found);
        match self.kind {
            TaskToolKind::Create => {
                let subject = args.subject.ok_or_else(|| missing("subject"))?;
                let task = store
                    .create(&subject, args.description.as_deref().unwrap_or_default())
                    .map_err(|e| format!("Error: {e}"))?;
                self.runtime.say(Level::Info, &format!("  [create] {}", task.subject));
                Ok(format!("Created {}: {}", task.id, task.subject))
            }
            TaskToolKind::Update => {
                let id = id()?;
                let deps = args.add_blocked_by.ok_or_else(|| missing("addBlockedBy"))?;
                let task = store.update_dependencies(&id, &deps).map_err(|e| fail(e, &id))?;
                let listed =
                    if task.blocked_by.is_empty() { "(none)".to_owned() } else { task.blocked_by.join(", ") };
                self.runtime.say(Level::Info, &format!("  [update] {} blockedBy: {listed}", task.subject));
                Ok(format!("Updated {} blockedBy: {listed}", task.id))
            }
            TaskToolKind::List => {
                let listed = store.list().map_err(|e| format!("Error: {e}"))?;
                Ok(render_list(&listed, words.list))
            }
            TaskToolKind::Get => {
                let id = id()?;
                store.load(&id).map(|t| t.to_json()).map_err(|e| fail(e, &id))
            }
            TaskToolKind::Claim => {
                let id = id()?;
                state.claim_task(&id, &self.owner).map(|c| c.to_string()).map_err(|e| fail(e, &id))
            }
            TaskToolKind::Complete => {
                let id = id()?;
                state.complete_task(&id, &self.owner).map(|c| c.to_string()).map_err(|e| fail(e, &id))
            }
        }
    }
}

impl TypedTool for TaskTool {
    type Args = TaskArgs;

    fn spec(&self) -> ToolSpec {
        self.kind.spec()
    }

    fn subject(&self, args: &TaskArgs) -> Subject {
        match (&args.subject, &args.task_id) {
            (Some(subject), _) => Subject::Text(subject.clone()),
            (None, Some(Value::String(id))) => Subject::Text(id.clone()),
            _ => Subject::Nothing,
        }
    }

    async fn run(self: Arc<Self>, args: TaskArgs) -> Result<String, ToolError> {
        let name = match self.kind {
            TaskToolKind::Create => "create_task",
            TaskToolKind::Update => "update_task",
            TaskToolKind::List => "list_tasks",
            TaskToolKind::Get => "get_task",
            TaskToolKind::Claim => "claim_task",
            TaskToolKind::Complete => "complete_task",
        };
        let tool = Arc::clone(&self);
        run_blocking(name, move || {
            tool.work(args)
                .map_err(|text| ToolError::Failed(text.strip_prefix("Error: ").unwrap_or(&text).to_owned()))
        })
        .await
    }
}
