//! The permission check as a table: each command form with its verdict, judged in a real
//! workspace (and, where it asks, what an `a` answer would allow), plus the verdicts of
//! `check_tool_call` for the other tools, the session's allowances, and a property test of
//! destructive forms in random wrappers.
//!
//! The workspace holds `v`, `f`, `file`, `x`, `notes.txt`, `dir/v` and `.git/`; a form that
//! "overwrites" names one of them, a form that "creates" names something that is not there.

use std::sync::{Arc, Mutex};

use agent_core::approve::{Answer, Approver, Question};
use agent_core::dispatch::ToolCall;
use agent_core::events::Event;
use agent_core::permission::{
    Allowance, AlwaysAllowed, DENIED_BY_DENY_LIST, SessionApprover, Source, Verdict, check_tool_call,
    is_destructive,
};
use agent_core::test_util::tool_call;
use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;
use proptest::prelude::*;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    /// Runs unasked.
    Allow,
    /// Asks, and offers no `a` (or which `a` does not matter).
    Ask,
    /// Asks, and `a` would allow exactly these programs (comma-separated) for the session.
    Always(&'static str),
    /// Asks every time: no `a`, and no allowance, waives it.
    Every,
    /// Refused by the deny list.
    Deny,
}
use V::{Allow, Always, Ask, Deny, Every};

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
    ("ours: not read-only", "git commit -m \"rm x\"", Always("git commit")),
    ("ours: not a destructive word, not a known program", "model list", Always("model")),
    ("ours: not a destructive word, not a known program", "pseudocode", Always("pseudocode")),
    ("harmless", "printf \"rm x\\n\"", Allow),
    ("harmless", "command -v rm", Allow),
    ("harmless", "echo 'x; rm y'", Allow),
    ("harmless", "ls # rm x", Allow),
    ("harmless", "cat <<'EOF'\nrm x\nEOF", Allow),
    ("grammar: a here-document body sh expands", "cat <<EOF\nrm x $HOME\nEOF", Ask),
    ("harmless", "cat rm", Allow),
    ("ours: not a destructive word, not a known program", "rmdirs", Always("rmdirs")),
    ("harmless", "cat /etc/hosts", Allow),
    ("harmless", "wc -l < /etc/hosts", Allow),
    ("harmless", "cp /etc/hosts ./hosts", Allow),
    ("harmless", "echo x | tee out.txt", Allow),
    ("harmless", "echo x > new.txt", Allow),
    ("harmless", "echo x >> notes.txt", Allow),
    ("ours: runs build scripts and tests", "cargo build && cargo test", Always("cargo build, cargo test")),
    ("ours: runs build scripts and tests", "cargo test 2>&1 | tail -20", Always("cargo test")),
    ("grammar: a compound command and a variable", "for f in *.py; do echo $f; done", Ask),
    ("grammar: a compound command and a variable", "case $x in a) echo a;; *) echo b;; esac", Ask),
    ("harmless", "awk '{print $1}' f", Allow),
    ("grammar: a variable", "echo ${HOME:-/tmp}", Ask),
    ("harmless", "[ -d out ] || mkdir -p out", Allow),
    ("ours: not read-only", "git rm --cached x", Always("git rm")),
    ("harmless", "sh -c 'ls -la'", Allow),
    ("harmless", "bash -lc 'git status && git diff'", Allow),
    ("ours: a script file", "sh script.sh rm", Always("sh")),
    ("ours: a script file", "python3 script.py", Always("python3")),
    ("ours: installed code", "python3 -m pytest -q", Always("python3")),
    ("harmless", "sed -n '1,20p' f", Allow),
    ("harmless", "sed 's/a/b/g' f > new.txt", Allow),
    ("harmless", "find . -name '*.rs'", Allow),
    ("harmless", "find . -name '*.o' -exec ls -l {} +", Allow),
    ("harmless", "ls | xargs cat", Allow),
    ("ours: an unknown variable", "env FOO=1 cargo test", Ask),
    ("ours: runs build scripts and tests", "timeout 5 cargo test", Always("cargo test")),
    ("ours: runs the Makefile", "nice -n 10 make", Always("make")),
    ("ours: runs hooks", "git checkout -b feature", Always("git checkout")),
    ("ours: runs hooks", "git checkout main", Always("git checkout")),
    ("ours: not read-only", "git restore --staged f", Always("git restore")),
    ("ours: not read-only", "git clean -n", Always("git clean")),
    ("ours: runs hooks, the network", "git push origin main", Always("git push")),
    ("harmless", "git log --oneline | head", Allow),
    ("harmless", "cp f copy.txt", Allow),
    ("harmless", "cp -n f v", Allow),
    ("ours: changes what exists", "mv f renamed.txt", Always("mv")),
    ("harmless", "ln -s f link", Allow),
    ("harmless", "tar -czf new.tgz dir", Allow),
    ("false positive", "dd if=f of=/dev/null", Deny),
    ("harmless", "mkdir -p a/b && touch a/b/c", Allow),
    ("harmless", "echo hi >&2", Allow),
    ("harmless", "echo hi > /dev/stderr", Allow),
    ("harmless", "cat f | tee /dev/tty", Allow),
    ("ours: unknown variables", "X=1 Y=$HOME ls", Ask),
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
    ("interpreter", "python -c 'print(1)'", Always("python")),
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
    // getopt's clusters: a value option after flags in one word takes the rest of the word.
    ("wrapper: clustered option", "env -iS'rm v'", Ask),
    ("wrapper: clustered option", "env -vS'rm v'", Ask),
    ("wrapper: clustered option", "env -i -S 'ls' -S 'rm v'", Ask),
    ("wrapper: clustered option", "time -po v true", Ask),
    ("wrapper: clustered option", "time -qo v true", Ask),
    ("wrapper: clustered option", "env -iC.git/hooks cp prepare-commit-msg.sample prepare-commit-msg", Ask),
    ("wrapper: clustered option", "env -iC.git/hooks tee -a prepare-commit-msg", Ask),
    ("wrapper: clustered option", "env -iC.memory tee planted.md", Ask),
    ("wrapper: clustered option", "env -iCsub tee HEAD", Ask),
    // env -S puts its split words before the rest of the line, split by rules of its own.
    ("wrapper: env -S", "env -Senv rm v", Every),
    ("wrapper: env -S", "env -S '' rm v", Every),
    ("wrapper: env -S", "env -S'#' rm v", Every),
    ("wrapper: env -S", "env -Stimeout 5 rm v", Every),
    ("wrapper: env -S", "nohup env -S env rm v", Every),
    ("wrapper: env -S", "env -S 'find v -maxdepth 0 -exec\\_rm v ;'", Every),
    ("wrapper: env -S", "env -S 'ls'", Every),
    // xargs' --eof and --max-lines take a value only after `=`.
    ("wrapper: xargs optional value", "xargs --eof rm echo v", Ask),
    ("wrapper: xargs optional value", "xargs --max-lines rm echo v", Ask),
    ("wrapper: xargs optional value", "xargs --eof sh cat", Ask),
    // The replace string in a cluster.
    ("wrapper: xargs replace in a cluster", "echo rm | xargs -rIcat env cat v", Ask),
    ("wrapper: xargs replace in a cluster", "echo rm | xargs -0Icat nice cat v", Ask),
    ("wrapper: xargs replace in a cluster", "echo rm | xargs -ricat timeout 9 cat v", Ask),
    // After a folder change a write may be to .git/hooks: no allowance waives it.
    ("writers: after a folder change", "env -C .git/hooks cp ../../x pre-commit", Every),
    ("writers: after a folder change", "sh -c 'cd .git/hooks; cp ../../x pre-commit'", Every),
    ("writers: after a folder change", "cd .git && ln -s ../x hooks/pre-commit", Every),
    // git with its folder or arguments known only when it runs.
    ("git: another repository, asked whatever was allowed", "cd sub; git pwn", Every),
    ("git: another repository, asked whatever was allowed", "env -C sub git pwn", Every),
    ("git: another repository, asked whatever was allowed", "printf '%s\\n' -C sub pwn | xargs git", Every),
    (
        "git: another repository, asked whatever was allowed",
        "find sub -maxdepth 0 -exec git -C {} pwn \\;",
        Every,
    ),
    ("git: another repository, asked whatever was allowed", "echo sub | xargs -I{} git -C {} pwn", Every),
    ("git: another repository, asked whatever was allowed", "git --namespace=x -C sub pwn", Every),
    ("git: another repository, asked whatever was allowed", "cd sub && git gc", Every),
    ("git: another repository, asked whatever was allowed", "git -C \"$d\" pwn", Every),
    // The third round.
    ("printf -v attached", "bash -c \"printf -vPS4 %s '\\$(touch PWNED)'; set -x; true\"", Ask),
    ("printf -v attached", "printf -vHOME %s /x", Always("printf")),
    ("printf -v attached", "printf '-va[$(touch P)]' 1", Ask),
    ("ln backup replaces", "ln -sb payload v", Ask),
    ("ln backup replaces", "ln -b payload v", Ask),
    ("ln backup replaces", "ln -S .old -s payload v", Ask),
    ("ln backup replaces", "ln --suffix=.old -s payload v", Ask),
    ("ln to a steering file", "ln -s .git/config c", Every),
    ("ln to a steering file", "ln -s .git/hooks h", Every),
    ("ln to a steering file", "ln -s .env e", Every),
    ("steering names in a line that asks", "git log -1 --format=x --output=.git/config", Every),
    ("steering names in a line that asks", "sed -n 's/a/b/;w .env' f", Every),
    ("steering names in a line that asks", "awk 'BEGIN{print \"x\" > \".env\"}'", Every),
    ("steering names in a line that asks", "find f -fprintf .env x", Every),
    ("steering names in a line that asks", "find f -fprint .git/hooks/pre-commit", Every),
    ("steering names in a line that asks", "time -o .env -f x true", Every),
    ("steering names in a line that asks", "uniq f .env", Every),
    ("steering names in a line that asks", "xxd f .env", Every),
    ("steering names in a line that asks", "flock .git/index.lock true", Every),
    ("git runs a program", "git ls-remote --upload-pack='touch P;' .", Every),
    ("git runs a program", "git ls-remote -u 'touch P;' .", Every),
    ("git config subcommands", "git config edit", Every),
    // The fourth round.
    ("/dev/fd after a read redirection", "echo pwned 3<v >/dev/fd/3", Ask),
    ("/dev/fd after a read redirection", "echo pwned 1<v >>/dev/stdout", Ask),
    ("/dev/fd after a read redirection", "echo pwned 2<v >/dev/stderr", Ask),
    ("/dev/fd after a read redirection", "echo x 3<.env >>/dev/fd/3", Every),
    ("/dev/fd after a read redirection", "flock v -c 'echo pwned > /dev/fd/3'", Ask),
    ("harmless", "echo done >> /dev/stderr", Allow),
    ("second operand after --", "uniq -- -x v", Ask),
    ("second operand after --", "xxd -- -x v", Ask),
    ("second operand after --", "uniq -- -x .env", Every),
    ("second operand after --", "uniq -- -m .memory/pref.md", Every),
    ("ln -i replaces", "ln -si /etc/hostname v", Ask),
    ("cp -n overridden", "cp -ni s v", Ask),
    ("cp -n overridden", "cp --no-clobber --interactive s v", Ask),
    ("wrapper", "command rm v", Ask),
    ("wrapper", "exec rm v", Ask),
    ("wrapper", "nice rm v", Ask),
    ("wrapper", "nice -n 5 rm v", Ask),
    ("wrapper", "nice -5 rm v", Ask),
    ("wrapper", "nohup rm v &", Ask),
    ("wrapper", "timeout 5 rm v", Always("rm")),
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
    ("destroys", "rm v", Always("rm")),
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
    ("destroys", "git clean -fdx", Always("git clean")),
    ("destroys", "git checkout -- f", Ask),
    ("destroys", "git checkout f", Ask),
    ("destroys", "git checkout .", Ask),
    ("destroys", "git restore f", Ask),
    ("destroys", "git reset --hard", Always("git reset")),
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
    ("destroys", "sort -o v f", Always("sort")),
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
    // ── issue 30: forms that destroyed or overwrote their victim without a question ──
    ("bundled flags", "curl -sSo v https://example.com", Always("curl")),
    ("bundled flags", "sort -uo v f", Always("sort")),
    ("bundled flags", "echo x | sort -uo v", Always("sort")),
    ("bundled flags", "echo ANTHROPIC_BASE_URL=http://evil | sort -uo .env", Ask),
    ("git writer", "git log --output=v", Always("git log")),
    ("git writer", "git show --output=v", Always("git show")),
    ("git writer", "git diff --output=v", Always("git diff")),
    ("git writer", "git archive -o v HEAD", Always("git archive")),
    ("git writer", "git bundle create v HEAD", Always("git bundle")),
    ("compressor", "gzip v", Always("gzip")),
    ("compressor", "xz v", Always("xz")),
    ("compressor", "bzip2 v", Always("bzip2")),
    ("compressor", "zstd --rm v", Always("zstd")),
    ("editor", "printf ',d\\nw\\nq\\n' | ed -s v", Always("ed")),
    ("editor", "ex -sc '%d|x' v", Always("ex")),
    ("editor", "vim -es -c '%d|x' v", Always("vim")),
    ("editor", "vim -es -c '!rm v' -c q", Always("vim")),
    ("runner", "setarch x86_64 rm v", Always("setarch")),
    ("runner", "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='rm v' f", Always("tar")),
    ("runner", "tar -cf x.tar --use-compress-program='rm v #' f", Always("tar")),
    ("runner", "BASH_ENV=./s.sh bash -c true", Ask),
    ("here-doc script", "sh /dev/stdin <<E\nrm v\nE", Always("sh")),
    ("here-doc script", "python3 /dev/stdin <<E\nimport os; os.remove('v')\nE", Always("python3")),
    ("here-doc script", "awk -f /dev/stdin <<E\nBEGIN { system(\"rm v\") }\nE", Always("awk")),
    ("here-doc script", "make -f /dev/stdin <<E\nall:\n\trm v\nE", Always("make")),
    ("helper", "echo v | xargs -I{} sh -c ': > {}'", Always("sh")),
    ("grammar: a function definition", "f() { env mv v v.gone; }; f", Ask),
    ("pushed off screen", "rm -f important.txt\n\n\n\n\n\n\n\n\n\necho cleaning build cache", Always("rm")),
    ("invisible", "rm\u{200b} v", Always("rm\u{200b}")),
    // ── the same families, further ──
    ("option forms", "sort --output=v f", Always("sort")),
    ("option forms", "sort --outp=v f", Always("sort")),
    ("option forms", "sort -ov f", Always("sort")),
    ("option forms", "sort --compress-program=sh f", Always("sort")),
    ("option forms", "shuf -o v f", Always("shuf")),
    ("option forms", "uniq f v", Always("uniq")),
    ("option forms", "xxd f v", Always("xxd")),
    ("option forms", "sed --in=.bak d v", Always("sed")),
    ("option forms", "sed -ni 1p v", Always("sed")),
    ("option forms", "sed -f script.sed f", Always("sed")),
    ("grammar: a variable", "sort $F", Ask),
    ("option forms", "sort f *.txt", Always("sort")),
    ("option forms", "rg --pre ./x pat", Always("rg")),
    ("option forms", "rg -iz pat", Always("rg")),
    ("option forms", "rg x *.rs", Always("rg")),
    ("option forms", "file -C -m magic", Always("file")),
    ("option forms", "printf -v x '%s' y", Always("printf")),
    ("careful: an abbreviation git refuses", "git diff --outp=v", Always("git diff")),
    ("git", "git diff --output v", Always("git diff")),
    ("git", "git log --output v", Always("git log")),
    ("git", "git grep -O x", Always("git grep")),
    ("git", "git grep --open-files-in-pager=sh x", Always("git grep")),
    ("git: another repository, asked whatever was allowed", "git -C dir status", Every),
    ("git: another repository, asked whatever was allowed", "git --git-dir=elsewhere log", Every),
    ("git", "git -c core.pager='rm v' -p log", Ask),
    ("git", "GIT_PAGER='rm v' git log", Ask),
    ("git", "HOME=. git log", Ask),
    ("git: another repository, asked whatever was allowed", "cd dir && git status", Every),
    ("git: another repository, asked whatever was allowed", "env -Cdir git status", Every),
    ("git: another repository, asked whatever was allowed", "git --work-tree=dir status", Every),
    ("git: another repository", "GIT_DIR=dir git status", Ask),
    ("grammar: a variable", "git log $X", Ask),
    ("git", "git branch topic", Always("git branch")),
    ("git", "git tag v1", Always("git tag")),
    ("git", "git stash", Always("git stash")),
    ("git: writes .git/config", "git config user.name x", Ask),
    ("git: writes .git/config", "git remote add x y", Ask),
    ("git: writes .git/config", "git push -u origin main", Ask),
    ("git: writes .git/config", "git branch --set-upstream-to=origin/main", Ask),
    ("git: writes .git/config", "git checkout -t origin/x", Ask),
    ("git: writes .git/config", "git init", Ask),
    ("git", "git reflog expire --all", Always("git reflog")),
    ("git", "git commit -qm x", Always("git commit")),
    ("find", "find . -name v -exec rm {} +", Always("rm")),
    ("find", "find . -fprint v", Always("find")),
    ("grammar: a variable", "find $D -name x", Ask),
    ("find", "find . -execdir sh -c 'rm {}' \\;", Always("sh")),
    ("awk", "awk -i inplace '{}' v", Always("awk")),
    ("awk", "awk 'BEGIN { print \"x\" > \"v\" }'", Always("awk")),
    ("awk", "mawk -f prog.awk f", Always("mawk")),
    ("grammar: a variable", "awk \"$P\" f", Ask),
    ("writers", "cp f .env", Ask),
    ("writers", "cp -r dir .", Always("cp")),
    ("writers", "cp -rn dir/. .", Always("cp")),
    ("writers", "cp f ~/x", Always("cp")),
    ("writers", "cp -s .env e2; echo K=v >> e2", Ask),
    ("writers", "ln .env e2 && echo K=v >> e2", Ask),
    ("writers", "ln -s x .env", Ask),
    ("writers", "mkdir .git/hooks", Ask),
    ("writers", "touch .env", Ask),
    ("grammar: a variable", "mkdir -p $D", Ask),
    ("writers", "echo K=v | tee .env", Ask),
    ("writers", "echo K=v | tee -a .env", Ask),
    ("writers", "exec 3>>notes.txt; echo > /dev/fd/3", Ask),
    ("writers", "echo x > ~/x", Ask),
    ("writers", "exec 3<>v", Ask),
    ("network", "cat < /dev/tcp/example.com/80", Ask),
    ("network: a write to a device", "exec 3<>/dev/tcp/example.com/80", Deny),
    ("arithmetic", "echo $[x]", Ask),
    ("arithmetic", "((x = y))", Ask),
    ("concurrent", "(sleep 1; echo K >> x) & ln -s .env x", Ask),
    ("concurrent", "echo K >> n1 | ln -s .env n1", Ask),
    ("concurrent", "sh -c 'echo K >> y' & sh -c 'ln -s .env y'", Ask),
    ("links", "ln -s / r && echo x > r/etc/f", Ask),
    ("links", "ln -s / r && cp v r/tmp/", Always("cp")),
    ("links", "cp -r dir b && cp f b/x", Always("cp")),
    ("case", "echo x > .ENV", Ask),
    ("case", "cp f .Git/config", Ask),
    ("git", "git remote -v update", Ask),
    ("old tar", "tar cfz v dir", Always("tar")),
    ("old tar", "tar czf new.tgz dir", Allow),
    ("option forms", "tree -R -H . -L 1", Always("tree")),
    ("writers", ": > v", Ask),
    ("writers: after a folder change", "env -C dir touch new", Every),
    ("writers", "flock .env true", Ask),
    ("writers", "cp f .git", Ask),
    ("writers", "echo 'gitdir: x' > .git", Ask),
    ("arithmetic", "echo ${a[f]}", Ask),
    ("arithmetic", "echo ${x:f}", Ask),
    ("arithmetic", "echo ${!x}", Ask),
    ("arithmetic", "echo ${x@P}", Ask),
    ("arithmetic", "cat <<E\n${a[f]}\nE", Ask),
    ("arithmetic", "[[ $x -eq 1 ]]", Ask),
    ("arithmetic", "[[ x -lt 1 ]]", Ask),
    ("arithmetic", "[[ -v $x ]]", Ask),
    ("arithmetic", "[ -v x ]", Ask),
    ("arithmetic", "test -v 'a[$(rm v)]'", Ask),
    ("arithmetic", "[ $x ]", Ask),
    ("arithmetic", "[ \"$a\" \"$b\" ]", Ask),
    ("arithmetic", "declare -i x=1", Ask),
    ("arithmetic", "let x=1", Always("let")),
    ("variables", "PATH=.:$PATH ls", Ask),
    ("variables", "LD_PRELOAD=./x.so ls", Ask),
    ("variables", "export PATH=.", Ask),
    ("variables", "for PATH in .; do ls; done", Ask),
    ("variables", "read PATH < f", Ask),
    ("variables", "TAR_OPTIONS=--to-command=sh tar -tf x.tar", Ask),
    ("variables", "http_proxy=http://evil ls", Ask),
    ("variables", "declare -n x=PATH", Ask),
    ("paths", "./sort f", Always("./sort")),
    ("paths", "tools/ls", Always("tools/ls")),
    ("paths", "/usr/bin/sort -o v f", Always("sort")),
    ("paths", "/tmp/evil/ls", Always("/tmp/evil/ls")),
    ("grammar: a carriage return, which the grammar takes for a blank", "ls\r", Ask),
    ("shells", "bash -ic ls", Always("bash")),
    ("shells", "zsh -c ls", Always("zsh")),
    ("shells", "sh -s < s.sh", Always("sh")),
    ("shells", "bash s.sh", Always("bash")),
    ("shells", "bash --rcfile x -c ls", Always("bash")),
    ("grammar: a variable", "sh -c \"$S\"", Ask),
    ("grammar: a variable", "timeout $T ls", Ask),
    ("wrappers", "xargs --process-slot-var=X cat", Always("xargs")),
    ("wrappers", "echo f | xargs sort -o v", Always("sort")),
    ("wrappers", "echo f | xargs -I% cp % v", Always("cp")),
    ("unknown programs", "python3 x.py", Always("python3")),
    ("unknown programs", "node x.js", Always("node")),
    ("unknown programs", "./build.sh", Always("./build.sh")),
    ("unknown programs", "npm test", Always("npm test")),
    ("unknown programs", "cargo check", Always("cargo check")),
    ("unknown programs", "cargo test --release", Always("cargo test")),
    ("unknown programs", "python3 x.py .env", Ask),
    ("unknown programs", "python3 -c \"open('.env','w')\"", Ask),
    ("unknown programs", "gunzip v.gz", Always("gunzip")),
    ("unknown programs", "split -l 1 f", Always("split")),
    ("unknown programs", "perl -i -pe 's/.*//' v", Always("perl")),
    ("unknown programs", "sqlite3 db 'drop table t'", Always("sqlite3")),
    ("unknown programs", "shopt -s extdebug", Always("shopt")),
    ("unknown programs", "function f { rm v; }", Ask),
    // ── harmless forms that must still run unasked ──
    ("harmless", "ls", Allow),
    ("harmless", "ls -la dir", Allow),
    ("harmless", "cat f x", Allow),
    ("harmless", "grep -rn pattern .", Allow),
    ("harmless", "grep x *.py", Allow),
    ("harmless", "rg pattern", Allow),
    ("harmless", "rg -i -g '*.rs' pattern src", Allow),
    ("harmless", "find . -type f -name '*.rs'", Allow),
    ("harmless", "find . -newer v -print", Allow),
    ("harmless", "head -n 5 f", Allow),
    ("harmless", "tail -n 5 f", Allow),
    ("harmless", "wc -l f x", Allow),
    ("harmless", "git status --short", Allow),
    ("harmless", "git log --oneline -5", Allow),
    ("harmless", "git diff HEAD~1 --stat", Allow),
    ("harmless", "git diff --output-indicator-new=+ HEAD", Allow),
    ("harmless", "git show HEAD:f", Allow),
    ("harmless", "git branch -a", Allow),
    ("harmless", "git tag -l 'v*'", Allow),
    ("harmless", "git stash list", Allow),
    ("harmless", "git config --get user.name", Allow),
    ("harmless", "git remote -v", Allow),
    ("harmless", "git --no-pager log -1", Allow),
    ("harmless", "jq . f", Allow),
    ("harmless", "diff f x", Allow),
    ("harmless", "stat f", Allow),
    ("harmless", "du -sh .", Allow),
    ("harmless", "sort -u f", Allow),
    ("harmless", "sort -t, -k2 f", Allow),
    ("harmless", "uniq -c f", Allow),
    ("harmless", "xxd f", Allow),
    ("grammar: a variable", "echo ${#x} ${#arr[@]} ${x%.rs}", Ask),
    ("grammar: a variable", "[ \"$x\" ]", Ask),
    ("grammar: a variable", "[ -f \"$f\" ] && echo yes", Ask),
    ("grammar: a variable", "[ \"$a\" = \"$b\" ]", Ask),
    ("grammar: a variable", "[ ! -f \"$f\" ] && echo missing", Ask),
    ("grammar: bash's [[ ]], which sh lacks", "[[ $x == y* ]]", Ask),
    ("grammar: bash's [[ ]], which sh lacks", "[[ -n $x && $y =~ ^a ]]", Ask),
    ("harmless", "LANG=C ls", Allow),
    ("grammar: export and a variable", "export x=1; echo $x", Ask),
    ("grammar: a variable", "f=1; echo $f", Ask),
    ("grammar: a variable", "read -r line < f; echo $line", Ask),
    ("harmless", "set -euo pipefail; ls", Allow),
    ("harmless", "/usr/bin/cat f", Allow),
    ("grammar: a variable", "printf '%s\\n' \"$x\"", Ask),
    ("harmless", "echo x >> /dev/stdout", Allow),
    ("harmless", "xargs -a f cat", Allow),
    ("harmless", "nohup ls", Allow),
    ("harmless", "env -C dir ls", Allow),
    ("harmless", "command -V rm", Allow),
    ("harmless", "bash -c 'ls'", Allow),
    ("harmless", "sh -euc 'ls; cat f'", Allow),
    ("harmless", "tar -tzf a.tgz", Allow),
    ("harmless", "cp -r dir dir2", Allow),
    ("ours: a link to a steering file asks", "ln -s .env e2", Every),
    ("harmless", "echo x | tee -a notes.txt", Allow),
    ("harmless", "git --version", Allow),
    ("harmless", "sleep 1 & wait", Allow),
    ("harmless: wide characters in options", "read -ééa x", Allow),
    ("harmless", "git config user.email", Allow),
    ("harmless", "git config --global --get user.name", Allow),
    ("harmless", "mkdir -p out && cp f out/", Allow),
    ("harmless", "mkdir out2 && cp f out2", Allow),
    ("harmless", "cp f newdir/", Allow),
    ("grammar: a function definition", "f() { ls; }; f", Ask),
    ("grammar: a compound command and a variable", "while read -r l; do echo $l; done < f", Ask),
    // ── the forms that ran unasked before the check read commands with the bash grammar ──
    ("runtime command", "echo rm v | xargs env", Ask),
    ("runtime command", "echo rm v | xargs nohup", Ask),
    ("runtime command", "echo rm v | xargs nice", Ask),
    ("runtime command", "echo 5 rm v | xargs timeout", Ask),
    ("runtime command", "echo rm v | xargs timeout 5", Ask),
    ("runtime command", "echo f rm v | xargs flock", Ask),
    ("runtime command", "echo rm v | xargs -I{} env {}", Ask),
    ("runtime command", "find . -exec env {} \\;", Ask),
    ("long option prefix", "sed --expr='w v' p", Always("sed")),
    ("long option prefix", "sed --expression 'w v' p", Always("sed")),
    ("long option prefix", "sed --e='1e rm v' p", Always("sed")),
    ("long option prefix", "sed --in d v", Always("sed")),
    ("long option prefix: ambiguous, sed refuses", "sed --s p f", Always("sed")),
    ("long option prefix", "sed --quiet --expr=p f", Allow),
    ("quotes inside ${}", "echo ${x:-'}'} ; rm v #'", Ask),
    ("compound assignment", "bash -c \"declare -a x='(\\$(rm v))'\"", Ask),
    ("compound assignment", "x=($(rm v))", Ask),
    ("function anywhere", "rm v; rm() { :; }", Ask),
    ("function anywhere", "ls; ls() { rm v; }", Ask),
    ("sh reads it otherwise", "cat <<$'E'\nE\nrm v\nE", Ask),
    ("sh reads it otherwise", "cat <<\\E\nE\nrm v\nE", Ask),
    ("sh reads it otherwise", "echo x &> /dev/null rm v", Ask),
    ("sh reads it otherwise", "echo x |& cat", Ask),
    ("sh reads it otherwise", "echo $'\\x72m v'", Ask),
    ("sh reads it otherwise", "sort -\\\no v f", Ask),
    ("sh reads it otherwise", "echo \\ rm v", Ask),
    ("find -exec ends at ; or {} +", "find . -maxdepth 0 -exec flock + rm v \\;", Ask),
    ("find -exec ends at ; or {} +", "find . -exec cat {} + -delete", Always("find")),
    ("jobs -x runs a command", "jobs -x rm v", Always("jobs")),
    ("memory", "echo x > .memory/pref.md", Ask),
    ("memory", "cp f .memory/new.md", Ask),
    ("grammar: words after a redirection's target", "> /dev/null rm v", Always("rm")),
    ("grammar", "cat <f x", Allow),
    ("grammar", "2>/dev/null ls -la", Allow),
    ("grammar", "cat <<'EOF' > new.txt\nrm x $HOME\nEOF", Allow),
    ("grammar", "cat <<EOF | sh\nrm v\nEOF", Always("sh")),
    ("grammar", "echo {rm,v}", Allow),
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

/// The verdict on a `bash` command in `ws`.
fn verdict(ws: &Workspace, command: &str) -> Verdict {
    check_tool_call(&call(ws, "bash", json!({ "command": command })), ws)
}

#[test]
fn every_command_form_gets_its_verdict() {
    assert!(TABLE.len() >= 400, "the table has {} forms", TABLE.len());
    let (_dir, ws) = workspace();
    let mut wrong = Vec::new();
    for (kind, command, expected) in TABLE {
        let verdict = verdict(&ws, command);
        let fine = match (&verdict, expected) {
            (Verdict::Allow, Allow) | (Verdict::Deny(_), Deny) | (Verdict::Ask(_), Ask) => true,
            (Verdict::Ask(q), Always(programs)) => q.always.join(", ") == *programs,
            (Verdict::Ask(q), Every) => q.always.is_empty(),
            _ => false,
        };
        if !fine {
            wrong.push(format!("[{kind}] {command:?}: expected {expected:?}, got {verdict:?}"));
        }
    }
    assert!(wrong.is_empty(), "{} of {} wrong:\n{}", wrong.len(), TABLE.len(), wrong.join("\n"));
}

#[test]
fn reasons_say_why() {
    let (_dir, ws) = workspace();
    let reason = |command: &str| match verdict(&ws, command) {
        Verdict::Ask(q) => q.text,
        other => format!("{other:?}"),
    };
    assert_eq!(reason("echo hi && rm x"), "Destructive command (deletes files with 'rm'): echo hi && rm x");
    assert_eq!(reason("echo x > v"), "Destructive command (overwrites v with '>'): echo x > v");
    assert_eq!(
        reason("$X v"),
        "Unknown command (holds a variable ($NAME or ${…}), whose value is only known when it runs): $X v"
    );
    assert_eq!(
        reason("echo 'x"),
        "Unknown command (cannot be parsed (a syntax error), so what it does cannot be known): echo 'x"
    );
    assert_eq!(
        reason("python3 x.py"),
        "Unknown command (runs 'python3', which is not on the list of known programs): python3 x.py"
    );
    assert_eq!(
        reason("echo x | sort -uo .env"),
        "Command with side effects ('sort -o' writes a file or runs a command; names .env): echo x | sort -uo .env"
    );
    assert_eq!(
        reason("git log --output=v"),
        "Command with side effects (writes a file with 'git log --output'): git log --output=v"
    );
    // Destructive only when something is known to be destroyed.
    assert_eq!(
        reason("git reset --hard"),
        "Destructive command (discards uncommitted changes with 'git reset --hard'): git reset --hard"
    );
    assert_eq!(
        reason("echo x > /etc/motd"),
        "Destructive command (writes outside the workspace (/etc/motd) with '>'): echo x > /etc/motd"
    );
    // Every reason, in order, once; the question names the most serious.
    assert_eq!(
        reason("python3 a.py; rm v; python3 b.py"),
        "Destructive command (runs 'python3', which is not on the list of known programs; deletes files with 'rm'): python3 a.py; rm v; python3 b.py"
    );
    // The whole command, never cut.
    let long = format!("echo {} && rm v", "a".repeat(300));
    assert!(reason(&long).ends_with("&& rm v"));
    // The question's parts, for a terminal that shows the reason next to `Allow?`.
    let Verdict::Ask(q) = verdict(&ws, "python3 a.py && cargo test") else { panic!("asks") };
    assert_eq!(
        q.reason,
        "Unknown command (runs 'python3', which is not on the list of known programs; runs 'cargo', which is not on the list of known programs)"
    );
    assert_eq!(q.subject, "python3 a.py && cargo test");
    assert_eq!(q.always, ["python3", "cargo test"]);
}

#[test]
fn git_runs_unasked_only_in_the_workspaces_own_repository() {
    // No .git in the workspace: its own files could make up a repository (HEAD, config, objects),
    // whose configuration (core.fsmonitor, diff.external) runs commands.
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = Workspace::new(dir.path()).expect("workspace");
    assert_eq!(verdict(&ws, "git status"), Verdict::Allow, "no repository shape: git finds the parent's");
    std::fs::write(dir.path().join("HEAD"), "ref: refs/heads/main\n").expect("write");
    assert!(matches!(verdict(&ws, "git status"), Verdict::Ask(q) if q.always.is_empty()), "no `a` waives it");
    assert!(matches!(verdict(&ws, "git log"), Verdict::Ask(_)));
    std::fs::create_dir(dir.path().join(".git")).expect("mkdir");
    assert_eq!(verdict(&ws, "git status"), Verdict::Allow, "the workspace's own .git is found first");
}

#[test]
fn appending_needs_a_plain_file() {
    let (dir, ws) = workspace();
    std::os::unix::fs::symlink(".env", dir.path().join("to_env")).expect("symlink");
    std::os::unix::fs::symlink("/etc/hostname", dir.path().join("out")).expect("symlink");
    std::fs::hard_link(dir.path().join("f"), dir.path().join("f2")).expect("hard link");
    assert_eq!(verdict(&ws, "echo x >> notes.txt"), Verdict::Allow);
    assert_eq!(verdict(&ws, "echo x >> new.txt"), Verdict::Allow);
    for command in ["echo K=v >> to_env", "echo x >> out", "echo x >> f2", "echo x | tee -a to_env"] {
        assert!(matches!(verdict(&ws, command), Verdict::Ask(_)), "{command}");
    }
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
    let (dir, ws) = workspace();
    std::os::unix::fs::symlink(".env", dir.path().join("settings")).expect("symlink");
    let call = |name: &str, input: Value| call(&ws, name, input);
    let ask = |reason: &str, subject: &str| Verdict::Ask(Question::new(reason, subject, Vec::new()));
    let rows: &[(&str, ToolCall, Verdict)] = &[
        ("harmless bash", call("bash", json!({"command": "ls -la"})), Verdict::Allow),
        (
            "deny list",
            call("bash", json!({"command": "sudo reboot"})),
            Verdict::Deny(DENIED_BY_DENY_LIST.into()),
        ),
        (
            "deny list wins",
            call("bash", json!({"command": "rm -rf /"})),
            Verdict::Deny(DENIED_BY_DENY_LIST.into()),
        ),
        ("read inside", call("read_file", json!({"path": "src/main.rs"})), Verdict::Allow),
        (
            "read outside: the tool refuses, so no question",
            call("read_file", json!({"path": "/etc/passwd"})),
            Verdict::Allow,
        ),
        (
            "write outside: the tool refuses",
            call("write_file", json!({"path": "../x", "content": ""})),
            Verdict::Allow,
        ),
        (
            "glob outside: the tool refuses",
            call("glob", json!({"pattern": "../../etc/*.conf"})),
            Verdict::Allow,
        ),
        (
            "write .env",
            call("write_file", json!({"path": ".env", "content": "ANTHROPIC_BASE_URL=http://evil"})),
            ask(
                "Writes a file that steers later runs (which sets the endpoint and key of the next session)",
                ".env (write_file)",
            ),
        ),
        (
            "edit .git/config",
            call("edit_file", json!({"path": "./.git/config", "old_text": "a", "new_text": "b"})),
            ask(
                "Writes a file that steers later runs (which can make git run commands)",
                "./.git/config (edit_file)",
            ),
        ),
        (
            "write a hook",
            call("write_file", json!({"path": ".git/hooks/pre-commit", "content": ""})),
            ask(
                "Writes a file that steers later runs (which git runs as a hook)",
                ".git/hooks/pre-commit (write_file)",
            ),
        ),
        (
            "write elsewhere under .git",
            call("write_file", json!({"path": ".git/info/attributes", "content": ""})),
            ask(
                "Writes a file that steers later runs (which git reads as its repository (configuration, hooks, history))",
                ".git/info/attributes (write_file)",
            ),
        ),
        (
            "write .env through a symlink",
            call("write_file", json!({"path": "settings", "content": "ANTHROPIC_BASE_URL=http://evil"})),
            ask(
                "Writes a file that steers later runs (which sets the endpoint and key of the next session)",
                "settings, a link to .env (write_file)",
            ),
        ),
        ("read .env", call("read_file", json!({"path": ".env"})), Verdict::Allow),
        (
            "write a memory, recalled into the next session's system prompt",
            call("write_file", json!({"path": ".memory/prefers.md", "content": "x"})),
            ask(
                "Writes a file that steers later runs (which s09 recalls into the system prompt of the next session)",
                ".memory/prefers.md (write_file)",
            ),
        ),
        (
            "a bare repository's name in a folder without .git",
            call("write_file", json!({"path": "sub/HEAD", "content": "ref: refs/heads/main"})),
            ask(
                "Writes a name git reads at the root of a bare repository, in sub, which has no .git (its config can make git run commands)",
                "sub/HEAD (write_file)",
            ),
        ),
        (
            "under refs/ in a folder without .git",
            call("edit_file", json!({"path": "dir/refs/heads/x", "old_text": "a", "new_text": "b"})),
            ask(
                "Writes a name git reads at the root of a bare repository, in dir, which has no .git (its config can make git run commands)",
                "dir/refs/heads/x (edit_file)",
            ),
        ),
        (
            "HEAD beside the workspace's own .git",
            call("write_file", json!({"path": "HEAD", "content": "x"})),
            Verdict::Allow,
        ),
        ("other tools", call("todo_write", json!({"todos": []})), Verdict::Allow),
    ];
    for (name, block, expected) in rows {
        assert_eq!(&check_tool_call(block, &ws), expected, "{name}");
    }
    // An array is never run: it is rejected before any check, whatever the check says.
    assert!(call("bash", json!(["rm victim"])).rejected().is_some());
}

/// An approver that counts its questions and answers from a script.
struct Counting {
    answers: Vec<Answer>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Approver for Counting {
    fn ask(&mut self, question: &str) -> bool {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).push(question.to_string());
        false
    }
    fn answer(&mut self, question: &Question) -> Answer {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).push(question.text.clone());
        if self.answers.is_empty() { Answer::No } else { self.answers.remove(0) }
    }
}

/// `a` allows the program for the rest of the session: the next `python3` runs unasked, `rm`
/// still asks, and `.env` is asked about whatever is allowed; `--allow cargo` covers every cargo
/// subcommand; a revoked allowance asks again.
#[test]
fn always_allows_that_program_for_the_session_and_nothing_else() {
    let (_dir, ws) = workspace();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let allowed = AlwaysAllowed::new();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = {
        let lines = Arc::clone(&lines);
        Arc::new(move |event: &Event<'_>| {
            if let Event::Line(_, text) = event {
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(text.to_string());
            }
        })
    };
    let scripted = Counting {
        answers: vec![Answer::Always, Answer::No, Answer::No, Answer::No],
        asked: Arc::clone(&asked),
    };
    let mut approver = SessionApprover::new(Box::new(scripted), allowed.clone(), sink);
    let mut answer = |command: &str| match verdict(&ws, command) {
        Verdict::Ask(q) => approver.answer(&q),
        other => panic!("{command}: {other:?}"),
    };
    assert_eq!(answer("python3 x.py"), Answer::Always);
    assert_eq!(allowed.list(), [Allowance { program: "python3".into(), source: Source::Answer }]);
    assert_eq!(answer("python3 y.py"), Answer::Yes, "not asked again");
    assert_eq!(answer("rm v"), Answer::No, "another program still asks");
    assert_eq!(answer("python3 x.py && rm v"), Answer::No, "so does a line that also runs it");
    assert_eq!(answer("python3 x.py > .env"), Answer::No, ".env still asks");
    assert_eq!(asked.lock().unwrap_or_else(|e| e.into_inner()).len(), 4, "python3 was asked once");
    assert!(allowed.allow("cargo", Source::Flag));
    assert!(!allowed.allow("cargo test", Source::Flag), "covered already");
    assert!(allowed.covers("cargo test") && allowed.covers("cargo check") && !allowed.covers("cargoes"));
    assert_eq!(answer("cargo test && cargo check"), Answer::Yes);
    assert!(allowed.allow("git", Source::Flag));
    assert_eq!(answer("git commit -qm x"), Answer::Yes, "all of git is allowed");
    assert_eq!(answer("git config core.fsmonitor ./x"), Answer::No, ".git/config still asks");
    assert!(allowed.revoke("git"));
    assert!(allowed.revoke("python3"));
    assert_eq!(answer("python3 x.py"), Answer::No, "revoked: asked again");
    assert_eq!(allowed.clear(), 1);
    let lines = lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert_eq!(
        lines[0],
        "[permission] python3 is allowed for the rest of this session (/permissions revokes it)"
    );
    assert_eq!(lines[1], "[permission] not asked: python3 is allowed for this session (/permissions)");
}

/// Programs with rules of their own, for [`never_panics_on_any_text`].
const PROGRAMS: &[&str] = &[
    "read",
    "set",
    "declare",
    "export",
    "test",
    "[",
    "[[",
    "cp",
    "ln",
    "mkdir",
    "touch",
    "tee",
    "tar",
    "uniq",
    "sed",
    "awk",
    "find",
    "git",
    "git config",
    "git branch",
    "sort",
    "printf",
    "xargs",
    "env",
    "nice",
    "timeout",
    "flock",
    "sh -c",
    "bash",
    "cd",
    "for",
    "echo",
];

/// Destructive forms, each of which must ask wherever it stands.
const DESTRUCTIVE: &[&str] = &[
    "rm v",
    "mv v w",
    "> v",
    "echo x > v",
    "sort -uo v f",
    "gzip v",
    "sed -i d v",
    "python3 x.py",
    "git log --output=v",
    "cp /dev/null v",
    "tee v < f",
    "tar -cf x --checkpoint-action=exec=sh f",
    "vim -es -c q v",
    "curl -o v http://x",
    "dd of=v",
    "truncate -s0 v",
    "find . -delete",
    "$X v",
    "echo x | sort -o .env",
    "perl -pi -e 1 v",
];

/// Wrappers around a command, a function, pipes, here-documents, xargs and shells: `{}` is where
/// the command goes.
const WRAPPED: &[&str] = &[
    "{}",
    "env {}",
    "nice {}",
    "nohup {}",
    "timeout 5 {}",
    "command {}",
    "exec {}",
    "time {}",
    "stdbuf -o0 {}",
    "setsid {}",
    "env LANG=C {}",
    "f() {{ {}; }}; f",
    "echo a | {}",
    "{} | cat",
    "echo a && {}",
    "false || {}",
    "( {} )",
    "{{ {}; }}",
    "if true; then {}; fi",
    "for i in 1; do {}; done",
    "while false; do :; done; {}",
    "cat <<'E' >/dev/null\nhello\nE\n{}",
    "sh -c '{}'",
    "bash -c '{}'",
    "sh -ec '{}'",
    "sh <<'E'\n{}\nE",
    "echo '{}' | sh",
    "echo v | xargs -I@ sh -c '{}'",
    "find . -exec sh -c '{}' \\;",
    "flock /tmp/l -c '{}'",
];

proptest! {
    /// Any input gets an answer: no panic, no overflow.
    #[test]
    fn never_panics(command in "[ -~\n]{0,200}") {
        let _ = is_destructive(&command);
    }

    /// Any text, wide characters included, in the places where options and paths are read.
    #[test]
    fn never_panics_on_any_text(word in "\\PC{0,12}", program in 0..PROGRAMS.len()) {
        let (_dir, ws) = workspace();
        for form in ["{p} -{w}", "{p} -{w} x", "{p} --{w}=x", "{p} {w} {w}", "{p} -t {w} x", "{w}={w} {p}"] {
            let command = form.replace("{p}", PROGRAMS[program]).replace("{w}", &word);
            let _ = verdict(&ws, &command);
        }
    }

    /// Text in single quotes after `echo` is never a command.
    #[test]
    fn echo_of_anything_quoted_is_harmless(text in "[a-z ;&|]{0,40}") {
        prop_assert_eq!(is_destructive(&format!("echo '{text}'")), None);
    }

    /// Random compositions of destructive forms with wrappers, functions, pipes, here-documents
    /// and xargs always ask, nested up to three deep (the single-quoted wrappers are only used
    /// where the form holds no single quote).
    #[test]
    fn destructive_forms_ask_whatever_wraps_them(
        form in 0..DESTRUCTIVE.len(),
        wraps in proptest::collection::vec(0..WRAPPED.len(), 0..4),
    ) {
        let (_dir, ws) = workspace();
        let mut command = DESTRUCTIVE[form].to_string();
        for w in wraps {
            let wrapper = WRAPPED[w];
            if wrapper.contains('\'') && command.contains('\'') {
                continue;
            }
            command = wrapper.replace("{{", "\u{1}").replace("}}", "\u{2}").replace("{}", &command)
                .replace('\u{1}', "{").replace('\u{2}', "}");
        }
        prop_assert!(matches!(verdict(&ws, &command), Verdict::Ask(_) | Verdict::Deny(_)), "{command:?} runs unasked");
        prop_assert!(is_destructive(&command).is_some(), "{command:?} without a workspace");
    }
}
