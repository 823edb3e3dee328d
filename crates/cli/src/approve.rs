//! Asking the user on the terminal: `Allow? [y/N]` (course s04/s05), the `--yes`/`--no`/`--allow`
//! flags, and the watch on `.env`.
//!
//! [`TerminalApprover`] is the terminal's [`Approver`] (reading `/dev/tty`, giving up on Ctrl-C);
//! [`ApprovalArgs`] are the flags a chapter with the permission hook flattens into its command
//! line. The trait and the approvers that need no terminal live in [`agent_core::approve`], and
//! the session's allowances in [`agent_core::permission::session`].
//!
//! Only the user answers, and sees what they answer (ours):
//! - the command is shown whole, wrapped to the terminal's width and never cut, on as few lines as
//!   it needs: line breaks, tabs and long runs of blanks become visible marks (`⏎`, `⇥`, `⏎×60`),
//!   and control, bidi and invisible characters visible escapes (`\x1b`, `\u{202e}`, `\u{200b}`)
//!   ([`visible`]); so a command padded with 60 newlines cannot push its `rm` off the screen;
//! - the reason is the line just above `Allow? [y/N]`, always in view;
//! - input that was already waiting on the terminal (keystrokes a command pushed with `TIOCSTI`,
//!   or typed ahead) is discarded with `tcflush` before the answer is read, so a command cannot
//!   answer its own question.
//!
//! Besides `y` and `n`, the answer `a` allows the program the question names for the rest of the
//! session (`Allow? [y/N] (a: always allow python3 this session)`), when the question offers it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_core::approve::{Answer, Approver, FixedApprover, Question};
use agent_core::sanitize::{is_unsafe, push_escaped};

/// Asks on the terminal: prints [`render_question`] on stderr, discards pending terminal input,
/// and reads one line from `/dev/tty`. Only `y` or `yes` (any case, trimmed) allows, and `a` or
/// `always` when the question offers it. With no terminal (stdin or stderr redirected, no
/// `/dev/tty`, a read error) the answer is no, so a scripted run never hangs. Ctrl-C while it
/// waits answers no at once; the same signal then cancels the turn.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&mut self, question: &str) -> bool {
        let question = Question {
            text: question.into(),
            reason: question.into(),
            subject: String::new(),
            always: Vec::new(),
        };
        self.answer(&question) != Answer::No
    }

    fn answer(&mut self, question: &Question) -> Answer {
        let mut stderr = std::io::stderr();
        let width = terminal_size::terminal_size_of(&stderr).map_or(100, |(w, _)| usize::from(w.0));
        let shown = render_question(question, width);
        if !std::io::stdin().is_terminal() || !stderr.is_terminal() {
            // Say so: a refusal nobody typed must not look like the user's answer.
            let _ = writeln!(stderr, "{shown}no (no terminal to ask; pass --yes to allow)");
            if !question.always.is_empty() {
                let _ = writeln!(
                    stderr,
                    "(--allow {} allows it for a whole scripted run)",
                    question.always.join(",")
                );
            }
            return Answer::No;
        }
        let Ok(tty) = std::fs::File::open("/dev/tty") else { return Answer::No };
        let colour = !crate::ui::no_color() && !crate::ui::dumb_terminal();
        let shown = if colour { painted(&shown) } else { shown };
        if write!(stderr, "{shown}").and_then(|()| stderr.flush()).is_err() {
            return Answer::No;
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
            Some(line) if is_yes(&line) => Answer::Yes,
            Some(line) if is_always(&line) && !question.always.is_empty() => Answer::Always,
            Some(_) => Answer::No,
            None => {
                let _ = writeln!(stderr);
                Answer::No
            }
        }
    }
}

/// The question as the terminal shows it: the subject (the command, or a path and its tool),
/// then the reason, each made [`visible`] and wrapped at `width` characters (at least 20), never
/// cut; then `Allow? [y/N] ` on a line of its own, followed by `(a: always allow NAMES this
/// session) ` when the question offers `a`. A question without a subject shows its text.
pub fn render_question(question: &Question, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::new();
    let parts: Vec<&str> = if question.subject.is_empty() {
        vec![question.text.as_str()]
    } else {
        vec![question.subject.as_str(), question.reason.as_str()]
    };
    for part in parts {
        let chars: Vec<char> = visible(part).chars().collect();
        if chars.is_empty() {
            out.push('\n');
        }
        for piece in chars.chunks(width) {
            out.extend(piece);
            out.push('\n');
        }
    }
    out.push_str("Allow? [y/N] ");
    if !question.always.is_empty() {
        out.push_str(&format!("(a: always allow {} this session) ", visible(&question.always.join(", "))));
    }
    out
}

/// `shown` with its last line, from `Allow? [y/N]` on, in bold yellow, so that the question
/// stands out from the hook log above it. The question's own text went through [`visible`], so
/// the last `Allow? [y/N]` is the harness's.
pub fn painted(shown: &str) -> String {
    match shown.rfind("Allow? [y/N]") {
        Some(at) => format!("{}{}", &shown[..at], crate::ui::paint(true, BOLD_YELLOW, &shown[at..])),
        None => shown.to_owned(),
    }
}

/// ANSI bold yellow: the `Allow? [y/N]` line.
const BOLD_YELLOW: &str = "\x1b[1;33m";

/// How many of the same blank a run may hold before it is shown as one mark and a count.
const RUN: usize = 3;

/// `text` on one line, as a question shows it: a line break is `⏎`, a tab `⇥`, and a run of more
/// than three of them (or of more than eight spaces) one mark with its count (`⏎×60`, `␠×200`);
/// a control or bidi character is its escape as [`agent_core::sanitize`] writes it (`\x1b`,
/// `\u{202e}`); an invisible or space-like character (zero-width, line and paragraph
/// separators, no-break and other wide spaces, variation selectors, tag characters) is
/// `\u{…}`. Anything else is itself.
pub fn visible(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        let mark = match c {
            '\n' => Some(("⏎", RUN)),
            '\t' => Some(("⇥", RUN)),
            ' ' if run > 8 => Some(("␠", 8)),
            _ => None,
        };
        if let Some((mark, most)) = mark {
            if run > most {
                out.push_str(&format!("{mark}×{run}"));
            } else {
                out.push_str(&mark.repeat(run));
            }
            i += run;
            continue;
        }
        if is_unsafe(c) {
            push_escaped(&mut out, c);
        } else if is_invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// `true` for a character a terminal shows as nothing, or as a plain space, though it is
/// neither: soft hyphen, combining grapheme joiner, Hangul fillers, Mongolian selectors,
/// no-break and typographic spaces, zero-width characters, line and paragraph separators,
/// invisible operators, variation selectors, the byte-order mark, interlinear annotation, tag
/// characters.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{a0}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{1680}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{2000}'..='\u{200f}'
            | '\u{2028}'..='\u{202f}'
            | '\u{205f}'..='\u{206f}'
            | '\u{3000}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e007f}'
            | '\u{e0100}'..='\u{e01ef}'
    )
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

/// `true` for `a` or `always`, any case, surrounding blanks ignored.
pub fn is_always(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "a" | "always")
}

/// The flags of a chapter whose permission hook asks `Allow? [y/N]` (course s04/s05), for
/// `#[command(flatten)]`. Without `--yes` or `--no` the question goes to the terminal.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ApprovalArgs {
    /// Answer every "Allow? [y/N]" with yes, for scripted runs.
    #[arg(long, conflicts_with = "no")]
    pub yes: bool,

    /// Answer every "Allow? [y/N]" with no (what happens anyway without a terminal).
    #[arg(long)]
    pub no: bool,

    /// Allow these programs for the whole session without asking, as the answer `a` does
    /// (comma-separated): a program (`python3`, `cargo`: all its commands) or a program and its
    /// subcommand (`'cargo test'`). A deny-list command is still refused, and writing .env or
    /// anything under .git still asks. `/permissions` lists and revokes them.
    #[arg(long, value_name = "PROGRAMS", value_delimiter = ',', value_parser = parse_allowance)]
    pub allow: Vec<String>,
}

/// One `--allow` entry: a program name, or a name and a subcommand, made of letters, digits and
/// `._+-/@:`; blanks around it are dropped.
///
/// # Errors
/// A message that says what an entry looks like.
pub fn parse_allowance(entry: &str) -> Result<String, String> {
    let words: Vec<&str> = entry.split_whitespace().collect();
    let fine = |w: &str| w.chars().all(|c| c.is_alphanumeric() || "._+-/@:".contains(c));
    if words.is_empty() || words.len() > 2 || !words.iter().all(|w| fine(w)) {
        return Err(format!(
            "{entry:?} is not a program: --allow takes names such as python3, cargo or 'cargo test', separated by commas"
        ));
    }
    Ok(words.join(" "))
}

impl ApprovalArgs {
    /// The approver these flags ask for: `--yes` → [`FixedApprover`]`(true)`, `--no` →
    /// [`FixedApprover`]`(false)`, neither → [`TerminalApprover`]. (`--allow` is applied by the
    /// session's approver, [`agent_core::permission::SessionApprover`].)
    pub fn approver(&self) -> Box<dyn Approver> {
        match (self.yes, self.no) {
            (true, _) => Box::new(FixedApprover(true)),
            (_, true) => Box::new(FixedApprover(false)),
            _ => Box::new(TerminalApprover),
        }
    }
}

/// The `.env` files a session's successor would read, as they were at start: the one this
/// session read (or the current folder's, where none was), the current folder's, and the
/// workspace's. At exit the harness says which changed, since the next session started there
/// would send its key to whatever endpoint they name (ours).
#[derive(Debug, Clone)]
pub struct DotEnvWatch {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
}

impl DotEnvWatch {
    /// Remembers the content of each of `paths` (none for a missing or unreadable file); the
    /// same path given twice is watched once.
    pub fn start(paths: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut files: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
        for path in paths {
            if !files.iter().any(|(p, _)| *p == path) {
                let content = std::fs::read(&path).ok();
                files.push((path, content));
            }
        }
        Self { files }
    }

    /// One line per watched file whose content is not what it was at start: created, changed
    /// or deleted.
    pub fn changes(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (path, before) in &self.files {
            let now = std::fs::read(path).ok();
            if now == *before {
                continue;
            }
            let what = match (before, &now) {
                (None, Some(_)) => "was created",
                (Some(_), None) => "was deleted",
                _ => "was changed",
            };
            lines.push(format!(
                "{} {what} during this session: the next session started here reads it (check ANTHROPIC_BASE_URL and the key before you run again)",
                path.display()
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(command: &str, reason: &str, always: &[&str]) -> Question {
        Question::new(
            format!("Destructive command ({reason})"),
            command,
            always.iter().map(|a| a.to_string()).collect(),
        )
    }

    #[test]
    fn the_allow_line_is_painted_and_the_question_above_it_is_not() {
        let shown = "rm x\nDestructive command\nAllow? [y/N] (a: always allow rm this session) ";
        assert_eq!(
            painted(shown),
            "rm x\nDestructive command\n\x1b[1;33mAllow? [y/N] (a: always allow rm this session) \x1b[0m"
        );
    }

    #[test]
    fn the_question_is_wrapped_whole_and_escaped() {
        let command = format!("echo {} && rm victim", "a".repeat(300));
        let shown = render_question(&question(&command, "deletes files with 'rm'", &["rm"]), 80);
        assert!(shown.lines().all(|l| l.chars().count() <= 80));
        assert!(
            shown.ends_with("&& rm victim\nDestructive command (deletes files with 'rm')\nAllow? [y/N] (a: always allow rm this session) "),
            "{shown}"
        );
        let whole: String = shown.lines().take_while(|l| !l.starts_with("Destructive")).collect();
        assert_eq!(whole, command, "nothing is cut");
        let hidden = render_question(&question("rm \u{202e}txt.exe \x1b[8mvictim\x1b[0m", "r", &[]), 80);
        assert_eq!(
            hidden,
            "rm \\u{202e}txt.exe \\x1b[8mvictim\\x1b[0m\nDestructive command (r)\nAllow? [y/N] "
        );
    }

    #[test]
    fn padding_and_invisible_characters_become_visible_marks() {
        let command = format!("rm -f important.txt{}echo cleaning build cache", "\n".repeat(60));
        let shown = render_question(&question(&command, "deletes files with 'rm'", &["rm"]), 80);
        assert_eq!(
            shown,
            "rm -f important.txt⏎×60echo cleaning build cache\n\
             Destructive command (deletes files with 'rm')\n\
             Allow? [y/N] (a: always allow rm this session) "
        );
        assert_eq!(visible("a\nb\n\nc"), "a⏎b⏎⏎c");
        assert_eq!(visible("a\tb"), "a⇥b");
        assert_eq!(visible(&format!("rm v{}; ls", " ".repeat(500))), "rm v␠×500; ls");
        assert_eq!(visible("x  y"), "x  y", "a few blanks stay blanks");
        assert_eq!(
            visible("rm\u{200b} v\u{2028}\u{a0}\u{feff}\u{e0041}"),
            "rm\\u{200b} v\\u{2028}\\u{a0}\\u{feff}\\u{e0041}"
        );
        assert_eq!(visible("a\rb\x07"), "a\\rb\\x07");
        assert_eq!(visible("中文 ✓ é"), "中文 ✓ é", "ordinary text is itself");
    }

    #[test]
    fn answers() {
        assert!(is_yes(" Y ") && is_yes("yes") && !is_yes("a") && !is_yes(""));
        assert!(is_always("a") && is_always(" Always\n") && !is_always("y"));
    }

    #[test]
    fn allow_entries() {
        assert_eq!(parse_allowance(" python3 ").as_deref(), Ok("python3"));
        assert_eq!(parse_allowance("cargo  test").as_deref(), Ok("cargo test"));
        assert_eq!(parse_allowance("./build.sh").as_deref(), Ok("./build.sh"));
        for bad in ["", "a b c", "rm;ls", "$(x)"] {
            assert!(parse_allowance(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_dotenv_watch_names_what_changed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (kept, changed, created) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("c"));
        std::fs::write(&kept, "K=1").expect("write");
        std::fs::write(&changed, "K=1").expect("write");
        let watch = DotEnvWatch::start([kept.clone(), changed.clone(), created.clone(), kept.clone()]);
        assert!(watch.changes().is_empty());
        std::fs::write(&changed, "ANTHROPIC_BASE_URL=http://evil").expect("write");
        std::fs::write(&created, "K=2").expect("write");
        let lines = watch.changes();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with(&format!("{} was changed during this session", changed.display())));
        assert!(lines[1].starts_with(&format!("{} was created", created.display())));
    }
}
