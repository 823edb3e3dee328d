//! s17: the goal loop. The model proposing to stop (an answer without a `tool_use`) ends the
//! turn only when a separate, tool-free evaluator finds the user's condition met; otherwise the
//! model is sent back with what is missing.
//!
//! ```text
//!  /goal COND --> COND is the user's message --> worker <--> tools
//!                                                  | no tool_use
//!                                                  v
//!        [Goal still active] ... <-- block -- evaluator (no tools, 512 tokens)
//!                                                  | achieved / failed / limit / error / defer
//!                                                  v
//!                                               return
//! ```
//!
//! Changes from s16 (the course builds s17 as a kernel of its own): the worker's SYSTEM asks for
//! concrete command results; the five base tools take s17's texts and behaviours (`bash` answers
//! `exit_code=N` and the output's tail, `read_file` a window, `edit_file` one occurrence only);
//! a file tool's path outside the repository is refused, not asked about; the goal arrives, a
//! `Stop` hook that asks the evaluator after each proposed stop, with `/goal`, `/goal <condition>`
//! and `/goal clear`.
//!
//! Key insight: "the model stopped calling tools" is a proposal, not a verdict. A second model
//! that can only read, never act, decides whether the work is done.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Composed, Demo, Harness};
use agent_cli::repl::SlashCommand;
use agent_core::hooks::{self, HookSet};
use agent_core::tools;
use agent_core::wording::{DenyList, UnknownTool};
use goal::hook::{GoalHook, no_background};
use goal::kernel::{TOOL_DESCRIPTIONS, WORKER_SYSTEM, register_repository_hook};
use goal::session::{GoalLine, goal_line, session_tokens};
use goal::{GoalController, PromptGoalEvaluator, Settings};

const CHAPTER: Chapter = Chapter {
    name: "s17",
    banner: Banner {
        title: "s17: goal loop",
        hint: "Set a condition with /goal <condition>. Type q to quit.",
    },
    about: "s17: the goal loop: /goal CONDITION, judged after each answer by a tool-free evaluator that sends unfinished work back.",
    demo: Demo {
        prompt: "/goal sh greet.sh prints exactly Hello, world! (shown by running it)",
        files: &[("greet.sh", include_str!("../demo/greet.sh"))],
        turns: include_str!("../demo/turns.jsonl"),
        show: &["greet.sh"],
    },
};

/// s17's arguments: the permission flags, and the course's one-shot form,
/// `s17 "/goal pytest exits with code 0"`.
#[derive(Debug, clap::Args)]
struct S17Args {
    #[command(flatten)]
    approval: ApprovalArgs,
    /// A prompt to run once, then exit (`/goal CONDITION` sets the goal first), as with -p.
    #[arg(value_name = "PROMPT", conflicts_with = "prompt")]
    words: Vec<String>,
}

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, args: &S17Args| {
        let vars = agent_core::config::environment(setup.workspace.root()).map_err(|e| e.to_string())?;
        let settings = Settings::from_vars(&vars).map_err(|e| e.to_string())?;
        // s17's own kernel: the base tools with s17's texts and behaviours, and the course's hooks
        // with a path outside the repository refused, not asked about.
        let mut tools =
            tools::all(&setup.workspace, &setup.tool_options.clone().s17()).unknown_tool(UnknownTool::Goal);
        for (name, text) in TOOL_DESCRIPTIONS {
            tools = tools.describe(name, text);
        }
        let set = HookSet { deny_list: DenyList::Pattern, ..HookSet::default() };
        let mut hooks = hooks::course_hooks_with(
            setup.events.clone(),
            setup.approver(&args.approval),
            setup.inside_workspace(),
            setup.workdir(),
            set,
        );
        register_repository_hook(&mut hooks, setup.inside_workspace());

        // The goal: a Stop hook asking a tool-free evaluator, and `/goal` to set, show and clear it.
        let evaluator = PromptGoalEvaluator::new(settings.evaluator_model.clone());
        let controller =
            GoalController::new(Box::new(evaluator), settings.block_cap).map_err(|e| e.to_string())?;
        let hook = GoalHook::new(controller, no_background());
        let handle = hook.handle();
        let command = SlashCommand::sending(
            "goal",
            "the goal; /goal CONDITION sets it, /goal clear drops it",
            move |ctx| {
                match goal_line(&handle, &format!("/goal {}", ctx.args), session_tokens(ctx.agent))? {
                    GoalLine::Show { text, .. } => ctx.ui.say(&text),
                    GoalLine::Send(condition) => return Some(condition),
                    GoalLine::Refused(error) => ctx.ui.error(&error.to_string()),
                }
                None
            },
        );
        let harness = Harness {
            system: WORKER_SYSTEM.to_owned(),
            tools,
            // The goal first: when it sends the model back, the Stop summary waits for the real end.
            extensions: vec![Box::new(hook), Box::new(hooks)],
            commands: vec![command],
        };
        Ok(Composed {
            harness,
            max_stop_continuations: Some(settings.block_cap),
            max_rounds: settings.max_turns,
            prompt: (!args.words.is_empty()).then(|| args.words.join(" ")),
            quit_words: &["quit"],
            error_text: None,
            agent: None,
        })
    })
}
