//! Scripted `s03 -p` sessions against the in-process mock server: harness overhead per round, the
//! 200-round session's memory, and the bash tool's memory.
//!
//! The server answers from a closure that timestamps each request when it reaches the closure
//! (after the server has read and parsed it) and again once the reply is built and serialised
//! (the same SSE stream, or JSON `to_string`, the server then writes). The gap between one reply
//! and the next request is the harness's time: run the tool, build and send the next request.
//! Parsing that request is the server's, so it is estimated apart (timed on a copy of the body).
//!
//! CPU per round: when a request arrives, the closure sums the run time of every thread of `s03`
//! (`/proc/PID/task/*/schedstat`, nanoseconds); the difference between two arrivals is the CPU the
//! harness spent on that round (parse the reply, run the tool, build and send the next request).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_api::{MockServer, Reply, reply};
use serde_json::{Value, json};

use crate::Scale;
use crate::child::{self, Exit};
use crate::report::{Report, ms};

/// The small file read every round: 20 lines, about 1 KB.
fn small_file() -> String {
    (1..=20).map(|i| format!("line {i:02}: the quick brown fox jumps over the lazy dog\n")).collect()
}

/// What the server saw of one `POST /v1/messages`.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    /// When the request reached the closure.
    pub arrived: Instant,
    /// Time to build and serialise the reply.
    pub reply: Duration,
    /// Estimated time the server spent parsing the request body (zero when not measured).
    pub parse: Duration,
    /// When the closure returned; the next gap starts here.
    pub done: Instant,
    /// `messages` in the request.
    pub messages: usize,
    /// Size of the request body as compact JSON (zero when not measured).
    pub body_bytes: usize,
    /// CPU time `s03`'s live threads had used when the request arrived.
    pub cpu: Duration,
}

/// One finished session.
#[derive(Debug)]
pub struct Run {
    /// How the child ended.
    pub exit: Exit,
    /// One stamp per request, in order.
    pub stamps: Vec<Stamp>,
    /// The child's own `VmHWM` (KiB) read when the last scripted request arrived.
    pub hwm_kib: Option<u64>,
    /// Every request the server received.
    pub server: MockServer,
    /// The body of the last scripted request.
    pub last_body: Option<Value>,
}

/// Runs `s03 -p PROMPT` in `workdir` against a server answering request `i` with
/// `Reply::Message(script(i))` for `i < len` (an API error after that). With `measure_parse`, the
/// closure also times parsing a copy of each request body (server time, outside the gaps).
///
/// # Errors
/// Spawning or reaping the child failed.
pub fn run(
    bin: &Path,
    workdir: &Path,
    len: usize,
    script: impl Fn(usize) -> Value + Send + Sync + 'static,
    measure_parse: bool,
) -> Result<Run, String> {
    let stamps: Arc<Mutex<Vec<Stamp>>> = Arc::new(Mutex::new(Vec::with_capacity(len)));
    let pid = Arc::new(AtomicU32::new(0));
    let hwm: Arc<Mutex<Option<u64>>> = Arc::new(Mutex::new(None));
    let last: Arc<Mutex<Option<Value>>> = Arc::new(Mutex::new(None));
    let server = {
        let (stamps, pid, hwm, last) =
            (Arc::clone(&stamps), Arc::clone(&pid), Arc::clone(&hwm), Arc::clone(&last));
        let s03 = AtomicU32::new(0);
        MockServer::start_fn(move |request| {
            let arrived = Instant::now();
            if s03.load(Ordering::SeqCst) == 0 {
                s03.store(child::first_child(pid.load(Ordering::SeqCst)).unwrap_or(0), Ordering::SeqCst);
            }
            let cpu = child::thread_cpu(s03.load(Ordering::SeqCst));
            let mut stamps = stamps.lock().unwrap_or_else(|p| p.into_inner());
            let i = stamps.len();
            let answer = if i < len {
                let body = script(i);
                // What the server then does to send it, done here to time it: the SSE stream of
                // the message when the request asks to stream (s03's default), else its JSON.
                if request.body["stream"] == true {
                    std::hint::black_box(mock_api::serialize_sse(&reply::sse_from_message(&body), false));
                } else {
                    std::hint::black_box(body.to_string());
                }
                Reply::Message(body)
            } else {
                reply::error(500, "api_error", "bench: request beyond the script")
            };
            let reply = arrived.elapsed();
            let (parse, body_bytes) = if measure_parse {
                let bytes = serde_json::to_vec(&request.body).unwrap_or_default();
                let t = Instant::now();
                std::hint::black_box(serde_json::from_slice::<Value>(&bytes).ok());
                (t.elapsed(), bytes.len())
            } else {
                (Duration::ZERO, 0)
            };
            if i + 1 == len {
                *hwm.lock().unwrap_or_else(|p| p.into_inner()) =
                    child::vm_hwm_kib(s03.load(Ordering::SeqCst));
                *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.body.clone());
            }
            let messages = request.body["messages"].as_array().map_or(0, Vec::len);
            stamps.push(Stamp { arrived, reply, parse, done: Instant::now(), messages, body_bytes, cpu });
            answer
        })
    };
    let figures = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut cmd =
        child::measured(bin, workdir, &server.base_url(), figures.path()).map_err(|e| e.to_string())?;
    cmd.args(["-p", "Read notes.txt over and over; plan with the todo tool first."]);
    let started = Instant::now();
    let helper = cmd.spawn().map_err(|e| format!("cannot start the measuring helper: {e}"))?;
    pid.store(helper.id(), Ordering::SeqCst);
    let exit = child::wait_measured(helper, started, figures.path())?;
    let stamps = stamps.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let hwm_kib = *hwm.lock().unwrap_or_else(|p| p.into_inner());
    let last_body = last.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(Run { exit, stamps, hwm_kib, server, last_body })
}

/// The harness session's script: 1 todo call, `rounds` `read_file` calls, then `end_turn`.
fn harness_script(rounds: usize) -> impl Fn(usize) -> Value + Send + Sync + 'static {
    move |i| {
        let calls = if i == 0 {
            vec![reply::tool_use_block(
                "toolu_todo",
                "todo",
                json!({"items": [{"id": "1", "text": "Read notes.txt", "status": "in_progress"}]}),
            )]
        } else if i <= rounds {
            vec![reply::tool_use_block(&format!("toolu_{i}"), "read_file", json!({"path": "notes.txt"}))]
        } else {
            return reply::message(vec![reply::text_block("Done.")], "end_turn");
        };
        reply::message(calls, "tool_use")
    }
}

/// One harness session of `rounds` read_file rounds; checks it ended well.
fn harness_run(bin: &Path, workdir: &Path, rounds: usize, measure_parse: bool) -> Result<Run, String> {
    let run = run(bin, workdir, rounds + 2, harness_script(rounds), measure_parse)?;
    if run.exit.code != 0 || run.stamps.len() != rounds + 2 {
        return Err(format!(
            "the {rounds}-round session exited {} after {} requests (expected {})",
            run.exit.code,
            run.stamps.len(),
            rounds + 2
        ));
    }
    Ok(run)
}

/// Mean of `f` over the stamps of read_file rounds `range` (1-based round numbers).
fn mean_over(range: std::ops::RangeInclusive<usize>, f: impl Fn(usize) -> Duration) -> Duration {
    let n = range.clone().count().max(1);
    range.map(f).sum::<Duration>() / u32::try_from(n).unwrap_or(u32::MAX)
}

/// Per-run figures of the harness session, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    cpu_first: f64,
    cpu_last: f64,
    cpu_all: f64,
    session_cpu: f64,
    wall: f64,
    gap_first: f64,
    gap_last: f64,
    parse_first: f64,
    parse_last: f64,
    reply: f64,
}

impl Figures {
    /// The figures of one `rounds`-round run.
    fn of(run: &Run, rounds: usize) -> Figures {
        let s = &run.stamps;
        let r = rounds;
        // Round k (1..=r): from reply k (the k-th read_file call) to request k+1.
        let gap = |k: usize| s[k + 1].arrived.saturating_duration_since(s[k].done);
        let cpu = |k: usize| s[k + 1].cpu.saturating_sub(s[k].cpu);
        let first = 1..=20.min(r);
        let last = (r + 1).saturating_sub(20).max(1)..=r;
        Figures {
            cpu_first: ms(mean_over(first.clone(), cpu)),
            cpu_last: ms(mean_over(last.clone(), cpu)),
            cpu_all: ms(mean_over(1..=r, cpu)),
            session_cpu: ms(run.exit.cpu),
            wall: ms(s[r + 1].arrived.duration_since(s[1].arrived)) / r as f64,
            gap_first: ms(mean_over(first.clone(), gap)),
            gap_last: ms(mean_over(last.clone(), gap)),
            parse_first: ms(mean_over(first, |k| s[k + 1].parse)),
            parse_last: ms(mean_over(last, |k| s[k + 1].parse)),
            reply: ms(mean_over(1..=r, |k| s[k].reply)),
        }
    }
}

/// The median of one figure over runs.
fn med(runs: &[Figures], f: impl Fn(&Figures) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Harness overhead per round and the session's peak RSS (issue 7, "Harness overhead per round"
/// and "Memory"). Each figure is the median over `scale.session_repeats` sessions.
///
/// # Errors
/// A session could not run or did not end with exit 0 after the whole script.
pub fn harness(report: &mut Report, bin: &Path, scale: Scale) -> Result<(), String> {
    let r = scale.rounds;
    let n = scale.session_repeats;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("notes.txt"), small_file()).map_err(|e| e.to_string())?;

    let mut figures = Vec::new();
    let mut rss = Vec::new();
    let mut hwm = Vec::new();
    let mut last_request = (0, 0);
    let mut last_body = None;
    for _ in 0..n {
        let run = harness_run(bin, dir.path(), r, true)?;
        last_body = run.last_body.clone();
        figures.push(Figures::of(&run, r));
        rss.push(run.exit.maxrss_kib);
        hwm.extend(run.hwm_kib);
        last_request = (run.stamps[r + 1].messages, run.stamps[r + 1].body_bytes);
    }
    let (msgs, bytes) = last_request;
    report.note(&format!(
        "session: 1 todo call, {r} read_file rounds, end_turn; last request {msgs} messages, {:.0} KB; \
         median of {n} sessions",
        bytes as f64 / 1e3
    ));
    let f = |g: fn(&Figures) -> f64| med(&figures, g);
    let first = format!("rounds 1-{}", 20.min(r));
    let last = format!("rounds {}-{r}", (r + 1).saturating_sub(20).max(1));
    report.check(&format!("harness CPU per round, {last} (~{msgs} msgs)"), f(|x| x.cpu_last), 1.0, "ms");
    report.check(&format!("harness CPU per round, {first}"), f(|x| x.cpu_first), 1.0, "ms");
    report.check(&format!("harness CPU per round, mean of all {r}"), f(|x| x.cpu_all), 1.0, "ms");
    report.info(&format!("CPU of the whole session (wait4) / {r}"), f(|x| x.session_cpu) / r as f64, "ms");
    report.info("wall per round, harness + server (span / rounds)", f(|x| x.wall), "ms");
    report.info(&format!("harness wall per round, {first} (gap)"), f(|x| x.gap_first), "ms");
    report.info(&format!("harness wall per round, {last} (gap)"), f(|x| x.gap_last), "ms");
    report.info(&format!("  in the gap: server parses the request, {first}"), f(|x| x.parse_first), "ms");
    report.info(&format!("  in the gap: server parses the request, {last}"), f(|x| x.parse_last), "ms");
    report.info("server reply build + serialise per round", f(|x| x.reply) * 1e3, "µs");
    if let Some(body) = last_body {
        let build = crate::request::rebuild_cost(&body)?;
        report.info(&format!("  in process: normalize + to_vec of the {msgs}-msg request"), ms(build), "ms");
    }
    report.info("growth of harness CPU per round, last 20 / first 20", f(|x| x.cpu_last / x.cpu_first), "×");
    report.info(
        "growth of harness wall gap less parse, last 20 / first 20",
        f(|x| (x.gap_last - x.parse_last) / (x.gap_first - x.parse_first)),
        "×",
    );

    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    let max_rss = rss.iter().copied().max().unwrap_or(0);
    report.check(
        &format!("peak RSS, {r}-round session (ru_maxrss of s03, max of {n})"),
        mb(max_rss),
        20.0,
        "MB",
    );
    if let Some(kib) = hwm.iter().copied().max() {
        report.info("  s03's own VmHWM at the last request (max)", mb(kib), "MB");
    }
    Ok(())
}

/// Peak RSS of the bash tool running `yes | head -c N` (issue 7, "Memory").
///
/// # Errors
/// The session could not run, failed, or the tool result is not what the command prints.
pub fn bash_memory(report: &mut Report, bin: &Path, scale: Scale) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let command = format!("yes | head -c {}", scale.bash_bytes);
    let script = {
        let command = command.clone();
        move |i: usize| {
            if i == 0 {
                reply::message(
                    vec![reply::tool_use_block("toolu_bash", "bash", json!({"command": command}))],
                    "tool_use",
                )
            } else {
                reply::message(vec![reply::text_block("Done.")], "end_turn")
            }
        }
    };
    let run = run(bin, dir.path(), 2, script, false)?;
    let requests = run.server.requests();
    let result = requests
        .last()
        .and_then(|r| r.body["messages"].as_array()?.last()?["content"].as_array()?.first().cloned())
        .unwrap_or(Value::Null);
    let text = result["content"].as_str().unwrap_or_default();
    if run.exit.code != 0 || result["is_error"] == true || !text.contains("more characters") {
        return Err(format!("the bash session exited {}; tool result {:.200}", run.exit.code, text));
    }
    report.note(&format!(
        "s03 -p with one bash call `{command}`; the tool result is the cut 50,000 characters"
    ));
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    report.check(
        &format!("peak RSS, bash `yes | head -c {:.0e}` (s03 + children)", scale.bash_bytes as f64),
        mb(run.exit.maxrss_kib),
        30.0,
        "MB",
    );
    if let Some(kib) = run.hwm_kib {
        report.info("  s03's own VmHWM after the call", mb(kib), "MB");
    }
    report.info("  wall of that session", ms(run.exit.wall), "ms");
    report.info("  CPU of s03 + sh + yes + head", ms(run.exit.cpu), "ms");
    Ok(())
}
