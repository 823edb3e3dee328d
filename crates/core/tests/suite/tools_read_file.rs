//! `read_file` (course §1) as the model sees it: lines, `limit`, the 50,000-character cap,
//! bounded work on a huge file, binary files and missing files.

use std::io::Write;
use std::time::{Duration, Instant};

use agent_core::dispatch::ToolOutcome;
use serde_json::json;

use super::tools_support::{Fixture, TestResult};

#[tokio::test]
async fn limit_shows_the_first_lines_then_how_many_more() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("five.txt"), "1\n2\n3\n4\n5\n")?;
    let cases = [
        (json!({"path": "five.txt"}), "1\n2\n3\n4\n5"),
        (json!({"path": "five.txt", "limit": 2}), "1\n2\n... (3 more lines)"),
        (json!({"path": "five.txt", "limit": 5}), "1\n2\n3\n4\n5"),
        (json!({"path": "five.txt", "limit": 50}), "1\n2\n3\n4\n5"),
        // As in the course, where 0 is falsy: no limit.
        (json!({"path": "five.txt", "limit": 0}), "1\n2\n3\n4\n5"),
    ];
    for (input, expected) in cases {
        assert_eq!(fx.call("read_file", input.clone()).await, ToolOutcome::ok(expected), "{input}");
    }
    let bad = fx.call("read_file", json!({"path": "five.txt", "limit": "x"})).await;
    assert_eq!(bad, ToolOutcome::error("Error: limit: invalid type: string \"x\", expected u64"));
    Ok(())
}

#[tokio::test]
async fn output_is_capped_at_50000_characters() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("wide.txt"), format!("{}\nsecond\n", "é".repeat(60_000)))?;
    let out = fx.call("read_file", json!({"path": "wide.txt"})).await;
    let (kept, note) = out.content.rsplit_once('\n').ok_or("no note")?;
    assert_eq!(kept, "é".repeat(50_000));
    assert_eq!(note, "... (output cut at 50000 characters; 2 more lines)");
    Ok(())
}

#[tokio::test]
async fn a_200_mb_file_returns_quickly_with_bounded_output() -> TestResult {
    let fx = Fixture::new()?;
    let path = fx.path("huge.log");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for i in 0..100_000 {
            writeln!(f, "line {i}")?;
        }
        // The rest is a sparse hole: 200 MB in all, one last line of NUL bytes with no newline.
        f.into_inner()?.set_len(200 * 1024 * 1024)?;
    }
    let started = Instant::now();
    let limited = fx.call("read_file", json!({"path": "huge.log", "limit": 3})).await;
    // Reading stops COUNT_BYTES after the shown lines: all 100,000 text lines lie inside that
    // budget, the sparse tail does not, so the note says what was left unread.
    assert!(!limited.is_error);
    let unread = limited
        .content
        .strip_prefix("line 0\nline 1\nline 2\n... (at least 99998 more lines; ")
        .and_then(|rest| rest.strip_suffix(" more bytes not read)"))
        .ok_or(format!("unexpected: {}", limited.content))?;
    let unread: u64 = unread.parse()?;
    assert!(unread > 190 * 1024 * 1024, "most of the 200 MB was never read: {unread}");
    let whole = fx.call("read_file", json!({"path": "huge.log"})).await;
    assert!(!whole.is_error);
    assert!(whole.content.len() < 50_200, "{} bytes", whole.content.len());
    let (_, note) = whole.content.rsplit_once('\n').ok_or("no note")?;
    // The first 50,000 characters end just after "line 5110\n": 5,111 whole lines of 100,001.
    assert!(
        note.starts_with("... (output cut at 50000 characters; at least 94890 more lines; ")
            && note.ends_with(" more bytes not read)"),
        "{note}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    Ok(())
}

#[tokio::test]
async fn a_binary_file_is_a_clear_error() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("blob.bin"), [0x7f, b'E', b'L', b'F', 0, 1, 2, 3])?;
    std::fs::write(fx.path("noise.bin"), [0xff_u8; 64])?;
    let cases = [
        ("blob.bin", "Error: blob.bin is a binary file (8 bytes); not shown"),
        ("noise.bin", "Error: noise.bin is a binary file (64 bytes); not shown"),
    ];
    for (path, expected) in cases {
        assert_eq!(fx.call("read_file", json!({ "path": path })).await, ToolOutcome::error(expected));
    }
    Ok(())
}

#[tokio::test]
async fn a_few_invalid_bytes_in_text_become_replacement_characters() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("latin1.txt"), b"caf\xe9 au lait\r\nok\n")?;
    let out = fx.call("read_file", json!({"path": "latin1.txt"})).await;
    assert_eq!(out, ToolOutcome::ok("caf\u{FFFD} au lait\nok"));
    Ok(())
}

#[tokio::test]
async fn a_missing_file_a_folder_or_a_fifo_is_an_error_naming_the_path_as_given() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::create_dir(fx.path("dir"))?;
    // Opening a FIFO would block forever; it is refused before opening.
    let made = std::process::Command::new("mkfifo").arg(fx.path("pipe")).status()?;
    assert!(made.success());
    let cases = [
        ("nope/missing.txt", "Error: File not found: nope/missing.txt"),
        ("./dir", "Error: ./dir is a folder, not a file"),
        ("pipe", "Error: pipe is not a regular file"),
    ];
    for (path, expected) in cases {
        assert_eq!(fx.call("read_file", json!({ "path": path })).await, ToolOutcome::error(expected));
    }
    Ok(())
}
