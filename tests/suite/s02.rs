//! End-to-end: the real `s02` binary against the loopback Messages API server.

use std::fs;
use std::path::Path;

use e2e::{MockServer, chapter, redacted_bodies, reply, run_with_stdin, stderr, stdout};
use serde_json::{Value, json};

/// Every file below `dir`, with its content, for "nothing outside changed" checks.
fn snapshot_tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn scripted_session_exercises_every_tool_and_pairs_every_result() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.txt"), "outside marker\n").unwrap();
    fs::write(ws.path().join("notes.txt"), "one\ntwo\nthree\nfour\nfive\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.path().join("link.txt")).unwrap();
    let outside_before = snapshot_tree(outside.path());
    let abs_outside = outside.path().join("secret.txt").display().to_string();

    let server = MockServer::start(vec![
        // Two tool calls in one response: bash, and read_file with a limit.
        reply::tool_uses(&[
            ("toolu_01", "bash", json!({"command": "echo hello && echo warn >&2"})),
            ("toolu_02", "read_file", json!({"path": "notes.txt", "limit": 2})),
        ]),
        // write_file into a new subfolder, then edit it (hit) and miss.
        reply::tool_uses(&[
            ("toolu_03", "write_file", json!({"path": "sub/dir/new.txt", "content": "héllo world\n"})),
            (
                "toolu_04",
                "edit_file",
                json!({"path": "sub/dir/new.txt", "old_text": "world", "new_text": "there"}),
            ),
            (
                "toolu_05",
                "edit_file",
                json!({"path": "sub/dir/new.txt", "old_text": "absent", "new_text": "x"}),
            ),
        ]),
        // An unknown tool and a call with a missing argument.
        reply::tool_uses(&[("toolu_06", "fly_to_moon", json!({})), ("toolu_07", "read_file", json!({}))]),
        // Paths escaping the workspace: ../x, an absolute path, a symlink pointing outside.
        reply::tool_uses(&[
            ("toolu_08", "write_file", json!({"path": "../escaped.txt", "content": "x"})),
            ("toolu_09", "read_file", json!({"path": abs_outside})),
            ("toolu_10", "read_file", json!({"path": "link.txt"})),
        ]),
        reply::text("All done."),
    ]);

    let out = chapter("s02", ws.path(), Some(&server.base_url()))
        .args(["-p", "exercise the tools"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("All done."), "{}", stdout(&out));

    server.assert_done();
    server.assert_tool_pairing();
    assert_eq!(fs::read_to_string(ws.path().join("sub/dir/new.txt")).unwrap(), "héllo there\n");
    assert_eq!(snapshot_tree(outside.path()), outside_before, "nothing outside the workspace changed");
    assert!(!ws.path().parent().unwrap().join("escaped.txt").exists());

    let requests = server.requests();
    for r in &requests {
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
    let mut bodies = redacted_bodies(&requests, ws.path());
    let last = bodies.pop().unwrap();
    let last = serde_json::to_string_pretty(&last).unwrap().replace(&abs_outside, "[OUTSIDE]/secret.txt");
    let last: Value = serde_json::from_str(&last).unwrap();
    insta::assert_json_snapshot!("s02_last_request", last);
}

#[test]
fn piped_repl_with_dotenv_holds_a_conversation() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::text("Hello from the loopback server."),
        reply::text("Second answer."),
    ]);
    fs::write(
        ws.path().join(".env"),
        format!("ANTHROPIC_BASE_URL={}\nMODEL_ID=mock-model\n", server.base_url()),
    )
    .unwrap();
    let out = run_with_stdin(chapter("s02", ws.path(), None), "hi\n\n   \nand again\nq\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Hello from the loopback server."), "{text}");
    assert!(text.contains("Second answer."), "{text}");
    assert!(!text.contains('\x1b'), "no ANSI escapes when piped: {text:?}");
    server.assert_done();
    let second = &server.requests()[1].body;
    assert_eq!(second["model"], "mock-model");
    assert_eq!(second["max_tokens"], 8000);
    assert_eq!(
        e2e::unmarked(&second["messages"]),
        json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello from the loopback server."}]},
            {"role": "user", "content": "and again"}
        ])
    );
}

#[test]
fn missing_model_id_is_one_line_and_exit_2() {
    let ws = tempfile::tempdir().unwrap();
    let out =
        chapter("s02", ws.path(), None).env("ANTHROPIC_API_KEY", "k").args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("MODEL_ID"), "{err}");
}

#[test]
fn dotenv_in_a_parent_folder_is_found() {
    // Outside the temp folders: a parent's `.env` inside one is never read.
    let root = agent_core::test_util::outside_dir(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let sub = root.path().join("chapters/s02");
    fs::create_dir_all(&sub).unwrap();
    let server = MockServer::start(vec![reply::text("Found the parent's .env.")]);
    fs::write(
        root.path().join(".env"),
        format!("ANTHROPIC_BASE_URL={}\nMODEL_ID=mock-model\n", server.base_url()),
    )
    .unwrap();
    let out = chapter("s02", &sub, None).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(stdout(&out).contains("Found the parent's .env."), "{}", stdout(&out));
    let named =
        format!("config: read {}, a .env in a folder above this one", root.path().join(".env").display());
    assert!(stderr(&out).contains(&named), "{}", stderr(&out));
    assert_eq!(server.requests()[0].body["model"], "mock-model");
}

#[test]
fn a_missing_model_id_names_the_dotenv_that_was_read() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join(".env"), "ANTHROPIC_API_KEY=k\n").unwrap();
    let out = chapter("s02", ws.path(), None).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let dotenv = ws.path().canonicalize().unwrap().join(".env");
    assert!(err.contains("MODEL_ID is not set: "), "{err}");
    assert!(err.contains(&format!("{} was read and does not set it", dotenv.display())), "{err}");
}

#[test]
fn a_broken_dotenv_is_reported_with_exit_2() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join(".env"), "MODEL_ID='unterminated\n").unwrap();
    let out = chapter("s02", ws.path(), None).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(".env"), "{}", stderr(&out));
}

#[test]
fn unauthorized_prints_the_api_message_and_the_repl_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::error(401, "authentication_error", "invalid x-api-key"),
        reply::text("Still here."),
    ]);
    let out = run_with_stdin(chapter("s02", ws.path(), Some(&server.base_url())), "first\nsecond\n");
    assert!(out.status.success());
    assert!(stderr(&out).contains("invalid x-api-key"), "{}", stderr(&out));
    assert!(stdout(&out).contains("Still here."), "{}", stdout(&out));
    server.assert_done();
}

#[test]
fn unauthorized_under_dash_p_exits_non_zero() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::error(401, "authentication_error", "invalid x-api-key")]);
    let out = chapter("s02", ws.path(), Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("authentication_error: invalid x-api-key"), "{}", stderr(&out));
    server.assert_done();
}

#[test]
fn the_demo_runs_offline_and_every_tool_call_succeeds() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s02", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("> read_file: requirements.txt\nanthropic>=0.25.0"), "{text}");
    assert!(!text.contains("Error:"), "{text}");
    assert!(stderr(&out).contains("REPLAY"), "{}", stderr(&out));
}

#[test]
fn the_demo_says_its_workspace_is_removed_at_exit_and_keep_keeps_it() {
    let ws = tempfile::tempdir().unwrap();
    // The workspace path is the one `[demo] … fresh workspace: PATH` names on stderr.
    let workspace_of = |err: &str| -> std::path::PathBuf {
        let line = err.lines().find(|l| l.contains("fresh workspace: ")).expect("the workspace line");
        line.split("fresh workspace: ").nth(1).unwrap().trim().into()
    };

    let out = chapter("s02", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("the workspace is removed at exit (--keep keeps it)"), "{err}");
    assert!(!workspace_of(&err).exists(), "removed at exit");

    let out = chapter("s02", ws.path(), None).args(["--demo", "--keep"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    let kept = workspace_of(&err);
    assert!(err.contains(&format!("[demo] the workspace stays at {} (--keep)", kept.display())), "{err}");
    assert!(kept.join("requirements.txt").is_file(), "kept with its files: {}", kept.display());
    fs::remove_dir_all(&kept).unwrap();

    let out = chapter("s02", ws.path(), None).args(["--keep", "-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "--keep needs --demo");
}

#[test]
fn an_empty_prompt_an_empty_replay_and_demo_with_other_flags_are_refused_up_front() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("empty.jsonl"), "\n").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["-p", "  "], "-p needs a prompt"),
        (&["--replay", "empty.jsonl", "-p", "hi"], "holds no recorded turns"),
        (&["--demo", "-p", "hi"], "cannot be used with"),
    ];
    for (args, needle) in cases {
        let out = chapter("s02", ws.path(), None).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn an_unreadable_workdir_is_named_at_start_with_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    fs::set_permissions(parent.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let locked = parent.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = chapter("s02", parent.path(), Some("http://127.0.0.1:9"));
    // Root reads any folder, so as root the chapter runs as `nobody`, for whom the folder is locked.
    if rustix::process::geteuid().is_root() {
        let program = cmd.get_program().to_owned();
        let mut wrapped = std::process::Command::new("setpriv");
        wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(program);
        wrapped.current_dir(parent.path()).env("NO_COLOR", "1");
        wrapped.env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9").env("MODEL_ID", "mock-model");
        cmd = wrapped;
    }
    let out = cmd.args(["--workdir", locked.to_str().unwrap(), "-p", "hi"]).output().unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(2), "stdout: {} stderr: {}", stdout(&out), stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("--workdir {}", locked.display())), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(!err.contains("Cannot run sh"), "{err}");
}
