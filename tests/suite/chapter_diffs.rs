//! The course's promise: diff a chapter's `main.rs` against the one before and see one mechanism.
//! These tests diff the real files (as `diff chapters/sNN/src/main.rs chapters/sMM/src/main.rs`
//! would) and check what the changed code lines mention. Comment lines (the diagram, the changes
//! list), the `about:` line (the `--help` sentence) and the `banner:` line (the REPL's title) are
//! left out: they describe the chapter in prose, they are not its code.

use similar::{ChangeTag, TextDiff};

/// The changed code lines (inserted or deleted; comments, `about:` and `banner:` excluded) between two
/// chapters' mains.
fn changed_code(from: &str, to: &str) -> Vec<String> {
    let read = |chapter: &str| {
        let path = format!("{}/../chapters/{chapter}/src/main.rs", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let (old, new) = (read(from), read(to));
    TextDiff::from_lines(&old, &new)
        .iter_all_changes()
        .filter(|c| c.tag() != ChangeTag::Equal)
        .map(|c| c.value().trim().to_owned())
        .filter(|line| {
            !line.is_empty()
                && !line.starts_with("//")
                && !line.starts_with("about:")
                && !line.starts_with("banner:")
        })
        .collect()
}

/// Asserts that some changed line mentions each of `wanted` and none mentions any of `unwanted`
/// (both case-insensitive).
fn assert_mentions(from: &str, to: &str, wanted: &[&str], unwanted: &[&str]) {
    let lines = changed_code(from, to);
    let lower: Vec<String> = lines.iter().map(|l| l.to_lowercase()).collect();
    for w in wanted {
        assert!(
            lower.iter().any(|l| l.contains(&w.to_lowercase())),
            "{from} -> {to} never mentions {w:?}: {lines:#?}"
        );
    }
    for u in unwanted {
        let hits: Vec<&String> =
            lines.iter().zip(&lower).filter(|(_, l)| l.contains(&u.to_lowercase())).map(|(l, _)| l).collect();
        assert!(hits.is_empty(), "{from} -> {to} mentions {u:?}: {hits:#?}");
    }
}

#[test]
fn s01_to_s02_is_the_dispatch_map_alone() {
    assert_mentions("s01", "s02", &["tools::s02"], &["hook", "approv", "glob", "todo", "nag", "extensions"]);
}

#[test]
fn s02_to_s03_is_the_todo_tool_and_its_nag() {
    assert_mentions("s02", "s03", &["todo_tool", "nag"], &["hook", "approv", "glob", "todo_write"]);
}

#[test]
fn s03_to_s04_adds_hooks_and_glob_and_not_todo_write() {
    assert_mentions("s03", "s04", &["course_hooks", "ApprovalArgs", "tools::glob"], &["todo_write"]);
}

#[test]
fn s04_to_s05_is_todo_write_and_no_hook_approval_or_glob_code() {
    assert_mentions("s04", "s05", &["todo_write"], &["hook", "approv", "glob", "permission", "--yes"]);
}

#[test]
fn s04_to_s06_is_the_kernel_in_one_call_and_the_task_tool() {
    // From s06 on every chapter is the s04 kernel plus one mechanism (COURSE §4): the todo list
    // and the hand-built tools and hooks leave, the kernel (one call) and the subagent arrive;
    // nothing of the permission check is written in the chapter.
    assert_mentions(
        "s04",
        "s06",
        &["kernel", "Subagents", "task_tool", "todo_tool"],
        &["permission", "approver", "deny"],
    );
}

#[test]
fn s06_to_s07_is_the_task_tool_leaving_and_the_skills_arriving() {
    // Both are the s04 kernel plus one mechanism (COURSE §4): the diff swaps the subagent for the
    // skill loader (its catalog in SYSTEM, load_skill in the tools) and touches nothing else.
    assert_mentions(
        "s06",
        "s07",
        &["Subagents", "task_tool", "SkillLoader", "system_section", "load_skill_tool"],
        &["permission", "approver", "deny", "hook", "todo"],
    );
}

#[test]
fn s06_to_s08_swaps_the_task_tool_for_compaction() {
    // Both are the s04 kernel plus one mechanism (COURSE §4): the diff is the subagents leaving
    // and compaction (its extension, its tool, its flags and commands) arriving. The course's s08
    // kernel registers fewer hooks (no UserPromptSubmit or Stop, `compact` past every hook) and
    // names the deny-list entry, so the diff picks those (a `HookSet`); nothing of the permission
    // check itself is written here.
    assert_mentions(
        "s06",
        "s08",
        &["Subagents", "task_tool", "Compaction", "compact_tool", "CompactArgs", "HookSet", "unhooked_tools"],
        &["permission", "approver", "todo", "course_hooks"],
    );
}

#[test]
fn s06_to_s09_is_the_task_tool_leaving_and_memory_arriving() {
    // Both are the s04 kernel plus one mechanism (COURSE §4): the subagent's task tool and its
    // commands leave, the memory extension and its commands arrive; the kernel differs only in
    // the deny list's wording, which the course's s09 gives the matched entry, and nothing of the
    // permission check or the base tools is written here.
    assert_mentions(
        "s06",
        "s09",
        &["Subagents", "task_tool", "Memory", "memory.extension", "memory.commands", "DenyList::Pattern"],
        &["permission", "approver", "todo", "course_hooks", "tools::"],
    );
}

#[test]
fn s06_to_s10_is_the_task_tool_leaving_and_the_task_system_arriving() {
    // Both are the s04 kernel plus one mechanism (COURSE-s10-s17 §0.1), with the kernel's plain
    // deny-list text (s09 names the matched entry, so s06 is the closer base): the subagent's
    // task tool and its commands leave, the task tools (added after the kernel's five) and
    // `/tasks` arrive; the kernel call is the same line in both, and nothing of the permission
    // check is written here.
    assert_mentions(
        "s06",
        "s10",
        &["Subagents", "task_tool", "TaskTools", "tasks.add_to", "tasks.commands"],
        &["permission", "approver", "deny", "todo", "course_hooks", "tools::all", "setup.kernel"],
    );
}

#[test]
fn s06_to_s11_is_the_task_tool_leaving_and_background_bash_arriving() {
    // Both are the s04 kernel plus one mechanism (COURSE-s10-s17 §0.1): the subagent's task tool
    // and its commands leave; the BackgroundManager arrives with its bash (which replaces the
    // kernel's in place), its collector before each request and `/bg`. Nothing of the permission
    // check or the other base tools is written here: a background call passes the same hooks.
    assert_mentions(
        "s06",
        "s11",
        &[
            "Subagents",
            "task_tool",
            "BackgroundManager",
            "manager.bash_tool",
            "manager.extension",
            "manager.commands",
        ],
        &["permission", "approver", "todo", "course_hooks", "tools::", "DenyList"],
    );
}

#[test]
fn s09_to_s12_is_memory_leaving_and_the_scheduler_arriving() {
    // Both are the s04 kernel plus one mechanism: memory leaves; the scheduler arrives with its
    // tools, its delivery extension, `/cron` and its clock, and bash is set to the course's s12
    // exit-status text (a parameter of the one bash tool, not a copy of it).
    assert_mentions(
        "s09",
        "s12",
        &[
            "Memory",
            "Cron::start",
            "add_tools",
            "cron.extension",
            "cron.commands",
            "ExitStatusText::ErrorUncut",
        ],
        &["permission", "approver", "todo", "course_hooks", "fn run_bash"],
    );
}

#[test]
fn s09_to_s14_is_memory_leaving_and_mcp_tools_arriving() {
    // Both are the s04 kernel with the deny list naming the matched entry: memory leaves; the mcp
    // crate's tools arrive (`connect_mcp`, the per-request pool and SYSTEM, the host-policy hook
    // after the course's permission hook, `/mcp`, the `[Error]` answer), and the base tools take
    // s14's texts as parameters of the one set of tools. No question, no pool and no MCP
    // protocol is written here.
    assert_mentions(
        "s09",
        "s14",
        &[
            "Memory",
            "McpTools::for_setup",
            "mcp.add_to",
            "mcp.extension",
            "mcp.commands",
            "mcp.register_permission_hook",
            "mcp.error_text",
            "UnknownTool::Long",
        ],
        &["Question", "fn run_bash", "todo", "normalize_mcp_name", "rmcp", "call_tool"],
    );
}

#[test]
fn s14_to_s15_is_every_mechanism_composed_by_the_integrated_crate() {
    // s15 is no longer "the kernel plus one mechanism": the chapter is one call to the integrated
    // crate, which composes the crates of s03-s14. s14's own composition leaves.
    assert_mentions("s14", "s15", &["integrated::harness", "IntegratedArgs", "McpTools"], &[]);
    // Nothing of a mechanism is written in s15's main: no tool, no hook, no prompt, no recovery.
    let path = format!("{}/../chapters/s15/src/main.rs", env!("CARGO_MANIFEST_DIR"));
    let main = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let code: Vec<&str> = main
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("about:") && !l.starts_with("banner:"))
        .collect();
    for word in ["hook", "Tool", "SYSTEM", "system:", "escalate", "fallback", "Extension", "kernel", "impl "]
    {
        let hits: Vec<&&str> = code.iter().filter(|l| l.contains(word)).collect();
        assert!(hits.is_empty(), "s15's main.rs holds {word:?}: {hits:#?}");
    }
}

#[test]
fn s10_to_s13_is_the_team_arriving_on_the_task_system() {
    // The course builds s13 on s10's task system: the s10 task tools over the kernel leave for
    // the team crate's Lead tools (the five base tools in the task's folder, the six task tools
    // with one task per owner, the seven team tools), its wake extension and `/team`, `/inbox`;
    // the deny list names the matched entry and a failed request becomes the `[Error]` answer.
    // No loop, mailbox, protocol or permission question is written here.
    assert_mentions(
        "s10",
        "s13",
        &[
            "TaskTools",
            "TeamRuntime::start",
            "lead::lead_tools",
            "LeadWake::new",
            "lead::commands",
            "DenyList::Pattern",
            "error_type",
        ],
        &["fn run_bash", "MessageBus", "agent_loop", "Question", "approver", "tokio::spawn", "read_inbox"],
    );
}

#[test]
fn s15_to_s16_is_the_workflow_tool_on_the_integrated_host() {
    // s16 is the s15 host with Workflow appended last, /runs, and the offline demo and resume;
    // the runtime itself (journal, schema, limits, the run lock) lives in the workflow crate.
    assert_mentions(
        "s15",
        "s16",
        &[
            "integrated::harness",
            "WorkflowTool",
            "WorkflowExtension",
            "\"runs\"",
            "MockAgentRunner",
            "ApiAgentRunner",
        ],
        &["SimpleJsonSchema", "sha2", "flock", "Semaphore", "journal_key", "McpTools"],
    );
}

/// The course checks its s11 and s12 lessons are ASCII; every chapter's `main.rs` is held to it.
#[test]
fn every_chapters_lesson_file_is_ascii() {
    let chapters = e2e::chapter_names();
    let bad: Vec<String> = chapters
        .iter()
        .filter_map(|c| {
            let found = e2e::non_ascii_in_lesson(c);
            (!found.is_empty()).then(|| format!("{c}: {found:?}"))
        })
        .collect();
    assert!(bad.is_empty(), "lesson files with non-ASCII characters:\n{}", bad.join("\n"));
}
