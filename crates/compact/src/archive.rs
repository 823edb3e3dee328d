//! Where compaction puts what it takes out of the history: `.transcripts/` and
//! `.task_outputs/tool-results/` in the workspace, and the ledger of what it put in its place.
//!
//! Source: COURSE §4.3. Ours, on top of the course:
//! - **Through the workspace handle.** Every file is written beneath the workspace's open root
//!   folder (`Workspace::dir`, cap-std: each open is resolved beneath the handle), so a
//!   `.transcripts` or `.task_outputs` that is a symlink pointing out of the workspace makes the
//!   save fail instead of writing outside. The layer that wanted the file then leaves the history
//!   as it was and says why: nothing is dropped that is not on disk.
//! - **Atomic.** The bytes go to an unnamed temporary file in the target folder (`O_TMPFILE`),
//!   which is given its name once they are all written: a reader, or the harness after a crash
//!   or `kill -9`, finds the whole file or none. They are not `fsync`ed: an archive outlives the
//!   process, as the session's files do, but like the session held in memory it is not made to
//!   outlive a power cut. A sync per archive cost most of a round's CPU (a snip writes one every
//!   round past 50 messages), and varied tenfold with the disk (BENCHMARKS.md, "Flat cost with
//!   compaction").
//! - **Never over someone else's file.** A name already taken on disk (a symlink, a file of an
//!   earlier session) gets `-2`, `-3`, … instead of being replaced.
//! - **A path quoted inside tool output is never trusted as a saved file.** The ledger keeps, for
//!   each `tool_use` id, the exact text compaction put in place of its result; a result counts as
//!   already saved only when it is that text. A tool output that merely looks like
//!   `<persisted-output>\nFull output: /tmp/…` is ordinary output, and is saved again under the
//!   workspace when its turn comes.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_core::messages::Message;
use agent_core::workspace::Workspace;

/// The folder of the transcripts, relative to the workspace root (COURSE §4.3).
pub const TRANSCRIPT_DIR: &str = ".transcripts";

/// The folder of the saved tool results, relative to the workspace root (COURSE §4.3).
pub const TOOL_RESULTS_DIR: &str = ".task_outputs/tool-results";

/// The layer that put a text in place of a tool result or of messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// `tool_result_budget`: a large result of the newest batch, with a 2,000-character preview.
    Budget,
    /// `snip_compact`: the middle of the history, archived in a transcript.
    Snip,
    /// `micro_compact`: a result the model has seen, saved and referred to.
    Micro,
    /// `fit_tool_results`: a large result, with a 1,000-character preview.
    Fit,
    /// `compact_history`: the whole history, summarised (the automatic summary and the `compact`
    /// tool).
    Summary,
    /// `reactive_compact`: the history but its last messages, summarised after `prompt_too_long`.
    Reactive,
}

impl Layer {
    /// The course's name of the layer.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Budget => "tool_result_budget",
            Layer::Snip => "snip_compact",
            Layer::Micro => "micro_compact",
            Layer::Fit => "fit_tool_results",
            Layer::Summary => "compact_history",
            Layer::Reactive => "reactive_compact",
        }
    }
}

/// What compaction put in place of one tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// The layer that did it.
    pub layer: Layer,
    /// The text now in the result, exactly.
    pub text: String,
    /// Where the full output is, as the text names it.
    pub path: String,
    /// The first characters of the full output (at most 2,000), when the text carries a preview.
    pub preview: Option<String>,
    /// The full output's size, in characters.
    pub chars: usize,
}

/// How often each layer acted this session, and how much it took out (`/context`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Snips, and the messages they archived.
    pub snips: usize,
    /// Messages archived by the snips.
    pub snipped_messages: usize,
    /// Results saved by the budget.
    pub budget_results: usize,
    /// Results saved by micro-compaction.
    pub micro_results: usize,
    /// Results saved by fit.
    pub fit_results: usize,
    /// Summaries: automatic ones and those the `compact` tool asked for.
    pub summaries: usize,
    /// Reactive compactions.
    pub reactive: usize,
    /// Transcripts written.
    pub transcripts: usize,
}

/// The ledger: what compaction put where, kept for the session.
#[derive(Debug, Clone, Default)]
struct Ledger {
    /// Per `tool_use` id, what replaced its result. Entries of results that left the history are
    /// dropped ([`Archive::forget_absent`]).
    results: HashMap<String, Replaced>,
    /// File names under [`TOOL_RESULTS_DIR`] written this session, with their `tool_use` id.
    files: HashMap<String, String>,
    /// The marker the last snip left (`[N messages archived at PATH]`).
    marker: Option<String>,
    /// The summary messages compaction wrote, newest last (the last few).
    summaries: Vec<(Layer, String)>,
    /// The newest transcript, as the model sees its path.
    last_transcript: Option<String>,
    stats: Stats,
}

/// How many summary texts the ledger keeps for `/history` (one is in the history at a time).
const SUMMARIES_KEPT: usize = 4;

/// The workspace folders compaction writes to, and its ledger. Clones share the ledger; a
/// [`Archive::dry_run`] copy writes nothing.
#[derive(Debug, Clone)]
pub struct Archive {
    workspace: Workspace,
    ledger: Arc<Mutex<Ledger>>,
    dry_run: bool,
}

impl Archive {
    /// An archive in `workspace`, with an empty ledger.
    pub fn new(workspace: &Workspace) -> Self {
        Self { workspace: workspace.clone(), ledger: Arc::default(), dry_run: false }
    }

    /// A copy that writes nothing and keeps its own ledger: the layers run on it to tell what
    /// they would do (`/context`).
    pub fn dry_run(&self) -> Self {
        let ledger = self.ledger().clone();
        Self { workspace: self.workspace.clone(), ledger: Arc::new(Mutex::new(ledger)), dry_run: true }
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The path a file of `folder` is shown by: absolute, under the workspace root, as the
    /// course shows it to the model.
    fn shown(&self, folder: &str, name: &str) -> String {
        self.workspace.root().join(folder).join(name).display().to_string()
    }

    /// `shown` without the workspace root: what the learner's lines print.
    pub fn relative<'a>(&self, shown: &'a str) -> &'a str {
        let root = self.workspace.root().display().to_string();
        shown.strip_prefix(&root).map_or(shown, |rest| rest.trim_start_matches('/'))
    }

    /// Saves the complete `history` as `.transcripts/transcript_{random hex}.jsonl`, one message
    /// per line, and returns its path as shown to the model.
    ///
    /// # Errors
    /// The I/O error of the save; nothing is written then.
    pub fn save_transcript(&mut self, history: &[Message]) -> io::Result<String> {
        let mut jsonl = Vec::with_capacity(history.len() * 256);
        for message in history {
            serde_json::to_writer(&mut jsonl, message).map_err(io::Error::other)?;
            jsonl.push(b'\n');
        }
        let name = format!("transcript_{:032x}.jsonl", fastrand::u128(..));
        let name = self.write_new(TRANSCRIPT_DIR, &name, None, &jsonl)?;
        let path = self.shown(TRANSCRIPT_DIR, &name);
        let mut ledger = self.ledger();
        ledger.stats.transcripts += 1;
        ledger.last_transcript = Some(path.clone());
        Ok(path)
    }

    /// Saves a tool result's full output as `.task_outputs/tool-results/{id}.txt` (`id` the
    /// `tool_use` id with anything outside `[A-Za-z0-9._-]` made `_`, at most 120 characters)
    /// and returns its path as shown to the model.
    ///
    /// # Errors
    /// The I/O error of the save; nothing is written then.
    pub fn save_result(&mut self, tool_use_id: &str, output: &str) -> io::Result<String> {
        let stem = safe_file_stem(tool_use_id);
        let name =
            self.write_new(TOOL_RESULTS_DIR, &format!("{stem}.txt"), Some(tool_use_id), output.as_bytes())?;
        self.ledger().files.insert(name.clone(), tool_use_id.to_owned());
        Ok(self.shown(TOOL_RESULTS_DIR, &name))
    }

    /// The path [`Archive::save_result`] gives the result of `tool_use_id` when its name is
    /// free.
    pub fn result_path(&self, tool_use_id: &str) -> String {
        self.shown(TOOL_RESULTS_DIR, &format!("{}.txt", safe_file_stem(tool_use_id)))
    }

    /// Writes `bytes` atomically as `folder/name` beneath the workspace handle, or as
    /// `folder/STEM-2.EXT`, … when the name is taken on disk by a file this session did not write
    /// for `owner`. Returns the name used. A dry run writes nothing and returns `name`.
    fn write_new(&self, folder: &str, name: &str, owner: Option<&str>, bytes: &[u8]) -> io::Result<String> {
        if self.dry_run {
            return Ok(name.to_owned());
        }
        // A `.transcripts` or `.task_outputs` that is a symbolic link (even inside the workspace)
        // or no folder is refused: the harness writes only into its own plain folders.
        let dir = self
            .workspace
            .harness_dir(folder, true)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{folder} could not be made")))?;
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) => (stem, format!(".{ext}")),
            None => (name, String::new()),
        };
        let mut candidate = name.to_owned();
        for n in 2.. {
            let ours = owner.is_some_and(|id| self.ledger().files.get(&candidate).is_some_and(|o| o == id));
            match dir.symlink_metadata(&candidate) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Ok(meta) if ours && meta.is_file() => break,
                Ok(_) => candidate = format!("{stem}-{n}{ext}"),
                Err(e) => return Err(e),
            }
        }
        let mut file = cap_tempfile::TempFile::new(&dir)?;
        file.write_all(bytes)?;
        file.replace(&candidate)?;
        Ok(candidate)
    }

    /// Notes that `layer` put `replaced` in place of the result of `tool_use_id`.
    pub(crate) fn record(&self, tool_use_id: &str, replaced: Replaced) {
        let mut ledger = self.ledger();
        match replaced.layer {
            Layer::Budget => ledger.stats.budget_results += 1,
            Layer::Micro => ledger.stats.micro_results += 1,
            Layer::Fit => ledger.stats.fit_results += 1,
            _ => {}
        }
        ledger.results.insert(tool_use_id.to_owned(), replaced);
    }

    /// What compaction put in place of the result of `tool_use_id`, if `text` is still exactly
    /// that: the only way a result counts as saved (a path in tool output is never trusted).
    pub fn replaced(&self, tool_use_id: &str, text: &str) -> Option<Replaced> {
        self.ledger().results.get(tool_use_id).filter(|r| r.text == text).cloned()
    }

    /// Notes a snip: its marker, and the messages it archived.
    pub(crate) fn record_snip(&self, marker: &str, archived: usize) {
        let mut ledger = self.ledger();
        ledger.marker = Some(marker.to_owned());
        ledger.stats.snips += 1;
        ledger.stats.snipped_messages += archived;
    }

    /// Whether `text` is the marker the last snip left.
    pub fn is_snip_marker(&self, text: &str) -> bool {
        self.ledger().marker.as_deref() == Some(text)
    }

    /// Notes a summary message `layer` wrote.
    pub(crate) fn record_summary(&self, layer: Layer, text: &str) {
        let mut ledger = self.ledger();
        match layer {
            Layer::Reactive => ledger.stats.reactive += 1,
            _ => ledger.stats.summaries += 1,
        }
        ledger.summaries.push((layer, text.to_owned()));
        if ledger.summaries.len() > SUMMARIES_KEPT {
            ledger.summaries.remove(0);
        }
    }

    /// The layer that wrote the summary message `text`, if compaction wrote it.
    pub fn summary_layer(&self, text: &str) -> Option<Layer> {
        self.ledger().summaries.iter().rev().find(|(_, t)| t == text).map(|(layer, _)| *layer)
    }

    /// Drops the ledger entries of results no longer in `history` (archived or summarised), so
    /// that a long session's ledger stays as small as its history.
    pub(crate) fn forget_absent(&self, history: &[Message]) {
        let present: std::collections::HashSet<&str> = crate::history::results_in(history, 0..history.len())
            .into_iter()
            .filter_map(|at| crate::history::result_at(history, at).map(|r| r.tool_use_id.as_str()))
            .collect();
        let mut ledger = self.ledger();
        ledger.results.retain(|id, _| present.contains(id.as_str()));
        ledger.files.retain(|_, id| present.contains(id.as_str()));
    }

    /// How often each layer acted so far.
    pub fn stats(&self) -> Stats {
        self.ledger().stats
    }

    /// The newest transcript's path, as the model sees it.
    pub fn last_transcript(&self) -> Option<String> {
        self.ledger().last_transcript.clone()
    }

    /// The first `n` characters of a saved result's full output: from the ledger's preview when
    /// it holds that many, else read back from `path` beneath the workspace handle.
    pub(crate) fn preview_of(&self, replaced: &Replaced, n: usize) -> Option<String> {
        if let Some(preview) = &replaced.preview
            && (crate::history::chars(preview) >= n || crate::history::chars(preview) == replaced.chars)
        {
            return Some(crate::history::first_chars(preview, n).to_owned());
        }
        let relative = Path::new(self.relative(&replaced.path));
        let mut text = String::new();
        let file = self.workspace.dir().open(relative).ok()?;
        io::Read::read_to_string(&mut io::Read::take(file, (n as u64) * 4), &mut text).ok()?;
        Some(crate::history::first_chars(&text, n).to_owned())
    }
}

/// The `tool_use` id as a file stem: anything outside `[A-Za-z0-9._-]` becomes `_`, at most 120
/// characters, `unknown` when empty (COURSE §4.3). A stem of dots only gets a leading `_`, so it
/// never names a folder.
pub fn safe_file_stem(tool_use_id: &str) -> String {
    let stem: String = tool_use_id
        .chars()
        .take(120)
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' })
        .collect();
    match stem.as_str() {
        "" => "unknown".to_owned(),
        s if s.chars().all(|c| c == '.') => format!("_{s}"),
        _ => stem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_safe_file_names() {
        assert_eq!(safe_file_stem("toolu_01A-b.c"), "toolu_01A-b.c");
        assert_eq!(safe_file_stem("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(safe_file_stem(""), "unknown");
        assert_eq!(safe_file_stem(".."), "_..");
        assert_eq!(safe_file_stem("工具"), "__");
        assert_eq!(safe_file_stem(&"x".repeat(300)).len(), 120);
    }

    #[test]
    fn saves_are_atomic_files_under_the_workspace_and_never_replace_another_file() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ws = Workspace::new(dir.path())?;
        let mut archive = Archive::new(&ws);
        let first = archive.save_result("t/1", "one")?;
        assert_eq!(first, ws.root().join(".task_outputs/tool-results/t_1.txt").display().to_string());
        assert_eq!(std::fs::read_to_string(&first)?, "one");
        // The same id again (a budget preview micro-compacted later): the same file.
        assert_eq!(archive.save_result("t/1", "one, again")?, first);
        // Another id with the same stem: a new name, the first file untouched.
        let second = archive.save_result("t:1", "two")?;
        assert!(second.ends_with("t_1-2.txt"), "{second}");
        assert_eq!(std::fs::read_to_string(&first)?, "one, again");
        // A file that was there before this session is never replaced.
        std::fs::write(ws.root().join(".task_outputs/tool-results/old.txt"), "keep")?;
        let third = archive.save_result("old", "new")?;
        assert!(third.ends_with("old-2.txt"), "{third}");
        assert_eq!(std::fs::read_to_string(ws.root().join(".task_outputs/tool-results/old.txt"))?, "keep");
        let transcript = archive.save_transcript(&[Message::user_text("a"), Message::user_text("é")])?;
        assert_eq!(
            std::fs::read_to_string(&transcript)?,
            "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\",\"content\":\"é\"}\n"
        );
        let leftovers: Vec<_> = std::fs::read_dir(ws.root().join(TRANSCRIPT_DIR))?.collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");
        Ok(())
    }

    #[test]
    fn a_symlink_out_of_the_workspace_makes_the_save_fail_and_writes_nothing_outside() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let outside = tempfile::tempdir()?;
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".transcripts"))?;
        std::fs::create_dir_all(dir.path().join(".task_outputs"))?;
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".task_outputs/tool-results"))?;
        let ws = Workspace::new(dir.path())?;
        let mut archive = Archive::new(&ws);
        assert!(archive.save_transcript(&[Message::user_text("secret")]).is_err());
        assert!(archive.save_result("t1", "secret").is_err());
        assert_eq!(std::fs::read_dir(outside.path())?.count(), 0, "nothing was written outside");
        Ok(())
    }

    #[test]
    fn a_symlinked_target_name_is_not_followed() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let outside = tempfile::tempdir()?;
        let victim = outside.path().join("victim.txt");
        std::fs::write(&victim, "untouched")?;
        std::fs::create_dir_all(dir.path().join(TOOL_RESULTS_DIR))?;
        std::os::unix::fs::symlink(&victim, dir.path().join(TOOL_RESULTS_DIR).join("t1.txt"))?;
        let ws = Workspace::new(dir.path())?;
        let saved = Archive::new(&ws).save_result("t1", "output")?;
        assert!(saved.ends_with("t1-2.txt"), "{saved}");
        assert_eq!(std::fs::read_to_string(&victim)?, "untouched");
        Ok(())
    }

    #[test]
    fn a_dry_run_writes_nothing_and_keeps_its_own_ledger() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let ws = Workspace::new(dir.path())?;
        let archive = Archive::new(&ws);
        let mut dry = archive.dry_run();
        dry.save_transcript(&[Message::user_text("x")])?;
        dry.save_result("t1", "x")?;
        assert!(!dir.path().join(".transcripts").exists());
        assert!(!dir.path().join(".task_outputs").exists());
        assert_eq!(archive.stats().transcripts, 0);
        Ok(())
    }
}
