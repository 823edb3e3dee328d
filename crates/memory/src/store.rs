//! The store: one Markdown file per record in `WORKDIR/.memory/`, and their index `MEMORY.md`.
//!
//! Source: COURSE §4.4 (the course's `s09_memory/code.py`). A record is
//!
//! ```text
//! .memory/code-style.md        ---
//!                              name: code-style
//!                              description: Indent Python with tabs, never spaces
//!                              type: user
//!                              ---
//!
//!                              The user wants tabs in every Python file of this project.
//! ```
//!
//! and `.memory/MEMORY.md` holds one line per record, `- [{name}]({file}) - {description}`,
//! rewritten after every change. A record's file name is the slug of its name plus `.md`
//! ([`memory_slug`]); a name with a folder part is refused ([`check_memory_filename`]).
//!
//! Ours, beyond the course:
//! - **Through the workspace handle.** Every file operation goes through the workspace's open
//!   folder ([`Workspace::dir`], cap-std), beneath which the kernel refuses to leave: a `.memory`
//!   that is a symlink to somewhere outside the workspace is never followed out.
//! - **Atomic writes.** A record and the index are each written to a temporary file in
//!   `.memory/` (unnamed on Linux, `O_TMPFILE`), synced, then renamed over the target: a process
//!   killed at any moment leaves the old file or the new one, never half of one.
//! - **The index follows the records.** `MEMORY.md` is derived from the records; [`MemoryStore::load`]
//!   rewrites it when it does not match them, so a kill between writing a record and rewriting
//!   the index leaves it stale only until the next turn.
//! - **Consolidation writes before it deletes.** [`MemoryStore::replace_all`] writes the new
//!   records first and removes the old ones after, so a kill midway loses nothing; when a write
//!   fails it puts every old file back, byte for byte, and removes the new ones.
//! - **Front matter** is read as s07 reads a skill's ([`skills::frontmatter`]: between a first
//!   line `---` and the next line `---`, YAML without anchors, aliases or tags, its work bounded)
//!   and written by the same YAML library (`yaml-rust2`), so a name or description with `: `, `#`
//!   or quotes stays one value.

use std::collections::BTreeSet;
use std::io::{self, Read};
use std::path::PathBuf;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use skills::frontmatter;
use yaml_rust2::{Yaml, YamlEmitter};

use agent_core::workspace::Workspace;

use crate::MemoryError;
use crate::secrets::Secrets;

/// The store's folder, relative to the workspace root (COURSE §4.4).
pub const MEMORY_DIR: &str = ".memory";

/// The index's file name inside [`MEMORY_DIR`]; it is not a record.
pub const MEMORY_INDEX: &str = "MEMORY.md";

/// The record types a record may have (COURSE §4.4), in the course's order.
pub const MEMORY_TYPES: [&str; 4] = ["user", "feedback", "project", "reference"];

/// The type a record without one is listed with (the course's default).
pub const DEFAULT_TYPE: &str = "project";

/// The most bytes of one record file that are read (ours): a huge file dropped into `.memory/`
/// costs one bounded read, and recall caps what reaches SYSTEM anyway.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A record's type (COURSE §4.4): `user` (a preference), `feedback` (guidance given more than
/// once), `project` (a stable fact about the project) or `reference` (a pointer to something
/// outside).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryType {
    /// `user`: a preference of the user's.
    User,
    /// `feedback`: guidance the user gave.
    Feedback,
    /// `project`: a stable fact about the project.
    Project,
    /// `reference`: a pointer to something outside (a tracker, a dashboard).
    Reference,
}

impl MemoryType {
    /// The type as the front matter writes it: `user`, `feedback`, `project`, `reference`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Project => "project",
            MemoryType::Reference => "reference",
        }
    }

    /// The type named exactly `name` (one of [`MEMORY_TYPES`]), or `None`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "user" => Some(MemoryType::User),
            "feedback" => Some(MemoryType::Feedback),
            "project" => Some(MemoryType::Project),
            "reference" => Some(MemoryType::Reference),
            _ => None,
        }
    }
}

/// One record as read from `.memory/`: the course's `list_memory_files` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRecord {
    /// The file name inside `.memory/`, such as `code-style.md`.
    pub filename: String,
    /// The front matter's `name`, else the file name without `.md`.
    pub name: String,
    /// The front matter's `description`, else empty.
    pub description: String,
    /// The front matter's `type` as written (it may be none of [`MEMORY_TYPES`] in a file written
    /// by hand), else [`DEFAULT_TYPE`].
    pub mem_type: String,
    /// The text after the front matter, trimmed.
    pub body: String,
}

impl MemoryRecord {
    /// The file name without `.md`: what the learner types in `/memory forget NAME`.
    pub fn stem(&self) -> &str {
        self.filename.strip_suffix(".md").unwrap_or(&self.filename)
    }

    /// The index line's description: the `description`, else the body's first non-blank line,
    /// with whitespace collapsed (the course's `rebuild_memory_index`).
    pub fn index_description(&self) -> String {
        let first_line = self.body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let text = if self.description.is_empty() { first_line } else { &self.description };
        collapse_whitespace(text)
    }
}

/// The slug of a record's name, its file name without `.md` (COURSE §4.4): lower case, every run
/// of characters that are not word characters (letters, digits, `_`, in any script) becomes `-`,
/// then `-` and `_` are trimmed from both ends; `memory` when nothing is left.
/// `User Prefs` → `user-prefs`, `!!!` → `memory`, `代码 风格` → `代码-风格`.
pub fn memory_slug(name: &str) -> String {
    let mut slug = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '_' {
            slug.push(c);
            in_run = false;
        } else if !in_run {
            slug.push('-');
            in_run = true;
        }
    }
    let slug = slug.trim_matches(['-', '_']);
    if slug.is_empty() { "memory".to_owned() } else { slug.to_owned() }
}

/// The file name a record called `name` is stored under: `{slug}.md`.
pub fn memory_filename(name: &str) -> String {
    format!("{}.md", memory_slug(name))
}

/// The course's filename rules (its `memory_path`): `filename` must be a bare file name inside
/// `.memory/`, and `MEMORY.md` only where the index is meant (`allow_index`).
///
/// # Errors
/// [`MemoryError::InvalidFilename`] (`Invalid memory filename: {f}`) for a name with a folder
/// part, an empty name, `.`, `..` or a NUL byte; [`MemoryError::IndexNotRecord`] (`The memory
/// index is not a memory record`) for `MEMORY.md` when `allow_index` is false.
pub fn check_memory_filename(filename: &str, allow_index: bool) -> Result<&str, MemoryError> {
    let bare = !filename.is_empty() && filename != "." && filename != ".." && !filename.contains(['/', '\0']);
    if !bare {
        return Err(MemoryError::InvalidFilename(filename.to_owned()));
    }
    if filename == MEMORY_INDEX && !allow_index {
        return Err(MemoryError::IndexNotRecord);
    }
    Ok(filename)
}

/// A record's front matter, as far as the store reads it: each value a string (a number or a
/// boolean is read as its text; a list, a mapping, `null` or an empty string as missing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `type`.
    pub mem_type: Option<String>,
}

/// Splits `text` into its front matter and its body (the course's `parse_frontmatter`, with
/// COURSE §4.2's rule for where it ends, read by s07's [`skills::frontmatter`]): the first line
/// exactly `---` and a later line exactly `---` (a `\r` before the newline is accepted); between
/// them YAML, read without anchors, aliases or tags. A YAML error, a document that is not a
/// mapping, or no closing line means no front matter: the whole text is the body. The body
/// starts after the closing line, leading whitespace removed. A value that is not a string, or
/// an empty one, counts as missing.
pub fn parse_frontmatter(text: &str) -> (FrontMatter, &str) {
    let none = (FrontMatter::default(), text);
    let split = frontmatter::split_front_matter(text);
    let Some(yaml) = split.yaml else { return none };
    let Ok([name, description, mem_type]) = frontmatter::string_values(yaml, ["name", "description", "type"])
    else {
        return none;
    };
    let given = |value: Option<String>| value.filter(|v| !v.is_empty());
    let meta = FrontMatter { name: given(name), description: given(description), mem_type: given(mem_type) };
    (meta, split.body.trim_start())
}

/// A record file's text (the course's `memory_document`): the YAML front matter `name`,
/// `description`, `type` written by the YAML library (which quotes a value that needs it), a
/// blank line, the trimmed body and a final newline. Control characters in the name and the
/// description (one-line values) become spaces.
///
/// # Errors
/// [`MemoryError::Yaml`] if the YAML library cannot write the values (it writes any string).
pub fn memory_document(
    name: &str,
    mem_type: MemoryType,
    description: &str,
    body: &str,
) -> Result<String, MemoryError> {
    let one_line =
        |text: &str| Yaml::String(text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect());
    let mut meta = yaml_rust2::yaml::Hash::new();
    meta.insert(Yaml::String("name".into()), one_line(name));
    meta.insert(Yaml::String("description".into()), one_line(description));
    meta.insert(Yaml::String("type".into()), Yaml::String(mem_type.as_str().into()));
    let mut yaml = String::new();
    YamlEmitter::new(&mut yaml).dump(&Yaml::Hash(meta)).map_err(|e| MemoryError::Yaml(e.to_string()))?;
    // The emitter starts the document with its own `---` line.
    let yaml = yaml.strip_prefix("---\n").unwrap_or(&yaml);
    Ok(format!("---\n{}\n---\n\n{}\n", yaml.trim_end(), body.trim()))
}

/// The index `MEMORY.md` for `records` (the course's `rebuild_memory_index`): one line
/// `- [{name}]({file}) - {description}` per record in file-name order, names and descriptions on
/// one line, and a final newline; empty for no records.
pub fn render_index(records: &[MemoryRecord]) -> String {
    let mut sorted: Vec<&MemoryRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.filename.cmp(&b.filename));
    let mut index = String::new();
    for record in sorted {
        index.push_str(&format!(
            "- [{}]({}) - {}\n",
            collapse_whitespace(&record.name),
            record.filename,
            record.index_description()
        ));
    }
    index
}

/// `text` with each run of whitespace made one space, trimmed.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What [`MemoryStore::load`] found: the records, the index as it now is on disk, and whether the
/// index had to be rewritten to match the records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The records, in file-name order.
    pub records: Vec<MemoryRecord>,
    /// `MEMORY.md`'s text, trimmed (empty when there are no records).
    pub index: String,
    /// The index on disk did not match the records (a process was killed between a record's
    /// write and the index's, or someone edited one of them) and was rewritten.
    pub rebuilt: bool,
    /// The index did not match and could not be rewritten (a read-only workspace): why. The
    /// records and [`Loaded::index`] are still those of the files.
    pub rebuild_failed: Option<String>,
}

/// A record to write: its name, type, description and body, each non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    /// The name; the file is `{slug}.md`.
    pub name: String,
    /// The type.
    pub mem_type: MemoryType,
    /// One line for the index.
    pub description: String,
    /// The record's text.
    pub body: String,
}

impl NewRecord {
    /// The file this record is written to: [`memory_filename`] of its name.
    pub fn filename(&self) -> String {
        memory_filename(&self.name)
    }
}

/// The memory store of one workspace: `WORKDIR/.memory/`, reached through the workspace handle.
/// Cheap to clone. Every method reads the disk afresh, so two processes (two sessions) see each
/// other's records. No record it writes holds one of `secrets` ([`crate::secrets`]).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    workspace: Workspace,
    secrets: Secrets,
}

impl MemoryStore {
    /// The store of `workspace`, refusing records that hold one of `secrets`. Nothing is created
    /// until the first record is written.
    pub fn new(workspace: &Workspace, secrets: Secrets) -> Self {
        Self { workspace: workspace.clone(), secrets }
    }

    /// The secrets records are checked against.
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// `WORKDIR/.memory`, for messages.
    pub fn path(&self) -> PathBuf {
        self.workspace.root().join(MEMORY_DIR)
    }

    /// The folder, or `None` when there is no `.memory` yet.
    /// A `.memory` that is a symbolic link (even to a folder inside the workspace) or no folder
    /// is refused ([`Workspace::harness_dir`]): the store never reads, writes or deletes through it.
    fn dir(&self) -> Result<Option<Dir>, MemoryError> {
        Ok(self.workspace.harness_dir(MEMORY_DIR, false)?)
    }

    /// The folder, created when missing; refused as [`MemoryStore::dir`] refuses it.
    fn dir_or_create(&self) -> Result<Dir, MemoryError> {
        self.workspace
            .harness_dir(MEMORY_DIR, true)?
            .ok_or_else(|| io_error(MEMORY_DIR, io::Error::from(io::ErrorKind::NotFound)))
    }

    /// Every record (the course's `list_memory_files`): the regular files `*.md` in `.memory/`
    /// but `MEMORY.md`, in file-name order. Symlinks, folders, special files, names that start
    /// with `.` (temporary files), names with a control character and names that are not UTF-8
    /// are no records.
    ///
    /// # Errors
    /// [`MemoryError::Io`] when `.memory` or a record cannot be read.
    pub fn list_memory_files(&self) -> Result<Vec<MemoryRecord>, MemoryError> {
        match self.dir()? {
            Some(dir) => list_in(&dir),
            None => Ok(Vec::new()),
        }
    }

    /// The records and the index, with the index rewritten (atomically) when it does not match
    /// the records; what recall reads before each turn. [`Loaded::index`] is the index of the
    /// records even when it could not be written ([`Loaded::rebuild_failed`]).
    ///
    /// # Errors
    /// [`MemoryError::Io`] when the folder, a record or the index cannot be read.
    pub fn load(&self) -> Result<Loaded, MemoryError> {
        let Some(dir) = self.dir()? else { return Ok(Loaded::default()) };
        let records = list_in(&dir)?;
        let expected = render_index(&records);
        let current = match read_bounded(&dir, MEMORY_INDEX) {
            Ok(text) => text,
            Err(e) => return Err(io_error(MEMORY_INDEX, e)),
        };
        let stale = match &current {
            Some(text) => *text != expected,
            None => !records.is_empty(),
        };
        let mut loaded =
            Loaded { index: expected.trim().to_owned(), records, rebuilt: false, rebuild_failed: None };
        if stale {
            match write_atomic(&dir, MEMORY_INDEX, expected.as_bytes()) {
                Ok(()) => loaded.rebuilt = true,
                Err(e) => loaded.rebuild_failed = Some(e.to_string()),
            }
        }
        Ok(loaded)
    }

    /// The index as it is on disk, trimmed (the course's `read_memory_index`); empty when there
    /// is none.
    ///
    /// # Errors
    /// [`MemoryError::Io`] when it cannot be read.
    pub fn read_memory_index(&self) -> Result<String, MemoryError> {
        let Some(dir) = self.dir()? else { return Ok(String::new()) };
        let text = read_bounded(&dir, MEMORY_INDEX).map_err(|e| io_error(MEMORY_INDEX, e))?;
        Ok(text.unwrap_or_default().trim().to_owned())
    }

    /// The whole text of the record `filename` (front matter included), or `None` when there is
    /// no such regular file (the course's `read_memory_file`). At most [`MAX_RECORD_BYTES`] are
    /// read; bytes that are not UTF-8 are replaced.
    ///
    /// # Errors
    /// The filename rules of [`check_memory_filename`]; [`MemoryError::Io`] when it cannot be read.
    pub fn read_memory_file(&self, filename: &str) -> Result<Option<String>, MemoryError> {
        check_memory_filename(filename, false)?;
        let Some(dir) = self.dir()? else { return Ok(None) };
        read_bounded(&dir, filename).map_err(|e| io_error(filename, e))
    }

    /// Writes one record as `.memory/{slug}.md`, replacing a record of the same slug, then
    /// rewrites the index (the course's `write_memory_file`). Both writes are atomic. Returns the
    /// file name.
    ///
    /// # Errors
    /// [`MemoryError::EmptyName`], [`MemoryError::EmptyFields`], [`MemoryError::Secret`] before
    /// anything is written; [`MemoryError::Io`] when a write fails (the record and the index are
    /// then each as before, or the record new and the index stale until the next
    /// [`MemoryStore::load`]).
    pub fn write_memory_file(&self, record: &NewRecord) -> Result<String, MemoryError> {
        let (filename, document) = self.checked(record)?;
        let dir = self.dir_or_create()?;
        write_atomic(&dir, &filename, document.as_bytes())?;
        rebuild_in(&dir)?;
        Ok(filename)
    }

    /// Rewrites the index from the records (the course's `rebuild_memory_index`), atomically.
    /// Returns its text.
    ///
    /// # Errors
    /// [`MemoryError::Io`].
    pub fn rebuild_memory_index(&self) -> Result<String, MemoryError> {
        let dir = self.dir_or_create()?;
        rebuild_in(&dir)
    }

    /// Deletes one record and rewrites the index (`/memory forget NAME`). `which` is matched
    /// against each record's file name, its file name without `.md`, and its name; then against
    /// the file name its slug would give. Returns the deleted record and how many are left.
    ///
    /// # Errors
    /// The filename rules of [`check_memory_filename`] when `which` is a file name (it ends in
    /// `.md` or has a `/`); [`MemoryError::NotFound`]; [`MemoryError::Io`].
    pub fn forget(&self, which: &str) -> Result<(MemoryRecord, usize), MemoryError> {
        let which = which.trim();
        if which.ends_with(".md") || which.contains('/') || which.is_empty() {
            check_memory_filename(which, false)?;
        }
        let Some(dir) = self.dir()? else { return Err(MemoryError::NotFound(which.to_owned())) };
        let records = list_in(&dir)?;
        let slugged = memory_filename(which);
        let found = records
            .iter()
            .find(|r| r.filename == which || r.stem() == which || r.name == which)
            .or_else(|| records.iter().find(|r| r.filename == slugged))
            .cloned()
            .ok_or_else(|| MemoryError::NotFound(which.to_owned()))?;
        dir.remove_file(&found.filename).map_err(|e| io_error(&found.filename, e))?;
        store::sync_dir(&dir).map_err(|e| io_error(MEMORY_DIR, e))?;
        rebuild_in(&dir)?;
        Ok((found, records.len() - 1))
    }

    /// Replaces the records `old` with `new` (consolidation), then rewrites the index. The new
    /// records are written first (each atomically), then the old files that no new record
    /// replaced are removed: a process killed midway leaves every record whole and loses none.
    ///
    /// If a write or a removal fails, the store is put back as it was: every file of `old` is
    /// written again with its exact former bytes, every record file that was not among them is
    /// removed, and the index is rebuilt. The error is returned either way.
    ///
    /// # Errors
    /// [`MemoryError::EmptyName`], [`MemoryError::EmptyFields`], [`MemoryError::Secret`], or no
    /// record or a duplicate file name among `new` ([`MemoryError::EmptyOrDuplicate`]) before
    /// anything is written; [`MemoryError::Io`]
    /// for the failure that was undone; [`MemoryError::RestoreFailed`] when putting it back failed
    /// too.
    pub fn replace_all(&self, old: &[MemoryRecord], new: &[NewRecord]) -> Result<(), MemoryError> {
        let mut documents = Vec::with_capacity(new.len());
        let mut names = BTreeSet::new();
        for record in new {
            let (filename, document) = self.checked(record)?;
            if !names.insert(filename.clone()) {
                return Err(MemoryError::EmptyOrDuplicate);
            }
            documents.push((filename, document));
        }
        if documents.is_empty() {
            return Err(MemoryError::EmptyOrDuplicate);
        }
        let dir = self.dir_or_create()?;
        // The exact bytes of every old record, to put back if anything fails.
        let mut snapshot = Vec::with_capacity(old.len());
        for record in old {
            let bytes = dir.read(&record.filename).map_err(|e| io_error(&record.filename, e))?;
            snapshot.push((record.filename.clone(), bytes));
        }
        let applied = (|| {
            for (filename, document) in &documents {
                write_atomic(&dir, filename, document.as_bytes())?;
            }
            for (filename, _) in &snapshot {
                if !names.contains(filename) {
                    remove_if_present(&dir, filename)?;
                }
            }
            rebuild_in(&dir).map(|_| ())
        })();
        let Err(error) = applied else { return Ok(()) };
        let restored = (|| {
            for record in list_in(&dir)? {
                if !snapshot.iter().any(|(f, _)| *f == record.filename) {
                    remove_if_present(&dir, &record.filename)?;
                }
            }
            for (filename, bytes) in &snapshot {
                write_atomic(&dir, filename, bytes)?;
            }
            rebuild_in(&dir).map(|_| ())
        })();
        match restored {
            Ok(()) => Err(error),
            Err(again) => {
                Err(MemoryError::RestoreFailed { error: error.to_string(), restore: again.to_string() })
            }
        }
    }
}

impl MemoryStore {
    /// A record's file name and document, checked as the course's `write_memory_file` checks
    /// them, and for secrets.
    fn checked(&self, record: &NewRecord) -> Result<(String, String), MemoryError> {
        if record.name.trim().is_empty() {
            return Err(MemoryError::EmptyName);
        }
        if record.description.trim().is_empty() || record.body.trim().is_empty() {
            return Err(MemoryError::EmptyFields);
        }
        let all = format!("{}\n{}\n{}", record.name, record.description, record.body);
        if let Some(what) = self.secrets.find(&all) {
            return Err(MemoryError::Secret(what));
        }
        let filename = record.filename();
        check_memory_filename(&filename, false)?;
        let document = memory_document(&record.name, record.mem_type, &record.description, &record.body)?;
        Ok((filename, document))
    }
}

/// The records in `dir`, in file-name order.
fn list_in(dir: &Dir) -> Result<Vec<MemoryRecord>, MemoryError> {
    let mut names = Vec::new();
    for entry in dir.entries().map_err(|e| io_error(MEMORY_DIR, e))? {
        let entry = entry.map_err(|e| io_error(MEMORY_DIR, e))?;
        let Ok(name) = entry.file_name().into_string() else { continue };
        // A control character (a newline) in a name would break the index's one line per record.
        if !name.ends_with(".md")
            || name == MEMORY_INDEX
            || name.starts_with('.')
            || name.contains(char::is_control)
        {
            continue;
        }
        if check_memory_filename(&name, false).is_err() {
            continue;
        }
        match dir.symlink_metadata(&name) {
            Ok(meta) if meta.is_file() => names.push(name),
            Ok(_) => {}
            // Gone between the listing and the look: another process removed it.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&name, e)),
        }
    }
    names.sort();
    let mut records = Vec::with_capacity(names.len());
    for filename in names {
        let Some(text) = read_bounded(dir, &filename).map_err(|e| io_error(&filename, e))? else {
            continue;
        };
        records.push(record_from(filename, &text));
    }
    Ok(records)
}

/// A [`MemoryRecord`] from a file's name and text, with the course's fallbacks.
fn record_from(filename: String, text: &str) -> MemoryRecord {
    let (meta, body) = parse_frontmatter(text);
    let stem = filename.strip_suffix(".md").unwrap_or(&filename).to_owned();
    MemoryRecord {
        name: meta.name.unwrap_or(stem),
        description: meta.description.unwrap_or_default(),
        mem_type: meta.mem_type.unwrap_or_else(|| DEFAULT_TYPE.to_owned()),
        body: body.trim().to_owned(),
        filename,
    }
}

/// Reads at most [`MAX_RECORD_BYTES`] of the regular file `name` in `dir`, without following a
/// symlink and without blocking on a FIFO; `None` when it does not exist or is not a regular
/// file.
fn read_bounded(dir: &Dir, name: &str) -> io::Result<Option<String>> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut options = OpenOptions::new();
    options.read(true).nonblock(true).follow(FollowSymlinks::No);
    let file = match dir.open_with(name, &options) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    // The type that counts is that of the file actually opened.
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Rewrites `MEMORY.md` in `dir` from its records; returns its text.
fn rebuild_in(dir: &Dir) -> Result<String, MemoryError> {
    let index = render_index(&list_in(dir)?);
    write_atomic(dir, MEMORY_INDEX, index.as_bytes())?;
    Ok(index)
}

/// Writes `bytes` to `name` in `dir` atomically, with the store toolkit ([`store::replace_in`]):
/// a temporary file in the same folder (unnamed where the kernel allows, `O_TMPFILE`), written,
/// synced, renamed over `name`, then the folder synced so that the rename survives a crash of
/// the machine too.
fn write_atomic(dir: &Dir, name: &str, bytes: &[u8]) -> Result<(), MemoryError> {
    store::replace_in(dir, name, bytes).map_err(|e| io_error(name, e))
}

/// Removes `name` from `dir`; a file already gone is fine.
fn remove_if_present(dir: &Dir, name: &str) -> Result<(), MemoryError> {
    match dir.remove_file(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(name, e)),
    }
}

/// An I/O error on `.memory/{name}` (or `.memory` itself).
fn io_error(name: &str, source: io::Error) -> MemoryError {
    let path = if name == MEMORY_DIR { MEMORY_DIR.to_owned() } else { format!("{MEMORY_DIR}/{name}") };
    MemoryError::Io { path, source }
}

/// A store in a fresh temporary workspace, for this crate's tests; the folder goes when the
/// `TempDir` is dropped.
#[cfg(test)]
pub(crate) fn temp_store() -> Result<(tempfile::TempDir, MemoryStore), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = MemoryStore::new(&Workspace::new(dir.path())?, Secrets::none());
    Ok((dir, store))
}

#[cfg(test)]
mod tests {
    use super::temp_store as store;
    use super::*;
    use std::io::Write;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn record(name: &str, mem_type: MemoryType, description: &str, body: &str) -> NewRecord {
        NewRecord { name: name.into(), mem_type, description: description.into(), body: body.into() }
    }

    #[test]
    fn slugs_are_the_courses() {
        let cases = [
            ("User Prefs", "user-prefs"),
            ("!!!", "memory"),
            ("", "memory"),
            ("  Code  Style  ", "code-style"),
            ("a__b--c", "a__b-c"),
            ("_private_", "private"),
            ("C++ & Rust!", "c-rust"),
            ("代码 风格", "代码-风格"),
            ("Ünïcode Names", "ünïcode-names"),
            ("../../etc/passwd", "etc-passwd"),
            ("MEMORY", "memory"),
        ];
        for (name, slug) in cases {
            assert_eq!(memory_slug(name), slug, "{name:?}");
        }
        assert_eq!(memory_filename("User Prefs"), "user-prefs.md");
    }

    #[test]
    fn a_file_name_with_a_folder_part_or_the_index_is_refused() {
        for bad in ["a/b.md", "../x.md", "/etc/passwd", "", ".", "..", "x\0.md"] {
            let err = check_memory_filename(bad, false).err().map(|e| e.to_string());
            assert_eq!(err, Some(format!("Invalid memory filename: {bad}")), "{bad:?}");
        }
        let index = check_memory_filename("MEMORY.md", false).err().map(|e| e.to_string());
        assert_eq!(index.as_deref(), Some("The memory index is not a memory record"));
        assert!(check_memory_filename("MEMORY.md", true).is_ok());
        assert!(check_memory_filename("code-style.md", false).is_ok());
    }

    #[test]
    fn a_record_is_front_matter_a_blank_line_and_the_body() -> TestResult {
        let (dir, store) = store()?;
        let file = store.write_memory_file(&record(
            "Code Style",
            MemoryType::User,
            "Indent Python with tabs",
            "\n  The user wants tabs.\n",
        ))?;
        assert_eq!(file, "code-style.md");
        let text = std::fs::read_to_string(dir.path().join(".memory/code-style.md"))?;
        assert_eq!(
            text,
            "---\nname: Code Style\ndescription: Indent Python with tabs\ntype: user\n---\n\nThe user wants tabs.\n"
        );
        Ok(())
    }

    #[test]
    fn the_index_is_one_line_per_record_in_file_name_order() -> TestResult {
        let (dir, store) = store()?;
        store.write_memory_file(&record(
            "test layout",
            MemoryType::Project,
            "Tests  live\nin tests/",
            "b",
        ))?;
        store.write_memory_file(&record("code-style", MemoryType::User, "Tabs, never spaces", "a"))?;
        let index = std::fs::read_to_string(dir.path().join(".memory/MEMORY.md"))?;
        assert_eq!(
            index,
            "- [code-style](code-style.md) - Tabs, never spaces\n- [test layout](test-layout.md) - Tests live in tests/\n"
        );
        // A record written by hand without a description: its body's first line stands in.
        std::fs::write(
            dir.path().join(".memory/hand.md"),
            "---\nname: by hand\n---\n\n\nFirst line\nsecond\n",
        )?;
        std::fs::write(dir.path().join(".memory/bare.md"), "no front matter at all")?;
        let index = store.rebuild_memory_index()?;
        assert_eq!(
            index,
            "- [bare](bare.md) - no front matter at all\n- [code-style](code-style.md) - Tabs, never spaces\n- [by hand](hand.md) - First line\n- [test layout](test-layout.md) - Tests live in tests/\n"
        );
        let listed = store.list_memory_files()?;
        let hand = listed.iter().find(|r| r.filename == "hand.md").ok_or("hand.md listed")?;
        assert_eq!(
            (hand.name.as_str(), hand.description.as_str(), hand.mem_type.as_str()),
            ("by hand", "", "project")
        );
        assert_eq!(store.read_memory_index()?, index.trim());
        Ok(())
    }

    #[test]
    fn front_matter_round_trips_whatever_the_text_holds() -> TestResult {
        let (_dir, store) = store()?;
        let tricky = [
            ("a: b # c", "says \"hi\" and 'bye'"),
            ("---", "--- in the middle: --- too"),
            ("true", "null"),
            ("- [x](y)", "&anchor *alias !tag @at `tick` %pct"),
            ("代码风格", "用制表符缩进，不要空格"),
            ("42", "2014-12-31"),
            (" padded ", "ends with a colon:"),
        ];
        for (name, description) in tricky {
            let file = store.write_memory_file(&record(
                name,
                MemoryType::Feedback,
                description,
                "body\n---\nmore",
            ))?;
            let text = store.read_memory_file(&file)?.ok_or("written")?;
            let (meta, body) = parse_frontmatter(&text);
            assert_eq!(meta.name.as_deref(), Some(name), "{text}");
            assert_eq!(meta.description.as_deref(), Some(description), "{text}");
            assert_eq!(meta.mem_type.as_deref(), Some("feedback"));
            assert_eq!(body, "body\n---\nmore\n");
        }
        Ok(())
    }

    #[test]
    fn control_characters_in_a_name_or_description_become_spaces() -> TestResult {
        let (_dir, store) = store()?;
        let file = store.write_memory_file(&record(
            "two\nlines",
            MemoryType::User,
            "esc\u{1b}[31m red\ttab",
            "b",
        ))?;
        let text = store.read_memory_file(&file)?.ok_or("written")?;
        let (meta, _) = parse_frontmatter(&text);
        assert_eq!(meta.name.as_deref(), Some("two lines"));
        assert_eq!(meta.description.as_deref(), Some("esc [31m red tab"));
        Ok(())
    }

    #[test]
    fn front_matter_is_parsed_safely_and_anything_else_is_body() {
        let text = "---\r\nname: crlf\r\ntype: user\r\n---\r\nbody\r\n";
        assert_eq!(parse_frontmatter(text).0.name.as_deref(), Some("crlf"));
        for not_front_matter in [
            "no front matter",
            "---\nname: never closed\n",
            "---\nname: [unclosed\n---\nbody",
            "---\n!!python/object/apply:os.system ['echo pwned']\n---\nbody",
            " ---\nname: indented\n---\nbody",
        ] {
            assert_eq!(parse_frontmatter(not_front_matter), (FrontMatter::default(), not_front_matter));
        }
        // An alias bomb is refused by the YAML library's limits, not expanded.
        let mut bomb = String::from("---\na: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n");
        for (i, prev) in ('b'..='j').zip('a'..='i') {
            bomb.push_str(&format!(
                "{i}: &{i} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
            ));
        }
        bomb.push_str("name: bomb\n---\nbody");
        assert_eq!(parse_frontmatter(&bomb).0, FrontMatter::default());
        // A document that is not a mapping gives no values (COURSE §4.2); the body is what follows.
        let list = "---\n- a list\n- not a mapping\n---\nbody";
        assert_eq!(parse_frontmatter(list), (FrontMatter::default(), "body"));
        // A value that is not a string (a number, a list, a boolean) or is empty counts as missing.
        let (meta, body) = parse_frontmatter("---\nname: 42\ndescription: [a]\ntype: true\n---\nbody");
        assert_eq!((meta, body), (FrontMatter::default(), "body"));
        let (meta, _) = parse_frontmatter("---\nname: ''\ndescription: \"42\"\n---\n");
        assert_eq!(meta, FrontMatter { name: None, description: Some("42".into()), mem_type: None });
    }

    #[test]
    fn a_record_of_the_same_slug_is_replaced_and_empty_fields_are_refused() -> TestResult {
        let (_dir, store) = store()?;
        store.write_memory_file(&record("Code Style", MemoryType::User, "tabs", "one"))?;
        store.write_memory_file(&record("code_style!", MemoryType::User, "tabs", "two"))?;
        store.write_memory_file(&record("code style", MemoryType::User, "tabs", "three"))?;
        let records = store.list_memory_files()?;
        assert_eq!(
            records.iter().map(|r| r.filename.as_str()).collect::<Vec<_>>(),
            ["code-style.md", "code_style.md"]
        );
        assert_eq!(records[0].body, "three");
        let empty = [
            (record(" ", MemoryType::User, "d", "b"), "Memory name cannot be empty"),
            (record("n", MemoryType::User, " ", "b"), "Memory description and body cannot be empty"),
            (record("n", MemoryType::User, "d", "\n"), "Memory description and body cannot be empty"),
        ];
        for (bad, message) in empty {
            assert_eq!(store.write_memory_file(&bad).err().map(|e| e.to_string()).as_deref(), Some(message));
        }
        Ok(())
    }

    #[test]
    fn a_record_holding_a_secret_is_never_written() -> TestResult {
        let dir = tempfile::tempdir()?;
        let secrets =
            Secrets::from_vars([("ANTHROPIC_API_KEY".to_owned(), "proxy-credential-0042".to_owned())]);
        let store = MemoryStore::new(&Workspace::new(dir.path())?, secrets);
        let leak =
            record("api access", MemoryType::Reference, "how to call the proxy", "use proxy-credential-0042");
        let err = store.write_memory_file(&leak).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("refused to store a record that holds the value of ANTHROPIC_API_KEY")
        );
        let shaped =
            record("key", MemoryType::Reference, "the key", "sk-ant-api03-AbCdEf0123456789AbCdEf0123");
        assert!(matches!(store.write_memory_file(&shaped), Err(MemoryError::Secret(_))));
        assert!(!dir.path().join(".memory").exists(), "nothing was written, not even the folder");
        Ok(())
    }

    #[test]
    fn forget_deletes_one_record_and_rewrites_the_index() -> TestResult {
        let (dir, store) = store()?;
        store.write_memory_file(&record("code-style", MemoryType::User, "tabs", "a"))?;
        store.write_memory_file(&record("Test Layout", MemoryType::Project, "tests/", "b"))?;
        let (gone, left) = store.forget("code-style")?;
        assert_eq!((gone.filename.as_str(), left), ("code-style.md", 1));
        assert!(!dir.path().join(".memory/code-style.md").exists());
        assert_eq!(store.read_memory_index()?, "- [Test Layout](test-layout.md) - tests/");
        // By its name as written, which slugs to the file.
        assert_eq!(store.forget("Test Layout")?.1, 0);
        assert_eq!(store.read_memory_index()?, "");
        assert!(matches!(store.forget("nope"), Err(MemoryError::NotFound(n)) if n == "nope"));
        assert_eq!(
            store.forget("../x.md").err().map(|e| e.to_string()).as_deref(),
            Some("Invalid memory filename: ../x.md")
        );
        assert!(matches!(store.forget("MEMORY.md"), Err(MemoryError::IndexNotRecord)));
        Ok(())
    }

    #[test]
    fn a_stale_index_is_rebuilt_from_the_records() -> TestResult {
        let (dir, store) = store()?;
        store.write_memory_file(&record("a", MemoryType::User, "first", "x"))?;
        std::fs::write(
            dir.path().join(".memory/b.md"),
            "---\nname: b\ndescription: second\ntype: user\n---\n\ny\n",
        )?;
        let loaded = store.load()?;
        assert!(loaded.rebuilt);
        assert_eq!(loaded.index, "- [a](a.md) - first\n- [b](b.md) - second");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".memory/MEMORY.md"))?,
            format!("{}\n", loaded.index)
        );
        assert!(!store.load()?.rebuilt, "in step now");
        Ok(())
    }

    #[test]
    fn folders_symlinks_and_dot_files_are_no_records() -> TestResult {
        let (dir, store) = store()?;
        store.write_memory_file(&record("real", MemoryType::User, "d", "b"))?;
        let memory = dir.path().join(".memory");
        std::fs::create_dir(memory.join("folder.md"))?;
        std::fs::write(dir.path().join("outside.md"), "---\nname: outside\n---\nx")?;
        std::os::unix::fs::symlink(dir.path().join("outside.md"), memory.join("link.md"))?;
        std::fs::write(memory.join(".hidden.md"), "x")?;
        std::fs::write(memory.join("two\nlines.md"), "x")?;
        std::fs::write(memory.join("notes.txt"), "x")?;
        let names: Vec<String> = store.list_memory_files()?.into_iter().map(|r| r.filename).collect();
        assert_eq!(names, ["real.md"]);
        assert_eq!(store.read_memory_file("link.md")?, None, "a symlink is not followed");
        Ok(())
    }

    #[test]
    fn a_memory_folder_that_leads_outside_the_workspace_is_not_followed() -> TestResult {
        let (dir, store) = store()?;
        let outside = tempfile::tempdir()?;
        std::os::unix::fs::symlink(outside.path(), dir.path().join(".memory"))?;
        assert!(store.write_memory_file(&record("a", MemoryType::User, "d", "b")).is_err());
        assert!(store.list_memory_files().is_err());
        assert_eq!(std::fs::read_dir(outside.path())?.count(), 0, "nothing was written outside");
        Ok(())
    }

    #[test]
    fn a_memory_link_to_a_folder_inside_the_workspace_is_refused_and_deletes_nothing() -> TestResult {
        let (dir, store) = store()?;
        let docs = dir.path().join("docs");
        std::fs::create_dir(&docs)?;
        std::fs::write(
            docs.join("guide.md"),
            "---\nname: guide\ndescription: the user's own\n---\nkeep me\n",
        )?;
        std::os::unix::fs::symlink("docs", dir.path().join(".memory"))?;
        let refused = store.list_memory_files().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.starts_with(".memory in the workspace is a symbolic link (to docs)"), "{refused}");
        assert!(refused.contains("rm .memory"), "{refused}");
        let old = vec![record_from("guide.md".to_owned(), "keep me")];
        assert!(store.replace_all(&old, &[record("new", MemoryType::User, "d", "b")]).is_err());
        assert!(store.forget("guide").is_err());
        assert!(store.write_memory_file(&record("a", MemoryType::User, "d", "b")).is_err());
        let names: Vec<_> = std::fs::read_dir(&docs)?.flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, ["guide.md"], "nothing was written or deleted in docs");
        Ok(())
    }

    #[test]
    fn replace_all_writes_the_new_records_and_removes_the_old() -> TestResult {
        let (dir, store) = store()?;
        for name in ["a", "b", "c"] {
            store.write_memory_file(&record(name, MemoryType::User, &format!("about {name}"), name))?;
        }
        let old = store.list_memory_files()?;
        let new =
            [record("a", MemoryType::User, "a and b", "merged"), record("d", MemoryType::Project, "d", "d")];
        store.replace_all(&old, &new)?;
        let names: Vec<String> = store.list_memory_files()?.into_iter().map(|r| r.filename).collect();
        assert_eq!(names, ["a.md", "d.md"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".memory/MEMORY.md"))?,
            "- [a](a.md) - a and b\n- [d](d.md) - d\n"
        );
        let dup = [record("X y", MemoryType::User, "1", "1"), record("x-y", MemoryType::User, "2", "2")];
        assert!(matches!(store.replace_all(&old, &dup), Err(MemoryError::EmptyOrDuplicate)));
        assert!(matches!(store.replace_all(&old, &[]), Err(MemoryError::EmptyOrDuplicate)));
        Ok(())
    }

    #[test]
    fn a_failed_write_during_replace_all_restores_every_file() -> TestResult {
        let (dir, store) = store()?;
        let memory = dir.path().join(".memory");
        for name in ["a", "b", "c"] {
            store.write_memory_file(&record(name, MemoryType::User, &format!("about {name}"), name))?;
        }
        // A hand-edited record whose exact bytes (no final newline, odd spacing) must come back.
        std::fs::write(memory.join("c.md"), "---\nname:   c\n---\nhand   edited")?;
        store.rebuild_memory_index()?;
        let before: Vec<(String, Vec<u8>)> = ["a.md", "b.md", "c.md", "MEMORY.md"]
            .iter()
            .map(|f| Ok(((*f).to_owned(), std::fs::read(memory.join(f))?)))
            .collect::<std::io::Result<_>>()?;
        let old = store.list_memory_files()?;
        // `zz.md` is a folder: the rename of a new record over it fails midway, after `a.md`,
        // `b2.md` were written.
        std::fs::create_dir(memory.join("zz.md"))?;
        let new = [
            record("a", MemoryType::User, "a rewritten", "new a"),
            record("b2", MemoryType::User, "new b2", "b2"),
            record("zz", MemoryType::User, "cannot be written", "zz"),
        ];
        let err = store.replace_all(&old, &new).err().ok_or("the write failed")?;
        assert!(err.to_string().starts_with(".memory/zz.md: "), "{err}");
        for (file, bytes) in &before {
            assert_eq!(&std::fs::read(memory.join(file))?, bytes, "{file} restored byte for byte");
        }
        assert!(!memory.join("b2.md").exists(), "the new record is gone again");
        let names: Vec<String> = store.list_memory_files()?.into_iter().map(|r| r.filename).collect();
        assert_eq!(names, ["a.md", "b.md", "c.md"]);
        Ok(())
    }

    /// The environment variable that turns [`killed_writer_child`] into the writer.
    const WRITER_DIR: &str = "MEMORY_TEST_KILLED_WRITER_DIR";

    /// Characters in each record body the writer writes; big enough that a write takes a while.
    const BODY_CHARS: usize = 400_000;

    /// The writer of [`a_killed_writer_leaves_every_file_whole`], run in a child process: it
    /// rewrites the record `big` forever, version `i` with description `version i` and a body
    /// of `BODY_CHARS` times `A` (even `i`) or `B` (odd), printing `wrote i` after each.
    #[test]
    #[ignore = "the child process of a_killed_writer_leaves_every_file_whole"]
    fn killed_writer_child() -> TestResult {
        let Ok(root) = std::env::var(WRITER_DIR) else { return Ok(()) };
        let store = MemoryStore::new(&Workspace::new(root)?, Secrets::none());
        let start: usize = std::env::var("MEMORY_TEST_START")?.parse()?;
        for i in start.. {
            let letter = if i.is_multiple_of(2) { "A" } else { "B" };
            let body = letter.repeat(BODY_CHARS);
            store.write_memory_file(&record("big", MemoryType::Project, &format!("version {i}"), &body))?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "wrote {i}")?;
            out.flush()?;
        }
        Ok(())
    }

    /// Checks the record `big` is one whole version: its description `version i` and its body
    /// `BODY_CHARS` of the letter for `i`. Returns `i`.
    fn whole_version(text: &str) -> Result<usize, String> {
        let (meta, body) = parse_frontmatter(text);
        let i: usize = meta
            .description
            .as_deref()
            .and_then(|d| d.strip_prefix("version "))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("no whole front matter: {:?}", &text[..text.len().min(120)]))?;
        let letter = if i.is_multiple_of(2) { 'A' } else { 'B' };
        let body = body.trim_end();
        if body.chars().count() != BODY_CHARS || body.chars().any(|c| c != letter) {
            return Err(format!("version {i} has a torn body of {} characters", body.chars().count()));
        }
        Ok(i)
    }

    #[test]
    fn a_killed_writer_leaves_every_file_whole() -> TestResult {
        let (dir, store) = store()?;
        let exe = std::env::current_exe()?;
        let mut next = 0;
        for round in 0..8 {
            let mut child = std::process::Command::new(&exe)
                .args(["store::tests::killed_writer_child", "--exact", "--ignored", "--nocapture", "--quiet"])
                .env(WRITER_DIR, dir.path())
                .env("MEMORY_TEST_START", next.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()?;
            let stdout = child.stdout.take().ok_or("the child's stdout")?;
            // Let it finish a few writes, then kill it (SIGKILL) somewhere in the next ones: right
            // after its report, or a little later, so that the kill lands at different points of
            // a write (its temporary file, the rename, the index). Whatever the point, every check
            // below must hold.
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
            let wanted = 2 + round;
            let mut done = 0;
            for line in lines.by_ref() {
                if line?.starts_with("wrote ") {
                    done += 1;
                    if done == wanted {
                        break;
                    }
                }
            }
            assert_eq!(done, wanted, "the writer stopped early");
            std::thread::sleep(std::time::Duration::from_millis([0, 15, 30, 45, 60, 75, 90, 105][round]));
            child.kill()?;
            child.wait()?;
            next += wanted + 1;

            let memory = dir.path().join(".memory");
            let text = std::fs::read_to_string(memory.join("big.md"))?;
            let version = whole_version(&text)?;
            // The index on disk is whole too: one line naming some written version.
            let index = std::fs::read_to_string(memory.join("MEMORY.md"))?;
            assert!(index.starts_with("- [big](big.md) - version ") && index.ends_with('\n'), "{index:?}");
            // Only `big.md` and the index carry the names a reader lists; no half-written `.md`.
            let md: Vec<String> = std::fs::read_dir(&memory)?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".md"))
                .collect();
            assert_eq!(md.len(), 2, "{md:?}");
            // Read back, the store is in step: the index names the version the record holds.
            let loaded = store.load()?;
            assert_eq!(loaded.index, format!("- [big](big.md) - version {version}"));
            assert_eq!(loaded.records.len(), 1);
        }
        Ok(())
    }
}
