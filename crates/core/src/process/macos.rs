//! Starting and ending a command on macOS, where there is no subreaper, no pidfd and no
//! `/proc`: the command (`sh -c COMMAND`, under `sandbox-exec` when sandboxed) is the harness's
//! own child, in a session of its own, and a [`Tracker`] follows its processes in the process
//! table and kills them when the call ends. Compiled for macOS by CI, not run there (see
//! [`crate::process`]).
//!
//! What differs from Linux, besides what [`super::tracker`] says of a fast double fork: a
//! harness killed by `SIGKILL` (or one that aborts) leaves its commands running, since nothing
//! outside it watches for its death. Its other ends end them: the timeout, a cancelled turn (what
//! is known dies at once, on the cancelling thread), `SIGTERM`, `SIGHUP`, and a normal exit, which
//! waits for the trackers still at work ([`super::end_all_sessions`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::Duration;

use cap_std::fs::Dir;
use tokio::process::Child;

use super::tracker::Tracker;
use super::{Report, sessions, shell_command, spawn_registered};
use crate::sandbox::Confinement;

/// What the registry holds for a running command: its tracker.
pub(super) type Handle = Arc<Tracker>;

/// Ends each tracker's command (what is known at once, then the rest on its thread) and waits,
/// `within` at most in all, until each is done.
pub(super) fn end_handles(trackers: &[Handle], within: Duration) {
    for tracker in trackers {
        tracker.kill_known();
    }
    let deadline = std::time::Instant::now() + within;
    for tracker in trackers {
        tracker.wait_ended(deadline.saturating_duration_since(std::time::Instant::now()));
    }
}

/// Nothing to do on macOS: another process of the user cannot read the harness's memory
/// without the debugger entitlement or root, and the sandbox's `process-info*` rule keeps the
/// harness's arguments and environment closed to commands. The key is also wiped from the
/// environment at start (`config::withdraw_keys_from_environment`).
pub fn protect_harness() {}

/// A running command: its tracker. Dropping it ends the command ([`Session::stop`]).
#[derive(Debug)]
pub struct Session {
    id: u64,
    tracker: Handle,
    command: Option<i32>,
}

impl Session {
    /// The pid of the command's `sh`, which leads the command's session and process group.
    pub fn command_pid(&self) -> Option<i32> {
        self.command
    }

    /// Ends the command now: `sh`'s process group and every process of it already seen are
    /// killed on this thread, and the tracker's thread finds and kills the rest within about two
    /// seconds. Does not wait for that. Harmless once the end was asked.
    pub fn stop(&self) {
        self.tracker.kill_known();
    }

    /// Waits for the command to end: for `child` (`sh`, as [`spawn_shell`] returned it) to
    /// exit, then for everything it left running to be killed (which also closes the pipes
    /// those held). Then `sh`'s status and how many processes were stopped.
    ///
    /// # Errors
    /// Waiting for `sh` failed.
    pub async fn finish(&mut self, child: &mut Child) -> io::Result<Report> {
        let status = child.wait().await?;
        self.tracker.end();
        let tracker = Arc::clone(&self.tracker);
        let stopped = tokio::task::spawn_blocking(move || tracker.wait_ended(Duration::from_secs(10)))
            .await
            .ok()
            .flatten()
            .unwrap_or(0);
        Ok(Report { status: Some(status), stopped })
    }
}

impl Drop for Session {
    /// Ends the command ([`Session::stop`]). Its tracker stays registered until its end is
    /// done, so that [`super::end_all_sessions`], at the harness's exit, waits for it.
    fn drop(&mut self) {
        self.stop();
        if self.tracker.ended() {
            sessions().live.remove(&self.id);
        }
    }
}

/// Starts `sh -c command` for the `bash` tool: under `/usr/bin/sandbox-exec` with the
/// `confinement`'s Seatbelt profile (or plain `sh` when there is none), in the folder `cwd` (by
/// its handle, `fchdir`), in a new session, with stdin from `/dev/null`, stdout and stderr piped,
/// and the environment of [`command_env`](super::command_env) plus `PWD`.
///
/// The returned `Child` is `sh`; [`Session::finish`] waits for it and for what it left.
///
/// # Errors
/// The `io::Error` of the spawn, including one from the child's setup (`setsid`, `fchdir`);
/// [`io::ErrorKind::Interrupted`] (`the harness is exiting`) once
/// [`super::end_all_sessions`] has run.
pub fn spawn_shell(
    command: &str,
    cwd: &Dir,
    pwd: &std::path::Path,
    confinement: Confinement,
) -> io::Result<(Child, Session)> {
    let (program, args) = confinement.command_line(command);
    let mut cmd = shell_command(program, args, pwd);
    let dir_fd = cwd.as_fd().as_raw_fd();
    // SAFETY: the closure runs in the forked child before `exec` and only makes two system
    // calls (setsid, fchdir); it allocates nothing. `dir_fd` stays open in the parent for the
    // whole spawn, so the child's copy is valid.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            rustix::process::fchdir(BorrowedFd::borrow_raw(dir_fd))?;
            Ok(())
        });
    }
    let ((child, tracker, command), id) = spawn_registered(|| {
        let child = cmd.spawn()?;
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            return Err(io::Error::other("sh exited before it could be followed"));
        };
        let tracker = Tracker::start(pid).map_err(|e| {
            // Unfollowed, it must not run.
            // SAFETY: kill takes numbers; `pid` leads its own process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            io::Error::other(format!("cannot start the thread that follows the command: {e}"))
        })?;
        Ok(((child, Arc::clone(&tracker), pid), Some(tracker)))
    })?;
    Ok((child, Session { id, tracker, command: Some(command) }))
}
