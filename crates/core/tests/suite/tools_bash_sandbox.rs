//! `bash` under issue 13: each command in a session of its own that is ended as a whole, and the
//! sandbox (`--sandbox`, `--no-network`): Landlock and seccomp on Linux, Seatbelt on macOS.
//!
//! The tests of what both promise (writes kept inside, read-only, `--no-network`) are shared;
//! the others check one system's mechanism. The Linux tests need a kernel with Landlock (these
//! machines have ABI 7); where it is missing they say so loudly on stderr and check the warning
//! line instead. CI compiles the macOS tests and cannot run them; a Mac runs them with
//! `cargo test -p agent-core -- sandbox tracker`, and their output is what a report of a failure
//! on macOS should carry (see the README).

use std::time::Duration;
#[cfg(target_os = "macos")]
use std::time::Instant;

use agent_core::dispatch::ToolOutcome;
#[cfg(target_os = "linux")]
use agent_core::sandbox::kernel_abi;
use agent_core::sandbox::{Sandbox, SandboxMode};
#[cfg(target_os = "linux")]
use agent_core::test_util::Proc;
use agent_core::tools::ToolOptions;
use serde_json::json;

use super::tools_support::{Fixture, TestResult};

async fn run(fx: &Fixture, command: &str) -> ToolOutcome {
    fx.call("bash", json!({ "command": command })).await
}

fn with_sandbox(mode: SandboxMode, no_network: bool) -> std::io::Result<Fixture> {
    Fixture::with_options(&ToolOptions {
        sandbox: Sandbox { mode, no_network, ..Sandbox::default() },
        ..Default::default()
    })
}

/// What a refused write or connection prints: Landlock's `EACCES`, Seatbelt's `EPERM`.
#[cfg(target_os = "linux")]
const DENIED: &str = "Permission denied";
/// What a refused write or connection prints: Landlock's `EACCES`, Seatbelt's `EPERM`.
#[cfg(target_os = "macos")]
const DENIED: &str = "Operation not permitted";

/// True when the sandbox is there; otherwise says so loudly, for the test to check the warning.
#[cfg(target_os = "macos")]
fn sandbox_here() -> bool {
    assert_eq!(Sandbox::default().notice(), None, "sandbox-exec is missing on this Mac");
    Sandbox::default().active()
}

/// True when the sandbox is there; otherwise says so loudly, for the test to check the warning.
#[cfg(target_os = "linux")]
fn sandbox_here() -> bool {
    if kernel_abi() >= 1 {
        return true;
    }
    eprintln!(
        "\n!!! LANDLOCK IS MISSING ON THIS KERNEL: the sandbox tests only check the warning line !!!\n"
    );
    false
}

/// A folder outside every place `workspace-write` may write.
fn outside_dir() -> std::io::Result<tempfile::TempDir> {
    agent_core::test_util::outside_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
}

/// Issue 13, input 4: `bash -c "set -m; sleep 300 &"` puts the job in a process group of its own
/// and exits, and a
/// python child calls `os.setpgrp()`; both used to survive the call. Now both are stopped when
/// `sh` exits, and the result says so.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn processes_that_leave_the_process_group_are_stopped_and_reported() -> TestResult {
    let fx = Fixture::new()?;
    let out = run(
        &fx,
        "bash -c 'set -m; sleep 300 & echo $! $(cut -d\" \" -f22 /proc/$!/stat) > bg1'; \
         python3 -c 'import os, time; os.setpgrp(); \
         st = open(\"/proc/self/stat\").read().split()[21]; \
         open(\"bg2.tmp\", \"w\").write(str(os.getpid()) + \" \" + st); \
         os.rename(\"bg2.tmp\", \"bg2\"); time.sleep(300)' & \
         while [ ! -s bg2 ]; do sleep 0.05; done; echo started",
    )
    .await;
    assert_eq!(out, ToolOutcome::ok("started\n(stopped 2 background processes it left running)"));
    for file in ["bg1", "bg2"] {
        let p = Proc::read(&fx.path(file))?;
        assert!(p.dies_within(Duration::from_secs(10)), "{file}: process {p:?} survived the call");
    }
    Ok(())
}

/// The command leads a session of its own (so it has no controlling terminal, the ground of
/// input 7's fix), and a command that leaves nothing behind gets no note.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn each_command_leads_its_own_session() -> TestResult {
    let fx = Fixture::new()?;
    // Field 6 of /proc/PID/stat is the session id (`>/dev/…` without a space: the deny list
    // refuses `> /dev/`).
    let out = run(&fx, "echo $$; cut -d' ' -f6 /proc/$$/stat").await;
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 2, "{out:?}");
    assert_eq!(lines[0], lines[1], "sh's pid is its session id");
    let out = run(&fx, "python3 -c \"open('/dev/tty')\" 2>&1 | tail -1").await;
    assert!(out.content.contains("No such device or address"), "{out:?}");
    Ok(())
}

/// Issue 13, input 3: under the default `workspace-write`, a command cannot write outside the
/// workspace and the temp folders, whether by a redirection, after a `cd`, or from python; it
/// can write in the workspace, its `.git`, a temp folder and `/dev/null`.
#[tokio::test]
async fn workspace_write_keeps_writes_inside() -> TestResult {
    let fx = Fixture::new()?;
    if !sandbox_here() {
        assert!(Sandbox::default().notice().is_some_and(|l| l.contains("UNSANDBOXED")));
        return Ok(());
    }
    let outside = outside_dir()?;
    let o = outside.path().display();
    for (cmd, file) in [
        (format!("echo x > {o}/a"), "a"),
        (format!("cd {o} && echo x > b"), "b"),
        (format!("python3 -c \"open('{o}/c', 'w').write('x')\""), "c"),
        (format!("mkdir {o}/d"), "d"),
    ] {
        let out = run(&fx, &cmd).await;
        assert!(out.content.contains(DENIED), "{cmd}: {out:?}");
        assert!(out.content.contains("--sandbox off"), "the hint line is there: {out:?}");
        assert!(!outside.path().join(file).exists(), "{cmd} wrote outside");
    }
    let tmp = tempfile::tempdir()?;
    let t = tmp.path().display();
    let out = run(
        &fx,
        &format!(
            "mkdir -p .git && echo ref > .git/HEAD && echo in > inside.txt && echo t > {t}/t && \
             echo gone >/dev/null && echo err >/dev/stderr && cat inside.txt"
        ),
    )
    .await;
    assert_eq!(out, ToolOutcome::ok("in\nerr"));
    assert_eq!(std::fs::read_to_string(tmp.path().join("t"))?, "t\n");
    // Reading stays allowed everywhere.
    std::fs::write(outside.path().join("r"), "readable")?;
    assert_eq!(run(&fx, &format!("cat {o}/r")).await, ToolOutcome::ok("readable"));
    Ok(())
}

/// `--sandbox read-only`: not even the workspace is writable; `--sandbox off`: the outside is.
#[tokio::test]
async fn read_only_and_off_modes() -> TestResult {
    if !sandbox_here() {
        return Ok(());
    }
    let ro = with_sandbox(SandboxMode::ReadOnly, false)?;
    let out = run(&ro, "echo x > inside.txt").await;
    assert!(out.content.contains(DENIED) && out.content.contains("read-only"), "{out:?}");
    assert!(!ro.path("inside.txt").exists());
    assert_eq!(run(&ro, "echo x >/dev/null; echo ok").await, ToolOutcome::ok("ok"));

    let off = with_sandbox(SandboxMode::Off, false)?;
    let outside = outside_dir()?;
    let out = run(&off, &format!("echo x > {}/a && echo ok", outside.path().display())).await;
    assert_eq!(out, ToolOutcome::ok("ok"));
    Ok(())
}

/// `--no-network` denies TCP connections; without it they work.
#[tokio::test]
async fn no_network_denies_tcp_connections() -> TestResult {
    #[cfg(target_os = "linux")]
    if kernel_abi() < 4 {
        eprintln!(
            "\n!!! LANDLOCK ABI {} HAS NO NETWORK RULES: only the warning is checked !!!\n",
            kernel_abi()
        );
        assert!(Sandbox { no_network: true, ..Sandbox::default() }.notice().is_some());
        return Ok(());
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('connected')\""
    );
    let open = with_sandbox(SandboxMode::WorkspaceWrite, false)?;
    assert_eq!(run(&open, &connect).await, ToolOutcome::ok("connected"));
    let closed = with_sandbox(SandboxMode::WorkspaceWrite, true)?;
    let out = run(&closed, &connect).await;
    assert!(out.content.contains(DENIED) && !out.content.contains("connected"), "{out:?}");
    // Sockets of its own still work without the network.
    let pair = "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); print('pair:', b.recv(1).decode())\"";
    assert_eq!(run(&closed, pair).await, ToolOutcome::ok("pair: x"));
    Ok(())
}

/// Under Seatbelt a command cannot read the harness's arguments and environment
/// (`kern.procargs2`, which `ps -E` reads); on Linux the harness is not dumpable, which
/// `tests/suite/isolation.rs` checks.
#[cfg(target_os = "macos")]
#[tokio::test]
async fn the_harness_environment_stays_closed() -> TestResult {
    let fx = Fixture::new()?;
    let out = run(&fx, "ps -E -ww -o command= -p $PPID; echo done").await;
    assert!(out.content.ends_with("done") && !out.content.contains("PATH="), "{out:?}");
    Ok(())
}

/// The live processes whose command line holds `marker`.
#[cfg(target_os = "linux")]
fn processes_marked(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
                .filter(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    String::from_utf8_lossy(&cmdline).contains(marker) && Proc::new(*pid).alive()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Fork loops that leave their process group (`setpgid`) and
/// whose parents exit at once, faster than a scan of `/proc` could follow, are all stopped when
/// `sh` exits; none is left, and the result counts them. A process that starts a second session
/// (`setsid`) is stopped too.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn fork_loops_and_new_sessions_are_stopped_when_sh_exits() -> TestResult {
    let fx = Fixture::new()?;
    let marker = format!("chain-{}-{}", std::process::id(), line!());
    std::fs::write(
        fx.path("chain.py"),
        "import os, sys, time\nos.setpgid(0, 0)\nend = time.time() + 60\nwhile time.time() < end:\n    \
         try:\n        child = os.fork()\n    except OSError:\n        continue\n    if child:\n        \
         os._exit(0)\n    os.setpgid(0, 0)\n",
    )?;
    let out = run(
        &fx,
        &format!(
            "for i in 1 2 3 4; do python3 chain.py {marker} >/dev/null 2>&1 & done; \
             setsid python3 -c 'import time; time.sleep(300)' {marker} >/dev/null 2>&1 & sleep 0.5; echo started"
        ),
    )
    .await;
    let stopped: usize = out
        .content
        .strip_prefix("started\n(stopped ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("no note of the stopped processes: {out:?}"))?;
    assert!(stopped >= 5, "{out:?}");
    assert_eq!(processes_marked(&marker), Vec::<i32>::new(), "processes outlived the call");
    Ok(())
}

/// Under the default sandbox a command cannot signal a process outside it, nor reach a unix
/// socket of a server outside it: Linux refuses making the socket at all (seccomp), macOS
/// connecting to it by its path (Seatbelt); either way with `EPERM`. `socketpair` and signals
/// among its own processes work.
#[tokio::test]
async fn signals_and_unix_sockets_stay_inside_the_command() -> TestResult {
    #[cfg(target_os = "linux")]
    if kernel_abi() < 6 {
        eprintln!("\n!!! LANDLOCK ABI {} HAS NO SCOPES: the signal half is SKIPPED !!!\n", kernel_abi());
        return Ok(());
    }
    let fx = Fixture::new()?;
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("s");
    let _server = std::os::unix::net::UnixListener::bind(&socket)?;
    let mut victim = std::process::Command::new("sleep").arg("300").spawn()?;
    let out = run(
        &fx,
        &format!(
            "kill -9 {}; echo \"outside: $?\"; sleep 300 & kill $!; echo \"own: $?\"; \
             python3 -c \"import socket\ntry:\n  socket.socket(socket.AF_UNIX).connect('{}')\n  print('unix: connected')\n\
             except OSError as e: print('unix:', e.strerror)\n\
             a, b = socket.socketpair(); a.send(b'x'); print('pair:', b.recv(1).decode())\"",
            victim.id(),
            socket.display()
        ),
    )
    .await;
    let alive = victim.try_wait()?.is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(alive, "the victim was killed: {out:?}");
    let c = &out.content;
    assert!(c.contains("outside: 1") && c.contains("own: 0"), "{c}");
    assert!(c.contains("unix: Operation not permitted") && c.contains("pair: x"), "{c}");
    Ok(())
}

/// Whether `pid` still exists (`kill(pid, 0)`).
#[cfg(target_os = "macos")]
fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks the pid; no pointer.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The pid a command wrote into `file`.
#[cfg(target_os = "macos")]
fn pid_in(fx: &Fixture, file: &str) -> Result<i32, String> {
    let text = std::fs::read_to_string(fx.path(file)).map_err(|e| format!("{file}: {e}"))?;
    text.trim().parse().map_err(|e| format!("{file}: {text:?}: {e}"))
}

/// Waits up to 10 s for `pid` to be gone (an orphan is reaped by launchd).
#[cfg(target_os = "macos")]
fn gone_within(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while exists(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// A process in `sh`'s session, and a grandchild in a session of its own whose parent lives
/// longer than one look of the tracker (one that leaves faster escapes: see the tracker's docs).
#[cfg(target_os = "macos")]
#[tokio::test]
async fn what_a_command_leaves_is_stopped_when_sh_exits() -> TestResult {
    let fx = Fixture::new()?;
    let out = run(
        &fx,
        "sleep 300 & echo $! > bg1; \
         python3 -c 'import os, time\nif os.fork() == 0:\n  os.setsid()\n  open(\"bg2.tmp\", \"w\").write(str(os.getpid()))\n  \
         os.rename(\"bg2.tmp\", \"bg2\")\n  time.sleep(300)\nelse:\n  time.sleep(0.5)' & \
         while [ ! -s bg2 ]; do sleep 0.05; done; echo started",
    )
    .await;
    assert!(out.content.starts_with("started\n(stopped "), "{out:?}");
    for file in ["bg1", "bg2"] {
        let pid = pid_in(&fx, file)?;
        assert!(gone_within(pid), "{file}: process {pid} survived the call");
    }
    Ok(())
}
