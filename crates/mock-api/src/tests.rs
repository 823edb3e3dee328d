//! The server against a raw HTTP/1.1 client on a tokio `TcpStream`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{Chunking, MockServer, RecordedRequest, Reply, SseEvent, http, reply};

/// A parsed response: status, headers (lower-case names), decoded body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("json body")
    }
}

async fn connect(server: &MockServer) -> TcpStream {
    TcpStream::connect(server.addr()).await.expect("connect")
}

async fn write_request(stream: &mut TcpStream, method: &str, path: &str, body: &str) {
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nX-Api-Key: sk-test\r\n\
         Anthropic-Version: 2023-06-01\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await.expect("write");
}

async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Response {
    let head = http::read_head(stream, buf).await.expect("read head").expect("a response");
    let status = head.start_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    let body = http::read_body(stream, buf, &head, true).await.expect("read body");
    Response { status, headers: head.headers, body }
}

async fn call(server: &MockServer, path: &str, body: &str) -> Response {
    let mut stream = connect(server).await;
    write_request(&mut stream, "POST", path, body).await;
    read_response(&mut stream, &mut Vec::new()).await
}

const HELLO: &str = r#"{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}"#;

#[tokio::test]
async fn scripted_json_reply_is_served_and_the_request_recorded() {
    let server = MockServer::start(vec![reply::text("hello there")]);
    let response = call(&server, "/v1/messages", HELLO).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.header("request-id"), Some("req_mock_1"));
    let body = response.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["stop_sequence"], Value::Null);
    assert_eq!(body["content"], json!([{"type": "text", "text": "hello there"}]));
    assert!(body["id"].as_str().is_some_and(|id| id.starts_with("msg_mock_")));
    assert!(body["usage"]["input_tokens"].is_u64() && body["usage"]["output_tokens"].is_u64());

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some("sk-test"));
    assert_eq!(requests[0].header("Anthropic-Version"), Some("2023-06-01"));
    assert!(requests[0].headers.iter().all(|(n, _)| *n == n.to_ascii_lowercase()));
    assert_eq!(requests[0].body, serde_json::from_str::<Value>(HELLO).expect("json"));
    server.assert_done();
}

#[tokio::test]
async fn keep_alive_serves_two_requests_on_one_connection() {
    let server = MockServer::start(vec![reply::text("one"), reply::text("two")]);
    let mut stream = connect(&server).await;
    let mut buf = Vec::new();
    write_request(&mut stream, "POST", "/v1/messages", HELLO).await;
    let first = read_response(&mut stream, &mut buf).await;
    write_request(&mut stream, "POST", "/v1/messages", HELLO).await;
    let second = read_response(&mut stream, &mut buf).await;
    assert_eq!(first.json()["content"][0]["text"], "one");
    assert_eq!(second.json()["content"][0]["text"], "two");
    assert_eq!(second.header("connection"), Some("keep-alive"));
    assert_eq!(server.request_count(), 2);
    server.assert_done();
}

#[tokio::test]
async fn a_request_beyond_the_script_gets_500_and_is_counted() {
    let server = MockServer::start(vec![reply::text("only")]);
    assert_eq!(call(&server, "/v1/messages", HELLO).await.status, 200);
    let extra = call(&server, "/v1/messages", HELLO).await;
    assert_eq!(extra.status, 500);
    assert_eq!(
        extra.json(),
        json!({"type": "error", "error": {"type": "api_error",
            "message": "mock-api: unexpected request #2 (script has 1 replies)"}})
    );
    assert_eq!(server.request_count(), 2);
    assert_eq!(server.remaining(), 0);
    let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| server.assert_done()));
    assert!(done.is_err(), "assert_done must fail after an unexpected request");
}

#[tokio::test]
async fn other_routes_get_404_with_the_api_error_shape_and_consume_nothing() {
    let server = MockServer::start(vec![reply::text("kept")]);
    let response = call(&server, "/v1/v1/messages", HELLO).await;
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["type"], "error");
    assert_eq!(response.json()["error"]["type"], "not_found_error");
    assert_eq!(server.remaining(), 1);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn errors_carry_status_headers_and_a_request_id() {
    let server = MockServer::start(vec![
        reply::error(429, "rate_limit_error", "slow down").with_header("retry-after", "3"),
    ]);
    let response = call(&server, "/v1/messages", HELLO).await;
    assert_eq!(response.status, 429);
    assert_eq!(response.header("retry-after"), Some("3"));
    assert!(response.header("request-id").is_some());
    assert_eq!(response.json(), reply::error_body("rate_limit_error", "slow down"));
}

#[tokio::test]
async fn chunked_request_bodies_are_decoded() {
    let server = MockServer::start(vec![reply::text("ok")]);
    let mut stream = connect(&server).await;
    let (a, b) = HELLO.split_at(10);
    let text = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    stream.write_all(text.as_bytes()).await.expect("write");
    assert_eq!(read_response(&mut stream, &mut Vec::new()).await.status, 200);
    assert_eq!(server.requests()[0].body["messages"][0]["content"], "hi");
}

#[tokio::test]
async fn a_message_reply_streams_when_the_request_asks() {
    let server = MockServer::start(vec![reply::text("streamed")]);
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let response = call(&server, "/v1/messages", body).await;
    assert_eq!(response.header("content-type"), Some("text/event-stream; charset=utf-8"));
    let text = String::from_utf8(response.body).expect("utf-8");
    let names: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
}

#[tokio::test]
async fn sse_cut_every_byte_reassembles_to_the_whole_stream() {
    let body = reply::message(
        vec![
            reply::text_block("héllo → wörld ✓"),
            reply::tool_use_block("toolu_1", "write_file", json!({"path": "a.txt", "content": "ü"})),
        ],
        "tool_use",
    );
    let events = reply::with_noise(reply::sse_from_message(&body));
    let server = MockServer::start(vec![
        Reply::sse(events.clone()).chunking(Chunking::Whole),
        Reply::sse(events.clone()).chunking(Chunking::Bytes(1)),
        Reply::sse(events.clone()).chunking(Chunking::Bytes(3)).crlf(),
    ]);
    let whole = call(&server, "/v1/messages", HELLO).await.body;
    let bytewise = call(&server, "/v1/messages", HELLO).await.body;
    let crlf = call(&server, "/v1/messages", HELLO).await.body;
    assert_eq!(whole, crate::serialize_sse(&events, false));
    assert_eq!(bytewise, whole);
    assert_eq!(String::from_utf8(crlf).expect("utf-8").replace("\r\n", "\n").into_bytes(), whole);
    server.assert_done();
}

#[tokio::test]
async fn drop_after_sends_a_prefix_then_closes() {
    let body = reply::message(vec![reply::text_block("a long answer")], "end_turn");
    let full = crate::serialize_sse(&reply::sse_from_message(&body), false);
    let server = MockServer::start(vec![reply::dropped_stream(&body, 40)]);
    let mut stream = connect(&server).await;
    write_request(&mut stream, "POST", "/v1/messages", HELLO).await;
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut received))
        .await
        .expect("the server closes the socket")
        .expect("read");
    let text = String::from_utf8_lossy(&received);
    let (head, rest) = text.split_once("\r\n\r\n").expect("a head");
    assert!(head.contains(&format!("content-length: {}", full.len())), "{head}");
    assert_eq!(rest.as_bytes(), &full[..40]);
}

#[tokio::test]
async fn close_ends_the_connection_without_a_response() {
    let server = MockServer::start(vec![Reply::Close]);
    let mut stream = connect(&server).await;
    write_request(&mut stream, "POST", "/v1/messages", HELLO).await;
    let mut received = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut received)).await;
    assert!(received.is_empty());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn hang_sends_nothing_and_drop_closes_the_socket() {
    let server = MockServer::start(vec![Reply::Hang]);
    let mut stream = connect(&server).await;
    write_request(&mut stream, "POST", "/v1/messages", HELLO).await;
    let mut byte = [0u8; 1];
    let waited = tokio::time::timeout(Duration::from_millis(300), stream.read(&mut byte)).await;
    assert!(waited.is_err(), "a hanging reply must send nothing");
    assert_eq!(server.request_count(), 1);
    drop(server);
    let after = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await;
    assert!(matches!(after, Ok(Ok(0) | Err(_))), "dropping the server closes the socket: {after:?}");
}

#[tokio::test]
async fn delays_wait_before_answering_and_between_chunks() {
    let body = reply::message(vec![reply::text_block("slow")], "end_turn");
    let server = MockServer::start(vec![
        reply::text("late").delayed(Duration::from_millis(200)),
        reply::stream(&body).delay_between_chunks(Duration::from_millis(50)),
    ]);
    let started = std::time::Instant::now();
    assert_eq!(call(&server, "/v1/messages", HELLO).await.status, 200);
    assert!(started.elapsed() >= Duration::from_millis(200));
    let started = std::time::Instant::now();
    let streamed = call(&server, "/v1/messages", HELLO).await.body;
    let events = reply::sse_from_message(&body).len() as u32;
    assert!(started.elapsed() >= Duration::from_millis(50) * (events - 1));
    assert_eq!(streamed, crate::serialize_sse(&reply::sse_from_message(&body), false));
}

#[test]
fn works_from_a_plain_test_with_a_blocking_client() {
    use std::io::{Read, Write};
    let server = MockServer::start_fn(|request| reply::text(&format!("echo {}", request.body["n"])));
    let mut stream = std::net::TcpStream::connect(server.addr()).expect("connect");
    let body = r#"{"n":7}"#;
    let text = format!(
        "POST /v1/messages HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).expect("write");
    let mut out = String::new();
    stream.read_to_string(&mut out).expect("read");
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains(r#""text":"echo 7""#), "{out}");
    assert!(server.base_url().starts_with("http://127.0.0.1:") && !server.base_url().ends_with('/'));
}

#[test]
fn sse_from_message_follows_the_api_sequence() {
    let input = json!({"command": "ls -la", "path": "ü"});
    let body = reply::message(
        vec![reply::text_block("Hi!"), reply::tool_use_block("toolu_9", "bash", input.clone())],
        "tool_use",
    );
    let events = reply::sse_from_message_with(&body, 1);
    let data: Vec<&Value> = events
        .iter()
        .map(|e| match e {
            SseEvent::Event { name, data } => {
                assert_eq!(data["type"], name.as_str(), "data.type repeats the event name");
                data
            }
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(data[0]["message"]["content"], json!([]));
    assert_eq!(data[0]["message"]["stop_reason"], Value::Null);
    assert_eq!(data[0]["message"]["id"], body["id"]);
    assert_eq!(data[1]["content_block"], json!({"type": "text", "text": ""}));
    let text: String = data
        .iter()
        .filter(|d| d["index"] == 0 && d["delta"]["type"] == "text_delta")
        .map(|d| d["delta"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(text, "Hi!");
    let tool_start =
        data.iter().find(|d| d["type"] == "content_block_start" && d["index"] == 1).expect("start");
    assert_eq!(
        tool_start["content_block"],
        json!({"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {}})
    );
    let fragments: Vec<&str> = data
        .iter()
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().unwrap_or_default())
        .collect();
    assert!(fragments.iter().all(|f| f.chars().count() == 1));
    assert_eq!(serde_json::from_str::<Value>(&fragments.concat()).expect("json"), input);
    let n = data.len();
    assert_eq!(
        *data[n - 2],
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
            "usage": {"output_tokens": body["usage"]["output_tokens"]}})
    );
    assert_eq!(*data[n - 1], json!({"type": "message_stop"}));
    assert_eq!(
        SseEvent::ping().to_text(false),
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "events serialize as `event: NAME\\ndata: JSON\\n\\n`"
    );
}

fn with_messages(messages: Value) -> RecordedRequest {
    RecordedRequest {
        method: "POST".into(),
        path: "/v1/messages".into(),
        headers: Vec::new(),
        body: json!({"messages": messages}),
    }
}

#[test]
fn tool_pairing_check_table() {
    let call = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]});
    let result = json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok"});
    let text = json!({"type": "text", "text": "go on"});
    let user = |content: Value| json!({"role": "user", "content": content});
    let cases = [
        ("paired", json!([user(json!("hi")), call, user(json!([result, text]))]), true),
        ("missing result", json!([user(json!("hi")), call, user(json!([text]))]), false),
        ("text before result", json!([user(json!("hi")), call, user(json!([text, result]))]), false),
        ("duplicate result", json!([user(json!("hi")), call, user(json!([result, result]))]), false),
        ("stray result", json!([user(json!([result]))]), false),
        ("trailing tool_use", json!([user(json!("hi")), call]), false),
    ];
    for (name, messages, ok) in cases {
        assert_eq!(with_messages(messages).check_tool_pairing().is_ok(), ok, "{name}");
    }
}

#[test]
fn api_rules_check_table() {
    let user = |content: Value| json!({"role": "user", "content": content});
    let assistant = |content: Value| json!({"role": "assistant", "content": content});
    let call = |id: &str, input: Value| json!({"type": "tool_use", "id": id, "name": "bash", "input": input});
    let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
    let text = |t: &str| json!({"type": "text", "text": t});
    let cases = [
        ("plain", json!([user(json!("hi"))]), None),
        ("prefill", json!([user(json!("hi")), assistant(json!([]))]), None),
        (
            "empty assistant",
            json!([user(json!("hi")), assistant(json!([])), user(json!("again"))]),
            Some("non-empty content"),
        ),
        ("empty text", json!([user(json!([text("")]))]), Some("must be non-empty")),
        ("blank text", json!([user(json!(" \n"))]), Some("non-whitespace")),
        (
            "trailing space",
            json!([user(json!("hi")), assistant(json!([text("a ")]))]),
            Some("trailing whitespace"),
        ),
        (
            "duplicate ids",
            json!([
                user(json!("hi")),
                assistant(json!([call("t", json!({})), call("t", json!({}))])),
                user(json!([result("t"), result("t")]))
            ]),
            Some("must be unique"),
        ),
        (
            "bad id",
            json!([
                user(json!("hi")),
                assistant(json!([call("a.b", json!({}))])),
                user(json!([result("a.b")]))
            ]),
            Some("does not match"),
        ),
        (
            "string input",
            json!([
                user(json!("hi")),
                assistant(json!([call("t", json!("ls"))])),
                user(json!([result("t")]))
            ]),
            Some("valid dictionary"),
        ),
        (
            "orphan",
            json!([user(json!("hi")), assistant(json!([call("t", json!({}))])), user(json!("next"))]),
            Some("no tool_result"),
        ),
        (
            "paired",
            json!([
                user(json!("hi")),
                assistant(json!([text("x"), call("t", json!({}))])),
                user(json!([result("t"), text("y")]))
            ]),
            None,
        ),
    ];
    for (name, messages, fails) in cases {
        match (with_messages(messages).check_api_rules(), fails) {
            (Ok(()), None) => {}
            (Err(e), Some(want)) => assert!(e.contains(want), "{name}: {e}"),
            (got, want) => panic!("{name}: got {got:?}, wanted a failure containing {want:?}"),
        }
    }
}
