//! s11: background tasks. A slow command runs in the background while the agent keeps working;
//! its result arrives before a later request, as a `<task_notification>`.
//!
//! ```text
//!  LLM --> bash {command, run_in_background: true} --> "[Background task bg_0001 started] ..."
//!   ^                                                        | (the command runs on its own)
//!   |                                                        v
//!   +-- before each request: finished results --> <task_notification> appended to the last
//!                                                  user message (never a second one)
//! ```
//!
//! Changes from s04 (the course builds every chapter from s06 on on the s04 kernel): `bash`'s
//! schema gains `run_in_background` and reports a non-zero exit as
//! `Error: command exited with status N`; a `BackgroundManager` starts flagged commands and
//! folds their notifications in before each request; `/bg` lists them.
//!
//! Key insight: the loop stays single-threaded. Background work changes when a result arrives,
//! not how the model sees it: one `tool_use` still gets exactly one `tool_result`, and a finished
//! command waits for the next request instead of waking the agent.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use background::BackgroundManager;

const CHAPTER: Chapter = Chapter {
    name: "s11",
    banner: Banner::new("s11: Background Tasks - explicit background Bash execution"),
    about: "s11: the s04 kernel and background bash commands whose results arrive on a later turn.",
    demo: Demo {
        prompt: "Run the test suite in the background, and while it runs tell me what the project is.",
        files: &[
            ("README.md", include_str!("../demo/README.md")),
            ("run_tests.sh", include_str!("../demo/run_tests.sh")),
        ],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let manager = BackgroundManager::new(&setup.workspace, &setup.tool_options, setup.events.clone());
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use tools to solve tasks. Set run_in_background to true only for independent Bash commands.",
                setup.workdir()
            ),
            tools: kernel.tools.with(manager.bash_tool()),
            extensions: vec![Box::new(kernel.hooks), Box::new(manager.extension())],
            commands: manager.commands(),
        }
    })
}
