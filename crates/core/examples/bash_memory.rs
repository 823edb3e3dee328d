//! Memory benchmark for the `bash` tool: runs `yes | head -c 1000000000` (1 GB of output) and
//! prints the process's peak resident memory (`VmHWM` from `/proc/self/status`) against a 30 MB
//! target, with PASS or FAIL. Exit code 1 on FAIL.
//!
//! Run: `cargo run -p agent-core --example bash_memory --release` (or without `--release`).

use std::time::{Duration, Instant};

use agent_core::dispatch::ToolOutcome;
use agent_core::messages::ToolUseBlock;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use serde_json::json;

/// The peak-memory budget, in kB (30 MB).
const TARGET_KB: u64 = 30 * 1024;

/// `VmHWM` (peak resident set size) in kB, from `/proc/self/status`.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    let map = tools::s02(&ws, &ToolOptions { bash_timeout: Duration::from_secs(120), ..Default::default() });
    let before = peak_rss_kb().ok_or("no VmHWM in /proc/self/status")?;
    let started = Instant::now();
    let call = ToolUseBlock {
        id: "toolu_bench".into(),
        name: "bash".into(),
        input: json!({"command": "yes | head -c 1000000000"}),
        extra: Default::default(),
    };
    let ToolOutcome { content, is_error } = map.dispatch(&call).await;
    let elapsed = started.elapsed();
    let peak = peak_rss_kb().ok_or("no VmHWM in /proc/self/status")?;
    let note = content.lines().last().unwrap_or_default();
    println!("command: yes | head -c 1000000000");
    println!("result: {} characters, is_error={is_error}, last line: {note}", content.chars().count());
    println!("time: {:.2}s", elapsed.as_secs_f64());
    println!("peak RSS (VmHWM): before {before} kB, after {peak} kB; target {TARGET_KB} kB");
    if peak <= TARGET_KB {
        println!("PASS");
        Ok(())
    } else {
        println!("FAIL");
        std::process::exit(1);
    }
}
