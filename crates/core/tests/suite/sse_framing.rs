//! Property tests of the SSE layer (issue 5): any split of a valid stream into chunks gives the
//! same events, and a streamed message assembles to exactly the JSON path's message.

use agent_core::messages::MessagesResponse;
use agent_core::sse::{Frame, MessageAccumulator, SseParser, StreamEvent, parse_all};
use mock_api::{SseEvent, reply, serialize_sse};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One event as generated: a name, its data lines, comments before it, and per-line endings.
#[derive(Debug, Clone)]
struct GenEvent {
    comment: Option<String>,
    name: Option<String>,
    data: Vec<String>,
    ending: usize,
}

const ENDINGS: [&str; 3] = ["\n", "\r\n", "\r"];

fn gen_event() -> impl Strategy<Value = GenEvent> {
    (
        proptest::option::of("[^\r\n]{0,12}"),
        proptest::option::of("[a-z_]{1,12}"),
        proptest::collection::vec("[^\r\n]{0,24}", 1..4),
        0..3usize,
    )
        .prop_map(|(comment, name, data, ending)| GenEvent { comment, name, data, ending })
}

fn serialize(events: &[GenEvent]) -> (Vec<u8>, Vec<Frame>) {
    let mut text = String::new();
    let mut frames = Vec::new();
    for e in events {
        let nl = ENDINGS[e.ending];
        if let Some(c) = &e.comment {
            text.push_str(&format!(":{c}{nl}"));
        }
        if let Some(n) = &e.name {
            text.push_str(&format!("event: {n}{nl}"));
        }
        for d in &e.data {
            text.push_str(&format!("data: {d}{nl}"));
        }
        text.push_str(nl);
        frames.push(Frame {
            event: e.name.clone().unwrap_or_else(|| "message".into()),
            data: e.data.join("\n"),
        });
    }
    (text.into_bytes(), frames)
}

/// Cuts `bytes` at the given positions (taken modulo the length, sorted, deduplicated).
fn split(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut at: Vec<usize> =
        cuts.iter().map(|c| if bytes.is_empty() { 0 } else { c % bytes.len() }).collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

fn parse_chunks(chunks: &[Vec<u8>]) -> Vec<Frame> {
    let mut parser = SseParser::new();
    let mut frames = Vec::new();
    for chunk in chunks {
        frames.extend(parser.push(chunk).expect("valid UTF-8 lines"));
    }
    assert!(!parser.has_partial(), "a complete stream leaves nothing buffered");
    frames
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_split_of_a_valid_stream_gives_the_same_frames(
        events in proptest::collection::vec(gen_event(), 0..8),
        cuts in proptest::collection::vec(any::<usize>(), 0..40),
    ) {
        let (bytes, expected) = serialize(&events);
        prop_assert_eq!(&parse_all(&bytes).unwrap(), &expected);
        prop_assert_eq!(&parse_chunks(&split(&bytes, &cuts)), &expected);
    }

    #[test]
    fn byte_by_byte_equals_whole(events in proptest::collection::vec(gen_event(), 0..6)) {
        let (bytes, expected) = serialize(&events);
        let chunks: Vec<Vec<u8>> = bytes.iter().map(|b| vec![*b]).collect();
        prop_assert_eq!(parse_chunks(&chunks), expected);
    }

    #[test]
    fn a_streamed_message_assembles_to_the_json_message(
        texts in proptest::collection::vec("\\PC{0,40}", 0..3),
        inputs in proptest::collection::vec(("[a-z]{1,6}", "\\PC{0,30}"), 0..3),
        fragment in 0..20usize,
        crlf in any::<bool>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..60),
    ) {
        let mut content: Vec<Value> = texts.iter().map(|t| reply::text_block(t)).collect();
        for (i, (key, value)) in inputs.iter().enumerate() {
            content.push(reply::tool_use_block(&format!("toolu_{i}"), "bash", json!({key.as_str(): value})));
        }
        content.push(json!({"type": "thinking", "thinking": "a thought ✓", "signature": "sig=="}));
        let body = reply::message(content, "tool_use");
        let expected: MessagesResponse = serde_json::from_value(body.clone()).unwrap();

        let events: Vec<SseEvent> = reply::with_noise(reply::sse_from_message_with(&body, fragment));
        let bytes = serialize_sse(&events, crlf);
        let mut parser = SseParser::new();
        let mut message = MessageAccumulator::new();
        let mut streamed = String::new();
        for chunk in split(&bytes, &cuts) {
            for frame in parser.push(&chunk).unwrap() {
                let event = StreamEvent::from_frame(&frame).unwrap();
                if let StreamEvent::ContentBlockDelta { delta: agent_core::sse::Delta::Text(t), .. } = &event {
                    streamed.push_str(t);
                }
                message.apply(event).unwrap();
            }
        }
        prop_assert!(message.is_done());
        let got = message.finish().unwrap();
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(streamed, texts.concat());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut parser = SseParser::new();
        let mut message = MessageAccumulator::new();
        if let Ok(frames) = parser.push(&bytes) {
            for frame in frames {
                match StreamEvent::from_frame(&frame) {
                    Ok(event) => { let _ = message.apply(event); }
                    Err(_) => break,
                }
            }
        }
        let _ = message.finish();
    }
}
