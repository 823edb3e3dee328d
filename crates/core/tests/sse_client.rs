//! The streaming client against the loopback server through hyper's own client, the transport of
//! a plain `http://` endpoint (the cases are in `sse_cases`).

/// Whether the cases force the reqwest transport.
const VIA_REQWEST: bool = false;

mod sse_cases;
