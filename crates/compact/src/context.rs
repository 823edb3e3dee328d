//! What the learner can ask about compaction: `/context` and `/history`.
//!
//! `/context` shows the history's size against the limit, each layer with what it looks at, and
//! which layer would act on a request sent now (the layers are run on a copy, writing nothing) or,
//! if none, which acts first and when. `/history` is the built-in view with the archived and
//! compacted parts marked.

use agent_cli::repl::{CommandContext, SlashCommand, history_view_with};
use agent_cli::ui::count;
use agent_core::agent::latest_user_text;
use agent_core::events::Silent;
use agent_core::messages::{ContentBlock, Message};

use crate::archive::{Archive, Layer, Replaced};
use crate::history::{chars, human_size, latest_assistant, result_at, result_text, results_in, thousands};
use crate::{Compaction, Limits, prepare};

/// The chapter's commands: `/context` and an annotated `/history`.
pub(crate) fn commands(compaction: &Compaction) -> Vec<SlashCommand> {
    let (context, history) = (compaction.clone(), compaction.clone());
    vec![
        SlashCommand::with_context(
            "context",
            "the history's size against the compaction limit, each layer, and which acts next",
            move |c| c.ui.say(&context_report(c.history, &context.limits, &context.archive)),
        ),
        SlashCommand::with_context(
            "history",
            "the messages array as the next request sends it, with archived and compacted parts marked",
            move |c: &CommandContext<'_>| {
                let messages = c.agent.request(c.history).messages;
                let archive = &history.archive;
                c.ui.say(&history_view_with(&messages, &|block| note(archive, block)));
            },
        ),
    ]
}

/// What `/history` says about a block compaction wrote, or `None`.
pub fn note(archive: &Archive, block: &ContentBlock) -> Option<String> {
    match block {
        ContentBlock::Text(text) if archive.is_snip_marker(&text.text) => Some(
            "snip_compact: the messages between here and the start were archived (path in the text)".into(),
        ),
        ContentBlock::Text(text) => archive.summary_layer(&text.text).map(|layer| {
            format!(
                "{}: the history before this point, summarised by the model; the transcript is on disk",
                layer.name()
            )
        }),
        ContentBlock::ToolResult(result) => {
            let Replaced { layer, path, chars, .. } =
                archive.replaced(&result.tool_use_id, &result_text(result))?;
            let what = match layer {
                Layer::Budget => "saved, a 2,000-character preview stays",
                Layer::Fit => "saved, a 1,000-character preview stays",
                _ => "saved, the model was given its path",
            };
            Some(format!(
                "{}: {what}; the full {} is in {}",
                layer.name(),
                human_size(chars),
                archive.relative(&path)
            ))
        }
        _ => None,
    }
}

/// `/context`: see the module docs.
pub fn context_report(history: &[Message], limits: &Limits, archive: &Archive) -> String {
    let size = crate::context_size(history);
    let percent = size * 100 / limits.context_limit.max(1);
    let mut out = format!(
        "context: {} of {} characters ({percent}%), {} messages; once over the limit, compaction brings it down to {}\n",
        thousands(size),
        thousands(limits.context_limit),
        history.len(),
        thousands(limits.target),
    );
    out.push_str("(sizes are characters of the messages' JSON, as the course measures them, not tokens)\n");
    out.push_str("before each request, in order:\n");
    let batch = history.len().checked_sub(1).map_or(0, |last| {
        results_in(history, last..last + 1)
            .into_iter()
            .filter_map(|at| result_at(history, at))
            .map(|r| chars(&result_text(r)))
            .sum()
    });
    let seen_end = latest_assistant(history).unwrap_or(0);
    let seen = results_in(history, 0..seen_end).len();
    let rows = [
        (
            "tool_result_budget",
            format!(
                "the newest batch of results holds {} of {}",
                thousands(batch),
                thousands(limits.result_batch)
            ),
        ),
        ("snip_compact", format!("{} of {} messages", history.len(), limits.max_messages)),
        (
            "micro_compact",
            format!(
                "over {}: {} of the {seen} results the model has seen may be saved (the last {} stay)",
                thousands(limits.context_limit),
                seen.saturating_sub(limits.keep_recent_results),
                limits.keep_recent_results
            ),
        ),
        ("fit_tool_results", "still over: the largest results get a 1,000-character preview".to_owned()),
        ("compact_history", "still over: [auto compact], a summary by the model".to_owned()),
    ];
    for (i, (name, what)) in rows.iter().enumerate() {
        out.push_str(&format!("  {}. {name:<19} {what}\n", i + 1));
    }
    out.push_str(&next_to_act(history, limits, archive, size));
    let stats = archive.stats();
    out.push_str(&format!(
        "\nso far: {} ({} archived), {} saved (budget {}, micro {}, fit {}), {}, {}",
        count(stats.snips, "snip", "snips"),
        count(stats.snipped_messages, "message", "messages"),
        count(stats.budget_results + stats.micro_results + stats.fit_results, "result", "results"),
        stats.budget_results,
        stats.micro_results,
        stats.fit_results,
        count(stats.summaries, "summary", "summaries"),
        count(stats.reactive, "reactive compaction", "reactive compactions"),
    ));
    if let Some(transcript) = archive.last_transcript() {
        out.push_str(&format!("\nnewest transcript: {}", archive.relative(&transcript)));
    }
    out
}

/// Which layer acts on a request sent now (the layers run on a copy, writing nothing), or, if
/// none, which is the first to act and when.
fn next_to_act(history: &[Message], limits: &Limits, archive: &Archive, size: usize) -> String {
    let mut copy = history.to_vec();
    let request = latest_user_text(history);
    let prepared = prepare(&mut copy, limits, request.as_deref(), &mut archive.dry_run(), &Silent);
    let mut acting: Vec<&str> = prepared.acted.iter().map(|layer| layer.name()).collect();
    if prepared.size > limits.context_limit {
        acting.push(Layer::Summary.name());
    }
    if !acting.is_empty() {
        return format!("a request sent now: {} would act", acting.join(", then "));
    }
    format!(
        "a request sent now: no layer acts; next: snip_compact past {} messages ({} more), micro_compact past {} characters ({} more)",
        limits.max_messages,
        (limits.max_messages + 1).saturating_sub(history.len()),
        thousands(limits.context_limit),
        thousands((limits.context_limit + 1).saturating_sub(size)),
    )
}
