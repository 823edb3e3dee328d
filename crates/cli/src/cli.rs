//! Flags, start-up, one-shot `-p`, and `--demo`: everything a chapter binary shares.
//!
//! Source: course §0 plus ours: clap flags, `-p`, `--replay`, `--record`, `--demo`. A chapter's
//! `main.rs` calls [`crate::chapter::main`], which parses [`CommonArgs`] and calls [`run`] with a
//! closure that builds its [`Harness`]: SYSTEM prompt, dispatch map, extensions, REPL commands.
//! Start-up is one function that stops at the first [`StartupError`]; the REPL itself lives in
//! [`crate::repl`], the model is built in [`crate::startup`].
//!
//! Exit codes: 0 success; 1 the model call failed (under `-p` or `--demo`); 2 bad configuration
//! (a missing variable, a broken `.env`, an unreadable replay file: any [`StartupError`]); under
//! `-p`, 3–6 for a turn the model ended without a usable answer (listed in [`ENV_HELP`], from
//! [`exit_code`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use agent_core::agent::{Agent, TurnEnd};
use agent_core::approve::AskGate;
use agent_core::client::Timeouts;
use agent_core::config;
use agent_core::dispatch::DispatchMap;
use agent_core::error::ApiError;
use agent_core::events::Events;
use agent_core::extension::Extension;
use agent_core::messages::{Message, StopReason};
use agent_core::model::{Model, ReplayModel};
use agent_core::permission::AlwaysAllowed;
use agent_core::sandbox::{Sandbox, SandboxMode};
use agent_core::tools::ToolOptions;
use agent_core::turns::{self, TurnQueue, TurnSender};
use agent_core::workspace::Workspace;

use crate::approve::DotEnvWatch;
use crate::repl::{self, Served, SlashCommand, automatic_turn, one_turn};
use crate::startup::{self, ModelSettings, StartupError};
use crate::ui::{Terminal, Ui};

/// `-p` exit code: the model call failed (an API, transport or replay error), or Ctrl-C.
pub const EXIT_API_ERROR: u8 = 1;
/// `-p` exit code: bad configuration (a missing variable, a broken `.env`, an unreadable file).
pub const EXIT_CONFIG: u8 = 2;
/// `-p` exit code: the model refused (`stop_reason: refusal`).
pub const EXIT_REFUSAL: u8 = 3;
/// `-p` exit code: the conversation outgrew the context window (`model_context_window_exceeded`).
pub const EXIT_CONTEXT_EXCEEDED: u8 = 4;
/// `-p` exit code: the answer is incomplete (`max_tokens`, or still `pause_turn` after the
/// allowed continuations).
pub const EXIT_INCOMPLETE: u8 = 5;
/// `-p` exit code: a `stop_reason` this harness does not know.
pub const EXIT_UNKNOWN_STOP: u8 = 6;

/// The exit code `-p` ends with after a turn that ended `end`: 0, or one of [`EXIT_REFUSAL`],
/// [`EXIT_CONTEXT_EXCEEDED`], [`EXIT_INCOMPLETE`], [`EXIT_UNKNOWN_STOP`] (Messages API, "Handling
/// stop reasons").
pub fn exit_code(end: &TurnEnd) -> u8 {
    let TurnEnd::Answered(response) = end else { return 0 };
    match &response.stop_reason {
        None | Some(StopReason::EndTurn | StopReason::StopSequence | StopReason::ToolUse) => 0,
        Some(StopReason::Refusal) => EXIT_REFUSAL,
        Some(StopReason::ModelContextWindowExceeded) => EXIT_CONTEXT_EXCEEDED,
        Some(StopReason::MaxTokens | StopReason::PauseTurn) => EXIT_INCOMPLETE,
        Some(_) => EXIT_UNKNOWN_STOP,
    }
}

/// Text for `--help` after the flags: the environment variables (course §0).
pub const ENV_HELP: &str = "\
Environment (a .env file in the current folder, or else in the nearest folder above, overrides
these):
  MODEL_ID              model id to use, e.g. claude-sonnet-4-5 (required unless --model)
  ANTHROPIC_API_KEY     key sent as x-api-key (required for the official endpoint)
  ANTHROPIC_AUTH_TOKEN  with a base URL: the key, sent as Authorization: Bearer (DeepSeek, Kimi,
                        GLM); else used as the key when ANTHROPIC_API_KEY is unset
  ANTHROPIC_BASE_URL    an Anthropic-compatible endpoint, without /v1 (Ollama, llama.cpp,
                        vLLM, DeepSeek, MiniMax, GLM, Kimi...)
  AUTH_TYPE=bearer      send the key as Authorization: Bearer instead of x-api-key
  ANTHROPIC_MAX_RETRIES retries on 408/409/429/5xx/connection errors (default 2)
  DISABLE_PROMPT_CACHING=1  send no cache_control breakpoints, as --no-cache does
  NO_COLOR              disable colour

Bash commands run in a session of their own (no terminal; stdin is /dev/null), inside the sandbox
of --sandbox. Under workspace-write and read-only (Linux) a command signals only its own
processes, opens no unix socket (no tmux, screen, D-Bus, docker or ssh agent; see
--allow-unix-sockets), makes no device node, and has no capability even when you run as root.
Commands never see ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN (they leave the harness's own
environment at start), a variable whose name holds KEY, TOKEN, SECRET, PASSWORD, PASSWD,
PASSPHRASE, CREDENTIAL or PRIVATE, or the word PWD, PASS, PW, PAT, AUTH, CRED(S) or COOKIE
(MYSQL_PWD, GH_PAT, SSH_AUTH_SOCK), or a value with a user:password@ URL; nor can they read the
harness's /proc entries. They can read every file you can, a .env included: a key kept in .env
is reported at start. When a call ends, every process the command started is stopped, wherever
it moved.
SIGTERM or SIGHUP to the harness stops the running command, then exits.

In the REPL: one prompt per line (a pasted block of lines is one prompt). Ctrl-C clears the typed
line; on an empty line it says how to quit. Ctrl-D, q or exit quits. Ctrl-C during a turn cancels
it, and the history notes the prompt as interrupted. Piped stdin is read line by line, without
colour.

No key? Run with --demo: recorded model turns, a fresh temporary workspace (removed at exit;
--keep keeps it), no network.

Exit codes of -p: 0 answered; 1 the model call failed (API or network error, Ctrl-C);
  2 bad configuration; 3 the model refused (the refused prompt leaves the history);
  4 the conversation outgrew the model's context window; 5 the answer is incomplete
  (max_tokens, or still paused after pause_turn); 6 an unknown stop_reason.";

/// The flags every chapter has.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Run one turn with PROMPT, print the answer, and exit (0 when answered; the other exit codes
    /// are listed at the end).
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    pub prompt: Option<String>,

    /// Model id; overrides MODEL_ID.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// Anthropic-compatible endpoint without /v1; overrides ANTHROPIC_BASE_URL.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Workspace root the tools are confined to [default: the current directory].
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Work live in a fresh folder seeded with the chapter's example files (those of --demo), so
    /// the README's "try it" prompts find their files and the repository's own files are never
    /// touched. The folder is kept after exit; its path is printed at start.
    #[arg(long, conflicts_with_all = ["workdir", "demo"])]
    pub example: bool,

    /// Answer from a recording (JSONL, one Messages API response per line) instead of the network.
    #[arg(long, value_name = "FILE", conflicts_with = "demo")]
    pub replay: Option<PathBuf>,

    /// Append every model response of this session to FILE (JSONL), for --replay later.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay", "demo"])]
    pub record: Option<PathBuf>,

    /// Run the chapter's first "try it" task offline: recorded model turns, real tools, a fresh
    /// temporary workspace seeded with the example files. Needs no key and no network.
    #[arg(long, conflicts_with_all = ["prompt", "model", "base_url", "workdir"])]
    pub demo: bool,

    /// With --demo: keep the temporary workspace after the run (its path is printed), instead of
    /// removing it at exit.
    #[arg(long, requires = "demo")]
    pub keep: bool,

    /// With --demo (hidden): run only session N (2, 3, …) of a demo that has several sessions,
    /// in the workspace --demo-workspace names. Session 1 starts each later session this way, as
    /// a fresh process of the same binary (see [`Demo::sessions`]).
    #[arg(long, hide = true, value_name = "N", requires_all = ["demo", "demo_workspace"],
          value_parser = clap::value_parser!(u32).range(2..))]
    pub demo_session: Option<u32>,

    /// The workspace of --demo-session: the one session 1 seeded.
    #[arg(long, hide = true, value_name = "DIR", requires = "demo_session")]
    pub demo_workspace: Option<PathBuf>,

    /// Seconds before a bash command and every process it started are killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub bash_timeout: u64,

    /// What bash commands may write (Landlock and seccomp on Linux, Seatbelt on macOS):
    /// workspace-write = the workspace, the temp folders and /dev/null & co.; read-only = nothing
    /// but those devices; off = no sandbox. Reading is allowed everywhere. Both sandboxed modes
    /// also keep commands from signalling other processes, opening unix sockets, making device
    /// nodes, and, as root on Linux, from every capability. Where the sandbox cannot be had in
    /// full, a line says so at start.
    #[arg(
        long,
        value_name = "MODE",
        default_value = "workspace-write",
        value_parser = clap::builder::TypedValueParser::map(
            clap::builder::PossibleValuesParser::new(SandboxMode::NAMES),
            |name: String| name.parse::<SandboxMode>().unwrap_or_default()
        ),
    )]
    pub sandbox: SandboxMode,

    /// Deny bash commands every TCP connection and listening socket (Linux 6.7, where UDP and
    /// DNS are not covered; on macOS, every network use).
    #[arg(long)]
    pub no_network: bool,

    /// Let bash commands open unix sockets, and so reach servers outside the command: tmux,
    /// screen, a D-Bus bus, docker.sock, the ssh agent (each can run commands or use keys for
    /// them). Off by default: a seccomp filter refuses socket(AF_UNIX) on Linux, the Seatbelt
    /// profile every socket path on macOS; socketpair works either way. Abstract sockets of other
    /// processes stay out of reach (Linux, Landlock ABI 6).
    #[arg(long)]
    pub allow_unix_sockets: bool,

    /// Retries on 408/409/429/5xx and connection errors [env: ANTHROPIC_MAX_RETRIES] [default: 2].
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,

    /// Seconds allowed to open a connection to the endpoint.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub connect_timeout: u64,

    /// Seconds of silence from the endpoint (no byte of the answer, or of the stream) before a
    /// request fails.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub idle_timeout: u64,

    /// Seconds one request may take in all, its whole stream included, before it fails (an
    /// endpoint that sends only keep-alive pings cannot hold a turn forever).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub request_timeout: u64,

    /// Ask for one JSON response instead of a stream (text then appears only when complete).
    #[arg(long)]
    pub no_stream: bool,

    /// Print each turn's token usage on stderr.
    #[arg(long)]
    pub usage: bool,

    /// Send no prompt-caching breakpoints (`cache_control`), for an endpoint that rejects them
    /// [env: DISABLE_PROMPT_CACHING=1]. By default every request marks the tools, the last
    /// message and the one before the last answer, and the API bills what it reads again from
    /// its cache at a tenth of the input price.
    #[arg(long)]
    pub no_cache: bool,
}

/// A chapter's offline demo: the first "try it" task with recorded model turns.
///
/// A demo may run several sessions, each a fresh process of the chapter's binary in the same
/// workspace (a chapter whose mechanism outlives the process, such as s09's memory): a line
/// `{"type":"demo_session","prompt":"…"}` in `turns` ends one session's recorded turns and starts
/// the next, asked that prompt (see [`Demo::sessions`]).
#[derive(Debug, Clone, Copy)]
pub struct Demo {
    /// The prompt, as a learner would type it (the first session's).
    pub prompt: &'static str,
    /// Files seeded into the fresh workspace: (relative path, content).
    pub files: &'static [(&'static str, &'static str)],
    /// The recorded model responses, JSONL, with a `demo_session` line before each later
    /// session's.
    pub turns: &'static str,
    /// Files whose final content is printed after the run (after the last session).
    pub show: &'static [&'static str],
}

/// The `type` of the line in [`Demo::turns`] that starts a later session.
pub const DEMO_SESSION_LINE: &str = "demo_session";

/// One session of a demo: the prompt and the recorded model responses it replays (JSONL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoSession {
    /// What the learner types.
    pub prompt: String,
    /// The recorded responses of this session, one per line.
    pub turns: String,
}

impl Demo {
    /// The demo's sessions, in order: the first is asked [`Demo::prompt`] and replays the lines
    /// of `turns` up to the first `{"type":"demo_session","prompt":P}` line; each such line
    /// starts the next session, asked P. A demo without such a line is one session.
    ///
    /// # Errors
    /// `line N: …` for a `demo_session` line without a non-empty `prompt`.
    pub fn sessions(&self) -> Result<Vec<DemoSession>, String> {
        let mut sessions = vec![DemoSession { prompt: self.prompt.to_owned(), turns: String::new() }];
        for (i, line) in self.turns.lines().enumerate() {
            let marker = line
                .contains(DEMO_SESSION_LINE)
                .then(|| serde_json::from_str::<serde_json::Value>(line).ok())
                .flatten()
                .filter(|v| v["type"] == DEMO_SESSION_LINE);
            if let Some(value) = marker {
                let prompt = value["prompt"].as_str().map(str::trim).unwrap_or_default();
                if prompt.is_empty() {
                    return Err(format!("line {}: a {DEMO_SESSION_LINE} line needs a \"prompt\"", i + 1));
                }
                sessions.push(DemoSession { prompt: prompt.to_owned(), turns: String::new() });
            } else if let Some(session) = sessions.last_mut() {
                session.turns.push_str(line);
                session.turns.push('\n');
            }
        }
        Ok(sessions)
    }
}

/// What the REPL prints before its first prompt (course §0: each chapter's title line, then how
/// to use the prompt, then a blank line). Not printed under `-p` or `--demo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Banner {
    /// The course chapter's title line, such as `s06: Subagent - fresh messages, final text
    /// returns` (COURSE §4, COURSE-s10-s17 §0.2).
    pub title: &'static str,
    /// The line under it; [`Banner::HINT`] in every chapter but the course's s17.
    pub hint: &'static str,
}

impl Banner {
    /// The course's line under the title: `Enter a question, press Enter to send. Type q to quit.`
    pub const HINT: &'static str = "Enter a question, press Enter to send. Type q to quit.";

    /// A banner with the course's usual [`Banner::HINT`].
    pub const fn new(title: &'static str) -> Self {
        Self { title, hint: Self::HINT }
    }

    /// The banner as printed: the title, the hint, and a blank line.
    pub fn text(&self) -> String {
        format!("{}\n{}\n\n", self.title, self.hint)
    }
}

/// A chapter binary's identity.
#[derive(Debug, Clone, Copy)]
pub struct Chapter {
    /// `s02`, `s03`, …: the REPL prompt and the name in messages.
    pub name: &'static str,
    /// What the REPL prints before its first prompt ([`Banner`]).
    pub banner: Banner,
    /// One line for `--help`: what the chapter's agent can do.
    pub about: &'static str,
    /// The offline demo.
    pub demo: Demo,
}

/// What [`run`] hands the chapter's builder.
pub struct Setup {
    /// The workspace the tools are confined to.
    pub workspace: Workspace,
    /// Tool limits from the flags.
    pub tool_options: ToolOptions,
    /// Terminal output settings, for a tool that shows its own output (the todo list) and the
    /// chapter's REPL commands.
    pub ui: Ui,
    /// Where the loop and the mechanisms report (the terminal listener).
    pub events: Events,
    /// `true` in the offline demo (`--demo`), where no one is at the keyboard to answer questions.
    pub demo: bool,
    /// The model the agent talks to, shared: a chapter's extension or tool (a subagent) may call
    /// it too.
    pub model: Arc<dyn Model>,
    /// The `model` field of each request (`MODEL_ID`).
    pub model_id: String,
    /// The programs allowed for this session without asking (`--allow`, the answer `a`); a
    /// chapter with the permission hook reads them, and the REPL then has `/permissions`.
    pub allowed: AlwaysAllowed,
    /// Where a chapter's producers queue turns no one typed (a due cron job, a teammate's
    /// report, a finished background command): the REPL runs them while it waits for the user,
    /// `-p` after its prompt's turn ([`agent_core::turns`]). Clone it into each producer.
    pub turns: TurnSender,
    /// Whether the current turn may ask the user `Allow? [y/N]`: closed during an automatic
    /// turn. [`Setup::approver`] reads it; a chapter's own approver can too
    /// ([`agent_core::approve::GatedApprover`]).
    pub asking: AskGate,
}

impl Setup {
    /// The workspace root as text, for the SYSTEM prompt's `{WORKDIR}`.
    pub fn workdir(&self) -> String {
        self.workspace.root().display().to_string()
    }

    /// The workspace rule as a predicate, for the permission hook.
    pub fn inside_workspace(&self) -> agent_core::hooks::InsideWorkspace {
        std::sync::Arc::new(self.workspace.clone())
    }
}

/// What a chapter composes: its SYSTEM prompt, dispatch map, extensions and REPL commands.
pub struct Harness {
    /// The SYSTEM prompt.
    pub system: String,
    /// The tools, in request order.
    pub tools: DispatchMap,
    /// Added behaviour (reminders, hooks), called in this order.
    pub extensions: Vec<Box<dyn Extension>>,
    /// The chapter's own REPL commands, such as s03's `/todos` (listed by `/help`).
    pub commands: Vec<SlashCommand>,
}

/// A [`Harness`] with what a chapter sets beyond it: settings of the agent other than the
/// course's defaults, and a one-shot prompt from the chapter's own arguments. Course s17 sets all
/// three: its goal's block cap, `MAX_TURNS`, and `s17 "/goal …"`.
pub struct Composed {
    /// The harness.
    pub harness: Harness,
    /// How often per turn `Stop` extensions may send the model back to work
    /// ([`agent_core::agent::AgentBuilder::max_stop_continuations`]); `None` keeps the default.
    pub max_stop_continuations: Option<u32>,
    /// The most model requests one turn makes ([`agent_core::agent::AgentBuilder::max_rounds`]);
    /// `None`: no cap.
    pub max_rounds: Option<u32>,
    /// A prompt to run once, as `-p PROMPT` runs its own (`-p` wins when both are given).
    pub prompt: Option<String>,
    /// Words that quit the REPL besides `q` and `exit` (s17's `quit`).
    pub quit_words: &'static [&'static str],
    /// A failed request's text, which then becomes the turn's answer
    /// ([`agent_core::agent::AgentBuilder::errors_as_text`]; course s13–s15's `[Error] {Type}: {e}`);
    /// `None`: a failed request fails the turn.
    pub error_text: Option<ErrorText>,
    /// Settings of the agent the fields above do not name, applied last to its builder: the
    /// course's s15 recovery ([`agent_core::agent::AgentBuilder::escalate_max_tokens`],
    /// [`agent_core::agent::AgentBuilder::continue_after_max_tokens`],
    /// [`agent_core::agent::AgentBuilder::fallback_model`]). `None`: the defaults.
    pub agent: Option<AgentSettings>,
}

/// Settings applied to a chapter's agent as it is built ([`Composed::agent`]).
pub type AgentSettings = Box<dyn FnOnce(agent_core::agent::AgentBuilder) -> agent_core::agent::AgentBuilder>;

/// How a chapter words a failed request as the turn's answer ([`Composed::error_text`]).
pub type ErrorText = Arc<dyn Fn(&agent_core::error::ApiError) -> String + Send + Sync>;

impl From<Harness> for Composed {
    fn from(harness: Harness) -> Self {
        Self {
            harness,
            max_stop_continuations: None,
            max_rounds: None,
            prompt: None,
            quit_words: &[],
            error_text: None,
            agent: None,
        }
    }
}

/// What a chapter's builder may return: a [`Harness`], a [`Composed`], or either in a `Result`
/// whose error stops start-up with that message (a setting of the chapter's own that is wrong).
pub trait IntoComposed {
    /// The composition, or the message that stops start-up.
    ///
    /// # Errors
    /// The builder's own message.
    fn into_composed(self) -> Result<Composed, String>;
}

impl IntoComposed for Harness {
    fn into_composed(self) -> Result<Composed, String> {
        Ok(self.into())
    }
}

impl IntoComposed for Composed {
    fn into_composed(self) -> Result<Composed, String> {
        Ok(self)
    }
}

impl<T: Into<Composed>> IntoComposed for Result<T, String> {
    fn into_composed(self) -> Result<Composed, String> {
        self.map(Into::into)
    }
}

/// Runs a chapter: `--demo`, `-p`, or the REPL, per `args`. `build` composes the chapter.
pub fn run<H: IntoComposed>(
    chapter: &Chapter,
    args: &CommonArgs,
    build: impl FnOnce(&Setup) -> H,
) -> ExitCode {
    // Before any thread starts: the key leaves the process environment (and the memory that
    // /proc/PID/environ shows), and the harness's /proc entries close to its commands.
    // SAFETY: no other thread runs yet: the runtime, the only source of threads, is built below.
    unsafe { config::withdraw_keys_from_environment() };
    agent_core::process::protect_harness();
    // One thread: the loop is sequential, and a multi-thread runtime only added hand-offs between
    // threads (27 futex calls a round, measured by the bench) and their memory. Blocking work still goes to
    // tokio's blocking pool; the stdin reader has its own thread.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            Ui::detect().error(&format!("cannot start the async runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    runtime.block_on(run_async(chapter, args, build))
}

/// A started chapter: the agent, the REPL commands its harness added, the `--demo` run, the
/// watch on `.env`, and the line the live REPL starts with (model, endpoint, workspace).
struct Started {
    agent: Agent,
    commands: Vec<SlashCommand>,
    /// The chapter's one-shot prompt ([`Composed::prompt`]).
    prompt: Option<String>,
    /// [`Composed::quit_words`].
    quit_words: &'static [&'static str],
    demo: Option<DemoRun>,
    dotenv: Option<DotEnvWatch>,
    start_line: Option<String>,
}

/// One process's part of `--demo`: which session it runs, and the workspace.
struct DemoRun {
    /// The seeded temporary workspace, owned by session 1's process (kept alive until the run
    /// ends, so it is removed at exit); `None` in a later session's process.
    dir: Option<tempfile::TempDir>,
    /// The workspace root.
    root: PathBuf,
    /// This process's session, from 1.
    session: usize,
    /// All the demo's sessions.
    sessions: Vec<DemoSession>,
}

/// The agent a composition builds on the setup's model, complete, with the harness's REPL
/// commands (with `/permissions` when the harness has the permission hook), the chapter's
/// one-shot prompt and quit words; no demo and no `.env` watch yet.
///
/// # Errors
/// [`StartupError::Chapter`] with the builder's message.
fn agent_from(setup: &Setup, composed: impl IntoComposed) -> Result<Started, StartupError> {
    let Composed { harness, max_stop_continuations, max_rounds, prompt, quit_words, error_text, agent } =
        composed.into_composed().map_err(StartupError::Chapter)?;
    let mut builder = Agent::builder(Arc::clone(&setup.model), &setup.model_id)
        .system(harness.system)
        .tools(harness.tools)
        .extensions(harness.extensions)
        .events(Arc::clone(&setup.events));
    if let Some(max) = max_stop_continuations {
        builder = builder.max_stop_continuations(max);
    }
    if let Some(max) = max_rounds {
        builder = builder.max_rounds(max);
    }
    if let Some(text) = error_text {
        builder = builder.errors_as_text(move |e| text(e));
    }
    if let Some(settings) = agent {
        builder = settings(builder);
    }
    let mut commands = harness.commands;
    if setup.allowed.in_use() && !commands.iter().any(|c| c.name == "permissions") {
        commands.push(repl::permissions_command(setup.allowed.clone()));
    }
    Ok(Started {
        agent: builder.build(),
        commands,
        prompt,
        quit_words,
        demo: None,
        dotenv: None,
        start_line: None,
    })
}

async fn run_async<H: IntoComposed>(
    chapter: &Chapter,
    args: &CommonArgs,
    build: impl FnOnce(&Setup) -> H,
) -> ExitCode {
    let terminal = Arc::new(Terminal::new(Ui::detect(), args.usage));
    let ui = terminal.ui().clone();
    let sandbox = Sandbox {
        mode: args.sandbox,
        no_network: args.no_network,
        allow_unix_sockets: args.allow_unix_sockets,
    };
    let tool_options = ToolOptions {
        bash_timeout: Duration::from_secs(args.bash_timeout.max(1)),
        sandbox,
        ..ToolOptions::default()
    };
    if let Some(line) = sandbox.notice() {
        ui.warning(&line);
    }
    agent_core::process::end_commands_on_terminate_signals();

    let (sender, mut queue) = turns::queue();
    let runtime = Runtime { turns: sender, asking: AskGate::new() };
    let gate = runtime.asking.clone();
    let started = if args.demo {
        start_demo(chapter, args, &terminal, tool_options, runtime, build)
    } else {
        start(chapter, args, &terminal, tool_options, runtime, build)
    };
    let Started { mut agent, commands, prompt: own_prompt, quit_words, demo, dotenv, start_line } =
        match started {
            Ok(s) => s,
            Err(e) => {
                ui.error(&e.to_string());
                return ExitCode::from(EXIT_CONFIG);
            }
        };
    let (chapter, prompt, keep) = (*chapter, args.prompt.clone().or(own_prompt), args.keep);
    let session = async move {
        let mut history = Vec::new();
        if let Some(run) = demo {
            return run_demo(&chapter, &mut agent, &terminal, &commands, run, keep, (&mut queue, &gate))
                .await;
        }
        // `-p` and the REPL serve the same session: the user's prompts and the automatic turns.
        let served = Served {
            agent: &mut agent,
            terminal: &terminal,
            history: &mut history,
            commands: &commands,
            turns: &mut queue,
            gate: &gate,
            quit_words,
        };
        if let Some(prompt) = &prompt {
            return print_mode(served, prompt).await;
        }
        let ui = terminal.ui();
        match &start_line {
            // Under the banner's two lines, before its blank line: on stderr, as a notice, so
            // stdout stays the course's banner for whoever pipes it.
            Some(line) => {
                ui.print(chapter.banner.text().trim_end_matches('\n'));
                ui.print("\n");
                ui.notice(line);
                ui.print("\n");
            }
            None => ui.print(&chapter.banner.text()),
        }
        repl::run(chapter.name, served).await
    };
    // The session runs as a task beside the HTTP connection's task, not as `block_on`'s own
    // future. Tokio's current-thread scheduler polls for I/O (one `epoll_wait` system call) each
    // time another task wakes the `block_on` future, and the connection wakes the reader once
    // per chunk of a streamed reply; between two tasks the hand-off is a queue push.
    let code = match tokio::spawn(session).await {
        Ok(code) => code,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => ExitCode::from(1),
    };
    // A command cancelled just now may still be ending (on macOS its tracker's last rounds):
    // the harness exits once none is left.
    agent_core::process::end_all_sessions();
    // `.env` is never changed silently: whatever the answers were, say so at exit.
    for line in dotenv.iter().flat_map(DotEnvWatch::changes) {
        ui.warning(&line);
    }
    code
}

/// `-p PROMPT`: one turn with the prompt (or, for a line naming a chapter command that starts
/// turns, with what that command answers: [`repl::command_prompt`]); then, while work it started will queue more (a
/// background command that reports its end, [`agent_core::turns::TurnSender::expect`]), the
/// automatic turns that arrive, each under the gate. The exit code is the last turn's
/// ([`exit_code`]); 1 when a turn failed or Ctrl-C ended the wait.
async fn print_mode(served: Served<'_>, prompt: &str) -> ExitCode {
    let Served { agent, terminal, history, commands, turns: queue, gate, .. } = served;
    let Some(prompt) = repl::command_prompt(prompt, agent, terminal.ui(), history, commands) else {
        return ExitCode::SUCCESS;
    };
    let Ok(end) = one_turn(agent, terminal, history, &prompt).await else { return ExitCode::from(1) };
    match serve_owed_turns(agent, terminal, history, queue, gate).await {
        Ok(last) => ExitCode::from(exit_code(&last.unwrap_or(end))),
        Err(()) => ExitCode::from(1),
    }
}

/// For a run that ends when its work does (`-p`, `--demo`): the automatic turns its work still
/// owes ([`agent_core::turns::TurnSender::expect`]: a background command that reports its end, a
/// one-shot cron job), each run under the gate, until none is queued or expected. Returns how the
/// last of them ended (`None` when there was none).
///
/// # Errors
/// `()` when one failed or Ctrl-C ended the wait (already reported).
async fn serve_owed_turns(
    agent: &mut Agent,
    terminal: &Terminal,
    history: &mut Vec<Message>,
    queue: &mut TurnQueue,
    gate: &AskGate,
) -> Result<Option<TurnEnd>, ()> {
    let mut end = None;
    loop {
        let turn = tokio::select! {
            turn = queue.next_expected() => turn,
            _ = tokio::signal::ctrl_c() => return Err(()),
        };
        let Some(turn) = turn else { return Ok(end) };
        let result = automatic_turn(agent, terminal, history, gate, &turn, std::future::pending()).await;
        crate::console::automatic_turn_ended();
        end = Some(result?);
    }
}

/// What `run_async` hands start-up for the [`Setup`]: the producers' end of the automatic turns'
/// queue and the gate on asking.
struct Runtime {
    turns: TurnSender,
    asking: AskGate,
}

/// Start-up for `-p` and the REPL: the workspace, the environment and `.env`, the model, then the
/// chapter's harness.
///
/// # Errors
/// The first [`StartupError`]; nothing has been sent anywhere yet.
fn start<H: IntoComposed>(
    chapter: &Chapter,
    args: &CommonArgs,
    terminal: &Arc<Terminal>,
    tool_options: ToolOptions,
    runtime: Runtime,
    build: impl FnOnce(&Setup) -> H,
) -> Result<Started, StartupError> {
    let ui = terminal.ui();
    if args.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return Err(StartupError::EmptyPrompt);
    }
    let cwd = std::env::current_dir().map_err(StartupError::CurrentDir)?;
    // `--example`: a seeded folder, removed if start-up fails, kept once the session starts.
    let example = args.example.then(|| seeded_tempdir(chapter, "example")).transpose()?;
    let root = match &example {
        Some(dir) => dir.path().to_owned(),
        None => args.workdir.clone().unwrap_or_else(|| cwd.clone()),
    };
    // An unreadable folder is named now, not later as `Cannot run sh` at the first command.
    if let Err(source) = std::fs::read_dir(&root) {
        return Err(StartupError::Workdir { path: root, source });
    }
    let workspace = Workspace::new(&root).map_err(|source| StartupError::Workdir { path: root, source })?;
    let vars = config::environment(&cwd)?;
    // The `.env` files the next session started here could read (each candidate, nearest first,
    // so a new one nearer than today's is seen too), as they are now.
    let dotenv = DotEnvWatch::start(
        config::dotenv_candidates(&cwd).into_iter().chain([workspace.root().join(".env")]),
    );
    if let config::DotEnvFile::Read(path) = vars.dotenv()
        && path.parent() != Some(cwd.as_path())
    {
        ui.warning(&format!(
            "config: read {}, a .env in a folder above this one ({}); its values override the environment",
            path.display(),
            cwd.display()
        ));
    }
    for skipped in config::skipped_dotenvs(&cwd) {
        ui.warning(&format!(
            "config: {} was not read: it is in a temp folder that bash commands can write",
            skipped.display()
        ));
    }
    let settings = ModelSettings {
        replay: args.replay.as_deref(),
        record: args.record.as_deref(),
        model: args.model.as_deref(),
        base_url: args.base_url.as_deref(),
        max_retries: args.max_retries,
        timeouts: Timeouts {
            connect: Duration::from_secs(args.connect_timeout.max(1)),
            idle: Duration::from_secs(args.idle_timeout.max(1)),
            request: Duration::from_secs(args.request_timeout.max(1)),
        },
        stream: !args.no_stream,
        cache: !args.no_cache,
    };
    if let Some(line) = vars.placeholder_notice() {
        ui.notice(&line);
    }
    let opened = startup::open_model(&settings, &vars, ui)?;
    terminal.set_key_source(opened.key.clone());
    let (model, model_id) = (opened.model, opened.id);
    if let Some(file) = vars.key_file() {
        ui.warning(&format!(
            "sandbox: the API key is in {}, a file bash commands can read; pass it in the environment instead",
            file.display()
        ));
    }
    let start_line = format!(
        "{model_id} at {} · workspace {} · /help for commands",
        opened.endpoint,
        workspace.root().display()
    );
    if let Some(dir) = example {
        ui.notice(&format!(
            "[example] a fresh workspace seeded with the chapter's example files ({}): {}\n[example] it is kept after exit; the repository's files are not touched.",
            example_listing(&chapter.demo),
            dir.keep().display()
        ));
    }
    let events: Events = Arc::clone(terminal) as Events;
    let setup = Setup {
        workspace,
        tool_options,
        ui: ui.clone(),
        events,
        demo: false,
        model,
        model_id,
        allowed: AlwaysAllowed::new(),
        turns: runtime.turns,
        asking: runtime.asking,
    };
    Ok(Started { dotenv: Some(dotenv), start_line: Some(start_line), ..agent_from(&setup, build(&setup))? })
}

/// Start-up for `--demo`: a fresh temporary workspace seeded with the demo files (or, for a
/// later session, `--demo-workspace`), and the session's recorded turns compiled into the binary
/// as the model.
///
/// # Errors
/// The first [`StartupError`].
fn start_demo<H: IntoComposed>(
    chapter: &Chapter,
    args: &CommonArgs,
    terminal: &Arc<Terminal>,
    tool_options: ToolOptions,
    runtime: Runtime,
    build: impl FnOnce(&Setup) -> H,
) -> Result<Started, StartupError> {
    let ui = terminal.ui();
    let bad_demo =
        |why: String| StartupError::Model(ApiError::Replay(format!("{} demo {why}", chapter.name)));
    let sessions = chapter.demo.sessions().map_err(bad_demo)?;
    let (total, session) = (sessions.len(), args.demo_session.map_or(1, |n| n as usize));
    let Some(this) = sessions.get(session - 1) else {
        return Err(bad_demo(format!("has {total} session(s); there is no session {session}")));
    };
    let (dir, root) = match (&args.demo_workspace, session) {
        (Some(root), 2..) => (None, root.clone()),
        _ => {
            let dir = seeded_tempdir(chapter, "demo")?;
            let root = dir.path().to_owned();
            (Some(dir), root)
        }
    };
    let workspace = Workspace::new(&root).map_err(|source| StartupError::Seeded { kind: "demo", source })?;
    let source = if total > 1 {
        format!("{} demo session {session}", chapter.name)
    } else {
        format!("{} demo", chapter.name)
    };
    let model = ReplayModel::from_jsonl(source, &this.turns)?;
    if session == 1 {
        ui.notice(&format!(
            "[demo] REPLAY of {}; real tools in a fresh workspace: {}\n\
             [demo] the workspace is removed at exit (--keep keeps it). No key and no network are used; \
             run without --demo to talk to a live model.",
            crate::ui::count(model.remaining(), "recorded model turn", "recorded model turns"),
            workspace.root().display()
        ));
        if total > 1 {
            ui.notice(&format!(
                "[demo] {total} sessions: this is session 1 (pid {}); each later one runs as a fresh process \
                 of this binary in the same workspace, so only what is on disk carries over.",
                std::process::id()
            ));
        }
    } else {
        ui.notice(&format!(
            "[demo] session {session} of {total}: a fresh process (pid {}) in the same workspace, {}; \
             REPLAY of {}. Nothing of the earlier sessions is in memory, only on disk.",
            std::process::id(),
            workspace.root().display(),
            crate::ui::count(model.remaining(), "recorded model turn", "recorded model turns")
        ));
    }
    let setup = Setup {
        workspace,
        tool_options,
        ui: ui.clone(),
        events: Arc::clone(terminal) as Events,
        demo: true,
        model: Arc::new(model),
        model_id: "demo-replay".into(),
        allowed: AlwaysAllowed::new(),
        turns: runtime.turns,
        asking: runtime.asking,
    };
    let started = agent_from(&setup, build(&setup))?;
    // The demo runs its own prompt, not the chapter's one-shot one.
    Ok(Started { prompt: None, demo: Some(DemoRun { dir, root, session, sessions }), ..started })
}

/// `--demo`: this session's prompt as one turn, and the automatic turns it owes (a one-shot cron
/// job it scheduled: [`serve_owed_turns`]). In session 1's process, then each later session as
/// a fresh process of this binary in the same workspace ([`demo_session_process`]), then the
/// files the demo changed; the workspace is removed at the end, unless `keep`.
async fn run_demo(
    chapter: &Chapter,
    agent: &mut Agent,
    terminal: &Terminal,
    commands: &[SlashCommand],
    run: DemoRun,
    keep: bool,
    (queue, gate): (&mut TurnQueue, &AskGate),
) -> ExitCode {
    let (demo, ui) = (&chapter.demo, terminal.ui());
    let mut history = Vec::new();
    let prompt = run.sessions[run.session - 1].prompt.as_str();
    ui.print(&format!("{}{}\n", ui.prompt(chapter.name), agent_core::sanitize::sanitize(prompt)));
    let mut ok = match repl::command_prompt(prompt, agent, ui, &mut history, commands) {
        Some(prompt) => one_turn(agent, terminal, &mut history, &prompt).await.is_ok(),
        None => true,
    } && serve_owed_turns(agent, terminal, &mut history, queue, gate).await.is_ok();
    let Some(dir) = run.dir else {
        // A later session's process: session 1's shows the files and removes the workspace.
        return if ok { ExitCode::SUCCESS } else { ExitCode::from(1) };
    };
    for next in run.session + 1..=run.sessions.len() {
        if !ok {
            break;
        }
        ui.notice(&format!(
            "\n[demo] session {} ends here (pid {}); session {next} of {} starts as a fresh process of this binary.",
            next - 1,
            std::process::id(),
            run.sessions.len()
        ));
        ok = demo_session_process(next, &run.root, ui).await;
    }
    for path in demo.show {
        match std::fs::read_to_string(dir.path().join(path)) {
            Ok(text) => ui.say(&format!("\n[demo] {path} after the run:\n{}", text.trim_end())),
            Err(e) => ui.error(&format!("cannot read {path} after the demo: {e}")),
        }
    }
    if keep {
        let path = dir.keep();
        ui.notice(&format!("[demo] the workspace stays at {} (--keep)", path.display()));
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Runs demo session `number` as a child process: this binary, with this process's arguments
/// and `--demo-session NUMBER --demo-workspace ROOT`, its output on this terminal. `true` when
/// it exits with 0.
async fn demo_session_process(number: usize, root: &Path, ui: &Ui) -> bool {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            ui.error(&format!("cannot start demo session {number}: this binary's path is unknown: {e}"));
            return false;
        }
    };
    let status = tokio::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .arg("--demo-session")
        .arg(number.to_string())
        .arg("--demo-workspace")
        .arg(root)
        .status()
        .await;
    match status {
        Ok(status) if status.success() => true,
        Ok(status) => {
            ui.error(&format!("demo session {number} failed ({status})"));
            false
        }
        Err(e) => {
            ui.error(&format!("cannot start demo session {number} ({}): {e}", exe.display()));
            false
        }
    }
}

/// A new folder `NAME-KIND-XXXXXX` in the temporary directory, seeded with the demo's files;
/// removed when the guard drops (`--demo`), or kept with `TempDir::keep` (`--example`).
///
/// # Errors
/// [`StartupError::Seeded`] when the folder cannot be made or a file written.
fn seeded_tempdir(chapter: &Chapter, kind: &'static str) -> Result<tempfile::TempDir, StartupError> {
    let seeded = || -> std::io::Result<tempfile::TempDir> {
        let dir = tempfile::Builder::new().prefix(&format!("{}-{kind}-", chapter.name)).tempdir()?;
        seed(dir.path(), chapter.demo.files)?;
        Ok(dir)
    };
    seeded().map_err(|source| StartupError::Seeded { kind, source })
}

/// The demo's file names, comma-separated, or `no files` when it has none.
fn example_listing(demo: &Demo) -> String {
    if demo.files.is_empty() {
        return "no files".to_owned();
    }
    demo.files.iter().map(|(path, _)| *path).collect::<Vec<_>>().join(", ")
}

fn seed(root: &Path, files: &[(&str, &str)]) -> std::io::Result<()> {
    for (path, content) in files {
        let target = root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(target, content)?;
    }
    Ok(())
}
