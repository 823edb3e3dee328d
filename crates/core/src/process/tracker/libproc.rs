//! The process table on macOS, through `libproc`: every pid (`proc_listallpids`), then for each
//! its parent and status (`proc_pidinfo(PROC_PIDT_SHORTBSDINFO)`, which any user may read, so a
//! setuid program the command ran is seen too), its start time (`PROC_PIDTBSDINFO`, readable for
//! the user's own processes; 0 for others) and its session (`getsid`). Both `proc_pidinfo` calls
//! pass 1 as their argument, which asks for zombies too. A process that exits between the calls
//! is simply left out. Compiled for macOS by CI, not run there.

use super::Row;

/// Room for this many more pids than were counted, for those started between the count and the
/// read; the read is tried again, with more room, while it fills the buffer.
const SLACK: usize = 256;

/// Every process now.
pub(super) fn rows() -> Vec<Row> {
    let mut room = 0;
    loop {
        // SAFETY: a null buffer of size 0 asks only for the number of pids.
        let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
        let Ok(count) = usize::try_from(count) else { return Vec::new() };
        room = room.max(count) + SLACK;
        let mut pids: Vec<libc::c_int> = vec![0; room];
        let Ok(bytes) = libc::c_int::try_from(room * std::mem::size_of::<libc::c_int>()) else {
            return Vec::new();
        };
        // SAFETY: the buffer holds `bytes` bytes of c_int; the call writes at most that many and
        // returns how many pids it wrote.
        let got = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
        let Ok(got) = usize::try_from(got) else { return Vec::new() };
        // A full buffer may have cut the list (a fork storm): read again with more room, so that
        // no member is missed because newer processes took its place.
        if got >= room {
            room *= 2;
            continue;
        }
        pids.truncate(got);
        return pids.into_iter().filter(|&pid| pid > 0).filter_map(row).collect();
    }
}

/// The start time of one process, in microseconds since the epoch.
pub(super) fn start_of(pid: i32) -> Option<u64> {
    row(pid).map(|r| r.start)
}

/// `proc_pidinfo(pid, flavor, 1, …)` into a `T`; `None` unless it filled all of it.
fn pidinfo<T>(pid: libc::c_int, flavor: libc::c_int) -> Option<T> {
    let size = libc::c_int::try_from(std::mem::size_of::<T>()).ok()?;
    let mut info = std::mem::MaybeUninit::<T>::zeroed();
    // SAFETY: `info` is `size` writable bytes, the size the flavor fills; the call reads
    // nothing from it.
    let got = unsafe { libc::proc_pidinfo(pid, flavor, 1, info.as_mut_ptr().cast(), size) };
    // SAFETY: the call wrote the whole struct, plain data with no invalid bit patterns.
    (got == size).then(|| unsafe { info.assume_init() })
}

/// One process's row, or `None` when it is gone.
fn row(pid: libc::c_int) -> Option<Row> {
    let short: libc::proc_bsdshortinfo = pidinfo(pid, libc::PROC_PIDT_SHORTBSDINFO)?;
    let start = pidinfo::<libc::proc_bsdinfo>(pid, libc::PROC_PIDTBSDINFO).map_or(0, |info| {
        info.pbi_start_tvsec.saturating_mul(1_000_000).saturating_add(info.pbi_start_tvusec)
    });
    // SAFETY: getsid takes a number.
    let session = unsafe { libc::getsid(pid) };
    Some(Row {
        pid,
        parent: i32::try_from(short.pbsi_ppid).ok(),
        session: (session >= 0).then_some(session),
        start,
        zombie: short.pbsi_status == libc::SZOMB,
    })
}
