//! The REPL on a pseudo-terminal, as a learner types into it: the real `s02` binary with its line
//! editor and Ctrl-C, against the loopback Messages API server. Each step waits for the output it
//! expects (30 s at most); a prompt is sent only after the previous one was answered.

use e2e::{
    MockServer, Reply, chapter, pty_chapter, pty_text, reply, run_with_stdin, stderr, stdout, texts,
    wait_until,
};
use rexpect::session::PtySession;
use serde_json::Value;

const PROMPT: &str = "s02 >> ";

/// The messages of request `i` as the server received it.
fn messages(server: &MockServer, i: usize) -> Vec<Value> {
    server.requests()[i].body["messages"].as_array().cloned().unwrap_or_default()
}

/// Types `q` at a fresh prompt and waits for the process to end.
fn quit(mut session: PtySession) {
    session.send_line("q").unwrap();
    session.exp_eof().unwrap();
}

#[test]
fn a_pasted_cjk_line_with_its_enter_in_the_same_write_is_echoed_whole_and_sent_whole() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("收到")]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(PROMPT).unwrap();

    // One write: the text and its Enter, as a paste, an input method or a fast typist delivers them.
    s02.send("你好，请列出文件\r").unwrap();
    s02.flush().unwrap();
    s02.exp_string(&pty_text("你好，请列出文件")).unwrap();
    s02.exp_string(&pty_text("收到")).unwrap();
    s02.exp_string(PROMPT).unwrap();

    let sent = messages(&server, 0);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["role"], "user");
    assert_eq!(texts(&sent[0]), ["你好，请列出文件"]);
    quit(s02);
}

#[test]
fn ctrl_c_clears_a_half_typed_line_and_on_an_empty_line_says_how_to_quit() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("fine")]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(PROMPT).unwrap();

    s02.send("half typed").unwrap();
    s02.flush().unwrap();
    s02.exp_string("half typed").unwrap();
    s02.send_control('c').unwrap();
    // The line is redrawn empty: the prompt again, and the session is still there.
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("next").unwrap();
    s02.exp_string("fine").unwrap();
    s02.exp_string(PROMPT).unwrap();
    assert_eq!(server.request_count(), 1);
    let sent = messages(&server, 0);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(texts(&sent[0]), ["next"], "the cleared text is not sent");

    s02.send_control('c').unwrap();
    s02.exp_string("to quit, press Ctrl-D or type q").unwrap();
    s02.exp_string(PROMPT).unwrap();
    quit(s02);
}

#[test]
fn ctrl_c_during_a_slow_request_cancels_it_and_the_session_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![Reply::Hang, reply::text("back again")]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(PROMPT).unwrap();

    s02.send_line("slow").unwrap();
    assert!(wait_until(|| server.request_count() == 1), "the first request reached the server");
    s02.send_control('c').unwrap();
    s02.exp_string("interrupted").unwrap();
    s02.exp_string(PROMPT).unwrap();

    s02.send_line("again").unwrap();
    s02.exp_string("back again").unwrap();
    s02.exp_string(PROMPT).unwrap();
    let sent = messages(&server, 1);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        texts(&sent[0]),
        ["slow", "(interrupted by the user)", "again"],
        "the interrupted prompt is marked, not silently merged into the next"
    );
    quit(s02);
}

#[test]
fn slash_history_shows_the_sessions_tool_use_and_tool_result_and_commands_stay_local() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_h1", "bash", serde_json::json!({"command": "echo hi"}))]),
        reply::text("done"),
    ]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("say hi").unwrap();
    s02.exp_string("> bash: echo hi").unwrap();
    s02.exp_string("done").unwrap();
    s02.exp_string(PROMPT).unwrap();

    s02.send_line("/history").unwrap();
    s02.exp_string("4 messages, as the next request sends them:").unwrap();
    s02.exp_string("[0] user").unwrap();
    s02.exp_string(r#"text "say hi""#).unwrap();
    s02.exp_string("[1] assistant").unwrap();
    s02.exp_string(r#"tool_use toolu_h1 bash {"command":"echo hi"}"#).unwrap();
    s02.exp_string("[2] user").unwrap();
    s02.exp_string(r#"tool_result toolu_h1 is_error=false "hi""#).unwrap();
    s02.exp_string("[3] assistant").unwrap();
    s02.exp_string(r#"text "done""#).unwrap();
    s02.exp_string(PROMPT).unwrap();

    s02.send_line("/usage").unwrap();
    s02.exp_string("this session: 2 requests").unwrap();
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("/frobnicate").unwrap();
    s02.exp_string("unknown command /frobnicate").unwrap();
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("/clear").unwrap();
    s02.exp_string("the history is empty").unwrap();
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("/history").unwrap();
    s02.exp_string("0 messages, as").unwrap();
    s02.exp_string(PROMPT).unwrap();
    quit(s02);
    assert_eq!(server.request_count(), 2, "no command reached the model");
}

#[test]
fn a_tool_that_runs_past_a_second_shows_a_spinner_with_its_name_on_the_terminal() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_s1", "bash", serde_json::json!({"command": "sleep 3"}))]),
        reply::text("slept"),
    ]);
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(PROMPT).unwrap();
    s02.send_line("wait a bit").unwrap();
    s02.exp_string("> bash: sleep 3").unwrap();
    // After TOOL_SPINNER_AFTER (1 s) the spinner names the running tool, on stderr, the terminal.
    s02.exp_string(&pty_text("running bash…")).unwrap();
    s02.exp_string("slept").unwrap();
    s02.exp_string(PROMPT).unwrap();
    quit(s02);
    assert_eq!(server.request_count(), 2);
}

/// The permission prompt on a real terminal, for a command padded with 60 line breaks after its
/// `rm`: the command shows on one line with the breaks as one visible mark (`⏎×60`), and the
/// reason is the line just above `Allow? [y/N]`, in view; an invisible character shows as its
/// escape. Answered no, the file survives.
#[test]
fn a_padded_command_shows_on_one_line_with_its_reason_next_to_allow() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("important.txt"), "keep").unwrap();
    let command = format!("rm -f important.txt{}echo cleaning build cache\u{200b}", "\n".repeat(60));
    let server = MockServer::start(vec![
        reply::tool_uses(&[("toolu_p1", "bash", serde_json::json!({ "command": command }))]),
        reply::text("cleaned"),
    ]);
    let mut s05 = pty_chapter("s05", ws.path(), &server.base_url());
    s05.exp_string("s05 >> ").unwrap();
    s05.send_line("clean the build cache").unwrap();
    let before = s05.exp_string("Allow? [y/N]").unwrap();
    let shown = pty_text(
        "rm -f important.txt⏎×60echo cleaning build cache\\u{200b}\r\nDestructive command (deletes files with 'rm')\r\n",
    );
    assert!(before.ends_with(&shown), "the command on one line, then the reason, then Allow?: {before:?}");
    assert!(!before.contains("\r\n\r\n"), "no blank line pushes anything off the screen: {before:?}");
    s05.exp_string("(a: always allow rm this session)").unwrap();
    s05.send("n\r").unwrap();
    s05.flush().unwrap();
    s05.exp_string("cleaned").unwrap();
    s05.exp_string("s05 >> ").unwrap();
    quit_at(s05);
    assert_eq!(std::fs::read_to_string(ws.path().join("important.txt")).unwrap(), "keep");
    let results = e2e::result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(results[0][0]["content"], "Permission denied by user");
}

/// `a` allows the program for the rest of the session: the next `python3 x.py` runs unasked,
/// while `rm` in the same batch still asks; `/permissions` shows the allowance and revokes it,
/// after which `python3` asks again.
#[test]
fn answering_a_allows_the_program_for_the_session_and_permissions_revokes_it() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("x.py"), "open('ran', 'a').write('ran\\n')\n").unwrap();
    std::fs::write(ws.path().join("v"), "precious").unwrap();
    let bash = |id: &str, command: &str| (id.to_owned(), "bash", serde_json::json!({ "command": command }));
    let batch = |calls: Vec<(String, &'static str, serde_json::Value)>| {
        let calls: Vec<(&str, &str, serde_json::Value)> =
            calls.iter().map(|(i, n, c)| (i.as_str(), *n, c.clone())).collect();
        reply::tool_uses(&calls)
    };
    let server = MockServer::start(vec![
        batch(vec![bash("p1", "python3 x.py")]),
        batch(vec![bash("p2", "python3 x.py"), bash("r1", "rm v")]),
        reply::text("first done"),
        batch(vec![bash("p3", "python3 x.py")]),
        reply::text("second done"),
    ]);
    let mut s05 = pty_chapter("s05", ws.path(), &server.base_url());
    s05.exp_string("s05 >> ").unwrap();
    s05.send_line("run it twice").unwrap();
    let asked = s05.exp_string("Allow? [y/N] (a: always allow python3 this session)").unwrap();
    // What is known: python3 is not on the list, so it is unknown, not destructive.
    assert!(
        asked.contains(
            "python3 x.py\r\nUnknown command (runs 'python3', which is not on the list of known programs)"
        ),
        "{asked:?}"
    );
    s05.send("a\r").unwrap();
    s05.flush().unwrap();
    s05.exp_string("[permission] python3 is allowed for the rest of this session").unwrap();
    s05.exp_string("[permission] not asked: python3 is allowed for this session").unwrap();
    let before = s05.exp_string("Allow? [y/N] (a: always allow rm this session)").unwrap();
    assert!(before.contains("rm v\r\nDestructive command (deletes files with 'rm')"), "{before:?}");
    s05.send("n\r").unwrap();
    s05.flush().unwrap();
    s05.exp_string("first done").unwrap();
    s05.exp_string("s05 >> ").unwrap();
    assert_eq!(std::fs::read_to_string(ws.path().join("ran")).unwrap(), "ran\nran\n", "python3 ran twice");
    assert_eq!(std::fs::read_to_string(ws.path().join("v")).unwrap(), "precious", "rm was refused");

    s05.send_line("/permissions").unwrap();
    s05.exp_string("Allowed for this session without asking").unwrap();
    s05.exp_string("python3  (answered a)").unwrap();
    s05.exp_string("s05 >> ").unwrap();
    s05.send_line("/permissions revoke python3").unwrap();
    s05.exp_string("python3 is asked about again.").unwrap();
    s05.exp_string("s05 >> ").unwrap();
    s05.send_line("once more").unwrap();
    s05.exp_string("Allow? [y/N] (a: always allow python3 this session)").unwrap();
    s05.send("n\r").unwrap();
    s05.flush().unwrap();
    s05.exp_string("second done").unwrap();
    s05.exp_string("s05 >> ").unwrap();
    quit_at(s05);
    assert_eq!(std::fs::read_to_string(ws.path().join("ran")).unwrap(), "ran\nran\n", "revoked: refused");
}

/// Types `q` at a prompt already shown and waits for the process to end.
fn quit_at(mut session: PtySession) {
    session.send_line("q").unwrap();
    session.exp_eof().unwrap();
}

#[test]
fn a_dumb_terminal_sends_each_line_and_quits_on_ctrl_d_without_colour() {
    for term in ["dumb", "emacs", "cons25"] {
        let ws = tempfile::tempdir().unwrap();
        let server = MockServer::start(vec![reply::text("heard you")]);
        // No escape code is stripped here, so any colour the chapter wrote would show.
        let options =
            rexpect::session::Options::new().timeout_ms(Some(30_000)).strip_ansi_escape_codes(false);
        let mut cmd = chapter("s02", ws.path(), Some(&server.base_url()));
        cmd.env("TERM", term).env_remove("NO_COLOR");
        let mut s02 = rexpect::session::spawn_with_options(cmd, options).unwrap();
        s02.exp_string(PROMPT).unwrap();
        s02.send_line("hello there").unwrap();
        let before = s02.exp_string("heard you").unwrap_or_else(|e| panic!("TERM={term}: {e}"));
        s02.exp_string(PROMPT).unwrap();
        assert!(wait_until(|| server.request_count() == 1), "TERM={term}: the prompt reached the endpoint");
        assert_eq!(texts(&messages(&server, 0)[0]), ["hello there"], "TERM={term}");
        s02.send_control('d').unwrap();
        s02.exp_eof().unwrap_or_else(|e| panic!("TERM={term}: Ctrl-D quits: {e}"));
        assert!(!before.contains('\u{1b}'), "TERM={term}: no escape codes: {before:?}");
    }
}

#[test]
fn history_shows_a_multi_line_tool_result_as_lines() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[(
            "toolu_m1",
            "bash",
            serde_json::json!({"command": "printf 'first\\nsecond\\n'"}),
        )]),
        reply::text("done"),
    ]);
    let out = run_with_stdin(chapter("s02", ws.path(), Some(&server.base_url())), "go\n/history\nq\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("tool_result toolu_m1 is_error=false (2 lines)\n      | first\n      | second\n"),
        "{text}"
    );
}

#[test]
fn a_piped_session_ends_its_last_line_after_q() {
    let ws = tempfile::tempdir().unwrap();
    let out = run_with_stdin(chapter("s02", ws.path(), Some("http://127.0.0.1:9")), "q\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "s02: Tool Use - four tools added to s01\nEnter a question, press Enter to send. Type q to quit.\n\ns02 >> \n"
    );
}

#[test]
fn clear_empties_the_todo_list_too() {
    let ws = tempfile::tempdir().unwrap();
    let items = serde_json::json!({"items": [{"id": "1", "text": "old plan", "status": "in_progress"}]});
    let server = MockServer::start(vec![reply::tool_uses(&[("t1", "todo", items)]), reply::text("planned")]);
    let out = run_with_stdin(
        chapter("s03", ws.path(), Some(&server.base_url())),
        "plan\n/todos\n/clear\n/todos\nq\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let after_clear = text.split("(a new conversation: the history is empty)").nth(1).unwrap_or_default();
    assert!(text.contains("[>] #1: old plan"), "{text}");
    assert!(after_clear.contains("No todos."), "{text}");
    assert!(!after_clear.contains("old plan"), "{text}");
}

/// The live REPL starts with one line after the banner: the model, the endpoint, the workspace
/// and `/help`. `-p` prints only the answer, so it has no such line.
#[test]
fn the_repl_starts_with_the_model_the_endpoint_the_workspace_and_help() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("one answer")]);
    let root = ws.path().canonicalize().unwrap();
    let line =
        format!("mock-model at {} · workspace {} · /help for commands", server.base_url(), root.display());
    let mut s02 = pty_chapter("s02", ws.path(), &server.base_url());
    s02.exp_string(&pty_text(&format!("Type q to quit.\r\n{line}\r\n"))).unwrap();
    s02.exp_string(PROMPT).unwrap();
    quit(s02);

    let out = chapter("s02", ws.path(), Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "one answer");
    assert!(!stderr(&out).contains("/help for commands"), "{}", stderr(&out));
}

/// `/help` speaks of a todo list only in a chapter that has one (s03 on, its `/todos`).
#[test]
fn help_mentions_a_todo_list_only_where_there_is_one() {
    let ws = tempfile::tempdir().unwrap();
    let out = run_with_stdin(chapter("s02", ws.path(), Some("http://127.0.0.1:9")), "/help\nq\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("/clear      start a new conversation (the history is emptied)\n"), "{text}");
    assert!(!text.contains("todo"), "{text}");
    let out = run_with_stdin(chapter("s03", ws.path(), Some("http://127.0.0.1:9")), "/help\nq\n");
    let text = stdout(&out);
    assert!(text.contains("and so is a todo list") && text.contains("/todos"), "{text}");
}
