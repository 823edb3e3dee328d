//! `.scheduled_tasks.json`: where the durable jobs are kept, and the bytes they are kept as.
//!
//! The course writes `json.dumps(payload, indent=2)` to a temporary file beside it and
//! `os.replace`s it, so a reader sees the old list or the new one, never half of one. Ours does
//! the same and also flushes the file and the folder to disk before and after the rename, so a
//! power cut cannot leave an empty file where the list was.
//!
//! Two seams keep the rest of the crate apart from how the bytes are made and written:
//! [`encode`] (the list as Python's `json.dumps` writes it) and [`JobFile`] (read the file,
//! replace it atomically), which tests implement to make a save fail.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::dialect::Dialect;

use crate::job::CronJob;

/// The file's name, in the workspace (course `DURABLE_PATH`).
pub const DURABLE_NAME: &str = ".scheduled_tasks.json";

/// Where the durable jobs are read from and saved to.
pub trait JobFile: Send + Sync {
    /// The name the load messages give (`.scheduled_tasks.json`).
    fn name(&self) -> &str;

    /// The file's bytes; `None` when there is no file.
    ///
    /// # Errors
    /// Any other I/O error (unreadable, a folder in its place).
    fn read(&self) -> io::Result<Option<Vec<u8>>>;

    /// Replaces the file with `bytes` atomically: afterwards it holds the old bytes or these,
    /// never a mixture, even if the process dies midway.
    ///
    /// # Errors
    /// The I/O error that stopped the save; the old file is then unchanged.
    fn replace(&self, bytes: &[u8]) -> io::Result<()>;
}

/// `.scheduled_tasks.json` in a folder, replaced through a temporary file in the same folder.
#[derive(Debug, Clone)]
pub struct DurableFile {
    path: PathBuf,
}

impl DurableFile {
    /// The file [`DURABLE_NAME`] in `workdir`.
    pub fn in_workdir(workdir: &Path) -> Self {
        Self { path: workdir.join(DURABLE_NAME) }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists, refusing anything but a plain file (ours; the course opens
    /// whatever is there). A model's command can put a link in its place, which would make the
    /// scheduler read the file it names (or replace the link), or a FIFO, on which reading blocks
    /// for ever.
    ///
    /// # Errors
    /// A link or something that is not a plain file, with the text of
    /// [`HarnessPathError`](agent_core::workspace::HarnessPathError) (what it is, what to do);
    /// any other I/O error of looking.
    fn plain_file(&self) -> io::Result<bool> {
        use agent_core::workspace::HarnessPathError;
        let name = DURABLE_NAME.to_owned();
        match fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = fs::read_link(&self.path).map(|t| t.display().to_string()).unwrap_or_default();
                Err(HarnessPathError::Link { name, target }.into())
            }
            Ok(meta) if !meta.is_file() => {
                Err(HarnessPathError::Unexpected { name, expected: "plain file" }.into())
            }
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl JobFile for DurableFile {
    fn name(&self) -> &str {
        self.path.file_name().and_then(|n| n.to_str()).unwrap_or(DURABLE_NAME)
    }

    fn read(&self) -> io::Result<Option<Vec<u8>>> {
        if !self.plain_file()? {
            return Ok(None);
        }
        match fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn replace(&self, bytes: &[u8]) -> io::Result<()> {
        self.plain_file()?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // The temporary file is removed when dropped unrenamed (the course's `finally: unlink`).
        let mut temp =
            tempfile::Builder::new().prefix(&format!("{}.", DURABLE_NAME)).suffix(".tmp").tempfile_in(dir)?;
        temp.write_all(bytes)?;
        temp.as_file().sync_all()?;
        temp.persist(&self.path).map_err(|e| e.error)?;
        sync_dir(dir)
    }
}

/// Flushes the folder's entry for the renamed file to disk (POSIX: the rename is durable only
/// once the directory is synced).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// The saved list: `jobs` as Python's `json.dumps([asdict(job) …], indent=2)` writes it, no
/// newline at the end.
pub fn encode(jobs: &[&CronJob]) -> String {
    encode_in(jobs, Dialect::S12)
}

/// [`encode`] in `dialect`'s schema: the course's s15 writes no `last_fired`.
pub fn encode_in(jobs: &[&CronJob], dialect: Dialect) -> String {
    let item = |job: &&CronJob| {
        let mut value = job.to_json();
        if !dialect.saves_last_fired()
            && let Some(fields) = value.as_object_mut()
        {
            fields.remove("last_fired");
        }
        value
    };
    python_json(&Value::Array(jobs.iter().map(item).collect()))
}

/// Python's `json.dumps(value, indent=2)`, byte for byte (`ensure_ascii` escapes included), so
/// a learner who runs the course's s12 in the same folder finds the same file.
fn python_json(value: &Value) -> String {
    pyjson::dumps_indent(value, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_written_as_python_writes_it() {
        let job = CronJob {
            id: "cron_deadbeef".into(),
            cron: "0 9 * * *".into(),
            prompt: "run tests".into(),
            recurring: true,
            durable: true,
            pending_delivery: false,
            last_fired: None,
        };
        // What CPython 3.11 wrote for the same job (json.dumps([asdict(job)], indent=2)).
        assert_eq!(
            encode(&[&job]),
            "[\n  {\n    \"id\": \"cron_deadbeef\",\n    \"cron\": \"0 9 * * *\",\n    \"prompt\": \"run tests\",\n    \"recurring\": true,\n    \"durable\": true,\n    \"pending_delivery\": false,\n    \"last_fired\": null\n  }\n]"
        );
        assert_eq!(encode(&[]), "[]");
    }

    #[test]
    fn a_non_ascii_prompt_is_escaped_as_python_escapes_it() {
        let job = CronJob {
            id: "cron_deadbeef".into(),
            cron: "*/5 * * * *".into(),
            prompt: "检查 📦".into(),
            recurring: false,
            durable: true,
            pending_delivery: false,
            last_fired: None,
        };
        // json.dumps("检查 📦") in CPython 3.11: ensure_ascii, the astral character as a pair.
        assert!(encode(&[&job]).contains(r#""prompt": "\u68c0\u67e5 \ud83d\udce6""#), "{}", encode(&[&job]));
    }

    #[test]
    fn replace_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = DurableFile::in_workdir(dir.path());
        assert_eq!(file.read().unwrap(), None);
        file.replace(b"[]").unwrap();
        file.replace(b"[1]").unwrap();
        assert_eq!(file.read().unwrap().as_deref(), Some(&b"[1]"[..]));
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [DURABLE_NAME]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_or_a_fifo_in_its_place_is_refused_and_left_alone() -> Result<(), Box<dyn std::error::Error>> {
        let workdir = tempfile::tempdir()?;
        fs::write(workdir.path().join("secret.txt"), "[]")?;
        std::os::unix::fs::symlink("secret.txt", workdir.path().join(DURABLE_NAME))?;
        let file = DurableFile::in_workdir(workdir.path());
        let read = file.read().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            read.starts_with(".scheduled_tasks.json in the workspace is a symbolic link (to secret.txt)"),
            "{read}"
        );
        assert!(file.replace(b"[1]").is_err(), "a save through the link is refused");
        assert!(fs::symlink_metadata(file.path())?.file_type().is_symlink(), "the link is left as it was");
        assert_eq!(fs::read_to_string(workdir.path().join("secret.txt"))?, "[]");

        // A FIFO would block the load for ever: it is refused without opening it.
        fs::remove_file(file.path())?;
        let made = std::process::Command::new("mkfifo").arg(file.path()).status()?;
        assert!(made.success());
        let read = file.read().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(read.contains("is not a plain file"), "{read}");
        Ok(())
    }
}
