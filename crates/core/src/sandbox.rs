//! The sandbox for `bash` commands on Linux: Landlock, through the `landlock` crate (kept by the
//! Landlock maintainers).
//!
//! `--sandbox` chooses what a command may write; reading stays allowed everywhere:
//!
//! | mode | a command may write |
//! |---|---|
//! | `workspace-write` (default) | the workspace (`.git` included), the temp folders (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`) and the usual character devices (`/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty`) |
//! | `read-only` | only those character devices |
//! | `off` | anything the user can (no sandbox) |
//!
//! The workspace is granted by its open handle, so a workspace folder moved away and replaced by
//! a symlink does not move the grant. `--no-network` also denies every TCP `connect` and `bind`
//! (Landlock ABI 4, Linux 6.7); UDP, and so DNS, is not covered. The network is on by default.
//!
//! Where Landlock is missing (not Linux, a kernel before 5.13, or Landlock not enabled at boot),
//! [`Sandbox::notice`] gives the one line the harness prints at start, and commands run
//! unsandboxed. The ruleset is built in the harness before each spawn; only `restrict_self` runs
//! in the child, so the harness itself is never restricted.

use std::os::fd::AsFd;
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr,
};

use crate::workspace::Workspace;

/// The rights this harness asks for: Landlock ABI 6 (Linux 6.12). Rights a kernel lacks are
/// dropped (the crate's best-effort mode), so an older kernel still gets what it has.
const ABI_USED: ABI = ABI::V6;

/// Character devices that every command may write, in every mode.
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"];

/// Temp folders that `workspace-write` commands may write (plus `$TMPDIR`).
const TEMP_FOLDERS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// What `bash` commands may write: `--sandbox read-only|workspace-write|off`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Writes nowhere but the character devices.
    ReadOnly,
    /// Writes in the workspace, the temp folders and the character devices (the default).
    #[default]
    WorkspaceWrite,
    /// No sandbox.
    Off,
}

impl SandboxMode {
    /// The modes' names as `--sandbox` takes them, in the order of the enum.
    pub const NAMES: [&'static str; 3] = ["read-only", "workspace-write", "off"];

    /// The mode's name as `--sandbox` takes it.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => Self::NAMES[0],
            SandboxMode::WorkspaceWrite => Self::NAMES[1],
            SandboxMode::Off => Self::NAMES[2],
        }
    }
}

impl std::str::FromStr for SandboxMode {
    type Err = String;

    /// One of [`SandboxMode::NAMES`].
    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "off" => Ok(SandboxMode::Off),
            other => Err(format!("unknown sandbox mode {other:?}; one of: {}", Self::NAMES.join(", "))),
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The sandbox settings for `bash`: the mode and whether TCP is denied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// What commands may write.
    pub mode: SandboxMode,
    /// Deny TCP `connect` and `bind` (`--no-network`).
    pub no_network: bool,
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

impl Sandbox {
    /// Whether commands really run sandboxed: a mode other than `off` on a kernel with Landlock.
    pub fn active(&self) -> bool {
        self.mode != SandboxMode::Off && kernel_abi() >= 1
    }

    /// The line to print once at start when the sandbox asked for cannot be had: Landlock is
    /// missing, or `--no-network` needs a newer kernel. `None` when all is as asked.
    pub fn notice(&self) -> Option<String> {
        let abi = kernel_abi();
        if self.mode != SandboxMode::Off && abi < 1 {
            return Some(
                "sandbox: Landlock is not available on this system (it needs Linux 5.13 or later with Landlock \
                 enabled); bash commands run UNSANDBOXED and can write anywhere you can"
                    .to_owned(),
            );
        }
        if self.no_network && abi < 4 {
            return Some(format!(
                "sandbox: --no-network needs Landlock ABI 4 (Linux 6.7); this kernel has ABI {abi}, so the \
                 network stays ON"
            ));
        }
        None
    }

    /// The ruleset for one command, built in the harness (it allocates and opens paths); the
    /// child applies it with `restrict_self`. `None` when the sandbox is off or Landlock missing.
    ///
    /// # Errors
    /// The Landlock error as text, when a rule cannot be built.
    pub fn ruleset(&self, ws: &Workspace) -> Result<Option<RulesetCreated>, String> {
        if !self.active() {
            return Ok(None);
        }
        self.build(ws).map(Some).map_err(|e| e.to_string())
    }

    fn build(&self, ws: &Workspace) -> Result<RulesetCreated, landlock::RulesetError> {
        let abi = ABI_USED;
        let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(abi))?;
        if self.no_network {
            ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
        }
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
            created = created.add_rule(PathBeneath::new(ws.dir().as_fd(), AccessFs::from_all(abi)))?;
            let tmpdir = crate::config::tmpdir();
            let temps = TEMP_FOLDERS.iter().map(std::path::PathBuf::from).chain(tmpdir);
            for dir in temps {
                if let Ok(fd) = PathFd::new(&dir) {
                    created = created.add_rule(PathBeneath::new(fd, AccessFs::from_all(abi)))?;
                }
            }
        }
        Ok(created)
    }

    /// A last line for a failed command whose output looks like the sandbox stopped it
    /// (`Permission denied`, `Read-only file system`, `Operation not permitted`), so the model
    /// can explain or work inside the workspace instead of retrying blindly.
    pub fn hint(&self, output: &str) -> Option<&'static str> {
        const SIGNS: [&str; 3] = ["Permission denied", "Read-only file system", "Operation not permitted"];
        if !self.active() || !SIGNS.iter().any(|s| output.contains(s)) {
            return None;
        }
        Some(match self.mode {
            SandboxMode::ReadOnly => {
                "(the sandbox is read-only: commands cannot write files; the user can run the harness with \
                 --sandbox workspace-write or --sandbox off)"
            }
            _ => {
                "(the sandbox lets commands write only in the workspace and the temp folders; work inside the \
                 workspace, or ask the user to run the harness with --sandbox off)"
            }
        })
    }
}
