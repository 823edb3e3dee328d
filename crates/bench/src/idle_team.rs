//! Ten idle teammates: what an `s13` session costs while its team waits for work.
//!
//! ```text
//!   s13 (REPL, stdin a pipe) ──"Spawn ten teammates."──▶ MockServer
//!      Lead: 10 × spawn_teammate (no task) ─▶ each teammate's first turn ends at once
//!      ─▶ ten teammates IDLE: mailbox first (2 s), then a scan of .tasks/ for a ready task
//!      ─▶ the Lead woken by their idle notifications answers, and the REPL waits
//!   measured over the span: utime + stime (/proc/PID/stat), peak RSS (VmHWM), requests sent
//! ```
//!
//! The same session runs twice in one bench run: once with the Lead answering in words (no
//! teammate: the baseline, which also pays for a turn, the HTTP client and the runtime), once
//! with the ten spawns. The per-teammate figures are the difference divided by ten. The bounds:
//! the whole team-holding process uses less than 1 % of one core, and each idle teammate adds
//! less than 1 MiB of peak RSS to the baseline: a teammate is a task with its history, its tools
//! and a mailbox, so a few hundred KiB is what it should cost, and a thread stack (8 MiB of
//! address space, tens of KiB touched) or a copy of the Lead's state would show.
//!
//! With `--course-s13 CODE_PY`, the course's Python `code.py` runs the same two sessions against
//! the same kind of server (its figures are reported as `info`).

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mock_api::{MockServer, reply};
use serde_json::{Value, json};

use crate::child;
use crate::idle::cpu_of;
use crate::report::Report;

/// How many teammates the Lead spawns.
pub const TEAMMATES: usize = 10;

/// The bound on the whole process while its team idles: percent of one core.
const TEAM_CPU_PERCENT: f64 = 1.0;

/// The bound on each idle teammate's share of peak RSS over the no-teammate baseline, MiB.
const RSS_PER_TEAMMATE_MIB: f64 = 1.0;

/// What both REPLs print when they wait for a line.
const PROMPT: &[u8] = b"s13 >> ";

/// How long the request count must stay still before the session counts as idle: longer than
/// one idle scan (2 s), so a teammate that would ask again has done so.
const SETTLE: Duration = Duration::from_secs(3);

/// The most the spawns and the first turns may take before the session counts as stuck.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// The user's line.
const ASK: &str = "Spawn ten teammates and let them wait for work.\n";

/// Who sent a request: the teammate's name for a SYSTEM `You are 'NAME', …` (ours and the
/// course's), `None` for the Lead.
fn teammate_of(body: &Value) -> Option<String> {
    let system = match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.first().and_then(|b| b["text"].as_str()).unwrap_or("").to_owned(),
        _ => String::new(),
    };
    system.strip_prefix("You are '").and_then(|rest| rest.split('\'').next()).map(str::to_owned)
}

/// The model's side: the Lead's first request spawns `teammates` (or answers in words when
/// zero); every other request, the teammates' first turns and the Lead's wakes, ends at once.
fn server(teammates: usize) -> MockServer {
    MockServer::start_fn(move |request| {
        let first_of_lead = teammate_of(&request.body).is_none()
            && request.body["messages"].as_array().is_some_and(|m| m.len() == 1);
        if first_of_lead && teammates > 0 {
            let calls: Vec<(String, Value)> = (1..=teammates)
                .map(|i| {
                    let name = format!("mate{i:02}");
                    let input = json!({"name": name, "role": "helper", "prompt": "Wait for work."});
                    (format!("toolu_spawn_{i:02}"), input)
                })
                .collect();
            let calls: Vec<(&str, &str, Value)> =
                calls.iter().map(|(id, input)| (id.as_str(), "spawn_teammate", input.clone())).collect();
            reply::tool_uses(&calls)
        } else if first_of_lead {
            reply::text("No team needed.")
        } else {
            reply::text("Ready.")
        }
    })
}

/// One process measured idle.
#[derive(Debug, Clone, Copy)]
struct Idle {
    /// CPU (`utime + stime`) over the span.
    cpu: Duration,
    /// The span's wall time.
    wall: Duration,
    /// `VmHWM` at the end of the span, KiB.
    peak_kib: u64,
    /// Requests the server received during the span (an idle team sends none).
    requests: usize,
}

impl Idle {
    fn percent(&self) -> f64 {
        100.0 * self.cpu.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }

    fn peak_mib(&self) -> f64 {
        self.peak_kib as f64 / 1024.0
    }
}

/// Starts `cmd` (a REPL whose prompt is `s13 >> `), asks it for `teammates` teammates, waits
/// until they have all answered and the server has been quiet for [`SETTLE`], then measures it
/// idle for `span`. End of input ends it.
fn measure(mut cmd: Command, teammates: usize, span: Duration, who: &str) -> Result<Idle, String> {
    let server = server(teammates);
    cmd.env("ANTHROPIC_BASE_URL", server.base_url()).stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut proc = cmd.spawn().map_err(|e| format!("cannot start {who}: {e}"))?;
    let result = (|| {
        let mut out = proc.stdout.take().ok_or("no stdout pipe")?;
        child::read_to_prompt(&mut out, PROMPT, who)?;
        // Keep reading what it prints, so a full pipe never blocks it.
        let printed = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&printed);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&buf[..n]);
            }
        });
        let stdin = proc.stdin.as_mut().ok_or("no stdin pipe")?;
        stdin.write_all(ASK.as_bytes()).and_then(|()| stdin.flush()).map_err(|e| e.to_string())?;
        let started = Instant::now();
        let (mut count, mut still_since) = (0, Instant::now());
        loop {
            let requests = server.requests();
            let answered: HashSet<String> = requests.iter().filter_map(|r| teammate_of(&r.body)).collect();
            if requests.len() != count {
                (count, still_since) = (requests.len(), Instant::now());
            }
            if !requests.is_empty() && answered.len() >= teammates && still_since.elapsed() >= SETTLE {
                break;
            }
            if started.elapsed() > READY_LIMIT {
                let text =
                    String::from_utf8_lossy(&printed.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
                return Err(format!(
                    "{who}: {} of {teammates} teammates asked the model within {} s; printed {text:?}",
                    answered.len(),
                    READY_LIMIT.as_secs()
                ));
            }
            if let Ok(Some(status)) = proc.try_wait() {
                return Err(format!("{who} exited {status} before its team was idle"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let pid = proc.id();
        let (before, cpu0, wall0) = (server.requests().len(), cpu_of(pid)?, Instant::now());
        // Idle: the REPL waits for a line that does not come; the teammates scan every 2 s.
        std::thread::sleep(span);
        let (cpu1, wall) = (cpu_of(pid)?, wall0.elapsed());
        let peak_kib = child::vm_hwm_kib(pid).ok_or("no VmHWM in /proc/PID/status")?;
        Ok(Idle {
            cpu: cpu1.saturating_sub(cpu0),
            wall,
            peak_kib,
            requests: server.requests().len() - before,
        })
    })();
    // End of input quits both REPLs; the teammates end with them.
    drop(proc.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(20);
    while proc.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = proc.kill();
            let _ = proc.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    result
}

/// The course's Python: `python CODE_PY` in `workdir`, with the environment it needs (the base
/// URL is set by [`measure`]).
fn python_command(python: &Path, code: &Path, workdir: &Path) -> Command {
    let mut cmd = child::s03(python, workdir, "");
    cmd.arg(code).env("ANTHROPIC_API_KEY", "bench").env("PYTHONUNBUFFERED", "1").env("TERM", "dumb");
    cmd
}

/// Reports one side's figures: the baseline, the team, the difference per teammate.
fn report_side(report: &mut Report, name: &str, base: Idle, team: Idle, checked: bool) {
    let per_cpu_ms = (team.cpu.as_secs_f64() - base.cpu.as_secs_f64()) * 1000.0 / TEAMMATES as f64;
    let per_rss = (team.peak_mib() - base.peak_mib()) / TEAMMATES as f64;
    let secs = team.wall.as_secs();
    report.info(&format!("{name}, no teammate: CPU over {secs} s"), base.cpu.as_secs_f64() * 1000.0, "ms");
    report.info(&format!("{name}, no teammate: peak RSS"), base.peak_mib(), "MiB");
    report.info(
        &format!("{name}, ten idle teammates: CPU over {secs} s"),
        team.cpu.as_secs_f64() * 1000.0,
        "ms",
    );
    report.info(&format!("{name}, ten idle teammates: peak RSS"), team.peak_mib(), "MiB");
    report.info(&format!("{name}: CPU per idle teammate over {secs} s"), per_cpu_ms, "ms");
    if checked {
        report.check(
            &format!("{name} with ten idle teammates (share of one core)"),
            team.percent(),
            TEAM_CPU_PERCENT,
            "%",
        );
        report.check(
            &format!("{name}: peak RSS per idle teammate over none"),
            per_rss,
            RSS_PER_TEAMMATE_MIB,
            "MiB",
        );
    } else {
        report.info(&format!("{name} with ten idle teammates (share of one core)"), team.percent(), "%");
        report.info(&format!("{name}: peak RSS per idle teammate over none"), per_rss, "MiB");
    }
}

/// A command that runs in the folder it is given.
type CommandIn<'a> = dyn Fn(&Path) -> Command + 'a;

/// The course's side, when asked for: its Python and its `code.py`.
pub struct Course {
    /// The Python that has the course's packages (`anthropic`, `python-dotenv`).
    pub python: PathBuf,
    /// The course's `s13_agent_teams/code.py`.
    pub code: PathBuf,
}

/// Ten idle teammates in `s13` (and in the course's Python when `course` is given), against a
/// baseline without teammates, each measured over `span`.
///
/// # Errors
/// A session could not start, its teammates did not all ask the model in time, or an idle team
/// sent requests.
pub fn idle_team(
    report: &mut Report,
    s13: &Path,
    course: Option<&Course>,
    span: Duration,
) -> Result<(), String> {
    report.note(&format!(
        "the Lead spawns {TEAMMATES} teammates without tasks; each first turn ends at once; then {} s idle \
         (the baseline: the same session, the Lead answering without a team)",
        span.as_secs()
    ));
    let mut sides: Vec<(&str, Box<CommandIn>)> =
        vec![("s13", Box::new(|dir: &Path| child::s03(s13, dir, "")))];
    if let Some(c) = course {
        sides.push(("course s13 (Python)", Box::new(|dir: &Path| python_command(&c.python, &c.code, dir))));
    }
    for (name, command) in sides {
        let mut idle = [None, None];
        for (slot, teammates) in idle.iter_mut().zip([0, TEAMMATES]) {
            let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
            let measured = measure(command(dir.path()), teammates, span, name)?;
            if measured.requests > 0 {
                return Err(format!("{name} sent {} request(s) while idle", measured.requests));
            }
            *slot = Some(measured);
        }
        if let [Some(base), Some(team)] = idle {
            report_side(report, name, base, team, name == "s13");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_teammate_is_told_from_the_lead_by_its_system_in_either_shape() {
        let ours = json!({"system": [{"type": "text", "text": "You are 'mate03', a helper. …"}]});
        let course = json!({"system": "You are 'mate10', helper, at /w."});
        let lead = json!({"system": "You are a coding agent. Act, don't explain."});
        assert_eq!(teammate_of(&ours).as_deref(), Some("mate03"));
        assert_eq!(teammate_of(&course).as_deref(), Some("mate10"));
        assert_eq!(teammate_of(&lead), None);
        assert_eq!(teammate_of(&json!({})), None);
    }
}
