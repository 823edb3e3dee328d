//! Running one test alone in a process of its own, in this test binary of many modules.
//!
//! A test that changes the state of the whole process (a resource limit, the registry of running
//! commands) must not run beside the other tests of the binary. It begins with
//! `if in_own_process(module_path!(), "its_name") { return … }`: in the test binary as run, that
//! starts the binary again for this one test (`NAME --exact`) and reports the child's result;
//! in that child, it returns `false` and the test runs.

use std::process::Command;

/// In the child, the name of the test it was started for.
const ALONE: &str = "AGENT_CORE_TEST_ALONE";

/// `false` in the process started for test `name` of module `module` (its `module_path!()`): the
/// test goes on. Otherwise runs this binary again for that test alone, panics with the child's
/// output unless it passed, and returns `true`: the test returns at once.
pub fn in_own_process(module: &str, name: &str) -> bool {
    // libtest names a test by its path without the crate: `suite::tools_write_atomic::…`.
    let test = match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_owned(),
    };
    if std::env::var_os(ALONE).is_some_and(|v| v == test.as_str()) {
        return false;
    }
    let exe = std::env::current_exe().expect("the path of this test binary");
    let out = Command::new(&exe)
        .args([test.as_str(), "--exact", "--test-threads=1"])
        .env(ALONE, &test)
        .output()
        .unwrap_or_else(|e| panic!("could not run {} for {test} alone: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // `1 passed`: the filter found the test, so a renamed test cannot pass by running nothing.
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{test}, run alone in a process of its own, did not pass ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    true
}
