//! Figures, their bounds, and the machine they were measured on.
//!
//! One line per figure: `label  value unit  target < bound unit  PASS|FAIL` (or `target ≤ bound`); a figure reported
//! for context only shows `info` instead of a target.

use std::time::Duration;

/// Width of the label column.
const LABEL: usize = 62;

/// What the benchmarks printed so far.
#[derive(Debug, Default)]
pub struct Report {
    passed: usize,
    failed: Vec<String>,
    info: usize,
}

impl Report {
    /// Prints a figure checked against `value < bound`, and records the outcome.
    pub fn check(&mut self, label: &str, value: f64, bound: f64, unit: &str) {
        self.record(label, value, "<", bound, unit, value < bound);
    }

    /// Prints a figure checked against `value ≤ bound` (a target stated as "at most"), and
    /// records the outcome.
    pub fn check_at_most(&mut self, label: &str, value: f64, bound: f64, unit: &str) {
        self.record(label, value, "≤", bound, unit, value <= bound);
    }

    fn record(&mut self, label: &str, value: f64, op: &str, bound: f64, unit: &str, pass: bool) {
        println!(
            "{label:<LABEL$} {:>10} {unit:<5} target {op} {} {unit:<5} {}",
            num(value),
            num(bound),
            if pass { "PASS" } else { "FAIL" }
        );
        if pass {
            self.passed += 1;
        } else {
            self.failed.push(label.to_owned());
        }
    }

    /// Prints a figure reported without a bound.
    pub fn info(&mut self, label: &str, value: f64, unit: &str) {
        println!("{label:<LABEL$} {:>10} {unit:<5} info", num(value));
        self.info += 1;
    }

    /// Prints a line of context (no figure).
    pub fn note(&mut self, text: &str) {
        println!("  {text}");
    }

    /// Records a benchmark that could not run at all as a failure.
    pub fn broken(&mut self, title: &str, error: &str) {
        println!("{:<LABEL$} {:>10} {:<5} FAIL ({error})", title, "—", "");
        self.failed.push(format!("{title} (did not run)"));
    }

    /// Whether every checked figure passed and nothing broke.
    pub fn all_pass(&self) -> bool {
        self.failed.is_empty()
    }

    /// `N PASS, M FAIL (…), K info`.
    pub fn summary(&self) -> String {
        let mut s = format!("{} PASS, {} FAIL", self.passed, self.failed.len());
        if !self.failed.is_empty() {
            s.push_str(&format!(" ({})", self.failed.join("; ")));
        }
        s.push_str(&format!(", {} info", self.info));
        s
    }
}

/// A number with three significant digits, or fewer decimals when large.
fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median of `v` (the mean of the middle two for an even length); zero when empty.
pub fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    match v.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// The machine: CPUs, CPU model, RAM, kernel, rustc.
pub fn machine() -> Vec<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "unknown".to_owned());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let ram_kb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = std::process::Command::new("rustc")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "rustc: not found".to_owned());
    vec![
        format!("cpus: {cpus} × {model}"),
        format!("ram: {:.1} GiB", ram_kb as f64 / 1024.0 / 1024.0),
        format!("kernel: Linux {}", kernel.trim()),
        format!("rustc: {rustc}"),
        format!("load average at start: {}", load_average()),
    ]
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`): other work competing for the CPUs.
pub fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
