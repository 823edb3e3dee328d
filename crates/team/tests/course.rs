//! The course's s13 tests of the team's state (`tests/test_agent_teams_runtime.py`), under their
//! own names, against real files, real Git repositories in temporary folders and, for the
//! cross-process ones, two real processes (`examples/team_board.rs`). Then ours: the mailbox
//! bytes, the wait, broken lines, s10's files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use agent_core::events::{Event, Events, silent};
use agent_core::workspace::Workspace;
use serde_json::{Map, json};
use tasks::TaskStore;
use tasks::owners::{ListStyle, NotFoundWording, OwnedClaim, OwnedCompletion, error_text, render_list};
use tasks::store::{Status, Task};
use team::bus::Message;
use team::protocol::{IGNORED_PLAN_RESPONSE, IGNORED_SHUTDOWN_REQUEST, RequestStatus};
use team::worktree::{CreateError, GitOutput, GitRunner, RemoveError, SystemGit, parse_porcelain};
use team::{PlanGate, TeamState, TeammateStatus};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A fresh workspace and its team, with the lines the team reported.
struct Fixture {
    dir: tempfile::TempDir,
    team: TeamState,
    lines: Arc<Mutex<Vec<String>>>,
}

fn collector() -> (Events, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    let events: Events = Arc::new(move |event: &Event<'_>| {
        if let Event::Line(_, text) = event
            && let Ok(mut lines) = sink.lock()
        {
            lines.push((*text).to_owned());
        }
    });
    (events, lines)
}

fn team_at(root: &Path, events: Events) -> Result<TeamState, Box<dyn std::error::Error>> {
    let ws = Workspace::new(root)?;
    Ok(TeamState::new(&ws, TaskStore::new(&ws).for_teams(), events))
}

impl Fixture {
    fn new() -> Result<Self, Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let (events, lines) = collector();
        let team = team_at(dir.path(), events)?;
        Ok(Self { dir, team, lines })
    }

    /// A fixture whose workspace is a Git repository with one commit.
    fn git() -> Result<Self, Box<dyn std::error::Error>> {
        let fixture = Self::new()?;
        init_git_repo(fixture.root())?;
        Ok(fixture)
    }

    fn with_git(self, git: impl GitRunner + 'static) -> Self {
        let Fixture { dir, team, lines } = self;
        Fixture { dir, team: team.with_git(Arc::new(git)), lines }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn worktree(&self, name: &str) -> PathBuf {
        self.team.workspace().root().join(".worktrees").join(name)
    }

    fn create(&self, subject: &str) -> Result<Task, Box<dyn std::error::Error>> {
        Ok(self.team.store().create(subject, "")?)
    }

    fn load(&self, task: &Task) -> Result<Task, Box<dyn std::error::Error>> {
        Ok(self.team.store().load(&json!(task.id))?)
    }

    fn claim(&self, task: &Task, owner: &str) -> Result<OwnedClaim, Box<dyn std::error::Error>> {
        Ok(self.team.claim_task(&json!(task.id), owner)?)
    }

    fn complete(&self, task: &Task, owner: &str) -> Result<OwnedCompletion, Box<dyn std::error::Error>> {
        Ok(self.team.complete_task(&json!(task.id), owner)?)
    }

    fn create_worktree(&self, name: &str, task: &Task) -> String {
        match self.team.create_worktree(name, &json!(task.id)) {
            Ok(created) => created.to_string(),
            Err(e) => e.to_string(),
        }
    }

    fn remove_worktree(&self, name: &str, discard: bool) -> String {
        match self.team.remove_worktree(name, discard) {
            Ok(removed) => removed.to_string(),
            Err(e) => e.to_string(),
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

fn git(cwd: &Path, args: &[&str]) -> Result<String, Box<dyn std::error::Error>> {
    let out = Command::new("git").args(args).current_dir(cwd).output()?;
    if !out.status.success() {
        return Err(format!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn branch_exists(root: &Path, branch: &str) -> Result<bool, Box<dyn std::error::Error>> {
    let status = Command::new("git")
        .args(["show-ref", "--verify", "--quiet", &format!("refs/heads/{branch}")])
        .current_dir(root)
        .status()?;
    Ok(status.success())
}

fn init_git_repo(root: &Path) -> TestResult {
    git(root, &["init", "-q", "-b", "main"])?;
    git(root, &["config", "user.email", "tests@example.com"])?;
    git(root, &["config", "user.name", "Runtime Tests"])?;
    fs::write(root.join("tracked.txt"), "initial\n")?;
    git(root, &["add", "tracked.txt"])?;
    git(root, &["commit", "-q", "-m", "initial"])?;
    Ok(())
}

/// The request id in a result such as `Plan submitted (req_123456). Wait …`.
fn request_id(text: &str) -> String {
    text.split('(').nth(1).and_then(|rest| rest.split(')').next()).unwrap_or_default().to_owned()
}

/// A Git that fails `git worktree add`: before running it (`late == false`), or after the real
/// one has made everything (`late == true`), as the course's tests replace `run_git`.
struct FailingAdd {
    late: bool,
}

impl GitRunner for FailingAdd {
    fn run(&self, args: &[&str], cwd: &Path) -> GitOutput {
        if args.starts_with(&["worktree", "add"]) {
            if !self.late {
                return GitOutput { ok: false, output: "simulated add failure".into() };
            }
            let real = SystemGit.run(args, cwd);
            assert!(real.ok, "{}", real.output);
            return GitOutput { ok: false, output: "simulated late add failure".into() };
        }
        SystemGit.run(args, cwd)
    }
}

/// A real Git after whose `git worktree add` the task file cannot be replaced any more (a
/// folder stands in its place), so binding the task fails as a full disk would make it fail.
struct BlockTaskFileAfterAdd {
    task_file: PathBuf,
}

impl GitRunner for BlockTaskFileAfterAdd {
    fn run(&self, args: &[&str], cwd: &Path) -> GitOutput {
        let result = SystemGit.run(args, cwd);
        if result.ok && args.starts_with(&["worktree", "add"]) {
            let saved = self.task_file.with_extension("saved");
            let blocked = fs::rename(&self.task_file, &saved)
                .and_then(|()| fs::create_dir(&self.task_file))
                .and_then(|()| fs::write(self.task_file.join("occupied"), "x"));
            assert!(blocked.is_ok(), "{blocked:?}");
        }
        result
    }
}

// ----- the course's tests -----

#[test]
fn test_message_bus_rejects_unregistered_or_unsafe_recipients() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", false)?;
    f.team.set_status("alice", TeammateStatus::Idle);

    let sent = f.team.bus().send("alice", "../escape", "bad", "message", Map::new());
    assert_eq!(
        sent.map_err(|e| e.to_string()).err().as_deref(),
        Some("Invalid mailbox recipient: '../escape'")
    );
    assert!(!f.root().join("escape.jsonl").exists());
    assert!(!f.root().join(".mailboxes").exists(), "nothing is made for a refused send");

    let result = f.team.teammate_send_message("alice", "ghost", "Are you there?")?;
    assert!(result.contains("not active"), "{result}");
    assert!(!f.root().join(".mailboxes/ghost.jsonl").exists());
    Ok(())
}

#[test]
fn test_reserved_teammate_names_do_not_shadow_runtime_identities() -> TestResult {
    let f = Fixture::new()?;
    for name in ["lead", "agent", "Lead", "Agent"] {
        let refused =
            f.team.register_teammate(name, false).map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(refused.to_lowercase().contains("reserved"), "{name}: {refused}");
        assert!(!f.team.is_active(name));
    }
    f.team.bus().send("alice", "lead", "still routable", "message", Map::new())?;
    assert_eq!(f.team.bus().read_inbox("lead")?[0].content, "still routable");

    f.team.register_teammate("Alice", false)?;
    let duplicate =
        f.team.register_teammate("alice", false).map_err(|e| e.to_string()).err().unwrap_or_default();
    assert!(duplicate.contains("already exists"), "{duplicate}");
    Ok(())
}

#[test]
fn test_public_task_tools_return_errors_for_bad_ids() -> TestResult {
    let f = Fixture::new()?;
    f.create("exists, so .tasks does")?;
    for id in [json!("../escape"), json!("task_missing"), json!("task_0000abcd")] {
        let results = [
            f.team.store().load(&id).map(|t| t.to_json()),
            f.team.claim_task(&id, "agent").map(|c| c.to_string()),
            f.team.complete_task(&id, "agent").map(|c| c.to_string()),
            f.team.store().update_dependencies(&id, &json!([])).map(|t| t.id),
        ];
        for result in results {
            let text = result.map_err(|e| error_text(&e, &id, NotFoundWording::Capitalised));
            let text = text.err().unwrap_or_default();
            assert!(text.starts_with("Error:"), "{id}: {text}");
        }
    }
    let missing = f.team.store().load(&json!("task_0000abcd")).map(|_| ()).err();
    let missing = missing.map(|e| error_text(&e, &json!("task_0000abcd"), NotFoundWording::Capitalised));
    assert_eq!(missing.as_deref(), Some("Error: Task task_0000abcd not found"));
    let lower = f.team.store().load(&json!("task_0000abcd")).map(|_| ()).err();
    let lower = lower.map(|e| error_text(&e, &json!("task_0000abcd"), NotFoundWording::Lowercase));
    assert_eq!(lower.as_deref(), Some("Error: task task_0000abcd not found"));
    Ok(())
}

#[test]
fn test_plain_message_does_not_change_assignment_or_plan_version() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", true)?;
    f.team.registry().plan_gates.insert("alice".into(), PlanGate::Approved);
    f.team.registry().versions.insert("alice".into(), 3);

    assert!(f.team.lead_send_message("alice", "Continue.")?.contains("Sent"));

    assert_eq!(f.team.plan_gate("alice"), PlanGate::Approved);
    assert_eq!(f.team.current_work_identity("alice").0, 3);
    assert_eq!(f.team.lead_send_message("ghost", "hello")?, "Teammate 'ghost' is not active");
    Ok(())
}

#[test]
fn test_required_plan_is_active_before_teammate_thread_starts() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", true)?;
    let task = f.create("Edit auth")?;
    assert!(f.claim(&task, "alice")?.is_claimed());
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Required);
    assert!(!f.team.plan_gate("alice").allows_changes());
    Ok(())
}

#[test]
fn test_plan_rejection_requires_a_new_submission() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", false)?;
    f.team.set_status("alice", TeammateStatus::Idle);

    assert!(f.team.send_plan_request("alice", "Refactor auth")?.contains("Plan requested"));
    let request = f.team.bus().read_inbox("alice")?;
    assert_eq!(request[0].kind, "plan_request");
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Required);

    let submission = f.team.send_plan_submission("alice", "1. Read\n2. Test")?;
    let first = request_id(&submission);
    assert_eq!(f.team.request(&first).map(|r| r.status), Some(RequestStatus::Pending));

    let result = f.team.send_plan_review(&first, false, "Add a rollback step.")?;
    assert!(result.contains("rejected"), "{result}");
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Pending, "the gate changes only when alice applies it");

    let responses = f.team.bus().read_inbox("alice")?;
    let last = responses.last().ok_or("no response")?;
    assert_eq!(
        f.team.apply_plan_response("alice", last),
        Ok("[Plan rejected] Add a rollback step.".to_owned())
    );
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Rejected);

    let second =
        f.team.send_plan_submission("alice", "1. Read\n2. Change\n3. Test\n4. Roll back on failure")?;
    let second = request_id(&second);
    assert_ne!(second, first);
    assert_eq!(f.team.request(&second).map(|r| r.status), Some(RequestStatus::Pending));
    Ok(())
}

#[test]
fn test_mismatched_plan_response_cannot_release_gate() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", false)?;
    let submission = f.team.send_plan_submission("alice", "1. Read\n2. Test")?;
    let current = request_id(&submission);
    assert_eq!(f.team.status("alice"), Some(TeammateStatus::WaitingApproval));

    let mut forged = Message {
        from: "lead".into(),
        to: "alice".into(),
        content: "Approved".into(),
        kind: "plan_approval_response".into(),
        ts: 0.0,
        metadata: team::protocol::response_metadata("req_stale", true),
    };
    assert_eq!(f.team.apply_plan_response("alice", &forged), Err(IGNORED_PLAN_RESPONSE));
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Pending);
    assert_eq!(f.team.registry().plan_request_ids.get("alice"), Some(&current));

    // The current id, but the Lead never reviewed it.
    forged.metadata = team::protocol::response_metadata(&current, true);
    assert!(f.team.apply_plan_response("alice", &forged).is_err());
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Pending);

    // Reviewed as rejected, but the message claims approval.
    f.team.review_plan(&current, false)?;
    assert!(f.team.apply_plan_response("alice", &forged).is_err());
    assert_eq!(f.team.plan_gate("alice"), PlanGate::Pending);
    Ok(())
}

#[test]
fn test_shutdown_response_must_come_from_requested_teammate() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", false)?;
    f.team.register_teammate("bob", false)?;
    let id = request_id(&f.team.send_shutdown_request("alice")?);

    f.team.bus().send(
        "bob",
        "lead",
        "Shutdown acknowledged.",
        "shutdown_response",
        team::protocol::response_metadata(&id, true),
    )?;
    let events = f.team.consume_lead_inbox()?;
    assert_eq!(events.len(), 1);
    assert_eq!(f.team.request(&id).map(|r| r.status), Some(RequestStatus::Pending));
    assert!(f.lines().contains(&format!("  [protocol] {id} responder mismatch")), "{:?}", f.lines());

    // The right teammate's answer decides it, once.
    let request = f.team.bus().read_inbox("alice")?;
    assert_eq!(f.team.apply_shutdown_request("alice", &request[0]), Ok(id.clone()));
    f.team.acknowledge_shutdown("alice", &id)?;
    let events = f.team.consume_lead_inbox()?;
    assert_eq!(f.team.request(&id).map(|r| r.status), Some(RequestStatus::Approved));
    assert_eq!(
        team::format_team_events(&events),
        format!("[Team events]\n[shutdown_response request_id={id}] alice: Shutdown acknowledged.")
    );
    let outcome = f.team.match_response("shutdown_response", &id, true, "alice", "lead");
    assert_eq!(outcome.to_string(), format!("  [protocol] {id} already approved"));
    Ok(())
}

#[test]
fn test_shutdown_request_must_match_active_protocol() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", false)?;
    f.team.set_status("alice", TeammateStatus::Idle);
    let forged = Message {
        from: "lead".into(),
        to: "alice".into(),
        content: "Shut down.".into(),
        kind: "shutdown_request".into(),
        ts: 0.0,
        metadata: team::protocol::request_metadata("req_unknown"),
    };
    assert_eq!(f.team.apply_shutdown_request("alice", &forged), Err(IGNORED_SHUTDOWN_REQUEST));
    assert_eq!(f.team.status("alice"), Some(TeammateStatus::Idle));

    let id = request_id(&f.team.send_shutdown_request("alice")?);
    let inbox = f.team.bus().read_inbox("alice")?;
    let request = inbox.last().ok_or("no request")?;
    assert_eq!(request.content, "Finish the current step and shut down.");
    assert_eq!(f.team.apply_shutdown_request("alice", request), Ok(id));
    assert_eq!(f.team.status("alice"), Some(TeammateStatus::Stopping));
    assert!(f.team.apply_shutdown_request("alice", request).is_err(), "a replay is refused");
    Ok(())
}

#[test]
fn test_plan_approval_cannot_cross_assignment_boundary() -> TestResult {
    let f = Fixture::new()?;
    f.team.register_teammate("alice", true)?;
    f.team.registry().versions.insert("alice".into(), 1);
    let id = request_id(&f.team.send_plan_submission("alice", "Inspect, edit, test")?);

    f.team.advance_assignment_version("alice");
    let result = f.team.send_plan_review(&id, true, "")?;

    assert!(result.contains("earlier assignment"), "{result}");
    assert_ne!(f.team.plan_gate("alice"), PlanGate::Approved);
    Ok(())
}

#[test]
fn test_idle_claim_is_atomic_across_teammates() -> TestResult {
    let f = Fixture::new()?;
    let task = f.create("Refactor auth")?;
    let barrier = Barrier::new(2);
    let claimed: Vec<Option<Task>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ["alice", "bob"]
            .into_iter()
            .map(|name| {
                let (team, barrier) = (&f.team, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    team.claim_next_task(name).ok().flatten()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    let winners: Vec<&Task> = claimed.iter().flatten().collect();
    assert_eq!(winners.len(), 1, "{claimed:?}");
    assert_eq!(f.load(&task)?.owner, winners[0].owner);
    Ok(())
}

#[test]
fn test_assignment_enforces_one_task_and_owner_only_completion() -> TestResult {
    let f = Fixture::new()?;
    let first = f.create("Refactor auth")?;
    let second = f.create("Refactor login")?;

    assert!(f.claim(&first, "alice")?.to_string().contains("Claimed"));
    assert!(f.lines().contains(&"  [claim] Refactor auth -> in_progress (owner: alice)".to_owned()));
    let denied = f.claim(&second, "alice")?.to_string();
    assert!(denied.contains("must finish"), "{denied}");
    assert_eq!(f.load(&second)?.status, Status::Pending);

    let denied = f.complete(&first, "bob")?.to_string();
    assert!(denied.contains("not bob"), "{denied}");
    assert_eq!(f.load(&first)?.status, Status::InProgress);

    assert!(f.complete(&first, "alice")?.to_string().contains("Completed"));
    assert!(f.team.lease_of("alice").is_some(), "the lease is kept until the turn ends");
    assert!(f.claim(&second, "alice")?.to_string().contains("must finish"));
    assert!(f.team.release_completed_assignment("alice")?);
    assert!(f.claim(&second, "alice")?.to_string().contains("Claimed"));
    Ok(())
}

#[test]
fn test_claim_checks_the_owner_rules_in_order() -> TestResult {
    let f = Fixture::new()?;
    let done = f.create("done")?;
    let taken = f.create("taken")?;
    let blocked = f.create("blocked")?;
    f.team.store().update_dependencies(&json!(blocked.id), &json!([taken.id]))?;
    f.claim(&done, "agent")?;
    f.complete(&done, "agent")?;
    f.team.release_completed_assignment("agent")?;
    assert_eq!(f.claim(&done, "bob")?.to_string(), format!("Task {} is completed, cannot claim", done.id));
    f.claim(&taken, "alice")?;
    assert_eq!(
        f.claim(&taken, "bob")?.to_string(),
        format!("Task {} is in_progress, cannot claim", taken.id)
    );
    assert_eq!(f.claim(&blocked, "bob")?.to_string(), format!("Blocked by: ['{}']", taken.id));

    // Owned yet pending (a hand edit): step 2.
    let mut odd = f.create("odd")?;
    odd.owner = Some("carol".into());
    f.team.store().transaction(|tx| tx.save(&odd))?;
    assert_eq!(f.claim(&odd, "bob")?.to_string(), format!("Task {} is already owned by carol", odd.id));

    // In progress without a lease in this runtime (another runtime's claim): step 4.
    f.team.registry().leases.clear();
    let free = f.create("free")?;
    assert_eq!(
        f.claim(&free, "alice")?.to_string(),
        format!("Owner alice must complete {} before claiming another task", taken.id)
    );
    Ok(())
}

#[test]
fn test_complete_reports_every_ready_dependent_and_the_plan_gate() -> TestResult {
    let f = Fixture::new()?;
    let base = f.create("base")?;
    let api = f.create("api")?;
    let ui = f.create("ui")?;
    f.team.store().update_dependencies(&json!(api.id), &json!([base.id]))?;
    f.team.store().update_dependencies(&json!(ui.id), &json!([base.id]))?;
    f.team.register_teammate("alice", true)?;
    f.claim(&base, "alice")?;
    assert_eq!(
        f.complete(&base, "alice")?.to_string(),
        format!("Task {} cannot complete while plan status is required", base.id)
    );
    f.team.registry().plan_gates.insert("alice".into(), PlanGate::Approved);
    // In file-name order, that is by id.
    let mut ready = [(&api.id, "api"), (&ui.id, "ui")];
    ready.sort();
    let ready = ready.map(|(_, subject)| subject).join(", ");
    assert_eq!(
        f.complete(&base, "alice")?.to_string(),
        format!("Completed {} (base)\nUnblocked: {ready}", base.id)
    );
    assert!(f.lines().contains(&format!("  [unblocked] {ready}")), "{:?}", f.lines());
    Ok(())
}

#[test]
fn test_task_worktree_sets_assignment_cwd_and_contains_file_tools() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    let created = f.create_worktree("auth", &task);
    assert!(created.contains("created"), "{created}");
    assert_eq!(f.load(&task)?.worktree(), Some("auth"));
    assert!(f.lines().iter().any(|l| l.starts_with("  [worktree] created: auth at ")));

    assert!(f.claim(&task, "alice")?.is_claimed());
    let lease = f.team.lease_of("alice").ok_or("no lease")?;
    assert_eq!(lease.task_id, task.id);
    assert_eq!(lease.cwd, f.worktree("auth"));
    assert_eq!(f.team.assignment_cwd("alice")?, f.worktree("auth"));
    assert_eq!(f.team.assignment_cwd("nobody")?, f.team.workspace().root());
    Ok(())
}

#[test]
fn test_invalid_or_unregistered_worktree_never_becomes_claimable() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;

    let invalid = f.create_worktree("../escape", &task);
    assert!(invalid.contains("Error"), "{invalid}");
    assert_eq!(f.load(&task)?.worktree(), None);
    assert!(!f.root().join("escape").exists());

    let missing = f.team.create_worktree("auth", &json!("../missing")).map(|c| c.to_string());
    let missing = missing.map_err(|e| e.to_string()).err().unwrap_or_default();
    assert_eq!(missing, "Error: Invalid task ID: '../missing'");
    assert!(!f.worktree("auth").exists());

    let mut bound = f.load(&task)?;
    bound.set_worktree(Some("ghost"));
    f.team.store().transaction(|tx| tx.save(&bound))?;
    let denied = f.claim(&task, "alice")?.to_string();
    assert_eq!(denied, format!("Cannot claim {}: worktree 'ghost' is not registered with Git", task.id));
    assert_eq!(f.load(&task)?.status, Status::Pending);
    assert!(f.team.scan_unclaimed_tasks()?.is_empty());
    Ok(())
}

#[test]
fn test_create_validates_branch_and_binds_only_after_git_add() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    git(f.root(), &["branch", "wt/auth"])?;

    let collision = f.create_worktree("auth", &task);
    assert_eq!(collision, "Error: Branch 'wt/auth' already exists");
    assert_eq!(f.load(&task)?.worktree(), None);
    assert!(!f.worktree("auth").exists());

    let f = f.with_git(FailingAdd { late: false });
    let failed = f.create_worktree("login", &task);
    assert_eq!(failed, "Git error: simulated add failure");
    assert_eq!(f.load(&task)?.worktree(), None);
    assert!(!f.worktree("login").exists());
    Ok(())
}

#[test]
fn test_failed_git_add_reports_and_preserves_partial_artifacts() -> TestResult {
    let f = Fixture::git()?.with_git(FailingAdd { late: true });
    let task = f.create("Implement auth")?;

    let result = f.create_worktree("auth", &task);

    for part in ["Partial operation", "simulated late add failure", "remains unbound", "git worktree list"] {
        assert!(result.contains(part), "{part}: {result}");
    }
    let path = f.worktree("auth");
    assert!(
        result.starts_with(&format!(
            "Partial operation: git worktree add reported an error after leaving checkout path '{}', registered Git \
             worktree, branch 'wt/auth'. Task {} remains unbound",
            path.display(),
            task.id
        )),
        "{result}"
    );
    assert!(path.is_dir());
    assert_eq!(f.load(&task)?.worktree(), None);
    assert!(branch_exists(f.root(), "wt/auth")?);
    Ok(())
}

#[test]
fn test_binding_failure_retains_created_git_data_for_recovery() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    let task_file = f.team.workspace().root().join(".tasks").join(format!("{}.json", task.id));
    let f = f.with_git(BlockTaskFileAfterAdd { task_file: task_file.clone() });

    let result = f.create_worktree("auth", &task);

    assert!(result.starts_with("Partial success: Worktree 'auth' was created at "), "{result}");
    assert!(result.contains("manual recovery"), "{result}");
    assert!(f.worktree("auth").is_dir());
    assert!(branch_exists(f.root(), "wt/auth")?);
    // Put the task file back as it was before the failed save: it is still unbound.
    fs::remove_dir_all(&task_file)?;
    fs::rename(task_file.with_extension("saved"), &task_file)?;
    assert_eq!(f.load(&task)?.worktree(), None);
    Ok(())
}

/// A task bound to the worktree `auth`, claimed, completed and released by alice.
fn finished_worktree(f: &Fixture) -> Result<Task, Box<dyn std::error::Error>> {
    let task = f.create("Implement auth")?;
    let created = f.create_worktree("auth", &task);
    assert!(created.contains("created"), "{created}");
    assert!(f.claim(&task, "alice")?.is_claimed());
    assert!(f.complete(&task, "alice")?.to_string().starts_with("Completed"));
    assert!(f.team.release_completed_assignment("alice")?);
    Ok(task)
}

#[test]
fn test_remove_worktree_refuses_dirty_checkout_by_default() -> TestResult {
    let f = Fixture::git()?;
    let task = finished_worktree(&f)?;
    fs::write(f.worktree("auth").join("dirty.txt"), "unsaved\n")?;

    let denied = f.remove_worktree("auth", false);

    assert_eq!(
        denied,
        "Error: Worktree 'auth' has 1 uncommitted change(s); preserve or discard them manually"
    );
    assert!(f.worktree("auth").exists());
    assert_eq!(f.load(&task)?.worktree(), Some("auth"));
    Ok(())
}

#[test]
fn test_remove_worktree_treats_ignored_files_as_uncommitted_data() -> TestResult {
    let f = Fixture::git()?;
    fs::write(f.root().join(".gitignore"), "ignored.log\n")?;
    git(f.root(), &["add", ".gitignore"])?;
    git(f.root(), &["commit", "-q", "-m", "ignore runtime log"])?;
    let task = finished_worktree(&f)?;
    fs::write(f.worktree("auth").join("ignored.log"), "valuable output\n")?;

    let denied = f.remove_worktree("auth", false);
    assert!(denied.contains("uncommitted"), "{denied}");
    assert!(f.worktree("auth").exists());
    assert_eq!(f.load(&task)?.worktree(), Some("auth"));

    let removed = f.remove_worktree("auth", true);
    assert!(removed.contains("branch 'wt/auth' retained"), "{removed}");
    assert!(!f.worktree("auth").exists());
    Ok(())
}

#[test]
fn test_discard_removes_checkout_but_retains_branch() -> TestResult {
    let f = Fixture::git()?;
    let task = finished_worktree(&f)?;
    fs::write(f.worktree("auth").join("dirty.txt"), "discard me\n")?;

    let removed = f.remove_worktree("auth", true);

    assert_eq!(removed, "Worktree 'auth' removed; branch 'wt/auth' retained");
    assert!(f.lines().contains(&"  [worktree] removed: auth; branch retained".to_owned()));
    assert!(!f.worktree("auth").exists());
    assert_eq!(f.load(&task)?.worktree(), None);
    assert!(branch_exists(f.root(), "wt/auth")?);
    Ok(())
}

#[test]
fn test_clean_local_commit_survives_non_force_checkout_removal() -> TestResult {
    let f = Fixture::git()?;
    finished_worktree(&f)?;
    let worktree = f.worktree("auth");
    fs::write(worktree.join("feature.txt"), "committed work\n")?;
    git(&worktree, &["add", "feature.txt"])?;
    git(&worktree, &["commit", "-q", "-m", "feature"])?;
    let commit = git(&worktree, &["rev-parse", "HEAD"])?;
    assert_eq!(git(f.root(), &["for-each-ref", "--format=%(upstream)", "refs/heads/wt/auth"])?, "");

    let removed = f.remove_worktree("auth", false);

    assert!(removed.contains("branch 'wt/auth' retained"), "{removed}");
    assert!(!worktree.exists());
    assert_eq!(git(f.root(), &["rev-parse", "wt/auth"])?, commit);
    Ok(())
}

#[test]
fn test_active_task_blocks_normal_and_discard_removal() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    f.create_worktree("auth", &task);
    let expected =
        format!("Error: Worktree 'auth' is bound to active task {}; complete it before removal", task.id);

    assert_eq!(f.remove_worktree("auth", false), expected);
    assert_eq!(f.remove_worktree("auth", true), expected);

    f.claim(&task, "alice")?;
    assert_eq!(f.remove_worktree("auth", false), expected);
    assert_eq!(f.remove_worktree("auth", true), expected);
    assert!(f.worktree("auth").exists());
    assert_eq!(f.load(&task)?.status, Status::InProgress);

    // Completed but still leased: the turn has not ended.
    f.complete(&task, "alice")?;
    assert_eq!(
        f.remove_worktree("auth", true),
        "Error: Worktree 'auth' is still in use by alice; wait for the turn to end"
    );
    Ok(())
}

#[test]
fn test_worktree_registry_parsing_does_not_use_display_truncation() -> TestResult {
    let dir = tempfile::tempdir()?;
    let entries: Vec<String> = (0..80)
        .map(|i| {
            let path = dir.path().join(".worktrees").join(format!("work-{i}-{}", "x".repeat(80)));
            format!("worktree {}\nHEAD {}\nbranch refs/heads/wt/work-{i}\n", path.display(), "0".repeat(40))
        })
        .collect();
    let porcelain = entries.join("\n");
    assert!(porcelain.len() > 5000);

    let registered = parse_porcelain(&porcelain);

    assert_eq!(registered.len(), 80);
    let last = dir.path().join(".worktrees").join(format!("work-79-{}", "x".repeat(80)));
    let last = team::worktree::resolve_lenient(&last);
    assert_eq!(
        registered.get(&last).and_then(|e| e.get("branch")).map(String::as_str),
        Some("refs/heads/wt/work-79")
    );
    Ok(())
}

#[test]
fn test_completed_assignment_keeps_lead_in_worktree_until_turn_boundary() -> TestResult {
    let f = Fixture::git()?;
    let first = f.create("Implement auth")?;
    let second = f.create("Update docs")?;
    f.create_worktree("auth", &first);

    assert!(f.claim(&first, "agent")?.is_claimed());
    assert!(f.complete(&first, "agent")?.to_string().contains("Completed"));
    assert_eq!(f.team.assignment_cwd("agent")?, f.worktree("auth"));
    assert!(f.claim(&second, "agent")?.to_string().contains("must finish"));

    assert!(f.team.release_completed_assignment("agent")?);
    assert_eq!(f.team.assignment_cwd("agent")?, f.team.workspace().root());
    assert!(f.claim(&second, "agent")?.is_claimed());
    Ok(())
}

#[test]
fn test_in_progress_assignment_rehydrates_after_runtime_restart() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    f.create_worktree("auth", &task);
    f.claim(&task, "alice")?;

    f.team.registry().leases.clear();
    let recovered = f.team.assignment_cwd("alice")?;

    assert_eq!(recovered, f.worktree("auth"));
    assert_eq!(f.team.lease_of("alice").map(|l| l.task_id), Some(task.id));
    Ok(())
}

#[test]
fn test_completion_rehydrates_cwd_lease_before_status_change() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    f.create_worktree("auth", &task);
    f.claim(&task, "agent")?;
    f.team.registry().leases.clear();

    assert!(f.complete(&task, "agent")?.to_string().contains("Completed"));
    let cwd = f.team.assignment_cwd("agent")?;
    fs::write(cwd.join("after.txt"), "done")?;
    assert!(f.worktree("auth").join("after.txt").exists());
    assert!(!f.root().join("after.txt").exists());
    Ok(())
}

#[test]
fn test_completion_replaces_a_stale_cross_runtime_cwd_lease() -> TestResult {
    let f = Fixture::git()?;
    let old_task = f.create("Old assignment")?;
    f.create_worktree("old", &old_task);
    f.claim(&old_task, "agent")?;
    f.complete(&old_task, "agent")?;

    let second = team_at(f.root(), silent())?;
    let new_task = second.store().create("New assignment", "")?;
    second.create_worktree("new", &json!(new_task.id)).map_err(|e| e.to_string())?;
    assert!(second.claim_task(&json!(new_task.id), "agent")?.is_claimed());

    assert!(f.team.complete_task(&json!(new_task.id), "agent")?.to_string().contains("Completed"));
    let cwd = f.team.assignment_cwd("agent")?;
    assert_eq!(cwd, f.worktree("new"));
    assert!(!same(&cwd, &f.worktree("old")));
    Ok(())
}

fn same(a: &Path, b: &Path) -> bool {
    fs::canonicalize(a).ok() == fs::canonicalize(b).ok()
}

#[test]
fn test_stale_lease_fails_closed() -> TestResult {
    let f = Fixture::git()?;
    let task = f.create("Implement auth")?;
    f.create_worktree("auth", &task);
    f.claim(&task, "alice")?;
    // Another runtime returned the task to the board.
    let mut reset = f.load(&task)?;
    reset.status = Status::Pending;
    reset.owner = None;
    f.team.store().transaction(|tx| tx.save(&reset))?;
    let error = f.team.assignment_cwd("alice").map_err(|e| e.to_string()).err();
    assert_eq!(error.as_deref(), Some("Assignment for alice is no longer active"));

    // The worktree disappears under a claimed task.
    f.team.registry().leases.clear();
    f.claim(&task, "bob")?;
    fs::remove_dir_all(f.worktree("auth"))?;
    let error = f.team.assignment_cwd("bob").map_err(|e| e.to_string()).err().unwrap_or_default();
    assert!(error.starts_with("worktree 'auth' is missing at "), "{error}");
    Ok(())
}

#[test]
fn test_release_teammate_assignment_returns_the_task_to_the_board() -> TestResult {
    let f = Fixture::new()?;
    let task = f.create("Refactor auth")?;
    f.team.register_teammate("alice", true)?;
    f.claim(&task, "alice")?;
    let released = f.team.release_teammate_assignment("alice")?;
    assert_eq!(released.map(|t| t.id), Some(task.id.clone()));
    let task = f.load(&task)?;
    assert_eq!((task.status, task.owner), (Status::Pending, None));
    assert_eq!(f.team.lease_of("alice"), None);
    assert_eq!(f.team.plan_gate("alice"), PlanGate::NotRequired);
    Ok(())
}

// ----- across processes -----

/// The example `team_board`, built by `cargo test` beside the test binaries.
fn board_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let debug = exe.parent().and_then(|deps| deps.parent()).map(PathBuf::from).unwrap_or_default();
    debug.join("examples").join(format!("team_board{}", std::env::consts::EXE_SUFFIX))
}

/// Starts one `team_board` per argument list, releases them together (a line on each stdin),
/// and returns what each printed.
fn race(root: &Path, runs: &[[&str; 3]]) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut children = Vec::new();
    for [action, id, other] in runs {
        let child = Command::new(board_binary())
            .args([action, &root.display().to_string().as_str(), id, other])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        children.push(child);
    }
    for child in &mut children {
        child.stdin.as_mut().ok_or("no stdin")?.write_all(b"go\n")?;
    }
    let mut outputs = Vec::new();
    for mut child in children {
        drop(child.stdin.take());
        let out = child.wait_with_output()?;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        outputs.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    }
    Ok(outputs)
}

#[test]
fn test_task_claim_is_atomic_across_processes() -> TestResult {
    let f = Fixture::new()?;
    let task = f.create("Only once")?;

    let outcomes = race(f.root(), &[["claim", &task.id, "alice"], ["claim", &task.id, "bob"]])?;

    assert_eq!(outcomes.iter().filter(|o| o.starts_with("Claimed ")).count(), 1, "{outcomes:?}");
    let persisted = f.load(&task)?;
    assert_eq!(persisted.status, Status::InProgress);
    assert!(matches!(persisted.owner.as_deref(), Some("alice" | "bob")));
    Ok(())
}

#[test]
fn test_dependency_updates_are_atomic_across_processes() -> TestResult {
    let f = Fixture::new()?;
    let first = f.create("First")?;
    let second = f.create("Second")?;

    let outcomes = race(f.root(), &[["update", &first.id, &second.id], ["update", &second.id, &first.id]])?;

    assert_eq!(outcomes.iter().filter(|o| o.starts_with("Updated ")).count(), 1, "{outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| o.contains("Dependency cycle detected")).count(),
        1,
        "{outcomes:?}"
    );
    let edges = [f.load(&first)?.blocked_by, f.load(&second)?.blocked_by];
    assert_eq!(edges.iter().filter(|deps| !deps.is_empty()).count(), 1);
    Ok(())
}

// ----- ours: the bus, the files -----

#[test]
fn mailbox_lines_are_python_json_in_the_course_key_order() -> TestResult {
    let f = Fixture::new()?;
    let sent = f.team.bus().send("lead", "alice", "héllo ✓", "message", Map::new())?;
    let text = fs::read_to_string(f.root().join(".mailboxes/alice.jsonl"))?;
    let expected = format!(
        "{{\"from\": \"lead\", \"to\": \"alice\", \"content\": \"h\\u00e9llo \\u2713\", \"type\": \"message\", \"ts\": {}, \"metadata\": {{}}}}\n",
        pyjson::float_repr(sent.ts)
    );
    assert_eq!(text, expected);
    assert_eq!(f.lines(), vec!["  [bus] lead -> alice: (message) héllo ✓".to_owned()]);
    assert!(f.team.bus().peek("alice"));
    assert_eq!(f.team.bus().pending().len(), 1, "pending() consumes nothing");
    assert_eq!(f.team.bus().read_inbox("alice")?, vec![sent]);
    assert!(!f.team.bus().peek("alice"));
    assert!(f.team.bus().read_inbox("alice")?.is_empty());
    Ok(())
}

#[test]
fn bus_line_shows_the_first_fifty_characters() -> TestResult {
    let f = Fixture::new()?;
    f.team.bus().send("alice", "lead", &"é".repeat(60), "result", Map::new())?;
    assert_eq!(f.lines(), vec![format!("  [bus] alice -> lead: (result) {}", "é".repeat(50))]);
    Ok(())
}

#[test]
fn broken_mailbox_lines_are_kept_beside_the_good_ones() -> TestResult {
    let f = Fixture::new()?;
    f.team.bus().send("lead", "alice", "first", "message", Map::new())?;
    let path = f.root().join(".mailboxes/alice.jsonl");
    fs::OpenOptions::new().append(true).open(&path)?.write_all(b"{not json\n[1, 2]\n")?;
    f.team.bus().send("lead", "alice", "second", "message", Map::new())?;

    let read: Vec<String> = f.team.bus().read_inbox("alice")?.into_iter().map(|m| m.content).collect();

    assert_eq!(read, ["first", "second"]);
    assert_eq!(fs::read_to_string(f.root().join(".mailboxes/alice.unreadable"))?, "{not json\n[1, 2]\n");
    assert!(
        f.lines().iter().any(|l| l.contains("2 line(s)") && l.contains("alice.unreadable")),
        "{:?}",
        f.lines()
    );
    Ok(())
}

#[test]
fn a_linked_mailbox_folder_is_refused() -> TestResult {
    let f = Fixture::new()?;
    let elsewhere = tempfile::tempdir()?;
    std::os::unix::fs::symlink(elsewhere.path(), f.root().join(".mailboxes"))?;
    let sent = f.team.bus().send("lead", "alice", "hi", "message", Map::new());
    assert!(sent.map_err(|e| e.to_string()).err().unwrap_or_default().contains("symbolic link"));
    assert_eq!(fs::read_dir(elsewhere.path())?.count(), 0);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn wait_for_messages_wakes_on_a_send_and_ends_at_its_timeout() -> TestResult {
    let f = Fixture::new()?;
    let team = Arc::new(f.team);
    assert!(team.bus().wait_for_messages("alice", Duration::from_millis(50)).await?.is_empty());

    let sender = Arc::clone(&team);
    let waiter =
        tokio::spawn(async move { team.bus().wait_for_messages("alice", Duration::from_secs(30)).await });
    tokio::task::yield_now().await;
    sender.bus().send("lead", "alice", "wake up", "message", Map::new())?;
    let got = waiter.await??;
    assert_eq!(got.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["wake up"]);
    Ok(())
}

#[test]
fn s10_files_read_as_tasks_without_a_worktree_and_gain_the_key_when_saved() -> TestResult {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    let s10 = TaskStore::new(&ws);
    let task = s10.create("from s10", "")?;
    let file = dir.path().join(format!(".tasks/{}.json", task.id));
    assert!(!fs::read_to_string(&file)?.contains("worktree"));

    let teams = TaskStore::new(&ws).for_teams();
    let loaded = teams.load(&json!(task.id))?;
    assert_eq!(loaded.worktree(), None);
    let created = teams.create("from s13", "")?;
    let written = fs::read_to_string(dir.path().join(format!(".tasks/{}.json", created.id)))?;
    assert!(written.ends_with("\"blockedBy\": [],\n  \"worktree\": null\n}"), "{written}");

    // s10 still reads its own file, and names the key it does not know in s13's.
    assert!(s10.load(&json!(task.id)).is_ok());
    let refused = s10.load(&json!(created.id)).map_err(|e| e.to_string()).err().unwrap_or_default();
    assert!(refused.contains("'worktree'"), "{refused}");

    // A worktree that is not a name is a bad file, not a panic.
    fs::write(
        &file,
        format!(
            "{{\"id\": \"{}\", \"subject\": \"x\", \"description\": \"\", \"status\": \"pending\", \"owner\": null, \"blockedBy\": [], \"worktree\": 5}}",
            task.id
        ),
    )?;
    let bad = teams.load(&json!(task.id)).map_err(|e| e.to_string()).err().unwrap_or_default();
    assert!(bad.contains("neither null nor a string"), "{bad}");
    Ok(())
}

#[test]
fn list_tasks_renders_s13_and_s15() -> TestResult {
    let f = Fixture::git()?;
    assert_eq!(
        render_list(&f.team.store().list()?, ListStyle::Teams),
        "No tasks. Use create_task to add some."
    );
    assert_eq!(render_list(&f.team.store().list()?, ListStyle::Integrated), "No tasks.");
    let a = f.create("schema")?;
    let b = f.create("api")?;
    f.team.store().update_dependencies(&json!(b.id), &json!([a.id]))?;
    f.create_worktree("api", &b);
    f.claim(&a, "alice")?;
    let listed = f.team.store().list()?;
    let mut lines = [
        (a.id.clone(), format!("  [~] {}: schema [in_progress] [alice]", a.id)),
        (b.id.clone(), format!("  [ ] {}: api [pending] (blockedBy: {}) (worktree: api)", b.id, a.id)),
    ];
    lines.sort();
    assert_eq!(render_list(&listed, ListStyle::Teams), lines.map(|(_, l)| l).join("\n"));
    let mut lines = [
        (a.id.clone(), format!("  {}: schema [in_progress]", a.id)),
        (b.id.clone(), format!("  {}: api [pending] (wt:api)", b.id)),
    ];
    lines.sort();
    assert_eq!(render_list(&listed, ListStyle::Integrated), lines.map(|(_, l)| l).join("\n"));
    Ok(())
}

#[test]
fn worktree_names_are_checked_before_anything_runs() -> TestResult {
    let f = Fixture::new()?;
    let task = f.create("t")?;
    let long = "a".repeat(65);
    for (name, expected) in [
        ("", "worktree name must be 1-64"),
        ("-x", "worktree name must be 1-64"),
        ("a/b", "worktree name must be 1-64"),
        (long.as_str(), "worktree name must be 1-64"),
        ("a..b", "worktree name cannot contain '..'"),
    ] {
        let text = f.create_worktree(name, &task);
        assert!(text.starts_with(&format!("Error: {expected}")), "{name}: {text}");
    }
    // Not a repository: refused before Git changes anything.
    assert_eq!(
        f.create_worktree("ok", &task),
        "Error: Working directory must be the root of a Git repository"
    );
    assert!(!f.root().join(".worktrees").exists());
    let removed = f.team.remove_worktree("ok", false).map(|r| r.to_string());
    assert!(matches!(removed, Err(RemoveError::Unregistered(_))), "{removed:?}");
    assert!(matches!(f.team.create_worktree("ok", &json!(5)), Err(CreateError::InvalidTaskId(_))));
    Ok(())
}
