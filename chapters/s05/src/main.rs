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

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, Harness};
use agent_core::tools;
use todo::tools::todo_write_tool;

const CHAPTER: Chapter = Chapter {
    name: "s05",
    banner: Banner::new("s05: TodoWrite - plan before execution"),
    about: "s05: s04 with todo_write, whose string input is parsed safely, in place of todo.",
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
        let (todo, nag, todos) = todo_write_tool(setup.ui.clone());
        Harness {
            system: format!(
                "You are a coding agent at {}. Before starting any multi-step task, use todo_write to plan your steps. Update status as you go.",
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
