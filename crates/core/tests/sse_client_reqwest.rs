//! The streaming client against the loopback server through reqwest, the transport of every
//! `https://` endpoint (the cases are in `sse_cases`).

/// Whether the cases force the reqwest transport.
const VIA_REQWEST: bool = true;

mod sse_cases;
