use super::*;

#[test]
fn backoff_doubles_caps_and_jitters_down_by_at_most_a_quarter() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay(0, None, 0.0), Duration::from_millis(500));
    assert_eq!(p.delay(1, None, 0.0), Duration::from_secs(1));
    assert_eq!(p.delay(10, None, 0.0), Duration::from_secs(8));
    assert_eq!(p.delay(0, None, 1.0), Duration::from_millis(375));
}

#[test]
fn retry_after_is_honoured_up_to_sixty_seconds() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay(0, Some(Duration::from_secs(1)), 0.5), Duration::from_secs(1));
    assert_eq!(p.delay(0, Some(Duration::from_secs(61)), 0.0), Duration::from_millis(500));
}

/// A client for an endpoint nothing listens on: for tests of what it would send.
fn offline_client() -> AnthropicClient {
    let config = crate::config::Config {
        model: "m".into(),
        base_url: "http://127.0.0.1:9".into(),
        api_key: None,
        auth: crate::config::AuthType::ApiKey,
    };
    AnthropicClient::new(&config, RetryPolicy::default(), Timeouts::default()).unwrap()
}

#[test]
fn the_body_is_the_request_with_the_clients_stream_flag_however_the_history_changes() {
    use crate::messages::{ContentBlock, Message, ToolSpec};
    let client = offline_client();
    let mut request = MessagesRequest {
        model: "m".into(),
        max_tokens: 8000,
        system: "sys".into(),
        messages: vec![Message::user_text("hi")].into(),
        tools: vec![ToolSpec {
            name: "t".into(),
            description: "d".into(),
            input_schema: serde_json::json!({}),
        }]
        .into(),
        stream: None,
    };
    let check = |client: &AnthropicClient, request: &MessagesRequest| {
        let sent: serde_json::Value = serde_json::from_slice(&client.body(request).unwrap()).unwrap();
        let expected =
            serde_json::to_value(MessagesRequest { stream: Some(true), ..request.clone() }).unwrap();
        assert_eq!(sent, expected);
    };
    check(&client, &request);
    // The history grows: the cached prefix is reused.
    std::sync::Arc::make_mut(&mut request.messages)
        .push(Message::assistant_blocks(vec![ContentBlock::text("yo")]));
    std::sync::Arc::make_mut(&mut request.messages).push(Message::user_text("more"));
    check(&client, &request);
    // A message in the middle changes (a merge or a repair): everything after it is redone.
    std::sync::Arc::make_mut(&mut request.messages)[1] =
        Message::assistant_blocks(vec![ContentBlock::text("changed")]);
    check(&client, &request);
    // A shorter history and no system prompt or tools.
    std::sync::Arc::make_mut(&mut request.messages).truncate(1);
    request.system.clear();
    request.tools = Vec::new().into();
    check(&client, &request);
    let plain = client.with_streaming(false);
    let sent: serde_json::Value = serde_json::from_slice(&plain.body(&request).unwrap()).unwrap();
    assert_eq!(sent, serde_json::to_value(&request).unwrap());
}

/// A history large enough to freeze several 64 KiB segments of kept JSON: whatever changes
/// (appended messages, a message rewritten in a frozen segment, a shorter history), the body is
/// byte for byte what serialising the request gives.
#[test]
fn the_body_stays_exact_when_a_change_falls_inside_frozen_segments() {
    use crate::messages::{ContentBlock, Message};
    let client = offline_client();
    let text = |i: usize| format!("{i:04} \"quoted\" {}", "x".repeat(20_000));
    let mut request = MessagesRequest {
        model: "m".into(),
        max_tokens: 10,
        system: "sys".into(),
        messages: std::sync::Arc::new(
            (0..20).map(|i| Message::user_blocks(vec![ContentBlock::text(text(i))])).collect(),
        ),
        tools: Vec::new().into(),
        stream: None,
    };
    let check = |client: &AnthropicClient, request: &MessagesRequest| {
        let expected =
            serde_json::to_vec(&MessagesRequest { stream: Some(true), ..request.clone() }).unwrap();
        let body = client.request_body(request).unwrap();
        assert_eq!(body.len(), expected.len());
        assert!(body.to_bytes() == expected, "the body differs from the serialised request");
    };
    check(&client, &request);
    assert!(request.messages.len() * 20_000 > 4 * SEGMENT, "the history spans several segments");
    std::sync::Arc::make_mut(&mut request.messages).push(Message::user_text("appended"));
    check(&client, &request);
    std::sync::Arc::make_mut(&mut request.messages)[5] = Message::user_text("rewritten in a frozen segment");
    check(&client, &request);
    std::sync::Arc::make_mut(&mut request.messages).truncate(3);
    check(&client, &request);
    std::sync::Arc::make_mut(&mut request.messages)
        .extend((0..8).map(|i| Message::user_blocks(vec![ContentBlock::text(text(100 + i))])));
    check(&client, &request);
    std::sync::Arc::make_mut(&mut request.messages).clear();
    check(&client, &request);
}

#[test]
fn retryable_statuses_follow_the_sdk_policy() {
    for s in [408, 409, 429, 500, 502, 503, 529] {
        assert!(is_retryable_status(s), "{s}");
    }
    for s in [400, 401, 402, 403, 404, 413] {
        assert!(!is_retryable_status(s), "{s}");
    }
}

#[test]
fn api_error_json_is_parsed_and_other_bodies_are_kept() {
    let e = parse_error(
        401,
        br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        Some("req_1".into()),
    );
    assert_eq!(e.to_string(), "API error 401 authentication_error: invalid x-api-key");
    assert_eq!(e.request_id(), Some("req_1"));
    let e = parse_error(502, b"<html>bad gateway</html>", None);
    assert_eq!(e.to_string(), "HTTP 502 from the endpoint: an HTML page: bad gateway");
    let page = b"<!doctype html><html><head><script>var x = '<b>';</script></head>\n<body>\n  <h1>Upstream\n timed out</h1></body></html>";
    assert_eq!(
        parse_error(504, page, None).to_string(),
        "HTTP 504 from the endpoint: an HTML page: Upstream timed out"
    );
    let e = parse_error(500, b"upstream\nconnect error\n\n  or disconnect", Some("r".into()));
    assert_eq!(e.to_string(), "HTTP 500 from the endpoint: upstream connect error or disconnect");
    assert_eq!(e.request_id(), Some("r"));
}
