//! What compaction did in a session: how many times each of its seven ways acted, counted as
//! each reported its line (`[snip: …]`, `[auto compact]`, …), and the recap the offline demo
//! ends with, which names every way, the ones that acted and the ones that did not, and how to
//! see them.

use crate::Limits;
use crate::archive::Layer;
use crate::history::thousands;

/// One way compaction acts: the five layers before a request, the `compact` tool and reactive
/// compaction (COURSE §4.3). The summary layer is one function with two ways in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// `tool_result_budget`, layer 1.
    Budget,
    /// `snip_compact`, layer 2.
    Snip,
    /// `micro_compact`, layer 3.
    Micro,
    /// `fit_tool_results`, layer 4.
    Fit,
    /// `compact_history` before a request (`[auto compact]`), layer 5.
    Auto,
    /// `compact_history` after the batch in which the model called the `compact` tool.
    Tool,
    /// `reactive_compact`, after the endpoint answered "prompt is too long".
    Reactive,
}

impl Way {
    /// Every way, in the order the recap lists them.
    pub const ALL: [Way; 7] =
        [Way::Budget, Way::Snip, Way::Micro, Way::Fit, Way::Auto, Way::Tool, Way::Reactive];

    /// The name the learner sees: the course's function name, or the tool's.
    pub fn name(self) -> &'static str {
        match self {
            Way::Budget => "tool_result_budget",
            Way::Snip => "snip_compact",
            Way::Micro => "micro_compact",
            Way::Fit => "fit_tool_results",
            Way::Auto => "compact_history",
            Way::Tool => "compact tool",
            Way::Reactive => "reactive_compact",
        }
    }

    /// The line it prints when it acts, as the recap names it.
    fn shown_as(self) -> &'static str {
        match self {
            Way::Budget => "[tool result budget: …]",
            Way::Snip => "[snip: …]",
            Way::Micro => "[micro-compact: …]",
            Way::Fit => "[fit: …]",
            Way::Auto => "[auto compact]",
            Way::Tool => "[compact: the model asked for a summary]",
            Way::Reactive => "[reactive compact]",
        }
    }

    /// When it acts, with the limits in force: what a learner changes to see it.
    fn when(self, limits: &Limits) -> String {
        match self {
            Way::Budget => format!(
                "when one batch of results is over {} characters (--result-budget)",
                thousands(limits.result_batch)
            ),
            Way::Snip => format!("past {} messages (--max-messages)", limits.max_messages),
            Way::Micro => format!(
                "over {} characters (--context-limit), on results the model has read",
                thousands(limits.context_limit)
            ),
            Way::Fit => "when micro_compact was not enough".to_owned(),
            Way::Auto => "when fit_tool_results was not enough".to_owned(),
            Way::Tool => "when the model calls compact (ask it to)".to_owned(),
            Way::Reactive => "when the endpoint answers \"prompt is too long\"".to_owned(),
        }
    }
}

impl From<Layer> for Way {
    /// The way a layer of [`crate::prepare`] or a summary acted in (a summary by
    /// [`Layer::Summary`] is taken as the automatic one).
    fn from(layer: Layer) -> Self {
        match layer {
            Layer::Budget => Way::Budget,
            Layer::Snip => Way::Snip,
            Layer::Micro => Way::Micro,
            Layer::Fit => Way::Fit,
            Layer::Summary => Way::Auto,
            Layer::Reactive => Way::Reactive,
        }
    }
}

/// How many times each [`Way`] acted, counted as each reported its line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acts {
    counts: [usize; 7],
}

impl Acts {
    /// Counts one act of `way`.
    pub fn add(&mut self, way: Way) {
        self.counts[way as usize] += 1;
    }

    /// How many times `way` acted.
    pub fn count(&self, way: Way) -> usize {
        self.counts[way as usize]
    }

    /// The recap: each way, how many times it acted and its line, or, for one that did not,
    /// when it would (with `limits`); then where to look again. Several lines.
    pub fn recap(&self, limits: &Limits) -> String {
        let acted = Way::ALL.iter().filter(|w| self.count(**w) > 0).count();
        let mut out = format!("[compaction in this run: {acted} of the {} ways acted]", Way::ALL.len());
        for way in Way::ALL {
            let what = match self.count(way) {
                0 => format!("did not act; it acts {}", way.when(limits)),
                1 => format!("acted once: {}", way.shown_as()),
                n => format!("acted {n} times: {}", way.shown_as()),
            };
            out.push_str(&format!("\n  {:<18} {what}", way.name()));
        }
        out.push_str(
            "\n  to look again: live, /context shows the size against the limit and what acts next, /history \
             what was archived; on disk, .transcripts/ and .task_outputs/tool-results/ (--demo --keep keeps them)",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recap_names_every_way_and_says_which_acted() {
        let mut acts = Acts::default();
        acts.add(Way::Snip);
        acts.add(Way::Micro);
        acts.add(Way::Micro);
        let recap = acts.recap(&Limits::default());
        assert!(recap.starts_with("[compaction in this run: 2 of the 7 ways acted]"), "{recap}");
        for way in Way::ALL {
            assert!(recap.contains(&format!("\n  {:<18} ", way.name())), "{way:?} missing:\n{recap}");
        }
        assert!(recap.contains("snip_compact       acted once: [snip: …]"), "{recap}");
        assert!(recap.contains("micro_compact      acted 2 times: [micro-compact: …]"), "{recap}");
        assert!(
            recap.contains("reactive_compact   did not act; it acts when the endpoint answers"),
            "{recap}"
        );
        assert!(recap.contains("over 200,000 characters (--result-budget)"), "{recap}");
    }
}
