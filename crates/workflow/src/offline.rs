//! `s16 demo` and `s16 resume` (the course's `python code.py demo` / `resume`, its `run_demo`):
//! `review-changes` on a sample change with the deterministic [`MockAgentRunner`], no model and no
//! key, printing the course's golden output (COURSE-s10-s17 §7.4). The second resumes the last run
//! and answers every `agent()` call from its journal: `agents=0  tokens=0`.
//!
//! Lines go to a callback, as every mechanism's output does; the chapter prints them.

use std::sync::Arc;

use agent_core::workspace::Workspace;
use serde_json::{Value, json};

use crate::runner::{AgentRunner, RunnerFactory};
use crate::state::Reporter;
use crate::store::RunStore;
use crate::{MockAgentRunner, WorkflowRuntime};

/// Which offline run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfflineRun {
    /// A new run of `review-changes` on [`crate::review::DEMO_CHANGES`].
    Demo,
    /// The last run again (`.runtime/last_run.txt`), every journalled call answered from the
    /// journal.
    Resume,
}

/// Runs `which` in `workspace`, each output line (without its newline) through `say`: the
/// launch or resume line, the run's events, the result and the closing
/// `status=…  agents=…  tokens=…  journal=…` line. Returns whether the run completed; a resume
/// with nothing to resume says so and counts as completed.
///
/// # Errors
/// The run could not start or failed: `.runtime/` unusable, a journal that cannot be read, the
/// workflow's own error. The text is the error's, for the chapter to show.
pub async fn run_offline(
    workspace: Workspace,
    which: OfflineRun,
    say: Arc<dyn Fn(&str) + Send + Sync>,
) -> Result<bool, String> {
    let resume_id = match which {
        OfflineRun::Demo => {
            say("launching workflow `review-changes`\n");
            None
        }
        OfflineRun::Resume => {
            let last = RunStore::existing(&workspace)
                .and_then(|store| store.map(|s| s.read_last_run()).transpose())
                .map_err(|e| e.to_string())?;
            match last.flatten() {
                Some(id) => {
                    say(&format!("resuming {id}; unchanged agent() calls use the journal cache\n"));
                    Some(id)
                }
                None => {
                    say("nothing to resume; run `s16 demo` first.");
                    return Ok(true);
                }
            }
        }
    };
    let events = Arc::clone(&say);
    let reporter: Reporter = Arc::new(move |event| events(&event.line()));
    let runner: RunnerFactory = Arc::new(|| Arc::new(MockAgentRunner) as Arc<dyn AgentRunner>);
    let workflows = WorkflowRuntime::new(workspace, runner).reporter(reporter);
    let args = json!({"budget": null, "changes": crate::review::DEMO_CHANGES});
    let resume = resume_id.map(Value::String);
    let out = workflows
        .run_workflow(&json!("review-changes"), Some(&args), resume.as_ref())
        .await
        .map_err(|e| e.to_string())?;
    say("\nresult:");
    for line in crate::review::result_lines(&out["result"]) {
        say(&line);
    }
    let task = &out["task"];
    say(&format!(
        "\nstatus={}  agents={}  tokens={}  journal=.runtime/{}.journal.jsonl",
        task["status"].as_str().unwrap_or_default(),
        task["usage"]["agents"],
        task["usage"]["tokens"],
        task["runId"].as_str().unwrap_or_default(),
    ));
    Ok(task["status"] == "completed")
}
