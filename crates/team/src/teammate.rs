//! A teammate: a persistent agent loop of its own, beside the Lead (the course's s13
//! `TeammateRuntime`, COURSE-s10-s17 §4.4).
//!
//! ```text
//!  spawn ─► WORK: inbox first, then agent_loop (no round cap; the inbox is read between rounds)
//!            │ an answer without tool calls
//!            ├─ plan pending ─────────────► waiting_approval ─┐
//!            └─ "result" then "idle_notification" to lead ───►├─ IDLE: wait for mail (2 s), else
//!                                                             │  claim the next ready task
//!            ◄── a message, a plan decision, an auto-claim ───┘
//!  shutdown_request (valid) ─► "Shutdown acknowledged." ─► loop ends: task back to pending
//! ```
//!
//! Each teammate is a task on the chapter's runtime with its own history, tools and listener
//! (its lines carry `[name] `). It never reads the terminal: where the permission check would ask,
//! the call gets `Permission required: ask Lead to run this command.` (or the path variant).
//! `bash`, `write_file` and `edit_file` wait for an approved plan when one is required. However
//! the loop ends (a shutdown, a failed request, a panic, the harness exiting), the task it held
//! goes back to `pending` and it leaves the team.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::agent::Agent;
use agent_core::approve::{Answer, Approver, Question, Reply};
use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::events::{Event, EventSink, Events, Level, Prefixed, line};
use agent_core::extension::{AfterBatch, Decision, Extension, LoopContext};
use agent_core::hooks::OUTSIDE_WORKSPACE;
use agent_core::messages::{ContentBlock, Message, MessagesResponse, ToolSpec};
use agent_core::turns::Expecting;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::bus::Message as Mail;
use crate::cwd::{CwdTools, Owner};
use crate::protocol::PlanGate;
use crate::runtime::TeamRuntime;
use crate::state::{LEAD, TeammateStatus};
use crate::tasktools::{TaskToolKind, task_tool};

/// What a teammate's call gets where the permission check would ask about a command.
pub const ASK_LEAD: &str = "Permission required: ask Lead to run this command.";

/// What a teammate's call gets where the permission check would ask about a path outside the
/// workspace.
pub const PATH_OUTSIDE: &str = "Permission required: path is outside the workspace.";

/// The tools a required plan keeps from running until it is approved.
pub const GATED_TOOLS: [&str; 3] = ["bash", "write_file", "edit_file"];

/// The teammate's SYSTEM prompt (course s13, exact).
pub fn teammate_system(name: &str, role: &str) -> String {
    format!(
        "You are '{name}', a {role}. Use tools to complete the assigned Task, then call complete_task and report a concise result. If the first user message contains [Assigned task], that Task is already claimed; do not call claim_task for it again. When asked for a plan, call submit_plan and wait for approval before bash or file changes. File and shell tools use the Task's working directory; that directory is not a sandbox. The runtime delivers your final text to Lead. Use send_message only for intermediate coordination, and address the coordinator as 'lead'."
    )
}

/// The teammate's SYSTEM prompt in the course's s15 (COURSE-s10-s17 §6.7, exact).
pub fn teammate_system_s15(name: &str, role: &str) -> String {
    format!(
        "You are '{name}', a {role}. Use tools to complete tasks. You can list and claim tasks from the board. If the initial message contains [Assigned task], it is already claimed; do not call claim_task for it again. The runtime runs every filesystem tool in the claimed task's working directory. When asked for a plan, submit it before bash, write_file, or edit_file and wait for approval. The runtime delivers your final text to Lead. Use send_message only for intermediate coordination, and address the coordinator as 'lead'."
    )
}

/// The text a required plan blocks a mutating tool with.
pub fn plan_blocked(gate: PlanGate) -> String {
    format!(
        "Blocked: plan status is {gate}. Submit or revise the plan and wait for approval before changing the workspace."
    )
}

/// How a teammate's WORK phase ended (the course's `work()` results).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The model answered without tool calls: the teammate idles (or waits for its plan's review).
    Idle,
    /// The loop ends: a shutdown was accepted, or the model could not be reached.
    Stop,
}

/// What one batch of a teammate's mail amounts to (the course's `handle_inbox`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Inbox {
    /// A valid shutdown request was acknowledged: the loop ends now.
    pub shutdown: bool,
    /// The notices for the next user message, in order (`[Message from lead] …`).
    pub notices: Vec<String>,
}

impl TeamRuntime {
    /// Handles `mail` for teammate `name` (the course's `handle_inbox`): a valid
    /// `shutdown_request` is acknowledged (`Shutdown acknowledged.` as `shutdown_response`) and
    /// ends the batch; a plan decision is applied or ignored; `plan_request` and anything else
    /// become notices.
    pub fn handle_inbox(&self, name: &str, mail: &[Mail]) -> Inbox {
        let mut inbox = Inbox::default();
        for message in mail {
            match message.kind.as_str() {
                "shutdown_request" => match self.state().apply_shutdown_request(name, message) {
                    Ok(request_id) => {
                        if let Err(e) = self.state().acknowledge_shutdown(name, &request_id) {
                            self.say(
                                Level::Error,
                                &format!("[bus] {name} -> lead: (shutdown_response) not delivered: {e}"),
                            );
                        }
                        self.poke();
                        inbox.shutdown = true;
                        return inbox;
                    }
                    Err(notice) => inbox.notices.push(notice.to_owned()),
                },
                "plan_approval_response" => {
                    let notice =
                        self.state().apply_plan_response(name, message).unwrap_or_else(str::to_owned);
                    inbox.notices.push(notice);
                }
                "plan_request" => inbox.notices.push(format!("[Plan required] {}", message.content)),
                _ => inbox.notices.push(format!("[Message from {}] {}", message.from, message.content)),
            }
        }
        inbox
    }

    /// Reads `name`'s mailbox now and handles it; a mailbox that cannot be read is reported and
    /// counts as empty (its lines stay for the next read).
    fn read_inbox(&self, name: &str) -> Inbox {
        match self.state().bus().read_inbox(name) {
            Ok(mail) => self.handle_inbox(name, &mail),
            Err(e) => {
                self.say(Level::Warning, &format!("[{name}] cannot read its mailbox: {e}"));
                Inbox::default()
            }
        }
    }
}

/// One teammate's loop state: its agent, its history, and its promise to the serving loop.
pub struct Teammate {
    name: String,
    runtime: Arc<TeamRuntime>,
    agent: Agent,
    /// The teammate's own `messages`, kept across WORK phases.
    pub messages: Vec<Message>,
    /// Set by the inbox check between rounds when a shutdown was accepted mid-work.
    stopped: Arc<AtomicBool>,
    /// Held while this teammate owes the Lead an event, so `-p` and `--demo` wait for it.
    expecting: Option<Expecting>,
}

impl Teammate {
    /// A teammate `name` with `role`, whose first user message is `first` (see
    /// [`TeamRuntime::first_message`]): its SYSTEM, its ten tools, its listener, the plan gate
    /// and the inbox check between rounds, and the course's hooks answering for no one.
    pub fn new(runtime: &Arc<TeamRuntime>, name: &str, role: &str, first: String) -> Self {
        let stopped = Arc::new(AtomicBool::new(false));
        let events: Events = Arc::new(TeammateEvents::new(name, Arc::clone(runtime.events())));
        let check = TeammateCheck {
            runtime: Arc::clone(runtime),
            name: name.to_owned(),
            stopped: Arc::clone(&stopped),
        };
        let agent = Agent::builder(runtime.model_for(name), runtime.model_id())
            .system((runtime.words().teammate_system)(name, role))
            .tools(teammate_tools(runtime, name))
            .extension(check)
            .extension(runtime.teammate_hooks(Arc::clone(&events)))
            .events(events)
            .build();
        Self {
            name: name.to_owned(),
            runtime: Arc::clone(runtime),
            agent,
            messages: vec![Message::user_text(first)],
            stopped,
            expecting: Some(runtime.turns().expect()),
        }
    }

    /// The WORK phase (the course's `work()` repeated until it answers `idle`): the inbox first,
    /// then the loop, whose rounds are not capped. An answer without tool calls sends its text as
    /// `result` (unless a plan waits for review) and then `idle_notification`.
    pub async fn work(&mut self) -> Phase {
        let state = Arc::clone(self.runtime.state());
        let inbox = self.runtime.read_inbox(&self.name);
        if inbox.shutdown {
            return Phase::Stop;
        }
        self.append(inbox.notices);
        state.set_status(&self.name, TeammateStatus::Working);
        self.hold_promise(true);
        let result = self.agent.agent_loop(&mut self.messages).await;
        if self.stopped.load(Ordering::SeqCst) {
            return Phase::Stop;
        }
        let last = match result {
            Ok(last) => last,
            Err(e) => {
                let text = format!("{}: {e}", crate::runtime::error_type(&e));
                self.runtime.send(&self.name, LEAD, &text, "error", Map::new());
                return Phase::Stop;
            }
        };
        let summary = first_text(&last);
        let gate = state.plan_gate(&self.name);
        if gate != PlanGate::Pending && !summary.is_empty() {
            self.runtime.send(&self.name, LEAD, &summary, "result", Map::new());
        }
        if gate == PlanGate::Pending {
            state.set_status(&self.name, TeammateStatus::WaitingApproval);
        } else {
            if let Err(e) = state.release_completed_assignment(&self.name) {
                self.runtime
                    .say(Level::Warning, &format!("[{}] cannot release its finished task: {e}", self.name));
            }
            state.set_status(&self.name, TeammateStatus::Idle);
            self.runtime.send(&self.name, LEAD, "Waiting for more work.", "idle_notification", Map::new());
        }
        Phase::Idle
    }

    /// The IDLE phase (the course's `wait_for_work`): mail first, waiting up to the scan
    /// interval; a message that adds work resumes WORK, a valid shutdown ends the loop
    /// (`false`); with no mail, the next ready task is claimed atomically and resumes WORK.
    pub async fn wait_for_work(&mut self) -> bool {
        let state = Arc::clone(self.runtime.state());
        loop {
            // Promise an event only while one can still come without the Lead: a ready task
            // this teammate may claim, or a plan waiting for review.
            let owed = state.plan_gate(&self.name) == PlanGate::Pending
                || state.scan_unclaimed_tasks().is_ok_and(|ready| !ready.is_empty());
            self.hold_promise(owed);
            let mail = match state.bus().wait_for_messages(&self.name, self.runtime.idle_scan()).await {
                Ok(mail) => mail,
                Err(e) => {
                    self.runtime
                        .say(Level::Warning, &format!("[{}] cannot read its mailbox: {e}", self.name));
                    Vec::new()
                }
            };
            if !mail.is_empty() {
                let inbox = self.runtime.handle_inbox(&self.name, &mail);
                if inbox.shutdown {
                    return false;
                }
                if !inbox.notices.is_empty() {
                    self.append(inbox.notices);
                    return true;
                }
                continue;
            }
            let task = match state.claim_next_task(&self.name) {
                Ok(Some(task)) => task,
                Ok(None) => continue,
                Err(e) => {
                    self.runtime.say(Level::Warning, &format!("[{}] cannot scan the tasks: {e}", self.name));
                    continue;
                }
            };
            let cwd = match state.assignment_cwd(&self.name) {
                Ok(cwd) => cwd.display().to_string(),
                Err(e) => format!("(unusable: {e})"),
            };
            self.append(vec![format!(
                "[Auto-claimed task {}] {}\n{}\nWork directory: {cwd}",
                task.id, task.subject, task.description
            )]);
            self.runtime
                .say(Level::Info, &format!("  [idle] {} claimed {}: {}", self.name, task.id, task.subject));
            return true;
        }
    }

    /// The whole loop: WORK, then IDLE and WORK again, until a shutdown or a failure.
    pub async fn run(mut self) {
        loop {
            if self.work().await == Phase::Stop {
                break;
            }
            if !self.wait_for_work().await {
                break;
            }
        }
    }

    /// `notices` as one user message, when there are any.
    fn append(&mut self, notices: Vec<String>) {
        if !notices.is_empty() {
            self.messages.push(Message::user_text(notices.join("\n")));
        }
    }

    /// Takes or drops this teammate's promise of an event to the serving loop.
    fn hold_promise(&mut self, owed: bool) {
        match (owed, self.expecting.is_some()) {
            (true, false) => self.expecting = Some(self.runtime.turns().expect()),
            (false, true) => self.expecting = None,
            _ => {}
        }
    }
}

/// The first text block of an answer, trimmed (the course's `_last_assistant_text`).
fn first_text(response: &MessagesResponse) -> String {
    response
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.trim().to_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The ten teammate tools, in the course's order: the five base tools (in the task's folder),
/// `send_message`, `submit_plan`, `list_tasks`, `claim_task`, `complete_task`.
pub fn teammate_tools(runtime: &Arc<TeamRuntime>, name: &str) -> DispatchMap {
    let owner = Owner::Teammate(name.to_owned());
    CwdTools::new(Arc::clone(runtime.state()), owner, runtime.tool_options())
        .map()
        .with(TeammateSend { runtime: Arc::clone(runtime), name: name.to_owned() })
        .with(SubmitPlan { runtime: Arc::clone(runtime), name: name.to_owned() })
        .with(task_tool(runtime, TaskToolKind::List, name))
        .with(task_tool(runtime, TaskToolKind::Claim, name))
        .with(task_tool(runtime, TaskToolKind::Complete, name))
}

/// The input of both `send_message` tools.
#[derive(Debug, Deserialize)]
pub struct SendArgs {
    /// The recipient.
    pub to: String,
    /// The message.
    pub content: String,
}

/// The `send_message` schema, the Lead's and a teammate's.
pub fn send_schema() -> Value {
    json!({"type": "object", "properties": {"to": {"type": "string"}, "content": {"type": "string"}}, "required": ["to", "content"]})
}

/// A teammate's `send_message`: to `lead` or an active teammate.
struct TeammateSend {
    runtime: Arc<TeamRuntime>,
    name: String,
}

impl TypedTool for TeammateSend {
    type Args = SendArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "send_message".into(),
            description: "Send an intermediate message to 'lead' or an active teammate.".into(),
            input_schema: send_schema(),
        }
    }

    fn subject(&self, args: &SendArgs) -> Subject {
        Subject::Text(args.to.clone())
    }

    async fn run(self: Arc<Self>, args: SendArgs) -> Result<String, ToolError> {
        let sent = self.runtime.state().teammate_send_message(&self.name, &args.to, &args.content);
        self.runtime.poke();
        sent.map_err(|e| ToolError::failed(e.to_string()))
    }
}

/// The input of `submit_plan`.
#[derive(Debug, Deserialize)]
pub struct PlanArgs {
    /// The plan.
    pub plan: String,
}

/// `submit_plan`: a plan for the Lead to review, with a request id.
struct SubmitPlan {
    runtime: Arc<TeamRuntime>,
    name: String,
}

impl TypedTool for SubmitPlan {
    type Args = PlanArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "submit_plan".into(),
            description: "Submit a work plan for Lead approval.".into(),
            input_schema: json!({"type": "object", "properties": {"plan": {"type": "string"}}, "required": ["plan"]}),
        }
    }

    async fn run(self: Arc<Self>, args: PlanArgs) -> Result<String, ToolError> {
        let submitted = self.runtime.state().send_plan_submission(&self.name, &args.plan);
        self.runtime.poke();
        submitted.map_err(|e| ToolError::failed(e.to_string()))
    }
}

/// A teammate's check around its loop: the plan gate before `bash`, `write_file` and
/// `edit_file` (first, as the course checks it before any hook), and the mailbox between two
/// rounds (the course's `work()` reads it before every request), where a valid shutdown ends
/// the loop at once.
struct TeammateCheck {
    runtime: Arc<TeamRuntime>,
    name: String,
    stopped: Arc<AtomicBool>,
}

#[async_trait::async_trait]
impl Extension for TeammateCheck {
    fn pre_tool_use(&mut self, call: &agent_core::dispatch::ToolCall) -> Decision {
        if !GATED_TOOLS.contains(&call.name.as_str()) {
            return Decision::Continue;
        }
        let gate = self.runtime.state().plan_gate(&self.name);
        if gate.allows_changes() { Decision::Continue } else { Decision::Block(plan_blocked(gate)) }
    }

    async fn after_tool_batch(&mut self, context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        let inbox = self.runtime.read_inbox(&self.name);
        if inbox.shutdown {
            self.stopped.store(true, Ordering::SeqCst);
            return Ok(AfterBatch::EndTurn);
        }
        if !inbox.notices.is_empty() {
            context.history.push(Message::user_text(inbox.notices.join("\n")));
        }
        Ok(AfterBatch::Continue)
    }
}

/// The approver of a teammate's permission hook: no one is asked. `--yes` and `--no` answer as
/// they do for the Lead; otherwise a question about a path gets [`PATH_OUTSIDE`] and any other
/// [`ASK_LEAD`]. The session's allowances (`--allow`, the answer `a`) are asked first, by the
/// [`agent_core::permission::SessionApprover`] around it.
#[derive(Debug, Clone, Copy)]
pub struct TeammateApprover {
    /// `Some(answer)` under `--yes` / `--no`.
    pub fixed: Option<bool>,
    /// What a question gets when no answer is fixed ([`ASK_LEAD`] in s13).
    pub refusal: &'static str,
    /// What a question about a path outside the workspace gets ([`PATH_OUTSIDE`] in s13).
    pub outside: &'static str,
}

impl Approver for TeammateApprover {
    fn ask(&mut self, _question: &str) -> bool {
        self.fixed.unwrap_or(false)
    }

    fn reply(&mut self, question: &Question) -> Reply {
        match self.fixed {
            Some(true) => Reply::Answer(Answer::Yes),
            Some(false) => Reply::Answer(Answer::No),
            None if question.reason == OUTSIDE_WORKSPACE => Reply::Refused(self.outside.to_owned()),
            None => Reply::Refused(self.refusal.to_owned()),
        }
    }
}

/// A teammate's listener: its tool calls, results and mechanism lines go to the terminal with
/// `[name] ` in front; its text is shown whole once a response is complete, so two agents'
/// streams never mix mid-line; its requests and usage stay quiet (the Lead's spinner and usage
/// line are the Lead's).
pub struct TeammateEvents {
    prefixed: Prefixed,
    prefix: String,
    inner: Events,
    streamed: Mutex<String>,
}

impl TeammateEvents {
    /// The listener of teammate `name`, passing on to `inner`.
    pub fn new(name: &str, inner: Events) -> Self {
        let prefix = format!("[{name}] ");
        Self {
            prefixed: Prefixed::new(prefix.clone(), Arc::clone(&inner)),
            prefix,
            inner,
            streamed: Mutex::default(),
        }
    }

    fn say(&self, level: Level, text: &str) {
        let lines: Vec<String> = text.lines().map(|l| format!("{}{l}", self.prefix)).collect();
        line(&*self.inner, level, &lines.join("\n"));
    }
}

impl EventSink for TeammateEvents {
    fn on_event(&self, event: &Event<'_>) {
        match event {
            Event::TextDelta(text) => {
                self.streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push_str(text);
            }
            Event::Response { result: Ok(response), streamed } => {
                let kept = std::mem::take(
                    &mut *self.streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                );
                let text = if *streamed { kept } else { response.text() };
                if !text.trim().is_empty() {
                    self.say(Level::Detail, text.trim());
                }
            }
            Event::Response { result: Err(e), .. } => {
                self.say(Level::Warning, &format!("request failed: {e}"))
            }
            Event::ToolCall { .. }
            | Event::ToolResult { .. }
            | Event::Line(..)
            | Event::Injected(_)
            | Event::Retry { .. } => {
                self.prefixed.on_event(event);
            }
            _ => {}
        }
    }
}
