//! Python's `json.dumps` and `repr`, byte for byte.
//!
//! The course's chapters write their files and several tool results with CPython's defaults
//! (COURSE-s10-s17 §0.3): `json.dumps` separates with `", "` and `": "` (with spaces), escapes
//! every non-ASCII character as `\uXXXX` (a surrogate pair above U+FFFF), keeps the keys in
//! insertion order, and with `indent=2` puts each item on a line of its own, writing an empty
//! container as `[]` or `{}`. `repr` gives `['task_x']`, `{'command': 'x'}`, `None`, with the
//! quote Python picks and its escapes. serde_json writes neither, so a learner who ran the course
//! and our chapter in one folder would find different bytes.
//!
//! ```
//! use serde_json::json;
//!
//! let task = json!({"id": "task_0c301f08", "subject": "设计 schema", "owner": null, "blockedBy": []});
//! assert_eq!(
//!     pyjson::dumps_indent(&task, 2),
//!     "{\n  \"id\": \"task_0c301f08\",\n  \"subject\": \"\\u8bbe\\u8ba1 schema\",\n  \"owner\": null,\n  \"blockedBy\": []\n}"
//! );
//! assert_eq!(pyjson::dumps(&json!({"a": [1, 2.5]})), r#"{"a": [1, 2.5]}"#);
//! assert_eq!(pyjson::repr_list(["task_x"]), "['task_x']");
//! assert_eq!(pyjson::repr(&json!({"command": "it's"})), r#"{'command': "it's"}"#);
//! ```
//!
//! Every function here is checked against a table of cases whose expected bytes CPython 3.11
//! wrote (`tests/gen_cases.py`, `tests/cases.jsonl`). Which characters `repr` escapes follows
//! CPython's `str.isprintable()` of that version (Unicode 14.0), from a generated table.

#![warn(missing_docs)]

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Number, Value};

mod unprintable;

/// The settings of one `json.dumps` call that the course uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// `indent=`: `None` writes one line with `", "` and `": "`; `Some(n)` puts each item on a
    /// line of its own, indented `n` spaces per level, and separates with `","` and `": "`
    /// (Python's default separators for an indent). `Some(0)` gives new lines without spaces.
    pub indent: Option<usize>,
    /// `ensure_ascii=` (Python's default `true`): every character outside U+0020..U+007E is
    /// written as `\uXXXX`. With `false` only `"`, `\` and the control characters are escaped.
    pub ensure_ascii: bool,
}

impl Default for Options {
    /// `json.dumps(value)`: no indent, `ensure_ascii=True`.
    fn default() -> Self {
        Self { indent: None, ensure_ascii: true }
    }
}

/// `json.dumps(value)`: one line, `", "` and `": "`, non-ASCII as `\uXXXX`.
pub fn dumps(value: &Value) -> String {
    dumps_with(value, Options::default())
}

/// `json.dumps(value, indent=indent)`: the layout of the course's `.tasks/*.json` with
/// `indent = 2`. No trailing new line.
pub fn dumps_indent(value: &Value, indent: usize) -> String {
    dumps_with(value, Options { indent: Some(indent), ..Options::default() })
}

/// `json.dumps(value, indent=…, ensure_ascii=…)` with `options`.
pub fn dumps_with(value: &Value, options: Options) -> String {
    let mut out = String::new();
    write_value(&mut out, value, options, 0);
    out
}

/// `json.dumps` of anything serde can serialise: a struct's fields in their declared order (as
/// `dataclasses.asdict` keeps them).
///
/// # Errors
/// What serde_json reports when `value` cannot become JSON (a map with non-string keys, a
/// failing `Serialize` impl).
pub fn to_string<T: Serialize + ?Sized>(value: &T, options: Options) -> Result<String, serde_json::Error> {
    Ok(dumps_with(&serde_json::to_value(value)?, options))
}

/// `value` with every object's keys in sorted order, at every depth: what `json.dumps(value,
/// sort_keys=True)` writes is `dumps(&sort_keys(value))`. Python sorts keys by code point, which
/// is the order of their UTF-8 bytes, so `str`'s `Ord` gives the same order.
///
/// ```
/// use serde_json::json;
/// let sorted = pyjson::sort_keys(&json!({"b": 1, "a": {"d": [{"z": 0, "y": 1}], "c": 2}}));
/// assert_eq!(pyjson::dumps(&sorted), r#"{"a": {"c": 2, "d": [{"y": 1, "z": 0}]}, "b": 1}"#);
/// ```
pub fn sort_keys(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(sort_keys).collect()),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sort_keys(v))).collect())
        }
        other => other.clone(),
    }
}

fn write_value(out: &mut String, value: &Value, options: Options, depth: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(out, n, true),
        Value::String(s) => write_json_str(out, s, options.ensure_ascii),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                separator(out, i, options, depth + 1);
                write_value(out, item, options, depth + 1);
            }
            closing(out, options, depth);
            out.push(']');
        }
        Value::Object(map) => write_object(out, map, options, depth),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>, options: Options, depth: usize) {
    if map.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (key, item)) in map.iter().enumerate() {
        separator(out, i, options, depth + 1);
        write_json_str(out, key, options.ensure_ascii);
        out.push_str(": ");
        write_value(out, item, options, depth + 1);
    }
    closing(out, options, depth);
    out.push('}');
}

/// What comes before item `i` of a container whose items sit at `depth`.
fn separator(out: &mut String, i: usize, options: Options, depth: usize) {
    match options.indent {
        None if i > 0 => out.push_str(", "),
        None => {}
        Some(width) => {
            if i > 0 {
                out.push(',');
            }
            out.push('\n');
            out.extend(std::iter::repeat_n(' ', width * depth));
        }
    }
}

/// What comes before the closing bracket of a container at `depth`.
fn closing(out: &mut String, options: Options, depth: usize) {
    if let Some(width) = options.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * depth));
    }
}

/// A number as Python writes it: an integer as it is, a float as `float.__repr__` (`json` =
/// `true` spells the non-finite ones `NaN`/`Infinity` as `json.dumps` does, otherwise `nan`/`inf`).
fn write_number(out: &mut String, n: &Number, json: bool) {
    if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(f) = n.as_f64() {
        if json && !f.is_finite() {
            out.push_str(if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            });
        } else {
            out.push_str(&float_repr(f));
        }
    }
}

/// A JSON string literal as `json.dumps` writes it (CPython's `encode_basestring_ascii` with
/// `ensure_ascii`, `encode_basestring` without).
fn write_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if !ensure_ascii || c <= '~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(value)` of the value as Python's `json.loads` would build it: `None`,
/// `True`, `False`, an int, a float (`float.__repr__`), a str ([`repr_str`]), a list
/// `[a, b]`, a dict `{'k': v}` (keys in order).
pub fn repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, value);
    out
}

fn write_repr(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => write_number(out, n, false),
        Value::String(s) => write_repr_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_repr_str(out, key);
                out.push_str(": ");
                write_repr(out, item);
            }
            out.push('}');
        }
    }
}

/// Python's `repr` of a str: in single quotes, or in double quotes when the text holds a `'`
/// and no `"`; `\\`, the quote, `\t`, `\n`, `\r` escaped; other control characters and the
/// characters CPython does not print (`str.isprintable()`) as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
pub fn repr_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_repr_str(&mut out, s);
    out
}

fn write_repr_str(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            c if c == quote || c == '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c < '\u{7f}' || is_printable(c) => out.push(c),
            c if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) <= 0xffff => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push(quote);
}

/// Python's `repr` of a list of str: `['a', 'b']` (the course's `Blocked by: {list}`).
pub fn repr_list<I>(items: I) -> String
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    let mut out = String::from("[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_repr_str(&mut out, item.as_ref());
    }
    out.push(']');
    out
}

/// Python's `str.strip()`: `s` without the leading and trailing characters Python counts as
/// white space (`str.isspace()`): Unicode's white space and also the separators U+001C to
/// U+001F, which Rust's `str::trim` keeps.
pub fn strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Whether CPython's `str.isprintable()` holds for `c` (a character above U+007E).
fn is_printable(c: char) -> bool {
    let cp = c as u32;
    let table = unprintable::UNPRINTABLE;
    // The last range starting at or below `cp` is the only one that can hold it.
    let i = table.partition_point(|&(start, _)| start <= cp);
    i == 0 || table[i - 1].1 < cp
}

/// Python's `float.__repr__`: the shortest digits that read back as the same float, written
/// plainly when the exponent is from -4 to 15 (`0.0001`, `1e+16` beyond), always with a `.0` or
/// an exponent; `nan`, `inf`, `-inf`.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as CPython's repr, as `d.ddde-N`.
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::from(sign);
    if (-4..16).contains(&exponent) {
        if exponent < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exponent - 1) as usize));
            out.push_str(&digits);
        } else {
            let point = exponent as usize + 1;
            if digits.len() <= point {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printable_table_is_sorted_and_disjoint() {
        let table = unprintable::UNPRINTABLE;
        assert!(table.windows(2).all(|w| w[0].1 < w[1].0 && w[0].0 <= w[0].1));
        assert!(!is_printable('\u{a0}') && is_printable('é') && !is_printable('\u{10ffff}'));
    }

    #[test]
    fn non_finite_floats_are_spelled_as_python_does() {
        assert_eq!(
            [float_repr(f64::NAN), float_repr(f64::INFINITY), float_repr(-f64::INFINITY)],
            ["nan", "inf", "-inf"]
        );
    }
}
