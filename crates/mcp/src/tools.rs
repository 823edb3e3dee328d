//! The glue between a [`Hub`] and a chapter's loop (course s14): the `connect_mcp` tool, the
//! extension that rebuilds the tool pool and SYSTEM before every request, the host-policy
//! permission hook (`External tool …`), the `[Error] {Type}: {e}` answer of a failed request,
//! and `/mcp`. A chapter composes them; none of them prints but through the event listener.
//!
//! ```text
//!  connect_mcp(name) ──► Hub::connect ──► [mcp] connected: docs -> search, get_version
//!  before every request: SYSTEM + "Connected MCP servers: …", tools + mcp__{server}__{tool}
//!  PreToolUse mcp__*: host policy allow → runs; otherwise asks `External tool: NAME(ARGS)`
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_cli::repl::SlashCommand;
use agent_cli::ui::Ui;
use agent_core::approve::{Answer, Approver, Question, Reply};
use agent_core::dispatch::{DispatchMap, FnTool, ToolError};
use agent_core::error::ApiError;
use agent_core::events::{Events, Level, line};
use agent_core::extension::{Extension, RequestContext};
use agent_core::hooks::{HookContext, HookEvent, HookRegistry, log_args};
use agent_core::messages::ToolSpec;
use agent_core::permission::DENIED_BY_USER;
use serde_json::{Value, json};

use agent_cli::chapter::Setup;

use crate::config;
use crate::hub::Hub;
use crate::pool::{HostPolicy, Policy, PoolError};
use crate::stdio::Limits;

/// The reason of the question about an MCP tool whose host policy is not `allow` (course s14:
/// `[permission] External tool NAME(ARGS)`).
pub const EXTERNAL_TOOL: &str = "External tool";

/// The prefix every MCP tool's model-facing name has.
pub const MCP_PREFIX: &str = "mcp__";

/// One chapter's MCP mechanism around a shared [`Hub`]: clones share the hub, the policies of the
/// last pool and its last error.
#[derive(Clone)]
pub struct McpTools {
    hub: Arc<tokio::sync::Mutex<Hub>>,
    /// What `connect_mcp` asks before a `.mcp.json` server first starts.
    approver: Arc<tokio::sync::Mutex<Box<dyn Approver>>>,
    /// The host policy of each `mcp__…` name of the last pool built.
    policies: Arc<Mutex<HashMap<String, Policy>>>,
    /// Why the last pool could not be built, for the request's `[Error] ValueError: …`.
    pool_error: Arc<Mutex<Option<PoolError>>>,
    /// The names `connect_mcp` offers, fixed at start-up.
    offered: Vec<String>,
    events: Events,
}

impl McpTools {
    /// The mechanism around `hub`; `approver` is asked before a configured server first starts,
    /// `events` hears the `[mcp] connected` line.
    pub fn new(hub: Hub, approver: Box<dyn Approver>, events: Events) -> Self {
        Self {
            offered: hub.available(),
            hub: Arc::new(tokio::sync::Mutex::new(hub)),
            approver: Arc::new(tokio::sync::Mutex::new(approver)),
            policies: Arc::default(),
            pool_error: Arc::default(),
            events,
        }
    }

    /// The mechanism for a chapter run: the course's servers and those of the workspace's
    /// `.mcp.json` (`${VAR}` expanded from the environment), started in the workspace within
    /// [`Limits::from_env`], under the course's host policy.
    ///
    /// # Errors
    /// A `.mcp.json` that cannot be read or parsed: the message names the file and the fix.
    pub fn for_setup(setup: &Setup, approver: Box<dyn Approver>) -> Result<Self, String> {
        Self::for_setup_with(setup, approver, |hub| hub)
    }

    /// [`McpTools::for_setup`] with the hub as `adjust` leaves it (the course's s15: [`Hub::s15`]).
    ///
    /// # Errors
    /// A `.mcp.json` that cannot be read or parsed: the message names the file and the fix.
    pub fn for_setup_with(
        setup: &Setup,
        approver: Box<dyn Approver>,
        adjust: impl FnOnce(Hub) -> Hub,
    ) -> Result<Self, String> {
        let root = setup.workspace.root().to_path_buf();
        let configured = config::load(&root, &|k| std::env::var(k).ok()).map_err(|e| e.to_string())?;
        let hub = adjust(Hub::new(configured, root, Limits::from_env(), HostPolicy::course()));
        Ok(Self::new(hub, approver, setup.events.clone()))
    }

    /// `connect_mcp`'s definition: the course's, with the configured servers' names in the enum
    /// after `docs` and `deploy`.
    pub fn spec(&self) -> ToolSpec {
        let names = &self.offered;
        ToolSpec {
            name: "connect_mcp".into(),
            description: "Connect to an MCP server and discover its tools.".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"name": {"type": "string", "enum": names}},
                "required": ["name"]
            }),
        }
    }

    /// `tools` with `connect_mcp` added last (course s14: after the five base tools).
    pub fn add_to(&self, tools: DispatchMap) -> DispatchMap {
        let this = self.clone();
        let tool = FnTool::new(self.spec(), move |input: &Value| {
            let this = this.clone();
            let name = input.get("name").and_then(Value::as_str).map(str::to_owned);
            Box::pin(async move {
                let Some(name) = name else {
                    return Err(ToolError::InvalidInput("missing field `name`".into()));
                };
                Ok(this.connect(&name).await)
            })
        });
        tools.with(tool)
    }

    /// `connect_mcp(name)`: the tool result; the `[mcp] connected` line goes to the listener.
    pub async fn connect(&self, name: &str) -> String {
        let mut hub = self.hub.lock().await;
        // The approver is held only while this call runs; the loop runs one tool at a time.
        let mut approver = self.approver.lock().await;
        let connected = hub.connect(name, approver.as_mut()).await;
        if let Some(text) = &connected.line {
            line(&*self.events, Level::Info, text);
        }
        connected.result
    }

    /// The extension that rebuilds each request's tools and SYSTEM from the connected servers.
    pub fn extension(&self) -> McpExtension {
        McpExtension { tools: self.clone() }
    }

    /// Registers the host-policy hook on `PreToolUse`: a `mcp__…` call whose policy in the last
    /// pool is not `allow` (a name not in the pool counts as `confirm`) asks `approver`
    /// `External tool: NAME(ARGS)`; a no answers `Permission denied by user`. The server's
    /// annotations are never read. Register it after the permission hook.
    pub fn register_permission_hook(&self, registry: &mut HookRegistry, mut approver: Box<dyn Approver>) {
        let policies = Arc::clone(&self.policies);
        registry.register(HookEvent::PreToolUse, "mcp_policy", move |ctx| {
            let HookContext::PreToolUse { call } = ctx else { return Ok(None) };
            if !call.name.starts_with(MCP_PREFIX) {
                return Ok(None);
            }
            let policy = match policies.lock() {
                Ok(p) => p.get(&call.name).copied().unwrap_or(Policy::Confirm),
                Err(_) => Policy::Confirm,
            };
            if policy == Policy::Allow {
                return Ok(None);
            }
            let question =
                Question::new(EXTERNAL_TOOL, format!("{}({})", call.name, log_args(call)), Vec::new());
            Ok(match approver.reply(&question) {
                Reply::Answer(Answer::No) => Some(DENIED_BY_USER.to_owned()),
                Reply::Answer(Answer::Yes | Answer::Always) => None,
                Reply::Refused(text) => Some(text),
            })
        });
    }

    /// The assistant answer of a request that failed (course s14: `[Error] {Type}: {e}`): a
    /// pool that could not be built is the course's `ValueError`; an API error is named as the
    /// Anthropic SDK names it.
    pub fn error_text(&self) -> impl Fn(&ApiError) -> String + Send + Sync + 'static {
        let pool_error = Arc::clone(&self.pool_error);
        move |error| {
            let pool = pool_error.lock().ok().and_then(|mut e| e.take());
            match pool {
                Some(e) => format!("[Error] {}: {e}", PoolError::TYPE),
                None => format!("[Error] {}: {error}", sdk_error_type(error)),
            }
        }
    }

    /// `/mcp`: the servers, their tools and each tool's host policy ([`Hub::describe`]).
    pub fn commands(&self) -> Vec<SlashCommand> {
        let hub = Arc::clone(&self.hub);
        vec![SlashCommand::new(
            "mcp",
            "MCP servers: configured and connected, their tools and each tool's host policy",
            move |ui: &Ui| match hub.try_lock() {
                Ok(h) => ui.say(h.describe().trim_end()),
                Err(_) => ui.error("the MCP servers are busy (a connection is starting); try /mcp again"),
            },
        )]
    }

    /// Ends every connected server.
    pub async fn shutdown(&self) {
        self.hub.lock().await.shutdown().await;
    }
}

/// The Anthropic Python SDK's exception name for `error`, as the course's `[Error] {Type}` shows
/// it.
pub fn sdk_error_type(error: &ApiError) -> &'static str {
    match error {
        ApiError::Api { status, .. } | ApiError::Http { status, .. } => match status {
            400 => "BadRequestError",
            401 => "AuthenticationError",
            403 => "PermissionDeniedError",
            404 => "NotFoundError",
            409 => "ConflictError",
            413 => "RequestTooLargeError",
            422 => "UnprocessableEntityError",
            429 => "RateLimitError",
            529 => "OverloadedError",
            s if *s >= 500 => "InternalServerError",
            _ => "APIStatusError",
        },
        ApiError::Transport(_) => "APIConnectionError",
        ApiError::IdleTimeout(_) | ApiError::Deadline(_) => "APITimeoutError",
        ApiError::AfterOutput(inner) => sdk_error_type(inner),
        _ => "APIError",
    }
}

/// Before every request: `Connected MCP servers: …` on SYSTEM and the connected servers' tools
/// after the built-ins (course s14 `assemble_system_prompt`, `assemble_tool_pool`). A pool that
/// cannot be built fails the request (see [`McpTools::error_text`]).
pub struct McpExtension {
    tools: McpTools,
}

#[async_trait::async_trait]
impl Extension for McpExtension {
    async fn before_request(&mut self, request: &mut RequestContext<'_>) -> Result<(), ApiError> {
        let hub = self.tools.hub.lock().await;
        let names = hub.names();
        if names.is_empty() {
            return Ok(());
        }
        request.system.push_str(&format!("\n\nConnected MCP servers: {}", names.join(", ")));
        let pool = match hub.pool(&request.tools.names()) {
            Ok(pool) => pool,
            Err(e) => {
                let text = e.to_string();
                if let Ok(mut slot) = self.tools.pool_error.lock() {
                    *slot = Some(e);
                }
                return Err(ApiError::Decode(format!("the MCP tool pool could not be built: {text}")));
            }
        };
        let mut policies = HashMap::new();
        for tool in pool {
            policies.insert(tool.name.clone(), tool.policy);
            let (client, raw) = (tool.client, tool.tool);
            request.tools.register(FnTool::new(tool.spec, move |input: &Value| {
                let (client, raw) = (Arc::clone(&client), raw.clone());
                let args = input.as_object().cloned().unwrap_or_default();
                Box::pin(async move { Ok(client.call_tool(&raw, args).await) })
            }));
        }
        if let Ok(mut p) = self.tools.policies.lock() {
            *p = policies;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::approve::FixedApprover;
    use agent_core::hooks::HookOutcome;
    use agent_core::test_util::{EventLog, tool_call};
    use std::path::PathBuf;

    fn mcp(events: Events) -> McpTools {
        let hub = Hub::new(Vec::new(), PathBuf::from("."), Limits::default(), HostPolicy::course());
        McpTools::new(hub, Box::new(FixedApprover(false)), events)
    }

    /// The tools and SYSTEM the extension sets on a request that starts from `base`.
    async fn next_request(tools: &McpTools, base: DispatchMap) -> (DispatchMap, String) {
        let (mut map, mut system) = (base, String::from("BASE"));
        let log = EventLog::new();
        let mut request =
            RequestContext { system: &mut system, tools: &mut map, history: &[], events: &*log };
        let _ = tools.extension().before_request(&mut request).await;
        (map, system)
    }

    #[tokio::test]
    async fn test_mcp_permission_uses_host_policy() {
        let log = EventLog::new();
        let tools = mcp(log.clone());
        assert_eq!(
            tools.connect("deploy").await,
            "Connected to MCP server 'deploy'. Discovered 2 tools: trigger, status"
        );
        assert!(log.lines().iter().any(|l| l == "  [mcp] connected: deploy -> trigger, status"));
        let (map, system) = next_request(&tools, tools.add_to(DispatchMap::new())).await;
        assert_eq!(system, "BASE\n\nConnected MCP servers: deploy");
        let mut hooks = HookRegistry::new(log.clone());
        tools.register_permission_hook(&mut hooks, Box::new(FixedApprover(false)));
        let run = |hooks: &mut HookRegistry, name: &str| {
            let call = tool_call(&map, "t", name, json!({"service": "web"}));
            match hooks.run(&HookContext::PreToolUse { call: &call }) {
                HookOutcome::Value { value, .. } => Some(value),
                _ => None,
            }
        };
        assert_eq!(run(&mut hooks, "mcp__deploy__status"), None);
        assert_eq!(run(&mut hooks, "mcp__deploy__trigger").as_deref(), Some(DENIED_BY_USER));
        // A tool no host policy names, whatever it claims to be, is asked about.
        assert_eq!(run(&mut hooks, "mcp__third_party__erase").as_deref(), Some(DENIED_BY_USER));
        assert_eq!(run(&mut hooks, "bash"), None, "built-ins are the kernel's permission hook's");
    }

    #[tokio::test]
    async fn a_failed_request_is_answered_with_the_error_type_and_text() {
        let text = mcp(EventLog::new()).error_text();
        let e = ApiError::Api {
            status: 429,
            error_type: "rate_limit_error".into(),
            message: "slow down".into(),
            request_id: None,
        };
        assert_eq!(text(&e), "[Error] RateLimitError: API error 429 rate_limit_error: slow down");
        assert_eq!(
            text(&ApiError::Transport("refused".into())),
            "[Error] APIConnectionError: could not reach the endpoint: refused"
        );
    }
}
