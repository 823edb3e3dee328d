//! The course's scheduler state and its operations (s12 `scheduled_jobs`, `cron_queue`,
//! `cron_lock` and the functions on them), and the timer that fires jobs.
//!
//! ```text
//!  schedule_job ─► scheduled_jobs ──(timer: a job's minute has come)──► poll_due_jobs
//!                      │  ▲                                               │ pending_delivery = true,
//!        cancel_job ◄──┘  │ restore_cron_jobs (the request failed)        │ saved, then queued
//!                         │                                               ▼
//!                         └──── acknowledge_cron_jobs ◄── the model ◄── cron_queue ─► announced
//!                               (recurring: not pending;   accepted        (a turn is asked for)
//!                                one-shot: removed; saved)
//! ```
//!
//! Every change to a durable job is saved before it counts: a job is queued only once the file
//! says `"pending_delivery": true`, and a save that fails puts the state back as it was and
//! reports the error (the course's rollback). Delivery is at least once: a job leaves the queue
//! for a turn, and is acknowledged only after the model accepted that turn's request; a process
//! that dies in between finds it pending in the file and delivers it again.
//!
//! The course wakes a thread every second to compare each job with the current minute. Ours
//! computes the next minute any job matches and sleeps until then, or until a job is added,
//! cancelled or restored ([`CronScheduler::wake`]): an idle session with jobs costs no CPU
//! between their minutes. Missed minutes (the process was not running, or the machine slept)
//! are not replayed: only the current minute is ever checked.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_core::events::{Events, Level, line};
use chrono::{NaiveDateTime, TimeDelta, Timelike};
use serde_json::Value;
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::dialect::Dialect;
use crate::expr::{CronError, CronExpr};
use crate::file::{JobFile, encode_in};
use crate::job::CronJob;

/// How many code points of a prompt the `[cron]` lines and `list_crons` show (course: `[:60]`).
pub const PROMPT_PREVIEW: usize = 60;

/// How many ids [`CronScheduler::schedule_job`] draws before giving up (course: 100).
pub const ID_ATTEMPTS: usize = 100;

/// The longest the timer sleeps before reading the clock again, even when no job is due sooner:
/// a wall clock set forward or back (NTP, a laptop waking) is noticed within this time.
pub const MAX_SLEEP: Duration = Duration::from_secs(15 * 60);

/// How soon, on the scheduler's clock, the timer tries again to queue a due job whose save failed.
pub const ENQUEUE_RETRY: Duration = Duration::from_secs(5);

/// The user message a scheduled turn sends (course: `[Scheduled] {prompt}`).
pub fn scheduled_message(prompt: &str) -> String {
    format!("[Scheduled] {prompt}")
}

/// The first [`PROMPT_PREVIEW`] code points of `prompt` (Python's `prompt[:60]`).
pub fn preview(prompt: &str) -> &str {
    preview_chars(prompt, PROMPT_PREVIEW)
}

/// The first `chars` characters of `prompt` (Python's `prompt[:chars]`).
pub fn preview_chars(prompt: &str, chars: usize) -> &str {
    prompt.char_indices().nth(chars).map_or(prompt, |(at, _)| &prompt[..at])
}

/// How `list_crons` names a job's kind and storage: `recurring` or `one-shot`, `durable` or
/// `session`.
fn kinds(job: &CronJob) -> (&'static str, &'static str) {
    (if job.recurring { "recurring" } else { "one-shot" }, if job.durable { "durable" } else { "session" })
}

/// Why [`CronScheduler::schedule_job`] scheduled nothing. `Display` is the text the
/// `schedule_cron` tool returns after `Error: `.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// The expression is invalid (`minute: Value 61 is outside [0-59]`).
    #[error(transparent)]
    Cron(#[from] CronError),
    /// `Prompt cannot be empty`.
    #[error("Prompt cannot be empty")]
    EmptyPrompt,
    /// `Could not allocate a cron job ID`: every id drawn was taken.
    #[error("Could not allocate a cron job ID")]
    NoId,
    /// Saving `.scheduled_tasks.json` failed; the job was not kept.
    #[error("{0}")]
    Save(#[from] io::Error),
}

/// A job and its parsed expression.
struct Entry {
    job: CronJob,
    expr: CronExpr,
}

/// A job waiting in the queue for its turn.
#[derive(Debug, Clone)]
struct Queued {
    id: String,
    /// A turn was asked for it ([`CronScheduler::run`]'s `deliver`) and has not taken it yet.
    announced: bool,
    /// Not to be announced before this local time (a job restored after a failed request waits
    /// for the next minute, so a model that is down is not asked again at once).
    not_before: Option<NaiveDateTime>,
}

#[derive(Default)]
struct State {
    /// `scheduled_jobs`, in insertion order (`list_crons` shows them so).
    jobs: Vec<Entry>,
    /// `cron_queue`: ids of jobs fired and not yet delivered, oldest first.
    queue: Vec<Queued>,
    /// The messages of turns announced for jobs cancelled before their turn began.
    withdrawn: Vec<String>,
    /// What [`CronScheduler::hold_one_shots`] keeps while each one-shot job is scheduled, by id.
    holds: Vec<(String, Hold)>,
}

impl State {
    /// Drops the holds of jobs no longer scheduled.
    fn release_holds(&mut self) {
        let jobs = &self.jobs;
        self.holds.retain(|(id, _)| jobs.iter().any(|e| &e.job.id == id));
    }
}

/// Something kept alive while a one-shot job is scheduled ([`CronScheduler::hold_one_shots`]).
type Hold = Box<dyn Send>;

impl State {
    fn position(&self, id: &str) -> Option<usize> {
        self.jobs.iter().position(|e| e.job.id == id)
    }

    fn job(&self, id: &str) -> Option<&CronJob> {
        self.jobs.iter().map(|e| &e.job).find(|j| j.id == id)
    }

    fn job_mut(&mut self, id: &str) -> Option<&mut CronJob> {
        self.jobs.iter_mut().map(|e| &mut e.job).find(|j| j.id == id)
    }

    fn queued(&self, id: &str) -> bool {
        self.queue.iter().any(|q| q.id == id)
    }
}

/// Where ids come from: 8 lowercase hex digits a call (the course's `secrets.token_hex(4)`).
type IdSource = Box<dyn FnMut() -> String + Send>;

/// The scheduler: the jobs, the queue, the file, the clock; shared (`Arc`) between the tools,
/// the timer and the delivery extension. One lock guards the state, held across a save, as the
/// course's `cron_lock`.
pub struct CronScheduler {
    state: Mutex<State>,
    file: Box<dyn JobFile>,
    clock: Arc<dyn Clock>,
    events: Events,
    ids: Mutex<IdSource>,
    wake: Notify,
    /// Makes the hold of each one-shot job scheduled ([`CronScheduler::hold_one_shots`]).
    hold: Option<Box<dyn Fn() -> Hold + Send + Sync>>,
    /// Which course chapter's words the tools and the file use.
    dialect: Dialect,
}

impl std::fmt::Debug for CronScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CronScheduler").field("jobs", &self.jobs()).finish_non_exhaustive()
    }
}

impl CronScheduler {
    /// A scheduler with no jobs, saving durable ones to `file`, reading the time from `clock`
    /// and reporting its `[cron] …` lines to `events`. Nothing is loaded until
    /// [`CronScheduler::load_durable_jobs`], and nothing fires until [`CronScheduler::run`].
    pub fn new(file: impl JobFile + 'static, clock: Arc<dyn Clock>, events: Events) -> Self {
        Self {
            state: Mutex::new(State::default()),
            file: Box::new(file),
            clock,
            events,
            ids: Mutex::new(Box::new(|| Dialect::S12.draw_id())),
            wake: Notify::new(),
            hold: None,
            dialect: Dialect::S12,
        }
    }

    /// The same scheduler speaking `dialect` (the course's s15 words its tools, ids and file
    /// differently from s12); set it before scheduling anything.
    #[must_use]
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        *self.ids.lock().unwrap_or_else(PoisonError::into_inner) = Box::new(move || dialect.draw_id());
        self
    }

    /// The dialect it speaks.
    pub fn speaks(&self) -> Dialect {
        self.dialect
    }

    /// The same scheduler keeping what `hold` returns while each one-shot job it schedules from
    /// now on is scheduled, dropping it when the job is delivered or cancelled. A run that ends
    /// when its work does (`-p`, the demo) holds a promise of a turn
    /// ([`agent_core::turns::TurnSender::expect`]) this way, so it waits for the one-shot jobs
    /// it scheduled to fire.
    #[must_use]
    pub fn hold_one_shots(mut self, hold: impl Fn() -> Box<dyn Send> + Send + Sync + 'static) -> Self {
        self.hold = Some(Box::new(hold));
        self
    }

    /// The same scheduler drawing ids from `ids` (each call: 8 hex digits), for tests of id
    /// collisions.
    #[must_use]
    pub fn with_ids(self, ids: impl FnMut() -> String + Send + 'static) -> Self {
        *self.ids.lock().unwrap_or_else(PoisonError::into_inner) = Box::new(ids);
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reports a `[cron] …` line.
    pub(crate) fn say(&self, level: Level, text: &str) {
        line(&*self.events, level, text);
    }

    /// The clock the scheduler reads.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Wakes the timer so it reads the clock and the jobs again (after a [`crate::SetClock`]
    /// was set; the scheduler's own changes wake it already).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Every job, in insertion order.
    pub fn jobs(&self) -> Vec<CronJob> {
        self.lock().jobs.iter().map(|e| e.job.clone()).collect()
    }

    /// The next local minute job `id` fires at, after the clock's current minute; `None` for
    /// an unknown id or an expression no date matches.
    pub fn next_fire(&self, id: &str) -> Option<NaiveDateTime> {
        let now = self.clock.now();
        self.lock().jobs.iter().find(|e| e.job.id == id)?.expr.next_after(now)
    }

    /// The ids in the queue, oldest first.
    pub fn queued_ids(&self) -> Vec<String> {
        self.lock().queue.iter().map(|q| q.id.clone()).collect()
    }

    /// Whether any job waits for delivery (course `has_cron_queue`).
    pub fn has_cron_queue(&self) -> bool {
        !self.lock().queue.is_empty()
    }

    /// Saves the durable jobs, all of them, to the file (course `save_durable_jobs`).
    ///
    /// # Errors
    /// The I/O error of the save; the file is then as it was.
    pub fn save_durable_jobs(&self) -> io::Result<()> {
        self.save(&self.lock())
    }

    fn save(&self, state: &State) -> io::Result<()> {
        let durable: Vec<&CronJob> = state.jobs.iter().map(|e| &e.job).filter(|j| j.durable).collect();
        self.file.replace(encode_in(&durable, self.dialect).as_bytes())
    }

    /// Loads the durable jobs saved by an earlier session (course `load_durable_jobs`), once, at
    /// start-up. A missing file loads nothing; an unreadable one, invalid JSON or a non-list is
    /// reported (`[cron] could not load .scheduled_tasks.json: …`) and loads nothing; an item that
    /// is not a valid job is reported (`[cron] skipped invalid saved job: …`) and skipped. Jobs saved
    /// pending delivery are queued again: their turn had not been accepted when the last session
    /// ended. Their missed minutes are not replayed. Returns how many jobs were loaded.
    pub fn load_durable_jobs(&self) -> usize {
        let name = self.file.name().to_owned();
        let payload = match self.file.read() {
            Ok(None) => return 0,
            Ok(Some(bytes)) => String::from_utf8(bytes)
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()))
                .and_then(|v| match v {
                    Value::Array(items) => Ok(items),
                    _ => Err("expected a JSON list".to_owned()),
                }),
            Err(e) => Err(e.to_string()),
        };
        let items = match payload {
            Ok(items) => items,
            Err(error) => {
                self.say(Level::Warning, &format!("[cron] could not load {name}: {error}"));
                return 0;
            }
        };
        let mut loaded = 0;
        {
            let mut state = self.lock();
            let now = self.clock.now();
            for item in &items {
                let (job, expr) = match CronJob::from_saved(item) {
                    Ok(parsed) if state.position(&parsed.0.id).is_some() => {
                        let error = format!("duplicate job ID {}", parsed.0.id);
                        self.say(Level::Warning, &format!("[cron] skipped invalid saved job: {error}"));
                        continue;
                    }
                    Ok(parsed) => parsed,
                    Err(error) => {
                        self.say(Level::Warning, &format!("[cron] skipped invalid saved job: {error}"));
                        continue;
                    }
                };
                if job.pending_delivery {
                    state.queue.push(Queued { id: job.id.clone(), announced: false, not_before: Some(now) });
                }
                state.jobs.push(Entry { job, expr });
                loaded += 1;
            }
        }
        if loaded > 0 {
            self.say(Level::Mechanism, &format!("[cron] loaded {loaded} durable job(s)"));
            self.wake();
        }
        loaded
    }

    /// Adds a job as it is, checked as a saved one is ([`CronJob::from_saved`]), queued when
    /// `queued`; nothing is saved. For tests that set up the state the course's tests set up by
    /// assigning to `scheduled_jobs` and `cron_queue`.
    ///
    /// # Errors
    /// Why the job is not valid.
    pub fn insert_job(&self, job: CronJob, queued: bool) -> Result<(), String> {
        let (job, expr) = CronJob::from_saved(&job.to_json())?;
        let mut state = self.lock();
        if state.position(&job.id).is_some() {
            return Err(format!("duplicate job ID {}", job.id));
        }
        if queued {
            state.queue.push(Queued { id: job.id.clone(), announced: false, not_before: None });
        }
        state.jobs.push(Entry { job, expr });
        drop(state);
        self.wake();
        Ok(())
    }

    /// Schedules `prompt` at `cron` (course `schedule_job`): validates, draws an unused id
    /// (`cron_` + 8 hex, up to [`ID_ATTEMPTS`] draws), adds the job and, when `durable`, saves;
    /// a failed save removes the job again. Reports `[cron] scheduled {id}: {cron} -> {prompt}`.
    ///
    /// # Errors
    /// [`ScheduleError`]: the course's texts.
    pub fn schedule_job(
        &self,
        cron: &str,
        prompt: &str,
        recurring: bool,
        durable: bool,
    ) -> Result<CronJob, ScheduleError> {
        let expr = CronExpr::parse_in(cron, self.dialect)?;
        if self.dialect.refuses_blank_prompt() && prompt.trim().is_empty() {
            return Err(ScheduleError::EmptyPrompt);
        }
        let job = {
            let mut state = self.lock();
            let id = self.new_cron_id(&state)?;
            let job = CronJob {
                id,
                cron: cron.to_owned(),
                prompt: prompt.to_owned(),
                recurring,
                durable,
                pending_delivery: false,
                last_fired: None,
            };
            state.jobs.push(Entry { job: job.clone(), expr });
            if durable && let Err(e) = self.save(&state) {
                state.jobs.pop();
                return Err(e.into());
            }
            if let (false, Some(hold)) = (recurring, &self.hold) {
                state.holds.push((job.id.clone(), hold()));
            }
            job
        };
        self.say(Level::Mechanism, &format!("[cron] scheduled {}: {cron} -> {}", job.id, preview(prompt)));
        self.wake();
        Ok(job)
    }

    /// The course's `new_cron_id`: `cron_` and a fresh draw, again while it is taken.
    fn new_cron_id(&self, state: &State) -> Result<String, ScheduleError> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        (0..ID_ATTEMPTS)
            .map(|_| format!("cron_{}", ids()))
            .find(|id| state.position(id).is_none())
            .ok_or(ScheduleError::NoId)
    }

    /// Cancels job `id` (course `cancel_job`): removes it from the jobs and the queue and, when
    /// durable, saves; a failed save puts both back. Returns `Cancelled {id}` or
    /// `Job {id} not found`; reports `[cron] cancelled {id}`.
    ///
    /// # Errors
    /// The save's I/O error; the job is then kept.
    pub fn cancel_job(&self, id: &str) -> io::Result<String> {
        {
            let mut state = self.lock();
            let Some(at) = state.position(id) else {
                return Ok(format!("Job {id} not found"));
            };
            let previous_queue = state.queue.clone();
            let entry = state.jobs.remove(at);
            state.queue.retain(|q| q.id != id);
            if entry.job.durable
                && let Err(e) = self.save(&state)
            {
                state.jobs.insert(at, entry);
                state.queue = previous_queue;
                return Err(e);
            }
            if previous_queue.iter().any(|q| q.id == id && q.announced) {
                state.withdrawn.push(scheduled_message(&entry.job.prompt));
            }
            state.release_holds();
        }
        self.say(Level::Mechanism, &format!("[cron] cancelled {id}"));
        self.wake();
        Ok(format!("Cancelled {id}"))
    }

    /// The `list_crons` tool's text: `No cron jobs.`, or one line per job in insertion order,
    /// `{id}: {cron} -> {prompt[:60]} [{recurring|one-shot}, {durable|session}]`.
    pub fn list_crons(&self) -> String {
        self.listing(|Entry { job, .. }| self.dialect.list_line(job))
    }

    /// What the REPL's `/cron` shows: one line per job, its id, expression, kind and storage,
    /// when it fires next on the scheduler's clock (`waiting for its turn` when fired and not yet
    /// delivered, `never` when no date matches), and its prompt; `No cron jobs.` when there are
    /// none.
    pub fn describe(&self) -> String {
        let now = self.clock.now();
        self.listing(|Entry { job, expr }| {
            let next = if job.pending_delivery {
                "waiting for its turn".to_owned()
            } else {
                expr.next_after(now)
                    .map_or("never".to_owned(), |t| format!("next {}", t.format("%Y-%m-%d %H:%M")))
            };
            let (frequency, storage) = kinds(job);
            format!("{}  {}  {next}  [{frequency}, {storage}]  {}", job.id, job.cron, preview(&job.prompt))
        })
    }

    /// One `line` per job, in insertion order, or `No cron jobs.`.
    fn listing(&self, line: impl Fn(&Entry) -> String) -> String {
        let state = self.lock();
        if state.jobs.is_empty() {
            return "No cron jobs.".to_owned();
        }
        state.jobs.iter().map(line).collect::<Vec<_>>().join("\n")
    }

    /// Marks job `id` fired and queues it (course `_enqueue_due_job`): `pending_delivery` and,
    /// with a marker, `last_fired` are set and, when durable, saved **before** it is queued; a
    /// failed save puts both back and queues nothing, so the next minute can try again.
    ///
    /// # Errors
    /// The save's I/O error; `NotFound` for an unknown id.
    pub fn enqueue_due_job(&self, id: &str, minute_marker: Option<&str>) -> io::Result<()> {
        let mut state = self.lock();
        self.enqueue_locked(&mut state, id, minute_marker)
    }

    fn enqueue_locked(&self, state: &mut State, id: &str, minute_marker: Option<&str>) -> io::Result<()> {
        let Some(job) = state.job_mut(id) else {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("Job {id} not found")));
        };
        let before = (job.pending_delivery, job.last_fired.clone());
        job.pending_delivery = true;
        if let Some(marker) = minute_marker {
            job.last_fired = Some(marker.to_owned());
        }
        let durable = job.durable;
        if durable && let Err(e) = self.save(state) {
            if let Some(job) = state.job_mut(id) {
                (job.pending_delivery, job.last_fired) = before;
            }
            return Err(e);
        }
        state.queue.push(Queued { id: id.to_owned(), announced: false, not_before: None });
        Ok(())
    }

    /// Fires every job that matches the local minute of `moment` and has neither fired in that
    /// minute nor is still waiting for delivery (course `poll_due_jobs`), reporting
    /// `[cron] due {id}: {prompt}` for each, or `[cron] could not enqueue {id}: {error}`. Returns
    /// the jobs queued.
    pub fn poll_due_jobs(&self, moment: NaiveDateTime) -> Vec<CronJob> {
        self.poll(moment).0
    }

    /// [`CronScheduler::poll_due_jobs`], also saying whether a job could not be queued (its save
    /// failed), so the timer tries again within the minute.
    fn poll(&self, moment: NaiveDateTime) -> (Vec<CronJob>, bool) {
        let marker = moment.format("%Y-%m-%d %H:%M").to_string();
        let (mut fired, mut failed) = (Vec::new(), false);
        let mut state = self.lock();
        let due: Vec<String> = state
            .jobs
            .iter()
            .filter(|e| !e.job.pending_delivery && e.job.last_fired.as_deref() != Some(&marker))
            .filter(|e| e.expr.matches(moment))
            .map(|e| e.job.id.clone())
            .collect();
        for id in due {
            match self.enqueue_locked(&mut state, &id, Some(&marker)) {
                Ok(()) => {
                    if let Some(job) = state.job(&id) {
                        self.say(Level::Mechanism, &format!("[cron] due {id}: {}", preview(&job.prompt)));
                        fired.push(job.clone());
                    }
                }
                Err(e) => {
                    failed = true;
                    self.say(Level::Warning, &format!("[cron] could not enqueue {id}: {e}"));
                }
            }
        }
        (fired, failed)
    }

    /// Takes every queued job (course `consume_cron_queue`), oldest first.
    pub fn consume_cron_queue(&self) -> Vec<CronJob> {
        let mut state = self.lock();
        let ids: Vec<Queued> = std::mem::take(&mut state.queue);
        ids.iter().filter_map(|q| state.job(&q.id).cloned()).collect()
    }

    /// Takes the oldest queued job whose turn sends `message` (`[Scheduled] {prompt}`): the job a
    /// scheduled turn delivers. `None` when no queued job sends it.
    pub fn take_queued(&self, message: &str) -> Option<CronJob> {
        let mut state = self.lock();
        let at = state
            .queue
            .iter()
            .position(|q| state.job(&q.id).is_some_and(|j| scheduled_message(&j.prompt) == message))?;
        let queued = state.queue.remove(at);
        state.job(&queued.id).cloned()
    }

    /// The model accepted a request carrying `jobs` (course `acknowledge_cron_jobs`): a
    /// recurring job is no longer pending, a one-shot job is removed, and the file is saved if a
    /// durable job changed. Jobs cancelled meanwhile are skipped. A failed save puts everything
    /// back and queues the jobs again.
    ///
    /// # Errors
    /// The save's I/O error.
    pub fn acknowledge_cron_jobs(&self, jobs: &[CronJob]) -> io::Result<()> {
        let mut state = self.lock();
        let mut changed: Vec<(String, bool)> = Vec::new();
        let mut removed: Vec<(usize, Entry)> = Vec::new();
        let mut durable = false;
        for delivered in jobs {
            let Some(at) = state.position(&delivered.id) else { continue };
            let entry = &mut state.jobs[at];
            changed.push((entry.job.id.clone(), entry.job.pending_delivery));
            durable |= entry.job.durable;
            if entry.job.recurring {
                entry.job.pending_delivery = false;
            } else {
                removed.push((at, state.jobs.remove(at)));
            }
        }
        if durable && let Err(e) = self.save(&state) {
            for (at, entry) in removed.into_iter().rev() {
                let at = at.min(state.jobs.len());
                state.jobs.insert(at, entry);
            }
            let retry = self.next_minute();
            for (id, pending) in changed {
                if let Some(job) = state.job_mut(&id) {
                    job.pending_delivery = pending;
                }
                if !state.queued(&id) {
                    state.queue.push(Queued { id, announced: false, not_before: Some(retry) });
                }
            }
            drop(state);
            self.wake();
            return Err(e);
        }
        state.release_holds();
        drop(state);
        self.wake();
        Ok(())
    }

    /// The request carrying `jobs` failed (course `restore_cron_jobs`): each job still
    /// scheduled is pending again and back in the queue, to be announced from the next minute on.
    pub fn restore_cron_jobs(&self, jobs: &[CronJob]) {
        let retry = self.next_minute();
        let mut state = self.lock();
        for delivered in jobs {
            let Some(job) = state.job_mut(&delivered.id) else { continue };
            job.pending_delivery = true;
            if !state.queued(&delivered.id) {
                state.queue.push(Queued {
                    id: delivered.id.clone(),
                    announced: false,
                    not_before: Some(retry),
                });
            }
        }
        drop(state);
        self.wake();
    }

    /// The start of the clock's next minute.
    fn next_minute(&self) -> NaiveDateTime {
        let now = self.clock.now();
        now.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap_or(now) + TimeDelta::minutes(1)
    }

    /// Asks `deliver` for a turn for each queued job that has none yet and may have one now;
    /// `false` when `deliver` says no turn can run any more. `deliver` is called without the
    /// lock held.
    fn announce(&self, now: NaiveDateTime, deliver: &(dyn Fn(&CronJob) -> bool + Send + Sync)) -> bool {
        let waiting: Vec<CronJob> = {
            let state = self.lock();
            state
                .queue
                .iter()
                .filter(|q| !q.announced && q.not_before.is_none_or(|t| t <= now))
                .filter_map(|q| state.job(&q.id).cloned())
                .collect()
        };
        for job in waiting {
            if !deliver(&job) {
                return false;
            }
            if let Some(q) = self.lock().queue.iter_mut().find(|q| q.id == job.id) {
                q.announced = true;
            }
        }
        true
    }

    /// Whether `message` is the prompt of a turn announced for a job that was cancelled before
    /// the turn began; such a turn should not run. Answers `true` once per cancelled job.
    pub fn take_withdrawn(&self, message: &str) -> bool {
        let mut state = self.lock();
        let Some(at) = state.withdrawn.iter().position(|m| m == message) else { return false };
        state.withdrawn.remove(at);
        true
    }

    /// When the timer must look next: the first minute after `now` a job matches, or when a
    /// restored job may be announced.
    fn next_wake(&self, now: NaiveDateTime) -> Option<NaiveDateTime> {
        let state = self.lock();
        let fires = state.jobs.iter().filter_map(|e| e.expr.next_after(now));
        let retries = state.queue.iter().filter(|q| !q.announced).filter_map(|q| q.not_before);
        fires.chain(retries).min()
    }

    /// The timer (the course's `cron-scheduler` and `cron-queue-processor` threads, as one task
    /// that sleeps): fires due jobs and asks `deliver` for a turn for each job queued (a job loaded
    /// pending at start-up at once, a restored one from the next minute on), then sleeps until
    /// the next minute a job matches, a restored job may be announced, or [`CronScheduler::wake`].
    /// `deliver` returns `false` once no turn can run any more (the session is ending); the timer
    /// then stops.
    pub async fn run(self: Arc<Self>, deliver: impl Fn(&CronJob) -> bool + Send + Sync) {
        loop {
            let now = self.clock.now();
            let (_, failed) = self.poll(now);
            if !self.announce(now, &deliver) {
                return;
            }
            // A job whose save failed is tried again within its minute, as the course's
            // once-a-second poll would.
            let retry = failed.then(|| now + TimeDelta::from_std(ENQUEUE_RETRY).unwrap_or(TimeDelta::MAX));
            let next = [self.next_wake(now), retry].into_iter().flatten().min();
            let wait = next.and_then(|at| self.clock.until(at)).map(|d| d.min(MAX_SLEEP));
            match wait {
                // Never a busy loop: a wake-up at the same minute finds it fired already.
                Some(wait) => {
                    let wait = wait.max(Duration::from_millis(1));
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }
}
