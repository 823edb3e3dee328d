//! `agent_loop`, written once, and one user turn around it.
//!
//! Source: course §0. The loop:
//! 1. call the model with `normalize_messages(history)` and append the assistant message as returned;
//! 2. stop when the response holds no `tool_use` block;
//! 3. otherwise run each `tool_use` in content order through the dispatch map;
//! 4. append **one** user message: the `tool_result` blocks in the same order, then any text the
//!    extensions add (a reminder goes last, or the API rejects the request).
//!
//! Chapters add behaviour through [`Extension`]s, never by copying this loop. Beyond the course
//! (ours): a `Stop` extension may force at most [`Agent::max_stop_continuations`] extra rounds per
//! turn, and every `stop_reason` has a defined outcome (Messages API, "Handling stop reasons";
//! issue 11): a line for the user, a history that stays sendable, and an exit code for `-p`
//! ([`TurnEnd::exit_code`]):
//!
//! | `stop_reason` | what happens | `-p` exit |
//! |---|---|---|
//! | `end_turn`, `stop_sequence` (named on stderr), none | the turn ends | 0 |
//! | `tool_use` (or any answer with `tool_use` blocks) | the tools run and the loop goes on | — |
//! | `pause_turn` | the content is sent back to continue, at most [`Agent::max_stop_continuations`] times; then the turn ends and says so | 5 |
//! | `max_tokens` | the answer is cut off and says so; a cut-off `tool_use` never runs and is answered `(cancelled)` | 5 |
//! | `refusal` | `stop_details.explanation` is shown; the whole turn, prompt included, leaves the history (the docs: reset the context after a refusal), and the user is told | 3 |
//! | `model_context_window_exceeded` | the answer is truncated; the user is told to start over (`/clear` or a new session) | 4 |
//! | any other value | named on stderr; the turn ends, its `tool_use` blocks unrun | 6 |
//!
//! Tools of an answer that ends in `refusal`, `model_context_window_exceeded`, `max_tokens` or an
//! unknown reason never run; `normalize_messages` answers them `(cancelled)` if the session goes on.
//! Each response's text is printed once, as it arrives: delta by delta when streamed (a spinner on
//! a terminal's stderr until then), whole when the model does not stream (replay, `--no-stream`).

use crate::dispatch::{DispatchMap, ToolOutcome};
use std::sync::Arc;

use crate::error::ApiError;
use crate::extension::{CallRecord, Decision, Extension, LoopContext};
use crate::messages::{ContentBlock, Message, MessagesRequest, MessagesResponse, StopReason, Usage};
use crate::model::Model;
use crate::normalize::Normalizer;
use crate::ui::Ui;

/// The course's `max_tokens`.
pub const MAX_TOKENS: u32 = 8000;

/// How many times per user turn `Stop` extensions may send the model back to work.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// A harness: the model, the prompt, the dispatch map and the chapter's extensions.
pub struct Agent {
    /// Answers requests: the HTTP client, a replay, or a recording wrapper. Shared, so that an
    /// extension (a summary for compaction) or a tool (a subagent's own loop) can call it too.
    pub model: Arc<dyn Model>,
    /// `model` field of each request (`MODEL_ID`).
    pub model_id: String,
    /// The chapter's SYSTEM prompt.
    pub system: String,
    /// `max_tokens` of each request.
    pub max_tokens: u32,
    /// The dispatch map; its order is the request's `tools` order.
    pub tools: DispatchMap,
    /// What the chapter adds to a round, called in this order.
    pub extensions: Vec<Box<dyn Extension>>,
    /// Where progress is shown.
    pub ui: Ui,
    /// Cap on `Stop`-forced continuations per turn.
    pub max_stop_continuations: u32,
    /// Cap on model requests per call of [`Agent::agent_loop`] (`None`: no cap). When it is
    /// reached the loop ends with the last response, as if the model had stopped; at least one
    /// request is always made.
    pub max_rounds: Option<u32>,
    /// Print the turn's token usage on stderr when it ends (`--usage`).
    pub show_usage: bool,
    /// Requests and tokens of the whole session so far (the REPL's `/usage`).
    pub session_usage: UsageTotals,
    /// Requests and tokens of the current turn; [`Agent::run_turn`] resets it.
    stats: UsageTotals,
    /// `normalize_messages`, keeping the part of the history that can no longer change.
    normalizer: std::sync::Mutex<Normalizer>,
    /// The usage of the last response, as [`Extension::pre_inference`] sees it.
    last_usage: Option<Usage>,
}

/// Requests and tokens added up over several responses: one turn (`--usage`) or a session
/// (`/usage`). Source: the Messages API's `usage` (ours, issue 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotals {
    /// Responses counted.
    pub requests: u32,
    /// Sum of their `usage.input_tokens`.
    pub input_tokens: u64,
    /// Sum of their `usage.output_tokens`.
    pub output_tokens: u64,
}

impl UsageTotals {
    /// Counts one response's `usage`.
    pub fn add(&mut self, usage: &crate::messages::Usage) {
        self.requests += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
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

/// `-p` exit code: the model call failed (an API, transport or replay error), or Ctrl-C.
pub const EXIT_API_ERROR: u8 = 1;
/// `-p` exit code: bad configuration (a missing variable, a broken `.env`, an unreadable file).
pub const EXIT_CONFIG: u8 = 2;
/// `-p` exit code: the model refused (`stop_reason: refusal`).
pub const EXIT_REFUSAL: u8 = 3;
/// `-p` exit code: the conversation outgrew the context window (`model_context_window_exceeded`).
pub const EXIT_CONTEXT_EXCEEDED: u8 = 4;
/// `-p` exit code: the answer is incomplete (`max_tokens`, or still `pause_turn` after the
/// allowed continuations).
pub const EXIT_INCOMPLETE: u8 = 5;
/// `-p` exit code: a `stop_reason` this harness does not know.
pub const EXIT_UNKNOWN_STOP: u8 = 6;

impl TurnEnd {
    /// The exit code `-p` ends with after this turn: 0, or one of `EXIT_REFUSAL`,
    /// `EXIT_CONTEXT_EXCEEDED`, `EXIT_INCOMPLETE`, `EXIT_UNKNOWN_STOP` (see the module table).
    pub fn exit_code(&self) -> u8 {
        let TurnEnd::Answered(response) = self else { return 0 };
        match &response.stop_reason {
            None | Some(StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse) => 0,
            Some(StopReason::Refusal) => EXIT_REFUSAL,
            Some(StopReason::ModelContextWindowExceeded) => EXIT_CONTEXT_EXCEEDED,
            Some(StopReason::MaxTokens | StopReason::PauseTurn) => EXIT_INCOMPLETE,
            Some(StopReason::Other(_)) => EXIT_UNKNOWN_STOP,
        }
    }
}

impl Agent {
    /// A harness with no extensions, the course's `max_tokens`, and colour detection.
    pub fn new(
        model: Arc<dyn Model>,
        model_id: impl Into<String>,
        system: impl Into<String>,
        tools: DispatchMap,
    ) -> Self {
        Self {
            model,
            model_id: model_id.into(),
            system: system.into(),
            max_tokens: MAX_TOKENS,
            tools,
            extensions: Vec::new(),
            ui: Ui::detect(),
            max_stop_continuations: MAX_STOP_CONTINUATIONS,
            max_rounds: None,
            show_usage: false,
            session_usage: UsageTotals::default(),
            stats: UsageTotals::default(),
            last_usage: None,
            normalizer: std::sync::Mutex::new(Normalizer::new()),
        }
    }

    /// One user turn (course §0): extensions see the prompt, it joins `history` as
    /// `{"role":"user","content":PROMPT}`, the loop runs, and the final text is printed.
    ///
    /// After a `refusal`, the turn (prompt included) is removed from `history` and the user is told,
    /// as the API's docs ask: sent again, the same context would be refused again.
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
                self.ui.notice(&why);
                return Ok(TurnEnd::PromptBlocked(why));
            }
        }
        let start = history.len();
        history.push(Message::user_text(prompt));
        self.stats = UsageTotals::default();
        let result = self.agent_loop(history).await;
        let stats = &self.stats;
        if self.show_usage && stats.requests > 0 {
            self.ui.notice(&format!(
                "[usage] {} request(s): {} input tokens, {} output tokens",
                stats.requests, stats.input_tokens, stats.output_tokens
            ));
        }
        let last = result?;
        if last.stop_reason == Some(StopReason::Refusal) {
            self.forget_refused_turn(history, start);
        }
        Ok(TurnEnd::Answered(Box::new(last)))
    }

    /// Removes the refused turn, `history[start..]`, and says what went with it.
    fn forget_refused_turn(&self, history: &mut Vec<Message>, start: usize) {
        let removed = history.split_off(start.min(history.len()));
        let ran = removed
            .iter()
            .filter(|m| m.role == crate::messages::Role::User)
            .flat_map(|m| m.blocks())
            .filter(|b| matches!(b, ContentBlock::ToolResult(_)))
            .count();
        let tools = match ran {
            0 => String::new(),
            n => format!(" with its {n} tool result(s) (what the tools changed stays changed)"),
        };
        self.ui.notice(&format!(
            "The refused prompt was removed from the history{tools}, so the next prompt starts from before it. Rephrase it, or ask something else."
        ));
    }

    /// The request `agent_loop` sends for `history`: its messages are
    /// `normalize_messages(history)`, computed incrementally (see [`Normalizer`]).
    pub fn request(&self, history: &[Message]) -> MessagesRequest {
        let messages = self.normalizer.lock().unwrap_or_else(|p| p.into_inner()).normalize(history);
        MessagesRequest {
            model: self.model_id.clone(),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
            messages,
            tools: self.tools.specs(),
            stream: None,
        }
    }

    /// One model call: a spinner until the first text, text deltas printed as they stream in.
    async fn call_model(&mut self, history: &[Message]) -> Result<MessagesResponse, ApiError> {
        let request = self.request(history);
        let mut spinner = Some(self.ui.spinner("waiting for the model…"));
        let (mut streamed, mut at_line_start) = (false, true);
        let ui = self.ui;
        let result = {
            let mut on_text = |text: &str| {
                spinner = None;
                streamed = true;
                at_line_start = text.ends_with('\n');
                ui.stream_text(text);
            };
            self.model.create(&request, &mut on_text).await
        };
        drop(spinner);
        if !at_line_start {
            self.ui.print("\n");
        }
        let response = result?;
        if !streamed {
            // A model that does not stream (replay, --no-stream) shows each response's text when it
            // arrives, so every mode prints the same thing in the same order.
            self.ui.answer(&response.text());
        }
        self.stats.add(&response.usage);
        self.session_usage.add(&response.usage);
        self.last_usage = Some(response.usage.clone());
        Ok(response)
    }

    /// The agent loop (course §0): call the model, run its tools, feed the results back, until a
    /// response asks for no tool. Returns that last response. [`Agent::run_turn`] wraps it with
    /// the prompt; a caller with a history of its own (a subagent, say) calls it directly.
    ///
    /// Before each request every extension's [`Extension::pre_inference`] may rewrite `history`.
    ///
    /// # Errors
    /// The model's [`ApiError`], or one an extension returned before a request; what was appended
    /// to `history` before it stays.
    pub async fn agent_loop(&mut self, history: &mut Vec<Message>) -> Result<MessagesResponse, ApiError> {
        let mut continuations = 0;
        let (mut rounds, mut previous) = (0, None);
        loop {
            if let Some(max) = self.max_rounds
                && rounds >= max.max(1)
                && let Some(last) = previous.take()
            {
                self.ui.notice(&format!("[rounds] stopped after {rounds} requests this turn (the cap)"));
                return Ok(last);
            }
            let mut context = LoopContext {
                history: &mut *history,
                model: Arc::clone(&self.model),
                model_id: &self.model_id,
                last_usage: self.last_usage.as_ref(),
            };
            for ext in &mut self.extensions {
                ext.pre_inference(&mut context).await?;
            }
            let response = self.call_model(history).await?;
            rounds += 1;
            let mut kept = response.content.clone();
            kept.iter_mut().for_each(ContentBlock::shrink_to_fit);
            history.push(Message::assistant_blocks(kept));

            let calls: Vec<_> = response.tool_uses().collect();
            match &response.stop_reason {
                Some(StopReason::MaxTokens) if !calls.is_empty() => {
                    // The last tool_use may be cut off; never run it. normalize_messages answers
                    // it with (cancelled) if the user goes on.
                    self.ui.error("The model ran out of output tokens in the middle of a tool call; the call was not run.");
                    return Ok(response);
                }
                Some(StopReason::MaxTokens) => {
                    self.ui.error(&format!(
                        "The answer was cut off: the model reached max_tokens ({}).",
                        self.max_tokens
                    ));
                    return Ok(response);
                }
                Some(StopReason::PauseTurn) if continuations < self.max_stop_continuations => {
                    // The API paused a long turn: sending the content back continues it.
                    continuations += 1;
                    previous = Some(response);
                    continue;
                }
                Some(StopReason::PauseTurn) => {
                    self.ui.error(&format!(
                        "The model paused its turn (stop_reason: pause_turn) {continuations} times; stopped here. Send another prompt to let it go on."
                    ));
                    return Ok(response);
                }
                Some(StopReason::Refusal) => {
                    let why = response.stop_details.as_ref().and_then(|d| d.explanation.as_deref());
                    self.ui.error(&match why {
                        Some(why) => format!("The model refused to answer (stop_reason: refusal): {why}"),
                        None => "The model refused to answer (stop_reason: refusal).".to_owned(),
                    });
                    return Ok(response);
                }
                Some(StopReason::ModelContextWindowExceeded) => {
                    self.ui.error(
                        "The conversation no longer fits in the model's context window (stop_reason: model_context_window_exceeded); the answer is truncated. Start over with /clear in the REPL (or a new session), or use a model with a larger context window.",
                    );
                    return Ok(response);
                }
                Some(StopReason::Other(reason)) => {
                    self.ui.error(&format!(
                        "The endpoint ended the answer with an unknown stop_reason {reason:?}; the turn ends here{}.",
                        if calls.is_empty() { "" } else { ", and its tool calls were not run" }
                    ));
                    return Ok(response);
                }
                Some(StopReason::StopSequence) => {
                    self.ui.notice(&match &response.stop_sequence {
                        Some(at) => format!("(the model stopped at the stop sequence {at:?})"),
                        None => "(the model stopped at a stop sequence)".to_owned(),
                    });
                }
                Some(StopReason::EndTurn | StopReason::ToolUse) | None => {
                    if calls.is_empty() && response.text().trim().is_empty() {
                        self.ui.notice("(the model sent an empty answer)");
                    }
                }
            }

            if calls.is_empty() {
                let forced = self.extensions.iter_mut().find_map(|ext| ext.stop(&response));
                match forced {
                    Some(text) if continuations < self.max_stop_continuations => {
                        continuations += 1;
                        history.push(Message::user_text(text));
                        previous = Some(response);
                        continue;
                    }
                    Some(_) => {
                        self.ui.notice(&format!(
                            "[Stop] a hook asked to continue again; stopped after {} forced continuations this turn",
                            self.max_stop_continuations
                        ));
                        return Ok(response);
                    }
                    None => return Ok(response),
                }
            }

            let mut results = Vec::with_capacity(calls.len() + 1);
            let mut records = Vec::with_capacity(calls.len());
            for block in &calls {
                // The input is parsed once, here: the extensions and the tool see the same value.
                let mut call = self.tools.prepare(block);
                let blocked = self.extensions.iter_mut().find_map(|ext| match ext.pre_tool_use(&call) {
                    Decision::Block(why) => Some(why),
                    Decision::Continue => None,
                });
                // The header shows what the call is about; a tool that shows its own output (the
                // todo list) needs no copy of its input.
                let input = match call.subject.text() {
                    Some(about) => Some(about.to_owned()),
                    None if self.tools.displays_output(&call.name) => None,
                    None => Some(call.input.to_string()),
                };
                self.ui.tool_header(&call.name, input.as_deref());
                let (outcome, ran) = match blocked {
                    Some(why) => (ToolOutcome::error(why), false),
                    None => {
                        let spinner = self.ui.spinner_after(crate::ui::TOOL_SPINNER_AFTER, || {
                            format!("running {}…", crate::sanitize::sanitize_line(&call.name))
                        });
                        let mut outcome = self.tools.run(&mut call).await;
                        drop(spinner);
                        for ext in &mut self.extensions {
                            ext.post_tool_use(&call, &mut outcome);
                        }
                        (outcome, true)
                    }
                };
                // A tool that shows its own output (the todo list) needs no preview, unless it failed.
                if outcome.is_error || !self.tools.displays_output(&call.name) {
                    self.ui.tool_preview(&outcome.content);
                }
                records.push(CallRecord { name: call.name.clone(), ran, is_error: outcome.is_error });
                results.push(ContentBlock::tool_result(&call.id, outcome.content, outcome.is_error));
            }
            // Text added by extensions goes after every tool_result block (course §0).
            for ext in &mut self.extensions {
                if let Some(text) = ext.after_round(&records) {
                    self.ui.injected(&text);
                    results.push(ContentBlock::text(text));
                }
            }
            history.push(Message::user_blocks(results));
            previous = Some(response);
        }
    }
}
