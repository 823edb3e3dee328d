//! What the terminal shows: the prompt, tool calls, answers, notices.
//!
//! Source: course §0–§1 (`sNN >> ` in cyan; per call `> NAME:` and the first 200 characters of
//! the output). Colour is used only when the stream is a terminal and `NO_COLOR` is unset, so a
//! piped run carries no ANSI escapes. Writes never panic: a closed pipe is ignored.
//!
//! Every method that shows text from outside (the model, a tool, a hook, the endpoint) passes it
//! through [`sanitize`] first, so control and bidi characters show as visible escapes and only
//! this module's own colours reach the terminal raw (issue 14). [`out`] and [`err`] write as they
//! are: callers pass them only our own text or text they sanitised.

use std::io::{IsTerminal, Write};

use crate::sanitize::{sanitize, sanitize_line};

/// ANSI cyan (the REPL prompt).
pub const CYAN: &str = "\x1b[36m";
/// ANSI yellow (a tool header).
pub const YELLOW: &str = "\x1b[33m";
/// ANSI green.
pub const GREEN: &str = "\x1b[32m";
/// ANSI red (errors).
pub const RED: &str = "\x1b[31m";
/// ANSI dim (notices).
pub const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Where hooks and approvers print their lines, such as `[HOOK] bash(ls)`. One call per line,
/// without the trailing newline. The chapter wires it to the terminal UI; tests collect lines
/// into a `Vec`.
pub type Printer = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// How many characters of a tool's output the terminal shows (course §1).
pub const PREVIEW_CHARS: usize = 200;

/// How many characters of a tool's input the header line shows (ours).
pub const HEADER_INPUT_CHARS: usize = 100;

/// How long a tool runs before a spinner shows on a terminal's stderr (ours).
pub const TOOL_SPINNER_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Terminal output settings: whether stdout and stderr get colour, and where the text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ui {
    /// Colour on stdout.
    pub color_out: bool,
    /// Colour on stderr.
    pub color_err: bool,
    /// The process's stdout and stderr, or a test's buffer ([`Ui::captured`]).
    sink: Sink,
    /// Whether stderr is a terminal, so spinners are drawn: asked once, not at every model call
    /// and tool (an `ioctl` each).
    err_tty: bool,
}

/// Where a [`Ui`] writes.
#[derive(Debug, Clone, Copy)]
enum Sink {
    Std,
    Buffer(&'static Captured),
}

impl PartialEq for Sink {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Sink::Std, Sink::Std) => true,
            (Sink::Buffer(a), Sink::Buffer(b)) => std::ptr::eq(*a, *b),
            _ => false,
        }
    }
}

impl Eq for Sink {}

/// What a [`Ui::captured`] wrote instead of the terminal, so a test checks the text and a green
/// test run prints none of it.
#[derive(Debug, Default)]
pub struct Captured {
    stdout: std::sync::Mutex<String>,
    stderr: std::sync::Mutex<String>,
}

impl Captured {
    /// Everything written to "stdout" so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Everything written to "stderr" so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Ui {
    /// Colour where the stream is a terminal and `NO_COLOR` is unset.
    pub fn detect() -> Self {
        let allowed = !crate::config::no_color();
        let err_tty = std::io::stderr().is_terminal();
        Self {
            color_out: allowed && std::io::stdout().is_terminal(),
            color_err: allowed && err_tty,
            sink: Sink::Std,
            err_tty,
        }
    }

    /// No colour anywhere (tests, piped runs).
    pub fn plain() -> Self {
        Self { color_out: false, color_err: false, sink: Sink::Std, err_tty: std::io::stderr().is_terminal() }
    }

    /// No colour, and every line written into the returned buffer instead of the terminal (for
    /// tests; the buffer lives until the process ends). No spinner is drawn.
    pub fn captured() -> (Self, &'static Captured) {
        let buffer: &'static Captured = Box::leak(Box::default());
        (Self { color_out: false, color_err: false, sink: Sink::Buffer(buffer), err_tty: false }, buffer)
    }

    /// Writes `text` as it is to stdout (flushed), or to the test's buffer. Callers pass only
    /// our own text or text they sanitised.
    pub fn print(&self, text: &str) {
        match self.sink {
            Sink::Std => out(text),
            Sink::Buffer(b) => b.stdout.lock().unwrap_or_else(|p| p.into_inner()).push_str(text),
        }
    }

    /// Writes `text` as it is to stderr, or to the test's buffer.
    pub fn eprint(&self, text: &str) {
        match self.sink {
            Sink::Std => err(text),
            Sink::Buffer(b) => b.stderr.lock().unwrap_or_else(|p| p.into_inner()).push_str(text),
        }
    }

    /// The REPL prompt, `NAME >> `, cyan on a terminal.
    pub fn prompt(&self, name: &str) -> String {
        paint(self.color_out, CYAN, &format!("{name} >> "))
    }

    /// A line on stdout (sanitised).
    pub fn say(&self, text: &str) {
        self.print(&format!("{}\n", sanitize(text)));
    }

    /// The line before a tool runs: `> NAME: INPUT` (course §1 shows `> NAME:`; yellow on a
    /// terminal). `input` is what the call is about (`ls -la`, `src/main.rs`), shown on one line
    /// and cut to [`HEADER_INPUT_CHARS`] characters with `…`; `None` shows the course's `> NAME:`.
    pub fn tool_header(&self, name: &str, input: Option<&str>) {
        let head = paint(self.color_out, YELLOW, &format!("> {}:", sanitize_line(name)));
        match input.map(|i| one_line(i, HEADER_INPUT_CHARS)).filter(|i| !i.is_empty()) {
            Some(input) => self.print(&format!("{head} {input}\n")),
            None => self.print(&format!("{head}\n")),
        }
    }

    /// The first 200 characters of a tool's output, after it ran (course §1). A longer output
    /// ends with a dim line saying how much was cut from the view (the model gets all of it).
    pub fn tool_preview(&self, output: &str) {
        let end = output.char_indices().nth(PREVIEW_CHARS).map_or(output.len(), |(at, _)| at);
        let (preview, rest) = output.split_at(end);
        let cut = rest.chars().count();
        let mut text = format!("{}\n", sanitize(preview));
        if cut > 0 {
            let marker = format!("… ({cut} more characters not shown here; the model gets them all)");
            text.push_str(&paint(self.color_out, DIM, &marker));
            text.push('\n');
        }
        self.print(&text);
    }

    /// Text the harness adds to a round's results (a reminder), shown as `+ TEXT` (dim on a terminal)
    /// so the user sees what the model is told.
    pub fn injected(&self, text: &str) {
        self.print(&format!("{}\n", paint(self.color_out, DIM, &format!("+ {}", sanitize(text)))));
    }

    /// Model text as it streams in, one delta at a time (sanitised per delta: an escape split
    /// across deltas is still shown, never obeyed; see [`crate::sanitize`]).
    pub fn stream_text(&self, delta: &str) {
        self.print(&sanitize(delta));
    }

    /// The model's final answer for a turn.
    pub fn answer(&self, text: &str) {
        if !text.is_empty() {
            self.print(&format!("{}\n", sanitize(text)));
        }
    }

    /// A status line on stderr (dim on a terminal).
    pub fn notice(&self, text: &str) {
        self.eprint(&format!("{}\n", paint(self.color_err, DIM, &sanitize(text))));
    }

    /// An error line on stderr, `error: TEXT` (red on a terminal). Every error line the harness
    /// prints has this one prefix.
    pub fn error(&self, text: &str) {
        let line = format!("error: {}", sanitize(text));
        self.eprint(&format!("{}\n", paint(self.color_err, RED, &line)));
    }

    /// A warning line on stderr, `warning: TEXT` (yellow on a terminal).
    pub fn warning(&self, text: &str) {
        let line = format!("warning: {}", sanitize(text));
        self.eprint(&format!("{}\n", paint(self.color_err, YELLOW, &line)));
    }
}

/// A spinner on stderr while the model has not answered yet (issue 5). It is drawn only when
/// stderr is a terminal, after a short grace period so fast answers do not flicker, and it clears
/// its line when dropped. Nothing reaches stdout.
pub struct Spinner {
    /// (stopped, drawn), under one lock so a frame is never drawn after the line was cleared.
    state: Option<std::sync::Arc<std::sync::Mutex<(bool, bool)>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Ui {
    /// Starts a [`Spinner`] labelled `label`, drawn after 200 ms; a no-op when stderr is not a
    /// terminal or no tokio runtime is running.
    pub fn spinner(&self, label: &str) -> Spinner {
        self.spinner_after(std::time::Duration::from_millis(200), || label.to_owned())
    }

    /// A [`Spinner`] first drawn after `grace` (a tool: [`TOOL_SPINNER_AFTER`]), labelled with
    /// what `label` gives; `label` is called only when a spinner can be drawn, so a run whose
    /// stderr is not a terminal builds no label at every tool call.
    pub fn spinner_after(&self, grace: std::time::Duration, label: impl FnOnce() -> String) -> Spinner {
        if !self.err_tty || tokio::runtime::Handle::try_current().is_err() {
            return Spinner { state: None, task: None };
        }
        let state = std::sync::Arc::new(std::sync::Mutex::new((false, false)));
        let shared = std::sync::Arc::clone(&state);
        let label = paint(self.color_err, DIM, &label());
        let task = tokio::spawn(async move {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            tokio::time::sleep(grace).await;
            for frame in FRAMES.iter().cycle() {
                {
                    let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                    if s.0 {
                        return;
                    }
                    s.1 = true;
                    err(&format!("\r{frame} {label}"));
                }
                tokio::time::sleep(std::time::Duration::from_millis(80)).await;
            }
        });
        Spinner { state: Some(state), task: Some(task) }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
            s.0 = true;
            if s.1 {
                err("\r\x1b[K");
            }
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Clears a spinner's line on stderr when stderr is a terminal, so a notice starts at column 0.
pub fn clear_err_line() {
    if std::io::stderr().is_terminal() {
        err("\r\x1b[K");
    }
}

/// `text` on one line (newlines and tabs shown as `\n` and `\t`, control characters escaped),
/// cut to `max` characters with a trailing `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let line = sanitize_line(text.trim());
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.into_owned(),
    }
}

/// `text` in `color` (one of the constants above) when `on`, else `text` as it is.
pub fn paint(on: bool, color: &str, text: &str) -> String {
    if on { format!("{color}{text}{RESET}") } else { text.to_owned() }
}

/// Writes to stdout and flushes; errors (a closed pipe) are ignored.
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes to stderr; errors are ignored.
pub fn err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_captured_ui_holds_the_header_the_cut_marker_and_the_error_prefix() {
        let (ui, captured) = Ui::captured();
        ui.tool_header("bash", Some("ls -la\n| wc"));
        ui.tool_preview(&"x".repeat(250));
        ui.tool_preview("short");
        ui.error("broken");
        let cut = "… (50 more characters not shown here; the model gets them all)";
        assert_eq!(captured.stdout(), format!("> bash: ls -la\\n| wc\n{}\n{cut}\nshort\n", "x".repeat(200)));
        assert_eq!(captured.stderr(), "error: broken\n");
        assert_eq!(one_line(&"é".repeat(5), 3), "ééé…");
    }
}
