//! A hand-written parser for Python literals, producing [`serde_json::Value`]. It evaluates nothing.
//!
//! Course s05 (#340): some models send `todos` as a *string* holding a Python `repr`, such as
//! `"[{'content': 'inspect repo', 'status': 'completed'}, ('a', True, None)]"`. The Python course calls
//! `ast.literal_eval`; this module is the same idea written out as a small recursive-descent parser, so a
//! string like `__import__('os').system('…')` is a parse error and never code.
//!
//! # Grammar
//! ```text
//! input   := value END | value ',' ( value ( ',' value )* ','? )? END     (the second form is a tuple)
//! value   := list | tuple | dict | string+ | number | '+' number | '-' number | True | False | None
//! list    := '[' ( value ( ',' value )* ','? )? ']'
//! tuple   := '(' ')' | '(' value ')' | '(' value ',' ( value ( ',' value )* ','? )? ')'
//! dict    := '{' ( value ':' value ( ',' value ':' value )* ','? )? '}'
//! string  := prefix? ( '…' | "…" | '''…''' | """…""" )     prefix := r R u U (any case, ru not allowed)
//! number  := int | float        (with '_' separators; 0x 0o 0b ints)
//! ```
//! Between any two tokens there may be whitespace (including newlines), `#` comments and a backslash
//! line continuation. As in Python, `\r\n` and a lone `\r` are line breaks (a comment ends there, and a
//! raw string reads them as `\n`).
//!
//! # How Python values become JSON
//! | Python | JSON |
//! |---|---|
//! | list, tuple | array (`(x)` without a comma is just `x`, as in Python) |
//! | dict | object; keys: strings as they are, ints as their digits, floats as Python's `repr` spells them (`1e-05`, `1.0`), `True`/`False`/`None` as `"true"`/`"false"`/`"null"` (what Python's `json.dumps` does); keys Python treats as equal (`True`, `1`, `1.0`) are one key, the first one's spelling with the last value; a list or tuple key is an error |
//! | str | string; adjacent strings are concatenated (`'a' "b"` → `"ab"`) |
//! | int | number, if it fits in `i64`/`u64`; larger ones are an error |
//! | float | number; a float that overflows to infinity (`1e999`) is an error |
//! | `True` `False` `None` | `true` `false` `null` |
//!
//! Leniencies: whitespace including newlines may stand between any two tokens, even at the top level where
//! Python would end the statement, and any character other than the closing quote (NUL included) may appear
//! inside a string. Not supported although `ast.literal_eval` takes them: a sign before parentheses
//! (`-(1)`), lone surrogates, `\N{…}`, ints beyond 64 bits.
//!
//! Not literals, so errors: any other name (`inf`, `nan`, `__import__`), calls, attribute access,
//! subscripts, operators, set literals (JSON has no sets), complex numbers, bytes and f-strings, `...`.
//!
//! # Escapes in non-raw strings
//! `\n \t \r \\ \' \" \a \b \f \v`, octal `\0`–`\377`, `\xXX`, `\uXXXX`, `\UXXXXXXXX`, and backslash-newline
//! (line continuation). An unknown escape such as `\d` keeps its backslash, as Python does. A `\uD83D\uDE00`
//! surrogate pair is combined into one character; a lone surrogate is an error (a Rust `String` cannot hold
//! one). `\N{…}` is not supported.
//!
//! # Limits
//! Input longer than [`MAX_INPUT_BYTES`] and nesting deeper than [`MAX_DEPTH`] are errors, so hostile input
//! costs linear time and bounded stack.

use serde_json::{Map, Number, Value};

/// The largest input [`parse`] and [`parse_string_input`] accept: 1 MiB.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The deepest nesting of lists, tuples and dicts [`parse`] accepts.
pub const MAX_DEPTH: usize = 64;

/// Where and why parsing failed. `line` and `column` are 1-based; `column` counts characters.
///
/// Displays as `line 1, column 1: unexpected name '__import__' (only literals are allowed)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ParseError {
    /// 1-based line of the offending character.
    pub line: usize,
    /// 1-based column, in characters, of the offending character.
    pub column: usize,
    /// What was found and what was expected.
    pub message: String,
}

/// Parses one Python literal (see the module docs) into JSON. Evaluates nothing.
///
/// Errors: input over [`MAX_INPUT_BYTES`], nesting over [`MAX_DEPTH`], and anything that is not a literal,
/// each with the line and column where it was found.
pub fn parse(src: &str) -> Result<Value, ParseError> {
    check_size(src)?;
    let mut p = Parser { src, pos: 0, depth: 0, json: false };
    let value = p.value()?;
    p.skip_trivia();
    if !p.eat(',') {
        return match p.peek() {
            None => Ok(value),
            Some(_) => Err(p.unexpected("expected the end of the input")),
        };
    }
    // `1, 2` without parentheses is a tuple at the top level, as in Python.
    let mut items = vec![value];
    loop {
        p.skip_trivia();
        if p.peek().is_none() {
            return Ok(Value::Array(items));
        }
        items.push(p.value()?);
        p.skip_trivia();
        if !p.eat(',') {
            return match p.peek() {
                None => Ok(Value::Array(items)),
                Some(_) => Err(p.unexpected("expected ',' or the end of the input")),
            };
        }
    }
}

/// Parses a tool argument that arrived as a string (course s05 `TodoManager.update`): as JSON first, then as
/// a Python literal. Returns the Python parser's error when both fail.
///
/// Strings over [`MAX_INPUT_BYTES`] are refused before either parser runs.
///
/// Both paths read numbers the same way, because both are this parser: text that serde_json
/// accepts as JSON is then read by the `Parser` in JSON mode (`true`, `false`, `null` and the `\/`
/// escape allowed). Floats are correctly rounded on both (Rust's float parsing), and an integer
/// beyond 64 bits is an error on both, never a lossy float.
pub fn parse_string_input(s: &str) -> Result<Value, ParseError> {
    check_size(s)?;
    if serde_json::from_str::<serde::de::IgnoredAny>(s).is_err() {
        return parse(s);
    }
    let mut p = Parser { src: s, pos: 0, depth: 0, json: true };
    let value = p.value()?;
    p.skip_trivia();
    match p.peek() {
        None => Ok(value),
        Some(_) => Err(p.unexpected("expected the end of the input")),
    }
}

fn check_size(src: &str) -> Result<(), ParseError> {
    if src.len() > MAX_INPUT_BYTES {
        return Err(ParseError {
            line: 1,
            column: 1,
            message: format!("input is {} bytes; the limit is {MAX_INPUT_BYTES} bytes", src.len()),
        });
    }
    Ok(())
}

/// The parser's state: the source, a byte offset into it, the current nesting depth, and whether
/// the text is JSON (then `true`/`false`/`null` and `\/` are read as JSON reads them).
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    depth: usize,
    json: bool,
}

impl Parser<'_> {
    // ---------------------------------------------------------------------------------------------------
    // Looking at characters
    // ---------------------------------------------------------------------------------------------------

    /// The character at the current position, if any.
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    /// The character `n` characters ahead of the current one.
    fn peek_nth(&self, n: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(n)
    }

    /// Consumes and returns the current character.
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Consumes `c` if it is next.
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// Skips whitespace, `#` comments and backslash-newline continuations.
    fn skip_trivia(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\n' | '\r' | '\x0c') => self.pos += 1,
                Some('#') => {
                    // A comment ends at a line break: `\n`, `\r\n` or a lone `\r`, as in Python.
                    let rest = &self.src[self.pos..];
                    self.pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
                }
                Some('\\') if matches!(self.peek_nth(1), Some('\n' | '\r')) => {
                    self.pos += 1;
                    self.eat('\r');
                    self.eat('\n');
                }
                _ => return,
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Errors
    // ---------------------------------------------------------------------------------------------------

    /// An error at byte offset `at`, with 1-based line and character column.
    fn error_at(&self, at: usize, message: impl Into<String>) -> ParseError {
        let before = &self.src[..at];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        ParseError {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
            message: message.into(),
        }
    }

    /// "unexpected X, CONTEXT" for whatever is at the current position, with a hint when X shows the input
    /// is code rather than a literal (a name, a call, an attribute access, an operator).
    fn unexpected(&self, context: &str) -> ParseError {
        let Some(c) = self.peek() else {
            return self.error_at(self.pos, format!("unexpected end of input, {context}"));
        };
        if is_name_start(c) {
            let name = self.name_at(self.pos);
            return self.error_at(
                self.pos,
                format!("unexpected name '{}' (only literals are allowed)", shorten(name)),
            );
        }
        let hint = match c {
            '(' => " (calls are not allowed)",
            '.' => " (attribute access is not allowed)",
            '[' => " (subscripts are not allowed)",
            '+' | '-' | '*' | '/' | '%' | '@' | '&' | '|' | '^' | '~' | '<' | '>' | '=' | '!' => {
                " (operators are not allowed)"
            }
            _ => "",
        };
        let shown: String = c.escape_debug().collect();
        self.error_at(self.pos, format!("unexpected '{shown}', {context}{hint}"))
    }

    /// The identifier that starts at byte offset `at`.
    fn name_at(&self, at: usize) -> &str {
        let rest = &self.src[at..];
        let end = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        &rest[..end]
    }

    // ---------------------------------------------------------------------------------------------------
    // Values
    // ---------------------------------------------------------------------------------------------------

    /// `value := list | tuple | dict | string+ | number | sign number | True | False | None`
    fn value(&mut self) -> Result<Value, ParseError> {
        self.skip_trivia();
        match self.peek() {
            Some('[') => self.list(),
            Some('(') => self.tuple(),
            Some('{') => self.dict(),
            Some('\'' | '"') => self.strings(),
            Some('+' | '-') => self.signed_number(),
            Some(c) if c.is_ascii_digit() => self.number(false),
            Some('.') if self.peek_nth(1).is_some_and(|c| c.is_ascii_digit()) => self.number(false),
            Some(c) if is_name_start(c) => self.name_or_prefixed_string(),
            _ => Err(self.unexpected("expected a value")),
        }
    }

    /// Enters a container opened at byte offset `open`, refusing to go deeper than [`MAX_DEPTH`].
    fn enter(&mut self, open: usize) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error_at(open, format!("nesting is deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    /// `list := '[' ( value ( ',' value )* ','? )? ']'` → array.
    fn list(&mut self) -> Result<Value, ParseError> {
        self.enter(self.pos)?;
        self.bump(); // '['
        let items = self.sequence(']', Vec::new())?;
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// The rest of a comma-separated sequence up to and including `close`, appended to `items`. Called just
    /// after the opening bracket, or after the first item and its comma.
    fn sequence(&mut self, close: char, mut items: Vec<Value>) -> Result<Vec<Value>, ParseError> {
        loop {
            self.skip_trivia();
            if self.eat(close) {
                return Ok(items);
            }
            items.push(self.value()?);
            self.skip_trivia();
            if self.eat(',') {
                continue;
            }
            if self.eat(close) {
                return Ok(items);
            }
            return Err(self.unexpected(&format!("expected ',' or '{close}'")));
        }
    }

    /// `tuple := '(' ')' | '(' value ')' | '(' value ',' … ')'` → array. As in Python, parentheses around a
    /// single value without a comma only group it: `('a')` is the string `"a"`, `('a',)` is `["a"]`.
    fn tuple(&mut self) -> Result<Value, ParseError> {
        self.enter(self.pos)?;
        self.bump(); // '('
        self.skip_trivia();
        let value = if self.eat(')') {
            Value::Array(Vec::new())
        } else {
            let first = self.value()?;
            self.skip_trivia();
            if self.eat(')') {
                first
            } else if self.eat(',') {
                Value::Array(self.sequence(')', vec![first])?)
            } else {
                return Err(self.unexpected("expected ',' or ')'"));
            }
        };
        self.depth -= 1;
        Ok(value)
    }

    /// `dict := '{' ( value ':' value ( ',' … )* ','? )? '}'` → object. A `{a, b}` set is an error.
    /// Later duplicate keys replace earlier values, keeping the first key's position (as a Python dict does).
    fn dict(&mut self) -> Result<Value, ParseError> {
        let open = self.pos;
        self.enter(open)?;
        self.bump(); // '{'
        let mut map = Map::new();
        // Keys Python treats as equal (`True`, `1`, `1.0`) are one key: the first one's text stays,
        // the last value wins. Maps each number or bool key's value to the text it got.
        let mut numeric_keys: Vec<(KeyIdentity, String)> = Vec::new();
        loop {
            self.skip_trivia();
            if self.eat('}') {
                break;
            }
            let key_at = self.pos;
            let key = self.value()?;
            self.skip_trivia();
            if !self.eat(':') {
                if map.is_empty() && matches!(self.peek(), Some(',' | '}')) {
                    return Err(self.error_at(open, "set literals are not allowed (JSON has no sets)"));
                }
                return Err(self.unexpected("expected ':'"));
            }
            let identity = KeyIdentity::of(&key);
            let mut key = self.dict_key(key, key_at)?;
            if let Some(identity) = identity {
                match numeric_keys.iter().find(|(seen, _)| *seen == identity) {
                    Some((_, first)) => key = first.clone(),
                    None => numeric_keys.push((identity, key.clone())),
                }
            }
            let value = self.value()?;
            map.insert(key, value);
            self.skip_trivia();
            if self.eat(',') {
                continue;
            }
            if self.eat('}') {
                break;
            }
            return Err(self.unexpected("expected ',' or '}'"));
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    /// A dict key as a JSON object key, converted as Python's `json.dumps` converts keys: a float
    /// as Python's `repr` spells it (`1e-05`, `1.0`, `1e+16`).
    fn dict_key(&self, key: Value, at: usize) -> Result<String, ParseError> {
        match key {
            Value::String(s) => Ok(s),
            Value::Number(n) => Ok(match n.as_f64() {
                Some(f) if n.is_f64() => python_float_repr(f),
                _ => n.to_string(),
            }),
            Value::Bool(b) => Ok(b.to_string()),
            Value::Null => Ok("null".to_string()),
            Value::Array(_) | Value::Object(_) => Err(self.error_at(
                at,
                "dict keys must be strings, numbers, True, False or None (JSON object keys are text)",
            )),
        }
    }

    /// A name: `True`, `False`, `None`, or a string prefix directly followed by a quote. Anything else is
    /// code, and an error.
    fn name_or_prefixed_string(&mut self) -> Result<Value, ParseError> {
        let name = self.name_at(self.pos);
        let after = self.src[self.pos + name.len()..].chars().next();
        if matches!(after, Some('\'' | '"')) && name.len() <= 2 {
            return self.strings();
        }
        let value = match (name, self.json) {
            ("True", false) | ("true", true) => Value::Bool(true),
            ("False", false) | ("false", true) => Value::Bool(false),
            ("None", false) | ("null", true) => Value::Null,
            _ => return Err(self.unexpected("expected a value")),
        };
        self.pos += name.len();
        Ok(value)
    }

    // ---------------------------------------------------------------------------------------------------
    // Strings
    // ---------------------------------------------------------------------------------------------------

    /// One or more adjacent string literals, concatenated: `'a' "b"` → `"ab"`.
    fn strings(&mut self) -> Result<Value, ParseError> {
        let mut out = String::new();
        loop {
            self.string(&mut out)?;
            self.skip_trivia();
            if !self.at_string_start() {
                return Ok(Value::String(out));
            }
        }
    }

    /// Whether a string literal (a quote, or one or two prefix letters and a quote) starts here.
    fn at_string_start(&self) -> bool {
        match self.peek() {
            Some('\'' | '"') => true,
            Some(c) if c.is_ascii_alphabetic() => {
                let name = self.name_at(self.pos);
                name.len() <= 2
                    && matches!(self.src[self.pos + name.len()..].chars().next(), Some('\'' | '"'))
            }
            _ => false,
        }
    }

    /// One string literal, appended to `out`: an optional prefix, then `'…'`, `"…"`, `'''…'''` or `"""…"""`.
    fn string(&mut self, out: &mut String) -> Result<(), ParseError> {
        let start = self.pos;
        let prefix = self.name_at(self.pos).to_ascii_lowercase();
        let raw = match prefix.as_str() {
            "" | "u" => false,
            "r" => true,
            p if p.contains('b') => return Err(self.error_at(start, "bytes literals are not allowed")),
            p if p.contains('f') || p.contains('t') => {
                return Err(
                    self.error_at(start, "f-strings and t-strings are not allowed (they evaluate code)")
                );
            }
            _ => return Err(self.unexpected("expected a value")),
        };
        self.pos += prefix.len();
        let Some(quote) = self.bump() else {
            return Err(self.unexpected("expected a quote"));
        };
        let triple = self.peek() == Some(quote) && self.peek_nth(1) == Some(quote);
        if triple {
            self.pos += 2;
        }
        loop {
            let here = self.pos;
            match self.bump() {
                None => {
                    let what =
                        if triple { "unterminated triple-quoted string" } else { "unterminated string" };
                    return Err(self.error_at(start, what));
                }
                Some('\n' | '\r') if !triple => {
                    return Err(self.error_at(
                        start,
                        "unterminated string (a line break inside quotes needs \\n or triple quotes)",
                    ));
                }
                Some('\r') => {
                    // Inside triple quotes, \r\n and a lone \r are line breaks, read as \n (as Python does).
                    self.eat('\n');
                    out.push('\n');
                }
                Some(c) if c == quote => {
                    if !triple {
                        return Ok(());
                    }
                    if self.peek() == Some(quote) && self.peek_nth(1) == Some(quote) {
                        self.pos += 2;
                        return Ok(());
                    }
                    out.push(c);
                }
                Some('\\') if raw => {
                    // In a raw string the backslash stays, and it keeps the next character from closing the
                    // string: r'\'' is a backslash and a quote.
                    out.push('\\');
                    match self.bump() {
                        // Python reads `\r\n` and a lone `\r` in source as `\n`, after a backslash too.
                        Some('\r') => {
                            self.eat('\n');
                            out.push('\n');
                        }
                        Some(c) => out.push(c),
                        None => return Err(self.error_at(start, "unterminated string")),
                    }
                }
                Some('\\') => self.escape(here, out)?,
                Some(c) => out.push(c),
            }
        }
    }

    /// The escape sequence after a backslash at byte offset `at`, appended to `out`.
    fn escape(&mut self, at: usize, out: &mut String) -> Result<(), ParseError> {
        let Some(c) = self.bump() else {
            return Err(self.error_at(at, "unterminated string"));
        };
        match c {
            '\n' => {} // line continuation: backslash-newline adds nothing
            '\r' => {
                self.eat('\n');
            }
            '\\' | '\'' | '"' => out.push(c),
            '/' if self.json => out.push('/'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                // Up to three octal digits; \0 is the common case.
                let mut code = c.to_digit(8).unwrap_or_default();
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            code = code * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                // At most 0o777, always a valid code point.
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            'x' => {
                let code = self.hex_digits(at, 2, "\\xXX")?;
                out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
            'u' => {
                let code = self.hex_digits(at, 4, "\\uXXXX")?;
                out.push(self.unicode_escape(at, code)?);
            }
            'U' => {
                let code = self.hex_digits(at, 8, "\\UXXXXXXXX")?;
                match char::from_u32(code) {
                    Some(ch) => out.push(ch),
                    None => return Err(self.error_at(at, format!("invalid code point U+{code:X}"))),
                }
            }
            'N' => return Err(self.error_at(at, "\\N{...} escapes are not supported")),
            other => {
                // Python keeps unknown escapes as they are (with a warning): '\d' is backslash, d.
                out.push('\\');
                out.push(other);
            }
        }
        Ok(())
    }

    /// Exactly `n` hex digits, for the escape `form` that started at byte offset `at`.
    fn hex_digits(&mut self, at: usize, n: usize, form: &str) -> Result<u32, ParseError> {
        let mut code = 0u32;
        for _ in 0..n {
            match self.peek().and_then(|d| d.to_digit(16)) {
                Some(d) => {
                    code = code * 16 + d;
                    self.pos += 1;
                }
                None => return Err(self.error_at(at, format!("truncated {form} escape"))),
            }
        }
        Ok(code)
    }

    /// The character of a `\uXXXX` escape; a high surrogate must be followed by a `\uXXXX` low surrogate.
    fn unicode_escape(&mut self, at: usize, code: u32) -> Result<char, ParseError> {
        if let Some(ch) = char::from_u32(code) {
            return Ok(ch);
        }
        let lone = || format!("lone surrogate \\u{code:04x} (a pair like \\ud83d\\ude00 is fine)");
        if !(0xD800..0xDC00).contains(&code) || !self.src[self.pos..].starts_with("\\u") {
            return Err(self.error_at(at, lone()));
        }
        let low_at = self.pos;
        self.pos += 2;
        let low = self.hex_digits(low_at, 4, "\\uXXXX")?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(self.error_at(at, lone()));
        }
        let combined = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        char::from_u32(combined).ok_or_else(|| self.error_at(at, lone()))
    }

    // ---------------------------------------------------------------------------------------------------
    // Numbers
    // ---------------------------------------------------------------------------------------------------

    /// `'+' number | '-' number`. Only one sign, and only before a number: `-inf` and `--1` are errors.
    fn signed_number(&mut self) -> Result<Value, ParseError> {
        let negative = self.bump() == Some('-');
        self.skip_trivia();
        match self.peek() {
            Some(c) if c.is_ascii_digit() => self.number(negative),
            Some('.') if self.peek_nth(1).is_some_and(|c| c.is_ascii_digit()) => self.number(negative),
            _ => Err(self.unexpected("expected a number after the sign")),
        }
    }

    /// An int (`42`, `1_000`, `0x1F`, `0o17`, `0b101`) or a float (`1.5`, `.5`, `5.`, `1e-3`).
    fn number(&mut self, negative: bool) -> Result<Value, ParseError> {
        let start = self.pos;
        let radix = match (self.peek(), self.peek_nth(1)) {
            (Some('0'), Some('x' | 'X')) => 16,
            (Some('0'), Some('o' | 'O')) => 8,
            (Some('0'), Some('b' | 'B')) => 2,
            _ => 10,
        };
        let value = if radix == 10 {
            self.decimal(start, negative)?
        } else {
            self.radix_int(start, radix, negative)?
        };
        // `1abc`, `1if x`, `1j`: Python rejects a name glued to a number, and complex numbers are not JSON.
        match self.peek() {
            Some('j' | 'J') => Err(self.error_at(start, "complex numbers are not allowed")),
            Some(c) if is_name_char(c) || c == '.' => Err(self.error_at(start, "invalid number literal")),
            _ => Ok(value),
        }
    }

    /// Digits of `radix` with single `_` separators between them; returns them without the separators.
    /// `allow_leading_underscore` is for `0x_ff`, which Python accepts.
    fn digits(&mut self, radix: u32, allow_leading_underscore: bool) -> Result<String, ParseError> {
        let mut out = String::new();
        let mut last_underscore = false;
        while let Some(c) = self.peek() {
            if c == '_' {
                let ok = !last_underscore
                    && (!out.is_empty() || allow_leading_underscore)
                    && self.peek_nth(1).is_some_and(|d| d.is_digit(radix));
                if !ok {
                    return Err(
                        self.error_at(self.pos, "invalid '_' in number (it may only separate digits)")
                    );
                }
                last_underscore = true;
            } else if c.is_digit(radix) {
                out.push(c);
                last_underscore = false;
            } else {
                break;
            }
            self.pos += 1;
        }
        Ok(out)
    }

    /// `0x…`, `0o…`, `0b…`.
    fn radix_int(&mut self, start: usize, radix: u32, negative: bool) -> Result<Value, ParseError> {
        self.pos += 2;
        let digits = self.digits(radix, true)?;
        if digits.is_empty() {
            return Err(self.error_at(start, "invalid number literal (no digits after the base prefix)"));
        }
        self.int_value(start, &digits, radix, negative)
    }

    /// A decimal int or a float: `digits ('.' digits?)? exponent?` or `'.' digits exponent?`.
    fn decimal(&mut self, start: usize, negative: bool) -> Result<Value, ParseError> {
        let int_part = self.digits(10, false)?;
        let mut is_float = false;
        let mut text = int_part.clone();
        if self.peek() == Some('.') {
            is_float = true;
            self.pos += 1;
            text.push('.');
            text.push_str(&self.digits(10, false)?);
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let sign = self.peek_nth(1).filter(|c| matches!(c, '+' | '-'));
            let digit_at = if sign.is_some() { 2 } else { 1 };
            if self.peek_nth(digit_at).is_some_and(|c| c.is_ascii_digit()) {
                is_float = true;
                self.pos += digit_at;
                text.push('e');
                text.extend(sign);
                text.push_str(&self.digits(10, false)?);
            }
        }
        if is_float {
            let mut f: f64 = text.parse().map_err(|_| self.error_at(start, "invalid number literal"))?;
            if negative {
                f = -f;
            }
            return Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| self.error_at(start, "float literal is out of range (inf is not JSON)"));
        }
        if int_part.len() > 1 && int_part.starts_with('0') && int_part.bytes().any(|b| b != b'0') {
            return Err(
                self.error_at(start, "leading zeros in decimal integers are not allowed (use 0o for octal)")
            );
        }
        self.int_value(start, &int_part, 10, negative)
    }

    /// An int from its digits, as `i64` when negative and `u64` otherwise; larger magnitudes are errors.
    fn int_value(&self, start: usize, digits: &str, radix: u32, negative: bool) -> Result<Value, ParseError> {
        let too_large = || self.error_at(start, "integer is too large (JSON numbers here are 64-bit)");
        let magnitude = u64::from_str_radix(digits, radix).map_err(|_| too_large())?;
        if !negative {
            return Ok(Value::Number(magnitude.into()));
        }
        if magnitude == 0 {
            return Ok(Value::Number(0u64.into()));
        }
        // -9223372036854775808 is the smallest i64; its magnitude is one more than i64::MAX.
        let value = 0i64.checked_sub_unsigned(magnitude).ok_or_else(too_large)?;
        Ok(Value::Number(value.into()))
    }
}

/// What makes two dict keys the same key in Python: `True == 1 == 1.0` and `False == 0 == 0.0 ==
/// -0.0` (their hashes agree). Strings and `None` never equal a number.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyIdentity {
    /// An int, a bool, or a float with an integral value that fits.
    Int(i128),
    /// Any other float.
    Float(f64),
}

impl KeyIdentity {
    /// The identity of a number or bool key; `None` for strings and `None`.
    fn of(key: &Value) -> Option<Self> {
        match key {
            Value::Bool(b) => Some(KeyIdentity::Int(i128::from(*b))),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(KeyIdentity::Int(i128::from(i)))
                } else if let Some(u) = n.as_u64() {
                    Some(KeyIdentity::Int(i128::from(u)))
                } else {
                    let f = n.as_f64()?;
                    // Integral floats within 2^64 equal the int of the same value.
                    if f.fract() == 0.0 && f.abs() < 1.9e19 {
                        Some(KeyIdentity::Int(f as i128))
                    } else {
                        Some(KeyIdentity::Float(f))
                    }
                }
            }
            _ => None,
        }
    }
}

/// A float as Python's `repr` spells it (what `json.dumps` writes for a float dict key): the
/// shortest digits that read back to the same float, in positional notation when the decimal
/// exponent is from -4 to 15 (`0.0001`, `1.5`, `1e+16` is `1e+16`, `100.0`), otherwise in
/// scientific notation with a signed two-digit-or-more exponent (`1e-05`, `1.5e+16`).
pub fn python_float_repr(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `1.5e16`, `1e-5`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    let decpt = exponent + 1; // digits before the decimal point
    if (-3..=16).contains(&decpt) {
        let n = digits.len() as i32;
        let body = if decpt <= 0 {
            format!("0.{}{digits}", "0".repeat(decpt.unsigned_abs() as usize))
        } else if decpt >= n {
            format!("{digits}{}.0", "0".repeat((decpt - n) as usize))
        } else {
            let (int, frac) = digits.split_at(decpt as usize);
            format!("{int}.{frac}")
        };
        return format!("{sign}{body}");
    }
    let (first, rest) = digits.split_at(1.min(digits.len()));
    let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
    let exp_sign = if exponent < 0 { '-' } else { '+' };
    format!("{sign}{first}{dot}e{exp_sign}{:02}", exponent.unsigned_abs())
}

/// Whether `c` may start a Python name.
fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

/// Whether `c` may continue a Python name.
fn is_name_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// A name cut to 40 characters for an error message.
fn shorten(name: &str) -> String {
    match name.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &name[..cut]),
        None => name.to_string(),
    }
}

#[cfg(test)]
#[path = "pyliteral_tests.rs"]
mod tests;
