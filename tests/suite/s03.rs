//! End-to-end: the real `s03` binary and its nag, against the loopback Messages API server.

use std::fs;

use e2e::{MockServer, chapter, reply, result_batches, stderr, stdout};
use serde_json::{Value, json};

const REMINDER: &str = "<reminder>Update your todos.</reminder>";

fn bash(id: &str) -> mock_api::Reply {
    reply::tool_uses(&[(id, "bash", json!({"command": "echo working"}))])
}

fn is_reminder(block: &Value) -> bool {
    block == &json!({"type": "text", "text": REMINDER})
}

#[test]
fn reminder_after_three_quiet_rounds_resets_on_todo_and_is_always_last() {
    let ws = tempfile::tempdir().unwrap();
    let plan = json!({"items": [{"id": "1", "text": "Plan", "status": "in_progress"}]});
    let server = MockServer::start(vec![
        bash("t1"),
        bash("t2"),
        bash("t3"),
        reply::tool_uses(&[("t4", "todo", plan)]),
        bash("t5"),
        bash("t6"),
        bash("t7"),
        reply::text("finished"),
    ]);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "work"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_tool_pairing();

    let last = server.requests().pop().unwrap();
    let batches = result_batches(&last.body);
    assert_eq!(batches.len(), 7);
    let carrying: Vec<usize> =
        batches.iter().enumerate().filter(|(_, b)| b.iter().any(is_reminder)).map(|(i, _)| i + 1).collect();
    assert_eq!(carrying, vec![3, 7], "rounds whose results carry the reminder");
    for i in [2, 6] {
        assert!(is_reminder(batches[i].last().unwrap()), "the reminder is the last block of batch {}", i + 1);
        assert_eq!(batches[i].iter().filter(|b| is_reminder(b)).count(), 1);
    }
    // The todo round's result is the render.
    assert_eq!(batches[3][0]["content"], "[>] #1: Plan\n\n(0/1 completed)");
    assert!(stdout(&out).contains(&format!("+ {REMINDER}")), "the user sees the reminder");
}

#[test]
fn s02_tools_plus_todo_in_order() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("hi")]);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let body = &server.requests()[0].body;
    let names: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "todo"]);
    let system = body["system"].as_str().unwrap();
    assert!(system.ends_with(
        "\nUse the todo tool to plan multi-step tasks. Mark in_progress before starting, completed when done.\nPrefer tools over prose."
    ));
}

#[test]
fn a_rejected_todo_update_is_an_error_result_and_keeps_the_plan() {
    let ws = tempfile::tempdir().unwrap();
    let good = json!({"items": [{"text": "keep this"}]});
    let bad =
        json!({"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]});
    let server = MockServer::start(vec![
        reply::tool_uses(&[("t1", "todo", good)]),
        reply::tool_uses(&[("t2", "todo", bad)]),
        reply::tool_uses(&[("t3", "todo", json!({"items": []}))]),
        reply::text("ok"),
    ]);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "plan"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let last = server.requests().pop().unwrap();
    let batches = result_batches(&last.body);
    assert_eq!(batches[0][0]["content"], "[ ] #1: keep this\n\n(0/1 completed)");
    assert_eq!(batches[1][0]["content"], "Error: Only one task can be in_progress at a time");
    assert_eq!(batches[1][0]["is_error"], true);
    assert_eq!(batches[2][0]["content"], "No todos.");
}

#[test]
fn the_demo_plans_is_reminded_and_refactors_hello_py() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s03", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "[>] #1: Read hello.py",
        "[x] #1: Read hello.py\n[>] #2: Add type hints",
        "(4/4 completed)",
        "+ <reminder>Update your todos.</reminder>",
        "def greet(name: str) -> str:",
        "if __name__ == \"__main__\":",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("Error:"), "every recorded tool call succeeds:\n{text}");
}

#[test]
fn slash_todos_shows_the_list_the_model_wrote() {
    let ws = tempfile::tempdir().unwrap();
    let plan = json!({"items": [
        {"id": "1", "text": "Read hello.py", "status": "completed"},
        {"id": "2", "text": "Add type hints", "status": "in_progress"},
    ]});
    let server = MockServer::start(vec![reply::tool_uses(&[("t1", "todo", plan)]), reply::text("planned")]);
    let cmd = chapter("s03", ws.path(), Some(&server.base_url()));
    let out = e2e::run_with_stdin(cmd, "/todos\nplan it\n/todos\nq\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let text = stdout(&out);
    let list = "[x] #1: Read hello.py\n[>] #2: Add type hints\n\n(1/2 completed)";
    let (before, after) = text.split_once("planned").expect("the answer");
    assert!(before.contains("No todos."), "before the plan: {before}");
    assert!(after.contains(list), "/todos after the plan: {after}");
}

#[test]
fn example_runs_live_in_a_fresh_seeded_folder_and_leaves_the_current_one_alone() {
    let repo = tempfile::tempdir().unwrap();
    fs::write(repo.path().join("hello.py"), "the repository's own file\n").unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("r1", "read_file", json!({"path": "hello.py"}))]),
        reply::tool_uses(&[(
            "e1",
            "edit_file",
            json!({"path": "hello.py", "old_text": "def greet(name):", "new_text": "def greet(name: str) -> str:"}),
        )]),
        reply::text("Refactored."),
    ]);
    let out = chapter("s03", repo.path(), Some(&server.base_url()))
        .args(["--example", "-p", "Refactor the file hello.py: add type hints"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let err = stderr(&out);
    let folder = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("[example] a fresh workspace seeded with the chapter's example files (hello.py): ")
        })
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| panic!("no [example] line naming the folder: {err}"));
    let seeded = include_str!("../../chapters/s03/demo/hello.py");

    let requests = server.requests();
    let batches = result_batches(&requests[2].body);
    assert_eq!(batches[0][0]["content"], seeded.trim_end(), "the model read the seeded example");
    let system = requests[0].body["system"].as_str().unwrap();
    assert!(system.contains(&folder.canonicalize().unwrap().display().to_string()), "{system}");
    assert_eq!(
        fs::read_to_string(folder.join("hello.py")).unwrap(),
        seeded.replace("def greet(name):", "def greet(name: str) -> str:"),
        "the edit landed in the example folder, which is kept"
    );
    assert_eq!(fs::read_to_string(repo.path().join("hello.py")).unwrap(), "the repository's own file\n");
    assert_eq!(fs::read_dir(repo.path()).unwrap().count(), 1, "nothing new in the current folder");
    fs::remove_dir_all(&folder).unwrap();
}

#[test]
fn example_leaves_no_folder_behind_when_start_up_fails() {
    let repo = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = chapter("s03", repo.path(), None)
        .env("TMPDIR", tmp.path())
        .args(["--example", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("MODEL_ID"), "{}", stderr(&out));
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "the seeded folder was removed");
}
