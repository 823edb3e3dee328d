//! The dynamic tool pool (course s14 `assemble_tool_pool`): the built-in tools, then every
//! connected server's tools under `mcp__{server}__{tool}`, with the host's policy for each.
//! Rebuilt before every request, so tools a `connect_mcp` discovered appear from the next
//! request on.

use std::collections::HashMap;
use std::sync::Arc;

use agent_core::messages::ToolSpec;

use crate::client::McpClient;

/// The longest model-facing tool name the pool accepts (course s14: 64 characters).
pub const MAX_TOOL_NAME: usize = 64;

/// What the host does before an MCP tool runs. Decided by the host, never by the server's
/// annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Runs without asking.
    Allow,
    /// Asks `Allow? [y/N]` first (`[permission] External tool …`). The default.
    Confirm,
}

impl Policy {
    /// `allow` or `confirm`, as the course writes them and `/mcp` shows them.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Allow => "allow",
            Policy::Confirm => "confirm",
        }
    }
}

/// The host policy table (course s14 `MCP_HOST_POLICY`), keyed by server and raw tool name;
/// anything not in it is [`Policy::Confirm`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPolicy {
    table: HashMap<(String, String), Policy>,
}

impl HostPolicy {
    /// The course's table: `docs` `search` and `get_version`, `deploy` `status` allowed;
    /// `deploy` `trigger` confirmed.
    pub fn course() -> Self {
        let mut p = Self::default();
        for (s, t, policy) in [
            ("docs", "search", Policy::Allow),
            ("docs", "get_version", Policy::Allow),
            ("deploy", "status", Policy::Allow),
            ("deploy", "trigger", Policy::Confirm),
        ] {
            p.set(s, t, policy);
        }
        p
    }

    /// Sets the policy of `tool` on `server`.
    pub fn set(&mut self, server: &str, tool: &str, policy: Policy) {
        self.table.insert((server.to_owned(), tool.to_owned()), policy);
    }

    /// The policy of `tool` on `server`: the table's, else [`Policy::Confirm`].
    pub fn get(&self, server: &str, tool: &str) -> Policy {
        self.table.get(&(server.to_owned(), tool.to_owned())).copied().unwrap_or(Policy::Confirm)
    }
}

/// Why the pool could not be built (the course's `ValueError`s, same texts). The loop turns it
/// into the assistant text `[Error] ValueError: {text}` for that request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// A server or tool name made only of characters outside the alphabet… of nothing at all.
    #[error("MCP names cannot normalize to an empty string")]
    Empty,
    /// `mcp__{server}__{tool}` longer than [`MAX_TOOL_NAME`].
    #[error("MCP tool name is longer than 64 characters: {0}")]
    TooLong(String),
    /// Two tools with one model-facing name.
    #[error("MCP tool name collision after normalization: '{name}' maps both {first} and {second}")]
    Collision {
        /// The shared name.
        name: String,
        /// What had it first: `built-in tool 'bash'` or `MCP tool 'docs'/'search'`.
        first: String,
        /// What wanted it next.
        second: String,
    },
    /// A schema that is not an object schema.
    #[error("Invalid input schema for {0}")]
    Schema(String),
}

impl PoolError {
    /// The Python exception type the course raises: always `ValueError`.
    pub const TYPE: &'static str = "ValueError";
}

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (course
/// `normalize_mcp_name`).
///
/// # Errors
/// [`PoolError::Empty`] for an empty name.
pub fn normalize_mcp_name(name: &str) -> Result<String, PoolError> {
    if name.is_empty() {
        return Err(PoolError::Empty);
    }
    Ok(name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect())
}

/// Python's `repr` of a str, as the course's messages quote names (`'docs'`).
fn repr(s: &str) -> String {
    crate::course::py_repr(&serde_json::Value::String(s.to_owned()))
}

/// One MCP tool in the pool.
#[derive(Clone)]
pub struct PoolTool {
    /// `mcp__{server}__{tool}`, normalised.
    pub name: String,
    /// The server's name as connected.
    pub server: String,
    /// The tool's raw name on its server (what `tools/call` gets).
    pub tool: String,
    /// What the model gets: name, description (`""` when none), the server's input schema.
    pub spec: ToolSpec,
    /// The host's policy for it.
    pub policy: Policy,
    /// The server to call.
    pub client: Arc<dyn McpClient>,
}

impl std::fmt::Debug for PoolTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolTool")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Every connected server's tools, checked against the built-in names and each other (course
/// `assemble_tool_pool`, the MCP half: the built-ins stay with the caller).
///
/// `builtins` are the built-in tool names in order; `servers` the connected servers in
/// connection order.
///
/// # Errors
/// [`PoolError`], the first problem met, in the course's order of checks.
pub fn assemble(
    builtins: &[String],
    servers: &[Arc<dyn McpClient>],
    policy: &HostPolicy,
) -> Result<Vec<PoolTool>, PoolError> {
    let mut origins: HashMap<String, String> =
        builtins.iter().map(|n| (n.clone(), format!("built-in tool {}", repr(n)))).collect();
    let mut out = Vec::new();
    for server in servers {
        let safe_server = normalize_mcp_name(server.name())?;
        for def in server.tools() {
            let safe_tool = normalize_mcp_name(&def.name)?;
            let name = format!("mcp__{safe_server}__{safe_tool}");
            if name.chars().count() > MAX_TOOL_NAME {
                return Err(PoolError::TooLong(name));
            }
            let origin = format!("MCP tool {}/{}", repr(server.name()), repr(&def.name));
            if let Some(first) = origins.get(&name) {
                return Err(PoolError::Collision { name, first: first.clone(), second: origin });
            }
            let schema_ok = def.input_schema.as_object().is_some_and(|o| match o.get("type") {
                None => true,
                Some(t) => t == "object",
            });
            if !schema_ok {
                return Err(PoolError::Schema(origin));
            }
            origins.insert(name.clone(), origin);
            out.push(PoolTool {
                spec: ToolSpec {
                    name: name.clone(),
                    description: def.description.clone(),
                    input_schema: def.input_schema.clone(),
                },
                name,
                server: server.name().to_owned(),
                tool: def.name.clone(),
                policy: policy.get(server.name(), &def.name),
                client: Arc::clone(server),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ToolDef;
    use crate::course::{InProcess, docs};
    use serde_json::Value;
    use serde_json::json;

    fn base() -> Vec<String> {
        ["bash", "read_file", "write_file", "edit_file", "glob", "connect_mcp"].map(String::from).to_vec()
    }

    fn server(name: &str, tools: &[&str]) -> Arc<dyn McpClient> {
        let mut s = InProcess::new(name);
        let defs = tools
            .iter()
            .map(|t| ToolDef {
                name: (*t).into(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
                annotations: Value::Null,
            })
            .collect();
        let handlers = tools.iter().map(|t| ((*t).to_owned(), crate::course::docs_like_handler())).collect();
        let _ = s.register(defs, handlers);
        Arc::new(s)
    }

    #[test]
    fn after_connecting_docs_the_pool_holds_its_two_tools_with_the_host_policy() {
        let pool = assemble(&base(), &[Arc::new(docs())], &HostPolicy::course()).map_err(|e| e.to_string());
        let pool = pool.unwrap_or_default();
        let names: Vec<&str> = pool.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mcp__docs__search", "mcp__docs__get_version"]);
        assert!(pool.iter().all(|t| t.policy == Policy::Allow));
        assert_eq!(pool[0].spec.description, "Search the documentation.");
    }

    #[test]
    fn test_normalized_mcp_tool_name_collisions_are_rejected() {
        let err = assemble(
            &base(),
            &[server("docs.one", &["get.version"]), server("docs_one", &["get_version"])],
            &HostPolicy::default(),
        );
        assert_eq!(
            err.map(|_| ()).map_err(|e| e.to_string()),
            Err("MCP tool name collision after normalization: 'mcp__docs_one__get_version' maps both MCP tool 'docs.one'/'get.version' and MCP tool 'docs_one'/'get_version'".into())
        );
    }

    #[test]
    fn long_names_empty_names_bad_schemas_and_builtin_clashes_are_refused() {
        let long = "x".repeat(60);
        let e = assemble(&base(), &[server("s", &[&long])], &HostPolicy::default())
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(e, Err(format!("MCP tool name is longer than 64 characters: mcp__s__{long}")));
        assert_eq!(normalize_mcp_name(""), Err(PoolError::Empty));
        assert_eq!(normalize_mcp_name("a b/c-d").as_deref(), Ok("a_b_c-d"));
        let clash = assemble(&["mcp__a__b".to_owned()], &[server("a", &["b"])], &HostPolicy::default());
        assert_eq!(
            clash.map(|_| ()).map_err(|e| e.to_string()),
            Err("MCP tool name collision after normalization: 'mcp__a__b' maps both built-in tool 'mcp__a__b' and MCP tool 'a'/'b'".into())
        );
        let mut s = InProcess::new("s");
        let _ = s.register(
            vec![ToolDef {
                name: "t".into(),
                description: String::new(),
                input_schema: json!({"type": "string"}),
                annotations: Value::Null,
            }],
            vec![("t".into(), crate::course::docs_like_handler())],
        );
        let bad = assemble(&base(), &[Arc::new(s)], &HostPolicy::default());
        assert_eq!(
            bad.map(|_| ()).map_err(|e| e.to_string()),
            Err("Invalid input schema for MCP tool 's'/'t'".into())
        );
    }

    #[test]
    fn unknown_tools_default_to_confirm_whatever_their_annotations_say() {
        let p = HostPolicy::course();
        assert_eq!(p.get("deploy", "trigger"), Policy::Confirm);
        assert_eq!(p.get("deploy", "status"), Policy::Allow);
        assert_eq!(p.get("third_party", "erase"), Policy::Confirm);
    }
}
