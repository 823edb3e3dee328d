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
//! Ending: rounds of "look, kill `sh`'s process group and every member",
//! until none is alive or [`END_WITHIN`] has passed; a killed process cannot fork again, so this
//! ends. Zombies are dead and not counted. The process table comes from the `sysinfo` crate
//! (`libproc` on macOS, `/proc` on Linux), so this file is tested on Linux against real
//! processes; only `sysinfo`'s macOS half is not run by CI.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

use super::END_WITHIN;

/// How often the table is looked at while a command runs.
pub(crate) const SCAN_EVERY: Duration = Duration::from_millis(100);

/// One process, as the tracker sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub pid: i32,
    pub parent: Option<i32>,
    pub session: Option<i32>,
    /// Start time, in seconds since the epoch: with the pid, a process's identity (a pid can be
    /// reused once its process is gone).
    pub start: u64,
    pub zombie: bool,
}

/// A process's identity: pid and start time.
pub(crate) type Identity = (i32, u64);

/// The live members of the command led by `leader` in `rows` (see the module docs): `leader`
/// (matched by identity once `leader_start` is known), the processes of its session, those
/// already `known`, and every descendant of one of them. Never this process itself. Zombies are
/// left out: they are dead.
pub(crate) fn members(
    rows: &[Row],
    leader: i32,
    leader_start: Option<u64>,
    known: &HashSet<Identity>,
) -> Vec<Identity> {
    let me = i32::try_from(std::process::id()).unwrap_or(-1);
    let alive: Vec<&Row> = rows.iter().filter(|r| !r.zombie && r.pid != me && r.pid > 1).collect();
    let is_leader = |r: &Row| r.pid == leader && leader_start.is_none_or(|s| s == r.start);
    // A process with the leader's pid that is not the leader: `sh` was reaped and its pid taken.
    // No pid is handed out while a session bears it, so the session with that number is the
    // newcomer's, not the command's.
    let taken = alive.iter().any(|r| r.pid == leader && !is_leader(r));
    let seed =
        |r: &Row| is_leader(r) || (!taken && r.session == Some(leader)) || known.contains(&(r.pid, r.start));
    let mut pids: BTreeSet<i32> = alive.iter().filter(|r| seed(r)).map(|r| r.pid).collect();
    loop {
        let before = pids.len();
        for r in &alive {
            if r.parent.is_some_and(|p| pids.contains(&p)) {
                pids.insert(r.pid);
            }
        }
        if pids.len() == before {
            break;
        }
    }
    alive.iter().filter(|r| pids.contains(&r.pid)).map(|r| (r.pid, r.start)).collect()
}

/// The process table through `sysinfo`, kept between looks so that each refresh only adds what
/// is new.
struct Table {
    system: System,
}

impl Table {
    fn new() -> Table {
        Table { system: System::new() }
    }

    /// Every process now: pid, parent, session, start time, whether a zombie.
    fn rows(&mut self) -> Vec<Row> {
        self.system.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
        self.system
            .processes()
            .values()
            .filter(|p| p.thread_kind().is_none())
            .filter_map(|p| {
                Some(Row {
                    pid: i32::try_from(p.pid().as_u32()).ok()?,
                    parent: p.parent().and_then(|q| i32::try_from(q.as_u32()).ok()),
                    session: p.session_id().and_then(|q| i32::try_from(q.as_u32()).ok()),
                    start: p.start_time(),
                    zombie: p.status() == ProcessStatus::Zombie,
                })
            })
            .collect()
    }

    /// The start time of the one process `pid`, looked at alone (cheap).
    fn start_of(&mut self, pid: i32) -> Option<u64> {
        let id = Pid::from_u32(u32::try_from(pid).ok()?);
        self.system.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[id]),
            true,
            ProcessRefreshKind::nothing(),
        );
        self.system.process(id).map(|p| p.start_time())
    }
}

/// What the tracker thread and the harness share.
#[derive(Default)]
struct State {
    /// The harness asked for the end.
    end: bool,
    /// The end is done: how many processes other than `sh` were killed.
    stopped: Option<usize>,
}

/// Follows one command's processes on a thread of its own, and ends them when asked. See the
/// module docs.
pub(crate) struct Tracker {
    leader: i32,
    state: Mutex<State>,
    changed: Condvar,
    /// How many looks at the table the thread has made.
    looks: AtomicUsize,
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
    pub(crate) fn start(leader: i32) -> Arc<Tracker> {
        let tracker = Arc::new(Tracker {
            leader,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            looks: AtomicUsize::new(0),
        });
        let mut table = Table::new();
        let leader_start = table.start_of(leader);
        let follower = Arc::clone(&tracker);
        let spawned = std::thread::Builder::new()
            .name("command-tracker".into())
            .spawn(move || follower.follow(table, leader_start));
        if spawned.is_err() {
            // No thread: at least the process group ends with the call.
            kill(-leader);
            tracker.lock().stopped = Some(0);
        }
        tracker
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the end: every member is killed. Does not wait; harmless once ended.
    pub(crate) fn end(&self) {
        self.lock().end = true;
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
        self.looks.load(Ordering::Relaxed)
    }

    /// The thread's life: look every [`SCAN_EVERY`] until the end is asked, then end.
    fn follow(&self, mut table: Table, leader_start: Option<u64>) {
        let mut known: HashSet<Identity> = HashSet::new();
        known.extend(leader_start.map(|s| (self.leader, s)));
        loop {
            known.extend(members(&table.rows(), self.leader, leader_start, &known));
            self.looks.fetch_add(1, Ordering::Relaxed);
            let state = self.lock();
            if state.end {
                break;
            }
            let (state, _) = self.changed.wait_timeout(state, SCAN_EVERY).unwrap_or_else(|p| p.into_inner());
            if state.end {
                break;
            }
        }
        let stopped = self.end_all(&mut table, leader_start, &mut known);
        self.lock().stopped = Some(stopped);
        self.changed.notify_all();
    }

    /// Rounds of `SIGKILL` to the process group and to every live member, until none is left or
    /// [`END_WITHIN`] has passed. How many processes other than `sh` were killed.
    fn end_all(&self, table: &mut Table, leader_start: Option<u64>, known: &mut HashSet<Identity>) -> usize {
        let started = Instant::now();
        let mut killed: HashSet<Identity> = HashSet::new();
        loop {
            // Looked at before the first kill, so that what the group kill ends is counted.
            let live = members(&table.rows(), self.leader, leader_start, known);
            kill(-self.leader);
            if live.is_empty() {
                break;
            }
            for &(pid, start) in &live {
                kill(pid);
                if pid != self.leader {
                    killed.insert((pid, start));
                }
            }
            known.extend(live);
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
