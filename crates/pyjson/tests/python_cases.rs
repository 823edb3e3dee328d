//! `pyjson` against CPython: every line of `cases.jsonl` holds a value, a call (`json.dumps` with
//! its `indent` and `ensure_ascii`, `repr`, or `str.strip`) and the bytes CPython 3.11 wrote for it
//! (`gen_cases.py` made the file once; Python is not run here).

use pyjson::Options;
use serde_json::{Number, Value};

const CASES: &str = include_str!("cases.jsonl");

/// The value a case describes, with each `{"__float__": "repr"}` turned into that very double.
fn build(value: &Value) -> Value {
    match value {
        Value::Object(map) if map.len() == 1 && map.contains_key("__float__") => {
            let text = map["__float__"].as_str().expect("a float's repr is a string");
            let f: f64 = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            Value::Number(Number::from_f64(f).expect("the table holds finite floats only"))
        }
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), build(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(build).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_case_matches_the_bytes_python_wrote() {
    let mut failures = Vec::new();
    let mut count = 0;
    for (i, line) in CASES.lines().enumerate() {
        let case: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        let input = build(&case["input"]);
        let expected = case["expected"].as_str().expect("expected is a string");
        let got = match case["call"].as_str() {
            Some("repr") => pyjson::repr(&input),
            Some("strip") => pyjson::strip(input.as_str().expect("strip takes a string")).to_owned(),
            Some("dumps") => pyjson::dumps_with(
                &input,
                Options {
                    indent: case["indent"].as_u64().map(|n| n as usize),
                    ensure_ascii: case["ensure_ascii"].as_bool().expect("ensure_ascii is a bool"),
                },
            ),
            other => panic!("line {}: unknown call {other:?}", i + 1),
        };
        count += 1;
        if got != expected {
            failures.push(format!(
                "line {}: {} of {}\n  python: {expected:?}\n  ours:   {got:?}",
                i + 1,
                case["call"],
                case["input"]
            ));
        }
    }
    assert!(count >= 200, "the table must hold at least 200 cases, it has {count}");
    assert!(failures.is_empty(), "{} of {count} cases differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_shortcuts_are_the_general_call() {
    let value = serde_json::json!({"a": ["é", 1.5, null]});
    assert_eq!(pyjson::dumps(&value), pyjson::dumps_with(&value, Options::default()));
    assert_eq!(
        pyjson::dumps_indent(&value, 2),
        pyjson::dumps_with(&value, Options { indent: Some(2), ensure_ascii: true })
    );
    assert_eq!(pyjson::repr_list(["a", "it's"]), pyjson::repr(&serde_json::json!(["a", "it's"])));
    assert_eq!(pyjson::repr_str("x"), "'x'");
    #[derive(serde::Serialize)]
    struct Task<'a> {
        id: &'a str,
        owner: Option<&'a str>,
    }
    assert_eq!(
        pyjson::to_string(&Task { id: "task_1", owner: None }, Options::default()).unwrap(),
        r#"{"id": "task_1", "owner": null}"#
    );
}
