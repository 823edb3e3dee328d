//! s10: the task system. Work becomes a graph of tasks on disk: what to do, what must come
//! first, who is doing it; it outlives the conversation.
//!
//! ```text
//!  prompt --> LLM --> create_task x N --> .tasks/task_{8 hex}.json   (phase 1: the nodes)
//!              ^  <-- "Created task_x: ..." (ids the model could not guess)
//!              |
//!              +----> update_task(task_x, addBlockedBy=[ids]) ---->   (phase 2: the edges)
//!              +----> claim_task / complete_task --> "Unblocked: ..."
//! ```
//!
//! Changes from s04 (the course builds every chapter from s06 on on the s04 kernel): the
//! kernel, in one call; the `tasks` crate's `TaskStore` and its six tools after the five base
//! tools (`create_task`, `update_task`, `list_tasks`, `get_task`, `claim_task`,
//! `complete_task`); `/tasks` shows the graph.
//!
//! Key insight: sibling tool calls in one response cannot see each other's results, so the
//! graph is built in two phases: every node first, then the edges with the returned ids.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use tasks::TaskTools;

const CHAPTER: Chapter = Chapter {
    name: "s10",
    about: "s10: the s04 kernel and a task graph in .tasks/: create, depend, claim, complete.",
    demo: Demo {
        prompt: "Plan a small release as tasks: design the schema, write the API, write the tests, write the docs. The API needs the schema; the tests need the API. Then start on whatever is ready and finish it.",
        files: &[],
        turns: include_str!("../demo/turns.jsonl"),
        // The first task's file after the run: the bytes the course's Python writes.
        show: &[".tasks/task_d12b78f5.json"],
    },
    banner: Banner::new("s10: Task System - dependencies and task state"),
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let tasks = TaskTools::new(setup);
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use task tools to track dependencies and progress. Create all task nodes first. After create_task returns runtime-generated IDs, use update_task with those exact IDs to add dependencies.",
                setup.workdir()
            ),
            tools: tasks.add_to(kernel.tools),
            extensions: vec![Box::new(kernel.hooks)],
            commands: tasks.commands(),
        }
    })
}
