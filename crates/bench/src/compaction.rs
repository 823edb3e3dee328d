//! A session's cost that stays flat: a long `s08 -p` session (context compaction, COURSE §4.3)
//! against the in-process mock, next to the same session on `s03`, whose cost grows with its
//! history.
//!
//! ```text
//!   s08 -p ──POST /v1/messages──▶ MockServer: round k → read_file notes.txt (1 KB),
//!     with the course's limits          every 500th round also `compact`;
//!     (50,000 characters, 50 messages)   a request without tools (the summary call) → a summary
//!   s03 -p ── the same rounds, no compact ──▶ the history only grows
//! ```
//!
//! Figures, each against its bound (BENCHMARKS.md, "Flat cost with compaction"):
//! - the largest request s08 sends after compaction, in characters of its `messages` JSON (the
//!   course's measure): at most the context limit;
//! - s08's CPU per round late in the session over early in it (rounds 2,900–3,000 against
//!   100–200): at most 1.5×;
//! - s08's peak RSS: at most 12 MiB;
//! - what one compaction costs: the CPU of a round with a summary beyond a plain round, and, in
//!   process, `snip_compact`, `micro_compact` and building the summary input on histories of the
//!   session's shape (info).
//!
//! A round's CPU is measured as in the harness benchmark ([`crate::session`]): the CPU of the
//! chapter's threads between two of its loop requests, read from `/proc` when each arrives.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::messages::{ContentBlock, Message};
use agent_core::workspace::Workspace;
use compact::{Archive, Limits};
use mock_api::reply;
use serde_json::{Value, json};

use crate::Scale;
use crate::child::own_thread_cpu;
use crate::report::{Report, median, ms};
use crate::session::{Run, Session, run_with, small_file};

/// A round whose batch also calls `compact`, every this many rounds: rounds 250, 750, 1250, …,
/// half a period off the windows and curve points, which then read the history in its steady
/// state (50 messages, a snip each round) rather than just after a summary.
const COMPACT_EVERY: usize = 500;

/// The bound on late rounds' CPU over early rounds' (the issue's 1.5×).
const FLAT_BOUND: f64 = 1.5;

/// The bound on s08's peak RSS over the session, MiB.
const RSS_BOUND_MIB: f64 = 12.0;

/// Where the curve is read: after this many rounds (those within the session).
const CURVE: [usize; 6] = [100, 500, 1000, 1500, 2000, 3000];

/// Rounds averaged for one point of the curve, ending at it.
const WINDOW: usize = 10;

/// The summary the mock gives when s08 asks for one.
const SUMMARY: &str = "Goal: read notes.txt over and over. Done: many reads of the same 1 KB file; nothing changed. Remaining: more reads.";

/// The session's prompt.
const PROMPT: &str = "Read notes.txt over and over.";

/// One round of a session: its number (from 1), the CPU the chapter spent on it, and whether
/// a summary call fell inside it.
#[derive(Debug, Clone, Copy)]
struct Round {
    number: usize,
    cpu: Duration,
    summary: bool,
}

/// The rounds of `run`: round k runs from loop request k-1 (whose reply is its tool call) to
/// loop request k; summary calls (requests without tools) in between count in that round.
fn rounds(run: &Run) -> Vec<Round> {
    let loop_requests: Vec<usize> = (0..run.stamps.len()).filter(|&i| !run.stamps[i].side).collect();
    loop_requests
        .windows(2)
        .enumerate()
        .map(|(k, w)| Round {
            number: k + 1,
            cpu: run.stamps[w[1]].cpu.saturating_sub(run.stamps[w[0]].cpu),
            summary: (w[0] + 1..w[1]).any(|i| run.stamps[i].side),
        })
        .collect()
}

/// The median CPU of the plain rounds (no summary) numbered within `range`, ms: a round the
/// shared host slowed (a preempted vCPU) moves a mean of 100 rounds, not their median.
fn median_cpu(rounds: &[Round], range: std::ops::RangeInclusive<usize>) -> f64 {
    let picked: Vec<Duration> =
        rounds.iter().filter(|r| range.contains(&r.number) && !r.summary).map(|r| r.cpu).collect();
    ms(median(&picked))
}

/// The median of `values` (0 when there are none).
fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The figures of one s08 session.
#[derive(Debug, Clone, Copy, Default)]
struct S08 {
    largest: usize,
    largest_body: usize,
    most_messages: usize,
    summaries: usize,
    early: f64,
    late: f64,
    rss_mib: f64,
    session_cpu: f64,
    summary_adds: f64,
    plain: f64,
}

impl S08 {
    fn of(run: &Run, rounds_in_session: usize) -> Self {
        let all = rounds(run);
        let loop_stamps: Vec<_> = run.stamps.iter().filter(|s| !s.side).collect();
        let (early, late) = windows(rounds_in_session);
        let mut plain: Vec<Duration> = all.iter().filter(|r| !r.summary).map(|r| r.cpu).collect();
        plain.sort();
        let typical = median(&plain);
        let with: Vec<Duration> =
            all.iter().filter(|r| r.summary).map(|r| r.cpu.saturating_sub(typical)).collect();
        S08 {
            largest: loop_stamps.iter().map(|s| s.messages_chars).max().unwrap_or(0),
            largest_body: loop_stamps.iter().map(|s| s.body_bytes).max().unwrap_or(0),
            most_messages: loop_stamps.iter().map(|s| s.messages).max().unwrap_or(0),
            summaries: run.stamps.iter().filter(|s| s.side).count(),
            early: median_cpu(&all, early),
            late: median_cpu(&all, late),
            rss_mib: run.exit.maxrss_kib as f64 / 1024.0,
            session_cpu: ms(run.exit.cpu) / rounds_in_session as f64,
            summary_adds: ms(with.iter().sum::<Duration>()) / with.len().max(1) as f64,
            plain: ms(typical),
        }
    }
}

/// The early and late windows of a `rounds`-round session: rounds 100–200 and the last 100 when
/// it has 400 or more, else its second quarter and its last.
fn windows(rounds: usize) -> (std::ops::RangeInclusive<usize>, std::ops::RangeInclusive<usize>) {
    if rounds >= 400 {
        (100..=200, rounds - 99..=rounds)
    } else {
        (rounds / 4 + 1..=rounds / 2, rounds * 3 / 4 + 1..=rounds)
    }
}

/// The script: loop request j (the j-th request with tools) gets a `read_file` of notes.txt while
/// j < `rounds`, with `compact` too in rounds `compact_every / 2`, then every `compact_every` (0:
/// never), then `end_turn`; a request without tools (s08's summary call) gets [`SUMMARY`].
fn script(
    rounds: usize,
    compact_every: usize,
) -> impl Fn(usize, &mock_api::RecordedRequest) -> Value + Send + Sync {
    let loop_requests = AtomicUsize::new(0);
    move |_, request| {
        if request.body["tools"].as_array().is_none_or(Vec::is_empty) {
            return reply::message(vec![reply::text_block(SUMMARY)], "end_turn");
        }
        let j = loop_requests.fetch_add(1, Ordering::SeqCst);
        if j >= rounds {
            return reply::message(vec![reply::text_block("Done.")], "end_turn");
        }
        let mut calls =
            vec![reply::tool_use_block(&format!("toolu_{j}"), "read_file", json!({"path": "notes.txt"}))];
        if compact_every > 0 && (j + 1) % compact_every == compact_every / 2 {
            calls.push(reply::tool_use_block(&format!("toolu_c{j}"), "compact", json!({})));
        }
        reply::message(calls, "tool_use")
    }
}

/// One session of `rounds` rounds on `bin`, every request measured in detail when `all_detail`,
/// else only those the figures read. Checks it ended well.
fn session(
    bin: &Path,
    workdir: &Path,
    rounds: usize,
    compact_every: usize,
    all_detail: bool,
) -> Result<Run, String> {
    let summaries = (rounds + compact_every / 2).checked_div(compact_every).unwrap_or(0);
    let len = rounds + 1 + summaries;
    let (early, late) = windows(rounds);
    let detail = move |i: usize| {
        all_detail
            || early.contains(&i)
            || late.contains(&i)
            || i + 1 >= len
            || CURVE.iter().any(|&n| i + WINDOW >= n && i <= n + 1)
    };
    let run = run_with(
        bin,
        workdir,
        &Session { args: &["-p", PROMPT], keep_bodies: false },
        len,
        script(rounds, compact_every),
        detail,
    )?;
    if run.exit.code != 0 || run.stamps.len() != len {
        return Err(format!(
            "{}: the {rounds}-round session exited {} after {} requests (expected {len})",
            bin.display(),
            run.exit.code,
            run.stamps.len()
        ));
    }
    Ok(run)
}

/// The flat-cost benchmark: see the module docs.
///
/// # Errors
/// A session could not run or did not end with exit 0 after the whole script.
pub fn flat_cost(report: &mut Report, s03: &Path, s08: &Path, scale: Scale) -> Result<(), String> {
    let r = scale.compaction_rounds;
    let compact_every = COMPACT_EVERY.min(r.max(2) / 2);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("notes.txt"), small_file()).map_err(|e| e.to_string())?;
    let limits = Limits::default();
    report.note(&format!(
        "session: {r} read_file rounds of a 1 KB file, `compact` in rounds {}, {}, … (its summary answered by \
         the server); s08 with the course's limits ({} characters, {} messages); s03 the same rounds without \
         compact",
        compact_every / 2,
        compact_every / 2 + compact_every,
        limits.context_limit,
        limits.max_messages
    ));

    let n = scale.session_repeats.max(1);
    let mut runs = Vec::with_capacity(n);
    let mut last_run = None;
    for _ in 0..n {
        let run = session(s08, dir.path(), r, compact_every, true)?;
        runs.push(S08::of(&run, r));
        last_run = Some(run);
    }
    let Some(s08_run) = last_run else { return Err("no s08 session ran".into()) };
    let s08_rounds = rounds(&s08_run);
    let med = |f: fn(&S08) -> f64| median_of(runs.iter().map(f).collect());
    let max = |f: fn(&S08) -> usize| runs.iter().map(f).max().unwrap_or(0);
    report.note(&format!(
        "s08: {n} sessions; each figure is their median, the sizes and the peak RSS their largest"
    ));
    report.check_at_most(
        &format!("s08: largest request over {r} rounds (chars of its messages)"),
        max(|x| x.largest) as f64,
        limits.context_limit as f64,
        "chars",
    );
    report.info("  s08: largest request body", max(|x| x.largest_body) as f64 / 1e3, "KB");
    report.note(&format!(
        "s08: {} summary call(s) a session; the history holds at most {} messages",
        max(|x| x.summaries),
        max(|x| x.most_messages)
    ));
    let (early, late) = windows(r);
    let label = |w: &std::ops::RangeInclusive<usize>| format!("rounds {}-{}", w.start(), w.end());
    report.info(
        &format!("s08: harness CPU per round, {} (median round)", label(&early)),
        med(|x| x.early),
        "ms",
    );
    report.info(
        &format!("s08: harness CPU per round, {} (median round)", label(&late)),
        med(|x| x.late),
        "ms",
    );
    report.check_at_most(
        &format!("s08: CPU per round, {} / {}", label(&late), label(&early)),
        med(|x| x.late / x.early.max(f64::MIN_POSITIVE)),
        FLAT_BOUND,
        "×",
    );
    let spread: Vec<String> =
        runs.iter().map(|x| format!("{:.2}", x.late / x.early.max(f64::MIN_POSITIVE))).collect();
    report.note(&format!("  the ratio in each session: {}", spread.join(", ")));
    report.check_at_most(
        &format!("s08: peak RSS, {r}-round session (ru_maxrss, max of {n})"),
        runs.iter().map(|x| x.rss_mib).fold(0.0, f64::max),
        RSS_BOUND_MIB,
        "MiB",
    );
    report.info(&format!("  s08: CPU of the whole session (wait4) / {r}"), med(|x| x.session_cpu), "ms");
    report.info("s08: CPU one summary adds to its round", med(|x| x.summary_adds), "ms");
    report.info("  s08: the median plain round (a snip in each, past 50 messages)", med(|x| x.plain), "ms");
    in_process(report)?;

    let s03_run = session(s03, dir.path(), r, 0, false)?;
    let s03_rounds = rounds(&s03_run);
    let (first3, last3) = (median_cpu(&s03_rounds, early.clone()), median_cpu(&s03_rounds, late.clone()));
    report.note("s03, the same rounds without compaction: the history only grows");
    report.info(&format!("s03: harness CPU per round, {} (median round)", label(&early)), first3, "ms");
    report.info(&format!("s03: harness CPU per round, {} (median round)", label(&late)), last3, "ms");
    report.info(
        &format!("s03: CPU per round, {} / {}", label(&late), label(&early)),
        last3 / first3.max(f64::MIN_POSITIVE),
        "×",
    );
    report.info(
        &format!("s03: peak RSS, {r}-round session (ru_maxrss)"),
        s03_run.exit.maxrss_kib as f64 / 1024.0,
        "MiB",
    );
    report.info(
        &format!("  s03: CPU of the whole session (wait4) / {r}"),
        ms(s03_run.exit.cpu) / r as f64,
        "ms",
    );

    report.note(&format!(
        "the curve: after N rounds, the request's messages (characters) and the median CPU per round over the {WINDOW} \
         rounds before (s08: its last session)"
    ));
    report.note(&format!(
        "{:>8} {:>14} {:>12} {:>14} {:>12}",
        "rounds", "s08 chars", "s08 ms", "s03 chars", "s03 ms"
    ));
    for &n in CURVE.iter().filter(|&&n| n <= r) {
        let chars = |run: &Run| run.stamps.iter().filter(|s| !s.side).nth(n).map_or(0, |s| s.messages_chars);
        let window = n + 1 - WINDOW.min(n)..=n;
        report.note(&format!(
            "{n:>8} {:>14} {:>12.3} {:>14} {:>12.3}",
            chars(&s08_run),
            median_cpu(&s08_rounds, window.clone()),
            chars(&s03_run),
            median_cpu(&s03_rounds, window)
        ));
    }
    Ok(())
}

/// A history of the session's shape: the prompt, then `rounds` rounds of one `read_file` call and
/// its `bytes`-long result.
fn history(rounds: usize, bytes: usize) -> Vec<Message> {
    let output: String = small_file().chars().cycle().take(bytes).collect();
    let mut h = vec![Message::user_text(PROMPT)];
    for i in 0..rounds {
        let id = format!("toolu_{i}");
        h.push(Message::assistant_blocks(vec![ContentBlock::tool_use(
            &id,
            "read_file",
            json!({"path": "notes.txt"}),
        )]));
        h.push(Message::user_blocks(vec![ContentBlock::tool_result(&id, output.clone(), false)]));
    }
    h
}

/// The median thread CPU of `runs` calls of `f`, each on a fresh copy of `input`.
fn timed<T: Clone>(runs: usize, input: &T, mut f: impl FnMut(T)) -> Result<Duration, String> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let copy = input.clone();
        let before = own_thread_cpu().ok_or("no thread CPU clock")?;
        f(copy);
        times.push(own_thread_cpu().ok_or("no thread CPU clock")?.saturating_sub(before));
    }
    Ok(median(&times))
}

/// What one compaction costs in process, on histories of the session's shape (info).
fn in_process(report: &mut Report) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = Workspace::new(dir.path()).map_err(|e| e.to_string())?;
    let limits = Limits::default();
    // The snip of a round: 51 messages, two of them archived, the complete history written.
    let snip_input = history(25, 1_000);
    let snip = timed(51, &snip_input, |mut h| {
        let mut archive = Archive::new(&ws);
        std::hint::black_box(compact::snip_compact(&mut h, &limits, Some(PROMPT), &mut archive).ok());
    })?;
    report.info(
        &format!("  in process: snip_compact, {} messages (transcript written)", snip_input.len()),
        ms(snip),
        "ms",
    );
    // Micro-compaction of a history just over the limit: its oldest results saved.
    let mut micro_input = history(24, 2_000);
    micro_input.push(Message::assistant_blocks(vec![ContentBlock::text("next")]));
    let size = compact::context_size(&micro_input);
    let micro = timed(51, &micro_input, |mut h| {
        let mut archive = Archive::new(&ws);
        let mut size = compact::context_size(&h);
        std::hint::black_box(compact::micro_compact(&mut h, &limits, &mut size, &mut archive));
    })?;
    report.info(
        &format!("  in process: micro_compact, {:.0} KB to 40 KB (results saved)", size as f64 / 1e3),
        ms(micro),
        "ms",
    );
    // The summary call's input: the history's JSON, cut to 80,000 characters.
    let summary = timed(51, &micro_input, |h| {
        std::hint::black_box(compact::compact_history::summary_input(&h, limits.summary_input));
    })?;
    report.info(
        &format!("  in process: the summary input of a {:.0} KB history", size as f64 / 1e3),
        ms(summary),
        "ms",
    );
    Ok(())
}
