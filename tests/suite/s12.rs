//! End-to-end: the real `s12` binary (the s04 kernel and the cron scheduler) against the loopback
//! Messages API server, on a pseudo-terminal, with the scheduler's clock set (`--clock`) just
//! before a job's minute: a due job runs as a turn of its own, `[Scheduled] {prompt}`; a failed
//! request leaves it queued and the history without it; a delivered one-shot leaves
//! `.scheduled_tasks.json`; a scheduled `rm` is refused without asking; a process killed between
//! enqueue and acknowledgement delivers the job again after a restart (COURSE-s10-s17 §3).

use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};

use e2e::{MockServer, chapter, on_pty, reply, texts, wait_until};
use serde_json::{Value, json};

const PROMPT: &str = "s12 >> ";
const REFUSAL: &str = "Permission denied: scheduled turns cannot request interactive approval";
const DURABLE: &str = ".scheduled_tasks.json";

/// A clock one second before 09:00 on a Monday, running 30 times faster: a job at 09:00 fires
/// a few hundredths of a second after start-up, the next minute two seconds later.
const BEFORE_NINE: &str = "2026-08-10T08:59:59x30";

/// One saved job, as the course writes the file.
fn saved_job(id: &str, cron: &str, prompt: &str, recurring: bool, pending: bool) -> Value {
    json!({"id": id, "cron": cron, "prompt": prompt, "recurring": recurring, "durable": true,
           "pending_delivery": pending, "last_fired": null})
}

fn write_jobs(workdir: &Path, jobs: &[Value]) {
    let text = serde_json::to_string_pretty(&Value::Array(jobs.to_vec())).unwrap();
    fs::write(workdir.join(DURABLE), text).unwrap();
}

fn saved(workdir: &Path) -> Vec<Value> {
    let text = fs::read_to_string(workdir.join(DURABLE)).unwrap();
    serde_json::from_str::<Value>(&text).unwrap().as_array().cloned().unwrap()
}

/// `s12 --clock CLOCK` on a pseudo-terminal against `server`.
fn s12(workdir: &Path, server: &MockServer, clock: &str) -> rexpect::session::PtySession {
    let mut cmd = chapter("s12", workdir, Some(&server.base_url()));
    cmd.args(["--clock", clock]).env("ANTHROPIC_MAX_RETRIES", "0");
    on_pty(cmd)
}

/// The messages of request `i`.
fn messages(server: &MockServer, i: usize) -> Vec<Value> {
    server.requests()[i].body["messages"].as_array().cloned().unwrap_or_default()
}

/// The course checks `TOOLS` and `HOOKS` of the module; here, what the model is sent.
#[test]
fn test_s12_keeps_the_s04_kernel_and_adds_three_cron_tools() {
    let ws = tempfile::tempdir().unwrap();
    let server = MockServer::start(vec![reply::text("ok")]);
    let out = e2e::one_turn("s12", ws.path(), &server, "hello");
    let request = &server.requests()[0];
    assert_eq!(
        request.tool_names(),
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "schedule_cron",
            "list_crons",
            "cancel_cron"
        ]
    );
    assert_eq!(
        request.body["system"],
        format!(
            "You are a coding agent at {}. Environment: Unix-like: the bash tool runs the system shell. Use tools to solve tasks. Use schedule_cron for work that should start at a future local time.",
            ws.path().canonicalize().unwrap().display()
        )
    );
    // The four hook events of the kernel still act: UserPromptSubmit and Stop print their lines.
    let text = e2e::stdout(&out);
    assert!(text.contains("[HOOK] UserPromptSubmit") && text.contains("[HOOK] Stop"), "{text}");
    // No durable job, no file.
    assert!(!ws.path().join(DURABLE).exists());
}

/// The course's `test_import_does_not_start_runtime_threads` checks that importing the module
/// starts no thread; its counterpart here: `--help` starts nothing and writes nothing.
#[test]
fn test_import_does_not_start_runtime_threads() {
    let ws = tempfile::tempdir().unwrap();
    let out = chapter("s12", ws.path(), None).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(e2e::stdout(&out).contains("--clock"), "{}", e2e::stdout(&out));
    assert_eq!(fs::read_dir(ws.path()).unwrap().count(), 0);
}

#[test]
fn a_due_job_runs_as_a_scheduled_turn_and_a_delivered_one_shot_leaves_the_file() {
    let ws = tempfile::tempdir().unwrap();
    write_jobs(ws.path(), &[saved_job("cron_0000aaaa", "0 9 * * *", "resume the report", false, false)]);
    let server = MockServer::start(vec![reply::text("Report resumed.")]);
    let mut s = s12(ws.path(), &server, BEFORE_NINE);
    s.exp_string("[cron] loaded 1 durable job(s)").unwrap();
    s.exp_string("[cron] due cron_0000aaaa: resume the report").unwrap();
    s.exp_string("[cron] delivered cron_0000aaaa: resume the report").unwrap();
    s.exp_string("Report resumed.").unwrap();
    s.exp_string(PROMPT).unwrap();
    let sent = messages(&server, 0);
    assert_eq!(sent.len(), 1);
    assert_eq!(texts(&sent[0]), ["[Scheduled] resume the report"]);
    assert!(wait_until(|| saved(ws.path()).is_empty()), "{:?}", saved(ws.path()));
    s.send_line("q").unwrap();
    s.exp_eof().unwrap();
    server.assert_done();
    server.assert_api_rules();
}

#[test]
fn a_failed_request_leaves_the_job_queued_and_the_history_without_it() {
    let ws = tempfile::tempdir().unwrap();
    write_jobs(ws.path(), &[saved_job("cron_0000bbbb", "0 9 * * *", "check the build", true, false)]);
    let server = MockServer::start(vec![
        reply::error(400, "invalid_request_error", "try again later"),
        reply::text("Build is green."),
    ]);
    let mut s = s12(ws.path(), &server, BEFORE_NINE);
    s.exp_string("[cron] delivered cron_0000bbbb: check the build").unwrap();
    s.exp_string("try again later").unwrap();
    // Still pending in the file, and announced again from the next minute on.
    let job = &saved(ws.path())[0];
    assert_eq!(job["pending_delivery"], true, "{job}");
    s.exp_string("Build is green.").unwrap();
    s.exp_string(PROMPT).unwrap();
    // The retry's history holds the scheduled message once: the failed one left it.
    let sent = messages(&server, 1);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(texts(&sent[0]), ["[Scheduled] check the build"]);
    assert!(wait_until(|| saved(ws.path())[0]["pending_delivery"] == false));
    s.send_line("q").unwrap();
    s.exp_eof().unwrap();
}

/// The course's test calls the permission hook off the main thread with `rm build.log` and checks
/// that `input` is never called; here a scheduled turn asks to run it on a real terminal.
#[test]
fn test_scheduled_turn_never_reads_interactive_permission_input() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join("build.log"), "keep me").unwrap();
    write_jobs(ws.path(), &[saved_job("cron_0000cccc", "0 9 * * *", "delete build.log", false, false)]);
    let server = MockServer::start(vec![
        reply::tool_uses(&[("t1", "bash", json!({"command": "rm build.log"}))]),
        reply::text("I was not allowed to delete it."),
    ]);
    let mut s = s12(ws.path(), &server, BEFORE_NINE);
    s.exp_string("I was not allowed to delete it.").unwrap();
    s.exp_string(PROMPT).unwrap();
    let results = messages(&server, 1);
    let result = &results.last().unwrap()["content"][0];
    assert_eq!(result["content"], REFUSAL, "{result}");
    assert_eq!(fs::read_to_string(ws.path().join("build.log")).unwrap(), "keep me");
    s.send_line("q").unwrap();
    let rest = s.exp_eof().unwrap();
    assert!(!rest.contains("Allow?"), "nobody was asked: {rest}");
}

#[test]
fn killed_between_enqueue_and_acknowledgement_a_restart_delivers_the_job_again() {
    let ws = tempfile::tempdir().unwrap();
    write_jobs(ws.path(), &[saved_job("cron_0000dddd", "0 9 * * *", "send the digest", false, false)]);
    // The first request gets no answer until the process is killed while it waits.
    let asked = Arc::new(Mutex::new((0usize, false)));
    let seen = Arc::clone(&asked);
    let hanging = MockServer::start_fn(move |_| {
        seen.lock().unwrap().0 += 1;
        while !seen.lock().unwrap().1 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        reply::text("too late")
    });
    let mut s = s12(ws.path(), &hanging, BEFORE_NINE);
    s.exp_string("[cron] delivered cron_0000dddd: send the digest").unwrap();
    assert!(wait_until(|| asked.lock().unwrap().0 == 1));
    s.process_mut().kill(rexpect::process::Signal::SIGKILL).unwrap();
    asked.lock().unwrap().1 = true;

    // The file is whole, and says the job was not acknowledged.
    let job = &saved(ws.path())[0];
    assert_eq!((job["id"].as_str(), job["pending_delivery"].as_bool()), (Some("cron_0000dddd"), Some(true)));

    // A restart at noon: the pending job is delivered again, and then leaves the file.
    let server = MockServer::start(vec![reply::text("Digest sent.")]);
    let mut s = s12(ws.path(), &server, "2026-08-10T12:00:00");
    s.exp_string("[cron] loaded 1 durable job(s)").unwrap();
    s.exp_string("[cron] delivered cron_0000dddd: send the digest").unwrap();
    s.exp_string("Digest sent.").unwrap();
    s.exp_string(PROMPT).unwrap();
    assert_eq!(texts(&messages(&server, 0)[0]), ["[Scheduled] send the digest"]);
    assert!(wait_until(|| saved(ws.path()).is_empty()));
    s.send_line("q").unwrap();
    s.exp_eof().unwrap();
}

#[test]
fn the_demo_schedules_a_job_that_fires_and_is_delivered_as_a_turn() {
    let cwd = tempfile::tempdir().unwrap();
    let out = chapter("s12", cwd.path(), None).arg("--demo").output().unwrap();
    let text = e2e::stdout(&out);
    assert!(out.status.success(), "stdout: {text}\nstderr: {}", e2e::stderr(&out));
    let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("no {needle:?} in {text}"));
    let scheduled = at("[cron] scheduled cron_");
    let due = at("[cron] due cron_");
    let turn = at("[cron] [Scheduled] Write a stand-up note");
    let delivered = at("[cron] delivered cron_");
    let answer = at("Wrote standup.md with the two Python files");
    assert!(scheduled < due && due < turn && turn < delivered && delivered < answer, "{text}");
    // The one-shot job left the file; the recurring one stays.
    let file = &text[at("[demo] .scheduled_tasks.json after the run:")..];
    assert!(
        file.contains("\"cron\": \"0 9 * * 1-5\"") && !file.contains("\"cron\": \"30 9 * * *\""),
        "{file}"
    );
}

#[test]
fn cron_lists_each_job_with_its_next_fire_time() {
    let ws = tempfile::tempdir().unwrap();
    write_jobs(
        ws.path(),
        &[
            saved_job("cron_0000eeee", "0 9 * * 1-5", "run the tests", true, false),
            saved_job("cron_0000ffff", "0 0 30 2 *", "never comes", false, false),
        ],
    );
    let server = MockServer::start(vec![]);
    let mut cmd = chapter("s12", ws.path(), Some(&server.base_url()));
    // A Friday after nine: the weekday job fires next on Monday.
    cmd.args(["--clock", "2026-08-14T10:00:00"]);
    let out = e2e::run_with_stdin(cmd, "/cron\nq\n");
    let text = e2e::stdout(&out);
    assert!(
        text.contains(
            "cron_0000eeee  0 9 * * 1-5  next 2026-08-17 09:00  [recurring, durable]  run the tests"
        ),
        "{text}"
    );
    assert!(text.contains("cron_0000ffff  0 0 30 2 *  never  [one-shot, durable]  never comes"), "{text}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_broken_file_is_reported_and_an_invalid_entry_skipped() {
    let ws = tempfile::tempdir().unwrap();
    fs::write(ws.path().join(DURABLE), "{broken").unwrap();
    let server = MockServer::start(vec![]);
    let out = e2e::run_with_stdin(chapter("s12", ws.path(), Some(&server.base_url())), "q\n");
    let all = format!("{}{}", e2e::stdout(&out), e2e::stderr(&out));
    assert!(all.contains("[cron] could not load .scheduled_tasks.json: "), "{all}");
    // The broken file is left as it was for the user to look at.
    assert_eq!(fs::read_to_string(ws.path().join(DURABLE)).unwrap(), "{broken");

    write_jobs(
        ws.path(),
        &[
            saved_job("cron_00001111", "61 * * * *", "bad", true, false),
            saved_job("cron_00002222", "0 9 * * *", "good", true, false),
        ],
    );
    let out = e2e::run_with_stdin(chapter("s12", ws.path(), Some(&server.base_url())), "q\n");
    let all = format!("{}{}", e2e::stdout(&out), e2e::stderr(&out));
    assert!(all.contains("[cron] skipped invalid saved job: minute: Value 61 is outside [0-59]"), "{all}");
    assert!(all.contains("[cron] loaded 1 durable job(s)"), "{all}");
}

#[test]
fn test_s12_code_is_ascii() {
    let found = e2e::non_ascii_in_lesson("s12");
    assert!(found.is_empty(), "chapters/s12/src/main.rs is not ASCII: {found:?}");
}
