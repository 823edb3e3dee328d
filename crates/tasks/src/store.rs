//! `TaskStore`: one JSON file per task in `WORKDIR/.tasks/`, the course's s10 task graph.
//!
//! Source: COURSE-s10-s17 §1.3 and §1.5 (the course's `s10_task_system/code.py`). A task is
//!
//! ```text
//! .tasks/task_0c301f08.json   {
//!                               "id": "task_0c301f08",
//!                               "subject": "\u8bbe\u8ba1 schema",
//!                               "description": "d",
//!                               "status": "completed",
//!                               "owner": "agent",
//!                               "blockedBy": []
//!                             }
//! ```
//!
//! written as Python's `json.dumps(asdict(task), indent=2)` writes it ([`pyjson`]): the same
//! bytes as the course, no trailing new line. `pending --claim--> in_progress --complete-->
//! completed`; a task may be claimed once every task in its `blockedBy` is completed.
//!
//! Ours, beyond the course's s10 (each keeps what the course shows the model):
//! - **Crash-safe files.** A new task appears whole or not at all (written aside, then linked
//!   under its name, which fails if the name is taken: the course's `open(…, "x")`); a save
//!   replaces the file atomically. The course's s10 writes in place.
//! - **One writer at a time.** `update`, `claim` and `complete` read, check and save under the
//!   folder's lock (`.tasks/.lock`, `flock`, the lock the course's s13 takes), so two processes
//!   in one workspace cannot both claim a task or lose each other's edge.
//! - **A bad file is one bad task.** A hand-edited, truncated or foreign file gives a clear error
//!   for that task ([`TaskError::BadFile`]); [`TaskStore::list`] still returns every other task.
//!   The course's `list()` fails whole.
//! - **Keys of later chapters.** The course's s13 and s15 add `"worktree"`. s10 refuses a file
//!   with a key it does not know, as the course's `Task(**data)` does, but names the key;
//!   [`TaskStore::allowing_keys`] lets a later chapter's store keep such keys (and write them
//!   back, after the six, in file order).

use std::fmt;
use std::io;
use std::sync::Mutex;

use serde_json::{Map, Value};

use agent_core::workspace::Workspace;
use store::{StoreDir, StoreError};

/// The store's folder, relative to the workspace root (COURSE-s10-s17 §1.5).
pub const TASKS_DIR: &str = ".tasks";

/// How many fresh ids [`TaskStore::create`] draws before it gives up (the course's 100).
pub const ID_ATTEMPTS: usize = 100;

/// The most bytes of one task file that are read: a huge file dropped into `.tasks/` costs one
/// bounded read and is reported as a bad task.
pub const MAX_TASK_FILE_BYTES: u64 = 1 << 20;

/// The key s13 and s15 add to a task: the name of the worktree bound to it, or `null`
/// (COURSE-s10-s17 §4.3).
pub const WORKTREE_KEY: &str = "worktree";

/// The six keys of a task file, in the course's order (`dataclasses.asdict(Task)`).
pub const TASK_KEYS: [&str; 6] = ["id", "subject", "description", "status", "owner", "blockedBy"];

/// Where a task is in its life (COURSE-s10-s17 §1.3): `pending`, `in_progress`, `completed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Not started; may be claimed once its dependencies are completed.
    Pending,
    /// Claimed by its owner.
    InProgress,
    /// Done.
    Completed,
}

impl Status {
    /// The course's spelling, as stored in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    /// The status spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "pending" => Some(Status::Pending),
            "in_progress" => Some(Status::InProgress),
            "completed" => Some(Status::Completed),
            _ => None,
        }
    }

    /// The course's list marker: `[ ]`, `[>]`, `[x]`.
    pub fn marker(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[>]",
            Status::Completed => "[x]",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task, as its file holds it (the course's `Task` dataclass).
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// `task_` and 8 lowercase hex digits; also the file's name without `.json`.
    pub id: String,
    /// What to do, one line, stripped.
    pub subject: String,
    /// More about it, as given (may be empty).
    pub description: String,
    /// Where it is in its life.
    pub status: Status,
    /// Who claimed it (`agent` in s10), or `None`.
    pub owner: Option<String>,
    /// The ids of the tasks that must be completed first, in the order they were added.
    pub blocked_by: Vec<String>,
    /// Keys beyond the six that a later chapter's store allows ([`TaskStore::allowing_keys`]),
    /// in file order; always empty in s10.
    pub extra: Map<String, Value>,
}

impl Task {
    /// The task as the course's `asdict(task)`: the six keys in order, then [`Task::extra`].
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), self.id.clone().into());
        map.insert("subject".into(), self.subject.clone().into());
        map.insert("description".into(), self.description.clone().into());
        map.insert("status".into(), self.status.as_str().into());
        map.insert("owner".into(), self.owner.clone().map_or(Value::Null, Value::String));
        map.insert("blockedBy".into(), self.blocked_by.clone().into());
        map.extend(self.extra.clone());
        Value::Object(map)
    }

    /// The name of the worktree bound to the task (s13's `task.worktree`), when it is a
    /// non-empty string.
    pub fn worktree(&self) -> Option<&str> {
        self.extra.get(WORKTREE_KEY).and_then(Value::as_str).filter(|name| !name.is_empty())
    }

    /// Binds the worktree `name` to the task, or unbinds it with `None` (written as `null`).
    pub fn set_worktree(&mut self, name: Option<&str>) {
        self.extra.insert(WORKTREE_KEY.to_owned(), name.map_or(Value::Null, |n| Value::String(n.to_owned())));
    }

    /// The file's bytes: `json.dumps(asdict(task), indent=2)`, no trailing new line. Also the
    /// course's `get_task` result.
    pub fn to_json(&self) -> String {
        pyjson::dumps_indent(&self.to_value(), 2)
    }
}

/// Why a task operation failed. `Display` is the course's message where the course has one
/// (COURSE-s10-s17 §1.3), which the tool result shows after `Error: `.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// `create` with a subject that is empty after stripping.
    #[error("Task subject cannot be empty")]
    EmptySubject,
    /// `.tasks` resolves outside the workspace (a symlink).
    #[error("Task store escapes the workspace")]
    Escapes,
    /// [`ID_ATTEMPTS`] fresh ids were all taken.
    #[error("Could not allocate a unique task ID")]
    NoUniqueId,
    /// `addBlockedBy` is not a list.
    #[error("addBlockedBy must be a list of task IDs")]
    NotAList,
    /// An id that is not `task_` and 8 lowercase hex digits; holds its Python `repr`.
    #[error("Invalid task ID: {0}")]
    InvalidId(String),
    /// No file for this task. The text is CPython's `FileNotFoundError`, as the course's s10
    /// returns it: `[Errno 2] No such file or directory: '/abs/.tasks/task_x.json'`.
    #[error("[Errno 2] No such file or directory: {}", pyjson::repr_str(.path))]
    NotFound {
        /// The task's id.
        id: String,
        /// The absolute path of the file that is missing.
        path: String,
    },
    /// `update` of a task that is started or owned.
    #[error("Task {0} dependencies can only be updated while pending and unowned")]
    NotUpdatable(String),
    /// `update` with the task itself among its dependencies.
    #[error("Task cannot depend on itself")]
    SelfDependency,
    /// `update` with a dependency that has no file.
    #[error("Dependency not found: {0}")]
    DependencyNotFound(String),
    /// `update` with an edge that closes a cycle: the task, then the dependency.
    #[error("Dependency cycle detected: {0} -> {1}")]
    Cycle(String, String),
    /// The file's `id` is not the id it was asked for.
    #[error("Task file ID does not match {0}")]
    IdMismatch(String),
    /// The file's `status` is not one of the three; holds it as Python's `str` shows it.
    #[error("Invalid task status: {0}")]
    InvalidStatus(String),
    /// The file cannot be read as a task (ours; the course raises Python's own exception).
    #[error("Task file {TASKS_DIR}/{file} {why}")]
    BadFile {
        /// The file's name in `.tasks`.
        file: String,
        /// What is wrong and what to do, as a phrase after the file name.
        why: String,
    },
    /// `.tasks` is a link that stays inside the workspace, or no folder (ours: the course follows
    /// such a link). The text says what to do.
    #[error(transparent)]
    Harness(agent_core::workspace::HarnessPathError),
    /// The system refused a file operation.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// What the system said.
        source: io::Error,
    },
}

impl TaskError {
    fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> TaskError {
        let what = what.into();
        move |source| TaskError::Io { what, source }
    }
}

/// What [`TaskStore::claim`] did: claimed it, or why not (the course returns these as plain
/// results, not errors).
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// Claimed: `Claimed {id} ({subject})`.
    Claimed(Task),
    /// Not pending: `Task {id} is {status}, cannot claim`.
    NotPending(Task),
    /// Dependencies not completed (missing ones count): `Blocked by: ['task_…']`.
    Blocked(Vec<String>),
}

/// What [`TaskStore::complete`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// Completed, and the subjects of the tasks this made ready (pending, with dependencies,
    /// all now completed), in list order: `Completed {id} ({subject})` + `\nUnblocked: a, b`.
    Completed {
        /// The task, now completed.
        task: Task,
        /// Subjects of the tasks that became ready.
        unblocked: Vec<String>,
    },
    /// Not in progress: `Task {id} is {status}, cannot complete`.
    NotInProgress(Task),
    /// Owned by someone else: `Task {id} is owned by {owner}, not {caller}`.
    OwnedByOther(Task),
}

/// One entry of [`TaskStore::list`]: a task, or the error its file gives.
pub type Listed = Result<Task, (String, TaskError)>;

type IdSource = Box<dyn FnMut() -> u32 + Send>;

/// The course's `TaskStore`: the task files of one workspace.
pub struct TaskStore {
    workspace: Workspace,
    ids: Mutex<IdSource>,
    allowed_keys: Vec<String>,
    /// Keys every task of this store has, with the value a file without them gets (s13's
    /// `"worktree": null`), in the order they are written after the six.
    key_defaults: Vec<(String, Value)>,
}

impl fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskStore").field("root", &self.workspace.root()).finish_non_exhaustive()
    }
}

/// Whether `id` is `task_` and 8 lowercase hex digits (the course's `TASK_ID_PATTERN`,
/// `^task_[0-9a-f]{8}$`).
pub fn is_task_id(id: &str) -> bool {
    id.strip_prefix("task_").is_some_and(|hex| {
        hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `id` checked as a task id: a string of the course's pattern, else [`TaskError::InvalidId`]
/// with its Python `repr` (`Invalid task ID: '../outside'`, `Invalid task ID: 5`).
pub fn check_id(id: &Value) -> Result<&str, TaskError> {
    match id.as_str() {
        Some(text) if is_task_id(text) => Ok(text),
        _ => Err(TaskError::InvalidId(pyjson::repr(id))),
    }
}

/// Python's `str(value)`: a string as it is, anything else as its `repr`.
fn py_str(value: &Value) -> String {
    value.as_str().map_or_else(|| pyjson::repr(value), str::to_owned)
}

impl TaskStore {
    /// The store of `workspace`, drawing ids at random. Nothing is created until the first task.
    pub fn new(workspace: &Workspace) -> Self {
        let mut rng = fastrand::Rng::new();
        Self::with_ids(workspace, move || rng.u32(..))
    }

    /// The store of `workspace`, with `ids` drawing each new id's number (`task_{:08x}`): a
    /// seeded sequence for the offline demo, a fixed one for tests.
    pub fn with_ids(workspace: &Workspace, ids: impl FnMut() -> u32 + Send + 'static) -> Self {
        Self {
            workspace: workspace.clone(),
            ids: Mutex::new(Box::new(ids)),
            allowed_keys: Vec::new(),
            key_defaults: Vec::new(),
        }
    }

    /// The store, reading and keeping the keys `keys` beyond the six (`["worktree"]` for a
    /// later chapter); s10 allows none.
    pub fn allowing_keys(mut self, keys: &[&str]) -> Self {
        self.allowed_keys = keys.iter().map(|k| (*k).to_owned()).collect();
        self
    }

    /// The store, with the keys of `defaults` on every task: allowed as
    /// [`TaskStore::allowing_keys`] allows them, written with their default value in every new
    /// task, and filled in with it when a file has no such key (one written by s10), as the
    /// course's s13 dataclass field `worktree: str | None = None` does. s13 and s15 use
    /// `[("worktree", null)]` ([`TaskStore::for_teams`]).
    pub fn with_key_defaults(mut self, defaults: &[(&str, Value)]) -> Self {
        for (key, _) in defaults {
            if !self.allowed_keys.iter().any(|k| k == key) {
                self.allowed_keys.push((*key).to_owned());
            }
        }
        self.key_defaults = defaults.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
        self
    }

    /// The store as the course's s13 and s15 keep it: every task has a `worktree` key (`null`
    /// until `create_worktree` binds one), after the six. s10's files are read as tasks without a
    /// worktree; s10 itself never sees this key unless a later chapter wrote it.
    pub fn for_teams(self) -> Self {
        self.with_key_defaults(&[(WORKTREE_KEY, Value::Null)])
    }

    /// The workspace the store lives in.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    fn open(&self) -> Result<Option<StoreDir>, TaskError> {
        self.open_with(false)
    }

    fn open_or_create(&self) -> Result<StoreDir, TaskError> {
        self.open_with(true)?.ok_or_else(|| TaskError::Io {
            what: format!("cannot open {TASKS_DIR}"),
            source: io::ErrorKind::NotFound.into(),
        })
    }

    /// `.tasks`, checked twice. First as the course checks it, for its text: a `.tasks` that
    /// leads outside the workspace is [`TaskError::Escapes`]. Then as every harness folder is
    /// opened ([`StoreDir::open_harness`]): a `.tasks` that is a link at all, even one staying
    /// inside, is refused, since a model's command can make one and the store would then write
    /// where the link points.
    fn open_with(&self, create: bool) -> Result<Option<StoreDir>, TaskError> {
        StoreDir::open(&self.workspace, TASKS_DIR).map_err(store_error)?;
        StoreDir::open_harness(&self.workspace, TASKS_DIR, create).map_err(TaskError::Harness)
    }

    fn draw_id(&self) -> String {
        let mut ids = self.ids.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        format!("task_{:08x}", ids())
    }

    /// Creates a pending, unowned task without dependencies (the course's `create`): the subject
    /// stripped, the description as given, a fresh id (drawn again while taken, up to
    /// [`ID_ATTEMPTS`] times). Creates `.tasks` when missing.
    ///
    /// # Errors
    /// [`TaskError::EmptySubject`], [`TaskError::Escapes`], [`TaskError::NoUniqueId`],
    /// [`TaskError::Io`].
    pub fn create(&self, subject: &str, description: &str) -> Result<Task, TaskError> {
        let subject = pyjson::strip(subject);
        if subject.is_empty() {
            return Err(TaskError::EmptySubject);
        }
        let dir = self.open_or_create()?;
        let task = |id: &str| Task {
            id: id.to_owned(),
            subject: subject.to_owned(),
            description: description.to_owned(),
            status: Status::Pending,
            owner: None,
            blocked_by: Vec::new(),
            extra: self.key_defaults.iter().cloned().collect(),
        };
        let created = dir
            .create_unique(
                ID_ATTEMPTS,
                || format!("{}.json", self.draw_id()),
                |file| task(file.trim_end_matches(".json")).to_json().into_bytes(),
            )
            .map_err(TaskError::io(format!("cannot write a new task in {TASKS_DIR}")))?;
        match created {
            Some(file) => Ok(task(file.trim_end_matches(".json"))),
            None => Err(TaskError::NoUniqueId),
        }
    }

    /// The task `id` (the course's `load`).
    ///
    /// # Errors
    /// [`TaskError::InvalidId`], [`TaskError::Escapes`], [`TaskError::NotFound`], and for a
    /// file that is not a task: [`TaskError::IdMismatch`], [`TaskError::InvalidStatus`],
    /// [`TaskError::BadFile`], [`TaskError::Io`].
    pub fn load(&self, id: &Value) -> Result<Task, TaskError> {
        let id = check_id(id)?;
        let dir = self.open()?;
        self.load_in(dir.as_ref(), id)
    }

    fn load_in(&self, dir: Option<&StoreDir>, id: &str) -> Result<Task, TaskError> {
        let file = format!("{id}.json");
        // The course names the file under the resolved folder (`Path.resolve()`).
        let folder = dir.map_or_else(|| self.workspace.root().join(TASKS_DIR), |d| d.path().to_owned());
        let not_found =
            || TaskError::NotFound { id: id.to_owned(), path: folder.join(&file).display().to_string() };
        let Some(dir) = dir else { return Err(not_found()) };
        let bytes = match dir.read(&file, MAX_TASK_FILE_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(not_found()),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(TaskError::BadFile { file, why: format!("cannot be read as a task: {e}") });
            }
            Err(e) => return Err(TaskError::io(format!("cannot read {TASKS_DIR}/{file}"))(e)),
        };
        self.parse(id, &file, &bytes)
    }

    /// The task in `bytes`, the file `file` asked for as `id`, checked as the course's `load`
    /// checks it (the id, then the status) and, beyond it, every field's type.
    fn parse(&self, id: &str, file: &str, bytes: &[u8]) -> Result<Task, TaskError> {
        let bad = |why: String| TaskError::BadFile { file: file.to_owned(), why };
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| bad(format!("is not valid JSON ({e}); fix or remove it")))?;
        let Value::Object(mut map) = value else {
            return Err(bad("is not a JSON object; fix or remove it".into()));
        };
        let unknown: Vec<&String> = map
            .keys()
            .filter(|k| !TASK_KEYS.contains(&k.as_str()) && !self.allowed_keys.contains(k))
            .collect();
        if let Some(key) = unknown.first() {
            return Err(bad(format!(
                "has a key this chapter does not know: {} (written by a later chapter?); remove it to use the task here",
                pyjson::repr_str(key)
            )));
        }
        if let Some(missing) = TASK_KEYS.iter().find(|k| !map.contains_key(**k)) {
            return Err(bad(format!("has no {} key; fix or remove it", pyjson::repr_str(missing))));
        }
        let mut take = |key: &str| map.remove(key).unwrap_or(Value::Null);
        let (file_id, subject, description, status, owner, blocked_by) = (
            take("id"),
            take("subject"),
            take("description"),
            take("status"),
            take("owner"),
            take("blockedBy"),
        );
        if file_id.as_str() != Some(id) {
            return Err(TaskError::IdMismatch(id.to_owned()));
        }
        let status = status
            .as_str()
            .and_then(Status::parse)
            .ok_or_else(|| TaskError::InvalidStatus(py_str(&status)))?;
        let text = |key: &str, value: Value| match value {
            Value::String(s) => Ok(s),
            _ => Err(bad(format!("has a {} that is not a string; fix or remove it", pyjson::repr_str(key)))),
        };
        let owner = match owner {
            Value::Null => None,
            other => Some(text("owner", other)?),
        };
        let blocked_by = match blocked_by {
            Value::Array(items) => {
                items.into_iter().map(|item| text("blockedBy", item)).collect::<Result<Vec<_>, _>>()?
            }
            _ => return Err(bad("has a 'blockedBy' that is not a list; fix or remove it".into())),
        };
        let mut extra = map;
        for (key, default) in &self.key_defaults {
            match extra.get(key) {
                None => {
                    extra.insert(key.clone(), default.clone());
                }
                // A key whose default is `null` holds a name or nothing (s13's `worktree`).
                Some(value) if default.is_null() && !value.is_null() && !value.is_string() => {
                    return Err(bad(format!(
                        "has a {} that is neither null nor a string; fix or remove it",
                        pyjson::repr_str(key)
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(Task {
            id: id.to_owned(),
            subject: text("subject", subject)?,
            description: text("description", description)?,
            status,
            owner,
            blocked_by,
            extra,
        })
    }

    /// Whether the task `id` has a file (the course's `exists`).
    ///
    /// # Errors
    /// [`TaskError::InvalidId`], [`TaskError::Escapes`], [`TaskError::Io`].
    pub fn exists(&self, id: &Value) -> Result<bool, TaskError> {
        let id = check_id(id)?;
        Ok(self.open()?.is_some_and(|dir| dir.is_file(&format!("{id}.json"))))
    }

    /// Every task file `task_*.json`, in file-name order (the course's `list`): the task, or the
    /// file's name and its error. Empty when `.tasks` does not exist.
    ///
    /// # Errors
    /// [`TaskError::Escapes`]; [`TaskError::Io`] when the folder cannot be read.
    pub fn list(&self) -> Result<Vec<Listed>, TaskError> {
        let Some(dir) = self.open()? else { return Ok(Vec::new()) };
        self.list_in(&dir)
    }

    fn list_in(&self, dir: &StoreDir) -> Result<Vec<Listed>, TaskError> {
        let names = dir
            .names(|name| name.starts_with("task_") && name.ends_with(".json"))
            .map_err(TaskError::io(format!("cannot list {TASKS_DIR}")))?;
        Ok(names
            .into_iter()
            .map(|name| {
                let id = name.trim_end_matches(".json").to_owned();
                let loaded = if is_task_id(&id) {
                    self.load_in(Some(dir), &id)
                } else {
                    Err(TaskError::InvalidId(pyjson::repr_str(&id)))
                };
                loaded.map_err(|e| (id, e))
            })
            .collect())
    }

    /// Runs `f` on the folder under its lock (when the folder exists): a read, check and save
    /// that no other process or thread interleaves with.
    fn locked<T>(&self, f: impl FnOnce(Option<&StoreDir>) -> Result<T, TaskError>) -> Result<T, TaskError> {
        let Some(dir) = self.open()? else { return f(None) };
        let _guard =
            dir.lock().map_err(TaskError::io(format!("cannot lock {TASKS_DIR}/{}", store::LOCK_FILE)))?;
        f(Some(&dir))
    }

    /// Runs `f` with the store under its lock (`.tasks/.lock`, `flock`): every load, list and
    /// save `f` makes through [`Locked`] happens with no other process or thread changing a task
    /// in between (the course's `with task_store_lock():`). The lock is not re-entrant: `f` must
    /// not call a method of this store that takes it ([`TaskStore::update_dependencies`],
    /// [`TaskStore::claim`], [`TaskStore::complete`], [`TaskStore::claim_owned`],
    /// [`TaskStore::complete_owned`], [`TaskStore::transaction`]).
    ///
    /// # Errors
    /// [`TaskError::Escapes`], [`TaskError::Io`] when the folder cannot be opened or locked,
    /// and whatever `f` returns.
    pub fn transaction<T>(
        &self,
        f: impl FnOnce(&Locked<'_>) -> Result<T, TaskError>,
    ) -> Result<T, TaskError> {
        self.locked(|dir| f(&Locked { store: self, dir }))
    }

    fn save_in(dir: &StoreDir, task: &Task) -> Result<(), TaskError> {
        let file = format!("{}.json", task.id);
        dir.replace(&file, task.to_json().as_bytes())
            .map_err(TaskError::io(format!("cannot save {TASKS_DIR}/{file}")))
    }

    /// Adds dependencies to a pending, unowned task (the course's `update_dependencies`):
    /// `add_blocked_by` must be a list; duplicates count once; each is checked in order (not
    /// the task itself, a task that exists, no cycle) before anything is written; ids already
    /// there are kept once.
    ///
    /// # Errors
    /// [`TaskError::NotAList`], the errors of [`TaskStore::load`], [`TaskError::NotUpdatable`],
    /// [`TaskError::SelfDependency`], [`TaskError::DependencyNotFound`], [`TaskError::Cycle`].
    pub fn update_dependencies(&self, id: &Value, add_blocked_by: &Value) -> Result<Task, TaskError> {
        let Value::Array(given) = add_blocked_by else { return Err(TaskError::NotAList) };
        let id = check_id(id)?;
        self.locked(|dir| {
            let mut task = self.load_in(dir, id)?;
            if task.status != Status::Pending || task.owner.is_some() {
                return Err(TaskError::NotUpdatable(id.to_owned()));
            }
            let mut dependencies: Vec<&Value> = Vec::new();
            for dep in given {
                if !dependencies.contains(&dep) {
                    dependencies.push(dep);
                }
            }
            let mut new = Vec::new();
            for dep in dependencies {
                if dep.as_str() == Some(id) {
                    return Err(TaskError::SelfDependency);
                }
                let dep = check_id(dep)?;
                if !dir.is_some_and(|d| d.is_file(&format!("{dep}.json"))) {
                    return Err(TaskError::DependencyNotFound(dep.to_owned()));
                }
                if !task.blocked_by.iter().any(|b| b == dep) && self.depends_on(dir, dep, id)? {
                    return Err(TaskError::Cycle(id.to_owned(), dep.to_owned()));
                }
                if !task.blocked_by.iter().any(|b| b == dep) {
                    new.push(dep.to_owned());
                }
            }
            task.blocked_by.extend(new);
            if let Some(dir) = dir {
                Self::save_in(dir, &task)?;
            }
            Ok(task)
        })
    }

    /// Whether `from` depends on `target`, through `blockedBy` edges (the course's
    /// `_depends_on`: an iterative walk with a visited set).
    fn depends_on(&self, dir: Option<&StoreDir>, from: &str, target: &str) -> Result<bool, TaskError> {
        let mut pending = vec![from.to_owned()];
        let mut visited = std::collections::HashSet::new();
        while let Some(current) = pending.pop() {
            if current == target {
                return Ok(true);
            }
            if !visited.insert(current.clone()) {
                continue;
            }
            let id = check_id(&Value::String(current))?.to_owned();
            pending.extend(self.load_in(dir, &id)?.blocked_by);
        }
        Ok(false)
    }

    /// The dependencies of `task` that are not completed, in order; one that is missing or
    /// unreadable counts as not completed (the course's `incomplete_dependencies`).
    fn incomplete_in(&self, dir: Option<&StoreDir>, task: &Task) -> Vec<String> {
        task.blocked_by
            .iter()
            .filter(|dep| {
                !is_task_id(dep) || !matches!(self.load_in(dir, dep), Ok(t) if t.status == Status::Completed)
            })
            .cloned()
            .collect()
    }

    /// The dependencies of `task` that are not completed yet (missing ones included).
    pub fn incomplete_dependencies(&self, task: &Task) -> Vec<String> {
        let dir = self.open().ok().flatten();
        self.incomplete_in(dir.as_ref(), task)
    }

    /// Claims the task for `owner` (the course's `claim_task`): a pending task whose
    /// dependencies are all completed becomes `in_progress`, owned by `owner`. In s10 an owner may
    /// hold several tasks.
    ///
    /// # Errors
    /// The errors of [`TaskStore::load`]; [`TaskError::Io`] when the save fails.
    pub fn claim(&self, id: &Value, owner: &str) -> Result<Claim, TaskError> {
        let id = check_id(id)?;
        self.locked(|dir| {
            let mut task = self.load_in(dir, id)?;
            if task.status != Status::Pending {
                return Ok(Claim::NotPending(task));
            }
            let incomplete = self.incomplete_in(dir, &task);
            if !incomplete.is_empty() {
                return Ok(Claim::Blocked(incomplete));
            }
            task.owner = Some(owner.to_owned());
            task.status = Status::InProgress;
            if let Some(dir) = dir {
                Self::save_in(dir, &task)?;
            }
            Ok(Claim::Claimed(task))
        })
    }

    /// Completes the task `owner` holds (the course's `complete_task`), and names the tasks it
    /// made ready: pending, with dependencies, that could not start before and can now.
    ///
    /// # Errors
    /// The errors of [`TaskStore::load`] and [`TaskStore::list`]; [`TaskError::Io`] when the
    /// save fails.
    pub fn complete(&self, id: &Value, owner: &str) -> Result<Completion, TaskError> {
        let id = check_id(id)?;
        self.locked(|dir| {
            let mut task = self.load_in(dir, id)?;
            if task.status != Status::InProgress {
                return Ok(Completion::NotInProgress(task));
            }
            if task.owner.as_deref() != Some(owner) {
                return Ok(Completion::OwnedByOther(task));
            }
            let Some(dir) = dir else { return Ok(Completion::NotInProgress(task)) };
            let waiting = |tasks: Vec<Listed>| -> Vec<Task> {
                tasks
                    .into_iter()
                    .flatten()
                    .filter(|t| t.status == Status::Pending && !t.blocked_by.is_empty())
                    .filter(|t| self.incomplete_in(Some(dir), t).is_empty())
                    .collect()
            };
            let ready_before: Vec<String> = waiting(self.list_in(dir)?).into_iter().map(|t| t.id).collect();
            task.status = Status::Completed;
            Self::save_in(dir, &task)?;
            let unblocked = waiting(self.list_in(dir)?)
                .into_iter()
                .filter(|t| !ready_before.contains(&t.id))
                .map(|t| t.subject)
                .collect();
            Ok(Completion::Completed { task, unblocked })
        })
    }
}

/// The store inside [`TaskStore::transaction`], under its lock.
pub struct Locked<'a> {
    store: &'a TaskStore,
    dir: Option<&'a StoreDir>,
}

impl fmt::Debug for Locked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locked").field("store", self.store).finish_non_exhaustive()
    }
}

impl Locked<'_> {
    /// The store this transaction holds.
    pub fn store(&self) -> &TaskStore {
        self.store
    }

    /// The task `id`, as [`TaskStore::load`] reads it.
    ///
    /// # Errors
    /// As [`TaskStore::load`].
    pub fn load(&self, id: &Value) -> Result<Task, TaskError> {
        let id = check_id(id)?;
        self.store.load_in(self.dir, id)
    }

    /// Whether the task `id` has a file.
    ///
    /// # Errors
    /// [`TaskError::InvalidId`].
    pub fn exists(&self, id: &Value) -> Result<bool, TaskError> {
        let id = check_id(id)?;
        Ok(self.dir.is_some_and(|dir| dir.is_file(&format!("{id}.json"))))
    }

    /// Every task file, as [`TaskStore::list`] gives them.
    ///
    /// # Errors
    /// As [`TaskStore::list`].
    pub fn list(&self) -> Result<Vec<Listed>, TaskError> {
        match self.dir {
            Some(dir) => self.store.list_in(dir),
            None => Ok(Vec::new()),
        }
    }

    /// Saves `task` over its file, atomically (the course's `save_task`).
    ///
    /// # Errors
    /// [`TaskError::NotFound`] when the store has no folder (no task was ever created);
    /// [`TaskError::Io`] when the write fails, the file then unchanged.
    pub fn save(&self, task: &Task) -> Result<(), TaskError> {
        match self.dir {
            Some(dir) => TaskStore::save_in(dir, task),
            None => Err(TaskError::NotFound {
                id: task.id.clone(),
                path: self
                    .store
                    .workspace
                    .root()
                    .join(TASKS_DIR)
                    .join(format!("{}.json", task.id))
                    .display()
                    .to_string(),
            }),
        }
    }

    /// The dependencies of `task` that are not completed (missing ones count), in order.
    pub fn incomplete_dependencies(&self, task: &Task) -> Vec<String> {
        self.store.incomplete_in(self.dir, task)
    }

    /// The first task (in file-name order) that `owner` holds in progress (the course's
    /// `_owner_in_progress`). A file that cannot be read is skipped.
    ///
    /// # Errors
    /// As [`TaskStore::list`].
    pub fn owner_in_progress(&self, owner: &str) -> Result<Option<Task>, TaskError> {
        Ok(self
            .list()?
            .into_iter()
            .flatten()
            .find(|task| task.status == Status::InProgress && task.owner.as_deref() == Some(owner)))
    }
}

fn store_error(error: StoreError) -> TaskError {
    match error {
        StoreError::Escapes(_) => TaskError::Escapes,
        StoreError::Io { path, source } => TaskError::Io { what: format!("cannot open {path}"), source },
    }
}
