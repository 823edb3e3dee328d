//! s13: agent teams. The Lead splits work into tasks and hands them to persistent teammates,
//! each a loop of its own that reports through a mailbox, idles, and claims the next ready task.
//!
//! ```text
//!  you -> Lead -> create_task xN -> spawn_teammate(alice, task_id, require_plan)
//!           ^         alice: submit_plan -> [plan_approval_request] -> Lead: review_plan
//!           |         alice: works in the task's folder -> complete_task -> result, idle_notification
//!           |         alice idle: mail first, then claims the next ready task (atomically)
//!           +-- "[Team events]" turn <-- .mailboxes/lead.jsonl <-- every teammate's messages
//! ```
//!
//! Changes from s10 (the course builds s13 on the task system): s10's six task tools with one
//! task per owner and a working folder per task; the `team` crate's teammates, mailboxes,
//! protocols and worktrees; seven team tools (`spawn_teammate`, `list_teammates`,
//! `send_message`, `request_shutdown`, `request_plan`, `review_plan`, `create_worktree`); the
//! Lead woken by its teammates' events; `/team` and `/inbox`. The base tools take s13's texts, a
//! failed request becomes the answer `[Error] {Type}: {e}`.
//!
//! Key insight: a team is coordination the model does not have to hold: mailboxes, request ids
//! and a task board on disk carry it, and the runtime delivers it when something happens.

use std::sync::Arc;

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Composed, Demo, ENVIRONMENT, Harness};
use agent_core::error::{ApiError, sdk_error_type};
use agent_core::hooks::HookSet;
use agent_core::wording::DenyList;
use team::lead::{self, LeadWake};
use team::runtime::TeamRuntime;

const CHAPTER: Chapter = Chapter {
    name: "s13",
    banner: Banner::new("s13: agent teams"),
    about: "s13: the task system and agent teams: a Lead that spawns persistent teammates, which claim tasks, report through mailboxes and wait for plan approval.",
    demo: Demo {
        prompt: "Add a greeting module with its test and a README section about it. Split it into tasks and use two teammates; the one writing code must have its plan approved first. We agreed on the team already.",
        files: &[],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

/// The teammates' recorded turns in the demo, by name: concurrent agents ask in no fixed
/// order, so each replays its own.
const DEMO_TEAMMATES: &[(&str, &str)] =
    &[("alice", include_str!("../demo/alice.jsonl")), ("bob", include_str!("../demo/bob.jsonl"))];

/// The Lead's SYSTEM, five sections joined by a blank line (course s13: `identity`, `tools`,
/// `tasks`, `teams`, `workspace`).
fn lead_system(workdir: &str) -> String {
    let sections = [
        format!("You are a coding agent. Act, don't explain. Environment: {ENVIRONMENT}."),
        "Available tools: bash, read_file, write_file, edit_file, glob, create_task, update_task, list_tasks, get_task, claim_task, complete_task, spawn_teammate, list_teammates, send_message, request_shutdown, request_plan, review_plan, create_worktree.".to_owned(),
        "Create all task nodes first. Only after create_task returns runtime-generated IDs, use update_task with those exact IDs to add dependencies. Only the Lead changes task dependencies.".to_owned(),
        "When parallel work would help, first propose a small team with clear responsibilities and wait for the user's confirmation. Do not call spawn_teammate before the user confirms. After confirmation, delegate independent work by creating a Task for each parallel change. Pass task_id to spawn_teammate when assigning ready work, then create a task-bound worktree only when a separate working directory would prevent conflicting edits. A teammate must complete its current Task before claiming another. A worktree changes tool default cwd only; it is not a sandbox. Worktree removal stays with the host or user. After spawning a teammate, end the current turn instead of polling its status; the runtime will deliver team events and wake the Lead. React to those events, and shut teammates down when coordination is complete.".to_owned(),
        format!("Working directory: {workdir}"),
    ];
    sections.join("\n\n")
}

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        let team = TeamRuntime::start(setup, approval, DEMO_TEAMMATES)?;
        let hooks =
            setup.course_hooks_with(approval, HookSet { deny_list: DenyList::Pattern, ..HookSet::default() });
        let harness = Harness {
            system: lead_system(&setup.workdir()),
            tools: lead::lead_tools(&team),
            extensions: vec![Box::new(LeadWake::new(Arc::clone(&team))), Box::new(hooks)],
            commands: lead::commands(&team),
        };
        // The course's s13 answers a failed request with its text and goes on.
        let error_text = Arc::new(|e: &ApiError| format!("[Error] {}: {e}", sdk_error_type(e)));
        Ok::<_, String>(Composed { error_text: Some(error_text), ..Composed::from(harness) })
    })
}
