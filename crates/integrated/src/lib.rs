//! The course's s15, the integrated harness: the mechanisms of s03–s14 in one loop (teammates
//! and worktrees from the `team` crate among them), with the
//! recovery a real harness needs. Every mechanism comes from its own crate; this crate only puts
//! them together, with s15's own words where the course's s15 words them differently (each such
//! difference is a parameter of the mechanism's crate, named here).
//!
//! ```text
//!  user prompt / automatic turn (cron, team events, finished background command)
//!     │ UserPromptSubmit hook
//!     ▼
//!  before the turn: SYSTEM = 7 fixed sections + time + skills   (integrated::system, skills)
//!                   + memory catalog + recalled records          (memory: one recall call)
//!  before each request (pre_inference, in this order):
//!     [Scheduled] jobs ─ cron (delivery, acknowledged once the model has them)
//!     <reminder>Update your todos.</reminder> ─ todo (nag)
//!     budget, snip, micro, fit, summary ─ compact
//!     + Connected MCP servers, mcp__* tools ─ mcp (before_request)
//!     ▼
//!  request ── 529, 529 → FALLBACK_MODEL_ID; 429 → back-off (client); max_tokens → 16000, then
//!     │       "Continue from the previous response…" (agent_core); prompt too long → reactive
//!     │       compact, once (compact); any other failure → "[Error] {Type}: {e}" (mcp)
//!     ▼
//!  tool_use ── PreToolUse: log, permission (our kernel's rule), MCP host policy ─ handlers ─
//!     │        PostToolUse ─ tool_result
//!     ▼
//!  after the batch: `compact` → summary (compact);  no tool_use → Stop hook, memory extraction
//! ```
//!
//! Where s15 differs from the chapter that introduced a mechanism, it is a parameter here:
//! `read_file`'s 0-based `offset` ([`agent_core::tools::ReadLines::Skip`]),
//! the background summary cap of 200 and the wake ([`background::BackgroundManager::wake`]),
//! `todo_write`'s checks and result ([`todo::tools::todo_write_tool_s15`]), `load_skill`'s words
//! ([`skills::SkillLoader::load_skill_tool_s15`]), the subagent's SYSTEM and empty result
//! ([`subagent::Subagents::worded`]), the cron tools' words, ids and file ([`cron::Dialect::S15`]),
//! the tool definitions of `task`, `compact` and `connect_mcp` ([`agent_core::dispatch::DispatchMap::reshape`]), the deny-list text
//! ([`agent_core::wording::DenyList::Quoted`]), the memory guidance that s15 words itself
//! ([`memory::Memory::extension_without_guidance`]), the team's refusals, task texts and
//! teammate prompt ([`team::runtime::Words::s15`]).
//!
//! s16 is "the s15 host with `Workflow` appended last": it calls [`harness`] and adds an
//! extension after [`Composed::harness`]'s whose `before_request` registers its tool, so that it
//! comes after the MCP tools as in the course.

#![warn(missing_docs)]

pub mod status;
pub mod system;

use std::sync::Arc;

use agent_cli::chapter::{AgentSettings, ApprovalArgs, Composed, ENVIRONMENT, Harness, Setup};
use agent_core::approve::{Approver, Question, Reply};
use agent_core::extension::Shared;
use agent_core::hooks::HookSet;
use agent_core::messages::ToolSpec;
use agent_core::tools::{self, ExitStatusText, ToolOptions};
use agent_core::wording::{DenyList, UnknownTool};
use background::BackgroundManager;
use clap::Args;
use cron::ShiftedClock;
use cron::session::Cron;
use serde_json::json;

/// `max_tokens` of a request sent again after an answer cut off at 8000 (course s15).
pub const ESCALATED_MAX_TOKENS: u32 = 16_000;

/// What the model is asked after an answer cut off at the raised cap (course s15).
pub const CONTINUATION_PROMPT: &str = "Continue from the previous response. Do not repeat completed work.";

/// How often one loop asks the model to continue (course s15 `MAX_RECOVERY_RETRIES`).
pub const MAX_RECOVERY_RETRIES: u32 = 2;

/// Overloaded answers in a row after which the fallback model takes over (course s15
/// `MAX_CONSECUTIVE_529`).
pub const MAX_CONSECUTIVE_529: u32 = 2;

/// The variable naming the fallback model (optional).
pub const FALLBACK_MODEL_VAR: &str = "FALLBACK_MODEL_ID";

/// What a `bash` call that would ask gets during an automatic turn (course s15: no one is there
/// to answer an asynchronous turn's question).
pub const SHELL_REFUSAL: &str =
    "Permission denied: interactive shell approval is unavailable during an asynchronous turn";

/// What an MCP call that would ask gets during an automatic turn (course s15).
pub const MCP_REFUSAL: &str =
    "Permission denied: interactive MCP approval is unavailable during an asynchronous turn";

/// s15's flags: the permission answers and the scheduler's clock.
#[derive(Debug, Clone, Default, Args)]
pub struct IntegratedArgs {
    /// `--yes`, `--no`, `--allow`.
    #[command(flatten)]
    pub approval: ApprovalArgs,
    /// Start the cron scheduler's clock at this local time instead of the system's, optionally
    /// running SPEED times faster: `2026-08-10T08:59:30`, `2026-08-10T08:59x60`. To try a
    /// schedule without waiting for it.
    #[arg(long, value_name = "TIME[xSPEED]", value_parser = ShiftedClock::parse)]
    pub clock: Option<ShiftedClock>,
}

/// Where the demo's clock starts and how fast it runs (see `chapters/s15/demo`).
pub const DEMO_CLOCK: &str = "2026-08-10T09:29:50x20";

/// The s15 harness for `setup`: SYSTEM, the tools in the course's order, the extensions in the
/// loop's order, the REPL commands (`/status` and each mechanism's own), the recovery settings
/// and the `[Error] {Type}: {e}` answer of a failed request.
///
/// # Errors
/// A `.mcp.json` in the workspace that cannot be read or parsed (the message names the file).
pub fn harness(setup: &Setup, args: &IntegratedArgs) -> Result<Composed, String> {
    let approval = &args.approval;
    // s15's bash and file tools: a failed command is `Error: command exited with status N`, an
    // unknown tool `Unknown tool: NAME`.
    let options = ToolOptions {
        exit_status: ExitStatusText::Error,
        read_lines: tools::ReadLines::Skip,
        ..setup.tool_options.clone()
    };
    let hook_set = HookSet {
        deny_list: DenyList::Quoted,
        // The loop intercepts `compact` past every hook (course s15).
        unhooked_tools: vec![compact::COMPACT_TOOL_NAME.into()],
        ..HookSet::default()
    };
    let base = tools::all(&setup.workspace, &options).unknown_tool(UnknownTool::Long);

    let background = BackgroundManager::new(&setup.workspace, &options, setup.events.clone())
        .summary_chars(background::S15_SUMMARY_CHARS)
        .wake(setup.turns.clone(), SHELL_REFUSAL);
    let (todo, nag, todos) = todo::tools::todo_write_tool_s15(setup.ui.clone());
    let mcp = mcp::McpTools::for_setup_with(setup, setup.approver(approval), mcp::hub::Hub::s15)?;
    let mut hooks = setup.course_hooks_with(approval, hook_set);
    mcp.register_permission_hook(&mut hooks, Box::new(McpRefusal(setup.approver(approval))));
    // One registry for the Lead and its subagents: a child runs under the same log, permission
    // and host policy.
    let hooks = Shared::new(hooks);
    // A subagent gets the five base tools (course s15 `SUB_TOOLS`): no background, no todo list.
    let kernel = agent_cli::chapter::Kernel { tools: base.clone(), hooks: hooks.clone() };
    let subagents = subagent::Subagents::new(setup, &kernel)
        .worded(subagent::child_system_s15(&setup.workdir()), subagent::NO_SUMMARY_S15);
    let skills = skills::SkillLoader::new(setup);
    let compaction = compact::Compaction::new(setup, compact::Limits::default()).s15();
    let memory = memory::Memory::new(setup);
    let team = team::runtime::TeamRuntime::start_with(setup, approval, &[], team::runtime::Words::s15())?;
    let clock = cron::run_clock(args.clock, setup.demo, DEMO_CLOCK);
    let cron = Cron::start_in(setup, Arc::clone(&clock), cron::Dialect::S15, SHELL_REFUSAL);

    let mut tools = base
        .with(background.bash_tool())
        .with(todo)
        .with(subagents.task_tool())
        .with(skills.load_skill_tool_s15())
        .with(compaction.compact_tool());
    tools = team::tasktools::lead_task_tools(&team, tools);
    cron.add_tools(&mut tools);
    tools = team::lead::team_tools(&team, tools);
    tools = mcp.add_to(tools);
    let tools = s15_definitions(tools);

    let system =
        system::SystemPrompt::new(ENVIRONMENT, &setup.workdir(), skills.clone(), move || clock.now());
    let mut commands = vec![];
    let sections = status::Sections {
        todos: Some(todos),
        tasks: vec![status::tasks_command(Arc::clone(&team))],
        team: team::lead::commands(&team),
        background: background.commands(),
        cron: cron.commands(),
        mcp: mcp.commands(),
        memory: memory.commands(),
        context: compaction.commands(),
    };
    commands.extend(sections.into_commands());
    commands.extend(subagents.commands());
    commands.extend(skills.commands());

    let harness = Harness {
        // Each turn replaces it (system::SystemPrompt); this is what a turn starts from.
        system: system.text(chrono::Local::now().naive_local()),
        tools,
        extensions: vec![
            // The team first: a `[Team events]` turn reads the Lead's mailbox before anything.
            Box::new(team::lead::LeadWake::new(Arc::clone(&team))),
            Box::new(hooks),
            Box::new(system),
            Box::new(memory.extension_without_guidance()),
            Box::new(cron.extension()),
            Box::new(nag),
            Box::new(compaction.clone()),
            Box::new(mcp.extension()),
        ],
        commands,
    };
    let fallback = std::env::var(FALLBACK_MODEL_VAR).ok().filter(|m| !m.trim().is_empty());
    let agent: AgentSettings = Box::new(move |builder| {
        let builder = builder
            .escalate_max_tokens(ESCALATED_MAX_TOKENS)
            .continue_after_max_tokens(CONTINUATION_PROMPT, MAX_RECOVERY_RETRIES);
        match fallback {
            Some(model) => builder.fallback_model(model, MAX_CONSECUTIVE_529),
            None => builder,
        }
    });
    let error_text = mcp.error_text();
    Ok(Composed { error_text: Some(Arc::new(error_text)), agent: Some(agent), ..Composed::from(harness) })
}

/// `tools` with the course's s15 definitions of the tools that s15 words differently from the
/// chapter that introduced them (COURSE-s10-s17 §6.3).
fn s15_definitions(tools: agent_core::dispatch::DispatchMap) -> agent_core::dispatch::DispatchMap {
    let spec = |name: &str, description: &str, schema| ToolSpec {
        name: name.into(),
        description: description.into(),
        input_schema: schema,
    };
    let nothing = || json!({"type": "object", "properties": {}, "required": []});
    tools
        .reshape(spec("list_tasks", "List all tasks.", nothing()), &[])
        .describe("get_task", "Get full task details.")
        .describe("claim_task", "Claim a pending task.")
        .describe("complete_task", "Complete an in-progress task.")
        .reshape(spec("list_teammates", "List active teammates.", nothing()), &[])
        .describe("send_message", "Send message to a teammate.")
        .describe("request_shutdown", "Request a teammate to shut down.")
        .describe("request_plan", "Ask a teammate to submit a plan.")
        .describe("review_plan", "Approve or reject a submitted plan.")
        .describe("create_worktree", "Create a task-bound git worktree for a pending task.")
        .reshape(
            spec(
                "task",
                "Launch a focused subagent. Returns only its final summary.",
                json!({"type": "object", "properties": {"description": {"type": "string"}}, "required": ["description"]}),
            ),
            &[("description", "prompt")],
        )
        .reshape(
            spec(
                "compact",
                "Summarize earlier conversation and continue with compacted context.",
                json!({"type": "object", "properties": {"focus": {"type": "string"}}, "required": []}),
            ),
            &[],
        )
        .reshape(
            spec(
                "connect_mcp",
                "Connect to an MCP server (docs, deploy) and discover tools.",
                json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
            &[],
        )
}

/// The approver of the MCP host-policy question: during an automatic turn it refuses with the
/// course's MCP text ([`MCP_REFUSAL`]) instead of the shell's.
struct McpRefusal(Box<dyn Approver>);

impl Approver for McpRefusal {
    fn ask(&mut self, question: &str) -> bool {
        self.0.ask(question)
    }

    fn reply(&mut self, question: &Question) -> Reply {
        match self.0.reply(question) {
            Reply::Refused(_) => Reply::Refused(MCP_REFUSAL.to_owned()),
            other => other,
        }
    }
}
