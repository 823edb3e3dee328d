//! The extension point, used from outside `agent-core` as a later chapter would: nothing here is
//! part of the core, and the core needed no change for either.
//!
//! - Context compaction (the course's micro-compaction): an [`Extension`] whose `pre_inference`
//!   rewrites the history before each request, replacing the contents of all but the most recent
//!   `tool_result` blocks with a placeholder.
//! - Subagents: a `task` tool that runs a child `agent_loop` with a fresh history, its own SYSTEM
//!   prompt and the tools without `task`, on the same shared model.
//!
//! Both are checked on the requests the loopback Messages API server receives.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_core::agent::Agent;
use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::dispatch::{DispatchMap, ToolError, TypedTool};
use agent_core::error::ApiError;
use agent_core::extension::{Extension, LoopContext};
use agent_core::messages::{ContentBlock, Message, MessageContent, ToolSpec};
use agent_core::model::Model;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use e2e::{MockServer, RecordedRequest, reply};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The real HTTP client, pointed at the loopback server, shared as the agent shares it.
fn model(server: &MockServer) -> Result<Arc<dyn Model>, ApiError> {
    let config = agent_core::test_util::loopback_config(server.base_url());
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    Ok(Arc::new(AnthropicClient::new(&config, retry, Timeouts::default())?))
}

/// `(system, [tool names], messages)` of a recorded request.
fn seen(request: &RecordedRequest) -> (String, Vec<String>, Vec<Value>) {
    let body = &request.body;
    let system = body["system"].as_str().unwrap_or_default().to_owned();
    let tools = body["tools"].as_array().into_iter().flatten();
    let names = tools.filter_map(|t| t["name"].as_str().map(str::to_owned)).collect();
    (system, names, body["messages"].as_array().cloned().unwrap_or_default())
}

/// The `content` of every `tool_result` block in a request, in order.
fn tool_result_contents(request: &RecordedRequest) -> Vec<Value> {
    let (_, _, messages) = seen(request);
    let blocks = messages.iter().filter_map(|m| m["content"].as_array()).flatten();
    blocks.filter(|b| b["type"] == "tool_result").map(|b| b["content"].clone()).collect()
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Compaction
// ─────────────────────────────────────────────────────────────────────────────────────────────

/// How many of the latest `tool_result` blocks keep their content.
const KEEP_RECENT: usize = 1;

/// The course's micro-compaction: before each request, every `tool_result` but the last
/// [`KEEP_RECENT`] becomes `[Previous: used TOOL]`. It also notes the usage it saw.
struct MicroCompact {
    usage_seen: Arc<Mutex<Vec<Option<u64>>>>,
}

#[async_trait::async_trait]
impl Extension for MicroCompact {
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        let usage = context.last_usage.map(|u| u.input_tokens);
        self.usage_seen.lock().map(|mut v| v.push(usage)).unwrap_or(());
        let mut names = HashMap::new();
        let mut results = Vec::new();
        for (m, message) in context.history.iter().enumerate() {
            for (b, block) in message.blocks().into_iter().enumerate() {
                match block {
                    ContentBlock::ToolUse(call) => {
                        names.insert(call.id, call.name);
                    }
                    ContentBlock::ToolResult(result) => results.push((m, b, result.tool_use_id)),
                    _ => {}
                }
            }
        }
        let old = results.len().saturating_sub(KEEP_RECENT);
        for (m, b, id) in results.into_iter().take(old) {
            let message = &mut context.history[m];
            let mut blocks = message.blocks();
            if let ContentBlock::ToolResult(result) = &mut blocks[b] {
                let tool = names.get(&id).map_or("a tool", String::as_str);
                result.content = MessageContent::Text(format!("[Previous: used {tool}]"));
            }
            message.content = MessageContent::Blocks(blocks.into());
        }
        Ok(())
    }
}

#[tokio::test]
async fn an_extension_compacts_old_tool_results_before_each_request() -> TestResult {
    let dir = tempfile::tempdir()?;
    for name in ["a", "b", "c"] {
        std::fs::write(dir.path().join(format!("{name}.txt")), format!("contents of {name}"))?;
    }
    let ws = Workspace::new(dir.path())?;
    let read = |id: &str, path: &str| reply::tool_uses(&[(id, "read_file", json!({"path": path}))]);
    let server = MockServer::start(vec![
        read("t1", "a.txt"),
        read("t2", "b.txt"),
        read("t3", "c.txt"),
        reply::text("read all three"),
    ]);
    let usage_seen = Arc::new(Mutex::new(Vec::new()));
    let mut agent =
        Agent::new(model(&server)?, "mock-model", "system", tools::all(&ws, &ToolOptions::default()));
    agent.ui = agent_core::ui::Ui::captured().0;
    agent.extensions.push(Box::new(MicroCompact { usage_seen: Arc::clone(&usage_seen) }));
    let mut history = Vec::new();
    agent.run_turn(&mut history, "read the three files").await?;

    server.assert_done();
    server.assert_tool_pairing();
    let requests = server.requests();
    let contents: Vec<Vec<Value>> = requests.iter().map(tool_result_contents).collect();
    let placeholder = json!("[Previous: used read_file]");
    assert_eq!(contents[0], Vec::<Value>::new());
    assert_eq!(contents[1], [json!("contents of a")]);
    assert_eq!(contents[2], [placeholder.clone(), json!("contents of b")]);
    assert_eq!(contents[3], [placeholder.clone(), placeholder, json!("contents of c")]);
    // Before the first request there is no usage yet; then each response's.
    assert_eq!(*usage_seen.lock().map_err(|e| e.to_string())?, [None, Some(10), Some(10), Some(10)]);
    Ok(())
}

// ─────────────────────────────────────────────────────────────────────────────────────────────
// Subagents
// ─────────────────────────────────────────────────────────────────────────────────────────────

const PARENT_SYSTEM: &str = "You are the lead agent. Delegate exploration with task.";
const CHILD_SYSTEM: &str = "You are a subagent. Do the task, then answer with a short summary.";

/// The `task` tool's input.
#[derive(serde::Deserialize)]
struct TaskArgs {
    prompt: String,
}

/// A `task` tool: runs a child `agent_loop` on the shared model with a fresh history (the prompt
/// alone), its own SYSTEM prompt and `tools`, which do not include `task`. Its output is the
/// child's final text.
struct Task {
    model: Arc<dyn Model>,
    tools: DispatchMap,
}

impl TypedTool for Task {
    type Args = TaskArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "task".into(),
            description: "Run a subagent with a fresh context on a task; returns its summary.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"],
            }),
        }
    }

    async fn run(self: Arc<Self>, args: TaskArgs) -> Result<String, ToolError> {
        let mut child = Agent::new(Arc::clone(&self.model), "mock-model", CHILD_SYSTEM, self.tools.clone());
        child.ui = agent_core::ui::Ui::captured().0;
        let mut history = vec![Message::user_text(args.prompt)];
        let last = child.agent_loop(&mut history).await.map_err(ToolError::failed)?;
        Ok(last.text())
    }
}

#[tokio::test]
async fn a_task_tool_runs_a_child_loop_with_a_fresh_history() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), "")?;
    let ws = Workspace::new(dir.path())?;
    let server = MockServer::start(vec![
        // The parent delegates.
        reply::tool_uses(&[("p1", "task", json!({"prompt": "Which .txt files are there?"}))]),
        // The child works with its own tools, then answers.
        reply::tool_uses(&[("c1", "glob", json!({"pattern": "*.txt"}))]),
        reply::text("There is one: notes.txt"),
        // The parent gets the child's answer as the task's result.
        reply::text("The workspace holds notes.txt."),
    ]);
    let shared = model(&server)?;
    let child_tools = tools::all(&ws, &ToolOptions::default());
    let task = Task { model: Arc::clone(&shared), tools: child_tools.clone() };
    let mut agent = Agent::new(shared, "mock-model", PARENT_SYSTEM, child_tools.with(task));
    agent.ui = agent_core::ui::Ui::captured().0;
    let mut history = Vec::new();
    agent.run_turn(&mut history, "What is in the workspace?").await?;

    server.assert_done();
    server.assert_tool_pairing();
    let requests = server.requests();
    let all_tools = ["bash", "read_file", "write_file", "edit_file", "glob", "task"].map(String::from);

    let (system, names, messages) = seen(&requests[0]);
    assert_eq!((system.as_str(), names.as_slice()), (PARENT_SYSTEM, &all_tools[..]));
    assert_eq!(messages, [json!({"role": "user", "content": "What is in the workspace?"})]);

    // The child's first request: its own prompt and tools, and nothing of the parent's history.
    let (system, names, messages) = seen(&requests[1]);
    assert_eq!((system.as_str(), names.as_slice()), (CHILD_SYSTEM, &all_tools[..5]));
    assert_eq!(messages, [json!({"role": "user", "content": "Which .txt files are there?"})]);
    let (system, _, messages) = seen(&requests[2]);
    assert_eq!(system, CHILD_SYSTEM);
    assert_eq!(messages.len(), 3);
    assert_eq!(tool_result_contents(&requests[2]), [json!("notes.txt")]);

    // The parent goes on with the child's summary as the task's result.
    let (system, names, messages) = seen(&requests[3]);
    assert_eq!((system.as_str(), names.as_slice()), (PARENT_SYSTEM, &all_tools[..]));
    assert_eq!(messages.len(), 3);
    assert_eq!(tool_result_contents(&requests[3]), [json!("There is one: notes.txt")]);
    Ok(())
}
