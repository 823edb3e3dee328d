//! `bash`: run a shell command in the workspace (course §1, s02).
//!
//! Input `{"command": string}`. The command runs as `sh -c COMMAND` in the workspace folder (by
//! its handle), in a session of its own with no controlling terminal, stdin from `/dev/null`,
//! without the harness's secrets in its environment, and inside the sandbox chosen with
//! `--sandbox` (see [`crate::process`] and [`crate::sandbox`]). The output is stdout followed by
//! stderr, trimmed, decoded lossily (an invalid byte becomes U+FFFD; course #510), and cut to the
//! first 50,000 characters followed by `... (N more characters)`; `(no output)` when empty. A
//! non-zero exit adds a last line `(exit code N)`, death by a signal `(killed by signal NAME)`
//! (ours); a chapter may ask for the course's later text instead, `Error: command exited with
//! status N` and the output ([`ExitStatusText`], s11–s15).
//!
//! With [`BashOutput::ExitCodeTail`] (course s17) the result is `exit_code=N` on the first line,
//! then the **last** characters of the trimmed output (stdout then stderr), however much was
//! printed, and nothing for an empty output: the end of a test run is where its verdict is. A
//! death by a signal is `exit_code=-N`, as Python reports it.
//!
//! Errors (`Error: …` for the model):
//! - a command containing a deny-list entry → `Dangerous command blocked` (course §1);
//! - still running after the timeout → `Timeout (120s)` (the configured seconds);
//! - `sh` cannot be started → `Cannot run sh: …`; the sandbox cannot be built → `Cannot set up
//!   the sandbox: …`.
//!
//! No process the command started outlives the call: when `sh` exits, on timeout, and when the
//! call's future is dropped (the user cancelled the turn), the harness kills every
//! process the command started, whatever session or process group it moved to
//! ([`crate::process`]). When `sh` exited on its own and left processes running, the result ends
//! with `(stopped N background process(es) it left running)`, so the model knows why its server is
//! gone. When a sandboxed command fails with `Permission denied` or the like, a last line says
//! what the sandbox allows ([`Sandbox::hint`]). Memory stays bounded whatever the command prints:
//! each stream keeps at most [`HEAD_BYTES`] and only counts the rest.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{MAX_OUTPUT_CHARS, cut_chars, spec};

pub mod deny;

use crate::dispatch::{Subject, Tool, ToolError, TypedTool};
use crate::messages::ToolSpec;
use crate::process::spawn_shell;
use crate::sandbox::Sandbox;
use crate::tools::{BashOutput, ToolOptions};
use crate::workspace::Workspace;
use deny::deny_list_match;

/// Bytes kept from the head of each of stdout and stderr: enough for 50,000 characters of up to
/// 4 bytes each. Everything after is counted, not stored.
pub const HEAD_BYTES: usize = 4 * MAX_OUTPUT_CHARS;

/// Size of the read buffer for each stream.
const CHUNK: usize = 64 * 1024;

/// The `bash` tool (course §1): `Run a shell command.`, input `command`. See the module docs for
/// the output and errors. Commands run in `ws`'s root, in `opts.sandbox`, and are killed after
/// `opts.bash_timeout`.
pub fn bash(ws: &Workspace, opts: &ToolOptions) -> impl Tool + use<> {
    Bash { ws: ws.clone(), opts: opts.clone() }
}

/// The `bash` tool's input.
#[derive(Deserialize)]
struct Args {
    command: String,
}

/// `bash` bound to its workspace and options (timeout, sandbox).
struct Bash {
    ws: Workspace,
    opts: ToolOptions,
}

impl TypedTool for Bash {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec("bash", "Run a shell command.", json!({"command": {"type": "string"}}), &["command"])
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::Command(args.command.clone())
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_command(&args.command, &self.ws, &self.opts).await
    }
}

/// Runs `command` as the `bash` tool does (deny list, `sh -c` in its own session and sandbox,
/// capped capture, timeout) in `ws`'s root and returns the text the model sees. Dropping the
/// future kills every process of the command's session.
///
/// # Errors
/// [`ToolError::Failed`] with `Dangerous command blocked`, `Timeout (Ns)`, `Cannot run sh: …` or
/// `Cannot set up the sandbox: …`.
pub async fn run_command(command: &str, ws: &Workspace, opts: &ToolOptions) -> Result<String, ToolError> {
    if deny_list_match(command).is_some() {
        return Err(ToolError::failed("Dangerous command blocked"));
    }
    let timeout = opts.bash_timeout;
    let confinement = opts
        .sandbox
        .confinement(ws)
        .map_err(|e| ToolError::failed(format!("Cannot set up the sandbox: {e}")))?;
    // Dropping `session` (a cancelled turn) ends the command and everything it started.
    let (mut child, mut session) = spawn_shell(command, ws.dir(), ws.root(), confinement)
        .map_err(|e| ToolError::failed(format!("Cannot run sh: {e}")))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    // The command has ended once `sh` has exited and everything `sh` left running is killed,
    // which also closes the pipes those held, so the readers reach EOF.
    let keep = Keep::of(opts.bash_output);
    let work =
        async { tokio::join!(capture(stdout, keep), capture(stderr, keep), session.finish(&mut child)) };
    match tokio::time::timeout(timeout, work).await {
        Ok((out, err, report)) => {
            let report = report.map_err(|e| ToolError::failed(format!("Cannot wait for sh: {e}")))?;
            let status = report.status.unwrap_or_else(|| ExitStatus::from_raw(0));
            if let BashOutput::ExitCodeTail { tail_chars } = opts.bash_output {
                return Ok(render_exit_code(out, err, status, report.stopped, &opts.sandbox, tail_chars));
            }
            match (opts.exit_status, ExitStatusText::returncode(status)) {
                (ExitStatusText::Note, _) | (_, None) => {
                    Ok(render(out, err, status, report.stopped, &opts.sandbox, true))
                }
                (ExitStatusText::Error, Some(code)) => {
                    let text = render(out, err, status, report.stopped, &opts.sandbox, false);
                    Err(ToolError::failed(ExitStatusText::error_text(code, &text)))
                }
                (ExitStatusText::ErrorUncut, Some(code)) => {
                    let text = render_uncut(out, err);
                    Err(ToolError::failed(ExitStatusText::error_text(code, &text)))
                }
            }
        }
        Err(_) => {
            session.stop();
            // Everything is killed within about two seconds; reap the child. One that does not
            // end (on Linux, a supervisor a command under `--sandbox off` stopped) is killed.
            if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            Err(ToolError::failed(format!("Timeout ({}s)", timeout.as_secs_f64())))
        }
    }
}

/// How `bash` reports a command that exited with a non-zero status (or was killed by a signal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExitStatusText {
    /// The output as on success, then a last line `(exit code N)` or `(killed by signal NAME)`
    /// (ours; s01–s10).
    #[default]
    Note,
    /// The course's s11, s13 and s15: `Error: command exited with status N` and, on the next
    /// line, the output as on success (cut at 50,000 characters, `(no output)` when empty). A
    /// signal is status `-N`, as Python's `returncode` gives it. The result is an error.
    Error,
    /// The course's s12: as [`ExitStatusText::Error`], but the output is not cut at 50,000
    /// characters (only what the capture keeps, [`HEAD_BYTES`] a stream, is shown) and empty
    /// output stays empty: `Error: command exited with status 1\n`.
    ErrorUncut,
}

impl ExitStatusText {
    /// The text after `Error: ` for a command that exited with `code` (not 0) and printed
    /// `output` (already rendered): `command exited with status N`, a newline, the output. The
    /// background commands of s11 and s15 word their failures the same way.
    pub fn error_text(code: i32, output: &str) -> String {
        format!("command exited with status {code}\n{output}")
    }

    /// The `N` of `command exited with status N` (Python's `returncode`), `None` for success.
    fn returncode(status: ExitStatus) -> Option<i32> {
        match (status.code(), status.signal()) {
            (Some(0), _) | (None, None) => None,
            (Some(code), _) => Some(code),
            (None, Some(sig)) => Some(-sig),
        }
    }
}

/// Which part of a stream is kept: its first bytes (s02's `bash`, a background command) or its
/// last (s17's `bash`), this many at most.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keep {
    /// The first this many bytes.
    Head(usize),
    /// The last this many bytes.
    Tail(usize),
}

impl Keep {
    fn of(output: BashOutput) -> Self {
        match output {
            BashOutput::Head => Keep::Head(HEAD_BYTES),
            // Enough bytes for that many characters of up to 4 bytes, and a character cut at the
            // start.
            BashOutput::ExitCodeTail { tail_chars } => Keep::Tail(4 * tail_chars + 4),
        }
    }
}

/// What one stream produced: its first bytes (or, with [`Keep::Tail`], its last), up to the
/// [`Keep`]'s cap, and a count of the rest. Shared with [`crate::process::background`], whose
/// caller sets the cap.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub(crate) head: Vec<u8>,
    /// Bytes read but not kept.
    pub(crate) dropped_bytes: u64,
    /// Characters in the dropped bytes, counted as UTF-8 lead bytes (exact for valid UTF-8).
    pub(crate) dropped_chars: u64,
}

/// Reads `stream` to EOF keeping the head (or the tail) and counting the rest. A read error ends
/// the capture.
async fn capture<R: AsyncRead + Unpin>(stream: Option<R>, keep: Keep) -> Captured {
    let mut cap = Captured::default();
    capture_into(stream, keep, &mut cap).await;
    cap
}

/// Reads `stream` to EOF into `cap`, keeping the part `keep` says and counting the rest. What
/// was read stays in `cap` if the future is dropped first (a command stopped on its timeout). A
/// read error ends the capture.
pub(crate) async fn capture_into<R: AsyncRead + Unpin>(stream: Option<R>, keep: Keep, cap: &mut Captured) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let keep = match keep {
            Keep::Head(bytes) => bytes,
            Keep::Tail(max) => {
                cap.head.extend_from_slice(chunk);
                // Dropping from the front once the buffer holds twice the tail keeps the copying
                // linear in the output.
                if cap.head.len() > 2 * max {
                    let cut = cap.head.len() - max;
                    cap.dropped_bytes += cut as u64;
                    cap.head.drain(..cut);
                }
                continue;
            }
        };
        let room = keep.saturating_sub(cap.head.len()).min(n);
        cap.head.extend_from_slice(&chunk[..room]);
        let rest = &chunk[room..];
        cap.dropped_bytes += rest.len() as u64;
        cap.dropped_chars += bytecount::num_chars(rest) as u64;
    }
}

/// Builds the model's text from both streams, the exit status (its `(exit code N)` line only with
/// `exit_note`: the s11 wording puts the code in front instead), how many background processes
/// were stopped, and the sandbox's hint for a failure it may have caused.
fn render(
    out: Captured,
    err: Captured,
    status: ExitStatus,
    stopped: usize,
    sandbox: &Sandbox,
    exit_note: bool,
) -> String {
    let mut text = String::from_utf8_lossy(&out.head).into_owned();
    let mut unseen: u64 = out.dropped_chars;
    if out.dropped_bytes == 0 {
        text.push_str(&String::from_utf8_lossy(&err.head));
        unseen += err.dropped_chars;
    } else {
        // stdout alone already exceeds the cut; stderr comes after it and is not shown.
        unseen += String::from_utf8_lossy(&err.head).chars().count() as u64 + err.dropped_chars;
    }
    let (kept, more) = cut_chars(text.trim(), MAX_OUTPUT_CHARS);
    let more = more as u64 + unseen;
    let mut result = if kept.is_empty() { "(no output)".to_owned() } else { kept.to_owned() };
    if more > 0 {
        // A cut right after a newline needs no second one (no blank line before the note).
        if !result.ends_with('\n') {
            result.push('\n');
        }
        result.push_str(&format!("... ({more} more characters)"));
    }
    let status = status_line(status);
    let hint = status.as_ref().and_then(|_| sandbox.hint(&result));
    let status = status.filter(|line| exit_note || !line.starts_with("(exit code"));
    let stopped = stopped_note(stopped);
    for line in [status, stopped, hint.map(str::to_owned)].into_iter().flatten() {
        result.push('\n');
        result.push_str(&line);
    }
    result
}

/// Both streams as captured, trimmed, without the 50,000-character cut and without
/// `(no output)` ([`ExitStatusText::ErrorUncut`]); what the capture did not keep is counted in a
/// last line.
fn render_uncut(out: Captured, err: Captured) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.head), String::from_utf8_lossy(&err.head));
    let mut result = text.trim().to_owned();
    let unseen = out.dropped_chars + err.dropped_chars;
    if unseen > 0 {
        result.push_str(&format!("\n... ({unseen} more characters)"));
    }
    result
}

/// The s17 result ([`BashOutput::ExitCodeTail`]): `exit_code=N`, then the last `tail_chars`
/// characters of stdout and stderr together, trimmed; then the notes `render` adds after the
/// output (processes stopped, the sandbox's hint).
fn render_exit_code(
    out: Captured,
    err: Captured,
    status: ExitStatus,
    stopped: usize,
    sandbox: &Sandbox,
    tail_chars: usize,
) -> String {
    let mut text = String::from_utf8_lossy(&out.head).into_owned();
    text.push_str(&String::from_utf8_lossy(&err.head));
    let trimmed = text.trim();
    let count = trimmed.chars().count();
    let tail = match trimmed.char_indices().nth(count.saturating_sub(tail_chars)) {
        Some((at, _)) => &trimmed[at..],
        None => trimmed,
    };
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => -sig,
        (None, None) => 0,
    };
    let mut result = format!("exit_code={code}\n{tail}");
    let hint = (code != 0).then(|| sandbox.hint(tail)).flatten();
    let stopped = stopped_note(stopped);
    for line in [stopped, hint.map(str::to_owned)].into_iter().flatten() {
        result.push('\n');
        result.push_str(&line);
    }
    result
}

/// `(stopped N background process(es) it left running)`, for N > 0.
fn stopped_note(stopped: usize) -> Option<String> {
    match stopped {
        0 => None,
        1 => Some("(stopped 1 background process it left running)".to_owned()),
        n => Some(format!("(stopped {n} background processes it left running)")),
    }
}

/// `(exit code N)` for a non-zero exit, `(killed by signal NAME)` for a signal; `None` for 0.
fn status_line(status: ExitStatus) -> Option<String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("(exit code {code})")),
        (None, Some(sig)) => Some(match Signal::try_from(sig) {
            Ok(s) => format!("(killed by signal {})", s.as_str()),
            Err(_) => format!("(killed by signal {sig})"),
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_overflow_counts_stderr_as_unseen() {
        let out = Captured { head: vec![b'a'; HEAD_BYTES], dropped_bytes: 10, dropped_chars: 10 };
        let err = Captured { head: b"err".to_vec(), ..Default::default() };
        let text = render(out, err, ExitStatus::from_raw(0), 0, &Sandbox::default(), true);
        let more = (HEAD_BYTES - MAX_OUTPUT_CHARS) + 10 + 3;
        assert!(text.ends_with(&format!("\n... ({more} more characters)")), "{}", &text[MAX_OUTPUT_CHARS..]);
    }

    #[test]
    fn the_s17_result_keeps_the_exit_code_and_the_tail() {
        let out = Captured { head: format!("  {}", "é".repeat(20)).into_bytes(), ..Default::default() };
        let err = Captured { head: b"END\n".to_vec(), ..Default::default() };
        let text = render_exit_code(out, err, ExitStatus::from_raw(7 << 8), 0, &Sandbox::default(), 10);
        assert_eq!(text, format!("exit_code=7\n{}END", "é".repeat(7)));
        let empty = render_exit_code(
            Captured::default(),
            Captured::default(),
            ExitStatus::from_raw(9),
            0,
            &Sandbox::default(),
            10,
        );
        assert_eq!(empty, "exit_code=-9\n");
    }

    #[test]
    fn status_lines() {
        assert_eq!(status_line(ExitStatus::from_raw(0)), None);
        assert_eq!(ExitStatusText::returncode(ExitStatus::from_raw(0)), None);
        assert_eq!(ExitStatusText::returncode(ExitStatus::from_raw(3 << 8)), Some(3));
        assert_eq!(ExitStatusText::returncode(ExitStatus::from_raw(9)), Some(-9));
        assert_eq!(status_line(ExitStatus::from_raw(3 << 8)).as_deref(), Some("(exit code 3)"));
        assert_eq!(status_line(ExitStatus::from_raw(9)).as_deref(), Some("(killed by signal SIGKILL)"));
    }
}
