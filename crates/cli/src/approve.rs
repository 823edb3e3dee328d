//! Asking the user on the terminal: `Allow? [y/N]` (course s04/s05), and the `--yes`/`--no`
//! flags.
//!
//! [`TerminalApprover`] is the terminal's [`Approver`] (reading `/dev/tty`, giving up on Ctrl-C);
//! [`ApprovalArgs`] are the flags a chapter with the permission hook flattens into its command
//! line. The trait and the approvers that need no terminal live in [`agent_core::approve`].
//!
//! Only the user answers: the question is shown whole, wrapped to the terminal's width and never
//! cut, with control and bidi characters as visible escapes ([`render_question`]); and input
//! that was already waiting on the terminal (keystrokes a command pushed with `TIOCSTI`, or typed
//! ahead) is discarded with `tcflush` before the answer is read, so a command cannot answer its
//! own question.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::approve::{Approver, FixedApprover};
use agent_core::sanitize::sanitize;

/// Asks on the terminal: prints [`render_question`] on stderr, discards pending terminal input,
/// and reads one line from `/dev/tty`. Only `y` or `yes` (any case, trimmed) allows. With no
/// terminal (stdin or stderr redirected, no `/dev/tty`, a read error) the answer is no, so a
/// scripted run never hangs. Ctrl-C while it waits answers no at once; the same signal then
/// cancels the turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&mut self, question: &str) -> bool {
        let mut stderr = std::io::stderr();
        let width = terminal_size::terminal_size_of(&stderr).map_or(100, |(w, _)| usize::from(w.0));
        let shown = render_question(question, width);
        if !std::io::stdin().is_terminal() || !stderr.is_terminal() {
            // Say so: a refusal nobody typed must not look like the user's answer.
            let _ = writeln!(stderr, "{shown}no (no terminal to ask; pass --yes to allow)");
            return false;
        }
        let Ok(tty) = std::fs::File::open("/dev/tty") else { return false };
        if write!(stderr, "{shown}").and_then(|()| stderr.flush()).is_err() {
            return false;
        }
        // Only what is typed after the question answers it: keystrokes a command injected into
        // the terminal (TIOCSTI) or typed ahead are dropped.
        let _ = nix::sys::termios::tcflush(&tty, nix::sys::termios::FlushArg::TCIFLUSH);
        // The read blocks the turn, so the REPL's Ctrl-C handler cannot run until it returns:
        // watch for SIGINT here too and give up the read when it comes.
        let interrupted = Arc::new(AtomicBool::new(false));
        let registration = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted));
        let answer = read_tty_line(&tty, &interrupted);
        if let Ok(id) = registration {
            signal_hook::low_level::unregister(id);
        }
        match answer {
            Some(line) => is_yes(&line),
            None => {
                let _ = writeln!(stderr);
                false
            }
        }
    }
}

/// The question as the terminal shows it: control and bidi characters as visible escapes
/// ([`sanitize`]), each line wrapped at `width` characters (at least 20) and never cut, then
/// `Allow? [y/N] ` on a line of its own.
pub fn render_question(question: &str, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::new();
    for line in sanitize(question).split('\n') {
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push('\n');
        }
        for piece in chars.chunks(width) {
            out.extend(piece);
            out.push('\n');
        }
    }
    out.push_str("Allow? [y/N] ");
    out
}

/// One line from the terminal, or `None` when `stop` is set (Ctrl-C) or the terminal fails.
/// Polls every 100 ms so that a signal is noticed even when the read would restart.
fn read_tty_line(tty: &std::fs::File, stop: &AtomicBool) -> Option<String> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::io::Read;
    use std::os::fd::AsFd;
    let mut line = Vec::new();
    loop {
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        let mut fds = [PollFd::new(tty.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(100u16)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        let mut buf = [0u8; 256];
        match (&*tty).read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&line).into_owned()),
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if line.contains(&b'\n') {
                    return Some(String::from_utf8_lossy(&line).into_owned());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// `true` for `y` or `yes`, any case, surrounding blanks ignored.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// The flags of a chapter whose permission hook asks `Allow? [y/N]` (course s04/s05), for
/// `#[command(flatten)]`. Without either flag the question goes to the terminal.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ApprovalArgs {
    /// Answer every "Allow? [y/N]" with yes, for scripted runs.
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,

    /// Answer every "Allow? [y/N]" with no (what happens anyway without a terminal).
    #[arg(long)]
    pub no: bool,
}

impl ApprovalArgs {
    /// The approver these flags ask for: `--yes` → [`FixedApprover`]`(true)`, `--no` →
    /// [`FixedApprover`]`(false)`, neither → [`TerminalApprover`].
    pub fn approver(&self) -> Box<dyn Approver> {
        match (self.yes, self.no) {
            (true, _) => Box::new(FixedApprover(true)),
            (_, true) => Box::new(FixedApprover(false)),
            _ => Box::new(TerminalApprover),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_is_wrapped_whole_and_escaped() {
        let command = format!("echo {} && rm victim", "a".repeat(300));
        let question = format!("Destructive command (deletes files with 'rm'): {command}");
        let shown = render_question(&question, 80);
        assert!(shown.lines().all(|l| l.chars().count() <= 80));
        assert!(shown.ends_with("&& rm victim\nAllow? [y/N] "), "{shown}");
        let whole = shown.strip_suffix("Allow? [y/N] ").unwrap_or_default().replace('\n', "");
        assert_eq!(whole, question, "nothing is cut");
        let hidden = render_question("rm \u{202e}txt.exe \x1b[8mvictim\x1b[0m", 80);
        assert_eq!(hidden, "rm \\u{202e}txt.exe \\x1b[8mvictim\\x1b[0m\nAllow? [y/N] ");
    }
}
