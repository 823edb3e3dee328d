//! End-to-end: the real `s14` binary (the s04 kernel and MCP tools) against the loopback
//! Messages API server. `connect_mcp` connects the course's `docs` server and its tools are sent
//! from the next request on; a real MCP server named in the workspace's `.mcp.json` (the mcp
//! crate's test server, a child process over stdio) starts only once approved, its tools come
//! as `mcp__{name}__{tool}`, a call reaches it, and it is gone after `q`; refused, nothing starts.

use std::fs;
use std::path::Path;

use e2e::{
    MockServer, RecordedRequest, chapter, example, one_turn, reply, run_with_stdin, stderr, stdout,
    system_text as system, tool_names,
};
use serde_json::{Value, json};

/// The `tool_result` texts of the request's last message, in order.
fn last_results(request: &RecordedRequest) -> Vec<String> {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.as_array().into_iter().flatten().filter_map(|x| x["text"].as_str()).collect(),
        })
        .collect()
}

const BASE: [&str; 6] = ["bash", "read_file", "write_file", "edit_file", "glob", "connect_mcp"];

#[test]
fn connect_then_a_call_whose_text_comes_back_as_the_tool_result() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("c1", "connect_mcp", json!({"name": "docs"}))]),
        reply::tool_uses(&[("s1", "mcp__docs__search", json!({"query": "hooks"}))]),
        reply::text("Found them."),
    ]);
    let out = one_turn("s14", ws.path(), &server, "Search the docs for hooks.");
    let requests = server.requests();
    assert_eq!(tool_names(&requests[0]), BASE, "before connect, the built-ins only");
    assert!(!system(&requests[0]).contains("Connected MCP servers"), "{}", system(&requests[0]));
    assert_eq!(
        last_results(&requests[1]),
        ["Connected to MCP server 'docs'. Discovered 2 tools: search, get_version"]
    );
    // The pool after connect, in the next request: the built-ins, then docs' tools.
    let mut after: Vec<&str> = BASE.to_vec();
    after.extend(["mcp__docs__search", "mcp__docs__get_version"]);
    assert_eq!(tool_names(&requests[1]), after);
    assert!(system(&requests[1]).ends_with("\n\nConnected MCP servers: docs"), "{}", system(&requests[1]));
    assert_eq!(last_results(&requests[2]), ["[docs] Found 3 results for 'hooks'"]);
    let shown = stdout(&out);
    assert!(shown.contains("  [mcp] connected: docs -> search, get_version"), "{shown}");
}

#[test]
fn the_host_policy_lets_status_run_and_a_no_refuses_the_confirmed_trigger() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("c1", "connect_mcp", json!({"name": "deploy"}))]),
        reply::tool_uses(&[
            ("s1", "mcp__deploy__status", json!({"service": "web"})),
            ("t1", "mcp__deploy__trigger", json!({"service": "web"})),
        ]),
        reply::text("Not deployed."),
    ]);
    let out = chapter("s14", ws.path(), Some(&server.base_url()))
        .args(["--no", "-p", "Deploy web."])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(last_results(&requests[2]), ["[deploy] web: running (v1.4.2)", "Permission denied by user"]);
}

/// A `.mcp.json` naming the test server as `notes`, started through `sh`, which first writes its
/// process id to `server.pid` in the workspace (where the server starts).
fn write_mcp_json(ws: &Path) {
    let bin = example("mcp", "mcp_test_server");
    let config = json!({"mcpServers": {"notes": {
        "command": "/bin/sh",
        "args": ["-c", "echo $$ > server.pid; exec \"$0\" normal", bin.display().to_string()]
    }}});
    fs::write(ws.join(".mcp.json"), config.to_string()).unwrap();
}

/// Whether process `pid` still runs (a zombie does not count).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn an_approved_server_from_mcp_json_lists_its_tools_takes_a_call_and_is_gone_after_q() {
    let ws = tempfile::tempdir().unwrap();
    write_mcp_json(ws.path());
    let server = MockServer::start(vec![
        reply::tool_uses(&[("c1", "connect_mcp", json!({"name": "notes"}))]),
        reply::tool_uses(&[("e1", "mcp__notes__echo", json!({"text": "hello from the model"}))]),
        reply::text("It echoed."),
    ]);
    let mut cmd = chapter("s14", ws.path(), Some(&server.base_url()));
    cmd.arg("--yes");
    let out = run_with_stdin(cmd, "Use the notes server.\n/mcp\nq\n");
    assert!(out.status.success(), "{}", stderr(&out));
    server.assert_done();
    let requests = server.requests();
    // connect_mcp offers the configured name beside the course's servers.
    let tools = requests[0].body["tools"].as_array().cloned().unwrap_or_default();
    let connect = tools.iter().find(|t| t["name"] == "connect_mcp").cloned().unwrap_or(Value::Null);
    assert_eq!(connect["input_schema"]["properties"]["name"]["enum"], json!(["docs", "deploy", "notes"]));
    assert_eq!(
        last_results(&requests[1]),
        ["Connected to MCP server 'notes'. Discovered 2 tools: echo, crash"]
    );
    let names = tool_names(&requests[1]);
    assert!(names.ends_with(&["mcp__notes__echo".to_owned(), "mcp__notes__crash".to_owned()]), "{names:?}");
    assert_eq!(last_results(&requests[2]), ["echo: hello from the model"]);
    let shown = stdout(&out);
    assert!(shown.contains("notes [connected]"), "/mcp lists the server: {shown}");
    assert!(shown.contains("mcp__notes__echo  confirm"), "/mcp shows the host policy: {shown}");
    let pid: u32 = fs::read_to_string(ws.path().join("server.pid")).unwrap().trim().parse().unwrap();
    #[cfg(target_os = "linux")]
    assert!(!alive(pid), "the server process {pid} outlived the REPL");
    let _ = pid;
}

#[test]
fn a_refused_server_is_never_started() {
    let ws = tempfile::tempdir().unwrap();
    write_mcp_json(ws.path());
    let server = MockServer::start(vec![
        reply::tool_uses(&[("c1", "connect_mcp", json!({"name": "notes"}))]),
        reply::text("Not started."),
    ]);
    let out = chapter("s14", ws.path(), Some(&server.base_url()))
        .args(["--no", "-p", "Use the notes server."])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(
        last_results(&requests[1]),
        ["MCP error: starting server 'notes' was not approved; nothing was started"]
    );
    assert_eq!(tool_names(&requests[1]), BASE, "no tool of a server that did not start");
    assert!(!ws.path().join("server.pid").exists(), "the server's command ran");
}

#[test]
fn a_failed_request_becomes_the_answer_and_the_repl_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::error(400, "invalid_request_error", "messages: bad shape"),
        reply::text("Second answer."),
    ]);
    let cmd = chapter("s14", ws.path(), Some(&server.base_url()));
    let out = run_with_stdin(cmd, "first\nsecond\nq\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(
        shown.contains("[Error] BadRequestError: API error 400 invalid_request_error: messages: bad shape"),
        "{shown}"
    );
    assert!(shown.contains("Second answer."), "{shown}");
    // The error text is the first turn's answer in the history the second request carries.
    let requests = server.requests();
    let messages = requests[1].body["messages"].as_array().cloned().unwrap_or_default();
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "assistant" && m.to_string().contains("[Error] BadRequestError"))
    );
}
