//! `TeamState`: what one s13 runtime knows about its team, shared by the Lead and every
//! teammate (the course's module globals `active_teammates`, `plan_gates`, `plan_request_ids`,
//! `pending_requests`, `teammate_assignments`, `assignment_versions`, under one lock).
//!
//! The durable half lives in files: tasks in `.tasks/` ([`TaskStore`]), messages in
//! `.mailboxes/` ([`MessageBus`]), worktrees in Git. The in-memory half ([`Registry`]) is lost
//! when the process ends; leases are rebuilt from the tasks ([`TeamState::assignment_cwd`]).
//!
//! Lock order: the task store's file lock first, then the registry's mutex; the registry's
//! mutex is never held while the file lock is waited for, nor while Git runs.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::events::{Events, Level, line};
use agent_core::workspace::Workspace;
use tasks::TaskStore;

use crate::assignment::Lease;
use crate::bus::{BusError, MessageBus, is_valid_agent_name};
use crate::protocol::{PlanGate, ProtocolState};
use crate::worktree::{GitRunner, SystemGit};

/// The names no teammate may take, compared case-insensitively: `lead` is the Lead's mailbox,
/// `agent` the Lead's task owner (the course's `RESERVED_TEAMMATE_NAMES`).
pub const RESERVED_NAMES: [&str; 2] = ["lead", "agent"];

/// The Lead's name on the bus.
pub const LEAD: &str = "lead";

/// The owner the Lead claims and completes tasks as (the course's `owner="agent"`).
pub const LEAD_OWNER: &str = "agent";

/// Where a teammate is in its life (the course's `active_teammates` values), as
/// `list_teammates` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TeammateStatus {
    /// In a model turn or running tools.
    Working,
    /// Submitted a plan and waits for the Lead's review.
    WaitingApproval,
    /// Turn over; waits for a message or a task to claim.
    Idle,
    /// Accepted a shutdown request; about to end.
    Stopping,
}

impl TeammateStatus {
    /// The course's spelling: `working`, `waiting_approval`, `idle`, `stopping`.
    pub fn as_str(self) -> &'static str {
        match self {
            TeammateStatus::Working => "working",
            TeammateStatus::WaitingApproval => "waiting_approval",
            TeammateStatus::Idle => "idle",
            TeammateStatus::Stopping => "stopping",
        }
    }
}

impl fmt::Display for TeammateStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The in-memory team state, behind [`TeamState::registry`]'s lock. Fields are public so the
/// runtime (and its tests) can read them; change them through [`TeamState`]'s methods, which
/// keep them consistent.
#[derive(Debug, Default)]
pub struct Registry {
    /// Active teammates by name, in name order (`list_teammates` sorts by name).
    pub active: BTreeMap<String, TeammateStatus>,
    /// Each owner's plan gate; an owner without one is `not_required`.
    pub plan_gates: HashMap<String, PlanGate>,
    /// The request id of each owner's plan now waiting for review.
    pub plan_request_ids: HashMap<String, String>,
    /// Every protocol request of this run by id, decided ones included (the course's
    /// `pending_requests`).
    pub requests: HashMap<String, ProtocolState>,
    /// Each owner's working-directory lease (the course's `teammate_assignments`).
    pub leases: HashMap<String, Lease>,
    /// Each owner's assignment version: a new claim or a released lease advances it, so an
    /// approval given for earlier work cannot open the gate for later work.
    pub versions: HashMap<String, u64>,
}

/// Why a teammate could not be registered; `Display` is the course's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameRefusal {
    /// Not 1–64 letters, digits, `_`, `-`.
    #[error("Invalid teammate name: use 1-64 letters, digits, underscores, or dashes")]
    Invalid,
    /// `lead` or `agent`, in any case.
    #[error("Invalid teammate name: '{0}' is reserved by the runtime")]
    Reserved(String),
    /// An active teammate has this name, compared case-insensitively.
    #[error("Teammate '{0}' already exists")]
    Exists(String),
}

/// One s13 runtime's team: the task store, the bus, Git, and the [`Registry`]. Shared as
/// `Arc<TeamState>` by the Lead's tools and every teammate task.
pub struct TeamState {
    pub(crate) workspace: Workspace,
    pub(crate) store: TaskStore,
    pub(crate) bus: MessageBus,
    pub(crate) git: Arc<dyn GitRunner>,
    pub(crate) events: Events,
    pub(crate) registry: Mutex<Registry>,
    pub(crate) request_ids: Mutex<fastrand::Rng>,
}

impl fmt::Debug for TeamState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TeamState").field("root", &self.workspace.root()).finish_non_exhaustive()
    }
}

impl TeamState {
    /// The team of `workspace` over `store` (made with [`TaskStore::for_teams`] by the caller,
    /// so that the demo may seed its ids), reporting on `events`; Git is the system's `git`,
    /// request ids are drawn at random. Nothing is created on disk.
    pub fn new(workspace: &Workspace, store: TaskStore, events: Events) -> Self {
        Self {
            workspace: workspace.clone(),
            store,
            bus: MessageBus::new(workspace, events.clone()),
            git: Arc::new(SystemGit),
            events,
            registry: Mutex::new(Registry::default()),
            request_ids: Mutex::new(fastrand::Rng::new()),
        }
    }

    /// The team with `git` running Git (a test's wrapper that fails on purpose).
    pub fn with_git(mut self, git: Arc<dyn GitRunner>) -> Self {
        self.git = git;
        self
    }

    /// The team drawing request ids from a generator seeded with `seed` (the offline demo's
    /// recorded turns name the ids they review).
    pub fn with_request_seed(self, seed: u64) -> Self {
        if let Ok(mut rng) = self.request_ids.lock() {
            *rng = fastrand::Rng::with_seed(seed);
        }
        self
    }

    /// The workspace (`WORKDIR`).
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The shared task store.
    pub fn store(&self) -> &TaskStore {
        &self.store
    }

    /// The mailboxes.
    pub fn bus(&self) -> &MessageBus {
        &self.bus
    }

    /// Where the team reports what it does.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The in-memory state, locked. Do not hold it while calling a method of this type or of
    /// the task store.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reports a line on the team's listener.
    pub(crate) fn say(&self, text: &str) {
        line(&*self.events, Level::Info, text);
    }

    /// The workspace root, where a task without a worktree runs.
    pub(crate) fn root(&self) -> PathBuf {
        self.workspace.root().to_owned()
    }

    /// Registers a teammate before its loop starts (the course's `spawn_teammate_thread`,
    /// first half): `working`, its plan gate `required` when `require_plan` (else
    /// `not_required`), assignment version 0. A spawn that then fails to claim its task calls
    /// [`TeamState::unregister_teammate`].
    ///
    /// # Errors
    /// [`NameRefusal`], checked in the course's order: invalid, reserved, duplicate.
    pub fn register_teammate(&self, name: &str, require_plan: bool) -> Result<(), NameRefusal> {
        if !is_valid_agent_name(name) {
            return Err(NameRefusal::Invalid);
        }
        if RESERVED_NAMES.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(NameRefusal::Reserved(name.to_owned()));
        }
        let mut registry = self.registry();
        if registry.active.keys().any(|existing| existing.eq_ignore_ascii_case(name)) {
            return Err(NameRefusal::Exists(name.to_owned()));
        }
        registry.active.insert(name.to_owned(), TeammateStatus::Working);
        let gate = if require_plan { PlanGate::Required } else { PlanGate::NotRequired };
        registry.plan_gates.insert(name.to_owned(), gate);
        registry.versions.insert(name.to_owned(), 0);
        Ok(())
    }

    /// Forgets a teammate whose loop ended or never started: not active, no gate, no plan
    /// request waiting. Its lease is released by [`TeamState::release_teammate_assignment`].
    pub fn unregister_teammate(&self, name: &str) {
        let mut registry = self.registry();
        registry.active.remove(name);
        registry.plan_gates.remove(name);
        registry.plan_request_ids.remove(name);
    }

    /// The teammate's status, `None` when it is not active.
    pub fn status(&self, name: &str) -> Option<TeammateStatus> {
        self.registry().active.get(name).copied()
    }

    /// Sets an active teammate's status; nothing for a name that is not active.
    pub fn set_status(&self, name: &str, status: TeammateStatus) {
        if let Some(entry) = self.registry().active.get_mut(name) {
            *entry = status;
        }
    }

    /// Whether `name` is an active teammate (exact name, as the course's `in active_teammates`).
    pub fn is_active(&self, name: &str) -> bool {
        self.registry().active.contains_key(name)
    }

    /// The active teammates and their status, in name order.
    pub fn teammates(&self) -> Vec<(String, TeammateStatus)> {
        self.registry().active.iter().map(|(name, status)| (name.clone(), *status)).collect()
    }

    /// The Lead's `send_message`: `Teammate '{to}' is not active`, or the content sent as a
    /// plain `message` and `Sent to {to}`. A plain message changes no gate and no version.
    ///
    /// # Errors
    /// [`BusError`] when it cannot be delivered.
    pub fn lead_send_message(&self, to: &str, content: &str) -> Result<String, BusError> {
        if !self.is_active(to) {
            return Ok(format!("Teammate '{to}' is not active"));
        }
        self.bus.send(LEAD, to, content, "message", serde_json::Map::new())?;
        Ok(format!("Sent to {to}"))
    }

    /// A teammate's `send_message`: to `lead` or an active teammate, else
    /// `Agent '{to}' is not active` (nothing written); `Sent to {to}`.
    ///
    /// # Errors
    /// [`BusError`] when it cannot be delivered.
    pub fn teammate_send_message(&self, from: &str, to: &str, content: &str) -> Result<String, BusError> {
        if to != LEAD && !self.is_active(to) {
            return Ok(format!("Agent '{to}' is not active"));
        }
        self.bus.send(from, to, content, "message", serde_json::Map::new())?;
        Ok(format!("Sent to {to}"))
    }

    /// The `list_teammates` result: `No active teammates.`, or `{name}: {status}` lines in
    /// name order.
    pub fn list_teammates(&self) -> String {
        let teammates = self.teammates();
        if teammates.is_empty() {
            return "No active teammates.".to_owned();
        }
        teammates.iter().map(|(name, status)| format!("{name}: {status}")).collect::<Vec<_>>().join("\n")
    }
}
