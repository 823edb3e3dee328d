//! Configuration as the course reads it: the process environment, overridden by `.env`.
//!
//! Source: course §0.
//! - `MODEL_ID` (required; `--model` overrides it).
//! - `ANTHROPIC_API_KEY`, sent as `x-api-key` (or `Authorization: Bearer` with `AUTH_TYPE=bearer`).
//!   Required for the official endpoint; optional when `ANTHROPIC_BASE_URL` points elsewhere
//!   (local servers such as Ollama or llama.cpp take none).
//! - `ANTHROPIC_BASE_URL` (optional; `--base-url` overrides it). When it is set,
//!   `ANTHROPIC_AUTH_TOKEN` is the key if set, sent as `Authorization: Bearer` (how DeepSeek, Kimi
//!   and GLM ask Claude Code users to configure them); else `ANTHROPIC_API_KEY`.
//! - Without a base URL, `ANTHROPIC_AUTH_TOKEN` is used as the key when `ANTHROPIC_API_KEY` is unset.
//! - A key in `.env` still equal to `.env.example`'s placeholder ([`KEY_PLACEHOLDER`]) counts as
//!   unset, so a copied `.env` does not hide a real key exported in the shell
//!   ([`Environment::placeholder_notice`] says so in one line).
//! - `ANTHROPIC_MAX_RETRIES` (optional; `--max-retries` overrides it): retries of a failed request.
//! - `DISABLE_PROMPT_CACHING` (optional; `--no-cache` does the same): `1` sends no prompt-caching
//!   breakpoints, for an endpoint that rejects `cache_control` (Claude Code reads the same name).
//! - `NO_COLOR` and `TMPDIR` (process environment only): no colour on the terminal; where bash's
//!   sandbox lets temporary files go.
//!
//! Every variable the harness reads is read in this module.
//!
//! The key does not stay in the harness's own environment: [`withdraw_keys_from_environment`],
//! called at start before any thread runs, moves `ANTHROPIC_API_KEY` and `ANTHROPIC_AUTH_TOKEN`
//! out of it (and wipes their values from the memory that `/proc/PID/environ` shows), and
//! [`environment`] still finds them. A key in `.env` is in a file that `bash` commands can read
//! (the sandbox lets them read every file the user can): [`Environment::key_file`] names that
//! file, for the warning the harness prints at start.
//!
//! Values in `.env` override the process environment, as the course's `load_dotenv(override=True)`.
//! The `.env` read is the current folder's, or else the nearest parent folder's, as python-dotenv's
//! `find_dotenv()` searches; a learner who starts a chapter from a subfolder still finds it. A
//! parent folder inside the temp folders (`/tmp`, `/var/tmp`, `$TMPDIR`), which bash commands may
//! write, is skipped ([`dotenv_candidates`]): a command in a workspace under `/tmp` could
//! otherwise write `../.env` and choose the next session's endpoint. An error about a missing
//! variable says which `.env` was read, or where none was found.

use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// The official endpoint, used when `ANTHROPIC_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The key `.env.example` shows (`ANTHROPIC_API_KEY=sk-ant-...`): a [`KEY_VARS`] value in `.env`
/// equal to it is not a key, and counts as unset.
pub const KEY_PLACEHOLDER: &str = "sk-ant-...";

/// How the key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthType {
    /// `x-api-key: KEY` (the Messages API default).
    ApiKey,
    /// `Authorization: Bearer KEY` (`AUTH_TYPE=bearer`; some compatible endpoints want it).
    Bearer,
}

/// Everything the HTTP client needs, resolved from flags, `.env` and the environment.
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    /// `MODEL_ID`, such as `claude-sonnet-4-5`.
    pub model: String,
    /// The base URL without `/v1`, such as `https://api.anthropic.com`.
    pub base_url: String,
    /// The key, if any.
    pub api_key: Option<String>,
    /// How the key is sent.
    pub auth: AuthType,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .finish()
    }
}

/// Why configuration could not be read. `Display` is the one line printed before exit code 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A required variable is unset or empty.
    #[error("{name} is not set: {hint}; {dotenv}")]
    Missing {
        /// The variable's name.
        name: &'static str,
        /// What to do about it.
        hint: &'static str,
        /// Which `.env` was read, or where none was found.
        dotenv: DotEnvFile,
    },
    /// A `.env` exists but cannot be parsed; the text names the file and the line.
    #[error("{0}; fix that line or remove the file")]
    DotEnv(String),
    /// A variable that must be a whole number is not one.
    #[error("{name} must be a whole number, such as {example}")]
    NotANumber {
        /// The variable's name.
        name: &'static str,
        /// A valid value.
        example: &'static str,
    },
    /// A variable has a value we cannot use.
    #[error("{name}={value:?} is not valid: {hint}")]
    Invalid {
        /// The variable's name.
        name: &'static str,
        /// The value found.
        value: String,
        /// What is accepted.
        hint: &'static str,
    },
}

/// `ANTHROPIC_MAX_RETRIES` from `vars`: `None` when unset.
///
/// # Errors
/// [`ConfigError::NotANumber`] when it is not a whole number.
pub fn max_retries(vars: &HashMap<String, String>) -> Result<Option<u32>, ConfigError> {
    const NAME: &str = "ANTHROPIC_MAX_RETRIES";
    match vars.get(NAME).map(|v| v.trim()) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| ConfigError::NotANumber { name: NAME, example: "2" }),
    }
}

/// The variable that turns prompt caching off ([`crate::client::cache`]), as `--no-cache` does.
pub const DISABLE_PROMPT_CACHING: &str = "DISABLE_PROMPT_CACHING";

/// Whether requests carry prompt-caching breakpoints, per [`DISABLE_PROMPT_CACHING`] in `vars`:
/// `true` when it is unset, empty, `0`, `false`, `no` or `off`; `false` for `1`, `true`, `yes`
/// or `on` (any case, blanks trimmed).
///
/// # Errors
/// [`ConfigError::Invalid`] for any other value.
pub fn prompt_caching(vars: &HashMap<String, String>) -> Result<bool, ConfigError> {
    let Some(value) = vars.get(DISABLE_PROMPT_CACHING) else { return Ok(true) };
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "no" | "off" => Ok(true),
        "1" | "true" | "yes" | "on" => Ok(false),
        _ => Err(ConfigError::Invalid {
            name: DISABLE_PROMPT_CACHING,
            value: value.clone(),
            hint: "use 1 to send no cache_control breakpoints, or 0 (the default) to send them",
        }),
    }
}

/// `TMPDIR` from the process environment, when set.
pub fn tmpdir() -> Option<std::path::PathBuf> {
    std::env::var_os("TMPDIR").map(std::path::PathBuf::from)
}

/// Which `.env` file [`environment`] read. `Display` is the clause a missing-variable error ends
/// with: `/p/.env was read and does not set it` or `no .env in /p/sub or any folder above it`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DotEnvFile {
    /// This file was read.
    Read(PathBuf),
    /// No `.env` in this folder or any folder above it.
    NotFound(PathBuf),
}

impl fmt::Display for DotEnvFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DotEnvFile::Read(path) => write!(f, "{} was read and does not set it", path.display()),
            DotEnvFile::NotFound(dir) => write!(f, "no .env in {} or any folder above it", dir.display()),
        }
    }
}

/// The variables as the course sees them (process variables, then `.env` on top) and which
/// `.env` was read. It dereferences to the variables' map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    vars: HashMap<String, String>,
    dotenv: DotEnvFile,
    /// The names `.env` set.
    from_dotenv: Vec<String>,
    /// The [`KEY_VARS`] that `.env` set to [`KEY_PLACEHOLDER`], left out of `vars`.
    placeholders: Vec<String>,
}

/// Where a variable's value came from: `Display` is `.env at PATH` or `the environment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The `.env` file at this path.
    DotEnv(PathBuf),
    /// The process environment.
    Process,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::DotEnv(path) => write!(f, ".env at {}", path.display()),
            Origin::Process => f.write_str("the environment"),
        }
    }
}

impl Environment {
    /// An environment of exactly `vars`, with `dotenv` as where `.env` came from (for tests and
    /// embedders that read configuration elsewhere); none of the variables counts as set by it.
    pub fn new(vars: HashMap<String, String>, dotenv: DotEnvFile) -> Self {
        Self { vars, dotenv, from_dotenv: Vec::new(), placeholders: Vec::new() }
    }

    /// Where variable `name` came from, or `None` when it is unset.
    pub fn origin(&self, name: &str) -> Option<Origin> {
        self.vars.get(name)?;
        match &self.dotenv {
            DotEnvFile::Read(path) if self.from_dotenv.iter().any(|n| n == name) => {
                Some(Origin::DotEnv(path.clone()))
            }
            _ => Some(Origin::Process),
        }
    }

    /// One line when `.env` left a key at `.env.example`'s placeholder ([`KEY_PLACEHOLDER`]),
    /// which then counts as unset: which file, which variable, and what is used instead.
    pub fn placeholder_notice(&self) -> Option<String> {
        let DotEnvFile::Read(path) = &self.dotenv else { return None };
        let name = self.placeholders.first()?;
        let instead = if self.vars.get(name).is_some_and(|v| !v.trim().is_empty()) {
            "the environment's value is used"
        } else {
            "it counts as unset"
        };
        Some(format!(
            "config: {name} in {} is still the placeholder {KEY_PLACEHOLDER} from .env.example; {instead}",
            path.display()
        ))
    }

    /// Which `.env` was read, or where none was found.
    pub fn dotenv(&self) -> &DotEnvFile {
        &self.dotenv
    }

    /// The `.env` file that holds a key (a non-empty [`KEY_VARS`] entry), if one does: a file
    /// that `bash` commands can read, whatever the sandbox, since it lets them read every file
    /// the user can.
    pub fn key_file(&self) -> Option<&Path> {
        let DotEnvFile::Read(path) = &self.dotenv else { return None };
        let holds_key = KEY_VARS.iter().any(|name| {
            self.from_dotenv.iter().any(|n| n == name)
                && self.vars.get(*name).is_some_and(|v| !v.trim().is_empty())
        });
        holds_key.then_some(path.as_path())
    }
}

/// The variables that hold the key: withdrawn from the process environment at start, never
/// passed to commands.
pub const KEY_VARS: [&str; 2] = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];

/// The [`KEY_VARS`] that [`withdraw_keys_from_environment`] took out of the process environment,
/// with their values.
static WITHDRAWN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Moves the key variables ([`KEY_VARS`]) out of the process environment into this module, where
/// [`environment`] still finds them. The bytes of each value in the environment's memory are
/// overwritten with zeros first, so `/proc/PID/environ` (which shows the environment as the
/// process started with it) no longer holds the key either; processes the harness starts do not
/// inherit it. Nothing happens where a variable is unset or not valid UTF-8.
///
/// # Safety
/// No other thread may run (or read the environment) during the call: call it first thing in
/// `main`, as `std::env::remove_var` requires.
pub unsafe fn withdraw_keys_from_environment() {
    let mut withdrawn = WITHDRAWN.lock().unwrap_or_else(|p| p.into_inner());
    for name in KEY_VARS {
        let Ok(value) = std::env::var(name) else { continue };
        #[cfg(unix)]
        if let Ok(c_name) = std::ffi::CString::new(name) {
            // SAFETY: getenv returns the value's bytes inside the "NAME=VALUE" string of the
            // environment, or null; no other thread runs (the caller's promise), so nothing else
            // reads or changes the environment meanwhile. The value's bytes, up to its NUL, are
            // overwritten in place; the string itself stays where it is (removed from the list
            // just below).
            unsafe {
                let p = libc::getenv(c_name.as_ptr());
                if !p.is_null() {
                    let len = libc::strlen(p);
                    std::ptr::write_bytes(p, 0, len);
                }
            }
        }
        // SAFETY: as above: the caller guarantees that no other thread runs.
        unsafe { std::env::remove_var(name) };
        withdrawn.push((name.to_owned(), value));
    }
}

impl Deref for Environment {
    type Target = HashMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.vars
    }
}

/// Values shorter than this are not treated as secrets by [`secret_values`]: a short value
/// (`SSH_AGENT_PID=812`) would hide every matching number of a recording and protects nothing.
pub const MIN_SECRET_CHARS: usize = 6;

/// The values a record of the session (`--trace`) must never hold: those of the key variables
/// ([`KEY_VARS`], withdrawn from the environment at start or set in `.env`), and of every
/// variable the secret filter withholds from commands ([`crate::process::is_secret`] by name,
/// [`crate::process::is_secret_value`] by value), from the process environment and from the
/// `.env` a chapter started in `dir` reads ([`find_dotenv`]). A `.env` that does not parse
/// gives the lines that do. Longest first, so a secret that holds another is hidden whole;
/// values shorter than [`MIN_SECRET_CHARS`] are left out.
pub fn secret_values(dir: &Path) -> Vec<String> {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    vars.extend(WITHDRAWN.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
    if let Some(text) = find_dotenv(dir).and_then(|path| std::fs::read_to_string(path).ok()) {
        vars.extend(dotenvy::from_read_iter(text.as_bytes()).flatten());
    }
    let mut secrets: Vec<String> = vars
        .into_iter()
        .filter(|(k, v)| {
            KEY_VARS.contains(&k.as_str())
                || crate::process::is_secret(k)
                || crate::process::is_secret_value(v)
        })
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| v.chars().count() >= MIN_SECRET_CHARS && v != KEY_PLACEHOLDER)
        .collect();
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    secrets
}

/// The `.env` files a chapter started in `dir` would read, nearest first: `dir/.env`, then each
/// parent folder's, skipping the folders that bash commands may write under the sandbox (the
/// temp folders, [`crate::sandbox::temp_folders`], and everything below them): a command could
/// put a `.env` there (`../.env` from a workspace in `/tmp`) for the next session to read.
/// `dir`'s own `.env` is always a candidate: it is the workspace's, the one the course asks for.
pub fn dotenv_candidates(dir: &Path) -> Vec<PathBuf> {
    let temps = crate::sandbox::temp_folders();
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let mut found = vec![dir.join(".env")];
    found.extend(
        real.ancestors().skip(1).filter(|d| !temps.iter().any(|t| d.starts_with(t))).map(|d| d.join(".env")),
    );
    found
}

/// The `.env` files above `dir` that are never read because they lie in a folder bash commands
/// may write (see [`dotenv_candidates`]) and exist now, nearest first: for the line that says so.
pub fn skipped_dotenvs(dir: &Path) -> Vec<PathBuf> {
    let temps = crate::sandbox::temp_folders();
    let real = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    real.ancestors()
        .skip(1)
        .filter(|d| temps.iter().any(|t| d.starts_with(t)))
        .map(|d| d.join(".env"))
        .filter(|p| p.is_file())
        .collect()
}

/// The `.env` a chapter started in `dir` reads: the first of [`dotenv_candidates`] that is a
/// file (`dir/.env`, or else the nearest parent folder's outside the temp folders).
pub fn find_dotenv(dir: &Path) -> Option<PathBuf> {
    dotenv_candidates(dir).into_iter().find(|p| p.is_file())
}

/// The environment as the course sees it: process variables, then the `.env` that
/// [`find_dotenv`] finds from `dir` on top.
///
/// # Errors
/// [`ConfigError::DotEnv`] when that `.env` is malformed or unreadable; the message names the
/// file and the line. No `.env` at all is fine.
pub fn environment(dir: &Path) -> Result<Environment, ConfigError> {
    let mut vars: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    vars.extend(WITHDRAWN.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
    let Some(path) = find_dotenv(dir) else {
        return Ok(Environment::new(vars, DotEnvFile::NotFound(dir.to_owned())));
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ConfigError::DotEnv(format!("{}: {}", path.display(), collapse_whitespace(&e.to_string())))
    })?;
    // Windows Notepad starts a UTF-8 file with a byte-order mark; most tools skip it, and so do we.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut from_dotenv = Vec::new();
    let mut placeholders = Vec::new();
    for item in dotenvy::from_read_iter(text.as_bytes()) {
        let (k, v) = item.map_err(|e| dotenv_error(&path, &e))?;
        // The example's placeholder, copied along with the file, would override a real key
        // exported in the shell.
        if KEY_VARS.contains(&k.as_str()) && v.trim() == KEY_PLACEHOLDER {
            placeholders.push(k);
            continue;
        }
        from_dotenv.push(k.clone());
        vars.insert(k, v);
    }
    Ok(Environment { vars, dotenv: DotEnvFile::Read(path), from_dotenv, placeholders })
}

/// A dotenvy error as one line that names the 1-based line number where it can.
fn dotenv_error(path: &Path, e: &dotenvy::Error) -> ConfigError {
    if let dotenvy::Error::LineParse(content, _) = e {
        let first = content.lines().next().unwrap_or_default();
        let number = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.lines().position(|l| !first.is_empty() && l.contains(first)))
            .map(|i| format!("line {}: ", i + 1))
            .unwrap_or_default();
        return ConfigError::DotEnv(format!(
            "{}: {number}cannot parse {:?}",
            path.display(),
            collapse_whitespace(first)
        ));
    }
    ConfigError::DotEnv(format!("{}: {}", path.display(), collapse_whitespace(&e.to_string())))
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Resolves [`Config`] from `vars` (see [`environment`]) and the flags `--model` / `--base-url`.
/// A missing-variable error names the `.env` that was read, or where none was found.
///
/// # Errors
/// [`ConfigError::Missing`] naming `MODEL_ID`, or `ANTHROPIC_API_KEY` when the official endpoint is
/// used without a key; [`ConfigError::Invalid`] for an unknown `AUTH_TYPE` or a base URL that is
/// not http(s).
///
/// The key: [`key_variable`]. `ANTHROPIC_AUTH_TOKEN` with a base URL goes as
/// `Authorization: Bearer` unless `AUTH_TYPE` says `x-api-key`.
pub fn resolve(
    vars: &Environment,
    model_flag: Option<&str>,
    base_url_flag: Option<&str>,
) -> Result<Config, ConfigError> {
    let get = |k: &str| vars.get(k).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let model = model_flag.map(str::to_owned).or_else(|| get("MODEL_ID")).ok_or(ConfigError::Missing {
        name: "MODEL_ID",
        hint: "set it in .env or the environment (e.g. MODEL_ID=claude-sonnet-4-5), or pass --model",
        dotenv: vars.dotenv().clone(),
    })?;
    let base_name = if base_url_flag.is_some() { "--base-url" } else { "ANTHROPIC_BASE_URL" };
    let custom_base = base_url_flag.map(str::to_owned).or_else(|| get("ANTHROPIC_BASE_URL"));
    if let Some(url) = &custom_base {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                name: base_name,
                value: url.clone(),
                hint: "use an http:// or https:// URL without /v1, e.g. http://127.0.0.1:11434",
            });
        }
        let host = url.split_once("://").map_or("", |(_, rest)| rest).split(['/', '?', '#']).next();
        if host.is_none_or(str::is_empty) {
            return Err(ConfigError::Invalid {
                name: base_name,
                value: url.clone(),
                hint: "the URL names no host; use one such as http://127.0.0.1:11434",
            });
        }
        let path = url.trim_end_matches('/');
        if path.ends_with("/v1") || path.ends_with("/v1/messages") {
            return Err(ConfigError::Invalid {
                name: base_name,
                value: url.clone(),
                hint: "leave out the trailing /v1 or /v1/messages: the client adds /v1/messages itself",
            });
        }
    }
    let key_name = key_variable(vars, custom_base.is_some());
    let api_key = key_name.and_then(get);
    let token_with_base = custom_base.is_some() && key_name == Some("ANTHROPIC_AUTH_TOKEN");
    if custom_base.is_none() && api_key.is_none() {
        return Err(ConfigError::Missing {
            name: "ANTHROPIC_API_KEY",
            hint: "set it in .env or the environment, or set ANTHROPIC_BASE_URL for a compatible endpoint \
                   (or run with --demo, which needs no key)",
            dotenv: vars.dotenv().clone(),
        });
    }
    let auth = match get("AUTH_TYPE").map(|s| s.to_ascii_lowercase()).as_deref() {
        None if token_with_base => AuthType::Bearer,
        None | Some("x-api-key") | Some("api-key") | Some("apikey") => AuthType::ApiKey,
        Some("bearer") => AuthType::Bearer,
        Some(_) => {
            return Err(ConfigError::Invalid {
                name: "AUTH_TYPE",
                value: get("AUTH_TYPE").unwrap_or_default(),
                hint: "use bearer, or leave it unset for x-api-key",
            });
        }
    };
    let base_url =
        custom_base.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()).trim_end_matches('/').to_owned();
    Ok(Config { model, base_url, api_key, auth })
}

/// The variable [`resolve`] takes the key from, or `None` when neither is set (blank counts as
/// unset). With a base URL (`custom_base`), `ANTHROPIC_AUTH_TOKEN` first, as compatible endpoints
/// document it for Claude Code, then `ANTHROPIC_API_KEY`; for the official endpoint,
/// `ANTHROPIC_API_KEY` first, then `ANTHROPIC_AUTH_TOKEN`.
pub fn key_variable(vars: &Environment, custom_base: bool) -> Option<&'static str> {
    let set = |k: &&str| vars.get(*k).is_some_and(|v| !v.trim().is_empty());
    let order = if custom_base { [KEY_VARS[1], KEY_VARS[0]] } else { KEY_VARS };
    order.into_iter().find(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Environment {
        let map = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Environment::new(map, DotEnvFile::NotFound(PathBuf::from("/work/proj")))
    }

    #[test]
    fn max_retries_is_read_here_and_a_bad_value_is_named() {
        assert_eq!(max_retries(&vars(&[])).unwrap(), None);
        assert_eq!(max_retries(&vars(&[("ANTHROPIC_MAX_RETRIES", " 5 ")])).unwrap(), Some(5));
        let err = max_retries(&vars(&[("ANTHROPIC_MAX_RETRIES", "lots")])).unwrap_err().to_string();
        assert_eq!(err, "ANTHROPIC_MAX_RETRIES must be a whole number, such as 2");
    }

    #[test]
    fn prompt_caching_is_on_unless_disabled_and_a_bad_value_is_named() {
        assert!(prompt_caching(&vars(&[])).unwrap());
        assert!(prompt_caching(&vars(&[("DISABLE_PROMPT_CACHING", "0")])).unwrap());
        assert!(prompt_caching(&vars(&[("DISABLE_PROMPT_CACHING", "")])).unwrap());
        assert!(!prompt_caching(&vars(&[("DISABLE_PROMPT_CACHING", " 1 ")])).unwrap());
        assert!(!prompt_caching(&vars(&[("DISABLE_PROMPT_CACHING", "True")])).unwrap());
        let err = prompt_caching(&vars(&[("DISABLE_PROMPT_CACHING", "maybe")])).unwrap_err().to_string();
        assert!(err.starts_with(r#"DISABLE_PROMPT_CACHING="maybe" is not valid: use 1"#), "{err}");
    }

    #[test]
    fn missing_model_id_names_the_variable_and_where_dotenv_was_looked_for() {
        let err = resolve(&vars(&[("ANTHROPIC_API_KEY", "k")]), None, None).unwrap_err();
        assert!(err.to_string().starts_with("MODEL_ID is not set"), "{err}");
        assert!(err.to_string().ends_with("; no .env in /work/proj or any folder above it"), "{err}");
    }

    #[test]
    fn dotenv_is_found_in_the_nearest_folder_above() {
        // Outside the temp folders, whose parents' `.env` files are skipped.
        let temps = crate::sandbox::temp_folders();
        let base = [
            Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target"))),
            std::env::var_os("HOME").map(PathBuf::from),
        ]
        .into_iter()
        .flatten()
        .filter_map(|b| b.canonicalize().ok())
        .find(|b| !temps.iter().any(|t| b.starts_with(t)));
        let Some(base) = base else { return };
        let root = tempfile::tempdir_in(base).unwrap();
        let sub = root.path().join("chapters/s03");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(root.path().join(".env"), "LCC_TEST_FROM_PARENT=yes\n").unwrap();
        let env = environment(&sub).unwrap();
        assert_eq!(env["LCC_TEST_FROM_PARENT"], "yes");
        assert_eq!(env.dotenv(), &DotEnvFile::Read(root.path().join(".env")));
        std::fs::write(sub.join(".env"), "LCC_TEST_FROM_PARENT=nearest\n").unwrap();
        assert_eq!(environment(&sub).unwrap()["LCC_TEST_FROM_PARENT"], "nearest", "the nearest one wins");
        let err = resolve(&environment(&sub).unwrap(), None, None).unwrap_err().to_string();
        if std::env::var_os("MODEL_ID").is_none() {
            assert!(
                err.ends_with(&format!("; {} was read and does not set it", sub.join(".env").display())),
                "{err}"
            );
        }
    }

    #[test]
    fn a_key_in_dotenv_is_named_and_one_from_the_environment_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let dotenv = dir.path().join(".env");
        std::fs::write(&dotenv, "MODEL_ID=m\nANTHROPIC_AUTH_TOKEN=t\n").unwrap();
        assert_eq!(environment(dir.path()).unwrap().key_file(), Some(dotenv.as_path()));
        std::fs::write(&dotenv, "MODEL_ID=m\nANTHROPIC_API_KEY=\n").unwrap();
        assert_eq!(environment(dir.path()).unwrap().key_file(), None, "an empty key is no key");
        let map = [("ANTHROPIC_API_KEY".to_owned(), "k".to_owned())].into_iter().collect();
        assert_eq!(
            Environment::new(map, DotEnvFile::Read(dotenv)).key_file(),
            None,
            "set by the environment"
        );
    }

    #[test]
    fn a_dotenv_above_in_a_temp_folder_is_never_read() {
        let Some(temp) = crate::sandbox::temp_folders().into_iter().next() else { return };
        let root = tempfile::tempdir_in(&temp).unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(root.path().join(".env"), "LCC_TEST_PLANTED=yes\n").unwrap();
        let env = environment(&ws).unwrap();
        assert!(!env.contains_key("LCC_TEST_PLANTED"), "a planted ../.env was read");
        assert_eq!(skipped_dotenvs(&ws), [root.path().canonicalize().unwrap().join(".env")]);
        std::fs::write(ws.join(".env"), "LCC_TEST_PLANTED=own\n").unwrap();
        assert_eq!(environment(&ws).unwrap()["LCC_TEST_PLANTED"], "own", "the workspace's own is read");
    }

    #[test]
    fn official_endpoint_needs_a_key() {
        let err = resolve(&vars(&[("MODEL_ID", "m")]), None, None).unwrap_err();
        assert!(err.to_string().starts_with("ANTHROPIC_API_KEY is not set"), "{err}");
    }

    #[test]
    fn auth_token_with_a_base_url_is_sent_as_a_bearer_token() {
        let base =
            [("MODEL_ID", "m"), ("ANTHROPIC_BASE_URL", "http://x/"), ("ANTHROPIC_AUTH_TOKEN", "secret")];
        let c = resolve(&vars(&base), None, None).unwrap();
        assert_eq!((c.api_key.as_deref(), c.auth), (Some("secret"), AuthType::Bearer));
        assert_eq!(c.base_url, "http://x");
        // It is what those endpoints document, so it wins over a key meant for Anthropic.
        let both = [base.as_slice(), &[("ANTHROPIC_API_KEY", "anthropic")]].concat();
        assert_eq!(resolve(&vars(&both), None, None).unwrap().api_key.as_deref(), Some("secret"));
        let told = [base.as_slice(), &[("AUTH_TYPE", "x-api-key")]].concat();
        assert_eq!(resolve(&vars(&told), None, None).unwrap().auth, AuthType::ApiKey);
        let c = resolve(&vars(&[("MODEL_ID", "m"), ("ANTHROPIC_AUTH_TOKEN", "t")]), None, None).unwrap();
        assert_eq!((c.api_key.as_deref(), c.auth), (Some("t"), AuthType::ApiKey));
    }

    #[test]
    fn the_example_placeholder_in_dotenv_counts_as_unset() {
        let example = include_str!("../../../.env.example");
        assert!(example.contains(&format!("\nANTHROPIC_API_KEY={KEY_PLACEHOLDER}\n")), "{example}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), format!("MODEL_ID=m\nANTHROPIC_API_KEY={KEY_PLACEHOLDER}\n"))
            .unwrap();
        let env = environment(dir.path()).unwrap();
        let path = dir.path().join(".env");
        assert_eq!(env.origin("MODEL_ID"), Some(Origin::DotEnv(path.clone())));
        assert_ne!(env.get("ANTHROPIC_API_KEY").map(String::as_str), Some(KEY_PLACEHOLDER));
        assert_eq!(env.key_file(), None);
        let notice = env.placeholder_notice().unwrap();
        assert!(notice.starts_with(&format!(
            "config: ANTHROPIC_API_KEY in {} is still the placeholder",
            path.display()
        )));
        assert!(!notice.contains('\n'), "{notice}");
    }

    #[test]
    fn a_base_url_with_v1_messages_or_without_a_host_is_refused() {
        for url in ["http://x/v1/messages", "https://x/v1/messages/", "http://", "https:///v1", "http://?x"] {
            let v = vars(&[("MODEL_ID", "m"), ("ANTHROPIC_BASE_URL", url)]);
            let err = resolve(&v, None, None).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.starts_with(&format!("ANTHROPIC_BASE_URL={url:?} is not valid: ")), "{url}: {err}");
        }
        let v = vars(&[("MODEL_ID", "m"), ("ANTHROPIC_BASE_URL", "http://x/v1/messages")]);
        let err = resolve(&v, None, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("leave out the trailing /v1 or /v1/messages"), "{err}");
        let v = vars(&[("MODEL_ID", "m"), ("ANTHROPIC_BASE_URL", "http://")]);
        let err = resolve(&v, None, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("names no host"), "{err}");
    }

    #[test]
    fn a_dotenv_with_a_byte_order_mark_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "\u{feff}MODEL_ID=from-notepad\r\nAUTH_TYPE=bearer\r\n")
            .unwrap();
        let env = environment(dir.path()).unwrap();
        assert_eq!(env.get("MODEL_ID").map(String::as_str), Some("from-notepad"));
        assert_eq!(env.get("AUTH_TYPE").map(String::as_str), Some("bearer"));
    }

    #[test]
    fn a_base_url_ending_in_v1_is_refused_naming_the_setting() {
        let v = vars(&[("MODEL_ID", "m"), ("ANTHROPIC_BASE_URL", "http://x/v1/")]);
        let err = resolve(&v, None, None).unwrap_err().to_string();
        assert!(
            err.starts_with("ANTHROPIC_BASE_URL=\"http://x/v1/\" is not valid: leave out the trailing /v1"),
            "{err}"
        );
        let err = resolve(&v, None, Some("localhost:1")).unwrap_err().to_string();
        assert!(err.starts_with("--base-url=\"localhost:1\""), "{err}");
    }

    #[test]
    fn flags_override_and_bearer_is_recognised() {
        let c = resolve(
            &vars(&[("MODEL_ID", "m"), ("ANTHROPIC_API_KEY", "k"), ("AUTH_TYPE", "Bearer")]),
            Some("flag-model"),
            Some("https://example.test"),
        )
        .unwrap();
        assert_eq!(
            (c.model.as_str(), c.base_url.as_str(), c.auth),
            ("flag-model", "https://example.test", AuthType::Bearer)
        );
    }

    #[test]
    fn dotenv_overrides_the_environment_and_bad_lines_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "PATH=from-dotenv\n").unwrap();
        assert_eq!(environment(dir.path()).unwrap()["PATH"], "from-dotenv");
        std::fs::write(dir.path().join(".env"), "# models\nMODEL_ID='unterminated\nX=1\n").unwrap();
        let err = environment(dir.path()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: line 2: cannot parse \"MODEL_ID='unterminated\"; fix that line or remove the file",
                dir.path().join(".env").display()
            )
        );
    }
}
