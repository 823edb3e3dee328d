//! The tools: `bash`, `read_file`, `write_file`, `edit_file` (course §1, s02) and `glob` (course §3).
//!
//! One file per tool. Each is a [`TypedTool`](crate::dispatch::TypedTool): its `Args` type (parsed
//! once by the dispatch map), what those arguments are about (a
//! [`Subject`](crate::dispatch::Subject): the command, the path, the pattern), and its run. Each
//! constructor takes the [`Workspace`], so every path goes through the one workspace rule, and
//! returns an `impl Tool` for the [`DispatchMap`]. Failures are
//! [`ToolError`](crate::dispatch::ToolError)s, which the map sends back as `Error: …`.
//!
//! | tool | input | output |
//! |---|---|---|
//! | `bash` | `command` | stdout then stderr, trimmed, ≤ 50,000 characters; `(no output)` |
//! | `read_file` | `path`, `limit`? | lines joined by `\n`; `... (N more lines)`; ≤ 50,000 characters |
//! | `write_file` | `path`, `content` | `Wrote N bytes to PATH` (N = UTF-8 bytes) |
//! | `edit_file` | `path`, `old_text`, `new_text` | `Edited PATH` |
//! | `glob` | `pattern` | sorted workspace-relative paths, ≤ 200; `(no matches)` |

pub mod bash;
mod edit_file;
mod glob;
mod read_file;
mod write_file;

use std::time::Duration;

use serde_json::{Value, json};

use crate::dispatch::DispatchMap;
use crate::messages::ToolSpec;
use crate::sandbox::Sandbox;
use crate::wording::ExitStatus;
use crate::workspace::Workspace;

pub use bash::{bash, run_command};
pub use edit_file::edit_file;
pub use glob::{glob, glob_base};
pub use read_file::{COUNT_BYTES, read_file};
pub use write_file::write_file;

/// The most characters a tool output carries before it is cut (course §1: 50,000).
pub const MAX_OUTPUT_CHARS: usize = 50_000;

/// Settings for the tools that have any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOptions {
    /// How long one `bash` command may run before its whole process group is killed and the
    /// result is `Error: Timeout (Ns)`. Default 120 s (course §1).
    pub bash_timeout: Duration,
    /// The sandbox `bash` commands run in: `workspace-write` by default.
    pub sandbox: Sandbox,
    /// How a non-zero exit is reported: `(exit code N)` by default; the course's
    /// `Error: command exited with status N` from s11 on ([`ExitStatus`]).
    pub exit_status: ExitStatus,
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self {
            bash_timeout: Duration::from_secs(120),
            sandbox: Sandbox::default(),
            exit_status: ExitStatus::Note,
        }
    }
}

/// s02's tools, in the course's order: `bash`, `read_file`, `write_file`, `edit_file` (course §1).
pub fn s02(ws: &Workspace, opts: &ToolOptions) -> DispatchMap {
    DispatchMap::new().with(bash(ws, opts)).with(read_file(ws)).with(write_file(ws)).with(edit_file(ws))
}

/// A tool spec with the course's schema shape:
/// `{"type":"object","properties":{…},"required":[…]}`.
pub(crate) fn spec(name: &str, description: &str, properties: Value, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema: json!({"type": "object", "properties": properties, "required": required}),
    }
}

/// Keeps the first [`MAX_OUTPUT_CHARS`] characters of `text`; returns the kept text and how many
/// characters were dropped.
pub(crate) fn cut_chars(text: &str, max: usize) -> (&str, usize) {
    // A text of at most `max` bytes has at most `max` characters: nothing to count.
    if text.len() <= max {
        return (text, 0);
    }
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], text[at..].chars().count()),
        None => (text, 0),
    }
}

/// A tool's output as the model gets it, capped like `bash`'s (course §1): the first
/// [`MAX_OUTPUT_CHARS`] characters, then `... (N more characters)` on a line of its own when any
/// were cut. For tools whose output echoes the model's own input (a todo list).
pub fn cap_output(text: &str) -> String {
    let (kept, more) = cut_chars(text, MAX_OUTPUT_CHARS);
    if more == 0 {
        return text.to_owned();
    }
    let newline = if kept.ends_with('\n') { "" } else { "\n" };
    format!("{kept}{newline}... ({more} more characters)")
}

/// Every built-in tool, in the course's order: s02's four, then `glob` (course §1, §3). For tests and
/// harnesses that want them all; s05 adds `glob` to `s02` itself so its diff shows the tool.
pub fn all(ws: &Workspace, opts: &ToolOptions) -> DispatchMap {
    s02(ws, opts).with(glob(ws))
}
