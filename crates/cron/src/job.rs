//! A cron job as the course keeps it (`CronJob`) and as `.scheduled_tasks.json` holds it.

use serde_json::{Map, Value, json};

use crate::expr::CronExpr;

/// One scheduled prompt (course s12 `CronJob`). Its JSON form, in `.scheduled_tasks.json`, has
/// these fields in this order (Python's `dataclasses.asdict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronJob {
    /// `cron_` and 8 lowercase hex digits (`secrets.token_hex(4)`).
    pub id: String,
    /// The 5-field expression, as the model wrote it.
    pub cron: String,
    /// What the scheduled turn sends, after `[Scheduled] `.
    pub prompt: String,
    /// `true`: fires at every matching minute; `false`: fires once, then is removed.
    pub recurring: bool,
    /// `true`: kept in `.scheduled_tasks.json` across restarts; `false`: this session only.
    pub durable: bool,
    /// Fired and queued, not yet acknowledged (the model has not accepted a request carrying it):
    /// a job saved with `true` is delivered again after a restart.
    pub pending_delivery: bool,
    /// The local minute it last fired, `YYYY-MM-DD HH:MM` (so one minute fires it once).
    pub last_fired: Option<String>,
}

/// The field names of the saved form, in order.
const KEYS: [&str; 7] = ["id", "cron", "prompt", "recurring", "durable", "pending_delivery", "last_fired"];

impl CronJob {
    /// The saved form: `{"id": …, "cron": …, "prompt": …, "recurring": …, "durable": …,
    /// "pending_delivery": …, "last_fired": …}` in that order.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "cron": self.cron,
            "prompt": self.prompt,
            "recurring": self.recurring,
            "durable": self.durable,
            "pending_delivery": self.pending_delivery,
            "last_fired": self.last_fired,
        })
    }

    /// A job from one item of `.scheduled_tasks.json`, checked as the course's
    /// `load_durable_jobs` checks it: the fields `CronJob(**item)` takes (the last two optional),
    /// a valid cron expression, an id starting `cron_`, a prompt that is not blank. The course
    /// does not check the fields' types (a number for `cron` crashes it); here a wrong type is one
    /// more reason to skip the item.
    ///
    /// # Errors
    /// Why the item was skipped, in the course's words where it has them
    /// (`CronJob.__init__() got an unexpected keyword argument 'x'`, `invalid job ID`,
    /// `prompt cannot be empty`, `minute: Value 61 is outside [0-59]`).
    pub fn from_saved(item: &Value) -> Result<(CronJob, CronExpr), String> {
        let Value::Object(map) = item else {
            return Err(format!("CronJob() argument after ** must be a mapping, not {}", py_type(item)));
        };
        if let Some(unknown) = map.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(format!("CronJob.__init__() got an unexpected keyword argument '{unknown}'"));
        }
        let missing: Vec<&str> = KEYS[..5].iter().copied().filter(|k| !map.contains_key(*k)).collect();
        if !missing.is_empty() {
            return Err(missing_arguments(&missing));
        }
        let job = CronJob {
            id: string(map, "id")?,
            cron: string(map, "cron")?,
            prompt: string(map, "prompt")?,
            recurring: boolean(map, "recurring")?,
            durable: boolean(map, "durable")?,
            pending_delivery: match map.get("pending_delivery") {
                None => false,
                Some(_) => boolean(map, "pending_delivery")?,
            },
            last_fired: match map.get("last_fired") {
                None | Some(Value::Null) => None,
                Some(_) => Some(string(map, "last_fired")?),
            },
        };
        let expr = CronExpr::parse(&job.cron).map_err(|e| e.to_string())?;
        if !job.id.starts_with("cron_") {
            return Err("invalid job ID".into());
        }
        if job.prompt.trim().is_empty() {
            return Err("prompt cannot be empty".into());
        }
        Ok((job, expr))
    }
}

/// Python's `missing N required positional argument(s): 'a', 'b' and 'c'`.
fn missing_arguments(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    let list = match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
        [] => String::new(),
    };
    let plural = if names.len() == 1 { "argument" } else { "arguments" };
    format!("CronJob.__init__() missing {} required positional {plural}: {list}", names.len())
}

fn string(map: &Map<String, Value>, key: &str) -> Result<String, String> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(format!("{key} must be a string, not {}", other.map_or("nothing", py_type))),
    }
}

fn boolean(map: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match map.get(key) {
        Some(Value::Bool(b)) => Ok(*b),
        other => Err(format!("{key} must be true or false, not {}", other.map_or("nothing", py_type))),
    }
}

/// The name Python gives the type `json.loads` makes of `value`.
fn py_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(extra: Value) -> Value {
        let mut base =
            json!({"id": "cron_1", "cron": "* * * * *", "prompt": "p", "recurring": true, "durable": true});
        if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
            b.extend(e);
        }
        base
    }

    #[test]
    fn saved_items_are_checked_in_the_courses_order() {
        let ok = CronJob::from_saved(&item(json!({}))).unwrap().0;
        assert_eq!((ok.pending_delivery, ok.last_fired), (false, None));
        let skip = |v: Value| CronJob::from_saved(&v).unwrap_err();
        assert_eq!(skip(item(json!({"x": 1}))), "CronJob.__init__() got an unexpected keyword argument 'x'");
        assert_eq!(
            skip(json!({"id": "cron_1", "recurring": true, "durable": true})),
            "CronJob.__init__() missing 2 required positional arguments: 'cron' and 'prompt'"
        );
        assert_eq!(
            skip(json!({"durable": true})),
            "CronJob.__init__() missing 4 required positional arguments: 'id', 'cron', 'prompt', and 'recurring'"
        );
        assert_eq!(skip(json!("job")), "CronJob() argument after ** must be a mapping, not str");
        assert_eq!(skip(item(json!({"cron": "61 * * * *"}))), "minute: Value 61 is outside [0-59]");
        assert_eq!(skip(item(json!({"id": "job_1"}))), "invalid job ID");
        assert_eq!(skip(item(json!({"prompt": "  "}))), "prompt cannot be empty");
        assert_eq!(skip(item(json!({"cron": 5}))), "cron must be a string, not int");
        let round =
            CronJob::from_saved(&item(json!({"pending_delivery": true, "last_fired": "2026-08-10 09:00"})))
                .unwrap()
                .0;
        assert_eq!(CronJob::from_saved(&round.to_json()).unwrap().0, round);
    }
}
