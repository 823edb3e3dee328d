//! Layer 3, `micro_compact`: results the model has already read make way, oldest first.
//!
//! Source: COURSE §4.3, step 3. Only while the history is over the context limit (50,000
//! characters), and only until it is down to the target (40,000): among the results the model
//! has already seen (those before the latest assistant message), all but the last 3, each over
//! 120 characters, become `[Earlier tool result saved at {path}]`, the original saved as
//! `.task_outputs/tool-results/{id}.txt`.
//!
//! What it never touches:
//! - a result the model has not seen yet (after the latest assistant message): replacing it
//!   would hide the output the model asked for, and the model would ask again (course #62,
//!   where models re-read files in a loop);
//! - the last 3 results the model has seen: what it is working with right now;
//! - a result whose replacement would not be shorter.
//!
//! A result that a layer before already saved (the budget's `<persisted-output>`) keeps its file;
//! one that merely quotes such a path in its output is saved again (see `archive`).

use agent_core::messages::Message;

use crate::archive::{Archive, Layer, Replaced};
use crate::history::{chars, latest_assistant, replace_result, result_at, result_text, results_in};
use crate::{Acted, Limits};

/// Results at most this long (characters) stay: a reference to a file would save nothing.
pub const MICRO_MIN_CHARS: usize = 120;

/// The reference micro-compaction leaves in place of a result (COURSE §4.3).
pub fn earlier_result(path: &str) -> String {
    format!("[Earlier tool result saved at {path}]")
}

/// The course's `micro_compact`: see the module docs. `size` is the history's size, kept up to
/// date as results are replaced; the caller runs this only while it is over the limit. Returns
/// what it did, or `None` when nothing could go.
pub fn micro_compact(
    history: &mut [Message],
    limits: &Limits,
    size: &mut usize,
    archive: &mut Archive,
) -> Option<Acted> {
    let seen_end = latest_assistant(history)?;
    let seen = results_in(history, 0..seen_end);
    let older = seen.len().saturating_sub(limits.keep_recent_results);
    let mut acted = Acted::new(Layer::Micro);
    for &at in &seen[..older] {
        if *size <= limits.target {
            break;
        }
        let Some(result) = result_at(history, at) else { continue };
        let output = result_text(result);
        let output_chars = chars(&output);
        if output_chars <= MICRO_MIN_CHARS {
            continue;
        }
        let id = result.tool_use_id.clone();
        let earlier = archive.replaced(&id, &output);
        if earlier.as_ref().is_some_and(|r| r.layer == Layer::Micro) {
            continue;
        }
        // Nothing is saved for a result its reference would not shorten.
        let path_hint = earlier.as_ref().map_or_else(|| archive.result_path(&id), |r| r.path.clone());
        if chars(&earlier_result(&path_hint)) >= output_chars {
            continue;
        }
        // A result the budget or fit saved keeps its file; any other is saved now.
        let (path, full_chars) = match &earlier {
            Some(replaced) => (replaced.path.clone(), replaced.chars),
            None => match archive.save_result(&id, &output) {
                Ok(path) => (path, output_chars),
                Err(e) => {
                    acted.failures.push(format!("cannot save the result of {id}: {e}"));
                    continue;
                }
            },
        };
        let text = earlier_result(&path);
        let new_chars = chars(&text);
        let preview = earlier.and_then(|r| r.preview);
        *size = size.saturating_add_signed(-replace_result(history, at, text.clone()));
        acted.count(output_chars, new_chars);
        archive.record(&id, Replaced { layer: Layer::Micro, text, path, preview, chars: full_chars });
    }
    acted.any().then_some(acted)
}
