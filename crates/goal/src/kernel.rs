//! What s17's own small kernel holds beside the goal (course s17 is a kernel of its own, not the
//! s04 one): its permission rule for the file tools, and its texts. The tools themselves are the
//! base ones with [`agent_core::tools::ToolOptions::s17`].
//!
//! The course's s17 refuses a file tool whose path leaves the repository outright, with
//! `Permission denied: path is outside the repository`, where s04 asks `Allow? [y/N]`: a goal loop
//! runs many turns without the user, and a question in the middle of one would stall it.

use agent_core::dispatch::Subject;
use agent_core::hooks::{HookContext, HookEvent, HookRegistry, InsideWorkspace};

/// The refusal of a file tool's path outside the workspace (course s17, exact).
pub const OUTSIDE_REPOSITORY: &str = "Permission denied: path is outside the repository";

/// The worker's SYSTEM prompt (course s17, exact).
pub const WORKER_SYSTEM: &str = "You are a coding agent. Use tools to inspect and modify the current repository. \
Report concrete command results so an independent evaluator can judge completion.";

/// s17's tool descriptions (course s17, exact), by tool name.
pub const TOOL_DESCRIPTIONS: [(&str, &str); 5] = [
    ("bash", "Run a shell command in the current working directory."),
    ("read_file", "Read a UTF-8 text file inside the current repository."),
    ("write_file", "Write UTF-8 text inside the current repository."),
    ("edit_file", "Replace exact text once inside the current repository."),
    ("glob", "Find files matching a glob pattern; ** matches recursively."),
];

/// Registers s17's repository rule on `PreToolUse`, under the name `repository`: `read_file`,
/// `write_file` or `edit_file` with a path that `inside` says leaves the workspace is refused
/// with [`OUTSIDE_REPOSITORY`]; every other call passes to the hooks after it. Register it before
/// the permission hook, so that an outside path is refused, not asked about.
pub fn register_repository_hook(registry: &mut HookRegistry, inside: InsideWorkspace) {
    registry.register(HookEvent::PreToolUse, "repository", move |ctx| {
        let HookContext::PreToolUse { call } = ctx else { return Ok(None) };
        let path = match &call.subject {
            Subject::Path(p) | Subject::WrittenPath(p) => p,
            _ => return Ok(None),
        };
        let file_tool = matches!(call.name.as_str(), "read_file" | "write_file" | "edit_file");
        Ok((file_tool && !inside.inside(path)).then(|| OUTSIDE_REPOSITORY.to_owned()))
    });
}
