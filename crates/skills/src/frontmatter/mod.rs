//! A `SKILL.md`'s front matter: where it starts and ends, and its YAML, read safely.
//!
//! Source: COURSE §4.2. The first line is exactly `---` and a later line is exactly `---` (a
//! trailing `\r` is accepted on both, for files written on Windows); the YAML is what lies between
//! them, the body what follows the closing line. Without a closing line there is no front matter
//! and the whole file is the body. A `---` *inside* a YAML block scalar is indented (a block
//! scalar's lines are indented under their key), so it is never a line that is exactly `---`, and
//! it stays content.
//!
//! **The YAML is untrusted input**, read with [`yaml_rust2`]'s event parser (YAML 1.2, safe Rust,
//! no `unsafe` C library). We never build a YAML document tree: [`parse_yaml`] walks the parser's
//! events one at a time and keeps only the two values the catalog needs, so
//! - an anchor (`&a`), an alias (`*a`) or a tag (`!!python/object`, `!x`) is refused at the event
//!   where it appears, before anything is built from it. Without aliases nothing can expand, so a
//!   billion-laughs document (anchors whose aliases multiply at each level) ends at its first
//!   anchor, after a handful of events, in bounded time and memory;
//! - the parser's work is bounded: at most [`MAX_YAML_EVENTS`] events and [`MAX_YAML_DEPTH`] levels
//!   of nesting, on a text that is already capped (the whole manifest is at most
//!   [`crate::MAX_MANIFEST_BYTES`]). The parser keeps its own nesting on a heap stack, not the
//!   call stack, so deep nesting is an error, never a stack overflow.
//!
//! Why this crate and this way (rather than a serde deserializer with alias budgets): refusing
//! at the event is the one rule that needs no tuning and that a reader can check on one screen;
//! `yaml-rust2` is a maintained, dependency-light YAML 1.2 parser in safe Rust whose events carry
//! the anchor and tag of each node, and whose MSRV fits the workspace's. Front matter is two
//! strings; it never needs an alias or a tag.
//!
//! Scalars are resolved with the YAML 1.2 core schema (`Yaml::from_str`): `name: 123`,
//! `name: true` or `name: ~` are not strings, so they fall back as `name: [bad]` does. (The
//! course's PyYAML reads YAML 1.1, where `yes`/`no` are booleans too; here they are strings.)

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::yaml::Yaml;

/// The most parser events one front matter may produce: thousands of keys, far more than any
/// real front matter, and a bound on the parser's work whatever the text.
pub const MAX_YAML_EVENTS: usize = 10_000;

/// The deepest nesting of mappings and sequences a front matter may have.
pub const MAX_YAML_DEPTH: usize = 32;

/// A manifest cut at its front matter (COURSE §4.2): the YAML between the delimiter lines, if
/// there is a front matter, and the body after it (or the whole text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The text between the opening and the closing `---` lines, without them; `None` when the
    /// first line is not `---` or no later line is.
    pub yaml: Option<&'a str>,
    /// What follows the closing line, or the whole text when there is no front matter.
    pub body: &'a str,
}

/// Whether `line` (without its `\n`) is a delimiter: exactly `---`, or `---\r`.
fn is_delimiter(line: &str) -> bool {
    line.strip_suffix('\r').unwrap_or(line) == "---"
}

/// Cuts `text` at its front matter, by the course's delimiter rules (see the module docs).
pub fn split_front_matter(text: &str) -> Split<'_> {
    let none = Split { yaml: None, body: text };
    // A file of one line has no closing line, even when that line is `---`.
    let Some(first_end) = text.find('\n') else { return none };
    if !is_delimiter(&text[..first_end]) {
        return none;
    }
    let yaml_start = first_end + 1;
    let mut at = yaml_start;
    while at < text.len() {
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        if is_delimiter(&text[at..end]) {
            let body = text.get(end + 1..).unwrap_or("");
            return Split { yaml: Some(&text[yaml_start..at]), body };
        }
        at = end + 1;
    }
    none
}

/// The two values of a front matter the catalog uses; each is `Some` only when the YAML gives
/// it as a string (COURSE §4.2: a missing or non-string value falls back).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// `name`, when it is a string (untrimmed).
    pub name: Option<String>,
    /// `description`, when it is a string (untrimmed).
    pub description: Option<String>,
}

/// Why a front matter was refused. `Display` is the sentence a warning shows; lines are counted
/// in the manifest (its front matter starts on line 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The YAML does not parse: the parser's message, at a line and column of the manifest.
    #[error("its front matter is not valid YAML: {message} (line {line}, column {column})")]
    Syntax {
        /// What the parser says.
        message: String,
        /// The manifest's line, from 1.
        line: usize,
        /// The column, from 1.
        column: usize,
    },
    /// An anchor, an alias or a tag, refused where it appears (see the module docs).
    #[error("its front matter uses {what} at line {line}; anchors, aliases and tags are not allowed there")]
    Refused {
        /// `an anchor (&NAME)`, `an alias (*NAME)` or `the tag !…`.
        what: String,
        /// The manifest's line, from 1.
        line: usize,
    },
    /// More than [`MAX_YAML_EVENTS`] events.
    #[error("its front matter is too large to read (more than {MAX_YAML_EVENTS} YAML nodes)")]
    TooManyNodes,
    /// Nested deeper than [`MAX_YAML_DEPTH`].
    #[error("its front matter nests deeper than {MAX_YAML_DEPTH} levels (line {line})")]
    TooDeep {
        /// The manifest's line, from 1.
        line: usize,
    },
    /// A second YAML document (after `...`) in the front matter.
    #[error("its front matter holds more than one YAML document (line {line})")]
    ManyDocuments {
        /// The manifest's line, from 1.
        line: usize,
    },
}

/// The manifest's line of a marker in the front matter, which starts on the manifest's line 2.
fn manifest_line(mark: &Marker) -> usize {
    mark.line() + 1
}

/// `!!str`, `!x`: a tag as it was written.
fn tag_text(tag: &Tag) -> String {
    format!("the tag {}{}", tag.handle, tag.suffix)
}

/// What one complete node directly under the root mapping was.
enum Node {
    /// A scalar: its text, and whether it resolves to a string.
    Scalar(String, bool),
    /// A mapping or a sequence.
    Collection,
}

/// Reads the front matter's `name` and `description` from `yaml`, refusing anchors, aliases and
/// tags and bounding the parser's work (see the module docs). A YAML that is not a mapping
/// counts as empty (COURSE §4.2): every value falls back.
///
/// # Errors
/// A [`YamlError`]: the YAML does not parse, uses an anchor, alias or tag, or exceeds
/// [`MAX_YAML_EVENTS`] or [`MAX_YAML_DEPTH`].
pub fn parse_yaml(yaml: &str) -> Result<FrontMatter, YamlError> {
    let [name, description] = string_values(yaml, ["name", "description"])?;
    Ok(FrontMatter { name, description })
}

/// The values of `keys` in the root mapping of `yaml`, in the order of `keys`, read as
/// [`parse_yaml`] reads `name` and `description`: `Some` only for a string, the last of a key
/// given twice; all `None` when the YAML is not a mapping. Other front matters use it for their
/// own keys (s09's memory records add `type`).
///
/// # Errors
/// As [`parse_yaml`].
pub fn string_values<const N: usize>(yaml: &str, keys: [&str; N]) -> Result<[Option<String>; N], YamlError> {
    let mut parser = Parser::new_from_str(yaml);
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut root_is_mapping = false;
    let mut depth = 0usize;
    let mut documents = 0usize;
    // Under the root mapping, nodes alternate: key, value, key, … `key` holds the last key until
    // its value completes (`Some(None)` for a key that is not a scalar).
    let mut key: Option<Option<String>> = None;
    let mut at_root = |node: Node, found: &mut [Option<String>; N]| match key.take() {
        None => {
            key = Some(match node {
                Node::Scalar(text, _) => Some(text),
                Node::Collection => None,
            })
        }
        Some(name) => {
            let value = match node {
                Node::Scalar(text, true) => Some(text),
                _ => None,
            };
            // A key given twice: the last one counts, as in PyYAML.
            if let Some(i) = name.as_deref().and_then(|name| keys.iter().position(|k| *k == name)) {
                found[i] = value;
            }
        }
    };
    for events in 1.. {
        if events > MAX_YAML_EVENTS {
            return Err(YamlError::TooManyNodes);
        }
        let (event, mark) = parser.next_token().map_err(|e| YamlError::Syntax {
            message: e.info().to_owned(),
            line: manifest_line(e.marker()),
            column: e.marker().col() + 1,
        })?;
        let refuse = |anchor: usize, tag: &Option<Tag>| -> Result<(), YamlError> {
            let what = match (anchor, tag) {
                (_, Some(tag)) => tag_text(tag),
                (0, None) => return Ok(()),
                (_, None) => "an anchor (&NAME)".to_owned(),
            };
            Err(YamlError::Refused { what, line: manifest_line(&mark) })
        };
        let opens_mapping = matches!(event, Event::MappingStart(..));
        match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => {}
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError::ManyDocuments { line: manifest_line(&mark) });
                }
            }
            Event::Alias(_) => {
                return Err(YamlError::Refused {
                    what: "an alias (*NAME)".to_owned(),
                    line: manifest_line(&mark),
                });
            }
            Event::Scalar(text, style, anchor, tag) => {
                refuse(anchor, &tag)?;
                if depth == 1 && root_is_mapping {
                    let is_string =
                        style != TScalarStyle::Plain || matches!(Yaml::from_str(&text), Yaml::String(_));
                    at_root(Node::Scalar(text, is_string), &mut found);
                }
            }
            Event::MappingStart(anchor, tag) | Event::SequenceStart(anchor, tag) => {
                refuse(anchor, &tag)?;
                if depth == 0 {
                    root_is_mapping = opens_mapping;
                }
                depth += 1;
                if depth > MAX_YAML_DEPTH {
                    return Err(YamlError::TooDeep { line: manifest_line(&mark) });
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                depth = depth.saturating_sub(1);
                if depth == 1 && root_is_mapping {
                    at_root(Node::Collection, &mut found);
                }
            }
        }
    }
    Ok(found)
}

/// `text` with every run of whitespace made one space, and trimmed.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The catalog's description when the front matter gives none (COURSE §4.2): the body's first
/// line (after trimming the body) without its leading `#`s and spaces, whitespace collapsed;
/// `""` for an empty body.
pub fn first_line_description(body: &str) -> String {
    let first = body.trim().split('\n').next().unwrap_or("");
    collapse_whitespace(first.trim_start_matches(['#', ' ']))
}

#[cfg(test)]
mod tests;
