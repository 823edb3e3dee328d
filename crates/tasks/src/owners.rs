//! s13's and s15's task rules: one task per owner, a working directory per task, and the
//! texts those chapters show (COURSE-s10-s17 §4.3, §6.3 rows 12–15).
//!
//! s10 lets the one agent claim several tasks. From s13 on, several owners (the Lead as
//! `agent`, each teammate by name) share the board, and a task may be bound to a Git worktree
//! where its owner's tools run. So a claim checks, in this order, under the store's lock:
//!
//! ```text
//!  1 status is pending          else  Task {id} is {status}, cannot claim
//!  2 no owner yet               else  Task {id} is already owned by {owner}
//!  3 owner holds no lease       else  Owner {o} must finish the current work turn for {t} before claiming another task
//!  4 owner has nothing running  else  Owner {o} must complete {t} before claiming another task
//!  5 dependencies completed     else  Blocked by: ['task_…']
//!  6 its worktree is usable     else  Cannot claim {id}: {error}
//!  then owner + in_progress saved, the lease recorded (still under the lock)
//! ```
//!
//! Steps 3 and 6 ask the team runtime, which keeps the leases and knows Git: the store asks
//! through [`OwnerRules`] (the `team` crate's `Team` answers). Completing checks the owner, the
//! owner's plan gate, and re-creates a lease a restarted runtime lost, before the status changes.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use crate::store::{Listed, Status, Task, TaskError, TaskStore};

/// What the team runtime answers for a claim or a completion (the course's module globals
/// `teammate_assignments` and `plan_gates`, and `task_worktree_cwd`). Called with the store's
/// lock held: an implementation must not take it again (no [`TaskStore`] method that locks).
pub trait OwnerRules {
    /// The id of the task `owner` holds a working-directory lease for in this runtime, if any
    /// (claim's step 3, and whether complete must re-create the lease).
    fn leased_task(&self, owner: &str) -> Option<String>;

    /// The folder `task`'s tools run in: the workspace, or its bound worktree when that is
    /// registered with Git, present, and on its branch; else why not, as the course words it
    /// (`worktree 'ghost' is not registered with Git`).
    fn task_cwd(&self, task: &Task) -> Result<PathBuf, String>;

    /// The plan gate that keeps `owner` from completing: `required`, `pending` or `rejected`;
    /// `None` when it may complete (`not_required`, `approved`, or no gate).
    fn blocking_plan_gate(&self, owner: &str) -> Option<String>;

    /// Records `owner`'s lease on `task` with `cwd`. `claimed` is true after a claim (the
    /// runtime then starts a new assignment version) and false when complete re-creates a lease
    /// a restarted runtime lost.
    fn lease(&self, owner: &str, task: &Task, cwd: PathBuf, claimed: bool);
}

/// What [`TaskStore::claim_owned`] did; `Display` is the course's result text.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedClaim {
    /// `Claimed {id} ({subject})`; the task now in progress, owned, and leased with this cwd.
    Claimed {
        /// The task as saved.
        task: Task,
        /// Where its owner's tools now run.
        cwd: PathBuf,
    },
    /// Step 1: `Task {id} is {status}, cannot claim`.
    NotPending(Task),
    /// Step 2: `Task {id} is already owned by {owner}`.
    AlreadyOwned(Task),
    /// Step 3: `Owner {owner} must finish the current work turn for {task_id} before claiming another task`.
    MustFinishTurn {
        /// Who tried to claim.
        owner: String,
        /// The task the owner's lease is on.
        task_id: String,
    },
    /// Step 4: `Owner {owner} must complete {task_id} before claiming another task`.
    MustComplete {
        /// Who tried to claim.
        owner: String,
        /// The task the owner has in progress.
        task_id: String,
    },
    /// Step 5: `Blocked by: ['task_…']`.
    Blocked(Vec<String>),
    /// Step 6: `Cannot claim {id}: {error}`.
    Unusable {
        /// The task's id.
        id: String,
        /// Why its working directory cannot be used.
        error: String,
    },
}

impl OwnedClaim {
    /// Whether the task was claimed (the course checks `result.startswith("Claimed ")`).
    pub fn is_claimed(&self) -> bool {
        matches!(self, OwnedClaim::Claimed { .. })
    }
}

impl fmt::Display for OwnedClaim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnedClaim::Claimed { task, .. } => write!(f, "Claimed {} ({})", task.id, task.subject),
            OwnedClaim::NotPending(task) => write!(f, "Task {} is {}, cannot claim", task.id, task.status),
            OwnedClaim::AlreadyOwned(task) => {
                write!(
                    f,
                    "Task {} is already owned by {}",
                    task.id,
                    task.owner.as_deref().unwrap_or_default()
                )
            }
            OwnedClaim::MustFinishTurn { owner, task_id } => write!(
                f,
                "Owner {owner} must finish the current work turn for {task_id} before claiming another task"
            ),
            OwnedClaim::MustComplete { owner, task_id } => {
                write!(f, "Owner {owner} must complete {task_id} before claiming another task")
            }
            OwnedClaim::Blocked(deps) => write!(f, "Blocked by: {}", pyjson::repr_list(deps)),
            OwnedClaim::Unusable { id, error } => write!(f, "Cannot claim {id}: {error}"),
        }
    }
}

/// What [`TaskStore::complete_owned`] did; `Display` is the course's result text.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedCompletion {
    /// `Completed {id} ({subject})`, then `\nUnblocked: a, b` when `unblocked` is not empty.
    Completed {
        /// The task, now completed.
        task: Task,
        /// Subjects of every pending task with dependencies that can start now, in file order
        /// (s13 names all of them, not only the ones this completion freed).
        unblocked: Vec<String>,
    },
    /// `Task {id} is {status}, cannot complete`.
    NotInProgress(Task),
    /// `Task {id} is owned by {owner}, not {caller}; cannot complete`.
    OwnedByOther {
        /// The task.
        task: Task,
        /// Who tried to complete it.
        caller: String,
    },
    /// `Task {id} cannot complete while plan status is {gate}`.
    PlanGate {
        /// The task's id.
        id: String,
        /// The owner's plan gate: `required`, `pending` or `rejected`.
        gate: String,
    },
    /// `Task {id} cannot complete: {error}`: the lease could not be re-created.
    CannotComplete {
        /// The task's id.
        id: String,
        /// Why its working directory cannot be used.
        error: String,
    },
}

impl fmt::Display for OwnedCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OwnedCompletion::Completed { task, unblocked } => {
                write!(f, "Completed {} ({})", task.id, task.subject)?;
                if !unblocked.is_empty() {
                    write!(f, "\nUnblocked: {}", unblocked.join(", "))?;
                }
                Ok(())
            }
            OwnedCompletion::NotInProgress(task) => {
                write!(f, "Task {} is {}, cannot complete", task.id, task.status)
            }
            OwnedCompletion::OwnedByOther { task, caller } => write!(
                f,
                "Task {} is owned by {}, not {caller}; cannot complete",
                task.id,
                task.owner.as_deref().unwrap_or("None")
            ),
            OwnedCompletion::PlanGate { id, gate } => {
                write!(f, "Task {id} cannot complete while plan status is {gate}")
            }
            OwnedCompletion::CannotComplete { id, error } => write!(f, "Task {id} cannot complete: {error}"),
        }
    }
}

/// How a chapter words a missing task in a tool's error (the course's `except
/// FileNotFoundError`): s13 everywhere and s15's teammates and `update_task` say
/// `Error: Task {id} not found`; s15's Lead `get_task`, `claim_task`, `complete_task` say
/// `Error: task {id} not found` (§6.3 row 13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NotFoundWording {
    /// `Error: Task {id} not found`.
    #[default]
    Capitalised,
    /// `Error: task {id} not found`.
    Lowercase,
}

/// A task tool's error as s13 and s15 return it: `Error: Task {id} not found` (or its
/// lowercase form) for a task without a file, `Error: {error}` for anything else (the course's
/// `except ValueError`).
pub fn error_text(error: &TaskError, id: &Value, wording: NotFoundWording) -> String {
    match error {
        TaskError::NotFound { .. } => {
            let id = id.as_str().map_or_else(|| pyjson::repr(id), str::to_owned);
            match wording {
                NotFoundWording::Capitalised => format!("Error: Task {id} not found"),
                NotFoundWording::Lowercase => format!("Error: task {id} not found"),
            }
        }
        other => format!("Error: {other}"),
    }
}

/// How a chapter's `list_tasks` shows the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListStyle {
    /// s13: `No tasks. Use create_task to add some.`, or
    /// `  {icon} {id}: {subject} [{status}]{ [owner]}{ (blockedBy: a, b)}{ (worktree: {name})}`
    /// with the icons `[ ]`, `[~]`, `[x]`.
    #[default]
    Teams,
    /// s15 (§6.3 row 12, and its teammates' `list_tasks`): `No tasks.`, or
    /// `  {id}: {subject} [{status}]{ (wt:{worktree})}`.
    Integrated,
}

/// The s13 marker of a status: `[ ]`, `[~]`, `[x]` (s10 shows `[>]` for in progress).
pub fn team_marker(status: Status) -> &'static str {
    match status {
        Status::Pending => "[ ]",
        Status::InProgress => "[~]",
        Status::Completed => "[x]",
    }
}

/// The `list_tasks` result in `style`. A file that is not a readable task is a line
/// `  [?] {id}: cannot be read: {error}` (ours: the course's list fails whole).
pub fn render_list(listed: &[Listed], style: ListStyle) -> String {
    if listed.is_empty() {
        return match style {
            ListStyle::Teams => crate::tools::NO_TASKS.to_owned(),
            ListStyle::Integrated => "No tasks.".to_owned(),
        };
    }
    listed
        .iter()
        .map(|entry| match entry {
            Ok(task) => task_line(task, style),
            Err((id, error)) => format!("  [?] {id}: cannot be read: {error}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn task_line(task: &Task, style: ListStyle) -> String {
    match style {
        ListStyle::Teams => {
            let owner = task
                .owner
                .as_deref()
                .filter(|o| !o.is_empty())
                .map(|o| format!(" [{o}]"))
                .unwrap_or_default();
            let deps = if task.blocked_by.is_empty() {
                String::new()
            } else {
                format!(" (blockedBy: {})", task.blocked_by.join(", "))
            };
            let worktree = task.worktree().map(|w| format!(" (worktree: {w})")).unwrap_or_default();
            format!(
                "  {} {}: {} [{}]{owner}{deps}{worktree}",
                team_marker(task.status),
                task.id,
                task.subject,
                task.status
            )
        }
        ListStyle::Integrated => {
            let worktree = task.worktree().map(|w| format!(" (wt:{w})")).unwrap_or_default();
            format!("  {}: {} [{}]{worktree}", task.id, task.subject, task.status)
        }
    }
}

impl TaskStore {
    /// Claims the task for `owner` with s13's rules (the module's table), atomically under the
    /// store's lock, across threads and processes: of two claims of one ready task, exactly one
    /// is [`OwnedClaim::Claimed`]. On success the lease is recorded through
    /// [`OwnerRules::lease`] before the lock is released.
    ///
    /// # Errors
    /// The errors of [`TaskStore::load`] (an invalid id, a missing or unreadable file) and
    /// [`TaskError::Io`] when the save fails (nothing is leased then).
    pub fn claim_owned(
        &self,
        id: &Value,
        owner: &str,
        rules: &dyn OwnerRules,
    ) -> Result<OwnedClaim, TaskError> {
        self.transaction(|tx| {
            let mut task = tx.load(id)?;
            if task.status != Status::Pending {
                return Ok(OwnedClaim::NotPending(task));
            }
            if task.owner.as_deref().is_some_and(|o| !o.is_empty()) {
                return Ok(OwnedClaim::AlreadyOwned(task));
            }
            if let Some(task_id) = rules.leased_task(owner) {
                return Ok(OwnedClaim::MustFinishTurn { owner: owner.to_owned(), task_id });
            }
            if let Some(current) = tx.owner_in_progress(owner)? {
                return Ok(OwnedClaim::MustComplete { owner: owner.to_owned(), task_id: current.id });
            }
            let incomplete = tx.incomplete_dependencies(&task);
            if !incomplete.is_empty() {
                return Ok(OwnedClaim::Blocked(incomplete));
            }
            let cwd = match rules.task_cwd(&task) {
                Ok(cwd) => cwd,
                Err(error) => return Ok(OwnedClaim::Unusable { id: task.id, error }),
            };
            task.owner = Some(owner.to_owned());
            task.status = Status::InProgress;
            tx.save(&task)?;
            rules.lease(owner, &task, cwd.clone(), true);
            Ok(OwnedClaim::Claimed { task, cwd })
        })
    }

    /// Completes the task `owner` holds with s13's rules, under the store's lock: it must be in
    /// progress, owned by `owner`, with no plan gate holding it; a lease a restarted runtime lost
    /// is re-created first (so the owner's tools keep running in the task's worktree until the
    /// turn ends); then it is saved completed and every pending task with dependencies that can
    /// start now is named.
    ///
    /// # Errors
    /// The errors of [`TaskStore::load`] and [`TaskStore::list`]; [`TaskError::Io`] when the
    /// save fails.
    pub fn complete_owned(
        &self,
        id: &Value,
        owner: &str,
        rules: &dyn OwnerRules,
    ) -> Result<OwnedCompletion, TaskError> {
        self.transaction(|tx| {
            let mut task = tx.load(id)?;
            if task.status != Status::InProgress {
                return Ok(OwnedCompletion::NotInProgress(task));
            }
            if task.owner.as_deref() != Some(owner) {
                return Ok(OwnedCompletion::OwnedByOther { task, caller: owner.to_owned() });
            }
            if let Some(gate) = rules.blocking_plan_gate(owner) {
                return Ok(OwnedCompletion::PlanGate { id: task.id, gate });
            }
            if rules.leased_task(owner).as_deref() != Some(task.id.as_str()) {
                match rules.task_cwd(&task) {
                    Ok(cwd) => rules.lease(owner, &task, cwd, false),
                    Err(error) => return Ok(OwnedCompletion::CannotComplete { id: task.id, error }),
                }
            }
            task.status = Status::Completed;
            tx.save(&task)?;
            let unblocked = tx
                .list()?
                .into_iter()
                .flatten()
                .filter(|t| t.status == Status::Pending && !t.blocked_by.is_empty())
                .filter(|t| tx.incomplete_dependencies(t).is_empty())
                .map(|t| t.subject)
                .collect();
            Ok(OwnedCompletion::Completed { task, unblocked })
        })
    }

    /// The tasks an idle owner could claim, in file-name order: pending, unowned, every
    /// dependency completed (the course's `scan_unclaimed_tasks` before its worktree check,
    /// which the team runtime adds). Files that cannot be read are skipped. Not locked: a claim
    /// decides.
    ///
    /// # Errors
    /// As [`TaskStore::list`].
    pub fn ready_tasks(&self) -> Result<Vec<Task>, TaskError> {
        let listed = self.list()?;
        Ok(listed
            .into_iter()
            .flatten()
            .filter(|t| t.status == Status::Pending && t.owner.is_none())
            .filter(|t| self.incomplete_dependencies(t).is_empty())
            .collect())
    }
}
