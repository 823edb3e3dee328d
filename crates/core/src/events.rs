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
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::ApiError;
use crate::messages::{MessagesRequest, MessagesResponse};

/// Something that happened in the loop, the client or a mechanism, as it happens.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A request is about to be sent; a listener may show that the model is working.
    Request,
    /// The request itself, right after [`Event::Request`]: the Messages API body as the loop
    /// hands it to the model (its SYSTEM, tools and `messages` after `normalize_messages`; the
    /// client adds prompt-caching breakpoints and headers, never the key, on the way out). For a
    /// listener that records what went into the context (`--trace`); the terminal ignores it.
    Sent(&'a MessagesRequest),
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
    /// A turn no one typed starts ([`crate::turns`]: a due cron job, a finished background
    /// command, a teammate's report): where it came from and its prompt (course s11–s13).
    AutomaticTurn {
        /// The producer's name (`cron`, `background`, a teammate's name).
        source: &'a str,
        /// The prompt the turn sends.
        prompt: &'a str,
    },
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
    /// The answer was cut off at `max_tokens`: it was dropped, and the request is sent again with
    /// this larger `max_tokens` ([`crate::agent::AgentBuilder::escalate_max_tokens`]; course s15).
    MaxTokensRaised(u32),
    /// The answer was cut off at `max_tokens` again: what it said stays, and the model is asked
    /// to continue ([`crate::agent::AgentBuilder::continue_after_max_tokens`]; course s15).
    Continued {
        /// Which continuation of this loop this is, from 1.
        times: u32,
        /// How many continuations the loop allows.
        max: u32,
        /// How many `tool_use` blocks of the cut-off answer were dropped, unrun: the last one was
        /// cut in the middle, and none has a result.
        dropped_tool_calls: usize,
    },
    /// The model was overloaded (529) this many times in a row; the loop sends its requests to
    /// the fallback model from here on ([`crate::agent::AgentBuilder::fallback_model`]; course
    /// s15).
    FallbackModel {
        /// The fallback model's id.
        model: &'a str,
        /// The overloaded answers in a row that caused the switch.
        overloaded: u32,
    },
    /// The request failed and the error became the turn's answer, this assistant text
    /// ([`crate::agent::AgentBuilder::errors_as_text`]; course s13–s15's `[Error] …`).
    ErrorAnswered(&'a str),
}

/// Receives [`Event`]s. Every method has a default, so `struct Quiet; impl EventSink for
/// Quiet {}` is a sink that drops everything ([`Silent`] is one). A closure
/// `Fn(&Event<'_>) + Send + Sync` is a sink too.
///
/// Several agents may report to one listener: a subagent (course s06), a teammate (s13), the
/// harness's own model calls (a summary, a recall). Their listener wrappers ([`Prefixed`], the
/// subagent's) pass each of the other agent's events on twice, in two ways a listener picks
/// from: every event, unchanged, through [`EventSink::on_lane_event`] with the agent's lane, for
/// a listener that records every agent apart (`--trace`); and what a person should see of it
/// (a prefixed line, a grey summary) through [`EventSink::on_shown`], for a listener that shows
/// the session (the terminal).
pub trait EventSink: Send + Sync {
    /// Called once per event of this listener's own agent, in order, from the task running the
    /// loop. Must not block for long: the loop waits for it.
    fn on_event(&self, _event: &Event<'_>) {}

    /// An event of another agent, in `lane` (`subagent 1`, `alice`, `side call`; nested lanes
    /// joined with `/`). Dropped by default: a listener that shows the session gets what it
    /// should show through [`EventSink::on_shown`].
    fn on_lane_event(&self, _lane: &str, _event: &Event<'_>) {}

    /// What a wrapper made of another agent's event for a person to see (a prefixed text, a
    /// summary line). By default it is shown as any event is ([`EventSink::on_event`]); a
    /// listener that records lanes drops it, having had the event itself.
    fn on_shown(&self, event: &Event<'_>) {
        self.on_event(event);
    }
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

/// The listener of one of several agents that share another listener (course s13's teammates
/// beside the Lead, on one terminal): passes every event on with the agent's prefix
/// (`[alice] `) at the start of each line it shows, so interleaved output says whose it is.
///
/// Text that streams is prefixed at each line start; an answer that did not stream is passed on
/// as prefixed text before its [`Event::Response`]; a tool call's name, its result and any
/// [`Event::Line`] or [`Event::Injected`] text get the prefix on each line. Other events pass
/// unchanged. All of that goes to [`EventSink::on_shown`]; each event also goes, unchanged, to
/// [`EventSink::on_lane_event`] in the agent's lane: the prefix without its brackets and blanks
/// (`alice` for `[alice] `).
pub struct Prefixed {
    prefix: String,
    lane: String,
    inner: Events,
    /// Whether this agent's streamed text so far ends a line.
    at_line_start: AtomicBool,
}

impl Prefixed {
    /// A listener that passes `inner` every event of one agent with `prefix` on its lines.
    pub fn new(prefix: impl Into<String>, inner: Events) -> Self {
        let prefix = prefix.into();
        let lane = prefix.trim().trim_start_matches('[').trim_end_matches(']').trim().to_owned();
        Self { prefix, lane, inner, at_line_start: AtomicBool::new(true) }
    }

    /// `text` with the prefix at the start of each of its lines.
    fn lines(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.prefix.len());
        for (i, line) in text.split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&self.prefix);
            out.push_str(line);
        }
        out
    }

    /// Streamed `text`, prefixed where a line starts.
    fn delta(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.prefix.len());
        let mut at_start = self.at_line_start.load(Ordering::Relaxed);
        for piece in text.split_inclusive('\n') {
            if at_start {
                out.push_str(&self.prefix);
            }
            out.push_str(piece);
            at_start = piece.ends_with('\n');
        }
        self.at_line_start.store(at_start, Ordering::Relaxed);
        out
    }
}

impl Prefixed {
    /// Passes on what a person should see of `event`: its prefixed form.
    fn show(&self, event: &Event<'_>) {
        let inner = &*self.inner;
        match event {
            Event::Request => {
                self.at_line_start.store(true, Ordering::Relaxed);
                inner.on_shown(event);
            }
            Event::TextDelta(text) => inner.on_shown(&Event::TextDelta(&self.delta(text))),
            Event::Response { result: Ok(response), streamed: false } => {
                let text = response.text();
                if !text.is_empty() {
                    inner.on_shown(&Event::TextDelta(&self.delta(&text)));
                }
                inner.on_shown(&Event::Response { result: Ok(response), streamed: !text.is_empty() });
            }
            Event::ToolCall { name, input, blocked } => {
                let name = format!("{}{name}", self.prefix);
                inner.on_shown(&Event::ToolCall { name: &name, input: *input, blocked: *blocked });
            }
            Event::ToolResult { name, content, is_error, shows_own_output } => {
                let content = self.lines(content);
                inner.on_shown(&Event::ToolResult {
                    name,
                    content: &content,
                    is_error: *is_error,
                    shows_own_output: *shows_own_output,
                });
            }
            Event::Injected(text) => inner.on_shown(&Event::Injected(&self.lines(text))),
            Event::Line(level, text) => inner.on_shown(&Event::Line(*level, &self.lines(text))),
            _ => inner.on_shown(event),
        }
    }
}

impl EventSink for Prefixed {
    fn on_event(&self, event: &Event<'_>) {
        self.inner.on_lane_event(&self.lane, event);
        self.show(event);
    }

    fn on_lane_event(&self, lane: &str, event: &Event<'_>) {
        self.inner.on_lane_event(&format!("{}/{lane}", self.lane), event);
    }

    /// What a wrapper inside this agent (its own subagent's lines) shows is shown with this
    /// agent's prefix; the event itself went to that wrapper's lane.
    fn on_shown(&self, event: &Event<'_>) {
        self.show(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Notes `lane: event` for lane events and `shown: event` for what is shown.
    #[derive(Default)]
    struct Both(Mutex<Vec<String>>);

    impl Both {
        fn note(&self, text: String) {
            self.0.lock().unwrap().push(text);
        }
    }

    impl EventSink for Both {
        fn on_event(&self, event: &Event<'_>) {
            if let Event::Line(_, text) = event {
                self.note(format!("own: {text}"));
            }
        }

        fn on_lane_event(&self, lane: &str, event: &Event<'_>) {
            if let Event::Line(_, text) = event {
                self.note(format!("{lane}: {text}"));
            }
        }

        fn on_shown(&self, event: &Event<'_>) {
            if let Event::Line(_, text) = event {
                self.note(format!("shown: {text}"));
            }
        }
    }

    #[test]
    fn a_prefixed_agent_reports_each_event_in_its_lane_and_shows_it_prefixed() {
        let both = Arc::new(Both::default());
        let alice = Prefixed::new("[alice] ", Arc::clone(&both) as Events);
        line(&alice, Level::Info, "hello");
        // A subagent of alice's: its lane nests under hers, and what it shows gets her prefix.
        alice.on_lane_event("subagent 1", &Event::Line(Level::Info, "child"));
        alice.on_shown(&Event::Line(Level::Detail, "  [sub] bash: ok"));
        assert_eq!(
            *both.0.lock().unwrap(),
            [
                "alice: hello",
                "shown: [alice] hello",
                "alice/subagent 1: child",
                "shown: [alice]   [sub] bash: ok"
            ]
        );
    }
}
