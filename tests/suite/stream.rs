//! End-to-end (issue 5): streaming, retries, timeouts, truncation and interrupts, with the real
//! `s02` binary against the loopback server. Every test fixes the number of requests it expects.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use e2e::{MockServer, Reply, chapter, redacted_bodies, reply, run_with_stdin, stderr, stdout};
use mock_api::{Chunking, SseEvent};
use serde_json::{Value, json};

fn s02(ws: &Path, server: &MockServer) -> Command {
    chapter("s02", ws, Some(&server.base_url()))
}

fn run(mut cmd: Command, args: &[&str]) -> Output {
    cmd.args(args).output().expect("run s02")
}

fn retry_lines(err: &str) -> Vec<&str> {
    err.lines().filter(|l| l.contains("— retry ")).collect()
}

fn no_panic(out: &Output) {
    let err = stderr(out);
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn overloaded_twice_then_success_takes_exactly_three_requests() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::error(529, "overloaded_error", "Overloaded"),
        reply::error(529, "overloaded_error", "Overloaded"),
        reply::text("Third time lucky."),
    ]);
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let lines = retry_lines(&err);
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("API error 529 overloaded_error: Overloaded — retry 1 of 2 in"), "{err}");
    assert!(lines[1].contains("retry 2 of 2 in"), "{err}");
    assert_eq!(stdout(&out).matches("Third time lucky.").count(), 1, "printed once: {}", stdout(&out));
    server.assert_done();
}

#[test]
fn rate_limited_with_retry_after_one_waits_about_a_second() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::error(429, "rate_limit_error", "Slow down").with_header("retry-after", "1"),
        reply::text("ok"),
    ]);
    let t = Instant::now();
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    let elapsed = t.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    // The first backoff would be at most 0.5 s: waiting 0.9 s or more means retry-after was obeyed.
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    assert!(retry_lines(&stderr(&out))[0].contains("retry 1 of 2 in 1.0s"), "{}", stderr(&out));
    server.assert_done();
}

#[test]
fn unauthorized_exits_non_zero_under_dash_p_and_the_repl_answers_the_next_prompt() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::error(401, "authentication_error", "invalid x-api-key")]);
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("authentication_error: invalid x-api-key"), "{}", stderr(&out));
    assert!(retry_lines(&stderr(&out)).is_empty());
    server.assert_done();

    let server = MockServer::start(vec![
        reply::error(401, "authentication_error", "invalid x-api-key"),
        reply::text("Still here."),
    ]);
    let out = run_with_stdin(s02(ws.path(), &server), "first\nsecond\n");
    assert!(out.status.success());
    assert!(stderr(&out).contains("invalid x-api-key"), "{}", stderr(&out));
    assert!(stdout(&out).contains("Still here."), "{}", stdout(&out));
    server.assert_done();
    server.assert_tool_pairing();
}

fn long_answer() -> Value {
    reply::message(
        vec![reply::text_block("The quick brown fox jumps over the lazy dog, twice over.")],
        "end_turn",
    )
}

#[test]
fn a_stream_dropped_before_any_text_is_retried() {
    let ws = tempfile::tempdir().unwrap();
    // 40 bytes: inside message_start, before any text.
    let server =
        MockServer::start(vec![reply::dropped_stream(&long_answer(), 40), reply::text("Recovered.")]);
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(retry_lines(&stderr(&out)).len(), 1, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Recovered.");
    server.assert_done();
}

#[test]
fn a_stream_dropped_after_text_was_shown_is_an_error_and_the_text_is_not_in_the_history() {
    let ws = tempfile::tempdir().unwrap();
    let body = long_answer();
    let full = mock_api::serialize_sse(&reply::sse_from_message_with(&body, 8), false);
    let first_text = String::from_utf8_lossy(&full).find("The quic").unwrap();
    let server = MockServer::start(vec![
        Reply::DropAfter { content_type: "text/event-stream".into(), body: full, after: first_text + 300 },
        reply::text("Second answer."),
    ]);
    let out = run_with_stdin(s02(ws.path(), &server), "first\nsecond\n");
    no_panic(&out);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(text.contains("The quick"), "part of the answer was shown: {text}");
    assert!(err.contains("not retried"), "{err}");
    assert!(retry_lines(&err).is_empty(), "{err}");
    assert!(text.contains("Second answer."), "{text}");
    server.assert_done();
    let next = &server.requests()[1].body;
    assert_eq!(
        e2e::unmarked(&next["messages"]),
        json!([{"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}]),
        "the partial answer is not in the history"
    );
}

#[test]
fn an_error_event_inside_a_200_stream_is_a_typed_error() {
    let ws = tempfile::tempdir().unwrap();
    let start = reply::sse_from_message(&long_answer()).remove(0);
    let server = MockServer::start(vec![Reply::sse(vec![
        start,
        SseEvent::ping(),
        reply::error_event("overloaded_error", "Overloaded"),
    ])]);
    let out = run(s02(ws.path(), &server), &["-p", "hi", "--max-retries", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error: API error in the stream, overloaded_error: Overloaded"),
        "{}",
        stderr(&out)
    );
    server.assert_done();
}

#[test]
fn malformed_sse_data_is_an_error_not_a_panic() {
    let ws = tempfile::tempdir().unwrap();
    let start = reply::sse_from_message(&long_answer()).remove(0);
    let server = MockServer::start(vec![Reply::sse(vec![
        start,
        SseEvent::raw(
            "event: content_block_start\ndata: {\"type\": \"content_block_start\", \"index\": 0,\n\n",
        ),
    ])]);
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    no_panic(&out);
    assert!(stderr(&out).contains("is not JSON"), "{}", stderr(&out));
    assert!(retry_lines(&stderr(&out)).is_empty(), "a malformed answer is not retried");
    server.assert_done();
}

#[test]
fn a_silent_server_hits_the_idle_timeout_within_its_bound() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![Reply::Hang]);
    let t = Instant::now();
    let out = run(s02(ws.path(), &server), &["-p", "hi", "--idle-timeout", "1", "--max-retries", "0"]);
    let elapsed = t.elapsed();
    assert_eq!(out.status.code(), Some(1));
    // Far below the 300 s default: the 1 s idle timeout fired (the bound is loose, for a loaded machine).
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    assert!(stderr(&out).contains("no data from the endpoint for 1 s (idle timeout)"), "{}", stderr(&out));
    server.assert_done();
}

#[test]
fn a_stream_that_stalls_after_its_first_event_hits_the_idle_timeout() {
    let ws = tempfile::tempdir().unwrap();
    // The head and message_start arrive, then 30 s of silence before each later event.
    let server =
        MockServer::start(vec![Reply::Message(long_answer()).delay_between_chunks(Duration::from_secs(30))]);
    let t = Instant::now();
    let out = run(s02(ws.path(), &server), &["-p", "hi", "--idle-timeout", "1", "--max-retries", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    no_panic(&out);
    assert!(stderr(&out).contains("no data from the endpoint for 1 s (idle timeout)"), "{}", stderr(&out));
    // Far below the 30 s pause: the idle timeout ended the stall (loose, for a loaded machine).
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    server.assert_done();
}

#[test]
fn a_slow_stream_whose_every_pause_is_under_the_idle_timeout_is_read_whole() {
    let ws = tempfile::tempdir().unwrap();
    // Nine events 300 ms apart: 2.4 s in all, longer than the 1 s idle timeout, which counts
    // silence between chunks, not the whole body.
    let server = MockServer::start(vec![
        Reply::Message(long_answer()).delay_between_chunks(Duration::from_millis(300)),
    ]);
    let t = Instant::now();
    let out = run(s02(ws.path(), &server), &["-p", "hi", "--idle-timeout", "1", "--max-retries", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(t.elapsed() >= Duration::from_millis(2400), "the pauses were kept: {:?}", t.elapsed());
    assert!(
        stdout(&out).contains("The quick brown fox jumps over the lazy dog, twice over."),
        "{}",
        stdout(&out)
    );
    assert!(retry_lines(&stderr(&out)).is_empty(), "{}", stderr(&out));
    server.assert_done();
}

#[test]
fn a_stream_that_ends_cleanly_without_message_stop_is_incomplete_and_retried_before_any_text() {
    let ws = tempfile::tempdir().unwrap();
    // message_start and content_block_start, then the body ends: no message_stop.
    let cut: Vec<SseEvent> = reply::sse_from_message(&long_answer()).into_iter().take(2).collect();
    let server = MockServer::start(vec![Reply::sse(cut), reply::text("Complete this time.")]);
    let out = run(s02(ws.path(), &server), &["-p", "hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(retry_lines(&err)[0].contains("the response stream was cut off"), "{err}");
    assert_eq!(stdout(&out).trim(), "Complete this time.");
    server.assert_done();
}

/// The second request of a session that writes a file through one streamed or plain tool call.
fn tool_call_session(streamed: bool) -> (Vec<Value>, String) {
    let ws = tempfile::tempdir().unwrap();
    let body = reply::message(
        vec![reply::tool_use_block(
            "toolu_1",
            "write_file",
            json!({"path": "out.txt", "content": "héllo ✓ 日本語 \"quoted\"\n"}),
        )],
        "tool_use",
    );
    let first = if streamed {
        Reply::sse(reply::sse_from_message_with(&body, 1)).chunking(Chunking::Bytes(1))
    } else {
        Reply::Message(body)
    };
    let server = MockServer::start(vec![first, reply::text("Written.")]);
    let mut args = vec!["-p", "write it"];
    if !streamed {
        args.push("--no-stream");
    }
    let out = run(s02(ws.path(), &server), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    server.assert_done();
    server.assert_tool_pairing();
    let requests = server.requests();
    assert_eq!(requests[0].body.get("stream").is_some(), streamed);
    let bodies = redacted_bodies(&requests, ws.path());
    let file = std::fs::read_to_string(ws.path().join("out.txt")).unwrap();
    (bodies[1]["messages"].as_array().unwrap().clone(), file)
}

#[test]
fn a_tool_call_streamed_in_one_byte_fragments_equals_the_plain_json_one() {
    let (streamed, streamed_file) = tool_call_session(true);
    let (plain, plain_file) = tool_call_session(false);
    assert_eq!(streamed, plain);
    assert_eq!(streamed_file, "héllo ✓ 日本語 \"quoted\"\n");
    assert_eq!(streamed_file, plain_file);
    assert_eq!(
        streamed[1]["content"][0]["input"],
        json!({"path": "out.txt", "content": "héllo ✓ 日本語 \"quoted\"\n"})
    );
}

#[test]
fn max_tokens_with_a_partial_tool_use_never_runs_it() {
    let ws = tempfile::tempdir().unwrap();
    let start = reply::sse_from_message(&long_answer()).remove(0);
    let event = |name: &str, data: Value| SseEvent::new(name, data);
    let truncated = vec![
        start,
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "id": "toolu_cut", "name": "bash", "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"touch mar"}}),
        ),
        event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null},
                   "usage": {"output_tokens": 8000}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = MockServer::start(vec![Reply::sse(truncated), reply::text("Carrying on.")]);
    let out = run_with_stdin(s02(ws.path(), &server), "make a marker\nnext\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("ran out of output tokens"), "{}", stderr(&out));
    assert!(!ws.path().join("marker").exists(), "the cut-off call did not run");
    assert!(!ws.path().join("mar").exists(), "the cut-off call did not run");
    assert!(stdout(&out).contains("Carrying on."), "{}", stdout(&out));
    server.assert_done();
    server.assert_tool_pairing();
}

#[test]
fn usage_goes_to_stderr_and_nothing_but_the_answer_reaches_piped_stdout() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("Counted.")]);
    let out = run(s02(ws.path(), &server), &["-p", "hi", "--usage"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Counted.\n");
    let err = stderr(&out);
    // The mock counts the request's input, about 4 characters a token (mock_api::cache).
    let input = server.usage()[0].input_tokens;
    assert!(input > 100, "{input}");
    assert!(err.contains(&format!("[usage] 1 request: {input} input tokens, ")), "{err}");
    assert!(!err.contains('\r') && !err.contains('\x1b'), "no spinner when stderr is piped: {err:?}");
    server.assert_done();
}

/// Spawns s02's REPL with `input` on stdin (then closed) and captured output.
fn spawn_repl(cmd: &mut Command, input: &str) -> Child {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn s02");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    child
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        assert!(t.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sigint(child: &Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("run kill");
    assert!(status.success());
}

/// SIGINT is what Ctrl-C sends to the foreground process group; here it goes to s02 alone.
#[test]
fn sigint_during_a_request_cancels_the_turn_and_the_repl_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![Reply::Hang, reply::text("Back again.")]);
    let child = spawn_repl(&mut s02(ws.path(), &server), "first\nsecond\n");
    wait_for("the first request", || server.request_count() == 1);
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    assert!(stdout(&out).contains("Back again."), "{}", stdout(&out));
    server.assert_done();
}

#[test]
fn sigint_during_a_tool_kills_it_and_the_next_request_carries_a_cancelled_result() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": "touch started && sleep 2 && touch marker"}),
        )]),
        reply::text("Fine."),
    ]);
    let child = spawn_repl(&mut s02(ws.path(), &server), "first\nsecond\n");
    let started = ws.path().join("started");
    wait_for("the tool to start", || started.exists());
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Fine."), "{}", stdout(&out));
    server.assert_done();
    server.assert_tool_pairing();
    let next = &server.requests()[1].body;
    assert_eq!(next["messages"][2]["content"][0]["content"], "(cancelled)", "{next}");
    std::thread::sleep(Duration::from_millis(2500));
    assert!(!ws.path().join("marker").exists(), "the command's process group was killed");
}

/// A session's requests share one HTTP/1.1 keep-alive connection: each streamed body is read to
/// its end and the connection is back in the pool before the next request goes out. (Issue 16:
/// when the next request left before the connection was back, the session alternated between
/// two connections, and over HTTPS each would be a TLS session that sits idle a whole round.)
#[test]
fn a_session_keeps_one_connection() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("notes.txt"), "a note\n").unwrap();
    let read = |id: &str| reply::tool_uses(&[(id, "read_file", json!({"path": "notes.txt"}))]);
    let server = MockServer::start(vec![read("r1"), read("r2"), read("r3"), read("r4"), reply::text("done")]);
    let out = run(s02(ws.path(), &server), &["-p", "read it four times"]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    assert_eq!(server.request_count(), 5);
    assert_eq!(server.connections(), 1, "five requests over one connection");
}
