//! `bench`: the speed, memory and cost figures of BENCHMARKS.md, each printed with the bound it is checked against.
//!
//! ```text
//!   bench ──cargo build --profile dist -p s03──▶ target/dist/s03
//!     │
//!     ├─ harness / memory / start-up: spawn the real s03 ──POST /v1/messages──▶ MockServer (in process,
//!     │    answering instantly from a closure that timestamps every request and times its own work);
//!     │    CPU and peak RSS of the child from wait4(2), its own peak from /proc/PID/status VmHWM;
//!     │    around each harness session, a fixed workload on a thread pinned to each CPU says whether
//!     │    the host was busy (host.rs, info only)
//!     ├─ floors: a loopback write, and a bare exchange with a copy of this binary (--exchange-peer)
//!     ├─ request building: serde_json::to_vec(MessagesRequest) at 1, 4 and 16 MB of history
//!     ├─ tools: glob and read_file through DispatchMap::dispatch, in process
//!     ├─ prompt caching: a 50-round s03 session's billed input with and without breakpoints,
//!     │    against the mock's simulated cache (caching.rs)
//!     ├─ compaction: a 3,000-round s08 session (built the same way) and the same rounds on s03
//!     │    (compaction.rs)
//!     ├─ prompt caching of s15 (built the same way): the same session, SYSTEM rebuilt per turn
//!     ├─ idle cron: s12 (built the same way) waiting at its prompt with two cron jobs for a
//!     │    minute, its CPU from /proc (idle.rs)
//!     ├─ idle team: s13 (built the same way) holding ten idle teammates for a minute, against
//!     │    the same session without a team; the course's Python too with --course-s13
//!     │    (idle_team.rs)
//!     └─ workflow: 1,000 agent() calls at 8 at once, our `fanout` example (built the same way)
//!          beside the course's s16 with its Anthropic runner, against one server (workflow.rs)
//! ```
//!
//! Linux only: its memory and process figures come from `/proc`, and on macOS it says so and
//! exits with 2.
//!
//! Run it with `cargo run --release -p bench` (add `-- --quick` for a smoke run). It builds
//! `s03` itself (profile `dist`: release with LTO), prints one line per figure (`label  value
//! target < bound  PASS|FAIL`, or `info` for a figure reported without a bound), and exits 1 when
//! any figure fails. It is not part of `cargo test`; BENCHMARKS.md records the last run and what
//! dominates each figure.

mod bash_call;
mod caching;
mod child;
mod compaction;
mod floor;
mod host;
mod idle;
mod idle_team;
mod report;
mod request;
mod session;
mod startup;
mod tools;
mod workflow;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use clap::Parser;

use crate::report::Report;

/// Benchmarks of the harness: overhead per round, start-up, memory, request building, tools.
#[derive(Parser, Debug)]
#[command(name = "bench")]
struct Cli {
    /// A faster smoke run: fewer rounds and repeats, smaller trees, files and histories.
    #[arg(long)]
    quick: bool,

    /// Use this s03 binary instead of building `cargo build --profile dist -p s03` (a script
    /// that execs a profiler around the real one works too).
    #[arg(long, value_name = "PATH")]
    s03: Option<PathBuf>,

    /// `read_file` rounds of the harness session, instead of 1,000 (100 with `--quick`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    rounds: Option<u64>,

    /// Use this s08 binary instead of building `cargo build --profile dist -p s08` (for
    /// `--only compaction`).
    #[arg(long, value_name = "PATH")]
    s08: Option<PathBuf>,

    /// Rounds of the compaction benchmark's sessions (s08 and s03), instead of 3,000 (300 with
    /// `--quick`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(20..=100_000))]
    compaction_rounds: Option<u64>,

    /// Sessions of each harness measurement, instead of 5 (2 with `--quick`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    repeats: Option<u64>,

    /// Use this s12 binary instead of building `cargo build --profile dist -p s12` (for
    /// `--only idle-cron`).
    #[arg(long, value_name = "PATH")]
    s12: Option<PathBuf>,

    /// Use this `fanout` binary (crates/workflow/examples) instead of building it (for
    /// `--only workflow`).
    #[arg(long, value_name = "PATH")]
    fanout: Option<PathBuf>,

    /// The Python that runs the course's s16 and, with `--course-s13`, its s13: one with the
    /// course's packages (`anthropic`, `python-dotenv`), such as a venv's `bin/python`.
    #[arg(long, value_name = "PATH", default_value = "python3")]
    course_python: PathBuf,

    /// The course's checkout, holding `s16_workflow_runtime/code.py`.
    #[arg(long, value_name = "DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/course"))]
    course: PathBuf,

    /// Use this s13 binary instead of building `cargo build --profile dist -p s13` (for
    /// `--only idle-team`).
    #[arg(long, value_name = "PATH")]
    s13: Option<PathBuf>,

    /// Use this s15 binary instead of building `cargo build --profile dist -p s15` (for
    /// `--only caching`).
    #[arg(long, value_name = "PATH")]
    s15: Option<PathBuf>,

    /// Also run the idle-team sessions with the course's Python s13 (its
    /// `s13_agent_teams/code.py`), reported beside ours.
    #[arg(long, value_name = "CODE_PY")]
    course_s13: Option<PathBuf>,

    /// Run only these benchmarks (repeat the flag, or separate with commas).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Bench>,
}

/// The benchmarks, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Bench {
    /// Harness overhead per round, its growth curve, and the long session's peak RSS.
    Harness,
    /// Start-up time, CPU and peak RSS of one request.
    Startup,
    /// Peak RSS of the bash tool on a large output.
    Bash,
    /// Request building per byte of history.
    Request,
    /// glob and read_file in process.
    Tools,
    /// The billed input of a 50-round session with and without prompt caching, s03 and s15.
    Caching,
    /// Flat cost with compaction: a long s08 session against the same rounds on s03.
    Compaction,
    /// CPU of an idle s12 with two cron jobs over a minute (10 s with `--quick`).
    IdleCron,
    /// 1,000 agent() calls of one workflow (100 with `--quick`), ours beside the course's s16.
    Workflow,
    /// CPU and peak RSS of s13 holding ten idle teammates over a minute (10 s with `--quick`).
    IdleTeam,
}

/// One benchmark: prints its figures into the report, or says why it could not run.
type Step<'a> = dyn Fn(&mut Report) -> Result<(), String> + 'a;

/// How big and how often: the full run, or `--quick`.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    /// `read_file` rounds in the harness session (1,000: the length the per-round targets are set for).
    pub rounds: usize,
    /// Repeats of each session length used for the marginal CPU per round.
    pub session_repeats: usize,
    /// Runs of each start-up measurement; the median is reported.
    pub startup_runs: usize,
    /// Bytes `yes | head -c N` prints through the bash tool.
    pub bash_bytes: u64,
    /// History sizes for request serialisation, in MiB.
    pub history_mib: &'static [usize],
    /// Files in the generated tree for `glob`.
    pub glob_files: usize,
    /// Size of the file for `read_file` with `limit`, in MiB.
    pub big_file_mib: usize,
    /// Rounds of the compaction benchmark's s08 and s03 sessions.
    pub compaction_rounds: usize,
}

impl Scale {
    /// The issues' sizes.
    pub const FULL: Scale = Scale {
        rounds: 1000,
        session_repeats: 5,
        startup_runs: 21,
        bash_bytes: 1_000_000_000,
        history_mib: &[1, 4, 16],
        glob_files: 100_000,
        big_file_mib: 100,
        compaction_rounds: 3000,
    };

    /// A smoke run: every benchmark, smaller.
    pub const QUICK: Scale = Scale {
        rounds: 100,
        session_repeats: 2,
        startup_runs: 5,
        bash_bytes: 100_000_000,
        history_mib: &[1, 4],
        glob_files: 10_000,
        big_file_mib: 10,
        compaction_rounds: 300,
    };
}

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == child::MEASURE_FLAG) {
        return child::helper_main(&args[2..]);
    }
    if args.get(1).is_some_and(|a| a == floor::PEER_FLAG) {
        return floor::peer_main(&args[2..]);
    }
    let cli = Cli::parse();
    // Memory, CPU of children and the processes a command leaves are read from /proc: elsewhere
    // they would read as zero and pass every bound.
    if !cfg!(target_os = "linux") {
        eprintln!(
            "bench: the figures are read from /proc, so the bench runs on Linux only (on a Mac, in a \
             Linux VM or container); BENCHMARKS.md has the Linux figures"
        );
        return ExitCode::from(2);
    }
    let mut scale = if cli.quick { Scale::QUICK } else { Scale::FULL };
    if let Some(rounds) = cli.rounds {
        scale.rounds = usize::try_from(rounds).unwrap_or(usize::MAX);
    }
    if let Some(repeats) = cli.repeats {
        scale.session_repeats = usize::try_from(repeats).unwrap_or(usize::MAX);
    }
    if let Some(rounds) = cli.compaction_rounds {
        scale.compaction_rounds = usize::try_from(rounds).unwrap_or(usize::MAX);
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "bench: warning: this is a debug build; in-process figures need `cargo run --release -p bench`"
        );
    }
    // s03 serves every benchmark of a chapter process but idle-cron and idle-team.
    let wants_s03 = cli.only.is_empty()
        || cli.only.iter().any(|b| {
            matches!(b, Bench::Harness | Bench::Startup | Bench::Bash | Bench::Caching | Bench::Compaction)
        });
    let wants_s08 = cli.only.is_empty() || cli.only.contains(&Bench::Compaction);
    let wants_s12 = cli.only.is_empty() || cli.only.contains(&Bench::IdleCron);
    let wants_fanout = cli.only.is_empty() || cli.only.contains(&Bench::Workflow);
    let wants_s13 = cli.only.is_empty() || cli.only.contains(&Bench::IdleTeam);
    let wants_s15 = cli.only.is_empty() || cli.only.contains(&Bench::Caching);
    let mut to_build: Vec<&str> = Vec::new();
    if wants_s03 && cli.s03.is_none() {
        to_build.push("s03");
    }
    if wants_s08 && cli.s08.is_none() {
        to_build.push("s08");
    }
    if wants_s12 && cli.s12.is_none() {
        to_build.push("s12");
    }
    if wants_s13 && cli.s13.is_none() {
        to_build.push("s13");
    }
    if wants_s15 && cli.s15.is_none() {
        to_build.push("s15");
    }
    if let Err(e) = build(&to_build) {
        eprintln!("bench: {e}");
        return ExitCode::from(2);
    }
    if wants_fanout
        && cli.fanout.is_none()
        && let Err(e) = build_fanout()
    {
        eprintln!("bench: {e}");
        return ExitCode::from(2);
    }
    // A relative path would not be found from the child's own folder.
    let fanout = match &cli.fanout {
        Some(path) => std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()),
        None => built("examples/fanout").unwrap_or_default(),
    };
    let course = workflow::Course { python: cli.course_python.clone(), dir: cli.course.clone() };
    let workflow_calls = if cli.quick { 100 } else { 1000 };
    let binary = |given: &Option<PathBuf>, name: &str| -> Result<PathBuf, String> {
        match given {
            Some(path) => {
                std::fs::canonicalize(path).map_err(|e| format!("--{name} {}: {e}", path.display()))
            }
            None => built(name),
        }
    };
    let optional = |wanted: bool, given: &Option<PathBuf>, name: &str| -> Result<PathBuf, String> {
        if wanted { binary(given, name) } else { Ok(PathBuf::new()) }
    };
    let binaries = (|| {
        Ok::<_, String>((
            optional(wants_s03, &cli.s03, "s03")?,
            optional(wants_s08, &cli.s08, "s08")?,
            optional(wants_s12, &cli.s12, "s12")?,
            optional(wants_s13, &cli.s13, "s13")?,
            optional(wants_s15, &cli.s15, "s15")?,
        ))
    })();
    let (s03, s08, s12, s13, s15) = match binaries {
        Ok(found) => found,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::from(2);
        }
    };
    // The course's code.py runs in a temporary folder: its path must not be relative.
    let course_s13 = match cli.course_s13.as_ref().map(|code| (code, std::fs::canonicalize(code))) {
        Some((_, Ok(code))) if code.is_file() => {
            Some(idle_team::Course { python: cli.course_python.clone(), code })
        }
        Some((given, found)) => {
            let why = found.err().map_or_else(|| "not a file".to_owned(), |e| e.to_string());
            eprintln!("bench: --course-s13 {}: {why}", given.display());
            return ExitCode::from(2);
        }
        None => None,
    };
    let idle_span = std::time::Duration::from_secs(if cli.quick { 10 } else { 60 });

    println!("bench{}", if cli.quick { " --quick" } else { "" });
    if wants_s03 {
        println!("bench: s03 at {}", s03.display());
    }
    if wants_s08 {
        println!("bench: s08 at {}", s08.display());
    }
    for (wanted, name, path) in [(wants_s12, "s12", &s12), (wants_s13, "s13", &s13), (wants_s15, "s15", &s15)]
    {
        if wanted {
            println!("bench: {name} at {}", path.display());
        }
    }
    for line in report::machine() {
        println!("  {line}");
    }
    let started = std::time::Instant::now();
    let mut report = Report::default();
    let steps: [(Bench, &str, &Step); 10] = [
        (Bench::Harness, "harness overhead per round", &|r| session::harness(r, &s03, scale)),
        (Bench::Startup, "start-up", &|r| startup::startup(r, &s03, scale)),
        (Bench::Bash, "memory of the bash tool", &|r| session::bash_memory(r, &s03, scale)),
        (Bench::Request, "request building", &|r| request::serialisation(r, scale)),
        (Bench::Tools, "tools", &|r| tools::tools(r, scale)),
        (Bench::Caching, "prompt caching", &|r| caching::caching(r, &s03, &s15)),
        (Bench::Compaction, "flat cost with compaction (s08 against s03)", &|r| {
            compaction::flat_cost(r, &s03, &s08, scale)
        }),
        (Bench::IdleCron, "an idle s12 with two cron jobs", &|r| idle::idle_cron(r, &s12, idle_span)),
        (Bench::Workflow, "a workflow of 1,000 agent() calls (s16), ours and the course's", &|r| {
            workflow::workflow(r, &fanout, &course, workflow_calls)
        }),
        (Bench::IdleTeam, "ten idle teammates in s13", &|r| {
            idle_team::idle_team(r, &s13, course_s13.as_ref(), idle_span)
        }),
    ];
    for (bench, title, step) in steps {
        if !cli.only.is_empty() && !cli.only.contains(&bench) {
            continue;
        }
        println!("\n== {title}");
        if let Err(e) = step(&mut report) {
            report.broken(title, &e);
        }
    }
    println!("\n{} in {:.1} s", report.summary(), started.elapsed().as_secs_f64());
    println!("load average at the end: {}", report::load_average());
    if report.all_pass() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The cargo profile the chapters are built with: `dist`, the workspace's profile for a binary to
/// install or ship (release with whole-program LTO, see Cargo.toml).
const S03_PROFILE: &str = "dist";

/// Builds the chapter binaries `names` (`s03`, `s08`, `s12`, `s13`, `s15`) with the [`S03_PROFILE`] profile, in one
/// cargo command run by the cargo that runs us; nothing when `names` is empty.
fn build(names: &[&str]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!(
        "bench: building {} with `cargo build --profile {S03_PROFILE}` (whole-program LTO: a few minutes the first time)",
        names.join(" and ")
    );
    let mut args = vec!["build", "--profile", S03_PROFILE, "--quiet"];
    for name in names {
        args.extend(["-p", name, "--bin", name]);
    }
    let status = Command::new(&cargo)
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build --profile {S03_PROFILE} -p {} failed", names.join(" -p ")));
    }
    Ok(())
}

/// Builds the workflow bench's `fanout` example with the [`S03_PROFILE`] profile.
fn build_fanout() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("bench: building the workflow example fanout with `cargo build --profile {S03_PROFILE}`");
    let status = Command::new(&cargo)
        .args(["build", "--profile", S03_PROFILE, "--quiet", "-p", "workflow", "--example", "fanout"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build --profile {S03_PROFILE} -p workflow --example fanout failed"));
    }
    Ok(())
}

/// The path of the built chapter `name`, beside this binary's profile folder
/// (`target/dist/NAME`).
fn built(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    // target/<profile>/bench → target/dist/NAME
    let target = exe.parent().and_then(|p| p.parent()).ok_or("no target folder above this executable")?;
    let path = target.join(S03_PROFILE).join(name);
    if path.is_file() { Ok(path) } else { Err(format!("{} was not built", path.display())) }
}
