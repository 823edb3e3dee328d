//! `glob` (course §3) as the model sees it: sorted, deduplicated workspace-relative paths; `**`
//! recursion; the 200 cap; `(no matches)`; symlinked folders never followed to outside.

use agent_core::dispatch::ToolOutcome;
use serde_json::json;

use super::tools_support::{Fixture, TestResult};

fn project() -> std::io::Result<Fixture> {
    let fx = Fixture::new()?;
    for f in ["src/b.rs", "src/a.rs", "src/sub/c.rs", "README.md", "docs/x.md", ".hidden/h.rs", ".git/config"]
    {
        let p = fx.path(f);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, "")?;
    }
    std::fs::write(fx.path(".gitignore"), "src/\n")?;
    Ok(fx)
}

#[tokio::test]
async fn patterns_match_relative_to_the_root_sorted_and_deduplicated() -> TestResult {
    let fx = project()?;
    let cases = [
        // `**` recurses, hidden folders and .gitignore'd files are searched (as Python's glob is
        // not git-aware), `.git/` is skipped.
        ("**/*.rs", ".hidden/h.rs\nsrc/a.rs\nsrc/b.rs\nsrc/sub/c.rs"),
        // `*` stops at `/`.
        ("src/*.rs", "src/a.rs\nsrc/b.rs"),
        ("*.md", "README.md"),
        ("**/*.md", "README.md\ndocs/x.md"),
        ("src/**", "src/a.rs\nsrc/b.rs\nsrc/sub\nsrc/sub/c.rs"),
        // Both alternatives match src/a.rs: listed once.
        ("{src/a.rs,src/*.rs}", "src/a.rs\nsrc/b.rs"),
        ("./src/../src/a.rs", "src/a.rs"),
        ("**/config", "(no matches)"),
        ("*.py", "(no matches)"),
        ("nowhere/*.rs", "(no matches)"),
    ];
    for (pattern, expected) in cases {
        assert_eq!(
            fx.call("glob", json!({ "pattern": pattern })).await,
            ToolOutcome::ok(expected),
            "{pattern}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn at_most_200_results_then_an_omission_line() -> TestResult {
    let fx = Fixture::new()?;
    for i in (0..250).rev() {
        std::fs::write(fx.path(&format!("f{i:03}.txt")), "")?;
    }
    let out = fx.call("glob", json!({"pattern": "*.txt"})).await;
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 201);
    let expected: Vec<String> = (0..200).map(|i| format!("f{i:03}.txt")).collect();
    assert_eq!(lines[..200], expected);
    assert_eq!(lines[200], "... (more matches omitted; narrow the pattern)");

    let exactly = fx.call("glob", json!({"pattern": "f[01]*.txt"})).await;
    assert_eq!(exactly.content.lines().count(), 200, "200 matches: no omission line");
    Ok(())
}

#[tokio::test]
async fn a_symlinked_folder_is_listed_but_never_followed_to_outside() -> TestResult {
    let fx = Fixture::new()?;
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret.txt"), "")?;
    std::os::unix::fs::symlink(outside.path(), fx.path("out_link"))?;
    std::fs::write(fx.path("mine.txt"), "")?;
    let cases =
        [("**/*", "mine.txt\nout_link"), ("**/secret.txt", "(no matches)"), ("*/*.txt", "(no matches)")];
    for (pattern, expected) in cases {
        assert_eq!(
            fx.call("glob", json!({ "pattern": pattern })).await,
            ToolOutcome::ok(expected),
            "{pattern}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_invalid_pattern_is_a_clear_error() -> TestResult {
    let fx = Fixture::new()?;
    let out = fx.call("glob", json!({"pattern": "src/[a"})).await;
    assert!(out.is_error);
    assert!(out.content.starts_with("Error: Invalid glob pattern src/[a: "), "{}", out.content);
    Ok(())
}

#[test]
fn glob_base_is_the_literal_prefix() {
    use agent_core::tools::glob_base;
    assert_eq!(glob_base("**/*.rs"), ".");
    assert_eq!(glob_base("../../etc/*.conf"), "../../etc");
    assert_eq!(glob_base("/etc/*"), "/etc");
    assert_eq!(glob_base("/*"), "/");
    assert_eq!(glob_base("src/main.rs"), "src/main.rs");
}
