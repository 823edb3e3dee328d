//! Real MCP servers as Claude Code configures them: a `.mcp.json` at the workspace root,
//!
//! ```json
//! {"mcpServers": {
//!   "notes": {"type": "stdio", "command": "npx", "args": ["-y", "some-mcp-server"],
//!             "env": {"NOTES_DIR": "${HOME}/notes", "LEVEL": "${LOG_LEVEL:-info}"}}
//! }}
//! ```
//!
//! `type` is `stdio` when absent; `http` and `sse` entries are read and listed but not started
//! (this harness speaks stdio only). `${VAR}` and `${VAR:-default}` are expanded in `command`,
//! `args`, `env`, `url` and `headers`; `$VAR` is left as it is, and so is an unset `${VAR}`
//! without a default (Claude Code's rules).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// The configuration file's name, at the workspace root (Claude Code's project scope).
pub const FILE_NAME: &str = ".mcp.json";

/// One configured server, after expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its key in `mcpServers`.
    pub name: String,
    /// `stdio` (the default), `http` or `sse`; only `stdio` can be started here.
    pub transport: String,
    /// The program to start (stdio).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the clean environment the server starts with.
    pub env: BTreeMap<String, String>,
    /// The endpoint of an `http`/`sse` server, kept for `/mcp`.
    pub url: Option<String>,
}

#[derive(Deserialize)]
struct File {
    #[serde(rename = "mcpServers", default)]
    servers: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "type")]
    transport: Option<String>,
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    headers: BTreeMap<String, String>,
}

/// Why a `.mcp.json` could not be used; the text names the file and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// Not the expected JSON shape.
    #[error(
        "{path}: {message} (expected {{\"mcpServers\": {{\"NAME\": {{\"command\": …, \"args\": […]}}}}}})"
    )]
    Parse {
        /// The file.
        path: String,
        /// What serde said, with the place.
        message: String,
    },
}

/// Reads `dir/.mcp.json`: the servers in file order; none when the file does not exist.
///
/// # Errors
/// [`ConfigError`] for an unreadable file or one of the wrong shape (an entry with a field
/// Claude Code does not know, a stdio entry without `command`, a server name `docs`/`deploy`,
/// which the course's servers own).
pub fn load(dir: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Vec<ServerConfig>, ConfigError> {
    let path = dir.join(FILE_NAME);
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ConfigError::Read { path: shown, source }),
    };
    parse(&text, lookup).map_err(|message| ConfigError::Parse { path: shown, message })
}

/// Parses the text of a `.mcp.json` (see [`load`]); the error is a message without the path.
///
/// # Errors
/// A message saying what is wrong and where.
pub fn parse(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Vec<ServerConfig>, String> {
    let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (name, value) in file.servers {
        if crate::course::COURSE_SERVERS.contains(&name.as_str()) {
            return Err(format!("server '{name}': the name is taken by the course's in-process server"));
        }
        let entry: Entry = serde_json::from_value(value).map_err(|e| format!("server '{name}': {e}"))?;
        let transport = entry.transport.unwrap_or_else(|| "stdio".into());
        if transport == "stdio" && entry.command.is_empty() {
            return Err(format!("server '{name}': missing field `command`"));
        }
        let x = |s: &str| expand(s, lookup);
        out.push(ServerConfig {
            name,
            transport,
            command: x(&entry.command),
            args: entry.args.iter().map(|a| x(a)).collect(),
            env: entry.env.iter().map(|(k, v)| (k.clone(), x(v))).collect(),
            url: entry.url.as_deref().map(x),
        });
    }
    Ok(out)
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` with `lookup`. An unset `${VAR}` stays as
/// written; `${VAR:-default}` gives `default` when `VAR` is unset or empty; `$VAR` and an
/// unclosed `${` stay as written.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        let valid = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        match (valid, lookup(var), default) {
            (true, Some(v), Some(d)) if v.is_empty() => out.push_str(d),
            (true, Some(v), _) => out.push_str(&v),
            (true, None, Some(d)) => out.push_str(d),
            _ => out.push_str(&rest[start..start + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_as_claude_code_expands_them() {
        assert_eq!(expand("${HOME}/notes", &env), "/home/u/notes");
        assert_eq!(expand("${NOPE}", &env), "${NOPE}");
        assert_eq!(expand("${NOPE:-info}", &env), "info");
        assert_eq!(expand("${EMPTY:-x}", &env), "x");
        assert_eq!(expand("$HOME ${HOME", &env), "$HOME ${HOME");
        assert_eq!(expand("a${HOME:-z}b${NOPE:-}c", &env), "a/home/ubc");
    }

    #[test]
    fn a_claude_code_file_parses_with_defaults() {
        let text = r#"{"mcpServers": {
            "notes": {"command": "srv", "args": ["--dir", "${HOME}"], "env": {"L": "${LVL:-info}"}},
            "web": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"A": "b"}}
        }}"#;
        let servers = parse(text, &env).unwrap_or_default();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].transport, "stdio");
        assert_eq!(servers[0].args, ["--dir", "/home/u"]);
        assert_eq!(servers[0].env.get("L").map(String::as_str), Some("info"));
        assert_eq!(servers[1].transport, "http");
    }

    #[test]
    fn wrong_shapes_say_what_is_wrong() {
        assert!(parse(r#"{"mcpServers": {"a": {"args": []}}}"#, &env).is_err_and(|e| e.contains("command")));
        assert!(
            parse(r#"{"mcpServers": {"a": {"command": "x", "cmd": 1}}}"#, &env)
                .is_err_and(|e| e.contains("cmd"))
        );
        assert!(
            parse(r#"{"mcpServers": {"docs": {"command": "x"}}}"#, &env).is_err_and(|e| e.contains("taken"))
        );
        assert!(parse("[1]", &env).is_err());
    }
}
