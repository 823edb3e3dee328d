//! s04: hooks. The loop asks registered callbacks before and after each step; one of them is the
//! permission check.
//!
//! ```text
//!  prompt --> [UserPromptSubmit] --> LLM --> tool_use --> [PreToolUse: log, permission]
//!                                     ^                          |
//!                                     |                    run the tool
//!                                     |                          |
//!                                     |                   [PostToolUse: large output]
//!                                     |                          |
//!                                     +---- tool_results (+ <reminder> while todo is stale)
//!  no tool_use --> [Stop: summary]
//! ```
//!
//! Changes from s03: the course's hooks as one extension (`course_hooks`): a `[HOOK]` log line
//! per call, the permission check (the deny list refuses, a destructive command or a path outside
//! the workspace asks `Allow? [y/N]`), the working folder on each prompt, a warning on huge
//! outputs, a summary on `Stop`; `--yes`/`--no` answer the question for scripted runs; and `glob`,
//! one more tool in the dispatch map. Planning (`todo`, the nag) is s03's, unchanged.
//!
//! Key insight: the loop stays the same; behaviour is added by registering callbacks, and a hook
//! that fails blocks what it guards.

use agent_core::approve::{Approver, FixedApprover, TerminalApprover};
use agent_core::cli::{self, Chapter, CommonArgs, Demo, ENV_HELP, Harness};
use agent_core::hooks::course_hooks;
use agent_core::tools;
use clap::Parser;
use todo::agent::{NagExtension, todo_tool};
use todo::nag::Nag;

/// s04: s03's tools and todo list, glob, and hooks with a permission check.
#[derive(Parser)]
#[command(name = "s04", version, after_help = ENV_HELP)]
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
    name: "s04",
    demo: Demo {
        prompt: "Refactor example/hello.py: add type hints, docstrings, and a main guard",
        // The same seed file as s03: s04 refactors it under example/, as the course does.
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
            "You are a coding agent at {}.\n\
             Use the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done.\n\
             Prefer tools over prose.",
            setup.workdir()
        ),
        tools: tools::s02(&setup.workspace, &setup.tool_options)
            .with(tools::glob(&setup.workspace))
            .with(todo_tool(setup.ui)),
        extensions: vec![
            Box::new(course_hooks(setup.printer(), approver, setup.inside_workspace(), setup.workdir())),
            Box::new(NagExtension::new(Nag::s03(), todo::todo::TODO_TOOL_NAME)),
        ],
    })
}
