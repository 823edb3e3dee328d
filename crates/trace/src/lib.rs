//! `trace`: draws a session's trace as a page a learner steps through.
//!
//! A chapter run with `--trace FILE` (or `/trace FILE` in its REPL) appends every event and
//! every request of the session to FILE, one JSON object per line (`agent_core::trace` describes
//! the lines). `cargo run -p trace -- FILE` turns it into `FILE.html`: one self-contained page,
//! a step per request, with the messages as sent and what was new in them, the response, the
//! tool calls and their results, the tokens, a bar of the context's size over time, and a mark
//! wherever a mechanism acted (a compaction layer, a subagent's lane, a skill, memory, a cron or
//! background turn, a goal's evaluation).
//!
//! | module | what it holds |
//! |---|---|
//! | [`steps`] | from trace lines to steps: the request, what came before it, what was new, the answer |
//! | [`page`] | the HTML page, every text of the trace escaped |
//!
//! Source: ours, after the course's web simulator of the agent loop, which steps through a
//! scripted session; this one steps through the learner's own.

#![warn(missing_docs)]

pub mod page;
pub mod steps;

use std::path::{Path, PathBuf};

/// Where the page for the trace at `trace` goes by default: beside it, `FILE.html`.
pub fn default_output(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_owned();
    name.push(".html");
    PathBuf::from(name)
}

/// The page for the trace text `text`, titled after `name`, and the trace read from it.
pub fn page_for(text: &str, name: &str) -> (String, steps::Trace) {
    let trace = steps::read(text);
    (page::render(&trace, name), trace)
}
