//! Starting and ending a command on Linux.
//!
//! - **A supervisor per command.** Each command runs under a small process of its own, forked
//!   from the harness: the supervisor. It is a *subreaper* (`PR_SET_CHILD_SUBREAPER`), so every
//!   process the command starts and leaves behind comes back to it as its child when its parent
//!   dies, whatever it did to hide: `setsid`, `setpgid`, a double fork, a fork loop whose parents
//!   exit at once. It reports how many it stopped, and the command's exit status.
//! - **Ended as a whole.** Where the harness may make cgroups (cgroup v2 with `cgroup.kill`,
//!   Linux 5.14; see [`super::cgroup`]), the command runs in a cgroup of its own, and the
//!   supervisor ends it with one write to `cgroup.kill`: the kernel kills every process in it
//!   at once, at any depth and speed of forking. Then, and everywhere else, it walks the tree it
//!   still has: each child, the children each lists (`/proc/PID/task/PID/children`), their
//!   children, and so on, killing each with `SIGKILL` after reading its list, round after round
//!   until none is left or two seconds have passed. Without a cgroup a chain that forks faster
//!   than the walk can still outlast the two seconds.
//! - **Ended whatever happens.** The supervisor ends the command when `sh` exits (then it stops
//!   what `sh` left running), when the harness asks (the timeout, a cancelled turn, a `Session`
//!   dropped), and when the harness dies, even by `SIGKILL`: it holds the read end of a pipe
//!   whose write end only the harness holds, and sees it close. `sh` itself gets `SIGKILL` if the
//!   supervisor dies (`PR_SET_PDEATHSIG`). Under the sandbox a command cannot signal the
//!   supervisor or the harness (Landlock's signal scope, see [`crate::sandbox`]). Where it can
//!   (`--sandbox off`, a kernel before 6.12), the harness, itself a subreaper
//!   ([`protect_harness`]), receives what a killed supervisor leaves and ends it: the cgroup as a
//!   whole, then its own children that are no supervisor (nor a [`super::KeptChild`]), with
//!   their trees, which catches a process that also left the cgroup (root can).
//! - **Only stdin, stdout and stderr.** Every other descriptor the harness holds or inherited
//!   (a socket, a pipe from whatever started it) is closed in `sh` at `exec`.
//! - **The harness's memory stays closed.** [`protect_harness`] makes the harness not dumpable,
//!   so its `/proc` entries (`environ`, `mem`, `fd`) are closed to commands.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use rustix::process::{Pid, PidfdFlags, Signal};
use tokio::process::Child;

use super::cgroup::CommandCgroup;
use super::{END_WITHIN, Report, sessions, shell_command, spawn_registered};
use crate::sandbox::Confinement;

/// A running command as the harness holds it: its supervisor's pidfd and its cgroup, if any.
#[derive(Debug)]
pub(super) struct Supervised {
    pidfd: Option<OwnedFd>,
    cgroup: Option<CommandCgroup>,
}

impl Supervised {
    /// Asks the supervisor to end the command (`SIGTERM`, and `SIGCONT` for one stopped by
    /// `SIGSTOP`, which only a command under `--sandbox off` can send) and kills the command's
    /// cgroup at once. Does not wait.
    fn stop(&self) {
        if let Some(fd) = &self.pidfd {
            let _ = rustix::process::pidfd_send_signal(fd, Signal::TERM);
            let _ = rustix::process::pidfd_send_signal(fd, Signal::CONT);
        }
        if let Some(cgroup) = &self.cgroup {
            // SAFETY: the cgroup's descriptors live as long as `self`.
            unsafe { cgroup.raw().kill_all() };
        }
    }
}

/// What the registry holds for a running command.
pub(super) type Handle = Arc<Supervised>;

/// Asks each supervisor to end its command (and kills each command's cgroup) and waits, `within`
/// at most in all, until each supervisor has exited: a pidfd becomes readable when its process
/// exits.
pub(super) fn end_handles(supervisors: &[Handle], within: Duration) {
    for handle in supervisors {
        handle.stop();
    }
    let deadline = Instant::now() + within;
    for fd in supervisors.iter().filter_map(|h| h.pidfd.as_ref()) {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
        let timeout = rustix::event::Timespec::try_from(left).ok();
        let _ = rustix::event::poll(&mut fds, timeout.as_ref());
    }
}

/// Makes the harness not dumpable (`PR_SET_DUMPABLE` 0): its `/proc/PID/environ`, `mem`, `fd`
/// and `maps` can then be read only with `CAP_SYS_PTRACE`, which the sandbox's commands do not
/// have, even as root. Each supervisor, a fork of the harness, inherits it; `sh` and what it runs
/// are dumpable as usual (`exec` resets it). Side effect: the harness leaves no core dump. Call
/// once at start.
///
/// It also makes the harness a subreaper (`PR_SET_CHILD_SUBREAPER`): what a command leaves when
/// its supervisor is killed (only possible with `--sandbox off` or on a kernel before 6.12) comes
/// back to the harness, not to the system's init, and [`Session::finish`] ends it.
pub fn protect_harness() {
    // SAFETY: both take numbers; no pointer.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Milliseconds of the monotonic clock (a system call only: usable after `fork`).
pub(super) fn now_ms() -> u64 {
    // SAFETY: clock_gettime writes into a valid timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1000 + u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000_000
}

/// A running command: its supervisor (by pidfd) and the pipe on which the supervisor reports.
/// Dropping it asks the supervisor to end the command ([`Session::stop`]).
#[derive(Debug)]
pub struct Session {
    id: Option<u64>,
    supervisor: Arc<Supervised>,
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
        self.supervisor.stop();
    }

    /// Waits for the command to end: for `child`, the supervisor [`spawn_shell`] returned,
    /// which exits once `sh` has exited and everything `sh` left running is killed (which also
    /// closes the pipes those held). Then `sh`'s status and how many processes were stopped,
    /// from the supervisor's report; without one (the supervisor was killed), the supervisor's
    /// own status and the number of processes the harness then stopped itself (what the killed
    /// supervisor left, see [`protect_harness`]).
    ///
    /// # Errors
    /// Waiting for the supervisor failed.
    pub async fn finish(&mut self, child: &mut Child) -> io::Result<Report> {
        let status = child.wait().await?;
        // A supervisor that was killed may have left orphans, whatever its report pipe holds (a
        // command that can kill it, as root with `--sandbox off`, can also write a report of
        // its own into that pipe first).
        let killed = status.signal().is_some();
        Ok(match self.report().filter(|_| !killed) {
            Some(report) => Report { status: report.status.or(Some(status)), stopped: report.stopped },
            None => {
                let supervised = Arc::clone(&self.supervisor);
                let stopped =
                    tokio::task::spawn_blocking(move || end_orphans(&supervised)).await.unwrap_or(0);
                Report { status: Some(status), stopped }
            }
        })
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

/// Ends what a command left when its supervisor died without ending it (it was killed): the
/// command's cgroup as a whole, then every child of the harness that is neither a registered
/// supervisor nor a [`super::KeptChild`], with their trees: orphans of the command, come back to
/// the harness as its subreaper. Both, because a command that could kill its supervisor
/// (`--sandbox off`) can, as root, also move a process out of its cgroup. How many processes
/// were killed. Blocking, for up to [`END_WITHIN`] each.
fn end_orphans(supervised: &Supervised) -> usize {
    let in_cgroup = supervised.cgroup.as_ref().map_or(0, |cgroup| cgroup.kill_and_remove(END_WITHIN));
    in_cgroup + end_harness_orphans()
}

/// The second half of [`end_orphans`]: the harness's own children that are no supervisor and
/// not kept, with their trees.
fn end_harness_orphans() -> usize {
    let me = std::process::id();
    let Ok(list) = std::ffi::CString::new(format!("/proc/{me}/task/{me}/children")) else { return 0 };
    let start = now_ms();
    let mut killed = 0;
    let mut last: Vec<i32> = Vec::new();
    loop {
        for pid in last.drain(..).filter_map(rustix::process::Pid::from_raw) {
            if let Ok(Some((_, status))) =
                rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG)
                && status.terminating_signal() == Some(libc::SIGKILL)
            {
                killed += 1;
            }
        }
        // Under the registry's lock: a supervisor being spawned is registered before it is seen.
        {
            let registry = sessions();
            let own: Vec<i32> = registry
                .live
                .values()
                .filter_map(|h| h.pidfd.as_ref())
                .filter_map(pidfd_pid)
                .chain(registry.kept.keys().filter_map(|pid| i32::try_from(*pid).ok()))
                .collect();
            // SAFETY: only system calls on stack buffers.
            unsafe { supervisor::kill_trees(&list, &own, |pid| last.push(pid)) };
        }
        if last.is_empty() || now_ms().saturating_sub(start) > END_WITHIN.as_millis() as u64 {
            return killed;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid a pidfd names (its `fdinfo`'s `Pid:` line), while that process lives.
fn pidfd_pid(fd: &OwnedFd) -> Option<i32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    info.lines().find_map(|l| l.strip_prefix("Pid:")).and_then(|p| p.trim().parse().ok()).filter(|p| *p > 0)
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
/// `/dev/null`, stdout and stderr piped, the environment of [`command_env`](super::command_env) plus `PWD`, and the
/// `confinement` applied to `sh` alone just before `exec`.
///
/// The returned `Child` is the supervisor: it exits once the command and every process it left
/// are gone, and its pipes reach EOF then. After waiting for it, [`Session::report`] gives `sh`'s
/// exit status and how many processes were stopped.
///
/// The spawn and the registration of the supervisor happen under the registry's lock: once the
/// command runs, [`end_all_sessions`](super::end_all_sessions) knows it.
///
/// # Errors
/// The `io::Error` of the spawn, including one from the child's setup (`setsid`, the
/// supervisor's `fork`, `fchdir`, the confinement); [`io::ErrorKind::Interrupted`] (`the harness
/// is exiting`) once [`end_all_sessions`](super::end_all_sessions) has run.
pub fn spawn_shell(
    command: &str,
    cwd: &Dir,
    pwd: &std::path::Path,
    confinement: Confinement,
) -> io::Result<(Child, Session)> {
    let mut cmd = shell_command("sh", ["-c", command], pwd);
    let (report_read, report_write) = pipe()?;
    rustix::io::ioctl_fionbio(&report_read, true)?;
    let (dir_fd, report_fd, lifeline_fd) = (cwd.as_fd().as_raw_fd(), report_write.as_raw_fd(), lifeline());
    let cgroup = CommandCgroup::new();
    let raw_cgroup = cgroup.as_ref().map(CommandCgroup::raw);
    let mut confinement = confinement;
    // SAFETY: the closure runs in the forked child before `exec` and only makes system calls
    // (setsid, prctl, sigprocmask, fork, write, fchdir, landlock, capset, seccomp, close_range;
    // in the supervisor also close, signalfd, poll, waitpid, kill, open, read, rmdir); it
    // allocates nothing. `dir_fd`, `report_fd`, the lifeline and the cgroup's descriptors and
    // path stay open and alive in the parent for the whole spawn, so the child's copies are valid.
    unsafe {
        cmd.pre_exec(move || {
            supervisor::fork_supervised(lifeline_fd, report_fd, raw_cgroup)?;
            // From here on: the command's own process, about to become `sh`.
            rustix::process::fchdir(BorrowedFd::borrow_raw(dir_fd))?;
            confinement.apply()?;
            supervisor::close_on_exec_from(3);
            Ok(())
        });
    }
    // The child touches no lock before `exec`: the registry's lock is safe to hold across it.
    let ((child, supervisor, command), id) = spawn_registered(|| {
        let child = cmd.spawn()?;
        // Only the supervisor writes reports: without the harness's copy, the pipe reaches EOF
        // when it exits.
        drop(report_write);
        // The supervisor is this process's child and not yet reaped, so its pid names it here.
        let pidfd = child
            .id()
            .and_then(|id| Pid::from_raw(i32::try_from(id).ok()?))
            .and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok());
        let supervisor = Arc::new(Supervised { pidfd, cgroup });
        // The supervisor wrote the command's pid before closing its copy of std's exec-error
        // pipe, which `spawn` waits for: it is there.
        let mut pid = [0u8; 4];
        let command = (read_some(&report_read, &mut pid) == 4).then(|| i32::from_ne_bytes(pid));
        let handle = Some(Arc::clone(&supervisor));
        Ok(((child, supervisor, command), handle))
    })?;
    Ok((child, Session { id: Some(id), supervisor, report: Some(report_read), command }))
}

/// The supervisor: the code that runs in the forked child between std's `fork` and `exec`. It
/// may only make system calls (the harness may have other threads, whose locks a fork copies
/// held), so it uses `libc` directly, buffers on the stack, and no allocation.
mod supervisor {
    use std::ffi::CStr;
    use std::io;
    use std::os::fd::RawFd;

    use super::super::cgroup::Raw;
    use super::{END_WITHIN, now_ms};

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
    pub(super) fn fork_supervised(
        lifeline: Option<RawFd>,
        report: RawFd,
        cgroup: Option<Raw>,
    ) -> io::Result<()> {
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
                    // The command's process: in the command's cgroup before anything else runs
                    // (where that fails, the supervisor's walk still finds what it starts), the
                    // signal mask as it was (exec keeps it), death with its supervisor, and a
                    // session of its own.
                    if let Some(cgroup) = cgroup {
                        let _ = cgroup.enter();
                    }
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
                command => supervise(command, lifeline, report, cgroup, &set),
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
        let mut sorted = [-1; 4];
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
        cgroup: Option<Raw>,
        set: &libc::sigset_t,
    ) -> ! {
        // SAFETY: plain system calls on this function's values and stack buffers.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, c"sh-supervisor".as_ptr(), 0, 0, 0);
            write_all(report, &command.to_ne_bytes());
            let lifeline = lifeline.unwrap_or(-1);
            let [kill, events] = cgroup.map_or([-1, -1], |c| c.fds());
            close_all_but(&[lifeline, report, kill, events]);
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
            let stopped = end_all(command, &mut status, signals, cgroup);
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

    /// `/proc/PID/task/PID/children` for `pid`, as a C string in `buf`.
    fn children_path(pid: libc::pid_t, buf: &mut [u8; 64]) -> &CStr {
        let mut digits = [0u8; 12];
        let mut n = pid.unsigned_abs();
        let mut len = 0;
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let mut at = 0;
        let mut put = |bytes: &[u8], buf: &mut [u8; 64]| {
            buf[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        let mut number = [0u8; 12];
        for (slot, d) in number.iter_mut().zip(digits[..len].iter().rev()) {
            *slot = *d;
        }
        put(b"/proc/", buf);
        put(&number[..len], buf);
        put(b"/task/", buf);
        put(&number[..len], buf);
        put(b"/children\0", buf);
        CStr::from_bytes_until_nul(&buf[..at]).unwrap_or(c"/proc/self/task/0/children")
    }

    /// Calls `each` with every pid listed in the file `list` (numbers separated by spaces, as
    /// the kernel's `children` files are); whether the file could be opened.
    unsafe fn read_pids(list: &CStr, mut each: impl FnMut(libc::pid_t)) -> bool {
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(list.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return false;
        }
        let mut pid: libc::pid_t = 0;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: the buffer is valid for its length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            // A number may continue across two reads.
            for &b in &buf[..n] {
                if b.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add(libc::pid_t::from(b - b'0'));
                } else if pid > 0 {
                    each(pid);
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            each(pid);
        }
        // SAFETY: the descriptor opened above.
        unsafe { libc::close(fd) };
        true
    }

    /// Kills, with `SIGKILL`, every process listed in `list` but those in `skip`, and every
    /// descendant of theirs that the `children` files list: each process's list is read before it
    /// is killed, depth first, with a stack of 4,096 pids (deeper ones are left for the next
    /// round, where they have come back to the subreaper as its children). `top` is called with
    /// each pid of `list` killed. How many processes were killed; `None` when `list` cannot be
    /// read (no `/proc`, or a kernel without `CONFIG_PROC_CHILDREN`).
    ///
    /// # Safety
    /// Only system calls and stack buffers: usable after `fork`.
    pub(super) unsafe fn kill_trees(
        list: &CStr,
        skip: &[libc::pid_t],
        mut top: impl FnMut(libc::pid_t),
    ) -> Option<usize> {
        const DEPTH: usize = 4096;
        let mut stack = [0 as libc::pid_t; DEPTH];
        let mut len = 0;
        // SAFETY: reads a file into stack buffers.
        let listed = unsafe {
            read_pids(list, |pid| {
                if !skip.contains(&pid) && len < DEPTH {
                    stack[len] = pid;
                    len += 1;
                    top(pid);
                }
            })
        };
        if !listed {
            return None;
        }
        let mut killed = 0;
        let mut path = [0u8; 64];
        while len > 0 {
            len -= 1;
            let pid = stack[len];
            // SAFETY: reads a file into stack buffers.
            unsafe {
                read_pids(children_path(pid, &mut path), |child| {
                    if len < DEPTH {
                        stack[len] = child;
                        len += 1;
                    }
                })
            };
            // SAFETY: kill takes numbers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed += 1;
        }
        Some(killed)
    }

    /// Marks every descriptor from `first` on close-on-exec (`close_range` with
    /// `CLOSE_RANGE_CLOEXEC`, Linux 5.11; or else one `fcntl` per number up to the descriptor
    /// limit), so that `sh` starts with only stdin, stdout and stderr while std's exec-error pipe
    /// still works until `exec`.
    pub(super) fn close_on_exec_from(first: libc::c_uint) {
        // SAFETY: close_range takes numbers and flags; no pointer.
        let done = unsafe {
            libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC)
        } == 0;
        if done {
            return;
        }
        // SAFETY: getrlimit writes into a valid struct.
        let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            limit.rlim_cur.min(65_536) as libc::c_int
        } else {
            1024
        };
        for fd in first as libc::c_int..max {
            // SAFETY: fcntl on a number that may not be open fails harmlessly.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }

    /// Ends everything: the command's cgroup at once where it has one, `sh`'s process group at
    /// once if `sh` still runs, then rounds of "kill every child and its tree, wait for their
    /// orphans to come back", until no child is left or [`END_WITHIN`] has passed; then the
    /// cgroup is removed. Returns how many processes other than `sh` died of SIGKILL.
    unsafe fn end_all(
        command: libc::pid_t,
        status: &mut Option<libc::c_int>,
        signals: RawFd,
        cgroup: Option<Raw>,
    ) -> usize {
        let mut killed = 0;
        let start = now_ms();
        let budget = END_WITHIN.as_millis() as u64;
        // SAFETY: plain system calls on this function's values.
        unsafe {
            if let Some(cgroup) = cgroup {
                cgroup.kill_all();
            }
            if status.is_none() {
                libc::kill(-command, libc::SIGKILL);
            }
            loop {
                reap(command, status, &mut killed);
                match kill_trees(c"/proc/thread-self/children", &[], |_| {}) {
                    // Without the list, only `sh`'s group (and the cgroup) was reached.
                    Some(0) | None => break,
                    Some(_) => {}
                }
                if now_ms().saturating_sub(start) > budget {
                    break;
                }
                // The killed children's deaths: their orphans are ours by then.
                let mut fds = [libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 }];
                libc::poll(fds.as_mut_ptr(), 1, 10);
                drain(signals);
            }
            reap(command, status, &mut killed);
            if let Some(cgroup) = cgroup {
                cgroup.remove_within(budget.saturating_sub(now_ms().saturating_sub(start)));
            }
        }
        killed
    }
}
