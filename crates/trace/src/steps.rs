//! From trace lines to steps: one step per request, in the order they were sent.
//!
//! A trace (`--trace FILE`; the format is `agent_core::trace`'s) is a list of events. A learner
//! wants it the other way round: request by request, what went into the context and why. So each
//! `request` line becomes a [`Step`] that holds
//! - what happened since the request before it, in any lane ([`Step::before`]): the tool calls
//!   and results of the last answer, a reminder the harness added, a mechanism's line (a
//!   compaction layer, a subagent starting, a memory recalled); those explain what is new;
//! - the request itself, the messages array as sent, and which of its blocks were not in the
//!   lane's request before ([`Step::new_blocks`]);
//! - the response of the same lane that answered it (its text, tool calls, `stop_reason`, usage),
//!   or the error that ended it.

use std::collections::HashSet;

use serde_json::Value;

/// A trace read from its text.
#[derive(Debug, Default)]
pub struct Trace {
    /// The chapter named by the first `trace` line (`s06`), if any.
    pub chapter: Option<String>,
    /// One per request, in the order sent.
    pub steps: Vec<Step>,
    /// What happened after the last request (the last tool results, the turn's usage).
    pub after: Vec<Note>,
    /// The lanes in the order they first sent a request; `main` first when it sent one.
    pub lanes: Vec<String>,
    /// Lines that were not JSON objects, as `line N: why`; they are skipped.
    pub skipped: Vec<String>,
}

/// One request and what surrounds it.
#[derive(Debug)]
pub struct Step {
    /// 1-based, in sending order.
    pub number: usize,
    /// Whose request: `main`, `subagent 1`, `side call`, a teammate's name.
    pub lane: String,
    /// The Messages API body as sent.
    pub request: Value,
    /// The response body that answered it, if one came.
    pub response: Option<Value>,
    /// The error that ended the request instead.
    pub error: Option<String>,
    /// The events since the previous request of any lane.
    pub before: Vec<Note>,
    /// `(message, block)` indexes of the blocks that the lane's previous request did not hold.
    pub new_blocks: HashSet<(usize, usize)>,
    /// Whether the SYSTEM prompt differs from the lane's previous request's.
    pub system_changed: bool,
    /// The size of what was sent (SYSTEM, tools and messages as JSON), in characters.
    pub context_chars: usize,
    /// Where a mechanism acted on the way to this request.
    pub marks: Vec<Mark>,
}

/// An event between two requests, as the page shows it.
#[derive(Debug, Clone)]
pub struct Note {
    /// The lane it happened in.
    pub lane: String,
    /// What it was.
    pub kind: NoteKind,
}

/// The events a step shows (the rest, such as streamed text deltas, are in the response).
#[derive(Debug, Clone)]
pub enum NoteKind {
    /// A tool call about to run.
    ToolCall {
        /// The tool's name.
        name: String,
        /// What the call is about, or its input as JSON.
        input: String,
        /// A hook stopped it.
        blocked: bool,
    },
    /// A tool's result as the model gets it.
    ToolResult {
        /// The tool's name.
        name: String,
        /// The result's text.
        content: String,
        /// The result's `is_error`.
        is_error: bool,
    },
    /// Text the harness added after a round's results (a reminder).
    Injected(String),
    /// A line from a mechanism, a hook or a warning.
    Line {
        /// `info`, `mechanism`, `detail`, `notice`, `warning` or `error`.
        level: String,
        /// The line.
        text: String,
    },
    /// Why a turn stopped early.
    Stop(String),
    /// A retry of a failed request.
    Retry(String),
    /// A turn no one typed.
    AutomaticTurn {
        /// Its producer (`cron`, `background`, a teammate).
        source: String,
        /// Its prompt.
        prompt: String,
    },
    /// The tokens of a turn that ended.
    TurnUsage {
        /// Requests in the turn.
        requests: u64,
        /// Input tokens (not cached).
        input: u64,
        /// Output tokens.
        output: u64,
    },
}

/// A mechanism that acted before a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// What kind: one of [`MARK_KINDS`]' names.
    pub kind: &'static str,
    /// The line that says what it did (`[snip: 6 messages archived …]`).
    pub text: String,
}

/// Each kind of mark, with the one letter that stands for it on the context bar and the words of
/// the legend. The letter keeps marks apart without colour.
pub const MARK_KINDS: [(&str, &str, &str); 9] = [
    ("compaction", "C", "a compaction layer rewrote the context"),
    ("subagent", "S", "a subagent ran in its own lane"),
    ("skill", "K", "a skill was loaded"),
    ("memory", "M", "memory was recalled or stored"),
    ("cron", "T", "a scheduled (cron) job"),
    ("background", "B", "a background command"),
    ("team", "P", "a teammate"),
    ("goal", "G", "a goal was evaluated"),
    ("automatic", "A", "a turn no one typed"),
];

/// Reads the text of a trace: one JSON object per line; a line that is not one is skipped and
/// named in [`Trace::skipped`], so a trace cut short by a crash still draws.
pub fn read(text: &str) -> Trace {
    let mut trace = Trace::default();
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(value @ Value::Object(_)) => lines.push(value),
            Ok(_) => trace.skipped.push(format!("line {}: not a JSON object", i + 1)),
            Err(e) => trace.skipped.push(format!("line {}: {e}", i + 1)),
        }
    }
    let mut pending: Vec<Note> = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let lane = text_of(&line["lane"]).unwrap_or_else(|| "main".to_owned());
        match line["type"].as_str().unwrap_or_default() {
            "trace" => {
                if trace.chapter.is_none() {
                    trace.chapter = text_of(&line["chapter"]);
                }
            }
            "request" => {
                let (response, error) = answer(&lines[at + 1..], &lane);
                let step = new_step(
                    &trace.steps,
                    trace.steps.len() + 1,
                    lane.clone(),
                    line["request"].clone(),
                    std::mem::take(&mut pending),
                    response,
                    error,
                );
                if !trace.lanes.contains(&lane) {
                    trace.lanes.push(lane);
                }
                trace.steps.push(step);
            }
            kind => {
                if let Some(note) = note(kind, line) {
                    pending.push(Note { lane, kind: note });
                }
            }
        }
    }
    trace.after = pending;
    if let Some(i) = trace.lanes.iter().position(|l| l == "main") {
        let main = trace.lanes.remove(i);
        trace.lanes.insert(0, main);
    }
    trace
}

/// The first `response` line of `lane` in `rest`: its body, or its error.
fn answer(rest: &[Value], lane: &str) -> (Option<Value>, Option<String>) {
    let found = rest
        .iter()
        .find(|l| l["type"] == "response" && text_of(&l["lane"]).as_deref().unwrap_or("main") == lane);
    match found {
        Some(l) if l["response"].is_object() => (Some(l["response"].clone()), None),
        Some(l) => (None, Some(text_of(&l["error"]).unwrap_or_else(|| "the request failed".into()))),
        None => (None, None),
    }
}

fn new_step(
    earlier: &[Step],
    number: usize,
    lane: String,
    request: Value,
    before: Vec<Note>,
    response: Option<Value>,
    error: Option<String>,
) -> Step {
    let previous = earlier.iter().rev().find(|s| s.lane == lane);
    let seen: HashSet<String> = previous
        .map(|p| blocks(&p.request).into_iter().map(|(_, _, b)| b.to_string()).collect())
        .unwrap_or_default();
    let new_blocks = blocks(&request)
        .into_iter()
        .filter(|(_, _, block)| !seen.contains(&block.to_string()))
        .map(|(m, b, _)| (m, b))
        .collect();
    let system_changed = previous.is_some_and(|p| p.request["system"] != request["system"]);
    let context_chars = ["system", "tools", "messages"].iter().map(|k| json_chars(&request[*k])).sum();
    let mut marks: Vec<Mark> = before.iter().filter_map(mark).collect();
    if lane != "main"
        && previous.is_none()
        && !marks.iter().any(|m| m.kind == "subagent")
        && let Some(kind) = lane_mark(&lane)
    {
        marks.push(Mark { kind, text: format!("the first request of the lane {lane}") });
    }
    Step { number, lane, request, response, error, before, new_blocks, system_changed, context_chars, marks }
}

/// The size of `value` as JSON, in characters; nothing for a missing field.
fn json_chars(value: &Value) -> usize {
    if value.is_null() {
        return 0;
    }
    value.to_string().chars().count()
}

/// Every content block of a request's messages, as `(message, block, block)`; a message whose
/// content is a string is one text block.
pub fn blocks(request: &Value) -> Vec<(usize, usize, Value)> {
    let Some(messages) = request["messages"].as_array() else { return Vec::new() };
    let mut out = Vec::new();
    for (m, message) in messages.iter().enumerate() {
        match &message["content"] {
            Value::String(text) => out.push((m, 0, serde_json::json!({ "type": "text", "text": text }))),
            Value::Array(items) => {
                out.extend(items.iter().enumerate().map(|(b, block)| (m, b, block.clone())))
            }
            _ => {}
        }
    }
    out
}

/// The note a trace line of `kind` makes, if the page shows that kind.
fn note(kind: &str, line: &Value) -> Option<NoteKind> {
    let text = |key: &str| text_of(&line[key]).unwrap_or_default();
    Some(match kind {
        "tool_call" => NoteKind::ToolCall {
            name: text("name"),
            input: text("input"),
            blocked: line["blocked"].as_bool().unwrap_or(false),
        },
        "tool_result" => NoteKind::ToolResult {
            name: text("name"),
            content: text("content"),
            is_error: line["is_error"].as_bool().unwrap_or(false),
        },
        "injected" => NoteKind::Injected(text("text")),
        "line" => NoteKind::Line { level: text("level"), text: text("text") },
        "stop" => NoteKind::Stop(text("note")),
        "retry" => NoteKind::Retry(text("error")),
        "automatic_turn" => NoteKind::AutomaticTurn { source: text("source"), prompt: text("prompt") },
        "turn_usage" => NoteKind::TurnUsage {
            requests: line["requests"].as_u64().unwrap_or(0),
            input: line["input_tokens"].as_u64().unwrap_or(0),
            output: line["output_tokens"].as_u64().unwrap_or(0),
        },
        _ => return None,
    })
}

/// A string field as text; any other JSON value as its JSON; `None` when missing.
pub fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The mark a note stands for, when it is a mechanism acting: a mechanism's line is recognised
/// by the words it starts with (`[snip: …]`, `[Subagent started]`, `[Memory: recalled …]`); a
/// skill by its tool call; a turn no one typed by its source.
fn mark(note: &Note) -> Option<Mark> {
    match &note.kind {
        NoteKind::Line { level, text } if level == "mechanism" || level == "info" => {
            let kind = line_mark(text)?;
            Some(Mark { kind, text: text.clone() })
        }
        NoteKind::ToolCall { name, input, .. } if name.contains("skill") => {
            Some(Mark { kind: "skill", text: format!("{name}: {input}") })
        }
        NoteKind::AutomaticTurn { source, prompt } => {
            let kind = match source.to_ascii_lowercase().as_str() {
                s if s.contains("cron") => "cron",
                s if s.contains("background") || s.starts_with("bg") => "background",
                _ => "automatic",
            };
            Some(Mark { kind, text: format!("[{source}] {prompt}") })
        }
        _ => None,
    }
}

/// The kind of mark a mechanism's line stands for, from its first words.
fn line_mark(text: &str) -> Option<&'static str> {
    let head = text.trim_start().to_ascii_lowercase();
    let head = head.strip_prefix('[')?;
    let word = |w: &str| head.starts_with(w);
    Some(
        if head.contains("compact")
            || word("snip")
            || word("transcript saved")
            || head.contains("results saved")
            || head.contains("result saved")
        {
            "compaction"
        } else if word("subagent") {
            "subagent"
        } else if word("skill") {
            "skill"
        } else if word("memory") {
            "memory"
        } else if word("cron") {
            "cron"
        } else if word("background") {
            "background"
        } else if word("goal") {
            "goal"
        } else if word("team") || word("lead") || word("inbox") {
            "team"
        } else {
            return None;
        },
    )
}

/// The mark the first request of a lane other than `main` gets when no line announced it.
fn lane_mark(lane: &str) -> Option<&'static str> {
    if lane.starts_with("subagent") {
        Some("subagent")
    } else if lane == "side call" {
        None
    } else {
        Some("team")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"{"seq":1,"lane":"main","type":"trace","chapter":"s06"}
{"seq":2,"lane":"main","type":"request","request":{"system":"S","messages":[{"role":"user","content":"hi"}]}}
{"seq":3,"lane":"main","type":"response","response":{"content":[{"type":"tool_use","id":"t1","name":"task","input":{}}],"usage":{"input_tokens":5,"output_tokens":2}}}
{"seq":4,"lane":"main","type":"line","level":"mechanism","text":"[Subagent started]"}
{"seq":5,"lane":"subagent 1","type":"request","request":{"system":"C","messages":[{"role":"user","content":"look"}]}}
not json
{"seq":6,"lane":"subagent 1","type":"response","response":{"content":[{"type":"text","text":"found"}]}}
{"seq":7,"lane":"main","type":"tool_result","name":"task","content":"found","is_error":false}
{"seq":8,"lane":"main","type":"request","request":{"system":"S","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"task","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"found"}]}]}}
"#;

    #[test]
    fn a_step_per_request_with_its_lane_its_answer_and_what_is_new() {
        let trace = read(TRACE);
        assert_eq!(trace.chapter.as_deref(), Some("s06"));
        assert_eq!(trace.skipped, ["line 6: expected ident at line 1 column 2"]);
        let lanes: Vec<_> = trace.steps.iter().map(|s| s.lane.as_str()).collect();
        assert_eq!(lanes, ["main", "subagent 1", "main"]);
        assert_eq!(trace.lanes, ["main", "subagent 1"]);
        assert!(trace.steps[0].response.is_some() && trace.steps[1].response.is_some());
        assert_eq!(trace.steps[1].marks[0].kind, "subagent");
        let third = &trace.steps[2];
        assert!(third.response.is_none() && third.error.is_none());
        let mut new: Vec<_> = third.new_blocks.iter().copied().collect();
        new.sort_unstable();
        assert_eq!(new, [(1, 0), (2, 0)], "the first message was sent before");
        assert!(!third.system_changed);
        assert!(matches!(&third.before[0].kind, NoteKind::ToolResult { name, .. } if name == "task"));
    }

    #[test]
    fn compaction_lines_are_marks() {
        for text in
            ["[snip: 6 messages archived at x]", "[auto compact]", "[micro_compact: 2 results saved, 1 → 2]"]
        {
            assert_eq!(line_mark(text), Some("compaction"), "{text}");
        }
        assert_eq!(line_mark("[HOOK] bash(ls)"), None);
    }
}
