//! The session's listeners: the terminal, and the trace that `--trace FILE` or `/trace FILE`
//! records ([`agent_core::trace`]).
//!
//! Every chapter's agent, subagents and mechanisms report to one [`Listeners`]: each event goes
//! to the trace first (so a crash while the terminal draws loses nothing recorded) and then to
//! the terminal. A trace that can no longer be written is closed, and the terminal says so once.

use std::path::Path;
use std::sync::Arc;

use agent_core::events::{Event, EventSink};
use agent_core::trace::TraceWriter;

use crate::repl::SlashCommand;
use crate::ui::Terminal;

/// How a learner turns a trace into a page, in the lines that name a trace.
pub const PAGE_HINT: &str = "cargo run -p trace -- FILE writes FILE.html to step through";

/// The terminal and the trace, as one listener ([`agent_core::events::Events`]).
pub struct Listeners {
    terminal: Arc<Terminal>,
    trace: Arc<TraceWriter>,
}

impl Listeners {
    /// Both listeners; the trace records only while a file is open ([`TraceWriter::open`]).
    pub fn new(terminal: Arc<Terminal>, trace: Arc<TraceWriter>) -> Self {
        Self { terminal, trace }
    }

    /// A failed write closed the trace: say so, once.
    fn report_trace_error(&self) {
        if let Some(error) = self.trace.take_error() {
            self.terminal.ui().warning(&error);
        }
    }
}

impl EventSink for Listeners {
    fn on_event(&self, event: &Event<'_>) {
        self.trace.on_event(event);
        self.terminal.on_event(event);
        self.report_trace_error();
    }

    fn on_lane_event(&self, lane: &str, event: &Event<'_>) {
        self.trace.on_lane_event(lane, event);
        self.terminal.on_lane_event(lane, event);
        self.report_trace_error();
    }

    fn on_shown(&self, event: &Event<'_>) {
        self.trace.on_shown(event);
        self.terminal.on_shown(event);
    }
}

/// Opens `path` for `trace` and returns the line that says so: where, and how to draw it.
///
/// # Errors
/// The line that says why the file cannot be written.
pub fn start_trace(trace: &TraceWriter, path: &Path) -> Result<String, String> {
    match trace.open(path) {
        Ok(()) => Ok(format!(
            "[trace] recording this session to {} (appending; {})",
            path.display(),
            PAGE_HINT.replace("FILE", &path.display().to_string())
        )),
        Err(e) => Err(format!("cannot record a trace to {}: {e}", path.display())),
    }
}

/// `/trace` (every chapter): alone, whether the session is being recorded and where;
/// `/trace FILE` starts appending every event and request to FILE (closing the one before);
/// `/trace off` stops.
pub fn trace_command(trace: Arc<TraceWriter>) -> SlashCommand {
    SlashCommand::with_context(
        "trace",
        "record this session to a file to step through as a page: /trace FILE, /trace off",
        move |context| {
            let ui = context.ui;
            match context.args {
                "" => match trace.path() {
                    Some(path) => ui.say(&format!(
                        "Recording this session to {}; /trace off stops. {}.",
                        path.display(),
                        PAGE_HINT.replace("FILE", &path.display().to_string())
                    )),
                    None => ui.say(
                        "Not recording. /trace FILE records every event and request of this session to FILE.",
                    ),
                },
                "off" => match trace.close() {
                    Some(path) => ui.say(&format!(
                        "Stopped recording to {}. {}.",
                        path.display(),
                        PAGE_HINT.replace("FILE", &path.display().to_string())
                    )),
                    None => ui.say("Not recording; nothing to stop."),
                },
                file => match start_trace(&trace, Path::new(file)) {
                    Ok(line) => ui.notice(&line),
                    Err(line) => ui.error(&line),
                },
            }
        },
    )
}
