//! The known programs: the one list of what a `bash` command may run without asking.
//!
//! The permission check runs a command unasked only when every program in it is listed here,
//! with arguments under which it only **reads** (and prints), or only **writes new files inside
//! the workspace**. Everything else asks `Allow? [y/N]`: a program that is not listed (`python3`,
//! `make`, `cargo`, `gzip`, `vim`, a script such as `./build.sh`), a listed one with an option
//! that writes or runs something (`sort -o`, `git log --output`, `find -exec rm`), and anything the
//! check cannot read before it runs. The course asks only about destructive words (`rm` and kin);
//! this stricter rule is ours (s04 README, "Why ask unless it is known").
//!
//! How to read an entry:
//! - [`READERS`]: only read, whatever their arguments, even arguments that are only known when
//!   the command runs (`cat $f`, `grep -r x *.py`).
//! - [`READERS_UNLESS`]: only read, unless one of the listed options is given. A short option
//!   such as `-o` counts alone and inside a cluster (`-uo`); a long one such as `--output` counts
//!   with `=value` and abbreviated (`--outp`), as GNU's option parser accepts it. Their arguments
//!   must be known before the command runs: a file named `-o` that a glob expands to would be an
//!   option.
//! - [`JUDGED`]: listed, each with its own rule in [`classify`](mod@super::classify) (what the rule
//!   allows is said here, in one line).
//! - [`WRAPPERS`]: run the command after their options; that command is judged in their place.
//! - [`SHELLS`]: `-c SCRIPT` is read and judged command by command; a shell reading a script
//!   file or standard input asks.
//!
//! A user who wants more, for the rest of a session, answers `a` at `Allow? [y/N]` or starts the
//! chapter with `--allow python3,cargo` ([`SUBCOMMAND_PROGRAMS`] say which programs are allowed
//! per subcommand, such as `cargo test`).

/// Programs that only read or print, whatever their arguments.
pub const READERS: &[&str] = &[
    // files and folders
    "cat",
    "ls",
    "dir",
    "vdir",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "stat",
    "du",
    "df",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "pwd",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "diff",
    "cmp",
    "comm",
    "od",
    "hexdump",
    "hd",
    "strings",
    "jq",
    // text filters
    "echo",
    "cut",
    "paste",
    "join",
    "nl",
    "rev",
    "tac",
    "tr",
    "fold",
    "fmt",
    "column",
    "expand",
    "unexpand",
    "numfmt",
    "seq",
    "expr",
    "factor",
    // the system, read-only
    "id",
    "whoami",
    "groups",
    "logname",
    "uname",
    "arch",
    "nproc",
    "uptime",
    "free",
    "ps",
    "tty",
    "locale",
    "getconf",
    "printenv",
    "which",
    "whereis",
    "type",
    "cal",
    // doing nothing
    "true",
    "false",
    ":",
    "sleep",
    "yes",
    "exit",
    "return",
    "break",
    "continue",
    "shift",
];

/// Programs that only read unless given one of these options (see the module docs for how an
/// option is matched). Their arguments must be known before they run.
pub const READERS_UNLESS: &[(&str, &[&str])] = &[
    ("sort", &["-o", "--output", "--compress-program"]),
    ("shuf", &["-o", "--output"]),
    ("rg", &["-z", "--pre", "--pre-glob", "--search-zip", "--hostname-bin"]),
    ("fd", &["-x", "-X", "--exec", "--exec-batch"]),
    ("fdfind", &["-x", "-X", "--exec", "--exec-batch"]),
    ("file", &["-C", "--compile"]),
    ("tree", &["-o", "-R"]),
    ("base64", &["-o", "--output"]),
    ("base32", &["-o", "--output"]),
    ("date", &["-s", "--set"]),
    ("printf", &["-v"]),
    ("wait", &["-p"]),
    // `jobs -x COMMAND` runs the command.
    ("jobs", &["-x"]),
];

/// Programs with a rule of their own in [`classify`](mod@super::classify): (name, what runs unasked).
pub const JUDGED: &[(&str, &str)] = &[
    ("git", "read-only subcommands (GIT_READS) without --output, in the workspace's own repository"),
    ("find", "without -delete or -fprint; -exec and -execdir only with a known command (ended by ; or {} +)"),
    ("sed", "without -i, -f, and without the script commands e, w, W (options read as GNU sed reads them)"),
    ("awk", "a literal program without system, |, > or @; no -f; also mawk, gawk, nawk"),
    ("cp", "onto new files inside the workspace (not .env, not under .git)"),
    ("ln", "a new link inside the workspace"),
    ("mkdir", "inside the workspace"),
    ("touch", "inside the workspace"),
    ("tee", "onto new files, or appending to plain files, inside the workspace"),
    ("tar", "listing (-t), or creating (-c) a new archive, with plain options only"),
    ("uniq", "one input, no output file"),
    ("xxd", "one input, no output file"),
    ("test", "no -v or -R, and no operator that is only known when it runs; also ["),
    ("cd", "changes the folder; after it, every write asks (also pushd, popd)"),
    ("set", "shell options e, u, x, v, f, C and -o pipefail and kin, or -- ARGS"),
    ("read", "into variables by the variable rule"),
];

/// Wrappers: each runs the command after its own options, which is then judged in its place
/// (`timeout 5 rm v` asks as `rm v` does). `xargs` and `find -exec` give that command arguments
/// only known when it runs, so it must be a reader; a wrapper left without a command there (`echo
/// rm v | xargs env`) gets its command when it runs, and asks.
pub const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "stdbuf", "time", "command", "builtin", "exec", "xargs", "setsid",
    "ionice", "taskset", "flock",
];

/// Shells whose `-c SCRIPT` is read and judged command by command. (Others, such as `zsh` or
/// `fish`, have their own syntax and always ask.)
pub const SHELLS: &[&str] = &["sh", "bash", "dash", "ash", "ksh", "mksh"];

/// Git subcommands that only read (with no `--output`; `grep` also without `-O`). `branch`,
/// `tag`, `remote`, `stash`, `config` and `reflog` count only in their listing forms.
pub const GIT_READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "shortlog",
    "describe",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "grep",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "count-objects",
    "whatchanged",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "check-attr",
    "cherry",
    "version",
    "branch",
    "tag",
    "remote",
    "stash",
    "config",
    "reflog",
];

/// Variables a command may set unasked, besides any name with a lower-case letter (a shell
/// variable such as `f` or `out_dir`; but not `http_proxy` and its kin). Any other upper-case name
/// may tell a program where to find code or what to run (`PATH`, `LD_PRELOAD`, `BASH_ENV`,
/// `GIT_*`, `PAGER`, `TAR_OPTIONS`…), so setting it asks. A name ending in `*` is a prefix.
/// (`IFS` only changes how the shell splits what it expands, and the check already takes every
/// expansion as unknown.)
pub const HARMLESS_VARIABLES: &[&str] = &[
    "IFS",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "COLUMNS",
    "LINES",
    "CI",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "RUST_TEST_THREADS",
    "CARGO_TERM_COLOR",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "NODE_ENV",
    "DEBUG",
    "VERBOSE",
];

/// Programs whose first argument says what they do: an `a` answer (or `--allow`) for one of
/// them names the pair, such as `git commit` or `cargo test`, unless it names the program alone
/// (`--allow cargo`).
pub const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "go",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pipenv",
    "conda",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "gh",
    "rustup",
    "dotnet",
    "mvn",
    "gradle",
    "brew",
    "apt",
    "apt-get",
    "systemctl",
    "make",
];

/// Folders whose programs count as the programs of this list when named by their path
/// (`/usr/bin/cat`). A command named by any other path (`./build.sh`, `tools/sort`) is a program
/// or script this check cannot read, and asks.
pub const SYSTEM_DIRS: &[&str] = &["/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"];

/// What kind of entry a program name has in this list, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// In [`READERS`].
    Reader,
    /// In [`READERS_UNLESS`], with its unsafe options.
    ReaderUnless(&'static [&'static str]),
    /// In [`JUDGED`] (or one of its kin: `[`, `pushd`, `popd`, `readonly`, …).
    Judged,
    /// In [`WRAPPERS`].
    Wrapper,
    /// In [`SHELLS`].
    Shell,
}

/// The entry of the program named `name` (a bare name such as `sort`), or `None` when it is not
/// listed and asks.
pub fn entry(name: &str) -> Option<Entry> {
    if READERS.contains(&name) {
        return Some(Entry::Reader);
    }
    if let Some((_, unsafe_options)) = READERS_UNLESS.iter().find(|(n, _)| *n == name) {
        return Some(Entry::ReaderUnless(unsafe_options));
    }
    if WRAPPERS.contains(&name) {
        return Some(Entry::Wrapper);
    }
    if SHELLS.contains(&name) {
        return Some(Entry::Shell);
    }
    let kin = matches!(name, "[" | "pushd" | "popd" | "mawk" | "gawk" | "nawk");
    (kin || JUDGED.iter().any(|(n, _)| *n == name)).then_some(Entry::Judged)
}

/// `true` when a command may set the variable `name` unasked (see [`HARMLESS_VARIABLES`]).
pub fn harmless_variable(name: &str) -> bool {
    if name.chars().any(|c| c.is_ascii_lowercase()) {
        return !name.to_ascii_lowercase().ends_with("_proxy");
    }
    HARMLESS_VARIABLES.iter().any(|v| match v.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => *v == name,
    })
}

/// Every program name that can run unasked, sorted: for `/permissions`.
pub fn names() -> Vec<&'static str> {
    let mut all: Vec<&str> = READERS
        .iter()
        .copied()
        .chain(READERS_UNLESS.iter().map(|(n, _)| *n))
        .chain(JUDGED.iter().map(|(n, _)| *n))
        .chain(WRAPPERS.iter().copied())
        .chain(SHELLS.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}
