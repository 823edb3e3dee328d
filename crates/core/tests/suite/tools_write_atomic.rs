//! `write_file` writes atomically: a write that fails part-way leaves the original file intact.
//!
//! How the failure is made honestly, as root: a read-only folder does not stop root, so instead
//! this test lowers `RLIMIT_FSIZE` (which binds root too) below the new content's size. The write
//! of the content then fails with `EFBIG` part-way through (SIGXFSZ is ignored so the process
//! lives). What this proves: when writing the content fails after some bytes were written, the
//! target still holds its old content, and no temporary file is left. A non-atomic
//! truncate-then-write would leave the target truncated to the limit. It does not test a crash
//! between the write and the rename (that is what rename(2)'s atomicity covers).
//!
//! It runs in a process of its own (see `own_process`) because the limit is process-wide; it is
//! restored before any assertion, so libtest's own output is never affected.

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use nix::sys::signal::{SigHandler, Signal, signal};
use serde_json::json;

use super::own_process::in_own_process;
use super::tools_support::{Fixture, TestResult, tree};

#[tokio::test]
async fn a_write_that_fails_part_way_leaves_the_original_file_intact() -> TestResult {
    let this_test = "a_write_that_fails_part_way_leaves_the_original_file_intact";
    if in_own_process(module_path!(), this_test) {
        return Ok(());
    }
    let fx = Fixture::new()?;
    let original = "original content\n".repeat(100);
    std::fs::write(fx.path("keep.txt"), &original)?;
    let before = tree(fx.root())?;

    let new_content = "x".repeat(1024 * 1024);
    let (soft, hard) = getrlimit(Resource::RLIMIT_FSIZE)?;
    // SAFETY: SIG_IGN installs no Rust code as a handler; only the disposition changes.
    let old_handler = unsafe { signal(Signal::SIGXFSZ, SigHandler::SigIgn) }?;
    setrlimit(Resource::RLIMIT_FSIZE, 64 * 1024, hard)?;
    let out = fx.call("write_file", json!({"path": "keep.txt", "content": new_content})).await;
    setrlimit(Resource::RLIMIT_FSIZE, soft, hard)?;
    // SAFETY: puts back the disposition that was there before.
    unsafe { signal(Signal::SIGXFSZ, old_handler) }?;

    assert!(out.is_error, "{out:?}");
    assert!(out.content.starts_with("Error: Cannot write keep.txt: "), "{}", out.content);
    assert_eq!(std::fs::read_to_string(fx.path("keep.txt"))?, original);
    // Same files, same contents: no temporary file left behind.
    assert_eq!(tree(fx.root())?, before);
    Ok(())
}
