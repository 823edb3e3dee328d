//! Is the host running at its usual speed right now? A check made before and after each timed
//! session, so the sessions that a busy host slowed down are seen, counted and run again.
//!
//! Why: this is a shared VM with 2 vCPUs. For seconds at a time one vCPU or both run every process
//! up to twice as slowly (no steal time shows in `/proc/stat`; the likely cause is whatever shares
//! the physical core). During such a spell `s03`'s CPU per round doubles, and so does the mock
//! server's time to build a reply, which is a fixed amount of work in this process: the slowdown
//! is the machine's, not the harness's (BENCHMARKS.md, "Host noise").
//!
//! How: [`Host::busy`] runs a fixed workload (serde_json round trips of a small reply, about
//! 0.5 ms) pinned to each CPU in turn and compares the thread CPU time it took with the least time
//! it has taken so far in this run on any CPU (the vCPUs are alike, so one that was busy while the
//! best was learned does not set a slow best for itself). A CPU slower than [`SLOWER`] × that best
//! is busy. The check never looks at a session's own figures, only at this workload, so choosing
//! by it does not choose the sessions that came out fast.

use std::time::Duration;

/// A probe slower than this many times the best seen means the host is busy.
pub const SLOWER: f64 = 1.3;

/// Probes of each CPU made at start to learn its usual time.
const LEARN: usize = 8;

/// Pause between the probes that learn the usual time, so a short busy spell does not cover them
/// all.
const LEARN_PAUSE: Duration = Duration::from_millis(25);

/// Round trips in one probe.
const TRIPS: usize = 200;

/// The CPUs this process may use, and the best probe time seen on any of them.
pub struct Host {
    cpus: Vec<usize>,
    best: Duration,
    allowed: libc::cpu_set_t,
}

impl Host {
    /// Learns the usual probe time: [`LEARN`] probes of each allowed CPU, [`LEARN_PAUSE`] apart,
    /// the least kept.
    ///
    /// # Errors
    /// The process's CPU set cannot be read.
    pub fn learn() -> Result<Host, String> {
        // SAFETY: a zeroed cpu_set_t is an empty set; the call fills it for this thread.
        let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `allowed` is a valid, writable cpu_set_t of the size passed.
        let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut allowed) };
        if got != 0 {
            return Err(format!("sched_getaffinity: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: CPU_ISSET reads the set within its bounds (cpu < CPU_SETSIZE).
        let cpus: Vec<usize> =
            (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) }).collect();
        let mut host = Host { best: Duration::MAX, cpus, allowed };
        for _ in 0..LEARN {
            host.probe_all();
            std::thread::sleep(LEARN_PAUSE);
        }
        Ok(host)
    }

    /// The best probe time, as a line for the report.
    pub fn describe(&self) -> String {
        format!(
            "host check: {TRIPS} serde_json round trips take at best {:.3} ms of CPU (on CPUs {:?})",
            self.best.as_secs_f64() * 1e3,
            self.cpus
        )
    }

    /// Probes every CPU once: whether one of them ran the workload more than [`SLOWER`] × its
    /// best (the best is updated either way).
    pub fn busy(&mut self) -> bool {
        self.probe_all() > SLOWER
    }

    /// Probes every CPU; the largest ratio of a probe's time to the best (1 or more).
    fn probe_all(&mut self) -> f64 {
        let mut took = Vec::with_capacity(self.cpus.len());
        for &cpu in &self.cpus {
            took.extend(probe_on(cpu));
        }
        self.best = took.iter().copied().fold(self.best, Duration::min);
        let best = self.best.as_secs_f64().max(1e-9);
        let worst = took.iter().map(|t| t.as_secs_f64() / best).fold(1.0, f64::max);
        // Back to every allowed CPU.
        // SAFETY: `allowed` is the set read in `learn`, of the size passed.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.allowed) };
        worst
    }
}

/// The thread CPU time of [`TRIPS`] serde_json round trips run on `cpu`; `None` when the thread
/// cannot be moved there.
fn probe_on(cpu: usize) -> Option<Duration> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET adds one CPU below CPU_SETSIZE.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of the size passed.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one) } != 0 {
        return None;
    }
    let reply = serde_json::json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "x",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let start = thread_cpu();
    for _ in 0..TRIPS {
        let text = serde_json::to_string(std::hint::black_box(&reply)).unwrap_or_default();
        std::hint::black_box(serde_json::from_str::<serde_json::Value>(&text).ok());
    }
    Some(thread_cpu().saturating_sub(start))
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}
