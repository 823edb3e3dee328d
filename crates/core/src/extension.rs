//! The loop's extension point: what a chapter may add to a round without copying `agent_loop`.
//!
//! Source: course s03 (the nag reminder runs after a round's tools), s04/s05 (hooks run before a
//! prompt, around each tool call, and when the model stops), and goose's `pre_inference` hook for
//! what the course does to the history later (context compaction). Every method has a no-op
//! default, so an extension implements only the moments it cares about. `agent_loop` calls the
//! extensions in the order they were added.
//!
//! ```text
//!  prompt ─► begin_turn ─► user_prompt_submit ─► pre_inference ─► [model] ─► for each tool_use:
//!                                                 ▲                pre_tool_use ─► run ─► post_tool_use
//!                                                 │             after_round ─► text blocks appended last
//!                                                 └──────────── (no tool_use) stop ─► maybe continue
//! ```
//!
//! The methods and the course's hook events (s04) map one to one where the course has an event:
//! `user_prompt_submit` is `UserPromptSubmit`, `pre_tool_use` is `PreToolUse`, `post_tool_use` is
//! `PostToolUse` and `stop` is `Stop`; `begin_turn`, `pre_inference` and `after_round` are moments
//! of the loop that no course hook names.

use std::sync::Arc;

use crate::dispatch::{ToolCall, ToolOutcome};
use crate::error::ApiError;
use crate::messages::{Message, MessagesResponse, ToolUseBlock, Usage};
use crate::model::Model;

/// What an extension decides about a prompt or a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Let it through.
    Continue,
    /// Stop it. For a tool call the text becomes its `tool_result` (sent with `is_error: true`)
    /// and the tool never runs; for a prompt the text is shown and the prompt is not sent.
    Block(String),
}

/// One tool call of a finished round, as extensions see it in [`Extension::after_round`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// The tool's name as the model called it.
    pub name: String,
    /// `true` when the tool ran (its result may still be an error); `false` when a
    /// `PreToolUse` decision blocked it.
    pub ran: bool,
    /// The result's `is_error`.
    pub is_error: bool,
}

/// What an extension sees before each request ([`Extension::pre_inference`]; goose's
/// `LoopContext`).
pub struct LoopContext<'a> {
    /// The history the next request is built from (through `normalize_messages`). An extension
    /// may rewrite it, such as replacing old `tool_result` contents with a placeholder; the
    /// rewrite stays for the rest of the session.
    pub history: &'a mut Vec<Message>,
    /// The model the loop talks to, shared: an extension may send requests of its own (a summary).
    pub model: Arc<dyn Model>,
    /// The `model` field the loop's requests carry (`MODEL_ID`).
    pub model_id: &'a str,
    /// The usage of the last response this agent received (Messages API `usage`; its
    /// `input_tokens` is the size of the last request), `None` before the first.
    pub last_usage: Option<&'a Usage>,
}

/// Behaviour added to `agent_loop`. All methods default to doing nothing. The one async method,
/// [`Extension::pre_inference`], is written with `#[async_trait::async_trait]` on the `impl`.
#[async_trait::async_trait]
pub trait Extension: Send {
    /// Runs before each request of `agent_loop`, the first included, in the order the extensions
    /// were added: may read and rewrite the history, call the model, and look at the last usage.
    ///
    /// # Errors
    /// An [`ApiError`] (from a model call of its own, say) ends the turn as a failed request would;
    /// the history keeps what the extension left in it.
    async fn pre_inference(&mut self, _context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        Ok(())
    }

    /// A new user turn starts (before `user_prompt_submit`). The nag resets its counter here
    /// (course §2: "the counter starts at 0 on each user turn").
    fn begin_turn(&mut self) {}

    /// The user typed `prompt`; it has not joined the history yet (`UserPromptSubmit`).
    fn user_prompt_submit(&mut self, _prompt: &str) -> Decision {
        Decision::Continue
    }

    /// A tool is about to run (`PreToolUse`). `call` is the `tool_use` block (through `Deref`) with
    /// what the tool says its input is about ([`ToolCall::subject`]); the input was parsed once,
    /// and the tool runs on that same value. The first extension that blocks wins; later ones are
    /// not asked.
    fn pre_tool_use(&mut self, _call: &ToolCall) -> Decision {
        Decision::Continue
    }

    /// A tool ran (`PostToolUse`). The outcome may be inspected or amended.
    fn post_tool_use(&mut self, _call: &ToolUseBlock, _outcome: &mut ToolOutcome) {}

    /// All tool calls of one round have results. Returned text is appended to that round's
    /// user message as a `text` block **after** every `tool_result` block (course §0; the API
    /// rejects the request otherwise).
    fn after_round(&mut self, _calls: &[CallRecord]) -> Option<String> {
        None
    }

    /// The model answered without tool calls (`Stop`). `Some(text)` appends `text` as a user
    /// message and calls the model again; `agent_loop` caps how often this may happen per turn.
    fn stop(&mut self, _response: &MessagesResponse) -> Option<String> {
        None
    }
}
