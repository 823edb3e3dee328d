//! The streaming client's cases against the loopback server (issue 5): text deltas, retries
//! before and after output, stream `error` events, the idle timeout, and cancellation by dropping
//! the future. Run twice: through hyper's client (`sse_client.rs`, what a plain `http://`
//! endpoint uses) and through reqwest (`sse_client_reqwest.rs`, what `https://` uses).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::agent::Agent;
use agent_core::client::{AnthropicClient, ApiError, RetryPolicy, Timeouts};
use agent_core::messages::{Message, MessagesRequest, MessagesResponse};
use agent_core::test_util::EventLog;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use mock_api::{Chunking, MockServer, Reply, SseEvent, reply};
use serde_json::json;

/// A client and the log its calls (through [`call`]) report to.
struct TestClient {
    client: AnthropicClient,
    log: Arc<EventLog>,
}

/// A client for `server` whose retry notices go to the returned log.
fn client(server: &MockServer, retries: u32, idle: Duration) -> (TestClient, Arc<EventLog>) {
    let config = agent_core::test_util::loopback_config(server.base_url());
    let retry =
        RetryPolicy { max_retries: retries, initial: Duration::from_millis(10), ..RetryPolicy::default() };
    let timeouts = Timeouts { connect: Duration::from_secs(5), idle, ..Timeouts::default() };
    let notices = EventLog::new();
    let mut client = AnthropicClient::new(&config, retry, timeouts).unwrap();
    if super::VIA_REQWEST {
        client = client.via_reqwest().unwrap();
    }
    (TestClient { client, log: Arc::clone(&notices) }, notices)
}

fn request() -> MessagesRequest {
    MessagesRequest {
        model: "mock-model".into(),
        max_tokens: 100,
        system: String::new(),
        messages: vec![Message::user_text("hi")].into(),
        tools: Vec::new().into(),
        stream: None,
    }
}

/// Runs one call, collecting the streamed text.
async fn call(client: &TestClient) -> (Result<MessagesResponse, ApiError>, String) {
    let result = client.client.create(&request(), &*client.log).await;
    (result, client.log.take_text())
}

fn long_text() -> serde_json::Value {
    reply::message(vec![reply::text_block("Hello there, this is a long streamed answer.")], "end_turn")
}

#[tokio::test]
async fn text_streams_in_deltas_and_the_message_equals_the_json_paths() {
    let body = long_text();
    let server = MockServer::start(vec![Reply::Message(body.clone()), Reply::Message(body.clone())]);
    let (streaming, _) = client(&server, 0, Duration::from_secs(5));
    let (streamed, text) = call(&streaming).await;
    let (mut json_client, _) = client(&server, 0, Duration::from_secs(5));
    json_client.client = json_client.client.with_streaming(false);
    let (plain, none) = call(&json_client).await;
    assert_eq!(text, "Hello there, this is a long streamed answer.");
    assert_eq!(none, "", "the JSON path reports no text delta");
    assert_eq!(streamed.unwrap(), plain.unwrap());
    let requests = server.requests();
    assert_eq!(requests[0].body["stream"], true);
    assert!(requests[1].body.get("stream").is_none(), "{}", requests[1].body);
    server.assert_done();
}

#[tokio::test]
async fn overloaded_twice_then_success_retries_with_a_notice_each() {
    let server = MockServer::start(vec![
        reply::error(529, "overloaded_error", "Overloaded"),
        reply::error(529, "overloaded_error", "Overloaded"),
        reply::text("ok"),
    ]);
    let (client, notices) = client(&server, 2, Duration::from_secs(5));
    let (result, text) = call(&client).await;
    assert_eq!(result.unwrap().text(), "ok");
    assert_eq!(text, "ok");
    let notices = notices.retries();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(
        notices[0].contains("529 overloaded_error") && notices[0].contains("retry 1 of 2"),
        "{notices:?}"
    );
    assert!(notices[1].contains("retry 2 of 2"), "{notices:?}");
    server.assert_done();
}

#[tokio::test]
async fn a_stream_dropped_before_any_text_is_retried() {
    // Cut inside message_start: nothing was shown.
    let server = MockServer::start(vec![reply::dropped_stream(&long_text(), 40), reply::text("second try")]);
    let (client, notices) = client(&server, 2, Duration::from_secs(5));
    let (result, text) = call(&client).await;
    assert_eq!(result.unwrap().text(), "second try");
    assert_eq!(text, "second try", "nothing of the dropped attempt was shown");
    assert_eq!(notices.retries().len(), 1);
    server.assert_done();
}

#[tokio::test]
async fn a_stream_dropped_after_text_was_shown_is_not_retried() {
    let body = long_text();
    let full = mock_api::serialize_sse(&reply::sse_from_message_with(&body, 4), false);
    let text_at = String::from_utf8_lossy(&full).find("Hell").unwrap();
    let server = MockServer::start(vec![Reply::DropAfter {
        content_type: "text/event-stream".into(),
        body: full.clone(),
        after: text_at + 200,
    }]);
    let (client, notices) = client(&server, 2, Duration::from_secs(5));
    let (result, text) = call(&client).await;
    let err = result.unwrap_err();
    assert!(matches!(err, ApiError::AfterOutput(_)), "{err}");
    assert!(err.to_string().contains("not retried"), "{err}");
    assert!(
        !text.is_empty() && "Hello there, this is a long streamed answer.".starts_with(&text),
        "{text:?}"
    );
    assert!(notices.retries().is_empty());
    server.assert_done();
}

fn start_and_text(text: &str) -> Vec<SseEvent> {
    let events = reply::sse_from_message(&reply::message(vec![reply::text_block(text)], "end_turn"));
    // message_start, content_block_start, the first text_delta.
    events.into_iter().take(3).collect()
}

#[tokio::test]
async fn an_error_event_before_output_is_retried_and_after_output_is_typed() {
    let mut before = start_and_text("x");
    before.truncate(1);
    before.push(reply::error_event("overloaded_error", "Overloaded"));
    let mut after = start_and_text("partial");
    after.push(reply::error_event("overloaded_error", "Overloaded"));
    let server = MockServer::start(vec![Reply::sse(before), Reply::sse(after)]);
    let (client, notices) = client(&server, 2, Duration::from_secs(5));
    let (result, text) = call(&client).await;
    assert_eq!(text, "partial");
    match result.unwrap_err() {
        ApiError::AfterOutput(inner) => match *inner {
            ApiError::Stream { error_type, message, request_id } => {
                assert_eq!((error_type.as_str(), message.as_str()), ("overloaded_error", "Overloaded"));
                assert_eq!(request_id.as_deref(), Some("req_mock_2"));
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(notices.retries().len(), 1);
    server.assert_done();
}

#[tokio::test]
async fn malformed_data_is_a_decode_error_and_not_retried() {
    let mut events = start_and_text("x");
    events.truncate(1);
    events.push(SseEvent::raw("event: content_block_start\ndata: {\"index\": 0, broken\n\n"));
    let server = MockServer::start(vec![Reply::sse(events)]);
    let (client, _) = client(&server, 2, Duration::from_secs(5));
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
    server.assert_done();
}

#[tokio::test]
async fn a_stream_that_ends_before_its_stop_reason_is_an_error_and_after_it_is_complete() {
    let body =
        reply::message(vec![reply::tool_use_block("toolu_1", "bash", json!({"command": "ls"}))], "tool_use");
    let mut events = reply::sse_from_message(&body);
    events.pop();
    let complete = events.clone();
    events.pop();
    let server = MockServer::start(vec![Reply::sse(events), Reply::sse(complete)]);
    let (client, _) = client(&server, 0, Duration::from_secs(5));
    let err = call(&client).await.0.unwrap_err();
    assert!(matches!(err, ApiError::Incomplete(_)), "{err}");
    // message_delta carried the stop reason and every block was closed: the SDKs finish here too.
    let done = call(&client).await.0.unwrap();
    assert_eq!(done.tool_uses().next().unwrap().input, json!({"command": "ls"}));
    server.assert_done();
}

#[tokio::test]
async fn the_idle_timeout_fires_on_a_silent_server_within_its_bound() {
    let server = MockServer::start(vec![Reply::Hang]);
    let (client, _) = client(&server, 0, Duration::from_secs(1));
    let t = Instant::now();
    let err = call(&client).await.0.unwrap_err();
    assert_eq!(err, ApiError::IdleTimeout(Duration::from_secs(1)));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    assert_eq!(err.to_string(), "no data from the endpoint for 1 s (idle timeout)");
    server.assert_done();
}

#[tokio::test]
async fn the_idle_timeout_applies_per_chunk_so_a_slow_live_stream_survives() {
    // 6 writes 300 ms apart: 1.5 s in all, longer than the 1 s idle timeout.
    let server = MockServer::start(vec![
        reply::stream(&long_text())
            .chunking(Chunking::Bytes(200))
            .delay_between_chunks(Duration::from_millis(300)),
    ]);
    let (client, _) = client(&server, 0, Duration::from_secs(1));
    let t = Instant::now();
    let (result, _) = call(&client).await;
    assert_eq!(result.unwrap().text(), "Hello there, this is a long streamed answer.");
    assert!(t.elapsed() > Duration::from_secs(1), "{:?}", t.elapsed());
    server.assert_done();
}

#[tokio::test]
async fn dropping_the_future_cancels_the_request() {
    let server = MockServer::start(vec![Reply::Hang]);
    let (client, _) = client(&server, 0, Duration::from_secs(60));
    let t = Instant::now();
    let cancelled = tokio::time::timeout(Duration::from_millis(300), call(&client)).await;
    assert!(cancelled.is_err(), "the call was still running");
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(server.request_count(), 1);
}

/// A turn cancelled while its tool runs leaves a `tool_use` without a result; the next request
/// answers it with `(cancelled)`, the process group is gone, and the session goes on.
#[tokio::test]
async fn a_turn_cancelled_mid_tool_keeps_the_history_sendable() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_1", "bash", json!({"command": "sleep 1.5 && touch marker"}))]),
        reply::text("fine"),
    ]);
    let (model, _) = client(&server, 0, Duration::from_secs(30));
    let workspace = Workspace::new(ws.path()).unwrap();
    let tools =
        tools::s02(&workspace, &ToolOptions { bash_timeout: Duration::from_secs(30), ..Default::default() });
    let mut agent =
        Agent::builder(Arc::new(model.client), "mock-model").system("system").tools(tools).build();
    let mut history = Vec::new();

    let turn = tokio::time::timeout(Duration::from_millis(700), agent.run_turn(&mut history, "first")).await;
    assert!(turn.is_err(), "the turn was cancelled while bash ran");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!ws.path().join("marker").exists(), "the cancelled command's process group was killed");

    agent.run_turn(&mut history, "second").await.unwrap();
    server.assert_done();
    server.assert_tool_pairing();
    let second = &server.requests()[1].body;
    // The prompt, the last block, is the request's prompt-caching breakpoint.
    assert_eq!(
        second["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "(cancelled)"},
            {"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}
        ]})
    );
}

/// After `message_stop` the client reads what is left of the body for at most a short while: an
/// endpoint that keeps the body open (here, pings every 100 ms for 10 s) does not hold the answer.
#[tokio::test]
async fn an_endpoint_that_keeps_sending_after_message_stop_does_not_hold_the_answer() {
    let mut events = mock_api::reply::sse_from_message(&long_text());
    events.extend((0..100).map(|_| SseEvent::ping()));
    let server = MockServer::start(vec![Reply::sse(events).delay_between_chunks(Duration::from_millis(100))]);
    let (client, _) = client(&server, 0, Duration::from_secs(5));
    let t = Instant::now();
    let (result, _) = call(&client).await;
    assert_eq!(result.unwrap().text(), "Hello there, this is a long streamed answer.");
    // The events before message_stop take about 1 s; the pings after it would take 10 s more.
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
}

/// Calls one after another reuse one keep-alive connection: each body is read to its end and the
/// connection is back in the pool before the next request. The calls run in a spawned task, as a
/// chapter's session does (`agent_core::cli`).
#[tokio::test]
async fn consecutive_calls_share_one_connection() {
    let server = MockServer::start((0..4).map(|_| Reply::Message(long_text())).collect());
    let (client, _) = client(&server, 0, Duration::from_secs(5));
    let texts = tokio::spawn(async move {
        let mut texts = Vec::new();
        for _ in 0..4 {
            texts.push(call(&client).await.0.map(|m| m.text()));
        }
        texts
    });
    for text in texts.await.unwrap() {
        assert_eq!(text.unwrap(), "Hello there, this is a long streamed answer.");
    }
    server.assert_done();
    assert_eq!(server.connections(), 1);
}
