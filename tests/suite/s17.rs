//! End-to-end: the real `s17` binary (its own kernel and the goal loop) against the loopback
//! Messages API server: what the evaluator is sent, the block cap, an evaluator that fails, a
//! cleared goal, and the offline demo (COURSE-s10-s17 §8).

use e2e::{MockServer, RecordedRequest, Reply, chapter, reply, run_with_stdin, stderr, stdout};
use serde_json::json;

const WORKER_SYSTEM: &str = "You are a coding agent. Use tools to inspect and modify the current repository. Report concrete command results so an independent evaluator can judge completion.";

/// Whether `request` is an evaluator's: the course's evaluator SYSTEM.
fn is_evaluator(request: &RecordedRequest) -> bool {
    request.body["system"]
        .as_str()
        .is_some_and(|s| s.starts_with("You are an independent completion evaluator."))
}

/// The evaluator's one user message.
fn evaluator_prompt(request: &RecordedRequest) -> String {
    request.body["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

fn verdict(ok: bool, reason: &str) -> Reply {
    reply::text(&json!({"ok": ok, "reason": reason, "impossible": false}).to_string())
}

#[test]
fn the_evaluator_gets_no_tools_512_tokens_the_condition_and_the_tool_results() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("t1", "bash", json!({"command": "printf 'all 3 passed'"}))]),
        reply::text("The check passed."),
        verdict(true, "exit_code=0 and all 3 passed are in the conversation."),
    ]);

    let out = chapter("s17", ws.path(), Some(&server.base_url()))
        .args(["-p", "/goal the check prints all 3 passed"])
        .output()
        .unwrap();

    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[goal] achieved: exit_code=0 and all 3 passed are in the conversation."),
        "{text}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body["system"], WORKER_SYSTEM);
    assert_eq!(requests[0].body["messages"][0]["content"], "the check prints all 3 passed");
    assert_eq!(requests[0].tool_names(), ["bash", "read_file", "write_file", "edit_file", "glob"]);
    let evaluator = &requests[2];
    assert!(is_evaluator(evaluator));
    assert!(evaluator.body.get("tools").is_none(), "{}", evaluator.body);
    assert_eq!(evaluator.body["max_tokens"], 512);
    let prompt = evaluator_prompt(evaluator);
    assert!(prompt.contains(r#""completion_condition": "the check prints all 3 passed""#), "{prompt}");
    assert!(prompt.contains(r"[tool_result exit_code=0\nall 3 passed]"), "{prompt}");
    server.assert_api_rules();
}

#[test]
fn with_cap_2_an_evaluator_that_never_agrees_gets_three_worker_calls_then_limit() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::text("attempt one"),
        verdict(false, "missing result 1"),
        reply::text("attempt two"),
        verdict(false, "missing result 2"),
        reply::text("attempt three"),
        verdict(false, "missing result 3"),
        reply::text("unused"),
    ]);

    let mut cmd = chapter("s17", ws.path(), Some(&server.base_url()));
    cmd.env("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "2");
    let out = run_with_stdin(cmd, "/goal tests pass\n/goal\nq\n");

    let text = stdout(&out);
    let workers = server.requests().iter().filter(|r| !is_evaluator(r)).count();
    assert_eq!(workers, 3, "{text}");
    assert!(text.contains("[goal] block: missing result 1"), "{text}");
    assert!(
        text.contains("[goal] limit: goal remains active, but the Stop hook blocked 2 consecutive turns"),
        "{text}"
    );
    assert!(text.contains("Goal active: tests pass"), "{text}");
    assert!(text.contains("Last reason: missing result 3"), "{text}");
    let continuation = &server.requests()[2].body["messages"];
    let last = continuation.as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    assert_eq!(
        last["content"],
        "[Goal still active]\nCondition: tests pass\nEvaluator: missing result 1\nContinue working and surface the missing evidence."
    );
}

#[test]
fn an_evaluator_error_returns_control_with_the_goal_still_active() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::text("Done, I think."),
        reply::text("Yes, the goal is met."),
        reply::text("Still here."),
    ]);

    let out =
        run_with_stdin(chapter("s17", ws.path(), Some(&server.base_url())), "/goal tests pass\n/goal\nq\n");

    let text = stdout(&out);
    assert!(text.contains("[goal] error: GoalError: goal evaluator returned invalid JSON"), "{text}");
    assert!(text.contains("Goal active: tests pass"), "{text}");
    assert_eq!(server.requests().len(), 2, "control came back after the failed evaluation");
}

#[test]
fn after_goal_clear_a_final_answer_sends_no_evaluator_request() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::text("working on it"),
        verdict(false, "no evidence yet"),
        reply::text("still working"),
        verdict(false, "no evidence yet"),
        reply::text("hello"),
    ]);

    let mut cmd = chapter("s17", ws.path(), Some(&server.base_url()));
    cmd.env("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "1");
    let out = run_with_stdin(cmd, "/goal tests pass\n/goal clear\nhi\nq\n");

    let text = stdout(&out);
    assert!(text.contains("Goal cleared: tests pass"), "{text}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{text}");
    assert!(!is_evaluator(&requests[4]));
    assert_eq!(requests.iter().filter(|r| is_evaluator(r)).count(), 2);
}

#[test]
fn an_over_long_goal_is_a_message_and_the_repl_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("hello")]);

    let out = run_with_stdin(
        chapter("s17", ws.path(), Some(&server.base_url())),
        &format!("/goal {}\nhi\nquit\n", "x".repeat(4001)),
    );

    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("goal condition cannot exceed 4000 characters"), "{all}");
    assert!(stdout(&out).contains("hello"), "{all}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_demo_shows_a_block_with_the_reason_then_achieved() {
    let out = chapter("s17", std::path::Path::new("."), None).arg("--demo").output().unwrap();

    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let block = text.find("[goal] block: The conversation shows the edit but no run of sh greet.sh");
    let achieved = text.find("[goal] achieved: The tool result shows sh greet.sh exited 0");
    assert!(block.is_some() && achieved > block, "{text}");
    assert!(text.contains("exit_code=0"), "{text}");
}
