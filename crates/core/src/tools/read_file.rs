//! `read_file`: show a file's lines (course §1, s02).
//!
//! Input `{"path": string, "limit"?: integer}`. Output: the file's lines joined by `\n` (a line
//! ends at `\n`; a `\r` before it is dropped; a final newline adds no empty line). With `limit` <
//! line count: the first `limit` lines, then `... (N more lines)`. `limit` 0 means no limit, as
//! in the course (where `0` is falsy).
//!
//! Bounded memory and I/O (ours): the file is streamed in 64 KiB chunks. At most [`HEAD_BYTES`]
//! of the shown lines are kept. After them, at most [`COUNT_BYTES`] more are scanned to count the
//! remaining lines: within that budget the count is exact (`... (N more lines)`); past it reading
//! stops and the note says what is left, `... (at least N more lines; B more bytes not read)`, so
//! `limit: 10` on a 100 MB file reads about 4 MiB, not 100 MB. When the shown text exceeds 50,000
//! characters it is cut there and followed by `... (output cut at 50000 characters; N more
//! lines)`, N counting every line not shown in full (with the same `at least …` form past the
//! budget).
//!
//! The file is opened beneath the workspace handle without blocking, and its type is checked on
//! the open file (`fstat`): a FIFO or device, even one swapped in after the path was checked, is
//! refused at once instead of hanging the harness.
//!
//! With [`ReadLines::Window`] (course s17, [`read_file_with`]) the input is
//! `{"path", "offset"?, "limit"?}`: `limit` lines (default 200, held to 1..=500) from the 1-based
//! line `offset` (default 1, at least 1), joined by `\n`, with no note about the lines left; the
//! file is read only as far as the last of them. The shown text is still cut at 50,000
//! characters (`... (output cut at 50000 characters)`), since one line may be a megabyte.
//!
//! Errors (`Error: …` for the model): the workspace rule; `File not found: PATH`;
//! `PATH is a folder, not a file`; `PATH is not a regular file` (a FIFO, socket or device);
//! `PATH is a binary file (N bytes); not shown` when the first
//! 8 KiB hold a NUL byte or are mostly (over a quarter) invalid UTF-8; other I/O errors as
//! `Cannot read PATH: …`. PATH is always the path as the model gave it.

use std::borrow::Cow;
use std::io::{self, Read};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::{MAX_OUTPUT_CHARS, cut_chars, spec};
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::tools::ReadLines;
use crate::workspace::{Opened, Workspace, WsPath};

/// Bytes of the shown lines kept in memory: enough for 50,000 characters of up to 4 bytes each.
const HEAD_BYTES: usize = 4 * MAX_OUTPUT_CHARS + 4;
/// How much of the start of a file is inspected to decide that it is binary.
const SNIFF_BYTES: usize = 8 * 1024;
const CHUNK: usize = 64 * 1024;
/// Files up to this size are read without the blocking pool.
const INLINE_BYTES: u64 = 64 * 1024;
/// How many bytes after the shown lines are scanned to count the lines left.
pub const COUNT_BYTES: u64 = 4 * 1024 * 1024;

/// The `read_file` tool (course §1): `Read file contents.`, input `path` and optional integer
/// `limit`. See the module docs for the output and errors.
pub fn read_file(ws: &Workspace) -> impl Tool + use<> {
    ReadFile(ws.clone())
}

/// The `read_file` tool showing the lines `lines` says: [`read_file`]'s with
/// [`ReadLines::Head`], s17's window (input `path`, `offset`, `limit`) with [`ReadLines::Window`].
pub fn read_file_with(ws: &Workspace, lines: ReadLines) -> impl Tool + use<> {
    match lines {
        ReadLines::Head => ReadFileTool::Head(Arc::new(ReadFile(ws.clone()))),
        ReadLines::Skip => ReadFileTool::Skip(Arc::new(ReadSkip(ws.clone()))),
        ReadLines::Window { default_limit, max_limit } => ReadFileTool::Window(Arc::new(ReadWindow {
            ws: ws.clone(),
            default_limit,
            max_limit: max_limit.max(1),
        })),
    }
}

/// Either `read_file`, as the dispatch map holds it.
enum ReadFileTool {
    Head(Arc<ReadFile>),
    Window(Arc<ReadWindow>),
    Skip(Arc<ReadSkip>),
}

impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        match self {
            ReadFileTool::Head(t) => TypedTool::spec(&**t),
            ReadFileTool::Window(t) => TypedTool::spec(&**t),
            ReadFileTool::Skip(t) => TypedTool::spec(&**t),
        }
    }

    fn prepare(self: Arc<Self>, input: &serde_json::Value) -> Result<crate::dispatch::Prepared, ToolError> {
        match &*self {
            ReadFileTool::Head(t) => Tool::prepare(Arc::clone(t), input),
            ReadFileTool::Window(t) => Tool::prepare(Arc::clone(t), input),
            ReadFileTool::Skip(t) => Tool::prepare(Arc::clone(t), input),
        }
    }
}

/// The `read_file` tool's input.
#[derive(Deserialize)]
struct Args {
    path: String,
    limit: Option<u64>,
}

/// `read_file` bound to its workspace.
struct ReadFile(Workspace);

impl TypedTool for ReadFile {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec(
            "read_file",
            "Read file contents.",
            json!({"path": {"type": "string"}, "limit": {"type": "integer"}}),
            &["path"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::Path(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        let limit = args.limit.filter(|&l| l > 0);
        // Opening never blocks (see `open_regular`). A small file is then read here and now:
        // handing it to the blocking pool costs two thread wake-ups, more than the read itself
        // (measured by the bench). A larger one is read on the blocking pool.
        let path = self.0.open_path(&args.path)?;
        let (file, meta) = open_regular(&path)?;
        if meta.len() <= INLINE_BYTES {
            return read(file, &meta, path.given(), limit);
        }
        let given = path.given().to_owned();
        run_blocking("read_file", move || read(file, &meta, &given, limit)).await
    }
}

/// `read_file` with s15's 0-based `offset` ([`ReadLines::Skip`]).
struct ReadSkip(Workspace);

/// The input of s15's `read_file`.
#[derive(Deserialize)]
struct SkipArgs {
    path: String,
    limit: Option<u64>,
    offset: Option<i64>,
}

impl TypedTool for ReadSkip {
    type Args = SkipArgs;

    fn spec(&self) -> ToolSpec {
        spec(
            "read_file",
            "Read file contents.",
            json!({"path": {"type": "string"}, "limit": {"type": "integer"}, "offset": {"type": "integer"}}),
            &["path"],
        )
    }

    fn subject(&self, args: &SkipArgs) -> Subject {
        Subject::Path(args.path.clone())
    }

    /// The head read of `offset + limit` lines, less its first `offset`: the note of the lines
    /// left (`... (N more lines)`) is then the course's `len(lines[offset:]) - limit`.
    async fn run(self: Arc<Self>, args: SkipArgs) -> Result<String, ToolError> {
        let skip = u64::try_from(args.offset.unwrap_or(0)).unwrap_or(0);
        let limit = args.limit.filter(|&l| l > 0).map(|l| l.saturating_add(skip));
        let path = self.0.open_path(&args.path)?;
        let (file, meta) = open_regular(&path)?;
        let given = path.given().to_owned();
        let text = run_blocking("read_file", move || read(file, &meta, &given, limit)).await?;
        let skip = usize::try_from(skip).unwrap_or(usize::MAX);
        Ok(if skip == 0 {
            text
        } else {
            text.splitn(skip.saturating_add(1), '\n').nth(skip).unwrap_or("").to_owned()
        })
    }
}

/// The window `read_file`'s input: numbers as the model sends them, held to their range later.
#[derive(Deserialize)]
struct WindowArgs {
    path: String,
    offset: Option<i64>,
    limit: Option<i64>,
}

/// `read_file` with s17's window ([`ReadLines::Window`]).
struct ReadWindow {
    ws: Workspace,
    default_limit: u64,
    max_limit: u64,
}

impl TypedTool for ReadWindow {
    type Args = WindowArgs;

    fn spec(&self) -> ToolSpec {
        spec(
            "read_file",
            "Read file contents.",
            json!({"path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}),
            &["path"],
        )
    }

    fn subject(&self, args: &WindowArgs) -> Subject {
        Subject::Path(args.path.clone())
    }

    async fn run(self: Arc<Self>, args: WindowArgs) -> Result<String, ToolError> {
        let offset = u64::try_from(args.offset.unwrap_or(1)).unwrap_or(0).max(1);
        let limit = match args.limit {
            None => self.default_limit,
            Some(l) => u64::try_from(l).unwrap_or(0),
        }
        .clamp(1, self.max_limit);
        let path = self.ws.locate(&args.path)?;
        let (file, _meta) = open_regular(&path)?;
        let given = path.given().to_owned();
        run_blocking("read_file", move || read_window(file, &given, offset, limit)).await
    }
}

/// Lines `offset..offset + limit` (1-based) of the open regular file `file`, as the module docs
/// say; blocking. Reading stops after the last of them.
fn read_window(
    mut file: cap_std::fs::File,
    given: &str,
    offset: u64,
    limit: u64,
) -> Result<String, ToolError> {
    let (first, end) = (offset - 1, (offset - 1).saturating_add(limit));
    let mut buf = vec![0u8; CHUNK];
    let (mut line, mut kept, mut full, mut sniffed) = (0u64, Vec::new(), false, false);
    'read: loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ToolError::Failed(format!("Cannot read {given}: {e}"))),
        };
        if !sniffed {
            sniffed = true;
            if looks_binary(&buf[..n.min(SNIFF_BYTES)], n < SNIFF_BYTES) {
                return Err(ToolError::Failed(format!("{given} is a binary file; not shown")));
            }
        }
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            let (piece, ends_line) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (&chunk[..=at], true),
                None => (chunk, false),
            };
            if line >= first && !full {
                let take = piece.len().min(HEAD_BYTES - kept.len());
                kept.extend_from_slice(&piece[..take]);
                full = take < piece.len();
            }
            chunk = &chunk[piece.len()..];
            if ends_line {
                line += 1;
                if line >= end {
                    break 'read;
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&kept);
    let lines = text.matches('\n').count() + usize::from(!text.is_empty() && !text.ends_with('\n'));
    let joined = join_lines(&text, lines);
    let (shown, cut) = cut_chars(&joined, MAX_OUTPUT_CHARS);
    Ok(if cut > 0 || full {
        format!("{shown}\n... (output cut at {MAX_OUTPUT_CHARS} characters)")
    } else {
        joined
    })
}

/// Reads the open regular file `file` (`given` is its path as the model gave it) as described
/// in the module docs; blocking.
fn read(
    mut file: cap_std::fs::File,
    meta: &cap_std::fs::Metadata,
    given: &str,
    limit: Option<u64>,
) -> Result<String, ToolError> {
    let io_err = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => ToolError::Failed(format!("File not found: {given}")),
        _ => ToolError::Failed(format!("Cannot read {given}: {e}")),
    };
    let mut scan = Scan::new(limit);
    // No larger than the file needs (zeroing 64 KiB for a 1 KB file cost more than reading it):
    // its size and one byte, so the first read can see its end, at most CHUNK.
    let size = usize::try_from(meta.len()).unwrap_or(CHUNK).saturating_add(1).clamp(1, CHUNK);
    let mut buf = vec![0u8; size];
    let mut first = true;
    let mut read_total: u64 = 0;
    let mut counted_after: u64 = 0;
    loop {
        if scan.done_showing() && counted_after >= COUNT_BYTES {
            scan.unread = meta.len().saturating_sub(read_total);
            break;
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(e)),
        };
        if first {
            first = false;
            let sniff = &buf[..n.min(SNIFF_BYTES)];
            // The sniff is the whole file when the read stopped short of a full buffer.
            if looks_binary(sniff, n < SNIFF_BYTES && n < buf.len()) {
                return Err(ToolError::Failed(format!(
                    "{given} is a binary file ({} bytes); not shown",
                    meta.len()
                )));
            }
        }
        read_total += n as u64;
        if scan.done_showing() {
            counted_after += n as u64;
        }
        scan.feed(&buf[..n]);
    }
    Ok(scan.finish())
}

/// Opens `path` for reading, refusing folders and special files without ever blocking (see
/// [`WsPath::open_read`]): a FIFO swapped in at any moment is an error, not a hang. Shared by
/// `read_file` and `edit_file`.
///
/// # Errors
/// `File not found: PATH`, `PATH is a folder, not a file`, `PATH is not a regular file`,
/// `Cannot read PATH: …`.
pub(crate) fn open_regular(path: &WsPath) -> Result<(cap_std::fs::File, cap_std::fs::Metadata), ToolError> {
    let given = path.given();
    match path.open_read() {
        Ok(Opened::File(file, meta)) => Ok((file, meta)),
        Ok(Opened::Folder) => Err(ToolError::Failed(format!("{given} is a folder, not a file"))),
        Ok(Opened::Special) => Err(ToolError::Failed(format!("{given} is not a regular file"))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(ToolError::Failed(format!("File not found: {given}")))
        }
        Err(e) => Err(ToolError::Failed(format!("Cannot read {given}: {e}"))),
    }
}

/// A NUL byte, or more than a quarter of the bytes invalid UTF-8. `complete` says `sniff` is the
/// whole file, so a multi-byte character cut at its end is invalid rather than truncated.
fn looks_binary(sniff: &[u8], complete: bool) -> bool {
    if sniff.contains(&0) {
        return true;
    }
    let mut invalid = 0usize;
    let mut rest = sniff;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(_) => break,
            Err(e) => {
                let bad = match e.error_len() {
                    Some(len) => len,
                    None if complete => rest.len() - e.valid_up_to(),
                    None => break, // a character cut by the 8 KiB window
                };
                invalid += bad;
                rest = &rest[e.valid_up_to() + bad..];
            }
        }
    }
    invalid * 4 > sniff.len()
}

/// The first `count` lines of `text` (split at `\n`, a `\r` before it dropped), joined by `\n`:
/// one pass with `memchr` into one buffer.
fn join_lines(text: &str, count: usize) -> String {
    let mut joined = String::with_capacity(text.len());
    let mut rest = text;
    for i in 0..count {
        let (line, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
            // `\n` is ASCII, so both sides are on character boundaries.
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        if i > 0 {
            joined.push('\n');
        }
        joined.push_str(line.strip_suffix('\r').unwrap_or(line));
        match next {
            Some(next) => rest = next,
            None => break,
        }
    }
    joined
}

/// The streaming state: the kept head of the shown lines, and line counts.
struct Scan {
    limit: Option<u64>,
    head: Vec<u8>,
    /// The head stopped short of the shown lines because of [`HEAD_BYTES`].
    head_full: bool,
    /// Newlines seen so far.
    newlines: u64,
    /// The last byte seen, to know whether the last line ends with a newline.
    last: Option<u8>,
    /// Bytes of the file never read because the counting budget ran out; 0 when read to the end.
    unread: u64,
}

impl Scan {
    fn new(limit: Option<u64>) -> Self {
        Self { limit, head: Vec::new(), head_full: false, newlines: 0, last: None, unread: 0 }
    }

    /// Every shown line has been kept (or the head is full): what follows is only counted.
    fn done_showing(&self) -> bool {
        self.head_full || self.limit.is_some_and(|l| self.newlines >= l)
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        if let Some(&b) = chunk.last() {
            self.last = Some(b);
        }
        // Keep bytes while still inside the shown lines and below the byte cap.
        if !self.done_showing() {
            self.head.reserve(chunk.len().min(HEAD_BYTES - self.head.len()));
        }
        while !chunk.is_empty() && !self.head_full && self.limit.is_none_or(|l| self.newlines < l) {
            let room = HEAD_BYTES - self.head.len();
            if room == 0 {
                self.head_full = true;
                break;
            }
            let take = match memchr::memchr(b'\n', chunk) {
                Some(i) => i + 1,
                None => chunk.len(),
            }
            .min(room);
            let piece = &chunk[..take];
            self.head.extend_from_slice(piece);
            if piece.last() == Some(&b'\n') {
                self.newlines += 1;
            }
            chunk = &chunk[take..];
        }
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
    }

    fn finish(self) -> String {
        // Past the counting budget, the partial last line counts as one more line.
        let total = self.newlines + u64::from(self.unread > 0 || self.last.is_some_and(|b| b != b'\n'));
        let more = |n: u64| match self.unread {
            0 => format!("{n} more lines"),
            unread => format!("at least {n} more lines; {unread} more bytes not read"),
        };
        let shown = self.limit.map_or(total, |l| l.min(total));
        // Valid UTF-8 (the usual case) is checked at memory speed; only a file with invalid
        // bytes takes the slower lossy path.
        let text = match std::str::from_utf8(&self.head) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(&self.head),
        };
        let joined = join_lines(&text, usize::try_from(shown).unwrap_or(usize::MAX));
        let (kept, cut) = cut_chars(&joined, MAX_OUTPUT_CHARS);
        if cut > 0 || self.head_full {
            let full_lines = kept.matches('\n').count() as u64;
            format!(
                "{kept}\n... (output cut at {MAX_OUTPUT_CHARS} characters; {})",
                more(total.saturating_sub(full_lines))
            )
        } else if shown < total {
            format!("{joined}\n... ({})", more(total - shown))
        } else {
            joined
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &[u8], limit: Option<u64>, chunk: usize) -> String {
        let mut s = Scan::new(limit);
        for c in text.chunks(chunk) {
            s.feed(c);
        }
        s.finish()
    }

    #[test]
    fn lines_and_limits_whatever_the_chunking() {
        for chunk in [1, 2, 3, 1000] {
            assert_eq!(scan(b"a\nb\nc\n", None, chunk), "a\nb\nc");
            assert_eq!(scan(b"a\r\nb\nc", None, chunk), "a\nb\nc");
            assert_eq!(scan(b"a\nb\nc\n", Some(2), chunk), "a\nb\n... (1 more lines)");
            assert_eq!(scan(b"a\nb\nc", Some(3), chunk), "a\nb\nc");
            assert_eq!(scan(b"a\n\n", None, chunk), "a\n");
            assert_eq!(scan(b"", None, chunk), "");
        }
    }

    #[test]
    fn the_window_is_one_based_and_reads_no_further_than_it_shows() {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join("f.txt"), "one\r\ntwo\nthree\n\nfive").expect("written");
        let root = cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).expect("dir");
        let window = |offset, limit| {
            let file = root.open("f.txt").expect("open");
            read_window(file, "f.txt", offset, limit).expect("read")
        };
        assert_eq!(window(1, 200), "one\ntwo\nthree\n\nfive");
        assert_eq!(window(2, 2), "two\nthree");
        assert_eq!(window(4, 1), "");
        assert_eq!(window(5, 9), "five");
        assert_eq!(window(9, 9), "");
    }

    #[test]
    fn binary_sniffing() {
        assert!(looks_binary(b"ab\0c", true));
        assert!(looks_binary(&[0xff; 100], true));
        assert!(!looks_binary("héllo wörld".as_bytes(), true));
        assert!(!looks_binary(&"é".as_bytes()[..1], false));
    }
}
