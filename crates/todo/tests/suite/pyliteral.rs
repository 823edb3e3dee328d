//! The Python-literal parser: what it accepts, what it refuses, and where it says it failed.

use serde_json::json;
use todo::pyliteral::{MAX_DEPTH, ParseError, parse, parse_string_input};

fn err(src: &str) -> ParseError {
    parse(src).expect_err(src)
}

#[test]
fn json_array_string_is_read_as_json_first() {
    let v = parse_string_input(r#"[{"content": "a", "status": "pending"}, 1.5, null, true]"#).unwrap();
    assert_eq!(v, json!([{"content": "a", "status": "pending"}, 1.5, null, true]));
}

#[test]
fn python_repr_with_single_quotes_constants_tuple_nested_quotes_and_trailing_comma() {
    let src =
        r#"[{'content': "it's done", 'status': 'completed', 'ok': True, 'x': None}, ('say "hi"', False), ]"#;
    let v = parse_string_input(src).unwrap();
    assert_eq!(
        v,
        json!([{"content": "it's done", "status": "completed", "ok": true, "x": null}, ["say \"hi\"", false]])
    );
}

#[test]
fn tuples_and_parenthesised_values() {
    assert_eq!(parse("()").unwrap(), json!([]));
    assert_eq!(parse("(1,)").unwrap(), json!([1]));
    assert_eq!(parse("(1, 2, 3)").unwrap(), json!([1, 2, 3]));
    assert_eq!(parse("('a')").unwrap(), json!("a"));
    assert_eq!(parse("'a', 'b',").unwrap(), json!(["a", "b"]));
    assert_eq!(
        parse("{'content': 'a'}, {'content': 'b'}").unwrap(),
        json!([{"content": "a"}, {"content": "b"}])
    );
    assert!(err("1, 2 3").message.contains("expected ',' or the end of the input"));
}

#[test]
fn triple_quoted_strings_span_lines_and_hold_quotes() {
    assert_eq!(parse("'''one\ntwo 'quoted' ''x'''").unwrap(), json!("one\ntwo 'quoted' ''x"));
    assert_eq!(parse("\"\"\"a \"b\" c\"\"\"").unwrap(), json!("a \"b\" c"));
    assert_eq!(parse("'''a\r\nb'''").unwrap(), json!("a\nb"));
}

#[test]
fn escapes_including_unicode() {
    let src = r#"'\n\t\r\\\'\"\x41\u00e9\U0001F600\0\101\a\d\
end'"#;
    assert_eq!(parse(src).unwrap(), json!("\n\t\r\\'\"Aé😀\0A\x07\\dend"));
    assert_eq!(parse(r"'\ud83d\ude00'").unwrap(), json!("😀"));
}

#[test]
fn bad_escapes_are_errors_with_position() {
    assert_eq!(err(r"'\x4'").to_string(), r"line 1, column 2: truncated \xXX escape");
    assert_eq!(err(r"'ab\u12'").column, 4);
    assert!(err(r"'\ud83d'").message.contains("lone surrogate"));
    assert!(err(r"'\N{BULLET}'").message.contains("not supported"));
}

#[test]
fn raw_and_unicode_prefixes() {
    assert_eq!(parse(r"r'C:\new\'x'").unwrap(), json!(r"C:\new\'x"));
    assert_eq!(parse(r"u'é'").unwrap(), json!("é"));
    assert!(err("b'x'").message.contains("bytes"));
    assert!(err("f'{x}'").message.contains("f-strings"));
}

#[test]
fn adjacent_strings_are_concatenated() {
    assert_eq!(parse("['a' \"b\"\n  r'\\c']").unwrap(), json!(["ab\\c"]));
}

#[test]
fn numbers_with_sign_separators_and_exponents() {
    assert_eq!(
        parse("[-1, +2, 1_000, 0x1f, 1.5e3, -.5, 7.]").unwrap(),
        json!([-1, 2, 1000, 31, 1500.0, -0.5, 7.0])
    );
}

#[test]
fn inf_and_nan_are_not_literals() {
    assert_eq!(err("inf").to_string(), "line 1, column 1: unexpected name 'inf' (only literals are allowed)");
    assert_eq!(err("-inf").column, 2);
    assert!(err("nan").message.contains("'nan'"));
    assert!(err("1e999").message.contains("out of range"));
}

#[test]
fn dict_keys_convert_like_json_dumps() {
    assert_eq!(
        parse("{2: 'a', True: 'b', None: 'c', 'k': 'd'}").unwrap(),
        json!({"2": "a", "true": "b", "null": "c", "k": "d"})
    );
    assert!(err("{(1, 2): 'a'}").message.contains("dict keys"));
}

#[test]
fn whitespace_newlines_comments_and_trailing_commas() {
    let src = "# the plan\n[\n  {'content': 'a',  # first\n   'status': 'pending',},\n  \\\n]\n# end\n";
    assert_eq!(parse(src).unwrap(), json!([{"content": "a", "status": "pending"}]));
}

#[test]
fn name_is_an_error_with_position() {
    let e = err("__import__('pathlib').Path('/tmp/x').write_text('x')");
    assert_eq!(e.to_string(), "line 1, column 1: unexpected name '__import__' (only literals are allowed)");
    let e = err("[1,\n  os]");
    assert_eq!((e.line, e.column), (2, 3));
    assert!(e.message.contains("name 'os'"));
}

#[test]
fn call_is_an_error_with_position() {
    let e = err("[1](2)");
    assert_eq!((e.line, e.column), (1, 4));
    assert!(e.message.contains("calls are not allowed"), "{e}");
}

#[test]
fn attribute_access_is_an_error_with_position() {
    let e = err("'a, b'.split(',')");
    assert_eq!(
        e.to_string(),
        "line 1, column 7: unexpected '.', expected the end of the input (attribute access is not allowed)"
    );
}

#[test]
fn operators_subscripts_and_sets_are_errors() {
    assert!(err("1 + 2").message.contains("operators are not allowed"));
    assert!(err("[1][0]").message.contains("subscripts are not allowed"));
    assert!(err("{1, 2}").message.contains("set literals"));
    assert!(err("--1").message.contains("expected a number after the sign"));
    assert!(err("[*a]").message.contains("operators"));
    assert!(err("...").message.contains("'.'"));
    assert!(err("1j").message.contains("complex"));
}

#[test]
fn unterminated_input_reports_where() {
    assert_eq!(err("[1, 2").to_string(), "line 1, column 6: unexpected end of input, expected ',' or ']'");
    assert_eq!(err("['abc").to_string(), "line 1, column 2: unterminated string");
    assert!(err("'a\nb'").message.starts_with("unterminated string"));
    assert!(err("").message.contains("end of input"));
}

#[test]
fn nesting_bomb_is_an_error_not_a_crash() {
    let e = err(&"[".repeat(100_000));
    assert!(e.message.contains("nesting is deeper than 64 levels"), "{e}");
    assert_eq!(e.column, MAX_DEPTH + 1);
    let deep_ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(&deep_ok).is_ok());
    assert!(parse_string_input(&"(".repeat(100_000)).is_err());
    assert!(parse_string_input(&"{'a':".repeat(100_000)).is_err());
}

#[test]
fn ten_megabyte_input_is_an_error_quickly() {
    let huge = format!("'{}'", "x".repeat(10 * 1024 * 1024));
    let start = std::time::Instant::now();
    let e = parse(&huge).unwrap_err();
    assert!(e.message.contains("the limit is 1048576 bytes"), "{e}");
    assert!(parse_string_input(&huge).is_err());
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
}

/// The differences to Python's `ast.literal_eval` (then `json.dumps`) that issue 14 measured, each
/// with its minimal input.
#[test]
fn a_comment_ends_at_a_lone_carriage_return() {
    assert_eq!(parse("[1, # note\r 2]").unwrap(), json!([1, 2]));
    assert_eq!(parse("[1, # note\r\n 2]").unwrap(), json!([1, 2]));
}

#[test]
fn a_raw_string_reads_a_carriage_return_after_a_backslash_as_a_newline() {
    assert_eq!(parse("r'''a\\\r\nb'''").unwrap(), json!("a\\\nb"));
    assert_eq!(parse("r'''a\\\rb'''").unwrap(), json!("a\\\nb"));
}

#[test]
fn float_dict_keys_are_spelled_as_python_spells_them() {
    let rows = [
        ("1e-05", "1e-05"),
        ("0.0001", "0.0001"),
        ("1.0", "1.0"),
        ("100.0", "100.0"),
        ("123.456", "123.456"),
        ("1e16", "1e+16"),
        ("1e15", "1000000000000000.0"),
        ("1.5e300", "1.5e+300"),
        ("-2.5e-7", "-2.5e-07"),
        ("0.1", "0.1"),
        ("-0.0", "-0.0"),
    ];
    for (literal, key) in rows {
        assert_eq!(parse(&format!("{{{literal}: 0}}")).unwrap(), json!({ key: 0 }), "{literal}");
    }
}

#[test]
fn keys_python_treats_as_equal_are_one_key() {
    assert_eq!(parse("{1: 'a', True: 'b', 1.0: 'c'}").unwrap(), json!({"1": "c"}));
    assert_eq!(parse("{True: 'a', 1: 'b'}").unwrap(), json!({"true": "b"}));
    assert_eq!(parse("{0: 'a', False: 'b', 0.0: 'c', -0.0: 'd'}").unwrap(), json!({"0": "d"}));
    assert_eq!(parse("{1.5: 'a', 1: 'b'}").unwrap(), json!({"1.5": "a", "1": "b"}));
}

#[test]
fn both_paths_read_numbers_alike() {
    // Ints beyond 64 bits: an error on the JSON path as on the literal path, never a lossy float.
    assert!(parse_string_input("[18446744073709551616]").is_err());
    assert!(parse_string_input("[-9223372036854775809]").is_err());
    assert!(parse("[18446744073709551616]").is_err());
    assert_eq!(
        parse_string_input("[18446744073709551615, \"99999999999999999999\"]").unwrap()[0],
        json!(u64::MAX)
    );
    // Floats: the JSON path rounds as the literal path does (17 significant digits, 20,000 values).
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..20_000 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let f = f64::from_bits(x);
        if !f.is_finite() {
            continue;
        }
        let text = format!("[{f:.16e}]");
        assert_eq!(parse_string_input(&text).unwrap(), parse(&text).unwrap(), "{text}");
    }
}
