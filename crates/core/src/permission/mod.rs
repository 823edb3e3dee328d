//! The s04/s05 permission check: ask before anything it cannot show to be harmless, since a
//! model can be steered by what it reads.
//!
//! ```text
//!  tool call ─► check_tool_call ─┬─ Command: deny list (leaf of bash) ──► Deny("Permission denied by deny list")
//!   (its Subject)                ├─ Command: the bash grammar finds   ──► Ask(question) → "Allow? [y/N]"
//!                                │  syntax it does not read in full,
//!                                │  or judge finds a program not on
//!                                │  the known list, a destructive word,
//!                                │  a write that is not a new file
//!                                ├─ WrittenPath: .env, under .git or
//!                                │  .memory, a bare repository's name
//!                                │  (also through a symlink)          ──► Ask(question)
//!                                └─ anything else                     ──► Allow
//! ```
//!
//! | module | what |
//! |---|---|
//! | [`grammar`](mod@grammar) | the command read with tree-sitter-bash: the syntax accepted, its simple commands, and the name of whatever else it holds |
//! | [`known`](mod@known) | the list a learner reads: the programs that run unasked, and with which arguments |
//! | [`classify`](mod@classify) | the classifier: every reason a command needs a "yes" |
//! | [`session`](mod@session) | "always" for the session: the `a` answer, `--allow`, `/permissions` |
//! | this one | the verdict on one tool call |
//! | [`crate::tools::bash::deny`] | the deny list, owned by the bash tool so every chapter refuses the same |
//!
//! Key insight: a command runs unasked only when it is **shown** to be harmless: every program in
//! it is on a short list of known programs, with arguments under which it only reads or only
//! writes new files inside the workspace. The course asks only about destructive words (`rm`
//! and kin, by command word: `pseudocode`, `model list` and `echo rm x` are harmless; `echo hi &&
//! rm x` and `sh -c 'rm x'` are not, course §3); the stricter rule is ours, because what it does
//! not recognise is exactly what an attacker uses (`sort -uo .env`, `gzip v`, `git log
//! --output=v`, `sh /dev/stdin <<E`).
//!
//! Only where "yes" can change the outcome is anything asked: a file tool's path outside the
//! workspace is not asked about, since the tool refuses it anyway.
//!
//! ## What still passes (honestly)
//! The check reads the command line; it does not run it. What runs unasked may still:
//! - create new files inside the workspace (of any size: `yes > big` fills the disk), append to
//!   plain files there (an edit, as `write_file` and `edit_file` make unasked), and read anything
//!   the sandbox lets it read (`cat .env` included: the model may see the key);
//! - in a workspace that is your home folder, write its shell start-up files (`.bashrc`,
//!   `.profile`) as it writes any file: only `.env` and `.git` steer later runs here;
//! - run a program the user allowed for the session (`a`, `--allow`), which may do anything,
//!   `.env` included; the harness says at exit when the `.env` it read has changed;
//! - take a listed name from a `PATH` that puts a workspace folder first (the harness's own
//!   `PATH`, which the check does not read);
//! - run git with the configuration the user's own `~/.gitconfig` and the workspace's existing
//!   `.git/config` give it (the check keeps the latter from being written unasked);
//! - run a script it was allowed once (`a` on `./build.sh`) after the script has changed.
//!
//! The grammar accepts a small language (plain words and strings, commands, pipelines, lists,
//! literal redirections and here-documents): a variable, a substitution, a function, a loop or
//! an `if` asks, however harmless (`for f in *.py; do echo $f; done`). That is the price of
//! reading in full what runs unasked; `a` and `--allow` waive what names a program.
//!
//! ## Size
//! The old hand-written tokeniser (714 lines) is gone; the grammar's walk (`grammar.rs`) is
//! smaller, and most of the code is still the known-program rules of `classify.rs` (how `git`,
//! `find`, `sed`, `cp`, `tar` … parse their options), which the grammar cannot replace: it reads
//! the shell, not each program's options. The whole is about 3,800 lines, against 3,509 before:
//! the tokeniser's lines went, and the grammar's walk and its parse budget, the GNU option reader
//! for sed, getopt's clusters for the wrappers, the bare-repository rules and the new tests came.
//! Each of those closed a way a command ran unasked; none could be had for fewer lines without
//! reading some option or shape less exactly.
//!
//! The backstop is the OS sandbox of the bash tool (the workspace is the only writable place);
//! this check is what guards the workspace's own files, `.env` and `.git`.

pub mod classify;
pub mod grammar;
pub mod known;
pub mod session;

use crate::approve::Question;
use crate::dispatch::{Subject, ToolCall};
use crate::workspace::Workspace;

pub use crate::tools::bash::deny::{DENY_LIST, deny_list_match};
pub use classify::{
    Concern, DELETE_COMMANDS, Finding, REPOSITORY_NAMES, Surroundings, Unknown, classify, command_key, judge,
    repository_file, steering_file,
};
pub use grammar::{
    MAX_COMMAND_LEN, MAX_NESTING, PARSE_BUDGET, Redirect, Script, SimpleCommand, Unread, parse, parse_by,
};
pub use session::{Allowance, AlwaysAllowed, SessionApprover, Source};

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
    fn plain_file(&self, path: &str) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.root().join(path).symlink_metadata().is_ok_and(|m| m.is_file() && m.nlink() == 1)
    }
    fn resolved(&self, path: &str) -> Option<String> {
        self.locate(path).ok().map(|p| p.relative().to_string_lossy().into_owned())
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
    /// Ask the user `Allow? [y/N]`: the question says why, what about, and what an `a` answer
    /// would allow for the session, such as `Destructive command (deletes files with 'rm'): rm
    /// -rf build` with `always = ["rm"]`.
    Ask(Question),
}

/// The s04/s05 permission check of one tool call, judged on what the tool says its input is
/// about ([`Subject`]), never on the tool's name.
///
/// - [`Subject::Command`] (`bash`): a command matching the [`DENY_LIST`] → `Deny("Permission
///   denied by deny list")`; one that [`judge()`] finds reasons against → `Ask` with the text
///   `KIND (REASON; REASON…): COMMAND`, where KIND is the most serious finding's
///   ([`Concern::question`]: `Destructive command` for `rm x`, `Unknown command` for
///   `python3 x.py`, `Command with side effects` for `git log --output=v`), the whole command
///   (the prompt shows it wrapped, never cut), and as [`Question::always`] the programs of the
///   findings when every finding names one (see [`session`](mod@session)).
/// - [`Subject::WrittenPath`] (`write_file`, `edit_file`) that steers later runs
///   ([`steering_file`]: `.env`, anything under `.git`), as given or once its symlinks are
///   followed → `Ask("Writes a file that steers later runs (WHAT): PATH (TOOL)")`, never with
///   `a`.
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
            let findings = judge(command, ws);
            if findings.is_empty() {
                return Verdict::Allow;
            }
            let mut reasons: Vec<&str> = Vec::new();
            for f in &findings {
                if !reasons.contains(&f.reason.as_str()) {
                    reasons.push(&f.reason);
                }
            }
            let mut always: Vec<String> = Vec::new();
            if findings.iter().all(|f| f.program.is_some()) {
                for program in findings.iter().filter_map(|f| f.program.clone()) {
                    if !always.contains(&program) {
                        always.push(program);
                    }
                }
            }
            // The question names what is known: destructive only when a finding destroys
            // something; a program the check does not know is unknown, not destructive.
            let concern = findings.iter().map(|f| f.concern).min().unwrap_or(Concern::Unknown);
            Verdict::Ask(Question::new(
                format!("{} ({})", concern.question(), reasons.join("; ")),
                command,
                always,
            ))
        }
        Subject::WrittenPath(path) => {
            let resolved = ws.resolved(path).filter(|r| r.as_str() != path.trim_start_matches("./"));
            match (steering_file(path), resolved.as_deref().and_then(steering_file)) {
                (Some(what), _) => Verdict::Ask(Question::new(
                    format!("Writes a file that steers later runs ({what})"),
                    format!("{path} ({})", call.name),
                    Vec::new(),
                )),
                (None, Some(what)) => Verdict::Ask(Question::new(
                    format!("Writes a file that steers later runs ({what})"),
                    format!("{path}, a link to {} ({})", resolved.unwrap_or_default(), call.name),
                    Vec::new(),
                )),
                (None, None) => {
                    let relative = resolved.clone().unwrap_or_else(|| path.clone());
                    match repository_file(&relative, ws) {
                        Some(folder) => Verdict::Ask(Question::new(
                            format!(
                                "Writes a name git reads at the root of a bare repository, in {folder}, which has no .git (its config can make git run commands)"
                            ),
                            format!("{path} ({})", call.name),
                            Vec::new(),
                        )),
                        None => Verdict::Allow,
                    }
                }
            }
        }
        Subject::Path(_) | Subject::PathPattern { .. } | Subject::Text(_) | Subject::Nothing => {
            Verdict::Allow
        }
    }
}

#[cfg(test)]
mod tests;
