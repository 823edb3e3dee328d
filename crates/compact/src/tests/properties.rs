//! Properties over random sessions:
//! - a snip never parts a `tool_use` from its results, shows the active request exactly once, and
//!   a second snip changes nothing;
//! - the layers never part a pair, and a result the model has not seen keeps its start;
//! - compaction rewrites the history, so the send path's caches (the `Normalizer` and the
//!   client's wire cache) must notice: through the real HTTP client against the loopback server,
//!   with random compactions (every layer, the `compact` tool, reactive compaction on a scripted
//!   `prompt_too_long`), every request body equals a fresh `normalize_messages` and serialisation
//!   of the history it was built from (with the prompt-caching breakpoints, which are chosen from
//!   the request alone), and passes mock-api's request rules.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::extension::{AfterBatch, Extension, LoopContext, Recovery};
use agent_core::normalize::normalize_messages;
use mock_api::{MockServer, Reply, reply};
use proptest::prelude::*;

use super::*;
use crate::history::{has_tool_use, is_tool_result};

/// A random session's history: turns of a prompt, then rounds of one to three calls with
/// results of random sizes, then maybe an answer, maybe a call the user interrupted.
fn session() -> impl Strategy<Value = Vec<Message>> {
    let round = prop::collection::vec(0usize..3_000, 1..4);
    let turn = (prop::collection::vec(round, 0..8), any::<bool>(), any::<bool>());
    prop::collection::vec(turn, 1..8).prop_map(|turns| {
        let mut history = Vec::new();
        let mut n = 0;
        for (t, (rounds, interrupted, answered)) in turns.into_iter().enumerate() {
            history.push(Message::user_text(format!("request {t}")));
            for sizes in rounds {
                let ids: Vec<String> = sizes
                    .iter()
                    .map(|_| {
                        n += 1;
                        format!("t{n}")
                    })
                    .collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                history.push(calls(&refs));
                let outs: Vec<(&str, String)> =
                    refs.iter().zip(&sizes).map(|(id, size)| (*id, "o".repeat(*size))).collect();
                history.push(results(&outs));
            }
            if interrupted {
                n += 1;
                history.push(calls(&[&format!("t{n}")]));
            }
            if answered {
                history.push(assistant_text("done"));
            }
        }
        history
    })
}

fn small_limits() -> impl Strategy<Value = Limits> {
    (2_000usize..20_000, 6usize..30, 0usize..4, 1_000usize..8_000).prop_map(|(limit, max, keep, batch)| {
        Limits {
            context_limit: limit,
            target: limit / 5 * 4,
            max_messages: max,
            keep_recent_results: keep,
            result_batch: batch,
            large_result: batch / 4,
            ..Limits::default()
        }
    })
}

/// The ids of the `tool_use` blocks answered in the very next message.
fn answered(history: &[Message]) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (i, message) in history.iter().enumerate() {
        let Some(next) = history.get(i + 1) else { continue };
        for block in blocks(message) {
            if let ContentBlock::ToolUse(call) = block
                && blocks(next)
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolResult(r) if r.tool_use_id == call.id))
            {
                ids.insert(call.id.clone());
            }
        }
    }
    ids
}

/// The ids of the `tool_result` blocks whose call is not in the message before.
fn orphans(history: &[Message]) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (i, message) in history.iter().enumerate() {
        for block in blocks(message) {
            if let ContentBlock::ToolResult(result) = block {
                let called = i.checked_sub(1).is_some_and(|p| {
                    blocks(&history[p])
                        .iter()
                        .any(|b| matches!(b, ContentBlock::ToolUse(u) if u.id == result.tool_use_id))
                });
                if !called {
                    ids.insert(result.tool_use_id.clone());
                }
            }
        }
    }
    ids
}

/// The ids of every `tool_use` block.
fn call_ids(history: &[Message]) -> HashSet<String> {
    history
        .iter()
        .flat_map(|m| blocks(m).iter())
        .filter_map(|b| match b {
            ContentBlock::ToolUse(u) => Some(u.id.clone()),
            _ => None,
        })
        .collect()
}

/// No pair of `before` is parted in `after`: a call that kept its results still has them, and
/// no result lost its call.
fn pairs_kept(before: &[Message], after: &[Message]) -> Result<(), TestCaseError> {
    let kept = call_ids(after);
    let expected: HashSet<String> = answered(before).into_iter().filter(|id| kept.contains(id)).collect();
    prop_assert_eq!(answered(after), expected);
    prop_assert!(orphans(after).is_subset(&orphans(before)));
    Ok(())
}

fn fail(e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn snips_part_no_pair_show_the_request_once_and_are_idempotent(history in session(), limits in small_limits()) {
        let (_dir, ws) = workspace().map_err(fail)?;
        let mut archive = Archive::new(&ws);
        let request = agent_core::agent::latest_user_text(&history);
        let mut once = history.clone();
        let snipped = snip_compact(&mut once, &limits, request.as_deref(), &mut archive).map_err(fail)?;
        pairs_kept(&history, &once)?;
        if history.len() > limits.max_messages {
            prop_assert!(snipped.is_none() || once.len() <= limits.max_messages + 2, "{} messages", once.len());
        } else {
            prop_assert!(snipped.is_none());
        }
        if let Some(request) = &request {
            let shown = once.iter().filter(|m| snip_compact::shows_request(m, request)).count();
            prop_assert_eq!(shown, 1);
        }
        let mut twice = once.clone();
        prop_assert_eq!(snip_compact(&mut twice, &limits, request.as_deref(), &mut archive).map_err(fail)?, None);
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn the_layers_part_no_pair_and_unseen_results_keep_their_start(history in session(), limits in small_limits()) {
        let (_dir, ws) = workspace().map_err(fail)?;
        let mut archive = Archive::new(&ws);
        let request = agent_core::agent::latest_user_text(&history);
        let mut compacted = history.clone();
        let prepared = prepare(&mut compacted, &limits, request.as_deref(), &mut archive, &agent_core::events::Silent);
        prop_assert_eq!(prepared.size, context_size(&compacted));
        pairs_kept(&history, &compacted)?;
        // The results after the latest assistant message are the ones the model has not seen.
        let unseen_from = compacted.iter().rposition(|m| m.role == Role::Assistant).map_or(0, |i| i + 1);
        for message in &compacted[unseen_from..] {
            for block in blocks(message) {
                let ContentBlock::ToolResult(result) = block else { continue };
                let now = result_text(result);
                let original = output_of(&history, &result.tool_use_id).unwrap_or_default();
                let kept = *now == original
                    || (now.starts_with("<persisted-output>\nFull output: ")
                        && now.contains(&format!("\nPreview:\n{}", &original[..original.len().min(1_000)])));
                prop_assert!(kept, "an unseen result lost its start: {}", now);
            }
        }
    }
}

/// Wraps the compaction extension and keeps the history each loop request is built from: after
/// `pre_inference`, and after an `on_request_error` that asked for the retry.
struct Snapshots {
    inner: Compaction,
    seen: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl Snapshots {
    fn keep(&self, history: &[Message]) {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(history.to_vec());
    }
}

#[async_trait::async_trait]
impl Extension for Snapshots {
    async fn pre_inference(&mut self, context: &mut LoopContext<'_>) -> Result<(), ApiError> {
        self.inner.pre_inference(context).await?;
        self.keep(context.history);
        Ok(())
    }
    async fn after_tool_batch(&mut self, context: &mut LoopContext<'_>) -> Result<AfterBatch, ApiError> {
        self.inner.after_tool_batch(context).await
    }
    async fn on_request_error(
        &mut self,
        context: &mut LoopContext<'_>,
        error: &ApiError,
    ) -> Result<Recovery, ApiError> {
        let recovery = self.inner.on_request_error(context, error).await?;
        if recovery == Recovery::Retry {
            self.keep(context.history);
        }
        Ok(recovery)
    }
}

/// One scripted answer of the model in a random session.
#[derive(Debug, Clone)]
enum Step {
    /// Read these files (indices into the workspace's files), maybe with `compact` in the batch.
    Read(Vec<usize>, bool),
    /// Answer; the user then sends the next prompt.
    Answer,
    /// `400 prompt is too long` (the next request is the reactive retry).
    TooLong,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        8 => (prop::collection::vec(0usize..6, 1..4), prop::bool::weighted(0.1)).prop_map(|(f, c)| Step::Read(f, c)),
        1 => Just(Step::Answer),
        1 => Just(Step::TooLong),
    ];
    prop::collection::vec(step, 1..60)
}

/// Sizes of the six files the session reads, in bytes.
const FILE_SIZES: [usize; 6] = [10, 300, 1_500, 4_000, 9_000, 40_000];

fn run_session(steps: Vec<Step>, limits: Limits) -> Result<crate::archive::Stats, TestCaseError> {
    let (dir, ws) = workspace().map_err(fail)?;
    for (i, size) in FILE_SIZES.iter().enumerate() {
        std::fs::write(dir.path().join(format!("f{i}.txt")), "é".repeat(*size / 2)).map_err(fail)?;
    }
    let script: Arc<Mutex<VecDeque<Step>>> = Arc::new(Mutex::new(steps.into()));
    let counter = Arc::new(Mutex::new(0usize));
    let server = {
        let (script, counter) = (Arc::clone(&script), Arc::clone(&counter));
        MockServer::start_fn(move |request| {
            if request.body["system"] == SUMMARY_SYSTEM {
                return Reply::Message(reply::message(
                    vec![reply::text_block("the summary so far")],
                    "end_turn",
                ));
            }
            let step = script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
            let mut n = counter.lock().unwrap_or_else(|p| p.into_inner());
            match step {
                Some(Step::Read(files, compact)) => {
                    let mut blocks: Vec<_> = files
                        .iter()
                        .map(|f| {
                            *n += 1;
                            reply::tool_use_block(
                                &format!("r{n}"),
                                "read_file",
                                json!({"path": format!("f{f}.txt")}),
                            )
                        })
                        .collect();
                    if compact {
                        *n += 1;
                        blocks.push(reply::tool_use_block(&format!("c{n}"), "compact", json!({})));
                    }
                    Reply::Message(reply::message(blocks, "tool_use"))
                }
                Some(Step::TooLong) => reply::error(
                    400,
                    "invalid_request_error",
                    "prompt is too long: 210000 tokens > 200000 maximum",
                ),
                Some(Step::Answer) | None => {
                    Reply::Message(reply::message(vec![reply::text_block("done")], "end_turn"))
                }
            }
        })
    };
    let config = agent_core::test_util::loopback_config(server.base_url());
    let retry = RetryPolicy { max_retries: 0, ..RetryPolicy::default() };
    let model: Arc<dyn agent_core::model::Model> =
        Arc::new(AnthropicClient::new(&config, retry, Timeouts::default()).map_err(fail)?);
    let compaction = Compaction::in_workspace(&ws, limits);
    let archive = compaction.archive().clone();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut agent = Agent::builder(model, "mock-model")
        .system("system")
        .tools(tools::all(&ws, &ToolOptions::default()).with(compaction.compact_tool()))
        .extension(Snapshots { inner: compaction, seen: Arc::clone(&seen) })
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(fail)?;
    let mut history = Vec::new();
    for turn in 0..30 {
        if script.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            break;
        }
        // A failed turn (a second prompt_too_long) leaves a sendable history; the session goes on.
        let _ = runtime.block_on(agent.run_turn(&mut history, &format!("request {turn}")));
    }
    let requests: Vec<_> =
        server.requests().into_iter().filter(|r| r.body["system"] != SUMMARY_SYSTEM).collect();
    let seen = seen.lock().unwrap_or_else(|p| p.into_inner()).clone();
    prop_assert_eq!(requests.len(), seen.len(), "one kept history per loop request");
    for (i, (request, history)) in requests.iter().zip(&seen).enumerate() {
        if let Err(e) = request.check_api_rules() {
            return Err(fail(format!("request {i}: {e}")));
        }
        // A fresh serialisation, with the prompt-caching breakpoints the client puts on it (chosen
        // from the request alone; see `agent_core::client::cache`).
        let messages = normalize_messages(history);
        let mut fresh = serde_json::to_value(&messages).map_err(fail)?;
        for (m, b) in agent_core::client::cache::breakpoints(&messages).iter() {
            fresh[m]["content"][b]["cache_control"] = json!({"type": "ephemeral"});
        }
        prop_assert_eq!(
            &request.body["messages"],
            &fresh,
            "request {} differs from a fresh serialisation",
            i
        );
    }
    for request in server.requests().iter().filter(|r| r.body["system"] == SUMMARY_SYSTEM) {
        prop_assert!(request.check_api_rules().is_ok());
    }
    Ok(archive.stats())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_request_after_random_compactions_equals_a_fresh_serialisation(steps in steps(), limits in small_limits()) {
        run_session(steps, limits)?;
    }
}

#[test]
fn the_sessions_layers_all_act_in_some_session() -> TestResult {
    // The property above is only as good as the compactions it meets: one session where every
    // way in acts (micro, fit, snip, the compact tool, reactive, the summary).
    let mut steps: Vec<Step> = (0..20).map(|i| Step::Read(vec![i % 6], false)).collect();
    steps.insert(5, Step::TooLong);
    steps.insert(12, Step::Read(vec![1], true));
    let stats = run_session(
        steps,
        Limits { context_limit: 12_000, target: 9_000, max_messages: 14, ..Limits::default() },
    )
    .map_err(|e| e.to_string())?;
    assert!(stats.snips > 0 && stats.micro_results > 0, "{stats:?}");
    assert!(stats.summaries > 0 && stats.reactive > 0, "{stats:?}");
    Ok(())
}

#[test]
fn has_tool_use_and_is_tool_result_see_the_pairs() {
    assert!(has_tool_use(&calls(&["a"])));
    assert!(is_tool_result(&results(&[("a", "x".into())])));
    assert!(!has_tool_use(&assistant_text("x")));
    assert!(!is_tool_result(&Message::user_text("x")));
}
