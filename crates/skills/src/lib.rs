//! The course's s07, skill loading: the model sees one catalog line per skill in SYSTEM, and
//! loads a skill's full `SKILL.md` with `load_skill` only when the skill applies.
//!
//! ```text
//!   start:  skills/*/SKILL.md ──scan once──► catalog: "- code-review: Review code for bugs, …"
//!                                                │  (one line per skill, in SYSTEM)
//!   turn:   prompt ──► LLM ──► tool_use load_skill {name} ──► tool_result = the whole SKILL.md
//!                       ▲                                            │  (only now, only this one)
//!                       └────────────────────────────────────────────┘
//! ```
//!
//! Source: COURSE §4.2 (the course's `s07_skill_loading/code.py` at its newest mainline):
//! - **Scanning**: `WORKDIR/skills/*/SKILL.md`, one level, sorted by folder name, once at start
//!   ([`SkillLoader::scan`]). A manifest that is not a file, or that resolves outside `skills/`
//!   (a symlink), is skipped.
//! - **Front matter** ([`frontmatter`]): the delimiter rules, and YAML read safely.
//! - **`name`**: the trimmed string, else the folder's name. **`description`**: the trimmed
//!   string, else the body's first line; either without leading `#`s and spaces (the course's
//!   `lstrip("# ")`); whitespace collapsed; `""` for an empty body. A non-string value (`name: [bad]`) falls back the same way.
//! - **SYSTEM** holds the catalog ([`SkillLoader::system_section`]), never a body.
//! - **`load_skill`** returns the whole file, front matter included, byte for byte, or
//!   `Error: Unknown skill 'NAME'. Available: a, b` (`none` when there are none).
//!
//! Ours, for a learner and for safety:
//! - **Race-free reading.** `skills/` is opened once as a handle beneath the workspace's own
//!   handle ([`agent_core::workspace::Workspace::dir`], cap-std), and every manifest is opened
//!   *through that handle*: on Linux an `openat2(RESOLVE_BENEATH)`, so the kernel refuses, in the
//!   same call that opens the file, any symlink or `..` that leads outside `skills/`. The type
//!   check (`fstat`) and the read use the file that was opened. There is no check of a path
//!   followed by a second open that a swapped symlink could redirect. Relative symlinks that stay
//!   inside `skills/` work; an absolute symlink is refused even when it points back inside (the
//!   handle cannot tell where an absolute path lands without leaving it).
//! - **Bad skills are skipped with a warning, never a crash** ([`Warning`]): a manifest that is
//!   not a regular file (a FIFO is never waited on: the open does not block), larger than
//!   [`MAX_MANIFEST_BYTES`] (at most that much plus one byte is read), not UTF-8, or whose front
//!   matter is not valid or not safe YAML. (The course counts a YAML error as empty front matter
//!   and registers the skill under its folder name; we skip it and say why, since a header that
//!   does not parse is a typo the author wants to hear about, not a skill to advertise with its
//!   first body line.) Two skills with one name: the later folder in sorted order wins, as the
//!   course's registry keeps the last one written, and a warning names both.
//! - **What the learner sees**: one line at start with the number of skills and their names; the
//!   size of each skill in the `load_skill` tool line; `/skills`, the catalog with each skill's
//!   size and how often it was loaded; `/history`, which shows SYSTEM first, holding the catalog
//!   and no body.
//!
//! Key insight: keep the cheap part (a line per skill) always in context and the expensive part
//! (the instructions) out of it until the model asks. A skill is knowledge, loaded on demand.

pub mod frontmatter;

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_cli::chapter::Setup;
use agent_cli::repl::{CommandContext, SlashCommand, history_view};
use agent_core::dispatch::{Subject, ToolError, TypedTool};
use agent_core::events::{EventSink, Level, line};
use agent_core::messages::ToolSpec;
use agent_core::workspace::Workspace;
use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};
use serde_json::json;

use crate::frontmatter::{
    YamlError, collapse_whitespace, first_line_description, parse_yaml, split_front_matter,
};

/// The folder, in the workspace root, that holds one folder per skill (COURSE §4.2).
pub const SKILLS_DIR: &str = "skills";

/// A skill's manifest, in its folder (COURSE §4.2).
pub const MANIFEST: &str = "SKILL.md";

/// The largest manifest read, in bytes (256 KiB). A skill is instructions for the model, sent
/// whole as one `tool_result`; Anthropic's own guidance keeps a `SKILL.md` under 500 lines, a
/// few tens of KB. A larger file is skipped after reading at most this many bytes plus one.
pub const MAX_MANIFEST_BYTES: usize = 256 * 1024;

/// The tool's name (COURSE §4.2).
pub const LOAD_SKILL_TOOL_NAME: &str = "load_skill";

/// The tool's description (COURSE §4.2).
pub const LOAD_SKILL_DESCRIPTION: &str = "Load the full SKILL.md content by skill name.";

/// The catalog when no skill was found (COURSE §4.2).
pub const NO_SKILLS: &str = "(no skills found)";

/// How many names the start line shows; `/skills` lists them all.
pub const SUMMARY_NAMES: usize = 20;

/// The `load_skill` tool's input schema: `name`, a string, required (COURSE §4.2).
pub fn load_skill_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    })
}

/// One skill in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The name `load_skill` takes: the front matter's `name`, trimmed, or the folder's name.
    pub name: String,
    /// The catalog's description: one line, whitespace collapsed (see the crate docs).
    pub description: String,
    /// The whole manifest as read at start, front matter included: what `load_skill` returns.
    pub content: String,
    /// Where it was read, relative to the workspace: `skills/NAME/SKILL.md`.
    pub manifest: String,
}

/// Why a manifest (or `skills/` itself) was not read. `Display` is the end of a warning line
/// and says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A symlink (or `..`) on the way leads outside `skills/`; refused by the open itself.
    #[error(
        "it resolves outside skills/ (a symlink?): only files beneath skills/ are read, and never through an absolute symlink"
    )]
    OutsideSkills,
    /// `skills` itself leads outside the workspace.
    #[error("it resolves outside the workspace; no skill is read from it")]
    OutsideWorkspace,
    /// `skills` is not a folder.
    #[error("it is not a folder; skills live in skills/NAME/SKILL.md")]
    NotAFolder,
    /// `skills` is a symbolic link (to a folder inside the workspace; one leading outside is
    /// [`Problem::OutsideWorkspace`]).
    #[error(
        "it is a symbolic link; skills are read only from a plain skills/ folder of the workspace (remove the link and make the folder)"
    )]
    Link,
    /// A folder, a FIFO, a socket or a device where the manifest should be.
    #[error("it is not a regular file")]
    NotAFile,
    /// Larger than [`MAX_MANIFEST_BYTES`]; `size` is what `fstat` reported.
    #[error(
        "it is {size} bytes, over the {MAX_MANIFEST_BYTES}-byte limit for a SKILL.md (reading stopped there); move the details into other files of the skill's folder and let the SKILL.md name them"
    )]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
    },
    /// Not UTF-8: `load_skill` must return the file byte for byte, as text.
    #[error("it is not UTF-8 text (the first invalid byte is at offset {at}); save it as UTF-8")]
    NotUtf8 {
        /// The offset of the first invalid byte.
        at: usize,
    },
    /// The front matter is not valid, or not safe, YAML.
    #[error("{0}; fix it and start again")]
    FrontMatter(#[from] YamlError),
    /// Any other I/O error.
    #[error("it cannot be read: {0}")]
    Unreadable(String),
    /// A folder name that is not UTF-8 cannot be a skill's name.
    #[error("its folder name is not UTF-8; rename the folder")]
    FolderName,
}

/// Something the scan reports at start as a warning line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A manifest (or `skills/` itself) that was skipped, and why.
    Skipped {
        /// `skills/NAME/SKILL.md`, or `skills/`.
        manifest: String,
        /// Why.
        problem: Problem,
    },
    /// Two manifests give the same name; the later one (in folder order) was kept.
    SameName {
        /// The shared name.
        name: String,
        /// The manifest that is in the catalog.
        kept: String,
        /// The manifest that was dropped.
        dropped: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Skipped { manifest, problem } => write!(f, "skills: skipped {manifest}: {problem}"),
            Warning::SameName { name, kept, dropped } => write!(
                f,
                "skills: {dropped} and {kept} are both named '{name}'; {kept} wins (the later folder in sorted order, as the course's registry keeps the last one) and {dropped} is not loaded; give one of them another name"
            ),
        }
    }
}

/// `load_skill`'s error for a name not in the catalog. `Display` is the course's text after
/// `Error: ` (COURSE §4.2): `Unknown skill 'NAME'. Available: a, b`, or `none`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Unknown skill '{name}'. Available: {}", if available.is_empty() { "none".to_owned() } else { available.join(", ") })]
pub struct UnknownSkill {
    /// The name asked for.
    pub name: String,
    /// The catalog's names, in catalog order.
    pub available: Vec<String>,
}

/// The skills of one workspace, scanned once, and what `load_skill` serves from them. Cheap to
/// clone: clones share the catalog and the load counts.
#[derive(Clone, Debug)]
pub struct SkillLoader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    skills: Vec<Skill>,
    warnings: Vec<Warning>,
    /// Whether the workspace has a `skills/` folder at all.
    has_folder: bool,
    /// How often each skill (by index) was loaded.
    loads: Mutex<Vec<u32>>,
}

impl SkillLoader {
    /// Scans `workspace`'s `skills/*/SKILL.md` once, beneath the workspace's handle (see the crate
    /// docs), and keeps what it found: the skills in catalog order and the warnings. Reports
    /// nothing; see [`SkillLoader::report`]. Never fails: what cannot be read is a warning.
    pub fn scan(workspace: &Workspace) -> Self {
        let mut scan = Scan::default();
        match workspace.dir().open_dir(SKILLS_DIR) {
            // A `skills` that is a symbolic link to a folder inside the workspace (made by a
            // command, unasked) is not read: skills come only from the workspace's own folder.
            Ok(_) if workspace.dir().symlink_metadata(SKILLS_DIR).is_ok_and(|m| m.is_symlink()) => {
                scan.warnings
                    .push(Warning::Skipped { manifest: format!("{SKILLS_DIR}/"), problem: Problem::Link });
            }
            Ok(dir) => {
                scan.has_folder = true;
                scan.read_all(&dir);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                let problem = match problem_of(&e) {
                    Problem::OutsideSkills => Problem::OutsideWorkspace,
                    other => other,
                };
                scan.warnings.push(Warning::Skipped { manifest: format!("{SKILLS_DIR}/"), problem });
            }
        }
        let loads = Mutex::new(vec![0; scan.skills.len()]);
        Self {
            inner: Arc::new(Inner {
                skills: scan.skills,
                warnings: scan.warnings,
                has_folder: scan.has_folder,
                loads,
            }),
        }
    }

    /// The chapter's loader: [`SkillLoader::scan`] of the setup's workspace, then
    /// [`SkillLoader::report`] to its listener.
    pub fn new(setup: &Setup) -> Self {
        let loader = Self::scan(&setup.workspace);
        loader.report(&*setup.events);
        loader
    }

    /// Reports the scan: [`SkillLoader::summary`] as a mechanism line, then each warning as a
    /// warning line.
    pub fn report(&self, events: &dyn EventSink) {
        line(events, Level::Mechanism, &self.summary());
        for warning in &self.inner.warnings {
            line(events, Level::Warning, &warning.to_string());
        }
    }

    /// The start line: `[Skills: 2 found in skills/: code-review, commit-message]` (at most
    /// [`SUMMARY_NAMES`] names, then how many more), with the number skipped when there are any,
    /// or why none were found.
    pub fn summary(&self) -> String {
        let names = self.names();
        let skipped = self.inner.warnings.iter().filter(|w| matches!(w, Warning::Skipped { .. })).count();
        let skipped =
            if skipped > 0 { format!("; {skipped} skipped, see the warnings") } else { String::new() };
        if !self.inner.has_folder && skipped.is_empty() {
            return format!("[Skills: none, no {SKILLS_DIR}/ folder in the workspace]");
        }
        if names.is_empty() {
            return format!("[Skills: none found in {SKILLS_DIR}/{skipped}]");
        }
        let shown = names.iter().take(SUMMARY_NAMES).cloned().collect::<Vec<_>>().join(", ");
        let more = match names.len().saturating_sub(SUMMARY_NAMES) {
            0 => String::new(),
            n => format!(" and {n} more (/skills lists them)"),
        };
        format!("[Skills: {} found in {SKILLS_DIR}/: {shown}{more}{skipped}]", names.len())
    }

    /// The skills in catalog order: sorted by folder, a duplicate name in the place of the first.
    pub fn skills(&self) -> &[Skill] {
        &self.inner.skills
    }

    /// What the scan warned about, in the order it happened.
    pub fn warnings(&self) -> &[Warning] {
        &self.inner.warnings
    }

    /// The skill called exactly `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.inner.skills.iter().find(|s| s.name == name)
    }

    /// The catalog's names, in order.
    pub fn names(&self) -> Vec<String> {
        self.inner.skills.iter().map(|s| s.name.clone()).collect()
    }

    /// The catalog (COURSE §4.2): one line `- NAME: DESCRIPTION` per skill, or
    /// [`NO_SKILLS`].
    pub fn catalog(&self) -> String {
        if self.inner.skills.is_empty() {
            return NO_SKILLS.to_owned();
        }
        let lines: Vec<String> =
            self.inner.skills.iter().map(|s| format!("- {}: {}", s.name, s.description)).collect();
        lines.join("\n")
    }

    /// The part of SYSTEM this mechanism adds (COURSE §4.2), after the chapter's base line and a
    /// blank line: `Skills available:\n{catalog}\n\nUse load_skill to read the full instructions
    /// when a skill applies.` It holds names and descriptions, never a body.
    pub fn system_section(&self) -> String {
        format!(
            "Skills available:\n{}\n\nUse load_skill to read the full instructions when a skill applies.",
            self.catalog()
        )
    }

    /// The course's `load_skill`: the whole manifest of the skill called exactly `name`, as it was
    /// read at start, and one more load counted for `/skills`.
    ///
    /// # Errors
    /// [`UnknownSkill`] for a name not in the catalog.
    pub fn load_skill(&self, name: &str) -> Result<&str, UnknownSkill> {
        let Some(at) = self.inner.skills.iter().position(|s| s.name == name) else {
            return Err(UnknownSkill { name: name.to_owned(), available: self.names() });
        };
        if let Some(count) = self.loads().get_mut(at) {
            *count += 1;
        }
        Ok(&self.inner.skills[at].content)
    }

    /// How often the skill called `name` was loaded so far.
    pub fn times_loaded(&self, name: &str) -> u32 {
        let at = self.inner.skills.iter().position(|s| s.name == name);
        at.and_then(|at| self.loads().get(at).copied()).unwrap_or(0)
    }

    fn loads(&self) -> MutexGuard<'_, Vec<u32>> {
        self.inner.loads.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `load_skill` tool for the dispatch map.
    pub fn load_skill_tool(&self) -> LoadSkillTool {
        LoadSkillTool { loader: self.clone(), s15: false }
    }

    /// The `load_skill` tool in the course's s15 words: described
    /// [`LOAD_SKILL_DESCRIPTION_S15`], its input `{name: string}`, and a name not in the catalog
    /// answered (not as an error) `Skill not found: NAME. Available: a, b` (or `(none)`).
    pub fn load_skill_tool_s15(&self) -> LoadSkillTool {
        LoadSkillTool { loader: self.clone(), s15: true }
    }

    /// `/skills`: the catalog with each skill's size, file and loads, and what was skipped.
    pub fn skills_view(&self) -> String {
        let skills = &self.inner.skills;
        let catalog_bytes = self.catalog().len();
        let body_bytes: usize = skills.iter().map(|s| s.content.len()).sum();
        let mut out = format!(
            "{} skill(s), scanned once at start from {SKILLS_DIR}/; the catalog in SYSTEM is {catalog_bytes} bytes, the SKILL.md files {body_bytes} bytes, loaded only by load_skill:",
            skills.len()
        );
        if skills.is_empty() {
            out.push_str(&format!("\n{NO_SKILLS}"));
        }
        for skill in skills {
            let loaded = match self.times_loaded(&skill.name) {
                0 => "not loaded yet".to_owned(),
                1 => "loaded once".to_owned(),
                n => format!("loaded {n} times"),
            };
            out.push_str(&format!(
                "\n- {}: {}\n    {} bytes, {}; {loaded}",
                skill.name,
                skill.description,
                skill.content.len(),
                skill.manifest
            ));
        }
        for warning in &self.inner.warnings {
            out.push_str(&format!("\n{warning}"));
        }
        out
    }

    /// The REPL commands that show the mechanism: `/skills` (the catalog, sizes, loads) and
    /// `/history`, which shows SYSTEM (the catalog, no body) before the messages.
    pub fn commands(&self) -> Vec<SlashCommand> {
        let skills = self.clone();
        vec![
            SlashCommand::with_context(
                "skills",
                "the skill catalog: each skill's size, file and how often it was loaded",
                move |c| c.ui.say(&skills.skills_view()),
            ),
            SlashCommand::with_context(
                "history",
                "SYSTEM (with the skill catalog), then the messages array as the next request sends it",
                show_history,
            ),
        ]
    }
}

/// `/history`: SYSTEM as the next request sends it (the catalog, no skill body), then the
/// messages.
fn show_history(c: &CommandContext<'_>) {
    let request = c.agent.request(c.history);
    let system: String = request.system.lines().map(|l| format!("    {l}\n")).collect();
    c.ui.say(&format!(
        "SYSTEM, {} bytes: the skill catalog, one line per skill; a skill's SKILL.md enters only as a load_skill tool_result:\n{}{}",
        request.system.len(),
        system,
        history_view(&request.messages)
    ));
}

/// What a scan collects.
#[derive(Default)]
struct Scan {
    skills: Vec<Skill>,
    warnings: Vec<Warning>,
    has_folder: bool,
}

impl Scan {
    /// Reads every `NAME/SKILL.md` beneath the `skills/` handle `dir`, in folder-name order.
    fn read_all(&mut self, dir: &Dir) {
        let mut folders: Vec<OsString> = match dir.entries() {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.file_name())).collect(),
            Err(e) => {
                let problem = Problem::Unreadable(e.to_string());
                self.warnings.push(Warning::Skipped { manifest: format!("{SKILLS_DIR}/"), problem });
                return;
            }
        };
        // Byte order, which for UTF-8 names is the code-point order the course's sort gives.
        folders.sort();
        for folder in folders {
            let manifest = format!("{SKILLS_DIR}/{}/{MANIFEST}", folder.to_string_lossy());
            let skip = |problem| Warning::Skipped { manifest: manifest.clone(), problem };
            let bytes = match read_manifest(dir, &Path::new(&folder).join(MANIFEST)) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(problem) => {
                    self.warnings.push(skip(problem));
                    continue;
                }
            };
            let Some(folder) = folder.to_str() else {
                self.warnings.push(skip(Problem::FolderName));
                continue;
            };
            match skill_from(folder, bytes, &manifest) {
                Ok(skill) => self.add(skill),
                Err(problem) => self.warnings.push(skip(problem)),
            }
        }
    }

    /// Adds `skill` to the catalog; one with the same name as an earlier skill takes its place
    /// (the course's registry is a dict written in folder order: the place of the first, the
    /// value of the last).
    fn add(&mut self, skill: Skill) {
        match self.skills.iter_mut().find(|s| s.name == skill.name) {
            Some(earlier) => {
                self.warnings.push(Warning::SameName {
                    name: skill.name.clone(),
                    kept: skill.manifest.clone(),
                    dropped: earlier.manifest.clone(),
                });
                *earlier = skill;
            }
            None => self.skills.push(skill),
        }
    }
}

/// A skill from the manifest `bytes` of the folder `folder` (COURSE §4.2: the name and
/// description rules).
///
/// # Errors
/// [`Problem::NotUtf8`], or [`Problem::FrontMatter`] when the front matter is not valid or not
/// safe YAML.
pub fn skill_from(folder: &str, bytes: Vec<u8>, manifest: &str) -> Result<Skill, Problem> {
    let content =
        String::from_utf8(bytes).map_err(|e| Problem::NotUtf8 { at: e.utf8_error().valid_up_to() })?;
    let split = split_front_matter(&content);
    let meta = match split.yaml {
        Some(yaml) => parse_yaml(yaml)?,
        None => Default::default(),
    };
    let name = meta.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).unwrap_or(folder).to_owned();
    // The course strips leading `#`s and spaces from either source (`lstrip("# ")`), so a
    // description written as a heading (`description: "# Review"`) reads as plain text.
    let description = match meta.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
        Some(given) => collapse_whitespace(given.trim_start_matches(['#', ' '])),
        None => first_line_description(split.body),
    };
    Ok(Skill { name, description, content, manifest: manifest.to_owned() })
}

/// Reads the manifest at `rel` beneath the `skills/` handle `dir`: `Ok(None)` when there is
/// none (no such file, or the folder entry is not a folder), the bytes when it is a regular file
/// of at most [`MAX_MANIFEST_BYTES`].
///
/// The kernel resolves `rel` beneath `dir` in the open itself (see the crate docs); the type is
/// looked at first (so a device is not even opened) and again on the opened file, which is
/// opened without blocking, so a FIFO swapped in is refused rather than waited on.
///
/// # Errors
/// The [`Problem`]: outside `skills/`, not a regular file, too large, or an I/O error.
fn read_manifest(dir: &Dir, rel: &Path) -> Result<Option<Vec<u8>>, Problem> {
    let absent = |e: &io::Error| matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory);
    match dir.metadata(rel) {
        Ok(meta) if !meta.is_file() => return Err(Problem::NotAFile),
        Ok(_) => {}
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(problem_of(&e)),
    }
    let mut options = OpenOptions::new();
    options.read(true).nonblock(true).custom_flags(libc::O_NOCTTY);
    let file = match dir.open_with(rel, &options) {
        Ok(file) => file,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(problem_of(&e)),
    };
    let meta = file.metadata().map_err(|e| problem_of(&e))?;
    if !meta.is_file() {
        return Err(Problem::NotAFile);
    }
    match read_capped(file, MAX_MANIFEST_BYTES) {
        Ok(Some(bytes)) => Ok(Some(bytes)),
        Ok(None) => Err(Problem::TooLarge { size: meta.len() }),
        Err(e) => Err(problem_of(&e)),
    }
}

/// Reads all of `reader` if it holds at most `cap` bytes; `Ok(None)` as soon as it holds more.
/// At most `cap + 1` bytes are ever read, whatever the reader (a file that grows, an endless
/// stream).
///
/// # Errors
/// The reader's `io::Error`.
pub fn read_capped(reader: impl Read, cap: usize) -> io::Result<Option<Vec<u8>>> {
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    reader.take(limit).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= cap).then_some(bytes))
}

/// The [`Problem`] of an I/O error from an open beneath a handle. cap-std reports a path that
/// would leave the handle's folder as `PermissionDenied` with its own message and no OS error
/// code (an `EXDEV` from `openat2(RESOLVE_BENEATH)`, or its own walk's verdict); a real `EACCES`
/// carries its code.
fn problem_of(e: &io::Error) -> Problem {
    if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
        Problem::OutsideSkills
    } else if e.kind() == io::ErrorKind::NotADirectory {
        Problem::NotAFolder
    } else {
        Problem::Unreadable(e.to_string())
    }
}

/// The `load_skill` tool's input (COURSE §4.2).
#[derive(Debug, serde::Deserialize)]
pub struct LoadSkillArgs {
    /// The skill's exact name, as the catalog gives it.
    pub name: String,
}

/// The `load_skill` tool (COURSE §4.2): returns the skill's whole `SKILL.md`, or
/// `Error: Unknown skill 'NAME'. Available: …` (with `is_error`). Its tool line shows the name
/// and the size: `> load_skill: code-review, 1240 bytes`.
pub struct LoadSkillTool {
    loader: SkillLoader,
    /// The course's s15 words ([`SkillLoader::load_skill_tool_s15`]).
    s15: bool,
}

/// `load_skill`'s description in the course's s15.
pub const LOAD_SKILL_DESCRIPTION_S15: &str = "Load the full content of a skill by name.";

impl TypedTool for LoadSkillTool {
    type Args = LoadSkillArgs;

    fn spec(&self) -> ToolSpec {
        if self.s15 {
            return ToolSpec {
                name: LOAD_SKILL_TOOL_NAME.into(),
                description: LOAD_SKILL_DESCRIPTION_S15.into(),
                input_schema: serde_json::json!({
                    "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]
                }),
            };
        }
        ToolSpec {
            name: LOAD_SKILL_TOOL_NAME.into(),
            description: LOAD_SKILL_DESCRIPTION.into(),
            input_schema: load_skill_schema(),
        }
    }

    fn subject(&self, args: &LoadSkillArgs) -> Subject {
        Subject::Text(match self.loader.get(&args.name) {
            Some(skill) => format!("{}, {} bytes", args.name, skill.content.len()),
            None => format!("{}, no such skill", args.name),
        })
    }

    async fn run(self: Arc<Self>, args: LoadSkillArgs) -> Result<String, ToolError> {
        match self.loader.load_skill(&args.name) {
            Ok(content) => Ok(content.to_owned()),
            Err(unknown) if self.s15 => {
                let available = if unknown.available.is_empty() {
                    "(none)".to_owned()
                } else {
                    unknown.available.join(", ")
                };
                Ok(format!("Skill not found: {}. Available: {available}", unknown.name))
            }
            Err(unknown) => Err(ToolError::failed(unknown)),
        }
    }
}

#[cfg(test)]
mod tests;
