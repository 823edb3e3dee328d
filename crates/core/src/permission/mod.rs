//! The s04/s05 permission check: ask before anything it cannot prove harmless,
//! since a model can be steered by what it reads.
//!
//! ```text
//!  tool call ─► check_tool_call ─┬─ Command: deny list (leaf of bash) ──► Deny("Permission denied by deny list")
//!   (its Subject)                ├─ Command: classify (tokenised)     ──► Ask(reason)   → "Allow? [y/N]"
//!                                ├─ WrittenPath: .env, .git/config,
//!                                │  .git/hooks/*                      ──► Ask(reason)
//!                                └─ anything else                     ──► Allow
//! ```
//!
//! | module | what |
//! |---|---|
//! | [`tokenize`](mod@tokenize) | the shell tokeniser: simple commands, redirections, and what cannot be known before running |
//! | [`classify`](mod@classify) | the destructive-command classifier: why a command needs a "yes" |
//! | this one | the verdict on one tool call |
//! | [`crate::tools::bash::deny`] | the deny list, owned by the bash tool so every chapter refuses the same |
//!
//! Key insight: a destructive command is found by its **command word**, not by a substring.
//! `pseudocode`, `model list` and `echo rm x` are harmless; `echo hi && rm x` and `sh -c 'rm x'`
//! are not (course §3). And what cannot be read is asked about: `$X v`, `$(echo rm) v`,
//! `/bin/r? v`, `eval …`, `python3 -c …`, `echo 'rm v' | sh` all ask, because the word that runs is
//! only known when it runs.
//!
//! Only where "yes" can change the outcome is anything asked: a file tool's path outside the
//! workspace is not asked about, since the tool refuses it anyway.
//!
//! ## What still passes (honestly)
//! The check reads the command line; it does not run it. It lets through, by design:
//! - programs and scripts it does not know: `./build.sh`, `make`, `cargo run`, `python3 x.py`,
//!   `npm test` run whatever their files say (a script file written a moment earlier included);
//! - commands that write files as their job: compilers, `git commit`, `touch`, `mkdir`, and any
//!   writer not listed in [`classify`](mod@classify), such as `uniq in out` or `split`;
//! - a file that does not exist yet counts as harmless to create, even if a later command
//!   of a *later* tool call overwrites something with it;
//! - `kill`, `pkill`, network clients, and anything that consumes resources;
//! - a script file read by `sh FILE`, `awk -f FILE` or `sed -f FILE` is not read.
//!
//! The backstop is the OS sandbox of the bash tool (the workspace is the only writable place);
//! this check is the lesson a learner sees, and a guard rail for an honest model.

pub mod classify;
pub mod tokenize;

use crate::dispatch::{Subject, ToolCall};
use crate::workspace::Workspace;

pub use crate::tools::bash::deny::{DENY_LIST, deny_list_match};
pub use classify::{DELETE_COMMANDS, Surroundings, Unknown, classify, steering_file};
pub use tokenize::{MAX_NESTING, Redirect, Script, SimpleCommand, TokenizeError, parse, tokenize};

/// Says whether a shell command needs the user's "yes", and why, judged without a workspace:
/// every path is taken to exist ([`Unknown`]). `Some(reason)`, a short English phrase such as
/// `deletes files with 'rm'`, or `None` when it runs.
pub fn is_destructive(command: &str) -> Option<String> {
    classify(command, &Unknown)
}

impl Surroundings for Workspace {
    fn exists(&self, path: &str) -> bool {
        self.root().join(path).symlink_metadata().is_ok()
    }
    fn is_dir(&self, path: &str) -> bool {
        self.root().join(path).is_dir()
    }
    fn inside(&self, path: &str) -> bool {
        self.contains(path)
    }
}

/// The text of [`Verdict::Deny`] for a deny-list match (course §3).
pub const DENIED_BY_DENY_LIST: &str = "Permission denied by deny list";

/// The text a permission hook returns when the user refuses (course §3).
pub const DENIED_BY_USER: &str = "Permission denied by user";

/// What the permission check decides about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Refuse it; the text is the `tool_result` ([`DENIED_BY_DENY_LIST`]).
    Deny(String),
    /// Ask the user `Allow? [y/N]`; the text says why, such as
    /// `Destructive command (deletes files with 'rm'): rm -rf build`.
    Ask(String),
}

/// The s04/s05 permission check of one tool call, judged on what the tool says its input is
/// about ([`Subject`]), never on the tool's name.
///
/// - [`Subject::Command`] (`bash`): a command matching the [`DENY_LIST`] → `Deny("Permission
///   denied by deny list")`; one that [`classify()`] asks about → `Ask("Destructive command
///   (REASON): COMMAND")`, with the whole command (the prompt shows it wrapped, never cut).
/// - [`Subject::WrittenPath`] (`write_file`, `edit_file`) that steers later runs
///   ([`steering_file`]: `.env`, `.git/config`, `.git/hooks/*`) → `Ask("Writes a file that steers
///   later runs (WHAT): PATH (TOOL)")`.
/// - Everything else → `Allow`. A path outside the workspace is **not** asked about: the tool
///   refuses it whatever the answer, so a "yes" would change nothing. An input that did not parse
///   ([`Subject::Nothing`]) never runs: its result is the parse error.
///
/// `ws` is the workspace as the classifier sees it ([`Surroundings`]).
pub fn check_tool_call(call: &ToolCall, ws: &dyn Surroundings) -> Verdict {
    match &call.subject {
        Subject::Command(command) => {
            if deny_list_match(command).is_some() {
                return Verdict::Deny(DENIED_BY_DENY_LIST.to_string());
            }
            match classify(command, ws) {
                Some(reason) => Verdict::Ask(format!("Destructive command ({reason}): {command}")),
                None => Verdict::Allow,
            }
        }
        Subject::WrittenPath(path) => match steering_file(path) {
            Some(what) => {
                Verdict::Ask(format!("Writes a file that steers later runs ({what}): {path} ({})", call.name))
            }
            None => Verdict::Allow,
        },
        Subject::Path(_) | Subject::PathPattern { .. } | Subject::Text(_) | Subject::Nothing => {
            Verdict::Allow
        }
    }
}

#[cfg(test)]
mod tests;
