//! Layer 1, `tool_result_budget`: one batch of results may not flood the context.
//!
//! Source: COURSE §4.3, step 1. If the last message is a user message of results whose text
//! totals over the batch budget (200,000 characters), the largest results over the large-result
//! size (30,000) are saved to `.task_outputs/tool-results/`, largest first, until the total
//! fits. Each becomes a `<persisted-output>` block: the full output's path and its first 2,000
//! characters. The model has not seen these results yet, so it gets the start of each and where
//! to read the rest, never a bare reference.

use agent_core::messages::Message;

use crate::archive::{Archive, Layer, Replaced};
use crate::history::{chars, first_chars, replace_result, result_at, result_text, results_in};
use crate::{Acted, Limits};

/// How many characters of a persisted result the budget keeps in the history.
pub const BUDGET_PREVIEW_CHARS: usize = 2_000;

/// `<persisted-output>\nFull output: {path}\nPreview:\n{preview}\n</persisted-output>` (COURSE
/// §4.3).
pub fn persisted_output(path: &str, preview: &str) -> String {
    format!("<persisted-output>\nFull output: {path}\nPreview:\n{preview}\n</persisted-output>")
}

/// The course's `tool_result_budget`: see the module docs. Returns what it did, or `None` when
/// the newest batch fits (or is not a batch). A result whose save fails stays whole, and the
/// failure is in [`Acted::failures`].
pub fn tool_result_budget(history: &mut [Message], limits: &Limits, archive: &mut Archive) -> Option<Acted> {
    let last = history.len().checked_sub(1)?;
    let mut results: Vec<(usize, (usize, usize))> = results_in(history, last..last + 1)
        .into_iter()
        .filter_map(|at| result_at(history, at).map(|r| (chars(&result_text(r)), at)))
        .collect();
    let mut total: usize = results.iter().map(|(size, _)| size).sum();
    if total <= limits.result_batch {
        return None;
    }
    results.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let mut acted = Acted::new(Layer::Budget);
    for (size, at) in results {
        if total <= limits.result_batch {
            break;
        }
        if size <= limits.large_result {
            continue;
        }
        let Some(result) = result_at(history, at) else { continue };
        let (id, output) = (result.tool_use_id.clone(), result_text(result).into_owned());
        // With a --large-result below the preview, a preview could be longer than the result.
        let preview = persisted_output(&archive.result_path(&id), first_chars(&output, BUDGET_PREVIEW_CHARS));
        if chars(&preview) >= size {
            continue;
        }
        match persist(archive, Layer::Budget, &id, &output, BUDGET_PREVIEW_CHARS) {
            Ok(replaced) => {
                let new_size = chars(&replaced.text);
                acted.count(size, new_size);
                total = total - size + new_size;
                replace_result(history, at, replaced.text.clone());
                archive.record(&id, replaced);
            }
            Err(e) => acted.failures.push(format!("cannot save the result of {id}: {e}")),
        }
    }
    acted.any().then_some(acted)
}

/// Saves `output` (the result of `tool_use_id`) and builds its `<persisted-output>` with the
/// first `preview_chars` characters. Shared with `fit_tool_results`, which keeps 1,000.
///
/// # Errors
/// The save's I/O error.
pub(crate) fn persist(
    archive: &mut Archive,
    layer: Layer,
    tool_use_id: &str,
    output: &str,
    preview_chars: usize,
) -> std::io::Result<Replaced> {
    let path = archive.save_result(tool_use_id, output)?;
    let preview = first_chars(output, preview_chars);
    Ok(Replaced {
        layer,
        text: persisted_output(&path, preview),
        preview: Some(first_chars(output, BUDGET_PREVIEW_CHARS).to_owned()),
        path,
        chars: chars(output),
    })
}
