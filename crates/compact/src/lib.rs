//! The course's s08, context compaction: archive, reduce, then summarise, so that a long session
//! never outgrows the model's context and each round costs about what the last one did.
//!
//! ```text
//!  before every request (pre_inference), in order:
//!
//!   1. tool_result_budget  newest batch over 200,000 chars?  largest results over 30,000
//!                          -> .task_outputs/tool-results/, 2,000-char preview stays
//!   2. snip_compact        over 50 messages?  first 3 + last 46 stay, the middle
//!                          -> .transcripts/ (the active request appended again, #577)
//!        history over 50,000 chars?
//!          no ----------------------------------------------------------> request
//!          yes
//!   3. micro_compact       results the model has seen (not the last 3)
//!                          -> [Earlier tool result saved at PATH], down to 40,000
//!   4. fit_tool_results    still over?  largest results -> 1,000-char preview
//!   5. compact_history     still over?  [auto compact]: transcript, then a summary by the
//!                          model; the history becomes one message ----------> request
//!
//!  other ways in:
//!   compact tool     -> after the tool batch (after_tool_batch)  -> compact_history
//!   prompt too long  -> on_request_error -> reactive_compact (last 5 messages stay) -> retry once
//! ```
//!
//! Source: COURSE §4.3, with the course's constants as [`Limits::default`] and the fix for course
//! #577 (a snip that archived the active request sent the model back to an old task). Each layer
//! is a function under its course name, in a module of that name: [`tool_result_budget()`],
//! [`snip_compact()`], [`micro_compact()`], [`fit_tool_results()`], [`compact_history()`] and
//! [`reactive_compact`]. [`Compaction`] runs them from the loop's extension points:
//! `pre_inference` for the layers, `after_tool_batch` for the `compact` tool's summary (course
//! #500: never between a `tool_use` and its result), `on_request_error` for reactive compaction
//! with the loop's one retry. The summary calls go through the loop's `ModelHandle`, so `/usage`
//! counts them.
//!
//! What compaction promises (the tests check each):
//! - every request it leaves is one the API accepts: no `tool_use` parted from its `tool_result`;
//! - nothing leaves the history that is not on disk first (the transcript, the saved result),
//!   written atomically beneath the workspace handle; if a save fails the layer does nothing;
//! - a result the model has not seen yet is never reduced to a bare reference;
//! - the request the agent works on stays visible, exactly once;
//! - a path quoted inside tool output is never taken for a saved file.
//!
//! The learner sees each layer act (`[snip: …]`, `[micro-compact: …]`, `[auto compact]`, …),
//! `/context` shows the size against the limit and which layer acts next, and `/history` marks
//! what is archived or compacted.
//!
//! Key insight: the context is a cache of the conversation, not the conversation. What is on disk
//! can leave it; what the model needs next must stay.

mod acts;
pub mod archive;
mod args;
pub mod compact_history;
mod context;
pub mod fit_tool_results;
pub mod history;
pub mod micro_compact;
pub mod snip_compact;
pub mod tool_result_budget;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_cli::chapter::Setup;
use agent_cli::repl::SlashCommand;
use agent_core::dispatch::{ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::events::{EventSink, Level, line};
use agent_core::extension::{AfterBatch, AnswerContext, Extension, LoopContext, Recovery};
use agent_core::messages::{Message, ToolSpec};
use agent_core::workspace::Workspace;
use serde_json::json;

pub use acts::{Acts, Way};
pub use archive::{Archive, Layer};
pub use args::CompactArgs;
pub use compact_history::{CompactError, Place, Wording, compact_history, reactive_compact, summarise_into};
pub use fit_tool_results::fit_tool_results;
pub use history::context_size;
pub use micro_compact::micro_compact;
pub use snip_compact::snip_compact;
pub use tool_result_budget::tool_result_budget;

/// The limits compaction works to, in characters of the messages' JSON (COURSE §4.3: "sizes are
/// characters, not tokens") or in messages. [`Limits::default`] is the course's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Over this, micro-compaction, fit and the summary act (50,000).
    pub context_limit: usize,
    /// What micro-compaction and fit bring the history down to (40,000).
    pub target: usize,
    /// The most one batch of results may hold before the budget saves its largest (200,000).
    pub result_batch: usize,
    /// Results over this are the ones the budget saves (30,000).
    pub large_result: usize,
    /// The most history the summary call is given (80,000).
    pub summary_input: usize,
    /// Seen results micro-compaction leaves (3).
    pub keep_recent_results: usize,
    /// Messages reactive compaction leaves (5).
    pub keep_recent_messages: usize,
    /// Over this many messages, snip (50).
    pub max_messages: usize,
    /// How many messages a snip leaves, at most (the course: [`Limits::max_messages`], so a
    /// history at the limit is snipped again before every request). Fewer leave room to grow:
    /// the history then keeps the same prefix for many requests, and a prompt cache keeps
    /// paying between snips. Never more than `max_messages`.
    pub snip_to: usize,
}

impl Limits {
    /// The course's constants (COURSE §4.3), as a constant: [`Limits::default`].
    pub const COURSE: Limits = Limits {
        context_limit: 50_000,
        target: 40_000,
        result_batch: 200_000,
        large_result: 30_000,
        summary_input: 80_000,
        keep_recent_results: 3,
        keep_recent_messages: 5,
        max_messages: 50,
        snip_to: 50,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::COURSE
    }
}

/// What one of the result layers (budget, micro-compaction, fit) did: how many results it saved,
/// their size before and after, and the saves that failed (those results stayed whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acted {
    /// The layer.
    pub layer: Layer,
    /// Results replaced.
    pub results: usize,
    /// Their size before, in characters.
    pub before: usize,
    /// Their size after, in characters.
    pub after: usize,
    /// Why a result could not be saved (it stays in the history).
    pub failures: Vec<String>,
}

impl Acted {
    fn new(layer: Layer) -> Self {
        Self { layer, results: 0, before: 0, after: 0, failures: Vec::new() }
    }

    fn count(&mut self, before: usize, after: usize) {
        self.results += 1;
        self.before += before;
        self.after += after;
    }

    fn any(&self) -> bool {
        self.results > 0 || !self.failures.is_empty()
    }

    /// The learner's line: `[micro-compact: 4 results saved, 38.1 KB → 1.2 KB]`.
    pub fn line(&self) -> String {
        let what = match self.layer {
            Layer::Budget => "tool result budget",
            Layer::Micro => "micro-compact",
            Layer::Fit => "fit",
            _ => self.layer.name(),
        };
        let preview = match self.layer {
            Layer::Budget => " with a 2,000-character preview",
            Layer::Fit => " with a 1,000-character preview",
            _ => "",
        };
        format!(
            "[{what}: {} result{} saved{preview}, {} → {}]",
            self.results,
            if self.results == 1 { "" } else { "s" },
            history::human_size(self.before),
            history::human_size(self.after)
        )
    }

    fn report(&self, events: &dyn EventSink) {
        if self.results > 0 {
            line(events, Level::Mechanism, &self.line());
        }
        for failure in &self.failures {
            line(
                events,
                Level::Warning,
                &format!("[{}: {failure}; it stays in the history]", self.layer.name()),
            );
        }
    }
}

/// What the layers before the summary did to a history ([`prepare`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prepared {
    /// The history's size after them, in characters.
    pub size: usize,
    /// The layers that acted, in order.
    pub acted: Vec<Layer>,
    /// What the snip archived, if it acted.
    pub snipped: Option<snip_compact::Snipped>,
}

/// Layers 1 to 4 on `history`, in the course's order, reporting each that acts to `events`:
/// the budget and the snip always, micro-compaction and fit only while the history is over the
/// limit. The caller summarises when [`Prepared::size`] is still over it.
pub fn prepare(
    history: &mut Vec<Message>,
    limits: &Limits,
    active_request: Option<&str>,
    archive: &mut Archive,
    events: &dyn EventSink,
) -> Prepared {
    let mut prepared = Prepared::default();
    if let Some(acted) = tool_result_budget(history, limits, archive) {
        acted.report(events);
        prepared.acted.push(Layer::Budget);
    }
    match snip_compact(history, limits, active_request, archive) {
        Ok(Some(snipped)) => {
            let appended =
                if snipped.request_appended { "; the active request is appended again" } else { "" };
            let text = format!(
                "[snip: {} messages archived at {}{appended}]",
                snipped.archived,
                archive.relative(&snipped.transcript)
            );
            line(events, Level::Mechanism, &text);
            prepared.acted.push(Layer::Snip);
            prepared.snipped = Some(snipped);
        }
        Ok(None) => {}
        Err(e) => line(
            events,
            Level::Warning,
            &format!("[snip_compact: cannot save the transcript ({e}); nothing was archived]"),
        ),
    }
    let mut size = context_size(history);
    if size > limits.context_limit
        && let Some(acted) = micro_compact(history, limits, &mut size, archive)
    {
        acted.report(events);
        prepared.acted.push(Layer::Micro);
    }
    if size > limits.context_limit
        && let Some(acted) = fit_tool_results(history, limits, &mut size, archive)
    {
        acted.report(events);
        prepared.acted.push(Layer::Fit);
    }
    if !prepared.acted.is_empty() {
        archive.forget_absent(history);
    }
    prepared.size = size;
    prepared
}

/// The request a summary keeps as the one to follow: the turn's prompt, or, for a loop run on a
/// history of its own, its latest user text.
fn active(context: &LoopContext<'_>) -> Option<String> {
    context.active_request.map(str::to_owned).or_else(|| agent_core::agent::latest_user_text(context.history))
}

/// What a summary names as the current request when there is none.
const NO_REQUEST: &str = "(no request)";

/// Context compaction for one agent: the extension that runs the layers, the `compact` tool's
/// flag, the archive and its ledger, and the count of what acted. Clones share the flag, the
/// ledger and the count, so the tool, the REPL's commands and the extension see the same state.
#[derive(Clone)]
pub struct Compaction {
    limits: Limits,
    archive: Archive,
    requested: Arc<AtomicBool>,
    /// The summary call's SYSTEM and the summary message's headings.
    wording: &'static Wording,
    /// The `compact` tool's result.
    requested_text: &'static str,
    acts: Arc<Mutex<Acts>>,
    /// Ends each answer with [`Acts::recap`] ([`Compaction::with_recap`]).
    recap: bool,
}

impl Compaction {
    /// Compaction in the setup's workspace, with `limits` (the chapter's flags).
    pub fn new(setup: &Setup, limits: Limits) -> Self {
        Self::in_workspace(&setup.workspace, limits)
    }

    /// With `recap`, each answer ends with a recap of what acted in the session so far
    /// ([`Acts::recap`]): for s08's offline demo, where no one can type `/context` afterwards.
    pub fn with_recap(self, recap: bool) -> Self {
        Self { recap, ..self }
    }

    /// Compaction archiving in `workspace`, with `limits`.
    pub fn in_workspace(workspace: &Workspace, limits: Limits) -> Self {
        Self {
            limits,
            archive: Archive::new(workspace),
            requested: Arc::default(),
            wording: &compact_history::S08_WORDING,
            requested_text: COMPACT_REQUESTED,
            acts: Arc::default(),
            recap: false,
        }
    }

    /// The same compaction in the course's s15 words: its summary call's SYSTEM and headings
    /// ([`compact_history::S15_WORDING`]) and its `compact` tool's result
    /// ([`COMPACT_REQUESTED_S15`]).
    #[must_use]
    pub fn s15(mut self) -> Self {
        // s15's SYSTEM and tools are the same bytes through a turn, so the prompt cache pays
        // until the snip moves the history's start; snipping down to half the limit moves it
        // once every `max_messages / 2` messages instead of before every request.
        self.limits.snip_to = self.limits.max_messages / 2;
        self.wording = &compact_history::S15_WORDING;
        self.requested_text = COMPACT_REQUESTED_S15;
        self
    }

    /// How many times each way of compacting acted in this session so far.
    pub fn acts(&self) -> Acts {
        *self.acts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one act of `way`, as its line was reported.
    fn acted(&self, way: Way) {
        self.acts.lock().unwrap_or_else(|p| p.into_inner()).add(way);
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The archive and its ledger.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// The `compact` tool for the dispatch map.
    pub fn compact_tool(&self) -> CompactTool {
        CompactTool { requested: Arc::clone(&self.requested), result: self.requested_text }
    }

    /// The REPL commands: `/context` (the size against the limit, each layer, which acts next)
    /// and `/history` (the messages as the next request sends them, archived and compacted
    /// parts marked).
    pub fn commands(&self) -> Vec<SlashCommand> {
        context::commands(self)
    }

    /// Runs one summarising layer on the loop's history after the line `announce`:
    /// [`compact_history`], or [`reactive_compact`] for [`Way::Reactive`], naming `request` (the request
    /// in flight) as the current one. `Ok(true)` when the history was summarised; `Ok(false)` when
    /// it failed in a way that leaves the history as it is (reported as `[{what} failed: …]`);
    /// `Err` with the model's error, which ends the turn.
    async fn summarise(
        &mut self,
        context: &mut LoopContext<'_>,
        request: Option<String>,
        way: Way,
        what: &str,
        announce: &str,
    ) -> Result<bool, ApiError> {
        line(context.events, Level::Mechanism, announce);
        let (history, model, events) = (&mut *context.history, &mut context.model, context.events);
        let request = request.as_deref().unwrap_or(NO_REQUEST);
        let place = if way == Way::Reactive {
            Place {
                keep_from: compact_history::reactive_tail(history, &self.limits),
                layer: Layer::Reactive,
                wording: self.wording,
            }
        } else {
            Place { keep_from: 0, layer: Layer::Summary, wording: self.wording }
        };
        let done =
            summarise_into(history, place, request, model, &mut self.archive, &self.limits, events).await;
        match done {
            Ok(_) => {
                self.acted(way);
                Ok(true)
            }
            Err(e) => self.failed(what, e, events).map_or(Ok(false), Err),
        }
    }

    /// Reports a failed summary and returns the error that ends the turn, if any: a failed model
    /// call does; a transcript that cannot be saved or a refused summary leaves the history as it
    /// is and the loop goes on.
    fn failed(&self, what: &str, error: CompactError, events: &dyn EventSink) -> Option<ApiError> {
        line(events, Level::Warning, &format!("[{what} failed: {error}]"));
        match error {
            CompactError::Summary { error, .. } => Some(error),
            CompactError::Transcript(_) | CompactError::Refused { .. } => None,
        }
    }
}

#[async_trait::async_trait]
impl Extension for Compaction {
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        let request = active(context);
        let prepared =
            prepare(context.history, &self.limits, request.as_deref(), &mut self.archive, context.events);
        for layer in &prepared.acted {
            self.acted(Way::from(*layer));
        }
        if prepared.size <= self.limits.context_limit {
            return Ok(());
        }
        self.summarise(context, request, Way::Auto, "auto compact", "[auto compact]").await.map(|_| ())
    }

    async fn after_tool_batch(&mut self, context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        if !self.requested.swap(false, Ordering::SeqCst) {
            return Ok(AfterBatch::Continue);
        }
        // Every result of the batch is in: summarising now parts no tool_use from its result.
        let request = active(context);
        self.summarise(context, request, Way::Tool, "compact", "[compact: the model asked for a summary]")
            .await
            .map(|_| AfterBatch::Continue)
    }

    async fn on_request_error(
        &mut self,
        context: &mut LoopContext<'_>,
        error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        if !compact_history::is_prompt_too_long(error) {
            return Ok(Recovery::GiveUp);
        }
        // The loop reports a failed request only if it stays failed: say why compaction acts.
        line(context.events, Level::Notice, &format!("[the endpoint refused the request: {error}]"));
        let request = active(context);
        if !self.summarise(context, request, Way::Reactive, "reactive compact", "[reactive compact]").await? {
            return Ok(Recovery::GiveUp);
        }
        line(
            context.events,
            Level::Notice,
            "[reactive compact: sending the request once more; if it is still too long the turn ends \
             (lower --context-limit, or /clear)]",
        );
        Ok(Recovery::Retry)
    }

    async fn after_answer(&mut self, context: &mut AnswerContext<'_>) {
        if self.recap {
            line(context.events, Level::Mechanism, &self.acts().recap(&self.limits));
        }
    }
}

/// The `compact` tool's name.
pub const COMPACT_TOOL_NAME: &str = "compact";

/// The `compact` tool's description (COURSE §4.3).
pub const COMPACT_DESCRIPTION: &str = "Summarize earlier conversation to free context space.";

/// The `compact` tool's result (COURSE §4.3).
pub const COMPACT_REQUESTED: &str = "Compaction requested after this tool batch.";

/// The `compact` tool's result in the course's s15.
pub const COMPACT_REQUESTED_S15: &str = "[Compaction requested. This completed turn will be summarized.]";

/// The `compact` tool's input: nothing (`{}`); other fields are ignored.
#[derive(Debug, serde::Deserialize)]
pub struct CompactInput {}

/// The `compact` tool (COURSE §4.3): it only asks. The summary runs once the whole batch's
/// results are in the history ([`Compaction`]'s `after_tool_batch`), never between a `tool_use`
/// and its result (course #500).
pub struct CompactTool {
    requested: Arc<AtomicBool>,
    result: &'static str,
}

impl TypedTool for CompactTool {
    type Args = CompactInput;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: COMPACT_TOOL_NAME.into(),
            description: COMPACT_DESCRIPTION.into(),
            input_schema: json!({"type": "object", "properties": {}}),
        }
    }

    async fn run(self: Arc<Self>, _input: CompactInput) -> Result<String, ToolError> {
        self.requested.store(true, Ordering::SeqCst);
        Ok(self.result.to_owned())
    }
}

#[cfg(test)]
mod tests;
