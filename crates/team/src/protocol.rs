//! Typed requests with request ids: plan approval and shutdown (the course's s13 team
//! protocols, COURSE-s10-s17 §4.3–4.4).
//!
//! ```text
//!  plan:      Lead request_plan ──plan_request──► teammate   gate: required
//!             teammate submit_plan ──plan_approval_request {request_id}──► Lead   gate: pending
//!             Lead review_plan ──plan_approval_response {request_id, approve}──► teammate
//!             teammate applies it (apply_plan_response)   gate: approved | rejected
//!  shutdown:  Lead request_shutdown ──shutdown_request {request_id}──► teammate
//!             teammate accepts it (apply_shutdown_request) ──shutdown_response──► Lead
//!             Lead matches it (match_response)             request: approved
//! ```
//!
//! Every response must name a request that is pending, of its type, from the agent the request
//! went to, for the same assignment: a stale, forged or replayed message changes nothing and is
//! answered `[Ignored … request mismatch]`. A teammate's gate changes only when it applies the
//! Lead's response, never when the Lead decides.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::bus::{BusError, Message};
use crate::state::{LEAD, TeamState, TeammateStatus};

/// A teammate's permission to change the workspace under the plan protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlanGate {
    /// No plan is asked for: `bash`, `write_file`, `edit_file` run.
    #[default]
    NotRequired,
    /// A plan must be submitted first.
    Required,
    /// A plan waits for the Lead's review.
    Pending,
    /// The Lead approved the current plan: mutating tools run.
    Approved,
    /// The Lead rejected it: a new plan must be submitted.
    Rejected,
}

impl PlanGate {
    /// The course's spelling: `not_required`, `required`, `pending`, `approved`, `rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanGate::NotRequired => "not_required",
            PlanGate::Required => "required",
            PlanGate::Pending => "pending",
            PlanGate::Approved => "approved",
            PlanGate::Rejected => "rejected",
        }
    }

    /// Whether `bash`, `write_file` and `edit_file` may run (`approved` or `not_required`).
    pub fn allows_changes(self) -> bool {
        matches!(self, PlanGate::NotRequired | PlanGate::Approved)
    }

    /// Whether the owner's task may be completed (not `required`, `pending`, `rejected`).
    pub fn allows_completion(self) -> bool {
        self.allows_changes()
    }
}

impl fmt::Display for PlanGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestKind {
    /// The Lead asks a teammate to shut down (`shutdown`).
    Shutdown,
    /// A teammate asks the Lead to approve its plan (`plan_approval`).
    PlanApproval,
}

impl RequestKind {
    /// The course's spelling: `shutdown`, `plan_approval`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Shutdown => "shutdown",
            RequestKind::PlanApproval => "plan_approval",
        }
    }

    /// The message type that answers it: `shutdown_response`, `plan_approval_response`.
    pub fn response_type(self) -> &'static str {
        match self {
            RequestKind::Shutdown => "shutdown_response",
            RequestKind::PlanApproval => "plan_approval_response",
        }
    }
}

/// Where a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestStatus {
    /// Not decided yet.
    Pending,
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
}

impl RequestStatus {
    /// The course's spelling: `pending`, `approved`, `rejected`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Approved => "approved",
            RequestStatus::Rejected => "rejected",
        }
    }

    fn decided(approve: bool) -> Self {
        if approve { RequestStatus::Approved } else { RequestStatus::Rejected }
    }
}

impl fmt::Display for RequestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request (the course's `ProtocolState` dataclass).
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolState {
    /// `req_` and six digits.
    pub request_id: String,
    /// What it asks.
    pub kind: RequestKind,
    /// Who asked (`lead` for a shutdown, the teammate for a plan).
    pub sender: String,
    /// Who must answer (the teammate for a shutdown, `lead` for a plan).
    pub target: String,
    /// Where it is.
    pub status: RequestStatus,
    /// The plan's text; empty for a shutdown.
    pub payload: String,
    /// The sender's assignment version when a plan was submitted.
    pub work_version: Option<u64>,
    /// The task the sender held when a plan was submitted.
    pub task_id: Option<String>,
    /// When it was made, seconds since the Unix epoch.
    pub created_at: f64,
}

/// What [`TeamState::match_response`] made of a response the Lead received; `Display` is the
/// course's `[protocol]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatchOutcome {
    /// `  [protocol] unknown request_id: {id}`.
    Unknown(String),
    /// `  [protocol] expected {expected}, got {got}`.
    WrongType {
        /// The response type the request wants.
        expected: &'static str,
        /// The type that came.
        got: String,
    },
    /// `  [protocol] {id} responder mismatch`: not from the request's target, or not to its sender.
    ResponderMismatch(String),
    /// `  [protocol] {id} already {status}`.
    AlreadyDecided(String, RequestStatus),
    /// `  [protocol] {id} -> {status}`: the request is now decided.
    Matched(String, RequestStatus),
}

impl fmt::Display for MatchOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatchOutcome::Unknown(id) => write!(f, "  [protocol] unknown request_id: {id}"),
            MatchOutcome::WrongType { expected, got } => {
                write!(f, "  [protocol] expected {expected}, got {got}")
            }
            MatchOutcome::ResponderMismatch(id) => write!(f, "  [protocol] {id} responder mismatch"),
            MatchOutcome::AlreadyDecided(id, status) => write!(f, "  [protocol] {id} already {status}"),
            MatchOutcome::Matched(id, status) => write!(f, "  [protocol] {id} -> {status}"),
        }
    }
}

/// Why `review_plan` refused; `Display` is the course's result text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewRefusal {
    /// No such request.
    #[error("Request {0} not found")]
    NotFound(String),
    /// A shutdown request, not a plan.
    #[error("Request {0} is not a plan")]
    NotAPlan(String),
    /// Decided before.
    #[error("Request {0} already {1}")]
    AlreadyDecided(String, RequestStatus),
    /// The teammate has moved to other work (a new claim, a released lease) since submitting.
    #[error("Request {0} belongs to an earlier assignment")]
    EarlierAssignment(String),
    /// The teammate has submitted a newer plan since.
    #[error("Request {0} is not the current plan")]
    NotCurrent(String),
}

/// A tool's target that is not an active teammate: `Teammate '{name}' is not active`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Teammate '{0}' is not active")]
pub struct NotActive(pub String);

/// `submit_plan` while a plan already waits: `A plan is already waiting for review.`
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("A plan is already waiting for review.")]
pub struct PlanAlreadyPending;

/// The notice a teammate gets for a response that does not match its current plan.
pub const IGNORED_PLAN_RESPONSE: &str = "[Ignored plan response: request mismatch]";

/// The notice a teammate gets for a shutdown request that does not match an active one.
pub const IGNORED_SHUTDOWN_REQUEST: &str = "[Ignored shutdown request: request mismatch]";

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// `{"request_id": id}`, the metadata of a request message.
pub fn request_metadata(request_id: &str) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("request_id".into(), request_id.into());
    map
}

/// `{"request_id": id, "approve": approve}`, the metadata of a response message.
pub fn response_metadata(request_id: &str, approve: bool) -> Map<String, Value> {
    let mut map = request_metadata(request_id);
    map.insert("approve".into(), approve.into());
    map
}

/// The Lead's wake message for the events of one inbox (the course's `format_team_events`):
/// `[Team events]`, then one line per message, `[{type}{ request_id=ID}] {from}: {content}`.
pub fn format_team_events(messages: &[Message]) -> String {
    let lines: Vec<String> = messages
        .iter()
        .map(|m| {
            let suffix = m.request_id().map(|id| format!(" request_id={id}")).unwrap_or_default();
            format!("[{}{suffix}] {}: {}", m.kind, m.from, m.content)
        })
        .collect();
    format!("[Team events]\n{}", lines.join("\n"))
}

impl TeamState {
    /// A fresh request id, `req_` and six digits, not among the requests of this run (the
    /// course's `new_request_id`, which draws `random.randint(0, 999999)`).
    fn new_request_id(&self, taken: &std::collections::HashMap<String, ProtocolState>) -> String {
        let mut rng = self.request_ids.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let id = format!("req_{:06}", rng.u32(0..=999_999));
            if !taken.contains_key(&id) {
                return id;
            }
        }
    }

    /// A teammate's plan gate (`not_required` when it has none).
    pub fn plan_gate(&self, owner: &str) -> PlanGate {
        self.registry().plan_gates.get(owner).copied().unwrap_or_default()
    }

    /// The request `id`, as it is now.
    pub fn request(&self, id: &str) -> Option<ProtocolState> {
        self.registry().requests.get(id).cloned()
    }

    /// The Lead's `request_shutdown`, state only: a pending `shutdown` request from `lead` to
    /// `teammate`. Returns its id; the caller sends `Finish the current step and shut down.` as
    /// `shutdown_request` with [`request_metadata`] (see [`TeamState::send_shutdown_request`]).
    ///
    /// # Errors
    /// [`NotActive`].
    pub fn request_shutdown(&self, teammate: &str) -> Result<String, NotActive> {
        let mut registry = self.registry();
        if !registry.active.contains_key(teammate) {
            return Err(NotActive(teammate.to_owned()));
        }
        let request_id = self.new_request_id(&registry.requests);
        registry.requests.insert(
            request_id.clone(),
            ProtocolState {
                request_id: request_id.clone(),
                kind: RequestKind::Shutdown,
                sender: LEAD.to_owned(),
                target: teammate.to_owned(),
                status: RequestStatus::Pending,
                payload: String::new(),
                work_version: None,
                task_id: None,
                created_at: now(),
            },
        );
        Ok(request_id)
    }

    /// [`TeamState::request_shutdown`] and its message: returns the course's result,
    /// `Shutdown requested from {teammate} ({id})`, or `Teammate '{t}' is not active`.
    ///
    /// # Errors
    /// [`BusError`] when the request cannot be delivered; the request then stays recorded,
    /// pending, as in the course.
    pub fn send_shutdown_request(&self, teammate: &str) -> Result<String, BusError> {
        let request_id = match self.request_shutdown(teammate) {
            Ok(id) => id,
            Err(not_active) => return Ok(not_active.to_string()),
        };
        self.bus.send(
            LEAD,
            teammate,
            "Finish the current step and shut down.",
            "shutdown_request",
            request_metadata(&request_id),
        )?;
        Ok(format!("Shutdown requested from {teammate} ({request_id})"))
    }

    /// The Lead's `request_plan` whole: [`TeamState::request_plan`], then `task` sent as
    /// `plan_request`. Returns the tool's result: `Plan requested from {teammate}`, or
    /// `Teammate '{t}' is not active`.
    ///
    /// # Errors
    /// [`BusError`] when the request cannot be delivered (the gate is `required` already).
    pub fn send_plan_request(&self, teammate: &str, task: &str) -> Result<String, BusError> {
        if let Err(not_active) = self.request_plan(teammate) {
            return Ok(not_active.to_string());
        }
        self.bus.send(LEAD, teammate, task, "plan_request", Map::new())?;
        Ok(format!("Plan requested from {teammate}"))
    }

    /// A teammate's `submit_plan` whole: [`TeamState::submit_plan`], then the plan sent to
    /// `lead` as `plan_approval_request`. Returns the tool's result:
    /// `Plan submitted ({id}). Wait for Lead's decision.`, or
    /// `A plan is already waiting for review.`
    ///
    /// # Errors
    /// [`BusError`] when the plan cannot be delivered (it is then recorded, pending).
    pub fn send_plan_submission(&self, name: &str, plan: &str) -> Result<String, BusError> {
        let request_id = match self.submit_plan(name, plan) {
            Ok(id) => id,
            Err(pending) => return Ok(pending.to_string()),
        };
        self.bus.send(name, LEAD, plan, "plan_approval_request", request_metadata(&request_id))?;
        Ok(format!("Plan submitted ({request_id}). Wait for Lead's decision."))
    }

    /// The Lead's `review_plan` whole: [`TeamState::review_plan`], then the decision sent to the
    /// plan's author as `plan_approval_response` with [`response_metadata`]: `feedback`, or
    /// `Plan approved.` / `Revise the plan and submit it again.` when it is empty. Returns the
    /// tool's result: `Plan approved ({id})`, `Plan rejected ({id})`, or the refusal's text.
    ///
    /// # Errors
    /// [`BusError`] when the response cannot be delivered (the request stays decided).
    pub fn send_plan_review(
        &self,
        request_id: &str,
        approve: bool,
        feedback: &str,
    ) -> Result<String, BusError> {
        let state = match self.review_plan(request_id, approve) {
            Ok(state) => state,
            Err(refusal) => return Ok(refusal.to_string()),
        };
        let content = match (feedback.is_empty(), approve) {
            (false, _) => feedback,
            (true, true) => "Plan approved.",
            (true, false) => "Revise the plan and submit it again.",
        };
        self.bus.send(
            LEAD,
            &state.sender,
            content,
            "plan_approval_response",
            response_metadata(request_id, approve),
        )?;
        Ok(format!("Plan {} ({request_id})", state.status))
    }

    /// A teammate's answer to a shutdown request it accepted
    /// ([`TeamState::apply_shutdown_request`]): `Shutdown acknowledged.` to `lead` as
    /// `shutdown_response` with `{"request_id", "approve": true}`.
    ///
    /// # Errors
    /// [`BusError`] when it cannot be delivered.
    pub fn acknowledge_shutdown(&self, name: &str, request_id: &str) -> Result<Message, BusError> {
        self.bus.send(
            name,
            LEAD,
            "Shutdown acknowledged.",
            "shutdown_response",
            response_metadata(request_id, true),
        )
    }

    /// The Lead's `request_plan`, state only: the teammate's gate becomes `required`. The
    /// caller sends the task text as `plan_request`.
    ///
    /// # Errors
    /// [`NotActive`].
    pub fn request_plan(&self, teammate: &str) -> Result<(), NotActive> {
        let mut registry = self.registry();
        if !registry.active.contains_key(teammate) {
            return Err(NotActive(teammate.to_owned()));
        }
        registry.plan_gates.insert(teammate.to_owned(), PlanGate::Required);
        Ok(())
    }

    /// A teammate's `submit_plan`, state only: a pending `plan_approval` request from `name`
    /// to `lead`, carrying `plan`, the teammate's assignment version and task; gate `pending`,
    /// status `waiting_approval`. Returns the request id; the caller sends the plan as
    /// `plan_approval_request` with [`request_metadata`] and answers
    /// `Plan submitted ({id}). Wait for Lead's decision.`
    ///
    /// # Errors
    /// [`PlanAlreadyPending`] when the gate is already `pending`.
    pub fn submit_plan(&self, name: &str, plan: &str) -> Result<String, PlanAlreadyPending> {
        let mut registry = self.registry();
        let task_id = registry.leases.get(name).map(|lease| lease.task_id.clone());
        let work_version = registry.versions.get(name).copied().unwrap_or(0);
        if registry.plan_gates.get(name) == Some(&PlanGate::Pending) {
            return Err(PlanAlreadyPending);
        }
        let request_id = self.new_request_id(&registry.requests);
        registry.requests.insert(
            request_id.clone(),
            ProtocolState {
                request_id: request_id.clone(),
                kind: RequestKind::PlanApproval,
                sender: name.to_owned(),
                target: LEAD.to_owned(),
                status: RequestStatus::Pending,
                payload: plan.to_owned(),
                work_version: Some(work_version),
                task_id,
                created_at: now(),
            },
        );
        registry.plan_gates.insert(name.to_owned(), PlanGate::Pending);
        registry.plan_request_ids.insert(name.to_owned(), request_id.clone());
        if let Some(status) = registry.active.get_mut(name) {
            *status = TeammateStatus::WaitingApproval;
        }
        Ok(request_id)
    }

    /// The Lead's `review_plan`, state only: the request becomes approved or rejected, when it
    /// is a pending plan of the teammate's current assignment and its latest plan. Returns the
    /// decided request; the caller sends the feedback (or `Plan approved.` /
    /// `Revise the plan and submit it again.`) as `plan_approval_response` with
    /// [`response_metadata`] to its sender, and answers `Plan approved ({id})` /
    /// `Plan rejected ({id})`. The teammate's gate does not change here.
    ///
    /// # Errors
    /// [`ReviewRefusal`], in the course's order.
    pub fn review_plan(&self, request_id: &str, approve: bool) -> Result<ProtocolState, ReviewRefusal> {
        let mut registry = self.registry();
        let Some(state) = registry.requests.get(request_id) else {
            return Err(ReviewRefusal::NotFound(request_id.to_owned()));
        };
        let sender = state.sender.clone();
        let work_version = registry.versions.get(&sender).copied().unwrap_or(0);
        let task_id = registry.leases.get(&sender).map(|lease| lease.task_id.clone());
        let current = registry.plan_request_ids.get(&sender).cloned();
        let Some(state) = registry.requests.get_mut(request_id) else {
            return Err(ReviewRefusal::NotFound(request_id.to_owned()));
        };
        if state.kind != RequestKind::PlanApproval {
            return Err(ReviewRefusal::NotAPlan(request_id.to_owned()));
        }
        if state.status != RequestStatus::Pending {
            return Err(ReviewRefusal::AlreadyDecided(request_id.to_owned(), state.status));
        }
        if state.work_version != Some(work_version) || state.task_id != task_id {
            return Err(ReviewRefusal::EarlierAssignment(request_id.to_owned()));
        }
        if current.as_deref() != Some(request_id) {
            return Err(ReviewRefusal::NotCurrent(request_id.to_owned()));
        }
        state.status = RequestStatus::decided(approve);
        Ok(state.clone())
    }

    /// The Lead's side of a response (the course's `match_response`): the request must exist,
    /// want this response type, come from its target to its sender, and be pending; then it is
    /// decided. Reports the outcome's `[protocol]` line and returns it.
    pub fn match_response(
        &self,
        response_type: &str,
        request_id: &str,
        approve: bool,
        from: &str,
        to: &str,
    ) -> MatchOutcome {
        let outcome = {
            let mut registry = self.registry();
            match registry.requests.get_mut(request_id) {
                None => MatchOutcome::Unknown(request_id.to_owned()),
                Some(state) if state.kind.response_type() != response_type => MatchOutcome::WrongType {
                    expected: state.kind.response_type(),
                    got: response_type.to_owned(),
                },
                Some(state) if from != state.target || to != state.sender => {
                    MatchOutcome::ResponderMismatch(request_id.to_owned())
                }
                Some(state) if state.status != RequestStatus::Pending => {
                    MatchOutcome::AlreadyDecided(request_id.to_owned(), state.status)
                }
                Some(state) => {
                    state.status = RequestStatus::decided(approve);
                    MatchOutcome::Matched(request_id.to_owned(), state.status)
                }
            }
        };
        self.say(&outcome.to_string());
        outcome
    }

    /// Reads the Lead's mailbox and, before the model sees anything, matches every
    /// `…_response` that names a request id (the course's `consume_lead_inbox`). Returns the
    /// messages, for [`format_team_events`].
    ///
    /// # Errors
    /// As [`crate::bus::MessageBus::read_inbox`].
    pub fn consume_lead_inbox(&self) -> Result<Vec<Message>, BusError> {
        let messages = self.bus.read_inbox(LEAD)?;
        for message in &messages {
            if let Some(request_id) = message.request_id()
                && message.kind.ends_with("_response")
            {
                self.match_response(&message.kind, request_id, message.approve(), &message.from, &message.to);
            }
        }
        Ok(messages)
    }

    /// A teammate's side of a `shutdown_request` (the course's `apply_shutdown_request`): valid
    /// only from `lead` to `name`, naming a pending shutdown request from `lead` to `name`, while
    /// `name` is not already stopping. Then `name` is `stopping` and the request id is returned;
    /// the caller answers `Shutdown acknowledged.` as `shutdown_response` with
    /// [`response_metadata`]`(id, true)` and ends the loop.
    ///
    /// # Errors
    /// [`IGNORED_SHUTDOWN_REQUEST`], the notice for the teammate's next turn; nothing changes.
    pub fn apply_shutdown_request(&self, name: &str, message: &Message) -> Result<String, &'static str> {
        let request_id = message.request_id().unwrap_or_default();
        let mut registry = self.registry();
        let stopping = registry.active.get(name) == Some(&TeammateStatus::Stopping);
        let valid = message.from == LEAD
            && message.to == name
            && !stopping
            && registry.requests.get(request_id).is_some_and(|state| {
                state.kind == RequestKind::Shutdown
                    && state.sender == LEAD
                    && state.target == name
                    && state.status == RequestStatus::Pending
            });
        if !valid {
            return Err(IGNORED_SHUTDOWN_REQUEST);
        }
        if let Some(status) = registry.active.get_mut(name) {
            *status = TeammateStatus::Stopping;
        }
        Ok(request_id.to_owned())
    }

    /// A teammate's side of a `plan_approval_response` (the course's `apply_plan_response`):
    /// valid only from `lead` to `name`, for the teammate's current plan request, of its current
    /// assignment (version and task), already decided by the Lead, with `approve` agreeing with
    /// that decision. Then the gate becomes the decision, the teammate `working`, and the notice
    /// `[Plan approved] {content}` / `[Plan rejected] {content}` is returned.
    ///
    /// # Errors
    /// [`IGNORED_PLAN_RESPONSE`]; the gate does not change.
    pub fn apply_plan_response(&self, name: &str, message: &Message) -> Result<String, &'static str> {
        let request_id = message.request_id().unwrap_or_default();
        let mut registry = self.registry();
        let work_version = registry.versions.get(name).copied().unwrap_or(0);
        let task_id = registry.leases.get(name).map(|lease| lease.task_id.clone());
        let decided = registry.requests.get(request_id).and_then(|state| {
            let valid = message.from == LEAD
                && message.to == name
                && registry.plan_request_ids.get(name).map(String::as_str) == Some(request_id)
                && state.kind == RequestKind::PlanApproval
                && state.sender == name
                && state.target == LEAD
                && state.work_version == Some(work_version)
                && state.task_id == task_id
                && state.status != RequestStatus::Pending
                && message.approve() == (state.status == RequestStatus::Approved);
            valid.then_some(state.status)
        });
        let Some(status) = decided else { return Err(IGNORED_PLAN_RESPONSE) };
        let gate = if status == RequestStatus::Approved { PlanGate::Approved } else { PlanGate::Rejected };
        registry.plan_gates.insert(name.to_owned(), gate);
        if let Some(entry) = registry.active.get_mut(name) {
            *entry = TeammateStatus::Working;
        }
        registry.plan_request_ids.remove(name);
        Ok(format!("[Plan {status}] {}", message.content))
    }
}
