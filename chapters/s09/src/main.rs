//! s09: memory. What the user taught the agent in one session is recalled in the next:
//! selected records from files, not a transcript.
//!
//! ```text
//!  prompt --> recall: which records matter? (a model call) --> SYSTEM + catalog + records
//!                                                                 |
//!                                                                 v
//!  .memory/*.md, MEMORY.md <-- extraction: what is worth keeping? <-- LLM <--> tools
//!                              (a model call after the answer)
//! ```
//!
//! Changes from s06 (the course builds every chapter from s06 on on the s04 kernel): the `task`
//! tool leaves; `Memory` arrives, an extension that recalls records into this turn's SYSTEM
//! before the turn and extracts new ones after the answer (consolidating at 10 or more);
//! `/memory` lists them, `/memory forget NAME` deletes one, `/history` shows the SYSTEM.
//!
//! Key insight: memory is a harness mechanism, not a model feature. The model answers two small
//! questions; the harness keeps the files, the limits and what reaches SYSTEM.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use agent_core::hooks::HookSet;
use agent_core::wording::DenyList;
use memory::Memory;

const CHAPTER: Chapter = Chapter {
    name: "s09",
    banner: Banner::new("s09: Memory - selective knowledge across sessions"),
    about: "s09: the s04 kernel and memory: records in .memory/ recalled into SYSTEM in later sessions.",
    demo: Demo {
        prompt: "In this project we indent Python with tabs, never spaces, and tests live in tests/, one test_MODULE.py per module. Add a farewell(name) function to greet.py.",
        files: &[("greet.py", include_str!("../demo/greet.py"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[".memory/MEMORY.md", ".memory/code-style.md", "tests/test_greet.py"],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        // The course's s09 names the deny-list entry in its refusal.
        let kernel =
            setup.kernel_with(approval, HookSet { deny_list: DenyList::Pattern, ..HookSet::default() });
        let memory = Memory::new(setup);
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use tools to solve tasks. Act, don't explain.",
                setup.workdir()
            ),
            tools: kernel.tools,
            extensions: vec![Box::new(kernel.hooks), Box::new(memory.extension())],
            commands: memory.commands(),
        }
    })
}
