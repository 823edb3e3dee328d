//! `agent-cli`: the terminal side of the learn-claude-code Rust edition.
//!
//! [`agent_core`] is the mechanism (the loop, the client, the tools, the hooks) and prints
//! nothing; this crate is the program around it that a chapter binary runs: flags, start-up, the
//! REPL, and [`ui::Terminal`], the listener that shows the loop's events. A harness author who
//! wants only the mechanism depends on `agent-core` alone.
//!
//! | module | what it holds | course / API source |
//! |---|---|---|
//! | [`chapter`] | the generic chapter entry point: a chapter's `main` in one call | ours |
//! | [`cli`] | flags, start-up, `-p` and its exit codes, `--demo`, `--example` | course §0 |
//! | [`startup`] | building the model; the one start-up error (exit code 2) | ours |
//! | [`repl`] | reading prompts, Ctrl-C, one cancellable turn, `/commands` | course §0 |
//! | [`ui`] | what the terminal shows, and [`ui::Terminal`], the events' listener | course §0–§1 |
//! | [`listeners`] | the terminal and the trace (`--trace`, `/trace`) as the one listener of a session | ours |
//! | [`console`] | the terminal shared by the line editor and automatic turns: their lines above the prompt, the typed text kept | course s12/s13/s15, ours |
//! | [`approve`] | asking `Allow? [y/N]` on the terminal; `--yes`/`--no`/`--allow`; the watch on `.env` | course s04/s05, ours |

#![warn(missing_docs)]

pub mod approve;
pub mod chapter;
pub mod cli;
pub mod console;
pub mod listeners;
pub mod repl;
pub mod startup;
pub mod ui;
