//! `bash` under Seatbelt, on macOS: the same promises the Linux sandbox's tests check, against
//! `/usr/bin/sandbox-exec` and the tracker. CI compiles these for macOS and cannot run them; a
//! Mac runs them with `cargo test -p agent-core -- seatbelt tracker`, and their output is what a
//! report of a failure on macOS should carry (see the README).

use std::time::{Duration, Instant};

use agent_core::dispatch::ToolOutcome;
use agent_core::sandbox::{Sandbox, SandboxMode};
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

/// A folder outside every place `workspace-write` may write.
fn outside_dir() -> std::io::Result<tempfile::TempDir> {
    agent_core::test_util::outside_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
}

/// Whether `pid` still exists (`kill(pid, 0)`).
fn exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks the pid; no pointer.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The pid a command wrote into `file`.
fn pid_in(fx: &Fixture, file: &str) -> Result<i32, String> {
    let text = std::fs::read_to_string(fx.path(file)).map_err(|e| format!("{file}: {e}"))?;
    text.trim().parse().map_err(|e| format!("{file}: {text:?}: {e}"))
}

/// Waits up to 10 s for `pid` to be gone (an orphan is reaped by launchd).
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

#[tokio::test]
async fn seatbelt_is_there() {
    assert_eq!(Sandbox::default().notice(), None, "sandbox-exec is missing on this Mac");
    assert!(Sandbox::default().active());
}

#[tokio::test]
async fn seatbelt_workspace_write_keeps_writes_inside() -> TestResult {
    let fx = Fixture::new()?;
    let outside = outside_dir()?;
    let o = outside.path().display();
    for (cmd, file) in [
        (format!("echo x > {o}/a"), "a"),
        (format!("cd {o} && echo x > b"), "b"),
        (format!("mkdir {o}/d"), "d"),
    ] {
        let out = run(&fx, &cmd).await;
        assert!(out.content.contains("Operation not permitted"), "{cmd}: {out:?}");
        assert!(out.content.contains("--sandbox off"), "the hint line is there: {out:?}");
        assert!(!outside.path().join(file).exists(), "{cmd} wrote outside");
    }
    let tmp = tempfile::tempdir()?;
    let t = tmp.path().display();
    let out = run(
        &fx,
        &format!(
            "mkdir -p .git && echo ref > .git/HEAD && echo in > inside.txt && echo t > {t}/t && \
             echo u > /tmp/seatbelt-$$ && rm /tmp/seatbelt-$$ && echo gone >/dev/null && cat inside.txt"
        ),
    )
    .await;
    assert_eq!(out, ToolOutcome::ok("in"));
    assert_eq!(std::fs::read_to_string(tmp.path().join("t"))?, "t\n");
    std::fs::write(outside.path().join("r"), "readable")?;
    assert_eq!(run(&fx, &format!("cat {o}/r")).await, ToolOutcome::ok("readable"));
    Ok(())
}

#[tokio::test]
async fn seatbelt_read_only_writes_nothing() -> TestResult {
    let ro = with_sandbox(SandboxMode::ReadOnly, false)?;
    let out = run(&ro, "echo x > inside.txt").await;
    assert!(out.content.contains("Operation not permitted") && out.content.contains("read-only"), "{out:?}");
    assert!(!ro.path("inside.txt").exists());
    assert_eq!(run(&ro, "echo x >/dev/null; echo ok").await, ToolOutcome::ok("ok"));
    Ok(())
}

#[tokio::test]
async fn seatbelt_signals_and_unix_sockets_stay_inside() -> TestResult {
    let fx = Fixture::new()?;
    let mut victim = std::process::Command::new("sleep").arg("300").spawn()?;
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("s");
    let _listener = std::os::unix::net::UnixListener::bind(&socket)?;
    let out = run(
        &fx,
        &format!(
            "kill -9 {}; echo \"outside: $?\"; sleep 300 & kill $!; echo \"own: $?\"; \
             python3 -c \"import socket\ntry:\n  socket.socket(socket.AF_UNIX).connect('{}')\n  print('unix: connected')\n\
             except OSError as e: print('unix:', e.strerror)\"",
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
    assert!(c.contains("unix: Operation not permitted"), "{c}");
    Ok(())
}

#[tokio::test]
async fn seatbelt_no_network_denies_tcp() -> TestResult {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let connect = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})); print('connected')\""
    );
    let open = with_sandbox(SandboxMode::WorkspaceWrite, false)?;
    assert_eq!(run(&open, &connect).await, ToolOutcome::ok("connected"));
    let closed = with_sandbox(SandboxMode::WorkspaceWrite, true)?;
    let out = run(&closed, &connect).await;
    assert!(out.content.contains("Operation not permitted") && !out.content.contains("connected"), "{out:?}");
    Ok(())
}

/// A process in `sh`'s session, and a grandchild in a session of its own whose parent lives
/// longer than one look of the tracker (one that leaves faster escapes: see the tracker's docs).
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
