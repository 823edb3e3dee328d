//! `runtime-harness`: the runtime around the loop, composed from the library the way the course's
//! s12, s13 and s15 will compose it, for the end-to-end tests in `tests/suite/runtime/`. It is no
//! chapter: it teaches nothing, and it is built only in this test package.
//!
//! On the s04 kernel (five tools, the course's hooks, `Allow? [y/N]` with `--yes`, `--no`,
//! `--allow`) it adds two producers of automatic turns ([`agent_core::turns`]):
//! - **an inbox**, as s13's Lead is woken by its mailbox: a file `inbox.txt` that appears in the
//!   workspace is read, removed, and queued as the turn `[Inbox] TEXT`;
//! - **`bash` with `run_in_background`**, as s11 and s15 have it: the command runs through
//!   [`Background`], and its end is queued as the turn `[Background] bg_0001 exit code 3: …`
//!   (s15's wake).
//!
//! Both turns refuse with s12's text wherever they would ask. `/bashes` lists the background
//! commands.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, Harness};
use agent_cli::repl::background_command;
use agent_core::dispatch::{Subject, ToolError, TypedTool};
use agent_core::messages::ToolSpec;
use agent_core::process::background::{Background, Finished, Limits};
use agent_core::tools::ToolOptions;
use agent_core::turns::{AutoTurn, TurnSender};
use agent_core::workspace::Workspace;
use serde::Deserialize;
use serde_json::{Value, json};

const CHAPTER: Chapter = Chapter {
    name: "rt",
    about: "A test harness: the s04 kernel with an inbox and background commands that start automatic turns.",
    demo: Demo { prompt: "(none)", files: &[], turns: "", show: &[] },
    banner: Banner::new("rt: runtime harness - automatic turns and background commands"),
};

/// What a tool call that would ask gets during an automatic turn (the course's s12).
const REFUSAL: &str = "Permission denied: scheduled turns cannot request interactive approval";

/// The file whose appearance queues an automatic turn.
const INBOX: &str = "inbox.txt";

/// How often the inbox is looked at (s13's CLI polls its mailbox every 0.25 s).
const INBOX_POLL: Duration = Duration::from_millis(50);

/// The bytes of a background command's output kept per stream.
const KEEP_BYTES: usize = 50_000;

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let background = Background::new();
        background.wake_with(setup.turns.clone(), |finished| Some(woken_by(finished)));
        watch_inbox(setup.workspace.root().to_owned(), setup.turns.clone());
        let bash = BackgroundBash {
            ws: setup.workspace.clone(),
            opts: setup.tool_options.clone(),
            background: background.clone(),
        };
        Harness {
            system: format!("You are a test harness at {}.", setup.workdir()),
            tools: kernel.tools.with(bash),
            extensions: vec![Box::new(kernel.hooks)],
            commands: vec![background_command("bashes", background, bg_id)],
        }
    })
}

/// `bg_0001`: the course's id for background command 1.
fn bg_id(id: u64) -> String {
    format!("bg_{id:04}")
}

/// The automatic turn a finished background command queues.
fn woken_by(finished: &Finished) -> AutoTurn {
    let prompt = format!(
        "[Background] {} {}: {}\n{}",
        bg_id(finished.id),
        finished.outcome,
        finished.command,
        finished.output().trim()
    );
    AutoTurn::new("background", prompt).refusing(REFUSAL)
}

/// Queues `[Inbox] TEXT` each time `inbox.txt` appears in `root`, and removes the file.
fn watch_inbox(root: PathBuf, turns: TurnSender) {
    tokio::spawn(async move {
        let path = root.join(INBOX);
        while !turns.is_closed() {
            tokio::time::sleep(INBOX_POLL).await;
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let _ = std::fs::remove_file(&path);
            turns.push(AutoTurn::new("inbox", format!("[Inbox] {}", text.trim())).refusing(REFUSAL));
        }
    });
}

/// `bash`, with s11's `run_in_background`: JSON `true` starts the command in the background.
struct BackgroundBash {
    ws: Workspace,
    opts: ToolOptions,
    background: Background,
}

#[derive(Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    run_in_background: Option<Value>,
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
        if args.run_in_background != Some(Value::Bool(true)) {
            return agent_core::tools::bash::run_command(&args.command, &self.ws, &self.opts).await;
        }
        let limits = Limits { timeout: self.opts.bash_timeout, keep_bytes: KEEP_BYTES };
        let id = self
            .background
            .start(&args.command, &self.ws, &self.opts.sandbox, limits)
            .map_err(ToolError::failed)?;
        Ok(format!("[Background task {} started] The result will arrive as a new turn.", bg_id(id)))
    }
}
