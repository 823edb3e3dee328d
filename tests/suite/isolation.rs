//! Issue 13 end to end: the real `s02` binary, driven by a scripted endpoint (`mock-api`) the way
//! a hostile model would drive it, with no prompt answered. One test per failing input of the
//! issue that runs against the binary: the re-pointed workspace (1), writes outside (3), escapes
//! from the process group (4), SIGTERM and SIGHUP (5), secrets in the environment (6), TIOCSTI
//! (7), the FIFO race (8), read-only and special targets (9), and `kill -9` in the middle of a
//! large write (11). The swap race (2) and CRLF (10) are in `crates/core/tests`.
//!
//! The Landlock test needs a kernel with Landlock (these machines have ABI 7); where it is
//! missing it says so loudly and checks the warning line instead.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_core::test_util::Proc;
use e2e::{
    MockServer, chapter, pty_chapter, reply, result_batches, run_with_stdin, stderr, stdout, wait_until,
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

/// Waits up to 30 s for `child` to exit; kills it and fails the test if it does not.
fn exits(child: &mut Child, what: &str) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: the harness did not exit (it hung)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
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

/// Input 5: SIGTERM, and SIGHUP (a closed terminal), to the harness while a command runs: the
/// command and its background child are ended first, then the harness exits (143, 129).
#[test]
fn sigterm_and_sighup_end_the_running_command_before_the_harness_exits() {
    for (sig, code) in [(Signal::TERM, 143), (Signal::HUP, 129)] {
        let ws = tempfile::tempdir().unwrap();
        let server = MockServer::start(vec![
            reply::tool_uses(&[(
                "toolu_1",
                "bash",
                json!({"command": "sleep 300 & echo $! > bg; echo $$ > leader.tmp; mv leader.tmp leader; sleep 300"}),
            )]),
            reply::text("never reached"),
        ]);
        let mut child = chapter("s02", ws.path(), Some(&server.base_url()))
            .args(["-p", "go"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(wait_until(|| ws.path().join("leader").exists()), "the command never started");
        let (leader, bg) =
            (Proc::read(&ws.path().join("leader")).unwrap(), Proc::read(&ws.path().join("bg")).unwrap());
        assert!(leader.alive() && bg.alive(), "{leader:?} {bg:?} run before the signal");
        signal(&child, sig);
        let status = exits(&mut child, &format!("{sig:?}"));
        assert_eq!((status.code(), status.signal()), (Some(code), None), "{sig:?}");
        for p in [leader, bg] {
            assert!(wait_until(|| !p.alive()), "{sig:?}: process {p:?} outlived the harness");
        }
    }
}

/// Input 6: a command's environment holds none of the harness's secrets, and the rest of the
/// user's environment is there.
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
        .env("VISIBLE_SETTING", "shown")
        .args(["-p", "go"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let env = &tool_results(&server)[0];
    assert!(!env.contains("secret"), "{env}");
    assert!(env.lines().any(|l| l == "VISIBLE_SETTING=shown"), "{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
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
