//! The course's s16 tests (`tests/test_workflow_goal_lessons.py`), ported by name, with PR #571's
//! two (a failing branch waits for its siblings), on the real files of a temporary workspace.
//! `test_workflow_default_entry_extends_the_real_s15_host` runs on the binary
//! (`tests/suite/s16.rs`).

use std::sync::{Arc, Mutex};

use agent_core::dispatch::DispatchMap;
use agent_core::events::Silent;
use agent_core::extension::{Extension, RequestContext};
use agent_core::test_util::{ScriptedModel, text};
use agent_core::workspace::Workspace;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use workflow::journal::WorkflowJournal;
use workflow::runner::{AgentRunner, RunnerFactory};
use workflow::runtime::{ScriptFn, WorkflowRegistry};
use workflow::schema::SimpleJsonSchema;
use workflow::state::{Budget, ExecutionLimits, LocalWorkflowTask, RunContext, quiet, stage};
use workflow::store::RunStore;
use workflow::tool::WorkflowExtension;
use workflow::{
    AgentCall, ApiAgentRunner, ExecutionState, MockAgentRunner, RunnerOutput, WorkflowInputError,
    WorkflowMeta, WorkflowRuntime, WorkflowTool,
};

fn mock() -> RunnerFactory {
    Arc::new(|| Arc::new(MockAgentRunner) as Arc<dyn AgentRunner>)
}

fn runner_of(runner: Arc<dyn AgentRunner>) -> RunnerFactory {
    Arc::new(move || Arc::clone(&runner))
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

fn read(dir: &tempfile::TempDir, name: &str) -> String {
    std::fs::read_to_string(dir.path().join(".runtime").join(name)).unwrap()
}

/// A state over a fresh journal `run_id`, as the course's tests build `ExecutionState` by hand.
fn state(
    ws: &Workspace,
    run_id: &str,
    runner: Arc<dyn AgentRunner>,
    cap: usize,
    registry: WorkflowRegistry,
) -> ExecutionState {
    let store = RunStore::open(ws).unwrap();
    let journal = WorkflowJournal::open(&store, run_id, None).unwrap();
    let run = RunContext::new(
        LocalWorkflowTask::new("task", run_id, "test"),
        journal,
        runner,
        Budget::new(None),
        ExecutionLimits::with_cap(cap),
        quiet(),
        Arc::new(registry),
    );
    ExecutionState::new(Arc::new(run), json!({}))
}

fn err<T: std::fmt::Debug>(result: Result<T, WorkflowInputError>) -> String {
    result.expect_err("expected an error").0
}

fn ok_schema() -> Value {
    json!({"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}})
}

#[tokio::test]
async fn test_workflow_runtime_resumes_from_journal() {
    let (dir, ws) = workspace();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&lines);
    let runtime = WorkflowRuntime::new(ws, mock())
        .reporter(Arc::new(move |e: &workflow::state::WorkflowEvent| seen.lock().unwrap().push(e.line())));
    let args = json!({"budget": null, "changes": workflow::review::DEMO_CHANGES});

    let first = runtime.run_workflow(&json!("review-changes"), Some(&args), None).await.unwrap();
    assert_eq!(first["task"]["status"], "completed");
    assert!(lines.lock().unwrap().iter().any(|l| l.contains("async_launched")));
    let last = read(&dir, "last_run.txt");
    assert_eq!(last, first["task"]["runId"]);

    lines.lock().unwrap().clear();
    let resumed = runtime.run_workflow(&json!("review-changes"), None, Some(&json!(last))).await.unwrap();
    let shown = lines.lock().unwrap().clone();
    assert!(shown.iter().any(|l| l.contains("status=cached")), "{shown:?}");
    assert!(!shown.iter().any(|l| l.contains("status=done")), "{shown:?}");
    assert_eq!(resumed["task"]["usage"], json!({"agents": 0, "tokens": 0}));
    assert_eq!(resumed["result"], first["result"]);
}

#[test]
fn test_workflow_runtime_rejects_unsafe_artifact_names() {
    for name in ["../escape", "../../escape", "nested/name"] {
        let meta = WorkflowMeta { name: name.into(), description: "unsafe".into(), phases: None };
        assert_eq!(
            err(meta.validate()),
            "meta.name must be a 1-64 character slug using letters, numbers, '.', '_', or '-'"
        );
    }
    let findings = workflow::review::findings_schema();
    let severity = &findings["properties"]["findings"]["items"]["properties"]["severity"];
    assert_eq!(SimpleJsonSchema(severity).validate(&json!("high")), Ok(()));
    assert!(SimpleJsonSchema(severity).validate(&json!("warning")).is_err());
}

#[tokio::test]
async fn test_workflow_runtime_enforces_budget_and_shared_agent_cap() {
    let mut budget = Budget::new(Some(1));
    assert!(budget.add(2).is_err());
    assert_eq!(budget.spent(), 0);

    let (_dir, ws) = workspace();
    let mut registry = WorkflowRegistry::default();
    let child: ScriptFn = Arc::new(|ctx, _args| ctx.agent(AgentCall::new("second call")));
    registry.register(
        WorkflowMeta { name: "limit-child".into(), description: "test".into(), phases: None },
        child,
    );
    let state = state(&ws, "wf_limit-test_0001", Arc::new(MockAgentRunner), 1, registry);

    state.agent(AgentCall::new("first call")).await.unwrap();
    assert_eq!(err(state.workflow("limit-child", None).await), "agent() cap reached (1)");
    let failing =
        stage(|_value, _item, _index| async { Err::<Value, _>(WorkflowInputError::new("stage failed")) });
    assert_eq!(err(state.pipeline(vec![json!("item")], vec![failing]).await), "stage failed");
}

#[test]
fn test_workflow_runtime_rejects_corrupt_resume_journal() {
    let (dir, ws) = workspace();
    let store = RunStore::open(&ws).unwrap();
    std::fs::write(dir.path().join(".runtime/wf_corrupt_0001.journal.jsonl"), "{not-json}\n").unwrap();
    let e = err(WorkflowJournal::load(&store, "wf_corrupt_0001"));
    assert!(e.contains("line 1"), "{e}");
    // A later bad line is named too; a missing `value` is no record.
    std::fs::write(
        dir.path().join(".runtime/wf_corrupt_0001.journal.jsonl"),
        "{\"key\": \"a\", \"value\": 1}\n{\"key\": \"b\"}\n",
    )
    .unwrap();
    assert_eq!(
        err(WorkflowJournal::load(&store, "wf_corrupt_0001")),
        "invalid resume journal record at line 2"
    );
}

#[tokio::test]
async fn test_workflow_tool_adapter_uses_registry_and_returns_json() {
    let (dir, ws) = workspace();
    let tool = WorkflowTool::new(WorkflowRuntime::new(ws, mock()));
    let text = tool.call(&json!({"name": "review-changes", "args": {"budget": null}})).await.unwrap();
    let result: Value = serde_json::from_str(&text).unwrap();

    assert_eq!(workflow::tool::spec().input_schema["required"], json!(["name"]));
    assert_eq!(result["launched"]["workflowName"], "review-changes");
    assert_eq!(result["task"]["status"], "completed");
    assert_eq!(result["task"]["taskType"], "local_workflow");
    assert_eq!(result["result"]["confirmed"].as_array().map(Vec::len), Some(5));
    // As the course ran it: no change text, 11 agents, 640 tokens.
    assert_eq!(result["task"]["usage"], json!({"agents": 11, "tokens": 640}));
    let run_id = result["task"]["runId"].as_str().unwrap();
    let snapshot: Value = serde_json::from_str(&read(&dir, &format!("{run_id}.json"))).unwrap();
    assert_eq!(snapshot["workflowName"], "review-changes");
    assert_eq!(snapshot["args"], json!({"budget": null}));
    assert_eq!(snapshot["task"]["status"], "completed");
    // Python's compact json.dumps: ", " and ": ".
    assert!(text.starts_with("{\"launched\": {\"status\": \"async_launched\", "), "{text}");
}

#[tokio::test]
async fn test_fresh_workflow_runs_have_unique_identity_and_resume_validates_args() {
    let (_dir, ws) = workspace();
    let runtime = WorkflowRuntime::new(ws, mock());
    let args = json!({"budget": null});
    let first = runtime.run_workflow(&json!("review-changes"), Some(&args), None).await.unwrap();
    let second = runtime.run_workflow(&json!("review-changes"), Some(&args), None).await.unwrap();
    assert_ne!(first["task"]["runId"], second["task"]["runId"]);
    assert_ne!(first["task"]["taskId"], second["task"]["taskId"]);
    let e = err(runtime
        .run_workflow(&json!("review-changes"), Some(&json!({"budget": 1})), Some(&first["task"]["runId"]))
        .await);
    assert!(e.contains("args do not match"), "{e}");
}

#[tokio::test]
async fn test_fresh_workflow_run_refuses_an_existing_identity() {
    let (dir, ws) = workspace();
    let fixed = "wf_review-changes_0000000000001a7b";
    let runtime = WorkflowRuntime::new(ws, mock()).run_ids(Arc::new(move |_| fixed.to_owned()));
    let args = json!({"budget": null});
    let first = runtime.run_workflow(&json!("review-changes"), Some(&args), None).await.unwrap();
    let snapshot = read(&dir, &format!("{fixed}.json"));
    let output = read(&dir, &format!("{fixed}.output.json"));

    let e = err(runtime.run_workflow(&json!("review-changes"), Some(&args), None).await);
    assert!(e.contains("unique workflow runId"), "{e}");
    assert_eq!(first["task"]["runId"], fixed);
    assert_eq!(read(&dir, &format!("{fixed}.json")), snapshot);
    assert_eq!(read(&dir, &format!("{fixed}.output.json")), output);
}

#[tokio::test]
async fn test_invalid_resume_does_not_overwrite_completed_artifacts() {
    let (dir, ws) = workspace();
    let runtime = WorkflowRuntime::new(ws, mock());
    let result =
        runtime.run_workflow(&json!("review-changes"), Some(&json!({"budget": null})), None).await.unwrap();
    let run_id = result["task"]["runId"].as_str().unwrap().to_owned();
    let snapshot = read(&dir, &format!("{run_id}.json"));
    let output = read(&dir, &format!("{run_id}.output.json"));
    std::fs::write(dir.path().join(format!(".runtime/{run_id}.journal.jsonl")), "not-json\n").unwrap();

    let e = err(runtime.run_workflow(&json!("review-changes"), None, Some(&json!(run_id))).await);
    assert!(e.contains("invalid resume journal"), "{e}");
    assert_eq!(read(&dir, &format!("{run_id}.json")), snapshot);
    assert_eq!(read(&dir, &format!("{run_id}.output.json")), output);
    assert_eq!(read(&dir, &format!("{run_id}.journal.jsonl")), "not-json\n");
}

#[tokio::test]
async fn test_active_workflow_run_rejects_concurrent_resume() {
    let (dir, ws) = workspace();
    let run_id = "wf_slow-test_0000000000001a7b";
    let runtime = WorkflowRuntime::new(ws, mock()).run_ids(Arc::new(move |_| run_id.to_owned()));
    let meta =
        WorkflowMeta { name: "slow-test".into(), description: "hold the run open".into(), phases: None };
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let slow: ScriptFn = {
        let (started, release) = (Arc::clone(&started), Arc::clone(&release));
        Arc::new(move |_ctx, _args| {
            let (started, release) = (Arc::clone(&started), Arc::clone(&release));
            Box::pin(async move {
                started.notify_one();
                release.notified().await;
                Ok(json!({"invocation": 1}))
            })
        })
    };

    let first = runtime.call(&meta, Arc::clone(&slow), None, None);
    let second = async {
        started.notified().await;
        let refused = runtime.call(&meta, Arc::clone(&slow), None, Some(run_id)).await;
        release.notify_one();
        refused
    };
    let (first, second) = tokio::join!(first, second);

    assert!(err(second).contains("already active"));
    assert_eq!(first.unwrap().result, json!({"invocation": 1}));
    let output: Value = serde_json::from_str(&read(&dir, &format!("{run_id}.output.json"))).unwrap();
    assert_eq!(output, json!({"invocation": 1}));
}

/// The child of [`test_workflow_run_lock_is_cross_process`]: tries the lock the parent holds.
#[test]
fn lock_child() {
    let (Ok(root), Ok(run_id)) =
        (std::env::var("WORKFLOW_LOCK_CHILD_ROOT"), std::env::var("WORKFLOW_LOCK_CHILD_RUN"))
    else {
        return;
    };
    let store = RunStore::open(&Workspace::new(root).unwrap()).unwrap();
    match store.lock(&run_id) {
        Ok(_) => println!("RESULT acquired"),
        Err(e) => println!("RESULT {e}"),
    }
}

#[test]
fn test_workflow_run_lock_is_cross_process() {
    let (dir, ws) = workspace();
    let run_id = "wf_process-lock_0000000000001a7b";
    let store = RunStore::open(&ws).unwrap();
    let held = store.lock(run_id).unwrap();
    let child = |_: &()| {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "lock_child", "--nocapture", "--test-threads=1"])
            .env("WORKFLOW_LOCK_CHILD_ROOT", dir.path())
            .env("WORKFLOW_LOCK_CHILD_RUN", run_id)
            .output()
            .unwrap()
    };
    let out = child(&());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("RESULT workflow run {run_id} is already active")), "{text}");
    drop(held);
    let text = String::from_utf8_lossy(&child(&()).stdout).into_owned();
    assert!(text.contains("RESULT acquired"), "{text}");
}

#[tokio::test]
async fn test_workflow_tool_extends_the_integrated_host_pool() {
    let (_dir, ws) = workspace();
    let bash = agent_core::dispatch::FnTool::new(
        agent_core::messages::ToolSpec {
            name: "bash".into(),
            description: String::new(),
            input_schema: json!({}),
        },
        |_input: &Value| Box::pin(async { Ok("ok".to_owned()) }),
    );
    let mut tools = DispatchMap::new();
    tools.register(bash);
    let mut extension = WorkflowExtension::new(WorkflowTool::new(WorkflowRuntime::new(ws, mock())));
    let mut system = String::new();
    for _ in 0..2 {
        // Once per request: never twice in the pool.
        let mut request =
            RequestContext { system: &mut system, tools: &mut tools, history: &[], events: &Silent };
        extension.before_request(&mut request).await.unwrap();
    }
    assert_eq!(tools.names(), ["bash", "Workflow"]);
}

fn scripted(responses: Vec<agent_core::messages::MessagesResponse>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(responses))
}

fn with_usage(text_: &str, input: u64, output: u64) -> agent_core::messages::MessagesResponse {
    let mut response = text(text_);
    response.usage.input_tokens = input;
    response.usage.output_tokens = output;
    response
}

#[tokio::test]
async fn test_anthropic_runner_parses_json_and_records_real_usage() {
    let model = scripted(vec![with_usage("```json\n{\"ok\": true}\n```", 11, 7)]);
    let runner = ApiAgentRunner::new(model.clone(), "deepseek-v4-flash");
    let result = runner.run("Check the supplied change.", Some(&ok_schema()), Some("check")).await.unwrap();

    assert_eq!(result, RunnerOutput { value: json!({"ok": true}), tokens: 18 });
    let request = &model.requests()[0];
    assert_eq!(request.model, "deepseek-v4-flash");
    assert!(serde_json::to_value(request).unwrap().get("tools").is_none());
    assert_eq!(request.max_tokens, 2000);
    assert_eq!(request.system, workflow::runner::AGENT_SYSTEM);
    let sent = serde_json::to_value(&request.messages[0]).unwrap();
    assert_eq!(
        sent["content"],
        "Check the supplied change.\n\nReturn only one JSON object matching this schema:\n{\"properties\": {\"ok\": {\"type\": \"boolean\"}}, \"required\": [\"ok\"], \"type\": \"object\"}"
    );
}

#[tokio::test]
async fn test_real_runner_output_retries_once_after_invalid_json() {
    let (_dir, ws) = workspace();
    let model = scripted(vec![
        with_usage("not json", 3, 2),
        with_usage("Result:\n```json\n{\"ok\": true}\n```\nDone.", 4, 3),
    ]);
    let state = state(
        &ws,
        "wf_json-retry_0001",
        Arc::new(ApiAgentRunner::new(model.clone(), "test-model")),
        1000,
        WorkflowRegistry::default(),
    );
    let result = state
        .agent(AgentCall::new("Return a result.").schema(ok_schema()).label("json-retry"))
        .await
        .unwrap();

    assert_eq!(result, json!({"ok": true}));
    let task = state.run().task();
    assert_eq!((task.agents, task.tokens), (1, 12));
    let retried = serde_json::to_value(&model.requests()[1].messages[0]).unwrap();
    assert!(
        retried["content"]
            .as_str()
            .unwrap()
            .starts_with("Return a result.\n\nReturn valid JSON.\n\nReturn only one JSON object")
    );
}

#[tokio::test]
async fn test_install_workflow_tool_selects_the_host_api_runner() {
    // The host's model and model id answer the workflow's agents: one request per agent() call.
    let (_dir, ws) = workspace();
    let model = scripted(vec![with_usage("done", 1, 1)]);
    let runner = ApiAgentRunner::new(model.clone(), "deepseek-v4-flash");
    let mut registry = WorkflowRegistry::default();
    let one: ScriptFn = Arc::new(|ctx, _| ctx.agent(AgentCall::new("one step")));
    registry.register(WorkflowMeta { name: "one".into(), description: "one call".into(), phases: None }, one);
    let runtime = WorkflowRuntime::new(ws, runner_of(Arc::new(runner))).registry(registry);
    let out = runtime.run_workflow(&json!("one"), None, None).await.unwrap();
    assert_eq!(out["result"], "done");
    assert_eq!(model.requests().len(), 1);
    assert_eq!(model.requests()[0].model, "deepseek-v4-flash");
}

/// Answers only once every call of the pair has arrived: calls made one after the other never do.
struct BarrierRunner(Barrier);

#[async_trait::async_trait]
impl AgentRunner for BarrierRunner {
    async fn run(
        &self,
        _prompt: &str,
        _schema: Option<&Value>,
        label: Option<&str>,
    ) -> workflow::Result<RunnerOutput> {
        self.0.wait().await;
        Ok(RunnerOutput { value: json!({"label": label}), tokens: 1 })
    }
}

#[tokio::test]
async fn test_parallel_agent_calls_do_not_block_the_event_loop() {
    let (_dir, ws) = workspace();
    let state = state(
        &ws,
        "wf_parallel-test_0001",
        Arc::new(BarrierRunner(Barrier::new(2))),
        1000,
        WorkflowRegistry::default(),
    );
    let both = state.parallel(vec![
        state.agent(AgentCall::new("first").label("first")),
        state.agent(AgentCall::new("second").label("second")),
    ]);
    // A safety net only: the barrier opens at once when the calls run together.
    let result = tokio::time::timeout(std::time::Duration::from_secs(30), both)
        .await
        .expect("the calls ran one after the other");
    assert_eq!(result.unwrap(), vec![json!({"label": "first"}), json!({"label": "second"})]);
    let task = state.run().task();
    assert_eq!((task.agents, task.tokens), (2, 2));
}

#[tokio::test]
async fn test_workflow_tool_adapter_rejects_model_supplied_code() {
    let spec = workflow::tool::spec();
    let properties: Vec<&String> = spec.input_schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["name", "args", "resume_from_run_id"]);

    let (_dir, ws) = workspace();
    let runtime = WorkflowRuntime::new(ws.clone(), mock());
    let e = err(runtime.run_workflow(&json!({"name": "review-changes"}), None, None).await);
    assert!(e.contains("name must be a string"), "{e}");
    let e = err(runtime.run_workflow(&json!("missing"), None, None).await);
    assert!(e.contains("unknown workflow"), "{e}");
    // Through the tool: the course's texts after `Error: `, and no other argument.
    let tool = WorkflowTool::new(runtime);
    assert_eq!(
        tool.call(&json!({"name": "missing"})).await.unwrap_err().to_string(),
        "unknown workflow 'missing'"
    );
    assert_eq!(
        tool.call(&json!({"name": "review-changes", "args": []})).await.unwrap_err().to_string(),
        "workflow args must be an object"
    );
    let e =
        tool.call(&json!({"name": "review-changes", "script": "print(1)"})).await.unwrap_err().to_string();
    assert!(e.contains("unexpected argument 'script'"), "{e}");
    assert!(
        !ws.root().join(".runtime").exists()
            || std::fs::read_dir(ws.root().join(".runtime")).unwrap().count() == 0
    );
}

/// The runner of the #570 cases: `slow` answers only after `fail` has failed, so `fail` fails
/// while `slow` is still running; with `heal`, `fail` answers instead. Counts calls per label.
struct FailingBranch {
    slow_started: Notify,
    failed: Notify,
    heal: bool,
    calls: Mutex<Vec<String>>,
}

impl FailingBranch {
    fn new(heal: bool) -> Arc<Self> {
        Arc::new(Self { slow_started: Notify::new(), failed: Notify::new(), heal, calls: Mutex::default() })
    }
}

#[async_trait::async_trait]
impl AgentRunner for FailingBranch {
    async fn run(
        &self,
        prompt: &str,
        _schema: Option<&Value>,
        label: Option<&str>,
    ) -> workflow::Result<RunnerOutput> {
        let label = label.unwrap_or_default().to_owned();
        self.calls.lock().unwrap().push(label.clone());
        match (label.as_str(), self.heal) {
            ("slow", false) => {
                self.slow_started.notify_one();
                self.failed.notified().await;
            }
            ("fail", false) => {
                self.slow_started.notified().await;
                self.failed.notify_one();
                return Err(WorkflowInputError::new("boom"));
            }
            _ => {}
        }
        Ok(RunnerOutput { value: json!(format!("answer to {prompt}")), tokens: 5 })
    }
}

async fn failure_waits_for_agents_and_preserves_resume_results(script: ScriptFn) {
    let (dir, ws) = workspace();
    let mut registry = WorkflowRegistry::default();
    registry.register(
        WorkflowMeta { name: "branches".into(), description: "one branch fails".into(), phases: None },
        script,
    );
    let failing = FailingBranch::new(false);
    let runtime = WorkflowRuntime::new(ws.clone(), runner_of(failing.clone())).registry(registry.clone());

    let out = runtime.run_workflow(&json!("branches"), None, None).await.unwrap();
    assert_eq!(out["task"]["status"], "failed");
    assert_eq!(out["result"], json!({"error": "boom"}));
    // The sibling finished before the run did: its answer is journalled and counted.
    assert_eq!(out["task"]["usage"], json!({"agents": 1, "tokens": 5}));
    let run_id = out["task"]["runId"].as_str().unwrap().to_owned();
    let journal = read(&dir, &format!("{run_id}.journal.jsonl"));
    assert_eq!(journal.lines().count(), 1, "{journal}");
    assert!(journal.contains("answer to slow prompt"), "{journal}");

    // The resume asks the model for the failed call only.
    let healed = FailingBranch::new(true);
    let runtime = WorkflowRuntime::new(ws, runner_of(healed.clone())).registry(registry);
    let resumed = runtime.run_workflow(&json!("branches"), None, Some(&json!(run_id))).await.unwrap();
    assert_eq!(resumed["task"]["status"], "completed");
    assert_eq!(*healed.calls.lock().unwrap(), ["fail"]);
    assert_eq!(resumed["result"], json!(["answer to slow prompt", "answer to fail prompt"]));
}

#[tokio::test]
async fn test_workflow_failure_waits_for_agents_and_preserves_resume_results_parallel() {
    let script: ScriptFn = Arc::new(|ctx, _| {
        Box::pin(async move {
            let branches = vec![
                ctx.agent(AgentCall::new("slow prompt").label("slow")),
                ctx.agent(AgentCall::new("fail prompt").label("fail")),
            ];
            Ok(Value::Array(ctx.parallel(branches).await?))
        })
    });
    failure_waits_for_agents_and_preserves_resume_results(script).await;
}

#[tokio::test]
async fn test_workflow_failure_waits_for_agents_and_preserves_resume_results_pipeline() {
    let script: ScriptFn = Arc::new(|ctx, _| {
        Box::pin(async move {
            let ask = {
                let ctx = ctx.clone();
                stage(move |value: Value, _item, _index| {
                    let label = value.as_str().unwrap_or_default().to_owned();
                    ctx.agent(AgentCall::new(format!("{label} prompt")).label(label))
                })
            };
            Ok(Value::Array(ctx.pipeline(vec![json!("slow"), json!("fail")], vec![ask]).await?))
        })
    });
    failure_waits_for_agents_and_preserves_resume_results(script).await;
}
