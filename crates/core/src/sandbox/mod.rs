//! The sandbox for `bash` commands: what a command may write, signal and connect to.
//!
//! `--sandbox` chooses what a command may write; reading stays allowed everywhere:
//!
//! | mode | a command may write |
//! |---|---|
//! | `workspace-write` (default) | the workspace (`.git` included), the temp folders (not `/dev/shm`) and the usual character devices (`/dev/null`, `/dev/zero`, `/dev/random`, `/dev/urandom`, …) |
//! | `read-only` | only those character devices |
//! | `off` | anything the user can (no sandbox) |
//!
//! In both sandboxed modes a command also signals only its own processes (not the harness, not
//! the user's other programs), opens no unix socket unless `--allow-unix-sockets` (so it cannot
//! reach tmux, D-Bus, docker or the ssh agent, servers that run commands or hold keys), and,
//! with `--no-network`, makes no TCP connection.
//!
//! Each system has its own mechanism, behind the same [`Sandbox`]:
//! - **Linux** (`linux`): Landlock, a seccomp filter and, under root, no capabilities, applied
//!   to `sh` between `fork` and `exec`. Tested end to end on Linux.
//! - **macOS** (`macos`, with the profile text in [`seatbelt`]): a Seatbelt profile given to
//!   `/usr/bin/sandbox-exec`, as the Codex CLI does. The profile is generated here and locked by
//!   unit tests that run on every system; running it needs a Mac, which CI does not have, so on
//!   macOS this is compiled and not run by the tests.
//!
//! Other systems are refused at compile time (see the crate's root); Windows users run the
//! chapters in WSL.

#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(target_os = "macos")]
mod macos;
pub mod seatbelt;

#[cfg(target_os = "linux")]
pub use linux::{Confinement, children_listed, kernel_abi, seccomp_available, temp_folders};
#[cfg(target_os = "macos")]
pub use macos::{Confinement, temp_folders};

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

/// The sandbox settings for `bash`: the mode, whether TCP is denied, whether unix sockets are
/// allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// What commands may write.
    pub mode: SandboxMode,
    /// Deny TCP `connect` and `bind` (`--no-network`).
    pub no_network: bool,
    /// Let commands create unix sockets (`--allow-unix-sockets`): off by default, so that no
    /// command reaches a server outside its own processes (tmux, D-Bus, docker, the ssh agent).
    pub allow_unix_sockets: bool,
}

impl Sandbox {
    /// A last line for a failed command whose output looks like the sandbox stopped it
    /// (`Permission denied`, `Read-only file system`, `Operation not permitted`), so the model
    /// can explain or work inside the workspace instead of retrying blindly.
    pub fn hint(&self, output: &str) -> Option<&'static str> {
        const SIGNS: [&str; 3] = ["Permission denied", "Read-only file system", "Operation not permitted"];
        if !self.active() || !SIGNS.iter().any(|s| output.contains(s)) {
            return None;
        }
        Some(match (self.mode, self.denies_unix_sockets()) {
            (SandboxMode::ReadOnly, _) => {
                "(the sandbox is read-only: commands cannot write files, signal other processes or open unix \
                 sockets; the user can run the harness with --sandbox workspace-write or --sandbox off)"
            }
            (_, true) => {
                "(the sandbox lets commands write only in the workspace and the temp folders, signal only their \
                 own processes, and open no unix socket; work inside the workspace, or ask the user to run the \
                 harness with --sandbox off or --allow-unix-sockets)"
            }
            _ => {
                "(the sandbox lets commands write only in the workspace and the temp folders, and signal only \
                 their own processes; work inside the workspace, or ask the user to run the harness with \
                 --sandbox off)"
            }
        })
    }
}
