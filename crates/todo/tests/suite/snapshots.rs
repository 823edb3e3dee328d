//! Snapshots of everything a person or the model reads: renders, the terminal display, tool schemas.

use serde_json::json;
use todo::todo::{TodoManager, todo_tool_schema};
use todo::todo_write::{TodoWriteManager, todo_write_schema};

#[test]
fn s03_render() {
    let mut todo = TodoManager::new();
    todo.update(&json!([
        {"id": "1", "text": "Plan", "status": "completed"},
        {"id": "2", "text": "Build", "status": "in_progress"},
        {"id": "3", "text": "Test", "status": "pending"},
    ]))
    .unwrap();
    insta::assert_snapshot!(todo.render());
}

#[test]
fn s05_render() {
    let mut todo = TodoWriteManager::new();
    todo.update(&json!([
        {"content": "inspect repo", "status": "completed"},
        {"content": "write tests", "status": "in_progress"},
    ]))
    .unwrap();
    insta::assert_snapshot!(todo.render());
}

#[test]
fn s05_display() {
    let mut todo = TodoWriteManager::new();
    todo.update(&json!("[{'content': 'inspect repo', 'status': 'completed'}, {'content': 'write tests', 'status': 'in_progress'}]"))
        .unwrap();
    insta::assert_snapshot!(todo.display());
}

#[test]
fn todo_schema() {
    insta::assert_json_snapshot!(todo_tool_schema());
}

#[test]
fn todo_write_schema_snapshot() {
    insta::assert_json_snapshot!(todo_write_schema());
}
