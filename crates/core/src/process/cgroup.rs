//! A cgroup (v2) per command, killed as a whole when the call ends: the kernel's own way to end
//! every process of a group at once, whatever their depth, their speed of forking, their session
//! or process group (`cgroup.kill`, Linux 5.14).
//!
//! Used where the harness may make one: a cgroup v2 hierarchy is mounted, the harness's own cgroup
//! in it is writable (as root; as a user in a cgroup that systemd delegates to them, such as the
//! `app-*.scope` of a desktop terminal), and its children have `cgroup.kill`. Each command then
//! gets a child cgroup of the harness's, `agent-PID-N`, which its process enters before `exec`
//! (it writes itself into `cgroup.procs`), so everything it starts is born inside. The
//! supervisor writes `1` to `cgroup.kill` when the call ends, then removes the folder; the
//! harness does the same if the supervisor did not (it was killed).
//!
//! Where none can be made, `CommandCgroup::new` gives `None` and the supervisor's walk of the
//! process tree is all there is (see [`super::linux`]).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The harness's own cgroup v2 folder, where commands' cgroups are made, if one is usable: found
/// once, from `/proc/self/cgroup` (the `0::` line) and `/proc/self/mountinfo` (the `cgroup2`
/// mount), and tried by making and removing one child that must have `cgroup.kill`.
fn base() -> Option<&'static Path> {
    static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
    BASE.get_or_init(find_base).as_deref()
}

fn find_base() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let relative = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS… - TYPE SOURCE SUPER`
    let mount = mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split(' ').next()? == "cgroup2").then_some(())?;
        let mut fields = left.split(' ');
        let root = fields.nth(3)?;
        let point = fields.next()?;
        // Only a mount of the hierarchy's root maps `relative` plainly (not one inside a container's
        // own namespace view, whose root is elsewhere).
        (root == "/").then(|| PathBuf::from(unescape(point)))
    })?;
    let base = mount.join(relative.trim_start_matches('/'));
    let probe = base.join(format!("agent-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).ok()?;
    let usable = probe.join("cgroup.kill").exists()
        && rustix::fs::access(base.join("cgroup.procs"), rustix::fs::Access::WRITE_OK).is_ok();
    let _ = std::fs::remove_dir(&probe);
    usable.then_some(base)
}

/// A mount point as `mountinfo` writes it: space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> std::ffi::OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8).wrapping_add(b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    std::ffi::OsString::from_vec(out)
}

/// Whether commands get a cgroup of their own here (see the module docs), asked once.
pub fn available() -> bool {
    base().is_some()
}

/// One command's cgroup: its folder and the open files the command, the supervisor and the
/// harness write to. Made in the harness before the spawn; the forked processes only use the
/// descriptors and the prepared path (no allocation after `fork`).
#[derive(Debug)]
pub(super) struct CommandCgroup {
    path: CString,
    procs: OwnedFd,
    kill: OwnedFd,
    events: OwnedFd,
}

impl CommandCgroup {
    /// A new, empty cgroup for one command, or `None` where none can be made (no usable
    /// hierarchy, or this one failed).
    pub(super) fn new() -> Option<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = base()?;
        let dir = base.join(format!("agent-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir(&dir).ok()?;
        let open = |name: &str, flags: rustix::fs::OFlags| {
            rustix::fs::open(dir.join(name), flags | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
        };
        let files = (|| {
            Ok::<_, rustix::io::Errno>((
                open("cgroup.procs", rustix::fs::OFlags::WRONLY)?,
                open("cgroup.kill", rustix::fs::OFlags::WRONLY)?,
                open("cgroup.events", rustix::fs::OFlags::RDONLY)?,
            ))
        })();
        let path = CString::new(dir.as_os_str().as_bytes()).ok();
        match (files, path) {
            (Ok((procs, kill, events)), Some(path)) => Some(Self { path, procs, kill, events }),
            _ => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// The raw descriptors and path the forked processes use: (`cgroup.procs`, `cgroup.kill`,
    /// `cgroup.events`, the folder's path as a C string). Valid while `self` lives.
    pub(super) fn raw(&self) -> Raw {
        Raw {
            procs: self.procs.as_raw_fd(),
            kill: self.kill.as_raw_fd(),
            events: self.events.as_raw_fd(),
            path: self.path.as_ptr(),
        }
    }

    /// The pids in the cgroup now (read in the harness; empty when it cannot be read).
    fn members(&self) -> Vec<i32> {
        let path = Path::new(std::ffi::OsStr::from_bytes(self.path.as_bytes())).join("cgroup.procs");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Kills everything in the cgroup and removes it, from the harness, for a command whose
    /// supervisor did not (it was killed): `cgroup.kill`, then up to `within` for the cgroup to
    /// empty, then `rmdir`. The killed processes that had become the harness's children (it is a
    /// subreaper, see [`super::linux::protect_harness`]) are reaped by their pids, which are never
    /// those of a child the harness started itself (those live outside every command's cgroup).
    /// How many processes the cgroup held when it was killed.
    pub(super) fn kill_and_remove(&self, within: std::time::Duration) -> usize {
        let members = self.members();
        let raw = self.raw();
        // SAFETY: the descriptors and the path belong to `self`, which lives through the call.
        unsafe {
            raw.kill_all();
            raw.remove_within(u64::try_from(within.as_millis()).unwrap_or(u64::MAX));
        }
        let me = rustix::process::getpid();
        let count = members.len();
        for pid in members {
            let Some(pid) = rustix::process::Pid::from_raw(pid) else { continue };
            let ours = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')').and_then(|(_, rest)| rest.split(' ').nth(2)?.parse::<i32>().ok())
                })
                .is_some_and(|ppid| ppid == me.as_raw_nonzero().get());
            if ours {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
        count
    }
}

impl Drop for CommandCgroup {
    /// Removes the folder if it is empty (a spawn that failed, a command already ended); a
    /// supervisor still ending its command removes it itself.
    fn drop(&mut self) {
        // SAFETY: a valid C string.
        unsafe { libc::rmdir(self.path.as_ptr()) };
    }
}

/// [`CommandCgroup::raw`]: what a forked process may use without allocating.
#[derive(Clone, Copy, Debug)]
pub(super) struct Raw {
    procs: RawFd,
    kill: RawFd,
    events: RawFd,
    path: *const libc::c_char,
}

// SAFETY: plain numbers and a pointer to a C string that the harness keeps alive (in its
// `CommandCgroup`) for as long as a `Raw` is used; the forked processes have their own copy of it.
unsafe impl Send for Raw {}
// SAFETY: as above; nothing is written through the pointer.
unsafe impl Sync for Raw {}

impl Raw {
    /// The descriptors a supervisor keeps open.
    pub(super) fn fds(&self) -> [RawFd; 2] {
        [self.kill, self.events]
    }

    /// Moves the calling process into the cgroup (`0` into `cgroup.procs` names the writer).
    ///
    /// # Safety
    /// The descriptors must be open; only system calls are made.
    pub(super) unsafe fn enter(&self) -> io::Result<()> {
        // SAFETY: a valid buffer of one byte.
        if unsafe { libc::write(self.procs, b"0".as_ptr().cast(), 1) } == 1 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Kills every process in the cgroup at once (`1` into `cgroup.kill`).
    ///
    /// # Safety
    /// As [`Raw::enter`].
    pub(super) unsafe fn kill_all(&self) {
        // SAFETY: a valid buffer of one byte.
        unsafe { libc::write(self.kill, b"1".as_ptr().cast(), 1) };
    }

    /// Waits up to `within_ms` for the cgroup to empty (`cgroup.events` says `populated 0`, and
    /// wakes a `poll` for `POLLPRI` when it changes), then removes its folder; whether it did.
    ///
    /// # Safety
    /// As [`Raw::enter`]; the path must be valid. Only system calls, stack buffers.
    pub(super) unsafe fn remove_within(&self, within_ms: u64) -> bool {
        let start = super::linux::now_ms();
        loop {
            // SAFETY: the path is a valid C string (the caller's promise).
            if unsafe { libc::rmdir(self.path) } == 0 {
                return true;
            }
            let waited = super::linux::now_ms().saturating_sub(start);
            if waited >= within_ms || io::Error::last_os_error().raw_os_error() != Some(libc::EBUSY) {
                return false;
            }
            // Wake at the next change of `cgroup.events`, or after 10 ms at most.
            let mut buf = [0u8; 128];
            // SAFETY: a valid buffer; reading from offset 0 re-arms the notification.
            unsafe { libc::pread(self.events, buf.as_mut_ptr().cast(), buf.len(), 0) };
            let mut fds = [libc::pollfd { fd: self.events, events: libc::POLLPRI, revents: 0 }];
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(fds.as_mut_ptr(), 1, 10) };
        }
    }
}
