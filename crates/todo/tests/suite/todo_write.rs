//! Course s05 `todo_write`: validation order, exact messages, string input, and state that survives errors.

use serde_json::{Value, json};
use todo::Status;
use todo::todo_write::{
    TODO_WRITE_DESCRIPTION, TODO_WRITE_TOOL_NAME, TodoWriteError, TodoWriteItem, TodoWriteManager,
};

fn keep_this() -> TodoWriteManager {
    let mut todo = TodoWriteManager::new();
    todo.update(&json!([{"content": "keep this", "status": "pending"}])).unwrap();
    todo
}

fn kept() -> Vec<TodoWriteItem> {
    vec![TodoWriteItem { content: "keep this".into(), status: Status::Pending }]
}

fn message(todos: Value) -> String {
    TodoWriteManager::new().update(&todos).unwrap_err().to_string()
}

#[test]
fn renders_without_ids() {
    let mut todo = TodoWriteManager::new();
    let out = todo
        .update(&json!([
            {"content": "inspect repo", "status": "completed"},
            {"content": "write tests", "status": "in_progress"},
        ]))
        .unwrap();
    assert_eq!(out, "[x] inspect repo\n[>] write tests\n\n(1/2 completed)");
    assert_eq!(todo.display(), "## Current Tasks\n[x] inspect repo\n[>] write tests\n\n(1/2 completed)");
}

#[test]
fn empty_list_renders_no_todos() {
    assert_eq!(TodoWriteManager::new().render(), "No todos.");
}

#[test]
fn success_stores_exactly_the_trimmed_pairs() {
    let mut todo = TodoWriteManager::new();
    todo.update(&json!([{"content": "  a  ", "status": "COMPLETED", "extra": 1}, {"content": "b"}])).unwrap();
    assert_eq!(
        todo.items(),
        [
            TodoWriteItem { content: "a".into(), status: Status::Completed },
            TodoWriteItem { content: "b".into(), status: Status::Pending },
        ]
    );
}

#[test]
fn empty_content_update_is_rejected_and_state_survives() {
    let mut todo = keep_this();
    assert!(todo.update(&json!([{"content": "", "status": "pending"}])).is_err());
    assert_eq!(todo.items(), kept());
}

#[test]
fn two_in_progress_update_is_rejected_and_state_survives() {
    let mut todo = keep_this();
    let two = json!([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]);
    assert!(todo.update(&two).is_err());
    assert_eq!(todo.items(), kept());
}

#[test]
fn twenty_one_items_update_is_rejected_and_state_survives() {
    let mut todo = keep_this();
    let many: Vec<Value> =
        (0..21).map(|i| json!({"content": format!("t{i}"), "status": "pending"})).collect();
    assert!(todo.update(&Value::Array(many)).is_err());
    assert_eq!(todo.items(), kept());
}

#[test]
fn error_1_unparsable_string() {
    assert_eq!(message(json!("not a list at all")), "todos must be a list or JSON array string");
}

#[test]
fn error_2_parsed_but_not_a_list() {
    assert_eq!(message(json!({"content": "a"})), "todos must be a list");
    assert_eq!(message(json!("{'content': 'a'}")), "todos must be a list");
    assert_eq!(message(json!("\"just a string\"")), "todos must be a list");
    assert_eq!(message(Value::Null), "todos must be a list");
}

#[test]
fn error_3_more_than_twenty() {
    let many: Vec<Value> = (0..21).map(|_| json!(0)).collect();
    assert_eq!(message(Value::Array(many)), "Max 20 todos allowed");
}

#[test]
fn error_4_item_not_an_object() {
    assert_eq!(message(json!([{"content": "a"}, "b"])), "todos[1] must be an object");
}

#[test]
fn error_5_empty_content_after_trim() {
    assert_eq!(message(json!([{"content": "a"}, {"content": " \n\t "}])), "todos[1] requires content");
    assert_eq!(message(json!([{"status": "pending"}])), "todos[0] requires content");
}

#[test]
fn error_6_invalid_status_lower_cased() {
    assert_eq!(message(json!([{"content": "a", "status": "Done"}])), "todos[0] has invalid status 'done'");
}

#[test]
fn error_7_more_than_one_in_progress() {
    let two = json!([{"content": "a", "status": "in_progress"}, {"content": "b", "status": "IN_PROGRESS"}]);
    assert_eq!(message(two), "Only one todo can be in_progress at a time");
}

#[test]
fn checks_of_one_item_finish_before_the_next_item() {
    // item 0 has a bad status, item 1 is not an object: item 0's error wins.
    assert_eq!(message(json!([{"content": "a", "status": "x"}, 5])), "todos[0] has invalid status 'x'");
    // content is checked before status within one item.
    assert_eq!(message(json!([{"content": "", "status": "x"}])), "todos[0] requires content");
}

#[test]
fn accepts_a_json_array_string() {
    let mut todo = TodoWriteManager::new();
    let out = todo.update(&json!(r#"[{"content": "inspect repo", "status": "completed"}]"#)).unwrap();
    assert_eq!(out, "[x] inspect repo\n\n(1/1 completed)");
}

#[test]
fn accepts_a_python_literal_string() {
    let mut todo = TodoWriteManager::new();
    let src = "[{'content': \"it's here\", 'status': 'in_progress'}, {'content': 'say \"hi\"', 'status': 'pending',},]";
    todo.update(&json!(src)).unwrap();
    assert_eq!(todo.render(), "[>] it's here\n[ ] say \"hi\"\n\n(0/2 completed)");
}

#[test]
fn tool_output_is_render_or_error() {
    let mut todo = keep_this();
    assert_eq!(todo.tool_output(&json!("nope")), "Error: todos must be a list or JSON array string");
    assert_eq!(todo.tool_output(&json!([])), "No todos.");
}

#[test]
fn unparsable_error_keeps_the_parser_position_as_source() {
    let err = TodoWriteManager::new().update(&json!("[1, 2")).unwrap_err();
    let TodoWriteError::Unparsable(source) = &err else { panic!("{err:?}") };
    assert_eq!((source.line, source.column), (1, 6));
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn python_injection_string_is_an_error_with_no_side_effect() {
    let marker = std::env::temp_dir().join(format!(
        "todo-s05-marker-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_file(&marker);
    let attack = format!("__import__('pathlib').Path('{}').write_text('x')", marker.display());
    let mut todo = keep_this();
    let err = todo.update(&json!(attack)).unwrap_err();
    assert_eq!(err.to_string(), "todos must be a list or JSON array string");
    assert!(!marker.exists(), "the string must never be evaluated");
    assert_eq!(todo.items(), kept());
}

#[test]
fn ten_megabyte_string_is_refused_quickly() {
    let huge = format!("[{}]", "'x', ".repeat(2_000_000));
    assert!(huge.len() > 10_000_000);
    let start = std::time::Instant::now();
    let err = TodoWriteManager::new().update(&Value::String(huge)).unwrap_err();
    assert_eq!(err.to_string(), "todos must be a list or JSON array string");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn tool_name_and_description_are_the_course_strings() {
    assert_eq!(TODO_WRITE_TOOL_NAME, "todo_write");
    assert_eq!(TODO_WRITE_DESCRIPTION, "Create and manage a task list for your current coding session.");
}

#[test]
fn a_null_status_is_the_text_none_as_in_python() {
    assert_eq!(message(json!([{"content": "x", "status": null}])), "todos[0] has invalid status 'none'");
    assert_eq!(message(json!("[{'content': 'x', 'status': None}]")), "todos[0] has invalid status 'none'");
    // Absent is still pending.
    assert!(TodoWriteManager::new().update(&json!([{"content": "x"}])).is_ok());
}
