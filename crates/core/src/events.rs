//! What the loop reports instead of printing: [`Event`]s, handed to an [`EventSink`].
//!
//! `agent_loop`, the client and the hooks never write to a terminal. They report what happens
//! (text as it streams, a tool call and its result, a reminder, a retry, why a turn stopped, the
//! usage) to the sink the caller gave the [`Agent`](crate::agent::Agent). The chapters' terminal
//! is one sink (`agent_cli::ui::Terminal`); a test collects events; a subagent's sink indents,
//! prefixes or drops them. Source: ours, after codex-rs's event queue and goose's agent events:
//! the mechanism reports, a listener decides what a person sees.
//!
//! Events borrow from the loop, so a sink that keeps them copies what it needs. Every event is
//! reported in the order it happened, from the task that runs the loop.

use std::sync::Arc;
use std::time::Duration;

use crate::error::ApiError;
use crate::messages::MessagesResponse;

/// Something that happened in the loop, the client or a mechanism, as it happens.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A request is about to be sent; a listener may show that the model is working.
    Request,
    /// One `text_delta` of a streamed answer (Messages API streaming), in order.
    TextDelta(&'a str),
    /// The request ended: the whole response, or the error that ended it (after any retries).
    /// `streamed` says whether its text already came as [`Event::TextDelta`]s; a model that does
    /// not stream (replay, the JSON path) reports its text only here.
    Response {
        /// The response, or why the request failed.
        result: Result<&'a MessagesResponse, &'a ApiError>,
        /// Whether any [`Event::TextDelta`] of this request was reported.
        streamed: bool,
    },
    /// The client waits before it tries the request again (ours, after the SDKs' retry policy).
    Retry {
        /// What failed.
        error: &'a ApiError,
        /// Which retry this will be, from 1.
        retry: u32,
        /// How many retries are allowed.
        max_retries: u32,
        /// How long the client waits first.
        wait: Duration,
    },
    /// A tool call is about to run (course §1: `> NAME:`), after the `PreToolUse` decision.
    ToolCall {
        /// The tool's name as the model called it.
        name: &'a str,
        /// What the call is about (`ls -la`, `src/main.rs`), the input as compact JSON, or `None`
        /// for a tool that shows its own output.
        input: Option<&'a str>,
        /// `true` when a `PreToolUse` decision blocked it: it will not run.
        blocked: bool,
    },
    /// A tool call's result, as the model will get it.
    ToolResult {
        /// The tool's name.
        name: &'a str,
        /// The `tool_result` content.
        content: &'a str,
        /// The result's `is_error`.
        is_error: bool,
        /// The tool shows its own output (the todo list), so a preview would repeat it.
        shows_own_output: bool,
    },
    /// Text the harness appended to a round's results, after every `tool_result` (the nag's
    /// `<reminder>`; course §2).
    Injected(&'a str),
    /// Why a turn stopped, or what the loop did about a response, in words a listener chooses.
    Stop(StopNote<'a>),
    /// The requests and tokens of a turn that just ended (Messages API `usage`).
    TurnUsage(&'a crate::messages::UsageTotals),
    /// A line from a mechanism: a hook's `[HOOK] …`, an extension saying what it did, a warning.
    Line(Level, &'a str),
}

/// How a [`Event::Line`] is meant: the terminal shows `Info`, `Mechanism` and `Detail` on
/// stdout, the others on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Part of the session's story (the course prints these on stdout: `[HOOK] bash(ls)`).
    Info,
    /// A mechanism acting: `[Subagent started]`, `[snip: …]`, `[Memory: …]` (the course prints
    /// them in magenta).
    Mechanism,
    /// A detail under the line before it, such as a subagent's tool line (the course prints them
    /// in grey).
    Detail,
    /// A status line.
    Notice,
    /// Something went wrong but the session goes on.
    Warning,
    /// Something failed.
    Error,
}

/// What the loop did with a response that did not simply end the turn, or why it stopped early.
/// The Messages API's "Handling stop reasons" gives the cases; the words belong to the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopNote<'a> {
    /// `max_tokens` in the middle of a `tool_use`: the call was not run.
    CutOffToolCall,
    /// `max_tokens`: the answer is cut off at this many tokens.
    MaxTokens(u32),
    /// `pause_turn` came back this many times in a row; the loop stopped sending it back.
    PausedTooOften(u32),
    /// `refusal`, with `stop_details.explanation` when the endpoint gave one.
    Refusal(Option<&'a str>),
    /// `model_context_window_exceeded`: the answer is truncated.
    ContextWindowExceeded,
    /// A `stop_reason` this harness does not know; `tools_skipped` when the response held
    /// `tool_use` blocks that were therefore not run.
    UnknownStopReason {
        /// The value as the endpoint sent it.
        reason: &'a str,
        /// Whether tool calls were left unrun.
        tools_skipped: bool,
    },
    /// `stop_sequence`, with the sequence when the endpoint named it.
    StopSequence(Option<&'a str>),
    /// The model answered with no tool call and no text.
    EmptyAnswer,
    /// The loop reached its cap on requests per call of `agent_loop`.
    RoundCap(u32),
    /// `Stop` extensions asked to continue more often than allowed (this many times).
    StopHookCap(u32),
    /// After a refusal the turn left the history, with this many `tool_result` blocks.
    RefusedTurnRemoved(usize),
    /// A `UserPromptSubmit` decision blocked the prompt, with its reason.
    PromptBlocked(&'a str),
}

/// Receives [`Event`]s. The one method has a no-op default, so `struct Quiet; impl EventSink for
/// Quiet {}` is a sink that drops everything ([`Silent`] is one). A closure
/// `Fn(&Event<'_>) + Send + Sync` is a sink too.
pub trait EventSink: Send + Sync {
    /// Called once per event, in order, from the task running the loop. Must not block for long:
    /// the loop waits for it.
    fn on_event(&self, _event: &Event<'_>) {}
}

impl<F: Fn(&Event<'_>) + Send + Sync> EventSink for F {
    fn on_event(&self, event: &Event<'_>) {
        self(event)
    }
}

/// A shared sink, as the agent, the hooks and the tools hold it.
pub type Events = Arc<dyn EventSink>;

/// A sink that drops every event: a quiet subagent, a benchmark, a test that checks only
/// requests.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl EventSink for Silent {}

/// A shared [`Silent`] sink.
pub fn silent() -> Events {
    Arc::new(Silent)
}

/// Reports `text` as a [`Event::Line`] of `level` on `sink`: the one call a mechanism makes to say
/// what it did (`[HOOK] bash(ls)`, `[snip: 12 messages archived …]`).
pub fn line(sink: &dyn EventSink, level: Level, text: &str) {
    sink.on_event(&Event::Line(level, text));
}
