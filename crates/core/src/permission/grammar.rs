//! Reading a command with the bash grammar: tree-sitter-bash parses it, and a short walk accepts
//! the tree only when it holds nothing but the syntax this check reads completely.
//!
//! Accepted ([`ACCEPTED`]): simple commands made of plain words and quoted strings without
//! expansions (`ls -la 'a b' "c"`), variable assignments with such values (`LANG=C ls`),
//! pipelines (`|`), lists joined by `&&`, `||`, `;`, `&` and newlines, `[ … ]` with literal
//! operands, redirections (`<`, `>`, `>>`, `>|`, `<&`, `>&`, `2>&1`, `>&-`) to one literal word,
//! here-documents with a plain delimiter (a body that `sh` would expand must not hold `$`, `` ` ``
//! or `\`), and comments. Anything else in the tree is refused with its name ([`Unread`]):
//! expansions and substitutions, functions, compound commands (`if`, `for`, `( … )`, `{ …; }`),
//! compound assignments, `declare` and kin, `$'…'`, bash-only syntax, a tree with a syntax error.
//! The classifier asks about every refusal. This is codex-rs's design (STYLE.md, "Reading shell
//! with a grammar"): accept a small language read in full, ask about everything else.
//!
//! **sh, not bash.** The harness runs commands with `sh` (dash on Debian and Ubuntu, bash 3.2 in
//! POSIX mode on macOS), while the grammar is bash's. The accepted subset is the one both read the
//! same way: bash-only syntax that `sh` reads differently is refused, not accepted: `&>` (dash: `&`
//! then `>`, so `echo x &> /dev/null rm v` runs `rm v`), `|&`, `<<<`, `[[ … ]]`, `$'…'`, `$"…"`,
//! `+=`, and a here-document delimiter other than a plain word. A brace expansion (`{a,b}`), which
//! only bash performs, counts as a word whose value is only known when it runs, as a glob does.
//! Characters the grammar takes for blanks but `sh` keeps in a word (a carriage return, a
//! vertical tab, a form feed, Unicode spaces) and control characters are refused before parsing,
//! and so is any text between two nodes that is not a blank, a newline or a line continuation:
//! the grammar skipped something `sh` will read.
//!
//! **Cost.** tree-sitter parses well-formed commands in time linear in the input, but its error
//! recovery is not: 16,000 `$[` in a row (32 KB) took it 6 s. So a command longer than
//! [`MAX_COMMAND_LEN`] bytes is refused before parsing, and parsing stops at a deadline
//! ([`PARSE_BUDGET`] for one whole check), the command then asking as unread. The walk visits
//! each node once, without recursion (a list of 5,000 `&&` is 5,000 levels deep), and each word's
//! text is read once.

use std::fmt;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser};

/// The longest command the check reads, in bytes: 32 KiB, room for a here-document that writes a
/// source file of several hundred lines. A longer one asks at once, unread.
pub const MAX_COMMAND_LEN: usize = 32 * 1024;

/// The longest the parser may take over one check, nested scripts included. Well-formed commands
/// of [`MAX_COMMAND_LEN`] parse in a few milliseconds; only the grammar's error recovery on
/// crafted input comes near this, and such a command asks ([`Unread::TooSlow`]) rather than
/// hold the session.
pub const PARSE_BUDGET: Duration = Duration::from_millis(500);

/// How deep `sh -c '…'`, `env -S '…'` and `flock -c '…'` may nest before the command is refused
/// as unreadable.
pub const MAX_NESTING: usize = 16;

/// The named node kinds of tree-sitter-bash the walk accepts (see the module docs); every other
/// kind makes the command [`Unread`].
pub const ACCEPTED: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "command",
    "command_name",
    "word",
    "string",
    "string_content",
    "raw_string",
    "number",
    "concatenation",
    "variable_assignment",
    "variable_assignments",
    "variable_name",
    "redirected_statement",
    "file_redirect",
    "file_descriptor",
    "heredoc_redirect",
    "heredoc_start",
    "heredoc_body",
    "heredoc_content",
    "heredoc_end",
    "test_command",
    "binary_expression",
    "unary_expression",
    "test_operator",
    "comment",
];

/// A command line as the grammar read it: its simple commands in the order they stand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// The simple commands, left to right.
    pub commands: Vec<SimpleCommand>,
}

/// One simple command: its assignments, words after quote removal, and redirections.
///
/// `LANG=C rm -f 'a b' 2>/dev/null` gives `assignments = ["LANG=C"]`, `words = ["rm", "-f", "a
/// b"]` and one [`Redirect`] `{ op: ">", fd: Some(2), target: "/dev/null" }`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` words before the command word, after quote removal.
    pub assignments: Vec<String>,
    /// The words in order; the first is the command word.
    pub words: Vec<String>,
    /// Per word (same length as `words`): `None` when the text is exactly what the shell passes,
    /// or what could change it when it runs: `"a glob"`, `"a brace expansion"`, `"a home folder
    /// (~)"`.
    pub unknown: Vec<Option<&'static str>>,
    /// Per word (same length as `words`): `true` when the shell may turn it into several words,
    /// or none (a glob, a brace expansion).
    pub splits: Vec<bool>,
    /// The redirections, in order.
    pub redirects: Vec<Redirect>,
}

/// One redirection such as `>> log`, `2> err`, `< input` or a here-document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// The operator as written: `>`, `>>`, `>|`, `<`, `<<`, `<<-`, `<>`, `>&`, `<&`, `>&-` or
    /// `<&-`.
    pub op: String,
    /// The file descriptor written before the operator (`2` in `2>`), if any.
    pub fd: Option<u32>,
    /// The target word after quote removal (for `<<` the here-document delimiter; empty for
    /// `>&-`).
    pub target: String,
    /// What could change the target when it runs (see [`SimpleCommand::unknown`]).
    pub unknown: Option<&'static str>,
}

impl Redirect {
    /// `true` when the redirection may write to its target (`>`, `>>`, `>|`, `<>`).
    pub fn writes(&self) -> bool {
        matches!(self.op.as_str(), ">" | ">>" | ">|" | "<>")
    }
}

/// Why a command was not read. `Display` is a short English phrase that names what the command
/// holds, such as `a command substitution ($(…) or `…`), whose commands are only known when it
/// runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Longer than [`MAX_COMMAND_LEN`] bytes; carries the length.
    TooLong(usize),
    /// `sh -c` scripts nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// A character `sh` and the grammar read differently (a carriage return, a Unicode space, a
    /// control character).
    Character(char),
    /// The grammar found a syntax error (an unclosed quote, a redirection with no target …).
    Syntax,
    /// Parsing ran past [`PARSE_BUDGET`] (the grammar's error recovery on crafted input).
    TooSlow,
    /// A node kind or operator outside [`ACCEPTED`]: what it is, in words.
    Holds(String),
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unread::TooLong(n) => {
                write!(f, "is {n} bytes long, more than the {MAX_COMMAND_LEN} this check reads")
            }
            Unread::TooDeep => write!(f, "nests shells more than {MAX_NESTING} levels deep"),
            Unread::Character(c) => write!(
                f,
                "holds the character U+{:04X}, which sh and this check could read differently",
                u32::from(*c)
            ),
            Unread::Syntax => write!(f, "cannot be parsed (a syntax error), so what it does cannot be known"),
            Unread::TooSlow => write!(
                f,
                "takes this check more than {} ms to parse, so what it does is not known",
                PARSE_BUDGET.as_millis()
            ),
            Unread::Holds(what) => write!(f, "holds {what}"),
        }
    }
}

impl std::error::Error for Unread {}

/// What a node kind or operator is, in words, for a command that holds it.
fn describe(kind: &str) -> String {
    let what = match kind {
        "command_substitution" => {
            "a command substitution ($(…) or `…`), whose commands are only known when it runs"
        }
        "process_substitution" => {
            "a process substitution (<(…) or >(…)), whose commands are only known when it runs"
        }
        "expansion" | "simple_expansion" | "$" => {
            "a variable ($NAME or ${…}), whose value is only known when it runs"
        }
        "arithmetic_expansion" | "$((" | "$[" => {
            "an arithmetic expansion, where a variable's value can run a command"
        }
        "ansi_c_string" => "an ANSI-C quote ($'…'), which sh and bash read differently",
        "translated_string" => "a translated string ($\"…\"), which sh and bash read differently",
        "function_definition" => "a function definition, which changes what a name runs",
        "array" => "a compound assignment (x=(…)), which bash reads as code",
        "subscript" => "an array subscript, which bash evaluates as arithmetic",
        "declaration_command" => {
            "declare, export, local, readonly or typeset, which bash may read values of as code"
        }
        "unset_command" => "unset, which can change what a name runs",
        "[[" => "bash's [[ … ]], which sh does not have",
        "herestring_redirect" | "<<<" => "a here-string (<<<), which sh does not have",
        "&>" | "&>>" => "'&>', which sh reads as '&' and then '>'",
        "|&" => "'|&', which sh does not have",
        "+=" => "'+=', which sh does not have",
        "if_statement"
        | "while_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "case_statement"
        | "subshell"
        | "compound_statement"
        | "negated_command"
        | "do_group" => {
            "a compound command (if, while, for, case, !, ( … ) or { … }), which this check does not read"
        }
        "brace_expression" => "a brace expansion, which only bash performs",
        "heredoc" => "a here-document whose delimiter is not a plain word",
        "heredoc body" => "a here-document whose body sh expands ($, ` or \\ with an unquoted delimiter)",
        other => return format!("'{other}', which this check does not read"),
    };
    what.to_string()
}

fn unread(kind: &str) -> Unread {
    Unread::Holds(describe(kind))
}

/// Reads `command` with the bash grammar into its simple commands.
///
/// # Errors
/// [`Unread`] when the command is too long, holds a character or a syntax this check does not
/// read completely (see the module docs), or does not parse.
pub fn parse(command: &str) -> Result<Script, Unread> {
    parse_by(command, Instant::now() + PARSE_BUDGET)
}

/// [`parse`], stopping at `deadline`.
///
/// # Errors
/// As [`parse`], and [`Unread::TooSlow`] when the deadline passes first.
pub fn parse_by(command: &str, deadline: Instant) -> Result<Script, Unread> {
    if command.len() > MAX_COMMAND_LEN {
        return Err(Unread::TooLong(command.len()));
    }
    if let Some(c) = command.chars().find(|c| {
        (c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n'))
            || (c.is_control() && !matches!(c, '\t' | '\n'))
    }) {
        return Err(Unread::Character(c));
    }
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).map_err(|_| Unread::Syntax)?;
    // tree-sitter calls `progress` now and then while it works; `true` cancels the parse.
    let mut late = false;
    let mut progress = |_: &ParseState| {
        late = Instant::now() >= deadline;
        late
    };
    let bytes = command.as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    let tree = match tree {
        Some(tree) => tree,
        None if late => return Err(Unread::TooSlow),
        None => return Err(Unread::Syntax),
    };
    let root = tree.root_node();
    if root.has_error() {
        return Err(Unread::Syntax);
    }
    let mut walk = Walk { src: command, out: Vec::new() };
    walk.statements(root)?;
    Ok(Script { commands: walk.out })
}

/// The walk over one tree: the source text and the commands found so far.
struct Walk<'s> {
    src: &'s str,
    out: Vec<SimpleCommand>,
}

/// The children of `node`, named and anonymous, in order.
fn children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

impl<'s> Walk<'s> {
    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or_default()
    }

    /// Fails when the text between `node`'s children (and its edges) holds anything but blanks,
    /// newlines and line continuations: the grammar skipped what `sh` reads.
    fn gaps(&self, node: Node<'_>, kids: &[Node<'_>]) -> Result<(), Unread> {
        let mut at = node.start_byte();
        for k in
            kids.iter().map(|k| (k.start_byte(), k.end_byte())).chain([(node.end_byte(), node.end_byte())])
        {
            let gap = self.src.get(at..k.0).unwrap_or_default();
            let joined = gap.replace("\\\n", "");
            // A line continuation with no blank beside it joins two words for `sh`
            // (`sort -\<newline>o v` is `sort -o v`), while the grammar keeps them apart.
            let splits_a_word =
                joined.is_empty() && !gap.is_empty() && at > node.start_byte() && k.0 < node.end_byte();
            if splits_a_word || !joined.chars().all(|c| matches!(c, ' ' | '\t' | '\n')) {
                return Err(Unread::Holds(format!(
                    "text the grammar skips ({:?}), which sh reads",
                    gap.chars().take(20).collect::<String>()
                )));
            }
            at = at.max(k.1);
        }
        Ok(())
    }

    /// Walks statements without recursion: `program`, `list` and `pipeline` nodes hold statements
    /// and operators; each statement becomes one simple command.
    fn statements(&mut self, root: Node<'_>) -> Result<(), Unread> {
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "program" | "list" | "pipeline" => {
                    let kids = children(node);
                    self.gaps(node, &kids)?;
                    for k in kids.iter().rev() {
                        if k.is_named() {
                            stack.push(*k);
                        } else if !matches!(k.kind(), ";" | "&" | "&&" | "||" | "|" | "\n") {
                            return Err(unread(k.kind()));
                        }
                    }
                }
                "comment" => {}
                "command"
                | "redirected_statement"
                | "variable_assignment"
                | "variable_assignments"
                | "test_command" => {
                    let mut command = SimpleCommand::default();
                    let mut more = Vec::new();
                    self.statement(node, &mut command, &mut more)?;
                    self.out.push(command);
                    stack.extend(more.into_iter().rev());
                }
                other => return Err(unread(other)),
            }
        }
        Ok(())
    }

    /// One statement into `command`; statements that follow a here-document's start on its line
    /// (`cat <<E | sh`) go to `more`.
    fn statement<'t>(
        &mut self,
        node: Node<'t>,
        command: &mut SimpleCommand,
        more: &mut Vec<Node<'t>>,
    ) -> Result<(), Unread> {
        let kids = children(node);
        self.gaps(node, &kids)?;
        match node.kind() {
            "redirected_statement" => {
                for k in kids {
                    match k.kind() {
                        "command" | "variable_assignment" | "variable_assignments" | "test_command"
                            if node.child_by_field_name("body") == Some(k) =>
                        {
                            self.statement(k, command, more)?;
                        }
                        "file_redirect" | "heredoc_redirect" => self.redirect(k, command, more)?,
                        other => return Err(unread(other)),
                    }
                }
            }
            "command" => {
                for k in kids {
                    match k.kind() {
                        "variable_assignment" => self.assignment(k, command)?,
                        "file_redirect" => self.redirect(k, command, more)?,
                        "command_name" => {
                            let inner = children(k);
                            self.gaps(k, &inner)?;
                            match inner.as_slice() {
                                [word] => self.word(*word, command)?,
                                _ => return Err(Unread::Syntax),
                            }
                        }
                        _ if k.is_named() => self.word(k, command)?,
                        other => return Err(unread(other)),
                    }
                }
            }
            "variable_assignment" => self.assignment(node, command)?,
            "variable_assignments" => {
                for k in kids {
                    self.assignment(k, command)?;
                }
            }
            "test_command" => self.test(node, command)?,
            other => return Err(unread(other)),
        }
        Ok(())
    }

    /// `NAME=value`: a plain name, `=`, and a literal value (or none).
    fn assignment(&mut self, node: Node<'_>, command: &mut SimpleCommand) -> Result<(), Unread> {
        if node.kind() != "variable_assignment" {
            return Err(unread(node.kind()));
        }
        let kids = children(node);
        self.gaps(node, &kids)?;
        let mut text = String::new();
        for k in &kids {
            match k.kind() {
                "variable_name" => text.push_str(self.text(*k)),
                "=" => text.push('='),
                _ if k.is_named() => text.push_str(&literal(self.literal_text(*k)?)?.text),
                other => return Err(unread(other)),
            }
        }
        command.assignments.push(text);
        Ok(())
    }

    /// The text of a literal node (`word`, `string`, `raw_string`, `number`, `concatenation`),
    /// once every node inside it is known to be one of these.
    fn literal_text(&self, node: Node<'_>) -> Result<&'s str, Unread> {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "word" | "raw_string" | "string_content" => {}
                "number" if n.named_child_count() == 0 => {}
                "string" | "concatenation" => {
                    let mut cursor = n.walk();
                    for k in n.children(&mut cursor) {
                        if k.is_named() {
                            stack.push(k);
                        } else if !matches!(k.kind(), "\"" | "{" | "}" | "[" | "]") {
                            return Err(unread(k.kind()));
                        }
                    }
                }
                other => return Err(unread(other)),
            }
        }
        Ok(self.text(node))
    }

    /// One word of a command.
    fn word(&mut self, node: Node<'_>, command: &mut SimpleCommand) -> Result<(), Unread> {
        let w = literal(self.literal_text(node)?)?;
        command.words.push(w.text);
        command.unknown.push(w.unknown);
        command.splits.push(w.splits);
        Ok(())
    }

    /// A redirection: one to a literal word, or a here-document with a plain delimiter.
    fn redirect<'t>(
        &mut self,
        node: Node<'t>,
        command: &mut SimpleCommand,
        more: &mut Vec<Node<'t>>,
    ) -> Result<(), Unread> {
        let kids = children(node);
        let mut fd = None;
        let mut op = String::new();
        let mut targets = Vec::new();
        let mut delimiter: Option<(String, bool)> = None;
        for k in &kids {
            match k.kind() {
                "file_descriptor" => fd = Some(self.text(*k).parse().map_err(|_| Unread::Syntax)?),
                "<" | ">" | ">>" | ">|" | "<&" | ">&" | "<>" | "<&-" | ">&-" | "<<" | "<<-"
                    if op.is_empty() =>
                {
                    op = k.kind().to_string();
                }
                "heredoc_start" => delimiter = Some(heredoc_delimiter(self.text(*k))?),
                "heredoc_body" => {
                    let (_, quoted) = delimiter.clone().ok_or(Unread::Syntax)?;
                    let body = self.text(*k);
                    if !quoted && body.contains(['$', '`', '\\']) {
                        return Err(unread("heredoc body"));
                    }
                }
                "heredoc_end" => {
                    let (word, _) = delimiter.clone().ok_or(Unread::Syntax)?;
                    let end = self.text(*k);
                    let end = if op == "<<-" { end.trim_start_matches('\t') } else { end };
                    if end != word {
                        return Err(unread("heredoc"));
                    }
                }
                "file_redirect" if delimiter.is_some() => self.redirect(*k, command, more)?,
                "pipeline" | "command" | "list" | "redirected_statement" if delimiter.is_some() => {
                    more.push(*k)
                }
                "&&" | "||" | "|" | "\n" if delimiter.is_some() => {}
                _ if k.is_named() && delimiter.is_some() => {
                    // `cat <<E file`: an argument after the here-document's start.
                    self.word(*k, command)?;
                }
                _ if k.is_named() => targets.push(*k),
                other => return Err(unread(other)),
            }
        }
        if let Some((word, _)) = delimiter {
            // The body and end must be there: `sh` reads the rest of the input otherwise.
            if !kids.iter().any(|k| k.kind() == "heredoc_end") {
                return Err(unread("heredoc"));
            }
            command.redirects.push(Redirect { op, fd, target: word, unknown: None });
            return Ok(());
        }
        // The grammar takes every word after the operator as its target; `sh` takes the first,
        // and the rest are the command's words (`cat <in x`, `> /dev/null rm v`).
        let (target, unknown) = match targets.split_first() {
            None if op.ends_with('-') => (String::new(), None),
            Some((first, rest)) if !op.ends_with('-') => {
                let w = literal(self.literal_text(*first)?)?;
                for word in rest {
                    self.word(*word, command)?;
                }
                (w.text, w.unknown)
            }
            _ => return Err(Unread::Syntax),
        };
        if op.is_empty() {
            return Err(Unread::Syntax);
        }
        command.redirects.push(Redirect { op, fd, target, unknown });
        Ok(())
    }

    /// `[ … ]`: the command `[` whose words are the operands and operators as written; `[[ … ]]`
    /// is refused.
    fn test(&mut self, node: Node<'_>, command: &mut SimpleCommand) -> Result<(), Unread> {
        // The atoms: literals and operator tokens, in order.
        let mut atoms: Vec<Node<'_>> = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "test_command" | "binary_expression" | "unary_expression" => {
                    let kids = children(n);
                    self.gaps(n, &kids)?;
                    stack.extend(kids.into_iter().rev());
                }
                "[" | "]" | "=" | "==" | "!=" | "!" | "-a" | "-o" | "test_operator" => atoms.push(n),
                "word" | "string" | "raw_string" | "number" | "concatenation" => {
                    self.literal_text(n)?;
                    atoms.push(n);
                }
                other => return Err(unread(other)),
            }
        }
        // Atoms that touch make one word, as `sh` reads them (`a=b` is one operand).
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for a in &atoms {
            match spans.last_mut() {
                Some(last) if last.1 == a.start_byte() => last.1 = a.end_byte(),
                _ => spans.push((a.start_byte(), a.end_byte())),
            }
        }
        for (s, e) in spans {
            let mut w = literal(self.src.get(s..e).unwrap_or_default())?;
            if w.text == "[" || w.text == "]" {
                w = Literal { text: w.text, ..Literal::default() }; // no glob: nothing closes it
            }
            command.words.push(w.text);
            command.unknown.push(w.unknown);
            command.splits.push(w.splits);
        }
        if command.words.first().is_some_and(|w| w == "[[") {
            return Err(unread("[["));
        }
        Ok(())
    }
}

/// A here-document's delimiter as written (`EOF`, `'EOF'`, `"EOF"`): the word, and whether it
/// was quoted (then the body is literal). Anything else is refused: `sh` and bash could end the
/// body at different lines.
fn heredoc_delimiter(text: &str) -> Result<(String, bool), Unread> {
    let plain = |w: &str| {
        !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    for q in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q))
            && plain(inner)
        {
            return Ok((inner.to_string(), true));
        }
    }
    if plain(text) {
        return Ok((text.to_string(), false));
    }
    Err(unread("heredoc"))
}

/// A word after quote removal, with what could change it when it runs.
#[derive(Debug, Default, PartialEq, Eq)]
struct Literal {
    text: String,
    unknown: Option<&'static str>,
    splits: bool,
}

/// Reads the text of one literal shell word the way `sh` does: `'…'` is literal, `"…"` allows the
/// escapes `\$ \` \" \\` and a line continuation, `\x` outside quotes is `x`. An expansion
/// (`$`, `` ` ``) or an operator character outside quotes is refused: the tree said it holds
/// none. Globs (`* ? [`), a brace expansion (`{a,b}`, `{1..3}`) and a leading `~` mark the word as
/// only known when it runs.
fn literal(text: &str) -> Result<Literal, Unread> {
    let mut w = Literal::default();
    let mut chars = text.chars().peekable();
    let mut at_start = true;
    let mut brace_open = false;
    let mut brace_list = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => loop {
                match chars.next() {
                    Some('\'') => break,
                    Some(ch) => w.text.push(ch),
                    None => return Err(Unread::Syntax),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some('\n') => {}
                        Some(e @ ('$' | '`' | '"' | '\\')) => w.text.push(e),
                        Some(e) => {
                            w.text.push('\\');
                            w.text.push(e);
                        }
                        None => return Err(Unread::Syntax),
                    },
                    Some('$' | '`') => return Err(unread("$")),
                    Some(ch) => w.text.push(ch),
                    None => return Err(Unread::Syntax),
                }
            },
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(e) => w.text.push(e),
                None => return Err(Unread::Syntax),
            },
            '$' | '`' => return Err(unread("$")),
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => return Err(Unread::Syntax),
            '*' | '?' | '[' => {
                w.unknown.get_or_insert("a glob");
                w.splits = true;
                w.text.push(c);
            }
            '~' if at_start || w.text.ends_with(['=', ':']) => {
                w.unknown.get_or_insert("a home folder (~)");
                w.text.push(c);
            }
            '{' => {
                brace_open = true;
                w.text.push(c);
            }
            ',' if brace_open => {
                brace_list = true;
                w.text.push(c);
            }
            '.' if brace_open && chars.peek() == Some(&'.') => {
                brace_list = true;
                w.text.push(c);
            }
            '}' if brace_open && brace_list => {
                w.unknown.get_or_insert("a brace expansion");
                w.splits = true;
                w.text.push(c);
            }
            _ => w.text.push(c),
        }
        at_start = false;
    }
    Ok(w)
}
