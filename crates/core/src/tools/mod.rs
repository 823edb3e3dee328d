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
use crate::workspace::Workspace;

pub use bash::{ExitStatusText, bash, run_command};
pub use edit_file::{edit_file, edit_file_with};
pub use glob::{glob, glob_base};
pub use read_file::{COUNT_BYTES, read_file, read_file_with};
pub use write_file::write_file;

/// The most characters a tool output carries before it is cut (course §1: 50,000).
pub const MAX_OUTPUT_CHARS: usize = 50_000;

/// Settings for the tools that have any. The last three are where a course chapter's tools
/// behave otherwise than s02's (s17's goal loop); each defaults to s02's behaviour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOptions {
    /// How long one `bash` command may run before its whole process group is killed and the
    /// result is `Error: Timeout (Ns)`. Default 120 s (course §1).
    pub bash_timeout: Duration,
    /// The sandbox `bash` commands run in: `workspace-write` by default.
    pub sandbox: Sandbox,
    /// How `bash` reports a command that exited with a non-zero status: a last line
    /// `(exit code N)` by default; the course's later chapters answer `Error: command exited
    /// with status N` instead ([`ExitStatusText`]).
    pub exit_status: ExitStatusText,
    /// What `bash` returns: s02's head of the output (default), or s17's exit code and tail.
    pub bash_output: BashOutput,
    /// Which lines `read_file` shows: s02's first `limit` (default), or s17's window.
    pub read_lines: ReadLines,
    /// How many occurrences of `old_text` `edit_file` accepts: s02 replaces the first (default),
    /// s17 requires exactly one.
    pub edit_match: EditMatch,
}

impl Default for ToolOptions {
    fn default() -> Self {
        Self {
            bash_timeout: Duration::from_secs(120),
            sandbox: Sandbox::default(),
            exit_status: ExitStatusText::Note,
            bash_output: BashOutput::default(),
            read_lines: ReadLines::default(),
            edit_match: EditMatch::default(),
        }
    }
}

impl ToolOptions {
    /// These options with the course's s17 behaviours: `bash` answers `exit_code=N` and the last
    /// [`S17_TAIL_CHARS`] characters, `read_file` takes a 1-based `offset` and a `limit` of 200
    /// lines by default (1 to 500), `edit_file` edits only text that occurs exactly once.
    pub fn s17(self) -> Self {
        Self {
            bash_output: BashOutput::ExitCodeTail { tail_chars: S17_TAIL_CHARS },
            read_lines: ReadLines::Window { default_limit: 200, max_limit: 500 },
            edit_match: EditMatch::ExactlyOne,
            ..self
        }
    }
}

/// How many characters of a command's output the s17 `bash` keeps, from the end (course s17:
/// `output[-29950:]`, so that the result with its exit code stays under 30,000).
pub const S17_TAIL_CHARS: usize = 29_950;

/// What `bash` returns for a command that ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BashOutput {
    /// Course s02: the first 50,000 characters of the trimmed output, `(no output)` when empty,
    /// `(exit code N)` last for a failure (see [`bash()`]).
    #[default]
    Head,
    /// Course s17: `exit_code=N`, a newline, then the last `tail_chars` characters of the
    /// trimmed output.
    ExitCodeTail {
        /// How many characters of the output's end are kept.
        tail_chars: usize,
    },
}

/// Which lines `read_file` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReadLines {
    /// Course s02: input `path`, `limit`?; the first `limit` lines (all when absent or 0), then
    /// `... (N more lines)`.
    #[default]
    Head,
    /// Course s17: input `path`, `offset`?, `limit`?; `limit` lines from line `offset` (1-based,
    /// default 1, at least 1), `limit` defaulting to `default_limit` and held to
    /// 1..=`max_limit`; no note about the lines left.
    Window {
        /// `limit` when the model gives none (s17: 200).
        default_limit: u64,
        /// The largest `limit` (s17: 500).
        max_limit: u64,
    },
    /// Course s15: input `path`, `limit`?, `offset`?; the lines from `offset` (0-based, default
    /// 0), then as [`ReadLines::Head`]: the first `limit` of them and `... (N more lines)`.
    Skip,
}

/// How many occurrences of `old_text` `edit_file` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EditMatch {
    /// Course s02: the first occurrence is replaced; more than one is reported.
    #[default]
    First,
    /// Course s13–s17: exactly one, else `Expected 1 occurrence, found N` and nothing is written.
    ExactlyOne,
}

/// s02's tools, in the course's order: `bash`, `read_file`, `write_file`, `edit_file` (course §1),
/// with `opts`' behaviours.
pub fn s02(ws: &Workspace, opts: &ToolOptions) -> DispatchMap {
    DispatchMap::new()
        .with(bash(ws, opts))
        .with(read_file_with(ws, opts.read_lines))
        .with(write_file(ws))
        .with(edit_file_with(ws, opts.edit_match))
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
