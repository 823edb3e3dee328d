//! At-least-once delivery inside the agent loop (course s12 `agent_loop`, steps 1–3): the
//! extension that takes a scheduled turn's job from the queue, acknowledges it once the model
//! accepted a request carrying it, and puts it back when the request failed.
//!
//! ```text
//!  turn "[Scheduled] run tests" ─► pre_inference: take the job from the queue, [cron] delivered
//!        │
//!        ├─ request failed ─► on_request_error: the message leaves the history, the job is
//!        │                    pending and queued again (announced from the next minute on)
//!        └─ a response came ─► acknowledge: one-shot removed, recurring not pending, saved
//! ```
//!
//! A scheduled turn's prompt is its user message, as the turn source adds it: one job per turn.
//! A response is known to have come when the loop goes on after it (its tools ran, the `Stop`
//! hook ran, or the next request is being prepared) or when the history holds the answer after
//! the message. When neither can be seen (a conversation cleared in between), the job is
//! delivered again: at least once, never lost.

use std::sync::Arc;

use agent_core::error::ApiError;
use agent_core::events::Level;
use agent_core::extension::{AfterBatch, AnswerContext, Decision, Extension, LoopContext, Recovery};
use agent_core::messages::{Message, MessageContent, MessagesResponse, Role};

use crate::job::CronJob;
use crate::scheduler::{CronScheduler, preview};

/// The text a scheduled turn's tool call gets instead of the question `Allow? [y/N]` (course
/// s12 `request_permission` off the main thread): no one is there to answer.
pub const SCHEDULED_REFUSAL: &str = "Permission denied: scheduled turns cannot request interactive approval";

/// The prefix of a scheduled turn's prompt (course: `[Scheduled] {prompt}`).
pub const SCHEDULED_PREFIX: &str = "[Scheduled] ";

/// A delivery the model has not yet accepted.
struct InFlight {
    job: CronJob,
    /// Where the scheduled message is in the history.
    start: usize,
}

/// The delivery extension. Add it **last** to the agent's extensions, so that any extension
/// that recovers a failed request (compaction) is asked first.
pub struct CronDelivery {
    cron: Arc<CronScheduler>,
    in_flight: Option<InFlight>,
    /// This turn's prompt was already looked at.
    checked: bool,
}

impl CronDelivery {
    /// Delivery from `cron`'s queue.
    pub fn new(cron: Arc<CronScheduler>) -> Self {
        Self { cron, in_flight: None, checked: false }
    }

    /// The model accepted the request: the job is acknowledged.
    fn acknowledge(&mut self) {
        if let Some(flight) = self.in_flight.take()
            && let Err(e) = self.cron.acknowledge_cron_jobs(std::slice::from_ref(&flight.job))
        {
            self.cron.say(Level::Warning, &format!("[cron] acknowledgement failed: {e}"));
        }
    }

    /// Settles a delivery from what the history shows: an assistant message after the
    /// scheduled one means the model answered it.
    fn settle(&mut self, history: &[Message]) {
        let Some(flight) = &self.in_flight else { return };
        let answered = is_message(history.get(flight.start), &crate::scheduled_message(&flight.job.prompt))
            && history.get(flight.start + 1).is_some_and(|m| m.role == Role::Assistant);
        if answered {
            self.acknowledge();
        } else if let Some(flight) = self.in_flight.take() {
            self.cron.restore_cron_jobs(&[flight.job]);
        }
    }
}

/// Whether `message` is the user text `text`.
fn is_message(message: Option<&Message>, text: &str) -> bool {
    message
        .is_some_and(|m| m.role == Role::User && matches!(&m.content, MessageContent::Text(t) if t == text))
}

#[async_trait::async_trait]
impl Extension for CronDelivery {
    fn begin_turn(&mut self) {
        self.checked = false;
    }

    fn new_conversation(&mut self) {
        // The history that would show whether the model answered is gone: deliver again.
        if let Some(flight) = self.in_flight.take() {
            self.cron.restore_cron_jobs(&[flight.job]);
        }
        self.checked = false;
    }

    /// A turn announced for a job cancelled before it began does not run.
    fn user_prompt_submit(&mut self, prompt: &str) -> Decision {
        if prompt.starts_with(SCHEDULED_PREFIX) && self.cron.take_withdrawn(prompt) {
            return Decision::Block("[cron] skipped: its job was cancelled before the turn began".into());
        }
        Decision::Continue
    }

    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        // A request before this one came back (the loop goes on), or a turn before this one
        // ended in a way no other hook saw.
        self.settle(context.history);
        if std::mem::replace(&mut self.checked, true) {
            return Ok(());
        }
        let Some(prompt) = context.active_request.filter(|p| p.starts_with(SCHEDULED_PREFIX)) else {
            return Ok(());
        };
        let Some(start) = context.history.iter().rposition(|m| is_message(Some(m), prompt)) else {
            return Ok(());
        };
        if let Some(job) = self.cron.take_queued(prompt) {
            self.cron
                .say(Level::Mechanism, &format!("[cron] delivered {}: {}", job.id, preview(&job.prompt)));
            self.in_flight = Some(InFlight { job, start });
        }
        Ok(())
    }

    async fn on_request_error(
        &mut self,
        context: &mut LoopContext<'_>,
        _error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        if let Some(flight) = self.in_flight.take() {
            // The model never saw it: the history goes back to before the scheduled message,
            // and the job waits for another turn.
            if is_message(context.history.get(flight.start), &crate::scheduled_message(&flight.job.prompt)) {
                context.history.truncate(flight.start);
            }
            self.cron.restore_cron_jobs(&[flight.job]);
        }
        Ok(Recovery::GiveUp)
    }

    async fn after_tool_batch(&mut self, _context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        self.acknowledge();
        Ok(AfterBatch::Continue)
    }

    fn stop(&mut self, _response: &MessagesResponse) -> Option<String> {
        self.acknowledge();
        None
    }

    async fn after_answer(&mut self, context: &mut AnswerContext<'_>) {
        self.settle(context.history);
    }
}
