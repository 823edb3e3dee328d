//! End-to-end: the real `s05` binary (hooks, permission check, glob, todo_write) against the
//! loopback Messages API server.

use std::fs;

use e2e::{MockServer, chapter, reply, result_batches, stderr, stdout};
use serde_json::json;

const REMINDER: &str = "<reminder>Update your todos.</reminder>";

#[test]
fn three_glob_rounds_give_three_batches_and_only_the_third_is_reminded() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("a.py"), "").unwrap();
    let glob = |id: &str| reply::tool_uses(&[(id, "glob", json!({"pattern": "**/*.py"}))]);
    let server = MockServer::start(vec![glob("g1"), glob("g2"), glob("g3"), reply::text("done")]);
    let out = chapter("s05", ws.path(), Some(&server.base_url())).args(["-p", "look"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_tool_pairing();
    let batches = result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(batches.len(), 3);
    for (i, batch) in batches.iter().enumerate() {
        let texts: Vec<_> = batch.iter().filter(|b| b["type"] == "text").collect();
        if i < 2 {
            assert!(texts.is_empty(), "batch {} has no text block", i + 1);
        } else {
            assert_eq!(texts, [&json!({"type": "text", "text": REMINDER})]);
            assert_eq!(batch.last().unwrap()["text"], REMINDER, "the reminder comes last");
        }
        assert_eq!(batch[0]["content"], "a.py");
    }
}

#[test]
fn tools_are_in_order_and_hook_lines_are_printed() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("w1", "todo_write", json!({"todos": "[('x',)]"}))]),
        reply::tool_uses(&[(
            "w2",
            "todo_write",
            json!({"todos": "[{'content': 'inspect repo', 'status': 'completed'}, {'content': \"write 'tests'\", 'status': 'IN_PROGRESS'},]"}),
        )]),
        reply::text("planned"),
    ]);
    let out = chapter("s05", ws.path(), Some(&server.base_url())).args(["-p", "plan it"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let requests = server.requests();
    let names: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "glob", "todo_write"]);
    insta::assert_json_snapshot!("s05_tool_schemas", e2e::unmarked(&requests[0].body["tools"]));
    let batches = result_batches(&requests[2].body);
    assert_eq!(batches[0][0]["content"], "Error: todos[0] must be an object");
    assert_eq!(batches[1][0]["content"], "[x] inspect repo\n[>] write 'tests'\n\n(1/2 completed)");
    let text = stdout(&out);
    let root = ws.path().canonicalize().unwrap();
    assert!(text.contains(&format!("[HOOK] UserPromptSubmit: working in {}", root.display())), "{text}");
    assert!(text.contains("## Current Tasks\n[x] inspect repo"), "{text}");
    assert!(text.contains("[HOOK] Stop: session used 2 tool calls"), "{text}");
}

#[test]
fn python_code_in_todos_is_never_evaluated() {
    let ws = tempfile::tempdir().unwrap();
    let marker = ws.path().join("marker");
    let payload = format!("__import__('pathlib').Path('{}').write_text('x')", marker.display());
    let server = MockServer::start(vec![
        reply::tool_uses(&[("p1", "todo_write", json!({"todos": payload}))]),
        reply::text("ok"),
    ]);
    let out = chapter("s05", ws.path(), Some(&server.base_url())).args(["-p", "x"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!marker.exists());
    let batches = result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(batches[0][0]["content"], "Error: todos must be a list or JSON array string");
}

#[test]
fn the_demo_plans_with_todo_write_and_refactors_hello_py() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s05", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "## Current Tasks\n[>] Read example/hello.py",
        "+ <reminder>Update your todos.</reminder>",
        "(4/4 completed)",
        "[HOOK] Stop: session used 14 tool calls",
        "def add(a: int, b: int) -> int:",
        "if __name__ == \"__main__\":",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("Error:"), "{text}");
}

/// Control characters the terminal must never receive raw: ESC, BEL, C1 CSI and OSC.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars().filter(|c| matches!(c, '\x1b' | '\x07' | '\u{9b}' | '\u{9d}')).collect()
}

#[test]
fn escape_sequences_from_the_model_and_tools_reach_the_terminal_only_as_visible_text() {
    let ws = tempfile::tempdir().unwrap();
    // Streamed in fragments of 3 characters, so escapes are split across text deltas.
    let streamed = |content: Vec<serde_json::Value>, stop: &str| {
        mock_api::Reply::sse(reply::sse_from_message_with(&reply::message(content, stop), 3))
    };
    let title = "\x1b]0;pwned\x07";
    let server = MockServer::start(vec![
        streamed(
            vec![
                reply::text_block(&format!("{title} hi \x1b[2J\u{9b}31m \x1b]52;c;aGk=\x07 \u{202e}txt")),
                reply::tool_use_block(
                    "b1",
                    "bash",
                    json!({"command": r"printf '\033]0;pwned\007 out \033[2J'"}),
                ),
                reply::tool_use_block(
                    "t1",
                    "todo_write",
                    json!({"todos": [{"content": "\x1b[31mred", "status": "pending"}]}),
                ),
                reply::tool_use_block("u1", "\x1b[31mnope", json!({"x": "\x1b]0;t\x07"})),
            ],
            "tool_use",
        ),
        reply::error(400, "invalid_request_error", "bad \x1b]52;c;aGk=\x07 request"),
    ]);
    let out = chapter("s05", ws.path(), Some(&server.base_url())).args(["-p", "go"]).output().unwrap();
    let (o, e) = (stdout(&out), stderr(&out));
    assert_eq!(raw_controls(&o), [] as [char; 0], "stdout: {o:?}");
    assert_eq!(raw_controls(&e), [] as [char; 0], "stderr: {e:?}");
    // What was sent is still shown, as visible escapes.
    assert!(o.contains(r"\x1b]0;pwned\x07 hi \x1b[2J\u{9b}31m"), "stdout: {o}");
    assert!(o.contains(r"\u{202e}txt"), "stdout: {o}");
    assert!(o.contains(r"\x1b]0;pwned\x07 out \x1b[2J"), "the tool preview: {o}");
    assert!(o.contains(r"\x1b[31mred"), "the todo item: {o}");
    assert!(o.contains(r"> \x1b[31mnope:"), "the tool name: {o}");
    assert!(e.contains(r"bad \x1b]52;c;aGk=\x07 request"), "the error line: {e}");
    // The model still receives the raw text.
    let batches = result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(batches[0][0]["content"], "\x1b]0;pwned\x07 out \x1b[2J");
}

/// One case per kind of issue 14, through `s05 --no`: the call is refused and the victim file
/// keeps its content; the harmless forms run.
#[test]
fn every_kind_of_destructive_call_is_refused_under_no_and_its_target_survives() {
    let refused_by_user = "Permission denied by user";
    let cases: &[(&str, &str, serde_json::Value, &str)] = &[
        ("a hidden command word", "bash", json!({"command": "$(echo rm) victim"}), refused_by_user),
        ("a variable in command position", "bash", json!({"command": "X=rm; $X victim"}), refused_by_user),
        ("a glob in command position", "bash", json!({"command": "/bin/r? victim"}), refused_by_user),
        (
            "an interpreter reading code",
            "bash",
            json!({"command": "python3 -c \"import os; os.remove('victim')\""}),
            refused_by_user,
        ),
        ("a shell reading a pipe", "bash", json!({"command": "echo 'rm victim' | sh"}), refused_by_user),
        ("a wrapper", "bash", json!({"command": "echo victim | xargs -i rm {}"}), refused_by_user),
        ("a truncating redirection", "bash", json!({"command": "> victim"}), refused_by_user),
        ("an in-place edit", "bash", json!({"command": "sed -i d victim"}), refused_by_user),
        ("a copy onto the file", "bash", json!({"command": "cp /dev/null victim"}), refused_by_user),
        (
            "system control (deny list)",
            "bash",
            json!({"command": "echo poweroff > victim"}),
            "Permission denied by deny list",
        ),
        ("an array input", "bash", json!(["rm victim"]), "Error: invalid type: sequence, expected an object"),
        (
            "a file tool writing .env",
            "write_file",
            json!({"path": ".env", "content": "ANTHROPIC_BASE_URL=http://evil"}),
            refused_by_user,
        ),
    ];
    for (kind, tool, input, expected) in cases {
        let ws = tempfile::tempdir().unwrap();
        fs::write(ws.path().join("victim"), "precious").unwrap();
        let server =
            MockServer::start(vec![reply::tool_uses(&[("c1", tool, input.clone())]), reply::text("ok")]);
        let out =
            chapter("s05", ws.path(), Some(&server.base_url())).args(["--no", "-p", "go"]).output().unwrap();
        assert!(out.status.success(), "{kind}: stderr: {}", stderr(&out));
        assert_eq!(
            fs::read_to_string(ws.path().join("victim")).unwrap(),
            "precious",
            "{kind}: the victim survives"
        );
        assert!(!ws.path().join(".env").exists(), "{kind}: no .env was written");
        let batches = result_batches(&server.requests().pop().unwrap().body);
        assert_eq!(batches[0][0]["content"], *expected, "{kind}");
    }
}

#[test]
fn harmless_forms_run_under_no() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("file"), "contents").unwrap();
    let commands =
        ["ls 2>/dev/null", "ls > /dev/null 2>&1", "echo \"rm is a word\"", "grep -r contents .", "cat file"];
    let calls: Vec<(String, &str, serde_json::Value)> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("c{i}"), "bash", json!({ "command": c })))
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> =
        calls.iter().map(|(i, n, c)| (i.as_str(), *n, c.clone())).collect();
    let server = MockServer::start(vec![reply::tool_uses(&calls), reply::text("ok")]);
    let out =
        chapter("s05", ws.path(), Some(&server.base_url())).args(["--no", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let batches = result_batches(&server.requests().pop().unwrap().body);
    let results: Vec<&str> = batches[0].iter().filter_map(|b| b["content"].as_str()).collect();
    assert_eq!(results, ["file", "(no output)", "rm is a word", "./file:contents", "contents"]);
}

/// On a real terminal: input that is already waiting when `Allow? [y/N]` appears does not answer
/// it. The test types `y` and Enter while an earlier tool call is still running, which leaves the
/// keystrokes in the terminal's input queue exactly where a `TIOCSTI` injection would (commands run
/// without a controlling terminal, so this is the second layer). The prompt then shows the whole
/// 300-character command, and only the Enter typed after it answers (no).
#[test]
fn keystrokes_waiting_before_the_prompt_do_not_answer_it_and_the_prompt_shows_the_whole_command() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("victim"), "precious").unwrap();
    let padding = "a".repeat(280);
    let command = format!("echo {padding} && rm victim");
    assert!(command.chars().count() >= 290);
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("w1", "bash", json!({"command": "while [ ! -e go ]; do sleep 0.05; done; echo waited"})),
            ("r1", "bash", json!({ "command": command })),
        ]),
        reply::text("all done"),
    ]);
    let mut s05 = e2e::pty_chapter("s05", ws.path(), &server.base_url());
    s05.exp_string("s05 >> ").unwrap();
    s05.send_line("clean up").unwrap();
    // The first call is running (its header is shown) and waits for `go`: type ahead now.
    s05.exp_string("> bash:").unwrap();
    s05.send("y\r").unwrap();
    s05.flush().unwrap();
    fs::write(ws.path().join("go"), "").unwrap();
    let before = s05.exp_string("Allow? [y/N]").unwrap();
    let shown: String = before.replace(['\r', '\n'], "");
    assert!(shown.contains(&command), "the whole command is in the prompt: {before:?}");
    s05.send("\r").unwrap();
    s05.flush().unwrap();
    s05.exp_string("all done").unwrap();
    assert_eq!(fs::read_to_string(ws.path().join("victim")).unwrap(), "precious");
    let batches = result_batches(&server.requests().pop().unwrap().body);
    assert_eq!(batches[0][1]["content"], "Permission denied by user");
    s05.send_line("q").unwrap();
    s05.exp_eof().unwrap();
}
