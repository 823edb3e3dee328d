//! s12: the cron scheduler. A prompt starts itself at a local time, as a turn of its own when
//! the agent is idle.
//!
//! ```text
//!  schedule_cron -> .scheduled_tasks.json        timer: sleeps until the next matching minute
//!                                                   | due: pending, saved, queued
//!                                                   v
//!  you -> prompt -> LLM <-> tools     idle? -> "[Scheduled] {prompt}" -> LLM <-> tools
//!                                                   | acknowledged once the model accepted it
//! ```
//!
//! Changes from s09 (the course builds every chapter from s06 on on the s04 kernel): memory
//! leaves; `Cron` arrives: `schedule_cron`, `list_crons`, `cancel_cron`, a timer that queues due
//! jobs as automatic turns, the delivery extension (at least once) and `/cron`. A scheduled turn's
//! permission question is refused with the course's fixed text; `bash` reports a failed command
//! as the course's s12 does.
//!
//! Key insight: a scheduled prompt is just another turn; what makes it safe is what the harness
//! refuses: no turn while another runs, no question to a person who is not there, no
//! acknowledgement before the model has it, no make-up for missed times.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, ENVIRONMENT, Harness};
use agent_core::tools::{self, ExitStatusText, ToolOptions};
use clap::Args;
use cron::ShiftedClock;
use cron::session::Cron;

const CHAPTER: Chapter = Chapter {
    name: "s12",
    banner: Banner::new("s12: Cron Scheduler - run prompts on a local schedule"),
    about: "s12: the s04 kernel and a cron scheduler: prompts that run as turns of their own at a local time.",
    demo: Demo {
        prompt: "It is 09:29 now. At 09:30 today, write a stand-up note listing the Python files here; and every weekday at 09:00, run the tests.",
        files: &[
            ("greet.py", include_str!("../demo/greet.py")),
            ("test_greet.py", include_str!("../demo/test_greet.py")),
        ],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[".scheduled_tasks.json", "standup.md"],
    },
};

/// Where the demo's clock starts (a Monday, ten seconds before the one-shot job's minute) and how
/// many times faster than real time it runs: the job fires half a second after it is scheduled.
const DEMO_CLOCK: &str = "2026-08-10T09:29:50x20";

/// s12's flags: the permission answers and the scheduler's clock.
#[derive(Debug, Clone, Args)]
struct S12Args {
    #[command(flatten)]
    approval: ApprovalArgs,
    /// Start the scheduler's clock at this local time instead of the system's, optionally
    /// running SPEED times faster: `2026-08-10T08:59:30`, `2026-08-10T08:59x60`. To try a
    /// schedule without waiting for it.
    #[arg(long, value_name = "TIME[xSPEED]", value_parser = ShiftedClock::parse)]
    clock: Option<ShiftedClock>,
}

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, args: &S12Args| {
        let mut kernel = setup.kernel(&args.approval);
        // The course's s12 reports a failed command as `Error: command exited with status N`.
        let options = ToolOptions { exit_status: ExitStatusText::ErrorUncut, ..setup.tool_options.clone() };
        kernel.tools = tools::all(&setup.workspace, &options);
        let clock = cron::run_clock(args.clock, setup.demo, DEMO_CLOCK);
        let cron = Cron::start(setup, clock);
        cron.add_tools(&mut kernel.tools);
        Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use tools to solve tasks. Use schedule_cron for work that should start at a future local time.",
                setup.workdir()
            ),
            tools: kernel.tools,
            extensions: vec![Box::new(kernel.hooks), Box::new(cron.extension())],
            commands: cron.commands(),
        }
    })
}
