//! The classifier: why a shell command needs a "yes" before it runs.
//!
//! [`judge`] reads the command with the [bash grammar](mod@super::grammar) and lists every
//! [`Finding`]; no finding means the command runs unasked. A command the grammar does not read
//! in full (an expansion, a substitution, a function, a compound command, bash-only syntax, a
//! syntax error) gives one finding that names what it holds. The rule (ours, stricter than the
//! course's): a command runs unasked only when **every program in it is on the list of known
//! programs** ([`known`](mod@super::known)) with arguments under which it only reads, or only
//! writes new files inside the workspace, and when every redirection does the same. So it asks
//! about:
//! - a program **not on the list** (`python3 x.py`, `make`, `gzip v`, `vim -es …`, `./build.sh`,
//!   `setarch x86_64 …`): nothing tells what it does;
//! - a listed program with an option that writes or runs something (`sort -uo v`, `git log
//!   --output=v`, `find -delete`, `tar --checkpoint-action=…`, `sed -i`), or with arguments only
//!   known when it runs (`sort $f`, `git diff *.rs`: a file named `--output=v` is an option);
//! - the course's **destructive words** (`rm`, `rmdir`, `unlink`, `shred`, `del`, …), by command
//!   word, wherever they stand (`echo hi && rm x`, `sh -c 'rm x'`, `nice rm x`);
//! - anything it **cannot read**: whatever the grammar refuses, a glob or brace in command
//!   position, `eval`, `source`, `alias`, `trap`, a shell reading standard input, a here-document
//!   or a script file (`sh /dev/stdin <<E`), a command word that only arrives when it runs (`echo
//!   rm v | xargs env`);
//! - a **variable** a program could take code from (`PATH=…`, `BASH_ENV=…`, `LD_PRELOAD=…`;
//!   see [`known::HARMLESS_VARIABLES`]);
//! - a **write** that is not a new file inside the workspace: a redirection onto a file that
//!   exists (`>`, `>|`, `&>`, `<>`), anything outside the workspace, any write after a `cd`, and
//!   any write of a file that steers later runs ([`steering_file`]: `.env`, anything under
//!   `.git`). Appending (`>>`) is fine onto a plain file inside the workspace.
//!
//! Each finding says which program it is about ([`Finding::program`]), so a user can allow that
//! program for the rest of the session (`a`, `--allow`); a finding about a write that steers
//! later runs, a substitution or a redirection names no program and is asked about every time.
//!
//! "Exists" is asked of the workspace ([`Surroundings`]); a path that an earlier command of the
//! same line mentions, or any path after a `cd`, is taken to exist, so `mv v x; > x` still asks.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::grammar::{MAX_NESTING, PARSE_BUDGET, Script, SimpleCommand, Unread, parse_by};
use super::known::{self, Entry, GIT_READS, SUBCOMMAND_PROGRAMS, SYSTEM_DIRS, harmless_variable};

/// What the classifier asks of the workspace. Paths are as the command gives them, relative to
/// the workspace root unless absolute.
pub trait Surroundings {
    /// `true` when `path` names something that exists (a symlink counts, dangling or not).
    fn exists(&self, path: &str) -> bool;
    /// `true` when `path` is an existing folder.
    fn is_dir(&self, path: &str) -> bool;
    /// `true` when `path` resolves inside the workspace (the workspace rule, course §1).
    fn inside(&self, path: &str) -> bool;
    /// `true` when `path` is a regular file that is not a symlink and has no other name (one
    /// hard link), so appending to it changes that file alone. The careful default is `false`.
    fn plain_file(&self, _path: &str) -> bool {
        false
    }
    /// `path` relative to the workspace root once every symlink on the way is followed, when it
    /// resolves inside the workspace (`x` → `.env` for a link `x` to `.env`). The default knows
    /// nothing (`None`).
    fn resolved(&self, _path: &str) -> Option<String> {
        None
    }
}

/// Surroundings that know nothing: every path exists and is a file; a path is inside when it is
/// relative and has no `..`. The careful answer for [`is_destructive`](super::is_destructive),
/// which has no workspace.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unknown;

impl Surroundings for Unknown {
    fn exists(&self, _: &str) -> bool {
        true
    }
    fn is_dir(&self, _: &str) -> bool {
        false
    }
    fn inside(&self, path: &str) -> bool {
        !path.starts_with('/') && !path.split('/').any(|p| p == "..")
    }
}

/// What a [`Finding`] knows about the command, most serious first: the question's first words
/// say the most serious of a command's findings ([`Concern::question`]), so a command is called
/// destructive only when it is known to destroy something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Concern {
    /// It deletes, overwrites or edits in place what exists, or writes outside the workspace
    /// (`rm x`, `echo x > existing`, `sed -i`, `cp a b` onto `b`, `git reset --hard`).
    Destroys,
    /// What it does cannot be known before it runs: a program not on the list, a script this
    /// check does not read, an option it does not know, a value only known when it runs.
    Unknown,
    /// It is known to do something beyond reading: write a new file, open a connection, set a
    /// variable or configuration that can make programs run code (`git log --output=v`,
    /// `BASH_ENV=x cmd`).
    SideEffects,
}

impl Concern {
    /// The question's first words for a command whose most serious finding is this:
    /// `Destructive command`, `Unknown command`, `Command with side effects`.
    pub fn question(self) -> &'static str {
        match self {
            Concern::Destroys => "Destructive command",
            Concern::Unknown => "Unknown command",
            Concern::SideEffects => "Command with side effects",
        }
    }
}

/// One reason a command needs a "yes".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// A short English phrase, such as `deletes files with 'rm'`.
    pub reason: String,
    /// What kind of reason it is: the command destroys something, cannot be known, or does
    /// something known beyond reading.
    pub concern: Concern,
    /// The program it is about, as an `a` answer would allow it for the session: `python3`,
    /// `git commit` (see [`command_key`]); `None` when no allowance may waive it (a write that
    /// steers later runs, a redirection, a substitution, something unreadable).
    pub program: Option<String>,
}

/// Every reason `command` needs the user's "yes", in the order found (see the module docs); an
/// empty list when it runs unasked. A command that cannot be tokenised gives one finding:
/// `cannot be parsed (a syntax error), so what it does cannot be known`.
pub fn judge(command: &str, ws: &dyn Surroundings) -> Vec<Finding> {
    // Two passes: the commands of a pipeline or of `&` run at the same time, so a link that a
    // later command makes may already be there when an earlier one writes. The first pass
    // finds every path `ln` or `cp` makes anywhere in the line; the second judges with them.
    // One budget of parsing time for the whole check, nested scripts included (see
    // [`PARSE_BUDGET`]); each script is parsed once, both passes share the results.
    let deadline = Instant::now() + PARSE_BUDGET;
    let parsed = RefCell::new(HashMap::new());
    let mut first = State::new(ws, &parsed, deadline, HashSet::new());
    first.script(command, 0);
    let mut state = State::new(ws, &parsed, deadline, first.made);
    state.script(command, 0);
    // A line that names a file steering later runs (`.env`, `.git`, `.memory`) anywhere, in an
    // output option, a sed or awk script, a `-fprint`, and needs a yes anyway is asked whatever
    // was allowed: an allowance of `sed` or `git log` is not one to write `.env` or `.git/config`.
    if mentions_steering(command).is_some() {
        for finding in &mut state.findings {
            finding.program = None;
        }
    }
    let mut seen = HashSet::new();
    state.findings.retain(|f| seen.insert((f.reason.clone(), f.program.clone())));
    state.findings
}

/// The first reason of [`judge`], or `None` when `command` runs unasked.
pub fn classify(command: &str, ws: &dyn Surroundings) -> Option<String> {
    judge(command, ws).into_iter().next().map(|f| f.reason)
}

/// Command words that delete files (compared case-insensitively, after the directory and a
/// `.exe` suffix are stripped): POSIX `rm`, `rmdir`, `unlink`, `shred`; Windows `del`, `erase`,
/// `rd`; PowerShell `Remove-Item` (course §3).
pub const DELETE_COMMANDS: &[&str] = &["rm", "rmdir", "unlink", "shred", "del", "erase", "rd", "remove-item"];

/// Builtins whose effect cannot be read from the command line: they run code given as text,
/// from a file, or later, or change what a name runs.
const UNREADABLE: &[&str] =
    &["eval", "source", ".", "coproc", "fc", "alias", "trap", "enable", "hash", "bind", "function"];

/// The program an allowance names for a command whose program is `name` and arguments `args`:
/// `name`, or `name SUB` for the programs of
/// [`SUBCOMMAND_PROGRAMS`] (`git commit`, `cargo test`;
/// options and their values before the subcommand are skipped).
pub fn command_key(name: &str, args: &[String]) -> String {
    if !SUBCOMMAND_PROGRAMS.contains(&name) {
        return name.to_string();
    }
    let with_value: &[&str] = match name {
        "git" => &["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"],
        "make" => &["-C", "-f", "-I", "-o", "-W", "--directory", "--file", "--makefile"],
        "docker" | "podman" => &["-H", "--host", "--context", "--config", "-c", "--log-level", "-l"],
        _ => &[],
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if with_value.contains(&a.as_str()) {
            i += 2;
        } else if a.starts_with('-') || a.starts_with('+') {
            i += 1;
        } else {
            return format!("{name} {a}");
        }
    }
    name.to_string()
}

/// A classification in progress: the surroundings, what earlier commands of the same line
/// changed (a `cd`), named, or defined, and the findings so far.
struct State<'a> {
    ws: &'a dyn Surroundings,
    /// Each script read once for both passes (`sh -c` scripts included).
    parsed: &'a RefCell<HashMap<String, Result<Script, Unread>>>,
    /// When parsing stops for this check ([`PARSE_BUDGET`] after it began).
    deadline: Instant,
    cwd_changed: bool,
    mentioned: HashSet<String>,
    /// The first component of each word in `mentioned` and each path in `linked`, normalised:
    /// what [`State::repository_shaped`] looks up, once per git, in constant time (scanning
    /// `mentioned` for each git made a line of 4,000 words and 4,000 `git` quadratic).
    mentioned_tops: HashSet<String>,
    /// The check ran out of time ([`PARSE_BUDGET`] twice over): one finding says so and the
    /// rest of the line is not judged.
    out_of_time: bool,
    /// Some redirection of the line writes a file, so `/dev/stdout` or `/dev/fd/N` may be one.
    fds_to_files: bool,
    /// Paths an `ln` or `cp` anywhere in the line makes, which may be links: a write at or under
    /// one could land anywhere (`ln -s / r && echo x > r/etc/f`). Found by a first pass.
    linked: HashSet<String>,
    /// Paths this pass has seen `ln` or `cp` make (the first pass's result).
    made: HashSet<String>,
    /// Folders an earlier `mkdir` of the line makes: a copy into one lands inside it.
    dirs: HashSet<String>,
    findings: Vec<Finding>,
}

/// A command's words from its command word on, with what could change each.
#[derive(Clone, Copy)]
struct Words<'w> {
    words: &'w [String],
    unknown: &'w [Option<&'static str>],
    splits: &'w [bool],
    /// More arguments arrive when it runs (`xargs`, `find -exec … {}`).
    extra: bool,
}

impl<'w> Words<'w> {
    fn from(self, i: usize) -> Words<'w> {
        Words {
            words: self.words.get(i..).unwrap_or_default(),
            unknown: self.unknown.get(i..).unwrap_or_default(),
            splits: self.splits.get(i..).unwrap_or_default(),
            extra: self.extra,
        }
    }
    fn take(self, n: usize) -> Words<'w> {
        Words {
            words: self.words.get(..n).unwrap_or(self.words),
            unknown: self.unknown.get(..n).unwrap_or(self.unknown),
            splits: self.splits.get(..n).unwrap_or(self.splits),
            extra: self.extra,
        }
    }
    fn get(&self, i: usize) -> Option<&'w str> {
        self.words.get(i).map(String::as_str)
    }
    fn unknown(&self, i: usize) -> Option<&'static str> {
        self.unknown.get(i).copied().flatten()
    }
    fn splits(&self, i: usize) -> bool {
        self.splits.get(i).copied().unwrap_or(false)
    }
    /// The words after the command word.
    fn args(&self) -> &'w [String] {
        self.words.get(1..).unwrap_or_default()
    }
    /// Why the arguments cannot be known before it runs, if they cannot.
    fn args_unknown(&self) -> Option<String> {
        if let Some(why) = self.unknown.iter().skip(1).flatten().next() {
            return Some(format!("its arguments hold {why}, so what it does cannot be known before it runs"));
        }
        self.extra.then(|| "it gets more arguments when it runs, so what it does cannot be known".to_string())
    }
}

/// How a file is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    /// Created, or truncated when it exists (`>`, `cp`, `tee`).
    Create,
    /// Appended to, or created (`>>`, `tee -a`).
    Append,
    /// Created when missing; an existing one keeps its content (`touch`, `mkdir`, `ln`).
    Make,
}

impl<'a> State<'a> {
    fn new(
        ws: &'a dyn Surroundings,
        parsed: &'a RefCell<HashMap<String, Result<Script, Unread>>>,
        deadline: Instant,
        linked: HashSet<String>,
    ) -> Self {
        State {
            ws,
            parsed,
            deadline,
            cwd_changed: false,
            mentioned: HashSet::new(),
            mentioned_tops: linked.iter().map(|l| top(l)).collect(),
            out_of_time: false,
            fds_to_files: false,
            linked,
            made: HashSet::new(),
            dirs: HashSet::new(),
            findings: Vec::new(),
        }
    }

    /// A finding that the command cannot be known ([`Concern::Unknown`]), the most common kind.
    fn push(&mut self, program: Option<String>, reason: impl Into<String>) {
        self.finding(Concern::Unknown, program, reason);
    }

    /// A finding that the command destroys something ([`Concern::Destroys`]).
    fn destroys(&mut self, program: Option<String>, reason: impl Into<String>) {
        self.finding(Concern::Destroys, program, reason);
    }

    /// A finding that the command does something known beyond reading ([`Concern::SideEffects`]).
    fn effect(&mut self, program: Option<String>, reason: impl Into<String>) {
        self.finding(Concern::SideEffects, program, reason);
    }

    fn finding(&mut self, concern: Concern, program: Option<String>, reason: impl Into<String>) {
        self.findings.push(Finding { reason: reason.into(), concern, program });
    }

    /// Judges a whole command line at nesting `depth`.
    fn script(&mut self, script: &str, depth: usize) {
        if depth > MAX_NESTING {
            return self.push(None, Unread::TooDeep.to_string());
        }
        let deadline = self.deadline;
        let read = self
            .parsed
            .borrow_mut()
            .entry(script.to_string())
            .or_insert_with(|| parse_by(script, deadline))
            .clone();
        let parsed = match read {
            Ok(p) => p,
            Err(e) => return self.push(None, e.to_string()),
        };
        // Any redirection that opens a file, to read as well as to write (`3<v`): on Linux,
        // opening `/dev/fd/3` opens that file again by its path, with write access.
        let opens_files = parsed.commands.iter().flat_map(|c| &c.redirects).any(|r| {
            !matches!(r.op.as_str(), "<<" | "<<-" | "<<<")
                && !is_fd(&r.target)
                && r.target != "-"
                && !r.target.starts_with("/dev/")
        });
        self.fds_to_files |= opens_files;
        for command in &parsed.commands {
            if self.out_of_time {
                return;
            }
            if Instant::now() >= self.deadline + PARSE_BUDGET {
                self.out_of_time = true;
                return self.push(
                    None,
                    format!("takes this check more than {} ms to judge", (2 * PARSE_BUDGET).as_millis()),
                );
            }
            self.simple(command, depth);
            let named = command
                .words
                .iter()
                .chain(&command.assignments)
                .chain(command.redirects.iter().map(|r| &r.target));
            for word in named {
                if self.mentioned.insert(word.clone()) {
                    self.mentioned_tops.insert(top(word));
                }
            }
        }
    }

    /// `true` when `path` may exist by the time the command runs.
    fn may_exist(&self, path: &str) -> bool {
        self.cwd_changed || self.mentioned.contains(path) || self.ws.exists(path)
    }

    /// One simple command: its redirections, then its words.
    fn simple(&mut self, command: &SimpleCommand, depth: usize) {
        for a in &command.assignments {
            self.assignment(a);
        }
        for r in &command.redirects {
            if r.target.starts_with("/dev/tcp/") || r.target.starts_with("/dev/udp/") {
                self.effect(None, format!("opens a network connection ({} {})", r.op, r.target));
                continue;
            }
            let fd_copy = r.op == ">&" && is_fd(&r.target);
            if !(r.writes() || r.op == ">&") || fd_copy || r.target.is_empty() {
                continue; // inputs, here-documents, `2>&1`, `>&-`
            }
            if let Some(why) = r.unknown {
                self.push(None, format!("writes to a file named by {why} ({} {})", r.op, r.target));
                continue;
            }
            let how = if matches!(r.op.as_str(), ">>" | "&>>") { Write::Append } else { Write::Create };
            if let Some((concern, reason)) = self.write_target(&r.target, how) {
                self.finding(concern, None, format!("{reason} with '{}'", r.op));
            }
        }
        let words =
            Words { words: &command.words, unknown: &command.unknown, splits: &command.splits, extra: false };
        self.words(words, depth);
    }

    /// The program an allowance must name to waive a write of `target` by `key` (`cp`, `tee`…),
    /// or `None` when no allowance may: `target` steers later runs (`.env`, `.git/…`,
    /// `.memory/…`), gives a folder a bare repository's names, or is relative after a `cd`
    /// (`env -C .git/hooks cp x pre-commit`), where it may be any of those.
    fn write_program(&self, target: &str, key: &str) -> Option<String> {
        let steers = steering_file(target).is_some()
            || self.ws.resolved(target).as_deref().and_then(steering_file).is_some()
            || (!target.starts_with('/') && repository_file(target, self.ws).is_some())
            || (self.cwd_changed && !target.starts_with('/'));
        (!steers).then(|| key.to_string())
    }

    /// Why writing `target` needs a yes: it steers later runs, lies outside the workspace,
    /// comes after a `cd`, or (per `how`) would change a file that exists. Harmless devices never
    /// do.
    fn write_target(&self, target: &str, how: Write) -> Option<(Concern, String)> {
        self.write_target_of(target, how, false)
    }

    /// [`State::write_target`]; with `own`, `target` is what this very `ln` or `cp` makes, so
    /// only the folders above it are checked for links.
    fn write_target_of(&self, target: &str, how: Write, own: bool) -> Option<(Concern, String)> {
        use Concern::{Destroys, SideEffects, Unknown};
        if self.harmless_device(target) {
            return None;
        }
        if let Some(what) = steering_file(target) {
            return Some((SideEffects, format!("writes {target}, {what}")));
        }
        if !target.starts_with('/')
            && let Some(folder) = repository_file(target, self.ws)
        {
            return Some((
                SideEffects,
                format!(
                    "writes {target}, a name git reads at the root of a bare repository, in {folder}, which has no .git"
                ),
            ));
        }
        if self.cwd_changed {
            return Some((
                Unknown,
                format!("writes {target} after a cd, where this check cannot see what it is"),
            ));
        }
        if let Some(link) = ancestors(target).skip(usize::from(own)).find(|a| self.linked.contains(a)) {
            let through = if link == normal(target) { String::new() } else { format!(" through {link}") };
            return Some((
                SideEffects,
                format!("writes {target}{through}, which another command of this line may make a link"),
            ));
        }
        if !self.ws.inside(target) {
            // The course's own destructive example: a write onto `/etc/`.
            return Some((Destroys, format!("writes outside the workspace ({target})")));
        }
        if let Some(what) = self.ws.resolved(target).as_deref().and_then(steering_file) {
            return Some((SideEffects, format!("writes {target}, a link to a file {what}")));
        }
        match how {
            Write::Create => self.may_exist(target).then(|| (Destroys, format!("overwrites {target}"))),
            Write::Append => {
                let plain = !self.mentioned.contains(target) && self.ws.plain_file(target);
                (self.may_exist(target) && !plain).then(|| {
                    (SideEffects, format!("appends to {target}, which may be a link to another file"))
                })
            }
            Write::Make => None,
        }
    }

    /// The devices that are fine to write to: `/dev/null`, `/dev/zero`, `/dev/tty`; and
    /// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` when no redirection of the line opens a file
    /// and no `flock` holds one (`exec 3>>f; : > /dev/fd/3` truncates `f`; so does `3<f`, since
    /// opening `/dev/fd/3` opens `f` again, writable), appending or not.
    fn harmless_device(&self, path: &str) -> bool {
        match path.strip_prefix("/dev/") {
            Some("null" | "zero" | "tty") => true,
            Some(rest) => {
                let stream = matches!(rest, "stdout" | "stderr")
                    || rest
                        .strip_prefix("fd/")
                        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
                stream && !self.fds_to_files
            }
            None => false,
        }
    }

    /// The words of a simple command (redirections already judged).
    fn words(&mut self, w: Words<'_>, depth: usize) {
        if depth > MAX_NESTING {
            return self.push(None, Unread::TooDeep.to_string());
        }
        let Some(word) = w.get(0) else { return };
        if let Some(why) = w.unknown(0) {
            return self.push(
                None,
                format!("the command word holds {why}, so the command cannot be known before it runs"),
            );
        }
        let name = match self.program_name(word) {
            Ok(name) => name,
            Err(finding) => return self.findings.push(finding),
        };
        let args = w.args();
        let key = command_key(&name, args);
        let folded = fold(&name);
        if DELETE_COMMANDS.contains(&folded.as_str()) {
            self.destroys(Some(folded.clone()), format!("deletes files with '{folded}'"));
            return self.steering_arguments(w);
        }
        if UNREADABLE.contains(&name.as_str())
            && !(name == "hash" && args.iter().all(|a| a == "-r" || a == "-t"))
        {
            return self.push(None, format!("'{name}' runs code that cannot be read before it runs"));
        }
        match known::entry(&name) {
            None => {
                self.push(Some(key), format!("runs '{name}', which is not on the list of known programs"));
                self.steering_arguments(w);
            }
            Some(Entry::Reader) => {}
            Some(Entry::ReaderUnless(unsafe_options)) => {
                // printf's arguments after the format are only printed.
                let judged = if name == "printf" && !w.extra { w.take(2) } else { w };
                if let Some(reason) = judged.args_unknown() {
                    return self.push(Some(key), format!("'{name}': {reason}"));
                }
                // bash's printf takes `-v NAME` and `-vNAME` (a variable, `PS4`, an array
                // subscript that runs a command): asked.
                if name == "printf" && args.first().is_none_or(|a| !a.starts_with("-v")) {
                    return;
                }
                if name == "printf" {
                    return self
                        .effect(Some(key), "'printf -v' assigns a shell variable, which can run commands");
                }
                if let Some(option) = unsafe_options.iter().find(|o| has_option(args, o)) {
                    self.effect(Some(key), format!("'{name} {option}' writes a file or runs a command"));
                    self.steering_arguments(w);
                }
            }
            Some(Entry::Judged) => self.judged(&name, &key, w, depth),
            Some(Entry::Wrapper) => self.wrapper(&name, &key, w, depth),
            Some(Entry::Shell) => self.shell(&name, &key, w, depth),
        }
    }

    /// A `NAME=value` word: a name other than a shell variable or a known harmless one asks.
    fn assignment(&mut self, word: &str) {
        let name = word.split('=').next().unwrap_or(word).trim_end_matches('+');
        if !harmless_variable(name) {
            self.effect(
                None,
                format!("sets {name}, which can tell programs where to find code or what to run"),
            );
        }
    }

    /// The program a command word names: a bare name, or a path into a system folder
    /// ([`SYSTEM_DIRS`]) taken as its last part. Any other path is a program or script this check
    /// cannot read: a finding naming it.
    fn program_name(&self, word: &str) -> Result<String, Finding> {
        if !word.contains(['/', '\\']) {
            return Ok(word.to_string());
        }
        let system = SYSTEM_DIRS.iter().any(|d| word.starts_with(d))
            && !word.split('/').any(|p| p == ".." || p == ".")
            && !self.ws.inside(word);
        let base = word.rsplit(['/', '\\']).next().unwrap_or(word);
        if system && !base.is_empty() {
            return Ok(base.to_string());
        }
        if DELETE_COMMANDS.contains(&fold(base).as_str()) {
            return Ok(base.to_string());
        }
        Err(Finding {
            reason: format!("runs '{word}', a program or script this check cannot read"),
            concern: Concern::Unknown,
            program: Some(word.to_string()),
        })
    }

    /// For a command that already asks: a finding for each argument that names a file steering
    /// later runs, so that no allowance for the program lets it write `.env` or `.git` silently.
    fn steering_arguments(&mut self, w: Words<'_>) {
        let named: Vec<&'static str> = w.args().iter().filter_map(|a| mentions_steering(a)).collect();
        if let Some(what) = named.first() {
            self.effect(None, format!("names {what}"));
        }
    }

    /// Pushes a finding when the arguments are only known when it runs; `true` when they are
    /// known.
    fn known_args(&mut self, name: &str, key: &str, w: Words<'_>) -> bool {
        match w.args_unknown() {
            Some(reason) => {
                self.push(Some(key.to_string()), format!("'{name}': {reason}"));
                false
            }
            None => true,
        }
    }

    /// The programs of [`known::JUDGED`] and their kin.
    fn judged(&mut self, name: &str, key: &str, w: Words<'_>, depth: usize) {
        if w.extra {
            // git's arguments may name its repository (`-C {}`): see `State::git`.
            let program = (name != "git").then(|| key.to_string());
            return self.push(
                program,
                format!("'{name}' gets more arguments when it runs, so what it does cannot be known"),
            );
        }
        match name {
            "cd" | "pushd" | "popd" => self.cwd_changed = true,
            "git" => self.git(w),
            "find" => self.find(key, w, depth),
            "sed" => self.sed(key, w),
            "awk" | "mawk" | "gawk" | "nawk" => self.awk(name, key, w),
            "cp" => self.cp(key, w),
            "ln" => self.ln(key, w),
            "mkdir" | "touch" => self.make(name, key, w),
            "tee" => self.tee(key, w),
            "tar" => self.tar(key, w),
            "uniq" | "xxd" => self.one_input(name, key, w),
            "test" | "[" => self.test(name, w),
            "set" => self.set(w),
            "read" => self.read(w),
            _ => {}
        }
    }

    /// A wrapper runs the command after its options; that command is judged in its place.
    fn wrapper(&mut self, name: &str, key: &str, w: Words<'_>, depth: usize) {
        let args = w.args();
        // (short options without value, short options with a value, long with a value)
        let spec: (&str, &str, &[&str]) = match name {
            "command" => {
                if args.iter().take_while(|a| a.starts_with('-')).any(|a| a.contains(['v', 'V'])) {
                    return; // `command -v rm` only says what `rm` is
                }
                ("p", "", &[])
            }
            "builtin" | "nohup" => ("", "", &[]),
            "setsid" => ("cfw", "", &[]),
            "exec" => ("cl", "a", &[]),
            "time" => ("pvqa", "fo", &["--format", "--output"]),
            "nice" => ("", "n", &["--adjustment"]),
            "ionice" => ("t", "cn", &["--class", "--classdata"]),
            "stdbuf" => ("", "ioe", &["--input", "--output", "--error"]),
            "timeout" => ("v", "ks", &["--kill-after", "--signal"]),
            // `--eof`, `--max-lines` and `--replace` take a value only after `=`, never the next
            // word (GNU xargs' optional arguments).
            "xargs" => (
                "0oprtx",
                "adEILnPs",
                &["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars"],
            ),
            "env" => ("i0v", "uCS", &["--unset", "--chdir", "--split-string"]),
            "flock" => ("sxunoFe", "Ew", &["--conflict-exit-code", "--timeout"]),
            "taskset" => ("ac", "", &[]),
            _ => ("", "", &[]),
        };
        if name == "nice"
            && args.first().is_some_and(|a| {
                a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit())
            })
        {
            return self.words(w.from(2), depth + 1); // the old form `nice -10 CMD`
        }
        let Some((end, given)) = options(args, spec.0, spec.1, spec.2, name == "xargs") else {
            return self.push(
                Some(key.to_string()),
                format!(
                    "'{name}' has an option this check does not know, so the command it runs cannot be found"
                ),
            );
        };
        // Every value given to one of `keys`, in order (getopt keeps the last; a check must
        // read them all).
        let values = |keys: &[&str]| -> Vec<Option<String>> {
            given.iter().filter(|(k, _)| keys.contains(&k.as_str())).map(|(_, v)| v.clone()).collect()
        };
        if matches!(name, "ionice" | "taskset")
            && args
                .get(..end)
                .unwrap_or_default()
                .iter()
                .any(|a| a == "-p" || a == "--pid" || a == "-P" || a == "-u")
        {
            return; // changes a running process's priority or CPUs
        }
        match name {
            "env" => {
                if !values(&["-C", "--chdir"]).is_empty() {
                    self.cwd_changed = true;
                }
                if !values(&["-S", "--split-string"]).is_empty() {
                    // `env -S` splits its string by rules of its own (`\_` is a blank, `${X}`
                    // expands, `#` starts a comment) and puts the words before the rest of the
                    // line: what it runs is not what `sh` would read. Asked whatever was allowed.
                    return self.push(
                        None,
                        "'env -S' builds its command by splitting a string with rules of its own".to_owned(),
                    );
                }
            }
            "time" if !values(&["-o", "--output"]).is_empty() => {
                return self.effect(Some(key.to_string()), "'time -o' writes a file");
            }
            _ => {}
        }
        let mut start = end;
        match name {
            "env" => {
                while let Some(a) = args.get(start).filter(|a| is_assignment(a)) {
                    self.assignment(a);
                    start += 1;
                }
            }
            "timeout" | "taskset" => start += 1, // the duration, the mask
            "flock" => {
                // The lock file stays open in what flock runs (as descriptor 3): `/dev/fd/3`
                // there writes it.
                self.fds_to_files = true;
                // The lock file, created when missing, then a command or `-c SCRIPT`.
                if let Some(lock) = args.get(start)
                    && let Some((concern, reason)) = self.write_target(lock, Write::Make)
                {
                    self.finding(concern, Some(key.to_string()), format!("{reason} with 'flock'"));
                }
                start += 1;
                if matches!(args.get(start).map(String::as_str), Some("-c" | "--command")) {
                    match (args.get(start + 1), w.unknown(start + 2)) {
                        (Some(_), Some(why)) => self.push(
                            Some(key.to_string()),
                            format!("'flock -c' runs a script that holds {why}"),
                        ),
                        (Some(script), None) => self.script(script, depth + 1),
                        (None, _) => {}
                    }
                    return;
                }
            }
            _ => {}
        }
        // A word before the command that the shell may split could become the command itself
        // (`timeout $t ls` with `t='5 rm'`).
        if (1..=start.min(args.len())).any(|i| w.splits(i)) {
            return self.push(
                Some(key.to_string()),
                format!("'{name}': {}", w.take(start + 1).args_unknown().unwrap_or_default()),
            );
        }
        let inner = w.from(1 + start);
        if inner.get(0).is_none() {
            if w.extra {
                // `echo rm v | xargs env`: the command arrives with the arguments, when it runs.
                return self.push(
                    None,
                    format!("'{name}' runs a command that only arrives when it runs (from xargs or find)"),
                );
            }
            return; // `exec 3>x`, `env` alone (it prints the environment), `nohup` alone
        }
        if name == "xargs" {
            let replace = xargs_replace(&given);
            return self.words_with_extra(inner, replace.as_deref(), "a value xargs gives it", depth + 1);
        }
        self.words(inner, depth + 1);
    }

    /// Judges `inner`, a command that gets more arguments when it runs (`xargs`, `find -exec`):
    /// each word holding `replace` (`{}`) is only known then.
    fn words_with_extra(&mut self, inner: Words<'_>, replace: Option<&str>, why: &'static str, depth: usize) {
        let unknown: Vec<Option<&'static str>> = inner
            .words
            .iter()
            .zip(inner.unknown)
            .map(|(word, u)| u.or_else(|| replace.filter(|r| !r.is_empty() && word.contains(r)).map(|_| why)))
            .collect();
        let marked = Words { words: inner.words, unknown: &unknown, splits: inner.splits, extra: true };
        self.words(marked, depth);
    }

    /// A shell: `-c SCRIPT` is judged; standard input, a here-document or a script file asks.
    fn shell(&mut self, name: &str, key: &str, w: Words<'_>, depth: usize) {
        let key = Some(key.to_string());
        if w.extra {
            return self.push(key, format!("'{name}' gets its script or arguments only when it runs"));
        }
        let args = w.args();
        let mut has_c = false;
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if w.unknown(i + 1).is_some() {
                break;
            }
            match a.as_str() {
                "--" => {
                    i += 1;
                    break;
                }
                "-o" | "+o" => {
                    if !args.get(i + 1).is_some_and(|o| SET_OPTIONS.contains(&o.as_str())) {
                        return self
                            .push(key, format!("'{name} {a}' sets a shell option this check does not know"));
                    }
                    i += 2;
                }
                "--login" | "--noprofile" | "--norc" | "--posix" => i += 1,
                a if a.starts_with('-') && !a.starts_with("--") && a.len() > 1 => {
                    // `-euo pipefail`: an `o` ends the cluster and takes the next word.
                    let (letters, takes_option) = match a[1..].strip_suffix('o') {
                        Some(rest) => (rest, true),
                        None => (&a[1..], false),
                    };
                    let option_known =
                        !takes_option || args.get(i + 1).is_some_and(|o| SET_OPTIONS.contains(&o.as_str()));
                    if !letters.chars().all(|c| "ceuxvlf".contains(c)) || !option_known {
                        return self.push(key, format!("'{name} {a}' is an option this check does not know"));
                    }
                    has_c |= letters.contains('c');
                    i += if takes_option { 2 } else { 1 };
                }
                a if a.starts_with('-') && a.len() > 1 => {
                    return self.push(key, format!("'{name} {a}' is an option this check does not know"));
                }
                _ => break,
            }
        }
        if has_c {
            return match (args.get(i), w.unknown(i + 1)) {
                (Some(_), Some(why)) => self.push(key, format!("'{name} -c' runs a script that holds {why}")),
                (Some(script), None) => self.script(script, depth + 1),
                (None, _) => {}
            };
        }
        match args.get(i) {
            None => self.push(key, format!("'{name}' reads commands from standard input")),
            Some(file) => {
                self.push(key, format!("'{name}' runs the script {file}, which this check does not read"))
            }
        }
    }

    /// `git`: the read-only subcommands of [`GIT_READS`], without `--output`, in the workspace's
    /// own repository.
    fn git(&mut self, w: Words<'_>) {
        let args = w.args();
        if let Some(name) = self.repository_shaped() {
            // Whatever was allowed: git would take the workspace for a bare repository, whose
            // `config` (core.fsmonitor, diff.external) runs commands, now and in the user's own
            // git later.
            return self.effect(
                None,
                format!(
                    "the workspace has no .git but has {name}, so git may take it for a repository whose configuration runs commands"
                ),
            );
        }
        // Which repository git uses is known only when git runs in this folder with words this
        // check sees: after a `cd` (or `env -C`), or with arguments that arrive when it runs
        // (xargs, `find -exec`), it may be a folder shaped as a bare repository, whose `config`
        // runs commands (an alias, core.fsmonitor) for any subcommand. Asked whatever was
        // allowed, as the workspace's own bare-repository shape is.
        if self.cwd_changed {
            return self.push(None, "runs git after a cd, in a repository this check cannot see");
        }
        if let Some(reason) = w.args_unknown() {
            // `git -C "$d" …`: the same, with a word known only when it runs.
            return self.push(None, format!("'git': {reason}"));
        }
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if !a.starts_with('-') {
                break;
            }
            match a.as_str() {
                "--no-pager"
                | "-P"
                | "--no-optional-locks"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-replace-objects"
                | "-p"
                | "--paginate"
                | "--version"
                | "-v" => i += 1,
                "-c" => return self.effect(None, "'git -c' sets configuration that can run commands"),
                a if a.starts_with("--config-env") || a.starts_with("--exec-path") => {
                    return self.effect(None, format!("'git {a}' changes what git runs"));
                }
                a if a == "-C" || a.starts_with("--git-dir") || a.starts_with("--work-tree") => {
                    // Asked whatever was allowed, as the workspace's own bare-repository shape
                    // is: a folder there may be shaped as a bare repository (git takes `sub/`
                    // with `HEAD`, `config`, `objects/`, `refs/` for one), whose `config` runs
                    // commands (core.fsmonitor) even for `git status`.
                    return self.effect(
                        None,
                        format!("'git {a}' uses another repository, whose configuration can run commands"),
                    );
                }
                // Unknown before the subcommand, it may take a value and hide a `-C` after it
                // (`git --namespace=x -C sub …`): asked whatever was allowed.
                a => return self.push(None, format!("'git {a}' is an option this check does not know")),
            }
        }
        let Some(sub) = args.get(i).map(String::as_str) else { return };
        let rest = args.get(i + 1..).unwrap_or_default();
        let key = Some(format!("git {sub}"));
        // A program named by an option (`ls-remote --upload-pack=CMD`, `-u CMD`): as strong as
        // `git -c`, asked whatever was allowed.
        if let Some(option) = rest.iter().find(|a| {
            a.starts_with("--upload-pack") || a.starts_with("--receive-pack") || a.starts_with("--exec")
        }) {
            return self.effect(None, format!("'git {sub} {option}' runs a program it names"));
        }
        if sub == "ls-remote" && rest.iter().any(|a| a.starts_with("-u") && !a.starts_with("--")) {
            return self.effect(None, format!("'git {sub} -u' runs a program it names"));
        }
        if !GIT_READS.contains(&sub) || !git_listing(sub, rest) {
            let (concern, reason) = git_reason(sub, rest, |p| self.may_exist(p))
                .map(|(concern, reason)| (concern, reason.to_string()))
                .unwrap_or_else(|| {
                    (
                        Concern::Unknown,
                        format!("'git {sub}' is not among the read-only git commands this check knows"),
                    )
                });
            self.finding(concern, key, reason);
            if git_writes_config(sub, rest) {
                // Whatever is allowed, .git/config is asked about every time.
                self.effect(None, format!("'git {sub}' writes .git/config, which can make git run commands"));
            }
            return self.steering_arguments(w);
        }
        if has_option(rest, "--output") {
            return self.effect(key, format!("writes a file with 'git {sub} --output'"));
        }
        if sub == "grep" && (has_option(rest, "-O") || has_option(rest, "--open-files-in-pager")) {
            self.effect(key, "'git grep -O' runs a pager command");
        }
    }

    /// The first of the names a bare repository has at its root (`HEAD`, `config`, `objects`,
    /// `refs`) that the workspace holds, or that this line names, when the workspace has no
    /// `.git`; `None` otherwise.
    fn repository_shaped(&self) -> Option<&'static str> {
        if self.ws.exists(".git") {
            return None;
        }
        REPOSITORY_NAMES.iter().copied().find(|n| self.ws.exists(n) || self.mentioned_tops.contains(*n))
    }

    /// `find`: `-delete` and `-fprint…` ask; `-exec CMD … ;` (also `-execdir`, `-ok`,
    /// `-okdir`) judges CMD as a command that gets file names when it runs.
    fn find(&mut self, key: &str, w: Words<'_>, depth: usize) {
        if !self.known_args("find", key, w) {
            return;
        }
        let mut i = 1;
        while let Some(a) = w.get(i) {
            match a {
                "-delete" => {
                    return self.destroys(Some(key.to_string()), "deletes files with 'find -delete'");
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    return self.effect(Some(key.to_string()), format!("writes a file with 'find {a}'"));
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let command = w.from(i + 1);
                    // The command ends at `;`, or at a `+` right after `{}`: any other `+` is
                    // one of its arguments (`-exec flock + rm v ;`).
                    let len = (0..command.words.len())
                        .find(|&k| {
                            command.get(k) == Some(";")
                                || (command.get(k) == Some("+") && k > 0 && command.get(k - 1) == Some("{}"))
                        })
                        .unwrap_or(command.words.len());
                    self.words_with_extra(
                        command.take(len),
                        Some("{}"),
                        "a file name find gives it",
                        depth + 1,
                    );
                    i += len + 1;
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// `sed`: in-place editing, a script from a file, and scripts that run commands or write
    /// files ask.
    fn sed(&mut self, key: &str, w: Words<'_>) {
        if !self.known_args("sed", key, w) {
            return;
        }
        let key = Some(key.to_string());
        let Some(sed) = sed_options(w.args()) else {
            return self.push(key, "'sed' has an option this check does not know");
        };
        if sed.in_place {
            self.destroys(key, "edits files in place with 'sed -i'");
            return self.steering_arguments(w);
        }
        if sed.file {
            return self.push(key, "runs a sed script from a file this check does not read");
        }
        if sed.scripts.iter().any(|s| sed_runs_or_writes(s)) {
            self.effect(key, "the sed script runs commands or writes files (e, w)");
        }
    }

    /// `awk`: a literal program without `system`, `|`, `>` or `@`, and plain options.
    fn awk(&mut self, name: &str, key: &str, w: Words<'_>) {
        let args = w.args();
        let key = Some(key.to_string());
        let mut i = 0;
        let mut programs = Vec::new();
        while let Some(a) = args.get(i) {
            if w.unknown(i + 1).is_some() {
                return self
                    .push(key, format!("'{name}': its program or options are only known when it runs"));
            }
            match a.as_str() {
                "-F" | "-v" | "--field-separator" | "--assign" => i += 2,
                "-e" | "--source" => {
                    programs.push(i + 1);
                    i += 2;
                }
                "--" => {
                    i += 1;
                    break;
                }
                "-f" | "--file" => {
                    return self.push(
                        key,
                        format!("'{name} -f' runs a program from a file this check does not read"),
                    );
                }
                a if a.starts_with("-F") || a.starts_with("-v") => i += 1,
                "-b" | "-c" | "-N" | "-P" | "-r" | "-s" | "-S" | "--sandbox" | "--posix"
                | "--traditional" => i += 1,
                a if a.starts_with('-') && a.len() > 1 => {
                    return self.push(key, format!("'{name} {a}' is an option this check does not know"));
                }
                _ => break,
            }
        }
        if programs.is_empty() {
            programs.push(i);
        }
        for p in programs {
            if let Some(why) = w.unknown(p + 1) {
                return self.push(key, format!("the awk program holds {why}"));
            }
            let program = w.get(p + 1).unwrap_or_default();
            if program.contains("system") || program.contains(['|', '>', '@']) {
                return self.effect(key, "the awk program can run commands or write files (system, |, >)");
            }
        }
    }

    /// `cp`: onto new files inside the workspace, plain options only.
    fn cp(&mut self, key: &str, w: Words<'_>) {
        if !self.known_args("cp", key, w) {
            return;
        }
        let long: &[&str] = &[
            "--archive",
            "--recursive",
            "--no-clobber",
            "--parents",
            "--preserve",
            "--no-preserve",
            "--verbose",
            "--dereference",
            "--no-dereference",
            "--target-directory",
            "--no-target-directory",
            "--update",
            "--link",
            "--symbolic-link",
            "--interactive",
            "--one-file-system",
            "--sparse",
            "--reflink",
            "--strip-trailing-slashes",
            "--force",
            "--remove-destination",
            "--backup",
            "--suffix",
        ];
        let Some(parsed) = parse_args(w.args(), "adfHilLnPpRrsTuvxb", "tS", long) else {
            return self.push(Some(key.to_string()), "'cp' has an option this check does not know");
        };
        // `-n` keeps an existing file only when no later `-i`, `-f` or `--remove-destination`
        // overrides it (coreutils takes the last): with any of them, the copy may replace.
        let no_clobber = (parsed.has('n', "--no-clobber")
            || parsed.long.iter().any(|l| l == "--update=none"))
            && !parsed.has('i', "--interactive")
            && !parsed.has('f', "--force")
            && !parsed.has('\0', "--remove-destination");
        let recursive = parsed.has('r', "--recursive") || parsed.has('R', "") || parsed.has('a', "--archive");
        let parents = parsed.has('\0', "--parents");
        for (target, is_tree) in self.copy_targets(&parsed, parents) {
            if self.harmless_device(&target) {
                continue;
            }
            if let Some((concern, reason)) = self.write_target_of(&target, Write::Make, true) {
                self.finding(concern, self.write_program(&target, key), format!("{reason} with 'cp'"));
            } else if self.may_exist(&target) {
                if is_tree && recursive {
                    self.destroys(
                        Some(key.to_string()),
                        format!("merges into {target}, which exists, with 'cp -r'"),
                    );
                } else if !no_clobber {
                    self.destroys(Some(key.to_string()), format!("overwrites {target} with 'cp'"));
                }
            }
            self.made.insert(normal(&target));
        }
    }

    /// The paths a copy or link creates: one per source inside a destination folder that exists
    /// (with `--parents`, the source's whole path), or the destination itself; each with whether
    /// it is (or would merge into) an existing folder.
    fn copy_targets(&self, parsed: &ParsedArgs, parents: bool) -> Vec<(String, bool)> {
        let (dest, sources): (String, Vec<&str>) = match parsed.value('t', "--target-directory") {
            Some(dir) => (dir, parsed.operands.iter().map(String::as_str).collect()),
            None => match parsed.operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    (last.clone(), rest.iter().map(String::as_str).collect())
                }
                _ => return Vec::new(),
            },
        };
        // `out/`: a folder, whether it exists now or an earlier `mkdir` of the line makes it.
        let slash = dest.ends_with('/');
        let dest = dest.trim_end_matches('/').to_string();
        let dest = if dest.is_empty() { "/".to_string() } else { dest };
        let folder =
            slash || self.dirs.contains(&normal(&dest)) || (!self.cwd_changed && self.ws.is_dir(&dest));
        let into_folder = parsed.value('t', "--target-directory").is_some()
            || (!parsed.has('T', "--no-target-directory") && folder);
        if !into_folder {
            return vec![(dest.clone(), self.ws.is_dir(&dest))];
        }
        sources
            .iter()
            .map(|s| {
                let s = s.trim_end_matches('/');
                let tail =
                    if parents { s.trim_start_matches('/') } else { s.rsplit('/').next().unwrap_or(s) };
                let target = format!("{dest}/{tail}");
                let is_dir = self.ws.is_dir(&target);
                (target, is_dir)
            })
            .collect()
    }

    /// `ln`: a new link inside the workspace.
    fn ln(&mut self, key: &str, w: Words<'_>) {
        if !self.known_args("ln", key, w) {
            return;
        }
        let long: &[&str] = &[
            "--symbolic",
            "--force",
            "--no-dereference",
            "--verbose",
            "--relative",
            "--no-target-directory",
            "--target-directory",
            "--logical",
            "--physical",
            "--backup",
            "--suffix",
            "--interactive",
        ];
        let Some(parsed) = parse_args(w.args(), "sfnvrTLPbi", "tS", long) else {
            return self.push(Some(key.to_string()), "'ln' has an option this check does not know");
        };
        // A backup (`-b`, `-S SUFFIX`, `--backup`, `--suffix`) moves an existing file aside and
        // puts the link in its place, as `-f` does.
        let force = parsed.has('f', "--force")
            || parsed.has('i', "--interactive")
            || parsed.has('b', "--backup")
            || parsed.has('S', "--suffix")
            || parsed.long.iter().any(|l| l.starts_with("--backup=") || l.starts_with("--suffix="));
        // A link to a file that steers later runs (`ln -s .git/config c`) lets a later write of
        // the link's name, which an allowance may cover, change that file: asked whatever was
        // allowed.
        let into_folder = parsed.has('t', "--target-directory");
        let sources = if into_folder {
            parsed.operands.len()
        } else {
            parsed.operands.len().saturating_sub(usize::from(parsed.operands.len() > 1))
        };
        for source in parsed.operands.iter().take(sources.max(1)) {
            if let Some(what) = steering_file(source) {
                self.effect(None, format!("makes a link to {source}, {what}"));
            }
        }
        let mut targets = self.copy_targets(&parsed, false);
        if targets.is_empty()
            && let [only] = parsed.operands.as_slice()
        {
            // `ln -s TARGET`: a link named like the target, in the current folder.
            let name = only.trim_end_matches('/').rsplit('/').next().unwrap_or(only).to_string();
            targets.push((name, false));
        }
        for (link, _) in targets {
            if let Some((concern, reason)) = self.write_target_of(&link, Write::Make, true) {
                self.finding(concern, self.write_program(&link, key), format!("{reason} with 'ln'"));
            } else if force && self.may_exist(&link) {
                self.destroys(Some(key.to_string()), format!("replaces {link} with 'ln -f'"));
            }
            self.made.insert(normal(&link));
        }
    }

    /// `mkdir` and `touch`: inside the workspace, never `.env` or under `.git`.
    fn make(&mut self, name: &str, key: &str, w: Words<'_>) {
        if !self.known_args(name, key, w) {
            return;
        }
        let parsed = match name {
            "mkdir" => parse_args(w.args(), "pv", "m", &["--parents", "--verbose", "--mode"]),
            _ => parse_args(
                w.args(),
                "acmfh",
                "dtr",
                &["--date", "--reference", "--time", "--no-create", "--no-dereference"],
            ),
        };
        let Some(parsed) = parsed else {
            return self
                .push(Some(key.to_string()), format!("'{name}' has an option this check does not know"));
        };
        for target in &parsed.operands {
            if let Some((concern, reason)) = self.write_target(target, Write::Make) {
                let program = self.write_program(target, key);
                self.finding(concern, program, format!("{reason} with '{name}'"));
            }
            if name == "mkdir" {
                self.dirs.insert(normal(target));
            }
        }
    }

    /// `tee`: onto new files, or appending (`-a`) to plain files, inside the workspace.
    fn tee(&mut self, key: &str, w: Words<'_>) {
        if !self.known_args("tee", key, w) {
            return;
        }
        let Some(parsed) =
            parse_args(w.args(), "aip", "", &["--append", "--ignore-interrupts", "--output-error"])
        else {
            return self.push(Some(key.to_string()), "'tee' has an option this check does not know");
        };
        let how = if parsed.has('a', "--append") { Write::Append } else { Write::Create };
        for target in &parsed.operands {
            if let Some((concern, reason)) = self.write_target(target, how) {
                let program = self.write_program(target, key);
                self.finding(concern, program, format!("{reason} with 'tee'"));
            }
        }
    }

    /// `tar`: listing, or creating a new archive inside the workspace, with plain options only.
    /// Extraction, `--remove-files`, `--checkpoint-action`, `--use-compress-program`,
    /// `--to-command`, `-I`, `-F`, a remote archive (`host:file`) and any other option ask.
    fn tar(&mut self, key: &str, w: Words<'_>) {
        if !self.known_args("tar", key, w) {
            return;
        }
        let key = Some(key.to_string());
        let mut args: Vec<String> = w.args().to_vec();
        // The old style, `tar cfz x.tgz dir`: the first word is a cluster without the dash, and
        // each letter that takes a value takes the next word, in order.
        if let Some(first) =
            args.first().filter(|f| !f.starts_with('-') && f.chars().all(|c| c.is_ascii_alphabetic()))
        {
            let mut rest = args[1..].iter().cloned();
            let mut expanded = Vec::new();
            for letter in first.chars() {
                expanded.push(format!("-{letter}"));
                if matches!(letter, 'f' | 'C' | 'b' | 'L' | 'N' | 'T' | 'V' | 'X' | 'g' | 'K' | 'H') {
                    expanded.extend(rest.next());
                }
            }
            expanded.extend(rest);
            args = expanded;
        }
        let long: &[&str] = &[
            "--create",
            "--list",
            "--file",
            "--gzip",
            "--bzip2",
            "--xz",
            "--zstd",
            "--verbose",
            "--directory",
            "--exclude",
            "--exclude-vcs",
            "--sort",
            "--owner",
            "--group",
            "--mtime",
            "--numeric-owner",
            "--totals",
            "--dereference",
            "--preserve-permissions",
            "--auto-compress",
            "--to-stdout",
        ];
        let Some(parsed) = parse_args(&args, "ctvzjJahpOk", "fC", long) else {
            return self.push(
                key,
                "'tar' has an option this check does not know (extraction, actions and programs ask)",
            );
        };
        let create = parsed.has('c', "--create");
        let list = parsed.has('t', "--list");
        if create == list {
            return self.push(key, "'tar' neither only lists nor only creates an archive");
        }
        let archive = parsed.value('f', "--file");
        if archive.as_deref().is_some_and(|a| a.contains(':')) {
            return self.effect(key, "'tar -f HOST:FILE' runs a remote shell");
        }
        if create
            && let Some(archive) = archive.filter(|a| a != "-")
            && let Some((concern, reason)) = self.write_target(&archive, Write::Create)
        {
            let program = key.and_then(|key| self.write_program(&archive, &key));
            self.finding(concern, program, format!("{reason} with 'tar -c'"));
        }
    }

    /// `uniq` and `xxd`: a second operand is an output file.
    fn one_input(&mut self, name: &str, key: &str, w: Words<'_>) {
        if !self.known_args(name, key, w) {
            return;
        }
        let values = if name == "uniq" { "fsw" } else { "cglsnoR" };
        let mut operands = Vec::new();
        let mut skip = false;
        let mut options_done = false;
        for a in w.args() {
            if std::mem::take(&mut skip) {
                continue;
            }
            if !options_done && a == "--" {
                options_done = true;
            } else if !options_done && a.starts_with('-') && a.len() > 1 {
                skip = !a.starts_with("--") && a.len() == 2 && values.contains(&a[1..]);
            } else {
                operands.push(a);
            }
        }
        if let Some(output) = operands.get(1) {
            let program = self.write_program(output, key);
            self.finding(
                Concern::SideEffects,
                program,
                format!("'{name}' writes its output to its second file, {output}"),
            );
        }
    }

    /// `test` and `[`: bash evaluates the name after `-v` (and `-R`) as arithmetic, so those
    /// ask, and so does an operator that is only known when it runs.
    fn test(&mut self, name: &str, w: Words<'_>) {
        let args = w.args();
        if args.iter().any(|a| a == "-v" || a == "-R") {
            return self.effect(
                None,
                format!("'{name} -v' makes bash evaluate a name, where a value can run a command"),
            );
        }
        // The grammar lets through no variable; a glob could still become an operator.
        if let Some(reason) = w.args_unknown() {
            self.push(None, format!("'{name}': {reason}"));
        }
    }

    /// `set`: the shell options of [`SET_OPTIONS`] (and their letters), or `-- ARGS`.
    fn set(&mut self, w: Words<'_>) {
        let args = w.args();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if w.unknown(i + 1).is_some() {
                return self.push(None, "'set' gets options only known when it runs");
            }
            if a == "--" || a == "-" || !(a.starts_with('-') || a.starts_with('+')) {
                return; // the positional parameters follow
            }
            if a == "-o" || a == "+o" {
                match args.get(i + 1) {
                    None => return,
                    Some(o) if SET_OPTIONS.contains(&o.as_str()) => i += 2,
                    Some(o) => {
                        return self.push(
                            None,
                            format!("'set -o {o}' changes the shell in a way this check does not know"),
                        );
                    }
                }
                continue;
            }
            // `-euo pipefail`: an `o` ends the cluster and takes the next word.
            let (letters, takes_option) = match a[1..].strip_suffix('o') {
                Some(rest) => (rest, true),
                None => (&a[1..], false),
            };
            let option_known =
                !takes_option || args.get(i + 1).is_some_and(|o| SET_OPTIONS.contains(&o.as_str()));
            if !letters.chars().all(|c| "euxvfCnBh".contains(c)) || !option_known {
                return self
                    .push(None, format!("'set {a}' changes the shell in a way this check does not know"));
            }
            i += if takes_option { 2 } else { 1 };
        }
    }

    /// `read`: into variables by the variable rule.
    fn read(&mut self, w: Words<'_>) {
        let args = w.args();
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let name = if a.starts_with('-') && a.len() > 1 {
                let letters = &a[1..];
                match letters.char_indices().find(|(_, c)| "adinNptu".contains(*c)) {
                    Some((at, letter)) => {
                        let attached = &letters[at + letter.len_utf8()..];
                        let value = if attached.is_empty() {
                            i += 1;
                            args.get(i).cloned().unwrap_or_default()
                        } else {
                            attached.to_string()
                        };
                        (letter == 'a').then_some(value)
                    }
                    None => None,
                }
            } else {
                Some(a.clone())
            };
            if let Some(name) = name.filter(|n| {
                !harmless_variable(n) || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            }) {
                return self
                    .effect(None, format!("'read' sets {name}, which can tell programs where to find code"));
            }
            i += 1;
        }
    }
}

/// The names git looks for at the root of a bare repository: a folder without `.git` that holds
/// them may be taken for one.
pub const REPOSITORY_NAMES: &[&str] = &["HEAD", "config", "objects", "refs"];

/// Shell options `set -o` and `sh -o` may set unasked.
const SET_OPTIONS: &[&str] = &[
    "errexit",
    "nounset",
    "xtrace",
    "verbose",
    "pipefail",
    "noglob",
    "noclobber",
    "noexec",
    "posix",
    "braceexpand",
];

/// `path` without `./` parts and repeated or trailing slashes: `./a//b/` → `a/b`.
fn normal(path: &str) -> String {
    let absolute = path.starts_with('/');
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    let joined = parts.join("/");
    if absolute { format!("/{joined}") } else { joined }
}

/// The first component of `path`, normalised ([`normal`]): `a` for `./a/b`, empty for an
/// absolute path.
fn top(path: &str) -> String {
    normal(path).split('/').next().unwrap_or_default().to_string()
}

/// `path` and each folder above it, normalised ([`normal`]): `a/b/c`, `a/b`, `a`.
fn ancestors(path: &str) -> impl Iterator<Item = String> {
    let path = normal(path);
    let mut ends: Vec<usize> = path.match_indices('/').map(|(i, _)| i).filter(|i| *i > 0).collect();
    ends.push(path.len());
    ends.into_iter().rev().map(move |end| path[..end].to_string())
}

/// `true` for a redirection target that is a file descriptor (`2>&1`, `>&-`).
fn is_fd(target: &str) -> bool {
    target == "-" || (!target.is_empty() && target.chars().all(|c| c.is_ascii_digit()))
}

/// The lower-cased command name without a `.exe` suffix: `RM` → `rm`, `del.exe` → `del`.
fn fold(name: &str) -> String {
    let lower = name.to_lowercase();
    match lower.strip_suffix(".exe") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => lower,
    }
}

/// The string xargs replaces in its command's words, from the options [`options`] read (so a
/// cluster such as `-rIcat` counts): `-I R`, `-i[R]`, `--replace[=R]`, the last one given
/// winning as in GNU xargs; `{}` where no string is given.
fn xargs_replace(given: &Given) -> Option<String> {
    given.iter().rev().find_map(|(name, value)| match name.as_str() {
        "-I" => Some(value.clone().unwrap_or_default()),
        "-i" | "--replace" => Some(value.clone().filter(|v| !v.is_empty()).unwrap_or_else(|| "{}".into())),
        _ => None,
    })
}

/// `true` when `option` is given in `args`: a short one (`-o`) alone or in a cluster of single
/// letters (`-uo`), a long one (`--output`) alone, with `=value`, or abbreviated (`--outp`, as
/// GNU's getopt_long accepts any unambiguous prefix), a single-dash long one (`-exec`) exactly.
/// Over-counting is on the careful side: a letter inside an option's value (`-t o`) counts.
fn has_option(args: &[String], option: &str) -> bool {
    if let Some(long) = option.strip_prefix("--") {
        return args.iter().any(|a| {
            a.strip_prefix("--").is_some_and(|given| {
                let name = given.split('=').next().unwrap_or(given);
                !name.is_empty() && long.starts_with(name)
            })
        });
    }
    let Some(short) = option.strip_prefix('-').filter(|s| s.chars().count() == 1) else {
        return args.iter().any(|a| a == option);
    };
    args.iter().any(|a| a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(short))
}

/// The arguments of a command with known options: the short letters (with their values), the
/// long options as written, and the operands.
struct ParsedArgs {
    short: Vec<(char, Option<String>)>,
    long: Vec<String>,
    operands: Vec<String>,
}

impl ParsedArgs {
    /// `true` when the short letter `short` (`'\0'` for none) or the long option `long` (`""`
    /// for none) is given.
    fn has(&self, short: char, long: &str) -> bool {
        self.short.iter().any(|(c, _)| *c == short)
            || (!long.is_empty() && self.long.iter().any(|l| l == long || l.starts_with(&format!("{long}="))))
    }
    /// The value of the short letter `short` or of the long option `long`.
    fn value(&self, short: char, long: &str) -> Option<String> {
        let from_short = self.short.iter().rev().find(|(c, _)| *c == short).and_then(|(_, v)| v.clone());
        from_short.or_else(|| {
            self.long.iter().rev().find_map(|l| l.strip_prefix(&format!("{long}=")).map(str::to_string))
        })
    }
}

/// Parses `args` GNU-style: `-abc` clusters of `flags`; a letter of `valued` takes the rest of its
/// cluster or the next word; `--long[=value]` for the names in `long` (exactly as written, or
/// followed by `=`; a value for a long option without `=` is taken from the next word when the
/// name is one of the valued ones this module knows); `--` ends the options. `None` for any
/// option not listed: what it does is not known.
fn parse_args(args: &[String], flags: &str, valued: &str, long: &[&str]) -> Option<ParsedArgs> {
    const LONG_VALUED: &[&str] = &[
        "--target-directory",
        "--suffix",
        "--file",
        "--directory",
        "--mode",
        "--date",
        "--reference",
        "--time",
    ];
    let mut parsed = ParsedArgs { short: Vec::new(), long: Vec::new(), operands: Vec::new() };
    let mut i = 0;
    let mut options_done = false;
    while let Some(a) = args.get(i) {
        i += 1;
        if options_done || !a.starts_with('-') || a == "-" {
            parsed.operands.push(a.clone());
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(name) = a.strip_prefix("--") {
            let base = name.split('=').next().unwrap_or(name);
            let base = format!("--{base}");
            if !long.contains(&base.as_str()) {
                return None;
            }
            if !a.contains('=') && LONG_VALUED.contains(&base.as_str()) {
                let value = args.get(i).cloned().unwrap_or_default();
                i += 1;
                parsed.long.push(format!("{base}={value}"));
            } else {
                parsed.long.push(a.clone());
            }
            continue;
        }
        let letters: Vec<char> = a.chars().skip(1).collect();
        for (k, c) in letters.iter().enumerate() {
            if valued.contains(*c) {
                let rest: String = letters[k + 1..].iter().collect();
                let value = if rest.is_empty() {
                    let v = args.get(i).cloned().unwrap_or_default();
                    i += 1;
                    v
                } else {
                    rest
                };
                parsed.short.push((*c, Some(value)));
                break;
            }
            if !flags.contains(*c) {
                return None;
            }
            parsed.short.push((*c, None));
        }
    }
    Some(parsed)
}

/// The options a wrapper was given, as [`options`] read them: each option's name (`-C`,
/// `--chdir`) with its value, if it takes one.
type Given = Vec<(String, Option<String>)>;

/// Reads the options of a wrapper at the start of `args` as getopt does: `--` ends them; `-abc`
/// is a cluster of `no_value` letters, a letter of `with_value` taking the rest of the cluster or
/// the next word (so `env -iS'rm v'` is `-i` then `-S 'rm v'`); `--long` and `--long=value` are
/// fine, `--long value` for the names in `long_value`. With `optional_attached` (xargs), `-i`,
/// `-l`, `-e` take only an attached value. Returns the index of the first word after the options
/// and every option read, in order; `None` for a letter in neither set: the command it runs
/// cannot be found reliably.
fn options(
    args: &[String],
    no_value: &str,
    with_value: &str,
    long_value: &[&str],
    optional_attached: bool,
) -> Option<(usize, Given)> {
    let mut given = Given::new();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return Some((i + 1, given));
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if a.starts_with("--") {
            let name = a.split('=').next().unwrap_or(a);
            if !long_value.contains(&name)
                && !matches!(
                    name,
                    "--null"
                        | "--verbose"
                        | "--no-run-if-empty"
                        | "--interactive"
                        | "--open-tty"
                        | "--exit"
                        | "--ignore-environment"
                        | "--replace"
                        | "--preserve-status"
                        | "--foreground"
                        | "--kill-after"
                        | "--signal"
                        | "--eof"
                        | "--max-lines"
                )
            {
                return None;
            }
            let takes_next = long_value.contains(&a.as_str());
            let value = match a.split_once('=') {
                Some((_, v)) => Some(v.to_owned()),
                None if takes_next => args.get(i + 1).cloned(),
                None => None,
            };
            given.push((name.to_owned(), value));
            i += if takes_next { 2 } else { 1 };
            continue;
        }
        let letters: Vec<char> = a.chars().skip(1).collect();
        let mut consumed_next = false;
        for (k, c) in letters.iter().enumerate() {
            let rest: String = letters[k + 1..].iter().collect();
            if optional_attached && matches!(c, 'i' | 'l' | 'e') {
                given.push((format!("-{c}"), Some(rest)));
                break;
            }
            if with_value.contains(*c) {
                consumed_next = rest.is_empty();
                let value = if consumed_next { args.get(i + 1).cloned() } else { Some(rest) };
                given.push((format!("-{c}"), value));
                break;
            }
            if !no_value.contains(*c) {
                return None;
            }
            given.push((format!("-{c}"), None));
        }
        i += if consumed_next { 2 } else { 1 };
    }
    Some((i.min(args.len()), given))
}

/// Whether a git subcommand of [`GIT_READS`] is used in its read-only form: `branch` and `tag`
/// listing, `remote` showing, `stash list|show`, `config` getting, `reflog` showing.
fn git_listing(sub: &str, rest: &[String]) -> bool {
    let first = rest.first().map(String::as_str);
    match sub {
        "branch" | "tag" => {
            const LISTING: &[&str] = &[
                "-a",
                "-r",
                "-v",
                "-vv",
                "-l",
                "--list",
                "--all",
                "--remotes",
                "--verbose",
                "--show-current",
                "--no-color",
                "--color",
                "--column",
                "--no-column",
                "-i",
                "--ignore-case",
                "-n",
            ];
            const VALUED: &[&str] =
                &["--contains", "--no-contains", "--merged", "--no-merged", "--points-at"];
            let listing_flag = rest.iter().any(|a| a == "-l" || a == "--list");
            let mut i = 0;
            while let Some(a) = rest.get(i) {
                if VALUED.contains(&a.as_str()) {
                    i += 2;
                    continue;
                }
                let fine = LISTING.contains(&a.as_str())
                    || a.starts_with("--sort=")
                    || a.starts_with("--format=")
                    || a.starts_with("--color=")
                    || VALUED.iter().any(|v| a.starts_with(&format!("{v}=")))
                    || (a.starts_with("-n") && a[2..].chars().all(|c| c.is_ascii_digit()))
                    || (!a.starts_with('-') && listing_flag);
                if !fine {
                    return false;
                }
                i += 1;
            }
            true
        }
        "remote" => rest.iter().all(|a| a == "-v" || a == "--verbose") || first == Some("get-url"),
        "stash" => matches!(first, Some("list" | "show")),
        "config" => {
            // `git config KEY` gets the value, as `--get KEY` does.
            const PLAIN: &[&str] = &[
                "--global",
                "--local",
                "--system",
                "--worktree",
                "--show-origin",
                "--show-scope",
                "--includes",
                "--null",
                "-z",
                "--bool",
                "--int",
                "--path",
            ];
            let mut operands = 0;
            let mut plain = true;
            let mut i = 0;
            while let Some(a) = rest.get(i) {
                if a == "-f" || a == "--file" {
                    i += 1;
                } else if a.starts_with('-') {
                    plain &=
                        PLAIN.contains(&a.as_str()) || a.starts_with("--type=") || a.starts_with("--file=");
                } else {
                    operands += 1;
                }
                i += 1;
            }
            // `git config edit` (git 2.46's subcommands) opens an editor; `set`, `unset`,
            // `rename-section`, `remove-section` write. Only a key is a lookup.
            let subcommand =
                matches!(first, Some("edit" | "set" | "unset" | "rename-section" | "remove-section"));
            if plain && operands == 1 && !subcommand {
                return true;
            }
            let get = rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
                )
            }) || matches!(first, Some("get" | "list"));
            let writes = rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--add"
                        | "--unset"
                        | "--unset-all"
                        | "--replace-all"
                        | "--rename-section"
                        | "--remove-section"
                        | "-e"
                        | "--edit"
                        | "set"
                        | "unset"
                        | "rename-section"
                        | "remove-section"
                        | "edit"
                )
            });
            get && !writes
        }
        "reflog" => !matches!(first, Some("expire" | "delete" | "drop" | "write")),
        _ => true,
    }
}

/// `true` when a git command (not a read-only one) writes the repository's configuration:
/// `config`, `remote`, `submodule`, `init`, `clone`, `sparse-checkout`, `maintenance`, `lfs`,
/// and any command with `-u`/`--set-upstream`, `--set-upstream-to`, `--track`/`-t`,
/// `--edit-description`, or a branch rename or deletion (which moves or drops its section).
fn git_writes_config(sub: &str, rest: &[String]) -> bool {
    if matches!(
        sub,
        "config"
            | "remote"
            | "submodule"
            | "init"
            | "clone"
            | "sparse-checkout"
            | "maintenance"
            | "lfs"
            | "worktree"
    ) {
        return true;
    }
    let flags = ["--set-upstream", "--set-upstream-to", "--track", "--edit-description", "--unset-upstream"];
    if rest.iter().any(|a| flags.iter().any(|f| a == f || a.starts_with(&format!("{f}=")))) {
        return true;
    }
    let short = |letters: &str| {
        rest.iter().any(|a| {
            a.starts_with('-') && !a.starts_with("--") && a[1..].chars().any(|c| letters.contains(c))
        })
    };
    match sub {
        "push" | "branch" | "checkout" | "switch" | "pull" => {
            short("ut") || (sub == "branch" && short("dDmMcC"))
        }
        _ => false,
    }
}

/// The course's reasons for git subcommands that lose work or change what later commands run,
/// with their [`Concern`]: most lose work; `config`, `archive` and `bundle` write without.
fn git_reason(
    sub: &str,
    rest: &[String],
    may_exist: impl Fn(&str) -> bool,
) -> Option<(Concern, &'static str)> {
    let flag = |short: char, long: &[&str]| has_flag(rest, short, long);
    let has = |word: &str| rest.iter().any(|a| a == word);
    let reason = match sub {
        "clean" if !flag('n', &["--dry-run"]) => "deletes untracked files with 'git clean'",
        "checkout"
            if has("--")
                || has(".")
                || flag('f', &["--force"])
                || rest.iter().any(|a| !a.starts_with('-') && may_exist(a)) =>
        {
            "discards uncommitted changes with 'git checkout'"
        }
        "restore" if !flag('S', &["--staged"]) || flag('W', &["--worktree"]) => {
            "discards uncommitted changes with 'git restore'"
        }
        "reset" if has("--hard") || has("--merge") => "discards uncommitted changes with 'git reset --hard'",
        "stash" if matches!(rest.first().map(String::as_str), Some("drop" | "clear")) => {
            "deletes stashed changes with 'git stash drop'"
        }
        "push"
            if flag(
                'f',
                &["--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune"],
            ) || flag('d', &[])
                || rest.iter().any(|a| a.starts_with('+') || a.starts_with(':')) =>
        {
            "rewrites or deletes remote history with 'git push --force'"
        }
        "branch" if flag('D', &[]) || flag('M', &[]) || flag('C', &[]) || flag('f', &["--force"]) => {
            "deletes or overwrites branches with 'git branch -D'"
        }
        "rm" if !has("--cached") => "deletes files with 'git rm'",
        "config" => {
            return Some((Concern::SideEffects, "changes git configuration, which can run commands later"));
        }
        "apply" => "edits files with 'git apply'",
        "archive" => return Some((Concern::SideEffects, "writes an archive with 'git archive'")),
        "bundle" => return Some((Concern::SideEffects, "writes a bundle with 'git bundle'")),
        _ => return None,
    };
    Some((Concern::Destroys, reason))
}

/// `true` when `args` has the short flag `short` (alone or in a cluster; `'\0'` for none) or
/// one of the long flags (alone or with `=value`).
fn has_flag(args: &[String], short: char, long: &[&str]) -> bool {
    args.iter().any(|a| {
        if a.starts_with("--") {
            long.iter().any(|l| a == l || a.starts_with(&format!("{l}=")))
        } else {
            short != '\0' && a.starts_with('-') && a.chars().skip(1).any(|c| c == short)
        }
    })
}

/// What a `sed` command's options say: in-place editing, a script file, and its scripts.
struct SedOptions {
    in_place: bool,
    file: bool,
    /// Each `-e SCRIPT`/`--expression=SCRIPT`, or else the first operand.
    scripts: Vec<String>,
}

/// Reads GNU sed's options the way it does: clusters (`-ne p`, `-i.bak`), and long options by
/// any unambiguous prefix (`--expr=w v` is `--expression`). `None` for an option it does not
/// have, or an ambiguous prefix: sed refuses those, and the check asks.
fn sed_options(args: &[String]) -> Option<SedOptions> {
    const LONG: &[&str] = &[
        "--quiet",
        "--silent",
        "--debug",
        "--expression",
        "--file",
        "--follow-symlinks",
        "--in-place",
        "--line-length",
        "--null-data",
        "--zero-terminated",
        "--posix",
        "--regexp-extended",
        "--separate",
        "--sandbox",
        "--unbuffered",
        "--help",
        "--version",
    ];
    let mut sed = SedOptions { in_place: false, file: false, scripts: Vec::new() };
    let mut operand = None;
    let mut options_done = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        if options_done || !a.starts_with('-') || a == "-" {
            operand.get_or_insert_with(|| a.clone());
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            match gnu_long(name, LONG)? {
                "--expression" => {
                    let script = match value {
                        Some(v) => v,
                        None => {
                            i += 1;
                            args.get(i - 1)?.clone()
                        }
                    };
                    sed.scripts.push(script);
                }
                "--file" => sed.file = true,
                "--in-place" => sed.in_place = true,
                "--line-length" if value.is_none() => i += 1,
                _ => {}
            }
            continue;
        }
        let letters: Vec<char> = a.chars().skip(1).collect();
        for (k, c) in letters.iter().enumerate() {
            match c {
                'n' | 'E' | 'r' | 's' | 'u' | 'z' => {}
                'i' => {
                    sed.in_place = true; // the rest of the cluster is the backup suffix
                    break;
                }
                'e' | 'f' | 'l' => {
                    let rest: String = letters.get(k + 1..).unwrap_or_default().iter().collect();
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(rest)
                    };
                    match c {
                        'e' => sed.scripts.push(value?),
                        'f' => sed.file = true,
                        _ => {}
                    }
                    break;
                }
                _ => return None,
            }
        }
    }
    if sed.scripts.is_empty() {
        sed.scripts.extend(operand);
    }
    Some(sed)
}

/// The long option of `options` (written with `--`) that `name` (written without) selects, as
/// GNU's getopt_long chooses it: an exact name, or the only one it is a prefix of. `None` when it
/// selects none or several.
fn gnu_long(name: &str, options: &[&'static str]) -> Option<&'static str> {
    let full = format!("--{name}");
    if let Some(exact) = options.iter().find(|o| **o == full) {
        return Some(exact);
    }
    let mut candidates = options.iter().filter(|o| !name.is_empty() && o.starts_with(&full));
    let first = candidates.next()?;
    candidates.next().is_none().then_some(*first)
}

/// `true` when a sed script may run a command or write a file: a command `e`, `w` or `W`, an
/// `s` command with the `e` or `w` flag, or anything this small reader does not know.
fn sed_runs_or_writes(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    // Reads a delimited part (regex or replacement) starting after the delimiter.
    let delimited = |mut i: usize, d: char| -> Option<usize> {
        while let Some(c) = chars.get(i) {
            if *c == '\\' {
                i += 2;
                continue;
            }
            if *c == d {
                return Some(i + 1);
            }
            i += 1;
        }
        None
    };
    let to_line_end = |mut i: usize| {
        while !matches!(chars.get(i), None | Some('\n')) {
            i += 1;
        }
        i
    };
    while i < chars.len() {
        // Separators and blanks.
        while matches!(at(i), Some(' ' | '\t' | '\n' | ';' | '{' | '}' | '!')) {
            i += 1;
        }
        // The address: lines, `$`, `/regex/`, `\cREGEXc`, ranges and steps.
        loop {
            match at(i) {
                Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '+' | ' ' | '!') => i += 1,
                Some('/') => match delimited(i + 1, '/') {
                    Some(next) => i = next,
                    None => return true,
                },
                Some('\\') => match at(i + 1).and_then(|d| delimited(i + 2, d)) {
                    Some(next) => i = next,
                    None => return true,
                },
                Some('I' | 'M') if i > 0 && at(i - 1) == Some('/') => i += 1,
                _ => break,
            }
        }
        let Some(command) = at(i) else { break };
        i += 1;
        match command {
            's' | 'y' => {
                let Some(d) = at(i) else { return true };
                let Some(next) = delimited(i + 1, d).and_then(|n| delimited(n, d)) else { return true };
                i = next;
                if command == 's' {
                    while let Some(f) = at(i) {
                        if matches!(f, ';' | '\n' | '}' | ' ') {
                            break;
                        }
                        if f == 'e' || f == 'w' || f == 'W' {
                            return true;
                        }
                        i += 1;
                    }
                }
            }
            'e' | 'w' | 'W' => return true,
            'a' | 'i' | 'c' | 'r' | 'R' | '#' => i = to_line_end(i),
            'b' | 't' | 'T' | ':' | 'v' | 'l' | 'L' | 'q' | 'Q' => {
                while !matches!(at(i), None | Some(';' | '\n' | '}')) {
                    i += 1;
                }
            }
            'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' | '=' | '{' | '}' => {
            }
            _ => return true,
        }
    }
    false
}

/// `true` for a `NAME=value` (or `NAME+=value`) assignment word.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.strip_suffix('+').unwrap_or(name);
            let mut chars = name.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// What a file that steers later runs does, if `path` is one: `.env` (and `.env.*`) chooses the
/// endpoint and key of the next session; anything under `.memory` is recalled into the system
/// prompt of s09's next session; `.git/config` and `.git/hooks/*` choose commands git runs, and
/// anything else under a `.git` folder (the folder itself included) is what git reads as its
/// repository. (Writing a bare repository's names elsewhere is [`repository_file`].)
pub fn steering_file(path: &str) -> Option<&'static str> {
    // Compared without case: on a case-insensitive file system (macOS's default) `.ENV` is `.env`.
    let lower = path.to_lowercase();
    let parts: Vec<&str> = lower.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect();
    let name = parts.last()?;
    if *name == ".env" || name.starts_with(".env.") {
        return Some("which sets the endpoint and key of the next session");
    }
    if parts.contains(&".memory") {
        return Some("which s09 recalls into the system prompt of the next session");
    }
    let git = parts.iter().position(|p| *p == ".git")?;
    Some(match parts.get(git + 1).copied() {
        Some("config") if parts.len() == git + 2 => "which can make git run commands",
        Some("hooks") => "which git runs as a hook",
        _ => "which git reads as its repository (configuration, hooks, history)",
    })
}

/// The folder, if any, to which writing `path` gives one of the names git looks for at the root
/// of a bare repository ([`REPOSITORY_NAMES`]: a file `HEAD` or `config`, anything under
/// `objects/` or `refs/`) while the folder has no `.git`: `"."` for the workspace root. git run
/// there takes the folder for a repository, and its `config` can make git run commands
/// (`core.fsmonitor`). Names are compared without case, as macOS's file system does.
pub fn repository_file(path: &str, ws: &dyn Surroundings) -> Option<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    for (i, part) in parts.iter().enumerate() {
        let lower = part.to_lowercase();
        let last = i + 1 == parts.len();
        let hit = match lower.as_str() {
            "head" | "config" => last,
            "objects" | "refs" => true,
            _ => false,
        };
        if !hit {
            continue;
        }
        let folder = parts.get(..i).unwrap_or_default().join("/");
        let git = if folder.is_empty() { ".git".to_string() } else { format!("{folder}/.git") };
        if !ws.exists(&git) {
            return Some(if folder.is_empty() { ".".to_string() } else { folder });
        }
    }
    None
}

/// The file that steers later runs an argument names, if any: `.env` (or `.env.x`) or `.git` as
/// a whole word inside it (`--output=.env`, `open('.env', 'w')`, `x/.git/config`).
fn mentions_steering(text: &str) -> Option<&'static str> {
    let text = text.to_lowercase();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-');
    for (needle, what) in [(".env", ".env"), (".git", ".git"), (".memory", ".memory")] {
        let mut from = 0;
        while let Some(at) = text[from..].find(needle) {
            let start = from + at;
            let end = start + needle.len();
            let before = text[..start].chars().next_back();
            let after = text[end..].chars().next();
            if !word(before) && !word(after) {
                return Some(what);
            }
            from = end;
        }
    }
    None
}
