//! The planning layer of the course *learn-claude-code*: todo lists and the nag reminder.
//!
//! ```text
//!   model ──tool_use todo / todo_write──▶ TodoManager ──render()──▶ tool_result
//!                                              │
//!   rounds without a todo call ──▶ Nag ──≥ 3──▶ <reminder>Update your todos.</reminder>
//! ```
//!
//! The modules above are pure logic: no I/O, no agent loop. [`tools`] (the default `tools` feature)
//! plugs them into `agent-core`'s dispatch map and loop for the chapters; the fuzz target builds
//! without it.
//!
//! | module | course chapter | what it holds |
//! |---|---|---|
//! | [`todo`](mod@todo) | s03 — TodoWrite | the `todo` tool: items `{id, text, status}`, render with `#id` |
//! | [`todo_write`] | s05 — todo_write | the `todo_write` tool: items `{content, status}`, string input |
//! | [`pyliteral`] | s05 (course #340) | a safe parser for Python-literal strings; evaluates nothing |
//! | [`nag`] | s03 and s05 | the rounds-since-todo counter and its two reset policies |
//!
//! ```
//! use serde_json::json;
//! use todo::{nag::Nag, todo_write::TodoWriteManager};
//!
//! let mut plan = TodoWriteManager::new();
//! // The model may send a Python repr instead of JSON; it is parsed, never evaluated.
//! let out = plan.tool_output(&json!("[{'content': 'inspect repo', 'status': 'in_progress'}]"));
//! assert_eq!(out, "[>] inspect repo\n\n(0/1 completed)");
//! assert_eq!(plan.tool_output(&json!([])), "No todos.");
//!
//! let mut nag = Nag::s05();
//! assert_eq!([nag.after_round(false), nag.after_round(false), nag.after_round(false)], [false, false, true]);
//! ```
//!
//! Key insight (course s03): a todo tool gives the agent no new power to act, only a plan it must keep
//! visible — and the nag makes forgetting it costly.

#![warn(missing_docs)]

pub mod nag;
pub mod pyliteral;
pub mod todo;
pub mod todo_write;
#[cfg(feature = "tools")]
pub mod tools;

mod fields;

pub use todo::Status;

/// The most items one update may hold, in both flavours (course s03 and s05): `Max 20 todos allowed`.
pub const MAX_TODOS: usize = 20;

/// The render both flavours share (course s03 and s05): `No todos.` when empty, otherwise one
/// `MARKER LABEL` line per item, a blank line, and `(DONE/TOTAL completed)`; no trailing newline.
/// `label` is what follows the marker: `#ID: TEXT` in s03, `CONTENT` in s05.
fn render_plan(items: impl ExactSizeIterator<Item = (Status, String)>) -> String {
    let total = items.len();
    if total == 0 {
        return "No todos.".to_string();
    }
    let mut out = String::new();
    let mut done = 0;
    for (status, label) in items {
        done += usize::from(status == Status::Completed);
        out.push_str(&format!("{} {label}\n", status.marker()));
    }
    out.push_str(&format!("\n({done}/{total} completed)"));
    out
}
