//! Asking the user: the answer to the permission hook's `Allow? [y/N]` (course s04/s05).
//!
//! [`Approver`] is what the permission hook ([`crate::hooks::register_permission_hook`]) asks,
//! with a [`Question`]; besides yes and no, an approver may answer [`Answer::Always`] (ours: the
//! terminal's `a`), which [`crate::permission::session::SessionApprover`] remembers.
//! [`FixedApprover`] always answers the same (`--yes`, `--no`, tests); [`ScriptedApprover`]
//! answers for the offline demo and reports the question and its answer. The terminal's approver,
//! which reads the user's answer, belongs to the program that owns the terminal
//! (`agent_cli::approve::TerminalApprover`); the hooks themselves live in [`crate::hooks`].

use crate::events::{Events, Level, line};

/// What the permission hook asks about one tool call.
///
/// `text` is the whole question as the course words it, `REASON: SUBJECT`
/// (`Destructive command (deletes files with 'rm'): rm x`); a terminal shows `subject` first and
/// `reason` on the line just above `Allow? [y/N]`, so the reason stays in view however long the
/// command is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The whole question: `REASON: SUBJECT`.
    pub text: String,
    /// Why it asks: `Destructive command (deletes files with 'rm')`.
    pub reason: String,
    /// What it asks about: the whole command, or a path and its tool (`.env (write_file)`).
    pub subject: String,
    /// What the answer `a` would allow for the rest of the session, such as `["python3"]` or
    /// `["cargo test"]`; empty when no such answer is offered (a write of `.env`, a redirection,
    /// a substitution: those are asked about every time).
    pub always: Vec<String>,
}

impl Question {
    /// A question whose text is `reason: subject`.
    pub fn new(reason: impl Into<String>, subject: impl Into<String>, always: Vec<String>) -> Self {
        let (reason, subject) = (reason.into(), subject.into());
        Self { text: format!("{reason}: {subject}"), reason, subject, always }
    }
}

/// An answer to `Allow? [y/N]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Refused: the call gets `Permission denied by user`.
    No,
    /// Allowed, this once.
    Yes,
    /// Allowed, and what [`Question::always`] names is allowed for the rest of the session.
    Always,
}

/// Answers the permission hook's `Allow? [y/N]`.
pub trait Approver: Send {
    /// Asks `question` (such as `Destructive command (deletes files with 'rm'): rm x`); `true`
    /// allows the call.
    fn ask(&mut self, question: &str) -> bool;

    /// Asks `question` whole. The default asks [`Approver::ask`] with its text and never answers
    /// [`Answer::Always`]; an approver that can offer `a` (the terminal's) overrides it.
    fn answer(&mut self, question: &Question) -> Answer {
        if self.ask(&question.text) { Answer::Yes } else { Answer::No }
    }
}

/// Always gives the same answer: `FixedApprover(true)` for `--yes`, `FixedApprover(false)` for
/// `--no` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedApprover(pub bool);

impl Approver for FixedApprover {
    fn ask(&mut self, _question: &str) -> bool {
        self.0
    }
}

/// Answers every question with the same scripted answer and reports it, one line per question:
/// `[demo] QUESTION Allow? [y/N] y (answered by the demo's script)`. The offline demo uses it so
/// that the learner sees the question the permission hook asked, with no one at the keyboard.
pub struct ScriptedApprover {
    answer: bool,
    events: Events,
}

impl ScriptedApprover {
    /// Answers `answer` to every question and reports each exchange to `events` as a
    /// [`Level::Info`] line.
    pub fn new(answer: bool, events: Events) -> Self {
        Self { answer, events }
    }
}

impl std::fmt::Debug for ScriptedApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedApprover").field("answer", &self.answer).finish_non_exhaustive()
    }
}

impl Approver for ScriptedApprover {
    fn ask(&mut self, question: &str) -> bool {
        let answer = if self.answer { "y" } else { "n" };
        let text = format!("[demo] {question} Allow? [y/N] {answer} (answered by the demo's script)");
        line(&*self.events, Level::Info, &text);
        self.answer
    }
}
