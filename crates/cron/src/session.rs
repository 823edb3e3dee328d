//! The scheduler in a chapter run (course s12's `start_runtime_threads` and the CLI's part): the
//! jobs of this workspace, the clock, the three tools, the delivery extension and `/cron`, with
//! due jobs running as the REPL's automatic turns.

use std::sync::Arc;

use agent_cli::chapter::Setup;
use agent_cli::repl::SlashCommand;
use agent_cli::ui::Ui;
use agent_core::dispatch::DispatchMap;
use agent_core::turns::AutoTurn;

use crate::clock::Clock;
use crate::delivery::{CronDelivery, SCHEDULED_REFUSAL};
use crate::dialect::Dialect;
use crate::file::DurableFile;
use crate::scheduler::{CronScheduler, scheduled_message};
use crate::tools::{CancelCron, ListCrons, ScheduleCron};

/// The name automatic turns from the scheduler carry (shown when the turn starts).
pub const SOURCE: &str = "cron";

/// The scheduler of one chapter run.
pub struct Cron {
    scheduler: Arc<CronScheduler>,
}

impl Cron {
    /// Loads `.scheduled_tasks.json` from the workspace (reporting what it loaded or why it could
    /// not) and starts the timer on `clock`: each due job becomes an automatic turn (source
    /// `cron`) whose prompt is `[Scheduled] {prompt}` and whose permission questions are refused
    /// with [`SCHEDULED_REFUSAL`]. Each one-shot job scheduled in this run holds a promise of a
    /// turn until it is delivered or cancelled, so `-p` and the demo wait for it. Must be called
    /// inside the chapter's tokio runtime (the build closure is).
    pub fn start(setup: &Setup, clock: Arc<dyn Clock>) -> Self {
        Self::start_in(setup, clock, Dialect::S12, SCHEDULED_REFUSAL)
    }

    /// [`Cron::start`] speaking `dialect` (the course's s15 words its cron tools and file its own
    /// way), whose scheduled turns are refused with `refusal` where they would ask.
    pub fn start_in(setup: &Setup, clock: Arc<dyn Clock>, dialect: Dialect, refusal: &str) -> Self {
        let promises = setup.turns.clone();
        let file = DurableFile::in_workdir(setup.workspace.root());
        let scheduler = Arc::new(
            CronScheduler::new(file, clock, setup.events.clone())
                .hold_one_shots(move || Box::new(promises.expect()))
                .dialect(dialect),
        );
        scheduler.load_durable_jobs();
        let (turns, refusal) = (setup.turns.clone(), refusal.to_owned());
        tokio::spawn(Arc::clone(&scheduler).run(move |job| {
            turns.push(AutoTurn::new(SOURCE, scheduled_message(&job.prompt)).refusing(refusal.clone()))
        }));
        Self { scheduler }
    }

    /// The scheduler itself.
    pub fn scheduler(&self) -> &Arc<CronScheduler> {
        &self.scheduler
    }

    /// Adds `schedule_cron`, `list_crons` and `cancel_cron`, in that order, after the tools
    /// already in `tools`.
    pub fn add_tools(&self, tools: &mut DispatchMap) {
        tools
            .register(ScheduleCron(Arc::clone(&self.scheduler)))
            .register(ListCrons(Arc::clone(&self.scheduler)))
            .register(CancelCron(Arc::clone(&self.scheduler)));
    }

    /// The delivery extension; add it after the chapter's other extensions.
    pub fn extension(&self) -> CronDelivery {
        CronDelivery::new(Arc::clone(&self.scheduler))
    }

    /// `/cron`: the jobs, each with the time it fires next.
    pub fn commands(&self) -> Vec<SlashCommand> {
        let scheduler = Arc::clone(&self.scheduler);
        vec![SlashCommand::new("cron", "the cron jobs and when each fires next", move |ui: &Ui| {
            ui.say(&scheduler.describe());
        })]
    }
}
