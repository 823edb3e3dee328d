//! End-to-end (issue 11): the answers that used to poison a session, one test per failing input,
//! with the real `s02` binary against the loopback server. Each checks that the user is told what
//! happened, the documented exit code, and that the next request passes `mock_api::rules` (the
//! API's request rules, written independently of the harness).

use std::path::Path;
use std::process::{Command, Output};

use e2e::{MockServer, Reply, chapter, reply, run_with_stdin, stderr, stdout};
use mock_api::SseEvent;
use serde_json::{Value, json};

fn s02(ws: &Path, server: &MockServer) -> Command {
    chapter("s02", ws, Some(&server.base_url()))
}

/// `s02 -p PROMPT` against `replies`; the server is returned for its requests.
fn one_shot(replies: Vec<Reply>, extra: &[&str]) -> (Output, MockServer, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(replies);
    let out = s02(ws.path(), &server).args(["-p", "hi"]).args(extra).output().expect("run s02");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    (out, server, ws)
}

/// The REPL with two prompts: the second request shows what the first answer left behind.
fn two_prompts(replies: Vec<Reply>) -> (Output, MockServer, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(replies);
    let out = run_with_stdin(s02(ws.path(), &server), "first prompt\nsecond prompt\n");
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    (out, server, ws)
}

fn event(name: &str, mut data: Value) -> SseEvent {
    data["type"] = json!(name);
    SseEvent::new(name, data)
}

fn message_start(message: Value) -> SseEvent {
    event("message_start", json!({"message": message}))
}

fn text_block_events(index: usize, text: &str) -> Vec<SseEvent> {
    vec![
        event("content_block_start", json!({"index": index, "content_block": {"type": "text", "text": ""}})),
        event("content_block_delta", json!({"index": index, "delta": {"type": "text_delta", "text": text}})),
        event("content_block_stop", json!({"index": index})),
    ]
}

fn message_delta(stop: &str) -> SseEvent {
    event(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 3}}),
    )
}

fn full_start() -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
           "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}})
}

/// The messages of request `n` (0-based).
fn messages(server: &MockServer, n: usize) -> Value {
    e2e::unmarked(&server.requests()[n].body["messages"])
}

#[test]
fn input_1_an_empty_answer_is_not_sent_back_as_an_empty_message() {
    let empty = reply::json(json!({"id": "msg_e", "type": "message", "role": "assistant", "model": "m",
        "content": [], "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 0}}));
    let (out, server, _ws) = two_prompts(vec![empty, reply::text("Second answer.")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("empty answer"), "the user is told: {}", stderr(&out));
    assert!(stdout(&out).contains("Second answer."), "{}", stdout(&out));
    server.assert_done();
    server.assert_api_rules();
    assert_eq!(
        messages(&server, 1),
        json!([{"role": "user", "content": [{"type": "text", "text": "first prompt"}, {"type": "text", "text": "second prompt"}]}])
    );

    let empty = reply::json(json!({"content": [], "stop_reason": "end_turn"}));
    let (out, _server, _ws) = one_shot(vec![empty], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn input_2_an_empty_text_block_before_a_tool_use_is_not_sent_back() {
    let call = Reply::Message(reply::message(
        vec![
            reply::text_block(""),
            reply::tool_use_block("toolu_1", "write_file", json!({"path": "a.txt", "content": "made"})),
        ],
        "tool_use",
    ));
    let (out, server, ws) = one_shot(vec![call, reply::text("Done.")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "made");
    server.assert_done();
    server.assert_api_rules();
    assert_eq!(messages(&server, 1)[1]["content"][0]["type"], "tool_use", "the empty text block is gone");
}

#[test]
fn input_3_a_tool_use_without_input_runs_and_is_answered_json_and_stream() {
    // JSON: no `input` at all. The call runs with {} and its error result is sent back.
    let json_call = reply::json(reply::message(
        vec![json!({"type": "tool_use", "id": "toolu_1", "name": "write_file"})],
        "tool_use",
    ));
    let (out, server, _ws) = one_shot(vec![json_call, reply::text("Noted.")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    let sent = messages(&server, 1);
    assert_eq!(sent[1]["content"][0]["input"], json!({}));
    assert_eq!(sent[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(sent[2]["content"][0]["is_error"], true, "{sent}");

    // A stream (llama.cpp): content_block_start has no `input`, which arrives as deltas.
    let stream = Reply::sse(vec![
        message_start(full_start()),
        event(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "write_file"}}),
        ),
        event(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"b.txt\", "}}),
        ),
        event(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"content\": \"streamed\"}"}}),
        ),
        event("content_block_stop", json!({"index": 0})),
        message_delta("tool_use"),
        event("message_stop", json!({})),
    ]);
    let (out, server, ws) = one_shot(vec![stream, reply::text("Written.")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(ws.path().join("b.txt")).unwrap(), "streamed");
    server.assert_done();
    server.assert_api_rules();
}

#[test]
fn input_4_a_refusal_shows_its_explanation_exits_3_and_leaves_the_history() {
    let refusal = || {
        let mut body = reply::message(vec![reply::text_block("")], "refusal");
        body["stop_details"] = json!({"type": "refusal", "category": "cyber", "explanation": "This request looks like malware."});
        Reply::Message(body)
    };
    let (out, server, _ws) = one_shot(vec![refusal()], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("This request looks like malware."), "{}", stderr(&out));
    server.assert_done();

    let (out, server, _ws) = two_prompts(vec![refusal(), reply::text("Fine.")]);
    assert!(stderr(&out).contains("removed from the history"), "{}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    assert_eq!(messages(&server, 1), json!([{"role": "user", "content": "second prompt"}]));

    // Streamed, with no block at all and the explanation in message_delta.
    let stream = Reply::sse(vec![
        message_start(full_start()),
        event(
            "message_delta",
            json!({"delta": {"stop_reason": "refusal", "stop_details": {"type": "refusal", "explanation": "Not this one."}}}),
        ),
        event("message_stop", json!({})),
    ]);
    let (out, _server, _ws) = one_shot(vec![stream], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("Not this one."), "{}", stderr(&out));
}

#[test]
fn input_5_context_window_exceeded_says_so_exits_4_and_stores_no_empty_message() {
    // Z.ai: a 200 with no content, as JSON without id/type/role/model, and as a stream.
    let json_answer = || {
        reply::json(
            json!({"content": [], "stop_reason": "model_context_window_exceeded", "usage": {"input_tokens": 0, "output_tokens": 0}}),
        )
    };
    let stream = Reply::sse(vec![
        message_start(json!({"content": [], "usage": {"input_tokens": 0, "output_tokens": 0}})),
        message_delta("model_context_window_exceeded"),
        event("message_stop", json!({})),
    ]);
    for answer in [json_answer(), stream] {
        let (out, server, _ws) = one_shot(vec![answer], &[]);
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
        assert!(stderr(&out).contains("context window"), "{}", stderr(&out));
        assert!(stderr(&out).contains("new session"), "what to do: {}", stderr(&out));
        server.assert_done();
    }
    let (_out, server, _ws) = two_prompts(vec![json_answer(), reply::text("Ok.")]);
    server.assert_done();
    server.assert_api_rules();
}

#[test]
fn input_6_a_final_event_without_its_blank_line_finishes_the_answer() {
    for tail in [
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}",
    ] {
        let mut events = vec![message_start(full_start())];
        events.extend(text_block_events(0, "All there."));
        events.push(message_delta("end_turn"));
        events.push(SseEvent::raw(tail));
        let (out, server, _ws) = one_shot(vec![Reply::sse(events)], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "All there.");
        assert!(!stderr(&out).contains("cut off"), "{}", stderr(&out));
        server.assert_done();
    }
}

#[test]
fn input_7_message_start_without_content_is_accepted() {
    let answer = || {
        let mut events = vec![message_start(
            json!({"id": "msg_7", "type": "message", "role": "assistant", "model": "m", "usage": {"input_tokens": 5}}),
        )];
        events.extend(text_block_events(0, "Hello from a lean endpoint."));
        events.push(message_delta("end_turn"));
        events.push(event("message_stop", json!({})));
        Reply::sse(events)
    };
    let (out, server, _ws) = two_prompts(vec![answer(), answer()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("Hello from a lean endpoint.").count(), 2, "{}", stdout(&out));
    server.assert_done();
    server.assert_api_rules();
}

#[test]
fn two_messages_spliced_into_one_stream_are_still_rejected() {
    let mut events = vec![message_start(full_start())];
    events.extend(text_block_events(0, "One."));
    let mut other = full_start();
    other["id"] = json!("msg_2");
    events.push(message_start(other));
    events.extend(text_block_events(1, "Two."));
    events.push(message_delta("end_turn"));
    events.push(event("message_stop", json!({})));
    let (out, server, _ws) = one_shot(vec![Reply::sse(events)], &["--max-retries", "0"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("spliced"), "{}", stderr(&out));
    server.assert_done();
}

#[test]
fn an_api_error_shows_its_request_id_and_a_401_names_the_variable_to_check() {
    let (out, server, _ws) =
        one_shot(vec![reply::error(401, "authentication_error", "invalid x-api-key")], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("authentication_error: invalid x-api-key"), "{err}");
    assert!(err.contains("request-id: req_mock_1"), "{err}");
    assert!(err.contains("the request carried no key"), "{err}");
    server.assert_done();
}

/// The first request `s02 -p hi` sends to a server answering `reply`, run in a workspace holding
/// `dotenv` (when given) with `vars` set; and its stderr.
fn first_request(
    reply: Reply,
    dotenv: Option<&str>,
    vars: &[(&str, &str)],
) -> (mock_api::RecordedRequest, String, tempfile::TempDir) {
    let ws = tempfile::tempdir().unwrap();
    if let Some(text) = dotenv {
        std::fs::write(ws.path().join(".env"), text).unwrap();
    }
    let server = MockServer::start(vec![reply]);
    let out =
        s02(ws.path(), &server).envs(vars.iter().copied()).args(["-p", "hi"]).output().expect("run s02");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    let request = server.requests().into_iter().next().unwrap_or_else(|| panic!("no request: {err}"));
    (request, err, ws)
}

/// `.env` copied from `.env.example` still holds its placeholder key: that counts as unset, so
/// the key exported in the shell is the one sent, and one line says why.
#[test]
fn a_dotenv_copied_from_the_example_leaves_the_exported_key_in_use() {
    let example = include_str!("../../.env.example");
    let (request, err, ws) =
        first_request(reply::text("ok"), Some(example), &[("ANTHROPIC_API_KEY", "sk-exported-key")]);
    assert_eq!(request.header("x-api-key"), Some("sk-exported-key"), "{err}");
    let notice = format!(
        "config: ANTHROPIC_API_KEY in {} is still the placeholder sk-ant-... from .env.example; \
         the environment's value is used",
        ws.path().join(".env").display()
    );
    assert_eq!(err.lines().filter(|l| *l == notice).count(), 1, "{err}");
    assert!(!err.contains("the API key is in"), "the placeholder is no key to warn of: {err}");
}

/// With a base URL, `ANTHROPIC_AUTH_TOKEN` is the key, sent as a bearer token (how DeepSeek, Kimi
/// and GLM are configured for Claude Code), and not as `x-api-key`.
#[test]
fn auth_token_with_a_base_url_is_sent_as_a_bearer_token() {
    let (request, err, _ws) = first_request(reply::text("ok"), None, &[("ANTHROPIC_AUTH_TOKEN", "tok-123")]);
    assert_eq!(request.header("authorization"), Some("Bearer tok-123"), "{err}");
    assert_eq!(request.header("x-api-key"), None, "{err}");
}

/// A key kept in `.env` gets one short warning line at start, and after a 401 the hint names
/// the variable, the file it came from and how it was sent.
#[test]
fn a_401_names_where_the_key_came_from() {
    let refused = reply::error(401, "authentication_error", "invalid x-api-key");
    let (request, err, ws) = first_request(refused, Some("ANTHROPIC_API_KEY=sk-from-dotenv\n"), &[]);
    assert_eq!(request.header("x-api-key"), Some("sk-from-dotenv"));
    let dotenv = ws.path().join(".env");
    let warning = format!(
        "warning: sandbox: the API key is in {}, a file bash commands can read; pass it in the environment instead",
        dotenv.display()
    );
    assert_eq!(err.lines().filter(|l| *l == warning).count(), 1, "{err}");
    let hint =
        format!("the request carried ANTHROPIC_API_KEY from .env at {}, sent as x-api-key", dotenv.display());
    assert!(err.contains(&hint), "{err}");
}

#[test]
fn an_html_error_page_is_summarised_in_one_line() {
    let page = "<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title>\n<style>body { width: 35em; }</style></head>\n\
                <body><center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n";
    let proxy = Reply::Raw { status: 502, content_type: "text/html".into(), body: page.into() };
    let (out, server, _ws) = one_shot(vec![proxy], &["--max-retries", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let line = err.lines().find(|l| l.starts_with("error:")).unwrap_or_default();
    assert_eq!(line, "error: HTTP 502 from the endpoint: an HTML page: 502 Bad Gateway", "{err}");
    assert!(!err.contains("<html"), "{err}");
    server.assert_done();
}

#[test]
fn a_stream_of_pings_is_ended_by_the_request_timeout_and_not_retried() {
    let mut events = vec![message_start(full_start())];
    events.extend((0..40).map(|_| SseEvent::ping()));
    let trickle = Reply::sse(events).delay_between_chunks(std::time::Duration::from_millis(100));
    let (out, server, _ws) = one_shot(vec![trickle], &["--request-timeout", "1", "--idle-timeout", "30"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("took longer than 1 s"), "{err}");
    assert!(!err.contains("— retry"), "{err}");
    server.assert_done();
}

#[test]
fn a_plain_http_endpoint_needs_no_ca_certificates() {
    let ws = tempfile::tempdir().unwrap();
    let no_certs = tempfile::tempdir().unwrap();
    let empty = no_certs.path().join("none.pem");
    std::fs::write(&empty, "").unwrap();
    let server = MockServer::start(vec![reply::text("No TLS needed.")]);
    let out = s02(ws.path(), &server)
        .env("SSL_CERT_FILE", &empty)
        .env("SSL_CERT_DIR", no_certs.path())
        .args(["-p", "hi"])
        .output()
        .expect("run s02");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "No TLS needed.");
    server.assert_done();
}

/// A closed port is named as such: nothing listens there.
#[test]
fn a_closed_port_gets_a_hint() {
    let ws = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = chapter("s02", ws.path(), Some(&format!("http://127.0.0.1:{port}")))
        .args(["--max-retries", "0", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("hint: nothing listens at that address: is the server running"), "{err}");
}

/// `https://` to a server that speaks plain http (the loopback server here) says to use http://.
#[test]
fn https_to_a_plain_http_server_gets_a_hint() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![]);
    let url = server.base_url().replacen("http://", "https://", 1);
    let out = chapter("s02", ws.path(), Some(&url))
        .args(["--max-retries", "0", "--connect-timeout", "2", "--request-timeout", "5", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("hint: the base URL says https://; if the server there speaks plain http"), "{err}");
}
