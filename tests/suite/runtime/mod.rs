//! The runtime the course's last chapters (s10–s17) stand on, shown from outside `agent-core`.

mod loop_hooks;
