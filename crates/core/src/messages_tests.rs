use super::*;
use serde_json::json;

#[test]
fn blocks_serialise_to_the_api_json() {
    let blocks = vec![
        ContentBlock::text("hi"),
        ContentBlock::tool_use("toolu_1", "bash", json!({"command": "ls"})),
        ContentBlock::tool_result("toolu_1", "ok", false),
        ContentBlock::tool_result("toolu_2", "Error: boom", true),
    ];
    insta::assert_json_snapshot!(blocks, @r#"
    [
      {
        "type": "text",
        "text": "hi"
      },
      {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "bash",
        "input": {
          "command": "ls"
        }
      },
      {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "ok"
      },
      {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": "Error: boom",
        "is_error": true
      }
    ]
    "#);
}

#[test]
fn unknown_blocks_and_fields_survive_a_round_trip() {
    let raw = json!([
        {"type": "thinking", "thinking": "hmm", "signature": "abc"},
        {"type": "redacted_thinking", "data": "xyz"},
        {"type": "text", "text": "x", "citations": [{"k": 1}]},
        {"type": "tool_use", "id": "t", "name": "n", "input": {}, "caller": {"type": "direct"}}
    ]);
    let blocks: Vec<ContentBlock> = serde_json::from_value(raw.clone()).unwrap();
    assert!(matches!(blocks[0], ContentBlock::Other(_)));
    assert!(matches!(blocks[2], ContentBlock::Text(_)));
    assert_eq!(serde_json::to_value(&blocks).unwrap(), raw);
}

#[test]
fn unknown_stop_reason_is_kept() {
    let r: MessagesResponse = serde_json::from_value(json!({
        "id": "m", "type": "message", "role": "assistant", "content": [],
        "model": "x", "stop_reason": "model_context_window_exceeded",
        "usage": {"input_tokens": 1, "output_tokens": 2}
    }))
    .unwrap();
    assert_eq!(r.stop_reason, Some(StopReason::Other("model_context_window_exceeded".into())));
    assert_eq!(serde_json::to_value(&r).unwrap()["stop_reason"], "model_context_window_exceeded");
}
