//! The journal (course `WorkflowJournal`): `{run_id}.journal.jsonl`, one
//! `{"key": …, "value": …}` line per finished `agent()` call, written as Python's `json.dumps`
//! writes it. A resumed run reads it back and answers every call whose key it holds from it.
//!
//! Reading and writing are split so that a resume checks the whole journal
//! ([`WorkflowJournal::load`]) before anything of the run is rewritten, and opens it for appending
//! only then.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use cap_std::fs::{File, OpenOptions};
use serde_json::{Value, json};

use crate::store::{MAX_JOURNAL_BYTES, RunStore};
use crate::{Result, STORE_DIR, WorkflowInputError};

/// The journal file's name for `run_id`.
pub fn journal_name(run_id: &str) -> String {
    format!("{run_id}.journal.jsonl")
}

/// An open journal: the cache of recorded values, and the file new records are appended to.
#[derive(Debug)]
pub struct WorkflowJournal {
    name: String,
    cache: Mutex<HashMap<String, Value>>,
    file: Mutex<Option<File>>,
}

impl WorkflowJournal {
    /// Reads and checks the journal of `run_id` for a resume, without changing it.
    ///
    /// # Errors
    /// `resume journal not found for {id}`; `invalid resume journal record at line {n}` for the
    /// first line that is not a JSON object with a string `key` and a `value`.
    pub fn load(store: &RunStore, run_id: &str) -> Result<HashMap<String, Value>> {
        let name = journal_name(run_id);
        let bytes = match store.dir().read(&name, MAX_JOURNAL_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(WorkflowInputError::new(format!("resume journal not found for {run_id}")));
            }
            Err(e) => return Err(WorkflowInputError::new(format!("{STORE_DIR}/{name}: {e}"))),
        };
        let mut cache = HashMap::new();
        let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        if text.is_empty() {
            return Ok(cache);
        }
        for (i, line) in text.split(|b| *b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let record = serde_json::from_slice::<Value>(line).ok().and_then(|record| match record {
                Value::Object(mut map) => match (map.remove("key"), map.remove("value")) {
                    (Some(Value::String(key)), Some(value)) => Some((key, value)),
                    _ => None,
                },
                _ => None,
            });
            let Some((key, value)) = record else {
                return Err(WorkflowInputError::new(format!(
                    "invalid resume journal record at line {}",
                    i + 1
                )));
            };
            cache.insert(key, value);
        }
        Ok(cache)
    }

    /// Opens the journal of `run_id`: for a resume, appending after the records in `cache` (from
    /// [`WorkflowJournal::load`]); for a fresh run (`cache` `None`), empty.
    ///
    /// # Errors
    /// The I/O error of opening the file.
    pub fn open(store: &RunStore, run_id: &str, cache: Option<HashMap<String, Value>>) -> Result<Self> {
        let name = journal_name(run_id);
        let mut options = OpenOptions::new();
        match cache {
            Some(_) => options.append(true).create(true),
            None => options.write(true).create(true).truncate(true),
        };
        let file = store
            .dir()
            .dir()
            .open_with(&name, &options)
            .map_err(|e| WorkflowInputError::new(format!("{STORE_DIR}/{name}: {e}")))?;
        Ok(Self { name, cache: Mutex::new(cache.unwrap_or_default()), file: Mutex::new(Some(file)) })
    }

    /// The recorded value of `key`, if any.
    pub fn cached(&self, key: &str) -> Option<Value> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).get(key).cloned()
    }

    /// Appends the record of `key` in one write (a line another record never lands inside).
    ///
    /// # Errors
    /// The I/O error; `the journal is closed` after [`WorkflowJournal::close`].
    pub fn record(&self, key: &str, value: Value) -> Result<()> {
        let mut line = pyjson::dumps(&json!({"key": key, "value": value}));
        line.push('\n');
        {
            let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
            let Some(file) = file.as_mut() else {
                return Err(WorkflowInputError::new(format!(
                    "{STORE_DIR}/{}: the journal is closed",
                    self.name
                )));
            };
            file.write_all(line.as_bytes())
                .map_err(|e| WorkflowInputError::new(format!("{STORE_DIR}/{}: {e}", self.name)))?;
        }
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_owned(), value);
        Ok(())
    }

    /// Syncs and closes the file; a later record fails.
    pub fn close(&self) {
        if let Some(file) = self.file.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = file.sync_all();
        }
    }
}
