//! The six task tools of the course's s10, in its order, with its names, descriptions, schemas
//! and result texts (COURSE-s10-s17 §1.3), and `/tasks`.
//!
//! | tool | result |
//! |---|---|
//! | `create_task {subject, description?}` | `Created task_x: SUBJECT` |
//! | `update_task {task_id, addBlockedBy}` | `Updated task_x blockedBy: a, b` (or `(none)`) |
//! | `list_tasks {}` | one line per task, `[ ] task_x: SUBJECT [pending] (blockedBy: a)` |
//! | `get_task {task_id}` | the task file's JSON |
//! | `claim_task {task_id}` | `Claimed task_x (SUBJECT)`, `Blocked by: ['task_a']`, `Task task_x is completed, cannot claim` |
//! | `complete_task {task_id}` | `Completed task_x (SUBJECT)` + `\nUnblocked: a, b`, or why not |
//!
//! A failure is the course's `Error: …` ([`TaskError`]'s text). Each tool says what it did on
//! the terminal as the course prints it (`  [create] SUBJECT`, `  [claim] S -> in_progress
//! (owner: agent)`, `  [unblocked] a, b`).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use agent_cli::chapter::Setup;
use agent_cli::repl::SlashCommand;
use agent_cli::ui::Ui;
use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool, run_blocking};
use agent_core::events::{Events, Level, line};
use agent_core::messages::ToolSpec;

use crate::store::{Claim, Completion, Listed, Status, Task, TaskError, TaskStore};

/// The owner the s10 agent claims and completes as (the course's `owner="agent"`).
pub const AGENT_OWNER: &str = "agent";

/// The `list_tasks` result when there is no task.
pub const NO_TASKS: &str = "No tasks. Use create_task to add some.";

/// The task store and the six tools over it, sharing one [`TaskStore`].
#[derive(Clone)]
pub struct TaskTools {
    store: Arc<TaskStore>,
    events: Events,
}

/// The seed of the ids the offline demo draws (`--demo`): the recorded model turns name the
/// ids that `create_task` returned, so the demo's store draws the same ones every run.
pub const DEMO_ID_SEED: u64 = 10;

impl TaskTools {
    /// The tools of a chapter run: the store of `setup`'s workspace, reporting on its terminal;
    /// in the offline demo the ids come from [`DEMO_ID_SEED`], otherwise at random.
    pub fn new(setup: &Setup) -> Self {
        let store = if setup.demo {
            let mut rng = fastrand::Rng::with_seed(DEMO_ID_SEED);
            TaskStore::with_ids(&setup.workspace, move || rng.u32(..))
        } else {
            TaskStore::new(&setup.workspace)
        };
        Self::with_store(store, setup.events.clone())
    }

    /// The tools over `store`, saying what they do on `events`.
    pub fn with_store(store: TaskStore, events: Events) -> Self {
        Self { store: Arc::new(store), events }
    }

    /// The store the tools share.
    pub fn store(&self) -> &TaskStore {
        &self.store
    }

    /// `map` with the six tools added after its own, in the course's order: `create_task`,
    /// `update_task`, `list_tasks`, `get_task`, `claim_task`, `complete_task`.
    pub fn add_to(&self, map: DispatchMap) -> DispatchMap {
        map.with(CreateTask(self.clone()))
            .with(UpdateTask(self.clone()))
            .with(ListTasks(self.clone()))
            .with(GetTask(self.clone()))
            .with(ClaimTask(self.clone()))
            .with(CompleteTask(self.clone()))
    }

    /// `/tasks`: the graph as it is on disk ([`render_graph`]).
    pub fn commands(&self) -> Vec<SlashCommand> {
        let store = Arc::clone(&self.store);
        vec![SlashCommand::new(
            "tasks",
            "the task graph in .tasks/: each task's status, owner, and what blocks it",
            move |ui: &Ui| match store.list() {
                Ok(listed) => ui.say(&render_graph(&store, &listed)),
                Err(e) => ui.error(&e.to_string()),
            },
        )]
    }

    fn say(&self, text: &str) {
        line(&*self.events, Level::Info, text);
    }

    /// Runs `work` on the blocking pool (file I/O, the folder lock), as the tool `name`.
    async fn blocking(
        self,
        name: &'static str,
        work: impl FnOnce(&Self) -> Result<String, TaskError> + Send + 'static,
    ) -> Result<String, ToolError> {
        run_blocking(name, move || work(&self).map_err(|e| ToolError::failed(e.to_string()))).await
    }
}

fn spec(name: &str, description: &str, input_schema: Value) -> ToolSpec {
    ToolSpec { name: name.into(), description: description.into(), input_schema }
}

/// The input schema of `get_task`, `claim_task` and `complete_task`.
fn task_id_schema() -> Value {
    json!({"type": "object", "properties": {"task_id": {"type": "string"}}, "required": ["task_id"]})
}

/// `create_task` (the course's `run_create_task`).
struct CreateTask(TaskTools);

/// The input of `create_task`. The schema allows no other key (`additionalProperties: false`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    subject: String,
    #[serde(default)]
    description: String,
}

impl TypedTool for CreateTask {
    type Args = CreateArgs;
    fn spec(&self) -> ToolSpec {
        spec(
            "create_task",
            "Create a task and return its runtime-generated ID.",
            json!({"type": "object", "properties": {"subject": {"type": "string"}, "description": {"type": "string"}},
                   "required": ["subject"], "additionalProperties": false}),
        )
    }
    fn subject(&self, args: &CreateArgs) -> Subject {
        Subject::Text(args.subject.clone())
    }
    async fn run(self: Arc<Self>, args: CreateArgs) -> Result<String, ToolError> {
        self.0
            .clone()
            .blocking("create_task", move |tools| {
                let task = tools.store.create(&args.subject, &args.description)?;
                tools.say(&format!("  [create] {}", task.subject));
                Ok(format!("Created {}: {}", task.id, task.subject))
            })
            .await
    }
}

/// `update_task` (the course's `run_update_task`): the second phase of the graph.
struct UpdateTask(TaskTools);

/// The input of `update_task`: kept as JSON, so that a wrong type gets the course's message
/// (`addBlockedBy must be a list of task IDs`, `Invalid task ID: 5`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateArgs {
    task_id: Value,
    #[serde(rename = "addBlockedBy")]
    add_blocked_by: Value,
}

impl TypedTool for UpdateTask {
    type Args = UpdateArgs;
    fn spec(&self) -> ToolSpec {
        let id = json!({"type": "string", "pattern": "^task_[0-9a-f]{8}$"});
        spec(
            "update_task",
            "Add dependencies using IDs returned by create_task.",
            json!({"type": "object",
                   "properties": {"task_id": id, "addBlockedBy": {"type": "array", "items": id, "minItems": 1}},
                   "required": ["task_id", "addBlockedBy"], "additionalProperties": false}),
        )
    }
    fn subject(&self, args: &UpdateArgs) -> Subject {
        let deps = match &args.add_blocked_by {
            Value::Array(items) if items.iter().all(Value::is_string) => {
                items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
            }
            other => pyjson::repr(other),
        };
        Subject::Text(format!("{} blockedBy += {deps}", py_text(&args.task_id)))
    }
    async fn run(self: Arc<Self>, args: UpdateArgs) -> Result<String, ToolError> {
        self.0
            .clone()
            .blocking("update_task", move |tools| {
                let task = tools.store.update_dependencies(&args.task_id, &args.add_blocked_by)?;
                let deps =
                    if task.blocked_by.is_empty() { "(none)".to_owned() } else { task.blocked_by.join(", ") };
                tools.say(&format!("  [update] {} blockedBy: {deps}", task.subject));
                Ok(format!("Updated {} blockedBy: {deps}", task.id))
            })
            .await
    }
}

/// `list_tasks` (the course's `run_list_tasks`).
struct ListTasks(TaskTools);

/// `list_tasks` takes nothing; whatever the model sends is ignored.
#[derive(Deserialize)]
struct NoArgs {}

impl TypedTool for ListTasks {
    type Args = NoArgs;
    fn spec(&self) -> ToolSpec {
        spec(
            "list_tasks",
            "List tasks with status, owner, and dependencies.",
            json!({"type": "object", "properties": {}}),
        )
    }
    async fn run(self: Arc<Self>, _: NoArgs) -> Result<String, ToolError> {
        self.0.clone().blocking("list_tasks", |tools| Ok(render_list(&tools.store.list()?))).await
    }
}

/// The `list_tasks` result: [`NO_TASKS`], or one line per task file in file-name order,
/// `{marker} {id}: {subject} [{status}]{ [owner]}{ (blockedBy: a, b)}`. A file that is not a
/// readable task is a line `[?] {id}: cannot be read: {error}` (ours: the course's list fails
/// whole).
pub fn render_list(listed: &[Listed]) -> String {
    if listed.is_empty() {
        return NO_TASKS.to_owned();
    }
    listed
        .iter()
        .map(|entry| match entry {
            Ok(task) => task_line(task),
            Err((id, error)) => format!("[?] {id}: cannot be read: {error}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn task_line(task: &Task) -> String {
    let owner =
        task.owner.as_deref().filter(|o| !o.is_empty()).map(|o| format!(" [{o}]")).unwrap_or_default();
    let deps = if task.blocked_by.is_empty() {
        String::new()
    } else {
        format!(" (blockedBy: {})", task.blocked_by.join(", "))
    };
    format!("{} {}: {} [{}]{owner}{deps}", task.status.marker(), task.id, task.subject, task.status)
}

/// `/tasks`: a summary line, then each task with its status and owner, and for a pending task
/// with dependencies whether it is ready or what still blocks it (the subjects and statuses of
/// its unfinished dependencies).
pub fn render_graph(store: &TaskStore, listed: &[Listed]) -> String {
    if listed.is_empty() {
        return format!("{}: no tasks yet.", crate::TASKS_DIR);
    }
    let tasks: Vec<&Task> = listed.iter().filter_map(|e| e.as_ref().ok()).collect();
    let count = |status: Status| tasks.iter().filter(|t| t.status == status).count();
    let mut lines = vec![format!(
        "{}: {} tasks: {} pending, {} in progress, {} completed{}",
        crate::TASKS_DIR,
        listed.len(),
        count(Status::Pending),
        count(Status::InProgress),
        count(Status::Completed),
        match listed.len() - tasks.len() {
            0 => String::new(),
            n => format!(", {n} unreadable"),
        }
    )];
    let describe = |id: &str| match tasks.iter().find(|t| t.id == id) {
        Some(t) => format!("{id} {:?} {}", t.subject, t.status),
        None => format!("{id} (missing)"),
    };
    for entry in listed {
        let task = match entry {
            Ok(task) => task,
            Err((id, error)) => {
                lines.push(format!("[?] {id}: cannot be read: {error}"));
                continue;
            }
        };
        let owner = task.owner.as_deref().map(|o| format!(", owner {o}")).unwrap_or_default();
        let mut text =
            format!("{} {}: {} [{}{owner}]", task.status.marker(), task.id, task.subject, task.status);
        if task.status == Status::Pending && !task.blocked_by.is_empty() {
            let waiting = store.incomplete_dependencies(task);
            if waiting.is_empty() {
                text.push_str(&format!(
                    "\n      ready: its dependencies ({}) are completed",
                    task.blocked_by.join(", ")
                ));
            } else {
                let names: Vec<String> = waiting.iter().map(|id| describe(id)).collect();
                text.push_str(&format!("\n      blocked by: {}", names.join("; ")));
            }
        }
        lines.push(text);
    }
    lines.join("\n")
}

/// `get_task` (the course's `run_get_task`): the task file's JSON.
struct GetTask(TaskTools);

/// The input of `get_task`, `claim_task`, `complete_task`: kept as JSON, so that a wrong type
/// gets the course's `Invalid task ID: …`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskIdArgs {
    task_id: Value,
}

fn id_subject(args: &TaskIdArgs) -> Subject {
    Subject::Text(py_text(&args.task_id))
}

/// A value as the log line shows it: a string as it is, anything else as Python's `repr`.
fn py_text(value: &Value) -> String {
    value.as_str().map_or_else(|| pyjson::repr(value), str::to_owned)
}

impl TypedTool for GetTask {
    type Args = TaskIdArgs;
    fn spec(&self) -> ToolSpec {
        spec("get_task", "Get a task by ID.", task_id_schema())
    }
    fn subject(&self, args: &TaskIdArgs) -> Subject {
        id_subject(args)
    }
    async fn run(self: Arc<Self>, args: TaskIdArgs) -> Result<String, ToolError> {
        self.0.clone().blocking("get_task", move |tools| Ok(tools.store.load(&args.task_id)?.to_json())).await
    }
}

/// `claim_task` (the course's `run_claim_task`, owner `agent`).
struct ClaimTask(TaskTools);

impl TypedTool for ClaimTask {
    type Args = TaskIdArgs;
    fn spec(&self) -> ToolSpec {
        spec("claim_task", "Claim a pending task whose dependencies are complete.", task_id_schema())
    }
    fn subject(&self, args: &TaskIdArgs) -> Subject {
        id_subject(args)
    }
    async fn run(self: Arc<Self>, args: TaskIdArgs) -> Result<String, ToolError> {
        self.0
            .clone()
            .blocking("claim_task", move |tools| {
                Ok(match tools.store.claim(&args.task_id, AGENT_OWNER)? {
                    Claim::Claimed(task) => {
                        tools.say(&format!(
                            "  [claim] {} -> in_progress (owner: {AGENT_OWNER})",
                            task.subject
                        ));
                        format!("Claimed {} ({})", task.id, task.subject)
                    }
                    Claim::NotPending(task) => format!("Task {} is {}, cannot claim", task.id, task.status),
                    Claim::Blocked(deps) => format!("Blocked by: {}", pyjson::repr_list(&deps)),
                })
            })
            .await
    }
}

/// `complete_task` (the course's `run_complete_task`, owner `agent`).
struct CompleteTask(TaskTools);

impl TypedTool for CompleteTask {
    type Args = TaskIdArgs;
    fn spec(&self) -> ToolSpec {
        spec("complete_task", "Complete the task claimed by this agent.", task_id_schema())
    }
    fn subject(&self, args: &TaskIdArgs) -> Subject {
        id_subject(args)
    }
    async fn run(self: Arc<Self>, args: TaskIdArgs) -> Result<String, ToolError> {
        self.0
            .clone()
            .blocking("complete_task", move |tools| {
                Ok(match tools.store.complete(&args.task_id, AGENT_OWNER)? {
                    Completion::Completed { task, unblocked } => {
                        tools.say(&format!("  [complete] {}", task.subject));
                        let mut text = format!("Completed {} ({})", task.id, task.subject);
                        if !unblocked.is_empty() {
                            text.push_str(&format!("\nUnblocked: {}", unblocked.join(", ")));
                            tools.say(&format!("  [unblocked] {}", unblocked.join(", ")));
                        }
                        text
                    }
                    Completion::NotInProgress(task) => {
                        format!("Task {} is {}, cannot complete", task.id, task.status)
                    }
                    Completion::OwnedByOther(task) => format!(
                        "Task {} is owned by {}, not {AGENT_OWNER}",
                        task.id,
                        task.owner.as_deref().unwrap_or("None")
                    ),
                })
            })
            .await
    }
}
