//! Background commands end to end: started by the model's `bash` call with `run_in_background`,
//! under the same sandbox and supervisor as a foreground one; the exit status arrives later, as an
//! automatic turn; and every way the harness exits ends the command and the child it started,
//! so nothing it would have written later appears.

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use agent_core::test_util::Proc;
use e2e::{MockServer, exits, reply, result_batches, signal, texts, wait_until};
use rustix::process::Signal;
use serde_json::{Value, json};

use super::harness;

/// The `content` of the first `tool_result` in request `i`.
fn first_result(server: &MockServer, i: usize) -> Value {
    result_batches(&server.requests()[i].body)[0][0]["content"].clone()
}

#[test]
fn the_exit_status_of_a_background_command_arrives_later_as_an_automatic_turn() {
    let ws = tempfile::tempdir().unwrap();
    // The command blocks reading the named pipe `go` until the test opens it: a command the
    // permission check lets run unasked (a loop would ask).
    make_fifo(&ws.path().join("go"));
    let command = "cat go; echo finished; exit 3";
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_b1", "bash", json!({"command": command, "run_in_background": true}))]),
        reply::text("started it"),
        reply::text("it failed with 3"),
    ]);
    let mut child = harness(ws.path(), &server)
        .args(["-p", "run it in the background"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The turn ends while the command still waits for `go`: no status is known yet.
    assert!(wait_until(|| server.request_count() == 2), "the turn went on after starting the command");
    let started = first_result(&server, 1);
    assert!(
        started.as_str().is_some_and(|s| s.starts_with("[Background task bg_0001 started]")),
        "{started}"
    );
    std::fs::write(ws.path().join("go"), "").unwrap();

    let status = exits(&mut child, "-p after the background command");
    let out = child.wait_with_output().unwrap();
    assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[background] bg_0001 failed: waking the agent"), "{stdout}");
    assert!(stdout.contains("it failed with 3"), "{stdout}");
    let woken = server.requests()[2].body["messages"].as_array().cloned().unwrap_or_default();
    let last = woken.last().map(texts).unwrap_or_default();
    let note = format!(
        "<task_notification>\n  <task_id>bg_0001</task_id>\n  <status>failed</status>\n  <command>{command}</command>\n  <summary>Error: command exited with status 3\nfinished</summary>\n</task_notification>"
    );
    assert_eq!(last, [note]);
    server.assert_done();
    server.assert_api_rules();
}

/// How the harness is made to exit.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// `kill -TERM`, under `-p`: 143.
    Term,
    /// `kill -HUP` (a closed terminal), under `-p`: 129.
    Hup,
    /// Ctrl-C (SIGINT) under `-p` while it waits for the command: 1.
    Interrupt,
    /// `q` typed at the REPL: 0.
    Quit,
    /// End of input (Ctrl-D) at the REPL: 0.
    EndOfInput,
}

/// A background command that records its pid, starts a child of its own that would write
/// `late.txt` once `go` exists, and waits: ended by each way the harness exits, the command and
/// its child are gone, and after `go` appears, `late.txt` never does.
#[test]
fn every_way_the_harness_exits_ends_a_background_command_and_its_child() {
    let command = "(while [ ! -e go ]; do sleep 0.05; done; echo late > late.txt) & echo $! > child.tmp; \
                   mv child.tmp child.pid; echo $$ > sh.tmp; mv sh.tmp sh.pid; wait";
    for ending in [Ending::Term, Ending::Hup, Ending::Interrupt, Ending::Quit, Ending::EndOfInput] {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path();
        let server = MockServer::start(vec![
            reply::tool_uses(&[("toolu_k1", "bash", json!({"command": command, "run_in_background": true}))]),
            reply::text("it runs"),
        ]);
        let repl = matches!(ending, Ending::Quit | Ending::EndOfInput);
        let mut cmd = harness(ws, &server);
        // The redirections and `mv` would be asked about; the approval is not what is tested here.
        cmd.arg("--yes");
        if !repl {
            cmd.args(["-p", "start it"]);
        }
        let mut child = cmd
            .stdin(if repl { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take();
        if let Some(input) = stdin.as_mut() {
            input.write_all(b"start it\n").unwrap();
        }
        assert!(
            wait_until(|| has_pid(ws, "sh.pid") && has_pid(ws, "child.pid")),
            "{ending:?}: never started"
        );
        assert!(wait_until(|| server.request_count() == 2), "{ending:?}: the turn ended");
        let procs = [Proc::read(&ws.join("sh.pid")).unwrap(), Proc::read(&ws.join("child.pid")).unwrap()];
        assert!(procs.iter().all(Proc::alive), "{ending:?}: {procs:?} run before the harness exits");

        let expected = match ending {
            Ending::Term => {
                signal(&child, Signal::TERM);
                143
            }
            Ending::Hup => {
                signal(&child, Signal::HUP);
                129
            }
            Ending::Interrupt => {
                // A SIGINT that comes between the turn's end and the wait is not seen: send it
                // until the harness answers.
                assert!(
                    wait_until(|| {
                        signal(&child, Signal::INT);
                        child.try_wait().ok().flatten().is_some()
                    }),
                    "Ctrl-C ended -p"
                );
                1
            }
            Ending::Quit => {
                if let Some(input) = stdin.as_mut() {
                    input.write_all(b"q\n").unwrap();
                }
                0
            }
            Ending::EndOfInput => {
                drop(stdin.take());
                0
            }
        };
        let status = exits(&mut child, &format!("{ending:?}"));
        assert_eq!((status.code(), status.signal()), (Some(expected), None), "{ending:?}");
        for p in &procs {
            assert!(wait_until(|| !p.alive()), "{ending:?}: {p:?} outlived the harness");
        }
        // The child is gone, so releasing it changes nothing.
        std::fs::write(ws.join("go"), "").unwrap();
        assert!(!ws.join("late.txt").exists(), "{ending:?}: the child wrote after the harness exited");
    }
}

/// Whether `file` in `ws` holds a pid yet.
fn has_pid(ws: &Path, file: &str) -> bool {
    std::fs::read_to_string(ws.join(file)).is_ok_and(|t| !t.trim().is_empty())
}

/// `/bashes` lists each background command with its state, time and outcome: one still running,
/// one that failed.
#[test]
fn slash_bashes_lists_the_background_commands() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("toolu_l1", "bash", json!({"command": "exit 4", "run_in_background": true})),
            ("toolu_l2", "bash", json!({"command": "cat go", "run_in_background": true})),
        ]),
        reply::text("both started"),
        reply::text("the first one failed"),
        reply::text("the second one is done"),
    ]);
    make_fifo(&ws.path().join("go"));
    let mut rt = e2e::on_pty(harness(ws.path(), &server));
    rt.exp_string(super::PROMPT).unwrap();
    rt.send_line("start two").unwrap();
    rt.exp_string("both started").unwrap();
    rt.exp_string("the first one failed").unwrap();
    rt.exp_string(super::PROMPT).unwrap();
    rt.send_line("/bashes").unwrap();
    rt.exp_string("bg_0001  failed").unwrap();
    rt.exp_string("exit code 4").unwrap();
    rt.exp_string("bg_0002  running").unwrap();
    rt.exp_string("cat go").unwrap();
    rt.exp_string(super::PROMPT).unwrap();
    std::fs::write(ws.path().join("go"), "").unwrap();
    rt.exp_string("the second one is done").unwrap();
    rt.exp_string(super::PROMPT).unwrap();
    rt.send_line("/bashes").unwrap();
    rt.exp_string("bg_0002  completed").unwrap();
    rt.exp_string("exit code 0").unwrap();
    rt.exp_string(super::PROMPT).unwrap();
    rt.send_line("q").unwrap();
    rt.exp_eof().unwrap();
    server.assert_api_rules();
}

/// A named pipe at `path`: a command reading it (`cat go`) waits until the test writes to it.
fn make_fifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}
