//! `mock-api`: a Messages API stand-in for trying a chapter by hand without a key or a network.
//!
//! - `mock-api --script replies.jsonl [--port N]`: each line of the file is a Messages API response body,
//!   served in order (as JSON, or as SSE when the request asks `stream: true`); after the last line every
//!   request gets a 500 `api_error`.
//! - `mock-api --echo [--port N]`: every request gets a text reply echoing the last user message's text.
//!
//! Prints `listening on http://127.0.0.1:PORT`, then serves until killed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use clap::Parser;
use mock_api::{MockServer, RecordedRequest, Reply, reply};
use serde_json::Value;

/// Serve scripted Messages API replies on 127.0.0.1.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// A JSONL file: one Messages API response body per line, served in order.
    #[arg(long, required_unless_present = "echo", conflicts_with = "echo")]
    script: Option<PathBuf>,
    /// Answer every request with a text reply echoing the last user message.
    #[arg(long)]
    echo: bool,
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let server = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let mut bodies = VecDeque::new();
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let body: Value =
                    serde_json::from_str(line).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))?;
                bodies.push_back(body);
            }
            let total = bodies.len();
            let bodies = Mutex::new(bodies);
            MockServer::try_start_fn_on(args.port, move |_| {
                let next = bodies.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
                next.map(Reply::Message).unwrap_or_else(|| {
                    let message = format!("mock-api: the script's {total} replies are used up");
                    reply::error(500, "api_error", &message)
                })
            })
        }
        None => MockServer::try_start_fn_on(args.port, |request| {
            reply::text(&format!("echo: {}", last_user_text(request)))
        }),
    }
    .map_err(|e| format!("cannot listen: {e}"))?;
    println!("listening on {}", server.base_url());
    loop {
        std::thread::park();
    }
}

/// The text of the last user message: a string content, or its `text` blocks joined by newlines.
fn last_user_text(request: &RecordedRequest) -> String {
    let messages = request.body["messages"].as_array().cloned().unwrap_or_default();
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "user") else { return String::new() };
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n")
        }
        _ => String::new(),
    }
}
