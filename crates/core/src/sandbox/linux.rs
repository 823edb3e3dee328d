//! The sandbox on Linux: Landlock (through the `landlock` crate, kept by the Landlock
//! maintainers), a seccomp filter (through `seccompiler`, rust-vmm's, as the Codex CLI uses it)
//! and, when the harness runs as root, no capabilities.
//!
//! | mode | a command may write |
//! |---|---|
//! | `workspace-write` (default) | the workspace (`.git` included), the temp folders (`/tmp`, `/var/tmp`, `$TMPDIR`; not `/dev/shm`) and the usual character devices (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty`) |
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
use std::path::PathBuf;
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

/// Temp folders that `workspace-write` commands may write (plus `$TMPDIR`). Not `/dev/shm`: it
/// holds other programs' live shared memory and semaphores (a browser's, a database's), which a
/// command could read and change there.
const TEMP_FOLDERS: &[&str] = &["/tmp", "/var/tmp"];

/// Shared memory: never granted, even when `$TMPDIR` points into it.
const SHARED_MEMORY: &str = "/dev/shm";

/// The temp folders `workspace-write` commands may write, as real paths (a folder that does not
/// exist is left out): `/tmp`, `/var/tmp` and `$TMPDIR` (unless it lies in `/dev/shm`).
pub fn temp_folders() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    for dir in TEMP_FOLDERS.iter().map(PathBuf::from).chain(crate::config::tmpdir()) {
        if let Ok(real) = std::fs::canonicalize(&dir)
            && !real.starts_with(SHARED_MEMORY)
            && !found.contains(&real)
        {
            found.push(real);
        }
    }
    found
}

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
        mode >= 0 && seccomp::programs(true).is_some()
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
            // Root's commands keep CAP_SYS_ADMIN, which TIOCSTI needs on a terminal that is not
            // theirs: they could answer `Allow? [y/N]` themselves. The harness, a subreaper,
            // still ends what a command leaves when its call ends, but not while it runs.
            let typing = harness_has_capabilities().then(|| {
                "the sandbox is off and the harness has root's capabilities, so bash commands keep them: a \
                 command can type into this terminal (TIOCSTI) while it runs, answer a prompt included, and \
                 change anything on the system; run without --sandbox off, or as another user"
                    .to_owned()
            });
            let lines: Vec<String> = typing.into_iter().chain(orphans).collect();
            return (!lines.is_empty()).then(|| format!("sandbox: {}", lines.join("; ")));
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
            seccomp: if seccomp_available() { seccomp::programs(self.denies_unix_sockets()) } else { None },
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
            for dir in temp_folders() {
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
    seccomp: Option<[&'static seccompiler::BpfProgram; 2]>,
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
        for program in self.seccomp.take().into_iter().flatten() {
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

/// The seccomp programs, built once each with `seccompiler`; every system call not named here is
/// allowed:
/// - **always** (both sandboxed modes): no set-user-ID or set-group-ID bit on any file. `chmod`,
///   `fchmod`, `fchmodat`, `fchmodat2`, and the file-creating calls whose mode argument the bits
///   can ride in (`open`/`openat` with `O_CREAT` or `O_TMPFILE`, `creat`, `mkdir`, `mkdirat`,
///   `mknod`, `mknodat`) fail with `EPERM` when the mode holds `S_ISUID` or `S_ISGID`; `openat2`,
///   whose mode sits in a structure a filter cannot read, fails with `ENOSYS`, so the C library
///   falls back to `openat`. No key of the kernel's keyrings: `keyctl`, `add_key` and
///   `request_key` fail with `EPERM` (the user's and session keyrings hold other programs' keys).
///   No System V IPC: `shm*`, `msg*` and `sem*` fail with `EPERM` (their objects are named by
///   machine-wide ids, other programs' among them; a command's own private use goes too, as
///   POSIX shared memory does with `/dev/shm`).
/// - **without unix sockets** (the default): `socket(AF_UNIX, …)` and `io_uring_setup` (a ring
///   creates sockets without the `socket` call) fail with `EPERM`, and so does `socketpair` of
///   any type but `SOCK_STREAM` and `SOCK_SEQPACKET`: a datagram pair can `sendto` any named
///   datagram socket on the machine (syslog, journald); a stream or seqpacket pair reaches only
///   its other end.
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

    /// `fchmodat2` (Linux 6.6): the same number on every architecture, which not every `libc`
    /// release names.
    const SYS_FCHMODAT2: i64 = 452;

    /// The architecture's target, where `seccompiler` knows its system calls.
    fn arch() -> Option<TargetArch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(TargetArch::x86_64),
            "aarch64" => Some(TargetArch::aarch64),
            "riscv64" => Some(TargetArch::riscv64),
            _ => None,
        }
    }

    /// The compiled programs for a command, in the order they are applied: the `EPERM` one (with
    /// the unix-socket rules when `deny_unix_sockets`) and the `ENOSYS` one. `None` on an
    /// architecture `seccompiler` does not know. A process of another architecture (a 32-bit
    /// program) is killed by the filters' architecture check.
    pub(super) fn programs(deny_unix_sockets: bool) -> Option<[&'static BpfProgram; 2]> {
        static WITH: OnceLock<Option<BpfProgram>> = OnceLock::new();
        static WITHOUT: OnceLock<Option<BpfProgram>> = OnceLock::new();
        static NOSYS: OnceLock<Option<BpfProgram>> = OnceLock::new();
        let cell = if deny_unix_sockets { &WITH } else { &WITHOUT };
        let eperm = cell.get_or_init(|| build_eperm(deny_unix_sockets).ok()).as_ref()?;
        let nosys = NOSYS.get_or_init(|| build_nosys().ok()).as_ref()?;
        Some([eperm, nosys])
    }

    type Rules = Vec<(i64, Vec<SeccompRule>)>;

    /// `arg & mask == value` on the 32-bit argument `arg`.
    fn masked(arg: u8, mask: u64, value: u64) -> Result<SeccompCondition, seccompiler::BackendError> {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(mask), value)
    }

    /// Rules that match when the mode in argument `mode` holds a set-user-ID or set-group-ID bit,
    /// each also requiring `extra` (for `open`'s flags).
    fn special_mode(
        mode: u8,
        extra: &[SeccompCondition],
    ) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        [libc::S_ISUID, libc::S_ISGID]
            .into_iter()
            .map(|bit| {
                let mut conditions = extra.to_vec();
                conditions.push(masked(mode, u64::from(bit), u64::from(bit))?);
                SeccompRule::new(conditions)
            })
            .collect()
    }

    /// `open`-like rules: flags in argument `flags` create a file (`O_CREAT`, or `O_TMPFILE`'s own
    /// bit) and the mode in `mode` holds a special bit. Without a creating flag the mode is not
    /// used (and may be anything), so it is not looked at.
    fn creating_special(flags: u8, mode: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        // O_TMPFILE is its own bit together with O_DIRECTORY; the bit alone marks it.
        let tmpfile = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;
        let mut rules = special_mode(mode, &[masked(flags, libc::O_CREAT as u64, libc::O_CREAT as u64)?])?;
        rules.extend(special_mode(mode, &[masked(flags, tmpfile, tmpfile)?])?);
        Ok(rules)
    }

    fn build_eperm(deny_unix_sockets: bool) -> Result<BpfProgram, seccompiler::BackendError> {
        let mut calls: Rules = vec![
            (libc::SYS_fchmod, special_mode(1, &[])?),
            (libc::SYS_fchmodat, special_mode(2, &[])?),
            (SYS_FCHMODAT2, special_mode(2, &[])?),
            (libc::SYS_mkdirat, special_mode(2, &[])?),
            (libc::SYS_mknodat, special_mode(2, &[])?),
            (libc::SYS_openat, creating_special(2, 3)?),
            (libc::SYS_keyctl, vec![]),
            (libc::SYS_add_key, vec![]),
            (libc::SYS_request_key, vec![]),
            // System V IPC: segments, queues and semaphores are named by machine-wide ids, so a
            // command could attach to another program's segment and write into it, or post to its
            // queue, past Landlock (which sees no file). Closed as /dev/shm is.
            (libc::SYS_shmget, vec![]),
            (libc::SYS_shmat, vec![]),
            (libc::SYS_shmctl, vec![]),
            (libc::SYS_msgget, vec![]),
            (libc::SYS_msgsnd, vec![]),
            (libc::SYS_msgrcv, vec![]),
            (libc::SYS_msgctl, vec![]),
            (libc::SYS_semget, vec![]),
            (libc::SYS_semop, vec![]),
            (libc::SYS_semtimedop, vec![]),
            (libc::SYS_semctl, vec![]),
        ];
        // The older calls that AArch64 and RISC-V never had.
        #[cfg(target_arch = "x86_64")]
        calls.extend([
            (libc::SYS_chmod, special_mode(1, &[])?),
            (libc::SYS_creat, special_mode(1, &[])?),
            (libc::SYS_mkdir, special_mode(1, &[])?),
            (libc::SYS_mknod, special_mode(1, &[])?),
            (libc::SYS_open, creating_special(1, 2)?),
        ]);
        if deny_unix_sockets {
            let unix =
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?;
            // The type's low four bits: every type but SOCK_STREAM and SOCK_SEQPACKET (the flags
            // above them, such as SOCK_CLOEXEC, do not matter). A seqpacket end drops the address
            // `sendto` gives it, so it reaches only its pair; Rust's std (and so cargo) uses one
            // to pass a pidfd.
            let not_stream = (0..16u64)
                .filter(|t| *t != libc::SOCK_STREAM as u64 && *t != libc::SOCK_SEQPACKET as u64)
                .map(|t| SeccompRule::new(vec![masked(1, 0xf, t)?]))
                .collect::<Result<Vec<_>, _>>()?;
            calls.extend([
                (libc::SYS_socket, vec![SeccompRule::new(vec![unix])?]),
                (libc::SYS_socketpair, not_stream),
                (libc::SYS_io_uring_setup, vec![]),
            ]);
        }
        compile(calls, libc::EPERM)
    }

    fn build_nosys() -> Result<BpfProgram, seccompiler::BackendError> {
        compile(vec![(libc::SYS_openat2, vec![])], libc::ENOSYS)
    }

    /// One filter: the `calls` (also under their x32 numbers on x86-64) fail with `errno`.
    fn compile(calls: Rules, errno: i32) -> Result<BpfProgram, seccompiler::BackendError> {
        let arch = arch().ok_or(seccompiler::BackendError::InvalidTargetArch("unknown".into()))?;
        #[cfg(target_arch = "x86_64")]
        let calls: Rules = {
            let x32: Rules = calls.iter().map(|(nr, r)| (nr | X32, r.clone())).collect();
            calls.into_iter().chain(x32).collect()
        };
        let rules: BTreeMap<i64, Vec<SeccompRule>> = calls.into_iter().collect();
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno.unsigned_abs()),
            arch,
        )?;
        filter.try_into()
    }
}
