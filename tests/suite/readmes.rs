//! The READMEs against the code they quote, and each Chinese page against its English twin.
//!
//! A chapter README teaches its mechanism with a few lines of our Rust, introduced by a paragraph that
//! names the file (`crates/core/src/agent.rs`) and the function. Those lines are copied, not
//! paraphrased, so they can drift when the code changes; this test finds each such excerpt and
//! checks that its lines still appear, one after another, in the file it names. It also checks
//! that every `X.zh.md` has the sections of its `X.md`, in the same order (the same number of `##`
//! headings, and the same number of code blocks under each), so a section added to one language
//! is not forgotten in the other.
//!
//! The pages checked: the root `README.md`, and every `*.md` under `chapters/` that has a `.zh.md`
//! twin. Every file a "Read the code" section names must exist.
//!
//! Every chapter README, English and Chinese, teaches in the same order: it has a "Read the code"
//! (`读代码`) section with at least one excerpt, a "Key insight" (`关键洞察`), and a "Next"
//! (`接下来`) that names the chapter after it, except the last chapter in `chapters/` (found by
//! listing the folder, so a chapter added later takes over that role). The Chinese headings of the
//! sections every chapter shares are the glossary's (`试一下`, not `试一试`; see [`ZH_HEADINGS`]).
//!
//! The Chinese pages use one word per concept: the glossary at the end of `README.zh.md` (`术语表`)
//! lists, in its `不用` column, the forms these pages no longer use. A cell may hold several forms,
//! separated by `、`. A form written with quotation marks (`单独的“提示”`, `指技能目录时单独的“目录”`)
//! describes a use for the reader and cannot be searched for; every other form is searched for
//! literally, and a line of any `*.zh.md` page (outside the glossary table itself) holding one
//! fails the test with its file and line.
//!
//! The endpoint tables of `README.md` and `README.zh.md` (base URL, a `MODEL_ID` for each endpoint)
//! agree with each other and with `.env.example`, which holds a ready block for each endpoint.

use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the e2e package sits one folder below the workspace root")
        .to_path_buf()
}

/// One fenced block of a Markdown page.
struct Fence {
    /// The info string after the opening backticks (`rust`, `sh`, empty).
    info: String,
    /// The paragraph just before the opening fence (its lines joined by spaces).
    intro: String,
    /// The lines between the fences.
    body: Vec<String>,
    /// 1-based line number of the opening fence, for messages.
    line: usize,
}

/// A page split into its `##` headings and fenced blocks.
struct Page {
    /// Each `## ` heading (outside fences) with the number of fenced blocks under it.
    sections: Vec<(String, usize)>,
    fences: Vec<Fence>,
}

fn parse(text: &str) -> Page {
    let mut sections: Vec<(String, usize)> = Vec::new();
    let mut fences = Vec::new();
    let mut open: Option<Fence> = None;
    // The paragraph being read, and the last one finished (what a fence after a blank line follows).
    let mut paragraph = String::new();
    let mut last_paragraph = String::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(fence) = open.as_mut() {
            if trimmed.starts_with("```") {
                fences.push(open.take().expect("a fence is open"));
            } else {
                fence.body.push(line.to_string());
            }
            continue;
        }
        if let Some(info) = trimmed.strip_prefix("```") {
            if let Some(section) = sections.last_mut() {
                section.1 += 1;
            }
            open = Some(Fence {
                info: info.trim().to_string(),
                intro: if paragraph.is_empty() { last_paragraph.clone() } else { paragraph.clone() },
                body: Vec::new(),
                line: n + 1,
            });
            paragraph.clear();
            last_paragraph.clear();
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push((heading.trim().to_string(), 0));
            paragraph.clear();
            last_paragraph.clear();
            continue;
        }
        if line.trim().is_empty() {
            if !paragraph.is_empty() {
                last_paragraph = std::mem::take(&mut paragraph);
            }
        } else {
            if !paragraph.is_empty() {
                paragraph.push(' ');
            }
            paragraph.push_str(line.trim());
        }
    }
    Page { sections, fences }
}

/// The `backticked` spans of a line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn leading_ws(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// Whether `excerpt` appears in `file` as consecutive lines, allowing the whole excerpt to be
/// shifted left by the same indentation (an excerpt from a method body is shown dedented).
fn appears_in(excerpt: &[String], file: &str) -> bool {
    let lines: Vec<&str> = file.lines().collect();
    let Some(first) = excerpt.first() else {
        return false;
    };
    if excerpt.len() > lines.len() {
        return false;
    }
    (0..=lines.len() - excerpt.len()).any(|start| {
        let head = lines[start];
        if head.trim() != first.trim() || leading_ws(head) < leading_ws(first) {
            return false;
        }
        let shift = leading_ws(head) - leading_ws(first);
        excerpt.iter().zip(&lines[start..]).all(|(want, have)| {
            if want.trim().is_empty() {
                return have.trim().is_empty();
            }
            have.len() >= shift
                && have[..shift].trim().is_empty()
                && have[shift..].trim_end() == want.trim_end()
        })
    })
}

/// The pages to check: (English page, its Chinese twin if any), paths relative to the root.
fn pages(root: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let mut out = vec![(PathBuf::from("README.md"), Some(PathBuf::from("README.zh.md")))];
    let mut chapters: Vec<PathBuf> = fs::read_dir(root.join("chapters"))
        .expect("chapters/ is readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    chapters.sort();
    for dir in chapters {
        let mut mds: Vec<PathBuf> = fs::read_dir(&dir)
            .expect("a chapter folder is readable")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".md") && !name.ends_with(".zh.md")
            })
            .collect();
        mds.sort();
        for md in mds {
            let rel = md.strip_prefix(root).expect("under the root").to_path_buf();
            let zh = rel.with_extension("zh.md");
            out.push((rel, root.join(&zh).exists().then_some(zh)));
        }
    }
    out
}

/// Checks one page's excerpts; returns how many it has.
fn check_excerpts(root: &Path, page: &Path, parsed: &Page, problems: &mut Vec<String>) -> usize {
    let mut count = 0;
    for fence in parsed.fences.iter().filter(|f| f.info == "rust") {
        let spans = code_spans(&fence.intro);
        let Some(file) = spans.iter().find(|s| s.ends_with(".rs") && s.contains('/')) else {
            continue;
        };
        count += 1;
        let at = format!("{}:{}", page.display(), fence.line);
        let Ok(text) = fs::read_to_string(root.join(file)) else {
            problems.push(format!("{at}: names `{file}`, which does not exist"));
            continue;
        };
        let function = spans.iter().find(|s| !s.ends_with(".rs"));
        match function {
            None => problems.push(format!(
                "{at}: the paragraph before the excerpt names `{file}` but no function in backticks"
            )),
            Some(f) => {
                let name = f.trim_end_matches("()").rsplit("::").next().unwrap_or(f);
                if !text.contains(name) {
                    problems.push(format!("{at}: `{file}` has no `{name}`"));
                }
            }
        }
        if fence.body.iter().all(|l| l.trim().is_empty()) {
            problems.push(format!("{at}: the excerpt is empty"));
        } else if !appears_in(&fence.body, &text) {
            problems.push(format!(
                "{at}: the excerpt no longer matches `{file}` (copy the lines again from the file)"
            ));
        }
    }
    count
}

/// Every path named in backticks in the page's "Read the code" section (a span under `crates/`,
/// `chapters/` or `tests/`, ending in `.rs` or `/`) must exist, so the reading order never sends a reader to a file that moved.
fn check_read_the_code_paths(root: &Path, page: &Path, text: &str, problems: &mut Vec<String>) {
    let mut inside = false;
    let mut fence = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            inside = heading.starts_with("Read the code") || heading.starts_with("读代码");
            continue;
        }
        if !inside {
            continue;
        }
        for span in code_spans(line) {
            let in_repo = ["crates/", "chapters/", "tests/"].iter().any(|p| span.starts_with(p));
            let is_path = in_repo && !span.contains(' ') && (span.ends_with(".rs") || span.ends_with('/'));
            if is_path && !root.join(span).exists() {
                problems.push(format!("{}:{}: `{span}` does not exist", page.display(), n + 1));
            }
        }
    }
}

fn has_read_the_code(parsed: &Page) -> bool {
    parsed.sections.iter().any(|(h, _)| h.starts_with("Read the code") || h.starts_with("读代码"))
}

/// The Chinese heading of each section the chapter READMEs share, by its English heading (the
/// glossary's words; "Changes from sNN" is `相对 sNN 的变更`, see [`zh_heading`]).
const ZH_HEADINGS: [(&str, &str); 11] = [
    ("The problem", "问题"),
    ("The solution", "解决方案"),
    ("What this chapter adds", "本章新增"),
    ("How it works", "工作原理"),
    ("Changes", "变更"),
    ("Where we differ from the course", "与课程的不同之处"),
    ("Run it", "运行"),
    ("Try it", "试一下"),
    ("Key insight", "关键洞察"),
    ("Read the code", "读代码"),
    ("Next", "接下来"),
];

/// The Chinese heading a chapter README's `## en` must have, if it is a shared one.
fn zh_heading(en: &str) -> Option<String> {
    if let Some(chapter) = en.strip_prefix("Changes from ") {
        return Some(format!("相对 {chapter} 的变更"));
    }
    ZH_HEADINGS.iter().find(|(e, _)| *e == en).map(|(_, zh)| (*zh).to_string())
}

/// The text under the first `## ` heading that starts with one of `names`, up to the next `## `
/// heading (fences included), or `None` without such a heading.
fn section_body(text: &str, names: &[&str]) -> Option<String> {
    let mut body: Option<String> = None;
    let mut fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        }
        if let Some(heading) = line.strip_prefix("## ").filter(|_| !fence) {
            if body.is_some() {
                break;
            }
            if names.iter().any(|n| heading.starts_with(n)) {
                body = Some(String::new());
            }
            continue;
        }
        if let Some(b) = body.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    body
}

/// A chapter README (either language) has "Read the code", "Key insight", and, unless it is the
/// last chapter, a "Next" that names the chapter after it (`next`).
fn check_chapter_sections(
    page: &Path,
    text: &str,
    parsed: &Page,
    next: Option<&str>,
    problems: &mut Vec<String>,
) {
    let at = page.display();
    if !has_read_the_code(parsed) {
        problems.push(format!("{at}: no \"## Read the code\" / \"## 读代码\" section (a chapter README shows its mechanism in our code)"));
    }
    if section_body(text, &["Key insight", "关键洞察"]).is_none() {
        problems.push(format!("{at}: no \"## Key insight\" / \"## 关键洞察\" section"));
    }
    let Some(next) = next else { return };
    match section_body(text, &["Next", "接下来"]) {
        None => problems.push(format!(
            "{at}: no \"## Next\" / \"## 接下来\" section (every chapter but the last says what {next} solves)"
        )),
        Some(body) if !body.contains(next) => {
            problems.push(format!("{at}: its \"Next\" section does not name {next}, the chapter after it"))
        }
        Some(_) => {}
    }
}

#[test]
fn excerpts_match_their_files_and_zh_pages_have_the_english_sections() {
    let root = repo_root();
    let mut problems = Vec::new();
    let mut excerpts = 0;
    let chapters = e2e::chapter_names();
    for (en, zh) in pages(&root) {
        let Ok(en_text) = fs::read_to_string(root.join(&en)) else {
            problems.push(format!("{}: unreadable", en.display()));
            continue;
        };
        let en_page = parse(&en_text);
        let is_chapter_readme = en.starts_with("chapters") && en.ends_with("README.md");
        // The chapter after this one, if this page is a chapter README and not the last.
        let next = is_chapter_readme
            .then(|| en.parent().and_then(|d| d.file_name()).and_then(|n| n.to_str()))
            .flatten()
            .and_then(|name| chapters.iter().position(|c| c == name))
            .and_then(|i| chapters.get(i + 1))
            .map(String::as_str);
        if is_chapter_readme {
            check_chapter_sections(&en, &en_text, &en_page, next, &mut problems);
        }
        let n = check_excerpts(&root, &en, &en_page, &mut problems);
        check_read_the_code_paths(&root, &en, &en_text, &mut problems);
        excerpts += n;
        if has_read_the_code(&en_page) && n == 0 {
            problems.push(format!(
                "{}: has \"Read the code\" but no excerpt (a ```rust block after a line naming the file and function)",
                en.display()
            ));
        }
        let Some(zh) = zh else {
            if is_chapter_readme {
                problems.push(format!("{}: no README.zh.md beside it", en.display()));
            }
            continue;
        };
        let Ok(zh_text) = fs::read_to_string(root.join(&zh)) else {
            problems.push(format!("{}: unreadable", zh.display()));
            continue;
        };
        let zh_page = parse(&zh_text);
        if is_chapter_readme {
            check_chapter_sections(&zh, &zh_text, &zh_page, next, &mut problems);
        }
        let m = check_excerpts(&root, &zh, &zh_page, &mut problems);
        check_read_the_code_paths(&root, &zh, &zh_text, &mut problems);
        excerpts += m;
        if has_read_the_code(&zh_page) && m == 0 {
            problems.push(format!("{}: has 读代码 but no excerpt", zh.display()));
        }
        if en_page.sections.len() != zh_page.sections.len() {
            problems.push(format!(
                "{} has {} `##` sections, {} has {}: {:?} vs {:?}",
                en.display(),
                en_page.sections.len(),
                zh.display(),
                zh_page.sections.len(),
                en_page.sections.iter().map(|s| &s.0).collect::<Vec<_>>(),
                zh_page.sections.iter().map(|s| &s.0).collect::<Vec<_>>(),
            ));
        } else {
            for ((eh, ef), (zh_h, zf)) in en_page.sections.iter().zip(&zh_page.sections) {
                if let Some(want) = zh_heading(eh).filter(|want| is_chapter_readme && want != zh_h) {
                    problems.push(format!(
                        "{} \"## {zh_h}\" stands for \"## {eh}\": the glossary's heading is \"## {want}\"",
                        zh.display()
                    ));
                }
                if ef != zf {
                    problems.push(format!(
                        "{} \"## {eh}\" has {ef} code blocks, {} \"## {zh_h}\" has {zf}: \
                         the sections are out of order or one language lacks a block",
                        en.display(),
                        zh.display()
                    ));
                }
            }
        }
    }
    assert!(excerpts > 0, "no excerpt found in any README");
    assert!(problems.is_empty(), "README problems:\n{}", problems.join("\n"));
}

#[test]
fn an_excerpt_matches_only_consecutive_lines() {
    let file = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
    let lines = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(appears_in(&lines(&["let x = 1;", "let y = 2;"]), file));
    assert!(appears_in(&lines(&["    let x = 1;", "    let y = 2;"]), file));
    assert!(!appears_in(&lines(&["let y = 2;", "let x = 1;"]), file));
    assert!(!appears_in(&lines(&["fn a() {", "    let y = 2;"]), file));
    assert!(!appears_in(&lines(&["let x = 2;"]), file));
}

/// The glossary at the end of `README.zh.md`: each rejected form (`不用`) with the term written
/// instead (`中文`), and the 1-based lines of its table, the one place a rejected form may appear.
struct Glossary {
    rejected: Vec<(String, String)>,
    table: std::ops::RangeInclusive<usize>,
}

/// The cells of a Markdown table row.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// Reads the `## 术语表` table of `text` (see the module's doc for which forms count).
///
/// # Errors
/// A message when the section, its table, or the table's `中文` and `不用` columns are missing,
/// or when no form can be searched for: the test must not pass by finding nothing to check.
fn glossary(text: &str) -> Result<Glossary, String> {
    let mut inside = false;
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            if inside {
                break;
            }
            inside = heading.starts_with("术语表");
            continue;
        }
        if !inside {
            continue;
        }
        if line.trim_start().starts_with('|') {
            rows.push((n + 1, cells(line)));
        } else if !rows.is_empty() {
            break;
        }
    }
    let (Some((first, header)), Some((last, _))) = (rows.first(), rows.last()) else {
        return Err("README.zh.md has no table under \"## 术语表\"".into());
    };
    let column = |name: &str| header.iter().position(|c| c == name);
    let (Some(term), Some(not)) = (column("中文"), column("不用")) else {
        return Err(format!("the glossary's header {header:?} lacks a 中文 or a 不用 column"));
    };
    let quotes = ['“', '”', '"', '‘', '’', '「', '」'];
    let mut rejected = Vec::new();
    for (_, row) in rows.iter().skip(2) {
        let (Some(want), Some(cell)) = (row.get(term), row.get(not)) else { continue };
        for form in cell.split('、').map(str::trim) {
            if !form.is_empty() && !form.contains(quotes) {
                rejected.push((form.to_string(), want.clone()));
            }
        }
    }
    if rejected.is_empty() {
        return Err("the glossary's 不用 column holds no form to search for".into());
    }
    Ok(Glossary { rejected, table: *first..=*last })
}

#[test]
fn the_zh_pages_use_none_of_the_glossarys_rejected_forms() {
    let root = repo_root();
    let readme = fs::read_to_string(root.join("README.zh.md")).expect("README.zh.md is readable");
    let glossary = glossary(&readme).unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    let mut checked = 0;
    for zh in pages(&root).into_iter().filter_map(|(_, zh)| zh) {
        let Ok(text) = fs::read_to_string(root.join(&zh)) else {
            problems.push(format!("{}: unreadable", zh.display()));
            continue;
        };
        checked += 1;
        let is_readme = zh == Path::new("README.zh.md");
        for (n, line) in text.lines().enumerate() {
            if is_readme && glossary.table.contains(&(n + 1)) {
                continue;
            }
            for (form, want) in &glossary.rejected {
                if line.contains(form.as_str()) {
                    problems.push(format!(
                        "{}:{}: 「{form}」: the glossary (README.zh.md, 术语表) writes {want}",
                        zh.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(checked > 1, "no Chinese page found beside README.zh.md");
    assert!(problems.is_empty(), "rejected forms in the Chinese pages:\n{}", problems.join("\n"));
}

#[test]
fn a_glossary_form_in_quotes_is_a_description_and_is_not_searched_for() {
    let text = "# t\n\n## 术语表（英中对照）\n\nintro\n\n| English | 中文 | 不用 |\n|---|---|---|\n\
                | agent | Agent | 智能体 |\n| prompt | prompt | 单独的“提示” |\n\
                | system prompt | system prompt | 系统提示、SYSTEM 提示 |\n| turn | 回合 | |\n\nafter\n";
    let g = glossary(text).unwrap_or_else(|e| panic!("{e}"));
    let forms: Vec<&str> = g.rejected.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(forms, ["智能体", "系统提示", "SYSTEM 提示"]);
    assert_eq!(g.rejected[0].1, "Agent");
    assert_eq!(g.table, 7..=12);
    assert!(glossary("## 术语表\n\n| English | 中文 |\n|---|---|\n| a | b |\n").is_err());
    assert!(
        glossary("## 术语表\n\n| English | 中文 | 不用 |\n|---|---|---|\n| a | b | 单独的“c” |\n").is_err()
    );
}

/// The endpoint table of a README (the table whose header names `ANTHROPIC_BASE_URL`): for each
/// row, the first backticked base URL and the first backticked `MODEL_ID`, if the row gives one.
fn endpoint_rows(text: &str) -> Vec<(String, Option<String>)> {
    let mut rows = Vec::new();
    let mut columns: Option<(usize, usize)> = None;
    for line in text.lines() {
        if !line.trim_start().starts_with('|') {
            columns = None;
            continue;
        }
        let row = cells(line);
        let Some((url_at, model_at)) = columns else {
            let url_at = row.iter().position(|c| c == "`ANTHROPIC_BASE_URL`");
            let model_at = row.iter().position(|c| c.contains("`MODEL_ID`"));
            if let (Some(u), Some(m)) = (url_at, model_at) {
                columns = Some((u, m));
            }
            continue;
        };
        if row.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) {
            continue;
        }
        let first_span =
            |at: usize| row.get(at).and_then(|c| code_spans(c).first().map(|s| (*s).to_string()));
        if let Some(url) = first_span(url_at).filter(|u| u.starts_with("http")) {
            rows.push((url, first_span(model_at)));
        }
    }
    rows
}

/// `.env.example` is where a learner sets an endpoint up, so it holds a block for every endpoint
/// the READMEs' tables list, with the same base URL and model; the two tables agree.
#[test]
fn the_env_example_has_each_endpoint_of_the_readme_tables() {
    let root = repo_root();
    let read = |name: &str| fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let example = read(".env.example");
    let lines: Vec<&str> = example.lines().map(|l| l.trim_start_matches('#').trim()).collect();
    let en = endpoint_rows(&read("README.md"));
    let zh = endpoint_rows(&read("README.zh.md"));
    assert!(en.len() >= 5, "README.md's endpoint table has {} rows: {en:?}", en.len());
    assert_eq!(en, zh, "README.md's and README.zh.md's endpoint tables differ");
    let mut problems = Vec::new();
    for (url, model) in &en {
        if url != agent_core::config::DEFAULT_BASE_URL
            && !lines.contains(&format!("ANTHROPIC_BASE_URL={url}").as_str())
        {
            problems.push(format!("no ANTHROPIC_BASE_URL={url}"));
        }
        if let Some(model) = model.as_ref().filter(|m| !lines.contains(&format!("MODEL_ID={m}").as_str())) {
            problems.push(format!("no MODEL_ID={model} (the table's model for {url})"));
        }
    }
    assert!(problems.is_empty(), ".env.example lacks what the READMEs' tables say:\n{}", problems.join("\n"));
}
