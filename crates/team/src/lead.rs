//! The Lead: its eighteen tools, its wake turns and the REPL's `/team` and `/inbox` (the
//! course's s13 `TOOLS`, `consume_lead_inbox` and CLI wake, COURSE-s10-s17 §4.1, §4.3).
//!
//! ```text
//!  tools: bash read_file write_file edit_file glob                 (in the Lead's task folder)
//!         create_task update_task list_tasks get_task claim_task complete_task   (owner agent)
//!         spawn_teammate list_teammates send_message request_shutdown
//!         request_plan review_plan create_worktree
//!
//!  teammate mail ─► [team] [Team events] turn queued ─► it starts: the mailbox is read,
//!  responses matched (match_response) ─► [wake: N team event(s) -> new turn] ─► the model reads
//!  "[Team events]\n[result] alice: done\n…"
//! ```
//!
//! The course's CLI polls the Lead's mailbox every 0.25 s between prompts; here a send to `lead`
//! queues one automatic turn ([`TeamRuntime::poke`]), which the REPL runs while it waits for the
//! user, and `-p` and `--demo` while a teammate still owes an event. Whatever arrives before that
//! turn starts is delivered in it, as the course batches what arrived during a turn.

use std::sync::Arc;

use agent_cli::repl::SlashCommand;
use agent_cli::ui::Ui;
use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::events::Level;
use agent_core::extension::{AnswerContext, Decision, Extension, LoopContext, Recovery};
use agent_core::messages::{Message, MessageContent, Role, ToolSpec};
use agent_core::sanitize::one_line;
use serde::Deserialize;
use serde_json::json;

use crate::cwd::{CwdTools, Owner};
use crate::protocol::format_team_events;
use crate::runtime::{TeamRuntime, WAKE_PROMPT};
use crate::state::{LEAD, LEAD_OWNER};
use crate::tasktools::lead_task_tools;
use crate::teammate::send_schema;

/// The Lead's eighteen tools, in the course's order.
pub fn lead_tools(runtime: &Arc<TeamRuntime>) -> DispatchMap {
    let base = CwdTools::new(Arc::clone(runtime.state()), Owner::Lead, runtime.tool_options()).map();
    team_tools(runtime, lead_task_tools(runtime, base))
}

/// The Lead's seven team tools after the tools already in `map`, in the course's order:
/// `spawn_teammate`, `list_teammates`, `send_message`, `request_shutdown`, `request_plan`,
/// `review_plan`, `create_worktree`.
pub fn team_tools(runtime: &Arc<TeamRuntime>, map: DispatchMap) -> DispatchMap {
    let rt = || Arc::clone(runtime);
    map.with(TeamTool { runtime: rt(), kind: TeamToolKind::Spawn })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::List })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::Send })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::Shutdown })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::RequestPlan })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::ReviewPlan })
        .with(TeamTool { runtime: rt(), kind: TeamToolKind::Worktree })
}

/// Which team tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TeamToolKind {
    Spawn,
    List,
    Send,
    Shutdown,
    RequestPlan,
    ReviewPlan,
    Worktree,
}

impl TeamToolKind {
    fn spec(self) -> ToolSpec {
        let (name, description, input_schema) = match self {
            TeamToolKind::Spawn => (
                "spawn_teammate",
                "Spawn a persistent teammate.",
                json!({"type": "object", "properties": {
                        "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                        "role": {"type": "string"},
                        "prompt": {"type": "string"},
                        "task_id": {"type": "string", "pattern": "^task_[0-9a-f]{8}$"},
                        "require_plan": {"type": "boolean"}},
                       "required": ["name", "role", "prompt"]}),
            ),
            TeamToolKind::List => {
                ("list_teammates", "List active teammates.", json!({"type": "object", "properties": {}}))
            }
            TeamToolKind::Send => ("send_message", "Message a teammate.", send_schema()),
            TeamToolKind::Shutdown => (
                "request_shutdown",
                "Ask a teammate to shut down.",
                json!({"type": "object", "properties": {"teammate": {"type": "string"}}, "required": ["teammate"]}),
            ),
            TeamToolKind::RequestPlan => (
                "request_plan",
                "Require a teammate plan before workspace changes.",
                json!({"type": "object", "properties": {"teammate": {"type": "string"}, "task": {"type": "string"}},
                       "required": ["teammate", "task"]}),
            ),
            TeamToolKind::ReviewPlan => (
                "review_plan",
                "Approve or reject a plan.",
                json!({"type": "object", "properties": {
                        "request_id": {"type": "string"}, "approve": {"type": "boolean"}, "feedback": {"type": "string"}},
                       "required": ["request_id", "approve"]}),
            ),
            TeamToolKind::Worktree => (
                "create_worktree",
                "Create and bind a task worktree.",
                json!({"type": "object", "properties": {
                        "name": {"type": "string", "pattern": "^(?!.*\\.\\.)[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", "maxLength": 64},
                        "task_id": {"type": "string"}},
                       "required": ["name", "task_id"], "additionalProperties": false}),
            ),
        };
        ToolSpec { name: name.into(), description: description.into(), input_schema }
    }

    fn name(self) -> &'static str {
        match self {
            TeamToolKind::Spawn => "spawn_teammate",
            TeamToolKind::List => "list_teammates",
            TeamToolKind::Send => "send_message",
            TeamToolKind::Shutdown => "request_shutdown",
            TeamToolKind::RequestPlan => "request_plan",
            TeamToolKind::ReviewPlan => "review_plan",
            TeamToolKind::Worktree => "create_worktree",
        }
    }
}

/// One of the Lead's seven team tools.
struct TeamTool {
    runtime: Arc<TeamRuntime>,
    kind: TeamToolKind,
}

/// The input of any team tool: each reads the fields its schema names.
#[derive(Debug, Default, Deserialize)]
struct TeamArgs {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    require_plan: Option<bool>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    teammate: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    approve: Option<bool>,
    #[serde(default)]
    feedback: Option<String>,
}

/// `field` of `args`, or the error a missing required field gives.
fn required<T>(field: Option<T>, name: &str) -> Result<T, ToolError> {
    field.ok_or_else(|| ToolError::InvalidInput(format!("missing field `{name}`")))
}

impl TeamTool {
    /// The tool's work: the course's result text (refusals included, as the course returns
    /// them), or a [`ToolError`] for input that does not fit and mail that cannot be written.
    fn work(&self, args: TeamArgs) -> Result<String, ToolError> {
        let runtime = &self.runtime;
        let state = runtime.state();
        let bus_error = |e: crate::bus::BusError| ToolError::failed(e.to_string());
        match self.kind {
            TeamToolKind::Spawn => {
                let (name, role, prompt) = (
                    required(args.name, "name")?,
                    required(args.role, "role")?,
                    required(args.prompt, "prompt")?,
                );
                Ok(runtime.spawn_teammate(
                    &name,
                    &role,
                    &prompt,
                    args.task_id.as_deref(),
                    args.require_plan.unwrap_or(false),
                ))
            }
            TeamToolKind::List => Ok(state.list_teammates()),
            TeamToolKind::Send => {
                let (to, content) = (required(args.to, "to")?, required(args.content, "content")?);
                state.lead_send_message(&to, &content).map_err(bus_error)
            }
            TeamToolKind::Shutdown => {
                let teammate = required(args.teammate, "teammate")?;
                state.send_shutdown_request(&teammate).map_err(bus_error)
            }
            TeamToolKind::RequestPlan => {
                let (teammate, task) = (required(args.teammate, "teammate")?, required(args.task, "task")?);
                state.send_plan_request(&teammate, &task).map_err(bus_error)
            }
            TeamToolKind::ReviewPlan => {
                let (id, approve) =
                    (required(args.request_id, "request_id")?, required(args.approve, "approve")?);
                state.send_plan_review(&id, approve, &args.feedback.unwrap_or_default()).map_err(bus_error)
            }
            TeamToolKind::Worktree => {
                let (name, task_id) = (required(args.name, "name")?, required(args.task_id, "task_id")?);
                match state.create_worktree(&name, &serde_json::Value::String(task_id)) {
                    Ok(created) => Ok(created.to_string()),
                    // The course returns its refusals as text: `Error: …` stays an error result,
                    // `Git error: …` and the partial-operation texts are results as they are.
                    Err(e) => {
                        let text = e.to_string();
                        match text.strip_prefix("Error: ") {
                            Some(rest) => Err(ToolError::Failed(rest.to_owned())),
                            None => Ok(text),
                        }
                    }
                }
            }
        }
    }
}

impl TypedTool for TeamTool {
    type Args = TeamArgs;

    fn spec(&self) -> ToolSpec {
        self.kind.spec()
    }

    fn subject(&self, args: &TeamArgs) -> Subject {
        let what =
            args.name.as_ref().or(args.to.as_ref()).or(args.teammate.as_ref()).or(args.request_id.as_ref());
        what.map_or(Subject::Nothing, |w| Subject::Text(w.clone()))
    }

    async fn run(self: Arc<Self>, args: TeamArgs) -> Result<String, ToolError> {
        if self.kind == TeamToolKind::Spawn {
            // Starts a task on this runtime: not on the blocking pool.
            return self.work(args);
        }
        let tool = Arc::clone(&self);
        agent_core::dispatch::run_blocking(self.kind.name(), move || tool.work(args)).await
    }
}

/// The Lead's side of the team in its loop: a wake turn's mailbox is read when the turn starts
/// (responses matched before the model sees them) and becomes the turn's message; when a turn
/// ends, a completed task's lease is released (the course's `release_completed_assignment("agent")`)
/// and `[all teammates shut down]` is said once the last one has left.
pub struct LeadWake {
    runtime: Arc<TeamRuntime>,
    /// The events of the wake turn starting now, for its first request.
    events: Option<String>,
    /// Teammates were active at the end of an earlier turn.
    had_teammates: bool,
}

impl LeadWake {
    /// The Lead's wake extension on `runtime`.
    pub fn new(runtime: Arc<TeamRuntime>) -> Self {
        Self { runtime, events: None, had_teammates: false }
    }

    /// The end of a Lead turn, answered or failed.
    fn turn_ended(&mut self) {
        let state = self.runtime.state();
        if let Err(e) = state.release_completed_assignment(LEAD_OWNER) {
            self.runtime.say(Level::Warning, &format!("cannot release the Lead's finished task: {e}"));
        }
        if !state.teammates().is_empty() {
            self.had_teammates = true;
        } else if self.had_teammates && !state.bus().peek(LEAD) {
            self.runtime.say(Level::Mechanism, "[all teammates shut down]");
            self.had_teammates = false;
        }
    }
}

#[async_trait::async_trait]
impl Extension for LeadWake {
    fn user_prompt_submit(&mut self, prompt: &str) -> Decision {
        if prompt != WAKE_PROMPT {
            return Decision::Continue;
        }
        self.runtime.wake_started();
        match self.runtime.state().consume_lead_inbox() {
            Ok(mail) if !mail.is_empty() => {
                self.runtime
                    .say(Level::Mechanism, &format!("[wake: {} team event(s) -> new turn]", mail.len()));
                self.events = Some(format_team_events(&mail));
                Decision::Continue
            }
            Ok(_) => Decision::Block("[wake] the team events were already delivered".into()),
            Err(e) => Decision::Block(format!("[wake] cannot read the Lead's mailbox: {e}")),
        }
    }

    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        let Some(text) = self.events.take() else { return Ok(()) };
        if let Some(last) = context.history.last_mut()
            && last.role == Role::User
            && matches!(&last.content, MessageContent::Text(t) if t == WAKE_PROMPT)
        {
            *last = Message::user_text(text);
        }
        Ok(())
    }

    async fn on_request_error(
        &mut self,
        _context: &mut LoopContext<'_>,
        _error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        self.turn_ended();
        Ok(Recovery::GiveUp)
    }

    async fn after_answer(&mut self, _context: &mut AnswerContext<'_>) {
        self.turn_ended();
    }
}

/// `/team` and `/inbox`.
pub fn commands(runtime: &Arc<TeamRuntime>) -> Vec<SlashCommand> {
    let (team, inbox) = (Arc::clone(runtime), Arc::clone(runtime));
    vec![
        SlashCommand::new("team", "the teammates: state, task and working directory", move |ui: &Ui| {
            ui.say(&describe_team(&team));
        }),
        SlashCommand::new("inbox", "what waits in each mailbox, nothing consumed", move |ui: &Ui| {
            ui.say(&describe_inbox(&inbox));
        }),
    ]
}

/// `/team`: one line per active teammate, `name  state  task  folder`.
pub fn describe_team(runtime: &TeamRuntime) -> String {
    let state = runtime.state();
    let teammates = state.teammates();
    if teammates.is_empty() {
        return "No active teammates.".to_owned();
    }
    teammates
        .iter()
        .map(|(name, status)| {
            let (task, folder) = match state.lease_of(name) {
                Some(lease) => {
                    let subject = state
                        .store()
                        .load(&serde_json::Value::String(lease.task_id.clone()))
                        .map(|t| format!(" ({})", one_line(&t.subject, 40)))
                        .unwrap_or_default();
                    (format!("{}{subject}", lease.task_id), lease.cwd.display().to_string())
                }
                None => ("no task".to_owned(), "-".to_owned()),
            };
            format!("{name}: {status}  task: {task}  cwd: {folder}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/inbox`: each mailbox with mail, and its messages (`[type] from: content`).
pub fn describe_inbox(runtime: &TeamRuntime) -> String {
    let pending = runtime.state().bus().pending();
    if pending.is_empty() {
        return "Every mailbox is empty.".to_owned();
    }
    pending
        .iter()
        .map(|(agent, mail)| {
            let lines: Vec<String> = mail
                .iter()
                .map(|m| format!("  [{}] {}: {}", m.kind, m.from, one_line(&m.content, 80)))
                .collect();
            format!("{agent}: {} message(s)\n{}", mail.len(), lines.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
