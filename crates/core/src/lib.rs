//! `agent-core`: the shared mechanism of the learn-claude-code Rust edition.
//!
//! Each chapter binary composes these pieces; none copies them.
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
//! | [`process`] | how a `bash` command starts and ends: its own session, a clean environment | ours |
//! | [`sandbox`] | Landlock for `bash`: `--sandbox`, `--no-network` | ours |
//! | [`tools`] | `bash`, `read_file`, `write_file`, `edit_file`, `glob` | course §1, §3 |
//! | [`extension`] | what a chapter may add to a round, and before each request | course s03–s05, goose |
//! | [`agent`] | `agent_loop` and one user turn | course §0 |
//! | [`permission`] | the permission check: shell tokeniser, destructive-command classifier, verdict | course s04/s05, issue 14 |
//! | [`hooks`] | `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `Stop` | course s04/s05 |
//! | [`approve`] | asking the user `Allow? [y/N]` on the terminal | course s04/s05 |
//! | [`sanitize`] | the one sanitiser for everything untrusted the terminal shows | ours (issue 14) |
//! | [`ui`] | what the terminal shows | course §0 |
//! | [`repl`] | reading prompts, Ctrl-C, one cancellable turn | course §0 |
//! | [`startup`] | building the model; the one start-up error (exit code 2) | ours (issue 12) |
//! | `test_util` | a scripted model that records its requests, response builders, `Proc` (a process seen through `/proc`) (feature `test-util`) | ours |
//! | [`cli`] | flags, start-up, `-p`, `--demo` | course §0 |
//! | [`chapter`] | the generic chapter entry point: a chapter's `main` in one call | ours |

#![warn(missing_docs)]

pub mod agent;
pub mod approve;
pub mod chapter;
pub mod cli;
pub mod client;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod extension;
pub mod hooks;
pub mod messages;
pub mod model;
pub mod normalize;
pub mod permission;
pub mod process;
pub mod repl;
pub mod sandbox;
pub mod sanitize;
pub mod sse;
pub mod startup;
#[cfg(feature = "test-util")]
pub mod test_util;
pub mod tools;
pub mod ui;
pub mod workspace;
