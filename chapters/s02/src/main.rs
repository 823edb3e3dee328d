//! s02: tool use. The agent loop plus a dispatch map of four tools.
//!
//! ```text
//! +--------+      +-------+      +------------------+
//! |  User  | ---> |  LLM  | ---> | TOOL_HANDLERS    |
//! | prompt |      |       |      |  bash            |
//! +--------+      +---+---+      |  read_file  (new)|
//!                     ^          |  write_file (new)|
//!                     |          |  edit_file  (new)|
//!                     |          +--------+---------+
//!                     +--- tool_result ---+
//! ```
//!
//! Changes from s01: the one `bash` tool becomes a dispatch map of four; the file tools are
//! confined to the workspace.
//!
//! Key insight: adding a tool means adding one entry to the dispatch map. The loop never changes.

use agent_cli::chapter::{self, Banner, Chapter, Demo, Harness};
use agent_core::tools;

const CHAPTER: Chapter = Chapter {
    name: "s02",
    banner: Banner::new("s02: Tool Use - four tools added to s01"),
    about: "s02: an agent loop with four tools (bash, read_file, write_file, edit_file).",
    demo: Demo {
        prompt: "Read the file requirements.txt",
        files: &[("requirements.txt", include_str!("../demo/requirements.txt"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main(&CHAPTER, |setup| Harness {
        system: format!(
            "You are a coding agent at {}. Use tools to solve tasks. Act, don't explain.",
            setup.workdir()
        ),
        tools: tools::s02(&setup.workspace, &setup.tool_options),
        extensions: Vec::new(),
        commands: Vec::new(),
    })
}
