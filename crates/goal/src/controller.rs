//! The goal's state and the decision after a turn (course s17: `GoalController`, `GoalState`,
//! `GoalEvaluation`, `StopDecision`).
//!
//! The decision is split so that what decides is pure: [`GoalController::before_evaluation`]
//! (`allow` without a goal, `defer` while background work runs) and
//! [`GoalController::after_evaluation`] (what the evaluator's answer, or its failure, means for the
//! goal). [`GoalController::evaluate_after_turn`] puts the evaluator's call between them.
//!
//! | evaluator answer | action | the goal |
//! |---|---|---|
//! | (no goal) | `allow` | — |
//! | (background work running) | `defer`, `background work is still running` | stays |
//! | the call or its JSON failed | `error`, `{Type}: {message}` | stays; `last_reason` set |
//! | `ok: true` | `achieved` | cleared, a `met` event |
//! | `impossible: true` | `failed` | cleared, a `failed` event |
//! | not met, blocks in a row ≤ cap | `block`: the model is sent back with [`GoalController::continuation`] | stays |
//! | not met, blocks in a row > cap | `limit` | stays |
//!
//! Every change is recorded as a `goal_status` event ([`GoalStatus`]), so that a host that keeps
//! them can bring an active goal back ([`GoalController::restore`]); a goal that was met,
//! failed, cleared or replaced never comes back, nor fires again (Claude Code's `/goal` has had
//! both bugs).

use std::fmt;
use std::time::Instant;

use agent_core::extension::ModelHandle;
use agent_core::messages::Message;
use serde::{Deserialize, Serialize};

use crate::evaluator::GoalEvaluator;
use crate::{DEFAULT_STOP_HOOK_BLOCK_CAP, GoalError, MAX_GOAL_LENGTH, MAX_REASON_CHARS, cap_chars};

/// The active goal (course: `GoalState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalState {
    /// The completion condition, trimmed, at most [`MAX_GOAL_LENGTH`] characters.
    pub condition: String,
    /// How many evaluations answered (met or not) since the goal was set.
    pub iterations: u32,
    /// When it was set.
    pub set_at: Instant,
    /// The session's tokens when it was set, so the status shows what the goal has cost.
    pub tokens_at_start: u64,
    /// The evaluator's last reason, or the last error.
    pub last_reason: Option<String>,
}

/// One answer of the evaluator (course: `GoalEvaluation`): `{"ok", "reason", "impossible"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalEvaluation {
    /// The condition is met.
    pub ok: bool,
    /// Why, or what is still missing; never empty.
    pub reason: String,
    /// The condition cannot be met; never with `ok`.
    pub impossible: bool,
}

impl GoalEvaluation {
    /// An evaluation saying `ok` for `reason`, not impossible.
    pub fn new(ok: bool, reason: impl Into<String>) -> Self {
        Self { ok, reason: reason.into(), impossible: false }
    }
}

/// What the goal says about a turn's end (the course's `StopDecision.action` strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// No goal: the turn ends as in s01.
    Allow,
    /// Background work is running: the evaluation waits for its result.
    Defer,
    /// The evaluator failed: control returns, the goal stays.
    Error,
    /// The condition is met: the goal is cleared.
    Achieved,
    /// The condition cannot be met: the goal is cleared.
    Failed,
    /// Not met yet: the model is sent back to work.
    Block,
    /// Not met, and the Stop hook has blocked too often in a row: control returns, the goal stays.
    Limit,
}

impl Action {
    /// The course's word: `allow`, `defer`, `error`, `achieved`, `failed`, `block`, `limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Defer => "defer",
            Action::Error => "error",
            Action::Achieved => "achieved",
            Action::Failed => "failed",
            Action::Block => "block",
            Action::Limit => "limit",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The goal's decision about a turn's end, with its reason (course: `StopDecision`; not the
/// loop's [`agent_core::extension`] decision, which this one is turned into).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopDecision {
    /// What happens.
    pub action: Action,
    /// Why; empty for `allow`.
    pub reason: String,
}

impl StopDecision {
    fn new(action: Action, reason: impl Into<String>) -> Self {
        Self { action, reason: reason.into() }
    }
}

/// One change of the goal, as the course records it:
/// `{"type": "goal_status", "condition", "active", "met", "failed", "reason", "iterations", "duration"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename = "goal_status")]
pub struct GoalStatus {
    /// The goal's condition (empty when there was none).
    pub condition: String,
    /// The goal is active after this change.
    pub active: bool,
    /// It was met.
    pub met: bool,
    /// It was found impossible.
    pub failed: bool,
    /// Why: `goal set`, `cleared`, `replaced by a new goal`, the evaluator's reason or error.
    pub reason: String,
    /// Evaluations answered so far.
    #[serde(default)]
    pub iterations: u32,
    /// Seconds since the goal was set.
    #[serde(default)]
    pub duration: f64,
}

/// The session's goal and the Stop hook's decision (course: `GoalController`).
pub struct GoalController {
    evaluator: Box<dyn GoalEvaluator>,
    block_cap: u32,
    /// Every change, oldest first.
    pub events: Vec<GoalStatus>,
    /// The goal, while one is active.
    pub active: Option<GoalState>,
    /// The latest event.
    pub last_status: Option<GoalStatus>,
    /// Unmet evaluations in a row in this submission.
    pub consecutive_blocks: u32,
}

impl fmt::Debug for GoalController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoalController")
            .field("block_cap", &self.block_cap)
            .field("active", &self.active)
            .field("consecutive_blocks", &self.consecutive_blocks)
            .finish_non_exhaustive()
    }
}

impl GoalController {
    /// A controller asking `evaluator`, returning control after `block_cap` unmet evaluations in
    /// a row (default [`DEFAULT_STOP_HOOK_BLOCK_CAP`]).
    ///
    /// # Errors
    /// `block_cap must be at least 1`.
    pub fn new(evaluator: Box<dyn GoalEvaluator>, block_cap: u32) -> Result<Self, GoalError> {
        if block_cap < 1 {
            return Err(GoalError::new("block_cap must be at least 1"));
        }
        Ok(Self {
            evaluator,
            block_cap,
            events: Vec::new(),
            active: None,
            last_status: None,
            consecutive_blocks: 0,
        })
    }

    /// A controller with the default cap.
    pub fn with_default_cap(evaluator: Box<dyn GoalEvaluator>) -> Self {
        Self {
            evaluator,
            block_cap: DEFAULT_STOP_HOOK_BLOCK_CAP,
            events: Vec::new(),
            active: None,
            last_status: None,
            consecutive_blocks: 0,
        }
    }

    /// The cap on unmet evaluations in a row.
    pub fn block_cap(&self) -> u32 {
        self.block_cap
    }

    /// The active goal's condition.
    pub fn condition(&self) -> Option<&str> {
        self.active.as_ref().map(|s| s.condition.as_str())
    }

    /// A new submission starts: the count of blocks in a row restarts (course: `begin_query`).
    pub fn begin_query(&mut self) {
        self.consecutive_blocks = 0;
    }

    /// Sets the goal to `condition` (trimmed), replacing any active one (which is recorded as
    /// `replaced by a new goal`); `tokens_at_start` is the session's token count now.
    ///
    /// # Errors
    /// `goal condition cannot be empty`, `goal condition cannot exceed 4000 characters`; the
    /// goal is then unchanged.
    pub fn set_goal(&mut self, condition: &str, tokens_at_start: u64) -> Result<(), GoalError> {
        let condition = condition.trim();
        if condition.is_empty() {
            return Err(GoalError::new("goal condition cannot be empty"));
        }
        if condition.chars().count() > MAX_GOAL_LENGTH {
            return Err(GoalError::new(format!("goal condition cannot exceed {MAX_GOAL_LENGTH} characters")));
        }
        if self.active.is_some() {
            self.record(false, false, false, "replaced by a new goal");
        }
        self.active = Some(GoalState {
            condition: condition.to_owned(),
            iterations: 0,
            set_at: Instant::now(),
            tokens_at_start,
            last_reason: None,
        });
        self.consecutive_blocks = 0;
        self.record(true, false, false, "goal set");
        Ok(())
    }

    /// Drops the goal: `Goal cleared: {condition}`, or `No goal set`.
    pub fn clear(&mut self) -> String {
        if self.active.is_none() {
            return "No goal set".to_owned();
        }
        self.record(false, false, false, "cleared");
        let state = self.active.take();
        self.consecutive_blocks = 0;
        format!("Goal cleared: {}", state.map(|s| s.condition).unwrap_or_default())
    }

    /// The goal's status (course: `status`): `Goal active: …\nElapsed: Ns\nEvaluations: N\nTokens: N`
    /// and `\nLast reason: …` when there is one; without a goal, the last one's
    /// `Goal achieved: …\nReason: …` or `Goal failed: …\nReason: …`, or `No goal set`.
    /// `current_tokens` is the session's token count now.
    pub fn status(&self, current_tokens: u64) -> String {
        let Some(active) = &self.active else {
            return match &self.last_status {
                Some(s) if s.met => format!("Goal achieved: {}\nReason: {}", s.condition, s.reason),
                Some(s) if s.failed => format!("Goal failed: {}\nReason: {}", s.condition, s.reason),
                _ => "No goal set".to_owned(),
            };
        };
        let mut lines = vec![
            format!("Goal active: {}", active.condition),
            format!("Elapsed: {}s", active.set_at.elapsed().as_secs()),
            format!("Evaluations: {}", active.iterations),
            format!("Tokens: {}", current_tokens.saturating_sub(active.tokens_at_start)),
        ];
        if let Some(reason) = &active.last_reason {
            lines.push(format!("Last reason: {reason}"));
        }
        lines.join("\n")
    }

    /// The decision that needs no evaluator: `allow` without a goal, `defer` while background
    /// work runs; `None` when the evaluator must be asked.
    pub fn before_evaluation(&self, background_running: bool) -> Option<StopDecision> {
        if self.active.is_none() {
            return Some(StopDecision::new(Action::Allow, ""));
        }
        if background_running {
            return Some(StopDecision::new(Action::Defer, "background work is still running"));
        }
        None
    }

    /// What the evaluator's answer means for the goal (see the module's table). `outcome` is the
    /// evaluation, or the error text (`{Type}: {message}`) when the call or its JSON failed. A
    /// reason longer than [`MAX_REASON_CHARS`] is cut. Without an active goal: `allow`.
    pub fn after_evaluation(&mut self, outcome: Result<GoalEvaluation, String>) -> StopDecision {
        let Some(state) = self.active.as_mut() else {
            return StopDecision::new(Action::Allow, "");
        };
        let evaluation = match outcome {
            Ok(evaluation) => evaluation,
            Err(error) => {
                let reason = cap_chars(&error, MAX_REASON_CHARS);
                state.last_reason = Some(reason.clone());
                self.record(true, false, false, &reason);
                return StopDecision::new(Action::Error, reason);
            }
        };
        let reason = cap_chars(&evaluation.reason, MAX_REASON_CHARS);
        state.iterations += 1;
        state.last_reason = Some(reason.clone());
        if evaluation.ok || evaluation.impossible {
            let (action, met, failed) =
                if evaluation.ok { (Action::Achieved, true, false) } else { (Action::Failed, false, true) };
            self.record(false, met, failed, &reason);
            self.active = None;
            self.consecutive_blocks = 0;
            return StopDecision::new(action, reason);
        }
        self.consecutive_blocks += 1;
        self.record(true, false, false, &reason);
        if self.consecutive_blocks > self.block_cap {
            return StopDecision::new(
                Action::Limit,
                format!(
                    "goal remains active, but the Stop hook blocked {} consecutive turns",
                    self.block_cap
                ),
            );
        }
        StopDecision::new(Action::Block, reason)
    }

    /// The Stop hook (course: `evaluate_after_turn`): [`GoalController::before_evaluation`], else
    /// the evaluator on `messages` through `model`, then [`GoalController::after_evaluation`].
    pub async fn evaluate_after_turn(
        &mut self,
        model: &mut ModelHandle<'_>,
        messages: &[Message],
        background_running: bool,
    ) -> StopDecision {
        if let Some(decision) = self.before_evaluation(background_running) {
            return decision;
        }
        let condition = self.condition().unwrap_or_default().to_owned();
        let outcome = self.evaluator.evaluate(model, &condition, messages).await;
        self.after_evaluation(outcome.map_err(|e| e.to_string()))
    }

    /// The user message that sends the model back after a `block` (course):
    /// `[Goal still active]\nCondition: …\nEvaluator: …\nContinue working and surface the missing evidence.`;
    /// `None` for any other decision.
    pub fn continuation(&self, decision: &StopDecision) -> Option<String> {
        if decision.action != Action::Block {
            return None;
        }
        Some(format!(
            "[Goal still active]\nCondition: {}\nEvaluator: {}\nContinue working and surface the missing evidence.",
            self.condition().unwrap_or_default(),
            decision.reason
        ))
    }

    /// A controller brought back from recorded `events` (course: `restore`): the newest one
    /// decides; an active goal is set again with no evaluations, no last reason, a fresh start
    /// time and tokens counted from 0. A goal met, failed, cleared or replaced stays gone.
    ///
    /// # Errors
    /// `block_cap must be at least 1`.
    pub fn restore(
        evaluator: Box<dyn GoalEvaluator>,
        events: &[GoalStatus],
        block_cap: u32,
    ) -> Result<Self, GoalError> {
        let mut controller = Self::new(evaluator, block_cap)?;
        controller.events = events.to_vec();
        if let Some(last) = events.last() {
            controller.last_status = Some(last.clone());
            if last.active {
                controller.active = Some(GoalState {
                    condition: last.condition.clone(),
                    iterations: 0,
                    set_at: Instant::now(),
                    tokens_at_start: 0,
                    last_reason: None,
                });
            }
        }
        Ok(controller)
    }

    /// Records a change as the latest `goal_status` event.
    fn record(&mut self, active: bool, met: bool, failed: bool, reason: &str) {
        let state = self.active.as_ref();
        let event = GoalStatus {
            condition: state.map(|s| s.condition.clone()).unwrap_or_default(),
            active,
            met,
            failed,
            reason: reason.to_owned(),
            iterations: state.map_or(0, |s| s.iterations),
            duration: state.map_or(0.0, |s| s.set_at.elapsed().as_secs_f64()),
        };
        self.events.push(event.clone());
        self.last_status = Some(event);
    }
}
