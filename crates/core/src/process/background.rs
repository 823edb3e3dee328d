//! Background commands: a `bash` command started now whose output and exit status are
//! collected later.
//!
//! Source: the mechanism under the course's s11 and s15 (`run_in_background`), which a chapter's
//! `BackgroundManager` sits on; the ids it shows (`bg_0001`), its notifications and its wording
//! are the chapter's. Ours, after Claude Code's background shells (`/bashes`): the harness owns
//! every command it starts, lists it, and ends it when it exits.
//!
//! A background command is a foreground one that nobody waits for:
//! - **The same start.** The deny list ([`crate::tools::bash::deny`]), the sandbox
//!   ([`Sandbox::confinement`]) and [`spawn_shell`]: its own session, no terminal, stdin from
//!   `/dev/null`, no secrets in its environment, under the supervisor that ends everything it
//!   started.
//! - **Nothing reaches the terminal.** stdout and stderr are collected, each kept whole up to the
//!   caller's cap ([`Limits::keep_bytes`]) and counted beyond it.
//! - **An end that is reported.** When `sh` exits (and what it left running is stopped), on its
//!   timeout (stopped, and reported failed), or when asked ([`Background::stop`]): the job's
//!   [`Finished`] record holds the output, the [`Outcome`] and the time it took.
//!   [`Background::take_finished`] hands each record out once (s11's "collect"),
//!   [`Background::wait`] waits for one, [`Background::list`] shows them all (id, state,
//!   command, elapsed, outcome).
//! - **Ended with the harness.** Each command is one of [`super::end_all_sessions`]'s, so `q`,
//!   Ctrl-D, Ctrl-C in `-p`, SIGTERM and SIGHUP end it and every process it started, as they end
//!   a foreground command.
//! - **A wake-up, if asked for.** [`Background::wake_with`] turns each finished command into an
//!   automatic turn ([`crate::turns`]): s15 wakes its agent that way; s11 collects on its next
//!   request instead and never calls it. While such a command runs, the queue
//!   [expects](crate::turns::TurnSender::expect) its item, so `-p` waits for it.
//!
//! Needs a Tokio runtime: each command is watched by a task of its own.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::process::Child;
use tokio::sync::Notify;

use super::{Session, spawn_shell};
use crate::sandbox::Sandbox;
use crate::tools::bash::deny::deny_list_match;
use crate::tools::bash::{Captured, HEAD_BYTES, Keep, capture_into};
use crate::turns::{AutoTurn, TurnSender};
use crate::workspace::Workspace;

/// How long a command may run and how much of its output is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Still running after this long, the command and everything it started are stopped, and it
    /// is reported [`Outcome::TimedOut`] (failed). Default 120 s, as `bash` (course §1).
    pub timeout: Duration,
    /// Bytes kept of each of stdout and stderr; the rest is counted, not kept
    /// ([`Finished::dropped_bytes`]). Default [`HEAD_BYTES`], as `bash`.
    pub keep_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(120), keep_bytes: HEAD_BYTES }
    }
}

/// How a background command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `sh` exited with this code.
    Exited(i32),
    /// `sh` was killed by this signal (by the harness's end, or by something else).
    Killed(i32),
    /// It was still running after [`Limits::timeout`] and was stopped.
    TimedOut(Duration),
    /// [`Background::stop`] ended it.
    Stopped,
    /// Waiting for it failed (the text says why).
    Failed(String),
}

impl Outcome {
    /// `true` only for an exit with code 0: the course's `completed`; every other outcome is
    /// its `failed`.
    pub fn succeeded(&self) -> bool {
        *self == Self::Exited(0)
    }

    /// The exit code, when `sh` exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Exited(code) => Some(*code),
            _ => None,
        }
    }

    fn from_status(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Killed(signal),
            (None, None) => Self::Failed(format!("unknown status {status}")),
        }
    }
}

impl std::fmt::Display for Outcome {
    /// `exit code N`, `killed by signal SIGKILL`, `timed out after 120s`, `stopped`,
    /// `failed: WHY`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exit code {code}"),
            Self::Killed(signal) => match Signal::try_from(*signal) {
                Ok(s) => write!(f, "killed by signal {}", s.as_str()),
                Err(_) => write!(f, "killed by signal {signal}"),
            },
            Self::TimedOut(after) => write!(f, "timed out after {}s", after.as_secs_f64()),
            Self::Stopped => f.write_str("stopped"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// A background command that has ended: what it printed, how it ended, how long it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Its id, from 1, in the order the commands were started by this [`Background`].
    pub id: u64,
    /// The command as given.
    pub command: String,
    /// How it ended.
    pub outcome: Outcome,
    /// The first [`Limits::keep_bytes`] bytes of its stdout.
    pub stdout: Vec<u8>,
    /// The first [`Limits::keep_bytes`] bytes of its stderr.
    pub stderr: Vec<u8>,
    /// Bytes of stdout and stderr read and not kept.
    pub dropped_bytes: u64,
    /// How many processes `sh` left running that were stopped when it exited.
    pub stopped: usize,
    /// From its start to its end.
    pub elapsed: Duration,
}

impl Finished {
    /// stdout then stderr as text (an invalid byte becomes U+FFFD), and, when the cap cut them,
    /// a last line `... (N more bytes not kept)`.
    pub fn output(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&self.stderr));
        if self.dropped_bytes > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("... ({} more bytes not kept)", self.dropped_bytes));
        }
        text
    }
}

/// Where a background command is: running, or ended well or not ([`Outcome::succeeded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Still running.
    Running,
    /// Exited with code 0.
    Completed,
    /// Any other end: a non-zero code, a signal, the timeout, a stop.
    Failed,
}

impl std::fmt::Display for JobState {
    /// `running`, `completed`, `failed` (the course's words).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
        })
    }
}

/// One line of [`Background::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// Its id.
    pub id: u64,
    /// The command as given.
    pub command: String,
    /// Running, completed or failed.
    pub state: JobState,
    /// How long it has run, or ran.
    pub elapsed: Duration,
    /// How it ended; `None` while it runs.
    pub outcome: Option<Outcome>,
}

/// Why a background command did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The command holds a deny-list entry, as `bash` refuses it.
    #[error("Dangerous command blocked")]
    Blocked,
    /// The sandbox could not be built.
    #[error("Cannot set up the sandbox: {0}")]
    Sandbox(String),
    /// `sh` could not be started (or the harness is exiting).
    #[error("Cannot run sh: {0}")]
    Spawn(std::io::Error),
}

/// One command's record.
#[derive(Debug)]
struct Job {
    command: String,
    started: Instant,
    /// Notified to stop it.
    stop: Arc<Notify>,
    finished: Option<Arc<Finished>>,
}

/// What finished commands push into a queue of automatic turns.
type MakeTurn = dyn Fn(&Finished) -> Option<AutoTurn> + Send + Sync;

#[derive(Default)]
struct Jobs {
    next: u64,
    list: BTreeMap<u64, Job>,
    /// Ids of finished jobs not taken yet, in the order they finished.
    ready: Vec<u64>,
    wake: Option<(TurnSender, Arc<MakeTurn>)>,
}

#[derive(Default)]
struct Shared {
    jobs: Mutex<Jobs>,
    /// Notified (all waiters) each time a command finishes.
    finished: Notify,
}

/// The background commands of one harness (or one agent): start, list, collect, stop. Cloning
/// gives another handle on the same commands.
#[derive(Clone, Default)]
pub struct Background {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background").field("jobs", &self.list()).finish()
    }
}

impl Background {
    /// No commands yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn jobs(&self) -> MutexGuard<'_, Jobs> {
        self.shared.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// From now on, each command that finishes pushes `make`'s turn (if it gives one) into
    /// `sender`'s queue, and while it runs the queue expects that item
    /// ([`TurnSender::expect`]). Commands already running are not affected.
    pub fn wake_with(
        &self,
        sender: TurnSender,
        make: impl Fn(&Finished) -> Option<AutoTurn> + Send + Sync + 'static,
    ) {
        self.jobs().wake = Some((sender, Arc::new(make)));
    }

    /// Starts `command` in the background, in `ws`'s root, under `sandbox`, with `limits`, and
    /// returns its id. Nothing it prints reaches the terminal.
    ///
    /// # Errors
    /// [`StartError`]: the deny list, the sandbox, or the spawn (also once the harness is
    /// exiting). Nothing was started then.
    pub fn start(
        &self,
        command: &str,
        ws: &Workspace,
        sandbox: &Sandbox,
        limits: Limits,
    ) -> Result<u64, StartError> {
        if deny_list_match(command).is_some() {
            return Err(StartError::Blocked);
        }
        let confinement = sandbox.confinement(ws).map_err(StartError::Sandbox)?;
        let (child, session) =
            spawn_shell(command, ws.dir(), ws.root(), confinement).map_err(StartError::Spawn)?;
        let stop = Arc::new(Notify::new());
        let (id, wake) = {
            let mut jobs = self.jobs();
            jobs.next += 1;
            let id = jobs.next;
            let job = Job {
                command: command.to_owned(),
                started: Instant::now(),
                stop: Arc::clone(&stop),
                finished: None,
            };
            jobs.list.insert(id, job);
            let wake =
                jobs.wake.as_ref().map(|(sender, make)| (sender.clone(), Arc::clone(make), sender.expect()));
            (id, wake)
        };
        let this = self.clone();
        let command = command.to_owned();
        tokio::spawn(async move {
            let started = Instant::now();
            let (outcome, out, err, stopped) = watch(child, session, &stop, limits).await;
            let finished = Arc::new(Finished {
                id,
                command,
                outcome,
                dropped_bytes: out.dropped_bytes + err.dropped_bytes,
                stdout: out.head,
                stderr: err.head,
                stopped,
                elapsed: started.elapsed(),
            });
            this.record(&finished);
            if let Some((sender, make, expecting)) = wake {
                if let Some(turn) = make(&finished) {
                    sender.push(turn);
                }
                drop(expecting);
            }
        });
        Ok(id)
    }

    /// Stores `finished` as its job's end and wakes those waiting.
    fn record(&self, finished: &Arc<Finished>) {
        let mut jobs = self.jobs();
        if let Some(job) = jobs.list.get_mut(&finished.id) {
            job.finished = Some(Arc::clone(finished));
            jobs.ready.push(finished.id);
        }
        drop(jobs);
        self.shared.finished.notify_waiters();
    }

    /// Every command started, in id order: id, state, command, elapsed time, outcome.
    pub fn list(&self) -> Vec<JobInfo> {
        let jobs = self.jobs();
        jobs.list
            .iter()
            .map(|(&id, job)| {
                let outcome = job.finished.as_ref().map(|f| f.outcome.clone());
                let state = match &outcome {
                    None => JobState::Running,
                    Some(o) if o.succeeded() => JobState::Completed,
                    Some(_) => JobState::Failed,
                };
                let elapsed = job.finished.as_ref().map_or_else(|| job.started.elapsed(), |f| f.elapsed);
                JobInfo { id, command: job.command.clone(), state, elapsed, outcome }
            })
            .collect()
    }

    /// How many commands are running.
    pub fn running(&self) -> usize {
        self.jobs().list.values().filter(|j| j.finished.is_none()).count()
    }

    /// `true` when a finished command has not been taken yet (s15's peek).
    pub fn has_finished(&self) -> bool {
        !self.jobs().ready.is_empty()
    }

    /// The finished commands not taken yet, in the order they finished; each is handed out once
    /// (the course's single consumer, `collect`). They stay in [`Background::list`].
    pub fn take_finished(&self) -> Vec<Arc<Finished>> {
        let mut jobs = self.jobs();
        let ready = std::mem::take(&mut jobs.ready);
        ready.into_iter().filter_map(|id| jobs.list.get(&id).and_then(|job| job.finished.clone())).collect()
    }

    /// The record of command `id` once it has finished, waiting for that; `None` for an id
    /// never started. Does not take it: [`Background::take_finished`] still hands it out.
    pub async fn wait(&self, id: u64) -> Option<Arc<Finished>> {
        loop {
            let finished = self.shared.finished.notified();
            tokio::pin!(finished);
            // Registered before the check, so an end between the check and the wait is not missed.
            finished.as_mut().enable();
            match self.jobs().list.get(&id) {
                None => return None,
                Some(Job { finished: Some(f), .. }) => return Some(Arc::clone(f)),
                Some(_) => {}
            }
            finished.await;
        }
    }

    /// Asks command `id` to stop: it and everything it started are ended, and it is reported
    /// [`Outcome::Stopped`]. `false` for an id that is not running.
    pub fn stop(&self, id: u64) -> bool {
        match self.jobs().list.get(&id) {
            Some(job) if job.finished.is_none() => {
                job.stop.notify_one();
                true
            }
            _ => false,
        }
    }

    /// Asks every running command to stop; returns how many were asked. (At the harness's exit
    /// [`super::end_all_sessions`] ends them anyway.)
    pub fn stop_all(&self) -> usize {
        let jobs = self.jobs();
        let running: Vec<_> = jobs.list.values().filter(|j| j.finished.is_none()).collect();
        running.iter().for_each(|j| j.stop.notify_one());
        running.len()
    }
}

/// Collects a command's output until it ends, its timeout passes or `stop` is notified; then
/// the outcome, what each stream produced and how many processes were stopped.
async fn watch(
    mut child: Child,
    mut session: Session,
    stop: &Notify,
    limits: Limits,
) -> (Outcome, Captured, Captured, usize) {
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let ended = {
        let work = async {
            let ((), (), report) = tokio::join!(
                capture_into(stdout, Keep::Head(limits.keep_bytes), &mut out),
                capture_into(stderr, Keep::Head(limits.keep_bytes), &mut err),
                session.finish(&mut child)
            );
            report
        };
        tokio::select! {
            r = tokio::time::timeout(limits.timeout, work) => match r {
                Ok(Ok(report)) => Ok((report.status.map_or(Outcome::Exited(0), Outcome::from_status), report.stopped)),
                Ok(Err(e)) => Ok((Outcome::Failed(format!("cannot wait for sh: {e}")), 0)),
                Err(_) => Err(Outcome::TimedOut(limits.timeout)),
            },
            () = stop.notified() => Err(Outcome::Stopped),
        }
    };
    match ended {
        Ok((outcome, stopped)) => (outcome, out, err, stopped),
        Err(outcome) => {
            session.stop();
            // As `bash` does: everything is killed within about two seconds; a supervisor that
            // does not end (stopped by a command under `--sandbox off`) is killed.
            if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            (outcome, out, err, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turns;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ws = Workspace::new(dir.path()).expect("workspace");
        (dir, ws)
    }

    #[tokio::test]
    async fn the_exit_status_and_output_arrive_later_and_are_taken_once() {
        let (_dir, ws) = workspace();
        let bg = Background::new();
        let limits = Limits::default();
        let id = bg.start("echo out; echo err >&2; exit 3", &ws, &Sandbox::default(), limits).expect("start");
        let finished = bg.wait(id).await.expect("known id");
        assert_eq!(finished.outcome, Outcome::Exited(3));
        assert_eq!(finished.output(), "out\nerr\n");
        let listed = bg.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id, listed[0].state, listed[0].command.as_str()),
            (1, JobState::Failed, "echo out; echo err >&2; exit 3")
        );
        assert!(bg.has_finished());
        assert_eq!(bg.take_finished().len(), 1);
        assert!(bg.take_finished().is_empty() && !bg.has_finished(), "handed out once");
        assert!(bg.wait(99).await.is_none());
    }

    #[tokio::test]
    async fn a_command_past_its_timeout_is_stopped_and_failed_with_its_output_so_far() {
        let (_dir, ws) = workspace();
        let bg = Background::new();
        let limits = Limits { timeout: Duration::from_millis(300), keep_bytes: 4 };
        let id =
            bg.start("printf 'abcdefgh'; exec sleep 60", &ws, &Sandbox::default(), limits).expect("start");
        let finished = bg.wait(id).await.expect("known id");
        assert_eq!(finished.outcome, Outcome::TimedOut(Duration::from_millis(300)));
        assert_eq!((finished.stdout.as_slice(), finished.dropped_bytes), (&b"abcd"[..], 4));
        assert_eq!(finished.output(), "abcd\n... (4 more bytes not kept)");
        assert_eq!(bg.list()[0].state, JobState::Failed);
        assert_eq!(finished.outcome.to_string(), "timed out after 0.3s");
    }

    #[tokio::test]
    async fn stop_ends_a_running_command_and_a_denied_one_never_starts() {
        let (_dir, ws) = workspace();
        let bg = Background::new();
        let id = bg.start("sleep 60", &ws, &Sandbox::default(), Limits::default()).expect("start");
        assert_eq!((bg.running(), bg.list()[0].state), (1, JobState::Running));
        assert!(bg.stop(id));
        assert_eq!(bg.wait(id).await.map(|f| f.outcome.clone()), Some(Outcome::Stopped));
        assert!(!bg.stop(id), "no longer running");
        assert!(matches!(
            bg.start("rm -rf /", &ws, &Sandbox::default(), Limits::default()),
            Err(StartError::Blocked)
        ));
        assert_eq!(bg.list().len(), 1);
    }

    #[tokio::test]
    async fn a_finished_command_pushes_its_turn_and_is_expected_until_then() {
        let (_dir, ws) = workspace();
        let (sender, mut queue) = turns::queue();
        let bg = Background::new();
        bg.wake_with(sender, |f| Some(AutoTurn::new("background", format!("{} ended: {}", f.id, f.outcome))));
        bg.start("exit 7", &ws, &Sandbox::default(), Limits::default()).expect("start");
        let turn = queue.next_expected().await.expect("an item was expected");
        assert_eq!(turn.prompt, "1 ended: exit code 7");
        assert_eq!(queue.expected(), 0);
        assert_eq!(queue.next_expected().await, None);
    }
}
