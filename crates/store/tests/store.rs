//! The store toolkit on real files, in real folders, with a real second process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use agent_core::workspace::Workspace;
use store::{StoreDir, StoreError};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn workspace() -> Result<(tempfile::TempDir, Workspace), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    Ok((dir, ws))
}

/// Every name in the folder, dot files included.
fn all_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn open_creates_only_when_asked() -> TestResult {
    let (dir, ws) = workspace()?;
    assert!(StoreDir::open(&ws, ".tasks")?.is_none());
    assert!(!dir.path().join(".tasks").exists(), "open alone creates nothing");
    let store = StoreDir::open_or_create(&ws, ".tasks")?;
    assert_eq!(store.path(), dir.path().canonicalize()?.join(".tasks"));
    assert!(StoreDir::open(&ws, ".tasks")?.is_some());
    Ok(())
}

#[test]
fn create_new_never_overwrites_and_leaves_no_temporary_file() -> TestResult {
    let (dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, ".tasks")?;
    assert!(store.create_new("task_1.json", b"first")?);
    assert!(!store.create_new("task_1.json", b"second")?, "an existing name is refused");
    assert_eq!(std::fs::read(dir.path().join(".tasks/task_1.json"))?, b"first");
    assert_eq!(all_names(&dir.path().join(".tasks")), ["task_1.json"]);
    Ok(())
}

#[test]
fn create_unique_draws_again_on_a_collision_and_gives_up_after_the_attempts() -> TestResult {
    let (dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, ".tasks")?;
    let mut draws = ["a", "a", "b"].into_iter();
    let first =
        store.create_unique(3, || draws.next().unwrap_or("z").to_owned(), |n| n.as_bytes().to_vec())?;
    assert_eq!(first.as_deref(), Some("a"));
    let second =
        store.create_unique(3, || draws.next().unwrap_or("z").to_owned(), |n| n.as_bytes().to_vec())?;
    assert_eq!(second.as_deref(), Some("b"), "the taken name a was drawn again and skipped");
    let none = store.create_unique(2, || "a".to_owned(), |_| b"x".to_vec())?;
    assert_eq!(none, None);
    assert_eq!(std::fs::read_to_string(dir.path().join(".tasks/a"))?, "a");
    Ok(())
}

#[test]
fn replace_swaps_the_whole_file_and_names_skip_dot_files() -> TestResult {
    let (dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, "jobs")?;
    store.replace("b.json", b"one")?;
    store.replace("b.json", b"two")?;
    store.replace("a.json", b"x")?;
    let _lock = store.lock()?;
    assert_eq!(std::fs::read(dir.path().join("jobs/b.json"))?, b"two");
    assert_eq!(store.names(|n| n.ends_with(".json"))?, ["a.json", "b.json"]);
    assert_eq!(all_names(&dir.path().join("jobs")), [".lock", "a.json", "b.json"]);
    assert_eq!(store.read("b.json", 10)?.as_deref(), Some(&b"two"[..]));
    assert_eq!(store.read("missing", 10)?, None);
    assert!(store.read("b.json", 2).is_err(), "a file over the limit is refused");
    assert!(store.remove("a.json")? && !store.remove("a.json")?);
    Ok(())
}

#[test]
fn append_adds_lines() -> TestResult {
    let (dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, ".mailboxes")?;
    store.append("lead.jsonl", b"{\"a\": 1}\n")?;
    store.append("lead.jsonl", b"{\"b\": 2}\n")?;
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".mailboxes/lead.jsonl"))?,
        "{\"a\": 1}\n{\"b\": 2}\n"
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_folder_that_leads_outside_the_workspace_is_refused_and_one_inside_is_followed() -> TestResult {
    let (dir, ws) = workspace()?;
    let outside = tempfile::tempdir()?;
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".tasks"))?;
    assert!(matches!(StoreDir::open(&ws, ".tasks"), Err(StoreError::Escapes(name)) if name == ".tasks"));
    assert!(matches!(StoreDir::open_or_create(&ws, ".tasks"), Err(StoreError::Escapes(_))));
    assert!(all_names(outside.path()).is_empty(), "nothing was written outside");

    std::fs::create_dir(dir.path().join("real"))?;
    std::os::unix::fs::symlink("real", dir.path().join("jobs"))?;
    let store = StoreDir::open_or_create(&ws, "jobs")?;
    assert!(store.create_new("x", b"1")?);
    assert_eq!(std::fs::read(dir.path().join("real/x"))?, b"1");
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_file_symlinked_out_of_the_folder_is_not_read_or_written_through() -> TestResult {
    let (dir, ws) = workspace()?;
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret"), "s")?;
    let store = StoreDir::open_or_create(&ws, ".tasks")?;
    std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join(".tasks/task_1.json"))?;
    assert!(store.read("task_1.json", 100).is_err());
    assert!(!store.is_file("task_1.json"));
    Ok(())
}

#[test]
fn the_lock_serialises_read_modify_write_across_threads() -> TestResult {
    let (_dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, "counter")?;
    store.replace("n", b"0")?;
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| -> std::io::Result<()> {
                for _ in 0..25 {
                    let _guard = store.lock()?;
                    let n: u32 = String::from_utf8_lossy(&store.read("n", 16)?.unwrap_or_default())
                        .parse()
                        .unwrap_or(0);
                    store.replace("n", (n + 1).to_string().as_bytes())?;
                }
                Ok(())
            });
        }
    });
    assert_eq!(store.read("n", 16)?.as_deref(), Some(&b"100"[..]), "no increment was lost");
    Ok(())
}

const HOLDER_DIR: &str = "STORE_TEST_LOCK_HOLDER";

/// The other process of [`another_process_holding_the_lock_keeps_this_one_out`]: takes the lock,
/// says `locked`, and holds it until its stdin closes.
#[test]
#[ignore = "the child process of another_process_holding_the_lock_keeps_this_one_out"]
fn lock_holder_child() -> TestResult {
    let Ok(root) = std::env::var(HOLDER_DIR) else { return Ok(()) };
    let store = StoreDir::open_or_create(&Workspace::new(root)?, ".tasks")?;
    let _guard = store.lock()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "locked")?;
    out.flush()?;
    std::io::stdin().lines().for_each(drop);
    Ok(())
}

#[test]
fn another_process_holding_the_lock_keeps_this_one_out() -> TestResult {
    let (dir, ws) = workspace()?;
    let store = StoreDir::open_or_create(&ws, ".tasks")?;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["lock_holder_child", "--exact", "--ignored", "--nocapture", "--quiet"])
        .env(HOLDER_DIR, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the child's stdout")?;
    let said_locked = BufReader::new(stdout).lines().map_while(Result::ok).any(|line| line == "locked");
    assert!(said_locked, "the child never took the lock");
    assert!(store.try_lock(store::LOCK_FILE)?.is_none(), "the lock is held by the other process");
    drop(child.stdin.take());
    child.wait()?;
    // Its holder is gone: the lock is free, waiting or not.
    assert!(store.try_lock(store::LOCK_FILE)?.is_some());
    let _guard = store.lock()?;
    Ok(())
}
