//! Issue 13, input 5, in the library: [`end_all_sessions`] (what SIGTERM and SIGHUP run before the
//! harness exits) ends every command, also one being started on another thread at that very
//! moment, and no command starts after it. On a multi-thread runtime the handler used to take its
//! list of sessions while a command was already forked and running but not yet registered; that
//! command outlived the harness (2 of 50 loaded runs of the end-to-end test in
//! `tests/suite/isolation.rs` before the s02 binary moved to a current-thread runtime).
//!
//! Its own process (see `own_process`): `end_all_sessions` closes the registry of the whole
//! process, after which no other test could start a command.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_core::process::{end_all_sessions, spawn_shell};
use agent_core::sandbox::Confinement;
use agent_core::test_util::session_members;
use agent_core::workspace::Workspace;

use super::own_process::in_own_process;

type TestResult = Result<(), Box<dyn std::error::Error>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_all_sessions_ends_commands_started_meanwhile_and_refuses_new_ones() -> TestResult {
    let this_test = "end_all_sessions_ends_commands_started_meanwhile_and_refuses_new_ones";
    if in_own_process(module_path!(), this_test) {
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    let count = Arc::new(AtomicUsize::new(0));
    // A task on one worker starts commands back to back, as parallel `bash` calls would, until
    // it is refused; it keeps every child and session, so that only `end_all_sessions` ends them.
    let spawner = tokio::spawn({
        let count = Arc::clone(&count);
        async move {
            let mut started = Vec::new();
            loop {
                match spawn_shell("sleep 300 & sleep 300", ws.dir(), ws.root(), Confinement::default()) {
                    Ok(pair) => started.push(pair),
                    Err(e) => return (started, e),
                }
                count.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while count.load(Ordering::SeqCst) < 10 {
        assert!(Instant::now() < deadline, "the spawner never started ten commands");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // On another thread, while the spawner is most likely in the middle of a spawn.
    tokio::task::spawn_blocking(end_all_sessions).await?;

    let (started, refusal) = tokio::time::timeout(Duration::from_secs(30), spawner)
        .await
        .map_err(|_| "spawn_shell still starts commands after end_all_sessions")??;
    assert_eq!(refusal.kind(), std::io::ErrorKind::Interrupted, "{refusal}");
    assert_eq!(refusal.to_string(), "the harness is exiting");
    assert!(started.len() >= 10);
    for (child, session) in &started {
        // `sh` leads the command's session; its supervisor (`child`) is outside it.
        let sid = session.command_pid().ok_or("the supervisor reported no command pid")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !session_members(sid).is_empty() {
            assert!(
                Instant::now() < deadline,
                "session {sid} ({} of {} commands) outlived end_all_sessions: {:?}",
                started.iter().position(|(c, _)| c.id() == child.id()).unwrap_or(0) + 1,
                started.len(),
                session_members(sid)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(())
}
