use super::*;
use serde_json::json;

fn frames(text: &str) -> Vec<Frame> {
    parse_all(text.as_bytes()).unwrap()
}

fn frame(event: &str, data: &str) -> Frame {
    Frame { event: event.into(), data: data.into() }
}

#[test]
fn framing_handles_crlf_cr_comments_and_multi_line_data() {
    assert_eq!(frames("event: a\r\ndata: 1\r\n\r\n"), vec![frame("a", "1")]);
    assert_eq!(frames("event: a\rdata: 1\r\r"), vec![frame("a", "1")]);
    assert_eq!(frames(": hi\nevent: a\n: mid\ndata: x\ndata:y\ndata\n\n"), vec![frame("a", "x\ny\n")]);
    assert_eq!(frames("data: only\n\n"), vec![frame("message", "only")]);
    assert_eq!(frames("event: lonely\n\n"), vec![], "no data, no event");
    assert_eq!(frames("\u{feff}data: bom\n\n"), vec![frame("message", "bom")]);
    assert_eq!(frames("data:  two spaces\n\n"), vec![frame("message", " two spaces")]);
}

#[test]
fn an_unfinished_event_is_not_dispatched() {
    let mut p = SseParser::new();
    assert_eq!(p.push(b"event: a\ndata: 1\n").unwrap(), vec![]);
    assert!(p.has_partial());
}

#[test]
fn a_cr_at_a_chunk_end_does_not_double_the_line_ending() {
    let mut p = SseParser::new();
    let mut got = p.push(b"data: 1\r").unwrap();
    got.extend(p.push(b"\n\r").unwrap());
    got.extend(p.push(b"\n").unwrap());
    assert_eq!(got, vec![frame("message", "1")]);
}

#[test]
fn invalid_utf8_is_a_decode_error() {
    let err = parse_all(b"data: \xff\n\n").unwrap_err();
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
}

fn run(events: &[(&str, Value)]) -> Result<MessagesResponse, ApiError> {
    let mut acc = MessageAccumulator::new();
    for (name, data) in events {
        let ev = StreamEvent::from_frame(&frame(name, &data.to_string()))?;
        acc.apply(ev)?;
    }
    acc.finish()
}

fn start() -> (&'static str, Value) {
    (
        "message_start",
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"model":"x","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}),
    )
}

fn tool_events(fragments: &[&str], stop: &str) -> Vec<(&'static str, Value)> {
    let mut ev = vec![
        start(),
        (
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}),
        ),
    ];
    for f in fragments {
        ev.push((
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":f}}),
        ));
    }
    ev.push(("content_block_stop", json!({"type":"content_block_stop","index":0})));
    ev.push((
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":9}}),
    ));
    ev.push(("message_stop", json!({"type":"message_stop"})));
    ev
}

#[test]
fn tool_input_is_assembled_and_parsed_at_block_stop() {
    let r = run(&tool_events(&["{\"comm", "and\": \"l", "s\"}"], "tool_use")).unwrap();
    assert_eq!(r.tool_uses().next().unwrap().input, json!({"command": "ls"}));
    assert_eq!(r.stop_reason, Some(StopReason::ToolUse));
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (5, 9));
}

#[test]
fn empty_tool_input_is_an_empty_object() {
    let r = run(&tool_events(&[""], "tool_use")).unwrap();
    assert_eq!(r.tool_uses().next().unwrap().input, json!({}));
}

#[test]
fn broken_tool_input_is_an_error_unless_the_output_was_cut_by_max_tokens() {
    let err = run(&tool_events(&["{\"command\": \"tou"], "tool_use")).unwrap_err();
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
    let r = run(&tool_events(&["{\"command\": \"tou"], "max_tokens")).unwrap();
    assert_eq!(r.tool_uses().next().unwrap().input, json!({}));
}

#[test]
fn a_stream_cut_before_its_stop_reason_is_incomplete() {
    let mut events = tool_events(&["{}"], "tool_use");
    events.pop();
    events.pop();
    assert!(matches!(run(&events), Err(ApiError::Incomplete(_))));
    assert!(matches!(run(&[]), Err(ApiError::Incomplete(_))));
    // Cut inside the block: the stop reason of an earlier answer does not count.
    let mut events = tool_events(&["{}"], "tool_use");
    events.truncate(3);
    assert!(matches!(run(&events), Err(ApiError::Incomplete(_))));
}

#[test]
fn a_stream_that_ends_after_its_message_delta_is_complete_as_in_the_sdks() {
    let mut events = tool_events(&["{\"command\": \"ls\"}"], "tool_use");
    events.pop();
    let r = run(&events).unwrap();
    assert_eq!(r.tool_uses().next().unwrap().input, json!({"command": "ls"}));
}

#[test]
fn a_final_event_without_its_blank_line_is_dispatched_unless_cut() {
    let body = "event: message_stop\ndata: {\"type\":\"message_stop\"}";
    assert_eq!(
        parse_all(body.as_bytes()).unwrap(),
        vec![frame("message_stop", "{\"type\":\"message_stop\"}")]
    );
    assert_eq!(parse_all(format!("{body}\n").as_bytes()).unwrap().len(), 1);
    let mut parser = SseParser::new();
    assert!(parser.push(b"event: message_delta\ndata: {\"type\":\"mess").unwrap().is_empty());
    let err = finish_stream(&mut parser, MessageAccumulator::new()).unwrap_err();
    assert!(matches!(err, ApiError::Incomplete(_)), "{err}");
}

#[test]
fn message_start_may_lack_content_and_repeat_but_not_splice_two_messages() {
    let bare = ("message_start", json!({"type":"message_start","message":{"id":"m","role":"assistant"}}));
    let text = |i: usize, t: &str| {
        vec![
            ("content_block_start", json!({"index":i,"content_block":{"type":"text"}})),
            ("content_block_delta", json!({"index":i,"delta":{"type":"text_delta","text":t}})),
            ("content_block_stop", json!({"index":i})),
        ]
    };
    let end = ("message_delta", json!({"delta":{"stop_reason":"end_turn"}}));
    let mut events = vec![bare.clone(), start()];
    events.extend(text(0, "hi"));
    events.push(bare.clone());
    events.push(end.clone());
    assert_eq!(run(&events).unwrap().text(), "hi");

    let other = ("message_start", json!({"type":"message_start","message":{"id":"m2","content":[]}}));
    let mut events = vec![bare];
    events.extend(text(0, "one"));
    events.push(other);
    events.extend(text(1, "two"));
    events.push(end);
    let err = run(&events).unwrap_err();
    assert!(err.to_string().contains("spliced"), "{err}");
}

#[test]
fn refusal_details_arrive_in_message_delta() {
    let r = run(&[
        start(),
        (
            "message_delta",
            json!({"delta":{"stop_reason":"refusal","stop_details":{"type":"refusal","category":null,"explanation":"No."}}}),
        ),
        ("message_stop", json!({})),
    ])
    .unwrap();
    assert_eq!(r.stop_reason, Some(StopReason::Refusal));
    assert_eq!(r.stop_details.unwrap().explanation.as_deref(), Some("No."));
}

#[test]
fn an_answer_past_the_limit_is_an_error_that_names_the_limit() {
    let mut acc = MessageAccumulator::with_limit(10);
    let event = |name: &str, data: Value| StreamEvent::from_frame(&frame(name, &data.to_string())).unwrap();
    acc.apply(event(start().0, start().1)).unwrap();
    acc.apply(event("content_block_start", json!({"index":0,"content_block":{"type":"text","text":""}})))
        .unwrap();
    let delta =
        || event("content_block_delta", json!({"index":0,"delta":{"type":"text_delta","text":"123456"}}));
    acc.apply(delta()).unwrap();
    let err = acc.apply(delta()).unwrap_err();
    assert_eq!(err, ApiError::TooLarge(10));
    assert!(err.to_string().contains("grew past 10 bytes"), "{err}");
}

#[test]
fn an_error_event_is_typed() {
    let err = run(&[
        start(),
        ("error", json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})),
    ])
    .unwrap_err();
    assert_eq!(
        err,
        ApiError::Stream {
            error_type: "overloaded_error".into(),
            message: "Overloaded".into(),
            request_id: None
        }
    );
}

#[test]
fn events_out_of_order_are_errors_not_panics() {
    let cases: Vec<Vec<(&str, Value)>> = vec![
        vec![("content_block_start", json!({"index":0,"content_block":{"type":"text","text":""}}))],
        vec![start(), ("content_block_delta", json!({"index":3,"delta":{"type":"text_delta","text":"x"}}))],
        vec![start(), ("content_block_start", json!({"index":2,"content_block":{"type":"text","text":""}}))],
        vec![start(), ("content_block_stop", json!({"index":0}))],
        vec![
            start(),
            (
                "content_block_start",
                json!({"index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}),
            ),
            ("content_block_delta", json!({"index":0,"delta":{"type":"text_delta","text":"x"}})),
        ],
        vec![start(), ("content_block_delta", json!({"index":0}))],
    ];
    for (i, case) in cases.iter().enumerate() {
        let err = run(case).unwrap_err();
        assert!(matches!(err, ApiError::Decode(_)), "case {i}: {err}");
    }
    let err = StreamEvent::from_frame(&frame("content_block_delta", "{not json")).unwrap_err();
    assert!(matches!(err, ApiError::Decode(_)), "{err}");
}

#[test]
fn thinking_blocks_are_kept_with_their_signature_and_unknown_events_ignored() {
    let r = run(&[
        start(),
        ("content_block_start", json!({"index":0,"content_block":{"type":"thinking","thinking":""}})),
        ("content_block_delta", json!({"index":0,"delta":{"type":"thinking_delta","thinking":"hm"}})),
        ("content_block_delta", json!({"index":0,"delta":{"type":"thinking_delta","thinking":"m"}})),
        ("content_block_delta", json!({"index":0,"delta":{"type":"signature_delta","signature":"sig"}})),
        ("content_block_stop", json!({"index":0})),
        ("future_event", json!({"type":"future_event"})),
        ("ping", json!({"type":"ping"})),
        ("content_block_start", json!({"index":1,"content_block":{"type":"text","text":""}})),
        ("content_block_delta", json!({"index":1,"delta":{"type":"text_delta","text":"hi"}})),
        ("content_block_stop", json!({"index":1})),
        ("message_delta", json!({"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}})),
        ("message_stop", json!({})),
    ])
    .unwrap();
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"hi"}])
    );
}
