//! `runtime-harness`: the runtime around the loop, composed from the library the way the course's
//! s12, s13 and s15 will compose it, for the end-to-end tests in `tests/suite/runtime/`. It is no
//! chapter: it teaches nothing, and it is built only in this test package.
//!
//! On the s04 kernel (five tools, the course's hooks, `Allow? [y/N]` with `--yes`, `--no`,
//! `--allow`) it adds two producers of automatic turns ([`agent_core::turns`]):
//! - **an inbox**, as s13's Lead is woken by its mailbox: a file `inbox.txt` that appears in the
//!   workspace is read, removed, and queued as the turn `[Inbox] TEXT`;
//! - **`bash` with `run_in_background`**, as s11 and s15 have it: the background crate's
//!   [`BackgroundManager`] with s15's wake ([`BackgroundManager::wake`]): the command's end is
//!   queued as the turn `<task_notification>…` (s15's wake).
//!
//! Both turns refuse with s12's text wherever they would ask. `/bashes` lists the background
//! commands.

use std::path::PathBuf;
use std::time::Duration;

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, Harness};
use agent_cli::repl::background_command;
use agent_core::turns::{AutoTurn, TurnSender};
use background::BackgroundManager;

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

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let manager = BackgroundManager::new(&setup.workspace, &setup.tool_options, setup.events.clone())
            .wake(setup.turns.clone(), REFUSAL);
        watch_inbox(setup.workspace.root().to_owned(), setup.turns.clone());
        Harness {
            system: format!("You are a test harness at {}.", setup.workdir()),
            tools: kernel.tools.with(manager.bash_tool()),
            extensions: vec![Box::new(kernel.hooks)],
            commands: vec![background_command("bashes", manager.background().clone(), background::task_id)],
        }
    })
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
