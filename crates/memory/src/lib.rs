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
//! - after it: `[Memory: stored {n} records]` (only when n > 0, as the course) or
//!   `[Memory extraction skipped: {reason}]`, then
//!   (at 10+ records) `[Memory: consolidated {a} to {b} records]` or
//!   `[Memory consolidation skipped: {reason}]`.
//!
//! Every failure is a line; none ends the turn. The three calls go through
//! [`agent_core::extension::ModelHandle::create`], so `/usage` counts them (and s09's `/usage` shows them apart).
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
pub use recall::{
    Calls, MEMORY_GUIDANCE, build_system, build_system_with, load_memories, select_relevant_memories,
};
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
    /// `.memory` is a symbolic link or no folder ([`agent_core::workspace::Workspace::harness_dir`]):
    /// the store is left alone, nothing is read, written or deleted through it.
    #[error("{0}")]
    NotOwnFolder(#[from] agent_core::workspace::HarnessPathError),
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
        MemoryExtension { memory: self.clone(), guidance: Some(MEMORY_GUIDANCE) }
    }

    /// [`Memory::extension`] for a SYSTEM that carries its own memory guidance (the course's
    /// s15, whose prompt has a memory section of its own words): the turn's SYSTEM gains only
    /// the catalog and the recalled records.
    pub fn extension_without_guidance(&self) -> MemoryExtension {
        MemoryExtension { memory: self.clone(), guidance: None }
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
    /// The guidance section SYSTEM gets before the catalog ([`MEMORY_GUIDANCE`]), if any.
    guidance: Option<&'static str>,
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
                *turn.system = build_system_with(turn.system, self.guidance, "", "");
                return Ok(());
            }
        };
        if loaded.rebuilt {
            Self::say(events, "[Memory: MEMORY.md did not match the records; rebuilt it from them]");
        }
        if let Some(why) = &loaded.rebuild_failed {
            Self::say(
                events,
                &format!("[Memory: MEMORY.md does not match the records and cannot be rewritten: {why}]"),
            );
        }
        let mut recalled = recall::Recalled::default();
        if loaded.records.is_empty() {
            Self::say(events, "[Memory: no records yet; nothing to recall]");
        } else {
            let mut own = UsageTotals::default();
            let mut calls = Calls { model: &mut turn.model, usage: &mut own, events };
            let selection = select_relevant_memories(&mut calls, &loaded.records, turn.history).await;
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
            // Each with its description, so that a record planted in `.memory/` (a file any
            // tool or command can write) shows what it tells the model.
            let names: Vec<String> = recalled
                .sources
                .iter()
                .map(|f| {
                    let name = f.strip_suffix(".md").unwrap_or(f);
                    match loaded.records.iter().find(|r| r.filename == *f).map(shown_description) {
                        Some(d) if !d.is_empty() => format!("{name} ({d})"),
                        _ => name.to_owned(),
                    }
                })
                .collect();
            let list = if names.is_empty() { String::new() } else { format!(": {}", names.join(", ")) };
            Self::say(
                events,
                &format!("[Memory: recalled {} of {}{list}]", recalled.sources.len(), loaded.records.len()),
            );
        }
        *turn.system = build_system_with(turn.system, self.guidance, &loaded.index, &recalled.json);
        Ok(())
    }

    /// Extraction, then consolidation when extraction stored something and there are 10+
    /// records (COURSE §4.4).
    async fn after_answer(&mut self, context: &mut AnswerContext<'_>) {
        let store = &self.memory.store;
        let events = context.events;
        let mut own = UsageTotals::default();
        let mut calls = Calls { model: &mut context.model, usage: &mut own, events };
        let extracted = extract_memories(store, &mut calls, context.history).await;
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
            Self::say(
                events,
                &format!("[Memory: refused a record: it holds {what}; records never hold secrets]"),
            );
        }
        // As the course: the line only when something was stored; a turn with nothing worth
        // keeping stays quiet.
        if !done.stored.is_empty() {
            Self::say(events, &format!("[Memory: stored {}]", records(done.stored.len())));
        }
        if done.proposed > 0 {
            let stored = if done.stored.is_empty() { "none".to_owned() } else { done.stored.join(", ") };
            let dropped = if done.dropped.is_empty() {
                String::new()
            } else {
                format!("; dropped: {}", done.dropped.join(", "))
            };
            line(
                events,
                Level::Detail,
                &format!(
                    "  the model proposed {}; stored: {stored}{dropped}; {} in all",
                    done.proposed,
                    records(done.total)
                ),
            );
        }
        if done.stored.is_empty() {
            return;
        }
        let mut own = UsageTotals::default();
        let mut calls = Calls { model: &mut context.model, usage: &mut own, events };
        let consolidated = consolidate_memories(store, &mut calls).await;
        add(&mut self.memory.locked().consolidation, &own);
        match consolidated {
            Ok(Some(c)) => {
                Self::say(events, &format!("[Memory: consolidated {} to {}]", c.before, records(c.after)))
            }
            Ok(None) => {}
            Err(e) => Self::say(events, &format!("[Memory consolidation skipped: {e}]")),
        }
    }
}

/// `1 record`, `N records`.
fn records(n: usize) -> String {
    format!("{n} {}", if n == 1 { "record" } else { "records" })
}

/// Adds `part` to `total`.
fn add(total: &mut UsageTotals, part: &UsageTotals) {
    total.requests += part.requests;
    total.input_tokens += part.input_tokens;
    total.output_tokens += part.output_tokens;
}

/// The most characters of a record's description the recall line shows.
const SHOWN_DESCRIPTION_CHARS: usize = 100;

/// A record's description as the recall line shows it: [`MemoryRecord::index_description`]
/// (the body's first line when there is none), control characters as spaces, cut at
/// [`SHOWN_DESCRIPTION_CHARS`] with `…`.
fn shown_description(record: &MemoryRecord) -> String {
    let text: String =
        record.index_description().chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if text.chars().count() > SHOWN_DESCRIPTION_CHARS {
        let cut: String = text.chars().take(SHOWN_DESCRIPTION_CHARS).collect();
        format!("{}…", cut.trim_end())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use agent_core::agent::Agent;
    use agent_core::messages::MessagesResponse;
    use agent_core::test_util::{EventLog, ScriptedModel, text};
    use agent_core::workspace::Workspace;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A memory in a fresh workspace holding `records` (name, description).
    fn memory(records: &[(&str, &str)]) -> Result<(tempfile::TempDir, Memory), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let store = MemoryStore::new(&Workspace::new(dir.path())?, Secrets::none());
        for (name, description) in records {
            store.write_memory_file(&NewRecord {
                name: (*name).into(),
                mem_type: MemoryType::Project,
                description: (*description).into(),
                body: format!("All about {name}."),
            })?;
        }
        Ok((dir, Memory::with_store(store)))
    }

    /// One turn of an agent with SYSTEM `BASE` and `memory`, its model answering `script`.
    async fn turn(
        memory: &Memory,
        script: Vec<Result<MessagesResponse, ApiError>>,
        prompt: &str,
    ) -> Result<(Arc<ScriptedModel>, Arc<EventLog>, Agent), ApiError> {
        let model = Arc::new(ScriptedModel::with_results(script));
        let log = EventLog::new();
        let mut agent = Agent::builder(model.clone(), "m")
            .system("BASE")
            .extension(memory.extension())
            .events(log.clone())
            .build();
        agent.run_turn(&mut Vec::new(), prompt).await?;
        Ok((model, log, agent))
    }

    fn failed() -> ApiError {
        ApiError::Api {
            status: 500,
            error_type: "api_error".into(),
            message: "boom".into(),
            request_id: None,
        }
    }

    #[tokio::test]
    async fn recall_fills_this_turns_system_and_every_memory_call_counts_in_usage() -> TestResult {
        let (_dir, memory) =
            memory(&[("code-style", "Tabs, never spaces"), ("test-layout", "Tests live in tests/")])?;
        let script = vec![Ok(text("[1]")), Ok(text("Tests go in tests/.")), Ok(text("[]"))];
        let (model, log, agent) = turn(&memory, script, "where do tests go?").await?;
        let requests = model.requests();
        assert_eq!(requests.len(), 3, "recall, the turn, extraction");
        let index = memory.store().read_memory_index()?;
        let recalled = load_memories(memory.store(), &["test-layout.md".to_owned()])?;
        assert_eq!(requests[1].system, build_system("BASE", &index, &recalled.json));
        assert!(requests[1].system.contains("\"source\": \"test-layout.md\""), "{}", requests[1].system);
        assert_eq!(agent.current_system(), requests[1].system, "/history shows this SYSTEM");
        let lines = log.lines();
        assert_eq!(
            lines,
            ["[Memory: recalled 1 of 2: test-layout (Tests live in tests/)]"],
            "nothing stored, no stored line"
        );
        assert_eq!(agent.session_usage().requests, 3, "/usage counts recall and extraction");
        let own = memory.usage();
        assert_eq!((own.recall.requests, own.extraction.requests, own.consolidation.requests), (1, 1, 0));
        Ok(())
    }

    #[tokio::test]
    async fn the_first_session_has_nothing_to_recall_and_stores_what_lasts() -> TestResult {
        let (dir, memory) = memory(&[])?;
        let extraction = json!([{"name": "code-style", "type": "user", "scope": "persistent",
            "description": "Tabs, never spaces", "body": "Indent Python with tabs."}])
        .to_string();
        let script = vec![Ok(text("Noted: tabs.")), Ok(text(&extraction))];
        let (model, log, _agent) = turn(&memory, script, "we use tabs").await?;
        assert_eq!(model.requests()[0].system, format!("BASE\n\n{MEMORY_GUIDANCE}"), "no recall call");
        assert_eq!(
            log.lines(),
            [
                "[Memory: no records yet; nothing to recall]",
                "[Memory: stored 1 record]",
                "  the model proposed 1; stored: code-style.md; 1 record in all",
            ]
        );
        assert!(dir.path().join(".memory/code-style.md").is_file());
        Ok(())
    }

    #[tokio::test]
    async fn failed_memory_calls_are_lines_and_never_break_the_turn() -> TestResult {
        let (_dir, memory) = memory(&[("code-style", "tabs for python")])?;
        let script = vec![Err(failed()), Ok(text("answered anyway")), Err(failed())];
        let (_, log, _) = turn(&memory, script, "python indentation?").await?;
        assert_eq!(
            log.lines(),
            [
                "[Memory recall fell back to keyword match: API error 500 api_error: boom]",
                "[Memory: recalled 1 of 1: code-style (tabs for python)]",
                "[Memory extraction skipped: API error 500 api_error: boom]",
            ]
        );
        Ok(())
    }

    #[tokio::test]
    async fn consolidation_follows_an_extraction_that_reaches_ten_records() -> TestResult {
        let names: Vec<String> = (0..9).map(|i| format!("r{i}")).collect();
        let records: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "a record")).collect();
        let (_dir, memory) = memory(&records)?;
        let tenth = json!([{"name": "tenth", "type": "user", "scope": "persistent", "description": "the tenth", "body": "ten"}]);
        let merged = json!([
            {"name": "all", "type": "project", "description": "all nine", "body": "merged"},
            {"name": "tenth", "type": "user", "description": "the tenth", "body": "ten"},
        ]);
        let script =
            vec![Ok(text("[]")), Ok(text("ok")), Ok(text(&tenth.to_string())), Ok(text(&merged.to_string()))];
        let (model, log, agent) = turn(&memory, script, "remember the tenth").await?;
        assert_eq!(model.requests()[3].max_tokens, 3000);
        assert!(
            log.lines().contains(&"[Memory: consolidated 10 to 2 records]".to_owned()),
            "{:?}",
            log.lines()
        );
        let files: Vec<String> =
            memory.store().list_memory_files()?.into_iter().map(|r| r.filename).collect();
        assert_eq!(files, ["all.md", "tenth.md"]);
        assert_eq!(memory.usage().consolidation.requests, 1);
        assert_eq!(agent.session_usage().requests, 4);

        // A rejected consolidation is a line, and the store stays as it was.
        let (_dir, memory) = self::memory(&records)?;
        let duplicate = json!([
            {"name": "A b", "type": "user", "description": "1", "body": "1"},
            {"name": "a-b", "type": "user", "description": "2", "body": "2"},
        ]);
        let script = vec![
            Ok(text("[]")),
            Ok(text("ok")),
            Ok(text(&tenth.to_string())),
            Ok(text(&duplicate.to_string())),
        ];
        let (_, log, _) = turn(&memory, script, "remember the tenth").await?;
        assert!(
            log.lines().contains(
                &"[Memory consolidation skipped: consolidation returned empty or duplicate records]"
                    .to_owned()
            ),
            "{:?}",
            log.lines()
        );
        assert_eq!(memory.store().list_memory_files()?.len(), 10);
        Ok(())
    }

    #[tokio::test]
    async fn a_stale_index_is_rebuilt_and_said() -> TestResult {
        let (dir, memory) = memory(&[("a", "first")])?;
        std::fs::write(dir.path().join(".memory/MEMORY.md"), "- [old](old.md) - gone\n")?;
        let (_, log, _) = turn(&memory, vec![Ok(text("[]")), Ok(text("ok")), Ok(text("[]"))], "hi").await?;
        assert_eq!(log.lines()[0], "[Memory: MEMORY.md did not match the records; rebuilt it from them]");
        assert_eq!(std::fs::read_to_string(dir.path().join(".memory/MEMORY.md"))?, "- [a](a.md) - first\n");
        Ok(())
    }

    #[tokio::test]
    async fn an_index_that_cannot_be_rewritten_is_said_and_recall_still_works() -> TestResult {
        let (dir, memory) = memory(&[("a", "first")])?;
        let index = dir.path().join(".memory/MEMORY.md");
        std::fs::remove_file(&index)?;
        std::fs::create_dir(&index)?; // a folder in its place: the rename over it fails
        let script = vec![Ok(text("[0]")), Ok(text("ok")), Ok(text("[]"))];
        let (model, log, _) = turn(&memory, script, "hi").await?;
        let lines = log.lines();
        assert!(
            lines[0].starts_with(
                "[Memory: MEMORY.md does not match the records and cannot be rewritten: .memory/MEMORY.md: "
            ),
            "{lines:?}"
        );
        assert_eq!(lines[1], "[Memory: recalled 1 of 1: a (first)]");
        assert!(model.requests()[1].system.contains("Memory catalog:\n- [a](a.md) - first"));
        Ok(())
    }

    #[test]
    fn memory_lists_each_record_with_its_type_and_description() -> TestResult {
        let (dir, memory) =
            memory(&[("code-style", "Tabs, never spaces"), ("test-layout", "Tests live in tests/")])?;
        let root = dir.path().canonicalize()?;
        let text = listing(memory.store(), &memory.store().list_memory_files()?);
        assert_eq!(
            text,
            format!(
                "2 memory records in {}/.memory (MEMORY.md is their index):\n  code-style   project    Tabs, never spaces\n  test-layout  project    Tests live in tests/",
                root.display()
            )
        );
        let (dir, empty) = self::memory(&[])?;
        let root = dir.path().canonicalize()?;
        assert_eq!(listing(empty.store(), &[]), format!("(no memory records in {}/.memory)", root.display()));
        Ok(())
    }
}
