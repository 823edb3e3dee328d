//! The nag reminder (course s03 and s05): a counter of rounds without a todo call, and a policy.
//!
//! A *round* is one model response that had tool calls. After the round's tools have run the loop calls
//! [`Nag::after_round`] with whether any call in it was the todo tool; when it returns `true`, the loop
//! appends [`REMINDER`] as a text block (the JSON of [`reminder_block`]) **last** in that round's
//! tool-result message. In the chapters, `todo::tools::NagExtension` does this through
//! `agent_core`'s `Extension::after_round`, and `agent_loop` places the block after every `tool_result`.
//!
//! | rounds without a todo call | 1 | 2 | 3 | 4 | 5 | 6 | 7 | … |
//! |---|---|---|---|---|---|---|---|---|
//! | s03, [`ResetPolicy::KeepNagging`] | | | ✓ | ✓ | ✓ | ✓ | ✓ | every round |
//! | s05, [`ResetPolicy::ResetAfterRemind`] | | | ✓ | | | ✓ | | every third |

use serde_json::{Value, json};

/// The reminder text, exact (course s03 and s05).
pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";

/// The rounds without a todo call after which the course reminds.
pub const DEFAULT_THRESHOLD: u32 = 3;

/// The content block the loop appends, as JSON: `{"type":"text","text":"<reminder>Update your todos.</reminder>"}`
/// (for harnesses that build messages as raw JSON; `agent_loop` builds the same block from [`REMINDER`]).
pub fn reminder_block() -> Value {
    json!({"type": "text", "text": REMINDER})
}

/// What happens to the counter once a reminder has been sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPolicy {
    /// Course s03: the counter is not reset after reminding, so the reminder repeats every round until the
    /// model updates its todos.
    KeepNagging,
    /// Course s05: the counter goes back to 0 after reminding, so the reminder comes every third round.
    ResetAfterRemind,
}

/// What the counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Course s03 and s05: rounds without a todo call, from 0 at each user turn.
    Rounds,
    /// Course s15: each call of another tool that ran counts one, a todo call puts the count back
    /// to 0 where it stands in the round, and the count carries over from one turn to the next
    /// (the course keeps it in a module global).
    Calls,
}

/// The rounds-since-todo counter (`rounds_since_todo` in the course) with its threshold and policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nag {
    threshold: u32,
    policy: ResetPolicy,
    count: u32,
    counting: Counting,
}

impl Nag {
    /// A counter at 0 that reminds once `threshold` rounds in a row had no todo call.
    pub fn new(threshold: u32, policy: ResetPolicy) -> Self {
        Nag { threshold, policy, count: 0, counting: Counting::Rounds }
    }

    /// Course s15: threshold 3, [`ResetPolicy::ResetAfterRemind`], [`Counting::Calls`].
    pub fn s15() -> Self {
        Nag { counting: Counting::Calls, ..Nag::s05() }
    }

    /// What the counter counts.
    pub fn counting(&self) -> Counting {
        self.counting
    }

    /// [`Counting::Calls`]: records one round's calls, in order (`true` for a todo call), and
    /// says whether to remind; under [`ResetPolicy::ResetAfterRemind`] a reminder puts the count
    /// back to 0.
    pub fn after_calls(&mut self, todo_calls: impl IntoIterator<Item = bool>) -> bool {
        for todo in todo_calls {
            self.count = if todo { 0 } else { self.count.saturating_add(1) };
        }
        let remind = self.count >= self.threshold;
        if remind && self.policy == ResetPolicy::ResetAfterRemind {
            self.count = 0;
        }
        remind
    }

    /// Course s03: threshold 3, [`ResetPolicy::KeepNagging`] (reminds in rounds 3, 4, 5, …).
    pub fn s03() -> Self {
        Nag::new(DEFAULT_THRESHOLD, ResetPolicy::KeepNagging)
    }

    /// Course s05: threshold 3, [`ResetPolicy::ResetAfterRemind`] (reminds in rounds 3, 6, 9, …).
    pub fn s05() -> Self {
        Nag::new(DEFAULT_THRESHOLD, ResetPolicy::ResetAfterRemind)
    }

    /// Starts a user turn: the counter goes to 0 (the course keeps it local to `agent_loop`), except
    /// when it counts calls (s15 keeps that count for the session).
    pub fn begin_turn(&mut self) {
        if self.counting == Counting::Rounds {
            self.count = 0;
        }
    }

    /// Records one round and says whether to append the reminder to its results.
    ///
    /// `used_todo` is true when any call in the round was the todo tool (in s05 a call that returned an
    /// error counts; one blocked by a hook does not — the caller decides). The counter goes to 0 if
    /// `used_todo`, otherwise up by 1; the answer is `count >= threshold`. Under
    /// [`ResetPolicy::ResetAfterRemind`] a `true` answer also puts the counter back to 0.
    pub fn after_round(&mut self, used_todo: bool) -> bool {
        self.count = if used_todo { 0 } else { self.count.saturating_add(1) };
        let remind = self.count >= self.threshold;
        if remind && self.policy == ResetPolicy::ResetAfterRemind {
            self.count = 0;
        }
        remind
    }

    /// Rounds in a row without a todo call (since the last reset).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The number of rounds that triggers the reminder.
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The reset policy.
    pub fn policy(&self) -> ResetPolicy {
        self.policy
    }
}
