//! What a running workflow script holds (course `ExecutionState`, `LocalWorkflowTask`, `Budget`,
//! `ExecutionLimits`): the primitives `agent`, `parallel`, `pipeline`, `phase`, `log` and
//! `workflow`, the task's status, usage and progress, and the run-wide limits.
//!
//! Scheduling. Every branch of [`ExecutionState::parallel`] (and so every item of a pipeline)
//! starts by yielding once, and every model call yields once before it runs, as the course's
//! `asyncio.gather` (tasks start on the next turn of the loop) and `asyncio.to_thread` (the
//! answer arrives on a later turn) do. With the deterministic runner the progress lines therefore
//! come in the course's order: every audit starts, the first item goes on to `Verify` first, and
//! so on (COURSE-s10-s17 §7.4). With a real model they come as the answers do.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::future::{BoxFuture, join_all};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::hash::journal_key;
use crate::journal::WorkflowJournal;
use crate::runner::{AgentRunner, head};
use crate::runtime::WorkflowRegistry;
use crate::schema::SimpleJsonSchema;
use crate::{AGENT_CAP, CONCURRENCY, Result, WorkflowInputError};

/// A line the runtime reports as a run goes (the course prints them): an `event` of the task's
/// lifecycle or a `progress` entry. [`WorkflowEvent::line`] gives the course's text.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowEvent {
    /// `async_launched`, `task_started` or `task_notification`, with its fields in order.
    Event {
        /// The event's name.
        name: &'static str,
        /// `key=value` pairs, values as Python's `str` shows them.
        fields: Vec<(&'static str, String)>,
    },
    /// A progress entry as the snapshot keeps it: `{"type": "workflow_agent", "label": …}`.
    Progress(Value),
}

impl WorkflowEvent {
    /// The course's line: `  event      {name:<18} k=v …` or `  progress   {type:<16} k=v …`.
    pub fn line(&self) -> String {
        match self {
            WorkflowEvent::Event { name, fields } => {
                let pairs: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("  event      {name:<18} {}", pairs.join(" "))
            }
            WorkflowEvent::Progress(entry) => {
                let map = entry.as_object();
                let kind = map.and_then(|m| m.get("type")).map(py_str).unwrap_or_default();
                let pairs: Vec<String> = map
                    .into_iter()
                    .flatten()
                    .filter(|(k, _)| *k != "type")
                    .map(|(k, v)| format!("{k}={}", py_str(v)))
                    .collect();
                format!("  progress   {kind:<16} {}", pairs.join(" "))
            }
        }
    }
}

/// Python's `str()` of a JSON value: text as it is, `None`, `True`, `False`, numbers as Python
/// writes them, containers as their `repr`.
pub fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) if n.is_f64() => n.as_f64().map(pyjson::float_repr).unwrap_or_default(),
        other => pyjson::repr(other),
    }
}

/// Where a run's events go: the terminal in the REPL, stdout in `s16 demo`, nothing in a test.
pub type Reporter = Arc<dyn Fn(&WorkflowEvent) + Send + Sync>;

/// A reporter that drops every event.
pub fn quiet() -> Reporter {
    Arc::new(|_| {})
}

/// A run's task (course `LocalWorkflowTask`): status, usage and progress entries.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalWorkflowTask {
    /// `local_workflow_{run_id}`.
    pub task_id: String,
    /// The run id.
    pub run_id: String,
    /// The workflow's name.
    pub workflow_name: String,
    /// `running`, then `completed` or `failed`.
    pub status: String,
    /// `agent()` calls that ran (cached ones are not counted).
    pub agents: u64,
    /// Tokens they cost.
    pub tokens: u64,
    /// The progress entries, in order.
    pub progress: Vec<Value>,
}

impl LocalWorkflowTask {
    /// A running task with no usage yet.
    pub fn new(
        task_id: impl Into<String>,
        run_id: impl Into<String>,
        workflow_name: impl Into<String>,
    ) -> Self {
        Self {
            task_id: task_id.into(),
            run_id: run_id.into(),
            workflow_name: workflow_name.into(),
            status: "running".to_owned(),
            agents: 0,
            tokens: 0,
            progress: Vec::new(),
        }
    }

    /// `{"agents": n, "tokens": n}`.
    pub fn usage(&self) -> Value {
        json!({"agents": self.agents, "tokens": self.tokens})
    }

    /// The task as the snapshot and the tool result hold it (course `serialize_task`).
    pub fn serialize(&self) -> Value {
        json!({
            "taskId": self.task_id,
            "taskType": "local_workflow",
            "runId": self.run_id,
            "workflowName": self.workflow_name,
            "status": self.status,
            "usage": self.usage(),
            "progress": self.progress,
        })
    }
}

/// The run's token budget (course `Budget`): `None` is unlimited.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    total: Option<serde_json::Number>,
    spent: u64,
}

impl Budget {
    /// A budget of `total` tokens (`None`: unlimited).
    pub fn new(total: Option<u64>) -> Self {
        Self { total: total.map(Into::into), spent: 0 }
    }

    /// The budget `args.budget` asks for: `null` or missing is unlimited.
    ///
    /// # Errors
    /// `args.budget must be a number or null` for anything else.
    pub fn from_arg(value: Option<&Value>) -> Result<Self> {
        match value {
            None | Some(Value::Null) => Ok(Self { total: None, spent: 0 }),
            Some(Value::Number(n)) => Ok(Self { total: Some(n.clone()), spent: 0 }),
            Some(_) => Err(WorkflowInputError::new("args.budget must be a number or null")),
        }
    }

    fn total_f64(&self) -> Option<f64> {
        self.total.as_ref().and_then(serde_json::Number::as_f64)
    }

    /// Spends `tokens`; the spend is refused, and nothing spent, when it would pass the total.
    ///
    /// # Errors
    /// `token budget exceeded ({spent + n} > {total})`.
    pub fn add(&mut self, tokens: u64) -> Result<()> {
        if let (Some(total), Some(limit)) = (&self.total, self.total_f64()) {
            let after = self.spent.saturating_add(tokens);
            if after as f64 > limit {
                return Err(WorkflowInputError::new(format!(
                    "token budget exceeded ({after} > {})",
                    py_str(&Value::Number(total.clone()))
                )));
            }
        }
        self.spent = self.spent.saturating_add(tokens);
        Ok(())
    }

    /// Tokens spent so far.
    pub fn spent(&self) -> u64 {
        self.spent
    }

    /// Tokens left (infinite without a total; never below 0).
    pub fn remaining(&self) -> f64 {
        self.total_f64().map_or(f64::INFINITY, |t| (t - self.spent as f64).max(0.0))
    }
}

/// The run-wide limits, shared with nested workflows (course `ExecutionLimits`): the count of
/// `agent()` calls against the cap, and the semaphore of model calls in flight.
#[derive(Debug)]
pub struct ExecutionLimits {
    agents: Mutex<usize>,
    cap: usize,
    semaphore: Semaphore,
}

impl Default for ExecutionLimits {
    fn default() -> Self {
        Self::with_cap(AGENT_CAP)
    }
}

impl ExecutionLimits {
    /// Limits with an agent cap of `cap` and [`CONCURRENCY`] calls at once.
    pub fn with_cap(cap: usize) -> Self {
        Self { agents: Mutex::new(0), cap, semaphore: Semaphore::new(CONCURRENCY) }
    }

    fn claim_agent(&self) -> Result<()> {
        let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        *agents += 1;
        if *agents > self.cap {
            return Err(WorkflowInputError::new(format!("agent() cap reached ({})", self.cap)));
        }
        Ok(())
    }
}

/// What one run shares between its script, its branches and a nested workflow.
pub struct RunContext {
    task: Mutex<LocalWorkflowTask>,
    journal: WorkflowJournal,
    runner: Arc<dyn AgentRunner>,
    budget: Mutex<Budget>,
    limits: ExecutionLimits,
    reporter: Reporter,
    registry: Arc<WorkflowRegistry>,
}

impl RunContext {
    /// A run's context: its task, open journal, runner, budget, limits, where its events go, and
    /// the workflows `workflow()` may call.
    pub fn new(
        task: LocalWorkflowTask,
        journal: WorkflowJournal,
        runner: Arc<dyn AgentRunner>,
        budget: Budget,
        limits: ExecutionLimits,
        reporter: Reporter,
        registry: Arc<WorkflowRegistry>,
    ) -> Self {
        Self {
            task: Mutex::new(task),
            journal,
            runner,
            budget: Mutex::new(budget),
            limits,
            reporter,
            registry,
        }
    }

    /// The task as it is now.
    pub fn task(&self) -> LocalWorkflowTask {
        self.task.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Sets the task's status.
    pub fn set_status(&self, status: &str) {
        self.task.lock().unwrap_or_else(|p| p.into_inner()).status = status.to_owned();
    }

    /// The journal.
    pub fn journal(&self) -> &WorkflowJournal {
        &self.journal
    }

    /// Reports a lifecycle event.
    pub fn event(&self, name: &'static str, fields: Vec<(&'static str, String)>) {
        (self.reporter)(&WorkflowEvent::Event { name, fields });
    }

    fn progress(&self, kind: &str, data: Vec<(&str, Value)>) {
        let mut entry = Map::new();
        entry.insert("type".to_owned(), Value::String(kind.to_owned()));
        for (k, v) in data {
            entry.insert(k.to_owned(), v);
        }
        let entry = Value::Object(entry);
        self.task.lock().unwrap_or_else(|p| p.into_inner()).progress.push(entry.clone());
        (self.reporter)(&WorkflowEvent::Progress(entry));
    }
}

/// One `agent()` call: the prompt, and optionally a schema its answer must match, a label (the
/// default is the prompt's first 24 characters and `...`) and a phase (the default is the current
/// one).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentCall {
    /// The step's prompt.
    pub prompt: String,
    /// The JSON schema of the answer ([`SimpleJsonSchema`]).
    pub schema: Option<Value>,
    /// The label in progress lines and in the journal key.
    pub label: Option<String>,
    /// The phase shown in its progress line.
    pub phase: Option<String>,
}

impl AgentCall {
    /// A call with `prompt` alone.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self { prompt: prompt.into(), ..Self::default() }
    }

    /// The answer must match `schema`.
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The call's label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The call's phase.
    pub fn phase(mut self, phase: impl Into<String>) -> Self {
        self.phase = Some(phase.into());
        self
    }
}

/// A stage of [`ExecutionState::pipeline`]: `(previous value, original item, index)` to the
/// next value.
pub type Stage = Arc<dyn Fn(Value, Value, usize) -> BoxFuture<'static, Result<Value>> + Send + Sync>;

/// Makes a [`Stage`] of a closure.
pub fn stage<F, Fut>(f: F) -> Stage
where
    F: Fn(Value, Value, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value>> + Send + 'static,
{
    Arc::new(move |value, item, index| Box::pin(f(value, item, index)))
}

#[derive(Debug, Default)]
struct PhaseState {
    current: Option<String>,
    seen: Vec<String>,
}

/// The handle a workflow script gets (course `ExecutionState`): cheap to clone, shared by the
/// script's branches. A nested workflow gets its own, with the same run behind it.
#[derive(Clone)]
pub struct ExecutionState {
    run: Arc<RunContext>,
    args: Arc<Value>,
    depth: usize,
    phase: Arc<Mutex<PhaseState>>,
}

impl ExecutionState {
    /// The top-level state of a run, with the run's `args`.
    pub fn new(run: Arc<RunContext>, args: Value) -> Self {
        Self { run, args: Arc::new(args), depth: 0, phase: Arc::default() }
    }

    /// The run behind this state.
    pub fn run(&self) -> &Arc<RunContext> {
        &self.run
    }

    /// The arguments this (possibly nested) workflow was called with.
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// Starts the phase `title`: later calls without a phase of their own fall under it. Only its
    /// first start shows a `workflow_phase` line (each pipeline item may start it again).
    pub fn phase(&self, title: &str) {
        let first = {
            let mut phase = self.phase.lock().unwrap_or_else(|p| p.into_inner());
            phase.current = Some(title.to_owned());
            let first = !phase.seen.iter().any(|t| t == title);
            if first {
                phase.seen.push(title.to_owned());
            }
            first
        };
        if first {
            self.run.progress("workflow_phase", vec![("title", json!(title))]);
        }
    }

    /// Reports `message` as a `workflow_log` line.
    pub fn log(&self, message: &str) {
        self.run.progress("workflow_log", vec![("message", json!(message))]);
    }

    fn current_phase(&self, own: Option<&str>) -> Value {
        match own.filter(|p| !p.is_empty()) {
            Some(p) => json!(p),
            None => self
                .phase
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .current
                .clone()
                .map_or(Value::Null, Value::String),
        }
    }

    /// One model call (course `agent()`). The call counts against the agent cap (cached or
    /// not); a spent budget refuses it. An answer whose key is in the journal is returned from it
    /// (`status=cached`, after checking it against the schema); otherwise the runner is asked,
    /// under the concurrency limit, once more with `Return valid JSON.` when the answer does not
    /// match the schema; the tokens are spent, the answer journalled (`status=done`).
    ///
    /// # Errors
    /// `agent() cap reached (1000)`, `token budget exceeded`, `token budget exceeded (n > total)`,
    /// `cached agent output failed schema validation: …`, `agent({schema}) invalid output: …`,
    /// the runner's error, a journal that cannot be written.
    pub fn agent(&self, call: AgentCall) -> BoxFuture<'static, Result<Value>> {
        let this = self.clone();
        Box::pin(async move { this.agent_now(call).await })
    }

    async fn agent_now(&self, call: AgentCall) -> Result<Value> {
        let AgentCall { prompt, schema, label, phase } = call;
        let label = label.filter(|l| !l.is_empty()).unwrap_or_else(|| format!("{}...", head(&prompt, 24)));
        let run = &self.run;
        run.limits.claim_agent()?;
        if run.budget.lock().unwrap_or_else(|p| p.into_inner()).remaining() <= 0.0 {
            return Err(WorkflowInputError::new("token budget exceeded"));
        }
        let key = journal_key("agent", &label, &prompt, schema.as_ref());
        if let Some(cached) = run.journal.cached(&key) {
            if let Some(schema) = &schema {
                SimpleJsonSchema(schema).validate(&cached).map_err(|e| {
                    WorkflowInputError::new(format!("cached agent output failed schema validation: {e}"))
                })?;
            }
            let phase = self.current_phase(phase.as_deref());
            run.progress(
                "workflow_agent",
                vec![("label", json!(label)), ("phase", phase), ("status", json!("cached"))],
            );
            return Ok(cached);
        }

        let (value, tokens) = {
            let _permit = run
                .limits
                .semaphore
                .acquire()
                .await
                .map_err(|_| WorkflowInputError::new("the workflow run is closing"))?;
            // The answer arrives on a later turn, as the course's `to_thread` does.
            yield_once().await;
            let first = run.runner.run(&prompt, schema.as_ref(), Some(&label)).await?;
            let (mut value, mut tokens) = (first.value, first.tokens);
            if let Some(schema) = &schema
                && SimpleJsonSchema(schema).validate(&value).is_err()
            {
                let again = format!("{prompt}\n\nReturn valid JSON.");
                let retry = run.runner.run(&again, Some(schema), Some(&label)).await?;
                value = retry.value;
                tokens += retry.tokens;
                SimpleJsonSchema(schema)
                    .validate(&value)
                    .map_err(|e| WorkflowInputError::new(format!("agent({{schema}}) invalid output: {e}")))?;
            }
            (value, tokens)
        };

        run.budget.lock().unwrap_or_else(|p| p.into_inner()).add(tokens)?;
        {
            let mut task = run.task.lock().unwrap_or_else(|p| p.into_inner());
            task.agents += 1;
            task.tokens += tokens;
        }
        run.journal.record(&key, value.clone())?;
        let phase = self.current_phase(phase.as_deref());
        run.progress(
            "workflow_agent",
            vec![("label", json!(label)), ("phase", phase), ("status", json!("done"))],
        );
        Ok(value)
    }

    /// Runs every branch at once and waits for all of them (course `parallel`, a barrier). When
    /// one fails, the others still finish (their answers are journalled: a started model call is
    /// paid for), then the first failure in branch order is returned (course issue #570, fixed as
    /// its PR #571 does).
    ///
    /// # Errors
    /// The first failing branch's error.
    pub async fn parallel(&self, branches: Vec<BoxFuture<'static, Result<Value>>>) -> Result<Vec<Value>> {
        let started = branches.into_iter().map(|branch| async move {
            // Each branch starts on the next turn, as a task `asyncio.gather` makes does.
            yield_once().await;
            branch.await
        });
        join_all(started).await.into_iter().collect()
    }

    /// Runs each item through `stages` in order, all items at once, with no barrier between
    /// stages: item A may be in stage 3 while item B is in stage 1 (course `pipeline`). A stage
    /// gets `(previous value, original item, index)`; the first value is the item itself.
    ///
    /// # Errors
    /// As [`ExecutionState::parallel`]: the first failing item's error, once all have settled.
    pub async fn pipeline(&self, items: Vec<Value>, stages: Vec<Stage>) -> Result<Vec<Value>> {
        let runs = items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                let stages = stages.clone();
                Box::pin(async move {
                    let mut value = item.clone();
                    for stage in &stages {
                        value = stage(value, item.clone(), index).await?;
                    }
                    Ok(value)
                }) as BoxFuture<'static, Result<Value>>
            })
            .collect();
        self.parallel(runs).await
    }

    /// Runs the saved workflow `name` inline as a child (course `workflow()`): one level deep,
    /// sharing this run's journal, budget, agent count and progress. `args` `None` (or empty) is
    /// `{}`.
    ///
    /// # Errors
    /// `workflow() nesting is one level only`, `unknown workflow '{name}'`, the child's error.
    pub async fn workflow(&self, name: &str, args: Option<Value>) -> Result<Value> {
        if self.depth >= 1 {
            return Err(WorkflowInputError::new("workflow() nesting is one level only"));
        }
        let Some((_, script)) = self.run.registry.get(name) else {
            return Err(WorkflowInputError::new(format!("unknown workflow '{name}'")));
        };
        let args = args.filter(crate::schema::py_truthy).unwrap_or_else(|| json!({}));
        let child = ExecutionState {
            run: Arc::clone(&self.run),
            args: Arc::new(args.clone()),
            depth: self.depth + 1,
            phase: Arc::default(),
        };
        script(child, args).await
    }
}

/// A future that is pending once (waking itself at once), then ready: one turn of the scheduler.
fn yield_once() -> YieldOnce {
    YieldOnce(false)
}

struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
