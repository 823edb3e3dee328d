//! Start-up: exec → first `s03 >> ` prompt on a piped stdout, exec → exit of
//! `s03 --help`, exec → exit of `s03 -p` with one round against the loopback server (medians), and
//! the CPU time and peak RSS of that one-request run, from `wait4(2)` through the measuring helper.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use mock_api::{MockServer, reply};

use crate::Scale;
use crate::child::{self, Exit};
use crate::report::{Report, median, ms};

/// The bound on the CPU of a one-request run (start-up, one round, quit), ms.
const START_CPU_MS: f64 = 4.0;

/// The bound on the peak RSS of a one-request run, MiB.
const ONE_REQUEST_RSS_MIB: f64 = 6.0;

/// What the REPL prints when it waits for a line (`NO_COLOR=1`).
const PROMPT: &[u8] = b"s03 >> ";

/// Spawns the REPL with piped stdin and stdout and returns the time until the prompt appears.
fn to_prompt(bin: &Path, workdir: &Path, base_url: &str) -> Result<Duration, String> {
    let mut cmd = child::s03(bin, workdir, base_url);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let started = Instant::now();
    let mut proc = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let mut out = proc.stdout.take().ok_or("no stdout pipe")?;
    child::read_to_prompt(&mut out, PROMPT, "s03")?;
    let elapsed = started.elapsed();
    // EOF on stdin quits the REPL.
    drop(proc.stdin.take());
    drop(out);
    child::wait(proc, started).map_err(|e| e.to_string())?;
    Ok(elapsed)
}

/// Spawns `s03 ARGS` with stdout on /dev/null and returns exec → exit, failing on a non-zero code.
fn to_exit(bin: &Path, workdir: &Path, base_url: &str, args: &[&str]) -> Result<Duration, String> {
    let mut cmd = child::s03(bin, workdir, base_url);
    cmd.args(args);
    let started = Instant::now();
    let proc = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let exit = child::wait(proc, started).map_err(|e| e.to_string())?;
    if exit.code != 0 {
        return Err(format!("s03 {args:?} exited {}", exit.code));
    }
    Ok(exit.wall)
}

/// Runs `bin ARGS` through the measuring helper and returns its `wait4` figures, failing on a
/// non-zero exit code.
fn measured_exit(bin: &Path, workdir: &Path, base_url: &str, args: &[&str]) -> Result<Exit, String> {
    let figures = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut cmd = child::measured(bin, workdir, base_url, figures.path()).map_err(|e| e.to_string())?;
    cmd.args(args);
    let started = Instant::now();
    let helper = cmd.spawn().map_err(|e| format!("cannot start the measuring helper: {e}"))?;
    let exit = child::wait_measured(helper, started, figures.path())?;
    if exit.code != 0 {
        return Err(format!("{} {args:?} exited {}", bin.display(), exit.code));
    }
    Ok(exit)
}

/// The start-up figures.
///
/// # Errors
/// A run failed.
pub fn startup(report: &mut Report, bin: &Path, scale: Scale) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let server = MockServer::start_fn(|_| reply::text("Done."));
    let url = server.base_url();
    let n = scale.startup_runs;
    let mut prompt = Vec::new();
    let mut help = Vec::new();
    let mut one = Vec::new();
    let mut cpu = Vec::new();
    let mut rss = Vec::new();
    // One warm-up of each (page cache, dynamic loader), then `n` measured runs, interleaved.
    for i in 0..=n {
        let p = to_prompt(bin, dir.path(), &url)?;
        let h = to_exit(bin, dir.path(), &url, &["--help"])?;
        let o = to_exit(bin, dir.path(), &url, &["-p", "Say done."])?;
        let m = measured_exit(bin, dir.path(), &url, &["-p", "Say done."])?;
        if i > 0 {
            prompt.push(p);
            help.push(h);
            one.push(o);
            cpu.push(m.cpu);
            rss.push(m.maxrss_kib);
        }
    }
    // What ru_maxrss cannot go below: the helper's own peak, inherited by its child at exec.
    let floor = measured_exit(Path::new("/bin/true"), dir.path(), &url, &[])?;
    report.note(&format!("median of {n} runs each, after one warm-up"));
    report.check("start-up: exec → `s03 >> ` prompt (piped stdin)", ms(median(&prompt)), 20.0, "ms");
    report.info("start-up: exec → exit of `s03 --help` (lower bound)", ms(median(&help)), "ms");
    report.info("start-up: exec → exit of `s03 -p` (one round)", ms(median(&one)), "ms");
    report.check_at_most(
        "start-up CPU: `s03 -p`, one request, then quit (wait4)",
        ms(median(&cpu)),
        START_CPU_MS,
        "ms",
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    report.check_at_most(
        &format!("peak RSS, one request (ru_maxrss of s03, max of {n})"),
        mib(rss.iter().copied().max().unwrap_or(0)),
        ONE_REQUEST_RSS_MIB,
        "MiB",
    );
    report.info("  floor: ru_maxrss of /bin/true under the same helper", mib(floor.maxrss_kib), "MiB");
    Ok(())
}
