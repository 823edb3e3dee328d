//! One submission of s17's session (course s17: `AgentSession.submit`,
//! `submit_background_result`): a `/goal` line is answered or turned into the goal and its
//! prompt, anything else is a prompt, and the loop runs with [`GoalHook`](crate::hook::GoalHook) as its `Stop` hook.
//!
//! | typed | what happens | status |
//! |---|---|---|
//! | `/goal` | the goal's status; no model call | `status` |
//! | `/goal clear` (or an alias) | `Goal cleared: …` / `No goal set` | `cleared` |
//! | `/goal <condition>` | the goal is set, the condition is sent as the user's message | the goal's last decision |
//! | anything else | sent as it is | `allow` without a goal, else the goal's last decision |
//!
//! A turn that ended before an answer was judged (the round cap `MAX_TURNS`, `max_tokens`, a
//! refusal) is `max_turns` when the rounds ran out, else `stopped`; an error of the loop is the
//! caller's, with the goal left as it was.

use agent_core::agent::{Agent, TurnEnd};
use agent_core::error::ApiError;
use agent_core::messages::Message;

use crate::GoalError;
use crate::command::GoalCommand;
use crate::controller::GoalController;
use crate::hook::GoalHandle;

/// What one submission ended with (course: `SessionResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionResult {
    /// The final answer's text (or the status text of `/goal`), possibly empty.
    pub text: String,
    /// `status`, `cleared`, `allow`, `defer`, `error`, `achieved`, `failed`, `limit`,
    /// `max_turns`, `stopped`, `blocked` (a `UserPromptSubmit` hook refused the prompt),
    /// `background_result`.
    pub status: String,
    /// Why, when there is a reason (the evaluator's, an error's); empty otherwise.
    pub reason: String,
}

impl SessionResult {
    fn new(text: impl Into<String>, status: &str, reason: impl Into<String>) -> Self {
        Self { text: text.into(), status: status.to_owned(), reason: reason.into() }
    }
}

/// Why a submission failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The goal could not be set (empty, too long) or the background result was empty; nothing
    /// was sent.
    #[error("{0}")]
    Goal(#[from] GoalError),
    /// The loop's request failed; the goal is unchanged.
    #[error("{0}")]
    Api(#[from] ApiError),
}

/// Submits `text` as the user typed it (see the module docs). `agent` has `goal` among its
/// extensions (through [`crate::hook::GoalHook`]), before any other `Stop` extension.
///
/// # Errors
/// [`SubmitError::Goal`] for a condition that is empty or longer than 4,000 characters (the
/// course exits; a REPL shows it and goes on); [`SubmitError::Api`] when the loop fails.
pub async fn submit(
    agent: &mut Agent,
    history: &mut Vec<Message>,
    goal: &GoalHandle,
    text: &str,
) -> Result<SessionResult, SubmitError> {
    let tokens = session_tokens(agent);
    let prompt = match GoalCommand::parse(text) {
        None => text.to_owned(),
        Some(command) => match goal.with(|c| apply(c, command, tokens)).await {
            GoalLine::Show { text, status } => return Ok(SessionResult::new(text, status, "")),
            GoalLine::Send(condition) => condition,
            GoalLine::Refused(error) => return Err(error.into()),
        },
    };
    run(agent, history, goal, &prompt).await
}

/// What a `/goal` line comes to, decided at once, without the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalLine {
    /// Show `text` (the status, `Goal cleared: …`); nothing is sent. `status` is `status` or
    /// `cleared`.
    Show {
        /// What to show.
        text: String,
        /// The course's status word.
        status: &'static str,
    },
    /// The goal is set: send the condition as the user's message.
    Send(String),
    /// The condition was refused (empty, too long); nothing changed.
    Refused(GoalError),
}

/// Applies `command` to the goal (`tokens` = the session's tokens now, for the status).
pub fn apply(controller: &mut GoalController, command: GoalCommand, tokens: u64) -> GoalLine {
    match command {
        GoalCommand::Status => GoalLine::Show { text: controller.status(tokens), status: "status" },
        GoalCommand::Clear => GoalLine::Show { text: controller.clear(), status: "cleared" },
        GoalCommand::Set(condition) => match controller.set_goal(&condition, tokens) {
            Ok(()) => GoalLine::Send(condition),
            Err(e) => GoalLine::Refused(e),
        },
    }
}

/// A `/goal` line typed at the REPL, between turns: `None` when `text` is not a goal command.
/// Without waiting: while an evaluation holds the goal (never between turns) the line is
/// refused.
pub fn goal_line(goal: &GoalHandle, text: &str, tokens: u64) -> Option<GoalLine> {
    let command = GoalCommand::parse(text)?;
    Some(goal.try_with(|c| apply(c, command, tokens)).unwrap_or_else(|| {
        GoalLine::Refused(GoalError::new("the goal is being evaluated; try again when the turn ends"))
    }))
}

/// Feeds a background command's result to the session (course: `submit_background_result`):
/// `[Background task completed]\n{text}` joins the history; with an active goal the loop runs
/// on it (the evaluation that was deferred happens now), without one it waits for the next
/// prompt (`background_result`).
///
/// # Errors
/// `background result cannot be empty`; [`SubmitError::Api`] when the loop fails.
pub async fn submit_background_result(
    agent: &mut Agent,
    history: &mut Vec<Message>,
    goal: &GoalHandle,
    text: &str,
) -> Result<SessionResult, SubmitError> {
    if text.trim().is_empty() {
        return Err(GoalError::new("background result cannot be empty").into());
    }
    let message = format!("[Background task completed]\n{text}");
    if goal.with(|c| c.active.is_none()).await {
        history.push(Message::user_text(message));
        return Ok(SessionResult::new("", "background_result", ""));
    }
    run(agent, history, goal, &message).await
}

/// The session's tokens so far (input, cached input included, and output; the evaluator's
/// calls included), as the goal's status counts them.
pub fn session_tokens(agent: &Agent) -> u64 {
    let usage = agent.session_usage();
    usage.total_input_tokens() + usage.output_tokens
}

/// One turn on `prompt`, and what the goal made of it.
async fn run(
    agent: &mut Agent,
    history: &mut Vec<Message>,
    goal: &GoalHandle,
    prompt: &str,
) -> Result<SessionResult, SubmitError> {
    let end = agent.run_turn(history, prompt).await?;
    let response = match end {
        TurnEnd::Answered(response) => response,
        TurnEnd::PromptBlocked(why) => return Ok(SessionResult::new("", "blocked", why)),
    };
    let text = response.text().trim().to_owned();
    let decision = goal.take_decision().await;
    Ok(match decision {
        Some(d) => SessionResult::new(text, d.action.as_str(), d.reason),
        None if response.tool_uses().next().is_some() => {
            SessionResult::new("", "max_turns", "global max_turns reached; the goal remains active")
        }
        None => SessionResult::new(text, "stopped", ""),
    })
}
