//! Fuzz target: `pyliteral::parse` never panics, on any bytes that are UTF-8, and what it reports is
//! consistent. Also drives the s05 `todo_write` update with the same string: a rejected update must leave
//! the plan as it was.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use todo::pyliteral;
use todo::todo_write::TodoWriteManager;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    match pyliteral::parse(src) {
        Ok(value) => {
            // Whatever it accepts is plain JSON that serialises.
            let _ = serde_json::to_string(&value).expect("a parsed value serialises");
        }
        Err(e) => {
            assert!(e.line >= 1 && e.column >= 1, "positions are 1-based: {e}");
            assert!(e.line <= src.matches('\n').count() + 1, "line within the input: {e}");
            assert!(!e.message.is_empty());
        }
    }
    let mut plan = TodoWriteManager::new();
    plan.update(&json!([{"content": "keep this", "status": "pending"}])).expect("valid");
    let before = plan.clone();
    if plan.update(&Value::String(src.to_string())).is_err() {
        assert_eq!(plan, before, "a rejected update changed the plan");
    }
});
