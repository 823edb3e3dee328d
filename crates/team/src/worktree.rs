//! Task-bound Git worktrees in `.worktrees/{name}` on branch `wt/{name}` (the course's s13
//! "worktree isolation", COURSE-s10-s17 §4.3).
//!
//! ```text
//!  create_worktree(name, task_id)        the Lead's tool; everything checked before Git runs
//!    name, path, task pending+unowned+unbound, name unbound, path free,
//!    WORKDIR is a repository root, branch name valid and free, path not registered
//!    └─ git worktree add -b wt/{name} .worktrees/{name} HEAD ──► task.worktree = name
//!  claim / every tool call ──► the worktree must be registered, present, on wt/{name}
//!  remove_worktree(name, discard)        the host's only (never a tool); the branch is kept
//! ```
//!
//! A worktree changes where a task's tools run; it is not a sandbox (the command sandbox is the
//! same in every folder). Git runs as a list of arguments, never through a shell, with a
//! 30-second limit; what the model reads of its output is capped at 5 000 characters, while the
//! registry (`git worktree list --porcelain`) is parsed from the whole output. When Git fails
//! half-way, nothing it made is deleted: the result names what was left, for a person to keep
//! or remove.

use std::collections::HashMap;
use std::fmt;
use std::io::{Read, Seek};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use wait_timeout::ChildExt;

use tasks::store::{Status, Task, check_id};

use crate::assignment::same_dir;
use crate::state::TeamState;

/// The worktrees' folder, relative to the workspace root.
pub const WORKTREES_DIR: &str = ".worktrees";

/// How long one Git command may run (the course's `timeout=30`).
pub const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most characters of Git's output a model-facing text carries (the course's `[:5000]`).
pub const GIT_TEXT_CAP: usize = 5000;

/// The branch of the worktree `name`: `wt/{name}`.
pub fn branch_of(name: &str) -> String {
    format!("wt/{name}")
}

/// What one Git command gave: whether it exited 0, and stdout then stderr, stripped, or
/// `(no output)`; whole (see [`GitOutput::model_text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOutput {
    /// Whether Git exited with status 0.
    pub ok: bool,
    /// The whole output, stripped; `(no output)` when empty; `{Kind}: {error}` when Git could
    /// not be run or timed out.
    pub output: String,
}

impl GitOutput {
    /// The output as the model reads it: at most [`GIT_TEXT_CAP`] characters.
    pub fn model_text(&self) -> String {
        self.output.chars().take(GIT_TEXT_CAP).collect()
    }
}

/// Runs Git: the system's `git` ([`SystemGit`]), or in a test a wrapper that fails one command
/// on purpose (as the course's tests replace `run_git`).
pub trait GitRunner: Send + Sync {
    /// Runs `git {args}` in `cwd` and returns its whole output.
    fn run(&self, args: &[&str], cwd: &Path) -> GitOutput;
}

/// The system's `git`, run without a shell, stdin closed, no terminal prompt, for at most
/// [`GIT_TIMEOUT`] (then killed). Its output goes to temporary files, so a process Git leaves
/// behind cannot keep the harness waiting on a pipe.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemGit;

impl GitRunner for SystemGit {
    fn run(&self, args: &[&str], cwd: &Path) -> GitOutput {
        match run_system_git(args, cwd) {
            Ok(output) => output,
            Err(e) => GitOutput { ok: false, output: format!("{}: {e}", io_kind_name(&e)) },
        }
    }
}

fn io_kind_name(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::NotFound => "FileNotFoundError",
        std::io::ErrorKind::PermissionDenied => "PermissionError",
        std::io::ErrorKind::TimedOut => "TimeoutExpired",
        _ => "OSError",
    }
}

fn run_system_git(args: &[&str], cwd: &Path) -> std::io::Result<GitOutput> {
    let mut stdout = tempfile::tempfile()?;
    let mut stderr = tempfile::tempfile()?;
    let mut child = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(stdout.try_clone()?)
        .stderr(stderr.try_clone()?)
        .spawn()?;
    // The harness's own child, not an orphan of a command (see `KeptChild`).
    let _kept = agent_core::process::keep_child(child.id());
    let status = match child.wait_timeout(GIT_TIMEOUT)? {
        Some(status) => status,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("Command 'git {}' timed out after {} seconds", args.join(" "), GIT_TIMEOUT.as_secs()),
            ));
        }
    };
    let mut bytes = Vec::new();
    for file in [&mut stdout, &mut stderr] {
        file.rewind()?;
        file.read_to_end(&mut bytes)?;
    }
    let text = String::from_utf8_lossy(&bytes);
    let stripped = pyjson::strip(&text);
    let output = if stripped.is_empty() { "(no output)".to_owned() } else { stripped.to_owned() };
    Ok(GitOutput { ok: status.success(), output })
}

/// A path made absolute with every symbolic link of its existing part resolved, the rest
/// appended as written (Python's `Path.resolve()`, not strict).
pub fn resolve_lenient(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                match Path::new(part).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) => {}
                    _ => out.push(part),
                }
            }
            return out;
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Parses `git worktree list --porcelain`: for each entry (blank-line separated), its
/// `key value` lines, keyed by the entry's `worktree` path resolved. Parsed from Git's whole
/// output, never the capped model text.
pub fn parse_porcelain(output: &str) -> HashMap<PathBuf, HashMap<String, String>> {
    let mut entries = HashMap::new();
    let mut current: HashMap<String, String> = HashMap::new();
    for line in output.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if let Some(raw) = current.get("worktree").filter(|p| !p.is_empty()) {
                entries.insert(resolve_lenient(Path::new(raw)), std::mem::take(&mut current));
            }
            current.clear();
            continue;
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        current.insert(key.to_owned(), value.to_owned());
    }
    entries
}

/// Why a worktree name is refused; `Display` is the course's text (shown after `Error: `).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Not `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
    #[error(
        "worktree name must be 1-64 letters, digits, dots, underscores, or dashes, and start with a letter or digit"
    )]
    Pattern,
    /// Contains `..`.
    #[error("worktree name cannot contain '..'")]
    DotDot,
}

/// Checks a worktree name (the course's `validate_worktree_name`): 1–64 ASCII letters, digits,
/// `.`, `_`, `-`, starting with a letter or digit, and no `..`.
///
/// # Errors
/// [`NameError`].
pub fn validate_worktree_name(name: &str) -> Result<(), NameError> {
    let bytes = name.as_bytes();
    let pattern = (1..=64).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !pattern {
        return Err(NameError::Pattern);
    }
    if name.contains("..") {
        return Err(NameError::DotDot);
    }
    Ok(())
}

/// Why `create_worktree` did not create and bind a worktree. `Display` is the course's whole
/// result text: `Error: …` for a refusal before Git ran, `Git error: …`, and the two texts that
/// say what was left behind (`Partial operation: …`, `Partial success: …`).
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    /// The name is refused.
    #[error("Error: {0}")]
    Name(#[from] NameError),
    /// The path would leave `.worktrees` (a symbolic link in the way).
    #[error("Error: Worktree path escapes directory: {0}")]
    Escapes(String),
    /// The task id is not one; holds its Python `repr`.
    #[error("Error: Invalid task ID: {0}")]
    InvalidTaskId(String),
    /// No such task.
    #[error("Error: Task {0} not found")]
    TaskNotFound(String),
    /// The task has started or has an owner.
    #[error("Error: Task {0} must be pending and unowned")]
    NotPending(String),
    /// The task already has a worktree.
    #[error("Error: Task {0} already uses worktree '{1}'")]
    TaskBound(String, String),
    /// Another task uses this name.
    #[error("Error: Worktree '{0}' is already bound to another task")]
    NameBound(String),
    /// Something is at the path already.
    #[error("Error: Worktree path already exists: {}", .0.display())]
    PathExists(PathBuf),
    /// The workspace is not the top of a Git repository.
    #[error("Error: Working directory must be the root of a Git repository")]
    NotRepositoryRoot,
    /// Git refuses the branch name.
    #[error("Error: Invalid worktree branch '{0}': {1}")]
    InvalidBranch(String, String),
    /// The branch exists already.
    #[error("Error: Branch '{0}' already exists")]
    BranchExists(String),
    /// `git worktree list --porcelain` failed: `cannot read Git worktree registry: {output}`.
    #[error("Error: {0}")]
    Registry(String),
    /// Git has a worktree registered at the path.
    #[error("Error: Worktree path is already registered: {}", .0.display())]
    PathRegistered(PathBuf),
    /// `.worktrees` cannot be made (a symbolic link, a file, no permission).
    #[error("Error: {0}")]
    Folder(String),
    /// The task cannot be read (a broken file).
    #[error("Error: {0}")]
    Task(String),
    /// `git worktree add` failed and left nothing.
    #[error("Git error: {0}")]
    Git(String),
    /// `git worktree add` failed after making some of: the checkout, its registration, the
    /// branch. Nothing was deleted; the task stays unbound.
    #[error(
        "Partial operation: git worktree add reported an error after leaving {artifacts}. Task {task_id} remains \
         unbound and no Git data was deleted. Run `git worktree list`, inspect '{path}' and '{branch}', then keep or \
         remove those artifacts manually after preserving any work. Git error: {result}",
        path = .path.display()
    )]
    PartialOperation {
        /// What was left, `, `-joined: `checkout path '…'`, `registered Git worktree`, `branch 'wt/…'`.
        artifacts: String,
        /// The task, still unbound.
        task_id: String,
        /// The worktree's path.
        path: PathBuf,
        /// Its branch.
        branch: String,
        /// Git's output.
        result: String,
    },
    /// The worktree was made but the task could not be saved with it; Git's data is kept.
    #[error(
        "Partial success: Worktree '{name}' was created at {path} on branch '{branch}', but task binding failed: \
         {error}. Git data was retained for manual recovery.",
        path = .path.display()
    )]
    PartialSuccess {
        /// The worktree's name.
        name: String,
        /// Its path.
        path: PathBuf,
        /// Its branch.
        branch: String,
        /// Why the task could not be saved.
        error: String,
    },
}

/// A worktree `create_worktree` made and bound: `Display` is the course's result,
/// `Worktree '{name}' created at {path} for task {task_id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    /// The worktree's name.
    pub name: String,
    /// Its path, `WORKDIR/.worktrees/{name}`.
    pub path: PathBuf,
    /// The task now bound to it.
    pub task_id: String,
}

impl fmt::Display for Created {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Worktree '{}' created at {} for task {}", self.name, self.path.display(), self.task_id)
    }
}

/// Why `remove_worktree` did not remove a worktree; `Display` is the course's whole text.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    /// The name is refused.
    #[error("Error: {0}")]
    Name(#[from] NameError),
    /// It is not a usable registered worktree (`worktree 'x' is not registered with Git`, …).
    #[error("Error: {0}")]
    Unregistered(String),
    /// No task names it.
    #[error("Error: Worktree '{0}' is not bound to a task")]
    NotBound(String),
    /// A task bound to it is not completed.
    #[error("Error: Worktree '{0}' is bound to active task {1}; complete it before removal")]
    ActiveTask(String, String),
    /// An owner's lease still points into it.
    #[error("Error: Worktree '{0}' is still in use by {1}; wait for the turn to end")]
    InUse(String, String),
    /// `git status` failed in it.
    #[error("Error: Cannot verify worktree '{0}' status: {1}")]
    Status(String, String),
    /// It has changes, ignored files included, and `discard_changes` was not given.
    #[error("Error: Worktree '{0}' has {1} uncommitted change(s); preserve or discard them manually")]
    Uncommitted(String, usize),
    /// The tasks cannot be read.
    #[error("Error: {0}")]
    Task(String),
    /// `git worktree remove` failed.
    #[error("Git error: {0}")]
    Git(String),
    /// The checkout is gone (branch kept) but a task still names it.
    #[error(
        "Partial success: Worktree '{0}' was removed and branch '{branch}' retained, but task unbinding failed: {1}. \
         Manual recovery is required.",
        branch = branch_of(.0)
    )]
    PartialSuccess(String, String),
}

/// A removed worktree: `Display` is `Worktree '{name}' removed; branch 'wt/{name}' retained`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The worktree's name.
    pub name: String,
}

impl fmt::Display for Removed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Worktree '{}' removed; branch '{}' retained", self.name, branch_of(&self.name))
    }
}

impl TeamState {
    /// The folder all worktrees live in, `WORKDIR/.worktrees`, resolved.
    pub fn worktrees_dir(&self) -> PathBuf {
        resolve_lenient(&self.root().join(WORKTREES_DIR))
    }

    /// The path of the worktree `name` (the course's `_worktree_path`): inside `.worktrees`,
    /// which is inside the workspace, and not `.worktrees` itself.
    ///
    /// # Errors
    /// `Worktree path escapes directory: '{name}'`.
    pub fn worktree_path(&self, name: &str) -> Result<PathBuf, String> {
        let base = self.worktrees_dir();
        let path = resolve_lenient(&base.join(name));
        let root = resolve_lenient(&self.root());
        if !base.starts_with(&root) || !path.starts_with(&base) || path == base {
            return Err(format!("Worktree path escapes directory: {}", pyjson::repr_str(name)));
        }
        Ok(path)
    }

    fn git(&self, args: &[&str]) -> GitOutput {
        self.git.run(args, &self.root())
    }

    /// Git's worktree registry (`git worktree list --porcelain`, whole), by resolved path.
    ///
    /// # Errors
    /// `cannot read Git worktree registry: {output}`.
    pub fn registered_worktrees(&self) -> Result<HashMap<PathBuf, HashMap<String, String>>, String> {
        let listed = self.git(&["worktree", "list", "--porcelain"]);
        if !listed.ok {
            return Err(format!("cannot read Git worktree registry: {}", listed.model_text()));
        }
        Ok(parse_porcelain(&listed.output))
    }

    /// The path of the worktree `name`, when it is registered with Git, is a folder, and is on
    /// branch `wt/{name}` (the course's `_registered_worktree`).
    ///
    /// # Errors
    /// `worktree '{n}' is not registered with Git`, `worktree '{n}' is missing at {path}`,
    /// `worktree '{n}' is not registered on expected branch 'wt/{n}'`, and the errors of
    /// [`TeamState::worktree_path`] and [`TeamState::registered_worktrees`].
    pub fn registered_worktree(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.worktree_path(name)?;
        let entries = self.registered_worktrees()?;
        let Some(entry) = entries.get(&path) else {
            return Err(format!("worktree '{name}' is not registered with Git"));
        };
        if !path.is_dir() {
            return Err(format!("worktree '{name}' is missing at {}", path.display()));
        }
        let branch = branch_of(name);
        if entry.get("branch").map(String::as_str) != Some(format!("refs/heads/{branch}").as_str()) {
            return Err(format!("worktree '{name}' is not registered on expected branch '{branch}'"));
        }
        Ok(path)
    }

    /// Where `task`'s tools run (the course's `task_worktree_cwd`): the workspace root, or its
    /// bound worktree when that is usable ([`TeamState::registered_worktree`]). Fails closed:
    /// a broken binding is an error, never the workspace.
    ///
    /// # Errors
    /// As [`TeamState::registered_worktree`].
    pub fn task_worktree_cwd(&self, task: &Task) -> Result<PathBuf, String> {
        match task.worktree() {
            None => Ok(self.root()),
            Some(name) => self.registered_worktree(name),
        }
    }

    /// The Lead's `create_worktree` (the course's `create_worktree`): every check of the
    /// module's table in order, all under the task store's lock; then
    /// `git worktree add -b wt/{name} .worktrees/{name} HEAD`; then the task is saved bound to
    /// it. Reports `  [worktree] created: {name} at {path}`.
    ///
    /// # Errors
    /// [`CreateError`], whose text is the tool's result.
    pub fn create_worktree(&self, name: &str, task_id: &Value) -> Result<Created, CreateError> {
        validate_worktree_name(name)?;
        let path = self.worktree_path(name).map_err(|_| CreateError::Escapes(pyjson::repr_str(name)))?;
        let id = check_id(task_id).map_err(|_| CreateError::InvalidTaskId(pyjson::repr(task_id)))?.to_owned();
        let branch = branch_of(name);
        let created = self
            .store
            .transaction(|tx| Ok(self.create_locked(tx, name, &id, &path, &branch)))
            .unwrap_or_else(|e| Err(CreateError::Task(e.to_string())))?;
        self.say(&format!("  [worktree] created: {name} at {}", path.display()));
        Ok(created)
    }

    fn create_locked(
        &self,
        tx: &tasks::store::Locked<'_>,
        name: &str,
        id: &str,
        path: &Path,
        branch: &str,
    ) -> Result<Created, CreateError> {
        let id_value = Value::String(id.to_owned());
        if !tx.exists(&id_value).unwrap_or(false) {
            return Err(CreateError::TaskNotFound(id.to_owned()));
        }
        let mut task = tx.load(&id_value).map_err(|e| CreateError::Task(e.to_string()))?;
        if task.status != Status::Pending || task.owner.is_some() {
            return Err(CreateError::NotPending(id.to_owned()));
        }
        if let Some(bound) = task.worktree() {
            return Err(CreateError::TaskBound(id.to_owned(), bound.to_owned()));
        }
        let listed = tx.list().map_err(|e| CreateError::Task(e.to_string()))?;
        if listed.iter().flatten().any(|t| t.id != id && t.worktree() == Some(name)) {
            return Err(CreateError::NameBound(name.to_owned()));
        }
        if path.symlink_metadata().is_ok() {
            return Err(CreateError::PathExists(path.to_owned()));
        }
        let top = self.git(&["rev-parse", "--show-toplevel"]);
        if !top.ok || !same_dir(Path::new(&top.output), &self.root()) {
            return Err(CreateError::NotRepositoryRoot);
        }
        let format = self.git(&["check-ref-format", "--branch", branch]);
        if !format.ok {
            return Err(CreateError::InvalidBranch(branch.to_owned(), format.model_text()));
        }
        let branch_ref = format!("refs/heads/{branch}");
        if self.git(&["show-ref", "--verify", "--quiet", &branch_ref]).ok {
            return Err(CreateError::BranchExists(branch.to_owned()));
        }
        let entries = self.registered_worktrees().map_err(CreateError::Registry)?;
        if entries.contains_key(path) {
            return Err(CreateError::PathRegistered(path.to_owned()));
        }
        self.workspace.harness_dir(WORKTREES_DIR, true).map_err(|e| CreateError::Folder(e.to_string()))?;
        let path_text = path.to_string_lossy();
        let added = self.git(&["worktree", "add", "-b", branch, &path_text, "HEAD"]);
        if !added.ok {
            let mut artifacts = Vec::new();
            if path.exists() {
                artifacts.push(format!("checkout path '{}'", path.display()));
            }
            if self.registered_worktrees().is_ok_and(|entries| entries.contains_key(path)) {
                artifacts.push("registered Git worktree".to_owned());
            }
            if self.git(&["show-ref", "--verify", "--quiet", &branch_ref]).ok {
                artifacts.push(format!("branch '{branch}'"));
            }
            if artifacts.is_empty() {
                return Err(CreateError::Git(added.model_text()));
            }
            return Err(CreateError::PartialOperation {
                artifacts: artifacts.join(", "),
                task_id: id.to_owned(),
                path: path.to_owned(),
                branch: branch.to_owned(),
                result: added.model_text(),
            });
        }
        task.set_worktree(Some(name));
        if let Err(e) = tx.save(&task) {
            return Err(CreateError::PartialSuccess {
                name: name.to_owned(),
                path: path.to_owned(),
                branch: branch.to_owned(),
                error: e.to_string(),
            });
        }
        Ok(Created { name: name.to_owned(), path: path.to_owned(), task_id: id.to_owned() })
    }

    /// Removes the checkout of the worktree `name` and unbinds its tasks, keeping the branch
    /// (the course's `remove_worktree`): for the host or the user only, never a model's tool.
    /// Refused while a bound task is not completed, while an owner's lease points into it, and,
    /// without `discard_changes`, while `git status --porcelain --ignored` shows anything
    /// (ignored files are data too). Reports `  [worktree] removed: {name}; branch retained`.
    ///
    /// # Errors
    /// [`RemoveError`], whose text says what to do.
    pub fn remove_worktree(&self, name: &str, discard_changes: bool) -> Result<Removed, RemoveError> {
        validate_worktree_name(name)?;
        let removed = self
            .store
            .transaction(|tx| Ok(self.remove_locked(tx, name, discard_changes)))
            .unwrap_or_else(|e| Err(RemoveError::Task(e.to_string())))?;
        self.say(&format!("  [worktree] removed: {name}; branch retained"));
        Ok(removed)
    }

    fn remove_locked(
        &self,
        tx: &tasks::store::Locked<'_>,
        name: &str,
        discard_changes: bool,
    ) -> Result<Removed, RemoveError> {
        let path = self.registered_worktree(name).map_err(RemoveError::Unregistered)?;
        let listed = tx.list().map_err(|e| RemoveError::Task(e.to_string()))?;
        let bound: Vec<Task> = listed.into_iter().flatten().filter(|t| t.worktree() == Some(name)).collect();
        if bound.is_empty() {
            return Err(RemoveError::NotBound(name.to_owned()));
        }
        if let Some(active) = bound.iter().find(|t| t.status != Status::Completed) {
            return Err(RemoveError::ActiveTask(name.to_owned(), active.id.clone()));
        }
        let mut leased: Vec<String> = self
            .registry()
            .leases
            .iter()
            .filter(|(_, lease)| same_dir(&lease.cwd, &path))
            .map(|(owner, _)| owner.clone())
            .collect();
        if !leased.is_empty() {
            leased.sort();
            return Err(RemoveError::InUse(name.to_owned(), leased.join(", ")));
        }
        let status = self.git.run(&["status", "--porcelain", "--ignored"], &path);
        if !status.ok {
            return Err(RemoveError::Status(name.to_owned(), status.model_text()));
        }
        if status.output != "(no output)" && !discard_changes {
            let changed = status.output.lines().filter(|l| !l.trim().is_empty()).count();
            return Err(RemoveError::Uncommitted(name.to_owned(), changed));
        }
        let path_text = path.to_string_lossy();
        let mut args = vec!["worktree", "remove"];
        if discard_changes {
            args.push("--force");
        }
        args.push(&path_text);
        let removed = self.git(&args);
        if !removed.ok {
            return Err(RemoveError::Git(removed.model_text()));
        }
        for mut task in bound {
            task.set_worktree(None);
            if let Err(e) = tx.save(&task) {
                return Err(RemoveError::PartialSuccess(name.to_owned(), e.to_string()));
            }
        }
        Ok(Removed { name: name.to_owned() })
    }
}
