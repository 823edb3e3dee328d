//! A tool's input is parsed once, into the tool's own argument type, before anything looks at the
//! call: what the permission check and the log line see is what the tool runs on. Each schema sent
//! to the model agrees with the argument type that reads it.

use agent_core::dispatch::Subject;
use serde_json::{Map, Value, json};

use super::tools_support::{Fixture, TestResult, tool_use};

#[tokio::test]
async fn an_input_that_is_not_an_object_is_an_error_and_never_runs() -> TestResult {
    let fx = Fixture::new()?;
    std::fs::write(fx.path("victim"), "kept")?;
    // serde would read an array into a struct by position: `["rm victim"]` as `{"command": …}`.
    let cases = [
        ("bash", json!(["rm victim"])),
        ("write_file", json!(["victim", "overwritten"])),
        ("edit_file", json!(["victim", "kept", "edited"])),
    ];
    for (name, input) in cases {
        let call = fx.map.prepare(&tool_use(name, input.clone()));
        assert_eq!(call.subject, Subject::Nothing, "{name}");
        let out = fx.call(name, input).await;
        assert!(out.is_error, "{name}: {out:?}");
        assert_eq!(out.content, "Error: invalid type: sequence, expected an object", "{name}");
    }
    assert_eq!(std::fs::read_to_string(fx.path("victim"))?, "kept");
    Ok(())
}

#[test]
fn each_tool_says_what_its_input_is_about() -> TestResult {
    let fx = Fixture::new()?;
    let subject = |name: &str, input: Value| fx.map.prepare(&tool_use(name, input)).subject;
    assert_eq!(subject("bash", json!({"command": "ls"})), Subject::Command("ls".into()));
    let input = json!({"path": "a.txt", "content": "", "old_text": "x", "new_text": "y"});
    assert_eq!(subject("read_file", input.clone()), Subject::Path("a.txt".into()));
    for name in ["write_file", "edit_file"] {
        assert_eq!(subject(name, input.clone()), Subject::WrittenPath("a.txt".into()), "{name}");
    }
    assert_eq!(
        subject("glob", json!({"pattern": "../up/**/*.rs"})),
        Subject::PathPattern { pattern: "../up/**/*.rs".into(), base: "../up".into() }
    );
    assert_eq!(subject("nope", json!({"command": "ls"})), Subject::Nothing);
    Ok(())
}

/// A sample value of a JSON-schema `type`, and one of another type.
fn sample(schema: &Value) -> (Value, Value) {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => (json!(3), json!("three")),
        Some("string") => (json!("x"), json!(3)),
        other => panic!("a schema type this test does not know: {other:?}"),
    }
}

#[test]
fn every_schema_agrees_with_the_argument_type_that_reads_it() -> TestResult {
    let fx = Fixture::new()?;
    for spec in fx.map.specs().iter() {
        let name = spec.name.as_str();
        let properties = spec.input_schema["properties"].as_object().cloned().unwrap_or_default();
        let required: Vec<&str> = spec.input_schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let full: Map<String, Value> = properties.iter().map(|(k, s)| (k.clone(), sample(s).0)).collect();
        let rejected = |input: Map<String, Value>| {
            fx.map.prepare(&tool_use(name, Value::Object(input))).rejected().map(|o| o.content.clone())
        };
        // Every property the schema names, with its type, is read.
        assert_eq!(rejected(full.clone()), None, "{name}: a full input");
        for (key, schema) in &properties {
            let mut without = full.clone();
            without.remove(key);
            let expected = required.contains(&key.as_str()).then(|| format!("Error: missing field `{key}`"));
            // A required property is required by the arguments too; an optional one is not.
            assert_eq!(rejected(without), expected, "{name}: without {key}");
            // The argument has the schema's type.
            let mut mistyped = full.clone();
            mistyped.insert(key.clone(), sample(schema).1);
            let error = rejected(mistyped).unwrap_or_default();
            assert!(
                error.starts_with(&format!("Error: {key}: invalid type")),
                "{name}: {key} mistyped: {error}"
            );
        }
        for key in &required {
            assert!(properties.contains_key(*key), "{name}: required {key} is not a property");
        }
    }
    Ok(())
}
