//! Property tests: a rejected update never changes state; the parser never panics and reads back what a
//! Python `repr` would print.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use todo::pyliteral;
use todo::todo::TodoManager;
use todo::todo_write::TodoWriteManager;

/// A field value the model might send: absent (`None`), null, blank, a word, a number, or an odd status.
fn field() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        Just(Some(json!(""))),
        Just(Some(json!("   "))),
        "[a-z ]{1,8}".prop_map(|s| Some(json!(s))),
        (0u32..30).prop_map(|n| Some(json!(n))),
        prop::sample::select(vec![
            "pending",
            "PENDING",
            "in_progress",
            "In_Progress",
            "completed",
            "done",
            ""
        ])
        .prop_map(|s| Some(json!(s))),
    ]
}

/// One item: usually an object with some of `keys`, sometimes not an object at all.
fn item(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let object = prop::collection::vec(field(), keys.len()).prop_map(move |fields| {
        let mut map = Map::new();
        for (key, value) in keys.iter().zip(fields) {
            if let Some(v) = value {
                map.insert((*key).to_string(), v);
            }
        }
        Value::Object(map)
    });
    prop_oneof![8 => object, 1 => Just(json!("text")), 1 => Just(json!(7)), 1 => Just(Value::Null)]
}

fn items(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop_oneof![
        10 => prop::collection::vec(item(keys), 0..25).prop_map(Value::Array),
        1 => Just(json!({"not": "a list"})),
        1 => "[a-z\\[\\]{}',: ]{0,20}".prop_map(Value::String),
    ]
}

fn valid_s03() -> TodoManager {
    let mut todo = TodoManager::new();
    todo.update(&json!([
        {"id": "1", "text": "Plan", "status": "completed"},
        {"id": "2", "text": "Build", "status": "in_progress"},
    ]))
    .unwrap();
    todo
}

fn valid_s05() -> TodoWriteManager {
    let mut todo = TodoWriteManager::new();
    todo.update(&json!([{"content": "keep this", "status": "pending"}])).unwrap();
    todo
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn s03_rejected_update_leaves_items_unchanged(update in items(&["id", "text", "status"])) {
        let mut todo = valid_s03();
        let before = todo.items().to_vec();
        if todo.update(&update).is_err() {
            prop_assert_eq!(todo.items(), &before[..]);
        } else {
            prop_assert!(todo.items().len() <= 20);
        }
    }

    #[test]
    fn s05_rejected_update_leaves_items_unchanged(update in items(&["content", "status"])) {
        let mut todo = valid_s05();
        let before = todo.items().to_vec();
        let as_string = Value::String(update.to_string());
        for input in [update, as_string] {
            if todo.update(&input).is_err() {
                prop_assert_eq!(todo.items(), &before[..]);
            } else {
                todo = valid_s05();
            }
        }
    }

    #[test]
    fn parser_never_panics_on_arbitrary_text(src in any::<String>()) {
        let _ = pyliteral::parse(&src);
        let _ = pyliteral::parse_string_input(&src);
    }

    #[test]
    fn parser_never_panics_on_literal_like_text(src in "[\\[\\](){}'\"\\\\:,#\n 0-9a-zA-Z_.+\\-eExuUrRbjN]{0,64}") {
        let _ = pyliteral::parse(&src);
    }

    #[test]
    fn parser_reads_back_a_python_repr(value in json_value()) {
        prop_assert_eq!(pyliteral::parse(&py_repr(&value)).unwrap(), value);
    }
}

/// JSON values whose Python `repr` round-trips: strings, integers, finite floats, bools, null, arrays and
/// string-keyed objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// What Python's `repr` prints for the equivalent value (lists for arrays, some as tuples for variety).
fn py_repr(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) if n.is_f64() => format!("{:?}", n.as_f64().unwrap()),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_str(s),
        Value::Array(items) if items.len() % 2 == 1 => {
            // Odd lengths as tuples: (x,) or (x, y, z)
            let inner: Vec<String> = items.iter().map(py_repr).collect();
            if items.len() == 1 { format!("({},)", inner[0]) } else { format!("({})", inner.join(", ")) }
        }
        Value::Array(items) => format!("[{}]", items.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => {
            let pairs: Vec<String> =
                map.iter().map(|(k, v)| format!("{}: {}", py_str(k), py_repr(v))).collect();
            format!("{{{}}}", pairs.join(", "))
        }
    }
}

/// A single-quoted Python string literal for `s`, escaping as `repr` does.
fn py_str(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
