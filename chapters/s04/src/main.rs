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
//! per call, the permission check (the deny list refuses, a destructive command asks
//! `Allow? [y/N]`; a path outside the workspace is refused by the tool itself, so it is never
//! asked about), the working folder on each prompt, a warning on huge
//! outputs, a summary on `Stop`; `--yes`/`--no` answer the question for scripted runs; and `glob`,
//! one more tool in the dispatch map. Planning (`todo`, the nag) is s03's, unchanged.
//!
//! Key insight: the loop stays the same; behaviour is added by registering callbacks, and a hook
//! that fails blocks what it guards.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, Harness};
use agent_core::tools;
use todo::tools::todo_tool;

const CHAPTER: Chapter = Chapter {
    name: "s04",
    banner: Banner::new("s04: Hooks - extension logic on hooks, loop stays clean"),
    about: "s04: s03's tools and todo list, glob, and hooks with a permission check.",
    demo: Demo {
        prompt: "Refactor example/hello.py: add type hints, docstrings, and a main guard",
        // The same seed file as s03, under example/ as the course has it.
        files: &[("example/hello.py", include_str!("../../s03/demo/hello.py"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["example/hello.py"],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let (todo, nag, todos) = todo_tool(setup.ui.clone());
        Harness {
            system: format!(
                "You are a coding agent at {}.\n\
                 Use the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done.\n\
                 Prefer tools over prose.",
                setup.workdir()
            ),
            tools: tools::s02(&setup.workspace, &setup.tool_options)
                .with(tools::glob(&setup.workspace))
                .with(todo),
            extensions: vec![Box::new(setup.course_hooks(approval)), Box::new(nag)],
            commands: vec![todos],
        }
    })
}
