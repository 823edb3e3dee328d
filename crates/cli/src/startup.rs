//! Start-up: building the model a session talks to, and the one error type for a chapter that
//! cannot start.
//!
//! Source: ours: a start-up failure is one clear line, never a panic. [`crate::cli`] starts a chapter in one function that uses `?` on each
//! step; whatever [`StartupError`] stops it is printed as one line, `error: …`, and the
//! process exits with code 2 ([`crate::cli::EXIT_CONFIG`]). Nothing has been sent anywhere by
//! then.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ui::Ui;
use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
use agent_core::config::{self, ConfigError};
use agent_core::error::ApiError;
use agent_core::model::{Model, Recording, ReplayModel};

/// Why a chapter could not start. `Display` is the line printed before exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// `-p ""` or `-p "  "`.
    #[error("-p needs a prompt, and the one given is empty")]
    EmptyPrompt,
    /// The chapter's builder refused to start: a setting of the chapter's own is wrong (s17's
    /// `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP=eight`).
    #[error("{0}")]
    Chapter(String),
    /// The current directory is gone or unreadable.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(std::io::Error),
    /// The workspace root cannot be opened.
    #[error("--workdir {}: {source}", path.display())]
    Workdir {
        /// The root asked for (`--workdir`, or the current directory).
        path: PathBuf,
        /// Why it cannot be opened.
        source: std::io::Error,
    },
    /// A variable or `.env` line is missing or wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The model cannot be built: an unreadable or malformed recording, an HTTP client that
    /// cannot be set up.
    #[error(transparent)]
    Model(#[from] ApiError),
    /// `--record FILE` cannot be opened for appending.
    #[error("--record {}: {source}", path.display())]
    Record {
        /// The file.
        path: PathBuf,
        /// Why it cannot be opened.
        source: std::io::Error,
    },
    /// The temporary workspace of `--demo` or `--example` cannot be made, seeded or opened.
    #[error("cannot create the {kind} workspace: {source}")]
    Seeded {
        /// `demo` or `example`.
        kind: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// What the flags say about the model.
#[derive(Debug, Clone, Copy)]
pub struct ModelSettings<'a> {
    /// `--replay FILE`: answer from a recording.
    pub replay: Option<&'a Path>,
    /// `--record FILE`: append every response to a recording.
    pub record: Option<&'a Path>,
    /// `--model`, overriding `MODEL_ID`.
    pub model: Option<&'a str>,
    /// `--base-url`, overriding `ANTHROPIC_BASE_URL`.
    pub base_url: Option<&'a str>,
    /// `--max-retries`, overriding `ANTHROPIC_MAX_RETRIES`.
    pub max_retries: Option<u32>,
    /// `--connect-timeout` and `--idle-timeout`.
    pub timeouts: Timeouts,
    /// Ask for a stream (`false` with `--no-stream`).
    pub stream: bool,
    /// Send prompt-caching breakpoints (`false` with `--no-cache`; `DISABLE_PROMPT_CACHING=1`
    /// turns them off too).
    pub cache: bool,
}

/// The model `settings` and `vars` (see [`config::environment`]) ask for, and the `model` id its
/// requests carry: a [`ReplayModel`] for `--replay` (announced on stderr), otherwise the HTTP
/// client, wrapped in a [`Recording`] for `--record`. Its retry notices are events, shown by the
/// terminal listener.
///
/// # Errors
/// A [`StartupError`]: the recording, the configuration, `ANTHROPIC_MAX_RETRIES`,
/// `DISABLE_PROMPT_CACHING`, the client, or the `--record` file.
pub fn open_model(
    settings: &ModelSettings<'_>,
    vars: &config::Environment,
    ui: &Ui,
) -> Result<(Arc<dyn Model>, String), StartupError> {
    if let Some(path) = settings.replay {
        let replay = ReplayModel::from_file(path)?;
        ui.notice(&format!(
            "[replay] answering from {} ({}); no network",
            path.display(),
            crate::ui::count(replay.remaining(), "recorded turn", "recorded turns")
        ));
        let id = settings
            .model
            .map(str::to_owned)
            .or_else(|| vars.get("MODEL_ID").cloned())
            .unwrap_or_else(|| "replay".into());
        return Ok((Arc::new(replay), id));
    }
    let config = config::resolve(vars, settings.model, settings.base_url)?;
    let max_retries = match settings.max_retries {
        Some(n) => n,
        None => config::max_retries(vars)?.unwrap_or(RetryPolicy::default().max_retries),
    };
    let retry = RetryPolicy { max_retries, ..RetryPolicy::default() };
    let cache = settings.cache && config::prompt_caching(vars)?;
    let client = AnthropicClient::new(&config, retry, settings.timeouts)?
        .with_streaming(settings.stream)
        .with_prompt_caching(cache);
    let model: Arc<dyn Model> = match settings.record {
        Some(path) => Arc::new(
            Recording::new(client, path)
                .map_err(|source| StartupError::Record { path: path.to_owned(), source })?,
        ),
        None => Arc::new(client),
    };
    Ok((model, config.model))
}
