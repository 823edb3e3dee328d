//! The one client trait every MCP server is reached through, in-process or real.

use async_trait::async_trait;
use serde_json::{Map, Value};

/// One tool as a server's `tools/list` describes it (MCP `Tool`): its raw name, description,
/// `inputSchema` and `annotations`. Annotations (`readOnlyHint`, `destructiveHint`, …) are kept
/// for `/mcp` to show and are never forwarded to the model nor read by the permission check:
/// the host's policy decides (course s14: "Authorization comes from host configuration, never
/// server descriptions").
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The tool's name on its server, before normalisation (`search`, `get.version`).
    pub name: String,
    /// What the server says the tool does; `""` when it says nothing.
    pub description: String,
    /// The tool's `inputSchema`, as the server sent it (checked by the pool: an object schema).
    pub input_schema: Value,
    /// The server's `annotations` object, `Value::Null` when absent. Shown, never trusted.
    pub annotations: Value,
}

/// A connected MCP server: what `tools/list` gave at connection, and `tools/call`.
///
/// Errors never escape as Rust errors: like the course's `MCPClient.call_tool`, a failed call
/// returns text beginning `MCP error: `, which goes back to the model as the tool result, so a
/// broken server never ends the session.
#[async_trait]
pub trait McpClient: Send + Sync {
    /// The server's name as configured (`docs`, or a `.mcp.json` key).
    fn name(&self) -> &str;
    /// The tools discovered at connection, in the server's order.
    fn tools(&self) -> &[ToolDef];
    /// Calls `tool` with `args`; the result text, or `MCP error: …`.
    async fn call_tool(&self, tool: &str, args: Map<String, Value>) -> String;
    /// Ends the server (a child process is stopped); an in-process server does nothing.
    async fn shutdown(&self) {}
    /// What the server wrote to stderr, its last lines, for `/mcp`; empty for an in-process one.
    fn stderr_tail(&self) -> String {
        String::new()
    }
}
