//! Issue 16: `Normalizer`, the incremental `normalize_messages`, always sends what the
//! from-scratch function sends.
//!
//! A property test: random histories are edited the way a session edits them (messages
//! appended, mostly; sometimes a turn removed, a message rewritten or the history cleared, as a
//! refusal, an extension's compaction or `/clear` do), and after every edit the normalizer that
//! saw all the earlier versions must return exactly `normalize_messages(history)`. The messages
//! mix everything the rules repair: blank and whitespace text, repeated, empty and invalid
//! `tool_use` ids, missing names and inputs, orphan and misplaced `tool_result`s, private fields,
//! thinking blocks, and same-role neighbours that merge.

use agent_core::messages::Message;
use agent_core::normalize::{Normalizer, normalize_messages};
use proptest::prelude::*;
use serde_json::{Value, json};

/// One message as a history might hold it.
fn message() -> impl Strategy<Value = Value> {
    let id = prop_oneof![Just("a"), Just("b"), Just("a"), Just("c d"), Just("")];
    let text = prop_oneof![Just("go"), Just(""), Just("  "), Just("ends in space  ")];
    let user_block = prop_oneof![
        (id.clone(), any::<bool>()).prop_map(|(id, err)| json!(
            {"type": "tool_result", "tool_use_id": id, "content": "out", "is_error": err}
        )),
        text.clone().prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "text", "text": "x", "_private": 1})),
    ];
    let assistant_block = prop_oneof![
        (id, prop_oneof![Just("bash"), Just("")], prop_oneof![Just(json!({})), Just(json!("s"))]).prop_map(
            |(id, name, input)| json!(
                {"type": "tool_use", "id": id, "name": name, "input": input}
            )
        ),
        text.clone().prop_map(|t| json!({"type": "text", "text": t})),
        Just(json!({"type": "thinking", "thinking": "t", "signature": "s"})),
    ];
    prop_oneof![
        text.clone().prop_map(|t| json!({"role": "user", "content": t})),
        prop::collection::vec(user_block, 0..4).prop_map(|b| json!({"role": "user", "content": b})),
        text.prop_map(|t| json!({"role": "assistant", "content": t})),
        prop::collection::vec(assistant_block, 0..4).prop_map(|b| json!({"role": "assistant", "content": b})),
    ]
}

/// One edit of the history.
#[derive(Debug, Clone)]
enum Edit {
    /// Append a new message (most edits).
    Push(Value),
    /// Append a copy of an earlier message (sharing its blocks).
    PushCopy(usize),
    /// Keep only the first N messages (a removed turn).
    Truncate(usize),
    /// Replace a message (a compaction).
    Replace(usize, Value),
    /// Start over (`/clear`).
    Clear,
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        12 => message().prop_map(Edit::Push),
        2 => any::<usize>().prop_map(Edit::PushCopy),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => (any::<usize>(), message()).prop_map(|(i, m)| Edit::Replace(i, m)),
        1 => Just(Edit::Clear),
    ]
}

fn parse(v: Value) -> Message {
    serde_json::from_value(v).expect("the generator makes valid messages")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn the_incremental_normalizer_equals_the_full_one(edits in prop::collection::vec(edit(), 1..60)) {
        let mut history: Vec<Message> = Vec::new();
        let mut normalizer = Normalizer::new();
        for edit in edits {
            match edit {
                Edit::Push(m) => history.push(parse(m)),
                Edit::PushCopy(i) if !history.is_empty() => {
                    let copy = history[i % history.len()].clone();
                    history.push(copy);
                }
                Edit::Truncate(n) => history.truncate(n % (history.len() + 1)),
                Edit::Replace(i, m) if !history.is_empty() => {
                    let at = i % history.len();
                    history[at] = parse(m);
                }
                Edit::Clear => history.clear(),
                Edit::PushCopy(_) | Edit::Replace(..) => {}
            }
            let expected = serde_json::to_value(normalize_messages(&history)).unwrap_or_default();
            let got = serde_json::to_value(normalizer.normalize(&history)).unwrap_or_default();
            prop_assert_eq!(got, expected, "history: {}", serde_json::to_string(&history).unwrap_or_default());
        }
    }
}

/// A long session of tool rounds, with each result still held when the next is asked for (so
/// the normalizer must copy its list rather than change it under the holder): every answer equals
/// the full function's, and an answer already given never changes.
#[test]
fn a_growing_session_is_normalised_like_the_full_function() {
    let mut history = vec![parse(json!({"role": "user", "content": "go"}))];
    let mut normalizer = Normalizer::new();
    let mut held = Vec::new();
    for round in 0..200 {
        let id = format!("toolu_{round}");
        history.push(parse(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "read_file", "input": {"path": "notes.txt"}}
        ]})));
        let sent = normalizer.normalize(&history);
        assert_eq!(*sent, normalize_messages(&history), "round {round}, before its result");
        history.push(parse(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": "line 1"}
        ]})));
        let sent = normalizer.normalize(&history);
        assert_eq!(*sent, normalize_messages(&history), "round {round}, after its result");
        held.push((history.clone(), sent));
    }
    for (then, sent) in held {
        assert_eq!(*sent, normalize_messages(&then), "an earlier answer changed");
    }
}
