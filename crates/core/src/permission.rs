//! The deny list and destructive-command detection (course s04/s05 permission check).
//!
//! ```text
//!  tool call ─► check_tool_call ─┬─ Command: deny list (substring)  ──► Deny("Permission denied by deny list")
//!   (its Subject)                ├─ Command: is_destructive (words) ──► Ask(reason)   → "Allow? [y/N]"
//!                                ├─ Path / PathPattern outside      ──► Ask(reason)
//!                                └─ Nothing                         ──► Allow
//! ```
//!
//! Key insight: a destructive command is found by its **command word**, not by a substring.
//! `pseudocode`, `model list` and `echo rm x` are harmless; `echo hi && rm x` and `sh -c 'rm x'`
//! are not (course §3). So the command is first split the way a shell splits it ([`tokenize`]),
//! then each simple command is looked at from its command word on ([`is_destructive`]).
//!
//! The tokeniser is deliberately small: it knows quoting, escapes, the list and pipeline
//! operators, grouping, command substitution and redirections. It does not expand variables,
//! globs or aliases, so `$X x` with `X=rm` is not seen; the permission check is a guard rail for
//! an honest model, not a sandbox.

use std::fmt;

use crate::dispatch::{Subject, ToolCall};

/// Substrings that make a shell command refused outright, in one place for every chapter.
///
/// s02's `bash` refuses a command containing any of them with `Error: Dangerous command blocked`
/// (course §1); s05's permission hook answers `Permission denied by deny list` (course §3).
/// Matching is by substring, as in the course: these are never legitimate in a workspace agent.
pub const DENY_LIST: &[&str] = &["rm -rf /", "sudo", "shutdown", "reboot", "> /dev/", "mkfs", "dd if="];

/// The deny-list entry that `command` contains, if any.
pub fn deny_list_match(command: &str) -> Option<&'static str> {
    DENY_LIST.iter().copied().find(|needle| command.contains(needle))
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// The tokeniser
// ─────────────────────────────────────────────────────────────────────────────────────────────

/// One simple command: its words after quote removal, and its redirections.
///
/// `rm -f 'a b' 2>/dev/null` gives `words = ["rm", "-f", "a b"]` and one [`Redirect`]
/// `{ op: ">", fd: Some(2), target: "/dev/null" }`. A word that held a command substitution keeps
/// its raw text (`echo $(date)` → `["echo", "$(date)"]`); the substitution's own commands are
/// separate [`SimpleCommand`]s in the list [`tokenize`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words in order; the first non-assignment word is the command word.
    pub words: Vec<String>,
    /// The redirections, in order, wherever they stood in the command.
    pub redirects: Vec<Redirect>,
}

/// One redirection such as `>> log`, `2> err` or `< input`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator as written: `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<<`, `<<-`, `<<<`, `<>`,
    /// `>&` or `<&`.
    pub op: String,
    /// The file descriptor written before the operator (`2` in `2>`), if any.
    pub fd: Option<u32>,
    /// The target word after quote removal (for `<<` the here-document delimiter).
    pub target: String,
}

impl Redirect {
    /// `true` when the redirection may write to its target (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`).
    pub fn writes(&self) -> bool {
        matches!(self.op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>")
    }
}

/// Why a command could not be tokenised. `Display` is a short English phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenizeError {
    /// A `'…'`, `"…"`, `$'…'` or `` `…` `` that never closes; carries the quote character.
    UnterminatedQuote(char),
    /// A `$(`, `<(` or `>(` without its `)`.
    UnterminatedSubstitution,
    /// A `${` without its `}`.
    UnterminatedParameter,
    /// A redirection operator with no word after it, such as `echo hi >`.
    MissingRedirectTarget(String),
    /// Substitutions nested deeper than [`MAX_NESTING`].
    TooDeep,
}

impl fmt::Display for TokenizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenizeError::UnterminatedQuote(q) => write!(f, "unterminated {q} quote"),
            TokenizeError::UnterminatedSubstitution => write!(f, "unterminated $( or ( substitution"),
            TokenizeError::UnterminatedParameter => write!(f, "unterminated ${{"),
            TokenizeError::MissingRedirectTarget(op) => write!(f, "redirection {op} has no target"),
            TokenizeError::TooDeep => write!(f, "nested more than {MAX_NESTING} levels deep"),
        }
    }
}

impl std::error::Error for TokenizeError {}

/// How deep `$(…)`, backticks and `sh -c '…'` may nest before the command is refused as
/// unreadable. Guards the recursion against hostile input.
pub const MAX_NESTING: usize = 16;

/// Splits a shell command into its simple commands, the way `sh` would before running it.
///
/// - Words are split on blanks; `'…'` is literal, `"…"` allows `\` escapes and substitutions,
///   `\x` makes `x` literal, `\` + newline joins lines, `#` at a word start begins a comment.
/// - `;`, `&&`, `||`, `|`, `|&`, `&`, newline, `(` and `)` end a simple command; `{` and `}` as
///   the first word are grouping and dropped.
/// - `$(…)`, `` `…` ``, `<(…)` and `>(…)` are tokenised recursively: their commands come **before**
///   the command that holds them (they run first). `${…}` is kept as text.
/// - Redirections (`>`, `>>`, `2>`, `<`, `&>`, `2>&1`, here-documents …) are taken out of the
///   words together with their target word. A here-document body is skipped.
///
/// # Errors
/// A [`TokenizeError`] for an unterminated quote, substitution or `${`, a redirection with no
/// target, or nesting deeper than [`MAX_NESTING`].
pub fn tokenize(command: &str) -> Result<Vec<SimpleCommand>, TokenizeError> {
    let mut lexer = Lexer { chars: command.chars().collect(), pos: 0, out: Vec::new(), heredocs: Vec::new() };
    lexer.list(0)?;
    Ok(lexer.out)
}

/// A word being read, with whether any part of it was quoted or escaped (a quoted `{` is not
/// grouping, and a quoted `2` before `>` is not a file descriptor).
#[derive(Default)]
struct Word {
    text: String,
    quoted: bool,
    /// Set once anything (even an empty `''`) was read, so `''` is an empty word, not nothing.
    started: bool,
}

/// The tokeniser's state: the input, a cursor, and the simple commands found so far.
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    out: Vec<SimpleCommand>,
    /// Here-document delimiters waiting for the next newline: (delimiter, strip leading tabs).
    heredocs: Vec<(String, bool)>,
}

/// Characters that end a word when unquoted.
fn is_metachar(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')')
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// The input from `from` to `to` (clamped to the input).
    fn text(&self, from: usize, to: usize) -> String {
        let to = to.min(self.chars.len());
        self.chars.get(from.min(to)..to).unwrap_or_default().iter().collect()
    }

    /// Reads a command list until the end of input (depth 0) or until the `)` that closes a
    /// `$(`, `<(` or `>(` (depth > 0). Plain `( … )` subshells only bump `parens`.
    fn list(&mut self, depth: usize) -> Result<(), TokenizeError> {
        if depth > MAX_NESTING {
            return Err(TokenizeError::TooDeep);
        }
        let mut current = SimpleCommand::default();
        let mut parens = 0usize;
        loop {
            // Blanks between words.
            while matches!(self.peek(), Some(' ' | '\t' | '\r')) {
                self.pos += 1;
            }
            let Some(c) = self.peek() else {
                flush(&mut self.out, &mut current);
                return if depth > 0 { Err(TokenizeError::UnterminatedSubstitution) } else { Ok(()) };
            };
            match c {
                '#' => {
                    // A comment runs to the end of the line; the newline itself is kept.
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    flush(&mut self.out, &mut current);
                    self.skip_heredoc_bodies();
                }
                ';' | '&' | '|' => {
                    // `;`, `;;`, `&`, `&&`, `|`, `||`, `|&`: all end the simple command.
                    // (`&>` and `&>>` are redirections, handled below.)
                    if c == '&' && self.peek_at(1) == Some('>') {
                        self.redirect(&mut current, None, depth)?;
                    } else {
                        self.pos += 1;
                        if matches!(self.peek(), Some(';' | '&' | '|')) {
                            self.pos += 1;
                        }
                        flush(&mut self.out, &mut current);
                    }
                }
                '(' => {
                    self.pos += 1;
                    parens += 1;
                    flush(&mut self.out, &mut current);
                }
                ')' => {
                    self.pos += 1;
                    flush(&mut self.out, &mut current);
                    if parens > 0 {
                        parens -= 1;
                    } else if depth > 0 {
                        return Ok(());
                    }
                    // A stray `)` at the top (a `case` pattern, say) just ends the command.
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    // Process substitution `<(cmd)` / `>(cmd)`: a command that runs.
                    self.pos += 2;
                    let nested = self.nested(depth)?;
                    current.words.push(format!("{c}({nested})"));
                }
                '<' | '>' => self.redirect(&mut current, None, depth)?,
                _ => {
                    let word = self.word(depth)?;
                    // `2>file`: digits glued to a redirection operator name a file descriptor.
                    if !word.quoted
                        && !word.text.is_empty()
                        && word.text.chars().all(|d| d.is_ascii_digit())
                        && matches!(self.peek(), Some('<' | '>'))
                    {
                        self.redirect(&mut current, word.text.parse().ok(), depth)?;
                    } else if !word.quoted
                        && current.words.is_empty()
                        && (word.text == "{" || word.text == "}")
                    {
                        // `{ …; }` grouping: the braces are not commands.
                        flush(&mut self.out, &mut current);
                    } else if word.started {
                        current.words.push(word.text);
                    }
                }
            }
        }
    }

    /// Reads a redirection operator at the cursor and its target word.
    fn redirect(
        &mut self,
        current: &mut SimpleCommand,
        fd: Option<u32>,
        depth: usize,
    ) -> Result<(), TokenizeError> {
        const OPS: &[&str] = &["&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">|", ">&", ">"];
        let rest = self.text(self.pos, self.pos + 3);
        let op = OPS.iter().copied().find(|op| rest.starts_with(op)).unwrap_or(">");
        self.pos += op.chars().count();
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let target = match self.peek() {
            Some(c) if !is_metachar(c) => self.word(depth)?,
            _ => return Err(TokenizeError::MissingRedirectTarget(op.to_string())),
        };
        if op == "<<" || op == "<<-" {
            self.heredocs.push((target.text.clone(), op == "<<-"));
        }
        current.redirects.push(Redirect { op: op.to_string(), fd, target: target.text });
        Ok(())
    }

    /// After a newline: skips the bodies of pending here-documents, line by line up to each
    /// delimiter (a missing delimiter ends the body at end of input, as in bash).
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            while self.pos < self.chars.len() {
                let start = self.pos;
                while !matches!(self.peek(), None | Some('\n')) {
                    self.pos += 1;
                }
                let line = self.text(start, self.pos);
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let line = if strip_tabs { line.trim_start_matches('\t') } else { line.as_str() };
                if line == delimiter {
                    break;
                }
            }
        }
    }

    /// Reads one word at the cursor, removing quotes and escapes, and tokenising any command
    /// substitution inside it.
    fn word(&mut self, depth: usize) -> Result<Word, TokenizeError> {
        let mut word = Word::default();
        while let Some(c) = self.peek() {
            if is_metachar(c) {
                break;
            }
            word.started = true;
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1, // line continuation
                        Some(next) => {
                            word.text.push(next);
                            word.quoted = true;
                            self.pos += 1;
                        }
                        None => word.text.push('\\'),
                    }
                }
                '\'' => {
                    self.pos += 1;
                    word.quoted = true;
                    loop {
                        match self.peek() {
                            None => return Err(TokenizeError::UnterminatedQuote('\'')),
                            Some('\'') => break,
                            Some(ch) => word.text.push(ch),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => {
                    self.pos += 1;
                    word.quoted = true;
                    self.double_quoted(&mut word.text, depth)?;
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.backticks(depth)?;
                    word.text.push_str(&format!("`{inner}`"));
                }
                '$' => self.dollar(&mut word, depth)?,
                _ => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(word)
    }

    /// The inside of `"…"` after the opening quote, up to and including the closing one.
    fn double_quoted(&mut self, text: &mut String, depth: usize) -> Result<(), TokenizeError> {
        loop {
            match self.peek() {
                None => return Err(TokenizeError::UnterminatedQuote('"')),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    // Inside double quotes a backslash escapes only $ ` " \ and newline.
                    match self.peek_at(1) {
                        Some('\n') => self.pos += 2,
                        Some(next @ ('$' | '`' | '"' | '\\')) => {
                            text.push(next);
                            self.pos += 2;
                        }
                        _ => {
                            text.push('\\');
                            self.pos += 1;
                        }
                    }
                }
                Some('`') => {
                    self.pos += 1;
                    let inner = self.backticks(depth)?;
                    text.push_str(&format!("`{inner}`"));
                }
                Some('$') if matches!(self.peek_at(1), Some('(' | '{')) => {
                    let mut word = Word::default();
                    self.dollar(&mut word, depth)?;
                    text.push_str(&word.text);
                }
                Some(ch) => {
                    text.push(ch);
                    self.pos += 1;
                }
            }
        }
    }

    /// A `$` at the cursor: `$(…)` (tokenised), `${…}` (kept), `$'…'` (ANSI-C quoting),
    /// `$"…"` (like `"…"`), or a plain `$`.
    fn dollar(&mut self, word: &mut Word, depth: usize) -> Result<(), TokenizeError> {
        match self.peek_at(1) {
            Some('(') => {
                self.pos += 2;
                let inner = self.nested(depth)?;
                word.text.push_str(&format!("$({inner})"));
            }
            Some('{') => {
                let start = self.pos;
                while self.peek() != Some('}') {
                    if self.peek().is_none() {
                        return Err(TokenizeError::UnterminatedParameter);
                    }
                    self.pos += 1;
                }
                self.pos += 1;
                word.text.push_str(&self.text(start, self.pos));
            }
            Some('\'') => {
                self.pos += 2;
                word.quoted = true;
                loop {
                    match self.peek() {
                        None => return Err(TokenizeError::UnterminatedQuote('\'')),
                        Some('\'') => break,
                        Some('\\') => {
                            self.pos += 1;
                            match self.peek() {
                                Some('n') => word.text.push('\n'),
                                Some('t') => word.text.push('\t'),
                                Some(ch) => word.text.push(ch),
                                None => return Err(TokenizeError::UnterminatedQuote('\'')),
                            }
                        }
                        Some(ch) => word.text.push(ch),
                    }
                    self.pos += 1;
                }
                self.pos += 1;
            }
            Some('"') => {
                self.pos += 2;
                word.quoted = true;
                self.double_quoted(&mut word.text, depth)?;
            }
            _ => {
                word.text.push('$');
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// After `$(`, `<(` or `>(`: tokenises the commands up to the matching `)` into `out` and
    /// returns their source text.
    fn nested(&mut self, depth: usize) -> Result<String, TokenizeError> {
        let start = self.pos;
        self.list(depth + 1)?;
        // `list` stopped just after the closing `)`.
        Ok(self.text(start, self.pos.saturating_sub(1)))
    }

    /// After an opening backtick: the text up to the closing one (with `` \` ``, `\\` and `\$`
    /// unescaped), tokenised on its own; its commands go to `out`. Returns the inner text.
    fn backticks(&mut self, depth: usize) -> Result<String, TokenizeError> {
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => return Err(TokenizeError::UnterminatedQuote('`')),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') if matches!(self.peek_at(1), Some('`' | '\\' | '$')) => {
                    inner.extend(self.peek_at(1));
                    self.pos += 2;
                }
                Some(ch) => {
                    inner.push(ch);
                    self.pos += 1;
                }
            }
        }
        if depth + 1 > MAX_NESTING {
            return Err(TokenizeError::TooDeep);
        }
        let mut sub = Lexer { chars: inner.chars().collect(), pos: 0, out: Vec::new(), heredocs: Vec::new() };
        sub.list(depth + 1).or_else(|e| match e {
            // Inside backticks there is no closing `)` to wait for: end of input is the end.
            TokenizeError::UnterminatedSubstitution if sub.pos >= sub.chars.len() => Ok(()),
            other => Err(other),
        })?;
        self.out.append(&mut sub.out);
        Ok(inner)
    }
}

/// Ends the simple command being built: keeps it when it has any word or redirection.
fn flush(out: &mut Vec<SimpleCommand>, current: &mut SimpleCommand) {
    if !current.words.is_empty() || !current.redirects.is_empty() {
        out.push(std::mem::take(current));
    }
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Destructive-command detection
// ─────────────────────────────────────────────────────────────────────────────────────────────

/// Command words that delete files (compared case-insensitively, after the directory and a
/// `.exe` suffix are stripped): POSIX `rm`, `rmdir`, `unlink`, `shred`; Windows `del`, `erase`,
/// `rd`; PowerShell `Remove-Item`.
pub const DELETE_COMMANDS: &[&str] = &["rm", "rmdir", "unlink", "shred", "del", "erase", "rd", "remove-item"];

/// Shells whose `-c SCRIPT` argument is itself a command to check.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"];

/// Words at command position that are syntax, not commands (`if rm x; then …`).
const RESERVED: &[&str] =
    &["!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}"];

/// Says whether a shell command is destructive, and why.
///
/// Returns `Some(reason)`, a short English phrase such as `deletes files with 'rm'`,
/// `writes to /etc/ (/etc/hosts)` or `makes files world-writable (chmod 777)`, or `None` when
/// the command looks harmless. Detection is by command word (see [`tokenize`]), found:
/// - after any list or pipeline operator, inside `( … )`, `{ …; }`, `$(…)`, backticks and `<(…)`;
/// - behind `VAR=1` assignments, reserved words (`if`, `then`, `do`, `!` …) and wrappers:
///   `env`, `command` (but not `command -v`/`-V`, which only look up), `builtin`, `exec`,
///   `nohup`, `time`, `nice`, `ionice`, `timeout`, `stdbuf`, `setsid`, `xargs`, `busybox`, `sudo`,
///   `doas`;
/// - inside `sh -c '…'` (and `bash -lc`, `zsh -c` …), `eval '…'` and `cmd /c …`, re-tokenised;
/// - as a path (`/usr/bin/rm`), in any case (`RM`, `Del`), and as `find … -delete` or
///   `find … -exec rm …`.
///
/// Writes to `/etc/` are a redirection whose target is under `/etc/`, or `tee`, `cp`, `mv`,
/// `install`, `ln`, `rsync` naming a destination under `/etc/`; `chmod 777` is `chmod` with a
/// `777`, `0777`, `a+rwx` or `a=rwx` mode (with or without `-R`).
///
/// A command that cannot be tokenised is treated as destructive: the reason says
/// `cannot be parsed (…)`, so the user is asked rather than the command waved through.
pub fn is_destructive(command: &str) -> Option<String> {
    script_reason(command, 0)
}

/// [`is_destructive`] at a nesting depth (for `sh -c` scripts inside scripts).
fn script_reason(script: &str, depth: usize) -> Option<String> {
    if depth > MAX_NESTING {
        return Some(unparsable(&TokenizeError::TooDeep));
    }
    match tokenize(script) {
        Err(e) => Some(unparsable(&e)),
        Ok(commands) => commands.iter().find_map(|c| simple_reason(c, depth)),
    }
}

/// The reason given for a command that cannot be read: `cannot be parsed (WHY), so it is treated
/// as destructive`.
fn unparsable(error: &TokenizeError) -> String {
    format!("cannot be parsed ({error}), so it is treated as destructive")
}

/// The reason one simple command is destructive, if it is.
fn simple_reason(command: &SimpleCommand, depth: usize) -> Option<String> {
    if let Some(r) = command.redirects.iter().find(|r| r.writes() && under_etc(&r.target)) {
        return Some(format!("writes to /etc/ ({})", r.target));
    }
    words_reason(&command.words, depth)
}

/// The reason the words of a simple command (redirections removed) are destructive.
fn words_reason(words: &[String], depth: usize) -> Option<String> {
    if depth > MAX_NESTING {
        return Some(unparsable(&TokenizeError::TooDeep));
    }
    let mut i = 0;
    // Skip what comes before the real command word: assignments, reserved words, wrappers.
    loop {
        let word = words.get(i)?;
        let name = command_name(word);
        if is_assignment(word) || RESERVED.contains(&name.as_str()) {
            i += 1;
            continue;
        }
        let rest = words.get(i + 1..).unwrap_or_default();
        let skip = match name.as_str() {
            "command" => {
                // `command -v rm` / `command -V rm` only print what `rm` is.
                if rest.iter().take_while(|w| w.starts_with('-')).any(|w| w.contains('v') || w.contains('V'))
                {
                    return None;
                }
                options(rest, &[])
            }
            "builtin" | "nohup" | "setsid" | "busybox" => options(rest, &[]),
            "exec" => options(rest, &["-a"]),
            "time" => options(rest, &["-f", "-o"]),
            "nice" => options(rest, &["-n"]),
            "ionice" => options(rest, &["-c", "-n", "-p"]),
            "stdbuf" => options(rest, &["-i", "-o", "-e"]),
            "sudo" | "doas" => options(rest, &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"]),
            "timeout" => options(rest, &["-k", "-s"]) + 1, // then the duration
            "xargs" => options(
                rest,
                &["-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s", "--delimiter"],
            ),
            "env" => {
                // `env -S 'rm x'` splits its argument into a command line.
                if let Some(pos) = rest.iter().position(|w| w == "-S" || w == "--split-string") {
                    if let Some(script) = rest.get(pos + 1) {
                        return script_reason(script, depth + 1);
                    }
                }
                options(rest, &["-u", "-C", "--unset", "--chdir"])
            }
            "eval" => return script_reason(&rest.join(" "), depth + 1),
            "cmd" => {
                // `cmd /c del x`: the rest is a command line.
                let pos =
                    rest.iter().position(|w| w.eq_ignore_ascii_case("/c") || w.eq_ignore_ascii_case("/k"));
                let script = pos.and_then(|p| rest.get(p + 1..)).map(|w| w.join(" "));
                return script.and_then(|s| script_reason(&s, depth + 1));
            }
            _ => 0,
        };
        if is_wrapper(&name) {
            i += 1 + skip;
            continue;
        }
        break;
    }
    let name = command_name(words.get(i)?);
    let args = words.get(i + 1..).unwrap_or_default();
    if DELETE_COMMANDS.contains(&name.as_str()) {
        return Some(format!("deletes files with '{name}'"));
    }
    if SHELLS.contains(&name.as_str()) {
        return shell_script(args).and_then(|script| script_reason(script, depth + 1));
    }
    match name.as_str() {
        "chmod" => args
            .iter()
            .find(|a| matches!(a.as_str(), "777" | "0777" | "a+rwx" | "a=rwx" | "ugo+rwx" | "ugo=rwx"))
            .map(|mode| format!("makes files world-writable (chmod {mode})")),
        "tee" => args.iter().find(|a| under_etc(a)).map(|a| format!("writes to /etc/ ({a})")),
        "cp" | "mv" | "install" | "ln" | "rsync" => copy_destination(args)
            .filter(|dest| under_etc(dest))
            .map(|dest| format!("writes to /etc/ ({dest})")),
        "find" => find_reason(args, depth),
        _ => None,
    }
}

/// Wrappers that [`words_reason`] steps over even when they have no options to skip.
fn is_wrapper(name: &str) -> bool {
    matches!(
        name,
        "command"
            | "builtin"
            | "nohup"
            | "setsid"
            | "exec"
            | "time"
            | "nice"
            | "ionice"
            | "stdbuf"
            | "sudo"
            | "doas"
            | "timeout"
            | "xargs"
            | "env"
            | "busybox"
    )
}

/// How many leading words of `rest` are options (`-x`, `--long`, `--long=v`), counting the value
/// of each option listed in `with_value` (`-u root`). Stops at `--` (which it counts).
fn options(rest: &[String], with_value: &[&str]) -> usize {
    let mut n = 0;
    while let Some(w) = rest.get(n) {
        if w == "--" {
            return n + 1;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        n += if with_value.contains(&w.as_str()) { 2 } else { 1 };
    }
    n.min(rest.len())
}

/// The lower-cased base name of a command word: `/usr/bin/RM` → `rm`, `del.exe` → `del`.
fn command_name(word: &str) -> String {
    let base = word.rsplit(['/', '\\']).next().unwrap_or(word).to_lowercase();
    match base.strip_suffix(".exe") {
        Some(stem) if !stem.is_empty() => stem.to_string(),
        _ => base,
    }
}

/// `true` for a `NAME=value` assignment word.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The script of `sh -c SCRIPT` (any option cluster containing `c`, such as `-lc` or `-ec`).
fn shell_script(args: &[String]) -> Option<&String> {
    let mut has_c = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.starts_with('-') && !w.starts_with("--") && w.len() > 1 {
            has_c |= w.contains('c');
            // `-o option` / `-O option` take a value.
            if w == "-o" || w == "-O" {
                i += 1;
            }
            i += 1;
            continue;
        }
        if w.starts_with("--") {
            i += 1;
            continue;
        }
        break;
    }
    if has_c { args.get(i) } else { None }
}

/// The destination of `cp`/`mv`/`install`/`ln`/`rsync`: the `-t DIR` / `--target-directory=DIR`
/// value, or else the last operand.
fn copy_destination(args: &[String]) -> Option<&str> {
    for (i, a) in args.iter().enumerate() {
        if a == "-t" || a == "--target-directory" {
            return args.get(i + 1).map(String::as_str);
        }
        if let Some(dir) = a.strip_prefix("--target-directory=") {
            return Some(dir);
        }
    }
    args.iter().rfind(|a| !a.starts_with('-')).map(String::as_str)
}

/// `find … -delete` and `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`).
fn find_reason(args: &[String], depth: usize) -> Option<String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "-delete" {
            return Some("deletes files with 'find -delete'".to_string());
        }
        if matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            // The command runs from after `-exec` up to `;` or `+`.
            let command = args.get(i + 1..).unwrap_or_default();
            let len = command.iter().position(|w| w == ";" || w == "+").unwrap_or(command.len());
            if let Some(reason) = words_reason(command.get(..len).unwrap_or_default(), depth + 1) {
                return Some(reason);
            }
            i += len + 1;
        }
        i += 1;
    }
    None
}

/// `true` when `path`, normalised lexically (`//`, `.` and `..` resolved), is `/etc` or below.
fn under_etc(path: &str) -> bool {
    if !path.starts_with('/') {
        return false;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.first() == Some(&"etc")
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// The verdict on one tool call
// ─────────────────────────────────────────────────────────────────────────────────────────────

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
/// - [`Subject::Command`] (`bash`): a command containing a [`DENY_LIST`] entry → `Deny("Permission
///   denied by deny list")`; a destructive one ([`is_destructive`]) → `Ask("Destructive command
///   (REASON): COMMAND")`.
/// - [`Subject::Path`] (`read_file`, `write_file`, `edit_file`) and [`Subject::PathPattern`]
///   (`glob`, judged on its base folder): `inside_workspace(path)` false → `Ask("Path outside
///   workspace: PATH (TOOL)")`.
/// - [`Subject::Nothing`] (every other tool, an unknown tool, an input that did not parse) →
///   `Allow`. A call whose input did not parse never runs: its result is the parse error, which the
///   model needs to correct itself.
///
/// `inside_workspace` is the workspace rule (course §1): true when the path, resolved against
/// WORKDIR following `..` and symlinks, stays inside.
pub fn check_tool_call(call: &ToolCall, inside_workspace: impl Fn(&str) -> bool) -> Verdict {
    let outside = |shown: &str| {
        Verdict::Ask(format!("Path outside workspace: {} ({})", one_line(shown, 120), call.name))
    };
    match &call.subject {
        Subject::Command(command) => {
            if deny_list_match(command).is_some() {
                return Verdict::Deny(DENIED_BY_DENY_LIST.to_string());
            }
            match is_destructive(command) {
                Some(reason) => {
                    Verdict::Ask(format!("Destructive command ({reason}): {}", one_line(command, 120)))
                }
                None => Verdict::Allow,
            }
        }
        Subject::Path(path) if !inside_workspace(path) => outside(path),
        Subject::PathPattern { pattern, base } if !inside_workspace(base) => outside(pattern),
        Subject::Path(_) | Subject::PathPattern { .. } | Subject::Nothing => Verdict::Allow,
    }
}

/// `text` on one line (newlines and tabs as spaces), cut to `max` characters with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

#[cfg(test)]
#[path = "permission_tests.rs"]
mod tests;
