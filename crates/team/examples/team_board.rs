//! One claim or one dependency edge from its own process, for the cross-process tests
//! (`tests/course.rs`): the course's `claim_in_child` and `update_in_child`.
//!
//! ```text
//! team_board claim  WORKSPACE TASK_ID OWNER        prints the claim's result
//! team_board update WORKSPACE TASK_ID DEPENDENCY   prints update_task's result
//! ```
//!
//! It opens the store, then waits for one line on stdin before it acts: the test starts two
//! processes and releases them together by writing to both.

use std::io::BufRead;
use std::process::ExitCode;

use serde_json::{Value, json};

use agent_core::events::silent;
use agent_core::workspace::Workspace;
use tasks::TaskStore;
use tasks::owners::{NotFoundWording, error_text};
use team::TeamState;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [action, root, task_id, other] = args.as_slice() else {
        eprintln!("usage: team_board claim|update WORKSPACE TASK_ID OWNER|DEPENDENCY");
        return ExitCode::from(2);
    };
    let workspace = match Workspace::new(root) {
        Ok(workspace) => workspace,
        Err(e) => {
            eprintln!("team_board: {root}: {e}");
            return ExitCode::from(2);
        }
    };
    let team = TeamState::new(&workspace, TaskStore::new(&workspace).for_teams(), silent());
    let mut go = String::new();
    if std::io::stdin().lock().read_line(&mut go).is_err() {
        return ExitCode::from(2);
    }
    let id = Value::String(task_id.clone());
    let result = match action.as_str() {
        "claim" => match team.claim_task(&id, other) {
            Ok(claim) => claim.to_string(),
            Err(e) => error_text(&e, &id, NotFoundWording::Capitalised),
        },
        "update" => match team.store().update_dependencies(&id, &json!([other])) {
            Ok(task) => format!("Updated {} blockedBy: {}", task.id, task.blocked_by.join(", ")),
            Err(e) => error_text(&e, &id, NotFoundWording::Capitalised),
        },
        _ => {
            eprintln!("team_board: unknown action {action:?}; use claim or update");
            return ExitCode::from(2);
        }
    };
    println!("{result}");
    ExitCode::SUCCESS
}
