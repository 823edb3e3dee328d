//! The course's s10 task system: a persistent task graph in `.tasks/`, built in two phases.
//!
//! ```text
//!  phase 1: create_task x4 ──► .tasks/task_a1b2c3d4.json … (ids the model cannot guess)
//!  phase 2: update_task(task_id, addBlockedBy=[ids returned in phase 1])
//!
//!  pending ──claim_task──► in_progress ──complete_task──► completed ──► "Unblocked: …"
//!     ▲ only when every blockedBy task is completed
//! ```
//!
//! | module | course | what it holds |
//! |---|---|---|
//! | [`store`] | s10 `TaskStore`, `Task` | the task files, dependencies, claim and complete; crash-safe and locked |
//! | [`tools`] | s10 `run_create_task` … `run_complete_task` | the six tools, their texts, `/tasks` |
//! | [`owners`] | s13/s15 `claim_task`, `complete_task`, `run_list_tasks` | one task per owner, the worktree field, their texts |
//!
//! Sibling `create_task` calls in one response cannot see each other's ids, so the model
//! creates every node first and adds edges with `update_task` once the ids have come back
//! (course PR #533). Every edge is checked before anything is written: no unknown task, no
//! self-dependency, no cycle, no change once a task has started.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serde_json::json;
//! use tasks::store::{Claim, TaskStore};
//!
//! let dir = tempfile::tempdir()?;
//! let store = TaskStore::new(&agent_core::workspace::Workspace::new(dir.path())?);
//! let schema = store.create("schema", "")?;
//! let api = store.create("api", "")?;
//! store.update_dependencies(&json!(api.id), &json!([schema.id]))?;
//! assert_eq!(store.claim(&json!(api.id), "agent")?, Claim::Blocked(vec![schema.id.clone()]));
//! # Ok(()) }
//! ```
//!
//! Key insight (course s10): a checklist lives in the conversation; a task graph lives on disk,
//! where order, ownership and progress outlast the session and can be shared.

#![warn(missing_docs)]

pub mod owners;
pub mod store;
pub mod tools;

pub use store::{TASKS_DIR, Task, TaskError, TaskStore};
pub use tools::TaskTools;
