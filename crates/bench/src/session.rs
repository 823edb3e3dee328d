//! Scripted `s03 -p` sessions against the in-process mock server: harness overhead per round and
//! its growth with the history, the long session's memory, and the bash tool's memory.
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
use crate::host::{self, Host};
use crate::report::{Report, ms};

/// The small file read every round: 20 lines, about 1 KB.
pub fn small_file() -> String {
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
    /// `s03`'s `VmRSS` (KiB) when the request arrived (`None` when not measured).
    pub rss_kib: Option<u64>,
    /// The characters of the request's `messages` as compact JSON, the measure s08's limits are
    /// in (zero when not measured).
    pub messages_chars: usize,
    /// The request has no tools: an extension's own model call (s08's summary), not a round of
    /// the loop.
    pub side: bool,
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
    /// Every request the server received (without bodies unless `keep_bodies`).
    pub server: MockServer,
    /// The body of the last scripted request.
    pub last_body: Option<Value>,
}

/// Runs `s03 -p PROMPT` in `workdir` against a server answering request `i` with
/// `Reply::Message(script(i))` for `i < len` (an API error after that). For each request `i` with
/// `detail(i)`, the closure also times parsing a copy of its body (server time, outside the
/// gaps) and reads `s03`'s `VmRSS`. `keep_bodies: false` keeps the server from holding every
/// body (gigabytes over a 1,000-round session).
///
/// # Errors
/// Spawning or reaping the child failed.
pub fn run(
    bin: &Path,
    workdir: &Path,
    len: usize,
    script: impl Fn(usize) -> Value + Send + Sync + 'static,
    detail: impl Fn(usize) -> bool + Send + Sync + 'static,
    keep_bodies: bool,
) -> Result<Run, String> {
    let session = Session {
        args: &["-p", "Read notes.txt over and over; plan with the todo tool first."],
        keep_bodies,
    };
    run_with(bin, workdir, &session, len, move |i, _| script(i), detail)
}

/// What a scripted session runs: the chapter's arguments, and whether the server keeps the
/// request bodies.
pub struct Session<'a> {
    /// The arguments after the binary (`-p PROMPT`, flags).
    pub args: &'a [&'a str],
    /// Whether [`Run::server`] keeps every body (see [`run`]).
    pub keep_bodies: bool,
}

/// [`run`] for any chapter binary and arguments, with a script that also sees the request (s08's
/// summary calls are answered by what they ask).
///
/// # Errors
/// Spawning or reaping the child failed.
pub fn run_with(
    bin: &Path,
    workdir: &Path,
    session: &Session<'_>,
    len: usize,
    script: impl Fn(usize, &mock_api::RecordedRequest) -> Value + Send + Sync + 'static,
    detail: impl Fn(usize) -> bool + Send + Sync + 'static,
) -> Result<Run, String> {
    let keep_bodies = session.keep_bodies;
    let stamps: Arc<Mutex<Vec<Stamp>>> = Arc::new(Mutex::new(Vec::with_capacity(len)));
    let pid = Arc::new(AtomicU32::new(0));
    let hwm: Arc<Mutex<Option<u64>>> = Arc::new(Mutex::new(None));
    let last: Arc<Mutex<Option<Value>>> = Arc::new(Mutex::new(None));
    let respond = {
        let (stamps, pid, hwm, last) =
            (Arc::clone(&stamps), Arc::clone(&pid), Arc::clone(&hwm), Arc::clone(&last));
        let s03 = AtomicU32::new(0);
        move |request: &mock_api::RecordedRequest| {
            let arrived = Instant::now();
            if s03.load(Ordering::SeqCst) == 0 {
                s03.store(child::first_child(pid.load(Ordering::SeqCst)).unwrap_or(0), Ordering::SeqCst);
            }
            let s03 = s03.load(Ordering::SeqCst);
            let cpu = child::thread_cpu(s03);
            let mut stamps = stamps.lock().unwrap_or_else(|p| p.into_inner());
            let i = stamps.len();
            let detailed = detail(i);
            let rss_kib =
                if detailed { child::status_field(&format!("/proc/{s03}/status"), "VmRSS:") } else { None };
            let answer = if i < len {
                let body = script(i, request);
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
            let (parse, body_bytes, messages_chars) = if detailed {
                let bytes = serde_json::to_vec(&request.body).unwrap_or_default();
                let t = Instant::now();
                std::hint::black_box(serde_json::from_slice::<Value>(&bytes).ok());
                let messages = serde_json::to_string(&request.body["messages"]).unwrap_or_default();
                (t.elapsed(), bytes.len(), messages.chars().count())
            } else {
                (Duration::ZERO, 0, 0)
            };
            if i + 1 == len {
                *hwm.lock().unwrap_or_else(|p| p.into_inner()) = child::vm_hwm_kib(s03);
                *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(request.body.clone());
            }
            let messages = request.body["messages"].as_array().map_or(0, Vec::len);
            let side = request.body["tools"].as_array().is_none_or(Vec::is_empty);
            stamps.push(Stamp {
                arrived,
                reply,
                parse,
                done: Instant::now(),
                messages,
                body_bytes,
                cpu,
                rss_kib,
                messages_chars,
                side,
            });
            answer
        }
    };
    let server =
        if keep_bodies { MockServer::start_fn(respond) } else { MockServer::start_fn_no_bodies(respond) };
    let figures = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut cmd =
        child::measured(bin, workdir, &server.base_url(), figures.path()).map_err(|e| e.to_string())?;
    cmd.args(session.args);
    let started = Instant::now();
    let helper = cmd.spawn().map_err(|e| format!("cannot start the measuring helper: {e}"))?;
    pid.store(helper.id(), Ordering::SeqCst);
    let exit = child::wait_measured(helper, started, figures.path())?;
    let stamps = stamps.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let hwm_kib = *hwm.lock().unwrap_or_else(|p| p.into_inner());
    let last_body = last.lock().unwrap_or_else(|p| p.into_inner()).take();
    Ok(Run { exit, stamps, hwm_kib, server, last_body })
}

/// The host's speed around each session of one series (see [`crate::host`]).
#[derive(Debug, Default)]
struct HostLog {
    /// Per session: its figure, and the slower of the probes just before and just after it.
    sessions: Vec<(f64, Duration)>,
}

impl HostLog {
    /// Runs `session` between two probes of the host and records the slower probe with the
    /// session's `figure`. Every session is kept, whatever the probes say.
    ///
    /// # Errors
    /// The session failed.
    fn bracket(
        &mut self,
        host: &mut Host,
        session: impl FnOnce() -> Result<Run, String>,
        figure: impl Fn(&Run) -> f64,
    ) -> Result<Run, String> {
        let before = host.probe();
        let run = session()?;
        let after = host.probe();
        self.sessions.push((figure(&run), before.max(after)));
        Ok(run)
    }

    /// Prints how many of the sessions (`what`) ran on a busy host, judged against the fastest
    /// probe of the run so far, and the median figure of the others (info: the checked figure is
    /// the median of them all).
    fn report(&self, report: &mut Report, host: &Host, what: &str) {
        let (busy, quiet): (Vec<_>, Vec<_>) =
            self.sessions.iter().partition(|(_, probe)| host.is_busy(*probe));
        let mut quiet: Vec<f64> = quiet.iter().map(|(figure, _)| *figure).collect();
        quiet.sort_by(f64::total_cmp);
        let others = if quiet.is_empty() {
            "no session ran on a quiet host".to_owned()
        } else {
            format!("median of the {} on a quiet host {:.3} ms", quiet.len(), med_of(&quiet))
        };
        report.note(&format!(
            "  {} of the {} {what} ran on a busy host (a probe over {}× the fastest just before or \
             after); {others}",
            busy.len(),
            self.sessions.len(),
            host::SLOWER,
        ));
    }
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

/// Where the growth curve is read: after this many `read_file` rounds.
const CURVE: [usize; 3] = [10, 100, 1000];

/// Rounds averaged for one point of the curve, ending at the point.
const WINDOW: usize = 10;

/// Rounds averaged for the first and last figures.
const EDGE: usize = 20;

/// Short sessions of [`EDGE`] rounds that measure the first rounds (see [`harness`]).
const SHORT_SESSIONS: usize = 21;

/// The per-round targets (BENCHMARKS.md, "Per-round cost near the physical limit").
const CPU_FIRST_MS: f64 = 0.15;
const CPU_MEAN_MS: f64 = 0.4;
const RSS_SESSION_MIB: f64 = 10.0;

/// The bound on rounds 181–200 (BENCHMARKS.md, "Harness overhead per round").
const CPU_200_MS: f64 = 1.0;

/// Round `k` (1-based) lies in one of the windows the figures read, so request `k + 1` (which
/// closes it) is measured in detail.
fn detailed_round(k: usize, rounds: usize) -> bool {
    k <= EDGE
        || k + EDGE > rounds
        || (181..=200).contains(&k)
        || CURVE.iter().any(|&n| n <= rounds && k + WINDOW > n && k <= n)
}

/// One harness session of `rounds` read_file rounds; checks it ended well.
fn harness_run(bin: &Path, workdir: &Path, rounds: usize) -> Result<Run, String> {
    let detail = move |i: usize| i >= 2 && detailed_round(i - 1, rounds);
    let run = run(bin, workdir, rounds + 2, harness_script(rounds), detail, false)?;
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

/// The mean request body, in bytes, of the requests that close rounds 1 to `rounds` of `run`
/// (0 when there is no run or they were not measured).
fn mean_body_bytes(run: Option<&Run>, rounds: usize) -> usize {
    let Some(run) = run else { return 0 };
    let sizes: Vec<usize> =
        (2..=rounds + 1).filter_map(|i| run.stamps.get(i)).map(|s| s.body_bytes).collect();
    sizes.iter().sum::<usize>() / sizes.len().max(1)
}

/// Mean of `f` over the stamps of read_file rounds `range` (1-based round numbers).
fn mean_over(range: std::ops::RangeInclusive<usize>, f: impl Fn(usize) -> Duration) -> Duration {
    let n = range.clone().count().max(1);
    range.map(f).sum::<Duration>() / u32::try_from(n).unwrap_or(u32::MAX)
}

/// One point of the growth curve: the history after `CURVE[i]` rounds.
#[derive(Debug, Clone, Copy, Default)]
struct Point {
    /// Mean harness CPU per round over the [`WINDOW`] rounds ending here, ms.
    cpu_window: f64,
    /// Mean harness CPU per round from round 1 to here, ms.
    cpu_mean: f64,
    /// `s03`'s `VmRSS` when the request after this round arrived, MiB.
    rss_mib: f64,
    /// Messages in that request.
    messages: usize,
    /// Its body, KB.
    kb: f64,
}

/// Per-run figures of the harness session, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    cpu_first: f64,
    cpu_last: f64,
    cpu_all: f64,
    cpu_200: f64,
    session_cpu: f64,
    wall: f64,
    gap_first: f64,
    gap_last: f64,
    parse_first: f64,
    parse_last: f64,
    reply: f64,
    curve: [Point; CURVE.len()],
}

impl Figures {
    /// The figures of one `rounds`-round run.
    fn of(run: &Run, rounds: usize) -> Figures {
        let s = &run.stamps;
        let r = rounds;
        // Round k (1..=r): from reply k (the k-th read_file call) to request k+1.
        let gap = |k: usize| s[k + 1].arrived.saturating_duration_since(s[k].done);
        let cpu = |k: usize| s[k + 1].cpu.saturating_sub(s[k].cpu);
        let first = 1..=EDGE.min(r);
        let last = (r + 1).saturating_sub(EDGE).max(1)..=r;
        let mut curve = [Point::default(); CURVE.len()];
        for (point, &n) in curve.iter_mut().zip(&CURVE).filter(|(_, n)| **n <= r) {
            *point = Point {
                cpu_window: ms(mean_over((n + 1).saturating_sub(WINDOW).max(1)..=n, cpu)),
                cpu_mean: ms(mean_over(1..=n, cpu)),
                rss_mib: s[n + 1].rss_kib.unwrap_or(0) as f64 / 1024.0,
                messages: s[n + 1].messages,
                kb: s[n + 1].body_bytes as f64 / 1e3,
            };
        }
        Figures {
            cpu_first: ms(mean_over(first.clone(), cpu)),
            cpu_last: ms(mean_over(last.clone(), cpu)),
            cpu_all: ms(mean_over(1..=r, cpu)),
            cpu_200: if r >= 200 { ms(mean_over(181..=200, cpu)) } else { 0.0 },
            session_cpu: ms(run.exit.cpu),
            wall: ms(s[r + 1].arrived.duration_since(s[1].arrived)) / r as f64,
            gap_first: ms(mean_over(first.clone(), gap)),
            gap_last: ms(mean_over(last.clone(), gap)),
            parse_first: ms(mean_over(first, |k| s[k + 1].parse)),
            parse_last: ms(mean_over(last, |k| s[k + 1].parse)),
            reply: ms(mean_over(1..=r, |k| s[k].reply)),
            curve,
        }
    }
}

/// The median of one figure over runs.
fn med(runs: &[Figures], f: impl Fn(&Figures) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    med_of(&v)
}

/// The median of sorted values (0 when there are none).
fn med_of(v: &[f64]) -> f64 {
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Harness overhead per round, its growth with the history, and the session's peak RSS. Each
/// figure is the median over `scale.session_repeats` sessions; the peak RSS is the
/// largest. The checked figure for the first rounds is the median over [`SHORT_SESSIONS`] sessions
/// of [`EDGE`] rounds (as many as the long ones with `--quick` or fewer `--repeats`).
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
    // The body sizes of the requests after round 1 and after the last round.
    let mut last_body_sizes = (0, 0);
    let mut host = Host::learn()?;
    let mut long_log = HostLog::default();
    for _ in 0..n {
        let run = long_log.bracket(
            &mut host,
            || harness_run(bin, dir.path(), r),
            |run| Figures::of(run, r).cpu_all,
        )?;
        last_body_sizes = (run.stamps[2].body_bytes, run.stamps[r + 1].body_bytes);
        last_body = run.last_body.clone();
        figures.push(Figures::of(&run, r));
        rss.push(run.exit.maxrss_kib);
        hwm.extend(run.hwm_kib);
        last_request = (run.stamps[r + 1].messages, run.stamps[r + 1].body_bytes);
    }
    let (msgs, bytes) = last_request;
    report.note(&format!(
        "session: 1 todo call, {r} read_file rounds of a 1 KB file, end_turn; last request {msgs} \
         messages, {:.0} KB; median of {n} sessions",
        bytes as f64 / 1e3
    ));
    let f = |g: fn(&Figures) -> f64| med(&figures, g);
    let first = format!("rounds 1-{}", EDGE.min(r));
    let last = format!("rounds {}-{r}", (r + 1).saturating_sub(EDGE).max(1));
    // The first rounds take about 2 ms of a session, so a few long sessions give few samples of
    // them, and a second of noise from the host (a shared VM) moves their median. Short sessions
    // of those rounds alone, many of them, measure the same quantity with more samples.
    let short_n = if n < Scale::FULL.session_repeats { n } else { SHORT_SESSIONS };
    let mut short = Vec::with_capacity(short_n);
    let mut short_log = HostLog::default();
    let mut last_short = None;
    for _ in 0..short_n {
        let cpu_first = |run: &Run| Figures::of(run, EDGE).cpu_first;
        let run = short_log.bracket(&mut host, || harness_run(bin, dir.path(), EDGE), cpu_first)?;
        short.push(cpu_first(&run));
        last_short = Some(run);
    }
    // The sizes of a first round's exchange, for the floor below: the mean request body over
    // rounds 1-20, and the reply's events as the mock writes them.
    let first_request = mean_body_bytes(last_short.as_ref(), EDGE);
    let reply_events = reply::sse_from_message(&harness_script(EDGE)(1));
    let reply_bytes = mock_api::serialize_sse(&reply_events, false).len();
    short.sort_by(f64::total_cmp);
    let short_median = med_of(&short);
    report.check_at_most(
        &format!("harness CPU per round, rounds 1-{EDGE} (median of {short_n} sessions of {EDGE} rounds)"),
        short_median,
        CPU_FIRST_MS,
        "ms",
    );
    let pieces = reply_events.len();
    let floor = crate::floor::loopback_exchange_cpu(
        first_request,
        pieces,
        reply_bytes.div_ceil(pieces.max(1)),
        2001,
    )?;
    report.info(
        &format!(
            "  floor: a bare client's CPU for one loopback exchange ({:.1} KB out, {pieces} writes back; median of 2001)",
            first_request as f64 / 1e3
        ),
        ms(floor),
        "ms",
    );
    if let (Some(lo), Some(hi)) = (short.first(), short.last()) {
        // Nearest rank: with 2 sessions the quartiles are the two values, not the first twice.
        let q = |p: usize| short[((short.len() - 1) * p + 2) / 4];
        report.note(&format!(
            "  spread of those sessions: min {lo:.3}, quartiles {:.3} / {:.3}, max {hi:.3} ms",
            q(1),
            q(3)
        ));
    }
    report.info(
        &format!("harness CPU per round, {first} of the {r}-round sessions"),
        f(|x| x.cpu_first),
        "ms",
    );
    report.check_at_most(
        &format!("harness CPU per round, mean of all {r}"),
        f(|x| x.cpu_all),
        CPU_MEAN_MS,
        "ms",
    );
    report.info(&format!("harness CPU per round, {last} (~{msgs} msgs)"), f(|x| x.cpu_last), "ms");
    if r >= 200 {
        report.check("harness CPU per round, rounds 181-200", f(|x| x.cpu_200), CPU_200_MS, "ms");
    }
    report.info(&format!("CPU of the whole session (wait4) / {r}"), f(|x| x.session_cpu) / r as f64, "ms");
    report.note("growth with the history: CPU per round and s03's RSS after N rounds");
    for (i, &at) in CURVE.iter().enumerate().filter(|(_, n)| **n <= r) {
        let p = |g: fn(&Point) -> f64| med(&figures, |x| g(&x.curve[i]));
        let window = format!("{}-{at}", (at + 1).saturating_sub(WINDOW).max(1));
        report.note(&format!(
            "after {at} rounds: the next request holds {} messages, {:.0} KB",
            figures[0].curve[i].messages,
            p(|x| x.kb)
        ));
        report.info(&format!("  {at:>4} rounds: CPU per round, rounds {window}"), p(|x| x.cpu_window), "ms");
        report.info(&format!("  {at:>4} rounds: mean CPU per round, rounds 1-{at}"), p(|x| x.cpu_mean), "ms");
        report.info(&format!("  {at:>4} rounds: s03 VmRSS"), p(|x| x.rss_mib), "MiB");
    }
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
    // The floor: the kernel's CPU for writing a body of that size to a loopback socket.
    let (first_bytes, _) = last_body_sizes;
    let mean_bytes = (first_bytes + bytes) / 2;
    let floor_last = crate::floor::loopback_write_cpu(bytes, 51)?;
    let floor_mean = crate::floor::loopback_write_cpu(mean_bytes, 51)?;
    report.note("the floor: CPU the kernel charges for writing a body to a loopback socket (least of 51)");
    report.info(
        &format!("  floor: writing the last request ({:.0} KB)", bytes as f64 / 1e3),
        ms(floor_last),
        "ms",
    );
    report.info(
        &format!("  floor: writing the session's mean request ({:.0} KB)", mean_bytes as f64 / 1e3),
        ms(floor_mean),
        "ms",
    );

    report.note(&format!(
        "host check: a fixed workload ({}) on each CPU before and after each session; the fastest took {:.3} ms",
        host::workload(),
        ms(host.best())
    ));
    short_log.report(report, &host, &format!("sessions of {EDGE} rounds"));
    long_log.report(report, &host, &format!("{r}-round sessions"));

    let mib = |kib: u64| kib as f64 / 1024.0;
    let max_rss = rss.iter().copied().max().unwrap_or(0);
    report.check_at_most(
        &format!("peak RSS, {r}-round session (ru_maxrss of s03, max of {n})"),
        mib(max_rss),
        RSS_SESSION_MIB,
        "MiB",
    );
    if let Some(kib) = hwm.iter().copied().max() {
        report.info("  s03's own VmHWM at the last request (max)", mib(kib), "MiB");
    }
    Ok(())
}

/// Peak RSS of the bash tool running `yes | head -c N` (BENCHMARKS.md, "Memory").
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
    let run = run(bin, dir.path(), 2, script, |_| false, true)?;
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
