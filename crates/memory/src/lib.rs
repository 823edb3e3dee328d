//! The course's s09, memory: selected knowledge that survives the session, as files in the
//! workspace, recalled before a turn and extracted after the answer by model calls of the
//! harness's own.
//!
//! ```text
//!  session 1                                   .memory/                       session 2 (a new process)
//!  prompt ─► loop ─► answer                    code-style.md                  prompt
//!                      │ after_answer:         test-layout.md                   │ before_turn:
//!                      └─ extraction call ───► MEMORY.md (the index) ─────────► recall call: which records?
//!                         (+ consolidation                                       └─ SYSTEM += catalog + records
//!                          at 10+ records)                                          ─► loop ─► answer
//! ```
//!
//! Source: COURSE §4.4 (the course's `s09_memory/code.py` at its newest mainline): the store
//! ([`store`]), recall ([`recall`]), extraction and consolidation ([`extract`]), with the
//! course's prompts, limits, fallbacks and lines:
//! - before a turn: `[Memory: recalled 2 of 7: code-style, test-layout]`;
//! - after it: `[Memory: stored {n} records]` or `[Memory extraction skipped: {reason}]`, then
//!   (at 10+ records) `[Memory: consolidated {a} to {b} records]` or
//!   `[Memory consolidation skipped: {reason}]`.
//!
//! Every failure is a line; none ends the turn. The three calls go through
//! [`ModelHandle::create`], so `/usage` counts them (and s09's `/usage` shows them apart).
//!
//! Ours: records are written atomically and never hold a secret ([`secrets`]); `/memory` lists
//! them, `/memory forget NAME` deletes one, `/history` shows this turn's SYSTEM with what was
//! recalled.
//!
//! Key insight: memory is a harness mechanism, not a model feature. The model only answers two
//! small questions ("which of these matter?", "what here is worth keeping?"); the harness owns
//! the files, the limits and what reaches SYSTEM.

pub mod extract;
pub mod recall;
pub mod secrets;
pub mod store;

use std::sync::{Arc, Mutex, MutexGuard};

use agent_cli::chapter::Setup;
use agent_cli::repl::{CommandContext, SlashCommand, history_view, usage_line};
use agent_core::error::ApiError;
use agent_core::events::{EventSink, Level, line};
use agent_core::extension::{AnswerContext, Extension, TurnContext};
use agent_core::messages::UsageTotals;

pub use extract::{consolidate_memories, extract_memories, should_store_memory, validate_memory_record};
pub use recall::{MEMORY_GUIDANCE, build_system, load_memories, select_relevant_memories};
pub use secrets::Secrets;
pub use store::{MemoryRecord, MemoryStore, MemoryType, NewRecord, memory_slug};

/// Why a memory operation failed. `Display` is the reason the `[Memory … skipped: …]` lines show;
/// the filename rules and the consolidation checks carry the course's texts.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// A file name with a folder part (or empty, `.`, `..`).
    #[error("Invalid memory filename: {0}")]
    InvalidFilename(String),
    /// `MEMORY.md` where a record was meant.
    #[error("The memory index is not a memory record")]
    IndexNotRecord,
    /// A record without a name.
    #[error("Memory name cannot be empty")]
    EmptyName,
    /// A record without a description or a body.
    #[error("Memory description and body cannot be empty")]
    EmptyFields,
    /// A record that holds a secret (ours); what it holds, named but not shown.
    #[error("refused to store a record that holds {0}")]
    Secret(String),
    /// The YAML library could not write the front matter.
    #[error("cannot write the front matter: {0}")]
    Yaml(String),
    /// A file in `.memory/` (path relative to the workspace) could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// `.memory` or `.memory/FILE`.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `/memory forget NAME` found no such record.
    #[error("no memory record named {0}")]
    NotFound(String),
    /// Too many characters of records for one consolidation call.
    #[error("memory store is too large for one consolidation pass")]
    TooLarge,
    /// Consolidation returned no valid record, or two with one slug.
    #[error("consolidation returned empty or duplicate records")]
    EmptyOrDuplicate,
    /// Consolidation failed and putting the old files back failed too.
    #[error("{error}; restoring the old records failed as well: {restore}")]
    RestoreFailed {
        /// What failed first.
        error: String,
        /// What failed while restoring.
        restore: String,
    },
    /// The model call failed (after the client's retries).
    #[error("{0}")]
    Api(String),
}

/// The requests and tokens of memory's own model calls, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Recall calls.
    pub recall: UsageTotals,
    /// Extraction calls.
    pub extraction: UsageTotals,
    /// Consolidation calls.
    pub consolidation: UsageTotals,
}

impl MemoryUsage {
    /// The three together.
    pub fn total(&self) -> UsageTotals {
        let mut all = UsageTotals::default();
        for part in [self.recall, self.extraction, self.consolidation] {
            all.requests += part.requests;
            all.input_tokens += part.input_tokens;
            all.output_tokens += part.output_tokens;
        }
        all
    }
}

/// s09's memory for one workspace: the [`Extension`] that recalls and extracts
/// ([`Memory::extension`]) and the REPL commands that show it ([`Memory::commands`]). Cheap to
/// clone; clones share the usage tally.
#[derive(Clone)]
pub struct Memory {
    store: MemoryStore,
    usage: Arc<Mutex<MemoryUsage>>,
}

impl Memory {
    /// The memory of the setup's workspace, refusing the harness's own secrets
    /// ([`Secrets::harness`]).
    pub fn new(setup: &Setup) -> Self {
        Self::with_store(MemoryStore::new(&setup.workspace, Secrets::harness()))
    }

    /// The memory of `store` (for tests and other harnesses).
    pub fn with_store(store: MemoryStore) -> Self {
        Self { store, usage: Arc::default() }
    }

    /// The store.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// Memory's own model calls so far.
    pub fn usage(&self) -> MemoryUsage {
        *self.locked()
    }

    fn locked(&self) -> MutexGuard<'_, MemoryUsage> {
        self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The extension for the agent: recall in [`Extension::before_turn`], extraction and
    /// consolidation in [`Extension::after_answer`].
    pub fn extension(&self) -> MemoryExtension {
        MemoryExtension { memory: self.clone() }
    }

    /// The REPL commands: `/memory` (the records), `/memory forget NAME`, `/history` (this turn's
    /// SYSTEM, then the messages) and `/usage` (memory's calls apart).
    pub fn commands(&self) -> Vec<SlashCommand> {
        let (list, usage) = (self.clone(), self.clone());
        vec![
            SlashCommand::with_context(
                "memory",
                "the memory records (name, type, description); `/memory forget NAME` deletes one",
                move |c| list.memory_command(c),
            ),
            SlashCommand::with_context(
                "history",
                "this turn's SYSTEM (the recalled memory included), then the messages array",
                |c| {
                    let system = c.agent.current_system();
                    c.ui.say(&format!(
                        "SYSTEM ({} characters):\n{system}\n\n{}",
                        system.chars().count(),
                        history_view(&c.agent.request(c.history).messages)
                    ));
                },
            ),
            SlashCommand::with_context(
                "usage",
                "requests and tokens used in this session, memory's own calls apart",
                move |c| {
                    let own = usage.usage();
                    c.ui.say(&format!(
                        "{}\n{}\n  {}\n  {}\n  {}",
                        usage_line("this session (all requests)", &c.agent.session_usage()),
                        usage_line("of which memory's own calls", &own.total()),
                        usage_line("recall", &own.recall),
                        usage_line("extraction", &own.extraction),
                        usage_line("consolidation", &own.consolidation),
                    ));
                },
            ),
        ]
    }

    /// `/memory` and `/memory forget NAME`.
    fn memory_command(&self, c: &CommandContext<'_>) {
        let mut words = c.args.split_whitespace();
        match (words.next(), c.args.split_once(char::is_whitespace)) {
            (None, _) => match self.store.list_memory_files() {
                Ok(records) => c.ui.say(&listing(&self.store, &records)),
                Err(e) => c.ui.error(&format!("cannot read the memory records: {e}")),
            },
            (Some("forget"), Some((_, name))) if !name.trim().is_empty() => match self.store.forget(name) {
                Ok((gone, left)) => c.ui.say(&format!(
                    "[Memory: forgot {} ({}); {left} {} left, MEMORY.md rewritten]",
                    gone.stem(),
                    gone.filename,
                    if left == 1 { "record" } else { "records" }
                )),
                Err(e @ MemoryError::NotFound(_)) => {
                    c.ui.error(&format!("{e}; /memory lists them (nothing was deleted)"));
                }
                Err(e) => c.ui.error(&format!("{e} (nothing was deleted)")),
            },
            _ => c.ui.error("usage: /memory, or /memory forget NAME (a name /memory lists)"),
        }
    }
}

/// `/memory`'s text: where the store is, then one line per record: file name without `.md`,
/// type, description.
pub fn listing(store: &MemoryStore, records: &[MemoryRecord]) -> String {
    if records.is_empty() {
        return format!("(no memory records in {})", store.path().display());
    }
    let width = records.iter().map(|r| r.stem().chars().count()).max().unwrap_or(0);
    let mut text = format!(
        "{} memory {} in {} (MEMORY.md is their index):",
        records.len(),
        if records.len() == 1 { "record" } else { "records" },
        store.path().display()
    );
    for record in records {
        text.push_str(&format!(
            "\n  {:<width$}  {:<9}  {}",
            record.stem(),
            record.mem_type,
            record.index_description()
        ));
    }
    text
}

/// The extension of [`Memory`]: recall before each turn, extraction (and consolidation) after
/// each final answer. Every failure is reported as a line and the turn goes on.
pub struct MemoryExtension {
    memory: Memory,
}

impl MemoryExtension {
    fn say(events: &dyn EventSink, text: &str) {
        line(events, Level::Mechanism, text);
    }
}

#[async_trait::async_trait]
impl Extension for MemoryExtension {
    /// Recall (COURSE §4.4): the records and the index (the index rebuilt if stale), the recall
    /// call or its keyword fallback, and this turn's SYSTEM: [`build_system`] of the chapter's.
    async fn before_turn(&mut self, turn: &mut TurnContext<'_>) -> Result<(), ApiError> {
        let store = &self.memory.store;
        let events = turn.events;
        let loaded = match store.load() {
            Ok(loaded) => loaded,
            Err(e) => {
                Self::say(events, &format!("[Memory recall skipped: {e}]"));
                *turn.system = build_system(turn.system, "", "");
                return Ok(());
            }
        };
        if loaded.rebuilt {
            Self::say(events, "[Memory: MEMORY.md did not match the records; rebuilt it from them]");
        }
        let mut recalled = recall::Recalled::default();
        if loaded.records.is_empty() {
            Self::say(events, "[Memory: no records yet; nothing to recall]");
        } else {
            let mut own = UsageTotals::default();
            let selection = select_relevant_memories(&mut turn.model, &mut own, &loaded.records, turn.history).await;
            add(&mut self.memory.locked().recall, &own);
            if let Some(why) = &selection.fallback {
                Self::say(events, &format!("[Memory recall fell back to keyword match: {why}]"));
            }
            match load_memories(store, &selection.files) {
                Ok(r) => recalled = r,
                Err(e) => Self::say(events, &format!("[Memory recall skipped: {e}]")),
            }
            for (file, what) in &recalled.withheld {
                Self::say(events, &format!("[Memory: not recalled: {file} holds {what}]"));
            }
            let names: Vec<&str> = recalled.sources.iter().map(|f| f.strip_suffix(".md").unwrap_or(f)).collect();
            let list = if names.is_empty() { String::new() } else { format!(": {}", names.join(", ")) };
            Self::say(
                events,
                &format!("[Memory: recalled {} of {}{list}]", recalled.sources.len(), loaded.records.len()),
            );
        }
        *turn.system = build_system(turn.system, &loaded.index, &recalled.json);
        Ok(())
    }

    /// Extraction, then consolidation when extraction stored something and there are 10+
    /// records (COURSE §4.4).
    async fn after_answer(&mut self, context: &mut AnswerContext<'_>) {
        let store = &self.memory.store;
        let events = context.events;
        let mut own = UsageTotals::default();
        let extracted = extract_memories(store, &mut context.model, &mut own, context.history).await;
        add(&mut self.memory.locked().extraction, &own);
        let done = match extracted {
            Ok(Some(done)) => done,
            Ok(None) => return,
            Err(e) => {
                Self::say(events, &format!("[Memory extraction skipped: {e}]"));
                return;
            }
        };
        for what in &done.refused {
            Self::say(events, &format!("[Memory: refused a record: it holds {what}; records never hold secrets]"));
        }
        Self::say(events, &format!("[Memory: stored {} records]", done.stored.len()));
        if done.proposed > 0 {
            let stored = if done.stored.is_empty() { "none".to_owned() } else { done.stored.join(", ") };
            line(
                events,
                Level::Detail,
                &format!("  the model proposed {}; stored: {stored}; {} records in all", done.proposed, done.total),
            );
        }
        if done.stored.is_empty() {
            return;
        }
        let mut own = UsageTotals::default();
        let consolidated = consolidate_memories(store, &mut context.model, &mut own).await;
        add(&mut self.memory.locked().consolidation, &own);
        match consolidated {
            Ok(Some(c)) => Self::say(events, &format!("[Memory: consolidated {} to {} records]", c.before, c.after)),
            Ok(None) => {}
            Err(e) => Self::say(events, &format!("[Memory consolidation skipped: {e}]")),
        }
    }
}

/// Adds `part` to `total`.
fn add(total: &mut UsageTotals, part: &UsageTotals) {
    total.requests += part.requests;
    total.input_tokens += part.input_tokens;
    total.output_tokens += part.output_tokens;
}
