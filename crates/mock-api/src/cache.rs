//! The prompt cache, simulated: the `usage` the API would report for a request, so that tests
//! and the bench can count cache hits on the loopback server.
//!
//! Source: Messages API, "Prompt caching". What is simulated:
//! - the prompt is read as blocks in the order `tools` (each definition), `system` (a string is
//!   one text block), then each message's content blocks (a string `content` is one text block);
//!   a block's `cache_control` is a breakpoint and is not part of the prompt itself, and a
//!   top-level `cache_control` (automatic caching) is one on the last block;
//! - more than [`MAX_BREAKPOINTS`] is the API's 400: `A maximum of 4 blocks with cache_control may
//!   be provided. Found N.`;
//! - a request reads the longest cached prefix that ends at one of its breakpoints or at one of
//!   the [`LOOKBACK`] blocks before each; it then writes the prefix up to each breakpoint, when
//!   that prefix has at least the minimum of tokens ([`DEFAULT_MINIMUM`], Sonnet 4.5's; shorter
//!   ones are not cached, without an error);
//! - `usage`: `cache_read_input_tokens` is the prefix read, `cache_creation_input_tokens` the rest
//!   up to the last breakpoint, `input_tokens` what follows it; tokens are estimated as one per
//!   [`CHARS_PER_TOKEN`] characters of the prompt's JSON (cumulative, so a prefix always counts the same).
//!
//! Not simulated: the cache's lifetime (5 minutes, refreshed on each read; a test is shorter),
//! other models' minimums, and what else invalidates a cache (`tool_choice`, images, thinking
//! parameters). A prefix is one hash of the model and every block before it, so one changed
//! byte anywhere before a breakpoint is a miss from there on, as with the API.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

/// Characters of JSON per token in the estimate ("about 4").
pub const CHARS_PER_TOKEN: u64 = 4;

/// The smallest prefix, in tokens, that is cached by default: the minimum of Claude Sonnet 4.5.
pub const DEFAULT_MINIMUM: u64 = 1024;

/// How many blocks before a breakpoint the API also looks for a cached prefix.
pub const LOOKBACK: usize = 20;

/// The most breakpoints a request may have.
pub const MAX_BREAKPOINTS: usize = 4;

/// The input counts of one answer's `usage`, as the simulated cache splits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Tokens after the last breakpoint (all of them when nothing was cached).
    pub input_tokens: u64,
    /// Tokens written to the cache: from the prefix read up to the last breakpoint.
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache: the longest cached prefix found.
    pub cache_read_input_tokens: u64,
}

impl CacheUsage {
    /// Every input token of the request: `input + written + read`.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// The prefixes cached so far, for one server (a session), and the minimum length cached.
#[derive(Debug)]
pub struct PromptCache {
    prefixes: HashSet<u64>,
    minimum: u64,
}

impl Default for PromptCache {
    fn default() -> Self {
        Self::new(DEFAULT_MINIMUM)
    }
}

impl PromptCache {
    /// An empty cache that keeps prefixes of at least `minimum_tokens`.
    pub fn new(minimum_tokens: u64) -> Self {
        Self { prefixes: HashSet::new(), minimum: minimum_tokens }
    }

    /// Changes the smallest prefix cached, in tokens (0 caches every breakpoint).
    pub fn set_minimum(&mut self, tokens: u64) {
        self.minimum = tokens;
    }

    /// The `usage` for a request with this `body`, and the prefixes it writes kept for the next.
    ///
    /// # Errors
    /// More than [`MAX_BREAKPOINTS`] breakpoints: the API's message.
    pub fn answer(&mut self, body: &Value) -> Result<CacheUsage, String> {
        let prompt = Prompt::read(body);
        if prompt.breakpoints.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                prompt.breakpoints.len()
            ));
        }
        let tokens = |i: usize| prompt.chars[i] / CHARS_PER_TOKEN;
        let total = prompt.chars.last().map_or(0, |c| c / CHARS_PER_TOKEN);
        let mut read = 0;
        for &b in &prompt.breakpoints {
            let hit =
                (b.saturating_sub(LOOKBACK)..=b).rev().find(|&j| self.prefixes.contains(&prompt.hashes[j]));
            if let Some(j) = hit {
                read = read.max(tokens(j));
            }
        }
        let last = prompt.breakpoints.iter().copied().max();
        let written = match last {
            Some(last) if tokens(last) >= self.minimum => {
                for &b in &prompt.breakpoints {
                    if tokens(b) >= self.minimum {
                        self.prefixes.insert(prompt.hashes[b]);
                    }
                }
                tokens(last).saturating_sub(read)
            }
            _ => 0,
        };
        Ok(CacheUsage {
            input_tokens: total.saturating_sub(read + written),
            cache_creation_input_tokens: written,
            cache_read_input_tokens: read,
        })
    }
}

/// A request's prompt as the cache sees it: per block, in order, the hash of the prefix up to
/// and including it and the characters up to its end; and the blocks that are breakpoints.
struct Prompt {
    hashes: Vec<u64>,
    chars: Vec<u64>,
    breakpoints: Vec<usize>,
}

impl Prompt {
    fn read(body: &Value) -> Prompt {
        let mut prompt = Prompt { hashes: Vec::new(), chars: Vec::new(), breakpoints: Vec::new() };
        let mut seed = DefaultHasher::new();
        body["model"].as_str().unwrap_or_default().hash(&mut seed);
        let mut prefix = seed.finish();
        let mut chars = 0;
        let mut add = |prompt: &mut Prompt, tag: &str, block: &Value| {
            let mut h = DefaultHasher::new();
            prefix.hash(&mut h);
            tag.hash(&mut h);
            chars += feed(block, &mut h, true);
            prefix = h.finish();
            if block.get("cache_control").is_some() {
                prompt.breakpoints.push(prompt.hashes.len());
            }
            prompt.hashes.push(prefix);
            prompt.chars.push(chars);
        };
        for tool in body["tools"].as_array().into_iter().flatten() {
            add(&mut prompt, "tool", tool);
        }
        match &body["system"] {
            Value::String(text) => add(&mut prompt, "system", &json!({"type": "text", "text": text})),
            Value::Array(blocks) => blocks.iter().for_each(|b| add(&mut prompt, "system", b)),
            _ => {}
        }
        for message in body["messages"].as_array().into_iter().flatten() {
            let role = message["role"].as_str().unwrap_or_default();
            let first = format!("message {role}");
            match &message["content"] {
                Value::String(text) => add(&mut prompt, &first, &json!({"type": "text", "text": text})),
                Value::Array(blocks) => {
                    for (i, block) in blocks.iter().enumerate() {
                        add(&mut prompt, if i == 0 { &first } else { "block" }, block);
                    }
                }
                _ => {}
            }
        }
        if body.get("cache_control").is_some() && !prompt.hashes.is_empty() {
            let last = prompt.hashes.len() - 1;
            if !prompt.breakpoints.contains(&last) {
                prompt.breakpoints.push(last);
            }
        }
        prompt
    }
}

/// Feeds `value` to `h` as the prompt holds it (a block's own `cache_control` left out when
/// `block`), and returns its length as compact JSON, roughly (escapes are not counted).
fn feed(value: &Value, h: &mut DefaultHasher, block: bool) -> u64 {
    match value {
        Value::Null => {
            0u8.hash(h);
            4
        }
        Value::Bool(b) => {
            (1u8, b).hash(h);
            if *b { 4 } else { 5 }
        }
        Value::Number(n) => {
            let text = n.to_string();
            (2u8, &text).hash(h);
            text.len() as u64
        }
        Value::String(s) => {
            (3u8, s).hash(h);
            s.len() as u64 + 2
        }
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            1 + items.iter().map(|v| feed(v, h, false) + 1).sum::<u64>().max(1)
        }
        Value::Object(map) => {
            let kept = map.iter().filter(|(k, _)| !(block && *k == "cache_control"));
            5u8.hash(h);
            let mut chars = 1;
            for (key, v) in kept {
                key.hash(h);
                chars += key.len() as u64 + 3 + feed(v, h, false) + 1;
            }
            chars.max(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with `n` big tool rounds, breakpoints on the last message's last block and on the
    /// one two messages before, as the harness sends them.
    fn session(rounds: usize) -> Value {
        let big = "x".repeat(8000);
        let mut messages = vec![json!({"role": "user", "content": "go"})];
        for i in 0..rounds {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("t{i}"), "name": "read", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": big}]}));
        }
        let n = messages.len();
        messages[n - 1]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        if n >= 5 {
            messages[n - 3]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"model": "m", "max_tokens": 10, "messages": messages})
    }

    #[test]
    fn each_round_reads_what_the_last_one_wrote_and_writes_the_new_part() {
        let mut cache = PromptCache::default();
        let first = cache.answer(&session(1)).unwrap();
        assert_eq!(first.cache_read_input_tokens, 0);
        assert!(first.cache_creation_input_tokens > 2000, "{first:?}");
        assert!(first.input_tokens < 10, "nothing follows the breakpoint: {first:?}");
        let second = cache.answer(&session(2)).unwrap();
        assert_eq!(second.cache_read_input_tokens, first.total(), "{second:?}");
        assert!(second.cache_creation_input_tokens > 2000 && second.cache_creation_input_tokens < 2100);
        // The same request again reads all of it.
        let again = cache.answer(&session(2)).unwrap();
        assert_eq!((again.cache_read_input_tokens, again.cache_creation_input_tokens), (second.total(), 0));
    }

    #[test]
    fn a_changed_byte_before_a_breakpoint_is_a_miss_and_a_moved_marker_is_not() {
        let mut cache = PromptCache::new(0);
        let body = session(3);
        let full = cache.answer(&body).unwrap().total();
        let mut changed = body.clone();
        changed["messages"][2]["content"][0]["content"] = json!("y");
        let usage = cache.answer(&changed).unwrap();
        assert!(usage.cache_read_input_tokens < 20, "only the first messages: {usage:?}");
        // The markers alone moving (one more on an earlier block) change nothing read.
        let mut marked = body.clone();
        marked["messages"][2]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        let usage = cache.answer(&marked).unwrap();
        assert_eq!(usage.cache_read_input_tokens, full, "{usage:?}");
    }

    #[test]
    fn short_prefixes_are_not_cached_and_five_breakpoints_are_refused() {
        let mut cache = PromptCache::default();
        let small = json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
        for _ in 0..2 {
            let usage = cache.answer(&small).unwrap();
            assert_eq!((usage.cache_read_input_tokens, usage.cache_creation_input_tokens), (0, 0));
            assert!(usage.input_tokens > 0);
        }
        let marker = json!({"type": "ephemeral"});
        let blocks: Vec<Value> =
            (0..5).map(|i| json!({"type": "text", "text": i.to_string(), "cache_control": marker})).collect();
        let five = json!({"model": "m", "messages": [{"role": "user", "content": blocks}]});
        let err = cache.answer(&five).unwrap_err();
        assert_eq!(err, "A maximum of 4 blocks with cache_control may be provided. Found 5.");
    }

    #[test]
    fn a_string_content_counts_as_its_text_block() {
        let mut cache = PromptCache::new(0);
        let string = json!({"model": "m", "system": "s", "messages": [{"role": "user", "content": "hello"}],
            "cache_control": {"type": "ephemeral"}});
        let blocks = json!({"model": "m", "system": [{"type": "text", "text": "s"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
            "cache_control": {"type": "ephemeral"}});
        let first = cache.answer(&string).unwrap();
        let second = cache.answer(&blocks).unwrap();
        assert_eq!(second.cache_read_input_tokens, first.total());
    }
}
