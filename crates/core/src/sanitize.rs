//! The one sanitiser for the terminal: untrusted text is shown, never obeyed:
//! a model or a tool's output must not be able to move the cursor, hide a line or fake a prompt.
//!
//! Everything the terminal shows that the model, a tool, a hook or the endpoint wrote (model
//! text and its streamed deltas, tool names, tool previews, todo items, error and hook lines,
//! the permission prompt) goes through [`sanitize`] on its way out. The model still receives the
//! raw text; only the display changes.
//!
//! What is replaced, each character by a visible escape:
//!
//! | characters | why | shown as |
//! |---|---|---|
//! | C0 controls U+0000–U+001F except `\n` and `\t`, and DEL U+007F | `ESC` starts CSI/OSC sequences (colours, title, clipboard OSC 52, clear screen), `BEL` ends OSC, `\r` and `\b` overwrite what was printed | `\x1b`, `\x07`, `\r`, `\x08`, … |
//! | C1 controls U+0080–U+009F | `U+009B` is CSI and `U+009D` is OSC on terminals that read 8-bit controls | `\u{9b}` |
//! | bidi controls U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069 | they reorder what is shown, so `rm -rf ~ #` can read as something else (Trojan Source) | `\u{202e}` |
//!
//! Key insight: the mapping is per character and stateless, so text that arrives in pieces (a
//! stream of deltas with an escape sequence split across two of them) is safe piece by piece:
//! the `ESC` becomes `\x1b` in whichever piece holds it, and what follows is plain text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `true` for a character the terminal must not receive raw: a C0 control other than `\n` and
/// `\t`, DEL, a C1 control, or a bidi control (see the module table).
pub fn is_unsafe(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// Whether `text` is printable ASCII, `\n` and `\t` only: the usual case, checked a byte at a
/// time before the slower per-character test.
fn plain_ascii(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t'))
}

/// Appends the visible escape of `c` to `out`: `\r` for a carriage return, `\xNN` (two lower-case
/// hex digits) for other C0 controls and DEL, `\u{N}` for C1 and bidi controls. Any other
/// character is appended as it is.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '\r' => out.push_str("\\r"),
        c if !is_unsafe(c) => out.push(c),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// `text` with every unsafe character ([`is_unsafe`]) replaced by its visible escape
/// ([`push_escaped`]); borrowed unchanged when there is none. `\n` and `\t` stay.
///
/// `sanitize("\x1b]52;c;aGk=\x07ok")` is `\x1b]52;c;aGk=\x07ok` with both controls spelt out
/// as four visible characters each.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if plain_ascii(text) || !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// `text` on one line: like [`sanitize`], and `\n` and `\t` shown as `\n` and `\t` too. For
/// lines that must stay one line, such as `[HOOK] bash(…)`.
pub fn sanitize_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c == '\n' || c == '\t' || is_unsafe(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => push_escaped(&mut out, c),
        }
    }
    Cow::Owned(out)
}

/// `text` on one line ([`sanitize_line`]), cut to at most `max` characters, the last of them `…`
/// when something was cut. The one shortening helper for what the terminal and the logs show in
/// a line: `[HOOK] bash(…)`, a tool header, `/history`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = sanitize_line(text);
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "héllo\n\tworld → ✓";
        assert!(matches!(sanitize(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn controls_become_visible_escapes() {
        let rows: &[(&str, &str)] = &[
            ("\x1b[2J", "\\x1b[2J"),
            ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
            ("\x1b]52;c;aGk=\x1b\\", "\\x1b]52;c;aGk=\\x1b\\"),
            ("a\rb", "a\\rb"),
            ("a\x08b", "a\\x08b"),
            ("\0\x7f", "\\x00\\x7f"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("\u{9d}0;t\u{9c}", "\\u{9d}0;t\\u{9c}"),
            ("x\u{202e}y\u{2066}z\u{061c}\u{200f}", "x\\u{202e}y\\u{2066}z\\u{61c}\\u{200f}"),
            ("keep\nnew\tlines", "keep\nnew\tlines"),
        ];
        for (raw, shown) in rows {
            assert_eq!(sanitize(raw), *shown, "{raw:?}");
        }
    }

    #[test]
    fn one_line_form_spells_newlines_and_tabs() {
        assert_eq!(sanitize_line("a\nb\tc\x1b"), "a\\nb\\tc\\x1b");
        assert_eq!(sanitize_line("ls -la"), "ls -la");
    }

    #[test]
    fn pieces_are_safe_one_by_one() {
        // An escape split across two stream deltas: each piece alone carries no raw control.
        let pieces = ["hello \x1b", "[31mred", "\x1b]0;", "t\x07"];
        let shown: String = pieces.iter().map(|p| sanitize(p).into_owned()).collect();
        assert!(!shown.chars().any(is_unsafe));
        assert_eq!(shown, sanitize(&pieces.concat()));
    }
}
