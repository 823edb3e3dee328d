//! Hooks (course s04, kept in s05): callbacks registered per event, run around the agent loop.
//!
//! ```text
//!  prompt ─► UserPromptSubmit ─► [model] ─► per tool_use: PreToolUse ─► run ─► PostToolUse
//!                                  ▲                       │ value = blocked, the value is the tool_result
//!                                  └── value ◄── Stop ◄─── (no tool_use)
//! ```
//!
//! Changes from s03: the loop no longer hard-codes its checks; it asks a [`HookRegistry`] (the
//! course's `HOOKS` dict), which is an [`Extension`]. The permission check, the log lines and the
//! session summary are hooks registered by [`course_hooks`].
//!
//! Key insight: the loop stays the same; behaviour is added by registering callbacks, and a
//! hook that fails blocks what it guards (course PR #337 was rejected for letting calls through).
//!
//! The contract, for every event:
//! - callbacks run in registration order; the **first** that returns `Ok(Some(value))` wins and
//!   the rest are not called;
//! - a callback that returns `Err` or panics stops the run too, as a failure ([`HookOutcome`]).
//!
//! | event | a value means | a failure means |
//! |---|---|---|
//! | `UserPromptSubmit` | the prompt is not sent; the value is shown | the prompt is not sent |
//! | `PreToolUse` | the call is blocked; the value is its `tool_result` | blocked: `Blocked: hook NAME failed: …` |
//! | `PostToolUse` | appended to the output as `\n[Hook note]: VALUE` | reported as an event; the tool already ran |
//! | `Stop` | sent as a user message; the model is called again | reported; no continuation |

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use crate::approve::{Answer, Approver, Question, Reply};
use crate::dispatch::{Subject, ToolCall, ToolOutcome};
use crate::events::{Event, EventSink, Events, Level, line};
use crate::extension::{Decision, Extension, SHARED_BUSY, Shared};
use crate::messages::{MessagesResponse, ToolUseBlock};
use crate::permission::{self, DENIED_BY_DENY_LIST, DENIED_BY_USER, Verdict};
use crate::wording::DenyList;
use crate::workspace::Workspace;

/// The workspace as the permission check sees it: whether a path is inside (the workspace rule,
/// course §1), exists, or is a folder ([`permission::Surroundings`]; a [`crate::workspace::Workspace`]
/// is one).
pub type InsideWorkspace = Arc<dyn permission::Surroundings + Send + Sync>;

/// The four hook events of course s04. `Display` gives the course's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// The user typed a prompt; it has not joined the history yet.
    UserPromptSubmit,
    /// A tool call is about to run.
    PreToolUse,
    /// A tool call ran.
    PostToolUse,
    /// The model answered without tool calls.
    Stop,
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
        })
    }
}

/// What a callback sees: the event and its data (the request of the hook-engine template).
#[derive(Debug, Clone, Copy)]
pub enum HookContext<'a> {
    /// The prompt as typed.
    UserPromptSubmit {
        /// The user's text.
        prompt: &'a str,
    },
    /// The call about to run.
    PreToolUse {
        /// The model's `tool_use` block (through `Deref`) and what its input is about.
        call: &'a ToolCall,
    },
    /// The call that ran and its result.
    PostToolUse {
        /// The model's `tool_use` block.
        call: &'a ToolUseBlock,
        /// The tool's result, before any hook note is appended.
        outcome: &'a ToolOutcome,
    },
    /// The final response of a round without tool calls.
    Stop {
        /// The model's response.
        response: &'a MessagesResponse,
        /// Tool calls that ran in this session so far, across turns (blocked calls excluded).
        tool_calls: usize,
    },
}

impl HookContext<'_> {
    /// The event this context belongs to.
    pub fn event(&self) -> HookEvent {
        match self {
            HookContext::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            HookContext::PreToolUse { .. } => HookEvent::PreToolUse,
            HookContext::PostToolUse { .. } => HookEvent::PostToolUse,
            HookContext::Stop { .. } => HookEvent::Stop,
        }
    }
}

/// Why a hook failed. `Display` is the text after `failed: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    /// The callback returned an error; carries its message.
    #[error("{0}")]
    Failed(String),
    /// The callback panicked; carries the panic message when it was a string.
    #[error("panicked: {0}")]
    Panicked(String),
}

/// What a callback returns: `Ok(None)` to pass, `Ok(Some(value))` to answer (see the module
/// table), `Err` to fail (which blocks what the event guards).
pub type HookResult = Result<Option<String>, HookError>;

/// A registered callback.
pub type HookFn = Box<dyn FnMut(&HookContext<'_>) -> HookResult + Send>;

/// The result of running one event's callbacks (the outcome of the hook-engine template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Every callback returned `Ok(None)` (or none is registered).
    Pass,
    /// The hook `hook` answered `value`; later callbacks were not called.
    Value {
        /// The hook's registered name.
        hook: String,
        /// What it returned.
        value: String,
    },
    /// The hook `hook` failed; later callbacks were not called.
    Failed {
        /// The hook's registered name.
        hook: String,
        /// Why.
        error: HookError,
    },
}

impl HookOutcome {
    /// The decision of an event that guards something (`UserPromptSubmit`, `PreToolUse`): a
    /// value blocks with that value, a failure blocks with `Blocked: hook NAME failed: ERROR`.
    fn guard(self) -> Decision {
        match self {
            HookOutcome::Pass => Decision::Continue,
            HookOutcome::Value { value, .. } => Decision::Block(value),
            HookOutcome::Failed { hook, error } => {
                Decision::Block(format!("Blocked: hook {hook} failed: {error}"))
            }
        }
    }
}

/// One registered hook.
struct Hook {
    event: HookEvent,
    name: String,
    callback: HookFn,
}

/// The course's `HOOKS` dict: callbacks per event, run in registration order.
///
/// It is an [`Extension`], so a chapter adds it to `agent_loop` as it is. It also counts the
/// session's tool calls that ran (each `post_tool_use`), which `Stop` hooks see as
/// [`HookContext::Stop::tool_calls`].
///
/// Several agents may run one registry (a parent's hooks inside its subagents, course s06):
/// each other agent runs it through [`ScopedHooks`], so the lines the hooks print while it runs
/// carry that agent's marks and its `Stop` counts its own calls.
pub struct HookRegistry {
    hooks: Vec<Hook>,
    events: Arc<Route>,
    tool_calls: usize,
    /// Tools whose calls the loop handles itself: no hook sees them and they are not counted
    /// (the course's s08 `compact`).
    unhooked: Vec<String>,
}

impl fmt::Debug for HookRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.hooks.iter().map(|h| format!("{}:{}", h.event, h.name)).collect();
        f.debug_struct("HookRegistry").field("hooks", &names).field("tool_calls", &self.tool_calls).finish()
    }
}

impl HookRegistry {
    /// An empty registry. `events` receives failure reports for `PostToolUse` and `Stop`, where
    /// nothing else would show them, as [`Level::Info`] lines; hooks print there through
    /// [`HookRegistry::events`].
    pub fn new(events: Events) -> Self {
        let events = Arc::new(Route { current: Mutex::new(events) });
        Self { hooks: Vec::new(), events, tool_calls: 0, unhooked: Vec::new() }
    }

    /// The listener a hook of this registry prints to: the one [`HookRegistry::new`] was given,
    /// or, while another agent runs the registry through [`ScopedHooks`], that agent's. The
    /// course's hooks ([`course_hooks`]) print here.
    pub fn events(&self) -> Events {
        Arc::clone(&self.events) as Events
    }

    /// Runs `f` as the agent `scope` describes: the hooks print to `scope`'s listener, and the
    /// tool calls counted are `scope`'s; afterwards the registry's own listener is back, and its
    /// count has grown by the calls made in the scope (the session's count covers every agent).
    fn scoped<R>(&mut self, scope: &mut Scope, f: impl FnOnce(&mut Self) -> R) -> R {
        let outer = self.events.swap(Arc::clone(&scope.events));
        let before = scope.tool_calls;
        let session = std::mem::replace(&mut self.tool_calls, scope.tool_calls);
        let result = f(self);
        scope.tool_calls = self.tool_calls;
        self.tool_calls = session + scope.tool_calls.saturating_sub(before);
        self.events.swap(outer);
        result
    }

    /// Lets calls of the tool `name` pass every hook: `PreToolUse` and `PostToolUse` are not run
    /// for them, and they are not counted in [`HookRegistry::tool_calls`]. For a tool the course
    /// handles in its loop, not through `execute_tool` (s08's `compact`).
    pub fn unhook_tool(&mut self, name: impl Into<String>) -> &mut Self {
        self.unhooked.push(name.into());
        self
    }

    fn is_unhooked(&self, name: &str) -> bool {
        self.unhooked.iter().any(|n| n == name)
    }

    /// Adds `callback` under `name` (used in failure messages) to the end of `event`'s list.
    pub fn register(
        &mut self,
        event: HookEvent,
        name: impl Into<String>,
        callback: impl FnMut(&HookContext<'_>) -> HookResult + Send + 'static,
    ) -> &mut Self {
        self.hooks.push(Hook { event, name: name.into(), callback: Box::new(callback) });
        self
    }

    /// The names registered for `event`, in the order they run.
    pub fn names(&self, event: HookEvent) -> Vec<&str> {
        self.hooks.iter().filter(|h| h.event == event).map(|h| h.name.as_str()).collect()
    }

    /// Tool calls that ran in this session so far (blocked calls excluded).
    pub fn tool_calls(&self) -> usize {
        self.tool_calls
    }

    /// Runs the callbacks of `context.event()` in order until one answers or fails. A panic in
    /// a callback is caught and becomes [`HookError::Panicked`].
    pub fn run(&mut self, context: &HookContext<'_>) -> HookOutcome {
        let event = context.event();
        for hook in self.hooks.iter_mut().filter(|h| h.event == event) {
            let result = catch_unwind(AssertUnwindSafe(|| (hook.callback)(context)))
                .unwrap_or_else(|payload| Err(HookError::Panicked(panic_text(payload.as_ref()))));
            match result {
                Ok(None) => {}
                Ok(Some(value)) => return HookOutcome::Value { hook: hook.name.clone(), value },
                Err(error) => return HookOutcome::Failed { hook: hook.name.clone(), error },
            }
        }
        HookOutcome::Pass
    }

    /// Reports `[HOOK] EVENT: hook NAME failed: ERROR`.
    fn report(&self, event: HookEvent, hook: &str, error: &HookError) {
        line(&*self.events, Level::Info, &format!("[HOOK] {event}: hook {hook} failed: {error}"));
    }
}

/// The listener a registry's hooks print to, which [`HookRegistry::scoped`] points at another
/// agent's listener for the length of one call.
struct Route {
    current: Mutex<Events>,
}

impl Route {
    /// Points the route at `events`; returns where it pointed.
    fn swap(&self, events: Events) -> Events {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut *current, events)
    }
}

impl EventSink for Route {
    fn on_event(&self, event: &Event<'_>) {
        // Not under the lock: a listener may take its time (a terminal) or report again.
        let current = Arc::clone(&*self.current.lock().unwrap_or_else(|p| p.into_inner()));
        current.on_event(event);
    }
}

/// One agent's view of a registry it shares: where its hook lines go and its own count.
struct Scope {
    events: Events,
    tool_calls: usize,
}

/// A shared [`HookRegistry`] as another agent than its owner runs it (course s06: the child runs
/// "the same hooks as the parent"): the same callbacks, permission answers and allowances, but
/// the lines the hooks print go to `events` (the child's listener, which marks them as the
/// child's), and its `Stop` counts the calls made by this agent alone. The owner's count still
/// grows by them. Like [`Shared`], a call that finds the registry busy in another agent fails
/// closed: `pre_tool_use` and `user_prompt_submit` block, the others do nothing.
pub struct ScopedHooks {
    hooks: Shared<HookRegistry>,
    scope: Scope,
}

impl ScopedHooks {
    /// `hooks` run by an agent whose hook lines go to `events`, with no tool calls yet.
    pub fn new(hooks: Shared<HookRegistry>, events: Events) -> Self {
        Self { hooks, scope: Scope { events, tool_calls: 0 } }
    }

    /// The tool calls this agent made that ran (blocked calls excluded).
    pub fn tool_calls(&self) -> usize {
        self.scope.tool_calls
    }

    /// Runs `f` on the registry in this agent's scope, or `None` when it is busy elsewhere.
    fn run<R>(&mut self, f: impl FnOnce(&mut HookRegistry) -> R) -> Option<R> {
        let scope = &mut self.scope;
        self.hooks.try_with(|registry| registry.scoped(scope, f))
    }
}

impl Extension for ScopedHooks {
    fn user_prompt_submit(&mut self, prompt: &str) -> Decision {
        self.run(|r| r.user_prompt_submit(prompt)).unwrap_or_else(|| Decision::Block(SHARED_BUSY.into()))
    }

    fn pre_tool_use(&mut self, call: &ToolCall) -> Decision {
        self.run(|r| r.pre_tool_use(call)).unwrap_or_else(|| Decision::Block(SHARED_BUSY.into()))
    }

    fn post_tool_use(&mut self, call: &ToolUseBlock, outcome: &mut ToolOutcome) {
        self.run(|r| r.post_tool_use(call, outcome));
    }

    fn stop(&mut self, response: &MessagesResponse) -> Option<String> {
        self.run(|r| r.stop(response)).flatten()
    }
}

/// The text of a panic payload (`&str` or `String`), or a placeholder.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

impl Extension for HookRegistry {
    /// `UserPromptSubmit`: a value or a failure blocks the prompt.
    fn user_prompt_submit(&mut self, prompt: &str) -> Decision {
        self.run(&HookContext::UserPromptSubmit { prompt }).guard()
    }

    /// `PreToolUse`: a value blocks the call with that value; a failure blocks it with
    /// `Blocked: hook NAME failed: ERROR`.
    fn pre_tool_use(&mut self, call: &ToolCall) -> Decision {
        if self.is_unhooked(&call.name) {
            return Decision::Continue;
        }
        self.run(&HookContext::PreToolUse { call }).guard()
    }

    /// `PostToolUse`: counts the call, then runs the hooks. A value is appended to the output
    /// as `\n[Hook note]: VALUE` (as the course's hook chapter does); a failure is reported
    /// as an event.
    fn post_tool_use(&mut self, call: &ToolUseBlock, outcome: &mut ToolOutcome) {
        if self.is_unhooked(&call.name) {
            return;
        }
        self.tool_calls += 1;
        match self.run(&HookContext::PostToolUse { call, outcome }) {
            HookOutcome::Pass => {}
            HookOutcome::Value { value, .. } => outcome.content.push_str(&format!("\n[Hook note]: {value}")),
            HookOutcome::Failed { hook, error } => self.report(HookEvent::PostToolUse, &hook, &error),
        }
    }

    /// `Stop`: a value continues the turn with it as a user message; a failure is reported and
    /// does not force a continuation.
    fn stop(&mut self, response: &MessagesResponse) -> Option<String> {
        let tool_calls = self.tool_calls;
        match self.run(&HookContext::Stop { response, tool_calls }) {
            HookOutcome::Pass => None,
            HookOutcome::Value { value, .. } => Some(value),
            HookOutcome::Failed { hook, error } => {
                self.report(HookEvent::Stop, &hook, &error);
                None
            }
        }
    }
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// The course's hooks
// ─────────────────────────────────────────────────────────────────────────────────────────────

/// Output above this many characters makes the large-output hook warn (course §3).
pub const LARGE_OUTPUT_CHARS: usize = 100_000;

/// How many characters of a call's arguments the log hook shows.
pub const LOG_ARGS_CHARS: usize = 80;

/// The short one-line rendering of a call's input in `[HOOK] NAME(ARGS)`: what the tool says the
/// input is about (the command of `bash`, the path of a file tool, the pattern of `glob`; see
/// [`Subject`]), and otherwise the input as compact JSON; control
/// characters become spaces and the text is cut to [`LOG_ARGS_CHARS`] with `…`.
pub fn log_args(call: &ToolCall) -> String {
    let text = match call.subject.text() {
        Some(s) => s.to_string(),
        None => call.input.to_string(),
    };
    crate::sanitize::one_line(&text, LOG_ARGS_CHARS)
}

/// Registers the log hook on `PreToolUse`: prints `[HOOK] NAME(ARGS)` (see [`log_args`]) and
/// never answers.
pub fn register_log_hook(registry: &mut HookRegistry, events: Events) {
    registry.register(HookEvent::PreToolUse, "log", move |ctx| {
        if let HookContext::PreToolUse { call } = ctx {
            line(&*events, Level::Info, &format!("[HOOK] {}({})", call.name, log_args(call)));
        }
        Ok(None)
    });
}

/// Registers the permission hook on `PreToolUse` with the default [`PermissionOptions`]: the
/// plain deny-list text, and a file tool's path outside the workspace left to the tool (which
/// refuses it). See [`register_permission_hook_with`].
pub fn register_permission_hook(
    registry: &mut HookRegistry,
    approver: Box<dyn Approver>,
    inside_workspace: InsideWorkspace,
) {
    register_permission_hook_with(registry, approver, inside_workspace, PermissionOptions::default());
}

/// What a chapter's permission hook does beyond [`permission::check_tool_call`].
#[derive(Debug, Clone, Default)]
pub struct PermissionOptions {
    /// How a command on the deny list is refused ([`DenyList`]).
    pub deny_list: DenyList,
    /// The workspace whose file tools may act outside it when the user says yes (course s04:
    /// `Access outside workspace`); `None` leaves such a path to the tool, which refuses it.
    pub outside: Option<Workspace>,
}

/// The reason of the question about a file tool's path outside the workspace (course s04).
pub const OUTSIDE_WORKSPACE: &str = "Access outside workspace";

/// Registers the permission hook on `PreToolUse`, built on [`permission::check_tool_call`]:
/// - a path of a file tool (`read_file`, `write_file`, `edit_file`: a [`Subject::Path`] or
///   [`Subject::WrittenPath`]) outside the workspace, when
///   `options.outside` is set → asks `Access outside workspace: /ABSOLUTE/PATH (TOOL)`, the path
///   resolved with every symlink followed and its folder already opened
///   ([`Workspace::outside`]); a yes grants the tool that one call beneath that handle
///   ([`Workspace::grant`]), a no answers `Permission denied by user`;
/// - `Deny(text)` → answers `text`; a deny-list match is worded as `options.deny_list` says;
/// - `Ask(question)` → `approver.reply(question)`; a refusal answers `Permission denied by user`
///   (an approver that remembers `a`, such as [`permission::SessionApprover`], does so there),
///   and an approver that may not ask anyone now gives its own text
///   ([`crate::approve::Reply::Refused`]);
/// - `Allow` (or an approval) → passes.
pub fn register_permission_hook_with(
    registry: &mut HookRegistry,
    mut approver: Box<dyn Approver>,
    inside_workspace: InsideWorkspace,
    options: PermissionOptions,
) {
    let PermissionOptions { deny_list, outside } = options;
    registry.register(HookEvent::PreToolUse, "permission", move |ctx| {
        let HookContext::PreToolUse { call } = ctx else { return Ok(None) };
        if let Some(ws) = &outside {
            // A grant serves the call it was asked for; one left by a call that never ran
            // (another extension blocked it) must not serve this one.
            ws.revoke_grants();
            let path = match &call.subject {
                Subject::Path(path) | Subject::WrittenPath(path) => Some(path.as_str()),
                _ => None,
            };
            // A path the walk cannot follow is left to the tool, which says why.
            if let Some(Ok(Some(pinned))) = path.map(|p| ws.outside(p)) {
                let subject = format!("{} ({})", pinned.shown().display(), call.name);
                let question = Question::new(OUTSIDE_WORKSPACE, subject, Vec::new());
                return Ok(match approver.reply(&question) {
                    Reply::Answer(Answer::No) => Some(DENIED_BY_USER.to_string()),
                    Reply::Answer(Answer::Yes | Answer::Always) => {
                        ws.grant(pinned);
                        None
                    }
                    Reply::Refused(text) => Some(text),
                });
            }
        }
        // A call that runs in another folder (an s13 worktree) is judged against that folder.
        let surroundings: &dyn permission::Surroundings = match &call.folder {
            Some(folder) => folder,
            None => inside_workspace.as_ref(),
        };
        Ok(match permission::check_tool_call(call, surroundings) {
            Verdict::Allow => None,
            Verdict::Deny(text) => Some(match &call.subject {
                Subject::Command(command) if text == DENIED_BY_DENY_LIST => {
                    deny_list.text(permission::deny_list_match(command).unwrap_or_default())
                }
                _ => text,
            }),
            Verdict::Ask(question) => match approver.reply(&question) {
                Reply::Answer(Answer::No) => Some(DENIED_BY_USER.to_string()),
                Reply::Answer(Answer::Yes | Answer::Always) => None,
                Reply::Refused(text) => Some(text),
            },
        })
    });
}

/// Registers the context hook on `UserPromptSubmit`: prints
/// `[HOOK] UserPromptSubmit: working in WORKDIR` and passes.
pub fn register_context_hook(registry: &mut HookRegistry, events: Events, workdir_display: String) {
    registry.register(HookEvent::UserPromptSubmit, "context", move |_| {
        line(&*events, Level::Info, &format!("[HOOK] UserPromptSubmit: working in {workdir_display}"));
        Ok(None)
    });
}

/// Registers the large-output hook on `PostToolUse`: when the output has more than
/// [`LARGE_OUTPUT_CHARS`] characters, prints
/// `[HOOK] PostToolUse: NAME returned N characters (over 100000)`; it never answers.
pub fn register_large_output_hook(registry: &mut HookRegistry, events: Events) {
    registry.register(HookEvent::PostToolUse, "large_output", move |ctx| {
        if let HookContext::PostToolUse { call, outcome } = ctx {
            let n = outcome.content.chars().count();
            if n > LARGE_OUTPUT_CHARS {
                let text = format!(
                    "[HOOK] PostToolUse: {} returned {n} characters (over {LARGE_OUTPUT_CHARS})",
                    call.name
                );
                line(&*events, Level::Info, &text);
            }
        }
        Ok(None)
    });
}

/// Registers the summary hook on `Stop`: prints `[HOOK] Stop: session used N tool calls` (`1 tool
/// call`), N being the session's tool calls that ran, across turns (in an agent that runs the
/// registry through [`ScopedHooks`], that agent's own); it never answers.
pub fn register_summary_hook(registry: &mut HookRegistry, events: Events) {
    registry.register(HookEvent::Stop, "summary", move |ctx| {
        if let HookContext::Stop { tool_calls, .. } = ctx {
            let calls = if *tool_calls == 1 { "tool call" } else { "tool calls" };
            line(&*events, Level::Info, &format!("[HOOK] Stop: session used {tool_calls} {calls}"));
        }
        Ok(None)
    });
}

/// Which of the course's hooks a chapter registers, and how its permission hook behaves: the
/// course's chapters differ (s08 has no `UserPromptSubmit` or `Stop` hook, and handles `compact`
/// in its loop; s08 and s09 name the deny-list entry).
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    /// How the permission hook refuses a command on the deny list ([`DenyList`]).
    pub deny_list: DenyList,
    /// The workspace whose file tools may act outside it when the user says yes
    /// ([`PermissionOptions::outside`]).
    pub outside: Option<Workspace>,
    /// Leaves out the context hook (`UserPromptSubmit`) and the summary hook (`Stop`).
    pub no_prompt_or_stop_hooks: bool,
    /// Tools no hook sees ([`HookRegistry::unhook_tool`]).
    pub unhooked_tools: Vec<String>,
}

/// The hooks of course s04/s05, registered in this order:
/// 1. `PreToolUse` **log** — first, so every attempted call is logged, including the ones the
///    permission hook then refuses (the learner sees `[HOOK] bash(sudo reboot)` and then why it
///    was refused). It never answers, so it cannot short-circuit the permission hook.
/// 2. `PreToolUse` **permission** ([`register_permission_hook`]).
/// 3. `UserPromptSubmit` **context** ([`register_context_hook`]).
/// 4. `PostToolUse` **large_output** ([`register_large_output_hook`]).
/// 5. `Stop` **summary** ([`register_summary_hook`]).
///
/// `events` receives every line (as [`Level::Info`]); `approver` answers `Allow? [y/N]`;
/// `inside_workspace` is the workspace rule; `workdir_display` is WORKDIR as the context line
/// shows it. [`course_hooks_with`] picks the hooks and the permission hook's options.
pub fn course_hooks(
    events: Events,
    approver: Box<dyn Approver>,
    inside_workspace: InsideWorkspace,
    workdir_display: String,
) -> HookRegistry {
    course_hooks_with(events, approver, inside_workspace, workdir_display, HookSet::default())
}

/// [`course_hooks`] as `set` says: the permission hook with `set`'s deny-list wording and
/// outside access ([`register_permission_hook_with`]), without the context and summary hooks when
/// `set.no_prompt_or_stop_hooks`, and with `set.unhooked_tools` passing every hook.
pub fn course_hooks_with(
    events: Events,
    approver: Box<dyn Approver>,
    inside_workspace: InsideWorkspace,
    workdir_display: String,
    set: HookSet,
) -> HookRegistry {
    let mut registry = HookRegistry::new(events);
    // The hooks print through the registry's route, so an agent sharing it marks their lines.
    let events = registry.events();
    register_log_hook(&mut registry, events.clone());
    let permission = PermissionOptions { deny_list: set.deny_list, outside: set.outside };
    register_permission_hook_with(&mut registry, approver, inside_workspace, permission);
    if !set.no_prompt_or_stop_hooks {
        register_context_hook(&mut registry, events.clone(), workdir_display);
    }
    register_large_output_hook(&mut registry, events.clone());
    if !set.no_prompt_or_stop_hooks {
        register_summary_hook(&mut registry, events);
    }
    for name in set.unhooked_tools {
        registry.unhook_tool(name);
    }
    registry
}
