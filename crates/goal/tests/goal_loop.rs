//! The course's `tests/test_goal_loop.py`, ported by name: the tests of the goal's state, its
//! decision, the evaluator and the transcript. (The tests of the session and the tools run
//! against the chapter, in the e2e suite and the chapter's own tests.)

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_core::error::ApiError;
use agent_core::events::Silent;
use agent_core::extension::ModelHandle;
use agent_core::messages::{Message, UsageTotals};
use agent_core::model::Model;
use agent_core::test_util::{ScriptedModel, text};
use goal::evaluator::{EvaluatorError, PromptGoalEvaluator, parse_json_object};
use goal::{
    Action, CLEAR_ALIASES, GoalCommand, GoalController, GoalEvaluation, GoalEvaluator, GoalStatus,
    MAX_GOAL_LENGTH,
};
use serde_json::json;

/// The calls a [`RecordingEvaluator`] received: the condition and the messages it was shown.
type Calls = Arc<Mutex<Vec<(String, Vec<Message>)>>>;

/// The course's `RecordingEvaluator`: answers from its list (or always with its error) and
/// records each call.
struct RecordingEvaluator {
    evaluations: VecDeque<GoalEvaluation>,
    error: Option<ApiError>,
    calls: Calls,
}

impl RecordingEvaluator {
    fn new(evaluations: Vec<GoalEvaluation>) -> (Box<Self>, Calls) {
        let calls = Calls::default();
        (Box::new(Self { evaluations: evaluations.into(), error: None, calls: calls.clone() }), calls)
    }
}

#[async_trait::async_trait]
impl GoalEvaluator for RecordingEvaluator {
    async fn evaluate(
        &mut self,
        _model: &mut ModelHandle<'_>,
        condition: &str,
        messages: &[Message],
    ) -> Result<GoalEvaluation, EvaluatorError> {
        self.calls.lock().map(|mut c| c.push((condition.to_owned(), messages.to_vec()))).ok();
        if let Some(error) = &self.error {
            return Err(error.clone().into());
        }
        Ok(self.evaluations.pop_front().expect("unexpected evaluator call"))
    }
}

/// Runs `f` with a [`ModelHandle`] on `model`, on a one-thread runtime.
fn with_model<R>(model: Arc<dyn Model>, f: impl AsyncFnOnce(&mut ModelHandle<'_>) -> R) -> R {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let mut usage = UsageTotals::default();
    runtime.block_on(async {
        let mut handle = ModelHandle::new(&model, "worker-model", &mut usage, &Silent);
        f(&mut handle).await
    })
}

fn no_model() -> Arc<dyn Model> {
    Arc::new(ScriptedModel::new(Vec::new()))
}

fn assistant(text: &str) -> Message {
    Message { role: agent_core::messages::Role::Assistant, ..Message::user_text(text) }
}

#[test]
fn test_background_work_defers_evaluation() {
    let (evaluator, calls) = RecordingEvaluator::new(vec![GoalEvaluation::new(true, "done")]);
    let mut controller = GoalController::with_default_cap(evaluator);
    controller.set_goal("background report is ready", 0).expect("a goal");

    let decision = with_model(no_model(), async |model| {
        controller.evaluate_after_turn(model, &[assistant("still running")], true).await
    });

    assert_eq!(decision.action, Action::Defer);
    assert!(controller.active.is_some());
    assert!(calls.lock().expect("calls").is_empty());
}

#[test]
fn test_impossible_goal_is_recorded_as_failed() {
    let impossible =
        GoalEvaluation { ok: false, impossible: true, reason: "The required service does not exist.".into() };
    let (evaluator, _calls) = RecordingEvaluator::new(vec![impossible]);
    let mut controller = GoalController::with_default_cap(evaluator);
    controller.set_goal("deploy to the missing service", 0).expect("a goal");

    let decision = with_model(no_model(), async |model| {
        controller.evaluate_after_turn(model, &[assistant("service not found")], false).await
    });

    assert_eq!(decision.action, Action::Failed);
    assert!(controller.active.is_none());
    assert!(controller.last_status.as_ref().is_some_and(|s| s.failed));
    assert!(controller.status(0).starts_with("Goal failed:"));
}

#[test]
fn test_evaluator_error_returns_control_and_keeps_goal() {
    let (mut evaluator, _calls) = RecordingEvaluator::new(Vec::new());
    evaluator.error = Some(ApiError::Transport("API unavailable".into()));
    let mut controller = GoalController::with_default_cap(evaluator);
    controller.set_goal("tests pass", 0).expect("a goal");

    let decision =
        with_model(no_model(), async |model| controller.evaluate_after_turn(model, &[], false).await);

    assert_eq!(decision.action, Action::Error);
    assert!(decision.reason.contains("API unavailable"), "{}", decision.reason);
    assert!(controller.active.is_some());
}

#[test]
fn test_restore_reinstalls_only_an_active_goal() {
    let event = |active: bool, met: bool, reason: &str| -> GoalStatus {
        serde_json::from_value(json!({
            "type": "goal_status", "condition": "tests pass",
            "active": active, "met": met, "failed": false, "reason": reason,
        }))
        .expect("the course's event")
    };
    let active_events = vec![event(true, false, "still failing")];
    let (evaluator, _) = RecordingEvaluator::new(Vec::new());
    let restored = GoalController::restore(evaluator, &active_events, 8).expect("restored");

    let state = restored.active.as_ref().expect("the active goal is back");
    assert_eq!(state.condition, "tests pass");
    assert_eq!(state.iterations, 0);
    assert_eq!(state.last_reason, None);

    let mut achieved_events = active_events.clone();
    achieved_events.push(event(false, true, "done"));
    let (evaluator, _) = RecordingEvaluator::new(Vec::new());
    let completed = GoalController::restore(evaluator, &achieved_events, 8).expect("restored");
    assert!(completed.active.is_none());
}

#[test]
fn test_clear_aliases() {
    for alias in CLEAR_ALIASES {
        let (evaluator, _) = RecordingEvaluator::new(Vec::new());
        let mut controller = GoalController::with_default_cap(evaluator);
        controller.set_goal("tests pass", 0).expect("a goal");

        let command = GoalCommand::parse(&format!("/goal {alias}"));
        assert_eq!(command, Some(GoalCommand::Clear), "{alias}");
        assert_eq!(controller.clear(), "Goal cleared: tests pass");
        assert!(controller.active.is_none(), "{alias}");
    }
}

#[test]
fn test_goal_length_is_bounded() {
    let (evaluator, _) = RecordingEvaluator::new(Vec::new());
    let mut controller = GoalController::with_default_cap(evaluator);
    let error = controller.set_goal(&"x".repeat(MAX_GOAL_LENGTH + 1), 0).expect_err("too long");
    assert!(error.0.contains("4000"), "{error}");
    assert!(controller.active.is_none());
}

#[test]
fn test_prompt_evaluator_uses_a_tool_free_json_response() {
    let scripted = Arc::new(ScriptedModel::new(vec![text(
        r#"{"ok": false, "reason": "test output is missing", "impossible": false}"#,
    )]));
    let mut evaluator = PromptGoalEvaluator::new(Some("evaluator-model".into()));

    let result = with_model(scripted.clone(), async |model| {
        evaluator.evaluate(model, "tests pass", &[assistant("implementation updated")]).await
    })
    .expect("an evaluation");

    assert!(!result.ok);
    assert_eq!(result.reason, "test output is missing");
    let call = serde_json::to_value(&scripted.requests()[0]).expect("the request as JSON");
    assert!(call.get("tools").is_none(), "{call}");
    assert_eq!(call["model"], "evaluator-model");
}

#[test]
fn test_evaluator_rejects_conflicting_terminal_states() {
    let error = parse_json_object(r#"{"ok": true, "reason": "conflicting", "impossible": true}"#)
        .expect_err("conflict");
    assert!(error.0.contains("both ok and impossible"), "{error}");
}

#[test]
fn test_transcript_trimming_keeps_complete_recent_messages() {
    let messages = [Message::user_text(format!("old-{}", "x".repeat(100))), assistant("recent result")];
    let rendered = goal::transcript_text(&messages, 40);

    assert!(rendered.contains("recent result"));
    assert!(!rendered.contains("old-"));
}

#[test]
fn test_transcript_trims_the_middle_of_one_oversized_message() {
    let rendered = goal::transcript_text(&[Message::user_text(format!("START{}END", "x".repeat(100)))], 40);

    assert_eq!(rendered.chars().count(), 40);
    assert!(rendered.starts_with("USER:\nSTART"));
    assert!(rendered.ends_with("END"));
    assert!(rendered.contains("middle omitted"));
}

/// Beyond the course: the block cap counts unmet evaluations in a row, the `[Goal still
/// active]` message carries the condition and the reason, and a met goal does not fire again.
#[test]
fn blocks_count_up_to_the_cap_and_a_met_goal_stays_met() {
    let (evaluator, _) = RecordingEvaluator::new(Vec::new());
    let mut controller = GoalController::new(evaluator, 2).expect("cap 2");
    controller.set_goal("tests pass", 0).expect("a goal");
    let unmet = |n: u32| Ok(GoalEvaluation::new(false, format!("missing result {n}")));

    let first = controller.after_evaluation(unmet(1));
    assert_eq!(first.action, Action::Block);
    assert_eq!(
        controller.continuation(&first).as_deref(),
        Some(
            "[Goal still active]\nCondition: tests pass\nEvaluator: missing result 1\nContinue working and surface the missing evidence."
        )
    );
    assert_eq!(controller.after_evaluation(unmet(2)).action, Action::Block);
    let third = controller.after_evaluation(unmet(3));
    assert_eq!(third.action, Action::Limit);
    assert_eq!(third.reason, "goal remains active, but the Stop hook blocked 2 consecutive turns");
    assert!(controller.status(0).contains("Evaluations: 3\nTokens: 0\nLast reason: missing result 3"));

    controller.begin_query();
    assert_eq!(controller.after_evaluation(Ok(GoalEvaluation::new(true, "passed"))).action, Action::Achieved);
    assert_eq!(controller.status(0), "Goal achieved: tests pass\nReason: passed");
    assert_eq!(controller.after_evaluation(Ok(GoalEvaluation::new(false, "late"))).action, Action::Allow);
    assert_eq!(controller.before_evaluation(false).map(|d| d.action), Some(Action::Allow));
    assert!(GoalController::new(RecordingEvaluator::new(Vec::new()).0, 0).is_err());
}

/// Beyond the course: whatever the evaluator returns is a status with a bounded reason.
#[test]
fn an_evaluator_that_answers_prose_or_a_huge_reason_gives_a_clear_status() {
    let huge = format!(r#"{{"ok": false, "reason": "{}"}}"#, "y".repeat(100_000));
    let scripted = Arc::new(ScriptedModel::new(vec![text("Looks done to me!"), text(&huge)]));
    let mut controller = GoalController::with_default_cap(Box::new(PromptGoalEvaluator::new(None)));
    controller.set_goal("tests pass", 0).expect("a goal");

    let (prose, long) = with_model(scripted.clone(), async |model| {
        let prose = controller.evaluate_after_turn(model, &[assistant("done")], false).await;
        let long = controller.evaluate_after_turn(model, &[assistant("done")], false).await;
        (prose, long)
    });

    assert_eq!(prose.action, Action::Error);
    assert_eq!(prose.reason, "GoalError: goal evaluator returned invalid JSON");
    assert_eq!(long.action, Action::Block);
    assert!(long.reason.chars().count() < 4100 && long.reason.ends_with("(96000 more characters)"));
    // The evaluator's request went to the loop's model id when none was named.
    assert_eq!(scripted.requests()[0].model, "worker-model");
}

// The course's tests of s17's own tool behaviours, on the base tools with `ToolOptions::s17`
// (the chapter adds its descriptions and the `GoalError` wording of an unknown tool).

mod tools {
    use agent_core::dispatch::{DispatchMap, ToolOutcome};
    use agent_core::test_util::tool_use_block;
    use agent_core::tools::{self, ToolOptions};
    use agent_core::workspace::Workspace;
    use serde_json::{Value, json};

    fn s17_tools(dir: &std::path::Path) -> DispatchMap {
        let ws = Workspace::new(dir).expect("a workspace");
        tools::all(&ws, &ToolOptions::default().s17())
    }

    fn run(map: &DispatchMap, name: &str, input: Value) -> ToolOutcome {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        runtime.block_on(map.dispatch(&tool_use_block("t1", name, input)))
    }

    #[test]
    fn test_bash_output_keeps_exit_code_when_the_tail_is_trimmed() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let output = run(
            &s17_tools(dir.path()),
            "bash",
            json!({"command": "head -c 40000 /dev/zero | tr '\\0' x; echo; echo END; exit 7"}),
        );

        assert!(output.content.starts_with("exit_code=7\n"), "{}", &output.content[..40]);
        assert!(output.content.chars().count() <= 30000);
        assert!(output.content.ends_with("x\nEND"));
    }

    #[test]
    fn test_read_file_cannot_escape_the_workdir() {
        let root = tempfile::tempdir().expect("a temp dir");
        let inner = root.path().join("repo");
        std::fs::create_dir(&inner).expect("a repository folder");
        std::fs::write(root.path().join("outside.txt"), "secret").expect("written");

        let output = run(&s17_tools(&inner), "read_file", json!({"path": "../outside.txt"}));

        // The kernel's workspace rule words it; s17's permission hook refuses first, in the
        // course's words (`Permission denied: path is outside the repository`).
        assert!(output.is_error);
        assert_eq!(output.content, "Error: Path escapes workspace: ../outside.txt");
    }

    #[test]
    fn test_goal_loop_file_tools_use_the_current_repository() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let map = s17_tools(dir.path());

        assert!(
            run(&map, "write_file", json!({"path": "src/value.txt", "content": "old"}))
                .content
                .contains("Wrote")
        );
        let edited =
            run(&map, "edit_file", json!({"path": "src/value.txt", "old_text": "old", "new_text": "new"}));
        assert!(edited.content.contains("Edited"));
        assert_eq!(run(&map, "glob", json!({"pattern": "src/*.txt"})).content, "src/value.txt");
        assert_eq!(std::fs::read_to_string(dir.path().join("src/value.txt")).expect("read"), "new");
    }

    /// Beyond the course's tests: s17's `read_file` window and `edit_file`'s exactly-one rule.
    #[test]
    fn read_file_takes_a_window_and_edit_file_wants_one_occurrence() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let text: String = (1..=600).map(|n| format!("line {n}\n")).collect();
        std::fs::write(dir.path().join("long.txt"), text).expect("written");
        std::fs::write(dir.path().join("twice.txt"), "a a").expect("written");
        let map = s17_tools(dir.path());

        let read = |input: Value| run(&map, "read_file", input).content;
        assert_eq!(read(json!({"path": "long.txt"})).lines().count(), 200);
        assert_eq!(read(json!({"path": "long.txt", "offset": 599})), "line 599\nline 600");
        assert_eq!(read(json!({"path": "long.txt", "offset": -3, "limit": 0})), "line 1");
        assert_eq!(read(json!({"path": "long.txt", "limit": 10_000})).lines().count(), 500);
        let schema = &map.specs()[1].input_schema;
        assert_eq!(
            schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default(),
            ["path", "offset", "limit"]
        );

        let twice = run(&map, "edit_file", json!({"path": "twice.txt", "old_text": "a", "new_text": "b"}));
        assert_eq!(twice.content, "Error: Expected 1 occurrence, found 2");
        let none = run(&map, "edit_file", json!({"path": "twice.txt", "old_text": "z", "new_text": "b"}));
        assert_eq!(none.content, "Error: Expected 1 occurrence, found 0");
        assert_eq!(std::fs::read_to_string(dir.path().join("twice.txt")).expect("read"), "a a");
    }
}

#[test]
fn test_goal_loop_keeps_the_s04_base_tools_and_permission_hook() {
    use agent_core::extension::{Decision, Extension};
    use agent_core::hooks::HookRegistry;
    use agent_core::test_util::tool_call;
    use agent_core::tools::{self, ToolOptions};
    use agent_core::workspace::Workspace;

    let root = tempfile::tempdir().expect("a temp dir");
    let repo = root.path().join("repo");
    std::fs::create_dir(&repo).expect("a repository folder");
    let ws = Workspace::new(&repo).expect("a workspace");
    let map = tools::all(&ws, &ToolOptions::default().s17());
    let mut hooks = HookRegistry::new(agent_core::events::silent());
    goal::kernel::register_repository_hook(&mut hooks, Arc::new(ws.clone()));

    let names: Vec<String> = map.specs().iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "glob"]);
    let call = tool_call(&map, "t1", "write_file", json!({"path": "../outside.txt", "content": "blocked"}));
    let Decision::Block(text) = hooks.pre_tool_use(&call) else { panic!("an outside write must be refused") };
    assert!(text.contains("outside"), "{text}");
    assert_eq!(text, goal::kernel::OUTSIDE_REPOSITORY);
    assert!(!root.path().join("outside.txt").exists());
    let inside = tool_call(&map, "t2", "write_file", json!({"path": "inside.txt", "content": "ok"}));
    assert_eq!(hooks.pre_tool_use(&inside), Decision::Continue);
    let absolute = tool_call(&map, "t3", "read_file", json!({"path": "/etc/hostname"}));
    assert!(matches!(hooks.pre_tool_use(&absolute), Decision::Block(_)));
}

// The course's tests of the session: the loop with the goal as its Stop hook, the worker on a
// scripted model, the evaluator recording what it was shown.

mod session {
    use super::*;
    use agent_core::agent::Agent;
    use agent_core::messages::{MessagesResponse, Role};
    use agent_core::test_util::tool_uses;
    use agent_core::tools::{self, ToolOptions};
    use agent_core::workspace::Workspace;
    use goal::hook::{BackgroundRunning, GoalHandle, GoalHook, no_background};
    use goal::session::{SessionResult, submit, submit_background_result};
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Session {
        agent: Agent,
        history: Vec<Message>,
        goal: GoalHandle,
        worker: Arc<ScriptedModel>,
        calls: Calls,
        runtime: tokio::runtime::Runtime,
        _dir: tempfile::TempDir,
    }

    impl Session {
        fn new(
            responses: Vec<MessagesResponse>,
            evaluations: Vec<GoalEvaluation>,
            block_cap: u32,
            background: BackgroundRunning,
        ) -> Self {
            let dir = tempfile::tempdir().expect("a temp dir");
            let ws = Workspace::new(dir.path()).expect("a workspace");
            let worker = Arc::new(ScriptedModel::new(responses));
            let (evaluator, calls) = RecordingEvaluator::new(evaluations);
            let controller = GoalController::new(evaluator, block_cap).expect("a cap");
            let hook = GoalHook::new(controller, background);
            let goal = hook.handle();
            let agent = Agent::builder(worker.clone(), "worker-model")
                .system(goal::kernel::WORKER_SYSTEM)
                .tools(tools::all(&ws, &ToolOptions::default().s17()))
                .extension(hook)
                .max_stop_continuations(block_cap)
                .build();
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            Self { agent, history: Vec::new(), goal, worker, calls, runtime, _dir: dir }
        }

        fn submit(&mut self, text: &str) -> SessionResult {
            let Self { agent, history, goal, runtime, .. } = self;
            runtime.block_on(submit(agent, history, goal, text)).expect("a result")
        }

        fn goal_active(&self) -> bool {
            self.runtime.block_on(self.goal.with(|c| c.active.is_some()))
        }

        fn evaluator_calls(&self) -> Vec<(String, Vec<Message>)> {
            self.calls.lock().map(|c| c.clone()).unwrap_or_default()
        }
    }

    fn user_texts(history: &[Message]) -> Vec<String> {
        history.iter().filter(|m| m.role == Role::User).map(|m| goal::plain_content(&m.content)).collect()
    }

    #[test]
    fn test_unmet_goal_continues_automatically_until_achieved() {
        let mut session = Session::new(
            vec![text("I changed the implementation."), text("pytest now exits with code 0.")],
            vec![
                GoalEvaluation::new(false, "No test result appears in the conversation."),
                GoalEvaluation::new(true, "The latest turn reports the required test result."),
            ],
            8,
            no_background(),
        );

        let result = session.submit("/goal pytest exits with code 0");

        assert_eq!(result.status, "achieved");
        assert!(!session.goal_active());
        assert_eq!(session.worker.requests().len(), 2);
        assert_eq!(session.evaluator_calls().len(), 2);
        assert!(user_texts(&session.history).iter().any(|t| t.contains("No test result appears")));
        assert_eq!(user_texts(&session.history)[0], "pytest exits with code 0");
    }

    #[test]
    fn test_worker_tool_result_reaches_the_goal_evaluator() {
        let mut session = Session::new(
            vec![
                tool_uses(&[("tool-1", "bash", json!({"command": "printf passed"}))]),
                text("The command exited successfully."),
            ],
            vec![GoalEvaluation::new(true, "The conversation contains exit_code=0.")],
            8,
            no_background(),
        );

        let result = session.submit("/goal the verification command exits with code 0");

        assert_eq!(result.status, "achieved");
        let requests = session.worker.requests();
        assert_eq!(requests.len(), 2);
        let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "glob"]);
        let (_condition, messages) = &session.evaluator_calls()[0];
        assert!(messages.iter().any(|m| goal::plain_content(&m.content).contains("exit_code=0\npassed")));
    }

    #[test]
    fn test_evaluator_receives_the_conversation_without_origin_filtering() {
        let mut session = Session::new(
            vec![text("tests passed")],
            vec![GoalEvaluation::new(true, "The transcript contains a passing test result.")],
            8,
            no_background(),
        );

        session.submit("/goal tests pass");

        let (_condition, messages) = &session.evaluator_calls()[0];
        assert!(
            messages
                .iter()
                .any(|m| m.role == Role::Assistant && goal::plain_content(&m.content) == "tests passed")
        );
    }

    #[test]
    fn test_background_result_reenters_the_same_goal_loop() {
        let running = Arc::new(AtomicBool::new(true));
        let flag = running.clone();
        let mut session = Session::new(
            vec![
                text("The background test is still running."),
                text("The background result says pytest passed."),
            ],
            vec![GoalEvaluation::new(true, "The completion notification contains a passing result.")],
            8,
            Arc::new(move || flag.load(Ordering::SeqCst)),
        );

        let deferred = session.submit("/goal pytest exits with code 0");
        assert_eq!(deferred.status, "defer");
        assert!(session.evaluator_calls().is_empty());

        running.store(false, Ordering::SeqCst);
        let Session { agent, history, goal, runtime, .. } = &mut session;
        let completed = runtime
            .block_on(submit_background_result(agent, history, goal, "pytest: 12 passed; exit_code=0"))
            .expect("a result");

        assert_eq!(completed.status, "achieved");
        assert_eq!(session.worker.requests().len(), 2);
        assert_eq!(session.evaluator_calls().len(), 1);
        assert!(user_texts(&session.history).iter().any(|t| t.contains("Background task completed")));
    }

    #[test]
    fn test_block_cap_returns_control_but_keeps_goal_active() {
        let mut session = Session::new(
            vec![text("attempt one"), text("attempt two"), text("attempt three")],
            vec![
                GoalEvaluation::new(false, "missing result 1"),
                GoalEvaluation::new(false, "missing result 2"),
                GoalEvaluation::new(false, "missing result 3"),
            ],
            2,
            no_background(),
        );

        let result = session.submit("/goal impossible for now");

        assert_eq!(result.status, "limit");
        assert!(session.goal_active());
        assert_eq!(session.worker.requests().len(), 3);
    }

    /// The course's `test_clear_aliases`, through the session: nothing reaches the model.
    #[test]
    fn clear_aliases_through_the_session_send_nothing() {
        for alias in CLEAR_ALIASES {
            let mut session = Session::new(Vec::new(), Vec::new(), 8, no_background());
            session.runtime.block_on(session.goal.with(|c| c.set_goal("tests pass", 0))).expect("a goal");

            let result = session.submit(&format!("/goal {alias}"));

            assert_eq!(
                (result.status.as_str(), result.text.as_str()),
                ("cleared", "Goal cleared: tests pass")
            );
            assert!(!session.goal_active());
            assert!(session.worker.requests().is_empty());
        }
    }

    /// Beyond the course: an over-long goal is an error the session survives, and `/goal` shows
    /// the status without a model call.
    #[test]
    fn an_over_long_goal_is_refused_and_the_session_goes_on() {
        let mut session = Session::new(vec![text("hi")], Vec::new(), 8, no_background());
        let Session { agent, history, goal, runtime, .. } = &mut session;
        let error = runtime.block_on(submit(agent, history, goal, &format!("/goal {}", "x".repeat(4001))));
        assert_eq!(
            error.map_err(|e| e.to_string()),
            Err("goal condition cannot exceed 4000 characters".into())
        );
        assert_eq!(session.submit("/goal").text, "No goal set");
        assert_eq!(session.submit("hello").status, "allow");
        assert_eq!(session.worker.requests().len(), 1);
    }
}
