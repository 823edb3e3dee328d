//! s06: subagents. A big task is split off to a child agent with fresh messages; only its final
//! text comes back.
//!
//! ```text
//!  parent: prompt --> LLM --> tool_use task {prompt} ------+
//!                      ^                                    |  child: [prompt] --> LLM --> tools
//!                      |                                    |         (five base tools, the
//!                      +---- tool_result = final text <-----+          parent's hooks, <= 30 calls)
//! ```
//!
//! Changes from s04 (the course builds every chapter from s06 on on the s04 kernel, without the
//! todo list): the kernel, in one call; a `task` tool that runs `run_subagent`, a child loop with
//! its own history, SYSTEM prompt and round cap; `/history task N` and `/usage` show the child.
//!
//! Key insight: a subagent is the same loop with a fresh messages list. Context isolation is just
//! not passing the history.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use subagent::Subagents;

const CHAPTER: Chapter = Chapter {
    name: "s06",
    banner: Banner::new("s06: Subagent - fresh messages, final text returns"),
    about: "s06: the s04 kernel and a task tool that delegates to a subagent with a fresh context.",
    demo: Demo {
        prompt: "What does each file in example/ do? Delegate the reading to a subagent.",
        files: &[
            ("example/app.py", include_str!("../demo/example/app.py")),
            ("example/greet.py", include_str!("../demo/example/greet.py")),
            ("example/people.json", include_str!("../demo/example/people.json")),
            ("example/test_greet.py", include_str!("../demo/example/test_greet.py")),
        ],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let subagents = Subagents::new(setup, &kernel);
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use task for focused exploration or a self-contained subtask.",
                setup.workdir()
            ),
            tools: kernel.tools.with(subagents.task_tool()),
            extensions: vec![Box::new(kernel.hooks)],
            commands: subagents.commands(),
        }
    })
}
