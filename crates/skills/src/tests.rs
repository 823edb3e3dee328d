use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_core::agent::Agent;
use agent_core::events::Event;
use agent_core::test_util::{EventLog, ScriptedModel, text, tool_uses};
use agent_core::tools::{self, ToolOptions};
use serde_json::json;

use super::*;

const CODE_REVIEW: &str = "---\nname: code-review\ndescription: |\n  Review code for bugs,\n  regressions, and missing tests.\n---\n# Code review\n\nSECRET-BODY-MARKER: read every changed line.\n";

/// A workspace (temporary folder) with `skills/NAME/SKILL.md` for each (folder, content).
fn workspace_with(skills: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for (folder, content) in skills {
        let folder = dir.path().join(SKILLS_DIR).join(folder);
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join(MANIFEST), content).unwrap();
    }
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

fn scan(skills: &[(&str, &[u8])]) -> SkillLoader {
    let (_dir, ws) = workspace_with(skills);
    SkillLoader::scan(&ws)
}

/// The problems of the skipped manifests, by manifest.
fn skipped(loader: &SkillLoader) -> Vec<(String, Problem)> {
    loader
        .warnings()
        .iter()
        .filter_map(|w| match w {
            Warning::Skipped { manifest, problem } => Some((manifest.clone(), problem.clone())),
            Warning::SameName { .. } => None,
        })
        .collect()
}

#[test]
fn a_multi_line_block_description_gives_the_courses_catalog_line() {
    let loader = scan(&[("code-review", CODE_REVIEW.as_bytes())]);
    assert_eq!(loader.catalog(), "- code-review: Review code for bugs, regressions, and missing tests.");
    assert!(loader.warnings().is_empty(), "{:?}", loader.warnings());
}

#[test]
fn system_holds_the_name_but_not_the_body() {
    let loader = scan(&[("code-review", CODE_REVIEW.as_bytes())]);
    let section = loader.system_section();
    assert_eq!(
        section,
        "Skills available:\n- code-review: Review code for bugs, regressions, and missing tests.\n\nUse load_skill to read the full instructions when a skill applies."
    );
    assert!(section.contains("code-review"));
    assert!(!section.contains("SECRET-BODY-MARKER"), "{section}");
    assert!(!section.contains("# Code review"), "{section}");
}

#[test]
fn load_skill_returns_the_manifest_byte_for_byte() {
    // CRLF, a BOM-free UTF-8 body, trailing blanks and no final newline all survive.
    let raw = "---\r\nname: exact\r\n---\r\n# Exact  \r\n\r\n中文 body\t\n\n  trailing";
    let loader = scan(&[("exact", raw.as_bytes())]);
    assert_eq!(loader.load_skill("exact"), Ok(raw));
    let loader = scan(&[("code-review", CODE_REVIEW.as_bytes())]);
    assert_eq!(loader.load_skill("code-review"), Ok(CODE_REVIEW));
    assert_eq!(loader.times_loaded("code-review"), 1);
}

#[test]
fn an_unknown_name_gives_the_courses_error_with_the_available_names() {
    let loader = scan(&[("b", b"# B"), ("a", b"# A")]);
    let err = loader.load_skill("nope").unwrap_err();
    assert_eq!(err.to_string(), "Unknown skill 'nope'. Available: a, b");
    // Exact-name lookup: no trimming, no case folding.
    assert!(loader.load_skill(" a").is_err());
    assert!(loader.load_skill("A").is_err());
    let empty = scan(&[]);
    assert_eq!(empty.load_skill("a").unwrap_err().to_string(), "Unknown skill 'a'. Available: none");
    assert_eq!(empty.catalog(), "(no skills found)");
}

#[test]
fn a_utf8_description_is_kept() {
    let loader = scan(&[("zh", "---\nname: 中文\ndescription: 处理中文内容\n---\n正文\n".as_bytes())]);
    assert_eq!(loader.catalog(), "- 中文: 处理中文内容");
    assert_eq!(
        loader.load_skill("中文").map(str::len),
        Ok("---\nname: 中文\ndescription: 处理中文内容\n---\n正文\n".len())
    );
}

#[test]
fn the_tools_are_the_five_base_tools_then_load_skill() {
    let (_dir, ws) = workspace_with(&[]);
    let loader = SkillLoader::scan(&ws);
    let map = tools::all(&ws, &ToolOptions::default()).with(loader.load_skill_tool());
    assert_eq!(map.names(), ["bash", "read_file", "write_file", "edit_file", "glob", "load_skill"]);
    let spec = &map.specs()[5];
    assert_eq!(spec.description, "Load the full SKILL.md content by skill name.");
    assert_eq!(
        spec.input_schema,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
}

#[test]
fn the_fallbacks_of_name_and_description() {
    let loader = scan(&[
        // A missing description: the body's first line, without its #s.
        ("no-desc", b"---\nname: given\n---\n\n#  First   line\nsecond\n"),
        // An empty body: "".
        ("empty-body", b"---\nname: empty\n---\n"),
        // A non-string name and description: the folder's name and the body's first line.
        ("bad-name", b"---\nname: [bad]\ndescription: 42\n---\nUse me for X\n"),
        // A blank name: the folder's name.
        ("blank-name", b"---\nname: '   '\ndescription: '  spaced   out  '\n---\nbody\n"),
        // No front matter at all.
        ("plain", b"# Plain skill\nbody\n"),
        // Not a mapping: counts as empty.
        ("scalar", b"---\njust text\n---\nScalar body\n"),
        // A description written as a heading loses its #s too (the course's `lstrip("# ")`).
        ("heading", b"---\nname: heading\ndescription: '# Heading   text'\n---\nbody\n"),
    ]);
    assert_eq!(
        loader.catalog(),
        "- bad-name: Use me for X\n- blank-name: spaced out\n- empty: \n- heading: Heading text\n- given: First line\n- plain: Plain skill\n- scalar: Scalar body"
    );
    assert!(loader.warnings().is_empty(), "{:?}", loader.warnings());
}

#[test]
fn skills_are_sorted_by_folder_and_only_one_level_deep() {
    let (dir, ws) = workspace_with(&[("zeta", b"# Z"), ("alpha", b"# A"), ("Mid", b"# M")]);
    // Deeper manifests, loose files and folders without a manifest are not skills.
    fs::create_dir_all(dir.path().join("skills/alpha/nested")).unwrap();
    fs::write(dir.path().join("skills/alpha/nested/SKILL.md"), "# nested").unwrap();
    fs::write(dir.path().join("skills/SKILL.md"), "# loose").unwrap();
    fs::write(dir.path().join("skills/notes.txt"), "x").unwrap();
    fs::create_dir_all(dir.path().join("skills/empty")).unwrap();
    let loader = SkillLoader::scan(&ws);
    assert_eq!(loader.names(), ["Mid", "alpha", "zeta"]);
    assert!(loader.warnings().is_empty(), "{:?}", loader.warnings());
}

#[test]
fn a_symlinked_manifest_outside_skills_is_not_registered() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("SKILL.md"), "---\nname: evil\n---\n# Evil\n").unwrap();
    let (dir, ws) = workspace_with(&[("good", b"# Good")]);
    let skills = dir.path().join(SKILLS_DIR);
    // A manifest symlinked to a file outside the workspace.
    fs::create_dir_all(skills.join("file-link")).unwrap();
    symlink(outside.path().join("SKILL.md"), skills.join("file-link/SKILL.md")).unwrap();
    // A relative symlink that climbs out of skills/ (still inside the workspace).
    fs::write(dir.path().join("README.md"), "# Not a skill").unwrap();
    fs::create_dir_all(skills.join("climb")).unwrap();
    symlink("../../README.md", skills.join("climb/SKILL.md")).unwrap();
    // A skill folder symlinked outside.
    symlink(outside.path(), skills.join("dir-link")).unwrap();
    // A relative symlink that stays inside skills/ works.
    fs::create_dir_all(skills.join("alias")).unwrap();
    fs::write(skills.join("shared.md"), "---\nname: shared\n---\n# Shared\n").unwrap();
    symlink("../shared.md", skills.join("alias/SKILL.md")).unwrap();
    // An absolute symlink is refused even when it points inside.
    fs::create_dir_all(skills.join("absolute")).unwrap();
    symlink(skills.join("good/SKILL.md"), skills.join("absolute/SKILL.md")).unwrap();

    let loader = SkillLoader::scan(&ws);
    assert_eq!(loader.names(), ["shared", "good"]);
    assert!(!loader.catalog().contains("Evil") && !loader.catalog().contains("Not a skill"));
    let outside_skills: Vec<String> =
        skipped(&loader).into_iter().filter(|(_, p)| *p == Problem::OutsideSkills).map(|(m, _)| m).collect();
    assert_eq!(
        outside_skills,
        [
            "skills/absolute/SKILL.md",
            "skills/climb/SKILL.md",
            "skills/dir-link/SKILL.md",
            "skills/file-link/SKILL.md"
        ]
    );
    assert!(
        loader.warnings()[0].to_string().contains("resolves outside skills/"),
        "{}",
        loader.warnings()[0]
    );
}

#[test]
fn a_skills_folder_that_leads_outside_the_workspace_gives_no_skills() {
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir_all(outside.path().join("evil")).unwrap();
    fs::write(outside.path().join("evil/SKILL.md"), "# Evil").unwrap();
    let dir = tempfile::tempdir().unwrap();
    symlink(outside.path(), dir.path().join(SKILLS_DIR)).unwrap();
    let loader = SkillLoader::scan(&Workspace::new(dir.path()).unwrap());
    assert!(loader.skills().is_empty());
    assert_eq!(skipped(&loader), [("skills/".to_owned(), Problem::OutsideWorkspace)]);
}

#[test]
fn the_scan_reads_through_its_handle_so_a_swapped_folder_cannot_redirect_it() {
    // The handle on skills/ is taken first; then skills/ is renamed away and a symlink to a
    // folder outside takes its place. Reading through the handle still reads the real folder.
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir_all(outside.path().join("evil")).unwrap();
    fs::write(outside.path().join("evil/SKILL.md"), "# Evil").unwrap();
    let (dir, ws) = workspace_with(&[("good", b"# Good")]);
    let handle = ws.dir().open_dir(SKILLS_DIR).unwrap();
    fs::rename(dir.path().join(SKILLS_DIR), dir.path().join("moved")).unwrap();
    symlink(outside.path(), dir.path().join(SKILLS_DIR)).unwrap();
    let mut scan = Scan::default();
    scan.read_all(&handle);
    let names: Vec<&str> = scan.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good"]);
    // And a fresh scan refuses the symlink.
    assert!(SkillLoader::scan(&ws).skills().is_empty());
}

#[test]
fn invalid_yaml_is_skipped_with_a_warning_that_says_where() {
    let loader =
        scan(&[("bad", b"---\nname: bad\ndescription: [unclosed\n---\nbody\n"), ("good", b"# Good")]);
    assert_eq!(loader.names(), ["good"]);
    let warning = loader.warnings()[0].to_string();
    assert!(
        warning.starts_with("skills: skipped skills/bad/SKILL.md: its front matter is not valid YAML: "),
        "{warning}"
    );
    assert!(warning.contains("(line "), "{warning}");
    assert!(warning.ends_with("fix it and start again"), "{warning}");
}

#[test]
fn unsafe_yaml_is_skipped_with_a_warning() {
    let bomb = "---\na: &a [lol, lol, lol]\nb: &b [*a, *a, *a]\nname: *b\n---\nbody\n";
    let loader = scan(&[("bomb", bomb.as_bytes()), ("tagged", b"---\nname: !!binary aGk=\n---\n")]);
    assert!(loader.skills().is_empty());
    let problems = skipped(&loader);
    assert_eq!(problems.len(), 2);
    assert!(
        problems.iter().all(|(_, p)| matches!(p, Problem::FrontMatter(YamlError::Refused { .. }))),
        "{problems:?}"
    );
}

#[test]
fn a_non_utf8_manifest_is_skipped_with_a_warning() {
    let loader = scan(&[("latin1", b"---\nname: caf\xe9\n---\n"), ("good", b"# Good")]);
    assert_eq!(loader.names(), ["good"]);
    assert_eq!(skipped(&loader), [("skills/latin1/SKILL.md".to_owned(), Problem::NotUtf8 { at: 13 })]);
    assert!(loader.warnings()[0].to_string().contains("not UTF-8"), "{}", loader.warnings()[0]);
}

#[test]
fn a_ten_megabyte_manifest_is_skipped_after_reading_at_most_the_cap() {
    let big = vec![b'a'; 10 * 1024 * 1024];
    let loader = scan(&[("big", &big), ("good", b"# Good")]);
    assert_eq!(loader.names(), ["good"]);
    assert_eq!(
        skipped(&loader),
        [("skills/big/SKILL.md".to_owned(), Problem::TooLarge { size: 10 * 1024 * 1024 })]
    );
    let warning = loader.warnings()[0].to_string();
    assert!(
        warning.contains("over the 262144-byte limit") && warning.contains("reading stopped there"),
        "{warning}"
    );
    // Exactly at the cap is fine.
    let at_cap = vec![b'a'; MAX_MANIFEST_BYTES];
    assert_eq!(scan(&[("edge", &at_cap)]).names(), ["edge"]);
}

#[test]
fn reading_is_capped_whatever_the_source() {
    // An endless reader: without the cap this would never return.
    assert_eq!(read_capped(io::repeat(b'x'), 1024).unwrap(), None);
    assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), Some(b"abc".to_vec()));
    assert_eq!(read_capped(&b"abcd"[..], 3).unwrap(), None);
}

#[test]
fn a_name_two_skills_share_keeps_the_later_folder_and_says_so() {
    let loader = scan(&[
        ("a-first", b"---\nname: twin\ndescription: first\n---\n"),
        ("b-other", b"# Other"),
        ("c-second", b"---\nname: twin\ndescription: second\n---\n"),
    ]);
    // The place of the first, the content of the last (the course's dict).
    assert_eq!(loader.catalog(), "- twin: second\n- b-other: Other");
    assert_eq!(
        loader.warnings(),
        [Warning::SameName {
            name: "twin".into(),
            kept: "skills/c-second/SKILL.md".into(),
            dropped: "skills/a-first/SKILL.md".into(),
        }]
    );
    let warning = loader.warnings()[0].to_string();
    assert!(warning.contains("skills/c-second/SKILL.md wins"), "{warning}");
}

#[test]
fn a_fifo_or_a_folder_in_place_of_the_manifest_is_skipped_without_waiting() {
    let (dir, ws) = workspace_with(&[("good", b"# Good")]);
    let fifo = dir.path().join("skills/fifo");
    fs::create_dir_all(&fifo).unwrap();
    let made = std::process::Command::new("mkfifo").arg(fifo.join(MANIFEST)).status().unwrap();
    assert!(made.success());
    fs::create_dir_all(dir.path().join("skills/folder/SKILL.md")).unwrap();
    let started = Instant::now();
    let loader = SkillLoader::scan(&ws);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(loader.names(), ["good"]);
    let problems: Vec<Problem> = skipped(&loader).into_iter().map(|(_, p)| p).collect();
    assert_eq!(problems, [Problem::NotAFile, Problem::NotAFile]);
}

#[test]
fn no_skills_folder_means_an_empty_catalog_and_a_line_that_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let loader = SkillLoader::scan(&Workspace::new(dir.path()).unwrap());
    assert_eq!(loader.catalog(), NO_SKILLS);
    assert_eq!(loader.summary(), "[Skills: none, no skills/ folder in the workspace]");
    assert!(loader.warnings().is_empty());
    fs::write(dir.path().join(SKILLS_DIR), "not a folder").unwrap();
    let loader = SkillLoader::scan(&Workspace::new(dir.path()).unwrap());
    assert_eq!(skipped(&loader), [("skills/".to_owned(), Problem::NotAFolder)]);
}

#[test]
fn the_start_line_gives_the_number_and_the_names_and_warnings_follow() {
    let loader = scan(&[("a", b"# A"), ("b", b"# B"), ("bad", b"\xff")]);
    let sink = EventLog::new();
    loader.report(&*sink);
    let lines = sink.lines();
    assert_eq!(lines[0], "[Skills: 2 found in skills/: a, b; 1 skipped, see the warnings]");
    assert!(lines[1].starts_with("skills: skipped skills/bad/SKILL.md: it is not UTF-8"), "{lines:?}");
}

#[test]
fn the_skills_view_shows_each_skills_size_file_and_loads() {
    let loader = scan(&[("code-review", CODE_REVIEW.as_bytes()), ("plain", b"# Plain")]);
    let _ = loader.load_skill("plain");
    let _ = loader.load_skill("plain");
    let view = loader.skills_view();
    assert!(view.starts_with("2 skills, scanned once at start from skills/;"), "{view}");
    assert!(
        view.contains(&format!(
            "    {} bytes, skills/code-review/SKILL.md; not loaded yet",
            CODE_REVIEW.len()
        )),
        "{view}"
    );
    assert!(view.contains("- plain: Plain\n    7 bytes, skills/plain/SKILL.md; loaded 2 times"), "{view}");
}

/// The loop end to end with a scripted model: the first request's SYSTEM holds the catalog and
/// not the body; the `load_skill` result carries the file; the tool line shows name and size.
#[tokio::test]
async fn a_turn_sees_the_catalog_first_and_the_file_on_demand() {
    let (_dir, ws) = workspace_with(&[("code-review", CODE_REVIEW.as_bytes())]);
    let loader = SkillLoader::scan(&ws);
    let model = Arc::new(ScriptedModel::new(vec![
        tool_uses(&[
            ("t1", "load_skill", json!({"name": "code-review"})),
            ("t2", "load_skill", json!({"name": "nope"})),
        ]),
        text("Loaded."),
    ]));
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let mut agent = Agent::builder(model.clone(), "m")
        .system(format!("base\n\n{}", loader.system_section()))
        .tools(tools::all(&ws, &ToolOptions::default()).with(loader.load_skill_tool()))
        .events(Arc::new(move |e: &Event<'_>| {
            if let Event::ToolCall { name, input, .. } = e {
                seen.lock().unwrap().push(format!("{name}: {}", input.unwrap_or_default()));
            }
        }))
        .build();
    let mut history = Vec::new();
    agent.run_turn(&mut history, "review please").await.unwrap();
    let requests = model.requests();
    assert!(
        requests[0].system.contains("- code-review: Review code for bugs, regressions, and missing tests.")
    );
    assert!(!requests[0].system.contains("SECRET-BODY-MARKER"));
    let results = serde_json::to_value(&requests[1].messages[2]).unwrap();
    assert_eq!(results["content"][0]["content"], CODE_REVIEW);
    assert_eq!(results["content"][1]["content"], "Error: Unknown skill 'nope'. Available: code-review");
    assert_eq!(results["content"][1]["is_error"], true);
    assert_eq!(
        *calls.lock().unwrap(),
        [
            format!("load_skill: code-review, {} bytes", CODE_REVIEW.len()),
            "load_skill: nope, no such skill".into()
        ]
    );
}

#[test]
fn skill_paths_in_messages_are_relative_to_the_workspace() {
    let loader = scan(&[("x", b"# X")]);
    assert_eq!(loader.skills()[0].manifest, "skills/x/SKILL.md");
    assert!(Path::new(&loader.skills()[0].manifest).is_relative());
}

#[test]
fn the_start_line_names_at_most_twenty_skills() {
    let folders: Vec<String> = (0..25).map(|i| format!("s{i:02}")).collect();
    let skills: Vec<(&str, &[u8])> = folders.iter().map(|f| (f.as_str(), &b"# x"[..])).collect();
    let summary = scan(&skills).summary();
    let first: Vec<String> = folders[..20].to_vec();
    assert_eq!(
        summary,
        format!("[Skills: 25 found in skills/: {} and 5 more (/skills lists them)]", first.join(", "))
    );
}
