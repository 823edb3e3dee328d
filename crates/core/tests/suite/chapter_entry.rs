//! The generic chapter entry point's command line, and the approvers it picks.

use std::sync::{Arc, Mutex};

use agent_core::approve::{Approver, ScriptedApprover};
use agent_core::chapter::{self, ApprovalArgs, Chapter, Demo, NoArgs};
use clap::FromArgMatches;

const CHAPTER: Chapter = Chapter {
    name: "s99",
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
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&lines);
    let mut approver =
        ScriptedApprover::new(true, Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned())));
    assert!(approver.ask("Destructive command (deletes files with 'rm'): rm x"));
    assert_eq!(
        *lines.lock().unwrap(),
        [
            "[demo] Destructive command (deletes files with 'rm'): rm x Allow? [y/N] y (answered by the demo's script)"
        ]
    );
}
