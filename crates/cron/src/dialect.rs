//! The course has two copies of its cron scheduler: s12's and a simpler one inside s15. They
//! schedule the same way but word their tools differently; [`Dialect`] is that difference, one
//! parameter of the one scheduler here.

use crate::job::CronJob;
use crate::scheduler::preview_chars;

/// Which of the course's cron copies a scheduler speaks (COURSE-s10-s17 §3.3 and §6.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// The course's s12: ids `cron_` + 8 hex digits, `Value 61 is outside [0-59]`, a blank prompt
    /// refused, `last_fired` saved.
    #[default]
    S12,
    /// The course's s15: ids `cron_` + 6 decimal digits, `Value 61 out of bounds [0-59]` (a
    /// range's bounds checked before its order), any prompt accepted, the cron expression quoted
    /// in results and listings, no `last_fired` in the file.
    S15,
}

impl Dialect {
    /// `schedule_cron`'s description.
    pub fn schedule_description(self) -> &'static str {
        match self {
            Dialect::S12 => "Schedule a prompt with a 5-field cron expression.",
            Dialect::S15 => {
                "Schedule a cron job. cron is 5-field: min hour dom month dow. For one-shot reminders, compute the target minute and set recurring=false."
            }
        }
    }

    /// `list_crons`' description.
    pub fn list_description(self) -> &'static str {
        match self {
            Dialect::S12 => "List scheduled cron jobs.",
            Dialect::S15 => "List registered cron jobs.",
        }
    }

    /// `schedule_cron`'s result: `Scheduled {id}: {cron} -> {prompt}` (s12) or with the
    /// expression quoted, `'{cron}'` (s15).
    pub fn scheduled(self, id: &str, cron: &str, prompt: &str) -> String {
        match self {
            Dialect::S12 => format!("Scheduled {id}: {cron} -> {prompt}"),
            Dialect::S15 => format!("Scheduled {id}: '{cron}' -> {prompt}"),
        }
    }

    /// One line of `list_crons`: `{id}: {cron} -> {prompt[:60]} [kind, storage]` (s12) or
    /// `  {id}: '{cron}' -> {prompt[:40]} [kind, storage]` (s15).
    pub fn list_line(self, job: &CronJob) -> String {
        let kind = if job.recurring { "recurring" } else { "one-shot" };
        let storage = if job.durable { "durable" } else { "session" };
        match self {
            Dialect::S12 => {
                format!("{}: {} -> {} [{kind}, {storage}]", job.id, job.cron, preview_chars(&job.prompt, 60))
            }
            Dialect::S15 => {
                format!(
                    "  {}: '{}' -> {} [{kind}, {storage}]",
                    job.id,
                    job.cron,
                    preview_chars(&job.prompt, 40)
                )
            }
        }
    }

    /// The part of a new id after `cron_`: 8 hex digits (s12's `secrets.token_hex(4)`) or 6
    /// decimal digits (s15's `random.randint(0, 999999):06d`).
    pub fn draw_id(self) -> String {
        match self {
            Dialect::S12 => format!("{:08x}", fastrand::u32(..)),
            Dialect::S15 => format!("{:06}", fastrand::u32(..1_000_000)),
        }
    }

    /// Whether a blank prompt is refused (`Prompt cannot be empty`, s12 only).
    pub fn refuses_blank_prompt(self) -> bool {
        self == Dialect::S12
    }

    /// Whether the saved jobs carry `last_fired` (s12 only; s15 keeps it in memory).
    pub fn saves_last_fired(self) -> bool {
        self == Dialect::S12
    }
}
