//! End-to-end: the real `s01` binary (the loop and one tool, `bash`) against the loopback
//! Messages API server.

use std::fs;

use e2e::{MockServer, chapter, reply, result_batches, stderr, stdout};
use serde_json::json;

#[test]
fn the_loop_runs_bash_in_the_workspace_until_the_model_answers_with_text() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![
        reply::tool_uses(&[("b1", "bash", json!({"command": "printf 'print(1)\\n' > made.py && pwd"}))]),
        // Two calls in one response, then a tool s01 does not have, then the deny list.
        reply::tool_uses(&[
            ("b2", "bash", json!({"command": "ls"})),
            ("b3", "read_file", json!({"path": "made.py"})),
            ("b4", "bash", json!({"command": "sudo ls"})),
        ]),
        reply::text("Made made.py."),
    ]);
    let out =
        chapter("s01", ws.path(), Some(&server.base_url())).args(["-p", "make a file"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_tool_pairing();
    assert_eq!(fs::read_to_string(ws.path().join("made.py")).unwrap(), "print(1)\n");

    let requests = server.requests();
    let root = ws.path().canonicalize().unwrap();
    let first = &requests[0].body;
    assert_eq!(
        first["system"],
        format!("You are a coding agent at {}. Use bash to solve tasks. Act, don't explain.", root.display())
    );
    assert_eq!(
        e2e::unmarked(&first["tools"]),
        json!([{
            "name": "bash",
            "description": "Run a shell command.",
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"]
            }
        }])
    );
    // Each request carries the whole history: prompt, assistant, results, … (one message per step).
    assert_eq!(
        requests.iter().map(|r| r.body["messages"].as_array().unwrap().len()).collect::<Vec<_>>(),
        [1, 3, 5]
    );

    let batches = result_batches(&requests[2].body);
    assert_eq!(batches.len(), 2, "one user message of tool_results per round");
    assert_eq!(batches[0][0]["content"], root.display().to_string(), "bash runs in the workspace");
    let second: Vec<_> =
        batches[1].iter().map(|b| (b["tool_use_id"].clone(), b["content"].clone())).collect();
    assert_eq!(
        second,
        [
            (json!("b2"), json!("made.py")),
            (json!("b3"), json!("Unknown: read_file")),
            (json!("b4"), json!("Error: Dangerous command blocked")),
        ]
    );
    let text = stdout(&out);
    assert!(text.contains("> bash: ls\nmade.py\n"), "the header shows the command: {text}");
    assert!(text.trim_end().ends_with("Made made.py."), "{text}");
}

#[test]
fn the_demo_makes_hello_py_with_one_bash_call() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s01", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.matches("> bash:").count(), 1, "{text}");
    for needle in [
        "s01 >> Create a file called hello.py that prints \"Hello, World!\"",
        // The header shows the command on one line, its newline as `\n`.
        "> bash: printf 'print(\"Hello, World!\")\\n' > hello.py && cat hello.py\nprint(\"Hello, World!\")",
        "[demo] hello.py after the run:\nprint(\"Hello, World!\")",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert!(!text.contains("Error"), "{text}");
    assert!(fs::read_dir(ws.path()).unwrap().next().is_none(), "the demo leaves the current folder alone");
}
