//! The `todo` tool of course chapter s03 (TodoWrite): a validated plan with `#id`s.
//!
//! The model sends its whole plan each time as `items: [{id, text, status}, …]`. [`TodoManager::update`]
//! validates all of it first and only then replaces the stored list, so a bad update never leaves a
//! half-written plan behind. Its output is [`TodoManager::render`], which the model reads as the tool result:
//!
//! ```text
//! [x] #1: Plan
//! [>] #2: Build
//! [ ] #3: Test
//!
//! (1/3 completed)
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::MAX_TODOS;
use crate::fields::text_field;

/// The tool's name in the `tools` list (course s03).
pub const TODO_TOOL_NAME: &str = "todo";

/// The tool's description in the `tools` list (course s03), exact.
pub const TODO_TOOL_DESCRIPTION: &str = "Update task list. Track progress on multi-step tasks.";

/// The state of one todo item. Shared by s03's `todo` and s05's `todo_write`.
///
/// Serialises as `"pending"`, `"in_progress"` or `"completed"`, the strings the model sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started: `[ ]`.
    Pending,
    /// Being worked on: `[>]`. At most one item may be in this state.
    InProgress,
    /// Done: `[x]`.
    Completed,
}

impl Status {
    /// All three states, in the order of the schema's `enum`.
    pub const ALL: [Status; 3] = [Status::Pending, Status::InProgress, Status::Completed];

    /// Parses a status the way the course does: the string is lower-cased first, then must be one of
    /// `pending`, `in_progress`, `completed`. `"IN_PROGRESS"` parses; `"done"` and `" pending"` do not.
    pub fn parse(s: &str) -> Option<Status> {
        match s.to_lowercase().as_str() {
            "pending" => Some(Status::Pending),
            "in_progress" => Some(Status::InProgress),
            "completed" => Some(Status::Completed),
            _ => None,
        }
    }

    /// The wire spelling: `pending`, `in_progress` or `completed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    /// The render marker: `[ ]`, `[>]` or `[x]`.
    pub fn marker(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[>]",
            Status::Completed => "[x]",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One validated item of the s03 plan: `{id, text, status}`.
///
/// `text` is trimmed and never empty; `id` is whatever the model sent as text (`3` becomes `"3"`), or the
/// item's 1-based position when it sent none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// The item's id as shown after `#`.
    pub id: String,
    /// What to do, trimmed, non-empty.
    pub text: String,
    /// Where it stands.
    pub status: Status,
}

/// Why an s03 update was rejected. `Display` is the course's exact message; the tool output is
/// `Error: {err}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TodoError {
    /// **(ours)** `items` was not a JSON array (the Python course would crash on it).
    #[error("items must be an array")]
    NotAnArray,
    /// More than [`MAX_TODOS`] items.
    #[error("Max 20 todos allowed")]
    TooMany,
    /// **(ours)** `items[index]` (0-based) was not a JSON object.
    #[error("items[{index}] must be an object")]
    NotAnObject {
        /// 0-based position in `items`.
        index: usize,
    },
    /// The item's text was missing or blank after trimming.
    #[error("Item {id}: text required")]
    TextRequired {
        /// The item's id (or its 1-based position when it had none).
        id: String,
    },
    /// The item's status, lower-cased, is not one of the three.
    #[error("Item {id}: invalid status '{status}'")]
    InvalidStatus {
        /// The item's id (or its 1-based position when it had none).
        id: String,
        /// The offending status, already lower-cased, as the course prints it.
        status: String,
    },
    /// Two or more items were `in_progress`.
    #[error("Only one task can be in_progress at a time")]
    MultipleInProgress,
}

/// The s03 plan: a list of [`TodoItem`]s replaced wholesale by each valid [`update`](Self::update).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TodoManager {
    items: Vec<TodoItem>,
}

impl TodoManager {
    /// An empty plan; [`render`](Self::render) gives `No todos.`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current items, in the order the model sent them.
    pub fn items(&self) -> &[TodoItem] {
        &self.items
    }

    /// Validates the model's raw `items` value and, only if all of it passes, makes it the new plan.
    ///
    /// Checks, in the course's order (s03 `TodoManager.update`):
    /// 1. not an array → [`TodoError::NotAnArray`] **(ours)**;
    /// 2. more than 20 items → `Max 20 todos allowed`;
    /// 3. per item, from index 0:
    ///    - not an object → [`TodoError::NotAnObject`] **(ours)**;
    ///    - `id` defaults to the 1-based index as a string; a number id `3` becomes `"3"`;
    ///    - `text` is trimmed; empty → `Item ID: text required`;
    ///    - `status` is lower-cased and defaults to `pending`; other values → `Item ID: invalid status 'S'`;
    /// 4. more than one `in_progress` → `Only one task can be in_progress at a time`.
    ///
    /// A field that is JSON `null` counts as absent **(ours)**; a non-string value is taken as its JSON text,
    /// as Python's `str()` would. On success returns [`render`](Self::render). On error the plan is exactly
    /// as it was; callers format the tool output as `Error: {err}` (see [`tool_output`](Self::tool_output)).
    pub fn update(&mut self, items: &Value) -> Result<String, TodoError> {
        let raw = items.as_array().ok_or(TodoError::NotAnArray)?;
        if raw.len() > MAX_TODOS {
            return Err(TodoError::TooMany);
        }
        let mut validated = Vec::with_capacity(raw.len());
        for (i, item) in raw.iter().enumerate() {
            let item = item.as_object().ok_or(TodoError::NotAnObject { index: i })?;
            let text = text_field(item, "text").unwrap_or_default().trim().to_string();
            let status = text_field(item, "status").unwrap_or_else(|| "pending".into()).to_lowercase();
            let id = text_field(item, "id").unwrap_or_else(|| (i + 1).to_string());
            if text.is_empty() {
                return Err(TodoError::TextRequired { id });
            }
            let Some(status) = Status::parse(&status) else {
                return Err(TodoError::InvalidStatus { id, status });
            };
            validated.push(TodoItem { id, text, status });
        }
        if validated.iter().filter(|t| t.status == Status::InProgress).count() > 1 {
            return Err(TodoError::MultipleInProgress);
        }
        self.items = validated;
        Ok(self.render())
    }

    /// The `todo` tool's output string: the render on success, `Error: <message>` on rejection.
    pub fn tool_output(&mut self, items: &Value) -> String {
        self.update(items).unwrap_or_else(|e| format!("Error: {e}"))
    }

    /// The plan as the model reads it, byte for byte as the course:
    /// `No todos.` when empty, otherwise one `[ ] #ID: TEXT` / `[>] #ID: TEXT` / `[x] #ID: TEXT` line per
    /// item, a blank line, and `(DONE/TOTAL completed)`. No trailing newline.
    pub fn render(&self) -> String {
        crate::render_plan(self.items.iter().map(|t| (t.status, format!("#{}: {}", t.id, t.text))))
    }
}

/// The `input_schema` of the `todo` tool, exactly as course s03 sends it:
/// `{type: object, properties: {items: {type: array, items: {type: object, properties: {id, text,
/// status (enum)}, required: [id, text, status]}}}, required: [items]}`.
pub fn todo_tool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "text": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                    },
                    "required": ["id", "text", "status"]
                }
            }
        },
        "required": ["items"]
    })
}
