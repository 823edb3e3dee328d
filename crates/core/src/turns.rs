//! Turns that do not come from the keyboard: a queue of automatic turns, served by the same loop
//! that serves the user's prompts.
//!
//! Source: the course's later chapters start turns no one typed: s12 runs a scheduled prompt
//! when a cron job is due, s13 wakes the Lead with its teammates' reports, s15 also wakes on a
//! finished background command. Ours, after codex-rs's submission queue: every turn on an agent
//! is a submission taken in turn by **one** consumer, the loop that owns the agent (`&mut
//! Agent`). That ownership is the agent lock: a user turn and an automatic turn never interleave,
//! because only the serving loop can run either, one at a time.
//!
//! ```text
//!  cron timer ─┐                                 ┌─ the user's line ─► user turn
//!  mailbox   ──┼─ TurnSender::push(AutoTurn) ─► serving loop (REPL, -p) ─┤
//!  background ─┘        (cloneable, Send)        └─ an AutoTurn, when idle ─► automatic turn
//! ```
//!
//! - A producer holds a [`TurnSender`] (cloneable, `Send`: a timer task, a teammate's thread, a
//!   finished background command) and [`TurnSender::push`]es an [`AutoTurn`].
//! - The serving loop holds the [`TurnQueue`]. The REPL takes an item only while it waits for
//!   the user (the agent is idle); an item pushed during a user turn waits until that turn ends.
//!   `-p` serves the items that arrive after its prompt's turn until none is queued and none is
//!   [expected](TurnSender::expect).
//! - An automatic turn carries the text its approver answers instead of asking
//!   ([`AutoTurn::refusal`]): no one is asked `Allow? [y/N]` for a turn they did not start
//!   ([`crate::approve::AskGate`]).
//!
//! The words a chapter shows and sends (`[Scheduled] …`, `[Team events]`) are the chapter's: this
//! module carries a prompt and a source name, and nothing else.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, mpsc};

/// The refusal an automatic turn's approver gives when the producer named none (ours): the
/// call is refused without asking anyone.
pub const DEFAULT_REFUSAL: &str = "Permission denied: no one can be asked for approval during a turn the user did not start; do what needs no approval, or say in your answer what should be allowed";

/// One turn no one typed: its prompt, where it came from, and what its approver answers instead
/// of asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoTurn {
    /// A short name of the producer, shown when the turn starts: `cron`, `team`, `background`.
    pub source: String,
    /// The turn's prompt: the user message it adds to the history (`[Scheduled] run tests`).
    pub prompt: String,
    /// What a tool call that would ask `Allow? [y/N]` gets instead, during this turn (s12:
    /// `Permission denied: scheduled turns cannot request interactive approval`); `None` gives
    /// [`DEFAULT_REFUSAL`].
    pub refusal: Option<String>,
}

impl AutoTurn {
    /// A turn from `source` with `prompt`, refused with [`DEFAULT_REFUSAL`] where it would ask.
    pub fn new(source: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self { source: source.into(), prompt: prompt.into(), refusal: None }
    }

    /// The same turn, whose approver answers `text` where it would ask.
    #[must_use]
    pub fn refusing(mut self, text: impl Into<String>) -> Self {
        self.refusal = Some(text.into());
        self
    }

    /// The text the approver answers in this turn where it would ask.
    pub fn refusal_text(&self) -> &str {
        self.refusal.as_deref().unwrap_or(DEFAULT_REFUSAL)
    }
}

/// What the queue's producers and its consumer share: how many items are expected, and a wake-up
/// for the consumer when that count falls.
#[derive(Debug, Default)]
struct Shared {
    expected: AtomicUsize,
    changed: Notify,
}

/// The producers' end of the queue: cloneable and `Send`, for a timer task, a teammate's thread
/// or a background command. Pushing never blocks.
#[derive(Debug, Clone)]
pub struct TurnSender {
    tx: mpsc::UnboundedSender<AutoTurn>,
    shared: Arc<Shared>,
}

/// The serving loop's end of the queue (see the module docs).
#[derive(Debug)]
pub struct TurnQueue {
    rx: mpsc::UnboundedReceiver<AutoTurn>,
    shared: Arc<Shared>,
    /// Every sender is gone: no item can come any more.
    closed: bool,
}

/// A promise that an item is coming (a background command that will report when it ends, a
/// teammate at work): while one lives, `-p` waits for items instead of exiting. Dropping it
/// withdraws the promise, whether or not the item was pushed.
#[derive(Debug)]
#[must_use = "the promise lasts as long as this value"]
pub struct Expecting {
    shared: Arc<Shared>,
}

/// A new, empty queue of automatic turns: the producers' end and the serving loop's.
pub fn queue() -> (TurnSender, TurnQueue) {
    let (tx, rx) = mpsc::unbounded_channel();
    let shared = Arc::new(Shared::default());
    (TurnSender { tx, shared: Arc::clone(&shared) }, TurnQueue { rx, shared, closed: false })
}

impl TurnSender {
    /// Queues `turn`; `false` when the serving loop is gone (the harness is exiting), so the
    /// turn will never run.
    pub fn push(&self, turn: AutoTurn) -> bool {
        self.tx.send(turn).is_ok()
    }

    /// Says that an item is coming: until the returned value is dropped, [`TurnQueue::next_expected`]
    /// waits for items instead of answering `None`. A background command that will report its
    /// end holds one while it runs, and pushes its item before dropping it.
    pub fn expect(&self) -> Expecting {
        self.shared.expected.fetch_add(1, Ordering::SeqCst);
        Expecting { shared: Arc::clone(&self.shared) }
    }

    /// `true` once the serving loop is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl Drop for Expecting {
    fn drop(&mut self) {
        self.shared.expected.fetch_sub(1, Ordering::SeqCst);
        self.shared.changed.notify_one();
    }
}

impl TurnQueue {
    /// The next item, waiting for it. Pending forever once every sender is gone (a harness with
    /// no producer never gets one), so it can stand in a `select!` beside the user's input.
    pub async fn next(&mut self) -> AutoTurn {
        if !self.closed {
            match self.rx.recv().await {
                Some(turn) => return turn,
                None => self.closed = true,
            }
        }
        std::future::pending().await
    }

    /// An item already queued, without waiting.
    pub fn try_next(&mut self) -> Option<AutoTurn> {
        self.rx.try_recv().ok()
    }

    /// How many items are [expected](TurnSender::expect) now.
    pub fn expected(&self) -> usize {
        self.shared.expected.load(Ordering::SeqCst)
    }

    /// For a loop that ends when the work does (`-p`): the next item, waiting while one is
    /// queued or [expected](TurnSender::expect); `None` once none is queued and none expected.
    /// An expected item that is pushed just before its promise is dropped is never missed.
    pub async fn next_expected(&mut self) -> Option<AutoTurn> {
        let shared = Arc::clone(&self.shared);
        loop {
            // A promise dropped between the checks and the wait leaves a permit: not missed.
            let changed = shared.changed.notified();
            if let Some(turn) = self.try_next() {
                return Some(turn);
            }
            if self.expected() == 0 {
                return None;
            }
            tokio::select! {
                turn = self.rx.recv() => match turn {
                    Some(turn) => return Some(turn),
                    // No sender left, so no promise can be kept either.
                    None => return None,
                },
                () = changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_come_in_order_and_a_closed_queue_never_answers() {
        let (tx, mut rx) = queue();
        let other = tx.clone();
        assert!(tx.push(AutoTurn::new("cron", "one")));
        std::thread::spawn(move || other.push(AutoTurn::new("team", "two").refusing("ask Lead")))
            .join()
            .unwrap_or(false);
        assert_eq!(rx.next().await.prompt, "one");
        let two = rx.next().await;
        assert_eq!((two.source.as_str(), two.refusal_text()), ("team", "ask Lead"));
        assert_eq!(AutoTurn::new("x", "y").refusal_text(), DEFAULT_REFUSAL);
        drop(tx);
        let never = tokio::time::timeout(std::time::Duration::from_millis(10), rx.next()).await;
        assert!(never.is_err(), "a queue without senders stays pending");
    }

    #[tokio::test]
    async fn next_expected_waits_for_a_promised_item_and_ends_without_one() {
        let (tx, mut rx) = queue();
        assert_eq!(rx.next_expected().await, None, "nothing queued, nothing expected");
        let promise = tx.expect();
        let producer = tx.clone();
        let task = tokio::spawn(async move {
            tokio::task::yield_now().await;
            producer.push(AutoTurn::new("background", "done"));
            drop(promise);
        });
        assert_eq!(rx.next_expected().await.map(|t| t.prompt), Some("done".to_owned()));
        task.await.ok();
        assert_eq!(rx.expected(), 0);
        assert_eq!(rx.next_expected().await, None);
        // A promise withdrawn without an item ends the wait too.
        let promise = tx.expect();
        let task = tokio::spawn(async move { drop(promise) });
        assert_eq!(rx.next_expected().await, None);
        task.await.ok();
    }
}
