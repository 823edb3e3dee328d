//! `bash` (course §1) as the model sees it: output shape, lossy decoding, exit codes, the cut at
//! 50,000 characters, the deny list, and that no process the command started survives a timeout
//! or a cancelled turn.

use std::time::{Duration, Instant};

use agent_core::dispatch::ToolOutcome;
use agent_core::tools::ToolOptions;
use serde_json::json;

use super::tools_support::{Fixture, TestResult, wait_group_gone};

async fn run(fx: &Fixture, command: &str) -> ToolOutcome {
    fx.call("bash", json!({ "command": command })).await
}

/// The pgid the command wrote (`echo $$ > pgid`): `sh` leads its own group.
async fn read_pgid(fx: &Fixture, file: &str) -> Result<i32, Box<dyn std::error::Error>> {
    for _ in 0..100 {
        if let Ok(s) = std::fs::read_to_string(fx.path(file))
            && let Ok(pgid) = s.trim().parse()
        {
            return Ok(pgid);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("{file} was never written").into())
}

#[tokio::test]
async fn output_is_stdout_then_stderr_trimmed_with_cwd_at_the_root() -> TestResult {
    let fx = Fixture::new()?;
    assert_eq!(run(&fx, "echo out; echo err >&2").await, ToolOutcome::ok("out\nerr"));
    assert_eq!(run(&fx, "pwd").await, ToolOutcome::ok(fx.root().to_string_lossy()));
    assert_eq!(run(&fx, "  echo '  padded  '  ").await, ToolOutcome::ok("padded"));
    Ok(())
}

#[tokio::test]
async fn empty_output_says_no_output() -> TestResult {
    let fx = Fixture::new()?;
    assert_eq!(run(&fx, "true").await, ToolOutcome::ok("(no output)"));
    Ok(())
}

#[tokio::test]
async fn a_non_zero_exit_code_is_appended() -> TestResult {
    let fx = Fixture::new()?;
    assert_eq!(run(&fx, "exit 3").await, ToolOutcome::ok("(no output)\n(exit code 3)"));
    assert_eq!(run(&fx, "echo no >&2; exit 1").await, ToolOutcome::ok("no\n(exit code 1)"));
    assert_eq!(run(&fx, "kill -9 $$").await, ToolOutcome::ok("(no output)\n(killed by signal SIGKILL)"));
    Ok(())
}

#[tokio::test]
async fn the_course_exit_status_texts_are_errors() -> TestResult {
    use agent_core::tools::ExitStatusText;
    let later =
        Fixture::with_options(&ToolOptions { exit_status: ExitStatusText::Error, ..Default::default() })?;
    assert_eq!(
        run(&later, "exit 3").await,
        ToolOutcome::error("Error: command exited with status 3\n(no output)")
    );
    assert_eq!(run(&later, "echo ok").await, ToolOutcome::ok("ok"));
    let s12 = Fixture::with_options(&ToolOptions {
        exit_status: ExitStatusText::ErrorUncut,
        ..Default::default()
    })?;
    assert_eq!(run(&s12, "exit 1").await, ToolOutcome::error("Error: command exited with status 1\n"));
    assert_eq!(
        run(&s12, "echo no >&2; exit 2").await,
        ToolOutcome::error("Error: command exited with status 2\nno")
    );
    assert_eq!(run(&s12, "kill -9 $$").await, ToolOutcome::error("Error: command exited with status -9\n"));
    // Not cut at 50,000 characters on error.
    let long = run(&s12, "head -c 60000 /dev/zero | tr '\\0' o; exit 1").await;
    assert_eq!(long.content.len(), "Error: command exited with status 1\n".len() + 60_000);
    assert_eq!(run(&s12, "true").await, ToolOutcome::ok("(no output)"));
    Ok(())
}

#[tokio::test]
async fn invalid_utf8_becomes_replacement_characters_not_a_crash() -> TestResult {
    let fx = Fixture::new()?;
    // dash's printf has no `\x`; octal 377 376 are the bytes 0xFF 0xFE.
    assert_eq!(run(&fx, r"printf '\377\376 ok'").await, ToolOutcome::ok("\u{FFFD}\u{FFFD} ok"));
    Ok(())
}

#[tokio::test]
async fn dangerous_commands_are_blocked_before_running() -> TestResult {
    let fx = Fixture::new()?;
    for cmd in ["sudo ls", "rm -rf /", "echo x > /dev/sda", "shutdown now", "reboot"] {
        assert_eq!(run(&fx, cmd).await, ToolOutcome::error("Error: Dangerous command blocked"), "{cmd}");
    }
    Ok(())
}

#[tokio::test]
async fn a_gigabyte_of_output_is_cut_at_50000_characters_with_a_count() -> TestResult {
    let fx = Fixture::new()?;
    let out = run(&fx, "yes | head -c 1000000000").await;
    assert!(!out.is_error);
    let at = out.content.rfind("... (").ok_or("no note line")?;
    let (kept, note) = out.content.split_at(at);
    // The 50,000 shown characters end with a newline, so the note follows with no blank line.
    assert_eq!(kept.chars().count(), 50_000);
    assert!(kept.ends_with("y\n") && !kept.ends_with("\n\n"));
    assert!(kept.starts_with("y\ny\n"));
    // 10^9 bytes, less the trailing newline trimmed away, less the 50,000 shown.
    assert_eq!(note, "... (999949999 more characters)");
    assert!(out.content.len() < 50_100);
    Ok(())
}

#[tokio::test]
async fn large_stdout_and_stderr_together_do_not_deadlock() -> TestResult {
    let fx = Fixture::new()?;
    let out = run(
        &fx,
        "head -c 300000 /dev/zero | tr '\\000' e >&2; head -c 300000 /dev/zero | tr '\\000' o; echo",
    )
    .await;
    assert!(out.content.starts_with("ooo"));
    // 300,000 o + newline + 300,000 e, less the 50,000 shown.
    assert!(out.content.ends_with("\n... (550001 more characters)"), "{}", &out.content[49_990..]);
    Ok(())
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group_and_returns_quickly() -> TestResult {
    let fx =
        Fixture::with_options(&ToolOptions { bash_timeout: Duration::from_secs(1), ..Default::default() })?;
    let started = Instant::now();
    let out = run(&fx, "echo $$ > pgid; sleep 1000 & sleep 1000; wait").await;
    assert_eq!(out, ToolOutcome::error("Error: Timeout (1s)"));
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    let pgid = read_pgid(&fx, "pgid").await?;
    assert_eq!(wait_group_gone(pgid, Duration::from_secs(1)), Vec::<i32>::new(), "group {pgid} survived");
    Ok(())
}

#[tokio::test]
async fn background_processes_die_when_the_command_finishes() -> TestResult {
    let fx = Fixture::new()?;
    let started = Instant::now();
    let out = run(&fx, "echo $$ > pgid; sleep 1000 & echo started").await;
    assert_eq!(out, ToolOutcome::ok("started\n(stopped 1 background process it left running)"));
    assert!(started.elapsed() < Duration::from_secs(30));
    let pgid = read_pgid(&fx, "pgid").await?;
    assert_eq!(wait_group_gone(pgid, Duration::from_secs(1)), Vec::<i32>::new(), "group {pgid} survived");
    Ok(())
}

#[tokio::test]
async fn a_cancelled_call_kills_the_whole_process_group() -> TestResult {
    let fx = Fixture::new()?;
    let call = run(&fx, "echo $$ > pgid; sleep 1000 & sleep 1000; wait");
    // The user cancels the turn: the future is dropped mid-run.
    let cancelled = tokio::time::timeout(Duration::from_millis(1000), call).await;
    assert!(cancelled.is_err(), "the command should still have been running");
    let pgid = read_pgid(&fx, "pgid").await?;
    assert_eq!(wait_group_gone(pgid, Duration::from_secs(1)), Vec::<i32>::new(), "group {pgid} survived");
    Ok(())
}

#[tokio::test]
async fn a_missing_command_field_names_the_field() -> TestResult {
    let fx = Fixture::new()?;
    assert_eq!(fx.call("bash", json!({})).await, ToolOutcome::error("Error: missing field `command`"));
    Ok(())
}
