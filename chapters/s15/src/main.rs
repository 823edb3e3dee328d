//! s15: the integrated harness. Every mechanism of the course in one loop, with the recovery a
//! real harness needs: the todo list and its nag, subagents, skills, compaction, memory, the
//! task graph, background commands that wake the agent, cron, MCP, and 429 back-off, a fallback
//! model after 529s, `max_tokens` escalation then continuation, reactive compaction.
//!
//! ```text
//!  prompt / cron turn / finished command -> SYSTEM (fixed + time + skills + memory + MCP)
//!      -> cron inject -> nag -> compaction -> request (recovery) -> tools (hooks, permission)
//!      -> results -> next request ... -> answer -> memory extraction
//! ```
//!
//! Changes from s14: the chapters stop being "the s04 kernel plus one mechanism"; this one is
//! all of them at once, composed by the `integrated` crate (which s16 builds on). `/status`
//! shows every mechanism on one screen.
//!
//! Key insight: the mechanisms compose because each one hooks the same loop at its own point;
//! the loop itself does not change.

use agent_cli::chapter::{self, Banner, Chapter, Demo};
use integrated::IntegratedArgs;

const CHAPTER: Chapter = Chapter {
    name: "s15",
    banner: Banner::new("s15: integrated harness"),
    about: "s15: every mechanism in one loop: todo list, subagents, skills, compaction, memory, tasks, teammates, background commands, cron and MCP, with error recovery. FALLBACK_MODEL_ID names the model that takes over when the client's retries meet only overloaded (529) answers.",
    demo: Demo {
        prompt: include_str!("../demo/prompt.txt"),
        files: &[
            ("skills/release-notes/SKILL.md", include_str!("../demo/skills/release-notes/SKILL.md")),
            ("app.py", include_str!("../demo/app.py")),
        ],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["NOTES.md"],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, args: &IntegratedArgs| integrated::harness(setup, args))
}
