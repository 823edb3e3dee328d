//! The course's s13 agent teams, the state half: everything a team shares that is not a model
//! call (COURSE-s10-s17 §4). The teammate loops and the Lead's tools build on it.
//!
//! ```text
//!  Lead ──spawn(task_id)──► teammate WORK ──result──► IDLE ──wait/claim──► WORK …
//!    ▲                          │ tools run in the task's cwd      │
//!    │ [Team events]            ▼                                  ▼
//!  .mailboxes/lead.jsonl ◄── MessageBus ──► .mailboxes/{name}.jsonl      .tasks/ (TaskStore, flock)
//!                                                                       .worktrees/{name} (Git)
//! ```
//!
//! | module | course | what it holds |
//! |---|---|---|
//! | [`bus`] | `MessageBus` | JSONL mailboxes, destructive reads, a wait that sleeps until a send |
//! | [`state`] | `active_teammates`, `plan_gates`, … | [`TeamState`]: the store, the bus, Git, the in-memory registry |
//! | [`protocol`] | `ProtocolState`, `match_response`, `apply_*` | plan approval and shutdown with request ids |
//! | [`assignment`] | `teammate_assignments`, `assignment_cwd` | per-owner cwd leases, claim and complete with s13's rules |
//! | [`worktree`] | `create_worktree`, `remove_worktree` | task-bound Git worktrees in `.worktrees/` |
//! | [`cwd`] | `run_agent_bash` … `TeammateRuntime.glob` | the five base tools, run in their owner's task folder |
//! | [`tasktools`] | `run_create_task` … `run_complete_task` | the six task tools with s13's owner rules and texts |
//! | [`teammate`] | `TeammateRuntime` | a teammate's loop: WORK, IDLE, auto-claim, inbox, plan gate, its ten tools |
//! | [`lead`] | `TOOLS`, `consume_lead_inbox`, the CLI wake | the Lead's eighteen tools, its `[Team events]` turns, `/team`, `/inbox` |
//! | [`runtime`] | `spawn_teammate_thread`, module globals | [`runtime::TeamRuntime`]: the team in a chapter run, spawning, wake turns, ending every teammate |
//!
//! The task rules themselves (one task per owner, the order of claim's checks, the texts) live
//! with the task store, in [`tasks::owners`]; [`TeamState`] answers the store's questions about
//! leases, worktrees and plan gates ([`tasks::owners::OwnerRules`]).
//!
//! Nothing here prints: each mechanism reports its line (`  [bus] lead -> alice: (message) …`,
//! `  [claim] …`, `  [protocol] req_123456 -> approved`, `  [worktree] created: …`) as an
//! [`agent_core::events::Event::Line`] on the team's listener.
//!
//! Key insight (course s13): teammates coordinate through files and typed messages the runtime
//! reads, not through the model's context; a worktree changes where a task's tools run, and is
//! not a sandbox.

#![warn(missing_docs)]

pub mod assignment;
pub mod bus;
pub mod cwd;
pub mod lead;
pub mod protocol;
pub mod runtime;
pub mod state;
pub mod tasktools;
pub mod teammate;
pub mod worktree;

pub use assignment::{AssignmentError, Lease};
pub use bus::{BusError, Message, MessageBus};
pub use protocol::{MatchOutcome, PlanGate, ProtocolState, RequestKind, RequestStatus, format_team_events};
pub use state::{LEAD, LEAD_OWNER, Registry, TeamState, TeammateStatus};
pub use worktree::{GitOutput, GitRunner, SystemGit};
