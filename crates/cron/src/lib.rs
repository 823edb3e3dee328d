//! The cron scheduler of the course's s12: prompts that start themselves at a local time.
//!
//! ```text
//!  schedule_cron("0 9 * * 1-5", "run tests")          .scheduled_tasks.json (durable jobs)
//!        │                                                   ▲ saved before each change counts
//!        ▼                                                   │
//!  CronScheduler ── timer sleeps until the next matching minute ──► due: pending, saved, queued
//!        ▲                                                                     │
//!        │ acknowledged after the model accepted the request        a turn is asked for
//!        │ (restored when it failed)                                           ▼
//!  CronDelivery (extension) ◄──────────── "[Scheduled] run tests" runs when the agent is idle
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | [`expr`] | the 5-field grammar, its validation texts, matching in local time, the next matching minute |
//! | [`job`] | `CronJob` and its saved form |
//! | [`file`](mod@file) | `.scheduled_tasks.json`: the bytes Python writes, replaced atomically |
//! | [`clock`] | the local time: the system's, a shifted and faster one (demo, tests), one set by hand |
//! | [`scheduler`] | the jobs, the queue, the course's operations on them, and the timer |
//! | [`delivery`] | at-least-once delivery inside the agent loop |
//! | [`tools`] | `schedule_cron`, `list_crons`, `cancel_cron` |
//! | [`session`] | the scheduler in a chapter run: the workspace's file, due jobs as automatic turns, `/cron` |
//!
//! Key insight (course s12): a scheduled prompt is just another turn, and the lesson is in its
//! boundaries: it starts only when the agent is idle, it never asks the user anything, it is
//! delivered at least once, and a time missed while nothing ran is not replayed.

#![warn(missing_docs)]

pub mod clock;
pub mod delivery;
pub mod dialect;
pub mod expr;
pub mod file;
pub mod job;
pub mod scheduler;
pub mod session;
pub mod tools;

#[cfg(test)]
mod course_tests;

pub use clock::{Clock, SetClock, ShiftedClock, SystemClock, run_clock};
pub use delivery::{CronDelivery, SCHEDULED_PREFIX, SCHEDULED_REFUSAL};
pub use dialect::Dialect;
pub use expr::{CronError, CronExpr, cron_matches, validate_cron};
pub use file::{DURABLE_NAME, DurableFile, JobFile};
pub use job::CronJob;
pub use scheduler::{CronScheduler, ScheduleError, preview, scheduled_message};
