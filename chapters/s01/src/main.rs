//! s01: the agent loop. One tool, `bash`, and a loop that runs until the model stops asking.
//!
//! ```text
//! +--------+      +-------+      +---------+
//! |  User  | ---> |  LLM  | ---> |  bash   |
//! | prompt |      |       |      |         |
//! +--------+      +---+---+      +----+----+
//!                     ^               |
//!                     +- tool_result -+
//!       loop while the response holds a tool_use
//! ```
//!
//! Changes: this is the first chapter. The loop (`agent_core::agent`) sends the history, runs
//! each `tool_use`, appends the `tool_result`s as one user message, and goes round again until the
//! model answers without a tool call.
//!
//! Key insight: an agent is a model plus a loop plus a tool. Everything later adds to the loop;
//! nothing replaces it.

use agent_cli::chapter::{self, Banner, Chapter, Demo, Harness};
use agent_core::dispatch::DispatchMap;
use agent_core::tools;

const CHAPTER: Chapter = Chapter {
    name: "s01",
    banner: Banner::new("s01: Agent Loop"),
    about: "s01: an agent loop with one tool, bash.",
    demo: Demo {
        prompt: "Create a file called hello.py that prints \"Hello, World!\"",
        files: &[],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["hello.py"],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main(&CHAPTER, |setup| Harness {
        system: format!(
            "You are a coding agent at {}. Use bash to solve tasks. Act, don't explain.",
            setup.workdir()
        ),
        tools: DispatchMap::new().with(tools::bash(&setup.workspace, &setup.tool_options)),
        extensions: Vec::new(),
        commands: Vec::new(),
    })
}
