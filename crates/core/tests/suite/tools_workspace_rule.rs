//! The workspace rule (course §1) as the model sees it: every escape attempt, through every tool
//! that takes a path, is refused with the exact `Error: Path escapes workspace: P` (P as given),
//! and nothing outside the workspace is created or changed.

use std::os::unix::fs::symlink;

use agent_core::dispatch::ToolOutcome;
use serde_json::{Value, json};

use super::tools_support::{Fixture, TestResult, tree};

/// A workspace full of traps, and a marker folder outside it.
struct Traps {
    fx: Fixture,
    outside: tempfile::TempDir,
}

impl Traps {
    fn new() -> std::io::Result<Self> {
        let fx = Fixture::new()?;
        let outside = tempfile::tempdir()?;
        let out = std::fs::canonicalize(outside.path())?;
        std::fs::write(out.join("secret.txt"), "secret\n")?;
        std::fs::create_dir(out.join("sub"))?;
        std::fs::write(out.join("sub/inner.txt"), "inner\n")?;

        std::fs::write(fx.path("file.txt"), "hello\n")?;
        std::fs::create_dir(fx.path("in_dir"))?;
        symlink(out.join("secret.txt"), fx.path("link_file"))?;
        symlink(&out, fx.path("link_dir"))?;
        symlink(out.join("sub"), fx.path("in_dir/link_sub"))?;
        symlink(out.join("missing.txt"), fx.path("dangling"))?;
        symlink("chain2", fx.path("chain1"))?;
        symlink(out.join("secret.txt"), fx.path("chain2"))?;
        // A relative symlink that climbs out: ../<outside folder name>/secret.txt
        let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        symlink(format!("../{name}/secret.txt"), fx.path("rel_link"))?;
        Ok(Self { fx, outside })
    }

    fn out(&self) -> String {
        std::fs::canonicalize(self.outside.path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

fn escapes(p: &str) -> ToolOutcome {
    ToolOutcome::error(format!("Error: Path escapes workspace: {p}"))
}

#[tokio::test]
async fn every_escape_attempt_is_refused_and_nothing_outside_changes() -> TestResult {
    let t = Traps::new()?;
    let out = t.out();
    let out_name = out.rsplit('/').next().unwrap_or_default().to_owned();
    let abs_secret = format!("{out}/secret.txt");
    let read = |p: &str| ("read_file", json!({ "path": p }));
    let write = |p: &str| ("write_file", json!({ "path": p, "content": "pwned" }));
    let edit = |p: &str| ("edit_file", json!({ "path": p, "old_text": "secret", "new_text": "pwned" }));
    let glob = |p: &str| ("glob", json!({ "pattern": p }));
    let parent_escape = format!("../{out_name}/secret.txt");

    // (what the case is, the call, the exact result)
    let cases: Vec<(&str, (&str, Value), ToolOutcome)> = vec![
        ("dot-dot", read("../x"), escapes("../x")),
        ("dot-dot after a folder", read("a/../../x"), escapes("a/../../x")),
        ("absolute system file", read("/etc/passwd"), escapes("/etc/passwd")),
        ("absolute path to a sibling temp folder", read(&abs_secret), escapes(&abs_secret)),
        (
            "write to an absolute path outside",
            write("/tmp/escape-attempt.txt"),
            escapes("/tmp/escape-attempt.txt"),
        ),
        ("edit through .. into the sibling folder", edit(&parent_escape), escapes(&parent_escape)),
        ("symlinked file to outside: read", read("link_file"), escapes("link_file")),
        ("symlinked file to outside: overwrite", write("link_file"), escapes("link_file")),
        ("symlinked file to outside: edit", edit("link_file"), escapes("link_file")),
        (
            "symlinked folder to outside: read inside it",
            read("link_dir/secret.txt"),
            escapes("link_dir/secret.txt"),
        ),
        (
            "symlinked folder to outside: NEW file inside it",
            write("link_dir/new.txt"),
            escapes("link_dir/new.txt"),
        ),
        (
            "symlinked folder to outside: new folder and file inside it",
            write("link_dir/newsub/new.txt"),
            escapes("link_dir/newsub/new.txt"),
        ),
        (
            "symlink within a folder being written",
            write("in_dir/link_sub/x.txt"),
            escapes("in_dir/link_sub/x.txt"),
        ),
        ("dangling symlink pointing outside: write", write("dangling"), escapes("dangling")),
        ("dangling symlink pointing outside: read", read("dangling"), escapes("dangling")),
        ("symlink chain ending outside: read", read("chain1"), escapes("chain1")),
        ("symlink chain ending outside: edit", edit("chain1"), escapes("chain1")),
        ("relative symlink climbing out", write("rel_link"), escapes("rel_link")),
        ("NUL byte: read", read("file.txt\0../../etc/passwd"), escapes("file.txt\0../../etc/passwd")),
        ("NUL byte: write", write("x\0y"), escapes("x\0y")),
        (
            "a missing folder, then .. back, then a symlinked folder: write",
            write("nope/../link_dir/pwned.txt"),
            escapes("nope/../link_dir/pwned.txt"),
        ),
        (
            "a missing folder, then .. back, then a symlinked folder: read",
            read("nope/../link_dir/secret.txt"),
            escapes("nope/../link_dir/secret.txt"),
        ),
        (
            "two missing folders, then .. twice, then a symlinked file: edit",
            edit("a/b/../../link_file"),
            escapes("a/b/../../link_file"),
        ),
        ("glob with ..", glob("../*"), escapes("../*")),
        (
            "glob with .. after a folder",
            glob("in_dir/../../*/secret.txt"),
            escapes("in_dir/../../*/secret.txt"),
        ),
        ("glob with an absolute pattern outside", glob(&format!("{out}/*")), escapes(&format!("{out}/*"))),
        ("glob through a symlinked folder", glob("link_dir/*"), escapes("link_dir/*")),
        ("glob through a nested symlinked folder", glob("in_dir/link_sub/**"), escapes("in_dir/link_sub/**")),
        (
            "a file used as a folder (not an escape: its own clear error)",
            write("file.txt/child"),
            ToolOutcome::error("Error: Not a folder: file.txt (in path file.txt/child)"),
        ),
    ];
    assert!(cases.len() >= 12);

    let outside_before = tree(t.outside.path())?;
    let inside_before = tree(t.fx.root())?;
    for (what, (tool, input), expected) in cases {
        let got = t.fx.call(tool, input.clone()).await;
        assert_eq!(got, expected, "{what}: {tool} {input}");
        assert_eq!(tree(t.outside.path())?, outside_before, "{what}: the outside folder changed");
        assert_eq!(tree(t.fx.root())?, inside_before, "{what}: the workspace changed");
    }
    assert!(!std::path::Path::new("/tmp/escape-attempt.txt").exists());
    Ok(())
}

#[tokio::test]
async fn paths_that_stay_inside_are_allowed() -> TestResult {
    let t = Traps::new()?;
    let root = t.fx.root().to_string_lossy().into_owned();
    std::fs::create_dir(t.fx.path("real"))?;
    symlink("real", t.fx.path("in_link"))?;
    let cases = [
        ("read_file", json!({"path": "in_dir/../file.txt"}), "hello"),
        ("read_file", json!({"path": format!("{root}/file.txt")}), "hello"),
        (
            "write_file",
            json!({"path": "in_link/new.txt", "content": "abc"}),
            "Wrote 3 bytes to in_link/new.txt",
        ),
        ("read_file", json!({"path": "real/new.txt"}), "abc"),
        ("glob", json!({"pattern": "in_link/*.txt"}), "in_link/new.txt"),
        ("glob", json!({"pattern": format!("{root}/real/*")}), "real/new.txt"),
        ("read_file", json!({"path": "nope/../file.txt"}), "hello"),
        ("read_file", json!({"path": "a/b/../../in_link/new.txt"}), "abc"),
    ];
    for (tool, input, expected) in cases {
        assert_eq!(t.fx.call(tool, input.clone()).await, ToolOutcome::ok(expected), "{tool} {input}");
    }
    assert!(t.fx.ws.contains("in_dir/../file.txt"));
    assert!(!t.fx.ws.contains("link_dir/x"));
    assert!(!t.fx.ws.contains("nope/../link_dir/x"), "a missing folder does not hide a symlink after ..");
    Ok(())
}
