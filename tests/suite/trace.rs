//! End-to-end: `--trace FILE` of the real chapter binaries, and the page `trace FILE` makes of
//! it, loaded in a real headless Chromium (through chromedriver) and driven as a learner does:
//! the buttons, the arrow keys, the timeline.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use e2e::{MockServer, chapter, chapters, have_or_skip, package_bin, reply, stderr, stdout};
use serde_json::{Value, json};

/// Runs `name --demo --trace trace.jsonl` in a fresh folder; returns the folder, the trace's
/// lines (each parsed: a line that is not JSON fails the test) and the output.
fn demo_trace(name: &str) -> (tempfile::TempDir, Vec<Value>, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = chapter(name, dir.path(), None).args(["--demo", "--trace", "trace.jsonl"]).output().unwrap();
    assert!(out.status.success(), "{name} --demo failed: {}", stderr(&out));
    let lines = trace_lines(&dir.path().join("trace.jsonl"));
    (dir, lines, out)
}

/// Every line of the trace at `path`, parsed; panics naming a line that is not a JSON object.
fn trace_lines(path: &Path) -> Vec<Value> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("no trace at {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .map(|(i, line)| match serde_json::from_str::<Value>(line) {
            Ok(value) if value.is_object() => value,
            _ => panic!("line {} of the trace is not a JSON object: {line}", i + 1),
        })
        .collect()
}

/// The lines of `type` `kind`.
fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// Runs the `trace` binary on `trace`; returns the page's path.
fn make_page(trace: &Path) -> PathBuf {
    let out = Command::new(package_bin("trace", "trace")).arg(trace).output().unwrap();
    assert!(out.status.success(), "trace failed: {}", stderr(&out));
    let page = PathBuf::from(format!("{}.html", trace.display()));
    assert!(stdout(&out).contains(&format!("wrote {}", page.display())), "{}", stdout(&out));
    page
}

/// Every request is followed by the response of its own lane, before that lane's next request:
/// an answer with its usage, or the API's refusal (s08's demo replays a `prompt is too long`).
fn assert_each_request_is_answered(lines: &[Value]) {
    for (i, request) in lines.iter().enumerate().filter(|(_, l)| l["type"] == "request") {
        let lane = &request["lane"];
        let next = lines[i + 1..]
            .iter()
            .find(|l| l["lane"] == *lane && (l["type"] == "request" || l["type"] == "response"));
        assert!(
            next.is_some_and(
                |l| l["type"] == "response" && (l["response"]["usage"].is_object() || l["error"].is_string())
            ),
            "request seq {} of lane {lane} has no response (usage or error) after it",
            request["seq"]
        );
    }
}

#[test]
fn an_s06_demo_trace_has_every_request_and_the_childs_in_their_own_lane() {
    let (dir, lines, out) = demo_trace("s06");
    assert!(stderr(&out).contains("[trace] recording this session to trace.jsonl"), "{}", stderr(&out));
    assert_eq!(lines[0]["type"], "trace");
    assert_eq!(lines[0]["chapter"], "s06");
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=lines.len() as u64).collect::<Vec<_>>(), "numbered in order");
    let requests = of_type(&lines, "request");
    let lanes: Vec<&str> = requests.iter().map(|r| r["lane"].as_str().unwrap()).collect();
    assert!(lanes.contains(&"main") && lanes.contains(&"subagent 1"), "{lanes:?}");
    assert_each_request_is_answered(&lines);
    // The child's first request is exactly its prompt, and nothing of the parent.
    let child = requests.iter().find(|r| r["lane"] == "subagent 1").unwrap();
    assert_eq!(child["request"]["messages"].as_array().unwrap().len(), 1);
    let task = of_type(&lines, "tool_call").into_iter().find(|c| c["name"] == "task").unwrap();
    assert_eq!(child["request"]["messages"][0]["content"], task["input"]);
    // The child's tool calls are recorded in its lane, not as the parent's.
    let child_tools = of_type(&lines, "tool_call").into_iter().filter(|c| c["lane"] == "subagent 1").count();
    assert!(child_tools > 0);
    let started = lines.iter().position(|l| l["text"] == "[Subagent started]").unwrap();
    let first_child = lines.iter().position(|l| l["lane"] == "subagent 1").unwrap();
    assert!(started < first_child, "the mechanism's line comes before the child's requests");
    // The page: one step per request.
    let page = fs::read_to_string(make_page(&dir.path().join("trace.jsonl"))).unwrap();
    assert_eq!(page.matches(" data-step=\"").count(), requests.len());
    assert_eq!(
        page.matches("data-lane=\"subagent 1\"").count(),
        lanes.iter().filter(|l| **l == "subagent 1").count()
    );
}

#[test]
fn an_s08_demo_trace_shows_each_compaction_layer_where_it_acted() {
    let (_dir, lines, _) = demo_trace("s08");
    assert_each_request_is_answered(&lines);
    let mechanism: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "line" && l["level"] == "mechanism")
        .map(|(i, l)| (i, l["text"].as_str().unwrap()))
        .collect();
    for layer in ["[micro-compact:", "[snip:", "[auto compact]", "[compacted:"] {
        assert!(mechanism.iter().any(|(_, t)| t.starts_with(layer)), "no {layer} line in {mechanism:?}");
    }
    // The auto compaction's summary is a request of its own, in the side-call lane; the main
    // lane's request after `[compacted: …]` is far smaller than the one before it.
    let side = of_type(&lines, "request").into_iter().filter(|r| r["lane"] == "side call").count();
    assert!(side >= 1);
    let (compacted, _) = *mechanism.iter().find(|(_, t)| t.starts_with("[compacted:")).unwrap();
    let size = |r: &Value| r["request"]["messages"].to_string().len();
    let main = |l: &&Value| l["type"] == "request" && l["lane"] == "main";
    let before = lines[..compacted].iter().rev().find(main).map(size).unwrap();
    let after = lines[compacted..].iter().find(main).map(size).unwrap();
    assert!(after * 5 < before, "{after} is not far below {before}");
}

/// Every chapter's demo writes a trace whose page has a step per request, and the page marks the
/// chapter's mechanism where it acted.
#[test]
fn every_demo_writes_a_trace_and_its_page_marks_the_chapters_mechanism() {
    let mechanism = [
        ("s06", "subagent"),
        ("s07", "skill"),
        ("s08", "compaction"),
        ("s09", "memory"),
        ("s11", "background"),
        ("s12", "cron"),
        ("s17", "goal"),
    ];
    for name in chapters() {
        let (dir, lines, _) = demo_trace(&name);
        assert_each_request_is_answered(&lines);
        let requests = of_type(&lines, "request").len();
        assert!(requests > 0, "{name}: no request in the trace");
        let page = fs::read_to_string(make_page(&dir.path().join("trace.jsonl"))).unwrap();
        assert_eq!(page.matches(" data-step=\"").count(), requests, "{name}: a step per request");
        if let Some((_, kind)) = mechanism.iter().find(|(c, _)| *c == name) {
            assert!(page.contains(&format!("data-mark=\"{kind}\"")), "{name}: no {kind} mark on its page");
        }
    }
}

#[test]
fn a_two_session_demo_appends_both_sessions_to_one_trace() {
    let (_dir, lines, _) = demo_trace("s09");
    let headers: Vec<&Value> = of_type(&lines, "trace");
    assert!(headers.len() >= 2, "one header per process: {headers:?}");
    assert_ne!(headers[0]["pid"], headers[1]["pid"]);
    assert_each_request_is_answered(&lines);
}

/// A key and a withheld secret: in `.env`, then in the environment. The model's tool reads
/// `.env` and its answer repeats what it read, so both reach what the trace would record.
#[test]
fn no_trace_holds_the_key_or_a_withheld_secret() {
    const DOTENV_KEY: &str = "sk-ant-api03-dotenv-key-0123456789";
    const DOTENV_SECRET: &str = "postgres://app:s3cret-pass@db/prod";
    const ENV_KEY: &str = "sk-ant-api03-environment-key-987654";
    const ENV_TOKEN: &str = "ghp_environmentToken123456";
    let run = |dotenv: &str, env: &[(&str, &str)], said: &str| {
        let ws = tempfile::tempdir().unwrap();
        fs::write(ws.path().join(".env"), dotenv).unwrap();
        let server = MockServer::start(vec![
            reply::tool_uses(&[("c1", "bash", json!({"command": "cat .env; env"}))]),
            reply::text(said),
        ]);
        let mut cmd = chapter("s02", ws.path(), Some(&server.base_url()));
        cmd.envs(env.iter().copied()).args(["--trace", "t.jsonl", "-p", "show me .env"]);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let text = fs::read_to_string(ws.path().join("t.jsonl")).unwrap();
        trace_lines(&ws.path().join("t.jsonl"));
        text
    };
    let text = run(
        &format!("ANTHROPIC_API_KEY={DOTENV_KEY}\nDATABASE_URL={DOTENV_SECRET}\n"),
        &[],
        &format!("Your key is {DOTENV_KEY} and the database {DOTENV_SECRET}"),
    );
    assert!(!text.contains(DOTENV_KEY) && !text.contains("dotenv-key"), "the .env key leaked: {text}");
    assert!(!text.contains("s3cret-pass"), "the .env secret leaked: {text}");
    assert!(text.contains("Your key is [REDACTED] and the database [REDACTED]"), "{text}");
    let text = run(
        "MODEL_ID=mock-model\n",
        &[("ANTHROPIC_API_KEY", ENV_KEY), ("GITHUB_TOKEN", ENV_TOKEN)],
        &format!("Your key is {ENV_KEY}, your token {ENV_TOKEN}"),
    );
    assert!(
        !text.contains(ENV_KEY) && !text.contains(ENV_TOKEN),
        "a secret of the environment leaked: {text}"
    );
    assert!(text.contains("Your key is [REDACTED], your token [REDACTED]"), "{text}");
}

#[test]
fn a_trace_that_cannot_be_written_stops_the_start_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = chapter("s02", dir.path(), None)
        .args(["--demo", "--trace", "no/such/folder/t.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot record a trace to no/such/folder/t.jsonl"), "{}", stderr(&out));
}

#[test]
fn trace_in_the_repl_starts_shows_and_stops_a_recording() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("first"), reply::text("second")]);
    let out = e2e::run_with_stdin(
        chapter("s02", ws.path(), Some(&server.base_url())),
        "/trace\n/trace t.jsonl\none\n/trace\n/trace off\ntwo\n",
    );
    let text = stdout(&out);
    assert!(text.contains("Not recording."), "{text}");
    assert!(text.contains("Recording this session to t.jsonl"), "{text}");
    assert!(text.contains("Stopped recording to t.jsonl"), "{text}");
    let lines = trace_lines(&ws.path().join("t.jsonl"));
    let requests = of_type(&lines, "request");
    assert_eq!(requests.len(), 1, "only the prompt sent while recording");
    let sent = requests[0]["request"]["messages"].to_string();
    assert!(sent.contains("one") && !sent.contains("two"), "{sent}");
    assert!(of_type(&lines, "response")[0]["response"].to_string().contains("first"));
}

// ---- The page in a real browser ----

/// A chromedriver on a free loopback port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts chromedriver and waits (up to 30 s) until it listens; `None`, after saying so, when
/// Chromium or chromedriver is not installed (CI installs them from Debian's packages).
fn driver(what: &str) -> Option<Driver> {
    if !have_or_skip("chromedriver", what)
        || !(have_or_skip("chromium", what) || have_or_skip("chromium-browser", what))
    {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let driver = Driver { child, url: format!("http://127.0.0.1:{port}") };
    let listening = e2e::wait_until(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    assert!(listening, "chromedriver did not listen on port {port} within 30 s");
    Some(driver)
}

/// A headless Chromium session on `driver`, phone-width when `phone`.
async fn browser(driver: &Driver, phone: bool) -> fantoccini::Client {
    let size = if phone { "--window-size=390,844" } else { "--window-size=1200,900" };
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({"args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", size]}),
    );
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    fantoccini::ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("start headless Chromium")
}

/// Runs `body` with a browser on the page at `page`, on a runtime of its own.
fn with_page<F>(what: &str, page: &Path, phone: bool, body: F)
where
    F: AsyncFnOnce(&fantoccini::Client),
{
    let Some(driver) = driver(what) else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = browser(&driver, phone).await;
        client.goto(&format!("file://{}", page.display())).await.unwrap();
        body(&client).await;
        let _ = client.close().await;
    });
}

/// Evaluates `script` (a function body that returns a value) in the page.
async fn eval(client: &fantoccini::Client, script: &str) -> Value {
    client.execute(script, Vec::new()).await.unwrap()
}

/// Waits up to 10 s for `script` to return `true`; panics with `what` otherwise.
async fn wait_for(client: &fantoccini::Client, script: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if eval(client, script).await == json!(true) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until step `n` is the one shown: the only step not hidden, and the only element that
/// is `aria-current="step"`.
async fn wait_for_step(client: &fantoccini::Client, n: u64, after: &str) {
    let script = format!(
        "const c = document.querySelectorAll('[aria-current=\"step\"]'); \
         const shown = [...document.querySelectorAll('[data-step]')].filter(s => !s.hidden); \
         return c.length === 1 && shown.length === 1 && shown[0] === c[0] && Number(c[0].dataset.step) === {n};"
    );
    wait_for(client, &script, &format!("step {n} is the one shown, after {after}")).await;
}

async fn press(client: &fantoccini::Client, key: fantoccini::key::Key) {
    client.find(fantoccini::Locator::Css("body")).await.unwrap().send_keys(&key.to_string()).await.unwrap();
}

async fn click(client: &fantoccini::Client, css: &str) {
    client.find(fantoccini::Locator::Css(css)).await.unwrap().click().await.unwrap();
}

#[test]
fn the_s06_page_steps_with_the_controls_and_keys_and_shows_the_childs_lane() {
    use fantoccini::key::Key;
    let (dir, lines, _) = demo_trace("s06");
    let requests = of_type(&lines, "request");
    let page = make_page(&dir.path().join("trace.jsonl"));
    let child_step = requests.iter().position(|r| r["lane"] == "subagent 1").unwrap() as u64 + 1;
    with_page("the s06 page test", &page, false, async |client| {
        let steps = eval(client, "return document.querySelectorAll('[data-step]').length;").await;
        assert_eq!(steps, json!(requests.len()));
        wait_for_step(client, 1, "loading").await;
        click(client, "#next").await;
        wait_for_step(client, 2, "Next").await;
        press(client, Key::Right).await;
        wait_for_step(client, 3, "the right arrow").await;
        press(client, Key::Left).await;
        wait_for_step(client, 2, "the left arrow").await;
        click(client, "#prev").await;
        wait_for_step(client, 1, "Previous").await;
        press(client, Key::End).await;
        wait_for_step(client, requests.len() as u64, "End").await;
        press(client, Key::Home).await;
        wait_for_step(client, 1, "Home").await;
        // Play moves on by itself, and Pause stops it.
        click(client, "#play").await;
        wait_for_step(client, 2, "Play").await;
        click(client, "#play").await;
        assert_eq!(
            eval(client, "return document.getElementById('play').getAttribute('aria-pressed');").await,
            "false"
        );
        // The child's lane: a row of the timeline, and its steps marked with their lane.
        click(client, &format!("a[data-goto=\"{child_step}\"]")).await;
        wait_for_step(client, child_step, "a bar of the timeline").await;
        let lane =
            eval(client, "return document.querySelector('[aria-current=\"step\"]').dataset.lane;").await;
        assert_eq!(lane, "subagent 1");
        let row =
            eval(client, "return !!document.querySelector('[data-lane-row=\"subagent 1\"] a.bar');").await;
        assert_eq!(row, json!(true));
        let mark = eval(client, "return document.querySelector('[aria-current=\"step\"] [data-mark=\"subagent\"]')?.innerText ?? null;").await;
        assert!(mark.as_str().is_some_and(|t| t.contains("[Subagent started]")), "{mark}");
        // The new blocks of the shown step are marked, and say so in words (colours off).
        let new = eval(
            client,
            "return [...document.querySelectorAll('[aria-current=\"step\"] .block[data-new=\"true\"]')]\
             .filter(b => b.offsetParent !== null && b.innerText.includes('NEW')).length;",
        )
        .await;
        assert_eq!(new, json!(1), "the child's one prompt is new");
        let old = eval(
            client,
            "return document.querySelectorAll('section[data-step=\"3\"] .block[data-new=\"false\"]').length;",
        )
        .await;
        assert!(old.as_u64().unwrap() >= 1, "step 3 carries blocks sent before");
    });
}

#[test]
fn the_s08_page_marks_each_compaction_and_its_bar_drops() {
    let (dir, _, _) = demo_trace("s08");
    let page = make_page(&dir.path().join("trace.jsonl"));
    with_page("the s08 page test", &page, true, async |client| {
        let marks = eval(
            client,
            "return [...document.querySelectorAll('[data-mark=\"compaction\"]')].map(m => m.innerText);",
        )
        .await;
        let marks =
            marks.as_array().unwrap().iter().map(|m| m.as_str().unwrap().to_owned()).collect::<Vec<_>>();
        for layer in ["[micro-compact:", "[snip:", "[auto compact]", "[compacted:"] {
            assert!(marks.iter().any(|m| m.contains(layer)), "no {layer} mark in {marks:?}");
        }
        // Go to the step after `[compacted: …]` with the keyboard and check its bar is lower
        // than the main lane's bar before it.
        let target = eval(
            client,
            "return Number([...document.querySelectorAll('[data-mark=\"compaction\"]')]\
             .find(m => m.innerText.includes('[compacted:')).closest('[data-step]').dataset.step);",
        )
        .await
        .as_u64()
        .unwrap();
        for _ in 1..target {
            press(client, fantoccini::key::Key::Right).await;
        }
        wait_for_step(client, target, "the arrow keys").await;
        let drop = eval(
            client,
            &format!(
                "const h = n => parseFloat(document.querySelector(`a[data-goto=\"${{n}}\"] .fill`).style.height); \
                 const main = [...document.querySelectorAll('section[data-lane=\"main\"]')].map(s => Number(s.dataset.step)); \
                 const before = main.filter(n => n < {target}).pop(); return [h(before), h({target})];"
            ),
        )
        .await;
        let (before, after) = (drop[0].as_f64().unwrap(), drop[1].as_f64().unwrap());
        // The summary replaces most of the history: the context at least halves.
        assert!(after * 2.0 < before, "the bar does not drop: {before}% then {after}%");
        // On a phone-width screen nothing is wider than the screen but the timeline, which scrolls.
        let wide =
            eval(client, "return document.documentElement.scrollWidth <= window.innerWidth + 1;").await;
        assert_eq!(wide, json!(true), "the page scrolls sideways on a phone");
    });
}

#[test]
fn a_hostile_tool_result_stays_text_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">";
    let lines = [
        json!({"seq": 1, "lane": "main", "type": "request", "request": {"system": hostile, "messages": [{"role": "user", "content": hostile}]}}),
        json!({"seq": 2, "lane": "main", "type": "response", "response": {"content": [{"type": "text", "text": hostile}], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        json!({"seq": 3, "lane": hostile, "type": "tool_result", "name": hostile, "content": hostile, "is_error": false}),
    ];
    let trace = dir.path().join("hostile.jsonl");
    fs::write(&trace, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let page = make_page(&trace);
    with_page("the hostile page test", &page, false, async |client| {
        wait_for_step(client, 1, "loading").await;
        assert_eq!(eval(client, "return window.pwned === undefined;").await, json!(true));
        assert_eq!(eval(client, "return document.querySelectorAll('img, script').length;").await, json!(1));
        let shown =
            eval(client, "return document.querySelector('[data-step=\"1\"] .type-text pre').innerText;")
                .await;
        assert_eq!(shown, hostile);
    });
}
