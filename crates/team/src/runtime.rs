//! The team in a chapter run: the shared [`TeamState`], the model and tools teammates are built
//! from, the queue the Lead's wake turns go through, and the teammates' loops (the course's s13
//! module globals and `spawn_teammate_thread`, COURSE-s10-s17 §4.3–4.4).
//!
//! ```text
//!  Lead ── spawn_teammate ──► register, claim the task, first message ──► a task on the runtime
//!    ▲                                                                        │ send(…, "lead")
//!    └── [Team events] turn ◄── TurnSender ◄── poke: mail waits for lead ◄───┘
//! ```
//!
//! Every teammate is ended with the chapter: when the harness exits (`q`, Ctrl-D, the end of
//! `-p` or `--demo`), the runtime drops its loop, and leaving gives its task back to `pending`;
//! on SIGTERM or SIGHUP the signal handler does the same before it exits
//! ([`agent_core::process::before_terminate_exit`]); its commands are ended with every other.
//! A loop that fails (a request the model refused, a panic) reports `error` to the Lead and
//! leaves the same way.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_cli::chapter::{ApprovalArgs, Setup};
use agent_core::error::ApiError;
use agent_core::events::{Events, Level, line};
use agent_core::hooks::{self, HookRegistry, HookSet, InsideWorkspace};
use agent_core::model::{Model, ReplayModel};
use agent_core::permission::{AlwaysAllowed, SessionApprover};
use agent_core::tools::ToolOptions;
use agent_core::turns::{AutoTurn, TurnSender};
use agent_core::wording::DenyList;
use futures_util::FutureExt;
use serde_json::{Map, Value};

use tasks::TaskStore;

use tasks::owners::{ListStyle, NotFoundWording};

use crate::bus::{BusError, Message as Mail};
use crate::state::{LEAD, NameRefusal, TeamState};
use crate::teammate::{Teammate, TeammateApprover};

/// How long an idle teammate waits for mail before it looks for a ready task (the course's
/// `IDLE_SCAN_INTERVAL`).
pub const IDLE_SCAN_INTERVAL: Duration = Duration::from_secs(2);

/// The prompt of the Lead's wake turn as queued; the events replace it when the turn starts
/// ([`crate::lead::LeadWake`]), so the model reads what waited then.
pub const WAKE_PROMPT: &str = "[Team events]";

/// The source name of the Lead's wake turns (shown as `[team] [Team events]`).
pub const WAKE_SOURCE: &str = "team";

/// The seed of the request ids in the offline demo: its recorded Lead reviews the plan by the
/// id the teammate's `submit_plan` drew.
pub const DEMO_REQUEST_SEED: u64 = 13;

/// The Anthropic Python SDK's name for `error`, as the course's `{Type}: {e}` shows it.
pub fn error_type(error: &ApiError) -> &'static str {
    match error {
        ApiError::Api { status, .. } | ApiError::Http { status, .. } => match status {
            400 => "BadRequestError",
            401 => "AuthenticationError",
            403 => "PermissionDeniedError",
            404 => "NotFoundError",
            409 => "ConflictError",
            413 => "RequestTooLargeError",
            422 => "UnprocessableEntityError",
            429 => "RateLimitError",
            529 => "OverloadedError",
            s if *s >= 500 => "InternalServerError",
            _ => "APIStatusError",
        },
        ApiError::Transport(_) => "APIConnectionError",
        ApiError::IdleTimeout(_) | ApiError::Deadline(_) => "APITimeoutError",
        ApiError::AfterOutput(inner) => error_type(inner),
        _ => "APIError",
    }
}

/// Where teammates' models come from.
enum Models {
    /// The chapter's model, shared with the Lead.
    Shared(Arc<dyn Model>),
    /// The offline demo: each teammate replays its own recorded turns (the Lead's are the
    /// chapter's), so the order in which concurrent agents ask does not matter.
    Demo { lead: Arc<dyn Model>, teammates: HashMap<String, Arc<dyn Model>> },
}

/// How a team words what differs between the course's s13 and its s15 (COURSE-s10-s17 §6.7): the
/// refusals of a turn or a teammate no one can answer for, the task tools' listing and missing
/// task, the teammate's SYSTEM prompt. One team mechanism, two sets of words.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// What a call that would ask gets during the Lead's `[Team events]` turn (`None`: the
    /// runtime's default refusal).
    pub wake_refusal: Option<&'static str>,
    /// What a teammate's call that would ask gets (s13: ask the Lead).
    pub teammate_refusal: &'static str,
    /// What a teammate's file call outside the workspace gets.
    pub outside_refusal: &'static str,
    /// How `list_tasks` lists the board.
    pub list: ListStyle,
    /// How a task tool names a task without a file.
    pub not_found: NotFoundWording,
    /// The teammate's SYSTEM prompt, from its name and role.
    pub teammate_system: fn(&str, &str) -> String,
    /// How a teammate's permission hook refuses a deny-list command.
    pub deny_list: DenyList,
}

impl Words {
    /// The course's s13 words.
    pub fn s13() -> Self {
        Self {
            wake_refusal: None,
            teammate_refusal: crate::teammate::ASK_LEAD,
            outside_refusal: crate::teammate::PATH_OUTSIDE,
            list: ListStyle::Teams,
            not_found: NotFoundWording::Capitalised,
            teammate_system: crate::teammate::teammate_system,
            deny_list: DenyList::Pattern,
        }
    }

    /// The course's s15 words: no one can be asked during an asynchronous turn or from a
    /// teammate's loop (`Permission denied: interactive shell approval is unavailable during an
    /// asynchronous turn`), s15's board listing and `task {id} not found`, s15's teammate prompt.
    pub fn s15() -> Self {
        Self {
            wake_refusal: Some(ASYNC_REFUSAL),
            teammate_refusal: ASYNC_REFUSAL,
            outside_refusal: "Permission denied: path is outside the workspace",
            list: ListStyle::Integrated,
            not_found: NotFoundWording::Lowercase,
            teammate_system: crate::teammate::teammate_system_s15,
            deny_list: DenyList::Quoted,
        }
    }
}

/// The course's s15 refusal of a question no one can answer: an asynchronous turn's or a
/// teammate's.
pub const ASYNC_REFUSAL: &str =
    "Permission denied: interactive shell approval is unavailable during an asynchronous turn";

/// The team of one chapter run, shared by the Lead's tools, its wake extension and every
/// teammate loop.
pub struct TeamRuntime {
    state: Arc<TeamState>,
    models: Models,
    model_id: String,
    events: Events,
    options: ToolOptions,
    inside: InsideWorkspace,
    workdir: String,
    /// `--yes` / `--no` for a teammate's permission hook.
    fixed_answer: Option<bool>,
    allowed: AlwaysAllowed,
    turns: TurnSender,
    /// A wake turn is queued and has not started: no second one is queued.
    wake_queued: AtomicBool,
    idle_scan: Duration,
    /// The loops of the teammates spawned in this run, by name, to end them.
    loops: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// The course chapter's words.
    words: Words,
}

impl TeamRuntime {
    /// The team of `setup`'s workspace: the task store for teams (with the demo's seeded ids),
    /// the bus, the protocols (with the demo's seeded request ids), teammates answering
    /// permission questions as `approval` says for no one at the terminal, and in the demo the
    /// teammates' recorded turns, `demo_teammates` (name, JSONL). Registers the SIGTERM cleanup.
    ///
    /// # Errors
    /// A recorded teammate's turns that do not parse.
    pub fn start(
        setup: &Setup,
        approval: &ApprovalArgs,
        demo_teammates: &[(&str, &str)],
    ) -> Result<Arc<Self>, String> {
        Self::start_with(setup, approval, demo_teammates, Words::s13())
    }

    /// [`TeamRuntime::start`] in `words` (the course's s15: [`Words::s15`]).
    ///
    /// # Errors
    /// A recorded teammate's turns that do not parse.
    pub fn start_with(
        setup: &Setup,
        approval: &ApprovalArgs,
        demo_teammates: &[(&str, &str)],
        words: Words,
    ) -> Result<Arc<Self>, String> {
        // The demo's recorded turns name the ids its store draws: s10's seed, as s10's demo.
        let store = if setup.demo {
            let mut rng = fastrand::Rng::with_seed(tasks::tools::DEMO_ID_SEED);
            TaskStore::with_ids(&setup.workspace, move || rng.u32(..))
        } else {
            TaskStore::new(&setup.workspace)
        }
        .for_teams();
        let mut state = TeamState::new(&setup.workspace, store, Arc::clone(&setup.events));
        let models = if setup.demo {
            state = state.with_request_seed(DEMO_REQUEST_SEED);
            let mut teammates = HashMap::new();
            for (name, turns) in demo_teammates {
                let model = ReplayModel::from_jsonl(format!("{name}'s demo turns"), turns)
                    .map_err(|e| e.to_string())?;
                teammates.insert((*name).to_owned(), Arc::new(model) as Arc<dyn Model>);
            }
            Models::Demo { lead: Arc::clone(&setup.model), teammates }
        } else {
            Models::Shared(Arc::clone(&setup.model))
        };
        for program in &approval.allow {
            setup.allowed.allow(program, agent_core::permission::Source::Flag);
        }
        let runtime = Arc::new(Self {
            state: Arc::new(state),
            models,
            model_id: setup.model_id.clone(),
            events: Arc::clone(&setup.events),
            options: setup.tool_options.clone(),
            inside: setup.inside_workspace(),
            workdir: setup.workdir(),
            fixed_answer: if approval.yes {
                Some(true)
            } else if approval.no {
                Some(false)
            } else {
                None
            },
            allowed: setup.allowed.clone(),
            turns: setup.turns.clone(),
            wake_queued: AtomicBool::new(false),
            idle_scan: IDLE_SCAN_INTERVAL,
            loops: Mutex::default(),
            words,
        });
        let state = Arc::clone(&runtime.state);
        agent_core::process::before_terminate_exit(move || release_everyone(&state));
        Ok(runtime)
    }

    /// The course chapter's words.
    pub fn words(&self) -> &Words {
        &self.words
    }

    /// The shared state.
    pub fn state(&self) -> &Arc<TeamState> {
        &self.state
    }

    /// The terminal's listener.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The `model` of each request.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The base tools' limits and sandbox.
    pub fn tool_options(&self) -> &ToolOptions {
        &self.options
    }

    /// Where automatic turns and promises of them go.
    pub fn turns(&self) -> &TurnSender {
        &self.turns
    }

    /// How long an idle teammate waits for mail before it scans for a task.
    pub fn idle_scan(&self) -> Duration {
        self.idle_scan
    }

    /// The model teammate `name` talks to.
    pub fn model_for(&self, name: &str) -> Arc<dyn Model> {
        match &self.models {
            Models::Shared(model) => Arc::clone(model),
            Models::Demo { lead, teammates } => Arc::clone(teammates.get(name).unwrap_or(lead)),
        }
    }

    /// The course's hooks for a teammate: the log line and the permission check on its
    /// listener, answering for no one ([`TeammateApprover`]); no `UserPromptSubmit` or `Stop`
    /// hook (the course's teammates run neither).
    pub fn teammate_hooks(&self, events: Events) -> HookRegistry {
        let approver = SessionApprover::new(
            Box::new(TeammateApprover {
                fixed: self.fixed_answer,
                refusal: self.words.teammate_refusal,
                outside: self.words.outside_refusal,
            }),
            self.allowed.clone(),
            Arc::clone(&events),
        );
        let set = HookSet {
            deny_list: self.words.deny_list,
            outside: Some(self.state.workspace().clone()),
            no_prompt_or_stop_hooks: true,
            unhooked_tools: Vec::new(),
        };
        hooks::course_hooks_with(
            events,
            Box::new(approver),
            Arc::clone(&self.inside),
            self.workdir.clone(),
            set,
        )
    }

    /// Reports `text` on the terminal.
    pub fn say(&self, level: Level, text: &str) {
        line(&*self.events, level, text);
    }

    /// Sends a message on the bus; mail for `lead` queues the Lead's wake turn.
    ///
    /// # Errors
    /// As [`crate::bus::MessageBus::send`].
    pub fn try_send(
        &self,
        from: &str,
        to: &str,
        content: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Mail, BusError> {
        let sent = self.state.bus().send(from, to, content, kind, metadata);
        if to == LEAD {
            self.poke();
        }
        sent
    }

    /// [`TeamRuntime::try_send`] for the runtime's own messages (results, notifications,
    /// acknowledgements): a message that cannot be written is reported on the terminal.
    pub fn send(&self, from: &str, to: &str, content: &str, kind: &str, metadata: Map<String, Value>) {
        if let Err(e) = self.try_send(from, to, content, kind, metadata) {
            self.say(Level::Error, &format!("[bus] {from} -> {to}: ({kind}) not delivered: {e}"));
        }
    }

    /// Queues the Lead's wake turn when mail waits for it and none is queued (the course's CLI
    /// polls `BUS.peek("lead")`; here the send itself wakes the Lead, at once and only once).
    pub fn poke(&self) {
        if self.state.bus().peek(LEAD) && !self.wake_queued.swap(true, Ordering::SeqCst) {
            let turn = AutoTurn::new(WAKE_SOURCE, WAKE_PROMPT);
            let turn = match self.words.wake_refusal {
                Some(text) => turn.refusing(text),
                None => turn,
            };
            let queued = self.turns.push(turn);
            if !queued {
                self.wake_queued.store(false, Ordering::SeqCst);
            }
        }
    }

    /// The queued wake turn has started: the next mail queues another.
    pub fn wake_started(&self) {
        self.wake_queued.store(false, Ordering::SeqCst);
    }

    /// The first user message of a teammate (course s13): `prompt`, the assigned task and its
    /// working directory, and the plan requirement.
    pub fn first_message(
        &self,
        name: &str,
        prompt: &str,
        task_id: Option<&str>,
        require_plan: bool,
    ) -> String {
        let mut first = prompt.to_owned();
        if let Some(id) = task_id
            && let Ok(task) = self.state.store().load(&Value::String(id.to_owned()))
        {
            let cwd = match self.state.assignment_cwd(name) {
                Ok(cwd) => cwd.display().to_string(),
                Err(e) => format!("(unusable: {e})"),
            };
            first.push_str(&format!(
                "\n\n[Assigned task {}] {}\n{}\nWork directory: {cwd}",
                task.id, task.subject, task.description
            ));
        }
        if require_plan {
            first.push_str("\n\n[Plan required] Submit a plan and wait for Lead approval before changing files or using bash.");
        }
        first
    }

    /// The Lead's `spawn_teammate` (the course's `spawn_teammate_thread`): registers the
    /// teammate (name rules, its plan gate, version 0), claims its task first when given one
    /// (rolling back on failure), then starts its loop. Returns the course's result text.
    pub fn spawn_teammate(
        self: &Arc<Self>,
        name: &str,
        role: &str,
        prompt: &str,
        task_id: Option<&str>,
        require_plan: bool,
    ) -> String {
        if let Err(refusal) = self.state.register_teammate(name, require_plan) {
            return refusal_text(&refusal);
        }
        if let Some(id) = task_id {
            let id_value = Value::String(id.to_owned());
            let claimed = match self.state.claim_task(&id_value, name) {
                Ok(claim) if claim.is_claimed() => None,
                Ok(claim) => Some(claim.to_string()),
                Err(e) => Some(tasks::owners::error_text(&e, &id_value, self.words.not_found)),
            };
            if let Some(why) = claimed {
                self.state.unregister_teammate(name);
                return format!("Cannot spawn teammate '{name}': {why}");
            }
        }
        let first = self.first_message(name, prompt, task_id, require_plan);
        let teammate = Teammate::new(self, name, role, first);
        self.start_loop(name, teammate);
        self.say(Level::Info, &format!("  [teammate] {name} spawned as {role}"));
        let assigned =
            task_id.map_or_else(|| " without an initial Task".to_owned(), |id| format!(" for {id}"));
        format!(
            "Teammate '{name}' spawned as {role}{assigned}. End this turn; the runtime will deliver its events."
        )
    }

    /// Runs `teammate`'s loop as a task; whatever ends it, [`Leaving`] gives its task back.
    fn start_loop(self: &Arc<Self>, name: &str, teammate: Teammate) {
        let leaving = Leaving { runtime: Arc::clone(self), name: name.to_owned() };
        let task = tokio::spawn(async move {
            let leaving = leaving;
            if let Err(panic) = AssertUnwindSafe(teammate.run()).catch_unwind().await {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "the loop panicked".to_owned());
                leaving.runtime.send(&leaving.name, LEAD, &format!("panic: {why}"), "error", Map::new());
            }
        });
        self.loops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), task.abort_handle());
    }

    /// Ends every teammate's loop now (the harness is exiting): each gives its task back.
    pub fn end_all(&self) {
        let loops: Vec<_> =
            self.loops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain().collect();
        for (_, handle) in loops {
            handle.abort();
        }
        release_everyone(&self.state);
    }
}

/// The course's texts for a refused name.
fn refusal_text(refusal: &NameRefusal) -> String {
    match refusal {
        NameRefusal::Invalid => {
            "Invalid teammate name: use 1-64 letters, digits, underscores, or dashes".to_owned()
        }
        NameRefusal::Reserved(name) => format!("Invalid teammate name: '{name}' is reserved by the runtime"),
        NameRefusal::Exists(name) => format!("Teammate '{name}' already exists"),
    }
}

/// Gives back the tasks of every active teammate (the SIGTERM path, where no loop is dropped).
fn release_everyone(state: &TeamState) {
    for (name, _) in state.teammates() {
        let _ = state.release_teammate_assignment(&name);
        state.unregister_teammate(&name);
    }
}

/// A teammate leaving the team, for any reason: dropped when its loop's task ends, is aborted,
/// or is dropped with the runtime. Its task goes back to `pending` (a failure to do so is sent to
/// the Lead as `Assignment cleanup failed: …`), it leaves the registry, and
/// `  [teammate] {name} finished` is reported.
struct Leaving {
    runtime: Arc<TeamRuntime>,
    name: String,
}

impl Drop for Leaving {
    fn drop(&mut self) {
        let state = self.runtime.state();
        if let Err(e) = state.release_teammate_assignment(&self.name) {
            self.runtime.send(
                &self.name,
                LEAD,
                &format!("Assignment cleanup failed: {e}"),
                "error",
                Map::new(),
            );
        }
        state.unregister_teammate(&self.name);
        self.runtime.loops.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.name);
        self.runtime.say(Level::Info, &format!("  [teammate] {} finished", self.name));
    }
}
