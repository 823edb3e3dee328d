//! A folder of files that survive crashes and races: the course's `.tasks/` (s10, s13, s15),
//! cron jobs (s12), mailboxes (s13) and workflow journals (s16) are files that several threads
//! and processes change.
//!
//! ```text
//!  StoreDir::open(workspace, ".tasks")     the folder, kept inside the workspace
//!    ├─ create_new(name, bytes)            a new file or nothing: never half a file, never
//!    │                                     over another (the course's open(…, "x"), O_EXCL)
//!    ├─ create_unique(attempts, …)         create_new with a fresh name until one is free
//!    ├─ replace(name, bytes)               temp file, fsync, rename, fsync the folder
//!    ├─ append(name, bytes)                one write at the end, fsync (a JSONL mailbox)
//!    ├─ read(name, limit) / names()        what is there, regular files only
//!    └─ lock() / try_lock(name)            flock(2) on a lock file: one writer across processes
//! ```
//!
//! Every operation goes through a handle on the folder (cap-std), beneath which the kernel
//! refuses to leave: a file in the folder that is a symlink to somewhere outside it is never
//! followed out. The folder itself is found by the workspace rule ([`Workspace::locate`]): a
//! symlink is followed as the course's `Path.resolve()` would, and one that leads outside the
//! workspace is refused ([`StoreError::Escapes`]; the course's s10 says
//! `Task store escapes the workspace`).
//!
//! The course (s13, s15, s16) writes a temporary file and `os.replace`s it, and locks with
//! `fcntl.flock`; s10 opens with mode `"x"` and overwrites in place. Here every write is the
//! crash-safe one: a process killed at any moment leaves the old file or the new one.

#![warn(missing_docs)]

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, File, OpenOptions};
use cap_tempfile::TempFile;

use agent_core::workspace::{HarnessPathError, Workspace, WorkspaceError};

/// The lock file [`StoreDir::lock`] takes, inside the folder (the course's s13 `.tasks/.lock`).
pub const LOCK_FILE: &str = ".lock";

/// Why a store folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The folder (or a symlink on the way to it) leads outside the workspace. Holds the folder's
    /// name as given.
    #[error("{0} leads outside the workspace")]
    Escapes(String),
    /// The folder cannot be made, opened or walked.
    #[error("{path}: {source}")]
    Io {
        /// The folder, relative to the workspace.
        path: String,
        /// What the system said.
        source: io::Error,
    },
}

/// A store folder inside the workspace, opened as a handle.
#[derive(Debug)]
pub struct StoreDir {
    dir: Dir,
    path: PathBuf,
}

impl StoreDir {
    /// The folder `name` (relative to the workspace root, such as `.tasks`), or `None` when it
    /// does not exist. Nothing is created.
    ///
    /// # Errors
    /// [`StoreError::Escapes`] when it resolves outside the workspace; [`StoreError::Io`] when
    /// it is not a folder or cannot be opened.
    pub fn open(workspace: &Workspace, name: &str) -> Result<Option<Self>, StoreError> {
        Self::open_with(workspace, name, false)
    }

    /// The folder `name`, created (with its parents) when missing, as the course's
    /// `mkdir(parents=True, exist_ok=True)`.
    ///
    /// # Errors
    /// As [`StoreDir::open`], and [`StoreError::Io`] when it cannot be created.
    pub fn open_or_create(workspace: &Workspace, name: &str) -> Result<Self, StoreError> {
        match Self::open_with(workspace, name, true)? {
            Some(dir) => Ok(dir),
            None => Err(StoreError::Io { path: name.to_owned(), source: io::ErrorKind::NotFound.into() }),
        }
    }

    /// The harness's own folder `name` (one of [`agent_core::workspace::HARNESS_NAMES`], such as
    /// s16's `.runtime`), opened as [`Workspace::harness_dir`] opens it: no part of the way may be
    /// a symbolic link, even one that stays inside the workspace, so a command that replaced the
    /// folder by a link cannot make the harness write elsewhere. `None` when it is missing and
    /// `create` is `false`.
    ///
    /// # Errors
    /// The [`HarnessPathError`] of [`Workspace::harness_dir`], whose text says what to do.
    pub fn open_harness(
        workspace: &Workspace,
        name: &str,
        create: bool,
    ) -> Result<Option<Self>, HarnessPathError> {
        let Some(dir) = workspace.harness_dir(name, create)? else { return Ok(None) };
        Ok(Some(Self { dir, path: workspace.root().join(name) }))
    }

    fn open_with(workspace: &Workspace, name: &str, create: bool) -> Result<Option<Self>, StoreError> {
        let io_error = |source| StoreError::Io { path: name.to_owned(), source };
        let located = match workspace.locate(name) {
            Ok(located) => located,
            Err(WorkspaceError::Escapes(_)) => return Err(StoreError::Escapes(name.to_owned())),
            Err(WorkspaceError::Unreachable(why)) => return Err(io_error(io::Error::other(why))),
        };
        if !located.existed() {
            if !create {
                return Ok(None);
            }
            workspace.dir().create_dir_all(located.relative()).map_err(io_error)?;
        }
        let relative = located.relative();
        let dir = if relative.as_os_str().is_empty() {
            workspace.dir().try_clone()
        } else {
            workspace.dir().open_dir(relative)
        };
        match dir {
            Ok(dir) => Ok(Some(Self { dir, path: located.as_path().to_owned() })),
            // Re-pointed between the walk and the open: the handle refused to leave the root.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && !workspace.contains(name) => {
                Err(StoreError::Escapes(name.to_owned()))
            }
            Err(e) => Err(io_error(e)),
        }
    }

    /// The folder's absolute path, every symlink resolved, as it was when opened (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder handle, for what this type does not offer.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Writes `bytes` as the new file `name`, or returns `Ok(false)` when `name` already exists,
    /// leaving it untouched. The file appears whole or not at all: the bytes go to a temporary
    /// file first, synced, then hard-linked to `name` (which fails if `name` exists, as
    /// `O_EXCL` does), and the folder is synced. On a file system without hard links the file
    /// is created with `O_EXCL` and written in place, as the course does.
    ///
    /// # Errors
    /// The `io::Error` of writing, linking or syncing.
    pub fn create_new(&self, name: &str, bytes: &[u8]) -> io::Result<bool> {
        let temp = self.temp_name(name);
        let mut file = self.dir.open_with(&temp, OpenOptions::new().write(true).create_new(true))?;
        let linked = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| self.dir.hard_link(&temp, &self.dir, name));
        drop(file);
        let _ = self.dir.remove_file(&temp);
        match linked {
            Ok(()) => {
                self.sync()?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) if is_unsupported_link(&e) => self.create_new_in_place(name, bytes),
            Err(e) => Err(e),
        }
    }

    /// The course's way, for a file system that cannot hard-link: `O_EXCL`, then write.
    fn create_new_in_place(&self, name: &str, bytes: &[u8]) -> io::Result<bool> {
        let mut file = match self.dir.open_with(name, OpenOptions::new().write(true).create_new(true)) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        };
        file.write_all(bytes)?;
        file.sync_all()?;
        self.sync()?;
        Ok(true)
    }

    /// [`StoreDir::create_new`] under a fresh name until one is free: `name()` draws a name,
    /// `bytes(name)` gives that file's content. Returns the name used, or `None` after
    /// `attempts` names that were all taken (the course's `Could not allocate a unique …`).
    ///
    /// # Errors
    /// The first `io::Error` other than "already exists".
    pub fn create_unique(
        &self,
        attempts: usize,
        mut name: impl FnMut() -> String,
        mut bytes: impl FnMut(&str) -> Vec<u8>,
    ) -> io::Result<Option<String>> {
        for _ in 0..attempts {
            let candidate = name();
            if self.create_new(&candidate, &bytes(&candidate))? {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }

    /// Replaces (or creates) `name` with `bytes` atomically: a temporary file in this folder
    /// (unnamed where the kernel allows, `O_TMPFILE`), written, synced, renamed over `name`, then
    /// the folder synced, so that the rename survives a crash of the machine too. A reader sees
    /// the old file or the new one, never part of either.
    ///
    /// # Errors
    /// The `io::Error` of any step; `name` is then unchanged.
    pub fn replace(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        replace_in(&self.dir, name, bytes)
    }

    /// Appends `bytes` to `name` (created when missing) in one `write` with `O_APPEND`, then
    /// syncs the file: a JSONL line that another process appends at the same time does not land
    /// inside this one. Callers that also read and rewrite the file take [`StoreDir::lock`].
    ///
    /// # Errors
    /// The `io::Error` of opening, writing or syncing.
    pub fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut file = self.dir.open_with(name, OpenOptions::new().append(true).create(true))?;
        file.write_all(bytes)?;
        file.sync_all()
    }

    /// The bytes of `name`, at most `limit` of them (`InvalidData` when the file is larger), or
    /// `None` when there is no such file. A folder or a special file is refused with an error,
    /// never read or waited on.
    ///
    /// # Errors
    /// `InvalidData` for a file over `limit` bytes or not a regular file; the `io::Error` of
    /// opening or reading.
    pub fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let file = match self.open_regular(name) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {limit} bytes")));
        }
        Ok(Some(bytes))
    }

    fn open_regular(&self, name: &str) -> io::Result<File> {
        let meta = self.dir.metadata(name)?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
        }
        let file = self.dir.open(name)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not a regular file"));
        }
        Ok(file)
    }

    /// Whether `name` is a regular file in the folder (a symlink counts by its target, inside
    /// the folder).
    pub fn is_file(&self, name: &str) -> bool {
        self.dir.metadata(name).is_ok_and(|m| m.is_file())
    }

    /// Removes `name`; `Ok(false)` when it was not there. The folder is synced.
    ///
    /// # Errors
    /// The `io::Error` of removing or syncing.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        match self.dir.remove_file(name) {
            Ok(()) => self.sync().map(|()| true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The names of the entries in the folder that `keep` accepts, sorted by name (the course's
    /// `sorted(root.glob(…))`). Names that are not UTF-8 and names starting with `.` (the lock
    /// file, temporary files) are left out.
    ///
    /// # Errors
    /// The `io::Error` of reading the folder.
    pub fn names(&self, keep: impl Fn(&str) -> bool) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in self.dir.entries()? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else { continue };
            if !name.starts_with('.') && keep(&name) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// Takes the folder's lock, [`LOCK_FILE`], waiting while another process or thread holds it
    /// (`flock(LOCK_EX)`, the course's `task_store_lock`). Released when the guard drops, or when
    /// the process dies. Not re-entrant: a thread that holds it must not take it again.
    ///
    /// # Errors
    /// The `io::Error` of opening the lock file or of `flock`.
    pub fn lock(&self) -> io::Result<StoreLock> {
        let file = self.lock_file(LOCK_FILE)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(StoreLock { _file: file })
    }

    /// Takes the lock on the file `name` in the folder without waiting (`LOCK_EX | LOCK_NB`, the
    /// course's s16 run lock): `None` when someone else holds it.
    ///
    /// # Errors
    /// The `io::Error` of opening the lock file or of `flock` other than "would block".
    pub fn try_lock(&self, name: &str) -> io::Result<Option<StoreLock>> {
        let file = self.lock_file(name)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(StoreLock { _file: file })),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn lock_file(&self, name: &str) -> io::Result<File> {
        self.dir.open_with(name, OpenOptions::new().read(true).write(true).create(true))
    }

    /// Syncs the folder, so that a rename, link or removal in it is on disk.
    fn sync(&self) -> io::Result<()> {
        sync_dir(&self.dir)
    }

    /// A temporary name beside `name`: hidden (so no listing takes it for a record) and unique
    /// to this process and draw.
    fn temp_name(&self, name: &str) -> String {
        format!(".{name}.{}.{:016x}.tmp", std::process::id(), fastrand::u64(..))
    }
}

/// A held lock of [`StoreDir::lock`] or [`StoreDir::try_lock`]; dropping it releases the lock.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

/// [`StoreDir::replace`] in any folder handle: a temporary file in `dir`, written, synced,
/// renamed over `name`, then `dir` synced. For a store that keeps its own handle (s09's memory).
///
/// # Errors
/// The `io::Error` of any step; `name` is then unchanged.
pub fn replace_in(dir: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = TempFile::new(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.replace(name)?;
    sync_dir(dir)
}

/// Syncs the folder `dir` itself, so that a rename or a removal in it is on disk.
///
/// # Errors
/// The `io::Error` of opening the folder or of `fsync`.
pub fn sync_dir(dir: &Dir) -> io::Result<()> {
    dir.open(".")?.sync_all()
}

/// Whether a hard link failed because the file system has none (FAT, some network and FUSE
/// file systems), rather than for a reason that writing in place would meet too.
fn is_unsupported_link(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::Unsupported)
        || e.raw_os_error().is_some_and(|code| {
            code == rustix::io::Errno::PERM.raw_os_error()
                || code == rustix::io::Errno::OPNOTSUPP.raw_os_error()
        })
}
