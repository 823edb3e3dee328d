//! Asking the user: the answer to the permission hook's `Allow? [y/N]` (course s04/s05).
//!
//! [`Approver`] is what the permission hook ([`crate::hooks::register_permission_hook`]) asks,
//! with a [`Question`]; besides yes and no, an approver may answer [`Answer::Always`] (ours: the
//! terminal's `a`), which [`crate::permission::session::SessionApprover`] remembers.
//! [`FixedApprover`] always answers the same (`--yes`, `--no`, tests); [`ScriptedApprover`]
//! answers for the offline demo and reports the question and its answer. The terminal's approver,
//! which reads the user's answer, belongs to the program that owns the terminal
//! (`agent_cli::approve::TerminalApprover`); the hooks themselves live in [`crate::hooks`].
//!
//! Not every turn has someone to ask (ours, for the course's s12 and s13): a scheduled turn or a
//! teammate must never read the terminal, and answers with a text the chapter gives instead
//! (`Permission denied: scheduled turns cannot request interactive approval`). An [`AskGate`]
//! says whether asking is allowed now; a [`GatedApprover`] asks its inner approver only while
//! the gate is open, and otherwise [replies](Approver::reply) [`Reply::Refused`] with the gate's
//! text, which the permission hook gives the call as its result. The gate is closed per turn
//! (the REPL closes it for an automatic turn: [`AskGate::refuse_for_now`]) or for good (a
//! teammate's approver: [`AskGate::never`]). Only asking a person is gated: `--yes`, `--no` and
//! the session's allowances answer as they always do, since no one needs to be asked.

use std::sync::{Arc, Mutex, MutexGuard};

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

/// What the permission hook gets from [`Approver::reply`]: an answer, or a refusal with the text
/// the tool call gets as its result, from an approver that may not ask anyone now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// An answer to `Allow? [y/N]`, given by a person or by a flag.
    Answer(Answer),
    /// No one could be asked: the call is refused and gets this text (the chapter's words, such as
    /// `Permission required: ask Lead to run this command.`).
    Refused(String),
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

    /// What the permission hook asks: the default is [`Approver::answer`]; an approver that may
    /// not ask anyone now ([`GatedApprover`]) answers [`Reply::Refused`], and one that wraps
    /// another (the session's allowances) passes the inner reply on.
    fn reply(&mut self, question: &Question) -> Reply {
        Reply::Answer(self.answer(question))
    }
}

/// Whether a person may be asked now, shared between whoever runs the turns (which opens and
/// closes it) and the [`GatedApprover`] (which reads it). Cloning gives another handle on the same
/// gate. A new gate is open.
#[derive(Debug, Clone, Default)]
pub struct AskGate {
    /// `None`: open. `Some(text)`: closed, and a call that would ask gets `text`.
    refusal: Arc<Mutex<Option<String>>>,
}

impl AskGate {
    /// An open gate: asking is allowed until [`AskGate::refuse_for_now`] closes it.
    pub fn new() -> Self {
        Self::default()
    }

    /// A gate closed for good, for an agent no one ever answers for (the course's s13 teammates:
    /// `Permission required: ask Lead to run this command.`).
    pub fn never(refusal: impl Into<String>) -> Self {
        Self { refusal: Arc::new(Mutex::new(Some(refusal.into()))) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<String>> {
        self.refusal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The text a call that would ask gets now; `None` while asking is allowed.
    pub fn refusal(&self) -> Option<String> {
        self.lock().clone()
    }

    /// `true` while asking is allowed.
    pub fn may_ask(&self) -> bool {
        self.lock().is_none()
    }

    /// Closes the gate with `refusal` until the returned guard is dropped, which puts back what
    /// was there before: one automatic turn on an agent whose other turns may ask.
    pub fn refuse_for_now(&self, refusal: impl Into<String>) -> GateClosed {
        let before = self.lock().replace(refusal.into());
        GateClosed { gate: self.clone(), before }
    }
}

/// The gate closed by [`AskGate::refuse_for_now`]; dropping it restores the gate.
#[derive(Debug)]
#[must_use = "the gate opens again when this is dropped"]
pub struct GateClosed {
    gate: AskGate,
    before: Option<String>,
}

impl Drop for GateClosed {
    fn drop(&mut self) {
        *self.gate.lock() = self.before.take();
    }
}

/// Asks `inner` only while its [`AskGate`] is open; while it is closed, refuses every question
/// without asking, with the gate's text ([`Reply::Refused`]; `ask` and `answer` say no).
pub struct GatedApprover {
    inner: Box<dyn Approver>,
    gate: AskGate,
}

impl GatedApprover {
    /// `inner`, asked only while `gate` is open.
    pub fn new(inner: Box<dyn Approver>, gate: AskGate) -> Self {
        Self { inner, gate }
    }
}

impl std::fmt::Debug for GatedApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedApprover").field("gate", &self.gate).finish_non_exhaustive()
    }
}

impl Approver for GatedApprover {
    fn ask(&mut self, question: &str) -> bool {
        self.gate.may_ask() && self.inner.ask(question)
    }

    fn answer(&mut self, question: &Question) -> Answer {
        if self.gate.may_ask() { self.inner.answer(question) } else { Answer::No }
    }

    fn reply(&mut self, question: &Question) -> Reply {
        match self.gate.refusal() {
            Some(text) => Reply::Refused(text),
            None => self.inner.reply(question),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the questions that reached it, and answers yes.
    struct Counting(Arc<Mutex<usize>>);

    impl Approver for Counting {
        fn ask(&mut self, _question: &str) -> bool {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            true
        }
    }

    #[test]
    fn a_closed_gate_refuses_with_its_text_without_asking_and_reopens() {
        let asked = Arc::new(Mutex::new(0));
        let gate = AskGate::new();
        let mut approver = GatedApprover::new(Box::new(Counting(Arc::clone(&asked))), gate.clone());
        let question = Question::new("Destructive command", "rm x", vec!["rm".into()]);
        assert_eq!(approver.reply(&question), Reply::Answer(Answer::Yes));
        {
            let _turn =
                gate.refuse_for_now("Permission denied: scheduled turns cannot request interactive approval");
            assert_eq!(
                approver.reply(&question),
                Reply::Refused(
                    "Permission denied: scheduled turns cannot request interactive approval".into()
                )
            );
            assert_eq!(approver.answer(&question), Answer::No);
            assert!(!approver.ask("rm x"));
        }
        assert!(gate.may_ask(), "the guard put the gate back");
        assert_eq!(approver.reply(&question), Reply::Answer(Answer::Yes));
        assert_eq!(*asked.lock().unwrap_or_else(|p| p.into_inner()), 2, "asked only while open");
    }

    #[test]
    fn a_teammates_gate_never_opens() {
        let gate = AskGate::never("Permission required: ask Lead to run this command.");
        let mut approver = GatedApprover::new(Box::new(FixedApprover(true)), gate.clone());
        let question = Question::new("Destructive command", "rm x", Vec::new());
        drop(gate.refuse_for_now("for one turn"));
        assert_eq!(
            approver.reply(&question),
            Reply::Refused("Permission required: ask Lead to run this command.".into())
        );
    }
}
