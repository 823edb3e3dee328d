//! How a `bash` command is started and ended, so that nothing outlives its call: a command the
//! model runs must not leave a process behind that goes on acting after the turn.
//!
//! On every system:
//! - **A session of its own.** The command (`sh -c COMMAND`) leads a new session (`setsid`), so
//!   it has no controlling terminal: it can neither read the user's keys nor inject keystrokes
//!   with `TIOCSTI` into the terminal (which would answer a prompt such as `Allow? [y/N]`). Its
//!   stdin is `/dev/null`.
//! - **Ended whatever happens.** When `sh` exits, what it left running is stopped; on the
//!   timeout, a cancelled turn or a dropped [`Session`], everything is. [`Session::finish`]
//!   gives `sh`'s status and how many processes were stopped.
//! - **The harness's own secrets stay home.** A command gets the user's environment without the
//!   variables [`is_secret`] names (keys, tokens, passwords, credentials, PATs, the ssh agent's
//!   socket) and without those whose value holds a URL with a password ([`is_secret_value`]).
//! - **SIGTERM and SIGHUP** to the harness (a `kill`, a closed terminal) first end every running
//!   command, then exit with 128 + the signal number, see [`end_commands_on_terminate_signals`].
//!   A command is started and registered under one lock, which [`end_all_sessions`] also takes
//!   and then closes, so no command escapes the ending by being half started (forked and
//!   running, not yet registered) or started just after it, on any runtime flavour.
//!
//! How a command's processes are found differs:
//! - **Linux** (`linux`): a supervisor process per command, a *subreaper*, to which every
//!   process the command leaves comes back whatever it did to hide; it also ends the command
//!   when the harness dies, even by `SIGKILL`. Tested end to end on Linux.
//! - **macOS** (`macos`, with `tracker`): no subreaper exists there, so the harness follows the
//!   command's processes in the process table (through `libproc`): its session, its
//!   process group, and every descendant seen while it runs, then kills them when the call ends.
//!   The tracker is compiled and tested on Linux too, against the real process table; on macOS
//!   it is compiled, not run, by CI.
//!
//! What escapes, everywhere: a process started for the command by a server outside it (tmux,
//! `at`, a D-Bus service), which is why the sandbox refuses unix sockets. See the s02 README's
//! threat model.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use tokio::process::Command;

pub mod background;
#[cfg(target_os = "linux")]
pub mod cgroup;
#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(any(target_os = "macos", test))]
pub(crate) mod tracker;

#[cfg(target_os = "linux")]
use linux::{Handle, end_handles};
#[cfg(target_os = "linux")]
pub use linux::{Session, protect_harness, spawn_shell};
#[cfg(target_os = "macos")]
use macos::{Handle, end_handles};
#[cfg(target_os = "macos")]
pub use macos::{Session, protect_harness, spawn_shell};

/// How long the ending of a command keeps killing before it gives up on processes that will
/// not die (a process stuck in the kernel, state `D`, dies only when the kernel lets it).
const END_WITHIN: Duration = Duration::from_secs(2);

/// Names withheld from commands when they hold one of these anywhere (any case).
const SECRET_PARTS: [&str; 8] =
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE"];

/// Names withheld from commands when one of their words (split at `_` and other
/// non-alphanumerics, any case) is one of these: short words that are secrets only as words
/// (`MYSQL_PWD`, `GH_PAT`, `NPM_CONFIG__AUTH`, `SSH_AUTH_SOCK`), not inside others (`PATH`,
/// `GIT_AUTHOR_NAME`).
const SECRET_WORDS: [&str; 8] = ["PWD", "PASS", "PW", "PAT", "AUTH", "CRED", "CREDS", "COOKIE"];

/// The ssh and gpg agents' variables: their sockets hold the user's keys.
const AGENT_VARS: [&str; 3] = ["SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO"];

/// Whether an environment variable is withheld from commands by its name, compared
/// case-insensitively: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`; a name holding `KEY`,
/// `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD`, `PASSPHRASE`, `CREDENTIAL` or `PRIVATE`; a name with
/// one of the words `PWD` (but `PWD` itself, the working folder, is kept), `PASS`, `PW`, `PAT`,
/// `AUTH`, `CRED`, `CREDS`, `COOKIE`; the ssh and gpg agents' variables (`SSH_AUTH_SOCK`, …).
/// Codex's exclude policy (`*KEY*`, `*SECRET*`, `*TOKEN*`) widened.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper == "PWD" {
        return false;
    }
    SECRET_PARTS.iter().any(|s| upper.contains(s))
        || upper.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| SECRET_WORDS.contains(&w))
        || AGENT_VARS.contains(&upper.as_str())
}

/// Whether a variable's value holds a password in a URL: `scheme://user:password@host…`
/// anywhere in it (`DATABASE_URL=postgres://u:pw@db/x`, `HTTPS_PROXY=http://u:pw@proxy:3128`).
/// A URL with a user and no password (`ssh://git@host`) is not a secret.
pub fn is_secret_value(value: &str) -> bool {
    value.match_indices("://").any(|(i, _)| {
        let rest = &value[i + 3..];
        let authority = rest.split(['/', '?', '#', ' ', '"', '\'']).next().unwrap_or_default();
        authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
            userinfo.split_once(':').is_some_and(|(_, password)| !password.is_empty())
        })
    })
}

/// The environment a command gets: the harness's own, less the variables [`is_secret`] or
/// [`is_secret_value`] names. A name or value that is not valid UTF-8 is judged by its lossy
/// form.
pub fn command_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(k, v)| !is_secret(&k.to_string_lossy()) && !is_secret_value(&v.to_string_lossy()))
        .collect()
}

/// What is known when a command has ended: how `sh` ended, and how many processes it left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// How `sh` ended, when it was reaped.
    pub status: Option<ExitStatus>,
    /// How many other processes were killed: after `sh` exited on its own, those `sh` left
    /// running in the background.
    pub stopped: usize,
}

/// The commands still running (by a number of their own, with the handle that ends each), and
/// whether [`end_all_sessions`] has closed the registry to new commands.
struct Registry {
    live: BTreeMap<u64, Handle>,
    next: u64,
    closed: bool,
    /// The pids of [`KeptChild`]ren, with how many guards hold each. Read on Linux only, where
    /// the harness is a subreaper.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    kept: BTreeMap<u32, usize>,
}

/// Every running command, for [`end_all_sessions`]. [`spawn_shell`] holds the lock from before
/// the spawn until the new command is in `live`.
static SESSIONS: Mutex<Registry> =
    Mutex::new(Registry { live: BTreeMap::new(), next: 0, closed: false, kept: BTreeMap::new() });

/// A child process the harness started on purpose beside its commands (an MCP server, a `git`
/// of its own), named so that it is never taken for what a command left behind. The harness is
/// a subreaper ([`protect_harness`]): when a command's supervisor is killed (`--sandbox off`),
/// every child of the harness that is neither a supervisor nor kept is an orphan of that command
/// and is ended with it. Dropping the guard forgets the pid; hold it as long as the process may
/// run.
#[derive(Debug)]
#[must_use = "the pid is kept only while the guard lives"]
pub struct KeptChild(u32);

/// Names `pid`, a child this process spawned, as one of its own (see [`KeptChild`]).
pub fn keep_child(pid: u32) -> KeptChild {
    *sessions().kept.entry(pid).or_insert(0) += 1;
    KeptChild(pid)
}

impl Drop for KeptChild {
    fn drop(&mut self) {
        let mut registry = sessions();
        if let Some(count) = registry.kept.get_mut(&self.0) {
            *count -= 1;
            if *count == 0 {
                registry.kept.remove(&self.0);
            }
        }
    }
}

fn sessions() -> std::sync::MutexGuard<'static, Registry> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// `program args…` as every system starts a command's `sh`: the environment of [`command_env`]
/// plus `PWD`, stdin from `/dev/null`, stdout and stderr piped.
fn shell_command<I, S>(program: impl AsRef<OsStr>, args: I, pwd: &Path) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(command_env())
        .env("PWD", pwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `spawn` under the registry's lock and registers the handle it gives (if any) under a new
/// number, returned with `spawn`'s value. Held across the spawn so that [`end_all_sessions`], on
/// another thread, cannot take its list while a command already runs but is not in it yet.
///
/// # Errors
/// `spawn`'s error; [`io::ErrorKind::Interrupted`] (`the harness is exiting`), without calling
/// `spawn`, once [`end_all_sessions`] has closed the registry.
fn spawn_registered<T>(spawn: impl FnOnce() -> io::Result<(T, Option<Handle>)>) -> io::Result<(T, u64)> {
    let mut registry = sessions();
    if registry.closed {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "the harness is exiting"));
    }
    // A dropped session's tracker stays registered until its end is done: forget the done ones.
    #[cfg(target_os = "macos")]
    registry.live.retain(|_, tracker| !tracker.ended());
    let (value, handle) = spawn()?;
    let id = registry.next;
    registry.next += 1;
    if let Some(handle) = handle {
        registry.live.insert(id, handle);
    }
    Ok((value, id))
}

/// Ends every running command, for the SIGTERM/SIGHUP handler and the harness's exit: asks each
/// to end and waits until they have (three seconds at most). Closes the registry first: from then on
/// [`spawn_shell`] refuses to start a command, so none starts between this call and the
/// harness's exit. A spawn in progress on another thread finishes and registers first.
pub fn end_all_sessions() {
    let handles: Vec<Handle> = {
        let mut registry = sessions();
        registry.closed = true;
        registry.live.values().cloned().collect()
    };
    end_handles(&handles, END_WITHIN + Duration::from_secs(1));
}

/// Work the SIGTERM/SIGHUP handler does after it has ended every command and before the process
/// exits ([`before_terminate_exit`]).
type ExitWork = Box<dyn FnOnce() + Send>;

/// The work registered with [`before_terminate_exit`], in registration order.
fn exit_work() -> std::sync::MutexGuard<'static, Vec<ExitWork>> {
    static WORK: Mutex<Vec<ExitWork>> = Mutex::new(Vec::new());
    WORK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `work` for the SIGTERM/SIGHUP handler ([`end_commands_on_terminate_signals`]): it
/// runs once, after every command has ended and before `exit`, which runs no destructor. For
/// state on disk that must not outlive the process as it is (the course's s13 gives a teammate's
/// task back to `pending`). Must be quick: the signal's sender waits for the exit.
pub fn before_terminate_exit(work: impl FnOnce() + Send + 'static) {
    exit_work().push(Box::new(work));
}

/// Installs the handler for SIGTERM and SIGHUP (a `kill`, a closed terminal): it ends every
/// running command, runs the work registered with [`before_terminate_exit`], then exits with 143
/// (SIGTERM) or 129 (SIGHUP). Needs a Tokio runtime. Ctrl-C (SIGINT) is left to the REPL, which
/// cancels the turn.
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
        let work = std::mem::take(&mut *exit_work());
        for work in work {
            work();
        }
        std::process::exit(code);
    });
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
            "MYSQL_PWD",
            "GH_PAT",
            "NPM_CONFIG__AUTH",
            "npm_config__auth",
            "SMTP_PASS",
            "REDIS_PW",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AWS_CREDS",
            "GPG_PASSPHRASE",
            "SSH_AUTH_SOCK",
            "SSH_AGENT_PID",
            "GPG_AGENT_INFO",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "ANTHROPIC_BASE_URL",
            "MODEL_ID",
            "LANG",
            "TERM",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "PYTHONPATH",
            "MANPATH",
            "XDG_RUNTIME_DIR",
            "PASSENGER_ENV",
            "HTTPS_PROXY",
        ] {
            assert!(!is_secret(name), "{name}");
        }
    }

    #[test]
    fn urls_with_a_password_are_secret_values() {
        for value in [
            "postgres://u:pw@db.example/x",
            "http://user:p%40ss@proxy:3128",
            "-Dproxy=https://a:b@h:1/path",
            "mysql://root:secret@127.0.0.1:3306",
        ] {
            assert!(is_secret_value(value), "{value}");
        }
        for value in [
            "http://proxy:3128",
            "ssh://git@github.com/x/y",
            "https://example.com/a:b@c",
            "user:pass@host",
            "",
            "http://:@h",
        ] {
            assert!(!is_secret_value(value), "{value}");
        }
    }
}
