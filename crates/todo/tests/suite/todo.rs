//! Course s03 `TodoManager`: one test per rule, with the course's own examples.

use serde_json::json;
use todo::Status;
use todo::todo::{TODO_TOOL_DESCRIPTION, TODO_TOOL_NAME, TodoError, TodoItem, TodoManager};

fn item(id: &str, text: &str, status: Status) -> TodoItem {
    TodoItem { id: id.into(), text: text.into(), status }
}

fn n_items(n: usize) -> serde_json::Value {
    json!(
        (1..=n)
            .map(|i| json!({"id": i.to_string(), "text": format!("step {i}"), "status": "pending"}))
            .collect::<Vec<_>>()
    )
}

#[test]
fn renders_three_items_with_markers_ids_and_progress() {
    let mut todo = TodoManager::new();
    let out = todo
        .update(&json!([
            {"id": "1", "text": "Plan", "status": "completed"},
            {"id": "2", "text": "Build", "status": "in_progress"},
            {"id": "3", "text": "Test", "status": "pending"},
        ]))
        .unwrap();
    assert_eq!(out, "[x] #1: Plan\n[>] #2: Build\n[ ] #3: Test\n\n(1/3 completed)");
    assert_eq!(out, todo.render());
}

#[test]
fn empty_list_renders_no_todos() {
    assert_eq!(TodoManager::new().render(), "No todos.");
    let mut todo = TodoManager::new();
    assert_eq!(todo.update(&json!([])).unwrap(), "No todos.");
}

#[test]
fn accepts_twenty_items() {
    let mut todo = TodoManager::new();
    todo.update(&n_items(20)).unwrap();
    assert_eq!(todo.items().len(), 20);
}

#[test]
fn rejects_twenty_one_items() {
    let mut todo = TodoManager::new();
    let err = todo.update(&n_items(21)).unwrap_err();
    assert_eq!(err, TodoError::TooMany);
    assert_eq!(err.to_string(), "Max 20 todos allowed");
}

#[test]
fn status_is_lower_cased() {
    let mut todo = TodoManager::new();
    todo.update(
        &json!([{"id": "1", "text": "a", "status": "PENDING"}, {"text": "b", "status": "In_Progress"}]),
    )
    .unwrap();
    assert_eq!(todo.items()[0].status, Status::Pending);
    assert_eq!(todo.items()[1].status, Status::InProgress);
}

#[test]
fn status_defaults_to_pending() {
    let mut todo = TodoManager::new();
    todo.update(&json!([{"id": "1", "text": "a"}, {"id": "2", "text": "b", "status": null}])).unwrap();
    assert!(todo.items().iter().all(|t| t.status == Status::Pending));
}

#[test]
fn text_is_trimmed() {
    let mut todo = TodoManager::new();
    todo.update(&json!([{"id": "1", "text": "  spaced  ", "status": "pending"}])).unwrap();
    assert_eq!(todo.items()[0].text, "spaced");
}

#[test]
fn missing_ids_become_their_one_based_position() {
    let mut todo = TodoManager::new();
    todo.update(&json!([{"text": "a"}, {"text": "b"}])).unwrap();
    assert_eq!(todo.items(), [item("1", "a", Status::Pending), item("2", "b", Status::Pending)]);
}

#[test]
fn numeric_id_becomes_its_text() {
    let mut todo = TodoManager::new();
    todo.update(&json!([{"id": 3, "text": "a", "status": "pending"}])).unwrap();
    assert_eq!(todo.items()[0].id, "3");
    assert_eq!(todo.render(), "[ ] #3: a\n\n(0/1 completed)");
}

#[test]
fn empty_text_is_rejected_naming_the_id() {
    let mut todo = TodoManager::new();
    let err = todo.update(&json!([{"id": "7", "text": "   ", "status": "pending"}])).unwrap_err();
    assert_eq!(err.to_string(), "Item 7: text required");
    let err = todo.update(&json!([{"status": "pending"}])).unwrap_err();
    assert_eq!(err.to_string(), "Item 1: text required");
}

#[test]
fn invalid_status_is_rejected_lower_cased() {
    let mut todo = TodoManager::new();
    let err = todo.update(&json!([{"id": "2", "text": "a", "status": "DONE"}])).unwrap_err();
    assert_eq!(err.to_string(), "Item 2: invalid status 'done'");
}

#[test]
fn text_is_checked_before_status() {
    let mut todo = TodoManager::new();
    let err = todo.update(&json!([{"id": "1", "text": "", "status": "bogus"}])).unwrap_err();
    assert_eq!(err.to_string(), "Item 1: text required");
}

#[test]
fn two_in_progress_are_rejected() {
    let mut todo = TodoManager::new();
    let err = todo
        .update(&json!([
            {"id": "1", "text": "a", "status": "in_progress"},
            {"id": "2", "text": "b", "status": "in_progress"},
        ]))
        .unwrap_err();
    assert_eq!(err.to_string(), "Only one task can be in_progress at a time");
}

#[test]
fn too_many_is_checked_before_items() {
    let mut todo = TodoManager::new();
    let items = json!((0..21).map(|_| json!({"text": ""})).collect::<Vec<_>>());
    assert_eq!(todo.update(&items).unwrap_err(), TodoError::TooMany);
}

#[test]
fn non_array_and_non_object_items_are_rejected_clearly() {
    let mut todo = TodoManager::new();
    assert_eq!(todo.update(&json!("[]")).unwrap_err().to_string(), "items must be an array");
    assert_eq!(todo.update(&json!(null)).unwrap_err().to_string(), "items must be an array");
    assert_eq!(
        todo.update(&json!([{"text": "a"}, 5])).unwrap_err().to_string(),
        "items[1] must be an object"
    );
}

#[test]
fn rejected_update_leaves_items_unchanged() {
    let mut todo = TodoManager::new();
    todo.update(&json!([{"id": "1", "text": "keep this", "status": "pending"}])).unwrap();
    let before = todo.clone();
    assert!(todo.update(&json!([{"id": "1", "text": "new"}, {"id": "2", "text": ""}])).is_err());
    assert_eq!(todo, before);
}

#[test]
fn tool_output_prefixes_errors() {
    let mut todo = TodoManager::new();
    assert_eq!(todo.tool_output(&n_items(21)), "Error: Max 20 todos allowed");
    assert_eq!(todo.tool_output(&json!([{"text": "a"}])), "[ ] #1: a\n\n(0/1 completed)");
}

#[test]
fn status_parses_and_spells_the_wire_names() {
    for s in Status::ALL {
        assert_eq!(Status::parse(s.as_str()), Some(s));
        assert_eq!(Status::parse(&s.as_str().to_uppercase()), Some(s));
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
    assert_eq!(Status::parse("done"), None);
}

#[test]
fn tool_name_and_description_are_the_course_strings() {
    assert_eq!(TODO_TOOL_NAME, "todo");
    assert_eq!(TODO_TOOL_DESCRIPTION, "Update task list. Track progress on multi-step tasks.");
}
