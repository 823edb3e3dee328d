//! Reading one field of a model-supplied item the way the course's Python does with `str(item.get(k, d))`.

use serde_json::{Map, Value};

/// The text of `item[key]`, or `None` when the key is absent or JSON `null`.
///
/// The course calls `str(...)` on whatever the model sent, so a number or a boolean is accepted as text:
/// - a string is returned as it is;
/// - a number gives its JSON spelling (`3` → `"3"`, `1.5` → `"1.5"`);
/// - a boolean gives `"true"` / `"false"`;
/// - an array or object gives its compact JSON text.
///
/// **(ours)** `null` counts as absent, so the caller's default applies. Python would have produced the
/// string `"None"` here.
pub(crate) fn text_field(item: &Map<String, Value>, key: &str) -> Option<String> {
    match item.get(key)? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}
