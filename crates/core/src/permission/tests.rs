use super::*;

fn words(command: &str) -> Vec<Vec<String>> {
    parse(command).map(|s| s.commands.into_iter().map(|c| c.words).collect()).unwrap_or_default()
}

#[test]
fn quotes_and_escapes_are_removed() {
    assert_eq!(words(r#"echo 'a b' "c \$d" e\ f"#), vec![vec!["echo", "a b", "c $d", "e f"]]);
}

#[test]
fn operators_split_simple_commands() {
    assert_eq!(
        words("a; b && c || d | e & f\ng"),
        ["a", "b", "c", "d", "e", "f", "g"].map(|w| vec![w.to_string()]).to_vec()
    );
}

#[test]
fn redirections_are_taken_out() {
    let script = parse("cat <in x >>out 2>&1").unwrap_or_default();
    assert_eq!(script.commands.len(), 1);
    assert_eq!(script.commands[0].words, vec!["cat", "x"]);
    let ops: Vec<_> =
        script.commands[0].redirects.iter().map(|r| (r.op.as_str(), r.fd, r.target.as_str())).collect();
    assert_eq!(ops, vec![("<", None, "in"), (">>", None, "out"), (">&", Some(2), "1")]);
}

#[test]
fn heredoc_body_is_not_commands() {
    assert_eq!(words("cat <<'EOF'\nrm x\nEOF\nls"), vec![vec!["cat"], vec!["ls"]]);
    assert_eq!(words("cat <<EOF > new.txt\nrm x\nEOF"), vec![vec!["cat"]]);
}

#[test]
fn what_is_not_read_is_named() {
    let holds = |command: &str| match parse(command) {
        Err(e) => e.to_string(),
        Ok(s) => format!("read: {s:?}"),
    };
    for (command, what) in [
        ("echo $(rm x)", "a command substitution"),
        ("echo `rm x`", "a command substitution"),
        ("echo $x", "a variable"),
        ("echo ${x:-'}'} ; rm v #'", "a variable"),
        ("f() { :; }", "a function definition"),
        ("x=(a b)", "a compound assignment"),
        ("declare -a x='($(rm v))'", "declare"),
        ("cat <<$'E'\nE\nrm v\nE", "cannot be parsed"),
        ("cat <<\\E\nE\nrm v\nE", "a here-document whose delimiter"),
        ("cat <<E$x\nE\n", "cannot be parsed"),
        ("cat <<E\n$HOME\nE", "a here-document whose body sh expands"),
        ("echo x &> /dev/null rm v", "'&>'"),
        ("cat <<< x", "here-string"),
        ("[[ -n x ]]", "[["),
        ("if true; then ls; fi", "a compound command"),
        ("echo 'x", "cannot be parsed"),
        ("ls\r", "U+000D"),
        ("sort -\\\no v f", "text the grammar skips"),
        ("ls\u{a0}-la", "U+00A0"),
    ] {
        assert!(holds(command).contains(what), "{command:?}: {}", holds(command));
    }
}

#[test]
fn globs_braces_and_tildes_are_only_known_when_run() {
    let script = parse("ls *.rs {a,b} ~/x 'q*' a=b").unwrap_or_default();
    let c = &script.commands[0];
    assert_eq!(
        c.unknown,
        [None, Some("a glob"), Some("a brace expansion"), Some("a home folder (~)"), None, None]
    );
    assert_eq!(c.splits, [false, true, true, false, false, false]);
}

#[test]
fn test_brackets_are_a_command_with_its_words() {
    assert_eq!(
        words("[ -d out ] || mkdir -p out"),
        vec![vec!["[", "-d", "out", "]"], vec!["mkdir", "-p", "out"]]
    );
    assert_eq!(words("[ a = b ]"), vec![vec!["[", "a", "=", "b", "]"]]);
    assert_eq!(words("> /dev/null rm v"), vec![vec!["rm", "v"]]);
    assert_eq!(words("2>/dev/null ls -la"), vec![vec!["ls", "-la"]]);
}

#[test]
fn a_long_command_is_refused_at_once() {
    let long = format!("echo {}", "[".repeat(60_000));
    assert_eq!(parse(&long), Err(Unread::TooLong(long.len())));
    // Just under the cap, the grammar reads it: one word of brackets.
    let under = format!("echo {}", "[".repeat(MAX_COMMAND_LEN - 10));
    let read = parse(&under).map(|s| s.commands.iter().map(|c| c.words.len()).collect::<Vec<_>>());
    assert_eq!(read, Ok(vec![2]));
}

#[test]
fn parsing_stops_at_the_deadline_and_the_command_is_unread() {
    // The grammar's error recovery is quadratic on this (6 s at 32 KB, unoptimised).
    let crafted = format!("echo {}", "$[".repeat(16_000));
    assert_eq!(parse_by(&crafted, std::time::Instant::now()), Err(Unread::TooSlow));
    // With the whole budget, it is a syntax error or out of time: never read.
    assert!(matches!(parse(&crafted), Err(Unread::TooSlow | Unread::Syntax)), "{:?}", parse(&crafted).err());
    // A well-formed command is read even past the deadline: it is parsed before tree-sitter
    // first asks whether to go on.
    assert!(parse_by("ls -la", std::time::Instant::now()).is_ok());
}

/// 4,000 words then 4,000 `git` on one line (32 KB, in a folder with no `.git`): each git looks
/// up whether the line named a bare repository's names once, not by scanning every word before
/// it (that took 71 s, and the line then ran unasked).
#[test]
fn a_line_of_many_words_and_many_gits_is_judged_in_full() {
    let dir = tempfile::tempdir().expect("a temp folder");
    let ws = Workspace::new(dir.path()).expect("a workspace");
    let letter = |n: usize| char::from(b'a' + u8::try_from(n % 26).unwrap_or(0));
    let words: Vec<String> = (0..4000).map(|i| [i / 676, i / 26, i].map(letter).iter().collect()).collect();
    let command = format!("echo {};{}", words.join(" "), "git;".repeat(4000));
    assert!(command.len() <= MAX_COMMAND_LEN, "{}", command.len());
    let findings = judge(&command, &ws);
    assert!(findings.is_empty(), "{findings:?}");
}
