//! The generic chapter entry point's command line, the approvers it picks, the `-p` exit codes,
//! and the terminal as the listener of the loop's events.

use std::sync::Arc;

use agent_cli::approve::is_yes;
use agent_cli::chapter::{self, ApprovalArgs, Banner, Chapter, Demo, NoArgs};
use agent_cli::cli::exit_code;
use agent_cli::ui::{Terminal, Ui};
use agent_core::agent::{Agent, TurnEnd};
use agent_core::approve::{Approver, ScriptedApprover};
use agent_core::messages::{ContentBlock, StopReason};
use agent_core::test_util::{EventLog, ScriptedModel, response, text, tool_uses};
use clap::FromArgMatches;
use serde_json::json;

const CHAPTER: Chapter = Chapter {
    name: "s99",
    banner: Banner::new("s99: Test - a chapter for this test"),
    about: "s99: a chapter for this test.",
    demo: Demo { prompt: "hi", files: &[], turns: "", show: &[] },
};

fn approval(args: &[&str]) -> Result<ApprovalArgs, clap::Error> {
    let matches = chapter::command::<ApprovalArgs>(&CHAPTER).try_get_matches_from(args)?;
    ApprovalArgs::from_arg_matches(&matches)
}

#[test]
fn both_command_lines_are_valid_and_carry_the_chapters_name_and_about() {
    for command in [chapter::command::<NoArgs>(&CHAPTER), chapter::command::<ApprovalArgs>(&CHAPTER)] {
        command.clone().debug_assert();
        assert_eq!(command.get_name(), "s99");
        assert_eq!(
            command.get_about().map(|a| a.to_string()).as_deref(),
            Some("s99: a chapter for this test.")
        );
        let help = command.clone().render_help().to_string();
        assert!(help.contains("--demo") && help.contains("MODEL_ID"), "{help}");
    }
    let plain = chapter::command::<NoArgs>(&CHAPTER).render_help().to_string();
    assert!(!plain.contains("--yes"), "a chapter without the permission hook has no --yes: {plain}");
}

#[test]
fn yes_and_no_pick_fixed_answers_and_cannot_be_combined() {
    assert!(approval(&["s99", "--yes"]).unwrap().approver().ask("q"));
    assert!(!approval(&["s99", "--no"]).unwrap().approver().ask("q"));
    let neither = approval(&["s99"]).unwrap();
    assert!(!neither.yes && !neither.no);
    let both = approval(&["s99", "--yes", "--no"]).unwrap_err();
    assert_eq!(both.kind(), clap::error::ErrorKind::ArgumentConflict);
    let unknown = chapter::command::<NoArgs>(&CHAPTER).try_get_matches_from(["s99", "--yes"]).unwrap_err();
    assert_eq!(unknown.kind(), clap::error::ErrorKind::UnknownArgument);
}

#[test]
fn the_scripted_approver_shows_each_question_with_its_answer() {
    let log = EventLog::new();
    let mut approver = ScriptedApprover::new(true, log.clone());
    assert!(approver.ask("Destructive command (deletes files with 'rm'): rm x"));
    assert_eq!(
        log.lines(),
        [
            "[demo] Destructive command (deletes files with 'rm'): rm x Allow? [y/N] y (answered by the demo's script)"
        ]
    );
}

#[test]
fn each_stop_reason_has_its_exit_code() {
    let cases = [
        (StopReason::EndTurn, 0),
        (StopReason::StopSequence, 0),
        (StopReason::ToolUse, 0),
        (StopReason::MaxTokens, 5),
        (StopReason::PauseTurn, 5),
        (StopReason::Refusal, 3),
        (StopReason::ModelContextWindowExceeded, 4),
        (StopReason::Other("new_reason".into()), 6),
    ];
    for (stop, code) in cases {
        let end = TurnEnd::Answered(Box::new(response(vec![ContentBlock::text("x")], stop.clone())));
        assert_eq!(exit_code(&end), code, "{stop:?}");
    }
    assert_eq!(exit_code(&TurnEnd::PromptBlocked("no".into())), 0);
}

/// A turn of a scripted model, shown by the terminal listener into a buffer: `(stdout, stderr)`.
fn shown(script: Vec<agent_core::messages::MessagesResponse>, show_usage: bool) -> (String, String) {
    let (ui, captured) = Ui::captured();
    let terminal = Arc::new(Terminal::new(ui, show_usage));
    let dir = tempfile::tempdir().unwrap();
    let ws = agent_core::workspace::Workspace::new(dir.path()).unwrap();
    let mut agent = Agent::builder(Arc::new(ScriptedModel::new(script)), "m")
        .tools(agent_core::tools::all(&ws, &agent_core::tools::ToolOptions::default()))
        .events(terminal)
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(agent.run_turn(&mut Vec::new(), "go")).unwrap();
    (captured.stdout(), captured.stderr())
}

#[test]
fn the_terminal_shows_tool_lines_answers_and_stop_notes() {
    let script = vec![
        tool_uses(&[("t1", "glob", json!({"pattern": "*.nothing"}))]),
        response(vec![ContentBlock::text("cut")], StopReason::MaxTokens),
    ];
    let (out, err) = shown(script, true);
    assert_eq!(out, "> glob: *.nothing\n(no matches)\ncut\n");
    assert_eq!(
        err,
        "error: The answer was cut off: the model reached max_tokens (8000).\n[usage] 2 requests: 0 input tokens, 0 output tokens\n"
    );
    let (out, err) = shown(vec![text("")], false);
    assert_eq!((out.as_str(), err.as_str()), ("", "(the model sent an empty answer)\n"));
}

#[test]
fn yes_means_y_or_yes() {
    for (answer, yes) in
        [("y\n", true), ("YES", true), (" yes ", true), ("", false), ("n", false), ("yep", false)]
    {
        assert_eq!(is_yes(answer), yes, "{answer:?}");
    }
}

#[test]
fn a_demo_is_split_into_sessions_at_its_demo_session_lines() {
    let one = Demo { prompt: "hi", files: &[], turns: "{\"a\":1}\n{\"b\":2}\n", show: &[] };
    let sessions = one.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!((sessions[0].prompt.as_str(), sessions[0].turns.as_str()), ("hi", "{\"a\":1}\n{\"b\":2}\n"));

    // A response whose text mentions demo_session is a response, not a marker.
    let turns = concat!(
        "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"demo_session\"}]}\n",
        "{\"type\":\"demo_session\",\"prompt\":\"  and now?  \"}\n",
        "{\"second\":1}\n",
        "{\"type\":\"demo_session\",\"prompt\":\"third\"}\n",
    );
    let sessions = Demo { prompt: "first", files: &[], turns, show: &[] }.sessions().unwrap();
    let shape: Vec<(&str, usize)> =
        sessions.iter().map(|s| (s.prompt.as_str(), s.turns.lines().count())).collect();
    assert_eq!(shape, [("first", 1), ("and now?", 1), ("third", 0)]);

    let broken = Demo { prompt: "p", files: &[], turns: "{}\n{\"type\":\"demo_session\"}\n", show: &[] };
    assert_eq!(broken.sessions().unwrap_err(), "line 2: a demo_session line needs a \"prompt\"");
}

#[test]
fn the_demo_session_flags_are_hidden_and_need_each_other() {
    let command = chapter::command::<NoArgs>(&CHAPTER);
    let help = command.clone().render_help().to_string();
    assert!(!help.contains("--demo-session") && !help.contains("--demo-workspace"), "{help}");
    let parse = |args: &[&str]| command.clone().try_get_matches_from(args).map(|_| ()).map_err(|e| e.kind());
    assert_eq!(parse(&["s99", "--demo", "--demo-session", "2", "--demo-workspace", "/tmp"]), Ok(()));
    assert_eq!(
        parse(&["s99", "--demo", "--demo-session", "2"]),
        Err(clap::error::ErrorKind::MissingRequiredArgument)
    );
    assert_eq!(
        parse(&["s99", "--demo-session", "2", "--demo-workspace", "/tmp"]),
        Err(clap::error::ErrorKind::MissingRequiredArgument)
    );
    assert_eq!(
        parse(&["s99", "--demo", "--demo-session", "1", "--demo-workspace", "/tmp"]),
        Err(clap::error::ErrorKind::ValueValidation)
    );
}

/// `--help`'s text after the flags is wrapped by hand: no line runs past 100 columns and then
/// breaks early (a paragraph reads as one block on a wide terminal and on an 100-column one).
#[test]
fn the_environment_help_keeps_its_lines_within_100_columns() {
    let help = chapter::command::<NoArgs>(&CHAPTER).render_long_help().to_string();
    assert!(help.contains(agent_cli::cli::ENV_HELP.lines().next().unwrap_or_default()), "{help}");
    for line in agent_cli::cli::ENV_HELP.lines() {
        assert!(line.chars().count() <= 100, "a line of {} columns: {line}", line.chars().count());
    }
}
