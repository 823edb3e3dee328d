//! The streaming client against the loopback server through hyper's own client, the transport of
//! a plain `http://` endpoint (the cases are in `sse_cases`).

/// Whether the cases force the reqwest transport.
const VIA_REQWEST: bool = false;

// A sibling file, compiled once in each of the two modules on purpose (hence the `allow`): its
// `super::VIA_REQWEST` is this one.
#[allow(clippy::duplicate_mod)]
#[path = "sse_cases.rs"]
mod sse_cases;
