//! s16: the workflow runtime. The model decides each step; code decides the orchestration. One
//! `Workflow` tool call runs a saved workflow (`review-changes`: four audits at once, each
//! finding verified by its own agent), checks each answer against a schema, keeps to a budget,
//! and journals every answer so that a resume calls the model only for what changed.
//!
//! ```text
//!  LLM -- tool_use Workflow(name, args, resume_from_run_id) --> WorkflowRuntime
//!                                                                 + agent | parallel | pipeline
//!                                                                 + .runtime/{run}.journal.jsonl
//!  LLM <-- {"launched", "result", "task"} <------------------------+ .runtime/{run}.output.json
//! ```
//!
//! Changes from s15 (the course's s16 is the s15 host with `Workflow` appended last to its tools):
//! the `Workflow` tool, progress lines as a run goes, `/runs`, and the subcommands `s16 demo`
//! and `s16 resume`, which run `review-changes` with the deterministic runner and print the
//! course's golden output.
//!
//! Key insight: put the plan in code. The model supplies a name and arguments, never a script,
//! and the journal is keyed by what was asked, not by the order answers came back.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agent_cli::chapter::{self, Banner, Chapter, CommonArgs, Composed, Demo, Setup};
use agent_cli::cli;
use agent_cli::repl::SlashCommand;
use agent_cli::ui::Ui;
use agent_core::events::{self, Level};
use agent_core::workspace::Workspace;
use integrated::IntegratedArgs;
use workflow::offline::{OfflineRun, run_offline};
use workflow::runner::{AgentRunner, RunnerFactory};
use workflow::state::Reporter;
use workflow::store::runs_view;
use workflow::tool::WorkflowExtension;
use workflow::{ApiAgentRunner, MockAgentRunner, WorkflowRuntime, WorkflowTool};

const CHAPTER: Chapter = Chapter {
    name: "s16",
    banner: Banner::new("s16: workflow runtime"),
    about: "s16: one Workflow tool call runs a saved orchestration (agent, parallel, pipeline), journalled so that a resume re-runs only what changed. `s16 demo` and `s16 resume` run it offline.",
    demo: Demo {
        prompt: "Review this change with the saved review workflow:\n\ndef load_user(user_id):\n    query = f\"SELECT * FROM users WHERE id = {user_id}\"\n    return db.execute(query).fetchone()",
        files: &[],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

/// s16's arguments: s15's flags, and the offline subcommands.
#[derive(Debug, clap::Args)]
struct S16Args {
    #[command(flatten)]
    integrated: IntegratedArgs,
    #[command(subcommand)]
    offline: Option<Offline>,
}

/// The course's `python code.py demo` and `python code.py resume`.
#[derive(Debug, Clone, Copy, clap::Subcommand)]
enum Offline {
    /// Run `review-changes` on a sample change with the deterministic runner (no model, no key),
    /// printing its events; the run's files go to .runtime/ in the workspace (--workdir, else the
    /// current folder).
    Demo,
    /// Resume the last run (.runtime/last_run.txt): every agent() call whose answer is in the
    /// journal is answered from it.
    Resume,
}

fn main() -> ExitCode {
    let (common, args) = chapter::parse::<S16Args>(&CHAPTER);
    if let Some(offline) = args.offline {
        return run_subcommand(offline, &common);
    }
    cli::run(&CHAPTER, &common, |setup| compose(setup, &args.integrated))
}

/// The s15 host with `Workflow` appended last to its tools (after the MCP tools each request
/// gets), progress lines as a run goes, and `/runs`.
fn compose(setup: &Setup, args: &IntegratedArgs) -> Result<Composed, String> {
    let mut composed = integrated::harness(setup, args)?;
    let runner: RunnerFactory = if setup.demo {
        // The offline demo has recorded turns for the loop only: its agents are the mock's.
        Arc::new(|| Arc::new(MockAgentRunner) as Arc<dyn AgentRunner>)
    } else {
        let (model, model_id) = (Arc::clone(&setup.model), setup.model_id.clone());
        Arc::new(move || {
            Arc::new(ApiAgentRunner::new(Arc::clone(&model), model_id.clone())) as Arc<dyn AgentRunner>
        })
    };
    let sink = setup.events.clone();
    let reporter: Reporter = Arc::new(move |event| events::line(&*sink, Level::Mechanism, &event.line()));
    let runtime = WorkflowRuntime::new(setup.workspace.clone(), runner).reporter(reporter);
    let workspace = setup.workspace.clone();
    composed.harness.extensions.push(Box::new(WorkflowExtension::new(WorkflowTool::new(runtime))));
    composed.harness.commands.push(SlashCommand::new(
        "runs",
        "the workflow runs in .runtime/: status, agents and tokens",
        move |ui: &Ui| match runs_view(&workspace) {
            Ok(text) => ui.say(&text),
            Err(e) => ui.error(&e.to_string()),
        },
    ));
    Ok(composed)
}

/// A line on stdout; a closed stdout is no reason to panic.
fn say(text: &str) {
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// `s16 demo` / `s16 resume`: [`workflow::offline::run_offline`] in the workspace, printed.
fn run_subcommand(offline: Offline, common: &CommonArgs) -> ExitCode {
    let root = match &common.workdir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let fail = |message: String| {
        Ui::detect().error(&message);
        ExitCode::from(1)
    };
    let workspace = match Workspace::new(&root) {
        Ok(w) => w,
        Err(e) => return fail(format!("cannot open the workspace {}: {e}", root.display())),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let which = match offline {
        Offline::Demo => OfflineRun::Demo,
        Offline::Resume => OfflineRun::Resume,
    };
    match runtime.block_on(run_offline(workspace, which, Arc::new(say))) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => fail(e),
    }
}
