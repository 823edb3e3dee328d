//! Shared helpers for the `tools_*` integration tests: a real workspace in a temp folder, calls
//! through `DispatchMap::dispatch` (so a test sees exactly what the model sees), a recursive
//! snapshot of a folder, and a `/proc` scan for a process group.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_core::dispatch::{DispatchMap, ToolOutcome};
use agent_core::messages::ToolUseBlock;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use serde_json::Value;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A workspace in a fresh temp folder, with every tool registered.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub ws: Workspace,
    pub map: DispatchMap,
}

impl Fixture {
    pub fn new() -> std::io::Result<Self> {
        Self::with_options(&ToolOptions::default())
    }

    pub fn with_options(opts: &ToolOptions) -> std::io::Result<Self> {
        let dir = tempfile::tempdir()?;
        let ws = Workspace::new(dir.path())?;
        let map = tools::all(&ws, opts);
        Ok(Self { dir, ws, map })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        self.ws.root()
    }

    /// `root/rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// One `tool_use` through the dispatch map.
    pub async fn call(&self, name: &str, input: Value) -> ToolOutcome {
        self.map.dispatch(&tool_use(name, input)).await
    }
}

/// A `tool_use` block as the loop receives it.
pub fn tool_use(name: &str, input: Value) -> ToolUseBlock {
    agent_core::test_util::tool_use_block("toolu_test", name, input)
}

/// One entry of [`tree`]: kind (`file`, `dir`, `link`), content (file bytes or link target), mode.
pub type Entry = (String, Vec<u8>, u32);

/// What a folder holds, recursively: relative path → kind and content (file bytes, symlink
/// target, or `dir`) plus mode bits. Symlinks are recorded, not followed.
pub fn tree(root: &Path) -> std::io::Result<BTreeMap<PathBuf, Entry>> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)?;
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            let mode = meta.permissions().mode();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path)?;
                out.insert(rel, ("link".into(), target.to_string_lossy().as_bytes().to_vec(), mode));
            } else if meta.is_dir() {
                out.insert(rel, ("dir".into(), Vec::new(), mode));
                stack.push(path);
            } else {
                out.insert(rel, ("file".into(), std::fs::read(&path)?, mode));
            }
        }
    }
    Ok(out)
}

/// Live (not zombie) processes whose process group is `pgid`, from `/proc/*/stat`.
pub fn live_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces or parens, so split after the last ')'.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let (Some(state), Some(pgrp)) = (fields.first(), fields.get(2)) else { continue };
        if *state != "Z" && pgrp.parse::<i32>() == Ok(pgid) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `within` for the group to have no live member (SIGKILL is delivered
/// asynchronously); returns what is still alive then.
pub fn wait_group_gone(pgid: i32, within: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let live = live_members(pgid);
        if live.is_empty() || start.elapsed() > within {
            return live;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
