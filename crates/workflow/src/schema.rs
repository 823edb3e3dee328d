//! The course's `SimpleJsonSchema`: the small subset of JSON Schema that `agent({schema})` checks
//! a model's answer against (`enum`, `object` with `required` and `properties`, `array` with
//! `items`, `string`, `boolean`, `number`/`integer`; any other type passes), with the course's
//! messages, and Python's `==` and truthiness, which the checks and the sample workflow use.

use serde_json::Value;

/// A schema to check values against (course `SimpleJsonSchema`).
#[derive(Debug, Clone, Copy)]
pub struct SimpleJsonSchema<'a>(pub &'a Value);

impl SimpleJsonSchema<'_> {
    /// Checks `value`.
    ///
    /// # Errors
    /// The course's message for the first mismatch: `expected one of ['high', 'medium', 'low']`,
    /// `expected object`, `missing required key 'k'`, `findings: [0]: severity: …`,
    /// `expected array`, `expected string`, `expected boolean`, `expected number`.
    pub fn validate(&self, value: &Value) -> Result<(), String> {
        validate(value, self.0)
    }
}

fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    if let Some(allowed) = schema.get("enum") {
        let listed = match allowed {
            Value::Array(items) => items.iter().any(|item| py_eq(item, value)),
            other => py_eq(other, value),
        };
        if !listed {
            return Err(format!("expected one of {}", pyjson::repr(allowed)));
        }
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let Value::Object(map) = value else { return Err("expected object".to_owned()) };
            for key in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
                let Some(key) = key.as_str() else { continue };
                if !map.contains_key(key) {
                    return Err(format!("missing required key '{key}'"));
                }
            }
            for (key, sub) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                if let Some(item) = map.get(key) {
                    validate(item, sub).map_err(|e| format!("{key}: {e}"))?;
                }
            }
            Ok(())
        }
        Some("array") => {
            let Value::Array(items) = value else { return Err("expected array".to_owned()) };
            if let Some(sub) = schema.get("items").filter(|s| py_truthy(s)) {
                for (i, item) in items.iter().enumerate() {
                    validate(item, sub).map_err(|e| format!("[{i}]: {e}"))?;
                }
            }
            Ok(())
        }
        Some("string") if !value.is_string() => Err("expected string".to_owned()),
        Some("boolean") if !value.is_boolean() => Err("expected boolean".to_owned()),
        Some("number" | "integer") if !value.is_number() => Err("expected number".to_owned()),
        _ => Ok(()),
    }
}

/// Python's `a == b` on JSON values: `1 == 1.0`, `True == 1`, `False == 0`; objects equal
/// whatever their keys' order. The check of a resume's `args` and of `enum` use it.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (as_number(a), as_number(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// A number or a bool as Python compares it: exact for integers, as a float otherwise.
#[derive(PartialEq)]
enum Num {
    Int(i128),
    Float(f64),
}

fn as_number(value: &Value) -> Option<Num> {
    match value {
        Value::Bool(b) => Some(Num::Int(i128::from(*b))),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Some(Num::Int(i128::from(i)))
            } else if let Some(u) = n.as_u64() {
                Some(Num::Int(i128::from(u)))
            } else {
                n.as_f64().map(Num::Float)
            }
        }
        _ => None,
    }
    .map(|n| match n {
        // An integral float equals the integer: compare both as integers then.
        Num::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => Num::Int(f as i128),
        n => n,
    })
}

/// Python's truthiness of a JSON value: `null`, `false`, `0`, `""`, `[]` and `{}` are false.
pub fn py_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_are_the_courses() {
        let findings = crate::review::findings_schema();
        let check = |v: Value| SimpleJsonSchema(&findings).validate(&v).err().unwrap_or_default();
        assert_eq!(check(json!([])), "expected object");
        assert_eq!(check(json!({})), "missing required key 'findings'");
        assert_eq!(check(json!({"findings": 3})), "findings: expected array");
        assert_eq!(
            check(json!({"findings": [{"title": "t"}]})),
            "findings: [0]: missing required key 'severity'"
        );
        assert_eq!(
            check(json!({"findings": [{"title": "t", "severity": "warning"}]})),
            "findings: [0]: severity: expected one of ['high', 'medium', 'low']"
        );
        assert_eq!(
            check(json!({"findings": [{"title": 1, "severity": "low"}]})),
            "findings: [0]: title: expected string"
        );
        let verdict = crate::review::verdict_schema();
        let err = SimpleJsonSchema(&verdict).validate(&json!({"isReal": 1, "reason": "r"})).err();
        assert_eq!(err.as_deref(), Some("isReal: expected boolean"));
        let number = json!({"type": "number"});
        assert_eq!(
            SimpleJsonSchema(&number).validate(&json!(true)).err().as_deref(),
            Some("expected number")
        );
        assert!(SimpleJsonSchema(&number).validate(&json!(2.5)).is_ok());
        assert!(SimpleJsonSchema(&json!({"type": "whatever"})).validate(&json!(null)).is_ok());
    }

    #[test]
    fn equality_is_pythons() {
        assert!(py_eq(&json!({"a": 1, "b": [true]}), &json!({"b": [1.0], "a": 1.0})));
        assert!(!py_eq(&json!({"budget": null}), &json!({"budget": 1})));
        assert!(!py_eq(&json!("1"), &json!(1)));
        assert!(py_truthy(&json!({"x": 0})) && !py_truthy(&json!(0.0)));
    }
}
