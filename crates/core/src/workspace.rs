//! The workspace rule, in one place (course §1).
//!
//! Every path the model gives a tool is resolved against the workspace root (`WORKDIR`), following
//! `..` and symlinks one component at a time, the way the kernel would. A path that lands outside
//! the root is refused with [`WorkspaceError::Escapes`] (a [`ToolError::PathEscapes`] for the
//! model), whose `Display` is the course's `Path escapes workspace: P` (P is the path exactly as
//! the model gave it).
//!
//! What is refused, and why:
//! - `../x`, `a/../../x`: `..` climbs above the root;
//! - `/etc/passwd`, an absolute path to a sibling folder: absolute paths outside the root (an
//!   absolute path *inside* the root is fine);
//! - a symlink (file or folder, dangling or not, or a chain of them) whose target lies outside;
//! - a NUL byte: no file name can hold one, and C APIs would silently cut the path there.
//!
//! A path that runs *through* a file as if it were a folder (`file.txt/child`) is refused with a
//! different, clear error ([`WorkspaceError::Unreachable`], `Not a folder: …`), because it does
//! not escape.
//!
//! The result of a successful resolution is a [`WsPath`]: an absolute path with every symlink
//! already followed, checked to lie inside the root. It can only be built here, so a tool that
//! holds one cannot escape.
//!
//! **The root is a handle, not a string.** [`Workspace::new`] opens the root folder once, with
//! `cap-std` (Bytecode Alliance). Every file operation of the tools goes through that handle and
//! the path *relative to the root* ([`WsPath::relative`]): on Linux each open is an
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` below the handle, so the kernel itself
//! refuses to leave the folder. Two things this holds against, which a check of path strings
//! cannot: the workspace folder renamed away and replaced by a symlink to somewhere else (the
//! handle still names the real folder, wherever it moved), and a folder inside swapped for a
//! symlink pointing outside between the check and the write (the open fails instead of following
//! it). The walk below uses the handle too, so its answer describes the real folder.
//!
//! **Outside the workspace, when the user says yes** (course s04: `Access outside workspace`). In
//! the chapters with the permission hook a file tool's path outside the root is asked about
//! instead of refused. [`Workspace::outside`] resolves such a path and opens, before the question
//! is shown, the deepest folder on its way that exists, walking from `/` one component at a time
//! without following any symlink (the path is already symlink-free), so the handle is the folder
//! whose path the question shows. On a yes the hook hands it over with [`Workspace::grant`], and
//! [`Workspace::open_path`] gives the file tool that one call's [`WsPath`] beneath that handle,
//! strict: no symlink is followed from there on, neither in folders it creates nor at the last
//! component. A folder on the way renamed and replaced by a symlink after the question, or the
//! file replaced by one, cannot send the read or the write anywhere but the place shown. A grant
//! serves one call: the hook drops what is left of the last one before it judges the next.
//!
//! Symlinks: relative and absolute ones are followed by the walk, and a tool acts on what they
//! point to when that lies inside (an absolute target inside the root works as well as a relative
//! one). Special files (FIFOs, sockets, devices) are opened without blocking and refused after an
//! `fstat`, see [`WsPath::open_read`].

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, Metadata, OpenOptions, OpenOptionsExt};

use crate::dispatch::ToolError;

/// Why the workspace rule refused a path (course §1). Tools receive it as a [`ToolError`] through
/// `From`, so `?` works in a tool and the model sees the course's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The path, as the model gave it, lands outside the root or holds a NUL byte. Becomes
    /// [`ToolError::PathEscapes`]: `Path escapes workspace: P`.
    #[error("Path escapes workspace: {0}")]
    Escapes(String),
    /// The path cannot be walked: it runs through a file as if it were a folder, loops through
    /// symlinks, or a folder on the way cannot be read. The text says which; becomes
    /// [`ToolError::Failed`].
    #[error("{0}")]
    Unreachable(String),
}

impl From<WorkspaceError> for ToolError {
    fn from(error: WorkspaceError) -> Self {
        match error {
            WorkspaceError::Escapes(path) => ToolError::PathEscapes(path),
            WorkspaceError::Unreachable(message) => ToolError::Failed(message),
        }
    }
}

/// How many symlinks one resolution may follow before giving up (Linux's `MAXSYMLINKS` is 40).
const MAX_SYMLINK_HOPS: usize = 40;

/// The workspace root and the rule that keeps every tool inside it (course §1).
///
/// Holds the root's path (for messages and the SYSTEM prompt) and an open handle on the root
/// folder (for every file operation). Cheap to clone: a `PathBuf` and an `Arc`. Two workspaces are
/// equal when their root paths are.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<Dir>,
    /// Paths outside the root the user allowed for the call being made ([`Workspace::grant`]);
    /// shared by every clone, so the permission hook and the file tools see the same list.
    grants: Arc<Mutex<Vec<Outside>>>,
}

/// A path outside the workspace, resolved and pinned for the permission question
/// ([`Workspace::outside`]): the absolute path the question shows, and a handle on the deepest
/// folder on its way that existed, opened without following any symlink.
#[derive(Clone, Debug)]
pub struct Outside {
    shown: PathBuf,
    given: String,
    /// What remains below `dir`: folders still to make, then the last component (empty when
    /// the path is `dir` itself).
    rel: PathBuf,
    exists: bool,
    dir: Arc<Dir>,
}

impl Outside {
    /// The absolute path, every symlink followed, as the question shows it.
    pub fn shown(&self) -> &Path {
        &self.shown
    }
    /// The path as the model gave it.
    pub fn given(&self) -> &str {
        &self.given
    }
}

impl PartialEq for Workspace {
    fn eq(&self, other: &Self) -> bool {
        self.root == other.root
    }
}

impl Eq for Workspace {}

/// A path resolved by [`Workspace::locate`]: absolute, every symlink followed, inside the root.
///
/// Only this module can build one, so holding a `WsPath` means the workspace rule was applied.
/// Derefs to [`Path`] (the absolute path, for display and for walking); `given()` is the path as
/// the model wrote it, for messages. File operations go through [`WsPath::open_read`] and
/// [`WsPath::parent_dir`], which act beneath the workspace's handle.
#[derive(Clone, Debug)]
pub struct WsPath {
    abs: PathBuf,
    rel: PathBuf,
    given: String,
    exists: bool,
    /// The walk saw a regular file at the end (a hint for [`WsPath::open_read`]; the open file's
    /// own type is what counts).
    regular: bool,
    dir: Arc<Dir>,
    /// A granted path outside the root: beneath `dir`, no symlink is followed at all.
    strict: bool,
}

impl PartialEq for WsPath {
    fn eq(&self, other: &Self) -> bool {
        (&self.abs, &self.given, self.exists) == (&other.abs, &other.given, other.exists)
    }
}

impl Eq for WsPath {}

/// What [`WsPath::open_read`] found at a path.
#[derive(Debug)]
pub enum Opened {
    /// A regular file, open for reading, with its metadata from `fstat`.
    File(File, Metadata),
    /// A folder.
    Folder,
    /// Anything else: a FIFO, a socket, a character or block device. Never opened in a way
    /// that blocks.
    Special,
}

impl WsPath {
    /// The absolute, symlink-free path inside the workspace.
    pub fn as_path(&self) -> &Path {
        &self.abs
    }
    /// The path relative to the workspace root (empty for the root itself): what every file
    /// operation passes to the root handle.
    pub fn relative(&self) -> &Path {
        &self.rel
    }
    /// Opens the path for reading beneath the root handle, without blocking and without taking
    /// a controlling terminal (`O_NONBLOCK | O_NOCTTY`), then checks its type with `fstat` on
    /// the open file. A FIFO swapped in at any moment is refused, never waited on.
    ///
    /// # Errors
    /// The `io::Error` of the open (`NotFound`, permission, or a path that would leave the root).
    pub fn open_read(&self) -> io::Result<Opened> {
        // A first look, so that a device is not even opened (opening some has effects). The walk
        // that made this path already looked (`lstat` of the last component, after following
        // every symlink) and saw a regular file, or this looks again.
        if !self.regular || self.strict {
            let first = if self.strict {
                self.dir.symlink_metadata(self.rel_or_dot())?
            } else {
                self.dir.metadata(self.rel_or_dot())?
            };
            if first.is_dir() {
                return Ok(Opened::Folder);
            }
            if !first.is_file() {
                return Ok(Opened::Special);
            }
        }
        let mut opts = OpenOptions::new();
        opts.read(true).nonblock(true).custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32);
        if self.strict {
            opts.follow(FollowSymlinks::No);
        }
        let file = self.dir.open_with(self.rel_or_dot(), &opts)?;
        // The type that counts is the one of the file actually opened.
        let meta = file.metadata()?;
        Ok(if meta.is_file() {
            Opened::File(file, meta)
        } else if meta.is_dir() {
            Opened::Folder
        } else {
            Opened::Special
        })
    }
    /// The folder that holds the path, as a handle beneath the root, and the path's last
    /// component. With `create`, missing folders on the way are created (beneath the root).
    ///
    /// # Errors
    /// `InvalidInput` for the root itself (it has no name to write to); otherwise the
    /// `io::Error` of creating or opening the folder.
    pub fn parent_dir(&self, create: bool) -> io::Result<(Dir, &OsStr)> {
        let name = self
            .rel
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the workspace root is a folder"))?;
        let parent = self.rel.parent().unwrap_or(Path::new(""));
        if parent.as_os_str().is_empty() {
            return Ok((self.dir.try_clone()?, name));
        }
        if self.strict {
            // One folder at a time, none of them a symlink: what a folder swapped for a link
            // after the question would redirect is refused instead.
            let mut dir = self.dir.try_clone()?;
            for part in parent.components() {
                if create
                    && let Err(e) = dir.create_dir(part)
                    && e.kind() != io::ErrorKind::AlreadyExists
                {
                    return Err(e);
                }
                dir = dir.open_dir_nofollow(part)?;
            }
            return Ok((dir, name));
        }
        if create {
            self.dir.create_dir_all(parent)?;
        }
        Ok((self.dir.open_dir(parent)?, name))
    }
    fn rel_or_dot(&self) -> &Path {
        if self.rel.as_os_str().is_empty() { Path::new(".") } else { &self.rel }
    }
    /// The path as the model gave it; what every message shows (course §1: "PATH").
    pub fn given(&self) -> &str {
        &self.given
    }
    /// Whether the final component existed when the path was resolved.
    pub fn existed(&self) -> bool {
        self.exists
    }
}

impl Deref for WsPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.abs
    }
}

impl AsRef<Path> for WsPath {
    fn as_ref(&self) -> &Path {
        &self.abs
    }
}

impl From<WsPath> for PathBuf {
    fn from(p: WsPath) -> PathBuf {
        p.abs
    }
}

impl fmt::Display for WsPath {
    /// Shows the path as the model gave it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.given)
    }
}

/// The names the harness keeps its own state under in the workspace, by the chapter that writes
/// them: s08's `.transcripts` and `.task_outputs`, s07's `skills` (read), s09's `.memory`, and the
/// later chapters' `.tasks`, `.mailboxes`, `.worktrees`, `.runtime` (folders) and
/// `.scheduled_tasks.json` (a file). Each must be a plain folder (or file) of the workspace, never a symbolic link: a
/// command may make one unasked (`ln -s docs .memory`), after which the harness would read,
/// rewrite or delete the files of the folder it points to. See [`Workspace::harness_dir`].
pub const HARNESS_NAMES: [&str; 9] = [
    ".memory",
    ".transcripts",
    ".task_outputs",
    "skills",
    ".tasks",
    ".mailboxes",
    ".worktrees",
    ".runtime",
    ".scheduled_tasks.json",
];

/// Why a name the harness keeps its own files under was refused ([`Workspace::harness_dir`],
/// [`Workspace::harness_file`]). `Display` is a full sentence that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum HarnessPathError {
    /// The name, or a folder on its way, is a symbolic link.
    #[error(
        "{name} in the workspace is a symbolic link (to {target}); the harness keeps its own files only in a plain \
         folder of the workspace and never follows such a link, so nothing there is read, written or deleted: \
         remove the link (rm {name}) or rename it, then try again"
    )]
    Link {
        /// The path relative to the workspace root, as far as the link.
        name: String,
        /// What the link holds.
        target: String,
    },
    /// The name (or a folder on its way) is something else than expected: a file where a folder
    /// should be, or a FIFO, socket or device where a file should be.
    #[error(
        "{name} in the workspace is not a {expected}; the harness keeps its own files there: move it away, then try again"
    )]
    Unexpected {
        /// The path relative to the workspace root.
        name: String,
        /// `folder` or `plain file`.
        expected: &'static str,
    },
    /// It could not be inspected, made or opened.
    #[error("{name}: {source}")]
    Io {
        /// The path relative to the workspace root.
        name: String,
        /// The error.
        source: io::Error,
    },
}

impl From<HarnessPathError> for io::Error {
    fn from(e: HarnessPathError) -> Self {
        let kind = match &e {
            HarnessPathError::Io { source, .. } => source.kind(),
            _ => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, e.to_string())
    }
}

impl Workspace {
    /// The harness's own folder `name` (relative to the root; `a/b` walks `a`, then `b`), opened
    /// without following any symbolic link, each part checked to be a real folder: the one check
    /// every crate that keeps state in the workspace goes through (see [`HARNESS_NAMES`]). With
    /// `create`, missing folders are made; without, a missing one gives `Ok(None)`.
    ///
    /// # Errors
    /// [`HarnessPathError::Link`] when a part is a symbolic link (even to a folder inside the
    /// workspace), [`HarnessPathError::Unexpected`] when it is no folder,
    /// [`HarnessPathError::Io`] when it cannot be read, made or opened.
    pub fn harness_dir(&self, name: &str, create: bool) -> Result<Option<Dir>, HarnessPathError> {
        use cap_fs_ext::DirExt;
        let mut dir =
            self.dir.try_clone().map_err(|source| HarnessPathError::Io { name: name.to_owned(), source })?;
        let mut walked = String::new();
        for part in name.split('/').filter(|p| !p.is_empty()) {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            let io = |source: io::Error| HarnessPathError::Io { name: walked.clone(), source };
            match dir.symlink_metadata(part) {
                Ok(meta) if meta.is_symlink() => {
                    let target = dir.read_link(part).map(|t| t.display().to_string()).unwrap_or_default();
                    return Err(HarnessPathError::Link { name: walked, target });
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(HarnessPathError::Unexpected { name: walked, expected: "folder" });
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => match dir.create_dir(part) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io(e)),
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(io(e)),
            }
            // Not following a link swapped in since the look: such a swap fails here.
            dir = match dir.open_dir_nofollow(part) {
                Ok(next) => next,
                Err(_) if dir.symlink_metadata(part).is_ok_and(|m| m.is_symlink()) => {
                    let target = dir.read_link(part).map(|t| t.display().to_string()).unwrap_or_default();
                    return Err(HarnessPathError::Link { name: walked, target });
                }
                Err(e) => return Err(io(e)),
            };
        }
        Ok(Some(dir))
    }

    /// Checks the harness's own file `name` (relative to the root, in a folder checked as
    /// [`Workspace::harness_dir`] checks it): missing (`Ok(false)`), or a plain file, not a
    /// symbolic link (`Ok(true)`).
    ///
    /// # Errors
    /// As [`Workspace::harness_dir`]; [`HarnessPathError::Unexpected`] for a folder, FIFO,
    /// socket or device.
    pub fn harness_file(&self, name: &str) -> Result<bool, HarnessPathError> {
        let (folder, file) = name.rsplit_once('/').unwrap_or(("", name));
        let Some(dir) = self.harness_dir(folder, false)? else { return Ok(false) };
        match dir.symlink_metadata(file) {
            Ok(meta) if meta.is_symlink() => {
                let target = dir.read_link(file).map(|t| t.display().to_string()).unwrap_or_default();
                Err(HarnessPathError::Link { name: name.to_owned(), target })
            }
            Ok(meta) if !meta.is_file() => {
                Err(HarnessPathError::Unexpected { name: name.to_owned(), expected: "plain file" })
            }
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(HarnessPathError::Io { name: name.to_owned(), source }),
        }
    }
}

impl Workspace {
    /// A workspace rooted at `root`, which is canonicalised (made absolute, symlinks followed)
    /// and opened as a handle: the one place where a path string is trusted.
    ///
    /// # Errors
    /// The `io::Error` of [`std::fs::canonicalize`] or of opening the folder: the root does not
    /// exist, is not a folder, or cannot be read.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, "workspace root is not a folder"));
        }
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self { root, dir: Arc::new(dir), grants: Arc::default() })
    }

    /// The canonical root (`WORKDIR`) as it was when the workspace was opened; for messages.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The handle on the root folder: `bash` starts its commands there (`fchdir`) and the
    /// sandbox grants writes beneath it, so both follow the real folder even if its path is
    /// re-pointed.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Resolves `path`: relative to the root, following `..` and every symlink. The same walk
    /// serves reading and writing: a new file inside a symlinked folder that points outside is
    /// refused before anything is created.
    ///
    /// # Errors
    /// [`WorkspaceError::Escapes`]`(path)` when it lands outside the root or holds a NUL byte;
    /// [`WorkspaceError::Unreachable`] when it runs through a file as if it were a folder, loops
    /// through symlinks, or a folder on the way cannot be read.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        self.locate(path).map(PathBuf::from)
    }

    /// Whether `path` stays inside the workspace, i.e. the rule would not refuse it as an escape.
    /// Used by the permission check: a shell command that writes or moves files outside asks
    /// (a file tool's path outside is asked about by the hook, see [`Workspace::outside`]).
    pub fn contains(&self, path: &str) -> bool {
        !matches!(self.locate(path), Err(WorkspaceError::Escapes(_)))
    }

    /// Resolves `path` (as the model gave it) to a [`WsPath`]; the one implementation of the rule.
    ///
    /// Components are walked from the root (or from `/` for an absolute path): `.` is skipped,
    /// `..` goes to the parent of the real folder reached so far, and a symlink is replaced by its
    /// target (at most 40 hops). Once a component does not exist, the rest is appended lexically
    /// (nothing below a missing folder can be a symlink) until a `..` climbs back to a folder that
    /// exists, where the real walk resumes. The final absolute path must lie in the
    /// root.
    ///
    /// # Errors
    /// As [`Workspace::resolve`].
    pub fn locate(&self, path: &str) -> Result<WsPath, WorkspaceError> {
        let escapes = || WorkspaceError::Escapes(path.to_owned());
        if path.contains('\0') {
            return Err(escapes());
        }
        let Walked { abs, exists, regular, .. } = self.walk(path)?;
        let Ok(rel) = abs.strip_prefix(&self.root).map(Path::to_path_buf) else {
            return Err(escapes());
        };
        Ok(WsPath {
            abs,
            rel,
            given: path.to_owned(),
            exists,
            regular,
            dir: Arc::clone(&self.dir),
            strict: false,
        })
    }

    /// For a path the rule refuses as an escape, what the permission question shows and the
    /// tool will act on (see the module docs): the path resolved (symlinks followed), and the
    /// deepest existing folder on its way opened from `/` without following a symlink. `Ok(None)`
    /// for a path that does not escape (or holds a NUL byte): the tool handles it as usual.
    ///
    /// # Errors
    /// [`WorkspaceError::Unreachable`] when the walk fails or the folder cannot be opened (it
    /// changed under the walk, or may not be read): nothing is asked, the tool reports it.
    pub fn outside(&self, path: &str) -> Result<Option<Outside>, WorkspaceError> {
        if path.contains('\0') {
            return Ok(None);
        }
        let Walked { abs, exists, missing, .. } = self.walk(path)?;
        if abs.starts_with(&self.root) {
            return Ok(None);
        }
        let unreachable =
            |e: io::Error| WorkspaceError::Unreachable(format!("Cannot open the folder of {path}: {e}"));
        let parts: Vec<&OsStr> = abs
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part),
                _ => None,
            })
            .collect();
        // The handle is on the target's folder, or on the deepest one that exists.
        let keep = parts.len().saturating_sub(missing.max(1));
        let mut dir = Dir::open_ambient_dir("/", ambient_authority()).map_err(unreachable)?;
        for part in &parts[..keep] {
            dir = dir.open_dir_nofollow(part).map_err(unreachable)?;
        }
        let rel: PathBuf = parts[keep..].iter().collect();
        Ok(Some(Outside { shown: abs, given: path.to_owned(), rel, exists, dir: Arc::new(dir) }))
    }

    /// Lets the next [`Workspace::open_path`] of `outside`'s path act on it, once (the user said
    /// yes to the question that showed it).
    pub fn grant(&self, outside: Outside) {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner).push(outside);
    }

    /// Drops every grant not used yet: each serves only the call it was asked for.
    pub fn revoke_grants(&self) {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// What a file tool acts on: [`Workspace::locate`], or, for a path outside that was granted
    /// for this call ([`Workspace::grant`]), a strict [`WsPath`] beneath the handle the question
    /// was asked with. The grant is used up.
    ///
    /// # Errors
    /// As [`Workspace::locate`] when nothing was granted.
    pub fn open_path(&self, path: &str) -> Result<WsPath, WorkspaceError> {
        let error = match self.locate(path) {
            Err(error @ WorkspaceError::Escapes(_)) => error,
            other => return other,
        };
        let mut grants = self.grants.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(at) = grants.iter().position(|g| g.given == path) else { return Err(error) };
        let Outside { shown, given, rel, exists, dir } = grants.remove(at);
        Ok(WsPath { abs: shown, rel, given, exists, regular: false, dir, strict: true })
    }

    /// The walk behind [`Workspace::locate`]: the symlink-free absolute path, whether its last
    /// component exists, and whether that is a regular file. Does not check containment.
    fn walk(&self, given: &str) -> Result<Walked, WorkspaceError> {
        let given_path = Path::new(given);
        // Components still to walk, in reverse order (a stack), so a symlink's target can be pushed.
        let mut todo: Vec<OsString> = Vec::new();
        push_components(&mut todo, given_path);
        let mut here = if given_path.is_absolute() { PathBuf::from("/") } else { self.root.clone() };
        let mut hops = 0usize;
        // How many trailing components of `here` do not exist. While it is above zero the walk is
        // lexical; a `..` that climbs back to a real folder resumes the real walk, so a symlink
        // after it is still followed (`nope/../link_out/x` must not slip through).
        let mut missing = 0usize;
        // Set when the last component is a regular file (only `.` can follow a file).
        let mut regular = false;
        while let Some(part) = todo.pop() {
            if part == "/" {
                here = PathBuf::from("/");
                continue;
            }
            if part == "." {
                continue;
            }
            if part == ".." {
                here.pop();
                missing = missing.saturating_sub(1);
                continue;
            }
            let next = here.join(&part);
            if missing > 0 {
                here = next;
                missing += 1;
                continue;
            }
            match self.kind(&next) {
                Ok(Kind::Symlink) => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(WorkspaceError::Unreachable(format!(
                            "Too many levels of symlinks: {given}"
                        )));
                    }
                    let target = self.read_link(&next).map_err(|e| {
                        WorkspaceError::Unreachable(format!("Cannot read symlink in {given}: {e}"))
                    })?;
                    push_components(&mut todo, &target);
                    if target.is_absolute() {
                        here = PathBuf::from("/");
                    }
                }
                Ok(Kind::Folder) => here = next,
                Ok(kind @ (Kind::File | Kind::Special)) => {
                    // A file (or fifo, socket, device): it must be the last component.
                    if todo.iter().any(|p| p != ".") {
                        return Err(WorkspaceError::Unreachable(format!(
                            "Not a folder: {} (in path {given})",
                            display_rel(&self.root, &next)
                        )));
                    }
                    regular = matches!(kind, Kind::File);
                    here = next;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing = 1;
                    here = next;
                }
                Err(e) => return Err(WorkspaceError::Unreachable(format!("Cannot access {given}: {e}"))),
            }
        }
        Ok(Walked { abs: here, exists: missing == 0, regular, missing })
    }

    /// The kind of `abs` without following a last symlink: beneath the root handle when `abs`
    /// lies inside the root, through the path otherwise (an absolute path on its way in).
    fn kind(&self, abs: &Path) -> io::Result<Kind> {
        let (symlink, dir, file) = match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => (false, true, false),
            Ok(rel) => {
                let m = self.dir.symlink_metadata(rel)?;
                (m.file_type().is_symlink(), m.is_dir(), m.is_file())
            }
            Err(_) => {
                let m = std::fs::symlink_metadata(abs)?;
                (m.file_type().is_symlink(), m.is_dir(), m.is_file())
            }
        };
        Ok(if symlink {
            Kind::Symlink
        } else if dir {
            Kind::Folder
        } else if file {
            Kind::File
        } else {
            Kind::Special
        })
    }

    /// A symlink's target, read beneath the root handle when inside the root.
    fn read_link(&self, abs: &Path) -> io::Result<PathBuf> {
        match abs.strip_prefix(&self.root) {
            Ok(rel) => self.dir.read_link_contents(rel),
            Err(_) => std::fs::read_link(abs),
        }
    }
}

/// What [`Workspace::walk`] found.
struct Walked {
    /// The absolute path, symlink-free.
    abs: PathBuf,
    /// Whether its last component exists.
    exists: bool,
    /// Whether its last component is a regular file (`lstat` after every symlink was followed).
    regular: bool,
    /// How many of its trailing components do not exist.
    missing: usize,
}

/// What one step of the walk found.
enum Kind {
    Symlink,
    Folder,
    /// A regular file.
    File,
    /// A FIFO, socket or device.
    Special,
}

/// Pushes `path`'s components onto the stack `todo` so that they pop in order; a root becomes
/// `"/"`.
fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::RootDir => Some(OsString::from("/")),
            Component::CurDir => Some(OsString::from(".")),
            Component::ParentDir => Some(OsString::from("..")),
            Component::Normal(s) => Some(s.to_owned()),
            Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// `p` relative to `root` when inside it (for messages), otherwise `p` itself.
fn display_rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_inside_and_refuses_outside() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("a"))?;
        std::fs::write(dir.path().join("a/f.txt"), "x")?;
        let ws = Workspace::new(dir.path())?;
        let root = ws.root().to_path_buf();
        assert_eq!(ws.resolve("a/f.txt"), Ok(root.join("a/f.txt")));
        assert_eq!(ws.resolve("./a/../a/f.txt"), Ok(root.join("a/f.txt")));
        assert_eq!(ws.resolve("new/dir/x"), Ok(root.join("new/dir/x")));
        assert_eq!(ws.resolve(&root.join("a").to_string_lossy()), Ok(root.join("a")));
        assert_eq!(ws.resolve("../x"), Err(WorkspaceError::Escapes("../x".into())));
        assert_eq!(ws.resolve("a\0b"), Err(WorkspaceError::Escapes("a\0b".into())));
        assert!(
            matches!(ws.resolve("a/f.txt/x"), Err(WorkspaceError::Unreachable(m)) if m.starts_with("Not a folder"))
        );
        assert!(ws.contains("a/f.txt/x"));
        assert!(!ws.contains("/etc"));
        Ok(())
    }

    #[test]
    fn a_symlink_loop_is_an_error_not_a_hang() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::os::unix::fs::symlink("b", dir.path().join("a"))?;
        std::os::unix::fs::symlink("a", dir.path().join("b"))?;
        let ws = Workspace::new(dir.path())?;
        assert!(
            matches!(ws.resolve("a"), Err(WorkspaceError::Unreachable(m)) if m.starts_with("Too many levels"))
        );
        Ok(())
    }
}
