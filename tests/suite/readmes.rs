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
//! twin. A chapter README with a "Read the code" (`读代码`) section must show at least one excerpt;
//! one without that section is listed on stderr as still to do, and does not fail. Every file a
//! "Read the code" section names must exist.

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

#[test]
fn excerpts_match_their_files_and_zh_pages_have_the_english_sections() {
    let root = repo_root();
    let mut problems = Vec::new();
    let mut todo = Vec::new();
    let mut excerpts = 0;
    for (en, zh) in pages(&root) {
        let Ok(en_text) = fs::read_to_string(root.join(&en)) else {
            problems.push(format!("{}: unreadable", en.display()));
            continue;
        };
        let en_page = parse(&en_text);
        let is_chapter_readme = en.starts_with("chapters") && en.ends_with("README.md");
        let n = check_excerpts(&root, &en, &en_page, &mut problems);
        check_read_the_code_paths(&root, &en, &en_text, &mut problems);
        excerpts += n;
        if has_read_the_code(&en_page) && n == 0 {
            problems.push(format!(
                "{}: has \"Read the code\" but no excerpt (a ```rust block after a line naming the file and function)",
                en.display()
            ));
        }
        if is_chapter_readme && !has_read_the_code(&en_page) {
            todo.push(en.display().to_string());
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
    if !todo.is_empty() {
        eprintln!(
            "chapter READMEs without a \"Read the code\" section yet (no excerpt required): {}",
            todo.join(", ")
        );
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
