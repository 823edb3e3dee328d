//! The `todo_write` tool of course chapter s05: items `{content, status}`, and tolerant string input.
//!
//! Differences from [`crate::todo`]:
//! - items are `{content, status}` and render without `#id`: `[>] write tests`;
//! - `todos` may arrive as a JSON array, as a string holding a JSON array, or as a string holding a Python
//!   literal such as `[{'content': 'x', 'status': 'pending'}]` (course #340). A string is parsed by
//!   [`crate::pyliteral::parse_string_input`]: JSON first, then the Python-literal parser. Nothing is ever
//!   evaluated;
//! - the schema carries `maxItems: 20` and `minLength: 1`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::MAX_TODOS;
use crate::fields::text_field;
use crate::pyliteral::{self, ParseError};
pub use crate::todo::Status;

/// The tool's name in the `tools` list (course s05).
pub const TODO_WRITE_TOOL_NAME: &str = "todo_write";

/// The tool's description in the `tools` list (course s05), exact.
pub const TODO_WRITE_DESCRIPTION: &str = "Create and manage a task list for your current coding session.";

/// The tool's description in the course's s15 (COURSE-s10-s17 §6.3), exact.
pub const TODO_WRITE_DESCRIPTION_S15: &str = "Create and manage a task list for the current session.";

/// The heading the terminal shows above the list (course s05 prints it in yellow).
pub const DISPLAY_HEADING: &str = "## Current Tasks";

/// One validated item of the s05 plan: `{content, status}`; `content` is trimmed and never empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoWriteItem {
    /// What to do, trimmed, non-empty.
    pub content: String,
    /// Where it stands.
    pub status: Status,
}

/// Why a `todo_write` update was rejected. `Display` is the course's exact message (s05); the tool output
/// is `Error: {err}`. Variants are listed in the order the checks run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TodoWriteError {
    /// 1. `todos` was a string that neither JSON nor the Python-literal parser accepts. The parser's error
    ///    (with line and column) is kept as the source, for logs; it is not part of the message.
    #[error("todos must be a list or JSON array string")]
    Unparsable(#[source] ParseError),
    /// 2. `todos` (after parsing a string) is not a list. A missing `todos` (`null`) lands here too.
    #[error("todos must be a list")]
    NotAList,
    /// 3. More than [`MAX_TODOS`] items.
    #[error("Max 20 todos allowed")]
    TooMany,
    /// 4. `todos[index]` is not an object.
    #[error("todos[{index}] must be an object")]
    NotAnObject {
        /// 0-based position in `todos`.
        index: usize,
    },
    /// 5. `todos[index]` has no content, or only whitespace.
    #[error("todos[{index}] requires content")]
    RequiresContent {
        /// 0-based position in `todos`.
        index: usize,
    },
    /// 6. `todos[index]`'s status, lower-cased, is not one of the three.
    #[error("todos[{index}] has invalid status '{status}'")]
    InvalidStatus {
        /// 0-based position in `todos`.
        index: usize,
        /// The offending status, already lower-cased, as the course prints it.
        status: String,
    },
    /// 7. Two or more items are `in_progress`.
    #[error("Only one todo can be in_progress at a time")]
    MultipleInProgress,
}

/// The s05 plan: a list of [`TodoWriteItem`]s replaced wholesale by each valid [`update`](Self::update).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoWriteManager {
    items: Vec<TodoWriteItem>,
}

impl TodoWriteManager {
    /// An empty plan; [`render`](Self::render) gives `No todos.`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current items, in the order the model sent them.
    pub fn items(&self) -> &[TodoWriteItem] {
        &self.items
    }

    /// Validates the model's `todos` value and, only if all of it passes, makes it the new plan.
    ///
    /// `todos` is the raw value of the tool input's `todos` field (`Value::Null` when it is missing). A
    /// string is first parsed by [`pyliteral::parse_string_input`]. Checks, in the course's order (s05):
    /// 1. a string neither parser accepts → `todos must be a list or JSON array string`;
    /// 2. not a list → `todos must be a list`;
    /// 3. more than 20 items → `Max 20 todos allowed`;
    /// 4. per item, from index 0, all checks of one item before the next item:
    ///    - not an object → `todos[i] must be an object`;
    ///    - `content` trimmed is empty or missing → `todos[i] requires content`;
    ///    - `status` lower-cased, `pending` when absent, `none` when `null` (as Python's `str(None)`) →
    ///      otherwise `todos[i] has invalid status 'S'`;
    /// 5. more than one `in_progress` → `Only one todo can be in_progress at a time`.
    ///
    /// A non-string `content` or `status` is taken as its JSON text, as Python's `str()` would; a `null`
    /// content counts as absent **(ours)**. On success the plan becomes exactly the list of `{content, status}`
    /// pairs and the render is returned. On error the plan is unchanged; callers format the tool output as
    /// `Error: {err}` (see [`tool_output`](Self::tool_output)).
    pub fn update(&mut self, todos: &Value) -> Result<String, TodoWriteError> {
        let parsed;
        let todos = match todos {
            Value::String(s) => {
                parsed = pyliteral::parse_string_input(s).map_err(TodoWriteError::Unparsable)?;
                &parsed
            }
            other => other,
        };
        let raw = todos.as_array().ok_or(TodoWriteError::NotAList)?;
        if raw.len() > MAX_TODOS {
            return Err(TodoWriteError::TooMany);
        }
        let mut validated = Vec::with_capacity(raw.len());
        for (index, todo) in raw.iter().enumerate() {
            let todo = todo.as_object().ok_or(TodoWriteError::NotAnObject { index })?;
            let content = text_field(todo, "content").unwrap_or_default().trim().to_string();
            // As the course's `str(item.get("status", "pending")).lower()`: absent is pending, `None`
            // is the text `none`, which is not a status.
            let status = match todo.get("status") {
                None => "pending".to_string(),
                Some(Value::Null) => "none".to_string(),
                Some(_) => text_field(todo, "status").unwrap_or_default().to_lowercase(),
            };
            if content.is_empty() {
                return Err(TodoWriteError::RequiresContent { index });
            }
            let Some(status) = Status::parse(&status) else {
                return Err(TodoWriteError::InvalidStatus { index, status });
            };
            validated.push(TodoWriteItem { content, status });
        }
        if validated.iter().filter(|t| t.status == Status::InProgress).count() > 1 {
            return Err(TodoWriteError::MultipleInProgress);
        }
        self.items = validated;
        Ok(self.render())
    }

    /// The course's s15 `run_todo_write`, whose checks and words differ from s05's (COURSE-s10-s17
    /// §6.3): a string is read as JSON, then as a Python literal; then, in order, `todos must be a
    /// list`, `todos[i] must be an object`, `todos[i] missing 'content' or 'status'`,
    /// `todos[i] has invalid status 'S'` (the status exactly as given, not lower-cased). No cap on
    /// the count, no rule on `in_progress`, an empty `content` accepted. On success the plan is
    /// replaced and the result is `Updated N todos`; on error the plan is unchanged.
    ///
    /// # Errors
    /// The course's message, without the `Error: ` the tool output puts before it.
    pub fn update_s15(&mut self, todos: &Value) -> Result<String, String> {
        let parsed;
        let todos = match todos {
            Value::String(s) => {
                parsed = pyliteral::parse_string_input(s)
                    .map_err(|_| "todos must be a list or JSON array string".to_owned())?;
                &parsed
            }
            other => other,
        };
        let raw = todos.as_array().ok_or_else(|| "todos must be a list".to_owned())?;
        let mut items = Vec::with_capacity(raw.len());
        for (index, todo) in raw.iter().enumerate() {
            let todo = todo.as_object().ok_or_else(|| format!("todos[{index}] must be an object"))?;
            let (Some(content), Some(status)) = (todo.get("content"), todo.get("status")) else {
                return Err(format!("todos[{index}] missing 'content' or 'status'"));
            };
            // Python's `str()` of what was given: a string as it is, anything else as its repr.
            let text = |v: &Value| v.as_str().map_or_else(|| pyjson::repr(v), str::to_owned);
            let exact = status.as_str().filter(|s| ["pending", "in_progress", "completed"].contains(s));
            let Some(status) = exact.and_then(Status::parse) else {
                return Err(format!("todos[{index}] has invalid status '{}'", text(status)));
            };
            let content = text(content);
            items.push(TodoWriteItem { content, status });
        }
        self.items = items;
        Ok(format!("Updated {} todos", self.items.len()))
    }

    /// The `todo_write` tool's output string (course `run_todo_write`): the render on success,
    /// `Error: <message>` on rejection.
    pub fn tool_output(&mut self, todos: &Value) -> String {
        self.update(todos).unwrap_or_else(|e| format!("Error: {e}"))
    }

    /// The plan as the model reads it: `No todos.` when empty, otherwise one `[ ] CONTENT` / `[>] CONTENT`
    /// / `[x] CONTENT` line per item, a blank line, and `(DONE/TOTAL completed)`. No `#id`, no trailing
    /// newline.
    pub fn render(&self) -> String {
        crate::render_plan(self.items.iter().map(|t| (t.status, t.content.clone())))
    }

    /// What the terminal shows after a successful update: `## Current Tasks`, a newline, then
    /// [`render`](Self::render). Plain text; the caller adds colour (the course prints the heading in
    /// yellow, after a blank line).
    pub fn display(&self) -> String {
        format!("{DISPLAY_HEADING}\n{}", self.render())
    }
}

/// The `input_schema` of the `todo_write` tool in the course's s15: s05's without `maxItems` and
/// `minLength`.
pub fn todo_write_schema_s15() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                    },
                    "required": ["content", "status"]
                }
            }
        },
        "required": ["todos"]
    })
}

/// The `input_schema` of the `todo_write` tool, as course s05 sends it: `todos` is an array with
/// `maxItems: 20` of objects `{content: string (minLength 1), status: string enum}`, both required;
/// `todos` is required.
pub fn todo_write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "maxItems": MAX_TODOS,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "minLength": 1},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                    },
                    "required": ["content", "status"]
                }
            }
        },
        "required": ["todos"]
    })
}
