//! The hook contract (course §3 "Hooks (from s04)") and the course's hooks, as the loop sees them
//! through `Extension`.

use std::sync::{Arc, Mutex};

use agent_core::approve::{Approver, FixedApprover};
use agent_core::dispatch::{ToolCall, ToolOutcome};
use agent_core::events::{Event, Events};
use agent_core::extension::{Decision, Extension, Shared};
use agent_core::hooks::{
    HookContext, HookError, HookEvent, HookOutcome, HookRegistry, HookSet, ScopedHooks, course_hooks,
    course_hooks_with, log_args,
};
use agent_core::messages::MessagesResponse;
use agent_core::test_util::{text, tool_call};
use agent_core::tools::{self, ToolOptions};
use agent_core::wording::DenyList;
use agent_core::workspace::{Workspace, WorkspaceError};
use serde_json::{Value, json};

/// A sink that collects the lines reported to it, and the lines.
fn capture() -> (Events, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let events: Events = Arc::new(move |event: &Event<'_>| {
        if let Event::Line(_, line) = event {
            sink.lock().map(|mut v| v.push(line.to_string())).unwrap_or(());
        }
    });
    (events, lines)
}

fn taken(lines: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    lines.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
}

/// The call as the loop hands it to the hooks: prepared through the dispatch map of the course's
/// tools, so each tool says what its input is about (an unknown tool says nothing).
fn call(id: &str, name: &str, input: Value) -> ToolCall {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let ws = Workspace::new(dir.path()).unwrap_or_else(|e| panic!("workspace: {e}"));
    tool_call(&tools::all(&ws, &ToolOptions::default()), id, name, input)
}

fn final_response() -> MessagesResponse {
    text("done")
}

/// A registry whose hooks record their name in `order` and answer as given.
fn recording(
    answers: &[(&'static str, Option<&'static str>)],
) -> (HookRegistry, Arc<Mutex<Vec<&'static str>>>) {
    let (printer, _) = capture();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut registry = HookRegistry::new(printer);
    for &(name, answer) in answers {
        let order = order.clone();
        registry.register(HookEvent::PreToolUse, name, move |_| {
            order.lock().map(|mut v| v.push(name)).unwrap_or(());
            Ok(answer.map(str::to_string))
        });
    }
    (registry, order)
}

#[test]
fn event_names_are_the_courses() {
    let names = [HookEvent::UserPromptSubmit, HookEvent::PreToolUse, HookEvent::PostToolUse, HookEvent::Stop]
        .map(|e| e.to_string());
    assert_eq!(names, ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]);
}

#[test]
fn callbacks_run_in_registration_order() {
    let (mut registry, order) = recording(&[("a", None), ("b", None), ("c", None)]);
    assert_eq!(registry.names(HookEvent::PreToolUse), ["a", "b", "c"]);
    assert_eq!(registry.pre_tool_use(&call("t1", "bash", json!({"command": "ls"}))), Decision::Continue);
    assert_eq!(*order.lock().unwrap_or_else(|e| e.into_inner()), ["a", "b", "c"]);
}

#[test]
fn first_value_wins_and_later_callbacks_are_not_called() {
    let (mut registry, order) = recording(&[("a", None), ("b", Some("from b")), ("c", Some("from c"))]);
    let outcome = registry.run(&HookContext::PreToolUse { call: &call("t1", "bash", json!({})) });
    assert_eq!(outcome, HookOutcome::Value { hook: "b".into(), value: "from b".into() });
    assert_eq!(*order.lock().unwrap_or_else(|e| e.into_inner()), ["a", "b"]);
}

#[test]
fn pre_tool_use_value_blocks_the_call() {
    let (mut registry, _) = recording(&[("guard", Some("no bash today"))]);
    assert_eq!(
        registry.pre_tool_use(&call("t1", "bash", json!({"command": "ls"}))),
        Decision::Block("no bash today".into())
    );
}

#[test]
fn callbacks_only_see_their_event() {
    let (mut registry, order) = recording(&[("pre", Some("blocked"))]);
    assert_eq!(registry.user_prompt_submit("hi"), Decision::Continue);
    assert_eq!(registry.stop(&final_response()), None);
    assert!(order.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
}

#[test]
fn a_failing_hook_blocks_the_call_and_later_hooks_do_not_run() {
    let (printer, _) = capture();
    let mut registry = HookRegistry::new(printer);
    registry
        .register(HookEvent::PreToolUse, "audit", |_| Err(HookError::Failed("audit log unwritable".into())));
    registry.register(HookEvent::PreToolUse, "never", |_| panic!("must not be called"));
    assert_eq!(
        registry.pre_tool_use(&call("t1", "bash", json!({"command": "ls"}))),
        Decision::Block("Blocked: hook audit failed: audit log unwritable".into())
    );
}

#[test]
fn a_panicking_hook_blocks_the_call() {
    let (printer, _) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::PreToolUse, "buggy", |_| panic!("index out of range"));
    assert_eq!(
        registry.pre_tool_use(&call("t1", "bash", json!({"command": "ls"}))),
        Decision::Block("Blocked: hook buggy failed: panicked: index out of range".into())
    );
}

#[test]
fn a_failing_prompt_hook_blocks_the_prompt() {
    let (printer, _) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::UserPromptSubmit, "ctx", |_| Err(HookError::Failed("no cwd".into())));
    assert_eq!(registry.user_prompt_submit("hi"), Decision::Block("Blocked: hook ctx failed: no cwd".into()));
}

#[test]
fn a_prompt_hook_value_blocks_the_prompt() {
    let (printer, _) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::UserPromptSubmit, "filter", |ctx| match ctx {
        HookContext::UserPromptSubmit { prompt } if prompt.contains("password") => {
            Ok(Some("Prompt refused: it contains a password".into()))
        }
        _ => Ok(None),
    });
    assert_eq!(registry.user_prompt_submit("list files"), Decision::Continue);
    assert_eq!(
        registry.user_prompt_submit("my password is x"),
        Decision::Block("Prompt refused: it contains a password".into())
    );
}

#[test]
fn stop_value_continues_and_stop_failure_is_reported_without_continuing() {
    let (printer, lines) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::Stop, "verify", |_| Ok(Some("Run the tests before finishing.".into())));
    assert_eq!(registry.stop(&final_response()), Some("Run the tests before finishing.".into()));

    let (printer, _) = capture();
    let mut failing = HookRegistry::new(printer);
    failing.register(HookEvent::Stop, "verify", |_| Err(HookError::Failed("boom".into())));
    assert_eq!(failing.stop(&final_response()), None);
    assert!(taken(&lines).is_empty());
}

#[test]
fn stop_failure_is_printed() {
    let (printer, lines) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::Stop, "verify", |_| panic!("oops"));
    assert_eq!(registry.stop(&final_response()), None);
    assert_eq!(taken(&lines), ["[HOOK] Stop: hook verify failed: panicked: oops"]);
}

#[test]
fn post_tool_use_value_is_a_note_and_failure_is_reported() {
    let (printer, lines) = capture();
    let mut registry = HookRegistry::new(printer);
    registry.register(HookEvent::PostToolUse, "lint", |ctx| match ctx {
        HookContext::PostToolUse { outcome, .. } if outcome.content.contains("warning") => {
            Ok(Some("fix the warning".into()))
        }
        HookContext::PostToolUse { outcome, .. } if outcome.content.contains("crash") => {
            Err(HookError::Failed("linter crashed".into()))
        }
        _ => Ok(None),
    });
    let c = call("t1", "bash", json!({"command": "cargo build"}));
    let mut out = ToolOutcome::ok("warning: unused");
    registry.post_tool_use(&c, &mut out);
    assert_eq!(out.content, "warning: unused\n[Hook note]: fix the warning");
    let mut out = ToolOutcome::ok("crash");
    registry.post_tool_use(&c, &mut out);
    assert_eq!(out.content, "crash");
    assert_eq!(taken(&lines), ["[HOOK] PostToolUse: hook lint failed: linter crashed"]);
    assert_eq!(registry.tool_calls(), 2);
}

/// A workspace for the permission hook: `inside` decides; every path exists, none is a folder.
struct Ws(fn(&str) -> bool);

impl agent_core::permission::Surroundings for Ws {
    fn exists(&self, _: &str) -> bool {
        true
    }
    fn is_dir(&self, _: &str) -> bool {
        false
    }
    fn inside(&self, path: &str) -> bool {
        (self.0)(path)
    }
}

#[test]
fn course_hooks_are_registered_in_order() {
    let (printer, _) = capture();
    let registry = course_hooks(printer, Box::new(FixedApprover(true)), Arc::new(Ws(|_| true)), "/ws".into());
    assert_eq!(registry.names(HookEvent::PreToolUse), ["log", "permission"]);
    assert_eq!(registry.names(HookEvent::UserPromptSubmit), ["context"]);
    assert_eq!(registry.names(HookEvent::PostToolUse), ["large_output"]);
    assert_eq!(registry.names(HookEvent::Stop), ["summary"]);
}

/// An approver that records the questions and answers from a script.
struct Scripted {
    answers: Vec<bool>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Approver for Scripted {
    fn ask(&mut self, question: &str) -> bool {
        self.asked.lock().map(|mut v| v.push(question.to_string())).unwrap_or(());
        if self.answers.is_empty() { false } else { self.answers.remove(0) }
    }
}

#[test]
fn permission_hook_asks_and_honours_the_answer() {
    let (printer, _) = capture();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let approver = Scripted { answers: vec![true, false], asked: asked.clone() };
    let inside = Arc::new(Ws(|p: &str| !p.starts_with('/')));
    let mut registry = course_hooks(printer, Box::new(approver), inside, "/ws".into());
    let rm = call("t1", "bash", json!({"command": "rm x"}));
    assert_eq!(registry.pre_tool_use(&rm), Decision::Continue);
    let read = call("t2", "read_file", json!({"path": "/etc/passwd"}));
    assert_eq!(registry.pre_tool_use(&read), Decision::Continue, "the tool refuses it; no question");
    let env = call("t3", "write_file", json!({"path": ".env", "content": ""}));
    assert_eq!(registry.pre_tool_use(&env), Decision::Block("Permission denied by user".into()));
    assert_eq!(
        *asked.lock().unwrap_or_else(|e| e.into_inner()),
        [
            "Destructive command (deletes files with 'rm'): rm x",
            "Writes a file that steers later runs (which sets the endpoint and key of the next session): .env (write_file)"
        ]
    );
}

#[test]
fn log_args_is_short_and_one_line() {
    assert_eq!(log_args(&call("t", "bash", json!({"command": "ls\n-la"}))), "ls\\n-la");
    assert_eq!(
        log_args(&call("t", "bash", json!({"command": "echo \u{1b}]0;t\u{7}"}))),
        "echo \\x1b]0;t\\x07"
    );
    assert_eq!(log_args(&call("t", "read_file", json!({"path": "src/a.rs"}))), "src/a.rs");
    assert_eq!(log_args(&call("t", "glob", json!({"pattern": "**/*.rs"}))), "**/*.rs");
    assert_eq!(log_args(&call("t", "todo_write", json!({"todos": []}))), r#"{"todos":[]}"#);
    let long = log_args(&call("t", "bash", json!({"command": "x".repeat(200)})));
    assert_eq!(long.chars().count(), 80);
    assert!(long.ends_with('…'));
}

/// A scripted session through the course hooks, as `agent_loop` would drive them: the hook
/// lines and each decision, in order.
#[test]
fn course_hooks_session_log() {
    let (printer, lines) = capture();
    let mut hooks = course_hooks(
        printer.clone(),
        Box::new(FixedApprover(false)),
        Arc::new(Ws(|p: &str| !p.starts_with('/') && !p.contains(".."))),
        "/home/me/project".into(),
    );
    let mut log = Vec::new();
    let mut step = |label: &str, decision: String, lines: &Arc<Mutex<Vec<String>>>| {
        log.push(format!("## {label}"));
        log.extend(taken(lines));
        log.push(format!("=> {decision}"));
    };

    let d = hooks.user_prompt_submit("clean up the build");
    step("prompt", format!("{d:?}"), &lines);

    let ls = call("t1", "bash", json!({"command": "ls -la"}));
    let d = hooks.pre_tool_use(&ls);
    let mut out = ToolOutcome::ok("Cargo.toml\nsrc");
    hooks.post_tool_use(&ls, &mut out);
    step("bash ls -la (allowed, ran)", format!("{d:?}"), &lines);

    let reboot = call("t2", "bash", json!({"command": "sudo reboot"}));
    let d = hooks.pre_tool_use(&reboot);
    step("bash sudo reboot (deny list)", format!("{d:?}"), &lines);

    let rm = call("t3", "bash", json!({"command": "rm x"}));
    let d = hooks.pre_tool_use(&rm);
    step("bash rm x (refused by FixedApprover(false))", format!("{d:?}"), &lines);

    let big = call("t4", "read_file", json!({"path": "big.log"}));
    let d = hooks.pre_tool_use(&big);
    let mut out = ToolOutcome::ok("x".repeat(100_001));
    hooks.post_tool_use(&big, &mut out);
    step("read_file big.log (large output)", format!("{d:?}"), &lines);

    let d = hooks.stop(&final_response());
    step("stop", format!("{d:?}"), &lines);

    insta::assert_snapshot!(log.join("\n"));
}

/// The chapter's choices ([`HookSet`]): the deny list names the matched entry (s08, s09), the
/// context and summary hooks are left out and `compact` passes every hook (s08), and a file
/// tool's path outside the workspace is asked about with its resolved path; a yes lets that one
/// call act there, a no refuses it.
#[test]
fn a_hook_set_picks_the_wording_the_hooks_and_outside_access() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    let map = tools::all(&ws, &ToolOptions::default());
    let (printer, lines) = capture();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let approver = Scripted { answers: vec![true, false], asked: asked.clone() };
    let set = HookSet {
        deny_list: DenyList::Pattern,
        outside: Some(ws.clone()),
        no_prompt_or_stop_hooks: true,
        unhooked_tools: vec!["compact".into()],
    };
    let mut hooks = course_hooks_with(printer, Box::new(approver), Arc::new(ws.clone()), "/ws".into(), set);
    assert!(hooks.names(HookEvent::UserPromptSubmit).is_empty() && hooks.names(HookEvent::Stop).is_empty());
    let sudo = tool_call(&map, "t1", "bash", json!({"command": "sudo ls"}));
    assert_eq!(hooks.pre_tool_use(&sudo), Decision::Block("Permission denied by deny list: sudo".into()));
    let compact = tool_call(&map, "t2", "compact", json!({}));
    assert_eq!(hooks.pre_tool_use(&compact), Decision::Continue);
    hooks.post_tool_use(&compact, &mut ToolOutcome::ok("Compaction requested after this tool batch."));
    assert_eq!(hooks.tool_calls(), 0, "compact is not counted");
    assert_eq!(taken(&lines), ["[HOOK] bash(sudo ls)"], "no log line for compact");

    let target = std::fs::canonicalize(outside.path()).unwrap().join("new/out.txt");
    let path = target.display().to_string();
    let write = tool_call(&map, "t3", "write_file", json!({"path": path, "content": "x"}));
    assert_eq!(hooks.pre_tool_use(&write), Decision::Continue, "answered yes");
    let read = tool_call(&map, "t4", "read_file", json!({"path": "../elsewhere.txt"}));
    assert_eq!(hooks.pre_tool_use(&read), Decision::Block("Permission denied by user".into()));
    let shown = dir.path().canonicalize().unwrap().parent().unwrap().join("elsewhere.txt");
    assert_eq!(
        *asked.lock().unwrap_or_else(|e| e.into_inner()),
        [
            format!("Access outside workspace: {path} (write_file)"),
            format!("Access outside workspace: {} (read_file)", shown.display()),
        ]
    );
    // The read's question dropped the write's unused grant: each serves only its own call.
    assert!(matches!(ws.open_path(&path), Err(WorkspaceError::Escapes(_))));
}

/// A grant serves one call of the path it was asked for; without one the rule refuses.
#[test]
fn an_outside_grant_is_used_once() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    assert!(ws.outside("inside.txt").unwrap().is_none());
    let path = outside.path().join("a/b.txt").display().to_string();
    let pinned = ws.outside(&path).unwrap().unwrap();
    assert_eq!(pinned.shown(), std::fs::canonicalize(outside.path()).unwrap().join("a/b.txt"));
    ws.grant(pinned);
    let granted = ws.open_path(&path).unwrap();
    assert_eq!(granted.given(), path);
    assert!(matches!(ws.open_path(&path), Err(WorkspaceError::Escapes(_))), "used up");
}

/// A registry shared with another agent (course s06's child runs the parent's hooks): through
/// [`ScopedHooks`] the hooks' lines go to that agent's listener and its `Stop` counts its own
/// calls; the owner's lines stay the owner's, and its count covers both.
#[test]
fn a_shared_registry_prints_to_the_agent_that_runs_it() {
    let (parent, parent_lines) = capture();
    let (child, child_lines) = capture();
    let hooks = Shared::new(course_hooks(
        parent,
        Box::new(FixedApprover(true)),
        Arc::new(Ws(|p: &str| !p.starts_with('/'))),
        "/ws".into(),
    ));
    let mut scoped = ScopedHooks::new(hooks.clone(), child);
    let ls = call("c1", "bash", json!({"command": "ls"}));
    assert_eq!(scoped.pre_tool_use(&ls), Decision::Continue);
    scoped.post_tool_use(&ls, &mut ToolOutcome::ok("a.txt"));
    assert_eq!(scoped.stop(&final_response()), None);
    assert_eq!(scoped.tool_calls(), 1);
    assert_eq!(taken(&child_lines), ["[HOOK] bash(ls)", "[HOOK] Stop: session used 1 tool call"]);
    assert!(taken(&parent_lines).is_empty(), "nothing of the child's on the parent's listener");

    let mut owner = hooks.clone();
    let cat = call("p1", "bash", json!({"command": "cat a.txt"}));
    assert_eq!(owner.pre_tool_use(&cat), Decision::Continue);
    owner.post_tool_use(&cat, &mut ToolOutcome::ok("x"));
    assert_eq!(owner.stop(&final_response()), None);
    assert_eq!(taken(&parent_lines), ["[HOOK] bash(cat a.txt)", "[HOOK] Stop: session used 2 tool calls"]);
    assert!(taken(&child_lines).is_empty());
}
