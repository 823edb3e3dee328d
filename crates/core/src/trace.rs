//! Recording a session: [`TraceWriter`], the listener behind `--trace FILE` and `/trace FILE`.
//!
//! A trace is a JSON Lines file: one object per [`Event`] and per request, appended and flushed
//! as each happens (one `write` of a whole line, no buffer), so a session that crashes loses
//! nothing already written. `cargo run -p trace -- FILE` draws it as a page to step through.
//!
//! Each line has `seq` (its number in this process, from 1), `t_ms` (milliseconds since the
//! trace was opened), `lane` (`main` for the agent the user talks to; `subagent 1`, a teammate's
//! name or `side call` for the others, nested ones joined with `/`: see
//! [`EventSink::on_lane_event`]) and `type`:
//!
//! | `type` | fields | from |
//! |---|---|---|
//! | `trace` | `version`, `chapter`, `pid`: the first line each time a process opens the file | [`TraceWriter::open`] |
//! | `request` | `request`: the Messages API body as the loop sends it | [`Event::Sent`] |
//! | `response` | `response` (the body, its `usage` included) and `streamed`, or `error` | [`Event::Response`] |
//! | `text_delta` | `text` | [`Event::TextDelta`] |
//! | `retry` | `error`, `retry`, `max_retries`, `wait_ms` | [`Event::Retry`] |
//! | `tool_call` | `name`, `input`, `blocked` | [`Event::ToolCall`] |
//! | `tool_result` | `name`, `content`, `is_error` | [`Event::ToolResult`] |
//! | `injected` | `text`: what the harness appended after a round's results (a reminder) | [`Event::Injected`] |
//! | `stop` | `note`: why a turn stopped early | [`Event::Stop`] |
//! | `turn_usage` | `requests`, `input_tokens`, `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens` | [`Event::TurnUsage`] |
//! | `line` | `level` (`info`, `mechanism`, `detail`, `notice`, `warning`, `error`), `text` | [`Event::Line`] |
//! | `automatic_turn` | `source`, `prompt` | [`Event::AutomaticTurn`] |
//!
//! Secrets never reach the file: every line is written with each of the values
//! [`crate::config::secret_values`] names replaced by [`REDACTED`], in its plain and its
//! JSON-escaped form. What the lines hold comes from the model and the tools, so the key would
//! get there only through them (a tool that read `.env`); requests' headers are not recorded.
//!
//! Source: ours (codex-rs records its sessions as JSONL rollouts; goose its messages).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::events::{Event, EventSink, Level};

/// The version of the line format, in each `trace` line.
pub const TRACE_VERSION: u32 = 1;

/// The lane of the agent the user talks to.
pub const MAIN_LANE: &str = "main";

/// What a secret is replaced with in a trace.
pub const REDACTED: &str = "[REDACTED]";

/// The listener that appends the session's events to a trace file, while one is open.
///
/// It records the events of its own agent in [`MAIN_LANE`] and those of every other agent in
/// theirs; what wrappers made for a person to see ([`EventSink::on_shown`]) it drops, having had
/// the events themselves. A write that fails closes the trace: [`TraceWriter::take_error`] says
/// why, so the caller can tell the user once.
pub struct TraceWriter {
    chapter: String,
    secrets: Vec<(String, String)>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    open: Option<Open>,
    /// Why the last trace was closed by a failed write, until taken.
    error: Option<String>,
}

struct Open {
    file: File,
    path: PathBuf,
    started: Instant,
    seq: u64,
}

impl TraceWriter {
    /// A writer for chapter `chapter` (`s06`) with no file open yet, which hides each of
    /// `secrets` (see [`crate::config::secret_values`]) wherever it appears.
    pub fn new(chapter: impl Into<String>, secrets: Vec<String>) -> Self {
        let secrets = secrets
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                // The form the secret takes inside a JSON string, without the quotes.
                let quoted = serde_json::to_string(&s).unwrap_or_default();
                let escaped = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_owned();
                (s, escaped)
            })
            .collect();
        Self { chapter: chapter.into(), secrets, state: Mutex::default() }
    }

    /// Starts appending to `path` (created if missing; an open trace is closed first), with a
    /// `trace` line first.
    ///
    /// # Errors
    /// The file cannot be opened or written; no trace is open then.
    pub fn open(&self, path: &Path) -> std::io::Result<()> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let mut state = self.state();
        state.open = Some(Open { file, path: path.to_owned(), started: Instant::now(), seq: 0 });
        let header = json!({
            "type": "trace",
            "version": TRACE_VERSION,
            "chapter": self.chapter,
            "pid": std::process::id(),
        });
        let written = self.write(&mut state, MAIN_LANE, header);
        if written.is_err() {
            state.open = None;
        }
        written
    }

    /// Stops recording; returns the file that was open, if one was.
    pub fn close(&self) -> Option<PathBuf> {
        self.state().open.take().map(|open| open.path)
    }

    /// The file being written, if one is open.
    pub fn path(&self) -> Option<PathBuf> {
        self.state().open.as_ref().map(|open| open.path.clone())
    }

    /// Why a write failed and closed the trace, once (`None` when nothing failed since the last
    /// call).
    pub fn take_error(&self) -> Option<String> {
        self.state().error.take()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records `event` in `lane`, when a trace is open; a failed write closes it.
    fn record(&self, lane: &str, event: &Event<'_>) {
        let mut state = self.state();
        if state.open.is_none() {
            return;
        }
        let Some(fields) = event_fields(event) else { return };
        if let Err(e) = self.write(&mut state, lane, fields)
            && let Some(open) = state.open.take()
        {
            state.error =
                Some(format!("cannot write the trace {}: {e}; tracing stopped", open.path.display()));
        }
    }

    /// Appends one line: `seq`, `t_ms`, `lane`, then `fields`, with the secrets hidden.
    fn write(&self, state: &mut State, lane: &str, fields: Value) -> std::io::Result<()> {
        let Some(open) = state.open.as_mut() else { return Ok(()) };
        open.seq += 1;
        let mut line = Map::new();
        line.insert("seq".into(), open.seq.into());
        line.insert("t_ms".into(), (open.started.elapsed().as_millis() as u64).into());
        line.insert("lane".into(), lane.into());
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut text = Value::Object(line).to_string();
        for (plain, escaped) in &self.secrets {
            if text.contains(plain.as_str()) {
                text = text.replace(plain.as_str(), REDACTED);
            }
            if text.contains(escaped.as_str()) {
                text = text.replace(escaped.as_str(), REDACTED);
            }
        }
        text.push('\n');
        // One write of the whole line, to a file opened for appending: no buffer to lose.
        open.file.write_all(text.as_bytes())
    }
}

impl EventSink for TraceWriter {
    fn on_event(&self, event: &Event<'_>) {
        self.record(MAIN_LANE, event);
    }

    fn on_lane_event(&self, lane: &str, event: &Event<'_>) {
        self.record(lane, event);
    }

    /// Dropped: the event it was made from is in the trace already, in its lane.
    fn on_shown(&self, _event: &Event<'_>) {}
}

/// The word a trace uses for `level`.
pub fn level_name(level: Level) -> &'static str {
    match level {
        Level::Info => "info",
        Level::Mechanism => "mechanism",
        Level::Detail => "detail",
        Level::Notice => "notice",
        Level::Warning => "warning",
        Level::Error => "error",
    }
}

/// An event's fields as a trace line holds them (`type` and the rest), or `None` for
/// [`Event::Request`], whose [`Event::Sent`] follows with the body.
fn event_fields(event: &Event<'_>) -> Option<Value> {
    let fields = match event {
        Event::Request => return None,
        Event::Sent(request) => json!({ "type": "request", "request": request }),
        Event::TextDelta(text) => json!({ "type": "text_delta", "text": text }),
        Event::Response { result: Ok(response), streamed } => {
            json!({ "type": "response", "streamed": streamed, "response": response })
        }
        Event::Response { result: Err(error), .. } => {
            json!({ "type": "response", "error": error.to_string() })
        }
        Event::Retry { error, retry, max_retries, wait } => json!({
            "type": "retry",
            "error": error.to_string(),
            "retry": retry,
            "max_retries": max_retries,
            "wait_ms": wait.as_millis() as u64,
        }),
        Event::ToolCall { name, input, blocked } => {
            json!({ "type": "tool_call", "name": name, "input": input, "blocked": blocked })
        }
        Event::ToolResult { name, content, is_error, .. } => {
            json!({ "type": "tool_result", "name": name, "content": content, "is_error": is_error })
        }
        Event::Injected(text) => json!({ "type": "injected", "text": text }),
        Event::Stop(note) => json!({ "type": "stop", "note": format!("{note:?}") }),
        Event::TurnUsage(usage) => json!({
            "type": "turn_usage",
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        }),
        Event::Line(level, text) => json!({ "type": "line", "level": level_name(*level), "text": text }),
        Event::AutomaticTurn { source, prompt } => {
            json!({ "type": "automatic_turn", "source": source, "prompt": prompt })
        }
    };
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::{Message, MessagesRequest};
    use std::sync::Arc;

    fn lines(path: &Path) -> Vec<Value> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn each_event_is_a_line_in_its_lane_and_nothing_without_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let writer = TraceWriter::new("s06", Vec::new());
        writer.on_event(&Event::Line(Level::Info, "before any file"));
        writer.open(&path).unwrap();
        let request = MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: "sys".into(),
            messages: Arc::new(vec![Message::user_text("hi")]),
            tools: Vec::new().into(),
            stream: None,
        };
        writer.on_event(&Event::Request);
        writer.on_event(&Event::Sent(&request));
        writer.on_lane_event("subagent 1", &Event::Injected("<reminder>x</reminder>"));
        writer.on_shown(&Event::Line(Level::Detail, "  [sub] bash: shown only"));
        let got = lines(&path);
        let types: Vec<_> = got.iter().map(|l| (l["type"].as_str(), l["lane"].as_str())).collect();
        assert_eq!(
            types,
            [
                (Some("trace"), Some("main")),
                (Some("request"), Some("main")),
                (Some("injected"), Some("subagent 1"))
            ]
        );
        assert_eq!(got[1]["request"]["messages"][0]["content"], "hi");
        assert_eq!(got[2]["seq"], 3);
        assert_eq!(writer.close(), Some(path.clone()));
        writer.on_event(&Event::Line(Level::Info, "after closing"));
        assert_eq!(lines(&path).len(), 3);
    }

    #[test]
    fn secrets_are_hidden_plain_and_json_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let writer = TraceWriter::new("s02", vec!["sk-ant-secret\"quoted".into(), "hunter22".into()]);
        writer.open(&path).unwrap();
        writer.on_event(&Event::ToolResult {
            name: "bash",
            content: "KEY=sk-ant-secret\"quoted and hunter22",
            is_error: false,
            shows_own_output: false,
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-ant-secret") && !text.contains("hunter22"), "{text}");
        assert_eq!(lines(&path)[1]["content"], format!("KEY={REDACTED} and {REDACTED}"));
    }
}
