//! s11 end to end: `bash` with `run_in_background`, against the loopback Messages API. The
//! course's tests (`test_background_tasks.py`, the background ones of
//! `test_agent_teams_runtime.py`) by name, driven through the binary, plus the exit paths: every
//! background command and the child it started end with the harness.
//!
//! No test waits on a clock: a command that must still be running waits for a file the test
//! creates, and a result the next request must carry is first seen finished in `/bg`.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use agent_core::test_util::Proc;
use e2e::{
    MockServer, chapter, exits, one_turn, pty_chapter, reply, result_batches, signal, stdout, texts,
    wait_until,
};
use rustix::process::Signal;
use serde_json::{Value, json};

const PROMPT: &str = "s11 >> ";

/// The placeholder the course returns for a started command (§2.3).
fn placeholder(id: &str) -> String {
    format!("[Background task {id} started] The result will be collected on a later turn.")
}

/// The `content` of the first `tool_result` of request `i`.
fn first_result(server: &MockServer, i: usize) -> Value {
    result_batches(&server.requests()[i].body)[0][0]["content"].clone()
}

/// The messages of request `i`.
fn messages(server: &MockServer, i: usize) -> Vec<Value> {
    server.requests()[i].body["messages"].as_array().cloned().unwrap_or_default()
}

/// How many `<task_notification>` blocks request `i` holds, over all its messages.
fn notifications(server: &MockServer, i: usize) -> usize {
    messages(server, i).iter().flat_map(texts).filter(|t| t.starts_with("<task_notification>")).count()
}

/// Starts `command` in the background in one REPL turn, waits until `/bg` shows it `state`, then
/// sends a second prompt, so the second turn's first request is the first one after it finished.
/// Returns the server (four requests: start, answer, second prompt, …).
fn start_then_ask_again(command: &str, state: &str, ws: &Path) -> MockServer {
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_bg1", "bash", json!({"command": command, "run_in_background": true}))]),
        reply::text("started it"),
        reply::text("noted the result"),
        reply::text("nothing new"),
    ]);
    let mut s11 = pty_chapter("s11", ws, &server.base_url());
    s11.exp_string(PROMPT).unwrap();
    s11.send_line("start it").unwrap();
    s11.exp_string("[background] started bg_0001: ").unwrap();
    s11.exp_string("started it").unwrap();
    s11.exp_string(PROMPT).unwrap();
    // Not a timed wait: `/bg` is asked until it shows the end, each time a prompt comes back.
    loop {
        s11.send_line("/bg").unwrap();
        let (shown, _) = s11.exp_string(PROMPT).map(|s| (s, ())).unwrap();
        if shown.contains(&format!("bg_0001  {state}")) {
            assert!(shown.contains(command), "/bg shows the command: {shown}");
            break;
        }
        assert!(shown.contains("bg_0001  running"), "{shown}");
    }
    s11.send_line("what happened?").unwrap();
    s11.exp_string(&format!("[background] collected bg_0001: {state}")).unwrap();
    s11.exp_string("noted the result").unwrap();
    s11.exp_string(PROMPT).unwrap();
    s11.send_line("anything else?").unwrap();
    s11.exp_string("nothing new").unwrap();
    s11.exp_string(PROMPT).unwrap();
    s11.send_line("q").unwrap();
    s11.exp_eof().unwrap();
    server.assert_done();
    server.assert_api_rules();
    server
}

#[test]
fn test_s11_keeps_the_s04_kernel_and_adds_one_bash_option() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("hello")]);
    one_turn("s11", ws.path(), &server, "hi");
    let body = &server.requests()[0].body;
    let names: Vec<&str> =
        body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "glob"]);
    assert_eq!(
        body["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {"command": {"type": "string"}, "run_in_background": {"type": "boolean"}}, "required": ["command"]})
    );
    assert_eq!(body["tools"][0]["description"], "Run a shell command.");
    let system = body["system"].to_string();
    assert!(system.contains("Set run_in_background to true only for independent Bash commands."), "{system}");
}

#[test]
fn test_background_execution_requires_an_explicit_bash_flag() {
    let ws = tempfile::tempdir().unwrap();
    // `"true"` and `1` are not JSON true: both run in the foreground and return their output.
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("toolu_f1", "bash", json!({"command": "echo string-flag", "run_in_background": "true"})),
            ("toolu_f2", "bash", json!({"command": "echo number-flag", "run_in_background": 1})),
            ("toolu_f3", "bash", json!({"command": "echo no-flag"})),
        ]),
        reply::text("ran"),
    ]);
    let out = one_turn("s11", ws.path(), &server, "run them");
    let batch = &result_batches(&server.requests()[1].body)[0];
    let contents: Vec<&Value> = batch.iter().map(|r| &r["content"]).collect();
    assert_eq!(contents, [&json!("string-flag"), &json!("number-flag"), &json!("no-flag")]);
    assert!(!stdout(&out).contains("[background]"), "{}", stdout(&out));
}

#[test]
fn test_background_bash_passes_permission_before_dispatch() {
    let ws = tempfile::tempdir().unwrap();
    let command = "rm -rf /tmp/example; touch started";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_p1", "bash", json!({"command": command, "run_in_background": true}))]),
        reply::text("refused"),
    ]);
    let out = one_turn("s11", ws.path(), &server, "clean up");
    let result = first_result(&server, 1);
    assert!(result.as_str().is_some_and(|s| s.contains("Permission denied")), "{result}");
    let text = stdout(&out);
    assert!(!text.contains("[background] started"), "nothing started: {text}");
    assert!(!ws.path().join("started").exists(), "the command never ran");
}

#[test]
fn test_completed_result_is_collected_once_before_a_later_llm_call() {
    let ws = tempfile::tempdir().unwrap();
    let server = start_then_ask_again("echo ready", "completed", ws.path());
    assert_eq!(first_result(&server, 1), json!(placeholder("bg_0001")));
    // Request 2 (the second prompt) carries the notification, folded into the prompt's message.
    let msgs = messages(&server, 2);
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        texts(last),
        [
            "what happened?".to_owned(),
            "<task_notification>\n  <task_id>bg_0001</task_id>\n  <status>completed</status>\n  <command>echo ready</command>\n  <summary>ready</summary>\n</task_notification>".to_owned()
        ]
    );
    // Collected once: the next request repeats the history, with no second notification.
    assert_eq!(notifications(&server, 2), 1);
    assert_eq!(notifications(&server, 3), 1);
}

#[test]
fn test_background_dispatch_is_bash_only_and_reports_failures() {
    let ws = tempfile::tempdir().unwrap();
    let server = start_then_ask_again("echo broken >&2; exit 7", "failed", ws.path());
    let note = texts(messages(&server, 2).last().unwrap()).pop().unwrap();
    assert!(note.contains("<status>failed</status>"), "{note}");
    assert!(note.contains("<summary>Error: command exited with status 7\nbroken</summary>"), "{note}");
}

/// A foreground command that exits non-zero is reported the course's s11 way, as an error.
#[test]
fn a_foreground_non_zero_exit_is_an_error_with_its_status() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_x1", "bash", json!({"command": "echo half; exit 3"}))]),
        reply::text("it failed"),
    ]);
    one_turn("s11", ws.path(), &server, "run it");
    let batch = &result_batches(&server.requests()[1].body)[0];
    assert_eq!(batch[0]["content"], "Error: command exited with status 3\nhalf");
    assert_eq!(batch[0]["is_error"], true);
}

#[test]
fn test_shell_completion_terminates_children_in_the_same_process_group() {
    let ws = tempfile::tempdir().unwrap();
    let command = "nohup sh -c 'while [ ! -e go ]; do sleep 0.05; done; printf late > marker' >/dev/null 2>&1 & echo $! > child.pid";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_n1", "bash", json!({"command": command}))]),
        reply::text("done"),
    ]);
    let mut cmd = chapter("s11", ws.path(), Some(&server.base_url()));
    // The redirections are asked about; the approval is not what is tested here.
    let out = cmd.args(["--yes", "-p", "start it"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result = first_result(&server, 1);
    assert!(!result.as_str().unwrap_or_default().starts_with("Error:"), "exit 0: {result}");
    let child = Proc::read(&ws.path().join("child.pid")).unwrap();
    assert!(wait_until(|| !child.alive()), "{child:?} outlived its shell");
    std::fs::write(ws.path().join("go"), "").unwrap();
    assert!(!ws.path().join("marker").exists());
}

/// Whether `file` in `ws` holds a pid yet.
fn has_pid(ws: &Path, file: &str) -> bool {
    std::fs::read_to_string(ws.join(file)).is_ok_and(|t| !t.trim().is_empty())
}

#[test]
fn test_sigterm_stops_active_shell_process_groups() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let command = |n: u32| {
        format!(
            "(while [ ! -e go ]; do sleep 0.05; done; echo late > late{n}.txt) & echo $! > c{n}.tmp; \
             mv c{n}.tmp child{n}.pid; echo $$ > s{n}.tmp; mv s{n}.tmp sh{n}.pid; wait"
        )
    };
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("toolu_t1", "bash", json!({"command": command(1), "run_in_background": true})),
            ("toolu_t2", "bash", json!({"command": command(2), "run_in_background": true})),
        ]),
        reply::text("both run"),
    ]);
    let mut child = chapter("s11", ws, Some(&server.base_url()))
        .arg("--yes")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"start both\n").unwrap();
    let files = ["sh1.pid", "child1.pid", "sh2.pid", "child2.pid"];
    assert!(wait_until(|| files.iter().all(|f| has_pid(ws, f))), "never started");
    assert!(wait_until(|| server.request_count() == 2), "the turn ended");
    let procs: Vec<Proc> = files.iter().map(|f| Proc::read(&ws.join(f)).unwrap()).collect();
    assert!(procs.iter().all(Proc::alive), "{procs:?} run before SIGTERM");

    signal(&child, Signal::TERM);
    let status = exits(&mut child, "SIGTERM");
    assert_eq!(status.code(), Some(143));
    for p in &procs {
        assert!(wait_until(|| !p.alive()), "{p:?} outlived the harness");
    }
    std::fs::write(ws.join("go"), "").unwrap();
    assert!(!ws.join("late1.txt").exists() && !ws.join("late2.txt").exists(), "a child wrote after the exit");
    drop(stdin);
    server.assert_api_rules();
}

/// The offline demo: a slow command started in the background, a file read meanwhile, the
/// result collected before a later request.
#[test]
fn the_demo_collects_the_background_result_on_a_later_request() {
    let cwd = tempfile::tempdir().unwrap();
    let out = chapter("s11", cwd.path(), None).arg("--demo").output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let started = text.find("[background] started bg_0001: sh run_tests.sh").expect(&text);
    let read = text.find("> read_file: README.md").expect(&text);
    let collected = text.find("[background] collected bg_0001: completed").expect(&text);
    assert!(started < read && read < collected, "{text}");
}

/// A command that finishes during a tool round: its notification joins that round's user
/// message, after the `tool_result` (never a second user message, never text first). The
/// foreground command releases the background one and returns only once the harness has reaped
/// it (its `/proc` entry is gone), so the next request is the first after its end.
#[cfg(target_os = "linux")]
#[test]
fn a_notification_follows_the_tool_results_of_the_round_it_finished_in() {
    let ws = tempfile::tempdir().unwrap();
    let background =
        "echo $$ > bg.tmp; mv bg.tmp bg.pid; while [ ! -e go ]; do sleep 0.05; done; echo finished";
    let foreground = "while [ ! -s bg.pid ]; do sleep 0.05; done; touch go; \
                      while [ -e /proc/$(cat bg.pid) ]; do sleep 0.05; done; echo waited";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_r1", "bash", json!({"command": background, "run_in_background": true}))]),
        reply::tool_uses(&[("toolu_r2", "bash", json!({"command": foreground}))]),
        reply::text("both done"),
    ]);
    let out =
        chapter("s11", ws.path(), Some(&server.base_url())).args(["--yes", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    server.assert_done();
    server.assert_api_rules();
    let msgs = messages(&server, 2);
    let last = msgs.last().unwrap();
    let kinds: Vec<&str> =
        last["content"].as_array().unwrap().iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(kinds, ["tool_result", "text"]);
    assert_eq!(last["content"][0]["content"], "waited");
    let note = last["content"][1]["text"].as_str().unwrap();
    assert!(
        note.contains("<status>completed</status>") && note.contains("<summary>finished</summary>"),
        "{note}"
    );
    assert_eq!(
        msgs.iter().filter(|m| m["role"] == "user").count(),
        3,
        "the prompt and two rounds of results"
    );
}

#[test]
fn test_s11_code_is_ascii() {
    let found = e2e::non_ascii_in_lesson("s11");
    assert!(found.is_empty(), "chapters/s11/src/main.rs is not ASCII: {found:?}");
}
