//! End-to-end: the real `s15` binary (every mechanism in one loop, with recovery) against the
//! loopback Messages API server. Each "done when" of the chapter is one test here: two 529s then
//! a success switch to `FALLBACK_MODEL_ID`; a `max_tokens` cut (with and without a `tool_use` in
//! it) raises the cap to 16000, then the model continues, and every request keeps the API's
//! rules; a prompt-too-long error compacts once and the request goes again; a finished background
//! command wakes the agent exactly once. Every turn that ends with an answer is followed by the
//! memory extraction call (course s09, kept in s15), answered `[]` here.

use std::fs;

use e2e::{
    MockServer, RecordedRequest, Reply, chapter, one_turn, reply, run_with_stdin, stderr, stdout, texts,
};
use serde_json::{Value, json};

/// The extraction call's answer: nothing worth keeping.
fn nothing_to_remember() -> Reply {
    reply::text("[]")
}

/// The names of the tools a request sent.
fn tool_names(request: &RecordedRequest) -> Vec<String> {
    let tools = request.body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// The request's SYSTEM prompt as text.
fn system(request: &RecordedRequest) -> String {
    match &request.body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// The requests of the agent's own loop: not the memory calls (extraction, recall), which have
/// no tools.
fn loop_requests(server: &MockServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|r| !tool_names(r).is_empty()).collect()
}

/// The course's s15 tools, in its order (COURSE-s10-s17 §6.3), without the teammates' seven.
const TOOLS: [&str; 19] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "todo_write",
    "task",
    "load_skill",
    "compact",
    "create_task",
    "update_task",
    "list_tasks",
    "get_task",
    "claim_task",
    "complete_task",
    "schedule_cron",
    "list_crons",
    "cancel_cron",
    "connect_mcp",
];

#[test]
fn the_first_request_sends_the_courses_tools_in_order_and_its_system_sections() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("Hello."), nothing_to_remember()]);
    one_turn("s15", ws.path(), &server, "hi");
    let requests = loop_requests(&server);
    assert_eq!(tool_names(&requests[0]), TOOLS);
    let system = system(&requests[0]);
    let sections: Vec<&str> = system.split("\n\n").collect();
    assert!(sections[0].starts_with("You are a coding agent. Act, don't explain. Environment: "), "{system}");
    assert_eq!(sections[4], format!("Working directory: {}", ws.path().canonicalize().unwrap().display()));
    assert!(sections[7].starts_with("Current time: 20"), "{system}");
    assert_eq!(
        sections[8],
        "Skills catalog:\n(no skills found)\nUse load_skill(name) when a skill is relevant."
    );
}

fn overloaded() -> Reply {
    reply::error(529, "overloaded_error", "Overloaded").with_header("retry-after", "0")
}

#[test]
fn two_overloaded_answers_then_a_success_switch_to_the_fallback_model() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        overloaded(),
        overloaded(),
        reply::text("Answered by the fallback."),
        nothing_to_remember(),
    ]);
    let out = chapter("s15", ws.path(), Some(&server.base_url()))
        .env("FALLBACK_MODEL_ID", "fallback-model")
        .args(["-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    let models: Vec<String> = loop_requests(&server)
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(models, ["mock-model", "mock-model", "fallback-model"]);
    assert!(stdout(&out).contains("Answered by the fallback."), "{}", stdout(&out));
}

#[test]
fn without_a_fallback_model_two_overloaded_answers_are_the_course_error_answer() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![overloaded(), overloaded(), overloaded()]);
    let out = chapter("s15", ws.path(), Some(&server.base_url())).args(["-p", "hello"]).output().unwrap();
    server.assert_done();
    let shown = stdout(&out);
    assert!(shown.contains("[Error] OverloadedError: "), "{shown}\n{}", stderr(&out));
}

/// An answer cut off at `max_tokens`: text, and with `call` a whole `tool_use` block too.
fn cut_off(text: &str, call: Option<(&str, &str, Value)>) -> Reply {
    let mut blocks = vec![reply::text_block(text)];
    if let Some((id, name, input)) = call {
        blocks.push(reply::tool_use_block(id, name, input));
    }
    Reply::Message(reply::message(blocks, "max_tokens"))
}

#[test]
fn a_cut_off_answer_raises_the_cap_to_16000_then_the_model_continues() {
    let ws = tempfile::tempdir().unwrap();
    let write = ("w1", "write_file", json!({"path": "notes.txt", "content": "cut"}));
    let server = MockServer::start(vec![
        cut_off("The notes begin", None),
        cut_off("Writing the notes now.", Some(write)),
        reply::tool_uses(&[("w2", "write_file", json!({"path": "notes.txt", "content": "short notes"}))]),
        reply::text("Wrote notes.txt."),
        nothing_to_remember(),
    ]);
    let out = one_turn("s15", ws.path(), &server, "write notes.txt");
    let requests = loop_requests(&server);
    let caps: Vec<&Value> = requests.iter().map(|r| &r.body["max_tokens"]).collect();
    assert_eq!(caps, [&json!(8000), &json!(16000), &json!(16000), &json!(8000)]);
    // The cut-off call never ran and never reached the history: the next request holds the text
    // it came with, then the course's continuation prompt.
    let messages = requests[2].body["messages"].as_array().cloned().unwrap_or_default();
    let sent = serde_json::to_string(&messages).unwrap();
    assert!(!sent.contains("\"w1\""), "{sent}");
    assert!(sent.contains("Writing the notes now."), "{sent}");
    let last = messages.last().cloned().unwrap_or(Value::Null);
    assert_eq!(texts(&last), ["Continue from the previous response. Do not repeat completed work."]);
    assert_eq!(fs::read_to_string(ws.path().join("notes.txt")).unwrap(), "short notes");
    assert!(stdout(&out).contains("Wrote notes.txt."));
}

#[test]
fn a_prompt_too_long_error_compacts_once_and_sends_the_request_again() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::error(400, "invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum"),
        reply::text("The user asked for the release plan; nothing was done yet."),
        reply::text("Here is the plan."),
        nothing_to_remember(),
    ]);
    let out = one_turn("s15", ws.path(), &server, "plan the release");
    let requests = server.requests();
    // The summary call, then the same request once more, on the compacted history.
    assert!(tool_names(&requests[1]).is_empty(), "the summary call has no tools");
    let retried = serde_json::to_string(&requests[2].body["messages"]).unwrap();
    assert!(retried.contains("[Reactive compact]"), "{retried}");
    assert!(retried.contains("plan the release"), "the request stays: {retried}");
    let transcripts = fs::read_dir(ws.path().join(".transcripts")).unwrap().count();
    assert_eq!(transcripts, 1, "the history was saved before it was summarised");
    assert!(stdout(&out).contains("Here is the plan."));
    assert!(stderr(&out).contains("[reactive compact]") || stdout(&out).contains("[reactive compact]"));
}

#[test]
fn a_finished_background_command_wakes_the_agent_exactly_once() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("b1", "bash", json!({"command": "echo built-ok", "run_in_background": true}))]),
        reply::text("It runs in the background."),
        nothing_to_remember(),
        // The woken turn.
        reply::text("The build said built-ok."),
        nothing_to_remember(),
    ]);
    let out = one_turn("s15", ws.path(), &server, "build it in the background");
    let requests = loop_requests(&server);
    assert_eq!(requests.len(), 3, "the prompt's two requests and the woken turn's one");
    let first_result = serde_json::to_string(&requests[1].body["messages"]).unwrap();
    assert!(
        first_result.contains("[Background task bg_0001 started] Result will arrive as a task_notification."),
        "{first_result}"
    );
    let notified: Vec<usize> = server
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
            messages.last().is_some_and(|m| texts(m).iter().any(|t| t.contains("<task_notification>")))
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(notified.len(), 1, "one request ends with the notification: {notified:?}");
    let woken = serde_json::to_string(&requests[2].body["messages"]).unwrap();
    assert!(woken.contains("<task_id>bg_0001</task_id>"), "{woken}");
    assert!(woken.contains("<summary>built-ok</summary>"), "{woken}");
    assert!(stdout(&out).contains("The build said built-ok."));
}

#[test]
fn status_shows_every_mechanism_on_one_screen() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![]);
    let out = run_with_stdin(chapter("s15", ws.path(), Some(&server.base_url())), "/status\nq\n");
    let shown = stdout(&out);
    for heading in [
        "todo list (/todos)",
        "tasks (/tasks)",
        "background commands (/bg)",
        "cron jobs (/cron)",
        "MCP servers (/mcp)",
        "memory (/memory)",
        "context (/context)",
    ] {
        assert!(shown.contains(heading), "{heading} missing: {shown}\n{}", stderr(&out));
    }
}

#[test]
fn a_durable_job_file_written_by_s12_is_read() {
    let ws = tempfile::tempdir().unwrap();
    let job = json!([{"id": "cron_1a2b3c4d", "cron": "0 9 * * 1-5", "prompt": "run the tests", "recurring": true,
        "durable": true, "pending_delivery": false, "last_fired": null}]);
    fs::write(ws.path().join(".scheduled_tasks.json"), serde_json::to_string_pretty(&job).unwrap()).unwrap();
    let server = MockServer::start(vec![]);
    let out = run_with_stdin(chapter("s15", ws.path(), Some(&server.base_url())), "/cron\nq\n");
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert!(shown.contains("cron_1a2b3c4d"), "{shown}");
    assert!(shown.contains("run the tests"), "{shown}");
}

#[test]
fn the_demo_runs_offline_and_at_least_five_mechanisms_announce_themselves() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s15", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    let lines = [
        "## Current Tasks",
        "[Subagent",
        "[create]",
        "[background] started bg_0001",
        "[Memory: stored 1 record]",
        "The background test run finished: 3 passed.",
    ];
    for line in lines {
        assert!(shown.contains(line), "{line:?} missing:\n{shown}");
    }
}
