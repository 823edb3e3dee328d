//! What the terminal shows: the prompt, tool calls, answers, notices, and [`Terminal`], the
//! listener that turns the loop's events into those lines.
//!
//! Source: course §0–§1 (`sNN >> ` in cyan; per call `> NAME:` and the first 200 characters of
//! the output). Colour is used only when the stream is a terminal and `NO_COLOR` is unset, so a
//! piped run carries no ANSI escapes. Writes never panic: a closed pipe is ignored.
//!
//! Every method that shows text from outside (the model, a tool, a hook, the endpoint) passes it
//! through [`sanitize`] first, so control and bidi characters show as visible escapes and only
//! this module's own colours reach the terminal raw: a tool's output cannot move the cursor or
//! rewrite what the user saw. [`out`] and [`err`] write as they are: callers pass them only our
//! own text or text they sanitised.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use agent_core::events::{Event, EventSink, Level, StopNote};
use agent_core::sanitize::{one_line, sanitize, sanitize_line};

/// ANSI cyan (the REPL prompt).
pub const CYAN: &str = "\x1b[36m";
/// ANSI yellow (a tool header).
pub const YELLOW: &str = "\x1b[33m";
/// ANSI green.
pub const GREEN: &str = "\x1b[32m";
/// ANSI red (errors).
pub const RED: &str = "\x1b[31m";
/// ANSI dim (notices).
pub const DIM: &str = "\x1b[2m";
/// ANSI magenta (a mechanism acting: `[Subagent started]`).
pub const MAGENTA: &str = "\x1b[35m";
/// ANSI bright black, grey (a subagent's tool lines).
pub const GREY: &str = "\x1b[90m";
const RESET: &str = "\x1b[0m";

/// How many characters of a tool's output the terminal shows (course §1).
pub const PREVIEW_CHARS: usize = 200;

/// How many characters of a tool's input the header line shows (ours).
pub const HEADER_INPUT_CHARS: usize = 100;

/// How long a tool runs before a spinner shows on a terminal's stderr (ours).
pub const TOOL_SPINNER_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Terminal output settings: whether stdout and stderr get colour, and where the text goes.
#[derive(Debug, Clone)]
pub struct Ui {
    /// Colour on stdout.
    pub color_out: bool,
    /// Colour on stderr.
    pub color_err: bool,
    /// The process's stdout and stderr, or a test's buffer ([`Ui::captured`]).
    sink: Sink,
    /// Whether stderr is a terminal, so spinners are drawn: asked once, not at every model call
    /// and tool (an `ioctl` each).
    err_tty: bool,
}

/// Where a [`Ui`] writes.
#[derive(Debug, Clone)]
enum Sink {
    Std,
    Buffer(Arc<Captured>),
}

/// What a [`Ui::captured`] wrote instead of the terminal, so a test checks the text and a green
/// test run prints none of it.
#[derive(Debug, Default)]
pub struct Captured {
    stdout: std::sync::Mutex<String>,
    stderr: std::sync::Mutex<String>,
}

impl Captured {
    /// Everything written to "stdout" so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Everything written to "stderr" so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Ui {
    /// Colour where the stream is a terminal and `NO_COLOR` is unset.
    pub fn detect() -> Self {
        let allowed = !no_color() && !dumb_terminal();
        let err_tty = std::io::stderr().is_terminal();
        Self {
            color_out: allowed && std::io::stdout().is_terminal(),
            color_err: allowed && err_tty,
            sink: Sink::Std,
            err_tty,
        }
    }

    /// No colour anywhere (tests, piped runs).
    pub fn plain() -> Self {
        Self { color_out: false, color_err: false, sink: Sink::Std, err_tty: std::io::stderr().is_terminal() }
    }

    /// No colour, and every line written into the returned buffer instead of the terminal (for
    /// tests). No spinner is drawn.
    pub fn captured() -> (Self, Arc<Captured>) {
        let buffer = Arc::new(Captured::default());
        let sink = Sink::Buffer(Arc::clone(&buffer));
        (Self { color_out: false, color_err: false, sink, err_tty: false }, buffer)
    }

    /// Writes `text` as it is to stdout (flushed), or to the test's buffer. Callers pass only
    /// our own text or text they sanitised.
    pub fn print(&self, text: &str) {
        match &self.sink {
            Sink::Std => out(text),
            Sink::Buffer(b) => b.stdout.lock().unwrap_or_else(|p| p.into_inner()).push_str(text),
        }
    }

    /// Writes `text` as it is to stderr, or to the test's buffer.
    pub fn eprint(&self, text: &str) {
        match &self.sink {
            Sink::Std => err(text),
            Sink::Buffer(b) => b.stderr.lock().unwrap_or_else(|p| p.into_inner()).push_str(text),
        }
    }

    /// The REPL prompt, `NAME >> `, cyan on a terminal.
    pub fn prompt(&self, name: &str) -> String {
        paint(self.color_out, CYAN, &format!("{name} >> "))
    }

    /// A line on stdout (sanitised).
    pub fn say(&self, text: &str) {
        self.print(&format!("{}\n", sanitize(text)));
    }

    /// The line before a tool runs: `> NAME: INPUT` (course §1 shows `> NAME:`; yellow on a
    /// terminal). `input` is what the call is about (`ls -la`, `src/main.rs`), shown on one line
    /// and cut to [`HEADER_INPUT_CHARS`] characters with `…`; `None` shows the course's `> NAME:`.
    pub fn tool_header(&self, name: &str, input: Option<&str>) {
        let head = paint(self.color_out, YELLOW, &format!("> {}:", sanitize_line(name)));
        match input.map(|i| one_line(i.trim(), HEADER_INPUT_CHARS + 1)).filter(|i| !i.is_empty()) {
            Some(input) => self.print(&format!("{head} {input}\n")),
            None => self.print(&format!("{head}\n")),
        }
    }

    /// The first 200 characters of a tool's output, after it ran (course §1). A longer output
    /// ends with a dim line saying how much was cut from the view (the model gets all of it).
    pub fn tool_preview(&self, output: &str) {
        let end = output.char_indices().nth(PREVIEW_CHARS).map_or(output.len(), |(at, _)| at);
        let (preview, rest) = output.split_at(end);
        let cut = rest.chars().count();
        let mut text = format!("{}\n", sanitize(preview));
        if cut > 0 {
            let marker = format!("… ({cut} more characters not shown here; the model gets them all)");
            text.push_str(&paint(self.color_out, DIM, &marker));
            text.push('\n');
        }
        self.print(&text);
    }

    /// Text the harness adds to a round's results (a reminder), shown as `+ TEXT` (dim on a terminal)
    /// so the user sees what the model is told.
    pub fn injected(&self, text: &str) {
        self.print(&format!("{}\n", paint(self.color_out, DIM, &format!("+ {}", sanitize(text)))));
    }

    /// Model text as it streams in, one delta at a time (sanitised per delta: an escape split
    /// across deltas is still shown, never obeyed; see [`agent_core::sanitize`]).
    pub fn stream_text(&self, delta: &str) {
        self.print(&sanitize(delta));
    }

    /// The model's final answer for a turn.
    pub fn answer(&self, text: &str) {
        if !text.is_empty() {
            self.print(&format!("{}\n", sanitize(text)));
        }
    }

    /// A status line on stderr (dim on a terminal).
    pub fn notice(&self, text: &str) {
        self.eprint(&format!("{}\n", paint(self.color_err, DIM, &sanitize(text))));
    }

    /// An error line on stderr, `error: TEXT` (red on a terminal). Every error line the harness
    /// prints has this one prefix.
    pub fn error(&self, text: &str) {
        let line = format!("error: {}", sanitize(text));
        self.eprint(&format!("{}\n", paint(self.color_err, RED, &line)));
    }

    /// A warning line on stderr, `warning: TEXT` (yellow on a terminal).
    pub fn warning(&self, text: &str) {
        let line = format!("warning: {}", sanitize(text));
        self.eprint(&format!("{}\n", paint(self.color_err, YELLOW, &line)));
    }
}

/// The terminal as a listener of the loop's [`Event`]s: everything a chapter shows while a turn
/// runs. A spinner while the model has not answered, text as it streams, `> NAME: INPUT` before a
/// tool and its output's first 200 characters after, a reminder as `+ TEXT`, retries, and one
/// line for each way a turn can stop early. The words for the stop reasons live here, not in the
/// loop.
pub struct Terminal {
    ui: Ui,
    /// Print each turn's usage (`--usage`).
    show_usage: bool,
    state: Mutex<Showing>,
    /// Which key requests carry and where it came from, for the hint after a 401.
    key_source: std::sync::OnceLock<String>,
}

/// What the terminal is in the middle of showing.
#[derive(Default)]
struct Showing {
    /// The spinner of a request or of a tool that runs, cleared when it ends.
    spinner: Option<Spinner>,
    /// Whether the streamed text so far ends a line.
    at_line_start: bool,
}

impl Terminal {
    /// A listener writing through `ui`; with `show_usage`, each turn's token usage is printed on
    /// stderr when it ends.
    pub fn new(ui: Ui, show_usage: bool) -> Self {
        Self {
            ui,
            show_usage,
            state: Mutex::new(Showing { spinner: None, at_line_start: true }),
            key_source: std::sync::OnceLock::new(),
        }
    }

    /// Records which key requests carry and where it came from (`ANTHROPIC_API_KEY from .env at
    /// PATH, sent as x-api-key`), named by the hint after a 401. The first call counts.
    pub fn set_key_source(&self, source: String) {
        let _ = self.key_source.set(source);
    }

    /// What [`Terminal::set_key_source`] recorded.
    pub fn key_source(&self) -> Option<&str> {
        self.key_source.get().map(String::as_str)
    }

    /// The [`Ui`] it writes through.
    pub fn ui(&self) -> &Ui {
        &self.ui
    }

    /// Clears a spinner left by a turn that was cancelled (Ctrl-C drops the turn between its
    /// events), so the next line starts at column 0.
    pub fn interrupted(&self) {
        self.showing().spinner = None;
        clear_err_line();
    }

    /// The line that starts a turn no one typed ([`agent_core::turns`]), where a user's prompt
    /// would be echoed: `[SOURCE] PROMPT`, on one line cut to [`HEADER_INPUT_CHARS`] characters,
    /// magenta on a terminal (a mechanism acting).
    pub fn automatic_turn(&self, source: &str, prompt: &str) {
        self.showing().spinner = None;
        let line = format!("[{}] {}", sanitize_line(source), one_line(prompt.trim(), HEADER_INPUT_CHARS + 1));
        self.ui.print(&format!("{}\n", paint(self.ui.color_out, MAGENTA, &line)));
    }

    fn showing(&self) -> std::sync::MutexGuard<'_, Showing> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The line for a [`StopNote`]: an error, or a notice, as the turn's end deserves.
    fn stop_note(&self, note: &StopNote<'_>) {
        let ui = &self.ui;
        match note {
            StopNote::CutOffToolCall => ui.error(
                "The model ran out of output tokens in the middle of a tool call; the call was not run.",
            ),
            StopNote::MaxTokens(max) => {
                ui.error(&format!("The answer was cut off: the model reached max_tokens ({max})."))
            }
            StopNote::PausedTooOften(times) => ui.error(&format!(
                "The model paused its turn (stop_reason: pause_turn) {times} times; stopped here. Send another prompt to let it go on."
            )),
            StopNote::Refusal(Some(why)) => {
                ui.error(&format!("The model refused to answer (stop_reason: refusal): {why}"))
            }
            StopNote::Refusal(None) => ui.error("The model refused to answer (stop_reason: refusal)."),
            StopNote::ContextWindowExceeded => ui.error(
                "The conversation no longer fits in the model's context window (stop_reason: model_context_window_exceeded); the answer is truncated. Start over with /clear in the REPL (or a new session), or use a model with a larger context window.",
            ),
            StopNote::UnknownStopReason { reason, tools_skipped } => ui.error(&format!(
                "The endpoint ended the answer with an unknown stop_reason {reason:?}; the turn ends here{}.",
                if *tools_skipped { ", and its tool calls were not run" } else { "" }
            )),
            StopNote::StopSequence(Some(at)) => {
                ui.notice(&format!("(the model stopped at the stop sequence {at:?})"))
            }
            StopNote::StopSequence(None) => ui.notice("(the model stopped at a stop sequence)"),
            StopNote::EmptyAnswer => ui.notice("(the model sent an empty answer)"),
            StopNote::RoundCap(rounds) => {
                ui.notice(&format!("[rounds] stopped after {rounds} requests this turn (the cap)"))
            }
            StopNote::StopHookCap(max) => ui.notice(&format!(
                "[Stop] a hook asked to continue again; stopped after {max} forced continuations this turn"
            )),
            StopNote::RefusedTurnRemoved(ran) => {
                let tools = match ran {
                    0 => String::new(),
                    n => format!(
                        " with its {} (what the tools changed stays changed)",
                        count(*n, "tool result", "tool results")
                    ),
                };
                ui.notice(&format!(
                    "The refused prompt was removed from the history{tools}, so the next prompt starts from before it. Rephrase it, or ask something else."
                ));
            }
            StopNote::PromptBlocked(why) => ui.notice(why),
            StopNote::MaxTokensRaised(max) => ui.notice(&format!(
                "[max_tokens] the answer was cut off; asking again with max_tokens {max}"
            )),
            StopNote::Continued { times, max, dropped_tool_calls } => {
                let dropped = match dropped_tool_calls {
                    0 => String::new(),
                    1 => " (its cut-off tool call was dropped unrun)".to_owned(),
                    n => format!(" (its {n} cut-off tool calls were dropped unrun)"),
                };
                ui.notice(&format!(
                    "[max_tokens] the answer was cut off again{dropped}; asking the model to continue ({times} of {max})"
                ))
            }
            StopNote::FallbackModel { model, overloaded } => ui.warning(&format!(
                "[529] the model was overloaded {overloaded} times in a row; switching to {model}"
            )),
            StopNote::ErrorAnswered(text) => ui.answer(text),
            _ => {}
        }
    }
}

impl EventSink for Terminal {
    fn on_event(&self, event: &Event<'_>) {
        let ui = &self.ui;
        match event {
            Event::Request => {
                let mut showing = self.showing();
                showing.at_line_start = true;
                showing.spinner = Some(ui.spinner("waiting for the model…"));
            }
            Event::TextDelta(text) => {
                let mut showing = self.showing();
                showing.spinner = None;
                showing.at_line_start = text.ends_with('\n');
                ui.stream_text(text);
            }
            Event::Response { result, streamed } => {
                let mut showing = self.showing();
                showing.spinner = None;
                if !showing.at_line_start {
                    ui.print("\n");
                    showing.at_line_start = true;
                }
                // A model that does not stream (replay, --no-stream) shows each response's text
                // when it arrives, so every mode prints the same thing in the same order.
                if let (Ok(response), false) = (result, streamed) {
                    ui.answer(&response.text());
                }
            }
            Event::Retry { error, retry, max_retries, wait } => {
                clear_err_line();
                ui.notice(&format!("{error} — retry {retry} of {max_retries} in {:.1}s", wait.as_secs_f64()));
            }
            Event::ToolCall { name, input, blocked } => {
                ui.tool_header(name, *input);
                if !blocked {
                    let spinner =
                        ui.spinner_after(TOOL_SPINNER_AFTER, || format!("running {}…", sanitize_line(name)));
                    self.showing().spinner = Some(spinner);
                }
            }
            Event::ToolResult { content, is_error, shows_own_output, .. } => {
                self.showing().spinner = None;
                // A tool that shows its own output (the todo list) needs no preview, unless it failed.
                if *is_error || !shows_own_output {
                    ui.tool_preview(content);
                }
            }
            Event::Injected(text) => ui.injected(text),
            Event::Stop(note) => self.stop_note(note),
            Event::TurnUsage(usage) if self.show_usage => {
                let mut line = format!(
                    "[usage] {}: {} input tokens, {} output tokens",
                    count(usage.requests as usize, "request", "requests"),
                    usage.input_tokens,
                    usage.output_tokens
                );
                if usage.cache_read_input_tokens + usage.cache_creation_input_tokens > 0 {
                    line.push_str(&format!(
                        "; prompt cache: {} read, {} written",
                        usage.cache_read_input_tokens, usage.cache_creation_input_tokens
                    ));
                }
                ui.notice(&line)
            }
            Event::AutomaticTurn { source, prompt } => self.automatic_turn(source, prompt),
            Event::Line(level, text) => match level {
                Level::Info => {
                    self.showing().spinner = None;
                    ui.say(text)
                }
                Level::Mechanism => {
                    self.showing().spinner = None;
                    ui.print(&format!("{}\n", paint(ui.color_out, MAGENTA, &sanitize(text))));
                }
                Level::Detail => {
                    self.showing().spinner = None;
                    ui.print(&format!("{}\n", paint(ui.color_out, GREY, &sanitize(text))));
                }
                Level::Notice => ui.notice(text),
                Level::Warning => ui.warning(text),
                Level::Error => ui.error(text),
            },
            _ => {}
        }
    }
}

/// A spinner on stderr while the model has not answered yet. It is drawn only when
/// stderr is a terminal, after a short grace period so fast answers do not flicker, and it clears
/// its line when dropped. Nothing reaches stdout.
pub struct Spinner {
    /// (stopped, drawn), under one lock so a frame is never drawn after the line was cleared.
    state: Option<std::sync::Arc<std::sync::Mutex<(bool, bool)>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Ui {
    /// Starts a [`Spinner`] labelled `label`, drawn after 200 ms; a no-op when stderr is not a
    /// terminal or no tokio runtime is running.
    pub fn spinner(&self, label: &str) -> Spinner {
        self.spinner_after(std::time::Duration::from_millis(200), || label.to_owned())
    }

    /// A [`Spinner`] first drawn after `grace` (a tool: [`TOOL_SPINNER_AFTER`]), labelled with
    /// what `label` gives; `label` is called only when a spinner can be drawn, so a run whose
    /// stderr is not a terminal builds no label at every tool call.
    pub fn spinner_after(&self, grace: std::time::Duration, label: impl FnOnce() -> String) -> Spinner {
        if !self.err_tty || tokio::runtime::Handle::try_current().is_err() {
            return Spinner { state: None, task: None };
        }
        let state = std::sync::Arc::new(std::sync::Mutex::new((false, false)));
        let shared = std::sync::Arc::clone(&state);
        let label = paint(self.color_err, DIM, &label());
        let task = tokio::spawn(async move {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            tokio::time::sleep(grace).await;
            for frame in FRAMES.iter().cycle() {
                {
                    let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                    if s.0 {
                        return;
                    }
                    // Over a prompt being typed, a frame would tear the line: skip it.
                    if crate::console::status_allowed() {
                        s.1 = true;
                        err(&format!("\r{frame} {label}"));
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(80)).await;
            }
        });
        Spinner { state: Some(state), task: Some(task) }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            s.0 = true;
            if s.1 && crate::console::status_allowed() {
                err("\r\x1b[K");
            }
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Clears a spinner's line on stderr when stderr is a terminal, so a notice starts at column 0.
pub fn clear_err_line() {
    if std::io::stderr().is_terminal() && crate::console::status_allowed() {
        err("\r\x1b[K");
    }
}

/// `n` and the noun in the number it needs: `1 recorded turn`, `2 recorded turns`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `true` when `NO_COLOR` is set to a non-empty value in the process environment
/// (<https://no-color.org>): the terminal gets no colour.
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// `true` when `TERM` names a terminal that understands no escape codes and no line editing:
/// `dumb` (Emacs' `M-x shell`, some IDE consoles), `emacs`, `cons25`, the same list rustyline
/// treats as unsupported. Such a terminal gets no colour, and prompts are read line by line.
pub fn dumb_terminal() -> bool {
    matches!(std::env::var("TERM").as_deref(), Ok("dumb" | "emacs" | "cons25"))
}

/// `text` in `color` (one of the constants above) when `on`, else `text` as it is.
pub fn paint(on: bool, color: &str, text: &str) -> String {
    if on { format!("{color}{text}{RESET}") } else { text.to_owned() }
}

/// Writes to stdout and flushes; errors (a closed pipe) are ignored. Through the shared console
/// ([`crate::console`]), so that a line being typed is kept.
pub fn out(text: &str) {
    crate::console::write(crate::console::Stream::Out, text);
}

/// Writes to stderr; errors are ignored. Through the shared console ([`crate::console`]).
pub fn err(text: &str) {
    crate::console::write(crate::console::Stream::Err, text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_ui_holds_the_header_the_cut_marker_and_the_error_prefix() {
        let (ui, captured) = Ui::captured();
        ui.tool_header("bash", Some("ls -la\n| wc"));
        ui.tool_preview(&"x".repeat(250));
        ui.tool_preview("short");
        ui.error("broken");
        let cut = "… (50 more characters not shown here; the model gets them all)";
        assert_eq!(captured.stdout(), format!("> bash: ls -la\\n| wc\n{}\n{cut}\nshort\n", "x".repeat(200)));
        assert_eq!(captured.stderr(), "error: broken\n");
        assert_eq!(one_line(&"é".repeat(5), 4), "ééé…");
    }
}
