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
fn lines_cut_across_chunks_and_whole_lines_mix_without_leftovers() {
    let mut p = SseParser::new();
    let mut got = p.push(b"event: a\ndata: lo").unwrap();
    got.extend(p.push(b"ng da").unwrap());
    got.extend(p.push(b"ta\n\nevent: b\ndata: 2\n\ndata: x").unwrap());
    got.extend(p.push(b"\n\n").unwrap());
    assert_eq!(got, vec![frame("a", "long data"), frame("b", "2"), frame("message", "x")]);
    assert!(!p.has_partial());
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

#[test]
fn escapes_in_delta_strings_and_keys_are_unescaped() {
    let delta = |data: &str| match StreamEvent::from_frame(&frame("content_block_delta", data)) {
        Ok(StreamEvent::ContentBlockDelta { index: 0, delta }) => delta,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        delta(r#"{"index":0,"delta":{"type":"text_delta","text":"a\"b\\n\n\u00e9\ud83d\ude00\/"}}"#),
        Delta::Text("a\"b\\n\né😀/".into())
    );
    assert_eq!(
        delta(r#"{"index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"C:\\\\x"}}"#),
        Delta::InputJson(r#"{"path": "C:\\x"#.into())
    );
    assert_eq!(delta(r#"{"index":0,"delta":{"\u0074ype":"thinking_delta","thin\u006bing":"é"}}"#), {
        Delta::Thinking("é".into())
    });
}

#[test]
fn data_that_is_not_json_is_an_error_even_in_a_field_nothing_reads() {
    for data in [r#"{"index":0,"note":"\ud800"}"#, r#"{"index":0,"n":1e400}"#, r#"{"index":0}x"#] {
        let err = StreamEvent::from_frame(&frame("content_block_stop", data)).unwrap_err();
        assert!(err.to_string().contains("content_block_stop\" event is not JSON"), "{data}: {err}");
    }
}

#[test]
fn fields_of_another_type_read_as_absent_and_the_last_of_two_keys_counts() {
    let from = |event: &str, data: &str| StreamEvent::from_frame(&frame(event, data));
    // A `type` that is not a string names no event: the frame stays a `message`.
    assert_eq!(
        from("message", r#"{"type":5,"index":0}"#),
        Ok(StreamEvent::Unknown { event: "message".into(), data: json!({"type":5,"index":0}) })
    );
    assert_eq!(from("message", r#"{"type":"content_block_stop","index":3}"#), {
        Ok(StreamEvent::ContentBlockStop { index: 3 })
    });
    for index in ["1.0", "-1", "\"0\"", "null", "18446744073709551616", "[0]", "{}"] {
        let err = from("content_block_stop", &format!(r#"{{"index":{index}}}"#)).unwrap_err();
        assert!(err.to_string().contains("a content_block_stop event without an index"), "{index}: {err}");
    }
    let err = from("content_block_stop", "[0]").unwrap_err();
    assert!(err.to_string().contains("without an index"), "{err}");
    assert_eq!(from("content_block_stop", r#"{"index":"x","index":2}"#), {
        Ok(StreamEvent::ContentBlockStop { index: 2 })
    });
    let err =
        from("content_block_delta", r#"{"index":0,"delta":{"type":"text_delta","text":7}}"#).unwrap_err();
    assert!(err.to_string().contains("without text"), "{err}");
    let err =
        from("content_block_delta", r#"{"index":0,"delta":{"type":"text_delta","text":"a"},"delta":[]}"#)
            .unwrap_err();
    assert!(err.to_string().contains("without a delta"), "{err}");
    assert_eq!(
        from("content_block_delta", r#"{"index":0,"delta":{"type":7,"text":"a"}}"#),
        Ok(StreamEvent::ContentBlockDelta { index: 0, delta: Delta::Other(json!({"type":7,"text":"a"})) })
    );
    let err = from("message_delta", r#"{"delta":{"stop_reason":5}}"#).unwrap_err();
    assert!(err.to_string().contains("message_delta stop_reason: invalid type: integer `5`"), "{err}");
    assert_eq!(
        from("error", r#"{"error":{"type":1,"message":"m"}}"#),
        Ok(StreamEvent::Error { error_type: "error".into(), message: "m".into() })
    );
}

/// The rewrite of `from_frame` against the one it replaced (it was rewritten for speed): the same event or the same
/// error for every frame, including malformed, duplicated, escaped and mistyped data.
mod same_as_the_value_path {
    use super::*;
    use proptest::prelude::*;
    use proptest::sample::select;

    /// `StreamEvent::from_frame` before that rewrite: the whole data parsed into a `Value`, then the
    /// fields picked from it. Kept here only as the oracle the rewrite is checked against.
    fn from_frame_via_value(frame: &Frame) -> Result<StreamEvent, ApiError> {
        if frame.event == "ping" {
            return Ok(StreamEvent::Ping);
        }
        let data: Value = serde_json::from_str(&frame.data).map_err(|e| {
            ApiError::Decode(format!(
                "the data of a {:?} event is not JSON ({e}): {}",
                frame.event,
                head(&frame.data)
            ))
        })?;
        let name = if frame.event == "message" {
            data.get("type").and_then(Value::as_str).unwrap_or("message").to_owned()
        } else {
            frame.event.clone()
        };
        let bad =
            |what: &str| ApiError::Decode(format!("a {name} event without {what}: {}", head(&frame.data)));
        let index =
            || data.get("index").and_then(Value::as_u64).map(|i| i as usize).ok_or_else(|| bad("an index"));
        Ok(match name.as_str() {
            "message_start" => {
                let mut message =
                    data.get("message").filter(|m| m.is_object()).ok_or_else(|| bad("a message"))?.clone();
                // Some endpoints leave `content` out of message_start; it is empty by definition.
                if let Value::Object(map) = &mut message
                    && map.get("content").is_none_or(Value::is_null)
                {
                    map.insert("content".to_owned(), Value::Array(Vec::new()));
                }
                let message: MessagesResponse = serde_json::from_value(message)
                    .map_err(|e| ApiError::Decode(format!("message_start: {e}")))?;
                StreamEvent::MessageStart(Box::new(message))
            }
            "content_block_start" => {
                let block = data
                    .get("content_block")
                    .filter(|b| b.is_object())
                    .ok_or_else(|| bad("a content_block"))?;
                StreamEvent::ContentBlockStart { index: index()?, block: block.clone() }
            }
            "content_block_delta" => {
                let delta = data.get("delta").filter(|d| d.is_object()).ok_or_else(|| bad("a delta"))?;
                let string = |field: &str| {
                    delta.get(field).and_then(Value::as_str).map(str::to_owned).ok_or_else(|| bad(field))
                };
                let delta = match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => Delta::Text(string("text")?),
                    Some("input_json_delta") => Delta::InputJson(string("partial_json")?),
                    Some("thinking_delta") => Delta::Thinking(string("thinking")?),
                    Some("signature_delta") => Delta::Signature(string("signature")?),
                    Some("citations_delta") => {
                        Delta::Citation(delta.get("citation").cloned().ok_or_else(|| bad("citation"))?)
                    }
                    _ => Delta::Other(delta.clone()),
                };
                StreamEvent::ContentBlockDelta { index: index()?, delta }
            }
            "content_block_stop" => StreamEvent::ContentBlockStop { index: index()? },
            "message_delta" => {
                let delta = data.get("delta").cloned().unwrap_or(Value::Null);
                let stop_reason = match delta.get("stop_reason") {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(
                        serde_json::from_value(v.clone())
                            .map_err(|e| ApiError::Decode(format!("message_delta stop_reason: {e}")))?,
                    ),
                };
                let stop_sequence = delta.get("stop_sequence").and_then(Value::as_str).map(str::to_owned);
                let stop_details = delta
                    .get("stop_details")
                    .filter(|d| d.is_object())
                    .and_then(|d| serde_json::from_value(d.clone()).ok());
                StreamEvent::MessageDelta {
                    stop_reason,
                    stop_sequence,
                    stop_details,
                    usage: data.get("usage").cloned().unwrap_or(Value::Null),
                }
            }
            "message_stop" => StreamEvent::MessageStop,
            "error" => {
                let error = data.get("error");
                let field = |f: &str| error.and_then(|e| e.get(f)).and_then(Value::as_str).map(str::to_owned);
                StreamEvent::Error {
                    error_type: field("type").unwrap_or_else(|| "error".to_owned()),
                    message: field("message").unwrap_or_else(|| head(&frame.data)),
                }
            }
            _ => StreamEvent::Unknown { event: name, data },
        })
    }

    type Entry = (String, String);

    fn quoted(names: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
        select(names).prop_map(|s| format!("\"{s}\""))
    }

    fn string() -> impl Strategy<Value = String> + Clone {
        let valid: &'static [&'static str] =
            &["a", "é", " ", "\\\"", "\\\\", "\\n", "\\/", "\\u00e9", "\\u0000", "\\ud83d\\ude00", "\u{7f}"];
        let invalid: &'static [&'static str] = &["\\ud800", "\\udc00", "\\ud800\\n", "\\x", "\\u12", "\n"];
        let names: &'static [&'static str] = &[
            "message_start",
            "content_block_delta",
            "content_block_stop",
            "text_delta",
            "input_json_delta",
            "citations_delta",
            "tool_use",
            "end_turn",
            "text",
        ];
        let pieces = |pieces: &'static [&'static str]| {
            prop::collection::vec(select(pieces), 0..4).prop_map(|p| format!("\"{}\"", p.concat()))
        };
        prop_oneof![
            3 => select(names).prop_map(|s| format!("\"{s}\"")),
            3 => pieces(valid),
            1 => pieces(invalid),
        ]
    }

    fn number() -> impl Strategy<Value = String> + Clone {
        let valid: &'static [&'static str] = &[
            "0",
            "2",
            "-1",
            "-0",
            "1.0",
            "0.5",
            "1e2",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
        ];
        let invalid: &'static [&'static str] = &["1e400", "01", "1.", "-"];
        prop_oneof![4 => select(valid), 1 => select(invalid)].prop_map(str::to_owned)
    }

    fn key() -> impl Strategy<Value = String> + Clone {
        quoted(&[
            "type",
            "index",
            "message",
            "content_block",
            "delta",
            "usage",
            "error",
            "text",
            "partial_json",
            "citation",
            "stop_reason",
            "stop_sequence",
            "stop_details",
            "content",
            "id",
            "input",
            "x",
            "te\\u0078t",
            "\\u0074ype",
            "output_tokens",
        ])
    }

    fn object(entries: impl Strategy<Value = Entry>) -> impl Strategy<Value = String> {
        prop::collection::vec(entries, 0..5).prop_map(|entries| {
            let entries: Vec<String> = entries.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("{{{}}}", entries.join(","))
        })
    }

    fn value() -> impl Strategy<Value = String> + Clone {
        let leaf = prop_oneof![Just("null".to_owned()), Just("true".to_owned()), number(), string()];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                object((key(), inner)),
            ]
        })
    }

    fn named(name: &'static str, value: impl Strategy<Value = String>) -> impl Strategy<Value = Entry> {
        value.prop_map(move |v| (format!("\"{name}\""), v))
    }

    fn delta() -> impl Strategy<Value = String> {
        let kinds = quoted(&[
            "text_delta",
            "input_json_delta",
            "thinking_delta",
            "signature_delta",
            "citations_delta",
            "future_delta",
        ]);
        let field = quoted(&["text", "partial_json", "thinking", "signature", "stop_sequence", "citation"]);
        prop_oneof![
            1 => value(),
            4 => object(prop_oneof![
                named("type", prop_oneof![kinds, value()]),
                (field, prop_oneof![string(), value()]),
                named("stop_reason", prop_oneof![quoted(&["end_turn", "refusal"]), value()]),
                named("stop_details", prop_oneof![Just(r#"{"type":"refusal","explanation":"No."}"#.to_owned()), value()]),
                (key(), value()),
            ]),
        ]
    }

    fn message() -> impl Strategy<Value = String> {
        let content = prop_oneof![
            Just("null".to_owned()),
            Just("[]".to_owned()),
            Just(r#"[{"type":"text","text":"hi"}]"#.to_owned()),
            value()
        ];
        prop_oneof![
            1 => value(),
            4 => object(prop_oneof![
                named("id", prop_oneof![quoted(&["m", "m2"]), value()]),
                named("content", content),
                named("role", prop_oneof![quoted(&["assistant"]), value()]),
                named("stop_reason", prop_oneof![Just("null".to_owned()), value()]),
                named("usage", usage()),
                (key(), value()),
            ]),
        ]
    }

    fn usage() -> impl Strategy<Value = String> + Clone {
        let counts = quoted(&["input_tokens", "output_tokens", "cache_read_input_tokens"]);
        prop_oneof![value(), object((counts, prop_oneof![number(), value()])).boxed()]
    }

    /// Extra entries around the ones an event needs, before or after them.
    fn with_extras(needed: impl Strategy<Value = Vec<Entry>>) -> impl Strategy<Value = String> {
        (needed, prop::collection::vec((key(), value()), 0..2), any::<bool>()).prop_map(
            |(needed, extras, first)| {
                let (a, b) = if first { (extras, needed) } else { (needed, extras) };
                let entries: Vec<String> = a.into_iter().chain(b).map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", entries.join(","))
            },
        )
    }

    fn entry(key: &str, value: impl Into<String>) -> Entry {
        (format!("\"{key}\""), value.into())
    }

    /// Data shaped like a real event of each kind, with some of its values off.
    fn event_data() -> impl Strategy<Value = String> {
        let index = || prop_oneof![4 => Just("0".to_owned()), 1 => number(), 1 => value()];
        let kinds: &'static [(&'static str, &'static str)] = &[
            ("text_delta", "text"),
            ("input_json_delta", "partial_json"),
            ("thinking_delta", "thinking"),
            ("signature_delta", "signature"),
            ("citations_delta", "citation"),
            ("future_delta", "text"),
        ];
        let good_delta = with_extras((select(kinds), prop_oneof![4 => string(), 1 => value()]).prop_map(
            |((kind, field), text)| vec![entry("type", format!("\"{kind}\"")), entry(field, text)],
        ));
        let cb_delta =
            (index(), prop_oneof![4 => good_delta.boxed(), 1 => delta().boxed()]).prop_map(|(i, d)| {
                vec![entry("type", "\"content_block_delta\""), entry("index", i), entry("delta", d)]
            });
        let block = prop_oneof![
            Just(r#"{"type":"text","text":""}"#.to_owned()),
            Just(r#"{"type":"tool_use","id":"t","name":"bash","input":{}}"#.to_owned()),
            value(),
        ];
        let cb_start = (index(), block).prop_map(|(i, b)| {
            vec![entry("type", "\"content_block_start\""), entry("index", i), entry("content_block", b)]
        });
        let cb_stop = index().prop_map(|i| vec![entry("type", "\"content_block_stop\""), entry("index", i)]);
        let start = message().prop_map(|m| vec![entry("type", "\"message_start\""), entry("message", m)]);
        let m_delta = (delta(), usage()).prop_map(|(d, u)| {
            vec![entry("type", "\"message_delta\""), entry("delta", d), entry("usage", u)]
        });
        prop_oneof![
            with_extras(cb_delta),
            with_extras(cb_start),
            with_extras(cb_stop),
            with_extras(start),
            with_extras(m_delta),
        ]
    }

    fn data() -> impl Strategy<Value = String> {
        let events = quoted(&[
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "ping",
            "error",
            "future_event",
        ]);
        let block = prop_oneof![
            value(),
            object(prop_oneof![
                named("type", prop_oneof![quoted(&["text", "tool_use", "thinking"]), value()]),
                (key(), value()),
            ])
        ];
        let error = prop_oneof![
            value(),
            object(prop_oneof![
                named("type", prop_oneof![string(), value()]),
                named("message", prop_oneof![string(), value()]),
                (key(), value()),
            ])
        ];
        prop_oneof![
            1 => value(),
            6 => object(prop_oneof![
                named("type", prop_oneof![events, value()]),
                named("index", prop_oneof![number(), value()]),
                named("delta", delta()),
                named("message", message()),
                named("content_block", block),
                named("usage", usage()),
                named("error", error),
                (key(), value()),
            ]),
        ]
    }

    /// Data, sometimes cut short or followed by junk.
    fn maybe_broken(data: String, cut: prop::sample::Index, how: u8) -> String {
        match how {
            0 => {
                let mut at = cut.index(data.len() + 1);
                while !data.is_char_boundary(at) {
                    at -= 1;
                }
                data[..at].to_owned()
            }
            1 => format!("{data} x"),
            _ => data,
        }
    }

    #[test]
    fn message_starts_that_the_typed_reading_leaves_to_the_value_path_read_the_same() {
        let messages = [
            r#"{"id":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}"#,
            r#"{"id":"m","role":"assistant"}"#,
            r#"{"id":"m","content":null,"stop_reason":null}"#,
            r#"{"id":"m","content":null,"stop_reason":"end_turn"}"#,
            r#"{"id":"m","id":"m2","content":[]}"#,
            r#"{"id":5,"content":[]}"#,
            r#"{"id":"m","content":[],"usage":{"input_tokens":1.5}}"#,
            r#"{"id":"m","content":[],"usage":{"cache_read_input_tokens":3,"cache_read_input_tokens":4}}"#,
            r#"{"id":"m","content":[{"type":"text","text":"a\u00e9"},{"type":"x","y":[1]}]}"#,
            r#"{"id":"m","content":[],"stop_details":{"type":"refusal","extra":"\ud83d\ude00"}}"#,
            r#"{"id":"m","content":[],"note":"\ud800"}"#,
            r#"{"id":"m","content":{}}"#,
            r#"{"id":"m","role":"user","content":[]}"#,
            r#"{"id":"m","role":{"assistant":null},"content":[]}"#,
            r#"{"content":[],"usage":{"output_tokens":18446744073709551616}}"#,
        ];
        for message in messages {
            for data in [
                format!(r#"{{"type":"message_start","message":{message}}}"#),
                format!(r#"{{"message":{message},"message":{message}}}"#),
            ] {
                let frame = frame("message_start", &data);
                assert_eq!(StreamEvent::from_frame(&frame), from_frame_via_value(&frame), "{data}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 10000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn every_frame_reads_as_it_did_through_a_value(
            event in prop_oneof![2 => Just("message"), 1 => select(&[
                "message", "message_start", "content_block_start", "content_block_delta",
                "content_block_stop", "message_delta", "message_stop", "ping", "error", "future_event",
            ][..])],
            data in prop_oneof![data(), event_data()],
            cut in any::<prop::sample::Index>(),
            how in 0u8..16,
        ) {
            let frame = frame(event, &maybe_broken(data, cut, how));
            prop_assert_eq!(StreamEvent::from_frame(&frame), from_frame_via_value(&frame), "{:?}", frame);
        }
    }
}
