//! The process table on Linux, through `/proc`, for the tracker's tests: Linux ends commands
//! with its subreaper, so the tracker runs here only to be tested against real processes.

use super::Row;

/// Every process now.
pub(super) fn rows() -> Vec<Row> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).filter_map(row).collect()
}

/// The start time of one process, in clock ticks since boot.
pub(super) fn start_of(pid: i32) -> Option<u64> {
    row(pid).map(|r| r.start)
}

/// One process's row from `/proc/PID/stat`, or `None` when it is gone.
fn row(pid: i32) -> Option<Row> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces: the fields after its last `)` are
    // state (3), ppid (4), pgrp (5), session (6), …, starttime (22).
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Row {
        pid,
        parent: fields.get(1)?.parse().ok(),
        session: fields.get(3)?.parse().ok(),
        start: fields.get(19)?.parse().ok()?,
        zombie: matches!(*fields.first()?, "Z" | "X"),
    })
}
