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

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::dispatch::{DispatchMap, ToolOutcome};
use crate::error::ApiError;
use crate::events::{Event, EventSink, Events, StopNote};
use crate::extension::{
    AfterBatch, AnswerContext, CallRecord, Decision, Extension, LoopContext, ModelHandle, Recovery,
    TurnContext,
};
use crate::messages::{
    ContentBlock, Message, MessagesRequest, MessagesResponse, Role, StopReason, Usage, UsageTotals,
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
            model: ModelHandle::new(
                &$agent.model,
                &$agent.model_id,
                &mut $agent.session_usage,
                &*$agent.events,
            ),
            events: &*$agent.events,
        }
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
        self
    }

    /// The dispatch map; its order is the request's `tools` order.
    pub fn tools(mut self, tools: DispatchMap) -> Self {
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

    /// The agent.
    pub fn build(self) -> Agent {
        self.agent
    }
}

/// How a turn ended without an API error.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The model answered; this is its last response.
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

    /// The dispatch map.
    pub fn tools(&self) -> &DispatchMap {
        &self.tools
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
            Ok(()) => self.agent_loop(history).await,
            Err(e) => Err(e),
        };
        self.active_request = None;
        if self.turn_usage.requests > 0 {
            self.events.on_event(&Event::TurnUsage(&self.turn_usage));
        }
        let last = result?;
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
            return self.run_loop(history).await;
        }
        self.active_request = latest_user_text(history);
        let result = self.run_loop(history).await;
        self.active_request = None;
        result
    }

    /// The loop itself, for [`Agent::agent_loop`].
    async fn run_loop(&mut self, history: &mut Vec<Message>) -> Result<MessagesResponse, ApiError> {
        let mut continuations = 0;
        let (mut rounds, mut previous) = (0, None);
        loop {
            if let Some(max) = self.max_rounds
                && rounds >= max.max(1)
                && let Some(last) = previous.take()
            {
                self.events.on_event(&Event::Stop(StopNote::RoundCap(rounds)));
                return Ok(last);
            }
            // 1. Call the model and append the assistant message as returned.
            let response = self.request_with_recovery(history).await?;
            rounds += 1;
            let mut kept = response.content.clone();
            kept.iter_mut().for_each(ContentBlock::shrink_to_fit);
            history.push(Message::assistant_blocks(kept));

            // 2. Stop when the response holds no tool_use block (or its stop_reason ends the turn).
            let has_calls = response.tool_uses().next().is_some();
            match self.next_step(&response, has_calls, &mut continuations) {
                Next::RunTools => {}
                Next::SendBack => {
                    previous = Some(response);
                    continue;
                }
                Next::End => return Ok(response),
                Next::Stop => match self.stop_hooks(&response, &mut continuations) {
                    Some(text) => {
                        history.push(Message::user_text(text));
                        previous = Some(response);
                        continue;
                    }
                    None => return Ok(response),
                },
            }

            // 3. Run each tool_use in content order; 4. append one user message of results.
            let results = self.run_tools(&response).await;
            history.push(Message::user_blocks(results));
            if self.after_tool_batch(history).await? == AfterBatch::EndTurn {
                return Ok(response);
            }
            previous = Some(response);
        }
    }

    /// The request `agent_loop` sends next for `history`: the turn's SYSTEM, the tools, and
    /// `normalize_messages(history)`, computed incrementally (see [`Normalizer`]).
    ///
    /// It carries no `cache_control`: the HTTP client puts the prompt-caching breakpoints on the
    /// body as it sends it ([`crate::client::cache`]), chosen from this request alone, so they
    /// move with the history when an extension rewrites it (s08's compaction) and nothing placed
    /// for an older history is ever sent.
    pub fn request(&self, history: &[Message]) -> MessagesRequest {
        let messages = self.normalizer.lock().unwrap_or_else(|p| p.into_inner()).normalize(history);
        MessagesRequest {
            model: self.model_id.clone(),
            max_tokens: self.max_tokens,
            system: self.turn_system.clone(),
            messages,
            tools: self.tools.specs(),
            stream: None,
        }
    }

    /// What the loop does after a response, by its `stop_reason` (the module table), reporting a
    /// [`StopNote`] where the listener should hear of it.
    fn next_step(&self, response: &MessagesResponse, has_calls: bool, continuations: &mut u32) -> Next {
        let note = |note| self.events.on_event(&Event::Stop(note));
        match &response.stop_reason {
            Some(StopReason::MaxTokens) if has_calls => {
                note(StopNote::CutOffToolCall);
                Next::End
            }
            Some(StopReason::MaxTokens) => {
                note(StopNote::MaxTokens(self.max_tokens));
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
    fn stop_hooks(&mut self, response: &MessagesResponse, continuations: &mut u32) -> Option<String> {
        let forced = self.extensions.iter_mut().find_map(|ext| ext.stop(response))?;
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
            let mut call = self.tools.prepare(block);
            let blocked = self.extensions.iter_mut().find_map(|ext| match ext.pre_tool_use(&call) {
                Decision::Block(why) => Some(why),
                Decision::Continue => None,
            });
            // What the call is about; a tool that shows its own output (the todo list) needs no
            // copy of its input.
            let shows_own_output = self.tools.displays_output(&call.name);
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
                    let mut outcome = self.tools.run(&mut call).await;
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

    /// `pre_inference`, then one model call; when it fails, the [`Extension::on_request_error`]s
    /// may repair the history, and then the request is sent once more.
    async fn request_with_recovery(
        &mut self,
        history: &mut Vec<Message>,
    ) -> Result<MessagesResponse, ApiError> {
        self.pre_inference(history).await?;
        match self.call_model(history).await {
            Ok(response) => Ok(response),
            Err(error) => match self.on_request_error(history, &error).await? {
                Recovery::Retry => self.call_model(history).await,
                Recovery::GiveUp => Err(error),
            },
        }
    }

    /// One model call, reported as [`Event::Request`], the deltas, then [`Event::Response`].
    async fn call_model(&mut self, history: &[Message]) -> Result<MessagesResponse, ApiError> {
        let request = self.request(history);
        self.events.on_event(&Event::Request);
        let sink = Watch { inner: &*self.events, streamed: AtomicBool::new(false) };
        let result = self.model.create(&request, &sink).await;
        let streamed = sink.streamed.load(Ordering::Relaxed);
        self.events.on_event(&Event::Response { result: result.as_ref(), streamed });
        let response = result?;
        self.turn_usage.add(&response.usage);
        self.session_usage.add(&response.usage);
        self.last_usage = Some(response.usage.clone());
        Ok(response)
    }

    /// Every extension's [`Extension::before_turn`], on this turn's SYSTEM.
    async fn before_turn(&mut self, history: &[Message], prompt: &str) -> Result<(), ApiError> {
        self.turn_system.clone_from(&self.system);
        for ext in &mut self.extensions {
            let mut context = TurnContext {
                system: &mut self.turn_system,
                prompt,
                history,
                model: ModelHandle::new(&self.model, &self.model_id, &mut self.session_usage, &*self.events),
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
            let mut context = AnswerContext {
                history,
                response,
                model: ModelHandle::new(&self.model, &self.model_id, &mut self.session_usage, &*self.events),
                events: &*self.events,
            };
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

/// Passes events on, noting whether a text delta went by.
struct Watch<'a> {
    inner: &'a dyn EventSink,
    streamed: AtomicBool,
}

impl EventSink for Watch<'_> {
    fn on_event(&self, event: &Event<'_>) {
        if matches!(event, Event::TextDelta(_)) {
            self.streamed.store(true, Ordering::Relaxed);
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
