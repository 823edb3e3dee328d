//! The page: one self-contained HTML file that steps through a [`Trace`].
//!
//! Everything is drawn here, on the server side of the page, as static HTML: every step is a
//! `<section data-step="N">` with the messages as sent, what was new, the response and the tokens.
//! The script in the page (`page.js`) only shows one step at a time and moves between them, so
//! it never builds markup from the trace's text. Every text of the trace, which the model and the
//! tools wrote, goes through [`esc`]; nothing of it reaches an attribute unescaped or a script.
//! Without the script every step is shown, one under the other.
//!
//! The page has no link to anything outside it: its style and script are inline, and it uses
//! the reader's own fonts. It reads without colour: new blocks, reminders and marks carry a
//! word or a letter besides their colour.

use std::fmt::Write as _;

use serde_json::Value;

use crate::steps::{MARK_KINDS, Mark, Note, NoteKind, Step, Trace, blocks, text_of};

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// Texts longer than this many characters are folded (`<details>`), opened on demand.
const FOLD_CHARS: usize = 1200;

/// `text` with the five characters that mean something in HTML replaced by references, so that
/// it shows as text in an element or an attribute value.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page for `trace`, titled after `name` (the trace file's name).
pub fn render(trace: &Trace, name: &str) -> String {
    let title = match &trace.chapter {
        Some(chapter) => format!("{chapter} session: {name}"),
        None => format!("Session: {name}"),
    };
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    let _ = write!(page, "<header>\n<h1>{}</h1>\n", esc(&title));
    page.push_str(&summary(trace));
    page.push_str(&controls(trace));
    page.push_str(&timeline(trace));
    page.push_str("</header>\n<main id=\"steps\">\n");
    if trace.steps.is_empty() {
        page.push_str("<p class=\"empty\">This trace holds no request: nothing was sent to the model while it recorded.</p>\n");
    }
    for step in &trace.steps {
        page.push_str(&step_section(step, trace.steps.len()));
    }
    if !trace.after.is_empty() {
        page.push_str("<section class=\"after\" aria-label=\"After the last request\">\n<h2>After the last request</h2>\n");
        page.push_str(&notes(&trace.after));
        page.push_str("</section>\n");
    }
    let _ = write!(page, "</main>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    page
}

/// The line under the title: how many requests in which lanes, and the lines that were skipped.
fn summary(trace: &Trace) -> String {
    let lanes = trace
        .lanes
        .iter()
        .map(|lane| {
            let n = trace.steps.iter().filter(|s| &s.lane == lane).count();
            format!("{} ({n})", esc(lane))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = format!(
        "<p class=\"summary\">{} request(s), one step each; lanes: {}.</p>\n",
        trace.steps.len(),
        if lanes.is_empty() { "none".to_owned() } else { lanes }
    );
    if !trace.skipped.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"warning\">Skipped {} line(s) that are not JSON: {}</p>",
            trace.skipped.len(),
            esc(&trace.skipped.join("; "))
        );
    }
    out
}

/// Previous, play, next, and the step counter that a screen reader announces.
fn controls(trace: &Trace) -> String {
    format!(
        "<nav class=\"controls\" aria-label=\"Steps\">\n\
         <button type=\"button\" id=\"prev\" aria-keyshortcuts=\"ArrowLeft\">&larr; Previous</button>\n\
         <button type=\"button\" id=\"play\" aria-pressed=\"false\" aria-keyshortcuts=\"p\">Play</button>\n\
         <button type=\"button\" id=\"next\" aria-keyshortcuts=\"ArrowRight\">Next &rarr;</button>\n\
         <span id=\"position\" role=\"status\" aria-live=\"polite\">Step 1 of {}</span>\n\
         <span class=\"keys\">Keys: &larr; &rarr; move, Home/End first/last, p plays.</span>\n\
         </nav>\n",
        trace.steps.len()
    )
}

/// The context's size over time: one bar per step, in a row per lane, its height the size of
/// what the request sent; a letter over a bar where a mechanism acted (legend below).
fn timeline(trace: &Trace) -> String {
    let largest = trace.steps.iter().map(|s| s.context_chars).max().unwrap_or(1).max(1);
    let mut out = String::from(
        "<figure class=\"timeline\" aria-label=\"Context size per request\">\n\
         <figcaption>Context sent per request (bar height: characters of SYSTEM, tools and messages; about 4 per token). One row per lane; a letter marks a mechanism.</figcaption>\n",
    );
    for lane in &trace.lanes {
        let _ = write!(
            out,
            "<div class=\"lane-row\" data-lane-row=\"{}\"><span class=\"lane-name\">{}</span><div class=\"bars\" style=\"--steps:{}\">",
            esc(lane),
            esc(lane),
            trace.steps.len()
        );
        for step in &trace.steps {
            if &step.lane != lane {
                out.push_str("<span class=\"gap\"></span>");
                continue;
            }
            let height = (step.context_chars * 100).div_ceil(largest).max(2);
            let letters: String = mark_letters(&step.marks);
            let label = format!(
                "Step {}, lane {}, about {} tokens sent{}",
                step.number,
                step.lane,
                step.context_chars / 4,
                if step.marks.is_empty() {
                    String::new()
                } else {
                    format!(", {}", step.marks.iter().map(|m| m.kind).collect::<Vec<_>>().join(", "))
                }
            );
            let _ = write!(
                out,
                "<a class=\"bar{}\" href=\"#step-{n}\" data-goto=\"{n}\" title=\"{label}\" aria-label=\"{label}\"><span class=\"mark-letters\">{letters}</span><span class=\"fill\" style=\"height:{height}%\"></span></a>",
                if step.marks.is_empty() { "" } else { " marked" },
                n = step.number,
                label = esc(&label),
            );
        }
        out.push_str("</div></div>\n");
    }
    out.push_str("<p class=\"legend\">");
    for (kind, letter, words) in MARK_KINDS {
        let _ = write!(out, "<span class=\"legend-item mark-{kind}\"><b>{letter}</b> {words}</span> ");
    }
    out.push_str("</p>\n</figure>\n");
    out
}

/// The letters of `marks`, each kind once, in [`MARK_KINDS`] order.
fn mark_letters(marks: &[Mark]) -> String {
    MARK_KINDS
        .iter()
        .filter(|(kind, _, _)| marks.iter().any(|m| m.kind == *kind))
        .map(|(_, letter, _)| *letter)
        .collect()
}

/// One step: its heading, the mechanisms that acted, what happened before it, the request as
/// sent, and the response.
fn step_section(step: &Step, total: usize) -> String {
    let mut out = String::new();
    let current = if step.number == 1 { " aria-current=\"step\"" } else { "" };
    let lane_class = lane_class(&step.lane);
    let _ = write!(
        out,
        "<section class=\"step {lane_class}\" id=\"step-{n}\" data-step=\"{n}\" data-lane=\"{lane}\" data-context-chars=\"{chars}\"{current} aria-labelledby=\"step-{n}-title\">\n\
         <h2 id=\"step-{n}-title\">Step {n} of {total} <span class=\"lane\">lane: {lane}</span></h2>\n",
        n = step.number,
        lane = esc(&step.lane),
        chars = step.context_chars,
    );
    out.push_str(&tokens_line(step));
    if !step.marks.is_empty() {
        out.push_str("<ul class=\"marks\" aria-label=\"Mechanisms that acted\">\n");
        for mark in &step.marks {
            let letter = MARK_KINDS.iter().find(|(k, _, _)| *k == mark.kind).map_or("", |(_, l, _)| *l);
            let _ = writeln!(
                out,
                "<li class=\"mark mark-{}\" data-mark=\"{}\"><b>[{letter}] {}</b> {}</li>",
                mark.kind,
                mark.kind,
                mark.kind,
                esc(&mark.text)
            );
        }
        out.push_str("</ul>\n");
    }
    if !step.before.is_empty() {
        out.push_str("<h3>Since the request before</h3>\n");
        out.push_str(&notes(&step.before));
    }
    out.push_str(&request_view(step));
    out.push_str(&response_view(step));
    out.push_str("</section>\n");
    out
}

/// A class for a lane's colour: `lane-main`, `lane-subagent`, `lane-side`, `lane-team`.
fn lane_class(lane: &str) -> &'static str {
    match lane {
        "main" => "lane-main",
        l if l.starts_with("subagent") || l.contains("/subagent") => "lane-subagent",
        "side call" => "lane-side",
        _ => "lane-team",
    }
}

/// Tokens in (and read from or written to the cache) and out, from the response's usage, and
/// the size of what was sent.
fn tokens_line(step: &Step) -> String {
    let usage = step.response.as_ref().map(|r| &r["usage"]);
    let number = |key: &str| usage.and_then(|u| u[key].as_u64()).unwrap_or(0);
    let sent = format!("sent {} characters (about {} tokens)", step.context_chars, step.context_chars / 4);
    match usage {
        Some(u) if u.is_object() => format!(
            "<p class=\"tokens\">Tokens: <b>{} in</b> ({} read from the cache, {} written to it), <b>{} out</b>; {sent}.</p>\n",
            number("input_tokens")
                + number("cache_read_input_tokens")
                + number("cache_creation_input_tokens"),
            number("cache_read_input_tokens"),
            number("cache_creation_input_tokens"),
            number("output_tokens"),
        ),
        _ => format!("<p class=\"tokens\">No usage reported; {sent}.</p>\n"),
    }
}

/// The events between two requests, as a list.
fn notes(notes: &[Note]) -> String {
    let mut out = String::from("<ol class=\"notes\">\n");
    for note in notes {
        let lane = if note.lane == "main" {
            String::new()
        } else {
            format!("<span class=\"lane\">{}</span> ", esc(&note.lane))
        };
        let item = match &note.kind {
            NoteKind::ToolCall { name, input, blocked } => format!(
                "<li class=\"note tool-call\"><b>tool call{}</b> {lane}<code>{}</code>{}</li>",
                if *blocked { " (blocked)" } else { "" },
                esc(name),
                fold(input, "pre")
            ),
            NoteKind::ToolResult { name, content, is_error } => format!(
                "<li class=\"note tool-result{}\"><b>{}</b> {lane}<code>{}</code>{}</li>",
                if *is_error { " error" } else { "" },
                if *is_error { "tool result (error)" } else { "tool result" },
                esc(name),
                fold(content, "pre")
            ),
            NoteKind::Injected(text) => {
                format!("<li class=\"note harness\"><b>reminder added</b> {lane}{}</li>", fold(text, "pre"))
            }
            NoteKind::Line { level, text } => format!(
                "<li class=\"note line level-{}\"><b>{}</b> {lane}{}</li>",
                esc(level),
                esc(level),
                esc(text)
            ),
            NoteKind::Stop(note) => {
                format!("<li class=\"note stop\"><b>stopped</b> {lane}{}</li>", esc(note))
            }
            NoteKind::Retry(error) => {
                format!("<li class=\"note retry\"><b>retry</b> {lane}{}</li>", esc(error))
            }
            NoteKind::AutomaticTurn { source, prompt } => format!(
                "<li class=\"note harness\"><b>turn no one typed</b> {lane}[{}] {}</li>",
                esc(source),
                esc(prompt)
            ),
            NoteKind::TurnUsage { requests, input, output } => format!(
                "<li class=\"note usage\"><b>turn ended</b> {lane}{requests} request(s), {input} input tokens, {output} output tokens</li>"
            ),
        };
        out.push_str(&item);
        out.push('\n');
    }
    out.push_str("</ol>\n");
    out
}

/// `text` in an element `tag`, escaped; folded in a `<details>` when long.
fn fold(text: &str, tag: &str) -> String {
    let count = text.chars().count();
    if count <= FOLD_CHARS {
        return format!("<{tag}>{}</{tag}>", esc(text));
    }
    let head: String = text.chars().take(200).collect();
    format!(
        "<details><summary>{} characters: {}…</summary><{tag}>{}</{tag}></details>",
        count,
        esc(&head),
        esc(text)
    )
}

/// The request as sent: SYSTEM (marked when it changed), the tools' names, and every message
/// with its blocks, the new ones marked.
fn request_view(step: &Step) -> String {
    let request = &step.request;
    let mut out = String::from("<h3>The request, as sent</h3>\n");
    let system = text_of(&request["system"]).unwrap_or_default();
    let changed = if step.system_changed { " new" } else { "" };
    let _ = writeln!(
        out,
        "<details class=\"system{changed}\"><summary>SYSTEM{}, {} characters</summary>{}</details>",
        if step.system_changed { " <span class=\"badge\">changed</span>" } else { "" },
        system.chars().count(),
        fold(&system, "pre")
    );
    let tools: Vec<String> = request["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| text_of(&t["name"])).collect())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<p class=\"tools\">Tools ({}): {}</p>",
        tools.len(),
        if tools.is_empty() { "none".to_owned() } else { esc(&tools.join(", ")) }
    );
    let names = tool_names(request);
    let all = blocks(request);
    let messages = request["messages"].as_array().map_or(0, Vec::len);
    let new = step.new_blocks.len();
    let _ = writeln!(
        out,
        "<p class=\"count\">{messages} message(s); {new} block(s) new since this lane's request before, marked <span class=\"badge\">new</span>.</p>"
    );
    out.push_str("<ol class=\"messages\" start=\"0\">\n");
    for m in 0..messages {
        let role = text_of(&request["messages"][m]["role"]).unwrap_or_default();
        let _ = writeln!(
            out,
            "<li class=\"message role-{}\"><span class=\"role\">[{m}] {}</span>",
            esc(&role),
            esc(&role)
        );
        for (_, b, block) in all.iter().filter(|(mi, _, _)| *mi == m) {
            out.push_str(&block_view(block, &role, step.new_blocks.contains(&(m, *b)), &names));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");
    out
}

/// The name of each `tool_use` id in the request, to label the results.
fn tool_names(request: &Value) -> Vec<(String, String)> {
    blocks(request)
        .into_iter()
        .filter(|(_, _, b)| b["type"] == "tool_use")
        .filter_map(|(_, _, b)| Some((text_of(&b["id"])?, text_of(&b["name"])?)))
        .collect()
}

/// What kind of harness text a user message's text block is, when it is one: a reminder, a
/// notification (a background result, a teammate's message), a compaction's summary.
fn harness_text(text: &str) -> Option<&'static str> {
    let t = text.trim_start();
    if t.starts_with("<reminder") || t.starts_with("<system-reminder") {
        Some("reminder")
    } else if t.starts_with("[Compacted]") || t.contains("Conversation summary (reference only)") {
        Some("summary")
    } else if t.starts_with('<') && t.contains("</") {
        Some("notification")
    } else {
        None
    }
}

/// One content block.
fn block_view(block: &Value, role: &str, new: bool, names: &[(String, String)]) -> String {
    let kind = text_of(&block["type"]).unwrap_or_else(|| "block".into());
    let mut classes = format!("block type-{}", esc(&kind));
    let mut label = esc(&kind);
    let body = match kind.as_str() {
        "text" => {
            let text = text_of(&block["text"]).unwrap_or_default();
            if let Some(harness) = harness_text(&text).filter(|_| role == "user") {
                classes.push_str(" harness");
                label = format!("{label} <span class=\"badge harness-badge\">{harness}</span>");
            }
            fold(&text, "pre")
        }
        "tool_use" => {
            label = format!(
                "tool_use <code>{}</code> <span class=\"id\">{}</span>",
                esc(&text_of(&block["name"]).unwrap_or_default()),
                esc(&text_of(&block["id"]).unwrap_or_default())
            );
            let input = serde_json::to_string_pretty(&block["input"]).unwrap_or_default();
            fold(&input, "pre")
        }
        "tool_result" => {
            let id = text_of(&block["tool_use_id"]).unwrap_or_default();
            let name = names.iter().find(|(i, _)| *i == id).map_or("?", |(_, n)| n.as_str());
            let error = block["is_error"].as_bool().unwrap_or(false);
            if error {
                classes.push_str(" error");
            }
            label = format!(
                "tool_result of <code>{}</code> <span class=\"id\">{}</span>{}",
                esc(name),
                esc(&id),
                if error { " <span class=\"badge\">error</span>" } else { "" }
            );
            fold(&result_text(&block["content"]), "pre")
        }
        _ => fold(&serde_json::to_string_pretty(block).unwrap_or_default(), "pre"),
    };
    if new {
        classes.push_str(" new");
        label = format!("<span class=\"badge new-badge\">new</span> {label}");
    }
    format!(
        "<div class=\"{classes}\" data-new=\"{new}\"><div class=\"block-label\">{label}</div>{body}</div>\n"
    )
}

/// A `tool_result`'s content as text: a string, or the texts of its blocks.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| text_of(&i["text"]).unwrap_or_else(|| i.to_string()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The response: its blocks, its `stop_reason`; or the error; or that none was recorded.
fn response_view(step: &Step) -> String {
    let mut out = String::from("<h3>The response</h3>\n");
    match (&step.response, &step.error) {
        (Some(response), _) => {
            let _ = writeln!(
                out,
                "<p class=\"stop-reason\">stop_reason: <code>{}</code></p>",
                esc(&text_of(&response["stop_reason"]).unwrap_or_else(|| "none".into()))
            );
            let names = tool_names(&Value::Null);
            let content = response["content"].as_array().cloned().unwrap_or_default();
            out.push_str("<div class=\"response\">\n");
            for block in &content {
                out.push_str(&block_view(block, "assistant", false, &names));
            }
            out.push_str("</div>\n");
        }
        (None, Some(error)) => {
            let _ = writeln!(out, "<p class=\"error\">The request failed: {}</p>", esc(error));
        }
        (None, None) => out.push_str(
            "<p class=\"error\">No response was recorded (the session ended or was cut off here).</p>\n",
        ),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::read;

    #[test]
    fn text_from_the_trace_cannot_become_markup() {
        let hostile = r#"</pre><script>alert(1)</script><img src=x onerror="alert(2)">"#;
        let line = serde_json::json!({
            "lane": "main\"><script>",
            "type": "request",
            "request": {"system": hostile, "messages": [{"role": "user", "content": hostile}]},
        });
        let tool = serde_json::json!({"type": "tool_result", "name": hostile, "content": hostile});
        let page = render(&read(&format!("{tool}\n{line}\n")), hostile);
        assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
        assert!(!page.contains("<img"));
        assert!(!page.contains("onerror=\""));
    }

    #[test]
    fn every_step_is_a_section_and_the_first_is_current() {
        let text = r#"{"lane":"main","type":"request","request":{"messages":[{"role":"user","content":"a"}]}}
{"lane":"main","type":"request","request":{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}}"#;
        let page = render(&read(text), "t.jsonl");
        assert_eq!(page.matches("data-step=\"").count(), 2);
        assert_eq!(page.matches("aria-current=\"step\"").count(), 1);
        assert_eq!(page.matches("data-new=\"true\"").count(), 2, "a, then b");
        assert!(!page.contains("http://") && !page.contains("https://"), "nothing outside the page");
    }
}
