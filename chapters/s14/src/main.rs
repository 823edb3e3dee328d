//! s14: MCP tools. External tools join the loop: `connect_mcp` discovers a server's tools, and
//! from the next request on they are sent as `mcp__{server}__{tool}`; the host, not the server,
//! decides which of them run without asking.
//!
//! ```text
//!  connect_mcp("docs") --> tools/list --> [mcp] connected: docs -> search, get_version
//!        |
//!  before every request: tools = built-ins + mcp__docs__search, mcp__docs__get_version
//!                         SYSTEM = BASE + "Connected MCP servers: docs"
//!        |
//!  mcp__deploy__trigger --> host policy: confirm --> [permission] External tool ... Allow? [y/N]
//! ```
//!
//! Changes from s04 (the course builds s14 on the s04 kernel): the base tools take s14's texts
//! (`bash` reports a failed command, `edit_file` edits text found exactly once, an unknown tool is
//! `Unknown tool: NAME`); the `mcp` crate's `connect_mcp`, pool and host-policy hook arrive; a
//! failed request becomes the answer `[Error] {Type}: {e}`; `/mcp` lists the servers. Beyond the
//! course: the servers of the workspace's `.mcp.json`, real programs, started once approved.
//!
//! Key insight: a server describes its tools, the host authorises them. Annotations such as
//! `readOnlyHint` are shown, never trusted.

use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Composed, Demo, ENVIRONMENT, Harness};
use agent_core::hooks::HookSet;
use agent_core::tools::{self, EditMatch, ExitStatusText, ToolOptions};
use agent_core::wording::{DenyList, UnknownTool};
use mcp::McpTools;
use std::sync::Arc;

const CHAPTER: Chapter = Chapter {
    name: "s14",
    banner: Banner::new("s14: MCP tools"),
    about: "s14: the s04 kernel and MCP tools: connect_mcp to the course's docs and deploy servers or to the real servers of .mcp.json; the host decides what runs.",
    demo: Demo {
        prompt: "Connect to the docs server, search for agent hooks, and tell me the current documentation API version. Then deploy the web service.",
        files: &[],
        turns: include_str!("../demo/turns.jsonl"),
        show: &[],
    },
};

fn main() -> std::process::ExitCode {
    chapter::main_with(&CHAPTER, |setup, approval: &ApprovalArgs| {
        // s14's base tools: a failed command reported, edits of text found exactly once.
        let options = ToolOptions {
            exit_status: ExitStatusText::Error,
            edit_match: EditMatch::ExactlyOne,
            ..setup.tool_options.clone()
        };
        let base = tools::all(&setup.workspace, &options)
            .unknown_tool(UnknownTool::Long)
            .describe("edit_file", "Replace exact text once.")
            .describe("glob", "Find files by glob pattern; ** matches recursively.");
        let mcp = McpTools::for_setup(setup, setup.approver(approval))?;
        let mut hooks =
            setup.course_hooks_with(approval, HookSet { deny_list: DenyList::Pattern, ..HookSet::default() });
        mcp.register_permission_hook(&mut hooks, setup.approver(approval));
        let harness = Harness {
            system: format!(
                "You are a coding agent at {}. Environment: {ENVIRONMENT}. Use built-in and connected MCP tools to solve tasks. Call connect_mcp before using a server.",
                setup.workdir()
            ),
            tools: mcp.add_to(base),
            extensions: vec![Box::new(mcp.extension()), Box::new(hooks)],
            commands: mcp.commands(),
        };
        let text = mcp.error_text();
        Ok::<_, String>(Composed { error_text: Some(Arc::new(text)), ..Composed::from(harness) })
    })
}
