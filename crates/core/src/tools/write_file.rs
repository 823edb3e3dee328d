//! `write_file`: create or overwrite a file (course §1, s02).
//!
//! Input `{"path": string, "content": string}`. Creates missing parent folders (only inside the
//! workspace: the path is checked by [`Workspace::locate`] before anything is created) and writes
//! atomically: the content goes to a temporary file in the same folder, which is then renamed over
//! the target, so a failed write never leaves a half-written file. An existing file keeps its
//! permission bits; a new file gets `0o666` minus the umask, like any new file. Writing through a
//! symlink inside the workspace replaces the file it points to and keeps the link.
//!
//! Output `Wrote N bytes to PATH`, N the UTF-8 byte count **(fix: the course counted
//! characters)**, PATH as given. Errors: the workspace rule; `PATH is a folder, not a file`;
//! `Cannot write PATH: …` for any I/O failure.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::spec;
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::workspace::{Workspace, WsPath};

/// The `write_file` tool (course §1): `Write content to file.`, input `path` and `content`. See
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
            "Write content to file.",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::Path(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_blocking("write_file", move || {
            let path = self.0.locate(&args.path)?;
            if path.is_dir() {
                return Err(ToolError::Failed(format!("{} is a folder, not a file", path.given())));
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| write_error(&path, e))?;
            }
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

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, keeping an
/// existing file's permission bits. The parent folder must exist. Blocking.
///
/// # Errors
/// `Cannot write PATH: …`; the target is then untouched and the temporary file removed.
pub(crate) fn atomic_write(path: &WsPath, bytes: &[u8]) -> Result<(), ToolError> {
    let err = |e: io::Error| write_error(path, e);
    let parent = path.parent().ok_or_else(|| err(io::Error::other("no parent folder")))?;
    let old_mode = fs::metadata(path.as_path()).ok().map(|m| m.permissions().mode() & 0o7777);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(old_mode.unwrap_or(0o666)))
        .tempfile_in(parent)
        .map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    if let Some(mode) = old_mode {
        // The umask applied at creation; restore the exact old bits.
        tmp.as_file().set_permissions(Permissions::from_mode(mode)).map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path.as_path()).map_err(|e| err(e.error))?;
    Ok(())
}
