//! End-to-end: the hooks and the permission check, which s04 adds and s05 keeps, behave the same
//! in both chapters (the real binaries against the loopback Messages API server).

use std::fs;

use e2e::{MockServer, chapter, reply, result_batches, run_with_stdin, stderr, stdout};
use serde_json::json;

/// The chapters that register the course's hooks.
const HOOK_CHAPTERS: [&str; 2] = ["s04", "s05"];

#[test]
fn a_deny_list_command_never_runs() {
    for name in HOOK_CHAPTERS {
        let ws = tempfile::tempdir().unwrap();
        let server = MockServer::start(vec![
            reply::tool_uses(&[("b1", "bash", json!({"command": "touch marker && echo sudo"}))]),
            reply::text("ok"),
        ]);
        let out =
            chapter(name, ws.path(), Some(&server.base_url())).args(["--yes", "-p", "go"]).output().unwrap();
        assert!(out.status.success(), "{name} stderr: {}", stderr(&out));
        assert!(!ws.path().join("marker").exists(), "{name}: the blocked command did not run");
        let batches = result_batches(&server.requests().pop().unwrap().body);
        assert_eq!(batches[0][0]["content"], "Permission denied by deny list", "{name}");
        assert_eq!(batches[0][0]["is_error"], true, "{name}");
        let text = stdout(&out);
        assert!(
            text.contains("[HOOK] bash(touch marker && echo sudo)\n> bash: touch marker && echo sudo\nPermission denied by deny list"),
            "{name}: the log line, then what the model got back:\n{text}"
        );
    }
}

#[test]
fn a_destructive_command_is_refused_without_a_terminal_and_allowed_with_yes() {
    for name in HOOK_CHAPTERS {
        for (flags, survives) in [(vec![], true), (vec!["--no"], true), (vec!["--yes"], false)] {
            let ws = tempfile::tempdir().unwrap();
            fs::write(ws.path().join("victim.txt"), "x").unwrap();
            let server = MockServer::start(vec![
                reply::tool_uses(&[("r1", "bash", json!({"command": "echo hi && rm victim.txt"}))]),
                reply::text("ok"),
            ]);
            let mut cmd = chapter(name, ws.path(), Some(&server.base_url()));
            cmd.args(&flags).args(["-p", "clean up"]);
            let out = run_with_stdin(cmd, "");
            assert!(out.status.success(), "{name} stderr: {}", stderr(&out));
            assert_eq!(ws.path().join("victim.txt").exists(), survives, "{name} {flags:?}");
            let batches = result_batches(&server.requests().pop().unwrap().body);
            let content = batches[0][0]["content"].as_str().unwrap();
            let expected = if survives { "Permission denied by user" } else { "hi" };
            assert!(content.starts_with(expected), "{name} {flags:?}: {content}");
            if flags.is_empty() {
                assert!(
                    stderr(&out).contains("no (no terminal to ask; pass --yes to allow)"),
                    "{name}: {}",
                    stderr(&out)
                );
            }
        }
    }
}

#[test]
fn each_demo_shows_a_refusal_by_the_deny_list_and_a_scripted_allow_with_what_the_model_got_back() {
    for name in HOOK_CHAPTERS {
        let ws = tempfile::tempdir().unwrap();
        let out = chapter(name, ws.path(), None).arg("--demo").output().unwrap();
        assert!(out.status.success(), "{name} stderr: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("[HOOK] bash(sudo pip install mypy)\n> bash: sudo pip install mypy\nPermission denied by deny list\n"),
            "{name}:\n{text}"
        );
        assert_eq!(text.matches("Permission denied").count(), 1, "{name}: one refusal:\n{text}");
        assert!(
            text.contains(
                "[HOOK] bash(rm example/hello.py.bak)\n\
                 [demo] Destructive command (deletes files with 'rm'): rm example/hello.py.bak \
                 Allow? [y/N] y (answered by the demo's script)\n\
                 > bash: rm example/hello.py.bak\n(no output)\n"
            ),
            "{name}: the question, the scripted answer, then what the model got back:\n{text}"
        );
        assert_eq!(text.matches("Allow? [y/N]").count(), 1, "{name}: one question:\n{text}");
    }
}

/// `--allow` gives a scripted run what `a` gives a terminal: under `--no --allow python3`,
/// `python3 x.py` runs unasked and `rm` is still refused, in every chapter with the permission
/// hook (s06's kernel included). A deny-list command stays refused whatever is allowed, and so
/// does a write of `.env` by an allowed program.
#[test]
fn allow_lets_a_scripted_run_use_a_program_and_nothing_more() {
    for name in ["s04", "s05", "s06"] {
        let ws = tempfile::tempdir().unwrap();
        fs::write(ws.path().join("x.py"), "open('ran', 'w').write('ran')\n").unwrap();
        fs::write(ws.path().join("v"), "precious").unwrap();
        let server = MockServer::start(vec![
            reply::tool_uses(&[
                ("p1", "bash", json!({"command": "python3 x.py"})),
                ("r1", "bash", json!({"command": "rm v"})),
                ("s1", "bash", json!({"command": "python3 x.py; echo sudo"})),
                ("e1", "bash", json!({"command": "python3 x.py > .env"})),
            ]),
            reply::text("ok"),
        ]);
        let out = chapter(name, ws.path(), Some(&server.base_url()))
            .args(["--no", "--allow", "python3,cargo test", "-p", "go"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name} stderr: {}", stderr(&out));
        let batches = result_batches(&server.requests().pop().unwrap().body);
        let results: Vec<&str> = batches[0].iter().filter_map(|b| b["content"].as_str()).collect();
        assert_eq!(
            results,
            [
                "(no output)",
                "Permission denied by user",
                "Permission denied by deny list",
                "Permission denied by user"
            ],
            "{name}"
        );
        assert_eq!(fs::read_to_string(ws.path().join("ran")).unwrap(), "ran", "{name}");
        assert_eq!(fs::read_to_string(ws.path().join("v")).unwrap(), "precious", "{name}");
        assert!(!ws.path().join(".env").exists(), "{name}");
        assert!(
            stdout(&out)
                .contains("[permission] not asked: python3 is allowed for this session (/permissions)"),
            "{name}: {}",
            stdout(&out)
        );
    }
}

#[test]
fn a_bad_allow_entry_is_a_clear_error() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s05", ws.path(), None).args(["--allow", "rm;ls", "-p", "go"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--allow takes names such as python3, cargo or 'cargo test'"),
        "{}",
        stderr(&out)
    );
}
