//! End-to-end: the real `s13` binary (the task system and agent teams) against the loopback
//! Messages API server, which routes each request to the agent it comes from by its SYSTEM (the
//! Lead's, or a teammate's `You are 'alice', …`): the demo; the course's teammate tests by name,
//! through what a user sees (the Lead's `[Team events]` turns, the task files, the mailboxes, the
//! processes); claims and edges raced by two processes; SIGTERM with two teammates mid-task
//! (COURSE-s10-s17 §4).

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

#[cfg(target_os = "linux")]
use e2e::wait_until;
use e2e::{MockServer, chapter, exits, reply, result_batches, texts};
use mock_api::Reply;
use serde_json::{Value, json};

/// One scripted answer of one agent: computed from the request it answers.
type Step = Box<dyn Fn(&Value) -> Reply + Send + Sync>;

/// A step that always gives `reply`.
fn fixed(reply: Reply) -> Step {
    Box::new(move |_| reply.clone())
}

/// Who sent a request: `alice` for a teammate's SYSTEM `You are 'alice', …`, else `lead`.
fn agent_of(body: &Value) -> String {
    let system = body["system"].as_str().map(str::to_owned).unwrap_or_else(|| {
        body["system"]
            .as_array()
            .and_then(|b| b.first())
            .and_then(|b| b["text"].as_str())
            .unwrap_or("")
            .to_owned()
    });
    system
        .strip_prefix("You are '")
        .and_then(|rest| rest.split('\'').next())
        .map_or_else(|| "lead".to_owned(), str::to_owned)
}

/// A server that answers each agent from its own script, in order; an agent past its script gets
/// `(nothing more scripted)`.
fn team_server(scripts: Vec<(&str, Vec<Step>)>) -> MockServer {
    let scripts: HashMap<String, VecDeque<Step>> =
        scripts.into_iter().map(|(name, steps)| (name.to_owned(), steps.into())).collect();
    let scripts = Arc::new(Mutex::new(scripts));
    MockServer::start_fn(move |request| {
        let who = agent_of(&request.body);
        let step = scripts.lock().unwrap().get_mut(&who).and_then(VecDeque::pop_front);
        match step {
            Some(step) => step(&request.body),
            None => reply::text("(nothing more scripted)"),
        }
    })
}

/// The request bodies `agent` sent, in order.
fn bodies_of(server: &MockServer, agent: &str) -> Vec<Value> {
    server.requests().into_iter().map(|r| r.body).filter(|b| agent_of(b) == agent).collect()
}

/// The `tool_result` contents of the last user message of `body`.
fn last_results(body: &Value) -> Vec<String> {
    result_batches(body)
        .last()
        .map(|batch| batch.iter().map(|b| b["content"].as_str().unwrap_or_default().to_owned()).collect())
        .unwrap_or_default()
}

/// The texts of the last user message of `body`.
fn last_user_text(body: &Value) -> String {
    body["messages"].as_array().and_then(|m| m.last()).map(|m| texts(m).join("\n")).unwrap_or_default()
}

/// A task file as the course writes it.
fn write_task(root: &Path, id: &str, subject: &str, blocked_by: &[&str]) {
    fs::create_dir_all(root.join(".tasks")).unwrap();
    let task = json!({"id": id, "subject": subject, "description": "", "status": "pending", "owner": null,
                      "blockedBy": blocked_by, "worktree": null});
    fs::write(root.join(format!(".tasks/{id}.json")), serde_json::to_string_pretty(&task).unwrap()).unwrap();
}

/// The task `id` as it is on disk.
fn task(root: &Path, id: &str) -> Value {
    serde_json::from_str(&fs::read_to_string(root.join(format!(".tasks/{id}.json"))).unwrap()).unwrap()
}

/// `s13 -p PROMPT` in `ws` against `server`, its output in `out` (a file beside the workspace).
fn start(ws: &Path, server: &MockServer, prompt: &str, out: &Path) -> Child {
    let log = fs::File::create(out).unwrap();
    let err = log.try_clone().unwrap();
    chapter("s13", ws, Some(&server.base_url()))
        .args(["-p", prompt])
        .env("ANTHROPIC_MAX_RETRIES", "0")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .unwrap()
}

/// [`start`], then its exit status (within 30 s) and output.
fn run(ws: &Path, server: &MockServer, prompt: &str) -> (std::process::ExitStatus, String) {
    let logs = tempfile::tempdir().unwrap();
    let out = logs.path().join("out.txt");
    let mut child = start(ws, server, prompt, &out);
    let status = exits(&mut child, "s13 -p");
    (status, fs::read_to_string(out).unwrap_or_default())
}

/// A Lead step that shuts `teammate` down by the request id the course's protocol makes.
fn shutdown(id: &str, teammate: &str) -> Step {
    fixed(reply::tool_uses(&[(id, "request_shutdown", json!({"teammate": teammate}))]))
}

/// A Lead's answer that spawns one teammate with `input` (the tool's input).
fn spawn(input: Value) -> Step {
    fixed(reply::tool_uses(&[("s1", "spawn_teammate", input)]))
}

/// A Lead that spawns one teammate with `spawn` (the tool's input), ends its turn, and shuts
/// the teammate down at the first wake.
fn lead_spawning(input: Value) -> Vec<Step> {
    let name = input["name"].as_str().unwrap_or_default().to_owned();
    vec![
        spawn(input),
        fixed(reply::text("Spawned.")),
        shutdown("x1", &name),
        fixed(reply::text("Stopping.")),
        fixed(reply::text("Done.")),
    ]
}

#[test]
fn the_demo_runs_offline_and_shows_a_plan_approval_an_auto_claim_and_a_shutdown() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s13", ws.path(), None).arg("--demo").output().unwrap();
    let text = e2e::stdout(&out) + &e2e::stderr(&out);
    assert!(out.status.success(), "{text}");
    for line in [
        "s13 >> Add a greeting module",
        "[teammate] alice spawned as Python developer",
        "[bus] alice -> lead: (plan_approval_request)",
        "[wake: 1 team event(s) -> new turn]",
        "Plan approved (req_",
        "[bus] alice -> lead: (result)",
        "[bus] alice -> lead: (idle_notification) Waiting for more work.",
        "[idle] alice claimed task_543ebdb8: Test the greeting",
        "[teammate] bob spawned as technical writer",
        "[bus] lead -> bob: (shutdown_request)",
        "[bus] bob -> lead: (shutdown_response) Shutdown acknowledged.",
        "-> approved",
        "[teammate] alice finished",
        "[all teammates shut down]",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // The plan came before any file change of alice's.
    let plan = text.find("(plan_approval_request)").unwrap();
    let write = text.find("Wrote 46 bytes to greet.py").unwrap();
    assert!(plan < write, "{text}");
}

#[test]
fn test_spawn_claims_the_initial_task_before_starting_the_thread() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_0000aaaa", "Review authentication", &[]);
    let root = ws.path().to_owned();
    // What alice's first request finds on disk: the task is hers before her loop asks anything.
    let seen = Arc::new(Mutex::new(Value::Null));
    let seen_by_alice = Arc::clone(&seen);
    let server = team_server(vec![
        (
            "lead",
            vec![
                spawn(
                    json!({"name": "alice", "role": "reviewer", "prompt": "Review the assigned Task.", "task_id": "task_0000aaaa"}),
                ),
                fixed(reply::text("alice reviews.")),
                shutdown("x1", "alice"),
                fixed(reply::text("done")),
            ],
        ),
        (
            "alice",
            vec![Box::new(move |_| {
                *seen_by_alice.lock().unwrap() = task(&root, "task_0000aaaa");
                reply::text("Reviewed.")
            })],
        ),
    ]);
    let (status, out) = run(ws.path(), &server, "review auth");
    assert!(status.success(), "{out}");
    let lead = bodies_of(&server, "lead");
    assert!(last_results(&lead[1])[0].contains("task_0000aaaa"), "{:?}", last_results(&lead[1]));
    let claimed = seen.lock().unwrap().clone();
    assert_eq!((claimed["status"].as_str(), claimed["owner"].as_str()), (Some("in_progress"), Some("alice")));
    let first = texts(&bodies_of(&server, "alice")[0]["messages"][0]).join("");
    assert!(
        first.starts_with("Review the assigned Task.\n\n[Assigned task task_0000aaaa] Review authentication"),
        "{first}"
    );
    // Shut down, the task it held (completed or not) is not left in progress with a dead owner.
    assert_ne!(task(ws.path(), "task_0000aaaa")["status"], "in_progress");
}

#[test]
fn test_teammate_emits_result_then_idle_and_shuts_down() {
    let ws = tempfile::tempdir().unwrap();
    // Blocked by a task no one can finish: never claimable, so the idle teammate leaves it alone.
    write_task(ws.path(), "task_0000bbbb", "Blocker", &[]);
    write_task(ws.path(), "task_0000cccc", "Do not claim before mailbox delivery", &["task_0000bbbb"]);
    let server = team_server(vec![
        ("lead", lead_spawning(json!({"name": "alice", "role": "backend", "prompt": "Inspect auth."}))),
        ("alice", vec![fixed(reply::text("Task complete."))]),
    ]);
    let (status, out) = run(ws.path(), &server, "inspect");
    assert!(status.success(), "{out}");
    let lead = bodies_of(&server, "lead");
    assert!(last_results(&lead[1])[0].contains("without an initial Task"), "{:?}", last_results(&lead[1]));
    assert_eq!(
        last_user_text(&lead[2]),
        "[Team events]\n[result] alice: Task complete.\n[idle_notification] alice: Waiting for more work."
    );
    let shutdown_events = last_user_text(&lead[4]);
    assert!(
        shutdown_events.starts_with("[Team events]\n[shutdown_response request_id=req_"),
        "{shutdown_events}"
    );
    assert!(out.contains("-> approved"), "{out}");
    // The teammate saw its ten tools and no worktree tool.
    let tools: Vec<String> = bodies_of(&server, "alice")[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        tools,
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "send_message",
            "submit_plan",
            "list_tasks",
            "claim_task",
            "complete_task"
        ]
    );
    assert_eq!(task(ws.path(), "task_0000cccc")["status"], "pending");
    assert!(out.contains("[all teammates shut down]"), "{out}");
}

#[test]
fn test_plan_gate_blocks_mutating_tools_until_approval() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_0000dddd", "Change the config", &[]);
    let server = team_server(vec![
        (
            "lead",
            vec![
                spawn(
                    json!({"name": "alice", "role": "backend", "prompt": "Set VALUE to 1.", "task_id": "task_0000dddd", "require_plan": true}),
                ),
                fixed(reply::text("alice plans first.")),
                // The wake: approve the plan by the request id the event names.
                Box::new(|body: &Value| {
                    let events = last_user_text(body);
                    let id = events
                        .split("request_id=")
                        .nth(1)
                        .and_then(|r| r.split(']').next())
                        .unwrap_or("none")
                        .to_owned();
                    reply::tool_uses(&[("r1", "review_plan", json!({"request_id": id, "approve": true}))])
                }),
                fixed(reply::text("Approved.")),
                shutdown("x1", "alice"),
                fixed(reply::text("Done.")),
                fixed(reply::text("Bye.")),
            ],
        ),
        (
            "alice",
            vec![
                fixed(reply::tool_uses(&[
                    ("w1", "write_file", json!({"path": "config.py", "content": "VALUE = 1\n"})),
                    ("b1", "bash", json!({"command": "echo hi"})),
                ])),
                fixed(reply::tool_uses(&[(
                    "p1",
                    "submit_plan",
                    json!({"plan": "Write config.py with VALUE = 1."}),
                )])),
                fixed(reply::text("Waiting for approval.")),
                fixed(reply::tool_uses(&[(
                    "w2",
                    "write_file",
                    json!({"path": "config.py", "content": "VALUE = 1\n"}),
                )])),
                fixed(reply::tool_uses(&[("c1", "complete_task", json!({"task_id": "task_0000dddd"}))])),
                fixed(reply::text("config.py written.")),
            ],
        ),
    ]);
    let (status, out) = run(ws.path(), &server, "change the config");
    assert!(status.success(), "{out}");
    let alice = bodies_of(&server, "alice");
    let blocked = last_results(&alice[1]);
    for result in &blocked {
        assert_eq!(
            result,
            "Blocked: plan status is required. Submit or revise the plan and wait for approval before changing the workspace."
        );
    }
    assert!(last_results(&alice[2])[0].starts_with("Plan submitted (req_"), "{:?}", last_results(&alice[2]));
    assert!(
        last_user_text(&alice[3]).starts_with("[Plan approved] Plan approved."),
        "{}",
        last_user_text(&alice[3])
    );
    assert_eq!(last_results(&alice[4]), ["Wrote 10 bytes to config.py"]);
    assert_eq!(fs::read_to_string(ws.path().join("config.py")).unwrap(), "VALUE = 1\n");
    assert_eq!(task(ws.path(), "task_0000dddd")["status"], "completed");
}

#[test]
fn test_s13_teammate_does_not_continue_with_an_empty_tool_result_turn() {
    let ws = tempfile::tempdir().unwrap();
    let empty_tool_use =
        Reply::Message(reply::message(vec![reply::text_block("Nothing to run.")], "tool_use"));
    let server = team_server(vec![
        (
            "lead",
            lead_spawning(json!({"name": "alice", "role": "reviewer", "prompt": "inspect the repository"})),
        ),
        ("alice", vec![fixed(empty_tool_use)]),
    ]);
    let (status, out) = run(ws.path(), &server, "inspect");
    assert!(status.success(), "{out}");
    // One request, then idle: its text went to the Lead, and no empty user turn was sent.
    assert_eq!(bodies_of(&server, "alice").len(), 1);
    assert!(last_user_text(&bodies_of(&server, "lead")[2]).contains("[result] alice: Nothing to run."));
    for body in server.requests().iter().map(|r| &r.body) {
        for message in body["messages"].as_array().unwrap() {
            assert!(!(message["role"] == "user" && message["content"] == json!([])), "{message}");
        }
    }
}

#[test]
fn test_s13_teammate_executes_a_real_tool_call_when_stop_reason_disagrees() {
    let ws = tempfile::tempdir().unwrap();
    let disagreeing = Reply::Message(reply::message(
        vec![reply::tool_use_block("tool_1", "list_tasks", json!({}))],
        "end_turn",
    ));
    let server = team_server(vec![
        (
            "lead",
            lead_spawning(json!({"name": "alice", "role": "reviewer", "prompt": "inspect the repository"})),
        ),
        ("alice", vec![fixed(disagreeing), fixed(reply::text("No tasks yet."))]),
    ]);
    let (status, out) = run(ws.path(), &server, "inspect");
    assert!(status.success(), "{out}");
    let alice = bodies_of(&server, "alice");
    assert_eq!(alice.len(), 2);
    let results = &result_batches(&alice[1])[0];
    assert_eq!(
        (results[0]["tool_use_id"].as_str(), results[0]["content"].as_str()),
        (Some("tool_1"), Some("No tasks. Use create_task to add some."))
    );
}

#[test]
fn test_reserved_teammate_names_do_not_shadow_runtime_identities() {
    let ws = tempfile::tempdir().unwrap();
    let spawn = |id: &str, name: &str| (id.to_owned(), name.to_owned());
    let calls: Vec<(String, String)> = vec![
        spawn("a", "lead"),
        spawn("b", "agent"),
        spawn("c", "Lead"),
        spawn("d", "Agent"),
        spawn("e", "Alice"),
        spawn("f", "alice"),
    ];
    let blocks: Vec<Value> = calls
        .iter()
        .map(|(id, name)| {
            reply::tool_use_block(
                id,
                "spawn_teammate",
                json!({"name": name, "role": "backend", "prompt": "Inspect auth."}),
            )
        })
        .collect();
    let server = team_server(vec![
        (
            "lead",
            vec![
                fixed(Reply::Message(reply::message(blocks, "tool_use"))),
                fixed(reply::text("Checked.")),
                shutdown("x1", "Alice"),
                fixed(reply::text("Stopping.")),
                fixed(reply::text("Done.")),
            ],
        ),
        ("Alice", vec![fixed(reply::text("Idle."))]),
    ]);
    let (status, out) = run(ws.path(), &server, "names");
    assert!(status.success(), "{out}");
    let results = last_results(&bodies_of(&server, "lead")[1]);
    for (i, name) in ["lead", "agent", "Lead", "Agent"].iter().enumerate() {
        assert_eq!(results[i], format!("Invalid teammate name: '{name}' is reserved by the runtime"));
    }
    assert!(results[4].starts_with("Teammate 'Alice' spawned as backend"), "{results:?}");
    assert_eq!(results[5], "Teammate 'alice' already exists");
    // The Lead's mailbox still works: Alice's events reached it.
    assert!(last_user_text(&bodies_of(&server, "lead")[2]).contains("[result] Alice: Idle."));
}

#[test]
fn test_teammate_exception_releases_runtime_and_task_ownership() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_0000eeee", "Implement auth", &[]);
    let server = team_server(vec![
        (
            "lead",
            vec![
                spawn(json!({"name": "alice", "role": "backend", "prompt": "Claim and begin work."})),
                fixed(reply::text("Spawned.")),
                fixed(reply::text("alice failed; her task is back on the board.")),
            ],
        ),
        (
            "alice",
            vec![
                fixed(reply::tool_uses(&[("c1", "claim_task", json!({"task_id": "task_0000eeee"}))])),
                fixed(reply::error(400, "invalid_request_error", "simulated request failure")),
            ],
        ),
    ]);
    let (status, out) = run(ws.path(), &server, "implement auth");
    assert!(status.success(), "{out}");
    let claimed = &last_results(&bodies_of(&server, "alice")[1])[0];
    assert_eq!(claimed, "Claimed task_0000eeee (Implement auth)");
    let events = last_user_text(&bodies_of(&server, "lead")[2]);
    let lines: Vec<&str> = events.lines().skip(1).collect();
    assert_eq!(lines.len(), 1, "{events}");
    assert!(
        lines[0].starts_with("[error] alice: BadRequestError: ")
            && lines[0].contains("simulated request failure"),
        "{events}"
    );
    let released = task(ws.path(), "task_0000eeee");
    assert_eq!((released["status"].as_str(), released["owner"].clone()), (Some("pending"), Value::Null));
    assert!(out.contains("[teammate] alice finished"), "{out}");
}

#[test]
fn test_idle_claim_is_atomic_across_teammates() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().to_owned();
    let spawn = |name: &str| {
        reply::tool_use_block(
            &format!("s_{name}"),
            "spawn_teammate",
            json!({"name": name, "role": "backend", "prompt": "Wait for work."}),
        )
    };
    // The Lead answers by what it reads, since the two teammates' events may come in one wake
    // or in two: it spawns both, puts one task on the board once they exist, and shuts both
    // down once the task is reported done.
    let lead = move |body: &Value| {
        let last = last_user_text(body);
        let results = last_results(body);
        if results.iter().any(|r| r.contains("spawned as")) {
            write_task(&root, "task_0000ffff", "Refactor auth", &[]);
            return reply::text("A task is on the board.");
        }
        if !results.is_empty() {
            return reply::text("Stopping.");
        }
        if last == "refactor" {
            return Reply::Message(reply::message(vec![spawn("alice"), spawn("bob")], "tool_use"));
        }
        if last.contains("Refactored.") {
            return Reply::Message(reply::message(
                vec![
                    reply::tool_use_block("x1", "request_shutdown", json!({"teammate": "alice"})),
                    reply::tool_use_block("x2", "request_shutdown", json!({"teammate": "bob"})),
                ],
                "tool_use",
            ));
        }
        reply::text("Noted.")
    };
    let server = team_server(vec![
        ("lead", repeating(lead)),
        ("alice", vec![fixed(reply::text("Ready.")), fixed(reply::text("Refactored."))]),
        ("bob", vec![fixed(reply::text("Ready.")), fixed(reply::text("Refactored."))]),
    ]);
    let (status, out) = run(ws.path(), &server, "refactor");
    assert!(status.success(), "{out}");
    let claims: Vec<&str> =
        out.lines().filter(|l| l.contains("[idle] ") && l.contains(" claimed task_0000ffff")).collect();
    assert_eq!(claims.len(), 1, "{out}");
    let winner = if claims[0].contains("alice") { "alice" } else { "bob" };
    assert!(out.contains(&format!("[claim] Refactor auth -> in_progress (owner: {winner})")), "{out}");
    assert_eq!(bodies_of(&server, winner).len(), 2);
    assert_eq!(bodies_of(&server, if winner == "alice" { "bob" } else { "alice" }).len(), 1);
}

/// The same answer, computed by `f`, for every request of an agent.
fn repeating(f: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Vec<Step> {
    let f = Arc::new(f);
    (0..40)
        .map(|_| {
            let f = Arc::clone(&f);
            Box::new(move |body: &Value| f(body)) as Step
        })
        .collect()
}

/// Two processes at once, each answering its own script; their outputs.
fn race(ws: &Path, scripts: [Vec<Reply>; 2]) -> [Vec<String>; 2] {
    let [a, b] = scripts;
    let (sa, sb) = (MockServer::start(a), MockServer::start(b));
    let logs = tempfile::tempdir().unwrap();
    let mut ca = start(ws, &sa, "go", &logs.path().join("a"));
    let mut cb = start(ws, &sb, "go", &logs.path().join("b"));
    assert!(exits(&mut ca, "first s13").success());
    assert!(exits(&mut cb, "second s13").success());
    [last_results(&sa.requests()[1].body), last_results(&sb.requests()[1].body)]
}

#[test]
fn test_task_claim_is_atomic_across_processes() {
    for _ in 0..3 {
        let ws = tempfile::tempdir().unwrap();
        write_task(ws.path(), "task_00001111", "Shared", &[]);
        let claim = || {
            vec![
                reply::tool_uses(&[("c", "claim_task", json!({"task_id": "task_00001111"}))]),
                reply::text("ok"),
            ]
        };
        let results = race(ws.path(), [claim(), claim()]);
        let won = results.iter().filter(|r| r[0].starts_with("Claimed ")).count();
        assert_eq!(won, 1, "{results:?}");
        assert!(
            results
                .iter()
                .any(|r| r[0].contains("is in_progress, cannot claim") || r[0].contains("already owned")),
            "{results:?}"
        );
    }
}

#[test]
fn test_dependency_updates_are_atomic_across_processes() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_0000a001", "A", &[]);
    write_task(ws.path(), "task_0000b002", "B", &[]);
    let edge = |from: &str, to: &str| {
        vec![
            reply::tool_uses(&[("u", "update_task", json!({"task_id": from, "addBlockedBy": [to]}))]),
            reply::text("ok"),
        ]
    };
    let results =
        race(ws.path(), [edge("task_0000a001", "task_0000b002"), edge("task_0000b002", "task_0000a001")]);
    let updated = results.iter().filter(|r| r[0].starts_with("Updated ")).count();
    let cycles = results.iter().filter(|r| r[0].starts_with("Error: Dependency cycle detected")).count();
    assert_eq!((updated, cycles), (1, 1), "{results:?}");
}

/// The processes whose command line holds `needle` (from `/proc`: Linux only).
#[cfg(target_os = "linux")]
fn processes_with(needle: &str) -> Vec<u32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_with_two_teammates_mid_task_leaves_no_process_and_gives_their_tasks_back() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_00002222", "Long job one", &[]);
    write_task(ws.path(), "task_00003333", "Long job two", &[]);
    // Durations no other test uses, to find these commands among the machine's processes.
    let (one, two) = ("sleep 61.37", "sleep 62.71");
    let spawn = |name: &str, id: &str| {
        reply::tool_use_block(
            &format!("s_{name}"),
            "spawn_teammate",
            json!({"name": name, "role": "worker", "prompt": "Run it.", "task_id": id}),
        )
    };
    let server = team_server(vec![
        (
            "lead",
            vec![
                fixed(Reply::Message(reply::message(
                    vec![spawn("alice", "task_00002222"), spawn("bob", "task_00003333")],
                    "tool_use",
                ))),
                fixed(reply::text("Both run.")),
            ],
        ),
        ("alice", vec![fixed(reply::tool_uses(&[("b1", "bash", json!({"command": one}))]))]),
        ("bob", vec![fixed(reply::tool_uses(&[("b2", "bash", json!({"command": two}))]))]),
    ]);
    let logs = tempfile::tempdir().unwrap();
    let out = logs.path().join("out");
    let mut child = start(ws.path(), &server, "run both", &out);
    assert!(
        wait_until(|| !processes_with(one).is_empty() && !processes_with(two).is_empty()),
        "{}",
        fs::read_to_string(&out).unwrap_or_default()
    );
    for id in ["task_00002222", "task_00003333"] {
        assert_eq!(task(ws.path(), id)["status"], "in_progress");
    }
    e2e::signal(&child, rustix::process::Signal::TERM);
    let status = exits(&mut child, "s13 after SIGTERM");
    assert_eq!(status.code(), Some(143), "{}", fs::read_to_string(&out).unwrap_or_default());
    assert!(
        wait_until(|| processes_with(one).is_empty() && processes_with(two).is_empty()),
        "a teammate's command outlived the harness"
    );
    for id in ["task_00002222", "task_00003333"] {
        let t = task(ws.path(), id);
        assert_eq!((t["status"].as_str(), t["owner"].clone()), (Some("pending"), Value::Null), "{t}");
    }
    // Every task file and mailbox line parses.
    for dir in [".tasks", ".mailboxes"] {
        for entry in fs::read_dir(ws.path().join(dir)).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let text = fs::read_to_string(entry.path()).unwrap_or_default();
            if name.ends_with(".json") {
                serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            } else if name.ends_with(".jsonl") {
                for line in text.lines() {
                    serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{name}: {e}"));
                }
            }
        }
    }
}

/// `--help` starts nothing and writes nothing (the course's modules create nothing at import).
#[test]
fn help_creates_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let out = Command::new(e2e::bin("s13")).current_dir(ws.path()).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0);
}

#[test]
fn team_and_inbox_show_the_team_and_q_gives_every_task_back() {
    let ws = tempfile::tempdir().unwrap();
    write_task(ws.path(), "task_0000aaaa", "Review auth", &[]);
    let server = team_server(vec![
        (
            "lead",
            vec![
                spawn(
                    json!({"name": "alice", "role": "reviewer", "prompt": "Review it.", "task_id": "task_0000aaaa"}),
                ),
                fixed(reply::tool_uses(&[(
                    "m1",
                    "send_message",
                    json!({"to": "alice", "content": "Check the tokens too."}),
                )])),
                fixed(reply::text("alice is on it.")),
            ],
        ),
        // alice's model is slow: she is still at work when you look.
        ("alice", vec![fixed(reply::text("Reviewed.").delayed(std::time::Duration::from_secs(60)))]),
    ]);
    let mut s = e2e::pty_chapter("s13", ws.path(), &server.base_url());
    s.exp_string("s13 >> ").unwrap();
    s.send_line("review auth").unwrap();
    s.exp_string("alice is on it.").unwrap();
    s.exp_string("s13 >> ").unwrap();
    s.send_line("/team").unwrap();
    s.exp_string("alice: working  task: task_0000aaaa (Review auth)  cwd: ").unwrap();
    s.send_line("/inbox").unwrap();
    s.exp_string("alice: 1 message(s)").unwrap();
    s.exp_string("[message] lead: Check the tokens too.").unwrap();
    assert_eq!(task(ws.path(), "task_0000aaaa")["owner"], "alice");
    s.send_line("q").unwrap();
    s.exp_string("[teammate] alice finished").unwrap();
    s.exp_eof().unwrap();
    let released = task(ws.path(), "task_0000aaaa");
    assert_eq!((released["status"].as_str(), released["owner"].clone()), (Some("pending"), Value::Null));
}

#[test]
fn a_teammate_is_refused_where_the_lead_would_be_asked() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("notes.txt"), "keep me\n").unwrap();
    write_task(ws.path(), "task_0000aaaa", "Tidy up", &[]);
    let server = team_server(vec![
        (
            "lead",
            lead_spawning(
                json!({"name": "alice", "role": "cleaner", "prompt": "Tidy up.", "task_id": "task_0000aaaa"}),
            ),
        ),
        (
            "alice",
            vec![
                fixed(reply::tool_uses(&[
                    ("b1", "bash", json!({"command": "rm notes.txt"})),
                    ("w1", "write_file", json!({"path": "../outside.txt", "content": "x"})),
                    ("b2", "bash", json!({"command": "sudo ls"})),
                ])),
                fixed(reply::text("I need the Lead for those.")),
            ],
        ),
    ]);
    let (status, out) = run(ws.path(), &server, "tidy");
    assert!(status.success(), "{out}");
    assert_eq!(
        last_results(&bodies_of(&server, "alice")[1]),
        [
            "Permission required: ask Lead to run this command.",
            "Permission required: path is outside the workspace.",
            "Permission denied by deny list: sudo",
        ]
    );
    assert_eq!(fs::read_to_string(ws.path().join("notes.txt")).unwrap(), "keep me\n");
    assert!(!ws.path().parent().unwrap().join("outside.txt").exists());
    assert!(!out.contains("Allow? [y/N]"), "{out}");
}

/// The Lead's `bash` in a task's worktree is judged in the worktree, where it runs: a file
/// only the worktree has (here deleted at the root, kept in the branch) is an existing file
/// there, so overwriting it asks and, refused, keeps its content. Judged at the root, the same
/// command looked like one making a new file, and ran unasked.
#[test]
fn a_command_in_a_worktree_is_judged_where_it_runs() {
    if !e2e::available("git") {
        return eprintln!("git is missing: a_command_in_a_worktree_is_judged_where_it_runs is skipped");
    }
    let ws = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(ws.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    fs::write(ws.path().join("only.txt"), "keep\n").unwrap();
    git(&["add", "only.txt"]);
    git(&["commit", "-qm", "one file"]);
    fs::remove_file(ws.path().join("only.txt")).unwrap();
    write_task(ws.path(), "task_0000aaaa", "Edit in a worktree", &[]);
    let server = team_server(vec![(
        "lead",
        vec![
            fixed(reply::tool_uses(&[(
                "c1",
                "create_worktree",
                json!({"name": "w", "task_id": "task_0000aaaa"}),
            )])),
            fixed(reply::tool_uses(&[("c2", "claim_task", json!({"task_id": "task_0000aaaa"}))])),
            fixed(reply::tool_uses(&[("c3", "bash", json!({"command": "echo gone > only.txt"}))])),
            fixed(reply::text("Done.")),
        ],
    )]);
    let logs = tempfile::tempdir().unwrap();
    let out = logs.path().join("out.txt");
    let log = fs::File::create(&out).unwrap();
    let mut child = chapter("s13", ws.path(), Some(&server.base_url()))
        .args(["--no", "-p", "go"])
        .env("ANTHROPIC_MAX_RETRIES", "0")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let status = exits(&mut child, "s13 --no -p");
    let shown = fs::read_to_string(&out).unwrap_or_default();
    assert!(status.success(), "{shown}");
    let lead = bodies_of(&server, "lead");
    assert_eq!(lead.len(), 4, "{shown}");
    assert_eq!(last_results(&lead[3]), ["Permission denied by user"], "{shown}");
    assert_eq!(fs::read_to_string(ws.path().join(".worktrees/w/only.txt")).unwrap(), "keep\n");
}
