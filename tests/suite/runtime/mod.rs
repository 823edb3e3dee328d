//! The runtime around the loop, end to end: what the course's s10–s17 stand on, shown against
//! the loopback Messages API server from outside `agent-core`, never through a chapter. Turns
//! that no one typed and the terminal they share with the user (`turns`), and background
//! commands (`background`), run in `runtime-harness` (`tests/harness/runtime.rs`), a small
//! program that composes the library the way s12, s13 and s15 will; the loop's own powers (each
//! request's tools and SYSTEM, a Stop that asks the model, recovery, agents at once) are driven
//! through the library directly (`loop_hooks`).

#[cfg(target_os = "linux")]
mod background;
mod loop_hooks;
mod turns;

use std::path::Path;
use std::process::Command;

use e2e::MockServer;

/// The prompt of `runtime-harness`.
const PROMPT: &str = "rt >> ";

/// What a tool call that would ask gets in the harness's automatic turns (the course's s12).
const REFUSAL: &str = "Permission denied: scheduled turns cannot request interactive approval";

/// `runtime-harness` about to run in `ws` against `server`.
fn harness(ws: &Path, server: &MockServer) -> Command {
    e2e::program(Path::new(env!("CARGO_BIN_EXE_runtime-harness")), ws, Some(&server.base_url()))
}

/// Drops `text` into the harness's inbox in one step (written aside, then renamed into place), as
/// a teammate posts to the Lead's mailbox: the harness queues `[Inbox] TEXT` as an automatic turn.
fn post_to_inbox(ws: &Path, text: &str) {
    let aside = ws.join(".inbox.tmp");
    std::fs::write(&aside, text).expect("write the inbox file");
    std::fs::rename(&aside, ws.join("inbox.txt")).expect("move the inbox file into place");
}
