//! The destructive-command classifier: why a shell command needs a "yes" before it runs.
//!
//! [`classify`] reads the command through the [tokeniser](mod@super::tokenize) and answers
//! `Some(reason)` (ask) or `None` (run). It asks:
//! - about anything it **cannot read**: a command or process substitution anywhere; a variable,
//!   glob, brace expansion or ANSI-C quote in command position (or in the arguments of a
//!   command judged by its arguments); `eval`, `source`/`.`, `alias`, `trap`, `coproc`, `hash
//!   -p`, `fc`, `enable -f`; a shell or interpreter that reads code from an argument, standard
//!   input, a here-document or a pipe (`python3 -c`, `perl -e`, `node -e`, `sh` alone, awk
//!   programs that can run or write, sed scripts with `e`/`w`); a command it cannot parse;
//! - about a **wrapper** by the command it runs (`env`, `command`, `exec`, `nice`, `nohup`,
//!   `timeout`, `xargs`, `find -exec`, `flock`, `taskset`, `strace`, `script -c`, `unshare`,
//!   `setpriv`, `stdbuf`, `ionice`, `setsid`, `time`, `busybox`, `sh -c`), and about the wrapper
//!   itself when its options are not known or the command cannot be extracted (`su`, `doas`,
//!   `chroot`, `watch`, `parallel`, `ssh`, `at`, `crontab`, …);
//! - about **destructive words and forms**: `rm`, `rmdir`, `unlink`, `shred`, `truncate`,
//!   `dd of=`; a redirection that truncates a file that exists (`>`, `>|`, `&>`, `<>`, `exec 3>`);
//!   `sed -i`, `perl -i`, `ruby -i`; `cp`/`mv`/`install`/`ln -f`/`tee`/`rsync` onto a file that
//!   exists, `mv` out of the workspace; `tar --remove-files` and extraction over files; `chmod`,
//!   `chown`, `chgrp`; `git clean`, `checkout -- …`, `restore`, `reset --hard`, `stash
//!   drop|clear`, `push --force`, `branch -D`, `rm`, `config` (writing), `-c`; `find -delete`;
//!   `patch`, `git apply`; output options onto existing files (`sort -o`, `curl -o`, `wget -O`);
//! - about writes to files that steer later runs: `.env`, `.git/config`, `.git/hooks/*`.
//!
//! "Exists" is asked of the workspace ([`Surroundings`]); a path that an earlier command of the
//! same line mentions, or any path after a `cd`, is taken to exist, so `mv v x; > x` still asks.

use std::collections::HashSet;

use super::tokenize::{MAX_NESTING, SimpleCommand, TokenizeError, parse};

/// What the classifier asks of the workspace. Paths are as the command gives them, relative to
/// the workspace root unless absolute.
pub trait Surroundings {
    /// `true` when `path` names something that exists (a symlink counts, dangling or not).
    fn exists(&self, path: &str) -> bool;
    /// `true` when `path` is an existing folder.
    fn is_dir(&self, path: &str) -> bool;
    /// `true` when `path` resolves inside the workspace (the workspace rule, course §1).
    fn inside(&self, path: &str) -> bool;
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

/// Says why `command` needs the user's "yes", or `None` when it can run (see the module docs).
/// A command that cannot be tokenised asks: `cannot be parsed (WHY), so it is treated as
/// destructive`.
pub fn classify(command: &str, ws: &dyn Surroundings) -> Option<String> {
    let mut state = State { ws, cwd_changed: false, mentioned: HashSet::new() };
    state.script(command, 0)
}

/// Command words that delete files (compared case-insensitively, after the directory and a
/// `.exe` suffix are stripped): POSIX `rm`, `rmdir`, `unlink`, `shred`; Windows `del`, `erase`,
/// `rd`; PowerShell `Remove-Item`.
pub const DELETE_COMMANDS: &[&str] = &["rm", "rmdir", "unlink", "shred", "del", "erase", "rd", "remove-item"];

/// Shells: `-c SCRIPT` is read and judged; no script at all means commands from standard input.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash"];

/// Interpreters and the options that give them code on the command line.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("php", &["-r", "-R", "-B", "-E", "-F", "-a"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("rscript", &["-e"]),
    ("julia", &["-e", "-E", "--eval", "--print"]),
    ("pwsh", &["-c", "-command", "-encodedcommand", "-e", "-ec"]),
    ("powershell", &["-c", "-command", "-encodedcommand", "-e", "-ec"]),
    ("osascript", &["-e"]),
    ("tclsh", &[]),
    ("wish", &[]),
    ("expect", &["-c"]),
    ("irb", &[]),
    ("jshell", &[]),
    ("guile", &["-c"]),
    ("racket", &["-e"]),
    ("sbcl", &["--eval"]),
];

/// Commands that run another command this check does not extract: asked about as they are.
const OPAQUE_WRAPPERS: &[&str] = &[
    "su",
    "doas",
    "pkexec",
    "runuser",
    "chroot",
    "nsenter",
    "chrt",
    "numactl",
    "watch",
    "parallel",
    "systemd-run",
    "prlimit",
    "cgexec",
    "valgrind",
    "gdb",
    "perf",
    "faketime",
    "fakeroot",
    "torsocks",
    "proxychains",
    "proxychains4",
    "xvfb-run",
    "sg",
    "firejail",
    "bwrap",
    "ssh",
    "tmux",
    "screen",
    "at",
    "batch",
    "crontab",
    "dbus-run-session",
    "catchsegv",
    "entr",
    "ltrace",
    "cmd",
];

/// Words at command position that are syntax, not commands (`if rm x; then …`).
const RESERVED: &[&str] =
    &["!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "[[", "]]"];

/// Builtins whose effect cannot be read from the command line: they run code given as text,
/// from a file, or later.
const UNREADABLE: &[&str] = &["eval", "source", ".", "coproc", "fc"];

/// The reason given for a command that cannot be read.
fn unparsable(error: &TokenizeError) -> String {
    format!("cannot be parsed ({error}), so it is treated as destructive")
}

/// A classification in progress: the surroundings, and what earlier commands of the same line
/// changed (a `cd`) or named.
struct State<'a> {
    ws: &'a dyn Surroundings,
    cwd_changed: bool,
    mentioned: HashSet<String>,
}

/// A command's words from its command word on, with what could change each.
#[derive(Clone, Copy)]
struct Words<'w> {
    words: &'w [String],
    unknown: &'w [Option<&'static str>],
    /// More arguments arrive when it runs (`xargs`, `find -exec … {}`).
    extra: bool,
}

impl<'w> Words<'w> {
    fn from(self, i: usize) -> Words<'w> {
        Words {
            words: self.words.get(i..).unwrap_or_default(),
            unknown: self.unknown.get(i..).unwrap_or_default(),
            extra: self.extra,
        }
    }
    fn take(self, n: usize) -> Words<'w> {
        Words {
            words: self.words.get(..n).unwrap_or(self.words),
            unknown: self.unknown.get(..n).unwrap_or(self.unknown),
            extra: self.extra,
        }
    }
    fn get(&self, i: usize) -> Option<&'w str> {
        self.words.get(i).map(String::as_str)
    }
    fn unknown(&self, i: usize) -> Option<&'static str> {
        self.unknown.get(i).copied().flatten()
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

impl State<'_> {
    /// Classifies a whole command line at nesting `depth`.
    fn script(&mut self, script: &str, depth: usize) -> Option<String> {
        if depth > MAX_NESTING {
            return Some(unparsable(&TokenizeError::TooDeep));
        }
        let parsed = match parse(script) {
            Ok(p) => p,
            Err(e) => return Some(unparsable(&e)),
        };
        if parsed.substitution {
            return Some(
                "runs a command substitution, whose commands cannot be known before it runs".to_string(),
            );
        }
        for command in &parsed.commands {
            if let Some(reason) = self.simple(command, depth) {
                return Some(reason);
            }
            self.mentioned.extend(command.words.iter().cloned());
            self.mentioned.extend(command.redirects.iter().map(|r| r.target.clone()));
        }
        None
    }

    /// `true` when `path` may exist by the time the command runs.
    fn may_exist(&self, path: &str) -> bool {
        self.cwd_changed || self.mentioned.contains(path) || self.ws.exists(path)
    }

    /// One simple command: its redirections, then its words.
    fn simple(&mut self, command: &SimpleCommand, depth: usize) -> Option<String> {
        for r in command.redirects.iter().filter(|r| r.writes() || r.op == ">&") {
            if r.op == ">&" && (r.target == "-" || r.target.chars().all(|c| c.is_ascii_digit())) {
                continue; // `2>&1`, `>&-`: file descriptors, not files
            }
            if let Some(why) = r.unknown {
                return Some(format!("writes to a file named by {why} ({} {})", r.op, r.target));
            }
            if let Some(reason) = self.writes_to(&r.target, matches!(r.op.as_str(), ">>" | "&>>")) {
                return Some(format!("{reason} with '{}'", r.op));
            }
        }
        let words = Words { words: &command.words, unknown: &command.unknown, extra: false };
        self.words(words, depth)
    }

    /// Why writing to `target` needs a yes: a file that steers later runs, or (unless
    /// `appending`) a file that exists and would be truncated. Harmless devices never do.
    fn writes_to(&self, target: &str, appending: bool) -> Option<String> {
        if is_harmless_device(target) {
            return None;
        }
        if !self.ws.inside(target) {
            return Some(format!("writes outside the workspace ({target})"));
        }
        if let Some(what) = steering_file(target) {
            return Some(format!("writes {target}, {what}"));
        }
        (!appending && self.may_exist(target)).then(|| format!("overwrites {target}"))
    }

    /// The words of a simple command (redirections already judged).
    fn words(&mut self, w: Words<'_>, depth: usize) -> Option<String> {
        if depth > MAX_NESTING {
            return Some(unparsable(&TokenizeError::TooDeep));
        }
        // Assignments and reserved words come before the command word.
        let mut i = 0;
        while let Some(word) = w.get(i) {
            if is_assignment(word) || (w.unknown(i).is_none() && RESERVED.contains(&word)) {
                i += 1;
            } else {
                break;
            }
        }
        let w = w.from(i);
        let word = w.get(0)?;
        if let Some(why) = w.unknown(0) {
            return Some(format!(
                "the command word holds {why}, so the command cannot be known before it runs"
            ));
        }
        let name = command_name(word);
        let args = w.args();
        let name = name.as_str();
        if name == "cd" || name == "pushd" || name == "popd" {
            self.cwd_changed = true;
            return None;
        }
        if UNREADABLE.contains(&name) {
            return Some(format!("'{name}' runs code that cannot be read before it runs"));
        }
        if matches!(name, "alias" | "trap") && !args.is_empty() && !args.iter().all(|a| a == "-p") {
            return Some(format!("'{name}' sets up code that runs later"));
        }
        if (name == "hash" && args.iter().any(|a| a.starts_with("-p")))
            || (name == "enable" && args.iter().any(|a| a.starts_with('-') && a.contains('f')))
        {
            return Some(format!("'{name}' changes what a command name runs"));
        }
        if OPAQUE_WRAPPERS.contains(&name) {
            return Some(format!("'{name}' runs a command this check cannot see"));
        }
        if let Some(found) = self.wrapper(name, w, depth) {
            return found;
        }
        if DELETE_COMMANDS.contains(&name) {
            return Some(format!("deletes files with '{name}'"));
        }
        if let Some(family) = interpreter(name) {
            return self.interpreter(family, w, depth);
        }
        self.destructive_form(name, w)
    }

    /// A wrapper runs the command after its options: `Some(verdict)` when `name` is one (the
    /// verdict on what it runs), `None` when it is not a wrapper.
    fn wrapper(&mut self, name: &str, w: Words<'_>, depth: usize) -> Option<Option<String>> {
        let rest = w.from(1);
        let args = w.args();
        // (short options without value, short options with a value, long with a value)
        let spec: (&str, &str, &[&str]) = match name {
            "command" => {
                if args.iter().take_while(|a| a.starts_with('-')).any(|a| a.contains(['v', 'V'])) {
                    return Some(None); // `command -v rm` only says what `rm` is
                }
                ("p", "", &[])
            }
            "builtin" | "nohup" => ("", "", &[]),
            "setsid" => ("cfw", "", &[]),
            "exec" => ("cl", "a", &[]),
            "time" => ("pvqa", "fo", &["--format", "--output"]),
            "nice" => ("", "n", &["--adjustment"]),
            "ionice" => {
                if args.iter().any(|a| a == "-p" || a == "-P" || a == "-u") {
                    return Some(None);
                }
                ("t", "cn", &["--class", "--classdata"])
            }
            "stdbuf" => ("", "ioe", &["--input", "--output", "--error"]),
            "timeout" => ("v", "ks", &["--kill-after", "--signal"]),
            "xargs" => (
                "0oprtx",
                "adEILnPs",
                &["--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars"],
            ),
            "env" => ("i0v", "uCS", &["--unset", "--chdir", "--split-string"]),
            "flock" => ("sxunoFe", "Ew", &["--conflict-exit-code", "--timeout"]),
            "taskset" => {
                if args.iter().any(|a| {
                    a == "-p"
                        || a == "--pid"
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))
                }) {
                    return Some(None);
                }
                ("ac", "", &[])
            }
            "strace" => (
                "cCdDfFhiqrtTvVwxyYzZk",
                "abeEIoOpPsSuUX",
                &["--output", "--trace", "--signal", "--user", "--env"],
            ),
            "script" => (
                "aefqt",
                "cBIOTEmo",
                &["--command", "--log-io", "--log-in", "--log-out", "--log-timing", "--echo"],
            ),
            "unshare" => (
                "fmuipnUCTcr",
                "SGRw",
                &["--setuid", "--setgid", "--root", "--wd", "--map-user", "--map-group", "--propagation"],
            ),
            "setpriv" => (
                "d",
                "",
                &[
                    "--reuid",
                    "--regid",
                    "--ruid",
                    "--euid",
                    "--rgid",
                    "--egid",
                    "--groups",
                    "--inh-caps",
                    "--ambient-caps",
                    "--bounding-set",
                    "--securebits",
                    "--pdeathsig",
                    "--selinux-label",
                    "--apparmor-profile",
                    "--landlock-access",
                    "--landlock-rule",
                ],
            ),
            "busybox" => ("", "", &[]),
            _ => return None,
        };
        if name == "nice"
            && args.first().is_some_and(|a| {
                a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| c.is_ascii_digit())
            })
        {
            return Some(self.words(rest.from(1), depth + 1)); // the old form `nice -10 CMD`
        }
        let Some(opts) = options(args, spec.0, spec.1, spec.2, name == "xargs") else {
            return Some(Some(format!(
                "'{name}' has an option this check does not know, so the command it runs cannot be found"
            )));
        };
        let given = |keys: &[&str]| option_value(args.get(..opts.end).unwrap_or_default(), keys);
        match name {
            "env" => {
                if let Some(script) = given(&["-S", "--split-string"]) {
                    return Some(self.script(&script, depth + 1));
                }
            }
            "script" => {
                return Some(match given(&["-c", "--command"]) {
                    Some(script) => self.script(&script, depth + 1),
                    None => Some(
                        "'script' without -c starts a shell that reads commands from standard input".into(),
                    ),
                });
            }
            "strace" | "time" if given(&["-o", "--output"]).is_some() => {
                return Some(Some(format!("'{name} -o' writes a file")));
            }
            _ => {}
        }
        let mut start = opts.end;
        match name {
            "env" => {
                while args.get(start).is_some_and(|a| is_assignment(a)) {
                    start += 1;
                }
            }
            "timeout" | "taskset" => start += 1, // the duration, the mask
            "flock" => {
                start += 1; // the lock file, then a command or `-c SCRIPT`
                if matches!(args.get(start).map(String::as_str), Some("-c" | "--command")) {
                    return Some(match (args.get(start + 1), rest.unknown(start + 1)) {
                        (Some(_), Some(why)) => Some(format!("'flock -c' runs a script that holds {why}")),
                        (Some(script), None) => self.script(script, depth + 1),
                        (None, _) => None,
                    });
                }
            }
            _ => {}
        }
        if name == "unshare" && args.get(start).is_none() {
            return Some(Some("'unshare' without a command starts a shell".into()));
        }
        let mut inner = rest.from(start);
        inner.extra |= name == "xargs";
        if inner.get(0).is_none() {
            return Some(None); // `exec 3>x`, `nohup` alone: nothing runs
        }
        Some(self.words(inner, depth + 1))
    }

    /// A shell or an interpreter.
    fn interpreter(&mut self, family: &str, w: Words<'_>, depth: usize) -> Option<String> {
        let args = w.args();
        if SHELLS.contains(&family) {
            // Options, then `-c SCRIPT` or a script file; nothing means standard input.
            let mut has_c = false;
            let mut reads_stdin = false;
            let mut i = 0;
            while let Some(a) = args.get(i) {
                if a == "--" {
                    i += 1;
                    break;
                }
                if matches!(a.as_str(), "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                    i += 2;
                    continue;
                }
                if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                    if !a.starts_with("--") {
                        has_c |= a.contains('c');
                        reads_stdin |= a.contains('s') || a.contains('i');
                    }
                    i += 1;
                    continue;
                }
                break;
            }
            if has_c {
                return match (args.get(i), w.unknown(i + 1)) {
                    (Some(_), Some(why)) => Some(format!("'{family} -c' runs a script that holds {why}")),
                    (Some(script), None) => self.script(script, depth + 1),
                    (None, _) => None,
                };
            }
            if reads_stdin || args.get(i).is_none() {
                return Some(format!("'{family}' reads commands from standard input"));
            }
            return None; // runs a script file, like `./script.sh`
        }
        if family == "awk" {
            return awk(w);
        }
        let code_flags = INTERPRETERS.iter().find(|(n, _)| *n == family).map(|(_, f)| *f).unwrap_or_default();
        let mut operand = None;
        for (i, a) in args.iter().enumerate() {
            let lower = a.to_ascii_lowercase();
            let cluster = a.starts_with('-') && !a.starts_with("--") && a.len() > 1;
            let code = code_flags.iter().any(|f| {
                lower == *f
                    || lower.starts_with(&format!("{f}="))
                    || (cluster && f.len() == 2 && f.starts_with('-') && a[1..].contains(&f[1..]))
            });
            if code {
                return Some(format!("runs code given on the command line with '{family} {a}'"));
            }
            if cluster && matches!(family, "perl" | "ruby") && a.contains('i') {
                return Some(format!("edits files in place with '{family} -i'"));
            }
            if cluster && family == "python" && a.contains('m') {
                return None; // `python3 -m module`: runs installed code, like a program
            }
            if !a.starts_with('-') || a == "-" {
                operand = Some((i, a.as_str()));
                break;
            }
        }
        match operand {
            Some((_, "-")) | None => Some(format!("'{family}' reads code from standard input")),
            Some(_) => None, // runs a script file, like `./script`
        }
    }

    /// Commands judged by their arguments.
    fn destructive_form(&mut self, name: &str, w: Words<'_>) -> Option<String> {
        let args = w.args();
        let flag = |short: char, long: &[&str]| has_flag(args, short, long);
        let judged_by_arguments = matches!(
            name,
            "sed"
                | "dd"
                | "cp"
                | "mv"
                | "ln"
                | "install"
                | "rsync"
                | "tee"
                | "tar"
                | "git"
                | "find"
                | "sort"
                | "curl"
                | "wget"
                | "truncate"
                | "patch"
                | "fallocate"
        );
        if judged_by_arguments && let Some(reason) = w.args_unknown() {
            return Some(format!("'{name}': {reason}"));
        }
        match name {
            "truncate" | "fallocate" => Some(format!("changes file sizes with '{name}'")),
            "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
                Some(format!("changes permissions with '{name}'"))
            }
            "wipefs" | "fdisk" | "sfdisk" | "parted" | "mkswap" | "blkdiscard" => {
                Some(format!("changes disks with '{name}'"))
            }
            "patch" => (!flag('\0', &["--dry-run"])).then(|| "edits files with 'patch'".to_string()),
            "dd" => args
                .iter()
                .filter_map(|a| a.strip_prefix("of="))
                .find(|t| !is_harmless_device(t))
                .map(|t| format!("writes {t} with 'dd of='")),
            "sed" => {
                if args.iter().any(|a| {
                    a.starts_with("--in-place")
                        || (a.starts_with('-') && !a.starts_with("--") && a.contains('i'))
                }) {
                    return Some("edits files in place with 'sed -i'".into());
                }
                let scripts = sed_scripts(args);
                scripts
                    .iter()
                    .any(|s| sed_runs_or_writes(s))
                    .then(|| "the sed script runs commands or writes files (e, w)".to_string())
            }
            "cp" | "mv" | "install" | "ln" | "rsync" => self.copy(name, args),
            "tee" => {
                let appending = flag('a', &["--append"]);
                args.iter()
                    .filter(|a| !a.starts_with('-'))
                    .find_map(|t| self.writes_to(t, appending))
                    .map(|r| format!("{r} with 'tee'"))
            }
            "tar" => tar(args, |p| self.may_exist(p)),
            "git" => self.git(args),
            "find" => self.find(w),
            "sort" | "curl" | "wget" => {
                let keys: &[&str] = match name {
                    "sort" => &["-o", "--output"],
                    "curl" => &["-o", "--output"],
                    _ => &["-O", "--output-document"],
                };
                option_value(args, keys)
                    .and_then(|t| self.writes_to(&t, false))
                    .map(|r| format!("{r} with '{name}'"))
            }
            _ => None,
        }
    }

    /// `cp`, `mv`, `install`, `ln`, `rsync`: onto a file that exists; `mv` out of the workspace.
    fn copy(&self, name: &str, args: &[String]) -> Option<String> {
        if name == "rsync" && args.iter().any(|a| a.starts_with("--delete") || a == "--remove-source-files") {
            return Some("deletes files with 'rsync --delete'".into());
        }
        if name == "install" && has_flag(args, 'd', &["--directory"]) {
            return None;
        }
        if name == "ln" && !has_flag(args, 'f', &["--force"]) {
            return None; // `ln` refuses to replace an existing file
        }
        if matches!(name, "cp" | "mv") && (has_flag(args, 'n', &["--no-clobber", "--update=none"])) {
            return None;
        }
        let with_value: &[&str] = &[
            "-t",
            "--target-directory",
            "-S",
            "--suffix",
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
            "-e",
        ];
        let mut operands = Vec::new();
        let mut target_dir = None;
        let mut i = 0;
        let mut after_dashdash = false;
        while let Some(a) = args.get(i) {
            if !after_dashdash && a == "--" {
                after_dashdash = true;
            } else if !after_dashdash && a.starts_with('-') && a.len() > 1 {
                if a == "-t" || a == "--target-directory" {
                    target_dir = args.get(i + 1).cloned();
                }
                if let Some(dir) = a.strip_prefix("--target-directory=") {
                    target_dir = Some(dir.to_string());
                }
                if with_value.contains(&a.as_str()) {
                    i += 1;
                }
            } else {
                operands.push(a.as_str());
            }
            i += 1;
        }
        let (dest, sources): (String, Vec<&str>) = match target_dir {
            Some(dir) => (dir, operands),
            None => match operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => (last.to_string(), rest.to_vec()),
                _ => return None,
            },
        };
        let dest = dest.trim_end_matches('/').to_string();
        if name == "mv" && !self.ws.inside(&dest) {
            return Some(format!("moves files out of the workspace to {dest}"));
        }
        if let Some(what) = steering_file(&dest) {
            return Some(format!("writes {dest}, {what}, with '{name}'"));
        }
        if is_harmless_device(&dest) {
            return None;
        }
        let targets: Vec<String> = if !self.cwd_changed && self.ws.is_dir(&dest) {
            sources
                .iter()
                .map(|s| format!("{dest}/{}", s.trim_end_matches('/').rsplit('/').next().unwrap_or(s)))
                .collect()
        } else {
            vec![dest]
        };
        targets
            .iter()
            .find(|t| self.may_exist(t) || steering_file(t).is_some())
            .map(|t| format!("overwrites {t} with '{name}'"))
    }

    /// `git` subcommands that lose work or change what later commands run.
    fn git(&self, args: &[String]) -> Option<String> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            match a.as_str() {
                "-c" | "--config-env" => {
                    return Some("'git -c' sets configuration that can run commands".into());
                }
                "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
                a if a.starts_with("--exec-path") => {
                    return Some("'git --exec-path' changes what git runs".into());
                }
                a if a.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let sub = args.get(i)?.as_str();
        let rest = args.get(i + 1..).unwrap_or_default();
        let flag = |short: char, long: &[&str]| has_flag(rest, short, long);
        let has = |word: &str| rest.iter().any(|a| a == word);
        let reason = match sub {
            "clean" if !flag('n', &["--dry-run"]) => "deletes untracked files with 'git clean'",
            "checkout" => {
                let mut skip_next = false;
                let touches_files = rest.iter().any(|a| {
                    if std::mem::take(&mut skip_next) {
                        return false;
                    }
                    if matches!(a.as_str(), "-b" | "-B" | "--orphan") {
                        skip_next = true;
                        return false;
                    }
                    a == "--"
                        || a == "."
                        || a == "-f"
                        || a == "--force"
                        || a == "-p"
                        || a == "--patch"
                        || (!a.starts_with('-') && self.may_exist(a))
                });
                if !touches_files {
                    return None;
                }
                "discards uncommitted changes with 'git checkout'"
            }
            "restore" if !flag('S', &["--staged"]) || flag('W', &["--worktree"]) => {
                "discards uncommitted changes with 'git restore'"
            }
            "reset" if has("--hard") || has("--merge") => {
                "discards uncommitted changes with 'git reset --hard'"
            }
            "stash" if matches!(rest.first().map(String::as_str), Some("drop" | "clear")) => {
                "deletes stashed changes with 'git stash drop'"
            }
            "push"
                if flag(
                    'f',
                    &[
                        "--force",
                        "--force-with-lease",
                        "--force-if-includes",
                        "--mirror",
                        "--delete",
                        "--prune",
                    ],
                ) || flag('d', &[])
                    || rest.iter().any(|a| a.starts_with('+') || a.starts_with(':')) =>
            {
                "rewrites or deletes remote history with 'git push --force'"
            }
            "branch" if flag('D', &[]) || flag('M', &[]) || flag('C', &[]) || flag('f', &["--force"]) => {
                "deletes or overwrites branches with 'git branch -D'"
            }
            "switch" if flag('f', &["--force", "--discard-changes"]) || flag('C', &["--force-create"]) => {
                "discards changes with 'git switch --force'"
            }
            "rm" if !has("--cached") => "deletes files with 'git rm'",
            "mv" if flag('f', &["--force"]) => "overwrites files with 'git mv -f'",
            "config"
                if !rest.iter().any(|a| {
                    a.starts_with("--get") || a == "-l" || a == "--list" || a == "get" || a == "list"
                }) =>
            {
                "changes git configuration, which can run commands later"
            }
            "worktree" if flag('f', &["--force"]) => "deletes a worktree with 'git worktree remove --force'",
            "reflog" if matches!(rest.first().map(String::as_str), Some("expire" | "delete")) => {
                "deletes reflog entries"
            }
            "gc" if rest.iter().any(|a| a.starts_with("--prune")) => "prunes objects with 'git gc --prune'",
            "update-ref" if flag('d', &[]) => "deletes a ref with 'git update-ref -d'",
            "filter-branch" | "filter-repo" => "rewrites history",
            "apply"
                if !rest.iter().any(|a| {
                    matches!(a.as_str(), "--check" | "--stat" | "--numstat" | "--summary" | "--cached")
                }) =>
            {
                "edits files with 'git apply'"
            }
            _ => return None,
        };
        Some(reason.to_string())
    }

    /// `find -delete`, `-exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`), `-fprint FILE`.
    fn find(&mut self, w: Words<'_>) -> Option<String> {
        let mut i = 1;
        while let Some(a) = w.get(i) {
            match a {
                "-delete" => return Some("deletes files with 'find -delete'".into()),
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    return Some(format!("writes a file with 'find {a}'"));
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let command = w.from(i + 1);
                    let len = command
                        .words
                        .iter()
                        .position(|x| x == ";" || x == "+")
                        .unwrap_or(command.words.len());
                    let mut inner = command.take(len);
                    inner.extra = true;
                    if let Some(reason) = self.words(inner, 1) {
                        return Some(reason);
                    }
                    i += len + 1;
                }
                _ => {}
            }
            i += 1;
        }
        None
    }
}

/// The family an interpreter's command name belongs to: `python3.12` → `python`, `gawk` →
/// `awk`, `bash` → `bash`.
fn interpreter(name: &str) -> Option<&'static str> {
    if let Some(shell) = SHELLS.iter().find(|s| **s == name) {
        return Some(shell);
    }
    if matches!(name, "awk" | "gawk" | "mawk" | "nawk") {
        return Some("awk");
    }
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.iter().map(|(n, _)| *n).find(|n| *n == stem || *n == name)
}

/// awk: a program that can run commands or write files asks (`system`, `|`, `>`, gawk's `@`),
/// and so do extensions (`-l`, `-i`, `-E`) and a program it cannot read.
fn awk(w: Words<'_>) -> Option<String> {
    let args = w.args();
    let mut i = 0;
    let mut programs = Vec::new();
    let mut from_file = false;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-f" | "--file" => {
                from_file = true;
                i += 2;
            }
            "-v" | "-F" | "--assign" | "--field-separator" => i += 2,
            "-e" | "--source" => {
                programs.push(i + 1);
                i += 2;
            }
            "-l" | "--load" | "-i" | "--include" | "-E" | "--exec" => {
                return Some(format!("'awk {a}' loads code this check cannot read"));
            }
            "--" => {
                i += 1;
                break;
            }
            a if a.starts_with('-') && a.len() > 1 => i += 1,
            _ => break,
        }
    }
    if programs.is_empty() && !from_file {
        programs.push(i);
    }
    for p in programs {
        let index = p + 1; // in `w`, the command word is 0
        if let Some(why) = w.unknown(index) {
            return Some(format!("the awk program holds {why}"));
        }
        let program = w.get(index).unwrap_or_default();
        if program.contains("system") || program.contains(['|', '>', '@']) {
            return Some("the awk program can run commands or write files (system, |, >)".into());
        }
    }
    None
}

/// The scripts of a `sed` command: each `-e SCRIPT`/`--expression=SCRIPT`, or else the first
/// operand. (`-f FILE` scripts are files, like a shell script file, and are not read.)
fn sed_scripts(args: &[String]) -> Vec<String> {
    let mut scripts = Vec::new();
    let mut first_operand = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-e" || a == "--expression" {
            scripts.extend(args.get(i + 1).cloned());
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s.to_string());
        } else if a == "-f" || a == "--file" || a == "-l" || a == "--line-length" {
            i += 1;
        } else if a.starts_with("-e") && a.len() > 2 {
            scripts.push(a[2..].to_string());
        } else if !a.starts_with('-') && first_operand.is_none() {
            first_operand = Some(a.clone());
        }
        i += 1;
    }
    if scripts.is_empty() && !args.iter().any(|a| a == "-f" || a == "--file") {
        scripts.extend(first_operand);
    }
    scripts
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
            'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' | '=' | '}' => {}
            _ => return true,
        }
    }
    false
}

/// `tar`: `--remove-files`, extraction without `--keep-old-files`/`--skip-old-files`, or an
/// archive created over a file that exists.
fn tar(args: &[String], may_exist: impl Fn(&str) -> bool) -> Option<String> {
    if args.iter().any(|a| a == "--remove-files") {
        return Some("deletes files with 'tar --remove-files'".into());
    }
    let mut letters = String::new();
    for (i, a) in args.iter().enumerate() {
        if a.starts_with('-') && !a.starts_with("--") {
            letters.push_str(&a[1..]);
        } else if i == 0 && a.chars().all(|c| c.is_ascii_alphabetic()) {
            letters.push_str(a); // old style: `tar czf x.tgz dir`
        }
    }
    let keep =
        letters.contains('k') || args.iter().any(|a| a == "--keep-old-files" || a == "--skip-old-files");
    if (letters.contains('x') || args.iter().any(|a| a == "--extract" || a == "--get")) && !keep {
        return Some("extracts over existing files with 'tar -x'".into());
    }
    if letters.contains('c') || args.iter().any(|a| a == "--create") {
        let archive = option_value(args, &["--file"]).or_else(|| {
            // The word after the cluster that holds `f`.
            let at = args.iter().position(|a| {
                !a.starts_with("--")
                    && a.contains('f')
                    && (a.starts_with('-') || a.chars().all(|c| c.is_ascii_alphabetic()))
            })?;
            args.get(at + 1).cloned()
        });
        if let Some(archive) = archive.filter(|a| !is_harmless_device(a) && a != "-" && may_exist(a)) {
            return Some(format!("overwrites {archive} with 'tar -c'"));
        }
    }
    None
}

/// Where the options of a wrapper end.
struct Parsed {
    /// Index in the arguments of the first word after the options.
    end: usize,
}

/// Reads the options at the start of `args`: `--` ends them; `-abc` is a cluster of `no_value`
/// letters, a letter of `with_value` taking the rest of the cluster or the next word; `--long`
/// and `--long=value` are fine, `--long value` for the names in `long_value`. With
/// `optional_attached` (xargs), `-i`, `-l`, `-e` take only an attached value. `None` for a
/// letter in neither set: the command it runs cannot be found reliably.
fn options(
    args: &[String],
    no_value: &str,
    with_value: &str,
    long_value: &[&str],
    optional_attached: bool,
) -> Option<Parsed> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            return Some(Parsed { end: i + 1 });
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if a.starts_with("--") {
            i += if long_value.contains(&a.as_str()) { 2 } else { 1 };
            continue;
        }
        let letters: Vec<char> = a.chars().skip(1).collect();
        let mut consumed_next = false;
        for (k, c) in letters.iter().enumerate() {
            if optional_attached && matches!(c, 'i' | 'l' | 'e') {
                break;
            }
            if with_value.contains(*c) {
                consumed_next = k + 1 == letters.len();
                break;
            }
            if !no_value.contains(*c) {
                return None;
            }
        }
        i += if consumed_next { 2 } else { 1 };
    }
    Some(Parsed { end: i.min(args.len()) })
}

/// The value of the first option in `keys` (`-o FILE`, `-oFILE`, `--output FILE`,
/// `--output=FILE`).
fn option_value(args: &[String], keys: &[&str]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        for key in keys {
            if a == key {
                return args.get(i + 1).cloned();
            }
            if let Some(v) = a.strip_prefix(&format!("{key}=")) {
                return Some(v.to_string());
            }
            if key.len() == 2
                && !key.starts_with("--")
                && a.len() > 2
                && a.starts_with(key)
                && !a.starts_with("--")
            {
                return Some(a[2..].to_string());
            }
        }
    }
    None
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

/// The lower-cased base name of a command word: `/usr/bin/RM` → `rm`, `del.exe` → `del`.
pub(super) fn command_name(word: &str) -> String {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word).to_lowercase();
    match base.strip_suffix(".exe") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => base,
    }
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

/// The devices that are fine to write to: `/dev/null`, `/dev/stdout`, `/dev/stderr`,
/// `/dev/tty`, `/dev/fd/N`.
pub(super) fn is_harmless_device(path: &str) -> bool {
    match path.strip_prefix("/dev/") {
        Some("null" | "stdout" | "stderr" | "tty") => true,
        Some(rest) => {
            rest.strip_prefix("fd/").is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        }
        None => false,
    }
}

/// What a file that steers later runs does, if `path` is one: `.env` (and `.env.*`) chooses the
/// endpoint and key of the next session; `.git/config` and `.git/hooks/*` choose commands git
/// runs.
pub fn steering_file(path: &str) -> Option<&'static str> {
    let parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty() && *p != ".").collect();
    let name = parts.last()?;
    if *name == ".env" || name.starts_with(".env.") {
        return Some("which sets the endpoint and key of the next session");
    }
    let git = parts.iter().position(|p| *p == ".git")?;
    match parts.get(git + 1).copied() {
        Some("config") if parts.len() == git + 2 => Some("which can make git run commands"),
        Some("hooks") => Some("which git runs as a hook"),
        _ => None,
    }
}
