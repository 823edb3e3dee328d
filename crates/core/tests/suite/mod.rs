//! One module per former test binary; `tools_support` is shared by the `tools_*` modules, and
//! `sse_cases` is included by `sse_client` and `sse_client_reqwest`, once per transport.

mod agent_loop;
mod hooks_registry;
mod normalize_incremental;
mod own_process;
mod permission_tokeniser;
mod process_end_all;
mod request_rules;
mod sse_client;
mod sse_client_reqwest;
mod sse_framing;
mod tools_bash;
// Landlock and seccomp at work: Linux only (the macOS profile's tests are agent-core's own).
#[cfg(target_os = "linux")]
mod tools_bash_sandbox;
// Seatbelt and the tracker at work: macOS only, compiled by CI for macOS, run on a Mac.
#[cfg(target_os = "macos")]
mod tools_bash_seatbelt;
mod tools_glob;
mod tools_input;
mod tools_read_file;
mod tools_specs;
mod tools_support;
mod tools_workspace_handle;
mod tools_workspace_rule;
mod tools_write_atomic;
mod tools_write_edit;
