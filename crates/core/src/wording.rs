//! The model-facing texts that the course words differently from one chapter to another, kept in
//! one place; each chapter picks the wording its course chapter uses.
//!
//! Source: COURSE §0 and COURSE-s10-s17 §0.2, read against each chapter's `code.py`:
//!
//! | text | wording | chapters |
//! |---|---|---|
//! | an unknown tool | [`UnknownTool::Short`] `Unknown: NAME` | s01–s12 (the default of [`crate::dispatch::DispatchMap`]) |
//! | | [`UnknownTool::Long`] `Unknown tool: NAME` | s13, s14, s15 |
//! | | [`UnknownTool::Goal`] `GoalError: unknown tool 'NAME'` | s17 |
//! | a command on the deny list | [`DenyList::Plain`] `Permission denied by deny list` | s04–s07, s10–s12 (the default of the hooks) |
//! | | [`DenyList::Pattern`] `Permission denied by deny list: PATTERN` | s08, s09, s13, s14, s17 |
//! | | [`DenyList::Quoted`] `Permission denied: 'PATTERN' is on the deny list` | s15 |
//! | a `bash` command that exited non-zero | [`ExitStatusText::Note`](crate::tools::ExitStatusText::Note) the output, then a line `(exit code N)` | s01–s10 (ours; the course's s01–s10 do not report it) |
//! | | [`ExitStatusText::Error`](crate::tools::ExitStatusText::Error) `Error: command exited with status N` then the output | s11, s13, s14, s15 |
//! | | [`ExitStatusText::ErrorUncut`](crate::tools::ExitStatusText::ErrorUncut) the same, the output uncut and empty output empty | s12 |
//!
//! PATTERN is the deny-list entry the command matched, as
//! [`deny_list_match`](crate::tools::bash::deny::deny_list_match) names it.

/// How the dispatch map words the result of a call to a tool it does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownTool {
    /// `Unknown: NAME` (course s01–s12).
    #[default]
    Short,
    /// `Unknown tool: NAME` (course s13–s15).
    Long,
    /// `GoalError: unknown tool 'NAME'` (course s17).
    Goal,
}

impl UnknownTool {
    /// The `tool_result` text for a call to the tool `name`.
    pub fn text(self, name: &str) -> String {
        match self {
            UnknownTool::Short => format!("Unknown: {name}"),
            UnknownTool::Long => format!("Unknown tool: {name}"),
            UnknownTool::Goal => format!("GoalError: unknown tool '{name}'"),
        }
    }
}

/// How the permission hook words its refusal of a command on the deny list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DenyList {
    /// `Permission denied by deny list` (course s04–s07, s10–s12).
    #[default]
    Plain,
    /// `Permission denied by deny list: PATTERN` (course s08, s09, s13, s14, s17).
    Pattern,
    /// `Permission denied: 'PATTERN' is on the deny list` (course s15).
    Quoted,
}

impl DenyList {
    /// The `tool_result` text for a command that matched the deny-list entry `pattern`.
    pub fn text(self, pattern: &str) -> String {
        match self {
            DenyList::Plain => crate::permission::DENIED_BY_DENY_LIST.to_owned(),
            DenyList::Pattern => format!("{}: {pattern}", crate::permission::DENIED_BY_DENY_LIST),
            DenyList::Quoted => format!("Permission denied: '{pattern}' is on the deny list"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wording_is_the_courses() {
        assert_eq!(UnknownTool::default().text("fly"), "Unknown: fly");
        assert_eq!(UnknownTool::Long.text("fly"), "Unknown tool: fly");
        assert_eq!(UnknownTool::Goal.text("fly"), "GoalError: unknown tool 'fly'");
        assert_eq!(DenyList::default().text("sudo"), "Permission denied by deny list");
        assert_eq!(DenyList::Pattern.text("sudo"), "Permission denied by deny list: sudo");
        assert_eq!(DenyList::Quoted.text("sudo"), "Permission denied: 'sudo' is on the deny list");
    }
}
