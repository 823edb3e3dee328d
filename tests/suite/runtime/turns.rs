//! Turns from another source than the keyboard, on a terminal shared with the user: an item
//! queued while the REPL waits starts an automatic turn; its output appears above the prompt and
//! the half-typed line comes back intact; it never interleaves with a user turn; and its approver,
//! which must not ask, answers with the turn's text.

use e2e::{MockServer, on_pty, reply, texts, wait_until};
use serde_json::{Value, json};

use super::{PROMPT, REFUSAL, harness, post_to_inbox};

/// The messages of request `i` as the server received it.
fn messages(server: &MockServer, i: usize) -> Vec<Value> {
    server.requests()[i].body["messages"].as_array().cloned().unwrap_or_default()
}

/// The texts of the last message of request `i`.
fn last_texts(server: &MockServer, i: usize) -> Vec<String> {
    messages(server, i).last().map(texts).unwrap_or_default()
}

#[test]
fn an_item_queued_while_the_repl_waits_starts_an_automatic_turn() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("handled the build event"), reply::text("all quiet")]);
    let mut rt = on_pty(harness(ws.path(), &server));
    rt.exp_string(PROMPT).unwrap();

    post_to_inbox(ws.path(), "build finished");
    rt.exp_string("[inbox] [Inbox] build finished").unwrap();
    rt.exp_string("handled the build event").unwrap();
    rt.exp_string(PROMPT).unwrap();
    assert_eq!(last_texts(&server, 0), ["[Inbox] build finished"]);

    // The session goes on with the automatic turn in its history.
    rt.send_line("anything else?").unwrap();
    rt.exp_string("all quiet").unwrap();
    rt.exp_string(PROMPT).unwrap();
    let sent = messages(&server, 1);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(texts(&sent[0]), ["[Inbox] build finished"]);
    assert_eq!(texts(&sent[2]), ["anything else?"]);
    rt.send_line("q").unwrap();
    rt.exp_eof().unwrap();
    server.assert_api_rules();
}

#[test]
fn output_of_an_automatic_turn_appears_above_a_half_typed_line_which_stays_intact() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("automatic answer"), reply::text("whole line heard")]);
    let mut rt = on_pty(harness(ws.path(), &server));
    rt.exp_string(PROMPT).unwrap();
    rt.send("half typed").unwrap();
    rt.flush().unwrap();
    rt.exp_string("half typed").unwrap();

    post_to_inbox(ws.path(), "ping");
    rt.exp_string("[inbox] [Inbox] ping").unwrap();
    rt.exp_string("automatic answer").unwrap();
    // Then the prompt is drawn again, with the text typed so far after it.
    rt.exp_string(&format!("{PROMPT}half typed")).unwrap();
    assert_eq!(server.request_count(), 1, "the half-typed line was not sent");

    rt.send(" and the rest\r").unwrap();
    rt.flush().unwrap();
    rt.exp_string("whole line heard").unwrap();
    rt.exp_string(PROMPT).unwrap();
    assert_eq!(last_texts(&server, 1), ["half typed and the rest"]);
    rt.send_line("q").unwrap();
    rt.exp_eof().unwrap();
}

#[test]
fn on_a_dumb_terminal_the_prompt_comes_back_and_the_typed_line_is_still_sent_whole() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("automatic answer"), reply::text("whole line heard")]);
    let mut cmd = harness(ws.path(), &server);
    cmd.env("TERM", "dumb");
    let options = rexpect::session::Options::new().timeout_ms(Some(30_000)).strip_ansi_escape_codes(false);
    let mut rt = rexpect::session::spawn_with_options(cmd, options).unwrap();
    rt.exp_string(PROMPT).unwrap();
    // (The pseudo-terminal does not echo: the text stays in the kernel's line buffer, unseen.)
    rt.send("half").unwrap();
    rt.flush().unwrap();

    post_to_inbox(ws.path(), "ping");
    let shown = rt.exp_string("automatic answer").unwrap();
    // The automatic turn starts on a line of its own, and the prompt is shown again after it.
    assert!(shown.starts_with("\r\n[inbox] [Inbox] ping"), "{shown:?}");
    rt.exp_string(PROMPT).unwrap();
    // The kernel's line buffer still holds "half": the rest of the line completes it.
    rt.send(" rest\n").unwrap();
    rt.flush().unwrap();
    rt.exp_string("whole line heard").unwrap();
    assert_eq!(last_texts(&server, 1), ["half rest"]);
    rt.send_control('d').unwrap();
    rt.exp_eof().unwrap();
}

#[test]
fn an_item_queued_during_a_user_turn_waits_for_its_end() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_w1", "bash", json!({"command": "cat go; echo released"}))]),
        reply::text("user turn done"),
        reply::text("event handled"),
    ]);
    // The tool blocks reading the named pipe `go` until the test writes to it (a loop would ask).
    let made = std::process::Command::new("mkfifo").arg(ws.path().join("go")).status().unwrap();
    assert!(made.success(), "mkfifo");
    let mut rt = on_pty(harness(ws.path(), &server));
    rt.exp_string(PROMPT).unwrap();
    rt.send_line("wait for go").unwrap();
    rt.exp_string("> bash:").unwrap();

    // Queued while the user's turn runs its tool (the harness takes the file when it queues it).
    post_to_inbox(ws.path(), "meanwhile");
    assert!(wait_until(|| !ws.path().join("inbox.txt").exists()), "the harness took the inbox item");
    std::fs::write(ws.path().join("go"), "").unwrap();
    rt.exp_string("user turn done").unwrap();
    rt.exp_string("[inbox] [Inbox] meanwhile").unwrap();
    rt.exp_string("event handled").unwrap();
    rt.exp_string(PROMPT).unwrap();

    assert_eq!(server.request_count(), 3);
    let user_turn = serde_json::to_string(&messages(&server, 1)).unwrap();
    assert!(!user_turn.contains("meanwhile"), "nothing entered the user's turn: {user_turn}");
    let sent = messages(&server, 2);
    let roles: Vec<&str> = sent.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"], "{sent:?}");
    assert_eq!(texts(&sent[3]), ["user turn done"]);
    assert_eq!(texts(&sent[4]), ["[Inbox] meanwhile"]);
    rt.send_line("q").unwrap();
    rt.exp_eof().unwrap();
    server.assert_api_rules();
}

/// On a terminal, where `Allow? [y/N]` would be asked in a user's turn: the automatic turn's
/// `rm` is refused with the turn's text, nothing is asked, nothing is removed.
#[test]
fn an_automatic_turn_never_asks_and_its_rm_is_refused_with_the_given_text() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("victim.txt"), "keep me").unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_r1", "bash", json!({"command": "rm victim.txt"}))]),
        reply::text("could not remove it"),
    ]);
    let mut rt = on_pty(harness(ws.path(), &server));
    rt.exp_string(PROMPT).unwrap();
    post_to_inbox(ws.path(), "clean up");
    let shown = rt.exp_string("could not remove it").unwrap();
    rt.exp_string(PROMPT).unwrap();
    assert!(!shown.contains("Allow?"), "nobody was asked: {shown:?}");

    let results = e2e::result_batches(&server.requests()[1].body);
    assert_eq!(results[0][0]["content"], REFUSAL);
    assert_eq!(std::fs::read_to_string(ws.path().join("victim.txt")).unwrap(), "keep me");
    rt.send_line("q").unwrap();
    rt.exp_eof().unwrap();
    server.assert_api_rules();
}
