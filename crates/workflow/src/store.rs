//! The run files in the workspace's `.runtime/` (course `STORE`): reserving a run id by exclusive
//! create, the cross-process run lock, the snapshot, output and `last_run.txt` replaced
//! atomically, and the list of runs for `/runs`.
//!
//! | file | what | written |
//! |---|---|---|
//! | `{run_id}.json` | `{"runId","workflowName","args","task"}` | reserved empty, then replaced at start and end |
//! | `{run_id}.journal.jsonl` | one `{"key","value"}` per finished `agent()` | appended, one write per line |
//! | `{run_id}.output.json` | the result (`{"error": …}` for a failed run) | replaced at the end |
//! | `{run_id}.lock` | the run lock's file (`flock`) | created |
//! | `last_run.txt` | the last run's id, no new line | replaced at the end |
//!
//! JSON files are written as the course's `json.dumps(value, indent=2)`.

use agent_core::workspace::Workspace;
use serde_json::{Map, Value};
use store::{StoreDir, StoreLock};

use crate::{RUN_ID_ATTEMPTS, Result, STORE_DIR, WorkflowInputError};

/// The largest snapshot or output read back (bytes).
const MAX_JSON_BYTES: u64 = 64 << 20;

/// The largest journal read back on resume (bytes): 1000 calls of about 250 KiB each.
pub const MAX_JOURNAL_BYTES: u64 = 256 << 20;

/// The run files' folder of one workspace.
#[derive(Debug)]
pub struct RunStore {
    dir: StoreDir,
}

fn io_error(what: &str, e: impl std::fmt::Display) -> WorkflowInputError {
    WorkflowInputError::new(format!("{STORE_DIR}/{what}: {e}"))
}

/// `^wf_[A-Za-z0-9][A-Za-z0-9._-]{0,63}_[0-9a-f]{16}$` (course `RUN_ID_RE`).
pub fn is_run_id(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("wf_") else { return false };
    let Some((name, suffix)) = rest.rsplit_once('_') else { return false };
    crate::runtime::is_workflow_name(name)
        && suffix.len() == 16
        && suffix.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Checks a run id given from outside (course `validate_run_id`).
///
/// # Errors
/// `invalid workflow runId`.
pub fn validate_run_id(text: &str) -> Result<&str> {
    if is_run_id(text) { Ok(text) } else { Err(WorkflowInputError::new("invalid workflow runId")) }
}

/// `wf_{name}_{16 hex digits}` (course `create_run_id`), drawn from the thread's random numbers.
pub fn create_run_id(name: &str) -> String {
    format!("wf_{name}_{:016x}", fastrand::u64(..))
}

/// One run in the folder, as `/runs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run id.
    pub run_id: String,
    /// The workflow's name.
    pub workflow: String,
    /// `running`, `completed`, `failed`, or `unknown` for a snapshot that cannot be read (one
    /// being reserved, or damaged).
    pub status: String,
    /// `agent()` calls that ran (cached ones not counted).
    pub agents: u64,
    /// Tokens those calls cost.
    pub tokens: u64,
}

impl RunStore {
    /// The folder in `workspace`, created when missing.
    ///
    /// # Errors
    /// The folder is a symbolic link, no folder, or cannot be made (the text says what to do).
    pub fn open(workspace: &Workspace) -> Result<Self> {
        match StoreDir::open_harness(workspace, STORE_DIR, true) {
            Ok(Some(dir)) => Ok(Self { dir }),
            Ok(None) => Err(io_error("", "cannot be created")),
            Err(e) => Err(WorkflowInputError::new(e.to_string())),
        }
    }

    /// The folder, when it exists.
    ///
    /// # Errors
    /// As [`RunStore::open`].
    pub fn existing(workspace: &Workspace) -> Result<Option<Self>> {
        match StoreDir::open_harness(workspace, STORE_DIR, false) {
            Ok(dir) => Ok(dir.map(|dir| Self { dir })),
            Err(e) => Err(WorkflowInputError::new(e.to_string())),
        }
    }

    /// The folder handle.
    pub fn dir(&self) -> &StoreDir {
        &self.dir
    }

    /// Reserves a fresh run id (course `reserve_run_id`): creates its empty snapshot
    /// exclusively, trying up to [`RUN_ID_ATTEMPTS`] ids from `draw`, so that no
    /// two runs ever share files and no existing run's journal is truncated.
    ///
    /// # Errors
    /// `could not allocate a unique workflow runId` when every id was taken;
    /// `invalid workflow runId` for a drawn id of the wrong form; an I/O error.
    pub fn reserve_run_id(&self, mut draw: impl FnMut() -> String) -> Result<String> {
        for _ in 0..RUN_ID_ATTEMPTS {
            let run_id = draw();
            validate_run_id(&run_id)?;
            let name = format!("{run_id}.json");
            if self.dir.create_new(&name, b"").map_err(|e| io_error(&name, e))? {
                return Ok(run_id);
            }
        }
        Err(WorkflowInputError::new("could not allocate a unique workflow runId"))
    }

    /// Takes the run's lock (`{run_id}.lock`, `flock(LOCK_EX | LOCK_NB)`), held by the returned
    /// guard for the whole run. Another thread or process holding it, even this one's, refuses.
    ///
    /// # Errors
    /// `workflow run {run_id} is already active`; an I/O error.
    pub fn lock(&self, run_id: &str) -> Result<StoreLock> {
        match self.dir.try_lock(&format!("{run_id}.lock")) {
            Ok(Some(lock)) => Ok(lock),
            Ok(None) => Err(WorkflowInputError::new(format!("workflow run {run_id} is already active"))),
            Err(e) => Err(io_error(&format!("{run_id}.lock"), e)),
        }
    }

    /// Reads the snapshot of `run_id` for a resume (course `_read_snapshot`).
    ///
    /// # Errors
    /// `resume snapshot not found for {id}`, `invalid resume snapshot for {id}`.
    pub fn read_snapshot(&self, run_id: &str) -> Result<Map<String, Value>> {
        let invalid = || WorkflowInputError::new(format!("invalid resume snapshot for {run_id}"));
        let bytes = match self.dir.read(&format!("{run_id}.json"), MAX_JSON_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(WorkflowInputError::new(format!("resume snapshot not found for {run_id}")));
            }
            Err(_) => return Err(invalid()),
        };
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(invalid()),
        }
    }

    /// Replaces `name` with `value` as `json.dumps(value, indent=2)`, atomically.
    ///
    /// # Errors
    /// The I/O error, naming the file.
    pub fn write_json(&self, name: &str, value: &Value) -> Result<()> {
        self.dir.replace(name, pyjson::dumps_indent(value, 2).as_bytes()).map_err(|e| io_error(name, e))
    }

    /// Records `run_id` as the last run (`last_run.txt`, no new line), atomically.
    ///
    /// # Errors
    /// The I/O error.
    pub fn save_last_run(&self, run_id: &str) -> Result<()> {
        self.dir.replace("last_run.txt", run_id.as_bytes()).map_err(|e| io_error("last_run.txt", e))
    }

    /// The last run's id (`last_run.txt`, stripped), if any.
    ///
    /// # Errors
    /// The I/O error; a file that is not UTF-8.
    pub fn read_last_run(&self) -> Result<Option<String>> {
        match self.dir.read("last_run.txt", 4096) {
            Ok(Some(bytes)) => String::from_utf8(bytes)
                .map(|s| Some(s.trim().to_owned()).filter(|s| !s.is_empty()))
                .map_err(|e| io_error("last_run.txt", e)),
            Ok(None) => Ok(None),
            Err(e) => Err(io_error("last_run.txt", e)),
        }
    }

    /// Every run whose snapshot is in the folder, sorted by run id.
    ///
    /// # Errors
    /// The I/O error of listing the folder.
    pub fn list(&self) -> Result<Vec<RunSummary>> {
        let names = self
            .dir
            .names(|n| n.strip_suffix(".json").is_some_and(is_run_id))
            .map_err(|e| io_error("", e))?;
        Ok(names
            .into_iter()
            .map(|name| {
                let run_id = name.trim_end_matches(".json").to_owned();
                let snapshot = self.read_snapshot(&run_id).ok();
                let task = snapshot.as_ref().and_then(|s| s.get("task"));
                let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
                let usage = |k: &str| {
                    task.and_then(|t| t.get("usage")).and_then(|u| u.get(k)).and_then(Value::as_u64)
                };
                RunSummary {
                    workflow: text(snapshot.as_ref().and_then(|s| s.get("workflowName"))).unwrap_or_default(),
                    status: text(task.and_then(|t| t.get("status"))).unwrap_or_else(|| "unknown".to_owned()),
                    agents: usage("agents").unwrap_or(0),
                    tokens: usage("tokens").unwrap_or(0),
                    run_id,
                }
            })
            .collect())
    }
}

/// `/runs` for `workspace`: [`render_runs`] over its `.runtime/`, the "no runs yet" line when
/// there is none.
///
/// # Errors
/// As [`RunStore::existing`], [`RunStore::list`] and [`RunStore::read_last_run`].
pub fn runs_view(workspace: &Workspace) -> Result<String> {
    let Some(store) = RunStore::existing(workspace)? else {
        return Ok(render_runs(&[], None));
    };
    let runs = store.list()?;
    let last = store.read_last_run().ok().flatten();
    Ok(render_runs(&runs, last.as_deref()))
}

/// `/runs`: one line per run, `*` before the last one (`last_run.txt`), with status, agents and
/// tokens.
pub fn render_runs(runs: &[RunSummary], last: Option<&str>) -> String {
    if runs.is_empty() {
        return format!(
            "No workflow runs yet in {STORE_DIR}/ (the model starts one with the Workflow tool)."
        );
    }
    let mut out = format!("Workflow runs in {STORE_DIR}/ (* = the last):\n");
    for run in runs {
        let mark = if Some(run.run_id.as_str()) == last { '*' } else { ' ' };
        out.push_str(&format!(
            "{mark} {}  {}  {}  agents={}  tokens={}\n",
            run.run_id, run.workflow, run.status, run.agents, run.tokens
        ));
    }
    out.pop();
    out
}
