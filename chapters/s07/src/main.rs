//! s07: skill loading. The model sees one catalog line per skill in SYSTEM, and loads a skill's
//! full SKILL.md only when it applies.
//!
//! ```text
//!  start: skills/*/SKILL.md --scan--> SYSTEM: "Skills available:\n- code-review: Review code ..."
//!
//!  prompt --> LLM --> tool_use load_skill {name} --> tool_result = the whole SKILL.md
//!              ^                                             |
//!              +---------------------------------------------+
//! ```
//!
//! Changes from s06 (both are the s04 kernel plus one mechanism): the `task` tool leaves; the
//! skills arrive: `SkillLoader` scans `skills/*/SKILL.md` once at start, its catalog goes into
//! SYSTEM, and `load_skill` returns a skill's whole file on demand; `/skills` and `/history`
//! show them.
//!
//! Key insight: keep the cheap part (a line per skill) always in context and the expensive part
//! (the instructions) out of it until the model asks.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use skills::SkillLoader;

const CHAPTER: Chapter = Chapter {
    name: "s07",
    banner: Banner::new("s07: Skill Loading - catalog first, full content on demand"),
    about: "s07: the s04 kernel and skills: a catalog in SYSTEM, and load_skill for a skill's full SKILL.md.",
    demo: Demo {
        prompt: "Review example/stats.py before I commit it.",
        files: &[
            ("skills/code-review/SKILL.md", include_str!("../demo/skills/code-review/SKILL.md")),
            ("skills/commit-message/SKILL.md", include_str!("../demo/skills/commit-message/SKILL.md")),
            ("skills/python-tests/SKILL.md", include_str!("../demo/skills/python-tests/SKILL.md")),
            ("example/stats.py", include_str!("../demo/example/stats.py")),
            ("example/test_stats.py", include_str!("../demo/example/test_stats.py")),
        ],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let kernel = setup.kernel(approval);
        let skills = SkillLoader::new(setup);
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use tools to solve tasks. Act, don't explain.\n\n{}",
                setup.workdir(),
                skills.system_section()
            ),
            tools: kernel.tools.with(skills.load_skill_tool()),
            extensions: vec![Box::new(kernel.hooks)],
            commands: skills.commands(),
        }
    })
}
