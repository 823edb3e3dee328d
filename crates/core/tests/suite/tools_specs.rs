//! The tool definitions sent in `tools` (course §1 and §3): names, descriptions and schemas,
//! locked by a snapshot, and s02's order.

use agent_core::tools::{self, ToolOptions};
use agent_core::workspace::Workspace;

#[test]
fn the_five_tool_specs() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    insta::assert_json_snapshot!(tools::all(&ws, &ToolOptions::default()).specs());
    Ok(())
}

#[test]
fn s02_has_four_tools_in_the_course_order() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let ws = Workspace::new(dir.path())?;
    assert_eq!(
        tools::s02(&ws, &ToolOptions::default()).names(),
        ["bash", "read_file", "write_file", "edit_file"]
    );
    assert_eq!(ToolOptions::default().bash_timeout, std::time::Duration::from_secs(120));
    Ok(())
}
