//! s03: TodoWrite. Planning with a nag.
//!
//! ```text
//! +--------+      +-------+      +---------+
//! |  User  | ---> |  LLM  | ---> | Tools   |
//! | prompt |      |       |      | + todo  |
//! +--------+      +---+---+      +----+----+
//!                   ^                |
//!                   |   tool_result  |
//!                   +----------------+
//!                         |
//!             +-----------+-----------+
//!             | TodoManager state     |
//!             | [ ] task A            |
//!             | [>] task B  <- doing  |
//!             | [x] task C            |
//!             +-----------------------+
//!                         |
//!             if rounds_since_todo >= 3:
//!               append <reminder> after the tool_results
//! ```
//!
//! Changes from s02: a `todo` tool in the same dispatch map, backed by `TodoManager`; a SYSTEM
//! prompt that asks for a plan; the nag, an extension that appends
//! `<reminder>Update your todos.</reminder>` after three rounds without a todo update.
//!
//! Key insight: the agent tracks its own progress, and you can see it.

use agent_cli::chapter::{self, Banner, Chapter, Demo, Harness};
use agent_core::tools;
use todo::tools::todo_tool;

const CHAPTER: Chapter = Chapter {
    name: "s03",
    // The course's newest s03 is its permission chapter; ours keeps the older layout's
    // TodoWrite here, so the title is ours, in the course's form.
    banner: Banner::new("s03: TodoWrite - plan first, a nag when the plan goes stale"),
    about: "s03: s02's four tools plus a todo list the model keeps, and a nag when it forgets it.",
    demo: Demo {
        prompt: "Refactor the file hello.py: add type hints, docstrings, and a main guard",
        files: &[("hello.py", include_str!("../demo/hello.py"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["hello.py"],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main(&CHAPTER, |setup| {
        let (todo, nag, todos) = todo_tool(setup.ui.clone());
        Harness {
            system: format!(
                "You are a coding agent at {}.\n\
                 Use the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done.\n\
                 Prefer tools over prose.",
                setup.workdir()
            ),
            tools: tools::s02(&setup.workspace, &setup.tool_options).with(todo),
            extensions: vec![Box::new(nag)],
            commands: vec![todos],
        }
    })
}
