//! The tracker: who is a member, on made-up tables; and, on this machine's real process table,
//! that what a command leaves behind (in its session, in a session of its own, orphaned) dies
//! when the call ends.

use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

fn row(pid: i32, parent: i32, session: i32, start: u64) -> Row {
    Row { pid, parent: Some(parent), session: Some(session), start, zombie: false }
}

fn sorted(mut v: Vec<Identity>) -> Vec<i32> {
    v.sort_unstable();
    v.into_iter().map(|(pid, _)| pid).collect()
}

#[test]
fn members_are_the_session_the_descendants_and_the_known() {
    let rows = vec![
        row(100, 50, 100, 5),                          // sh, the leader
        row(101, 100, 100, 5),                         // its child
        row(102, 101, 102, 6), // a grandchild that called setsid: a member through its parent
        row(103, 102, 102, 6), // its child
        row(104, 1, 100, 6),   // an orphan still in sh's session
        row(105, 1, 105, 7),   // an orphan in a session of its own, seen before
        row(106, 1, 106, 9),   // pid 106 was a member once, but this one started later: reused
        row(200, 1, 200, 1),   // unrelated
        row(50, 1, 50, 1),     // the harness's parent side: not a member
        Row { zombie: true, ..row(107, 100, 107, 6) }, // dead: not a member itself…
        row(108, 107, 108, 6), // …but its child still is
    ];
    let known: HashSet<Identity> = [(105, 7), (106, 3)].into();
    assert_eq!(sorted(members(&rows, 100, Some(5), &known)), [100, 101, 102, 103, 104, 105, 108]);
    // Without the known ones, the orphan in its own session is out of reach.
    assert_eq!(sorted(members(&rows, 100, Some(5), &HashSet::new())), [100, 101, 102, 103, 104, 108]);
    // A leader pid whose start time differs is another process (sh was reaped, the pid taken
    // by a newcomer that made a session of it): neither it, nor its session, nor its children
    // are members; a known process still is.
    let reused = vec![row(100, 1, 100, 99), row(110, 100, 100, 99), row(105, 1, 105, 7)];
    assert_eq!(sorted(members(&reused, 100, Some(5), &known)), [105]);
}

#[test]
fn this_process_and_init_are_never_members() {
    let me = i32::try_from(std::process::id()).unwrap_or(-1);
    let rows = vec![row(me, 100, 100, 1), row(1, 0, 100, 1), row(100, 1, 100, 1)];
    assert_eq!(sorted(members(&rows, 100, None, &HashSet::new())), [100]);
}

/// Waits up to 20 s for `done`, looking every 10 ms.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A pid written by the command into `file`, once it is there.
fn pid_in(file: &Path) -> i32 {
    let mut pid = 0;
    wait_for(&format!("{}", file.display()), || {
        pid = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        pid > 0
    });
    pid
}

/// Whether `pid` runs: it exists and is not a zombie (`/proc/PID/stat`'s state, read here on
/// its own rather than through the tracker's reader).
#[cfg(target_os = "linux")]
fn running(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    state.is_some_and(|s| s != 'Z' && s != 'X')
}

/// Whether `pid` runs: it exists and is not a zombie, as `ps` sees it (macOS has no `/proc`).
#[cfg(not(target_os = "linux"))]
fn running(pid: i32) -> bool {
    let out = std::process::Command::new("ps").args(["-o", "stat=", "-p", &pid.to_string()]).output();
    let stat = out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
    !stat.is_empty() && !stat.starts_with('Z')
}

/// Starts `sh -c script` as the macOS path does: in a session of its own.
fn spawn_leader(script: &str) -> std::process::Child {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(script);
    // SAFETY: setsid is a plain system call, safe between fork and exec.
    unsafe {
        cmd.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    cmd.spawn().expect("sh runs")
}

#[test]
fn ending_kills_what_the_command_left_in_every_form() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path().display();
    // In sh's session and group; in a new session under sh; and a double fork whose middle
    // process (a new session) will die, leaving its child an orphan outside sh's session.
    let script = format!(
        "sleep 300 & echo $! > {d}/group; \
         setsid sleep 300 & echo $! > {d}/session; \
         setsid sh -c 'sleep 300 & echo $! > {d}/orphan; exec sleep 300' & echo $! > {d}/middle; \
         exec sleep 300"
    );
    let mut leader = spawn_leader(&script);
    let tracker = Tracker::start(i32::try_from(leader.id()).expect("pid")).expect("the tracker starts");
    let pids: Vec<i32> =
        ["group", "session", "orphan", "middle"].iter().map(|f| pid_in(&dir.path().join(f))).collect();
    // Two looks after every process exists: each has been seen as a member.
    let seen = tracker.looks();
    wait_for("two looks", || tracker.looks() >= seen + 2);
    // The middle process dies: its child is now an orphan of init, in a session of its own.
    kill(pids[3]);
    wait_for("the middle process to die", || !running(pids[3]));
    let seen = tracker.looks();
    wait_for("one more look", || tracker.looks() > seen);

    tracker.end();
    let stopped = tracker.wait_ended(Duration::from_secs(10));
    let _ = leader.wait();
    for (pid, what) in pids.iter().zip(["group", "session", "orphan"]) {
        wait_for(&format!("the {what} process {pid} to die"), || !running(*pid));
    }
    // sh (exec'd into sleep) is not counted; the three left (the middle one died before).
    assert_eq!(stopped, Some(3));
}

#[test]
fn what_sh_leaves_when_it_exits_is_stopped_and_counted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = format!("sleep 300 & echo $! > {}/bg", dir.path().display());
    let mut leader = spawn_leader(&script);
    let tracker = Tracker::start(i32::try_from(leader.id()).expect("pid")).expect("the tracker starts");
    let bg = pid_in(&dir.path().join("bg"));
    assert!(leader.wait().expect("sh exits").success());
    // sh is reaped and gone; the background sleep is an orphan in sh's session.
    assert!(running(bg));
    tracker.end();
    assert_eq!(tracker.wait_ended(Duration::from_secs(10)), Some(1));
    assert!(tracker.ended());
    wait_for("the background sleep to die", || !running(bg));
}

/// On a cancelled call, what the tracker knows dies on the caller's thread, with no help from
/// the tracker's own (this one has none).
#[test]
fn a_cancelled_call_kills_what_is_known_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = format!("setsid sleep 300 & echo $! > {}/bg; exec sleep 300", dir.path().display());
    let mut leader = spawn_leader(&script);
    let bg = pid_in(&dir.path().join("bg"));
    let tracker = Tracker::looked_once(i32::try_from(leader.id()).expect("pid"));
    tracker.kill_known();
    let _ = leader.wait();
    wait_for("the sleep in its own session to die", || !running(bg));
    // Asked again, nothing more happens: the end is asked already.
    tracker.kill_known();
    assert!(tracker.lock().end);
}
