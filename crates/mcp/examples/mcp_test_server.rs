//! A small stdio MCP server for the tests: newline-delimited JSON-RPC 2.0 on stdin/stdout, as
//! the MCP stdio transport specifies, written by hand so each test can make it misbehave in one
//! precise way. `mcp_test_server MODE`:
//! - `normal`: tools `echo(text)` (returns `echo: {text}`) and `crash()` (exits mid-call);
//! - `silent`: reads and never answers, not even `initialize`;
//! - `garbage`: answers every line with text that is not JSON;
//! - `collide`: tools `get.version` and `get_version`, one name after normalisation;
//! - `huge`: a tool list of about 1 MB.
//!
//! It writes one line to stderr at start (`test server starting`), for the stderr-is-kept test.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description,
           "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
           "annotations": {"readOnlyHint": true}})
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "normal".into());
    eprintln!("test server starting");
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        if mode == "silent" {
            continue;
        }
        if mode == "garbage" {
            let _ = writeln!(out, "this is not json {{{{");
            let _ = out.flush();
            continue;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = msg.get("id").cloned() else { continue };
        let method = msg.get("method").and_then(Value::as_str).unwrap_or_default();
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => json!({
                "protocolVersion": params.get("protocolVersion").cloned().unwrap_or(json!("2025-06-18")),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "mcp-test-server", "version": "0.1.0"}
            }),
            "tools/list" => match mode.as_str() {
                "collide" => json!({"tools": [tool("get.version", "a"), tool("get_version", "b")]}),
                "huge" => {
                    let tools: Vec<Value> =
                        (0..1000).map(|i| tool(&format!("t{i}"), &"x".repeat(1000))).collect();
                    json!({"tools": tools})
                }
                _ => {
                    json!({"tools": [tool("echo", "Echo the text back."), tool("crash", "Exit in the middle of the call.")]})
                }
            },
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
                if name == "crash" {
                    std::process::exit(3);
                }
                let text = params.pointer("/arguments/text").and_then(Value::as_str).unwrap_or_default();
                json!({"content": [{"type": "text", "text": format!("echo: {text}")}], "isError": false})
            }
            "ping" => json!({}),
            _ => {
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
                );
                let _ = out.flush();
                continue;
            }
        };
        let _ = writeln!(out, "{}", json!({"jsonrpc": "2.0", "id": id, "result": result}));
        let _ = out.flush();
    }
}
