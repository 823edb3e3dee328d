//! The `/goal` command, read before anything reaches the loop (course s17, `AgentSession.submit`).
//!
//! | typed | command |
//! |---|---|
//! | `/goal` | [`GoalCommand::Status`]: the goal's status; no model call |
//! | `/goal clear` (or `stop`, `off`, `reset`, `none`, `cancel`, any case) | [`GoalCommand::Clear`] |
//! | `/goal <condition>` | [`GoalCommand::Set`]: the condition becomes the goal **and** the user's message |
//! | anything else | not a goal command: the text goes to the loop as it is |
//!
//! The line is trimmed first; the condition is what follows `/goal ` (a space), trimmed.

/// The words that clear the goal after `/goal ` (course: `CLEAR_ALIASES`; Claude Code's `/goal`
/// has the same).
pub const CLEAR_ALIASES: [&str; 6] = ["clear", "stop", "off", "reset", "none", "cancel"];

/// What a `/goal` line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalCommand {
    /// `/goal`: show the goal's status.
    Status,
    /// `/goal clear` or an alias: drop the goal.
    Clear,
    /// `/goal <condition>`: set (or replace) the goal; the condition is sent as the user's message.
    Set(String),
}

impl GoalCommand {
    /// The command `text` holds, or `None` when it is not a goal command.
    pub fn parse(text: &str) -> Option<GoalCommand> {
        let stripped = text.trim();
        if stripped == "/goal" {
            return Some(GoalCommand::Status);
        }
        let argument = stripped.strip_prefix("/goal ")?.trim();
        if CLEAR_ALIASES.iter().any(|alias| argument.eq_ignore_ascii_case(alias)) {
            return Some(GoalCommand::Clear);
        }
        Some(GoalCommand::Set(argument.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_lines_are_read_as_the_course_reads_them() {
        assert_eq!(GoalCommand::parse("  /goal  "), Some(GoalCommand::Status));
        assert_eq!(GoalCommand::parse("/goal CLEAR"), Some(GoalCommand::Clear));
        assert_eq!(GoalCommand::parse("/goal   tests pass  "), Some(GoalCommand::Set("tests pass".into())));
        assert_eq!(GoalCommand::parse("/goals"), None);
        assert_eq!(GoalCommand::parse("what is /goal"), None);
        assert_eq!(
            GoalCommand::parse("/goal clear the cache"),
            Some(GoalCommand::Set("clear the cache".into()))
        );
    }
}
