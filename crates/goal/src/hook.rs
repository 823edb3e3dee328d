//! The goal as the loop's `Stop` hook (course s17: the session-scoped Stop hook `/goal` adds).
//!
//! [`GoalHook`] is an [`Extension`] whose [`Extension::stop_turn`] runs when the model answers
//! without a tool call: it asks the [`GoalController`] (which asks the evaluator through the
//! loop's model, so the call counts in `/usage`), and a `block` becomes
//! [`LoopDecision::Continue`] with the `[Goal still active]…` message, anything else
//! [`LoopDecision::Stop`]. The loop's own cap on continuations
//! ([`agent_core::agent::AgentBuilder::max_stop_continuations`]) is set to the goal's block cap,
//! so both agree on when control returns.
//!
//! Every decision but `allow` is reported as a line, `[goal] ACTION: REASON`, when it is made:
//! after the answer it judged, so a block shows why the model goes on.

use std::sync::Arc;

use agent_core::events::{Level, line};
use agent_core::extension::{Extension, StopContext, StopDecision as LoopDecision};

use crate::controller::{Action, GoalController, StopDecision};

/// Says whether background work is running now (s17 defers the evaluation until its result is
/// back). A harness without background commands passes [`no_background`].
pub type BackgroundRunning = Arc<dyn Fn() -> bool + Send + Sync>;

/// A [`BackgroundRunning`] that is always `false`.
pub fn no_background() -> BackgroundRunning {
    Arc::new(|| false)
}

/// The goal's `Stop` hook. Give it to the agent as an extension, and keep its [`GoalHandle`]
/// for the `/goal` command and the session.
pub struct GoalHook {
    goal: GoalHandle,
    background_running: BackgroundRunning,
}

/// What the hook and the REPL share: the controller and the decision about the last answer.
struct Shared {
    controller: GoalController,
    /// The decision about this turn's last answer; `None` until one was judged (a turn that ended
    /// on an error, a refusal or the round cap).
    last_decision: Option<StopDecision>,
}

/// The goal as the REPL sees it, between turns; a clone shares it with the [`GoalHook`].
#[derive(Clone)]
pub struct GoalHandle(Arc<tokio::sync::Mutex<Shared>>);

impl GoalHandle {
    /// Runs `f` on the controller, waiting for an evaluation in progress.
    pub async fn with<R>(&self, f: impl FnOnce(&mut GoalController) -> R) -> R {
        f(&mut self.0.lock().await.controller)
    }

    /// Runs `f` on the controller now, or answers `None` while an evaluation is in progress (a
    /// REPL command runs between turns, when none is).
    pub fn try_with<R>(&self, f: impl FnOnce(&mut GoalController) -> R) -> Option<R> {
        self.0.try_lock().ok().map(|mut shared| f(&mut shared.controller))
    }

    /// The decision about the last turn's answer, taken (the next turn starts without one).
    pub async fn take_decision(&self) -> Option<StopDecision> {
        self.0.lock().await.last_decision.take()
    }
}

impl GoalHook {
    /// A hook over `controller`, deferring while `background_running` says so.
    pub fn new(controller: GoalController, background_running: BackgroundRunning) -> Self {
        let shared = Shared { controller, last_decision: None };
        Self { goal: GoalHandle(Arc::new(tokio::sync::Mutex::new(shared))), background_running }
    }

    /// The handle the REPL keeps.
    pub fn handle(&self) -> GoalHandle {
        self.goal.clone()
    }
}

/// The line a decision shows: `[goal] ACTION: REASON` (the course prints it after the answer).
pub fn decision_line(decision: &StopDecision) -> Option<String> {
    (decision.action != Action::Allow).then(|| format!("[goal] {}: {}", decision.action, decision.reason))
}

#[async_trait::async_trait]
impl Extension for GoalHook {
    fn begin_turn(&mut self) {
        // Between turns no evaluation holds the lock.
        if let Ok(mut shared) = self.goal.0.try_lock() {
            shared.controller.begin_query();
            shared.last_decision = None;
        }
    }

    async fn stop_turn(&mut self, context: &mut StopContext<'_>) -> LoopDecision {
        let running = (self.background_running)();
        let mut shared = self.goal.0.lock().await;
        let decision =
            shared.controller.evaluate_after_turn(&mut context.model, context.history, running).await;
        if let Some(text) = decision_line(&decision) {
            line(context.events, Level::Mechanism, &text);
        }
        let next = match shared.controller.continuation(&decision) {
            Some(message) => LoopDecision::Continue(message),
            None => LoopDecision::Stop,
        };
        shared.last_decision = Some(decision);
        next
    }
}
