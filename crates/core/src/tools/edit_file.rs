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
//! With [`EditMatch::ExactlyOne`] (course s13–s17) `old_text` must occur exactly once: otherwise
//! the result is `Error: Expected 1 occurrence, found N` and the file is not touched.
//!
//! Line ends (ours): `read_file` shows lines without their `\r`, so a model copies `old_text`
//! from a CRLF file with bare `\n`. The match is therefore made with `\r\n` read as `\n` on both
//! sides; the matched bytes are replaced, the rest of the file stays byte for byte, and the
//! replacement is written with the file's own line ending (CRLF when most of its line ends are
//! CRLF, LF otherwise).
//!
//! Errors (`Error: …`): the workspace rule; `old_text must not be empty` (an empty string would
//! "match" at the start of every file); `text not found in PATH` (course); `File not found: PATH`;
//! `PATH is a folder, not a file`; `PATH is not a regular file`;
//! `PATH is not UTF-8 text; not edited`; `PATH is too large to edit (N bytes; limit 64 MiB)`;
//! other I/O failures as `Cannot read PATH: …` / `Cannot write PATH: …`.

use std::io::Read;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::read_file::open_regular;
use super::spec;
use super::write_file::atomic_write;
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::tools::EditMatch;
use crate::workspace::{Workspace, WsPath};

/// The largest file `edit_file` loads, in bytes (64 MiB): the edit needs the whole text in memory.
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

/// The `edit_file` tool (course §1): `Replace exact text in a file once.`, input `path`, `old_text`,
/// `new_text`. See the module docs for the output and errors.
pub fn edit_file(ws: &Workspace) -> impl Tool + use<> {
    EditFile(ws.clone(), EditMatch::First)
}

/// The `edit_file` tool accepting the occurrences `matching` says (s17: exactly one).
pub fn edit_file_with(ws: &Workspace, matching: EditMatch) -> impl Tool + use<> {
    EditFile(ws.clone(), matching)
}

/// The `edit_file` tool's input.
#[derive(Deserialize)]
struct Args {
    path: String,
    old_text: String,
    new_text: String,
}

/// `edit_file` bound to its workspace.
struct EditFile(Workspace, EditMatch);

impl TypedTool for EditFile {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec(
            "edit_file",
            "Replace exact text in a file once.",
            json!({
                "path": {"type": "string"},
                "old_text": {"type": "string"},
                "new_text": {"type": "string"},
            }),
            &["path", "old_text", "new_text"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::WrittenPath(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_blocking("edit_file", move || {
            let path = self.0.open_path(&args.path)?;
            if args.old_text.is_empty() {
                return Err(ToolError::failed("old_text must not be empty"));
            }
            edit(&path, &args.old_text, &args.new_text, self.1)
        })
        .await
    }
}

/// The edit itself; blocking.
fn edit(path: &WsPath, old: &str, new: &str, matching: EditMatch) -> Result<String, ToolError> {
    let given = path.given();
    let (file, meta) = open_regular(path)?;
    if meta.len() > MAX_EDIT_BYTES {
        return Err(ToolError::Failed(format!(
            "{given} is too large to edit ({} bytes; limit 64 MiB)",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Failed(format!("Cannot read {given}: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::Failed(format!("{given} is not UTF-8 text; not edited")))?;
    let (edited, count) = replace_first(&text, old, new);
    if matching == EditMatch::ExactlyOne && count != 1 {
        return Err(ToolError::Failed(format!("Expected 1 occurrence, found {count}")));
    }
    let Some(edited) = edited else {
        return Err(ToolError::Failed(format!("text not found in {given}")));
    };
    atomic_write(path, edited.as_bytes())?;
    Ok(if count == 1 {
        format!("Edited {given}")
    } else {
        format!("Edited {given} (old_text occurs {count} times; replaced the first)")
    })
}

/// Replaces the first occurrence of `old` in `text` with `new`, comparing with every `\r\n` read
/// as `\n`, and returns the new text (`None` when `old` does not occur) and how many times `old`
/// occurs. Only the matched bytes change; `new` gets the file's dominant line ending.
fn replace_first(text: &str, old: &str, new: &str) -> (Option<String>, usize) {
    let plain = Lf::of(text);
    let old = Lf::of(old).text;
    let count = plain.text.matches(old.as_str()).count();
    let Some(at) = plain.text.find(old.as_str()) else { return (None, count) };
    let (start, end) = (plain.original(at), plain.original(at + old.len()));
    let new = Lf::of(new).text;
    let new = if plain.crlf_dominant() { new.replace('\n', "\r\n") } else { new };
    let mut out = String::with_capacity(text.len() - (end - start) + new.len());
    out.push_str(&text[..start]);
    out.push_str(&new);
    out.push_str(&text[end..]);
    (Some(out), count)
}

/// A text with each `\r\n` turned into `\n`, and where the dropped `\r`s were, to map a position
/// back to the original text.
struct Lf {
    text: String,
    /// For each dropped `\r`, the position (in `text`) of the `\n` that followed it; ascending.
    dropped: Vec<usize>,
    /// Line ends that were a bare `\n`.
    bare: usize,
}

impl Lf {
    fn of(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut dropped = Vec::new();
        let mut bare = 0;
        let mut rest = original;
        while let Some(i) = rest.find('\n') {
            let line = &rest[..i];
            match line.strip_suffix('\r') {
                Some(l) => {
                    text.push_str(l);
                    dropped.push(text.len());
                }
                None => {
                    text.push_str(line);
                    bare += 1;
                }
            }
            text.push('\n');
            rest = &rest[i + 1..];
        }
        text.push_str(rest);
        Self { text, dropped, bare }
    }

    /// The position in the original text of position `at` of `text`. A `\r` dropped just before
    /// `at` stays outside a match that starts or ends there.
    fn original(&self, at: usize) -> usize {
        at + self.dropped.partition_point(|&d| d < at)
    }

    fn crlf_dominant(&self) -> bool {
        self.dropped.len() > self.bare
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_files_match_lf_text_and_keep_their_line_ends() {
        let r = |t: &str, o: &str, n: &str| replace_first(t, o, n).0;
        assert_eq!(r("alpha\r\nbeta\r\n", "alpha\nbeta", "one\ntwo").as_deref(), Some("one\r\ntwo\r\n"));
        assert_eq!(r("alpha\r\nbeta\r\n", "beta", "gamma").as_deref(), Some("alpha\r\ngamma\r\n"));
        assert_eq!(r("alpha\r\nbeta\r\n", "alpha\n", "").as_deref(), Some("beta\r\n"));
        assert_eq!(r("a\nb\n", "a\nb", "x\ny").as_deref(), Some("x\ny\n"));
        // Mixed endings: bytes outside the match are untouched; the majority's ending is used,
        // LF on a tie.
        assert_eq!(r("a\r\nb\nc\r\n", "b\nc", "B\nC").as_deref(), Some("a\r\nB\r\nC\r\n"));
        assert_eq!(r("a\r\nb\n", "b", "x\ny").as_deref(), Some("a\r\nx\ny\n"));
        assert_eq!(r("x\ry\n", "x\ry", "z").as_deref(), Some("z\n"));
        assert_eq!(r("abc", "zz", "q"), None);
        assert_eq!(replace_first("ab\r\nab\r\n", "ab\n", "c").1, 2);
    }
}
