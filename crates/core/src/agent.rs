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
//! turn; `max_tokens` never runs a cut-off `tool_use`; `pause_turn` continues; `refusal` ends the turn.
//! Each response's text is printed once, as it arrives: delta by delta when streamed (a spinner on
//! a terminal's stderr until then), whole when the model does not stream (replay, `--no-stream`).

use crate::dispatch::{DispatchMap, ToolOutcome};
use crate::error::ApiError;
use crate::extension::{CallRecord, Decision, Extension};
use crate::messages::{ContentBlock, Message, MessagesRequest, MessagesResponse, StopReason};
use crate::model::Model;
use crate::normalize::normalize_messages;
use crate::ui::Ui;

/// The course's `max_tokens`.
pub const MAX_TOKENS: u32 = 8000;

/// How many times per user turn `Stop` extensions may send the model back to work.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// A harness: the model, the prompt, the dispatch map and the chapter's extensions.
pub struct Agent {
    /// Answers requests: the HTTP client, a replay, or a recording wrapper.
    pub model: Box<dyn Model>,
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
    /// Print the turn's token usage on stderr when it ends (`--usage`).
    pub show_usage: bool,
    /// Requests and tokens of the current turn; [`Agent::run_turn`] resets it.
    stats: TurnStats,
}

/// What one turn tracks across its rounds (ours, issue 5).
#[derive(Debug, Default)]
struct TurnStats {
    requests: u32,
    input_tokens: u64,
    output_tokens: u64,
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
    /// A harness with no extensions, the course's `max_tokens`, and colour detection.
    pub fn new(
        model: Box<dyn Model>,
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
            show_usage: false,
            stats: TurnStats::default(),
        }
    }

    /// One user turn (course §0): extensions see the prompt, it joins `history` as
    /// `{"role":"user","content":PROMPT}`, the loop runs, and the final text is printed.
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
        history.push(Message::user_text(prompt));
        self.stats = TurnStats::default();
        let result = self.agent_loop(history).await;
        let stats = &self.stats;
        if self.show_usage && stats.requests > 0 {
            self.ui.notice(&format!(
                "[usage] {} request(s): {} input tokens, {} output tokens",
                stats.requests, stats.input_tokens, stats.output_tokens
            ));
        }
        let last = result?;
        Ok(TurnEnd::Answered(Box::new(last)))
    }

    /// The request `agent_loop` sends for `history`.
    pub fn request(&self, history: &[Message]) -> MessagesRequest {
        MessagesRequest {
            model: self.model_id.clone(),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
            messages: normalize_messages(history),
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
            crate::ui::out("\n");
        }
        let response = result?;
        if !streamed {
            // A model that does not stream (replay, --no-stream) shows each response's text when it
            // arrives, so every mode prints the same thing in the same order.
            self.ui.answer(&response.text());
        }
        self.stats.requests += 1;
        self.stats.input_tokens += response.usage.input_tokens;
        self.stats.output_tokens += response.usage.output_tokens;
        Ok(response)
    }

    /// The agent loop (course §0): call the model, run its tools, feed the results back, until a
    /// response asks for no tool. Returns that last response. [`Agent::run_turn`] wraps it with
    /// the prompt; a caller with a history of its own (a subagent, say) calls it directly.
    ///
    /// # Errors
    /// The model's [`ApiError`]; what was appended to `history` before it stays.
    pub async fn agent_loop(&mut self, history: &mut Vec<Message>) -> Result<MessagesResponse, ApiError> {
        let mut continuations = 0;
        loop {
            let response = self.call_model(history).await?;
            history.push(Message::assistant_blocks(response.content.clone()));

            let calls: Vec<_> = response.tool_uses().cloned().collect();
            match response.stop_reason {
                Some(StopReason::MaxTokens) if !calls.is_empty() => {
                    // The last tool_use may be cut off; never run it. normalize_messages answers
                    // it with (cancelled) if the user goes on.
                    self.ui.error("The model ran out of output tokens in the middle of a tool call; the call was not run.");
                    return Ok(response);
                }
                Some(StopReason::PauseTurn) if continuations < self.max_stop_continuations => {
                    // The API paused a long turn: sending the content back continues it.
                    continuations += 1;
                    continue;
                }
                Some(StopReason::Refusal) => {
                    self.ui.error("The model declined to continue (stop_reason: refusal).");
                    return Ok(response);
                }
                _ => {}
            }

            if calls.is_empty() {
                let forced = self.extensions.iter_mut().find_map(|ext| ext.stop(&response));
                match forced {
                    Some(text) if continuations < self.max_stop_continuations => {
                        continuations += 1;
                        history.push(Message::user_text(text));
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
                self.ui.tool_header(&call.name);
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
        }
    }
}
