//! `goal`: the course's s17, the goal loop. The model proposing to stop (an answer without a
//! `tool_use`) ends a turn only when a separate, tool-free evaluator, reading the conversation,
//! finds the user's completion condition met; otherwise the loop goes on with what is missing.
//!
//! Source: course s17 (`s17_goal_loop/code.py`, COURSE-s10-s17 §8), and Claude Code's `/goal`
//! (the same contract: `/goal clear` and its aliases, an evaluator that may call a goal
//! impossible, a Stop hook that gives up after blocking 8 turns in a row).
//!
//! ```text
//!  /goal COND ─► GoalController::set_goal ─► COND joins the history as the user's message
//!                                              │
//!  worker model ◄──────────────────────────────┘◄──────────────────────────────┐
//!      │ answers without tool_use (it proposes to stop)                          │
//!      ▼                                                                         │
//!  GoalController::evaluate_after_turn                                          │
//!      ├─ no goal ───────────► allow     (the turn ends, as in s01)             │
//!      ├─ background running ► defer     (evaluated when its result comes back) │
//!      ├─ evaluator: ok ─────► achieved  (the goal is cleared)                  │
//!      ├─ impossible ────────► failed    (the goal is cleared)                  │
//!      ├─ not yet ───────────► block ── `[Goal still active]…` as a user message ┘
//!      ├─ not yet, cap passed► limit     (control returns; the goal stays)
//!      └─ evaluator failed ──► error     (control returns; the goal stays)
//! ```
//!
//! | module | what it holds | course name |
//! |---|---|---|
//! | [`command`] | `/goal`, `/goal <condition>`, `/goal clear` and its aliases | `AgentSession.submit` |
//! | [`controller`] | the goal's state, its status text, events and the decision after a turn | `GoalController`, `GoalState`, `StopDecision` |
//! | [`evaluator`] | the evaluator's prompts, request and the strict check of its JSON | `PromptGoalEvaluator`, `_parse_json_object` |
//! | [`transcript`] | the conversation as the evaluator reads it, cut to 24,000 characters | `transcript_text`, `_plain_content` |
//! | [`hook`] | the goal as the loop's `Stop` hook: the evaluation, the continuation, the `[goal]` line | the `Stop` hook in `_run_query` |
//! | [`session`] | one submission: `/goal` lines, the turn, its status | `AgentSession.submit`, `SessionResult` |
//! | [`kernel`] | s17's own kernel: the worker's SYSTEM, the tool texts, the repository rule | `AgentSession`, `TOOLS`, `_permission_hook` |
//!
//! The decision is a pure function of the goal's state and the evaluator's answer
//! ([`controller::GoalController::before_evaluation`],
//! [`controller::GoalController::after_evaluation`]), tested without a model; only
//! [`evaluator::PromptGoalEvaluator`] calls one, through the loop's
//! [`agent_core::extension::ModelHandle`], so its tokens count in the session's usage.

#![warn(missing_docs)]

pub mod command;
pub mod controller;
pub mod evaluator;
pub mod hook;
pub mod kernel;
pub mod session;
pub mod transcript;

pub use command::{CLEAR_ALIASES, GoalCommand};
pub use controller::{Action, GoalController, GoalEvaluation, GoalState, GoalStatus, StopDecision};
pub use evaluator::{GoalEvaluator, PromptGoalEvaluator};
pub use transcript::{plain_content, transcript_text};

/// `max_tokens` of the evaluator's request (course: `DEFAULT_EVALUATOR_MAX_TOKENS`).
pub const DEFAULT_EVALUATOR_MAX_TOKENS: u32 = 512;

/// How many unmet evaluations in a row send the model back before control returns to the user
/// (course and Claude Code: `DEFAULT_STOP_HOOK_BLOCK_CAP`, overridden by
/// `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`).
pub const DEFAULT_STOP_HOOK_BLOCK_CAP: u32 = 8;

/// The longest completion condition, in characters (course: `MAX_GOAL_LENGTH`).
pub const MAX_GOAL_LENGTH: usize = 4000;

/// How much of the conversation the evaluator reads, in characters (course: `transcript_text`'s
/// `max_characters`).
pub const TRANSCRIPT_CHARS: usize = 24_000;

/// The most characters of an evaluator's `reason` the loop keeps (ours). A real evaluator is held
/// to 512 tokens, but its answer is data from outside: a server that sends a megabyte of reason
/// would otherwise have it copied into every later request and status line.
pub const MAX_REASON_CHARS: usize = 4000;

/// The variable naming the evaluator's model (course: `GOAL_EVALUATOR_MODEL_ID`; then
/// `ANTHROPIC_DEFAULT_HAIKU_MODEL`, then `MODEL_ID`).
pub const EVALUATOR_MODEL_ENV: &str = "GOAL_EVALUATOR_MODEL_ID";

/// The variable overriding [`DEFAULT_STOP_HOOK_BLOCK_CAP`].
pub const BLOCK_CAP_ENV: &str = "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP";

/// The variable capping the model requests of one submission (course: `MAX_TURNS`; `0` or unset
/// means no cap).
pub const MAX_TURNS_ENV: &str = "MAX_TURNS";

/// The goal command or the evaluator could not be used safely (course: `GoalError`). The text is
/// the course's, and is what the user or the status line shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GoalError(pub String);

impl GoalError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Reads a setting that must be a whole number of at least 1, such as the block cap, from the
/// variable's value `raw` (unset: `default`). `0` means "no cap" where `zero_is_none` (`MAX_TURNS`).
///
/// # Errors
/// A [`GoalError`] naming the variable when the value is not such a number, instead of the
/// course's `ValueError` exit.
pub fn parse_count(
    name: &str,
    raw: Option<&str>,
    default: Option<u32>,
    zero_is_none: bool,
) -> Result<Option<u32>, GoalError> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(default);
    };
    match raw.parse::<u32>() {
        Ok(0) if zero_is_none => Ok(None),
        Ok(0) => Err(GoalError::new(format!("{name} must be at least 1, not 0"))),
        Ok(n) => Ok(Some(n)),
        Err(_) => Err(GoalError::new(format!("{name} must be a whole number, not {raw:?}"))),
    }
}

/// The goal loop's settings, from the environment and `.env` (course: `make_live_session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The evaluator's model: `GOAL_EVALUATOR_MODEL_ID`, else `ANTHROPIC_DEFAULT_HAIKU_MODEL`;
    /// `None` uses the worker's (`MODEL_ID`).
    pub evaluator_model: Option<String>,
    /// Unmet evaluations in a row before control returns (`CLAUDE_CODE_STOP_HOOK_BLOCK_CAP`,
    /// default 8).
    pub block_cap: u32,
    /// The most model requests one submission makes (`MAX_TURNS`; unset or 0: no cap).
    pub max_turns: Option<u32>,
}

impl Settings {
    /// The settings from `vars` (the process environment with `.env` on top).
    ///
    /// # Errors
    /// A [`GoalError`] naming the variable whose value is not a whole number (or is 0 for the
    /// block cap), where the course stops with a `ValueError`.
    pub fn from_vars(vars: &std::collections::HashMap<String, String>) -> Result<Self, GoalError> {
        let get = |name: &str| vars.get(name).map(|v| v.trim()).filter(|v| !v.is_empty());
        let evaluator_model =
            get(EVALUATOR_MODEL_ENV).or_else(|| get("ANTHROPIC_DEFAULT_HAIKU_MODEL")).map(str::to_owned);
        let block_cap =
            parse_count(BLOCK_CAP_ENV, get(BLOCK_CAP_ENV), Some(DEFAULT_STOP_HOOK_BLOCK_CAP), false)?
                .unwrap_or(DEFAULT_STOP_HOOK_BLOCK_CAP);
        let max_turns = parse_count(MAX_TURNS_ENV, get(MAX_TURNS_ENV), None, true)?;
        Ok(Self { evaluator_model, block_cap, max_turns })
    }
}

/// `text` cut to at most `max` characters, with `… (N more characters)` saying what was dropped.
pub(crate) fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((at, _)) => format!("{}… ({} more characters)", &text[..at], text[at..].chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_whole_numbers_and_zero_means_no_cap_only_where_it_may() {
        assert_eq!(parse_count("X", None, Some(8), false), Ok(Some(8)));
        assert_eq!(parse_count("X", Some(" 2 "), Some(8), false), Ok(Some(2)));
        assert_eq!(parse_count("MAX_TURNS", Some("0"), None, true), Ok(None));
        assert!(parse_count("X", Some("0"), Some(8), false).unwrap_err().0.contains("at least 1"));
        assert!(parse_count("X", Some("-1"), Some(8), false).unwrap_err().0.contains("whole number"));
    }

    #[test]
    fn settings_come_from_the_courses_variables() {
        let vars =
            |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let none = Settings::from_vars(&vars(&[])).unwrap();
        assert_eq!(none, Settings { evaluator_model: None, block_cap: 8, max_turns: None });
        let set = Settings::from_vars(&vars(&[
            ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "haiku"),
            ("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2"),
            ("MAX_TURNS", "5"),
        ]))
        .unwrap();
        assert_eq!(set, Settings { evaluator_model: Some("haiku".into()), block_cap: 2, max_turns: Some(5) });
        let judge = Settings::from_vars(&vars(&[
            ("GOAL_EVALUATOR_MODEL_ID", "judge"),
            ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "h"),
        ]));
        assert_eq!(judge.unwrap().evaluator_model.as_deref(), Some("judge"));
        let bad = Settings::from_vars(&vars(&[("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "eight")])).unwrap_err();
        assert!(bad.0.starts_with("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP must be a whole number"), "{bad}");
    }

    #[test]
    fn a_long_text_is_cut_by_characters_and_says_so() {
        assert_eq!(cap_chars("héllo", 10), "héllo");
        assert_eq!(cap_chars("héllo", 2), "hé… (3 more characters)");
    }
}
