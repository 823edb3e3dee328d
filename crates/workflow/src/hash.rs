//! The course's `_stable_hash` and the journal key: SHA-256 read as one big unsigned integer, of
//! which only a remainder is used. A process-stable hash (Python's own `hash()` is salted per
//! process) is what lets a run and its resume, or the course and this port, agree on keys.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `int(sha256(text.encode()).hexdigest(), 16) % modulus`: the digest's 32 bytes as a big-endian
/// integer, reduced by `modulus` (which must not be 0) byte by byte.
pub fn stable_hash_mod(text: &str, modulus: u64) -> u64 {
    let digest = Sha256::digest(text.as_bytes());
    let modulus = u128::from(modulus.max(1));
    let mut rest: u128 = 0;
    for byte in digest.iter() {
        rest = (rest * 256 + u128::from(*byte)) % modulus;
    }
    // The remainder is below the modulus, which is a u64.
    rest as u64
}

/// `json.dumps(value, sort_keys=True)` (`null` for no value): the schema's part of a journal key.
pub fn sorted_json(value: Option<&Value>) -> String {
    match value {
        Some(value) => pyjson::dumps(&pyjson::sort_keys(value)),
        None => "null".to_owned(),
    }
}

/// The journal key of one call (course `WorkflowJournal.key`): `{kind}-` and ten digits,
/// `sha256("{kind}|{label}|{prompt}|{sorted schema}") mod 10^10`. It depends only on what was
/// asked, so a call in a `parallel` gets the same key however the answers were ordered.
pub fn journal_key(kind: &str, label: &str, prompt: &str, schema: Option<&Value>) -> String {
    let basis = format!("{kind}|{label}|{prompt}|{}", sorted_json(schema));
    format!("{kind}-{:010}", stable_hash_mod(&basis, 10_000_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_the_course() {
        // Written by the course's `WorkflowJournal.key` under CPython 3.
        assert_eq!(journal_key("agent", "x", "y", None), "agent-0407936627");
        let schema = serde_json::json!({"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}});
        assert_eq!(journal_key("agent", "lbl", "prompt \u{e9}", Some(&schema)), "agent-7261004777");
        assert_eq!(stable_hash_mod("abc", 1 << 63), 0x3410_ff61_f200_15ad);
    }
}
