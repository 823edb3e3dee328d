//! How a `bash` command is started and ended, so that nothing outlives its call: a
//! command the model runs must not leave a process behind that goes on acting after the turn.
//!
//! - **A session of its own.** Each command runs as `sh -c COMMAND` in a new session (`setsid`),
//!   so it has no controlling terminal: it cannot open `/dev/tty`, so it can neither read the
//!   user's keys nor inject keystrokes with `TIOCSTI` (which would later answer a prompt such as
//!   s05's `Allow? [y/N]`). Its stdin is `/dev/null`.
//! - **Ended as a whole.** When the call ends, for whatever reason (the command finished, the
//!   timeout, the turn cancelled, the harness told to stop), every process of that session is
//!   killed, whichever process group it moved to (`set -m`, `setpgid`), found by a scan of
//!   `/proc` by session id. Each is signalled through a pidfd opened before its session is checked
//!   again, so a recycled pid is never hit. Only a second `setsid` leaves the session; see the
//!   s02 README.
//! - **The harness's own secrets stay home.** A command gets the user's environment without
//!   `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN` and any variable whose name contains `KEY`,
//!   `TOKEN`, `SECRET` or `PASSWORD` in any case (the Codex CLI's exclude policy), see
//!   [`is_secret`].
//! - **SIGTERM and SIGHUP** to the harness (a `kill`, a closed terminal) first end every running
//!   command's session, then exit with 128 + the signal number, see
//!   [`end_commands_on_terminate_signals`]. A command is started and registered under one lock,
//!   which [`end_all_sessions`] also takes and then closes, so no command escapes the ending by
//!   being half started (forked and running, not yet registered) or started just after it, on any
//!   runtime flavour.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use landlock::RulesetCreated;
use rustix::process::{Pid, PidfdFlags, Signal};
use tokio::process::{Child, Command};

/// The sessions of commands still running, and whether [`end_all_sessions`] has closed the
/// registry to new commands.
struct Registry {
    live: BTreeSet<i32>,
    closed: bool,
}

/// Every running command's session, for [`end_all_sessions`]. [`spawn_shell`] holds the lock from
/// before the fork until the new session is in `live`.
static SESSIONS: Mutex<Registry> = Mutex::new(Registry { live: BTreeSet::new(), closed: false });

fn sessions() -> std::sync::MutexGuard<'static, Registry> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long [`Session::end`] keeps killing before it gives up on processes that will not die
/// (a process stuck in the kernel, state `D`, dies only when the kernel lets it).
const END_WITHIN: Duration = Duration::from_secs(2);

/// Whether an environment variable is withheld from commands: `ANTHROPIC_API_KEY`,
/// `ANTHROPIC_AUTH_TOKEN`, or a name containing `KEY`, `TOKEN`, `SECRET` or `PASSWORD`, compared
/// case-insensitively.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "ANTHROPIC_API_KEY"
        || upper == "ANTHROPIC_AUTH_TOKEN"
        || ["KEY", "TOKEN", "SECRET", "PASSWORD"].iter().any(|s| upper.contains(s))
}

/// The environment a command gets: the harness's own, less the variables [`is_secret`] names.
/// A name that is not valid UTF-8 is kept only if its lossy form is not secret.
pub fn command_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().filter(|(k, _)| !is_secret(&k.to_string_lossy())).collect()
}

/// A running command's session. Ending it (or dropping it) kills every process in it.
#[derive(Debug)]
pub struct Session {
    sid: Option<i32>,
}

impl Session {
    /// Kills every live process of the session (SIGKILL) and waits until none is left, up to two
    /// seconds. Returns how many processes were killed; after the leader has been reaped, that
    /// is how many it left running in the background. Blocking, but short: a `/proc` scan per
    /// round.
    pub fn end(&self) -> usize {
        self.sid.map_or(0, end_session)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(sid) = self.sid {
            end_session(sid);
            sessions().live.remove(&sid);
        }
    }
}

/// Starts `sh -c command` for the `bash` tool: in a new session, in the folder `cwd` (by its
/// handle, `fchdir`), with stdin from `/dev/null`, stdout and stderr piped, the environment of
/// [`command_env`] plus `PWD`, and, when given, the Landlock `sandbox` applied to the child alone
/// just before `exec`.
///
/// The spawn and the registration of the session happen under the registry's lock: once the
/// command runs, [`end_all_sessions`] knows it.
///
/// # Errors
/// The `io::Error` of the spawn, including one from the child's setup (`setsid`, `fchdir`,
/// Landlock's `restrict_self`); [`io::ErrorKind::Interrupted`] (`the harness is exiting`) once
/// [`end_all_sessions`] has run.
pub fn spawn_shell(
    command: &str,
    cwd: &Dir,
    pwd: &std::path::Path,
    sandbox: Option<RulesetCreated>,
) -> io::Result<(Child, Session)> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .envs(command_env())
        .env("PWD", pwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let dir_fd = cwd.as_fd().as_raw_fd();
    let mut sandbox = sandbox;
    // SAFETY: the closure runs in the forked child before `exec` and only makes system calls
    // (setsid, fchdir, prctl, landlock_restrict_self, close); it allocates nothing. `dir_fd`
    // stays open in the parent for the whole spawn, so the child's copy is valid.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setsid()?;
            rustix::process::fchdir(BorrowedFd::borrow_raw(dir_fd))?;
            if let Some(ruleset) = sandbox.take() {
                ruleset.restrict_self().map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
            }
            Ok(())
        });
    }
    // Held across the fork and exec: a SIGTERM handler on another thread must not take its list
    // of sessions while this command already runs but is not in it yet. The child touches no
    // lock before `exec`.
    let mut registry = sessions();
    if registry.closed {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "the harness is exiting"));
    }
    let child = cmd.spawn()?;
    // The leader's pid is the session id.
    let sid = child.id().and_then(|id| i32::try_from(id).ok());
    if let Some(sid) = sid {
        registry.live.insert(sid);
    }
    Ok((child, Session { sid }))
}

/// Ends every running command's session, for the SIGTERM/SIGHUP handler, and closes the registry:
/// from then on [`spawn_shell`] refuses to start a command, so none starts between this call and
/// the harness's exit. A spawn in progress on another thread finishes and registers first.
pub fn end_all_sessions() {
    let sids: Vec<i32> = {
        let mut registry = sessions();
        registry.closed = true;
        registry.live.iter().copied().collect()
    };
    for sid in sids {
        end_session(sid);
    }
}

/// Installs the handler for SIGTERM and SIGHUP (a `kill`, a closed terminal): it ends every
/// running command's session, then exits with 143 (SIGTERM) or 129 (SIGHUP). Needs a Tokio
/// runtime. Ctrl-C (SIGINT) is left to the REPL, which cancels the turn.
pub fn end_commands_on_terminate_signals() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (signal(SignalKind::terminate()), signal(SignalKind::hangup())) else {
        return;
    };
    tokio::spawn(async move {
        let code = tokio::select! {
            _ = term.recv() => 128 + 15,
            _ = hup.recv() => 128 + 1,
        };
        end_all_sessions();
        std::process::exit(code);
    });
}

/// Kills the live members of session `sid` until none is left (or [`END_WITHIN`] passes) and
/// returns how many distinct processes were killed.
fn end_session(sid: i32) -> usize {
    let mut killed: BTreeSet<i32> = BTreeSet::new();
    let start = Instant::now();
    let mut first = true;
    loop {
        let live = session_members(sid);
        // The leader's own process group first, at once (the session id is its group id); the
        // scan then finds those that moved to other groups.
        if first && let Some(group) = Pid::from_raw(sid) {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
        if live.is_empty() || (!first && start.elapsed() > END_WITHIN) {
            return killed.len();
        }
        let first_round = first;
        first = false;
        for pid in live {
            // Counted even when the group kill above got it first.
            if kill_if_member(pid, sid) || first_round {
                killed.insert(pid);
            }
        }
        // SIGKILL is delivered asynchronously; give the dying a moment before the next scan.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// SIGKILL to `pid` through a pidfd, if it is still a member of session `sid` once the pidfd
/// is open (so a recycled pid is never signalled).
fn kill_if_member(pid: i32, sid: i32) -> bool {
    let Some(p) = Pid::from_raw(pid) else { return false };
    let Ok(fd) = rustix::process::pidfd_open(p, PidfdFlags::empty()) else { return false };
    if stat_fields(pid).is_none_or(|f| f.session != sid || f.zombie) {
        return false;
    }
    rustix::process::pidfd_send_signal(&fd, Signal::KILL).is_ok()
}

/// The live (not zombie) processes whose session id is `sid`.
pub(crate) fn session_members(sid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| stat_fields(pid).is_some_and(|f| f.session == sid && !f.zombie))
        .collect()
}

/// What is read from `/proc/PID/stat` (here, and by the tests through `test_util::Proc`).
pub(crate) struct StatFields {
    /// Dead, only not yet reaped (state `Z`), or being removed (`X`).
    pub(crate) zombie: bool,
    /// Field 6, the session id.
    pub(crate) session: i32,
    /// Field 22, the start time in clock ticks after boot: with the pid, it names one process,
    /// even after the pid is recycled.
    #[cfg_attr(not(feature = "test-util"), expect(dead_code, reason = "read by test_util::Proc"))]
    pub(crate) start: u64,
}

/// `pid (comm) state ppid pgrp session … starttime …`; comm may hold spaces or parentheses, so
/// the fields are split after the last `)`. `None` when the process is gone.
pub(crate) fn stat_fields(pid: i32) -> Option<StatFields> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?;
    let session = fields.nth(2)?.parse().ok()?;
    // After the session (field 6): tty_nr, tpgid, flags, 4 fault counts, 4 times, priority, nice,
    // num_threads, itrealvalue (7 to 21), then starttime (22).
    let start = fields.nth(15)?.parse().ok()?;
    Some(StatFields { zombie: state == "Z" || state == "X", session, start })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_recognised_by_name() {
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "DB_PASSWORD",
            "ssh_key_path",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "ANTHROPIC_BASE_URL", "MODEL_ID", "LANG", "TERM"] {
            assert!(!is_secret(name), "{name}");
        }
    }
}
