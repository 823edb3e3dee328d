//! Where the scheduler reads the local time, and how long it sleeps until a local minute.
//!
//! The course calls `datetime.now()` once a second. Ours asks a [`Clock`]: the system's
//! ([`SystemClock`]), one that starts at a chosen local time and runs at a chosen speed
//! ([`ShiftedClock`]: the offline demo, which shows a job a minute ahead fire within seconds, and
//! the end-to-end tests, which start the binary just before a job is due), or one a test sets by
//! hand ([`SetClock`]). Local time is a naive date and time, as the course's: the time zone is the
//! system's (`TZ`, else `/etc/localtime`).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use chrono::{Local, NaiveDateTime, TimeDelta};

/// The local time, and the real time until a local time.
pub trait Clock: Send + Sync {
    /// The local wall-clock time now (the course's `datetime.now()`).
    fn now(&self) -> NaiveDateTime;

    /// How long to sleep, in real time, until the local time `at`: zero when it has come; `None`
    /// when this clock does not move by itself ([`SetClock`]), so only a wake-up ends the wait.
    fn until(&self, at: NaiveDateTime) -> Option<Duration>;
}

/// The system's clock and time zone.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> NaiveDateTime {
        Local::now().naive_local()
    }

    /// The instant `at` first happens in the local zone: the earlier of a repeated hour when the
    /// clocks go back; a local time skipped when they go forward is taken as the minute after the
    /// gap's start, one hour on (the scheduler then finds nothing due and looks again).
    fn until(&self, at: NaiveDateTime) -> Option<Duration> {
        let local = at
            .and_local_timezone(Local)
            .earliest()
            .or_else(|| (at + TimeDelta::hours(1)).and_local_timezone(Local).earliest())?;
        Some((local - Local::now()).to_std().unwrap_or(Duration::ZERO))
    }
}

/// A clock that reads `start` when made and then runs `speed` times as fast as real time: the
/// offline demo's (a job a minute ahead fires after a few seconds) and the end-to-end tests'
/// (the binary starts at a chosen local time).
#[derive(Debug, Clone, Copy)]
pub struct ShiftedClock {
    start: NaiveDateTime,
    began: Instant,
    speed: u32,
}

impl ShiftedClock {
    /// Reads `start` now, and runs `speed` (at least 1) times faster than real time.
    pub fn new(start: NaiveDateTime, speed: u32) -> Self {
        Self { start, began: Instant::now(), speed: speed.max(1) }
    }

    /// Parses `YYYY-MM-DDTHH:MM[:SS][xSPEED]` (`2026-08-10T08:59:58`, `2026-08-10T08:59x30`):
    /// the local time the clock starts at, and how many times faster than real time it runs.
    ///
    /// # Errors
    /// What is wrong with `text`, in words for a person who set it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (time, speed) = match text.split_once('x') {
            Some((time, speed)) => (
                time,
                speed.parse::<u32>().ok().filter(|s| *s > 0).ok_or_else(|| {
                    format!("the speed after 'x' must be a whole number of at least 1, not {speed:?}")
                })?,
            ),
            None => (text, 1),
        };
        let start = NaiveDateTime::parse_from_str(time, "%Y-%m-%dT%H:%M:%S")
            .or_else(|_| NaiveDateTime::parse_from_str(time, "%Y-%m-%dT%H:%M"))
            .map_err(|e| format!("expected a local time like 2026-08-10T08:59:58, not {time:?} ({e})"))?;
        Ok(Self::new(start, speed))
    }
}

/// The clock a chapter run reads: the `--clock` flag's when given; in the offline demo, one
/// started at `demo` (`TIME[xSPEED]`, so the demo's jobs fire within it); otherwise the system's.
pub fn run_clock(flag: Option<ShiftedClock>, in_demo: bool, demo: &str) -> std::sync::Arc<dyn Clock> {
    match (flag, in_demo) {
        (Some(clock), _) => std::sync::Arc::new(clock),
        (None, true) => match ShiftedClock::parse(demo) {
            Ok(clock) => std::sync::Arc::new(clock),
            Err(_) => std::sync::Arc::new(SystemClock),
        },
        (None, false) => std::sync::Arc::new(SystemClock),
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> NaiveDateTime {
        let elapsed = self.began.elapsed().saturating_mul(self.speed);
        self.start + TimeDelta::from_std(elapsed).unwrap_or(TimeDelta::MAX)
    }

    fn until(&self, at: NaiveDateTime) -> Option<Duration> {
        let ahead = (at - self.now()).to_std().unwrap_or(Duration::ZERO);
        Some(ahead / self.speed)
    }
}

/// A clock that moves only when set: for tests of firing, missed minutes and restarts without
/// waiting for real minutes. After setting it, wake the scheduler
/// ([`crate::CronScheduler::wake`]).
#[derive(Debug)]
pub struct SetClock(Mutex<NaiveDateTime>);

impl SetClock {
    /// A clock reading `now`.
    pub fn new(now: NaiveDateTime) -> Self {
        Self(Mutex::new(now))
    }

    /// Sets the time.
    pub fn set(&self, now: NaiveDateTime) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

impl Clock for SetClock {
    fn now(&self) -> NaiveDateTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn until(&self, at: NaiveDateTime) -> Option<Duration> {
        (at <= self.now()).then_some(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifted_clock_parses_and_runs_faster() {
        let clock = ShiftedClock::parse("2026-08-10T08:59x60").unwrap();
        let start = clock.now();
        assert!(start >= NaiveDateTime::parse_from_str("2026-08-10T08:59:00", "%Y-%m-%dT%H:%M:%S").unwrap());
        // A minute ahead on the clock is at most a second of real time.
        let wait = clock.until(start + TimeDelta::minutes(1)).unwrap();
        assert!(wait <= Duration::from_secs(1), "{wait:?}");
        assert!(ShiftedClock::parse("2026-08-10T08:59:30").is_ok());
        assert!(ShiftedClock::parse("2026-08-10 08:59").unwrap_err().contains("expected a local time"));
        assert!(ShiftedClock::parse("2026-08-10T08:59x0").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn set_clock_moves_only_when_set() {
        let t = NaiveDateTime::parse_from_str("2026-08-10T08:59:00", "%Y-%m-%dT%H:%M:%S").unwrap();
        let clock = SetClock::new(t);
        assert_eq!(clock.until(t + TimeDelta::minutes(1)), None);
        clock.set(t + TimeDelta::minutes(1));
        assert_eq!(clock.until(t + TimeDelta::minutes(1)), Some(Duration::ZERO));
    }
}
