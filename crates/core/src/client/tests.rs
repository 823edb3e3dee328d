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
    let client = offline_client().with_prompt_caching(false);
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
    let client = offline_client().with_prompt_caching(false);
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

/// `request` serialised with `stream: true` and the breakpoints [`cache`] places written in as
/// `cache_control` fields (on the last tool and on each breakpoint's block): what a caching
/// client must send, built from the parsed JSON rather than from the kept bytes.
fn marked(request: &MessagesRequest) -> Vec<u8> {
    let mut value = serde_json::to_value(MessagesRequest { stream: Some(true), ..request.clone() }).unwrap();
    let marker = serde_json::json!({"type": "ephemeral"});
    if let Some(last) = value.get_mut("tools").and_then(|t| t.as_array_mut()).and_then(|t| t.last_mut()) {
        last["cache_control"] = marker.clone();
    }
    for (i, j) in cache::breakpoints(&request.messages).iter() {
        value["messages"][i]["content"][j]["cache_control"] = marker.clone();
    }
    serde_json::to_vec(&value).unwrap()
}

/// A caching client's body is, byte for byte, the request with `cache_control` on the last tool
/// and on each breakpoint's block, however the history changes (growth, a rewrite inside a frozen
/// segment, a cut, a history of messages that carry none).
#[test]
fn a_caching_body_is_the_request_with_its_breakpoints_marked() {
    use crate::messages::{ContentBlock, Message, ToolSpec};
    let client = offline_client();
    assert!(client.prompt_caching(), "caching is the default");
    let text = |i: usize| format!("{i:04} \"quoted\" {}", "x".repeat(9_000));
    let round = |i: usize| {
        let id = format!("toolu_{i}");
        [
            Message::assistant_blocks(vec![
                ContentBlock::text("Reading."),
                ContentBlock::tool_use(&id, "read_file", serde_json::json!({"path": "a"})),
            ]),
            Message::user_blocks(vec![ContentBlock::tool_result(&id, text(i), false)]),
        ]
    };
    let tool = |name: &str| ToolSpec {
        name: name.into(),
        description: "d".into(),
        input_schema: serde_json::json!({"type": "object"}),
    };
    let mut request = MessagesRequest {
        model: "m".into(),
        max_tokens: 10,
        system: "sys".into(),
        messages: vec![Message::user_text("go")].into(),
        tools: vec![tool("a"), tool("b")].into(),
        stream: None,
    };
    let check = |request: &MessagesRequest| {
        let body = client.request_body(request).unwrap().to_bytes();
        assert!(body == marked(request), "the body differs from the marked request");
        let breakpoints = String::from_utf8_lossy(&body).matches("cache_control").count();
        assert!(breakpoints <= cache::MAX_BREAKPOINTS, "{breakpoints} breakpoints");
    };
    check(&request);
    for i in 0..30 {
        std::sync::Arc::make_mut(&mut request.messages).extend(round(i));
        check(&request);
    }
    assert!(request.messages.len() * 9_000 > 4 * SEGMENT, "the history spans several segments");
    // A compaction: one summary message replaces the history, then the session goes on.
    *std::sync::Arc::make_mut(&mut request.messages) = vec![Message::user_text("[Compacted] summary")];
    check(&request);
    std::sync::Arc::make_mut(&mut request.messages).extend(round(100));
    check(&request);
    std::sync::Arc::make_mut(&mut request.messages)[2] =
        Message::user_blocks(vec![ContentBlock::text("changed")]);
    check(&request);
    std::sync::Arc::make_mut(&mut request.messages).clear();
    request.tools = Vec::new().into();
    check(&request);
}

/// Over a session of tool rounds, prompts and a `pause_turn`, each request's body repeats the
/// previous one's bytes up to each of that one's breakpoints (markers aside, which the API does
/// not count as prompt), and its tools byte for byte: so every prefix written is read back.
#[test]
fn each_request_repeats_the_previous_ones_bytes_up_to_each_breakpoint() {
    use crate::messages::{ContentBlock, Message, ToolSpec};
    let client = offline_client();
    let tools: std::sync::Arc<[ToolSpec]> =
        vec![ToolSpec { name: "t".into(), description: "d".into(), input_schema: serde_json::json!({}) }]
            .into();
    let mut history: Vec<Message> = Vec::new();
    let mut bodies: Vec<String> = Vec::new();
    let mut send = |history: &[Message]| {
        let request = MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: "sys".into(),
            messages: std::sync::Arc::new(crate::normalize::normalize_messages(history)),
            tools: std::sync::Arc::clone(&tools),
            stream: None,
        };
        bodies.push(String::from_utf8(client.body(&request).unwrap().to_vec()).unwrap());
    };
    let call =
        |id: &str| Message::assistant_blocks(vec![ContentBlock::tool_use(id, "t", serde_json::json!({}))]);
    let result = |id: &str| Message::user_blocks(vec![ContentBlock::tool_result(id, "out", false)]);
    for turn in 0..3 {
        history.push(Message::user_text(format!("prompt {turn}")));
        send(&history);
        for round in 0..4 {
            let id = format!("t{turn}_{round}");
            history.push(call(&id));
            history.push(result(&id));
            send(&history);
        }
        // A long answer paused and sent back, then finished.
        history.push(Message::assistant_blocks(vec![ContentBlock::text("part one")]));
        send(&history);
        history.push(Message::assistant_blocks(vec![ContentBlock::text("done")]));
    }
    let tools_of = |body: &str| body[body.find(",\"tools\":").unwrap()..].to_owned();
    let mut reads = 0;
    for pair in bodies.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(tools_of(before), tools_of(after), "the tools are sent byte for byte");
        let plain_after = after.replace(cache::MARKER, "");
        let messages_end = before.find("],\"tools\":").unwrap();
        // Each marker of `before` in the messages: the stripped bytes up to it must repeat.
        let mut plain_before = String::new();
        let mut rest = &before[..messages_end];
        while let Some(at) = rest.find(cache::MARKER) {
            plain_before.push_str(&rest[..at]);
            assert!(
                plain_after.starts_with(&plain_before),
                "the next request changed the bytes before a breakpoint:\n{before}\n{after}"
            );
            reads += 1;
            rest = &rest[at + cache::MARKER.len()..];
        }
    }
    assert!(reads >= bodies.len() - 2, "most requests had a message breakpoint to read back ({reads})");
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
