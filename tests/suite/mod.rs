//! One module per former test binary.

mod chapter_diffs;
mod conformance;
mod endpoint;
mod extension_point;
mod hooks;
// The sandbox's attacks, each against the Linux mechanism (Landlock, seccomp, the subreaper).
// macOS builds everything else; its sandbox's profile is tested in agent-core.
#[cfg(target_os = "linux")]
mod isolation;
mod prompt_cache;
mod readmes;
mod repl;
mod runtime;
mod s01;
mod s02;
mod s03;
mod s04;
mod s05;
mod s06;
mod s07;
mod s08;
mod s09;
mod s10;
mod s11;
mod s12;
mod s13;
mod s14;
mod s15;
mod s16;
mod s17;
mod stream;
mod trace;
