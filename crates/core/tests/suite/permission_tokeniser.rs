//! The permission check as a table (issue 14): each command form with its verdict, judged in a
//! real workspace, plus the verdicts of `check_tool_call` for the other tools.
//!
//! The workspace holds `v`, `f`, `file`, `x`, `notes.txt`, `dir/v` and `.git/`; a form that
//! "overwrites" names one of them, a form that "creates" names something that is not there.

use agent_core::dispatch::ToolCall;
use agent_core::permission::{DENIED_BY_DENY_LIST, Verdict, check_tool_call, is_destructive};
use agent_core::test_util::tool_call;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    Allow,
    Ask,
    Deny,
}
use V::{Allow, Ask, Deny};

/// (kind, command, verdict)
const TABLE: &[(&str, &str, V)] = &[
    // ── harmless forms that must run ──
    ("harmless", "ls 2>/dev/null", Allow),
    ("harmless", "ls > /dev/null 2>&1", Allow),
    ("harmless", "echo \"rm is a word\"", Allow),
    ("harmless", "grep -r x .", Allow),
    ("harmless", "git status", Allow),
    ("harmless", "cat file", Allow),
    ("harmless", "grep -r x . > /dev/null", Allow),
    ("harmless", "ls -la", Allow),
    ("harmless", "echo rm x", Allow),
    ("harmless", "grep del f", Allow),
    ("harmless", "git commit -m \"rm x\"", Allow),
    ("harmless", "model list", Allow),
    ("harmless", "pseudocode", Allow),
    ("harmless", "printf \"rm x\\n\"", Allow),
    ("harmless", "command -v rm", Allow),
    ("harmless", "echo 'x; rm y'", Allow),
    ("harmless", "ls # rm x", Allow),
    ("harmless", "cat <<'EOF'\nrm x\nEOF", Allow),
    ("harmless", "cat <<EOF\nrm x $HOME\nEOF", Allow),
    ("harmless", "cat rm", Allow),
    ("harmless", "rmdirs", Allow),
    ("harmless", "cat /etc/hosts", Allow),
    ("harmless", "wc -l < /etc/hosts", Allow),
    ("harmless", "cp /etc/hosts ./hosts", Allow),
    ("harmless", "echo x | tee out.txt", Allow),
    ("harmless", "echo x > new.txt", Allow),
    ("harmless", "echo x >> notes.txt", Allow),
    ("harmless", "cargo build && cargo test", Allow),
    ("harmless", "cargo test 2>&1 | tail -20", Allow),
    ("harmless", "for f in *.py; do echo $f; done", Allow),
    ("harmless", "case $x in a) echo a;; *) echo b;; esac", Allow),
    ("harmless", "awk '{print $1}' f", Allow),
    ("harmless", "echo ${HOME:-/tmp}", Allow),
    ("harmless", "[ -d out ] || mkdir -p out", Allow),
    ("harmless", "git rm --cached x", Allow),
    ("harmless", "sh -c 'ls -la'", Allow),
    ("harmless", "bash -lc 'git status && git diff'", Allow),
    ("harmless", "sh script.sh rm", Allow),
    ("harmless", "python3 script.py", Allow),
    ("harmless", "python3 -m pytest -q", Allow),
    ("harmless", "sed -n '1,20p' f", Allow),
    ("harmless", "sed 's/a/b/g' f > new.txt", Allow),
    ("harmless", "find . -name '*.rs'", Allow),
    ("harmless", "find . -name '*.o' -exec ls -l {} +", Allow),
    ("harmless", "ls | xargs cat", Allow),
    ("harmless", "env FOO=1 cargo test", Allow),
    ("harmless", "timeout 5 cargo test", Allow),
    ("harmless", "nice -n 10 make", Allow),
    ("harmless", "git checkout -b feature", Allow),
    ("harmless", "git checkout main", Allow),
    ("harmless", "git restore --staged f", Allow),
    ("harmless", "git clean -n", Allow),
    ("harmless", "git push origin main", Allow),
    ("harmless", "git log --oneline | head", Allow),
    ("harmless", "cp f copy.txt", Allow),
    ("harmless", "cp -n f v", Allow),
    ("harmless", "mv f renamed.txt", Allow),
    ("harmless", "ln -s f link", Allow),
    ("harmless", "tar -czf new.tgz dir", Allow),
    ("false positive", "dd if=f of=/dev/null", Deny),
    ("harmless", "mkdir -p a/b && touch a/b/c", Allow),
    ("harmless", "echo hi >&2", Allow),
    ("harmless", "echo hi > /dev/stderr", Allow),
    ("harmless", "cat f | tee /dev/tty", Allow),
    ("harmless", "X=1 Y=$HOME ls", Allow),
    ("false positive", "echo $(( 1 + 2 ))", Ask),
    ("false positive", "echo sudo", Deny),
    ("harmless", "", Allow),
    // ── words hidden from a tokeniser (undeterminable) ──
    ("hidden", "$(echo rm) v", Ask),
    ("hidden", "`echo rm` v", Ask),
    ("hidden", "X=rm; $X v", Ask),
    ("hidden", "rm${IFS}v", Ask),
    ("hidden", "$(printf '\\162\\155') v", Ask),
    ("hidden", "/bin/r? v", Ask),
    ("hidden", "/bin/r[m] v", Ask),
    ("hidden", "bash -c '{rm,v}'", Ask),
    ("hidden", "{rm,v}", Ask),
    ("hidden", "bash -c \"$'\\x72m' v\"", Ask),
    ("hidden", "$'\\x72m' v", Ask),
    ("hidden", "eval \"$(echo cm0gdgo= | base64 -d)\"", Ask),
    ("hidden", "eval ls", Ask),
    ("hidden", "alias zap=rm", Ask),
    ("hidden", ". ./script.sh", Ask),
    ("hidden", "source ./script.sh", Ask),
    ("hidden", "trap 'rm v' EXIT", Ask),
    ("hidden", "bash -c 'coproc rm v'", Ask),
    ("hidden", "coproc ls", Ask),
    ("hidden", "A=${B:-$(rm v)}", Ask),
    ("hidden", "echo $(date)", Ask),
    ("hidden", "cat <(ls)", Ask),
    ("hidden", "cat <<EOF\n$(rm v)\nEOF", Ask),
    ("hidden", "echo \"`rm v`\"", Ask),
    ("hidden", "\"$CMD\" v", Ask),
    ("hidden", "${X} v", Ask),
    ("hidden", "hash -p /bin/rm ls", Ask),
    ("hidden", "echo hi > \"$OUT\"", Ask),
    // ── code that shells or interpreters read ──
    ("interpreter", "sh <<EOF\nrm v\nEOF", Ask),
    ("interpreter", "sh <<< 'rm v'", Ask),
    ("interpreter", "echo 'rm v' | sh", Ask),
    ("interpreter", "echo 'rm v' | bash -s", Ask),
    ("interpreter", "python3 -c \"import os; os.remove('v')\"", Ask),
    ("interpreter", "python -c 'print(1)'", Ask),
    ("interpreter", "python3 -", Ask),
    ("interpreter", "echo x | python3", Ask),
    ("interpreter", "perl -e 'unlink \"v\"'", Ask),
    ("interpreter", "awk 'BEGIN{system(\"rm v\")}'", Ask),
    ("interpreter", "awk '{print > \"v\"}' f", Ask),
    ("interpreter", "awk -v x=1 '{print | \"sh\"}' f", Ask),
    ("interpreter", "node -e \"require('fs').unlinkSync('v')\"", Ask),
    ("interpreter", "ruby -e 'File.delete(\"v\")'", Ask),
    ("interpreter", "php -r 'unlink(\"v\");'", Ask),
    ("interpreter", "sed -n '1e rm v' f", Ask),
    ("interpreter", "sed 's/x/rm v/e' f", Ask),
    ("interpreter", "sed 'w v' f", Ask),
    ("interpreter", "sh -c 'rm x'", Ask),
    ("interpreter", "bash -lc 'cd /tmp && rm x'", Ask),
    ("interpreter", "bash -c \"sh -c 'rm x'\"", Ask),
    ("interpreter", "sh -c '\"$0\" v' rm", Ask),
    // ── wrappers, judged by what they run ──
    ("wrapper", "echo v | xargs rm", Ask),
    ("wrapper", "echo v | xargs -i rm {}", Ask),
    ("wrapper", "echo v | xargs -l rm", Ask),
    ("wrapper", "echo v | xargs -e rm", Ask),
    ("wrapper", "echo v | xargs -I {} rm {}", Ask),
    ("wrapper", "echo -i | xargs sed s/a/b/ f", Ask),
    ("wrapper", "flock f rm v", Ask),
    ("wrapper", "flock f -c 'rm v'", Ask),
    ("wrapper", "taskset 1 rm v", Ask),
    ("wrapper", "taskset -c 0 rm v", Ask),
    ("wrapper", "script -qc 'rm v' /dev/null", Ask),
    ("wrapper", "unshare -U rm v", Ask),
    ("wrapper", "setpriv rm v", Ask),
    ("wrapper", "setpriv --reuid 1000 rm v", Ask),
    ("wrapper", "find . -exec sh -c 'rm \"$1\"' _ {} \\;", Ask),
    ("wrapper", "find . -name '*.o' -exec rm {} \\;", Ask),
    ("wrapper", "find . -delete", Ask),
    ("wrapper", "env rm v", Ask),
    ("wrapper", "env -i PATH=/bin rm v", Ask),
    ("wrapper", "env -S 'rm v'", Ask),
    ("wrapper", "command rm v", Ask),
    ("wrapper", "exec rm v", Ask),
    ("wrapper", "nice rm v", Ask),
    ("wrapper", "nice -n 5 rm v", Ask),
    ("wrapper", "nice -5 rm v", Ask),
    ("wrapper", "nohup rm v &", Ask),
    ("wrapper", "timeout 5 rm v", Ask),
    ("wrapper", "timeout -s KILL 5 rm v", Ask),
    ("wrapper", "timeout --bogus 5 rm v", Ask),
    ("wrapper", "strace -f rm v", Ask),
    ("wrapper", "su -c 'rm v'", Ask),
    ("wrapper", "doas rm v", Ask),
    ("wrapper", "watch rm v", Ask),
    ("wrapper", "nohup env A=1 command rm x", Ask),
    ("wrapper", "busybox rm v", Ask),
    ("wrapper", "time rm v", Ask),
    ("wrapper", "cmd /c del x", Ask),
    // ── data destroyed by other words ──
    ("destroys", "rm v", Ask),
    ("destroys", "rm -rf build", Ask),
    ("destroys", "RM v", Ask),
    ("destroys", "/usr/bin/rm v", Ask),
    ("destroys", "'rm' v", Ask),
    ("destroys", "\\rm v", Ask),
    ("destroys", "echo hi && rm v", Ask),
    ("destroys", "false || rm v", Ask),
    ("destroys", "(rm v)", Ask),
    ("destroys", "{ rm v; }", Ask),
    ("destroys", "if true; then rm v; fi", Ask),
    ("destroys", "! rm v", Ask),
    ("destroys", "VAR=1 rm v", Ask),
    ("destroys", "rmdir dir", Ask),
    ("destroys", "unlink v", Ask),
    ("destroys", "shred v", Ask),
    ("destroys", "del x", Ask),
    ("destroys", "truncate -s0 v", Ask),
    ("destroys", "> v", Ask),
    ("destroys", "echo x > v", Ask),
    ("destroys", "echo x >| v", Ask),
    ("destroys", "ls &> v", Ask),
    ("destroys", "exec 3>v", Ask),
    ("destroys", "mv v x; > x", Ask),
    ("destroys", "cd dir && > new.txt", Ask),
    ("destroys", "cp /dev/null v", Ask),
    ("destroys", "cp v dir", Ask),
    ("harmless", "cp f dir", Allow),
    ("destroys", "tee v </dev/null", Ask),
    ("destroys", "dd of=v", Ask),
    ("destroys", "sed -i d v", Ask),
    ("destroys", "sed -i.bak d v", Ask),
    ("destroys", "sed --in-place d v", Ask),
    ("destroys", "perl -pi -e 's/.*//' v", Ask),
    ("destroys", "ln -sf /dev/null v", Ask),
    ("destroys", "tar --remove-files -cf x.tar v", Ask),
    ("destroys", "tar xf a.tar", Ask),
    ("destroys", "tar -czf v dir", Ask),
    ("destroys", "chmod 000 v", Ask),
    ("destroys", "chmod +x f", Ask),
    ("destroys", "chown me v", Ask),
    ("destroys", "git clean -fdx", Ask),
    ("destroys", "git checkout -- f", Ask),
    ("destroys", "git checkout f", Ask),
    ("destroys", "git checkout .", Ask),
    ("destroys", "git restore f", Ask),
    ("destroys", "git reset --hard", Ask),
    ("destroys", "git stash drop", Ask),
    ("destroys", "git stash clear", Ask),
    ("destroys", "git push --force", Ask),
    ("destroys", "git push -f origin main", Ask),
    ("destroys", "git push origin +main", Ask),
    ("destroys", "git branch -D topic", Ask),
    ("destroys", "git rm v", Ask),
    ("destroys", "git -c alias.x='!rm v' x", Ask),
    ("destroys", "git config core.hooksPath h", Ask),
    ("destroys", "mv v ../elsewhere", Ask),
    ("destroys", "mv v /tmp/", Ask),
    ("destroys", "mv f v", Ask),
    ("destroys", "install f v", Ask),
    ("destroys", "rsync -a --delete dir/ other/", Ask),
    ("destroys", "sort -o v f", Ask),
    ("destroys", "curl -o v https://example.com", Ask),
    ("destroys", "patch -p1 < x", Ask),
    ("destroys", "echo x > /etc/hosts", Ask),
    ("destroys", "echo x >> /etc/hosts", Ask),
    ("destroys", "echo x | tee -a /etc/hosts", Ask),
    ("destroys", "cp hosts /etc/hosts", Ask),
    ("destroys", "echo KEY=x > .env", Ask),
    ("destroys", "echo x >> .git/config", Ask),
    ("destroys", "cp f .git/hooks/pre-commit", Ask),
    ("destroys", "cp *.txt dir/", Ask),
    ("destroys", "echo 'x", Ask),
    ("destroys", "echo $(ls", Ask),
    ("destroys", "echo >", Ask),
    // ── system control and devices: the deny list ──
    ("deny", "shutdown -h now", Deny),
    ("deny", "reboot", Deny),
    ("deny", "poweroff", Deny),
    ("deny", "halt -f", Deny),
    ("deny", "init 0", Deny),
    ("deny", "telinit 0", Deny),
    ("deny", "systemctl poweroff", Deny),
    ("deny", "systemctl reboot", Deny),
    ("deny", "sudo ls", Deny),
    ("deny", "rm -rf /", Deny),
    ("deny", "mkfs.ext4 disk.img", Deny),
    ("deny", "dd if=/dev/zero of=v", Deny),
    ("deny", "echo x > /dev/sda", Deny),
    ("deny", "cat f > /dev/nvme0n1", Deny),
];

/// The call as the loop hands it to the permission check: prepared through the dispatch map of
/// the course's tools, so each tool says what its input is about.
fn call(ws: &Workspace, name: &str, input: Value) -> ToolCall {
    tool_call(&tools::all(ws, &ToolOptions::default()), "toolu_1", name, input)
}

/// A real workspace holding the files the table's forms name.
fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("temp dir");
    for file in ["v", "f", "file", "x", "notes.txt", "dir/v", ".git/config"] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, "data").expect("write");
    }
    let ws = Workspace::new(dir.path()).expect("workspace");
    (dir, ws)
}

#[test]
fn every_command_form_gets_its_verdict() {
    assert!(TABLE.len() >= 150, "the table has {} forms", TABLE.len());
    let (_dir, ws) = workspace();
    let mut wrong = Vec::new();
    for (kind, command, expected) in TABLE {
        let verdict = check_tool_call(&call(&ws, "bash", json!({ "command": command })), &ws);
        let got = match &verdict {
            Verdict::Allow => Allow,
            Verdict::Ask(_) => Ask,
            Verdict::Deny(_) => Deny,
        };
        if got != *expected {
            wrong.push(format!("[{kind}] {command:?}: expected {expected:?}, got {verdict:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} wrong:\n{}", wrong.len(), TABLE.len(), wrong.join("\n"));
}

#[test]
fn reasons_say_why() {
    let (_dir, ws) = workspace();
    let reason = |command: &str| match check_tool_call(&call(&ws, "bash", json!({ "command": command })), &ws)
    {
        Verdict::Ask(reason) => reason,
        other => format!("{other:?}"),
    };
    assert_eq!(reason("echo hi && rm x"), "Destructive command (deletes files with 'rm'): echo hi && rm x");
    assert_eq!(reason("echo x > v"), "Destructive command (overwrites v with '>'): echo x > v");
    assert_eq!(
        reason("$X v"),
        "Destructive command (the command word holds a variable, so the command cannot be known before it runs): $X v"
    );
    assert_eq!(
        reason("echo 'x"),
        "Destructive command (cannot be parsed (unterminated ' quote), so it is treated as destructive): echo 'x"
    );
    // The whole command, never cut.
    let long = format!("echo {} && rm v", "a".repeat(300));
    assert!(reason(&long).ends_with("&& rm v"));
}

#[test]
fn hostile_nesting_is_refused_not_overflowed() {
    let deep = format!("{}rm x{}", "$(".repeat(10_000), ")".repeat(10_000));
    assert!(is_destructive(&deep).is_some());
    let nested = format!("{}ls{}", "sh -c \"".repeat(40), "\"".repeat(40));
    assert!(is_destructive(&nested).is_some());
}

#[test]
fn check_tool_call_verdicts() {
    let (_dir, ws) = workspace();
    let call = |name: &str, input: Value| call(&ws, name, input);
    let rows: &[(&str, ToolCall, Verdict)] = &[
        ("harmless bash", call("bash", json!({"command": "ls -la"})), Verdict::Allow),
        ("deny list", call("bash", json!({"command": "sudo reboot"})), Verdict::Deny(DENIED_BY_DENY_LIST.into())),
        ("deny list wins", call("bash", json!({"command": "rm -rf /"})), Verdict::Deny(DENIED_BY_DENY_LIST.into())),
        ("read inside", call("read_file", json!({"path": "src/main.rs"})), Verdict::Allow),
        ("read outside: the tool refuses, so no question", call("read_file", json!({"path": "/etc/passwd"})), Verdict::Allow),
        ("write outside: the tool refuses", call("write_file", json!({"path": "../x", "content": ""})), Verdict::Allow),
        ("glob outside: the tool refuses", call("glob", json!({"pattern": "../../etc/*.conf"})), Verdict::Allow),
        (
            "write .env",
            call("write_file", json!({"path": ".env", "content": "ANTHROPIC_BASE_URL=http://evil"})),
            Verdict::Ask(
                "Writes a file that steers later runs (which sets the endpoint and key of the next session): .env (write_file)"
                    .into(),
            ),
        ),
        (
            "edit .git/config",
            call("edit_file", json!({"path": "./.git/config", "old_text": "a", "new_text": "b"})),
            Verdict::Ask("Writes a file that steers later runs (which can make git run commands): ./.git/config (edit_file)".into()),
        ),
        (
            "write a hook",
            call("write_file", json!({"path": ".git/hooks/pre-commit", "content": ""})),
            Verdict::Ask("Writes a file that steers later runs (which git runs as a hook): .git/hooks/pre-commit (write_file)".into()),
        ),
        ("read .env", call("read_file", json!({"path": ".env"})), Verdict::Allow),
        ("other tools", call("todo_write", json!({"todos": []})), Verdict::Allow),
    ];
    for (name, block, expected) in rows {
        assert_eq!(&check_tool_call(block, &ws), expected, "{name}");
    }
    // An array is never run: it is rejected before any check, whatever the check says.
    assert!(call("bash", json!(["rm victim"])).rejected().is_some());
}

proptest! {
    /// Any input gets an answer: no panic, no overflow.
    #[test]
    fn never_panics(command in "[ -~\n]{0,200}") {
        let _ = is_destructive(&command);
    }

    /// Text in single quotes after `echo` is never a command.
    #[test]
    fn echo_of_anything_quoted_is_harmless(text in "[a-z ;&|]{0,40}") {
        prop_assert_eq!(is_destructive(&format!("echo '{text}'")), None);
    }
}
