//! What a record never holds: the harness's own secrets, or anything shaped like one (ours).
//!
//! Memory is text that outlives the session and reaches SYSTEM, so every later request, perhaps
//! to another endpoint, would carry what a record holds. Before anything is written to
//! `.memory/` (and before a record someone put there by hand is recalled), its name, description
//! and body are searched for:
//! - the value of each of the harness's key variables: the ones `bash` commands never see
//!   ([`agent_core::process::is_secret`]: `ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, any name
//!   with `KEY`, `TOKEN`, `SECRET`, `PASSWORD` and the like, or a word such as `PWD` or `PAT`),
//!   from the process environment and the `.env` the harness reads, when the value has at least
//!   [`MIN_SECRET_CHARS`] characters;
//! - a token shaped like an API key of a well-known service ([`KEY_SHAPES`]: `sk-ant-…`, `sk-…`,
//!   `ghp_…`, `AKIA…`, …), whose tail mixes letters and digits;
//! - a PEM private key (`-----BEGIN … PRIVATE KEY-----`);
//! - a key-like word assigned a long value (`API_KEY=…`, `password: …`).
//!
//! What is found is named (`the value of ANTHROPIC_API_KEY`), never shown.

use std::collections::HashMap;

use agent_core::process::is_secret;

/// The shortest variable value that is looked for: shorter values (`KEYMAP=us`) would match
/// ordinary words.
pub const MIN_SECRET_CHARS: usize = 8;

/// The shortest value a key-like word may be assigned before it counts (`password: …`).
const MIN_ASSIGNED_CHARS: usize = 12;

/// Token prefixes of well-known API keys: (prefix, the fewest characters after it, what it is).
pub const KEY_SHAPES: &[(&str, usize, &str)] = &[
    ("sk-ant-", 20, "an Anthropic API key (sk-ant-…)"),
    ("sk-", 20, "an API key (sk-…)"),
    ("sk_live_", 16, "a Stripe key (sk_live_…)"),
    ("sk_test_", 16, "a Stripe key (sk_test_…)"),
    ("rk_live_", 16, "a Stripe key (rk_live_…)"),
    ("github_pat_", 30, "a GitHub token (github_pat_…)"),
    ("ghp_", 30, "a GitHub token (ghp_…)"),
    ("gho_", 30, "a GitHub token (gho_…)"),
    ("ghu_", 30, "a GitHub token (ghu_…)"),
    ("ghs_", 30, "a GitHub token (ghs_…)"),
    ("ghr_", 30, "a GitHub token (ghr_…)"),
    ("glpat-", 20, "a GitLab token (glpat-…)"),
    ("xoxb-", 10, "a Slack token (xoxb-…)"),
    ("xoxp-", 10, "a Slack token (xoxp-…)"),
    ("xoxa-", 10, "a Slack token (xoxa-…)"),
    ("hf_", 30, "a Hugging Face token (hf_…)"),
    ("AIza", 35, "a Google API key (AIza…)"),
    ("AKIA", 16, "an AWS access key id (AKIA…)"),
    ("ASIA", 16, "an AWS access key id (ASIA…)"),
];

/// The harness's secret values, to keep out of records. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// (variable name, value), values trimmed.
    values: Vec<(String, String)>,
}

impl Secrets {
    /// No variable values: only the shapes are looked for.
    pub fn none() -> Self {
        Self::default()
    }

    /// The values of those of `vars` whose names [`is_secret`] names, when at least
    /// [`MIN_SECRET_CHARS`] characters long.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut values: Vec<(String, String)> = vars
            .into_iter()
            .filter(|(name, value)| is_secret(name) && value.trim().chars().count() >= MIN_SECRET_CHARS)
            .map(|(name, value)| (name, value.trim().to_owned()))
            .collect();
        values.sort();
        values.dedup();
        Self { values }
    }

    /// The harness's own: the process environment, with the `.env` a chapter started in the
    /// current folder reads on top ([`agent_core::config::environment`]); a `.env` that cannot
    /// be read adds nothing (start-up already said why).
    pub fn harness() -> Self {
        let mut vars: HashMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        if let Ok(dir) = std::env::current_dir()
            && let Ok(env) = agent_core::config::environment(&dir)
        {
            vars.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Self::from_vars(vars)
    }

    /// What secret `text` holds, in words that do not repeat it (`the value of
    /// ANTHROPIC_API_KEY`, `an Anthropic API key (sk-ant-…)`), or `None`.
    pub fn find(&self, text: &str) -> Option<String> {
        if let Some((name, _)) = self.values.iter().find(|(_, value)| text.contains(value.as_str())) {
            return Some(format!("the value of {name}"));
        }
        key_shaped(text)
    }
}

/// What in `text` is shaped like a secret ([`KEY_SHAPES`], a PEM private key, a key-like word
/// assigned a long value), described; `None` when nothing is.
pub fn key_shaped(text: &str) -> Option<String> {
    if text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----") {
        return Some("a private key (-----BEGIN … PRIVATE KEY-----)".to_owned());
    }
    let tokens = tokens(text);
    for &(start, end) in &tokens {
        let token = &text[start..end];
        if let Some(what) = shaped(token) {
            return Some(what.to_owned());
        }
        if is_secret(token) && assigned_value(&text[end..]).is_some() {
            return Some(format!("a value assigned to {token}"));
        }
    }
    None
}

/// The (start, end) byte ranges of `text`'s maximal runs of ASCII letters, digits, `_` and `-`.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let part = c.is_ascii_alphanumeric() || c == '_' || c == '-';
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// What well-known key `token` is shaped like, if any: a [`KEY_SHAPES`] prefix followed by at
/// least its number of characters, among them a letter and a digit (so a kebab-case name such
/// as `sk-learn-pipeline-notes` is not one). An AWS key id is exactly 20 capitals and digits.
fn shaped(token: &str) -> Option<&'static str> {
    for &(prefix, min_rest, what) in KEY_SHAPES {
        let Some(rest) = token.strip_prefix(prefix) else { continue };
        if prefix.starts_with("AKIA") || prefix.starts_with("ASIA") {
            let aws =
                rest.len() == min_rest && rest.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if aws && rest.bytes().any(|b| b.is_ascii_digit()) {
                return Some(what);
            }
            continue;
        }
        let mixed = rest.bytes().any(|b| b.is_ascii_digit()) && rest.bytes().any(|b| b.is_ascii_alphabetic());
        if rest.len() >= min_rest && mixed {
            return Some(what);
        }
        // `sk-ant-x` is not an `sk-` key either: the longer prefix decided.
        if prefix == "sk-ant-" {
            return None;
        }
    }
    None
}

/// The value after a key-like word (`="…"`, `: …`), when it has at least [`MIN_ASSIGNED_CHARS`]
/// characters with a letter and a digit among them.
fn assigned_value(after: &str) -> Option<&str> {
    let rest = after.trim_start_matches(['"', '\'', ' ', '\t']);
    let rest = rest.strip_prefix('=').or_else(|| rest.strip_prefix(':'))?;
    let rest = rest.trim_start_matches(['"', '\'', ' ', '\t']);
    let end =
        rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',').unwrap_or(rest.len());
    let value = &rest[..end];
    let mixed = value.chars().any(|c| c.is_ascii_digit()) && value.chars().any(|c| c.is_alphabetic());
    (value.chars().count() >= MIN_ASSIGNED_CHARS && mixed).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_harnesss_key_values_are_found_and_named_not_shown() {
        let secrets = Secrets::from_vars(vars(&[
            ("ANTHROPIC_API_KEY", "local-proxy-credential-42"),
            ("MY_SERVICE_TOKEN", "  tok3n-with-spaces  "),
            ("KEYMAP", "us"),
            ("HOME", "/home/learner"),
        ]));
        let found = secrets.find("the proxy wants local-proxy-credential-42 in a header");
        assert_eq!(found.as_deref(), Some("the value of ANTHROPIC_API_KEY"));
        assert_eq!(secrets.find("x tok3n-with-spaces y").as_deref(), Some("the value of MY_SERVICE_TOKEN"));
        assert_eq!(secrets.find("we use us English and live in /home/learner"), None, "short or not secret");
    }

    #[test]
    fn well_known_key_shapes_are_found() {
        let cases = [
            ("key sk-ant-api03-AbCdEf0123456789AbCdEf0123", "an Anthropic API key (sk-ant-…)"),
            ("openai: sk-proj-1234567890abcdefghijABCD", "an API key (sk-…)"),
            ("ghp_0123456789abcdefghijABCDEFGHIJ0123", "a GitHub token (ghp_…)"),
            ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id (AKIA…)"),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END",
                "a private key (-----BEGIN … PRIVATE KEY-----)",
            ),
        ];
        for (text, what) in cases {
            assert_eq!(key_shaped(text).as_deref(), Some(what), "{text}");
        }
        assert_eq!(
            key_shaped(r#"set API_KEY="abc123def456ghi" in CI"#).as_deref(),
            Some("a value assigned to API_KEY")
        );
        assert_eq!(
            key_shaped("password: hunter2hunter2hunter2").as_deref(),
            Some("a value assigned to password")
        );
    }

    #[test]
    fn ordinary_text_is_not_a_secret() {
        for text in [
            "Indent Python with tabs, never spaces.",
            "sk-learn-pipeline-configuration-notes-for-the-team",
            "the keyboard: use the dvorak layout",
            "token budget: 16k",
            "commit 4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
            "AKIA is the prefix of AWS access key ids",
            "desk-0123456789abcdefghijklmnop",
        ] {
            assert_eq!(key_shaped(text), None, "{text}");
        }
    }
}
