//! `agent_loop` and its extension point, driven by a scripted model that records every request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_core::agent::{Agent, TurnEnd};
use agent_core::dispatch::{DispatchMap, FnTool, ToolCall};
use agent_core::extension::{CallRecord, Decision, Extension};
use agent_core::messages::{ContentBlock, Message, MessagesResponse, StopReason, ToolSpec};
use agent_core::test_util::{EventLog, ScriptedModel, response, text, tool_uses};
use serde_json::{Value, json};

/// A response calling the `count` tool once.
fn call(id: &str, name: &str) -> MessagesResponse {
    tool_uses(&[(id, name, json!({}))])
}

/// A `count` tool that counts how often it ran.
fn counting_tool(
    runs: Arc<AtomicUsize>,
) -> FnTool<impl for<'a> Fn(&'a Value) -> agent_core::dispatch::ToolFuture<'a>> {
    FnTool::new(
        ToolSpec {
            name: "count".into(),
            description: "Count.".into(),
            input_schema: json!({"type": "object"}),
        },
        move |_| {
            let runs = Arc::clone(&runs);
            Box::pin(async move { Ok(format!("run {}", runs.fetch_add(1, Ordering::SeqCst) + 1)) })
        },
    )
}

fn agent(script: Vec<MessagesResponse>, runs: Arc<AtomicUsize>) -> (Agent, Arc<ScriptedModel>) {
    let (agent, model, _) = agent_with(script, runs, None, |b| b);
    (agent, model)
}

/// The agent of [`agent`] with `probe` as its extension (when given), `more` applied to its
/// builder, and the log of its events.
fn agent_with(
    script: Vec<MessagesResponse>,
    runs: Arc<AtomicUsize>,
    probe: Option<Probe>,
    more: impl FnOnce(agent_core::agent::AgentBuilder) -> agent_core::agent::AgentBuilder,
) -> (Agent, Arc<ScriptedModel>, Arc<EventLog>) {
    let model = Arc::new(ScriptedModel::new(script));
    let log = EventLog::new();
    let mut builder = Agent::builder(model.clone(), "m")
        .system("system")
        .tools(DispatchMap::new().with(counting_tool(runs)))
        .events(log.clone());
    if let Some(probe) = probe {
        builder = builder.extension(probe);
    }
    (more(builder).build(), model, log)
}

/// An extension whose every hook is scripted.
#[derive(Default)]
struct Probe {
    block_tools: bool,
    block_prompt: bool,
    always_continue: bool,
    note: Option<&'static str>,
    rounds: Arc<Mutex<Vec<Vec<CallRecord>>>>,
}

impl Extension for Probe {
    fn user_prompt_submit(&mut self, _prompt: &str) -> Decision {
        if self.block_prompt { Decision::Block("prompt refused".into()) } else { Decision::Continue }
    }
    fn pre_tool_use(&mut self, _call: &ToolCall) -> Decision {
        if self.block_tools { Decision::Block("blocked by probe".into()) } else { Decision::Continue }
    }
    fn after_round(&mut self, calls: &[CallRecord]) -> Option<String> {
        self.rounds.lock().unwrap().push(calls.to_vec());
        self.note.map(str::to_owned)
    }
    fn stop(&mut self, _response: &MessagesResponse) -> Option<String> {
        self.always_continue.then(|| "keep going".to_owned())
    }
}

#[tokio::test]
async fn a_stop_hook_that_always_answers_is_cut_off_after_three_continuations() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = (0..10).map(|i| text(&format!("answer {i}"))).collect();
    let probe = Probe { always_continue: true, ..Probe::default() };
    let (mut agent, model, _) = agent_with(script, runs, Some(probe), |b| b);
    let mut history = Vec::new();
    let end = agent.run_turn(&mut history, "go").await.unwrap();
    assert!(matches!(end, TurnEnd::Answered(r) if r.text() == "answer 3"));
    assert_eq!(model.requests().len(), 4, "one answer plus three forced continuations");
    let continued = history.iter().filter(|m| *m == &Message::user_text("keep going")).count();
    assert_eq!(continued, 3);
}

#[tokio::test]
async fn a_blocking_pre_tool_use_keeps_the_tool_from_running() {
    let runs = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(Mutex::new(Vec::new()));
    let probe = Probe { block_tools: true, rounds: Arc::clone(&rounds), ..Probe::default() };
    let (mut agent, model, _) =
        agent_with(vec![call("t1", "count"), text("ok")], Arc::clone(&runs), Some(probe), |b| b);
    agent.run_turn(&mut Vec::new(), "go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    let second = serde_json::to_value(&model.requests()[1].messages).unwrap();
    assert_eq!(
        second[2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "t1", "content": "blocked by probe", "is_error": true}])
    );
    assert_eq!(
        rounds.lock().unwrap()[0],
        vec![CallRecord { name: "count".into(), ran: false, is_error: true }]
    );
}

#[tokio::test]
async fn text_from_after_round_goes_after_every_tool_result() {
    let runs = Arc::new(AtomicUsize::new(0));
    let two = response(
        vec![
            ContentBlock::tool_use("a", "count", json!({})),
            ContentBlock::tool_use("b", "count", json!({})),
        ],
        StopReason::ToolUse,
    );
    let probe = Probe { note: Some("<reminder>x</reminder>"), ..Probe::default() };
    let (mut agent, model, _) = agent_with(vec![two, text("ok")], runs, Some(probe), |b| b);
    agent.run_turn(&mut Vec::new(), "go").await.unwrap();
    let second = serde_json::to_value(&model.requests()[1].messages).unwrap();
    let kinds: Vec<&str> =
        second[2]["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
}

#[tokio::test]
async fn a_blocked_prompt_sends_nothing() {
    let runs = Arc::new(AtomicUsize::new(0));
    let probe = Probe { block_prompt: true, ..Probe::default() };
    let (mut agent, model, _) = agent_with(vec![text("never")], runs, Some(probe), |b| b);
    let mut history = Vec::new();
    let end = agent.run_turn(&mut history, "go").await.unwrap();
    assert_eq!(end, TurnEnd::PromptBlocked("prompt refused".into()));
    assert!(model.requests().is_empty());
    assert!(history.is_empty());
}

#[tokio::test]
async fn max_tokens_never_runs_a_cut_off_call_and_the_next_request_is_repaired() {
    let runs = Arc::new(AtomicUsize::new(0));
    let cut = response(vec![ContentBlock::tool_use("t1", "count", json!({}))], StopReason::MaxTokens);
    let (mut agent, model) = agent(vec![cut, text("fine")], Arc::clone(&runs));
    let mut history = Vec::new();
    agent.run_turn(&mut history, "go").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    agent.run_turn(&mut history, "again").await.unwrap();
    let second = serde_json::to_value(&model.requests()[1].messages).unwrap();
    assert_eq!(
        second[2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "t1", "content": "(cancelled)"},
            {"type": "text", "text": "again"}
        ])
    );
}

#[tokio::test]
async fn pause_turn_sends_the_content_back_to_continue() {
    let runs = Arc::new(AtomicUsize::new(0));
    let paused = response(vec![ContentBlock::text("part one")], StopReason::PauseTurn);
    let (mut agent, model) = agent(vec![paused, text("part two")], runs);
    let end = agent.run_turn(&mut Vec::new(), "go").await.unwrap();
    assert!(matches!(end, TurnEnd::Answered(r) if r.text() == "part two"));
    let second = serde_json::to_value(&model.requests()[1].messages).unwrap();
    assert_eq!(second[1], json!({"role": "assistant", "content": [{"type": "text", "text": "part one"}]}));
}

#[tokio::test]
async fn an_api_error_keeps_the_prompt_and_the_next_turn_merges_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (mut agent, model) = agent(vec![], runs);
    let mut history = Vec::new();
    assert!(agent.run_turn(&mut history, "first").await.is_err());
    assert_eq!(history, vec![Message::user_text("first")], "nothing typed is lost");
    let _ = agent.run_turn(&mut history, "second").await;
    let second = serde_json::to_value(&model.requests()[1].messages).unwrap();
    assert_eq!(
        second,
        json!([{"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}])
    );
}

/// The stop reason of a turn's last response.
fn ended_with(end: &TurnEnd) -> Option<StopReason> {
    match end {
        TurnEnd::Answered(response) => response.stop_reason.clone(),
        TurnEnd::PromptBlocked(_) => None,
    }
}

#[tokio::test]
async fn each_stop_reason_has_its_note_and_only_tool_use_runs_tools() {
    let cases = [
        (StopReason::EndTurn, StopReason::EndTurn, &[][..], 1),
        (StopReason::StopSequence, StopReason::EndTurn, &["StopSequence(None)"], 1),
        (StopReason::MaxTokens, StopReason::MaxTokens, &["CutOffToolCall"], 0),
        // A refusal also takes the refused turn (no tool ran) out of the history.
        (StopReason::Refusal, StopReason::Refusal, &["Refusal(None)", "RefusedTurnRemoved(0)"], 0),
        (
            StopReason::ModelContextWindowExceeded,
            StopReason::ModelContextWindowExceeded,
            &["ContextWindowExceeded"],
            0,
        ),
        (
            StopReason::Other("new_reason".into()),
            StopReason::Other("new_reason".into()),
            &[r#"UnknownStopReason { reason: "new_reason", tools_skipped: true }"#],
            0,
        ),
    ];
    for (stop, last, notes_expected, runs_expected) in cases {
        let runs = Arc::new(AtomicUsize::new(0));
        let answer = response(vec![ContentBlock::tool_use("t1", "count", json!({}))], stop.clone());
        // end_turn and stop_sequence with a tool_use still run it (never drop a call), then go on.
        let (mut agent, _, log) = agent_with(vec![answer, text("done")], Arc::clone(&runs), None, |b| b);
        let end = agent.run_turn(&mut Vec::new(), "go").await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), runs_expected, "{stop:?}");
        assert_eq!(ended_with(&end), Some(last), "{stop:?}");
        let notes: Vec<String> = log.events().into_iter().filter(|e| e.starts_with("stop: ")).collect();
        let expected: Vec<String> = notes_expected.iter().map(|n| format!("stop: {n}")).collect();
        assert_eq!(notes, expected, "{stop:?}");
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let paused = || response(vec![ContentBlock::text("more")], StopReason::PauseTurn);
    let (mut agent, model, log) = agent_with((0..5).map(|_| paused()).collect(), runs, None, |b| b);
    let end = agent.run_turn(&mut Vec::new(), "go").await.unwrap();
    assert_eq!(ended_with(&end), Some(StopReason::PauseTurn), "still paused after the allowed continuations");
    assert!(log.events().contains(&"stop: PausedTooOften(3)".to_owned()), "{:?}", log.events());
    assert_eq!(model.requests().len(), 4);
}

#[tokio::test]
async fn a_refusal_removes_the_whole_refused_turn_from_the_history() {
    let runs = Arc::new(AtomicUsize::new(0));
    let refused = response(vec![ContentBlock::text("")], StopReason::Refusal);
    let (mut agent, model) = agent(vec![text("hello"), call("t1", "count"), refused, text("ok")], runs);
    let mut history = Vec::new();
    agent.run_turn(&mut history, "hi").await.unwrap();
    let kept = history.clone();
    let end = agent.run_turn(&mut history, "do the bad thing").await.unwrap();
    assert_eq!(ended_with(&end), Some(StopReason::Refusal));
    assert_eq!(history, kept, "the refused prompt, its tool round and the refusal are gone");
    agent.run_turn(&mut history, "something else").await.unwrap();
    let last = serde_json::to_value(&model.requests()[3].messages).unwrap();
    assert_eq!(
        last,
        json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": "something else"}
        ])
    );
}

#[tokio::test]
async fn a_round_cap_ends_the_turn_with_the_last_response() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = vec![call("t1", "count"), call("t2", "count"), call("t3", "count"), text("never")];
    let (mut agent, model, log) = agent_with(script, Arc::clone(&runs), None, |b| b.max_rounds(2));
    let end = agent.run_turn(&mut Vec::new(), "go").await.unwrap();
    assert_eq!(model.requests().len(), 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(end, TurnEnd::Answered(Box::new(call("t2", "count"))));
    assert!(log.events().contains(&"stop: RoundCap(2)".to_owned()), "{:?}", log.events());
    // The cap counts per turn: the next turn gets its two rounds again.
    agent.run_turn(&mut Vec::new(), "again").await.unwrap();
    assert_eq!(model.requests().len(), 4);
}
