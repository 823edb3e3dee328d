use super::*;

fn words(command: &str) -> Vec<Vec<String>> {
    tokenize(command).map(|cs| cs.into_iter().map(|c| c.words).collect()).unwrap_or_default()
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(words(r#"echo 'a b' "c $d" e\ f"#), vec![vec!["echo", "a b", "c $d", "e f"]]);
}

#[test]
fn operators_split_simple_commands() {
    assert_eq!(
        words("a; b && c || d | e & f\ng"),
        ["a", "b", "c", "d", "e", "f", "g"].map(|w| vec![w.to_string()]).to_vec()
    );
}

#[test]
fn substitution_commands_come_first() {
    assert_eq!(words("echo $(rm x)"), vec![vec!["rm", "x"], vec!["echo", "$(rm x)"]]);
    assert_eq!(words("echo `rm x`"), vec![vec!["rm", "x"], vec!["echo", "`rm x`"]]);
}

#[test]
fn redirections_are_taken_out() {
    let cs = tokenize("cat <in >>out 2>&1 x").unwrap_or_default();
    assert_eq!(cs.len(), 1);
    assert_eq!(cs[0].words, vec!["cat", "x"]);
    let ops: Vec<_> = cs[0].redirects.iter().map(|r| (r.op.as_str(), r.fd, r.target.as_str())).collect();
    assert_eq!(ops, vec![("<", None, "in"), (">>", None, "out"), (">&", Some(2), "1")]);
}

#[test]
fn heredoc_body_is_not_commands() {
    assert_eq!(words("cat <<EOF\nrm x\nEOF\nls"), vec![vec!["cat"], vec!["ls"]]);
}

#[test]
fn errors() {
    assert_eq!(tokenize("echo 'x"), Err(TokenizeError::UnterminatedQuote('\'')));
    assert_eq!(tokenize("echo \"x"), Err(TokenizeError::UnterminatedQuote('"')));
    assert_eq!(tokenize("echo $(x"), Err(TokenizeError::UnterminatedSubstitution));
    assert_eq!(tokenize("echo `x"), Err(TokenizeError::UnterminatedQuote('`')));
    assert_eq!(tokenize("echo >"), Err(TokenizeError::MissingRedirectTarget(">".into())));
    let deep = format!("{}x{}", "$(".repeat(40), ")".repeat(40));
    assert_eq!(tokenize(&deep), Err(TokenizeError::TooDeep));
}

#[test]
fn a_carriage_return_is_part_of_the_word() {
    assert_eq!(words("ls\r"), vec![vec!["ls\r"]]);
    assert_eq!(words("rm\rv"), vec![vec!["rm\rv"]]);
}

#[test]
fn a_function_definition_is_not_a_command_and_its_body_is() {
    let script = parse("f() { rm v; }; f").unwrap_or_default();
    assert_eq!(script.functions, ["f"]);
    let words: Vec<Vec<String>> = script.commands.into_iter().map(|c| c.words).collect();
    assert_eq!(words, vec![vec!["rm", "v"], vec!["f"]]);
    assert!(parse("( ls )").unwrap_or_default().functions.is_empty());
}

#[test]
fn unquoted_expansions_may_split() {
    let cs = tokenize(r#"[ $x "$y" $'z' *.rs "a b" ]"#).unwrap_or_default();
    assert_eq!(cs[0].splits, [false, true, false, false, true, false, false]);
    assert_eq!(cs[0].unknown[2], Some("a variable"), "quoted, still unknown");
    let home = tokenize("cp f ~/x").unwrap_or_default();
    assert_eq!(home[0].unknown[2], Some("a home folder (~)"));
}

#[test]
fn arithmetic_that_bash_evaluates_is_marked() {
    for text in [
        "echo ${a[i]}",
        "echo ${x:i}",
        "echo ${!x}",
        "echo ${x@P}",
        "echo $[x]",
        "((x = y))",
        "cat <<E\n${a[1]}\nE",
    ] {
        assert!(parse(text).unwrap_or_default().arithmetic, "{text}");
    }
    for text in [
        "echo ${x}",
        "echo ${x:-d}",
        "echo ${#x}",
        "echo ${a[@]}",
        "echo ${#a[*]}",
        "echo ${x%.rs}",
        "( (ls) )",
        "cat <<'E'\n${a[1]}\nE",
    ] {
        assert!(!parse(text).unwrap_or_default().arithmetic, "{text}");
    }
}
