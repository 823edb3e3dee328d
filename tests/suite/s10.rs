//! End-to-end: the real `s10` binary (the s04 kernel and the task system) against the loopback
//! Messages API server. The model builds a task graph in two phases, as the course teaches:
//! every node first, then the edges with the ids the tool results returned (the mock reads them
//! from the request, as a model would); then a blocked claim, a claim, a completion that
//! unblocks, and the files on disk. A second process shows the same graph with `/tasks`.

use std::fs;
use std::path::Path;

use e2e::{MockServer, chapter, reply, run_with_stdin, stderr, stdout};
use serde_json::{Value, json};

const TOOLS: [&str; 11] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "create_task",
    "update_task",
    "list_tasks",
    "get_task",
    "claim_task",
    "complete_task",
];

const SUBJECTS: [&str; 4] = ["Design the schema", "Write the API", "Write the tests", "设计 docs"];

/// The `tool_result` texts of the request's last message, in order.
fn last_results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| match &b["content"] {
            Value::String(s) => s.clone(),
            other => other.as_array().into_iter().flatten().filter_map(|x| x["text"].as_str()).collect(),
        })
        .collect()
}

/// The id in `Created task_x: SUBJECT`, the way the course's test reads it.
fn created_id(result: &str) -> Option<String> {
    let id = result.strip_prefix("Created ")?.split(':').next()?;
    (id.len() == 13 && id.starts_with("task_")).then(|| id.to_owned())
}

#[test]
fn the_model_builds_the_graph_in_two_phases_and_completing_a_task_unblocks_the_next() {
    let ws = tempfile::tempdir().unwrap();
    // The model's side: each reply is chosen from what the request carries, so the ids in the
    // second phase are the ones the first phase's results returned, never guessed.
    let server = MockServer::start_fn(|request| {
        let messages = request.body["messages"].as_array().map_or(0, Vec::len);
        let results = last_results(&request.body);
        let ids: Vec<String> = request.body["messages"][2]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["content"].as_str().and_then(created_id))
            .collect();
        let id = |i: usize| ids.get(i).cloned().unwrap_or_default();
        match messages {
            1 => reply::tool_uses(
                &SUBJECTS
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (["t1", "t2", "t3", "t4"][i], "create_task", json!({"subject": s})))
                    .collect::<Vec<_>>(),
            ),
            3 => reply::text_and_tool_uses(
                "Now the edges.",
                &[
                    ("u1", "update_task", json!({"task_id": id(1), "addBlockedBy": [id(0)]})),
                    ("u2", "update_task", json!({"task_id": id(2), "addBlockedBy": [id(1), id(1)]})),
                    ("u3", "update_task", json!({"task_id": id(0), "addBlockedBy": [id(2)]})),
                ],
            ),
            5 => reply::tool_uses(&[
                ("c1", "claim_task", json!({"task_id": id(1)})),
                ("c2", "claim_task", json!({"task_id": id(0)})),
                ("c3", "get_task", json!({"task_id": id(3)})),
            ]),
            7 => reply::tool_uses(&[("d1", "complete_task", json!({"task_id": id(0)}))]),
            9 => reply::tool_uses(&[("l1", "list_tasks", json!({}))]),
            _ => reply::text(&format!("Done. Last results: {}", results.len())),
        }
    });
    let out = chapter("s10", ws.path(), Some(&server.base_url()))
        .args(["-p", "Plan the release as tasks, then start on what is ready."])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_api_rules();
    let requests = server.requests();
    assert_eq!(requests.len(), 6);

    // The chapter: the kernel's five tools, then the six task tools; the course's SYSTEM.
    assert_eq!(requests[0].tool_names(), TOOLS);
    let root = ws.path().canonicalize().unwrap();
    assert_eq!(
        requests[0].body["system"],
        format!(
            "You are a coding agent at {}. Environment: Unix-like: the bash tool runs the system shell. Use task tools to track dependencies and progress. Create all task nodes first. After create_task returns runtime-generated IDs, use update_task with those exact IDs to add dependencies.",
            root.display()
        )
    );

    // Phase one: four nodes, each with an id the store drew.
    let created = last_results(&requests[1].body);
    let ids: Vec<String> = created.iter().filter_map(|r| created_id(r)).collect();
    assert_eq!(ids.len(), 4, "{created:?}");
    for (result, (id, subject)) in created.iter().zip(ids.iter().zip(SUBJECTS)) {
        assert_eq!(result, &format!("Created {id}: {subject}"));
    }

    // Phase two: edges with those ids; a duplicate counts once; a cycle is refused.
    assert_eq!(
        last_results(&requests[2].body),
        [
            format!("Updated {} blockedBy: {}", ids[1], ids[0]),
            format!("Updated {} blockedBy: {}", ids[2], ids[1]),
            format!("Error: Dependency cycle detected: {} -> {}", ids[0], ids[2]),
        ]
    );

    // A blocked claim, a claim, and a task file in Python's layout (non-ASCII escaped).
    let claims = last_results(&requests[3].body);
    assert_eq!(claims[0], format!("Blocked by: ['{}']", ids[0]));
    assert_eq!(claims[1], format!("Claimed {} (Design the schema)", ids[0]));
    let docs = format!(
        "{{\n  \"id\": \"{}\",\n  \"subject\": \"\\u8bbe\\u8ba1 docs\",\n  \"description\": \"\",\n  \"status\": \"pending\",\n  \"owner\": null,\n  \"blockedBy\": []\n}}",
        ids[3]
    );
    assert_eq!(claims[2], docs);
    assert_eq!(fs::read_to_string(ws.path().join(format!(".tasks/{}.json", ids[3]))).unwrap(), docs);

    // Completing the schema unblocks the API (not the tests, still waiting on the API).
    assert_eq!(
        last_results(&requests[4].body),
        [format!("Completed {} (Design the schema)\nUnblocked: Write the API", ids[0])]
    );
    let list = &last_results(&requests[5].body)[0];
    assert!(list.contains(&format!("[x] {}: Design the schema [completed] [agent]", ids[0])), "{list}");
    assert!(
        list.contains(&format!("[ ] {}: Write the API [pending] (blockedBy: {})", ids[1], ids[0])),
        "{list}"
    );
    assert!(
        list.contains(&format!("[ ] {}: Write the tests [pending] (blockedBy: {})", ids[2], ids[1])),
        "{list}"
    );
    assert_eq!(list.lines().count(), 4);

    // The terminal: the hooks of the kernel and the task tools' own lines.
    let text = stdout(&out);
    for want in [
        "[HOOK] create_task(Design the schema)",
        "  [create] Design the schema",
        "  [claim] Design the schema -> in_progress (owner: agent)",
        "  [complete] Design the schema",
        "  [unblocked] Write the API",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }

    // On disk: four task files, each whole; the schema completed and owned.
    let schema: Value =
        serde_json::from_str(&fs::read_to_string(ws.path().join(format!(".tasks/{}.json", ids[0]))).unwrap())
            .unwrap();
    assert_eq!(schema["status"], "completed");
    assert_eq!(schema["owner"], "agent");
    let files = task_files(ws.path());
    assert_eq!(files.len(), 4, "{files:?}");

    // A second process in the same workspace shows the graph with /tasks.
    let repl = run_with_stdin(chapter("s10", ws.path(), Some(&server.base_url())), "/tasks\nq\n");
    let shown = stdout(&repl);
    assert!(shown.contains(".tasks: 4 tasks: 3 pending, 0 in progress, 1 completed"), "{shown}");
    assert!(
        shown.contains(&format!("[x] {}: Design the schema [completed, owner agent]", ids[0])),
        "{shown}"
    );
    assert!(shown.contains("ready: its dependencies"), "{shown}");
    assert!(shown.contains(&format!("blocked by: {} \"Write the API\" pending", ids[1])), "{shown}");
    assert_eq!(server.requests().len(), 6, "/tasks asks no model");
}

fn task_files(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root.join(".tasks"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("task_") && n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_demo_runs_offline_and_shows_the_two_phases_a_blocked_claim_and_unblocked() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s10", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let order = [
        "Created task_",
        "Updated task_",
        "Blocked by: ['task_",
        "[claim] Design the schema -> in_progress (owner: agent)",
        "Unblocked: Write the API",
        "\"status\": \"completed\"",
    ];
    let mut at = 0;
    for want in order {
        let found =
            text[at..].find(want).unwrap_or_else(|| panic!("{want:?} missing after byte {at} in:\n{text}"));
        at += found + want.len();
    }
}
