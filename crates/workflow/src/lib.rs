//! The course's s16: a workflow runtime. The model decides each step; code decides the
//! orchestration. A saved workflow (a Rust function registered by the host, never code the model
//! sends) runs through one `Workflow` tool call and composes model calls with six primitives:
//!
//! ```text
//!  Workflow(name, args, resume_from_run_id)          one tool_use
//!    └─ WorkflowRuntime::call                        meta checked, run id reserved, run locked
//!         └─ script(ctx, args)
//!              ├─ ctx.agent(prompt, schema)          one model call; schema-checked, one retry
//!              ├─ ctx.parallel([...])                all at once, a barrier at the end
//!              ├─ ctx.pipeline(items, stages)        per item, no barrier between stages
//!              ├─ ctx.phase(title) / ctx.log(msg)    progress lines
//!              └─ ctx.workflow(name, args)           one level of nesting, same journal
//!         .runtime/{run_id}.json                     the snapshot: status, usage, progress
//!         .runtime/{run_id}.journal.jsonl            one {"key","value"} per finished agent()
//!         .runtime/{run_id}.output.json              the result
//!         .runtime/last_run.txt                      the last run's id
//! ```
//!
//! A resumed run replays every `agent()` call whose key (`agent-` + SHA-256 of label, prompt and
//! schema, mod 10^10) is in the journal, and calls the model only for the others: the key depends
//! on what was asked, never on the order in which answers came back. The journal, the keys, the
//! snapshot and the mock runner are byte-compatible with the course's Python, so a run started by
//! either resumes under the other.
//!
//! Departures from the course (COURSE-s10-s17 §7), each for a reason:
//! - the run files live in the workspace's `.runtime/` (the course keeps them beside its
//!   `code.py`, which a learner's workspace is not), opened as a harness folder: never through a
//!   symbolic link;
//! - a failing branch of `parallel`/`pipeline` waits for its running siblings, whose answers are
//!   journalled, before the run fails (course issue #570, fixed as its PR #571 does): a started
//!   model call is paid for, and a resume should not pay for it again;
//! - the schema retry runs under the concurrency limit too, so no more than
//!   [`CONCURRENCY`] model calls are ever in flight;
//! - a `budget` that is not a number fails the run with a message instead of a Python `TypeError`.

#![warn(missing_docs)]

pub mod hash;
pub mod journal;
pub mod offline;
pub mod review;
pub mod runner;
pub mod runtime;
pub mod schema;
pub mod state;
pub mod store;
pub mod tool;

pub use runner::{AgentRunner, ApiAgentRunner, MockAgentRunner, RunnerOutput};
pub use runtime::{WorkflowMeta, WorkflowRegistry, WorkflowRuntime};
pub use state::{AgentCall, ExecutionState};
pub use tool::WorkflowTool;

/// The most `agent()` calls one run makes, nested workflows and cached calls included (course
/// `AGENT_CAP`).
pub const AGENT_CAP: usize = 1000;

/// The most model calls in flight at once in one run (course `CONCURRENCY`, its semaphore).
pub const CONCURRENCY: usize = 8;

/// The workspace folder the run files live in (course `STORE`, which is beside `code.py`).
pub const STORE_DIR: &str = ".runtime";

/// How many fresh run ids are tried before giving up (course `reserve_run_id`).
pub const RUN_ID_ATTEMPTS: usize = 32;

/// Why a workflow could not start, or why it failed (course `WorkflowInputError`). `Display` is
/// the course's message, such as `unknown workflow 'missing'`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WorkflowInputError(pub String);

impl WorkflowInputError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// A result whose error is a [`WorkflowInputError`].
pub type Result<T, E = WorkflowInputError> = std::result::Result<T, E>;
