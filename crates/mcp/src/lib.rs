//! MCP tools for the course's s14: external tools that join the loop.
//!
//! - [`client`]: the one trait every server is reached through ([`McpClient`]);
//! - [`course`]: the course's in-process `docs` and `deploy` servers, byte for byte;
//! - [`stdio`]: real MCP servers, child processes spoken to over stdio with `rmcp`;
//! - [`config`]: which real servers exist, from a Claude-Code-style `.mcp.json`;
//! - [`pool`]: the tool pool rebuilt before every request: `mcp__{server}__{tool}` names,
//!   normalised, at most 64 characters, collisions refused, and the host's policy per tool;
//! - [`hub`]: `connect_mcp`: the configured and connected servers, approval of real ones,
//!   and their ending with the harness;
//! - [`tools`]: the glue a chapter composes: `connect_mcp`, the per-request pool and SYSTEM,
//!   the host-policy permission hook, `[Error] {Type}: {e}` and `/mcp` ([`McpTools`]).
//!
//! The host decides what runs without asking ([`pool::HostPolicy`]); a server's annotations
//! (`readOnlyHint`, …) are shown, never trusted.

#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod course;
pub mod hub;
pub mod pool;
pub mod stdio;
pub mod tools;

pub use client::{McpClient, ToolDef};
pub use pool::{HostPolicy, Policy, PoolError, PoolTool};
pub use tools::{McpExtension, McpTools};
