//! Builders for tests of the loop and of what chapters add to it (feature `test-util`): a model
//! that answers from a script and records every request, and the responses and blocks it answers
//! with. Tests inside and outside `agent-core` use these instead of writing their own.
//!
//! ```
//! # tokio_test_block_on(async {
//! use std::sync::Arc;
//! use agent_core::agent::Agent;
//! use agent_core::dispatch::DispatchMap;
//! use agent_core::test_util::{ScriptedModel, text};
//!
//! let model = Arc::new(ScriptedModel::new(vec![text("hello")]));
//! let mut agent = Agent::new(model.clone(), "m", "system", DispatchMap::new());
//! agent.run_turn(&mut Vec::new(), "hi").await.unwrap();
//! assert_eq!(model.requests()[0].messages.len(), 1);
//! # });
//! # fn tokio_test_block_on(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::client::OnText;
use crate::config::{AuthType, Config};
use crate::dispatch::{DispatchMap, ToolCall};
use crate::error::ApiError;
use crate::messages::{
    ContentBlock, MessagesRequest, MessagesResponse, Role, StopReason, ToolUseBlock, Usage,
};
use crate::model::{Model, ModelFuture};

/// A [`Model`] that answers with its script, in order, and records every request it was sent.
/// Past the end of the script it answers [`ApiError::Replay`] (`script exhausted`).
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<Result<MessagesResponse, ApiError>>>,
    requests: Mutex<Vec<MessagesRequest>>,
}

impl ScriptedModel {
    /// A model that answers with `responses`, in order.
    pub fn new(responses: Vec<MessagesResponse>) -> Self {
        Self::with_results(responses.into_iter().map(Ok).collect())
    }

    /// A model whose script may hold errors as well as responses.
    pub fn with_results(script: Vec<Result<MessagesResponse, ApiError>>) -> Self {
        Self { script: Mutex::new(script.into()), requests: Mutex::new(Vec::new()) }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<MessagesRequest> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many answers of the script are left.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Model for ScriptedModel {
    fn create<'a>(&'a self, request: &'a MessagesRequest, _on_text: OnText<'a>) -> ModelFuture<'a> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner()).push(request.clone());
        let next = self.script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let answer = next.unwrap_or_else(|| Err(ApiError::Replay("script exhausted".into())));
        Box::pin(async move { answer })
    }
}

/// An assistant response with `content` and `stop_reason` `stop`, zero usage.
pub fn response(content: Vec<ContentBlock>, stop: StopReason) -> MessagesResponse {
    MessagesResponse {
        id: "msg_test".into(),
        kind: "message".into(),
        role: Role::Assistant,
        content,
        model: "m".into(),
        stop_reason: Some(stop),
        stop_sequence: None,
        stop_details: None,
        usage: Usage::default(),
    }
}

/// A final answer: one `text` block, `stop_reason: end_turn`.
pub fn text(text: &str) -> MessagesResponse {
    response(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

/// A response calling tools, `calls` being `(id, name, input)`, `stop_reason: tool_use`.
pub fn tool_uses(calls: &[(&str, &str, Value)]) -> MessagesResponse {
    let content = calls.iter().map(|(id, name, input)| ContentBlock::tool_use(*id, *name, input.clone()));
    response(content.collect(), StopReason::ToolUse)
}

/// A `tool_use` block as the loop receives it.
pub fn tool_use_block(id: &str, name: &str, input: Value) -> ToolUseBlock {
    ToolUseBlock { id: id.into(), name: name.into(), input, extra: Map::new() }
}

/// A `tool_use` block prepared through `tools`, as the `PreToolUse` extensions see it: the input
/// parsed once, and what the tool says it is about.
pub fn tool_call(tools: &DispatchMap, id: &str, name: &str, input: Value) -> ToolCall {
    tools.prepare(&tool_use_block(id, name, input))
}

/// The configuration of a test that talks to a loopback server (`mock-api`) at `base_url`
/// (for example `http://127.0.0.1:PORT`): model `mock-model`, key `test-key` sent as `x-api-key`.
pub fn loopback_config(base_url: String) -> Config {
    Config { model: "mock-model".into(), base_url, api_key: Some("test-key".into()), auth: AuthType::ApiKey }
}
