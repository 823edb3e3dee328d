//! What the chapters say and do as the course's newest chapters do: the banner each REPL prints
//! before its first prompt, and a file tool's path outside the workspace, asked about on a real
//! terminal (`Access outside workspace`), acted on when the user says yes, and only ever on the
//! folder the question showed.

use std::fs;
use std::path::Path;

use e2e::{MockServer, one_turn, pty_chapter, pty_text, reply, result_batches, stderr};
use serde_json::{Value, json};

/// Each chapter's title line, as the course's `code.py` prints it (COURSE §0, §4); s03 keeps the
/// older layout's TodoWrite, so its title is ours. The second line is the same in every chapter
/// but s17, which says how to set a goal instead (COURSE-s10-s17 §8.1).
const BANNERS: &[(&str, &str)] = &[
    ("s01", "s01: Agent Loop"),
    ("s02", "s02: Tool Use - four tools added to s01"),
    ("s03", "s03: TodoWrite - plan first, a nag when the plan goes stale"),
    ("s04", "s04: Hooks - extension logic on hooks, loop stays clean"),
    ("s05", "s05: TodoWrite - plan before execution"),
    ("s06", "s06: Subagent - fresh messages, final text returns"),
    ("s07", "s07: Skill Loading - catalog first, full content on demand"),
    ("s08", "s08: Context Compact - archive, reduce, then summarize"),
    ("s09", "s09: Memory - selective knowledge across sessions"),
    ("s10", "s10: Task System - dependencies and task state"),
    ("s11", "s11: Background Tasks - explicit background Bash execution"),
    ("s12", "s12: Cron Scheduler - run prompts on a local schedule"),
    ("s13", "s13: agent teams"),
    ("s14", "s14: MCP tools"),
    ("s15", "s15: integrated harness"),
    ("s16", "s16: workflow runtime"),
    ("s17", "s17: goal loop"),
];

/// The banner's second line for `name`.
fn hint(name: &str) -> &'static str {
    match name {
        "s17" => "Set a condition with /goal <condition>. Type q to quit.",
        _ => "Enter a question, press Enter to send. Type q to quit.",
    }
}

#[test]
fn every_chapter_prints_its_banner_before_the_first_prompt() {
    for (name, title) in BANNERS {
        let ws = tempfile::tempdir().unwrap();
        let server = MockServer::start(vec![]);
        let mut session = pty_chapter(name, ws.path(), &server.base_url());
        let before = session.exp_string(&format!("{name} >> ")).unwrap();
        // Under the banner's two lines, the start line: model, endpoint, workspace, /help.
        let start = format!(
            "mock-model at {} · workspace {} · /help for commands",
            server.base_url(),
            ws.path().canonicalize().unwrap().display()
        );
        let banner = format!("{title}\r\n{}\r\n{start}\r\n\r\n", hint(name));
        // The line editor may start the prompt's line with a carriage return.
        let before = before.trim_end_matches('\r');
        assert!(
            before.ends_with(&pty_text(&banner)),
            "{name}: the banner and the start line, then the prompt: {before:?}"
        );
        session.send_line("q").unwrap();
        session.exp_eof().unwrap();
        assert_eq!(server.request_count(), 0);
    }
}

#[test]
fn one_shot_runs_print_no_banner() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("hi")]);
    let out = one_turn("s06", ws.path(), &server, "hello");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("Enter a question"), "{text}");
}

/// The last request's tool results, in order.
fn results(server: &MockServer) -> Vec<Value> {
    let body = server.requests().pop().map(|r| r.body).unwrap_or_default();
    result_batches(&body).pop().unwrap_or_default()
}

/// A session of `name` on a pseudo-terminal against `server`, whose first reply calls a file tool
/// outside the workspace: `go` is typed, and the session (waiting for the answer) is returned
/// with the text shown before `Allow? [y/N]`.
fn asked(name: &str, ws: &Path, server: &MockServer) -> (rexpect::session::PtySession, String) {
    let mut session = pty_chapter(name, ws, &server.base_url());
    session.exp_string(&format!("{name} >> ")).unwrap();
    session.send_line("go").unwrap();
    let before = session.exp_string("Allow? [y/N]").unwrap();
    (session, before)
}

/// Answers `answer`, waits for the model's last text and the prompt, and quits.
fn answer(mut session: rexpect::session::PtySession, name: &str, answer: &str) {
    session.send(&format!("{answer}\r")).unwrap();
    session.flush().unwrap();
    session.exp_string("done").unwrap();
    session.exp_string(&format!("{name} >> ")).unwrap();
    session.send_line("q").unwrap();
    session.exp_eof().unwrap();
}

#[test]
fn an_outside_write_answered_y_writes_the_file_and_answered_n_is_refused() {
    for (name, reply_with, written) in [("s04", "y", true), ("s06", "n", false)] {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = fs::canonicalize(outside.path()).unwrap().join("notes/out.txt");
        let path = target.display().to_string();
        let server = MockServer::start(vec![
            reply::tool_uses(&[("w1", "write_file", json!({"path": path, "content": "hello outside\n"}))]),
            reply::text("done"),
        ]);
        let (session, before) = asked(name, ws.path(), &server);
        let shown = pty_text(&format!("{path} (write_file)\r\nAccess outside workspace\r\n"));
        assert!(before.ends_with(&shown), "{name}: the resolved path, then the reason: {before:?}");
        answer(session, name, reply_with);
        let result = &results(&server)[0];
        if written {
            assert_eq!(result["content"], format!("Wrote 14 bytes to {path}"), "{name}");
            assert_eq!(fs::read_to_string(&target).unwrap(), "hello outside\n");
        } else {
            assert_eq!(result["content"], "Permission denied by user", "{name}");
            assert!(!target.exists() && !target.parent().unwrap().exists(), "{name}: nothing was made");
        }
    }
}

/// The question shows `OUT/dir/out.txt`; before the answer, `OUT/dir` is renamed away and a
/// symlink to another folder takes its place. The write still lands in the folder that was
/// shown (now renamed), and nothing reaches the link's target.
#[test]
fn a_folder_swapped_for_a_link_after_the_question_does_not_redirect_the_write() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let out = fs::canonicalize(outside.path()).unwrap();
    fs::create_dir_all(out.join("dir")).unwrap();
    fs::create_dir_all(out.join("elsewhere")).unwrap();
    let path = out.join("dir/out.txt").display().to_string();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("w1", "write_file", json!({"path": path, "content": "shown folder\n"}))]),
        reply::text("done"),
    ]);
    let (session, before) = asked("s05", ws.path(), &server);
    assert!(before.contains(&pty_text(&format!("{path} (write_file)"))), "{before:?}");
    fs::rename(out.join("dir"), out.join("dir.real")).unwrap();
    std::os::unix::fs::symlink(out.join("elsewhere"), out.join("dir")).unwrap();
    answer(session, "s05", "y");
    assert_eq!(fs::read_dir(out.join("elsewhere")).unwrap().count(), 0, "nothing reached the link's target");
    assert_eq!(fs::read_to_string(out.join("dir.real/out.txt")).unwrap(), "shown folder\n");
    assert_eq!(results(&server)[0]["content"], format!("Wrote 13 bytes to {path}"));
}

/// The question shows `OUT/data.txt`; before the answer, the file is replaced by a symlink to a
/// secret. Neither a read nor a write follows it: both are refused (the place shown is no longer
/// the file that was asked about), and the secret stays as it was.
#[test]
fn a_file_swapped_for_a_link_after_the_question_is_neither_read_nor_written_through() {
    for (tool, input) in [("read_file", json!({})), ("write_file", json!({"content": "new\n"}))] {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let out = fs::canonicalize(outside.path()).unwrap();
        fs::write(out.join("data.txt"), "plain data\n").unwrap();
        fs::write(out.join("secret.txt"), "SECRET\n").unwrap();
        let path = out.join("data.txt").display().to_string();
        let mut input = input.clone();
        input["path"] = json!(path);
        let server = MockServer::start(vec![reply::tool_uses(&[("c1", tool, input)]), reply::text("done")]);
        let (session, before) = asked("s08", ws.path(), &server);
        assert!(before.contains(&pty_text(&format!("{path} ({tool})"))), "{tool}: {before:?}");
        fs::remove_file(out.join("data.txt")).unwrap();
        std::os::unix::fs::symlink(out.join("secret.txt"), out.join("data.txt")).unwrap();
        answer(session, "s08", "y");
        let result = results(&server)[0]["content"].as_str().unwrap_or_default().to_owned();
        assert_eq!(result, format!("Error: {path} is not a regular file"), "{tool}");
        assert_eq!(fs::read_to_string(out.join("secret.txt")).unwrap(), "SECRET\n", "{tool}");
        assert!(out.join("data.txt").is_symlink(), "{tool}: the link is left as it was");
    }
}

/// `--yes` and `--no` answer the outside question without a terminal; with neither and no
/// terminal the answer is no. An edit outside goes through the same question.
#[test]
fn yes_and_no_flags_answer_the_outside_question() {
    for (flag, allowed) in [(Some("--yes"), true), (Some("--no"), false), (None, false)] {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = fs::canonicalize(outside.path()).unwrap().join("f.txt");
        fs::write(&target, "alpha\n").unwrap();
        let path = target.display().to_string();
        let server = MockServer::start(vec![
            reply::tool_uses(&[
                ("e1", "edit_file", json!({"path": path, "old_text": "alpha", "new_text": "beta"})),
                ("r1", "read_file", json!({"path": path})),
            ]),
            reply::text("done"),
        ]);
        let mut cmd = e2e::chapter("s07", ws.path(), Some(&server.base_url()));
        cmd.args(flag).args(["-p", "go"]);
        let run = cmd.output().unwrap();
        assert!(run.status.success(), "{flag:?}: {}", stderr(&run));
        let contents: Vec<Value> = results(&server).iter().map(|r| r["content"].clone()).collect();
        if allowed {
            assert_eq!(contents, [json!(format!("Edited {path}")), json!("beta")], "{flag:?}");
            assert_eq!(fs::read_to_string(&target).unwrap(), "beta\n");
        } else {
            assert_eq!(contents, [json!("Permission denied by user"), json!("Permission denied by user")]);
            assert_eq!(fs::read_to_string(&target).unwrap(), "alpha\n", "{flag:?}");
        }
    }
}

/// s02 and s03 have no permission hook: a path outside is refused as before, unasked.
#[test]
fn chapters_without_the_permission_hook_still_refuse_outside_paths() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("x.txt");
    let path = target.display().to_string();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("w1", "write_file", json!({"path": path, "content": "x"}))]),
        reply::text("done"),
    ]);
    one_turn("s03", ws.path(), &server, "go");
    assert_eq!(results(&server)[0]["content"], format!("Error: Path escapes workspace: {path}"));
    assert!(!target.exists());
}
