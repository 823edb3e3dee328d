//! The terminal shared by the line editor and the turns that print while it reads.
//!
//! Source: ours, for the course's s12, s13 and s15, whose automatic turns print while the user
//! may be half-way through typing a line (the course clears the line with `\r\033[K` and redraws
//! the prompt). Every byte the harness writes to stdout or stderr goes through [`write()`], which
//! knows who holds the terminal:
//!
//! | who reads a line | what a write does |
//! |---|---|
//! | nobody (a user turn runs, or start-up) | written as it comes |
//! | rustyline (a terminal) | whole lines go through rustyline's external printer: it clears the prompt line, prints them, and draws the prompt and the half-typed text again; a line still being streamed waits for its end |
//! | rustyline, Enter just pressed | waits until the read has ended, then as above |
//! | the plain reader (piped stdin, `TERM=dumb`) | during an automatic turn, the first write after the prompt starts a new line, and the prompt is shown again after the turn; otherwise as it comes |
//!
//! On a `dumb` terminal the half-typed text is in the kernel's line buffer, where no program can
//! read it back to redraw it: it is still sent whole with Enter, but not shown again after the
//! prompt (rustyline does not edit there, so it has no external printer either). Spinners draw
//! only while nobody reads a line ([`status_allowed`]): a frame drawn with `\r` over the prompt
//! would tear it.

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The stream a write is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout.
    Out,
    /// stderr.
    Err,
}

/// Who holds the terminal.
enum Mode {
    /// Nobody reads a line.
    Direct,
    /// rustyline reads a line.
    Editing,
    /// Enter was pressed: rustyline is ending the read.
    Accepting,
    /// The plain reader waits for a line; `shown` while its prompt is the last thing written.
    Plain { prompt: String, shown: bool },
}

struct State {
    mode: Mode,
    /// rustyline's external printer, once the line editor has made one.
    printer: Option<Box<dyn rustyline::ExternalPrinter + Send>>,
    /// Text written while rustyline reads, after its last newline: printed with its line's end.
    partial: String,
    /// An automatic turn runs.
    automatic: bool,
}

static STATE: Mutex<State> =
    Mutex::new(State { mode: Mode::Direct, printer: None, partial: String::new(), automatic: false });

/// Signalled when a read ends.
static READ_ENDED: Condvar = Condvar::new();

/// How long a write waits for rustyline to end a read after Enter before it prints through the
/// external printer anyway (a key binding that did not end the read after all).
const ACCEPT_WAIT: Duration = Duration::from_secs(1);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `text` to `stream` as the table in the module docs says. Errors (a closed pipe) are
/// ignored. Callers pass only our own text or text they sanitised.
pub fn write(stream: Stream, text: &str) {
    let mut st = state();
    let deadline = Instant::now() + ACCEPT_WAIT;
    while matches!(st.mode, Mode::Accepting) {
        let left = deadline.saturating_duration_since(Instant::now());
        let (guard, waited) = READ_ENDED.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner());
        st = guard;
        if waited.timed_out() && matches!(st.mode, Mode::Accepting) {
            st.mode = Mode::Editing;
        }
    }
    let State { mode, printer, partial, automatic } = &mut *st;
    match mode {
        Mode::Editing if printer.is_some() => {
            partial.push_str(text);
            if let Some(end) = partial.rfind('\n') {
                let lines: String = partial.drain(..=end).collect();
                print_above(printer, lines);
            }
        }
        Mode::Plain { shown, .. } if *shown && *automatic => {
            *shown = false;
            raw(Stream::Out, "\n");
            raw(stream, text);
        }
        _ => raw(stream, text),
    }
}

/// Prints `lines` above rustyline's prompt; written as they are if the printer fails.
fn print_above(printer: &mut Option<Box<dyn rustyline::ExternalPrinter + Send>>, lines: String) {
    let printed = printer.as_mut().is_some_and(|p| p.print(lines.clone()).is_ok());
    if !printed {
        *printer = None;
        raw(Stream::Out, &lines);
    }
}

/// Writes to the process's stream and flushes.
fn raw(stream: Stream, text: &str) {
    match stream {
        Stream::Out => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(text.as_bytes());
            let _ = stdout.flush();
        }
        Stream::Err => {
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }
}

/// `true` while nobody reads a line, so a spinner may draw over its own line.
pub fn status_allowed() -> bool {
    matches!(state().mode, Mode::Direct)
}

/// The line editor's external printer, made once by the thread that owns the editor.
pub(crate) fn set_printer(printer: Box<dyn rustyline::ExternalPrinter + Send>) {
    state().printer = Some(printer);
}

/// rustyline is about to read a line.
pub(crate) fn editing() {
    state().mode = Mode::Editing;
}

/// Enter was pressed in rustyline: writes wait for the read to end.
pub(crate) fn accepting() {
    let mut st = state();
    if matches!(st.mode, Mode::Editing) {
        st.mode = Mode::Accepting;
    }
}

/// The plain reader shows `prompt` and waits for a line.
pub(crate) fn plain_prompt(prompt: &str) {
    let mut st = state();
    raw(Stream::Out, prompt);
    st.mode = Mode::Plain { prompt: prompt.to_owned(), shown: true };
}

/// A read ended (a line, Ctrl-C, end of input): writes go straight out again, starting with
/// what waited for its line's end.
pub(crate) fn read_ended() {
    let mut st = state();
    st.mode = Mode::Direct;
    let rest = std::mem::take(&mut st.partial);
    if !rest.is_empty() {
        raw(Stream::Out, &rest);
    }
    READ_ENDED.notify_all();
}

/// An automatic turn starts (see [`automatic_turn_ended`]).
pub(crate) fn automatic_turn_started() {
    state().automatic = true;
}

/// An automatic turn ended: if a line is still being read, the turn's last unfinished line is
/// printed above rustyline's prompt, or the plain reader's prompt is shown again.
pub(crate) fn automatic_turn_ended() {
    let mut st = state();
    st.automatic = false;
    let State { mode, printer, partial, .. } = &mut *st;
    match mode {
        Mode::Editing if !partial.is_empty() => {
            let mut lines = std::mem::take(partial);
            lines.push('\n');
            print_above(printer, lines);
        }
        Mode::Plain { prompt, shown } if !*shown => {
            raw(Stream::Out, prompt);
            *shown = true;
        }
        _ => {}
    }
}
