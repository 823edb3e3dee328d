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
use std::sync::mpsc;
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
    /// The thread that owns rustyline's external printer, once the line editor has made one.
    /// Lines go to it, never to the printer straight from a writer: the printer may wait for
    /// rustyline, and rustyline's Enter binding takes this state's lock.
    printer: Option<mpsc::Sender<String>>,
    /// Lines sent to the printer's thread and not printed yet: a direct write waits for them,
    /// so nothing overtakes them.
    pending: usize,
    /// Text written while rustyline reads, after its last newline: printed with its line's end.
    partial: String,
    /// An automatic turn runs.
    automatic: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    mode: Mode::Direct,
    printer: None,
    pending: 0,
    partial: String::new(),
    automatic: false,
});

/// Signalled when a read ends and when the printer's thread has printed a line.
static CHANGED: Condvar = Condvar::new();

/// How long a write waits for rustyline to end a read after Enter, or for the printer's thread
/// to print what it was given, before it goes on anyway (a key binding that did not end the
/// read after all; a printer that waits for the next read).
const WAIT_AT_MOST: Duration = Duration::from_secs(1);

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes `text` to `stream` as the table in the module docs says. Errors (a closed pipe) are
/// ignored. Callers pass only our own text or text they sanitised. Never waits for the line
/// editor (one second at most, in the moment after Enter).
pub fn write(stream: Stream, text: &str) {
    let mut st = state();
    let deadline = Instant::now() + WAIT_AT_MOST;
    loop {
        let waits = match st.mode {
            Mode::Accepting => true,
            Mode::Direct | Mode::Plain { .. } => st.pending > 0,
            Mode::Editing => false,
        };
        if !waits {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let (guard, waited) = CHANGED.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner());
        st = guard;
        if waited.timed_out() {
            if matches!(st.mode, Mode::Accepting) {
                st.mode = Mode::Editing;
            }
            break;
        }
    }
    let State { mode, printer, pending, partial, automatic } = &mut *st;
    match mode {
        Mode::Editing if printer.is_some() => {
            partial.push_str(text);
            if let Some(end) = partial.rfind('\n') {
                let lines: String = partial.drain(..=end).collect();
                to_printer(printer, pending, lines);
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

/// Hands `lines` to the printer's thread; written as they are if it is gone.
fn to_printer(printer: &mut Option<mpsc::Sender<String>>, pending: &mut usize, lines: String) {
    let Some(sender) = printer.as_ref() else { return raw(Stream::Out, &lines) };
    match sender.send(lines) {
        Ok(()) => *pending += 1,
        Err(mpsc::SendError(lines)) => {
            *printer = None;
            raw(Stream::Out, &lines);
        }
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
    let st = state();
    matches!(st.mode, Mode::Direct) && st.pending == 0
}

/// Gives the line editor's external printer to a thread of its own, which prints the lines
/// [`write`] hands it above the prompt (rustyline clears the prompt line, prints, and draws
/// the prompt and the typed text again); while rustyline does not read, the printer writes
/// them as they are.
pub(crate) fn set_printer(mut printer: Box<dyn rustyline::ExternalPrinter + Send>) {
    let (tx, rx) = mpsc::channel::<String>();
    let spawned = std::thread::Builder::new().name("console-printer".into()).spawn(move || {
        for lines in rx {
            if printer.print(lines.clone()).is_err() {
                raw(Stream::Out, &lines);
            }
            let mut st = state();
            st.pending = st.pending.saturating_sub(1);
            CHANGED.notify_all();
        }
    });
    if spawned.is_ok() {
        state().printer = Some(tx);
    }
}

/// rustyline is about to read a line.
pub(crate) fn editing() {
    state().mode = Mode::Editing;
}

/// Enter was pressed in rustyline: writes wait for the read to end. Called from rustyline's
/// key handler: it takes the lock only briefly, and no writer holds it while it waits.
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

/// A read ended (a line, Ctrl-C, end of input): writes go straight out again, after what waited
/// for its line's end (which goes last through the printer, to keep the order).
pub(crate) fn read_ended() {
    let mut st = state();
    st.mode = Mode::Direct;
    let rest = std::mem::take(&mut st.partial);
    if !rest.is_empty() {
        let State { printer, pending, .. } = &mut *st;
        to_printer(printer, pending, rest);
    }
    CHANGED.notify_all();
}

/// Waits (a second at most) until the printer's thread has printed every line it was given:
/// before the harness exits, so that nothing an automatic turn printed is lost.
pub(crate) fn settle() {
    let mut st = state();
    let deadline = Instant::now() + WAIT_AT_MOST;
    while st.pending > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        let (guard, waited) = CHANGED.wait_timeout(st, left).unwrap_or_else(|p| p.into_inner());
        st = guard;
        if waited.timed_out() {
            break;
        }
    }
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
    let State { mode, printer, pending, partial, .. } = &mut *st;
    match mode {
        Mode::Editing if !partial.is_empty() => {
            let mut lines = std::mem::take(partial);
            lines.push('\n');
            to_printer(printer, pending, lines);
        }
        Mode::Plain { prompt, shown } if !*shown => {
            raw(Stream::Out, prompt);
            *shown = true;
        }
        _ => {}
    }
}
