//! Ending a command's processes where no subreaper exists (macOS): follow them in the process
//! table, then kill them.
//!
//! A command's processes are its **members**: `sh` itself; every process in `sh`'s session (a
//! process may change its group, not its session, without `setsid`); and, closed over parents,
//! every child of a member. A process that calls `setsid` stays a member while its parent is one,
//! and once it has been seen as a member it is remembered by its pid and start time, so it stays
//! one after its parent exits. The tracker looks at the table every [`SCAN_EVERY`] while the
//! command runs, so only a process that leaves (a double fork with `setsid`) and loses its
//! parent within one look escapes; on Linux the subreaper has no such gap.
//!
//! Ending: rounds of "look, kill `sh`'s process group and every member", until none is alive
//! or [`END_WITHIN`] has passed; a killed process cannot fork again, so this ends. Zombies are
//! dead and not counted. A cancelled call ([`Tracker::kill_known`]) also kills at once, on the
//! caller's thread, every member alive at the last look, so that a harness exiting right after
//! does not leave them behind.
//!
//! The process table is read with `libproc` on macOS (`proc_listallpids`, then `proc_pidinfo`
//! and `getsid` for each process) and, for this module's own tests, with `/proc` on Linux: so everything here but the `libproc` reader is tested on Linux
//! against real processes.

use std::collections::{BTreeSet, HashSet};
use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::END_WITHIN;

#[cfg(target_os = "macos")]
mod libproc;
#[cfg(target_os = "macos")]
use libproc::{rows, start_of};
#[cfg(all(test, target_os = "linux"))]
mod procfs;
#[cfg(all(test, target_os = "linux"))]
use procfs::{rows, start_of};

/// How often the table is looked at while a command runs.
pub(crate) const SCAN_EVERY: Duration = Duration::from_millis(100);

/// One process, as the tracker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub pid: i32,
    pub parent: Option<i32>,
    pub session: Option<i32>,
    /// When it started, in the table's own unit (microseconds on macOS, clock ticks since boot
    /// on Linux): with the pid, a process's identity, since a pid is reused once its process is
    /// gone.
    pub start: u64,
    pub zombie: bool,
}

/// A process's identity: pid and start time.
pub(crate) type Identity = (i32, u64);

/// Whether a live process other than the leader has the leader's pid: `sh` was reaped and its
/// pid handed to a newcomer. No pid is handed out while a session or group bears it, so the
/// session and group with that number are then the newcomer's, not the command's.
fn leader_pid_taken<'a>(
    rows: impl IntoIterator<Item = &'a Row>,
    leader: i32,
    leader_start: Option<u64>,
) -> bool {
    rows.into_iter().any(|r| r.pid == leader && !r.zombie && leader_start.is_some_and(|s| s != r.start))
}

/// The live members of the command led by `leader` in `rows` (see the module docs): `leader`
/// (matched by identity once `leader_start` is known), the processes of its session, those
/// already `known`, and every descendant of one of them, followed through parents whether
/// those are alive or zombies. Never this process itself, nor `init`. Zombies are left out of
/// the result: they are dead.
pub(crate) fn members(
    rows: &[Row],
    leader: i32,
    leader_start: Option<u64>,
    known: &HashSet<Identity>,
) -> Vec<Identity> {
    let me = i32::try_from(std::process::id()).unwrap_or(-1);
    let rows: Vec<&Row> = rows.iter().filter(|r| r.pid != me && r.pid > 1).collect();
    let taken = leader_pid_taken(rows.iter().copied(), leader, leader_start);
    let is_leader = |r: &Row| r.pid == leader && leader_start.is_none_or(|s| s == r.start);
    let seed =
        |r: &Row| is_leader(r) || (!taken && r.session == Some(leader)) || known.contains(&(r.pid, r.start));
    let mut pids: BTreeSet<i32> = rows.iter().filter(|r| seed(r)).map(|r| r.pid).collect();
    loop {
        let before = pids.len();
        for r in &rows {
            if r.parent.is_some_and(|p| pids.contains(&p)) {
                pids.insert(r.pid);
            }
        }
        if pids.len() == before {
            break;
        }
    }
    rows.iter().filter(|r| !r.zombie && pids.contains(&r.pid)).map(|r| (r.pid, r.start)).collect()
}

/// What the tracker thread and the harness share.
#[derive(Default)]
struct State {
    /// Every process seen as a member.
    known: HashSet<Identity>,
    /// The members alive at the last look.
    last: Vec<Identity>,
    /// The harness asked for the end.
    end: bool,
    /// The end is done: how many processes other than `sh` were killed.
    stopped: Option<usize>,
    /// How many looks at the table the thread has made while the command ran.
    looks: usize,
}

/// Follows one command's processes on a thread of its own, and ends them when asked. See the
/// module docs.
pub(crate) struct Tracker {
    leader: i32,
    leader_start: Option<u64>,
    state: Mutex<State>,
    changed: Condvar,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker").field("leader", &self.leader).finish_non_exhaustive()
    }
}

impl Tracker {
    /// Starts following the command led by `leader`: a session leader that this process started
    /// and has not reaped yet, so its pid still names it. Its start time is read here, before
    /// this returns, so that the pid is matched by identity from then on.
    ///
    /// # Errors
    /// The thread cannot be started; the caller must then end the command itself.
    pub(crate) fn start(leader: i32) -> io::Result<Arc<Tracker>> {
        let leader_start = start_of(leader);
        let mut state = State::default();
        state.known.extend(leader_start.map(|s| (leader, s)));
        let tracker =
            Arc::new(Tracker { leader, leader_start, state: Mutex::new(state), changed: Condvar::new() });
        let follower = Arc::clone(&tracker);
        std::thread::Builder::new().name("command-tracker".into()).spawn(move || follower.follow())?;
        Ok(tracker)
    }

    /// A tracker with no thread, that has looked at the table once: for the test of
    /// [`Tracker::kill_known`] alone.
    #[cfg(test)]
    fn looked_once(leader: i32) -> Tracker {
        let leader_start = start_of(leader);
        let mut state = State::default();
        state.last = members(&rows(), leader, leader_start, &state.known);
        state.known.extend(state.last.iter().copied());
        Tracker { leader, leader_start, state: Mutex::new(state), changed: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the end: every member is killed, on the tracker's thread. Does not wait;
    /// harmless once ended.
    pub(crate) fn end(&self) {
        self.lock().end = true;
        self.changed.notify_all();
    }

    /// Whether the end is done.
    pub(crate) fn ended(&self) -> bool {
        self.lock().stopped.is_some()
    }

    /// For a call cancelled before its end was asked (`sh` not reaped yet, so its pid and group
    /// still name it): kills at once, on this thread, `sh`'s process group and every member alive
    /// at the last look, then asks for the end, which finds what that look missed. Nothing once
    /// the end was asked. Those pids are at most [`SCAN_EVERY`] old: one freed and handed out
    /// again in between would be hit, which macOS, handing pids out in increasing order up to
    /// 99,999, makes unlikely.
    pub(crate) fn kill_known(&self) {
        let mut state = self.lock();
        if state.end {
            return;
        }
        kill(-self.leader);
        for &(pid, _) in &state.last {
            kill(pid);
        }
        state.end = true;
        drop(state);
        self.changed.notify_all();
    }

    /// Waits, `within` at most, until the end is done; how many processes other than `sh` were
    /// killed, or `None` if not done in time.
    pub(crate) fn wait_ended(&self, within: Duration) -> Option<usize> {
        let deadline = Instant::now() + within;
        let mut state = self.lock();
        while state.stopped.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state =
                self.changed.wait_timeout(state, left).map(|(s, _)| s).unwrap_or_else(|p| p.into_inner().0);
        }
        state.stopped
    }

    /// How many looks at the process table the tracker has made while the command ran.
    #[cfg(test)]
    pub(crate) fn looks(&self) -> usize {
        self.lock().looks
    }

    /// The thread's life: look every [`SCAN_EVERY`] until the end is asked, then end.
    fn follow(&self) {
        loop {
            let rows = rows();
            let mut state = self.lock();
            let seen = members(&rows, self.leader, self.leader_start, &state.known);
            state.known.extend(seen.iter().copied());
            state.last = seen;
            state.looks += 1;
            if state.end {
                break;
            }
            let (state, _) = self.changed.wait_timeout(state, SCAN_EVERY).unwrap_or_else(|p| p.into_inner());
            if state.end {
                break;
            }
        }
        let stopped = self.end_all();
        self.lock().stopped = Some(stopped);
        self.changed.notify_all();
    }

    /// Rounds of `SIGKILL` to the process group and to every live member, until none is left or
    /// [`END_WITHIN`] has passed. How many processes other than `sh` were killed.
    fn end_all(&self) -> usize {
        let started = Instant::now();
        let mut killed: HashSet<Identity> = HashSet::new();
        loop {
            // Looked at before the kills, so that what the group kill ends is counted.
            let rows = rows();
            let live = {
                let mut state = self.lock();
                let live = members(&rows, self.leader, self.leader_start, &state.known);
                state.known.extend(live.iter().copied());
                state.last.clone_from(&live);
                live
            };
            if !leader_pid_taken(&rows, self.leader, self.leader_start) {
                kill(-self.leader);
            }
            if live.is_empty() {
                break;
            }
            for &(pid, start) in &live {
                kill(pid);
                if pid != self.leader {
                    killed.insert((pid, start));
                }
            }
            if started.elapsed() > END_WITHIN {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        killed.len()
    }
}

/// `SIGKILL` to a pid (or to a process group, negative).
fn kill(pid: i32) {
    // SAFETY: kill takes numbers; no pointer.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[cfg(test)]
mod tests;
