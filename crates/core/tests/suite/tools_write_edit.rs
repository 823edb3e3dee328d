//! `write_file` and `edit_file` (course §1) as the model sees them.

use std::os::unix::fs::PermissionsExt;

use agent_core::dispatch::ToolOutcome;
use serde_json::json;

use super::tools_support::{Fixture, TestResult};

fn names_in(dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names)
}

#[tokio::test]
async fn write_creates_parent_folders_and_counts_utf8_bytes() -> TestResult {
    let fx = Fixture::new()?;
    let cases = [
        ("a/b/c.txt", "hello", "Wrote 5 bytes to a/b/c.txt"),
        ("héllo.txt", "héllo", "Wrote 6 bytes to héllo.txt"),
        ("empty.txt", "", "Wrote 0 bytes to empty.txt"),
    ];
    for (path, content, expected) in cases {
        let out = fx.call("write_file", json!({ "path": path, "content": content })).await;
        assert_eq!(out, ToolOutcome::ok(expected));
        assert_eq!(std::fs::read_to_string(fx.path(path))?, content);
    }
    // No temporary file is left behind.
    assert_eq!(names_in(&fx.path("a/b"))?, ["c.txt"]);
    Ok(())
}

#[tokio::test]
async fn write_overwrites_and_keeps_the_permissions() -> TestResult {
    let fx = Fixture::new()?;
    let path = fx.path("conf.txt");
    std::fs::write(&path, "old")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640))?;
    let out = fx.call("write_file", json!({"path": "conf.txt", "content": "new"})).await;
    assert_eq!(out, ToolOutcome::ok("Wrote 3 bytes to conf.txt"));
    assert_eq!(std::fs::read_to_string(&path)?, "new");
    assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o7777, 0o640);
    Ok(())
}

#[tokio::test]
async fn write_through_an_inside_symlink_replaces_the_target_and_keeps_the_link() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("real.txt"), "old")?;
    std::os::unix::fs::symlink("real.txt", fx.path("alias.txt"))?;
    let out = fx.call("write_file", json!({"path": "alias.txt", "content": "new"})).await;
    assert_eq!(out, ToolOutcome::ok("Wrote 3 bytes to alias.txt"));
    assert!(std::fs::symlink_metadata(fx.path("alias.txt"))?.file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(fx.path("real.txt"))?, "new");
    Ok(())
}

#[tokio::test]
async fn write_onto_a_folder_is_an_error() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::create_dir(fx.path("dir"))?;
    let out = fx.call("write_file", json!({"path": "dir", "content": "x"})).await;
    assert_eq!(out, ToolOutcome::error("Error: dir is a folder, not a file"));
    Ok(())
}

#[tokio::test]
async fn edit_replaces_the_first_occurrence_and_reports_misses() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("f.py"), "a = 1\nb = 2\n")?;
    std::fs::write(fx.path("many.txt"), "x x x")?;
    let edit = |path: &str, old: &str, new: &str| json!({"path": path, "old_text": old, "new_text": new});
    let cases = [
        ("hit", edit("f.py", "b = 2", "b = 3"), ToolOutcome::ok("Edited f.py"), "f.py", "a = 1\nb = 3\n"),
        (
            "miss",
            edit("f.py", "c = 4", "c = 5"),
            ToolOutcome::error("Error: text not found in f.py"),
            "f.py",
            "a = 1\nb = 3\n",
        ),
        (
            "empty old_text",
            edit("f.py", "", "boom"),
            ToolOutcome::error("Error: old_text must not be empty"),
            "f.py",
            "a = 1\nb = 3\n",
        ),
        (
            "several occurrences: the first is replaced, and the output says so",
            edit("many.txt", "x", "y"),
            ToolOutcome::ok("Edited many.txt (old_text occurs 3 times; replaced the first)"),
            "many.txt",
            "y x x",
        ),
        (
            "missing file",
            edit("gone.txt", "a", "b"),
            ToolOutcome::error("Error: File not found: gone.txt"),
            "many.txt",
            "y x x",
        ),
    ];
    for (what, input, expected, file, content) in cases {
        assert_eq!(fx.call("edit_file", input).await, expected, "{what}");
        assert_eq!(std::fs::read_to_string(fx.path(file))?, content, "{what}");
    }
    Ok(())
}

#[tokio::test]
async fn edit_keeps_the_permissions() -> TestResult {
    let fx = Fixture::new()?;
    let path = fx.path("run.sh");
    std::fs::write(&path, "echo hi\n")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750))?;
    let out = fx.call("edit_file", json!({"path": "run.sh", "old_text": "hi", "new_text": "there"})).await;
    assert_eq!(out, ToolOutcome::ok("Edited run.sh"));
    assert_eq!(std::fs::read_to_string(&path)?, "echo there\n");
    assert_eq!(std::fs::metadata(&path)?.permissions().mode() & 0o7777, 0o750);
    assert_eq!(names_in(fx.root())?, ["run.sh"]);
    Ok(())
}
