//! Per-owner working-directory leases: which task each owner works on and where its tools run
//! (the course's `teammate_assignments`, `assignment_cwd`, COURSE-s10-s17 §4.3).
//!
//! ```text
//!  claim_task ──► lease {task_id, cwd} + version+1        (cwd = the task's worktree, or WORKDIR)
//!  every file/shell tool ──► assignment_cwd(owner)        (checked again: still owned, same cwd)
//!  complete_task ──► task completed, lease KEPT            (the turn may still write its report)
//!  turn ends ──► release_completed_assignment ──► version+1, gate not_required
//!  loop ends ──► release_teammate_assignment  ──► task back to pending, unowned
//! ```
//!
//! The lease lives in memory; the task file is the truth. After a restart (or a claim made by
//! another runtime) a lease is rebuilt from the task the owner has in progress, and a lease
//! whose task or worktree changed fails closed with an error instead of running a tool in the
//! wrong folder.

use std::path::{Path, PathBuf};

use serde_json::Value;

use tasks::TaskError;
use tasks::owners::{OwnedClaim, OwnedCompletion, OwnerRules};
use tasks::store::{Status, Task};

use crate::protocol::PlanGate;
use crate::state::TeamState;

/// One owner's lease: the task it works on and the folder its tools run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The leased task's id.
    pub task_id: String,
    /// Where the owner's tools run: the task's worktree, or the workspace root.
    pub cwd: PathBuf,
}

/// Why an owner's tools cannot run (`Error: Invalid task assignment: {this}`).
#[derive(Debug, thiserror::Error)]
pub enum AssignmentError {
    /// The leased task is no longer in progress or completed by this owner:
    /// `Assignment for {owner} is no longer active`.
    #[error("Assignment for {0} is no longer active")]
    NoLongerActive(String),
    /// The task's working directory is not the one leased:
    /// `Assignment cwd changed for task {id}`.
    #[error("Assignment cwd changed for task {0}")]
    CwdChanged(String),
    /// The task's worktree is unusable (`worktree 'auth' is missing at …`).
    #[error("{0}")]
    Worktree(String),
    /// The task cannot be read.
    #[error("{0}")]
    Task(#[from] TaskError),
}

/// Whether two folders are the same once symbolic links are resolved (the course compares
/// `Path.resolve()`s); paths that cannot be resolved compare as written.
pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

impl TeamState {
    /// Starts a new assignment version for `owner` (the course's `advance_assignment_version`):
    /// version + 1; a gate other than `not_required` goes back to `required`; the plan request
    /// waiting for review is forgotten. An approval given before can then open no gate.
    pub fn advance_assignment_version(&self, owner: &str) {
        let mut registry = self.registry();
        *registry.versions.entry(owner.to_owned()).or_insert(0) += 1;
        if let Some(gate) = registry.plan_gates.get_mut(owner)
            && *gate != PlanGate::NotRequired
        {
            *gate = PlanGate::Required;
        }
        registry.plan_request_ids.remove(owner);
    }

    /// `owner`'s assignment version and leased task (the course's `current_work_identity`).
    pub fn current_work_identity(&self, owner: &str) -> (u64, Option<String>) {
        let registry = self.registry();
        (
            registry.versions.get(owner).copied().unwrap_or(0),
            registry.leases.get(owner).map(|l| l.task_id.clone()),
        )
    }

    /// `owner`'s lease, as it is in memory.
    pub fn lease_of(&self, owner: &str) -> Option<Lease> {
        self.registry().leases.get(owner).cloned()
    }

    /// Claims the task for `owner` with s13's rules ([`tasks::owners`]), records the lease and
    /// a new assignment version, and reports `  [claim] {subject} -> in_progress (owner: {o})`.
    ///
    /// # Errors
    /// As [`tasks::TaskStore::claim_owned`]; the tool shows them with
    /// [`tasks::owners::error_text`].
    pub fn claim_task(&self, id: &Value, owner: &str) -> Result<OwnedClaim, TaskError> {
        let claim = self.store.claim_owned(id, owner, self)?;
        if let OwnedClaim::Claimed { task, .. } = &claim {
            self.say(&format!("  [claim] {} -> in_progress (owner: {owner})", task.subject));
        }
        Ok(claim)
    }

    /// Completes the task `owner` holds with s13's rules, keeping the lease until the turn
    /// ends, and reports `  [complete] {subject}` and `  [unblocked] a, b`.
    ///
    /// # Errors
    /// As [`tasks::TaskStore::complete_owned`].
    pub fn complete_task(&self, id: &Value, owner: &str) -> Result<OwnedCompletion, TaskError> {
        let completion = self.store.complete_owned(id, owner, self)?;
        if let OwnedCompletion::Completed { task, unblocked } = &completion {
            self.say(&format!("  [complete] {}", task.subject));
            if !unblocked.is_empty() {
                self.say(&format!("  [unblocked] {}", unblocked.join(", ")));
            }
        }
        Ok(completion)
    }

    /// The folder `owner`'s tools run in (the course's `assignment_cwd`): the workspace when it
    /// holds no lease and has nothing in progress; else the leased task's folder, after checking
    /// that the task is still in progress or completed by `owner` and that its folder is still
    /// the leased one. A lease lost in a restart (or replaced by another runtime's claim) is
    /// rebuilt from the task `owner` has in progress.
    ///
    /// # Errors
    /// [`AssignmentError`]; the tool answers `Error: Invalid task assignment: {error}`.
    pub fn assignment_cwd(&self, owner: &str) -> Result<PathBuf, AssignmentError> {
        let in_progress = self.owner_in_progress(owner)?;
        let mut lease = self.lease_of(owner);
        if let Some(task) = in_progress
            && lease.as_ref().is_none_or(|l| l.task_id != task.id)
        {
            let cwd = self.task_worktree_cwd(&task).map_err(AssignmentError::Worktree)?;
            let rebuilt = Lease { task_id: task.id.clone(), cwd };
            self.registry().leases.insert(owner.to_owned(), rebuilt.clone());
            lease = Some(rebuilt);
        }
        let Some(lease) = lease else { return Ok(self.root()) };
        let task = self.store.load(&Value::String(lease.task_id.clone()))?;
        if !matches!(task.status, Status::InProgress | Status::Completed)
            || task.owner.as_deref() != Some(owner)
        {
            return Err(AssignmentError::NoLongerActive(owner.to_owned()));
        }
        let cwd = self.task_worktree_cwd(&task).map_err(AssignmentError::Worktree)?;
        if !same_dir(&cwd, &lease.cwd) {
            return Err(AssignmentError::CwdChanged(task.id));
        }
        Ok(cwd)
    }

    /// Ends `owner`'s lease at a turn boundary when its task is completed and still owned by
    /// it (the course's `release_completed_assignment`): a new assignment version, the gate back
    /// to `not_required`. Returns whether a lease was released.
    ///
    /// # Errors
    /// The errors of loading the leased task; the lease is then kept.
    pub fn release_completed_assignment(&self, owner: &str) -> Result<bool, TaskError> {
        let Some(lease) = self.lease_of(owner) else { return Ok(false) };
        let task = self.store.load(&Value::String(lease.task_id.clone()))?;
        if task.status != Status::Completed || task.owner.as_deref() != Some(owner) {
            return Ok(false);
        }
        self.registry().leases.remove(owner);
        self.advance_assignment_version(owner);
        self.reset_gate(owner);
        Ok(true)
    }

    /// Gives up everything `owner` holds when its loop ends, for any reason (the course's
    /// `release_teammate_assignment`): the task it has in progress goes back to `pending` with
    /// no owner, under the store's lock; the lease is dropped, the version advanced, the gate
    /// reset, even when the task could not be saved.
    ///
    /// # Errors
    /// The store's error when the task could not be returned to the board (the runtime sends
    /// `Assignment cleanup failed: …` to the Lead).
    pub fn release_teammate_assignment(&self, owner: &str) -> Result<Option<Task>, TaskError> {
        let released = self.store.transaction(|tx| {
            let Some(mut task) = tx.owner_in_progress(owner)? else { return Ok(None) };
            task.status = Status::Pending;
            task.owner = None;
            tx.save(&task)?;
            Ok(Some(task))
        });
        self.registry().leases.remove(owner);
        self.advance_assignment_version(owner);
        self.reset_gate(owner);
        released
    }

    /// The first task `owner` has in progress, read without the store's lock (each file is
    /// replaced whole, so a read sees a whole task).
    fn owner_in_progress(&self, owner: &str) -> Result<Option<Task>, TaskError> {
        Ok(self
            .store
            .list()?
            .into_iter()
            .flatten()
            .find(|task| task.status == Status::InProgress && task.owner.as_deref() == Some(owner)))
    }

    fn reset_gate(&self, owner: &str) {
        if let Some(gate) = self.registry().plan_gates.get_mut(owner) {
            *gate = PlanGate::NotRequired;
        }
    }

    /// The tasks an idle teammate may claim, in file-name order: pending, unowned, every
    /// dependency completed, and a bound worktree usable (the course's `scan_unclaimed_tasks`).
    ///
    /// # Errors
    /// As [`tasks::TaskStore::list`].
    pub fn scan_unclaimed_tasks(&self) -> Result<Vec<Task>, TaskError> {
        Ok(self
            .store
            .ready_tasks()?
            .into_iter()
            .filter(|task| self.task_worktree_cwd(task).is_ok())
            .collect())
    }

    /// An idle teammate's auto-claim (the course's `claim_next_task`): nothing when `owner`
    /// holds a lease or a task in progress; else the first ready task it wins, atomically (a
    /// task another teammate claimed first is skipped). The caller reports
    /// `  [idle] {name} claimed {id}: {subject}` and resumes work.
    ///
    /// # Errors
    /// As [`tasks::TaskStore::list`]; a claim's own error skips that task.
    pub fn claim_next_task(&self, owner: &str) -> Result<Option<Task>, TaskError> {
        if self.lease_of(owner).is_some() || self.owner_in_progress(owner)?.is_some() {
            return Ok(None);
        }
        for task in self.scan_unclaimed_tasks()? {
            if let Ok(OwnedClaim::Claimed { task, .. }) =
                self.claim_task(&Value::String(task.id.clone()), owner)
            {
                return Ok(Some(task));
            }
        }
        Ok(None)
    }
}

/// The store asks the team about leases, worktrees and gates during a claim or completion,
/// with its file lock held: each answer takes the registry's lock briefly and never the store's.
impl OwnerRules for TeamState {
    fn leased_task(&self, owner: &str) -> Option<String> {
        self.registry().leases.get(owner).map(|lease| lease.task_id.clone())
    }

    fn task_cwd(&self, task: &Task) -> Result<PathBuf, String> {
        self.task_worktree_cwd(task)
    }

    fn blocking_plan_gate(&self, owner: &str) -> Option<String> {
        let gate = self.plan_gate(owner);
        (!gate.allows_completion()).then(|| gate.as_str().to_owned())
    }

    fn lease(&self, owner: &str, task: &Task, cwd: PathBuf, claimed: bool) {
        self.registry().leases.insert(owner.to_owned(), Lease { task_id: task.id.clone(), cwd });
        if claimed {
            self.advance_assignment_version(owner);
        }
    }
}
