//! A real MCP server: a child process spoken to over stdio through `rmcp`, the official Rust
//! SDK (client side). The child is a program the user did not write, so:
//! - it starts with the clean environment commands get ([`agent_core::process::command_env`]),
//!   plus the `env` of its `.mcp.json` entry, in the workspace, as the leader of its own process
//!   group, so ending it ends what it started;
//! - its stderr is kept (the last [`STDERR_KEEP`] bytes) for `/mcp`, never shown as it comes;
//! - `initialize` and `tools/list` must answer within [`Limits::startup`], each `tools/call`
//!   within [`Limits::call`] (Claude Code's `MCP_TIMEOUT` / `MCP_TOOL_TIMEOUT`, milliseconds);
//! - a tool list larger than [`Limits::max_list_bytes`] is refused;
//! - every failure is a text `MCP error: …` for the model; nothing panics.

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::client::{McpClient, ToolDef};
use crate::config::ServerConfig;

/// How many bytes of a server's stderr are kept for `/mcp`.
pub const STDERR_KEEP: usize = 16 * 1024;

/// How long a server may take, and how much it may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `initialize` plus `tools/list`. Default 30 s; `MCP_TIMEOUT` (ms) overrides it.
    pub startup: Duration,
    /// One `tools/call`. Default 120 s; `MCP_TOOL_TIMEOUT` (ms) overrides it.
    pub call: Duration,
    /// The tool list, as JSON. Default 256 KiB.
    pub max_list_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { startup: Duration::from_secs(30), call: Duration::from_secs(120), max_list_bytes: 256 * 1024 }
    }
}

impl Limits {
    /// The defaults, with `MCP_TIMEOUT` and `MCP_TOOL_TIMEOUT` (milliseconds) read from the
    /// environment as Claude Code reads them; a value that is not a number is ignored.
    pub fn from_env() -> Self {
        let ms = |k: &str| {
            std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_millis)
        };
        let d = Self::default();
        Self {
            startup: ms("MCP_TIMEOUT").unwrap_or(d.startup),
            call: ms("MCP_TOOL_TIMEOUT").unwrap_or(d.call),
            ..d
        }
    }
}

/// A connected stdio MCP server.
pub struct StdioClient {
    name: String,
    tools: Vec<ToolDef>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    peer: rmcp::Peer<RoleClient>,
    pid: Option<u32>,
    /// The server named as the harness's own child while it runs (see `KeptChild`).
    _kept: Option<agent_core::process::KeptChild>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    limits: Limits,
}

impl std::fmt::Debug for StdioClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioClient")
            .field("name", &self.name)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

fn keep_stderr(buf: &Arc<Mutex<VecDeque<u8>>>, bytes: &[u8]) {
    let mut b = buf.lock().unwrap_or_else(|p| p.into_inner());
    b.extend(bytes);
    let over = b.len().saturating_sub(STDERR_KEEP);
    b.drain(..over);
}

impl StdioClient {
    /// Starts `config`'s server in `cwd` and discovers its tools.
    ///
    /// # Errors
    /// The text of an `MCP error: …` result: the program could not start, it did not answer
    /// in time, it answered something that is not MCP, or its tool list is too large.
    pub async fn connect(
        config: &ServerConfig,
        cwd: &std::path::Path,
        limits: Limits,
    ) -> Result<Self, String> {
        let name = config.name.clone();
        if config.transport != "stdio" {
            return Err(format!(
                "MCP error: server '{name}' uses the '{}' transport; this harness starts stdio servers only",
                config.transport
            ));
        }
        let mut cmd = Command::new(&config.command);
        cmd.args(&config.args)
            .current_dir(cwd)
            .env_clear()
            .envs(agent_core::process::command_env())
            .envs(&config.env);
        #[cfg(unix)]
        cmd.process_group(0);
        cmd.kill_on_drop(true);
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("MCP error: server '{name}' could not start `{}`: {e}", config.command))?;
        let pid = transport.id();
        let kept = pid.map(agent_core::process::keep_child);
        let stderr_kept = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(mut err) = stderr {
            let kept = Arc::clone(&stderr_kept);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    keep_stderr(&kept, &buf[..n]);
                }
            });
        }
        let fail = |what: String| {
            kill_group(pid);
            what
        };
        let service = match tokio::time::timeout(limits.startup, ().serve(transport)).await {
            Err(_) => {
                return Err(fail(format!(
                    "MCP error: server '{name}' did not answer initialize within {}",
                    secs(limits.startup)
                )));
            }
            Ok(Err(e)) => return Err(fail(format!("MCP error: server '{name}' failed to initialize: {e}"))),
            Ok(Ok(s)) => s,
        };
        let peer = service.peer().clone();
        let listed = match tokio::time::timeout(limits.startup, peer.list_all_tools()).await {
            Err(_) => Err(format!(
                "MCP error: server '{name}' did not answer tools/list within {}",
                secs(limits.startup)
            )),
            Ok(Err(e)) => Err(format!("MCP error: server '{name}' failed tools/list: {e}")),
            Ok(Ok(t)) => Ok(t),
        };
        let listed = match listed {
            Ok(l) => l,
            Err(e) => {
                let _ = service.cancel().await;
                return Err(fail(e));
            }
        };
        let size = serde_json::to_vec(&listed).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > limits.max_list_bytes {
            let _ = service.cancel().await;
            return Err(fail(format!(
                "MCP error: server '{name}' sent a tool list of {size} bytes; the limit is {} bytes",
                limits.max_list_bytes
            )));
        }
        let tools = listed
            .into_iter()
            .map(|t| ToolDef {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                annotations: t.annotations.and_then(|a| serde_json::to_value(a).ok()).unwrap_or(Value::Null),
            })
            .collect();
        Ok(Self {
            name,
            tools,
            service: tokio::sync::Mutex::new(Some(service)),
            peer,
            pid,
            _kept: kept,
            stderr: stderr_kept,
            limits,
        })
    }

    /// The child's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// Kills the server's whole process group (it leads one), so what it started ends with it.
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// The result of `tools/call` as one text: the text blocks joined by newlines, any other block
/// as its JSON; `MCP error: ` before it when the server marked it `isError`.
fn result_text(result: &rmcp::model::CallToolResult) -> String {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|b| match b.as_text() {
            Some(t) => t.text.clone(),
            None => serde_json::to_string(b).unwrap_or_default(),
        })
        .collect();
    let mut text = parts.join("\n");
    if let (true, Some(s)) = (text.is_empty(), &result.structured_content) {
        text = s.to_string();
    }
    if result.is_error == Some(true) { format!("MCP error: {text}") } else { text }
}

#[async_trait]
impl McpClient for StdioClient {
    fn name(&self) -> &str {
        &self.name
    }
    fn tools(&self) -> &[ToolDef] {
        &self.tools
    }
    async fn call_tool(&self, tool: &str, args: Map<String, Value>) -> String {
        let name = &self.name;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        match tokio::time::timeout(self.limits.call, self.peer.call_tool(params)).await {
            Err(_) => {
                format!("MCP error: server '{name}' did not answer {tool} within {}", secs(self.limits.call))
            }
            Ok(Err(rmcp::ServiceError::TransportClosed)) => {
                format!("MCP error: server '{name}' closed the connection (the process exited)")
            }
            Ok(Err(e)) => format!("MCP error: {e}"),
            Ok(Ok(result)) => result_text(&result),
        }
    }
    async fn shutdown(&self) {
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
        kill_group(self.pid);
    }
    fn stderr_tail(&self) -> String {
        let b = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&b.iter().copied().collect::<Vec<u8>>()).into_owned()
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        kill_group(self.pid);
    }
}
