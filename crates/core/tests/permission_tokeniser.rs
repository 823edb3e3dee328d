//! The destructive-command table (course §3: "Detection is by command word, not by substring")
//! and the verdicts of `check_tool_call`.

use agent_core::dispatch::ToolCall;
use agent_core::messages::ToolUseBlock;
use agent_core::permission::{DENIED_BY_DENY_LIST, Verdict, check_tool_call, is_destructive};
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// (name of the behaviour, command, flagged?)
const TABLE: &[(&str, &str, bool)] = &[
    // ── flagged: a delete command as the command word ──
    ("plain rm", "rm x", true),
    ("rm with flags", "rm -rf build", true),
    ("upper-case RM", "RM x", true),
    ("windows del", "del x", true),
    ("mixed-case Del", "Del x", true),
    ("rmdir", "rmdir build", true),
    ("windows erase", "ERASE x", true),
    ("del.exe", "del.exe x", true),
    ("as a path /usr/bin/rm", "/usr/bin/rm x", true),
    ("quoted command word", "'rm' x", true),
    ("backslash-escaped command word", "\\rm x", true),
    // ── flagged: after an operator ──
    ("after ;", "echo hi; rm x", true),
    ("after &&", "echo hi && rm x", true),
    ("after ||", "false || rm x", true),
    ("after |", "ls | rm x", true),
    ("after |&", "ls |& rm x", true),
    ("after &", "sleep 1 & rm x", true),
    ("after newline", "echo hi\nrm x", true),
    ("in a subshell", "(rm x)", true),
    ("in a brace group", "{ rm x; }", true),
    ("after if", "if true; then rm x; fi", true),
    ("after do", "for f in *; do rm $f; done", true),
    ("after !", "! rm x", true),
    // ── flagged: behind prefixes and wrappers ──
    ("behind an assignment", "VAR=1 rm x", true),
    ("behind env VAR=1", "env VAR=1 rm x", true),
    ("behind env -i", "env -i PATH=/bin rm x", true),
    ("behind env -S", "env -S 'rm x'", true),
    ("behind command", "command rm x", true),
    ("behind command -p", "command -p rm x", true),
    ("behind exec", "exec rm x", true),
    ("behind nohup", "nohup rm x &", true),
    ("behind time", "time rm x", true),
    ("behind nice -n", "nice -n 10 rm x", true),
    ("behind timeout", "timeout 5 rm x", true),
    ("behind timeout -s", "timeout -s KILL 5 rm x", true),
    ("behind xargs", "ls | xargs rm", true),
    ("behind xargs -I", "ls | xargs -I {} rm {}", true),
    ("behind busybox", "busybox rm x", true),
    ("wrappers stacked", "nohup env A=1 command rm x", true),
    // ── flagged: nested scripts ──
    ("sh -c", "sh -c 'rm x'", true),
    ("bash -lc", "bash -lc 'cd /tmp && rm x'", true),
    ("zsh -c", "zsh -c \"rm x\"", true),
    ("/bin/sh -c", "/bin/sh -c 'rm x'", true),
    ("bash -c in bash -c", "bash -c \"sh -c 'rm x'\"", true),
    ("eval", "eval 'rm x'", true),
    ("cmd /c del", "cmd /c del x", true),
    ("inside $( )", "echo $(rm x)", true),
    ("inside backticks", "echo `rm x`", true),
    ("$( ) inside double quotes", "echo \"$(rm x)\"", true),
    ("nested $( $( ) )", "echo $(echo $(rm x))", true),
    ("process substitution", "cat <(rm x)", true),
    ("find -delete", "find . -name '*.o' -delete", true),
    ("find -exec rm", "find . -name '*.o' -exec rm {} \\;", true),
    // ── flagged: writes to /etc/ ──
    ("redirect to /etc", "echo x > /etc/hosts", true),
    ("append to /etc", "echo x >> /etc/hosts", true),
    ("fd redirect to /etc", "cmd 2>/etc/err.log", true),
    ("&> to /etc", "cmd &>/etc/out", true),
    ("redirect to /etc via ..", "echo x > /tmp/../etc/hosts", true),
    ("tee /etc", "echo x | tee /etc/hosts", true),
    ("tee -a /etc", "echo x | tee -a /etc/hosts", true),
    ("cp into /etc", "cp hosts /etc/hosts", true),
    ("mv into /etc", "mv -f hosts /etc/", true),
    ("cp -t /etc", "cp -t /etc/ hosts", true),
    // ── flagged: chmod 777 ──
    ("chmod 777", "chmod 777 f", true),
    ("chmod -R 777", "chmod -R 777 dir", true),
    ("chmod 0777", "chmod 0777 f", true),
    ("chmod a+rwx", "chmod a+rwx f", true),
    // ── flagged: cannot be tokenised ──
    ("unbalanced single quote", "echo 'x", true),
    ("unbalanced double quote", "echo \"x", true),
    ("unterminated $(", "echo $(ls", true),
    ("unterminated backtick", "echo `ls", true),
    ("redirect without target", "echo >", true),
    // ── not flagged: rm only as an argument or inside a word ──
    ("echo rm x", "echo rm x", false),
    ("grep del f", "grep del f", false),
    ("git commit -m \"rm x\"", "git commit -m \"rm x\"", false),
    ("model list", "model list", false),
    ("delimiter x", "delimiter x", false),
    ("pseudocode", "pseudocode", false),
    ("printf \"rm x\\n\"", "printf \"rm x\\n\"", false),
    ("command -v rm", "command -v rm", false),
    ("command -V rm", "command -V rm", false),
    ("rm in a quoted sh argument that is not -c", "sh script.sh rm", false),
    ("rm in single quotes", "echo 'x; rm y'", false),
    ("rm in a comment", "ls # rm x", false),
    ("rm in a here-document body", "cat <<EOF\nrm x\nEOF", false),
    ("rm as a file name", "cat rm", false),
    ("rmdir-like word", "rmdirs", false),
    ("file name with rm", "ls ./rm.txt", false),
    ("reading from /etc", "cat /etc/hosts", false),
    ("redirect input from /etc", "wc -l < /etc/hosts", false),
    ("cp out of /etc", "cp /etc/hosts ./hosts", false),
    ("tee into the workspace", "echo x | tee out.txt", false),
    ("chmod 755", "chmod 755 f", false),
    ("chmod +x", "chmod +x script.sh", false),
    ("echo chmod 777", "echo chmod 777", false),
    ("redirect to a local etc/", "echo x > etc/hosts", false),
    ("plain build", "cargo build && cargo test", false),
    ("empty command", "", false),
    // ── not flagged: everyday commands ──
    ("pipe with 2>&1", "cargo test 2>&1 | tail -20", false),
    ("python -c", "python -c \"import os; print(os.getcwd())\"", false),
    ("for loop", "for f in *.py; do echo $f; done", false),
    ("case statement", "case $x in a) echo a;; *) echo b;; esac", false),
    ("awk program", "awk '{print $1}' f", false),
    ("parameter expansion", "echo ${HOME:-/tmp}", false),
    ("test and mkdir", "[ -d out ] || mkdir -p out", false),
    ("git rm is git's subcommand", "git rm --cached x", false),
    ("harmless sh -c", "sh -c 'ls -la'", false),
    ("harmless $( )", "echo $(date +%s)", false),
    ("redirect to /dev/null", "cmd 2>/dev/null", false),
];

#[test]
fn destructive_command_table() {
    let mut wrong = Vec::new();
    for (name, command, flagged) in TABLE {
        let verdict = is_destructive(command);
        if verdict.is_some() != *flagged {
            wrong.push(format!("{name}: {command:?} → {verdict:?}, expected flagged = {flagged}"));
        }
    }
    assert!(wrong.is_empty(), "mismatches:\n{}", wrong.join("\n"));
}

#[test]
fn reasons_say_why() {
    assert_eq!(is_destructive("echo hi && rm x").as_deref(), Some("deletes files with 'rm'"));
    assert_eq!(is_destructive("/usr/bin/RM x").as_deref(), Some("deletes files with 'rm'"));
    assert_eq!(is_destructive("echo x > /etc/hosts").as_deref(), Some("writes to /etc/ (/etc/hosts)"));
    assert_eq!(is_destructive("chmod -R 777 d").as_deref(), Some("makes files world-writable (chmod 777)"));
    assert_eq!(
        is_destructive("echo 'x").as_deref(),
        Some("cannot be parsed (unterminated ' quote), so it is treated as destructive")
    );
}

#[test]
fn hostile_nesting_is_refused_not_overflowed() {
    let deep = format!("{}rm x{}", "$(".repeat(10_000), ")".repeat(10_000));
    assert!(is_destructive(&deep).is_some());
    // Nested scripts: a few levels are read through, very many are refused as unreadable.
    assert!(is_destructive("sh -c \"bash -c 'eval rm x'\"").is_some());
    assert_eq!(is_destructive("eval eval eval ls"), None);
    let chain = format!("{}ls", "eval ".repeat(1_000));
    assert!(is_destructive(&chain).is_some_and(|r| r.starts_with("cannot be parsed")));
}

/// The call as the loop hands it to the permission check: prepared through the dispatch map of the course's
/// tools, so each tool says what its input is about (an unknown tool says nothing).
fn call(name: &str, input: Value) -> ToolCall {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let ws = Workspace::new(dir.path()).unwrap_or_else(|e| panic!("workspace: {e}"));
    let block = ToolUseBlock { id: "toolu_1".into(), name: name.into(), input, extra: Map::new() };
    tools::all(&ws, &ToolOptions::default()).prepare(&block)
}

/// The workspace for these tests: relative paths without `..` and absolute paths under /ws.
fn inside(path: &str) -> bool {
    !path.contains("..") && (!path.starts_with('/') || path.starts_with("/ws"))
}

#[test]
fn check_tool_call_verdicts() {
    let rows: &[(&str, ToolCall, Verdict)] = &[
        ("harmless bash", call("bash", json!({"command": "ls -la"})), Verdict::Allow),
        (
            "deny list",
            call("bash", json!({"command": "sudo reboot"})),
            Verdict::Deny(DENIED_BY_DENY_LIST.into()),
        ),
        (
            "deny list wins over destructive",
            call("bash", json!({"command": "rm -rf /"})),
            Verdict::Deny("Permission denied by deny list".into()),
        ),
        (
            "destructive asks",
            call("bash", json!({"command": "rm x"})),
            Verdict::Ask("Destructive command (deletes files with 'rm'): rm x".into()),
        ),
        ("bash without command passes to the tool", call("bash", json!({})), Verdict::Allow),
        ("bash with a non-string command", call("bash", json!({"command": 3})), Verdict::Allow),
        ("read inside", call("read_file", json!({"path": "src/main.rs"})), Verdict::Allow),
        (
            "read outside",
            call("read_file", json!({"path": "/etc/passwd"})),
            Verdict::Ask("Path outside workspace: /etc/passwd (read_file)".into()),
        ),
        (
            "write outside",
            call("write_file", json!({"path": "../x", "content": ""})),
            Verdict::Ask("Path outside workspace: ../x (write_file)".into()),
        ),
        (
            "edit outside",
            call("edit_file", json!({"path": "/tmp/x", "old_text": "a", "new_text": "b"})),
            Verdict::Ask("Path outside workspace: /tmp/x (edit_file)".into()),
        ),
        ("file tool without path", call("write_file", json!({"content": ""})), Verdict::Allow),
        ("glob inside", call("glob", json!({"pattern": "**/*.rs"})), Verdict::Allow),
        (
            "glob outside",
            call("glob", json!({"pattern": "../../etc/*.conf"})),
            Verdict::Ask("Path outside workspace: ../../etc/*.conf (glob)".into()),
        ),
        ("other tools", call("todo_write", json!({"todos": []})), Verdict::Allow),
        ("unknown tool", call("nope", json!("not an object")), Verdict::Allow),
    ];
    for (name, block, expected) in rows {
        assert_eq!(&check_tool_call(block, inside), expected, "{name}");
    }
}

proptest! {
    /// Any input gets an answer: no panic, no overflow.
    #[test]
    fn never_panics(command in "[ -~\n]{0,200}") {
        let _ = is_destructive(&command);
    }

    /// A word made of letters that is not a delete command is never flagged on its own.
    #[test]
    fn echo_of_anything_quoted_is_harmless(text in "[a-z ;&|]{0,40}") {
        prop_assert_eq!(is_destructive(&format!("echo '{text}'")), None);
    }
}
