//! One module per former test binary.

mod nag;
mod properties;
mod pyliteral;
mod snapshots;
mod todo;
mod todo_write;
