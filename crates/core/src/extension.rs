//! The loop's extension point: what a chapter may add to a turn without copying `agent_loop`.
//!
//! Source: course s03 (the nag reminder runs after a round's tools), s04/s05 (hooks run before a
//! prompt, around each tool call, and when the model stops), the course's s08 (compaction before
//! a request, after a tool batch, and on `prompt_too_long`) and s09 (recall into SYSTEM before a
//! turn, extraction after the answer), and goose's `pre_inference` hook. Every method has a no-op
//! default, so an extension implements only the moments it cares about. `agent_loop` calls the
//! extensions in the order they were added.
//!
//! ```text
//!  prompt ─► begin_turn ─► user_prompt_submit ─► (joins history) ─► before_turn (SYSTEM)
//!    ┌────────────────────────────────────────────────────────────────────┘
//!    ▼
//!  pre_inference ─► before_request (SYSTEM, tools) ─► [model] ──failed──► on_request_error ─► retry once
//!    ▲                                                   │
//!    │                 ┌─────────────────────────────────┘
//!    │                 ├─ tool_use ─► per call: pre_tool_use ─► run ─► post_tool_use
//!    │                 │             after_round (text appended after every tool_result)
//!    └─────────────────┤             after_tool_batch (the results are in; may rewrite or end)
//!                      └─ no tool_use ─► stop_turn (async, model) ─► maybe continue ─► after_answer (async, model)
//! ```
//!
//! The methods and the course's hook events (s04) map one to one where the course has an event:
//! `user_prompt_submit` is `UserPromptSubmit`, `pre_tool_use` is `PreToolUse`, `post_tool_use` is
//! `PostToolUse` and `stop_turn` (with its synchronous shorthand `stop`) is `Stop`; the others
//! are moments of the loop that no course hook names.
//!
//! The history an extension rewrites (`pre_inference`, `after_tool_batch`, `on_request_error`)
//! is the one the session keeps: the loop sends `normalize_messages` of it, and the send path's
//! caches notice the rewrite (see [`crate::normalize::Normalizer`]).
//!
//! An extension that several agents use (a parent's hooks inside its subagents) is wrapped in
//! [`Shared`].

use std::sync::Arc;

use crate::dispatch::{DispatchMap, ToolCall, ToolOutcome};
use crate::error::ApiError;
use crate::events::{Event, EventSink};
use crate::messages::{
    Message, MessagesRequest, MessagesResponse, SharedUsage, ToolUseBlock, Usage, UsageTotals,
};
use crate::model::Model;

/// What an extension decides about a prompt or a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let it through.
    Continue,
    /// Stop it. For a tool call the text becomes its `tool_result` (sent with `is_error: true`)
    /// and the tool never runs; for a prompt the text is shown and the prompt is not sent.
    Block(String),
}

/// One tool call of a finished round, as extensions see it in [`Extension::after_round`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The tool's name as the model called it.
    pub name: String,
    /// `true` when the tool ran (its result may still be an error); `false` when a
    /// `PreToolUse` decision blocked it.
    pub ran: bool,
    /// The result's `is_error`.
    pub is_error: bool,
}

/// The model as an extension may call it for its own purposes (a summary, a recall, a goal's
/// evaluation): the loop's model and `model` id, and the session's usage, to which
/// [`ModelHandle::create`] adds each call's tokens so that `/usage` counts them (and the total of
/// several agents, when the agent has one: [`crate::agent::AgentBuilder::usage_total`]).
pub struct ModelHandle<'a> {
    model: &'a Arc<dyn Model>,
    model_id: &'a str,
    usage: &'a mut UsageTotals,
    total: Option<&'a SharedUsage>,
    events: &'a dyn EventSink,
}

impl<'a> ModelHandle<'a> {
    /// A handle on `model`, counting usage into `usage`; retries are reported to `events`.
    pub fn new(
        model: &'a Arc<dyn Model>,
        model_id: &'a str,
        usage: &'a mut UsageTotals,
        events: &'a dyn EventSink,
    ) -> Self {
        Self { model, model_id, usage, total: None, events }
    }

    /// Also counts each call's usage into `total` (the total of several agents).
    pub fn with_total(mut self, total: Option<&'a SharedUsage>) -> Self {
        self.total = total;
        self
    }

    /// The model, shared.
    pub fn model(&self) -> Arc<dyn Model> {
        Arc::clone(self.model)
    }

    /// The `model` field the loop's requests carry (`MODEL_ID`).
    pub fn model_id(&self) -> &str {
        self.model_id
    }

    /// Sends `request` and counts its usage in the session's. Its text does not stream to the
    /// listener (it is the harness's, not the answer); its retries are reported, so a slow
    /// summary does not look like a hang. The request and its response go to the listener's
    /// [`SIDE_CALL_LANE`] ([`EventSink::on_lane_event`]), for a recording of the session.
    ///
    /// # Errors
    /// The model's [`ApiError`].
    pub async fn create(&mut self, request: &MessagesRequest) -> Result<MessagesResponse, ApiError> {
        let retries = RetriesOnly(self.events);
        self.events.on_lane_event(SIDE_CALL_LANE, &Event::Sent(request));
        let result = self.model.create(request, &retries).await;
        let response = Event::Response { result: result.as_ref(), streamed: false };
        self.events.on_lane_event(SIDE_CALL_LANE, &response);
        let response = result?;
        self.usage.add(&response.usage);
        if let Some(total) = self.total {
            total.add(&response.usage);
        }
        Ok(response)
    }
}

/// The lane ([`EventSink::on_lane_event`]) of the harness's own model calls through a
/// [`ModelHandle`]: a compaction's summary, a memory recall, a goal's evaluation.
pub const SIDE_CALL_LANE: &str = "side call";

/// Passes on only the retries of an extension's own model call.
struct RetriesOnly<'a>(&'a dyn EventSink);

impl EventSink for RetriesOnly<'_> {
    fn on_event(&self, event: &Event<'_>) {
        if matches!(event, Event::Retry { .. }) {
            self.0.on_event(event);
        }
    }
}

/// What an extension sees before each request ([`Extension::pre_inference`]; goose's
/// `LoopContext`), after a tool batch ([`Extension::after_tool_batch`]) and when a request failed
/// ([`Extension::on_request_error`]).
pub struct LoopContext<'a> {
    /// The history the next request is built from (through `normalize_messages`). An extension
    /// may rewrite it (compaction); the rewrite stays for the rest of the session.
    pub history: &'a mut Vec<Message>,
    /// The usage of the last response this agent received (Messages API `usage`; its
    /// `input_tokens` is the size of the last request), `None` before the first.
    pub last_usage: Option<&'a Usage>,
    /// The prompt of the turn in progress, as the user typed it (or, for a loop run without
    /// `run_turn`, the latest user text of the history). A compaction that archives it brings it
    /// back (the course's s08, #577).
    pub active_request: Option<&'a str>,
    /// The model, for calls of the extension's own.
    pub model: ModelHandle<'a>,
    /// Where the extension says what it did (`[snip: …]`).
    pub events: &'a dyn EventSink,
}

/// What an extension sees once per user turn, before its first request
/// ([`Extension::before_turn`]).
pub struct TurnContext<'a> {
    /// This turn's SYSTEM prompt, starting from the chapter's each turn; an extension may add to
    /// it (s09's recalled memory).
    pub system: &'a mut String,
    /// The user's prompt, already the last message of `history`.
    pub prompt: &'a str,
    /// The history, the prompt included.
    pub history: &'a [Message],
    /// The model, for calls of the extension's own.
    pub model: ModelHandle<'a>,
    /// Where the extension says what it did.
    pub events: &'a dyn EventSink,
}

/// What an extension sets before each request ([`Extension::before_request`]): the SYSTEM
/// prompt and the tools this request sends. Each request starts from the turn's SYSTEM (the
/// chapter's, as [`Extension::before_turn`] left it) and the agent's tools, so an extension says
/// every time what it adds: the course's s14 and s15 assemble the tool pool and the prompt
/// before every request the same way.
pub struct RequestContext<'a> {
    /// This request's SYSTEM prompt; an extension may change it or replace it (s15 rebuilds it
    /// with the time, the skills, the memory and the connected MCP servers).
    pub system: &'a mut String,
    /// This request's tools, in the request's order. A tool registered here is sent with this
    /// request, and a call of it in the answer is dispatched through this map (s14's MCP tools,
    /// s16's `Workflow`). A clone of the agent's map until changed ([`DispatchMap`] clones share).
    pub tools: &'a mut DispatchMap,
    /// The history the request is built from.
    pub history: &'a [Message],
    /// Where the extension says what it did.
    pub events: &'a dyn EventSink,
}

/// What a `Stop` extension sees when the model answered without a tool call
/// ([`Extension::stop_turn`]).
pub struct StopContext<'a> {
    /// The history, the answer included.
    pub history: &'a [Message],
    /// The answer.
    pub response: &'a MessagesResponse,
    /// How often this turn the loop was already sent back to work (by a `Stop` extension or
    /// `pause_turn`).
    pub continuations: u32,
    /// The most continuations a turn may have
    /// ([`crate::agent::AgentBuilder::max_stop_continuations`]): when `continuations` has reached
    /// it, a [`StopDecision::Continue`] is refused and the turn ends
    /// ([`crate::events::StopNote::StopHookCap`]).
    pub max_continuations: u32,
    /// The model, for a call of the extension's own (s17's tool-free goal evaluator); its usage
    /// counts in the session's.
    pub model: ModelHandle<'a>,
    /// Where the extension says what it did.
    pub events: &'a dyn EventSink,
}

impl StopContext<'_> {
    /// Whether a [`StopDecision::Continue`] would now be refused: the turn's continuations are
    /// used up.
    pub fn at_cap(&self) -> bool {
        self.continuations >= self.max_continuations
    }
}

/// What a `Stop` extension answers ([`Extension::stop_turn`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopDecision {
    /// The turn may end here (later extensions are still asked).
    Stop,
    /// Send the model back to work: the text joins the history as a user message and the loop
    /// calls the model again, unless the turn's continuations are used up. Later extensions are
    /// not asked.
    Continue(String),
}

/// What an extension sees after the turn's final answer ([`Extension::after_answer`]).
pub struct AnswerContext<'a> {
    /// The history, the answer included.
    pub history: &'a [Message],
    /// The final response.
    pub response: &'a MessagesResponse,
    /// The model, for calls of the extension's own (s09's extraction).
    pub model: ModelHandle<'a>,
    /// Where the extension says what it did.
    pub events: &'a dyn EventSink,
}

/// What happens after a tool batch ([`Extension::after_tool_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterBatch {
    /// The loop goes on: the next request is sent.
    Continue,
    /// The turn ends here, with the batch's results in the history and no further request.
    EndTurn,
}

/// What an extension did about a failed request ([`Extension::on_request_error`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing: the error ends the turn (unless a later extension recovers).
    GiveUp,
    /// The history was repaired (made shorter): the request is sent once more.
    Retry,
}

/// Behaviour added to `agent_loop`. All methods default to doing nothing. The async methods are
/// written with `#[async_trait::async_trait]` on the `impl`.
#[async_trait::async_trait]
pub trait Extension: Send {
    /// A new user turn starts (before `user_prompt_submit`). The nag resets its counter here
    /// (course §2: "the counter starts at 0 on each user turn").
    fn begin_turn(&mut self) {}

    /// The user started a new conversation (the REPL's `/clear`): the history is empty, so what
    /// belonged to the old one goes too (a todo list the model no longer knows).
    fn new_conversation(&mut self) {}

    /// The user typed `prompt`; it has not joined the history yet (`UserPromptSubmit`).
    fn user_prompt_submit(&mut self, _prompt: &str) -> Decision {
        Decision::Continue
    }

    /// The prompt joined the history; the turn's first request has not been sent. The extension
    /// may change this turn's SYSTEM and call the model (s09's recall). The next turn starts from
    /// the chapter's SYSTEM again.
    ///
    /// # Errors
    /// An [`ApiError`] ends the turn before any request of the loop.
    async fn before_turn(&mut self, _turn: &mut TurnContext<'_>) -> Result<(), ApiError> {
        Ok(())
    }

    /// Runs before each request of `agent_loop`, the first included: may read and rewrite the
    /// history, call the model, and look at the last usage.
    ///
    /// # Errors
    /// An [`ApiError`] (from a model call of its own, say) ends the turn as a failed request would;
    /// the history keeps what the extension left in it.
    async fn pre_inference(&mut self, _context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        Ok(())
    }

    /// Sets the SYSTEM prompt and the tools of the next request, after
    /// [`Extension::pre_inference`]; called before every request of the loop, the first
    /// included. Each request starts from the turn's SYSTEM and the agent's tools (see
    /// [`RequestContext`]); extensions are called in order, each seeing what the one before left.
    /// The prompt cache follows: the client places its breakpoints on each request as sent, so a
    /// changed prompt or tool list is a new prefix, and an unchanged one is read again.
    ///
    /// # Errors
    /// An [`ApiError`] ends the request as a failed request would (see
    /// [`crate::agent::AgentBuilder::errors_as_text`]).
    async fn before_request(&mut self, _request: &mut RequestContext<'_>) -> Result<(), ApiError> {
        Ok(())
    }

    /// A request failed with `error` (after the client's own retries). The extension may repair
    /// the history, such as compacting it after `prompt_too_long` (the course's s08 reactive
    /// compaction), and answer [`Recovery::Retry`]: the loop sends the request once more, and a
    /// second failure ends the turn.
    ///
    /// # Errors
    /// An [`ApiError`] of the repair itself ends the turn in place of `error`.
    async fn on_request_error(
        &mut self,
        _context: &mut LoopContext<'_>,
        _error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        Ok(Recovery::GiveUp)
    }

    /// A tool is about to run (`PreToolUse`). `call` is the `tool_use` block (through `Deref`) with
    /// what the tool says its input is about ([`ToolCall::subject`]); the input was parsed once,
    /// and the tool runs on that same value. The first extension that blocks wins; later ones are
    /// not asked.
    fn pre_tool_use(&mut self, _call: &ToolCall) -> Decision {
        Decision::Continue
    }

    /// A tool ran (`PostToolUse`). The outcome may be inspected or amended.
    fn post_tool_use(&mut self, _call: &ToolUseBlock, _outcome: &mut ToolOutcome) {}

    /// All tool calls of one round have results. Returned text is appended to that round's
    /// user message as a `text` block **after** every `tool_result` block (course §0; the API
    /// rejects the request otherwise).
    fn after_round(&mut self, _calls: &[CallRecord]) -> Option<String> {
        None
    }

    /// The round's user message of results is in the history: every `tool_use` has its
    /// `tool_result`, so the history may be rewritten without splitting a pair (the course's s08
    /// `compact` tool runs its summary here, #500). [`AfterBatch::EndTurn`] ends the turn without
    /// another request; every extension is still called.
    ///
    /// # Errors
    /// An [`ApiError`] (a summary call that failed) ends the turn.
    async fn after_tool_batch(&mut self, _context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        Ok(AfterBatch::Continue)
    }

    /// The model answered without tool calls (`Stop`), the synchronous shorthand of
    /// [`Extension::stop_turn`] (whose default calls it). `Some(text)` appends `text` as a user
    /// message and calls the model again; `agent_loop` caps how often this may happen per turn.
    fn stop(&mut self, _response: &MessagesResponse) -> Option<String> {
        None
    }

    /// The model answered without tool calls (`Stop`). The extension may call the model (s17's
    /// goal evaluator: a separate, tool-free request whose usage counts in the session's) and
    /// answer [`StopDecision::Continue`] to send the loop back with a user message, or
    /// [`StopDecision::Stop`]. The first extension that continues wins; the loop allows at most
    /// [`StopContext::max_continuations`] per turn and then ends the turn. What fails here is the
    /// extension's to report (s17 keeps the goal and returns control). The default asks
    /// [`Extension::stop`].
    async fn stop_turn(&mut self, context: &mut StopContext<'_>) -> StopDecision {
        match self.stop(context.response) {
            Some(text) => StopDecision::Continue(text),
            None => StopDecision::Stop,
        }
    }

    /// The turn ended with a final answer (no `Stop` extension sent the model back). The
    /// extension may call the model (the course's s09 memory extraction); what fails here is the
    /// extension's to report, and never undoes the turn.
    async fn after_answer(&mut self, _context: &mut AnswerContext<'_>) {}
}

/// One extension used by several agents: a parent and the subagents a tool of its runs (the
/// course's s06 child runs "the same hooks as the parent"). Clones share the extension; each
/// agent adds its own clone.
///
/// The loop calls one extension at a time, and a child runs inside a tool call, between the
/// parent's `pre_tool_use` and `post_tool_use`, so the two never call it at once. Should that
/// happen anyway, a synchronous call fails closed: `pre_tool_use` and `user_prompt_submit` block,
/// the others do nothing.
pub struct Shared<E>(Arc<tokio::sync::Mutex<E>>);

impl<E> Shared<E> {
    /// Shares `extension`.
    pub fn new(extension: E) -> Self {
        Self(Arc::new(tokio::sync::Mutex::new(extension)))
    }

    /// Runs `f` on the extension, waiting for any call in progress.
    pub async fn with<R>(&self, f: impl FnOnce(&mut E) -> R) -> R {
        f(&mut *self.0.lock().await)
    }

    /// Runs `f` on the extension now, or returns `None` when a call is in progress (for the
    /// loop's synchronous moments, which must not wait).
    pub fn try_with<R>(&self, f: impl FnOnce(&mut E) -> R) -> Option<R> {
        let mut extension = self.0.try_lock().ok()?;
        Some(f(&mut extension))
    }
}

impl<E> Clone for Shared<E> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

/// The block text of a synchronous call that found the shared extension busy.
pub(crate) const SHARED_BUSY: &str = "Blocked: the shared hooks are busy in another agent";

#[async_trait::async_trait]
impl<E: Extension> Extension for Shared<E> {
    fn begin_turn(&mut self) {
        if let Ok(mut e) = self.0.try_lock() {
            e.begin_turn();
        }
    }
    fn new_conversation(&mut self) {
        if let Ok(mut e) = self.0.try_lock() {
            e.new_conversation();
        }
    }
    fn user_prompt_submit(&mut self, prompt: &str) -> Decision {
        match self.0.try_lock() {
            Ok(mut e) => e.user_prompt_submit(prompt),
            Err(_) => Decision::Block(SHARED_BUSY.into()),
        }
    }
    async fn before_turn(&mut self, turn: &mut TurnContext<'_>) -> Result<(), ApiError> {
        self.0.lock().await.before_turn(turn).await
    }
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        self.0.lock().await.pre_inference(context).await
    }
    async fn before_request(&mut self, request: &mut RequestContext<'_>) -> Result<(), ApiError> {
        self.0.lock().await.before_request(request).await
    }
    async fn on_request_error(
        &mut self,
        context: &mut LoopContext<'_>,
        error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        self.0.lock().await.on_request_error(context, error).await
    }
    fn pre_tool_use(&mut self, call: &ToolCall) -> Decision {
        match self.0.try_lock() {
            Ok(mut e) => e.pre_tool_use(call),
            Err(_) => Decision::Block(SHARED_BUSY.into()),
        }
    }
    fn post_tool_use(&mut self, call: &ToolUseBlock, outcome: &mut ToolOutcome) {
        if let Ok(mut e) = self.0.try_lock() {
            e.post_tool_use(call, outcome);
        }
    }
    fn after_round(&mut self, calls: &[CallRecord]) -> Option<String> {
        self.0.try_lock().ok()?.after_round(calls)
    }
    async fn after_tool_batch(&mut self, context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        self.0.lock().await.after_tool_batch(context).await
    }
    fn stop(&mut self, response: &MessagesResponse) -> Option<String> {
        self.0.try_lock().ok()?.stop(response)
    }
    async fn stop_turn(&mut self, context: &mut StopContext<'_>) -> StopDecision {
        self.0.lock().await.stop_turn(context).await
    }
    async fn after_answer(&mut self, context: &mut AnswerContext<'_>) {
        self.0.lock().await.after_answer(context).await;
    }
}
