//! `MessageBus`: one JSONL mailbox per agent in `.mailboxes/`, read destructively (the course's
//! s13 `MessageBus`, COURSE-s10-s17 §4.5).
//!
//! ```text
//!  send(from, to, content, type, metadata)      .mailboxes/alice.jsonl
//!    └─ one line, appended ──────────────────►  {"from": "lead", "to": "alice", "content": "…",
//!                                                "type": "message", "ts": 1765000000.5, "metadata": {}}
//!  read_inbox("alice") ── every line, then the file is deleted
//!  peek("alice")       ── whether anything waits, nothing consumed
//!  wait_for_messages("alice", 2 s) ── sleeps until a send to alice, or the time is up
//! ```
//!
//! A line is what Python's `json.dumps(msg, ensure_ascii=True)` writes ([`pyjson`]), keys in the
//! course's order `from, to, content, type, ts, metadata`, so a mailbox the course's Python left
//! is read here and the other way round. Coordination stays out of the model's context: the
//! runtime reads the mailboxes, never a tool.
//!
//! Ours, beyond the course:
//! - **Across processes too.** Appends and the read-then-delete take the folder's lock
//!   (`.mailboxes/.lock`, `flock`), so a line appended while a reader drains the file is never
//!   deleted unread. Within the process, waiters sleep on a `tokio::sync::Notify` (the course's
//!   `threading.Condition`), so an idle teammate costs no CPU.
//! - **A broken line is kept.** A line that is not a JSON object (a hand edit, a crash of
//!   another program) is moved to `.mailboxes/{name}.unreadable` and reported, never dropped and
//!   never a reason to lose the good lines beside it.
//! - **The folder is the harness's.** `.mailboxes` must be a plain folder of the workspace, not a
//!   symbolic link ([`agent_core::workspace::HARNESS_NAMES`]).

use std::fmt;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::sync::Notify;

use agent_core::events::{Events, Level, line};
use agent_core::workspace::{HarnessPathError, Workspace};
use store::StoreDir;

/// The mailboxes' folder, relative to the workspace root.
pub const MAILBOX_DIR: &str = ".mailboxes";

/// The most bytes of one mailbox that are read at once; a larger file is an error that names
/// it, never a read that exhausts memory.
pub const MAX_MAILBOX_BYTES: u64 = 64 << 20;

/// How many code points of a message's content the `[bus]` line shows (the course's `[:50]`).
pub const PREVIEW_CHARS: usize = 50;

/// Whether `name` may name an agent and its mailbox: 1–64 ASCII letters, digits, `_` or `-`
/// (the course's `VALID_AGENT_NAME`, `^[A-Za-z0-9_-]{1,64}$`). `lead` is one.
pub fn is_valid_agent_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One message, as a mailbox line holds it (the course's dict).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The sender's name.
    pub from: String,
    /// The recipient's name (the mailbox it went to).
    pub to: String,
    /// The text.
    pub content: String,
    /// `message`, `result`, `idle_notification`, `error`, `shutdown_request`,
    /// `shutdown_response`, `plan_request`, `plan_approval_request`, `plan_approval_response`.
    pub kind: String,
    /// When it was sent, seconds since the Unix epoch (Python's `time.time()`).
    pub ts: f64,
    /// `{"request_id": …}` for a protocol message, `{"request_id", "approve"}` for a response;
    /// `{}` otherwise.
    pub metadata: Map<String, Value>,
}

impl Message {
    /// The message as the course's dict, keys in its order.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("from".into(), self.from.clone().into());
        map.insert("to".into(), self.to.clone().into());
        map.insert("content".into(), self.content.clone().into());
        map.insert("type".into(), self.kind.clone().into());
        map.insert("ts".into(), Value::from(self.ts));
        map.insert("metadata".into(), Value::Object(self.metadata.clone()));
        Value::Object(map)
    }

    /// The mailbox line: `json.dumps(msg, ensure_ascii=True)`, without the new line.
    pub fn to_line(&self) -> String {
        pyjson::dumps(&self.to_value())
    }

    /// A message from a line's JSON object. Missing fields read as the course's `.get`
    /// defaults do: `type` `message`, the others empty; a field of another type is shown as
    /// Python's `str` would show it. `None` when `value` is not an object.
    pub fn from_value(value: Value) -> Option<Self> {
        let Value::Object(mut map) = value else { return None };
        let mut text = |key: &str, default: &str| match map.remove(key) {
            None | Some(Value::Null) => default.to_owned(),
            Some(Value::String(s)) => s,
            Some(other) => pyjson::repr(&other),
        };
        let (from, to, content, kind) =
            (text("from", ""), text("to", ""), text("content", ""), text("type", "message"));
        let ts = map.get("ts").and_then(Value::as_f64).unwrap_or(0.0);
        let metadata = match map.remove("metadata") {
            Some(Value::Object(metadata)) => metadata,
            _ => Map::new(),
        };
        Some(Self { from, to, content, kind, ts, metadata })
    }

    /// `metadata.request_id` when it is a non-empty string.
    pub fn request_id(&self) -> Option<&str> {
        self.metadata.get("request_id").and_then(Value::as_str).filter(|id| !id.is_empty())
    }

    /// `metadata.approve`, `false` when absent or not a boolean (the course's
    /// `metadata.get("approve", False)`).
    pub fn approve(&self) -> bool {
        self.metadata.get("approve").and_then(Value::as_bool).unwrap_or(false)
    }

    /// The `[bus]` line the course prints for a send:
    /// `  [bus] {from} -> {to}: ({type}) {content[:50]}`.
    pub fn bus_line(&self) -> String {
        let preview: String = self.content.chars().take(PREVIEW_CHARS).collect();
        format!("  [bus] {} -> {}: ({}) {preview}", self.from, self.to, self.kind)
    }
}

/// Why the bus could not deliver or read.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The recipient is not a valid agent name; holds its Python `repr`
    /// (`Invalid mailbox recipient: '../escape'`).
    #[error("Invalid mailbox recipient: {0}")]
    InvalidRecipient(String),
    /// `.mailboxes` is a symbolic link or no folder, or cannot be made.
    #[error("{0}")]
    Folder(#[from] HarnessPathError),
    /// The folder resolves outside the workspace or cannot be opened.
    #[error("{0}")]
    Store(#[from] store::StoreError),
    /// A file operation failed; nothing was consumed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// What the system said.
        source: io::Error,
    },
}

/// The course's `MessageBus`: the mailboxes of one workspace, and the waiters on them.
pub struct MessageBus {
    workspace: Workspace,
    events: Events,
    /// Serialises this process's appends and drains; the folder's `flock` does it across
    /// processes.
    lock: Mutex<()>,
    /// Woken on every send, so a waiter looks at its mailbox again.
    changed: Notify,
}

impl fmt::Debug for MessageBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageBus").field("root", &self.workspace.root()).finish_non_exhaustive()
    }
}

fn file_name(agent: &str) -> Result<String, BusError> {
    if !is_valid_agent_name(agent) {
        return Err(BusError::InvalidRecipient(pyjson::repr_str(agent)));
    }
    Ok(format!("{agent}.jsonl"))
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

impl MessageBus {
    /// The bus of `workspace`, reporting each send as a `[bus]` line on `events`. Nothing is
    /// created until the first send.
    pub fn new(workspace: &Workspace, events: Events) -> Self {
        Self { workspace: workspace.clone(), events, lock: Mutex::new(()), changed: Notify::new() }
    }

    /// The folder, checked to be the harness's own (no symbolic link), created when `create`.
    fn folder(&self, create: bool) -> Result<Option<StoreDir>, BusError> {
        if self.workspace.harness_dir(MAILBOX_DIR, create)?.is_none() {
            return Ok(None);
        }
        Ok(StoreDir::open(&self.workspace, MAILBOX_DIR)?)
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Appends a message to `to`'s mailbox (the course's `send`), wakes every waiter, and
    /// reports its `[bus]` line. Returns the message as written.
    ///
    /// # Errors
    /// [`BusError::InvalidRecipient`] (nothing is written, no folder made); [`BusError::Folder`],
    /// [`BusError::Store`], [`BusError::Io`] when the mailbox cannot be written.
    pub fn send(
        &self,
        from: &str,
        to: &str,
        content: &str,
        kind: &str,
        metadata: Map<String, Value>,
    ) -> Result<Message, BusError> {
        let file = file_name(to)?;
        let message = Message {
            from: from.to_owned(),
            to: to.to_owned(),
            content: content.to_owned(),
            kind: kind.to_owned(),
            ts: now(),
            metadata,
        };
        let mut bytes = message.to_line().into_bytes();
        bytes.push(b'\n');
        {
            let _guard = self.guard();
            let Some(dir) = self.folder(true)? else {
                return Err(BusError::Io {
                    what: format!("cannot make {MAILBOX_DIR}"),
                    source: io::ErrorKind::NotFound.into(),
                });
            };
            let _lock = dir
                .lock()
                .map_err(|source| BusError::Io { what: format!("cannot lock {MAILBOX_DIR}"), source })?;
            dir.append(&file, &bytes).map_err(|source| BusError::Io {
                what: format!("cannot write {MAILBOX_DIR}/{file}"),
                source,
            })?;
        }
        self.changed.notify_waiters();
        line(&*self.events, Level::Info, &message.bus_line());
        Ok(message)
    }

    /// Takes every message waiting for `agent`, oldest first, and deletes the mailbox (the
    /// course's `read_inbox`). Empty when there is none.
    ///
    /// # Errors
    /// [`BusError::InvalidRecipient`]; [`BusError::Io`] when the mailbox cannot be read or
    /// deleted (it is then left as it was).
    pub fn read_inbox(&self, agent: &str) -> Result<Vec<Message>, BusError> {
        let file = file_name(agent)?;
        let _guard = self.guard();
        let Some(dir) = self.folder(false)? else { return Ok(Vec::new()) };
        let _lock = dir
            .lock()
            .map_err(|source| BusError::Io { what: format!("cannot lock {MAILBOX_DIR}"), source })?;
        let io = |what: &str| {
            let what = format!("cannot {what} {MAILBOX_DIR}/{file}");
            move |source| BusError::Io { what, source }
        };
        let Some(bytes) = dir.read(&file, MAX_MAILBOX_BYTES).map_err(io("read"))? else {
            return Ok(Vec::new());
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut messages = Vec::new();
        let mut unreadable = String::new();
        for raw in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Value>(raw).ok().and_then(Message::from_value) {
                Some(message) => messages.push(message),
                None => {
                    unreadable.push_str(raw);
                    unreadable.push('\n');
                }
            }
        }
        if !unreadable.is_empty() {
            let kept = format!("{agent}.unreadable");
            dir.append(&kept, unreadable.as_bytes()).map_err(io("keep the unreadable lines of"))?;
            let count = unreadable.lines().count();
            line(
                &*self.events,
                Level::Warning,
                &format!(
                    "[bus] {count} line(s) of {MAILBOX_DIR}/{file} are not messages; kept in {MAILBOX_DIR}/{kept} for \
                     you to read"
                ),
            );
        }
        dir.remove(&file).map_err(io("delete"))?;
        Ok(messages)
    }

    /// Whether a message waits for `agent` (a non-empty mailbox), nothing consumed (the
    /// course's `peek`). An invalid name or an unreadable folder is `false`.
    pub fn peek(&self, agent: &str) -> bool {
        let Ok(file) = file_name(agent) else { return false };
        match self.folder(false) {
            Ok(Some(dir)) => dir.dir().metadata(&file).is_ok_and(|m| m.is_file() && m.len() > 0),
            _ => false,
        }
    }

    /// Waits until a message waits for `agent` or `timeout` has passed, then takes them all
    /// (the course's `wait_for_messages` on its condition variable): empty when the time ran
    /// out. Sleeps without polling; any send in this process wakes it to look again.
    ///
    /// # Errors
    /// As [`MessageBus::read_inbox`].
    pub async fn wait_for_messages(&self, agent: &str, timeout: Duration) -> Result<Vec<Message>, BusError> {
        file_name(agent)?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            // Registered before looking, so a send between the look and the sleep still wakes us.
            notified.as_mut().enable();
            if self.peek(agent) {
                let messages = self.read_inbox(agent)?;
                if !messages.is_empty() {
                    return Ok(messages);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Ok(Vec::new());
            }
        }
    }

    /// Wakes every waiter without a message (a runtime shutting down, so an idle teammate
    /// looks again at once).
    pub fn wake_all(&self) {
        self.changed.notify_waiters();
    }

    /// What waits in each mailbox, for `/inbox`: `(agent, messages)` in name order, nothing
    /// consumed. A mailbox that cannot be read is left out.
    pub fn pending(&self) -> Vec<(String, Vec<Message>)> {
        let Ok(Some(dir)) = self.folder(false) else { return Vec::new() };
        let Ok(names) = dir.names(|name| name.ends_with(".jsonl")) else { return Vec::new() };
        names
            .into_iter()
            .filter_map(|name| {
                let agent = name.trim_end_matches(".jsonl").to_owned();
                let bytes = dir.read(&name, MAX_MAILBOX_BYTES).ok().flatten()?;
                let messages: Vec<Message> = String::from_utf8_lossy(&bytes)
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok().and_then(Message::from_value))
                    .collect();
                (!messages.is_empty()).then_some((agent, messages))
            })
            .collect()
    }
}
