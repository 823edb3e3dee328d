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
mod tools_bash_sandbox;
mod tools_glob;
mod tools_input;
mod tools_read_file;
mod tools_specs;
mod tools_support;
mod tools_workspace_handle;
mod tools_workspace_rule;
mod tools_write_atomic;
mod tools_write_edit;
