//! `agent_loop`, written once, and one user turn around it.
//!
//! Source: course §0. The loop:
//! 1. call the model with `normalize_messages(history)` and append the assistant message as returned;
//! 2. stop when the response holds no `tool_use` block;
//! 3. otherwise run each `tool_use` in content order through the dispatch map;
//! 4. append **one** user message: the `tool_result` blocks in the same order, then any text the
//!    extensions add (a reminder goes last, or the API rejects the request).
//!
//! Chapters add behaviour through [`Extension`]s, never by copying this loop. The loop prints
//! nothing: it reports [`Event`]s to the sink it was built with, and the caller decides what a
//! person sees (the chapters' terminal is `agent_cli::ui::Terminal`).
//!
//! Beyond the course (ours): a `Stop` extension may force at most
//! [`AgentBuilder::max_stop_continuations`] extra rounds per turn, and every `stop_reason` has a
//! defined outcome (Messages API, "Handling stop reasons"): a [`StopNote`] for the listener and a
//! history that stays sendable.
//!
//! | `stop_reason` | what happens | note |
//! |---|---|---|
//! | `end_turn`, `stop_sequence`, none | the turn ends | `StopSequence`, or `EmptyAnswer` for no text |
//! | `tool_use` (or any answer with `tool_use` blocks) | the tools run and the loop goes on | — |
//! | `pause_turn` | the content is sent back to continue, at most `max_stop_continuations` times | `PausedTooOften` |
//! | `max_tokens` | the turn ends; a cut-off `tool_use` never runs and is answered `(cancelled)` | `MaxTokens`, `CutOffToolCall` |
//! | `refusal` | the whole turn, prompt included, leaves the history (the docs: reset the context) | `Refusal`, `RefusedTurnRemoved` |
//! | `model_context_window_exceeded` | the turn ends | `ContextWindowExceeded` |
//! | any other value | the turn ends, its `tool_use` blocks unrun | `UnknownStopReason` |
//!
//! Tools of an answer that ends in `refusal`, `model_context_window_exceeded`, `max_tokens` or an
//! unknown reason never run; `normalize_messages` answers them `(cancelled)` if the session goes on.
//!
//! ## Each request's SYSTEM and tools
//!
//! Before each request, after `pre_inference`, the [`Extension::before_request`]s set its SYSTEM
//! prompt and tools, starting from the turn's SYSTEM and the agent's tools (course s14, s15,
//! s16). The answer's tool calls are dispatched through the tools of the request that produced
//! it, so a tool added between two requests of one turn is found.
//!
//! ## Several agents at once
//!
//! An [`Agent`] and the future of its turn are `Send`: several agents, each with its own
//! history, tools, extensions and listener ([`crate::events::Prefixed`] marks whose output a
//! shared terminal shows), run as tasks on one runtime, the chapters' current-thread one
//! included, and share the model client (`Arc<dyn Model>`) and the workspace's tools. Each
//! counts its usage ([`Agent::session_usage`]); [`AgentBuilder::usage_total`] adds it to a total
//! they share.
//!
//! ## Recovery around a request (course s13–s15; each off unless the chapter opts in)
//!
//! | policy | builder | what happens |
//! |---|---|---|
//! | raise `max_tokens` | [`AgentBuilder::escalate_max_tokens`] | an answer cut off at `max_tokens` is dropped and the request sent again with the larger cap, once until an answer is not cut off (which restores the cap) |
//! | continue | [`AgentBuilder::continue_after_max_tokens`] | an answer cut off again stays in the history **without its `tool_use` blocks**, and the chapter's prompt asks the model to continue, at most N times per `agent_loop` call; then the turn ends |
//! | fall back | [`AgentBuilder::fallback_model`] | after N overloaded answers (529) in a row, the client's own retries included, the request goes to the fallback model, and so do the others of this `agent_loop` call |
//! | error as text | [`AgentBuilder::errors_as_text`] | a request that still fails ends the turn with the chapter's text as the assistant's answer (`[Error] …`) instead of an error |
//!
//! A `tool_use` is never sent without its `tool_result`. An answer cut off at `max_tokens` may
//! end in a `tool_use` whose input was cut in the middle (the stream's JSON never closed; it reads
//! as `{}`). Such a call never runs. Without the continue policy, the answer enters the history as
//! it came and `normalize_messages` answers its calls `(cancelled)`. With it, the history holds
//! what the answer said (its text, and any other block) but not its `tool_use` blocks: none ran,
//! and the last was cut, so the model, asked to continue, makes the call again whole.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::dispatch::{DispatchMap, ToolOutcome};
use crate::error::ApiError;
use crate::events::{Event, EventSink, Events, StopNote};
use crate::extension::{
    AfterBatch, AnswerContext, CallRecord, Decision, Extension, LoopContext, ModelHandle, Recovery,
    RequestContext, StopContext, StopDecision, TurnContext,
};
use crate::messages::{
    ContentBlock, Message, MessagesRequest, MessagesResponse, Role, SharedUsage, StopReason, Usage,
    UsageTotals,
};
use crate::model::Model;
use crate::normalize::Normalizer;

/// The [`LoopContext`] of `$agent` on `$history`: written as a macro because it borrows the
/// agent's fields one by one, beside the `&mut self.extensions` the caller iterates.
macro_rules! loop_context {
    ($agent:ident, $history:ident) => {
        LoopContext {
            history: &mut *$history,
            last_usage: $agent.last_usage.as_ref(),
            active_request: $agent.active_request.as_deref(),
            model: model_handle!($agent),
            events: &*$agent.events,
        }
    };
}

/// The [`ModelHandle`] of `$agent`, for an extension's own calls: its model, counting into its
/// session's usage and the shared total.
macro_rules! model_handle {
    ($agent:ident) => {
        ModelHandle::new(&$agent.model, &$agent.model_id, &mut $agent.session_usage, &*$agent.events)
            .with_total($agent.usage_total.as_deref())
    };
}

/// The course's `max_tokens`.
pub const MAX_TOKENS: u32 = 8000;

/// How many times per user turn `Stop` extensions (and `pause_turn`) may send the model back to
/// work.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// A harness: the model, the prompt, the dispatch map, the chapter's extensions and the sink its
/// events go to. Built complete by [`Agent::builder`].
pub struct Agent {
    model: Arc<dyn Model>,
    model_id: String,
    /// The chapter's SYSTEM prompt, as built.
    system: String,
    /// The SYSTEM prompt of the current turn: `system`, as the turn's
    /// [`Extension::before_turn`]s left it (s09 adds the recalled memory).
    turn_system: String,
    max_tokens: u32,
    tools: DispatchMap,
    extensions: Vec<Box<dyn Extension>>,
    events: Events,
    max_stop_continuations: u32,
    max_rounds: Option<u32>,
    /// Requests and tokens of the whole session so far (the REPL's `/usage`).
    session_usage: UsageTotals,
    /// Requests and tokens of the current turn; [`Agent::run_turn`] resets it.
    turn_usage: UsageTotals,
    /// `normalize_messages`, keeping the part of the history that can no longer change.
    normalizer: std::sync::Mutex<Normalizer>,
    /// The usage of the last response, as [`Extension::pre_inference`] sees it.
    last_usage: Option<Usage>,
    /// The prompt of the turn in progress ([`LoopContext::active_request`]).
    active_request: Option<String>,
    /// The SYSTEM prompt of the last request, as the [`Extension::before_request`]s left it.
    request_system: String,
    /// The tools of the last request, through which its answer's calls are dispatched.
    request_tools: DispatchMap,
    /// The recovery policies the chapter opted into.
    policies: Policies,
    /// Where every response is counted besides this agent's own usage: the total of several
    /// agents.
    usage_total: Option<Arc<SharedUsage>>,
}

/// Turns the error that ended a request into the assistant text the turn answers with
/// ([`AgentBuilder::errors_as_text`]).
pub type ErrorText = Arc<dyn Fn(&ApiError) -> String + Send + Sync>;

/// The recovery policies around a request (module documentation); all off by default.
#[derive(Default, Clone)]
struct Policies {
    /// The larger `max_tokens` of a request sent again after a cut-off answer.
    escalate_max_tokens: Option<u32>,
    /// The prompt that asks the model to continue a cut-off answer, and how often per loop.
    continuation: Option<(String, u32)>,
    /// The fallback model, and after how many overloaded answers in a row it takes over.
    fallback: Option<(String, u32)>,
    /// The text a failed request becomes.
    error_text: Option<ErrorText>,
}

/// What one call of the loop keeps between its requests (the course's s15 `RecoveryState`, and
/// the continuations of the turn).
struct LoopState {
    /// Times `Stop` extensions or `pause_turn` sent the model back.
    continuations: u32,
    /// `max_tokens` of the next request.
    max_tokens: u32,
    /// Whether `max_tokens` was raised since the last answer that was not cut off.
    escalated: bool,
    /// Times the model was asked to continue a cut-off answer.
    continued: u32,
    /// The fallback model, once the loop switched to it.
    fallback: Option<String>,
    /// Overloaded answers in a row in the last request's attempts.
    overloaded: u32,
}

/// How the loop ended.
enum Ended {
    /// With the model's last response.
    Response(MessagesResponse),
    /// With a failed request turned into text: the response holds that text.
    ErrorAnswered(MessagesResponse),
}

impl Ended {
    fn into_response(self) -> MessagesResponse {
        match self {
            Ended::Response(r) | Ended::ErrorAnswered(r) => r,
        }
    }
}

/// Builds an [`Agent`]: the model and `model` id are required, everything else has the course's
/// default (no SYSTEM prompt, no tools, no extensions, `max_tokens` 8000, no round cap, events
/// dropped).
#[must_use]
pub struct AgentBuilder {
    agent: Agent,
}

impl AgentBuilder {
    /// The SYSTEM prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.agent.system = system.into();
        self.agent.turn_system = self.agent.system.clone();
        self.agent.request_system = self.agent.system.clone();
        self
    }

    /// The dispatch map; its order is the request's `tools` order.
    pub fn tools(mut self, tools: DispatchMap) -> Self {
        self.agent.request_tools = tools.clone();
        self.agent.tools = tools;
        self
    }

    /// Adds one extension after those already added; they are called in this order.
    pub fn extension(mut self, extension: impl Extension + 'static) -> Self {
        self.agent.extensions.push(Box::new(extension));
        self
    }

    /// Adds extensions after those already added, in order.
    pub fn extensions(mut self, extensions: impl IntoIterator<Item = Box<dyn Extension>>) -> Self {
        self.agent.extensions.extend(extensions);
        self
    }

    /// Where the agent reports what happens (default: [`crate::events::Silent`]).
    pub fn events(mut self, events: Events) -> Self {
        self.agent.events = events;
        self
    }

    /// `max_tokens` of each request (default [`MAX_TOKENS`]).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.agent.max_tokens = max_tokens;
        self
    }

    /// The most model requests one call of [`Agent::agent_loop`] makes (a subagent's 30). When
    /// it is reached the loop ends with the last response, as if the model had stopped, and
    /// reports [`StopNote::RoundCap`]; at least one request is always made.
    pub fn max_rounds(mut self, max_rounds: u32) -> Self {
        self.agent.max_rounds = Some(max_rounds);
        self
    }

    /// How often per turn `Stop` extensions or `pause_turn` may send the model back to work
    /// (default [`MAX_STOP_CONTINUATIONS`]).
    pub fn max_stop_continuations(mut self, max: u32) -> Self {
        self.agent.max_stop_continuations = max;
        self
    }

    /// Raises `max_tokens` to `max_tokens` once when an answer is cut off at the cap: the cut-off
    /// answer is dropped and the request sent again (course s15: 16000). The cap goes back to
    /// [`AgentBuilder::max_tokens`] after the next answer that is not cut off.
    pub fn escalate_max_tokens(mut self, max_tokens: u32) -> Self {
        self.agent.policies.escalate_max_tokens = Some(max_tokens);
        self
    }

    /// When an answer is cut off at `max_tokens` (after the raise of
    /// [`AgentBuilder::escalate_max_tokens`], if set), keeps what it said, drops its `tool_use`
    /// blocks (the last one cut in the middle; none ran), and appends `prompt` as a user message
    /// so the model goes on, at most `max` times per `agent_loop` call (course s15:
    /// `CONTINUATION_PROMPT`, twice). Then the turn ends with the cut-off answer.
    pub fn continue_after_max_tokens(mut self, prompt: impl Into<String>, max: u32) -> Self {
        self.agent.policies.continuation = Some((prompt.into(), max));
        self
    }

    /// After `after_overloaded` overloaded answers (HTTP 529, `overloaded_error`) in a row,
    /// counting the client's own retries, sends the request to `model` instead, and the other
    /// requests of this `agent_loop` call too (course s15: `FALLBACK_MODEL_ID` after 2). The
    /// listener hears [`StopNote::FallbackModel`].
    pub fn fallback_model(mut self, model: impl Into<String>, after_overloaded: u32) -> Self {
        self.agent.policies.fallback = Some((model.into(), after_overloaded.max(1)));
        self
    }

    /// A request that fails (after retries, the fallback and the extensions' repairs) no longer
    /// fails the turn: `text(error)` joins the history as the assistant's answer and the turn
    /// ends with it (course s13–s15: `[Error] {Type}: {e}`). The listener hears
    /// [`StopNote::ErrorAnswered`] with the text; the turn's response holds it, with no id and no
    /// usage. No `Stop` or `after_answer` extension runs for it.
    pub fn errors_as_text(mut self, text: impl Fn(&ApiError) -> String + Send + Sync + 'static) -> Self {
        self.agent.policies.error_text = Some(Arc::new(text));
        self
    }

    /// Also counts every response of this agent (its extensions' own calls included) into
    /// `total`, which other agents may share: the usage of several agents apart
    /// ([`Agent::session_usage`]) and in total.
    pub fn usage_total(mut self, total: Arc<SharedUsage>) -> Self {
        self.agent.usage_total = Some(total);
        self
    }

    /// The agent.
    pub fn build(self) -> Agent {
        self.agent
    }
}

/// How a turn ended without an API error.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The model answered; this is its last response. With [`AgentBuilder::errors_as_text`], a
    /// failed request also ends here, with a response that holds the error's text, no id and no
    /// usage.
    Answered(Box<MessagesResponse>),
    /// An extension blocked the prompt (`UserPromptSubmit`); nothing was sent.
    PromptBlocked(String),
}

impl Agent {
    /// An agent on `model`, sending `model_id` in each request; finish it with the
    /// [`AgentBuilder`]'s methods and [`AgentBuilder::build`].
    pub fn builder(model: Arc<dyn Model>, model_id: impl Into<String>) -> AgentBuilder {
        AgentBuilder {
            agent: Agent {
                model,
                model_id: model_id.into(),
                system: String::new(),
                turn_system: String::new(),
                max_tokens: MAX_TOKENS,
                tools: DispatchMap::new(),
                extensions: Vec::new(),
                events: crate::events::silent(),
                max_stop_continuations: MAX_STOP_CONTINUATIONS,
                max_rounds: None,
                session_usage: UsageTotals::default(),
                turn_usage: UsageTotals::default(),
                normalizer: std::sync::Mutex::new(Normalizer::new()),
                last_usage: None,
                active_request: None,
                request_system: String::new(),
                request_tools: DispatchMap::new(),
                policies: Policies::default(),
                usage_total: None,
            },
        }
    }

    /// The model this agent talks to, shared: a tool (a subagent) may build its own agent on it.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }

    /// The `model` field of each request (`MODEL_ID`).
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The sink this agent reports to.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The dispatch map, as built: what each request starts from.
    pub fn tools(&self) -> &DispatchMap {
        &self.tools
    }

    /// The tools the last request sent, as the [`Extension::before_request`]s left them (before
    /// any request: the agent's own).
    pub fn request_tools(&self) -> &DispatchMap {
        &self.request_tools
    }

    /// The SYSTEM prompt the last request sent, as the [`Extension::before_request`]s left it
    /// (before any request: the chapter's).
    pub fn request_system(&self) -> &str {
        &self.request_system
    }

    /// The SYSTEM prompt the next request sends: the chapter's, as the current turn's
    /// [`Extension::before_turn`]s left it.
    pub fn current_system(&self) -> &str {
        &self.turn_system
    }

    /// Requests and tokens of the whole session so far, the extensions' own calls included
    /// (`/usage`).
    pub fn session_usage(&self) -> UsageTotals {
        self.session_usage
    }

    /// A new conversation (the REPL's `/clear`, after the caller emptied its history): every
    /// extension's [`Extension::new_conversation`] runs, and what the agent kept of the last
    /// response goes. The session's usage stays.
    pub fn new_conversation(&mut self) {
        for ext in &mut self.extensions {
            ext.new_conversation();
        }
        self.last_usage = None;
        self.active_request = None;
        self.turn_system.clone_from(&self.system);
        self.request_system.clone_from(&self.system);
        self.request_tools = self.tools.clone();
    }

    /// One user turn (course §0): extensions see the prompt, it joins `history` as
    /// `{"role":"user","content":PROMPT}`, the turn's SYSTEM is set ([`Extension::before_turn`]),
    /// the loop runs, and after a final answer the [`Extension::after_answer`]s run.
    ///
    /// After a `refusal`, the turn (prompt included) is removed from `history`, as the API's docs
    /// ask: sent again, the same context would be refused again.
    ///
    /// # Errors
    /// The [`ApiError`] that ended the turn. `history` stays sendable: the prompt is kept, and a
    /// `tool_use` left without a result is answered `(cancelled)` by `normalize_messages`.
    pub async fn run_turn(&mut self, history: &mut Vec<Message>, prompt: &str) -> Result<TurnEnd, ApiError> {
        for ext in &mut self.extensions {
            ext.begin_turn();
        }
        for ext in &mut self.extensions {
            if let Decision::Block(why) = ext.user_prompt_submit(prompt) {
                self.events.on_event(&Event::Stop(StopNote::PromptBlocked(&why)));
                return Ok(TurnEnd::PromptBlocked(why));
            }
        }
        let start = history.len();
        history.push(Message::user_text(prompt));
        self.active_request = Some(prompt.to_owned());
        self.turn_usage = UsageTotals::default();
        let result = match self.before_turn(history, prompt).await {
            Ok(()) => self.run_loop(history).await,
            Err(e) => Err(e),
        };
        self.active_request = None;
        if self.turn_usage.requests > 0 {
            self.events.on_event(&Event::TurnUsage(&self.turn_usage));
        }
        let last = match result? {
            Ended::Response(last) => last,
            Ended::ErrorAnswered(text) => return Ok(TurnEnd::Answered(Box::new(text))),
        };
        if last.stop_reason == Some(StopReason::Refusal) {
            self.forget_refused_turn(history, start);
        } else if last.tool_uses().next().is_none() {
            self.after_answer(history, &last).await;
        }
        Ok(TurnEnd::Answered(Box::new(last)))
    }

    /// The agent loop (course §0): call the model, run its tools, feed the results back, until a
    /// response asks for no tool. Returns that last response. [`Agent::run_turn`] wraps it with
    /// the prompt; a caller with a history of its own (a subagent) calls it directly.
    ///
    /// # Errors
    /// The model's [`ApiError`] (after one retry when an [`Extension::on_request_error`] repaired
    /// the history), or one an extension returned; what was appended to `history` before it stays.
    pub async fn agent_loop(&mut self, history: &mut Vec<Message>) -> Result<MessagesResponse, ApiError> {
        // Without run_turn (a subagent's loop), the request is the latest prompt in the history,
        // and it lasts as long as this call.
        if self.active_request.is_some() {
            return self.run_loop(history).await.map(Ended::into_response);
        }
        self.active_request = latest_user_text(history);
        let result = self.run_loop(history).await;
        self.active_request = None;
        result.map(Ended::into_response)
    }

    /// The loop itself, for [`Agent::agent_loop`] and [`Agent::run_turn`].
    async fn run_loop(&mut self, history: &mut Vec<Message>) -> Result<Ended, ApiError> {
        let mut state = LoopState {
            continuations: 0,
            max_tokens: self.max_tokens,
            escalated: false,
            continued: 0,
            fallback: None,
            overloaded: 0,
        };
        let (mut rounds, mut previous) = (0, None);
        loop {
            if let Some(max) = self.max_rounds
                && rounds >= max.max(1)
                && let Some(last) = previous.take()
            {
                self.events.on_event(&Event::Stop(StopNote::RoundCap(rounds)));
                return Ok(Ended::Response(last));
            }
            // 1. Call the model and append the assistant message as returned.
            let response = match self.request_with_recovery(history, &mut state).await {
                Ok(response) => response,
                Err(error) => return self.error_answer(history, error, &state),
            };
            rounds += 1;
            let cut_off = response.stop_reason == Some(StopReason::MaxTokens);
            if !cut_off {
                state.max_tokens = self.max_tokens;
                state.escalated = false;
            } else if let Some(raised) = self.policies.escalate_max_tokens
                && !state.escalated
            {
                // Dropped: the same request goes again with room for the whole answer.
                state.escalated = true;
                state.max_tokens = raised;
                self.events.on_event(&Event::Stop(StopNote::MaxTokensRaised(raised)));
                previous = Some(response);
                continue;
            }
            let continuing = cut_off && self.policies.continuation.is_some();
            let mut kept = response.content.clone();
            let before = kept.len();
            if continuing {
                // Cut off: none of its calls ran, and the last is incomplete (module docs).
                kept.retain(|b| !matches!(b, ContentBlock::ToolUse(_)));
            }
            let dropped = before - kept.len();
            kept.iter_mut().for_each(ContentBlock::shrink_to_fit);
            if !(continuing && kept.is_empty()) {
                history.push(Message::assistant_blocks(kept));
            }
            if let Some((prompt, max)) = self.policies.continuation.as_ref().filter(|_| continuing) {
                if state.continued < *max {
                    state.continued += 1;
                    let times = state.continued;
                    let note = StopNote::Continued { times, max: *max, dropped_tool_calls: dropped };
                    self.events.on_event(&Event::Stop(note));
                    history.push(Message::user_text(prompt.as_str()));
                    previous = Some(response);
                    continue;
                }
                let note = if dropped > 0 {
                    StopNote::CutOffToolCall
                } else {
                    StopNote::MaxTokens(state.max_tokens)
                };
                self.events.on_event(&Event::Stop(note));
                return Ok(Ended::Response(response));
            }

            // 2. Stop when the response holds no tool_use block (or its stop_reason ends the turn).
            let has_calls = response.tool_uses().next().is_some();
            match self.next_step(&response, has_calls, &mut state) {
                Next::RunTools => {}
                Next::SendBack => {
                    previous = Some(response);
                    continue;
                }
                Next::End => return Ok(Ended::Response(response)),
                Next::Stop => match self.stop_hooks(history, &response, &mut state.continuations).await {
                    Some(text) => {
                        history.push(Message::user_text(text));
                        previous = Some(response);
                        continue;
                    }
                    None => return Ok(Ended::Response(response)),
                },
            }

            // 3. Run each tool_use in content order; 4. append one user message of results.
            let results = self.run_tools(&response).await;
            history.push(Message::user_blocks(results));
            if self.after_tool_batch(history).await? == AfterBatch::EndTurn {
                return Ok(Ended::Response(response));
            }
            previous = Some(response);
        }
    }

    /// The end of a loop whose request failed with `error`: the error itself, or, with
    /// [`AgentBuilder::errors_as_text`], the chapter's text as the assistant's answer.
    fn error_answer(
        &mut self,
        history: &mut Vec<Message>,
        error: ApiError,
        state: &LoopState,
    ) -> Result<Ended, ApiError> {
        let Some(text) = self.policies.error_text.as_ref().map(|f| f(&error)) else {
            return Err(error);
        };
        self.events.on_event(&Event::Stop(StopNote::ErrorAnswered(&text)));
        let content = vec![ContentBlock::text(text)];
        history.push(Message::assistant_blocks(content.clone()));
        Ok(Ended::ErrorAnswered(MessagesResponse {
            id: String::new(),
            kind: "message".into(),
            role: Role::Assistant,
            content,
            model: state.fallback.clone().unwrap_or_else(|| self.model_id.clone()),
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
            stop_details: None,
            usage: Usage::default(),
        }))
    }

    /// The request `agent_loop` sends next for `history`: the last request's SYSTEM and tools
    /// (see [`Extension::before_request`]; before any, the turn's SYSTEM and the agent's tools),
    /// and `normalize_messages(history)`, computed incrementally (see [`Normalizer`]).
    ///
    /// It carries no `cache_control`: the HTTP client puts the prompt-caching breakpoints on the
    /// body as it sends it ([`crate::client::cache`]), chosen from this request alone, so they
    /// move with the history when an extension rewrites it (s08's compaction) and nothing placed
    /// for an older history is ever sent.
    pub fn request(&self, history: &[Message]) -> MessagesRequest {
        self.build_request(history, self.max_tokens, &self.model_id)
    }

    /// [`Agent::request`] with this `max_tokens` and `model`.
    fn build_request(&self, history: &[Message], max_tokens: u32, model: &str) -> MessagesRequest {
        let messages = self.normalizer.lock().unwrap_or_else(|p| p.into_inner()).normalize(history);
        MessagesRequest {
            model: model.to_owned(),
            max_tokens,
            system: self.request_system.clone(),
            messages,
            tools: self.request_tools.specs(),
            stream: None,
        }
    }

    /// What the loop does after a response, by its `stop_reason` (the module table), reporting a
    /// [`StopNote`] where the listener should hear of it.
    fn next_step(&self, response: &MessagesResponse, has_calls: bool, state: &mut LoopState) -> Next {
        let note = |note| self.events.on_event(&Event::Stop(note));
        let continuations = &mut state.continuations;
        match &response.stop_reason {
            Some(StopReason::MaxTokens) if has_calls => {
                note(StopNote::CutOffToolCall);
                Next::End
            }
            Some(StopReason::MaxTokens) => {
                note(StopNote::MaxTokens(state.max_tokens));
                Next::End
            }
            Some(StopReason::PauseTurn) if *continuations < self.max_stop_continuations => {
                // The API paused a long turn: sending the content back continues it.
                *continuations += 1;
                Next::SendBack
            }
            Some(StopReason::PauseTurn) => {
                note(StopNote::PausedTooOften(*continuations));
                Next::End
            }
            Some(StopReason::Refusal) => {
                let why = response.stop_details.as_ref().and_then(|d| d.explanation.as_deref());
                note(StopNote::Refusal(why));
                Next::End
            }
            Some(StopReason::ModelContextWindowExceeded) => {
                note(StopNote::ContextWindowExceeded);
                Next::End
            }
            Some(StopReason::Other(reason)) => {
                note(StopNote::UnknownStopReason { reason, tools_skipped: has_calls });
                Next::End
            }
            Some(StopReason::StopSequence) => {
                note(StopNote::StopSequence(response.stop_sequence.as_deref()));
                if has_calls { Next::RunTools } else { Next::Stop }
            }
            Some(StopReason::EndTurn | StopReason::ToolUse) | None => {
                if has_calls {
                    Next::RunTools
                } else {
                    if response.text().trim().is_empty() {
                        note(StopNote::EmptyAnswer);
                    }
                    Next::Stop
                }
            }
        }
    }

    /// `Stop`: the first extension that answers sends the model back to work with its text, at
    /// most `max_stop_continuations` times a turn.
    async fn stop_hooks(
        &mut self,
        history: &[Message],
        response: &MessagesResponse,
        continuations: &mut u32,
    ) -> Option<String> {
        let mut forced = None;
        for ext in &mut self.extensions {
            let mut context = StopContext {
                history,
                response,
                continuations: *continuations,
                max_continuations: self.max_stop_continuations,
                model: model_handle!(self),
                events: &*self.events,
            };
            if let StopDecision::Continue(text) = ext.stop_turn(&mut context).await {
                forced = Some(text);
                break;
            }
        }
        let forced = forced?;
        if *continuations < self.max_stop_continuations {
            *continuations += 1;
            return Some(forced);
        }
        self.events.on_event(&Event::Stop(StopNote::StopHookCap(self.max_stop_continuations)));
        None
    }

    /// Runs the response's tool calls in content order, each through `PreToolUse` and
    /// `PostToolUse`, and returns the round's user content: the `tool_result` blocks in order,
    /// then the text the extensions add (course §0: text goes after every `tool_result`).
    async fn run_tools(&mut self, response: &MessagesResponse) -> Vec<ContentBlock> {
        let calls: Vec<_> = response.tool_uses().collect();
        let mut results = Vec::with_capacity(calls.len() + 1);
        let mut records = Vec::with_capacity(calls.len());
        for block in calls {
            // The input is parsed once, here: the extensions and the tool see the same value.
            let mut call = self.request_tools.prepare(block);
            let blocked = self.extensions.iter_mut().find_map(|ext| match ext.pre_tool_use(&call) {
                Decision::Block(why) => Some(why),
                Decision::Continue => None,
            });
            // What the call is about; a tool that shows its own output (the todo list) needs no
            // copy of its input.
            let shows_own_output = self.request_tools.displays_output(&call.name);
            let input = match call.subject.text() {
                Some(about) => Some(about.to_owned()),
                None if shows_own_output => None,
                None => Some(call.input.to_string()),
            };
            let name = &call.name;
            self.events.on_event(&Event::ToolCall {
                name,
                input: input.as_deref(),
                blocked: blocked.is_some(),
            });
            let (outcome, ran) = match blocked {
                Some(why) => (ToolOutcome::error(why), false),
                None => {
                    let mut outcome = self.request_tools.run(&mut call).await;
                    for ext in &mut self.extensions {
                        ext.post_tool_use(&call, &mut outcome);
                    }
                    (outcome, true)
                }
            };
            self.events.on_event(&Event::ToolResult {
                name: &call.name,
                content: &outcome.content,
                is_error: outcome.is_error,
                shows_own_output,
            });
            records.push(CallRecord { name: call.name.clone(), ran, is_error: outcome.is_error });
            results.push(ContentBlock::tool_result(&call.id, outcome.content, outcome.is_error));
        }
        for ext in &mut self.extensions {
            if let Some(text) = ext.after_round(&records) {
                self.events.on_event(&Event::Injected(&text));
                results.push(ContentBlock::text(text));
            }
        }
        results
    }

    /// `pre_inference`, `before_request`, then one model call. When it fails: after enough
    /// overloaded answers in a row the request goes to the fallback model
    /// ([`AgentBuilder::fallback_model`]), once per loop; otherwise the
    /// [`Extension::on_request_error`]s may repair the history, and then the request is sent once
    /// more.
    async fn request_with_recovery(
        &mut self,
        history: &mut Vec<Message>,
        state: &mut LoopState,
    ) -> Result<MessagesResponse, ApiError> {
        self.pre_inference(history).await?;
        self.before_request(history).await?;
        let mut repaired = false;
        loop {
            let error = match self.call_model(history, state).await {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if let Some((fallback, after)) = &self.policies.fallback
                && state.fallback.is_none()
                && state.overloaded >= *after
            {
                let note = StopNote::FallbackModel { model: fallback, overloaded: state.overloaded };
                self.events.on_event(&Event::Stop(note));
                state.fallback = Some(fallback.clone());
                state.overloaded = 0;
                continue;
            }
            if !repaired && self.on_request_error(history, &error).await? == Recovery::Retry {
                repaired = true;
                continue;
            }
            return Err(error);
        }
    }

    /// One model call, reported as [`Event::Request`], [`Event::Sent`], the deltas, then
    /// [`Event::Response`];
    /// notes in `state` how many overloaded answers in a row its attempts got.
    async fn call_model(
        &mut self,
        history: &[Message],
        state: &mut LoopState,
    ) -> Result<MessagesResponse, ApiError> {
        let model = state.fallback.as_deref().unwrap_or(&self.model_id);
        let request = self.build_request(history, state.max_tokens, model);
        self.events.on_event(&Event::Request);
        self.events.on_event(&Event::Sent(&request));
        let sink =
            Watch { inner: &*self.events, streamed: AtomicBool::new(false), overloaded: AtomicU32::new(0) };
        let result = self.model.create(&request, &sink).await;
        let streamed = sink.streamed.load(Ordering::Relaxed);
        self.events.on_event(&Event::Response { result: result.as_ref(), streamed });
        let overloaded = sink.overloaded.load(Ordering::Relaxed);
        state.overloaded = match &result {
            Ok(_) => 0,
            Err(e) if e.is_overloaded() => overloaded + 1,
            Err(_) => 0,
        };
        let response = result?;
        self.turn_usage.add(&response.usage);
        self.session_usage.add(&response.usage);
        if let Some(total) = &self.usage_total {
            total.add(&response.usage);
        }
        self.last_usage = Some(response.usage.clone());
        Ok(response)
    }

    /// Every extension's [`Extension::before_request`], on a copy of the turn's SYSTEM and the
    /// agent's tools; what they leave is what the request sends and dispatches through.
    async fn before_request(&mut self, history: &[Message]) -> Result<(), ApiError> {
        let mut system = self.turn_system.clone();
        let mut tools = self.tools.clone();
        for ext in &mut self.extensions {
            let mut request =
                RequestContext { system: &mut system, tools: &mut tools, history, events: &*self.events };
            ext.before_request(&mut request).await?;
        }
        self.request_system = system;
        self.request_tools = tools;
        Ok(())
    }

    /// Every extension's [`Extension::before_turn`], on this turn's SYSTEM.
    async fn before_turn(&mut self, history: &[Message], prompt: &str) -> Result<(), ApiError> {
        self.turn_system.clone_from(&self.system);
        for ext in &mut self.extensions {
            let mut context = TurnContext {
                system: &mut self.turn_system,
                prompt,
                history,
                model: model_handle!(self),
                events: &*self.events,
            };
            ext.before_turn(&mut context).await?;
        }
        Ok(())
    }

    /// Every extension's [`Extension::pre_inference`], in order.
    async fn pre_inference(&mut self, history: &mut Vec<Message>) -> Result<(), ApiError> {
        for ext in &mut self.extensions {
            let mut context = loop_context!(self, history);
            ext.pre_inference(&mut context).await?;
        }
        Ok(())
    }

    /// Every extension's [`Extension::after_tool_batch`]; the turn ends if one says so.
    async fn after_tool_batch(&mut self, history: &mut Vec<Message>) -> Result<AfterBatch, ApiError> {
        let mut after = AfterBatch::Continue;
        for ext in &mut self.extensions {
            let mut context = loop_context!(self, history);
            if ext.after_tool_batch(&mut context).await? == AfterBatch::EndTurn {
                after = AfterBatch::EndTurn;
            }
        }
        Ok(after)
    }

    /// Asks the extensions, in order, whether they repaired the history after `error`; the first
    /// that did wins.
    async fn on_request_error(
        &mut self,
        history: &mut Vec<Message>,
        error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        for ext in &mut self.extensions {
            let mut context = loop_context!(self, history);
            if ext.on_request_error(&mut context, error).await? == Recovery::Retry {
                return Ok(Recovery::Retry);
            }
        }
        Ok(Recovery::GiveUp)
    }

    /// Every extension's [`Extension::after_answer`], after the turn's final answer.
    async fn after_answer(&mut self, history: &[Message], response: &MessagesResponse) {
        for ext in &mut self.extensions {
            let mut context =
                AnswerContext { history, response, model: model_handle!(self), events: &*self.events };
            ext.after_answer(&mut context).await;
        }
    }

    /// Removes the refused turn, `history[start..]`, and reports how many tool results went with it.
    fn forget_refused_turn(&self, history: &mut Vec<Message>, start: usize) {
        let removed = history.split_off(start.min(history.len()));
        let ran = removed
            .iter()
            .filter(|m| m.role == Role::User)
            .flat_map(|m| m.blocks())
            .filter(|b| matches!(b, ContentBlock::ToolResult(_)))
            .count();
        self.events.on_event(&Event::Stop(StopNote::RefusedTurnRemoved(ran)));
    }
}

/// What the loop does after a response.
enum Next {
    /// Run the response's tool calls.
    RunTools,
    /// Send the history back as it is (`pause_turn`).
    SendBack,
    /// The turn ends with this response.
    End,
    /// No tool call: ask the `Stop` extensions.
    Stop,
}

/// Passes events on, noting whether a text delta went by and how many of the client's retries
/// in a row followed an overloaded answer.
struct Watch<'a> {
    inner: &'a dyn EventSink,
    streamed: AtomicBool,
    overloaded: AtomicU32,
}

impl EventSink for Watch<'_> {
    fn on_event(&self, event: &Event<'_>) {
        match event {
            Event::TextDelta(_) => self.streamed.store(true, Ordering::Relaxed),
            Event::Retry { error, .. } if error.is_overloaded() => {
                self.overloaded.fetch_add(1, Ordering::Relaxed);
            }
            Event::Retry { .. } => self.overloaded.store(0, Ordering::Relaxed),
            _ => {}
        }
        self.inner.on_event(event);
    }
}

/// The text of the latest user message that is a prompt rather than tool results: what a
/// subagent's `agent_loop` was asked, when no [`Agent::run_turn`] set the active request.
pub fn latest_user_text(history: &[Message]) -> Option<String> {
    history.iter().rev().filter(|m| m.role == Role::User).find_map(|m| {
        let blocks = m.blocks();
        if blocks.iter().any(|b| matches!(b, ContentBlock::ToolResult(_))) {
            return None;
        }
        let text: Vec<_> = blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        (!text.is_empty()).then(|| text.join("\n"))
    })
}
