//! What the sandbox and the supervisor add to one `bash` call, in process: the median wall and
//! CPU time of `bash "true"` through `DispatchMap::dispatch` with each `--sandbox` mode,
//! `--no-network` and `--allow-unix-sockets`, against a bare `sh -c true` started with std and
//! with tokio, and the parts measured alone: the environment filter, the confinement (Landlock
//! ruleset, seccomp program) built in the harness.
//!
//! The kinds of call take turns (one of each per round), so a change in the machine's load hits
//! them all alike. CPU is this process's (every thread) plus its reaped children's, from
//! `getrusage(2)` before and after each call: the harness's side (ruleset, fork) and the
//! children's (the supervisor's fork, `setsid`, `restrict_self`, the seccomp filter, `exec`,
//! `sh`). The runtime is current-thread, as in the chapters. All figures are `info`: no bound is
//! set for them.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_core::dispatch::DispatchMap;
use agent_core::messages::ToolUseBlock;
use agent_core::process::{command_env, spawn_shell};
use agent_core::sandbox::{Confinement, Sandbox, SandboxMode};
use agent_core::tools::{ToolOptions, bash};
use agent_core::workspace::Workspace;
use serde_json::json;

use crate::Scale;
use crate::child::status_field;
use crate::report::{Report, median};

/// Rounds (one call of each kind per round); the median is reported.
const CALLS: usize = 200;

/// Rounds with `--quick`.
const QUICK_CALLS: usize = 40;

/// One call of a kind, as a future on the bench's runtime.
type Call<'a> = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = Result<(), String>> + 'a>> + 'a>;

/// A kind of call and what its calls took.
struct Kind<'a> {
    label: String,
    call: Call<'a>,
    walls: Vec<Duration>,
    cpus: Vec<Duration>,
}

impl<'a> Kind<'a> {
    fn new<F, Fut>(label: impl Into<String>, mut call: F) -> Self
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<(), String>> + 'a,
    {
        Self {
            label: label.into(),
            call: Box::new(move || Box::pin(call())),
            walls: Vec::new(),
            cpus: Vec::new(),
        }
    }

    fn medians(&self) -> (Duration, Duration) {
        (median(&self.walls), median(&self.cpus))
    }
}

/// CPU time of this process (all threads) plus its reaped children, user and system.
fn cpu_now() -> Duration {
    let of = |who| {
        // SAFETY: `rusage` is plain old data, so all-zero is a valid value; getrusage only writes
        // into it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid `who` and a valid pointer to a `rusage`.
        if unsafe { libc::getrusage(who, &mut u) } != 0 {
            return Duration::ZERO;
        }
        let tv = |t: libc::timeval| {
            Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
                + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
        };
        tv(u.ru_utime) + tv(u.ru_stime)
    };
    of(libc::RUSAGE_SELF) + of(libc::RUSAGE_CHILDREN)
}

/// Median time of `calls` runs of a short step done in this process alone.
fn time_step(calls: usize, mut step: impl FnMut() -> Result<(), String>) -> Result<Duration, String> {
    step()?;
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        step()?;
        times.push(t.elapsed());
    }
    Ok(median(&times))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `sh -c true` with std's `Command` (posix_spawn).
async fn std_sh() -> Result<(), String> {
    let out = std::process::Command::new("sh")
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() { Ok(()) } else { Err(format!("sh -c true: {}", out.status)) }
}

/// `sh -c true` with tokio's `Command`; with `fork`, an empty `pre_exec`, which makes std fork
/// instead of posix_spawn, as `spawn_shell`'s does.
async fn tokio_sh(fork: bool) -> Result<(), String> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.args(["-c", "true"]).stdin(Stdio::null());
    if fork {
        // SAFETY: the closure does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
    }
    let out = cmd.output().await.map_err(|e| e.to_string())?;
    if out.status.success() { Ok(()) } else { Err(format!("sh -c true: {}", out.status)) }
}

/// The sandbox the figures were taken under, for the report's note.
#[cfg(target_os = "linux")]
fn sandbox_name() -> String {
    format!("Landlock ABI {}", agent_core::sandbox::kernel_abi())
}

/// The sandbox the figures were taken under, for the report's note.
#[cfg(target_os = "macos")]
fn sandbox_name() -> String {
    "Seatbelt (sandbox-exec)".to_owned()
}

/// The figures of one `bash` call; see the module docs.
///
/// # Errors
/// The runtime or the workspace cannot be made, a command cannot start, or `bash "true"` did not
/// answer `(no output)`.
pub fn bash_call(report: &mut Report, scale: Scale) -> Result<(), String> {
    let calls = if scale.glob_files < Scale::FULL.glob_files { QUICK_CALLS } else { CALLS };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = Workspace::new(dir.path()).map_err(|e| e.to_string())?;
    report.note(&format!(
        "median of {calls} rounds, one call of each kind per round; bash goes through \
         DispatchMap::dispatch; {}; this process's RSS {} MB (a fork copies its page \
         tables); {} processes in /proc",
        sandbox_name(),
        status_field("/proc/self/status", "VmRSS:").unwrap_or(0) / 1000,
        std::fs::read_dir("/proc")
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok()).count())
            .unwrap_or(0)
    ));

    let sandbox = |mode, no_network, allow_unix_sockets| Sandbox { mode, no_network, allow_unix_sockets };
    let modes = [
        ("off", sandbox(SandboxMode::Off, false, false)),
        ("workspace-write", sandbox(SandboxMode::WorkspaceWrite, false, false)),
        ("read-only", sandbox(SandboxMode::ReadOnly, false, false)),
        ("workspace-write --no-network", sandbox(SandboxMode::WorkspaceWrite, true, false)),
        ("workspace-write --allow-unix-sockets", sandbox(SandboxMode::WorkspaceWrite, false, true)),
    ];
    let maps: Vec<(&str, DispatchMap)> = modes
        .iter()
        .map(|(name, sandbox)| {
            (
                *name,
                DispatchMap::new()
                    .with(bash(&ws, &ToolOptions { sandbox: *sandbox, ..ToolOptions::default() })),
            )
        })
        .collect();
    let block = ToolUseBlock {
        id: "toolu_bench".to_owned(),
        name: "bash".to_owned(),
        input: json!({"command": "true"}),
        extra: Default::default(),
    };
    // As `bash` does: spawn, wait for the supervisor, read its report, drop the session.
    let reports = RefCell::new(Vec::new());
    let (reports, ws_ref, block) = (&reports, &ws, &block);

    let mut kinds = vec![
        Kind::new("sh -c true, std spawn (posix_spawn)", std_sh),
        Kind::new("sh -c true, tokio spawn (posix_spawn)", || tokio_sh(false)),
        Kind::new("sh -c true, tokio spawn, empty pre_exec (fork)", || tokio_sh(true)),
        Kind::new("spawn_shell \"true\", wait, report, drop (no sandbox)", move || async move {
            let (mut child, mut session) =
                spawn_shell("true", ws_ref.dir(), ws_ref.root(), Confinement::default())
                    .map_err(|e| e.to_string())?;
            child.wait().await.map_err(|e| e.to_string())?;
            let t = Instant::now();
            // The child is reaped already: this reads the report.
            let report = session.finish(&mut child).await.ok();
            drop(session);
            reports.borrow_mut().push(t.elapsed());
            match report {
                Some(r) if r.status.is_some_and(|s| s.success()) => Ok(()),
                other => Err(format!("spawn_shell \"true\" reported {other:?}")),
            }
        }),
    ];
    for (name, map) in &maps {
        kinds.push(Kind::new(format!("bash \"true\", --sandbox {name}"), move || async move {
            let out = map.dispatch(block).await;
            if out.is_error || out.content != "(no output)" {
                return Err(format!("bash \"true\" answered {:.200}", out.content));
            }
            Ok(())
        }));
    }
    for kind in &mut kinds {
        rt.block_on((kind.call)())?; // warm-up, not counted
    }
    for _ in 0..calls {
        for kind in &mut kinds {
            let (cpu, wall) = (cpu_now(), Instant::now());
            rt.block_on((kind.call)())?;
            kind.walls.push(wall.elapsed());
            kind.cpus.push(cpu_now().saturating_sub(cpu));
        }
    }

    for kind in &kinds {
        let (wall, cpu) = kind.medians();
        report.info(&format!("{}: wall", kind.label), us(wall), "µs");
        report.info("  CPU (this process and its children)", us(cpu), "µs");
        if kind.label.starts_with("spawn_shell") {
            report.info(
                "  of which reading the supervisor's report and dropping the Session",
                us(median(&reports.borrow())),
                "µs",
            );
        }
    }
    let medians_of = |label: &str| kinds.iter().find(|k| k.label == label).map(Kind::medians);
    let (Some((bare_wall, bare_cpu)), Some((wall, cpu))) = (
        medians_of("sh -c true, tokio spawn (posix_spawn)"),
        medians_of("bash \"true\", --sandbox workspace-write"),
    ) else {
        return Err("a kind of call is missing".to_owned());
    };
    report.info(
        "bash \"true\" (default sandbox) minus tokio sh -c true: wall",
        us(wall.saturating_sub(bare_wall)),
        "µs",
    );
    report.info("  CPU", us(cpu.saturating_sub(bare_cpu)), "µs");

    // The parts that run in the harness, alone.
    let env = time_step(calls, || {
        std::hint::black_box(command_env());
        Ok(())
    })?;
    report.info(
        &format!("the environment filter ({} variables)", std::env::vars_os().count()),
        us(env),
        "µs",
    );
    let default_sandbox = Sandbox::default();
    let confinement = time_step(calls, || {
        std::hint::black_box(default_sandbox.confinement(&ws)?);
        Ok(())
    })?;
    report.info(
        "the confinement (workspace-write: Landlock ruleset, seccomp program), built in the harness",
        us(confinement),
        "µs",
    );
    // The s04+ permission check of one command (tree-sitter-bash parse, walk, known-program
    // rules, the workspace's files looked up): a short command, a typical one, and a
    // here-document writing a 200-line file.
    let heredoc = format!("cat <<'EOF' > new.py\n{}EOF", "print('hello, world')  # a line\n".repeat(200));
    for (label, command) in [
        ("true", "true".to_owned()),
        ("git status && ls -la | head -20", "git status && ls -la | head -20".to_owned()),
        ("a 6.5 KB here-document", heredoc),
    ] {
        let check = time_step(calls, || {
            std::hint::black_box(agent_core::permission::judge(&command, &ws));
            Ok(())
        })?;
        report.info(&format!("the permission check of `{label}`"), us(check), "µs");
    }
    Ok(())
}
