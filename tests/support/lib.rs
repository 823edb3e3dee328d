//! Support for the end-to-end tests: build and run the real chapter binaries against the loopback
//! Messages API server from `mock-api`, in a fresh temporary workspace.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub use mock_api::{MockServer, RecordedRequest, Reply, reply};
use serde_json::Value;

/// Variables that would let a test reach a real endpoint or change what a chapter reads.
const SCRUBBED: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MAX_RETRIES",
    "MODEL_ID",
    "AUTH_TYPE",
    "DISABLE_PROMPT_CACHING",
    "FALLBACK_MODEL_ID",
];

/// The one build of every chapter binary, done by the first test that needs one: `Err` holds
/// why it failed, for every test that asks.
static BUILT: OnceLock<Result<Vec<String>, String>> = OnceLock::new();

/// The path of chapter binary `name` (`s02`, `s03`, …). The first call in a test process builds
/// every chapter's binary in one `cargo build` (each package under `chapters/`, so a new chapter
/// needs no change here) and other callers wait for it, so the tests always run the current
/// source of the real package binaries. Panics with cargo's output if that build failed.
pub fn bin(name: &str) -> PathBuf {
    let chapters = match BUILT.get_or_init(build_chapters) {
        Ok(chapters) => chapters,
        Err(why) => panic!("the chapter binaries could not be built, so `{name}` cannot run: {why}"),
    };
    assert!(chapters.iter().any(|c| c == name), "`{name}` is not a chapter; the chapters are {chapters:?}");
    profile_dir().join(name)
}

/// The names of every chapter (`s01`, `s02`, …), sorted, once their binaries are built (see
/// [`bin`]).
pub fn chapters() -> Vec<String> {
    match BUILT.get_or_init(build_chapters) {
        Ok(chapters) => chapters.clone(),
        Err(why) => panic!("the chapter binaries could not be built: {why}"),
    }
}

/// The examples and binaries [`example`] and [`package_bin`] built, by `package/kind/name`: each
/// built once per test process.
static EXAMPLES: OnceLock<std::sync::Mutex<std::collections::HashMap<String, Result<PathBuf, String>>>> =
    OnceLock::new();

/// The path of example `name` of package `package` (such as the mcp crate's test MCP server),
/// built by the first call with `cargo build --example` into the target folder this test
/// executable came from. Panics with cargo's output if that build failed.
pub fn example(package: &str, name: &str) -> PathBuf {
    built_once(
        package,
        "--example",
        name,
        &Path::new("examples").join(format!("{name}{}", std::env::consts::EXE_SUFFIX)),
    )
}

/// The path of binary `name` of package `package` that is not a chapter (the `trace` page
/// maker), built by the first call with `cargo build --bin` as [`example`] builds examples.
pub fn package_bin(package: &str, name: &str) -> PathBuf {
    built_once(package, "--bin", name, Path::new(&format!("{name}{}", std::env::consts::EXE_SUFFIX)))
}

/// Builds target `name` of kind `kind` (`--example`, `--bin`) of `package` once per test
/// process, into the target folder this test executable came from; returns `relative` under its
/// profile folder. Panics with cargo's output if that build failed.
fn built_once(package: &str, kind: &str, name: &str, relative: &Path) -> PathBuf {
    let cache = EXAMPLES.get_or_init(Default::default);
    let mut built = cache.lock().unwrap_or_else(|p| p.into_inner());
    let result = built.entry(format!("{package}/{kind}/{name}")).or_insert_with(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let profile = profile_dir();
        let target =
            profile.parent().ok_or_else(|| format!("no target folder above {}", profile.display()))?;
        let out = Command::new(&cargo)
            .args(["build", "--quiet", "-p", package, kind, name])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cargo did not start: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(profile.join(relative))
    });
    match result {
        Ok(path) => path.clone(),
        Err(why) => panic!("`{name}` ({kind}) of `{package}` could not be built: {why}"),
    }
}

/// Whether `program` is installed; when it is not, says loudly on stderr that the test `what`
/// is skipped (CI installs what it can and warns about the rest).
pub fn have_or_skip(program: &str, what: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("\n!!! `{program}` IS NOT INSTALLED: {what} is SKIPPED !!!\n");
    }
    found
}

/// The profile folder holding this test executable: `target/<profile>/deps/<test>` →
/// `target/<profile>`. Cargo puts it under `CARGO_TARGET_DIR` when that is set, so looking next
/// to the executable finds the chapters wherever the run put its build.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(Path::parent).expect("target dir").to_path_buf()
}

/// Builds the binaries of all the chapters with one `cargo build -p s01 -p s02 …`, and returns
/// their names.
fn build_chapters() -> Result<Vec<String>, String> {
    let chapters = chapter_packages()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut args = vec!["build", "--quiet", "--bins"];
    for name in &chapters {
        args.extend(["-p", name.as_str()]);
    }
    let shown = format!("`{cargo} {}`", args.join(" "));
    // The build goes to the target folder this test executable came from, whatever
    // `CARGO_TARGET_DIR` says now (a test binary run by hand, or under another variable), so
    // that `bin` finds what was just built.
    let profile = profile_dir();
    let target = profile.parent().ok_or_else(|| format!("no target folder above {}", profile.display()))?;
    let out = Command::new(&cargo)
        .args(&args)
        .env("CARGO_TARGET_DIR", target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{shown} did not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(chapters)
}

/// The names of every chapter (`s01`, `s02`, …), sorted, read from `chapters/` without building
/// anything (see [`chapters`] for the built binaries).
///
/// # Panics
/// When `chapters/` cannot be listed or holds no chapter: the test's own setup failed.
pub fn chapter_names() -> Vec<String> {
    chapter_packages().unwrap_or_else(|why| panic!("{why}"))
}

/// The package names of the chapters: each folder under `chapters/` with a `Cargo.toml`, sorted.
fn chapter_packages() -> Result<Vec<String>, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../chapters");
    let listing = |e: std::io::Error| format!("cannot list the chapters in {}: {e}", root.display());
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&root).map_err(listing)? {
        let manifest = entry.map_err(listing)?.path().join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
        names.push(package_name(&text).ok_or_else(|| format!("no package name in {}", manifest.display()))?);
    }
    if names.is_empty() {
        return Err(format!("no chapter packages in {}", root.display()));
    }
    names.sort();
    Ok(names)
}

/// The `name = "…"` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name").and_then(|v| v.trim_start().strip_prefix('='))
        {
            return Some(value.trim().trim_matches('"').to_owned());
        }
    }
    None
}

/// A chapter process about to run in `workdir`, with the environment scrubbed of anything that
/// could reach a real API, colour off, and `base_url` set when given.
pub fn chapter(name: &str, workdir: &Path, base_url: Option<&str>) -> Command {
    program(&bin(name), workdir, base_url)
}

/// [`chapter`] for another program built on the library, such as the test harness
/// `runtime-harness` (`env!("CARGO_BIN_EXE_runtime-harness")`).
pub fn program(exe: &Path, workdir: &Path, base_url: Option<&str>) -> Command {
    let mut cmd = Command::new(exe);
    cmd.current_dir(workdir).env("NO_COLOR", "1");
    for var in SCRUBBED {
        cmd.env_remove(var);
    }
    if let Some(url) = base_url {
        cmd.env("ANTHROPIC_BASE_URL", url).env("MODEL_ID", "mock-model");
    }
    cmd
}

/// Runs one turn, `NAME -p PROMPT` in `workdir` against `server`, and checks what every sound
/// turn shows: the process exits 0 (else its stderr is shown), every scripted reply was used,
/// and every request kept the Messages API's rules ([`MockServer::assert_api_rules`]). Returns
/// the process's output.
pub fn one_turn(name: &str, workdir: &Path, server: &MockServer, prompt: &str) -> Output {
    one_turn_of(chapter(name, workdir, Some(&server.base_url())), server, prompt)
}

/// [`one_turn`] of a chapter command set up already (an environment variable of its own).
pub fn one_turn_of(mut cmd: Command, server: &MockServer, prompt: &str) -> Output {
    let out = cmd.args(["-p", prompt]).output().expect("run the chapter");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    server.assert_done();
    server.assert_api_rules();
    out
}

/// Runs `cmd` with `stdin` as its whole standard input and returns its output.
pub fn run_with_stdin(mut cmd: Command, stdin: &str) -> Output {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn chapter binary");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("wait for chapter binary")
}

/// The names of the tools a request sent, in order.
pub fn tool_names(request: &RecordedRequest) -> Vec<String> {
    let tools = request.body["tools"].as_array().cloned().unwrap_or_default();
    tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect()
}

/// The request's SYSTEM prompt as text, whether sent as a string or as blocks.
pub fn system_text(request: &RecordedRequest) -> String {
    match &request.body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The request bodies with the workspace's temporary path replaced by `[WORKDIR]`, for snapshots.
pub fn redacted_bodies(requests: &[RecordedRequest], workdir: &Path) -> Vec<Value> {
    let root = workdir.canonicalize().unwrap_or_else(|_| workdir.to_owned());
    let needles = [root.display().to_string(), workdir.display().to_string()];
    requests
        .iter()
        .map(|r| {
            let mut text = serde_json::to_string(&r.body).expect("serialise body");
            for n in &needles {
                text = text.replace(n.as_str(), "[WORKDIR]");
            }
            serde_json::from_str(&text).expect("re-parse body")
        })
        .collect()
}

/// The user messages of a request that carry `tool_result` blocks, as lists of blocks, without
/// the prompt-caching breakpoints (see [`unmarked`]).
pub fn result_batches(body: &Value) -> Vec<Vec<Value>> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_array())
        .filter(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
        .map(|blocks| blocks.iter().map(unmarked).collect())
        .collect()
}

/// `value` without its `cache_control` fields, at any depth: a request as the model reads it,
/// without the prompt-caching breakpoints the client adds to the last tool and to up to two
/// message blocks (`agent_core::client::cache`; `tests/suite/prompt_cache.rs` tests where they
/// go). For tests of other mechanisms that compare whole blocks.
pub fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// A chapter REPL on a pseudo-terminal, as a learner runs it: stdin, stdout and stderr are the
/// terminal, so the line editor, the spinner and Ctrl-C behave as they do for a person. Every
/// `exp_*` wait gives up after 30 s; escape codes are stripped from what the waits see.
pub fn pty_chapter(name: &str, workdir: &Path, base_url: &str) -> rexpect::session::PtySession {
    on_pty(chapter(name, workdir, Some(base_url)))
}

/// `cmd` on a pseudo-terminal, as [`pty_chapter`] runs a chapter.
pub fn on_pty(mut cmd: Command) -> rexpect::session::PtySession {
    // A terminal rustyline drives (a `dumb` or missing TERM would make it read without editing).
    cmd.env("TERM", "xterm-256color");
    let options = rexpect::session::Options::new().timeout_ms(Some(30_000)).strip_ansi_escape_codes(true);
    rexpect::session::spawn_with_options(cmd, options).expect("spawn the chapter on a pseudo-terminal")
}

/// Waits up to 30 s for `child` to exit; kills it and fails the test if it does not.
pub fn exits(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what}: the harness did not exit (it hung)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `sig` to `child`; a child already gone is not an error.
pub fn signal(child: &std::process::Child, sig: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, sig);
    }
}

/// Waits up to 30 s for `done` to hold, checking every 20 ms; `false` on timeout.
pub fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

/// The texts of a message's `text` blocks, in order; a string `content` is one text.
pub fn texts(message: &Value) -> Vec<String> {
    match &message["content"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// `text` as a [`pty_chapter`] session's waits see it: rexpect turns each byte of the output into
/// one `char`, so UTF-8 text such as `你好` is matched through its bytes.
pub fn pty_text(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// The non-ASCII characters of chapter `name`'s lesson file, `chapters/{name}/src/main.rs`, as
/// `line: character` (the course's `test_sNN_code_is_ascii`, which reads its `code.py` as ASCII:
/// the file a learner opens first displays the same in every terminal and editor encoding).
///
/// # Panics
/// When the file cannot be read: the test's own setup failed.
pub fn non_ascii_in_lesson(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../chapters").join(name).join("src/main.rs");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            line.chars().filter(|c| !c.is_ascii()).map(move |c| format!("{}: {c:?}", i + 1))
        })
        .collect()
}

/// `true` when `program` is found on this machine's `PATH` (a test that needs it says it is
/// skipped otherwise).
pub fn available(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}
