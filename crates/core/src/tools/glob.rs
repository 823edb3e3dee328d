//! `glob`: find files by pattern (course §3, s05).
//!
//! Input `{"pattern": string}`, matched against workspace-relative paths with `/`: `*`, `?` and
//! `[…]` stay within one path component, `**` recurses (zero or more folders), `{a,b}` is an
//! alternation, `\` escapes. Like Python's `glob`, everything under the root is searched (no
//! `.gitignore` or hidden-file filters), except that `.git/` folders are skipped below the
//! starting folder. Symlinks are listed but never followed during the walk, so no result lies
//! outside the workspace. A literal leading folder (`src/` in `src/**/*.rs`) is resolved by the
//! workspace rule, so a symlinked folder inside the workspace can be named explicitly, while one
//! pointing outside is refused.
//!
//! Output: the matching paths (files and folders), sorted and deduplicated, one a line; at most
//! 200, then `... (more matches omitted; narrow the pattern)`; `(no matches)` when none (course
//! §3). Memory stays bounded: only the 201 smallest paths are kept while walking.
//!
//! Errors (`Error: …`): `Path escapes workspace: PATTERN` for an absolute pattern outside the root
//! (an absolute pattern inside the root is made relative), a `..` that climbs above the root, a
//! NUL byte, or a literal leading folder that resolves outside; `Invalid glob pattern PATTERN: …`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use globset::GlobBuilder;
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::json;

use super::spec;
use crate::dispatch::{Subject, Tool, ToolError, TypedTool, run_blocking};
use crate::messages::ToolSpec;
use crate::workspace::{Workspace, WorkspaceError};

/// The most paths `glob` lists (course §3).
pub const MAX_GLOB_RESULTS: usize = 200;

/// The `glob` tool (course §3): `Find files matching a glob pattern; ** matches recursively.`,
/// input `pattern`. See the module docs for the output and errors.
pub fn glob(ws: &Workspace) -> impl Tool + use<> {
    Glob(ws.clone())
}

/// The `glob` tool's input.
#[derive(Deserialize)]
struct Args {
    pattern: String,
}

/// `glob` bound to its workspace.
struct Glob(Workspace);

impl TypedTool for Glob {
    type Args = Args;

    fn spec(&self) -> ToolSpec {
        spec(
            "glob",
            "Find files matching a glob pattern; ** matches recursively.",
            json!({"pattern": {"type": "string"}}),
            &["pattern"],
        )
    }

    fn subject(&self, args: &Args) -> Subject {
        Subject::PathPattern { pattern: args.pattern.clone(), base: glob_base(&args.pattern) }
    }

    async fn run(self: Arc<Self>, args: Args) -> Result<String, ToolError> {
        run_blocking("glob", move || find(&self.0, &args.pattern)).await
    }
}

/// Whether a pattern component holds glob syntax.
fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// How many of `parts` (a pattern's components) come before the first one with glob syntax: the
/// literal leading folders the walk can start from. The one rule that both the walk and the
/// permission check ([`glob_base`]) follow.
fn literal_prefix(parts: &[&str]) -> usize {
    parts.iter().take_while(|p| !is_glob(p)).count()
}

/// The literal folder a glob pattern starts from, as the model wrote it: the components before
/// the first one with glob syntax (`../../etc/*.conf` → `../../etc`, `**/*.rs` → `.`,
/// `/*` → `/`). The permission check asks the workspace rule about this folder.
pub fn glob_base(pattern: &str) -> String {
    let parts: Vec<&str> = pattern.split('/').collect();
    let base = parts[..literal_prefix(&parts)].join("/");
    if base.is_empty() && pattern.starts_with('/') {
        "/".to_string()
    } else if base.is_empty() {
        ".".to_string()
    } else {
        base
    }
}

/// Runs one glob; blocking.
fn find(ws: &Workspace, pattern: &str) -> Result<String, ToolError> {
    let escapes = || ToolError::PathEscapes(pattern.to_owned());
    if pattern.contains('\0') {
        return Err(escapes());
    }
    // An absolute pattern is accepted only inside the root, and made relative.
    let relative = if pattern.starts_with('/') {
        let root = ws.root().to_string_lossy();
        match pattern.strip_prefix(root.as_ref()) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.to_owned(),
            _ => return Err(escapes()),
        }
    } else {
        pattern.to_owned()
    };
    // Lexical normalisation: drop `.` and empty components; `..` must not climb above the root.
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop().ok_or_else(escapes)?;
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Ok("(no matches)".to_owned());
    }
    let glob = GlobBuilder::new(&parts.join("/"))
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ToolError::Failed(format!("Invalid glob pattern {pattern}: {}", e.kind())))?
        .compile_matcher();

    // Walk only below the literal leading folders (never the last component).
    let literal = literal_prefix(&parts[..parts.len() - 1]);
    let prefix = parts[..literal].join("/");
    let start = match ws.locate(&prefix) {
        Ok(p) if p.is_dir() => p,
        Ok(_) => return Ok("(no matches)".to_owned()),
        Err(WorkspaceError::Escapes(_)) => return Err(escapes()),
        Err(_) => return Ok("(no matches)".to_owned()),
    };
    let rest = &parts[literal..];
    let max_depth = if rest.iter().any(|p| p.contains("**")) { None } else { Some(rest.len()) };

    let walk = WalkBuilder::new(start.as_path())
        .standard_filters(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(|e| !(e.depth() > 0 && e.file_name() == ".git"))
        .build();
    let mut found: BTreeSet<String> = BTreeSet::new();
    let mut more = false;
    for entry in walk.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let Ok(below) = entry.path().strip_prefix(start.as_path()) else { continue };
        let rel = join_rel(&prefix, below);
        if !glob.is_match(&rel) {
            continue;
        }
        found.insert(rel);
        if found.len() > MAX_GLOB_RESULTS {
            found.pop_last();
            more = true;
        }
    }
    if found.is_empty() {
        return Ok("(no matches)".to_owned());
    }
    let mut out = found.into_iter().collect::<Vec<_>>().join("\n");
    if more {
        out.push_str("\n... (more matches omitted; narrow the pattern)");
    }
    Ok(out)
}

/// `prefix/below` with `/` separators (`below` alone when the prefix is empty).
fn join_rel(prefix: &str, below: &Path) -> String {
    let below = below.to_string_lossy();
    if prefix.is_empty() { below.into_owned() } else { format!("{prefix}/{below}") }
}
