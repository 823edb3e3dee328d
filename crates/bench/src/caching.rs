//! Prompt caching: what a 50-round `s03` session bills for its input, with the client's
//! `cache_control` breakpoints and without them (`--no-cache`), and the same session on `s15`,
//! whose SYSTEM holds the time and the recalled memory and is rebuilt for every user turn.
//! BENCHMARKS.md, "Prompt caching".
//!
//! ```text
//!   s03 -p TASK ──POST /v1/messages──▶ MockServer (simulated prompt cache, mock_api::cache)
//!      51 requests: a todo plan, 50 rounds of read_file / bash / todo calls, the answer
//!      usage per request: input_tokens, cache_creation_input_tokens, cache_read_input_tokens
//! ```
//!
//! The same scripted session runs twice against a fresh server each time. The billed input is in
//! input-token equivalents, at the prompt-caching prices: `uncached + 1.25 × written + 0.1 ×
//! read`. The bound: the cached session bills at most 20% of the uncached one. Tokens are the
//! mock's estimate, 4 characters of JSON each; its minimum cacheable prefix is Sonnet 4.5's
//! 1,024 tokens, so the session's first requests, shorter than that, are not cached.
//!
//! s15 plans with `todo_write` instead of `todo`, and makes calls of its own beside the loop's
//! (memory extraction after the answer): those carry no tools, are answered `[]` (nothing to
//! remember), and are billed with the session, since a user pays for them too.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mock_api::{CacheUsage, MockServer, reply};
use serde_json::{Value, json};

use crate::child;
use crate::report::Report;

/// Tool rounds in the session, between the plan and the answer.
pub const ROUNDS: usize = 50;

/// The bound: the cached session's billed input as a share of the uncached one's, in percent.
const BOUND_PERCENT: f64 = 20.0;

/// The prices of the 5-minute cache, relative to the input price (Messages API, "Prompt caching").
const WRITE_PRICE: f64 = 1.25;
const READ_PRICE: f64 = 0.1;

/// The most a session may take before it is stopped (it takes well under a second).
const SESSION_LIMIT: Duration = Duration::from_secs(120);

/// The files the session reads: a small project, about 5 KB.
fn seed(dir: &Path) -> std::io::Result<()> {
    let notes: String =
        (1..=20).map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog\n")).collect();
    let app: String = (1..=40)
        .map(|i| format!("def step_{i}(x: int) -> int:\n    \"\"\"Step {i} of the pipeline.\"\"\"\n    return x + {i}\n\n"))
        .collect();
    let readme = "# pipeline\n\nA small example project: `app.py` holds forty steps, `notes.txt` the plan.\n"
        .repeat(12);
    std::fs::write(dir.join("notes.txt"), notes)?;
    std::fs::write(dir.join("app.py"), app)?;
    std::fs::write(dir.join("README.md"), readme)
}

/// A chapter the session runs on: its name and how its todo tool is called.
#[derive(Debug, Clone, Copy)]
struct Flavour {
    /// `s03` or `s15`.
    name: &'static str,
    /// The todo tool: `todo` (s03's) or `todo_write` (s05's, which s15 uses).
    todo_tool: &'static str,
    /// Whether the share is checked against [`BOUND_PERCENT`] (s15's is reported: its history
    /// is snipped every 25 messages from request 24 on, and each snip is written to the cache
    /// again; see BENCHMARKS.md).
    checked: bool,
}

impl Flavour {
    /// The todo tool's input: two items, the first with `status`.
    fn todo_input(&self, status: &str) -> Value {
        match self.todo_tool {
            "todo" => json!({"items": [
                {"id": "1", "text": "Read the project", "status": status},
                {"id": "2", "text": "Summarise the steps", "status": "pending"},
            ]}),
            _ => json!({"todos": [
                {"content": "Read the project", "status": status},
                {"content": "Summarise the steps", "status": "pending"},
            ]}),
        }
    }
}

const S03: Flavour = Flavour { name: "s03", todo_tool: "todo", checked: true };
const S15: Flavour = Flavour { name: "s15", todo_tool: "todo_write", checked: false };

/// The model's side of the session: the loop's request `i` (0-based) answered. Request 0 plans
/// with the todo tool; requests 1 to [`ROUNDS`] call one tool each, cycling through reading the
/// three files, a `bash` command and a todo update, with a sentence before each call; then
/// `end_turn`.
fn script(i: usize, flavour: Flavour) -> Value {
    let call = |id: String, name: &str, input: Value, say: &str| {
        reply::message(vec![reply::text_block(say), reply::tool_use_block(&id, name, input)], "tool_use")
    };
    let todo = |status: &str| flavour.todo_input(status);
    let id = format!("toolu_{i:03}");
    let todo_tool = flavour.todo_tool;
    match i {
        0 => call(id, todo_tool, todo("in_progress"), "I will plan first."),
        i if i <= ROUNDS => match i % 5 {
            1 => call(id, "read_file", json!({"path": "app.py"}), "Reading the code."),
            2 => call(id, "read_file", json!({"path": "notes.txt"}), "Reading the notes."),
            3 => call(id, "bash", json!({"command": "wc -l app.py notes.txt README.md"}), "Counting lines."),
            4 => call(id, "read_file", json!({"path": "README.md"}), "Reading the README."),
            _ => call(id, todo_tool, todo("in_progress"), "Updating the plan."),
        },
        _ => reply::message(vec![reply::text_block("Done: forty steps, each adds its number.")], "end_turn"),
    }
}

/// One session's input, added up over its requests.
#[derive(Debug, Clone, Copy, Default)]
struct Billed {
    /// The loop's requests (with tools).
    requests: usize,
    /// The chapter's own calls beside the loop (without tools).
    side_calls: usize,
    uncached: u64,
    written: u64,
    read: u64,
    /// The most breakpoints one request carried.
    max_breakpoints: usize,
    /// When a request's history was no longer than the one before (compaction acted): how many
    /// requests came before it, and what they billed.
    before_shrink: Option<(usize, f64)>,
}

impl Billed {
    /// Every input token sent.
    fn total(&self) -> u64 {
        self.uncached + self.written + self.read
    }

    /// The input as billed, in input-token equivalents.
    fn billed(&self) -> f64 {
        self.uncached as f64 + WRITE_PRICE * self.written as f64 + READ_PRICE * self.read as f64
    }

    /// What the requests before `last` billed, `last` having been added already.
    fn billed_before(&self, last: &CacheUsage) -> f64 {
        self.billed()
            - (last.input_tokens as f64
                + WRITE_PRICE * last.cache_creation_input_tokens as f64
                + READ_PRICE * last.cache_read_input_tokens as f64)
    }
}

/// Whether `body` is a request of the agent loop (it offers tools), not a side call.
fn of_the_loop(body: &Value) -> bool {
    body["tools"].as_array().is_some_and(|t| !t.is_empty())
}

/// Runs the session once, with `--no-cache` when `!cache`, and adds up the `usage` the server's
/// simulated cache answered.
///
/// # Errors
/// The chapter could not start, did not finish in time, exited non-zero, or sent a request the
/// API would refuse.
fn session(bin: &Path, dir: &Path, cache: bool, flavour: Flavour) -> Result<Billed, String> {
    let asked = Arc::new(AtomicUsize::new(0));
    let server = {
        let asked = Arc::clone(&asked);
        MockServer::start_fn(move |request| {
            if of_the_loop(&request.body) {
                reply_for(asked.fetch_add(1, Ordering::SeqCst), flavour)
            } else {
                // Memory extraction: nothing worth keeping.
                reply::text("[]")
            }
        })
    };
    let mut cmd: Command = child::s03(bin, dir, &server.base_url());
    cmd.args(["-p", "Read this project and summarise what app.py does; plan with the todo tool first."]);
    if !cache {
        cmd.arg("--no-cache");
    }
    let mut s03 = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let started = Instant::now();
    let status = loop {
        match s03.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if started.elapsed() > SESSION_LIMIT => {
                let _ = s03.kill();
                let _ = s03.wait();
                return Err(format!("the session ran past {} s", SESSION_LIMIT.as_secs()));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let requests = server.requests();
    let of_loop = requests.iter().filter(|r| of_the_loop(&r.body)).count();
    if !status.success() || of_loop != ROUNDS + 2 {
        return Err(format!(
            "{} exited {status} after {of_loop} requests of its loop (expected {})",
            flavour.name,
            ROUNDS + 2
        ));
    }
    let usage = server.usage();
    if usage.len() != requests.len() {
        return Err(format!("{} requests but {} usages", requests.len(), usage.len()));
    }
    // The first request of the loop whose history did not grow: a compaction (s15's snip) acted.
    let messages = |body: &Value| body["messages"].as_array().map_or(0, Vec::len);
    let loop_sizes: Vec<(usize, usize)> = requests
        .iter()
        .enumerate()
        .filter(|(_, r)| of_the_loop(&r.body))
        .map(|(i, r)| (i, messages(&r.body)))
        .collect();
    let shrunk = loop_sizes.windows(2).find(|w| w[1].1 <= w[0].1).map(|w| w[1].0);
    let mut billed = Billed { requests: of_loop, side_calls: requests.len() - of_loop, ..Billed::default() };
    for (i, request) in requests.iter().enumerate() {
        request.check_api_rules().map_err(|e| format!("request #{}: {e}", i + 1))?;
        let marks = request.body.to_string().matches("\"cache_control\"").count();
        billed.max_breakpoints = billed.max_breakpoints.max(marks);
    }
    for (i, u) in usage.iter().enumerate() {
        billed.uncached += u.input_tokens;
        billed.written += u.cache_creation_input_tokens;
        billed.read += u.cache_read_input_tokens;
        if Some(i) == shrunk {
            billed.before_shrink = Some((i, billed.billed_before(u)));
        }
    }
    Ok(billed)
}

/// The reply to the loop's request `i`: the script, or an error past its end.
fn reply_for(i: usize, flavour: Flavour) -> mock_api::Reply {
    if i <= ROUNDS + 1 {
        mock_api::Reply::Message(script(i, flavour))
    } else {
        reply::error(500, "api_error", "bench: request beyond the script")
    }
}

/// The 50-round session with and without prompt caching on `s03` and on `s15`, and the bound on
/// the billed input of each.
///
/// # Errors
/// A session failed (see [`session`]).
pub fn caching(report: &mut Report, s03: &Path, s15: &Path) -> Result<(), String> {
    for (bin, flavour) in [(s03, S03), (s15, S15)] {
        chapter(report, bin, flavour)?;
    }
    Ok(())
}

/// One chapter's pair of sessions and its figures.
fn chapter(report: &mut Report, bin: &Path, flavour: Flavour) -> Result<(), String> {
    let name = flavour.name;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    seed(dir.path()).map_err(|e| e.to_string())?;
    let with = session(bin, dir.path(), true, flavour)?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    seed(dir.path()).map_err(|e| e.to_string())?;
    let without = session(bin, dir.path(), false, flavour)?;
    report.note(&format!(
        "{name} -p: a todo plan, {ROUNDS} rounds of read_file / bash / {} calls on a 5 KB project, the \
         answer: {} requests of the loop, {} call(s) beside it; the mock's simulated cache, 4 characters \
         per token, 1,024-token minimum",
        flavour.todo_tool, with.requests, with.side_calls
    ));
    report.note(&format!(
        "without caching: {} input tokens, none cached; most breakpoints in a request: {}",
        without.total(),
        without.max_breakpoints
    ));
    report.note(&format!(
        "with caching: {} input tokens: {} read, {} written, {} not cached; most breakpoints in a request: {}",
        with.total(),
        with.read,
        with.written,
        with.uncached,
        with.max_breakpoints
    ));
    report.note("billed input in input-token equivalents: uncached + 1.25 × written + 0.1 × read");
    report.info(&format!("{name}: billed input without caching"), without.billed(), "tok");
    report.info(&format!("{name}: billed input with caching"), with.billed(), "tok");
    let share = 100.0 * with.billed() / without.billed().max(1.0);
    let label = format!("{name}: billed input of the {ROUNDS}-round session, cached / uncached");
    if let (Some((n, cached)), Some((m, uncached))) = (with.before_shrink, without.before_shrink) {
        report.note(&format!(
            "request {} is the first whose history did not grow (compaction acted): the requests \
             after a snip share a new start, written to the cache once",
            n + 1
        ));
        if n == m {
            report.info(
                &format!("{name}: the first {n} requests, cached / uncached"),
                100.0 * cached / uncached.max(1.0),
                "%",
            );
        }
    }
    if flavour.checked {
        report.check_at_most(&label, share, BOUND_PERCENT, "%");
    } else {
        report.info(&label, share, "%");
    }
    Ok(())
}
