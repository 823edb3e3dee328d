//! The course's eight s10 tests (`tests/test_task_system.py`), under their own names, against
//! real files in a fresh workspace: the store directly where the course calls its functions, the
//! dispatch map (parse, run, `Error: …`) where the course calls `execute_tool`. Then ours: bad
//! files, crash-safe bytes, two processes' worth of races.

use std::path::Path;
use std::sync::Arc;

use agent_core::dispatch::DispatchMap;
use agent_core::events::silent;
use agent_core::messages::ToolUseBlock;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use serde_json::{Value, json};
use tasks::store::{Claim, Completion, Status, TaskStore};
use tasks::{TaskError, TaskTools};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A fresh workspace with the s10 tools: the five base tools, then the six task tools, over a
/// store drawing ids from `ids` (random when `None`).
struct Chapter {
    dir: tempfile::TempDir,
    tools: TaskTools,
    map: DispatchMap,
}

impl Chapter {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        Self::with(TaskStore::new)
    }

    fn with(store: impl FnOnce(&Workspace) -> TaskStore) -> Result<Self, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let ws = Workspace::new(dir.path())?;
        let tools = TaskTools::with_store(store(&ws), silent());
        let map = tools.add_to(tools::all(&ws, &ToolOptions::default()));
        Ok(Self { dir, tools, map })
    }

    fn store(&self) -> &TaskStore {
        self.tools.store()
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The course's `execute_tool`: the result text of one call, as the model gets it.
    async fn execute_tool(&self, name: &str, input: Value) -> String {
        let block =
            ToolUseBlock { id: "toolu_1".into(), name: name.into(), input, extra: Default::default() };
        self.map.dispatch(&block).await.content
    }

    /// The id in a `Created task_x: …` result (the course's `result.split()[1].rstrip(":")`).
    async fn create(&self, subject: &str) -> String {
        let result = self.execute_tool("create_task", json!({"subject": subject})).await;
        assert!(result.starts_with("Created task_"), "{result}");
        result.split_whitespace().nth(1).unwrap_or_default().trim_end_matches(':').to_owned()
    }
}

#[tokio::test]
async fn test_s10_keeps_the_s04_kernel_and_adds_task_tools() -> TestResult {
    let chapter = Chapter::new()?;
    assert_eq!(
        chapter.map.names(),
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "create_task",
            "update_task",
            "list_tasks",
            "get_task",
            "claim_task",
            "complete_task"
        ]
    );
    assert!(!chapter.path().join(".tasks").exists(), "building the tools creates no .tasks");
    let specs = chapter.map.specs();
    let create = specs.iter().find(|s| s.name == "create_task").ok_or("create_task")?;
    assert!(create.input_schema["properties"].get("blockedBy").is_none());
    assert_eq!(create.input_schema["additionalProperties"], false);
    let update = specs.iter().find(|s| s.name == "update_task").ok_or("update_task")?;
    assert_eq!(update.input_schema["required"], json!(["task_id", "addBlockedBy"]));
    // The permission hook and the rest of the kernel are the chapter's (`setup.kernel`): the
    // end-to-end test `suite::s10` sees them act on the real binary.
    assert!(!chapter.path().join(".memory").exists());
    Ok(())
}

#[tokio::test]
async fn test_dependencies_gate_claim_and_completion_checks_owner() -> TestResult {
    let chapter = Chapter::new()?;
    let store = chapter.store();
    let schema = store.create("design schema", "")?;
    let api = store.create("write API", "")?;
    store.update_dependencies(&json!(api.id), &json!([schema.id]))?;

    let blocked = chapter.execute_tool("claim_task", json!({"task_id": api.id})).await;
    assert_eq!(blocked, format!("Blocked by: ['{}']", schema.id));
    assert_eq!(
        chapter.execute_tool("claim_task", json!({"task_id": schema.id})).await,
        format!("Claimed {} (design schema)", schema.id)
    );
    let done = chapter.execute_tool("complete_task", json!({"task_id": schema.id})).await;
    assert!(done.contains("Unblocked: write API"), "{done}");

    assert!(matches!(store.claim(&json!(api.id), "agent")?, Claim::Claimed(_)));
    match store.complete(&json!(api.id), "other")? {
        Completion::OwnedByOther(task) => {
            let text = chapter.execute_tool("get_task", json!({"task_id": task.id})).await;
            assert!(text.contains("\"owner\": \"agent\""), "{text}");
        }
        other => panic!("completed by someone else: {other:?}"),
    }
    // The tool completes as `agent`; the course's message names both owners.
    std::fs::write(
        chapter.path().join(format!(".tasks/{}.json", api.id)),
        std::fs::read_to_string(chapter.path().join(format!(".tasks/{}.json", api.id)))?
            .replace("\"owner\": \"agent\"", "\"owner\": \"other\""),
    )?;
    let refused = chapter.execute_tool("complete_task", json!({"task_id": api.id})).await;
    assert!(refused.contains("owned by other, not agent"), "{refused}");
    assert_eq!(store.load(&json!(schema.id))?.status, Status::Completed);
    Ok(())
}

#[tokio::test]
async fn test_dependencies_are_added_after_create_returns_runtime_ids() -> TestResult {
    let chapter = Chapter::new()?;
    let schema = chapter.create("design schema").await;
    let api = chapter.create("write API").await;
    let tests = chapter.create("write tests").await;
    for (task, deps) in [(&api, vec![&schema]), (&tests, vec![&api]), (&tests, vec![&schema])] {
        let result =
            chapter.execute_tool("update_task", json!({"task_id": task, "addBlockedBy": deps})).await;
        assert!(result.starts_with(&format!("Updated {task} blockedBy: ")), "{result}");
    }
    assert_eq!(chapter.store().load(&json!(tests))?.blocked_by, [api, schema]);
    Ok(())
}

#[tokio::test]
async fn test_invalid_and_missing_task_ids_become_tool_results() -> TestResult {
    let chapter = Chapter::new()?;
    let invalid = chapter.execute_tool("get_task", json!({"task_id": "../outside"})).await;
    assert!(invalid.starts_with("Error: Invalid task ID"), "{invalid}");
    assert_eq!(invalid, "Error: Invalid task ID: '../outside'");
    let missing = chapter.execute_tool("claim_task", json!({"task_id": "task_00000000"})).await;
    assert!(missing.starts_with("Error:"), "{missing}");
    let root = chapter.path().canonicalize()?;
    assert_eq!(
        missing,
        format!(
            "Error: [Errno 2] No such file or directory: '{}'",
            root.join(".tasks/task_00000000.json").display()
        )
    );
    Ok(())
}

#[tokio::test]
async fn test_create_retries_instead_of_overwriting_an_existing_id() -> TestResult {
    let mut draws = [0xdeadbeef_u32, 0xdeadbeef, 0xcafebabe].into_iter();
    let chapter = Chapter::with(|ws| TaskStore::with_ids(ws, move || draws.next().unwrap_or(0)))?;
    let first = chapter.store().create("first", "")?;
    let second = chapter.store().create("second", "")?;
    assert_eq!((first.id.as_str(), second.id.as_str()), ("task_deadbeef", "task_cafebabe"));
    let subjects: Vec<String> = chapter.store().list()?.into_iter().flatten().map(|t| t.subject).collect();
    assert_eq!(subjects, ["second", "first"], "file-name order");
    assert_eq!(chapter.store().load(&json!("task_deadbeef"))?.subject, "first", "not overwritten");

    // After the course's 100 attempts, all taken, it gives up.
    let full = Chapter::with(|ws| TaskStore::with_ids(ws, || 0xdeadbeef))?;
    full.store().create("only", "")?;
    assert!(matches!(full.store().create("again", ""), Err(TaskError::NoUniqueId)));
    assert_eq!(
        full.execute_tool("create_task", json!({"subject": "again"})).await,
        "Error: Could not allocate a unique task ID"
    );
    Ok(())
}

#[tokio::test]
async fn test_update_rejects_invalid_graph_changes_without_partial_mutation() -> TestResult {
    let chapter = Chapter::new()?;
    let schema = chapter.create("design schema").await;
    let api = chapter.create("write API").await;
    let before = std::fs::read(chapter.path().join(format!(".tasks/{api}.json")))?;

    let missing = chapter
        .execute_tool("update_task", json!({"task_id": api, "addBlockedBy": [schema, "task_00000000"]}))
        .await;
    assert_eq!(missing, "Error: Dependency not found: task_00000000");
    let itself =
        chapter.execute_tool("update_task", json!({"task_id": api, "addBlockedBy": [schema, api]})).await;
    assert_eq!(itself, "Error: Task cannot depend on itself");

    assert!(chapter.store().load(&json!(api))?.blocked_by.is_empty());
    assert_eq!(
        std::fs::read(chapter.path().join(format!(".tasks/{api}.json")))?,
        before,
        "the file is untouched"
    );
    Ok(())
}

#[tokio::test]
async fn test_update_is_idempotent_and_rejects_cycles_or_started_tasks() -> TestResult {
    let chapter = Chapter::new()?;
    let schema = chapter.create("design schema").await;
    let api = chapter.create("write API").await;
    chapter.execute_tool("update_task", json!({"task_id": api, "addBlockedBy": [schema, schema]})).await;
    chapter.execute_tool("update_task", json!({"task_id": api, "addBlockedBy": [schema]})).await;
    assert_eq!(chapter.store().load(&json!(api))?.blocked_by, std::slice::from_ref(&schema));

    let cycle = chapter.execute_tool("update_task", json!({"task_id": schema, "addBlockedBy": [api]})).await;
    assert!(cycle.starts_with("Error: Dependency cycle detected"), "{cycle}");
    assert_eq!(cycle, format!("Error: Dependency cycle detected: {schema} -> {api}"));

    chapter.execute_tool("claim_task", json!({"task_id": schema})).await;
    let started =
        chapter.execute_tool("update_task", json!({"task_id": schema, "addBlockedBy": [api]})).await;
    assert!(started.contains("only be updated while pending and unowned"), "{started}");
    Ok(())
}

#[cfg(unix)]
#[tokio::test]
async fn test_task_store_rejects_a_symlink_outside_the_workspace() -> TestResult {
    let chapter = Chapter::new()?;
    let outside = tempfile::tempdir()?;
    std::os::unix::fs::symlink(outside.path(), chapter.path().join(".tasks"))?;
    let result = chapter.execute_tool("create_task", json!({"subject": "escape"})).await;
    assert_eq!(result, "Error: Task store escapes the workspace");
    assert_eq!(std::fs::read_dir(outside.path())?.count(), 0, "nothing was written outside");
    Ok(())
}

// ---- ours, beyond the course's tests ----

/// A `.tasks` link that stays inside the workspace is refused too (the course follows it): a
/// model's command can make one, and the store would then write into the folder it names.
#[cfg(unix)]
#[tokio::test]
async fn a_tasks_link_inside_the_workspace_is_refused_and_nothing_is_written_through_it() -> TestResult {
    let chapter = Chapter::new()?;
    std::fs::create_dir(chapter.path().join("docs"))?;
    std::fs::write(chapter.path().join("docs/notes.md"), "mine")?;
    std::os::unix::fs::symlink("docs", chapter.path().join(".tasks"))?;
    let created = chapter.execute_tool("create_task", json!({"subject": "through the link"})).await;
    assert!(created.starts_with("Error: .tasks in the workspace is a symbolic link (to docs)"), "{created}");
    assert!(created.contains("rm .tasks"), "the text says what to do: {created}");
    let listed = chapter.execute_tool("list_tasks", json!({})).await;
    assert!(listed.starts_with("Error: .tasks in the workspace is a symbolic link"), "{listed}");
    let names: Vec<_> = std::fs::read_dir(chapter.path().join("docs"))?.filter_map(|e| e.ok()).collect();
    assert_eq!(names.len(), 1, "only the user's file is in docs/");
    assert_eq!(std::fs::read_to_string(chapter.path().join("docs/notes.md"))?, "mine");
    Ok(())
}

#[test]
fn a_task_file_is_the_bytes_python_writes() -> TestResult {
    let mut draws = [0x0c301f08_u32].into_iter();
    let chapter = Chapter::with(|ws| TaskStore::with_ids(ws, move || draws.next().unwrap_or(1)))?;
    let task = chapter.store().create("  设计 schema ", "d")?;
    chapter.store().claim(&json!(task.id), "agent")?;
    chapter.store().complete(&json!(task.id), "agent")?;
    // What the course's s10 wrote for the same task (COURSE-s10-s17 §1.5, ran).
    let python = "{\n  \"id\": \"task_0c301f08\",\n  \"subject\": \"\\u8bbe\\u8ba1 schema\",\n  \"description\": \"d\",\n  \"status\": \"completed\",\n  \"owner\": \"agent\",\n  \"blockedBy\": []\n}";
    assert_eq!(std::fs::read_to_string(chapter.path().join(".tasks/task_0c301f08.json"))?, python);
    let names: Vec<String> = std::fs::read_dir(chapter.path().join(".tasks"))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n != ".lock")
        .collect();
    assert_eq!(names, ["task_0c301f08.json"], "no temporary file is left");
    Ok(())
}

#[tokio::test]
async fn a_bad_file_is_one_bad_task_and_the_others_are_still_listed() -> TestResult {
    // Fixed ids, so that the listing's file-name order is known: task_00000010, task_00000011.
    let mut next = 0x10_u32;
    let chapter = Chapter::with(|ws| {
        TaskStore::with_ids(ws, move || {
            next += 1;
            next - 1
        })
    })?;
    let good = chapter.create("good").await;
    let tasks = chapter.path().join(".tasks");
    std::fs::write(tasks.join("task_00000001.json"), "{\"id\": \"task_00000001\", \"subj")?;
    std::fs::write(
        tasks.join("task_00000002.json"),
        "{\"id\": \"task_00000002\", \"subject\": \"s13\", \"description\": \"\", \"status\": \"pending\", \"owner\": null, \"blockedBy\": [], \"worktree\": null}",
    )?;
    std::fs::write(tasks.join("task_00000003.json"), "[1, 2]")?;
    std::fs::write(tasks.join("task_bad.json"), "{}")?;
    let list = chapter.execute_tool("list_tasks", json!({})).await;
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 5, "{list}");
    assert!(lines[0].starts_with(
        "[?] task_00000001: cannot be read: Task file .tasks/task_00000001.json is not valid JSON"
    ));
    assert!(lines[1].contains("has a key this chapter does not know: 'worktree'"), "{list}");
    assert!(lines[2].contains("is not a JSON object"), "{list}");
    assert_eq!(lines[3], format!("[ ] {good}: good [pending]"));
    assert_eq!(lines[4], "[?] task_bad: cannot be read: Invalid task ID: 'task_bad'");

    // An edge to a bad task is refused, naming the file; the bad file is left as it was.
    let edge = chapter
        .execute_tool("update_task", json!({"task_id": good, "addBlockedBy": ["task_00000002"]}))
        .await;
    assert!(edge.starts_with("Error: Task file .tasks/task_00000002.json has a key"), "{edge}");
    assert!(std::fs::read_to_string(tasks.join("task_00000002.json"))?.contains("worktree"));
    // A dependency whose file goes bad later counts as not completed: the claim is blocked.
    let dep = chapter.create("dep").await;
    chapter.execute_tool("update_task", json!({"task_id": good, "addBlockedBy": [dep]})).await;
    std::fs::write(tasks.join(format!("{dep}.json")), "")?;
    let claim = chapter.execute_tool("claim_task", json!({"task_id": good})).await;
    assert_eq!(claim, format!("Blocked by: ['{dep}']"));

    // A later chapter's store keeps the key, after the six, and writes it back.
    let s13 = TaskStore::new(&Workspace::new(chapter.path())?).allowing_keys(&["worktree"]);
    let task = s13.load(&json!("task_00000002"))?;
    assert_eq!(task.extra.get("worktree"), Some(&Value::Null));
    assert!(task.to_json().ends_with("\"blockedBy\": [],\n  \"worktree\": null\n}"));
    Ok(())
}

#[tokio::test]
async fn wrong_types_get_the_courses_messages() -> TestResult {
    let chapter = Chapter::new()?;
    let id = chapter.create("x").await;
    let cases = [
        (
            "update_task",
            json!({"task_id": id, "addBlockedBy": id}),
            "Error: addBlockedBy must be a list of task IDs",
        ),
        ("update_task", json!({"task_id": id, "addBlockedBy": [7]}), "Error: Invalid task ID: 7"),
        ("get_task", json!({"task_id": null}), "Error: Invalid task ID: None"),
        ("get_task", json!({"task_id": "it's"}), "Error: Invalid task ID: \"it's\""),
        ("claim_task", json!({"task_id": "a\u{a0}b"}), "Error: Invalid task ID: 'a\\xa0b'"),
        ("create_task", json!({"subject": " \t "}), "Error: Task subject cannot be empty"),
    ];
    for (tool, input, want) in cases {
        assert_eq!(chapter.execute_tool(tool, input.clone()).await, want, "{tool} {input}");
    }
    Ok(())
}

#[test]
fn claims_from_many_threads_give_the_task_to_one() -> TestResult {
    // Each thread has its own store, as another process would: only the lock file is shared.
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    let task = TaskStore::new(&ws).create("contended", "")?;
    let ws = Arc::new(ws);
    let wins: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (ws, id) = (Arc::clone(&ws), task.id.clone());
                scope.spawn(move || {
                    let store = TaskStore::new(&ws);
                    let claimed =
                        matches!(store.claim(&json!(id), &format!("agent{i}")), Ok(Claim::Claimed(_)));
                    usize::from(claimed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    assert_eq!(wins, 1, "exactly one claim wins");
    Ok(())
}
