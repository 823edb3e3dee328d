//! End-to-end: the real `s07` binary (the s04 kernel and skill loading) against the loopback
//! Messages API server: the catalog in the first request's SYSTEM, `load_skill` carrying the
//! file, bad skills skipped with warnings, `/skills` and `/history`, the demo and `--example`
//! (COURSE §4.2).

use std::fs;
use std::path::Path;

use e2e::{MockServer, chapter, reply, result_batches, run_with_stdin, stderr, stdout};
use serde_json::json;

const CODE_REVIEW: &str = include_str!("../../chapters/s07/demo/skills/code-review/SKILL.md");
const DEMO_CATALOG: &str = "- code-review: Review code for bugs, regressions, and missing tests. Use it before a commit, or when asked to look over a change.\n\
     - commit-message: Write a git commit message that says what changed and why.\n\
     - python-tests: Write pytest tests for a Python module";

/// Writes `skills/FOLDER/SKILL.md` in `root`.
fn skill(root: &Path, folder: &str, content: &[u8]) {
    let dir = root.join("skills").join(folder);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("SKILL.md"), content).unwrap();
}

/// The course's SYSTEM for s07 in `root` with `catalog`.
fn system(root: &Path, catalog: &str) -> String {
    format!(
        "You are a coding agent at {}. Environment: Unix-like: the bash tool runs the system shell. Use tools to solve tasks. Act, don't explain.\n\nSkills available:\n{catalog}\n\nUse load_skill to read the full instructions when a skill applies.",
        root.canonicalize().unwrap().display()
    )
}

#[test]
fn the_first_request_holds_the_catalog_and_load_skill_returns_the_file_byte_for_byte() {
    let ws = tempfile::tempdir().unwrap();
    skill(ws.path(), "code-review", CODE_REVIEW.as_bytes());
    let chinese = "---\r\nname: 中文\r\ndescription: 处理中文内容\r\n---\r\n# 正文\r\n";
    skill(ws.path(), "zh", chinese.as_bytes());
    let server = MockServer::start(vec![
        reply::tool_uses(&[
            ("k1", "load_skill", json!({"name": "中文"})),
            ("k2", "load_skill", json!({"name": "nope"})),
        ]),
        reply::text("Loaded it."),
    ]);
    let out = chapter("s07", ws.path(), Some(&server.base_url()))
        .args(["-p", "use the chinese skill"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let requests = server.requests();
    for (i, request) in requests.iter().enumerate() {
        request.check_api_rules().unwrap_or_else(|e| panic!("request #{}: {e}", i + 1));
    }
    let catalog = "- code-review: Review code for bugs, regressions, and missing tests. Use it before a commit, or when asked to look over a change.\n- 中文: 处理中文内容";
    assert_eq!(requests[0].body["system"], system(ws.path(), catalog));
    assert!(
        !requests[0].body["system"].as_str().unwrap_or_default().contains("# Code review"),
        "no body in SYSTEM"
    );
    assert_eq!(
        requests[0].tool_names(),
        ["bash", "read_file", "write_file", "edit_file", "glob", "load_skill"]
    );
    let batch = &result_batches(&requests[1].body)[0];
    assert_eq!(batch[0]["content"], chinese, "the whole file, CRLF and front matter included");
    assert_eq!(batch[1]["content"], "Error: Unknown skill 'nope'. Available: code-review, 中文");
    assert_eq!(batch[1]["is_error"], true);
    let text = stdout(&out);
    assert!(text.contains("[Skills: 2 found in skills/: code-review, 中文]"), "{text}");
    assert!(text.contains(&format!("> load_skill: 中文, {} bytes\n", chinese.len())), "{text}");
    assert!(text.contains("> load_skill: nope, no such skill\n"), "{text}");
}

#[test]
fn bad_skills_are_skipped_with_a_warning_each_and_the_session_goes_on() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    skill(root, "good", b"---\nname: good\ndescription: A fine skill.\n---\nBody\n");
    skill(root, "bad-yaml", b"---\nname: bad\ndescription: [unclosed\n---\nBody\n");
    skill(root, "latin1", b"---\nname: caf\xe9\n---\n");
    skill(root, "huge", &vec![b'x'; 10 * 1024 * 1024]);
    skill(root, "laughs", b"---\na: &a [lol, lol]\nb: &b [*a, *a]\nname: *b\n---\n");
    skill(root, "zz-twin", b"---\nname: good\ndescription: The later twin.\n---\n");
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("SKILL.md"), "---\nname: evil\n---\n").unwrap();
    fs::create_dir_all(root.join("skills/link")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("SKILL.md"), root.join("skills/link/SKILL.md")).unwrap();
    let server = MockServer::start(vec![reply::text("ok")]);
    let out = chapter("s07", root, Some(&server.base_url())).args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let err = stderr(&out);
    for expected in [
        "warning: skills: skipped skills/bad-yaml/SKILL.md: its front matter is not valid YAML: ",
        "warning: skills: skipped skills/huge/SKILL.md: it is 10485760 bytes, over the 262144-byte limit for a SKILL.md (reading stopped there)",
        "warning: skills: skipped skills/latin1/SKILL.md: it is not UTF-8 text (the first invalid byte is at offset 13)",
        "warning: skills: skipped skills/laughs/SKILL.md: its front matter uses an anchor (&NAME) at line 2; anchors, aliases and tags are not allowed there",
        "warning: skills: skipped skills/link/SKILL.md: it resolves outside skills/",
        "warning: skills: skills/good/SKILL.md and skills/zz-twin/SKILL.md are both named 'good'; skills/zz-twin/SKILL.md wins",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
    assert!(
        stdout(&out).contains("[Skills: 1 found in skills/: good; 5 skipped, see the warnings]"),
        "{}",
        stdout(&out)
    );
    assert_eq!(server.requests()[0].body["system"], system(root, "- good: The later twin."));
}

#[test]
fn skills_shows_sizes_and_loads_and_history_shows_system_with_only_the_catalog() {
    let ws = tempfile::tempdir().unwrap();
    skill(ws.path(), "code-review", CODE_REVIEW.as_bytes());
    let server = MockServer::start(vec![
        reply::tool_uses(&[("k1", "load_skill", json!({"name": "code-review"}))]),
        reply::text("Following the checklist."),
    ]);
    let out = run_with_stdin(
        chapter("s07", ws.path(), Some(&server.base_url())),
        "/skills\nreview my change\n/skills\n/history\nq\n",
    );
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let text = stdout(&out);
    let size = format!("    {} bytes, skills/code-review/SKILL.md; ", CODE_REVIEW.len());
    assert!(text.contains(&format!("{size}not loaded yet")), "{text}");
    assert!(text.contains(&format!("{size}loaded once")), "{text}");
    let history = text.split("SYSTEM, ").nth(1).unwrap_or_else(|| panic!("no SYSTEM in /history: {text}"));
    let (system_part, messages) = history.split_once(" messages, as the next request sends them:").unwrap();
    assert!(
        system_part.contains("    Skills available:\n    - code-review: Review code for bugs"),
        "{system_part}"
    );
    assert!(!system_part.contains("# Code review"), "SYSTEM holds no body: {system_part}");
    assert!(messages.contains("tool_use k1 load_skill {\"name\":\"code-review\"}"), "{messages}");
    assert!(
        messages.contains("tool_result k1 is_error=false (34 lines)\n      | ---\n      | name: code-review\n      | description: |"),
        "{messages}"
    );
}

#[test]
fn the_demo_lists_loads_and_follows_a_skill() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s07", ws.path(), None).arg("--demo").output().unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[Skills: 3 found in skills/: code-review, commit-message, python-tests]"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "> load_skill: code-review, {} bytes\n---\nname: code-review",
            CODE_REVIEW.len()
        )),
        "{text}"
    );
    // Followed: the steps (the file, then its tests) and the report's shape.
    assert!(
        text.contains("> read_file: example/stats.py") && text.contains("> read_file: example/test_stats.py"),
        "{text}"
    );
    assert!(text.contains("Verdict: request changes\nBugs:\n- example/stats.py:12: median()"), "{text}");
    assert!(text.contains("Regressions:\n- none found\nMissing tests:\n"), "{text}");
    assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0, "the demo works in its own folder");
}

#[test]
fn example_seeds_the_demo_skills_into_a_fresh_folder() {
    let repo = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("ready")]);
    let out = chapter("s07", repo.path(), Some(&server.base_url()))
        .env("TMPDIR", tmp.path())
        .args(["--example", "-p", "which skills do you have?"])
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    let folder = fs::read_dir(tmp.path()).unwrap().next().unwrap().unwrap().path();
    assert_eq!(server.requests()[0].body["system"], system(&folder, DEMO_CATALOG));
    assert_eq!(fs::read_to_string(folder.join("skills/code-review/SKILL.md")).unwrap(), CODE_REVIEW);
    assert_eq!(fs::read_dir(repo.path()).unwrap().count(), 0, "nothing new in the current folder");
}
