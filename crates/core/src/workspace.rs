//! The workspace rule, in one place (course §1).
//!
//! Every path the model gives a tool is resolved against the workspace root (`WORKDIR`), following
//! `..` and symlinks one component at a time, the way the kernel would. A path that lands outside
//! the root is refused with [`ToolError::PathEscapes`], whose `Display` is the course's
//! `Path escapes workspace: P` (P is the path exactly as the model gave it).
//!
//! What is refused, and why:
//! - `../x`, `a/../../x`: `..` climbs above the root;
//! - `/etc/passwd`, an absolute path to a sibling folder: absolute paths outside the root (an
//!   absolute path *inside* the root is fine);
//! - a symlink (file or folder, dangling or not, or a chain of them) whose target lies outside;
//! - a NUL byte: no file name can hold one, and C APIs would silently cut the path there.
//!
//! A path that runs *through* a file as if it were a folder (`file.txt/child`) is refused with a
//! different, clear error ([`ToolError::Failed`], `Not a folder: …`), because it does not escape.
//!
//! The result of a successful resolution is a [`WsPath`]: an absolute path with every symlink
//! already followed, checked to lie inside the root. It can only be built here, so a tool that
//! holds one cannot escape. (A process outside the agent could still swap a folder for a symlink
//! between resolution and use; the rule protects against the model, not against a concurrent
//! attacker on the same machine.)

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::{Component, Path, PathBuf};

use crate::dispatch::ToolError;

/// How many symlinks one resolution may follow before giving up (Linux's `MAXSYMLINKS` is 40).
const MAX_SYMLINK_HOPS: usize = 40;

/// The workspace root and the rule that keeps every tool inside it (course §1).
///
/// Cheap to clone: one `PathBuf`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

/// A path resolved by [`Workspace::locate`]: absolute, every symlink followed, inside the root.
///
/// Only this module can build one, so holding a `WsPath` means the workspace rule was applied.
/// Derefs to [`Path`]; `given()` is the path as the model wrote it, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsPath {
    abs: PathBuf,
    given: String,
    exists: bool,
}

impl WsPath {
    /// The absolute, symlink-free path inside the workspace.
    pub fn as_path(&self) -> &Path {
        &self.abs
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

impl Workspace {
    /// A workspace rooted at `root`, which is canonicalised (made absolute, symlinks followed).
    ///
    /// # Errors
    /// The `io::Error` of [`std::fs::canonicalize`]: the root does not exist or cannot be read.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotADirectory, "workspace root is not a folder"));
        }
        Ok(Self { root })
    }

    /// The canonical root (`WORKDIR`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path`: relative to the root, following `..` and every symlink. The same walk
    /// serves reading and writing: a new file inside a symlinked folder that points outside is
    /// refused before anything is created.
    ///
    /// # Errors
    /// [`ToolError::PathEscapes`]`(path)` when it lands outside the root or holds a NUL byte;
    /// [`ToolError::Failed`] when it runs through a file as if it were a folder, loops through
    /// symlinks, or a folder on the way cannot be read.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        self.locate(path).map(PathBuf::from)
    }

    /// Whether `path` stays inside the workspace, i.e. the rule would not refuse it as an escape.
    /// Used by the permission hook (course §3: "A file path outside WORKDIR → ask").
    pub fn contains(&self, path: &str) -> bool {
        !matches!(self.locate(path), Err(ToolError::PathEscapes(_)))
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
    pub fn locate(&self, path: &str) -> Result<WsPath, ToolError> {
        let escapes = || ToolError::PathEscapes(path.to_owned());
        if path.contains('\0') {
            return Err(escapes());
        }
        let (abs, exists) = self.walk(path)?;
        if !abs.starts_with(&self.root) {
            return Err(escapes());
        }
        Ok(WsPath { abs, given: path.to_owned(), exists })
    }

    /// The walk behind [`Workspace::locate`]: returns the symlink-free absolute path and whether
    /// its last component exists. Does not check containment.
    fn walk(&self, given: &str) -> Result<(PathBuf, bool), ToolError> {
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
            match std::fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(ToolError::Failed(format!("Too many levels of symlinks: {given}")));
                    }
                    let target = std::fs::read_link(&next)
                        .map_err(|e| ToolError::Failed(format!("Cannot read symlink in {given}: {e}")))?;
                    push_components(&mut todo, &target);
                    if target.is_absolute() {
                        here = PathBuf::from("/");
                    }
                }
                Ok(meta) if meta.is_dir() => here = next,
                Ok(_) => {
                    // A file (or fifo, socket, device): it must be the last component.
                    if todo.iter().any(|p| p != ".") {
                        return Err(ToolError::Failed(format!(
                            "Not a folder: {} (in path {given})",
                            display_rel(&self.root, &next)
                        )));
                    }
                    here = next;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    missing = 1;
                    here = next;
                }
                Err(e) => return Err(ToolError::Failed(format!("Cannot access {given}: {e}"))),
            }
        }
        Ok((here, missing == 0))
    }
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
        assert_eq!(ws.resolve("../x"), Err(ToolError::PathEscapes("../x".into())));
        assert_eq!(ws.resolve("a\0b"), Err(ToolError::PathEscapes("a\0b".into())));
        assert!(
            matches!(ws.resolve("a/f.txt/x"), Err(ToolError::Failed(m)) if m.starts_with("Not a folder"))
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
        assert!(matches!(ws.resolve("a"), Err(ToolError::Failed(m)) if m.starts_with("Too many levels")));
        Ok(())
    }
}
