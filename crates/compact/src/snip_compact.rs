//! Layer 2, `snip_compact`: a long history keeps its start and its recent end; the middle goes
//! to disk.
//!
//! Source: COURSE §4.3, step 2. Over 50 messages: the first 3 and the last 46 stay, each end
//! widened so that no `tool_use` is parted from its `tool_result`; the middle becomes one user
//! message, `[{n} messages archived at {path}]`, where the file
//! `.transcripts/transcript_{random hex}.jsonl` holds the **complete** history, one message per
//! line. Snipping twice changes nothing: a middle that is only the last snip's marker is left.
//!
//! **(fix, course #577)** The history may hold several user requests, one per turn. The start
//! that stays holds the first; the middle may hold the one the agent is working on. A snip that
//! archived it left the model the first task and recent tool calls, and models went back to the
//! old task. When the active request is not in what stays, it is appended again (and the tail
//! keeps one message fewer, so the snip's result is still at most 50 messages and a second snip
//! still changes nothing): the model always sees the request it works on, exactly once.

use agent_core::messages::Message;

use crate::Limits;
use crate::archive::Archive;
use crate::history::{has_tool_use, is_tool_result, plain_text};

/// How many messages at the start of the history a snip keeps (COURSE §4.3): the first request
/// and the first exchange, which set the scene.
pub const KEEP_HEAD: usize = 3;

/// What one snip did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snipped {
    /// How many messages the marker replaced.
    pub archived: usize,
    /// The transcript that holds the complete history, as the model sees its path.
    pub transcript: String,
    /// Whether the active request was archived and appended again (course #577).
    pub request_appended: bool,
}

/// The marker a snip leaves in place of the middle (COURSE §4.3).
pub fn snip_marker(archived: usize, transcript: &str) -> String {
    format!("[{archived} messages archived at {transcript}]")
}

/// The course's `snip_compact`: see the module docs. `active_request` is the prompt of the turn
/// in progress. Returns what it did, or `None` when the history is short enough, the middle is
/// already one marker, or the transcript could not be saved (`Err`, with the history untouched).
///
/// # Errors
/// The transcript's I/O error; nothing was archived.
pub fn snip_compact(
    history: &mut Vec<Message>,
    limits: &Limits,
    active_request: Option<&str>,
    archive: &mut Archive,
) -> Result<Option<Snipped>, std::io::Error> {
    if history.len() <= limits.max_messages {
        return Ok(None);
    }
    let keep_tail = limits.snip_to.min(limits.max_messages).saturating_sub(KEEP_HEAD + 1).max(1);
    let Some((mut head_end, mut tail_start)) = cut(history, keep_tail) else { return Ok(None) };
    let shown = |history: &[Message], head_end: usize, tail_start: usize| {
        active_request.is_none_or(|request| {
            history[..head_end].iter().chain(&history[tail_start..]).any(|m| shows_request(m, request))
        })
    };
    let mut request_appended = false;
    if !shown(history, head_end, tail_start) {
        // The request takes a place of the tail, so that the result still holds at most
        // `max_messages` and snipping it again changes nothing.
        let Some(narrower) = cut(history, keep_tail.saturating_sub(1).max(1)) else { return Ok(None) };
        (head_end, tail_start) = narrower;
        request_appended = !shown(history, head_end, tail_start);
    }
    let middle = &history[head_end..tail_start];
    if middle.len() == 1
        && plain_text(&middle[0]).is_some_and(|t| archive.is_snip_marker(t))
        && !request_appended
    {
        return Ok(None);
    }
    let transcript = archive.save_transcript(history)?;
    let archived = tail_start - head_end;
    let marker = snip_marker(archived, &transcript);
    history.splice(head_end..tail_start, [Message::user_text(marker.clone())]);
    if request_appended && let Some(request) = active_request {
        history.push(Message::user_text(request));
    }
    archive.record_snip(&marker, archived);
    Ok(Some(Snipped { archived, transcript, request_appended }))
}

/// Where the kept start ends and the kept end starts, for a tail of `keep_tail` messages: the
/// start widened over the results of a `tool_use` it ends with, the end widened back to the
/// `tool_use` its first results answer. `None` when nothing is left between them.
fn cut(history: &[Message], keep_tail: usize) -> Option<(usize, usize)> {
    let mut head_end = KEEP_HEAD.min(history.len());
    let mut tail_start = history.len().saturating_sub(keep_tail);
    if head_end > 0 && has_tool_use(&history[head_end - 1]) {
        while head_end < tail_start && is_tool_result(&history[head_end]) {
            head_end += 1;
        }
    }
    if tail_start > 0
        && tail_start < history.len()
        && is_tool_result(&history[tail_start])
        && has_tool_use(&history[tail_start - 1])
    {
        tail_start -= 1;
    }
    (head_end < tail_start).then_some((head_end, tail_start))
}

/// Whether `message` shows `request` to the model: the prompt itself, or a summary message whose
/// current request it is.
pub(crate) fn shows_request(message: &Message, request: &str) -> bool {
    let Some(text) = plain_text(message) else { return false };
    text == request || crate::compact_history::request_in_summary(text) == Some(request)
}
