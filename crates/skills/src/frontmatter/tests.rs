use std::time::{Duration, Instant};

use super::*;

fn yaml_of(text: &str) -> Option<&str> {
    split_front_matter(text).yaml
}

#[test]
fn the_first_line_and_a_later_line_exactly_dashes_delimit_the_front_matter() {
    let text = "---\nname: a\n---\n# Body\n";
    assert_eq!(split_front_matter(text), Split { yaml: Some("name: a\n"), body: "# Body\n" });
    // Nothing after the closing line: an empty body.
    assert_eq!(split_front_matter("---\nname: a\n---"), Split { yaml: Some("name: a\n"), body: "" });
    assert_eq!(split_front_matter("---\n---\n"), Split { yaml: Some(""), body: "" });
}

#[test]
fn without_an_opening_or_a_closing_line_there_is_no_front_matter() {
    for text in [
        "name: a\n---\nbody",       // the first line is not ---
        " ---\nname: a\n---\nbody", // not exactly ---
        "--- \nname: a\n---\nbody", // trailing space
        "----\nname: a\n---\nbody",
        "---\nname: a\nbody",        // no closing line
        "---\nname: a\n --- \nbody", // the closing line is not exactly ---
        "---",                       // one line
        "",
    ] {
        assert_eq!(split_front_matter(text), Split { yaml: None, body: text }, "{text:?}");
    }
}

#[test]
fn a_dashes_line_inside_a_block_scalar_is_content_not_the_end() {
    let text = "---\nname: a\ndescription: |\n  first\n  ---\n  second\n---\nbody\n";
    let yaml = yaml_of(text);
    assert_eq!(yaml, Some("name: a\ndescription: |\n  first\n  ---\n  second\n"));
    let meta = parse_yaml(yaml.unwrap_or_default()).unwrap();
    assert_eq!(meta.description.as_deref(), Some("first\n---\nsecond\n"));
    assert_eq!(split_front_matter(text).body, "body\n");
}

#[test]
fn crlf_line_ends_are_accepted_on_the_delimiters_and_in_the_yaml() {
    let text = "---\r\nname: crlf\r\ndescription: |\r\n  one\r\n  two\r\n---\r\nBody line\r\n";
    let split = split_front_matter(text);
    assert_eq!(split.body, "Body line\r\n");
    let meta = parse_yaml(split.yaml.unwrap_or_default()).unwrap();
    assert_eq!(meta.name.as_deref(), Some("crlf"));
    assert_eq!(meta.description.map(|d| collapse_whitespace(&d)).as_deref(), Some("one two"));
}

#[test]
fn a_multi_line_block_description_collapses_to_one_line() {
    let yaml =
        "name: code-review\ndescription: |\n  Review code for bugs,\n  regressions, and missing tests.\n";
    let meta = parse_yaml(yaml).unwrap();
    assert_eq!(
        collapse_whitespace(meta.description.as_deref().unwrap_or_default()),
        "Review code for bugs, regressions, and missing tests."
    );
}

#[test]
fn only_string_values_count_and_anything_else_falls_back() {
    let meta = parse_yaml("name: [bad]\ndescription: {a: 1}\n").unwrap();
    assert_eq!(meta, FrontMatter::default());
    for yaml in ["name: 123", "name: true", "name: ~", "name: 1.5", "name:", "name: null"] {
        assert_eq!(parse_yaml(yaml).unwrap().name, None, "{yaml}");
    }
    // Quoted, they are strings.
    assert_eq!(parse_yaml("name: '123'").unwrap().name.as_deref(), Some("123"));
    assert_eq!(parse_yaml("name: \"true\"").unwrap().name.as_deref(), Some("true"));
    // The last of a repeated key counts, as in PyYAML.
    assert_eq!(parse_yaml("name: a\nname: [b]\n").unwrap().name, None);
    assert_eq!(parse_yaml("name: [a]\nname: b\n").unwrap().name.as_deref(), Some("b"));
    // Nested values and complex keys do not confuse the key/value pairing.
    let yaml = "meta: {name: inner}\n? [complex]\n: x\ntags: [a, b]\nname: outer\n";
    assert_eq!(parse_yaml(yaml).unwrap().name.as_deref(), Some("outer"));
}

#[test]
fn a_front_matter_that_is_not_a_mapping_counts_as_empty() {
    for yaml in ["just text", "- a\n- b\n", "", "# only a comment\n", "42"] {
        assert_eq!(parse_yaml(yaml), Ok(FrontMatter::default()), "{yaml:?}");
    }
}

#[test]
fn utf8_is_kept() {
    let meta = parse_yaml("name: 中文\ndescription: 处理中文内容\n").unwrap();
    assert_eq!(meta.name.as_deref(), Some("中文"));
    assert_eq!(meta.description.as_deref(), Some("处理中文内容"));
}

#[test]
fn invalid_yaml_is_an_error_with_the_manifests_line() {
    let err = parse_yaml("name: a\ndescription: [unclosed\n").unwrap_err();
    assert!(matches!(err, YamlError::Syntax { .. }), "{err:?}");
    let err = parse_yaml("name: a\n  bad: indentation: here\n").unwrap_err();
    let YamlError::Syntax { line, .. } = err else { panic!("{err:?}") };
    assert_eq!(line, 3, "the YAML's line 2 is the manifest's line 3");
}

#[test]
fn anchors_aliases_and_tags_are_refused_where_they_appear() {
    let err = parse_yaml("base: &b x\nname: *b\n").unwrap_err();
    assert_eq!(err, YamlError::Refused { what: "an anchor (&NAME)".into(), line: 2 });
    let err = parse_yaml("name: *nowhere\n").unwrap_err();
    assert!(matches!(err, YamlError::Syntax { .. } | YamlError::Refused { .. }), "{err:?}");
    // A secondary tag is reported resolved to its full name.
    let err = parse_yaml("name: !!python/object:os.system x\n").unwrap_err();
    assert!(
        matches!(err, YamlError::Refused { ref what, line: 2 } if what.ends_with("python/object:os.system")),
        "{err:?}"
    );
    let err = parse_yaml("name: !custom x\n").unwrap_err();
    assert!(matches!(err, YamlError::Refused { ref what, .. } if what.contains("!custom")), "{err:?}");
    let err = parse_yaml("- &a [x]\n- *a\n").unwrap_err();
    assert!(matches!(err, YamlError::Refused { .. }), "{err:?}");
    assert!(err.to_string().contains("anchors, aliases and tags are not allowed"), "{err}");
}

/// The classic billion-laughs document: nine levels, each alias list ten times the one before,
/// a billion `lol`s once expanded. It must end at its first anchor, before any expansion.
#[test]
fn a_billion_laughs_document_is_refused_at_its_first_anchor() {
    let mut yaml =
        String::from("a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (prev, next) in
        ["a", "b", "c", "d", "e", "f", "g", "h"].iter().zip(["b", "c", "d", "e", "f", "g", "h", "i"])
    {
        let refs = vec![format!("*{prev}"); 9].join(",");
        yaml.push_str(&format!("{next}: &{next} [{refs}]\n"));
    }
    let started = Instant::now();
    let err = parse_yaml(&yaml).unwrap_err();
    assert_eq!(err, YamlError::Refused { what: "an anchor (&NAME)".into(), line: 2 });
    // Bounded work: a few events, far under any limit; generous for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn the_parsers_work_is_bounded_by_events_and_depth() {
    // Many nodes: refused at MAX_YAML_EVENTS, without reading the rest.
    let many: String = (0..MAX_YAML_EVENTS).map(|i| format!("k{i}: v\n")).collect();
    assert_eq!(parse_yaml(&many), Err(YamlError::TooManyNodes));
    // Deep nesting: an error, not a stack overflow.
    let deep = format!("name: {}x{}\n", "[".repeat(100_000), "]".repeat(100_000));
    // (The scanner looks ahead inside flow collections and stops at its own limit of 255 levels
    // first: a syntax error, bounded all the same.)
    let err = parse_yaml(&deep).unwrap_err();
    assert!(matches!(err, YamlError::TooDeep { line: 2 } | YamlError::Syntax { line: 2, .. }), "{err:?}");
    let block_deep: String = (0..200).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect();
    assert!(matches!(parse_yaml(&block_deep), Err(YamlError::TooDeep { .. })));
    // Just under the limits is fine.
    let ok = format!("name: {}x{}\n", "[".repeat(MAX_YAML_DEPTH - 1), "]".repeat(MAX_YAML_DEPTH - 1));
    assert_eq!(parse_yaml(&ok), Ok(FrontMatter::default()));
}

#[test]
fn a_second_document_is_refused() {
    let err = parse_yaml("name: a\n...\nname: b\n").unwrap_err();
    assert!(matches!(err, YamlError::ManyDocuments { .. }), "{err:?}");
}

#[test]
fn the_description_fallback_is_the_bodys_first_line_without_hashes() {
    assert_eq!(first_line_description("\n\n#  My   skill\nmore\n"), "My skill");
    assert_eq!(first_line_description("## Deploy\ttools\r\n"), "Deploy tools");
    assert_eq!(first_line_description("plain first line\nsecond"), "plain first line");
    assert_eq!(first_line_description(""), "");
    assert_eq!(first_line_description("  \n\t\n"), "");
    assert_eq!(first_line_description("#"), "");
}

#[test]
fn string_values_reads_any_keys_by_the_same_rules() {
    let yaml = "type: user\nname: a\nextra: [x]\ntype: project\ncount: 3\n";
    let values = string_values(yaml, ["name", "type", "count", "missing", "extra"]).unwrap();
    // The last of a repeated key counts; a number or a list is no string.
    assert_eq!(values, [Some("a".to_owned()), Some("project".to_owned()), None, None, None]);
    assert_eq!(string_values("- a\n- b\n", ["name"]).unwrap(), [None]);
    assert!(string_values("name: &a x\n", ["name"]).is_err(), "anchors are refused here too");
}
