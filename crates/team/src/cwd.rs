//! The five base tools of s13, run where their owner's task is (the course's `run_agent_bash`
//! … `run_agent_glob` for the Lead and `TeammateRuntime.bash` … `.glob` for a teammate).
//!
//! ```text
//!  tool_use bash {command} ─► assignment_cwd(owner) ─┬─ no task: the Lead runs in WORKDIR,
//!                                                    │           a teammate gets `Error: Claim a Task …`
//!                                                    ├─ a task: its worktree, or WORKDIR
//!                                                    └─ a lease gone stale: `Error: Invalid task assignment: …`
//!                            └─► the kernel's tool, confined to that folder
//! ```
//!
//! A worktree changes where the tools start, and which folder the file tools are confined to
//! (`Path escapes workspace`); it is not a sandbox: `bash` runs in the same sandbox as any
//! command, whose writable folder is that working directory. The permission check judges a
//! call where it runs: against the worktree when the task has one (the course checks paths
//! against `WORKDIR`, where a file only the worktree has would look new).
//!
//! s13's base tools differ from s02's in their texts (COURSE-s10-s17 §0.2, §4.3): a failed
//! command is `Error: command exited with status N`, an edit needs exactly one occurrence, an
//! unknown tool is `Unknown tool: NAME`, an empty glob is `No files found`, and `edit_file` and
//! `glob` are described in s13's words.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_core::dispatch::{DispatchMap, Subject, ToolError, TypedTool};
use agent_core::messages::{ToolSpec, ToolUseBlock};
use agent_core::tools::{self, EditMatch, ExitStatusText, ToolOptions};
use agent_core::wording::UnknownTool;
use agent_core::workspace::Workspace;
use serde_json::Value;

use crate::state::TeamState;

/// What s13's `glob` answers when nothing matches (the course's pathlib glob).
pub const NO_FILES_FOUND: &str = "No files found";

/// The names of the five base tools, in the course's order.
pub const BASE_TOOL_NAMES: [&str; 5] = ["bash", "read_file", "write_file", "edit_file", "glob"];

/// s13's five base tools in `ws` with the chapter's texts (module docs), on `options`' limits
/// and sandbox.
pub fn base_tools(ws: &Workspace, options: &ToolOptions) -> DispatchMap {
    let options = ToolOptions {
        exit_status: ExitStatusText::Error,
        edit_match: EditMatch::ExactlyOne,
        ..options.clone()
    };
    tools::all(ws, &options)
        .unknown_tool(UnknownTool::Long)
        .describe("edit_file", "Replace exact text once.")
        .describe("glob", "Find files by glob pattern; ** matches recursively.")
}

/// Whose working directory the tools follow, and what they do without a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The Lead (`agent` in the task files): in the workspace until it claims a task itself.
    Lead,
    /// A teammate: no file or shell tool before it holds a task (`Error: Claim a Task …`).
    Teammate(String),
}

impl Owner {
    /// The owner's name in the task files.
    pub fn name(&self) -> &str {
        match self {
            Owner::Lead => crate::state::LEAD_OWNER,
            Owner::Teammate(name) => name,
        }
    }
}

/// The five base tools of one owner, each run in the folder [`TeamState::assignment_cwd`]
/// gives at the time of the call. Clones share the cache of tools per folder.
#[derive(Clone)]
pub struct CwdTools {
    team: Arc<TeamState>,
    owner: Owner,
    options: ToolOptions,
    /// The tools of the workspace root: what the permission check judges calls against.
    root: DispatchMap,
    /// The tools of each folder a task of this owner ran in (worktrees; the root is `root`).
    by_folder: Arc<Mutex<HashMap<PathBuf, DispatchMap>>>,
}

impl CwdTools {
    /// The base tools of `owner` in `team`'s workspace, on `options`.
    pub fn new(team: Arc<TeamState>, owner: Owner, options: &ToolOptions) -> Self {
        let root = base_tools(team.workspace(), options);
        Self { team, owner, options: options.clone(), root, by_folder: Arc::default() }
    }

    /// The five tools, in the course's order, for a dispatch map.
    pub fn map(&self) -> DispatchMap {
        let mut map = DispatchMap::new().unknown_tool(UnknownTool::Long);
        for (name, spec) in BASE_TOOL_NAMES.iter().zip(self.root.specs().iter()) {
            map.register(CwdTool { name, spec: spec.clone(), tools: self.clone() });
        }
        map
    }

    /// The folder this owner's tools run in now, or the error text after `Error: `: the
    /// team's answer for a teammate ([`TeamState::teammate_cwd`]) or the Lead
    /// ([`TeamState::lead_cwd`]).
    fn folder(&self) -> Result<PathBuf, String> {
        let folder = match &self.owner {
            Owner::Lead => self.team.lead_cwd(),
            Owner::Teammate(name) => self.team.teammate_cwd(name),
        };
        folder.map_err(|text| text.strip_prefix("Error: ").map_or(text.clone(), str::to_owned))
    }

    /// The tools confined to `folder` (built once per folder).
    fn tools_in(&self, folder: PathBuf) -> Result<DispatchMap, String> {
        if crate::assignment::same_dir(&folder, self.team.workspace().root()) {
            return Ok(self.root.clone());
        }
        let mut cache = self.by_folder.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(map) = cache.get(&folder) {
            return Ok(map.clone());
        }
        let ws = Workspace::new(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let map = base_tools(&ws, &self.options);
        cache.insert(folder, map.clone());
        Ok(map)
    }
}

/// One base tool that follows its owner's working directory.
struct CwdTool {
    name: &'static str,
    spec: ToolSpec,
    tools: CwdTools,
}

impl CwdTool {
    fn block(&self, input: Value) -> ToolUseBlock {
        ToolUseBlock { id: String::new(), name: self.name.to_owned(), input, extra: Default::default() }
    }
}

impl TypedTool for CwdTool {
    type Args = Value;

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    /// What the kernel's tool says the call is about.
    fn subject(&self, args: &Value) -> Subject {
        self.tools.root.prepare(&self.block(args.clone())).subject
    }

    /// The task's worktree when the call will run there, so that the permission check judges
    /// the call where it runs (a file only the worktree has is that folder's, not the root's).
    /// Unlike `run`, this reads the owner's lease on the loop's thread: the check needs the folder
    /// before the call runs, and the calls of a response are prepared one at a time, each just
    /// before it runs, so the folder judged is the folder used.
    fn folder(&self, _args: &Value) -> Option<Workspace> {
        let folder = self.tools.folder().ok()?;
        if crate::assignment::same_dir(&folder, self.tools.team.workspace().root()) {
            return None;
        }
        Workspace::new(&folder).ok()
    }

    async fn run(self: Arc<Self>, args: Value) -> Result<String, ToolError> {
        // The lease is checked against the task files: blocking work, off the runtime's thread.
        let tools = self.tools.clone();
        let map =
            tokio::task::spawn_blocking(move || tools.folder().and_then(|folder| tools.tools_in(folder)))
                .await
                .map_err(|e| ToolError::failed(format!("{} stopped: {e}", self.name)))?
                .map_err(ToolError::Failed)?;
        let outcome = map.dispatch(&self.block(args)).await;
        if outcome.is_error {
            let text = outcome.content.strip_prefix("Error: ").unwrap_or(&outcome.content);
            return Err(ToolError::Failed(text.to_owned()));
        }
        if self.name == "glob" && outcome.content == "(no matches)" {
            return Ok(NO_FILES_FOUND.to_owned());
        }
        Ok(outcome.content)
    }
}
