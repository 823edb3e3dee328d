//! Launching a run (course `WorkflowTool.call` and `run_workflow`): the metadata checked, the
//! permission asked, the run id reserved, the run locked, a resume's snapshot, arguments and
//! journal all checked before anything is rewritten, the script run, and the output, snapshot
//! and `last_run.txt` written.

use std::sync::Arc;

use agent_core::workspace::Workspace;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::journal::WorkflowJournal;
use crate::runner::RunnerFactory;
use crate::schema::py_eq;
use crate::state::{Budget, ExecutionLimits, ExecutionState, LocalWorkflowTask, Reporter, RunContext, quiet};
use crate::store::{RunStore, create_run_id, validate_run_id};
use crate::{AGENT_CAP, Result, STORE_DIR, WorkflowInputError};

/// A saved workflow's metadata (course `meta`): checked before every launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowMeta {
    /// A 1–64 character slug of letters, digits, `.`, `_` and `-`, starting with a letter or
    /// digit: it becomes part of file names.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its phases, for the `task_started` line; `None` shows `-`.
    pub phases: Option<Vec<String>>,
}

/// Whether `name` is a workflow name: `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_workflow_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl WorkflowMeta {
    /// Checks the metadata (course `validate_meta`).
    ///
    /// # Errors
    /// ``meta requires `name` and `description` ``,
    /// `meta.name must be a 1-64 character slug using letters, numbers, '.', '_', or '-'`,
    /// `meta.phases must be a list of non-empty strings`.
    pub fn validate(&self) -> Result<()> {
        if self.name.is_empty() || self.description.is_empty() {
            return Err(WorkflowInputError::new("meta requires `name` and `description`"));
        }
        if !is_workflow_name(&self.name) {
            return Err(WorkflowInputError::new(
                "meta.name must be a 1-64 character slug using letters, numbers, '.', '_', or '-'",
            ));
        }
        if self.phases.iter().flatten().any(String::is_empty) {
            return Err(WorkflowInputError::new("meta.phases must be a list of non-empty strings"));
        }
        Ok(())
    }
}

/// A workflow script: called with its state and arguments, answering the result.
pub type ScriptFn = Arc<dyn Fn(ExecutionState, Value) -> BoxFuture<'static, Result<Value>> + Send + Sync>;

/// The saved workflows the host offers (course `WORKFLOWS`): the model picks one by name and
/// never sends code.
#[derive(Clone, Default)]
pub struct WorkflowRegistry {
    entries: Vec<(WorkflowMeta, ScriptFn)>,
}

impl WorkflowRegistry {
    /// The course's registry: `review-changes` alone ([`crate::review`]).
    pub fn course() -> Self {
        let mut registry = Self::default();
        registry.register(crate::review::meta(), Arc::new(crate::review::review_changes));
        registry
    }

    /// Adds (or replaces) the workflow `meta.name`.
    pub fn register(&mut self, meta: WorkflowMeta, script: ScriptFn) -> &mut Self {
        self.entries.retain(|(m, _)| m.name != meta.name);
        self.entries.push((meta, script));
        self
    }

    /// The workflow `name`.
    pub fn get(&self, name: &str) -> Option<(WorkflowMeta, ScriptFn)> {
        self.entries.iter().find(|(m, _)| m.name == name).map(|(m, s)| (m.clone(), Arc::clone(s)))
    }

    /// The names, in registration order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|(m, _)| m.name.clone()).collect()
    }
}

/// What a finished run returns (course `WorkflowTool.call`'s dict).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowOutcome {
    /// `{"status": "async_launched", "taskId", "taskType", "runId", "workflowName"}`.
    pub launched: Value,
    /// The script's result, or `{"error": message}` when it failed.
    pub result: Value,
    /// The task at the end.
    pub task: LocalWorkflowTask,
}

impl WorkflowOutcome {
    /// `{"launched", "result", "task"}`, as the `Workflow` tool returns it (course
    /// `run_workflow`).
    pub fn to_value(&self) -> Value {
        json!({"launched": self.launched, "result": self.result, "task": self.task.serialize()})
    }
}

/// Draws a fresh run id for a workflow name (course `create_run_id`; tests fix it).
pub type RunIdSource = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Runs saved workflows in one workspace: the registry, the runner each run gets, where events
/// go, and the limits.
#[derive(Clone)]
pub struct WorkflowRuntime {
    workspace: Workspace,
    registry: Arc<WorkflowRegistry>,
    runner: RunnerFactory,
    reporter: Reporter,
    deny: Vec<String>,
    agent_cap: usize,
    run_ids: RunIdSource,
}

impl WorkflowRuntime {
    /// A runtime in `workspace` (run files in its `.runtime/`) with the course's registry,
    /// runners from `runner`, no events, no denied workflow and the cap [`AGENT_CAP`].
    pub fn new(workspace: Workspace, runner: RunnerFactory) -> Self {
        Self {
            workspace,
            registry: Arc::new(WorkflowRegistry::course()),
            runner,
            reporter: quiet(),
            deny: Vec::new(),
            agent_cap: AGENT_CAP,
            run_ids: Arc::new(create_run_id),
        }
    }

    /// The workflows offered.
    pub fn registry(mut self, registry: WorkflowRegistry) -> Self {
        self.registry = Arc::new(registry);
        self
    }

    /// Where events and progress go.
    pub fn reporter(mut self, reporter: Reporter) -> Self {
        self.reporter = reporter;
        self
    }

    /// Workflows refused by settings (course `check_permission`'s deny list).
    pub fn deny(mut self, names: Vec<String>) -> Self {
        self.deny = names;
        self
    }

    /// The agent cap of each run.
    pub fn agent_cap(mut self, cap: usize) -> Self {
        self.agent_cap = cap;
        self
    }

    /// Where fresh run ids come from.
    pub fn run_ids(mut self, source: RunIdSource) -> Self {
        self.run_ids = source;
        self
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The model-facing entry (course `run_workflow`): the saved workflow `name` with `args`, or a
    /// resume of `resume_from_run_id`. Returns `{"launched", "result", "task"}`.
    ///
    /// # Errors
    /// `workflow name must be a string`, `unknown workflow '{name}'`,
    /// `workflow args must be an object`, `invalid workflow runId`, and those of
    /// [`WorkflowRuntime::call`].
    pub async fn run_workflow(
        &self,
        name: &Value,
        args: Option<&Value>,
        resume_from_run_id: Option<&Value>,
    ) -> Result<Value> {
        let Value::String(name) = name else {
            return Err(WorkflowInputError::new("workflow name must be a string"));
        };
        let Some((meta, script)) = self.registry.get(name) else {
            return Err(WorkflowInputError::new(format!("unknown workflow '{name}'")));
        };
        let args = match args {
            None | Some(Value::Null) => None,
            Some(args @ Value::Object(_)) => Some(args.clone()),
            Some(_) => return Err(WorkflowInputError::new("workflow args must be an object")),
        };
        let resume = match resume_from_run_id {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.as_str()),
            Some(_) => return Err(WorkflowInputError::new("invalid workflow runId")),
        };
        Ok(self.call(&meta, script, args, resume).await?.to_value())
    }

    /// Runs `script` under `meta` (course `WorkflowTool.call`): checks the metadata and the
    /// permission; reserves a fresh run id, or checks `resume_from_run_id`; holds the run's lock
    /// throughout; for a resume checks the snapshot (same workflow; `args` `None` takes the saved
    /// ones, others must equal them) and the whole journal before anything is rewritten. Then
    /// reports `async_launched` and `task_started`, writes the snapshot, runs the script (its
    /// failure makes the run `failed` with `{"error": message}`), and writes the output, the
    /// snapshot and `last_run.txt` before reporting `task_notification`.
    ///
    /// # Errors
    /// The metadata's, `workflow '{name}' denied by settings`, those of the run id, the lock
    /// (`workflow run {id} is already active`), the resume checks
    /// (`resume runId does not match workflow meta`, `resume args do not match the original run`,
    /// `resume snapshot not found for {id}`, `invalid resume journal record at line {n}`, …), and
    /// a run file that cannot be written.
    pub async fn call(
        &self,
        meta: &WorkflowMeta,
        script: crate::runtime::ScriptFn,
        args: Option<Value>,
        resume_from_run_id: Option<&str>,
    ) -> Result<WorkflowOutcome> {
        meta.validate()?;
        if self.deny.iter().any(|d| d == &meta.name) {
            return Err(WorkflowInputError::new(format!("workflow '{}' denied by settings", meta.name)));
        }
        let store = RunStore::open(&self.workspace)?;
        let resuming = resume_from_run_id.is_some();
        let run_id = match resume_from_run_id {
            Some(id) => validate_run_id(id)?.to_owned(),
            None => store.reserve_run_id(|| (self.run_ids)(&meta.name))?,
        };
        let _lock = store.lock(&run_id)?;

        // Everything a resume reads is checked before anything of the run is rewritten.
        let (args, journal) = if resuming {
            let snapshot = store.read_snapshot(&run_id)?;
            if snapshot.get("workflowName").and_then(Value::as_str) != Some(meta.name.as_str()) {
                return Err(WorkflowInputError::new("resume runId does not match workflow meta"));
            }
            let saved = match snapshot.get("args") {
                None => json!({}),
                Some(saved @ Value::Object(_)) => saved.clone(),
                Some(_) => {
                    return Err(WorkflowInputError::new(format!("invalid resume snapshot for {run_id}")));
                }
            };
            let args = match args {
                None => saved,
                Some(args) if py_eq(&args, &saved) => args,
                Some(_) => return Err(WorkflowInputError::new("resume args do not match the original run")),
            };
            let cache = WorkflowJournal::load(&store, &run_id)?;
            (args, WorkflowJournal::open(&store, &run_id, Some(cache))?)
        } else {
            let args = args.filter(crate::schema::py_truthy).unwrap_or_else(|| json!({}));
            (args, WorkflowJournal::open(&store, &run_id, None)?)
        };

        let task_id = format!("local_workflow_{run_id}");
        let launched = json!({
            "status": "async_launched",
            "taskId": task_id,
            "taskType": "local_workflow",
            "runId": run_id,
            "workflowName": meta.name,
        });
        let phases = meta.phases.as_deref().unwrap_or_default().join(",");
        let budget = Budget::from_arg(args.get("budget"));
        let run = Arc::new(RunContext::new(
            LocalWorkflowTask::new(&task_id, &run_id, &meta.name),
            journal,
            (self.runner)(),
            budget.clone().unwrap_or_else(|_| Budget::new(None)),
            ExecutionLimits::with_cap(self.agent_cap),
            Arc::clone(&self.reporter),
            Arc::clone(&self.registry),
        ));
        run.event("async_launched", vec![("runId", run_id.clone()), ("taskId", task_id.clone())]);
        run.event(
            "task_started",
            vec![
                ("workflow", meta.name.clone()),
                ("phases", if phases.is_empty() { "-".to_owned() } else { phases }),
                ("resume", if resuming { "True" } else { "False" }.to_owned()),
            ],
        );
        let snapshot = |task: &LocalWorkflowTask| json!({"runId": run_id, "workflowName": meta.name, "args": args, "task": task.serialize()});
        let written = store.write_json(&format!("{run_id}.json"), &snapshot(&run.task()));

        let outcome = match (written, budget) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(()), Ok(_)) => {
                script(ExecutionState::new(Arc::clone(&run), args.clone()), args.clone()).await
            }
        };
        let result = match outcome {
            Ok(result) => {
                run.set_status("completed");
                result
            }
            Err(e) => {
                run.set_status("failed");
                json!({"error": e.0})
            }
        };
        run.journal().close();

        let task = run.task();
        store.write_json(&format!("{run_id}.output.json"), &result)?;
        store.write_json(&format!("{run_id}.json"), &snapshot(&task))?;
        store.save_last_run(&run_id)?;
        run.event(
            "task_notification",
            vec![
                ("status", task.status.clone()),
                ("agents", task.agents.to_string()),
                ("tokens", task.tokens.to_string()),
                ("outputFile", format!("{STORE_DIR}/{run_id}.output.json")),
            ],
        );
        Ok(WorkflowOutcome { launched, result, task })
    }
}
