//! Layer 4, `fit_tool_results`: when reading history is not enough, the largest results go to
//! disk with a short preview.
//!
//! Source: COURSE §4.3, step 4. Still over the context limit after micro-compaction, the
//! largest results (seen or not) are saved, largest first, each replaced by a `<persisted-output>`
//! with its first 1,000 characters, until the history is down to the target. A result the
//! model has not seen yet is never reduced to a bare reference: it keeps the start of its output
//! and the path of the rest, and a replacement that would not be shorter is not made.

use agent_core::messages::Message;

use crate::archive::{Archive, Layer, Replaced};
use crate::history::{chars, replace_result, result_at, result_text, results_in};
use crate::tool_result_budget::{persist, persisted_output};
use crate::{Acted, Limits};

/// How many characters of a result `fit_tool_results` keeps in the history.
pub const FIT_PREVIEW_CHARS: usize = 1_000;

/// The course's `fit_tool_results`: see the module docs. `size` is kept up to date; the caller
/// runs this only while the history is over the limit.
pub fn fit_tool_results(
    history: &mut [Message],
    limits: &Limits,
    size: &mut usize,
    archive: &mut Archive,
) -> Option<Acted> {
    let mut results: Vec<(usize, (usize, usize))> = results_in(history, 0..history.len())
        .into_iter()
        .filter_map(|at| result_at(history, at).map(|r| (chars(&result_text(r)), at)))
        .collect();
    results.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let mut acted = Acted::new(Layer::Fit);
    for (output_chars, at) in results {
        if *size <= limits.target {
            break;
        }
        let Some(result) = result_at(history, at) else { continue };
        let (id, output) = (result.tool_use_id.clone(), result_text(result).into_owned());
        let replaced = match archive.replaced(&id, &output) {
            // Saved before: the same file, a shorter preview (never from a bare reference: its
            // preview would make it longer).
            Some(earlier) if earlier.layer != Layer::Micro => {
                let Some(preview) = archive.preview_of(&earlier, FIT_PREVIEW_CHARS) else { continue };
                Replaced {
                    layer: Layer::Fit,
                    text: persisted_output(&earlier.path, &preview),
                    preview: earlier.preview.clone(),
                    ..earlier
                }
            }
            Some(_) => continue,
            None => {
                if chars(&persisted_output(&archive.result_path(&id), "")) + FIT_PREVIEW_CHARS >= output_chars
                {
                    continue;
                }
                match persist(archive, Layer::Fit, &id, &output, FIT_PREVIEW_CHARS) {
                    Ok(replaced) => replaced,
                    Err(e) => {
                        acted.failures.push(format!("cannot save the result of {id}: {e}"));
                        continue;
                    }
                }
            }
        };
        let new_chars = chars(&replaced.text);
        if new_chars >= output_chars {
            continue;
        }
        *size = size.saturating_add_signed(-replace_result(history, at, replaced.text.clone()));
        acted.count(output_chars, new_chars);
        archive.record(&id, replaced);
    }
    acted.any().then_some(acted)
}
