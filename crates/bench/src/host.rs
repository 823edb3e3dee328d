//! How fast was the host around each timed session? A fixed workload run on each CPU before and
//! after the session, reported beside the figures so that a figure a busy host inflated reads as
//! such. It only reports: no session is skipped, delayed or run again because of it.
//!
//! Why: this is a shared VM with 2 vCPUs. For seconds to minutes one vCPU or both run every process
//! up to twice as slowly (no steal time shows in `/proc/stat`). During such a spell `s03`'s CPU per
//! round rises, and so does the mock server's time to build a reply, a fixed amount of work in the
//! bench's own process (BENCHMARKS.md, "Host noise").
//!
//! How: [`Host::probe`] runs [`TRIPS`] serde_json round trips of a small reply on a short-lived
//! thread pinned to each CPU in turn (the bench's own threads keep their CPUs and masks), and
//! returns the slowest CPU's thread CPU time. [`Host::is_busy`] compares a probe with the least
//! time any probe took in the run: over [`SLOWER`] × that is busy. Judge the probes at the end of a
//! run, when that least time is lowest, so a busy spell at the start does not set a slow reference.

use std::time::Duration;

/// A probe slower than this many times the fastest probe of the run means the host was busy.
pub const SLOWER: f64 = 1.3;

/// Probes of each CPU made at start, so that the fastest time is known before the first session.
const LEARN: usize = 8;

/// Pause between those probes, so that a short busy spell does not cover them all.
const LEARN_PAUSE: Duration = Duration::from_millis(25);

/// serde_json round trips in one probe of one CPU (about 0.5 ms on this machine).
const TRIPS: usize = 200;

/// The probe's workload, as the report names it.
pub fn workload() -> String {
    format!("{TRIPS} serde_json round trips of a small reply")
}

/// The CPUs this process may use, and the fastest probe seen on any of them.
pub struct Host {
    cpus: Vec<usize>,
    best: Duration,
}

impl Host {
    /// Finds the CPUs this process may use and probes each [`LEARN`] times, [`LEARN_PAUSE`] apart.
    ///
    /// # Errors
    /// The process's CPU set cannot be read, or no CPU of it can be probed (a thread cannot be
    /// pinned there).
    pub fn learn() -> Result<Host, String> {
        let cpus = allowed_cpus()?;
        let mut host = Host { cpus, best: Duration::MAX };
        for _ in 0..LEARN {
            host.probe();
            std::thread::sleep(LEARN_PAUSE);
        }
        if host.best == Duration::MAX {
            return Err("host check: no CPU could be probed (pinning a thread failed)".to_owned());
        }
        Ok(host)
    }

    /// The fastest probe seen so far.
    pub fn best(&self) -> Duration {
        self.best
    }

    /// Probes every CPU once and returns the slowest CPU's time (zero when none could be probed);
    /// lowers the fastest time seen when one was faster.
    pub fn probe(&mut self) -> Duration {
        let took: Vec<Duration> = self.cpus.iter().filter_map(|&cpu| probe_on(cpu)).collect();
        self.best = took.iter().copied().fold(self.best, Duration::min);
        took.into_iter().max().unwrap_or(Duration::ZERO)
    }

    /// Whether a probe that took `took` means the host was busy: over [`SLOWER`] × the fastest
    /// probe seen so far.
    pub fn is_busy(&self, took: Duration) -> bool {
        took.as_secs_f64() > SLOWER * self.best.as_secs_f64()
    }
}

/// The CPUs this process may use (`sched_getaffinity`).
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Result<Vec<usize>, String> {
    // SAFETY: a zeroed cpu_set_t is an empty set.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `allowed` is a valid, writable cpu_set_t of the size passed.
    let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) };
    if got != 0 {
        return Err(format!("host check: sched_getaffinity: {}", std::io::Error::last_os_error()));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `c` is below CPU_SETSIZE and `allowed` is a valid set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .collect())
}

/// One unpinned probe: macOS has no call that pins a thread to a CPU.
#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Result<Vec<usize>, String> {
    Ok(vec![0])
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`); whether it worked.
#[cfg(target_os = "linux")]
fn pin_this_thread(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t is an empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` came from a set read by sched_getaffinity, so it is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of the size passed; 0 is this thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) == 0 }
}

/// Nothing to pin with on macOS: the probe runs wherever the scheduler puts it.
#[cfg(not(target_os = "linux"))]
fn pin_this_thread(_cpu: usize) -> bool {
    true
}

/// The thread CPU time of [`TRIPS`] serde_json round trips on a new thread pinned to `cpu`; `None`
/// when the thread cannot be pinned there or cannot start.
fn probe_on(cpu: usize) -> Option<Duration> {
    let thread = std::thread::Builder::new().name(format!("probe-{cpu}")).spawn(move || {
        if !pin_this_thread(cpu) {
            return None;
        }
        let reply = serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "x",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
        });
        let start = crate::child::own_thread_cpu()?;
        for _ in 0..TRIPS {
            let text = serde_json::to_string(std::hint::black_box(&reply)).unwrap_or_default();
            std::hint::black_box(serde_json::from_str::<serde_json::Value>(&text).ok());
        }
        Some(crate::child::own_thread_cpu()?.saturating_sub(start))
    });
    thread.ok()?.join().ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_over_the_bound_times_the_fastest_is_busy() {
        let host = Host { cpus: vec![0], best: Duration::from_micros(1000) };
        assert!(!host.is_busy(Duration::from_micros(1000)));
        assert!(!host.is_busy(Duration::from_micros(1300)));
        assert!(host.is_busy(Duration::from_micros(1301)));
    }

    #[test]
    fn probing_this_machine_gives_a_time_and_keeps_the_fastest() {
        let mut host = Host::learn().expect("this test machine lets a thread pin itself");
        let best = host.best();
        assert!(best > Duration::ZERO && best < Duration::from_secs(1), "fastest probe {best:?}");
        let took = host.probe();
        assert!(took >= host.best(), "a probe {took:?} is never faster than the fastest {:?}", host.best());
        assert!(host.best() <= best);
    }
}
