//! "Always" for the session (ours): programs the user allowed, by answering `a` at
//! `Allow? [y/N]` or with `--allow`, run unasked until the session ends or `/permissions revoke`.
//!
//! ```text
//!  Verdict::Ask(question) ─► SessionApprover ─┬─ every program in question.always allowed ─► yes, not asked
//!                                             └─ otherwise ─► the approver ─┬─ a ─► remember them, yes
//!                                                                           ├─ y ─► yes
//!                                                                           └─ n ─► no
//! ```
//!
//! An allowance waives only findings about the program it names ([`Finding::program`]): a
//! question whose findings include a write of `.env` or `.git`, a redirection onto an existing
//! file or a substitution offers no `a`, and is asked every time; a deny-list entry never
//! reaches the question at all. Claude Code's "Yes, and don't ask again for this command" and its
//! `permissions.allow` rules are the model.
//!
//! [`Finding::program`]: super::classify::Finding::program

use std::sync::{Arc, Mutex, MutexGuard};

use crate::approve::{Answer, Approver, Question, Reply};
use crate::events::{Events, Level, line};

/// How an allowance came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `--allow` on the command line.
    Flag,
    /// The user answered `a`.
    Answer,
}

/// One program allowed for the session: `python3`, `cargo` (every cargo command) or `cargo test`
/// (that subcommand only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowance {
    /// The program, or program and subcommand, as [`super::classify::command_key`] names it.
    pub program: String,
    /// Where it came from.
    pub source: Source,
}

#[derive(Debug, Default)]
struct Inner {
    list: Vec<Allowance>,
    in_use: bool,
}

/// The session's allowances, shared: the permission hook reads them, `/permissions` lists and
/// revokes them. Cloning gives another handle on the same list.
#[derive(Debug, Clone, Default)]
pub struct AlwaysAllowed {
    inner: Arc<Mutex<Inner>>,
}

impl AlwaysAllowed {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allows `program` (trimmed, inner blanks collapsed) for the session; `false` when it was
    /// already allowed (by itself or by a broader entry) or is empty.
    pub fn allow(&self, program: &str, source: Source) -> bool {
        let program = program.split_whitespace().collect::<Vec<_>>().join(" ");
        if program.is_empty() || self.covers(&program) {
            return false;
        }
        self.lock().list.push(Allowance { program, source });
        true
    }

    /// Removes the allowance named exactly `program`; `false` when there is none.
    pub fn revoke(&self, program: &str) -> bool {
        let program = program.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut inner = self.lock();
        let before = inner.list.len();
        inner.list.retain(|a| a.program != program);
        inner.list.len() != before
    }

    /// Removes every allowance; returns how many there were.
    pub fn clear(&self) -> usize {
        std::mem::take(&mut self.lock().list).len()
    }

    /// The allowances, in the order they were given.
    pub fn list(&self) -> Vec<Allowance> {
        self.lock().list.clone()
    }

    /// `true` when `program` (`cargo test`) is allowed: by an entry of the same name, or by one
    /// that names its program alone (`cargo`).
    pub fn covers(&self, program: &str) -> bool {
        self.lock().list.iter().any(|a| {
            a.program == program || program.strip_prefix(&a.program).is_some_and(|rest| rest.starts_with(' '))
        })
    }

    /// Marks the list as read by a permission hook, so that a REPL shows `/permissions`.
    pub fn set_in_use(&self) {
        self.lock().in_use = true;
    }

    /// `true` once a permission hook reads this list.
    pub fn in_use(&self) -> bool {
        self.lock().in_use
    }
}

/// An [`Approver`] that answers from the session's allowances before asking another one, and
/// remembers an [`Answer::Always`]. Each time it acts it reports a [`Level::Mechanism`] line:
/// `[permission] not asked: python3 is allowed for this session (/permissions)` or
/// `[permission] python3 is allowed for the rest of this session (/permissions revokes it)`.
pub struct SessionApprover {
    inner: Box<dyn Approver>,
    allowed: AlwaysAllowed,
    events: Events,
}

impl std::fmt::Debug for SessionApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionApprover").field("allowed", &self.allowed).finish_non_exhaustive()
    }
}

impl SessionApprover {
    /// Asks `inner` what `allowed` does not cover; reports to `events`. Marks `allowed` in use.
    pub fn new(inner: Box<dyn Approver>, allowed: AlwaysAllowed, events: Events) -> Self {
        allowed.set_in_use();
        Self { inner, allowed, events }
    }
}

impl Approver for SessionApprover {
    fn ask(&mut self, question: &str) -> bool {
        self.inner.ask(question)
    }

    fn answer(&mut self, question: &Question) -> Answer {
        match self.reply(question) {
            Reply::Answer(answer) => answer,
            Reply::Refused(_) => Answer::No,
        }
    }

    fn reply(&mut self, question: &Question) -> Reply {
        let names = question.always.join(", ");
        if !question.always.is_empty() && question.always.iter().all(|p| self.allowed.covers(p)) {
            let text = format!("[permission] not asked: {names} is allowed for this session (/permissions)");
            line(&*self.events, Level::Mechanism, &text);
            return Reply::Answer(Answer::Yes);
        }
        let answer = match self.inner.reply(question) {
            Reply::Answer(answer) => answer,
            refused @ Reply::Refused(_) => return refused,
        };
        if answer == Answer::Always {
            if question.always.is_empty() {
                return Reply::Answer(Answer::Yes); // nothing to remember: yes, this once
            }
            for program in &question.always {
                self.allowed.allow(program, Source::Answer);
            }
            let text = format!(
                "[permission] {names} is allowed for the rest of this session (/permissions revokes it)"
            );
            line(&*self.events, Level::Mechanism, &text);
        }
        Reply::Answer(answer)
    }
}
