//! `agent-core`: the mechanism of the learn-claude-code Rust edition, as a library.
//!
//! Each chapter binary composes these pieces; none copies them. Nothing here prints or reads the
//! terminal: the loop reports [`events::Event`]s to the sink its caller gives it, and the
//! chapters' terminal (`agent-cli`) is one such listener. So a harness author can lift the loop,
//! the client and the tools without clap, rustyline or a REPL.
//!
//! | module | what it holds | course / API source |
//! |---|---|---|
//! | [`messages`] | content blocks, requests, responses | Messages API |
//! | [`normalize`] | `normalize_messages` | course §1 |
//! | [`config`] | `.env` and environment variables | course §0 |
//! | [`error`] | `ApiError`, every way a call to the model fails | Messages API, errors |
//! | [`client`] | the HTTP client, retries, timeouts, the request body as sent | Messages API, SDK retry policy |
//! | [`sse`] | server-sent-event framing and the streamed-message accumulator | Messages API, streaming |
//! | [`model`] | the `Model` trait, replay and recording | ours |
//! | [`dispatch`] | the dispatch map of tools | course s02 |
//! | [`workspace`] | the workspace rule, in one place; the root as an open handle | course §1, ours |
//! | [`process`] | how a `bash` command starts and ends: its own session, a clean environment, nothing left running (Linux: a subreaper; macOS: the process table) | ours |
//! | [`sandbox`] | the sandbox for `bash`: `--sandbox`, `--no-network` (Linux: Landlock and seccomp; macOS: Seatbelt) | ours, Codex CLI |
//! | [`tools`] | `bash`, `read_file`, `write_file`, `edit_file`, `glob` | course §1, §3 |
//! | [`events`] | what the loop reports instead of printing, the sink trait, and a prefixed sink for one of several agents | ours, codex-rs |
//! | [`extension`] | what a chapter may add to a turn: around each request (its SYSTEM and tools included), tool call and tool batch, on a failed request, before the turn, at `Stop` (with the model) and after the answer | course s03–s09, s14–s17, goose |
//! | [`agent`] | `agent_loop` and one user turn; the [`agent::Agent`] builder; recovery around a request (`max_tokens` raise and continuation, fallback model, errors as text); several agents at once | course §0, s13–s15 |
//! | [`permission`] | the permission check: shell tokeniser, the list of known programs, classifier, verdict, the session's allowances | course s04/s05, ours |
//! | [`hooks`] | `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `Stop` | course s04/s05 |
//! | [`approve`] | the `Allow? [y/N]` answerer the permission hook asks, and the gate that keeps a turn no one started from asking | course s04/s05, s12/s13 |
//! | [`turns`] | turns no one typed: the queue of automatic turns the REPL and `-p` serve beside the user's prompts | course s12/s13/s15, codex-rs |
//! | [`wording`] | the model-facing texts the course words differently per chapter (`Unknown: NAME`, the deny list's refusal) | course §0, s10–s17 §0.2 |
//! | [`trace`] | recording a session: every event and request as a JSON line (`--trace`), secrets hidden | ours |
//! | [`sanitize`] | the one sanitiser for everything untrusted a listener shows, and `one_line` | ours |
//! | `test_util` | a scripted model that records its requests, response builders, `Proc` (a process seen through `/proc`) (feature `test-util`) | ours |

//!
//! A module with submodules is a folder with a `mod.rs`; a large module's unit tests are its
//! `tests.rs` submodule.
//!
//! An agent in a harness of your own: the loop on the real client, the course's tools, and a
//! closure as the listener of its events.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agent_core::agent::Agent;
//! use agent_core::client::{AnthropicClient, RetryPolicy, Timeouts};
//! use agent_core::config::{AuthType, Config};
//! use agent_core::events::Event;
//! use agent_core::tools::{self, ToolOptions};
//! use agent_core::workspace::Workspace;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config {
//!     model: "claude-sonnet-4-5".into(),
//!     base_url: "https://api.anthropic.com".into(),
//!     api_key: std::env::var("ANTHROPIC_API_KEY").ok(),
//!     auth: AuthType::ApiKey,
//! };
//! let model = Arc::new(AnthropicClient::new(&config, RetryPolicy::default(), Timeouts::default())?);
//! let workspace = Workspace::new(std::env::current_dir()?)?;
//! let mut agent = Agent::builder(model, &config.model)
//!     .system("You are a coding agent.")
//!     .tools(tools::all(&workspace, &ToolOptions::default()))
//!     .events(Arc::new(|event: &Event<'_>| {
//!         if let Event::TextDelta(text) = event {
//!             print!("{text}");
//!         }
//!     }))
//!     .build();
//! let mut history = Vec::new();
//! agent.run_turn(&mut history, "List the Rust files").await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

// The sandbox and the ending of commands exist for Linux and macOS only; elsewhere the build
// stops here rather than run commands unconfined. Windows users run the chapters in WSL.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
compile_error!(
    "agent-core runs on Linux and macOS only (its sandbox is Landlock or Seatbelt); on Windows, build and run it inside WSL"
);

pub mod agent;
pub mod approve;
pub mod client;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod extension;
pub mod hooks;
pub mod messages;
pub mod model;
pub mod normalize;
pub mod permission;
pub mod process;
pub mod sandbox;
pub mod sanitize;
pub mod sse;
#[cfg(feature = "test-util")]
pub mod test_util;
pub mod tools;
pub mod trace;
pub mod turns;
pub mod wording;
pub mod workspace;
