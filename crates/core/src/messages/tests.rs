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
        "model": "x", "stop_reason": "out_of_coffee",
        "usage": {"input_tokens": 1, "output_tokens": 2}
    }))
    .unwrap();
    assert_eq!(r.stop_reason, Some(StopReason::Other("out_of_coffee".into())));
    assert_eq!(serde_json::to_value(&r).unwrap()["stop_reason"], "out_of_coffee");
}

#[test]
fn zai_context_overflow_answer_parses_without_id_type_role_model_or_content() {
    let r: MessagesResponse =
        serde_json::from_value(json!({"stop_reason": "model_context_window_exceeded", "content": null}))
            .unwrap();
    assert!(serde_json::from_value::<MessagesResponse>(json!({"choices": []})).is_err());
    assert_eq!(r.stop_reason, Some(StopReason::ModelContextWindowExceeded));
    assert!(r.content.is_empty());
    let r: MessagesResponse = serde_json::from_value(json!({
        "stop_reason": "refusal",
        "stop_details": {"type": "refusal", "category": "cyber", "explanation": "Not this."}
    }))
    .unwrap();
    assert_eq!(r.stop_details.and_then(|d| d.explanation).as_deref(), Some("Not this."));
}

#[test]
fn known_block_types_with_missing_or_odd_fields_stay_typed() {
    let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
        {"type": "text"},
        {"type": "tool_use", "id": "t1", "name": "bash"},
        {"type": "tool_use", "id": 7, "input": null},
        {"type": "tool_use", "id": "t3", "name": "bash", "input": "{\"command\": \"ls\"}"},
        {"type": "tool_result", "tool_use_id": "t1"},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}], "is_error": null}
    ]))
    .unwrap();
    assert_eq!(blocks[0], ContentBlock::text(""));
    assert_eq!(blocks[1], ContentBlock::tool_use("t1", "bash", json!({})));
    assert_eq!(blocks[2], ContentBlock::tool_use("7", "", json!({})));
    assert_eq!(blocks[3], ContentBlock::tool_use("t3", "bash", json!({"command": "ls"})));
    assert_eq!(blocks[4], ContentBlock::tool_result("t1", "", false));
    assert!(
        matches!(&blocks[5], ContentBlock::ToolResult(r) if r.content.to_blocks() == [ContentBlock::text("ok")])
    );
}
