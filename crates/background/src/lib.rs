//! The course's s11: background tasks. A slow `bash` command need not hold up the loop: with
//! `run_in_background: true` the call returns at once with a placeholder, and the command's
//! result reaches the model as a `<task_notification>` block before a later request.
//!
//! Source: COURSE-s10-s17 §2 (`s11_background_tasks/code.py`: `BackgroundManager`,
//! `should_run_background`, `inject_background_results`; course PR #240 for the fold into the
//! last user message). The processes themselves are [`agent_core::process::background`]'s: the
//! same deny list, sandbox and supervisor as a foreground command, nothing printed to the
//! terminal, and every one ended (with what it started) when the harness exits.
//!
//! ```text
//!  tool_use bash {command, run_in_background: true}
//!     │  PreToolUse (permission) first, as for any call
//!     ▼
//!  BackgroundManager::start ──► tool_result "[Background task bg_0001 started] …"
//!     │ (the command runs; the loop goes on)
//!     ▼
//!  finished ──► ready queue ──► before the next request: collect() (one consumer)
//!                                  └─► <task_notification> text blocks appended to the last
//!                                      user message, after its tool_result blocks
//! ```
//!
//! What the lesson rests on:
//! - **One `tool_use`, one `tool_result`.** The placeholder is the call's result; the
//!   notification is a separate text block and never reuses the `tool_use_id`.
//! - **Never two user messages in a row.** The notification folds into the trailing user message
//!   (a string becomes a text block first); only after an assistant message is a user message
//!   added. Text lands after every `tool_result`, as the Messages API requires.
//! - **A finished command does not wake the agent** (the course's s11): its result waits for
//!   the next request, a tool round or the user's next prompt. The course's s15 wakes it:
//!   [`BackgroundManager::wake`] makes each finished command's notification an automatic turn of
//!   its own, delivered exactly once, and the collector then folds nothing in.
//! - **Explicit, not guessed**: only JSON `true` starts a command in the background; `"true"` or
//!   `1` run it in the foreground.
//!
//! Departures (ours): the command runs under the harness's sandbox and supervisor rather than a
//! bare `Popen`; a command killed by a signal or stopped reports that in words
//! (`Error: killed by signal SIGKILL`) where the course prints a negative status.

#![warn(missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use agent_cli::repl::{SlashCommand, background_command};
use agent_core::dispatch::{Subject, Tool, ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::events::{Events, Level, line};
use agent_core::extension::{Extension, LoopContext};
use agent_core::messages::{ContentBlock, Message, MessageContent, Role, ToolSpec};
use agent_core::process::background::{Background, Finished, JobState, Limits, Outcome, StartError};
use agent_core::tools::{ExitStatusText, MAX_OUTPUT_CHARS, ToolOptions, run_command};
use agent_core::turns::{AutoTurn, TurnSender};
use agent_core::workspace::Workspace;
use serde::Deserialize;
use serde_json::{Value, json};

/// The source of the automatic turn a finished command starts ([`BackgroundManager::wake`]).
pub const WAKE_SOURCE: &str = "background";

/// Characters of a result kept in a notification's `<summary>` (course §2.6: `result[:500]`).
pub const SUMMARY_CHARS: usize = 500;

/// Bytes of each of stdout and stderr a background command keeps: enough for the course's
/// 50,000-character cap in UTF-8 of up to 4 bytes a character.
pub const KEEP_BYTES: usize = 4 * MAX_OUTPUT_CHARS;

/// The course's id for background command `n` (from 1): `bg_0001` (width 4, never reset).
pub fn task_id(n: u64) -> String {
    format!("bg_{n:04}")
}

/// The `tool_result` of a call that started command `id` (course §2.3).
pub fn placeholder(id: &str) -> String {
    format!("[Background task {id} started] {PLACEHOLDER_TAIL}")
}

/// What s11's placeholder says after `[Background task ID started]`.
pub const PLACEHOLDER_TAIL: &str = "The result will be collected on a later turn.";

/// What the course's s15 placeholder says after `[Background task ID started]` (COURSE-s10-s17
/// §6.5), where a finished command wakes the agent.
pub const WAKE_PLACEHOLDER_TAIL: &str = "Result will arrive as a task_notification.";

/// Characters of a result kept in a notification's `<summary>` in the course's s15 (§6.6:
/// `result[:200]`).
pub const S15_SUMMARY_CHARS: usize = 200;

/// `should_run_background`: the call is `bash` and its input's `run_in_background` is JSON
/// `true` (not `"true"`, not `1`).
pub fn should_run_background(name: &str, input: &Value) -> bool {
    name == "bash" && input.get("run_in_background") == Some(&Value::Bool(true))
}

/// One finished command as the model hears of it: a `<task_notification>` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `bg_0001`.
    pub task_id: String,
    /// `completed` (exit code 0) or `failed` (anything else).
    pub status: JobState,
    /// The command as the model gave it.
    pub command: String,
    /// The command's result as a foreground call would have returned it
    /// ([`result_text`]), cut to [`SUMMARY_CHARS`] characters.
    pub summary: String,
}

impl Notification {
    /// The notification of `finished`, its summary cut at [`SUMMARY_CHARS`].
    pub fn of(finished: &Finished) -> Self {
        Self::cut(finished, SUMMARY_CHARS)
    }

    /// The notification of `finished`, its summary cut at `summary_chars` characters.
    pub fn cut(finished: &Finished, summary_chars: usize) -> Self {
        let result = result_text(finished);
        let summary = match result.char_indices().nth(summary_chars) {
            Some((at, _)) => result[..at].to_owned(),
            None => result,
        };
        let status = if finished.outcome.succeeded() { JobState::Completed } else { JobState::Failed };
        Self { task_id: task_id(finished.id), status, command: finished.command.clone(), summary }
    }
}

impl std::fmt::Display for Notification {
    /// The block exactly as the course builds it (§2.4): two-space indent, `\n` between lines,
    /// no trailing newline, command and summary not escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "<task_notification>\n  <task_id>{}</task_id>\n  <status>{}</status>\n  <command>{}</command>\n  <summary>{}</summary>\n</task_notification>",
            self.task_id, self.status, self.command, self.summary
        )
    }
}

/// What a finished command's call would have returned in the foreground (course
/// `_format_bash_result`): the output trimmed and cut at 50,000 characters (`(no output)` when
/// empty); for a non-zero exit `Error: command exited with status N` before it; a timeout
/// `Error: Timeout (Ns)`. Ours: a signal `Error: killed by signal NAME`, a stop `Error: stopped`,
/// each followed by the output.
pub fn result_text(finished: &Finished) -> String {
    let raw = finished.output();
    let trimmed = raw.trim();
    let output = match trimmed.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((at, _)) => &trimmed[..at],
        None if trimmed.is_empty() => "(no output)",
        None => trimmed,
    };
    match &finished.outcome {
        Outcome::Exited(0) => output.to_owned(),
        Outcome::Exited(code) => format!("Error: {}", ExitStatusText::error_text(*code, output)),
        Outcome::TimedOut(after) => format!("Error: Timeout ({}s)", after.as_secs_f64()),
        Outcome::Failed(why) => format!("Error: {why}"),
        other @ (Outcome::Killed(_) | Outcome::Stopped) => format!("Error: {other}\n{output}"),
    }
}

/// Appends `texts` as text blocks to the last message when it is a user message (a string
/// content becomes a text block first), or as a new user message otherwise: the course's
/// `inject_background_results`, which never leaves two user messages in a row (course #240).
/// Nothing happens for no texts.
pub fn fold_into_last_user(history: &mut Vec<Message>, texts: Vec<String>) {
    if texts.is_empty() {
        return;
    }
    let notes = texts.into_iter().map(ContentBlock::text);
    match history.last_mut() {
        Some(last) if last.role == Role::User => {
            let mut blocks = last.blocks();
            blocks.extend(notes);
            last.content = MessageContent::Blocks(blocks.into());
        }
        _ => history.push(Message::user_blocks(notes.collect())),
    }
}

/// The course's `BackgroundManager`: starts `bash` commands in the background, hands each
/// finished one out once as a [`Notification`], and reports `[background] started …` and
/// `[background] collected …` lines. Cloning gives another handle on the same commands.
#[derive(Clone)]
pub struct BackgroundManager {
    background: Background,
    ws: Workspace,
    opts: ToolOptions,
    events: Events,
    /// Characters of a result a notification's summary keeps.
    summary_chars: usize,
    /// Whether a finished command wakes the agent ([`BackgroundManager::wake`]).
    wakes: bool,
}

impl BackgroundManager {
    /// A manager whose commands run in `ws`'s root under `opts` (sandbox, timeout), reporting
    /// its lines to `events`; the course's s11: summaries of [`SUMMARY_CHARS`], no wake.
    pub fn new(ws: &Workspace, opts: &ToolOptions, events: Events) -> Self {
        Self {
            background: Background::new(),
            ws: ws.clone(),
            opts: opts.clone(),
            events,
            summary_chars: SUMMARY_CHARS,
            wakes: false,
        }
    }

    /// The same manager whose notifications keep `chars` characters of a result (the course's
    /// s15: [`S15_SUMMARY_CHARS`]).
    #[must_use]
    pub fn summary_chars(mut self, chars: usize) -> Self {
        self.summary_chars = chars;
        self
    }

    /// The same manager, whose finished commands wake the agent (the course's s15): each one's
    /// `<task_notification>` becomes an automatic turn of its own in `turns`' queue (source
    /// `background`), whose questions are refused with `refusal`, delivered exactly once: the
    /// collector no longer folds it into a request, and the placeholder says
    /// [`WAKE_PLACEHOLDER_TAIL`]. While a command runs, `-p` and the demo wait for its turn
    /// ([`agent_core::turns::TurnSender::expect`]). Call it before the first command starts.
    #[must_use]
    pub fn wake(mut self, turns: TurnSender, refusal: &str) -> Self {
        let (chars, events, refusal) = (self.summary_chars, self.events.clone(), refusal.to_owned());
        self.background.wake_with(turns, move |finished| {
            let note = Notification::cut(finished, chars);
            line(
                &*events,
                Level::Mechanism,
                &format!("[background] {} {}: waking the agent", note.task_id, note.status),
            );
            Some(AutoTurn::new(WAKE_SOURCE, note.to_string()).refusing(refusal.clone()))
        });
        self.wakes = true;
        self
    }

    /// The `tool_result` of a call that started command `id`: [`placeholder`], or with
    /// [`WAKE_PLACEHOLDER_TAIL`] when finished commands wake the agent.
    pub fn placeholder(&self, id: &str) -> String {
        if self.wakes {
            format!("[Background task {id} started] {WAKE_PLACEHOLDER_TAIL}")
        } else {
            placeholder(id)
        }
    }

    /// The processes underneath, for a listing or a wait.
    pub fn background(&self) -> &Background {
        &self.background
    }

    /// Starts `command` in the background and returns its id (`bg_0001`); reports
    /// `[background] started bg_0001: COMMAND` (the command cut at 60 characters).
    ///
    /// # Errors
    /// `Bash command cannot be empty` for a blank command (course); the deny list, the sandbox or
    /// the spawn ([`StartError`]); nothing was started then.
    pub fn start(&self, command: &str) -> Result<String, String> {
        if command.trim().is_empty() {
            return Err("Bash command cannot be empty".to_owned());
        }
        let limits = Limits { timeout: self.opts.bash_timeout, keep_bytes: KEEP_BYTES };
        let n = self
            .background
            .start(command, &self.ws, &self.opts.sandbox, limits)
            .map_err(|e: StartError| e.to_string())?;
        let id = task_id(n);
        let shown: String = command.chars().take(60).collect();
        line(&*self.events, Level::Mechanism, &format!("[background] started {id}: {shown}"));
        Ok(id)
    }

    /// The course's `collect`: every command finished since the last call, in the order they
    /// finished, each handed out once whoever calls (one atomic consumer); reports
    /// `[background] collected bg_0001: completed` for each.
    /// When finished commands wake the agent ([`BackgroundManager::wake`]) their turns carry
    /// them instead, and this hands out none.
    pub fn collect(&self) -> Vec<Notification> {
        let finished = self.background.take_finished();
        if self.wakes {
            return Vec::new();
        }
        let notes: Vec<Notification> =
            finished.iter().map(|f| Notification::cut(f, self.summary_chars)).collect();
        for note in &notes {
            line(
                &*self.events,
                Level::Mechanism,
                &format!("[background] collected {}: {}", note.task_id, note.status),
            );
        }
        notes
    }

    /// `inject_background_results`: collects and folds the notifications into `history`
    /// ([`fold_into_last_user`]); returns how many there were.
    pub fn inject(&self, history: &mut Vec<Message>) -> usize {
        let notes = self.collect();
        let count = notes.len();
        fold_into_last_user(history, notes.iter().map(ToString::to_string).collect());
        count
    }

    /// `bash` with s11's schema: `run_in_background` (boolean) beside `command`. In the
    /// foreground it is the kernel's `bash` with the course's s11 exit wording
    /// (`Error: command exited with status N`); with JSON `true` it starts the command here and
    /// returns [`placeholder`]. Permission runs before it, like any call (the hooks'
    /// `PreToolUse`), so a refused command never starts.
    pub fn bash_tool(&self) -> impl Tool + use<> {
        let mut opts = self.opts.clone();
        opts.exit_status = ExitStatusText::Error;
        BackgroundBash { manager: self.clone(), opts }
    }

    /// The loop side: [`BackgroundManager::inject`] before every request.
    pub fn extension(&self) -> impl Extension + use<> {
        Collector { manager: self.clone() }
    }

    /// `/bg`: the background commands, one line each: id, state, elapsed time, exit status,
    /// command.
    pub fn commands(&self) -> Vec<SlashCommand> {
        vec![background_command("bg", self.background.clone(), task_id)]
    }

    /// Waits up to `limit` for every command to finish; `true` when none is left running.
    /// For tests and tools that must not race a command's end.
    pub async fn settle(&self, limit: Duration) -> bool {
        let ids: Vec<u64> = self.background.list().iter().map(|j| j.id).collect();
        let all = async {
            for id in ids {
                self.background.wait(id).await;
            }
        };
        tokio::time::timeout(limit, all).await.is_ok()
    }
}

/// `bash` with `run_in_background`.
struct BackgroundBash {
    manager: BackgroundManager,
    /// The foreground options: the kernel's, with the s11 exit wording.
    opts: ToolOptions,
}

/// `bash`'s input in s11.
#[derive(Deserialize)]
struct Args {
    command: String,
    /// Any JSON; only `true` means the background.
    #[serde(default)]
    run_in_background: Value,
}

impl TypedTool for BackgroundBash {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a shell command.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}, "run_in_background": {"type": "boolean"}},
                "required": ["command"]
            }),
        }
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::Command(args.command.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        if args.run_in_background != Value::Bool(true) {
            return run_command(&args.command, &self.manager.ws, &self.opts).await;
        }
        let id = self.manager.start(&args.command).map_err(ToolError::failed)?;
        Ok(self.manager.placeholder(&id))
    }
}

/// Folds finished commands' notifications into the history before each request.
struct Collector {
    manager: BackgroundManager,
}

#[async_trait::async_trait]
impl Extension for Collector {
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        self.manager.inject(context.history);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use agent_core::test_util::EventLog;

    use super::*;

    fn manager(dir: &std::path::Path) -> (BackgroundManager, Arc<EventLog>) {
        let ws = Workspace::new(dir).unwrap();
        let log = EventLog::new();
        (BackgroundManager::new(&ws, &ToolOptions::default(), log.clone()), log)
    }

    /// Waits for every command and collects them.
    async fn collected(m: &BackgroundManager) -> Vec<Notification> {
        assert!(m.settle(Duration::from_secs(30)).await, "the commands finished");
        m.collect()
    }

    #[test]
    fn test_background_execution_requires_an_explicit_bash_flag() {
        assert!(!should_run_background("bash", &json!({"command": "npm install"})));
        assert!(should_run_background("bash", &json!({"command": "npm install", "run_in_background": true})));
        assert!(!should_run_background("bash", &json!({"command": "x", "run_in_background": "true"})));
        assert!(!should_run_background("bash", &json!({"command": "x", "run_in_background": 1})));
        assert!(!should_run_background("write_file", &json!({"path": "a", "run_in_background": true})));
    }

    #[tokio::test]
    async fn test_completed_result_is_collected_once_before_a_later_llm_call() {
        let dir = tempfile::tempdir().unwrap();
        let (m, log) = manager(dir.path());
        assert_eq!(m.start("echo ready").unwrap(), "bg_0001");
        let notes = collected(&m).await;
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].to_string(),
            "<task_notification>\n  <task_id>bg_0001</task_id>\n  <status>completed</status>\n  <command>echo ready</command>\n  <summary>ready</summary>\n</task_notification>"
        );
        assert!(m.collect().is_empty(), "handed out once");
        assert_eq!(m.start("true").unwrap(), "bg_0002", "ids are never reused");
        let lines = log.lines();
        assert!(lines.iter().any(|l| l.contains("[background] started bg_0001: echo ready")), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("[background] collected bg_0001: completed")), "{lines:?}");
    }

    #[tokio::test]
    async fn test_background_dispatch_is_bash_only_and_reports_failures() {
        let dir = tempfile::tempdir().unwrap();
        let (m, _) = manager(dir.path());
        m.start("exit 7").unwrap();
        let note = collected(&m).await.remove(0);
        assert_eq!(note.status, JobState::Failed);
        assert_eq!(note.summary, "Error: command exited with status 7\n(no output)");
        assert_eq!(m.start("  ").unwrap_err(), "Bash command cannot be empty");
        assert_eq!(m.start("sudo ls").unwrap_err(), "Dangerous command blocked");
    }

    #[tokio::test]
    async fn the_summary_is_cut_at_500_characters() {
        let dir = tempfile::tempdir().unwrap();
        let (m, _) = manager(dir.path());
        m.start("printf 'é%.0s' $(seq 600)").unwrap();
        let note = collected(&m).await.remove(0);
        assert_eq!(note.summary, "é".repeat(SUMMARY_CHARS));
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_stopped_and_reported_failed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let opts = ToolOptions { bash_timeout: Duration::from_secs(1), ..ToolOptions::default() };
        let m = BackgroundManager::new(&ws, &opts, EventLog::new());
        m.start("while true; do sleep 0.05; done").unwrap();
        let note = collected(&m).await.remove(0);
        assert_eq!(note.status, JobState::Failed);
        assert_eq!(note.summary, "Error: Timeout (1s)");
    }

    fn tool_result(id: &str) -> ContentBlock {
        ContentBlock::tool_result(id, "[Background task bg_0001 started]", false)
    }

    #[test]
    fn notifications_fold_into_the_last_user_message_after_its_tool_results() {
        let mut history = vec![
            Message::user_text("go"),
            Message::assistant_blocks(vec![ContentBlock::text("ok")]),
            Message::user_blocks(vec![tool_result("toolu_1")]),
        ];
        fold_into_last_user(&mut history, vec!["<n1>".into(), "<n2>".into()]);
        assert_eq!(history.len(), 3, "never a second user message");
        let blocks = history[2].blocks();
        let kinds: Vec<&str> = blocks.iter().map(ContentBlock::kind).collect();
        assert_eq!(kinds, ["tool_result", "text", "text"]);
    }

    #[test]
    fn a_string_prompt_becomes_a_text_block_before_the_notifications() {
        let mut history = vec![Message::user_text("what happened?")];
        fold_into_last_user(&mut history, vec!["<n>".into()]);
        let blocks = history[0].blocks();
        assert_eq!(blocks, vec![ContentBlock::text("what happened?"), ContentBlock::text("<n>")]);
    }

    #[test]
    fn after_an_assistant_message_a_user_message_is_added() {
        let mut history = vec![Message::assistant_blocks(vec![ContentBlock::text("done")])];
        fold_into_last_user(&mut history, vec!["<n>".into()]);
        assert_eq!(history.len(), 2);
        assert_eq!(history[1].role, Role::User);
        fold_into_last_user(&mut history, Vec::new());
        assert_eq!(history.len(), 2, "nothing to add, nothing added");
    }
}
