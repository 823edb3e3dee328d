//! End-to-end: the real `s04` binary (s03 plus hooks, the permission check and glob) against the
//! loopback Messages API server. The hooks themselves are checked for s04 and s05 together in
//! `hooks.rs`.

use std::fs;

use e2e::{MockServer, chapter, reply, result_batches, stderr, stdout};
use serde_json::json;

const REMINDER: &str = "<reminder>Update your todos.</reminder>";

#[test]
fn s03s_tools_and_prompt_plus_glob() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("hi")]);
    let out = chapter("s04", ws.path(), Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let body = &server.requests()[0].body;
    let names: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "glob", "todo"]);
    let root = ws.path().canonicalize().unwrap();
    assert_eq!(
        body["system"],
        format!(
            "You are a coding agent at {}.\n\
             Use the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done.\n\
             Prefer tools over prose.",
            root.display()
        )
    );
}

#[test]
fn the_nag_is_s03s_it_repeats_until_todo_is_called() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("a.py"), "").unwrap();
    let glob = |id: &str| reply::tool_uses(&[(id, "glob", json!({"pattern": "**/*.py"}))]);
    let plan = json!({"items": [{"id": "1", "text": "Look around", "status": "in_progress"}]});
    let server = MockServer::start(vec![
        glob("g1"),
        glob("g2"),
        glob("g3"),
        glob("g4"),
        reply::tool_uses(&[("t5", "todo", plan)]),
        glob("g6"),
        reply::text("done"),
    ]);
    let out = chapter("s04", ws.path(), Some(&server.base_url())).args(["-p", "look"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_tool_pairing();
    let batches = result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(batches.len(), 6);
    let reminded: Vec<usize> = batches
        .iter()
        .enumerate()
        .filter(|(_, b)| b.last() == Some(&json!({"type": "text", "text": REMINDER})))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(reminded, [3, 4], "rounds 3 and 4 end with the reminder; the todo call resets it");
    assert_eq!(batches[0][0]["content"], "a.py");
    assert_eq!(batches[4][0]["content"], "[>] #1: Look around\n\n(0/1 completed)");
    assert!(stdout(&out).contains("[HOOK] todo("), "todo calls go through the hooks too");
}

#[test]
fn the_demo_plans_with_todo_under_the_hooks_and_refactors_hello_py() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s04", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "[HOOK] UserPromptSubmit: working in ",
        "[HOOK] glob(**/*.py)\n> glob: **/*.py\nexample/hello.py",
        "> todo:\n[>] #1: Read example/hello.py",
        &format!("+ {REMINDER}"),
        "(4/4 completed)",
        "[HOOK] Stop: session used 14 tool calls",
        "def add(a: int, b: int) -> int:",
        "if __name__ == \"__main__\":",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("Error:") && !text.contains("todo_write"), "{text}");
}
