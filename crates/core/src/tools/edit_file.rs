//! `edit_file`: replace exact text in a file (course §1, s02).
//!
//! Input `{"path": string, "old_text": string, "new_text": string}`. Replaces the **first** exact
//! occurrence of `old_text`, as the course does, and writes the file atomically (same as
//! `write_file`, keeping its permissions).
//!
//! Output `Edited PATH`. When `old_text` occurs k > 1 times the first is still replaced (the
//! course's behaviour, which a model may rely on), but the output says so, so the model can check
//! it edited the right one: `Edited PATH (old_text occurs 3 times; replaced the first)` (ours).
//! Occurrences are counted without overlap.
//!
//! Errors (`Error: …`): the workspace rule; `old_text must not be empty` (an empty string would
//! "match" at the start of every file); `Text not found in PATH` (course); `File not found: PATH`;
//! `PATH is a folder, not a file`; `PATH is not a regular file`;
//! `PATH is not UTF-8 text; not edited`; `PATH is too large to edit (N bytes; limit 64 MiB)`;
//! other I/O failures as `Cannot read PATH: …` / `Cannot write PATH: …`.

use std::fs;
use std::io;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::spec;
use super::write_file::atomic_write;
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::workspace::{Workspace, WsPath};

/// The largest file `edit_file` loads, in bytes (64 MiB): the edit needs the whole text in memory.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// The `edit_file` tool (course §1): `Replace exact text in file.`, input `path`, `old_text`,
/// `new_text`. See the module docs for the output and errors.
pub fn edit_file(ws: &Workspace) -> impl Tool + use<> {
    EditFile(ws.clone())
}

/// The `edit_file` tool's input.
#[derive(Deserialize)]
struct Args {
    path: String,
    old_text: String,
    new_text: String,
}

/// `edit_file` bound to its workspace.
struct EditFile(Workspace);

impl TypedTool for EditFile {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec(
            "edit_file",
            "Replace exact text in file.",
            json!({
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
            }),
            &["path", "old_text", "new_text"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::Path(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_blocking("edit_file", move || {
            let path = self.0.locate(&args.path)?;
            if args.old_text.is_empty() {
                return Err(ToolError::failed("old_text must not be empty"));
            }
            edit(&path, &args.old_text, &args.new_text)
        })
        .await
    }
}

/// The edit itself; blocking.
fn edit(path: &WsPath, old: &str, new: &str) -> Result<String, ToolError> {
    let given = path.given();
    let read_err = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => ToolError::Failed(format!("File not found: {given}")),
        _ => ToolError::Failed(format!("Cannot read {given}: {e}")),
    };
    let meta = fs::metadata(path.as_path()).map_err(read_err)?;
    if meta.is_dir() {
        return Err(ToolError::Failed(format!("{given} is a folder, not a file")));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!("{given} is not a regular file")));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::Failed(format!(
            "{given} is too large to edit ({} bytes; limit 64 MiB)",
            meta.len()
        )));
    }
    let bytes = fs::read(path.as_path()).map_err(read_err)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::Failed(format!("{given} is not UTF-8 text; not edited")))?;
    let count = text.matches(old).count();
    if count == 0 {
        return Err(ToolError::Failed(format!("Text not found in {given}")));
    }
    atomic_write(path, text.replacen(old, new, 1).as_bytes())?;
    Ok(if count == 1 {
        format!("Edited {given}")
    } else {
        format!("Edited {given} (old_text occurs {count} times; replaced the first)")
    })
}
