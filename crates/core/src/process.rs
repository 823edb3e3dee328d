//! How a `bash` command is started and ended, so that nothing outlives its call: a command the
//! model runs must not leave a process behind that goes on acting after the turn.
//!
//! - **A supervisor per command.** Each command runs under a small process of its own, forked
//!   from the harness: the supervisor. It is a *subreaper* (`PR_SET_CHILD_SUBREAPER`), so every
//!   process the command starts and leaves behind comes back to it as its child when its parent
//!   dies, whatever it did to hide: `setsid`, `setpgid`, a double fork, a fork loop whose parents
//!   exit at once. When the call ends, the supervisor kills its children with `SIGKILL`, waits
//!   for their orphans to come back, and kills those, until none is left; a killed process cannot
//!   fork again, so this ends. It reports how many it stopped, and the command's exit status.
//!   No `/proc` scan of the machine is needed: the supervisor reads only its own list of
//!   children (`/proc/thread-self/children`).
//! - **A session of its own.** The command (`sh -c COMMAND`) leads a new session (`setsid`), so
//!   it has no controlling terminal: it can neither read the user's keys nor inject keystrokes
//!   with `TIOCSTI` into the terminal (which would answer a prompt such as `Allow? [y/N]`). Its
//!   stdin is `/dev/null`.
//! - **Ended whatever happens.** The supervisor ends the command when `sh` exits (then it stops
//!   what `sh` left running), when the harness asks (the timeout, a cancelled turn, a `Session`
//!   dropped), and when the harness dies, even by `SIGKILL`: it holds the read end of a pipe
//!   whose write end only the harness holds, and sees it close. `sh` itself gets `SIGKILL` if the
//!   supervisor dies (`PR_SET_PDEATHSIG`). Under the sandbox a command cannot signal the
//!   supervisor or the harness (Landlock's signal scope, see [`crate::sandbox`]).
//! - **The harness's own secrets stay home.** A command gets the user's environment without the
//!   variables [`is_secret`] names (keys, tokens, passwords, credentials, PATs, the ssh agent's
//!   socket) and without those whose value holds a URL with a password ([`is_secret_value`]).
//!   [`protect_harness`] makes the harness not dumpable, so its `/proc` entries (`environ`,
//!   `mem`, `fd`) are closed to commands.
//! - **SIGTERM and SIGHUP** to the harness (a `kill`, a closed terminal) first end every running
//!   command, then exit with 128 + the signal number, see [`end_commands_on_terminate_signals`].
//!   A command is started and registered under one lock, which [`end_all_sessions`] also takes
//!   and then closes, so no command escapes the ending by being half started (forked and
//!   running, not yet registered) or started just after it, on any runtime flavour.
//!
//! What escapes: a process started for the command by a server outside it (tmux, `at`, a D-Bus
//! service), which is why the sandbox refuses unix sockets; and, with `--sandbox off`, a command
//! that kills its own supervisor first. See the s02 README's threat model.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use rustix::process::{Pid, PidfdFlags, Signal};
use tokio::process::{Child, Command};

use crate::sandbox::Confinement;

/// The supervisors of commands still running (by a number of their own, with a pidfd each),
/// and whether [`end_all_sessions`] has closed the registry to new commands.
struct Registry {
    live: BTreeMap<u64, Arc<OwnedFd>>,
    next: u64,
    closed: bool,
}

/// Every running command's supervisor, for [`end_all_sessions`]. [`spawn_shell`] holds the lock
/// from before the fork until the new supervisor is in `live`.
static SESSIONS: Mutex<Registry> = Mutex::new(Registry { live: BTreeMap::new(), next: 0, closed: false });

fn sessions() -> std::sync::MutexGuard<'static, Registry> {
    SESSIONS.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long a supervisor keeps killing before it gives up on processes that will not die (a
/// process stuck in the kernel, state `D`, dies only when the kernel lets it), and exits.
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

/// Makes the harness not dumpable (`PR_SET_DUMPABLE` 0): its `/proc/PID/environ`, `mem`, `fd`
/// and `maps` can then be read only with `CAP_SYS_PTRACE`, which the sandbox's commands do not
/// have, even as root. Each supervisor, a fork of the harness, inherits it; `sh` and what it runs
/// are dumpable as usual (`exec` resets it). Side effect: the harness leaves no core dump. Call
/// once at start.
pub fn protect_harness() {
    // SAFETY: PR_SET_DUMPABLE takes a number; no pointer.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// What a command's supervisor reports when it has ended the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    /// How `sh` ended, when the supervisor reaped it.
    pub status: Option<ExitStatus>,
    /// How many other processes it killed: after `sh` exited on its own, those `sh` left running
    /// in the background.
    pub stopped: usize,
}

/// A running command: its supervisor (by pidfd) and the pipe on which the supervisor reports.
/// Dropping it asks the supervisor to end the command ([`Session::stop`]).
#[derive(Debug)]
pub struct Session {
    id: Option<u64>,
    supervisor: Option<Arc<OwnedFd>>,
    report: Option<OwnedFd>,
    command: Option<i32>,
}

impl Session {
    /// The pid of the command's `sh`, which leads the command's session and process group.
    pub fn command_pid(&self) -> Option<i32> {
        self.command
    }

    /// Asks the supervisor to end the command now (`SIGTERM` to it, through its pidfd): it kills
    /// every process of the command and exits within about two seconds. Does not wait. Harmless
    /// once the supervisor has exited.
    pub fn stop(&self) {
        if let Some(fd) = &self.supervisor {
            let _ = rustix::process::pidfd_send_signal(fd, Signal::TERM);
            // A supervisor stopped by SIGSTOP (only a command under `--sandbox off` can send it
            // one) would never see the SIGTERM.
            let _ = rustix::process::pidfd_send_signal(fd, Signal::CONT);
        }
    }

    /// The supervisor's [`Report`], to be read once the supervisor has exited (the `Child` of
    /// [`spawn_shell`] was waited for). `None` when it wrote none (it was killed, or is still
    /// running) or it was already read.
    pub fn report(&mut self) -> Option<Report> {
        let fd = self.report.take()?;
        let mut buf = [0u8; 12];
        let n = read_some(&fd, &mut buf);
        if n < buf.len() {
            return None;
        }
        let word = |i: usize| i32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
        let status = (word(0) != 0).then(|| ExitStatus::from_raw(word(4)));
        Some(Report { status, stopped: usize::try_from(word(8)).unwrap_or(0) })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop();
        if let Some(id) = self.id {
            sessions().live.remove(&id);
        }
    }
}

/// Reads what `fd` holds now (it is non-blocking) into `buf`, up to its length; the count read.
fn read_some(fd: &OwnedFd, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match rustix::io::read(fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
    }
    n
}

/// The harness's end of the lifeline: a pipe whose write end only the harness holds (close on
/// exec, closed by every supervisor), made once. Each supervisor polls the read end and sees it
/// close when the harness dies, however it dies. `None` if the pipe cannot be made; the
/// supervisors then end their command only when asked or when `sh` exits.
fn lifeline() -> Option<RawFd> {
    static LIFELINE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    LIFELINE.get_or_init(|| pipe().ok()).as_ref().map(|(read, _write)| read.as_raw_fd())
}

/// A pipe, both ends close-on-exec: (read, write).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Starts `sh -c command` for the `bash` tool, under a supervisor of its own (see the module
/// docs): in the folder `cwd` (by its handle, `fchdir`), in a new session, with stdin from
/// `/dev/null`, stdout and stderr piped, the environment of [`command_env`] plus `PWD`, and the
/// `confinement` applied to `sh` alone just before `exec`.
///
/// The returned `Child` is the supervisor: it exits once the command and every process it left
/// are gone, and its pipes reach EOF then. After waiting for it, [`Session::report`] gives `sh`'s
/// exit status and how many processes were stopped.
///
/// The spawn and the registration of the supervisor happen under the registry's lock: once the
/// command runs, [`end_all_sessions`] knows it.
///
/// # Errors
/// The `io::Error` of the spawn, including one from the child's setup (`setsid`, the
/// supervisor's `fork`, `fchdir`, the confinement); [`io::ErrorKind::Interrupted`] (`the harness
/// is exiting`) once [`end_all_sessions`] has run.
pub fn spawn_shell(
    command: &str,
    cwd: &Dir,
    pwd: &std::path::Path,
    confinement: Confinement,
) -> io::Result<(Child, Session)> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .env_clear()
        .envs(command_env())
        .env("PWD", pwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (report_read, report_write) = pipe()?;
    rustix::io::ioctl_fionbio(&report_read, true)?;
    let (dir_fd, report_fd, lifeline_fd) = (cwd.as_fd().as_raw_fd(), report_write.as_raw_fd(), lifeline());
    let mut confinement = confinement;
    // SAFETY: the closure runs in the forked child before `exec` and only makes system calls
    // (setsid, prctl, sigprocmask, fork, fchdir, landlock, capset, seccomp; in the supervisor
    // also write, close, signalfd, poll, waitpid, kill, open, read); it allocates nothing.
    // `dir_fd`, `report_fd` and the lifeline stay open in the parent for the whole spawn, so the
    // child's copies are valid.
    unsafe {
        cmd.pre_exec(move || {
            supervisor::fork_supervised(lifeline_fd, report_fd)?;
            // From here on: the command's own process, about to become `sh`.
            rustix::process::fchdir(BorrowedFd::borrow_raw(dir_fd))?;
            confinement.apply()
        });
    }
    // Held across the fork and exec: a SIGTERM handler on another thread must not take its list
    // of supervisors while this command already runs but is not in it yet. The child touches no
    // lock before `exec`.
    let mut registry = sessions();
    if registry.closed {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "the harness is exiting"));
    }
    let child = cmd.spawn()?;
    // Only the supervisor writes reports: without the harness's copy, the pipe reaches EOF when
    // it exits.
    drop(report_write);
    // The supervisor is this process's child and not yet reaped, so its pid names it here.
    let supervisor = child
        .id()
        .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?))
        .and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok())
        .map(Arc::new);
    // The supervisor wrote the command's pid before closing its copy of std's exec-error pipe,
    // which `spawn` waits for: it is there.
    let mut pid = [0u8; 4];
    let command = (read_some(&report_read, &mut pid) == 4).then(|| i32::from_ne_bytes(pid));
    let id = registry.next;
    registry.next += 1;
    if let Some(fd) = &supervisor {
        registry.live.insert(id, Arc::clone(fd));
    }
    Ok((child, Session { id: Some(id), supervisor, report: Some(report_read), command }))
}

/// Ends every running command, for the SIGTERM/SIGHUP handler: asks each supervisor to end its
/// command and waits until they have exited (about two seconds at most). Closes the registry
/// first: from then on [`spawn_shell`] refuses to start a command, so none starts between this
/// call and the harness's exit. A spawn in progress on another thread finishes and registers
/// first.
pub fn end_all_sessions() {
    let supervisors: Vec<Arc<OwnedFd>> = {
        let mut registry = sessions();
        registry.closed = true;
        registry.live.values().cloned().collect()
    };
    for fd in &supervisors {
        let _ = rustix::process::pidfd_send_signal(&**fd, Signal::TERM);
    }
    let deadline = Instant::now() + END_WITHIN + Duration::from_secs(1);
    for fd in &supervisors {
        // A pidfd becomes readable when its process exits.
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [rustix::event::PollFd::new(&**fd, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(left).ok();
        let _ = rustix::event::poll(&mut fds, timeout.as_ref());
    }
}

/// Installs the handler for SIGTERM and SIGHUP (a `kill`, a closed terminal): it ends every
/// running command, then exits with 143 (SIGTERM) or 129 (SIGHUP). Needs a Tokio runtime.
/// Ctrl-C (SIGINT) is left to the REPL, which cancels the turn.
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

/// The supervisor: the code that runs in the forked child between std's `fork` and `exec`. It
/// may only make system calls (the harness may have other threads, whose locks a fork copies
/// held), so it uses `libc` directly, buffers on the stack, and no allocation.
mod supervisor {
    use std::io;
    use std::os::fd::RawFd;

    use super::END_WITHIN;

    /// The signals the supervisor takes through its signalfd: a child's exit, and the requests
    /// to end (`SIGTERM` from the harness; `SIGHUP`, `SIGINT`, `SIGQUIT` from anyone).
    const HANDLED: [libc::c_int; 5] =
        [libc::SIGCHLD, libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

    /// In the child of std's fork: becomes the supervisor (a subreaper in a session of its own),
    /// forks the command's process, and returns `Ok` only in that process. The supervisor never
    /// returns: it supervises, then `_exit`s.
    ///
    /// # Errors
    /// `setsid`, `prctl` or `fork` failed (in the supervisor, before the fork), or the command's
    /// `setsid` failed.
    pub(super) fn fork_supervised(lifeline: Option<RawFd>, report: RawFd) -> io::Result<()> {
        // SAFETY: each call below is a plain system call on values of this function; the
        // signal sets are plain data initialised by sigemptyset.
        unsafe {
            // Its own session: no terminal, and no SIGINT from the user's Ctrl-C.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in HANDLED {
                libc::sigaddset(&mut set, sig);
            }
            // Blocked before the fork, so that no SIGCHLD is lost before the signalfd exists.
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            let supervisor = libc::getpid();
            match libc::fork() {
                -1 => Err(io::Error::last_os_error()),
                0 => {
                    // The command's process: the signal mask as it was (exec keeps it), death
                    // with its supervisor, and a session of its own.
                    libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                    if libc::getppid() != supervisor {
                        libc::_exit(1);
                    }
                    if libc::setsid() < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                }
                command => supervise(command, lifeline, report, &set),
            }
        }
    }

    /// Writes all of `bytes` to `fd`, as far as it goes.
    unsafe fn write_all(fd: RawFd, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            // SAFETY: the pointer and length are those of the slice's rest.
            let n = unsafe { libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done) };
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n <= 0 {
                return;
            }
            done += n.unsigned_abs();
        }
    }

    /// Closes every descriptor but `keep` (std's exec-error pipe among them: `spawn` returns in
    /// the harness only once every copy of it is closed). `close_range` (Linux 5.9), or else one
    /// `close` per number up to the descriptor limit.
    unsafe fn close_all_but(keep: &[RawFd]) {
        let mut sorted = [-1; 2];
        for (slot, fd) in sorted.iter_mut().zip(keep) {
            *slot = *fd;
        }
        sorted.sort_unstable();
        let mut from: libc::c_uint = 0;
        for fd in sorted.into_iter().filter(|fd| *fd >= 0) {
            let fd = fd.unsigned_abs();
            if fd > from {
                // SAFETY: close_range takes numbers; no pointer.
                unsafe { close_range(from, fd - 1) };
            }
            from = fd + 1;
        }
        // SAFETY: as above.
        unsafe { close_range(from, libc::c_uint::MAX) };
    }

    /// `close_range(first, last)`, or a `close` loop where the kernel lacks it.
    unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) {
        // SAFETY: close_range takes numbers and flags; no pointer.
        if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) } == 0 {
            return;
        }
        // SAFETY: getrlimit writes into a valid struct.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            limit.rlim_cur.min(65_536) as libc::c_uint
        } else {
            1024
        };
        for fd in first..=last.min(max) {
            // SAFETY: closing a number that may not be open is harmless.
            unsafe { libc::close(fd as libc::c_int) };
        }
    }

    /// The supervisor's life: report the command's pid, close every other descriptor, wait until
    /// `sh` exits or an end is asked for (a signal, or the lifeline closing), end everything,
    /// report, exit.
    ///
    /// The report is 4 bytes (the command's pid), then 12: whether `sh`'s status is known, the
    /// raw wait status, and how many other processes were killed; native-endian `i32`s.
    unsafe fn supervise(
        command: libc::pid_t,
        lifeline: Option<RawFd>,
        report: RawFd,
        set: &libc::sigset_t,
    ) -> ! {
        // SAFETY: plain system calls on this function's values and stack buffers.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c"sh-supervisor".as_ptr(), 0, 0, 0);
            write_all(report, &command.to_ne_bytes());
            let lifeline = lifeline.unwrap_or(-1);
            close_all_but(&[lifeline, report]);
            let signals = libc::signalfd(-1, set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            let mut status: Option<libc::c_int> = None;
            let mut stop = false;
            loop {
                reap(command, &mut status, &mut 0);
                if status.is_some() || stop {
                    break;
                }
                let mut fds = [
                    libc::pollfd { fd: lifeline, events: libc::POLLIN, revents: 0 },
                    libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 },
                ];
                // Without a signalfd, look every 50 ms.
                let timeout = if signals < 0 { 50 } else { -1 };
                if libc::poll(fds.as_mut_ptr(), 2, timeout) < 0 {
                    continue;
                }
                // The harness is gone: the write end closed (POLLHUP), or anything else on it.
                stop |= fds[0].revents != 0;
                stop |= drain(signals);
            }
            let stopped = end_all(command, &mut status, signals);
            let mut out = [0u8; 12];
            out[..4].copy_from_slice(&i32::from(status.is_some()).to_ne_bytes());
            out[4..8].copy_from_slice(&status.unwrap_or(0).to_ne_bytes());
            out[8..].copy_from_slice(&i32::try_from(stopped).unwrap_or(i32::MAX).to_ne_bytes());
            write_all(report, &out);
            libc::_exit(0)
        }
    }

    /// Reads every pending signal from the signalfd; whether one of them asks to end.
    unsafe fn drain(signals: RawFd) -> bool {
        if signals < 0 {
            return false;
        }
        let mut end = false;
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        let mut buf = [0u8; 1024];
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::read(signals, buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else { return end };
            if n < size {
                return end;
            }
            for record in buf[..n].chunks_exact(size) {
                // `ssi_signo` is the record's first field, a u32.
                let signo = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
                end |= signo != libc::SIGCHLD as u32;
            }
        }
    }

    /// Reaps every child that has exited: `sh`'s status goes to `status`; each other child that
    /// died of SIGKILL counts in `killed`.
    unsafe fn reap(command: libc::pid_t, status: &mut Option<libc::c_int>, killed: &mut usize) {
        loop {
            let mut st: libc::c_int = 0;
            // SAFETY: waitpid writes the status into a valid int.
            let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
            if pid == command {
                *status = Some(st);
            } else if libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL {
                *killed += 1;
            }
        }
    }

    /// Kills every child listed in `/proc/thread-self/children` (the supervisor is one thread,
    /// so that is all of its children); how many were listed, or `None` when the list cannot be
    /// read (no `/proc`, or a kernel without `CONFIG_PROC_CHILDREN`).
    unsafe fn kill_children() -> Option<usize> {
        // SAFETY: a constant C string.
        let fd =
            unsafe { libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        let mut listed = 0;
        let mut pid: libc::pid_t = 0;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            // Numbers separated by spaces; one may continue across two reads.
            for &b in &buf[..n] {
                if b.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add(libc::pid_t::from(b - b'0'));
                } else if pid > 0 {
                    // SAFETY: kill takes numbers.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    listed += 1;
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            // SAFETY: as above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            listed += 1;
        }
        // SAFETY: the descriptor opened above.
        unsafe { libc::close(fd) };
        Some(listed)
    }

    /// Ends everything: `sh`'s process group at once if `sh` still runs, then rounds of "kill
    /// every child, wait for their orphans to come back", until no child is left or
    /// [`END_WITHIN`] has passed. Returns how many processes other than `sh` died of SIGKILL.
    unsafe fn end_all(command: libc::pid_t, status: &mut Option<libc::c_int>, signals: RawFd) -> usize {
        let mut killed = 0;
        // SAFETY: plain system calls on this function's values.
        unsafe {
            if status.is_none() {
                libc::kill(-command, libc::SIGKILL);
            }
            let start = now();
            loop {
                reap(command, status, &mut killed);
                match kill_children() {
                    Some(0) => break,
                    Some(_) => {}
                    None => {
                        // Without the list, only `sh`'s group was reached.
                        break;
                    }
                }
                if now().saturating_sub(start) > END_WITHIN.as_millis() as u64 {
                    break;
                }
                // The killed children's deaths: their orphans are ours by then.
                let mut fds = [libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 }];
                libc::poll(fds.as_mut_ptr(), 1, 10);
                drain(signals);
            }
            reap(command, status, &mut killed);
        }
        killed
    }

    /// Milliseconds of the monotonic clock.
    fn now() -> u64 {
        // SAFETY: clock_gettime writes into a valid timespec.
        let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        u64::try_from(ts.tv_sec).unwrap_or(0) * 1000 + u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000_000
    }
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
