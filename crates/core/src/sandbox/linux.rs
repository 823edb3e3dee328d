//! The sandbox on Linux: Landlock (through the `landlock` crate, kept by the Landlock
//! maintainers), a seccomp filter (through `seccompiler`, rust-vmm's, as the Codex CLI uses it)
//! and, when the harness runs as root, no capabilities.
//!
//! | mode | a command may write |
//! |---|---|
//! | `workspace-write` (default) | the workspace (`.git` included), the temp folders (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`) and the usual character devices (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty`) |
//! | `read-only` | only those character devices |
//!
//! In both sandboxed modes a command also:
//! - **signals only its own processes**, and connects only to **abstract unix sockets** its own
//!   processes made (Landlock's scopes, ABI 6, Linux 6.12): no `kill` of the harness or of any
//!   other process of the user;
//! - **creates no unix socket** (seccomp refuses `socket(AF_UNIX, …)` with `EPERM`; `socketpair`
//!   still works), so it cannot reach a server that runs commands or holds keys for its clients:
//!   tmux, screen, a D-Bus bus, `docker.sock`, the ssh agent. `--allow-unix-sockets` lifts this
//!   (abstract sockets stay scoped). `io_uring_setup` is refused too, since a ring would create
//!   sockets without the `socket` system call;
//! - **makes no device node** (Landlock grants no `MakeChar`/`MakeBlock` anywhere);
//! - **has no capability** when the harness runs as root: the bounding, ambient, permitted,
//!   effective and inheritable sets are emptied before `exec`, so root's commands cannot
//!   `mknod`, set the host name or addresses, read other processes' memory or `/proc` entries,
//!   or push keystrokes into a terminal (`TIOCSTI`).
//!
//! The workspace is granted by its open handle, so a workspace folder moved away and replaced by
//! a symlink does not move the grant. `--no-network` also denies every TCP `connect` and `bind`
//! (Landlock ABI 4, Linux 6.7); UDP, and so DNS, is not covered. The network is on by default.
//!
//! What none of this covers (the s02 README's threat model says why): the mode, owner, times and
//! extended attributes of files the user owns outside the writable set (`chmod`, `touch -d`,
//! `setfattr`: Landlock has no right for them and seccomp cannot see paths; a read-only bind
//! mount would need a mount namespace), reading any file the user can read (a `.env` included),
//! and, with `--allow-unix-sockets`, every server reachable through a socket.
//!
//! Where Landlock or seccomp is missing (an old kernel, Landlock not enabled at boot),
//! [`Sandbox::notice`] gives the one line the harness prints at start, and what is missing is
//! not applied. Everything is prepared in the harness before each spawn ([`Confinement`]); the
//! child only makes the system calls that apply it, so the harness itself is never restricted.

use super::{Sandbox, SandboxMode};
use std::io;
use std::os::fd::AsFd;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, make_bitflags,
};

use crate::workspace::Workspace;

/// The rights this harness asks for: Landlock ABI 6 (Linux 6.12), which has the signal and
/// abstract-socket scopes. Rights a kernel lacks are dropped (the crate's best-effort mode), so an
/// older kernel still gets what it has, and [`Sandbox::notice`] says what is missing.
const ABI_USED: ABI = ABI::V6;

/// The first Landlock ABI that scopes signals and abstract unix sockets (Linux 6.12).
const ABI_SCOPES: i32 = 6;

/// Character devices that every command may write, in every mode.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// Temp folders that `workspace-write` commands may write (plus `$TMPDIR`).
const TEMP_FOLDERS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Whether this kernel lists a process's children (`/proc/thread-self/children`, Linux 3.5 with
/// `CONFIG_PROC_CHILDREN`, on in the major distributions' kernels), which the supervisor reads
/// to find what a command left behind; asked once. Without it only `sh`'s process group is
/// stopped.
pub fn children_listed() -> bool {
    static LISTED: OnceLock<bool> = OnceLock::new();
    *LISTED.get_or_init(|| std::path::Path::new("/proc/thread-self/children").exists())
}

/// The Landlock ABI version of the running kernel (0 where Landlock is missing), asked once.
pub fn kernel_abi() -> i32 {
    static ABI: OnceLock<i32> = OnceLock::new();
    *ABI.get_or_init(|| {
        // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute and size 0 only returns
        // the ABI version (or -1 with errno); no memory is read or written.
        let v =
            unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
        i32::try_from(v).unwrap_or(0).max(0)
    })
}

/// Whether this kernel has seccomp filters and this build knows the architecture's system call
/// numbers (x86-64, AArch64, RISC-V 64), asked once.
pub fn seccomp_available() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        // SAFETY: PR_GET_SECCOMP takes no pointer; it returns the mode, or -1 (EINVAL) when the
        // kernel is built without seccomp.
        let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
        mode >= 0 && seccomp::program().is_some()
    })
}

/// Whether the harness holds any capability (it runs as root, or was given some), asked once:
/// then commands get theirs dropped.
fn harness_has_capabilities() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let nonzero = |field: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .is_some_and(|v| !v.trim().trim_start_matches('0').is_empty())
        };
        rustix::process::geteuid().is_root() || nonzero("CapPrm:") || nonzero("CapAmb:")
    })
}

impl Sandbox {
    /// Whether commands really run inside Landlock: a mode other than `off` on a kernel with
    /// Landlock.
    pub fn active(&self) -> bool {
        self.mode != SandboxMode::Off && kernel_abi() >= 1
    }

    /// Whether commands are refused unix sockets: a mode other than `off`, without
    /// `--allow-unix-sockets`, where seccomp is available.
    pub fn denies_unix_sockets(&self) -> bool {
        self.mode != SandboxMode::Off && !self.allow_unix_sockets && seccomp_available()
    }

    /// The line to print once at start when the sandbox asked for cannot be had in full:
    /// Landlock is missing, its scopes need a newer kernel, seccomp is missing, or `--no-network`
    /// needs a newer kernel. `None` when all is as asked.
    pub fn notice(&self) -> Option<String> {
        let abi = kernel_abi();
        let orphans = (!children_listed()).then(|| {
            "this kernel does not list a process's children (/proc/thread-self/children, CONFIG_PROC_CHILDREN), \
             so processes a command leaves running outside its process group are not stopped"
                .to_owned()
        });
        if self.mode == SandboxMode::Off {
            return orphans.map(|o| format!("sandbox: {o}"));
        }
        if abi < 1 {
            return Some(
                "sandbox: Landlock is not available on this system (it needs Linux 5.13 or later with Landlock \
                 enabled); bash commands run UNSANDBOXED and can write anywhere you can"
                    .to_owned(),
            );
        }
        let mut missing: Vec<String> = orphans.into_iter().collect();
        if abi < ABI_SCOPES {
            missing.push(format!(
                "this kernel has Landlock ABI {abi}, so commands can signal (kill) your other processes and \
                 reach abstract unix sockets (scoping them needs ABI 6, Linux 6.12)"
            ));
        }
        if !self.allow_unix_sockets && !seccomp_available() {
            missing.push(
                "seccomp is not available, so commands can connect to unix sockets (tmux, D-Bus, docker, \
                 the ssh agent)"
                    .to_owned(),
            );
        }
        if self.no_network && abi < 4 {
            missing.push(format!(
                "--no-network needs Landlock ABI 4 (Linux 6.7); this kernel has ABI {abi}, so the network \
                 stays ON"
            ));
        }
        (!missing.is_empty()).then(|| format!("sandbox: {}", missing.join("; ")))
    }

    /// The Landlock ruleset for one command, built in the harness (it allocates and opens
    /// paths). `None` when the sandbox is off or Landlock missing.
    ///
    /// # Errors
    /// The Landlock error as text, when a rule cannot be built.
    pub fn ruleset(&self, ws: &Workspace) -> Result<Option<RulesetCreated>, String> {
        if !self.active() {
            return Ok(None);
        }
        self.build(ws).map(Some).map_err(|e| e.to_string())
    }

    /// Everything one command applies to itself between `fork` and `exec`, prepared here in the
    /// harness: the Landlock ruleset, the seccomp program, whether to drop capabilities. Empty
    /// with `--sandbox off`.
    ///
    /// # Errors
    /// The Landlock error as text, when a rule cannot be built.
    pub fn confinement(&self, ws: &Workspace) -> Result<Confinement, String> {
        if self.mode == SandboxMode::Off {
            return Ok(Confinement::default());
        }
        Ok(Confinement {
            landlock: self.ruleset(ws)?,
            seccomp: if self.denies_unix_sockets() { seccomp::program() } else { None },
            drop_capabilities: harness_has_capabilities(),
        })
    }

    fn build(&self, ws: &Workspace) -> Result<RulesetCreated, landlock::RulesetError> {
        let abi = ABI_USED;
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)?;
        if self.no_network {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
        // Every right but making device nodes, which no command is granted anywhere.
        let writable: BitFlags<AccessFs> =
            AccessFs::from_all(abi) & !make_bitflags!(AccessFs::{MakeChar | MakeBlock});
        let mut created = ruleset.create()?;
        if let Ok(root) = PathFd::new("/") {
            created = created.add_rule(PathBeneath::new(root, AccessFs::from_read(abi)))?;
        }
        for dev in DEVICES {
            if let Ok(fd) = PathFd::new(dev) {
                created = created.add_rule(PathBeneath::new(fd, AccessFs::from_file(abi)))?;
            }
        }
        if self.mode == SandboxMode::WorkspaceWrite {
            created = created.add_rule(PathBeneath::new(ws.dir().as_fd(), writable))?;
            let tmpdir = crate::config::tmpdir();
            let temps = TEMP_FOLDERS.iter().map(std::path::PathBuf::from).chain(tmpdir);
            for dir in temps {
                if let Ok(fd) = PathFd::new(&dir) {
                    created = created.add_rule(PathBeneath::new(fd, writable))?;
                }
            }
        }
        Ok(created)
    }
}

/// What one command applies to itself between `fork` and `exec`, built in the harness by
/// [`Sandbox::confinement`]: a Landlock ruleset, a seccomp program (no unix sockets), and whether
/// to drop every capability. The default applies nothing (`--sandbox off`).
#[derive(Default)]
pub struct Confinement {
    landlock: Option<RulesetCreated>,
    seccomp: Option<&'static seccompiler::BpfProgram>,
    drop_capabilities: bool,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("landlock", &self.landlock.is_some())
            .field("seccomp", &self.seccomp.is_some())
            .field("drop_capabilities", &self.drop_capabilities)
            .finish()
    }
}

impl Confinement {
    /// Applies the confinement to the calling process, in this order: capabilities dropped,
    /// Landlock (which also sets `no_new_privs`), seccomp. Meant for a forked child just before
    /// `exec`: it only makes system calls and allocates nothing. A second call applies nothing.
    ///
    /// # Errors
    /// The failing system call's error; Landlock's as `PermissionDenied`. The caller must then
    /// not run the command.
    pub fn apply(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.drop_capabilities) {
            drop_all_capabilities()?;
        }
        if let Some(ruleset) = self.landlock.take() {
            ruleset.restrict_self().map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
        }
        if let Some(program) = self.seccomp.take() {
            seccompiler::apply_filter(program)
                .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
        }
        Ok(())
    }
}

/// Empties the calling process's bounding and ambient capability sets, then its permitted,
/// effective and inheritable sets, so that neither it nor anything it executes (root's programs
/// included) holds a capability. Only system calls.
fn drop_all_capabilities() -> io::Result<()> {
    // The bounding set first, while CAP_SETPCAP is still held. EINVAL marks the first number
    // past the kernel's last capability.
    for cap in 0..64 {
        // SAFETY: PR_CAPBSET_DROP takes a capability number; no pointer.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(err);
        }
    }
    // Kernels before 4.3 have no ambient set (EINVAL): nothing to clear.
    // SAFETY: no pointer.
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // _LINUX_CAPABILITY_VERSION_3: two 32-bit halves.
    let header = Header { version: 0x2008_0522, pid: 0 };
    let data = [Data { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capset reads a valid header and two data structs, as version 3 prescribes.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The seccomp program: `socket(AF_UNIX, …)` and `io_uring_setup` fail with `EPERM`; every other
/// system call is allowed. Built once, with `seccompiler`.
mod seccomp {
    use std::collections::BTreeMap;
    use std::sync::OnceLock;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    /// The x32 ABI's bit in a system call number (x86-64 only): an x32 `socket` is 41 with it, so
    /// it is refused too.
    #[cfg(target_arch = "x86_64")]
    const X32: i64 = 0x4000_0000;

    /// The architecture's target, where `seccompiler` knows its system calls.
    fn arch() -> Option<TargetArch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(TargetArch::x86_64),
            "aarch64" => Some(TargetArch::aarch64),
            "riscv64" => Some(TargetArch::riscv64),
            _ => None,
        }
    }

    /// The compiled program, or `None` on an architecture `seccompiler` does not know. A process
    /// of another architecture (a 32-bit program) is killed by the filter's architecture check.
    pub(super) fn program() -> Option<&'static BpfProgram> {
        static PROGRAM: OnceLock<Option<BpfProgram>> = OnceLock::new();
        PROGRAM.get_or_init(|| build().ok()).as_ref()
    }

    fn build() -> Result<BpfProgram, seccompiler::BackendError> {
        let arch = arch().ok_or(seccompiler::BackendError::InvalidTargetArch("unknown".into()))?;
        let unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?;
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        let mut calls =
            vec![(libc::SYS_socket, vec![SeccompRule::new(vec![unix])?]), (libc::SYS_io_uring_setup, vec![])];
        #[cfg(target_arch = "x86_64")]
        {
            let x32: Vec<_> = calls.iter().map(|(nr, r)| (nr | X32, r.clone())).collect();
            calls.extend(x32);
        }
        for (nr, rule) in calls {
            rules.insert(nr, rule);
        }
        let filter =
            SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;
        filter.try_into()
    }
}
