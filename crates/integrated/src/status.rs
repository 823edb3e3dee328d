//! `/status`: one screen with what every mechanism holds, made of the mechanisms' own commands
//! (`/todos`, `/tasks`, `/bg`, `/cron`, `/mcp`, `/memory`, `/context`), each under a heading.
//! Nothing is rendered twice: each section is its mechanism's own view.

use std::sync::Arc;

use agent_cli::repl::{CommandContext, SlashCommand};
use agent_cli::ui::Ui;
use team::runtime::TeamRuntime;

/// `/tasks`: the team's task board as a graph (the tasks crate's view), each task's status and
/// owner, and what blocks it.
pub fn tasks_command(team: Arc<TeamRuntime>) -> SlashCommand {
    SlashCommand::new(
        "tasks",
        "the task graph in .tasks/: each task's status, owner, and what blocks it",
        move |ui: &Ui| {
            let store = team.state().store();
            match store.list() {
                Ok(listed) => ui.say(&tasks::tools::render_graph(store, &listed)),
                Err(e) => ui.error(&e.to_string()),
            }
        },
    )
}

/// Each mechanism's REPL commands, in the order `/status` shows them.
pub struct Sections {
    /// `/todos` (todo_write's list).
    pub todos: Option<SlashCommand>,
    /// `/tasks` (the task graph).
    pub tasks: Vec<SlashCommand>,
    /// `/team` (the teammates) and `/inbox`.
    pub team: Vec<SlashCommand>,
    /// `/bg` (background commands).
    pub background: Vec<SlashCommand>,
    /// `/cron` (scheduled jobs).
    pub cron: Vec<SlashCommand>,
    /// `/mcp` (servers and their tools).
    pub mcp: Vec<SlashCommand>,
    /// `/memory` and memory's other commands.
    pub memory: Vec<SlashCommand>,
    /// `/context` (the history's size against the limit) and compaction's other commands.
    pub context: Vec<SlashCommand>,
}

/// The headings of `/status`, with the command each shows, in order.
pub const SHOWN: [(&str, &str); 8] = [
    ("todo list", "todos"),
    ("tasks", "tasks"),
    ("teammates", "team"),
    ("background commands", "bg"),
    ("cron jobs", "cron"),
    ("MCP servers", "mcp"),
    ("memory", "memory"),
    ("context", "context"),
];

impl Sections {
    /// `/status` first, then every command of the sections (the first of two with one name wins,
    /// as in the REPL).
    pub fn into_commands(self) -> Vec<SlashCommand> {
        let mut all: Vec<SlashCommand> = Vec::new();
        let parts =
            self.todos.into_iter().chain(self.tasks).chain(self.team).chain(self.background).chain(self.cron);
        for command in parts.chain(self.mcp).chain(self.memory).chain(self.context) {
            if !all.iter().any(|c| c.name == command.name) {
                all.push(command);
            }
        }
        let shown: Arc<Vec<SlashCommand>> = Arc::new(all);
        let listed = Arc::clone(&shown);
        let status = SlashCommand::with_context(
            "status",
            "one screen: todo list, tasks, background commands, cron jobs, MCP servers, memory, context size",
            move |context: &CommandContext<'_>| {
                for (heading, name) in SHOWN {
                    let Some(command) = listed.iter().find(|c| c.name == name) else { continue };
                    context.ui.say(&format!("── {heading} (/{name})"));
                    let inner = CommandContext {
                        ui: context.ui,
                        args: "",
                        agent: context.agent,
                        history: context.history,
                    };
                    // These commands only show; none of them sends a prompt.
                    let _ = (command.run)(&inner);
                }
            },
        );
        let mut commands = vec![status];
        // Each command stays reachable by its own name, through the same shared list.
        for (i, command) in shown.iter().enumerate() {
            let shared = Arc::clone(&shown);
            commands.push(SlashCommand {
                name: command.name,
                help: command.help,
                run: Box::new(move |context| shared.get(i).and_then(|c| (c.run)(context))),
                sends: command.sends,
            });
        }
        commands
    }
}
