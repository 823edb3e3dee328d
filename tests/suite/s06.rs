//! End-to-end: the real `s06` binary (the s04 kernel and the `task` tool) against the loopback
//! Messages API server: the course's tests of COURSE §4.1 and the boundaries around them.

use std::fs;

use e2e::{MockServer, Reply, chapter, one_turn, reply, result_batches, run_with_stdin, stderr, stdout};
use serde_json::{Value, json};

const BASE: [&str; 5] = ["bash", "read_file", "write_file", "edit_file", "glob"];

/// The `content` of the first `tool_result` of the last request's last batch.
fn last_result(server: &MockServer) -> Value {
    let last = server.requests().pop().map(|r| r.body).unwrap_or_default();
    let batches = result_batches(&last);
    batches.last().and_then(|b| b.first()).cloned().unwrap_or_default()
}

fn task(id: &str, prompt: &str) -> Reply {
    reply::tool_uses(&[(id, "task", json!({"prompt": prompt}))])
}

#[test]
fn the_child_starts_fresh_with_the_five_base_tools_and_its_own_system() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("notes.txt"), "remember the milk").unwrap();
    let server = MockServer::start(vec![
        task("p1", "Read notes.txt and summarise it"),
        reply::tool_uses(&[("c1", "read_file", json!({"path": "notes.txt"}))]),
        reply::text("It says: remember the milk"),
        reply::text("Your notes say to remember the milk."),
    ]);
    let out = one_turn("s06", ws.path(), &server, "what do my notes say?");
    let requests = server.requests();
    let root = ws.path().canonicalize().unwrap();
    let env = "Environment: Unix-like: the bash tool runs the system shell.";
    assert_eq!(requests[0].tool_names(), [&BASE[..], &["task"]].concat());
    assert_eq!(
        requests[0].body["system"],
        format!(
            "You are a coding agent at {}. {env} Use task for focused exploration or a self-contained subtask.",
            root.display()
        )
    );
    // The child's first request: exactly the prompt, the five base tools, the child SYSTEM.
    assert_eq!(
        requests[1].body["messages"],
        json!([{"role": "user", "content": "Read notes.txt and summarise it"}])
    );
    assert_eq!(requests[1].tool_names(), BASE);
    assert_eq!(
        requests[1].body["system"],
        format!(
            "You are a coding agent at {}. {env} Complete the given task, then return a concise final answer.",
            root.display()
        )
    );
    assert_eq!(requests[1].body["max_tokens"], 8000);
    // Only the final text came back to the parent; none of the child's reading.
    assert_eq!(last_result(&server)["content"], "It says: remember the milk");
    let parent = serde_json::to_string(&requests[3].body["messages"]).unwrap();
    assert!(!parent.contains("c1"), "the child's tool call stays in the child: {parent}");
    let text = stdout(&out);
    assert!(text.contains("[Subagent started]"), "{text}");
    assert!(text.contains("  [sub] read_file: remember the milk"), "{text}");
    assert!(text.contains("[Subagent done: 4 messages, "), "{text}");
    assert!(text.contains("stayed in the child; 26 B returned]"), "{text}");
}

#[test]
fn a_childs_destructive_command_answered_no_is_refused_and_changes_nothing() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("keep.txt"), "precious").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("pwned.txt");
    let server = MockServer::start(vec![
        task("p1", "clean up"),
        reply::tool_uses(&[
            ("c1", "bash", json!({"command": "rm keep.txt"})),
            ("c2", "write_file", json!({"path": escape.display().to_string(), "content": "x"})),
        ]),
        reply::text("could not clean"),
        reply::text("The subagent was not allowed to delete anything."),
    ]);
    let out = chapter("s06", ws.path(), Some(&server.base_url()))
        .args(["--no", "-p", "clean up"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    let batches = result_batches(&server.requests()[2].body);
    assert_eq!(batches[0][0]["content"], "Permission denied by user");
    // The course's s06 test `test_subagent_file_tools_keep_the_kernel_permission_boundary`: a
    // child's write outside the workspace is asked about, and answered no, refused.
    assert_eq!(batches[0][1]["content"], "Permission denied by user");
    assert_eq!(fs::read_to_string(ws.path().join("keep.txt")).unwrap(), "precious");
    assert!(!escape.exists());
    // The parent's hooks ran in the child, and their lines say so: the child's prefix, and the
    // child's own count at its Stop (the two refused calls did not run). The parent's Stop line
    // is its own, unprefixed: the task call ran.
    let text = stdout(&out);
    assert!(text.contains("\n  [sub] [HOOK] bash(rm keep.txt)\n"), "{text}");
    assert!(text.contains("\n  [sub] [HOOK] Stop: session used 0 tool calls\n"), "{text}");
    assert!(text.contains("\n[HOOK] Stop: session used 1 tool call\n"), "{text}");
}

#[test]
fn an_empty_final_text_is_no_summary_after_one_call() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        task("p1", "say nothing"),
        Reply::Message(reply::message(vec![reply::text_block("")], "end_turn")),
        reply::text("ok"),
    ]);
    one_turn("s06", ws.path(), &server, "go");
    assert_eq!(server.requests().len(), 3, "one call in the child");
    assert_eq!(last_result(&server)["content"], "(no summary)");
}

#[test]
fn end_turn_with_a_tool_use_still_runs_the_tool() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("a.txt"), "alpha").unwrap();
    let mixed = reply::message(
        vec![reply::text_block(""), reply::tool_use_block("c1", "read_file", json!({"path": "a.txt"}))],
        "end_turn",
    );
    let server = MockServer::start(vec![
        task("p1", "read a.txt"),
        Reply::Message(mixed),
        reply::text("alpha it is"),
        reply::text("done"),
    ]);
    one_turn("s06", ws.path(), &server, "go");
    let batches = result_batches(&server.requests()[2].body);
    assert_eq!(batches[0][0]["content"], "alpha");
    assert_eq!(last_result(&server)["content"], "alpha it is");
}

#[test]
fn a_child_that_never_stops_is_cut_at_30_calls() {
    let ws = tempfile::tempdir().unwrap();
    let mut script = vec![task("p1", "loop")];
    script.extend((0..30).map(|i| reply::tool_uses(&[(&format!("c{i}"), "glob", json!({"pattern": "*"}))])));
    script.push(reply::text("the subagent gave up"));
    let server = MockServer::start(script);
    let out = one_turn("s06", ws.path(), &server, "go");
    assert_eq!(server.requests().len(), 32, "the parent's two and the child's thirty");
    assert_eq!(last_result(&server)["content"], "Subagent stopped after 30 turns without a final answer.");
    assert!(stdout(&out).contains("[Subagent stopped: 30 turns without a final answer"), "{}", stdout(&out));
}

#[test]
fn an_overloaded_child_is_retried_and_a_lasting_failure_is_the_tasks_error() {
    let ws = tempfile::tempdir().unwrap();
    let overloaded = || reply::error(529, "overloaded_error", "Overloaded");
    let server = MockServer::start(vec![
        task("p1", "first"),
        reply::error(500, "api_error", "Internal server error"),
        reply::text("first done"),
        task("p2", "second"),
        overloaded(),
        overloaded(),
        overloaded(),
        reply::text("The second subagent failed; I'll stop here."),
    ]);
    let out = chapter("s06", ws.path(), Some(&server.base_url()))
        .env("ANTHROPIC_MAX_RETRIES", "2")
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "the parent goes on: {}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    let requests = server.requests();
    let first = result_batches(&requests[3].body);
    assert_eq!(first[0][0]["content"], "first done", "a 500 in the child is retried");
    let second = result_batches(&requests[7].body);
    let failed = &second[1][0];
    assert_eq!(failed["is_error"], true);
    let text = failed["content"].as_str().unwrap_or_default();
    assert!(text.starts_with("Error: ") && text.contains("overloaded_error"), "{text}");
}

#[test]
fn two_tasks_in_one_reply_get_two_fresh_children_and_two_results_in_order() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("p1", "task", json!({"prompt": "one"})),
            ("p2", "task", json!({"prompt": "two"})),
        ]),
        reply::text("first child"),
        reply::text("second child"),
        reply::text("both done"),
    ]);
    one_turn("s06", ws.path(), &server, "go");
    let requests = server.requests();
    assert_eq!(requests[1].body["messages"], json!([{"role": "user", "content": "one"}]));
    assert_eq!(requests[2].body["messages"], json!([{"role": "user", "content": "two"}]));
    let batch = &result_batches(&requests[3].body)[0];
    let results: Vec<(&Value, &Value)> = batch.iter().map(|b| (&b["tool_use_id"], &b["content"])).collect();
    assert_eq!(results, [(&json!("p1"), &json!("first child")), (&json!("p2"), &json!("second child"))]);
}

#[test]
fn the_repl_shows_a_finished_childs_messages_and_its_tokens_apart() {
    let ws = tempfile::tempdir().unwrap();
    let server =
        MockServer::start(vec![task("p1", "look around"), reply::text("nothing here"), reply::text("empty")]);
    let out = run_with_stdin(
        chapter("s06", ws.path(), Some(&server.base_url())),
        "look\n/history task 1\n/history task 9\n/usage\n/history\nq\n",
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("subagent 1 of 1: look around\n2 messages, as the next request sends them:"),
        "{text}"
    );
    assert!(text.contains("[1] assistant\n    text \"nothing here\""), "{text}");
    assert!(stderr(&out).contains("error: /history task N takes N from 1 to 1"), "{}", stderr(&out));
    assert!(text.contains("this session (the parent): 2 requests"), "{text}");
    assert!(text.contains("its subagents: 1 request,"), "{text}");
    assert!(
        text.contains("tool_use p1 task {\"prompt\":\"look around\"}"),
        "/history shows the parent: {text}"
    );
}
