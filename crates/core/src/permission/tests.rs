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
