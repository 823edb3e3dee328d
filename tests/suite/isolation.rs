//! Issue 13 end to end: the real `s02` binary, driven by a scripted endpoint (`mock-api`) the way
//! a hostile model would drive it, with no prompt answered. One test per failing input of the
//! issue that runs against the binary: the re-pointed workspace (1), writes outside (3), escapes
//! from the process group (4), SIGTERM and SIGHUP (5), secrets in the environment (6), TIOCSTI
//! (7), the FIFO race (8), read-only and special targets (9), and `kill -9` in the middle of a
//! large write (11). The swap race (2) and CRLF (10) are in `crates/core/tests`.
//!
//! Then the sandbox against a hostile command (processes that outrun the end of the call, `kill`
//! of the harness or of other processes, unix sockets and the servers behind them, the ssh agent,
//! metadata outside, device nodes, the harness's `/proc` entries, host settings, `Allow? [y/N]`
//! answered by TIOCSTI, secrets in the environment and in `.env`), and harmless programs (git,
//! python3, cargo) that must keep working under it.
//!
//! The Landlock tests need a kernel with Landlock (these machines have ABI 7, with the scopes of
//! ABI 6); where it is missing they say so loudly and check the warning line instead or are
//! skipped. The tests that need root say so when skipped.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_core::test_util::Proc;
use e2e::{
    MockServer, chapter, exits, have_or_skip, pty_chapter, reply, result_batches, run_with_stdin, signal,
    stderr, stdout, wait_until,
};
use rustix::fs::{CWD, FileType, Mode, RenameFlags};
use rustix::process::{Pid, Signal};
use serde_json::{Value, json};

/// Every `tool_result` content the harness sent, in order.
fn tool_results(server: &MockServer) -> Vec<String> {
    let Some(last) = server.requests().last().map(|r| r.body.clone()) else { return Vec::new() };
    result_batches(&last)
        .into_iter()
        .flatten()
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// A folder outside every place `workspace-write` lets a command write.
fn outside_dir() -> tempfile::TempDir {
    agent_core::test_util::outside_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap()
}

/// Input 1: bash renames the workspace away and puts a symlink to an outside folder in its
/// place; `write_file` and `edit_file` then still act on the real workspace, never outside.
#[test]
fn a_re_pointed_workspace_does_not_redirect_write_file_or_edit_file() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    fs::create_dir(&ws).unwrap();
    fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let o = outside.path().display().to_string();
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": format!("d=$PWD; cd / && mv \"$d\" \"$d.moved\" && ln -s {o} \"$d\" && echo re-pointed")}),
        )]),
        reply::tool_uses(&[
            ("toolu_2", "write_file", json!({"path": "new.txt", "content": "hello"})),
            ("toolu_3", "edit_file", json!({"path": "a.txt", "old_text": "alpha", "new_text": "beta"})),
        ]),
        reply::text("done"),
    ]);
    let out = chapter("s02", &ws, Some(&server.base_url())).args(["-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&server);
    assert_eq!(results, ["re-pointed", "Wrote 5 bytes to new.txt", "Edited a.txt"], "{results:?}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was written outside");
    let moved = parent.path().join("ws.moved");
    assert_eq!(fs::read_to_string(moved.join("new.txt")).unwrap(), "hello");
    assert_eq!(fs::read_to_string(moved.join("a.txt")).unwrap(), "beta\n");
}

/// Input 3: under the default sandbox, `echo x > OUTSIDE`, `cd OUTSIDE && …` and python's
/// `open(…, 'w')` all fail with `Permission denied`, and the result says what the sandbox allows.
/// `--sandbox read-only` refuses a write in the workspace too.
#[test]
fn the_default_sandbox_refuses_writes_outside_the_workspace() {
    let ws = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let o = outside.path().display().to_string();
    let script = || {
        vec![
            reply::tool_uses(&[
                ("toolu_1", "bash", json!({"command": format!("echo x > {o}/a")})),
                ("toolu_2", "bash", json!({"command": format!("cd {o} && echo x > b")})),
                ("toolu_3", "bash", json!({"command": format!("python3 -c \"open('{o}/c', 'w')\"")})),
                ("toolu_4", "bash", json!({"command": "echo in > inside.txt && cat inside.txt"})),
            ]),
            reply::text("done"),
        ]
    };
    let server = MockServer::start(script());
    let out = chapter("s02", ws.path(), Some(&server.base_url())).args(["-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let results = tool_results(&server);
    if !stderr(&out).contains("Landlock is not available") {
        for r in &results[..3] {
            assert!(r.contains("Permission denied") && r.contains("--sandbox off"), "{r}");
        }
        assert_eq!(results[3], "in");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was written outside");
    } else {
        eprintln!("\n!!! LANDLOCK IS MISSING ON THIS KERNEL: only the warning line was checked !!!\n");
    }

    let server = MockServer::start(script());
    let out = chapter("s02", ws.path(), Some(&server.base_url()))
        .args(["--sandbox", "read-only", "-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    if !stderr(&out).contains("Landlock is not available") {
        let results = tool_results(&server);
        assert!(results[3].contains("Permission denied") && results[3].contains("read-only"), "{results:?}");
    }
}

/// Input 4: a job started under `set -m` and a python child that calls `os.setpgrp()` leave the
/// command's process group; both are stopped when the call ends, and the result says so.
#[test]
fn background_processes_that_leave_the_group_are_stopped_and_reported() {
    let ws = tempfile::tempdir().unwrap();
    let command = "bash -c 'set -m; sleep 300 & echo $! $(cut -d\" \" -f22 /proc/$!/stat) > bg1'; \
         python3 -c 'import os, time; os.setpgrp(); \
         st = open(\"/proc/self/stat\").read().split()[21]; \
         open(\"bg2.tmp\", \"w\").write(str(os.getpid()) + \" \" + st); \
         os.rename(\"bg2.tmp\", \"bg2\"); time.sleep(300)' & \
         while [ ! -s bg2 ]; do sleep 0.05; done; echo started";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_1", "bash", json!({"command": command}))]),
        reply::text("done"),
    ]);
    let out = chapter("s02", ws.path(), Some(&server.base_url())).args(["-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(tool_results(&server), ["started\n(stopped 2 background processes it left running)"]);
    for file in ["bg1", "bg2"] {
        let p = Proc::read(&ws.path().join(file)).unwrap();
        assert!(wait_until(|| !p.alive()), "{file}: process {p:?} outlived the call");
    }
}

/// `s02 -p go` running, in `ws`, a command that starts `background &`, writes its pid, then
/// `sleep 300`s: the harness's process, the mock it talks to (kept alive by the caller), and the
/// command's `sh` and background process, once both run.
fn harness_running_a_command(ws: &Path, background: &str) -> (Child, MockServer, Proc, Proc) {
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": format!("{background} & echo $! > bg; echo $$ > leader.tmp; mv leader.tmp leader; sleep 300")}),
        )]),
        reply::text("never reached"),
    ]);
    let child = chapter("s02", ws, Some(&server.base_url()))
        .args(["-p", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(|| ws.join("leader").exists()), "the command never started");
    let (leader, bg) = (Proc::read(&ws.join("leader")).unwrap(), Proc::read(&ws.join("bg")).unwrap());
    (child, server, leader, bg)
}

/// Input 5: SIGTERM, and SIGHUP (a closed terminal), to the harness while a command runs: the
/// command and its background child are ended first, then the harness exits (143, 129).
#[test]
fn sigterm_and_sighup_end_the_running_command_before_the_harness_exits() {
    for (sig, code) in [(Signal::TERM, 143), (Signal::HUP, 129)] {
        let ws = tempfile::tempdir().unwrap();
        let (mut child, _server, leader, bg) = harness_running_a_command(ws.path(), "sleep 300");
        assert!(leader.alive() && bg.alive(), "{leader:?} {bg:?} run before the signal");
        signal(&child, sig);
        let status = exits(&mut child, &format!("{sig:?}"));
        assert_eq!((status.code(), status.signal()), (Some(code), None), "{sig:?}");
        for p in [leader, bg] {
            assert!(wait_until(|| !p.alive()), "{sig:?}: process {p:?} outlived the harness");
        }
    }
}

/// Input 6, widened: a command's environment holds none of the harness's secrets
/// (keys, tokens, passwords, PATs, credentials, a password in a URL, the ssh agent's socket), and
/// the rest of the user's environment is there, `PWD` included.
#[test]
fn commands_do_not_see_the_harness_secrets() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_1", "bash", json!({"command": "env"}))]),
        reply::text("done"),
    ]);
    let out = chapter("s02", ws.path(), Some(&server.base_url()))
        .env("ANTHROPIC_API_KEY", "sk-ant-secret-1")
        .env("ANTHROPIC_AUTH_TOKEN", "secret-2")
        .env("GITHUB_TOKEN", "secret-3")
        .env("aws_secret_access_key", "secret-4")
        .env("DB_PASSWORD", "secret-5")
        .env("MYSQL_PWD", "secret-6")
        .env("DATABASE_URL", "postgres://u:secret-7@db.example/x")
        .env("HTTPS_PROXY", "http://u:secret-8@proxy.example:3128")
        .env("GH_PAT", "secret-9")
        .env("NPM_CONFIG__AUTH", "secret-10")
        .env("SSH_AUTH_SOCK", "/tmp/secret-11/agent.1")
        .env("GIT_AUTHOR_NAME", "shown too")
        .env("VISIBLE_SETTING", "shown")
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let env = &tool_results(&server)[0];
    assert!(!env.contains("secret"), "{env}");
    assert!(env.lines().any(|l| l == "VISIBLE_SETTING=shown"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
    assert!(env.lines().any(|l| l == "GIT_AUTHOR_NAME=shown too"), "{env}");
    let pwd = format!("PWD={}", ws.path().canonicalize().unwrap().display());
    assert!(env.lines().any(|l| l == pwd), "{env}");
}

/// Input 7: the harness runs on a terminal (its controlling terminal); a command tries to open
/// `/dev/tty` and push `INJECTED\n` into its input with TIOCSTI. It cannot, so the REPL never
/// reads an injected prompt: after `q` the server saw exactly two requests.
#[test]
fn a_command_cannot_inject_keystrokes_into_the_terminal() {
    let ws = tempfile::tempdir().unwrap();
    let inject = "python3 -c \"import fcntl, termios; f = open('/dev/tty', 'w'); \
                  [fcntl.ioctl(f, termios.TIOCSTI, c.encode()) for c in 'INJECTED\\n']\"";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_1", "bash", json!({"command": inject}))]),
        reply::text("turn over"),
    ]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string("s02 >> ").unwrap();
    s02.send_line("try it").unwrap();
    s02.exp_string("turn over").unwrap();
    s02.exp_string("s02 >> ").unwrap();
    s02.send_line("q").unwrap();
    s02.exp_eof().unwrap();
    let results = tool_results(&server);
    assert!(results[0].contains("No such device or address"), "{results:?}");
    assert_eq!(server.request_count(), 2, "an injected line became a prompt");
    assert!(server.requests().iter().all(|r| !r.body.to_string().contains("INJECTED\"")));
}

/// Input 8: while a swapper thread keeps exchanging a file and a FIFO, 30 `read_file` calls
/// each answer at once (the text, or `not a regular file`), and `q` then quits.
#[test]
fn read_file_never_hangs_on_a_fifo_swapped_in() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("file.txt"), "hello\n").unwrap();
    rustix::fs::mknodat(CWD, ws.path().join("fifo"), FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
    let reads: Vec<(String, &str, Value)> =
        (0..10).map(|i| (format!("toolu_{i}"), "read_file", json!({"path": "file.txt"}))).collect();
    let reads: Vec<(&str, &str, Value)> =
        reads.iter().map(|(id, n, v)| (id.as_str(), *n, v.clone())).collect();
    let server = MockServer::start(vec![
        reply::tool_uses(&reads),
        reply::tool_uses(&reads),
        reply::tool_uses(&reads),
        reply::text("read them all"),
    ]);
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (a, b) = (ws.path().join("file.txt"), ws.path().join("fifo"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = rustix::fs::renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE);
                std::thread::sleep(Duration::from_micros(fastrand_micros()));
            }
        })
    };
    let mut child = chapter("s02", ws.path(), Some(&server.base_url()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"read the file\nq\n").unwrap();
    }
    let status = exits(&mut child, "read_file on a swapped FIFO");
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(status.success());
    let results = tool_results(&server);
    assert_eq!(results.len(), 30);
    for r in &results {
        assert!(r == "hello" || r == "Error: file.txt is not a regular file", "{r}");
    }
}

/// A pause of 0 to 400 µs, from the clock's low bits (no random crate needed here).
fn fastrand_micros() -> u64 {
    u64::from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos(),
    ) % 400
}

/// Input 9: `write_file` and `edit_file` refuse a read-only file (mode 0444; refused for root
/// too) and a FIFO, and leave both as they were.
#[test]
fn read_only_files_and_fifos_are_refused_and_left_alone() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("ro.txt"), "keep me\n").unwrap();
    fs::set_permissions(ws.path().join("ro.txt"), fs::Permissions::from_mode(0o444)).unwrap();
    rustix::fs::mknodat(CWD, ws.path().join("pipe"), FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("toolu_1", "write_file", json!({"path": "ro.txt", "content": "clobbered"})),
            ("toolu_2", "edit_file", json!({"path": "ro.txt", "old_text": "keep", "new_text": "lose"})),
            ("toolu_3", "write_file", json!({"path": "pipe", "content": "x"})),
        ]),
        reply::text("done"),
    ]);
    let mut cmd = chapter("s02", ws.path(), Some(&server.base_url()));
    cmd.args(["-p", "go"]);
    let out = run_with_stdin(cmd, "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        tool_results(&server),
        [
            "Error: ro.txt is read-only (mode 0444); not changed",
            "Error: ro.txt is read-only (mode 0444); not changed",
            "Error: pipe is not a regular file",
        ]
    );
    assert_eq!(fs::read_to_string(ws.path().join("ro.txt")).unwrap(), "keep me\n");
    let ro = fs::metadata(ws.path().join("ro.txt")).unwrap();
    assert_eq!(ro.permissions().mode() & 0o777, 0o444);
    assert!(fs::symlink_metadata(ws.path().join("pipe")).unwrap().file_type().is_fifo());
    assert!(stdout(&out).contains("done"));
}

/// Input 11: `kill -9` while a large `write_file` is being written leaves no temporary file. The
/// test watches the harness's open files for the write in progress (an unnamed file in the
/// workspace, or any new name in it), kills it then, and checks the folder; it retries when the
/// write finished before it was seen, and fails if it never caught one in progress.
#[test]
fn kill_9_in_the_middle_of_a_large_write_leaves_no_temporary_file() {
    let content = "0123456789abcdef".repeat(1024 * 1024); // 16 MiB
    let mut caught = 0;
    for _ in 0..5 {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        fs::write(root.join("keep.txt"), "keep\n").unwrap();
        let server = MockServer::start(vec![
            reply::tool_uses(&[("toolu_1", "write_file", json!({"path": "big.txt", "content": content}))]),
            reply::text("done"),
        ]);
        let started = Instant::now();
        let mut child = chapter("s02", &root, Some(&server.base_url()))
            .args(["--no-stream", "-p", "go"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let fd_dir = PathBuf::from(format!("/proc/{}/fd", child.id()));
        let in_progress = || {
            let unnamed = fs::read_dir(&fd_dir).into_iter().flatten().flatten().any(|fd| {
                fs::read_link(fd.path())
                    .is_ok_and(|t| t.starts_with(&root) && t.to_string_lossy().ends_with("(deleted)"))
            });
            let named = fs::read_dir(&root).unwrap().flatten().any(|e| e.file_name() != "keep.txt");
            unnamed || named
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = false;
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() && server.request_count() < 2 {
            if in_progress() {
                seen = true;
                break;
            }
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        eprintln!("try: seen {seen} after {:?}, {} requests", started.elapsed(), server.request_count());
        let mut names: Vec<String> = fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // Either the write never landed, or it landed whole; nothing else may be there.
        match names.as_slice() {
            [k] if k == "keep.txt" => {}
            [b, k] if b == "big.txt" && k == "keep.txt" => {
                assert_eq!(fs::metadata(root.join("big.txt")).unwrap().len(), content.len() as u64);
            }
            other => panic!("left behind after kill -9: {other:?}"),
        }
        if seen && server.request_count() < 2 {
            caught += 1;
            break;
        }
    }
    assert!(caught > 0, "never caught the write in progress in five tries");
}

// ---------------------------------------------------------------------------------------------
// The sandbox against a hostile command: processes, signals, sockets, devices and the harness's
// own secrets, one test per attack of the s02 README's threat model, with victims the test makes
// itself. The attacks that need root run only as root and say so when skipped.
// ---------------------------------------------------------------------------------------------

/// Whether the tests run as root; otherwise says loudly that `what` is skipped.
fn root_or_skip(what: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("\n!!! NOT ROOT: {what} needs root and is SKIPPED !!!\n");
    false
}

/// Whether the kernel scopes signals and abstract sockets (Landlock ABI 6); otherwise says so.
fn scopes_or_skip(what: &str) -> bool {
    if agent_core::sandbox::kernel_abi() >= 6 {
        return true;
    }
    eprintln!(
        "\n!!! LANDLOCK ABI {} HAS NO SCOPES: {what} is SKIPPED !!!\n",
        agent_core::sandbox::kernel_abi()
    );
    false
}

/// Runs `s02 -p go` in `ws` with `args` against a server that answers each of `commands` as one
/// `bash` call, in turns, then `done`; returns the tool results and the output.
fn run_commands(
    ws: &std::path::Path,
    args: &[&str],
    commands: &[String],
) -> (Vec<String>, std::process::Output) {
    let mut script: Vec<_> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| reply::tool_uses(&[(format!("toolu_{i}").as_str(), "bash", json!({ "command": c }))]))
        .collect();
    script.push(reply::text("done"));
    let server = MockServer::start(script);
    let mut cmd = chapter("s02", ws, Some(&server.base_url()));
    cmd.args(args).args(["-p", "go"]).stdin(Stdio::null());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (tool_results(&server), out)
}

/// The live processes whose command line holds `marker`, seen from outside the sandbox.
fn processes_marked(marker: &str) -> Vec<i32> {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(marker) && Proc::new(*pid).alive()
        })
        .collect()
}

/// A C program that calls `setpgid(0,0)`, then forks and lets the parent exit, in a loop,
/// eight of them in the background. They are all stopped when the call ends (a second call finds
/// none of them), the result says so, and the call does not wait for them.
#[test]
fn fork_loops_that_leave_their_group_are_stopped_with_the_call() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(
        ws.path().join("chain.c"),
        "#include <stdlib.h>\n#include <time.h>\n#include <unistd.h>\n\
         int main(int argc, char **argv) {\n\
           time_t end = time(0) + atoi(argv[1]);\n\
           setpgid(0, 0);\n\
           while (time(0) < end) { pid_t p = fork(); if (p > 0) _exit(0); if (p == 0) setpgid(0, 0); }\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let cc = std::process::Command::new("cc")
        .args(["-O2", "-o", "chain", "chain.c"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(cc.success(), "cc failed");
    let marker = format!("fork-chain-{}", std::process::id());
    // The check of the second call reads every command line, without naming the marker itself.
    let (head, last) = marker.split_at(marker.len() - 1);
    let started = Instant::now();
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[
            format!(
                "for i in 1 2 3 4 5 6 7 8; do ./chain 60 {marker} >/dev/null 2>&1 & done; sleep 0.5; echo started"
            ),
            format!(
                "n=0; for f in /proc/[0-9]*/cmdline; do case \"$(tr '\\0' ' ' 2>/dev/null < $f)\" in \
                 *{head}[{last}]*) n=$((n+1));; esac; done; echo alive=$n"
            ),
        ],
    );
    let took = started.elapsed();
    let first = &results[0];
    let stopped: usize = first
        .strip_prefix("started\n(stopped ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no note of the stopped processes: {first:?}"));
    assert!(stopped >= 8, "{first}");
    assert_eq!(results[1], "alive=0", "a fork loop outlived its call");
    assert!(processes_marked(&marker).is_empty(), "fork loops outlived the harness");
    assert!(took < Duration::from_secs(30), "the calls took {took:?}");
}

/// A command that kills its parent and the harness (`kill -9`) is refused, the harness
/// answers as usual, and the command's background `sleep` is stopped with the call. (The harness
/// is found by its name, so that a failing sandbox never hits the test's own process.)
#[test]
fn a_command_cannot_kill_the_harness() {
    if !scopes_or_skip("a_command_cannot_kill_the_harness") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let (results, out) = run_commands(
        ws.path(),
        &[],
        &["sleep 1079 >/dev/null 2>&1 & echo $! $(cut -d' ' -f22 /proc/$!/stat) > bg; sleep 0.2; \
           h=$PPID; [ \"$(cat /proc/$h/comm)\" = s02 ] || h=$(cut -d' ' -f4 /proc/$h/stat); \
           kill -9 $PPID; echo \"parent: $?\"; kill -9 $h; echo \"harness: $?\""
            .to_owned()],
    );
    let r = &results[0];
    assert!(r.contains("parent: 1") && r.contains("harness: 1"), "{r}");
    assert!(r.contains("Operation not permitted"), "{r}");
    assert!(r.contains("(stopped 1 background process it left running)"), "{r}");
    assert!(stdout(&out).contains("done"));
    let bg = Proc::read(&ws.path().join("bg")).unwrap();
    assert!(!bg.alive(), "the background sleep outlived its call: {bg:?}");
}

/// The harness is killed (`SIGKILL`, so it cannot clean up) while a command
/// runs; the command and its background child end all the same.
#[test]
fn a_killed_harness_leaves_no_command_behind() {
    let ws = tempfile::tempdir().unwrap();
    let (mut child, _server, leader, bg) = harness_running_a_command(ws.path(), "setsid sleep 300");
    assert!(leader.alive() && bg.alive(), "{leader:?} {bg:?} run before the kill");
    signal(&child, Signal::KILL);
    let _ = exits(&mut child, "SIGKILL");
    for p in [leader, bg] {
        assert!(wait_until(|| !p.alive()), "process {p:?} outlived the killed harness");
    }
}

/// `kill -9` to an unrelated process of the same user (a `sleep` the test started) is
/// refused, and the victim lives on.
#[test]
fn a_command_cannot_signal_other_processes() {
    if !scopes_or_skip("a_command_cannot_signal_other_processes") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let mut victim = std::process::Command::new("sleep").arg("300").spawn().unwrap();
    let (results, _) = run_commands(ws.path(), &[], &[format!("kill -9 {}; echo \"kill: $?\"", victim.id())]);
    let alive = victim.try_wait().unwrap().is_none();
    let _ = victim.kill();
    let _ = victim.wait();
    assert!(results[0].contains("kill: 1") && results[0].contains("Operation not permitted"), "{results:?}");
    assert!(alive, "the victim was killed by a command");
}

/// A python probe that tries to connect to each unix socket address given, and a socketpair.
const SOCKET_PROBE: &str = "\
import socket, sys
for name in sys.argv[1:]:
    address = '\\0' + name[1:] if name.startswith('@') else name
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(address)
        print('connected', name)
    except OSError as e:
        print('refused', name, e.strerror)
a, b = socket.socketpair()
a.send(b'x')
print('socketpair', b.recv(1).decode())
";

/// Listeners for the socket test: an abstract socket and a pathname socket outside the
/// workspace, both non-blocking, so that `accept` tells whether anyone connected.
fn unix_listeners(
    dir: &std::path::Path,
) -> (std::os::unix::net::UnixListener, std::os::unix::net::UnixListener, String) {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("sbx-abstract-{}-{}", std::process::id(), fastrand_micros());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let path_listener = std::os::unix::net::UnixListener::bind(dir.join("sock")).unwrap();
    for l in [&abstract_listener, &path_listener] {
        l.set_nonblocking(true).unwrap();
    }
    (abstract_listener, path_listener, format!("@{name}"))
}

/// A command can connect neither to an abstract socket nor to a pathname socket of
/// another process (the listeners see no connection), while `socketpair` works. With
/// `--allow-unix-sockets` the pathname socket is reachable, and the abstract one still is not.
#[test]
fn unix_sockets_of_other_processes_are_out_of_reach() {
    if !scopes_or_skip("unix_sockets_of_other_processes_are_out_of_reach") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("probe.py"), SOCKET_PROBE).unwrap();
    let outside = outside_dir();
    let (abstract_listener, path_listener, abstract_name) = unix_listeners(outside.path());
    let probe = format!("python3 probe.py {abstract_name} {}", outside.path().join("sock").display());
    let (results, _) = run_commands(ws.path(), &[], std::slice::from_ref(&probe));
    let r = &results[0];
    assert!(!r.contains("connected"), "{r}");
    assert_eq!(r.matches("refused").count(), 2, "{r}");
    assert!(r.contains("Operation not permitted"), "{r}");
    assert!(r.contains("socketpair x"), "{r}");
    for l in [&abstract_listener, &path_listener] {
        assert!(l.accept().is_err(), "a listener got a connection");
    }

    let (results, _) = run_commands(ws.path(), &["--allow-unix-sockets"], &[probe]);
    let r = &results[0];
    assert!(r.contains(&format!("connected {}", outside.path().join("sock").display())), "{r}");
    assert!(r.contains(&format!("refused {abstract_name}")), "{r}");
    assert!(path_listener.accept().is_ok(), "--allow-unix-sockets: no connection");
    assert!(abstract_listener.accept().is_err(), "--allow-unix-sockets reached an abstract socket");
}

/// With a tmux server of the user running (the test starts one), a command cannot have it
/// run a command that writes where the command itself may not: no new window, no file.
#[test]
fn a_tmux_server_cannot_run_commands_for_a_command() {
    if !have_or_skip("tmux", "a_tmux_server_cannot_run_commands_for_a_command") {
        return;
    }
    let socket = format!("sbx-{}-{}", std::process::id(), fastrand_micros());
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    };
    assert!(tmux(&["new-session", "-d", "-s", "victim"]).status.success(), "tmux server did not start");
    let ws = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let target = outside.path().join("pwn");
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[format!("tmux -L {socket} new-window -d \"echo pwn > {}\"; echo \"tmux: $?\"", target.display())],
    );
    let windows = String::from_utf8_lossy(&tmux(&["list-windows", "-a"]).stdout).lines().count();
    let _ = tmux(&["kill-server"]);
    assert!(results[0].contains("tmux: 1"), "{results:?}");
    assert_eq!(windows, 1, "the command opened a tmux window");
    assert!(!target.exists(), "the tmux server wrote outside for the command");
}

/// The user's ssh agent (the test starts one and adds a key) is out of reach:
/// `SSH_AUTH_SOCK` is not passed, and naming the socket does not help; no key is listed and
/// nothing is signed.
#[test]
fn the_ssh_agent_is_out_of_reach() {
    if !have_or_skip("ssh-agent", "the_ssh_agent_is_out_of_reach") {
        return;
    }
    let keys = tempfile::tempdir().unwrap();
    let sock = keys.path().join("agent.sock");
    let key = keys.path().join("key");
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let agent = run(std::process::Command::new("ssh-agent").arg("-a").arg(&sock));
    let pid: i32 = agent
        .split("SSH_AGENT_PID=")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    run(std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key));
    run(std::process::Command::new("ssh-add").arg(&key).env("SSH_AUTH_SOCK", &sock));
    // Only the agent holds the private key now: a signature can come from nowhere else.
    fs::remove_file(&key).unwrap();
    let key = keys.path().join("agent-only");
    fs::rename(keys.path().join("key.pub"), key.with_extension("pub")).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": format!(
                "echo \"sock=${{SSH_AUTH_SOCK:-unset}}\"; SSH_AUTH_SOCK={s} ssh-add -l; echo \"list: $?\"; \
                 echo data | SSH_AUTH_SOCK={s} ssh-keygen -Y sign -f {k}.pub -n file -; echo \"sign: $?\"",
                s = sock.display(),
                k = key.display()
            )}),
        )]),
        reply::text("done"),
    ]);
    let out = chapter("s02", ws.path(), Some(&server.base_url()))
        .env("SSH_AUTH_SOCK", &sock)
        .env("SSH_AGENT_PID", pid.to_string())
        .args(["-p", "go"])
        .output()
        .unwrap();
    let _ = rustix::process::kill_process(Pid::from_raw(pid).unwrap(), Signal::TERM);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &tool_results(&server)[0];
    assert!(r.contains("sock=unset"), "{r}");
    assert!(r.contains("list: 2") && !r.contains("ED25519"), "{r}");
    assert!(!r.contains("sign: 0") && !r.contains("BEGIN SSH SIGNATURE"), "{r}");
}

/// A documented limit: outside the writable set a command cannot write a file's content,
/// but it can change the mode and the times of a file the user owns (Landlock has no right for
/// them; see the threat model in `chapters/s02/SANDBOX.md`, which this test keeps honest). Changing the owner
/// needs `CAP_CHOWN`, which no command has.
#[test]
fn metadata_outside_the_workspace_is_a_documented_limit() {
    let ws = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let file = outside.path().join("victim");
    fs::write(&file, "keep\n").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    let f = file.display();
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[format!(
            "echo x > {f}; echo \"write: $?\"; chown 65534 {f}; echo \"chown: $?\"; chmod 600 {f}; \
             echo \"chmod: $?\"; touch -d 2001-01-01 {f}; echo \"touch: $?\""
        )],
    );
    let r = &results[0];
    assert!(!r.contains("write: 0") && !r.contains("chown: 0"), "{r}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "keep\n");
    // The limit, as documented.
    assert!(r.contains("chmod: 0") && r.contains("touch: 0"), "{r}");
    assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let model =
        fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../chapters/s02/SANDBOX.md")).unwrap();
    assert!(
        model.contains("`chmod`, `touch -d`"),
        "the s02 threat model no longer documents the metadata limit"
    );
}

/// As root: `mknod` of a character device (here `/dev/kmsg`'s, 1:11) in the workspace is
/// refused, so nothing reaches the kernel log; a FIFO still works.
#[test]
fn no_device_node_can_be_made_even_as_root() {
    if !root_or_skip("no_device_node_can_be_made_even_as_root") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &["mknod kmsg c 1 11; echo \"mknod: $?\"; mkfifo fifo && echo fifo-ok".to_owned()],
    );
    let r = &results[0];
    assert!(r.contains("mknod: 1") && r.contains("fifo-ok"), "{r}");
    assert!(!ws.path().join("kmsg").exists(), "a device node was made");
}

/// The harness is not dumpable, so a command reads neither its `/proc/PID/environ` (nor its
/// supervisor's) nor its descriptors, and the key has left the harness's environment anyway
/// (the test, as root, reads it from outside); the key is still sent to the endpoint.
#[test]
fn the_harness_proc_entries_and_environment_hold_no_key() {
    let key = "sk-ant-proc-test-0123456789";
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": "h=$(cut -d' ' -f4 /proc/$PPID/stat); tr '\\0' '\\n' < /proc/$h/environ; \
                               tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/$h/fd/0; : > ready; \
                               while [ ! -e go-on ]; do sleep 0.05; done; echo checked"}),
        )]),
        reply::text("done"),
    ]);
    let mut child = chapter("s02", ws.path(), Some(&server.base_url()))
        .env("ANTHROPIC_API_KEY", key)
        .args(["-p", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(|| ws.path().join("ready").exists()), "the command never got there");
    let environ = fs::read(format!("/proc/{}/environ", child.id()));
    fs::write(ws.path().join("go-on"), "").unwrap();
    let status = exits(&mut child, "proc entries");
    assert!(status.success());
    match environ {
        Ok(bytes) => {
            assert!(!String::from_utf8_lossy(&bytes).contains(key), "the key is in the harness's environ")
        }
        Err(e) => {
            assert!(!rustix::process::geteuid().is_root(), "root cannot read the environ: {e}");
            eprintln!(
                "\n!!! NOT ROOT: the harness's environ was not read from outside (it is not dumpable) !!!\n"
            );
        }
    }
    let r = &tool_results(&server)[0];
    assert!(!r.contains(key) && r.contains("checked"), "{r}");
    assert_eq!(r.matches("Permission denied").count(), 3, "{r}");
    assert_eq!(server.requests()[0].header("x-api-key"), Some(key));
}

/// As root: `hostname` and `ip link add` are refused. The harness runs in a UTS namespace
/// of its own, so that even a failure of the sandbox leaves the machine's name alone; a dummy
/// link, if one was made, is removed.
#[test]
fn host_settings_cannot_be_changed_even_as_root() {
    if !root_or_skip("host_settings_cannot_be_changed_even_as_root") || !have_or_skip("ip", "the ip half") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let link = format!("sbx{}", std::process::id() % 100_000);
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_1",
            "bash",
            json!({"command": format!(
                "hostname sbx-renamed; echo \"hostname: $?\"; ip link add {link} type dummy; echo \"ip: $?\""
            )}),
        )]),
        reply::text("done"),
    ]);
    let inner = chapter("s02", ws.path(), Some(&server.base_url()));
    let mut cmd = std::process::Command::new("unshare");
    cmd.arg("--uts").arg(inner.get_program()).args(["-p", "go"]).current_dir(ws.path()).stdin(Stdio::null());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let made =
        std::process::Command::new("ip").args(["link", "show", &link]).output().unwrap().status.success();
    if made {
        let _ = std::process::Command::new("ip").args(["link", "del", &link]).status();
    }
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &tool_results(&server)[0];
    assert!(r.contains("hostname: 1") && !r.contains("ip: 0"), "{r}");
    assert!(!made, "a command added a network link");
}

/// A Python program that writes its pid and start time to `injector` (`Proc::read`'s form), then
/// pushes `y` and Enter into the terminal named by its first argument with TIOCSTI, every 0.1 s,
/// for ever. Needs `os` imported before it.
const PUSHER: &str = "import fcntl, sys, termios, time\n\
     open('inj.tmp', 'w').write(str(os.getpid()) + ' ' + open('/proc/self/stat').read().split()[21])\n\
     os.rename('inj.tmp', 'injector')\n\
     tty = open(sys.argv[1], 'w')\n\
     while True:\n\
     \x20   for c in 'y\\n':\n\
     \x20       fcntl.ioctl(tty, termios.TIOCSTI, c.encode())\n\
     \x20   time.sleep(0.1)\n";

/// As root with `--sandbox off`, where a command keeps every capability: a command starts a
/// `setsid` process that pushes `y` and Enter into the harness's terminal with TIOCSTI, again and
/// again. It is stopped when its call ends, so at the next call's `Allow? [y/N]` only the user's
/// key counts: `n` keeps the victim file.
#[test]
fn the_allow_prompt_is_answered_only_by_the_user_even_without_sandbox() {
    if !root_or_skip("the_allow_prompt_is_answered_only_by_the_user_even_without_sandbox") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("victim"), "keep\n").unwrap();
    fs::write(ws.path().join("inj.py"), format!("import os\n{PUSHER}")).unwrap();
    // The harness's terminal, through its /proc entry (root keeps CAP_SYS_PTRACE with --sandbox off).
    let injector = "t=$(readlink /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/fd/0); \
        setsid python3 inj.py \"$t\" >/dev/null 2>&1 & \
        while [ ! -s injector ]; do sleep 0.05; done; sleep 0.3; echo started";
    let results = pusher_session(ws.path(), injector, "the injector outlived its call");
    assert_eq!(results[0], "started\n(stopped 1 background process it left running)", "{results:?}");
}

/// One s04 session on a pseudo-terminal with `--sandbox off`: the model runs `injector` (which
/// starts the pusher and writes its pid to `injector`), then `rm victim`. The pusher must be dead
/// when the second `Allow? [y/N]` shows (`why` otherwise), which the user answers `n`; the victim
/// stays. The tool results.
fn pusher_session(ws: &Path, injector: &str, why: &str) -> Vec<String> {
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_1", "bash", json!({ "command": injector }))]),
        reply::tool_uses(&[("toolu_2", "bash", json!({"command": "rm victim"}))]),
        reply::text("turn over"),
    ]);
    let mut cmd = chapter("s04", ws, Some(&server.base_url()));
    cmd.env("TERM", "xterm-256color").args(["--sandbox", "off"]);
    let options = rexpect::session::Options::new().timeout_ms(Some(30_000)).strip_ansi_escape_codes(true);
    let mut s04 = rexpect::session::spawn_with_options(cmd, options).unwrap();
    s04.exp_string("s04 >> ").unwrap();
    s04.send_line("go").unwrap();
    // The permission check may ask about the first command too (it runs `setsid`): the user says
    // yes to that one.
    s04.exp_string("Allow? [y/N]").unwrap();
    if !ws.join("injector").exists() {
        s04.send_line("y").unwrap();
        s04.exp_string("Allow? [y/N]").unwrap();
    }
    let inj = Proc::read(&ws.join("injector")).unwrap();
    assert!(!inj.alive(), "{why}: {inj:?}");
    s04.send_line("n").unwrap();
    s04.exp_string("turn over").unwrap();
    s04.exp_string("s04 >> ").unwrap();
    s04.send_line("q").unwrap();
    s04.exp_eof().unwrap();
    assert!(ws.join("victim").exists(), "the prompt was answered by a command");
    let results = tool_results(&server);
    assert_eq!(results[1], "Permission denied by user");
    results
}

/// The same pusher, made harder to stop: before it starts pushing it moves itself out of the
/// command's cgroup (root can write the root cgroup's `cgroup.procs`), and the command then
/// kills its own supervisor, once plainly and once after writing a forged "all ended" report
/// into the supervisor's report pipe. The pusher comes back to the harness, a subreaper, which
/// ends it with the call either way, so the next `Allow? [y/N]` is answered by the user alone.
#[test]
fn a_pusher_that_left_its_cgroup_and_killed_its_supervisor_ends_with_its_call() {
    if !root_or_skip("a_pusher_that_left_its_cgroup_and_killed_its_supervisor_ends_with_its_call") {
        return;
    }
    for forge in [false, true] {
        pusher_out_of_its_cgroup(forge);
    }
}

fn pusher_out_of_its_cgroup(forge: bool) {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("victim"), "keep\n").unwrap();
    // First out of the command's cgroup, into the root one (root may), then the pusher.
    let leave = "import os\n\
         mounts = [l.split()[4] for l in open('/proc/self/mountinfo') if ' - cgroup2 ' in l]\n\
         try:\n\
         \x20   open(os.path.join(mounts[0], 'cgroup.procs'), 'w').write(str(os.getpid()))\n\
         except Exception as e:\n\
         \x20   open('stayed', 'w').write(repr(e))\n";
    fs::write(ws.path().join("inj.py"), format!("{leave}{PUSHER}")).unwrap();
    // `$PPID` is the supervisor: killed, it reports nothing, and `sh` dies with it. The forged
    // report (exited 0, nothing stopped) goes into every write-only pipe the supervisor holds.
    let forged = "for f in /proc/$PPID/fdinfo/*; do n=${f##*/}; \
        case $(awk '/^flags/ {print $2}' $f) in *1) case $(readlink /proc/$PPID/fd/$n) in pipe:*) \
        printf '\\001\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000\\000' > /proc/$PPID/fd/$n;; esac;; esac; done; ";
    let injector = format!(
        "t=$(readlink /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/fd/0); \
         setsid python3 inj.py \"$t\" >/dev/null 2>&1 & \
         while [ ! -s injector ]; do sleep 0.05; done; sleep 0.3; {}kill -9 $PPID",
        if forge { forged } else { "" }
    );
    pusher_session(ws.path(), &injector, &format!("the pusher outlived its call (forged report: {forge})"));
    if ws.path().join("stayed").exists() {
        eprintln!(
            "the pusher could not leave its cgroup ({}): only the killed supervisor was tried",
            fs::read_to_string(ws.path().join("stayed")).unwrap_or_default()
        );
    }
}

/// A key in `.env` is in a file commands can read; the harness says so once at start, with
/// what to do. Without a key in `.env`, no such line.
#[test]
fn a_key_in_dotenv_is_reported_once_at_start() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join(".env"), "ANTHROPIC_API_KEY=sk-ant-dotenv-1\n").unwrap();
    let (results, out) = run_commands(ws.path(), &[], &["cat .env".to_owned()]);
    let err = stderr(&out);
    assert_eq!(err.matches("warning: sandbox: the API key is in ").count(), 1, "{err}");
    assert!(
        err.contains(".env, a file bash commands can read") && err.contains("pass it in the environment"),
        "{err}"
    );
    // What the line warns of.
    assert_eq!(results[0], "ANTHROPIC_API_KEY=sk-ant-dotenv-1");

    fs::write(ws.path().join(".env"), "SOMETHING_ELSE=1\n").unwrap();
    let (_, out) = run_commands(ws.path(), &[], &["true".to_owned()]);
    assert!(!stderr(&out).contains("API key"), "{}", stderr(&out));
}

/// Harmless programs keep working under the default sandbox, in the workspace: git (init, commit,
/// log), python3 (a subprocess, a thread pool, a socketpair) and cargo (a new package, built
/// offline and run; with a `CARGO_HOME` of its own, so that it never waits for the lock of a
/// cargo running elsewhere on the machine, and a target folder of its own, so that a
/// `CARGO_TARGET_DIR` set for the test run cannot send the build elsewhere). Git's automatic maintenance is off: from git 2.47 a
/// commit starts it detached, and on a loaded machine it may still run when `sh` exits, so the
/// call rightly stops it and says so.
#[test]
fn git_python3_and_cargo_work_under_the_sandbox() {
    let ws = tempfile::tempdir().unwrap();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[
            "git init -q repo && cd repo && echo hi > a && git add a && \
             git -c user.name=t -c user.email=t@e -c maintenance.auto=false -c gc.auto=0 commit -qm first && git log --format=%s"
                .to_owned(),
            "python3 -c \"import subprocess, socket, concurrent.futures as f; \
             print(subprocess.run(['echo', 'sub'], capture_output=True, text=True).stdout.strip()); \
             print(sum(f.ThreadPoolExecutor(2).map(abs, [-1, -2]))); a, b = socket.socketpair(); \
             a.send(b'p'); print(b.recv(1).decode())\""
                .to_owned(),
            format!(
                "export CARGO_HOME=$PWD/.cargo-home; {cargo} new -q --vcs none hello && cd hello && \
                 {cargo} build -q --offline --target-dir target && ./target/debug/hello"
            ),
        ],
    );
    assert_eq!(results[0], "first");
    assert_eq!(results[1], "sub\n3\np");
    assert_eq!(results[2], "Hello, world!");
}

// ---------------------------------------------------------------------------------------------
// The second round of attacks on the sandbox and the harness's own files: process chains that
// outrun a walk, set-user-ID files, datagrams, inherited descriptors, the keyrings, shared
// memory, a linked `.memory`, and a planted parent `.env`. Each checks its victim.
// ---------------------------------------------------------------------------------------------

/// Compiles the C program `source` as `ws/name` with `cc`; `false` (said loudly) without `cc`.
fn compiled(ws: &Path, name: &str, source: &str, what: &str) -> bool {
    if !have_or_skip("cc", what) {
        return false;
    }
    fs::write(ws.join(format!("{name}.c")), source).unwrap();
    let cc = std::process::Command::new("cc")
        .args(["-O2", "-o", name, &format!("{name}.c")])
        .current_dir(ws)
        .status()
        .unwrap();
    assert!(cc.success(), "cc failed on {name}.c");
    true
}

/// Whether Landlock and seccomp are both here; otherwise says that `what` is skipped.
fn confined_or_skip(what: &str) -> bool {
    if agent_core::sandbox::kernel_abi() >= 1 && agent_core::sandbox::seccomp_available() {
        return true;
    }
    eprintln!("\n!!! NO LANDLOCK OR NO SECCOMP ON THIS KERNEL: {what} is SKIPPED !!!\n");
    false
}

/// A chain 1,000 processes deep, each forked by the one before and moved to a session (and
/// process group) of its own, each set to write a line 8 seconds after the chain is complete: none is left when the
/// call has ended (the next call counts them), none outlives the harness, and nothing is written.
#[test]
fn a_thousand_deep_chain_of_sessions_ends_with_its_call() {
    let ws = tempfile::tempdir().unwrap();
    let source = "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
        int main(int argc, char **argv) {\n\
          int depth = atoi(argv[1]), i;\n\
          for (i = 0; i < depth; i++) {\n\
            pid_t p = fork();\n\
            if (p < 0) break;\n\
            if (p > 0) break;\n\
            setsid();\n\
          }\n\
          if (i == depth) { FILE *f = fopen(\"built.tmp\", \"w\"); if (f) fclose(f); rename(\"built.tmp\", \"built\"); }\n\
          while (access(\"built\", F_OK) != 0) usleep(100000);\n\
          sleep(8); FILE *f = fopen(\"late\", \"a\"); if (f) { fputs(\"late\\n\", f); fclose(f); }\n\
          return 0;\n\
        }\n";
    if !compiled(ws.path(), "deep", source, "a_thousand_deep_chain_of_sessions_ends_with_its_call") {
        return;
    }
    let marker = format!("deep-chain-{}", std::process::id());
    let (head, last) = marker.split_at(marker.len() - 1);
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[
            format!(
                "./deep 1000 {marker} >/dev/null 2>&1 & \
                 i=0; while [ ! -e built ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo built"
            ),
            format!(
                "n=0; for f in /proc/[0-9]*/cmdline; do case \"$(tr '\\0' ' ' 2>/dev/null < $f)\" in \
                 *{head}[{last}]*) n=$((n+1));; esac; done; echo alive=$n"
            ),
        ],
    );
    assert!(results[0].starts_with("built\n(stopped "), "{}", results[0]);
    assert_eq!(results[1], "alive=0", "part of the chain outlived its call");
    assert!(wait_until(|| processes_marked(&marker).is_empty()), "part of the chain outlived the harness");
    assert!(!ws.path().join("late").exists(), "a process of the chain wrote after its call");
}

/// No file of the workspace gets a set-user-ID or set-group-ID bit, by any call: `chmod` on a
/// copy of a shell, and `creat`, `open`, `openat`, `mkdir`, `mknod`, `fchmod`, `fchmodat` with the
/// bits in their mode. Each is refused with `EPERM`; plain modes still work.
#[test]
fn no_set_user_id_file_can_be_made() {
    if !confined_or_skip("no_set_user_id_file_can_be_made") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let source = "#include <errno.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n\
        #include <sys/stat.h>\n#include <unistd.h>\n\
        static void say(const char *what, int r) { printf(\"%s: %s\\n\", what, r < 0 ? strerror(errno) : \"done\"); }\n\
        int main(void) {\n\
          umask(0);\n\
          say(\"creat\", creat(\"c1\", 04755));\n\
          say(\"open\", open(\"c2\", O_CREAT | O_WRONLY, 02755));\n\
          say(\"openat\", openat(AT_FDCWD, \"c3\", O_CREAT | O_WRONLY, 06755));\n\
          say(\"mkdir\", mkdir(\"d1\", 02755));\n\
          say(\"mknod\", mknod(\"n1\", S_IFREG | 04755, 0));\n\
          int fd = open(\"plain\", O_CREAT | O_WRONLY, 0755);\n\
          say(\"fchmod\", fchmod(fd, 04755));\n\
          say(\"fchmodat\", fchmodat(AT_FDCWD, \"plain\", 02755, 0));\n\
          say(\"plain chmod\", chmod(\"plain\", 0700));\n\
          return 0;\n\
        }\n";
    if !compiled(ws.path(), "setid", source, "no_set_user_id_file_can_be_made") {
        return;
    }
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &["cp /bin/sh x && chmod 4755 x; echo \"chmod 4755: $?\"; chmod g+s x; echo \"chmod g+s: $?\"; ./setid"
            .to_owned()],
    );
    let r = &results[0];
    assert!(r.contains("chmod 4755: 1") && r.contains("chmod g+s: 1"), "{r}");
    for call in ["creat", "open", "openat", "mkdir", "mknod", "fchmod", "fchmodat"] {
        assert!(r.contains(&format!("\n{call}: Operation not permitted")), "{call}: {r}");
    }
    assert!(r.contains("plain chmod: done"), "{r}");
    for entry in walk(ws.path()) {
        let mode = fs::symlink_metadata(&entry).unwrap().permissions().mode();
        assert_eq!(mode & 0o6000, 0, "{} has mode {mode:o}", entry.display());
    }
}

/// Every path below `dir`, folders included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

/// A datagram socket outside (a stand-in for syslog or journald) receives nothing from a
/// command: `socketpair(AF_UNIX, SOCK_DGRAM)`, whose ends could `sendto` any named socket, is
/// refused; stream and seqpacket pairs, which reach only their other end, still work.
#[test]
fn a_datagram_reaches_no_socket_outside() {
    if !confined_or_skip("a_datagram_reaches_no_socket_outside") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let source = "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/socket.h>\n\
        #include <sys/un.h>\n\
        int main(int argc, char **argv) {\n\
          int sv[2];\n\
          if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0) printf(\"dgram pair: %s\\n\", strerror(errno));\n\
          else {\n\
            struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;\n\
            strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);\n\
            long n = sendto(sv[0], \"x\", 1, 0, (struct sockaddr *)&a, sizeof a);\n\
            printf(\"dgram pair: sent %ld\\n\", n);\n\
          }\n\
          if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0) printf(\"seqpacket pair: %s\\n\", strerror(errno));\n\
          else printf(\"seqpacket pair: made\\n\");\n\
          if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) printf(\"stream pair: %s\\n\", strerror(errno));\n\
          else printf(\"stream pair: made\\n\");\n\
          return 0;\n\
        }\n";
    if !compiled(ws.path(), "dgram", source, "a_datagram_reaches_no_socket_outside") {
        return;
    }
    let outside = outside_dir();
    let listener = std::os::unix::net::UnixDatagram::bind(outside.path().join("log")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let (results, _) =
        run_commands(ws.path(), &[], &[format!("./dgram {}", outside.path().join("log").display())]);
    let r = &results[0];
    assert!(r.contains("dgram pair: Operation not permitted"), "{r}");
    assert!(r.contains("seqpacket pair: made"), "{r}");
    assert!(r.contains("stream pair: made"), "{r}");
    let mut buf = [0u8; 16];
    let got = listener.recv(&mut buf);
    assert!(
        got.as_ref().is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the socket outside received {got:?}"
    );
}

/// A descriptor the harness inherited (a file open for writing, not close-on-exec, as a parent
/// process may leave one) reaches no command: writing to it through `/proc/self/fd` fails, and
/// the file stays empty.
#[test]
fn an_inherited_descriptor_reaches_no_command() {
    use std::os::fd::AsRawFd;
    let ws = tempfile::tempdir().unwrap();
    let outside = outside_dir();
    let victim =
        fs::OpenOptions::new().create(true).append(true).open(outside.path().join("victim")).unwrap();
    rustix::io::fcntl_setfd(&victim, rustix::io::FdFlags::empty()).unwrap();
    let fd = victim.as_raw_fd();
    let (results, _) = run_commands(
        ws.path(),
        &["--sandbox", "off"],
        &[format!(
            "echo leaked > /proc/self/fd/{fd}; echo \"write: $?\"; ls /proc/self/fd | tr '\\n' ' '; echo"
        )],
    );
    drop(victim);
    let r = &results[0];
    assert!(r.contains("write: 1") || r.contains("write: 2"), "{r}");
    assert_eq!(
        fs::read_to_string(outside.path().join("victim")).unwrap(),
        "",
        "the command wrote through it"
    );
    let listed: Vec<&str> =
        r.lines().find(|l| l.starts_with("0 ")).unwrap_or_default().split_whitespace().collect();
    assert_eq!(listed, ["0", "1", "2", "3"], "only stdin, stdout, stderr (and ls's own folder): {r}");
}

/// The kernel's keyrings are closed to commands: a key the test put in the user's keyring is not
/// found, none can be added, and the keyring cannot be looked up (`EPERM` from each call).
#[test]
fn the_keyring_is_closed() {
    if !confined_or_skip("the_keyring_is_closed") {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let source = "#include <errno.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/syscall.h>\n\
        #include <unistd.h>\n\
        int main(int argc, char **argv) {\n\
          long k = syscall(SYS_request_key, \"user\", argv[1], 0, 0);\n\
          printf(\"request_key: %s\\n\", k < 0 ? strerror(errno) : \"found\");\n\
          long a = syscall(SYS_add_key, \"user\", argv[2], \"planted\", 7, -4);\n\
          printf(\"add_key: %s\\n\", a < 0 ? strerror(errno) : \"added\");\n\
          long g = syscall(SYS_keyctl, 0, -4, 0);\n\
          printf(\"keyctl: %s\\n\", g < 0 ? strerror(errno) : \"read\");\n\
          return 0;\n\
        }\n";
    if !compiled(ws.path(), "keys", source, "the_keyring_is_closed") {
        return;
    }
    let victim = std::ffi::CString::new(format!("sbx-victim-{}", std::process::id())).unwrap();
    let planted = std::ffi::CString::new(format!("sbx-planted-{}", std::process::id())).unwrap();
    // SAFETY: add_key with valid C strings and a 6-byte payload, into the user keyring (-4).
    let added = unsafe {
        libc::syscall(libc::SYS_add_key, c"user".as_ptr(), victim.as_ptr(), c"secret".as_ptr(), 6usize, -4i32)
    };
    if added < 0 {
        eprintln!("\n!!! THE KEYRING IS NOT USABLE HERE: the_keyring_is_closed is SKIPPED !!!\n");
        return;
    }
    let (results, _) = run_commands(
        ws.path(),
        &[],
        &[format!("./keys {} {}", victim.to_string_lossy(), planted.to_string_lossy())],
    );
    // SAFETY: keyctl(KEYCTL_UNLINK = 9, key, KEY_SPEC_USER_KEYRING): the test's own key.
    unsafe { libc::syscall(libc::SYS_keyctl, 9i32, added, -4i32) };
    let r = &results[0];
    for call in ["request_key", "add_key", "keyctl"] {
        assert!(r.contains(&format!("{call}: Operation not permitted")), "{call}: {r}");
    }
    // SAFETY: request_key with valid C strings; searching the test's own keyrings.
    let found = unsafe {
        libc::syscall(libc::SYS_request_key, c"user".as_ptr(), planted.as_ptr(), std::ptr::null::<u8>(), 0i32)
    };
    assert!(found < 0, "a command added a key to the user's keyring");
}

/// `/dev/shm` holds other programs' shared memory; a command can neither change a file there
/// nor make one.
#[test]
fn shared_memory_is_not_writable_by_commands() {
    if !confined_or_skip("shared_memory_is_not_writable_by_commands") || !Path::new("/dev/shm").is_dir() {
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let victim = PathBuf::from(format!("/dev/shm/sbx-victim-{}", std::process::id()));
    let made = PathBuf::from(format!("/dev/shm/sbx-made-{}", std::process::id()));
    fs::write(&victim, "keep\n").unwrap();
    let (results, _) = run_commands(
        ws.path(),
        &[],
        // Through a variable: s02's check of dangerous commands refuses a literal write to `/dev/`.
        &[format!(
            "d=/dev/shm; echo changed > $d/{}; echo new > $d/{}; echo done",
            victim.file_name().unwrap_or_default().to_string_lossy(),
            made.file_name().unwrap_or_default().to_string_lossy()
        )],
    );
    let kept = fs::read_to_string(&victim).unwrap();
    let _ = fs::remove_file(&victim);
    let made_exists = made.exists();
    let _ = fs::remove_file(&made);
    assert_eq!(kept, "keep\n", "a command changed a file in /dev/shm: {results:?}");
    assert!(!made_exists, "a command made a file in /dev/shm");
    assert!(results[0].contains("Permission denied"), "{results:?}");
}

/// System V IPC is closed: a segment and a message queue of another program (here the test's,
/// made outside the sandbox) are named by machine-wide ids, which a command could attach to and
/// write or post into. Under the sandbox `shmat` and `msgsnd` fail, and the segment and the
/// queue are as they were.
#[test]
fn system_v_ipc_of_other_programs_is_out_of_reach() {
    if !confined_or_skip("system_v_ipc_of_other_programs_is_out_of_reach") {
        return;
    }
    if !std::process::Command::new("python3")
        .arg("-c")
        .arg("import ctypes")
        .status()
        .is_ok_and(|s| s.success())
    {
        return eprintln!(
            "python3 with ctypes is missing: system_v_ipc_of_other_programs_is_out_of_reach is skipped"
        );
    }
    // SAFETY: plain System V calls on objects this test makes and removes; the segment is
    // mapped only while it is read and written here.
    let (shm, queue) = unsafe {
        let shm = libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o666);
        let queue = libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o666);
        (shm, queue)
    };
    assert!(shm >= 0 && queue >= 0, "the test could not make its segment and queue");
    let read_segment = || unsafe {
        let at = libc::shmat(shm, std::ptr::null(), 0);
        assert_ne!(at as isize, -1, "the test could not attach its own segment");
        let text = std::slice::from_raw_parts(at as *const u8, 5).to_vec();
        libc::shmdt(at);
        text
    };
    let script = "import ctypes, sys\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        libc.shmat.restype = ctypes.c_void_p\n\
        at = libc.shmat(int(sys.argv[1]), None, 0)\n\
        if at in (None, ctypes.c_void_p(-1).value):\n    print('shmat refused', ctypes.get_errno())\n\
        else:\n    ctypes.memmove(at, b'OWNED', 5); print('shmat wrote')\n\
        class Msg(ctypes.Structure):\n    _fields_ = [('kind', ctypes.c_long), ('text', ctypes.c_char * 8)]\n\
        sent = libc.msgsnd(int(sys.argv[2]), ctypes.byref(Msg(1, b'hello')), 8, 0o4000)\n\
        print('msgsnd', 'refused' if sent else 'sent', ctypes.get_errno())\n";
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("ipc.py"), script).unwrap();
    let (results, _) = run_commands(ws.path(), &[], &[format!("python3 ipc.py {shm} {queue}")]);
    let segment = read_segment();
    // SAFETY: as above; `stat` is written by the kernel.
    let queued = unsafe {
        let mut stat: libc::msqid_ds = std::mem::zeroed();
        libc::msgctl(queue, libc::IPC_STAT, &mut stat);
        let queued = stat.msg_qnum;
        libc::shmctl(shm, libc::IPC_RMID, std::ptr::null_mut());
        libc::msgctl(queue, libc::IPC_RMID, std::ptr::null_mut());
        queued
    };
    assert_ne!(segment, b"OWNED", "a command wrote into another program's segment: {results:?}");
    assert_eq!(queued, 0, "a command posted to another program's queue: {results:?}");
    let errno = libc::EPERM;
    assert!(results[0].contains(&format!("shmat refused {errno}")), "{results:?}");
    assert!(results[0].contains(&format!("msgsnd refused {errno}")), "{results:?}");
}

/// `.memory` made a link to the user's `docs` (as `ln -s docs .memory` would, unasked): s09
/// refuses it with a line that says what to do, stores nothing, and nothing of `docs`
/// (ten files shaped like records, enough to start a consolidation) is deleted or changed.
#[test]
fn a_memory_link_deletes_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let docs = ws.path().join("docs");
    fs::create_dir(&docs).unwrap();
    for i in 0..10 {
        fs::write(
            docs.join(format!("doc-{i}.md")),
            format!("---\nname: doc-{i}\ndescription: d{i}\n---\nmine {i}\n"),
        )
        .unwrap();
    }
    std::os::unix::fs::symlink("docs", ws.path().join(".memory")).unwrap();
    let extraction = json!([{"name": "new-one", "type": "user", "scope": "persistent",
        "description": "a new record", "body": "stored"}]);
    let consolidated = json!([{"name": "only", "type": "user", "description": "one", "body": "all in one"}]);
    let server = MockServer::start(vec![
        reply::text("ok"),
        reply::text(&extraction.to_string()),
        reply::text(&consolidated.to_string()),
    ]);
    let out = chapter("s09", ws.path(), Some(&server.base_url())).args(["-p", "go"]).output().unwrap();
    let text = stdout(&out);
    assert!(text.contains(".memory in the workspace is a symbolic link (to docs)"), "{text}");
    let mut names: Vec<_> = fs::read_dir(&docs).unwrap().flatten().map(|e| e.file_name()).collect();
    names.sort();
    assert_eq!(names.len(), 10, "files of docs were added or deleted: {names:?}");
    for i in 0..10 {
        let body = fs::read_to_string(docs.join(format!("doc-{i}.md"))).unwrap();
        assert!(body.ends_with(&format!("mine {i}\n")), "doc-{i}.md changed: {body}");
    }
}

/// A `.env` planted in a temp folder above the workspace (as a command in a workspace under
/// `/tmp` could write `../.env`) is never read: the requests go to the endpoint the user set,
/// the planted one receives nothing and its key is never sent, and the harness says why. A `.env`
/// above the workspace outside the temp folders is read and named at start.
#[test]
fn a_planted_parent_dotenv_sends_no_key() {
    let parent = tempfile::tempdir().unwrap();
    let ws = parent.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let planted = MockServer::start(vec![reply::text("stolen")]);
    fs::write(
        parent.path().join(".env"),
        format!("ANTHROPIC_BASE_URL={}\nANTHROPIC_API_KEY=sk-planted-1\n", planted.base_url()),
    )
    .unwrap();
    let real = MockServer::start(vec![reply::text("answered")]);
    let out = chapter("s01", &ws, Some(&real.base_url()))
        .env("ANTHROPIC_API_KEY", "sk-real-1")
        .args(["-p", "hi"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("answered"));
    assert!(planted.requests().is_empty(), "the planted .env redirected the session");
    assert!(real.requests().iter().all(|r| !format!("{:?}", r.headers).contains("sk-planted")));
    assert!(
        stderr(&out).contains("was not read: it is in a temp folder that bash commands can write"),
        "{}",
        stderr(&out)
    );

    // Above the workspace, outside the temp folders: read, and named.
    let outside = outside_dir();
    let sub = outside.path().join("ws");
    fs::create_dir(&sub).unwrap();
    fs::write(outside.path().join(".env"), "LCC_UNUSED=1\n").unwrap();
    let server = MockServer::start(vec![reply::text("answered")]);
    let out = chapter("s01", &sub, Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    let err = stderr(&out);
    assert!(err.contains(&format!("config: read {}", outside.path().join(".env").display())), "{err}");
}
