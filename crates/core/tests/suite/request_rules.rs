//! Issue 11: whatever an endpoint answers, every request the harness sends next is one the real
//! Messages API accepts.
//!
//! A property test: arbitrary sequences of model answers (blank, whitespace and normal text,
//! `tool_use` with and without `input`, with repeated and invalid ids, thinking blocks with
//! signatures, unknown block types, every stop reason and an unknown one), served as JSON or as
//! SSE by the loopback server, go through `agent_loop` (turn after turn, as a REPL user would
//! go on) with the real HTTP client. Every request body must pass `mock_api::rules`, a validator
//! written from the API's error texts, independently of `normalize_messages`.

use std::time::Duration;

use agent_core::agent::Agent;
use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::dispatch::{DispatchMap, FnTool};
use agent_core::messages::{Message, ToolSpec};
use mock_api::{MockServer, Reply, reply};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One content block as an endpoint might send it.
fn block() -> impl Strategy<Value = Value> {
    let text = prop_oneof![Just(""), Just(" \n\t"), Just("Hello."), Just("ends in space  ")]
        .prop_map(|t| json!({"type": "text", "text": t}));
    let id =
        prop_oneof![Just("toolu_1"), Just("toolu_1"), Just("toolu_2"), Just("functions.echo:0"), Just("")];
    let name = prop_oneof![Just("echo"), Just("echo"), Just("no_such_tool"), Just("")];
    let input = prop_oneof![
        Just(None),
        Just(Some(json!({}))),
        Just(Some(json!({"say": "hi"}))),
        Just(Some(json!("{\"say\": \"from a string\"}"))),
        Just(Some(Value::Null)),
        Just(Some(json!(5))),
    ];
    let tool_use = (id, name, input).prop_map(|(id, name, input)| {
        let mut block = json!({"type": "tool_use", "id": id, "name": name});
        if let Some(input) = input {
            block["input"] = input;
        }
        block
    });
    let thinking = Just(json!({"type": "thinking", "thinking": "Let me see.", "signature": "c2lnbmF0dXJl"}));
    let unknown = Just(json!({"type": "future_block", "payload": {"x": 1}}));
    prop_oneof![3 => text, 4 => tool_use, 1 => thinking, 1 => unknown]
}

/// One answer: its blocks, its stop reason, and whether it comes as JSON even to a stream request.
fn answer() -> impl Strategy<Value = Reply> {
    let stop = prop_oneof![
        Just("end_turn"),
        Just("tool_use"),
        Just("max_tokens"),
        Just("stop_sequence"),
        Just("pause_turn"),
        Just("refusal"),
        Just("model_context_window_exceeded"),
        Just("a_stop_reason_from_next_year"),
    ];
    (prop::collection::vec(block(), 0..4), stop, any::<bool>()).prop_map(|(content, stop, as_json)| {
        let mut body = reply::message(content, stop);
        if stop == "refusal" {
            body["stop_details"] = json!({"type": "refusal", "category": null, "explanation": "Not this."});
        }
        if as_json { reply::json(body) } else { Reply::Message(body) }
    })
}

fn echo() -> FnTool<impl for<'a> Fn(&'a Value) -> agent_core::dispatch::ToolFuture<'a>> {
    FnTool::new(
        ToolSpec {
            name: "echo".into(),
            description: "Echo.".into(),
            input_schema: json!({"type": "object"}),
        },
        |input| {
            let text = input.to_string();
            Box::pin(async move { Ok(text) })
        },
    )
}

/// Runs prompts until every scripted answer was used, plus one more prompt whose request shows
/// the history the last answer left. Returns the requests the server saw.
fn session(answers: Vec<Reply>, stream: bool) -> MockServer {
    let server = MockServer::start(answers);
    let config = agent_core::test_util::loopback_config(server.base_url());
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let timeouts =
        Timeouts { connect: Duration::from_secs(5), idle: Duration::from_secs(10), ..Timeouts::default() };
    let client = AnthropicClient::new(&config, retry, timeouts).unwrap().with_streaming(stream);
    let mut agent = Agent::builder(std::sync::Arc::new(client), "mock-model")
        .system("system")
        .tools(DispatchMap::new().with(echo()))
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut history: Vec<Message> = Vec::new();
    runtime.block_on(async {
        for turn in 0..20 {
            let done = server.remaining() == 0;
            // An error (the script ran out) ends a turn and leaves the history sendable.
            let _ = agent.run_turn(&mut history, &format!("prompt {turn}")).await;
            if done {
                break;
            }
        }
    });
    server
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_request_is_one_the_api_accepts(answers in prop::collection::vec(answer(), 1..7), stream in any::<bool>()) {
        let server = session(answers, stream);
        prop_assert_eq!(server.remaining(), 0, "every answer was asked for");
        for (i, request) in server.requests().iter().enumerate() {
            if let Err(e) = request.check_api_rules() {
                prop_assert!(false, "request #{}: {}\nbody: {}", i + 1, e, request.body);
            }
        }
    }
}
