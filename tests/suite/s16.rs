//! End-to-end: the real `s16` binary. `s16 demo` and `s16 resume` print the course's golden
//! output (COURSE-s10-s17 §7.4, captured from the course's `code.py`, the random run id aside);
//! a run the course's `code.py demo` left in `.runtime/` resumes with every call cached, and the
//! journal s16 writes is byte for byte the one the course writes; in the REPL host (s15's), the
//! model calls `Workflow`, last in the pool, and each `agent()` is one tool-free request to the
//! loopback server; a branch that fails while its sibling runs fails the run after the sibling
//! is journalled, and the resume asks the model for the failed branch only (course #570).

use std::fs;
use std::path::Path;
use std::time::Duration;

use e2e::{MockServer, RecordedRequest, Reply, chapter, reply, stderr, stdout};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/s16");

/// The run id the course's `code.py demo` drew for the fixture.
const COURSE_RUN: &str = "wf_review-changes_4cfad01d566c0bc9";

const AGENT_SYSTEM: &str = "You are a focused workflow agent. Complete only the supplied step. Host OS: Unix-like. This workflow agent only responds to its supplied step; it has no direct shell or file tools. Do not claim access to files or results not included in the prompt.";

fn fixture(name: &str) -> String {
    fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

/// `s16 demo` or `s16 resume` in `ws`: its stdout, after checking it exited 0.
fn offline(ws: &Path, command: &str) -> String {
    let out = chapter("s16", ws, None).arg(command).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// `text` with every run id of `review-changes` written `{RUN_ID}`, after checking they are all
/// the same well-formed id; returns it too.
fn without_run_id(text: &str) -> (String, String) {
    let mut ids =
        text.match_indices("wf_review-changes_").map(|(at, p)| &text[at + p.len()..at + p.len() + 16]);
    let id = ids.next().expect("a run id").to_owned();
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
    assert!(ids.all(|other| other == id), "{text}");
    (text.replace(&id, "{RUN_ID}"), format!("wf_review-changes_{id}"))
}

#[test]
fn demo_prints_the_courses_golden_output_and_resume_answers_every_call_from_the_journal() {
    let ws = tempfile::tempdir().unwrap();
    let (demo, run_id) = without_run_id(&offline(ws.path(), "demo"));
    assert_eq!(demo, fixture("golden-demo.txt"));
    assert_eq!(fs::read_to_string(ws.path().join(".runtime/last_run.txt")).unwrap(), run_id);

    let (resumed, resumed_id) = without_run_id(&offline(ws.path(), "resume"));
    assert_eq!(resumed, fixture("golden-resume.txt"));
    assert_eq!(resumed_id, run_id);
    assert!(resumed.contains("status=completed  agents=0  tokens=0"), "{resumed}");
    let journal = fs::read_to_string(ws.path().join(format!(".runtime/{run_id}.journal.jsonl"))).unwrap();
    assert_eq!(journal.lines().count(), 11, "the resume added nothing: {journal}");
}

#[test]
fn resume_with_no_run_says_what_to_do() {
    let ws = tempfile::tempdir().unwrap();
    assert_eq!(offline(ws.path(), "resume"), "nothing to resume; run `s16 demo` first.\n");
    assert!(!ws.path().join(".runtime").exists());
}

#[test]
fn a_run_the_courses_code_py_wrote_resumes_with_every_call_cached() {
    let ws = tempfile::tempdir().unwrap();
    let store = ws.path().join(".runtime");
    fs::create_dir(&store).unwrap();
    for name in ["last_run.txt", &format!("{COURSE_RUN}.json"), &format!("{COURSE_RUN}.journal.jsonl")] {
        fs::write(store.join(name), fixture(&format!("course-demo/{name}"))).unwrap();
    }
    let text = offline(ws.path(), "resume");
    let expected = fixture("golden-resume.txt").replace("wf_review-changes_{RUN_ID}", COURSE_RUN);
    assert_eq!(text, expected);
    assert_eq!(text.matches("status=cached").count(), 11, "{text}");
    assert!(!text.contains("status=done"), "{text}");
}

#[test]
fn the_run_files_s16_writes_are_the_ones_the_course_writes() {
    // The course's `code.py resume` therefore reads them as its own (checked by hand once:
    // `python code.py resume` beside a `.runtime/` that `s16 demo` wrote ends `agents=0  tokens=0`).
    let ws = tempfile::tempdir().unwrap();
    let (_, run_id) = without_run_id(&offline(ws.path(), "demo"));
    let ours =
        |suffix: &str| fs::read_to_string(ws.path().join(format!(".runtime/{run_id}{suffix}"))).unwrap();
    let course = |suffix: &str| fixture(&format!("course-demo/{COURSE_RUN}{suffix}"));
    assert_eq!(ours(".journal.jsonl"), course(".journal.jsonl"));
    assert_eq!(ours(".output.json"), course(".output.json"));
    assert_eq!(ours(".json").replace(&run_id, COURSE_RUN), course(".json"));
}

/// Which kind of request this is: a workflow agent's (its SYSTEM), the loop's (it has tools), or
/// s15's memory calls (neither).
enum Kind {
    Agent(String),
    Loop { results: usize },
    Memory,
}

fn kind(request: &RecordedRequest) -> Kind {
    let body = &request.body;
    if body["system"] == AGENT_SYSTEM {
        return Kind::Agent(body["messages"][0]["content"].as_str().unwrap_or_default().to_owned());
    }
    if body["tools"].as_array().is_some_and(|t| !t.is_empty()) {
        return Kind::Loop { results: body["messages"].to_string().matches("\"tool_result\"").count() };
    }
    Kind::Memory
}

/// A workflow agent's answer to `prompt`, as JSON text: an audit finds one issue, a verifier
/// confirms it.
fn agent_answer(prompt: &str) -> Reply {
    let dimension = ["correctness", "security", "performance", "style"]
        .into_iter()
        .find(|d| prompt.contains(&format!(" {d} ")))
        .unwrap_or("unknown");
    if prompt.starts_with("Review this change context") {
        reply::text(
            &json!({"findings": [{"title": format!("{dimension} issue"), "severity": "high"}]}).to_string(),
        )
    } else {
        reply::text(&format!("```json\n{}\n```", json!({"isReal": true, "reason": "seen in the change"})))
    }
}

fn agents(server: &MockServer) -> Vec<(RecordedRequest, String)> {
    server
        .requests()
        .into_iter()
        .filter_map(|r| match kind(&r) {
            Kind::Agent(prompt) => Some((r, prompt)),
            _ => None,
        })
        .collect()
}

/// The `tool_result` contents of the loop's last request.
fn last_results(server: &MockServer) -> Vec<String> {
    let last = server.requests().into_iter().rfind(|r| matches!(kind(r), Kind::Loop { .. })).unwrap();
    let mut out = Vec::new();
    for message in last.body["messages"].as_array().unwrap() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                out.push(
                    block["content"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| block["content"].to_string()),
                );
            }
        }
    }
    out
}

/// The tools the `s15` binary sends in its first request.
fn s15_pool() -> Vec<String> {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start_fn(|request| match kind(request) {
        Kind::Loop { .. } => reply::text("ok"),
        _ => reply::text("[]"),
    });
    let out = chapter("s15", ws.path(), Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first = server.requests().into_iter().find(|r| matches!(kind(r), Kind::Loop { .. })).unwrap();
    first.tool_names()
}

#[test]
fn the_model_runs_workflow_last_in_the_s15_pool_and_each_agent_is_one_tool_free_request() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start_fn(|request| match kind(request) {
        Kind::Agent(prompt) => agent_answer(&prompt),
        Kind::Loop { results: 0 } => reply::tool_uses(&[("w1", "Workflow", json!({"name": "missing"}))]),
        Kind::Loop { results: 1 } => reply::tool_uses(&[(
            "w2",
            "Workflow",
            json!({"name": "review-changes", "args": {"changes": "x = eval(input())"}}),
        )]),
        Kind::Loop { .. } => reply::text("Four findings confirmed."),
        Kind::Memory => reply::text("[]"),
    });
    let out = chapter("s16", ws.path(), Some(&server.base_url()))
        .args(["-p", "review my change"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    server.assert_api_rules();

    let first = server.requests().into_iter().find(|r| matches!(kind(r), Kind::Loop { .. })).unwrap();
    let names = first.tool_names();
    assert_eq!(names.last().map(String::as_str), Some("Workflow"));
    assert_eq!(names[..names.len() - 1], s15_pool(), "s15's pool, then Workflow");
    assert!(names.contains(&"update_task".to_owned()));
    let results = last_results(&server);
    assert_eq!(results[0], "Error: unknown workflow 'missing'");
    let result: Value = serde_json::from_str(&results[1]).unwrap();
    assert_eq!(result["task"]["status"], "completed");
    assert_eq!(result["result"]["confirmed"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        result["result"]["confirmed"][0],
        json!({"dimension": "correctness", "title": "correctness issue", "severity": "high"})
    );

    let calls = agents(&server);
    assert_eq!(calls.len(), 8, "four audits, four verifiers");
    for (request, prompt) in &calls {
        assert!(request.body.get("tools").is_none(), "{}", request.body);
        assert_eq!(request.body["max_tokens"], 2000);
        assert_eq!(request.body["model"], "mock-model");
        assert!(prompt.contains("Return only one JSON object matching this schema:\n{\""), "{prompt}");
    }
    // The progress lines show as the run goes, and /runs-worthy files are on disk.
    let text = stdout(&out);
    assert!(
        text.contains("progress   workflow_agent   label=audit:style phase=Review status=done"),
        "{text}"
    );
    let run_id = result["task"]["runId"].as_str().unwrap();
    assert!(ws.path().join(format!(".runtime/{run_id}.output.json")).is_file());
}

#[test]
fn a_branch_that_fails_while_its_sibling_runs_fails_the_run_after_it_and_resume_asks_only_for_it() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().to_owned();
    let first_run = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let failing = std::sync::Arc::clone(&first_run);
    let server = MockServer::start_fn(move |request| match kind(request) {
        Kind::Agent(prompt) => {
            let failing = failing.load(std::sync::atomic::Ordering::SeqCst);
            if failing && prompt.starts_with("Review this change context for correctness") {
                reply::error(400, "invalid_request_error", "this audit fails")
            } else if failing && prompt.starts_with("Review this change context for security") {
                // Still running when the correctness audit fails (the result does not depend on it).
                agent_answer(&prompt).delayed(Duration::from_millis(300))
            } else {
                agent_answer(&prompt)
            }
        }
        Kind::Loop { results: 0 } => {
            let resume = fs::read_to_string(root.join(".runtime/last_run.txt")).ok();
            let mut input = json!({"name": "review-changes", "args": {"changes": "x = eval(input())"}});
            if let Some(run_id) = resume {
                input["resume_from_run_id"] = json!(run_id);
            }
            reply::tool_uses(&[("w1", "Workflow", input)])
        }
        Kind::Loop { .. } => reply::text("Done."),
        Kind::Memory => reply::text("[]"),
    });

    let run = |prompt: &str| {
        let out = chapter("s16", ws.path(), Some(&server.base_url())).args(["-p", prompt]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let results = last_results(&server);
        serde_json::from_str::<Value>(results.last().unwrap()).unwrap()
    };
    let failed = run("review");
    assert_eq!(failed["task"]["status"], "failed");
    assert!(failed["result"]["error"].as_str().unwrap().contains("this audit fails"), "{failed}");
    let run_id = failed["task"]["runId"].as_str().unwrap().to_owned();
    let journal = fs::read_to_string(ws.path().join(format!(".runtime/{run_id}.journal.jsonl"))).unwrap();
    // The security audit answered after the failure, and is journalled with its verifier.
    let done: Vec<&Value> =
        failed["task"]["progress"].as_array().unwrap().iter().filter(|p| p["status"] == "done").collect();
    assert_eq!(journal.lines().count(), done.len(), "{journal}");
    assert!(done.iter().any(|p| p["label"] == "audit:security"), "{done:?}");
    assert!(done.iter().any(|p| p["label"] == "verify:security:security issue"), "{done:?}");

    let before = agents(&server).len();
    first_run.store(false, std::sync::atomic::Ordering::SeqCst);
    let resumed = run("resume the review");
    assert_eq!(resumed["task"]["status"], "completed");
    assert_eq!(resumed["launched"]["runId"], run_id.as_str());
    let asked: Vec<String> = agents(&server).into_iter().skip(before).map(|(_, p)| p).collect();
    // The failed audit and the verifier of what it found: nothing of the other branches.
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert!(asked.iter().all(|p| p.contains(" correctness ")), "{asked:#?}");
}

#[test]
fn runs_lists_each_run_with_its_status_agents_and_tokens() {
    let ws = tempfile::tempdir().unwrap();
    let (_, run_id) = without_run_id(&offline(ws.path(), "demo"));
    let server = MockServer::start(vec![]);
    let out = e2e::run_with_stdin(chapter("s16", ws.path(), Some(&server.base_url())), "/runs\nq\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("* {run_id}  review-changes  completed  agents=11  tokens=883")),
        "{text}"
    );
    assert_eq!(server.request_count(), 0);
}
