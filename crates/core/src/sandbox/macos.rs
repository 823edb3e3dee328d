//! The sandbox on macOS: each `bash` command runs as `/usr/bin/sandbox-exec -p PROFILE … -- sh -c
//! COMMAND`, under the Seatbelt profile of [`super::seatbelt`]. Compiled for macOS by CI, not run
//! there (see [`crate::sandbox`]).
//!
//! | mode | a command may write |
//! |---|---|
//! | `workspace-write` (default) | the workspace (`.git` included, by its real path now), `/private/tmp`, `/private/var/tmp`, `$TMPDIR` and the user's temp folder under `/private/var/folders`, and the usual character devices |
//! | `read-only` | only those character devices |
//!
//! The workspace is named by the path its open handle has at each command (`F_GETPATH`), so a
//! workspace folder moved away and replaced by a symlink does not move the grant, as on Linux.
//! `--no-network` takes away every network rule, UDP included. What Seatbelt leaves, as Landlock
//! does on Linux: reading any file the user can read. What differs from Linux for ordinary
//! commands: macOS's `/bin/sh` (bash 3.2) writes a here-document to a temp file, so under
//! `read-only` a here-document fails; hard links are refused everywhere (tools fall back to
//! copying).

use std::ffi::{CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::seatbelt::{Policy, SANDBOX_EXEC};
use super::{Sandbox, SandboxMode};
use crate::workspace::Workspace;

/// Temp folders that `workspace-write` commands may write (real paths: `/tmp` is a symlink to
/// `/private/tmp`), plus `$TMPDIR` and the user's temp folder.
const TEMP_FOLDERS: [&str; 2] = ["/private/tmp", "/private/var/tmp"];

/// The temp folders `workspace-write` commands may write, as real paths (a folder that does not
/// exist is left out): `/private/tmp`, `/private/var/tmp`, `$TMPDIR` and the user's temp folder.
pub fn temp_folders() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let temps = TEMP_FOLDERS
        .iter()
        .map(PathBuf::from)
        .chain(crate::config::tmpdir())
        .chain(confstr_path(libc::_CS_DARWIN_USER_TEMP_DIR));
    for dir in temps {
        if let Ok(real) = std::fs::canonicalize(&dir)
            && !found.contains(&real)
        {
            found.push(real);
        }
    }
    found
}

/// Whether `/usr/bin/sandbox-exec` is there (it is on every macOS since 10.5), asked once.
fn sandbox_exec_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| Path::new(SANDBOX_EXEC).is_file())
}

/// Whether `sandbox-exec` can apply a profile here, tried once with one that allows everything:
/// it cannot when the harness itself runs inside a sandbox (another agent's, an app's), and every
/// command would then fail. Only a `sandbox-exec` that ran and failed says no: when the probe
/// cannot even start (no process to spare), commands stay sandboxed, and fail if it really
/// cannot apply one, rather than run unconfined.
fn sandbox_exec_works() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    *WORKS.get_or_init(|| {
        sandbox_exec_present()
            && std::process::Command::new(SANDBOX_EXEC)
                .args(["-p", "(version 1)(allow default)", "/usr/bin/true"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map_or(true, |s| s.success())
    })
}

/// A `confstr` path (`_CS_DARWIN_USER_TEMP_DIR`), when set.
fn confstr_path(name: libc::c_int) -> Option<PathBuf> {
    let mut buf = [0 as libc::c_char; libc::PATH_MAX as usize + 1];
    // SAFETY: confstr writes at most `buf.len()` bytes, NUL included, into the buffer.
    let len = unsafe { libc::confstr(name, buf.as_mut_ptr(), buf.len()) };
    if len == 0 || len > buf.len() {
        return None;
    }
    // SAFETY: confstr NUL-terminated what it wrote, within the buffer.
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Some(PathBuf::from(OsStr::from_bytes(text.to_bytes())))
}

impl Sandbox {
    /// Whether commands really run inside Seatbelt: a mode other than `off`, with
    /// `/usr/bin/sandbox-exec` present and able to apply a profile.
    pub fn active(&self) -> bool {
        self.mode != SandboxMode::Off && sandbox_exec_works()
    }

    /// Whether commands are refused unix sockets: sandboxed, without `--allow-unix-sockets`.
    pub fn denies_unix_sockets(&self) -> bool {
        self.active() && !self.allow_unix_sockets
    }

    /// The line to print once at start when the sandbox asked for cannot be had: `sandbox-exec`
    /// is missing or cannot apply a profile. `None` when all is as asked.
    pub fn notice(&self) -> Option<String> {
        if self.mode == SandboxMode::Off {
            return None;
        }
        if !sandbox_exec_present() {
            return Some(format!(
                "sandbox: {SANDBOX_EXEC} is missing, so bash commands run UNSANDBOXED and can write anywhere \
                 you can"
            ));
        }
        (!sandbox_exec_works()).then(|| {
            format!(
                "sandbox: {SANDBOX_EXEC} cannot apply a profile here (is the harness itself inside a \
                 sandbox?), so bash commands run UNSANDBOXED and can write anywhere you can"
            )
        })
    }

    /// The Seatbelt policy for one command, with the workspace's real path as its handle has it
    /// now and the temp folders resolved. Empty with `--sandbox off` or without `sandbox-exec`.
    ///
    /// # Errors
    /// The workspace's path cannot be had from its handle (the folder was deleted).
    pub fn confinement(&self, ws: &Workspace) -> Result<Confinement, String> {
        if !self.active() {
            return Ok(Confinement::default());
        }
        let mut writable = Vec::new();
        if self.mode == SandboxMode::WorkspaceWrite {
            let root = rustix::fs::getpath(ws.dir())
                .map_err(|e| format!("cannot tell where the workspace folder is now: {e}"))?;
            writable.push(PathBuf::from(OsStr::from_bytes(root.to_bytes())));
            // Seatbelt compares real paths, which these are.
            for real in temp_folders() {
                if !writable.contains(&real) {
                    writable.push(real);
                }
            }
        }
        Ok(Confinement { policy: Policy::new(self, writable) })
    }
}

/// What one command runs under on macOS: the Seatbelt policy, or none (`--sandbox off`, or no
/// `sandbox-exec`). Built by [`Sandbox::confinement`].
#[derive(Clone, Debug, Default)]
pub struct Confinement {
    policy: Option<Policy>,
}

impl Confinement {
    /// The program and arguments that run `sh -c command` under this confinement:
    /// `/usr/bin/sandbox-exec` with the profile, or `sh` itself.
    pub(crate) fn command_line(&self, command: &str) -> (OsString, Vec<OsString>) {
        match &self.policy {
            Some(policy) => (SANDBOX_EXEC.into(), policy.arguments(OsStr::new(command))),
            None => ("sh".into(), vec!["-c".into(), command.into()]),
        }
    }
}
