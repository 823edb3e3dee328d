//! `connect_mcp` (course s14): the servers that can be connected (the course's `docs` and
//! `deploy`, then the `.mcp.json` ones), those connected (in connection order), the approval a
//! real server needs before it first starts, and the ending of every server with the harness.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use agent_core::approve::{Answer, Approver, Question, Reply};

use crate::client::McpClient;
use crate::config::ServerConfig;
use crate::course::{COURSE_SERVERS, course_server_in};
use crate::pool::{HostPolicy, PoolError, PoolTool, assemble};
use crate::stdio::{Limits, StdioClient};

/// What [`Hub::connect`] gives: the tool result, and the line the terminal shows when a server
/// was connected (`  [mcp] connected: docs -> search, get_version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    /// The text the model gets.
    pub result: String,
    /// The course's `[mcp] connected` line, when a server was connected.
    pub line: Option<String>,
}

/// The servers `connect_mcp` knows, and those it connected.
pub struct Hub {
    configured: Vec<ServerConfig>,
    connected: Vec<Arc<dyn McpClient>>,
    approved: HashSet<String>,
    cwd: PathBuf,
    limits: Limits,
    policy: HostPolicy,
    /// The course's s15 definitions of its servers' tools ([`Hub::s15`]).
    s15: bool,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("configured", &self.configured)
            .field("connected", &self.names())
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// A hub offering the course's servers and `configured` (from [`crate::config::load`]);
    /// real servers start in `cwd`, within `limits`; `policy` is the host's table.
    pub fn new(configured: Vec<ServerConfig>, cwd: PathBuf, limits: Limits, policy: HostPolicy) -> Self {
        Self { configured, connected: Vec::new(), approved: HashSet::new(), cwd, limits, policy, s15: false }
    }

    /// The same hub serving the course's servers as its s15 defines them (`get_version`'s
    /// schema says `"required": []`).
    #[must_use]
    pub fn s15(mut self) -> Self {
        self.s15 = true;
        self
    }

    /// Every server name `connect_mcp` accepts: `docs`, `deploy`, then the configured ones.
    pub fn available(&self) -> Vec<String> {
        COURSE_SERVERS
            .iter()
            .map(|s| (*s).to_owned())
            .chain(self.configured.iter().map(|c| c.name.clone()))
            .collect()
    }

    /// The configured real servers.
    pub fn configured(&self) -> &[ServerConfig] {
        &self.configured
    }

    /// The connected servers, in connection order.
    pub fn connected(&self) -> &[Arc<dyn McpClient>] {
        &self.connected
    }

    /// The connected servers' names, in connection order (for SYSTEM's
    /// `Connected MCP servers: …`).
    pub fn names(&self) -> Vec<String> {
        self.connected.iter().map(|c| c.name().to_owned()).collect()
    }

    /// The host policy table.
    pub fn policy(&self) -> &HostPolicy {
        &self.policy
    }

    /// The MCP half of the tool pool for the next request (see [`crate::pool::assemble`]).
    ///
    /// # Errors
    /// [`PoolError`] as the course raises it.
    pub fn pool(&self, builtins: &[String]) -> Result<Vec<PoolTool>, PoolError> {
        assemble(builtins, &self.connected, &self.policy)
    }

    /// `connect_mcp(name)`: connects the server and discovers its tools. A configured server
    /// is started only once `approver` has allowed it (asked once per session; an approver
    /// that may not ask now refuses, and nothing is started).
    pub async fn connect(&mut self, name: &str, approver: &mut dyn Approver) -> Connected {
        let text = |result: String| Connected { result, line: None };
        if self.connected.iter().any(|c| c.name() == name) {
            return text(format!("MCP server '{name}' already connected"));
        }
        let client: Arc<dyn McpClient> = if let Some(server) = course_server_in(name, self.s15) {
            Arc::new(server)
        } else if let Some(config) = self.configured.iter().find(|c| c.name == name).cloned() {
            if !self.approved.contains(name) {
                let mut command = vec![config.command.clone()];
                command.extend(config.args.iter().cloned());
                let question = Question::new(
                    format!("Start MCP server '{name}' from .mcp.json (runs a program you did not write)"),
                    command.join(" "),
                    Vec::new(),
                );
                match approver.reply(&question) {
                    Reply::Answer(Answer::Yes | Answer::Always) => {
                        self.approved.insert(name.to_owned());
                    }
                    Reply::Answer(Answer::No) => {
                        return text(format!(
                            "MCP error: starting server '{name}' was not approved; nothing was started"
                        ));
                    }
                    Reply::Refused(refusal) => return text(refusal),
                }
            }
            match StdioClient::connect(&config, &self.cwd, self.limits).await {
                Ok(c) => Arc::new(c),
                Err(e) => return text(e),
            }
        } else {
            return text(format!("Unknown server '{name}'. Available: {}", self.available().join(", ")));
        };
        let names: Vec<&str> = client.tools().iter().map(|t| t.name.as_str()).collect();
        let joined = names.join(", ");
        let result = format!("Connected to MCP server '{name}'. Discovered {} tools: {joined}", names.len());
        let line = Some(format!("  [mcp] connected: {name} -> {joined}"));
        self.connected.push(client);
        Connected { result, line }
    }

    /// What `/mcp` shows: each server `connect_mcp` accepts, whether it is connected (and for a
    /// `.mcp.json` one its command and whether it was approved), each connected server's tools
    /// as `mcp__{server}__{tool}` with the host's policy and the server's annotations (shown,
    /// not trusted), and the last lines a real server wrote to stderr. Server-written text goes
    /// through [`agent_core::sanitize::sanitize`].
    pub fn describe(&self) -> String {
        use agent_core::sanitize::sanitize;
        let mut out = String::from("MCP servers (host policy decides; annotations are not permissions):\n");
        for name in self.available() {
            let connected = self.connected.iter().find(|c| c.name() == name);
            let origin = match self.configured.iter().find(|c| c.name == name) {
                None => "in-process (course)".to_owned(),
                Some(c) => {
                    let approved =
                        if self.approved.contains(&name) { "approved" } else { "not approved yet" };
                    format!("{} {} via .mcp.json, {}, {approved}", c.command, c.args.join(" "), c.transport)
                }
            };
            let state = if connected.is_some() { "connected" } else { "not connected" };
            out.push_str(&format!("  {} [{state}] {}\n", sanitize(&name), sanitize(&origin)));
            let Some(client) = connected else { continue };
            let safe_server = crate::pool::normalize_mcp_name(&name).unwrap_or_default();
            for tool in client.tools() {
                let safe_tool = crate::pool::normalize_mcp_name(&tool.name).unwrap_or_default();
                let policy = self.policy.get(&name, &tool.name).as_str();
                let hints = if tool.annotations.is_null() {
                    String::new()
                } else {
                    format!(" (server says {})", tool.annotations)
                };
                out.push_str(&format!(
                    "    mcp__{safe_server}__{safe_tool}  {policy}  {}{}\n",
                    sanitize(&tool.description),
                    sanitize(&hints)
                ));
            }
            let tail = client.stderr_tail();
            let lines: Vec<&str> = tail.lines().rev().take(5).collect();
            for line in lines.into_iter().rev() {
                out.push_str(&format!("    stderr: {}\n", sanitize(line)));
            }
        }
        out
    }

    /// Ends every connected server (their processes are stopped); called when the harness
    /// exits.
    pub async fn shutdown(&mut self) {
        for c in self.connected.drain(..) {
            c.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::approve::FixedApprover;

    fn hub() -> Hub {
        Hub::new(Vec::new(), PathBuf::from("."), Limits::default(), HostPolicy::course())
    }

    #[tokio::test]
    async fn test_mcp_lesson_builds_on_the_base_kernel() {
        let mut h = hub();
        let base = ["bash", "read_file", "write_file", "edit_file", "glob", "connect_mcp"].map(String::from);
        assert!(h.pool(&base).is_ok_and(|p| p.is_empty()));
        let c = h.connect("docs", &mut FixedApprover(false)).await;
        assert_eq!(c.result, "Connected to MCP server 'docs'. Discovered 2 tools: search, get_version");
        assert_eq!(c.line.as_deref(), Some("  [mcp] connected: docs -> search, get_version"));
        let pool = h.pool(&base).unwrap_or_default();
        let search = pool.iter().find(|t| t.name == "mcp__docs__search");
        let args = serde_json::json!({"query": "hooks"}).as_object().cloned().unwrap_or_default();
        let out = match search {
            Some(t) => t.client.call_tool(&t.tool, args).await,
            None => String::new(),
        };
        assert_eq!(out, "[docs] Found 3 results for 'hooks'");
    }

    #[tokio::test]
    async fn connect_mcp_answers_twice_and_unknown_names_as_the_course_does() {
        let mut h = hub();
        let _ = h.connect("docs", &mut FixedApprover(false)).await;
        assert_eq!(
            h.connect("docs", &mut FixedApprover(false)).await.result,
            "MCP server 'docs' already connected"
        );
        assert_eq!(
            h.connect("nope", &mut FixedApprover(false)).await.result,
            "Unknown server 'nope'. Available: docs, deploy"
        );
        assert_eq!(h.names(), ["docs"]);
    }

    #[tokio::test]
    async fn slash_mcp_lists_servers_tools_and_the_host_policy() {
        let mut h = hub();
        let _ = h.connect("deploy", &mut FixedApprover(false)).await;
        let text = h.describe();
        assert!(text.contains("  docs [not connected] in-process (course)"), "{text}");
        assert!(text.contains("  deploy [connected] in-process (course)"), "{text}");
        assert!(text.contains("    mcp__deploy__trigger  confirm  Trigger a deployment."), "{text}");
        assert!(text.contains("    mcp__deploy__status  allow  Check deployment status."), "{text}");
    }

    #[tokio::test]
    async fn a_refused_configured_server_is_not_started() {
        let config = ServerConfig {
            name: "real".into(),
            transport: "stdio".into(),
            command: "/nonexistent/never-run".into(),
            args: Vec::new(),
            env: Default::default(),
            url: None,
        };
        let mut h = Hub::new(vec![config], PathBuf::from("."), Limits::default(), HostPolicy::course());
        assert_eq!(h.available(), ["docs", "deploy", "real"]);
        let c = h.connect("real", &mut FixedApprover(false)).await;
        assert_eq!(c.result, "MCP error: starting server 'real' was not approved; nothing was started");
        // Approved, the program is tried: here it does not exist, which is a clear MCP error.
        let c = h.connect("real", &mut FixedApprover(true)).await;
        assert!(c.result.starts_with("MCP error: server 'real' could not start"), "{}", c.result);
        assert!(h.names().is_empty());
    }
}
