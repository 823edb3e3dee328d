//! s05: TodoWrite on top of hooks. Plan before acting, with s04's hooks still watching.
//!
//! ```text
//!  prompt --> [UserPromptSubmit] --> LLM --> tool_use --> [PreToolUse: log, permission]
//!                                     ^                          |
//!                                     |                    run the tool
//!                                     |                          |
//!                                     |                   [PostToolUse: large output]
//!                                     |                          |
//!                                     +---- tool_results (+ <reminder> every 3rd quiet round)
//!  no tool_use --> [Stop: summary]
//! ```
//!
//! Changes from s04: `todo` becomes `todo_write` (items `{content, status}`, input as a JSON
//! array, a JSON string or a Python-literal string, parsed without evaluating anything); a SYSTEM
//! prompt that asks for a plan first; the nag, which now resets after each reminder.
//!
//! Key insight: todo_write adds no ability to act. It adds the ability to plan.

use agent_core::approve::{Approver, FixedApprover, TerminalApprover};
use agent_core::cli::{self, Chapter, CommonArgs, Demo, ENV_HELP, Harness};
use agent_core::hooks::course_hooks;
use agent_core::tools;
use clap::Parser;
use todo::agent::{NagExtension, todo_write_tool};
use todo::nag::Nag;

/// s05: s04 with todo_write, whose string input is parsed safely, in place of todo.
#[derive(Parser)]
#[command(name = "s05", version, after_help = ENV_HELP)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,

    /// Answer every "Allow? [y/N]" with yes, for scripted runs.
    #[arg(long, conflicts_with = "no")]
    yes: bool,

    /// Answer every "Allow? [y/N]" with no (what happens anyway without a terminal).
    #[arg(long)]
    no: bool,
}

const CHAPTER: Chapter = Chapter {
    name: "s05",
    demo: Demo {
        prompt: "Refactor example/hello.py: add type hints, docstrings, and a main guard",
        // The same seed file as s03: s05 refactors it under example/, as the course does.
        files: &[("example/hello.py", include_str!("../../s03/demo/hello.py"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["example/hello.py"],
    },
};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let approver: Box<dyn Approver> = match (cli.yes, cli.no) {
        (true, _) => Box::new(FixedApprover(true)),
        (_, true) => Box::new(FixedApprover(false)),
        _ => Box::new(TerminalApprover),
    };
    cli::run(&CHAPTER, &cli.common, |setup| Harness {
        system: format!(
            "You are a coding agent at {}. Before starting any multi-step task, use todo_write to plan your steps. Update status as you go.",
            setup.workdir()
        ),
        tools: tools::s02(&setup.workspace, &setup.tool_options)
            .with(tools::glob(&setup.workspace))
            .with(todo_write_tool(setup.ui)),
        extensions: vec![
            Box::new(course_hooks(setup.printer(), approver, setup.inside_workspace(), setup.workdir())),
            Box::new(NagExtension::new(Nag::s05(), todo::todo_write::TODO_WRITE_TOOL_NAME)),
        ],
    })
}
