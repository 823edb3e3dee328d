//! The shell tokeniser: a command line split into simple commands the way `sh` would split it,
//! with every construct whose effect cannot be known before it runs marked as such.
//!
//! It knows quoting, escapes, the list and pipeline operators, grouping, command and process
//! substitution, here-documents, redirections and function definitions (`f() { …; }`). It does
//! **not** expand anything; instead each word says whether expansion could change it
//! ([`SimpleCommand::unknown`]) or split it into several words ([`SimpleCommand::splits`]), and
//! the script says whether any command or process substitution occurs ([`Script::substitution`])
//! and whether bash would evaluate text as arithmetic, where `$(…)` inside a variable's value
//! runs ([`Script::arithmetic`]), so the classifier can ask about what it cannot read.
//!
//! A carriage return is an ordinary character, as in `sh` and `bash`: `ls\r` is a command named
//! `ls\r`, not `ls`.

use std::fmt;

/// A command line, tokenised: its simple commands in the order they start running, and whether
/// any command or process substitution occurs in it (`$(…)`, backticks, `<(…)`, `>(…)`, also
/// inside `${…}` and in the body of an unquoted here-document).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The simple commands; those of a substitution come before the command that holds it.
    pub commands: Vec<SimpleCommand>,
    /// `true` when a command or process substitution occurs anywhere.
    pub substitution: bool,
    /// `true` when bash would evaluate text as arithmetic or as a name: an arithmetic command
    /// `(( … ))` or expansion `$[ … ]`, an array subscript (`${a[i]}`), a substring (`${x:i}`), indirection (`${!x}`)
    /// or prompt expansion (`${x@P}`). Bash evaluates a variable's value there, and `$(…)` in
    /// that value runs (`f='a[$(rm v)]'; echo ${a[f]}`).
    pub arithmetic: bool,
    /// The names of the functions the script defines with `NAME() …`; the definitions are not
    /// commands (their bodies are, in place).
    pub functions: Vec<String>,
}

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
    /// Per word (same length as `words`): `None` when the text is exactly what the shell passes,
    /// or what could change it when run: `"a variable"`, `"a glob"`, `"a brace expansion"`,
    /// `"an ANSI-C quote"` or `"a command substitution"`.
    pub unknown: Vec<Option<&'static str>>,
    /// Per word (same length as `words`): `true` when the shell may split it into several words,
    /// or none, when it runs (an unquoted variable, command substitution, glob or brace
    /// expansion): `[ $x ]` may become `[ -v a ]`, while `[ "$x" ]` stays one word.
    pub splits: Vec<bool>,
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
    /// What could change the target when run (see [`SimpleCommand::unknown`]).
    pub unknown: Option<&'static str>,
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
    parse(command).map(|script| script.commands)
}

/// [`tokenize`], keeping whether a substitution occurs ([`Script::substitution`]).
///
/// # Errors
/// As [`tokenize`].
pub fn parse(command: &str) -> Result<Script, TokenizeError> {
    let mut lexer = Lexer::new(command);
    lexer.list(0)?;
    Ok(Script {
        commands: lexer.out,
        substitution: lexer.substitution,
        arithmetic: lexer.arithmetic,
        functions: lexer.functions,
    })
}

/// A word being read, with whether any part of it was quoted or escaped (a quoted `{` is not
/// grouping, and a quoted `2` before `>` is not a file descriptor).
#[derive(Default)]
struct Word {
    text: String,
    quoted: bool,
    /// Set once anything (even an empty `''`) was read, so `''` is an empty word, not nothing.
    started: bool,
    /// What could change the word when run (the first found).
    unknown: Option<&'static str>,
    /// An unquoted expansion: the shell may split the word or drop it.
    splits: bool,
}

impl Word {
    fn mark(&mut self, why: &'static str) {
        self.unknown.get_or_insert(why);
    }
}

/// The tokeniser's state: the input, a cursor, and the simple commands found so far.
struct Lexer {
    chars: Vec<char>,
    pos: usize,
    out: Vec<SimpleCommand>,
    /// Here-document delimiters waiting for the next newline: (delimiter, strip leading tabs,
    /// body expanded because the delimiter was not quoted).
    heredocs: Vec<(String, bool, bool)>,
    /// A command or process substitution was seen.
    substitution: bool,
    /// An expansion that bash evaluates as arithmetic or as a name was seen.
    arithmetic: bool,
    /// Functions defined with `NAME() …`.
    functions: Vec<String>,
}

/// Characters that end a word when unquoted. (A carriage return is not one: `sh` keeps it in the
/// word.)
fn is_metachar(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')')
}

impl Lexer {
    fn new(text: &str) -> Self {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
            out: Vec::new(),
            heredocs: Vec::new(),
            substitution: false,
            arithmetic: false,
            functions: Vec::new(),
        }
    }

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
            while matches!(self.peek(), Some(' ' | '\t')) {
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
                    if self.peek() == Some('(') && current.words.is_empty() {
                        // `(( … ))`: bash evaluates it as arithmetic.
                        self.arithmetic = true;
                    }
                    if let Some(name) = self.function_definition(&current) {
                        // `NAME ( )`: a definition, not a command; its body follows as commands.
                        self.functions.push(name);
                        current = SimpleCommand::default();
                        continue;
                    }
                    parens += 1;
                    flush(&mut self.out, &mut current);
                }
                ')' => {
                    self.pos += 1;
                    if parens == 0 && depth == 0 {
                        // A stray `)` at the top ends a `case` pattern (`*.rs)`): the words
                        // before it are a pattern, not a command.
                        current = SimpleCommand::default();
                        continue;
                    }
                    flush(&mut self.out, &mut current);
                    if parens > 0 {
                        parens -= 1;
                    } else if depth > 0 {
                        return Ok(());
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    // Process substitution `<(cmd)` / `>(cmd)`: a command that runs.
                    self.pos += 2;
                    let nested = self.nested(depth)?;
                    self.substitution = true;
                    current.words.push(format!("{c}({nested})"));
                    current.unknown.push(Some("a command substitution"));
                    current.splits.push(false);
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
                        current.unknown.push(word.unknown);
                        current.splits.push(word.splits);
                    }
                }
            }
        }
    }

    /// Just after a `(`: the function's name when the command so far is one plain word and a `)`
    /// follows (`f() { …; }`); the `)` is consumed.
    fn function_definition(&mut self, current: &SimpleCommand) -> Option<String> {
        let [name] = current.words.as_slice() else { return None };
        let plain = current.redirects.is_empty()
            && current.unknown.first().is_some_and(Option::is_none)
            && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
        if !plain {
            return None;
        }
        let mut at = self.pos;
        while matches!(self.chars.get(at), Some(' ' | '\t')) {
            at += 1;
        }
        if self.chars.get(at) != Some(&')') {
            return None;
        }
        self.pos = at + 1;
        Some(name.clone())
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
            self.heredocs.push((target.text.clone(), op == "<<-", !target.quoted));
        }
        current.redirects.push(Redirect {
            op: op.to_string(),
            fd,
            target: target.text,
            unknown: target.unknown,
        });
        Ok(())
    }

    /// After a newline: skips the bodies of pending here-documents, line by line up to each
    /// delimiter (a missing delimiter ends the body at end of input, as in bash).
    fn skip_heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs, expanded) in std::mem::take(&mut self.heredocs) {
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
                // An unquoted delimiter: the body is expanded, and `$(…)` or backticks in it run.
                if expanded && (line.contains("$(") || line.contains('`')) {
                    self.substitution = true;
                }
                if expanded && evaluates(line) {
                    self.arithmetic = true;
                }
            }
        }
    }

    /// Reads one word at the cursor, removing quotes and escapes, and tokenising any command
    /// substitution inside it.
    fn word(&mut self, depth: usize) -> Result<Word, TokenizeError> {
        let mut word = Word::default();
        // Unquoted `{` seen, then an unquoted `,` or `..` after it: a `}` makes a brace expansion.
        let (mut brace_open, mut brace_list) = (false, false);
        while let Some(c) = self.peek() {
            if is_metachar(c) {
                break;
            }
            if c == '~' && !word.started {
                // `~/x` is the home folder, wherever that is.
                word.mark("a home folder (~)");
            }
            word.started = true;
            match c {
                '*' | '?' => {
                    word.mark("a glob");
                    word.splits = true;
                }
                // `[` is a glob only with a `]` after it in the word (`[` alone is `test`).
                '[' if self.chars[self.pos..].iter().take_while(|&&n| !is_metachar(n)).any(|&n| n == ']') => {
                    word.mark("a glob");
                    word.splits = true;
                }
                '{' => brace_open = true,
                ',' if brace_open => brace_list = true,
                '.' if brace_open && self.peek_at(1) == Some('.') => brace_list = true,
                '}' if brace_list => {
                    word.mark("a brace expansion");
                    word.splits = true;
                }
                _ => {}
            }
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
                    self.double_quoted(&mut word, depth)?;
                }
                '`' => {
                    self.pos += 1;
                    let inner = self.backticks(depth)?;
                    word.mark("a command substitution");
                    word.splits = true;
                    word.text.push_str(&format!("`{inner}`"));
                }
                '$' => {
                    if self.peek_at(1).is_some_and(|n| n == '(' || n == '{' || is_parameter_start(n)) {
                        word.splits = true;
                    }
                    self.dollar(&mut word, depth)?
                }
                _ => {
                    word.text.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(word)
    }

    /// The inside of `"…"` after the opening quote, up to and including the closing one.
    fn double_quoted(&mut self, word: &mut Word, depth: usize) -> Result<(), TokenizeError> {
        loop {
            let text = &mut word.text;
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
                    word.mark("a command substitution");
                }
                Some('$')
                    if self.peek_at(1).is_some_and(|n| n == '(' || n == '{' || is_parameter_start(n)) =>
                {
                    self.dollar(word, depth)?;
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
                self.substitution = true;
                word.mark("a command substitution");
                word.text.push_str(&format!("$({inner})"));
            }
            Some('{') => {
                word.mark("a variable");
                let start = self.pos;
                while self.peek() != Some('}') {
                    if self.peek().is_none() {
                        return Err(TokenizeError::UnterminatedParameter);
                    }
                    self.pos += 1;
                }
                self.pos += 1;
                let text = self.text(start, self.pos);
                // `${B:-$(rm v)}`: the default runs a command.
                if text.contains("$(") || text.contains('`') {
                    self.substitution = true;
                    word.mark("a command substitution");
                }
                if evaluates(&text) {
                    self.arithmetic = true;
                    word.mark("an arithmetic expansion");
                }
                word.text.push_str(&text);
            }
            Some('\'') => {
                self.pos += 2;
                word.quoted = true;
                word.mark("an ANSI-C quote");
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
                self.double_quoted(word, depth)?;
            }
            Some('[') => {
                // `$[ … ]`: bash's old arithmetic expansion.
                self.arithmetic = true;
                word.mark("an arithmetic expansion");
                word.text.push('$');
                self.pos += 1;
            }
            Some(n) if is_parameter_start(n) => {
                // `$X`, `$1`, `$@`, `$$` …: the value is not known until it runs.
                word.mark("a variable");
                word.text.push('$');
                self.pos += 1;
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
        self.substitution = true;
        let mut sub = Lexer::new(&inner);
        sub.list(depth + 1).or_else(|e| match e {
            // Inside backticks there is no closing `)` to wait for: end of input is the end.
            TokenizeError::UnterminatedSubstitution if sub.pos >= sub.chars.len() => Ok(()),
            other => Err(other),
        })?;
        self.out.append(&mut sub.out);
        self.arithmetic |= sub.arithmetic;
        self.functions.append(&mut sub.functions);
        Ok(inner)
    }
}

/// `true` when a `${…}` in `text` makes bash evaluate something as arithmetic or as a name: a
/// subscript other than `[@]`/`[*]`, a substring `${x:…}` (but not `:-`, `:=`, `:+`, `:?`),
/// indirection `${!x}`, or prompt expansion `${x@P}`. A `${` without its `}` counts to the end.
pub fn evaluates(text: &str) -> bool {
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        let inner = &rest[at + 2..];
        let body = inner.split('}').next().unwrap_or(inner);
        if parameter_evaluates(body) {
            return true;
        }
        rest = inner;
    }
    false
}

/// The test of [`evaluates`] for the text between `${` and `}`.
fn parameter_evaluates(body: &str) -> bool {
    let body = match body.strip_prefix('#') {
        Some(rest) if !rest.is_empty() => rest, // `${#x}`: the length of x
        _ => body,
    };
    if body.starts_with('!') && body != "!" {
        return true;
    }
    let name_len = if body.starts_with(|c: char| c.is_ascii_digit()) {
        body.chars().take_while(char::is_ascii_digit).count()
    } else if body.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        body.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').count()
    } else {
        usize::from(body.starts_with(['@', '*', '#', '?', '$', '!', '-']))
    };
    let mut after = &body[name_len..];
    if let Some(subscript) = after.strip_prefix('[') {
        match subscript.strip_prefix("@]").or_else(|| subscript.strip_prefix("*]")) {
            Some(rest) => after = rest,
            None => return true,
        }
    }
    if let Some(op) = after.strip_prefix(':') {
        return !op.starts_with(['-', '=', '+', '?']);
    }
    after.starts_with("@P")
}

/// A character that starts a parameter after `$`: a name, a digit, or one of `@*#?$!-`.
fn is_parameter_start(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '*' | '#' | '?' | '$' | '!' | '-')
}

/// Ends the simple command being built: keeps it when it has any word or redirection.
fn flush(out: &mut Vec<SimpleCommand>, current: &mut SimpleCommand) {
    if !current.words.is_empty() || !current.redirects.is_empty() {
        out.push(std::mem::take(current));
    }
}
