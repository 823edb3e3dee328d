//! The REPL a learner lives in: reading prompts, Ctrl-C, and one cancellable turn.
//!
//! Source: course §0 (the prompt `sNN >> `; `q`, `exit` or end of input quit; blank lines are
//! ignored). Ours, as most terminal prompts behave (bash, Claude Code):
//! - On a terminal, prompts are read with rustyline: line editing, UTF-8 and input-method text,
//!   bracketed paste (a pasted block of several lines is one prompt), history with the arrow keys.
//!   Piped stdin is read line by line, without escape codes.
//! - Ctrl-C with text on the line clears the line (Ctrl-Y brings it back); on an empty line it
//!   says how to quit: Ctrl-D, `q` or `exit`.
//! - Ctrl-C while a turn runs cancels it: the request is dropped, a running tool is stopped, and
//!   the history gets a [`INTERRUPTED`] text block after the interrupted prompt, so the model (and
//!   the learner) see that the prompt was cut short instead of finding it silently merged into
//!   the next one.
//!
//! - A line that starts with `/WORD` is a command, answered here and never sent to the model:
//!   `/help`, `/history` (the messages array as the next request sends it), `/clear`, `/usage`,
//!   `/trace` (recording the session: [`crate::listeners::trace_command`]),
//!   the chapter's own [`SlashCommand`]s (s03's `/todos`), and `/permissions` where the
//!   permission hook runs ([`permissions_command`]). An unknown `/WORD` says so. A
//!   line such as `/etc/hosts: what is this?` is a prompt, not a command.
//!
//! - Turns no one typed ([`agent_core::turns`]: a due cron job, a teammate's report, a finished
//!   background command) run while the REPL waits for a line, never during a user's turn: the
//!   REPL's one loop owns the agent and takes the user's lines and the queued turns in turn. Such
//!   a turn starts with a line `[SOURCE] PROMPT`; its output appears above the prompt and the
//!   half-typed line is drawn again ([`crate::console`]); it asks no one `Allow? [y/N]` (its
//!   approver answers with the turn's text). A line entered meanwhile is sent when it ends;
//!   Ctrl-C on an empty line cancels it, Ctrl-D cancels it and quits.
//!
//! The line editor only holds the terminal while a prompt is read; a turn's Ctrl-C comes as a
//! SIGINT, which `one_turn` waits for next to the turn.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;

use rustyline::{
    Cmd, ConditionalEventHandler, Event, EventContext, EventHandler, KeyCode, KeyEvent, Modifiers, Movement,
    RepeatCount,
};
use tokio::sync::mpsc;

use agent_core::agent::{Agent, TurnEnd};
use agent_core::approve::AskGate;
use agent_core::error::ApiError;
use agent_core::messages::{ContentBlock, Message, MessageContent, MessagesRequest, Role, UsageTotals};
use agent_core::permission::{AlwaysAllowed, Source, known};
use agent_core::process::background::Background;
use agent_core::sanitize::one_line;
use agent_core::turns::{AutoTurn, TurnQueue};

use crate::ui::{Terminal, Ui};

/// The text block added to the history after a prompt whose turn Ctrl-C cancelled.
pub const INTERRUPTED: &str = "(interrupted by the user)";

/// The line shown after a 400 that names `cache_control`: the endpoint does not take prompt
/// caching's breakpoints, and this says how to stop sending them.
pub const CACHE_CONTROL_HINT: &str = "hint: this endpoint rejects prompt caching's cache_control field: run with --no-cache, or set DISABLE_PROMPT_CACHING=1 in .env";

/// What Ctrl-C on an empty prompt line says.
pub const QUIT_HINT: &str = "(to quit, press Ctrl-D or type q; Ctrl-C clears a typed line)";

/// Runs one turn, cancellable with Ctrl-C. Errors are printed on `terminal`; `Err(())` means the
/// turn failed or was cancelled. A cancelled turn leaves [`INTERRUPTED`] at the end of `history`.
pub(crate) async fn one_turn(
    agent: &mut Agent,
    terminal: &Terminal,
    history: &mut Vec<Message>,
    prompt: &str,
) -> Result<TurnEnd, ()> {
    one_turn_until(agent, terminal, history, prompt, std::future::pending()).await
}

/// [`one_turn`], also cancelled when `cancel` completes.
async fn one_turn_until(
    agent: &mut Agent,
    terminal: &Terminal,
    history: &mut Vec<Message>,
    prompt: &str,
    cancel: impl Future<Output = ()>,
) -> Result<TurnEnd, ()> {
    let ui = terminal.ui();
    let result = tokio::select! {
        r = agent.run_turn(history, prompt) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
        () = cancel => None,
    };
    match result {
        Some(Ok(end)) => Ok(end),
        Some(Err(e)) => {
            report_api_error(terminal, &e);
            Err(())
        }
        None => {
            // The turn's future is gone: the request was dropped and a running tool killed.
            // What the turn had appended stays; normalize_messages answers an unanswered
            // tool_use with (cancelled).
            history.push(Message::user_text(INTERRUPTED));
            terminal.interrupted();
            ui.notice("(interrupted: the turn was cancelled)");
            Err(())
        }
    }
}

/// Runs `turn`, a turn no one typed ([`agent_core::turns`]), as [`one_turn`] runs a prompt: a
/// line names its source and prompt, and the approver refuses with the turn's text wherever it
/// would ask (`gate` is closed for the turn). `cancel` ends it as Ctrl-C does. The caller calls
/// [`crate::console::automatic_turn_ended`] once it has written what ends the turn.
pub(crate) async fn automatic_turn(
    agent: &mut Agent,
    terminal: &Terminal,
    history: &mut Vec<Message>,
    gate: &AskGate,
    turn: &AutoTurn,
    cancel: impl Future<Output = ()>,
) -> Result<TurnEnd, ()> {
    crate::console::automatic_turn_started();
    // The terminal shows it (`[SOURCE] PROMPT`), a trace records it.
    agent
        .events()
        .on_event(&agent_core::events::Event::AutomaticTurn { source: &turn.source, prompt: &turn.prompt });
    let _closed = gate.refuse_for_now(turn.refusal_text());
    one_turn_until(agent, terminal, history, &turn.prompt, cancel).await
}

/// The error, the endpoint's request id when it gave one, and a hint for a 401 (naming the key
/// sent and where it came from) or a 404.
fn report_api_error(terminal: &Terminal, e: &ApiError) {
    let ui = terminal.ui();
    ui.error(&e.to_string());
    if let Some(id) = e.request_id() {
        ui.notice(&format!("request-id: {id} (quote it when you report the problem)"));
    }
    let status = match e {
        ApiError::Api { status, .. } | ApiError::Http { status, .. } => Some(*status),
        _ => None,
    };
    match status {
        Some(401) => ui.notice(&format!(
            "hint: a 401 means the key was refused; the request carried {}; set AUTH_TYPE=bearer if the endpoint wants Authorization: Bearer",
            terminal.key_source().unwrap_or("the configured key")
        )),
        Some(404) => {
            ui.notice("hint: a 404 means an unknown model id (check MODEL_ID) or a wrong ANTHROPIC_BASE_URL")
        }
        _ => {}
    }
    if let ApiError::Transport(text) = e
        && let Some(hint) = transport_hint(text)
    {
        ui.notice(hint);
    }
    if agent_core::client::cache::rejects_cache_control(e) {
        ui.notice(CACHE_CONTROL_HINT);
    }
}

/// A hint for a request that never got an answer, from the transport's text: a closed port, or
/// an `https://` URL whose server (a local model server, usually) speaks plain http, which shows
/// as a TLS handshake that times out or reads garbage.
fn transport_hint(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    if lower.contains("connection refused") {
        return Some(
            "hint: nothing listens at that address: is the server running, and is the port in the base URL right?",
        );
    }
    let tls_failed = ["timed out", "corrupt message", "invalidcontenttype", "invalid message", "handshake"]
        .iter()
        .any(|sign| lower.contains(sign));
    (lower.contains("(https://") && tls_failed).then_some(
        "hint: the base URL says https://; if the server there speaks plain http (a local model server usually does), use http://",
    )
}

/// A command a chapter adds to the REPL, such as s03's `/todos`: typed as `/NAME`, listed by
/// `/help`, answered locally (nothing is sent to the model). A chapter's command of the same name
/// as a built-in one (`/history`, `/usage`) answers in its place, so a chapter can show more of
/// its mechanism there.
///
/// A command made with [`SlashCommand::sending`] may answer with a prompt instead, which is then
/// sent as if typed (s17's `/goal CONDITION` sets the goal and sends the condition); such a
/// command also answers a `-p` prompt or a demo prompt that names it.
pub struct SlashCommand {
    /// The name, without the slash, such as `todos`.
    pub name: &'static str,
    /// One line for `/help`.
    pub help: &'static str,
    /// Shows the command's answer on the terminal, and returns the prompt to send, if any.
    pub run: CommandRun,
    /// Whether the command may start a turn (made with [`SlashCommand::sending`]).
    pub sends: bool,
}

/// How a [`SlashCommand`] answers: it shows what it has to show and returns the prompt to send,
/// if any.
pub type CommandRun = Box<dyn Fn(&CommandContext<'_>) -> Option<String> + Send + Sync>;

/// What a chapter's command sees when it is typed.
pub struct CommandContext<'a> {
    /// The terminal.
    pub ui: &'a Ui,
    /// What follows `/NAME` on the line, trimmed (`1` in `/history task 1` is `task 1`).
    pub args: &'a str,
    /// The agent, between turns.
    pub agent: &'a Agent,
    /// The session's history.
    pub history: &'a [Message],
}

impl SlashCommand {
    /// `/name`, described by `help`, answered by `run` on the terminal alone.
    pub fn new(name: &'static str, help: &'static str, run: impl Fn(&Ui) + Send + Sync + 'static) -> Self {
        Self {
            name,
            help,
            run: Box::new(move |context| {
                run(context.ui);
                None
            }),
            sends: false,
        }
    }

    /// `/name`, described by `help`, answered by `run`, which also sees the words after the
    /// command, the agent and the history.
    pub fn with_context(
        name: &'static str,
        help: &'static str,
        run: impl Fn(&CommandContext<'_>) + Send + Sync + 'static,
    ) -> Self {
        Self {
            name,
            help,
            run: Box::new(move |context| {
                run(context);
                None
            }),
            sends: false,
        }
    }

    /// `/name`, described by `help`, answered by `run` like [`SlashCommand::with_context`]; what
    /// `run` returns, if anything, is then sent as the user's prompt (s17's `/goal CONDITION`).
    pub fn sending(
        name: &'static str,
        help: &'static str,
        run: impl Fn(&CommandContext<'_>) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self { name, help, run: Box::new(run), sends: true }
    }
}

/// The prompt a `-p` or demo `prompt` stands for: when it names a chapter command that may start
/// a turn ([`SlashCommand::sending`]), that command runs and its answer (`None`: nothing to
/// send) is the prompt; any other text, commands included, is sent as it is.
pub fn command_prompt(
    prompt: &str,
    agent: &mut Agent,
    ui: &Ui,
    history: &mut Vec<Message>,
    commands: &[SlashCommand],
) -> Option<String> {
    let trimmed = prompt.trim();
    match command_word(trimmed) {
        Some(word) if commands.iter().any(|c| c.sends && c.name == word) => {
            command(trimmed, word, agent, ui, history, commands)
        }
        _ => Some(prompt.to_owned()),
    }
}

/// `/permissions` (ours, with the permission hook): what runs without asking. Alone, it lists
/// the session's allowances (`--allow`, the answer `a`) and where each came from;
/// `/permissions revoke NAME` takes one back, `/permissions clear` all of them, and
/// `/permissions known` lists the programs that always run unasked with read-only arguments
/// ([`agent_core::permission::known`]).
pub fn permissions_command(allowed: AlwaysAllowed) -> SlashCommand {
    SlashCommand::with_context(
        "permissions",
        "what runs without asking; revoke NAME, clear, known",
        move |context| {
            let (ui, args) = (context.ui, context.args);
            let mut words = args.split_whitespace();
            match words.next() {
            None => ui.say(&allowances_view(&allowed)),
            Some("revoke") => {
                let name = words.collect::<Vec<_>>().join(" ");
                if name.is_empty() {
                    ui.error("usage: /permissions revoke NAME (a name /permissions lists)");
                } else if allowed.revoke(&name) {
                    ui.say(&format!("{name} is asked about again."));
                } else {
                    ui.error(&format!("{name} was not allowed; /permissions lists what is"));
                }
            }
            Some("clear") => {
                let n = allowed.clear();
                let n = crate::ui::count(n, "allowance", "allowances");
                ui.say(&format!("{n} taken back: everything outside the known programs asks again."));
            }
            Some("known") => ui.say(&format!(
                "Programs that run without asking, with read-only arguments (crates/core/src/permission/known.rs):\n{}",
                known::names().join(" ")
            )),
            Some(other) => ui.error(&format!(
                "unknown /permissions {other}; use /permissions, /permissions revoke NAME, /permissions clear or /permissions known"
            )),
        }
        },
    )
}

/// A command that lists a harness's background commands ([`Background::list`]), as Claude
/// Code's `/bashes` does: one line each, `ID  STATE  ELAPSED  OUTCOME  COMMAND`, with `id` giving
/// the chapter's form of an id (s11's `bg_0001`), the state `running`, `completed` or `failed`,
/// the outcome `exit code N`, `killed by signal NAME`, `timed out after Ns` or `stopped`, and the
/// command on one line; `No background commands.` when there are none.
pub fn background_command(
    name: &'static str,
    background: Background,
    id: impl Fn(u64) -> String + Send + Sync + 'static,
) -> SlashCommand {
    SlashCommand::new(name, "the background commands: id, state, elapsed time, outcome, command", move |ui| {
        let list = background.list();
        if list.is_empty() {
            ui.say("No background commands.");
            return;
        }
        let lines: Vec<String> = list
            .iter()
            .map(|job| {
                let outcome = job.outcome.as_ref().map(ToString::to_string).unwrap_or_default();
                format!(
                    "{}  {:<9}  {:>7.1}s  {outcome:<24}  {}",
                    id(job.id),
                    job.state.to_string(),
                    job.elapsed.as_secs_f64(),
                    one_line(&job.command, HISTORY_PREVIEW_CHARS + 1)
                )
            })
            .collect();
        ui.say(&lines.join("\n"));
    })
}

/// What `/permissions` alone shows: each allowance and where it came from, or how to add one.
pub fn allowances_view(allowed: &AlwaysAllowed) -> String {
    let list = allowed.list();
    if list.is_empty() {
        return "Nothing is allowed for this session beyond the known programs (/permissions known).\n\
                Answer a at Allow? [y/N], or start with --allow NAME, to allow a program."
            .to_owned();
    }
    let mut text = String::from(
        "Allowed for this session without asking (a deny-list command is still refused, \
         and writing .env or under .git still asks):\n",
    );
    let width = list.iter().map(|a| a.program.chars().count()).max().unwrap_or(0);
    for a in &list {
        let from = match a.source {
            Source::Flag => "--allow",
            Source::Answer => "answered a",
        };
        text.push_str(&format!("  {:<width$}  ({from})\n", a.program));
    }
    text.push_str("/permissions revoke NAME takes one back; /permissions clear takes them all.");
    text
}

/// `/usage`'s line for `usage`: `LABEL: N requests, N input tokens, N output tokens`; when
/// the prompt cache was read or written, a second line with its tokens and what it saved, in
/// input-token equivalents (a write bills 1.25 times the input price, a read 0.1 times):
/// `  prompt cache: R read, W written, U not cached: the input bills as B tokens instead of T
/// (S saved, P%)`.
pub fn usage_line(label: &str, usage: &UsageTotals) -> String {
    let mut line = format!(
        "{label}: {}, {} input tokens, {} output tokens",
        crate::ui::count(usage.requests as usize, "request", "requests"),
        usage.input_tokens,
        usage.output_tokens
    );
    if usage.cache_read_input_tokens + usage.cache_creation_input_tokens > 0 {
        let total = usage.total_input_tokens();
        line.push_str(&format!(
            "\n  prompt cache: {} read, {} written, {} not cached: the input bills as {:.0} tokens instead of {total} ({:.0} saved, {:.0}%)",
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens,
            usage.input_tokens,
            usage.billed_input(),
            usage.cache_saved(),
            100.0 * usage.cache_saved() / total.max(1) as f64,
        ));
    }
    line
}

/// `/history`'s last line: where the next request puts its prompt-caching breakpoints
/// ([`agent_core::client::cache`]), with `caching` whether the model sends them at all:
/// `prompt cache: breakpoints on the last tool, [2] block 0 and [4] block 1 (…)`.
pub fn breakpoints_line(caching: bool, request: &MessagesRequest) -> String {
    if !caching {
        return "prompt cache: no breakpoints are sent (--no-cache, DISABLE_PROMPT_CACHING=1, or a replay)"
            .into();
    }
    let mut at: Vec<String> = Vec::new();
    if !request.tools.is_empty() {
        at.push("the last tool".into());
    }
    let marks = agent_core::client::cache::breakpoints(&request.messages);
    at.extend(marks.iter().map(|(message, block)| format!("[{message}] block {block}")));
    let list = match at.split_last() {
        None => {
            return "prompt cache: no breakpoint in the next request (no tools, and no message can carry one)"
                .into();
        }
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    };
    format!("prompt cache: breakpoints on {list} (the API caches the prompt up to each)")
}

/// The commands every chapter's REPL answers: (name, help).
const BUILT_IN: &[(&str, &str)] = &[
    ("help", "this list"),
    ("history", "the messages array as the next request sends it: roles, blocks, tool ids"),
    ("clear", "start a new conversation (the history is emptied, and so is a todo list)"),
    ("usage", "requests and tokens used in this session"),
];

/// The word of a `/WORD` command line, or `None` for a prompt. The word is ASCII letters, digits,
/// `-` and `_`, and ends the line or is followed by a blank, so `/etc/hosts` is no command.
fn command_word(line: &str) -> Option<&str> {
    let rest = line.trim().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let word = &rest[..end];
    let valid = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then_some(word)
}

/// Answers one command line, `/WORD`; returns the prompt a chapter's command answered with, to
/// send as if typed ([`SlashCommand::sending`]).
fn command(
    line: &str,
    word: &str,
    agent: &mut Agent,
    ui: &Ui,
    history: &mut Vec<Message>,
    commands: &[SlashCommand],
) -> Option<String> {
    if let Some(c) = commands.iter().find(|c| c.name == word) {
        let args = line.trim().strip_prefix('/').and_then(|l| l.strip_prefix(word)).unwrap_or("").trim();
        return (c.run)(&CommandContext { ui, args, agent, history });
    }
    match word {
        "help" => {
            let mut text = String::from("Commands (answered here, never sent to the model):\n");
            let replaced = |name: &str| commands.iter().any(|c| c.name == name);
            let built_in = BUILT_IN.iter().copied().filter(|(name, _)| !replaced(name));
            // Only a chapter with a todo list (its `/todos`) has one for /clear to empty.
            let has_todos = commands.iter().any(|c| c.name == "todos");
            let built_in = built_in.map(|(name, help)| match name {
                "clear" if !has_todos => (name, "start a new conversation (the history is emptied)"),
                _ => (name, help),
            });
            for (name, help) in built_in.chain(commands.iter().map(|c| (c.name, c.help))) {
                text.push_str(&format!("  /{name:<10} {help}\n"));
            }
            text.push_str("Keys: Ctrl-C clears the line or cancels a running turn; Ctrl-D, q or exit quits.");
            ui.say(&text);
        }
        "history" => {
            let request = agent.request(history);
            let caching = agent.model().prompt_caching();
            ui.say(&format!("{}\n{}", history_view(&request.messages), breakpoints_line(caching, &request)));
        }
        "clear" => {
            history.clear();
            agent.new_conversation();
            ui.say("(a new conversation: the history is empty)");
        }
        "usage" => ui.say(&usage_line("this session", &agent.session_usage())),
        _ => ui.error(&format!(
            "unknown command /{word}; /help lists the commands (nothing was sent to the model)"
        )),
    }
    None
}

/// How many characters of a text or a tool's input or output `/history` shows on a line.
const HISTORY_PREVIEW_CHARS: usize = 80;

/// How many lines of a multi-line text or result `/history` shows.
const HISTORY_PREVIEW_LINES: usize = 6;

/// `messages` as `/history` shows them: one line per message (index and role), then one line per
/// content block: its type, a `tool_use`'s id, name and input, a `tool_result`'s `tool_use_id`
/// and `is_error`, and its text: on the same line, quoted, when it is one line; otherwise its
/// first lines below it, each behind `| `, so a multi-line result reads as it is.
pub fn history_view(messages: &[Message]) -> String {
    history_view_with(messages, &|_| None)
}

/// [`history_view`] with a note on the blocks a chapter's mechanism wants to point out: a block's
/// first line ends with `  <- NOTE` when `note` gives one (s08 marks the archived and compacted
/// parts of the history this way).
pub fn history_view_with(messages: &[Message], note: &dyn Fn(&ContentBlock) -> Option<String>) -> String {
    let mut out = format!(
        "{}, as the next request sends them:\n",
        crate::ui::count(messages.len(), "message", "messages")
    );
    for (i, message) in messages.iter().enumerate() {
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out.push_str(&format!("[{i}] {role}\n"));
        for block in message.content.to_blocks() {
            let line = match &block {
                ContentBlock::Text(t) => with_text("text".to_owned(), &t.text),
                ContentBlock::ToolUse(u) => {
                    format!(
                        "tool_use {} {} {}",
                        u.id,
                        u.name,
                        one_line(u.input.to_string().trim(), HISTORY_PREVIEW_CHARS + 1)
                    )
                }
                ContentBlock::ToolResult(r) => with_text(
                    format!("tool_result {} is_error={}", r.tool_use_id, r.is_error.unwrap_or(false)),
                    &content_text(&r.content),
                ),
                ContentBlock::Other(_) => block.kind().to_owned(),
            };
            match (note(&block), line.split_once('\n')) {
                (Some(note), Some((head, rest))) => {
                    out.push_str(&format!("    {head}  <- {}\n{rest}\n", one_line(&note, 200)));
                }
                (Some(note), None) => out.push_str(&format!("    {line}  <- {}\n", one_line(&note, 200))),
                (None, _) => out.push_str(&format!("    {line}\n")),
            }
        }
    }
    out.trim_end().to_owned()
}

/// `head` and a block's text: `head "TEXT"` for one line; for several, `head (N lines)` and the
/// first [`HISTORY_PREVIEW_LINES`] below it, each cut to [`HISTORY_PREVIEW_CHARS`].
fn with_text(head: String, text: &str) -> String {
    let text = text.trim();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= 1 {
        return format!("{head} {:?}", one_line(text, HISTORY_PREVIEW_CHARS + 1));
    }
    let mut out = format!("{head} ({} lines)", lines.len());
    for line in lines.iter().take(HISTORY_PREVIEW_LINES) {
        out.push_str(&format!("\n      | {}", one_line(line.trim_end(), HISTORY_PREVIEW_CHARS + 1)));
    }
    if lines.len() > HISTORY_PREVIEW_LINES {
        out.push_str(&format!("\n      | … {} more lines", lines.len() - HISTORY_PREVIEW_LINES));
    }
    out
}

/// The text of a `tool_result`'s content: the string, or its text blocks joined.
fn content_text(content: &MessageContent) -> String {
    content
        .to_blocks()
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the REPL serves: the agent, its listener, the history, the chapter's commands, and the
/// automatic turns with the gate that keeps them from asking anyone.
pub(crate) struct Served<'a> {
    pub(crate) agent: &'a mut Agent,
    pub(crate) terminal: &'a Terminal,
    pub(crate) history: &'a mut Vec<Message>,
    pub(crate) commands: &'a [SlashCommand],
    pub(crate) turns: &'a mut TurnQueue,
    pub(crate) gate: &'a AskGate,
    /// Words that quit besides `q` and `exit` ([`crate::cli::Composed::quit_words`]).
    pub(crate) quit_words: &'static [&'static str],
}

/// What the REPL waits for next.
enum Input {
    Line(Line),
    Automatic(AutoTurn),
    CtrlC,
}

/// The REPL (course §0): `NAME >> `; blank lines ignored; `q`/`exit` (any case), end of input or
/// Ctrl-D quit with 0. An API error is printed and the REPL goes on. A `/WORD` line is a command
/// (see the module docs), with the chapter's `commands` after the built-in ones.
///
/// While it waits for a line, an automatic turn from `turns` runs (the agent is idle); its
/// output appears above the prompt, and the line being typed is kept ([`crate::console`]). A
/// line entered during an automatic turn is sent when that turn ends; Ctrl-C on an empty line
/// cancels the automatic turn, Ctrl-D cancels it and quits. An item queued during a user turn
/// waits for that turn's end: the two never interleave.
pub(crate) async fn run(name: &str, served: Served<'_>) -> ExitCode {
    let Served { agent, terminal, history, commands, turns, gate, quit_words } = served;
    let ui = terminal.ui();
    let interactive = std::io::stdin().is_terminal();
    // Read line by line, with no line editor to end the line that shows the prompt.
    let plain = !interactive || crate::ui::dumb_terminal();
    let (ask, mut lines) = spawn_reader(interactive);
    // Whether the reader has been asked for a line it has not given yet.
    let mut reading = false;
    // A line entered while an automatic turn ran, served next.
    let mut waiting: Option<Line> = None;
    loop {
        let line = match waiting.take() {
            Some(line) => line,
            None => {
                if !reading {
                    if ask.send(ui.prompt(name)).await.is_err() {
                        break;
                    }
                    reading = true;
                }
                let input = tokio::select! {
                    biased;
                    l = lines.recv() => Input::Line(l.unwrap_or(Line::Eof)),
                    // A SIGINT at the prompt comes only when no line editor holds the terminal:
                    // piped stdin (quit, as a pipeline would) or a terminal rustyline does not
                    // drive, where the terminal itself has already dropped the typed text (keep
                    // waiting).
                    _ = tokio::signal::ctrl_c() => Input::CtrlC,
                    turn = turns.next() => Input::Automatic(turn),
                };
                match input {
                    Input::Line(line) => {
                        reading = false;
                        line
                    }
                    Input::CtrlC if !interactive => Line::Eof,
                    Input::CtrlC => {
                        ui.notice(QUIT_HINT);
                        continue;
                    }
                    Input::Automatic(turn) => {
                        // The reader still reads: a line it gives now waits for the turn's end,
                        // and Ctrl-C or Ctrl-D there cancel the turn.
                        let mut entered = None;
                        let cancel = async {
                            loop {
                                match lines.recv().await.unwrap_or(Line::Eof) {
                                    Line::Text(text) => {
                                        ui.notice("(an automatic turn is running: your prompt is sent when it ends)");
                                        entered = Some(Line::Text(text));
                                        std::future::pending::<()>().await;
                                    }
                                    Line::Interrupted => {
                                        entered = Some(Line::Interrupted);
                                        return;
                                    }
                                    Line::Eof => {
                                        entered = Some(Line::Eof);
                                        return;
                                    }
                                }
                            }
                        };
                        let _ = automatic_turn(agent, terminal, history, gate, &turn, cancel).await;
                        match entered {
                            None => {}
                            // Ctrl-C cancelled the turn; the prompt is asked for again.
                            Some(Line::Interrupted) => reading = false,
                            Some(line) => {
                                reading = false;
                                waiting = Some(line);
                            }
                        }
                        ui.print("\n");
                        crate::console::automatic_turn_ended();
                        continue;
                    }
                }
            }
        };
        let text = match line {
            Line::Text(t) => t,
            Line::Eof => {
                if plain {
                    ui.print("\n");
                }
                break;
            }
            Line::Interrupted => {
                ui.notice(QUIT_HINT);
                continue;
            }
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        let quits = ["q", "exit"].iter().chain(quit_words).any(|w| trimmed.eq_ignore_ascii_case(w));
        if quits {
            if !interactive {
                // Piped, the `q` was never echoed: end the prompt's line.
                ui.print("\n");
            }
            break;
        }
        let prompt = match command_word(trimmed) {
            Some(word) => match command(trimmed, word, agent, ui, history, commands) {
                Some(prompt) => prompt,
                None => continue,
            },
            // A pasted block may end with its own newline; the prompt is the text before it.
            None => text.trim_end_matches(['\n', '\r']).to_owned(),
        };
        let _ = one_turn(agent, terminal, history, &prompt).await;
        ui.print("\n");
    }
    crate::console::settle();
    ExitCode::SUCCESS
}

/// What the line reader produced.
enum Line {
    Text(String),
    Eof,
    /// Ctrl-C on an empty line.
    Interrupted,
}

/// Ctrl-C in the line editor: clears a non-empty line (into the kill ring, so Ctrl-Y brings it
/// back); on an empty line, rustyline's default, which ends the read with `Interrupted`.
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, _evt: &Event, _n: RepeatCount, _positive: bool, ctx: &EventContext) -> Option<Cmd> {
        (!ctx.line().is_empty()).then_some(Cmd::Kill(Movement::WholeBuffer))
    }
}

/// Enter in the line editor: the read is about to end, so output waits for it instead of going
/// through the external printer ([`crate::console`]); the key then does what it always does.
struct Accepting;

impl ConditionalEventHandler for Accepting {
    fn handle(&self, _evt: &Event, _n: RepeatCount, _positive: bool, _ctx: &EventContext) -> Option<Cmd> {
        crate::console::accepting();
        None
    }
}

/// Reads prompts on a blocking thread: rustyline on a terminal, plain line-by-line reading when
/// stdin is piped (no escape codes). The thread reads one line per request, so nothing else
/// competes for the terminal while a turn runs.
fn spawn_reader(interactive: bool) -> (mpsc::Sender<String>, mpsc::Receiver<Line>) {
    let (ask_tx, mut ask_rx) = mpsc::channel::<String>(1);
    let (line_tx, line_rx) = mpsc::channel::<Line>(1);
    std::thread::spawn(move || {
        // A dumb terminal (TERM=dumb, emacs, cons25) gets the plain reader: rustyline would not
        // edit there, and its fallback did not end a line on Enter.
        let editing = interactive && !crate::ui::dumb_terminal();
        let mut editor = if editing { rustyline::DefaultEditor::new().ok() } else { None };
        if let Some(ed) = editor.as_mut() {
            ed.bind_sequence(KeyEvent::ctrl('C'), EventHandler::Conditional(Box::new(ClearOrInterrupt)));
            ed.bind_sequence(
                KeyEvent(KeyCode::Enter, Modifiers::NONE),
                EventHandler::Conditional(Box::new(Accepting)),
            );
            // Lines of an automatic turn go through it, above the prompt being typed.
            if let Ok(printer) = ed.create_external_printer() {
                crate::console::set_printer(Box::new(printer));
            }
        }
        let mut stdin = std::io::stdin().lock();
        while let Some(prompt) = ask_rx.blocking_recv() {
            match editor {
                Some(_) => crate::console::editing(),
                None => crate::console::plain_prompt(&prompt),
            }
            let line = match editor.as_mut() {
                Some(ed) => match ed.readline(&prompt) {
                    Ok(l) => {
                        if !l.trim().is_empty() {
                            let _ = ed.add_history_entry(l.as_str());
                        }
                        Line::Text(l)
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => Line::Interrupted,
                    Err(_) => Line::Eof,
                },
                None => {
                    let mut buf = Vec::new();
                    match stdin.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => Line::Eof,
                        Ok(_) => {
                            // Piped input may carry invalid UTF-8; replace it rather than fail.
                            let text = String::from_utf8_lossy(&buf);
                            Line::Text(text.trim_end_matches(['\n', '\r']).to_owned())
                        }
                    }
                }
            };
            crate::console::read_ended();
            let end = matches!(line, Line::Eof);
            if line_tx.blocking_send(line).is_err() || end {
                break;
            }
        }
    });
    (ask_tx, line_rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowances_view_lists_each_with_its_source() {
        let allowed = AlwaysAllowed::new();
        assert_eq!(
            allowances_view(&allowed),
            "Nothing is allowed for this session beyond the known programs (/permissions known).\n\
             Answer a at Allow? [y/N], or start with --allow NAME, to allow a program."
        );
        allowed.allow("python3", Source::Answer);
        allowed.allow("cargo test", Source::Flag);
        assert_eq!(
            allowances_view(&allowed),
            "Allowed for this session without asking (a deny-list command is still refused, and writing .env or under .git still asks):\n  \
             python3     (answered a)\n  \
             cargo test  (--allow)\n\
             /permissions revoke NAME takes one back; /permissions clear takes them all."
        );
    }

    #[test]
    fn a_slash_word_is_a_command_and_a_path_is_a_prompt() {
        assert_eq!(command_word("/history"), Some("history"));
        assert_eq!(command_word("  /todos  "), Some("todos"));
        assert_eq!(command_word("/nope extra words"), Some("nope"));
        assert_eq!(command_word("/etc/hosts: what is this?"), None);
        assert_eq!(command_word("/"), None);
        assert_eq!(command_word("list /tmp"), None);
    }

    #[test]
    fn history_shows_a_multi_line_result_as_lines() {
        let messages = vec![
            Message::user_text("one line"),
            Message::user_blocks(vec![ContentBlock::tool_result("t1", "a\nb\tc\n", false)]),
            Message::user_blocks(vec![ContentBlock::text(
                (1..=9).map(|i| format!("l{i}")).collect::<Vec<_>>().join("\n"),
            )]),
        ];
        let view = history_view(&messages);
        assert!(view.contains("    text \"one line\""), "{view}");
        assert!(
            view.contains("    tool_result t1 is_error=false (2 lines)\n      | a\n      | b\\tc\n"),
            "{view}"
        );
        assert!(view.contains("      | l6\n      | … 3 more lines"), "{view}");
        assert!(!view.contains("l7"), "{view}");
    }
}
