//! The course's cron tests (`tests/test_cron_scheduler.py` and the cron tests of
//! `tests/test_agent_teams_runtime.py`), ported by name against this crate with a set clock, and
//! the scheduler's own: firing, missed minutes, restarts, the timer's sleep.
//!
//! Not here: `test_s12_keeps_the_s04_kernel_and_adds_three_cron_tools` checks the chapter's whole
//! tool list, and `test_scheduled_turn_never_reads_interactive_permission_input` the chapter's
//! approver; both are the chapter's tests. `test_s12_code_is_ascii` guards the course's single
//! file against a Windows console's code page; it has no counterpart in a Rust crate.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::agent::Agent;
use agent_core::error::ApiError;
use agent_core::messages::Message;
use agent_core::test_util::{EventLog, ScriptedModel, response, text};
use chrono::{NaiveDate, NaiveDateTime, TimeDelta};

use crate::{
    CronDelivery, CronJob, CronScheduler, DURABLE_NAME, DurableFile, JobFile, ScheduleError, SetClock,
    cron_matches, scheduled_message, validate_cron,
};

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d).and_then(|d| d.and_hms_opt(h, mi, 0)).unwrap()
}

/// `.scheduled_tasks.json` in a folder, whose next `failures` saves fail (the course's tests
/// replace `save_durable_jobs` with one that raises `OSError`).
struct Flaky {
    inner: DurableFile,
    failures: Arc<AtomicUsize>,
    message: &'static str,
}

impl JobFile for Flaky {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn read(&self) -> io::Result<Option<Vec<u8>>> {
        self.inner.read()
    }
    fn replace(&self, bytes: &[u8]) -> io::Result<()> {
        let left = self.failures.load(Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, Ordering::SeqCst);
            return Err(io::Error::other(self.message));
        }
        self.inner.replace(bytes)
    }
}

/// A workspace, its scheduler (clock set to Monday 10 August 2026 09:00), the log of its lines,
/// and a switch that makes the next saves fail.
struct Lesson {
    dir: tempfile::TempDir,
    cron: Arc<CronScheduler>,
    clock: Arc<SetClock>,
    log: Arc<EventLog>,
    failures: Arc<AtomicUsize>,
}

impl Lesson {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::in_dir(dir)
    }

    fn in_dir(dir: tempfile::TempDir) -> Self {
        let failures = Arc::new(AtomicUsize::new(0));
        let file = Flaky {
            inner: DurableFile::in_workdir(dir.path()),
            failures: Arc::clone(&failures),
            message: "disk full",
        };
        let clock = Arc::new(SetClock::new(at(2026, 8, 10, 9, 0)));
        let log = EventLog::new();
        let cron = Arc::new(CronScheduler::new(file, clock.clone(), log.clone()));
        Self { dir, cron, clock, log, failures }
    }

    /// The same workspace after a restart: a new scheduler that loads the file.
    fn restart(self) -> Self {
        let next = Self::in_dir(self.dir);
        next.clock.set(crate::Clock::now(&*self.clock));
        next.cron.load_durable_jobs();
        next
    }

    fn durable_text(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(DURABLE_NAME)).unwrap_or_default()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn job(&self, id: &str, prompt: &str, recurring: bool, pending: bool) -> CronJob {
        let job = CronJob {
            id: id.into(),
            cron: "* * * * *".into(),
            prompt: prompt.into(),
            recurring,
            durable: true,
            pending_delivery: pending,
            last_fired: None,
        };
        self.cron.insert_job(job.clone(), pending).unwrap();
        job
    }

    /// An agent whose model answers `script`, with the delivery extension.
    fn agent(&self, script: Vec<Result<agent_core::messages::MessagesResponse, ApiError>>) -> Agent {
        let model = Arc::new(ScriptedModel::with_results(script));
        Agent::builder(model, "m").extension(CronDelivery::new(Arc::clone(&self.cron))).build()
    }
}

fn offline() -> ApiError {
    ApiError::Transport("offline".into())
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn test_import_does_not_start_runtime_threads() {
    // Making a scheduler starts nothing: no timer runs until `run`, and the file is not read
    // until `load_durable_jobs`.
    let lesson = Lesson::new();
    std::fs::write(lesson.path().join(DURABLE_NAME), "{broken").unwrap();
    lesson.cron.schedule_job("* * * * *", "tick", true, false).unwrap();
    assert!(!lesson.cron.has_cron_queue(), "nothing fired without the timer");
    let id = &lesson.cron.jobs()[0].id;
    assert_eq!(lesson.log.lines(), [format!("[cron] scheduled {id}: * * * * * -> tick")]);
}

#[test]
fn test_cron_validation_and_matching() {
    let monday_at_nine = at(2026, 8, 10, 9, 0);
    assert_eq!(validate_cron("0 9 * * 1-5"), None);
    assert!(cron_matches("0 9 * * 1-5", monday_at_nine));
    assert!(!cron_matches("30 9 * * 1-5", monday_at_nine));
    assert!(validate_cron("0 24 * * *").unwrap().contains("hour"));
    assert!(validate_cron("0 9 * *").unwrap().contains("Expected 5 fields"));
}

#[test]
fn test_schedule_retries_id_collisions_and_rolls_back_failed_persistence() {
    let lesson = Lesson::new();
    let values = Mutex::new(["deadbeef", "deadbeef", "cafebabe", "bad0cafe"].into_iter());
    let cron = Arc::try_unwrap(lesson.cron)
        .unwrap()
        .with_ids(move || values.lock().unwrap().next().unwrap_or("ffffffff").to_owned());
    let first = cron.schedule_job("0 9 * * *", "first", true, false).unwrap();
    let second = cron.schedule_job("0 10 * * *", "second", true, false).unwrap();
    assert_eq!(first.id, "cron_deadbeef");
    assert_eq!(second.id, "cron_cafebabe");

    lesson.failures.store(1, Ordering::SeqCst);
    let error = cron.schedule_job("0 11 * * *", "third", true, true).unwrap_err();
    assert!(matches!(error, ScheduleError::Save(_)));
    assert_eq!(error.to_string(), "disk full");
    assert!(!cron.jobs().iter().any(|j| j.id == "cron_bad0cafe"));
    assert!(!lesson.dir.path().join(DURABLE_NAME).exists());
}

#[test]
fn every_id_taken_gives_the_courses_error() {
    let lesson = Lesson::new();
    let cron = Arc::try_unwrap(lesson.cron).unwrap().with_ids(|| "00000000".to_owned());
    cron.schedule_job("0 9 * * *", "first", true, false).unwrap();
    let error = cron.schedule_job("0 9 * * *", "second", true, false).unwrap_err();
    assert_eq!(error.to_string(), "Could not allocate a cron job ID");
    assert_eq!(
        cron.schedule_job("0 9 * *", "x", true, false).unwrap_err().to_string(),
        "Expected 5 fields, got 4"
    );
    assert_eq!(
        cron.schedule_job("0 9 * * *", " \n", true, false).unwrap_err().to_string(),
        "Prompt cannot be empty"
    );
}

#[test]
fn test_failed_model_call_restores_delivery_without_duplicate_message() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_retry", "retry the report", false, true);
    lesson.cron.save_durable_jobs().unwrap();
    let mut agent = lesson.agent(vec![Err(offline())]);

    let mut messages: Vec<Message> = Vec::new();
    let result = block_on(agent.run_turn(&mut messages, &scheduled_message(&job.prompt)));

    assert!(result.is_err());
    assert_eq!(messages, []);
    assert_eq!(lesson.cron.queued_ids(), std::slice::from_ref(&job.id));
    assert!(lesson.cron.jobs().iter().any(|j| j.id == job.id));
}

#[test]
fn test_corrupt_durable_store_reports_an_error() {
    let lesson = Lesson::new();
    std::fs::write(lesson.path().join(DURABLE_NAME), "{broken").unwrap();

    lesson.cron.load_durable_jobs();

    assert!(
        lesson.log.lines().iter().any(|l| l.contains("could not load .scheduled_tasks.json")),
        "{:?}",
        lesson.log.lines()
    );
    assert_eq!(lesson.cron.jobs(), []);
}

#[test]
fn test_durable_one_shot_is_acknowledged_after_model_acceptance() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_test", "resume the report", false, true);
    lesson.cron.save_durable_jobs().unwrap();
    assert!(lesson.durable_text().contains("\"pending_delivery\": true"));
    let mut agent = lesson.agent(vec![Ok(response(vec![], agent_core::messages::StopReason::EndTurn))]);

    let mut messages: Vec<Message> = Vec::new();
    block_on(agent.run_turn(&mut messages, &scheduled_message(&job.prompt))).unwrap();

    assert!(messages.iter().any(|m| m == &Message::user_text("[Scheduled] resume the report")));
    assert!(!lesson.cron.jobs().iter().any(|j| j.id == job.id));
    assert!(!lesson.durable_text().contains("cron_test"));
    assert!(lesson.log.lines().contains(&"[cron] delivered cron_test: resume the report".to_owned()));
}

#[test]
fn test_failed_model_call_restores_unacknowledged_cron_delivery() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_retry", "retry me", false, true);
    lesson.cron.save_durable_jobs().unwrap();
    let mut agent = lesson.agent(vec![Err(offline())]);

    let mut messages: Vec<Message> = Vec::new();
    let _ = block_on(agent.run_turn(&mut messages, &scheduled_message(&job.prompt)));

    assert!(lesson.cron.jobs().iter().any(|j| j.id == job.id));
    assert_eq!(lesson.cron.queued_ids(), std::slice::from_ref(&job.id));
    assert!(lesson.durable_text().contains(&job.id));
}

#[test]
fn test_failed_cron_persistence_retries_before_queueing() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_persist_retry", "persist before delivery", false, false);
    lesson.failures.store(1, Ordering::SeqCst);

    let error = lesson.cron.enqueue_due_job(&job.id, None).unwrap_err();
    assert_eq!(error.to_string(), "disk full");
    assert!(!lesson.cron.jobs()[0].pending_delivery);
    assert_eq!(lesson.cron.queued_ids(), Vec::<String>::new());

    lesson.cron.enqueue_due_job(&job.id, None).unwrap();
    assert!(lesson.cron.jobs()[0].pending_delivery);
    assert_eq!(lesson.cron.queued_ids(), std::slice::from_ref(&job.id));
    assert!(lesson.durable_text().contains("\"pending_delivery\": true"));
}

#[test]
fn test_cancelled_cron_is_removed_from_pending_queue() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_cancel", "do not run", true, false);
    lesson.cron.cancel_job(&job.id).unwrap();
    // The course's test queues a job that is not pending; so does this one.
    lesson.cron.insert_job(job.clone(), true).unwrap();
    assert_eq!(lesson.cron.queued_ids(), std::slice::from_ref(&job.id));

    assert!(lesson.cron.cancel_job(&job.id).unwrap().contains("Cancelled"));
    assert_eq!(lesson.cron.consume_cron_queue(), []);
    assert_eq!(lesson.cron.cancel_job(&job.id).unwrap(), "Job cron_cancel not found");
}

// The scheduler's own behaviour, beyond the course's tests.

#[test]
fn a_due_job_fires_once_per_minute_and_missed_minutes_are_not_replayed() {
    let lesson = Lesson::new();
    let job = lesson.cron.schedule_job("0 9 * * *", "run tests", true, true).unwrap();
    assert_eq!(lesson.cron.poll_due_jobs(at(2026, 8, 10, 8, 59)), []);
    assert_eq!(lesson.cron.poll_due_jobs(at(2026, 8, 10, 9, 0)).len(), 1);
    assert!(lesson.log.lines().contains(&format!("[cron] due {}: run tests", job.id)));
    assert!(lesson.durable_text().contains("\"last_fired\": \"2026-08-10 09:00\""));
    // Pending: it does not fire again until acknowledged, nor twice in one minute after.
    let taken = lesson.cron.consume_cron_queue();
    lesson.cron.acknowledge_cron_jobs(&taken).unwrap();
    assert_eq!(lesson.cron.poll_due_jobs(at(2026, 8, 10, 9, 0) + TimeDelta::seconds(30)), []);
    // Three days without a poll: nothing is made up for; the next 09:00 fires once.
    assert_eq!(lesson.cron.poll_due_jobs(at(2026, 8, 13, 8, 0)), []);
    assert_eq!(lesson.cron.poll_due_jobs(at(2026, 8, 13, 9, 0)).len(), 1);
}

#[test]
fn a_job_pending_at_a_crash_is_delivered_again_after_restart() {
    let lesson = Lesson::new();
    let job = lesson.cron.schedule_job("0 9 * * *", "run tests", false, true).unwrap();
    let session = lesson.cron.schedule_job("0 9 * * *", "session only", false, false).unwrap();
    lesson.cron.poll_due_jobs(at(2026, 8, 10, 9, 0));
    // Taken for a turn, and the process dies before the model accepted it.
    assert_eq!(lesson.cron.consume_cron_queue().len(), 2);

    let lesson = lesson.restart();
    assert_eq!(
        lesson.cron.queued_ids(),
        std::slice::from_ref(&job.id),
        "the session job is gone, the durable one queued"
    );
    assert!(!lesson.cron.jobs().iter().any(|j| j.id == session.id));
    assert!(lesson.log.lines().contains(&"[cron] loaded 1 durable job(s)".to_owned()));
}

#[test]
fn a_partly_invalid_file_loads_the_valid_jobs() {
    let lesson = Lesson::new();
    let text = r#"[{"id": "cron_1", "cron": "* * * * *", "prompt": "ok", "recurring": true, "durable": true},
                   {"id": "job_2", "cron": "* * * * *", "prompt": "bad id", "recurring": true, "durable": true},
                   {"id": "cron_3", "cron": "61 * * * *", "prompt": "bad", "recurring": true, "durable": true}]"#;
    std::fs::write(lesson.path().join(DURABLE_NAME), text).unwrap();
    assert_eq!(lesson.cron.load_durable_jobs(), 1);
    assert_eq!(
        lesson.log.lines(),
        [
            "[cron] skipped invalid saved job: invalid job ID",
            "[cron] skipped invalid saved job: minute: Value 61 is outside [0-59]",
            "[cron] loaded 1 durable job(s)"
        ]
    );
    std::fs::write(lesson.path().join(DURABLE_NAME), "{}").unwrap();
    let other = Lesson::in_dir(tempfile::tempdir().unwrap());
    std::fs::write(other.path().join(DURABLE_NAME), "{}").unwrap();
    other.cron.load_durable_jobs();
    assert_eq!(other.log.lines(), ["[cron] could not load .scheduled_tasks.json: expected a JSON list"]);
}

#[test]
fn a_failed_acknowledgement_keeps_the_job_and_queues_it_again() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_ack", "report", false, true);
    let taken = lesson.cron.consume_cron_queue();
    lesson.failures.store(1, Ordering::SeqCst);
    assert!(lesson.cron.acknowledge_cron_jobs(&taken).is_err());
    assert_eq!(lesson.cron.jobs()[0].id, job.id);
    assert_eq!(lesson.cron.queued_ids(), [job.id]);
}

#[test]
fn cancel_rolls_back_when_the_save_fails() {
    let lesson = Lesson::new();
    let job = lesson.cron.schedule_job("0 9 * * *", "keep me", true, true).unwrap();
    lesson.failures.store(1, Ordering::SeqCst);
    assert_eq!(lesson.cron.cancel_job(&job.id).unwrap_err().to_string(), "disk full");
    assert_eq!(lesson.cron.jobs()[0].id, job.id);
    assert!(lesson.durable_text().contains(&job.id));
}

#[test]
fn list_crons_shows_kind_and_storage() {
    let lesson = Lesson::new();
    assert_eq!(lesson.cron.list_crons(), "No cron jobs.");
    let long = "x".repeat(70);
    let a = lesson.cron.schedule_job("*/5 * * * *", &long, false, false).unwrap();
    let b = lesson.cron.schedule_job("0 9 * * 1-5", "tests", true, true).unwrap();
    assert_eq!(
        lesson.cron.list_crons(),
        format!(
            "{}: */5 * * * * -> {} [one-shot, session]\n{}: 0 9 * * 1-5 -> tests [recurring, durable]",
            a.id,
            "x".repeat(60),
            b.id
        )
    );
}

#[test]
fn the_timer_sleeps_until_the_next_due_minute_and_announces_each_job_once() {
    let lesson = Lesson::new();
    lesson.clock.set(at(2026, 8, 10, 8, 58));
    let announced = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&announced);
    let cron = Arc::clone(&lesson.cron);
    block_on(async move {
        let timer = tokio::spawn(Arc::clone(&cron).run(move |job: &CronJob| {
            seen.lock().unwrap().push(scheduled_message(&job.prompt));
            true
        }));
        let job = cron.schedule_job("0 9 * * *", "run tests", true, true).unwrap();
        // The timer's next look is 09:00, not a second from now.
        assert_eq!(cron.next_fire(&job.id), Some(at(2026, 8, 10, 9, 0)));
        let until = |n: usize| {
            let announced = Arc::clone(&announced);
            async move {
                while announced.lock().unwrap().len() < n {
                    tokio::task::yield_now().await;
                }
            }
        };
        tokio::task::yield_now().await;
        assert!(announced.lock().unwrap().is_empty());
        lesson.clock.set(at(2026, 8, 10, 9, 0));
        cron.wake();
        tokio::time::timeout(std::time::Duration::from_secs(10), until(1)).await.unwrap();
        // A wake-up in the same minute announces nothing more.
        cron.wake();
        tokio::task::yield_now().await;
        assert_eq!(*announced.lock().unwrap(), ["[Scheduled] run tests"]);
        // The turn fails: the job is announced again from the next minute on, not at once.
        let taken = cron.take_queued("[Scheduled] run tests").unwrap();
        cron.restore_cron_jobs(&[taken]);
        tokio::task::yield_now().await;
        assert_eq!(announced.lock().unwrap().len(), 1);
        lesson.clock.set(at(2026, 8, 10, 9, 1));
        cron.wake();
        tokio::time::timeout(std::time::Duration::from_secs(10), until(2)).await.unwrap();
        timer.abort();
    });
}

#[test]
fn a_turn_announced_for_a_cancelled_job_is_blocked() {
    let lesson = Lesson::new();
    let job = lesson.cron.schedule_job("* * * * *", "late", true, false).unwrap();
    let cron = Arc::clone(&lesson.cron);
    block_on(async move {
        let timer = tokio::spawn(Arc::clone(&cron).run(|_: &CronJob| true));
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while !cron.has_cron_queue() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        tokio::task::yield_now().await;
        cron.cancel_job(&job.id).unwrap();
        timer.abort();
    });
    let mut agent = lesson.agent(vec![Ok(text("should not be asked"))]);
    let mut messages = Vec::new();
    let end = block_on(agent.run_turn(&mut messages, "[Scheduled] late")).unwrap();
    assert!(matches!(end, agent_core::agent::TurnEnd::PromptBlocked(_)));
    assert_eq!(messages, []);
}

#[test]
fn a_turn_with_tools_acknowledges_after_the_first_response() {
    let lesson = Lesson::new();
    let job = lesson.job("cron_tools", "check", true, true);
    let model = Arc::new(ScriptedModel::new(vec![
        agent_core::test_util::tool_uses(&[("t1", "list_crons", serde_json::json!({}))]),
        text("done"),
    ]));
    let tools =
        agent_core::dispatch::DispatchMap::new().with(crate::tools::ListCrons(Arc::clone(&lesson.cron)));
    let mut agent = Agent::builder(model, "m")
        .tools(tools)
        .extension(CronDelivery::new(Arc::clone(&lesson.cron)))
        .build();
    let mut messages = Vec::new();
    block_on(agent.run_turn(&mut messages, &scheduled_message("check"))).unwrap();
    let saved = lesson.cron.jobs();
    assert_eq!(saved[0].id, job.id);
    assert!(!saved[0].pending_delivery, "a recurring job is acknowledged, not removed");
    assert!(lesson.durable_text().contains("\"pending_delivery\": false"));
}

#[test]
fn describe_shows_the_next_fire_time_on_the_schedulers_clock() {
    let lesson = Lesson::new();
    lesson.clock.set(at(2026, 8, 14, 9, 30));
    let a = lesson.cron.schedule_job("0 9 * * 1-5", "run tests", true, true).unwrap();
    let b = lesson.cron.schedule_job("0 0 30 2 *", "never", false, false).unwrap();
    assert_eq!(
        lesson.cron.describe(),
        format!(
            "{}  0 9 * * 1-5  next 2026-08-17 09:00  [recurring, durable]  run tests\n{}  0 0 30 2 *  never  [one-shot, session]  never",
            a.id, b.id
        )
    );
}

#[test]
fn a_one_shot_job_is_held_until_delivered_or_cancelled() {
    let held = Arc::new(AtomicUsize::new(0));
    struct Hold(Arc<AtomicUsize>);
    impl Drop for Hold {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let lesson = Lesson::new();
    let counter = Arc::clone(&held);
    let cron = Arc::try_unwrap(lesson.cron).unwrap().hold_one_shots(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::new(Hold(Arc::clone(&counter)))
    });
    let once = cron.schedule_job("* * * * *", "once", false, true).unwrap();
    let other = cron.schedule_job("* * * * *", "cancelled", false, false).unwrap();
    cron.schedule_job("* * * * *", "every minute", true, false).unwrap();
    assert_eq!(held.load(Ordering::SeqCst), 2, "only one-shot jobs are held");
    cron.cancel_job(&other.id).unwrap();
    assert_eq!(held.load(Ordering::SeqCst), 1);
    cron.poll_due_jobs(at(2026, 8, 10, 9, 0));
    let taken: Vec<CronJob> = cron.consume_cron_queue().into_iter().filter(|j| j.id == once.id).collect();
    cron.acknowledge_cron_jobs(&taken).unwrap();
    assert_eq!(held.load(Ordering::SeqCst), 0);
}

#[test]
fn the_timer_tries_a_failed_enqueue_again_within_the_minute() {
    let lesson = Lesson::new();
    lesson.clock.set(at(2026, 8, 10, 8, 59));
    let job = lesson.cron.schedule_job("0 9 * * *", "report", true, true).unwrap();
    // Two failures: the wake-up `schedule_job` left makes the timer look twice at 09:00.
    lesson.failures.store(2, Ordering::SeqCst);
    lesson.clock.set(at(2026, 8, 10, 9, 0));
    let cron = Arc::clone(&lesson.cron);
    let log = Arc::clone(&lesson.log);
    block_on(async move {
        let timer = tokio::spawn(Arc::clone(&cron).run(|_: &CronJob| true));
        let said = |text: String| {
            let log = Arc::clone(&log);
            async move {
                while !log.lines().contains(&text) {
                    tokio::task::yield_now().await;
                }
            }
        };
        let wait = std::time::Duration::from_secs(10);
        tokio::time::timeout(wait, async {
            while lesson.failures.load(Ordering::SeqCst) > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(log.lines().contains(&format!("[cron] could not enqueue {}: disk full", job.id)));
        assert!(!cron.has_cron_queue(), "not queued until the clock moves on");
        lesson.clock.set(at(2026, 8, 10, 9, 0) + TimeDelta::seconds(5));
        cron.wake();
        tokio::time::timeout(wait, said(format!("[cron] due {}: report", job.id))).await.unwrap();
        assert_eq!(cron.queued_ids(), std::slice::from_ref(&job.id));
        timer.abort();
    });
}
