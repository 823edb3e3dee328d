//! `bash`: run a shell command in the workspace (course §1, s02).
//!
//! Input `{"command": string}`. The command runs as `sh -c COMMAND` with cwd = the workspace root,
//! stdin from `/dev/null`, in its own process group. The output is stdout followed by stderr,
//! trimmed, decoded lossily (an invalid byte becomes U+FFFD; course #510), and cut to the first
//! 50,000 characters followed by `... (N more characters)`; `(no output)` when empty. A non-zero
//! exit adds a last line `(exit code N)`, death by a signal `(killed by signal NAME)` (ours).
//!
//! Errors (`Error: …` for the model):
//! - a command containing a deny-list entry → `Dangerous command blocked` (course §1);
//! - still running after the timeout → `Timeout (120s)` (the configured seconds);
//! - `sh` cannot be started → `Cannot run sh: …`.
//!
//! No process the command started outlives the call (see NOTES "Killing a shell command for
//! real"): when `sh` exits, on timeout, and when the call's future is dropped (the user cancelled
//! the turn), the whole process group gets `SIGKILL`. Memory stays bounded whatever the command
//! prints: each stream keeps at most [`HEAD_BYTES`] and only counts the rest.
//! Limit: a process that leaves the group on purpose (`setsid`) escapes the kill; if it keeps
//! the output pipe open, the call waits for the timeout.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::{MAX_OUTPUT_CHARS, cut_chars, spec};
use crate::dispatch::{Subject, Tool, ToolError, TypedTool};
use crate::messages::ToolSpec;
use crate::permission::deny_list_match;
use crate::tools::ToolOptions;
use crate::workspace::Workspace;

/// Bytes kept from the head of each of stdout and stderr: enough for 50,000 characters of up to
/// 4 bytes each. Everything after is counted, not stored.
pub const HEAD_BYTES: usize = 4 * MAX_OUTPUT_CHARS;

/// Size of the read buffer for each stream.
const CHUNK: usize = 64 * 1024;

/// The `bash` tool (course §1): `Run a shell command.`, input `command`. See the module docs for
/// the output and errors. Commands run in `ws`'s root and are killed after `opts.bash_timeout`.
pub fn bash(ws: &Workspace, opts: &ToolOptions) -> impl Tool + use<> {
    Bash { root: ws.root().to_path_buf(), timeout: opts.bash_timeout }
}

/// The `bash` tool's input.
#[derive(Deserialize)]
struct Args {
    command: String,
}

/// `bash` bound to its folder and timeout.
struct Bash {
    root: PathBuf,
    timeout: Duration,
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
        run_command(&args.command, &self.root, self.timeout).await
    }
}

/// Runs `command` as the `bash` tool does (deny list, `sh -c`, process group, capped capture,
/// timeout) in folder `cwd` and returns the text the model sees. Dropping the future kills the
/// command's process group.
///
/// # Errors
/// [`ToolError::Failed`] with `Dangerous command blocked`, `Timeout (Ns)` or `Cannot run sh: …`.
pub async fn run_command(command: &str, cwd: &Path, timeout: Duration) -> Result<String, ToolError> {
    if deny_list_match(command).is_some() {
        return Err(ToolError::failed("Dangerous command blocked"));
    }
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::failed(format!("Cannot run sh: {e}")))?;
    // Declared after `child`, so it drops first: the group dies, then tokio reaps `sh`.
    let guard = GroupGuard { pgid: child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) };
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    let work = async {
        tokio::join!(capture(stdout), capture(stderr), async {
            let status = child.wait().await;
            // `sh` is done: anything it left running in the background dies now, which also
            // closes the pipes it held so the readers reach EOF.
            guard.kill();
            status
        })
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((out, err, status)) => {
            let status = status.map_err(|e| ToolError::failed(format!("Cannot wait for sh: {e}")))?;
            Ok(render(out, err, status))
        }
        Err(_) => {
            guard.kill();
            // `sh` got SIGKILL with its group; reap it so no zombie is left behind.
            let _ = child.wait().await;
            Err(ToolError::failed(format!("Timeout ({}s)", timeout.as_secs_f64())))
        }
    }
}

/// Kills the command's whole process group when dropped (a cancelled turn) or asked to.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl GroupGuard {
    /// `killpg(pgid, SIGKILL)`; an already empty group (`ESRCH`) is fine.
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one stream produced: its first [`HEAD_BYTES`] bytes, and a count of the rest.
#[derive(Default)]
struct Captured {
    head: Vec<u8>,
    /// Bytes read but not kept.
    dropped_bytes: u64,
    /// Characters in the dropped bytes, counted as UTF-8 lead bytes (exact for valid UTF-8).
    dropped_chars: u64,
}

/// Reads `stream` to EOF keeping the head and counting the rest. A read error ends the capture.
async fn capture<R: AsyncRead + Unpin>(stream: Option<R>) -> Captured {
    let mut cap = Captured::default();
    let Some(mut stream) = stream else { return cap };
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buf[..n];
        let room = HEAD_BYTES.saturating_sub(cap.head.len()).min(n);
        cap.head.extend_from_slice(&chunk[..room]);
        let rest = &chunk[room..];
        cap.dropped_bytes += rest.len() as u64;
        cap.dropped_chars += bytecount::num_chars(rest) as u64;
    }
    cap
}

/// Builds the model's text from both streams and the exit status.
fn render(out: Captured, err: Captured, status: ExitStatus) -> String {
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
    if let Some(line) = status_line(status) {
        result.push('\n');
        result.push_str(&line);
    }
    result
}

/// `(exit code N)` for a non-zero exit, `(killed by signal NAME)` for a signal; `None` for 0.
fn status_line(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
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
        use std::os::unix::process::ExitStatusExt;
        let out = Captured { head: vec![b'a'; HEAD_BYTES], dropped_bytes: 10, dropped_chars: 10 };
        let err = Captured { head: b"err".to_vec(), ..Default::default() };
        let text = render(out, err, ExitStatus::from_raw(0));
        let more = (HEAD_BYTES - MAX_OUTPUT_CHARS) + 10 + 3;
        assert!(text.ends_with(&format!("\n... ({more} more characters)")), "{}", &text[MAX_OUTPUT_CHARS..]);
    }

    #[test]
    fn status_lines() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status_line(ExitStatus::from_raw(0)), None);
        assert_eq!(status_line(ExitStatus::from_raw(3 << 8)).as_deref(), Some("(exit code 3)"));
        assert_eq!(status_line(ExitStatus::from_raw(9)).as_deref(), Some("(killed by signal SIGKILL)"));
    }
}
