//! The streaming client against the loopback server through reqwest, the transport of every
//! `https://` endpoint (the cases are in `sse_cases`).

/// Whether the cases force the reqwest transport.
const VIA_REQWEST: bool = true;

// A sibling file, compiled once in each of the two modules on purpose (hence the `allow`): its
// `super::VIA_REQWEST` is this one.
#[allow(clippy::duplicate_mod)]
#[path = "sse_cases.rs"]
mod sse_cases;
