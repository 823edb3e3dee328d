//! An idle `s12` with two cron jobs: the CPU it uses while it waits at its prompt for a minute.
//!
//! The course's s12 wakes one thread every second (the scheduler) and another every 200 ms (the
//! queue processor) for as long as it runs. Ours sleeps until the next minute a job matches, so
//! between the jobs' minutes an idle session should cost (almost) nothing: the bound is 1 % of
//! one core. The workspace holds two durable jobs (`.scheduled_tasks.json`, as a learner's would
//! after a restart), and the scheduler's clock is set (`--clock`) to a time neither job matches
//! during the measurement, so no scheduled turn runs and no request is sent. CPU is the child's
//! `utime + stime` from `/proc/PID/stat`, read once the prompt is up and again at the end.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mock_api::{MockServer, reply};

use crate::child;
use crate::report::Report;

/// The bound: percent of one core over the measurement.
const IDLE_CPU_PERCENT: f64 = 1.0;

/// What the REPL prints when it waits for a line (`NO_COLOR=1`).
const PROMPT: &[u8] = b"s12 >> ";

/// Two durable jobs, neither due around the clock the child starts with: weekdays at 09:00, and
/// the first of each month at midnight. Written as the course writes the file.
const JOBS: &str = r#"[
  {
    "id": "cron_0a1b2c3d",
    "cron": "0 9 * * 1-5",
    "prompt": "run the tests",
    "recurring": true,
    "durable": true,
    "pending_delivery": false,
    "last_fired": null
  },
  {
    "id": "cron_4e5f6a7b",
    "cron": "0 0 1 * *",
    "prompt": "summarise last month's commits",
    "recurring": true,
    "durable": true,
    "pending_delivery": false,
    "last_fired": null
  }
]"#;

/// The scheduler's clock at start: a Wednesday afternoon, hours from either job's next minute.
const CLOCK: &str = "2026-08-12T14:00:05";

/// Clock ticks per second for `/proc/PID/stat`'s `utime` and `stime`.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// `utime + stime` of process `pid` (all its threads), from `/proc/PID/stat`.
pub fn cpu_of(pid: u32) -> Result<Duration, String> {
    let stat =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // The fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("unreadable /proc stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).ok_or("short /proc stat");
    let ticks = field(14)? + field(15)?;
    Ok(Duration::from_secs_f64(ticks as f64 / ticks_per_second()))
}

/// Runs `s12` idle at its prompt for `span` and reports the share of one core it used.
pub fn idle_cron(report: &mut Report, s12: &Path, span: Duration) -> Result<(), String> {
    let workdir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(workdir.path().join(".scheduled_tasks.json"), JOBS).map_err(|e| e.to_string())?;
    // No request is expected; the server answers one anyway rather than hang a mistaken turn.
    let server = MockServer::start_fn(|_| reply::text("idle"));
    let mut cmd = child::s03(s12, workdir.path(), &server.base_url());
    cmd.args(["--clock", CLOCK]).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut proc = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", s12.display()))?;
    let mut out = proc.stdout.take().ok_or("no stdout pipe")?;
    let seen = child::read_to_prompt(&mut out, PROMPT, "s12")?;
    if !String::from_utf8_lossy(&seen).contains("loaded 2 durable job(s)") {
        let _ = proc.kill();
        return Err(format!("s12 did not load the two jobs; printed {:?}", String::from_utf8_lossy(&seen)));
    }
    let pid = proc.id();
    let (cpu0, wall0) = (cpu_of(pid)?, Instant::now());
    // Idle: the REPL waits for a line that does not come.
    std::thread::sleep(span);
    let (cpu1, wall) = (cpu_of(pid)?, wall0.elapsed());
    // End of input quits the REPL.
    drop(proc.stdin.take());
    let _ = child::wait(proc, Instant::now());
    let percent = 100.0 * (cpu1.saturating_sub(cpu0)).as_secs_f64() / wall.as_secs_f64();
    report.info("  CPU while idle (ms)", cpu1.saturating_sub(cpu0).as_secs_f64() * 1000.0, "ms");
    report.check(
        &format!("idle s12 with two cron jobs, over {} s (share of one core)", span.as_secs()),
        percent,
        IDLE_CPU_PERCENT,
        "%",
    );
    if !server.requests().is_empty() {
        return Err(format!("the idle session sent {} request(s)", server.requests().len()));
    }
    Ok(())
}
