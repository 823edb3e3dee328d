//! The course's in-process MCP servers, `docs` and `deploy` (course s14 `_mock_server_docs`,
//! `_mock_server_deploy`), and the small registry they are built on (`MCPClient.register`,
//! `MCPClient.call_tool`), byte for byte: same definitions, same results, same `MCP error: …`
//! texts, including the `TypeError` Python raises when a lambda gets a missing or unexpected
//! keyword argument.

use std::collections::HashSet;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::client::{McpClient, ToolDef};

/// The names of the course's servers, in the course's order (`MOCK_SERVERS`).
pub const COURSE_SERVERS: [&str; 2] = ["docs", "deploy"];

/// A handler of an in-process tool: its keyword parameters (in order) and what it makes of their
/// values. Modelled on the course's lambdas (`lambda query: f"…{query}…"`), so a call with a
/// missing or extra argument fails the way Python's does.
#[derive(Clone)]
pub struct Handler {
    /// The Python qualified name shown in a `TypeError` (`_mock_server_docs.<locals>.<lambda>`).
    pub qualname: String,
    /// The keyword parameters, all required.
    pub params: Vec<String>,
    /// The body: the parameters' values, each as Python's `str()` would print it.
    pub body: fn(&[String]) -> String,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler").field("qualname", &self.qualname).field("params", &self.params).finish()
    }
}

/// Why [`InProcess::register`] refused a server's tools (the course's `ValueError`s).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A tool without a name.
    #[error("Every MCP tool needs a non-empty name")]
    EmptyName,
    /// Two tools with one name.
    #[error("Duplicate MCP tool name on server '{0}'")]
    Duplicate(String),
    /// Tools without a handler, named in order.
    #[error("Missing MCP handlers: {}", .0.join(", "))]
    Missing(Vec<String>),
}

/// An in-process MCP server (the course's `MCPClient`: "Small in-process stand-in for MCP
/// tools/list and tools/call").
#[derive(Debug, Clone)]
pub struct InProcess {
    name: String,
    tools: Vec<ToolDef>,
    handlers: Vec<(String, Handler)>,
}

impl InProcess {
    /// A server named `name` with no tools yet.
    pub fn new(name: impl Into<String>) -> Self {
        Self { name: name.into(), tools: Vec::new(), handlers: Vec::new() }
    }

    /// Sets the server's tools and their handlers (`MCPClient.register`).
    ///
    /// # Errors
    /// [`RegisterError`] when a name is empty, repeated, or has no handler; nothing changes then.
    pub fn register(
        &mut self,
        tools: Vec<ToolDef>,
        handlers: Vec<(String, Handler)>,
    ) -> Result<(), RegisterError> {
        if tools.iter().any(|t| t.name.is_empty()) {
            return Err(RegisterError::EmptyName);
        }
        let mut seen = HashSet::new();
        if !tools.iter().all(|t| seen.insert(t.name.as_str())) {
            return Err(RegisterError::Duplicate(self.name.clone()));
        }
        let missing: Vec<String> = tools
            .iter()
            .filter(|t| !handlers.iter().any(|(n, _)| *n == t.name))
            .map(|t| t.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(RegisterError::Missing(missing));
        }
        self.tools = tools;
        self.handlers = handlers;
        Ok(())
    }

    /// `tools/call` without the async wrapper: the result, or `MCP error: …` (course
    /// `MCPClient.call_tool`).
    pub fn call(&self, tool: &str, args: &Map<String, Value>) -> String {
        let Some((_, handler)) = self.handlers.iter().find(|(n, _)| n == tool) else {
            return format!("MCP error: unknown tool '{tool}'");
        };
        match bind(handler, args) {
            Ok(values) => (handler.body)(&values),
            Err(e) => format!("MCP error: TypeError: {e}"),
        }
    }
}

/// Binds keyword arguments to a handler's parameters the way CPython does for a lambda, or the
/// `TypeError` text CPython gives (an unexpected keyword is reported before missing ones).
fn bind(handler: &Handler, args: &Map<String, Value>) -> Result<Vec<String>, String> {
    let q = &handler.qualname;
    if let Some(extra) = args.keys().find(|k| !handler.params.contains(k)) {
        return Err(format!("{q}() got an unexpected keyword argument '{extra}'"));
    }
    let missing: Vec<&String> = handler.params.iter().filter(|p| !args.contains_key(*p)).collect();
    if !missing.is_empty() {
        let names: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
        let list = match names.as_slice() {
            [one] => one.clone(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
            [] => String::new(),
        };
        let s = if missing.len() == 1 { "" } else { "s" };
        return Err(format!("{q}() missing {} required positional argument{s}: {list}", missing.len()));
    }
    Ok(handler.params.iter().map(|p| py_str(&args[p])).collect())
}

/// Python's `str()` of a JSON value as `json.loads` would have made it: strings as they are,
/// `True`/`False`/`None`, numbers as written, lists and objects in Python's repr.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr` of a JSON value: `'text'` (double quotes when it holds a `'` and no `"`),
/// `None`, `True`, lists and dicts as Python prints them.
pub(crate) fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
            let mut out = String::from(quote);
            for c in s.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c == quote => {
                        out.push('\\');
                        out.push(c);
                    }
                    c => out.push(c),
                }
            }
            out.push(quote);
            out
        }
        Value::Array(items) => format!("[{}]", items.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_repr(&Value::String(k.clone())), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[async_trait]
impl McpClient for InProcess {
    fn name(&self) -> &str {
        &self.name
    }
    fn tools(&self) -> &[ToolDef] {
        &self.tools
    }
    async fn call_tool(&self, tool: &str, args: Map<String, Value>) -> String {
        self.call(tool, &args)
    }
}

fn def(name: &str, description: &str, input_schema: Value, annotations: Value) -> ToolDef {
    ToolDef { name: name.into(), description: description.into(), input_schema, annotations }
}

fn lambda(server: &str, params: &[&str], body: fn(&[String]) -> String) -> Handler {
    Handler {
        qualname: format!("_mock_server_{server}.<locals>.<lambda>"),
        params: params.iter().map(|p| (*p).to_owned()).collect(),
        body,
    }
}

fn schema_with(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

/// The course's `docs` server: `search(query)` and `get_version()`, both `readOnlyHint`.
pub fn docs() -> InProcess {
    docs_in(false)
}

/// [`docs`] as the course's s15 defines it when `s15`: `get_version`'s schema has
/// `"required": []`.
pub fn docs_in(s15: bool) -> InProcess {
    let mut no_input = json!({"type": "object", "properties": {}});
    if s15 {
        no_input["required"] = json!([]);
    }
    let mut server = InProcess::new("docs");
    let tools = vec![
        def("search", "Search the documentation.", schema_with("query"), json!({"readOnlyHint": true})),
        def("get_version", "Get the documentation API version.", no_input, json!({"readOnlyHint": true})),
    ];
    let handlers = vec![
        (
            "search".to_owned(),
            lambda("docs", &["query"], |v| format!("[docs] Found 3 results for '{}'", v[0])),
        ),
        ("get_version".to_owned(), lambda("docs", &[], |_| "[docs] API v2.1.0".to_owned())),
    ];
    // The course's own definitions: registering them cannot fail.
    let _ = server.register(tools, handlers);
    server
}

/// The course's `deploy` server: `trigger(service)` (`destructiveHint`) and `status(service)`
/// (`readOnlyHint`).
pub fn deploy() -> InProcess {
    let mut server = InProcess::new("deploy");
    let tools = vec![
        def("trigger", "Trigger a deployment.", schema_with("service"), json!({"destructiveHint": true})),
        def("status", "Check deployment status.", schema_with("service"), json!({"readOnlyHint": true})),
    ];
    let handlers = vec![
        ("trigger".to_owned(), lambda("deploy", &["service"], |v| format!("[deploy] Triggered: {}", v[0]))),
        (
            "status".to_owned(),
            lambda("deploy", &["service"], |v| format!("[deploy] {}: running (v1.4.2)", v[0])),
        ),
    ];
    let _ = server.register(tools, handlers);
    server
}

/// The course server named `name`, or `None` for a name that is not `docs` or `deploy`.
pub fn course_server(name: &str) -> Option<InProcess> {
    course_server_in(name, false)
}

/// [`course_server`], in the course's s15 definitions when `s15` ([`docs_in`]).
pub fn course_server_in(name: &str, s15: bool) -> Option<InProcess> {
    match name {
        "docs" => Some(docs_in(s15)),
        "deploy" => Some(deploy()),
        _ => None,
    }
}

/// A handler taking no argument and returning `""`, for tests that need tools with handlers.
#[doc(hidden)]
pub fn docs_like_handler() -> Handler {
    lambda("test", &[], |_| String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_course_servers_answer_as_the_course_does() {
        let d = docs();
        assert_eq!(d.call("search", &args(json!({"query": "hooks"}))), "[docs] Found 3 results for 'hooks'");
        assert_eq!(d.call("get_version", &Map::new()), "[docs] API v2.1.0");
        assert_eq!(d.call("nope", &Map::new()), "MCP error: unknown tool 'nope'");
        assert_eq!(
            d.call("search", &Map::new()),
            "MCP error: TypeError: _mock_server_docs.<locals>.<lambda>() missing 1 required positional argument: 'query'"
        );
        assert_eq!(
            d.call("get_version", &args(json!({"x": 1}))),
            "MCP error: TypeError: _mock_server_docs.<locals>.<lambda>() got an unexpected keyword argument 'x'"
        );
        let p = deploy();
        assert_eq!(p.call("trigger", &args(json!({"service": "web"}))), "[deploy] Triggered: web");
        assert_eq!(p.call("status", &args(json!({"service": 3}))), "[deploy] 3: running (v1.4.2)");
        assert_eq!(p.call("status", &args(json!({"service": true}))), "[deploy] True: running (v1.4.2)");
    }

    #[test]
    fn register_refuses_what_the_course_refuses() {
        let h = lambda("x", &[], |_| String::new());
        let t = |n: &str| def(n, "", json!({}), Value::Null);
        let mut s = InProcess::new("srv");
        assert_eq!(s.register(vec![t("")], vec![]), Err(RegisterError::EmptyName));
        assert_eq!(
            s.register(vec![t("a"), t("a")], vec![]).map_err(|e| e.to_string()),
            Err("Duplicate MCP tool name on server 'srv'".into())
        );
        assert_eq!(
            s.register(vec![t("a"), t("b")], vec![("c".into(), h)]).map_err(|e| e.to_string()),
            Err("Missing MCP handlers: a, b".into())
        );
    }
}
