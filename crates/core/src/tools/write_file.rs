//! `write_file`: create or overwrite a file (course §1, s02).
//!
//! Input `{"path": string, "content": string}`. Creates missing parent folders (only inside the
//! workspace: the path is checked by [`Workspace::locate`] before anything is created, and every
//! folder is created beneath the workspace handle) and writes atomically: the content goes to an
//! unnamed temporary file in the target's folder (`O_TMPFILE`), which is then given a name and
//! renamed over the target. A failed write never leaves a half-written file, and a crash (even
//! `kill -9`) in the middle of a write leaves no temporary file: until the rename it has no name.
//! (On a file system without `O_TMPFILE` the temporary file has a `.tmp…` name while it is
//! written.)
//!
//! What an existing target keeps and what it refuses (ours):
//! - it keeps its permission bits and its owner and group (the temporary file gets them before
//!   the rename); a new file gets `0o666` minus the umask, like any new file;
//! - a target that is not a regular file (a FIFO, a socket, a device) is refused with
//!   `PATH is not a regular file`: it is never replaced by a regular file;
//! - a read-only target is refused with `PATH is read-only (mode 0444); not changed`. Read-only
//!   means that its mode has no write bit at all, or that the kernel says this user may not
//!   write it (`faccessat(W_OK, AT_EACCESS)`). The mode test matters because root passes every
//!   access check: as root, a file whose mode has no write bit is still refused;
//! - a target owned by another user, when this user cannot give the new file that owner (not
//!   root), is refused with `PATH belongs to another user (uid N); not changed`.
//!
//! Writing through a symlink inside the workspace replaces the file it points to and keeps the
//! link.
//!
//! Output `Wrote N bytes to PATH`, N the UTF-8 byte count **(fix: the course counted
//! characters)**, PATH as given. Errors: the workspace rule; `PATH is a folder, not a file`; the
//! refusals above; `Cannot write PATH: …` for any I/O failure.

use std::io::{self, Write};
use std::sync::Arc;

use cap_std::fs::{Dir, Permissions, PermissionsExt};
use cap_tempfile::TempFile;
use rustix::fs::{Access, AtFlags, Gid, Uid};

use serde::Deserialize;
use serde_json::json;

use super::spec;
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::workspace::{Workspace, WsPath};

/// The `write_file` tool (course §1): `Write content to a file.`, input `path` and `content`. See
/// the module docs for the output and errors.
pub fn write_file(ws: &Workspace) -> impl Tool + use<> {
    WriteFile(ws.clone())
}

/// The `write_file` tool's input.
#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

/// `write_file` bound to its workspace.
struct WriteFile(Workspace);

impl TypedTool for WriteFile {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec(
            "write_file",
            "Write content to a file.",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::WrittenPath(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_blocking("write_file", move || {
            let path = self.0.open_path(&args.path)?;
            atomic_write(&path, args.content.as_bytes())?;
            Ok(format!("Wrote {} bytes to {}", args.content.len(), args.path))
        })
        .await
    }
}

/// `Cannot write PATH: ERROR`.
pub(crate) fn write_error(path: &WsPath, e: io::Error) -> ToolError {
    ToolError::Failed(format!("Cannot write {}: {e}", path.given()))
}

/// Writes `bytes` to `path` atomically, as the module docs describe: the parent folders are
/// created beneath the workspace handle, the target is checked (folder, special file, read-only,
/// owner), and an unnamed temporary file with the target's mode and owner is renamed over it.
/// Blocking.
///
/// # Errors
/// The refusals of the module docs, or `Cannot write PATH: …`; the target is then untouched and
/// no temporary file is left.
pub(crate) fn atomic_write(path: &WsPath, bytes: &[u8]) -> Result<(), ToolError> {
    let given = path.given();
    let err = |e: io::Error| write_error(path, e);
    if path.relative().as_os_str().is_empty() {
        return Err(ToolError::Failed(format!("{given} is a folder, not a file")));
    }
    let (dir, name) = path.parent_dir(true).map_err(err)?;
    let keep = match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::Failed(format!("{given} is a folder, not a file")));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(ToolError::Failed(format!("{given} is not a regular file")));
        }
        Ok(meta) => {
            use cap_std::fs::MetadataExt;
            let mode = meta.mode() & 0o7777;
            if mode & 0o222 == 0 || !may_write(&dir, name) {
                return Err(ToolError::Failed(format!(
                    "{given} is read-only (mode {mode:04o}); not changed"
                )));
            }
            Some((mode, meta.uid(), meta.gid()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(err(e)),
    };
    let mut tmp = TempFile::new(&dir).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    if let Some((mode, uid, gid)) = keep {
        // Owner first: a chown clears the set-user-id and set-group-id bits.
        keep_owner(tmp.as_file(), uid, gid).map_err(|()| {
            ToolError::Failed(format!("{given} belongs to another user (uid {uid}); not changed"))
        })?;
        tmp.as_file().set_permissions(Permissions::from_mode(mode)).map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.replace(name).map_err(err)?;
    Ok(())
}

/// Whether the kernel lets this user write `name` in `dir` (`faccessat(W_OK, AT_EACCESS)`).
/// Always true for root; the mode check catches root's read-only files.
fn may_write(dir: &Dir, name: &std::ffi::OsStr) -> bool {
    !matches!(
        rustix::fs::accessat(dir, name, Access::WRITE_OK, AtFlags::EACCESS),
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::ROFS | rustix::io::Errno::PERM)
    )
}

/// Gives the new file the old file's owner and group. `Err(())` when the owner cannot be kept
/// (another user's file and we are not root); a group we do not belong to is let go, as `cp`
/// does.
fn keep_owner(file: &cap_std::fs::File, uid: u32, gid: u32) -> Result<(), ()> {
    let uid = Uid::from_raw(uid);
    let gid = Gid::from_raw(gid);
    if rustix::fs::fchown(file, Some(uid), Some(gid)).is_ok() {
        return Ok(());
    }
    if rustix::fs::fchown(file, Some(uid), None).is_ok() || uid == rustix::process::geteuid() {
        return Ok(());
    }
    Err(())
}
