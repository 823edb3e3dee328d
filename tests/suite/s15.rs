//! End-to-end: the real `s15` binary (every mechanism in one loop, with recovery) against the
//! loopback Messages API server. Each "done when" of the chapter is one test here: two 529s then
//! a success switch to `FALLBACK_MODEL_ID`; a `max_tokens` cut (with and without a `tool_use` in
//! it) raises the cap to 16000, then the model continues, and every request keeps the API's
//! rules; a prompt-too-long error compacts once and the request goes again; a finished background
//! command wakes the agent exactly once. Every turn that ends with an answer is followed by the
//! memory extraction call (course s09, kept in s15), answered `[]` here.

use std::fs;

use e2e::{
    MockServer, RecordedRequest, Reply, chapter, one_turn, one_turn_of, reply, run_with_stdin, stderr,
    stdout, system_text, texts, tool_names,
};
use serde_json::{Value, json};

/// The extraction call's answer: nothing worth keeping.
fn nothing_to_remember() -> Reply {
    reply::text("[]")
}

/// The requests of the agent's own loop: not the memory calls (extraction, recall), which have
/// no tools.
fn loop_requests(server: &MockServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|r| !tool_names(r).is_empty()).collect()
}

/// The course's s15 tools, in its order (COURSE-s10-s17 §6.3): its 26 built-ins.
const TOOLS: &str = "bash read_file write_file edit_file glob todo_write task load_skill compact create_task \
    update_task list_tasks get_task claim_task complete_task schedule_cron list_crons cancel_cron spawn_teammate \
    list_teammates send_message request_shutdown request_plan review_plan create_worktree connect_mcp";

#[test]
fn the_first_request_sends_the_courses_tools_in_order_and_its_system_sections() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("Hello."), nothing_to_remember()]);
    one_turn("s15", ws.path(), &server, "hi");
    let requests = loop_requests(&server);
    assert_eq!(tool_names(&requests[0]), TOOLS.split_whitespace().collect::<Vec<_>>());
    let system = system_text(&requests[0]);
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
    // The fallback takes over once the client's own retries of the overloaded answer are spent:
    // with one retry, the course's two 529s.
    let mut fallback = chapter("s15", ws.path(), Some(&server.base_url()));
    fallback.env("FALLBACK_MODEL_ID", "fallback-model").env("ANTHROPIC_MAX_RETRIES", "1");
    let out = one_turn_of(fallback, &server, "hello");
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
    let server = MockServer::start(vec![overloaded(), overloaded()]);
    let out = chapter("s15", ws.path(), Some(&server.base_url()))
        .env("ANTHROPIC_MAX_RETRIES", "1")
        .args(["-p", "hello"])
        .output()
        .unwrap();
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
    // The Messages API's own words for a prompt over the model's context window.
    let too_long =
        reply::error(400, "invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum");
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        too_long,
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
fn test_s15_completed_background_task_wakes_the_agent_once() {
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
    // The loop's requests only: the extraction call after the woken turn quotes the dialogue.
    let notified: Vec<usize> = requests
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
    // The prompt cache keeps paying: the two requests of the prompt's turn send the same SYSTEM.
    assert_eq!(system_text(&requests[0]), system_text(&requests[1]));
}

#[test]
fn a_woken_turn_is_refused_with_the_courses_text_where_it_would_ask() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("old.log"), "x").unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("b1", "bash", json!({"command": "echo done", "run_in_background": true}))]),
        reply::text("Started."),
        nothing_to_remember(),
        // The woken turn tries what the permission rule would ask about: no one is there.
        reply::tool_uses(&[("r1", "bash", json!({"command": "rm old.log"}))]),
        reply::text("Not allowed without you."),
        nothing_to_remember(),
    ]);
    one_turn("s15", ws.path(), &server, "start it");
    let requests = loop_requests(&server);
    let refused = serde_json::to_string(&requests[3].body["messages"]).unwrap();
    assert!(
        refused.contains(
            "Permission denied: interactive shell approval is unavailable during an asynchronous turn"
        ),
        "{refused}"
    );
    assert!(ws.path().join("old.log").exists(), "nothing was removed");
}

#[test]
fn test_integrated_harness_reuses_memory_recall_and_extraction() {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join(".memory")).unwrap();
    fs::write(
        ws.path().join(".memory/test-layout.md"),
        "---\nname: test-layout\ndescription: Tests live in tests/\ntype: project\n---\nTests live in tests/, one test_MODULE.py per module.\n",
    )
    .unwrap();
    let server = MockServer::start(vec![
        reply::text("[0]"),
        reply::text("Tests go in tests/test_greet.py."),
        nothing_to_remember(),
    ]);
    one_turn("s15", ws.path(), &server, "where do the tests for greet.py go?");
    let requests = server.requests();
    // Recall (a tool-free call), the turn's request, then extraction (tool-free).
    let kinds: Vec<bool> = requests.iter().map(|r| tool_names(r).is_empty()).collect();
    assert_eq!(kinds, [true, false, true]);
    let system = system_text(&requests[1]);
    assert!(system.contains("\n\nMemory catalog:\n"), "{system}");
    assert!(system.contains("\n\nRelevant memory records:\n"), "{system}");
    assert!(system.contains("Tests live in tests/, one test_MODULE.py per module."), "{system}");
}

/// What the REPL shows, on stdout and stderr, for `lines` typed in `ws`, with no model call.
fn typed(ws: &std::path::Path, lines: &str) -> String {
    let server = MockServer::start(vec![]);
    let out = run_with_stdin(chapter("s15", ws, Some(&server.base_url())), lines);
    format!("{}{}", stdout(&out), stderr(&out))
}

#[test]
fn status_shows_every_mechanism_on_one_screen() {
    let ws = tempfile::tempdir().unwrap();
    let shown = typed(ws.path(), "/status\nq\n");
    for heading in [
        "todo list (/todos)",
        "tasks (/tasks)",
        "background commands (/bg)",
        "cron jobs (/cron)",
        "MCP servers (/mcp)",
        "memory (/memory)",
        "context (/context)",
    ] {
        assert!(shown.contains(heading), "{heading} missing: {shown}");
    }
}

#[test]
fn a_durable_job_file_written_by_s12_is_read() {
    let ws = tempfile::tempdir().unwrap();
    let job = json!([{"id": "cron_1a2b3c4d", "cron": "0 9 * * 1-5", "prompt": "run the tests", "recurring": true,
        "durable": true, "pending_delivery": false, "last_fired": null}]);
    fs::write(ws.path().join(".scheduled_tasks.json"), serde_json::to_string_pretty(&job).unwrap()).unwrap();
    let shown = typed(ws.path(), "/cron\nq\n");
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

/// The first task id (`task_` and 8 hex digits) in `text`.
fn first_task_id(text: &str) -> Option<String> {
    text.match_indices("task_").map(|(at, _)| &text[at..]).find_map(|rest| {
        let id = rest.get(..13)?;
        id[5..].bytes().all(|b| b.is_ascii_hexdigit()).then(|| id.to_owned())
    })
}

/// The model's side of a session with one teammate, by who asks: the Lead creates a task, spawns
/// `alice` on it, ends its turn, and answers her `[Team events]`; `alice` (her SYSTEM names her)
/// writes `hello.txt`, completes the task and reports; the memory calls (no tools) keep nothing.
fn team_reply(request: &RecordedRequest) -> Reply {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let sent = serde_json::to_string(&messages).unwrap_or_default();
    let (results, task) = (sent.matches("tool_result").count(), first_task_id(&sent).unwrap_or_default());
    if system_text(request).starts_with("You are 'alice'") {
        return match results {
            0 => reply::tool_uses(&[("a1", "write_file", json!({"path": "hello.txt", "content": "hi"}))]),
            1 => reply::tool_uses(&[("a2", "complete_task", json!({"task_id": task}))]),
            _ => reply::text("Wrote hello.txt."),
        };
    }
    if tool_names(request).is_empty() {
        return nothing_to_remember();
    }
    let last = messages.last().map(texts).unwrap_or_default().join("\n");
    if last.contains("[Team events]") {
        return reply::text("Alice reported: hello.txt is written.");
    }
    match results {
        0 => reply::tool_uses(&[("c1", "create_task", json!({"subject": "Write hello.txt"}))]),
        1 => {
            let spawn = json!({"name": "alice", "role": "writer", "prompt": "Write hello.txt saying hi.", "task_id": task});
            reply::tool_uses(&[("s1", "spawn_teammate", spawn)])
        }
        _ => reply::text("Alice is on it."),
    }
}

#[test]
fn a_teammate_spawned_by_the_lead_works_in_its_own_loop_and_its_report_wakes_the_lead() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start_fn(team_reply);
    let out =
        one_turn("s15", ws.path(), &server, "Ask a teammate to write hello.txt. We agreed on the team.");
    let written = fs::read_to_string(ws.path().join("hello.txt"));
    let shown = format!("{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(written.ok().as_deref(), Some("hi"), "{shown}");
    let requests = server.requests();
    let alice = requests.iter().find(|r| system_text(r).starts_with("You are 'alice'")).expect("alice asked");
    // s15's teammate prompt, not s13's.
    assert!(
        system_text(alice).starts_with(
            "You are 'alice', a writer. Use tools to complete tasks. You can list and claim tasks from the board."
        ),
        "{}",
        system_text(alice)
    );
    let woken = loop_requests(&server).into_iter().filter(|r| !system_text(r).starts_with("You are 'alice'"));
    let woken: Vec<RecordedRequest> = woken
        .filter(|r| serde_json::to_string(&r.body["messages"]).unwrap_or_default().contains("[Team events]"))
        .collect();
    assert_eq!(woken.len(), 1, "the Lead is woken once");
    assert!(stdout(&out).contains("Alice reported: hello.txt is written."), "{}", stdout(&out));
}
