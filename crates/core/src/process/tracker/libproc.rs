//! The process table on macOS, through `libproc`: every pid (`proc_listallpids`), then for each
//! its BSD information (`proc_pidinfo(PROC_PIDTBSDINFO)`: parent, status, start time) and its
//! session (`getsid`). A process that exits between the two calls is simply left out. Compiled
//! for macOS by CI, not run there.

use super::Row;

/// Every process now, as far as this user may see it.
pub(super) fn rows() -> Vec<Row> {
    // Ask for the count, then read with room for those started meanwhile.
    // SAFETY: a null buffer of size 0 asks only for the number of pids.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let Ok(count) = usize::try_from(count) else { return Vec::new() };
    let mut pids: Vec<libc::c_int> = vec![0; count + 64];
    let bytes =
        libc::c_int::try_from(pids.len() * std::mem::size_of::<libc::c_int>()).unwrap_or(libc::c_int::MAX);
    // SAFETY: the buffer holds `bytes` bytes of c_int; the call writes at most that many.
    let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    let Ok(got) = usize::try_from(got) else { return Vec::new() };
    pids.truncate(got.min(pids.len()));
    pids.into_iter().filter(|&pid| pid > 0).filter_map(row).collect()
}

/// The start time of one process, in microseconds since the epoch.
pub(super) fn start_of(pid: i32) -> Option<u64> {
    row(pid).map(|r| r.start)
}

/// One process's row, or `None` when it is gone or not ours to see.
fn row(pid: libc::c_int) -> Option<Row> {
    // SAFETY: proc_bsdinfo is plain data; all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = libc::c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: `info` is a writable proc_bsdinfo of `size` bytes, as PROC_PIDTBSDINFO fills.
    let got = unsafe { libc::proc_pidinfo(pid, libc::PROC_PIDTBSDINFO, 0, (&raw mut info).cast(), size) };
    if got != size {
        return None;
    }
    // SAFETY: getsid takes a number.
    let session = unsafe { libc::getsid(pid) };
    Some(Row {
        pid,
        parent: i32::try_from(info.pbi_ppid).ok(),
        session: (session >= 0).then_some(session),
        start: info.pbi_start_tvsec.saturating_mul(1_000_000).saturating_add(info.pbi_start_tvusec),
        zombie: info.pbi_status == libc::SZOMB,
    })
}
