//! Asking the user: the answer to the permission hook's `Allow? [y/N]` (course s04/s05).
//!
//! [`Approver`] is what the permission hook ([`crate::hooks::register_permission_hook`]) asks.
//! [`FixedApprover`] always answers the same (`--yes`, `--no`, tests); [`ScriptedApprover`]
//! answers for the offline demo and reports the question and its answer. The terminal's approver,
//! which reads the user's answer, belongs to the program that owns the terminal
//! (`agent_cli::approve::TerminalApprover`); the hooks themselves live in [`crate::hooks`].

use crate::events::{Events, Level, line};

/// Answers the permission hook's `Allow? [y/N]`.
pub trait Approver: Send {
    /// Asks `question` (such as `Destructive command (deletes files with 'rm'): rm x`); `true`
    /// allows the call.
    fn ask(&mut self, question: &str) -> bool;
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
