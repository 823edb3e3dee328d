//! End-to-end: prompt caching as the chapters send it (`agent_core::client::cache`), against the
//! loopback server's simulated cache (`mock_api::cache`), which remembers the prefix up to each
//! breakpoint of a session and answers `usage` with the cache's counts.
//!
//! The recorded bodies are the server's parsed JSON; written back compactly with the same field
//! order they are the bytes the client sent (both sides are serde_json), so the prefixes below
//! are compared as text.

use std::sync::Arc;

use agent_core::agent::Agent;
use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::error::ApiError;
use agent_core::extension::{AfterBatch, Extension, LoopContext};
use agent_core::messages::Message;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use e2e::{MockServer, RecordedRequest, chapter, reply, run_with_stdin, stderr, stdout, unmarked};
use mock_api::Reply;
use serde_json::{Value, json};

/// The hint a 400 naming `cache_control` gets, in one line.
const HINT: &str = "hint: this endpoint rejects prompt caching's cache_control field: run with --no-cache, or set DISABLE_PROMPT_CACHING=1 in .env";

fn bash(id: &str) -> Reply {
    reply::text_and_tool_uses("Looking.", &[(id, "bash", json!({"command": "printf 'line %s\\n' 1 2 3"}))])
}

/// `rounds` bash rounds, then an answer.
fn rounds(n: usize) -> Vec<Reply> {
    let mut script: Vec<Reply> = (0..n).map(|i| bash(&format!("toolu_{i}"))).collect();
    script.push(reply::text("All done."));
    script
}

/// The prompt as the API reads it for its cache, up to and including block `j` of message `i`:
/// the tools, the system, the messages before `i`, then message `i`'s role and first `j + 1`
/// blocks, each as compact JSON without its `cache_control`.
fn prompt_upto(body: &Value, (i, j): (usize, usize)) -> String {
    let mut text = format!("{}{}", unmarked(&body["tools"]), unmarked(&body["system"]));
    for message in body["messages"].as_array().into_iter().flatten().take(i) {
        text.push_str(&unmarked(message).to_string());
    }
    let message = &body["messages"][i];
    text.push_str(&message["role"].to_string());
    for block in message["content"].as_array().into_iter().flatten().take(j + 1) {
        text.push_str(&unmarked(block).to_string());
    }
    text
}

/// The `(message, block)` of each breakpoint in `body`'s messages.
fn message_breakpoints(body: &Value) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for (i, message) in body["messages"].as_array().into_iter().flatten().enumerate() {
        for (j, block) in message["content"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                found.push((i, j));
            }
        }
    }
    found
}

/// Every `cache_control` in the body.
fn breakpoints(body: &Value) -> usize {
    body.to_string().matches("\"cache_control\"").count()
}

/// Every request passes the API's rules, cache placement included.
fn assert_rules(requests: &[RecordedRequest]) {
    for (i, request) in requests.iter().enumerate() {
        if let Err(e) = request.check_api_rules() {
            panic!("request #{}: {e}\nbody: {}", i + 1, request.body);
        }
    }
}

#[test]
fn each_request_repeats_the_prompt_up_to_every_earlier_breakpoint_and_reads_it_back() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(rounds(8));
    server.set_cache_minimum(0);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "work"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let requests = server.requests();
    assert_rules(&requests);
    for (k, request) in requests.iter().enumerate() {
        let body = &request.body;
        assert!(breakpoints(body) <= 4, "request #{}: {} breakpoints", k + 1, breakpoints(body));
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.last().unwrap()["cache_control"], json!({"type": "ephemeral"}), "the last tool");
        assert!(tools[..tools.len() - 1].iter().all(|t| t.get("cache_control").is_none()));
        assert!(body["system"].is_string(), "the system prompt is sent as the course sends it");
    }
    for (k, pair) in requests.windows(2).enumerate() {
        let (before, after) = (&pair[0].body, &pair[1].body);
        for at in message_breakpoints(before) {
            assert_eq!(
                prompt_upto(after, at),
                prompt_upto(before, at),
                "request #{} changed the prompt before request #{}'s breakpoint {at:?}",
                k + 2,
                k + 1
            );
        }
        // From the second tool round on, the fallback sits where the last breakpoint was.
        let (was, now) = (message_breakpoints(before), message_breakpoints(after));
        if k >= 1 {
            assert_eq!(now.len(), 2, "request #{}: {now:?}", k + 2);
            assert_eq!(now[0], *was.last().unwrap(), "request #{}", k + 2);
        }
    }
    // The simulated cache read back everything the last request wrote, every round.
    let usage = server.usage();
    assert_eq!(usage.len(), requests.len());
    for k in 1..usage.len() {
        let cached = usage[k - 1].cache_read_input_tokens + usage[k - 1].cache_creation_input_tokens;
        assert!(
            usage[k].cache_read_input_tokens >= cached,
            "request #{}: {:?} after {:?}",
            k + 1,
            usage[k],
            usage[k - 1]
        );
    }
    let read: u64 = usage.iter().map(|u| u.cache_read_input_tokens).sum();
    let total: u64 = usage.iter().map(|u| u.total()).sum();
    assert!(read * 10 > total * 6, "most of the session's input was read from the cache: {read} of {total}");
}

#[test]
fn no_cache_and_the_environment_variable_send_no_breakpoint() {
    let ws = tempfile::tempdir().unwrap();
    for (flag, env) in [(Some("--no-cache"), None), (None, Some("1")), (None, Some("true"))] {
        let server = MockServer::start(rounds(3));
        let mut cmd = chapter("s03", ws.path(), Some(&server.base_url()));
        cmd.args(["-p", "work"]).args(flag);
        if let Some(value) = env {
            cmd.env("DISABLE_PROMPT_CACHING", value);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        server.assert_done();
        let requests = server.requests();
        assert_rules(&requests);
        for request in &requests {
            assert_eq!(breakpoints(&request.body), 0, "{flag:?} {env:?}: {}", request.body);
        }
        let usage = server.usage();
        assert!(usage.iter().all(|u| u.cache_read_input_tokens + u.cache_creation_input_tokens == 0));
    }
    // A value that is neither on nor off is a configuration error that names the variable.
    let server = MockServer::start(Vec::new());
    let out = chapter("s03", ws.path(), Some(&server.base_url()))
        .args(["-p", "work"])
        .env("DISABLE_PROMPT_CACHING", "sometimes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("DISABLE_PROMPT_CACHING=\"sometimes\" is not valid"), "{}", stderr(&out));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn a_400_naming_cache_control_gives_one_line_that_names_the_switch() {
    let ws = tempfile::tempdir().unwrap();
    let refused = "tools.4.cache_control: Extra inputs are not permitted";
    let server = MockServer::start(vec![reply::error(400, "invalid_request_error", refused)]);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "work"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(refused), "{err}");
    assert_eq!(err.lines().filter(|l| *l == HINT).count(), 1, "{err}");
    // Another 400 gets no such hint.
    let server = MockServer::start(vec![reply::error(400, "invalid_request_error", "max_tokens: too large")]);
    let out = chapter("s03", ws.path(), Some(&server.base_url())).args(["-p", "work"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!stderr(&out).contains("--no-cache"), "{}", stderr(&out));
    // With the switch, the same session goes through.
    let server = MockServer::start(rounds(1));
    let out = chapter("s03", ws.path(), Some(&server.base_url()))
        .args(["-p", "work", "--no-cache"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(server.requests().iter().all(|r| breakpoints(&r.body) == 0));
}

#[test]
fn usage_shows_the_caches_reads_writes_and_savings_and_history_the_breakpoints() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(rounds(4));
    server.set_cache_minimum(0);
    let mut cmd = chapter("s03", ws.path(), Some(&server.base_url()));
    cmd.arg("--usage");
    let out = run_with_stdin(cmd, "work\n/usage\n/history\nq\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let usage = server.usage();
    let read: u64 = usage.iter().map(|u| u.cache_read_input_tokens).sum();
    let written: u64 = usage.iter().map(|u| u.cache_creation_input_tokens).sum();
    let uncached: u64 = usage.iter().map(|u| u.input_tokens).sum();
    let line =
        format!("  prompt cache: {read} read, {written} written, {uncached} not cached: the input bills as ");
    assert!(text.contains(&line), "/usage shows the cache's figures, as the server counted them: {text}");
    let billed = uncached as f64 + 1.25 * written as f64 + 0.1 * read as f64;
    let total = read + written + uncached;
    assert!(text.contains(&format!("{billed:.0} tokens instead of {total} (")), "{text}");
    assert!(text.contains("% saved") || text.contains("saved, "), "{text}");
    // The turn's line on stderr, with --usage.
    assert!(
        stderr(&out).contains(&format!("; prompt cache: {read} read, {written} written")),
        "{}",
        stderr(&out)
    );
    // /history: the next request marks the last tool, the answer, and the reminder after the last
    // results (where the turn's last request had its breakpoint).
    assert!(
        text.contains("prompt cache: breakpoints on the last tool, [8] block 1 and [9] block 0"),
        "{text}"
    );
}

/// An s08-style compaction after the second batch: the history becomes one summary message.
struct CompactAfterTwo {
    batches: usize,
}

#[async_trait::async_trait]
impl Extension for CompactAfterTwo {
    async fn after_tool_batch(&mut self, context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        self.batches += 1;
        if self.batches == 2 {
            *context.history = vec![Message::user_text("[Compacted]\n\nCurrent user request:\nwork")];
        }
        Ok(AfterBatch::Continue)
    }
}

#[tokio::test]
async fn after_a_compaction_the_breakpoints_are_on_the_new_history_and_the_cache_starts_again() {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let server = MockServer::start(rounds(5));
    server.set_cache_minimum(0);
    let config = agent_core::test_util::loopback_config(server.base_url());
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let client = AnthropicClient::new(&config, retry, Timeouts::default()).unwrap();
    let mut agent = Agent::builder(Arc::new(client), "mock-model")
        .system("system")
        .tools(tools::all(&ws, &ToolOptions::default()))
        .extension(CompactAfterTwo { batches: 0 })
        .build();
    let mut history = Vec::new();
    agent.run_turn(&mut history, "work").await.unwrap();
    server.assert_done();
    let requests = server.requests();
    assert_rules(&requests);
    // Request 3 is the first after the rewrite: one summary message and the tools; no breakpoint
    // of the old history survives, and nothing but the tools is read back.
    let after = &requests[2].body;
    assert_eq!(after["messages"].as_array().unwrap().len(), 1);
    assert_eq!(message_breakpoints(after), Vec::<(usize, usize)>::new(), "the summary is plain text");
    let usage = server.usage();
    let tools_only = usage[0].cache_creation_input_tokens;
    assert_eq!(
        usage[2].cache_read_input_tokens, tools_only,
        "only the tools' prefix is read: {:?}",
        usage[2]
    );
    // Then the cache builds again on the new history.
    for k in 3..usage.len() {
        let cached = usage[k - 1].cache_read_input_tokens + usage[k - 1].cache_creation_input_tokens;
        assert!(usage[k].cache_read_input_tokens >= cached, "request #{}: {:?}", k + 1, usage[k]);
        for at in message_breakpoints(&requests[k - 1].body) {
            assert_eq!(prompt_upto(&requests[k].body, at), prompt_upto(&requests[k - 1].body, at));
        }
    }
    // The agent's totals add up what the server answered.
    let totals = agent.session_usage();
    assert_eq!(totals.cache_read_input_tokens, usage.iter().map(|u| u.cache_read_input_tokens).sum::<u64>());
    assert_eq!(
        totals.cache_creation_input_tokens,
        usage.iter().map(|u| u.cache_creation_input_tokens).sum::<u64>()
    );
    assert_eq!(totals.input_tokens, usage.iter().map(|u| u.input_tokens).sum::<u64>());
}
