//! The course's three cron tools (s12 §3.3), with its names, descriptions and schemas:
//! `schedule_cron`, `list_crons`, `cancel_cron`.

use std::sync::Arc;

use agent_core::dispatch::{Subject, ToolError, TypedTool, run_blocking};
use agent_core::messages::ToolSpec;
use serde::Deserialize;
use serde_json::json;

use crate::scheduler::CronScheduler;

/// `schedule_cron`'s arguments (`recurring` and `durable` default to `true`, as the course's).
#[derive(Debug, Deserialize)]
pub struct ScheduleArgs {
    /// The 5-field expression.
    pub cron: String,
    /// The prompt to run.
    pub prompt: String,
    /// Fire at every match (`true`) or once.
    #[serde(default = "yes")]
    pub recurring: bool,
    /// Keep across restarts.
    #[serde(default = "yes")]
    pub durable: bool,
}

fn yes() -> bool {
    true
}

/// `schedule_cron`: `Scheduled {id}: {cron} -> {prompt}` (in the scheduler's [`crate::Dialect`]),
/// or `Error: {why}`.
pub struct ScheduleCron(pub Arc<CronScheduler>);

impl TypedTool for ScheduleCron {
    type Args = ScheduleArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "schedule_cron".into(),
            description: self.0.speaks().schedule_description().into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "cron": {"type": "string"},
                    "prompt": {"type": "string"},
                    "recurring": {"type": "boolean"},
                    "durable": {"type": "boolean"}
                },
                "required": ["cron", "prompt"]
            }),
        }
    }

    fn subject(&self, args: &ScheduleArgs) -> Subject {
        Subject::Text(format!("{} -> {}", args.cron, args.prompt))
    }

    async fn run(self: Arc<Self>, args: ScheduleArgs) -> Result<String, ToolError> {
        run_blocking("schedule_cron", move || {
            let job = self
                .0
                .schedule_job(&args.cron, &args.prompt, args.recurring, args.durable)
                .map_err(ToolError::failed)?;
            Ok(self.0.speaks().scheduled(&job.id, &args.cron, &args.prompt))
        })
        .await
    }
}

/// `list_crons`: one line per job, or `No cron jobs.`.
pub struct ListCrons(pub Arc<CronScheduler>);

/// `list_crons` takes nothing (any fields are ignored, as Python's `**{}` would refuse them but
/// the model never sends any).
#[derive(Debug, Deserialize)]
pub struct NoArgs {}

impl TypedTool for ListCrons {
    type Args = NoArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_crons".into(),
            description: self.0.speaks().list_description().into(),
            input_schema: json!({"type": "object", "properties": {}, "required": []}),
        }
    }

    async fn run(self: Arc<Self>, _args: NoArgs) -> Result<String, ToolError> {
        Ok(self.0.list_crons())
    }
}

/// `cancel_cron`'s argument.
#[derive(Debug, Deserialize)]
pub struct CancelArgs {
    /// The job's id.
    pub job_id: String,
}

/// `cancel_cron`: `Cancelled {id}`, `Job {id} not found`, or `Error: {why}` when the save failed.
pub struct CancelCron(pub Arc<CronScheduler>);

impl TypedTool for CancelCron {
    type Args = CancelArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "cancel_cron".into(),
            description: "Cancel a cron job by ID.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"job_id": {"type": "string"}},
                "required": ["job_id"]
            }),
        }
    }

    fn subject(&self, args: &CancelArgs) -> Subject {
        Subject::Text(args.job_id.clone())
    }

    async fn run(self: Arc<Self>, args: CancelArgs) -> Result<String, ToolError> {
        run_blocking("cancel_cron", move || self.0.cancel_job(&args.job_id).map_err(ToolError::failed)).await
    }
}
