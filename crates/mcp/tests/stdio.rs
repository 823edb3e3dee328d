//! The real-server half of the mcp crate against a real child process: the test server in
//! `examples/mcp_test_server.rs`, started over stdio through `rmcp`, as `connect_mcp` starts a
//! server from `.mcp.json`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_core::approve::FixedApprover;
use mcp::config::ServerConfig;
use mcp::hub::Hub;
use mcp::stdio::Limits;
use mcp::{HostPolicy, McpClient};

/// The test server: `cargo test` builds the package's examples beside the test binaries
/// (`target/debug/examples/`), so the test finds it there without a nested cargo run.
fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let debug = exe.parent().and_then(|deps| deps.parent()).map(PathBuf::from).unwrap_or_default();
    debug.join("examples").join(format!("mcp_test_server{}", std::env::consts::EXE_SUFFIX))
}

fn config(name: &str, mode: &str) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport: "stdio".into(),
        command: server_binary().display().to_string(),
        args: vec![mode.into()],
        env: Default::default(),
        url: None,
    }
}

/// Short startup and call limits, so a server that never answers is given up on soon: the
/// tests assert the error, never a duration.
fn limits() -> Limits {
    Limits { startup: Duration::from_secs(3), call: Duration::from_secs(5), ..Limits::default() }
}

fn hub(configs: Vec<ServerConfig>) -> Hub {
    Hub::new(configs, std::env::temp_dir(), limits(), HostPolicy::course())
}

fn args(v: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    v.as_object().cloned().unwrap_or_default()
}

#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    // Signal 0 checks existence; a zombie still exists until reaped, so look at its state too.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

#[tokio::test]
async fn an_approved_server_is_discovered_called_and_ended() {
    let mut h = hub(vec![config("notes", "normal")]);
    let c = h.connect("notes", &mut FixedApprover(true)).await;
    assert_eq!(c.result, "Connected to MCP server 'notes'. Discovered 2 tools: echo, crash");
    let base = vec!["bash".to_owned(), "connect_mcp".to_owned()];
    let pool = h.pool(&base).unwrap_or_default();
    let names: Vec<&str> = pool.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["mcp__notes__echo", "mcp__notes__crash"]);
    // The server calls its tools read-only; the host has no entry for them: they ask.
    assert!(pool.iter().all(|t| t.policy == mcp::Policy::Confirm));
    let echo = &pool[0];
    assert_eq!(echo.client.call_tool(&echo.tool, args(serde_json::json!({"text": "hi"}))).await, "echo: hi");
    assert!(echo.client.stderr_tail().contains("test server starting"));
    let server: Arc<dyn McpClient> = Arc::clone(&h.connected()[0]);
    h.shutdown().await;
    drop(pool);
    drop(server);
}

#[tokio::test]
async fn a_server_that_exits_mid_call_gives_an_mcp_error() {
    let mut h = hub(vec![config("notes", "normal")]);
    let _ = h.connect("notes", &mut FixedApprover(true)).await;
    let pool = h.pool(&[]).unwrap_or_default();
    let crash = pool.iter().find(|t| t.tool == "crash");
    let out = match crash {
        Some(t) => t.client.call_tool(&t.tool, Default::default()).await,
        None => String::new(),
    };
    assert!(out.starts_with("MCP error: "), "{out}");
    h.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_gives_an_mcp_error_and_is_ended() {
    let mut h = hub(vec![config("mute", "silent")]);
    let c = h.connect("mute", &mut FixedApprover(true)).await;
    assert!(c.result.starts_with("MCP error: server 'mute' did not answer initialize"), "{}", c.result);
    assert!(h.names().is_empty());
}

#[tokio::test]
async fn garbage_and_a_huge_tool_list_give_mcp_errors() {
    let mut h = hub(vec![config("junk", "garbage"), config("big", "huge")]);
    let junk = h.connect("junk", &mut FixedApprover(true)).await;
    assert!(junk.result.starts_with("MCP error: server 'junk'"), "{}", junk.result);
    let big = h.connect("big", &mut FixedApprover(true)).await;
    assert!(big.result.starts_with("MCP error: server 'big' sent a tool list of"), "{}", big.result);
    assert!(h.names().is_empty());
}

#[tokio::test]
async fn tool_names_that_collide_after_normalisation_are_refused_by_the_pool() {
    let mut h = hub(vec![config("dup", "collide")]);
    let c = h.connect("dup", &mut FixedApprover(true)).await;
    assert!(c.result.starts_with("Connected to MCP server 'dup'"), "{}", c.result);
    let err = h.pool(&[]).map(|_| ()).map_err(|e| e.to_string());
    assert_eq!(
        err,
        Err("MCP tool name collision after normalization: 'mcp__dup__get_version' maps both MCP tool 'dup'/'get.version' and MCP tool 'dup'/'get_version'".into())
    );
    h.shutdown().await;
}

#[tokio::test]
async fn a_refused_server_is_never_spawned() {
    // The command would create a file if it ran.
    let dir = tempfile::tempdir().map_err(|e| e.to_string());
    let Ok(dir) = dir else { panic!("tempdir") };
    let marker = dir.path().join("spawned");
    let cfg = ServerConfig {
        name: "evil".into(),
        transport: "stdio".into(),
        command: "sh".into(),
        args: vec!["-c".into(), format!("touch '{}'", marker.display())],
        env: Default::default(),
        url: None,
    };
    let mut h = hub(vec![cfg]);
    let c = h.connect("evil", &mut FixedApprover(false)).await;
    assert_eq!(c.result, "MCP error: starting server 'evil' was not approved; nothing was started");
    assert!(!marker.exists());
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn after_shutdown_no_server_process_is_left() {
    let mut h = hub(vec![config("notes", "normal")]);
    let _ = h.connect("notes", &mut FixedApprover(true)).await;
    let before: Vec<u32> = children_named("mcp_test_server");
    assert!(!before.is_empty());
    h.shutdown().await;
    // SIGKILL is delivered asynchronously: wait (up to 10 s) until each is gone or a zombie.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    for p in &before {
        while alive(*p) && std::time::Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        assert!(!alive(*p), "server {p} still running");
    }
}

#[cfg(target_os = "linux")]
/// Our own children whose command name starts with `name`.
fn children_named(name: &str) -> Vec<u32> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let comm_ok = stat
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .is_some_and(|(c, _)| name.starts_with(c) || c.starts_with(&name[..name.len().min(15)]));
            let ppid =
                stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
            comm_ok && ppid == Some(me) && alive(*pid)
        })
        .collect()
}
