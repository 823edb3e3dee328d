//! Builders for tests of the loop and of what chapters add to it (feature `test-util`): a model
//! that answers from a script and records every request, and the responses and blocks it answers
//! with; and [`Proc`], a process seen through `/proc`, for the tests that check no process a
//! command started outlives its call. Tests inside and outside `agent-core` use these
//! instead of writing their own.
//!
//! ```
//! # tokio_test_block_on(async {
//! use std::sync::Arc;
//! use agent_core::agent::Agent;
//! use agent_core::test_util::{ScriptedModel, text};
//!
//! let model = Arc::new(ScriptedModel::new(vec![text("hello")]));
//! let mut agent = Agent::builder(model.clone(), "m").system("system").build();
//! agent.run_turn(&mut Vec::new(), "hi").await.unwrap();
//! assert_eq!(model.requests()[0].messages.len(), 1);
//! # });
//! # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::{AuthType, Config};
use crate::dispatch::{DispatchMap, ToolCall};
use crate::error::ApiError;
use crate::events::{Event, EventSink};
use crate::messages::{
    ContentBlock, MessagesRequest, MessagesResponse, Role, StopReason, ToolUseBlock, Usage,
};
use crate::model::{Model, ModelFuture};

/// A [`Model`] that answers with its script, in order, and records every request it was sent.
/// Past the end of the script it answers [`ApiError::Replay`] (`script exhausted`).
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Result<MessagesResponse, ApiError>>>,
    requests: Mutex<Vec<MessagesRequest>>,
}

impl ScriptedModel {
    /// A model that answers with `responses`, in order.
    pub fn new(responses: Vec<MessagesResponse>) -> Self {
        Self::with_results(responses.into_iter().map(Ok).collect())
    }

    /// A model whose script may hold errors as well as responses.
    pub fn with_results(script: Vec<Result<MessagesResponse, ApiError>>) -> Self {
        Self { script: Mutex::new(script.into()), requests: Mutex::new(Vec::new()) }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<MessagesRequest> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many answers of the script are left.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Model for ScriptedModel {
    fn create<'a>(&'a self, request: &'a MessagesRequest, _events: &'a dyn EventSink) -> ModelFuture<'a> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).push(request.clone());
        let next = self.script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let answer = next.unwrap_or_else(|| Err(ApiError::Replay("script exhausted".into())));
        Box::pin(async move { answer })
    }
}

/// A sink that keeps what it is told, for tests: the streamed text, the retry notices, the lines
/// and a one-line summary of every event in order.
#[derive(Debug, Default)]
pub struct EventLog {
    text: Mutex<String>,
    retries: Mutex<Vec<String>>,
    lines: Mutex<Vec<String>>,
    events: Mutex<Vec<String>>,
}

impl EventLog {
    /// An empty log, shared as an agent holds its sink.
    pub fn new() -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self::default())
    }

    /// The streamed text since the last call, emptied.
    pub fn take_text(&self) -> String {
        std::mem::take(&mut *self.text.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Each retry as the terminal words it: `ERROR — retry N of M in S.Ss`.
    pub fn retries(&self) -> Vec<String> {
        self.retries.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Every event so far, one line each: `request`, `text: …`, `response: ok|error`,
    /// `retry: …`, `tool_call: NAME INPUT`, `tool_result: NAME [error] CONTENT`, `injected: …`,
    /// `stop: NOTE`, `usage: N requests`, `line LEVEL: TEXT`.
    pub fn events(&self) -> Vec<String> {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The texts of the [`Event::Line`]s so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl EventSink for EventLog {
    fn on_event(&self, event: &Event<'_>) {
        let summary = match event {
            // The request's body and an automatic turn's start are for recorders; the log keeps
            // the lines a terminal shows, as it always did.
            Event::Sent(_) | Event::AutomaticTurn { .. } => return,
            Event::Request => "request".to_owned(),
            Event::TextDelta(t) => {
                self.text.lock().unwrap_or_else(|p| p.into_inner()).push_str(t);
                format!("text: {t}")
            }
            Event::Response { result: Ok(_), streamed } => format!("response: ok (streamed: {streamed})"),
            Event::Response { result: Err(e), .. } => format!("response: error: {e}"),
            Event::Retry { error, retry, max_retries, wait } => {
                let line = format!("{error} — retry {retry} of {max_retries} in {:.1}s", wait.as_secs_f64());
                self.retries.lock().unwrap_or_else(|p| p.into_inner()).push(line.clone());
                format!("retry: {line}")
            }
            Event::ToolCall { name, input, blocked } => {
                format!(
                    "tool_call: {name} {}{}",
                    input.unwrap_or(""),
                    if *blocked { " (blocked)" } else { "" }
                )
            }
            Event::ToolResult { name, content, is_error, .. } => {
                format!("tool_result: {name} {}{content}", if *is_error { "[error] " } else { "" })
            }
            Event::Injected(t) => format!("injected: {t}"),
            Event::Stop(note) => format!("stop: {note:?}"),
            Event::TurnUsage(u) => format!("usage: {} requests", u.requests),
            Event::Line(level, text) => {
                self.lines.lock().unwrap_or_else(|p| p.into_inner()).push((*text).to_owned());
                let level = crate::trace::level_name(*level);
                format!("line {level}: {text}")
            }
        };
        self.events.lock().unwrap_or_else(|p| p.into_inner()).push(summary);
    }
}

/// An assistant response with `content` and `stop_reason` `stop`, zero usage.
pub fn response(content: Vec<ContentBlock>, stop: StopReason) -> MessagesResponse {
    MessagesResponse {
        id: "msg_test".into(),
        kind: "message".into(),
        role: Role::Assistant,
        content,
        model: "m".into(),
        stop_reason: Some(stop),
        stop_sequence: None,
        stop_details: None,
        usage: Usage::default(),
    }
}

/// A final answer: one `text` block, `stop_reason: end_turn`.
pub fn text(text: &str) -> MessagesResponse {
    response(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

/// A response calling tools, `calls` being `(id, name, input)`, `stop_reason: tool_use`.
pub fn tool_uses(calls: &[(&str, &str, Value)]) -> MessagesResponse {
    let content = calls.iter().map(|(id, name, input)| ContentBlock::tool_use(*id, *name, input.clone()));
    response(content.collect(), StopReason::ToolUse)
}

/// A `tool_use` block as the loop receives it.
pub fn tool_use_block(id: &str, name: &str, input: Value) -> ToolUseBlock {
    ToolUseBlock { id: id.into(), name: name.into(), input, extra: Default::default() }
}

/// A `tool_use` block prepared through `tools`, as the `PreToolUse` extensions see it: the input
/// parsed once, and what the tool says it is about.
pub fn tool_call(tools: &DispatchMap, id: &str, name: &str, input: Value) -> ToolCall {
    tools.prepare(&tool_use_block(id, name, input))
}

/// The configuration of a test that talks to a loopback server (`mock-api`) at `base_url`
/// (for example `http://127.0.0.1:PORT`): model `mock-model`, key `test-key` sent as `x-api-key`.
pub fn loopback_config(base_url: String) -> Config {
    Config { model: "mock-model".into(), base_url, api_key: Some("test-key".into()), auth: AuthType::ApiKey }
}

/// A process as it was when first seen: its pid and its start time (field 22 of
/// `/proc/PID/stat`), so that a recycled pid (`pid_max` is 32768 on small machines) is never
/// taken for the same process. Linux only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    /// The process id.
    pub pid: i32,
    /// Its start time in clock ticks after boot; `None` when it was already gone when seen.
    pub start: Option<u64>,
}

impl Proc {
    /// `pid` as it is now.
    pub fn new(pid: i32) -> Self {
        Self { pid, start: stat_fields(pid).map(|f| f.start) }
    }

    /// The process a command recorded in the file `path` as `PID START` (the start time read
    /// while it ran, for example `cut -d' ' -f22 /proc/$!/stat`), or as `PID` alone, which is
    /// then looked up now.
    ///
    /// # Errors
    /// The file cannot be read, or holds no pid, or a start time that is not a number.
    pub fn read(path: &Path) -> io::Result<Self> {
        let bad =
            |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {what}", path.display()));
        let text = std::fs::read_to_string(path)?;
        let mut words = text.split_whitespace();
        let pid = words.next().and_then(|w| w.parse().ok()).ok_or_else(|| bad("no pid"))?;
        match words.next() {
            Some(start) => Ok(Self { pid, start: Some(start.parse().map_err(|_| bad("bad start time"))?) }),
            None => Ok(Self::new(pid)),
        }
    }

    /// Alive: the same process still exists and is not a zombie.
    pub fn alive(&self) -> bool {
        stat_fields(self.pid).is_some_and(|f| Some(f.start) == self.start && !f.zombie)
    }

    /// Waits up to `within` for the process to die, looking every 10 ms; whether it did.
    pub fn dies_within(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while self.alive() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

/// The live (not zombie) processes of session `sid`, by a scan of `/proc`.
pub fn session_members(sid: i32) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| stat_fields(pid).is_some_and(|f| f.session == sid && !f.zombie))
        .map(Proc::new)
        .collect()
}

/// What is read from `/proc/PID/stat`.
struct StatFields {
    /// Dead, only not yet reaped (state `Z`), or being removed (`X`).
    zombie: bool,
    /// Field 6, the session id.
    session: i32,
    /// Field 22, the start time in clock ticks after boot: with the pid, it names one process,
    /// even after the pid is recycled.
    start: u64,
}

/// `pid (comm) state ppid pgrp session … starttime …`; comm may hold spaces or parentheses, so
/// the fields are split after the last `)`. `None` when the process is gone.
fn stat_fields(pid: i32) -> Option<StatFields> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?;
    let session = fields.nth(2)?.parse().ok()?;
    // After the session (field 6): tty_nr, tpgid, flags, 4 fault counts, 4 times, priority, nice,
    // num_threads, itrealvalue (7 to 21), then starttime (22).
    let start = fields.nth(15)?.parse().ok()?;
    Some(StatFields { zombie: state == "Z" || state == "X", session, start })
}

/// A new folder outside every place the `workspace-write` sandbox lets a command write (the
/// workspace and the temp folders `/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`; on macOS also the
/// user's folders under `/private/var/folders`): below
/// `target_tmpdir` (a test passes `env!("CARGO_TARGET_TMPDIR")`), or else below `$HOME`, whichever
/// is not under a temp folder. Removed when dropped. The sandbox tests write against it: a write
/// there must be denied.
///
/// # Errors
/// Neither folder is usable, or the new folder cannot be made.
pub fn outside_dir(target_tmpdir: &Path) -> io::Result<tempfile::TempDir> {
    let tmpdir = std::env::var_os("TMPDIR").map(std::path::PathBuf::from);
    // Compared resolved: on macOS `/tmp` is `/private/tmp` and `$TMPDIR` under `/private/var/folders`.
    let temps: Vec<std::path::PathBuf> = ["/tmp", "/var/tmp", "/dev/shm", "/private/var/folders"]
        .iter()
        .map(std::path::PathBuf::from)
        .chain(tmpdir)
        .map(|t| t.canonicalize().unwrap_or(t))
        .collect();
    let candidates =
        [Some(target_tmpdir.to_path_buf()), std::env::var_os("HOME").map(std::path::PathBuf::from)];
    for base in candidates.into_iter().flatten() {
        let Ok(base) = base.canonicalize() else { continue };
        if !temps.iter().any(|t| base.starts_with(t)) {
            return tempfile::tempdir_in(base);
        }
    }
    Err(io::Error::other("no folder outside the temp folders to test writes against"))
}
