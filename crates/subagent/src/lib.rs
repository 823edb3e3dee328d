//! The course's s06, subagents: a `task` tool that runs a child `agent_loop` with fresh messages
//! and hands back only its final text.
//!
//! ```text
//!   parent agent                               child agent (run_subagent)
//!   messages = [... long history ...]          messages = [{"role":"user","content":PROMPT}]
//!   tool_use task {prompt} ─────────────────►  its own loop: the five base tools, the parent's
//!                                              hooks, at most 30 model calls
//!   tool_result = final text  ◄─────────────── the last reply's text; the rest is dropped
//! ```
//!
//! Source: COURSE §4.1 (the course's `s06_subagent/code.py` at its newest mainline). The child
//! ends on a reply without `tool_use` blocks, whatever its `stop_reason`; its tools are the five
//! base tools only, so it cannot recurse; the parent's hooks run inside it, so the deny list and
//! `Allow? [y/N]` hold there too. Ours: the learner sees the isolation (how much stayed in the
//! child, how little came back), a finished child's messages (`/history task N`), and the
//! child's tokens apart from the parent's (`/usage`).
//!
//! Key insight: a subagent is the same loop with a fresh `messages` list. Context isolation is
//! just not passing the history.

use std::sync::{Arc, Mutex, MutexGuard};

use agent_cli::chapter::{ENVIRONMENT, Kernel, Setup};
use agent_cli::repl::{CommandContext, SlashCommand, history_view, usage_line};
use agent_core::agent::Agent;
use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::events::{Event, EventSink, Events, Level, line};
use agent_core::extension::Shared;
use agent_core::hooks::HookRegistry;
use agent_core::messages::{Message, MessagesResponse, ToolSpec, UsageTotals};
use agent_core::model::Model;
use agent_core::sanitize::one_line;
use serde_json::json;

/// The tool's name.
pub const TASK_TOOL_NAME: &str = "task";

/// The tool's description (COURSE §4.1).
pub const TASK_DESCRIPTION: &str =
    "Run a subagent with fresh conversation context and return its final text.";

/// The most model calls one child makes (COURSE §4.1).
pub const MAX_SUBAGENT_TURNS: u32 = 30;

/// The result of a child that reached [`MAX_SUBAGENT_TURNS`] still calling tools.
pub const STOPPED: &str = "Subagent stopped after 30 turns without a final answer.";

/// The result of a child whose final reply has no text.
pub const NO_SUMMARY: &str = "(no summary)";

/// How many characters of a child's tool output its `  [sub] NAME: PREVIEW` line shows.
pub const SUB_PREVIEW_CHARS: usize = 100;

/// The result of a child whose last answer has no text, in the course's s15.
pub const NO_SUMMARY_S15: &str = "Subagent finished without a text summary.";

/// The child's SYSTEM prompt in the course's s15 (COURSE-s10-s17 §6.3).
pub fn child_system_s15(workdir: &str) -> String {
    format!(
        "You are a coding subagent at {workdir}. Environment: {ENVIRONMENT}. Complete the task, then return a concise final summary. Do not spawn more agents."
    )
}

/// The child's SYSTEM prompt (COURSE §4.1).
pub fn child_system(workdir: &str) -> String {
    format!(
        "You are a coding agent at {workdir}. Environment: {ENVIRONMENT}. Complete the given task, then return a concise final answer."
    )
}

/// The `task` tool's input schema: `prompt`, a non-empty string, required.
pub fn task_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"prompt": {"type": "string", "minLength": 1}},
        "required": ["prompt"],
    })
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It answered without calling a tool; the text (or [`NO_SUMMARY`]) is the task's result.
    Answered,
    /// It was still calling tools after [`MAX_SUBAGENT_TURNS`] calls.
    Stopped,
    /// A model call failed (after the client's retries); the parent gets `Error: …`.
    Failed(String),
}

/// A finished child: what it was asked, its whole `messages` list, what came back, and its
/// tokens.
#[derive(Debug, Clone)]
pub struct SubagentRun {
    /// The prompt, the child's first message.
    pub prompt: String,
    /// The child's history, kept for `/history task N`; the parent never sees it.
    pub messages: Vec<Message>,
    /// The task's result as the parent's `tool_result` holds it.
    pub result: String,
    /// How it ended.
    pub ending: Ending,
    /// The child's requests and tokens.
    pub usage: UsageTotals,
}

impl SubagentRun {
    /// The size of the child's history as JSON, in bytes: what stayed in the child.
    pub fn kept_bytes(&self) -> usize {
        serde_json::to_string(&self.messages).map_or(0, |s| s.len())
    }
}

/// What the course's `run_subagent` needs from the parent: the shared model, the base tools and
/// hooks of the kernel, the child's SYSTEM prompt and where its lines go.
#[derive(Clone)]
pub struct Subagents {
    model: Arc<dyn Model>,
    model_id: String,
    system: String,
    tools: DispatchMap,
    hooks: Shared<HookRegistry>,
    events: Events,
    runs: Arc<Mutex<Vec<SubagentRun>>>,
    /// The result of a child whose last answer has no text ([`NO_SUMMARY`] by default).
    no_summary: &'static str,
}

impl Subagents {
    /// Children of this chapter's parent: `kernel`'s five base tools and shared hooks, the
    /// setup's model and listener, and [`child_system`] for the workspace.
    pub fn new(setup: &Setup, kernel: &Kernel) -> Self {
        Self {
            model: Arc::clone(&setup.model),
            model_id: setup.model_id.clone(),
            system: child_system(&setup.workdir()),
            tools: kernel.tools.clone(),
            hooks: kernel.hooks.clone(),
            events: Arc::clone(&setup.events),
            runs: Arc::default(),
            no_summary: NO_SUMMARY,
        }
    }

    /// The same children with the SYSTEM prompt `system` and `no_summary` as the result of a
    /// child whose last answer has no text: the course's s15 words both its own way
    /// ([`child_system_s15`], [`NO_SUMMARY_S15`]).
    #[must_use]
    pub fn worded(mut self, system: String, no_summary: &'static str) -> Self {
        self.system = system;
        self.no_summary = no_summary;
        self
    }

    /// The `task` tool for the parent's dispatch map.
    pub fn task_tool(&self) -> TaskTool {
        TaskTool { subagents: self.clone() }
    }

    /// The finished children so far, oldest first.
    pub fn runs(&self) -> Vec<SubagentRun> {
        self.locked().clone()
    }

    fn locked(&self) -> MutexGuard<'_, Vec<SubagentRun>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The course's `run_subagent`: a child `agent_loop` on `[{"role":"user","content":prompt}]`
    /// with the child SYSTEM, the five base tools, the parent's hooks and at most
    /// [`MAX_SUBAGENT_TURNS`] model calls. Its tool lines go to the parent's listener as
    /// `  [sub] NAME: PREVIEW`; the rest of what it reports stays in the child.
    pub async fn run_subagent(&self, prompt: &str) -> SubagentRun {
        let mut child = Agent::builder(Arc::clone(&self.model), &self.model_id)
            .system(&self.system)
            .tools(self.tools.clone())
            .extension(self.hooks.clone())
            .events(Arc::new(ChildLines { parent: Arc::clone(&self.events) }))
            .max_rounds(MAX_SUBAGENT_TURNS)
            .build();
        let mut messages = vec![Message::user_text(prompt)];
        let outcome = child.agent_loop(&mut messages).await;
        let usage = child.session_usage();
        let (result, ending) = ending(outcome, usage.requests, self.no_summary);
        SubagentRun { prompt: prompt.to_owned(), messages, result, ending, usage }
    }

    /// The REPL commands that show the children: `/history task N` (and `/history` as usual),
    /// `/usage` with the children's tokens apart.
    pub fn commands(&self) -> Vec<SlashCommand> {
        let (history, usage) = (self.clone(), self.clone());
        vec![
            SlashCommand::with_context(
                "history",
                "the messages array as the next request sends it; `/history task N`: the Nth finished subagent's",
                move |c| history.show_history(c),
            ),
            SlashCommand::with_context(
                "usage",
                "requests and tokens used in this session, the subagents' apart",
                move |c| {
                    let children = usage.runs().iter().fold(UsageTotals::default(), |mut all, run| {
                        all.absorb(&run.usage);
                        all
                    });
                    c.ui.say(&format!(
                        "{}\n{}",
                        usage_line("this session (the parent)", &c.agent.session_usage()),
                        usage_line("its subagents", &children)
                    ));
                },
            ),
        ]
    }

    /// `/history`: the parent's messages; `/history task N`: the Nth finished child's.
    fn show_history(&self, c: &CommandContext<'_>) {
        let Some(n) = c.args.strip_prefix("task") else {
            if !c.args.is_empty() {
                c.ui.error("usage: /history, or /history task N for the Nth finished subagent");
                return;
            }
            c.ui.say(&history_view(&c.agent.request(c.history).messages));
            return;
        };
        let runs = self.runs();
        match n.trim().parse::<usize>() {
            Ok(n) if (1..=runs.len()).contains(&n) => {
                let run = &runs[n - 1];
                c.ui.say(&format!(
                    "subagent {n} of {}: {}\n{}",
                    runs.len(),
                    one_line(&run.prompt, 80),
                    history_view(&run.messages)
                ));
            }
            _ if runs.is_empty() => c.ui.say("(no subagent has finished yet)"),
            _ => c.ui.error(&format!("/history task N takes N from 1 to {}", runs.len())),
        }
    }
}

/// The task's result and ending from the child loop's outcome, after `requests` model calls.
fn ending(outcome: Result<MessagesResponse, ApiError>, requests: u32, no_summary: &str) -> (String, Ending) {
    match outcome {
        Err(e) => (format!("Error: {e}"), Ending::Failed(e.to_string())),
        Ok(last) if last.tool_uses().next().is_some() && requests >= MAX_SUBAGENT_TURNS => {
            (STOPPED.to_owned(), Ending::Stopped)
        }
        Ok(last) => {
            let text = last.text();
            (if text.trim().is_empty() { no_summary.to_owned() } else { text }, Ending::Answered)
        }
    }
}

/// `1234` → `1.2 KB`, `412` → `412 B` (decimal units, as the isolation line shows sizes).
pub fn human_bytes(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// The child's listener: each of its tool results becomes a grey `  [sub] NAME: PREVIEW` line in
/// the parent's listener, and its retries pass through; its text and stop notes stay in the child.
struct ChildLines {
    parent: Events,
}

impl EventSink for ChildLines {
    fn on_event(&self, event: &Event<'_>) {
        match event {
            Event::ToolResult { name, content, .. } => {
                let text = format!("  [sub] {name}: {}", one_line(content.trim(), SUB_PREVIEW_CHARS));
                line(&*self.parent, Level::Detail, &text);
            }
            Event::Retry { .. } => self.parent.on_event(event),
            _ => {}
        }
    }
}

/// The `task` tool's input.
#[derive(Debug, serde::Deserialize)]
pub struct TaskArgs {
    /// What the child is asked, its first and only user message.
    pub prompt: String,
}

/// The `task` tool: runs [`Subagents::run_subagent`] and returns the child's final text,
/// [`NO_SUMMARY`], [`STOPPED`], or `Error: …` (with `is_error`) when the child's model call
/// failed; the parent goes on either way. Its lines: `[Subagent started]`, the child's tool lines,
/// then `[Subagent done: …]` with what stayed in the child against what came back, or
/// `[Subagent stopped: …]`.
pub struct TaskTool {
    subagents: Subagents,
}

impl TypedTool for TaskTool {
    type Args = TaskArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TASK_TOOL_NAME.into(),
            description: TASK_DESCRIPTION.into(),
            input_schema: task_schema(),
        }
    }

    fn subject(&self, args: &TaskArgs) -> Subject {
        Subject::Text(args.prompt.clone())
    }

    async fn run(self: Arc<Self>, args: TaskArgs) -> Result<String, ToolError> {
        if args.prompt.trim().is_empty() {
            return Err(ToolError::InvalidInput("prompt must not be empty".into()));
        }
        let subagents = &self.subagents;
        let events = &*subagents.events;
        line(events, Level::Mechanism, "[Subagent started]");
        let run = subagents.run_subagent(&args.prompt).await;
        let (n, kept, back) =
            (run.messages.len(), human_bytes(run.kept_bytes()), human_bytes(run.result.len()));
        let result = match &run.ending {
            Ending::Answered => {
                let text =
                    format!("[Subagent done: {n} messages, {kept} stayed in the child; {back} returned]");
                line(events, Level::Mechanism, &text);
                Ok(run.result.clone())
            }
            Ending::Stopped => {
                let text = format!(
                    "[Subagent stopped: {MAX_SUBAGENT_TURNS} turns without a final answer; {n} messages, {kept} stayed in the child]"
                );
                line(events, Level::Mechanism, &text);
                Ok(run.result.clone())
            }
            Ending::Failed(why) => {
                line(events, Level::Mechanism, &format!("[Subagent stopped: {why}]"));
                Err(ToolError::failed(why))
            }
        };
        subagents.locked().push(run);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_a_person_writes_them() {
        assert_eq!(human_bytes(412), "412 B");
        assert_eq!(human_bytes(18_200), "18.2 KB");
        assert_eq!(human_bytes(2_500_000), "2.5 MB");
    }

    #[test]
    fn the_child_system_carries_the_workdir_and_the_environment_clause() {
        assert_eq!(
            child_system("/w"),
            "You are a coding agent at /w. Environment: Unix-like: the bash tool runs the system shell. Complete the given task, then return a concise final answer."
        );
    }
}
