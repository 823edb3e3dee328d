//! Request building: the body the HTTP client sends for a `MessagesRequest`
//! (`AnthropicClient::request_body` with its cache cleared, i.e. a first request) with 1, 4 and 16 MB of
//! history, the cost per byte at each size, and a least-squares line
//! `t = a + b·bytes` whose slope `b` is the constant. `normalize_messages`, which the loop runs on
//! the history before each request, is timed beside it.

use std::time::{Duration, Instant};

use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::config::{AuthType, Config};
use agent_core::messages::{ContentBlock, Message, MessagesRequest};
use agent_core::normalize::normalize_messages;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use serde_json::json;

use crate::Scale;
use crate::report::{Report, median, ms};

/// The bound on the cost per byte: at 5 ns/B a 400-message history of ~250 KB serialises in about
/// 1.25 ms, the order of the whole per-round budget, so anything slower would dominate it.
const NS_PER_BYTE_BOUND: f64 = 5.0;

/// The bound on linearity: ns/B at the largest size over ns/B at 1 MB.
const LINEARITY_BOUND: f64 = 1.5;

/// About 4 KB of source-like text with quotes, backslashes, tabs and non-ASCII, as a read_file
/// result would carry.
fn file_text(i: usize) -> String {
    (0..48)
        .map(|l| format!("    let s{i}_{l} = \"héllo \\\"wörld\\\"\\t{l}\"; // line {l} of file {i}\n"))
        .collect()
}

/// A history of `pairs` rounds: the prompt, then per round an assistant `tool_use` of read_file
/// and a user `tool_result` with [`file_text`].
fn history(pairs: usize) -> Vec<Message> {
    let mut h = vec![Message::user_text("Read every file under src/ and summarise it.")];
    for i in 0..pairs {
        let id = format!("toolu_{i:06}");
        h.push(Message::assistant_blocks(vec![
            ContentBlock::text(format!("Reading file {i}.")),
            ContentBlock::tool_use(&id, "read_file", json!({"path": format!("src/file_{i}.rs")})),
        ]));
        h.push(Message::user_blocks(vec![ContentBlock::tool_result(&id, file_text(i), false)]));
    }
    h
}

/// The request the loop would send for `history`.
fn request(history: Vec<Message>, ws: &Workspace) -> MessagesRequest {
    MessagesRequest {
        model: "claude-sonnet-4-5".to_owned(),
        max_tokens: 8000,
        system: format!("You are a coding agent at {}.", ws.root().display()),
        messages: history.into(),
        tools: tools::all(ws, &ToolOptions::default()).specs(),
        stream: None,
    }
}

/// Median time of `reps` runs of `f`.
fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut v = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f();
        v.push(t.elapsed());
    }
    median(&v)
}

/// The request-building figures.
///
/// # Errors
/// Serialising failed or no temporary folder.
pub fn serialisation(report: &mut Report, scale: Scale) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = Workspace::new(dir.path()).map_err(|e| e.to_string())?;
    let probe = serde_json::to_vec(&request(history(100), &ws)).map_err(|e| e.to_string())?.len();
    let base = serde_json::to_vec(&request(history(0), &ws)).map_err(|e| e.to_string())?.len();
    let per_pair = (probe - base) / 100;
    let config = Config {
        model: "bench".into(),
        base_url: "http://127.0.0.1:9".into(),
        api_key: None,
        auth: AuthType::ApiKey,
    };
    let client = AnthropicClient::new(&config, RetryPolicy::default(), Timeouts::default())
        .map_err(|e| e.to_string())?
        .with_streaming(false);

    let mut points: Vec<(f64, f64)> = Vec::new();
    for &mib in scale.history_mib {
        let pairs = (mib << 20).div_ceil(per_pair);
        let req = request(history(pairs), &ws);
        let bytes = serde_json::to_vec(&req).map_err(|e| e.to_string())?.len();
        let reps = (48 / mib).max(3);
        let ser = time(reps, || {
            client.clear_wire_cache();
            // What sending builds: the chunks (`body()` would add a copy into one buffer).
            std::hint::black_box(client.request_body(std::hint::black_box(&req)).ok());
        });
        let plain = time(reps, || {
            std::hint::black_box(serde_json::to_vec(std::hint::black_box(&req)).ok());
        });
        let norm = time(reps, || {
            std::hint::black_box(normalize_messages(std::hint::black_box(&req.messages)));
        });
        let mut buf = Vec::with_capacity(bytes);
        let reused = time(reps, || {
            buf.clear();
            std::hint::black_box(serde_json::to_writer(&mut buf, std::hint::black_box(&req)).ok());
        });
        let ns_per_byte = ser.as_secs_f64() * 1e9 / bytes as f64;
        report.info(
            &format!("serialise request, {mib} MiB history ({} msgs, {bytes} B)", req.messages.len()),
            ms(ser),
            "ms",
        );
        report.check(
            &format!("  serialise cost per byte at {mib} MiB"),
            ns_per_byte,
            NS_PER_BYTE_BOUND,
            "ns/B",
        );
        report.info(
            "  plain serde_json::to_vec of the request",
            plain.as_secs_f64() * 1e9 / bytes as f64,
            "ns/B",
        );
        report.info(
            "  same into a reused, pre-sized buffer (serde alone)",
            reused.as_secs_f64() * 1e9 / bytes as f64,
            "ns/B",
        );
        report.info(
            &format!("  normalize_messages at {mib} MiB (per byte)"),
            norm.as_secs_f64() * 1e9 / bytes as f64,
            "ns/B",
        );
        points.push((bytes as f64, ser.as_secs_f64() * 1e9));
    }
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        let linearity = (last.1 / last.0) / (first.1 / first.0);
        report.check("linearity: ns/B at the largest size / at 1 MiB", linearity, LINEARITY_BOUND, "×");
    }
    let (a, b) = fit(&points);
    report.info("constant: slope of t = a + b·bytes (least squares)", b, "ns/B");
    report.info("  intercept a", a / 1e3, "µs");
    Ok(())
}

/// Median time to rebuild the request the loop sends for a recorded request `body`:
/// `normalize_messages` of its messages, then `serde_json::to_vec` of the whole request.
///
/// # Errors
/// `body` is not a Messages API request.
pub fn rebuild_cost(body: &serde_json::Value) -> Result<Duration, String> {
    let history: Vec<Message> =
        serde_json::from_value(body["messages"].clone()).map_err(|e| e.to_string())?;
    let tools: std::sync::Arc<[agent_core::messages::ToolSpec]> =
        serde_json::from_value(body["tools"].clone()).map_err(|e| e.to_string())?;
    let system = body["system"].as_str().unwrap_or_default().to_owned();
    Ok(time(21, || {
        let req = MessagesRequest {
            model: "x".to_owned(),
            max_tokens: 8000,
            system: system.clone(),
            messages: normalize_messages(&history).into(),
            tools: std::sync::Arc::clone(&tools),
            stream: None,
        };
        std::hint::black_box(serde_json::to_vec(&req).ok());
    }))
}

/// Least-squares line through `(x, y)` points: `(intercept, slope)`.
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points.iter().fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { my / mx.max(1.0) };
    (my - b * mx, b)
}
