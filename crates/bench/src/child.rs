//! Running `s03` as a child process and measuring it: wall time, CPU time and peak RSS from
//! `wait4(2)`, and the process's own peak from `/proc/PID/status`.
//!
//! Why a helper: a child started with `vfork` (as `std::process::Command` does) or `fork` gets its
//! parent's RSS high-water mark folded into its own `ru_maxrss` when it calls `execve` (Linux's
//! `exec_mmap` records the old mm's peak, and the old mm is the parent's). The bench process holds
//! tens of MB (the mock server keeps every request), so `ru_maxrss` of a child it spawns directly
//! would report the bench's peak, not the child's. [`measured`] therefore starts `s03` through a
//! freshly exec'd copy of this binary (`bench --measure-child FILE -- s03 …`, a few MB), which
//! spawns `s03`, reaps it with `wait4` and writes the figures to FILE.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Variables passed to the child; everything else is cleared, so no real key or endpoint leaks in.
const KEPT: &[&str] = &["PATH", "HOME", "LANG", "TMPDIR"];

/// The hidden first argument that makes this binary the measuring helper.
pub const MEASURE_FLAG: &str = "--measure-child";

/// A `s03` command in `workdir` with a clean environment pointed at `base_url`, colour off, and
/// stdout, stderr and stdin on `/dev/null` (callers change what they need).
pub fn s03(bin: &Path, workdir: &Path, base_url: &str) -> Command {
    configure(Command::new(bin), workdir, base_url)
}

/// Like [`s03`], started through the measuring helper, which writes its figures to `report`
/// (read them back with [`wait_measured`]). The helper's only child is `s03`.
///
/// # Errors
/// This executable's path is unknown.
pub fn measured(bin: &Path, workdir: &Path, base_url: &str, report: &Path) -> std::io::Result<Command> {
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg(MEASURE_FLAG).arg(report).arg("--").arg(bin);
    Ok(configure(cmd, workdir, base_url))
}

fn configure(mut cmd: Command, workdir: &Path, base_url: &str) -> Command {
    cmd.current_dir(workdir).env_clear();
    for name in KEPT {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.env("ANTHROPIC_BASE_URL", base_url)
        .env("MODEL_ID", "x")
        .env("NO_COLOR", "1")
        .env("ANTHROPIC_MAX_RETRIES", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Reads `out` until `prompt` appears and returns everything read; fails when the stream ends
/// first, naming `who` and what it printed.
///
/// # Errors
/// A read error, or the end of the stream before the prompt.
pub fn read_to_prompt(out: &mut impl std::io::Read, prompt: &[u8], who: &str) -> Result<Vec<u8>, String> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !seen.windows(prompt.len()).any(|w| w == prompt) {
        let n = out.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!(
                "{who} exited before its prompt; printed {:?}",
                String::from_utf8_lossy(&seen)
            ));
        }
        seen.extend_from_slice(&buf[..n]);
    }
    Ok(seen)
}

/// How a child ended, as `wait4(2)` reports it.
#[derive(Debug, Clone, Copy)]
pub struct Exit {
    /// The exit code; `-1` when killed by a signal.
    pub code: i32,
    /// From `started` to the reap.
    pub wall: Duration,
    /// `ru_utime + ru_stime`: the child's CPU time plus that of its own children it waited for.
    pub cpu: Duration,
    /// `ru_maxrss` in KiB: the largest peak RSS of the child and of the descendants it waited for
    /// (Linux takes the maximum, not the sum).
    pub maxrss_kib: u64,
}

/// Reaps `child` with `wait4(2)`. The `Child` must not have been waited for already.
///
/// # Errors
/// The `wait4` error.
pub fn wait(child: Child, started: Instant) -> std::io::Result<Exit> {
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data, so all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child, and both pointers are valid for writing.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let wall = started.elapsed();
    drop(child);
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    Ok(Exit {
        code,
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        maxrss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

/// `VmHWM` of process `pid` in KiB: its own peak RSS so far, without its children.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    status_field(&format!("/proc/{pid}/status"), "VmHWM:")
}

/// A `kB` field of a `/proc/…/status` file.
pub fn status_field(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|r| r.split_whitespace().next()?.parse().ok())
}

/// The helper's main: `ARGS` is `FILE -- PROGRAM ARGS…`. Runs PROGRAM with this process's
/// environment, folder and standard streams, reaps it with `wait4`, writes
/// `code wall_ns cpu_ns maxrss_kib` to FILE, and returns the child's exit code.
pub fn helper_main(args: &[std::ffi::OsString]) -> std::process::ExitCode {
    let (Some(file), Some(program)) = (args.first(), args.get(2)) else {
        eprintln!("usage: bench {MEASURE_FLAG} FILE -- PROGRAM [ARGS...]");
        return std::process::ExitCode::from(2);
    };
    let started = Instant::now();
    let result = Command::new(program).args(&args[3..]).spawn().and_then(|child| wait(child, started));
    match result {
        Ok(exit) => {
            let line = format!(
                "{} {} {} {}\n",
                exit.code,
                exit.wall.as_nanos(),
                exit.cpu.as_nanos(),
                exit.maxrss_kib
            );
            if let Err(e) = std::fs::write(PathBuf::from(file), line) {
                eprintln!("bench {MEASURE_FLAG}: cannot write {}: {e}", Path::new(file).display());
                return std::process::ExitCode::from(2);
            }
            std::process::ExitCode::from(u8::try_from(exit.code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("bench {MEASURE_FLAG}: {}: {e}", Path::new(program).display());
            std::process::ExitCode::from(2)
        }
    }
}

/// Reaps a helper started from [`measured`] and returns the figures it wrote for its child.
///
/// # Errors
/// The helper could not be reaped, or wrote no figures (it could not start the program).
pub fn wait_measured(helper: Child, started: Instant, report: &Path) -> Result<Exit, String> {
    let outer = wait(helper, started).map_err(|e| format!("wait4: {e}"))?;
    let text = std::fs::read_to_string(report)
        .map_err(|e| format!("the measuring helper wrote no figures (exit {}): {e}", outer.code))?;
    let f: Vec<u128> = text.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [code, wall, cpu, rss] = f[..] else { return Err(format!("bad helper figures {text:?}")) };
    let nanos = |n: u128| Duration::from_nanos(u64::try_from(n).unwrap_or(u64::MAX));
    Ok(Exit {
        code: i32::try_from(code).unwrap_or(-1),
        wall: nanos(wall),
        cpu: nanos(cpu),
        maxrss_kib: u64::try_from(rss).unwrap_or(u64::MAX),
    })
}

/// The first child of process `pid` (`/proc/PID/task/PID/children`): `s03` under the helper.
pub fn first_child(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// CPU time used so far by the live threads of process `pid`: the sum of the first field of
/// `/proc/PID/task/*/schedstat` (nanoseconds on CPU). Zero when unreadable.
pub fn thread_cpu(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let mut ns = 0u64;
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("schedstat")) {
            ns += text.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

/// CPU time of the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`: user and kernel); `None` if
/// the clock cannot be read.
pub fn own_thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return None;
    }
    Some(Duration::new(u64::try_from(ts.tv_sec).ok()?, u32::try_from(ts.tv_nsec).ok()?))
}
