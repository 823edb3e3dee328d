//! The workflow runtime at scale (course s16): one workflow of 1,000 `agent()` calls in a
//! `parallel`, at most 8 in flight, each one request to the loopback server answering at once.
//! Ours is `crates/workflow/examples/fanout.rs` (built with the `dist` profile); the course's is
//! its `s16_workflow_runtime/code.py`, unchanged, loaded by `python/s16_fanout.py` with its
//! `AnthropicAgentRunner` on the `anthropic` SDK, against the same server in the same run. Each
//! runs as a child of the measuring helper: wall time, CPU and peak RSS from `wait4(2)`.
//!
//! The bounds (the issue's): CPU per call at most a tenth of the course's, peak RSS at most a
//! fifth.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use mock_api::{MockServer, reply};

use crate::child::{self, Exit};
use crate::report::Report;

/// Where to find the course's side: its Python, and the folder holding `s16_workflow_runtime`.
pub struct Course {
    /// A Python with the `anthropic` package.
    pub python: PathBuf,
    /// The course's checkout (`…/s16_workflow_runtime/code.py` inside).
    pub dir: PathBuf,
}

/// Runs `program args…` in a fresh folder against a fresh server; returns its figures and how
/// many requests the server answered.
fn run(program: &Path, args: &[&std::ffi::OsStr]) -> Result<(Exit, usize), String> {
    let server = MockServer::start_fn_no_bodies(|_| reply::text("ok"));
    let workdir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let figures = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut cmd = child::measured(program, workdir.path(), &server.base_url(), figures.path())
        .map_err(|e| e.to_string())?;
    cmd.args(args);
    let started = Instant::now();
    let helper = cmd.spawn().map_err(|e| format!("cannot start the measuring helper: {e}"))?;
    let exit = child::wait_measured(helper, started, figures.path())?;
    if exit.code != 0 {
        return Err(format!("{} exited with {}", program.display(), exit.code));
    }
    Ok((exit, server.request_count()))
}

/// The figures of both sides, and the bounds.
pub fn workflow(report: &mut Report, fanout: &Path, course: &Course, calls: usize) -> Result<(), String> {
    let n = calls.to_string();
    let (ours, answered) = run(fanout, &[n.as_ref()])?;
    if answered != calls {
        return Err(format!("fanout sent {answered} requests for {calls} agent() calls"));
    }
    let code = course.dir.join("s16_workflow_runtime/code.py");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/s16_fanout.py");
    if !code.is_file()
        || Command::new(&course.python)
            .args(["-c", "import anthropic"])
            .output()
            .map_or(true, |o| !o.status.success())
    {
        report.note(&format!(
            "the course's side needs {} and a Python with `anthropic` (--course-python); ours alone:",
            code.display()
        ));
        figures(report, "ours", &ours, calls);
        return Ok(());
    }
    let (theirs, answered) = run(&course.python, &[script.as_os_str(), code.as_os_str(), n.as_ref()])?;
    if answered != calls {
        return Err(format!("the course's s16 sent {answered} requests for {calls} agent() calls"));
    }
    figures(report, "ours", &ours, calls);
    figures(report, "course", &theirs, calls);
    let per_call = |e: &Exit| e.cpu.as_secs_f64() * 1e6 / calls as f64;
    report.check_at_most(
        "workflow: CPU per agent() call, ours",
        per_call(&ours),
        per_call(&theirs) / 10.0,
        "µs",
    );
    report.check_at_most(
        "workflow: peak RSS, ours",
        ours.maxrss_kib as f64 / 1024.0,
        theirs.maxrss_kib as f64 / 1024.0 / 5.0,
        "MiB",
    );
    report.info("workflow: CPU per call, course / ours", per_call(&theirs) / per_call(&ours).max(1e-9), "x");
    Ok(())
}

fn figures(report: &mut Report, who: &str, exit: &Exit, calls: usize) {
    report.info(
        &format!("workflow ({calls} agent() calls, 8 at once): wall, {who}"),
        exit.wall.as_secs_f64() * 1e3,
        "ms",
    );
    report.info(
        &format!("workflow: CPU per agent() call, {who}"),
        exit.cpu.as_secs_f64() * 1e6 / calls as f64,
        "µs",
    );
    report.info(&format!("workflow: peak RSS, {who}"), exit.maxrss_kib as f64 / 1024.0, "MiB");
}
